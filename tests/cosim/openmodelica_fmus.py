"""OpenModelica-generated test FMUs, taken from the ``gemseo-fmu`` wheel on PyPI.

The wheel ships six OpenModelica FMUs (FMI 2.0 CS + ME, linux64), among them a
two-mass spring system and its two halves, each half taking one explicit
Euler step per communication step. gemseo-fmu itself pins an old fmpy, so it is
never installed: its wheel is downloaded (``pip download --no-deps``, the
ordinary client) into the test session's temporary folder and the FMUs are
read out of it.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

WHEEL = "gemseo-fmu==3.1.1"
INSIDE = "gemseo_fmu/problems/fmu_files/linux/"
NAMES = ("MassSpringSubSystem1", "MassSpringSubSystem2", "MassSpringSystem")


def fetch(dest: Path) -> dict[str, Path]:
    """``{name: path}`` of the mass-spring FMUs, extracted into ``dest``; raises
    ``RuntimeError`` when the wheel cannot be downloaded."""
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest), WHEEL],
                          capture_output=True, text=True, timeout=300)
    wheels = sorted(dest.glob("gemseo_fmu-*.whl"))
    if not wheels:
        raise RuntimeError(f"cannot download {WHEEL}: {proc.stderr.strip()[-300:]}")
    out = {}
    with zipfile.ZipFile(wheels[0]) as z:
        for name in NAMES:
            path = dest / f"{name}.fmu"
            path.write_bytes(z.read(f"{INSIDE}{name}.fmu"))
            out[name] = path
    return out
