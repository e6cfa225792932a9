"""The native FMU's ``sources/`` build anywhere (#23.3): fmpy's CMake build
(``fmpy.build.build_platform_binary``) and a plain ``cc -shared`` over the
files the FMU lists (``<SourceFiles>`` in FMI 2, ``sources/buildDescription.xml``
in FMI 3) each make a binary that computes what the shipped binary computes."""
from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu, supported_platforms
from fmpy.build import build_platform_binary
from fmpy.validation import validate_fmu

from tooling import FMU_CHECK, assert_standard_fmi_headers, need_tool, zip_folder

from .conftest import NATIVE_PLANTS, STOPS, assert_same, input_table

# fmpy's CMake build takes about 7 s a plant here: rigid_arm is the quick proof
PLANTS = [n if n == "rigid_arm" else pytest.param(n, marks=pytest.mark.slow) for n in sorted(NATIVE_PLANTS)]


def _unzip(fmu: Path, dest: Path) -> Path:
    with zipfile.ZipFile(fmu) as z:
        z.extractall(dest)
    return dest


def _binary(unzipdir: Path) -> Path:
    """The one linux x86_64 binary of an extracted FMU (FMI 2 or 3 folder name)."""
    (path,) = [p for d in ("linux64", "x86_64-linux") for p in (unzipdir / "binaries" / d).glob("*.so")]
    return path


def _without_binary(fmu: Path, dest: Path) -> Path:
    """``fmu`` extracted into ``dest`` with its linux binary deleted (so a run
    that finds one proves the rebuild made it)."""
    unzipdir = _unzip(fmu, dest)
    _binary(unzipdir).unlink()
    return unzipdir


def _listed(unzipdir: Path) -> list[str]:
    """The source files the FMU lists, as fmpy reads them."""
    md = read_model_description(str(unzipdir))
    (config,) = {c.modelIdentifier: c for c in md.buildConfigurations}.values()
    (fileset,) = config.sourceFileSets
    return fileset.sourceFiles


def _run(fmu_or_dir: Path, name: str, fmi: int) -> np.ndarray:
    """(time, outputs...) of a co-simulation run of NATIVE_PLANTS[name] in fmpy
    (FMI 3 array outputs as their element columns)."""
    stop = STOPS[name]
    res = simulate_fmu(str(fmu_or_dir), fmi_type="CoSimulation", input=input_table(name, fmi), stop_time=stop,
                       output_interval=stop / 50)
    return np.column_stack([res[k].reshape(len(res), -1) for k in res.dtype.names])


def _assert_equal_runs(rebuilt: np.ndarray, shipped: np.ndarray) -> None:
    """Bitwise equal: the same IEEE operations in the same order (no FMA on
    x86_64's baseline, no fast-math in either build) whatever the flags."""
    assert rebuilt.shape == shipped.shape
    assert_same(rebuilt[:, 1:], shipped[:, 1:], rtol=1e-12, floor=1e-12)
    assert np.array_equal(rebuilt, shipped), "equal to 1e-12 but not bitwise"


@pytest.mark.parametrize("fmi", [2, 3])
def test_the_sources_folder_is_whole_and_listed(fmi, native_fmu, native_fmu3, tmp_path):
    fmu = (native_fmu if fmi == 2 else native_fmu3)("rigid_arm")
    unzipdir = _unzip(fmu, tmp_path)
    sources = unzipdir / "sources"
    listed = _listed(unzipdir)
    assert sorted(listed) == sorted(p.name for p in sources.glob("*.c"))
    assert "model_data.c" in listed
    # every quoted include of every shipped file is shipped
    for path in sources.iterdir():
        for line in path.read_text().splitlines():
            if line.startswith('#include "'):
                assert (sources / line.split('"')[1]).is_file(), f"{path.name}: {line}"
    assert "c-code" in supported_platforms(str(fmu))
    assert_standard_fmi_headers(sources)  # the types and signatures the runtime compiles against
    if fmi == 3:
        assert (sources / "buildDescription.xml").is_file()
        fileset = ET.parse(sources / "buildDescription.xml").getroot().find("BuildConfiguration/SourceFileSet")
        assert "-ffp-contract=off" in fileset.get("compilerOptions").split()
    assert validate_fmu(str(fmu)) == []


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", PLANTS)
def test_fmpy_builds_the_sources_into_the_shipped_binary(name, fmi, native_fmu, native_fmu3, tmp_path):
    need_tool("cmake", why="fmpy.build.build_platform_binary runs CMake")
    fmu = (native_fmu if fmi == 2 else native_fmu3)(name)
    unzipdir = _without_binary(fmu, tmp_path / "fmu")
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    # as `fmpy compile --all-warnings --warning-as-error` does: -Wall -Wextra -Wpedantic, no warning
    build_platform_binary(unzipdir.resolve(), build_dir, all_warnings=True,
                          cmake_options={"CMAKE_COMPILE_WARNING_AS_ERROR:BOOL": "ON"})
    _assert_equal_runs(_run(unzipdir, name, fmi), _run(fmu, name, fmi))


