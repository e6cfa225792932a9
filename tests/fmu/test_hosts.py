"""The FMUs in importers other than fmpy: libcosim (C++) and a plain C host."""
from __future__ import annotations

import subprocess
import zipfile

import numpy as np
import pytest
from fmpy import read_model_description

from .conftest import HERE, REPO, subprocess_env
from .fmurun import case_setup


def test_libcosim_gives_the_same_results_as_the_plant(case, build):
    import libcosimpy.CosimExecution as cosim  # test dependency: the independent importer
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    plant, h, n, u = case_setup(case)
    n = min(n, 50)
    # libcosim counts time in integer nanoseconds: its steps differ from h by an ulp, and an
    # error-controlled advance is only continuous, not bit-stable, in the step: take its steps
    t = np.arange(n + 1) * int(round(h * 1e9)) / 1e9
    x, Y = plant.initial_state(), []
    for k in range(n):
        x = plant.advance(t[k], x, u, t[k + 1] - t[k])
        Y.append(plant.outputs_at(t[k + 1], x, u))
    Y = np.array(Y)
    md = read_model_description(str(build(case)))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    log_output_level(CosimLogLevel.ERROR)
    ex = cosim.CosimExecution.from_step_size(int(round(h * 1e9)))
    idx = ex.add_local_slave(CosimLocalSlave(fmu_path=str(build(case)), instance_name="plant"))
    for s, v in zip(plant.inputs, u):
        ex.real_initial_value(idx, vr[s.name], float(v))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    out_vrs = [vr[s.name] for s in plant.outputs]
    rows = []
    for _ in range(n):
        assert ex.step()
        rows.append(obs.last_real_values(idx, out_vrs))
    np.testing.assert_allclose(np.array(rows), Y, rtol=0, atol=1e-10)


