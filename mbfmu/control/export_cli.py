"""``mbfmu export-controller``: a python-control design as a controller FMU.

Examples
--------
``mbfmu export-controller design.py:controller --fmi 3 -o fmus/``
``mbfmu export-controller design.py:lead --step 0.001 --unit e=rad --unit u=N.m``
``mbfmu export-controller design.py:speed_pid --fmi 3 --scheduled``
"""
from __future__ import annotations

import argparse

from ..errors import InputError, MbfmuError

EPILOG = """DESIGN: FILE.py:FUNCTION, a function of no arguments returning the controller: a python-control
StateSpace or TransferFunction (discrete at its dt, or continuous: held exactly over each communication
step, --step being the default one) or a PID of mbfmu.control.pid. The native runtime (default) writes a
C-only FMU that runs without Python; --runtime python writes a pythonfmu FMU (FMI 2 only)."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``export-controller`` on ``subparsers``."""
    p = subparsers.add_parser("export-controller", help="export a python-control design as a controller FMU",
                              description="Export a controller designed with python-control (or mbfmu.control) as "
                                          "an FMI co-simulation FMU: C only by default, FMI 2.0 or 3.0.",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("design", help="FILE.py:FUNCTION returning the controller")
    p.add_argument("-o", "--output", default="fmus", help="folder for NAME.fmu, or the .fmu file (default fmus)")
    p.add_argument("--name", help="model name (default: the system's name)")
    p.add_argument("--force", action="store_true", help="replace an existing FMU file")
    p.add_argument("--step", type=float, help="default communication step of a continuous controller [s] "
                                              "(must equal dt for a discrete one)")
    p.add_argument("--fmi", type=int, choices=(2, 3), default=2, help="FMI version (default 2)")
    p.add_argument("--scheduled", action="store_true",
                   help="FMI 3 Scheduled Execution (a discrete controller: one periodic input clock at its dt)")
    p.add_argument("--runtime", choices=("native", "python"), default="native",
                   help="native: C only (default); python: pythonfmu")
    p.add_argument("--platform", action="append", metavar="PLATFORM",
                   help="native: platform to compile (repeatable; default linux64, and win64 where mingw-w64 is "
                        "installed)")
    p.add_argument("--unit", action="append", default=[], metavar="SIGNAL=UNIT",
                   help="unit of a signal, by its python-control label (repeatable)")
    p.set_defaults(func=run)
    return p


def _units(items: list[str]) -> dict[str, str]:
    out = {}
    for text in items:
        label, sep, unit = text.partition("=")
        if not (sep and label.strip() and unit.strip()):
            raise InputError(f"--unit {text!r}: expected SIGNAL=UNIT, e.g. u=N.m")
        out[label.strip()] = unit.strip()
    return out


def load_design(spec: str):
    """The controller returned by ``FUNCTION()`` of the Python file named by ``FILE.py:FUNCTION``."""
    from ..studies.tune_cli import load_function
    if ".py:" not in spec:
        raise InputError(f"design {spec!r}: expected FILE.py:FUNCTION")
    func = load_function(spec)
    try:
        return func()
    except MbfmuError:
        raise
    except Exception as exc:
        raise InputError(f"design {spec!r}: {type(exc).__name__}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    """Run the ``export-controller`` sub-command; returns the exit status."""
    from .export import export_fmu
    sys = load_design(args.design)
    if args.runtime == "python" and args.platform:
        raise InputError("--platform is for the native runtime")
    path = export_fmu(sys, args.output, args.name, step=args.step, units=_units(args.unit), runtime=args.runtime,
                      platforms=args.platform, fmi=args.fmi, scheduled=args.scheduled, overwrite=args.force)
    interface = "scheduled execution" if args.scheduled else "co-simulation"
    from ..cosim.system import System
    if isinstance(sys, System):
        print(f"wrote {path} (FMI {args.fmi}.0 {interface}, {args.runtime} runtime; an interconnection of "
              f"{len(sys.units)} units: {', '.join(sys.units)})")
        return 0
    what = "continuous" if sys.isctime(strict=True) else f"discrete, dt = {sys.dt} s"
    print(f"wrote {path} (FMI {args.fmi}.0 {interface}, {args.runtime} runtime; {what}; inputs "
          f"{', '.join(sys.input_labels)}; outputs {', '.join(sys.output_labels)})")
    return 0
