"""Controllers (PID, LQR with integral action, Kalman filter, LQG servo,
computed torque) against analytic closed-loop behaviour."""
from __future__ import annotations

import control
import numpy as np
import pytest

import mbfmu
from mbfmu.control.inverse_dynamics_control import computed_torque
from mbfmu.control.kalman import kalman_filter, riccati_iterates
from mbfmu.control.lqr import lqg_servo, lqr_servo
from mbfmu.control.discrete_pid import pid
from mbfmu.control.sampled import simulate_loop, step_system
from mbfmu.errors import InputError

from ctl_plants import DoubleIntegrator, DoublePendulum, DoublePendulumQV


def test_pid_linear_form_is_the_textbook_transfer_function():
    """C(z) = Kp + Ki h/(z - 1) + Kd/(Tf + h) (z - 1)/(z - Tf/(Tf + h))."""
    Kp, Ki, Kd, h, Tf = 3.0, 2.0, 0.5, 0.02, 0.05
    lin = pid(Kp, Ki, Kd, dt=h, Tf=Tf).linear()
    a, b = Tf / (Tf + h), Kd / (Tf + h)
    for z in (0.3 + 0.4j, 1.5, -0.7 + 0.1j):
        ref = Kp + Ki * h / (z - 1) + b * (z - 1) / (z - a)
        got = (lin.C @ np.linalg.solve(z * np.eye(3) - lin.A, lin.B) + lin.D)[0, 0]
        assert abs(got - ref) < 1e-12 * abs(ref)


def _double_integrator_loop_tf(Kp, Ki, Kd, h, Tf):
    """Closed loop r -> y of the ZOH double integrator G = h^2 (z+1) / (2 (z-1)^2)
    with u = C_r(z) r - C(z) y (derivative on the measurement:
    C_r = Kp + Ki h/(z-1)), by polynomial algebra."""
    a, b = Tf / (Tf + h), Kd / (Tf + h)
    P = np.polynomial.polynomial
    num_g, den_g = P.polymul([1, 1], [h * h / 2]), P.polymul([-1, 1], [-1, 1])
    num_c = P.polyadd(P.polyadd(Kp * P.polymul([-1, 1], [-a, 1]), Ki * h * np.array([-a, 1])),
                      b * P.polymul([-1, 1], [-1, 1]))
    den_c = P.polymul([-1, 1], [-a, 1])
    num_r = P.polyadd(Kp * P.polymul([-1, 1], [-a, 1]), Ki * h * np.array([-a, 1]))
    num = P.polymul(num_g, num_r)
    den = P.polyadd(P.polymul(den_g, den_c), P.polymul(num_g, num_c))
    return control.tf(num[::-1], den[::-1], h), np.roots(den[::-1])


def test_pid_on_a_double_integrator_matches_the_closed_loop_transfer_function():
    Kp, Ki, Kd, h, Tf = 4.0, 1.5, 3.0, 0.05, 0.1
    ctrl = pid(Kp, Ki, Kd, dt=h, Tf=Tf, reference="r", measurement="x", output="F")
    res = simulate_loop(DoubleIntegrator(), ctrl, 12.0, reference=lambda t: {"r": 1.0})
    T, poles = _double_integrator_loop_tf(Kp, Ki, Kd, h, Tf)
    assert np.all(np.abs(poles) < 1)  # the design is stable
    y_ref = control.forced_response(T, res.time, np.ones_like(res.time)).outputs
    assert np.abs(res.y[:, 0] - y_ref).max() < 1e-9
    assert abs(res.y[-1, 0] - 1.0) < 1e-3  # integral action: no steady-state error
    # the poles of the interconnected linear systems are the analytic ones
    # (plus z = 0 from the stored previous error, cancelled in C(z))
    G = control.c2d(control.ss([[0, 1], [0, 0]], [[0], [1]], [[1, 0]], 0), h)
    cl = control.feedback(G * ctrl.linear(), 1)
    assert np.allclose(np.sort_complex(cl.poles()), np.sort_complex(np.r_[poles, 0.0]), atol=1e-7)


