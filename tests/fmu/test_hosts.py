"""The FMUs in importers other than fmpy: libcosim (C++) and a plain C host."""
from __future__ import annotations

import shutil
import subprocess
import zipfile

import numpy as np
import pytest
from fmpy import read_model_description

from .conftest import HERE, subprocess_env
from .test_simulate import _setup


def test_libcosim_gives_the_same_results_as_the_plant(case, build):
    import libcosimpy.CosimExecution as cosim  # test dependency: the independent importer
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    plant, h, n, u = _setup(case)
    n = min(n, 50)
    _, _, Y = plant.simulate(stop_time=n * h, step=h, u=u)
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
    np.testing.assert_allclose(np.array(rows), Y[1:], rtol=0, atol=1e-10)


@pytest.fixture(scope="session")
def c_host(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler: the non-Python host test cannot run")
    exe = tmp_path_factory.mktemp("c_host") / "c_host"
    subprocess.run([cc, "-O1", "-o", str(exe), str(HERE / "c_host.c"), "-ldl"], check=True)
    return exe


def test_c_host_without_preload_loads_and_steps_the_fmu(case, build, c_host, tmp_path):
    """dlopen(RTLD_LOCAL) from a C program that does not link libpython."""
    plant, h, n, u = _setup(case)
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
