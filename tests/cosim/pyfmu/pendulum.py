"""Damped pendulum plant as a pythonfmu slave (test FMU).

theta'' = -g/L sin(theta) - c theta' + tau/(m L^2); explicit RK4 with 10 sub-steps.
Inputs: tau [N.m]; outputs: theta [rad], omega [rad/s]; no direct feedthrough.
"""
import math

import ctypes

from pythonfmu import Fmi2Causality, Fmi2Variability, Fmi2Slave, Real


class Pendulum(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # pythonfmu 0.7 releases a reference to this module's namespace at every
        # fmi2Instantiate that it never took (see mbfmu.fmu.slave.pin_module_dict)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
        self.g, self.L, self.m, self.c = 9.81, 1.0, 1.0, 0.5
        self.theta0 = 0.5
        self.tau = 0.0
        self.theta = 0.5
        self.omega = 0.0
        for n in ("g", "L", "m", "c", "theta0"):
            self.register_variable(Real(n, causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("tau", causality=Fmi2Causality.input))
        self.register_variable(Real("theta", causality=Fmi2Causality.output))
        self.register_variable(Real("omega", causality=Fmi2Causality.output))

    def exit_initialization_mode(self):
        self.theta = self.theta0
        self.omega = 0.0

    def _f(self, th, om):
        return om, -self.g / self.L * math.sin(th) - self.c * om + self.tau / (self.m * self.L ** 2)

    def do_step(self, current_time, step_size):
        n = 10
        h = step_size / n
        th, om = self.theta, self.omega
        for _ in range(n):
            a1, b1 = self._f(th, om)
            a2, b2 = self._f(th + h / 2 * a1, om + h / 2 * b1)
            a3, b3 = self._f(th + h / 2 * a2, om + h / 2 * b2)
            a4, b4 = self._f(th + h * a3, om + h * b3)
            th += h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
            om += h / 6 * (b1 + 2 * b2 + 2 * b3 + b4)
        self.theta, self.omega = th, om
        return True
