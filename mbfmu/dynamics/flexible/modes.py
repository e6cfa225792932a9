"""Euler-Bernoulli mode shapes for assumed-modes beams.

Shapes are functions of the station ``x`` in [0, L] along the beam, with
derivatives up to the second. Bending shapes are normalized so that
``integral_0^L phi_i^2 dx = L`` and ``phi_i(L) > 0``; the clamped-free ones are
the exact cantilever eigenfunctions, so with uniform mass their modal mass is
``rho A L`` and modal stiffness ``EI lambda_i^4 L`` (diagonal).

Formulas (e.g. Meirovitch, *Fundamentals of Vibrations*, 2001, sec. 8.6):

* clamped-free: ``cos(lL) cosh(lL) = -1``,
  ``phi = cosh(lx) - cos(lx) - s (sinh(lx) - sin(lx))``,
  ``s = (cosh lL + cos lL) / (sinh lL + sin lL)``, evaluated in a form that
  avoids the cancellation of the growing exponentials;
* pinned-free (elastic modes about a hinge at x = 0): ``tan(lL) = tanh(lL)``,
  ``phi = sin(lx) + (sin lL / sinh lL) sinh(lx)``;
* axial and torsion, fixed-free: ``phi = sin((2i - 1) pi x / (2 L))``;
* clamped with tip shapes (:class:`TipLoadedModes`): the clamped-free modes
  enriched with the cantilever's static deflections under a tip force and a
  tip moment, recombined into the beam's own Rayleigh-Ritz eigenfunctions in
  that space.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...errors import ModelError
from .. import symbolic


@lru_cache(maxsize=None)
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (computed once per ``n``:
    numpy's ``leggauss`` costs ~0.3 ms, and the deflection outputs need it at
    every output evaluation)."""
    x, w = np.polynomial.legendre.leggauss(n)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _bisect(f, a: float, b: float) -> float:
    """Root of ``f`` in [a, b] (sign change required), to machine precision."""
    fa = f(a)
    if fa * f(b) > 0:
        raise ValueError("no sign change")
    for _ in range(200):
        m = 0.5 * (a + b)
        fm = f(m)
        if fm == 0 or b - a < 1e-15 * max(1.0, abs(m)):
            return m
        if fa * fm < 0:
            b = m
        else:
            a, fa = m, fm
    return 0.5 * (a + b)


@lru_cache(maxsize=None)
def clamped_free_roots(n: int) -> tuple[float, ...]:
    """First ``n`` roots of ``cos(x) cosh(x) + 1 = 0`` (1.8751, 4.6941, 7.8548, ...)."""
    f = lambda x: math.cos(x) + 1.0 / math.cosh(x)  # same roots, bounded
    return tuple(_bisect(f, (i - 0.5) * math.pi - 1.0 if i > 1 else 1.0, (i - 0.5) * math.pi + 1.0)
                 for i in range(1, n + 1))


@lru_cache(maxsize=None)
def pinned_free_roots(n: int) -> tuple[float, ...]:
    """First ``n`` positive roots of ``tan(x) = tanh(x)`` (3.9266, 7.0686, ...)."""
    f = lambda x: math.sin(x) * math.cosh(x) - math.cos(x) * math.sinh(x)
    g = lambda x: f(x) / math.cosh(x)
    return tuple(_bisect(g, (i + 0.25) * math.pi - 0.5, (i + 0.25) * math.pi + 0.5)
                 for i in range(1, n + 1))


def _clamped_free(lam_L: float, xi: np.ndarray, d: int) -> np.ndarray:
    """d-th derivative (w.r.t. xi = x/L, times 1/lam_L^d) of the unnormalized
    clamped-free shape, stable for large lam_L."""
    b = lam_L
    z = b * xi
    s_num_m = -math.exp(-b) + math.sin(b) - math.cos(b)  # (sinh+sin) - (cosh+cos) times... see below
    # 1 - s = (sinh b + sin b - cosh b - cos b) / (sinh b + sin b)
    den = math.sinh(b) + math.sin(b)
    one_m_s = s_num_m / den
    one_p_s = 2.0 - one_m_s
    s = 1.0 - one_m_s
    # cosh z - s sinh z = 0.5 (1 - s) e^z + 0.5 (1 + s) e^-z ; its derivatives alternate
    ez = np.exp(z - b) * math.exp(b) if b < 700 else np.exp(z)
    ez_term = 0.5 * one_m_s * ez
    emz_term = 0.5 * one_p_s * np.exp(-z)
    if d == 0:
        hyp = ez_term + emz_term
        trig = -np.cos(z) + s * np.sin(z)
    elif d == 1:
        hyp = ez_term - emz_term
        trig = np.sin(z) + s * np.cos(z)
    elif d == 2:
        hyp = ez_term + emz_term
        trig = np.cos(z) - s * np.sin(z)
    else:
        raise ValueError(d)
    return hyp + trig


