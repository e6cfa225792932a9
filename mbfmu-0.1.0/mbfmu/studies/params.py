"""Parameter specifications of a study: grids, distributions, sampling, SPEC text.

A study's ``parameters`` is a mapping from variable names to

* a sequence of values: the points of a grid (full factorial over all
  sequences, or zipped with ``zipped=True``);
* a :class:`Distribution` (:class:`Normal`, :class:`Uniform`): drawn
  ``samples`` times with a ``seed``, by plain random sampling or by Latin
  hypercube (``sampling="lhs"``);
* a single number: the same value in every run.

With both sequences and distributions, each grid point gets its own
``samples`` draws. Draws use the inverse CDF of uniforms from
``numpy.random.default_rng(seed)`` (or ``scipy.stats.qmc.LatinHypercube``
seeded the same way), so a seed gives the same runs on every machine.

:func:`parse_spec` reads the command-line forms ``a:b:n``, ``v1,v2,v3``,
``normal(mu,sigma)`` and ``uniform(a,b)``.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError


class Distribution:
    """A one-dimensional distribution sampled by its inverse CDF."""

    def ppf(self, q: np.ndarray) -> np.ndarray:
        """Quantile function at probabilities ``q`` in (0, 1)."""
        raise NotImplementedError

    def mean(self) -> float:
        raise NotImplementedError

    def std(self) -> float:
        raise NotImplementedError


@dataclass(frozen=True)
class Normal(Distribution):
    """Normal distribution with mean ``mu`` and standard deviation ``sigma`` (> 0).

    Parameters
    ----------
    mu : float
        Mean, in the unit of the parameter it draws.
    sigma : float
        Standard deviation (> 0), in the same unit.
    """

    mu: float
    sigma: float

    def __post_init__(self) -> None:
        _finite("normal mean", self.mu)
        if not (_finite("normal sigma", self.sigma) > 0):
            raise InputError(f"normal({self.mu}, {self.sigma}): sigma must be positive")

    def ppf(self, q: np.ndarray) -> np.ndarray:
        from scipy.special import ndtri
        return self.mu + self.sigma * ndtri(q)

    def mean(self) -> float:
        return float(self.mu)

    def std(self) -> float:
        return float(self.sigma)


@dataclass(frozen=True)
class Uniform(Distribution):
    """Uniform distribution on ``[a, b)`` (``a < b``).

    Parameters
    ----------
    a, b : float
        Lower and upper bounds, in the unit of the parameter it draws.
    """

    a: float
    b: float

    def __post_init__(self) -> None:
        if not (_finite("uniform bound", self.a) < _finite("uniform bound", self.b)):
            raise InputError(f"uniform({self.a}, {self.b}): the lower bound must be below the upper one")

    def ppf(self, q: np.ndarray) -> np.ndarray:
        return self.a + (self.b - self.a) * np.asarray(q)

    def mean(self) -> float:
        return 0.5 * (self.a + self.b)

    def std(self) -> float:
        return (self.b - self.a) / math.sqrt(12.0)


SAMPLING = ("random", "lhs")


def _finite(what: str, v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{what} {v!r} is not a number") from None
    if not math.isfinite(f):
        raise InputError(f"{what} {v!r} must be finite")
    return f


def runs(parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]], *, samples: int | None = None,
         seed: int | None = None, sampling: str = "random", zipped: bool = False) -> list[dict[str, Any]]:
    """The parameter values of every run, in run order.

    Parameters
    ----------
    parameters : mapping or sequence of mappings
        Name -> sequence of values, :class:`Distribution` or single value;
        or an explicit list of runs (one mapping per run).
    samples : int, optional
        Draws per grid point; required when a distribution is given.
    seed : int, optional
        Seed of the draws (``None``: fresh entropy, not reproducible).
    sampling : {"random", "lhs"}
        Plain random sampling or Latin hypercube.
    zipped : bool
        Zip the value sequences (all of one length) instead of the full factorial.

    Returns
    -------
    list of dict
        One ``{name: value}`` per run.
    """
    if not isinstance(parameters, Mapping):
        out = [dict(p) for p in parameters]
        if not out or not all(isinstance(p, Mapping) for p in parameters):
            raise InputError("parameters must be a mapping of names to values or a non-empty list of mappings")
        return out
    if not parameters:
        raise InputError("a study needs at least one parameter")
    if sampling not in SAMPLING:
        raise InputError(f"sampling {sampling!r} is not one of {SAMPLING}")
    grid: dict[str, list[Any]] = {}
    dists: dict[str, Distribution] = {}
    fixed: dict[str, Any] = {}
    for name, spec in parameters.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"parameter name {name!r} must be a non-empty string")
        if isinstance(spec, Distribution):
            dists[name] = spec
        elif isinstance(spec, (str, bytes)) or not hasattr(spec, "__iter__"):
            fixed[name] = spec
        else:
            values = list(spec)
            if not values:
                raise InputError(f"parameter {name!r} has an empty list of values")
            grid[name] = values
    if zipped and grid:
        lengths = {n: len(v) for n, v in grid.items()}
        if len(set(lengths.values())) > 1:
            raise InputError(f"zipped parameters need value lists of one length, got {lengths}")
    _check_count(grid, zipped, samples if dists else None)
    if zipped and grid:
        points = [dict(zip(grid, vals)) for vals in zip(*grid.values())]
    else:
        points = [dict(zip(grid, vals)) for vals in itertools.product(*grid.values())]
    if dists:
        if samples is None or int(samples) < 1:
            raise InputError(f"distributions ({', '.join(dists)}) need samples >= 1")
        draws = _draw(dists, int(samples) * len(points), seed, sampling)
        out = []
        for i, point in enumerate(points):
            for k in range(int(samples)):
                row = i * int(samples) + k
                out.append({**fixed, **point, **{n: float(draws[n][row]) for n in dists}})
        return out
    if samples is not None:
        raise InputError("samples given but no parameter is a distribution (use normal(mu,sigma) or uniform(a,b))")
    return [{**fixed, **p} for p in points]



def _check_count(grid: Mapping[str, list[Any]], zipped: bool, samples: Any) -> None:
    """Refuse, before anything is allocated, a study of more runs than ``max_runs``."""
    from ..untrusted.limits import limits
    sizes = [len(v) for v in grid.values()]
    points = (sizes[0] if sizes else 1) if zipped else math.prod(sizes)
    draws = 1
    if samples is not None:
        whole = (isinstance(samples, (int, float, np.integer)) and not isinstance(samples, bool)
                 and math.isfinite(samples) and samples == int(samples))
        if not whole or samples < 1:
            raise InputError(f"samples = {samples!r} must be a whole number >= 1")
        draws = int(samples)
    total, lim = points * draws, limits().max_runs
    if total > lim:
        shape = " x ".join(map(str, sizes)) if sizes and not zipped else str(points)
        raise InputError(f"the study would have {total:,} runs ({shape} grid points x {draws:,} samples), above "
                         f"the limit of {lim:,} (MBFMU_MAX_RUNS)")


def _draw(dists: Mapping[str, Distribution], n: int, seed: int | None, sampling: str) -> dict[str, np.ndarray]:
    """``n`` draws of each distribution (columns independent), by inverse CDF."""
    d = len(dists)
    if sampling == "lhs":
        from scipy.stats import qmc
        q = qmc.LatinHypercube(d=d, seed=np.random.default_rng(seed)).random(n)
    else:
        q = np.random.default_rng(seed).random((n, d))
    q = np.clip(q, np.finfo(float).tiny, 1.0 - np.finfo(float).eps)  # keep ppf finite
    return {name: dist.ppf(q[:, j]) for j, (name, dist) in enumerate(dists.items())}


_CALL = re.compile(r"^\s*(normal|uniform)\s*\(\s*([^,()]+)\s*,\s*([^,()]+)\s*\)\s*$", re.I)


def parse_spec(text: str) -> Any:
    """A parameter specification from its command-line text.

    ``a:b:n`` -> ``n`` values from ``a`` to ``b`` (both included);
    ``v1,v2,v3`` -> those values; ``normal(mu,sigma)``, ``uniform(a,b)`` ->
    a :class:`Distribution`; a single number -> that value.

    Parameters
    ----------
    text : str
        The specification, numbers in the parameter's SI unit.

    Examples
    --------
    >>> parse_spec("0:1:3")
    [0.0, 0.5, 1.0]
    >>> parse_spec("normal(2, 0.1)")
    Normal(mu=2.0, sigma=0.1)
    """
    s = text.strip()
    m = _CALL.match(s)
    if m:
        kind, a, b = m.group(1).lower(), _number(m.group(2), text), _number(m.group(3), text)
        return Normal(a, b) if kind == "normal" else Uniform(a, b)
    if s.count(":") == 2 and "," not in s:
        a, b, n = s.split(":")
        try:
            count = int(n)
        except ValueError:
            raise InputError(f"parameter spec {text!r}: the count {n!r} in a:b:n must be a whole number") from None
        if count < 1:
            raise InputError(f"parameter spec {text!r}: the count n in a:b:n must be at least 1")
        from ..untrusted.limits import limits
        if count > limits().max_runs:
            raise InputError(f"parameter spec {text!r}: {count:,} values, above the limit of {limits().max_runs:,} "
                             "runs of a study (MBFMU_MAX_RUNS)")
        return [float(v) for v in np.linspace(_number(a, text), _number(b, text), count)]
    if "," in s:
        return [_number(v, text) for v in s.split(",")]
    return _number(s, text)


def _number(v: str, spec: str) -> float:
    try:
        f = float(v)
    except ValueError:
        raise InputError(f"parameter spec {spec!r}: {v.strip()!r} is not a number "
                         "(use a:b:n, v1,v2,v3, normal(mu,sigma) or uniform(a,b))") from None
    if not math.isfinite(f):
        raise InputError(f"parameter spec {spec!r}: {v.strip()!r} must be finite")
    return f


def parse_assignment(text: str) -> tuple[str, Any]:
    """``"NAME=SPEC"`` -> ``(name, parse_spec(SPEC))``."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise InputError(f"--param {text!r}: expected NAME=SPEC, e.g. payload_mass=0.1:1:10")
    return name.strip(), parse_spec(spec)