def test_anti_windup_bounds_the_integrator_and_the_overshoot():
    """Back-calculation keeps I within u_max + (Tt Ki + Kp) |e| + |D| while
    saturated (Åström & Hägglund 2006, sec. 3.5); without it the integrator
    winds up and the overshoot grows."""
    Kp, Ki, Kd, h = 2.0, 1.0, 2.5, 0.02
    runs = {}
    for Tt in (np.inf, 0.5):
        ctrl = pid(Kp, Ki, Kd, dt=h, u_min=-1.0, u_max=1.0, Tt=Tt, reference="r", measurement="x", output="F")
        runs[Tt] = simulate_loop(DoubleIntegrator(), ctrl, 30.0, reference=lambda t: {"r": 10.0})
    wound, aw = runs[np.inf], runs[0.5]
    e = 10.0 - aw.y[:, 0]
    bound = 1.0 + (0.5 * Ki + Kp) * np.abs(e) + np.abs(aw.controller_state[:, 1])
    assert np.abs(aw.controller_state[:, 0]).max() <= bound.max()
    assert np.abs(wound.controller_state[:, 0]).max() > 3 * np.abs(aw.controller_state[:, 0]).max()
    over = {k: r.y[:, 0].max() - 10.0 for k, r in runs.items()}
    assert over[0.5] < 0.5 * over[np.inf]
    assert np.all(np.abs(aw.u) <= 1.0 + 1e-12)


def _discrete_pendulum(h=0.02, u0=(1.0, -0.5)):
    p = DoublePendulum()
    lin = mbfmu.linearize(p, None, list(u0), trim_state=True)
    sysd = control.c2d(lin, h, "zoh")
    sysd = control.ss(sysd.A, sysd.B, lin.C[2:], lin.D[2:], h, inputs=lin.input_labels,
                      outputs=lin.output_labels[2:], states=lin.state_labels)
    return p, lin, sysd


def test_lqr_gains_equal_control_dlqr():
    _, _, sysd = _discrete_pendulum()
    Q, R = np.diag([10.0, 10.0, 1.0, 1.0]), np.diag([0.1, 0.2])
    plain = lqr_servo(sysd, Q, R)
    K_ref, _, _ = control.dlqr(sysd.A, sysd.B, Q, R)
    assert np.abs(plain.K - K_ref).max() < 1e-9 * np.abs(K_ref).max()
    # with integral action: dlqr on the augmented system built here by hand
    Qi = np.diag([50.0, 50.0])
    servo = lqr_servo(sysd, Q, R, Qi)
    h = sysd.dt
    Aa = np.block([[sysd.A, np.zeros((4, 2))], [-h * sysd.C, np.eye(2)]])
    Ba = np.vstack([sysd.B, np.zeros((2, 2))])
    Ka, _, _ = control.dlqr(Aa, Ba, np.diag([10, 10, 1, 1, 50, 50.0]), R)
    assert np.abs(servo.K - Ka).max() < 1e-9 * np.abs(Ka).max()
    assert servo.input_labels == ["angle[1]_ref", "angle[2]_ref", "q[1]", "q[2]", "v[1]", "v[2]"]


def test_kalman_gain_converges_to_dlqe():
    _, _, sysd = _discrete_pendulum()
    Qn, Rn = np.diag([1e-4, 1e-4, 1e-2, 1e-2]), np.diag([1e-4, 2e-4])
    kf = kalman_filter(sysd, Qn, Rn)
    L_ref, P_ref, _ = control.dlqe(sysd.A, np.eye(4), sysd.C, Qn, Rn)
    assert np.abs(kf.L - L_ref).max() < 1e-8 * np.abs(L_ref).max()
    assert np.abs(kf.P - P_ref).max() < 1e-8 * np.abs(P_ref).max()
    gains = riccati_iterates(sysd.A, sysd.C, Qn, Rn, np.eye(4), 400)
    errs = [np.abs(sysd.A @ M - L_ref).max() for M in gains]
    assert errs[-1] < 1e-9 and errs[0] > 1e3 * errs[-1]
    assert all(e2 <= e1 * 1.0001 + 1e-14 for e1, e2 in zip(errs[50:], errs[51:]))


