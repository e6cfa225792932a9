"""The ``rigid_arm`` plant (Wang et al. (2009)): kinematics helpers, planner and physics."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbfmu
from mbfmu.cli import main as cli_main
from mbfmu.dynamics import crba, gravity_torques, point_jacobian, rnea
from mbfmu.dynamics.dh import DHRow, dh_forward_kinematics
from mbfmu.errors import InputError
from mbfmu.viewer.plants import check_plant
from mbfmu.models.rigid_arm import fk, ik, jacobian, joint_trajectory, quintic, quintic_coefficients

RNG = np.random.default_rng(3)
Q0 = np.array([0.0, math.pi / 4, -math.pi / 4])  # the initial joints of Wang et al. (2009)
TARGET = np.array([1.6, 1.0, 0.5])  # the tip target of Wang et al. (2009), m


@pytest.fixture(scope="module")
def arm():
    return mbfmu.load_plant("rigid_arm")


# ---------------------------------------------------------------- kinematics
def test_closed_form_fk_matches_the_multibody_model(arm):
    for q in RNG.uniform(-np.pi, np.pi, (50, 3)):
        np.testing.assert_allclose(arm.fk(q), arm.tip_position(q), atol=1e-12)


def random_workspace_points(n: int, l2=1.0, l3=1.0, h=0.15) -> np.ndarray:
    """Points at random distance from the shoulder inside the reachable shell,
    in random directions."""
    rho = RNG.uniform(abs(l2 - l3) + 0.02, l2 + l3 - 1e-6, n)
    d = RNG.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return rho[:, None] * d + [0, 0, h]


@pytest.mark.parametrize("elbow", ["up", "down"])
@pytest.mark.parametrize("lengths", [(1.0, 1.0), (1.2, 0.7)])
def test_fk_of_ik_returns_the_point_over_the_workspace(elbow, lengths):
    l2, l3 = lengths
    P = random_workspace_points(500, l2, l3)
    q = ik(P, l2, l3, elbow=elbow)
    np.testing.assert_allclose(fk(q, l2, l3), P, atol=1e-9)
    assert np.all(q[:, 2] <= 1e-12) if elbow == "up" else np.all(q[:, 2] >= -1e-12)


def test_the_two_elbow_solutions_differ_and_ik_inverts_fk():
    q = np.column_stack([RNG.uniform(-3, 3, 400), RNG.uniform(-1.4, 1.4, 400), RNG.uniform(-3, -0.05, 400)])
    q = q[np.cos(q[:, 1]) + np.cos(q[:, 1] + q[:, 2]) > 0.05]  # tip in front of the axis: theta1 = azimuth
    assert len(q) > 100
    np.testing.assert_allclose(ik(fk(q)), q, atol=1e-9)
    down = ik(fk(q), elbow="down")
    np.testing.assert_allclose(down[:, 2], -q[:, 2], atol=1e-9)
    np.testing.assert_allclose(fk(down), fk(q), atol=1e-9)


def test_ik_of_the_seed_target(arm):
    q = arm.ik(TARGET)
    np.testing.assert_allclose(arm.fk(q), TARGET, atol=1e-12)
    np.testing.assert_allclose(q[0], math.atan2(1.0, 1.6), atol=1e-15)


@pytest.mark.parametrize("p", [(2.5, 0, 0.15), (0, 0, 2.2), (0.0, 0.0, 0.15 - 2.01)])
def test_ik_refuses_unreachable_points(p):
    with pytest.raises(InputError, match="out of reach"):
        ik(p)
    with pytest.raises(InputError, match="elbow"):
        ik((1, 0, 0), elbow="sideways")


def test_jacobian_matches_finite_differences_and_the_model(arm):
    for q in RNG.uniform(-2, 2, (10, 3)):
        eps = 1e-6
        fd = np.column_stack([(fk(q + eps * e) - fk(q - eps * e)) / (2 * eps) for e in np.eye(3)])
        np.testing.assert_allclose(jacobian(q), fd, atol=1e-8)
        np.testing.assert_allclose(jacobian(q), point_jacobian(arm.model, q, 3, (1.0, 0, 0)), atol=1e-12)


def test_jacobian_matches_the_seed_formula_on_dh_frames():
    """Wang et al. (2009), sec. 2.1: for revolute joints J_Li = b_{i-1} x r_{i-1,n}, with b_{i-1} the z axis of
    DH frame i-1 and r_{i-1,n} the vector from its origin to the tip."""
    rows = [DHRow(alpha=math.pi / 2, d=0.15, mass=1.0), DHRow(a=1.0, mass=1.0), DHRow(a=1.0, mass=1.0)]
    for q in RNG.uniform(-2, 2, (10, 3)):
        T = dh_forward_kinematics(rows, q)
        tip = T[3][:3, 3]
        J_seed = np.column_stack([np.cross(T[i][:3, 2], tip - T[i][:3, 3]) for i in range(3)])
        np.testing.assert_allclose(tip, fk(q), atol=1e-12)
        np.testing.assert_allclose(jacobian(q), J_seed, atol=1e-12)


# ------------------------------------------------------------------- planner
def test_quintic_meets_position_velocity_and_acceleration_at_both_ends():
    T = 5.0
    p0, pf = np.array([1.7, 0.0, 0.86]), TARGET
    v0, vf, a0, af = (RNG.normal(size=3) for _ in range(4))
    for bc in [dict(), dict(v0=v0, vf=vf, a0=a0, af=af)]:
        c = quintic_coefficients(p0, pf, T, **bc)
        for axis in range(3):
            poly = np.polynomial.Polynomial(c[:, axis])
            expect = {k: np.asarray(bc.get(k, np.zeros(3)))[axis] for k in ("v0", "vf", "a0", "af")}
            assert poly(0) == pytest.approx(p0[axis], abs=1e-12)
            assert poly(T) == pytest.approx(pf[axis], abs=1e-12)
            assert poly.deriv(1)(0) == pytest.approx(expect["v0"], abs=1e-12)
            assert poly.deriv(1)(T) == pytest.approx(expect["vf"], abs=1e-12)
            assert poly.deriv(2)(0) == pytest.approx(expect["a0"], abs=1e-12)
            assert poly.deriv(2)(T) == pytest.approx(expect["af"], abs=1e-12)


def test_rest_to_rest_quintic_has_the_known_shape():
    """Rest-to-rest quintic: p = p0 + D (10 s^3 - 15 s^4 + 6 s^5); halfway at T/2, peak
    speed 15/8 D/T there, and rest outside [0, T]."""
    T, p0 = 5.0, np.array([1.7, 0.0, 0.86])
    D = TARGET - p0
    t = np.linspace(0, T, 101)
    pos, vel, acc = quintic(p0, TARGET, T, t)
    s = t / T
    np.testing.assert_allclose(pos, p0 + np.outer(10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5, D), atol=1e-12)
    np.testing.assert_allclose(vel[50], 15 / 8 * D / T, atol=1e-12)
    np.testing.assert_allclose(np.abs(vel).max(axis=0), np.abs(15 / 8 * D / T), atol=1e-12)
    after = quintic(p0, TARGET, T, [-1.0, T + 1.0])
    np.testing.assert_allclose(after[0], [p0, TARGET], atol=1e-12)
    assert not after[1].any() and not after[2].any()
    with pytest.raises(InputError, match="duration"):
        quintic(p0, TARGET, 0.0, t)


def test_joint_trajectory_reproduces_the_tip_path_and_its_derivatives():
    T = 5.0
    t = np.linspace(0, T, 401)
    p0 = fk(Q0)
    q, qd, qdd = joint_trajectory(p0, TARGET, T, t)
    P, V, _ = quintic(p0, TARGET, T, t)
    np.testing.assert_allclose(q[0], Q0, atol=1e-12)
    np.testing.assert_allclose(fk(q), P, atol=1e-12)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", np.array([jacobian(x) for x in q]), qd), V, atol=1e-12)
    eps = 1e-5
    _, qd_plus, _ = joint_trajectory(p0, TARGET, T, t[1:-1] + eps)
    _, qd_minus, _ = joint_trajectory(p0, TARGET, T, t[1:-1] - eps)
    np.testing.assert_allclose((qd_plus - qd_minus) / (2 * eps), qdd[1:-1], atol=1e-7)


# ------------------------------------------------------------------- physics
def test_energy_is_conserved_without_torque(arm):
    """Frictionless joints, no input: kinetic + potential energy stays constant."""
    arm = copy.copy(arm)  # the fixture is shared: tighten this copy only
    arm.set_tolerance(1e-11)
    x0 = arm.state_from(Q0, [0.8, 0.0, 1.0])
    t, X, Y = arm.simulate(3.0, 0.01, u=np.zeros(3), x0=x0)
    ke, pe = Y[:, arm.output_index("kinetic_energy")], Y[:, arm.output_index("potential_energy")]
    E = ke + pe
    assert ke.max() > 50.0  # it really moved (falls and whirls)
    assert np.abs(E - E[0]).max() < 1e-8 * (ke.max() + abs(E[0]))


def test_mass_matrix_matches_the_seed_lagrange_form(arm):
    """Wang et al. (2009), eq. 8: H = sum_i m_i J_L(i)^T J_L(i) + J_A(i)^T I_i J_A(i), with the centre-of-mass
    Jacobians built from the DH frames (J_Lj = b_{j-1} x (c_i - o_{j-1}), J_Aj = b_{j-1}, j <= i);
    compared with the engine's composite-rigid-body mass matrix and kinetic energy."""
    m, mb, h = 10.0, 20.0, 0.15
    Ia, It = 0.5 * m * 0.2 ** 2, 0.9
    Ib_axial, Ib_trans = 0.5 * mb * 0.4 ** 2, mb * (3 * 0.4 ** 2 + 0.3 ** 2) / 12
    rows = [DHRow(alpha=math.pi / 2, d=h, mass=1.0), DHRow(a=1.0, mass=1.0), DHRow(a=1.0, mass=1.0)]
    links = [(mb, np.array([0, -h, 0]), np.diag([Ib_trans, Ib_axial, Ib_trans])),  # in DH frame i
             (m, np.array([-0.5, 0, 0]), np.diag([Ia, It, It])),
             (m, np.array([-0.5, 0, 0]), np.diag([Ia, It, It]))]
    for q in RNG.uniform(-2, 2, (10, 3)):
        T = dh_forward_kinematics(rows, q)
        H = np.zeros((3, 3))
        for i, (mi, ci, Ii) in enumerate(links, start=1):
            R, c = T[i][:3, :3], T[i][:3, 3] + T[i][:3, :3] @ ci
            JL, JA = np.zeros((3, 3)), np.zeros((3, 3))
            for j in range(i):
                JA[:, j] = T[j][:3, 2]
                JL[:, j] = np.cross(T[j][:3, 2], c - T[j][:3, 3])
            H += mi * JL.T @ JL + JA.T @ R @ Ii @ R.T @ JA
        np.testing.assert_allclose(crba(arm.model, q), H, atol=1e-12)
        v = RNG.normal(size=3)
        assert arm.energies(arm.state_from(q, v))[0] == pytest.approx(0.5 * v @ H @ v, rel=1e-12)


