"""#26.3 and #26.14: the native FMU's entry points against calls a careless or
hostile host makes.

* Value references of 2^31 and more (negative as a C ``int``) and just past
  the last variable are refused by every getter and setter, naming the
  reference, instead of reading heap memory with fmi2OK or writing past the
  arrays.
* The status getters and the other pointer arguments refuse NULL.
* The FMI 2 state machine (Co-Simulation and Model Exchange) refuses calls
  out of order with fmi2Error and a message naming the call and the state:
  doStep before initialization, a set after terminate, entering
  initialization twice, Model Exchange calls in the wrong mode or on a
  co-simulation instance; a failed step leaves the instance in the error
  state until a saved state is restored.

The host here is ctypes on the FMU's binary, so that the calls are exactly
those written (fmpy's wrappers would check some arguments first).
"""
from __future__ import annotations

import ctypes as C

import numpy as np
import pytest

from .ctypes_hosts import CS, ERROR, ME, OK, EventInfo


# ---------------------------------------------------------------- #26.3 value references
BAD_VRS = (2 ** 31, 2 ** 31 + 5, 2 ** 32 - 1)


@pytest.mark.parametrize("vr", BAD_VRS)
def test_a_value_reference_of_2_31_or_more_is_refused_by_get_and_set(vr, host):
    h = host()
    h.initialize()
    status, values = h.get([vr])
    assert status == ERROR and np.isnan(values[0])
    assert f"unknown value reference {vr}" in h.log[-1], h.log
    assert h.set([vr], [1.0]) == ERROR
    assert f"unknown value reference {vr}" in h.log[-1], h.log
    # the instance is intact: a step from the start gives the same outputs as a fresh one
    fresh = host()
    fresh.initialize()
    outs = [v.valueReference for v in h.md.modelVariables if v.causality == "output"]
    assert h.step(0.0, 0.01) == OK and fresh.step(0.0, 0.01) == OK
    assert h.get(outs) == fresh.get(outs)


def test_the_first_value_reference_past_the_last_variable_is_refused(host):
    h = host()
    h.initialize()
    last = max(v.valueReference for v in h.md.modelVariables)
    assert h.get([last])[0] == OK  # the last one (a state derivative) is a variable
    status, _ = h.get([last + 1])
    assert status == ERROR and f"unknown value reference {last + 1}" in h.log[-1]


def test_status_getters_refuse_a_null_value_pointer(host):
    h = host()
    h.initialize()
    assert h.step(0.0, 0.01) == OK
    for fn in ("fmi2GetStatus", "fmi2GetRealStatus", "fmi2GetIntegerStatus", "fmi2GetBooleanStatus",
               "fmi2GetStringStatus"):
        assert h(fn, 0, None) == ERROR, fn
        assert fn in h.log[-1] and "NULL" in h.log[-1], h.log[-1]
    t = C.c_double()
    assert h("fmi2GetRealStatus", 2, C.byref(t)) == OK and t.value == pytest.approx(0.01)
    for fn in ("fmi2GetStatus", "fmi2GetRealStatus"):
        getattr(h.lib, fn).restype = C.c_int
        assert getattr(h.lib, fn)(None, 0, C.byref(t)) == ERROR  # no instance


def test_null_arrays_and_null_states_are_refused(host):
    h = host()
    h.initialize()
    assert h("fmi2GetReal", (C.c_uint * 1)(0), C.c_size_t(1), None) == ERROR
    assert h("fmi2SetReal", None, C.c_size_t(1), (C.c_double * 1)(0.0)) == ERROR
    assert h("fmi2GetFMUstate", None) == ERROR
    assert h("fmi2SetFMUstate", None) == ERROR
    assert h("fmi2SerializedFMUstateSize", None, None) == ERROR


# ---------------------------------------------------------------- #26.14 state machine, CS
def _refused(h, call, *args, state):
    assert h(call, *args) == ERROR, call
    assert call in h.log[-1] and state in h.log[-1], h.log[-1]


