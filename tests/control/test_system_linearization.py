"""linearize_system and loop_analysis: the linear model of a whole
co-simulation loop against the same loop built by hand in python-control,
and the sampled model against the master's own step map."""
from __future__ import annotations


import control as ct
import numpy as np
import pytest

from mbfmu.control import linearize_system, loop_analysis, pid
from mbfmu.cosim import ControlUnit, System, simulate, sources
from mbfmu.cosim.blocks import Gain, Sum
from mbfmu.errors import InputError

H = 0.01
P = ct.tf([2.0], [0.1, 1.1, 1.0])            # 2 / ((s + 1)(0.1 s + 1)), N -> m
C = ct.tf([1.5, 3.0], [1.0, 0.0])            # PI 1.5 + 3 / s, m -> N (continuous)
K_OUT = 2.0                                  # gain after the controller
W = np.logspace(-2, np.log10(np.pi / H * 0.95), 200)


def fresp(sys, w=W):
    return ct.frequency_response(sys, w, squeeze=False).frdata.ravel()


def close(a, b, tol=1e-8):
    return np.abs(a - b).max() <= tol * np.abs(b).max()


def pi_loop():
    """ref -> err (r - y) -> C -> gain -> plant -> y, all units of the master."""
    units = [sources.step("ref", 0.5, 1.0, unit="m"),
             Sum("err", "+-", inputs=("r", "m"), unit="m"),
             ControlUnit("ctrl", ct.ss(C), units={"u[1]": "m", "y[1]": "N"}),
             Gain("k", K_OUT, unit_in="N", unit_out="N"),
             ControlUnit("plant", ct.ss(P), units={"u[1]": "N", "y[1]": "m"})]
    conns = [("ref.y", "err.r"), ("plant.y[1]", "err.m"), ("err.y", "ctrl.u[1]"), ("ctrl.y[1]", "k.u"),
             ("k.y", "plant.u[1]")]
    return System(units, conns)


def test_continuous_loop_gain_s_t_and_margins_equal_python_control_by_hand():
    la = loop_analysis(pi_loop(), "k.y->plant.u[1]", step=H)
    L = P * K_OUT * C
    assert close(fresp(la.L), fresp(L))
    assert close(fresp(la.S), fresp(ct.feedback(1, L)))
    assert close(fresp(la.T), fresp(ct.feedback(L, 1)))
    m = la.margins()
    gm, pm, _, wpc, wgc, _ = ct.stability_margins(L)
    assert np.isclose(m["phase_margin"], pm, rtol=1e-8) and np.isclose(m["gain_crossover"], wgc, rtol=1e-8)
    assert gm == np.inf and m["gain_margin"] > 1e12  # no phase crossover (python-control: inf or rounding)
    assert np.isclose(m["delay_margin"], np.radians(pm) / wgc, rtol=1e-8)
    dm = ct.disk_margins(L, la.frequencies())
    assert np.allclose([m["disk_margin"], m["disk_gain_margin"], m["disk_phase_margin"]], dm, rtol=1e-8)
    assert la.units == {"plant:u[1]": "N", "k:y": "N"}


def test_sampled_loop_is_the_zero_order_hold_loop_and_loses_phase():
    """The sampled loop is ZOH(P) ZOH(C) (both continuous units are held over
    the macro step, as the master runs them); its phase margin is below the
    continuous one and it has a gain margin (the sampling delay)."""
    system = pi_loop()
    la = loop_analysis(system, "k.y->plant.u[1]", sampled=True, step=H)
    Ld = ct.c2d(ct.ss(P), H, "zoh") * K_OUT * ct.c2d(ct.ss(C), H, "zoh")
    assert la.L.dt == H and close(fresp(la.L), fresp(Ld))
    assert close(fresp(la.S), fresp(ct.feedback(ct.ss([], [], [], 1, H), Ld)))
    m = la.margins()
    _, pm, _, _, wgc, _ = ct.stability_margins(Ld, method="frd")
    assert np.isclose(m["phase_margin"], pm, rtol=1e-8) and np.isclose(m["gain_crossover"], wgc, rtol=1e-8)
    mc = loop_analysis(system, "k.y->plant.u[1]", step=H).margins()
    assert m["phase_margin"] < mc["phase_margin"] and np.isfinite(m["gain_margin"])
    coarse = loop_analysis(system, "k.y->plant.u[1]", sampled=True, step=10 * H).margins()
    assert coarse["phase_margin"] < m["phase_margin"]


