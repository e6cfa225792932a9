"""The C hosts that run an FMU's binaries for other platforms on this x86_64 Linux
machine: the FMI 2 host (tests/fmu/c_host.c) cross-built with mingw-w64 and run
under wine, and the FMI 2 and FMI 3 hosts (tests/native/c_host3.c) cross-built
for aarch64 and run under qemu-user, each next to the same host built natively."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tooling import need_aarch64_libc, need_tool

from .glibc_symbols import BASELINE, GLIBC_SYMBOL

C_HOST = Path(__file__).resolve().parents[1] / "fmu" / "c_host.c"
C_HOST3 = Path(__file__).resolve().parent / "c_host3.c"
AARCH64 = "aarch64-linux"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """(linux64 C host, win64 C host, wine64, environment) built from tests/fmu/c_host.c."""
    need_tool("x86_64-w64-mingw32-gcc")
    wine = need_tool("wine64")
    d = tmp_path_factory.mktemp("c_hosts")
    subprocess.run(["gcc", "-O1", "-o", str(d / "c_host"), str(C_HOST), "-ldl"], check=True)
    subprocess.run(["x86_64-w64-mingw32-gcc", "-O1", "-o", str(d / "c_host.exe"), str(C_HOST)], check=True)
    env = {**os.environ, "WINEPREFIX": str(d / "wineprefix"), "WINEDEBUG": "-all"}
    return d / "c_host", d / "c_host.exe", wine, env


def run_linux64_and_win64(hosts, args: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``t y...`` the linux64 host and the win64 host under wine print for the
    same arguments (c_host.c's usage), each checked to have exited 0."""
    linux_host, win_host, wine, env = hosts
    lin = subprocess.run([str(linux_host), *args], capture_output=True, text=True, timeout=120)
    win = subprocess.run([wine, str(win_host), *args], capture_output=True, text=True, timeout=600, env=env)
    assert lin.returncode == 0, lin.stderr
    assert win.returncode == 0, win.stderr
    return np.loadtxt(lin.stdout.splitlines(), ndmin=2), np.loadtxt(win.stdout.splitlines(), ndmin=2)


@pytest.fixture(scope="module")
def aarch64(tmp_path_factory):
    """(run(host, args), the FMI 2 and FMI 3 C hosts for x86_64 and aarch64, aarch64 cc) :
    the tests' C hosts built natively and cross-built, the aarch64 ones run under
    qemu-aarch64 with the cross C library."""
    cc = need_tool("aarch64-linux-gnu-gcc")
    qemu = need_tool("qemu-aarch64")
    sysroot = need_aarch64_libc(cc)
    d = tmp_path_factory.mktemp("aarch64_hosts")
    dir_flag = f'-DPLATFORM_DIR="{AARCH64}"'
    built = {}
    for key, src in (("fmi2", C_HOST), ("fmi3", C_HOST3)):
        subprocess.run(["gcc", "-O1", "-o", str(d / f"{key}_x86_64"), str(src), "-ldl"], check=True)
        subprocess.run([cc, "-O1", dir_flag, "-o", str(d / f"{key}_aarch64"), str(src), "-ldl"], check=True)
        built[key] = (d / f"{key}_x86_64", d / f"{key}_aarch64")

    def run(host: Path, args: list[str]) -> np.ndarray:
        cmd = [qemu, "-L", sysroot, str(host), *args] if host.name.endswith("aarch64") else [str(host), *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr
        return np.loadtxt(res.stdout.splitlines(), ndmin=2)
    return run, built, cc


def assert_aarch64_glibc_baseline(binary: Path) -> None:
    """The aarch64 ``binary`` imports glibc symbols no newer than the 2.17 baseline."""
    objdump = need_tool("aarch64-linux-gnu-objdump")
    dump = subprocess.run([objdump, "-T", str(binary)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(g) for g in m.groups() if g) for m in GLIBC_SYMBOL.finditer(dump)}
    assert versions and max(versions)[:2] <= BASELINE, sorted(versions)
