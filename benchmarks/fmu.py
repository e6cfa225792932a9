"""Benchmark of the plant FMUs: instantiation time and cost per step.

For each plant (the test pendulum and every library plant):

* cold instantiation: loading the FMU binary and ``fmi2Instantiate`` in a
  fresh Python process that has imported fmpy (so numpy) but not mbfmu: it
  includes importing mbfmu and the plant and building the plant;
* warm instantiation: the same again in that process (binary reloaded,
  modules cached), median of 5;
* cost per communication step: ``fmi2DoStep`` + ``fmi2GetReal`` of all
  outputs through fmpy, against ``Plant.advance`` + ``Plant.outputs_at``
  called directly in Python, at the plant's default step, interleaved, best
  of 3 (the machine is shared); ratio printed.

Then the native runtime (``build_fmu(..., runtime="native")``), measured in
C by ``benchmarks/native_step.c`` (no Python in the timed loop), for every
library plant it exports, at its default step and rigid_arm also at 1 ms:

* ``fmi2DoStep`` + ``fmi2GetReal`` of all outputs of the dlopen'ed FMU binary;
* the bare compiled advance (``mb_adapt_advance`` or the latch element on the same
  packed model, the call ``Plant.advance`` makes), and the ratio (target
  <= 1.2);
* the pythonfmu FMU at the same step (through fmpy, as above) and its ratio
  to the native FMU (target >= 10 on rigid_arm at 1 ms);
* the RSS growth over 1000 instantiate/step/free cycles (target < 1 MB).

Then Model Exchange and FMI 3.0 of the native runtime (``--me-fmi3``),
timed in C by ``benchmarks/native_fmi.c`` on states of a trajectory:

* ``fmi2SetTime`` + ``fmi2SetContinuousStates`` + ``fmi2GetDerivatives`` (what
  an integrator calls per evaluation) against the bare kernel ``mb_aba`` at
  the same states, and against the full right-hand side the co-simulation
  step integrates (``mbn_rhs``: ABA with the force elements);
* ``fmi3DoStep`` + ``fmi3GetFloat64`` of all outputs (FMI 3 FMU) against
  ``fmi2DoStep`` + ``fmi2GetReal`` (FMI 2 FMU of the same plant), target
  at most 1.1x.

Then (``--sources``) the native FMU's shipped linux64 binary against the
binaries built from its ``sources/`` by ``fmpy.build.build_platform_binary``
and by a plain ``cc -shared -fPIC -O2`` (the same ``native_step.c`` loop).

Usage::

    python benchmarks/fmu.py [NAME ...] [--steps N] [--native-only] [--me-fmi3] [--sources]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PENDULUM = f"{REPO}/tests/fmu/plants.py:DampedPendulum"

CHILD = r"""
import json, statistics, sys, time
t_start = time.perf_counter()
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
path, spec, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
md = read_model_description(path)
d = extract(path)
ident = md.coSimulation.modelIdentifier
outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]

def load():
    t0 = time.perf_counter()
    f = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=ident, instanceName="bench")
    f.instantiate()
    return f, time.perf_counter() - t0

fmu, cold = load()
warm = []
for _ in range(5):
    fmu.freeInstance()
    fmu, t = load()
    warm.append(t)
fmu.setupExperiment(startTime=0.0)
fmu.enterInitializationMode()
fmu.exitInitializationMode()
h = float(sys.argv[5]) if len(sys.argv) > 5 else float(md.defaultExperiment.stepSize)
sys.path.insert(0, sys.argv[4])
from mbfmu.fmu.plantref import build_plant, parse
plant = build_plant(parse(spec))
x, u = plant.initial_state(), plant.default_inputs()
fmu_times, direct_times, t = [], [], 0.0
for rep in range(3):  # interleaved, best of 3: the machine is shared
    t0 = time.perf_counter()
    for k in range(steps):
        fmu.doStep(t, h)
        fmu.getReal(outs)
        t += h
    fmu_times.append((time.perf_counter() - t0) / steps)
    t0 = time.perf_counter()
    for k in range(steps):
        x = plant.advance(k * h, x, u, h)
        plant.outputs_at((k + 1) * h, x, u)
    direct_times.append((time.perf_counter() - t0) / steps)
