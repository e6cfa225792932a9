"""Names of the ports and connections of a co-simulation system, as the linear
analyses take them: ``"unit.var"`` (a vector port ``"arm.q"`` stands for its
elements ``q[1]..q[n]``) and connections ``"a.y->b.u"``."""
from __future__ import annotations

import re
from typing import Any

from ..errors import InputError, unknown_name


def _elements(system, unit: str, var: str) -> list[str]:
    u = system.units.get(unit)
    if u is None:
        raise unknown_name(f"unknown unit {unit!r}", unit, system.units)
    if var in u.variables:
        return [var]
    found = sorted((int(m.group(1)), n) for n in u.variables
                   if (m := re.fullmatch(re.escape(var) + r"\[(\d+)\]", n)))
    if not found:
        raise unknown_name(f"unit {unit!r} has no variable {var!r}", var, u.variables)
    return [n for _, n in found]


def port_elements(system, full: str) -> list[tuple[str, str]]:
    """The scalar ports a port name stands for.

    Parameters
    ----------
    system : mbfmu.cosim.System
        The system.
    full : str
        ``"unit.var"``, a scalar or a whole vector.

    Returns
    -------
    list of (str, str)
        ``[(unit, element), ...]``.
    """
    if not isinstance(full, str) or "." not in full:
        raise InputError(f"{full!r} is not a 'unit.variable' name")
    unit, var = full.strip().split(".", 1)
    return [(unit, v) for v in _elements(system, unit, var)]


def parse_connection(system, text: str) -> list[Any]:
    """The connections of ``system`` named ``"a.y->b.u"`` (whole vectors allowed).

    Parameters
    ----------
    system : mbfmu.cosim.System
        The system.
    text : str
        ``"unit.output->unit.input"``.

    Returns
    -------
    list
        The system's connections, one per scalar element.
    """
    if not isinstance(text, str) or "->" not in text:
        raise InputError(f"{text!r} is not a connection 'unit.output->unit.input'")
    src, dst = (s.strip() for s in text.split("->", 1))
    srcs, dsts = port_elements(system, src), port_elements(system, dst)
    if len(srcs) != len(dsts):
        raise InputError(f"connection {text!r}: {len(srcs)} source elements but {len(dsts)} targets")
    found = []
    for (su, sv), (du, dv) in zip(srcs, dsts):
        match = [c for c in system.connections if (c.src_unit, c.src_var, c.dst_unit, c.dst_var) == (su, sv, du, dv)]
        if not match:
            raise InputError(f"the system has no connection {su}.{sv} -> {du}.{dv} (from {text!r})")
        found.append(match[0])
    return found


def label(unit: str, var: str) -> str:
    """The python-control label of ``unit.var``: ``"unit:var"`` (python-control
    refuses dots in signal names; any dot of the variable becomes ``:`` too,
    :func:`mbfmu.cosim.signal_names.unit_signal`).

    Parameters
    ----------
    unit, var : str
        Unit and variable name.

    Returns
    -------
    str
        The label.
    """
    from ..cosim.signal_names import unit_signal
    return unit_signal(unit, var)
