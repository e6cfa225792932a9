"""Free-floating satellite with two deployable solar wings and three reaction wheels.

The "satellite with solar panels, deployment process" test case of the
master's thesis "Visual simulation of mechanical multibody systems with
flexible bodies" (mechatronic engineering, in Chinese; software MDAS II). A
rigid hub floats freely (``FreeFlyer``: position and unit quaternion, no
gravity: orbit). On two opposite faces a wing of ``panels_per_wing`` panels is
stowed as a Z-fold (accordion) against the hub and deploys by itself, with no
input, driven by preloaded torsion springs in the hinges and slowed by viscous
hinge dampers.

Latch: a hinge swings freely (torsion spring and damper only) until it
first reaches its deployed angle (0 rad); at that instant its latch engages
and from then on adds a stiff two-sided spring-damper (``latch_stiffness``,
``latch_damping``) about the deployed angle, as a latch pin dropping into its
slot does. The torsion spring's rest angle lies ``hinge_preload`` beyond the
deployed angle, so the spring still pushes the panel into the latch. The
latch states ``latched[1..n]`` (0/1) are part of the plant state, so they
survive FMU state save/restore. Each latch is a plug-in element of this
plant's own (``hinge_latch.c``, ``mbfmu/dynamics/csrc/element.h``) on its
hinge's joint coordinate, with a state event: the plant's advance (and the
native FMU's Co-Simulation) splits the interval in which a latch engages at
the located instant (to 1e-13 rad), so no integration step straddles the
switch; in Model Exchange the latch is a state event of the FMU. Springs, dampers and latches are
internal torques between the two bodies of a hinge and gravity is off, so
the total linear and angular momentum are conserved by the equations of
motion; the integrator keeps them to about 1e-10 relative over a deployment
(see ``tests/plants/test_satellite.py``).

Panels are rigid (``panel_model="rigid"``, ``panel_segments=1``) or flexible
by the finite segment method of that thesis (``panel_model="segments"``): each
panel is cut into ``panel_segments`` rigid strips joined by revolute joints
about the hinge direction with torsion springs ``EI / segment length`` and
dampers, which models out-of-plane bending of the wing.

Three reaction wheels spin about the hub's x, y and z axes (revolute joints on
the hub, driven by the inputs ``wheel_torque[1..3]``, N.m; the reaction acts
on the hub through the joint).

Numbers (representative, not those of a given spacecraft): hub 1 m cube,
500 kg; panels 1.0 m (span) x 1.5 m (hinge line) x 30 mm, 10 kg (6.7 kg/m^2,
the areal mass of honeycomb sandwich rigid panels); reaction wheels 4 kg
with a 0.05 kg m^2 rotor (15-30 N.m.s at 3000-6000 rpm); hinge springs 0.3
N.m/rad preloaded 0.5 rad past the stop with 2 N.m.s/rad dampers: the wings
open in about 12 s and, released at zero initial rate, every latch has engaged
14 s after release (13.8 s). That holds only at rest: a spinning hub loads
the panels centrifugally and changes the latch order and times. Released at
0.05 rad/s about the hub's z axis, the second hinge of each wing latches only
at 21.8 s (21.1 s at 0.1 rad/s); spins of 0.05-0.1 rad/s about x or y keep
every latch within 12-16 s (measured with this model, ``initial_rate``). Latches
add 2000 N.m/rad and 50 N.m.s/rad. Panel bending stiffness EI = 1e4 N.m2
(a 25 mm sandwich with 0.3 mm CFRP skins) for the segmented panels.

Outputs: ``attitude[1..4]`` hub quaternion (w, x, y, z) in the inertial
frame, ``rate[1..3]`` hub body-frame angular velocity (rad/s),
``hinge_angle[1..n]`` (rad, 0 = deployed, wing 1 then wing 2, root hinge
first), ``wheel_speed[1..3]`` (rad/s, relative to the hub),
``angular_momentum[1..3]`` (N.m.s, inertial frame, about the inertial origin,
all bodies including the wheels), ``linear_momentum[1..3]`` (N.s),
``kinetic_energy`` and ``potential_energy`` (spring and stop energy, J).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mbfmu.dynamics import FreeFlyer, JointForce, ModelBuilder, Revolute, sensors, symbolic
from mbfmu.dynamics.algorithms import center_of_mass
from mbfmu.dynamics.integrators import ErrorControl
from mbfmu.dynamics.spatial import inertia_box, rot_x, rot_y, rot_z
from mbfmu.errors import InputError
from mbfmu.plant.elements import NativeElement
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.outputs import declare_outputs, measured, measured_vector
from mbfmu.plant.parameters import Declaration, Parameter
from mbfmu.plant import Shape
from mbfmu.plant.signals import Signal, vector

_WING_GAP = 0.05      # m, hub face to the root hinge line
_STACK = 0.02         # m, hinge offset from a panel's mid-plane (stack pitch 2 * _STACK)
_WHEEL_RADIUS = 0.15  # m, drawn size of a wheel (its inertia is a parameter)
#: The hinge latch's C (a plug-in element, ``mbfmu/dynamics/csrc/element.h``).
HINGE_LATCH_C = Path(__file__).with_name("hinge_latch.c")


_STRUCTURE = "a count: it changes the model's structure (rebuild the FMU to change it)"

PARAMETERS = Declaration(
    "satellite",
    Parameter("hub_mass", "kg", 500.0, "hub mass", "(0, inf)"),
    Parameter("hub_size", "m", 1.0, "hub cube edge", "(0, inf)"),
    Parameter("panel_mass", "kg", 10.0, "mass of one panel", "(0, inf)"),
    Parameter("panel_length", "m", 1.0, "panel span along the wing (hinge to hinge)", "(0, inf)"),
    Parameter("panel_width", "m", 1.5, "panel extent along the hinge line", "(0, inf)"),
    # thinner than the stowed stack's pitch, so the stowed panels do not overlap
    Parameter("panel_thickness", "m", 0.03, "panel thickness", f"(0, {2 * _STACK:g})"),
    Parameter("panels_per_wing", "1", 3, "panels in each wing", "[1, 10]", integer=True, rebuild=_STRUCTURE),
    Parameter("hinge_stiffness", "N.m/rad", 0.3, "hinge torsion spring stiffness", "(0, inf)"),
    # the spring still pushes hinge_stiffness * hinge_preload against the stop once latched
    Parameter("hinge_preload", "rad", 0.5, "spring rest angle beyond the deployed stop", "[0, inf)"),
    Parameter("hinge_damping", "N.m.s/rad", 2.0, "hinge viscous damper", "[0, inf)"),
    Parameter("latch_stiffness", "N.m/rad", 2000.0, "stiffness an engaged latch adds", "(0, inf)"),
    Parameter("latch_damping", "N.m.s/rad", 50.0, "damping an engaged latch adds", "[0, inf)"),
    Parameter("wheel_mass", "kg", 4.0, "mass of one reaction wheel", "(0, inf)"),
    Parameter("wheel_inertia", "kg.m2", 0.05, "spin-axis inertia of one reaction wheel", "(0, inf)"),
    Parameter("panel_segments", "1", 1, "rigid strips per panel (1 = rigid panels)", "[1, 20]", integer=True,
              rebuild=_STRUCTURE),
    Parameter("panel_bending_stiffness", "N.m2", 1.0e4, "panel bending stiffness EI (segments only)",
              "(0, inf)"),
    Parameter("panel_bending_damping", "N.m.s/rad", 5.0, "damping of a strip joint (segments only)", "[0, inf)"),
    # the hub's linear velocity at t = 0 is chosen so the total linear momentum is zero
    Parameter("initial_rate", "rad/s", (0.0, 0.0, 0.0), "hub body rate at t = 0, axis {i}", size=3),
    Parameter("initial_wheel_speed", "rad/s", (0.0, 0.0, 0.0), "wheel {i} speed at t = 0", size=3),
)


class Satellite(MultibodyPlant):
    """Free-floating hub, two spring-deployed solar wings with latches, three
    reaction wheels (see the module docstring for the model and numbers).

    Its parameters (keywords, SI units, defaults, bounds) are :data:`PARAMETERS`;
    the option ``panel_model`` (``"rigid"`` or ``"segments"``, default from
    ``panel_segments``: 1 = rigid) cuts each panel into ``panel_segments``
    rigid strips with bending springs.
    """

    name = "satellite"
    parameter_declaration = PARAMETERS
    description = ("Free-floating satellite: rigid hub (quaternion attitude), two solar wings of "
                   "spring-deployed panels with dampers and latches, three reaction wheels.")
    default_step = 0.05
    default_stop_time = 30.0   # the default wings latch after about 14 s (at zero initial rate)
    internal_step = 5e-4       # rigid panels; segmented panels choose a smaller one
    # attitude work lives on momentum bookkeeping over long slews: integrate to 1e-10 by
    # default (still 2-3x faster than the fixed 0.5 ms RK4 it replaces)
    error_control = ErrorControl(rtol=1e-10, atol=1e-10)

    @PARAMETERS.constructor
    def __init__(self, par, panel_model: str | None = None):
        hub_mass, hub_size, panel_mass, panel_length = par.hub_mass, par.hub_size, par.panel_mass, par.panel_length
        panel_width, panel_thickness = par.panel_width, par.panel_thickness
        hinge_stiffness, hinge_preload, hinge_damping = par.hinge_stiffness, par.hinge_preload, par.hinge_damping
        latch_stiffness, latch_damping = par.latch_stiffness, par.latch_damping
        wheel_mass, wheel_inertia = par.wheel_mass, par.wheel_inertia
        panel_bending_stiffness, panel_bending_damping = par.panel_bending_stiffness, par.panel_bending_damping
        n_panels, n_seg = par.panels_per_wing, par.panel_segments
        rate0, wheel0 = par.initial_rate, par.initial_wheel_speed
        if panel_model is None:
            panel_model = "rigid" if n_seg == 1 else "segments"
        if panel_model == "rigid" and n_seg != 1:
            raise InputError("plant 'satellite': panel_model='rigid' needs panel_segments = 1 "
                             f"(got {n_seg})")
        if panel_model == "segments" and n_seg < 2:
            raise InputError("plant 'satellite': panel_model='segments' needs panel_segments >= 2")
        if panel_model not in ("rigid", "segments"):
            raise InputError(f"plant 'satellite': panel_model {panel_model!r} is not 'rigid' or "
                             "'segments' (flexible panels are modelled by finite segments)")
        self.panel_model = panel_model

        b = ModelBuilder(gravity=(0.0, 0.0, 0.0), name="satellite")
        s = hub_size
        hub = b.add_body("hub", "world", FreeFlyer(), hub_mass, (0, 0, 0), inertia_box(hub_mass, (s, s, s)))
        shapes = [Shape(hub, "box", (s, s, s), color="#c9a227", name="hub")]

        # reaction wheels: spin axis = hub x, y, z; joint frame z along the spin axis
        wheel_R = (rot_y(np.pi / 2), rot_x(-np.pi / 2), np.eye(3))
        It = 0.5 * wheel_inertia + wheel_mass * 0.06 ** 2 / 12.0  # disc-like rotor, 60 mm thick
        self.wheel_bodies = []
        for k in range(3):
            p = symbolic.zeros(3)
            p[k] = 0.25 * s
            body = b.add_body(f"wheel_{'xyz'[k]}", hub, Revolute(axis=(0, 0, 1)), wheel_mass, (0, 0, 0),
                              np.diag([It, It, wheel_inertia]), R_PJ=wheel_R[k], p_PJ=p)
            self.wheel_bodies.append(body)
            shapes.append(Shape(body, "cylinder", (_WHEEL_RADIUS, 0.06), color="#555555",
                                name=f"wheel {'xyz'[k]}"))

        # wings: Z-folded panels; panel frame x along the span, z along the hinge line,
        # y normal to the panel. Wing 2 is wing 1 turned 180 deg about the hub z axis.
        L, W, t = panel_length, panel_width, panel_thickness
        ls = L / n_seg
        m_seg = panel_mass / n_seg
        I_seg = inertia_box(m_seg, (ls, t, W))
        self.hinge_bodies = []
        q_stow = []
        hinge_force = lambda stow: JointForce(stiffness=hinge_stiffness, damping=hinge_damping,
                                              rest=-math.copysign(1.0, stow) * hinge_preload)
        for w, side in enumerate((1.0, -1.0)):
            parent = hub
            R_PJ = rot_z(side * np.pi / 2)
            p_PJ = np.array([side * s / 2, side * (s / 2 + _WING_GAP), 0.0])
            mid = 0.0
            for k in range(1, n_panels + 1):
                sigma = 1.0 if k % 2 else -1.0
                if k > 1:
                    p_PJ = np.array([ls, mid + sigma * _STACK, 0.0])
                    R_PJ = np.eye(3)
                    mid = -sigma * _STACK
                stow = np.pi / 2 if k == 1 else sigma * np.pi
                for j in range(n_seg):
                    name = f"wing{w + 1}_panel{k}" + (f"_seg{j + 1}" if n_seg > 1 else "")
                    if j > 0:
                        p_PJ = np.array([ls, mid, 0.0])
                        R_PJ = np.eye(3)
                        mid = 0.0
                    body = b.add_body(name, parent, Revolute(axis=(0, 0, 1)), m_seg, (ls / 2, mid, 0.0),
                                      I_seg, R_PJ=R_PJ, p_PJ=p_PJ)
                    if j == 0:
                        b.add_joint_force(body, hinge_force(stow))  # the latch is added in Python
                        self.hinge_bodies.append(body)
                        q_stow.append((body, stow))
                    else:
                        b.add_joint_force(body, JointForce(stiffness=panel_bending_stiffness / ls,
                                                           damping=panel_bending_damping))
                    shapes.append(Shape(body, "box", (ls, t, W), p=np.array([ls / 2, mid, 0.0]),
                                        color="#1f3f8f", name=name))
                    parent = body
        model = b.build()

        q0 = model.neutral()
        for body, stow in q_stow:
            q0[model.idx_q[body]] = stow
        for k, body in enumerate(self.wheel_bodies):
            q0[model.idx_q[body]] = 0.0
        v0 = symbolic.zeros(model.nv)
        c_hub = center_of_mass(model, q0)  # hub at the origin with identity attitude: hub frame
        v0[0:3] = rate0
        v0[3:6] = -np.cross(rate0, c_hub)  # zero total linear momentum (stowed wings move with the hub)
        for k, body in enumerate(self.wheel_bodies):
            v0[model.idx_v[body]] = wheel0[k]

        B = np.zeros((model.nv, 3))
        for k, body in enumerate(self.wheel_bodies):
            B[model.idx_v[body], k] = 1.0
        super().__init__(model, B, q0, v0)
        self.geometry = tuple(shapes)
        if n_seg > 1:
            # strip joints are the fastest dynamics: keep RK4 well inside its accuracy region
            I_joint = m_seg * ls * ls / 3.0
            omega = math.sqrt((panel_bending_stiffness / ls + latch_stiffness) / I_joint)
            rate = (panel_bending_damping + latch_damping) / I_joint
            self.internal_step = min(type(self).internal_step, 0.02 / max(omega, rate))
        self.n_hinges = len(self.hinge_bodies)
        self._hinge_iq = np.array([model.idx_q[i] for i in self.hinge_bodies])
        self._wheel_iv = np.array([model.idx_v[i] for i in self.wheel_bodies])
        self._hinge_iv = np.array([model.idx_v[i] for i in self.hinge_bodies])
        # travel past the deployed angle is -sign(stowed angle) * angle
        self._hinge_sign = -np.sign([stow for _, stow in q_stow])
        # each hinge's latch: a plug-in element on its joint coordinate (hinge_latch.c)
        flags = vector("latched", self.n_hinges, "state", "1", "latch {i} engaged (1; free 0)", min=0.0, max=1.0)
        self.register_elements(*(hinge_latch(body, int(model.idx_q[body]), int(model.idx_v[body]), float(sign),
                                             latch_stiffness, latch_damping, flag, f"latch {j + 1}")
                                 for j, (body, sign, flag) in enumerate(zip(self.hinge_bodies, self._hinge_sign,
                                                                             flags))))

        # the outputs as engine sensors (evaluated in Python and in the native FMU)
        self.inputs = vector("wheel_torque", 3, "input", "N.m",
                             "motor torque on the reaction wheel about hub axis {i} (x, y, z)")
        # each output with the engine sensor that computes it (in Python and in the native FMU)
        self.outputs, self.sensors = declare_outputs(
            measured_vector("attitude", 4, "1", "hub attitude quaternion element {i} (w, x, y, z)",
                            lambda k: sensors.Quaternion(3, k), start=[1.0, 0, 0, 0]),
            measured_vector("rate", 3, "rad/s", "hub angular velocity, hub axis {i}", sensors.Velocity),
            measured_vector("hinge_angle", self.n_hinges, "rad",
                            "hinge {i} angle from its deployed stop (wing 1 root first, then wing 2)",
                            lambda k: sensors.StateValue(int(self._hinge_iq[k]))),
            measured_vector("wheel_speed", 3, "rad/s", "speed of reaction wheel {i} relative to the hub",
                            lambda k: sensors.Velocity(int(self._wheel_iv[k]))),
            measured_vector("angular_momentum", 3, "N.m.s",
                            "total angular momentum about the inertial origin, inertial axis {i}", sensors.Momentum),
            measured_vector("linear_momentum", 3, "N.s", "total linear momentum, inertial axis {i}",
                            lambda k: sensors.Momentum(3 + k)),
            measured("kinetic_energy", "J", "total kinetic energy", sensors.KineticEnergy()),
            measured("potential_energy", "J", "energy stored in hinge springs, stops and panel strips",
                     sensors.PotentialEnergy(elements=True)))
        self.parameters = PARAMETERS.signals(par)

    def hinge_angles(self, X: np.ndarray) -> np.ndarray:
        """Hinge angles (rad) of states ``X`` (..., nstates) -> (..., n_hinges)."""
        return np.asarray(X)[..., self._hinge_iq]


def hinge_latch(body: int, iq: int, iv: int, sign: float, stiffness, damping, flag: Signal,
                name: str) -> NativeElement:
    """The latch (``hinge_latch.c``) of the hinge of ``body`` (its angle ``q[iq]``, rate
    ``v[iv]``): it engages when ``sign * q[iq]`` (rad) first reaches 0 and then adds
    ``stiffness`` (N m/rad) and ``damping`` (N m s/rad) about the deployed angle.

    Parameters
    ----------
    body : int
        The hinge's body (engine index).
    iq, iv : int
        The hinge's configuration and velocity coordinates (0-based).
    sign : float
        +1 or -1: the hinge travels past its deployed stop by ``sign * q[iq]``, rad.
    stiffness, damping : float
        What the engaged latch adds, N m/rad and N m s/rad (expressions of the plant's
        parameters while the tape records).
    flag : Signal
        The latch's state (0 free, 1 engaged).
    name : str
        The latch, for its event indicator's description.

    Returns
    -------
    NativeElement
        The element, for :meth:`MultibodyPlant.register_elements`.
    """
    return NativeElement(HINGE_LATCH_C, "hinge_latch", body, (0.0, 0.0, 0.0), (sign, stiffness, damping),
                         discrete=(flag,), joint_q=(iq,), joint_v=(iv,),
                         events=(f"{name}: travel past the deployed stop (rad), engages at 0",))


PLANT = Satellite
