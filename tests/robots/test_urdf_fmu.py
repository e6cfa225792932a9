"""A URDF robot becomes an FMU in one call (Python or ``mbfmu build
robot.urdf``); the FMU carries its URDF and meshes, so it runs where the
robot's package is not installed, and simulates as the plant does."""
from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pinocchio as pin
import pytest
from robot_files import robot_file
from fmpy import read_model_description, simulate_fmu

from mbfmu.cli import main
from mbfmu.fmu import build_fmu
from mbfmu.plant.urdf import plant_from_urdf

UR5 = "ur_description/urdf/ur5_robot.urdf"


def test_robot_fmu_simulates_like_the_plant(robot, tmp_path):
    name, path, floating, link = robot
    plant = plant_from_urdf(path, floating_base=floating, poses=[link])
    fmu = build_fmu(plant, tmp_path)
    h, n = 0.01, 10
    res = simulate_fmu(str(fmu), stop_time=n * h, step_size=h, output_interval=h,
                       output=[s.name for s in plant.outputs])
    t, X, Y = plant.simulate(n * h, h)
    assert res["time"][-1] == pytest.approx(n * h)
    for i, s in enumerate(plant.outputs):
        np.testing.assert_allclose(res[s.name][-1], Y[-1, i], atol=1e-9, err_msg=s.name)
    if floating:  # a free base with no ground falls as a free body: z(t) = -g t^2 / 2
        assert Y[-1, 2] - Y[0, 2] == pytest.approx(-9.81 * (n * h) ** 2 / 2, rel=1e-6)


def test_mbfmu_build_robot_urdf_on_the_command_line(tmp_path, capsys):
    src = robot_file(UR5)
    assert main(["build", str(src), "-o", str(tmp_path), "--actuation", "position", "--pose", "tool0"]) == 0
    fmu = tmp_path / "ur5.fmu"
    md = read_model_description(str(fmu))
    inputs = {v.name: v for v in md.modelVariables if v.causality == "input"}
    outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    assert sorted(inputs) == [f"q_ref[{i}]" for i in range(1, 7)]
    assert {"tool0_p[1]", "tool0_quat[4]", "q[6]", "v[6]"} <= set(outputs)
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
        urdf = z.read("resources/urdf/ur5_robot.urdf").decode()
    assert "package://" not in urdf and sum(n.startswith("resources/urdf/meshes/") for n in names) == 7
    # the servos hold a commanded configuration; the pose output is Pinocchio's forward kinematics of q
    target = [0.3, -1.0, 1.2, -0.5, 0.4, 0.2]
    res = simulate_fmu(str(fmu), stop_time=1.0, step_size=0.01, output_interval=0.01,
                       start_values={f"q_ref[{i + 1}]": v for i, v in enumerate(target)},
                       output=outputs)
    q = np.array([res[f"q[{i}]"][-1] for i in range(1, 7)])
    np.testing.assert_allclose(q, target, atol=0.05)  # a PD servo under gravity sags a little
    pm = pin.buildModelFromUrdf(str(src))
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, q)
    np.testing.assert_allclose([res[f"tool0_p[{i}]"][-1] for i in (1, 2, 3)],
                               pd.oMf[pm.getFrameId("tool0")].translation, atol=1e-9)


def test_robot_fmu_runs_without_the_robots_package(tmp_path):
    """Built from a copy of the robot that is deleted afterwards."""
    pkg = tmp_path / "copy" / "example-robot-data" / "robots"
    shutil.copytree(robot_file("solo_description/robots/solo.urdf").parents[1], pkg / "solo_description")
    plant = plant_from_urdf(pkg / "solo_description" / "robots" / "solo.urdf", floating_base=True)
    fmu = build_fmu(plant, tmp_path / "fmus")
    shutil.rmtree(tmp_path / "copy")
    res = simulate_fmu(str(fmu), stop_time=0.05, step_size=0.01, output_interval=0.01, output=["q[3]"])
    assert res["q[3]"][-1] == pytest.approx(-9.81 * 0.05 ** 2 / 2, rel=1e-6)


def test_a_model_file_naming_its_plant_by_an_alias_builds(tmp_path):
    model = tmp_path / "ur5_model.py"
    model.write_text(f'''"""A UR5 on position servos."""
from mbfmu.plant.urdf import URDFPlant


class UR5(URDFPlant):
    def __init__(self, **parameters):  # payload_mass, gravity, ...: the FMU rebuilds the plant with them
        super().__init__({str(robot_file(UR5))!r}, actuation="position", name="ur5_servo", **parameters)


PLANT = UR5
''')
    fmu = build_fmu(str(model), tmp_path)
    assert fmu.name == "ur5_servo.fmu"
    md = read_model_description(str(fmu))
    assert [v.name for v in md.modelVariables if v.causality == "input"][0] == "q_ref[1]"
