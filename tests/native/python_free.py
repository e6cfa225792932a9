"""Hosts that cannot see any Python: a command run in a mount namespace where the
Python installations are hidden, the FMU Compliance Checker run that way, and its
input file."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tooling import FMU_CHECK, need_root, need_tool, skip_unless_required


SYSTEM_PREFIXES = {"/", "/usr", "/usr/local"}


def python_paths() -> tuple[list[str], list[str]]:
    """(folders to cover with tmpfs, libpython files to cover with /dev/null)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    dirs = set(glob.glob("/usr/lib/python3*") + glob.glob("/usr/local/lib/python3*"))
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix}:
        dirs.add(os.path.join(prefix, "lib", version) if prefix in SYSTEM_PREFIXES else prefix)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    libs = set(glob.glob(os.path.join(libdir, "libpython3*.so*")) + glob.glob("/usr/lib/*/libpython3*.so*")
               + glob.glob("/usr/local/lib/libpython3*.so*") + glob.glob("/usr/lib/libpython3*.so*"))
    dirs = sorted(d for d in dirs if os.path.isdir(d))
    libs = sorted(f for f in libs if os.path.isfile(f) and not any(f.startswith(d + "/") for d in dirs))
    return dirs, libs


def without_python(cmd: list[str]) -> subprocess.CompletedProcess:
    """Run ``cmd`` in a mount namespace where the Python installations are hidden."""
    dirs, libs = python_paths()
    script = "set -e\n" + "".join(f"mount -t tmpfs none '{d}'\n" for d in dirs) \
        + "".join(f"mount --bind /dev/null '{f}'\n" for f in libs) + 'exec "$@"\n'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cmd], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def hidden_python_works():
    """Skips by name where a mount namespace cannot hide Python; fails where the hiding is incomplete."""
    need_tool("unshare", why="hosts with the Python installation hidden in a mount namespace")
    need_root("unshare -m hides the Python installation in a mount namespace")
    probe = without_python([sys.executable, "-c", "pass"])
    if probe.returncode == 0:
        pytest.fail("Python still runs with its installation hidden: the hiding is incomplete")
    if "unshare" in probe.stderr and "Operation not permitted" in probe.stderr:
        skip_unless_required(f"needs unshare -m, not permitted here: {probe.stderr.strip()}")


def fmu_check(fmu, h: float, stop: float, out: Path, inputs: Path | None = None,
               kind: str = "cs") -> subprocess.CompletedProcess:
    """The checker on ``fmu`` with Python hidden: XML and the ``kind`` simulation
    (``cs``; ``me``: forward Euler of step h)."""
    given = ["-i", str(inputs)] if inputs else []
    return without_python([str(FMU_CHECK), "-k", kind, "-h", repr(h), "-s", repr(stop), *given, "-o", str(out),
                            str(fmu)])


def input_file(path: Path, inputs: dict, stop: float) -> Path:
    """The checker's input CSV: ``inputs`` held from 0 to ``stop`` s."""
    row = ",".join(repr(v) for v in inputs.values())
    path.write_text(",".join(["time", *inputs]) + f"\n0.0,{row}\n{stop!r},{row}\n")
    return path
