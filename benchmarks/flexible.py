"""Benchmark of the flexible-beam methods (issue 4).

1. Cost of one right-hand-side evaluation and accuracy of the first three
   cantilever frequencies against Euler-Bernoulli, versus the number of
   segments / modes (a hub-driven cantilever: revolute hub + beam); for
   modes, the compiled flexible ABA next to the dense projection.
2. Cost per simulated second of a torque-driven hub-beam (1 % damping) for
   each integrator at a given accuracy: the end state error against a
   tight reference, the number of right-hand-side evaluations and the wall
   time.
3. Fixed-step RK4 with the flexible ABA: the compiled loop
   (``FlexibleSystem.step_rk4``) against the Python RK4 around
   ``FlexibleSystem.rhs`` (``simulate(method="rk4")``), same run, same
   steps: wall time per simulated second and the end-state difference.
4. KRB spin-up at 10 rad/s (Kane, Ryan & Banerjee 1987): cost per
   simulated second and peak error of the beam of chained sub-beams
   (``add_beam(..., subbeams=n)``, compiled error-controlled integrator with
   the hub driven) next to Exudyn's ANCF cable (``ObjectANCFCable2D``, 8
   elements, generalized-alpha) in the same run, against the segment chain
   Richardson-extrapolated from 20 and 40 segments (``--spinup`` runs only
   this section; needs ``pip install .[bench]`` for Exudyn).

    python benchmarks/flexible.py [--quick] [--spinup]

Prints Markdown tables (paste into benchmarks/RESULTS.md).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mbfmu.dynamics import _kernels, flexible
from mbfmu.dynamics.flexible import BeamProperties, natural_frequencies, simulate

BEAM = BeamProperties.rectangular(1.0, 0.01, 0.05, E=70e9, density=2700.0, damping_ratio=0.01)
EXACT = np.array([BEAM.clamped_frequency(i) for i in (1, 2, 3)])


def hub_beam(method: str, n: int):
    return flexible.hub_beam(BEAM, method, n)


def time_call(f, min_time=0.1, batches=5) -> float:
    """Seconds per call of ``f``: the best of ``batches`` batches of at
    least ``min_time`` s each (the machine is shared)."""
    best = float("inf")
    for _ in range(batches):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < min_time:
            f()
            n += 1
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def table_resolution(sizes_modes, sizes_segments):
    """Frequencies against Euler-Bernoulli and the cost of one right-hand
    side: the compiled flexible ABA (``FlexibleSystem.rhs``, default), the
    dense projection (``method="projection"``) and the segment chain's C
    ``rhs``."""
    rows = ["| method | n | nv | bodies | rhs cost (us) | projection (us) | projection / ABA "
            "| error f1 | error f2 | error f3 |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for method, sizes in (("modes", sizes_modes), ("segments", sizes_segments)):
        for n in sizes:
            s = hub_beam(method, n)
            w = natural_frequencies(s, fixed=[0], n=3)
            err = np.full(3, np.nan)
            err[:len(w)] = np.abs(w / EXACT[:len(w)] - 1)
            x = np.zeros(s.nq + s.nv)
            x[1:s.nq] = 1e-3
            tau = np.zeros(s.nv)
            tau[0] = 1.0
            if method == "segments":
                h = s.model._h
                q, v = x[:s.nq], x[s.nq:]
                cost = time_call(lambda: _kernels.rhs(h, q, v, tau))
                proj = "-"
            else:
                cost = time_call(lambda: s.rhs(0.0, x, tau))
                c_proj = time_call(lambda: s.rhs(0.0, x, tau, method="projection"))
                proj = f"{c_proj * 1e6:.1f} | {c_proj / cost:.1f}"
            e = " | ".join("-" if np.isnan(v) else f"{v:.1e}" for v in err)
            if method == "segments":
                proj += " | -"
            rows.append(f"| {method} | {n} | {s.nv} | {s.model.nbodies} | {cost * 1e6:.1f} | {proj} | {e} |")
    return "\n".join(rows)


def table_integrators(t_final: float, cases):
    rows = ["| model | integrator | setting | end error (rad) | rhs evals | wall per sim. s (s) |",
            "|---|---|---|---|---|---|"]
    for method, n in cases:
        s = hub_beam(method, n)
        x0 = np.zeros(s.nq + s.nv)
        tau = np.zeros(s.nv)
        tau[0] = 1.0
        ref = simulate(s, x0, t_final, tau=tau, method="DOP853", rtol=1e-11, atol=1e-13, t_eval=[t_final])
        ref_q = ref.x[-1, :s.nq]
        runs = [("rk4", dict(dt=d), f"h = {d:g} s") for d in (2e-4, 5e-5, 2e-5, 1e-5, 5e-6)]
        runs += [(m, dict(rtol=r, atol=r * 1e-3), f"rtol = {r:g}") for m in ("DOP853",) for r in (1e-4, 1e-6)]
        runs += [(m, dict(rtol=r, atol=r * 1e-3, jacobian=j), f"rtol = {r:g}, J {j}")
                 for m in ("Radau", "BDF") for r in (1e-4, 1e-6) for j in ("structural", "fd")]
        for integ, kw, label in runs:
            t0 = time.perf_counter()
            try:
                tr = simulate(s, x0, t_final, tau=tau, method=integ, t_eval=[t_final] if integ != "rk4" else None,
                              **kw)
                err = float(np.max(np.abs(tr.x[-1, :s.nq] - ref_q)))
                nfev = tr.nfev
            except (ValueError, RuntimeError):  # non-finite state: an unstable fixed step
                err, nfev = float("inf"), 0
                label += " (unstable)"
            wall = (time.perf_counter() - t0) / t_final
            rows.append(f"| {method} {n} | {integ} | {label} | {err:.1e} | {nfev} | {wall:.2f} |")
    return "\n".join(rows)


def rk4_step(system) -> float:
    """Fixed RK4 step inside the stability limit, s: ``min(1 ms, 2 / rho)``
    with ``rho`` the spectral radius at rest (the flexible_arm plant's rule)."""
    J = flexible.StructuralJacobian(system)(0.0, np.zeros(system.nq + system.nv))
    return min(1e-3, 2.0 / float(np.abs(np.linalg.eigvals(J)).max()))


def table_compiled_rk4(t_final: float, sizes, repeat: int = 3):
    """Wall time per simulated second of the same fixed RK4 steps run by
    the compiled loop and by the Python loop around ``rhs`` (best of
    ``repeat``), for hub-beams of ``sizes`` modes and the flexible_arm
    plant's system; and the largest end-state difference between them."""
    import mbfmu
    cases = [(f"hub-beam, {n} mode{'s' if n > 1 else ''}", hub_beam("modes", n), 0) for n in sizes]
    arm = mbfmu.load_plant("flexible_arm")
    cases.append(("flexible_arm (2 links x 3 modes)", arm.system, 1))
    rows = ["| system | nv | step h (s) | Python RK4 around rhs (s per sim. s) "
            "| compiled step_rk4 (s per sim. s) | speed-up | max end-state difference |",
            "|---|---|---|---|---|---|---|"]
    for label, s, i_tau in cases:
        h = rk4_step(s)
        n = int(np.ceil(t_final / h - 1e-9))
        h = t_final / n
        x0 = np.zeros(s.nq + s.nv)
        x0[:s.nq] = s.neutral()
        tau = np.zeros(s.nv)
        tau[i_tau] = 1.0
        best_py = best_c = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            x_py = simulate(s, x0, t_final, tau=tau, method="rk4", dt=h).x[-1]
            best_py = min(best_py, time.perf_counter() - t0)
            t0 = time.perf_counter()
            q, v = s.step_rk4(x0[:s.nq], x0[s.nq:], tau, h, n)
            best_c = min(best_c, time.perf_counter() - t0)
        diff = float(np.max(np.abs(np.r_[q, v] - x_py)))
        rows.append(f"| {label} | {s.nv} | {h:.3g} | {best_py / t_final:.3f} | {best_c / t_final:.4f} "
                    f"| {best_py / best_c:.1f} | {diff:.1e} |")
    return "\n".join(rows)


SPINUP_OMEGA, SPINUP_END = 10.0, 6.7  # rad/s; s, just past the peak (6.17 s)


def exudyn_spinup(omega: float, t_final: float, n_elements: int = 8, h: float = 0.01):
    """KRB spin-up with Exudyn's ANCF cable: ``n_elements`` ObjectANCFCable2D
    elements, the root clamped to ground by a GenericJoint (x, y and the
    rotation about z) whose rotation offset follows the spin-up angle
    (offsetUserFunction and its rate offsetUserFunction_t); generalized-alpha
    with ``h`` s steps (spectral radius 0.8, modified Newton, relative
    tolerance 1e-6, dense solver, one thread). Returns ``(t, tip deflection
    in the hub frame, wall time of SolveDynamic)``."""
    import exudyn as exu
    from exudyn.itemInterface import (Cable2D, GenericJoint, MarkerBodyRigid, ObjectGround, Point2DS1,
                                      SensorNode)
    from mbfmu.dynamics.flexible.spinup import spinup_beam, spinup_profile

    beam = spinup_beam("krb")
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround())
    le = beam.length / n_elements
    nodes = [mbs.AddNode(Point2DS1(referenceCoordinates=[i * le, 0, 1, 0])) for i in range(n_elements + 1)]
    cables = [mbs.AddObject(Cable2D(length=le, massPerLength=beam.mass_per_length, bendingStiffness=beam.EIz,
                                    axialStiffness=beam.EA, nodeNumbers=[nodes[i], nodes[i + 1]]))
              for i in range(n_elements)]
    m_ground = mbs.AddMarker(MarkerBodyRigid(bodyNumber=ground, localPosition=[0, 0, 0]))
    m_root = mbs.AddMarker(MarkerBodyRigid(bodyNumber=cables[0], localPosition=[0, 0, 0]))
    mbs.AddObject(GenericJoint(
        markerNumbers=[m_ground, m_root], constrainedAxes=[1, 1, 0, 0, 0, 1],
        offsetUserFunction=lambda mbs, t, item, par: [0, 0, 0, 0, 0, spinup_profile(t, omega)[0]],
        offsetUserFunction_t=lambda mbs, t, item, par: [0, 0, 0, 0, 0, spinup_profile(t, omega)[1]]))
    sensor = mbs.AddSensor(SensorNode(nodeNumber=nodes[-1], outputVariableType=exu.OutputVariableType.Position,
                                      storeInternal=True, writeToFile=False))
    mbs.Assemble()
    st = exu.SimulationSettings()
    st.timeIntegration.endTime = t_final
    st.timeIntegration.numberOfSteps = int(round(t_final / h))
    st.timeIntegration.generalizedAlpha.spectralRadius = 0.8
    st.timeIntegration.newton.useModifiedNewton = True
    st.timeIntegration.newton.relativeTolerance = 1e-6
    st.timeIntegration.newton.absoluteTolerance = 1e-8
    st.timeIntegration.verboseMode = 0
    st.linearSolver.solverType = exu.LinearSolverType.EigenDense
    st.parallel.numberOfThreads = 1
    st.solution.file.write = False
    st.solution.sensors.writePeriod = 0.01
    t0 = time.perf_counter()
    mbs.SolveDynamic(st)
    wall = time.perf_counter() - t0
    data = mbs.GetSensorStoredData(sensor)
    t, p = data[:, 0], data[:, 1:3]
    th = np.array([spinup_profile(tt, omega)[0] for tt in t])
    return t, -np.sin(th) * p[:, 0] + np.cos(th) * p[:, 1], wall


