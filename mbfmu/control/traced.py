"""A python-control ``NonlinearIOSystem`` traced through the expression tape.

:func:`trace_system` calls a discrete system's update and output functions
once with symbolic state and inputs (:mod:`mbfmu.dynamics.symbolic`, the tape
the native plants use for their parameters): arithmetic, ``numpy``
elementwise functions the tape knows (``sin``, ``cos``, ``tan``, ``sqrt``,
``exp``, ``log``, ``abs``, ``arcsin``, ``arccos``, ``arctan``,
``arctan2``, ``hypot``, powers) and comparisons, which become guards: the
branch the trace took is the only one the tape holds, and a native FMU
refuses inputs and states that would take the other, naming the condition.

A function that does not trace (an operation the tape does not record, a
conversion to ``float`` that drops the expression, a dependence on the time)
is refused with an :class:`~mbfmu.errors.InputError` naming what broke the
trace. The tape is then checked against the Python functions at states and
inputs around the traced point (1e-12), so that an expression lost without
an error (``float(x)``, a constant computed from an input) is found, not
exported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dynamics import symbolic
from ..errors import InputError

_REL_TOL = 1e-12
_PROBES = 12


@dataclass
class TracedSystem:
    """The tape of a traced system.

    Attributes
    ----------
    tape : symbolic.Tape
        Leaves: the time (node 0, unused), the states, the inputs.
    out : list of int
        The nodes of the next state (``nx``), then of the outputs (``ny``).
    nx, nu, ny : int
        Sizes of the state, the inputs and the outputs.
    """

    tape: symbolic.Tape
    out: list[int]
    nx: int
    nu: int
    ny: int

    def evaluate(self, x: Any, u: Any) -> tuple[np.ndarray, np.ndarray, int | None]:
        """``(next state, outputs, broken guard or None)`` as the C evaluator computes them."""
        v = self.tape.evaluate(np.concatenate([[0.0], np.asarray(x, float), np.asarray(u, float)]))
        values = v[self.out]
        return values[:self.nx], values[self.nx:], self.tape.failed_guard(v)


def _what_broke(exc: BaseException) -> str:
    """The operation named by the error that stopped a trace."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    m = re.search(r"no callable (\w+) method", text)
    if m:
        return f"numpy's {m.group(1)} (the tape records {', '.join(sorted(_KNOWN))})"
    return f"{type(exc).__name__}: {text}"


_KNOWN = {"sin", "cos", "tan", "sqrt", "exp", "log", "abs", "arcsin", "arccos", "arctan", "arctan2", "hypot",
          "+", "-", "*", "/", "**", "comparisons"}


def _call(sys: Any, which: str, fn: Any, t: Any, x: np.ndarray, u: np.ndarray, n: int, default: Any) -> list:
    if fn is None:
        return list(default)
    try:
        out = fn(t, x, u, sys.params)
        flat = np.asarray(out, dtype=object).reshape(-1)
    except InputError:
        raise
    except Exception as exc:  # the operation that broke the trace, by name
        raise InputError(f"system {sys.name!r}: its {which} function does not trace through the expression "
                         f"tape: {_what_broke(exc)}; export it with runtime='python'") from None
    if flat.size != n:
        raise InputError(f"system {sys.name!r}: its {which} function returns {flat.size} values, expected {n}")
    return list(flat)


def trace_system(sys: Any) -> TracedSystem:
    """Trace a discrete ``NonlinearIOSystem`` at zero state and inputs, and check the tape.

    Parameters
    ----------
    sys : control.NonlinearIOSystem
        Discrete (``dt > 0``); its update and output functions take
        ``(t, x, u, params)``.

    Returns
    -------
    TracedSystem

    Raises
    ------
    InputError
        A continuous system, a function that does not trace (naming the
        operation), one that depends on the time, or a tape that does not
        reproduce the functions.
    """
    if not (isinstance(sys.dt, (int, float)) and not isinstance(sys.dt, bool) and sys.dt > 0):
        raise InputError(f"system {sys.name!r}: a traced NonlinearIOSystem exports natively when it is discrete "
                         f"with a sample time (dt = {sys.dt!r}); export it with runtime='python'")
    nx, nu, ny = sys.nstates, sys.ninputs, sys.noutputs
    names = ["t"] + [f"x[{i + 1}]" for i in range(nx)] + list(sys.input_labels)
    names[1:1 + nx] = list(sys.state_labels)
    with symbolic.recording(names, np.zeros(1 + nx + nu)) as tape:
        t, xs, us = tape.params[0], tape.params[1:1 + nx], tape.params[1 + nx:]
        x, u = np.array(xs + [None], dtype=object)[:nx], np.array(us + [None], dtype=object)[:nu]
        nxt = _call(sys, "update", sys.updfcn, t, x, u, nx, [])
        out = _call(sys, "output", sys.outfcn, t, x, u, ny, xs)
        nodes = []
        for e in nxt + out:
            if isinstance(e, symbolic.Sym):
                nodes.append(e.i)
            elif isinstance(e, (int, float, np.integer, np.floating)) and not isinstance(e, bool):
                nodes.append(tape.const(float(e)))
            else:
                raise InputError(f"system {sys.name!r}: its functions return {type(e).__name__} values; a "
                                 "traced system returns numbers")
    if any(a == 0 or b == 0 for _, a, b, _ in tape.nodes):
        raise InputError(f"system {sys.name!r}: its functions depend on the time t; a native controller FMU "
                         "evaluates time-invariant laws (export it with runtime='python')")
    traced = TracedSystem(tape, nodes, nx, nu, ny)
    _check(sys, traced)
    return traced


def _check(sys: Any, traced: TracedSystem) -> None:
    """The tape equals the Python functions at states and inputs around the traced point."""
    rng = np.random.default_rng(0)
    compared = 0
    for k in range(_PROBES):
        scale = 10.0 ** (k % 4 - 2)
        x, u = rng.normal(scale=scale, size=traced.nx), rng.normal(scale=scale, size=traced.nu)
        xn, y, broken = traced.evaluate(x, u)
        if broken is not None:
            continue  # another branch: the FMU refuses it
        want_x = np.asarray(sys._rhs(0.0, x, u), float).reshape(-1) if traced.nx else np.zeros(0)
        want_y = np.asarray(sys._out(0.0, x, u), float).reshape(-1)
        got, want = np.concatenate([xn, y]), np.concatenate([want_x, want_y])
        if not np.allclose(got, want, rtol=_REL_TOL, atol=_REL_TOL * max(1.0, float(np.abs(want).max(initial=0)))):
            raise InputError(f"system {sys.name!r}: its functions do not follow the traced expressions at x = "
                             f"{x.tolist()}, u = {u.tolist()} (a float() or int() conversion, or a value computed "
                             "outside the tape); export it with runtime='python'")
        compared += 1
    if not compared:
        raise InputError(f"system {sys.name!r}: every probe around its traced point takes another branch of its "
                         "comparisons: the tape cannot be checked; export it with runtime='python'")
