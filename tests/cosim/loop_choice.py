"""Which loop (compiled or Python) the master picks for a system."""
from __future__ import annotations

from mbfmu.cosim.master import fast_loop
from mbfmu.cosim.system import System


def python_loop_reason_of(system: System, record=None, **kw):
    """``python_loop_reason`` of the master a run of ``system`` with ``kw`` builds."""
    from mbfmu.cosim.master.run import _Master
    from mbfmu.cosim.master.options import SimulationOptions
    return fast_loop.python_loop_reason(_Master(system, 1e-2, SimulationOptions(**kw), record))
