"""The master's parts, each against something independent of it: recording
(:mod:`mbfmu.cosim.master.recorded`), the fixed-step loop
(:mod:`mbfmu.cosim.master.fixed`), the adaptive loop
(:mod:`mbfmu.cosim.master.adaptive`) and the iterative step
(:mod:`mbfmu.cosim.master.iterative`). The hand-written reference loops of
``test_master_reference.py`` and the convergence orders of
``test_convergence.py`` and ``test_multirate_adaptive.py`` test them too."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, SimulationOptions, System, simulate
from mbfmu.cosim.master import fast_loop
from mbfmu.cosim.master.run import _Master
from mbfmu.cosim.master.recorded import recorded_variables
from mbfmu.errors import CosimError, InputError

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2, monolithic_two_mass


def _two_mass(fmu):
    return System([FmuUnit(fmu, "a", values=dict(m=M1, k=K1, d=D1, x0=1.0)),
                   FmuUnit(fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


def _error(r) -> float:
    got = np.column_stack([r["a.x"], r["a.v"], r["b.x"], r["b.v"]])
    return float(np.max(np.abs(got - monolithic_two_mass(r.time))))


# -- recording ----------------------------------------------------------------------------------
def test_recording_groups_columns_by_unit_in_order_of_first_appearance(mass_fmu):
    system = _two_mass(mass_fmu)
    pairs = recorded_variables(system, ["b.x", "a.x", "b.v"])
    assert [(u.name, v) for u, v in pairs] == [("b", "x"), ("a", "x"), ("b", "v")]
    master = _Master(system, 0.01, SimulationOptions(), ["b.x", "a.x", "b.v"])
    assert master.names == ["time", "b.x", "b.v", "a.x"]  # one getter call per unit
    r = simulate(_two_mass(mass_fmu), 0.1, 0.01, record=["b.x", "a.x", "b.v"])
    full = simulate(_two_mass(mass_fmu), 0.1, 0.01)
    for name in ("b.x", "a.x", "b.v"):  # each column holds its own variable
        assert np.array_equal(r[name], full[name])
    with pytest.raises(InputError, match="cannot record unknown variables: a.nope") as info:
        recorded_variables(system, ["a.nope"])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("compiled", [True, False])
def test_recording_stops_a_run_at_a_non_finite_value_naming_unit_variable_and_time(mass_fmu, monkeypatch, compiled):
    """A mass of 0 kg has no defined acceleration: its position is NaN after the first step."""
    monkeypatch.setattr(fast_loop, "ENABLED", compiled)
    massless = dict(m=0.0, k=1.0, x0=1.0)
    with pytest.raises(CosimError, match=r"unit 'a': 'x' is nan at t = 0\.01 s \(pass allow_nan=True") as info:
        simulate(System([FmuUnit(mass_fmu, "a", values=massless)]), 0.1, 0.01)
    assert "\n" not in str(info.value)
    kept = info.value.result
    assert kept.summary.status == "failed" and list(kept.time) == [0.0, 0.01]  # the rows up to the failure
    assert kept["a.x"][0] == 1.0 and math.isnan(kept["a.x"][1])
    through = simulate(System([FmuUnit(mass_fmu, "a", values=massless)]), 0.1, 0.01, allow_nan=True)
    assert through.time[-1] == 0.1 and np.isnan(through["a.x"][-1])


# -- fixed-step loop ----------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_fixed_loop_in_python_equals_the_compiled_loop_and_counts_its_steps(mass_fmu, monkeypatch, algorithm):
    compiled = simulate(_two_mass(mass_fmu), 0.3, 0.1 / 3, algorithm=algorithm)
    assert "python_loop" not in compiled.meta
    monkeypatch.setattr(fast_loop, "ENABLED", False)
    python = simulate(_two_mass(mass_fmu), 0.3, 0.1 / 3, algorithm=algorithm)
    assert "python_loop" in python.meta
    for name in compiled.names:
        assert np.array_equal(python[name], compiled[name]), name
    assert python.summary.steps == 9 and python.time[-1] == 0.3  # counted, ending at the stop time exactly
    assert np.array_equal(python.time, np.array([k * 0.3 / 9 for k in range(10)]))


# -- adaptive loop ------------------------------------------------------------------------------
def test_adaptive_loop_holds_its_tolerance_and_its_step_size_rule(mass_fmu):
    r = simulate(_two_mass(mass_fmu), 2.0, 0.05, adaptive=True, rtol=1e-5, atol=1e-5)
    h = np.diff(r.time)
    assert r.time[-1] == 2.0 and np.all(h > 0)
    assert r.summary.rejected_steps > 0  # the 0.05 s first step is too large: rolled back
    grow = h[1:-1] / h[:-2]  # the last step is cut to end at the stop time
    assert grow.max() <= 5.0 + 1e-12 and grow.min() >= 0.2 * 0.5 - 1e-12  # [0.2, 5] x, halved after a rejection
    assert _error(r) < 1e-3  # the analytic solution, within a small multiple of the tolerance


# -- iterative step -----------------------------------------------------------------------------
def test_iterative_step_iterates_to_consistency_and_beats_explicit_jacobi(mass_fmu):
    explicit = simulate(_two_mass(mass_fmu), 1.0, 0.02)
    implicit = simulate(_two_mass(mass_fmu), 1.0, 0.02, iterative=True)
    assert implicit.summary.loop_iterations >= 2 * implicit.summary.steps  # every step repeated at least once
    assert _error(implicit) < 0.2 * _error(explicit)  # second order against first
    with pytest.raises(CosimError, match="did not converge in 2 iterations"):
        simulate(_two_mass(mass_fmu), 1.0, 0.02, iterative=True, loop_max_iterations=2, loop_tolerance=1e-15)
