"""Ctrl-C, SIGKILL and memory: the rows of a run survive.

``mbfmu simulate`` runs a pythonfmu unit that spends its steps in Python (so a
signal is likely to land inside the FMU) and streams its rows to a CSV.
SIGINT at a random moment must end the run cleanly (exit 130) with a readable
partial file; SIGKILL must leave the rows flushed so far readable.
"""
from __future__ import annotations

import io
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from mbfmu.cosim import FunctionUnit, System, load_result, simulate
from mbfmu.errors import InputError

LONG_RUN = ["--stop-time", "1e4", "--step", "1e-3", "--set", "work=300", "--no-progress"]


def _start(fmu, out):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.Popen([sys.executable, "-m", "mbfmu", "simulate", str(fmu), *LONG_RUN, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for_rows(out, proc, rows=1, limit=60.0):
    """Wait until ``out`` holds the header and at least ``rows`` rows."""
    t = time.monotonic()
    while time.monotonic() - t < limit:
        if out.exists() and out.read_text().count("\n") > rows:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no rows were written")


def _readable_rows(out):
    """Rows of a partial CSV: pandas reads its whole lines plainly, time is the grid.

    A SIGKILL can land inside the write of a chunk of rows: the kernel may then
    have copied part of it (up to a page boundary), so the file can end in a
    cut line, never more than one. load_result drops it (asserted by the caller)."""
    text = out.read_text()
    whole, _, cut = text.rpartition("\n")
    assert "\n" not in cut and len(cut) <= max(len(line) for line in whole.splitlines()[-3:])
    df = pd.read_csv(io.StringIO(whole + "\n"))
    assert list(df.columns)[0] == "time" and len(df) >= 1
    np.testing.assert_allclose(df["time"].to_numpy(), np.arange(len(df)) * 1e-3, rtol=1e-12, atol=1e-12)
    return len(df)


def _sigint_trials(fmu, tmp_path, trials, seed=15):
    rng = random.Random(seed)
    crashes = lost = 0
    for k in range(trials):
        out = tmp_path / f"run{k}.csv"
        proc = _start(fmu, out)
        _wait_for_rows(out, proc, rows=0)  # the run has started: the header is there
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 130 or "Traceback" in err:
            crashes += 1
            continue
        assert "interrupted by Ctrl-C" in err and "partial results" in err
        try:
            n = _readable_rows(out)
            meta = json.loads(out.with_name(out.name + ".json").read_text())
            assert meta["summary"]["status"] == "interrupted" and n == meta["summary"]["steps"] + 1
        except (AssertionError, ValueError, OSError) as exc:
            print(f"trial {k}: data lost: {exc!r}")
            lost += 1
    return crashes, lost


def test_sigint_gives_a_clean_stop_and_a_readable_file(faulty_py_fmu, tmp_path):
    assert _sigint_trials(faulty_py_fmu, tmp_path, 2) == (0, 0)


@pytest.mark.slow
def test_sigint_20_trials(faulty_py_fmu, tmp_path):
    crashes, lost = _sigint_trials(faulty_py_fmu, tmp_path, 20, seed=20)
    print(f"SIGINT: 20 trials / {crashes} crashes / {lost} data lost")
    assert (crashes, lost) == (0, 0)


def _sigkill_trial(fmu, out):
    proc = _start(fmu, out)
    _wait_for_rows(out, proc, rows=2)  # a first flush (1 s of wall time) has happened
    seen = out.read_text().count("\n") - 1
    time.sleep(random.uniform(0.0, 1.5))
    proc.kill()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    n = _readable_rows(out)
    assert n >= seen
    assert len(load_result(out)) == n
    assert json.loads(out.with_name(out.name + ".json").read_text())["summary"]["status"] == "running"


def test_sigkill_leaves_the_flushed_rows_readable(faulty_py_fmu, tmp_path):
    _sigkill_trial(faulty_py_fmu, tmp_path / "run.csv")


@pytest.mark.slow
def test_sigkill_5_trials(faulty_py_fmu, tmp_path):
    for k in range(5):
        _sigkill_trial(faulty_py_fmu, tmp_path / f"run{k}.csv")


def test_recording_that_cannot_fit_is_refused_before_allocating():
    clock = System([FunctionUnit("clock", lambda t, u: [t])])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    with pytest.raises(InputError, match=r"1e\+12 rows x 2 columns needs 1.49e\+04 GiB"):
        simulate(clock, 1e9, 1e-3)
    assert time.perf_counter() - t < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 100_000  # kB: nothing was allocated


def test_memory_guard_follows_the_address_space_limit(faulty_c_fmu):
    """Under ``ulimit -v`` 3 GiB, a 1e8-step run (2.2 GiB of rows) is refused with one line."""
    limit = 3 * 2**30

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    code = ("import sys; from mbfmu.cli import main; "
            f"sys.exit(main(['simulate', {str(faulty_c_fmu)!r}, '--stop-time', '1e5', '--step', '1e-3']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=cap, timeout=120,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "needs 2.24 GiB" in p.stderr


def test_streamed_run_larger_than_memory_keeps_every_row_on_disk(tmp_path, monkeypatch):
    """When the rows do not fit in memory, the master keeps a window and the file gets all."""
    from mbfmu.cosim.master import run_guard
    from mbfmu.cosim.recording.result import open_writer
    monkeypatch.setattr(run_guard, "MEMORY_FRACTION", 1e-12)
    clock = System([FunctionUnit("clock", lambda t, u: [2 * t])])
    r = simulate(clock, 100.0, 1e-3, sink=open_writer(tmp_path / "r.csv"))
    assert r.meta["first_row"] == 65536 and len(r) == 100_001 - 65536  # the tail only
    df = pd.read_csv(tmp_path / "r.csv")
    assert len(df) == 100_001
    np.testing.assert_allclose(df["clock.y"], 2 * df["time"], rtol=1e-15)