def test_discrete_pid_unit_enters_exactly_when_sampled():
    c = pid(3.0, 4.0, 0.0, dt=H, derivative_on="error")
    system = System([sources.step("ref", 0.1, 1.0), ControlUnit("pid", c), ControlUnit("plant", ct.ss(P))],
                    [("ref.y", "pid.r"), ("plant.y[1]", "pid.y"), ("pid.u", "plant.u[1]")])
    la = loop_analysis(system, "pid.u->plant.u[1]", sampled=True, step=H)
    assert close(fresp(la.L), fresp(ct.c2d(ct.ss(P), H, "zoh") * c.linear()))
    # continuous ideal: the Tustin equivalent of the PID, whose Tustin map gives the PID back
    lc = loop_analysis(system, "pid.u->plant.u[1]", step=H)
    w = np.logspace(-2, 2, 50)
    c_equiv = fresp(lc.L, w) / fresp(P, w)
    wd = 2 / H * np.arctan(w * H / 2)  # Tustin frequency warping: C_c(jw) = C_d(exp(j wd H))
    assert close(c_equiv, fresp(c.linear(), wd), 1e-7)


def test_sampled_closed_loop_poles_equal_the_master_step_map():
    """Eigenvalues of the map x_n -> x_{n+1} of the master (Jacobi), measured
    by perturbing the units' initial states, equal the sampled model's poles."""
    c = pid(3.0, 4.0, 0.0, dt=H, derivative_on="error")
    ctrl, plant = ControlUnit("pid", c), ControlUnit("plant", ct.ss(P))
    system = System([sources.step("ref", 10.0, 1.0), ctrl, plant],
                    [("ref.y", "pid.r"), ("plant.y[1]", "pid.y"), ("pid.u", "plant.u[1]")])
    model = linearize_system(system, sampled=True, step=H)
    units = [ctrl, plant]
    n = [u.nx for u in units]
    base = [np.array(u.x0, float) for u in units]

    def step_map(z):
        for k, u in enumerate(units):
            u.x0 = z[sum(n[:k]):sum(n[:k + 1])].copy()
        simulate(system, stop_time=H, step=H, progress=False)
        return np.concatenate([u.x for u in units])
    z0 = np.concatenate(base)
    h = 1e-4
    J = np.column_stack([(step_map(z0 + h * e) - step_map(z0 - h * e)) / (2 * h) for e in np.eye(len(z0))])
    for u, b in zip(units, base):
        u.x0 = b
    ev = np.sort_complex(np.linalg.eigvals(J))
    poles = np.sort_complex(model.poles())
    assert np.abs(ev - poles).max() < 1e-6
    assert model.nstates == len(z0) and model.state_labels[:3] == ["pid:I", "pid:D", "pid:s_prev"]


def test_inputs_and_outputs_by_port_and_closed_loop_response():
    system = pi_loop()
    cl = linearize_system(system, inputs="err.r", outputs=["plant.y[1]", "k.y"], step=H)
    L = P * K_OUT * C
    assert close(fresp(cl[0, 0]), fresp(ct.feedback(L, 1)))
    assert close(fresp(cl[1, 0]), fresp(ct.feedback(K_OUT * C, P)))
    assert list(cl.input_labels) == ["err:r"] and list(cl.output_labels) == ["plant:y[1]", "k:y"]
    assert cl.unit_models["plant"] == "exact" and cl.unit_models["ref"].startswith("source")


def test_bad_names_are_one_line_errors():
    system = pi_loop()
    with pytest.raises(InputError, match="no connection k.y -> ctrl.u"):
        loop_analysis(system, "k.y->ctrl.u[1]", step=H)
    with pytest.raises(InputError, match="not a connection"):
        loop_analysis(system, "k.y", step=H)
    with pytest.raises(InputError, match="not an output of unit 'plant'"):
        linearize_system(system, outputs="plant.u[1]", step=H)
    with pytest.raises(InputError, match="give the macro step"):
        linearize_system(system)


