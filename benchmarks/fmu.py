"""Benchmark of the plant FMUs: instantiation time and cost per step.

For each plant (the test pendulum and every library plant):

* cold instantiation: loading the FMU binary and ``fmi2Instantiate`` in a
  fresh Python process that has imported fmpy (so numpy) but not mbfmu: it
  includes importing mbfmu and the plant and building the plant;
* warm instantiation: the same again in that process (binary reloaded,
  modules cached), median of 5;
* cost per communication step: ``fmi2DoStep`` + ``fmi2GetReal`` of all
  outputs through fmpy, against ``Plant.advance`` + ``Plant.outputs_at``
  called directly in Python, at the plant's default step, interleaved, best
  of 3 (the machine is shared); ratio printed.

Usage::

    python benchmarks/fmu.py [NAME ...] [--steps N]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PENDULUM = f"{REPO}/tests/fmu/plants.py:DampedPendulum"

CHILD = r"""
import json, statistics, sys, time
t_start = time.perf_counter()
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
path, spec, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
md = read_model_description(path)
d = extract(path)
ident = md.coSimulation.modelIdentifier
outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]

def load():
    t0 = time.perf_counter()
    f = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=ident, instanceName="bench")
    f.instantiate()
    return f, time.perf_counter() - t0

fmu, cold = load()
warm = []
for _ in range(5):
    fmu.freeInstance()
    fmu, t = load()
    warm.append(t)
fmu.setupExperiment(startTime=0.0)
fmu.enterInitializationMode()
fmu.exitInitializationMode()
h = float(md.defaultExperiment.stepSize)
sys.path.insert(0, sys.argv[4])
from mbfmu.fmu.plantref import build_plant, parse
plant = build_plant(parse(spec))
x, u = plant.initial_state(), plant.default_inputs()
fmu_times, direct_times, t = [], [], 0.0
for rep in range(3):  # interleaved, best of 3: the machine is shared
    t0 = time.perf_counter()
    for k in range(steps):
        fmu.doStep(t, h)
        fmu.getReal(outs)
        t += h
    fmu_times.append((time.perf_counter() - t0) / steps)
    t0 = time.perf_counter()
    for k in range(steps):
        x = plant.advance(k * h, x, u, h)
        plant.outputs_at((k + 1) * h, x, u)
    direct_times.append((time.perf_counter() - t0) / steps)
fmu.terminate()
fmu.freeInstance()
fmu_step, direct = min(fmu_times), min(direct_times)
print(json.dumps(dict(cold=cold, warm=statistics.median(warm), fmu_step=fmu_step, direct_step=direct, h=h)))
"""


def bench(name: str, spec: str, steps: int, out: Path) -> dict:
    from mbfmu.fmu.builder import build_fmu
    path = build_fmu(spec, out / f"{name}.fmu")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), spec, str(steps), str(REPO)],
                         capture_output=True, text=True, env=env, cwd=out)
    if res.returncode != 0:
        raise RuntimeError(f"{name}: {res.stderr[-2000:]}")
    return json.loads(res.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="library plants (default: all) besides the test pendulum")
    parser.add_argument("--steps", type=int, default=500, help="communication steps timed (default 500)")
    args = parser.parse_args(argv)
    cases = {"damped_pendulum (test)": PENDULUM}
    try:
        from mbfmu.library import list_plants
        cases.update({n: n for n in (args.names or list_plants())})
    except ImportError as exc:
        print(f"(no plant library: {exc})")
    print(f"{'plant':<24}{'step s':>9}{'cold ms':>10}{'warm ms':>10}{'FMU us/step':>13}"
          f"{'direct us/step':>16}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in cases.items():
            r = bench(name.split()[0], spec, args.steps, Path(tmp))
            print(f"{name:<24}{r['h']:>9g}{r['cold'] * 1e3:>10.1f}{r['warm'] * 1e3:>10.1f}"
                  f"{r['fmu_step'] * 1e6:>13.1f}{r['direct_step'] * 1e6:>16.1f}"
                  f"{r['fmu_step'] / r['direct_step']:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
