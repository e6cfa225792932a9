"""Belted occupant on a crash sled.

The human-body-in-a-vehicle-collision test case of the master's thesis "Visual
simulation of mechanical multibody systems with flexible bodies" (mechatronic
engineering, in Chinese; software MDAS II).

A 13-segment multibody human (pelvis, lumbar spine/abdomen, thorax, neck,
head, upper and lower arms, thighs, legs) sits on a seat fixed to a sled,
restrained by a lap-and-shoulder belt, and is thrown forward by a crash pulse.

Frame and pulse
---------------
The model is written in the **sled frame** (x forward, y left, z up, origin
on the floor below the hip point). The sled only translates, so its frame is
inertial up to a uniform acceleration ``a_s(t)`` along x: every body gets the
d'Alembert force ``-m a_s x`` at its centre of mass, exactly like an extra,
time-varying gravity, and it is applied as one: each evaluation of the
dynamics sets the kernels' gravity to ``g - a_s x`` and restores ``g``
(the sled frame is a frame element of this plant's own, ``sled_frame.c``, a
plug-in element of the engine's interface ``mbfmu/dynamics/csrc/element.h``).
Seat, floor and belt anchors are fixed in this frame.
The sled acceleration is the input ``sled_acceleration`` (m/s2, along the
sled's forward x; a frontal crash is negative) plus an optional built-in
half-sine pulse of peak deceleration ``pulse_peak`` (m/s2) and duration
``pulse_duration`` (s) starting at ``pulse_start``. The default built-in pulse,
20 g for 107 ms, is a change of speed of 48 km/h, the FMVSS 208 sled-test
severity; set ``pulse_peak = 0`` to drive the sled only through the input.

Body
----
Segment masses, centre-of-mass positions and radii of gyration: de Leva (1996),
"Adjustments to Zatsiorsky-Seluyanov's segment inertia parameters", J.
Biomech. 29(9):1223-1230, male table, scaled to 78 kg and 1.75 m (the Hybrid
III 50th-percentile male's 77.7 kg); the head is the Hybrid III 50th head
(4.54 kg, 49 CFR 572 Subpart E) and the neck the rest of de Leva's head+neck
fraction; forearm+hand and shank+foot are merged (the foot's mass at the
ankle). The seated posture (torso reclined 20 deg, thighs 10 deg up, knees
about 115 deg) is each ball joint's neutral position; joints have linear
passive stiffness and damping about it and stiff one-sided range limits
(representative values, see ``_JOINTS``). Arm, neck and head springs are
preloaded to hold that posture against gravity (muscle tone); trunk and legs
rest on seat, floor and belt, with contacts preloaded near their static
values, so the initial state is close to (not exactly at) equilibrium.

Seat, floor, belt
-----------------
Contact spheres on the buttocks and thighs press on the seat pan (tilted 10
deg, front up), spheres on the back of pelvis, lumbar and thorax on the seat
back, heel and toe spheres on the floor: compliant (linear spring, damper
fading in over 2 mm), with regularized Coulomb friction. The belt is four
tension-only spring-damper segments from the sled anchors to
points on the body: outboard lap anchor -> left pelvis, buckle -> right
pelvis, D-ring -> left clavicle, buckle -> lower right chest. A segment's
stiffness is the webbing's ``belt_stiffness`` (N per unit strain) over its
free length (plus the webbing spooled in the retractor for the shoulder belt);
its rest length is its initial length plus ``belt_slack`` (negative: pre-tension).
Contacts and belt segments are force elements of the compiled kernels
(:class:`~mbfmu.dynamics.model.SpherePlaneContact`,
:class:`~mbfmu.dynamics.model.Cable`, described here as the sets of
``models/_contact``). Sled frame, accelerometers and belt tensions
are sensors of the kernels (:mod:`mbfmu.dynamics.motion_sensors`), and the
sled frame and the HIC bookkeeping are plug-in elements of this plant's own
(``sled_frame.c``, ``hic_recorder.c``; ``mbfmu/dynamics/csrc/element.h``): the plant is
described in C only, so the whole integration runs in C and the plant
exports as a native FMU (``--runtime native``) that runs the same code.

Outputs
-------
Accelerations are what a triaxial accelerometer at the segment's centre of
mass reads (specific force: inertial acceleration minus gravity, so +9.81
m/s2 along z at rest), components along the sled axes, m/s2. They depend
directly on the sled acceleration input (declared feedthrough). HIC15 (head
resultant in g, time in s, the standard definition) is computed over the run
so far from plant state, so it survives FMU state save/restore:

* ``hic_integral`` = integral of the head resultant (g.s) is an ODE state;
* ``hic_history[1..31]`` holds ``hic_integral`` at the last 31 instants of a
  0.5 ms grid (15 ms) and ``hic15_max`` the running maximum (output
  ``hic15``); :meth:`advance` stops its integration on that grid and, at
  each grid instant, shifts the history and updates the maximum over all
  windows of up to 15 ms ending there, ``(t2 - t1) [(I(t2) - I(t1)) /
  (t2 - t1)]^2.5``. These are discrete states (zero derivative), updated
  only by :meth:`advance`; windows are resolved to the 0.5 ms grid (HIC15
  from 10 kHz data would use 0.1 ms; the difference here is a few percent).

What the numbers can and cannot be used for
-------------------------------------------
No validation against a sled test (or against a validated dummy model such
as the Hybrid III finite-element or MADYMO models) exists for this plant.
Its masses come from anthropometric tables, but its joint stiffness and
damping, contact and belt properties are representative values, not
identified from tests. So:

* use it for co-simulation and controller plumbing, for the trends of a
  parameter study (stiffer belt, more slack, harder pulse: which way and
  roughly how much), as a demonstration of contact, belt and HIC
  bookkeeping, and as a regression plant whose outputs must stay
  reproducible;
* do not use its head and chest accelerations, belt forces, excursions or
  HIC15 as injury predictions, for comparison with regulatory limits
  (FMVSS 208, Euro NCAP), or to rate or certify a restraint system: those
  need a dummy model validated against sled tests.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mbfmu.dynamics import FreeFlyer, JointForce, Model, ModelBuilder, Spherical, sensors, symbolic
from mbfmu.dynamics.algorithms import element_forces, point_position
from mbfmu.dynamics.motion_sensors import G  # m/s2, standard gravity (also the unit "g")
from mbfmu.dynamics.motion_sensors import (Accelerometer, CableTension, CompiledSensors, FrameAcceleration,
                                           PointDisplacement)
from mbfmu.plant.elements import NativeElement
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.outputs import declare_outputs, measured, measured_vector
from mbfmu.plant.parameters import Declaration, Parameter
from mbfmu.plant import Shape
from mbfmu.plant.signals import Signal, vector

from mbfmu.models._contact import CableSet, cross, SpherePlaneSet


HIC_WINDOW = 0.015   # s, HIC15
HIC_SAMPLE = 5e-4    # s, grid of the HIC history
HIC_HISTORY = 31     # grid instants the recorder keeps (hic_recorder.c's HIC_NH): windows up to 30 spacings
assert abs((HIC_HISTORY - 1) * HIC_SAMPLE - HIC_WINDOW) < 1e-12 * HIC_WINDOW
#: The HIC15 recorder's C (a plug-in element, ``mbfmu/dynamics/csrc/element.h``).
HIC_RECORDER_C = Path(__file__).with_name("hic_recorder.c")
#: The sled frame's C (a frame element, ``mbfmu/dynamics/csrc/element.h``).
SLED_FRAME_C = Path(__file__).with_name("sled_frame.c")

# de Leva (1996) male: mass fraction, segment length (m, for a 1.741 m
# stature), CM position (fraction of length from the end nearer the pelvis:
# de Leva's trunk values are measured from the upper end, so 1 - his value),
# radii of gyration (sagittal, transverse, longitudinal; fraction of length).
# Head: the vertex-C7 definition; upper trunk: the C7-xiphoid definition
# (both from the lower half of de Leva's Table 4), matching the joints here.
_DE_LEVA = {
    "head_neck": (0.0694, 0.2429, 0.5002, (0.303, 0.315, 0.261)),
    "upper_trunk": (0.1596, 0.2421, 0.4934, (0.505, 0.320, 0.465)),
    "mid_trunk": (0.1633, 0.2155, 0.5498, (0.482, 0.383, 0.468)),
    "lower_trunk": (0.1117, 0.1457, 0.3885, (0.615, 0.551, 0.587)),
    "upper_arm": (0.0271, 0.2817, 0.5772, (0.285, 0.269, 0.158)),
    "forearm": (0.0162, 0.2689, 0.4574, (0.276, 0.265, 0.121)),
    "hand": (0.0061, 0.0862, 0.7900, (0.628, 0.513, 0.401)),
    "thigh": (0.1416, 0.4222, 0.4095, (0.329, 0.329, 0.149)),
    "shank": (0.0433, 0.4340, 0.4459, (0.255, 0.249, 0.103)),
    "foot": (0.0137, 0.2581, 0.4415, (0.257, 0.245, 0.124)),
}
_DE_LEVA_STATURE = 1.741
_HYBRID3_HEAD = 4.54  # kg

# Passive joint properties about the seated posture, per rotation-vector
# component (local x: forward, y: lateral, z: along the segment):
# stiffness N.m/rad, damping N.m.s/rad, range (rad, +/- about x, y, z; y
# flexion range is (extension, flexion)), limit stiffness N.m/rad, limit damping.
# Representative of multibody occupant models (order of magnitude of measured
# passive joint moments), not fitted to one data set.
_JOINTS = {
    "lumbar": (300.0, 10.0, (0.35, (-0.35, 0.6), 0.3), 3000.0, 30.0),
    "thorax": (300.0, 10.0, (0.35, (-0.35, 0.6), 0.3), 3000.0, 30.0),
    "neck": (30.0, 1.0, (0.5, (-0.6, 0.7), 0.8), 2000.0, 2.0),
    "head": (20.0, 0.5, (0.3, (-0.4, 0.4), 0.8), 2000.0, 2.0),
    "upper_arm": (5.0, 2.0, (1.5, (-1.5, 1.5), 1.5), 200.0, 2.0),
    "lower_arm": (5.0, 0.5, (0.3, (-1.2, 1.2), 0.5), 200.0, 2.0),
    "thigh": (30.0, 3.0, (0.5, (-1.0, 1.0), 0.5), 500.0, 5.0),
    "leg": (30.0, 3.0, (0.2, (-1.2, 1.2), 0.2), 500.0, 5.0),
}

# webbing length beyond the anchor-to-body span that stretches with a belt
# segment (spooled on the retractor for the shoulder belt, around the pelvis
# for the lap belt), m
_SHOULDER_WEBBING = 1.2
_LAP_WEBBING = 0.3

_TORSO_RECLINE = math.radians(20.0)
_PAN_TILT = math.radians(10.0)
_H_POINT = np.array([0.0, 0.0, 0.40])


def _dot(a, b):
    """``a . b`` of 3-vectors, summed in order (the same operations on numbers and on
    the parameters' expressions, :mod:`mbfmu.dynamics.symbolic`)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _norm(a):
    return symbolic.sqrt(_dot(a, a))


def _in_frame(R, x):
    """``R.T @ x`` (a 3-vector or 3x3 ``x``) with the sums in the tape's order
    (:func:`mbfmu.dynamics.symbolic.matmul`)."""
    return symbolic.matmul(np.asarray(R).T, x)


def _frame(d, hint) -> np.ndarray:
    """Rotation whose z axis is ``d`` and x axis is ``hint`` made orthogonal."""
    d, hint = symbolic.real_array(d), symbolic.real_array(hint)
    z = d / _norm(d)
    x = hint - _dot(hint, z) * z
    x = x / _norm(x)
    return np.column_stack([x, cross(z, x), z])


def _holding_torques(model, poses: dict, names) -> np.ndarray:
    """Generalized forces (nv,) that hold the ball joints of bodies ``names`` against
    gravity in the seated posture (zero elsewhere): the moment about each joint, in its
    body's frame, of the weights of the bodies it carries, ``rnea(q0, 0, 0)`` of the model.

    Written in the model's numbers (poses, masses, centres of mass) with
    plain arithmetic, so that it follows the parameters' expressions while
    recording (:mod:`mbfmu.dynamics.symbolic`) and the plant built with
    numbers does the very same operations.
    """
    g = [float(v) for v in symbolic.value(model.gravity)]
    tau = symbolic.zeros(model.nv)
    for name in names:
        i = model.body_index(name)
        R_i, o_i = poses[name]
        moment = [0.0, 0.0, 0.0]
        for j in range(1, model.nbodies):
            k = j
            while k not in (0, i):
                k = model.bodies[k - 1].parent
            if k != i:  # j is not carried by joint i
                continue
            body = model.bodies[j - 1]
            R_j, o_j = poses[model.body_names[j]]
            c = [o_j[r] + _dot(R_j[r], body.com) - o_i[r] for r in range(3)]  # weight's lever arm, world
            f = [body.mass * gk for gk in g]
            arm = (c[1] * f[2] - c[2] * f[1], c[2] * f[0] - c[0] * f[2], c[0] * f[1] - c[1] * f[0])
            moment = [moment[r] - arm[r] for r in range(3)]  # held: minus the weight's moment
        for r in range(3):
            tau[model.idx_v[i] + r] = _dot(R_i[:, r], moment)
    return tau


def _segment(name: str, mass: float, scale: float, along=1.0):
    """(mass, CM distance from the proximal joint, inertia diag) for one de Leva segment."""
    frac, length, cm, radii = _DE_LEVA[name]
    L = length * scale
    I = mass * (np.array(radii) * L) ** 2
    return mass, cm * L * along, I


def _merge(a, b, offset_b: float):
    """Combine two coaxial segments (mass, cm, I_diag); b's cm shifted by offset_b along z."""
    ma, ca, Ia = a
    mb, cb, Ib = b
    m = ma + mb
    c = (ma * ca + mb * (cb + offset_b)) / m
    da, db = ca - c, cb + offset_b - c
    I = Ia + Ib + np.array([ma * da * da + mb * db * db] * 2 + [0.0])
    return m, c, I


PARAMETERS = Declaration(
    "crash_occupant",
    # an adult's seated geometry: the mass and stature scale the segments within these ranges
    Parameter("body_mass", "kg", 78.0, "occupant mass (segment masses scale with it)", "[30, 200]"),
    Parameter("stature", "m", 1.75, "occupant stature (scales segment inertias)", "[1.2, 2.2]"),
    Parameter("seat_stiffness", "N/m", 4.0e4, "stiffness per seat contact sphere", "(0, inf)"),
    Parameter("seat_damping", "N.s/m", 1.0e3, "damping per contact sphere", "[0, inf)"),
    Parameter("floor_stiffness", "N/m", 5.0e4, "stiffness per heel/toe sphere", "(0, inf)"),
    Parameter("seat_friction", "1", 0.5, "seat friction coefficient", "[0, inf)"),
    Parameter("floor_friction", "1", 0.6, "floor friction coefficient", "[0, inf)"),
    Parameter("belt_stiffness", "N", 1.5e5, "belt webbing force per unit strain", "(0, inf)"),
    Parameter("belt_damping", "N.s/m", 1.0e3, "damping per belt segment", "[0, inf)"),
    Parameter("belt_slack", "m", 0.03, "slack per belt segment (negative: pre-tension)", "[-0.05, 0.2]"),
    Parameter("pulse_peak", "m/s2", 20 * G, "peak deceleration of the built-in half-sine pulse (0: none)",
              "[0, inf)"),
    Parameter("pulse_duration", "s", 0.107, "duration of the built-in pulse", "(0, inf)"),
    Parameter("pulse_start", "s", 0.0, "start of the built-in pulse", "[0, inf)"),
)


class CrashOccupant(MultibodyPlant):
    """Belted 13-segment occupant on a crash sled (see the module docstring).

    Its parameters (keywords, SI units, defaults, bounds) are :data:`PARAMETERS`.
    """

    name = "crash_occupant"
    parameter_declaration = PARAMETERS
    description = ("Belted 13-segment human occupant (ball joints with stiffness, damping and range "
                   "limits, de Leva 1996 / Hybrid III 50th masses) on a crash sled: seat and floor "
                   "contact, lap-and-shoulder belt, head/chest accelerations, belt forces, HIC15.")
    default_step = 1e-3
    default_stop_time = 0.25
    internal_step = 2.5e-4

    @PARAMETERS.constructor
    def __init__(self, p):
        pulse_peak, pulse_duration, pulse_start = p.pulse_peak, p.pulse_duration, p.pulse_start
        self.pulse = tuple(symbolic.number(v) for v in (pulse_peak, pulse_duration, pulse_start))

        model, self._contacts, self._belts, shapes = self._build(
            p.body_mass, p.stature, p.seat_stiffness, p.seat_damping, p.floor_stiffness, p.seat_friction,
            p.floor_friction, p.belt_stiffness, p.belt_damping, p.belt_slack)
        super().__init__(model, np.zeros((model.nv, 1)))
        self.geometry = tuple(shapes)
        head, chest = model.body_index("head"), model.body_index("thorax")
        head_cg, chest_cg = (tuple(model.bodies[i - 1].com) for i in (head, chest))
        head_x0 = float(point_position(model, model.neutral(), head, head_cg)[0])
        nmech = model.nq + model.nv
        # the HIC states follow [q; v]: integral (continuous), history and maximum (discrete)
        nhist = HIC_HISTORY
        # the HIC recorder, and the sled frame it reads in (input 0 plus the pulse along x)
        self.register_elements(hic_recorder(head, head_cg), sled_frame((1.0, 0.0, 0.0), *self.pulse, input=0))
        self.inputs = (Signal("sled_acceleration", "m/s2",
                              "sled acceleration along its forward x axis (frontal crash: negative); "
                              "added to the built-in pulse", 0.0, -1000.0, 1000.0, kind="input"),)
        nbelt = len(self._belts.body)
        # each output with the engine sensor that computes it (in Python and in the native FMU);
        # an accelerometer's axis 3 (0-based) is its resultant
        self.outputs, self.sensors = declare_outputs(
            measured_vector("head_acceleration", 3, "m/s2", "head CG accelerometer (specific force), sled axis {i}",
                            lambda k: Accelerometer(head, head_cg, k)),
            measured("head_acceleration_resultant", "m/s2", "magnitude of head_acceleration",
                     Accelerometer(head, head_cg, 3)),
            measured_vector("chest_acceleration", 3, "m/s2",
                            "thorax CG accelerometer (specific force), sled axis {i}",
                            lambda k: Accelerometer(chest, chest_cg, k)),
            measured("chest_acceleration_resultant", "m/s2", "magnitude of chest_acceleration",
                     Accelerometer(chest, chest_cg, 3)),
            measured_vector("belt_force", nbelt, "N", "belt segment {i} tension (lap outboard, lap inboard, "
                            "shoulder upper, shoulder lower)", CableTension),
            measured("head_excursion", "m", "forward displacement of the head CG relative to the sled",
                     PointDisplacement(head, head_cg, 0, head_x0)),
            measured("hic15", "1", "HIC15 over the run so far (head resultant in g, time in s)",
                     sensors.StateValue(nmech + 1 + nhist)),  # the state hic15_max
            measured("sled_acceleration_total", "m/s2", "input plus built-in pulse, sled x", FrameAcceleration(0)),
            measured("kinetic_energy", "J", "kinetic energy relative to the sled", sensors.KineticEnergy()),
            measured("potential_energy", "J", "gravity, joint springs and limits, contact and belt elastic energy",
                     sensors.PotentialEnergy()))
        acc = tuple(s.name for s in self.outputs if "acceleration" in s.name)
        self.feedthrough = {name: ("sled_acceleration",) for name in acc}
        self.parameters = PARAMETERS.signals(p)

    # ---- construction ----------------------------------------------------------
    def _build(self, body_mass, stature, k_seat, c_seat, k_floor, mu_seat, mu_floor, EA, c_belt, slack):
        mscale = body_mass / 78.0
        lscale = stature / _DE_LEVA_STATURE

        def seg(name, along=1.0):
            return _segment(name, _DE_LEVA[name][0] * 78.0 * mscale, lscale, along)

        # seated posture in the sled frame
        u = np.array([-math.sin(_TORSO_RECLINE), 0.0, math.cos(_TORSO_RECLINE)])  # spine, upward
        fwd_t = np.array([math.cos(_TORSO_RECLINE), 0.0, math.sin(_TORSO_RECLINE)])
        R_trunk = _frame(u, fwd_t)
        H = _H_POINT
        L_pelvis, L_lumbar, L_thorax, L_neck = 0.10, 0.19, 0.245, 0.10
        d_thigh = np.array([math.cos(_PAN_TILT), 0.0, math.sin(_PAN_TILT)])
        n_pan = np.array([-math.sin(_PAN_TILT), 0.0, math.cos(_PAN_TILT)])
        L_thigh = _DE_LEVA["thigh"][1] * lscale
        L_shank = _DE_LEVA["shank"][1] * lscale
        ankle_z = 0.08
        c7 = H + (L_pelvis + L_lumbar + L_thorax) * u

        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name="crash_occupant")
        poses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        shapes: list[Shape] = []

        def add(name, parent, R_WB, o_W, mass_cm_I, joint_key, length, radius, color="#d9a27a"):
            m, cm, Idiag = mass_cm_I
            if parent == "world":
                R_PJ, p_PJ, joint = R_WB, o_W, FreeFlyer()
            else:
                R_WP, o_P = poses[parent]
                R_PJ, p_PJ, joint = _in_frame(R_WP, R_WB), _in_frame(R_WP, o_W - o_P), Spherical()
            com = (0.0, 0.0, cm) if np.ndim(cm) == 0 else cm
            i = b.add_body(name, parent, joint, m, com, np.diag(Idiag), R_PJ=R_PJ, p_PJ=p_PJ)
            poses[name] = (R_WB, o_W)
            if joint_key is not None:
                k, c, rng, kl, cl = _JOINTS[joint_key]
                lo = np.array([-rng[0], rng[1][0], -rng[2]])
                hi = np.array([rng[0], rng[1][1], rng[2]])
                b.add_joint_force(i, JointForce(stiffness=k, damping=c, lower=lo, upper=hi,
                                                limit_stiffness=kl, limit_damping=cl))
            if length > 0:
                shapes.append(Shape(i, "capsule", (radius, length), p=np.array([0.0, 0.0, length / 2]),
                                    color=color, name=name))
            return i

        # trunk: de Leva lower/middle/upper trunk on pelvis/lumbar/thorax
        add("pelvis", "world", R_trunk, H,
            seg("lower_trunk", L_pelvis / (_DE_LEVA["lower_trunk"][1] * lscale)), None, L_pelvis, 0.13)
        add("lumbar", "pelvis", R_trunk, H + L_pelvis * u,
            seg("mid_trunk", L_lumbar / (_DE_LEVA["mid_trunk"][1] * lscale)), "lumbar", L_lumbar, 0.12)
        add("thorax", "lumbar", R_trunk, H + (L_pelvis + L_lumbar) * u,
            seg("upper_trunk", L_thorax / (_DE_LEVA["upper_trunk"][1] * lscale)), "thorax", L_thorax, 0.14)
        # neck and head: de Leva head+neck mass, the head that of the Hybrid III 50th
        m_hn = _DE_LEVA["head_neck"][0] * 78.0 * mscale
        m_head = _HYBRID3_HEAD * mscale
        m_neck = m_hn - m_head
        R_up = _frame((0.0, 0.0, 1.0), (1.0, 0.0, 0.0))
        I_neck = m_neck * np.array([(3 * 0.05 ** 2 + L_neck ** 2) / 12] * 2 + [0.5 * 0.05 ** 2])
        add("neck", "thorax", R_up, c7, (m_neck, L_neck / 2, I_neck), "neck", L_neck, 0.05)
        _, _, I_hn = seg("head_neck")
        head = add("head", "neck", R_up, c7 + L_neck * np.array([0, 0, 1.0]),
                   (m_head, np.array([0.02, 0.0, 0.05]), I_hn * m_head / m_hn), "head", 0.0, 0.0)
        shapes.append(Shape(head, "sphere", (0.10,), p=np.array([0.02, 0.0, 0.06]), color="#d9a27a",
                            name="head"))
        # arms: upper arm down and slightly forward, forearm+hand forward onto the lap
        d_ua = np.array([0.25, 0.0, -0.97])
        d_fa = np.array([0.85, 0.0, -0.25])
        L_ua = _DE_LEVA["upper_arm"][1] * lscale
        L_fa = _DE_LEVA["forearm"][1] * lscale
        lower_arm = _merge(seg("forearm"), seg("hand"), L_fa)
        for side, sy in (("left", 1.0), ("right", -1.0)):
            shoulder = c7 - 0.05 * u + np.array([0.0, sy * 0.18, 0.0])
            add(f"upper_arm_{side}", "thorax", _frame(d_ua, (1.0, 0, 0.25)), shoulder, seg("upper_arm"),
                "upper_arm", L_ua, 0.045)
            elbow = shoulder + L_ua * d_ua / _norm(d_ua)
            add(f"lower_arm_{side}", f"upper_arm_{side}", _frame(d_fa, (0.25, 0, 0.85)), elbow, lower_arm,
                "lower_arm", L_fa + 0.08 * lscale, 0.035)
        # legs: thighs along the pan, shank+foot down to the floor
        m_foot, _, I_foot = seg("foot")
        leg = _merge(seg("shank"), (m_foot, 0.0, I_foot), L_shank)  # foot mass lumped at the ankle
        for side, sy in (("left", 1.0), ("right", -1.0)):
            hip = H + np.array([0.0, sy * 0.085, 0.0])
            add(f"thigh_{side}", "pelvis", _frame(d_thigh, n_pan), hip, seg("thigh"), "thigh", L_thigh, 0.075)
            knee = hip + L_thigh * d_thigh
            drop = knee[2] - ankle_z
            # forward reach of the shank, at least 1 mm (a short leg hangs vertically off the floor); the
            # max written as arithmetic: the same branch-free expression for every stature (symbolic.py)
            reach2 = L_shank ** 2 - drop ** 2
            d_leg = symbolic.real_array([symbolic.sqrt(0.5 * (reach2 + 1e-6 + abs(reach2 - 1e-6))), 0.0, -drop])
            add(f"leg_{side}", f"thigh_{side}", _frame(d_leg, (1.0, 0, 0.3)), knee, leg, "leg", L_shank, 0.05)
        model = b.build()
        # The arms, neck and head hang from the thorax: their springs are
        # preloaded (rest offset) to hold the seated posture against gravity,
        # as muscle tone does; trunk and legs rest on seat, floor and belt.
        hold = _holding_torques(model, poses, ("neck", "head", "upper_arm_left", "upper_arm_right",
                                               "lower_arm_left", "lower_arm_right"))
        forces = dict(model.joint_forces)
        for name in ("neck", "head", "upper_arm_left", "upper_arm_right", "lower_arm_left",
                     "lower_arm_right"):
            i = model.body_index(name)
            jf = forces[i]
            k = np.broadcast_to(jf.stiffness, (3,))
            sl = slice(model.idx_v[i], model.idx_v[i] + 3)
            forces[i] = JointForce(stiffness=jf.stiffness, damping=jf.damping, rest=hold[sl] / k,
                                   lower=jf.lower, upper=jf.upper, limit_stiffness=jf.limit_stiffness,
                                   limit_damping=jf.limit_damping)

        # ---- contacts (sphere centres given in the sled frame at the seated posture)
        n_back = fwd_t  # seat back normal, pointing forward (the back is parallel to the spine)
        pan_offset = float(n_pan @ H) - 0.13 + 0.003      # thigh spheres: 0.07 m below the axis, r 0.06
        back_offset = float(n_back @ H) - 0.17 + 0.0015   # back spheres: 0.10 m behind the spine, r 0.07
        spheres = []  # (body, centre in sled frame, radius, normal, offset, k, mu)
        for side, sy in (("left", 1.0), ("right", -1.0)):
            hip = H + np.array([0.0, sy * 0.085, 0.0])
            spheres.append(("pelvis", H - 0.03 * d_thigh - 0.08 * n_pan + np.array([0, sy * 0.07, 0]),
                            0.05, n_pan, pan_offset, k_seat, mu_seat))
            for s in (0.15, 0.30):
                spheres.append((f"thigh_{side}", hip + s * d_thigh - 0.07 * n_pan, 0.06, n_pan, pan_offset,
                                k_seat, mu_seat))
            R_leg, knee = poses[f"leg_{side}"]
            ankle = knee + L_shank * R_leg[:, 2]
            for dx in (-0.03, 0.15):
                spheres.append((f"leg_{side}", ankle + np.array([dx, 0.0, -0.05]), 0.03,
                                np.array([0.0, 0.0, 1.0]), 0.0006, k_floor, mu_floor))
        for name, s in (("pelvis", 0.05), ("lumbar", 0.10), ("thorax", 0.12)):
            R_WB, o = poses[name]
            spheres.append((name, o + s * u - 0.10 * n_back, 0.07, n_back, back_offset, k_seat, mu_seat))
        body = np.array([model.body_index(s[0]) for s in spheres])
        centers = np.array([_in_frame(poses[s[0]][0], s[1] - poses[s[0]][1]) for s in spheres])
        contacts = SpherePlaneSet(
            body=body, center=centers, radius=np.array([s[2] for s in spheres]),
            normal=np.array([s[3] for s in spheres]), offset=np.array([s[4] for s in spheres]),
            stiffness=symbolic.real_array([s[5] for s in spheres]),
            damping=symbolic.real_array([c_seat] * len(spheres)),
            friction=symbolic.real_array([s[6] for s in spheres]))

        # ---- belt: anchors in the sled frame, attachment points on pelvis / thorax
        R_th, o_th = poses["thorax"]
        buckle = np.array([0.0, -0.22, 0.33])
        belt = [  # (anchor, body, point in sled frame, extra webbing length in the retractor)
            (np.array([-0.10, 0.25, 0.30]), "pelvis", H + 0.09 * fwd_t + np.array([0, 0.14, -0.02]),
             _LAP_WEBBING),
            (buckle, "pelvis", H + 0.09 * fwd_t + np.array([0, -0.14, -0.02]), _LAP_WEBBING),
            (np.array([-0.30, 0.28, 1.00]), "thorax", c7 - 0.06 * u + 0.10 * fwd_t + np.array([0, 0.10, 0]),
             _SHOULDER_WEBBING),
            (buckle, "thorax", o_th + 0.05 * u + 0.12 * fwd_t + np.array([0, -0.10, 0]), 0.0),
        ]
        bb = np.array([model.body_index(x[1]) for x in belt])
        pts = np.array([_in_frame(poses[x[1]][0], x[2] - poses[x[1]][1]) for x in belt])
        anchors = np.array([x[0] for x in belt])
        L0 = np.array([_norm(x[0] - x[2]) for x in belt])
        extra = np.array([x[3] for x in belt])
        belts = CableSet(anchor=anchors, body=bb, point=pts, rest_length=L0 + slack,
                         stiffness=EA / (L0 + extra), damping=symbolic.real_array([c_belt] * len(belt)))
        # contacts and belt segments are force elements of the kernels
        model = Model(model.bodies, model.gravity, forces, model.springs, model.name,
                      contacts=contacts.elements(), cables=belts.elements())

        # ---- ground shapes: seat pan, seat back, floor, belt anchors
        shapes.append(Shape(0, "box", (0.5, 0.5, 0.08), R=_frame(n_pan, d_thigh),
                            p=H + 0.12 * d_thigh + (pan_offset - n_pan @ H - 0.04) * n_pan + np.zeros(3),
                            color="#444444", name="seat pan"))
        shapes.append(Shape(0, "box", (0.08, 0.5, 0.65), R=_frame(u, n_back),
                            p=H + 0.30 * u + (back_offset - n_back @ H - 0.04) * n_back, color="#444444",
                            name="seat back"))
        shapes.append(Shape(0, "box", (1.4, 0.9, 0.02), p=np.array([0.2, 0.0, -0.01]), color="#777777",
                            name="floor"))
        for k, a in enumerate(anchors):
            shapes.append(Shape(0, "sphere", (0.02,), p=a, color="#c03030", name=f"belt anchor {k + 1}"))
        return model, contacts, belts, shapes

    # ---- the sled -----------------------------------------------------------------
    def sled_acceleration(self, t: float, u) -> float:
        """Total sled acceleration along x at time ``t`` (input plus pulse), m/s2: the
        frame element's own C (``sled_frame.c``) through the kernels."""
        sensor = self.__dict__.get("_sled_sensor")
        if sensor is None:
            sensor = self._sled_sensor = CompiledSensors((FrameAcceleration(0),), self.model, len(self.inputs))
        x = self.initial_state()
        u = np.asarray(u if len(u) else np.zeros(1), float)
        nq, nv = self.model.nq, self.model.nv
        return float(sensor(t, x, x[nq:nq + nv], u, self._input_forces(u), self._element_registry())[0])

    def belt_lengths(self, x: np.ndarray) -> np.ndarray:
        """Current belt segment lengths, m."""
        return element_forces(self.model, x[:self.model.nq], np.zeros(self.model.nv)).cable_length


