"""Benchmark: a full Jacobian of a native Model Exchange FMU through fmpy, from
its directional derivatives against central finite differences.

For each plant whose native FMU provides directional derivatives, at a state
of its start point perturbed at random (unit quaternions), both through the
same FMU instance in fmpy (:mod:`mbfmu.cosim.fmu_jacobian`):

* directional: ``n + m`` calls of ``fmi2GetDirectionalDerivative`` with a unit
  seed (all derivatives and outputs as unknowns), the whole ``[A B; C D]``;
* central differences: ``2 (n + m)`` evaluations, each ``fmi2SetContinuousStates``
  + ``fmi2SetReal`` + ``fmi2GetDerivatives`` + ``fmi2GetReal`` of the outputs;

best of 5 interleaved rounds, with the ratio FD / directional and the largest
difference between the two Jacobians (the FD error) printed.

Usage::

    python benchmarks/derivatives.py [NAME ...] [--rounds N]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from mbfmu.cosim.fmu_jacobian import CENTRAL, DIRECTIONAL, ModelExchangeInstance, jacobians
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
