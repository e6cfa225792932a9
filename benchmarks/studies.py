"""Benchmark of ``mbfmu.studies`` (issue 16): 20 runs of about 1 s of work each.

The target is the rigid_arm library plant as an FMU (pythonfmu), with its
stop time chosen so that one run takes about 1 s here. Measured in one go:

- a bare hand-written loop (one ``FmuUnit`` re-run by ``simulate`` with each
  value, no study machinery): the floor, and the peer of the serial study;
  and the loop a user writes first (a new ``FmuUnit`` per run);
- the study, serial (``executor="serial"``);
- the study on 2 local worker processes (the default executor, ``workers=2``);
- the study on a localhost Dask cluster (``distributed.LocalCluster``, 2
  single-threaded worker processes; cluster start-up reported apart);

and prints wall times, speed-ups over serial, and the overhead per run beyond
the run itself: ``(wall x workers - sum of the runs' own wall times) / runs``.
A second table repeats that with 100 near-empty runs (one 10 ms step each),
where the overhead is not hidden by the work: the study against the bare loop
and the executors against each other.
Targets (issue 16): >= 1.7x over serial with 2 workers; < 50 ms overhead per run.

A third table (issue 33, ``--threads-only`` runs just it): a study of 64 runs
of a library plant simulated in Python (its kernels release the GIL) on 2
threads (``executor="threads"``) against 2 local worker processes and serial,
with the ratio processes / threads (> 1: threads faster); results checked
bit-identical.

Run: ``.venv/bin/python benchmarks/studies.py [--runs 20] [--work 1.0] [--repeat 2]`` (about 4 min on 2 cores);
``--threads-only [--plant crash_occupant] [--thread-runs 64] [--thread-work 0.1]`` (about 1 min).
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path


def _bare_loop(fmu: Path, masses, stop: float, step: float, reuse: bool = True) -> tuple[float, list[float]]:
    """Runs by hand: one ``FmuUnit`` (extracted once) re-run with each value; or,
    ``reuse=False``, a new ``FmuUnit`` per run (the loop a user writes first)."""
    from mbfmu.cosim import FmuUnit, System, simulate
    t0 = time.perf_counter()
    finals = []
    unit = FmuUnit(fmu)
    for m in masses:
        if reuse:
            unit.values = {"arm_mass": m}
        else:
            unit = FmuUnit(fmu, values={"arm_mass": m})
        finals.append(float(simulate(System([unit]), stop, step, progress=False)["rigid_arm.q[2]"][-1]))
    return time.perf_counter() - t0, finals


def _study(fmu: Path, masses, stop: float, step: float, executor, workers=None):
    from mbfmu.studies import sweep
    t0 = time.perf_counter()
    s = sweep(fmu, {"arm_mass": masses}, stop_time=stop, step=step, metrics=["final:q[2]"], executor=executor,
              workers=workers, progress=False)
    wall = time.perf_counter() - t0
    assert s.count("ok") == len(masses), s.summary()
    return wall, s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--work", type=float, default=1.0, help="target wall time of one run [s]")
    ap.add_argument("--repeat", type=int, default=2, help="rounds (executors interleaved); best wall kept")
    ap.add_argument("--threads-only", action="store_true", help="only the threads-against-processes table")
    ap.add_argument("--plant", default="crash_occupant", help="library plant of the threads table")
    ap.add_argument("--thread-runs", type=int, default=64)
    ap.add_argument("--thread-work", type=float, default=0.1, help="target wall time of one run there [s]")
    args = ap.parse_args()
    if args.threads_only:
        _threads(args.plant, args.thread_runs, args.thread_work, args.repeat)
        return
    import distributed
    from mbfmu.fmu import build_fmu

    step = 0.01
    tmp = Path(tempfile.mkdtemp(prefix="mbfmu_bench_studies_"))
    fmu = build_fmu("rigid_arm", tmp)
    _bare_loop(fmu, [20.0], 0.1, step)  # warm up (first load of the FMU's Python side)
    probe = min(_bare_loop(fmu, [20.0], 1.0, step)[0] for _ in range(3))  # wall per simulated second
    stop = max(step, round(args.work / probe / step) * step)
    masses = [10.0 + k for k in range(args.runs)]
    print(f"# {platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"{args.runs} runs of rigid_arm.fmu, stop time {stop:g} s at {step} s; best of {args.repeat} "
          "interleaved rounds")
    t0 = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    startup = time.perf_counter() - t0
    best: dict[str, tuple[float, object]] = {}
    try:
        for _ in range(args.repeat):
            rounds = {"bare": lambda: _bare_loop(fmu, masses, stop, step),
                      "serial": lambda: _study(fmu, masses, stop, step, "serial"),
                      "local": lambda: _study(fmu, masses, stop, step, "local", workers=2),
                      "dask": lambda: _study(fmu, masses, stop, step, client)}
            for name, fn in rounds.items():
                wall, out = fn()
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, out)
    finally:
        client.close()
        cluster.close()
    (bare, finals), (serial, s_serial), (local, s_local), (dask, s_dask) = (best[k] for k in ("bare", "serial",
                                                                                               "local", "dask"))
    same = all(s_serial.result(i).data.tobytes() == s.result(i).data.tobytes()
               for s in (s_local, s_dask) for i in range(args.runs))
    assert [round(v, 12) for v in s_serial["final:q[2]"]] == [round(v, 12) for v in finals]

    def overhead(wall, study, workers):
        return (wall * workers - float(study["wall_time"].sum())) / args.runs

    mean_run = float(s_serial["wall_time"].mean())
    print(f"# one run: {mean_run:.3f} s on average (serial); results bit-identical across executors: {same}")
    print("| executor | wall (s) | serial study wall / this wall | overhead per run (ms) |")
    print("|---|---|---|---|")
    print(f"| bare hand-written loop, one FmuUnit (peer) | {bare:.2f} | {serial / bare:.2f} | |")
    print(f"| study, serial | {serial:.2f} | 1.00 | {overhead(serial, s_serial, 1) * 1e3:.1f} (vs bare loop: {(serial - bare) / args.runs * 1e3:.1f}) |")
    print(f"| study, 2 local worker processes | {local:.2f} | {serial / local:.2f} | {overhead(local, s_local, 2) * 1e3:.1f} |")
    print(f"| study, localhost Dask cluster (2 workers) | {dask:.2f} | {serial / dask:.2f} | {overhead(dask, s_dask, 2) * 1e3:.1f} |")
    print(f"# Dask LocalCluster start-up (not in the rows above): {startup:.2f} s; load now {os.getloadavg()[0]:.1f}")
    _tiny(fmu, step)
    _threads(args.plant, args.thread_runs, args.thread_work, args.repeat)


def _tiny(fmu: Path, step: float, runs: int = 100) -> None:
    """Overhead with near-empty runs (one step each)."""
    import distributed
    masses = [10.0 + 0.1 * k for k in range(runs)]
    bare, _ = _bare_loop(fmu, masses, step, step)
    naive, _ = _bare_loop(fmu, masses, step, step, reuse=False)
    rows = [("bare hand-written loop, one FmuUnit (peer)", bare, None, 1),
            ("hand-written loop, FmuUnit per run", naive, None, 1)]
    for label, ex, workers in (("study, serial", "serial", 1), ("study, 2 local worker processes", "local", 2)):
        wall, s = _study(fmu, masses, step, step, ex, workers=workers if ex == "local" else None)
        rows.append((label, wall, s, workers))
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        _study(fmu, masses[:4], step, step, client)  # workers warm: the target built once on each
        wall, s = _study(fmu, masses, step, step, client)
        rows.append(("study, localhost Dask cluster (2 workers)", wall, s, 2))
    finally:
        client.close()
        cluster.close()
    print(f"\n# {runs} near-empty runs (one {step} s step each)")
    print("| executor | wall (s) | per run (ms) | overhead per run beyond the run (ms) | study wall - bare loop, per run (ms) |")
    print("|---|---|---|---|---|")
    for label, wall, s, workers in rows:
        over = "" if s is None else f"{(wall * workers - float(s['wall_time'].sum())) / runs * 1e3:.1f}"
        vs_bare = "" if s is None else f"{(wall - bare / workers) / runs * 1e3:.1f}"
        print(f"| {label} | {wall:.2f} | {wall / runs * 1e3:.1f} | {over} | {vs_bare} |")


def _threads(plant: str, runs: int, work: float, repeat: int) -> None:
    """A study of ``runs`` runs of the library ``plant`` in Python: 2 threads against 2 processes."""
    from mbfmu import load_plant
    from mbfmu.studies import sweep
    p = load_plant(plant)
    name = p.parameters[0].name
    base = float(p.parameter_values()[name])
    t0 = time.perf_counter()
    p.simulate(0.1, p.default_step)
    per_second = (time.perf_counter() - t0) / 0.1
    stop = max(p.default_step, round(work / per_second / p.default_step) * p.default_step)
    values = [base * (1.0 + 0.002 * k) for k in range(runs)]
    print(f"\n# {platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {runs} runs of the "
          f"{plant} plant in Python ({name} swept), stop time {stop:g} s; best of {repeat} interleaved rounds")
    best: dict[str, tuple[float, object]] = {}
    for _ in range(repeat):
        for label, ex in (("serial", "serial"), ("threads", "threads"), ("processes", "local")):
            t0 = time.perf_counter()
            st = sweep(plant, {name: values}, stop_time=stop, metrics=[], executor=ex,
                       workers=None if ex == "serial" else 2, progress=False)
            wall = time.perf_counter() - t0
            assert st.count("ok") == runs, st.summary()
            if label not in best or wall < best[label][0]:
                best[label] = (wall, st)
    serial = best["serial"][0]
    same = all(best["serial"][1].result(i).data.tobytes() == best[k][1].result(i).data.tobytes()
               for k in ("threads", "processes") for i in range(runs))
    print(f"# results bit-identical across the executors: {same}")
    print("| executor | wall (s) | serial wall / this wall | processes wall / this wall |")
    print("|---|---|---|---|")
    for label in ("serial", "threads", "processes"):
        wall = best[label][0]
        print(f"| {label if label == 'serial' else '2 ' + label} | {wall:.2f} | {serial / wall:.2f} | "
              f"{best['processes'][0] / wall:.2f} |")
    print(f"# load now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
