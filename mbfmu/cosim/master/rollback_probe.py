"""Rollback probe: check that each unit really restores a saved state.

Adaptive and iterative runs repeat steps from saved states. Some FMUs declare
``canGetAndSetFMUstate`` but do not restore correctly (a saved state missing
part of the model, a restore that is a no-op), which makes those runs
silently wrong. Before such a run, :func:`probe_rollback` takes each unit a
few steps away from its start with non-trivial inputs (a state still at its
start values would hide a restore that is off by a relative error), saves the
state, takes one step (with input slopes where the run sends them: Dymola's
Controller restores a state saved before its first such step inexactly), sets other
inputs and reads the outputs (as the exchange at the end of a step does: some
exported FMUs restore exactly except after that), restores, takes the same
step again and compares
the two results: outputs and, for FMUs, every Real variable it can read. They
must be identical to the bit, unless the run accepts restores up to a
relative tolerance (``rollback_tolerance``). The unit is then put back at its
start state and inputs.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from ...errors import CosimError
from ..units import Unit


def _observer(unit: Unit) -> tuple[list[str], Callable[[], Sequence[float]]]:
    """Names and a reader of what the probe compares: the outputs and the Real
    locals (an FMU's internal states are among them)."""
    names = list(unit.outputs) + [n for n, v in unit.variables.items()
                                  if v.causality == "local" and v.type == "Real"]
    try:
        return names, unit.getter(names)
    except Exception:  # a unit that cannot read its locals: outputs only
        return list(unit.outputs), unit.getter(list(unit.outputs))


WARMUP_STEPS = 3  # steps with excited inputs before the state is saved
EXCITATION = (1.0, -0.5, 0.75, 0.25)  # input offsets per warm-up step, times 1e-2 (1 + |start value|)


def _excite(unit: Unit, start: Sequence[float], k: int, h: float, derivatives: bool) -> None:
    """Real inputs moved off their start values (a different offset at each step ``k``);
    with ``derivatives``, also input slopes of the same size per step, sent as the run
    sends them to units that interpolate inputs."""
    d1 = [0.0] * len(unit.inputs)
    for j, n in enumerate(unit.inputs):
        if unit.variables[n].type == "Real":
            delta = 1e-2 * (1.0 + abs(start[j])) * EXCITATION[(k + j) % len(EXCITATION)]
            unit.u[j] = start[j] + delta
            d1[j] = -delta / h
    unit.push()
    if derivatives and unit.can_interpolate_inputs:
        unit.push_derivatives(d1, [0.0] * len(unit.inputs))


def _relative(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b))


def probe_rollback(units: Iterable[Unit], t0: float, h: float, tolerance: float = 0.0,
                   derivatives: bool = False) -> dict[str, float]:
    """Refuse, naming them, the units whose restored state does not repeat a step.

    Parameters
    ----------
    units : iterable of Unit
        Units set up at ``t0`` with their inputs pushed; those that cannot
        roll back are skipped. Each is left at its state and inputs before
        the probe.
    t0, h : float
        Start [s] and size [s] of the probe steps.
    tolerance : float
        Largest relative difference accepted between the step and its repeat
        (0: identical to the bit, the default).
    derivatives : bool
        The run sends input derivatives (iterative coupling, extrapolation):
        so does the probe, to units that interpolate inputs (some FMUs
        restore exactly, except what the derivatives drive).

    Returns
    -------
    dict
        The largest relative difference measured, per unit probed.

    Raises
    ------
    CosimError
        Naming each unit that fails, its variable that differs most, both
        values and the relative difference.
    """
    measured: dict[str, float] = {}
    failures = []
    for u in units:
        if not u.can_rollback:
            continue
        names, read = _observer(u)
        inputs = list(u.u)
        start = u.get_state()
        try:
            t = t0
            for k in range(WARMUP_STEPS):  # no slopes yet: the first step with them is probed
                _excite(u, inputs, k, h, False)
                u.do_step(t, h)
                t = t0 + (k + 1) * h
            saved = u.get_state()
            try:  # as the master repeats a step: restore, set the inputs (and slopes) again, step
                _excite(u, inputs, WARMUP_STEPS, h, derivatives)
                u.do_step(t, h)
                first = list(read())
                _excite(u, inputs, WARMUP_STEPS + 1, h, False)  # the exchange at the step's end: new
                u.pull()                                         # inputs set, outputs read
                u.set_state(saved)
                _excite(u, inputs, WARMUP_STEPS, h, derivatives)
                u.do_step(t, h)
                second = list(read())
            finally:
                u.free_state(saved)
        finally:
            u.set_state(start)
            u.free_state(start)
            for j, v in enumerate(inputs):
                u.u[j] = v
            u.push()
            u.pull()
        diffs = [(_relative(float(a), float(b)), n, a, b) for n, a, b in zip(names, first, second)]
        worst = max(diffs, default=(0.0, "", 0.0, 0.0), key=lambda d: d[0])
        measured[u.name] = worst[0]
        if worst[0] > tolerance:
            failures.append((u.name, t, *worst))
    if failures:
        parts = [f"unit {name!r} failed the rollback probe: the step from t = {t!r} s repeated after restoring "
                 f"its saved state gave {var} = {b!r} instead of {a!r} (relative difference {d:.3g})"
                 for name, t, d, var, a, b in failures]
        worst = max(d for _, _, d, *_ in failures)
        hint = (f"; pass rollback_tolerance={_round_up(worst)} (--rollback-tolerance) to accept restores this close"
                if math.isfinite(worst) and worst < 1e-3 else "")
        raise CosimError("; ".join(parts) + "; its state save/restore cannot be trusted, so adaptive and iterative "
                         "runs are refused" + hint)
    return measured


def _round_up(x: float) -> str:
    """``x`` rounded up to one significant digit, as text (2.1e-06 -> '3e-06')."""
    e = math.floor(math.log10(x)) if x > 0 else -16
    return f"{math.ceil(x / 10 ** e) * 10 ** e:.0e}".replace("e-0", "e-")
