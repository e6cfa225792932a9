"""``mbfmu sweep``: a parameter sweep or Monte Carlo study from the command line.

Examples
--------
``mbfmu sweep flexible_arm --param payload_mass=0:2:11 --stop-time 2 --metric settling_time:tip_position[1] -o payload.csv --plot payload.png``
``mbfmu sweep system.ssp --param ctrl.Kp=normal(10,1) --samples 200 --seed 1 --stop-time 5 --metric max:plant.x --scheduler HOST:8786 -o mc.csv``
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..errors import InputError

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # as the shells report a process ended by SIGINT, SIGTERM

EPILOG = """SPEC: a:b:n (n values from a to b), v1,v2,v3, a single value, normal(mu,sigma) or uniform(a,b)
(distributions need --samples). METRIC: KIND:VARIABLE with KIND final, initial, min, max, mean, rms,
peak, rise_time, settling_time, peak_time, overshoot or undershoot (step figures take an optional
steady state, KIND:VARIABLE:FINAL), iae, ise, itae (of y - FINAL). Exit status: 0 all runs ok, 1 bad input (nothing run), 3 some runs failed,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM); after 130 and 143 the table holds the finished runs and
the cancelled ones."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``sweep`` on ``subparsers``."""
    p = subparsers.add_parser("sweep", help="parameter sweep or Monte Carlo study (local or on a Dask cluster)",
                              description="Run a plant, FMU, or SSP system once per parameter set and tabulate "
                                          "metrics: a grid (full factorial) or Monte Carlo samples, on local "
                                          "worker processes or a Dask cluster.",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help="library plant name, model file (.py), MODEL.fmu or SYSTEM.ssp")
    p.add_argument("--param", action="append", default=[], metavar="NAME=SPEC", required=True,
                   help="parameter (repeatable): FMU/SSP variable name (payload_mass, ctrl.Kp) and its values")
    p.add_argument("--stop-time", type=float, required=True, help="end of each run [s]")
    p.add_argument("--step", type=float, help="communication step [s] (default: the target's)")
    p.add_argument("--metric", action="append", default=[], metavar="KIND:VARIABLE", help="metric (repeatable)")
    p.add_argument("--samples", type=int, help="Monte Carlo draws (per grid point)")
    p.add_argument("--seed", type=int, help="seed of the draws (reproducible studies)")
    p.add_argument("--lhs", action="store_true", help="Latin hypercube sampling instead of plain random")
    p.add_argument("--zip", action="store_true", help="zip the value lists instead of the full factorial")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler HOST:PORT (default: run locally)")
    where.add_argument("--workers", type=int, help="local worker processes (default: one per core)")
    where.add_argument("--threads", type=int, metavar="N", help="N threads of this process instead of processes "
                                                               "(plants simulated in Python step in parallel)")
    p.add_argument("--cache", metavar="DIR", help="keep finished runs (full results) in DIR; a re-run resumes from "
                                                  "there (default with -o: OUTPUT_runs/ next to the table)")
    p.add_argument("--timeout", type=float, help="wall-time limit per run [s]")
    p.add_argument("--plot", metavar="PNG", help="the study's pictures (metric vs parameter, heat map, or histograms)")
    p.add_argument("--history", metavar="VARIABLE", help="also draw the family of time histories of VARIABLE")
    p.add_argument("--history-plot", metavar="PNG", help="file of --history (default: OUTPUT_VARIABLE.png)")
    p.add_argument("-o", "--output", metavar="CSV", help="results table (default: printed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the ``sweep`` sub-command; returns the exit status."""
    from ..cosim.recording.output_path import check_writable
    from .params import parse_assignment
    from .plots import plot_histories
    from .study import sweep

    parameters = dict(parse_assignment(a) for a in args.param)
    if args.scheduler:
        executor = args.scheduler if "://" in args.scheduler else f"dask://{args.scheduler}"
    else:
        executor = "threads" if args.threads else "local"
    target = args.target
    if not Path(target).suffix and Path(target).exists():
        raise InputError(f"{target!r} is a folder, not a plant, FMU or SSP file")
    cache = args.cache
    if cache is None and args.output:  # the full results outlive the command, beside the table
        cache = Path(args.output).with_name(Path(args.output).stem + "_runs")
    history_out = (args.history_plot or f"{Path(args.output or 'sweep').with_suffix('')}_{_safe(args.history)}.png"
                   if args.history else None)
    for path, what in ((args.output, "the results table"), (args.plot, "the plot"), (history_out, "the time histories")):
        if path:  # found now, not after the whole study
            check_writable(path, what)
    study = sweep(target, parameters, stop_time=args.stop_time, step=args.step, metrics=args.metric or None,
                  executor=executor, workers=args.threads or args.workers, cache=cache, samples=args.samples, seed=args.seed,
                  sampling="lhs" if args.lhs else "random", zipped=args.zip, timeout=args.timeout,
                  progress=not args.no_progress)
    print(f"{Path(str(target)).name}: {study.summary()}")
    for r in study.rows:
        if r["status"] in ("failed", "timed out"):
            first = (r["error"] or "").splitlines()[0] if r["error"] else ""
            print(f"  run {r['run']} {r['status']}: {first}", file=sys.stderr)
    if args.output:
        print(f"results: {study.to_csv(args.output)}")
    else:
        cols = [c for c in study.columns if c not in ("error", "result", "key", "cached")]
        print("\t".join(cols))
        for r in study.rows:
            print("\t".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]) for c in cols))
    if args.plot and study.metrics:
        print(f"plot: {study.plot(args.plot) and args.plot}")
    if args.history:
        plot_histories(study, args.history, history_out)
        print(f"time histories: {history_out}")
    if study.interrupted:
        return EXIT_TERMINATED if study.stopped_by == "SIGTERM" else EXIT_INTERRUPTED
    return 0 if study.count("ok") == len(study) else 3


def _safe(name: str) -> str:
    """A variable's name as part of a file name: ``q[2]`` -> ``q2``, ``arm.q[2]`` -> ``arm_q2``."""
    text = "".join(c if c.isalnum() or c in "-_" else "_" for c in name.replace("[", "").replace("]", ""))
    return re.sub(r"_+", "_", text).strip("_") or "variable"
