"""Small plants for the FMU tests (pure numpy), independent of the library.

``DampedPendulum`` has one input, a tunable parameter set, state-only outputs
and one direct-feedthrough output (``power``), so every part of the FMU's
``ModelStructure`` is exercised. ``Blowup`` integrates dx/dt = x**2, whose
solution 1/(1 - t) leaves the floats just before t = 1 s: its integrator
fails, which the FMU must report without crashing the host.
"""
from __future__ import annotations

import numpy as np

from mbfmu.plant import Plant
from mbfmu.plant.signals import Signal


class DampedPendulum(Plant):
    """Point-mass pendulum with viscous joint damping, driven by a torque.

    Parameters
    ----------
    length : float
        Pendulum length, m (> 0).
    mass : float
        Point mass, kg (> 0).
    damping : float
        Viscous damping, N.m.s/rad.
    theta0 : float
        Initial angle from the downward vertical, rad.
    """

    name = "damped_pendulum"
    description = "Point-mass pendulum with joint damping (test plant)"
    inputs = (Signal("tau", "N.m", "joint torque", 0.0, -50.0, 50.0, "input"),)
    outputs = (
        Signal("theta", "rad", "angle from the downward vertical", kind="output"),
        Signal("omega", "rad/s", "angular velocity", kind="output"),
        Signal("power", "W", "power of the joint torque, tau * omega", kind="output"),
    )
    states = (Signal("theta", "rad", "angle", kind="state"), Signal("omega", "rad/s", "angular velocity", kind="state"))
    feedthrough = {"power": ("tau",)}
    default_step = 1e-2
    default_stop_time = 2.0
    internal_step = 2.5e-3
    g = 9.81

    def __init__(self, length: float = 1.0, mass: float = 2.0, damping: float = 0.1, theta0: float = 0.5):
        if length <= 0 or mass <= 0:
            raise ValueError(f"length {length} m and mass {mass} kg must be positive")
        self.length, self.mass, self.damping, self.theta0 = float(length), float(mass), float(damping), float(theta0)
        self.parameters = (
            Signal("length", "m", "pendulum length", self.length, 1e-3, 100.0, "parameter"),
            Signal("mass", "kg", "point mass", self.mass, 1e-6, None, "parameter"),
            Signal("damping", "N.m.s/rad", "viscous joint damping", self.damping, 0.0, None, "parameter"),
            Signal("theta0", "rad", "initial angle", self.theta0, None, None, "parameter"),
        )

    def initial_state(self) -> np.ndarray:
        return np.array([self.theta0, 0.0])

    def derivatives(self, t, x, u):
        ml2 = self.mass * self.length ** 2
        return np.array([x[1], (u[0] - self.damping * x[1]) / ml2 - self.g / self.length * np.sin(x[0])])

    def outputs_at(self, t, x, u):
        return np.array([x[0], x[1], u[0] * x[1]])


class Blowup(Plant):
    """dx/dt = x**2 from x(0) = x0: finite-time blow-up at t = 1/x0 s."""

    name = "blowup"
    description = "Finite-time blow-up (test plant for integrator failure)"
    outputs = (Signal("x", "1", "state", kind="output"),)
    states = (Signal("x", "1", "state", kind="state"),)
    default_step = 0.1
    default_stop_time = 2.0
    internal_step = 0.1

    def __init__(self, x0: float = 1.0):
        self.x0 = float(x0)
        self.parameters = (Signal("x0", "1", "initial value", self.x0, kind="parameter"),)

    def initial_state(self):
        return np.array([self.x0])

    def derivatives(self, t, x, u):
        return x ** 2

    def outputs_at(self, t, x, u):
        return x.copy()
