"""Beams of chained floating-frame sub-beams (issue 19, part 2).

References, all independent of the engine:
* the kinetic energy by direct quadrature of the material points' velocities,
  with the chain's kinematics written out here (each sub-beam clamped to the
  previous one's deformed tip);
* energy conservation of the free chain;
* the elastica: cantilever under a dead transverse tip load, closed-form
  elliptic-integral solution (Bisshopp & Drucker, Q. Appl. Math. 3 (1945) 272);
* the KRB spin-up peak of a geometrically exact ANCF model quoted in
  issue 19 (-1.0831 m at 10 rad/s); the slow test of test_spinup.py checks
  the same model against a segment chain extrapolated in this suite.
"""
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ellipe, ellipeinc, ellipk, ellipkinc

from mbfmu.dynamics import Fixed, Revolute
from mbfmu.dynamics.flexible import FlexibleSystemBuilder, ModeSet
from mbfmu.dynamics.flexible.driven import simulate_driven
from mbfmu.dynamics.flexible.spinup import peak_deflection, run_spinup, spinup_beam, spinup_system
from mbfmu.dynamics.flexible.statics import static_equilibrium
from mbfmu.dynamics.integrators import ErrorControl, advance_flexible
from mbfmu.errors import InputError, ModelError

BEAM = spinup_beam("krb")


def chain_system(n, m=2, joint=None, gravity=(0.0, 0.0, 0.0), beam=BEAM, n_sections=None, tip_mass=None):
    b = FlexibleSystemBuilder(gravity=gravity)
    b.add_beam("beam", "world", joint or Revolute(axis=(0.0, 0.0, 1.0)), beam,
               ModeSet(bending_y=m, tip_shapes=True), subbeams=n, n_sections=n_sections)
    if tip_mass is not None:
        b.add_body("load", "beam.tip", Fixed(), mass=tip_mass)
    return b.build()


# ---- kinetic energy against a direct quadrature -----------------------------------

def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s], [s, c]])


def _centerline(system, q, s_rel):
    """Planar positions (2, k) of the material points at ``s_rel`` (in each
    sub-beam's own length) and the angles of their sub-beam frames, for the hub angle
    ``q[0]`` and the modal coordinates: each sub-beam's frame sits at the
    previous sub-beam's deformed tip, turned by its tip slope; along a
    sub-beam ``r = (s - 1/2 int_0^s v'^2, v)`` in its frame."""
    chain = system.chain("beam")
    R, p, ang = _rz(q[0]), np.zeros(2), q[0]
    pts, angles = [], []
    xg, wg = np.polynomial.legendre.leggauss(40)
    for name in chain.parts:
        b = system.beam(name)
        shp = b.shapes["y"]
        h = b.beam.length
        eta = b.coordinates(q)

        def local(s):
            x = 0.5 * s * (xg + 1.0)
            slope = shp.values(x, 1) @ eta
            fore = 0.5 * s * 0.5 * float(np.sum(wg * slope ** 2))
            return np.array([s - fore, float(shp.values([s])[0] @ eta)]), float(shp.values([s], 1)[0] @ eta)
        for s in s_rel * h:
            r, a = local(s)
            pts.append(p + R @ r)
            angles.append(ang)   # the model's sections turn with their frame (no local slope rate)
        r, a = local(h)
        p, R, ang = p + R @ r, R @ _rz(a), ang + a
    return np.array(pts).T, np.array(angles)


def quadrature_kinetic_energy(system, q, v, n_points=24, eps=1e-6):
    """``1/2 int (rho A |r_dot|^2 + rho Iz omega^2) ds`` (omega: the
    sub-beam frame's rate, the rotary inertia the model carries) with velocities by
    central differences along ``q + t v`` (Gauss-Legendre in each sub-beam)."""
    xg, wg = np.polynomial.legendre.leggauss(n_points)
    s_rel, w_rel = 0.5 * (xg + 1.0), 0.5 * wg
    h = BEAM.length / system.chain("beam").n
    pp, ap = _centerline(system, q + eps * v, s_rel)
    pm, am = _centerline(system, q - eps * v, s_rel)
    vel, om = (pp - pm) / (2 * eps), (ap - am) / (2 * eps)
    w = np.tile(w_rel * h, system.chain("beam").n)
    return 0.5 * float(np.sum(w * (BEAM.mass_per_length * np.sum(vel ** 2, axis=0)
                                   + BEAM.density * BEAM.Iz * om ** 2)))


