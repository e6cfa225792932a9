"""Benchmark: full Jacobians from the exact C tangents against central finite
differences, through a native Model Exchange FMU (fmpy) and through Python's
``mbfmu.linearize``.

For each plant whose native FMU provides directional derivatives, at a state
of its start point perturbed at random (unit quaternions), both through the
same FMU instance in fmpy (:mod:`mbfmu.control.fmu_jacobians`):

* directional: ``n + m`` calls of ``fmi2GetDirectionalDerivative`` with a unit
  seed (all derivatives and outputs as unknowns), the whole ``[A B; C D]``;
* central differences: ``2 (n + m)`` evaluations, each ``fmi2SetContinuousStates``
  + ``fmi2SetReal`` + ``fmi2GetDerivatives`` + ``fmi2GetReal`` of the outputs;

best of 5 interleaved rounds, with the ratio FD / directional and the largest
difference between the two Jacobians (the FD error) printed.

Second table (#33): ``mbfmu.linearize``'s A, B, C, D of the Python plant at
the same point, from the exact C tangents (``exact_jacobian``: the packed
description, one tangent pass per column, the check along one direction,
the chart) against the central differences it used before (``derivatives``
and ``outputs_at`` of the Python plant, step ``eps^(1/3) max(1, |z|)``;
the configuration rows exact), timed the same way.

Usage::

    python benchmarks/derivatives.py [NAME ...] [--rounds N]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from mbfmu.control.linearization import _Exact, _output_jacobians, _state_jacobians
from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.library import load_plant

PLANTS = ("rigid_arm", "canonical_2body", "satellite", "crash_occupant", "flexible_arm", "ur5", "panda")


# spread of the random state about the start (rad, m, rad/s, m/s): the occupant's bodies stay within
# millimetres of the seat they press on, the arm's beams within millimetres of straight
_SPREAD = {"crash_occupant": 0.02}


def _point(plant, seed=0):
    rng = np.random.default_rng(seed)
    x = plant.initial_state().astype(float)
    u = plant.default_inputs() + rng.standard_normal(len(plant.inputs))
    if not hasattr(plant, "model"):  # assumed-modes beams: two joints, then modal coordinates; rates alike
        nq = plant.nq
        scale = np.r_[np.ones(2), np.full(nq - 2, 3e-3), np.ones(2), np.full(nq - 2, 5e-2)]
        return x + scale * rng.standard_normal(x.size), u
    n = plant.model.nq + plant.model.nv
    x[:n] += _SPREAD.get(plant.name, 0.3) * rng.standard_normal(n)
    return plant.normalize_state(x), u


def measure(name: str, folder: str, rounds: int) -> dict:
    plant = load_plant(name)
    path = build_fmu(name, folder, runtime="native", platforms=("linux64",))
    x, u = _point(plant)
    best = {DIRECTIONAL: np.inf, CENTRAL: np.inf}
    with ModelExchangeInstance(path) as inst:
        x = x[:inst.n]
        jac = {}
        for _ in range(rounds):
            for method in (DIRECTIONAL, CENTRAL):
                t = time.perf_counter()
                jac[method] = jacobians(inst, x, u, method)
                best[method] = min(best[method], time.perf_counter() - t)
    a, b = jac[DIRECTIONAL], jac[CENTRAL]
    diff = max(float(np.abs(getattr(a, k) - getattr(b, k)).max()) for k in "ABCD" if getattr(a, k).size)
    scale = max(float(np.abs(getattr(a, k)).max()) for k in "ABCD" if getattr(a, k).size)
    return dict(name=name, n=inst.n, m=inst.m, p=len(inst.outputs), dd=best[DIRECTIONAL] * 1e3,
                fd=best[CENTRAL] * 1e3, ratio=best[CENTRAL] / best[DIRECTIONAL], diff=diff / scale)


def _python_jacobians(plant, x, u, exact: bool) -> tuple[np.ndarray, str]:
    """[A B; C D] of mbfmu.linearize (its chart), exact or by its former central differences."""
    A, B, _, method, chart, ex = _state_jacobians(plant, x, u, 0.0, None if exact else _Exact(None, "benchmark"))
    C, D, out = _output_jacobians(plant, chart, 0.0, x, u, ex)
    return np.block([[A, B], [C, D]]), f"{method} / {out}"


def measure_python(name: str, rounds: int) -> dict:
    plant = load_plant(name)
    x, u = _point(plant)
    best, jac, how = {True: np.inf, False: np.inf}, {}, {}
    for _ in range(rounds):
        for exact in (True, False):
            t = time.perf_counter()
            jac[exact], how[exact] = _python_jacobians(plant, x, u, exact)
            best[exact] = min(best[exact], time.perf_counter() - t)
    diff = float(np.abs(jac[True] - jac[False]).max()) / float(np.abs(jac[True]).max())
    return dict(name=name, exact=best[True] * 1e3, fd=best[False] * 1e3, ratio=best[False] / best[True],
                diff=diff, how=how[True], former=how[False])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(PLANTS))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mbfmu_bench_dd_") as tmp:
        for name in args.names:
            rows.append(measure(name, tmp, args.rounds))
    print("| plant | n | m | p | directional (ms) | central FD (ms) | FD / directional | max diff / max entry |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['n']} | {r['m']} | {r['p']} | {r['dd']:.3f} | {r['fd']:.3f} | {r['ratio']:.2f} | "
              f"{r['diff']:.1e} |")
    print()
    print("| plant | mbfmu.linearize exact (ms) | former central FD (ms) | FD / exact | max diff / max entry | "
          "methods (exact; former) |")
    print("|---|---|---|---|---|---|")
    for name in args.names:
        r = measure_python(name, args.rounds)
        print(f"| {r['name']} | {r['exact']:.3f} | {r['fd']:.3f} | {r['ratio']:.2f} | {r['diff']:.1e} | "
              f"{r['how']}; {r['former']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
