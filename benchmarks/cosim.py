"""Benchmark of the co-simulation master (issue 7).

1. Master overhead per macro step per unit: a chain of trivial C FMUs
   (``y = k u + w + b``), mbfmu's Jacobi master against a bare hand-written
   fmpy loop doing the same calls.
2. A 10 s closed-loop run at 1 ms: pythonfmu pendulum plant + pythonfmu PD
   controller FMU, run by
   - mbfmu (Jacobi; FMUs as they declare themselves, and with the fact that
     pythonfmu outputs do not depend on inputs at a communication point),
   - a bare hand-written fmpy loop (the floor for a Python master),
   - libcosim (libcosimpy, C++), from the SSP file mbfmu writes,
   - the same system simulated monolithically in Python (same RK4, no FMUs).
   Ratios to the bare loop are printed.
3. The OpenModelica mass-spring pair (the two halves in the gemseo-fmu wheel,
   plain C FMUs), 10 s at 1e-4 s (100,000 steps), Jacobi, run by mbfmu's
   compiled loop (issue 14), mbfmu's Python loop, mbfmu with FMU logging on,
   a bare hand-written fmpy loop, libcosim (from the SSP file mbfmu writes),
   fmu-manipulation-toolbox's FMU container (its C loop, driven by fmpy at
   0.01 s) and ``fmpy.ssp.simulate_ssp``; ratios to the container.

4. The compiled loop (issue 25): FMI 3 VanDerPol per step against FMI 2's
   (and FMI 3 in the Python loop); input extrapolation of order 1 and 2
   against order 0 on the test mass pair and the OpenModelica pair; two heavy
   FMUs stepped in 1 and 2 threads; the lag of a real-time run.

5. Peers in the same run (issue 25): ecos (``ecospy``) and OMSimulator (a source
   build, found through ``MBFMU_OMSIMULATOR``) where installed, on VanDerPol
   (Reference FMUs) FMI 2 and FMI 3 co-simulation per step and on the
   OpenModelica pair, with ratios to mbfmu's compiled loop; mbfmu's Model
   Exchange units against fmpy's own Model Exchange loop (CVODE, same rtol)
   on VanDerPol FMI 2/FMI 3 and the whole OpenModelica mass-spring system.
   A missing peer prints ``not installed: <how to install it>``; how to build
   OMSimulator is in benchmarks/README.md.

6. Recording a subset of the outputs (``record=["u.x0"]``) against recording
   them all, both in the compiled loop (issue 35), with the Python loop's
   subset run (where such runs went before) for scale; chains of 2, 8 and 32
   Reference Feedthrough FMUs (String values in C) per unit-step, against ecos
   and OMSimulator.
7. Python units in the compiled loop (issue 35): the README blocks system
   (rigid_arm native FMU under P-D control through six blocks) and the arm
   under a continuous python-control LQG, per step against the FMU alone,
   compiled (blocks and controller in C) and in the Python loop; the same
   controller exported as one C FMU next to the arm in mbfmu, ecos and
   OMSimulator.
8. Model Exchange against OMSimulator (issue 35): mbfmu's ME unit, fmpy and
   OMSimulator's strongly coupled system on a tolerance sweep of FMI 2 FMUs,
   cost at equal final-value error.
9. A plant under a Scheduled Execution controller at 1 kHz (issues 35 and 36):
   the native rigid_arm, a joint PID exported as FMI 3.0 Scheduled Execution and
   a python-control observer, per step compiled and in the Python loop, against
   the controller as an unclocked FMI 3.0 FMU and as a Python unit.

The bare fmpy loops step on mbfmu's grid (:func:`grid_point`), so they make the
same calls as the master and section 2 checks their results bit for bit.

Run: ``.venv/bin/python benchmarks/cosim.py`` (a few minutes on 2 cores);
``benchmarks/cosim.py pair`` runs part 3 only, ``benchmarks/cosim.py compiled`` part 4 only,
``benchmarks/cosim.py peers`` part 5 only, ``benchmarks/cosim.py subset`` part 6 only, ``benchmarks/cosim.py units`` part 7 only,
``benchmarks/cosim.py me-peers`` part 8 only, ``benchmarks/cosim.py clocked`` part 9 only. Parts 3 and 5 need the ``bench``
extra (fmu-manipulation-toolbox, ecospy) and download the gemseo-fmu wheel.
"""
from __future__ import annotations

import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tooling, which fmu_build imports
sys.path.insert(0, str(ROOT / "tests" / "cosim"))

from fmu_build import build_c_fmu, build_python_fmu  # noqa: E402

from mbfmu.cosim import FmuUnit, System, simulate, write_ssp  # noqa: E402

REPEAT = 5
STOP, H = 10.0, 1e-3
N = int(round(STOP / H))


def best(fn, repeat=REPEAT):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


# ----------------------------------------------------------------------------- helpers
def grid_point(k, stop, n, t0=0.0):
    """Communication point ``k`` of ``n`` equal steps from ``t0`` to ``stop`` [s], computed as mbfmu's
    master computes it (``t0 + k * (stop - t0) / n``, the last one ``stop`` itself). ``k * H`` is not
    the same number in the last bit (``9 * 1e-3 != 9 * 10.0 / 10000``), and an FMU whose step is
    ``t_next - t`` then integrates a step one bit longer or shorter: the bare loops use these points
    so that they make the very same calls as the master, and their results compare bitwise."""
    return stop if k == n else t0 + k * (stop - t0) / n


def raw(path, name, values=None):
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)), modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName=name)
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    for k, v in (values or {}).items():
        fmu.setReal([vr[k]], [v])
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    return fmu, vr


# ----------------------------------------------------------------------------- 1. overhead
def overhead(gain_fmu, n_units=8, steps=5000):
    h = 1e-3
    stop = steps * h

    def master():
        units = [FmuUnit(gain_fmu, f"g{i}") for i in range(n_units)]
        s = System(units, [(f"g{i}.y", f"g{i + 1}.u") for i in range(n_units - 1)])
        t0 = time.perf_counter()
        r = simulate(s, stop, h, progress=False)
        return time.perf_counter() - t0, r

    def bare():
        fmus = [raw(gain_fmu, f"g{i}") for i in range(n_units)]
        t0 = time.perf_counter()
        u_vr, y_vr = [fmus[0][1]["u"]], [fmus[0][1]["y"]]
        rows = []
        for k in range(steps):
            t = k * h
            for f, _ in fmus:
                f.doStep(t, h)
            for i in range(n_units - 1):
                fmus[i + 1][0].setReal(u_vr, fmus[i][0].getReal(y_vr))
            rows.append([f.getReal(y_vr)[0] for f, _ in fmus])
        dt = time.perf_counter() - t0
        for f, _ in fmus:
            f.terminate()
            f.freeInstance()
        return dt, rows

    tm, tb = math.inf, math.inf
    for _ in range(REPEAT):  # interleaved, best of REPEAT: the machine is shared
        tm = min(tm, master()[0])
        tb = min(tb, bare()[0])
    per = 1e6 / (steps * n_units)
    return {"units": n_units, "steps": steps, "master_us": tm * per, "bare_us": tb * per}


# ----------------------------------------------------------------------------- 2. closed loop
def closed_loop_mbfmu(plant, ctrl, declared=True):
    ft = None if declared else {"theta": [], "omega": []}
    ftc = None if declared else {"tau": []}
    s = System([FmuUnit(plant, "plant", feedthrough=ft), FmuUnit(ctrl, "ctrl", values={"ref": 0.2}, feedthrough=ftc)],
               [("plant.theta", "ctrl.theta"), ("plant.omega", "ctrl.omega"), ("ctrl.tau", "plant.tau")])
    t0 = time.perf_counter()
    r = simulate(s, STOP, H, progress=False)
    return time.perf_counter() - t0, r


def closed_loop_bare(plant, ctrl):
    p, pv = raw(plant, "plant")
    c, cv = raw(ctrl, "ctrl", {"ref": 0.2})
    y_vr, u_vr = [pv["theta"], pv["omega"]], [cv["theta"], cv["omega"]]
    tau_c, tau_p = [cv["tau"]], [pv["tau"]]
    t0 = time.perf_counter()
    c.setReal(u_vr, p.getReal(y_vr))
    p.setReal(tau_p, c.getReal(tau_c))
    rows = []
    t = 0.0
    for k in range(N):
        t_next = grid_point(k + 1, STOP, N)
        p.doStep(t, t_next - t)
        c.doStep(t, t_next - t)
        y = p.getReal(y_vr)
        tau = c.getReal(tau_c)
        c.setReal(u_vr, y)
        p.setReal(tau_p, tau)
        t = t_next
        rows.append((t, y[0], y[1], tau[0]))
    dt = time.perf_counter() - t0
    for f in (p, c):
        f.terminate()
        f.freeInstance()
    return dt, np.array(rows)


