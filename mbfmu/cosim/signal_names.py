"""python-control spelling of FMU and plant variable names.

python-control refuses a ``.`` in the name of a state, input or output
(``'.' not allowed``): it reserves it for ``system.signal``. FMU variables
are often dotted (``states.q[1]``, Modelica's ``body.frame_a.r``), so every
:class:`control.StateSpace` mbfmu returns names its signals through
:func:`control_name`, which writes each ``.`` as ``:`` (``states:q[1]``);
``unit:var`` is how a system's signal ``unit.var`` is spelt the same way.
"""
from __future__ import annotations

from typing import Iterable


def control_name(name: str) -> str:
    """``name`` with every ``.`` written as ``:``, which python-control accepts.

    Parameters
    ----------
    name : str
        A variable name (``"states.q[1]"``).

    Returns
    -------
    str
        ``"states:q[1]"``.
    """
    return str(name).replace(".", ":")


def control_names(names: Iterable[str]) -> list[str]:
    """:func:`control_name` of each name.

    Parameters
    ----------
    names : iterable of str
        Variable names.

    Returns
    -------
    list of str
        The names python-control accepts, in the same order.
    """
    return [control_name(n) for n in names]


def unit_signal(unit: str, var: str) -> str:
    """The python-control label of the signal ``unit.var`` of a system: ``"unit:var"``.

    Parameters
    ----------
    unit : str
        Unit name.
    var : str
        The unit's variable name (its dots become ``:`` too).

    Returns
    -------
    str
        ``"unit:var"``.
    """
    return control_name(f"{unit}.{var}")
