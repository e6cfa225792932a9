"""Write ``examples/system.ssp``: the rigid 3-DOF arm of Wang et al. (2009)
held at a joint-space set point by a linear PID controller, as an SSP 1.0
system of two FMUs.

Units:

``arm``
    The library plant ``rigid_arm`` (joint torques ``tau[1..3]`` [N.m] in,
    joint angles ``q[1..3]`` [rad] and rates ``v[1..3]`` [rad/s] out), built
    with the pythonfmu runtime (it needs mbfmu where it runs).
``ctrl``
    A multivariable PID on the joint angles, ``tau = Kp (r - q) - Kd v +
    Ki integral(r - q)`` with ``Kp`` = 400 N.m/rad, ``Kd`` = 80 N.m.s/rad and
    ``Ki`` = 300 N.m/(rad.s) per joint, discretized with zero-order hold at
    the 10 ms communication step; its inputs ``r[1..3]`` [rad] are the set
    point (start values 0.5, 0.6, -0.3 rad), settable by name
    (``--set ctrl.r[2]=0.8``). The integral action removes the gravity
    offset: the arm settles at the set point.

Run ``python examples/make_system_ssp.py [--output DIR]`` after a
change to the plant or the exporters; ``tests/test_example_ssp.py`` fails
while the shipped file is out of date.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import control
import numpy as np

from mbfmu.control.export import export_fmu
from mbfmu.cosim import FmuUnit, System, write_ssp
from mbfmu.fmu.builder import build_fmu

STEP = 0.01            # communication step and controller sample time [s]
STOP_TIME = 10.0       # default experiment [s]: the integral action settles within it
SET_POINT = (0.5, 0.6, -0.3)   # r[1..3] [rad]
KP, KD, KI = 400.0, 80.0, 300.0


def pid_controller() -> control.StateSpace:
    """The 3-joint PID as a continuous python-control system, inputs
    ``r[1..3], q[1..3], v[1..3]``, outputs ``tau[1..3]``, states the error
    integrals [rad.s]."""
    n = 3
    I, Z = np.eye(n), np.zeros((n, n))
    A = Z
    B = np.hstack([I, -I, Z])                       # d/dt integral = r - q
    C = KI * I
    D = np.hstack([KP * I, -KP * I, -KD * I])
    labels = lambda base: [f"{base}[{i + 1}]" for i in range(n)]
    return control.ss(A, B, C, D, inputs=labels("r") + labels("q") + labels("v"), outputs=labels("tau"),
                      states=labels("integral"), name="ctrl")


def system(folder: Path) -> System:
    """The arm and its controller, FMUs built into ``folder``, connected."""
    arm = build_fmu("rigid_arm", folder, overwrite=True)
    units = {f"r[{i + 1}]": "rad" for i in range(3)} | {f"q[{i + 1}]": "rad" for i in range(3)} \
        | {f"v[{i + 1}]": "rad/s" for i in range(3)} | {f"tau[{i + 1}]": "N.m" for i in range(3)}
    ctrl = export_fmu(pid_controller(), folder, "ctrl", step=STEP, units=units,
                      inputs_start={f"r[{i + 1}]": r for i, r in enumerate(SET_POINT)}, overwrite=True)
    return System([FmuUnit(arm, "arm"), FmuUnit(ctrl, "ctrl")],
                  [("arm.q", "ctrl.q"), ("arm.v", "ctrl.v"), ("ctrl.tau", "arm.tau")])


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", metavar="DIR", default=str(Path(__file__).parent),
                        help="folder to write system.ssp into (default: the examples folder)")
    args = parser.parse_args(argv)
    Path(args.output).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = write_ssp(system(Path(tmp)), Path(args.output) / "system.ssp", stop_time=STOP_TIME, step=STEP,
                        name="arm_pid")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
