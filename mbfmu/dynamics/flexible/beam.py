"""Beam description: material, cross-section and derived stiffnesses.

The beam axis is the body x axis of its root frame. Transverse deflection
``v`` is along y (bending in the x-y plane, stiffness ``E Iz``), ``w`` along z
(bending in the x-z plane, stiffness ``E Iy``), twist about x (``G J``),
stretch along x (``E A``). SI units throughout.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ...errors import ModelError
from .. import symbolic

#: Euler-Bernoulli clamped-free eigenvalues lambda_i L (cos(x) cosh(x) = -1)
CLAMPED_FREE_LAMBDA_1 = 1.8751040687


@dataclass(frozen=True)
class BeamProperties:
    """A straight, uniform Euler-Bernoulli beam.

    Parameters
    ----------
    length : float
        L, m.
    E : float
        Young's modulus, Pa.
    G : float
        Shear modulus, Pa.
    density : float
        rho, kg/m^3.
    area : float
        Cross-section area A, m^2.
    Iy, Iz : float
        Second moments of area about the section's y and z axes, m^4
        (``Iz`` governs bending in the x-y plane).
    J : float
        Torsion constant, m^4.
    damping_ratio : float
        Structural damping ratio (1) of the first bending mode; both beam
        models apply it as stiffness-proportional damping ``D = beta K``
        with ``beta = 2 zeta / omega_1`` (``omega_1``: first clamped-free
        bending frequency of the softer plane).
    c_y, c_z : float
        Distance from the neutral axis to the outer fibre along y and z, m
        (for surface bending strain; default: from a square-ish section).
    radius : float
        Radius used to draw the beam, m (default ``sqrt(area / pi)``).
    """

    length: float
    E: float
    G: float
    density: float
    area: float
    Iy: float
    Iz: float
    J: float
    damping_ratio: float = 0.0
    c_y: float = 0.0
    c_z: float = 0.0
    radius: float = 0.0

    def __post_init__(self) -> None:
        for name in ("length", "E", "G", "density", "area", "Iy", "Iz", "J"):
            val = getattr(self, name)
            if not isinstance(val, numbers.Real) or not math.isfinite(val) or val <= 0:
                raise ModelError(f"beam: {name} = {val!r} must be a finite number > 0")
        for name in ("damping_ratio", "c_y", "c_z", "radius"):
            val = getattr(self, name)
            if not isinstance(val, numbers.Real) or not math.isfinite(val) or val < 0:
                raise ModelError(f"beam: {name} = {val!r} must be a finite number >= 0")
        if self.c_y == 0.0:
            object.__setattr__(self, "c_y", symbolic.sqrt(3.0 * self.Iz / self.area))
        if self.c_z == 0.0:
            object.__setattr__(self, "c_z", symbolic.sqrt(3.0 * self.Iy / self.area))
        if self.radius == 0.0:
            object.__setattr__(self, "radius", symbolic.sqrt(self.area / math.pi))

    # ---- constructors for common sections ---------------------------------
    @classmethod
    def rectangular(cls, length: float, width_y: float, height_z: float, E: float, density: float,
                    poisson: float = 0.33, damping_ratio: float = 0.0) -> "BeamProperties":
        """Solid rectangle ``width_y`` (along y) x ``height_z`` (along z), m.

        Torsion constant from Roark's approximation
        ``J = a b^3 (1/3 - 0.21 (b/a)(1 - b^4 / (12 a^4)))`` (a >= b).
        """
        if not (width_y > 0 and height_z > 0):
            raise ModelError(f"beam: section {width_y} x {height_z} m must have positive sides")
        if isinstance(width_y, symbolic.Sym) or isinstance(height_z, symbolic.Sym):  # a recorded build: no branch taken
            mean, half = 0.5 * (width_y + height_z), 0.5 * abs(width_y - height_z)
            a, b = mean + half, mean - half
        else:
            a, b = max(width_y, height_z), min(width_y, height_z)
        J = a * b ** 3 * (1.0 / 3.0 - 0.21 * (b / a) * (1.0 - b ** 4 / (12.0 * a ** 4)))
        return cls(length=length, E=E, G=E / (2.0 * (1.0 + poisson)), density=density,
                   area=width_y * height_z, Iy=width_y * height_z ** 3 / 12.0,
                   Iz=height_z * width_y ** 3 / 12.0, J=J, damping_ratio=damping_ratio,
                   c_y=width_y / 2.0, c_z=height_z / 2.0,
                   radius=0.5 * a)

    @classmethod
    def circular(cls, length: float, diameter: float, E: float, density: float,
                 poisson: float = 0.33, damping_ratio: float = 0.0) -> "BeamProperties":
        """Solid circular section of ``diameter`` m."""
        if not diameter > 0:
            raise ModelError(f"beam: diameter {diameter} m must be > 0")
        r = diameter / 2.0
        I = math.pi * r ** 4 / 4.0
        return cls(length=length, E=E, G=E / (2.0 * (1.0 + poisson)), density=density,
                   area=math.pi * r * r, Iy=I, Iz=I, J=2.0 * I, damping_ratio=damping_ratio,
                   c_y=r, c_z=r, radius=r)

    # ---- derived quantities --------------------------------------------------
    @property
    def EIy(self) -> float:
        """Bending stiffness for deflection along z, N m^2."""
        return self.E * self.Iy

    @property
    def EIz(self) -> float:
        """Bending stiffness for deflection along y, N m^2."""
        return self.E * self.Iz

    @property
    def GJ(self) -> float:
        """Torsional stiffness, N m^2."""
        return self.G * self.J

    @property
    def EA(self) -> float:
        """Axial stiffness, N."""
        return self.E * self.area

    @property
    def mass_per_length(self) -> float:
        """rho A, kg/m."""
        return self.density * self.area

    @property
    def mass(self) -> float:
        """Total mass, kg."""
        return self.density * self.area * self.length

    @property
    def polar_inertia_per_length(self) -> float:
        """rho (Iy + Iz): rotary inertia about the beam axis per length, kg m."""
        return self.density * (self.Iy + self.Iz)

    def bending_stiffness(self, direction: str) -> float:
        """EI for deflection along ``"y"`` or ``"z"``, N m^2."""
        if direction == "y":
            return self.EIz
        if direction == "z":
            return self.EIy
        raise ModelError(f"beam: bending direction {direction!r} must be 'y' or 'z'")

    def clamped_frequency(self, mode: int = 1, direction: str = "y") -> float:
        """Euler-Bernoulli cantilever bending frequency omega_i, rad/s."""
        from .modes import clamped_free_roots
        lam = clamped_free_roots(mode)[-1] / self.length
        return lam ** 2 * symbolic.sqrt(self.bending_stiffness(direction) / self.mass_per_length)

    def stiffness_damping_factor(self, directions=("y", "z")) -> float:
        """beta (s) of the stiffness-proportional damping ``D = beta K``."""
        if not isinstance(self.damping_ratio, symbolic.Sym) and self.damping_ratio == 0.0:
            return 0.0  # (2 zeta / omega_1 is 0 too: a recorded build keeps the expression, no condition)
        w1 = min(self.clamped_frequency(1, d) for d in directions)
        return 2.0 * self.damping_ratio / w1
