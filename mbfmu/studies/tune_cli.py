"""``mbfmu tune``: tune controller parameters against time-domain requirements over co-simulations.

Examples
--------
``mbfmu tune examples/loop.py:closed_loop --param kp=10:3000 --param kd=1:300 --require "overshoot:arm.q[2]:1.0854<5%" --minimize "itae:arm.q[2]:1.0854" --stop-time 2 --step 0.01 --workers 2``
``mbfmu tune system.ssp --param ctrl.Kp=1:100 --require "settling_time:plant.y<2s" --stop-time 5 --scheduler HOST:8786``
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

from ..errors import InputError

EPILOG = """TARGET: FILE.py:FUNCTION (a function building the closed-loop mbfmu.cosim.System from the tuned
parameters, as keyword arguments), or any sweep target (plant name, model file, MODEL.fmu, SYSTEM.ssp) whose
variables are tuned. RANGE: lo:hi (log scale when lo > 0 and hi/lo >= 50). REQUIREMENT: KIND:VARIABLE[:FINAL]
<BOUND[%|s] (or >). The best parameters are run again at the verification steps (default step/5): the
requirements count as met only when they hold at the finest; the peak effort (max |value| of each plant
input the controller drives, or of each --effort signal) is reported, and a parameter within 2 % of its
range from a bound is flagged. Exit status: 0 requirements met, 4 not met, 1 bad input (nothing run), 130
interrupted (Ctrl-C), 143 terminated (SIGTERM); after 130 and 143 the best point evaluated so far is printed
(if any run finished)."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``tune`` on ``subparsers``."""
    p = subparsers.add_parser("tune", help="tune controller parameters over closed-loop co-simulations",
                              description="Tune parameters against time-domain requirements (overshoot, settling "
                                          "time, ITAE...) over real runs: differential evolution, then a "
                                          "Nelder-Mead polish; runs local or on a Dask cluster.",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help="FILE.py:FUNCTION, or a plant name, model file, MODEL.fmu or SYSTEM.ssp")
    p.add_argument("--param", action="append", required=True, metavar="NAME=LO:HI", help="tuned parameter (repeatable)")
    p.add_argument("--x0", action="append", default=[], metavar="NAME=VALUE", help="starting value (repeatable)")
    p.add_argument("--require", action="append", default=[], metavar="REQUIREMENT", help="requirement (repeatable)")
    p.add_argument("--minimize", metavar="KIND:VARIABLE", help="objective, e.g. itae:arm.q[2]:1.0")
    p.add_argument("--stop-time", type=float, required=True, help="end of each run [s]")
    p.add_argument("--step", type=float, help="communication step of the tuning runs [s]")
    p.add_argument("--verify-step", type=float, action="append", metavar="S",
                   help="step [s] at which the best parameters are run again (repeatable; default step/5); "
                        "the requirements are met only when they hold at the finest")
    p.add_argument("--no-verify", action="store_true", help="no verification at a finer step")
    p.add_argument("--effort", action="append", metavar="UNIT.VAR",
                   help="signal whose peak |value| is the effort (repeatable; default the plant inputs the "
                        "controller drives)")
    p.add_argument("--seed", type=int, default=0, help="seed of the global search (default 0)")
    p.add_argument("--max-runs", type=int, default=200, help="largest number of runs (default 200)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler HOST:PORT")
    where.add_argument("--workers", type=int, help="local worker processes")
    p.add_argument("--cache", metavar="DIR", help="study cache: finished runs are kept and not redone (resume)")
    p.add_argument("--plot", metavar="PNG", help="history plot (cost of each run, best so far)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def _range(text: str) -> tuple[str, tuple[float, float]]:
    name, sep, rng = text.partition("=")
    lo, sep2, hi = rng.partition(":")
    try:
        if not (sep and sep2):
            raise ValueError
        return name.strip(), (float(lo), float(hi))
    except ValueError:
        raise InputError(f"--param {text!r}: expected NAME=LO:HI") from None


def _value(text: str) -> tuple[str, float]:
    name, sep, v = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip(), float(v)
    except ValueError:
        raise InputError(f"--x0 {text!r}: expected NAME=VALUE") from None


def load_function(spec: str):
    """The function ``FUNCTION`` of the Python file ``FILE.py`` named by ``FILE.py:FUNCTION``."""
    file, _, fn = spec.rpartition(":")
    path = Path(file)
    if not path.is_file():
        raise InputError(f"target {spec!r}: no file {file!r}")
    mod_spec = importlib.util.spec_from_file_location(f"mbfmu_tune_target_{path.stem}", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    func = getattr(module, fn, None)
    if not callable(func):
        raise InputError(f"target {spec!r}: {file} defines no function {fn!r}")
    return func


def run(args: argparse.Namespace) -> int:
    """Run the ``tune`` sub-command; returns the exit status."""
    from ..cosim.recording.output_path import check_writable
    from ..errors import RunInterrupted
    from .cli import EXIT_INTERRUPTED, EXIT_TERMINATED
    from .tuning import tune
    if args.plot:
        check_writable(args.plot, "the history plot")  # now, not after the whole tuning
    params = dict(_range(t) for t in args.param)
    x0 = dict(_value(t) for t in args.x0) or None
    target = load_function(args.target) if ".py:" in args.target else args.target
    executor = (args.scheduler if "://" in args.scheduler else f"dask://{args.scheduler}") if args.scheduler else \
        (args.workers if args.workers else "local")
    if args.no_verify and args.verify_step:
        raise InputError("--no-verify and --verify-step: give one of them")
    try:
        result = tune(target, params, x0=x0, objective=args.minimize, constraints=args.require,
                      stop_time=args.stop_time, step=args.step, seed=args.seed, executor=executor,
                      max_runs=args.max_runs, cache=args.cache, progress=not args.no_progress,
                      verify_steps=[] if args.no_verify else args.verify_step, effort=args.effort)
    except RunInterrupted as exc:
        print(f"mbfmu tune: {exc}", file=sys.stderr)
        return EXIT_TERMINATED if exc.kind == "SIGTERM" else EXIT_INTERRUPTED
    how = {"SIGTERM": "terminated (SIGTERM) after", "SIGINT": "interrupted (Ctrl-C) after"}.get(result.stopped_by,
                                                                                                "tuned in")
    print(f"{how} {len(result.history)} evaluations ({result.runs} runs, the rest from the cache or repeated)"
          + ("; the best point so far:" if result.stopped_by else ""))
    for n, v in result.best.items():
        print(f"  {n} = {v:.6g}" + (f"  (at its {result.at_bound[n]} bound)" if n in result.at_bound else ""))
    print(result.table())
    for line in result.summary():
        print(line)
    imp = result.improvement
    print(f"improvement: cost {result.initial_cost:.5g} -> {result.best_cost:.5g}"
          + (f" ({imp:.3g}x)" if math.isfinite(imp) else ""))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        result.plot_history(args.plot)
        print(f"history plot: {args.plot}")
    if result.stopped_by:
        return EXIT_TERMINATED if result.stopped_by == "SIGTERM" else EXIT_INTERRUPTED
    return 0 if result.met else 4