def closed_loop_libcosim(ssp_path):
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    log_output_level(CosimLogLevel.ERROR)
    ex = CosimExecution.from_ssp_file(str(ssp_path), step_size=int(H * 1e9))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    idx = ex.slave_index_from_instance_name("plant")
    vr = {v.name.decode(): v.reference for v in ex.slave_variables(idx)}
    t0 = time.perf_counter()
    ok = ex.simulate_until(int(STOP * 1e9))
    dt = time.perf_counter() - t0
    theta = obs.last_real_values(idx, [vr["theta"]])[0]
    return dt, (ok, theta)


def closed_loop_monolithic():
    """The same system in plain Python: PD sampled every 1 ms from the states of the
    previous step (Jacobi semantics), RK4 with 10 sub-steps as in the plant FMU."""
    g, L, m, c, kp, kd, ref = 9.81, 1.0, 1.0, 0.5, 20.0, 4.0, 0.2
    th, om = 0.5, 0.0
    tau = 0.0  # the controller's output before its first step
    rows = []
    t0 = time.perf_counter()
    n, h = 10, H / 10

    def f(th, om, tau):
        return om, -g / L * math.sin(th) - c * om + tau / (m * L * L)
    for k in range(N):
        tau_next = kp * (ref - th) - kd * om
        for _ in range(n):
            a1, b1 = f(th, om, tau)
            a2, b2 = f(th + h / 2 * a1, om + h / 2 * b1, tau)
            a3, b3 = f(th + h / 2 * a2, om + h / 2 * b2, tau)
            a4, b4 = f(th + h * a3, om + h * b3, tau)
            th += h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
            om += h / 6 * (b1 + 2 * b2 + 2 * b3 + b4)
        tau = tau_next
        rows.append((th, om, tau))
    return time.perf_counter() - t0, np.array(rows)


# ----------------------------------------------------------------------------- 3. mass-spring pair
PAIR_STOP, PAIR_H = 10.0, 1e-4
PAIR_LINKS = [("a.x1", "b.x1"), ("b.x2", "a.x2")]


def _pair_system(fmus, log=False):
    return System([FmuUnit(fmus["MassSpringSubSystem1"], "a", log=log),
                   FmuUnit(fmus["MassSpringSubSystem2"], "b", log=log)], PAIR_LINKS)


def pair_mbfmu(fmus, compiled=True, log=False):
    from mbfmu.cosim.master import fast_loop
    fast_loop.ENABLED = compiled
    try:
        s = _pair_system(fmus, log)
        t0 = time.perf_counter()
        r = simulate(s, PAIR_STOP, PAIR_H, progress=False)
        return time.perf_counter() - t0, float(r["a.x1"][-1])
    finally:
        fast_loop.ENABLED = True


def pair_bare(fmus):
    a, av = raw(fmus["MassSpringSubSystem1"], "a")
    b, bv = raw(fmus["MassSpringSubSystem2"], "b")
    n = int(round(PAIR_STOP / PAIR_H))
    t0 = time.perf_counter()
    b.setReal([bv["x1"]], a.getReal([av["x1"]]))
    a.setReal([av["x2"]], b.getReal([bv["x2"]]))
    t = 0.0
    for k in range(n):
        t_next = grid_point(k + 1, PAIR_STOP, n)
        a.doStep(t, t_next - t)
        b.doStep(t, t_next - t)
        x1, x2 = a.getReal([av["x1"]]), b.getReal([bv["x2"]])
        b.setReal([bv["x1"]], x1)
        a.setReal([av["x2"]], x2)
        t = t_next
    dt = time.perf_counter() - t0
    for f in (a, b):
        f.terminate()
        f.freeInstance()
    return dt, x1[0]


def pair_container(fmus, work):
    import shutil
    import subprocess
    from fmpy import simulate_fmu
    d = work / "container"
    d.mkdir(exist_ok=True)
    for name in ("MassSpringSubSystem1", "MassSpringSubSystem2"):
        shutil.copy(fmus[name], d / f"{name}.fmu")
    (d / "pair.csv").write_text(
        "rule;from_fmu;from_port;to_fmu;to_port\n"
        "FMU;MassSpringSubSystem1.fmu;;;\nFMU;MassSpringSubSystem2.fmu;;;\n"
        "LINK;MassSpringSubSystem1.fmu;x1;MassSpringSubSystem2.fmu;x1\n"
        "LINK;MassSpringSubSystem2.fmu;x2;MassSpringSubSystem1.fmu;x2\n"
        "OUTPUT;MassSpringSubSystem1.fmu;x1;;x1\nOUTPUT;MassSpringSubSystem2.fmu;x2;;x2\n")
    tool = Path(sys.executable).with_name("fmucontainer")
    subprocess.run([str(tool), "-container", f"pair.csv:{PAIR_H}", "-fmu-directory", str(d), "-no-auto-input",
                    "-no-auto-output"], check=True, capture_output=True, cwd=d)
    t0 = time.perf_counter()
    r = simulate_fmu(str(d / "pair.fmu"), stop_time=PAIR_STOP, output_interval=0.01)
    return time.perf_counter() - t0, float(r["x1"][-1])


def pair_libcosim(ssp):
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    log_output_level(CosimLogLevel.ERROR)
    ex = CosimExecution.from_ssp_file(str(ssp), step_size=int(round(PAIR_H * 1e9)))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    idx = ex.slave_index_from_instance_name("a")
    vr = {v.name.decode(): v.reference for v in ex.slave_variables(idx)}
    t0 = time.perf_counter()
    ex.simulate_until(int(round(PAIR_STOP * 1e9)))
    return time.perf_counter() - t0, obs.last_real_values(idx, [vr["x1"]])[0]


def pair_fmpy_ssp(fmus, work):
    """fmpy.ssp records system-level output connectors only (and fails without
    them), which mbfmu's SSP files do not use: a hand-written SSD with one."""
    import zipfile
    from fmpy.ssp.simulation import simulate_ssp
    ssd = """<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="pair"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription">
  <ssd:System name="pair">
    <ssd:Connectors><ssd:Connector name="x1" kind="output"><ssc:Real/></ssd:Connector></ssd:Connectors>
    <ssd:Elements>
      <ssd:Component name="a" source="resources/a.fmu"><ssd:Connectors>
        <ssd:Connector name="x1" kind="output"><ssc:Real/></ssd:Connector>
        <ssd:Connector name="x2" kind="input"><ssc:Real/></ssd:Connector></ssd:Connectors></ssd:Component>
      <ssd:Component name="b" source="resources/b.fmu"><ssd:Connectors>
        <ssd:Connector name="x1" kind="input"><ssc:Real/></ssd:Connector>
        <ssd:Connector name="x2" kind="output"><ssc:Real/></ssd:Connector></ssd:Connectors></ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="a" startConnector="x1" endElement="b" endConnector="x1"/>
      <ssd:Connection startElement="b" startConnector="x2" endElement="a" endConnector="x2"/>
      <ssd:Connection startElement="a" startConnector="x1" endConnector="x1"/>
    </ssd:Connections>
  </ssd:System>
</ssd:SystemStructureDescription>
"""
    path = work / "pair_fmpy.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", ssd)
        z.write(fmus["MassSpringSubSystem1"], "resources/a.fmu")
        z.write(fmus["MassSpringSubSystem2"], "resources/b.fmu")
    t0 = time.perf_counter()
    r = simulate_ssp(str(path), stop_time=PAIR_STOP, step_size=PAIR_H)
    return time.perf_counter() - t0, float(r["x1"][-1])


def best_of_rounds(runs: dict[str, Any], failed, rounds: int = 2) -> tuple[dict[str, float], dict[str, Any]]:
    """Interleaved rounds of ``runs`` (label -> callable returning (wall s, value)): the best
    wall time (s) of each label, NaN if any round failed, and its last value, or ``failed(exc)``
    when it raised (a peer missing on this machine)."""
    best_t: dict[str, float] = {}
    value: dict[str, Any] = {}
    for _ in range(rounds):
        for label, fn in runs.items():
            try:
                dt, x = fn()
            except Exception as exc:  # a peer missing on this machine
                dt, x = math.nan, failed(exc)
            best_t[label] = min(best_t.get(label, math.inf), dt) if dt == dt else math.nan
            value[label] = x
    return best_t, value


def mass_spring_pair(work: Path) -> None:
    from openmodelica_fmus import fetch
    fmus = fetch(work / "openmodelica")
    ssp = write_ssp(_pair_system(fmus), work / "pair.ssp", stop_time=PAIR_STOP, step=PAIR_H)
    n = int(round(PAIR_STOP / PAIR_H))
    runs = {  # label -> callable; each run once per round, two rounds interleaved, best kept
        "mbfmu, compiled loop (default)": lambda: pair_mbfmu(fmus),
        "mbfmu, Python loop": lambda: pair_mbfmu(fmus, compiled=False),
        "mbfmu, Python loop, FMU logging on": lambda: pair_mbfmu(fmus, compiled=False, log=True),
        "bare hand-written fmpy loop": lambda: pair_bare(fmus),
        "fmu-manipulation-toolbox container (C)": lambda: pair_container(fmus, work),
        "libcosim (libcosimpy, from mbfmu SSP)": lambda: pair_libcosim(ssp),
        "fmpy.ssp.simulate_ssp": lambda: pair_fmpy_ssp(fmus, work),
    }
    best_t, final = best_of_rounds(runs, lambda exc: f"failed: {exc}")
    ref = best_t["fmu-manipulation-toolbox container (C)"]
    print(f"\n3. OpenModelica mass-spring pair, {PAIR_STOP:g} s at {PAIR_H:g} s = {n} steps (Jacobi):")
    print(f"   {'engine':42s} {'wall [s]':>9s} {'/container':>10s}  x1(10 s)")
    for label in runs:
        x = final[label]
        print(f"   {label:42s} {best_t[label]:9.3f} {best_t[label] / ref:10.2f}  "
              f"{x if isinstance(x, str) else f'{x:.12f}'}")
    print("   (mbfmu's times include instantiating and initializing the FMUs and recording every step; "
          "the container is stepped by fmpy every 0.01 s and records there)")


