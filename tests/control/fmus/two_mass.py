"""Two masses in a chain (wall - k1,c1 - m1 - k2,c2 - m2) as a pythonfmu
slave for the ERA tests: force F on m2; outputs the positions x1, x2 and the
acceleration a2 of m2 (direct feedthrough from F). RK4 with 50 sub-steps per
communication step. State save/restore through the registered variables."""
import ctypes

from pythonfmu import Fmi2Causality, Fmi2Variability, Fmi2Slave, Real


class TwoMass(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # pythonfmu 0.7 releases a reference to this module's namespace at every
        # fmi2Instantiate that it never took (see mbfmu.fmu.slave.pin_module_dict)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
        self.m1, self.m2, self.k1, self.k2, self.c1, self.c2 = 1.0, 0.5, 40.0, 20.0, 0.4, 0.2
        self.F = 0.0
        self.x1 = self.v1 = self.x2 = self.v2 = 0.0
        self.a2 = 0.0
        for n in ("m1", "m2", "k1", "k2", "c1", "c2"):
            self.register_variable(Real(n, causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("F", causality=Fmi2Causality.input))
        self.register_variable(Real("x1", causality=Fmi2Causality.output))
        self.register_variable(Real("x2", causality=Fmi2Causality.output))
        self.register_variable(Real("a2", causality=Fmi2Causality.output, getter=self._acc))
        self.register_variable(Real("v1", causality=Fmi2Causality.local))
        self.register_variable(Real("v2", causality=Fmi2Causality.local))

    def _f(self, x1, v1, x2, v2):
        s = self.k2 * (x2 - x1) + self.c2 * (v2 - v1)
        a1 = (-self.k1 * x1 - self.c1 * v1 + s) / self.m1
        a2 = (self.F - s) / self.m2
        return v1, a1, v2, a2

    def _acc(self):
        return self._f(self.x1, self.v1, self.x2, self.v2)[3]

    def do_step(self, current_time, step_size):
        n = 50
        h = step_size / n
        x = [self.x1, self.v1, self.x2, self.v2]
        for _ in range(n):
            k1 = self._f(*x)
            k2 = self._f(*[a + h / 2 * b for a, b in zip(x, k1)])
            k3 = self._f(*[a + h / 2 * b for a, b in zip(x, k2)])
            k4 = self._f(*[a + h * b for a, b in zip(x, k3)])
            x = [a + h / 6 * (p + 2 * q + 2 * r + s) for a, p, q, r, s in zip(x, k1, k2, k3, k4)]
        self.x1, self.v1, self.x2, self.v2 = x
        return True
