"""``mbfmu simulate``: run an SSP system or a single FMU from the command line.

The output file is checked before the first step and the rows are streamed
to it while the run goes (flushed at least every second), so a failing,
interrupted or even killed run leaves the rows so far in a readable file.

Exit status: 0 the run completed (or a unit asked to stop; the reason is
printed), 1 bad input (nothing was run), 3 a unit failed, 124 the
``--timeout`` passed, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM);
after 3, 124, 130 and 143 the file holds the rows up to there. These hold
also when a unit hangs inside a step: the run's watchdog keeps the rows and
ends the process with 124, 143 or 130 (the second Ctrl-C) about half a
second after the master failed to stop between steps.

Examples
--------
``mbfmu simulate system.ssp --stop-time 10 --step 1e-3 -o results.csv``
``mbfmu simulate plant.fmu --set plant.k=2.5 --set x0=1 -o run.npz``
``mbfmu simulate plant.fmu --interface me --me-tolerance 1e-8 -o run.csv``
``mbfmu simulate system.ssp --isolate --step-timeout 5 --timeout 600 -o run.csv``
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import CosimError, InputError, MbfmuError, RunInterrupted

EXIT_FAILED = 3
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``simulate`` on ``subparsers``."""
    from .recording.result import FORMATS
    p = subparsers.add_parser("simulate", help="co-simulate an SSP system or an FMU",
                              description="Co-simulate an SSP 1.0 system (.ssp/.ssd) or a single FMI 2.0 "
                                          "co-simulation FMU with mbfmu's master.",
                              epilog="exit status: 0 completed (or stopped by a unit's request), 1 bad input, "
                                     f"{EXIT_FAILED} a unit failed, {EXIT_TIMEOUT} --timeout reached, "
                                     f"{EXIT_INTERRUPTED} interrupted (Ctrl-C), {EXIT_TERMINATED} terminated "
                                     "(SIGTERM); the output file then holds the rows so far, also when a unit "
                                     "hangs inside a step")
    p.add_argument("model", help="SYSTEM.ssp, SYSTEM.ssd or MODEL.fmu")
    p.add_argument("--stop-time", type=float, help="stop time [s] (default: the file's default experiment, else 1)")
    p.add_argument("--start-time", type=float, help="start time [s] (default: the file's, else 0)")
    p.add_argument("--step", type=float, help="macro step [s] (default: the file's, else (stop - start) / 500)")
    p.add_argument("--set", action="append", default=[], metavar="UNIT.VAR=VALUE",
                   help="parameter or start value (repeatable); for an FMU the unit name may be left out")
    p.add_argument("--algorithm", choices=["jacobi", "gauss-seidel"], help="master algorithm (default jacobi)")
    p.add_argument("--extrapolation", type=int, choices=[0, 1, 2],
                   help="input extrapolation order (default 0; 2 with --adaptive)")
    p.add_argument("--adaptive", action="store_true", help="adaptive macro step (needs rollback)")
    p.add_argument("--iterative", action="store_true", help="iterative (implicit) coupling (needs rollback)")
    p.add_argument("--tolerance", type=float, default=1e-4, help="adaptive tolerance (relative and absolute, > 0)")
    p.add_argument("--rollback-tolerance", type=float, default=0.0, metavar="REL",
                   help="adaptive/iterative runs: accept units whose state restore repeats a step only to this "
                        "relative difference (default 0: to the bit, else the run is refused naming the unit)")
    p.add_argument("--record", choices=["outputs", "all"], default="outputs", help="what to record")
    p.add_argument("-o", "--output", help="results file: " + ", ".join(f"{k} ({v})" for k, v in FORMATS.items()))
    p.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit of the run [s]")
    p.add_argument("--step-timeout", type=float, metavar="S",
                   help="wall-clock limit of one step of one unit [s] (runs the units isolated)")
    p.add_argument("--isolate", action="store_true",
                   help="run every unit in its own worker process (a crashing unit ends the run cleanly)")
    p.add_argument("--allow-nan", action="store_true", help="let non-finite outputs through instead of stopping")
    p.add_argument("--realtime", nargs="?", type=float, const=1.0, metavar="FACTOR",
                   help="pace the run to the wall clock, FACTOR simulated seconds per second (default 1); "
                        "late steps are reported")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="step the units of a Jacobi step in N parallel threads (compiled loop)")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="say which master loop ran (compiled C or Python) and, for Python, why")
    p.add_argument("--log", action="store_true", help="FMU logging on, with all the FMUs' log categories (slower)")
    p.add_argument("--interface", choices=["cs", "me"],
                   help="for an FMU: run its co-simulation (cs, the default when it has one) or its model "
                        "exchange (me), integrated by the master with CVODE")
    p.add_argument("--me-tolerance", type=float, metavar="RTOL", default=1e-6,
                   help="relative tolerance of the model-exchange solver (default 1e-6)")
    p.add_argument("--allow-external", action="store_true",
                   help="let an .ssp/.ssd use FMU and parameter files outside its archive or folder")
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


