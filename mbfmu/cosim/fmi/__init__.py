"""FMU files as units: FMI 2.0 and 3.0, co-simulation and model exchange.

:func:`~mbfmu.cosim.fmi.fmu_open.open_fmu` opens a file as the class it needs
(:class:`~mbfmu.cosim.fmi.fmu_unit.FmuUnit` and its FMI 3.0, clocked,
Scheduled Execution and model-exchange subclasses); :mod:`.fmu_files` checks
and extracts the archive first.
"""
