"""Checks of an FMU's model description made when it is loaded.

fmpy reads a ``modelDescription.xml`` without checking the values inside;
these checks turn what would become a raw traceback later (``start="twenty"``)
or silently wrong results (two different variables on one value
reference) into one :class:`~mbfmu.errors.InputError` naming the file and
the variables.
"""
from __future__ import annotations

from typing import Any

from ..errors import InputError

_NUMERIC = {"Real": float, "Integer": int, "Enumeration": int}
_SETTABLE = ("input", "parameter")


def _start_problem(v: Any) -> str | None:
    start = v.start
    if start is None or isinstance(start, (int, float, bool)):
        return None
    text = str(start).strip()
    if v.type == "Boolean":
        return None if text in ("true", "false", "1", "0") else f"start={text!r} is not a Boolean (true/false)"
    conv = _NUMERIC.get(v.type)
    if conv is None:
        return None
    try:
        conv(text)
    except ValueError:
        return f"start={text!r} is not {'a number' if v.type == 'Real' else 'an integer'}"
    return None


def check_model_description(md: Any, path: str) -> None:
    """Raise :class:`InputError` listing the problems of ``md`` (from fmpy) read from ``path``.

    Checked: start values that are not of the variable's type, and value
    references shared by two variables of one type that cannot be aliases
    (two of them settable -- inputs or parameters -- or different start values).
    """
    problems = []
    by_ref: dict[tuple[str, int], list[Any]] = {}
    for v in md.modelVariables:
        bad = _start_problem(v)
        if bad:
            problems.append(f"variable {v.name!r}: {bad}")
        by_ref.setdefault((v.type, v.valueReference), []).append(v)
    for (typ, vr), group in by_ref.items():
        if len(group) < 2:
            continue
        settable = [v.name for v in group if v.causality in _SETTABLE]
        starts = {str(v.start) for v in group if v.start is not None}
        if len(settable) > 1 or len(starts) > 1:
            names = ", ".join(repr(v.name) for v in group)
            why = "two of them can be set" if len(settable) > 1 else f"their start values differ ({', '.join(sorted(starts))})"
            problems.append(f"variables {names} share {typ} value reference {vr} but cannot be aliases: {why}")
    if problems:
        raise InputError(f"{path!r}: invalid modelDescription.xml: " + "; ".join(problems))