def test_do_step_before_initialization_is_refused(host):
    h = host()
    _refused(h, "fmi2DoStep", C.c_double(0.0), C.c_double(0.01), 1, state="instantiated")
    h("fmi2EnterInitializationMode")
    _refused(h, "fmi2DoStep", C.c_double(0.0), C.c_double(0.01), 1, state="initialization mode")
    assert h("fmi2ExitInitializationMode") == OK and h.step(0.0, 0.01) == OK


def test_entering_initialization_twice_and_exiting_without_entering_are_refused(host):
    h = host()
    _refused(h, "fmi2ExitInitializationMode", state="instantiated")
    assert h("fmi2EnterInitializationMode") == OK
    _refused(h, "fmi2EnterInitializationMode", state="initialization mode")
    _refused(h, "fmi2SetupExperiment", 0, C.c_double(0.0), C.c_double(0.0), 0, C.c_double(0.0),
             state="initialization mode")
    assert h("fmi2ExitInitializationMode") == OK
    _refused(h, "fmi2EnterInitializationMode", state="step mode")


def test_values_after_terminate_are_refused_and_reads_still_work(host):
    h = host()
    h.initialize()
    tau = h.vr["tau[1]"]
    assert h.set([tau], [1.5]) == OK and h.step(0.0, 0.01) == OK
    assert h("fmi2Terminate") == OK
    assert h.set([tau], [2.0]) == ERROR and "fmi2SetReal" in h.log[-1] and "terminated" in h.log[-1]
    assert h.get([tau]) == (OK, [1.5])
    _refused(h, "fmi2DoStep", C.c_double(0.01), C.c_double(0.01), 1, state="terminated")
    _refused(h, "fmi2Terminate", state="terminated")
    assert h("fmi2Reset") == OK
    h.initialize()
    assert h.step(0.0, 0.01) == OK


def test_reads_before_initialization_are_refused(host):
    h = host()
    status, _ = h.get([h.vr["tau[1]"]])
    assert status == ERROR and "fmi2GetReal" in h.log[-1] and "instantiated" in h.log[-1]


def test_model_exchange_calls_on_a_co_simulation_instance_are_refused(host):
    h = host(CS)
    h.initialize()
    dx = (C.c_double * h.nx)()
    assert h("fmi2GetDerivatives", dx, C.c_size_t(h.nx)) == ERROR
    assert "fmi2GetDerivatives" in h.log[-1] and "model exchange" in h.log[-1], h.log[-1]
    assert h("fmi2NewDiscreteStates", C.byref(EventInfo())) == ERROR


def test_a_failed_step_leaves_the_error_state_only_by_a_restored_state(host):
    h = host()
    h.initialize()
    saved = C.c_void_p()
    assert h("fmi2GetFMUstate", C.byref(saved)) == OK
    outs = [v.valueReference for v in h.md.modelVariables if v.causality == "output"]
    before = h.get(outs)
    assert h.set([h.vr["tau[2]"]], [1e150]) == OK
    assert h.step(0.0, 0.01) == ERROR and "blown up" in h.log[-1]
    _refused(h, "fmi2DoStep", C.c_double(0.0), C.c_double(0.01), 1, state="error")
    assert h.get(outs) == before  # values can be read in the error state, and are those kept
    status = C.c_int()
    assert h("fmi2GetStatus", 0, C.byref(status)) == OK and status.value == ERROR
    assert h("fmi2SetFMUstate", saved) == OK
    assert h.step(0.0, 0.01) == OK  # the restored state has the input it had when saved
    assert h("fmi2FreeFMUstate", C.byref(saved)) == OK


