"""Where the native FMU's binaries load (#23.3): the linux64 binary needs no
glibc newer than 2.17 (``objdump -T``), so it loads on RHEL/CentOS 7 and 8."""
from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from tooling import need_tool

from .conftest import NATIVE_PLANTS

BASELINE = (2, 17)
_GLIBC = re.compile(r"\bGLIBC_(\d+)\.(\d+)(?:\.(\d+))?\b")


def glibc_versions(binary: Path) -> dict[str, tuple[int, ...]]:
    """Symbol -> the glibc version it binds to, of every glibc symbol ``binary`` imports."""
    objdump = need_tool("objdump", why="the glibc symbol versions a binary needs")
    dump = subprocess.run([objdump, "-T", str(binary)], capture_output=True, text=True, check=True).stdout
    out = {}
    for line in dump.splitlines():
        m = _GLIBC.search(line)
        if m and "*UND*" in line:
            out[line.split()[-1]] = tuple(int(g) for g in m.groups() if g is not None)
    return out


def too_new(binary: Path) -> dict[str, str]:
    return {sym: ".".join(map(str, v)) for sym, v in glibc_versions(binary).items() if v[:2] > BASELINE}


def _extract(fmu: Path, dest: Path) -> Path:
    with zipfile.ZipFile(fmu) as z:
        z.extractall(dest)
    return dest


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_the_linux64_binary_needs_no_glibc_newer_than_2_17(name, native_fmu, tmp_path):
    so = _extract(native_fmu(name), tmp_path) / "binaries" / "linux64" / f"{name}.so"
    versions = glibc_versions(so)
    assert "pow" in versions  # the step controller's: a libm symbol the check must see
    assert not too_new(so), too_new(so)


def test_the_fmi3_x86_64_linux_binary_too(native_fmu3, tmp_path):
    so = _extract(native_fmu3("rigid_arm"), tmp_path) / "binaries" / "x86_64-linux" / "rigid_arm.so"
    assert not too_new(so), too_new(so)


def test_without_the_pin_the_same_sources_need_the_newest_libm(native_fmu, tmp_path):
    """The check can fail: built from the same sources without
    ``MB_GLIBC_BASELINE``, the binary binds ``pow`` to this machine's newest
    version (GLIBC_2.29 from glibc 2.29 on)."""
    cc = need_tool("cc", "gcc")
    glibc = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.(\d+)\s*$", glibc.splitlines()[0]) if glibc else None
    if not m or (int(m.group(1)), int(m.group(2))) < (2, 29):
        pytest.skip(f"needs glibc 2.29 or newer to show an unpinned pow (this machine: {glibc[:60]!r})")
    sources = _extract(native_fmu("rigid_arm"), tmp_path) / "sources"
    so = tmp_path / "unpinned.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(so), *map(str, sorted(sources.glob("*.c"))), "-lm"],
                   check=True)
    assert glibc_versions(so)["pow"] == (2, 29)
    pinned = tmp_path / "pinned.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-DMB_GLIBC_BASELINE", "-o", str(pinned),
                    *map(str, sorted(sources.glob("*.c"))), "-lm"], check=True)
    assert glibc_versions(pinned)["pow"] == (2, 2, 5)
