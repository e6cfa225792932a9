"""Where the native FMU's binaries load (#23.3): the linux64 binary needs no
glibc newer than 2.17 (``objdump -T``), so it loads on RHEL/CentOS 7 and 8;
the sources cross-compiled for aarch64 run under qemu-user and equal linux64,
and the FMI 3 FMU carries that aarch64-linux binary."""
from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from tooling import need_tool

from .conftest import NATIVE_PLANTS, assert_same
from .glibc_symbols import glibc_versions, too_new
from .platform_hosts import AARCH64, assert_aarch64_glibc_baseline


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
    # -DMB_LINKS_LIBM: with -lm the sources call libm directly (csrc/libm_link.c)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-DMB_LINKS_LIBM", "-o", str(so),
                    *map(str, sorted(sources.glob("*.c"))), "-lm"], check=True)
    assert glibc_versions(so)["pow"] == (2, 29)
    pinned = tmp_path / "pinned.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-DMB_GLIBC_BASELINE", "-DMB_LINKS_LIBM", "-o", str(pinned),
                    *map(str, sorted(sources.glob("*.c"))), "-lm"], check=True)
    assert glibc_versions(pinned)["pow"] == (2, 2, 5)


# ---------------------------------------------------------------- aarch64 under qemu-user
# every plant's cross-build and run takes a while here: rigid_arm is the quick proof
PLANTS = [n if n == "rigid_arm" else pytest.param(n, marks=pytest.mark.slow) for n in sorted(NATIVE_PLANTS)]


@pytest.mark.parametrize("name", PLANTS)
def test_the_shipped_sources_cross_built_for_aarch64_equal_linux64(name, native_fmu, aarch64, tmp_path):
    """The FMI 2 FMU's sources/, compiled for aarch64 as a user would (the files
    it lists, -ffp-contract=off so that no multiply-add is fused), run under
    qemu-user in a C host cross-built the same way: the x86_64 binary's numbers."""
    from fmpy import read_model_description
    run, hosts, cc = aarch64
    fmu = native_fmu(name)
    unzipdir = _extract(fmu, tmp_path)
    md = read_model_description(str(fmu))
    (files,) = {c.modelIdentifier: c.sourceFileSets[0].sourceFiles for c in md.buildConfigurations}.values()
    binary = unzipdir / "binaries" / AARCH64 / f"{md.coSimulation.modelIdentifier}.so"
    binary.parent.mkdir(parents=True)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-std=c99", "-ffp-contract=off", "-DMB_GLIBC_BASELINE", "-o",
                    str(binary), *(str(unzipdir / "sources" / f) for f in files), "-lm"], check=True)
    assert_aarch64_glibc_baseline(binary)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [v.name for v in md.modelVariables if v.causality == "output"]
    h = float(md.defaultExperiment.stepSize)
    args = [str(unzipdir), md.coSimulation.modelIdentifier, md.guid, repr(h), "100",
            ",".join(f"{vr[k]}={v!r}" for k, v in NATIVE_PLANTS[name].items()), *(str(vr[o]) for o in outs)]
    x86, arm = (run(host, args) for host in hosts["fmi2"])
    assert x86.shape == arm.shape == (100, len(outs) + 1)
    assert_same(arm[:, 1:], x86[:, 1:], rtol=1e-12, floor=1e-12)


@pytest.mark.parametrize("name", PLANTS)
def test_the_fmi3_fmu_carries_an_aarch64_binary_equal_to_x86_64(name, aarch64, tmp_path):
    """FMI 3 builds aarch64-linux by default where the cross compiler is installed;
    that binary under qemu-user computes what x86_64-linux does."""
    from fmpy import read_model_description
    from fmpy.validation import validate_fmu

    from mbfmu.fmu.builder import build_fmu

    from .fmi3_jacobian import value_count
    run, hosts, _ = aarch64
    fmu = build_fmu(name, tmp_path / "fmu", runtime="native", fmi_version=3)  # default platforms
    unzipdir = _extract(fmu, tmp_path / "x")
    assert (unzipdir / "binaries" / AARCH64 / f"{name}.so").is_file()
    assert validate_fmu(str(fmu)) == []
    assert_aarch64_glibc_baseline(unzipdir / "binaries" / AARCH64 / f"{name}.so")
    md = read_model_description(str(fmu))
    by_name = {v.name: v for v in md.modelVariables}
    groups: dict[str, list[float]] = {}
    for k, v in NATIVE_PLANTS[name].items():
        groups.setdefault(k.split("[")[0] if k.split("[")[0] in by_name else k, []).append(v)
    inputs = ",".join(f"{by_name[g].valueReference}=" + ":".join(map(repr, v)) for g, v in groups.items())
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    args = [str(unzipdir), md.coSimulation.modelIdentifier, md.instantiationToken,
            repr(float(md.defaultExperiment.stepSize)), "50", inputs, *(f"{r}:{value_count(md, [r])}" for r in outs)]
    x86, arm = (run(host, args) for host in hosts["fmi3"])
    assert x86.shape == arm.shape == (50, value_count(md, outs) + 1)
    assert_same(arm[:, 1:], x86[:, 1:], rtol=1e-12, floor=1e-12)


def test_fmi2_refuses_the_aarch64_platform_by_name(tmp_path):
    from mbfmu.errors import InputError
    from mbfmu.fmu.builder import build_fmu
    with pytest.raises(InputError, match="aarch64-linux is FMI 3 only"):
        build_fmu("rigid_arm", tmp_path, runtime="native", platforms=["linux64", AARCH64])
    with pytest.raises(InputError, match="aarch64-linux is built by --runtime native --fmi 3"):
        build_fmu("rigid_arm", tmp_path, platforms=["linux64", AARCH64])  # the pythonfmu runtime
    assert not list(tmp_path.iterdir())