def test_gravity_torques_agree_with_hand_statics(arm):
    """Holding torques from the link weights (each link 10 kg, centre of mass at mid-length):
    tau3 = m g l3/2 c23, tau2 = m g (l2/2 c2 + l2 c2 + l3/2 c23), tau1 = 0."""
    m, g = 10.0, 9.81
    for q in RNG.uniform(-3, 3, (10, 3)):
        c2, c23 = math.cos(q[1]), math.cos(q[1] + q[2])
        np.testing.assert_allclose(gravity_torques(arm.model, q),
                                   [0.0, m * g * (1.5 * c2 + 0.5 * c23), m * g * 0.5 * c23], atol=1e-10)


def test_holding_torque_keeps_the_arm_still(arm):
    for q in [Q0, np.array([0.4, 1.2, -2.0])]:
        tau = rnea(arm.model, q, np.zeros(3), np.zeros(3))
        t, X, Y = arm.simulate(2.0, 0.05, u=tau, x0=arm.state_from(q, np.zeros(3)))
        np.testing.assert_allclose(X[:, :3], np.tile(q, (len(t), 1)), atol=1e-9)
        np.testing.assert_allclose(X[:, 3:], 0.0, atol=1e-9)
    # and without it the arm falls
    t, X, _ = arm.simulate(0.5, 0.05, u=np.zeros(3), x0=arm.state_from(Q0, np.zeros(3)))
    assert abs(X[-1, 1] - Q0[1]) > 0.1


