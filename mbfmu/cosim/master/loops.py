"""Algebraic loops at a communication point.

A loop is a group of units whose outputs depend directly on inputs fed by
each other's outputs (found by :func:`~mbfmu.cosim.system.exchange_order`).
FMI 2.0 lets a master set inputs and read outputs between steps, so the loop
is solved there, without stepping and without rollback: fixed-point
(Gauss-Seidel) sweeps over the group, and Newton's method with a
finite-difference Jacobian when the sweeps do not contract (for example
``|k1 k2| > 1`` in a loop of two gains). The compiled loop
(:mod:`.fast_loop`) solves loops of FMUs with the same iteration in C.

A loop here is a list of ``(unit, j, source unit, k)``: input ``j`` of
``unit`` is fed by output ``k`` of ``source unit``, both in the group.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ...errors import CosimError
from ..units import Unit

NEWTON_ITERATIONS = 30


def solve_loop(block: Sequence[Unit], loop: Sequence[tuple], set_inputs: Callable[[Unit], None], t: float,
               tol: float, max_iterations: int) -> int:
    """Make the inputs of ``block`` consistent with its outputs; return the iterations used.

    Each sweep sets every unit's inputs from the current outputs, pushes them
    and reads the unit's outputs. Converged when every loop input equals its
    source output to ``tol * (1 + |y|)``. After 4 sweeps that shrink the
    residual by less than half, switches to Newton.
    """
    prev = math.inf
    for it in range(1, max_iterations + 1):
        for u in block:  # one Gauss-Seidel sweep over the loop
            set_inputs(u)
            u.push()
            u.pull()
        err = 0.0
        for u, j, src, k in loop:
            y = src.y[k]
            e = abs(y - u.u[j]) / (tol * (1.0 + abs(y)))
            if e > err:
                err = e
        if err <= 1.0:
            return it
        if it >= 4 and err > 0.5 * prev:  # not contracting
            break
        prev = err
    return it + newton(block, loop, set_inputs, t, tol)


def newton(block: Sequence[Unit], loop: Sequence[tuple], set_inputs: Callable[[Unit], None], t: float,
           tol: float) -> int:
    """Solve ``z = G(z)`` for the loop inputs ``z`` by Newton's method; return the iterations.

    ``G`` sets ``z``, pushes and pulls every unit of the block and returns the
    source outputs. The Jacobian of ``z - G(z)`` is built by forward
    differences (one ``G`` per loop input).
    """
    def G(z: np.ndarray) -> np.ndarray:
        for (u, j, _, _), zi in zip(loop, z):
            u.u[j] = zi
        for u in block:
            u.push()
            u.pull()
        return np.array([src.y[k] for _, _, src, k in loop])

    z = np.array([u.u[j] for u, j, _, _ in loop], float)
    for it in range(1, NEWTON_ITERATIONS + 1):
        F = z - G(z)
        if np.max(np.abs(F) / (1.0 + np.abs(z))) <= tol:
            break
        J = np.empty((len(z), len(z)))
        for i in range(len(z)):
            dz = 1e-7 * max(1.0, abs(z[i]))
            zp = z.copy()
            zp[i] += dz
            J[:, i] = ((zp - G(zp)) - F) / dz
        try:
            z = z - np.linalg.solve(J, F)
        except np.linalg.LinAlgError:
            raise CosimError(loop_message(loop, t, "the loop's Jacobian is singular")) from None
    else:
        raise CosimError(loop_message(loop, t, f"no convergence after {NEWTON_ITERATIONS} Newton iterations "
                                               f"(residual {np.max(np.abs(F)):.3g})"))
    G(z)
    for u in block:  # consistent values everywhere, inputs from outside the loop too
        set_inputs(u)
        u.push()
        u.pull()
    return it


def loop_message(loop: Sequence[tuple], t: float, why: str) -> str:
    """``algebraic loop (a.y -> b.u, ...) at t = ... s: why``."""
    vars_ = ", ".join(f"{src.name}.{src.outputs[k]} -> {u.name}.{u.inputs[j]}" for u, j, src, k in loop)
    return f"algebraic loop ({vars_}) at t = {t!r} s: {why}"