def _peak(t, d) -> float:
    """Peak tip deflection of a history, m."""
    from mbfmu.dynamics.flexible.spinup import peak_deflection
    return peak_deflection(t, d)[1]


def ours_spinup(method: str, n: int, modes: int, integrator: str, rtol: float, atol: float):
    """One spin-up run of ours: ``(peak (m), wall time of the integration (s), rhs evaluations)``;
    the tip outputs are evaluated after the timed run."""
    from mbfmu.dynamics.flexible.driven import simulate_driven, stable_step
    from mbfmu.dynamics.flexible.spinup import spinup_profile, spinup_system

    system, tip = spinup_system(method, n, subbeam_modes=modes)
    h_max = stable_step(system, fixed=(0,))  # what run_spinup uses by default (not timed)
    times = np.arange(0.0, SPINUP_END + 1e-9, 0.01)
    x0 = np.zeros(system.nq + system.nv)
    t0 = time.perf_counter()
    tr = simulate_driven(system, x0, times, lambda t: ((0,), (spinup_profile(t, SPINUP_OMEGA)[2],)),
                         rtol=rtol, atol=atol, method=integrator, max_step=h_max)
    wall = time.perf_counter() - t0
    return _peak(times, np.array([tip(x[:system.nq]) for x in tr.x])), wall, tr.nfev


