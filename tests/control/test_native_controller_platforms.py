"""Native controller FMUs on the platforms they carry (#36.1): for each controller
kind (tests/control/controller_designs.py: the python-control and mbfmu designs,
and interconnections of controllers and blocks), the FMI 2 FMU's win64 DLL run
under wine computes what its linux64 binary does on the same held inputs, the
FMI 3 FMU carries an aarch64-linux binary that under qemu-user computes what its
x86_64-linux binary does, and the Linux binaries need no glibc newer than 2.17
(RHEL/CentOS 7). The hosts are the
native plant tests' C hosts (tests/native/platform_hosts.py)."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description

from controller_designs import DESIGNS, H, NETWORKS
from mbfmu.control import export_fmu
from mbfmu.cosim import System
from native.fmi3_jacobian import value_count
from native.glibc_symbols import too_new
from native.platform_hosts import AARCH64, assert_aarch64_glibc_baseline, run_linux64_and_win64

STEPS = 100  # steps of H: 1 s


def _design(kind: str):
    """The python-control system or the System of controllers and blocks named ``kind``."""
    if kind in NETWORKS:
        units, conns, values = NETWORKS[kind]()
        return System(units, conns, values=values)
    return DESIGNS[kind]()


def _export(kind: str, dest: Path, **kwargs) -> Path:
    sys = _design(kind)
    step = H if not isinstance(sys, System) and sys.isctime() else None
    name = f"{kind}_net" if kind in NETWORKS else None
    return export_fmu(sys, dest, name=name, runtime="native", step=step, **kwargs)


# the quick proof runs every commit: a discrete PID (scalar arithmetic, saturation) and the
# traced controller (sin and exp: the C library's on each platform); the others are slow
FAST = {"discrete_pid", "traced"}
KINDS = [k if k in FAST else pytest.param(k, marks=pytest.mark.slow) for k in sorted(DESIGNS) + sorted(NETWORKS)]
# the controllers whose C calls the C library's transcendental functions (the traced one's sin
# and exp, csrc/tape.c): neither C standard nor FMI asks them to be correctly rounded, so wine's
# msvcrt or aarch64 glibc may differ from x86_64 glibc in the last bit (equal on these inputs
# here); these compare to 1e-13. Every other kind is arithmetic alone (IEEE, no fused
# multiply-add: -ffp-contract=off), in the same order on each platform: bit for bit
LIBM = {"traced"}


def _inputs(names: list[str]) -> list[float]:
    """Distinct held input values, rad, rad/s or N.m (signs alternate)."""
    return [0.1 * (k + 1) * (-1) ** k for k in range(len(names))]


def _assert_equal(got: np.ndarray, expected: np.ndarray, kind: str) -> None:
    assert got.shape == expected.shape
    assert np.all(np.isfinite(expected)) and np.abs(expected[:, 1:]).max() > 1e-3  # the controller acts
    if kind in LIBM:
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13 * np.abs(expected).max())
    else:
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("kind", KINDS)
def test_the_fmi2_win64_dll_under_wine_equals_linux64(kind, hosts, tmp_path):
    fmu = _export(kind, tmp_path / "fmu", platforms=("linux64", "win64"))
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    md = read_model_description(str(fmu))
    ident = md.coSimulation.modelIdentifier
    assert (unzip / "binaries" / "win64" / f"{ident}.dll").is_file()
    assert not too_new(unzip / "binaries" / "linux64" / f"{ident}.so")
    ins = [v for v in md.modelVariables if v.causality == "input"]
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    held = ",".join(f"{v.valueReference}={x!r}" for v, x in zip(ins, _inputs(ins))) or "-"
    lin, win = run_linux64_and_win64(hosts, [str(unzip), ident, md.guid, repr(H), str(STEPS), held,
                                             *map(str, outs)])
    assert lin.shape == (STEPS, len(outs) + 1)
    _assert_equal(win, lin, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_the_fmi3_fmu_carries_an_aarch64_binary_equal_to_x86_64(kind, aarch64, tmp_path):
    """Default platforms: aarch64-linux is built where its cross compiler is installed."""
    run, hosts, _ = aarch64
    fmu = _export(kind, tmp_path / "fmu", fmi=3)
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    md = read_model_description(str(fmu))
    ident = md.coSimulation.modelIdentifier
    assert (unzip / "binaries" / "x86_64-windows" / f"{ident}.dll").is_file()
    assert not too_new(unzip / "binaries" / "x86_64-linux" / f"{ident}.so")
    binary = unzip / "binaries" / AARCH64 / f"{ident}.so"
    assert binary.is_file()
    assert_aarch64_glibc_baseline(binary)
    ins = [v for v in md.modelVariables if v.causality == "input"]
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    held = ",".join(f"{v.valueReference}={x!r}" for v, x in zip(ins, _inputs(ins))) or "-"
    args = [str(unzip), ident, md.instantiationToken, repr(H), str(STEPS), held,
            *(f"{r}:{value_count(md, [r])}" for r in outs)]
    x86, arm = (run(host, args) for host in hosts["fmi3"])
    assert x86.shape == (STEPS, value_count(md, outs) + 1)
    _assert_equal(arm, x86, kind)

