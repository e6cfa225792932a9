"""#26.20: memory per instantiate/free cycle of the pythonfmu FMU, counted.

pythonfmu 0.7's ``findClass`` (run at every ``fmi2Instantiate``) leaks the
``repr`` of every class of the slave script's MRO, its UTF-8 bytes, the MRO
list, the class name's bytes and a ``sys.path`` string: 1.1-1.4 kB per cycle.
The generated script now hands ``findClass`` a stand-in whose MRO reprs and
name are cached objects (``mbfmu.fmu.slave.CLASS_FINDER``); what pythonfmu
still leaks is the MRO list, one bytes object and the path string (about
250 B of the about 500 B per cycle left, from about 1200 B).

Counted with tracemalloc (the Python heap, where the leak was) in a child
process running fmpy: many cycles of instantiate, initialize, one step,
terminate, free, with the binary kept loaded and with it reloaded each
time as fmpy's ``freeInstance`` does; the native FMU of the same plant is
the control that stays flat.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mbfmu.fmu.builder import build_fmu

from .conftest import subprocess_env

CYCLES = 300

CHILD = r"""
import gc, json, sys, tracemalloc
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
path, n, reload = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "reload"
md = read_model_description(path)
d = extract(path)
kept = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                 instanceName="memory")

def cycle():
    f = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="memory") if reload else kept
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    f.doStep(0.0, 1e-3)
    f.terminate()
    if reload:
        f.freeInstance()  # and unloads the binary
    else:
        f.fmi2FreeInstance(f.component)

for _ in range(30):  # imports, caches
    cycle()
gc.collect()
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
for _ in range(n):
    cycle()
gc.collect()
print(json.dumps((tracemalloc.get_traced_memory()[0] - before) / n))
"""


@pytest.fixture(scope="module")
def fmus(tmp_path_factory, native_fmus):
    out = tmp_path_factory.mktemp("memory")
    return {"pythonfmu": build_fmu("rigid_arm", out / "py" / "rigid_arm.fmu", platforms=["linux64"]),
            "native": native_fmus("rigid_arm", platforms=["linux64"], interfaces=["cs"])}


def _growth(fmu, mode: str) -> float:
    res = subprocess.run([sys.executable, "-c", CHILD, str(fmu), str(CYCLES), mode], capture_output=True,
                         text=True, timeout=900, env=subprocess_env())
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.splitlines()[-1])


@pytest.mark.parametrize("mode", ["kept", "reload"])
def test_python_heap_per_cycle_is_a_fraction_of_pythonfmus_leak(fmus, mode):
    native = _growth(fmus["native"], mode)
    ours = _growth(fmus["pythonfmu"], mode)
    assert native < 150, f"the control grows {native:.0f} B per cycle"
    # before: about 1200 B per cycle here (1215 kept, 1252 reloaded); now about 500 B, of which
    # what pythonfmu still leaks in fmi2Instantiate is about 250 B
    assert ours < 650, f"the pythonfmu FMU grows {ours:.0f} B per cycle (native: {native:.0f} B)"
