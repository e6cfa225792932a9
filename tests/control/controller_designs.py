"""The controllers the native controller FMU tests export (#36.1): one design of
each kind (DESIGNS: python-control systems and mbfmu's controllers) for the rigid
arm's joints, and
interconnections of controllers and blocks (NETWORKS), shared by the tests of
the FMU in the master and of its binaries on other platforms."""
from __future__ import annotations

import functools

import control
import numpy as np

import mbfmu
from mbfmu.control.discrete_pid import pid
from mbfmu.control.kalman import kalman_filter
from mbfmu.control.linearization import linearize
from mbfmu.control.lqr import lqg_servo, lqr_servo
from mbfmu.control.scheduling import scheduled_controller
from mbfmu.cosim import ControlUnit, Gain, Offset, Saturation, Sum
from mbfmu.dynamics import gravity_torques
from mbfmu.plant.library import load_plant

H = 0.01       # the plant's and the master's step [s]
STOP = 1.0     # [s]
Q = [f"q{k}" for k in (1, 2, 3)]
V = [f"v{k}" for k in (1, 2, 3)]
TAU = [f"tau{k}" for k in (1, 2, 3)]


def pid_integral_continuous() -> control.StateSpace:
    """Joint-space PID with leaky, coupled integrators: x' = A x + q, tau = -Ki x - Kp q - Kd v."""
    A = np.array([[-0.5, 0.1, 0.0], [0.0, -0.5, 0.1], [0.0, 0.0, -0.5]])
    B = np.hstack([np.eye(3), np.zeros((3, 3))])
    C = -5.0 * np.eye(3)
    D = np.hstack([-40.0 * np.eye(3), -8.0 * np.eye(3)])
    return control.ss(A, B, C, D, inputs=Q + V, outputs=TAU, states=["i1", "i2", "i3"], name="joint_pid")


def _arm_model() -> control.StateSpace:
    """The rigid arm linearized at rest, sampled at H: outputs q, inputs tau."""
    lin = linearize(load_plant("rigid_arm"))
    return control.c2d(lin[[0, 1, 2], :], H)


def _relabel(sys: control.StateSpace, inputs, outputs, name: str) -> control.StateSpace:
    return control.ss(sys.A, sys.B, sys.C, sys.D, sys.dt, inputs=inputs, outputs=outputs,
                      states=list(sys.state_labels), name=name)


def lqr_static() -> control.StateSpace:
    """State feedback u = -K x (no states of its own)."""
    arm = _arm_model()
    full = control.ss(arm.A, arm.B, np.eye(6), np.zeros((6, 3)), H, inputs=arm.input_labels,
                      states=arm.state_labels)
    return _relabel(lqr_servo(full, np.ones(6), 0.1 * np.ones(3)), Q + V, TAU, "lqr")


def lqg() -> control.StateSpace:
    """Kalman filter + LQR with integral action on the three joint angles."""
    arm = _arm_model()
    lq = lqr_servo(arm, np.ones(6), 0.1 * np.ones(3), Qi=10 * np.ones(3))
    kf = kalman_filter(arm, 1e-3 * np.eye(6), 1e-6 * np.eye(3))
    return _relabel(lqg_servo(arm, lq, kf), ["r1", "r2", "r3"] + Q, TAU, "lqg")


@functools.cache
def _schedule_tables() -> tuple:
    """LQR gains of the rigid arm scheduled over four elbow angles (rad), and the
    target (elbow at 1 rad) with the torques holding it."""
    from mbfmu.control import schedule, trim_inputs
    arm = load_plant("rigid_arm")

    def design(lin, point):
        d = control.c2d(control.ss(lin.A, lin.B, np.eye(6), 0), H, "zoh")
        return control.dlqr(d.A, d.B, np.diag([100.0] * 3 + [1.0] * 3), 0.01 * np.eye(3))[0]
    sch = schedule(arm, {"q[3]": [-1.0, 0.0, 0.5, 1.0]}, design)
    x_ref = arm.initial_state()
    x_ref[2] = 1.0
    return sch.grid, sch.gains, x_ref, trim_inputs(arm, state=x_ref).u


def scheduled():
    """u = u_ref - K(q3) (x - x_ref): the elbow slews from its start across the grid."""
    from mbfmu.control.scheduling import scheduled_controller
    grid, gains, x_ref, u_ref = _schedule_tables()
    return scheduled_controller(grid, gains, x_ref, u_ref, H, states=Q + V, inputs=TAU, index=2,
                                name="scheduled_lqr")


