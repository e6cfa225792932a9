"""``mbfmu build [NAME ...] [-o fmus/] [-p NAME=VALUE ...] [--platform P] [--python-hint]``: build plant FMUs."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..errors import InputError

DEFAULT_PLANTS = ("rigid_arm", "canonical_2body", "flexible_arm", "satellite", "crash_occupant")


def _library_plants() -> list[str]:
    try:
        from ..plant import library
        names = list(library.list_plants())
    except ImportError:
        return list(DEFAULT_PLANTS)
    return names or list(DEFAULT_PLANTS)


def _parameters(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"parameter {item!r} is not NAME=VALUE with a number VALUE (SI units)") from None
    return out


def run(args: argparse.Namespace) -> int:
    from .builder import build_fmu

    names = args.names or _library_plants()
    params = _parameters(args.parameter)
    if params and len(names) != 1:
        raise InputError("-p/--parameter needs exactly one plant")
    for name in names:
        path = build_fmu(_robot_ref(name, args), args.output, parameters=params or None, runtime=args.runtime,
                         platforms=args.platform or None, python_hint=args.python_hint, fmi_version=args.fmi,
                         interfaces=args.interface or None, overwrite=args.force)
        print(path)
    return 0


def _numbers(text: str, flag: str) -> list[float]:
    """``"0,-1.2,0.5"`` as numbers (SI units)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"{flag} {text!r} is not comma-separated numbers (rad, m; rad/s, m/s)") from None
    if not all(map(math.isfinite, values)):
        raise InputError(f"{flag} {text!r} must be finite numbers")
    return values


def _robot_ref(name: str, args: argparse.Namespace):
    """``name`` itself, or for a robot (a URDF file or a robot of example-robot-data
    by name) its reference with the command line's robot options."""
    from .plantref import PlantRef, parse
    ref = parse(name)
    if ref.kind != "urdf":
        if getattr(args, "q0", None) or getattr(args, "v0", None):
            raise InputError(f"--q0/--v0 are for robots (a URDF file or a robot's name), not {name!r}: its "
                             "initial state is among its parameters (mbfmu list NAME; -p NAME=VALUE)")
        return name
    options = {"actuation": args.actuation, "poses": args.pose, "twists": args.twist,
               "package_dirs": [str(Path(d).resolve()) for d in args.package_dir],
               "skip_bad_meshes": args.skip_bad_meshes}
    options = {k: v for k, v in options.items() if v}
    for name in ("q0", "v0"):
        if getattr(args, name, None):
            options[name] = _numbers(getattr(args, name), f"--{name}")
    if args.floating_base is not None:
        options["floating_base"] = args.floating_base
    return PlantRef(ref.kind, ref.target, options={**ref.options, **options})


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``mbfmu build``."""
    p = subparsers.add_parser(
        "build", help="build FMUs of plants (FMI 2.0 co-simulation; native: FMI 2/3, also model exchange)",
        description="Build fmus/<name>.fmu for each plant: a library name (all library plants by default), "
                    "'package.module:Class', a model file 'path/model.py[:Class]', a robot's URDF file "
                    "'robot.urdf' or a robot of example-robot-data by name ('ur5', 'panda': mbfmu list "
                    "--robots).")
    p.add_argument("names", nargs="*", metavar="NAME", help="plants to build (default: every library plant)")
    p.add_argument("-o", "--output", default="fmus", help="output folder (default: fmus/)")
    p.add_argument("-p", "--parameter", action="append", default=[], metavar="NAME=VALUE",
                   help="parameter value in SI units (one plant only); repeatable")
    p.add_argument("--runtime", choices=("pythonfmu", "native"), default="pythonfmu",
                   help="pythonfmu (default): the plant runs in Python inside the FMU; native: a C-only "
                        "binary that needs no Python (plants built from the engine's elements)")
    p.add_argument("--platform", action="append", choices=("linux64", "win64", "aarch64-linux"), metavar="PLATFORM",
                   help="binary platform, repeatable: linux64, win64 (default: both, or linux64 alone, "
                        "saying so, when the mingw-w64 cross-compiler is missing); aarch64-linux with "
                        "--runtime native --fmi 3 (default there when gcc-aarch64-linux-gnu is installed)")
    p.add_argument("--fmi", type=int, choices=(2, 3), default=2,
                   help="FMI version (default 2); 3 needs --runtime native")
    p.add_argument("--interface", action="append", choices=("cs", "me"), metavar="KIND",
                   help="native runtime, repeatable: cs (co-simulation), me (model exchange); default both "
                        "in one binary (the pythonfmu runtime: cs)")
    p.add_argument("--force", action="store_true",
                   help="replace an FMU file that exists (default: refuse it by name)")
    p.add_argument("--python-hint", action="store_true",
                   help="pythonfmu runtime: record this interpreter as the last place the FMU looks for "
                        "Python (after MBFMU_PYTHON and PATH); off by default, so the FMU holds no path of "
                        "this machine")
    robot = p.add_argument_group("robots (NAME.urdf, or a robot's name: ur5, panda, ...)")
    robot.add_argument("--actuation", choices=["torque", "position", "velocity"],
                       help="how every joint is driven: torque inputs tau[i] (default), or position/velocity "
                            "servos with set-points q_ref[i]/v_ref[i]")
    robot.add_argument("--floating-base", action=argparse.BooleanOptionalAction, default=None,
                       help="the root link moves freely (default: for legged robots, humanoids and drones "
                            "named from example-robot-data)")
    robot.add_argument("--pose", action="append", default=[], metavar="LINK",
                       help="output the world pose of LINK (LINK_p[1..3], LINK_quat[1..4]); repeatable")
    robot.add_argument("--twist", action="append", default=[], metavar="LINK",
                       help="output the world twist of LINK (LINK_twist[1..6]); repeatable")
    robot.add_argument("--package-dir", action="append", default=[], metavar="DIR",
                       help="a folder holding (or being) a package that package:// mesh URIs name, for a "
                            "URDF copied out of its package; repeatable")
    robot.add_argument("--skip-bad-meshes", action="store_true",
                       help="drop, with a warning, a mesh the URDF names outside its folder and packages or "
                            "that is not a readable STL/OBJ/DAE (default: refuse the URDF)")
    robot.add_argument("--q0", metavar="Q1,Q2,...",
                       help="initial joint positions, rad (m), one per configuration coordinate; also the "
                            "FMU's parameters q0[k], which start it elsewhere")
    robot.add_argument("--v0", metavar="V1,V2,...",
                       help="initial joint rates, rad/s (m/s); also the FMU's parameters v0[k]")
    p.set_defaults(func=run)
    return p


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="mbfmu")
    add_parser(parser.add_subparsers())
    a = parser.parse_args()
    sys.exit(a.func(a))
