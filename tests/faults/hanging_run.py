"""A CLI run of the C FMU ``faulty`` that hangs inside ``fmi2DoStep`` in the step
from t = 0.3 s (mode 6), and how to wait for its hang: shared by the tests of
stopping a stuck run."""
from __future__ import annotations

import os
import time

HANG_AT, STEP = 0.3, 1e-3
ROWS = 301  # t = 0, 0.001, ..., 0.3: the hang is in the step from 0.3 s
HANG = ["--set", "mode=6", "--set", f"fail_time={HANG_AT}", "--stop-time", "100", "--step", str(STEP),
        "--no-progress"]
LOOPS = {"compiled": "0", "python": "1"}


def loop_env(loop: str) -> dict:
    """The environment of a child run on the ``"compiled"`` or ``"python"`` loop, BLAS pools held to one thread."""
    return dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MBFMU_PYTHON_LOOP=LOOPS[loop], OPENBLAS_NUM_THREADS="1",
                OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def thread_count(pid: int) -> int:
    """The number of threads of process ``pid`` (Linux)."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def wait_for_hang(proc, limit=60.0):
    """Wait until the run is under way (its watchdog thread is there: one thread more
    than the main one, BLAS pools being held to one), then for the hang at step 300."""
    t = time.monotonic()
    while time.monotonic() - t < limit:
        assert proc.poll() is None, proc.communicate()
        if thread_count(proc.pid) >= 2:
            time.sleep(1.0)  # the 300 steps before the hang take milliseconds
            return
        time.sleep(0.05)
    raise AssertionError("the run did not start")
