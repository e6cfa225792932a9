"""Serial chains built with the Python API for the dynamics tests."""
from __future__ import annotations

from mbfmu.dynamics import ModelBuilder, Revolute
from mbfmu.dynamics.spatial import inertia_cylinder


def pendulum_chain(n: int = 10, length: float = 0.5, mass: float = 1.0):
    """n-link planar pendulum of slender rods swinging about y under gravity."""
    b = ModelBuilder()
    for k in range(1, n + 1):
        b.add_body(f"link{k}", k - 1, Revolute(axis=(0, 1, 0)), mass, (0, 0, -length / 2),
                   inertia_cylinder(mass, 0.02, length, axis=2), p_PJ=(0, 0, -length if k > 1 else 0))
    return b.build()