def test_kalman_filter_recovers_the_state_of_the_noise_free_model():
    _, _, sysd = _discrete_pendulum()
    kf = kalman_filter(sysd, np.eye(4) * 1e-1, np.eye(2) * 1e-4)
    rng = np.random.default_rng(0)
    x = np.array([0.1, -0.05, 0.3, 0.2])
    xf = np.zeros(4)
    err = []
    for k in range(300):
        u = rng.normal(size=2)
        y = sysd.C @ x
        xhat, xf = step_system(kf, k * sysd.dt, xf, np.r_[u, y])
        err.append(np.abs(xhat - x).max())
        x = sysd.A @ x + sysd.B @ u
    rho = np.abs(np.linalg.eigvals(kf.A)).max()  # error dynamics e+ = A (1 - M C) e
    assert rho < 1 and err[0] > 0.05 and err[-1] < 1e-8 + 10 * rho ** 299 * err[0]


def test_lqg_servo_with_integral_action_tracks_a_step_on_the_nonlinear_plant():
    """Observer + LQR + integrators on the measured angles: zero steady-state
    error despite an unmodelled constant torque disturbance."""
    p, lin, sysd = _discrete_pendulum()
    info = lin.linearization
    lq = lqr_servo(sysd, np.diag([10.0, 10.0, 1.0, 1.0]), np.diag([0.1, 0.1]), np.diag([100.0, 100.0]))
    kf = kalman_filter(sysd, np.diag([1e-6, 1e-6, 1e-3, 1e-3]), np.diag([1e-6, 1e-6]))
    ctrl = lqg_servo(sysd, lq, kf)
    poles = control.feedback(sysd, ctrl[:, 2:], sign=1).poles()
    assert np.all(np.abs(poles) < 1)
    step = np.array([0.05, -0.03])
    disturbance = np.array([0.4, -0.3])
    res = simulate_loop(p, ctrl, 8.0, reference=lambda t: {"angle[1]_ref": step[0], "angle[2]_ref": step[1]},
                        x0=info.x0, u_offset=info.u0 + disturbance, y_offset=info.y0)
    final = res.y[-1, 2:] - info.y0[2:]
    assert np.abs(final - step).max() < 1e-4
    assert np.abs(res.y[len(res.time) // 8, 2:] - info.y0[2:] - step).max() > 1e-3  # it had to move


def test_computed_torque_error_follows_the_designed_second_order_dynamics():
    """e'' + 2 w e' + w^2 e = 0 (critically damped): e(t) = e0 (1 + w t) exp(-w t),
    on the double pendulum with springs and dampers compensated."""
    plant = DoublePendulumQV()
    w = 8.0
    ctrl = computed_torque(plant.model, w * w, 2 * w, dt=1e-3)
    q_ref = np.array([0.5, -0.4])
    ref = {"q_ref[1]": q_ref[0], "q_ref[2]": q_ref[1], "qd_ref[1]": 0.0, "qd_ref[2]": 0.0,
           "qdd_ref[1]": 0.0, "qdd_ref[2]": 0.0}
    x0 = np.array([0.3, -0.2, 0.0, 0.0])
    res = simulate_loop(plant, ctrl, 1.5, reference=lambda t: ref, x0=x0)
    e0 = q_ref - x0[:2]
    t = res.time
    e_model = np.outer((1 + w * t) * np.exp(-w * t), e0)
    e = q_ref - res.x[:, :2]
    assert np.abs(e - e_model).max() < 0.02 * np.abs(e0).max()


def test_controller_arguments_are_checked():
    with pytest.raises(InputError, match="dt"):
        pid(1.0, dt=0.0)
    with pytest.raises(InputError, match="u_min"):
        pid(1.0, dt=0.1, u_min=1.0, u_max=-1.0)
    _, lin, _ = _discrete_pendulum()
    with pytest.raises(InputError, match="discrete-time"):
        lqr_servo(lin, np.eye(4), np.eye(2))
    with pytest.raises(InputError, match="Kp"):
        computed_torque(DoublePendulum().model, np.ones(3), 1.0, dt=0.01)
