"""Gain and phase crossovers of a single loop gain, found on its frequency
response and checked against their definition.

:func:`find_crossovers` searches the frequency response of a SISO loop gain
``L`` (continuous, or sampled up to the Nyquist frequency ``pi / dt``):

1. a log-spaced grid over the band of the loop's poles, zeros and
   high-frequency gain, with the natural frequencies of its poles and zeros
   added (a lightly damped mode is not stepped over);
2. the grid refined by bisection wherever the phase of ``L`` turns by more
   than 2 deg or ``ln |L|`` changes by more than 0.02 near ``|L| = 1``;
3. every sign change of ``ln |L|`` (a gain crossover) and of ``Im L`` where
   ``Re L < 0`` (a phase crossover, the phase at -180 deg) refined by
   :func:`scipy.optimize.brentq`; the ends ``w = 0`` and, sampled, the
   Nyquist frequency count as phase crossovers when ``L`` is real and
   negative there;
4. each crossover checked by a second evaluation of ``L`` (a direct solve
   of ``(sI - A) x = B``, not the Schur form the search uses): ``| |L| - 1 |``
   or the angle from -180 deg (rad) within ``1e-6``. A crossover that fails
   is kept and marked ``verified=False``, never dropped.

Margins, as :func:`control.stability_margins` defines them: the phase margin
``PM = angle(L) + pi`` in ``[-pi, pi)`` at a gain crossover, the gain margin
``1 / |L|`` at a phase crossover. The headline is the worst of each: the
smallest ``|PM|`` and the gain margin closest to 1 in dB (smallest
``|ln GM|``), python-control's choice. The delay margin of a gain crossover is
the smallest delay that takes it onto -1, ``mod(PM, 2 pi) / w`` (``PM / w``
when ``PM > 0``); the loop's is the smallest over its crossovers. A sampled
loop also gets the whole number of extra steps of delay it tolerates
(``k w dt < mod(PM, 2 pi)`` at every crossover), since its delays come in steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

#: a crossover holds when | |L| - 1 | (gain) or the angle from -180 deg in rad (phase) is within this
TOLERANCE = 1e-6
_MAX_POINTS = 200_000
_PHASE_STEP = math.radians(2.0)
_LOG_STEP = 0.02


@dataclass(frozen=True)
class GainCrossover:
    """A frequency where ``|L| = 1``.

    Attributes
    ----------
    frequency : float
        rad/s.
    phase_margin : float
        ``angle(L) + pi`` wrapped to ``[-pi, pi)``, rad.
    delay_margin : float
        Smallest added delay that takes this crossover onto -1, s.
    residual : float
        ``|L| - 1`` at ``frequency``, by an independent evaluation of ``L``.
    verified : bool
        ``abs(residual) <= TOLERANCE``.
    """

    frequency: float
    phase_margin: float
    delay_margin: float
    residual: float
    verified: bool

    @property
    def phase_margin_deg(self) -> float:
        """The phase margin in degrees."""
        return math.degrees(self.phase_margin)


@dataclass(frozen=True)
class PhaseCrossover:
    """A frequency where the phase of ``L`` is -180 deg (``Im L = 0``, ``Re L < 0``).

    Attributes
    ----------
    frequency : float
        rad/s (0, or the Nyquist frequency of a sampled loop, at the ends).
    gain_margin : float
        ``1 / |L|``: the factor on the loop gain that puts this point on -1.
    residual : float
        Angle between ``L`` and the negative real axis, rad, by an
        independent evaluation of ``L``.
    verified : bool
        ``abs(residual) <= TOLERANCE``.
    """

    frequency: float
    gain_margin: float
    residual: float
    verified: bool

    @property
    def gain_margin_db(self) -> float:
        """The gain margin in dB, ``20 log10(gain_margin)``."""
        return 20.0 * math.log10(self.gain_margin) if self.gain_margin > 0 else -math.inf


@dataclass
class Crossovers:
    """All crossovers of a loop gain and the headline margins.

    Attributes
    ----------
    gain, phase : list
        :class:`GainCrossover` and :class:`PhaseCrossover`, by frequency.
    band : tuple of float
        The searched band, rad/s.
    dt : float or None
        Sample time of a sampled loop, s.
    closed_loop_stable : bool
        Eigenvalues of the unity negative feedback loop (continuous: real
        parts < 0; sampled: modulus < 1).
    band_edge_note : str
        Non-empty when ``|L|`` is within a factor 2 of 1 at an end of the
        band (a crossover beyond it cannot be excluded).
    """

    gain: list[GainCrossover]
    phase: list[PhaseCrossover]
    band: tuple[float, float]
    dt: float | None
    closed_loop_stable: bool
    band_edge_note: str = ""

    @property
    def worst_gain(self) -> GainCrossover | None:
        """The gain crossover with the smallest ``|phase margin|``."""
        return min(self.gain, key=lambda c: abs(c.phase_margin), default=None)

    @property
    def worst_phase(self) -> PhaseCrossover | None:
        """The phase crossover whose gain margin is closest to 1 in dB."""
        return min(self.phase, key=lambda c: abs(math.log(c.gain_margin)) if c.gain_margin > 0 else math.inf,
                   default=None)

    @property
    def delay_margin(self) -> float:
        """Smallest delay that destabilizes the loop, s (inf without a gain
        crossover, 0 when the closed loop is unstable already)."""
        if not self.closed_loop_stable:
            return 0.0
        return min((c.delay_margin for c in self.gain), default=math.inf)

    @property
    def delay_margin_steps(self) -> int | None:
        """Sampled loop: the whole number of extra steps of delay it tolerates
        (``None`` for a continuous loop or without a gain crossover)."""
        if self.dt is None or not self.gain:
            return None
        if not self.closed_loop_stable:
            return 0
        return min(math.ceil(c.delay_margin / self.dt - 1e-12) - 1 for c in self.gain)

    @property
    def conditionally_stable(self) -> bool:
        """A stable closed loop that a smaller loop gain destabilizes: a gain margin below 1."""
        return self.closed_loop_stable and any(c.gain_margin < 1.0 for c in self.phase)

    @property
    def verified(self) -> bool:
        """Whether every crossover holds its definition to :data:`TOLERANCE`."""
        return all(c.verified for c in [*self.gain, *self.phase])

    def sentences(self) -> list[str]:
        """What a reader must know beyond the headline, in words (may be empty)."""
        out = []
        if len(self.gain) > 1:
            pms = ", ".join(f"{c.phase_margin_deg:.3g} deg at {c.frequency:.4g} rad/s" for c in self.gain)
            out.append(f"|L| crosses 1 at {len(self.gain)} frequencies (phase margins {pms}); "
                       "the headline phase margin is the smallest of them")
        if self.conditionally_stable:
            top = max((c for c in self.phase if c.gain_margin < 1.0), key=lambda c: c.gain_margin)
            out.append(f"the loop is conditionally stable: the loop gain multiplied by {top.gain_margin:.4g} (a gain "
                       f"margin below 1, at {top.frequency:.4g} rad/s) puts it on the stability boundary; "
                       "a smaller loop gain can destabilize it")
        elif not self.closed_loop_stable:
            out.append("the closed loop is unstable: the margins say how far it is from stability, not how "
                       "much it can take")
        bad = [c for c in [*self.gain, *self.phase] if not c.verified]
        for c in bad:
            kind = "|L| - 1" if isinstance(c, GainCrossover) else "angle from -180 deg (rad)"
            out.append(f"CHECK FAILED: the crossover at {c.frequency:.6g} rad/s has {kind} = {c.residual:.2g} "
                       f"(tolerance {TOLERANCE:g}); its margin is not reliable")
        if self.band_edge_note:
            out.append(self.band_edge_note)
        return out

    def table(self) -> str:
        """Every crossover and its margin, one line each."""
        lines = []
        for c in self.gain:
            steps = ""
            if self.dt is not None:
                steps = f" ({c.delay_margin / self.dt:.3g} steps)"
            lines.append(f"gain crossover  {c.frequency:>12.6g} rad/s: phase margin {c.phase_margin_deg:9.4g} deg "
                         f"({c.phase_margin:.4g} rad), delay margin {c.delay_margin:.4g} s{steps}, "
                         f"|L|-1 = {c.residual:.1e}" + ("" if c.verified else " CHECK FAILED"))
        for c in self.phase:
            lines.append(f"phase crossover {c.frequency:>12.6g} rad/s: gain margin {c.gain_margin:9.4g} "
                         f"({c.gain_margin_db:.4g} dB), angle from -180 deg = {c.residual:.1e} rad"
                         + ("" if c.verified else " CHECK FAILED"))
        if not lines:
            lines.append(f"no crossover in {self.band[0]:.3g}..{self.band[1]:.3g} rad/s")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- evaluation of L
class _Response:
    """``L`` at many points from its complex Schur form ``A = Z T Z^H``:
    ``L(s) = c (sI - T)^-1 b + d``, a triangular solve per point, vectorized
    over the points (backward stable, unlike an eigenvector expansion)."""

    def __init__(self, A, B, C, D):
        import scipy.linalg as sla
        self.n = A.shape[0]
        if self.n:
            T, Z = sla.schur(A.astype(complex), output="complex")
            self.T, self.b, self.c = T, (Z.conj().T @ B)[:, 0], (C @ Z)[0]
        self.d = complex(D[0, 0])

    def __call__(self, s: np.ndarray) -> np.ndarray:
        s = np.atleast_1d(np.asarray(s, complex))
        if not self.n:
            return np.full(s.shape, self.d)
        x = np.empty((self.n, s.size), complex)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k in range(self.n - 1, -1, -1):
                x[k] = (self.b[k] + self.T[k, k + 1:] @ x[k + 1:]) / (s - self.T[k, k])
            return self.c @ x + self.d


def _direct(A, B, C, D, s: complex) -> complex:
    """``L(s)`` by a dense solve: the independent evaluation of the checks."""
    if not A.shape[0]:
        return complex(D[0, 0])
    try:
        return complex((C @ np.linalg.solve(s * np.eye(A.shape[0]) - A, B))[0, 0] + D[0, 0])
    except np.linalg.LinAlgError:
        return complex(math.inf)


def _zeros(A, B, C, D) -> np.ndarray:
    """Finite invariant zeros: generalized eigenvalues of the Rosenbrock pencil."""
    import scipy.linalg as sla
    n = A.shape[0]
    M = np.block([[A, B], [C, D]])
    N = np.zeros_like(M)
    N[:n, :n] = np.eye(n)
    with np.errstate(all="ignore"):
        z = sla.eigvals(M, N)
    return z[np.isfinite(z) & (np.abs(z) < 1e300)]


def _scales(A, B, C, D, dt: float | None) -> np.ndarray:
    """Natural frequencies of the poles and zeros and the frequency where the
    first Markov parameter alone would have unit gain, rad/s."""
    roots = np.concatenate([np.linalg.eigvals(A) if A.shape[0] else np.zeros(0), _zeros(A, B, C, D)])
    if dt is not None:
        roots = roots[np.abs(roots) > 0]
        roots = np.log(roots.astype(complex)) / dt
    w = list(np.abs(roots))
    if dt is None and A.shape[0]:
        v = B[:, 0]
        for r in range(1, A.shape[0] + 1):
            m = float(C[0] @ v)
            if abs(m) > 1e-300:
                w.append(abs(m) ** (1.0 / r))
                break
            v = A @ v
    w = np.asarray(w, float)
    return w[np.isfinite(w) & (w > 0)]


def _pole_frequencies(A, dt: float | None) -> np.ndarray:
    """Natural frequency of each pole, rad/s (``|s|``, or ``|ln z| / dt``)."""
    if not A.shape[0]:
        return np.zeros(0)
    p = np.linalg.eigvals(A).astype(complex)
    if dt is not None:
        with np.errstate(divide="ignore"):
            return np.abs(np.log(p)) / dt
    return np.abs(p)


def _resonances(A, dt: float | None) -> np.ndarray:
    """Points around each lightly damped pole's resonance, rad/s."""
    if not A.shape[0]:
        return np.zeros(0)
    p = np.linalg.eigvals(A).astype(complex)
    if dt is not None:
        p = np.log(p[np.abs(p) > 0]) / dt
    wn = np.abs(p)
    ok = wn > 0
    p, wn = p[ok], wn[ok]
    zeta = np.clip(np.abs(p.real) / wn, 1e-9, 1.0)
    k = np.array([-3.0, -1.5, -0.5, 0.0, 0.5, 1.5, 3.0])
    return (np.abs(p.imag)[:, None] * (1.0 + np.outer(zeta, k))).ravel()


