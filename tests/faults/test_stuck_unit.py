"""Stopping always works: a unit stuck inside ``fmi2DoStep`` (the C FMU
``faulty`` in mode 6 sleeps forever in the step from t = 0.3 s) cannot keep
Python's signal handlers or the checks between steps from acting, so the
run's watchdog thread does: ``--timeout``/``timeout=``, SIGTERM and a second
Ctrl-C end the process with 124, 143 and 130 within about a second, and the
301 rows recorded before the hang (t = 0 .. 0.3 s) are kept in a file that
``load_result`` reads, with the run's status.

Every run is a child process with a subprocess timeout, so a regression fails
here instead of hanging the suite.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, load_result, simulate
from mbfmu.errors import RunInterrupted

from .hanging_run import HANG, HANG_AT, ROWS, STEP, loop_env, wait_for_hang


def _kept_rows(out, status):
    r = load_result(out)
    assert len(r) == ROWS and r.summary.steps == ROWS - 1
    np.testing.assert_array_equal(r.time, np.arange(ROWS) * 100.0 / 100_000)  # the master's counted grid
    np.testing.assert_array_equal(r["faulty.x"], r.time)  # the FMU's own time: every row is whole
    assert r.summary.status == status and "inside a call from t = 0.3 s" in r.summary.message
    return r


@pytest.mark.parametrize("loop", ["compiled", "python"])
@pytest.mark.parametrize("ext", ["csv", "npz"])
def test_cli_timeout_ends_a_hung_run_with_124_and_keeps_the_rows(faulty_c_fmu, tmp_path, loop, ext):
    out = tmp_path / f"run.{ext}"
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mbfmu", "simulate", str(faulty_c_fmu), *HANG, "--timeout", "2",
                        "-o", str(out)], capture_output=True, text=True, timeout=60, env=loop_env(loop))
    wall = time.monotonic() - t
    assert p.returncode == 124, p.stderr
    assert "wall-clock timeout of 2.0 s" in p.stderr and "unit 'faulty'" in p.stderr and "301 rows" in p.stderr
    assert "Traceback" not in p.stderr
    assert wall < 2.0 + 15.0  # start-up on a loaded machine, the limit, then about a second
    _kept_rows(out, "timeout")


@pytest.mark.parametrize("how", ["SIGTERM", "double Ctrl-C"])
def test_cli_signals_end_a_hung_run_and_keep_the_rows(faulty_c_fmu, tmp_path, how):
    out = tmp_path / "run.csv"
    proc = subprocess.Popen([sys.executable, "-m", "mbfmu", "simulate", str(faulty_c_fmu), *HANG, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=loop_env("compiled"))
    try:
        wait_for_hang(proc)
        t = time.monotonic()
        if how == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGINT)
            time.sleep(1.5)  # the first one asks for a stop between steps, which never comes
            assert proc.poll() is None
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        waited = time.monotonic() - t
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == (143 if how == "SIGTERM" else 130), err
    assert waited < (1.5 if how == "SIGTERM" else 3.0) + 3.0
    assert "Traceback" not in err and "301 rows" in err
    if how != "SIGTERM":
        assert "press Ctrl-C again" in err  # the first Ctrl-C says what to do
    _kept_rows(out, "interrupted")


_API_RUN = """
import sys
from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.recording.result import open_writer
unit = FmuUnit(sys.argv[1], values={{"mode": 6, "fail_time": {hang}}})
simulate(System([unit]), 100.0, {step}, timeout=1.5, isolate={isolate}, sink=open_writer(sys.argv[2]), progress=False)
print("not reached")
"""


@pytest.mark.parametrize("isolate", [False, True])
def test_api_timeout_ends_a_hung_run_and_keeps_the_rows(faulty_c_fmu, tmp_path, isolate):
    """``simulate(timeout=...)`` in a user's process: the same watchdog (also when the
    unit runs in a worker process and no step timeout is given)."""
    out = tmp_path / "run.csv"
    code = _API_RUN.format(hang=HANG_AT, step=STEP, isolate=isolate)
    p = subprocess.run([sys.executable, "-c", code, str(faulty_c_fmu), str(out)], capture_output=True, text=True,
                       timeout=60, env=loop_env("compiled"))
    assert p.returncode == 124, p.stderr
    assert "not reached" not in p.stdout and "Traceback" not in p.stderr
    _kept_rows(out, "timeout")


def test_api_timeout_of_a_unit_that_is_not_stuck_raises_in_process(faulty_c_fmu):
    """A long run in the compiled loop, no unit stuck: the watchdog's request stops
    the loop between two steps, and the run raises with its rows (nothing ends the process)."""
    unit = FmuUnit(faulty_c_fmu)
    t = time.monotonic()
    with pytest.raises(RunInterrupted, match="wall-clock timeout of 0.5 s") as info:
        simulate(System([unit]), 2e3, 1e-4, timeout=0.5, progress=False)
    assert time.monotonic() - t < 0.5 + 1.5
    r = info.value.result
    assert info.value.kind == "timeout" and r.summary.status == "timeout"
    assert 10 < len(r) < 2e7 and r.summary.steps == len(r) - 1
    np.testing.assert_allclose(r["faulty.x"], r.time, rtol=0, atol=1e-9)


def test_isolated_ssp_unit_that_hangs_is_killed_after_the_step_timeout(faulty_c_fmu, tmp_path):
    """``--isolate`` on an SSP archive: the archive's extracted folder lives as long
    as the run, so the worker finds the FMU; the hung unit is killed after
    ``--step-timeout 2`` and the run ends with 3, keeping the 301 rows."""
    from mbfmu.cosim import write_ssp
    ssp = write_ssp(System([FmuUnit(faulty_c_fmu, "arm", values={"mode": 6, "fail_time": HANG_AT})]),
                    tmp_path / "hang.ssp", stop_time=100.0, step=STEP)
    out = tmp_path / "run.csv"
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mbfmu", "simulate", str(ssp), "--isolate", "--step-timeout", "2",
                        "--no-progress", "-o", str(out)], capture_output=True, text=True, timeout=90,
                       env=loop_env("compiled"))
    assert p.returncode == 3, p.stderr
    assert time.monotonic() - t < 2.0 + 25.0  # worker start-up on a loaded machine, then the step timeout
    assert "does not exist" not in p.stderr and "unit 'arm'" in p.stderr and "step timeout of 2.0 s" in p.stderr
    r = load_result(out)
    assert len(r) == ROWS and r.time[-1] == HANG_AT and r.summary.status == "failed"
    np.testing.assert_array_equal(r["arm.x"], r.time)


def test_ssp_archive_folder_lives_as_long_as_the_system(faulty_c_fmu, tmp_path):
    import gc

    from mbfmu.cosim import read_ssp, write_ssp
    ssp = write_ssp(System([FmuUnit(faulty_c_fmu, "arm")]), tmp_path / "s.ssp", stop_time=1.0, step=0.1)
    system = read_ssp(ssp)
    folder = system._archive_dir
    assert system.units["arm"].path.is_file() and str(system.units["arm"].path).startswith(str(folder))
    r = simulate(system, 1.0, 0.1, isolate=True, progress=False)
    assert len(r) == 11
    del system, r
    gc.collect()
    assert not folder.exists()  # released with the system


def test_roberts_reference_fmu_step_that_takes_ages_honours_the_timeout(tmp_path):
    """The issue's own case: Roberts (FMI 3) at its default experiment takes a first
    step of 2e5 s that runs for many minutes inside ``fmi3DoStep``; ``--timeout 3``
    ends it with 124, keeping the start row and the reason."""
    from tooling import reference_fmu
    out = tmp_path / "roberts.csv"
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mbfmu", "simulate", str(reference_fmu("fmi3", "Roberts")),
                        "--timeout", "3", "--no-progress", "-o", str(out)], capture_output=True, text=True,
                       timeout=60, env=loop_env("compiled"))
    assert p.returncode == 124, p.stderr
    assert time.monotonic() - t < 3.0 + 15.0
    r = load_result(out)
    assert r.summary.status == "timeout" and len(r) == 1 and r.time[0] == 1e-5
    assert "unit 'Robertson Problem' was inside a call from t = 1e-05 s" in r.summary.message
