"""The compiled loop runs FMI 3.0 units (Float64/32, integers, Boolean, String by
callback, arrays), mixed FMI 2 + FMI 3 systems, and Jacobi with input
extrapolation of order 1 and 2 and multi-rate units, giving the Python loop's
results bit for bit (the Python loop is the independent reference: its
semantics are checked against plain loops and fmpy elsewhere)."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim.master import fast_loop
from mbfmu.cosim import simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.system import System
from mbfmu.errors import CosimError
from tooling import reference_fmu

from .systems import compiled_and_python_runs, master_loop_reason


def _same(fast, slow):
    assert fast.names == slow.names
    for n in fast.names:
        assert np.array_equal(fast[n], slow[n]), n


@pytest.mark.parametrize("model", ["VanDerPol", "Dahlquist", "BouncingBall"])
def test_fmi3_reference_fmu_in_c_equals_python_loop(model, monkeypatch):
    (fast, slow), calls = compiled_and_python_runs(lambda: System([FmuUnit(reference_fmu("fmi3", model), "m")]), monkeypatch,
                                stop_time=3.0, step=1e-3)
    assert calls == 1
    _same(fast, slow)
    assert fast.summary.steps == 3000 and fast.time[-1] == 3.0
    # and the FMU really moved (a frozen unit would pass the comparison too)
    col = fast.data[fast.names[1]]
    assert np.ptp(col) > 0.1


def _mixed(mass_fmu) -> System:
    """FMI 3 VanDerPol, Stair and Dahlquist feed an FMI 3 Feedthrough (Float64,
    Float32, Int8, Int32, UInt64 inputs; String by callback), which feeds an
    FMI 2 Feedthrough (Real, Integer, Boolean, String), which drives an FMI 2 mass whose
    position, with VanDerPol and Dahlquist, is the input array u of an FMI 3
    StateSpace; BouncingBall (events inside its doStep) runs beside them."""
    ref3 = lambda m: reference_fmu("fmi3", m)  # noqa: E731
    units = [FmuUnit(ref3("VanDerPol"), "vdp"), FmuUnit(ref3("Stair"), "stair"), FmuUnit(ref3("Dahlquist"), "dq"),
             FmuUnit(ref3("Feedthrough"), "ft3", values={"Boolean_input": True, "String_input": "fmi3"}),
             FmuUnit(reference_fmu("fmi2", "Feedthrough"), "ft2"),
             FmuUnit(mass_fmu, "mass", values=dict(m=1.0, k=10.0, x0=0.2)),
             FmuUnit(ref3("StateSpace"), "ss"), FmuUnit(ref3("BouncingBall"), "bb")]
    conns = [("vdp.x0", "ft3.Float64_continuous_input"), ("vdp.x1", "ft3.Float32_continuous_input"),
             ("stair.counter", "ft3.Int32_input"), ("stair.counter", "ft3.Int8_input"),
             ("stair.counter", "ft3.UInt64_input"),
             ("ft3.Float64_continuous_output", "ft2.Float64_continuous_input"),
             ("ft3.Int32_output", "ft2.Int32_input"), ("ft3.Boolean_output", "ft2.Boolean_input"),
             ("ft3.String_output", "ft2.String_input"),
             ("ft2.Float64_continuous_output", "mass.F"),
             ("mass.x", "ss.u[1]"), ("vdp.x1", "ss.u[2]"), ("dq.x", "ss.u[3]")]
    return System(units, conns)


@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_mixed_fmi2_fmi3_system_in_c_equals_python_loop(mass_fmu, monkeypatch, algorithm):
    order = ["vdp", "stair", "dq", "ft3", "ft2", "mass", "ss", "bb"] if algorithm == "gauss-seidel" else None
    (fast, slow), calls = compiled_and_python_runs(lambda: _mixed(mass_fmu), monkeypatch, stop_time=4.0, step=1e-2,
                                algorithm=algorithm, order=order)
    assert calls == 1
    _same(fast, slow)
    # the values crossed every type on the way (Stair counts seconds: Int32, Int8, UInt64)
    assert list(np.unique(fast["ft3.Int8_output"])) == [1, 2, 3, 4, 5]
    assert np.array_equal(fast["ft3.UInt64_output"], fast["ft3.Int32_output"])
    assert fast["ft2.Boolean_output"][-1] and set(fast["ft2.String_output"]) == {"fmi3"}
    assert np.ptp(fast["ss.y[1]"]) > 0.01 and np.ptp(fast["mass.x"]) > 0.01


@pytest.mark.parametrize("order", [1, 2])
def test_extrapolation_in_c_equals_python_loop(mass_fmu, monkeypatch, order):
    """Mass FMUs (canInterpolateInputs: point values and input derivatives; rollback:
    the second-order start-up step) coupled with FMI 3 units (mean over the step)."""
    def make():
        s = _mixed(mass_fmu)
        s.add(FmuUnit(mass_fmu, "m2", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5, nsub=2)))
        s.connect("mass.x", "m2.xin")
        s.connect("mass.v", "m2.vin")
        s.connect("vdp.x0", "m2.F")
        return s
    (fast, slow), calls = compiled_and_python_runs(make, monkeypatch, stop_time=2.0, step=1e-2, extrapolation=order)
    assert calls == 1
    _same(fast, slow)
    # extrapolation changed the coupled result (the inputs really were extrapolated)
    (zero, _), _ = compiled_and_python_runs(make, monkeypatch, stop_time=2.0, step=1e-2)
    assert not np.array_equal(fast["m2.x"], zero["m2.x"])


def test_extrapolation_with_rollback_startup_and_multirate_in_c(mass_fmu, monkeypatch):
    """All units roll back (the order-2 start-up trial step) and one steps at h / 4."""
    def make():
        a = FmuUnit(mass_fmu, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1))
        b = FmuUnit(mass_fmu, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5), step=2.5e-3)
        return System([a, b], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])
    for order in (0, 1, 2):
        (fast, slow), calls = compiled_and_python_runs(make, monkeypatch, stop_time=1.0, step=1e-2, extrapolation=order)
        assert calls == 1
        _same(fast, slow)


def test_fmi3_stop_request_in_c_ends_like_python_loop(monkeypatch):
    """FMI 3 Stair asks to stop (terminateSimulation) at t = 10 s, before its stop time."""
    (fast, slow), calls = compiled_and_python_runs(lambda: System([FmuUnit(reference_fmu("fmi3", "Stair"), "stair")]), monkeypatch,
                                stop_time=12.0, step=0.5)
    assert calls == 1
    a = fast.result if isinstance(fast, CosimError) else fast
    b = slow.result if isinstance(slow, CosimError) else slow
    assert type(fast) is type(slow)
    _same(a, b)
    assert a.time[-1] < 12.0 and a["stair.counter"][-1] == 10


# ft.UInt64_output holds 2**63 + 2**12, beyond the int64 column results give Integer
# variables (a limitation of mbfmu.cosim.typed, not of the loops)
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_integer_inputs_wrap_to_their_width_as_the_python_units_do(monkeypatch):
    """Integer values that do not fit the input's type are stored as ctypes stores
    them (the low bits of two's complement) in both loops: Int8 gets -300 as -44."""
    def make():
        ft = FmuUnit(reference_fmu("fmi3", "Feedthrough"), "ft",
                     values={"Int64_input": -300, "UInt64_input": 2**63 + 2**12, "Int32_input": 70000})
        ft2 = FmuUnit(reference_fmu("fmi3", "Feedthrough"), "ft2")
        return System([ft, ft2], [("ft.Int64_output", "ft2.Int8_input"), ("ft.Int64_output", "ft2.UInt16_input"),
                                  ("ft.UInt64_output", "ft2.Int64_input"), ("ft.UInt64_output", "ft2.Int32_input"),
                                  ("ft.Int32_output", "ft2.Int16_input")])
    (fast, slow), calls = compiled_and_python_runs(make, monkeypatch, stop_time=0.1, step=0.01)
    assert calls == 1
    _same(fast, slow)
    last = {n: int(fast[n][-1]) for n in ("ft2.Int8_output", "ft2.UInt16_output", "ft2.Int64_output",
                                          "ft2.Int32_output", "ft2.Int16_output")}
    assert last == {"ft2.Int8_output": -44, "ft2.UInt16_output": 65536 - 300, "ft2.Int64_output": -2**63 + 2**12,
                    "ft2.Int32_output": 4096, "ft2.Int16_output": 70000 - 65536}


def test_recorded_subset_with_inputs_and_parameters_in_c_equals_python_loop(mass_fmu, monkeypatch):
    """A recording of outputs, inputs and parameters of FMI 2 and FMI 3 units (the
    non-outputs read from the FMUs per type, Booleans as 0 or 1, an FMI 3 array
    element) takes the compiled loop and gives the Python loop's rows bit for bit."""
    record = ["ft3.Int8_input", "ft3.Boolean_output", "ft3.Float32_continuous_input", "ss.u[2]", "ss.y[1]",
              "ft2.Boolean_input", "ft2.Int32_input", "ft2.Float64_tunable_parameter", "mass.x", "vdp.x1", "vdp.mu"]
    (fast, slow), calls = compiled_and_python_runs(lambda: _mixed(mass_fmu), monkeypatch, stop_time=2.0, step=1e-2, record=record)
    assert calls == 1
    _same(fast, slow)
    assert np.ptp(fast["ft3.Int8_input"]) > 0 and np.ptp(fast["ss.u[2]"]) > 0.1
    full = simulate(_mixed(mass_fmu), 2.0, 1e-2, progress=False, record="all")
    for n in [n for n in record if n in full.names]:  # all but the parameters
        assert np.array_equal(fast[n], full[n]), n
    assert np.all(fast["ft2.Float64_tunable_parameter"] == 0.0) and np.all(fast["vdp.mu"] == 1.0)  # start values


def _feedthrough_chain(n: int = 8) -> System:
    """Stair and VanDerPol drive the first of ``n`` FMI 2 Reference Feedthrough FMUs,
    each passing every output (Real, Integer, Boolean, String, Enumeration) to the next."""
    ft = reference_fmu("fmi2", "Feedthrough")
    units = [FmuUnit(reference_fmu("fmi2", "VanDerPol"), "vdp"), FmuUnit(reference_fmu("fmi2", "Stair"), "stair")]
    units += [FmuUnit(ft, f"f{k}", values={"String_input": "text \u00e9 #1", "Boolean_input": True} if k == 0 else None)
              for k in range(n)]
    conns = [("vdp.x0", "f0.Float64_continuous_input"), ("stair.counter", "f0.Int32_input")]
    for k in range(1, n):
        conns += [(f"f{k - 1}.{t}_output", f"f{k}.{t}_input")
                  for t in ("Float64_continuous", "Float64_discrete", "Int32", "Boolean", "String", "Enumeration")]
    return System(units, conns)


@pytest.mark.parametrize("record,kw", [(None, {}), ("all", {}), (None, {"extrapolation": 1, "threads": 2})],
                         ids=["outputs", "all", "threads"])
def test_feedthrough_chain_with_strings_runs_compiled_and_equals_python_loop(monkeypatch, record, kw):
    """A chain of 8 Reference Feedthrough FMUs runs in the compiled loop with its
    String values read and set in C: the rows (text columns too) equal the Python
    loop's, the text reaches the end of the chain, and texts are interned in Python
    only when a value changes, not at every step (also when worker threads step
    the units and push the held String inputs)."""
    from mbfmu.cosim import typed
    calls = []
    real_code = typed.string_code
    monkeypatch.setattr(fast_loop, "string_code", lambda text: calls.append(text) or real_code(text))
    assert master_loop_reason(_feedthrough_chain(), record) is None
    (fast, slow), n = compiled_and_python_runs(_feedthrough_chain, monkeypatch, stop_time=2.0, step=1e-3, record=record, **kw)
    assert n == 1
    _same(fast, slow)
    assert set(fast["f7.String_output"]) == {"text \u00e9 #1"}
    assert np.array_equal(fast["f7.Int32_output"], fast["stair.counter"]) and np.ptp(fast["f7.Int32_output"]) > 0
    # each String slot read interns its text once in 2000 steps: the outputs, and with
    # "all" the inputs and outputs read again for the recording
    assert len(calls) == (8 if record is None else 3 * 8)
