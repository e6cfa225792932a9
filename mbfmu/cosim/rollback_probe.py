"""Rollback probe: check that each unit really restores a saved state.

Adaptive and iterative runs repeat steps from saved states. Some FMUs declare
``canGetAndSetFMUstate`` but do not restore correctly (a saved state missing
part of the model, a restore that is a no-op), which makes those runs
silently wrong. Before such a run, :func:`probe_rollback` saves each unit's
state, takes one step, restores, takes the same step again and compares the
two results: outputs and, for FMUs, every Real variable it can read.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from ..errors import CosimError
from .units import Unit


def _observer(unit: Unit) -> tuple[list[str], Callable[[], Sequence[float]]]:
    """Names and a reader of what the probe compares: the outputs and the Real
    locals (an FMU's internal states are among them)."""
    names = list(unit.outputs) + [n for n, v in unit.variables.items()
                                  if v.causality == "local" and v.type == "Real"]
    try:
        return names, unit.getter(names)
    except Exception:  # a unit that cannot read its locals: outputs only
        return list(unit.outputs), unit.getter(list(unit.outputs))


def probe_rollback(units: Iterable[Unit], t0: float, h: float, rtol: float = 1e-12) -> None:
    """Refuse, naming it, the first unit whose restored state does not repeat a step.

    Parameters
    ----------
    units : iterable of Unit
        Units set up at ``t0`` with their inputs pushed; those that cannot
        roll back are skipped. Each is left at its state before the probe.
    t0, h : float
        Start [s] and size [s] of the probe step.
    rtol : float
        Relative tolerance of the comparison (a correct restore repeats the
        step exactly).

    Raises
    ------
    CosimError
        Naming the unit, the first variable that differs and both values.
    """
    for u in units:
        if not u.can_rollback:
            continue
        names, read = _observer(u)
        saved = u.get_state()
        try:
            u.do_step(t0, h)
            first = list(read())
            u.set_state(saved)
            u.do_step(t0, h)
            second = list(read())
            u.set_state(saved)
            u.pull()
        finally:
            u.free_state(saved)
        for n, a, b in zip(names, first, second):
            if not (a == b or math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)):
                raise CosimError(f"unit {u.name!r} failed the rollback probe: the step from t = {t0!r} s repeated "
                                 f"after restoring its saved state gave {n} = {b!r} instead of {a!r}; its state "
                                 "save/restore cannot be trusted, so adaptive and iterative runs are refused")