def _checker_run(fmu: Path, out: Path) -> np.ndarray:
    """The Compliance Checker's co-simulation of ``fmu`` (a C host that links no libm), its
    outputs as an array; asserts that it reported no error."""
    res = subprocess.run([str(FMU_CHECK), "-k", "cs", "-h", "0.001", "-s", "0.05", "-o", str(out), str(fmu)],
                         capture_output=True, text=True, timeout=120)
    text = res.stdout + res.stderr
    assert res.returncode == 0 and "0 Error(s)" in text, text[-3000:]
    return np.genfromtxt(out, delimiter=",", skip_header=1)


def test_the_binary_fmpy_builds_from_the_sources_runs_in_a_host_without_libm(native_fmu, tmp_path):
    """fmpy's CMake build links no library (the buildDescription's libm included): the binary it
    makes carries the math functions' link to libm itself (csrc/libm_link.c), so the Compliance
    Checker, whose process has no libm, runs it and gets the shipped binary's numbers."""
    need_tool("cmake", why="fmpy.build.build_platform_binary runs CMake")
    need_tool("nm", why="the symbols a binary imports")
    fmu = native_fmu("rigid_arm")
    assert "libm" not in subprocess.run(["ldd", str(FMU_CHECK)], capture_output=True, text=True).stdout
    unzipdir = _without_binary(fmu, tmp_path / "fmu")
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    build_platform_binary(unzipdir.resolve(), build_dir)
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(_binary(unzipdir))], capture_output=True,
                               text=True, check=True).stdout.split()
    assert not {"sin", "cos", "sincos", "pow", "exp", "atan2", "sqrt"} & set(undefined), undefined
    rebuilt = _checker_run(zip_folder(unzipdir, tmp_path / "rebuilt.fmu"), tmp_path / "rebuilt.csv")
    shipped = _checker_run(fmu, tmp_path / "shipped.csv")
    assert rebuilt.shape == shipped.shape and rebuilt.shape[0] > 10
    assert np.array_equal(rebuilt, shipped)


@pytest.mark.parametrize("name", PLANTS)
def test_plain_cc_over_the_listed_files_builds_the_shipped_binary(name, native_fmu, tmp_path):
    cc = need_tool("cc", "gcc")
    fmu = native_fmu(name)
    unzipdir = _without_binary(fmu, tmp_path / "fmu")
    sources = unzipdir / "sources"
    dest = unzipdir / "binaries" / "linux64" / f"{name}.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(dest), *(str(sources / f) for f in _listed(unzipdir)),
                    "-lm"], check=True, capture_output=True, text=True)
    _assert_equal_runs(_run(unzipdir, name, 2), _run(fmu, name, 2))


@pytest.mark.parametrize("name", PLANTS)
def test_sources_built_where_multiply_add_may_fuse_give_the_shipped_numbers(name, native_fmu, tmp_path):
    """GNU C mode (-std=gnu99, as fmpy's CMake build compiles) on a target with FMA would fuse
    multiply-adds (-ffp-contract=fast) and differ from the shipped binary by round-off; the
    sources turn contraction off themselves (glibc_baseline.h), so the build equals it bit for bit. x86_64
    -march=haswell stands in for aarch64 (both have FMA) and runs here."""
    cc = need_tool("gcc", why="GNU C mode and its contraction pragma")
    cpu = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if not all(f" {flag}" in cpu for flag in ("fma", "avx2")):
        pytest.skip("needs an x86_64 CPU with FMA (haswell or newer) to run the fused build")
    fmu = native_fmu(name)
    unzipdir = _without_binary(fmu, tmp_path / "fmu")
    sources = unzipdir / "sources"
    subprocess.run([cc, "-shared", "-fPIC", "-O3", "-std=gnu99", "-march=haswell", "-o",
                    str(unzipdir / "binaries" / "linux64" / f"{name}.so"),
                    *(str(sources / f) for f in _listed(unzipdir)), "-lm"], check=True, capture_output=True, text=True)
    _assert_equal_runs(_run(unzipdir, name, 2), _run(fmu, name, 2))


def test_the_fmi2_and_fmi3_sources_differ_only_in_the_model_data(native_fmu, native_fmu3, tmp_path):
    two = _unzip(native_fmu("rigid_arm"), tmp_path / "two") / "sources"
    three = _unzip(native_fmu3("rigid_arm"), tmp_path / "three") / "sources"
    differ = {p.name for p in two.iterdir() if p.read_bytes() != (three / p.name).read_bytes()}
    assert differ == {"model_data.c"}
    assert {p.name for p in three.iterdir()} - {p.name for p in two.iterdir()} == {"buildDescription.xml"}
