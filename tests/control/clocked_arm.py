"""A mixed clocked system: the native rigid_arm plant, a joint controller sampled at
T = 1 ms (exported as an FMI 3.0 Scheduled Execution FMU, or as a Python unit) and a
python-control Kalman filter observing the arm."""
from __future__ import annotations

import control
import numpy as np

from mbfmu.control.kalman import kalman_filter
from mbfmu.control.linearization import linearize
from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate
from mbfmu.plant.library import load_plant


T = 1e-3       # the controller's sample period, the plant's and the master's step [s]


STOP = 0.5     # [s]


Q = [f"q{k}" for k in (1, 2, 3)]


V = [f"v{k}" for k in (1, 2, 3)]


TAU = [f"tau{k}" for k in (1, 2, 3)]


def joint_controller() -> control.StateSpace:
    """Joint-space PID with leaky integrators, sampled at T (Tustin): tau from q and v."""
    A = np.array([[-0.5, 0.1, 0.0], [0.0, -0.5, 0.1], [0.0, 0.0, -0.5]])
    B = np.hstack([np.eye(3), np.zeros((3, 3))])
    C = -5.0 * np.eye(3)
    D = np.hstack([-40.0 * np.eye(3), -8.0 * np.eye(3)])
    sys = control.ss(A, B, C, D, inputs=Q + V, outputs=TAU, states=["i1", "i2", "i3"])
    return control.c2d(sys, T, method="tustin").copy(name="joint_pid")


def observer() -> control.StateSpace:
    """Steady-state Kalman filter of the arm linearized at rest, sampled at T: from tau and q
    to the estimated joint angles and rates."""
    arm = control.c2d(linearize(load_plant("rigid_arm"))[[0, 1, 2], :], T)
    kf = kalman_filter(arm, 1e-3 * np.eye(6), 1e-6 * np.eye(3))
    return control.ss(kf.A, kf.B, kf.C, kf.D, T, inputs=TAU + Q, outputs=[f"xhat{k}" for k in range(1, 7)],
                      name="observer")


def arm_loop(plant_fmu, ctrl_unit, stop: float = STOP):
    """The loop run for ``stop`` s at T: the plant's q, the controller's tau and the estimates recorded."""
    cons = [(f"plant.q[{i}]", f"ctrl.q{i}") for i in (1, 2, 3)] + [(f"plant.v[{i}]", f"ctrl.v{i}") for i in (1, 2, 3)]
    cons += [(f"ctrl.tau{i}", f"plant.tau[{i}]") for i in (1, 2, 3)]
    cons += [(f"ctrl.tau{i}", f"obs.tau{i}") for i in (1, 2, 3)] + [(f"plant.q[{i}]", f"obs.q{i}") for i in (1, 2, 3)]
    units = [FmuUnit(plant_fmu, "plant"), ctrl_unit, ControlUnit("obs", observer())]
    record = [f"plant.q[{i}]" for i in (1, 2, 3)] + [f"ctrl.tau{i}" for i in (1, 2, 3)]
    record += [f"obs.xhat{k}" for k in range(1, 7)]
    return simulate(System(units, cons), stop, T, record=record)


def arm_and_scheduled_controller(tmp_path_factory):
    """(native rigid_arm FMU, FMI 3.0 co-simulation; the joint controller exported natively as FMI
    3.0 Scheduled Execution at 1/T), both for linux64 only."""
    from mbfmu.control import export_fmu
    from mbfmu.fmu.builder import build_fmu
    plant = build_fmu("rigid_arm", tmp_path_factory.mktemp("arm"), runtime="native", platforms=("linux64",),
                      fmi_version=3)
    ctrl = export_fmu(joint_controller(), tmp_path_factory.mktemp("ctrl"), runtime="native", fmi=3,
                      scheduled=True, platforms=("linux64",))
    return plant, ctrl
