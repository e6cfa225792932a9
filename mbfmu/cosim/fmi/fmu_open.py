"""Opening an FMU file as the unit class it needs.

:func:`open_fmu` reads the head of the file's model description and picks the
class: FMI 2.0 or 3.0, co-simulation or model exchange (FMI 3.0 with or without
clocks), FMI 3.0 clocks and event mode, or Scheduled Execution. It is the one
place that knows every FMU unit class, so the classes themselves import only their bases (no import
circle). ``FmuUnit(path, ...)`` is a documented alias of it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from .fmu3_events import Fmu3EventUnit
from .fmu3_me_clocks import Fmu3MeClockUnit
from .fmu3_scheduled import Fmu3ScheduledUnit
from .fmu3_unit import Fmu3Unit
from .fmu_me import Fmu3MeUnit, FmuMeUnit
from .fmu_unit import INTERFACES, FmuUnit, _fmi_interfaces

__all__ = ["open_fmu", "fmu_class"]


def fmu_class(path: str | Path, interface: str | None = None) -> type[FmuUnit]:
    """The unit class that runs the FMU at ``path``.

    Parameters
    ----------
    path : str or Path
        The ``.fmu`` file (an unreadable file gives :class:`FmuUnit`, whose
        constructor names what is wrong with it).
    interface : {None, "cs", "me"}
        Co-simulation, model exchange, or (None) co-simulation when the FMU
        has it and model exchange otherwise.

    Returns
    -------
    type
        :class:`FmuUnit` or one of its subclasses.

    Raises
    ------
    InputError
        ``interface`` is none of None, ``"cs"``, ``"me"``.
    """
    if interface not in INTERFACES:
        raise InputError(f"interface {interface!r} must be 'cs' (co-simulation) or 'me' (model exchange)")
    version, has_cs, has_me, has_se, has_clocks = _fmi_interfaces(path)
    fmi3 = (version or "").startswith("3.")
    if fmi3 and has_se and not has_cs and interface != "me":
        return Fmu3ScheduledUnit
    if interface == "me" or (interface is None and has_me and not has_cs):
        return (Fmu3MeClockUnit if has_clocks else Fmu3MeUnit) if fmi3 else FmuMeUnit
    if fmi3 and has_clocks:
        return Fmu3EventUnit
    if fmi3:
        return Fmu3Unit
    return FmuUnit


def open_fmu(path: str | Path, name: str | None = None, *, interface: str | None = None,
             **options: Any) -> FmuUnit:
    """Open the FMU at ``path`` as a unit of a :class:`~mbfmu.cosim.System`.

    Parameters
    ----------
    path : str or Path
        The ``.fmu`` file (FMI 2.0 or 3.0).
    name : str, optional
        Unit name in the system (default: the FMU's model name).
    interface : {None, "cs", "me"}
        Co-simulation, model exchange (integrated by the master), or (None)
        co-simulation when the FMU has it and model exchange otherwise.
    **options
        The keyword arguments of the unit class (``values``, ``step``,
        ``feedthrough``, ``log``; ``rtol`` and ``atol`` [-] for model exchange).

    Returns
    -------
    FmuUnit
        The unit, of the class :func:`fmu_class` picks.

    Examples
    --------
    >>> from mbfmu.cosim.fmi.fmu_open import open_fmu
    >>> open_fmu("no_such.fmu")
    Traceback (most recent call last):
    ...
    mbfmu.errors.InputError: FMU file 'no_such.fmu' does not exist
    """
    return fmu_class(path, interface)(path, name, interface=interface, **options)


FmuUnit._choose = fmu_class
