"""Real-time factor of every plant in the library, each on its own.

For each plant of ``mbfmu.list_plants()`` (default parameters, constant
default inputs), runs ``Plant.simulate`` (``advance`` plus ``outputs_at`` at
every communication step, what an FMU ``doStep`` does) over a stretch of
simulated time and reports the wall time per simulated second and the
real-time factor (simulated time / wall time; > 1 is faster than real time),
with the integrator's internal step and the communication step used. The
best of ``--repeat`` runs is kept (the machine is shared).

Run from the repository root::

    .venv/bin/python benchmarks/plants.py                 # all plants, 2 s each
    .venv/bin/python benchmarks/plants.py rigid_arm --duration 5 --repeat 3

Output: a Markdown table (paste it into ``benchmarks/RESULTS.md``).
"""
from __future__ import annotations

import argparse
import platform
import time
import traceback

import mbfmu


def measure(name: str, duration: float, repeat: int) -> dict:
    """Build plant ``name`` and time ``simulate`` over ``duration`` s (or its
    default stop time if shorter)."""
    t0 = time.perf_counter()
    plant = mbfmu.load_plant(name)
    build = time.perf_counter() - t0
    step = plant.default_step
    stop = min(duration, plant.default_stop_time)
    stop = max(step, round(stop / step) * step)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        plant.simulate(stop, step)
        best = min(best, time.perf_counter() - t0)
    return dict(plant=name, states=len(plant.states), internal_step=plant.internal_step, step=step,
                simulated=stop, wall=best, per_second=best / stop, rtf=stop / best, build=build)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plants", nargs="*", help="plants to time (default: the whole library)")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds per plant (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per plant, best kept (default 1)")
    args = ap.parse_args(argv)
    names = args.plants or mbfmu.list_plants()
    print(f"# plants benchmark: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| plant | states | internal step (s) | comm. step (s) | simulated (s) | wall (s) "
          "| wall per simulated s (s) | real-time factor | build (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for name in names:
        try:
            r = measure(name, args.duration, args.repeat)
        except Exception as exc:  # other plants may be work in progress: report, go on
            failed += 1
            print(f"| {name} | error: {type(exc).__name__}: {str(exc)[:80]} | | | | | | | |")
            traceback.print_exc()
            continue
        print(f"| {r['plant']} | {r['states']} | {r['internal_step']:g} | {r['step']:g} | "
              f"{r['simulated']:g} | {r['wall']:.3f} | {r['per_second']:.4g} | {r['rtf']:.3g} | "
              f"{r['build']:.3f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