def _load(path: Path, allow_external: bool = False, interface: str | None = None, me_rtol: float = 1e-6):
    """The system in ``path`` and its default experiment; every reading problem as one InputError."""
    from .fmi.fmu_open import open_fmu
    from .ssp.read_write import read_ssp
    from .system import System

    if not path.exists():
        raise InputError(f"{str(path)!r} does not exist")
    if path.suffix not in (".ssp", ".ssd", ".fmu"):
        raise InputError(f"{str(path)!r}: expected an .ssp, .ssd or .fmu file")
    try:
        if path.suffix in (".ssp", ".ssd"):
            system = read_ssp(path, allow_external=allow_external)
            return system, dict(system.experiment), None
        if interface == "me" or (interface is None and not _has_cs(path)):
            unit = open_fmu(path, interface="me", rtol=me_rtol)
        else:
            unit = open_fmu(path, interface=interface)
    except MbfmuError:
        raise
    except Exception as exc:  # a malformed file: lxml, zipfile, fmpy or a bad number inside
        raise InputError(f"cannot read {str(path)!r}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    exp: dict = {}
    de = unit.md.defaultExperiment
    if de is not None:
        for k, key in (("startTime", "start_time"), ("stopTime", "stop_time"), ("stepSize", "step")):
            if getattr(de, k, None) is not None:
                try:
                    exp[key] = float(getattr(de, k))
                except ValueError:
                    raise InputError(f"{str(path)!r}: DefaultExperiment {k}={getattr(de, k)!r} is not a number") from None
    return System([unit]), exp, unit.name


def _has_cs(path: Path) -> bool:
    from .fmi.fmu_unit import _fmi_head
    version, cs, me = _fmi_head(path)
    return cs or not me


def run(args: argparse.Namespace) -> int:
    """Run the ``simulate`` sub-command; returns the exit status."""
    try:
        return _run(args)
    except KeyboardInterrupt:  # before the master's own handler is in place
        print("mbfmu simulate: interrupted before the run started; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    from .master.run import simulate
    from .recording.result import open_writer

    sink = open_writer(args.output) if args.output else None  # checked before anything runs
    path = Path(args.model)
    interface = getattr(args, "interface", None)
    me_rtol = getattr(args, "me_tolerance", 1e-6)
    if not (me_rtol > 0 and me_rtol < 1):
        raise InputError(f"--me-tolerance {me_rtol!r} must be between 0 and 1")
    if interface is not None and path.suffix != ".fmu":
        raise InputError(f"--interface applies to a single FMU, not to {path.suffix} files")
    system, exp, default_unit = _load(path, getattr(args, "allow_external", False), interface, me_rtol)
    for item in args.set:
        if "=" not in item:
            raise InputError(f"--set {item!r}: expected UNIT.VAR=VALUE")
        name, value = item.split("=", 1)
        name = name.strip()
        if default_unit is not None and not name.startswith(default_unit + "."):
            name = f"{default_unit}.{name}"
        parsed = _parse_value(value)
        system.set(name, parsed)
        unit, var = name.split(".", 1)
        typ = system.units[unit].variables[var].type
        if typ in ("Real", "Integer") and (isinstance(parsed, (str, bool)) or (typ == "Integer" and isinstance(parsed, float))):
            raise InputError(f"--set {item!r}: {name} is {'a Real' if typ == 'Real' else 'an Integer'}, "
                             f"{value!r} is not {'a number' if typ == 'Real' else 'an integer'}")
    start = args.start_time if args.start_time is not None else exp.get("start_time", 0.0)
    stop = args.stop_time if args.stop_time is not None else exp.get("stop_time", start + 1.0)
    step = args.step if args.step is not None else exp.get("step", (stop - start) / 500)
    algorithm = args.algorithm or exp.get("algorithm", "jacobi")
    if args.tolerance <= 0 or args.tolerance != args.tolerance:
        raise InputError(f"--tolerance {args.tolerance!r} must be positive (zero or less would switch error control off)")
    try:
        result = simulate(system, stop, step, start_time=start, algorithm=algorithm,
                          extrapolation=args.extrapolation, adaptive=args.adaptive, iterative=args.iterative,
                          rtol=args.tolerance, atol=args.tolerance, record=args.record,
                          progress=False if args.no_progress else None, allow_nan=args.allow_nan,
                          timeout=args.timeout, step_timeout=args.step_timeout, isolate=args.isolate, sink=sink,
                          log=args.log or None, rollback_tolerance=getattr(args, "rollback_tolerance", 0.0),
                          realtime=args.realtime, threads=args.threads)
    except CosimError as exc:
        partial = getattr(exc, "result", None)
        if partial is None:  # the system is invalid: nothing ran
            raise
        message = str(exc)
        first, _, rest = message.partition("\n")
        print(f"mbfmu simulate: {'stopped' if isinstance(exc, RunInterrupted) else 'error'}: {first}", file=sys.stderr)
        if rest:
            print(rest, file=sys.stderr)
        _report_partial(partial, args.output)
        if isinstance(exc, RunInterrupted):
            return {"timeout": EXIT_TIMEOUT, "SIGTERM": EXIT_TERMINATED}.get(exc.kind, EXIT_INTERRUPTED)
        return EXIT_FAILED
    except KeyboardInterrupt as exc:  # the second Ctrl-C
        print("mbfmu simulate: interrupted", file=sys.stderr)
        if getattr(exc, "result", None) is not None:
            _report_partial(exc.result, args.output)
        return EXIT_INTERRUPTED
    print(f"{path.name}: {result.summary}")
    if getattr(args, "verbose", False):
        why = result.meta.get("python_loop")
        print(f"master loop: Python ({why})" if why else "master loop: compiled (C)")
    if result.summary.status == "stopped":
        print(f"the run ended early: {result.summary.message}")
    if args.output:
        print(f"results: {args.output}")
    else:
        last = result.data[-1]
        for n in result.names:
            print(f"  {n} = {float(last[n])!r}")
    return 0


def _report_partial(result, output: str | None) -> None:
    n, end = len(result), result.summary.end_time
    upto = f"{n} rows up to t = {end!r} s" if n else "no rows"
    if output and not n:
        print(f"mbfmu simulate: no rows were recorded; {output} was not written (an earlier file there is "
              "left as it was)", file=sys.stderr)
    elif output:
        print(f"mbfmu simulate: partial results ({upto}) written to {output}", file=sys.stderr)
    else:
        print(f"mbfmu simulate: partial results ({upto}) not written: no output file given (-o)", file=sys.stderr)
