"""mbfmu.linearize: exact Jacobians, trim, operating points, and the linear
model against the nonlinear plant."""
from __future__ import annotations

import control
import numpy as np
import pytest

import mbfmu
from mbfmu.control.linearization import fd_step, operating_state, trim
from mbfmu.dynamics.derivatives import jr_inv
from mbfmu.errors import InputError

from ctl_plants import G, BallPendulum, DoublePendulum, FrictionPendulum, LaggedBallPendulum, Pendulum


def _central_A(plant, lin, t=0.0):
    """Central difference of the plant derivatives in the linear model's
    coordinates. For a ball joint the tangent increment moves as
    d(dq)/dt = Jr^-1(dq) w (right Jacobian of SO(3))."""
    info = lin.linearization
    n = lin.nstates
    nq = plant.model.nq
    h = 1e-6

    def zdot(dz):
        x = info.to_state(dz)
        xd = plant.derivatives(t, x, info.u0)
        rate = jr_inv(dz[:3]) @ x[nq:] if info.tangent else xd[:nq]
        return np.concatenate([rate, xd[nq:]])
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        cols.append((zdot(e) - zdot(-e)) / (2 * h))
    return np.column_stack(cols)


def test_pendulum_poles_equal_the_small_angle_frequency():
    """Point-mass pendulum: poles +-j sqrt(g/l) at the bottom, +-sqrt(g/l) at the top."""
    p = Pendulum(m=2.0, l=0.8)
    w = np.sqrt(G / 0.8)
    bottom = np.sort_complex(mbfmu.linearize(p).poles())
    assert np.allclose(bottom, [-1j * w, 1j * w], atol=1e-12)
    top = np.sort(mbfmu.linearize(p, x0=[np.pi, 0.0]).poles().real)
    assert np.allclose(top, [-w, w], atol=1e-10)
    lin = mbfmu.linearize(p)
    assert lin.state_labels == ["q[1]", "v[1]"] and lin.input_labels == ["tau"]
    assert lin.output_labels == ["angle", "tip_x"]
    assert lin.linearization.method == "analytic"
    # B = 1 / (m l^2) on the velocity row; tip_x = -l sin(q) -> C = [-l, 0] at q = 0
    assert np.isclose(lin.B[1, 0], 1 / (2.0 * 0.8 ** 2))
    assert np.allclose(lin.C[1], [-0.8, 0.0], atol=1e-9)


def test_trim_finds_the_analytic_equilibrium_under_a_constant_torque():
    """m g l sin(q) = tau at rest."""
    p = Pendulum(m=2.0, l=0.8, c=0.5)
    tau = 5.0
    x = trim(p, [tau], [0.1, 0.0])
    assert np.isclose(x[0], np.arcsin(tau / (2.0 * G * 0.8)), atol=1e-12)
    assert abs(x[1]) < 1e-12
    lin = mbfmu.linearize(p, [0.1, 0.0], [tau], trim_state=True)
    assert np.abs(lin.linearization.xdot0).max() < 1e-9


@pytest.mark.parametrize("plant_cls", [DoublePendulum, BallPendulum])
def test_exact_jacobian_matches_central_difference(plant_cls):
    p = plant_cls()
    rng = np.random.default_rng(1)
    x = p.initial_state()
    x[p.model.nq:] = rng.normal(size=p.model.nv)  # not an equilibrium
    if plant_cls is BallPendulum:
        x[:4] = np.array([0.9, 0.2, -0.3, 0.25]) / np.linalg.norm([0.9, 0.2, -0.3, 0.25])
    u = rng.normal(size=len(p.inputs))
    lin = mbfmu.linearize(p, x, u)
    A_fd = _central_A(p, lin)
    assert np.abs(lin.A - A_fd).max() < 1e-6 * max(1.0, np.abs(lin.A).max())
    # B against a central difference of the velocity rows
    nq = p.model.nq
    B_fd = np.column_stack([(p.derivatives(0, x, u + e)[nq:] - p.derivatives(0, x, u - e)[nq:]) / 2e-6
                            for e in np.eye(len(u)) * 1e-6])
    assert np.abs(lin.B[p.model.nv:] - B_fd).max() < 1e-6 * np.abs(lin.B).max()
    assert np.all(lin.B[:p.model.nv] == 0)


def _step_responses(plant, lin, du, T, dt):
    """Output deviations of the nonlinear plant and of the linear model after
    an input step du at t = 0 from the operating point."""
    info = lin.linearization
    n = int(round(T / dt))
    x = info.x0.copy()
    y_nl = []
    for k in range(n):
        x = plant.advance(k * dt, x, info.u0 + du, dt)
        y_nl.append(plant.outputs_at((k + 1) * dt, x, info.u0 + du) - info.y0)
    d = control.c2d(control.ss(lin.A, lin.B, lin.C, lin.D), dt, "zoh")
    z = np.zeros(lin.nstates)
    y_lin = []
    for k in range(n):
        z = d.A @ z + d.B @ du
        y_lin.append(d.C @ z + d.D @ du)
    return np.array(y_nl), np.array(y_lin)