def traced_pid() -> control.NonlinearIOSystem:
    """A nonlinear joint controller in plain numpy: integral state z, tau = -40 sin(q) -
    8 v exp(-v^2 / 10) - 5 z, z+ = 0.99 z + H q (it traces through the expression tape)."""
    def update(t, x, u, params):
        return 0.99 * x + H * u[:3]

    def output(t, x, u, params):
        q, v = u[:3], u[3:]
        return -40.0 * np.sin(q) - 8.0 * v * np.exp(-v ** 2 / 10.0) - 5.0 * x
    return control.nlsys(update, output, inputs=Q + V, outputs=TAU, states=["z1", "z2", "z3"], dt=H,
                         name="traced_pid")


DESIGNS = {
    "lqr": lqr_static,
    "lqg": lqg,
    "continuous_ss": lambda: pid_integral_continuous(),
    "discrete_ss": lambda: control.c2d(pid_integral_continuous(), H, method="tustin").copy(name="joint_pid_d"),
    "transfer_function": lambda: control.tf([-8.0, -40.0], [0.02, 1.0], inputs=["q2"], outputs=["tau2"],
                                            name="lead"),
    "discrete_pid": lambda: pid(60.0, 20.0, 4.0, dt=H, u_min=-15.0, u_max=15.0, reference="r", measurement="q1",
                                output="tau1", name="pid1"),
    "scheduled": scheduled,
    "traced": traced_pid,
}



# ---------------------------------------------------------------- interconnections

REF = [0.5, 0.8, -0.4]  # set-point, rad


def _u0():
    """The torques that hold the arm at REF (N.m)."""
    return gravity_torques(mbfmu.load_plant("rigid_arm").model, REF)


def blocks_pd() -> tuple[list, list, dict]:
    """The README's blocks PD loop without its plant: (units, connections, values)."""
    units = [Sum("err", "+-", n=3, inputs=("ref", "q"), unit="rad"),
             Gain("kp", 400.0, n=3, unit_in="rad", unit_out="N.m"),
             Gain("kd", 150.0, n=3, unit_in="rad/s", unit_out="N.m"),
             Sum("pd", "+-", n=3, inputs=("p", "d"), unit="N.m"), Offset("u", _u0(), unit="N.m"),
             Saturation("lim", -300.0, 300.0, n=3, unit="N.m")]
    conns = [("err.y", "kp.u"), ("kp.y", "pd.p"), ("kd.y", "pd.d"), ("pd.y", "u.u"), ("u.y", "lim.u")]
    return units, conns, {f"err.ref[{i}]": r for i, r in enumerate(REF, 1)}


def pids() -> tuple[list, list, dict]:
    """A discrete PID per joint (5 ms: two samples per 10 ms step; derivative on the error
    for joint 2), gravity compensation added, the torque limited."""
    units = [ControlUnit(f"pid{i}", pid(300.0, 200.0, 60.0, dt=0.005, Tf=0.01, u_min=-200.0, u_max=200.0,
                                        derivative_on="error" if i == 2 else "measurement", name=f"pid{i}"),
                         inputs_start={"r": REF[i - 1]}) for i in (1, 2, 3)]
    units += [Offset("u", _u0(), unit="N.m"), Saturation("lim", -300.0, 300.0, n=3, unit="N.m")]
    conns = [(f"pid{i}.u", f"u.u[{i}]") for i in (1, 2, 3)] + [("u.y", "lim.u")]
    return units, conns, {}


def scheduled_lqr() -> tuple[list, list, dict]:
    """A scheduled state feedback (gains of the arm's LQR at two elbow angles, 10 ms),
    its torques limited, and a lead filter (a discrete transfer function) on joint 1."""
    from mbfmu.control import schedule, trim_inputs
    plant = mbfmu.load_plant("rigid_arm")

    def design(lin, point):
        d = control.c2d(control.ss(lin.A, lin.B, np.eye(6), 0), H, "zoh")
        return control.dlqr(d.A, d.B, np.diag([100.0] * 3 + [1.0] * 3), 0.01 * np.eye(3))[0]
    sch = schedule(plant, {"q[3]": [-1.0, 0.5]}, design)
    x_ref = np.array(REF + [0.0] * 3)
    names = [s.name for s in plant.states]
    ctrl = scheduled_controller(sch.grid, sch.gains, x_ref, trim_inputs(plant, state=x_ref).u, H, names,
                                ["tau[1]", "tau[2]", "tau[3]"], index=2, name="sched")
    lead = control.c2d(control.tf([0.05, 1.0], [0.02, 1.0]), H, "tustin")
    units = [ControlUnit("ctrl", ctrl), Saturation("lim", -200.0, 200.0, n=3, unit="N.m"),
             ControlUnit("lead", lead), Sum("tau1", "++", n=1, inputs=("a", "b"))]
    conns = [("ctrl.tau", "lim.u"), ("lim.y[1]", "lead.u[1]"), ("lead.y[1]", "tau1.a"), ("lim.y[1]", "tau1.b")]
    return units, conns, {}


NETWORKS = {"blocks_pd": blocks_pd, "pids": pids, "scheduled_lqr": scheduled_lqr}

