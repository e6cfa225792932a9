"""Compiling the native runtime for each FMU platform.

The binary is built from the FMU's own ``sources/`` folder (:mod:`.sources`:
the engine's kernel sources, ``mbfmu/dynamics/csrc`` except the CPython
binding, the runtime, ``csrc``, the FMI standard's headers with their license,
``fmi_headers``, the logging both runtimes share, ``fmi_common``, and the
plant's generated data file), with the kernels' own optimization flags so that
it computes what the Python extension computes.
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
# the FMI 2.0 and 3.0 headers of the standard (Modelica Association, BSD-2-Clause), unchanged, with
# their license; every FMU's sources/ carries them (the runtimes declare no FMI type themselves)
FMI_HEADER_DIR = HERE / "fmi_headers"
FMI_LICENSE = "fmi-headers-LICENSE.txt"
# C shared by the plant runtime (csrc) and the controller runtime (ctrl)
FMI_COMMON_DIR = HERE / "fmi_common"
# the CPython bindings of the kernels extension (not the FMU's: it has no Python)
PYTHON_ONLY = {"binding.c", "tangent_binding.c", "tangent_binding.h"}
# the kernels' flags (setup.py), so the FMU computes what Plant.advance computes
CFLAGS = ["-O3", "-std=c99", "-fno-math-errno", "-Wall", "-Wno-unused-function"]

# platform -> (compiler candidates, binary suffix, platform flags). MB_GLIBC_BASELINE: the
# glibc 2.17 baseline (dynamics/csrc/glibc_baseline.h). MB_LINKS_LIBM: -lm is on the link line, so
# csrc/libm_link.c (libm found at load time, for builds that link no libm) is left out. -ffp-contract=off: aarch64 has fused
# multiply-add, which would round differently from x86_64 (-std=c99 implies it; said for clarity)
PLATFORMS = {
    "linux64": (("gcc", "cc"), ".so", ["-fPIC", "-fvisibility=hidden", "-DMB_GLIBC_BASELINE", "-DMB_LINKS_LIBM"]),
    "win64": (("x86_64-w64-mingw32-gcc",), ".dll", ["-static-libgcc"]),
    "aarch64-linux": (("aarch64-linux-gnu-gcc",), ".so",
                      ["-fPIC", "-fvisibility=hidden", "-DMB_GLIBC_BASELINE", "-DMB_LINKS_LIBM", "-ffp-contract=off"]),
}
# platform -> Debian packages of its cross toolchain (the compiler and the target's C library)
PACKAGES = {"win64": "gcc-mingw-w64-x86-64", "aarch64-linux": "gcc-aarch64-linux-gnu libc6-dev-arm64-cross"}
# FMI 3 only: FMI 2 names no aarch64 folder, and fmpy 0.3.32 loads FMI 2 binaries from
# binaries/linux64 on aarch64 Linux too, where the x86_64 binary is
FMI3_ONLY = {"aarch64-linux"}


def fmi_files() -> list[Path]:
    """The files every native FMU's sources carry for its FMI interface, plant or
    controller: the standard's headers, their license, the shared logging."""
    headers = sorted(p for p in FMI_HEADER_DIR.iterdir() if p.suffix == ".h")
    return headers + [FMI_HEADER_DIR / FMI_LICENSE] + sorted(FMI_COMMON_DIR.glob("*.h"))


def runtime_files() -> list[Path]:
    """The C sources and headers of every native plant FMU (the plant's data file aside):
    the kernels', the runtime's, each folder sorted by name, and :func:`fmi_files`."""
    kernels = sorted(p for p in KERNEL_DIR.iterdir() if p.suffix in (".c", ".h") and p.name not in PYTHON_ONLY)
    return kernels + sorted(p for p in RUNTIME_DIR.iterdir() if p.suffix in (".c", ".h")) + fmi_files()


def sources() -> list[Path]:
    """The C files compiled into every native FMU (the plant's data file aside)."""
    return [p for p in runtime_files() if p.suffix == ".c"]


def compiler(platform: str) -> str:
    """Path of the C compiler for ``platform``; raises ModelError naming what is missing."""
    if platform not in PLATFORMS:
        raise ModelError(f"unknown FMU platform {platform!r}; the native runtime builds "
                         f"{', '.join(PLATFORMS)}")
    names = PLATFORMS[platform][0]
    env = os.environ.get("CC") if platform == "linux64" else None
    hint = f" (Debian: apt-get install {PACKAGES[platform]})" if platform in PACKAGES else ""
    for name in ([env] if env else []) + list(names):
        path = shutil.which(name)
        if path:
            if platform == "aarch64-linux" and not _has_libc(path):
                raise ModelError(f"cannot build the {platform} binary: {name} finds no aarch64 C library"
                                 f"{hint}; leave {platform} out of the platforms")
            return path
    raise ModelError(f"cannot build the {platform} binary: no C compiler for it ({' or '.join(names)}) "
                     f"on PATH{hint}; leave {platform} out of the platforms")


def _has_libc(cc: str) -> bool:
    """True when the cross compiler ``cc`` finds its target's libc to link against."""
    res = subprocess.run([cc, "-print-file-name=libc.so"], capture_output=True, text=True)
    return res.returncode == 0 and os.path.isabs(res.stdout.strip())


def available(platform: str) -> bool:
    """True when this machine can build ``platform``'s binary."""
    try:
        compiler(platform)
    except ModelError:
        return False
    return True


def default_cross_platforms(fmi_version: int) -> tuple[str, ...]:
    """The platforms beyond linux64 and win64 a native FMU gets by default: aarch64-linux in
    FMI 3 where its cross compiler is installed (as win64 is where mingw-w64 is)."""
    return ("aarch64-linux",) if fmi_version == 3 and available("aarch64-linux") else ()


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
