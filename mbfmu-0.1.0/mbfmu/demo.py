"""``mbfmu demo`` (the README's main job): build the plant FMUs and run the
closed-loop studies through the co-simulation master, writing FMUs, plots,
results and HTML replays under ``results/`` (never into ``fmus/``: the FMUs a
user built there stay as they are).

Each step reports what it did; a step whose layer is missing from this
installation is reported and skipped, never faked.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="build the FMUs and run the closed-loop studies (the main job)",
                       description="Build every library plant's FMU, then run the closed-loop studies through "
                                   "the co-simulation master: FMUs, plots, results and HTML replays go to "
                                   "OUTPUT/ (default results/). About a minute and a half on 2 cores.")
    p.add_argument("-o", "--output", default="results", help="output folder (default: results/)")
    p.add_argument("--fmus", default=None, help="where to build the library's plant FMUs (default: OUTPUT/fmus/)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    from . import demo_steps
    for step in demo_steps.STEPS:
        t = time.perf_counter()
        print(f"== {step.__doc__.strip().splitlines()[0]}", flush=True)
        step(out, out / "fmus" if args.fmus is None else Path(args.fmus))
        print(f"   done in {time.perf_counter() - t:.1f} s", flush=True)
    print(f"demo finished in {time.perf_counter() - t0:.1f} s; outputs in {out.resolve()}")
    return 0
