"""URDF visuals become the viewer's shapes: primitives with their sizes,
placements and colours (inline or named materials), meshes of every format
the robots use (DAE, OBJ, STL) found through package:// URIs, decimated to
the face budget."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from robot_files import robot_file

from mbfmu.dynamics.spatial import rpy
from mbfmu.errors import ModelError
from mbfmu.plant.urdf import plant_from_urdf

PRIMITIVES = """<robot name="toy">
  <material name="steel"><color rgba="0.5 0.5 1 1"/></material>
  <link name="world"/>
  <link name="arm">
    <inertial><origin xyz="0 0 -0.25"/><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 -0.25" rpy="0.1 0.2 0.3"/><geometry><box size="0.1 0.2 0.5"/></geometry>
      <material name="steel"/></visual>
    <visual><geometry><cylinder radius="0.05" length="0.4"/></geometry>
      <material name="red"><color rgba="1 0 0 1"/></material></visual>
    <visual><origin xyz="0 0 -0.5"/><geometry><sphere radius="0.08"/></geometry></visual>
  </link>
  <joint name="pivot" type="revolute"><parent link="world"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-0.5" upper="0.5" effort="10" velocity="1"/></joint>
</robot>"""


def test_primitives_keep_their_size_placement_and_colour(tmp_path):
    path = tmp_path / "toy.urdf"
    path.write_text(PRIMITIVES)
    shapes = plant_from_urdf(path).geometry
    assert [(s.kind, s.size, s.color, s.body) for s in shapes] == [
        ("box", (0.1, 0.2, 0.5), "#8080ff", 1), ("cylinder", (0.05, 0.4), "#ff0000", 1),
        ("sphere", (0.08,), "#a0a0a8", 1)]
    np.testing.assert_allclose(shapes[0].R, rpy(0.1, 0.2, 0.3))
    np.testing.assert_allclose(shapes[0].p, [0, 0, -0.25])
    np.testing.assert_allclose(shapes[2].p, [0, 0, -0.5])


def test_joint_limits_from_the_urdf_hold_the_joint_when_asked(tmp_path):
    path = tmp_path / "toy.urdf"
    path.write_text(PRIMITIVES)
    free = plant_from_urdf(path, v0=[4.0])
    held = plant_from_urdf(path, v0=[4.0], limits=True)
    for plant, inside in ((free, False), (held, True)):  # launched at 4 rad/s, it swings past 0.5 rad when free
        _, X, _ = plant.simulate(1.0, 0.01)
        assert (np.abs(X[:, 0]).max() < 0.51) == inside


def test_stl_meshes_found_through_package_dirs_are_decimated(tmp_path):
    ur5 = robot_file("ur_description/urdf/ur5_robot.urdf")
    share = ur5.parents[4]  # .../share, holding example-robot-data/
    meshes_dir = share / "example-robot-data/robots/ur_description/meshes/ur5/collision"
    pkg = tmp_path / "packages" / "my_ur"  # a package of the user's own, not installed anywhere
    shutil.copytree(meshes_dir, pkg / "meshes")
    text = re.sub(r"package://example-robot-data/robots/ur_description/meshes/ur5/visual/([a-z0-9]+)\.dae",
                  r"package://my_ur/meshes/\1.stl", ur5.read_text())
    path = tmp_path / "ur5_stl.urdf"
    path.write_text(text)
    with pytest.raises(ModelError, match="package 'my_ur' not found.*package_dirs"):
        plant_from_urdf(path).geometry
    plant = plant_from_urdf(path, package_dirs=[tmp_path / "packages"], mesh_faces=3000)
    meshes = [s for s in plant.geometry if s.kind == "mesh"]
    assert len(meshes) == 7
    assert sum(len(s.mesh[1]) for s in meshes) <= 3000 * 1.05
    # the decimated base keeps its size: its extent matches the STL's own to a few mm
    import trimesh
    full = trimesh.load(meshes_dir / "base.stl")
    np.testing.assert_allclose(np.ptp(meshes[0].mesh[0], axis=0), np.ptp(full.vertices, axis=0), atol=5e-3)