# ----------------------------------------------------------------------------- 4. compiled loop
def _per_step(make, n_short, n_long, h, repeat=3, **kw):
    """Wall time per step [us] of the same run at two lengths (set-up removed), best of ``repeat``,
    and the long run's result."""
    out = {}
    for n in (n_short, n_long):
        best_t, r = math.inf, None
        for _ in range(repeat):
            s = make()
            t0 = time.perf_counter()
            r = simulate(s, n * h, h, progress=False, **kw)
            best_t = min(best_t, time.perf_counter() - t0)
        out[n] = (best_t, r)
    return (out[n_long][0] - out[n_short][0]) / (n_long - n_short) * 1e6, out[n_long][1]


def compiled_loop(work: Path) -> None:
    from mbfmu.cosim.master import fast_loop
    ref = ROOT / "tests" / "fixtures" / "reference-fmus"
    vdp = {v: ref / v / "VanDerPol.fmu" for v in ("fmi2", "fmi3")}
    print("\n4. the compiled loop (issue 25)")
    rows = {}
    for _ in range(2):  # two interleaved rounds, best kept
        for label, v, compiled in (("FMI 2, compiled", "fmi2", True), ("FMI 3, compiled", "fmi3", True),
                                   ("FMI 3, Python loop", "fmi3", False)):
            fast_loop.ENABLED = compiled
            try:
                us, _ = _per_step(lambda: System([FmuUnit(vdp[v], "v")]), 20000, 200000 if compiled else 60000, 1e-3)
            finally:
                fast_loop.ENABLED = True
            rows[label] = min(rows.get(label, math.inf), us)
    print("   VanDerPol (Reference FMU), per step, 1 ms steps:")
    for label, us in rows.items():
        print(f"   {label:22s} {us:7.3f} us   / FMI 2 compiled {us / rows['FMI 2, compiled']:6.2f}")

    mass = build_c_fmu("mass", work)

    def mass_pair():
        a = FmuUnit(mass, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1))
        b = FmuUnit(mass, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5))
        return System([a, b], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])
    pairs = {"test mass pair (C FMUs, input derivatives)": mass_pair}
    try:
        from openmodelica_fmus import fetch
        fmus = fetch(work / "openmodelica")
        pairs["OpenModelica mass-spring pair"] = lambda: _pair_system(fmus)
    except Exception as exc:  # no network
        print(f"   (OpenModelica pair not available: {exc})")
    print("   input extrapolation, per step (Jacobi, 1e-4 s steps):")
    for name, make in pairs.items():
        res = {}
        for _ in range(2):
            for order in (0, 1, 2):
                us, _ = _per_step(make, 10000, 100000, 1e-4, extrapolation=order)
                res[order] = min(res.get(order, math.inf), us)
        fast_loop.ENABLED = False
        try:
            py_us, _ = _per_step(make, 2000, 12000, 1e-4, repeat=2, extrapolation=1)
        finally:
            fast_loop.ENABLED = True
        print(f"   {name}: order 0 {res[0]:.3f} us, order 1 {res[1]:.3f} us ({res[1] / res[0]:.2f}x), "
              f"order 2 {res[2]:.3f} us ({res[2] / res[0]:.2f}x); order 1 in the Python loop {py_us:.3f} us "
              f"({py_us / res[1]:.1f}x the compiled)")

    def heavy():
        a = FmuUnit(mass, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1, nsub=4000))
        b = FmuUnit(mass, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5, nsub=4000))
        return System([a, b], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])
    th, res, cpu = {}, {}, {}
    for _ in range(3):  # whole runs (set-up is small next to 300 heavy steps), interleaved, best kept
        for n in (1, 2):
            s = heavy()
            c0, t0 = os.times(), time.perf_counter()
            r = simulate(s, 0.3, 1e-3, progress=False, threads=n)
            dt, c1 = time.perf_counter() - t0, os.times()
            if dt < th.get(n, math.inf):
                th[n], res[n] = dt / 300 * 1e6, r
                cpu[n] = (c1.user - c0.user + c1.system - c0.system) / dt
    assert np.array_equal(res[1].data, res[2].data), "threaded and serial runs disagree"
    print(f"   two heavy FMUs (mass, 4000 RK4 sub-steps per step), per step: 1 thread {th[1]:.1f} us "
          f"(CPU/wall {cpu[1]:.2f}), 2 threads {th[2]:.1f} us (CPU/wall {cpu[2]:.2f}), speed-up "
          f"{th[1] / th[2]:.2f}x (results identical)")

    for factor in (1.0, 10.0):
        r = simulate(System([FmuUnit(vdp["fmi3"], "v")]), 2.0, 1e-3, progress=False, realtime=factor)
        s = r.summary
        print(f"   real time x{factor:g}, VanDerPol FMI 3, 2 s at 1 ms: wall {s.wall_time:.4f} s "
              f"(ideal {2.0 / factor:.4f} s), {s.realtime_overruns} of {s.steps} steps late, worst lag "
              f"{s.realtime_worst_lag * 1e3:.3f} ms")


def subset_recording(work: Path) -> None:
    """Recording a subset against recording every output (issue 35, target at most 1.1x),
    per step, both in the compiled loop; the Python loop (where subsets ran before) for scale."""
    from mbfmu.cosim.master import fast_loop
    ref = ROOT / "tests" / "fixtures" / "reference-fmus"
    mass = build_c_fmu("mass", work)

    def chain():
        a = FmuUnit(mass, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1))
        b = FmuUnit(mass, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5))
        c = FmuUnit(mass, "c", values=dict(m=0.5, k=5.0, kc=8.0))
        return System([a, b, c], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F"), ("b.x", "c.xin"),
                                  ("b.v", "c.vin")])
    cases = {"VanDerPol FMI 2": (lambda: System([FmuUnit(ref / "fmi2" / "VanDerPol.fmu", "u")]), ["u.x0"]),
             "VanDerPol FMI 3": (lambda: System([FmuUnit(ref / "fmi3" / "VanDerPol.fmu", "u")]), ["u.x0"]),
             "three masses (C FMUs)": (chain, ["c.x"])}
    print("\n6. recording a subset (issue 35), per step, 1 ms steps, best of 2 interleaved rounds:")
    print(f"   {'system':24s} {'all outputs':>12s} {'subset':>10s} {'ratio':>6s} {'subset, Python loop':>20s}")
    for name, (make, record) in cases.items():
        res: dict[str, float] = {}
        for _ in range(2):
            for label, rec in (("all", None), ("subset", record)):
                us, _ = _per_step(make, 20000, 200000, 1e-3, record=rec)
                res[label] = min(res.get(label, math.inf), us)
        fast_loop.ENABLED = False
        try:
            py_us, _ = _per_step(make, 2000, 12000, 1e-3, repeat=2, record=record)
        finally:
            fast_loop.ENABLED = True
        print(f"   {name:24s} {res['all']:9.3f} us {res['subset']:7.3f} us {res['subset'] / res['all']:6.2f} "
              f"{py_us:14.3f} us ({record[0]})")

    ft = ref / "fmi2" / "Feedthrough.fmu"
    kinds = ("Float64_continuous", "Float64_discrete", "Int32", "Boolean", "String", "Enumeration")

    def chain_links(n, kinds=kinds):
        return [(f"f{k - 1}.{t}_output", f"f{k}.{t}_input") for k in range(1, n) for t in kinds]

    def feedthrough_chain(n):
        units = [FmuUnit(ft, f"f{k}", values={"String_input": "text"} if k == 0 else None) for k in range(n)]
        return System(units, chain_links(n))
    missing = peers_available()
    print("   chains of Reference Feedthrough FMUs (FMI 2; every type, String included), per unit-step, "
          "1 ms steps; peers: difference of 2000 and 20000 steps, best of 2:")
    print(f"   {'units':>5s} {'compiled':>10s} {'Python loop':>12s} {'ecos':>10s} {'/ecos':>6s} {'OMSimulator':>12s} "
          f"{'/OMS':>6s}")
    notes: dict[str, str] = {}
    for n in (2, 8, 32):
        us, r = _per_step(lambda: feedthrough_chain(n), 2000, 20000, 1e-3, repeat=2)
        assert set(r[f"f{n - 1}.String_output"]) == {"text"}
        fast_loop.ENABLED = False
        try:
            py_us, _ = _per_step(lambda: feedthrough_chain(n), 500, 2500, 1e-3, repeat=2)
        finally:
            fast_loop.ENABLED = True
        models = {f"f{k}": ft for k in range(n)}
        peer_us = {}
        # ecos has no Enumeration connection, OMSimulator no String one (its updateInputs: "internal error");
        # each chain carries the types its engine connects, and a value set at its head is read at its end
        for peer, run, peer_kinds, probe, value in (
                ("ecos", ecos_run, kinds[:-1], "String", "text"),
                ("OMSimulator", oms_run, tuple(k for k in kinds if k != "String"), "Int32", 7)):
            if peer in missing:
                notes[peer], peer_us[peer] = missing[peer], math.nan
                continue
            try:
                pus, got = _per_step_peer(run, models, chain_links(n, peer_kinds), 1e-3, (2000, 20000),
                                          f"f{n - 1}.{probe}_output", values={f"f0.{probe}_input": value})
                if got != value:
                    raise RuntimeError(f"{probe} at the chain's end is {got!r}, not {value!r}")
                peer_us[peer] = pus / n
            except Exception as exc:
                notes[peer], peer_us[peer] = _peer_failed(exc), math.nan
        e, o = peer_us["ecos"], peer_us["OMSimulator"]
        print(f"   {n:5d} {us / n:7.3f} us {py_us / n:9.3f} us {e:7.3f} us {us / n / e:6.2f} {o:9.3f} us "
              f"{us / n / o:6.2f}")
    for peer, note in notes.items():
        print(f"   {peer}: {note}")
    print("   (ecos has no Enumeration connection and OMSimulator no String connection: their chains pass the "
          "other five types; mbfmu records every output at every step, the peers record nothing)")


