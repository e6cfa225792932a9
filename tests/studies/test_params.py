"""Parameter specs, grids and Monte Carlo sampling."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mbfmu.errors import InputError
from mbfmu.studies import Normal, Uniform, parse_spec, runs, sweep

from . import second_order


def test_spec_text_gives_ranges_lists_and_distributions():
    assert parse_spec("0:1:5") == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert parse_spec("1,2.5,4") == [1.0, 2.5, 4.0]
    assert parse_spec("normal(2, 0.5)") == Normal(2.0, 0.5)
    assert parse_spec("uniform(-1,3)") == Uniform(-1.0, 3.0)
    assert parse_spec("7") == 7.0


@pytest.mark.parametrize("bad, words", [("1:2:x", "whole number"), ("a,b", "'a' is not a number"),
                                        ("normal(1,-2)", "sigma must be positive"),
                                        ("uniform(3,1)", "lower bound"), ("1:2:0", "at least 1")])
def test_malformed_spec_is_refused_with_a_one_line_message(bad, words):
    with pytest.raises(InputError, match=words) as info:
        parse_spec(bad)
    assert "\n" not in str(info.value)


def test_grid_is_the_full_factorial_and_zipped_lists_pair_up():
    grid = runs({"a": [1, 2, 3], "b": [10, 20], "c": 5})
    assert len(grid) == 6 and grid[0] == {"c": 5, "a": 1, "b": 10} and grid[-1] == {"c": 5, "a": 3, "b": 20}
    assert runs({"a": [1, 2], "b": [3, 4]}, zipped=True) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    with pytest.raises(InputError, match="one length"):
        runs({"a": [1, 2], "b": [3]}, zipped=True)
    with pytest.raises(InputError, match="need samples"):
        runs({"a": Normal(0, 1)})


@pytest.mark.parametrize("sampling", ["random", "lhs"])
def test_monte_carlo_samples_follow_the_requested_distributions(sampling):
    n = 2000
    draws = runs({"m": Normal(2.0, 0.5), "k": Uniform(1.0, 3.0)}, samples=n, seed=11, sampling=sampling)
    m = np.array([d["m"] for d in draws])
    k = np.array([d["k"] for d in draws])
    # each marginal against its CDF (Kolmogorov-Smirnov; false alarm 1e-4)
    assert stats.kstest(m, stats.norm(2.0, 0.5).cdf).pvalue > 1e-4
    assert stats.kstest(k, stats.uniform(1.0, 2.0).cdf).pvalue > 1e-4
    # mean within 4 standard errors; variance inside its chi-square interval at 1e-4
    assert abs(m.mean() - 2.0) < 4 * 0.5 / math.sqrt(n)
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], n - 1) / (n - 1)
    assert lo * 0.25 <= m.var(ddof=1) <= hi * 0.25
    assert np.all((k >= 1.0) & (k < 3.0))
    assert abs(np.corrcoef(m, k)[0, 1]) < 4 / math.sqrt(n)  # independent columns
    if sampling == "lhs":  # Latin hypercube: exactly one draw in each of the n equal-probability strata
        for x, cdf in ((m, stats.norm(2.0, 0.5).cdf), (k, stats.uniform(1.0, 2.0).cdf)):
            assert sorted(np.floor(cdf(x) * n).astype(int)) == list(range(n))


def test_monte_carlo_study_with_a_seed_is_reproducible():
    spec = {"zeta": Uniform(0.2, 0.8), "wn": Normal(2.0, 0.2)}
    a, b = (sweep(second_order.system, spec, samples=6, seed=5, stop_time=1.0, step=0.01, executor="serial",
                  metrics=["final:plant.y"], progress=False) for _ in range(2))
    c = sweep(second_order.system, spec, samples=6, seed=6, stop_time=1.0, step=0.01, executor="serial",
              metrics=["final:plant.y"], progress=False)
    cols = ("zeta", "wn", "final:plant.y", "key")
    assert [[r[k] for k in cols] for r in a.rows] == [[r[k] for k in cols] for r in b.rows]
    assert a["zeta"].tolist() != c["zeta"].tolist()
    assert a.sampled == ["zeta", "wn"] and a.grid == {}