def test_plant_fmu_in_a_pd_loop_is_its_plant_exact_model(tmp_path):
    """rigid_arm FMU under a PD on the shoulder (blocks), held by its gravity
    torque: the loop gain at the torque input equals the plant's own exact
    linearization times the PD law, built by hand."""
    from mbfmu.control import linearize, trim_inputs
    from mbfmu.cosim import FmuUnit
    from mbfmu.cosim.blocks import Offset
    from mbfmu.fmu import build_fmu
    from mbfmu.plant.library import load_plant
    plant = load_plant("rigid_arm")
    hold = trim_inputs(plant, q=plant.initial_state()[:3])
    kp, kd = 400.0, 40.0
    arm = FmuUnit(build_fmu("rigid_arm", tmp_path), name="arm")
    units = [arm, Offset("e", -plant.initial_state()[:3]), Gain("kp", -kp, n=3), Gain("kd", -kd, n=3),
             Sum("pd", "++", n=3), Offset("hold", hold.u)]
    conns = [("arm.q", "e.u"), ("e.y", "kp.u"), (f"arm.{arm.outputs[3][:-3]}", "kd.u"), ("kp.y", "pd.u1"), ("kd.y", "pd.u2"),
             ("pd.y", "hold.u"), ("hold.y", "arm.tau")]
    system = System(units, conns)
    la = loop_analysis(system, "hold.y[2]->arm.tau[2]", step=H)
    lin = linearize(plant, None, hold.u)
    assert la.L.nstates == 6 and "exact" in linearize_system(system, step=H).unit_models["arm"]
    # by hand: the other joints closed too, so take the whole MIMO loop and break joint 2
    K = np.hstack([kp * np.eye(3), kd * np.eye(3)])
    Pq = ct.ss(lin.A, lin.B, lin.C[:6], lin.D[:6])
    loop = ct.ss(Pq.A - Pq.B @ K @ Pq.C + Pq.B[:, [1]] @ K[[1]] @ Pq.C, Pq.B[:, [1]], K[[1]] @ Pq.C, 0)
    w = np.logspace(-1, 2, 60)
    assert close(fresp(la.L, w), fresp(loop, w), 1e-7)
    assert np.allclose(la.L.poles().real.max(), loop.poles().real.max())


def test_operating_point_of_a_run_is_the_state_the_master_reached():
    """at = 0.5 s: the plant unit's state after the master's run, and the
    closed-loop model there is the same LTI loop (a linear system's model does
    not depend on the point) while the recorded inputs are those of the run."""
    from mbfmu.control.system_linearization import operating_point
    system = pi_loop()
    points, t = operating_point(system, 0.7, H)
    result = simulate(system, stop_time=0.7, step=H, record="all")
    assert t == 0.7 and np.allclose(points["plant"].u, [result["plant.u[1]"][-1]])
    assert np.array_equal(points["plant"].x, system.units["plant"].x)
    assert np.abs(points["plant"].x).max() > 0.1  # the step at 0.5 s has moved the plant
    with pytest.raises(InputError, match="whole number of steps"):
        operating_point(system, 0.705, H)


def test_flexible_arm_lqg_loop_poles_equal_the_example_loop_built_by_hand():
    """The LQG of examples/flexible_arm_study.py on the arm's linear model (16
    states): the sampled system's closed-loop poles are those of the loop the
    example writes by hand (plant ZOH, controller output feedback)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import flexible_arm_study as study
    d = study.design(study.make_plant())
    sysd, lqg, Hs = d["sysd"], d["lqg"], study.H
    units = [ControlUnit("arm", d["sys"]), ControlUnit("ctrl", lqg), sources.step("r1", 0.0, 0.0),
             sources.step("r2", 0.0, 0.0)]
    conns = [("r1.y", "ctrl.q[1]_ref"), ("r2.y", "ctrl.q[2]_ref")]
    conns += [(f"arm.{n}", f"ctrl.{n}") for n in lqg.input_labels if not n.endswith("_ref")]
    conns += [(f"ctrl.{n}", f"arm.{n}") for n in lqg.output_labels]
    cl = linearize_system(System(units, conns), sampled=True, step=Hs)
    A, B, C = sysd.A, sysd.B, sysd.C
    By, Dy = lqg.B[:, 2:], lqg.D[:, 2:]
    Acl = np.block([[A + B @ Dy @ C, B @ lqg.C], [By @ C, lqg.A]])
    ours, hand = np.sort_complex(cl.poles()), np.sort_complex(np.linalg.eigvals(Acl))
    assert len(ours) == len(hand) and np.abs(ours - hand).max() < 1e-8


def test_parameters_set_on_a_plant_fmu_unit_reach_its_linear_model(tmp_path):
    """arm_mass set on the FMU unit: the unit's model is the heavier plant's."""
    from mbfmu.control import linearize
    from mbfmu.cosim import FmuUnit
    from mbfmu.fmu import build_fmu
    from mbfmu.plant.library import load_plant
    arm = FmuUnit(build_fmu("rigid_arm", tmp_path), name="arm")
    system = System([arm], values={"arm.arm_mass": 40.0})
    model = linearize_system(system, inputs="arm.tau", outputs="arm.q", step=H)
    heavy = linearize(load_plant("rigid_arm", arm_mass=40.0), None, np.zeros(3))
    w = np.logspace(-1, 1, 20)
    assert close(ct.frequency_response(model, w).frdata, ct.frequency_response(heavy[:3, :], w).frdata, 1e-9)
