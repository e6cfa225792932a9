"""Flexible beams: both methods against Euler-Bernoulli theory and each other.

Reference values: Euler-Bernoulli cantilever eigenvalues lambda_i L = 1.8751,
4.6941, 7.8548 (e.g. Meirovitch, Fundamentals of Vibrations, 2001, table 8.1;
Blevins, Formulas for Natural Frequency and Mode Shape, table 8-1); tip
deflection under a tip load P L^3 / (3 E I); torsion of a fixed-free shaft
omega_1 = (pi / 2L) sqrt(GJ / (rho Ip)).
"""
import math

import numpy as np
import pytest

from mbfmu.dynamics import Fixed, ModelBuilder, Revolute, _kernels
from mbfmu.dynamics.flexible import (BeamProperties, BendingModes, FlexibleSystemBuilder, ModeSet,
                                     RigidSystem, add_segmented_beam, clamped_free_roots,
                                     natural_frequencies, segment_tip_offset, simulate,
                                     static_response)
from mbfmu.dynamics.flexible import hub_beam as flexible_hub_beam
from mbfmu.errors import ModelError

BEAM = BeamProperties.rectangular(1.0, 0.01, 0.05, E=70e9, density=2700.0)
EXACT = np.array([BEAM.clamped_frequency(i) for i in (1, 2, 3)])


def segment_cantilever(n, beam=BEAM, **kw):
    b = ModelBuilder(gravity=(0, 0, 0))
    tip = add_segmented_beam(b, "beam", "world", beam, n, **kw)
    return RigidSystem(b.build()), tip


def modal_cantilever(modes, beam=BEAM, stiffening=True):
    b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    b.add_beam("beam", "world", Fixed(), beam, modes, stiffening=stiffening)
    b.add_body("probe", "beam.tip", Fixed(), mass=1e-12)
    return b.build()


def test_clamped_free_eigenvalues_match_published_values():
    assert np.allclose(clamped_free_roots(3), [1.8751, 4.6941, 7.8548], atol=5e-5)


def test_mode_shapes_meet_boundary_conditions_and_are_orthonormal():
    m = BendingModes(6, 2.0)
    assert np.allclose(m.values([0.0]), 0, atol=1e-12)
    assert np.allclose(m.values([0.0], 1), 0, atol=1e-12)
    assert np.allclose(m.values([2.0], 2), 0, atol=1e-9)   # no moment at the free end
    xg, wg = np.polynomial.legendre.leggauss(80)
    x, w = xg + 1.0, wg
    P, D2 = m.values(x), m.values(x, 2)
    assert np.allclose((P.T * w) @ P, 2.0 * np.eye(6), atol=1e-10)
    # phi'''' = lambda^4 phi implies integral phi_i'' phi_j'' = lambda_i^4 L delta_ij
    assert np.allclose((D2.T * w) @ D2 / m.lambdas[:, None] ** 4, 2.0 * np.eye(6), atol=1e-9)


@pytest.mark.parametrize("n", [20, 40])
def test_segment_cantilever_first_three_frequencies_within_one_percent(n):
    w = natural_frequencies(segment_cantilever(n)[0], n=3)
    assert np.all(np.abs(w / EXACT - 1) < 0.01)


def test_segment_frequencies_converge_at_second_order():
    errs = np.array([np.abs(natural_frequencies(segment_cantilever(n)[0], n=3) / EXACT - 1)
                     for n in (5, 10, 20)])
    assert np.all(errs[1:] < errs[:-1])
    assert np.all(errs[1] / errs[2] > 3.0)   # halving h divides the error by ~4


@pytest.mark.parametrize("n_modes", [3, 4])
def test_modal_cantilever_frequencies_match_euler_bernoulli(n_modes):
    system = modal_cantilever(ModeSet(bending_y=n_modes))
    w = natural_frequencies(system, n=3)
    assert np.all(np.abs(w / EXACT - 1) < 1e-6)


def test_modal_mass_matrix_of_a_clamped_beam_is_the_modal_mass():
    system = modal_cantilever(ModeSet(bending_y=4))
    M = system.mass_matrix(system.neutral())
    assert np.allclose(M, BEAM.mass * np.eye(4), rtol=0, atol=1e-9 * BEAM.mass)


