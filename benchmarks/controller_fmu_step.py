"""Benchmark: one communication step of a controller FMU, native against pythonfmu (issue 36).

The same controller (the rigid arm's LQG servo from its linearization: 9 states,
6 inputs, 3 outputs, and the PID of ``mbfmu.control.pid``) exported twice with
``mbfmu.control.export_fmu``: ``runtime="python"`` (pythonfmu) and
``runtime="native"`` (C only). Each step is what a master does: ``fmi2SetReal``
of all inputs, ``fmi2DoStep``, ``fmi2GetReal`` of all outputs, through fmpy's
``FMU2Slave`` in one child process, interleaved, best of 5 (the machine is
shared). The ratio is pythonfmu / native.

Usage::

    python benchmarks/controller_fmu_step.py [--steps N]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from fmu2_child import CHILD_PRELUDE

CHILD = CHILD_PRELUDE + r"""
steps = int(sys.argv[1])
units = {}
for arg in sys.argv[2:]:
    kind, path = arg.split("=", 1)
    f, ins, outs, md = open_slave(kind, path)
    units[kind] = [f, ins, outs, float(md.defaultExperiment.stepSize), 0.0]

def loop(kind):
    f, ins, outs, h, t = units[kind]
    u = [1e-3 * (i + 1) for i in range(len(ins))]
    t0 = time.perf_counter()
    for k in range(steps):
        f.setReal(ins, u)
        f.doStep(t, h)
        t += h
        f.getReal(outs)
    units[kind][4] = t
    return (time.perf_counter() - t0) / steps

best = {}
for rep in range(5):
    for kind in units:
        best[kind] = min(best.get(kind, 1e9), loop(kind))
print(json.dumps(best))
"""


def designs():
    """(name, controller) pairs: the rigid arm's LQG servo and a PID."""
    import control
    import numpy as np

    from mbfmu.control.discrete_pid import pid
    from mbfmu.control.kalman import kalman_filter
    from mbfmu.control.linearization import linearize
    from mbfmu.control.lqr import lqg_servo, lqr_servo
    from mbfmu.plant.library import load_plant

    lin = linearize(load_plant("rigid_arm"))
    arm = control.c2d(lin[[0, 1, 2], :], 0.001)
    lqg = lqg_servo(arm, lqr_servo(arm, np.ones(6), 0.1 * np.ones(3), Qi=10 * np.ones(3)),
                    kalman_filter(arm, 1e-3 * np.eye(6), 1e-6 * np.eye(3)), name="lqg")
    return [("lqg", lqg), ("pid", pid(60.0, 20.0, 4.0, dt=0.001, u_min=-15.0, u_max=15.0, name="pid"))]


def main() -> None:
    """Build the FMUs, time them in a child process, print a table."""
    from mbfmu.control import export_fmu
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10000)
    args = parser.parse_args()
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {args.steps} steps, best of 5")
    print(f"{'controller':<12}{'pythonfmu [us/step]':>22}{'native [us/step]':>20}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, sys_ in designs():
            py = export_fmu(sys_, Path(tmp) / "py", name=name)
            nat = export_fmu(sys_, Path(tmp) / "native", name=name, runtime="native", platforms=("linux64",))
            out = subprocess.run([sys.executable, "-c", CHILD, str(args.steps), f"pythonfmu={py}", f"native={nat}"],
                                 capture_output=True, text=True, check=True).stdout
            best = json.loads(out.strip().splitlines()[-1])
            print(f"{name:<12}{best['pythonfmu'] * 1e6:>22.2f}{best['native'] * 1e6:>20.2f}"
                  f"{best['pythonfmu'] / best['native']:>8.1f}")


if __name__ == "__main__":
    main()
