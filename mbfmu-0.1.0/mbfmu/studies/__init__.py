"""Studies at scale: parameter sweeps and Monte Carlo over plants, FMUs and SSP systems.

:func:`sweep` runs a target (a library plant name, a Plant, an FMU or SSP
path, or a function building a :class:`mbfmu.cosim.System`) once per
parameter set of a grid or of Monte Carlo samples, on local worker processes
by default or on a Dask cluster, and returns a :class:`StudyResult` table:
parameters, status, wall time, metrics and where each run's full result is.
With ``cache=DIR`` finished runs are kept and a re-run (or an interrupted
study) resumes. ``mbfmu sweep`` is the same from the command line.

To run the same study on a Dask cluster of many machines, change one
argument: ``executor="dask://SCHEDULER_HOST:8786"`` (``--scheduler
SCHEDULER_HOST:8786`` on the command line), with mbfmu installed on the
workers (``dask scheduler`` on one machine, ``dask worker
SCHEDULER_HOST:8786 --nthreads 1`` on each of the others).

:func:`tune` tunes controller parameters against time-domain requirements
(overshoot, settling time, ITAE...) over the same runs: a seeded differential
evolution whose generations are evaluated as sweeps, then a Nelder-Mead polish.

Examples
--------
>>> from mbfmu.studies import sweep, Normal
>>> study = sweep("rigid_arm", {"arm_mass": [10.0, 20.0, 40.0]}, stop_time=0.1,
...               metrics=["final:q[2]"], executor="serial", progress=False)
>>> study.summary()
'3 runs: 3 ok'
"""
from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {
    "sweep": "mbfmu.studies.study",
    "tune": "mbfmu.studies.tuning", "TuneResult": "mbfmu.studies.tuning", "Requirement": "mbfmu.studies.tuning",
    "StudyResult": "mbfmu.studies.table",
    "Normal": "mbfmu.studies.params", "Uniform": "mbfmu.studies.params", "Distribution": "mbfmu.studies.params",
    "parse_spec": "mbfmu.studies.params", "runs": "mbfmu.studies.params",
    "Metric": "mbfmu.studies.metrics", "step_info": "mbfmu.studies.metrics",
    "plot_study": "mbfmu.studies.plots", "plot_histories": "mbfmu.studies.plots",
}
__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