def python_units(work: Path) -> None:
    """The README blocks system (rigid_arm, native FMU, under P-D control through six
    blocks) and the arm under a continuous python-control LQG (a ControlUnit),
    per step: the FMU alone, the system compiled (blocks and controller in C,
    issue 35 §1, target at most 1.3x the FMU alone), and the Python loop."""
    import control

    import mbfmu
    from mbfmu.control import linearize
    from mbfmu.cosim import ControlUnit, FunctionUnit, Gain, Offset, Saturation, Sum
    from mbfmu.cosim.master import fast_loop
    from mbfmu.dynamics import gravity_torques
    from mbfmu.fmu import build_fmu
    arm_fmu = build_fmu("rigid_arm", work / "arm_native", runtime="native", platforms=("linux64",))
    ref = [0.5, 0.8, -0.4]
    plant = mbfmu.load_plant("rigid_arm")
    u0 = gravity_torques(plant.model, ref)

    def alone():
        return System([FmuUnit(arm_fmu, "arm", values={f"tau[{i}]": float(u0[i - 1]) for i in (1, 2, 3)})])

    def controller():  # the README's P-D controller: its six blocks, their links and the reference
        units = [Sum("err", "+-", n=3, inputs=("ref", "q"), unit="rad"),
                 Gain("kp", 400.0, n=3, unit_in="rad", unit_out="N.m"),
                 Gain("kd", 150.0, n=3, unit_in="rad/s", unit_out="N.m"),
                 Sum("pd", "+-", n=3, inputs=("p", "d"), unit="N.m"), Offset("u", u0, unit="N.m"),
                 Saturation("lim", -300.0, 300.0, n=3, unit="N.m")]
        links = [("err.y", "kp.u"), ("kp.y", "pd.p"), ("kd.y", "pd.d"), ("pd.y", "u.u"), ("u.y", "lim.u")]
        return units, links, {f"err.ref[{i}]": r for i, r in enumerate(ref, 1)}

    def blocks():  # the README's "Blocks and vector connections" system
        units, links, values = controller()
        return System([FmuUnit(arm_fmu, name="arm"), *units],
                      links + [("arm.q", "err.q"), ("arm.v", "kd.u"), ("lim.y", "arm.tau")], values=values)

    def blocks_callback():  # the same with joint 1's reference from a FunctionUnit (called back from C)
        s = blocks()
        s.add(FunctionUnit("src", lambda t, u: [ref[0] * (1.0 - np.exp(-3.0 * t))], outputs=["y"]))
        s.connect("src.y", "err.ref[1]")
        return s

    lin = linearize(plant, list(ref) + [0.0] * 3, list(u0))
    A, B = np.asarray(lin.A), np.asarray(lin.B)
    C = np.hstack([np.eye(3), np.zeros((3, 3))])
    K, _, _ = control.lqr(A, B, np.diag([400.0] * 3 + [10.0] * 3), np.eye(3) * 1e-2)
    L, _, _ = control.lqe(A, np.eye(6), C, np.eye(6), np.eye(3) * 1e-4)
    lqg_sys = control.ss(A - B @ K - L @ C, L, -K, np.zeros((3, 3)))

    def lqg():  # continuous: zero-order hold over the step
        units = [FmuUnit(arm_fmu, name="arm"), Offset("dev", -np.asarray(ref), unit="rad"),
                 ControlUnit("lqg", lqg_sys), Offset("u", u0, unit="N.m")]
        return System(units, [("arm.q", "dev.u"), ("dev.y", "lqg.u"), ("lqg.y", "u.u"), ("u.y", "arm.tau")])

    cases = (("FMU alone", alone), ("README blocks (6 blocks)", blocks),
             ("README blocks + FunctionUnit (callback)", blocks_callback), ("LQG ControlUnit (+2 Offsets)", lqg))
    print("\n7. Python units in the compiled loop (issue 35 §1), rigid_arm native FMU, per step, 1 ms steps,"
          " best of 2 interleaved rounds:")
    print(f"   {'system':40s} {'compiled':>10s} {'ratio':>6s} {'Python loop':>12s} {'ratio':>6s}")
    res: dict[str, float] = {}
    for _ in range(2):
        for name, make in cases:
            us, _ = _per_step(make, 2000, 20000, 1e-3, repeat=2)
            res[name] = min(res.get(name, math.inf), us)
    base = res["FMU alone"]
    for name, make in cases:
        fast_loop.ENABLED = False
        try:
            py_us, _ = _per_step(make, 500, 3000, 1e-3, repeat=2)
        finally:
            fast_loop.ENABLED = True
        print(f"   {name:40s} {res[name]:7.3f} us {res[name] / base:6.2f} {py_us:9.3f} us {py_us / base:6.2f}")
    controller_fmu_peers(arm_fmu, controller, u0, res, work)


def controller_fmu_peers(arm_fmu: Path, controller, u0, res: dict[str, float], work: Path) -> None:
    """The README blocks system with its controller exported as one C FMU
    (``export_fmu(..., runtime="native")``) next to the arm's native FMU, per step in mbfmu's
    compiled loop, ecos and OMSimulator, and the arm alone in each; ratios to mbfmu's FMU alone
    (``res``, section 7's per-step times [us])."""
    from mbfmu.control import export_fmu
    units, links, values = controller()
    ctrl_fmu = export_fmu(System(units, links, values=values), work / "ctrl_native", name="pd_blocks", step=1e-3,
                          runtime="native", platforms=("linux64",))
    two = {"arm": arm_fmu, "ctrl": ctrl_fmu}
    two_links = ([(f"arm.q[{i}]", f"ctrl.err.q[{i}]") for i in (1, 2, 3)]
                 + [(f"arm.v[{i}]", f"ctrl.kd.u[{i}]") for i in (1, 2, 3)]
                 + [(f"ctrl.lim.y[{i}]", f"arm.tau[{i}]") for i in (1, 2, 3)])
    ctrl_values = {f"ctrl.{k}": v for k, v in values.items()}
    alone_values = {f"arm.tau[{i}]": float(u0[i - 1]) for i in (1, 2, 3)}

    def two_fmus():
        return System([FmuUnit(arm_fmu, "arm"), FmuUnit(ctrl_fmu, "ctrl")], two_links, values=ctrl_values)
    missing = peers_available()
    rows: dict[str, tuple[float, Any]] = {}
    for _ in range(2):  # interleaved rounds, best kept
        us, r = _per_step(two_fmus, 2000, 20000, 1e-3, repeat=2)
        rows["mbfmu compiled, arm + controller C FMU"] = (min(rows.get("mbfmu compiled, arm + controller C FMU",
                                                                        (math.inf,))[0], us), float(r["arm.q[1]"][-1]))
        for peer, run in (("ecos", ecos_run), ("OMSimulator", oms_run)):
            for what, models, peer_links, peer_values in (("FMU alone", {"arm": arm_fmu}, [], alone_values),
                                                          ("arm + controller C FMU", two, two_links, ctrl_values)):
                key = f"{peer}, {what}"
                if peer in missing:
                    rows[key] = (math.nan, missing[peer])
                    continue
                try:
                    us, x = _per_step_peer(run, models, peer_links, 1e-3, (2000, 20000), "arm.q[1]", repeat=1,
                                           values=peer_values)
                    rows[key] = (min(rows.get(key, (math.inf,))[0], us), x)
                except Exception as exc:
                    rows[key] = (math.nan, _peer_failed(exc))
    base = res["FMU alone"]
    print("   the same P-D controller as one C FMU (export_fmu, runtime=\"native\") next to the arm's FMU, per step"
          " (peers: difference of 2000 and 20000 steps):")
    print(f"   {'engine, system':44s} {'us/step':>8s} {'/mbfmu alone':>12s}  q[1](20 s)")
    for key, (us, x) in rows.items():
        print(f"   {key:44s} {us:8.3f} {us / base:12.2f}  {x if isinstance(x, str) else f'{x:.12f}'}")
    print("   (mbfmu records every output at every step, ecos and OMSimulator record nothing; OMSimulator reports "
          "an algebraic loop of the two FMUs when it builds the system, 'Alg. loop (size 9/45)')")