def test_c_host_without_preload_loads_and_steps_the_fmu(case, build, c_host, tmp_path):
    """dlopen(RTLD_LOCAL) from a C program that does not link libpython."""
    plant, h, n, u = case_setup(case)
    n = min(n, 50)
    _, _, Y = plant.simulate(stop_time=n * h, step=h, u=u)
    with zipfile.ZipFile(build(case)) as z:
        z.extractall(tmp_path)
    md = read_model_description(str(build(case)))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    inputs = ",".join(f"{vr[s.name]}={float(v)!r}" for s, v in zip(plant.inputs, u)) or "-"
    args = [str(c_host), str(tmp_path), md.coSimulation.modelIdentifier, md.guid, repr(h), str(n),
            inputs, *[str(vr[s.name]) for s in plant.outputs]]
    res = subprocess.run(args, capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    got = np.array([[float(x) for x in line.split()] for line in res.stdout.splitlines()])
    np.testing.assert_allclose(got[:, 0], np.arange(1, n + 1) * h, rtol=1e-12)
    np.testing.assert_allclose(got[:, 1:], Y[1:], rtol=0, atol=1e-10)


def _pendulum_reference(h: float, n: int) -> np.ndarray:
    """theta, omega of tests/cosim/pyfmu/pendulum.py (RK4, 10 sub-steps), independently."""
    g, L, c = 9.81, 1.0, 0.5
    f = lambda x: np.array([x[1], -g / L * np.sin(x[0]) - c * x[1]])
    x, out, k = np.array([0.5, 0.0]), [], h / 10
    for _ in range(n):
        for _ in range(10):
            a = f(x)
            b = f(x + k / 2 * a)
            cc = f(x + k / 2 * b)
            d = f(x + k * cc)
            x = x + k / 6 * (a + 2 * b + 2 * cc + d)
        out.append(x.copy())
    return np.array(out)


def test_loader_shim_makes_a_raw_pythonfmu_fmu_load_in_a_c_host(c_host, tmp_path):
    """pythonfmu's own binary leaves libpython's symbols undefined, so a C host
    cannot load it; after add_loader_shim the same FMU loads and steps."""
    import sys

    from mbfmu.errors import InputError
    from mbfmu.fmu import add_loader_shim

    out = tmp_path / "raw"
    subprocess.run([sys.executable, "-m", "pythonfmu", "build", "-f",
                    str(HERE.parent / "cosim" / "pyfmu" / "pendulum.py"), "-d", str(out)],
                   check=True, capture_output=True, env=subprocess_env())
    fmu = next(out.glob("*.fmu"))
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    h, n = 0.01, 20

    def run(where):
        with zipfile.ZipFile(fmu) as z:
            z.extractall(where)
        args = [str(c_host), str(where), md.coSimulation.modelIdentifier, md.guid, repr(h), str(n), "-",
                str(vr["theta"]), str(vr["omega"])]
        return subprocess.run(args, capture_output=True, text=True, env=subprocess_env(), timeout=120)

    raw = run(tmp_path / "x_raw")
    assert raw.returncode != 0 and "undefined symbol: _Py" in raw.stdout + raw.stderr, raw.stderr[-2000:]
    add_loader_shim(fmu)
    res = run(tmp_path / "x_shim")
    assert res.returncode == 0, res.stderr[-2000:]
    got = np.array([[float(x) for x in line.split()] for line in res.stdout.splitlines()])
    np.testing.assert_allclose(got[:, 1:], _pendulum_reference(h, n), rtol=0, atol=1e-12)
    with pytest.raises(InputError, match="already has the mbfmu loader shim"):
        add_loader_shim(fmu)


def test_loader_shim_refuses_a_file_that_is_not_an_fmu(tmp_path):
    from mbfmu.errors import InputError
    from mbfmu.fmu import add_loader_shim

    bad = tmp_path / "bad.fmu"
    bad.write_text("not a zip")
    with pytest.raises(InputError, match="not a readable FMU"):
        add_loader_shim(bad)


def test_the_loader_shim_needs_no_glibc_newer_than_the_native_fmus(tmp_path):
    """The shim is pinned to the native binaries' glibc 2.17 baseline: its dl* functions bind to
    their versions before glibc 2.34 moved them into libc (the shim then needed GLIBC_2.34)."""
    from mbfmu.fmu.builder import compile_shim
    from native.glibc_symbols import BASELINE, glibc_versions, too_new
    shim = compile_shim(tmp_path / "shim.so")
    versions = glibc_versions(shim)
    assert versions["dlopen"][:2] <= BASELINE and "posix_spawnp" in versions, versions
    assert not too_new(shim), too_new(shim)


def test_the_readme_states_the_glibc_and_libstdcxx_the_pythonfmu_fmu_needs():
    """pythonfmu's own export library (inside every pythonfmu FMU, not rebuilt by mbfmu) needs a
    newer glibc and libstdc++ than the shim: the README's platforms row states both, as measured
    here from the library's imported symbol versions."""
    import re
    from mbfmu.fmu.builder import PYTHONFMU_LIB
    from tooling import need_tool
    objdump = need_tool("objdump", why="the glibc symbol versions a binary needs")
    dump = subprocess.run([objdump, "-T", str(PYTHONFMU_LIB)], capture_output=True, text=True, check=True).stdout
    undefined = "\n".join(line for line in dump.splitlines() if "*UND*" in line)

    def newest(prefix: str) -> str:
        found = {tuple(map(int, m.split("."))) for m in re.findall(rf"\b{prefix}_([0-9.]+)\b", undefined)}
        return ".".join(map(str, max(found)))
    row = next(line for line in (REPO / "README.md").read_text().splitlines()
               if line.startswith("| platforms |"))
    pythonfmu_column = row.split("|")[2]
    assert f"glibc {newest('GLIBC')} or newer" in pythonfmu_column, pythonfmu_column
    assert f"GLIBCXX_{newest('GLIBCXX')}" in pythonfmu_column, pythonfmu_column
