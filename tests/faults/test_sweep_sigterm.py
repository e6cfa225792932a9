"""Issue 37.2: SIGTERM (and SIGKILL) on ``mbfmu sweep`` leaves no worker behind.

Only SIGINT was handled: SIGTERM ended the parent at once with no table, and
its worker processes, re-parented, ran on for minutes holding their temp
folders. Now SIGTERM cancels as Ctrl-C does (the table is written, exit 143)
and each worker ends with its parent (``PR_SET_PDEATHSIG`` on Linux, and a
check of its parent before each run). Linux only: the workers are found
through ``/proc``.
"""
from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time

import pytest
from tooling import reference_fmu

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux: workers are found through /proc")

DAHLQUIST = str(reference_fmu("fmi2", "Dahlquist"))
# 200 runs of 200 000 steps each: the study is still running when the signal comes
RUNS = 200
LONG_SWEEP = [DAHLQUIST, "--param", f"k=1:2:{RUNS}", "--stop-time", "200", "--step", "0.001", "--workers", "2",
              "--no-progress"]


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _start(tmp_path, command=None):
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    command = command or ["sweep", *LONG_SWEEP, "-o", str(tmp_path / "t.csv")]
    proc = subprocess.Popen([sys.executable, "-m", "mbfmu", *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # both workers started and past their first second
        workers = [p for p in _children(proc.pid) if _alive(p)]
        if len(workers) >= 2:
            time.sleep(1.0)
            return proc, _children(proc.pid)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the sweep did not start two workers")


@pytest.fixture
def started():
    """Processes a test started, killed at its end should it fail half-way."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _gone(pids, limit=30.0) -> list[int]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_sigterm_writes_the_table_exits_143_and_ends_the_workers(tmp_path, started):
    proc, workers = _start(tmp_path)
    started += [proc.pid, *workers]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert _gone(workers) == []
    assert os.listdir(tmp_path / "tmp") == []  # the workers' folders and the study's, removed
    with open(tmp_path / "t.csv") as f:
        rows = list(csv.DictReader(f))
    statuses = [r["status"] for r in rows]
    assert len(rows) == RUNS and "cancelled" in statuses and set(statuses) <= {"ok", "cancelled"}
    assert "SIGTERM" in err and "Traceback" not in err


def test_workers_end_when_the_sweep_is_killed_and_the_next_process_removes_their_folders(tmp_path, started):
    """Issue 37.2 and 37.12: the study's own folder (``mbfmu_study_*`` before) is a
    marked private folder too, so nothing of the killed study outlives the next run."""
    proc, workers = _start(tmp_path)
    started += [proc.pid, *workers]
    assert os.listdir(tmp_path / "tmp")  # the target and the run marks
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _gone(workers) == []
    nxt = subprocess.run([sys.executable, "-c", "from mbfmu.untrusted.scratch import private_dir; private_dir('next')"],
                         env=dict(os.environ, TMPDIR=str(tmp_path / "tmp")), timeout=120)
    assert nxt.returncode == 0
    assert os.listdir(tmp_path / "tmp") == []


def test_sigterm_stops_tune_with_the_best_point_so_far_and_ends_the_workers(tmp_path, started):
    # the first run alone, then populations of runs on two workers, of 2 000 000 steps each (minutes in all)
    proc, workers = _start(tmp_path, ["tune", DAHLQUIST, "--param", "k=0.001:0.002", "--minimize", "final:x",
                                      "--stop-time", "2000", "--step", "0.001", "--workers", "2",
                                      "--max-runs", "200", "--no-progress"])
    started += [proc.pid, *workers]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert _gone(workers) == []
    assert out.startswith("terminated (SIGTERM) after") and "k = " in out, out
    assert "Traceback" not in err
