"""Benchmark: the rigid arm under a 1 kHz controller, three ways (issue 36).

The plant is the native rigid_arm FMU (FMI 3.0 co-simulation). The controller,
a joint PID with leaky integrators sampled at 1 ms (Tustin), runs as

* an FMI 3.0 Scheduled Execution FMU (``export_fmu(..., fmi=3, scheduled=True)``):
  the master activates its partition at each tick (the Python loop);
* an FMI 2.0 co-simulation FMU (``export_fmu(..., runtime="native")``): every unit is
  an FMU, so the run takes the compiled loop;
* the Python controller unit (``ControlUnit``), which the compiled loop evaluates in C.

Each is ``mbfmu.cosim.simulate`` for ``--stop`` seconds at 1 ms, best of 3 (the machine
is shared); the three give the same trajectories (tests/control/test_clocked_loop.py).

Usage::

    python benchmarks/clocked_loop.py [--stop SECONDS]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

T = 1e-3  # controller sample period and master step [s]


def controller():
    """The joint PID of tests/control/test_clocked_loop.py, sampled at T."""
    import control
    import numpy as np

    A = np.array([[-0.5, 0.1, 0.0], [0.0, -0.5, 0.1], [0.0, 0.0, -0.5]])
    B = np.hstack([np.eye(3), np.zeros((3, 3))])
    D = np.hstack([-40.0 * np.eye(3), -8.0 * np.eye(3)])
    sys = control.ss(A, B, -5.0 * np.eye(3), D, inputs=[f"q{k}" for k in (1, 2, 3)] + [f"v{k}" for k in (1, 2, 3)],
                     outputs=[f"tau{k}" for k in (1, 2, 3)], states=["i1", "i2", "i3"])
    return control.c2d(sys, T, method="tustin").copy(name="joint_pid")


def run(plant: Path, ctrl_unit, stop: float) -> tuple[float, str]:
    """Wall time [s] of one run and the loop it took."""
    from mbfmu.cosim import FmuUnit, System, simulate

    cons = [(f"plant.q[{i}]", f"ctrl.q{i}") for i in (1, 2, 3)] + [(f"plant.v[{i}]", f"ctrl.v{i}") for i in (1, 2, 3)]
    cons += [(f"ctrl.tau{i}", f"plant.tau[{i}]") for i in (1, 2, 3)]
    system = System([FmuUnit(plant, "plant"), ctrl_unit], cons)
    t0 = time.perf_counter()
    res = simulate(system, stop, T, progress=False)
    wall = time.perf_counter() - t0
    return wall, "Python" if res.meta.get("python_loop") else "compiled"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stop", type=float, default=10.0, help="simulated time [s] (default 10)")
    args = p.parse_args()
    from mbfmu.control import export_fmu
    from mbfmu.cosim import ControlUnit, FmuUnit
    from mbfmu.fmu.builder import build_fmu

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plant = build_fmu("rigid_arm", tmp / "arm", runtime="native", platforms=("linux64",), fmi_version=3)
        se = export_fmu(controller(), tmp / "se", runtime="native", fmi=3, scheduled=True, platforms=("linux64",))
        cs2 = export_fmu(controller(), tmp / "cs2", runtime="native", platforms=("linux64",))
        cases = {"FMI 3 Scheduled Execution FMU": lambda: FmuUnit(se, "ctrl"),
                 "FMI 2 co-simulation FMU": lambda: FmuUnit(cs2, "ctrl"),
                 "Python unit (ControlUnit)": lambda: ControlUnit("ctrl", controller())}
        best: dict[str, tuple[float, str]] = {}
        for _ in range(3):
            for name, make in cases.items():
                wall, loop = run(plant, make(), args.stop)
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, loop)
    steps = round(args.stop / T)
    print(f"rigid arm + 1 kHz controller, {args.stop:g} s at 1 ms ({steps} steps), best of 3")
    for name, (wall, loop) in best.items():
        print(f"  {name:32s} {wall:8.3f} s  {1e6 * wall / steps:7.2f} us/step  ({loop} loop)")


if __name__ == "__main__":
    main()
