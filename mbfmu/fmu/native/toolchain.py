"""Compiling the native runtime for each FMU platform.

The binary is built from the FMU's own ``sources/`` folder (:mod:`.sources`:
the engine's kernel sources, ``mbfmu/dynamics/csrc`` except the CPython
binding, the runtime, ``csrc``, and the plant's generated data file), with the
kernels' own optimization flags so that it computes what the Python extension
computes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ...errors import ModelError

HERE = Path(__file__).parent
RUNTIME_DIR = HERE / "csrc"
KERNEL_DIR = HERE.parent.parent / "dynamics" / "csrc"
PYTHON_ONLY = {"binding.c"}
# the kernels' flags (setup.py), so the FMU computes what Plant.advance computes
CFLAGS = ["-O3", "-std=c99", "-fno-math-errno", "-Wall", "-Wno-unused-function"]

# platform -> (compiler candidates, binary suffix, platform flags)
PLATFORMS = {
    # MB_GLIBC_BASELINE: the glibc 2.17 baseline (dynamics/csrc/glibc_baseline.h)
    "linux64": (("gcc", "cc"), ".so", ["-fPIC", "-fvisibility=hidden", "-DMB_GLIBC_BASELINE"]),
    "win64": (("x86_64-w64-mingw32-gcc",), ".dll", ["-static-libgcc"]),
}


def runtime_files() -> list[Path]:
    """The C sources and headers of every native FMU (the plant's data file aside):
    the kernels' and the runtime's, each folder sorted by name."""
    kernels = sorted(p for p in KERNEL_DIR.iterdir() if p.suffix in (".c", ".h") and p.name not in PYTHON_ONLY)
    return kernels + sorted(p for p in RUNTIME_DIR.iterdir() if p.suffix in (".c", ".h"))


def compiler(platform: str) -> str:
    """Path of the C compiler for ``platform``; raises ModelError naming what is missing."""
    if platform not in PLATFORMS:
        raise ModelError(f"unknown FMU platform {platform!r}; the native runtime builds "
                         f"{', '.join(PLATFORMS)}")
    names = PLATFORMS[platform][0]
    env = os.environ.get("CC") if platform == "linux64" else None
    for name in ([env] if env else []) + list(names):
        path = shutil.which(name)
        if path:
            return path
    hint = " (Debian: apt-get install gcc-mingw-w64-x86-64)" if platform == "win64" else ""
    raise ModelError(f"cannot build the {platform} binary: no C compiler for it ({' or '.join(names)}) "
                     f"on PATH{hint}; leave {platform} out of the platforms")


def compile_binary(platform: str, source_dir: Path, units: list[str], dest: Path) -> Path:
    """Compile the compilation units ``units`` of the FMU's sources folder
    ``source_dir`` (:mod:`.sources`) into the binary ``dest``."""
    cc = compiler(platform)
    flags = PLATFORMS[platform][2]
    cmd = [cc, "-shared", *CFLAGS, *flags, "-o", str(dest), *(str(source_dir / u) for u in units), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ModelError(f"compiling the native {platform} FMU binary failed ({' '.join(cmd)}):\n{res.stderr}")
    return dest
