"""Child process of the life-cycle tests: load, run and free an FMU N times.

usage: python lifecycle_child.py FMU N STEPS [nogc]

Extracts the FMU once, then N times: load the binary, instantiate, initialize,
STEPS steps, terminate, free the instance and unload the binary. Prints one
JSON line: resident memory (kB) after every iteration and the final outputs.
"""
import gc
import json
import sys

from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave


def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def main(path: str, n: int, steps: int, collect: bool = True) -> None:
    md = read_model_description(path)
    unzipdir = extract(path)
    h = float(md.defaultExperiment.stepSize)
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    rss, last = [], None
    for i in range(n):
        fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir,
                        modelIdentifier=md.coSimulation.modelIdentifier, instanceName=f"run{i}")
        fmu.instantiate()
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        for k in range(steps):
            fmu.doStep(k * h, h)
        y = fmu.getReal(outs)
        if last is not None and y != last:
            raise SystemExit(f"run {i} gave {y}, run {i - 1} gave {last}")
        last = y
        fmu.terminate()
        fmu.freeInstance()   # also unloads the shared library
        if collect:
            gc.collect()     # fmpy's per-load ctypes objects sit in reference cycles
        rss.append(rss_kb())
    print(json.dumps({"rss_kb": rss, "outputs": last, "sys_path": len(sys.path)}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:] != ["nogc"])