@pytest.mark.parametrize("n", [8, 16])
def test_segment_static_tip_deflection(n):
    system, tip = segment_cantilever(n)
    off = segment_tip_offset(BEAM, n)
    P = 2.0
    dq = static_response(system, tip, off, [0.0, P, 0.0])
    d = system.point_position(dq, tip, off)[1]
    ref = P * BEAM.length ** 3 / (3 * BEAM.EIz)
    assert abs(d / ref - 1) < 0.005


@pytest.mark.parametrize("n_modes", [2, 4])
def test_modal_static_tip_deflection(n_modes):
    system = modal_cantilever(ModeSet(bending_y=n_modes))
    P = 2.0
    dq = static_response(system, "probe", (0, 0, 0), [0.0, P, 0.0])
    d = system.point_position(dq, "probe")[1]
    ref = P * BEAM.length ** 3 / (3 * BEAM.EIz)
    assert abs(d / ref - 1) < 0.005


def test_two_planes_and_torsion_in_both_methods():
    beam = BeamProperties.rectangular(1.0, 0.02, 0.03, E=70e9, density=2700.0)
    w_y = beam.clamped_frequency(1, "y")
    w_z = beam.clamped_frequency(1, "z")
    w_t = math.pi / (2 * beam.length) * math.sqrt(beam.GJ / beam.polar_inertia_per_length)
    seg, _ = segment_cantilever(30, beam, bending=("y", "z"), torsion=True)
    assert seg.model.has_quaternions  # three rotations per station: ball joints
    modal = modal_cantilever(ModeSet(bending_y=2, bending_z=2, torsion=1), beam)
    w_modal = natural_frequencies(modal)
    for w in (w_y, w_z, w_t):
        assert np.min(np.abs(w_modal / w - 1)) < 1e-6
    # segments with ball joints: linearize in a universal + torsion-free chain per plane
    seg_y, _ = segment_cantilever(30, beam, bending=("y", "z"))
    w_seg = natural_frequencies(seg_y, n=2)
    assert np.allclose(w_seg, sorted([w_y, w_z]), rtol=0.01)
    seg_t, _ = segment_cantilever(30, beam, bending=("y",), torsion=True)
    assert np.any(np.abs(natural_frequencies(seg_t) / w_t - 1) < 0.01)


def test_modal_kinetic_energy_equals_direct_quadrature_on_a_spinning_beam():
    """T = 1/2 v^T M v against 1/2 integral rho A |r_dot|^2 dx computed from
    r = R(theta) [x + u(x); v(x)] (foreshortening u = -1/2 int v'^2),
    plus the sections' rotary inertia rho Iz theta_dot^2."""
    beam = BEAM
    b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    b.add_beam("beam", "world", Revolute(axis=(0, 0, 1)), beam, ModeSet(bending_y=3))
    s = b.build()
    rng = np.random.default_rng(3)
    q = np.r_[0.7, rng.normal(scale=0.02, size=3)]
    v = np.r_[1.3, rng.normal(scale=0.5, size=3)]
    rec = s.beam("beam")
    x, w = np.polynomial.legendre.leggauss(60)
    x, w = 0.5 * (x + 1) * beam.length, 0.5 * w * beam.length
    Phi, dPhi = rec.shapes["y"].values(x), rec.shapes["y"].values(x, 1)
    H = rec.shapes["y"].slope_products(x)
    qf, vf = q[1:], v[1:]
    ux, vy = -0.5 * np.einsum("kij,i,j->k", H, qf, qf), Phi @ qf
    uxd, vyd = -np.einsum("kij,i,j->k", H, qf, vf), Phi @ vf
    th, thd = q[0], v[0]
    c, sn = math.cos(th), math.sin(th)
    px, py = x + ux, vy
    # velocity = R (thd e_z x p + p_dot)
    vx, vyy = -thd * py + uxd, thd * px + vyd
    T_ref = 0.5 * beam.mass_per_length * float(w @ (vx ** 2 + vyy ** 2)) \
        + 0.5 * beam.density * beam.Iz * beam.length * thd ** 2
    assert s.kinetic_energy(q, v) == pytest.approx(T_ref, rel=1e-9)
    del c, sn, dPhi


