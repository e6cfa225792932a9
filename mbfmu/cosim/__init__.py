"""Co-simulation master over fmpy: units, systems, master algorithms, SSP, results.

Units (:func:`open_fmu` for any FMI 2.0 or 3.0 FMU, also spelled :class:`FmuUnit`, :class:`ControlUnit`
for python-control systems, :class:`FunctionUnit` and :mod:`.sources` for
plain Python functions, the static blocks of :mod:`.blocks`: Gain, Sum,
Offset, Saturation, Mux, Demux) are put in a :class:`System` with connections
``"unit.output" -> "unit.input"`` (whole vectors ``"plant.q"`` in one call); :func:`simulate` runs it (Jacobi or
Gauss-Seidel, extrapolation, multi-rate, adaptive or iterative steps) and
returns a :class:`Result` whose ``data`` is a structured array with ``time``
first. :func:`read_ssp` / :func:`write_ssp` move systems in and out of SSP 1.0.

Examples
--------
A continuous first-order plant ``y' = -y + u`` driven by a unit step:

>>> import control
>>> from mbfmu.cosim import ControlUnit, System, simulate, sources
>>> plant = ControlUnit("plant", control.ss(-1.0, 1.0, 1.0, 0.0, inputs="u", outputs="y"))
>>> system = System([plant, sources.step("u", 0.0)], [("u.y", "plant.u")])
>>> result = simulate(system, stop_time=2.0, step=0.01)
>>> result.names, result.summary.steps
(['time', 'plant.y', 'u.y'], 200)
>>> round(float(result["plant.y"][-1]), 6)  # 1 - exp(-2)
0.864665
"""
from . import sources
from .master.run import simulate
from .master.options import SimulationOptions
from .recording.result import Result, RunSummary, load_result
from .ssp.read_write import read_ssp, write_ssp
from .system import Connection, System
from .fmi.fmu_unit import FmuUnit
from .fmi.fmu_open import open_fmu
from .units import ControlUnit, FunctionUnit, Unit, Variable

from .blocks import Demux, Gain, Mux, Offset, Saturation, Sum

__all__ = ["Gain", "Sum", "Offset", "Saturation", "Mux", "Demux"]
__all__ += ["System", "Connection", "Unit", "Variable", "FmuUnit", "open_fmu", "ControlUnit", "FunctionUnit", "simulate",
           "SimulationOptions",
           "Result", "RunSummary", "load_result", "sources", "read_ssp", "write_ssp"]
