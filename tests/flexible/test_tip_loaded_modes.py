"""Tip-loaded bending shapes (``ModeSet(tip_shapes=True)``, :class:`TipLoadedModes`):
clamped-free modes enriched with the cantilever's static tip-force and
tip-moment deflections.

Reference: the exact frequency equation of a uniform Euler-Bernoulli beam
clamped at x = 0 carrying a rigid body (mass M, rotary inertia J about its
centre of mass at x = L) at its free end. From Hamilton's principle with
``w(x, t) = W(x) sin(omega t)``, the natural boundary conditions at x = L are

    EI W''(L)  =  J omega^2 W'(L)     (bending moment = rotary inertia torque),
    EI W'''(L) = -M omega^2 W(L)      (shear force = inertia force of the mass)

(Blevins, *Formulas for Natural Frequency and Mode Shape*, 1979, table 8-8;
Meirovitch, *Fundamentals of Vibrations*, 2001, sec. 8.6). With
``W = a1 cosh(beta xi) + a2 sinh(beta xi) + a3 cos(beta xi) + a4 sin(beta xi)``,
``xi = x / L``, ``beta = lambda L``, ``omega = lambda^2 sqrt(EI / (rho A))``,
``mu = M / (rho A L)`` and ``j = J / (rho A L^3)`` the four conditions
(W = W' = 0 at the root, then the two above) are a 4 x 4 linear system whose
determinant vanishes at the eigenvalues beta_i. For mu = j = 0 it reduces to
``cos(beta) cosh(beta) = -1``; for mu = 1, j = 0 it gives beta_1 = 1.2479
(Blevins, table 8-8).
"""
import math

import numpy as np
import pytest
from scipy.optimize import brentq

from mbfmu import load_plant
from mbfmu.dynamics import Fixed
from mbfmu.dynamics.flexible import (BeamProperties, BendingModes, FlexibleSystemBuilder, ModeSet,
                                     TipLoadedModes, clamped_free_roots, natural_frequencies)
from mbfmu.dynamics.flexible.modes import bending_modes
from mbfmu.errors import InputError, ModelError

BEAM = BeamProperties.rectangular(1.0, 0.01, 0.05, E=70e9, density=2700.0)


# ---- exact reference --------------------------------------------------------------------------
def tip_body_determinant(beta: float, mu: float, j: float) -> float:
    """Determinant of the 4 x 4 boundary-condition matrix (cosh/sinh columns
    scaled by 1 / cosh(beta), which keeps it bounded and its roots)."""
    ch, sh, c, s = math.cosh(beta), math.sinh(beta), math.cos(beta), math.sin(beta)
    jb3, mub = j * beta ** 3, mu * beta
    A = np.array([
        [1.0, 0.0, 1.0, 0.0],                                         # W(0) = 0
        [0.0, 1.0, 0.0, 1.0],                                         # W'(0) = 0
        [ch - jb3 * sh, sh - jb3 * ch, -c + jb3 * s, -s - jb3 * c],   # W'' - j beta^3 W' = 0
        [sh + mub * ch, ch + mub * sh, s + mub * c, -c + mub * s],    # W''' + mu beta W = 0
    ])
    A[:, :2] /= ch
    return float(np.linalg.det(A))


def tip_body_roots(mu: float, j: float, count: int) -> np.ndarray:
    """First ``count`` roots beta_i = lambda_i L (sign changes on a fine grid, then Brent)."""
    grid = np.arange(0.05, 40.0, 0.01)
    f = np.array([tip_body_determinant(b, mu, j) for b in grid])
    out = []
    for k in np.nonzero(f[:-1] * f[1:] < 0)[0][:count]:
        out.append(brentq(tip_body_determinant, grid[k], grid[k + 1], args=(mu, j), xtol=1e-14))
    return np.array(out)


def test_frequency_equation_reduces_to_the_published_cases():
    assert np.allclose(tip_body_roots(0.0, 0.0, 4), clamped_free_roots(4), rtol=1e-10)
    assert tip_body_roots(1.0, 0.0, 1)[0] == pytest.approx(1.2479, abs=1e-4)


def cantilever_with_tip_body(modes, M, J):
    b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    b.add_beam("beam", "world", Fixed(), BEAM, modes, stiffening=False)
    b.add_body("tip", "beam.tip", Fixed(), mass=M, inertia=np.diag([J, J, J]))
    return b.build()


def frequency_errors(n, tip_shapes, M, J):
    """Relative errors of the first three frequencies against the exact roots."""
    L, rhoA = BEAM.length, BEAM.mass_per_length
    beta = tip_body_roots(M / (rhoA * L), J / (rhoA * L ** 3), 3)
    exact = beta ** 2 / L ** 2 * math.sqrt(BEAM.EIz / rhoA)
    w = natural_frequencies(cantilever_with_tip_body(ModeSet(bending_y=n, tip_shapes=tip_shapes), M, J), n=3)
    return np.abs(w / exact - 1)


