"""The compiled fixed-step loop (mbfmu.cosim.master.fast_loop) gives the Python loop's
results bit for bit, and is taken only where its semantics are the same."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim.master import fast_loop
from mbfmu.cosim import simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.isolation.proxy import IsolatedUnit, isolate
from mbfmu.cosim.system import System
from mbfmu.errors import CosimError
from tooling import reference_fmu

from .loop_comparison import bitwise_equal, both_loops
from .systems import compiled_and_python_runs, master_loop_reason


def _chain(mass_fmu, fail_time: float = 1e300) -> System:
    """Three masses: a and b coupled (coupling force with direct feedthrough),
    c pulled by b: pre-pulls, re-pulls and an unconnected input (c.F)."""
    a = FmuUnit(mass_fmu, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1))
    b = FmuUnit(mass_fmu, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5, fail_time=fail_time))
    c = FmuUnit(mass_fmu, "c", values=dict(m=0.5, k=5.0, kc=8.0, nsub=3))
    return System([a, b, c], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F"), ("b.x", "c.xin"),
                              ("b.v", "c.vin")])


@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_compiled_loop_equals_python_loop_bit_for_bit(mass_fmu, monkeypatch, algorithm):
    (fast, slow), calls = compiled_and_python_runs(lambda: _chain(mass_fmu), monkeypatch, stop_time=2.0, step=1e-3,
                                algorithm=algorithm, order=["b", "a", "c"] if algorithm == "gauss-seidel" else None)
    assert calls == 1
    assert fast.names == slow.names and np.array_equal(fast.data, slow.data)
    assert fast.summary.steps == slow.summary.steps == 2000 and fast.time[-1] == 2.0


def test_failure_in_the_compiled_loop_keeps_the_rows_and_names_the_unit(mass_fmu, monkeypatch):
    (fast, slow), calls = compiled_and_python_runs(lambda: _chain(mass_fmu, fail_time=0.5), monkeypatch,
                                stop_time=2.0, step=1e-2)
    assert calls == 1
    assert isinstance(fast, CosimError) and isinstance(slow, CosimError)
    assert "unit 'b'" in str(fast) and "fmi2DoStep" in str(fast)
    assert np.array_equal(fast.result.data, slow.result.data) and len(fast.result) > 1


@pytest.mark.parametrize("variant", ["adaptive"])  # adaptive: input extrapolation 2 by default
def test_other_runs_keep_the_python_loop(mass_fmu, monkeypatch, variant):
    def make():
        return _chain(mass_fmu)
    kw = {"adaptive": {"adaptive": True}}.get(variant, {})
    (fast, slow), calls = compiled_and_python_runs(make, monkeypatch, stop_time=0.5, step=1e-2, **kw)
    assert calls == 0 and np.array_equal(fast.data, slow.data)


@pytest.mark.parametrize("record", [["a.x"], ["c.v", "a.x"], ["b.Fc", "c.x", "c.F", "b.m"], "all"])
def test_any_recorded_subset_takes_the_compiled_loop_and_equals_full_recording(mass_fmu, monkeypatch, record):
    """Recording a subset (outputs in any order, inputs, parameters, locals: what is
    not an output is read from the FMU as the Python loop reads it) takes the
    compiled loop, gives the Python loop's rows bit for bit, and each recorded
    output equals its column of the full recording."""
    assert master_loop_reason(_chain(mass_fmu), record) is None
    (fast, slow), calls = compiled_and_python_runs(lambda: _chain(mass_fmu), monkeypatch, stop_time=1.0, step=1e-3, record=record)
    assert calls == 1
    assert fast.names == slow.names and np.array_equal(fast.data, slow.data)
    full = simulate(_chain(mass_fmu), 1.0, 1e-3, progress=False)
    outputs = [n for n in fast.names[1:] if n in full.names]
    assert outputs and all(np.array_equal(fast[n], full[n]) for n in ["time", *outputs])
    if record == "all":  # an input read from the FMU is what its source sent
        assert np.array_equal(fast["c.xin"], full["b.x"]) and np.ptp(fast["c.xin"]) > 0.01


def test_non_finite_connected_output_that_is_not_recorded_stops_the_compiled_loop(mass_fmu, monkeypatch):
    """a (no mass) diverges at its first step; only c.x is recorded: the compiled
    loop checks the connected outputs it does not record, as the Python loop does."""
    def make():
        s = _chain(mass_fmu)
        s.units["a"].set("m", 0.0)
        return s
    (fast, slow), calls = compiled_and_python_runs(make, monkeypatch, stop_time=1.0, step=1e-2, record=["c.x"])
    assert calls == 1
    assert isinstance(fast, CosimError) and isinstance(slow, CosimError)
    assert str(fast) == str(slow) and "unit 'a'" in str(fast)
    assert np.array_equal(fast.result.data, slow.result.data) and len(fast.result) == 2


def _converting_ssp(mass_fmu, tmp_path):
    """a drives b through a.x (m) -> b.xin (declared in mm: converted, factor 1000)
    with a LinearTransformation (factor 0.002, offset 0.25) after the conversion,
    and a.v -> b.vin as it is; b.Fc feeds a.F back (direct feedthrough)."""
    from .ssp_files import mapping_archive, mapping_binding, parameter, with_units
    bmm = with_units(mass_fmu, tmp_path / "bmm.fmu", {"xin": "mm"}, {"mm": {"m": "1", "factor": "0.001"}})
    a = mapping_binding(parameter("x0", "Real", 1.0) + parameter("k", "Real", 10.0))
    b = mapping_binding(parameter("m", "Real", 2.0) + parameter("kc", "Real", 30.0) + parameter("dc", "Real", 0.5))
    body = f"""<ssd:Elements>
      <ssd:Component name="a" source="resources/mass.fmu">{a}</ssd:Component>
      <ssd:Component name="b" source="resources/bmm.fmu">{b}</ssd:Component></ssd:Elements>
      <ssd:Connections><ssd:Connection startElement="a" startConnector="x" endElement="b" endConnector="xin">
        <ssc:LinearTransformation factor="0.002" offset="0.25"/></ssd:Connection>
        <ssd:Connection startElement="a" startConnector="v" endElement="b" endConnector="vin"/>
        <ssd:Connection startElement="b" startConnector="Fc" endElement="a" endConnector="F"/></ssd:Connections>"""
    return mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu, "resources/bmm.fmu": bmm})


@pytest.mark.parametrize("kw", [{}, {"algorithm": "gauss-seidel"}, {"extrapolation": 2}])
def test_unit_conversion_and_linear_transformation_run_compiled(mass_fmu, monkeypatch, tmp_path, kw):
    """An SSP whose connection converts units and applies a LinearTransformation runs
    in the compiled loop (conversion applied in C) and gives the Python loop's rows
    bit for bit; b.xin read from the FMU is 2 a.x + 0.25 (1000 a.x mm, then the
    transformation)."""
    from mbfmu.cosim import read_ssp
    ssp = _converting_ssp(mass_fmu, tmp_path)
    assert read_ssp(ssp).units["b"].input_conversion  # the connection converts
    assert master_loop_reason(read_ssp(ssp), **kw) is None
    (fast, slow), calls = compiled_and_python_runs(lambda: read_ssp(ssp), monkeypatch, stop_time=1.0, step=1e-3, record="all", **kw)
    assert calls == 1
    assert fast.names == slow.names and np.array_equal(fast.data, slow.data)
    if not kw:  # Jacobi: b holds the value sent at the exchange that recorded a.x
        np.testing.assert_allclose(fast["b.xin"], 2.0 * fast["a.x"] + 0.25, rtol=1e-15, atol=1e-15)
    assert np.ptp(fast["b.x"]) > 0.01


def test_adaptive_defaults_take_at_most_twice_the_steps_of_the_best_order(mass_fmu):
    """adaptive=True without an extrapolation order takes one whose error estimate
    means something: at most twice the steps of the best order, where order 0 (the
    fixed-step default) needs more than 100 times as many, and the answer agrees
    with a fine fixed-step run to the tolerance's order."""
    def run(**kw):
        return simulate(_chain(mass_fmu), 0.5, 1e-2, adaptive=True, progress=False, **kw)
    default = run()
    best = min(run(extrapolation=e).summary.steps for e in (1, 2))
    assert default.summary.steps <= 2 * best and default.meta["extrapolation"] == 2
    with pytest.raises(CosimError, match="adaptive stepping took"):
        run(extrapolation=0, max_steps=100 * default.summary.steps)
    fine = simulate(_chain(mass_fmu), 0.5, 1e-4, extrapolation=2, progress=False)
    for n in ("a.x", "b.x", "c.x"):
        assert abs(default[n][-1] - fine[n][-1]) < 1e-3, n


