"""Jacobians of a Model Exchange FMU: from its directional derivatives, or central differences.

An FMI 2.0 or 3.0 FMU with a ``<ModelExchange>`` interface is evaluated at a
point ``(x, u)`` of its continuous states and inputs through
:class:`~mbfmu.cosim.fmi.me_instance.ModelExchangeInstance` (the fmpy calls):

* ``providesDirectionalDerivative="true"``: one directional-derivative call
  per state and input (a unit seed) gives the columns of ``[A B; C D]``
  exactly, with no perturbation runs;
* otherwise central differences of the state derivatives and the outputs
  with steps ``h_k = eps^(1/3) max(1, |z_k|)`` (2 evaluations per column).

``A = d(dx/dt)/dx``, ``B = d(dx/dt)/du``, ``C = dy/dx``, ``D = dy/du`` in the
FMU's own variables and units (SI for mbfmu's FMUs).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cosim.fmi.me_instance import ModelExchangeInstance
from ..errors import InputError

DIRECTIONAL = "directional derivatives"
CENTRAL = "central difference"
_EPS3 = np.finfo(float).eps ** (1.0 / 3.0)


@dataclass
class FmuJacobians:
    """``A, B, C, D`` of a Model Exchange FMU at ``(x0, u0)`` and how they were obtained.

    Attributes
    ----------
    A, B, C, D : ndarray
        ``(n, n)``, ``(n, m)``, ``(p, n)``, ``(p, m)``.
    method : str
        ``"directional derivatives"`` or ``"central difference"``.
    states, inputs, outputs : list of str
        The FMU's variable names of the columns and rows.
    x0, u0, y0, xdot0 : ndarray
        The point: continuous states, inputs, outputs and state derivatives.
    evaluations : int
        Calls of ``fmi2GetDirectionalDerivative`` or of the derivative-and-output evaluation.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    method: str
    states: list
    inputs: list
    outputs: list
    x0: np.ndarray
    u0: np.ndarray
    y0: np.ndarray
    xdot0: np.ndarray
    evaluations: int


def jacobians(inst: ModelExchangeInstance, x0=None, u0=None, method: str = "auto") -> FmuJacobians:
    """``A, B, C, D`` of the instance at ``(x0, u0)`` (default: its current point).

    Parameters
    ----------
    inst : ModelExchangeInstance
    x0, u0 : array_like, optional
        Continuous states and inputs (the FMU's units).
    method : {"auto", "directional derivatives", "central difference"}
        ``"auto"``: directional derivatives when the FMU provides them.
    """
    x0 = inst.state() if x0 is None else np.asarray(x0, float).reshape(-1)
    u0 = inst.input_values() if u0 is None else np.asarray(u0, float).reshape(-1)
    if x0.size != inst.n or u0.size != inst.m:
        raise InputError(f"{inst.path.name}: {x0.size} states and {u0.size} inputs given; the FMU has "
                         f"{inst.n} continuous states and {inst.m} inputs")
    if method == "auto":
        method = DIRECTIONAL if inst.provides_directional else CENTRAL
    if method not in (DIRECTIONAL, CENTRAL):
        raise InputError(f"Jacobian method {method!r}: choose 'auto', {DIRECTIONAL!r} or {CENTRAL!r}")
    if method == DIRECTIONAL and not inst.provides_directional:
        raise InputError(f"{inst.path.name} provides no directional derivatives "
                         "(providesDirectionalDerivative is false)")
    n, m = inst.n, inst.m
    inst.set_point(x0, u0)
    xdot0, y0 = inst.evaluate()
    z0 = np.concatenate([x0, u0])
    cols = []
    if method == DIRECTIONAL:
        cols = [inst.directional_column(j) for j in range(n + m)]
        evaluations = n + m
    else:
        h = _EPS3 * np.maximum(1.0, np.abs(z0))
        for j in range(n + m):
            out = []
            for s in (1.0, -1.0):
                z = z0.copy()
                z[j] += s * h[j]
                inst.set_point(z[:n], z[n:])
                out.append(np.concatenate(inst.evaluate()))
            cols.append((out[0] - out[1]) / (2 * h[j]))
        inst.set_point(x0, u0)
        evaluations = 2 * (n + m)
    J = np.array(cols).T if cols else np.zeros((n + len(y0), 0))
    return FmuJacobians(J[:n, :n], J[:n, n:], J[n:, :n], J[n:, n:], method, list(inst.states), list(inst.inputs),
                        list(inst.outputs), x0, u0, y0, xdot0, evaluations)


def fmu_jacobians(path: str | Path, x0=None, u0=None, method: str = "auto") -> FmuJacobians:
    """:func:`jacobians` of the Model Exchange FMU ``path`` at ``(x0, u0)`` (default: its start point)."""
    with ModelExchangeInstance(path) as inst:
        return jacobians(inst, x0, u0, method)