def test_inverse_dynamics_torques_drive_the_plant_along_the_published_run(arm):
    """The run of Wang et al. (2009): T = 5 s, tip from the initial joints (0, 45, -45 deg) to (1.6, 1.0, 0.5) m.
    The torques of inverse dynamics (rnea) along the planned joint path, fed open loop to the
    plant's forward dynamics (articulated-body kernel), reproduce the planned tip path."""
    T = 5.0
    p0 = arm.fk(Q0)

    def rhs(t, x):
        q, qd, qdd = (a[0] for a in joint_trajectory(p0, TARGET, T, [t]))
        return arm.derivatives(t, x, rnea(arm.model, q, qd, qdd))

    sol = solve_ivp(rhs, (0.0, T), arm.state_from(Q0, np.zeros(3)), method="DOP853",
                    rtol=1e-11, atol=1e-11, t_eval=np.linspace(0, T, 51))
    assert sol.success
    tips = np.array([arm.outputs_at(t, x, np.zeros(3))[6:9] for t, x in zip(sol.t, sol.y.T)])
    np.testing.assert_allclose(tips, quintic(p0, TARGET, T, sol.t)[0], atol=1e-6)
    np.testing.assert_allclose(tips[-1], TARGET, atol=1e-6)
    np.testing.assert_allclose(sol.y[3:, -1], 0.0, atol=1e-5)  # at rest on arrival


