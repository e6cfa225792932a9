"""The FMU against the plant simulated directly in Python, and FMU state."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import simulate_fmu

from .fmurun import case_setup, initialize, instantiate, open_fmu, run


@pytest.fixture
def opened(case, build):
    op = open_fmu(build(case))
    yield op
    op.close()


def test_simulate_fmu_matches_direct_plant_simulation(case, build):
    plant, h, n, u = case_setup(case)
    _, _, Y = plant.simulate(stop_time=n * h, step=h, u=u)
    res = simulate_fmu(str(build(case)), stop_time=n * h, step_size=h, output_interval=h,
                       start_values={s.name: float(v) for s, v in zip(plant.inputs, u)})
    assert len(res) == n + 1
    got = np.column_stack([res[s.name] for s in plant.outputs])
    np.testing.assert_allclose(got, Y, rtol=0, atol=1e-10)
    assert np.any(np.abs(Y[-1] - Y[0]) > 1e-6), "the plant does not move: the comparison proves nothing"


def test_rollback_continues_bit_identically(case, opened):
    plant, h, n, u = case_setup(case)
    fmu = instantiate(opened)
    initialize(fmu, opened, {s.name: v for s, v in zip(plant.inputs, u)})
    k = min(10, n // 2)
    run(fmu, opened, k, h)
    state = fmu.getFMUstate()
    first = run(fmu, opened, k, h, t0=k * h)
    fmu.setFMUstate(state)
    again = run(fmu, opened, k, h, t0=k * h)
    fmu.freeFMUstate(state)
    assert np.array_equal(first, again)
    assert not np.array_equal(first[0], first[-1])
    fmu.terminate()
    fmu.freeInstance()


def test_serialized_state_restores_in_another_instance(case, opened):
    plant, h, n, u = case_setup(case)
    a = instantiate(opened, "a")
    initialize(a, opened, {s.name: v for s, v in zip(plant.inputs, u)})
    run(a, opened, 5, h)
    blob = a.serializeFMUstate(a.getFMUstate())
    expected = run(a, opened, 5, h, t0=5 * h)
    b = instantiate(opened, "b")
    initialize(b, opened)  # default inputs: the restored state must bring a's inputs
    b.setFMUstate(b.deSerializeFMUstate(blob))
    assert np.array_equal(run(b, opened, 5, h, t0=5 * h), expected)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_reset_and_reinitialization_repeat_the_run(case, opened):
    plant, h, n, u = case_setup(case)
    fmu = instantiate(opened)
    values = {s.name: v for s, v in zip(plant.inputs, u)}
    initialize(fmu, opened, values)
    first = run(fmu, opened, 10, h)
    fmu.reset()
    initialize(fmu, opened, values)
    assert np.array_equal(run(fmu, opened, 10, h), first)
    fmu.terminate()
    fmu.freeInstance()


def test_instances_in_one_process_are_independent(case, opened):
    plant, h, n, u = case_setup(case)
    vals = {s.name: v for s, v in zip(plant.inputs, u)}
    alone = instantiate(opened, "alone")
    initialize(alone, opened, vals)
    ref = run(alone, opened, 10, h)
    alone.terminate()
    alone.freeInstance()
    a, b = instantiate(opened, "a"), instantiate(opened, "b")
    initialize(a, opened, vals)
    initialize(b, opened, {s.name: s.start for s in plant.inputs})  # b differs from a
    outs = [v for v in opened.names("output")]
    vrs = [opened.vr[v] for v in outs]
    rows = [a.getReal(vrs)]
    for k in range(10):
        b.doStep(k * h, h)      # interleaved
        a.doStep(k * h, h)
        rows.append(a.getReal(vrs))
    assert np.array_equal(np.array(rows), ref)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_parameters_set_in_initialization_match_the_plant_built_with_them(build):
    from .conftest import OWN_CASES, Case
    base = OWN_CASES[0]
    params = {"length": 0.4, "mass": 3.0, "theta0": 1.2}
    op = open_fmu(build(base))
    try:
        fmu = instantiate(op)
        initialize(fmu, op, {**params, "tau": 0.5})
        got = run(fmu, op, 50, 0.01)
        plant = Case("x", base.spec, params).plant()
        _, _, Y = plant.simulate(stop_time=0.5, step=0.01, u=[0.5])
        np.testing.assert_allclose(got, Y, rtol=0, atol=1e-12)
        fmu.terminate()
        fmu.freeInstance()
    finally:
        op.close()


def test_feedthrough_output_sees_an_input_set_after_the_step(build):
    from .conftest import OWN_CASES
    op = open_fmu(build(OWN_CASES[0]))
    try:
        fmu = instantiate(op)
        initialize(fmu, op, {"tau": 1.0})
        run(fmu, op, 5, 0.01)
        omega = fmu.getReal([op.vr["omega"]])[0]
        fmu.setReal([op.vr["tau"]], [3.0])
        assert fmu.getReal([op.vr["power"]])[0] == 3.0 * omega
        fmu.terminate()
        fmu.freeInstance()
    finally:
        op.close()
