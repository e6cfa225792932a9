"""The hub-beam test article: one beam clamped to a hub on a revolute joint,
built with either beam method (used by the tests and the benchmark)."""
from __future__ import annotations

from ..joints import Revolute
from ..model import ModelBuilder
from .beam import BeamProperties
from .rigid import RigidSystem
from .segments import add_segmented_beam
from .system import FlexibleSystemBuilder, ModeSet


def hub_beam(beam: BeamProperties, method: str, n: int, hub_mass: float = 1.0,
             hub_inertia=(0.01, 0.01, 0.02), gravity=(0.0, 0.0, 0.0)):
    """A hub (``hub_mass`` kg, principal inertia ``hub_inertia`` kg m^2)
    turning about z, carrying ``beam`` along its x axis.

    Parameters
    ----------
    beam : BeamProperties
        The beam, clamped to the hub.
    method : {"modes", "segments"}
        ``n`` bending modes in the y direction, or ``n`` rigid segments.
    n : int
        Number of modes or segments.
    hub_mass : float
        kg.
    hub_inertia : sequence of float
        Principal inertia of the hub about its centre, kg m^2.
    gravity : sequence of float
        Gravity in the world frame, m/s^2.

    Returns
    -------
    FlexibleSystem or RigidSystem
    """
    if method == "modes":
        b = FlexibleSystemBuilder(gravity=gravity)
        b.add_beam("beam", "world", Revolute(axis=(0, 0, 1)), beam, ModeSet(bending_y=n),
                   mass=hub_mass, inertia=hub_inertia)
        return b.build()
    if method != "segments":
        raise ValueError(f"hub_beam: method {method!r} is not 'modes' or 'segments'")
    b = ModelBuilder(gravity=gravity)
    hub = b.add_body("hub", "world", Revolute(axis=(0, 0, 1)), mass=hub_mass, inertia=hub_inertia)
    add_segmented_beam(b, "beam", hub, beam, n)
    return RigidSystem(b.build())
