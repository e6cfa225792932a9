"""Two masses coupled by a spring-damper, split across two units of the C mass FMU
(parameters in SI units from :mod:`helpers`): with and without direct feedthrough."""
from __future__ import annotations

from mbfmu.cosim import FmuUnit, System

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2


def two_mass(mass_fmu):
    """a feeds b its position and velocity; b returns the coupling force (feedthrough); a starts at x = 1 m."""
    return System([FmuUnit(mass_fmu, "a", values=dict(m=M1, k=K1, d=D1, x0=1.0, nsub=7)),
                   FmuUnit(mass_fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


def with_feedthrough(fmu):
    """b owns the coupling spring and outputs its force, which depends directly on its inputs."""
    return System([FmuUnit(fmu, "a", values=dict(m=M1, k=K1, d=D1, x0=1.0)),
                   FmuUnit(fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


def without_feedthrough(fmu):
    """Both units model the coupling spring from the other's position and velocity (outputs are states)."""
    return System([FmuUnit(fmu, "a", values=dict(m=M1, k=K1, d=D1, kc=KC, dc=DC, x0=1.0)),
                   FmuUnit(fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.x", "a.xin"), ("b.v", "a.vin")])
