"""First-order lag x' = (u - x) / T as a pythonfmu slave whose state restore
is deliberately broken (test FMU for the rollback probe).

It declares canGetAndSetFMUstate (built with ``--handle-state``), but
restoring a saved state leaves x where it is, as some exported FMUs do.
"""
import ctypes

from pythonfmu import Fmi2Causality, Fmi2Variability, Fmi2Slave, Real


class Forgetful(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # pythonfmu 0.7 releases a reference to this module's namespace at every
        # fmi2Instantiate that it never took (see mbfmu.fmu.slave.pin_module_dict)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
        self.T = 0.5
        self.u = 1.0
        self.x = 0.0
        self.register_variable(Real("T", causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("u", causality=Fmi2Causality.input))
        self.register_variable(Real("x", causality=Fmi2Causality.output))

    def do_step(self, current_time, step_size):
        self.x += step_size * (self.u - self.x) / self.T
        return True

    def _set_fmu_state(self, state):
        pass  # the defect under test: nothing is restored