@pytest.mark.parametrize("plant_cls,u0,du", [
    (DoublePendulum, [1.0, -0.5], [0.02, 0.01]),
    (BallPendulum, [0.3, -0.2, 0.1], [0.01, 0.02, -0.01]),
    (FrictionPendulum, [1.0, -0.5], [0.02, 0.01]),
])
def test_linear_step_response_matches_the_nonlinear_plant(plant_cls, u0, du):
    """Within 1% of the response size, from a trimmed equilibrium."""
    p = plant_cls()
    lin = mbfmu.linearize(p, None, u0, trim_state=True)
    assert np.abs(lin.linearization.xdot0).max() < 1e-8
    y_nl, y_lin = _step_responses(p, lin, np.array(du), T=3.0, dt=0.01)
    size = np.abs(y_lin).max(axis=0)
    big = size > 0.05 * size.max()
    err = np.abs(y_nl - y_lin).max(axis=0)
    assert np.all(err[big] < 0.01 * size[big]), (err, size)
    if plant_cls is FrictionPendulum:
        assert lin.linearization.method == "analytic kinematics + central difference"
        assert "eps^(1/3)" in lin.linearization.step


def test_quaternion_states_are_tangent_increments():
    p = BallPendulum()
    lin = mbfmu.linearize(p)
    info = lin.linearization
    assert info.tangent and lin.state_labels[:3] == ["dq[1]", "dq[2]", "dq[3]"]
    assert lin.state_labels[3:] == ["v[1]", "v[2]", "v[3]"]
    dz = np.array([0.01, -0.02, 0.03, 0.1, 0.2, 0.3])
    x = info.to_state(dz)
    assert np.isclose(np.linalg.norm(x[:4]), 1.0) and np.allclose(info.from_state(x), dz)


def test_output_jacobian_of_the_plant_is_used_when_provided():
    class WithJacobian(Pendulum):
        def output_jacobian(self, t, x, u):
            return np.array([[1.0, 0.0], [-self.l * np.cos(x[0]), 0.0]]), np.zeros((2, 1))
    p = WithJacobian()
    lin = mbfmu.linearize(p, [0.4, 0.0])
    assert lin.linearization.output_method == "output_jacobian"
    ref = mbfmu.linearize(Pendulum(), [0.4, 0.0])
    assert ref.linearization.output_method == "central difference"
    assert np.abs(lin.C - ref.C).max() < 1e-9


def test_operating_point_from_a_recorded_result_and_a_mapping():
    p = DoublePendulum()
    time, X, _ = p.simulate(stop_time=0.5, step=0.05)
    rec = np.zeros(len(time), dtype=[("time", float)] + [(s.name, float) for s in p.states])
    rec["time"] = time
    for k, s in enumerate(p.states):
        rec[s.name] = X[:, k]
    x = operating_state(p, rec, at=0.2)
    assert np.array_equal(x, X[4])
    lin = mbfmu.linearize(p, rec, at=0.2)
    assert np.array_equal(lin.linearization.x0, X[4])
    cosim = np.zeros(len(time), dtype=[("time", float)] + [(f"arm.{s.name}", float) for s in p.states])
    cosim["time"] = time
    for k, s in enumerate(p.states):
        cosim[f"arm.{s.name}"] = X[:, k]
    assert np.array_equal(operating_state(p, cosim, at=0.3), X[6])
    x = operating_state(p, {"q[1]": 0.7})
    assert x[0] == 0.7 and x[1] == p.initial_state()[1]
    with pytest.raises(InputError, match="unknown state"):
        operating_state(p, {"bogus": 1.0})
    with pytest.raises(InputError, match="state"):
        mbfmu.linearize(p, [1.0, 2.0])


def test_fd_step_rule():
    h = fd_step(np.array([0.0, 1e3]))
    assert np.allclose(h, np.finfo(float).eps ** (1 / 3) * np.array([1.0, 1e3]))


