"""The rigid_arm FMU under a PD law with gravity hold at the target pose, as
a study target ``closed_loop(kp, kd)`` (tuning tests)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

Q_MOVE = np.array([0.0, 0.3, 0.0])  # rad: the shoulder steps up by 0.3 rad


def make_target(fmu: str | Path):
    """``(closed_loop, q_target)``: the function building the closed loop
    from the PD gains (N m/rad, N m s/rad), and the target pose (rad)."""
    from mbfmu.control import trim_inputs
    from mbfmu.plant.library import load_plant
    plant = load_plant("rigid_arm")
    q_target = plant.initial_state()[:3] + Q_MOVE
    hold = [float(v) for v in trim_inputs(plant, q=q_target).u]
    target = [float(v) for v in q_target]
    fmu = str(fmu)

    def closed_loop(kp: float = 100.0, kd: float = 10.0):
        from mbfmu.cosim import FmuUnit, System
        from mbfmu.cosim.blocks import Gain, Offset, Sum
        arm = FmuUnit(fmu, name="arm")
        units = [arm, Offset("e", [-t for t in target]), Gain("kp", -kp, n=3), Gain("kd", -kd, n=3),
                 Sum("pd", "++", n=3), Offset("hold", hold)]
        velocity = arm.outputs[3][:-3]  # the FMU's name of the joint rates
        return System(units, [("arm.q", "e.u"), ("e.y", "kp.u"), (f"arm.{velocity}", "kd.u"), ("kp.y", "pd.u1"),
                              ("kd.y", "pd.u2"), ("pd.y", "hold.u"), ("hold.y", "arm.tau")])
    return closed_loop, q_target
