"""A robot is a plant wherever a plant is named (issue 27, parts 2 and 4):
URDF paths in list, linearize and load_plant, copies that find their meshes
(the installed example-robot-data, --package-dir), robots by name from
example-robot-data, and robot parameters checked against Pinocchio."""
from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pinocchio as pin
import pytest
from fmpy import read_model_description
from robot_files import robot_file

import mbfmu
from mbfmu.cli import main
from mbfmu.errors import InputError, ModelError, UnknownNameError
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.robots import robot_names, robot_urdf

UR5 = "ur_description/urdf/ur5_robot.urdf"
PANDA = "panda_description/urdf/panda.urdf"


@pytest.fixture
def copied(tmp_path, monkeypatch):
    """The UR5's URDF copied alone into an empty working folder, as ``./robot.urdf``."""
    shutil.copy(robot_file(UR5), tmp_path / "robot.urdf")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "robot.urdf"


def test_list_linearize_and_load_plant_take_a_urdf_path(copied, capsys):
    assert main(["list", "./robot.urdf"]) == 0
    out = capsys.readouterr().out
    assert "tau[6]" in out and "payload_mass" in out and "gravity[3]" in out
    plant = mbfmu.load_plant("./robot.urdf", payload_mass=2.0)
    assert plant.model.nv == 6 and plant.parameter_values()["payload_mass"] == 2.0
    assert main(["linearize", "robot.urdf", "--param", "payload_mass=1.5", "--param", "gravity[3]=-1.62"]) == 0
    out = capsys.readouterr().out
    assert "12 states, 6 inputs" in out
    with np.load(copied.parent / "ur5_linear.npz") as lin:
        A = lin["A"]
    # the linear model is that of the plant with those parameters
    p = mbfmu.load_plant("robot.urdf", payload_mass=1.5, **{"gravity[3]": -1.62})
    assert p.model.gravity[2] == -1.62
    from mbfmu.control.linearization import linearize
    np.testing.assert_allclose(linearize(p, None, p.default_inputs()).A, A, rtol=1e-9, atol=1e-9)


def test_a_copied_urdf_finds_its_meshes_in_the_installed_example_robot_data(copied, tmp_path):
    plant = mbfmu.load_plant("./robot.urdf")
    assert len([s for s in plant.geometry if s.kind == "mesh"]) >= 7
    fmu = build_fmu(plant, tmp_path / "fmus")
    with zipfile.ZipFile(fmu) as z:
        assert sum(n.startswith("resources/urdf/meshes/") for n in z.namelist()) == 7


def test_package_dir_finds_a_users_own_package_and_the_error_names_the_way_to_give_it(copied, tmp_path, capsys):
    share = robot_file(UR5).parents[4] / "example-robot-data"
    pkg = tmp_path / "pkgs" / "my_ur"
    shutil.copytree(share / "robots" / "ur_description" / "meshes", pkg / "meshes")
    text = copied.read_text().replace("package://example-robot-data/robots/ur_description/", "package://my_ur/")
    copied.write_text(text)
    with pytest.raises(ModelError, match=r"package 'my_ur' not found.*package_dirs=\[\.\.\.\]"):
        build_fmu(mbfmu.load_plant("robot.urdf"), tmp_path / "fmus")
    assert main(["build", "robot.urdf", "-o", str(tmp_path / "fmus")]) == 1
    err = capsys.readouterr().err
    assert "--package-dir DIR" in err and "package_dirs" not in err
    assert main(["build", "robot.urdf", "-o", str(tmp_path / "fmus"), "--package-dir", str(tmp_path / "pkgs")]) == 0
    with zipfile.ZipFile(tmp_path / "fmus" / "ur5.fmu") as z:
        assert sum(n.startswith("resources/urdf/meshes/") for n in z.namelist()) == 7
    plant = mbfmu.load_plant("robot.urdf", package_dirs=[tmp_path / "pkgs"])
    assert len([s for s in plant.geometry if s.kind == "mesh"]) >= 7


def pinocchio_with(path, payload=0.0, link=None, gravity=(0, 0, -9.81)):
    pm = pin.buildModelFromUrdf(str(path))
    if payload:
        f = pm.frames[pm.getFrameId(link)]
        pm.inertias[f.parentJoint] += pin.Inertia(payload, f.placement.translation, np.zeros((3, 3)))
    pm.gravity.linear = np.asarray(gravity, float)
    return pm, pm.createData()


@pytest.mark.parametrize("rel, link", [(UR5, None), (PANDA, None), (UR5, "tool0")])
def test_payload_and_gravity_parameters_are_pinocchio_s_for_the_same_robot(rel, link):
    path = robot_file(rel)
    g = (0.3, -0.2, -3.7)
    plant = mbfmu.plant_from_urdf(path, payload_mass=2.5, payload_link=link, gravity=g)
    link = link or plant.payload_link
    assert link == {UR5: "wrist_3_link", PANDA: "panda_hand"}[rel] or link == "tool0"
    pm, pd = pinocchio_with(path, 2.5, link, g)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = rng.uniform(-1, 1, pm.nq)
        v = rng.uniform(-1, 1, pm.nv)
        u = rng.uniform(-3, 3, len(plant.inputs))
        a = pin.aba(pm, pd, q, v, plant.input_matrix @ u)
        np.testing.assert_allclose(plant.derivatives(0, np.r_[q, v], u)[pm.nq:], a, atol=1e-9 * np.abs(a).max())
    sig = {s.name: s for s in plant.parameters}
    assert (sig["payload_mass"].unit, sig["payload_mass"].min) == ("kg", 0.0)
    assert sig["gravity[3]"].unit == "m/s2" and sig["gravity[3]"].min == -100.0
    assert "damping_scale" not in sig  # only with damping=True


