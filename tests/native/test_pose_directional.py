"""Exact directional derivatives of a body's world pose and twist outputs (a robot's ``--pose``
and ``--twist``: ``sensors.BodyQuaternion``, ``sensors.BodyTwist``), on a ball-jointed link
carrying a hinged one, under gravity with torque inputs, at a generic state. The FMU's
directional derivatives equal central differences of the FMU and of the Python plant within
their error, and the Richardson oracle of the Python plant to 1e-10 of each block's largest
entry (``check_exact_tangents``). Before, such a plant claimed no directional derivatives.
"""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from mbfmu.dynamics import ModelBuilder, sensors
from mbfmu.dynamics.joints import Fixed, Revolute, Spherical
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.signals import Signal, vector

from .tangent_checks import check_exact_tangents


class PosedArm(MultibodyPlant):
    """A link on a ball joint carrying a hinged link with a tool flange on a fixed joint; outputs
    the flange's world pose (origin, orientation quaternion) and twist, and the hinged link's."""

    name = "posed_arm"
    default_step = 0.01
    default_stop_time = 1.0
    internal_step = 1e-3

    def __init__(self):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        b.add_body("upper", "world", Spherical(), 1.5, (0.0, 0.0, -0.2), np.diag([0.02, 0.025, 0.008]))
        b.add_body("lower", "upper", Revolute(axis=(0.0, 1.0, 0.0)), 0.8, (0.05, 0.0, -0.15),
                   np.diag([0.008, 0.01, 0.003]), p_PJ=(0.0, 0.0, -0.4))
        # a tool flange on a fixed joint, offset and turned (what a URDF's tool0 is)
        c, s_ = np.cos(0.4), np.sin(0.4)
        b.add_body("tool", "lower", Fixed(), 0.1, (0.0, 0.0, 0.02), np.diag([1e-4, 1e-4, 1e-4]),
                   p_PJ=(0.03, 0.0, -0.3), R_PJ=np.array([[c, 0.0, s_], [0.0, 1.0, 0.0], [-s_, 0.0, c]]))
        model = b.build()
        tool = model.body_index("tool")
        B = np.zeros((model.nv, 2))
        B[0, 0] = B[3, 1] = 1.0
        super().__init__(model, B)
        self.inputs = (Signal("tau_x", "N.m", "upper torque x", 0.3, kind="input"),
                       Signal("tau_hinge", "N.m", "hinge torque", kind="input"))
        self.sensors = (tuple(sensors.PointPosition(tool, (0.0, 0.0, 0.0), k) for k in range(3))
                        + tuple(sensors.BodyQuaternion(tool, k) for k in range(4))
                        + tuple(sensors.BodyTwist(tool, k) for k in range(6))
                        + tuple(sensors.BodyQuaternion(2, k) for k in range(4))
                        + tuple(sensors.BodyTwist(2, k) for k in range(6)))
        self.outputs = (vector("origin", 3, "output", "m") + vector("quaternion", 4, "output", "1")
                        + vector("twist", 6, "output", "") + vector("lower_quaternion", 4, "output", "1")
                        + vector("lower_twist", 6, "output", ""))


@pytest.fixture(scope="module")
def posed_fmu(tmp_path_factory):
    return build_fmu(PosedArm, tmp_path_factory.mktemp("dd_pose"), runtime="native", platforms=("linux64",))


def test_pose_and_twist_outputs_have_exact_directional_derivatives(posed_fmu):
    md = read_model_description(str(posed_fmu))
    assert md.coSimulation.providesDirectionalDerivative and md.modelExchange.providesDirectionalDerivative
    assert validate_fmu(str(posed_fmu)) == []
    phi = np.array([0.3, -0.2, 0.5])
    th = np.linalg.norm(phi)
    x = np.r_[np.cos(th / 2), np.sin(th / 2) * phi / th, 0.7, [0.4, -0.3, 0.8, -0.5]]
    check_exact_tangents(posed_fmu, PosedArm(), x, np.array([0.3, -0.2]), "generic")