def table_spinup_cost(repeat: int = 3, reference: float | None = None):
    """Cost per simulated second (best of ``repeat``) and peak error of the
    KRB 10 rad/s spin-up: ours (sub-beams, one modal beam) and Exudyn's ANCF
    cable with 8 elements, same run; ratio to Exudyn ANCF-8."""
    from mbfmu.dynamics.flexible.spinup import run_spinup

    if reference is None:  # segment chain, 20 and 40 segments, Richardson-extrapolated
        kw = dict(t_final=SPINUP_END, dt_out=0.01, rtol=1e-7, atol=1e-9, method="segments", integrator="DP54")
        t, d20 = run_spinup(SPINUP_OMEGA, n=20, **kw)
        _, d40 = run_spinup(SPINUP_OMEGA, n=40, **kw)
        reference = _peak(t, d40 + (d40 - d20) / 3.0)
    rows = []
    for label, args in (("sub-beams 3 x 2 modes", ("subbeams", 3, 2)), ("sub-beams 4 x 2 modes", ("subbeams", 4, 2)),
                        ("one modal beam, 4 modes", ("modes", 4, 2))):
        for integ in ("BS32", "DP54"):
            runs = [ours_spinup(*args, integ, 1e-5, 1e-7) for _ in range(repeat)]
            rows.append((f"mbfmu {label}", f"{integ}, rtol 1e-5", runs[0][0], min(r[1] for r in runs),
                         f"{runs[0][2]} rhs"))
    try:
        import exudyn
    except ImportError:
        exudyn = None
    exu_cost = None
    if exudyn is not None:
        for h in (0.01, 0.005):
            runs = [exudyn_spinup(SPINUP_OMEGA, SPINUP_END, 8, h) for _ in range(repeat)]
            wall = min(r[2] for r in runs)
            exu_cost = exu_cost or wall
            rows.append((f"Exudyn {exudyn.__version__} ANCF cable, 8 elements", f"gen.-alpha, h = {h:g} s",
                         _peak(runs[0][0], runs[0][1]), wall, f"{int(round(SPINUP_END / h))} steps"))
    out = [f"reference peak (segments 20/40, extrapolated): {reference:.5f} m; runs to t = {SPINUP_END} s",
           "", "| model | integrator | peak (m) | peak error | wall per sim. s (s) | work | ratio to Exudyn ANCF-8 |",
           "|---|---|---|---|---|---|---|"]
    for label, setting, peak, wall, work in rows:
        ratio = f"{wall / exu_cost:.2f}" if exu_cost else "(Exudyn not installed)"
        out.append(f"| {label} | {setting} | {peak:.5f} | {peak / reference - 1:+.3%} | {wall / SPINUP_END:.4f} "
                   f"| {work} | {ratio} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, shorter runs")
    ap.add_argument("--spinup", action="store_true", help="only the spin-up cost table (section 4)")
    args = ap.parse_args(argv)
    if args.spinup:
        print(table_spinup_cost(1 if args.quick else 3))
        return
    if args.quick:
        print(table_resolution([1, 3], [5, 10]))
        print()
        print(table_integrators(0.05, [("segments", 10)]))
        print()
        print(table_compiled_rk4(0.05, [2], repeat=1))
        return
    print("### Resolution, accuracy and cost per right-hand side\n")
    print(table_resolution(list(range(1, 11)), [5, 10, 20, 40, 80]))
    print("\n### Integrators on a torque-driven hub-beam (0.2 s, 1 % damping)\n")
    print(table_integrators(0.2, [("modes", 4), ("segments", 20)]))
    print("\n### Fixed-step RK4: compiled loop against the Python loop around rhs (0.2 s)\n")
    print(table_compiled_rk4(0.2, [1, 2, 4, 8]))
    print("\n### KRB spin-up at 10 rad/s: sub-beams against Exudyn's ANCF cable (same run)\n")
    print(table_spinup_cost())


if __name__ == "__main__":
    main()