def test_simulate_verbose_names_the_loop_and_why(mass_fmu, capsys):
    """``mbfmu simulate -v`` says which loop ran, and why a run took the Python loop."""
    from mbfmu.cli import main
    assert main(["simulate", str(mass_fmu), "--stop-time", "0.1", "--step", "0.01", "-v"]) == 0
    assert "master loop: compiled (C)" in capsys.readouterr().out
    assert main(["simulate", str(mass_fmu), "--stop-time", "0.1", "--step", "0.01", "--iterative", "-v"]) == 0
    assert "master loop: Python (adaptive stepping and iterative coupling run in Python)" in capsys.readouterr().out
    assert main(["simulate", str(mass_fmu), "--stop-time", "0.1", "--step", "0.01"]) == 0
    assert "master loop" not in capsys.readouterr().out


def _gain_loop(gain_fmu, k1: float, k2: float) -> System:
    """y1 = k1 u1 + w1, y2 = k2 u2 + 1 with u1 = y2, u2 = y1 (an algebraic loop of two
    C FMUs), w1 = x0 of the Reference VanDerPol FMU: y1 = (k1 + x0) / (1 - k1 k2)."""
    return System([FmuUnit(reference_fmu("fmi2", "VanDerPol"), "m"),
                   FmuUnit(gain_fmu, "g1", values={"k": k1}), FmuUnit(gain_fmu, "g2", values={"k": k2, "b": 1.0})],
                  [("g1.y", "g2.u"), ("g2.y", "g1.u"), ("m.x0", "g1.w")])


