"""Loop closure (Featherstone, Rigid Body Dynamics Algorithms, 2008, ch. 8): a planar four-bar linkage built as a tree plus a
point constraint, against an independent one-coordinate model derived here by
hand from the closed-form four-bar geometry (Lagrange's equation in the crank
angle)."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbfmu.dynamics import ModelBuilder, Revolute
from mbfmu.dynamics.constraints import ConstrainedModel, PointConstraint, PrescribedMotion

# link lengths (m): crank a, coupler b, rocker c, ground d (Grashof crank-rocker)
A, B, C, D = 0.2, 0.6, 0.45, 0.5
MASS = (0.8, 1.5, 1.1)   # kg, uniform slender rods
G = 9.81


def rod_inertia(m, L):
    return np.diag([m * L * L / 12, m * L * L / 12, 1e-6 * m])  # rod along x, swings about y


def build_tree():
    """Crank at the origin, coupler at the crank tip, rocker at (D, 0, 0); all
    turn about world -y so positive angles go from +x towards +z."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ax = (0, -1, 0)
    b.add_body("crank", 0, Revolute(axis=ax), MASS[0], (A / 2, 0, 0), rod_inertia(MASS[0], A))
    b.add_body("coupler", 1, Revolute(axis=ax), MASS[1], (B / 2, 0, 0), rod_inertia(MASS[1], B), p_PJ=(A, 0, 0))
    b.add_body("rocker", 0, Revolute(axis=ax), MASS[2], (C / 2, 0, 0), rod_inertia(MASS[2], C), p_PJ=(D, 0, 0))
    return b.build()


def angles(t1):
    """Absolute angles (t2 coupler, t3 rocker) of the open (upper) assembly."""
    p = np.array([A * np.cos(t1), A * np.sin(t1)])
    e = np.array([D, 0.0]) - p
    L = np.linalg.norm(e)
    # angle at the crank tip between e and the coupler, by the law of cosines
    psi = np.arccos((B * B + L * L - C * C) / (2 * B * L))
    t2 = np.arctan2(e[1], e[0]) + psi
    q = p + B * np.array([np.cos(t2), np.sin(t2)])
    t3 = np.arctan2(q[1], q[0] - D)
    return t2, t3


def ratios(t1, w1=1.0):
    """First and second derivatives of (t2, t3) with respect to t1, from the
    differentiated loop equation a e^{i t1} + b e^{i t2} - c e^{i t3} = d."""
    t2, t3 = angles(t1)
    M = np.array([[-B * np.sin(t2), C * np.sin(t3)], [B * np.cos(t2), -C * np.cos(t3)]])
    r1 = np.linalg.solve(M, [A * np.sin(t1), -A * np.cos(t1)])
    d2, d3 = r1
    rhs2 = np.array([A * np.cos(t1) + B * np.cos(t2) * d2 ** 2 - C * np.cos(t3) * d3 ** 2,
                     A * np.sin(t1) + B * np.sin(t2) * d2 ** 2 - C * np.sin(t3) * d3 ** 2])
    r2 = np.linalg.solve(M, rhs2)
    return t2, t3, r1, r2


def reduced_rhs(t, y):
    """Lagrange's equation m(t1) t1'' + m'(t1)/2 t1'^2 + V'(t1) = 0."""
    t1, w = y
    t2, t3, (d2, d3), (e2, e3) = ratios(t1)
    I_end = [MASS[0] * A * A / 3, MASS[1] * B * B / 12, MASS[2] * C * C / 3]
    # crank and rocker turn about fixed ends; the coupler's centre moves
    cx_d = -A * np.sin(t1) - B / 2 * np.sin(t2) * d2
    cz_d = A * np.cos(t1) + B / 2 * np.cos(t2) * d2
    cx_dd = -A * np.cos(t1) - B / 2 * (np.cos(t2) * d2 ** 2 + np.sin(t2) * e2)
    cz_dd = -A * np.sin(t1) + B / 2 * (-np.sin(t2) * d2 ** 2 + np.cos(t2) * e2)
    m = I_end[0] + I_end[1] * d2 ** 2 + MASS[1] * (cx_d ** 2 + cz_d ** 2) + I_end[2] * d3 ** 2
    dm = 2 * (I_end[1] * d2 * e2 + MASS[1] * (cx_d * cx_dd + cz_d * cz_dd) + I_end[2] * d3 * e3)
    dV = G * (MASS[0] * A / 2 * np.cos(t1) + MASS[1] * cz_d + MASS[2] * C / 2 * np.cos(t3) * d3)
    return [w, -(0.5 * dm * w * w + dV) / m]


def initial_state(t1=1.0, w1=0.0):
    t2, t3 = angles(t1)
    q = np.array([t1, t2 - t1, t3])
    _, _, (d2, d3), _ = ratios(t1)
    v = np.array([w1, (d2 - 1) * w1, d3 * w1])
    return q, v


@pytest.mark.parametrize("method,t_end", [
    pytest.param("lagrange", 10.0, marks=pytest.mark.slow),
    ("lagrange", 1.0),
    ("nullspace", 1.0),
])
def test_four_bar_stays_closed_and_matches_reduced_model(method, t_end):
    model = build_tree()
    loop = PointConstraint("coupler", (B, 0, 0), "rocker", (C, 0, 0), axes=(0, 2))
    sys_ = ConstrainedModel(model, [loop], method=method, baumgarte=5.0)
    q0, v0 = initial_state(1.0, 0.5)
    assert np.max(np.abs(sys_.phi(q0))) < 1e-12
    t, Q, V = sys_.simulate(q0, v0, t_end, 2e-3)
    closure = max(np.max(np.abs(sys_.phi(q))) for q in Q)
    assert closure < 1e-8
    ref = solve_ivp(reduced_rhs, (0, t_end), [1.0, 0.5], t_eval=t, rtol=1e-11, atol=1e-12, method="DOP853")
    assert np.max(np.abs(Q[:, 0] - ref.y[0])) < 1e-5
    assert np.max(np.abs(V[:, 0] - ref.y[1])) < 1e-4


def test_prescribed_motion_drives_the_crank():
    """A prescribed crank angle w t: the constraint force on the crank is the
    driving torque, and the crank follows exactly."""
    model = build_tree()
    loop = PointConstraint("coupler", (B, 0, 0), "rocker", (C, 0, 0), axes=(0, 2))
    w = 2.0
    drive = PrescribedMotion(0, lambda t: (1.0 + w * t, w, 0.0))
    sys_ = ConstrainedModel(model, [loop, drive], baumgarte=5.0)
    q0, v0 = initial_state(1.0, w)
    t, Q, _ = sys_.simulate(q0, v0, 1.0, 2e-3)
    assert np.max(np.abs(Q[:, 0] - (1.0 + w * t))) < 1e-9
