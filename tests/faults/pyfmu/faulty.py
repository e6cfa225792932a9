"""A pythonfmu slave that misbehaves on purpose (fault-injection tests).

Input ``u``, output ``y = t + u``; ``work`` loops of Python per step (so that a
signal is likely to land inside the FMU). From the first step that ends after
``fail_time`` [s] it does what ``mode`` says: 0 nothing, 1 raise (pythonfmu
returns fmi2Fatal), 2 hang, 3 y = NaN.
"""
import ctypes
import math
import time

from pythonfmu import Fmi2Causality, Fmi2Slave, Fmi2Variability, Integer, Real


class Faulty(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # pythonfmu 0.7 releases a reference to this module's namespace at every
        # fmi2Instantiate that it never took (see mbfmu.fmu.slave.pin_module_dict)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
        self.fail_time, self.mode, self.work = 1e300, 0, 0
        self.u, self.y = 0.0, 0.0
        self.register_variable(Real("fail_time", causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Integer("mode", causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Integer("work", causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("u", causality=Fmi2Causality.input))
        self.register_variable(Real("y", causality=Fmi2Causality.output))

    def do_step(self, current_time, step_size):
        s = 0
        for k in range(self.work):
            s += k
        t = current_time + step_size
        if t > self.fail_time:
            if self.mode == 1:
                raise RuntimeError(f"injected failure in the step from t={current_time!r}")
            if self.mode == 2:
                while True:
                    time.sleep(0.05)
            if self.mode == 3:
                self.y = math.nan
                return True
        self.y = t + self.u
        return True
