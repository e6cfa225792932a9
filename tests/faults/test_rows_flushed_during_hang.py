"""Issue 37.14: the rows computed before a hang are on disk during the hang.

The README promises rows "flushed at least every second"; but a run hung in
a step and SIGKILLed 24 s later left no file: the rows were flushed between
steps only, and no step came. Now the run's watchdog hands the rows to the
file once the master has not got on for a whole flush period, so a SIGKILL
(which nothing can catch) still leaves them.

``faulty`` in mode 6 sleeps forever in the step from t = 0.3 s; the 301 rows
of t = 0 .. 0.3 s must be in the file a few seconds into the hang.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from mbfmu.cosim import load_result

from .hanging_run import HANG, ROWS, loop_env, wait_for_hang


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_rows_before_a_hang_survive_a_sigkill(faulty_c_fmu, tmp_path, loop):
    out = tmp_path / "run.csv"
    proc = subprocess.Popen([sys.executable, "-m", "mbfmu", "simulate", str(faulty_c_fmu), *HANG, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=loop_env(loop))
    try:
        wait_for_hang(proc)
        time.sleep(3.0)  # three flush periods, the run hung all along
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    r = load_result(out)
    assert len(r) == ROWS
    np.testing.assert_array_equal(r["faulty.x"], r.time)  # the FMU's own clock: every row whole
    assert r.summary.status == "interrupted"  # the file says the run never finished