@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
@pytest.mark.parametrize("k1,k2", [(0.5, 0.8), (-0.9, 0.9), (2.0, 1.5), (-3.0, 2.0)],
                         ids=["contracting", "alternating", "diverging-fixed-point", "strongly-diverging"])
def test_algebraic_loop_is_solved_in_c_as_in_the_python_loop(gain_fmu, monkeypatch, k1, k2, algorithm):
    """The loop is solved in the compiled loop with the Python loop's iteration
    (fixed-point sweeps, Newton when they do not contract) and tolerance: the same
    rows (bit for bit where the sweeps converge; Newton's linear solve is LAPACK's in
    Python, to 1e-12) and the same iteration count, on the closed-form solution."""
    make = lambda: _gain_loop(gain_fmu, k1, k2)  # noqa: E731
    assert make().algebraic_loops() == [["g1.u", "g1.y", "g2.u", "g2.y"]]
    assert master_loop_reason(make(), algorithm=algorithm) is None
    (fast, slow), calls = compiled_and_python_runs(make, monkeypatch, stop_time=1.0, step=1e-2, algorithm=algorithm)
    assert calls == 1 and fast.names == slow.names
    assert fast.summary.loop_iterations == slow.summary.loop_iterations >= len(fast)
    newton = abs(k1 * k2) > 1
    for n in fast.names:
        if newton:
            np.testing.assert_allclose(fast[n], slow[n], rtol=1e-12, atol=1e-12)
        else:
            assert np.array_equal(fast[n], slow[n]), n
    y1 = (k1 + fast["m.x0"]) / (1 - k1 * k2)
    np.testing.assert_allclose(fast["g1.y"], y1, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fast["g2.y"], k2 * y1 + 1.0, rtol=1e-9, atol=1e-9)


def test_singular_algebraic_loop_in_c_is_refused_as_in_python(gain_fmu, monkeypatch):
    """y1 = y1 + 1 + x0 has no solution: the compiled loop names the loop, as the Python loop does."""
    (fast, slow), calls = compiled_and_python_runs(lambda: _gain_loop(gain_fmu, 1.0, 1.0), monkeypatch, stop_time=1.0, step=1e-1)
    # the initial exchange (in Python in both runs) already meets the singular loop
    assert isinstance(fast, CosimError) and str(fast) == str(slow) and "g1.y -> g2.u" in str(fast)