def test_plant_with_extra_states_and_quaternions_uses_the_mixed_path():
    """Actuator-lag states after [q; v]: exact kinematic rows, central
    differences elsewhere; still within 1% of the nonlinear step response."""
    p = LaggedBallPendulum()
    u0 = np.array([0.3, -0.2, 0.1])
    lin = mbfmu.linearize(p, None, u0, trim_state=True)
    info = lin.linearization
    assert info.method == "analytic kinematics + central difference" and info.tangent
    assert lin.state_labels[6:] == ["tau_a[1]", "tau_a[2]", "tau_a[3]"]
    assert np.allclose(info.x0[7:], u0, atol=1e-9)  # the lags settle at the input
    # the lag rows are exactly -1/T on the diagonal, 1/T on B
    assert np.allclose(lin.A[6:, 6:], -np.eye(3) / p.lag, atol=1e-6)
    assert np.allclose(lin.B[6:], np.eye(3) / p.lag, atol=1e-6)
    # the velocity rows against the exact derivatives of the plain ball pendulum
    plain = mbfmu.linearize(BallPendulum(), info.x0[:7], u0)
    assert np.abs(lin.A[3:6, :6] - plain.A[3:6]).max() < 1e-6 * np.abs(plain.A).max()
    assert np.abs(lin.A[3:6, 6:] - plain.B[3:6]).max() < 1e-6 * np.abs(plain.B).max()
    y_nl, y_lin = _step_responses(p, lin, np.array([0.01, 0.02, -0.01]), T=2.0, dt=0.01)
    size = np.abs(y_lin).max(axis=0)
    big = size > 0.05 * size.max()  # the vertical tip motion is second order in the input
    assert np.all(np.abs(y_nl - y_lin).max(axis=0)[big] < 0.01 * size[big])


def test_rigid_arm_holding_torque_trims_back_to_the_pose_and_is_exact():
    """u0 = g(q0) (gravity torques) makes q0 an equilibrium (the base yaw is
    free: Newton's least-squares steps leave it where it starts); the
    analytic Jacobian matches a central difference."""
    from mbfmu.dynamics import gravity_torques
    p = mbfmu.load_plant("rigid_arm")
    x0 = np.r_[0.0, 0.6, -0.2, 0, 0, 0]  # not at the forearm's horizontal (a double root)
    u0 = gravity_torques(p.model, x0[:3])
    guess = x0 + np.r_[0.02, -0.03, 0.04, 0, 0, 0]
    lin = mbfmu.linearize(p, guess, u0, trim_state=True)
    assert np.abs(lin.linearization.x0[1:] - x0[1:]).max() < 1e-9
    assert lin.linearization.x0[0] == 0.02
    x = x0 + np.r_[0.1, 0.2, -0.3, 0.5, -0.4, 0.3]
    lin = mbfmu.linearize(p, x, u0)
    assert lin.linearization.method == "analytic"
    A_fd = _central_A(p, lin)
    assert np.abs(lin.A - A_fd).max() < 1e-6 * np.abs(lin.A).max()


def test_a_plants_own_state_jacobian_takes_precedence_and_is_checked():
    class Own(Pendulum):
        def state_jacobian(self, t, x, u):
            return np.array([[0.0, 1.0], [-G / self.l * np.cos(x[0]), 0.0]]), np.array([[0.0], [1 / (self.m * self.l ** 2)]])
    lin = mbfmu.linearize(Own(), [0.4, 0.0])
    ref = mbfmu.linearize(Pendulum(), [0.4, 0.0])
    assert lin.linearization.method == "state_jacobian"
    assert np.abs(lin.A - ref.A).max() < 1e-12 and np.abs(lin.B - ref.B).max() < 1e-12

    class Wrong(Pendulum):
        def state_jacobian(self, t, x, u):
            return np.eye(3), np.zeros((3, 1))
    with pytest.raises(InputError, match="state_jacobian"):
        mbfmu.linearize(Wrong())


def test_is_equilibrium_tells_a_trimmed_point_from_a_falling_one():
    """The rigid arm at its initial pose (0, 45 deg, -45 deg) falls under
    gravity; trimmed (zero torques) it hangs at rest."""
    arm = mbfmu.load_plant("rigid_arm")
    falling = mbfmu.linearize(arm).linearization
    assert not falling.is_equilibrium() and np.abs(falling.xdot0).max() > 1.0
    assert mbfmu.linearize(arm, trim_state=True).linearization.is_equilibrium()


def test_the_command_line_says_exact_only_when_every_block_is():
    """#33: the first line of ``mbfmu linearize`` says "exact" when A, B, C and D all come
    from the C tangents, and otherwise names the method and why there are no tangents."""
    from mbfmu.control.cli import _plant_model_words
    from mbfmu.plant.library import load_plant
    words = _plant_model_words(mbfmu.linearize(load_plant("rigid_arm")).linearization)
    assert words == "plant's exact linearization; analytic Jacobians; outputs: analytic"
    words = _plant_model_words(mbfmu.linearize(Pendulum(m=2.0, l=0.8)).linearization)  # outputs in Python
    assert words == "plant's linearization; analytic Jacobians; outputs: central difference"
    lin = mbfmu.linearize(FrictionPendulum()).linearization  # a force computed in Python
    words = _plant_model_words(lin)
    assert lin.method == "analytic kinematics + central difference" and "exact" not in words.split(";")[0]
    assert "(no exact tangents: " in words and "Python code" in words
