"""Issue 37.11: with ``threads``, a hang is blamed on the unit inside the call.

The compiled loop recorded the unit of the latest call; with several threads
stepping the units of a Jacobi step, a healthy unit started after the stuck
one was named. Now every unit marks itself while inside a call, and the
message names the one that is.

``faulty`` in mode 6 sleeps forever in the step from t = 0.3 s; ``healthy``
(the same FMU, no fault) is stepped after it in the same Jacobi step.
"""
from __future__ import annotations

import subprocess
import sys

from mbfmu.cosim import load_result

from .hanging_run import HANG_AT, ROWS, STEP, loop_env

_RUN = """
import sys
from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.recording.result import open_writer
stuck = FmuUnit(sys.argv[1], "stuck", values={{"mode": 6, "fail_time": {hang}}})
healthy = [FmuUnit(sys.argv[1], f"healthy{{k}}") for k in range(3)]
simulate(System([stuck, *healthy]), 100.0, {step}, timeout=1.5, threads={threads}, sink=open_writer(sys.argv[2]),
         progress=False)
print("not reached")
"""


def _hung_run(faulty_c_fmu, tmp_path, threads):
    out = tmp_path / f"run{threads}.csv"
    p = subprocess.run([sys.executable, "-c", _RUN.format(hang=HANG_AT, step=STEP, threads=threads),
                        str(faulty_c_fmu), str(out)], capture_output=True, text=True, timeout=60,
                       env=loop_env("compiled"))
    assert p.returncode == 124, p.stderr
    assert "not reached" not in p.stdout and "Traceback" not in p.stderr
    return p.stderr, load_result(out)


def test_a_hang_under_threads_names_the_unit_inside_the_call(faulty_c_fmu, tmp_path):
    err, result = _hung_run(faulty_c_fmu, tmp_path, threads=2)
    assert "unit 'stuck' was inside a call from t = 0.3 s" in err, err
    assert "healthy" not in err, err
    assert "unit 'stuck' was inside a call" in result.summary.message
    assert len(result) == ROWS


def test_without_threads_the_same_unit_is_named(faulty_c_fmu, tmp_path):
    """The control: the serial loop names it too."""
    err, _ = _hung_run(faulty_c_fmu, tmp_path, threads=1)
    assert "unit 'stuck' was inside a call from t = 0.3 s" in err and "healthy" not in err, err