def _pinned_free(lam_L: float, xi: np.ndarray, d: int) -> np.ndarray:
    b = lam_L
    z = b * xi
    r = math.sin(b) / math.sinh(b)
    # r sinh(z) stays bounded: r ~ 2 sin(b) e^-b
    if d == 0:
        return np.sin(z) + r * np.sinh(z)
    if d == 1:
        return np.cos(z) + r * np.cosh(z)
    if d == 2:
        return -np.sin(z) + r * np.sinh(z)
    raise ValueError(d)


class BendingModes:
    """Transverse bending shapes of one beam in one plane.

    Parameters
    ----------
    n : int
        Number of modes (>= 1).
    length : float
        L, m.
    boundary : str
        ``"clamped"`` (clamped-free) or ``"pinned"`` (pinned-free elastic modes).
    """

    def __init__(self, n: int, length: float, boundary: str = "clamped"):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ModelError(f"bending modes: n = {n!r} must be an integer >= 1")
        if boundary not in ("clamped", "pinned"):
            raise ModelError(f"bending modes: boundary {boundary!r} must be 'clamped' or 'pinned'")
        self.n = int(n)
        self.length = float(length)
        self._L = symbolic.number(length)  # its expression in a recorded build (symbolic.py)
        self.boundary = boundary
        roots = clamped_free_roots(self.n) if boundary == "clamped" else pinned_free_roots(self.n)
        self.lambda_L = np.array(roots)
        self._shape = _clamped_free if boundary == "clamped" else _pinned_free
        # normalization: integral phi^2 = L, phi(L) > 0 (Gauss-Legendre, exact to rounding)
        xg, wg = gauss_legendre(200)
        xi = 0.5 * (xg + 1.0)
        self._scale = np.empty(self.n)
        for i, b in enumerate(self.lambda_L):
            raw = self._shape(b, xi, 0)
            norm = math.sqrt(0.5 * float(wg @ raw ** 2))
            tip = float(self._shape(b, np.array([1.0]), 0)[0])
            self._scale[i] = math.copysign(1.0 / norm, tip)

    @property
    def lambdas(self) -> np.ndarray:
        """Wave numbers lambda_i (1/m)."""
        return self.lambda_L / self.length

    def values(self, x, derivative: int = 0) -> np.ndarray:
        """``d^k phi_i / dx^k`` at stations ``x`` (m), shape (len(x), n)."""
        return _scaled(self, self._values(x, derivative), derivative)

    def _values(self, x, derivative: int = 0) -> np.ndarray:
        x = np.atleast_1d(np.asarray(x, float))
        xi = x / self.length
        out = np.empty((x.size, self.n))
        for i, b in enumerate(self.lambda_L):
            out[:, i] = self._scale[i] * self._shape(b, xi, derivative) * (b / self.length) ** derivative
        return out

    def stiffness(self, EI: float) -> np.ndarray:
        """Modal stiffness ``EI integral phi_i'' phi_j''`` (n, n), N/m."""
        if isinstance(self._L, symbolic.Sym) or isinstance(EI, symbolic.Sym):  # EI (lambda L)^4 / L^3, as expressions
            return np.diag(np.array([EI * float(b) ** 4 / self._L ** 3 for b in self.lambda_L], dtype=object))
        return np.diag(EI * self.lambdas ** 4 * self.length)

    def slope_products(self, x) -> np.ndarray:
        """``H_ij(x) = integral_0^x phi_i' phi_j' ds`` at stations ``x`` (m),
        shape (len(x), n, n): the foreshortening coefficients (1/m)."""
        x = np.atleast_1d(np.asarray(x, float))
        xg, wg = gauss_legendre(max(40, 8 * self.n))
        out = np.empty((x.size, self.n, self.n))
        for k, xk in enumerate(x):
            s = 0.5 * xk * (xg + 1.0)
            d = self._values(s, 1)
            out[k] = 0.5 * xk * (d.T * wg) @ d
        return _scaled(self, out, 1)  # 1/m: at stations proportional to L, as 1/L


