"""An FMU's directional derivatives checked against central differences before use.

A third-party FMU may declare ``providesDirectionalDerivative`` and return
wrong columns (the Reference FMUs' VanDerPol returns 0 for ``d(x)/d(x)``, so
its ``C`` comes out zero though its outputs are its states). Before the
directional derivatives ``J = [A B; C D]`` are used, :func:`checked_jacobians`
probes them in two random directions ``d`` (seeded, scaled to the point like
the central-difference steps) against central differences of the FMU's
derivatives and outputs::

    |J d - (F(z + h d) - F(z - h d)) / (2 h)|  <=  rtol (|J| |d| + |F'd|) + truncation + roundoff

row by row (truncation: the change of the difference quotient from ``h`` to
``2 h``, which bounds its ``O(h^2)`` error where the true entry is zero), with ``F = (dx/dt, y)``, ``z = (x, u)``, ``h = eps^(1/3)`` and
``rtol = 1e-5``: relative to the size of the terms that make up each row.
When a row fails, the whole Jacobian is taken by central differences
instead and a one-line :class:`DerivativeWarning` names the FMU and the
entries that disagree.
"""
from __future__ import annotations

import warnings

import numpy as np

from .fmu_jacobians import CENTRAL, DIRECTIONAL, FmuJacobians, jacobians
from ..cosim.fmi.me_instance import ModelExchangeInstance

RTOL = 1e-5
_EPS = np.finfo(float).eps
_EPS3 = _EPS ** (1.0 / 3.0)


class DerivativeWarning(UserWarning):
    """An FMU's directional derivatives disagree with its own central differences."""


def _stack(jac: FmuJacobians) -> np.ndarray:
    return np.block([[jac.A, jac.B], [jac.C, jac.D]]) if jac.A.size + jac.D.size else \
        np.zeros((len(jac.xdot0) + len(jac.y0), len(jac.x0) + len(jac.u0)))


def probe(inst: ModelExchangeInstance, jac: FmuJacobians, rtol: float = RTOL, seed: int = 0) -> np.ndarray:
    """Rows of ``[A B; C D]`` whose directional derivatives fail the two-direction probe.

    Parameters
    ----------
    inst : ModelExchangeInstance
        The instance ``jac`` was taken from (its point is restored afterwards).
    jac : FmuJacobians
        Jacobians from the FMU's directional derivatives.
    rtol : float
        Relative tolerance against the size of each row's terms.
    seed : int
        Seed of the random directions (the check is reproducible).

    Returns
    -------
    ndarray of int
        Indices of the failing rows (derivatives first, then outputs); empty when they agree.
    """
    n, m = len(jac.x0), len(jac.u0)
    z0 = np.concatenate([jac.x0, jac.u0])
    J = _stack(jac)
    rng = np.random.default_rng(seed)
    bad = np.zeros(J.shape[0], bool)
    try:
        for _ in range(2):
            d = rng.standard_normal(n + m) * np.maximum(1.0, np.abs(z0))
            fds, roundoff = [], 0.0
            for h in (_EPS3, 2 * _EPS3):
                out = []
                for s in (1.0, -1.0):
                    z = z0 + s * h * d
                    inst.set_point(z[:n], z[n:])
                    out.append(np.concatenate(inst.evaluate()))
                fds.append((out[0] - out[1]) / (2 * h))
                roundoff = roundoff + 10 * _EPS * (np.abs(out[0]) + np.abs(out[1])) / (2 * h)
            fd = fds[0]
            size = np.abs(J) @ np.abs(d) + np.abs(fd)
            truncation = np.abs(fds[1] - fds[0])  # the O(h^2) error of the difference, estimated at 2h
            bad |= ~(np.abs(J @ d - fd) <= rtol * size + truncation + roundoff)
    finally:
        inst.set_point(jac.x0, jac.u0)
    return np.flatnonzero(bad)


def mismatched_entries(jac: FmuJacobians, ref: FmuJacobians, rows: np.ndarray, rtol: float = RTOL) -> list[str]:
    """Names ``d(row)/d(column)`` of the entries of ``rows`` where ``jac`` and ``ref`` disagree.

    Parameters
    ----------
    jac, ref : FmuJacobians
        The directional-derivative and central-difference Jacobians.
    rows : array_like of int
        Rows to compare (from :func:`probe`).
    rtol : float
        Relative tolerance (against the larger of the two entries, or 1e-6 of the row's largest).

    Returns
    -------
    list of str
        ``["d(x0)/d(x0)", ...]``: derivatives are named ``der(state)``.
    """
    J, R = _stack(jac), _stack(ref)
    row_names = [f"der({s})" for s in jac.states] + list(jac.outputs)
    col_names = list(jac.states) + list(jac.inputs)
    names = []
    for i in rows:
        floor = 1e-6 * max(np.abs(R[i]).max(initial=0.0), np.abs(J[i]).max(initial=0.0))
        for j in range(J.shape[1]):
            if abs(J[i, j] - R[i, j]) > rtol * max(abs(J[i, j]), abs(R[i, j]), floor):
                names.append(f"d({row_names[i]})/d({col_names[j]})")
    return names or [f"row {row_names[i]}" for i in rows]


def checked_jacobians(inst: ModelExchangeInstance, x0=None, u0=None, name: str | None = None,
                      ) -> tuple[FmuJacobians, bool]:
    """The FMU's Jacobians: its directional derivatives when they pass :func:`probe`.

    Parameters
    ----------
    inst : ModelExchangeInstance
        The instantiated FMU.
    x0, u0 : array_like, optional
        Continuous states and inputs (default: the instance's current point).
    name : str, optional
        The FMU's name in the warning (default its file name).

    Returns
    -------
    (FmuJacobians, bool)
        The Jacobians and whether they are the FMU's checked directional
        derivatives (``False``: central differences of the FMU, because it
        provides no directional derivatives or they failed the probe, with a
        :class:`DerivativeWarning` naming the entries).
    """
    if not inst.provides_directional:
        return jacobians(inst, x0, u0, CENTRAL), False
    jac = jacobians(inst, x0, u0, DIRECTIONAL)
    rows = probe(inst, jac)
    if rows.size == 0:
        return jac, True
    ref = jacobians(inst, jac.x0, jac.u0, CENTRAL)
    entries = mismatched_entries(jac, ref, rows)
    shown = ", ".join(entries[:8]) + (f" and {len(entries) - 8} more" if len(entries) > 8 else "")
    warnings.warn(f"{name or inst.path.name}: its directional derivatives (getDirectionalDerivative) disagree "
                  f"with central differences of the FMU beyond {RTOL:g} relative at {shown}; "
                  "using central differences of the FMU", DerivativeWarning, stacklevel=2)
    return ref, False