def scheduled_units(work: Path) -> None:
    """A plant under a Scheduled Execution controller at 1 kHz (issues 35 and 36): the
    native rigid_arm (FMI 3.0 co-simulation), a joint PID exported natively as FMI 3.0
    Scheduled Execution, and a python-control observer (ControlUnit); per step, compiled
    and in the Python loop, against the same loop with the controller as an FMI 3.0
    co-simulation FMU (unclocked) and as the Python ControlUnit."""
    import control

    from mbfmu.control import export_fmu, kalman_filter, linearize
    from mbfmu.cosim import ControlUnit
    from mbfmu.cosim.master import fast_loop
    from mbfmu.fmu import build_fmu
    from mbfmu.plant.library import load_plant
    T = 1e-3
    q, v, tau = ([f"{s}{k}" for k in (1, 2, 3)] for s in ("q", "v", "tau"))
    A = np.array([[-0.5, 0.1, 0.0], [0.0, -0.5, 0.1], [0.0, 0.0, -0.5]])
    pid = control.c2d(control.ss(A, np.hstack([np.eye(3), np.zeros((3, 3))]), -5.0 * np.eye(3),
                                 np.hstack([-40.0 * np.eye(3), -8.0 * np.eye(3)]), inputs=q + v, outputs=tau),
                      T, method="tustin").copy(name="joint_pid")
    arm = control.c2d(linearize(load_plant("rigid_arm"))[[0, 1, 2], :], T)
    kf = kalman_filter(arm, 1e-3 * np.eye(6), 1e-6 * np.eye(3))
    obs = control.ss(kf.A, kf.B, kf.C, kf.D, T, inputs=tau + q, outputs=[f"xhat{k}" for k in range(1, 7)])
    plant = build_fmu("rigid_arm", work / "se_arm", runtime="native", platforms=("linux64",), fmi_version=3)
    se = export_fmu(pid, work / "se_ctrl", runtime="native", fmi=3, scheduled=True, platforms=("linux64",))
    cs = export_fmu(pid, work / "cs_ctrl", runtime="native", fmi=3, platforms=("linux64",))

    def loop(ctrl):
        def make():
            c = ctrl() if callable(ctrl) else FmuUnit(ctrl, "ctrl")
            cons = [(f"plant.q[{i}]", f"ctrl.q{i}") for i in (1, 2, 3)]
            cons += [(f"plant.v[{i}]", f"ctrl.v{i}") for i in (1, 2, 3)]
            cons += [(f"ctrl.tau{i}", f"plant.tau[{i}]") for i in (1, 2, 3)]
            cons += [(f"ctrl.tau{i}", f"obs.tau{i}") for i in (1, 2, 3)]
            cons += [(f"plant.q[{i}]", f"obs.q{i}") for i in (1, 2, 3)]
            return System([FmuUnit(plant, "plant"), c, ControlUnit("obs", obs)], cons)
        return make

    cases = (("SE controller FMU (FMI 3.0, 1 kHz clock)", loop(se)),
             ("CS controller FMU (FMI 3.0, unclocked)", loop(cs)),
             ("ControlUnit controller (python-control)", loop(lambda: ControlUnit("ctrl", pid))))
    print("\n8. rigid_arm (native FMI 3.0 CS) + joint PID + python-control observer, 1 ms steps, per step,"
          " best of 2 interleaved rounds:")
    print(f"   {'controller':42s} {'compiled':>10s} {'Python loop':>12s} {'ratio':>6s}")
    res: dict[str, float] = {}
    for _ in range(2):
        for name, make in cases:
            us, _ = _per_step(make, 2000, 20000, T, repeat=2)
            res[name] = min(res.get(name, math.inf), us)
    for name, make in cases:
        fast_loop.ENABLED = False
        try:
            py_us, _ = _per_step(make, 500, 3000, T, repeat=2)
        finally:
            fast_loop.ENABLED = True
        print(f"   {name:42s} {res[name]:7.3f} us {py_us:9.3f} us {py_us / res[name]:6.1f}")

# ----------------------------------------------------------------------------- 5. peers (issue 25)
ECOS_HOW = "not installed: pip install ecospy (needs Debian's libtbb12: apt-get install libtbb12)"
OMS_HOW = ("not installed: OMSimulator has no usable PyPI build; build it from source as in benchmarks/README.md "
           "and set MBFMU_OMSIMULATOR to its install prefix")
VDP_N, VDP_H = (20000, 200000), 1e-3


def _peer_missing(how: str, exc: BaseException | None = None) -> str:
    return how if exc is None else f"{how} ({type(exc).__name__}: {str(exc).strip()[:80]})"


_FMI_TYPES: dict[str, dict[str, str]] = {}


def fmi_type(models: dict[str, Path], ref: str) -> str:
    """The FMI type (``Real``, ``Integer``, ``Boolean``, ``String``, ``Enumeration``) of ``"unit.var"``,
    read from the unit's model description (cached per FMU file)."""
    from fmpy import read_model_description
    unit, var = ref.split(".", 1)
    path = str(models[unit])
    if path not in _FMI_TYPES:
        _FMI_TYPES[path] = {v.name: v.type for v in read_model_description(path).modelVariables}
    return {"Float64": "Real", "Int32": "Integer"}.get(_FMI_TYPES[path][var], _FMI_TYPES[path][var])


def ecos_run(models: dict[str, Path], links: list[tuple[str, str]], h: float, n: int, read: str,
             values: dict[str, Any] | None = None) -> tuple[float, Any]:
    """ecos (Vico's C++ engine, ``ecospy``): wall time [s] of ``n`` steps of ``h`` [s] after
    initialization, and the final value of ``read`` (``"unit.var"``, any type). ``links`` connect
    Real, Integer, Boolean and String variables (ecos has no Enumeration connection); ``values``
    (``"unit.var"`` -> value) are set before initialization. ecos connects outputs to inputs after
    each step (Jacobi) and accumulates time (t_end = 9.99999999999 s after 1e5 steps)."""
    from ecospy import EcosSimulation, EcosSimulationStructure

    def ecos_name(ref):
        return ref.replace(".", "::", 1)
    ss = EcosSimulationStructure()
    for name, path in models.items():
        ss.add_model(name, str(path))
    connect = {"Real": ss.make_real_connection, "Integer": ss.make_int_connection,
               "Boolean": ss.make_bool_connection, "String": ss.make_string_connection}
    for a, b in links:
        kind = fmi_type(models, a)
        if kind not in connect:
            raise ValueError(f"ecos has no {kind} connection ({a} -> {b})")
        connect[kind](ecos_name(a), ecos_name(b))
    sim = EcosSimulation(structure=ss, step_size=h)
    setter = {"Real": sim.set_real, "Integer": sim.set_integer, "Boolean": sim.set_bool, "String": sim.set_string}
    getter = {"Real": sim.get_real, "Integer": sim.get_integer, "Boolean": sim.get_bool, "String": sim.get_string}
    try:
        for ref, value in (values or {}).items():
            setter[fmi_type(models, ref)](ecos_name(ref), value)
        sim.init()
        t0 = time.perf_counter()
        sim.step(n)
        dt = time.perf_counter() - t0
        return dt, getter[fmi_type(models, read)](ecos_name(read))
    finally:
        sim.terminate()
        sim.free()


def _oms_prefix() -> Path | None:
    p = os.environ.get("MBFMU_OMSIMULATOR")
    return Path(p) if p and (Path(p) / "lib").is_dir() else None


def _oms_capi():
    """OMSimulator's ctypes C API (``OMSimulator.capi.Capi`` of the source build's Python package)."""
    prefix = _oms_prefix()
    if prefix is None:
        raise RuntimeError(OMS_HOW)
    if str(prefix / "lib") not in sys.path:
        sys.path.insert(0, str(prefix / "lib"))
    from OMSimulator.capi import Capi
    return Capi