fmu.terminate()
fmu.freeInstance()
fmu_step, direct = min(fmu_times), min(direct_times)
print(json.dumps(dict(cold=cold, warm=statistics.median(warm), fmu_step=fmu_step, direct_step=direct, h=h)))
"""


def bench(name: str, spec: str, steps: int, out: Path, step: float | None = None) -> dict:
    from mbfmu.fmu.builder import build_fmu
    path = out / f"{name}.fmu"
    if not path.exists():
        build_fmu(spec, path)
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), spec, str(steps), str(REPO),
                          *([repr(step)] if step else [])],
                         capture_output=True, text=True, env=env, cwd=out)
    if res.returncode != 0:
        raise RuntimeError(f"{name}: {res.stderr[-2000:]}")
    return json.loads(res.stdout.splitlines()[-1])


def _build_host(exe: Path, host: str, sources: Path) -> None:
    """Compile the timing host ``benchmarks/<host>`` with the FMU's own ``sources/`` (the
    runtime, the kernels, ``model_data.c`` and its plug-in elements' C; not its FMI layer)."""
    from mbfmu.fmu.native import toolchain
    srcs = sorted(str(p) for p in sources.glob("*.c") if p.name not in ("fmi2.c", "fmi3.c"))
    subprocess.run([toolchain.compiler("linux64"), *toolchain.CFLAGS, f"-I{sources}", "-o", str(exe),
                    str(REPO / "benchmarks" / host), *srcs, "-ldl", "-lm"], check=True)


def bench_native(name: str, step: float, steps: int, cycles: int, out: Path) -> dict:
    """Native FMU of library plant ``name``: the C timing host's JSON (ns per step, RSS bytes)."""
    import zipfile

    from fmpy import read_model_description

    from mbfmu.fmu.builder import build_fmu
    folder = out / f"native_{name}"
    fmu = build_fmu(name, folder, runtime="native", platforms=("linux64",), overwrite=True)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder / "x")
    md = read_model_description(str(fmu))
    exe = folder / "native_step"
    _build_host(exe, "native_step.c", folder / "x" / "sources")
    lib = folder / "x" / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    res = subprocess.run([str(exe), str(lib), md.guid, repr(step), str(steps), str(cycles)],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.splitlines()[-1])


def bench_me_fmi3(name: str, steps: int, out: Path) -> dict:
    """Model Exchange and FMI 3 timings of library plant ``name`` (native_fmi.c's JSON)."""
    import zipfile

    from fmpy import read_model_description

    from mbfmu.fmu.builder import build_fmu
    from mbfmu.plant.library import load_plant
    folder = out / f"fmi_{name}"
    f2 = build_fmu(name, folder / "2", runtime="native", platforms=("linux64",))
    f3 = build_fmu(name, folder / "3", runtime="native", platforms=("linux64",), fmi_version=3)
    for f, d in ((f2, "x2"), (f3, "x3")):
        with zipfile.ZipFile(f) as z:
            z.extractall(folder / d)
    md2, md3 = read_model_description(str(f2)), read_model_description(str(f3))
    by_vr = {v.valueReference: v for v in md3.modelVariables}
    outs3 = [v for v in md3.modelVariables if v.causality == "output"]
    ny3 = sum(int(by_vr[v.dimensions[0].valueReference].start) if v.dimensions else 1 for v in outs3)
    exe = folder / "native_fmi"
    _build_host(exe, "native_fmi.c", folder / "x2" / "sources")
    ident = md2.coSimulation.modelIdentifier
    res = subprocess.run([str(exe), str(folder / "x2" / "binaries" / "linux64" / f"{ident}.so"), md2.guid,
                          str(folder / "x3" / "binaries" / "x86_64-linux" / f"{ident}.so"),
                          repr(load_plant(name).default_step), str(steps), "200", str(ny3),
                          *(str(v.valueReference) for v in outs3)], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.splitlines()[-1])


