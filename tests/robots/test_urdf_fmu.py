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


@pytest.mark.parametrize("runtime", ["pythonfmu", "native"])
def test_a_robot_fmu_starts_where_its_q0_and_v0_parameters_say(runtime, tmp_path):
    """``mbfmu build ur5 --q0 ...`` records the start, and the FMU's
    parameters ``q0[k]``, ``v0[k]`` move it elsewhere: the FMU's first
    steps equal the plant's own started there, in both runtimes."""
    built_at = [0.0, -1.2, 1.0, 0.0, 0.0, 0.0]
    assert main(["build", "ur5", "--q0", ",".join(map(str, built_at)), "-o", str(tmp_path / "ur5.fmu"),
                 "--runtime", runtime, "--platform", "linux64"]) == 0
    fmu = tmp_path / "ur5.fmu"
    params = {v.name: v for v in read_model_description(str(fmu)).modelVariables if v.causality == "parameter"}
    assert [float(params[f"q0[{k}]"].start) for k in range(1, 7)] == built_at
    assert params["q0[1]"].unit == "rad" and params["v0[1]"].unit == "rad/s"
    start = {"q0[1]": 0.3, "q0[3]": 0.4, "v0[2]": 0.5}
    h, n = 0.01, 5
    res = simulate_fmu(str(fmu), stop_time=n * h, step_size=h, output_interval=h, start_values=start)
    q0 = np.array(built_at)
    q0[[0, 2]] = 0.3, 0.4
    plant = plant_from_urdf(robot_file(UR5), q0=q0, v0=[0.0, 0.5, 0.0, 0.0, 0.0, 0.0])
    _, _, Y = plant.simulate(n * h, h)
    for i, s in enumerate(plant.outputs):
        np.testing.assert_allclose(res[s.name], Y[:, i], atol=1e-9, err_msg=s.name)


def test_servo_gains_are_shown_and_kept_when_the_fmu_starts_elsewhere(tmp_path, capsys):
    """``mbfmu list ur5 --actuation position`` shows each servo's gains (the
    default kp = M_ii w^2 with Pinocchio's mass matrix at the start); the
    native FMU started elsewhere re-packs q0 (no parameter is fixed) and its
    servos hold the pose they start at."""
    from mbfmu.fmu.builder import _resolve
    from mbfmu.fmu.native import native_parameter_report
    from mbfmu.fmu.plantref import parse
    from mbfmu.plant.urdf import SERVO_BANDWIDTH
    assert main(["list", "ur5", "--actuation", "position"]) == 0
    text = capsys.readouterr().out
    pm = pin.buildModelFromUrdf(str(robot_file(UR5)))
    M = pin.crba(pm, pm.createData(), pin.neutral(pm))
    line = next(l for l in text.splitlines() if l.split()[:2] == ["shoulder_lift_joint", "position"])
    kp = float(line.split("kp = ")[1].split()[0])
    assert kp == pytest.approx(M[1, 1] * SERVO_BANDWIDTH ** 2, rel=1e-3), line
    assert "N.m/rad" in line and "torque limit 150 N.m" in line
    ref = parse("ur5")
    ref, _ = _resolve(type(ref)(ref.kind, ref.target, options={**ref.options, "actuation": "position"}), None)
    assert not [k for k, why in native_parameter_report(ref).items() if why]
    fmu = build_fmu(ref, tmp_path / "ur5_native.fmu", runtime="native", platforms=["linux64"])
    pose = [0.3, -1.0, 1.2, -0.5, 0.4, 0.2]
    start = {**{f"q0[{k}]": v for k, v in enumerate(pose, 1)}, **{f"q_ref[{k}]": v for k, v in enumerate(pose, 1)}}
    res = simulate_fmu(str(fmu), stop_time=0.5, step_size=0.01, output_interval=0.01, start_values=start)
    np.testing.assert_allclose([res[f"q[{k}]"][0] for k in range(1, 7)], pose, atol=1e-12)
    np.testing.assert_allclose([res[f"q[{k}]"][-1] for k in range(1, 7)], pose, atol=0.05)  # sags a little
    assert main(["list", "rigid_arm", "--actuation", "position"]) == 1
    assert "--actuation is for robots" in capsys.readouterr().err
