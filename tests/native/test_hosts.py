"""The native FMU in hosts that are not Python: the FMU Compliance Checker in a
process that cannot see any Python installation, and a C host on win64 (wine)."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
from fmpy import read_model_description

from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.library import load_plant

from .conftest import NATIVE_PLANTS, assert_same, plant_run
from .platform_hosts import run_linux64_and_win64
from .python_free import fmu_check, input_file


def _checker_reference(name: str, inputs: dict, n: int) -> np.ndarray:
    """The Python plant's outputs (n+1, ny) on the checker's time grid: it accumulates its
    time (t += h), and the plants that read the time (the crash pulse) see that round-off."""
    plant = load_plant(name)
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = inputs.get(s.name, u[k])
    h, t, x = plant.default_step, 0.0, plant.initial_state()
    Y = [plant.outputs_at(t, x, u)]
    for _ in range(n):
        x = plant.advance(t, x, u, h)
        t += h
        Y.append(plant.outputs_at(t, x, u))
    return np.array(Y)


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_fmu_check_runs_the_native_fmu_where_no_python_exists(name, native_fmu, tmp_path):
    Y = _checker_reference(name, NATIVE_PLANTS[name], 100)
    h = load_plant(name).default_step
    inputs = input_file(tmp_path / "in.csv", NATIVE_PLANTS[name], 200 * h)
    res = fmu_check(native_fmu(name), h, 100 * h, tmp_path / "out.csv", inputs)
    assert res.returncode == 0 and "0 Error(s)" in res.stdout + res.stderr, res.stdout + res.stderr
    data = np.genfromtxt(tmp_path / "out.csv", delimiter=",", names=True)
    assert len(data.dtype.names) == Y.shape[1] + 1 and len(data) == 101
    got = np.column_stack([data[n] for n in data.dtype.names[1:]])
    # columns that are zero up to round-off (satellite's momenta at rest) are compared at 1e-12 absolute
    assert_same(got, Y, floor=1.0)


def _euler_reference(name: str, inputs: dict, h: float, n: int) -> np.ndarray:
    """The Python plant's outputs (n+1, ny) along forward Euler of its own
    derivatives with step h, as the checker integrates Model Exchange."""
    plant = load_plant(name)
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = inputs.get(s.name, u[k])
    t, x = 0.0, plant.initial_state()
    Y = [plant.outputs_at(t, x, u)]
    for _ in range(n):
        x = x + h * plant.derivatives(t, x, u)
        t += h
        Y.append(plant.outputs_at(t, x, u))
    return np.array(Y)


# plants without events or quaternions: the checker's Euler is the Python plant's Euler
SMOOTH = ("rigid_arm", "canonical_2body", "flexible_arm")


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_fmu_check_runs_model_exchange_with_no_warning_where_no_python_exists(name, native_fmu,
                                                                               tmp_path):
    h = load_plant(name).internal_step / 10  # explicit Euler stays stable on the stiffest modes
    inputs = input_file(tmp_path / "in.csv", NATIVE_PLANTS[name], 200 * h)
    res = fmu_check(native_fmu(name), h, 100 * h, tmp_path / "out.csv", inputs, kind="me")
    text = res.stdout + res.stderr
    assert res.returncode == 0 and "0 Warning(s)" in text and "0 Error(s)" in text, text
    assert "0 warning(s) and error(s)" in text, text  # none reported by the FMU either
    data = np.genfromtxt(tmp_path / "out.csv", delimiter=",", names=True)
    got = np.column_stack([data[n] for n in data.dtype.names[1:]])
    assert np.all(np.isfinite(got)) and got.shape[1] == len(load_plant(name).outputs)
    if name in SMOOTH:  # the checker's accumulated time may add a last short step: 101 rows of step h
        assert len(data) >= 101 and np.allclose(np.diff(data["time"][:101]), h, rtol=1e-9)
        assert_same(got[:101], _euler_reference(name, NATIVE_PLANTS[name], h, 100), rtol=1e-9, floor=1.0)


def test_a_pythonfmu_fmu_cannot_run_there(hidden_python_works, tmp_path):
    fmu = build_fmu("rigid_arm", tmp_path)
    res = fmu_check(fmu, 0.01, 0.1, tmp_path / "out.csv")
    text = res.stdout + res.stderr
    assert res.returncode != 0 or "0 Error(s)" not in text, text


# ---------------------------------------------------------------- win64


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_the_win64_dll_under_wine_equals_linux64(name, native_fmu, hosts, tmp_path):
    fmu = native_fmu(name)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp_path)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [v.name for v in md.modelVariables if v.causality == "output"]
    Y, _, h = plant_run(name, NATIVE_PLANTS[name], 100)
    args = [str(tmp_path), md.coSimulation.modelIdentifier, md.guid, repr(h), "100",
            ",".join(f"{vr[k]}={v!r}" for k, v in NATIVE_PLANTS[name].items()), *(str(vr[o]) for o in outs)]
    a, b = run_linux64_and_win64(hosts, args)
    assert a.shape == b.shape == (100, len(outs) + 1)
    # the step controller's pow() is the C library's (msvcrt vs glibc: last-ulp differences), so
    # columns that are zero up to round-off (satellite's linear momentum) compare at 1e-12 absolute
    assert_same(b[:, 1:], a[:, 1:], floor=1.0)
    assert_same(a[:, 1:], Y[1:])