def _tip_polynomials(xi: np.ndarray, d: int, length: float) -> np.ndarray:
    """Static deflection shapes of a clamped-free beam (EI uniform), unit tip
    deflection, and their x-derivatives, shape (len(xi), 2), 1/m^d.

    Column 0: tip force P, ``w = P x^2 (3L - x) / (6 EI)``
    -> ``xi^2 (3 - xi) / 2``; column 1: tip moment M0, ``w = M0 x^2 / (2 EI)``
    -> ``xi^2`` (e.g. Roark's Formulas for Stress and Strain, 7th ed., 2002,
    table 8.1, cantilever with an end load and an end couple), ``xi = x / L``.
    """
    if d == 0:
        cols = (0.5 * xi ** 2 * (3.0 - xi), xi ** 2)
    elif d == 1:
        cols = (1.5 * xi * (2.0 - xi), 2.0 * xi)
    elif d == 2:
        cols = (3.0 * (1.0 - xi), np.full_like(xi, 2.0))
    else:
        raise ValueError(d)
    return np.column_stack(cols) / length ** d


def _ritz_combination(raw_m: np.ndarray, raw_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rayleigh-Ritz eigenvectors of the pencil ``(raw_k, raw_m)``.

    Parameters
    ----------
    raw_m, raw_k : ndarray (n, n)
        Dimensionless Gram matrices of the trial functions g_k:
        ``(1/L) integral g_i g_j dx`` and ``L^3 integral g_i'' g_j'' dx``.

    Returns
    -------
    beta : ndarray (n,)
        ``lambda_i L``, ascending, with ``beta^4`` the Ritz eigenvalues.
    C : ndarray (n, n)
        Row i holds the coefficients of eigenfunction i over the trial
        functions, normalized to ``C raw_m C^T = I``.

    Notes
    -----
    The static shapes are nearly in the L2 span of the clamped-free modes
    (their expansion coefficients decay like ``lambda^-3``) but not in the
    energy span (``lambda^-1``), so the pencil is factored through the
    stiffness matrix, scaled to unit diagonal, which stays well conditioned.
    """
    s = 1.0 / np.sqrt(np.diag(raw_k))
    Ks, Ms = raw_k * np.outer(s, s), raw_m * np.outer(s, s)
    R = np.linalg.cholesky(0.5 * (Ks + Ks.T))
    B = np.linalg.solve(R, np.linalg.solve(R, Ms).T)  # R^-1 Ms R^-T
    mu, V = np.linalg.eigh(0.5 * (B + B.T))           # mu = 1 / beta^4
    order = np.argsort(mu)[::-1]
    mu, V = mu[order], V[:, order]
    C = (np.linalg.solve(R.T, V) * s[:, None]).T       # rows: s * R^-T v
    C /= np.sqrt(np.einsum("ij,jk,ik->i", C, raw_m, C))[:, None]
    return mu ** -0.25, C


class TipLoadedModes(BendingModes):
    """Clamped bending shapes enriched for a heavy body at the tip.

    The clamped-free eigenfunctions all have zero moment and shear at the
    free end, so when a tip body loads the beam their Rayleigh-Ritz
    frequencies converge slowly. This family spans the first ``n`` trial
    functions of the sequence

        tip-force shape ``xi^2 (3 - xi) / 2``, tip-moment shape ``xi^2``,
        clamped-free modes 1, 2, ..., ``n - 2``

    (``xi = x / L``; the static deflections of the cantilever under a tip
    force and a tip moment, i.e. the attachment or static-correction shapes
    of component-mode synthesis: Craig & Kurdila, *Fundamentals of
    Structural Dynamics*, 2nd ed., 2006, chapter on component-mode
    synthesis; the clamped-free modes alone are admissible but cannot
    satisfy the natural boundary conditions of a loaded tip, hence their
    slow convergence: Meirovitch, *Principles and Techniques of
    Vibrations*, 1997, ch. 8), recombined into the uniform beam's own
    Rayleigh-Ritz eigenfunctions in that space. So each shape is a fixed
    linear combination of analytic functions (values and derivatives exact),
    the shapes are clamped at the root, ``integral phi_i phi_j = L delta_ij``,
    ``integral phi_i'' phi_j'' = lambda_i^4 L delta_ij`` (``lambda_i`` the
    Ritz wave numbers, upper bounds of the clamped-free ones) and
    ``phi_i(L) > 0``, as for :class:`BendingModes`, whose interface this
    class keeps.

    Parameters
    ----------
    n : int
        Number of shapes (>= 1).
    length : float
        L, m.
    """

    def __init__(self, n: int, length: float):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ModelError(f"tip-loaded bending modes: n = {n!r} must be an integer >= 1")
        self.n = int(n)
        self.length = float(length)
        self._L = symbolic.number(length)
        self.boundary = "clamped"
        self.n_static = min(2, self.n)
        n_cf = self.n - self.n_static
        self._free = BendingModes(n_cf, self.length) if n_cf else None
        # the combination is dimensionless (the trial functions are functions of x / L):
        # computed once per n on the unit beam, so that the shapes of every length are
        # the same functions of x / L (a recorded build scales them, symbolic.py)
        self.lambda_L, self._coef = _unit_ritz(self.n)
        self.lambda_L = self.lambda_L.copy()

    def _ritz_shapes(self) -> tuple[np.ndarray, np.ndarray]:
        """``lambda_i L`` and the coefficients (n, n) of the shapes over the
        trial functions, Gram matrices by Gauss-Legendre quadrature (exact to
        rounding for these smooth functions)."""
        xg, wg = gauss_legendre(max(200, 8 * self.n))
        x = 0.5 * self.length * (xg + 1.0)
        w = 0.5 * wg
        G0, G2 = self._trial(x, 0), self._trial(x, 2)
        C = np.eye(self.n)
        # Two passes: the second repeats the Ritz step on the first pass's nearly
        # orthonormal shapes, which removes the rounding error amplified by the near
        # L2-dependence of the trial set (orthonormality 1e-5 -> 1e-11 at n = 10).
        for _ in range(2):
            P0, P2 = G0 @ C.T, G2 @ C.T
            beta, C1 = _ritz_combination((P0.T * w) @ P0, self.length ** 4 * (P2.T * w) @ P2)
            C = C1 @ C
        return beta, C

    def _trial(self, x: np.ndarray, d: int) -> np.ndarray:
        """Trial functions (static shapes, then clamped-free modes), d-th
        x-derivatives at ``x`` (m), shape (len(x), n)."""
        parts = [_tip_polynomials(x / self.length, d, self.length)[:, :self.n_static]]
        if self._free is not None:
            parts.append(self._free._values(x, d))
        return np.hstack(parts)

    def _values(self, x, derivative: int = 0) -> np.ndarray:
        x = np.atleast_1d(np.asarray(x, float))
        return self._trial(x, derivative) @ self._coef.T


@lru_cache(maxsize=None)
def _unit_ritz(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``lambda_i L`` and the coefficients (n, n) of :class:`TipLoadedModes`
    over its trial functions, ``phi_i(L) > 0`` (read-only arrays), from the
    beam of unit length."""
    unit = object.__new__(TipLoadedModes)
    unit.n, unit.length, unit._L, unit.boundary = n, 1.0, 1.0, "clamped"
    unit.n_static = min(2, n)
    unit._free = BendingModes(n - unit.n_static, 1.0) if n > unit.n_static else None
    beta, C = unit._ritz_shapes()
    tip = unit._trial(np.array([1.0]), 0)[0] @ C.T
    C = C * np.where(tip < 0, -1.0, 1.0)[:, None]
    beta.setflags(write=False)
    C.setflags(write=False)
    return beta, C


def _scaled(shapes, out: np.ndarray, power: int) -> np.ndarray:
    """``out`` (numbers at the float length) times ``(L0 / L)^power`` as an
    expression of the length ``L`` in a recorded build (symbolic.py): the
    shapes are functions of ``x / L``, so a derivative scales as ``1/L`` at
    stations proportional to L (the only ones the recorded plants use; the
    packer's verification proves it); ``out`` itself otherwise."""
    if power == 0 or not isinstance(shapes._L, symbolic.Sym):
        return out
    return out * ((shapes.length / shapes._L) ** power)


def bending_modes(n: int, length: float, boundary: str = "clamped",
                  tip_shapes: bool = False) -> BendingModes:
    """The bending shape family of a beam.

    Parameters
    ----------
    n : int
        Number of shapes.
    length : float
        L, m.
    boundary : {"clamped", "pinned"}
        Root condition (see :class:`BendingModes`).
    tip_shapes : bool
        Enrich the clamped shapes for a tip load (:class:`TipLoadedModes`);
        clamped boundary only.

    Returns
    -------
    BendingModes or TipLoadedModes
    """
    if tip_shapes:
        if boundary != "clamped":
            raise ModelError(f"bending modes: tip shapes need boundary 'clamped', not {boundary!r}")
        return TipLoadedModes(n, length)
    return BendingModes(n, length, boundary)


class SineModes:
    """Fixed-free axial or torsion shapes ``sin((2i-1) pi x / (2L))``.

    Parameters
    ----------
    n : int
        Number of shapes, >= 1.
    length : float
        Beam length L, m.
    """

    def __init__(self, n: int, length: float):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ModelError(f"axial/torsion modes: n = {n!r} must be an integer >= 1")
        self.n = int(n)
        self.length = float(length)
        self.k = (2 * np.arange(1, self.n + 1) - 1) * math.pi / (2.0 * self.length)

    def values(self, x, derivative: int = 0) -> np.ndarray:
        x = np.atleast_1d(np.asarray(x, float))
        z = np.outer(x, self.k)
        if derivative == 0:
            return np.sin(z)
        if derivative == 1:
            return self.k * np.cos(z)
        if derivative == 2:
            return -self.k ** 2 * np.sin(z)
        raise ValueError(derivative)

    def stiffness(self, EA_or_GJ: float) -> np.ndarray:
        """``EA integral phi_i' phi_j'`` (n, n) = diag(EA k_i^2 L / 2)."""
        return np.diag(EA_or_GJ * self.k ** 2 * self.length / 2.0)


@dataclass(frozen=True)
class ModeSet:
    """Which assumed modes a beam carries.

    Parameters
    ----------
    bending_y, bending_z : int
        Number of bending modes with deflection along y and along z.
    axial, torsion : int
        Number of fixed-free axial and torsion modes.
    boundary : str
        ``"clamped"`` (clamped-free bending shapes, the floating frame is
        tangent to the beam at the root) or ``"pinned"`` (pinned-free elastic
        shapes).
    tip_shapes : bool
        With ``boundary="clamped"`` only: replace the clamped-free shapes by
        :class:`~mbfmu.dynamics.flexible.modes.TipLoadedModes` (the same
        count, spanning the static deflections under a tip force and a tip
        moment plus the first ``n - 2`` clamped-free modes), which converge
        much faster when a heavy body sits on the beam's tip.
    """

    bending_y: int = 3
    bending_z: int = 0
    axial: int = 0
    torsion: int = 0
    boundary: str = "clamped"
    tip_shapes: bool = False

    def __post_init__(self):
        for name in ("bending_y", "bending_z", "axial", "torsion"):
            val = getattr(self, name)
            if not isinstance(val, (int, np.integer)) or val < 0:
                raise ModelError(f"mode set: {name} = {val!r} must be an integer >= 0")
        if self.bending_y + self.bending_z + self.axial + self.torsion == 0:
            raise ModelError("mode set: a flexible beam needs at least one mode")
        if self.boundary not in ("clamped", "pinned"):
            raise ModelError(f"mode set: boundary {self.boundary!r} must be 'clamped' or 'pinned'")
        if not isinstance(self.tip_shapes, (bool, np.bool_)):
            raise ModelError(f"mode set: tip_shapes = {self.tip_shapes!r} must be True or False")
        if self.tip_shapes and self.boundary != "clamped":
            raise ModelError(f"mode set: tip_shapes needs boundary 'clamped', not {self.boundary!r}")

    @property
    def size(self) -> int:
        return self.bending_y + self.bending_z + self.axial + self.torsion
