"""The plant library: find, load and list plants.

Each plant lives in one file of the top-level ``models/`` folder, which ships
inside the package as ``mbfmu.models``. A model file defines a
:class:`~mbfmu.plant.Plant` subclass and names it in a module attribute
``PLANT``; its constructor takes the plant's parameters as keyword arguments
(SI units). ``load_plant`` also accepts the path of any such file, a
``"package.module:ClassName"`` reference, a robot's URDF file
(``"./robot.urdf"``) or a robot of example-robot-data by name (``"ur5"``,
:mod:`~mbfmu.plant.robots`).
"""
from __future__ import annotations

import importlib
import inspect
import re
import importlib.util
import pkgutil
import sys
import textwrap
from pathlib import Path

import numpy as np

from ..dynamics.symbolic import number
from ..errors import InputError, ModelError, UnknownNameError, unknown_name
from .contract import Plant


def list_plants() -> list[str]:
    """Names of the plants in the library, sorted."""
    import mbfmu.models as pkg
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))


def plant_class(name_or_path: str) -> type[Plant]:
    """The Plant subclass behind a library name, a model file path or a
    ``module:Class`` reference."""
    spec = str(name_or_path)
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        path = Path(spec)
        if not path.is_file():
            raise UnknownNameError(f"model file {spec!r} does not exist")
        mod_name = f"mbfmu_user_model_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        loader_spec.loader.exec_module(module)
    elif ":" in spec:
        mod, _, attr = spec.partition(":")
        try:
            cls = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownNameError(f"cannot import plant class {spec!r}: {exc}") from None
        return _check_class(cls, spec)
    else:
        if spec not in list_plants():
            raise unknown_name(f"unknown plant {spec!r}", spec, list_plants(), "in the library")
        module = importlib.import_module(f"mbfmu.models.{spec}")
    cls = getattr(module, "PLANT", None)
    if cls is None:
        raise ModelError(f"model file {spec!r} defines no PLANT (the Plant subclass to load)")
    return _check_class(cls, spec)


def _check_class(cls, spec: str) -> type[Plant]:
    if not (isinstance(cls, type) and issubclass(cls, Plant)):
        raise ModelError(f"{spec!r} is not a Plant subclass")
    return cls


def is_urdf(name_or_path) -> bool:
    """True when ``name_or_path`` names a URDF file (by its suffix)."""
    return str(name_or_path).lower().endswith(".urdf")


def load_plant(name_or_path: str, **parameters) -> Plant:
    """A plant from the library, a model file, a ``"module:Class"`` name, a URDF file or a robot's name.

    Parameters
    ----------
    name_or_path : str
        A library name (``"rigid_arm"``, see :func:`list_plants`), the path of
        a Python model file, ``"module:Class"``, a URDF file
        (``"./robot.urdf"``) or a robot of example-robot-data (``"ur5"``,
        ``"panda"``; :func:`mbfmu.plant.robots.robot_names`).
    **parameters
        Plant parameters by name, in their SI units (see ``mbfmu list``);
        for a robot also the options of :func:`mbfmu.plant.urdf.plant_from_urdf`
        (``actuation``, ``poses``, ``package_dirs``, ...), and vector
        parameters element by element (``**{"gravity[3]": -1.62}``).

    Returns
    -------
    Plant
        The constructed plant.
    """
    spec = str(name_or_path)
    if is_urdf(spec):
        return robot_plant(spec, parameters)
    if _is_name(spec) and spec not in list_plants():
        from . import robots
        if robots.is_robot(spec):
            return robot_plant(robots.robot_urdf(spec), {**robots.robot_options(spec), **parameters})
        if not robots.robot_catalog():  # a runtime-only install: say where robots by name come from
            raise unknown_name(f"unknown plant {spec!r} ({robots.NOT_INSTALLED})", spec, list_plants(),
                               "library plants", "mbfmu list")
        raise unknown_name(f"unknown plant {spec!r}", spec, list_plants() + robots.robot_names(),
                           "library plants and robots", "mbfmu list, mbfmu list --robots")
    return construct(plant_class(name_or_path), parameters, f"plant {spec!r}")


