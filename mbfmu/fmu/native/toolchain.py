"""Compiling the native runtime for each FMU platform.

The binary is built from the engine's kernel sources
(``mbfmu/dynamics/csrc/*.c`` except the CPython binding), the runtime
(``csrc/runtime.c``, ``csrc/fmi2.c``) and the plant's generated data file,
with the kernels' own optimization flags so that it computes what the
Python extension computes.
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
    "linux64": (("gcc", "cc"), ".so", ["-fPIC", "-fvisibility=hidden"]),
    "win64": (("x86_64-w64-mingw32-gcc",), ".dll", ["-static-libgcc"]),
}


def sources() -> list[Path]:
    """The C sources compiled into every native FMU (the plant's data file aside)."""
    kernels = sorted(p for p in KERNEL_DIR.glob("*.c") if p.name not in PYTHON_ONLY)
    return kernels + sorted(RUNTIME_DIR.glob("*.c"))


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


def compile_binary(platform: str, data_file: Path, dest: Path) -> Path:
    """Compile the runtime with the plant data ``data_file`` into ``dest``."""
    cc = compiler(platform)
    flags = PLATFORMS[platform][2]
    cmd = [cc, "-shared", *CFLAGS, *flags, f"-I{KERNEL_DIR}", f"-I{RUNTIME_DIR}", "-o", str(dest),
           *map(str, sources()), str(data_file), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ModelError(f"compiling the native {platform} FMU binary failed ({' '.join(cmd)}):\n{res.stderr}")
    return dest
