"""Checks of an FMU's model description made when it is loaded.

fmpy reads a ``modelDescription.xml`` without checking the values inside;
these checks turn what would become a raw traceback later (``start="twenty"``)
or silently wrong results (two different variables on one value
reference) into one :class:`~mbfmu.errors.InputError` naming the file and
the variables.
"""
from __future__ import annotations

import re
from typing import Any

from ...errors import InputError

_NUMERIC = {"Real": float, "Integer": int, "Enumeration": int}
_SETTABLE = ("input", "parameter")
_VR_MAX = 2**32 - 1  # fmi2ValueReference / fmi3ValueReference are 32-bit unsigned
_CAUSALITY = {"parameter", "calculatedParameter", "structuralParameter", "input", "output", "local", "independent"}
_VARIABILITY = {"constant", "fixed", "tunable", "discrete", "continuous"}
_INITIAL = {"exact", "approx", "calculated"}
_C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _enum_problems(v: Any) -> list[str]:
    out = []
    for attr, allowed in (("causality", _CAUSALITY), ("variability", _VARIABILITY), ("initial", _INITIAL)):
        value = getattr(v, attr, None)
        if value is not None and value not in allowed:
            out.append(f"variable {v.name!r}: unknown {attr} {str(value)[:40]!r} (one of {', '.join(sorted(allowed))})")
    return out


def _identifier_problems(md: Any) -> list[str]:
    """A model identifier names the shared library ``binaries/<platform>/<id>.so``: a plain C name only."""
    out = []
    for kind in ("coSimulation", "modelExchange", "scheduledExecution"):
        iface = getattr(md, kind, None)
        ident = getattr(iface, "modelIdentifier", None) if iface is not None else None
        if iface is not None and not (isinstance(ident, str) and _C_NAME.fullmatch(ident)):
            out.append(f"{kind} modelIdentifier {str(ident)[:80]!r} is not a plain C name (letters, digits, '_'): "
                       "it names the FMU's shared library, which must lie inside the FMU")
    return out


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

    Checked: model identifiers that are not plain C names (one with ``../``
    would load a library from outside the FMU); value references outside
    the unsigned 32 bits of FMI (a larger one would wrap onto another
    variable); names given to two variables; unknown causality, variability
    and initial; start values that are not of the variable's type, and value
    references shared by two variables of one type that cannot be aliases
    (two of them settable -- inputs or parameters -- or different start values).
    """
    problems = _identifier_problems(md)
    by_ref: dict[tuple[str, int], list[Any]] = {}
    names: dict[str, int] = {}
    for v in md.modelVariables:
        names[v.name] = names.get(v.name, 0) + 1
        vr = v.valueReference
        if not isinstance(vr, int) or isinstance(vr, bool) or not 0 <= vr <= _VR_MAX:
            problems.append(f"variable {v.name!r}: value reference {str(vr)[:40]} is outside 0..{_VR_MAX}")
            continue
        problems += _enum_problems(v)
        bad = _start_problem(v)
        if bad:
            problems.append(f"variable {v.name!r}: {bad}")
        by_ref.setdefault((v.type, v.valueReference), []).append(v)
    dup = [n for n, k in names.items() if k > 1]
    if dup:
        problems.append(f"variable names given twice: {', '.join(repr(n) for n in dup[:10])}")
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
