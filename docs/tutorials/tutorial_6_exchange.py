"""
Exchanging FMUs: two runtimes, validation, and another engine
=============================================================

A plant exports as an FMI 2.0 co-simulation FMU in one of two runtimes:

* ``runtime="pythonfmu"`` (the default): the plant's Python code runs inside
  the FMU through pythonfmu; every plant can be exported, and the host needs
  a Python with mbfmu installed.
* ``runtime="native"``: a C-only binary compiled from the engine's kernels
  (linux64, and win64 when a MinGW compiler is present), for plants built
  from the engine's elements; the host needs no Python.

Both FMUs of the rigid 3-DOF arm are built here, checked with FMPy's
validator, run in FMPy and in libcosim (the C++ co-simulation library of the
Open Simulation Platform, through libcosimpy), and timed per step.
"""
# %%
# Building both FMUs
# ------------------
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from fmpy import read_model_description, simulate_fmu
from fmpy.validation import validate_fmu

from mbfmu.fmu import build_fmu

work = Path(tempfile.mkdtemp())
fmus = {
    "pythonfmu": build_fmu("rigid_arm", work / "pythonfmu"),
    "native": build_fmu("rigid_arm", work / "native", runtime="native", platforms=["linux64"]),
}
for runtime, path in fmus.items():
    with zipfile.ZipFile(path) as z:
        binaries = sorted(n for n in z.namelist() if n.startswith("binaries/") and not n.endswith("/"))
    print(f"{runtime:9s} {path.stat().st_size / 1e3:8.0f} kB  {binaries}")

# %%
# Validation
# ----------
# :func:`fmpy.validation.validate_fmu` checks the model description against
# the FMI schema, the uniqueness of names, the model structure, start values,
# causality/variability combinations and units; an empty list means no
# problem found.
for runtime, path in fmus.items():
    problems = validate_fmu(str(path))
    print(f"{runtime}: {len(problems)} problems", *problems, sep="\n  ")
    assert not problems

md = read_model_description(str(fmus["native"]))
print("FMI", md.fmiVersion, "co-simulation; inputs:",
      [f"{v.name} [{v.unit or v.declaredType.unit}]" for v in md.modelVariables if v.causality == "input"])

# %%
# Both runtimes compute the same motion
# -------------------------------------
# The same constant joint torques (N m) for 1 s at the default step (10 ms),
# run by FMPy. The two runtimes share the engine's C integrator, so the
# outputs agree to round-off.
h, stop = 0.01, 1.0
tau = {"tau[1]": 2.0, "tau[2]": -5.0, "tau[3]": 3.0}
outputs = ["q[1]", "q[2]", "q[3]"]
runs = {rt: simulate_fmu(str(p), stop_time=stop, step_size=h, output_interval=h, start_values=tau,
                         output=outputs)
        for rt, p in fmus.items()}
diff = max(float(np.abs(runs["native"][n] - runs["pythonfmu"][n]).max()) for n in outputs)
print(f"largest difference native - pythonfmu: {diff:.2e} rad")

fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
for n in outputs:
    ax.plot(runs["pythonfmu"]["time"], runs["pythonfmu"][n], lw=3, alpha=0.4, label=f"{n} pythonfmu")
    ax.plot(runs["native"]["time"], runs["native"][n], "k--", lw=1)
ax.set(xlabel="time [s]", ylabel="joint angle [rad]", title="rigid_arm FMU: pythonfmu (colour), native (dashed)")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)

# %%
# Running in another engine: libcosim
# -----------------------------------
# libcosim loads the FMU with its own FMI importer and steps it with its own
# master; its result is the same as FMPy's.
import libcosimpy.CosimExecution as cosim  # noqa: E402
from libcosimpy.CosimLogging import CosimLogLevel, log_output_level  # noqa: E402
from libcosimpy.CosimObserver import CosimObserver  # noqa: E402
from libcosimpy.CosimSlave import CosimLocalSlave  # noqa: E402

log_output_level(CosimLogLevel.ERROR)
vr = {v.name: v.valueReference for v in md.modelVariables}
for runtime, path in fmus.items():
    ex = cosim.CosimExecution.from_step_size(int(round(h * 1e9)))  # step in ns
    idx = ex.add_local_slave(CosimLocalSlave(fmu_path=str(path), instance_name="arm"))
    for name, value in tau.items():
        ex.real_initial_value(idx, vr[name], value)
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    for _ in range(int(round(stop / h))):
        ex.step()
    q_end = np.array(obs.last_real_values(idx, [vr[n] for n in outputs]))
    q_fmpy = np.array([runs[runtime][n][-1] for n in outputs])
    print(f"libcosim, {runtime:9s}: q(1 s) = {np.round(q_end, 6)} rad; "
          f"FMPy differs by {np.abs(q_end - q_fmpy).max():.1e} rad")

# %%
# Cost per step
# -------------
# Each FMU is loaded in FMPy and stepped 500 times; the time per ``doStep``
# plus ``getReal`` of the outputs is measured here, while this page was built
# (best of three rounds; on a shared machine the ratio is indicative).
from fmpy import extract  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402


def time_per_step(path: Path, steps: int = 500, rounds: int = 3) -> float:
    """Wall time of one doStep + getReal(outputs), s (best of ``rounds``)."""
    md = read_model_description(str(path))
    unzipped = extract(str(path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName="timed")
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    best, t = np.inf, 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            fmu.doStep(t, h)
            fmu.getReal(outs)
            t += h
        best = min(best, (time.perf_counter() - t0) / steps)
    fmu.terminate()
    fmu.freeInstance()
    shutil.rmtree(unzipped, ignore_errors=True)
    return best


cost = {rt: time_per_step(p) for rt, p in fmus.items()}
for rt, c in cost.items():
    print(f"{rt:9s} {c * 1e6:9.1f} us per step")
print(f"native is {cost['pythonfmu'] / cost['native']:.1f} x faster per step")

fig, ax = plt.subplots(figsize=(5, 2.4), layout="constrained")
ax.barh(list(cost), [c * 1e6 for c in cost.values()])
ax.set(xlabel="wall time per step [us]", title="rigid_arm FMU in FMPy, measured at build time")
ax.set_xscale("log")
ax.grid(alpha=0.3, axis="x")
