"""A failing run is reported while the others complete; a run past its timeout is stopped."""
from __future__ import annotations

import os
import time

import numpy as np

from mbfmu.cosim import FunctionUnit, System
from mbfmu.studies import sweep


def test_run_with_an_invalid_parameter_fails_alone_and_is_reported(arm_fmu):
    study = sweep(arm_fmu, {"arm_mass": [10.0, -5.0, 30.0]}, stop_time=0.1, step=0.01, metrics=["final:q[2]"],
                  executor="serial", progress=False)
    assert [r["status"] for r in study.rows] == ["ok", "failed", "ok"]
    assert "arm_mass" in study.rows[1]["error"] and "-5" in study.rows[1]["error"]
    assert np.isnan(study.rows[1]["final:q[2]"]) and np.isfinite(study["final:q[2]"][[0, 2]]).all()
    assert study.summary() == "3 runs: 2 ok, 1 failed"
    df = study.to_dataframe()
    assert df["status"].tolist() == ["ok", "failed", "ok"] and df["arm_mass"].tolist() == [10.0, -5.0, 30.0]


def _slow_system(delay=0.0):
    return System([FunctionUnit("slow", lambda t, u: (time.sleep(delay) or t,))])


def test_run_past_its_timeout_is_stopped_and_reported_timed_out():
    t0 = time.perf_counter()
    study = sweep(_slow_system, {"delay": [0.0, 0.05]}, stop_time=1.0, step=0.01, timeout=0.3,
                  metrics=["final:y"], executor="serial", progress=False)
    assert [r["status"] for r in study.rows] == ["ok", "timed out"]
    assert "timeout of 0.3 s" in study.rows[1]["error"]
    assert study.rows[0]["final:y"] == 1.0
    assert time.perf_counter() - t0 < 3.0  # 100 steps of 50 ms would take 5 s


def test_unknown_parameter_name_is_refused_before_any_run(arm_fmu):
    import pytest
    from mbfmu.errors import UnknownNameError
    with pytest.raises(UnknownNameError, match="payload_mas"):
        sweep(arm_fmu, {"payload_mas": [1.0]}, stop_time=0.1, step=0.01, executor="serial", progress=False)


def _stuck_system(stuck=0.0):
    """One step of ``stuck`` seconds (a unit that hangs inside a step when large)."""
    def fn(t, u):
        if t > 0:
            time.sleep(stuck)
        return (t,)
    return System([FunctionUnit("stuck", fn)])


def test_run_hanging_inside_one_step_on_a_local_worker_is_ended_and_the_others_complete():
    t0 = time.perf_counter()
    study = sweep(_stuck_system, {"stuck": [0.0, 60.0, 0.0]}, stop_time=0.1, step=0.1, timeout=0.3,
                  executor="local", workers=1, progress=False)
    assert [r["status"] for r in study.rows] == ["ok", "failed", "ok"]
    assert "hang past the timeout" in study.rows[1]["error"]
    assert time.perf_counter() - t0 < 20.0  # not the 60 s the run would hang


def _crashing_system(crash=0.0):
    if crash:
        os._exit(3)  # what a segfault inside an FMU does to its process
    return _slow_system()


def test_run_that_kills_its_worker_process_is_reported_and_the_others_complete():
    study = sweep(_crashing_system, {"crash": [0.0, 1.0, 0.0, 0.0]}, stop_time=0.05, step=0.01,
                  executor="local", workers=2, progress=False)
    assert [r["status"] for r in study.rows] == ["ok", "failed", "ok", "ok"]
    assert "worker process died during this run, also when run alone" in study.rows[1]["error"]
