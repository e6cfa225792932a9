"""Misbehaving units: every fault ends the run with an error naming the unit and the
time, the process survives, and the rows up to the fault are kept in memory and on disk."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from mbfmu.cosim import load_result, simulate
from mbfmu.cosim.recording.result import open_writer
from mbfmu.errors import CosimError
from tooling import reference_fmu

from .helpers import FAIL_TIME, LAST_GOOD, STEP, coupled, mbfmu_cli, one_line_error


def _check_partial(result, t_last):
    """The partial result is the run up to t_last, and its values are right: the faulty
    unit's clock output x equals the time column, and the integrator holds the integral
    of y = t (trapezoid-free: forward Euler of the held input gives sum of t_k h)."""
    assert result.time[-1] == pytest.approx(t_last, abs=1e-12)
    np.testing.assert_allclose(result["bad.x"], result.time, atol=1e-12)
    t = result.time
    euler = np.concatenate([[0.0], np.cumsum(t[:-1] * STEP)])
    np.testing.assert_allclose(result["plant.z"], euler, atol=1e-12)


@pytest.mark.parametrize("mode, label", [(1, "discard"), (2, "error"), (3, "fatal")])
def test_status_fault_names_unit_time_and_log_and_keeps_rows(faulty_c_fmu, tmp_path, mode, label):
    out = tmp_path / "run.csv"
    with pytest.raises(CosimError) as e:
        simulate(coupled(faulty_c_fmu, mode), 1.0, STEP, sink=open_writer(out))
    msg = str(e.value)
    assert "unit 'bad'" in msg and f"returned {label} at t = {LAST_GOOD!r} s" in msg
    assert "injected fault" in msg  # the FMU's last log line
    _check_partial(e.value.result, LAST_GOOD)
    on_disk = pd.read_csv(out)
    np.testing.assert_array_equal(on_disk["bad.x"].to_numpy(), e.value.result["bad.x"])
    assert json.loads((tmp_path / "run.csv.json").read_text())["summary"]["status"] == "failed"


def test_no_call_after_fatal(faulty_c_fmu, tmp_path):
    """faulty.c aborts the process on any call after it returned fmi2Fatal: the CLI
    run ends with the failure status (3), not SIGABRT, and keeps the rows."""
    out = tmp_path / "run.csv"
    p = mbfmu_cli("simulate", str(faulty_c_fmu), "--set", "mode=3", "--set", f"fail_time={FAIL_TIME}",
                  "--stop-time", "1", "--step", str(STEP), "-o", str(out))
    assert p.returncode == 3, p.stderr
    line = one_line_error(p)
    assert "unit 'faulty'" in line and "fatal at t = 0.3 s" in line
    assert load_result(out).time[-1] == pytest.approx(LAST_GOOD)


def test_python_fmu_that_raises_is_fatal_without_crash(faulty_py_fmu, tmp_path):
    with pytest.raises(CosimError) as e:
        simulate(coupled(faulty_py_fmu, 1), 1.0, STEP)
    assert "unit 'bad'" in str(e.value) and "fatal at t = 0.3 s" in str(e.value)
    assert e.value.result.time[-1] == pytest.approx(LAST_GOOD)
    # the same through the CLI, in a child process that must exit normally
    out = tmp_path / "run.npz"
    p = mbfmu_cli("simulate", str(faulty_py_fmu), "--set", "mode=1", "--set", f"fail_time={FAIL_TIME}",
                  "--stop-time", "1", "--step", str(STEP), "-o", str(out))
    assert p.returncode == 3, p.stderr
    assert "fatal at t = 0.3 s" in one_line_error(p)
    assert load_result(out).time[-1] == pytest.approx(LAST_GOOD)


def test_segfaulting_unit_run_isolated_ends_the_run_cleanly(faulty_c_fmu, tmp_path):
    out = tmp_path / "run.mat"
    with pytest.raises(CosimError) as e:
        simulate(coupled(faulty_c_fmu, 4), 1.0, STEP, isolate=["bad"], sink=open_writer(out))
    msg = str(e.value)
    assert "unit 'bad'" in msg and "SIGSEGV" in msg and f"t = {LAST_GOOD!r} s" in msg
    _check_partial(e.value.result, LAST_GOOD)
    assert load_result(out).time[-1] == pytest.approx(LAST_GOOD)


def test_hanging_python_unit_is_killed_after_the_step_timeout(faulty_py_fmu, tmp_path):
    out = tmp_path / "run.csv"
    p = mbfmu_cli("simulate", str(faulty_py_fmu), "--set", "mode=2", "--set", f"fail_time={FAIL_TIME}",
                  "--stop-time", "1", "--step", str(STEP), "--step-timeout", "1", "-o", str(out), timeout=60)
    assert p.returncode == 3, p.stderr
    line = one_line_error(p)
    assert "unit 'Faulty'" in line and "t = 0.3 s" in line and "step timeout of 1.0 s" in line
    r = load_result(out)
    assert r.time[-1] == pytest.approx(LAST_GOOD) and r.summary.status == "failed"


@pytest.mark.parametrize("isolated", [False, True])
def test_nan_output_stops_naming_the_unit_unless_allowed(faulty_c_fmu, isolated):
    with pytest.raises(CosimError, match=r"unit 'bad': 'y' is nan at t = 0.4 s"):
        simulate(coupled(faulty_c_fmu, 5), 1.0, STEP, isolate=isolated)
    r = simulate(coupled(faulty_c_fmu, 5), 1.0, STEP, allow_nan=True)
    assert math.isnan(r["bad.y"][-1]) and math.isnan(r["plant.z"][-1])


def test_nan_in_an_unrecorded_connection_is_caught(faulty_c_fmu):
    with pytest.raises(CosimError, match=r"unit 'bad': output 'y' is nan"):
        simulate(coupled(faulty_c_fmu, 5), 1.0, STEP, record=["plant.z"])


def test_stop_request_ends_at_the_last_good_time(faulty_c_fmu, tmp_path):
    r = simulate(coupled(faulty_c_fmu, 7), 1.0, STEP)
    assert r.summary.status == "stopped" and "asked to stop" in r.summary.message
    _check_partial(r, LAST_GOOD)
    out = tmp_path / "run.csv"
    p = mbfmu_cli("simulate", str(faulty_c_fmu), "--set", "mode=7", "--set", f"fail_time={FAIL_TIME}",
                  "--stop-time", "1", "--step", str(STEP), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "asked to stop" in p.stdout
    assert load_result(out).time[-1] == pytest.approx(LAST_GOOD)


def test_stair_reference_fmu_stop_request_keeps_rows_like_fmpy(tmp_path):
    """Stair.fmu (Modelica Reference FMUs) asks to stop at t = 8.8 s; fmpy ends there too."""
    import fmpy
    stair = str(reference_fmu("fmi2", "Stair"))
    out = tmp_path / "stair.csv"
    p = mbfmu_cli("simulate", stair, "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "asked to stop" in p.stdout and "t = 8.8 s" in p.stdout
    ours = load_result(out)
    ref = fmpy.simulate_fmu(stair, output_interval=0.2)
    # fmpy also records the values after the refused step (t = 9 s); we end at the last good time
    assert ours.time[-1] == pytest.approx(8.8) and ref["time"][-2] == pytest.approx(8.8)
    np.testing.assert_allclose(ours.time, ref["time"][:-1], rtol=1e-12)
    np.testing.assert_array_equal(ours["Stair.counter"], ref["counter"][:-1])


def test_isolated_unit_gives_the_same_result_bit_for_bit(faulty_c_fmu):
    ref = simulate(coupled(faulty_c_fmu, 0), 1.0, STEP)
    iso = simulate(coupled(faulty_c_fmu, 0), 1.0, STEP, isolate=True, step_timeout=30)
    assert iso.meta["components"]["bad"]["type"] == "IsolatedUnit"
    np.testing.assert_array_equal(iso.data, ref.data)


def test_wall_clock_timeout_stops_with_partial_file(faulty_py_fmu, tmp_path):
    out = tmp_path / "run.csv"
    p = mbfmu_cli("simulate", str(faulty_py_fmu), "--set", "work=2000", "--stop-time", "1e4", "--step", "1e-3",
                  "--timeout", "1.5", "-o", str(out), timeout=60)
    assert p.returncode == 124, p.stderr
    assert "wall-clock timeout of 1.5 s" in p.stderr
    r = load_result(out)
    assert r.summary.status == "timeout" and 10 < len(r) < 1e7
    np.testing.assert_allclose(np.diff(r.time), 1e-3, rtol=1e-9)
