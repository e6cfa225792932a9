"""``simulate``'s options as one frozen, keyword-only value: the old keywords
give bit-identical results through :class:`SimulationOptions`, and each run
is checked against an independent computation (fmpy's own loop, the analytic
two-mass solution, the arm's static equilibrium)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fmpy import simulate_fmu

from mbfmu.cosim import FmuUnit, Gain, Offset, SimulationOptions, Sum, System, simulate
from mbfmu.errors import InputError
from tooling import reference_fmu

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2, monolithic_two_mass


def _same(a, b) -> None:
    """Bit-identical results: the same columns, the same numbers, the same step counts."""
    assert a.names == b.names
    for n in a.names:
        assert np.array_equal(a[n], b[n]), n
    assert (a.summary.steps, a.summary.rejected_steps, a.summary.loop_iterations) == \
        (b.summary.steps, b.summary.rejected_steps, b.summary.loop_iterations)


def _both(make, stop, step, **keywords):
    """The run with the old keywords and the run with the same values as options."""
    old = simulate(make(), stop, step, **keywords)
    new = simulate(make(), stop, step, options=SimulationOptions(**keywords))
    _same(old, new)
    return new


def _two_mass(fmu):
    return System([FmuUnit(fmu, "a", values=dict(m=M1, k=K1, d=D1, x0=1.0)),
                   FmuUnit(fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


def _two_mass_error(r) -> float:
    got = np.column_stack([r["a.x"], r["a.v"], r["b.x"], r["b.v"]])
    return float(np.max(np.abs(got - monolithic_two_mass(r.time))))


@pytest.mark.parametrize("model", ["VanDerPol", "Dahlquist"])
def test_reference_fmus_through_options_match_fmpy(model):
    path = reference_fmu("fmi2", model)
    r = _both(lambda: System([FmuUnit(path, "m")]), 2.0, 0.01, record="all", progress=False)
    ref = simulate_fmu(str(path), stop_time=2.0, output_interval=0.01)
    for name in ref.dtype.names[1:]:
        np.testing.assert_allclose(r[f"m.{name}"], ref[name], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("keywords", [
    dict(adaptive=True, extrapolation=1, rtol=1e-4, atol=1e-4),
    dict(adaptive=True, rtol=1e-5, atol=1e-5, min_step=1e-7, max_step=0.1, record=["b.x", "a.x", "a.v", "b.v"]),
    dict(iterative=True, loop_tolerance=1e-13),
    dict(extrapolation=2),
    dict(algorithm="gauss-seidel", order=["b", "a"]),
], ids=["adaptive-1", "adaptive-2-bounded", "iterative", "extrapolated", "gauss-seidel"])
def test_two_mass_runs_are_bit_identical_and_near_the_analytic_solution(mass_fmu, keywords):
    step = 1e-3 if keywords.get("algorithm") == "gauss-seidel" else 1e-2  # first order: a finer step
    r = _both(lambda: _two_mass(mass_fmu), 1.0, step, progress=False, **keywords)
    assert r.time[-1] == 1.0
    assert _two_mass_error(r) < 2e-2  # the same physics as the monolithic solution
    if keywords.get("adaptive"):
        assert r.summary.rejected_steps > 0 or len(r) != 101  # the step really adapted


@pytest.fixture(scope="module")
def arm_fmu(native_fmus):
    return native_fmus("rigid_arm", platforms=("linux64",))


def test_native_arm_with_a_pd_controller_is_bit_identical_and_settles(arm_fmu):
    """A native plant FMU under a block-diagram PD with gravity feed-forward: the same
    run both ways, and the arm settles at its set-point (the feed-forward holds it there)."""
    import mbfmu
    from mbfmu.dynamics import gravity_torques
    ref = [0.3, -0.2, 0.1]
    u0 = gravity_torques(mbfmu.load_plant("rigid_arm").model, ref)

    def make():
        return System([FmuUnit(arm_fmu, name="arm"), Sum("err", "+-", n=3, inputs=("ref", "q"), unit="rad"),
                       Gain("kp", 400.0, n=3, unit_in="rad", unit_out="N.m"),
                       Gain("kd", -150.0, n=3, unit_in="rad/s", unit_out="N.m"),
                       Sum("pd", "++", n=3, inputs=("p", "d"), unit="N.m"), Offset("u", u0, unit="N.m")],
                      [("arm.q", "err.q"), ("err.y", "kp.u"), ("arm.v", "kd.u"), ("kp.y", "pd.p"),
                       ("kd.y", "pd.d"), ("pd.y", "u.u"), ("u.y", "arm.tau")],
                      values={f"err.ref[{i}]": r for i, r in enumerate(ref, 1)})
    for keywords in (dict(), dict(extrapolation=1, record="all")):
        r = _both(make, 3.0, 1e-3, progress=False, **keywords)
        q = np.column_stack([r[f"arm.q[{i}]"] for i in (1, 2, 3)])
        np.testing.assert_allclose(q[-1], ref, atol=1e-3)


def test_keywords_replace_the_fields_of_options(mass_fmu):
    base = SimulationOptions(adaptive=True, rtol=1e-3, atol=1e-3, progress=False)
    mixed = simulate(_two_mass(mass_fmu), 1.0, 0.01, options=base, rtol=1e-6, atol=1e-6)
    _same(mixed, simulate(_two_mass(mass_fmu), 1.0, 0.01, options=dataclasses.replace(base, rtol=1e-6, atol=1e-6)))
    loose = simulate(_two_mass(mass_fmu), 1.0, 0.01, options=base)
    assert mixed.summary.steps > loose.summary.steps  # the tighter keyword tolerance was used


def test_options_are_keyword_only_frozen_and_checked_when_made():
    with pytest.raises(TypeError):
        SimulationOptions("gauss-seidel")  # type: ignore[misc]
    opts = SimulationOptions(rtol=1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.rtol = 1.0  # type: ignore[misc]
    for bad, word in [(dict(rtol=-1.0), "rtol"), (dict(algorithm="newton"), "algorithm"),
                      (dict(extrapolation=3), "extrapolation"), (dict(threads=0), "threads"),
                      (dict(adaptive=True, iterative=True), "iterative"), (dict(start_time=float("nan")), "start_time"),
                      (dict(rollback_tolerance=2.0), "rollback_tolerance"), (dict(realtime=-1.0), "realtime")]:
        with pytest.raises(InputError, match=word) as info:
            SimulationOptions(**bad)
        assert "\n" not in str(info.value)
    assert SimulationOptions(adaptive=True).resolved().extrapolation == 2
    assert SimulationOptions().resolved().extrapolation == 0


def test_unknown_keywords_and_wrong_options_are_one_line_errors(mass_fmu):
    with pytest.raises(InputError, match=r"unknown simulate options rtl .*rtol") as info:
        simulate(_two_mass(mass_fmu), 1.0, 0.01, rtl=1e-3)
    assert "\n" not in str(info.value)
    with pytest.raises(InputError, match="SimulationOptions"):
        simulate(_two_mass(mass_fmu), 1.0, 0.01, options={"rtol": 1e-3})
