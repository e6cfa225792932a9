"""Discrete states of plug-in elements (``csrc/element.h``: ``ndisc``, ``period``,
``sample``; #33 §3): a test-only element (``elements/grid_sampler.c``) integrates the
path of a point of the damped slider and samples it on a grid of spacing T. Against
the analytic path x(t) = v0 m / c (1 - exp(-c t / m)) at the grid instants k T: in the
native FMU (Co-Simulation: integration split at each instant; Model Exchange: time
events there; FMI 2 and 3), in the Python plant (the same C through the kernels), with
T changed on the FMU, and in the exact linearization (zero columns and rows)."""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import simulate_fmu
from fmpy.fmi1 import FMICallException

from mbfmu.control.linearization import exact_jacobian
from mbfmu.errors import InputError
from mbfmu.fmu.builder import build_fmu

from .element_plants import SampledSlider

M, C, V0 = SampledSlider.MASS, SampledSlider.C, SampledSlider.V0


def path(t, c=C):
    """The block's (and every point's) travelled path, m."""
    return V0 * M / c * (1.0 - np.exp(-c * np.asarray(t, float) / M))


def sampled(t, T, c=C):
    """(held path, instants, largest growth) after the grid instants k T <= t."""
    k = np.floor(np.asarray(t, float) / T + 1e-6)
    held = path(k * T, c)
    growth = np.where(k >= 1, path(T, c), 0.0)  # the speed decays: the first interval grows most
    return held, k, growth


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    return {v: build_fmu(SampledSlider, tmp_path_factory.mktemp(f"el_sampled{v}"), runtime="native",
                         platforms=("linux64",), fmi_version=v) for v in (2, 3)}


OUT = ["path", "path_held", "instants", "growth_max"]


def on_grid(res):
    """fmpy's rows at the 0.05 s output points (Model Exchange adds a row before and after
    each time event): (time, outputs)."""
    t = res["time"]
    keep = np.abs(t / 0.05 - np.round(t / 0.05)) < 1e-9
    return (t[keep], *(res[n][keep] for n in OUT))


def check(t, path_, held, instants, growth, T, tol, c=C):
    assert len(t) == 21
    want_held, want_k, want_growth = sampled(t, T, c)
    np.testing.assert_allclose(path_, path(t, c), rtol=0, atol=tol)
    np.testing.assert_array_equal(instants, want_k)
    np.testing.assert_allclose(held, want_held, rtol=0, atol=tol)
    np.testing.assert_allclose(growth, want_growth, rtol=0, atol=tol)
    assert want_k[-1] >= 20 and np.ptp(want_held) > 0.5  # many instants, a path that grows


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_samples_at_the_grid_instants_equal_the_analytic_path(fmus, fmi, kind):
    """The held path is the analytic path at the last grid instant, not at a communication
    point: CS splits its steps there (0.05 s steps, T = 0.0437 s), ME samples at time events."""
    res = simulate_fmu(str(fmus[fmi]), fmi_type=kind, stop_time=1.0, output_interval=0.05,
                       relative_tolerance=1e-8, output=OUT)
    tol = 1e-5 if kind == "ModelExchange" else 1e-6
    check(*on_grid(res), SampledSlider.PERIOD, tol)


@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
def test_period_is_a_tunable_parameter(fmus, kind):
    """T computed from the plant's parameter moves the grid (the expression tape)."""
    T = 0.0313
    res = simulate_fmu(str(fmus[2]), fmi_type=kind, stop_time=1.0, output_interval=0.05,
                       relative_tolerance=1e-8, output=OUT, start_values={"T": T})
    check(*on_grid(res), T, 1e-5 if kind == "ModelExchange" else 1e-6)


def test_a_period_that_is_not_positive_is_refused(fmus):
    """T = 0 would sample without end: the FMU refuses the parameter (one line, its log),
    the Python plant names it."""
    log = []
    with pytest.raises(FMICallException, match="fmi2SetReal"):
        simulate_fmu(str(fmus[2]), stop_time=0.1, output_interval=0.05, start_values={"T": 0.0},
                     logger=lambda *a: log.append(a[-1].decode()))
    assert any("refused parameters T = 0" in m and "not a positive finite time" in m for m in log), log
    plant = SampledSlider(T=0.0)
    with pytest.raises(InputError, match="sampling period .* not a positive finite time"):
        plant.simulate(stop_time=0.1, step=0.05)


def test_python_plant_samples_as_the_fmu(fmus):
    """The Python plant runs the element's own C with the same grid split."""
    plant = SampledSlider()
    t, X, Y = plant.simulate(stop_time=1.0, step=0.05)
    names = [s.name for s in plant.outputs]
    cols = [Y[:, names.index(n)] for n in OUT]
    check(t, *cols, SampledSlider.PERIOD, 1e-6)
    res = simulate_fmu(str(fmus[2]), stop_time=1.0, output_interval=0.05, output=OUT)
    for n, col in zip(OUT, cols):
        np.testing.assert_allclose(col, res[n], rtol=0, atol=1e-9, err_msg=n)


def test_discrete_states_have_zero_columns_and_rates():
    """The exact Jacobian: the discrete states are neither knowns nor unknowns (zero columns,
    zero rates); the path's rate |v| has the gradient sign(v) = 1 in v (v > 0)."""
    plant = SampledSlider()
    x = plant.initial_state()
    x[6:] = [0.3, 4.0, 0.1]  # samples taken: the Jacobian does not read them
    J = exact_jacobian(plant, x, np.zeros(1)).J
    nx = x.size
    assert nx == 9
    np.testing.assert_array_equal(J[:nx, 6:nx], 0.0)  # (the outputs that read them: a unit column)
    np.testing.assert_array_equal(J[6:nx], 0.0)
    assert J[5, 1] == pytest.approx(1.0, abs=1e-14) and J[5, 0] == 0.0
