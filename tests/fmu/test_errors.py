"""Bad inputs, bad parameters and integrator failure: FMI status + log, host alive."""
from __future__ import annotations

import math

import pytest
from fmpy.fmi1 import FMICallException


from .conftest import OWN_CASES
from .fmurun import initialize, instantiate, open_fmu

ERROR = 3


@pytest.fixture
def pendulum(build):
    op = open_fmu(build(OWN_CASES[0]))
    fmu = instantiate(op)
    initialize(fmu, op, {"tau": 1.0})
    yield op, fmu
    fmu.terminate()
    fmu.freeInstance()
    op.close()


def _status(call) -> int:
    with pytest.raises(FMICallException) as info:
        call()
    return info.value.status


@pytest.mark.parametrize("value, words", [(math.nan, "not finite"), (math.inf, "not finite"),
                                          (-math.inf, "not finite"), (99.0, "above its maximum 50.0 N.m")])
def test_bad_input_is_refused_with_error_status_and_message(pendulum, value, words):
    op, fmu = pendulum
    assert _status(lambda: fmu.setReal([op.vr["tau"]], [value])) == ERROR
    status, category, message = op.messages[-1]
    assert status == ERROR and category == "logStatusError"
    assert "'tau'" in message and words in message
    assert fmu.getReal([op.vr["tau"]]) == [1.0]   # the previous value is kept
    fmu.doStep(0.0, 0.01)                          # and the FMU keeps working
    assert all(math.isfinite(v) for v in fmu.getReal([op.vr["theta"], op.vr["omega"]]))


@pytest.mark.parametrize("name, value, words", [("length", -2.0, "below its minimum"),
                                                ("mass", math.nan, "not finite")])
def test_bad_parameter_is_refused_with_error_status_and_message(pendulum, name, value, words):
    op, fmu = pendulum
    before = fmu.getReal([op.vr[name]])
    assert _status(lambda: fmu.setReal([op.vr[name]], [value])) == ERROR
    assert words in op.messages[-1][2] and repr(name) in op.messages[-1][2]
    assert fmu.getReal([op.vr[name]]) == before


def test_outputs_cannot_be_set(pendulum):
    op, fmu = pendulum
    assert _status(lambda: fmu.setReal([op.vr["theta"]], [0.0])) == ERROR
    assert "'theta' cannot be set" in op.messages[-1][2]


def test_unknown_value_reference_is_an_error_not_a_crash(pendulum):
    op, fmu = pendulum
    assert _status(lambda: fmu.getReal([999])) == ERROR
    assert "unknown value reference 999" in op.messages[-1][2]
    assert math.isfinite(fmu.getReal([op.vr["theta"]])[0])


def test_integrator_failure_is_an_error_status_and_the_host_survives(blowup_fmu):
    op = open_fmu(blowup_fmu)
    fmu = instantiate(op)
    initialize(fmu, op)
    vr = [op.vr["x"]]
    t, h, failed_at = 0.0, 0.1, None
    for k in range(60):
        try:
            fmu.doStep(t, h)
        except FMICallException as exc:
            assert exc.status == ERROR
            failed_at = t
            break
        t += h
    assert failed_at is not None and failed_at >= 0.8, "dx/dt = x^2 from 1 must fail near t = 1 s"
    message = op.messages[-1][2]
    assert "step from t=" in message and "failed" in message
    last = fmu.getReal(vr)[0]
    assert math.isfinite(last) and last > 1.0     # the last good state is kept
    fmu.terminate()
    fmu.freeInstance()
    op.close()