def me_fmi3_table(names: list[str], steps: int, out: Path) -> None:
    """Print the Model Exchange / FMI 3 table (see the module docstring)."""
    print(f"\n{'plant':<18}{'getDerivatives ns':>19}{'aba ns':>9}{'ME/aba':>8}{'rhs ns':>9}{'ME/rhs':>8}"
          f"{'FMI2 step us':>14}{'FMI3 step us':>14}{'FMI3/FMI2':>11}")
    for name in names:
        r = bench_me_fmi3(name, steps, out)
        aba = f"{r['aba_ns']:>9.0f}{r['me_ns'] / r['aba_ns']:>8.2f}" if r["aba_ns"] > 0 else f"{'-':>9}{'-':>8}"
        print(f"{name:<18}{r['me_ns']:>19.0f}{aba}{r['rhs_ns']:>9.0f}{r['me_ns'] / r['rhs_ns']:>8.2f}"
              f"{r['cs2_ns'] / 1e3:>14.2f}{r['cs3_ns'] / 1e3:>14.2f}{r['cs3_ns'] / r['cs2_ns']:>11.3f}")


def _quiet(fn, *args):
    """Call ``fn(*args)`` with the process's stdout and stderr sent to /dev/null
    (fmpy's CMake build prints its progress from child processes)."""
    import os
    sys.stdout.flush()
    saved = os.dup(1), os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            return fn(*args)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def sources_table(names: list[str], steps: int, out: Path) -> None:
    """The native FMU's shipped linux64 binary against binaries built from its
    ``sources/`` by ``fmpy.build.build_platform_binary`` (CMake, Release) and by
    ``cc -shared -fPIC -O2``: ``fmi2DoStep`` + ``fmi2GetReal`` of all outputs,
    timed in C by ``native_step.c``, interleaved, best of 5."""
    import shutil
    import zipfile

    from fmpy import read_model_description
    from fmpy.build import build_platform_binary

    from mbfmu.fmu.builder import build_fmu
    from mbfmu.fmu.native import toolchain
    from mbfmu.plant.library import load_plant
    print(f"\n{'plant':<18}{'step s':>8}{'shipped us':>12}{'fmpy us':>9}{'fmpy/shipped':>14}{'cc -O2 us':>11}"
          f"{'cc/shipped':>12}")
    for name in names:
        folder = out / f"sources_{name}"
        fmu = build_fmu(name, folder, runtime="native", platforms=("linux64",), overwrite=True)
        md = read_model_description(str(fmu))
        ident, step = md.coSimulation.modelIdentifier, load_plant(name).default_step
        libs = {}
        for kind in ("shipped", "fmpy", "cc"):
            d = folder / kind
            with zipfile.ZipFile(fmu) as z:
                z.extractall(d)
            lib = d / "binaries" / "linux64" / f"{ident}.so"
            if kind == "fmpy":
                lib.unlink()
                (folder / "cmake").mkdir()
                _quiet(build_platform_binary, d.resolve(), folder / "cmake")
            elif kind == "cc":
                files = md.buildConfigurations[0].sourceFileSets[0].sourceFiles
                subprocess.run([toolchain.compiler("linux64"), "-shared", "-fPIC", "-O2", "-o", str(lib),
                                *(str(d / "sources" / f) for f in files), "-lm"], check=True)
            libs[kind] = lib
        exe = folder / "native_step"
        srcs = [str(p) for p in toolchain.sources() if p.name not in ("fmi2.c", "fmi3.c")]
        subprocess.run([toolchain.compiler("linux64"), *toolchain.CFLAGS, f"-I{toolchain.KERNEL_DIR}",
                        f"-I{toolchain.RUNTIME_DIR}", "-o", str(exe), str(REPO / "benchmarks" / "native_step.c"),
                        *srcs, str(folder / "shipped" / "sources" / "model_data.c"), "-ldl", "-lm"], check=True)
        best = {k: float("inf") for k in libs}
        for _ in range(5):
            for kind, lib in libs.items():
                res = subprocess.run([str(exe), str(lib), md.guid, repr(step), str(steps * 4), "1"],
                                     capture_output=True, text=True, check=True)
                best[kind] = min(best[kind], json.loads(res.stdout.splitlines()[-1])["step_get_ns"] / 1e3)
        print(f"{name:<18}{step:>8g}{best['shipped']:>12.2f}{best['fmpy']:>9.2f}"
              f"{best['fmpy'] / best['shipped']:>14.3f}{best['cc']:>11.2f}{best['cc'] / best['shipped']:>12.3f}")
        shutil.rmtree(folder, ignore_errors=True)


