"""Which native FMUs claim exact directional derivatives (``csrc/dirder.c``).

The C runtime differentiates rigid trees of revolute, prismatic, universal,
fixed, spherical and free joints with joint springs, dampers, limits (a
spherical joint's on its rotation vector: ``csrc/ballspring_dirder.c``), drives,
point-to-point spring-dampers, sphere-plane contacts and
cables (``csrc/contact_dirder.c``: the active piece of their piecewise-smooth
laws), a frame element (the crash occupant's sled frame: the model's dynamics under
the gravity g - a(t, u), whose tangent along the inputs is -da, its class's
``frame_accel_tangent``) with the HIC recorder (the
integral's rate |a| / unit, a the head's specific force; the history and
running maximum are discrete states, not knowns nor unknowns of the
derivatives), and the output sensors of state values, velocities, points,
energies, linear combinations, quaternions, momenta, a body's world
orientation quaternion and twist (a robot's ``--pose`` and ``--twist``), plug-in elements'
forces, joint rows (a satellite's hinge latches), energies and outputs (their
classes' tangents, ``dynamics/csrc/element.h``) and, in velocity variables,
accelerometers, the frame element's acceleration, cable tensions and point
displacements; flexible plants (assumed-modes beams, ``csrc/flex_dirder.c``:
the rigid tangents on the virtual tree, projected onto the modal
coordinates). :func:`inexact_reason`
is the build-time mirror of ``mbn_dirder_inexact``: the FMU's
``providesDirectionalDerivative`` is true exactly when it returns ``None``.
"""
from __future__ import annotations

from ...plant.elements import ELEMENT_OUTPUT
from .pack import Description

# joint types (csrc/mb.h) and sensor codes (csrc/sensors.h) with tangents in dirder.c
_PLANAR = 6
_SENSORS = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}  # 9, 10: a body's world quaternion and twist (robots' --pose, --twist)
# accelerometer, frame acceleration, cable tension, displacement (csrc/element.h's sensors of the dynamics)
_MOTION_SENSORS = {31, 32, 33, 34}
# flexible plants (csrc/flex_dirder.c): fixed, revolute, prismatic, universal joints of the virtual
# tree; state, velocity, point, kinetic, potential and combination (csrc/flexsensors.h) sensors
_FLEX_JOINTS = {0, 1, 2, 5}
_FLEX_SENSORS = {1, 2, 3, 4, 5, 20}


def inexact_reason(desc: Description) -> str | None:
    """``None`` when ``dirder.c`` differentiates the plant of ``desc`` exactly, else why not.

    Parameters
    ----------
    desc : Description
        The plant's numeric description (:func:`.pack.describe`).
    """
    st = desc.structure
    if "flex" in st:
        return _flex_inexact_reason(st)
    for t in st["jtype"]:
        if t == _PLANAR:
            return "planar joints have no tangents in the C runtime"
    # a plug-in element's outputs: the tangent its class gives (dynamics/csrc/element.h)
    # (plug-in elements, a frame element among them, run in (q, v) only: pack.check_supported)
    if st.get("canonical") and any(row[0] in _MOTION_SENSORS for row in st["sens"]):
        return "an accelerometer in canonical variables has no tangent in the C runtime"
    sensors = _SENSORS | {ELEMENT_OUTPUT} | _MOTION_SENSORS
    if any(row[0] not in sensors for row in st["sens"]):
        return "an output sensor (flexible) has no tangent in the C runtime"
    return None


def _flex_inexact_reason(st: dict) -> str | None:
    """The flexible plants' half of :func:`inexact_reason` (``mbn_flex_dirder_inexact``,
    ``csrc/flex_dirder.c``): the virtual tree's fixed, revolute, prismatic and universal joints,
    and the sensors of state values, velocities, linear combinations, points and energies."""
    if any(t not in _FLEX_JOINTS for t in st["jtype"][1:]) or st["nq"] != st["nv"]:
        return ("flexible systems with planar, spherical or free joints have no tangents in the C runtime"
                if st["nq"] == st["nv"] else
                "flexible systems with quaternion joints have no tangents in the C runtime")
    if any(row[0] not in _FLEX_SENSORS for row in st["sens"]):
        return "a flexible system's output sensor (relative point) has no tangent in the C runtime"
    return None


def mark_directional(xml, reason: str | None) -> None:
    """Set ``providesDirectionalDerivative`` of the FMI 2 description's interfaces from ``reason``."""
    flag = "true" if reason is None else "false"
    for tag in ("CoSimulation", "ModelExchange"):
        el = xml.find(tag)
        if el is not None:
            el.set("providesDirectionalDerivative", flag)
