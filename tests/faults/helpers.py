"""Shared pieces of the fault-injection tests: the coupled test system, CLI runs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import control

from mbfmu.cosim import ControlUnit, FmuUnit, System

FAIL_TIME, STEP = 0.35, 0.1  # the faulty unit misbehaves in the step from t = 0.3 s
LAST_GOOD = 0.3


def coupled(fmu: Path, mode: int, **values) -> System:
    """The faulty unit ``bad`` (``y = t + u``) feeding an integrator ``plant`` (``z' = y``)."""
    integ = ControlUnit("plant", control.ss(0.0, 1.0, 1.0, 0.0, inputs="y", outputs="z"))
    bad = FmuUnit(fmu, "bad", values={"mode": mode, "fail_time": FAIL_TIME, **values})
    return System([bad, integ], [("bad.y", "plant.y")])


def mbfmu_cli(*args: str, timeout: float = 120.0, **kw) -> subprocess.CompletedProcess:
    """``python -m mbfmu ARGS`` in a child process (its crash cannot take the test down)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "mbfmu", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, **kw)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """The error line of a failed CLI run, checking that no traceback was printed."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    assert lines, proc.stderr
    return lines[0]