def test_chain_kinetic_energy_matches_a_direct_quadrature():
    system = chain_system(3, n_sections=8)   # 8 stations: the polynomial shapes' integrals exactly
    rng = np.random.default_rng(7)
    q = np.concatenate([[0.3], 0.05 * rng.standard_normal(system.nq - 1)])   # tip slopes ~ 0.1 rad
    v = rng.standard_normal(system.nv)
    T_ref = quadrature_kinetic_energy(system, q, v)
    assert system.kinetic_energy(q, v) == pytest.approx(T_ref, rel=1e-7)
    M = system.mass_matrix(q)
    assert 0.5 * v @ M @ v == pytest.approx(T_ref, rel=1e-7)
    # the O(N) recursion and the dense projection give the same accelerations
    tau = rng.standard_normal(system.nv)
    np.testing.assert_allclose(system.accelerations(q, v, tau, method="aba"),
                               system.accelerations(q, v, tau, method="projection"), rtol=1e-8, atol=1e-8)


def test_free_chain_conserves_energy():
    system = chain_system(3)
    rng = np.random.default_rng(3)
    q = np.concatenate([[0.0], 0.05 * rng.standard_normal(system.nq - 1)])
    v = np.concatenate([[2.0], 0.5 * rng.standard_normal(system.nv - 1)])
    E0 = system.kinetic_energy(q, v) + system.potential_energy(q)
    tau = np.zeros(system.nv)
    q1, v1 = advance_flexible(system._fh, q, v, tau, 0.0, 1.0, ErrorControl(rtol=1e-10, atol=1e-12),
                              first_step=1e-4)
    E1 = system.kinetic_energy(q1, v1) + system.potential_energy(q1)
    assert abs(v1[0] - v[0]) > 1e-3          # the hub rate did exchange energy with the beam
    assert E1 == pytest.approx(E0, rel=1e-7)


def test_chain_frequencies_converge_to_euler_bernoulli():
    """Small motions: the chain's first three cantilever frequencies approach
    the Euler-Bernoulli values ``(lambda_i L)^2 sqrt(EI / (rho A L^4))``."""
    from mbfmu.dynamics.flexible import natural_frequencies
    exact = np.array([BEAM.clamped_frequency(i) for i in (1, 2, 3)])
    errs = [np.abs(natural_frequencies(chain_system(n), fixed=[0])[:3] / exact - 1.0) for n in (2, 4, 8)]
    assert np.all(errs[2] < 1e-3)
    assert np.all(errs[1] < errs[0]) and np.all(errs[2] < errs[1])


# ---- elastica --------------------------------------------------------------------

def elastica_tip(alpha):
    """Tip displacements (transverse, axial) / L of a cantilever under a dead
    transverse tip load, ``alpha = P L^2 / EI``: the tip angle ``theta``
    solves ``sqrt(alpha) = K(k) - F(phi1, k)``, ``k^2 = (1 + sin theta) / 2``,
    ``sin phi1 = 1 / (sqrt 2 k)``; then ``v / L = 1 - 2 (E(k) - E(phi1, k)) /
    sqrt(alpha)``, ``u / L = 1 - sqrt(2 sin theta / alpha)``."""
    def parts(th):
        m = (1.0 + np.sin(th)) / 2.0
        return m, np.arcsin(1.0 / np.sqrt(2.0 * m))

    def g(th):
        m, phi1 = parts(th)
        return ellipk(m) - ellipkinc(phi1, m) - np.sqrt(alpha)
    th = brentq(g, 1e-12, np.pi / 2 - 1e-12, xtol=1e-15)
    m, phi1 = parts(th)
    return 1.0 - 2.0 * (ellipe(m) - ellipeinc(phi1, m)) / np.sqrt(alpha), 1.0 - np.sqrt(2.0 * np.sin(th) / alpha)


ALPHAS = (0.5, 1.0, 2.0, 3.5, 5.0, 7.5, 10.0)


def elastica_errors(n):
    """Relative errors (transverse, axial) of the static tip displacement of
    an ``n``-sub-beam cantilever at each of ALPHAS. The dead load is the
    weight of a 1 kg tip body (gravity -P along y; the beam itself made
    weightless), the statics the system's own generalized forces set to
    zero, continued from one load to the next."""
    beam = replace(BEAM, density=1e-9)
    L = beam.length
    q, errs = None, {}
    for a in ALPHAS:
        system = chain_system(n, joint=Fixed(), gravity=(0.0, -a * beam.EIz / L ** 2, 0.0), beam=beam, tip_mass=1.0)
        q = static_equilibrium(system, q)
        p = system.point_position(q, "load")
        v_ref, u_ref = elastica_tip(a)
        errs[a] = (-p[1] / L / v_ref - 1.0, (L - p[0]) / L / u_ref - 1.0)
    return errs


