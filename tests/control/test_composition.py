"""Our models compose with python-control (issue 32, item 5) and the flagship
loop is modelled by the FMU's exact derivatives (item 1): flexible arm, native
FMU, the LQG of examples/flexible_arm_study.py, the loop at 1 ms."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import control as ct
import numpy as np
import pytest

import mbfmu
from mbfmu.control import linearize_fmu, linearize_system, loop_analysis
from mbfmu.control.lqr import lqr_servo
from mbfmu.cosim import ControlUnit, FmuUnit, FunctionUnit, System, simulate

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
import flexible_arm_study as study  # noqa: E402

H = study.H


@pytest.fixture(scope="module")
def design():
    return study.design(study.make_plant())


def _system(fmu, lqg, ref=(0.0, 0.0)) -> System:
    arm = FmuUnit(fmu, name="arm")
    ctrl = ControlUnit("ctrl", lqg)
    refs = FunctionUnit("ref", lambda t, u: list(ref), outputs=["q1_ref", "q2_ref"])
    conns = [("ref.q1_ref", "ctrl.q[1]_ref"), ("ref.q2_ref", "ctrl.q[2]_ref")]
    conns += [(f"arm.{n}", f"ctrl.{n}") for n in lqg.input_labels if not n.endswith("_ref")]
    conns += [(f"ctrl.{n}", f"arm.{n}") for n in lqg.output_labels]
    return System([arm, ctrl, refs], conns)


def _hand_loop(design):
    """The exact sampled loop by hand: the plant's exact discrete model (ZOH at
    1 ms), the LQG, and the master's Jacobi exchange (the LQG's output at t_n,
    computed from the plant's output at t_n, held over [t_n, t_n+1])."""
    sysd, lqg = design["sysd"], design["lqg"]
    P = ct.ss(sysd.A, sysd.B, sysd.C, sysd.D, H, inputs=["tau[1]", "tau[2]"], outputs=study.MEASURED, name="P")
    K = ct.ss(lqg.A, lqg.B, lqg.C, lqg.D, H, inputs=list(lqg.input_labels), outputs=["tau[1]", "tau[2]"], name="K")
    return P, K


def _stable(sys_, A) -> bool:
    poles = np.linalg.eigvals(A)
    return bool(np.all(np.abs(poles) < 1)) if sys_.isdtime(strict=True) else bool(np.all(poles.real < 0))


def test_every_model_we_return_composes_with_python_control(native_flexible_arm, design):
    from mbfmu.control.scheduling import schedule
    plant = study.make_plant()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exact models: no warning
        fmu = linearize_fmu(native_flexible_arm, step=H)
    arm = mbfmu.load_plant("rigid_arm")

    def lqr_design(lin, point):
        return ct.lqr(lin, np.eye(lin.nstates), np.eye(lin.ninputs))[0]

    sch = schedule(arm, {"q[3]": [0.0, 0.5]}, lqr_design)
    models = {
        "linearize": mbfmu.linearize(plant),
        "linearize_fmu": fmu,
        "linearize_system": linearize_system(_system(native_flexible_arm, design["lqg"]), inputs=["arm.tau"],
                                             outputs=["arm.q"], sampled=True, step=H),
        "schedule": sch.linear[0],
        "controller (lqg_servo)": design["lqg"],
    }
    for name, sys_ in models.items():
        labels = [*sys_.state_labels, *sys_.input_labels, *sys_.output_labels]
        assert not any("." in n for n in labels), name
        n, m, p = sys_.nstates, sys_.ninputs, sys_.noutputs
        K = ct.lqr(sys_, np.eye(n), np.eye(m))[0]
        assert _stable(sys_, sys_.A - sys_.B @ K), name
        L = ct.lqe(sys_, np.eye(m), np.eye(p))[0]  # process noise on the inputs
        assert L.shape == (n, p), name
        if sys_.isdtime(strict=True):
            servo = lqr_servo(sys_, np.eye(n), np.eye(m))
            assert list(servo.input_labels) == list(sys_.state_labels), name
        joined = ct.interconnect([sys_], inplist=list(sys_.input_labels), outlist=list(sys_.output_labels))
        assert joined.nstates == n, name
        closed = ct.feedback(sys_, np.zeros((m, p)))
        np.testing.assert_allclose(closed.A, sys_.A)
    # the scheduled controller (a python-control nonlinear system) joins a loop by its names
    ctrl = sch.controller(arm.initial_state(), np.zeros(3), H)
    assert not any("." in n for n in [*ctrl.input_labels, *ctrl.output_labels])
    ct.interconnect([ctrl], inplist=list(ctrl.input_labels), outlist=list(ctrl.output_labels))
    # lqr_servo on linearize_fmu's output, unchanged
    servo = lqr_servo(fmu, np.eye(fmu.nstates), R=[1e-3, 1e-3], Qi=[1.0, 1.0], track=["q[1]", "q[2]"])
    assert list(servo.output_labels) == ["tau[1]", "tau[2]"]