def flexible_pendulum(method, n_modes=2):
    """A 1 m aluminium strip hinged at the top, swinging in the
    x-z plane under gravity, no damping."""
    beam = BeamProperties.rectangular(1.0, 0.03, 0.004, E=70e9, density=2700.0)
    if method == "modes":
        b = FlexibleSystemBuilder(gravity=(0, 0, -9.81))
        b.add_beam("beam", "world", Revolute(axis=(0, 1, 0)), beam, ModeSet(bending_y=0, bending_z=n_modes),
                   mass=0.05, inertia=(1e-5, 1e-5, 1e-5))
        b.add_body("bob", "beam.tip", Fixed(), mass=0.1, inertia=(1e-5, 1e-5, 1e-5))
        return b.build()
    b = ModelBuilder(gravity=(0, 0, -9.81))
    hub = b.add_body("hub", "world", Revolute(axis=(0, 1, 0)), mass=0.05, inertia=(1e-5, 1e-5, 1e-5))
    tip = add_segmented_beam(b, "beam", hub, beam, 8, bending=("z",))
    b.add_body("bob", tip, Fixed(), mass=0.1, inertia=(1e-5, 1e-5, 1e-5),
               p_PJ=segment_tip_offset(beam, 8))
    return RigidSystem(b.build())