def _is_name(spec: str) -> bool:
    return spec.isidentifier()


def robot_plant(path, options: dict) -> Plant:
    """The URDF plant of ``path`` with ``options`` (parameters among them; the
    elements of the vectors ``gravity``, ``q0`` and ``v0`` may come one by
    one, ``gravity[3]``, ``q0[2]``: the others keep their values)."""
    from .urdf import plant_from_urdf as build
    options = dict(options)
    elements = {name: {k: options.pop(k) for k in [k for k in options if k.startswith(f"{name}[")]}
                for name in ("gravity", "q0", "v0")}
    base = None  # the robot without the elements, for the values of those not given
    for name, given in elements.items():
        if not given:
            continue
        index = {key: int(key[len(name) + 1:-1]) if key[len(name) + 1:-1].isdigit() else 0 for key in given}
        if options.get(name) is not None:
            values = [float(v) for v in options[name]]
        elif name == "gravity":
            values = [0.0, 0.0, -9.81]
        else:
            base = base or build(path, **options)  # (milliseconds: the URDF is parsed once per process)
            values = [v for k, v in base.parameter_values().items() if k.startswith(f"{name}[")]
        for key, i in index.items():
            if not 1 <= i <= len(values):
                raise unknown_name(f"robot has no parameter {key!r}", key,
                                   [f"{name}[{k + 1}]" for k in range(len(values))], f"{name} elements")
            values[i - 1] = float(given[key])
        options[name] = values
    return build(path, **options)