@pytest.mark.parametrize("runtime, source", [
    ("native", "FMU directional derivatives (checked)"),       # its exact C tangent, probed
    ("pythonfmu", "plant's exact linearization (analytic)"),  # no Model Exchange: its plant's (C tangents)
])
def test_flagship_loop_uses_the_exact_model_and_matches_the_hand_built_loop(runtime, source, design, request):
    fmu = request.getfixturevalue(f"{runtime}_flexible_arm")
    system = _system(fmu, design["lqg"])
    closed = linearize_system(system, sampled=True, step=H)
    assert closed.unit_models["arm"] == source
    rho = np.abs(closed.poles()).max()
    P, K = _hand_loop(design)
    hand = ct.interconnect([P, K], inplist=["K.q[1]_ref"], outlist=["P.q[1]"], check_unused=False)
    assert 0.99 < rho < 1 and rho == pytest.approx(np.abs(hand.poles()).max(), abs=1e-6)  # ERA gave 1.595
    # the hand-built loop is the master's: a co-simulation from a 1 mrad reference step follows it
    run = simulate(_system(fmu, design["lqg"], ref=(1e-3, 0.0)), 0.1, H, progress=False,
                   record=["arm.q[1]"])
    q = np.asarray(run["arm.q[1]"])
    lin = ct.forced_response(hand, np.arange(len(q)) * H, 1e-3 * np.ones(len(q))).outputs
    assert np.abs(lin - q).max() < 1e-6 * np.abs(q).max() + 1e-12
    for k in (1, 2):
        la = loop_analysis(system, f"ctrl.tau[{k}]->arm.tau[{k}]", sampled=True, step=H)
        assert la.unit_models["arm"] == source
        other = 3 - k
        broken = ct.interconnect(
            [P, K], connections=[[f"P.tau[{other}]", f"K.tau[{other}]"]]
            + [[f"K.{n}", f"P.{n}"] for n in study.MEASURED], inplist=[f"P.tau[{k}]"], outlist=[f"K.tau[{k}]"],
            check_unused=False)
        w = la.frequencies()
        want = ct.disk_margins(-broken, w)
        got = ct.disk_margins(la.L, w)
        np.testing.assert_allclose(got, want, rtol=1e-3)
        # every reported gain crossover is one (|L| = 1 to 1e-6), and they are the hand loop's crossings
        m = la.margins()
        found = np.array([c.frequency for c in m["gain_crossovers"]])
        assert len(found) and all(abs(abs(la.L(np.exp(1j * w_c * H))) - 1) < 1e-6 for w_c in found)
        grid = np.logspace(-2, np.log10(0.999 * np.pi / H), 20000)
        excess = np.abs((-broken)(np.exp(1j * grid * H))) - 1
        crossings = grid[:-1][np.sign(excess[:-1]) != np.sign(excess[1:])]
        assert len(crossings) == len(found)
        np.testing.assert_allclose(np.sort(found), crossings, rtol=1e-3)
    assert la.verdict(cosim=False).stable