@pytest.mark.parametrize("compiled", [True, False])
def test_converted_input_gets_converted_derivatives(mass_fmu, monkeypatch, tmp_path, compiled):
    """a.x (m) drives b.xin declared in mm, with input extrapolation: b interpolates
    its inputs from the value and derivatives it is sent, so the derivatives must be
    converted too. The same run without conversion, a scaled by 1000 (x0 = 1000 m: a
    linear, unforced mass), must give the same b."""
    from mbfmu.cosim import read_ssp
    from .ssp_files import mapping_archive, mapping_binding, parameter, with_units
    monkeypatch.setattr(fast_loop, "ENABLED", compiled)
    bmm = with_units(mass_fmu, tmp_path / "bmm.fmu", {"xin": "mm"}, {"mm": {"m": "1", "factor": "0.001"}})
    a = mapping_binding(parameter("x0", "Real", 1.0) + parameter("k", "Real", 10.0))
    b = mapping_binding(parameter("m", "Real", 2.0) + parameter("kc", "Real", 30.0))
    body = f"""<ssd:Elements>
      <ssd:Component name="a" source="resources/mass.fmu">{a}</ssd:Component>
      <ssd:Component name="b" source="resources/bmm.fmu">{b}</ssd:Component></ssd:Elements>
      <ssd:Connections><ssd:Connection startElement="a" startConnector="x" endElement="b" endConnector="xin"/>
      </ssd:Connections>"""
    converted = read_ssp(mapping_archive(tmp_path, body, {"resources/mass.fmu": mass_fmu, "resources/bmm.fmu": bmm}))
    scaled = System([FmuUnit(mass_fmu, "a", values=dict(x0=1000.0, k=10.0)),
                     FmuUnit(mass_fmu, "b", values=dict(m=2.0, kc=30.0))], [("a.x", "b.xin")])
    r1 = simulate(converted, 1.0, 0.05, extrapolation=1, progress=False)
    r2 = simulate(scaled, 1.0, 0.05, extrapolation=1, progress=False)
    np.testing.assert_allclose(r1["b.x"], r2["b.x"], rtol=1e-12, atol=1e-9)
    assert np.ptp(r1["b.x"]) > 100.0


def test_the_shipped_example_system_runs_compiled_and_equals_the_python_loop(monkeypatch):
    """examples/system.ssp (the README's arm under a PID FMU) takes the compiled loop
    and gives the Python loop's rows bit for bit."""
    from pathlib import Path

    from mbfmu.cosim import read_ssp
    ssp = Path(__file__).resolve().parents[2] / "examples" / "system.ssp"
    assert master_loop_reason(read_ssp(ssp)) is None
    (fast, slow), calls = compiled_and_python_runs(lambda: read_ssp(ssp), monkeypatch, stop_time=1.0, step=1e-2)
    assert calls == 1 and fast.names == slow.names and np.array_equal(fast.data, slow.data)
    assert "python_loop" not in fast.meta and "MBFMU_PYTHON_LOOP" in slow.meta["python_loop"]


@pytest.mark.parametrize("extrapolation", [0, 2])
def test_isolated_unit_that_interpolates_inputs_keeps_the_compiled_loop(mass_fmu, monkeypatch, extrapolation):
    """The coupled mass b in a worker process (it interpolates its inputs: C sends the
    extrapolated inputs and their first and second derivatives through the proxy's
    ``push`` and ``push_derivatives``, which the FMU integrates over the step): the
    Python loop's results bit for bit, every other unit compiled."""
    def make():
        s = _chain(mass_fmu)
        s.units["b"] = isolate(s.units["b"], 30.0)
        return s
    (fast, fast_sys), (slow, _) = both_loops(make, monkeypatch, 0.5, 1e-2, extrapolation=extrapolation)
    assert isinstance(fast_sys.units["b"], IsolatedUnit) and fast_sys.units["b"].can_interpolate_inputs
    bitwise_equal(fast, slow)