def native_table(names: list[str], steps: int, out: Path) -> None:
    """Print the native runtime's table (see the module docstring)."""
    from mbfmu.fmu.native import NativeUnsupported, check_supported
    from mbfmu.plant.library import load_plant
    print(f"\n{'plant':<18}{'step s':>8}{'native us':>11}{'bare us':>9}{'nat/bare':>10}"
          f"{'pythonfmu us':>14}{'py/nat':>8}{'RSS +kB/1000':>14}")
    cases = [(n, load_plant(n).default_step) for n in names]
    if "rigid_arm" in names:
        cases.insert(names.index("rigid_arm") + 1, ("rigid_arm", 1e-3))
    for name, step in cases:
        try:
            check_supported(load_plant(name))
        except NativeUnsupported as exc:
            print(f"{name:<18}{step:>8g}  native refused: {exc}")
            continue
        r = bench_native(name, step, steps * 4, 1000, out)
        py = bench(name, name, steps, out, step)
        nat, bare = r["step_get_ns"] / 1e3, r["bare_ns"] / 1e3
        pys = py["fmu_step"] * 1e6
        print(f"{name:<18}{step:>8g}{nat:>11.2f}{bare:>9.2f}{nat / bare:>10.2f}{pys:>14.1f}"
              f"{pys / nat:>8.1f}{r['rss_growth'] / 1024:>14.0f}")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="library plants (default: all) besides the test pendulum")
    parser.add_argument("--steps", type=int, default=500, help="communication steps timed (default 500)")
    parser.add_argument("--native-only", action="store_true", help="only the native runtime's table")
    parser.add_argument("--sources", action="store_true",
                        help="only the table of the native FMU's shipped binary vs builds from its sources/")
    parser.add_argument("--me-fmi3", action="store_true",
                        help="only the Model Exchange (getDerivatives vs aba) and FMI 3 vs FMI 2 step table")
    args = parser.parse_args(argv)
    if args.sources:
        from mbfmu.plant.library import list_plants
        with tempfile.TemporaryDirectory() as tmp:
            sources_table(list(args.names or list_plants()), args.steps, Path(tmp))
        return 0
    if args.me_fmi3:
        from mbfmu.plant.library import list_plants
        with tempfile.TemporaryDirectory() as tmp:
            me_fmi3_table(list(args.names or list_plants()), args.steps * 4, Path(tmp))
        return 0
    if args.native_only:
        from mbfmu.plant.library import list_plants
        with tempfile.TemporaryDirectory() as tmp:
            native_table(list(args.names or list_plants()), args.steps, Path(tmp))
        return 0
    cases = {"damped_pendulum (test)": PENDULUM}
    try:
        from mbfmu.plant.library import list_plants
        cases.update({n: n for n in (args.names or list_plants())})
    except ImportError as exc:
        print(f"(no plant library: {exc})")
    print(f"{'plant':<24}{'step s':>9}{'cold ms':>10}{'warm ms':>10}{'FMU us/step':>13}"
          f"{'direct us/step':>16}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in cases.items():
            r = bench(name.split()[0], spec, args.steps, Path(tmp))
            print(f"{name:<24}{r['h']:>9g}{r['cold'] * 1e3:>10.1f}{r['warm'] * 1e3:>10.1f}"
                  f"{r['fmu_step'] * 1e6:>13.1f}{r['direct_step'] * 1e6:>16.1f}"
                  f"{r['fmu_step'] / r['direct_step']:>8.2f}")
        native_table([n for n in cases.values() if n != PENDULUM], args.steps, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
