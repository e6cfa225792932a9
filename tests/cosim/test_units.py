"""Units on their own: FMU variables and dependencies, python-control
discretization against analytic solutions, sources."""
from __future__ import annotations

import control
import numpy as np
import pytest
import scipy.linalg

from mbfmu.cosim import ControlUnit, FmuUnit, FunctionUnit, System, simulate, sources
from mbfmu.errors import InputError


def test_fmu_unit_reads_variables_units_and_dependencies(mass_fmu, pendulum_fmu):
    m = FmuUnit(mass_fmu, "m")
    assert m.inputs == ["F", "xin", "vin"] and m.outputs == ["x", "v", "Fc"]
    assert m.variables["F"].unit == "N" and m.variables["nsub"].type == "Integer"
    assert m.feedthrough == {"x": (), "v": (), "Fc": ("xin", "vin")}
    assert m.can_rollback and m.can_interpolate_inputs
    p = FmuUnit(pendulum_fmu, "p")  # pythonfmu declares no dependencies: FMI says "all inputs"
    assert p.feedthrough == {"theta": ("tau",), "omega": ("tau",)} and not p.can_rollback
    assert FmuUnit(pendulum_fmu, "p", feedthrough={"theta": [], "omega": []}).feedthrough["theta"] == ()


def test_continuous_state_space_is_exact_at_steps_with_constant_input():
    """ZOH discretization: a continuous LTI plant under a constant input equals the
    analytic solution x(t) = e^{At} x0 + A^{-1}(e^{At} - I) B u at every step."""
    A = np.array([[0.0, 1.0], [-4.0, -0.4]])
    B = np.array([[0.0], [1.0]])
    sys = control.ss(A, B, np.eye(2), 0, inputs=["u"], outputs=["p", "q"])
    s = System([ControlUnit("plant", sys, x0=[1.0, 0.0]), sources.step("src", 0.0, 2.0)], [("src.y", "plant.u")])
    r = simulate(s, 2.0, 0.1)
    for k, t in enumerate(r.time):
        E = scipy.linalg.expm(A * t)
        x = E @ [1.0, 0.0] + np.linalg.solve(A, (E - np.eye(2)) @ B[:, 0] * 2.0)
        np.testing.assert_allclose([r["plant.p"][k], r["plant.q"][k]], x, rtol=1e-10, atol=1e-12)


def test_transfer_function_and_discrete_system_at_own_dt():
    """A discrete integrator with dt = 0.01 s runs 10 sub-steps per 0.1 s macro step."""
    integ = control.tf([0.01], [1, -1], dt=0.01, inputs="u", outputs="y")
    unit = ControlUnit("i", integ)
    assert unit.step == 0.01
    s = System([unit, sources.step("one", 0.0, 1.0)], [("one.y", "i.u")])
    r = simulate(s, 1.0, 0.1)
    np.testing.assert_allclose(r["i.y"], r.time, atol=1e-12)  # sum of 0.01 * 1 per 0.01 s
    with pytest.raises(Exception, match="does not divide"):
        simulate(s, 1.5, 0.015)


def test_nonlinear_system_integrates_with_held_input():
    """x' = -x^2 + u with u = 0: x(t) = 1 / (t + 1)."""
    nl = control.nlsys(lambda t, x, u, p: -x ** 2 + u, None, inputs=["u"], states=["x"], outputs=["x"])
    s = System([ControlUnit("n", nl, x0=[1.0], inputs_start=0.0)])
    r = simulate(s, 2.0, 0.05)
    np.testing.assert_allclose(r["n.x"], 1.0 / (r.time + 1.0), rtol=1e-8)


def test_sources_and_blocks():
    tbl = sources.table("tbl", [0.0, 1.0, 2.0], [[0.0, 1.0], [2.0, 1.0], [2.0, 3.0]], outputs=("a", "b"))
    units = [sources.step("st", 0.5, 2.0, initial=1.0), sources.ramp("rp", 0.2, 3.0), tbl,
             sources.crash_pulse("cp", 0.2, 0.4, -300.0), sources.noise("nz", 0.1, 0.1, seed=7),
             sources.noise("nz2", 0.1, 0.1, seed=7)]
    r = simulate(System(units), 2.0, 0.05)
    t = r.time
    np.testing.assert_array_equal(r["st.y"], np.where(t >= 0.5, 3.0, 1.0))
    np.testing.assert_allclose(r["rp.y"], 3.0 * np.maximum(t - 0.2, 0.0), atol=1e-12)
    np.testing.assert_allclose(r["tbl.a"], np.interp(t, [0, 1, 2], [0, 2, 2]), atol=1e-12)
    np.testing.assert_allclose(r["tbl.b"], np.interp(t, [0, 1, 2], [1, 1, 3]), atol=1e-12)
    assert r["cp.y"].min() == pytest.approx(-300.0) and r["cp.y"][t > 0.65].max() == 0.0
    np.testing.assert_array_equal(r["nz.y"], r["nz2.y"])  # same seed, same noise
    assert len(np.unique(r["nz.y"])) == 21  # held over 0.1 s samples
    assert abs(np.std(np.unique(r["nz.y"])) - 0.1) < 0.05
    with pytest.raises(InputError):
        sources.saturation("s", 1.0, 0.0)


def test_function_unit_output_must_be_finite():
    s = System([FunctionUnit("bad", lambda t, u: (np.inf if t >= 1.0 else 1.0 - t,))])
    with pytest.raises(Exception, match="'bad': output 'y' is not finite at t = 1.0 s") as e:
        simulate(s, 2.0, 0.5)
    assert list(e.value.result.time) == [0.0, 0.5]


@pytest.mark.parametrize("fixture", ["mass_fmu", "pendulum_state_fmu"])
def test_rollback_restores_an_fmu_exactly(request, fixture):
    """get_state, two steps, set_state, the same two steps: bit-identical outputs
    (C FMU, and pythonfmu with --handle-state)."""
    u = FmuUnit(request.getfixturevalue(fixture), "u", values={"x0": 1.0, "k": 3.0} if fixture == "mass_fmu" else {})
    assert u.can_rollback
    u.will_roll_back = True
    u.setup(0.0, 1.0, 0.1)
    u.do_step(0.0, 0.1)
    state = u.get_state()
    outs = []
    for _ in range(2):
        u.set_state(state)
        u.do_step(0.1, 0.1)
        u.do_step(0.2, 0.1)
        u.pull()
        outs.append(list(u.y[:len(u.outputs)]))
    u.free_state(state)
    u.terminate()
    assert outs[0] == outs[1] and outs[0][0] != 0.0