@pytest.mark.parametrize("n_modes", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_energy_of_undamped_flexible_pendulum_is_conserved_modal(n_modes):
    s = flexible_pendulum("modes", n_modes)
    x0 = np.zeros(s.nq + s.nv)
    x0[0] = 1.2  # released 69 deg from the vertical, beam straight
    E = lambda x: s.kinetic_energy(x[:s.nq], x[s.nq:]) + s.potential_energy(x[:s.nq])
    traj = simulate(s, x0, 10.0, method="DOP853", rtol=1e-9, atol=1e-10, t_eval=[0.0, 5.0, 10.0])
    E0 = E(x0)
    drift = max(abs(E(x) - E0) for x in traj.x) / abs(E0)
    assert drift < 1e-6
    assert np.max(np.abs(traj.x[:, 1:s.nq])) > 1e-5   # the beam did bend


def test_energy_of_undamped_flexible_pendulum_is_conserved_segments():
    s = flexible_pendulum("segments")
    h = s.model._h
    q, v = s.neutral(), np.zeros(s.nv)
    q[0] = 1.2
    E = lambda q, v: s.kinetic_energy(q, v) + s.potential_energy(q)
    E0 = E(q, v)
    worst = 0.0
    for _ in range(10):
        q, v = _kernels.rk4(h, q, v, np.zeros(s.nv), 1e-4, 10000)
        worst = max(worst, abs(E(q, v) - E0) / abs(E0))
    assert worst < 1e-6


def test_implicit_integrator_matches_explicit_and_takes_larger_steps():
    beam = BeamProperties.rectangular(1.0, 0.01, 0.05, E=70e9, density=2700.0, damping_ratio=0.02)
    b = ModelBuilder(gravity=(0, 0, 0))
    hub = b.add_body("hub", "world", Revolute(axis=(0, 0, 1)), mass=1.0, inertia=(0.01, 0.01, 0.02))
    add_segmented_beam(b, "beam", hub, beam, 12)
    s = RigidSystem(b.build())
    x0 = np.zeros(s.nq + s.nv)
    tau = np.zeros(s.nv)
    tau[0] = 1.0
    ref = simulate(s, x0, 0.2, tau=tau, method="DOP853", rtol=1e-9, atol=1e-12, t_eval=[0.2])
    imp = simulate(s, x0, 0.2, tau=tau, method="Radau", rtol=1e-6, atol=1e-9, t_eval=[0.2])
    assert np.allclose(imp.x[-1, :s.nq], ref.x[-1, :s.nq], rtol=1e-3, atol=1e-6)
    assert imp.nfev < ref.nfev


def test_bad_beam_input_is_refused():
    with pytest.raises(ModelError, match="length"):
        BeamProperties(length=0.0, E=1e9, G=1e9, density=1.0, area=1.0, Iy=1.0, Iz=1.0, J=1.0)
    with pytest.raises(ModelError, match="density"):
        BeamProperties(length=1.0, E=1e9, G=1e9, density=float("nan"), area=1.0, Iy=1.0, Iz=1.0, J=1.0)
    with pytest.raises(ModelError, match="at least one mode"):
        ModeSet(bending_y=0)
    with pytest.raises(ModelError, match="n_segments"):
        segment_cantilever(0)
    with pytest.raises(ModelError, match="bending direction"):
        segment_cantilever(4, bending=("x",))


def test_hub_beam_modal_frequencies_converge_to_the_fine_segment_chain():
    """Free hub (pinned beam with hub inertia): clamped-free shapes are only
    admissible functions, so the Rayleigh-Ritz frequencies fall towards the
    converged value as modes are added; an 80-segment chain (error ~1e-4,
    second order) is the reference."""
    def hub_beam(method, n):
        return flexible_hub_beam(BEAM, method, n)

    ref = natural_frequencies(hub_beam("segments", 80), n=2)[1]
    errs = [abs(natural_frequencies(hub_beam("modes", n), n=2)[1] / ref - 1) for n in (1, 2, 3)]
    assert errs[0] > errs[1] > errs[2]
    assert errs[0] > 0.03 and errs[2] < 1e-3


def test_three_dimensional_modal_beam_on_a_ball_joint_conserves_energy():
    """Bending in both planes, axial and torsion modes, foreshortening, a
    ball joint (quaternion) and an offset tip body: all virtual joint kinds
    of the projection at once."""
    from mbfmu.dynamics import Spherical
    beam = BeamProperties.rectangular(0.8, 0.02, 0.03, E=2e8, density=1200.0)
    b = FlexibleSystemBuilder(gravity=(0, 0, -9.81))
    b.add_beam("beam", "world", Spherical(), beam,
               ModeSet(bending_y=1, bending_z=1, axial=1, torsion=1), mass=0.1,
               inertia=(1e-4, 1e-4, 1e-4))
    b.add_body("tip", "beam.tip", Fixed(), mass=0.2, com=(0.0, 0.05, 0.02),
               inertia=(2e-4, 1e-4, 1e-4))
    s = b.build()
    assert s.nq == 4 + 4 and s.nv == 3 + 4
    q0 = s.neutral()
    q0[:4] = [math.cos(0.4), math.sin(0.4) * 0.6, math.sin(0.4) * 0.8, 0.0]
    v0 = np.r_[0.5, -1.0, 2.0, np.zeros(4)]
    E = lambda x: s.kinetic_energy(x[:s.nq], x[s.nq:]) + s.potential_energy(x[:s.nq])
    x0 = np.r_[q0, v0]
    traj = simulate(s, x0, 0.5, method="DOP853", rtol=1e-10, atol=1e-12, t_eval=[0.0, 0.25, 0.5])
    assert max(abs(E(x) - E(x0)) for x in traj.x) < 1e-7 * abs(E(x0))
    assert np.max(np.abs(traj.x[:, 4:s.nq])) > 1e-6   # the beam deformed


def test_tip_frame_carries_the_child_body():
    beam = BeamProperties.rectangular(1.0, 0.02, 0.03, E=70e9, density=2700.0)
    b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    b.add_beam("beam", "world", Revolute(axis=(0, 0, 1)), beam,
               ModeSet(bending_y=2, bending_z=2, torsion=1))
    child = b.add_body("child", "beam.tip", Fixed(), mass=1.0)
    s = b.build()
    q = np.r_[0.3, np.random.default_rng(1).normal(scale=0.01, size=5)]
    R, p = s.poses(q)
    Rt, pt = s.tip_frame(q, "beam")
    assert np.allclose(R[child], Rt, atol=1e-12) and np.allclose(p[child], pt, atol=1e-12)


def test_pinned_free_modes_give_the_pinned_free_beam_frequencies():
    """A beam on a massless free hinge: its elastic frequencies are the
    pinned-free ones, tan(lambda L) = tanh(lambda L): lambda L = 3.9266,
    7.0686 (Blevins, table 8-1)."""
    b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    b.add_beam("beam", "world", Revolute(axis=(0, 0, 1)), BEAM, ModeSet(bending_y=2, boundary="pinned"))
    w = natural_frequencies(b.build())
    lam = np.array([3.9266023, 7.0685827]) / BEAM.length
    assert w[0] == pytest.approx(0.0, abs=1e-3)
    assert np.allclose(w[1:], lam ** 2 * math.sqrt(BEAM.EIz / BEAM.mass_per_length), rtol=1e-6)
