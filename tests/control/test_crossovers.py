"""Crossovers and margins (mbfmu.control.crossovers) against their definition
(|L| = 1, phase -180 deg, evaluated here by python-control or an independent
modal formula), a brute-force dense-grid search, analytic textbook margins
and python-control's stability_margins where it is right; the closed-loop
verdict (mbfmu.control.loop_verdict) on stable, unstable and mis-modelled loops."""
from __future__ import annotations

import math
import warnings

import control as ct
import numpy as np
import pytest

from mbfmu.control.crossovers import TOLERANCE, find_crossovers

S = ct.tf("s")


def margins_pc(L, method="best"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ct.stability_margins(L, method=method)


def flexible_loop():
    """A rigid body (with a little viscous friction) under PD plus ten lightly damped modes (order 22): the
    resonance peaks push |L| above 1 again, several times. Returns the loop
    and its frequency response by the modal sum, evaluated independently."""
    wn = np.array([3.0, 7.5, 13.0, 21.0, 34.0, 52.0, 80.0, 120.0, 175.0, 260.0])
    zeta = np.array([0.004, 0.01, 0.006, 0.02, 0.008, 0.015, 0.005, 0.03, 0.01, 0.02])
    r = np.array([0.8, -0.6, 0.9, 0.5, -0.7, 0.6, 0.4, -0.3, 0.25, 0.2])
    kp, kd = 4.0, 1.2

    def resp(s):
        g = 1.0 / (s * (s + 0.1)) + sum(ri / (s ** 2 + 2 * z * w * s + w ** 2) for ri, z, w in zip(r, zeta, wn))
        return (kp + kd * s) * g
    P = ct.ss(1 / (S * (S + 0.1)))
    for ri, z, w in zip(r, zeta, wn):
        P = ct.parallel(P, ct.ss(ri / (S ** 2 + 2 * z * w * S + w ** 2)))
    C = ct.ss(ct.tf([kd, kp], [1e-4, 1]))  # PD with a fast roll-off pole
    return ct.series(P, C), lambda s: resp(s) / (1e-4 * s + 1)


def dense(Lw, w):
    """Brute force: sign changes of ln|L| and of Im L where Re L < 0 on a dense
    grid (not the rounding noise of Im L where L is real to 1e-9, near w = 0)."""
    g = np.log(np.abs(Lw))
    h = Lw.imag / np.abs(Lw)
    gc = w[:-1][np.sign(g[1:]) != np.sign(g[:-1])]
    k = np.flatnonzero((np.sign(h[1:]) != np.sign(h[:-1])) & (Lw.real[1:] < 0) & (Lw.real[:-1] < 0)
                       & (np.maximum(np.abs(h[1:]), np.abs(h[:-1])) > 1e-9))
    return gc, w[k]


def same_set(found, brute, w):
    """Each crossover found within two grid cells of one of the brute force, and as many."""
    cell = np.diff(np.log(w)).max()
    assert len(found) == len(brute), (found, brute)
    for f, b in zip(sorted(found), sorted(brute)):
        assert abs(math.log(f / b)) <= 2 * cell


def test_textbook_loop_margins_are_analytic_and_python_controls():
    """L = k / (s (s+1) (s+2)): phase -180 deg at sqrt(2) rad/s, where |L| = k/6."""
    for k in (1.0, 3.0, 4.5):
        L = k / (S * (S + 1) * (S + 2))
        c = find_crossovers(L)
        assert len(c.phase) == 1 and c.phase[0].frequency == pytest.approx(math.sqrt(2), rel=1e-12)
        assert c.phase[0].gain_margin == pytest.approx(6 / k, rel=1e-12)
        (g,) = c.gain
        assert abs(abs(L(1j * g.frequency)) - 1) < 1e-12
        gm, pm, _, wpc, wgc, _ = margins_pc(L)
        assert g.phase_margin_deg == pytest.approx(pm, rel=1e-9) and g.frequency == pytest.approx(wgc, rel=1e-9)
        assert g.delay_margin == pytest.approx(math.radians(pm) / wgc, rel=1e-9)
        assert c.closed_loop_stable and not c.conditionally_stable and c.verified


def test_high_order_loop_every_crossover_holds_and_the_set_is_the_dense_grid_s():
    L, resp = flexible_loop()
    assert L.nstates >= 20
    c = find_crossovers(L)
    assert len(c.gain) >= 3  # the resonances bring |L| back above 1
    for x in c.gain:
        assert abs(abs(L(1j * x.frequency)) - 1) <= TOLERANCE and x.verified
    for x in c.phase:
        v = L(1j * x.frequency)
        assert v.real < 0 and abs(v.imag) / abs(v) <= TOLERANCE and x.verified
    w = np.logspace(math.log10(c.band[0]), math.log10(c.band[1]), 200_000)
    gc, pc = dense(resp(1j * w), w)
    same_set([x.frequency for x in c.gain], gc, w)
    same_set([x.frequency for x in c.phase if x.frequency > 0], pc, w)
    # the headline is the worst crossover, and every one is listed in words
    worst = min(c.gain, key=lambda x: abs(x.phase_margin))
    assert c.worst_gain == worst and "crosses 1 at" in " ".join(c.sentences())


def test_sampled_high_order_loop_up_to_nyquist():
    L, _ = flexible_loop()
    dt = 0.004  # Nyquist 785 rad/s, above every mode
    Ld = ct.c2d(L, dt, "zoh")
    c = find_crossovers(Ld)
    assert c.band[1] == pytest.approx(math.pi / dt, rel=1e-15) and c.dt == dt
    for x in c.gain:
        assert abs(abs(Ld(np.exp(1j * x.frequency * dt))) - 1) <= TOLERANCE
    for x in c.phase:
        v = Ld(np.exp(1j * x.frequency * dt))
        assert v.real < 0 and abs(v.imag) / abs(v) <= TOLERANCE
    # brute force on an independent evaluation of L(z): the eigenvector expansion of the discrete model
    # (its poles are distinct: the pole at z = 1 is simple)
    lam, V = np.linalg.eig(Ld.A)
    cv, vb = (Ld.C @ V)[0], np.linalg.solve(V, Ld.B)[:, 0]
    w = np.logspace(math.log10(c.band[0]), math.log10(c.band[1] * (1 - 1e-12)), 200_000)
    z = np.exp(1j * w * dt)
    Lw = (cv * vb / (z[:, None] - lam)).sum(axis=1) + Ld.D[0, 0]
    gc, pc = dense(Lw, w)
    same_set([x.frequency for x in c.gain], gc, w)
    inner = [x.frequency for x in c.phase if 0 < x.frequency < math.pi / dt]
    same_set(inner, pc, w)
    # the Nyquist frequency, where L is real: a phase crossover when L(-1) < 0
    at_nyquist = [x for x in c.phase if x.frequency == math.pi / dt]
    assert bool(at_nyquist) == (Ld(-1.0).real < 0)


def test_conditionally_stable_loop_is_called_so():
    """L = K (s+1)^2 / s^3: closed loop s^3 + K s^2 + 2K s + K, stable for K > 1/2
    (Routh); the phase is -180 deg at 1 rad/s where L = -2K: gain margin 1/(2K) < 1."""
    K = 2.0
    c = find_crossovers(K * (S + 1) ** 2 / S ** 3)
    assert c.closed_loop_stable and c.conditionally_stable
    (p,) = c.phase
    assert p.frequency == pytest.approx(1.0, rel=1e-12) and p.gain_margin == pytest.approx(1 / (2 * K), rel=1e-12)
    assert any("conditionally stable" in s for s in c.sentences())
    # below the Routh bound the loop is unstable: not conditionally stable, said unstable
    low = find_crossovers(0.4 * (S + 1) ** 2 / S ** 3)
    assert not low.closed_loop_stable and not low.conditionally_stable and low.delay_margin == 0.0


def test_a_crossover_that_fails_its_check_is_reported_not_dropped(monkeypatch):
    """A search that lands off the crossover (here: a refinement forced to a
    wrong point) shows verified=False and a CHECK FAILED sentence."""
    from mbfmu.control import crossovers
    monkeypatch.setattr(crossovers, "_root", lambda f, a, b: 0.5 * (a + b) * 1.01)
    c = crossovers.find_crossovers(3.0 / (S * (S + 1) * (S + 2)))
    assert not c.verified and any("CHECK FAILED" in s for s in c.sentences())
    assert "CHECK FAILED" in c.table()


def test_bad_loop_gains_are_one_line_errors():
    from mbfmu.errors import InputError
    with pytest.raises(InputError, match="one loop"):
        find_crossovers(ct.rss(3, 2, 1))
    with pytest.raises(InputError, match="band"):
        find_crossovers(1 / S, band=(1.0, 0.5))
    with pytest.raises(InputError, match="NaN"):
        find_crossovers(ct.ss([[np.nan]], [[1]], [[1]], [[0]]))
    with pytest.raises(InputError, match="unspecified sample time"):
        find_crossovers(ct.ss([[0.5]], [[1]], [[1]], [[0]], True))


def test_constant_and_integrator_loops():
    """A constant L = -2 is one point of the Nyquist plot: one phase crossover,
    gain margin 1/2; L = 5/s crosses 1 at 5 rad/s with 90 deg (delay margin
    pi/10 s) and has no phase crossover; sampled at 0.01 s the integrator's
    L(-1) = -5 dt/2 is a phase crossover at the Nyquist frequency."""
    c = find_crossovers(ct.ss(np.zeros((0, 0)), np.zeros((0, 1)), np.zeros((1, 0)), [[-2.0]]))
    assert not c.gain and [(p.frequency, p.gain_margin) for p in c.phase] == [(0.0, 0.5)]
    c = find_crossovers(5 / S)
    (g,) = c.gain
    assert not c.phase and g.frequency == pytest.approx(5.0, rel=1e-12)
    assert g.phase_margin_deg == pytest.approx(90.0, rel=1e-12) and c.delay_margin == pytest.approx(math.pi / 10)
    assert not c.sentences()
    Ld = ct.c2d(ct.ss(5 / S), 0.01)
    c = find_crossovers(Ld)
    assert [p.frequency for p in c.phase] == [math.pi / 0.01]
    assert c.phase[0].gain_margin == pytest.approx(1 / abs(Ld(-1.0)), rel=1e-12)


# ---------------------------------------------------------------------------- loops of co-simulation systems
def _pi_loop(gain: float = 2.0):
    from mbfmu.cosim import ControlUnit, System, sources
    from mbfmu.cosim.blocks import Gain, Sum
    P = ct.tf([2.0], [0.1, 1.1, 1.0])
    C = ct.tf([1.5, 3.0], [1.0, 0.0])
    units = [sources.step("ref", 0.5, 1.0), Sum("err", "+-", inputs=("r", "m")), ControlUnit("ctrl", ct.ss(C)),
             Gain("k", gain), ControlUnit("plant", ct.ss(P))]
    conns = [("ref.y", "err.r"), ("plant.y[1]", "err.m"), ("err.y", "ctrl.u[1]"), ("ctrl.y[1]", "k.u"),
             ("k.y", "plant.u[1]")]
    return System(units, conns), P * gain * C


H = 0.01


def test_verdict_of_a_stable_and_an_unstable_sampled_loop():
    """The eigenvalue verdict equals the hand-built sampled loop's poles; the
    linear simulation and the co-simulation agree with it."""
    from mbfmu.control import loop_analysis
    for gain, stable in ((2.0, True), (80.0, False)):
        system, _ = _pi_loop(gain)
        la = loop_analysis(system, "k.y->plant.u[1]", sampled=True, step=H)
        P = ct.tf([2.0], [0.1, 1.1, 1.0])
        C = ct.tf([1.5, 3.0], [1.0, 0.0])
        Ld = ct.c2d(ct.ss(P), H, "zoh") * gain * ct.c2d(ct.ss(C), H, "zoh")
        rho = np.abs(ct.feedback(Ld, 1).poles()).max()
        assert (rho < 1) == stable
        v = la.verdict()
        assert v.stable == stable and v.pole_figure == pytest.approx(rho, rel=1e-9)
        assert v.linear_check == "agrees" and v.cosim_check == "agrees" and v.checked, v.summary()
        assert la.margins()["closed_loop_stable"] == stable


def test_verdict_names_the_unit_whose_linear_model_the_cosimulation_contradicts(monkeypatch):
    """The plant's linear model replaced by one with 40 times its gain, labelled
    ERA: the linear loop is unstable (the gain margin is ~31), the real one is
    not; the verdict says they disagree and names the plant."""
    from mbfmu.control import loop_analysis, system_linearization
    real = system_linearization.unit_model

    def wrong(unit, point, t, step, sampled):
        model, how = real(unit, point, t, step, sampled)
        return (40.0 * model, "ERA") if unit.name == "plant" else (model, how)
    monkeypatch.setattr(system_linearization, "unit_model", wrong)
    system, _ = _pi_loop(2.0)
    la = loop_analysis(system, "k.y->plant.u[1]", sampled=True, step=H)
    v = la.verdict()
    assert not v.stable and v.cosim_check == "disagrees" and not v.checked
    assert v.doubtful_units == ["plant (ERA)"] and "plant (ERA)" in v.summary()


def _tutorial_7_loop(sampled: bool, tmp_path):
    """The rigid-arm PD loop of tutorial 7 (gains 400, 40) broken at the shoulder torque."""
    from mbfmu.control import loop_analysis, trim_inputs
    from mbfmu.cosim import FmuUnit, System
    from mbfmu.cosim.blocks import Gain, Offset, Sum
    from mbfmu.fmu import build_fmu
    from mbfmu.plant.library import load_plant
    plant = load_plant("rigid_arm")
    q_target = plant.initial_state()[:3] + np.array([0.0, 0.3, 0.0])
    hold = trim_inputs(plant, q=q_target)
    arm = FmuUnit(build_fmu("rigid_arm", tmp_path), name="arm")
    units = [arm, Offset("e", -q_target), Gain("kp", -400.0, n=3), Gain("kd", -40.0, n=3), Sum("pd", "++", n=3),
             Offset("hold", hold.u)]
    system = System(units, [("arm.q", "e.u"), ("e.y", "kp.u"), (f"arm.{arm.outputs[3][:-3]}", "kd.u"),
                            ("kp.y", "pd.u1"), ("kd.y", "pd.u2"), ("pd.y", "hold.u"), ("hold.y", "arm.tau")])
    return loop_analysis(system, "hold.y[2]->arm.tau[2]", at=0.0, sampled=sampled, step=H)


def test_rigid_arm_pd_margins_are_unchanged(tmp_path):
    """Continuous: the margins are python-control's (right on this 6-state
    loop) to 1e-9. Sampled: the phase margin is 180 + arg L at its crossover
    to 1e-12 and python-control's (its frequency-response method, which
    interpolates on a spline) to 1e-7; its crossover frequency holds |L| = 1
    to 1e-6 here where python-control's is 1e-8 off; the gain margin is the w = 0 crossing
    1/|L(1)| (the open loop has an unstable pole, so the loop is conditionally
    stable), which python-control's grid starts above."""
    la = _tutorial_7_loop(False, tmp_path)
    m = la.margins()
    gm, pm, _, wpc, wgc, _ = margins_pc(la.L)
    assert m["phase_margin"] == pytest.approx(pm, rel=1e-9) and m["gain_crossover"] == pytest.approx(wgc, rel=1e-9)
    assert m["gain_margin"] == pytest.approx(gm, rel=1e-9) and m["phase_crossover"] == pytest.approx(wpc, abs=1e-12)
    assert m["delay_margin"] == pytest.approx(math.radians(pm) / wgc, rel=1e-9)
    assert m["conditionally_stable"] and m["closed_loop_stable"] and m["checked"]
    ls = _tutorial_7_loop(True, tmp_path / "s")
    ms = ls.margins()
    _, pm_s, _, _, wgc_s, _ = margins_pc(ls.L, "frd")
    L_c = ls.L(np.exp(1j * ms["gain_crossover"] * H))
    assert ms["phase_margin"] == pytest.approx(180.0 + math.degrees(np.angle(L_c)), abs=1e-12 * 180)
    # python-control's sampled margins interpolate its frequency grid: a rounding-level change
    # of the plant model (summation order in the engine) moved its phase margin by 1e-7 relative
    # while ours still holds the definition above to 1e-12, so its value is a coarse second check
    assert ms["phase_margin"] == pytest.approx(pm_s, rel=1e-6)
    assert ms["gain_crossover"] == pytest.approx(wgc_s, rel=1e-6)
    assert abs(abs(ls.L(np.exp(1j * ms["gain_crossover"] * H))) - 1) <= TOLERANCE
    assert ms["gain_margin"] == pytest.approx(1 / abs(ls.L(1.0)), rel=1e-9) and ls.L(1.0).real < 0
    assert ms["phase_crossover"] == 0.0 and ms["delay_margin_steps"] == math.ceil(ms["delay_margin"] / H) - 1


# ---------------------------------------------------------------------------- the flagship loop
def _flexible_arm_lqg_loop():
    """The flexible arm (geared motors) under the LQG servo of
    examples/flexible_arm_study.py, at 1 ms: the plant by its exact continuous
    linearization as a python-control unit (no FMU, so no identification in
    the loop), the controller as designed there."""
    import importlib.util
    from pathlib import Path

    from mbfmu.cosim import ControlUnit, System, sources
    path = Path(__file__).resolve().parents[2] / "examples" / "flexible_arm_study.py"
    spec = importlib.util.spec_from_file_location("flexible_arm_study_for_tests", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    design = ex.design(ex.make_plant())
    lin, lqg = design["sys"], design["lqg"]
    idx = [list(lin.output_labels).index(n) for n in ex.MEASURED]
    meas = ct.ss(lin.A, lin.B, lin.C[idx], lin.D[idx], inputs=list(lin.input_labels), outputs=ex.MEASURED)
    units = [ControlUnit("arm", meas), ControlUnit("ctrl", lqg), sources.step("r1", 0.0, 0.0),
             sources.step("r2", 0.0, 0.0)]
    conns = [("r1.y", "ctrl.q[1]_ref"), ("r2.y", "ctrl.q[2]_ref")]
    conns += [(f"arm.{n}", f"ctrl.{n}") for n in lqg.input_labels if not n.endswith("_ref")]
    conns += [(f"ctrl.{n}", f"arm.{n}") for n in lqg.output_labels]
    return System(units, conns), ex.H


def _response(L, w):
    """L(exp(j w dt)) by dense solves (in batches), independent of the search's Schur form."""
    z = np.exp(1j * w * L.dt)
    n = L.nstates
    out = []
    for k in range(0, len(w), 2000):
        M = z[k:k + 2000, None, None] * np.eye(n) - L.A
        x = np.linalg.solve(M, np.repeat(L.B[None].astype(complex), len(M), axis=0))[:, :, 0]
        out.append(x @ L.C[0] + L.D[0, 0])
    return np.concatenate(out)


@pytest.fixture(scope="module")
def flexible_arm_loops():
    from mbfmu.control import loop_analysis
    system, step = _flexible_arm_lqg_loop()
    return [loop_analysis(system, f"ctrl.tau[{k}]->arm.tau[{k}]", sampled=True, step=step) for k in (1, 2)]


def _check_flagship(la, n_grid):
    m = la.margins()
    assert la.L.nstates >= 29 and m["checked"]
    gains, phases = m["gain_crossovers"], m["phase_crossovers"]
    assert len(gains) >= 3 and m["conditionally_stable"] and m["closed_loop_stable"]
    for c in gains:
        assert abs(abs(la.L(np.exp(1j * c.frequency * la.L.dt))) - 1) <= TOLERANCE
    for c in phases:
        v = la.L(np.exp(1j * c.frequency * la.L.dt))
        assert v.real < 0 and abs(v.imag) / abs(v) <= TOLERANCE
    band = la.crossovers().band
    w = np.logspace(math.log10(band[0]), math.log10(band[1] * (1 - 1e-12)), n_grid)
    gc, pc = dense(_response(la.L, w), w)
    same_set([c.frequency for c in gains], gc, w)
    same_set([c.frequency for c in phases if 0 < c.frequency < band[1]], pc, w)
    return m


def test_flexible_arm_lqg_margins_are_crossovers(flexible_arm_loops):
    """The loop of issue 32 (34 states): python-control's stability_margins
    reports a 'phase margin' where |L| is not 1 at the tau[2] break; every
    margin reported here is at a checked crossover, the set equals a
    dense-grid search's, several crossovers and conditional stability are said."""
    for la in flexible_arm_loops:
        m = _check_flagship(la, 20_000)
        assert any("crosses 1 at" in s for s in m["notes"])
        assert m["phase_margin"] == min((c.phase_margin_deg for c in m["gain_crossovers"]), key=abs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, _, _, wgc, _ = ct.stability_margins(flexible_arm_loops[1].L, method="frd")
    assert abs(abs(flexible_arm_loops[1].L(np.exp(1j * wgc * 1e-3))) - 1) > 0.1  # the bug this replaces
    v = flexible_arm_loops[0].verdict(steps=100)
    assert v.stable and v.linear_check == "agrees" and v.cosim_check == "agrees"


@pytest.mark.slow
def test_flexible_arm_lqg_crossovers_equal_a_200k_point_grid_search(flexible_arm_loops):
    for la in flexible_arm_loops:
        _check_flagship(la, 200_000)


def test_only_units_with_inexact_models_are_named_in_doubt():
    """The labels of the checked FMU derivatives and of the plant's exact
    linearization are exact models; ERA and central differences are not."""
    from mbfmu.control.fmu_model import SOURCE_CENTRAL, SOURCE_DIRECTIONAL, SOURCE_PLANT
    from mbfmu.control.loop_verdict import _in_doubt
    sources = {"arm": f"{SOURCE_DIRECTIONAL} + ZOH", "plant": f"{SOURCE_PLANT} (analytic)",
               "ctrl": "exact", "k": "memoryless (central difference)",
               "other": "ERA (validated fit 97.0 %)", "me": f"{SOURCE_CENTRAL} (it provides no directional derivatives)"}
    assert _in_doubt(sources) == [f"other ({sources['other']})", f"me ({sources['me']})"]