# ------------------------------------------------------------- the interface
def test_outputs_have_declared_names_units_and_sizes(arm):
    units = {s.name: s.unit for s in arm.outputs}
    for i in (1, 2, 3):
        assert units[f"q[{i}]"] == "rad" and units[f"v[{i}]"] == "rad/s"
        assert units[f"tip_position[{i}]"] == "m"
    assert units["kinetic_energy"] == units["potential_energy"] == "J"
    assert [s.name for s in arm.inputs] == ["tau[1]", "tau[2]", "tau[3]"]
    assert all(s.unit == "N.m" for s in arm.inputs)
    x = arm.initial_state()
    y = arm.outputs_at(0.0, x, np.zeros(3))
    assert y.shape == (len(arm.outputs),) and x.shape == (len(arm.states),)
    np.testing.assert_allclose(y[:3], Q0)
    np.testing.assert_allclose([s.start for s in arm.outputs], y, atol=1e-12)
    check_plant(arm)  # the viewer's own check of geometry and poses
    R, p = arm.poses(x)
    assert R.shape == (4, 3, 3) and p.shape == (4, 3)
    assert all(0 <= s.body < 4 for s in arm.geometry)
    assert {s.kind for s in arm.geometry} == {"cylinder"}


def test_parameters_rebuild_the_plant():
    arm = mbfmu.load_plant("rigid_arm", link_length=0.8, arm_mass=40.0, theta2_0=0.3)
    vals = arm.parameter_values()
    assert vals["link_length"] == 0.8 and vals["arm_mass"] == 40.0
    np.testing.assert_allclose(arm.initial_state()[:3], [0.0, 0.3, -math.pi / 4])
    assert [b.mass for b in arm.model.bodies[1:]] == [20.0, 20.0]
    np.testing.assert_allclose(arm.tip_position([0, 0, 0]), [1.6, 0, 0.15], atol=1e-15)


@pytest.mark.parametrize("params, name", [
    (dict(arm_mass=-20.0), "arm_mass"),
    (dict(link_length=0.0), "link_length"),
    (dict(link_inertia=float("nan")), "link_inertia"),
    (dict(link_inertia=0.01), "link_inertia"),
    (dict(base_mass=0.0), "base_mass"),
    (dict(gravity=-9.81), "gravity"),
    (dict(theta2_0=float("inf")), "theta2_0"),
    (dict(link_radius="wide"), "link_radius"),
])
def test_bad_parameters_are_refused_naming_the_parameter(params, name):
    with pytest.raises(InputError, match=name):
        mbfmu.load_plant("rigid_arm", **params)


def test_library_lists_the_arm(capsys):
    assert "rigid_arm" in mbfmu.list_plants()
    assert cli_main(["list", "rigid_arm"]) == 0
    out = capsys.readouterr().out
    assert "rigid_arm:" in out and "tau[3]" in out and "tip_position[3]" in out and "link_inertia" in out
