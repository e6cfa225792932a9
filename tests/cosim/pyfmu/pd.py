"""PD controller as a pythonfmu slave (test FMU): tau = kp (ref - theta) - kd omega.

The output is updated in do_step from the inputs held over the step (no direct
feedthrough at the communication point), as pythonfmu slaves do.
"""
import ctypes

from pythonfmu import Fmi2Causality, Fmi2Variability, Fmi2Slave, Real


class PD(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # pythonfmu 0.7 releases a reference to this module's namespace at every
        # fmi2Instantiate that it never took (see mbfmu.fmu.slave.pin_module_dict)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
        self.kp, self.kd, self.ref = 20.0, 4.0, 0.0
        self.theta = 0.0
        self.omega = 0.0
        self.tau = 0.0
        for n in ("kp", "kd", "ref"):
            self.register_variable(Real(n, causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("theta", causality=Fmi2Causality.input))
        self.register_variable(Real("omega", causality=Fmi2Causality.input))
        self.register_variable(Real("tau", causality=Fmi2Causality.output))

    def do_step(self, current_time, step_size):
        self.tau = self.kp * (self.ref - self.theta) - self.kd * self.omega
        return True