def construct(factory, parameters: dict, what: str):
    """``factory(**parameters)``, refusing a parameter name the factory does not
    take by name (with the closest known names) instead of leaking a TypeError."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable: let it speak for itself
        return factory(**parameters)
    parameters = _fold_elements(parameters, signature, what)
    kinds = {p.name: p.kind for p in signature.parameters.values()}
    if inspect.Parameter.VAR_KEYWORD not in kinds.values():
        known = [n for n, k in kinds.items() if k in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                       inspect.Parameter.KEYWORD_ONLY)]
        bad = [n for n in parameters if n not in known]
        if bad:
            raise unknown_name(f"{what} has no parameter {bad[0]!r}", bad[0], known, "parameters")
    return factory(**parameters)


_ELEMENT = re.compile(r"^([A-Za-z_]\w*)\[(\d+)\]$")


def _fold_elements(parameters: dict, signature: inspect.Signature, what: str) -> dict:
    """Fold FMI-style element names (``initial_rate[2]``, 1-based) into the
    vector argument they belong to, starting from the argument's default.

    Results and FMUs record vector parameters element by element; the plant
    constructors take the vector."""
    folded, vectors = dict(parameters), {}
    for key in parameters:
        match = _ELEMENT.match(key)
        if not match or match.group(1) not in signature.parameters or key in signature.parameters:
            continue
        base, index = match.group(1), int(match.group(2))
        if base not in vectors:
            start = parameters.get(base, signature.parameters[base].default)
            if start is inspect.Parameter.empty:
                raise InputError(f"{what}: {key!r} sets an element of {base!r}, which has no default to start from")
            vectors[base] = [number(v) for v in start]
        if not 1 <= index <= len(vectors[base]):
            raise InputError(f"{what}: {key!r} is outside {base!r}, which has {len(vectors[base])} elements (1-based)")
        vectors[base][index - 1] = number(folded.pop(key))  # a symbolic element kept (dynamics.symbolic)
    return {**folded, **vectors}


def plant_from_urdf(path, **options) -> Plant:
    """A robot plant from a URDF file (see :func:`mbfmu.plant.urdf.plant_from_urdf`)."""
    from .urdf import plant_from_urdf as build
    return build(path, **options)


def bundle_urdf(urdf, dest, package_dirs=(), skip_bad_meshes: bool = False):
    """Copy a URDF and its visual meshes into folder ``dest`` (see :func:`mbfmu.plant.urdf_files.bundle`)."""
    from .urdf_files import bundle
    return bundle(urdf, dest, package_dirs, skip_bad_meshes)


def describe(plant: Plant) -> str:
    """Text block for ``mbfmu list``: inputs, outputs, parameters with units."""
    lines = [f"{plant.name}: {plant.description.strip().splitlines()[0] if plant.description else ''}"]
    for title, sigs in (("inputs", plant.inputs), ("outputs", plant.outputs), ("parameters", plant.parameters)):
        lines.append(f"  {title}:")
        for s in sigs:
            val = f" = {s.start:g}" if title == "parameters" else ""
            lines.append(f"    {s.name:<24} [{s.unit}]{val}  {s.description}")
    gains = getattr(plant, "servo_gains", None)
    if gains:
        lines.append("  servos (gains fixed in the FMU; Servo(kp=..., kd=..., torque_limit=...) sets them):")
        revolute = {j.name: j.revolute for j in getattr(plant, "joint_table", ())}
        modes = {j.name: s.mode for j, s in zip(getattr(plant, "joint_table", ()), getattr(plant, "servos", ()))}
        for joint, (kp, kd, limit) in gains.items():
            rot = revolute.get(joint, True)
            force, length = ("N.m", "rad") if rot else ("N", "m")
            lim = f"{limit:.4g} {force}" if np.isfinite(limit) else "none"
            lines.append(f"    {joint:<24} {modes.get(joint, ''):<9} kp = {kp:.4g} {force}/{length}, "
                         f"kd = {kd:.4g} {force}.s/{length}, torque limit {lim}")
    return "\n".join(lines)


def summary(plant: Plant) -> str:
    """One line for ``mbfmu list``: name, port counts and what the plant is."""
    what = plant.description.strip().splitlines()[0] if plant.description else ""
    counts = f"{len(plant.inputs)} in, {len(plant.outputs)} out, {len(plant.parameters)} par"
    return f"{plant.name:<18} {counts:<22} {textwrap.shorten(what, 90, placeholder=' ...')}"


def add_parser(sub) -> None:
    """Register ``mbfmu list``."""
    p = sub.add_parser("list", help="list the plants with their inputs, outputs and parameters",
                       description="List the library plants, one line each; with names (library plants, "
                                   "model files, URDF files) or --long, each plant's inputs, outputs and "
                                   "parameters with SI units and start values.")
    p.add_argument("names", nargs="*", help="plants to show in full (default: every library plant, one line each)")
    p.add_argument("--long", action="store_true", help="show every plant's ports in full")
    p.add_argument("--robots", action="store_true",
                   help="list the robots of example-robot-data that NAME may be (mbfmu build ur5)")
    p.add_argument("--actuation", choices=["torque", "position", "velocity"],
                   help="robots: how every joint is driven, as in mbfmu build (the servos' gains are shown)")
    p.set_defaults(func=_cmd_list)


def _cmd_list(args) -> int:
    if args.robots:
        from . import robots
        names = robots.robot_names()
        if not names:
            raise InputError(f"mbfmu list --robots: {robots.NOT_INSTALLED}")
        print(textwrap.fill(", ".join(names), 100))
        print(f"({len(names)} robots of example-robot-data; mbfmu list NAME shows one, mbfmu build NAME "
              "makes its FMU)")
        return 0
    if not args.names and not args.long:
        for name in list_plants():
            print(summary(load_plant(name)))
        print("(mbfmu list NAME or --long for the inputs, outputs and parameters)")
        return 0
    options = {"actuation": args.actuation} if getattr(args, "actuation", None) else {}
    for name in args.names or list_plants():
        if options and not (is_urdf(name) or (_is_name(name) and name not in list_plants())):
            raise InputError(f"--actuation is for robots (a URDF file or a robot's name), not {name!r}")
        print(describe(load_plant(name, **options)))
        print()
    return 0

