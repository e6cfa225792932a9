"""URDF robots (UR5, Panda from example-robot-data) exported natively: the C
runtime runs the same kernel force elements as the Python plant (damping,
range limits, Coulomb friction, position and velocity servos), so the native
FMU equals the pythonfmu FMU, also where no Python exists at all."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.urdf import plant_from_urdf

from .conftest import assert_same, platforms
from .fmi_loop import Loaded
from .test_hosts import _fmu_check, _input_file, hidden_python_works  # noqa: F401 (a fixture)

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
H, N = 0.01, 40


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
    rel, actuation, link = ROBOTS[name]
    path = robot_copy(name, folder)
    nv = 6 if name == "ur5" else 9
    return plant_from_urdf(path, actuation=actuation, poses=[link], twists=[link], v0=np.linspace(0.3, -0.3, nv),
                           **OPTIONS, **extra)


def inputs_of(plant) -> dict[str, float]:
    out = {}
    for s in plant.inputs:
        base, k = s.name.split("[")
        out[s.name] = (s.start if base == "q_ref" else 0.0) + INPUTS[base][int(k[:-1]) - 1]
    return out


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def fmus(request, tmp_path_factory):
    """(name, plant, native FMU, pythonfmu FMU) of each robot with every force element active."""
    d = tmp_path_factory.mktemp(f"robot_{request.param}")
    plant = robot_plant(request.param, d)
    native = build_fmu(plant, d / "native", runtime="native", platforms=platforms())
    python = build_fmu(plant, d / "pythonfmu", platforms=("linux64",))
    return request.param, plant, native, python


def _run(fmu, plant, parameters=None, change=None):
    """Outputs (N+1, ny) of an FMU stepped N times by H with the test inputs;
    ``change = (step index, name, value)`` sets a tunable parameter mid-run."""
    names = [s.name for s in plant.outputs]
    L = Loaded(str(fmu))
    try:
        L.setup(parameters=parameters, inputs=inputs_of(plant))
        out = [L.get(names)]
        for k in range(N):
            if change is not None and change[0] == k:
                L.set(change[1], change[2])
            L.slave.doStep(currentCommunicationPoint=k * H, communicationStepSize=H)
            out.append(L.get(names))
        return np.array(out)
    finally:
        L.close()


def test_the_native_robot_fmu_equals_the_pythonfmu_fmu(fmus):
    name, plant, native, python = fmus
    assert {d[2] for d in plant.model.packed["drives"]} == {0.0, 1.0, 2.0}  # torque, position, velocity drives
    Yn, Yp = _run(native, plant), _run(python, plant)
    assert_same(Yn, Yp, floor=1.0)
    # and the robot moved: the servos tracked, the limits and friction acted
    q = Yn[:, :plant.model.nq]
    assert np.abs(q[-1] - q[0]).max() > 0.05


@pytest.mark.parametrize("values, rtol", [
    ({"payload_mass": 3.0, "gravity[1]": 1.5, "gravity[3]": -11.0}, 1e-12),
    # the scales' affine coefficients in the native description carry round-off (a few ulp), which the
    # error-controlled integrator turns into differences at its tolerance (until one parameter description
    # is evaluated by Python and C alike)
    ({"damping_scale": 2.3, "friction_scale": 0.45}, 1e-4)])
def test_the_native_robot_fmu_takes_the_robot_parameters_as_the_python_plant_does(fmus, values, rtol, tmp_path):
    name, plant, native, python = fmus
    Yn = _run(native, plant, parameters=values)
    g = [values.get(f"gravity[{i}]", s) for i, s in zip((1, 2, 3), plant.model.gravity)]
    built = robot_plant(name, tmp_path, gravity=g, **{k: v for k, v in values.items() if "[" not in k})
    assert built.parameter_values() == {**plant.parameter_values(), **values}
    u = np.array([inputs_of(plant)[s.name] for s in built.inputs])
    _, _, Y = built.simulate(N * H, H, u=u)
    assert_same(Yn, Y, rtol=rtol, floor=1.0)
    assert np.abs(Yn - _run(native, plant)).max() > 1e-3  # the parameters changed the motion


def test_a_robot_parameter_changed_during_the_run_acts_in_both_runtimes_alike(fmus):
    name, plant, native, python = fmus
    change = (N // 2, "payload_mass", 5.0)
    Yn = _run(native, plant, change=change)
    assert_same(Yn, _run(python, plant, change=change), floor=1.0)
    assert np.abs(Yn - _run(native, plant)).max() > 1e-4


def test_the_native_robot_fmu_runs_in_the_compliance_checker_without_python(fmus, hidden_python_works, tmp_path):  # noqa: F811 (a fixture imported from another module)
    name, plant, native, _ = fmus
    u = inputs_of(plant)
    res = _fmu_check(native, H, N * H, tmp_path / "out.csv", _input_file(tmp_path / "in.csv", u, 2 * N * H))
    assert res.returncode == 0 and "0 Error(s)" in res.stdout + res.stderr, res.stdout + res.stderr
    data = np.genfromtxt(tmp_path / "out.csv", delimiter=",", names=True)
    got = np.column_stack([data[n] for n in data.dtype.names[1:]])
    _, _, Y = plant.simulate(N * H, H, u=np.array([u[s.name] for s in plant.inputs]))
    assert got.shape == Y.shape
    assert_same(got, Y, floor=1.0)
