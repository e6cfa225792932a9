"""Issue 26, items 2 and 12: a URDF from someone else is data. Its mesh paths
cannot make the build copy local files into the FMU (the secret stays out),
a mesh must be a readable STL/OBJ/DAE, and links the tree does not reach are
refused by name instead of being dropped silently."""
from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path

import pytest

from mbfmu.cli import main
from mbfmu.dynamics.urdf import load_urdf
from mbfmu.errors import ModelError
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.urdf import plant_from_urdf
from mbfmu.plant.urdf_files import BadMesh

SECRET = "BEGIN OPENSSH PRIVATE KEY mbfmu-test-secret-4f1c"
# one link on a hinge (so the plant builds), with one visual mesh named by MESH
ROBOT = """<robot name="evil">
  <link name="base"/>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="{mesh}"/></geometry></visual>
    <visual><geometry><box size="0.1 0.1 0.5"/></geometry></visual>
  </link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>"""
STL = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n"


@pytest.fixture
def place(tmp_path):
    """``place(mesh)``: a URDF in ``tmp/victim/robots/evil/`` naming ``mesh``, with the
    secret in ``tmp/victim/outside/id_rsa`` (and ``id_rsa.stl``); returns the URDF's path."""
    outside = tmp_path / "victim" / "outside"
    outside.mkdir(parents=True)
    (outside / "id_rsa").write_text(SECRET)
    (outside / "id_rsa.stl").write_text(SECRET)
    folder = tmp_path / "victim" / "robots" / "evil"
    folder.mkdir(parents=True)
    (folder / "ok.stl").write_text(STL)

    def make(mesh: str) -> Path:
        path = folder / "evil.urdf"
        path.write_text(ROBOT.format(mesh=mesh.replace("{outside}", str(outside))))
        return path
    return make


def fmu_bytes(fmu: Path) -> bytes:
    with zipfile.ZipFile(fmu) as z:
        return b"".join(z.read(n) for n in z.namelist())


ESCAPES = {
    "relative": "../../outside/id_rsa",
    "relative with a mesh suffix": "../../outside/id_rsa.stl",
    "absolute": "{outside}/id_rsa.stl",
    "file URI": "file://{outside}/id_rsa.stl",
    "system file": "../../../../../../../../../../etc/passwd",
    "package climbing out": "package://evil/../../outside/id_rsa.stl",
    "package named after a folder above": "package://victim/outside/id_rsa.stl",
}


@pytest.mark.parametrize("mesh", ESCAPES.values(), ids=ESCAPES.keys())
def test_a_mesh_outside_the_urdf_folder_is_refused_by_name(place, mesh, tmp_path):
    urdf = place(mesh)
    with pytest.raises(ModelError) as err:
        build_fmu(plant_from_urdf(urdf), tmp_path / "fmus")
    text = str(err.value)
    assert "link 'arm' visual 0" in text and (mesh.split("{outside}")[-1] in text or "not found" in text)
    assert not list((tmp_path / "fmus").glob("*.fmu"))
    with pytest.raises(ModelError):  # the viewer reads the same meshes the same way
        plant_from_urdf(urdf).geometry


@pytest.mark.parametrize("mesh", ESCAPES.values(), ids=ESCAPES.keys())
def test_skip_bad_meshes_drops_them_and_the_secret_stays_out(place, mesh, tmp_path, caplog):
    urdf = place(mesh)
    with caplog.at_level(logging.WARNING, logger="mbfmu.plant"):
        fmu = build_fmu(plant_from_urdf(urdf, skip_bad_meshes=True), tmp_path / "fmus")
    assert SECRET.encode() not in fmu_bytes(fmu)
    assert "dropped the mesh of link 'arm' visual 0" in caplog.text
    with zipfile.ZipFile(fmu) as z:
        assert not [n for n in z.namelist() if n.startswith("resources/urdf/meshes/")]
        urdf_copy = z.read("resources/urdf/evil.urdf").decode()
    assert "<mesh" not in urdf_copy and "<box" in urdf_copy  # the bad visual is gone, the other stays


def test_a_symbolic_link_inside_the_folder_that_points_outside_is_refused(place, tmp_path):
    urdf = place("meshes/link.stl")
    (urdf.parent / "meshes").mkdir()
    os.symlink(tmp_path / "victim" / "outside" / "id_rsa.stl", urdf.parent / "meshes" / "link.stl")
    with pytest.raises(BadMesh, match="outside the URDF's folder"):
        build_fmu(plant_from_urdf(urdf), tmp_path / "fmus")


NOT_MESHES = {
    "a secret named .stl": ("key.stl", SECRET),
    "a text file": ("notes.txt", SECRET),
    "a DAE with entities": ("link.dae", '<?xml version="1.0"?><!DOCTYPE c [<!ENTITY s SYSTEM '
                                        '"file:///etc/passwd">]><COLLADA>&s;</COLLADA>'),
    "an OBJ without faces": ("empty.obj", "# nothing\nv 0 0 0\n"),
}


@pytest.mark.parametrize("name, content", NOT_MESHES.values(), ids=NOT_MESHES.keys())
def test_a_file_that_is_not_a_readable_mesh_is_refused(place, name, content, tmp_path):
    urdf = place(name)
    (urdf.parent / name).write_text(content)
    with pytest.raises(BadMesh, match=f"'{name}'.*(skip_bad_meshes=True)"):
        build_fmu(plant_from_urdf(urdf), tmp_path / "fmus")
    fmu = build_fmu(plant_from_urdf(urdf, skip_bad_meshes=True), tmp_path / "fmus")
    assert SECRET.encode() not in fmu_bytes(fmu)


def test_a_good_mesh_inside_the_folder_still_travels(place, tmp_path):
    fmu = build_fmu(plant_from_urdf(place("ok.stl")), tmp_path / "fmus")
    with zipfile.ZipFile(fmu) as z:
        assert z.read("resources/urdf/meshes/0_ok.stl").decode() == STL


def test_the_command_line_refuses_naming_its_flag_and_skips_on_request(place, tmp_path, capsys, caplog):
    urdf = place("../../outside/id_rsa.stl")
    assert main(["build", str(urdf), "-o", str(tmp_path / "fmus")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "../../outside/id_rsa.stl" in err and "--skip-bad-meshes" in err
    assert "skip_bad_meshes=True" not in err
    with caplog.at_level(logging.WARNING, logger="mbfmu.plant"):  # one plain line on stderr outside pytest
        assert main(["build", str(urdf), "-o", str(tmp_path / "fmus"), "--skip-bad-meshes"]) == 0
    assert "dropped the mesh of link 'arm' visual 0" in caplog.text
    assert SECRET.encode() not in fmu_bytes(tmp_path / "fmus" / "evil.fmu")


DETACHED = """<robot name="loop">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="ring_a"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="ring_b"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <joint name="ab" type="revolute"><parent link="ring_a"/><child link="ring_b"/><axis xyz="0 1 0"/></joint>
  <joint name="ba" type="revolute"><parent link="ring_b"/><child link="ring_a"/><axis xyz="0 1 0"/></joint>
</robot>"""


def test_a_loop_detached_from_the_tree_is_refused_by_name(tmp_path):
    with pytest.raises(ModelError, match=r"links \['ring_a', 'ring_b'\] are not connected to the root link 'base'"):
        load_urdf(DETACHED)
    path = tmp_path / "loop.urdf"
    path.write_text(DETACHED)
    assert main(["build", str(path), "-o", str(tmp_path)]) == 1
    assert not list(tmp_path.glob("*.fmu"))
