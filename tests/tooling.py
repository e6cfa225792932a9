"""What the tests need from outside Python: the fixtures kept in the repository
and the system tools some tests run.

A test that needs a system tool calls :func:`need_tool`. Where the tool is
absent the test skips with one line naming the Debian package that provides
it; with ``MBFMU_REQUIRE_TOOLS=1`` (set by ``.ci/run``) the absence fails the
test instead, so CI proves every path. ``make test`` ends with one line that
sums up these skips and gives the ``apt-get install`` command that enables them
(``conftest.pytest_terminal_summary``).
"""
from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
REFERENCE_FMUS = FIXTURES / "reference-fmus"   # fmi2/*.fmu, fmi3/*.fmu
FMU_CHECK = FIXTURES / "tools" / "fmuCheck.linux64"

# executable -> (Debian package, what the tests use it for)
TOOLS = {
    "x86_64-w64-mingw32-gcc": ("gcc-mingw-w64-x86-64", "win64 binaries of FMUs"),
    "x86_64-w64-mingw32-objdump": ("binutils-mingw-w64-x86-64", "imports of win64 binaries"),
    "wine64": ("wine64", "win64 FMUs and hosts run under wine; Debian puts it in /usr/lib/wine, add that to PATH"),
    "chromium": ("chromium", "HTML replays rendered headless"),
    "ffmpeg": ("ffmpeg", "video export of replays"),
    "ffprobe": ("ffmpeg", "video export of replays"),
    "aarch64-linux-gnu-gcc": ("gcc-aarch64-linux-gnu", "aarch64 cross-builds of FMU sources"),
    "aarch64-linux-gnu-objdump": ("binutils-aarch64-linux-gnu", "glibc versions of aarch64 binaries"),
    "qemu-aarch64": ("qemu-user", "aarch64 binaries run on x86_64"),
    "objdump": ("binutils", "glibc symbol versions of binaries"),
    "cmake": ("cmake", "fmpy.build.build_platform_binary builds FMU sources with CMake"),
    "unshare": ("util-linux", "hosts with the Python installation hidden"),
}

# the prefix every tool skip starts with: the terminal summary counts these
SKIP_PREFIX = "needs system tool"

def tools_required() -> bool:
    """True where a missing tool must fail the test (``MBFMU_REQUIRE_TOOLS=1``, CI)."""
    return os.environ.get("MBFMU_REQUIRE_TOOLS", "").lower() in ("1", "true", "yes")


def missing_tool(name: str, why: str = "") -> None:
    """Skip (or, when tools are required, fail) for a tool ``name`` that is absent."""
    package, use = TOOLS.get(name, (name, ""))
    skip_unless_required(f"{SKIP_PREFIX} {name} ({why or use}): apt-get install {package}")


def skip_unless_required(msg: str) -> None:
    """Skip with ``msg``, or fail with it when tools are required (CI)."""
    if tools_required():
        pytest.fail(msg + " [MBFMU_REQUIRE_TOOLS=1]")
    pytest.skip(msg)


def find_tool(name: str) -> str | None:
    """Path of the executable ``name`` on PATH, or None."""
    return shutil.which(name)


def need_tool(*names: str, why: str = "") -> str:
    """Path of the first of ``names`` found on PATH; skips or fails (see the module
    docstring) naming the first one when none is found."""
    for name in names:
        path = find_tool(name)
        if path:
            return path
    missing_tool(names[0], why)
    raise AssertionError("unreachable")  # pragma: no cover


def need_aarch64_libc(cc: str) -> str:
    """The aarch64 sysroot (``/usr/aarch64-linux-gnu``) whose C library the cross
    compiler ``cc`` links and qemu-aarch64 runs binaries with; skips (or fails)
    naming Debian's ``libc6-dev-arm64-cross`` where there is none."""
    import subprocess
    out = subprocess.run([cc, "-print-file-name=libc.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(out):
        skip_unless_required(f"{SKIP_PREFIX} {cc} (its aarch64 C library, for cross-built hosts and FMU "
                             f"binaries): apt-get install libc6-dev-arm64-cross")
    return str(Path(out).resolve().parent.parent)


def has_tool(name: str) -> bool:
    """True when ``name`` is on PATH (for tests that adapt instead of skipping)."""
    return find_tool(name) is not None


def need_root(why: str) -> None:
    """Skip (or fail when tools are required) unless the test runs as root."""
    if os.geteuid() != 0:
        skip_unless_required(f"needs root ({why})")


def reference_fmu(version: str, model: str) -> Path:
    """Path of a Reference FMU kept in the repository, e.g. ``("fmi2", "Stair")``."""
    path = REFERENCE_FMUS / version / f"{model}.fmu"
    assert path.is_file(), f"missing fixture {path} (see tests/fixtures/README.md)"
    return path


FMPY_FMUS = FIXTURES / "fmpy"   # Controller.fmu, Drivetrain.fmu (Dymola exports, FMPy's test resources)


def zip_folder(folder: Path, dest: Path) -> Path:
    """Zip every file below ``folder`` into ``dest`` (an FMU from its unzipped folder), names relative to it."""
    with zipfile.ZipFile(dest, "w") as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(folder).as_posix())
    return dest


# the FMI standard's headers every native FMU's sources carry (mbfmu/fmu/native/fmi_headers)
FMI_STANDARD_HEADERS = ("fmi2Functions.h", "fmi2FunctionTypes.h", "fmi2TypesPlatform.h",
                        "fmi3Functions.h", "fmi3FunctionTypes.h", "fmi3PlatformTypes.h")


def assert_standard_fmi_headers(folder: Path) -> None:
    """``folder`` holds the FMI 2.0 and 3.0 headers byte for byte as fmpy ships the standard's,
    and their license."""
    import importlib.util
    fmpy_headers = Path(importlib.util.find_spec("fmpy").origin).parent / "c-code"
    for name in FMI_STANDARD_HEADERS:
        assert (folder / name).read_bytes() == (fmpy_headers / name).read_bytes(), name
    license_text = (folder / "fmi-headers-LICENSE.txt").read_text()
    assert "Modelica Association" in license_text and "Redistribution and use in source and binary" in license_text
