"""URDF robots (UR5, Panda from example-robot-data) exported natively: the C
runtime runs the same kernel force elements as the Python plant (damping,
range limits, Coulomb friction, position and velocity servos), so the native
FMU equals the pythonfmu FMU, also where no Python exists at all."""
from __future__ import annotations


import numpy as np
import pytest

from mbfmu.fmu.builder import build_fmu

from .conftest import assert_same, platforms
from .fmi_loop import Loaded
from .python_free import fmu_check, input_file
from .robots import H, N, ROBOTS, inputs_of, robot_plant


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
    res = fmu_check(native, H, N * H, tmp_path / "out.csv", input_file(tmp_path / "in.csv", u, 2 * N * H))
    assert res.returncode == 0 and "0 Error(s)" in res.stdout + res.stderr, res.stdout + res.stderr
    data = np.genfromtxt(tmp_path / "out.csv", delimiter=",", names=True)
    got = np.column_stack([data[n] for n in data.dtype.names[1:]])
    _, _, Y = plant.simulate(N * H, H, u=np.array([u[s.name] for s in plant.inputs]))
    assert got.shape == Y.shape
    assert_same(got, Y, floor=1.0)