def sled_frame(axis, peak, duration, start, input: int = -1) -> NativeElement:
    """The sled frame (``sled_frame.c``, a frame element): the plant moves in the frame of a
    sled whose acceleration along ``axis`` is the input ``input`` plus a half-sine pulse,
    ``a_s(t, u) = u[input] - peak sin(pi (t - start) / duration)`` on ``[start, start +
    duration]``, m/s2.

    Parameters
    ----------
    axis : tuple of 3 float
        Unit direction of the sled's travel, world (sled) axes.
    peak : float
        Peak deceleration of the pulse, m/s2 (>= 0; 0: no pulse).
    duration, start : float
        Pulse duration (> 0) and start, s.
    input : int
        0-based index of the plant input added (m/s2), -1 for none.

    Returns
    -------
    NativeElement
        The element, for :meth:`MultibodyPlant.register_elements` (it acts on no body: its
        point, at body 1's origin, is unused).
    """
    return NativeElement(SLED_FRAME_C, "sled_frame", 1, (0.0, 0.0, 0.0),
                         (*axis, peak, duration, start, float(input)))


def hic_recorder(body: int, point) -> NativeElement:
    """The HIC15 recorder (``hic_recorder.c``) at ``point`` (body frame, m) of ``body``: the
    integral of the resultant specific force there in g (g.s, a continuous state), its values at
    the last :data:`HIC_HISTORY` instants of a :data:`HIC_SAMPLE` grid and the running maximum
    HIC15 over windows of up to :data:`HIC_WINDOW` between them (discrete states).

    Parameters
    ----------
    body : int
        The head (1-based engine body index).
    point : tuple of float
        The accelerometer's point, body frame, m.

    Returns
    -------
    NativeElement
        The element, for :meth:`MultibodyPlant.register_elements`.
    """
    return NativeElement(
        HIC_RECORDER_C, "hic15_recorder", body, point, (HIC_SAMPLE, G),
        states=(Signal("hic_integral", "1", "integral of the head resultant acceleration, g.s", 0.0, kind="state"),),
        discrete=vector("hic_history", HIC_HISTORY, "state", "1",
                        "hic_integral at the grid instant {i} of the last 15 ms (oldest first), g.s")
        + (Signal("hic15_max", "1", "running maximum HIC15", 0.0, kind="state"),))


