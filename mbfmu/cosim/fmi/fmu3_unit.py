"""The FMI 3.0 unit: any FMI 3.0 co-simulation FMU without clocks, run through
fmpy's ``FMU3Slave``.

:class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit` runs it (``FmuUnit(path)`` returns
this class for an FMI 3.0 file), with the FMI 3.0 row of
:mod:`mbfmu.cosim.fmi.fmi_versions`: fixed communication steps, event mode
not used (the FMU handles its events inside ``fmi3DoStep``), no early return;
arrays split into their elements. FMUs with clocks run as
:mod:`mbfmu.cosim.fmi.fmu3_events` (event mode) or
:mod:`mbfmu.cosim.fmi.fmu3_scheduled` (Scheduled Execution); this class
refuses them, naming their clocks.
"""
from __future__ import annotations

from typing import Any

from ...errors import InputError
from .fmi_versions import FMI3
from .fmu_unit import FmuUnit


class Fmu3Unit(FmuUnit):
    """Any FMI 3.0 co-simulation FMU, run through fmpy (see the module docstring).

    Parameters are those of :class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit`.
    """

    fmi = FMI3

    @staticmethod
    def _check_interface(md: Any) -> None:
        if not str(md.fmiVersion).startswith("3."):
            raise InputError(f"{md.modelName!r}: not an FMI 3.0 FMU (fmiVersion {md.fmiVersion})")
        if md.coSimulation is None:
            kinds = [k for k, i in (("model exchange", md.modelExchange),
                                    ("scheduled execution", getattr(md, "scheduledExecution", None))) if i is not None]
            raise InputError(f"{md.modelName!r}: the FMU has no co-simulation interface"
                             + (f" (it offers {' and '.join(kinds)} only)" if kinds else ""))
        clocks = [v.name for v in md.modelVariables if v.type == "Clock"]
        if clocks:
            raise InputError(f"{md.modelName!r}: the FMU has clocks ({', '.join(clocks)}); Fmu3Unit runs co-simulation "
                             "without event mode: open it with open_fmu(path), which runs its event mode")