def test_damping_and_friction_scales_multiply_the_urdf_values(tmp_path):
    text = robot_file(UR5).read_text().replace('damping="0.0" friction="0.0"', 'damping="0.6" friction="0.9"')
    path = tmp_path / "ur5.urdf"
    path.write_text(text)
    plant = mbfmu.plant_from_urdf(path, damping=True, friction=True, friction_velocity=0.1, damping_scale=2.5,
                                  friction_scale=0.4)
    pm, pd = pinocchio_with(path)
    q, v, u = np.linspace(-1, 1, 6), np.linspace(0.4, -0.3, 6), np.linspace(1, -1, 6)
    tau = u - 2.5 * 0.6 * v - 0.4 * 0.9 * np.tanh(v / 0.1)
    np.testing.assert_allclose(plant.derivatives(0, np.r_[q, v], u)[6:], pin.aba(pm, pd, q, v, tau), atol=1e-9)
    assert {"damping_scale", "friction_scale"} <= set(plant.parameter_values())


def test_bad_robot_parameters_are_refused_by_name():
    path = robot_file(UR5)
    with pytest.raises(InputError, match=r"'payload_mass' = -1\.?0? must be in \[0, inf\) kg"):
        mbfmu.plant_from_urdf(path, payload_mass=-1.0)
    with pytest.raises(InputError, match=r"'gravity\[3\]' = -1000(\.0)? must be in \[-100, 100\] m/s2"):
        mbfmu.plant_from_urdf(path, gravity=(0, 0, -1000))
    with pytest.raises(UnknownNameError, match="link 'tool9'"):
        mbfmu.plant_from_urdf(path, payload_link="tool9")
    with pytest.raises(UnknownNameError, match="gravity\\[4\\]"):
        mbfmu.load_plant("ur5", **{"gravity[4]": 1.0})


def test_robots_by_name_from_example_robot_data(tmp_path, capsys):
    assert {"ur5", "panda", "solo12", "anymal", "talos_full_v2"} <= set(robot_names())
    assert robot_urdf("ur5") == robot_file(UR5) and robot_urdf("panda") == robot_file(PANDA)
    ur5 = mbfmu.load_plant("ur5")
    assert ur5.model.nv == 6 and "example-robot-data" in ur5.description
    assert mbfmu.load_plant("solo").model.nv == 6 + 8  # a legged robot's base floats by default
    assert mbfmu.load_plant("solo", floating_base=False).model.nv == 8
    with pytest.raises(UnknownNameError, match=r"^unknown plant 'pandda'; did you mean 'panda'") as err:
        mbfmu.load_plant("pandda")
    assert "\n" not in str(err.value)
    assert main(["build", "ur5", "--actuation", "position", "-o", str(tmp_path), "--runtime", "native",
                 "--platform", "linux64", "-p", "payload_mass=1.0"]) == 0
    md = read_model_description(str(tmp_path / "ur5.fmu"))
    assert [v.name for v in md.modelVariables if v.causality == "input"] == [f"q_ref[{i}]" for i in range(1, 7)]
    assert {v.name: v.start for v in md.modelVariables if v.causality == "parameter"}["payload_mass"] == "1.0"
    capsys.readouterr()
    assert main(["build", "ur55", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "did you mean 'ur5'" in err
    assert main(["list", "--robots"]) == 0
    assert "panda" in capsys.readouterr().out


def test_every_robot_by_name_loads_or_is_refused_in_one_line_naming_its_file():
    loaded, refused = [], []
    for name in robot_names():
        try:
            plant = mbfmu.load_plant(name)
        except ModelError as exc:  # a URDF whose data is not physical (inertias breaking the triangle inequality)
            text = str(exc)
            assert "\n" not in text and text.startswith(robot_urdf(name).name + ": "), text
            refused.append(name)
        else:
            assert plant.model.nv > 0
            loaded.append(name)
    assert {"ur5", "ur3", "ur10", "panda", "solo", "solo12", "talos_full_v2", "double_pendulum"} <= set(loaded)
    assert len(loaded) > len(refused)


def test_a_robot_name_without_example_robot_data_names_the_missing_package(monkeypatch, capsys):
    """A runtime-only install (no example-robot-data): ``load_plant("ur5")``
    and ``mbfmu build ur5`` name the package to install, in one line."""
    from mbfmu.plant import robots
    monkeypatch.setattr(robots, "robot_catalog", lambda: {})
    with pytest.raises(UnknownNameError, match=r"^unknown plant 'ur5' \(robots by name come from the "
                                               r"example-robot-data package.*pip install 'mbfmu\[urdf\]'") as err:
        mbfmu.load_plant("ur5")
    assert "\n" not in str(err.value)
    assert main(["build", "ur5", "-o", "unused"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "example-robot-data" in err, err