def test_elastica_reference_is_the_small_load_limit():
    v, u = elastica_tip(1e-4)
    assert v == pytest.approx(1e-4 / 3, rel=1e-3)          # P L^3 / (3 EI)
    assert u == pytest.approx((1e-4) ** 2 / 15, rel=1e-2)   # 1/2 int v'^2 = alpha^2 L / 15


def test_elastica_within_half_a_percent_up_to_PL2_EI_10():
    errs = elastica_errors(8)
    for a, (ev, eu) in errs.items():
        assert abs(ev) < 5e-3 and abs(eu) < 5e-3, (a, ev, eu)


def test_elastica_error_falls_with_the_number_of_subbeams():
    """Model-form error ~ 1/n^3: each sub-beam carries only its share of the rotation."""
    prev = None
    for n in (2, 4, 8):
        err = max(abs(e) for pair in elastica_errors(n).values() for e in pair)
        if prev is not None:
            assert err < prev / 5.0, (n, err, prev)
        prev = err


# ---- spin-up ----------------------------------------------------------------------

def test_spinup_peak_at_10_rad_s_against_the_ancf_reference():
    """4 sub-beams x 2 modes, compiled error-controlled run with the hub
    driven, against the ANCF peak of issue 19 (-1.0831 m, 32 elements);
    and the error falls from 2 to 4 sub-beams."""
    ancf = -1.0831
    errs = []
    for n in (2, 4):
        t, d = run_spinup(10.0, t_final=7.0, method="subbeams", n=n, dt_out=0.01, integrator="BS32",
                          rtol=1e-6, atol=1e-8)
        errs.append(abs(peak_deflection(t, d)[1] / ancf - 1.0))
    assert errs[1] < 3e-3
    assert errs[1] < errs[0] / 3.0


# ---- interface ------------------------------------------------------------------------

def test_chain_names_and_errors():
    system = chain_system(3, tip_mass=0.5)
    chain = system.chain("beam")
    assert chain.parts == ("beam.sub0", "beam.sub1", "beam.sub2") and chain.n == 3
    assert sum(system.beam(p).beam.length for p in chain.parts) == pytest.approx(BEAM.length)
    R, p = system.tip_frame(system.neutral(), "beam")
    np.testing.assert_allclose(p, [BEAM.length, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(system.point_position(system.neutral(), "load"), p, atol=1e-12)
    with pytest.raises(InputError, match="sub-beams"):
        system.beam("beam")
    with pytest.raises(InputError, match="no beam made of sub-beams"):
        system.chain("nope")
    for bad in (0, 2.5, True):
        with pytest.raises(ModelError, match="subbeams"):
            FlexibleSystemBuilder().add_beam("b", "world", Fixed(), BEAM, ModeSet(), subbeams=bad)
    b = FlexibleSystemBuilder()
    b.add_beam("b", "world", Fixed(), BEAM, ModeSet(), subbeams=2)
    with pytest.raises(ModelError, match="defined twice"):
        b.add_beam("b", "world", Fixed(), BEAM, ModeSet())


def test_chain_damping_is_the_whole_beams():
    damped = replace(BEAM, damping_ratio=0.02)
    system = chain_system(2, beam=damped)
    beta = damped.stiffness_damping_factor(("y",))
    for name in system.chain("beam").parts:
        b = system.beam(name)
        np.testing.assert_allclose(b.D, beta * b.K)


def test_spinup_entry_points_reject_bad_input():
    with pytest.raises(InputError, match="subbeams"):
        spinup_system("chains")
    with pytest.raises(InputError, match="stop_above"):
        run_spinup(10.0, t_final=0.1, method="subbeams", n=2, integrator="BS32", stop_above=1.0)
    with pytest.raises(InputError, match="run past the peak"):
        peak_deflection([0.0, 1.0, 2.0], [0.0, -1.0, -2.0])


def test_simulate_driven_rejects_bad_input():
    system = chain_system(2)
    x0 = np.zeros(system.nq + system.nv)
    drive = lambda t: ((0,), (1.0,))  # noqa: E731
    with pytest.raises(InputError, match="method"):
        simulate_driven(system, x0, [0.0, 1.0], drive, method="RK4")
    with pytest.raises(InputError, match="increasing"):
        simulate_driven(system, x0, [1.0, 0.0], drive)
    with pytest.raises(InputError, match="x0"):
        simulate_driven(system, x0[:-1], [0.0, 1.0], drive)
    with pytest.raises(InputError, match="modal coordinate"):
        simulate_driven(system, x0, [0.0, 1.0], lambda t: ((1,), (1.0,)))
    # a driven hub at constant acceleration follows theta = a t^2 / 2
    tr = simulate_driven(system, x0, [0.0, 0.5], drive, rtol=1e-9, atol=1e-11)
    assert tr.x[-1, 0] == pytest.approx(0.125, rel=1e-8)
