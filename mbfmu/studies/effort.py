"""The effort of a tuned loop: which signals the controller drives into the plant.

The *effort signals* of a closed loop are the inputs of its plant units that
the controller side drives: every input of a plant unit fed by a connection
from a unit of the controller side. Plant units are the FMU units that hold
no tuned parameter; every other unit (blocks, control and function units, and
an FMU holding a tuned parameter, such as the controller FMU of an SSP system)
is on the controller side. For the rigid arm under PD (``examples/loop.py``)
they are ``arm.tau[1]`` .. ``arm.tau[3]``, N m. A user may name other
signals instead (recorded ``"unit.var"`` names).

The *peak effort* of a signal is its largest absolute value over a run (the
``peak`` metric of :mod:`.metrics`), in the signal's unit, as the unit
received it (the input recorded at each communication point).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import InputError


def effort_signals(system, tuned: Sequence[str] = ()) -> list[str]:
    """The inputs of ``system``'s plant units driven from its controller side.

    Parameters
    ----------
    system : mbfmu.cosim.System
        The closed loop.
    tuned : sequence of str
        The tuned parameter names; a ``"unit.var"`` name puts its unit on the
        controller side.

    Returns
    -------
    list of str
        ``"unit.input"`` names, in connection order, each once.
    """
    from ..cosim import FmuUnit
    controller = {n.partition(".")[0] for n in tuned if "." in n}

    def is_plant(name: str) -> bool:
        return isinstance(system.units[name], FmuUnit) and name not in controller
    out = [f"{c.dst_unit}.{c.dst_var}" for c in system.connections
           if is_plant(c.dst_unit) and not is_plant(c.src_unit)]
    return list(dict.fromkeys(out))


def effort_units(system, signals: Sequence[str]) -> dict[str, str]:
    """Signal -> unit symbol (``""`` when the unit declares none); refuses an unknown signal by name.

    Parameters
    ----------
    system : mbfmu.cosim.System
    signals : sequence of str
        ``"unit.var"`` names.
    """
    from ..cosim.system import split_name
    units = {}
    for s in signals:
        un, var = split_name(s)
        unit = system.units.get(un)
        if unit is None or var not in unit.variables:
            raise InputError(f"effort signal {s!r}: the system has no variable {var!r} in a unit {un!r}")
        units[s] = unit.variables[var].unit or ""
    return units
