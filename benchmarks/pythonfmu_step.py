"""Benchmark: one communication step of the pythonfmu FMU against the native FMU.

The loop a master runs each step, through fmpy's ``FMU2Slave`` in one Python
process: ``fmi2SetReal`` of all inputs, ``fmi2DoStep``, ``fmi2GetReal`` of
all outputs. The pythonfmu FMU (default runtime) and the native FMU of the same
plant run in the same child process, interleaved, best of 5 (the machine is
shared); the ratio is pythonfmu / native (issue 23.4: at most 3 on rigid_arm
at 1 ms). The three calls are also timed alone on the pythonfmu FMU.

Usage::

    python benchmarks/pythonfmu_step.py [NAME ...] [--step H] [--steps N]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from fmu2_child import CHILD_PRELUDE

REPO = Path(__file__).resolve().parents[1]

CHILD = CHILD_PRELUDE + r"""
h, steps = float(sys.argv[1]), int(sys.argv[2])
units = {}
for kind, path in (("pythonfmu", sys.argv[3]), ("native", sys.argv[4])):
    f, ins, outs, _ = open_slave(kind, path)
    units[kind] = [f, ins, outs, 0.0]
u = [0.01 * (i + 1) for i in range(len(units["native"][1]))]

def loop(kind, what="all"):
    f, ins, outs, t = units[kind]
    t0 = time.perf_counter()
    for k in range(steps):
        if what in ("all", "set"):
            f.setReal(ins, u)
        if what in ("all", "step"):
            f.doStep(t, h)
            t += h
        if what in ("all", "get"):
            f.getReal(outs)
    units[kind][3] = t
    return (time.perf_counter() - t0) / steps

best = {}
for rep in range(5):
    for key, args in (("pythonfmu", ("pythonfmu",)), ("native", ("native",)), ("set", ("pythonfmu", "set")),
                      ("step", ("pythonfmu", "step")), ("get", ("pythonfmu", "get"))):
        best[key] = min(best.get(key, 1e9), loop(*args))
for f, *_ in units.values():
    f.terminate()
    f.freeInstance()
print(json.dumps(best))
"""


def measure(name: str, step: float, steps: int, out: Path) -> dict:
    from mbfmu.fmu.builder import build_fmu
    py = build_fmu(name, out / "pythonfmu" / f"{name}.fmu", platforms=("linux64",))
    nat = build_fmu(name, out / "native" / f"{name}.fmu", runtime="native", platforms=("linux64",),
                    interfaces=("cs",))
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", CHILD, repr(step), str(steps), str(py), str(nat)],
                         capture_output=True, text=True, env=env, cwd=out)
    if res.returncode != 0:
        raise RuntimeError(f"{name}: {res.stderr[-2000:]}")
    return json.loads(res.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=["rigid_arm"])
    ap.add_argument("--step", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=2000)
    args = ap.parse_args(argv)
    print(f"setReal(all inputs) + doStep + getReal(all outputs) through fmpy, h = {args.step:g} s, "
          f"best of 5 x {args.steps} steps")
    print(f"{'plant':<18}{'pythonfmu us':>14}{'native us':>11}{'py/nat':>8}"
          f"{'set us':>8}{'step us':>9}{'get us':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names:
            r = measure(name, args.step, args.steps, Path(tmp) / name)
            print(f"{name:<18}{r['pythonfmu'] * 1e6:>14.1f}{r['native'] * 1e6:>11.1f}"
                  f"{r['pythonfmu'] / r['native']:>8.2f}{r['set'] * 1e6:>8.1f}{r['step'] * 1e6:>9.1f}"
                  f"{r['get'] * 1e6:>8.1f}")


if __name__ == "__main__":
    main()
