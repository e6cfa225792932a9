"""Plants built from the engine's elements only, for the native-runtime tests:
a URDF chain on a floating base (quaternions, joint dampers and limits), a
ball on a plane (contact with friction, a cable and a spring), and the
flexible arm with finite-segment links (a rigid tree with elastic joints)."""
from __future__ import annotations

import numpy as np

from mbfmu.dynamics import ModelBuilder, sensors
from mbfmu.dynamics.joints import FreeFlyer, Revolute
from mbfmu.dynamics.urdf import load_urdf
from mbfmu.models.flexible_arm import FlexibleArm
from mbfmu.models.rigid_arm import RigidArm
from mbfmu.plant.multibody import MultibodyPlant, parameter_signals
from mbfmu.plant.signals import Signal, vector

URDF = """<robot name="chain">
  <link name="base"><inertial><origin xyz="0 0 0"/><mass value="3"/>
    <inertia ixx="0.05" iyy="0.06" izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="1.2"/>
    <inertia ixx="0.002" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="slide"><inertial><origin xyz="0 0 0.05"/><mass value="0.5"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0.1 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/><dynamics damping="0.3"/></joint>
  <joint name="telescope" type="prismatic"><parent link="upper"/><child link="slide"/>
    <origin xyz="0.4 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.05" upper="0.1" effort="10" velocity="1"/><dynamics damping="2.0"/></joint>
</robot>"""


class UrdfChain(MultibodyPlant):
    """Two-joint chain read from URDF on a floating base, joint torque/force in."""

    name = "urdf_chain"
    default_step = 0.01
    default_stop_time = 1.0
    internal_step = 1e-3

    def __init__(self, g: float = 9.81, spin: float = 0.5):
        model = load_urdf(URDF, floating_base=True, gravity=(0.0, 0.0, -g), use_damping=True,
                          use_limits=True)
        B = np.zeros((model.nv, 2))
        B[6, 0] = B[7, 1] = 1.0
        super().__init__(model, B, v0=np.r_[0.0, 0.0, spin, np.zeros(model.nv - 3)])
        self.parameters = parameter_signals({"g": (g, "m/s2", "gravity"), "spin": (spin, "rad/s", "initial yaw rate")},
                                            {"g": (0.0, None)})
        self.inputs = (Signal("tau", "N.m", "shoulder torque", 0.5, kind="input"),
                       Signal("force", "N", "telescope force", kind="input"))
        nx = model.nq + model.nv
        self.sensors = (tuple(sensors.StateValue(k) for k in range(nx))
                        + tuple(sensors.PointPosition(3, (0.1, 0.0, 0.05), k) for k in range(3))
                        + (sensors.KineticEnergy(), sensors.PotentialEnergy()))
        self.outputs = (tuple(Signal(f"x[{k + 1}]", kind="output") for k in range(nx))
                        + vector("tip", 3, "output", "m") + (Signal("ke", "J"), Signal("pe", "J")))


class Ball(MultibodyPlant):
    """A ball on a free joint over a plane with friction, tied by a cable and a spring."""

    name = "ball"
    default_step = 0.005
    default_stop_time = 1.0
    internal_step = 2.5e-4

    def __init__(self, mass: float = 0.8, stiffness: float = 2e4, friction: float = 0.4):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        b.add_body("ball", "world", FreeFlyer(), mass, (0.0, 0.0, 0.0), np.eye(3) * 0.4 * mass * 0.01)
        b.add_body("flap", "ball", Revolute(axis=(1.0, 0.0, 0.0)), 0.1, (0.0, 0.05, 0.0), np.eye(3) * 1e-4,
                   p_PJ=(0.0, 0.1, 0.0))
        b.add_contact_sphere_plane("ball", (0.0, 0.0, 0.0), 0.1, (0.0, 0.0, 1.0), 0.0, stiffness, 30.0,
                                   friction, name="floor")
        b.add_cable((0.0, 0.0, 1.5), "ball", (0.0, 0.0, 0.1), 1.3, 300.0, 2.0, name="tether")
        b.add_spring("world", (0.5, 0.0, 0.1), "flap", (0.0, 0.1, 0.0), 50.0, 0.5, 0.3, name="spring")
        model = b.build()
        B = np.zeros((model.nv, 1))
        B[3, 0] = 1.0  # a push along the ball's body x axis
        super().__init__(model, B, q0=[0.1, 0.0, 0.095, 1.0, 0.0, 0.0, 0.0, 0.2],
                         v0=[0.0, 0.0, 1.0, 0.5, 0.0, -0.5, 0.0])
        self.parameters = parameter_signals({
            "mass": (mass, "kg", "ball mass"), "stiffness": (stiffness, "N/m", "contact stiffness"),
            "friction": (friction, "1", "friction coefficient")}, {k: (0.0, None) for k in ("mass", "stiffness")})
        self.inputs = (Signal("push", "N", "push along the ball's x axis", 1.0, kind="input"),)
        self.sensors = (tuple(sensors.PointPosition(1, (0.0, 0.0, -0.1), k) for k in range(3))
                        + tuple(sensors.Velocity(k) for k in range(model.nv))
                        + (sensors.KineticEnergy(), sensors.PotentialEnergy(),
                           sensors.Linear(2.0, (0.0,) * 3 + (1.0,) + (0.0,) * 3 + (-0.5,))))
        self.outputs = (vector("bottom", 3, "output", "m") + vector("v", model.nv, "output")
                        + (Signal("ke", "J"), Signal("pe", "J"), Signal("mix", "1")))


class SegmentArm(FlexibleArm):
    """flexible_arm with finite-segment links (``method="segments"``, 6 segments per link)."""

    name = "segment_arm"

    def __init__(self, **parameters):
        super().__init__(**{"n_segments": 6, **parameters}, method="segments")


class PushedArm(RigidArm):
    """The library arm with a disturbance force computed in Python: not for the native runtime."""

    name = "pushed_arm"

    def applied_forces(self, t, q, v, u):
        return np.full(self.model.nv, 0.1 * np.sin(t)), None


class ArmWithPythonOutputs(RigidArm):
    """The library arm whose outputs are a Python function of the state: not for the native runtime."""

    name = "arm_with_python_outputs"

    def outputs_at(self, t, x, u):
        return np.tanh(super().outputs_at(t, x, u))


class BumpedChain(UrdfChain):
    """The URDF chain declaring a jump of its own: not for Model Exchange."""

    name = "bumped_chain"
    discontinuities = ("the telescope's end-stop impact (a velocity reset)",)
