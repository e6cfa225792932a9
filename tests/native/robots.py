"""URDF robots of example-robot-data (UR5, Panda) with every joint damped, limited and
given Coulomb friction, their actuation per joint (torque, position and velocity
servos) and held test inputs: the robots of the native-runtime tests."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

from mbfmu.plant.urdf import plant_from_urdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "robots"))
from robot_files import robot_file  # noqa: E402


# robot -> (URDF in example-robot-data, actuation per joint covering the three modes, a link to watch)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf",
            {"shoulder_pan_joint": "torque", "shoulder_lift_joint": "position", "elbow_joint": "position",
             "wrist_1_joint": "velocity", "wrist_2_joint": "velocity", "wrist_3_joint": "torque"}, "tool0"),
    "panda": ("panda_description/urdf/panda.urdf",
              {**{f"panda_joint{k}": "position" for k in (1, 2, 3)},
               **{f"panda_joint{k}": "velocity" for k in (4, 5)},
               "panda_joint6": "torque", "panda_joint7": "torque", "panda_finger_joint1": "position",
               "panda_finger_joint2": "torque"}, "panda_hand"),
}


# the inputs, by kind, and a start velocity: every servo tracks away from its start, friction is on at once
INPUTS = {"tau": (2.0, -1.5, 0.5), "q_ref": (0.4, -0.3, 0.2, 0.01), "v_ref": (0.5, -0.4)}


OPTIONS = dict(damping=True, friction=True, limits=True, friction_velocity=0.05)


H, N = 0.01, 40  # step [s] and number of steps of the comparisons


def robot_copy(name: str, folder: Path) -> Path:
    """The robot's URDF with every joint damped (N m s/rad) and given Coulomb friction
    (N m), written to ``folder`` (its meshes found in the installed example-robot-data)."""
    text = robot_file(ROBOTS[name][0]).read_text()
    text = re.sub(r"<dynamics[^>]*/>", "", text)
    text = re.sub(r"(<joint [^>]*type=\"(?:revolute|prismatic)\"[^>]*>)",
                  r'\1<dynamics damping="0.8" friction="1.2"/>', text)
    path = folder / f"{name}_damped.urdf"
    path.write_text(text)
    return path


def robot_plant(name: str, folder: Path, **extra):
    """The plant of robot ``name`` (its copy written to ``folder``), watching one link's pose and twist."""
    rel, actuation, link = ROBOTS[name]
    path = robot_copy(name, folder)
    nv = 6 if name == "ur5" else 9
    return plant_from_urdf(path, actuation=actuation, poses=[link], twists=[link], v0=np.linspace(0.3, -0.3, nv),
                           **OPTIONS, **extra)


def inputs_of(plant) -> dict[str, float]:
    """Held test inputs by name: torques [N m], position references offset from the start [rad], velocity references [rad/s]."""
    out = {}
    for s in plant.inputs:
        base, k = s.name.split("[")
        out[s.name] = (s.start if base == "q_ref" else 0.0) + INPUTS[base][int(k[:-1]) - 1]
    return out