# tip mass = the beam's mass (1.35 kg); with and without a rotary inertia of 0.05 kg m^2 (j = 0.037)
@pytest.mark.parametrize("J, plain_worse_than", [(0.0, 3e-3), (0.05, 0.1)])
def test_tip_shapes_converge_fast_for_a_tip_body_and_clamped_free_modes_do_not(J, plain_worse_than):
    """Measured (n = 5): enriched 1e-4 (J = 0) and 1e-5 (J = 0.05 kg m^2) at
    worst; clamped-free 0.48 % and 22 %."""
    M = BEAM.mass
    enriched = frequency_errors(5, True, M, J)
    plain = frequency_errors(5, False, M, J)
    assert np.all(enriched < 1e-3)
    assert plain.max() > plain_worse_than
    if J > 0:   # the rotary inertia needs the tip-moment shape: 4 functions already suffice
        assert np.all(frequency_errors(4, True, M, J) < 1e-3)
        assert frequency_errors(8, False, M, J).max() > 0.1


# ---- the shapes themselves ----------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 6, 12])
def test_tip_loaded_shapes_are_clamped_mass_orthonormal_and_stiffness_diagonal(n):
    L, EI = 2.0, 36.5
    m = TipLoadedModes(n, L)
    assert np.allclose(m.values([0.0]), 0, atol=1e-12)
    assert np.allclose(m.values([0.0], 1), 0, atol=1e-9)
    assert np.all(m.values([L])[0] > 0)
    xg, wg = np.polynomial.legendre.leggauss(300)
    x, w = 0.5 * L * (xg + 1.0), 0.5 * L * wg
    P, D2 = m.values(x), m.values(x, 2)
    assert np.allclose((P.T * w) @ P, L * np.eye(n), rtol=0, atol=1e-9 * L)
    K = m.stiffness(EI)
    assert np.allclose(K, np.diag(np.diag(K)))
    assert np.allclose(EI * (D2.T * w) @ D2, K, rtol=0, atol=1e-9 * K.max())
    # Rayleigh-Ritz: upper bounds of the cantilever eigenvalues, in ascending order
    assert np.all(np.diff(m.lambda_L) > 0)
    assert np.all(m.lambda_L >= np.array(clamped_free_roots(n)) * (1 - 1e-12))


def test_tip_loaded_shapes_carry_tip_moment_and_shear_and_exact_derivatives():
    L = 0.8
    m = TipLoadedModes(5, L)
    # unlike the clamped-free modes, the family has moment and shear at the free end
    assert np.abs(m.values([L], 2)).max() > 1.0
    assert np.abs(BendingModes(5, L).values([L], 2)).max() < 1e-8
    # first and second derivatives agree with finite differences of the values
    x, h = np.linspace(0.05, L - 0.05, 9), 1e-5
    d1 = (m.values(x + h) - m.values(x - h)) / (2 * h)
    d2 = (m.values(x + h) - 2 * m.values(x) + m.values(x - h)) / h ** 2
    assert np.allclose(m.values(x, 1), d1, rtol=0, atol=1e-6 * np.abs(d1).max())
    assert np.allclose(m.values(x, 2), d2, rtol=0, atol=1e-4 * np.abs(d2).max())
    # the lowest shapes of a long enough family are the cantilever modes
    big = TipLoadedModes(10, L)
    assert np.allclose(big.lambda_L[:5], clamped_free_roots(5), rtol=1e-9)


def test_bad_tip_shape_options_are_refused():
    with pytest.raises(ModelError, match="tip_shapes"):
        ModeSet(bending_y=3, tip_shapes="yes")
    with pytest.raises(ModelError, match="tip_shapes"):
        ModeSet(bending_y=3, tip_shapes=1)
    with pytest.raises(ModelError, match="clamped"):
        ModeSet(bending_y=3, boundary="pinned", tip_shapes=True)
    with pytest.raises(ModelError, match="clamped"):
        bending_modes(3, 1.0, "pinned", tip_shapes=True)
    with pytest.raises(ModelError, match="n = 0"):
        TipLoadedModes(0, 1.0)
    for bad in (2, 0.5, "x"):
        with pytest.raises(InputError, match="tip_shapes"):
            load_plant("flexible_arm", tip_shapes=bad)


# ---- the flexible_arm plant with both joints held ----------------------------------------------
def test_held_arm_second_frequency_matches_the_extrapolated_segment_chain():
    """Reference: 40 and 80 segments per link, Richardson-extrapolated
    (second order). Measured at 3 modes per link: tip shapes +0.003 %,
    clamped-free +13.5 % (and still +3.9 % at 10 modes)."""
    def held(plant):
        return natural_frequencies(plant.system, fixed=plant.arm.joint_v, n=2)[1]

    coarse, fine = (held(load_plant("flexible_arm", method="segments", n_segments=k)) for k in (40, 80))
    ref = (4.0 * fine - coarse) / 3.0
    assert held(load_plant("flexible_arm", n_modes=3, tip_shapes=1)) / ref - 1 == pytest.approx(0, abs=5e-3)
    assert held(load_plant("flexible_arm", n_modes=3, tip_shapes=0)) / ref - 1 > 0.05