# ---------------------------------------------------------------- #26.14 state machine, ME
def test_model_exchange_calls_out_of_their_mode_are_refused(host):
    h = host(ME)
    nx = h.nx
    x = (C.c_double * nx)()
    _refused(h, "fmi2SetContinuousStates", x, C.c_size_t(nx), state="instantiated")
    _refused(h, "fmi2NewDiscreteStates", C.byref(EventInfo()), state="instantiated")
    h.initialize()  # now in event mode
    _refused(h, "fmi2CompletedIntegratorStep", 1, C.byref(C.c_int()), C.byref(C.c_int()), state="event mode")
    _refused(h, "fmi2DoStep", C.c_double(0.0), C.c_double(0.01), 1, state="")
    assert "co-simulation" in h.log[-1]
    info = EventInfo()
    assert h("fmi2NewDiscreteStates", C.byref(info)) == OK and not info.newDiscreteStatesNeeded
    assert h("fmi2EnterContinuousTimeMode") == OK
    _refused(h, "fmi2NewDiscreteStates", C.byref(info), state="continuous-time mode")
    _refused(h, "fmi2EnterContinuousTimeMode", state="continuous-time mode")
    # parameters change in event mode only
    assert h.set([h.vr["arm_mass"]], [31.0]) == ERROR and "continuous-time mode" in h.log[-1]
    assert h("fmi2GetContinuousStates", x, C.c_size_t(nx)) == OK
    assert h("fmi2SetContinuousStates", x, C.c_size_t(nx - 1)) == ERROR and f"this FMU has {nx}" in h.log[-1]
    enter, stop = C.c_int(), C.c_int()
    assert h("fmi2CompletedIntegratorStep", 1, C.byref(enter), C.byref(stop)) == OK
    assert h("fmi2EnterEventMode") == OK
    assert h("fmi2Terminate") == OK
    _refused(h, "fmi2SetTime", C.c_double(0.1), state="terminated")


def test_derivatives_of_a_model_exchange_instance_are_the_python_plants(host):
    """fmi2GetDerivatives at a state the host sets equals the Python plant's derivatives."""
    from mbfmu.plant.library import load_plant
    plant = load_plant("rigid_arm")
    h = host(ME)
    h.initialize()
    assert h("fmi2EnterContinuousTimeMode") == OK
    rng = np.random.default_rng(3)
    u = rng.normal(size=len(plant.inputs))
    assert h.set([h.vr[s.name] for s in plant.inputs], list(u)) == OK
    for _ in range(3):
        x = rng.normal(size=h.nx)
        assert h("fmi2SetContinuousStates", (C.c_double * h.nx)(*x), C.c_size_t(h.nx)) == OK
        dx = (C.c_double * h.nx)()
        assert h("fmi2GetDerivatives", dx, C.c_size_t(h.nx)) == OK
        expected = plant.derivatives(0.0, x, u)
        np.testing.assert_allclose(list(dx), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_fmi3_calls_out_of_order_are_refused(host3):
    h = host3()
    assert h.step(0.0, 0.01) == ERROR and "fmi3DoStep" in h.log[-1] and "instantiated" in h.log[-1]
    assert h("fmi3ExitInitializationMode") == ERROR
    assert h.init() == OK
    assert h.init() == ERROR and "initialization mode" in h.log[-1]
    assert h("fmi3ExitInitializationMode") == OK and h.step(0.0, 0.01) == OK
    assert h("fmi3Terminate") == OK
    assert h.set_tau([1.0, 2.0, 3.0]) == ERROR and "terminated" in h.log[-1]


def test_fmi3_value_references_and_array_sizes_are_checked(host3):
    h = host3()
    assert h.init() == OK
    values = (C.c_double * 3)()
    for vr in BAD_VRS:
        assert h("fmi3GetFloat64", (C.c_uint32 * 1)(vr), C.c_size_t(1), values, C.c_size_t(1)) == ERROR
        assert f"unknown value reference {vr}" in h.log[-1]
    assert h.set_tau([1.0, 2.0]) == ERROR and "2 values given for variables of 3 values" in h.log[-1]
    assert h.set_tau([1.0, 2.0, 3.0]) == OK
    assert h("fmi3GetFloat64", (C.c_uint32 * 1)(h.vr["tau"]), C.c_size_t(1), values, C.c_size_t(3)) == OK
    assert list(values) == [1.0, 2.0, 3.0]
    n = (C.c_uint64 * 1)(4)
    assert h("fmi3SetUInt64", (C.c_uint32 * 1)(h.vr["n_tau"]), C.c_size_t(1), n, C.c_size_t(1)) == ERROR
    assert "configuration mode" in h.log[-1]  # structural parameters change in configuration mode only
    assert h("fmi3GetFloat64", (C.c_uint32 * 1)(h.vr["n_tau"]), C.c_size_t(1), values, C.c_size_t(1)) == ERROR
    assert "UInt64" in h.log[-1]