def _refine(resp, s_of, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bisect (in log w) every interval where the phase turns by more than 2 deg
    or, near |L| = 1, ln|L| changes by more than 0.02."""
    Lw = resp(s_of(w))
    for _ in range(60):
        with np.errstate(all="ignore"):
            turn = np.abs(np.angle(Lw[1:] / Lw[:-1]))
            g = np.log(np.abs(Lw))
        near = np.minimum(np.abs(g[1:]), np.abs(g[:-1])) < 1.0
        bad = (turn > _PHASE_STEP) | (near & (np.abs(np.diff(g)) > _LOG_STEP))
        bad &= w[1:] > w[:-1] * (1 + 1e-12)
        bad &= np.isfinite(Lw[1:]) & np.isfinite(Lw[:-1])
        k = np.flatnonzero(bad)
        if not k.size or w.size + k.size > _MAX_POINTS:
            break
        mid = np.sqrt(w[k] * w[k + 1])
        Lm = resp(s_of(mid))
        order = np.argsort(np.concatenate([w, mid]), kind="stable")
        w = np.concatenate([w, mid])[order]
        Lw = np.concatenate([Lw, Lm])[order]
    return w, Lw


def _root(f, a: float, b: float) -> float:
    """The root of ``f`` in ``[a, b]``, where the scan saw a sign change. When
    ``f`` alone sees none (the scan's batched evaluation and this one differ
    by round-off next to a root), the end nearer to zero is the root; the
    crossover's own check then says whether it holds."""
    from scipy.optimize import brentq
    fa, fb = f(a), f(b)
    if fa == 0.0 or fb == 0.0 or (fa > 0) == (fb > 0):
        return float(a if abs(fa) <= abs(fb) else b)
    return float(brentq(f, a, b, xtol=1e-15 * b, rtol=4 * np.finfo(float).eps, maxiter=200))


def _siso_matrices(L):
    import control as ct
    if not isinstance(L, ct.StateSpace):
        try:
            L = ct.ss(L)
        except Exception as e:  # noqa: BLE001  (python-control raises several types)
            raise InputError(f"find_crossovers needs a linear system, got {type(L).__name__}: {e}") from None
    if L.ninputs != 1 or L.noutputs != 1:
        raise InputError(f"crossovers are for one loop: L has {L.ninputs} inputs and {L.noutputs} outputs")
    A, B, C, D = (np.asarray(M, float) for M in (L.A, L.B, L.C, L.D))
    if not all(np.isfinite(M).all() for M in (A, B, C, D)):
        raise InputError("the loop gain has NaN or infinite entries in its matrices")
    if L.dt is True:
        raise InputError("the loop gain is discrete with an unspecified sample time (dt=True); give it one")
    dt = float(L.dt) if L.isdtime(strict=True) else None
    return A, B, C, D, dt


def closed_loop_poles(L) -> np.ndarray:
    """Poles of the unity negative feedback loop around ``L``: eigenvalues of
    ``A - B (1 + D)^-1 C`` (continuous: 1/s; sampled: z)."""
    A, B, C, D, _ = _siso_matrices(L)
    if abs(1.0 + D[0, 0]) < 1e-14:
        raise InputError("the loop 1 + L is not well posed (L's feedthrough is -1)")
    return np.linalg.eigvals(A - B @ C / (1.0 + D[0, 0])) if A.shape[0] else np.zeros(0, complex)


def poles_stable(poles: np.ndarray, dt: float | None) -> bool:
    """Continuous: every real part < 0; sampled (``dt``): every modulus < 1."""
    poles = np.asarray(poles)
    if not poles.size:
        return True
    return bool(np.abs(poles).max() < 1.0) if dt is not None else bool(poles.real.max() < 0.0)


def find_crossovers(L, band: tuple[float, float] | None = None) -> Crossovers:
    """All gain and phase crossovers of a SISO loop gain, refined and checked.

    Parameters
    ----------
    L : control.StateSpace or control.TransferFunction
        Loop gain with the negative-feedback convention (the closed loop is
        ``L / (1 + L)``); continuous, or discrete with a sample time.
    band : (float, float), optional
        Searched frequencies, rad/s. Default: from four decades below the
        slowest pole or zero (and a thousand times above integrators that
        rounding moved off the origin, where ``L`` is not computable) to four
        decades above the fastest pole, zero and high-frequency gain; a
        sampled loop up to its Nyquist frequency ``pi / dt``.

    Returns
    -------
    Crossovers
        Every crossover with its margin and its check.
    """
    A, B, C, D, dt = _siso_matrices(L)
    nyquist = math.pi / dt if dt is not None else None
    scales = _scales(A, B, C, D, dt)
    top = nyquist if nyquist is not None else (scales.max() if scales.size else 1.0)
    # poles this close to the origin (z = 1) are integrators moved by rounding (a double or triple
    # pole splits by eps^(1/2..1/3)): L is infinite at w = 0 and is computed reliably only well above them
    origin = _pole_frequencies(A, dt)
    origin = origin[origin < 1e-6 * top]
    if band is None:
        rest = scales[scales >= 1e-6 * top]
        lo = (rest.min() if rest.size else top) * 1e-4
        if origin.size:
            lo = max(lo, 1e3 * origin.max())
        hi = nyquist if nyquist is not None else top * 1e4
        lo = min(lo, hi * 1e-3)
    else:
        lo, hi = (float(b) for b in band)
        if not (0 < lo < hi and math.isfinite(hi)):
            raise InputError(f"band = {band!r}: give 0 < low < high, rad/s")
        if nyquist is not None:
            hi = min(hi, nyquist)
    stable = poles_stable(closed_loop_poles(L), dt)
    if not A.shape[0] or not (np.any(B) and np.any(C)):  # a constant loop gain: one point of the Nyquist plot
        d = float(D[0, 0])
        phase = [PhaseCrossover(0.0, 1.0 / abs(d), 0.0, True)] if d < 0 else []
        note = "the loop gain is a constant: |L| = 1 everywhere" if abs(abs(d) - 1.0) <= TOLERANCE else ""
        return Crossovers([], phase, (float(lo), float(hi)), dt, stable, note)
    resp = _Response(A, B, C, D)
    s_of = (lambda w: np.exp(1j * w * dt)) if dt is not None else (lambda w: 1j * w)
    w0 = np.concatenate([np.logspace(math.log10(lo), math.log10(hi), 3000), _resonances(A, dt), scales])
    w0 = np.unique(w0[(w0 >= lo) & (w0 <= hi)])
    w, Lw = _refine(resp, s_of, w0)

    def direct(x: float) -> complex:
        return _direct(A, B, C, D, complex(s_of(x)))

    def gain_crossover(x: float) -> GainCrossover:
        v = direct(x)
        pm = float(np.remainder(np.angle(v), 2 * math.pi) - math.pi)
        res = abs(v) - 1.0
        return GainCrossover(x, pm, float(np.remainder(pm, 2 * math.pi)) / x, float(res), abs(res) <= TOLERANCE)

    def phase_crossover(x: float) -> PhaseCrossover | None:
        v = direct(x)
        if not np.isfinite(v) or v.real >= 0:
            return None
        res = float(abs(math.pi - abs(np.angle(v))))
        return PhaseCrossover(x, 1.0 / abs(v), res, res <= TOLERANCE)

    def log_gain(x: float) -> float:  # ln|L|: zero at a gain crossover
        return math.log(abs(resp(s_of(x))[0]))

    def sin_phase(x: float) -> float:  # Im L / |L|: zero where L is real
        v = resp(s_of(x))[0]
        return float(v.imag / abs(v))

    with np.errstate(all="ignore"):
        g = np.log(np.abs(Lw))
        h = Lw.imag / np.abs(Lw)
    fin = np.isfinite(g) & np.isfinite(h)
    gain: list[GainCrossover] = []
    phase: list[PhaseCrossover] = []
    for k in range(w.size - 1):
        if not (fin[k] and fin[k + 1]):
            continue
        if g[k] == 0.0:
            gain.append(gain_crossover(float(w[k])))
        elif g[k] * g[k + 1] < 0:
            gain.append(gain_crossover(_root(log_gain, w[k], w[k + 1])))
        if h[k] == 0.0 and Lw[k].real < 0:
            c = phase_crossover(float(w[k]))
        elif h[k] * h[k + 1] < 0 and (Lw[k].real < 0 or Lw[k + 1].real < 0):
            c = phase_crossover(_root(sin_phase, w[k], w[k + 1]))
        else:
            c = None
        if c is not None:
            phase.append(c)
    # the ends, where L is real: w = 0 (when L is finite there) and the Nyquist frequency
    for x, s in ((0.0, 1.0 if dt is not None else 0.0), (nyquist, -1.0)):
        if x is None or (x == nyquist and hi < nyquist) or (x == 0.0 and origin.size):
            continue
        v = _direct(A, B, C, D, complex(s))
        if np.isfinite(v) and abs(v) < 1e12 and v.real < 0:
            # the same crossing found by the scan, rounded off the end: keep the end's exact one
            phase = [c for c in phase if abs(c.frequency - x) > 1e-6 * max(x, lo)]
            res = float(abs(math.pi - abs(np.angle(v))))
            phase.append(PhaseCrossover(float(x), 1.0 / abs(v), res, res <= TOLERANCE))
    phase.sort(key=lambda c: c.frequency)
    note = ""
    # an end where |L| is near 1 and still changing (not yet on a constant asymptote)
    slope = lambda a, b: abs((g[b] - g[a]) / math.log(w[b] / w[a]))  # noqa: E731
    ends = [(lo, g[0], slope(0, 1))] + ([(hi, g[-1], slope(-2, -1))] if dt is None else [])
    near = [f"{x:.3g}" for x, gx, sx in ends if np.isfinite(gx) and abs(gx) < math.log(2.0) and sx > 1e-3]
    if near and band is None:
        note = (f"|L| is within a factor 2 of 1 at {' and '.join(near)} rad/s, an end of the searched band "
                f"{lo:.3g}..{hi:.3g} rad/s: a crossover beyond it is not excluded")
    return Crossovers(gain, phase, (float(lo), float(hi)), dt, stable, note)
