"""``mbfmu simulate``: run an SSP system or a single FMU from the command line.

Examples
--------
``mbfmu simulate system.ssp --stop-time 10 --step 1e-3 -o results.csv``
``mbfmu simulate plant.fmu --set plant.k=2.5 --set x0=1 -o run.npz``
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``simulate`` on ``subparsers``."""
    p = subparsers.add_parser("simulate", help="co-simulate an SSP system or an FMU",
                              description="Co-simulate an SSP 1.0 system (.ssp/.ssd) or a single FMI 2.0 "
                                          "co-simulation FMU with mbfmu's master.")
    p.add_argument("model", help="SYSTEM.ssp, SYSTEM.ssd or MODEL.fmu")
    p.add_argument("--stop-time", type=float, help="stop time [s] (default: the file's default experiment, else 1)")
    p.add_argument("--start-time", type=float, help="start time [s] (default: the file's, else 0)")
    p.add_argument("--step", type=float, help="macro step [s] (default: the file's, else (stop - start) / 500)")
    p.add_argument("--set", action="append", default=[], metavar="UNIT.VAR=VALUE",
                   help="parameter or start value (repeatable); for an FMU the unit name may be left out")
    p.add_argument("--algorithm", choices=["jacobi", "gauss-seidel"], help="master algorithm (default jacobi)")
    p.add_argument("--extrapolation", type=int, choices=[0, 1, 2], default=0, help="input extrapolation order")
    p.add_argument("--adaptive", action="store_true", help="adaptive macro step (needs rollback)")
    p.add_argument("--iterative", action="store_true", help="iterative (implicit) coupling (needs rollback)")
    p.add_argument("--tolerance", type=float, default=1e-4, help="adaptive tolerance (relative and absolute)")
    p.add_argument("--record", choices=["outputs", "all"], default="outputs", help="what to record")
    p.add_argument("-o", "--output", help="results file (.csv or .npz)")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    p.add_argument("--log", action="store_true", help="FMU logging on, with all the FMUs' log categories (slower)")
    p.set_defaults(func=run)
    return p


def _parse_value(text: str):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text) if low.lstrip("+-").isdigit() else float(text)
    except ValueError:
        return text


def run(args: argparse.Namespace) -> int:
    """Run the ``simulate`` sub-command; returns the exit status."""
    from .master import simulate
    from .ssp import read_ssp
    from .system import System
    from .fmu_unit import FmuUnit

    path = Path(args.model)
    if not path.exists():
        raise InputError(f"{str(path)!r} does not exist")
    exp: dict = {}
    if path.suffix in (".ssp", ".ssd"):
        system = read_ssp(path)
        exp = dict(system.experiment)
        default_unit = None
    elif path.suffix == ".fmu":
        unit = FmuUnit(path)
        system = System([unit])
        de = unit.md.defaultExperiment
        if de is not None:
            for k, key in (("startTime", "start_time"), ("stopTime", "stop_time"), ("stepSize", "step")):
                if getattr(de, k, None) is not None:
                    exp[key] = float(getattr(de, k))
        default_unit = unit.name
    else:
        raise InputError(f"{str(path)!r}: expected an .ssp, .ssd or .fmu file")
    for item in args.set:
        if "=" not in item:
            raise InputError(f"--set {item!r}: expected UNIT.VAR=VALUE")
        name, value = item.split("=", 1)
        name = name.strip()
        if default_unit is not None and not name.startswith(default_unit + "."):
            name = f"{default_unit}.{name}"
        system.set(name, _parse_value(value))
    start = args.start_time if args.start_time is not None else exp.get("start_time", 0.0)
    stop = args.stop_time if args.stop_time is not None else exp.get("stop_time", start + 1.0)
    step = args.step if args.step is not None else exp.get("step", (stop - start) / 500)
    algorithm = args.algorithm or exp.get("algorithm", "jacobi")
    result = simulate(system, stop, step, start_time=start, algorithm=algorithm, extrapolation=args.extrapolation,
                      adaptive=args.adaptive, iterative=args.iterative, rtol=args.tolerance, atol=args.tolerance, record=args.record,
                      progress=False if args.no_progress else None, log=args.log or None)
    print(f"{path.name}: {result.summary}")
    if args.output:
        print(f"results: {result.save(args.output)}")
    else:
        last = result.data[-1]
        for n in result.names:
            print(f"  {n} = {float(last[n])!r}")
    return 0