def oms_run(models: dict[str, Path], links: list[tuple[str, str]], h: float, n: int, read: str,
            values: dict[str, Any] | None = None, me_rtol: float | None = None) -> tuple[float, Any]:
    """OMSimulator (source build, the ctypes C API of its Python package, ``OMSimulator.capi.Capi``):
    wall time [s] of ``n`` steps of ``h`` [s] after initialization (``oms_simulate``) and the final
    value of ``read`` (``"unit.var"``, any type); no result file. A weakly coupled (co-simulation)
    system, or with ``me_rtol`` a strongly coupled one: the units as Model Exchange FMUs under
    OMSimulator's CVODE at that relative tolerance, ``h`` its maximum step and communication
    interval (``setVariableStepSize``), timed as a whole run (model built, FMUs loaded, instantiated,
    initialized and simulated). ``values`` (``"unit.var"`` -> value) are set before instantiation
    (OMSimulator does not pass a String set there to the FMU). OMSimulator's weakly coupled
    systems connect Real, Integer, Enumeration and Boolean variables, not String ones."""
    Capi = _oms_capi()

    def ok(what, status):
        if status.value > 1:  # ok or warning
            raise RuntimeError(f"OMSimulator {what}: {status.name}")
    setter = {"Real": Capi.setReal, "Integer": Capi.setInteger, "Boolean": Capi.setBoolean,
              "Enumeration": Capi.setInteger, "String": lambda ref, v: Capi.setString(ref, v.encode())}
    getter = {"Real": Capi.getReal, "Integer": Capi.getInteger, "Boolean": Capi.getBoolean,
              "Enumeration": Capi.getInteger, "String": Capi.getString}
    Capi.setLoggingLevel(0)
    ok("setTempDirectory", Capi.setTempDirectory(tempfile.mkdtemp(prefix="mbfmu_oms_")))
    t_whole = time.perf_counter()
    ok("newModel", Capi.newModel("m"))
    try:
        ok("addSystem", Capi.addSystem("m.root", 1 if me_rtol is None else 2))  # oms_system_wc / oms_system_sc
        for name, path in models.items():
            ok(f"addSubModel {name}", Capi.addSubModel(f"m.root.{name}", str(path)))
        for a, b in links:
            ok(f"addConnection {a} -> {b}", Capi.addConnection(f"m.root.{a}", f"m.root.{b}"))
        ok("setResultFile", Capi.setResultFile("m", ""))
        if me_rtol is None:
            ok("setFixedStepSize", Capi.setFixedStepSize("m.root", h))
        else:
            ok("setTolerance", Capi.setTolerance("m.root", me_rtol))
            ok("setVariableStepSize", Capi.setVariableStepSize("m.root", min(h, 1e-6), 1e-12, h))
        ok("setStopTime", Capi.setStopTime("m", n * h))
        for ref, value in (values or {}).items():
            ok(f"set {ref}", setter[fmi_type(models, ref)](f"m.root.{ref}", value))
        ok("instantiate", Capi.instantiate("m"))
        ok("initialize", Capi.initialize("m"))
        t0 = time.perf_counter() if me_rtol is None else t_whole
        ok("simulate", Capi.simulate("m"))
        dt = time.perf_counter() - t0
        value, status = getter[fmi_type(models, read)](f"m.root.{read}")
        ok(f"get {read}", status)
        Capi.terminate("m")
        return dt, value
    finally:
        Capi.delete("m")


def _per_step_peer(run, models, links, h, ns, read, repeat=2, **kw):
    """Per-step wall time [us] of a peer from the difference of two run lengths, best of ``repeat``;
    ``kw`` go to ``run``."""
    best_t = {}
    value = math.nan
    for _ in range(repeat):
        for n in ns:
            dt, value = run(models, links, h, n, read, **kw)
            best_t[n] = min(best_t.get(n, math.inf), dt)
    return (best_t[ns[1]] - best_t[ns[0]]) / (ns[1] - ns[0]) * 1e6, value


def peers_available() -> dict[str, str]:
    """Peer name -> why it cannot run here (``not installed: <how to install it>``), for the peers
    missing on this machine."""
    missing: dict[str, str] = {}
    try:
        import ecospy  # noqa: F401
    except Exception as exc:  # OSError when libtbb12 is missing
        missing["ecos"] = _peer_missing(ECOS_HOW, exc)
    if _oms_prefix() is None:
        missing["OMSimulator"] = OMS_HOW
    return missing


def _peer_failed(exc: BaseException) -> str:
    return f"failed: {type(exc).__name__}: {str(exc).strip()[:100]}"


def _fmpy_me(path: Path, stop: float, h: float, rtol: float, read: str) -> tuple[float, float]:
    from fmpy import simulate_fmu
    t0 = time.perf_counter()
    r = simulate_fmu(str(path), fmi_type="ModelExchange", solver="CVode", relative_tolerance=rtol,
                     stop_time=stop, output_interval=h, output=[read])
    return time.perf_counter() - t0, float(r[read][-1])


def _mbfmu_me(units: list[FmuUnit], links, stop: float, h: float, read: str) -> tuple[float, float]:
    s = System(units, links)
    t0 = time.perf_counter()
    r = simulate(s, stop, h, progress=False)
    return time.perf_counter() - t0, float(r[read][-1])


def peers(work: Path) -> None:
    """Peers in the same run, with ratios: ecos and OMSimulator where installed, on VanDerPol
    (FMI 2 and FMI 3 co-simulation, per step) and the OpenModelica mass-spring pair; Model Exchange
    units against fmpy's own Model Exchange loop (CVODE, same relative tolerance)."""
    from mbfmu.cosim.master import fast_loop
    ref = ROOT / "tests" / "fixtures" / "reference-fmus"
    vdp = {v: ref / v / "VanDerPol.fmu" for v in ("fmi2", "fmi3")}
    print(f"\n5. peers (issue 25); load average {os.getloadavg()[0]:.2f} at the start")
    missing = peers_available()

    # VanDerPol co-simulation, per step
    rows: dict[str, tuple[float, float]] = {}
    for _ in range(2):  # two interleaved rounds, best kept
        for v in ("fmi2", "fmi3"):
            us, r = _per_step(lambda: System([FmuUnit(vdp[v], "v")]), *VDP_N, VDP_H, repeat=2)
            key = f"mbfmu compiled loop, {v.upper()[:3]} {v[3]}"
            rows[key] = (min(rows.get(key, (math.inf,))[0], us), float(r["v.x0"][-1]))
            for peer, run in (("ecos", ecos_run), ("OMSimulator", oms_run)):
                key = f"{peer}, {v.upper()[:3]} {v[3]}"
                if peer in missing:
                    rows[key] = (math.nan, math.nan)
                    missing[key] = missing[peer]
                    continue
                try:
                    us, x = _per_step_peer(run, {"v": vdp[v]}, [], VDP_H, VDP_N, "v.x0", repeat=1)
                    rows[key] = (min(rows.get(key, (math.inf,))[0], us), x)
                except Exception as exc:
                    missing[key] = f"failed: {type(exc).__name__}: {str(exc).strip()[:100]}"
                    rows[key] = (math.nan, math.nan)
    base = rows["mbfmu compiled loop, FMI 2"][0]
    print(f"   VanDerPol (Reference FMUs), co-simulation, {VDP_H:g} s steps, per step "
          f"(difference of {VDP_N[0]} and {VDP_N[1]} steps):")
    print(f"   {'engine':34s} {'us/step':>8s} {'/mbfmu FMI 2':>12s}  x0({VDP_N[1] * VDP_H:g} s)")
    for key, (us, x) in rows.items():
        note = f"  {missing[key]}" if key in missing else ""
        print(f"   {key:34s} {us:8.3f} {us / base:12.2f}  {x:.15f}{note}")

    # the OpenModelica pair, 100,000 steps
    from openmodelica_fmus import fetch
    fmus = fetch(work / "openmodelica")
    models = {"a": fmus["MassSpringSubSystem1"], "b": fmus["MassSpringSubSystem2"]}
    n = int(round(PAIR_STOP / PAIR_H))
    runs = {"mbfmu, compiled loop": lambda: pair_mbfmu(fmus),
            "bare hand-written fmpy loop": lambda: pair_bare(fmus)}
    for peer, run in (("ecos", ecos_run), ("OMSimulator", oms_run)):
        if peer not in missing:
            runs[peer] = (lambda run: lambda: run(models, PAIR_LINKS, PAIR_H, n, "a.x1"))(run)
    pt, px = best_of_rounds(runs, lambda exc: f"failed: {type(exc).__name__}: {str(exc).strip()[:100]}")
    base = pt["mbfmu, compiled loop"]
    print(f"   OpenModelica mass-spring pair, {PAIR_STOP:g} s at {PAIR_H:g} s = {n} steps (Jacobi):")
    print(f"   {'engine':34s} {'wall [s]':>8s} {'/mbfmu':>12s}  x1({PAIR_STOP:g} s)")
    for label in runs:
        x = px[label]
        print(f"   {label:34s} {pt[label]:8.3f} {pt[label] / base:12.2f}  {x if isinstance(x, str) else f'{x:.15f}'}")
    for peer in ("ecos", "OMSimulator"):
        if peer in missing:
            print(f"   {peer:34s} {missing[peer]}")
    print("   (mbfmu's time includes instantiation, initialization and recording every step; the bare loop's, "
          "ecos' and OMSimulator's only the steps)")

    # Model Exchange: mbfmu's ME units against fmpy's ME loop (CVODE, rtol 1e-6)
    me_stop, me_h, rtol = 20.0, 1e-3, 1e-6
    cases = [(f"VanDerPol {v.upper()[:3]} {v[3]}", vdp[v], "x0") for v in ("fmi2", "fmi3")]
    cases.append(("OpenModelica MassSpringSystem (whole)", fmus["MassSpringSystem"], "x1"))
    print(f"   Model Exchange, {me_stop:g} s, communication / output every {me_h:g} s, CVODE rtol {rtol:g}:")
    print(f"   {'FMU':38s} {'mbfmu [s]':>9s} {'fmpy [s]':>9s} {'ratio':>6s}  final-value error (mbfmu, fmpy) "
          "against fmpy at rtol 1e-10")
    for label, path, var in cases:
        tm = tf = math.inf
        for _ in range(2):
            dt, xm = _mbfmu_me([FmuUnit(path, "u", interface="me", rtol=rtol)], [], me_stop, me_h, f"u.{var}")
            tm = min(tm, dt)
            dt, xf = _fmpy_me(path, me_stop, me_h, rtol, var)
            tf = min(tf, dt)
        x_ref = _fmpy_me(path, me_stop, me_h, 1e-10, var)[1]
        print(f"   {label:38s} {tm:9.3f} {tf:9.3f} {tm / tf:6.2f}  {abs(xm - x_ref):.2e}, {abs(xf - x_ref):.2e}")
    print("   (both keep one CVODE integration across communication points and interpolate there; "
          "`benchmarks/cosim.py me` sweeps the tolerance)")
    tm = math.inf
    for _ in range(1):  # slow: CVODE stops at every communication point and restarts where an input changed
        dt, xm = _mbfmu_me([FmuUnit(models["a"], "a", interface="me", rtol=rtol),
                            FmuUnit(models["b"], "b", interface="me", rtol=rtol)], PAIR_LINKS, me_stop, me_h, "a.x1")
        tm = min(tm, dt)
    print(f"   {'OpenModelica pair as two ME units':38s} {tm:9.3f} {'-':>9s} {'-':>6s}  x1 {xm:.10f} (Jacobi at "
          f"{me_h:g} s, CVODE restarted where an input changed; fmpy has no ME master: compare the whole system's line, "
          f"x1 {x_ref:.10f})")
    fast_loop.ENABLED = True


