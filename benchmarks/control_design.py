"""Benchmark of controller design through the co-simulation (issue 28).

1. ``tune`` wall time against the runs it evaluates, on the PD loop of the
   rigid_arm FMU (2 s at 10 ms per run): serial, 2 local worker processes, a
   localhost Dask cluster (``dask-local``, 2 workers; start-up included), with
   the peer measured in the same run: the same number of bare ``simulate``
   calls in a loop (no optimizer, no study machinery).
2. ``linearize_system`` against building the same linear model by hand in
   python-control: the PI loop of ControlUnits and blocks (sampled), and the
   rigid_arm FMU under a PD of blocks (the FMU's plant linearized, continuous).

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/control_design.py [--runs 40]`` (about 1-2 min on 2 cores).
"""
from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "studies"))


def _tune_table(runs: int) -> list[tuple[str, float, int]]:
    from pd_arm_target import make_target

    from mbfmu.cosim import simulate
    from mbfmu.fmu import build_fmu
    from mbfmu.studies import tune
    fmu = build_fmu("rigid_arm", tempfile.mkdtemp())
    closed_loop, q_target = make_target(fmu)
    f = repr(float(q_target[1]))
    spec = dict(objective=f"itae:arm.q[2]:{f}",
                constraints=[f"overshoot:arm.q[2]:{f}<5%", f"settling_time:arm.q[2]:{f}<1s"],
                stop_time=2.0, step=0.01, seed=1, max_runs=runs, progress=False)
    rows = []
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for kp, kd in zip(rng.uniform(100, 1000, runs), rng.uniform(10, 100, runs)):
        simulate(closed_loop(kp, kd), stop_time=2.0, step=0.01)
    rows.append(("bare simulate loop (peer)", time.perf_counter() - t0, runs))
    for label, ex in (("tune, serial", "serial"), ("tune, 2 processes", 2), ("tune, Dask local (2 workers)", "dask-local")):
        t0 = time.perf_counter()
        r = tune(closed_loop, {"kp": (10.0, 3000.0), "kd": (1.0, 300.0)}, x0={"kp": 20.0, "kd": 2.0},
                 executor=ex, workers=2, **spec)
        rows.append((label, time.perf_counter() - t0, r.runs))
    return rows


def _pi_loop():
    import control as ct

    from mbfmu.cosim import ControlUnit, System, sources
    from mbfmu.cosim.blocks import Gain, Sum
    P = ct.tf([2.0], [0.1, 1.1, 1.0])
    C = ct.tf([1.5, 3.0], [1.0, 0.0])
    units = [sources.step("ref", 0.5, 1.0), Sum("err", "+-", inputs=("r", "m")), ControlUnit("ctrl", ct.ss(C)),
             Gain("k", 2.0), ControlUnit("plant", ct.ss(P))]
    conns = [("ref.y", "err.r"), ("plant.y[1]", "err.m"), ("err.y", "ctrl.u[1]"), ("ctrl.y[1]", "k.u"),
             ("k.y", "plant.u[1]")]
    return System(units, conns), P, C


def _timed(fn, repeat: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def _linearize_table() -> list[tuple[str, float, float]]:
    import control as ct

    from mbfmu.control import linearize, linearize_system, trim_inputs
    from mbfmu.cosim import FmuUnit, System
    from mbfmu.cosim.blocks import Gain, Offset, Sum
    from mbfmu.fmu import build_fmu
    from mbfmu.plant.library import load_plant
    system, P, C = _pi_loop()
    H = 0.01
    ours = _timed(lambda: linearize_system(system, inputs="err.r", outputs="plant.y[1]", sampled=True, step=H), 20)
    hand = _timed(lambda: ct.feedback(ct.c2d(ct.ss(P), H, "zoh") * 2.0 * ct.c2d(ct.ss(C), H, "zoh"), 1), 20)
    rows = [("PI loop, sampled (5 units)", ours, hand)]
    plant = load_plant("rigid_arm")
    hold = trim_inputs(plant)
    fmu = build_fmu("rigid_arm", tempfile.mkdtemp())
    arm = FmuUnit(fmu, name="arm")
    units = [arm, Offset("e", -plant.initial_state()[:3]), Gain("kp", -400.0, n=3), Gain("kd", -40.0, n=3),
             Sum("pd", "++", n=3), Offset("hold", hold.u)]
    conns = [("arm.q", "e.u"), ("e.y", "kp.u"), (f"arm.{arm.outputs[3][:-3]}", "kd.u"), ("kp.y", "pd.u1"),
             ("kd.y", "pd.u2"), ("pd.y", "hold.u"), ("hold.y", "arm.tau")]
    pd_system = System(units, conns)
    ours = _timed(lambda: linearize_system(pd_system, inputs="hold.y->arm.tau", outputs="arm.q", step=H), 3)
    K = np.hstack([400.0 * np.eye(3), 40.0 * np.eye(3)])

    def by_hand():
        lin = linearize(plant, None, hold.u)
        return ct.ss(lin.A - lin.B @ K @ lin.C[:6], lin.B, lin.C[:3], 0)
    rows.append(("rigid_arm FMU + PD blocks", ours, _timed(by_hand, 3)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40, help="tune budget (max_runs)")
    args = ap.parse_args()
    print(f"# control design benchmark, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{platform.python_version()}")
    print("\n## tune: wall time against runs evaluated (PD on the rigid_arm FMU, 2 s at 10 ms per run)\n")
    rows = _tune_table(args.runs)
    base = rows[0][1] / rows[0][2]
    print("| what | wall [s] | runs | per run [ms] | ratio per run vs bare loop |")
    print("|---|---|---|---|---|")
    for label, wall, n in rows:
        print(f"| {label} | {wall:.2f} | {n} | {1e3 * wall / max(n, 1):.1f} | {wall / max(n, 1) / base:.2f} |")
    print("\n## linearize_system against the same model built by hand in python-control\n")
    print("| loop | linearize_system [ms] | by hand [ms] | ratio |")
    print("|---|---|---|---|")
    for label, ours, hand in _linearize_table():
        print(f"| {label} | {1e3 * ours:.2f} | {1e3 * hand:.2f} | {ours / hand:.1f} |")


if __name__ == "__main__":
    main()
