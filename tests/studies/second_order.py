"""A second-order system ``wn^2 / (s^2 + 2 zeta wn s + wn^2)`` under a unit step, as a cosim System,
and its analytic step response."""
from __future__ import annotations

import math

import control

from mbfmu.cosim import ControlUnit, System, sources


def system(zeta: float = 0.3, wn: float = 2.0) -> System:
    """The plant (exact zero-order-hold discretization) driven by a unit step at t = 0."""
    plant = ControlUnit("plant", control.ss(control.tf([wn * wn], [1.0, 2 * zeta * wn, wn * wn]),
                                            inputs="u", outputs="y"))
    return System([plant, sources.step("u", 0.0)], [("u.y", "plant.u")])


def response(t: float, zeta: float, wn: float) -> float:
    """Unit-step response of the underdamped system at ``t`` [s]."""
    wd = wn * math.sqrt(1 - zeta * zeta)
    return 1 - math.exp(-zeta * wn * t) / math.sqrt(1 - zeta * zeta) * math.sin(wd * t + math.acos(zeta))
