"""The C timing hosts of ``benchmarks/fmu.py`` build and run against today's runtime.

They are compiled with an FMU's own ``sources/`` (runtime, kernels, ``model_data.c``
and its plug-in elements' C), so an interface change that leaves them behind breaks
the benchmark without breaking any other test: these keep them honest. The satellite
is the plant: its hinge latches are plug-in elements with state events, the path
that changed last.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from fmpy import read_model_description

from tooling import need_tool

REPO = Path(__file__).resolve().parents[1]


def _benchmark_module():
    spec = importlib.util.spec_from_file_location("benchmarks_fmu", REPO / "benchmarks" / "fmu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def satellite_sources(native_fmus, tmp_path_factory):
    """The satellite's native FMU, unpacked: (folder, its model description)."""
    need_tool("gcc", why="the timing hosts are C")
    fmu = native_fmus("satellite", platforms=("linux64",))
    folder = tmp_path_factory.mktemp("satellite_x")
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    return folder, read_model_description(str(fmu))


def test_native_step_host_times_the_fmu_and_the_bare_advance(satellite_sources, tmp_path):
    folder, md = satellite_sources
    exe = tmp_path / "native_step"
    _benchmark_module()._build_host(exe, "native_step.c", folder / "sources")
    lib = folder / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    run = subprocess.run([str(exe), str(lib), md.guid, "0.05", "20", "5"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert set(result) == {"step_ns", "step_get_ns", "bare_ns", "rss_growth", "substeps"}
    # every timing is a real measurement of work done (a failed advance exits non-zero above)
    assert all(result[k] > 0 for k in ("step_ns", "step_get_ns", "bare_ns")), result


def test_native_fmi_host_builds_against_the_runtime(satellite_sources, tmp_path):
    folder, _ = satellite_sources
    exe = tmp_path / "native_fmi"
    _benchmark_module()._build_host(exe, "native_fmi.c", folder / "sources")
    assert exe.is_file()