def _me_native(work: Path, name: str) -> Path:
    from mbfmu.fmu.builder import build_fmu
    return build_fmu(name, work / f"me_{name}", runtime="native", platforms=("linux64",))


def _equal_error_ratio(t_m: float, e_m: float, curve: list[tuple[float, float]]) -> float:
    """mbfmu's time over fmpy's at mbfmu's final-value error, fmpy's (error, time) curve
    interpolated in log-log; NaN outside fmpy's range."""
    pts = sorted((math.log(max(e, 1e-300)), math.log(t)) for e, t in curve)
    le = math.log(max(e_m, 1e-300))
    for (e0, t0), (e1, t1) in zip(pts, pts[1:]):
        if e0 <= le <= e1:
            lt = t0 + (t1 - t0) * (le - e0) / (e1 - e0) if e1 > e0 else t0
            return t_m / math.exp(lt)
    return math.nan


def _ratio_at_error(t_m: float, e_m: float, curve: list[tuple[float, float]]) -> tuple[float, str]:
    """mbfmu's time ``t_m`` [s] over a peer's at mbfmu's final-value error ``e_m``: interpolated on the
    peer's (error, time) ``curve`` (:func:`_equal_error_ratio`) where ``e_m`` is inside it, else over the
    cheapest peer run at least as accurate (mark ``"*"``), else (mbfmu more accurate than every peer
    run) over the most accurate peer run (mark ``"^"``); NaN without peer runs."""
    ratio = _equal_error_ratio(t_m, e_m, curve)
    if ratio == ratio or not curve:
        return ratio, " "
    at_least = [t for e, t in curve if e <= e_m]
    if at_least:
        return t_m / min(at_least), "*"
    return t_m / min(curve)[1], "^"


def me_sweep(work: Path) -> None:
    """Model Exchange units against fmpy's ``simulate_fmu`` (ME, CVODE) in the same run, on a
    tolerance sweep: cost at equal final-value error (errors against fmpy at rtol 1e-12); and
    crash_occupant as ME against its own co-simulation."""
    from fmpy import simulate_fmu
    ref = ROOT / "tests" / "fixtures" / "reference-fmus"
    cases = [(f"VanDerPol {v.upper()[:3]} {v[3]}", ref / v / "VanDerPol.fmu", "x0", 20.0, 1e-3) for v in ("fmi2", "fmi3")]
    for v in ("fmi2", "fmi3"):
        cases += [(f"Dahlquist {v.upper()[:3]} {v[3]}", ref / v / "Dahlquist.fmu", "x", 10.0, 1e-3),
                  (f"BouncingBall {v.upper()[:3]} {v[3]}", ref / v / "BouncingBall.fmu", "h", 1.0, 1e-3)]
    from openmodelica_fmus import fetch
    cases += [("OpenModelica MassSpring", fetch(work / "openmodelica")["MassSpringSystem"], "x1", 10.0, 1e-3),
              ("native rigid_arm", _me_native(work, "rigid_arm"), "q[2]", 2.0, 1e-3),
              ("native satellite", _me_native(work, "satellite"), "hinge_angle[1]", 20.0, 0.05)]
    only = os.environ.get("MBFMU_BENCH_ME_ONLY")  # a comma-separated subset of the labels, to re-measure a few
    if only:
        cases = [c for c in cases if any(o.strip() in c[0] for o in only.split(","))]
    rtols = (1e-4, 1e-6, 1e-8, 1e-10)
    print(f"\nModel Exchange at equal final-value error (load average {os.getloadavg()[0]:.2f} at the start); "
          "times best of 3 [s], error against fmpy at rtol 1e-12; ratio = mbfmu / fmpy interpolated at mbfmu's error")
    print(f"   {'FMU':22s} {'rtol':>6s} {'mbfmu [s]':>9s} {'err':>8s} {'fmpy [s]':>9s} {'err':>8s} {'ratio@err':>9s}")
    for label, path, var, stop, h in cases:
        x_ref = float(simulate_fmu(str(path), fmi_type="ModelExchange", solver="CVode", relative_tolerance=1e-12,
                                   stop_time=stop, output_interval=h, output=[var])[var][-1])
        rows, curve = [], []
        for rtol in rtols:
            tm = tf = math.inf
            for _ in range(3):  # interleaved, best kept: the machine is shared
                unit = FmuUnit(path, "u", interface="me", rtol=rtol)
                t0 = time.perf_counter()
                xm = float(simulate(System([unit]), stop, h, progress=False)[f"u.{var}"][-1])
                tm = min(tm, time.perf_counter() - t0)
                dt, xf = _fmpy_me(path, stop, h, rtol, var)
                tf = min(tf, dt)
            rows.append((rtol, tm, abs(xm - x_ref), tf, abs(xf - x_ref)))
            curve.append((abs(xf - x_ref), tf))
        for rtol, tm, em, tf, ef in rows:
            print(f"   {label:22s} {rtol:6.0e} {tm:9.4f} {em:8.1e} {tf:9.4f} {ef:8.1e} "
                  f"{_equal_error_ratio(tm, em, curve):9.2f}")
    if only and "crash" not in only:
        return
    crash = _me_native(work, "crash_occupant")
    tc = tme = math.inf
    for _ in range(2):
        t0 = time.perf_counter()
        simulate(System([FmuUnit(crash, "c", interface="cs")]), 0.25, 1e-3, progress=False)
        tc = min(tc, time.perf_counter() - t0)
        unit = FmuUnit(crash, "c", interface="me", rtol=1e-6)
        t0 = time.perf_counter()
        simulate(System([unit]), 0.25, 1e-3, progress=False)
        tme = min(tme, time.perf_counter() - t0)
    print(f"   crash_occupant 0.25 s at 1 ms: co-simulation {tc:.3f} s, ME (rtol 1e-6) {tme:.3f} s, ratio "
          f"{tme / tc:.2f}; {len(unit.events)} events, {unit.restarts} solver restarts")


