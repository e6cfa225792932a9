"""python-control systems exported as FMUs (mbfmu.control.export_fmu): valid FMUs that
step exactly like the ControlUnit running the same system."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import control
import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu

from mbfmu.control.export import export_fmu, fmi_names, system_spec
from mbfmu.control.kalman import kalman_filter
from mbfmu.control.lqr import lqg_servo, lqr_servo
from mbfmu.control.discrete_pid import pid
from mbfmu.control.system_plant import LinearSystemPlant, plant_from_spec
from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate, sources
from mbfmu.errors import InputError
from mbfmu.fmu import build_fmu

PLANTS = Path(__file__).resolve().parents[1] / "fmu" / "plants.py"
DT = 0.01
L, M, B, G = 1.0, 2.0, 0.1, 9.81   # the test pendulum's defaults (tests/fmu/plants.py)


def pid_controller():
    return pid(8.0, 4.0, 1.5, dt=DT, u_min=-6.0, u_max=6.0, reference="theta_ref", measurement="theta",
               output="tau", name="pid")


def lqg_controller():
    """LQG servo of the pendulum linearized at the bottom, sampled at DT."""
    ml2 = M * L ** 2
    cont = control.ss([[0.0, 1.0], [-G / L, -B / ml2]], [[0.0], [1.0 / ml2]], [[1.0, 0.0]], [[0.0]],
                      inputs=["tau"], outputs=["theta"], states=["theta", "omega"])
    model = control.c2d(cont, DT, method="zoh")
    lqr = lqr_servo(model, Q=[10.0, 1.0], R=[0.1], Qi=[50.0])
    kf = kalman_filter(model, Qn=[1e-4, 1e-3], Rn=[1e-4])
    return lqg_servo(model, lqr, kf, name="lqg")


CONTROLLERS = {"pid": pid_controller, "lqg": lqg_controller}


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    built = {k: export_fmu(make(), out) for k, make in CONTROLLERS.items()}
    built["plant"] = build_fmu(f"{PLANTS}:DampedPendulum", out / "pendulum.fmu")
    return built


@pytest.mark.parametrize("which", list(CONTROLLERS))
def test_exported_controller_passes_fmpy_validation(fmus, which):
    assert validate_fmu(str(fmus[which])) == []


@pytest.mark.parametrize("which", list(CONTROLLERS))
def test_exported_variables_are_the_system_signals(fmus, which):
    sys = CONTROLLERS[which]()
    md = read_model_description(str(fmus[which]))
    by = {}
    for v in md.modelVariables:
        by.setdefault(v.causality, []).append(v.name)
    assert by["input"] == list(sys.input_labels)
    assert by["output"] == list(sys.output_labels)
    assert by["local"] == [f"states.{s}" for s in sys.state_labels]
    assert float(md.defaultExperiment.stepSize) == DT
    deps = {o.variable.name: sorted(d.name for d in o.dependencies) for o in md.outputs}
    if which == "lqg":   # feedthrough = nonzero columns of D: the measurement, not the reference
        assert deps == {"tau": ["theta"]}
    else:                # nonlinear: every input
        assert deps == {"tau": ["theta", "theta_ref"]}


@pytest.mark.parametrize("which", list(CONTROLLERS))
def test_loop_with_exported_controller_equals_loop_with_control_unit(fmus, which):
    def run(controller):
        s = System([FmuUnit(fmus["plant"], "plant"), controller, sources.step("ref", 0.05, 0.3)],
                   [("plant.theta", "ctrl.theta"), ("ctrl.tau", "plant.tau"), ("ref.y", "ctrl.theta_ref")])
        return simulate(s, 1.0, DT)
    a = run(FmuUnit(fmus[which], "ctrl"))
    b = run(ControlUnit("ctrl", CONTROLLERS[which]()))
    assert a.names == b.names
    for n in a.names:
        np.testing.assert_allclose(a[n], b[n], rtol=0, atol=1e-12, err_msg=n)
    assert np.ptp(a["ctrl.tau"]) > 0.1 and np.ptp(a["plant.theta"]) > 0.1, "the loop does nothing"
    if which == "pid":
        assert np.max(np.abs(a["ctrl.tau"])) == 6.0, "the saturation is not exercised"


def test_step_response_of_exported_fmu_equals_forced_response(fmus):
    sys = lqg_controller()
    n = 60
    T = np.arange(n + 1) * DT
    U = np.vstack([np.ones(n + 1), 0.5 * np.ones(n + 1)])   # unit step of theta_ref, theta held at 0.5
    ref = control.forced_response(sys, T, U)
    res = simulate_fmu(str(fmus["lqg"]), stop_time=n * DT, step_size=DT, output_interval=DT,
                       start_values={"theta_ref": 1.0, "theta": 0.5}, output=["tau", "states.xi[1]"])
    np.testing.assert_allclose(res["time"], T, atol=1e-12)
    np.testing.assert_allclose(res["tau"], ref.outputs.reshape(-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res["states.xi[1]"], ref.states[-1], rtol=1e-12, atol=1e-12)
    assert np.ptp(res["tau"]) > 1.0


def test_wrong_communication_step_is_refused_with_an_fmi_error(fmus):
    from tests.fmu.fmurun import initialize, instantiate, open_fmu

    op = open_fmu(fmus["lqg"])
    fmu = instantiate(op)
    try:
        initialize(fmu, op, {"theta_ref": 1.0})
        fmu.doStep(0.0, DT)
        x = fmu.getReal([op.vr["states.xi[1]"]])
        with pytest.raises(FMICallException) as info:
            fmu.doStep(DT, 2 * DT)
        assert info.value.status == 3   # fmi2Error
        message = op.messages[-1][2]
        assert "sample time 0.01 s" in message and "0.02 s" in message and "refused" in message
        assert fmu.getReal([op.vr["states.xi[1]"]]) == x   # the state is kept
        fmu.doStep(DT, DT)                                 # and the right step still works
        fmu.terminate()
    finally:
        fmu.freeInstance()
        op.close()


def test_continuous_system_is_discretized_with_zoh_at_step(tmp_path):
    cont = control.tf([2.0], [0.5, 1.0], inputs="e", outputs="u", name="lag")
    with pytest.raises(InputError, match="continuous-time: give the sample time"):
        system_spec(cont)
    plant = plant_from_spec(system_spec(cont, step=0.1))
    d = control.ss(control.c2d(control.ss(cont), 0.1, method="zoh"))
    assert isinstance(plant, LinearSystemPlant) and plant.dt == 0.1
    np.testing.assert_array_equal(plant.A, d.A)
    np.testing.assert_array_equal(plant.B, d.B)
    path = export_fmu(cont, tmp_path, step=0.1)
    res = simulate_fmu(str(path), stop_time=1.0, step_size=0.1, start_values={"e": 1.0})
    np.testing.assert_allclose(res["u"], 2.0 * (1 - np.exp(-res["time"] / 0.5)), rtol=1e-12, atol=1e-12)


def test_names_are_made_fmi_names_and_the_mapping_is_kept():
    sys = control.ss(np.eye(2) * 0.5, np.eye(2), np.eye(2), np.zeros((2, 2)), 0.1)  # u[0], y[0], x[0] ...
    spec = system_spec(sys, name="two by two")
    assert [e["name"] for e in spec["inputs"]] == ["u[1]", "u[2]"]
    assert [e["label"] for e in spec["inputs"]] == ["u[0]", "u[1]"]
    assert [e["name"] for e in spec["states"]] == ["x[1]", "x[2]"]
    assert spec["name"] == "two_by_two"
    assert fmi_names(["a", "a", "b.c", "3x"]) == ["a", "a_2", "b_c", "s_3x"]
    same = control.ss(0.5, 1.0, 1.0, 0.0, 0.1, inputs="v", outputs="v")
    assert [e["name"] for e in system_spec(same)["outputs"]] == ["v_2"]


def test_nonlinear_system_without_reference_is_refused_naming_the_alternatives():
    nl = control.NonlinearIOSystem(lambda t, x, u, p: x * u, lambda t, x, u, p: x, inputs=1, outputs=1, states=1,
                                   dt=0.1, name="nl")
    with pytest.raises(InputError, match=r"reference=\('module:function', kwargs\).*linearize"):
        system_spec(nl)
    with pytest.raises(InputError, match="builds a different system"):
        system_spec(pid_controller(), reference=("mbfmu.control.discrete_pid:pid", dict(Kp=1.0, dt=DT, reference="theta_ref",
                                                                                measurement="theta", output="tau")))


def test_discrete_system_refuses_another_step_at_export():
    with pytest.raises(InputError, match="dt = 0.01 s"):
        system_spec(lqg_controller(), step=0.02)


def test_exported_fmu_carries_the_system_as_json(fmus):
    with zipfile.ZipFile(fmus["lqg"]) as z:
        spec = json.loads(z.read("resources/mbfmu_system_lqg.json"))
    sys = lqg_controller()
    assert spec["kind"] == "linear" and spec["dt"] == DT
    np.testing.assert_array_equal(np.array(spec["A"]), sys.A)
    np.testing.assert_array_equal(np.array(spec["D"]), sys.D)


def test_initial_state_and_input_starts_match_the_control_unit():
    sys = lqg_controller()
    x0 = [0.1, -0.2, 0.05]
    plant = plant_from_spec(system_spec(sys, x0=x0, inputs_start={"theta_ref": 0.3}))
    unit = ControlUnit("c", sys, x0=x0, inputs_start={"theta_ref": 0.3})
    unit.setup(0.0, 1.0, DT)
    x, u = plant.initial_state(), plant.default_inputs()
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(u, unit.u)
    for k in range(5):
        np.testing.assert_allclose(plant.outputs_at(k * DT, x, u), unit.y, rtol=0, atol=1e-15)
        x = plant.advance(k * DT, x, u, DT)
        unit.do_step(k * DT, DT)
        unit.pull()
        np.testing.assert_allclose(x, unit.x, rtol=0, atol=1e-15)


def test_static_gain_without_states_exports(tmp_path):
    gain = lqr_servo(control.ss([[1.0]], [[DT]], [[1.0]], [[0.0]], DT, inputs="f", outputs="x", states="x"),
                     Q=[1.0], R=[1.0])   # u = -K x: no states
    path = export_fmu(gain, tmp_path, name="gain")
    assert validate_fmu(str(path)) == []
    res = simulate_fmu(str(path), stop_time=0.05, step_size=DT, start_values={"x": 2.0})
    np.testing.assert_allclose(res["f"], -2.0 * gain.K[0, 0], rtol=1e-15)


def test_c_host_steps_the_exported_pid(fmus, tmp_path):
    """The nonlinear PID, rebuilt by reference inside the FMU, in a host that is not Python."""
    import shutil
    import subprocess

    from tests.fmu.conftest import HERE, subprocess_env

    cc = shutil.which("cc") or shutil.which("gcc")
    exe = tmp_path / "c_host"
    subprocess.run([cc, "-O1", "-o", str(exe), str(HERE / "c_host.c"), "-ldl"], check=True)
    with zipfile.ZipFile(fmus["pid"]) as z:
        z.extractall(tmp_path / "fmu")
    md = read_model_description(str(fmus["pid"]))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    n, u = 30, [0.8, 0.1]
    args = [str(exe), str(tmp_path / "fmu"), md.coSimulation.modelIdentifier, md.guid, repr(DT), str(n),
            f"{vr['theta_ref']}=0.8,{vr['theta']}=0.1", str(vr["tau"])]
    res = subprocess.run(args, capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    got = np.array([[float(v) for v in line.split()] for line in res.stdout.splitlines()])
    unit = ControlUnit("c", pid_controller())
    unit.setup(0.0, 1.0, DT)
    unit.u[:] = u
    expected = []
    for k in range(n):
        unit.do_step(k * DT, DT)
        unit.pull()
        expected.append(unit.y[0])
    np.testing.assert_allclose(got[:, 1], expected, rtol=0, atol=1e-12)
    assert np.ptp(expected) > 0.1


def test_same_name_different_systems_stay_apart_in_one_process(tmp_path):
    """Two FMUs both called 'lag' (different gains) loaded in one process each run their own system."""
    got = []
    for k, gain in enumerate((1.0, 3.0)):
        sys = control.ss(0.5, 1.0, gain, 0.0, DT, inputs="e", outputs="u", name="lag")
        path = export_fmu(sys, tmp_path / f"v{k}")
        got.append(simulate_fmu(str(path), stop_time=0.05, step_size=DT, start_values={"e": 1.0})["u"][-1])
    np.testing.assert_allclose(got[1], 3.0 * got[0], rtol=1e-14)
    assert got[0] > 0


def test_build_fmu_refuses_bad_resource_names(tmp_path):
    for bad in ("../x.json", "sub/x.json", "slavemodule.txt", ""):
        with pytest.raises(InputError, match="resource file name"):
            build_fmu(f"{PLANTS}:DampedPendulum", tmp_path, resources={bad: b"{}"})
    with pytest.raises(InputError, match="does not exist"):
        build_fmu(f"{PLANTS}:DampedPendulum", tmp_path, resources={"x.json": tmp_path / "missing.json"})