def hic15(time: np.ndarray, resultant_g: np.ndarray, window: float = HIC_WINDOW) -> float:
    """HIC over windows up to ``window`` (s) from a sampled head resultant (g):
    ``max (t2 - t1) [1/(t2 - t1) int_t1^t2 a dt]^2.5`` over sample instants,
    with the trapezoidal integral. For checking a recorded run."""
    t = np.asarray(time, float)
    a = np.asarray(resultant_g, float)
    integral = np.concatenate([[0.0], np.cumsum(0.5 * (a[1:] + a[:-1]) * np.diff(t))])
    return hic_from_integral(t, integral, window)


def hic_from_integral(time: np.ndarray, integral: np.ndarray, window: float = HIC_WINDOW) -> float:
    """HIC over windows up to ``window`` (s) whose ends are sample instants,
    from the running integral of the head resultant (g.s) at those instants."""
    t = np.asarray(time, float)
    I = np.asarray(integral, float)
    best = 0.0
    for i in range(len(t)):
        j = np.searchsorted(t, t[i] + window + 1e-12, side="right")
        if j <= i + 1:
            continue
        dt = t[i + 1:j] - t[i]
        dI = np.maximum(I[i + 1:j] - I[i], 0.0)
        best = max(best, float(np.max(dt * (dI / dt) ** 2.5)))
    return best


PLANT = CrashOccupant