def me_peers(work: Path) -> None:
    """Model Exchange against OMSimulator (issue 35 §3, target at most 2x its time on FMI 2 FMUs):
    mbfmu's ME unit, fmpy's ``simulate_fmu`` (ME, CVODE) and OMSimulator's strongly coupled system
    (its CVODE, the communication step its maximum step) on a tolerance sweep, in the same run; cost
    at equal final-value error (errors against fmpy at rtol 1e-12)."""
    from fmpy import simulate_fmu
    from openmodelica_fmus import fetch
    missing = peers_available()
    ref = ROOT / "tests" / "fixtures" / "reference-fmus" / "fmi2"
    cases = [("VanDerPol FMI 2", ref / "VanDerPol.fmu", "x0", 20.0, 1e-3),
             ("Dahlquist FMI 2", ref / "Dahlquist.fmu", "x", 10.0, 1e-3),
             ("BouncingBall FMI 2", ref / "BouncingBall.fmu", "h", 1.0, 1e-3),
             ("OpenModelica MassSpringSystem", fetch(work / "openmodelica")["MassSpringSystem"], "x1", 10.0, 1e-3),
             ("native satellite", _me_native(work, "satellite"), "hinge_angle[1]", 20.0, 0.05)]
    rtols = (1e-4, 1e-6, 1e-8)
    print(f"\nModel Exchange against OMSimulator (load average {os.getloadavg()[0]:.2f} at the start); times best "
          "of 2 [s], error against fmpy at rtol 1e-12; ratios = mbfmu / peer interpolated at mbfmu's error")
    if "OMSimulator" in missing:
        print(f"   OMSimulator: {missing['OMSimulator']}")
    print(f"   {'FMU':30s} {'rtol':>6s} {'mbfmu [s]':>9s} {'err':>8s} {'fmpy [s]':>9s} {'err':>8s} {'OMS [s]':>9s} "
          f"{'err':>8s} {'/fmpy':>6s} {'/OMS':>6s}")
    for label, path, var, stop, h in cases:
        x_ref = float(simulate_fmu(str(path), fmi_type="ModelExchange", solver="CVode", relative_tolerance=1e-12,
                                   stop_time=stop, output_interval=h, output=[var])[var][-1])
        n = int(round(stop / h))
        rows, curve_f, curve_o = [], [], []
        note = ""
        for rtol in rtols:
            tm = tf = to = math.inf
            xo = math.nan
            for _ in range(2):
                dt, xm = _mbfmu_me([FmuUnit(path, "u", interface="me", rtol=rtol)], [], stop, h, f"u.{var}")
                tm = min(tm, dt)
                dt, xf = _fmpy_me(path, stop, h, rtol, var)
                tf = min(tf, dt)
                if "OMSimulator" not in missing and not note:
                    try:
                        dt, xo = oms_run({"u": path}, [], h, n, f"u.{var}", me_rtol=rtol)
                        to = min(to, dt)
                    except Exception as exc:
                        note, to = _peer_failed(exc), math.nan
            eo = abs(xo - x_ref) if to == to and not note else math.nan
            rows.append((rtol, tm, abs(xm - x_ref), tf, abs(xf - x_ref), to, eo))
            curve_f.append((abs(xf - x_ref), tf))
            if eo == eo and to < math.inf:
                curve_o.append((eo, to))
        for rtol, tm, em, tf, ef, to, eo in rows:
            to = math.nan if to == math.inf else to
            (rf, mf), (ro, mo) = _ratio_at_error(tm, em, curve_f), _ratio_at_error(tm, em, curve_o)
            print(f"   {label:30s} {rtol:6.0e} {tm:9.4f} {em:8.1e} {tf:9.4f} {ef:8.1e} {to:9.4f} {eo:8.1e} "
                  f"{rf:6.2f}{mf}{ro:6.2f}{mo}")
        if note:
            print(f"   {label}: OMSimulator {note}")
    print("   (whole runs: FMU loading, instantiation and initialization included; mbfmu and fmpy record every "
          "communication point, OMSimulator nothing. OMSimulator's CVODE never steps past a communication point "
          "(its maximum step). *: no peer run at mbfmu's error in the sweep, ratio to the cheapest one at least "
          "as accurate; ^: mbfmu more accurate than every peer run, ratio to the most accurate one)")


def _machine() -> str:
    return f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="mbfmu_bench_"))
    if sys.argv[1:] == ["pair"]:
        mass_spring_pair(work)
        return
    with_load = {"peers": peers, "me": me_sweep, "me-peers": me_peers, "subset": subset_recording,
                 "units": python_units, "compiled": compiled_loop, "clocked": scheduled_units}
    if len(sys.argv) == 2 and sys.argv[1] in with_load:
        print(f"{_machine()}, load average {os.getloadavg()[0]:.1f}")
        with_load[sys.argv[1]](work)
        return
    gain = build_c_fmu("gain", work)
    plant = build_python_fmu("pendulum", work / "p")
    ctrl = build_python_fmu("pd", work / "c")
    print(_machine())

    o = overhead(gain)
    print(f"\n1. per macro step per unit ({o['units']} trivial C FMUs in a chain, {o['steps']} steps):")
    print(f"   mbfmu master   {o['master_us']:.2f} us")
    print(f"   bare fmpy loop {o['bare_us']:.2f} us   ratio {o['master_us'] / o['bare_us']:.2f}")

    t_decl = t_nf = t_bare = math.inf
    for _ in range(REPEAT):  # interleaved, best of REPEAT: the machine is shared
        t_decl = min(t_decl, closed_loop_mbfmu(plant, ctrl, True)[0])
        dt, r_nf = closed_loop_mbfmu(plant, ctrl, False)
        t_nf = min(t_nf, dt)
        dt, rows = closed_loop_bare(plant, ctrl)
        t_bare = min(t_bare, dt)
    assert np.array_equal(r_nf["time"][1:], rows[:, 0]), "mbfmu and the bare loop step at different times"
    assert np.array_equal(r_nf["plant.theta"][1:], rows[:, 1]), "mbfmu and the bare loop disagree"
    ssp = write_ssp(System([FmuUnit(plant, "plant"), FmuUnit(ctrl, "ctrl", values={"ref": 0.2})],
                           [("plant.theta", "ctrl.theta"), ("plant.omega", "ctrl.omega"), ("ctrl.tau", "plant.tau")]),
                    work / "loop.ssp", stop_time=STOP, step=H)
    try:
        lc = [closed_loop_libcosim(ssp) for _ in range(REPEAT)]
        t_lc = min(x[0] for x in lc)
        lc_theta = lc[0][1][1]
    except Exception as exc:  # pragma: no cover - libcosimpy optional
        t_lc, lc_theta = math.nan, f"failed: {exc}"
    mono = [closed_loop_monolithic() for _ in range(REPEAT)]
    t_mono = min(x[0] for x in mono)
    print(f"\n2. closed loop pendulum + PD (pythonfmu FMUs), {STOP:g} s at {H:g} s = {N} steps:")
    print(f"   bare fmpy loop                         {t_bare:.3f} s   1.00")
    print(f"   mbfmu Jacobi (no feedthrough declared) {t_nf:.3f} s   {t_nf / t_bare:.2f}")
    print(f"   mbfmu Jacobi (FMI default: loop check) {t_decl:.3f} s   {t_decl / t_bare:.2f}")
    print(f"   libcosim (libcosimpy, from mbfmu SSP)  {t_lc:.3f} s   {t_lc / t_bare:.2f}")
    print(f"   monolithic plain Python (no FMUs)      {t_mono:.3f} s   {t_mono / t_bare:.2f}")
    print(f"   final theta: mbfmu {r_nf['plant.theta'][-1]:.15f}, bare {rows[-1, 1]:.15f}, "
          f"libcosim {lc_theta if isinstance(lc_theta, str) else f'{lc_theta:.15f}'}, monolithic {mono[0][1][-1, 0]:.15f}")
    print(f"   mbfmu summary: {r_nf.summary}")
    print("   (mbfmu times include instantiating and initializing the FMUs; the bare loop's and libcosim's do not)")
    mass_spring_pair(work)
    compiled_loop(work)
    peers(work)
    subset_recording(work)
    python_units(work)
    scheduled_units(work)
    me_peers(work)



# ----------------------------------------------------------------------------- 3. isolated units
def isolation_cost(gain_fmu, short=2000, long=12000):
    """Extra wall time per macro step of one unit run in a worker process (issue 15):
    two C gain FMUs in a loop, one of them isolated, against the same system in-process.
    The difference of a long and a short run removes the worker's start-up."""
    def run(steps, isolate):
        s = System([FmuUnit(gain_fmu, "g1", values={"k": 0.5}), FmuUnit(gain_fmu, "g2", values={"k": 0.5},
                                                                          feedthrough={"y": []})],
                   [("g1.y", "g2.u"), ("g2.y", "g1.u")])
        t0 = time.perf_counter()
        r = simulate(s, steps * 1e-3, 1e-3, progress=False, isolate=["g2"] if isolate else False)
        return time.perf_counter() - t0, r
    out = {}
    for isolate in (False, True):
        ts = min(run(short, isolate)[0] for _ in range(3))
        tl, r = min((run(long, isolate) for _ in range(3)), key=lambda x: x[0])
        out[isolate] = ((tl - ts) / (long - short) * 1e6, ts - short * (tl - ts) / (long - short), r)
    assert np.array_equal(out[True][2].data, out[False][2].data), "isolated and in-process runs disagree"
    return {"in_process_us": out[False][0], "isolated_us": out[True][0], "startup_s": out[True][1] - out[False][1]}


def isolation_section(gain_fmu) -> None:
    o = isolation_cost(gain_fmu)
    print("\n3. one unit of two run isolated (worker process, socket), per macro step:")
    print(f"   both in-process   {o['in_process_us']:.1f} us")
    print(f"   one isolated      {o['isolated_us']:.1f} us   ratio {o['isolated_us'] / o['in_process_us']:.2f}, "
          f"extra {o['isolated_us'] - o['in_process_us']:.1f} us per step; worker start-up {o['startup_s']:.2f} s")


if __name__ == "__main__":
    main()
    if not sys.argv[1:]:
        isolation_section(build_c_fmu("gain", Path(tempfile.mkdtemp(prefix="mbfmu_bench_"))))
