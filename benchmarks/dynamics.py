"""Engine speed against Pinocchio, measured side by side in one run.

Run:  make bench      (or: .venv/bin/python benchmarks/dynamics.py [--quick])

Prints microseconds per call (process CPU time) of rnea, crba, aba and the canonical sweep for a
7-DOF arm and revolute chains of 10, 30, 100 and 300 bodies (mbfmu, Pinocchio,
ratio mbfmu/Pinocchio), the import time of the engine in a fresh process, and
the wall time of 10 s of a free 10-link pendulum at 1 ms with RK4: mbfmu's
compiled loop, and the same loop written in Python around each library's aba.
Then MuJoCo (benchmark-only dependency, ``pip install .[bench]``) in the same
run: wall time per simulated second of free revolute chains (pendulums of
10, 30, 100, 300 links, no contacts, no damping) with RK4 at 1 ms, mbfmu's
compiled loop (``_kernels.rk4``) against ``mujoco.rollout`` (MuJoCo's C loop
around ``mj_step`` with its RK4 integrator), both from the same start, and
their joint-angle difference after 0.1 s (same equations: agreement to the
RK4 error).
Then (``--peers`` alone, or in the full run) the three engines side by side on
random revolute chains and random trees (random axes, placements, inertias;
trees with 30 % prismatic joints, each body's parent drawn among all earlier
bodies) of 10, 30, 100 and 300 links, from one URDF text each: rnea, crba,
forward dynamics (mbfmu: ``aba`` and ``forward_dynamics``, which takes ABA
or the sparse LTDL route by the tree's structure) per call, and RK4 at 1 ms
per simulated second (mbfmu ``_kernels.rk4``, MuJoCo ``rollout``). MuJoCo
loads the same URDF (contacts and constraints disabled); its calls are
``mj_kinematics + mj_comPos + mj_crb`` (crba, its sparse ``qM``; with
``mj_fullM`` as the dense matrix mbfmu's ``crba`` returns in a second column;
row ``crbaS``: mbfmu's ``_kernels.crba_pattern``, the same kernel writing only
the nonzeros, as MuJoCo's ``qM``),
``mj_forward`` (forward dynamics) and ``mj_kinematics + mj_comPos + mj_comVel +
mj_rne`` (rnea). The times are process CPU time (``time.process_time``, best
of interleaved repeats): on a shared machine that leaves out the time the
process waits for a core, not the caches it shares.
Pinocchio has no canonical-variable sweep; its column compares against
``pin.aba`` on (q, M^-1 p) plus ``M v`` (computeMinverse is O(N^2)), i.e. the
cheapest way to get the same (qdot, pdot) from Pinocchio's public API.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import timeit

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "dynamics"))
from random_trees import random_urdf  # noqa: E402

from mbfmu import load_urdf  # noqa: E402
from mbfmu.dynamics import _kernels, aba, crba, rnea  # noqa: E402


def per_call_us(fn, budget_s: float = 0.3) -> float:
    """Best-of-5 microseconds per call (process CPU time, see ``cpu_us``), with a
    call count sized to the budget."""
    timer = timeit.Timer(fn, timer=time.process_time)
    n = 1
    while True:
        t = timer.timeit(number=n)
        if t > 0.02:
            break
        n *= 4
    n = max(1, int(n * budget_s / 5 / t))
    return min(timer.repeat(number=n, repeat=5)) / n * 1e6


def chain_urdf(n: int, seed: int = 0) -> str:
    return random_urdf(np.random.default_rng(seed), n, prismatic_fraction=0.0, branchy=False)


def bench_algorithms(sizes, budget):
    rows = []
    for n in sizes:
        text = chain_urdf(n)
        m = load_urdf(text)
        pm = pin.buildModelFromXML(text)
        pd = pm.createData()
        rng = np.random.default_rng(1)
        q, v, x = rng.uniform(-1, 1, (3, m.nv))
        p = _kernels.momentum(m._h, q, v)
        h = m._h

        def pin_canonical():
            # v = M^-1 p via aba with zero velocity and gravity switched off is
            # what our sweep does internally; pinocchio: aba(q, 0, p) with g = 0
            pm.gravity.linear[:] = 0.0
            vel = pin.aba(pm, pd, q, np.zeros(pm.nv), p)
            pm.gravity.linear[:] = (0, 0, -9.81)
            a = pin.aba(pm, pd, q, vel, x)
            return pin.crba(pm, pd, q), a

        cases = [
            ("rnea", lambda: rnea(m, q, v, x), lambda: pin.rnea(pm, pd, q, v, x)),
            ("crba", lambda: crba(m, q), lambda: pin.crba(pm, pd, q)),
            ("aba", lambda: aba(m, q, v, x), lambda: pin.aba(pm, pd, q, v, x)),
            ("sweep", lambda: _kernels.sweep(h, q, p, x), pin_canonical),
        ]
        label = "7-DOF arm" if n == 7 else f"chain {n}"
        for name, ours, theirs in cases:
            a = per_call_us(ours, budget)
            b = per_call_us(theirs, budget)
            rows.append((label, name, a, b, a / b))
    return rows


def import_time(module: str = "mbfmu.dynamics") -> float:
    """Best of 5 wall times (s) of importing ``module`` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    times = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(5)]
    return min(times)


def pendulum_urdf(n: int = 10) -> str:
    links, joints = [], []
    for k in range(1, n + 1):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0 0 -0.25"/><mass value="1"/>'
                     f'<inertia ixx="0.0208" iyy="0.0208" izz="0.0002" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        z = "0" if k == 1 else "-0.5"
        joints.append(f'<joint name="j{k:02d}" type="revolute"><parent link="{"base" if k == 1 else f"l{k-1}"}"/>'
                      f'<child link="l{k}"/><origin xyz="0 0 {z}"/><axis xyz="0 1 0"/>'
                      '<limit effort="100" velocity="10" lower="-10" upper="10"/></joint>')
    return '<robot name="pendulum"><link name="base"/>' + "".join(links + joints) + "</robot>"


def bench_pendulum():
    text = pendulum_urdf(10)
    m = load_urdf(text)
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    q0 = np.linspace(0.2, 1.0, 10)
    v0 = np.zeros(10)
    tau = np.zeros(10)
    h, n_total = 1e-3, 10_000

    def compiled(n=n_total):
        return _kernels.rk4(m._h, q0, v0, tau, h, n)

    def python_loop(acc, n=n_total):
        def run():
            q, v = q0.copy(), v0.copy()
            for _ in range(n):
                k1v = acc(q, v); k1q = v
                k2v = acc(q + h / 2 * k1q, v + h / 2 * k1v); k2q = v + h / 2 * k1v
                k3v = acc(q + h / 2 * k2q, v + h / 2 * k2v); k3q = v + h / 2 * k2v
                k4v = acc(q + h * k3q, v + h * k3v); k4q = v + h * k3v
                q = q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
                v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
            return q, v
        return run

    t_c = min(timeit.repeat(compiled, number=1, repeat=3))
    t_ours = min(timeit.repeat(python_loop(lambda q, v: aba(m, q, v, tau)), number=1, repeat=2))
    t_pin = min(timeit.repeat(python_loop(lambda q, v: pin.aba(pm, pd, q, v, tau)), number=1, repeat=2))
    # the chain is chaotic: round-off differences grow, so compare after 1 s
    qa, _ = compiled(1000)
    qb, _ = python_loop(lambda q, v: pin.aba(pm, pd, q, v, tau), 1000)()
    return t_c, t_ours, t_pin, float(np.max(np.abs(qa - qb)))


def pendulum_mjcf(n: int) -> str:
    """The chain of :func:`pendulum_urdf` in MJCF: hinges about y, point-like
    inertias at -0.25 m, links 0.5 m apart, gravity -9.81 z, RK4 at 1 ms."""
    body = ""
    for k in range(n, 0, -1):
        pos = "0 0 0" if k == 1 else "0 0 -0.5"
        body = (f'<body name="l{k}" pos="{pos}"><joint name="j{k}" type="hinge" axis="0 1 0"/>'
                f'<inertial pos="0 0 -0.25" mass="1" diaginertia="0.0208 0.0208 0.0002"/>{body}</body>')
    return ('<mujoco><option timestep="0.001" integrator="RK4" gravity="0 0 -9.81">'
            '<flag contact="disable" constraint="disable"/></option>'
            f'<worldbody>{body}</worldbody></mujoco>')


def bench_mujoco(sizes, sim_time: float = 2.0, repeat: int = 3):
    """Rows (links, mbfmu s per simulated s, MuJoCo s per simulated s, ratio,
    max |q difference| after 0.1 s); each time the best of ``repeat``
    interleaved runs."""
    import mujoco
    import mujoco.rollout as rollout

    rows = []
    for n in sizes:
        m = load_urdf(pendulum_urdf(n))
        mj = mujoco.MjModel.from_xml_string(pendulum_mjcf(n))
        md = mujoco.MjData(mj)
        q0 = np.linspace(0.2, 1.0, n)
        v0 = np.zeros(n)
        tau = np.zeros(n)
        steps = int(round(sim_time / 1e-3))
        state0 = np.zeros(mujoco.mj_stateSize(mj, mujoco.mjtState.mjSTATE_FULLPHYSICS))
        md.qpos[:] = q0
        md.qvel[:] = 0.0
        mujoco.mj_getState(mj, md, state0, mujoco.mjtState.mjSTATE_FULLPHYSICS)

        def ours(k=steps):
            return _kernels.rk4(m._h, q0, v0, tau, 1e-3, k)

        def theirs(k=steps):
            return rollout.rollout(mj, md, state0[None, :], nstep=k)

        ours(10), theirs(10)  # warm up
        t_ours = t_mj = float("inf")
        for _ in range(repeat):  # interleaved, best of repeat (the machine is shared)
            t_ours = min(t_ours, timeit.timeit(ours, number=1))
            t_mj = min(t_mj, timeit.timeit(theirs, number=1))
        q_ours, _ = ours(100)
        st = theirs(100)[0]
        q_mj = st[0, -1, 1:1 + n] if st.ndim == 3 else st[-1, 1:1 + n]
        rows.append((n, t_ours / sim_time, t_mj / sim_time, t_ours / t_mj, float(np.max(np.abs(q_ours - q_mj)))))
    return rows


def tree_urdf(n: int, branchy: bool, seed: int = 0) -> str:
    """A random revolute chain, or a random tree with 30 % prismatic joints."""
    return random_urdf(np.random.default_rng(seed + n), n, prismatic_fraction=0.3 if branchy else 0.0,
                       branchy=branchy)


def mujoco_from_urdf(text: str):
    """MuJoCo's model of the URDF: RK4 at 1 ms, contacts and constraints off,
    no body fusing or inertia balancing (the same bodies as mbfmu's)."""
    import mujoco
    options = ('<mujoco><compiler fusestatic="false" discardvisual="true" balanceinertia="false"/>'
               '<option integrator="RK4" timestep="0.001"><flag contact="disable" constraint="disable"/>'
               '</option></mujoco>')
    return mujoco.MjModel.from_xml_string(text.replace('<robot name="random">', '<robot name="random">' + options, 1))


def cpu_us(fns, budget_s: float, repeat: int = 5) -> list[float]:
    """Best-of-``repeat`` process CPU microseconds per call of each function,
    the functions interleaved within each repeat."""
    counts = []
    for fn in fns:
        n = 1
        while timeit.Timer(fn, timer=time.process_time).timeit(number=n) < 0.01:
            n *= 4
        counts.append(n)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t = timeit.Timer(fn, timer=time.process_time).timeit(number=counts[k] * max(1, int(budget_s * 10)))
            best[k] = min(best[k], t / (counts[k] * max(1, int(budget_s * 10))) * 1e6)
    return best


def bench_peers(sizes, budget: float, sim_time: float):
    """Rows (structure, links, algorithm, mbfmu, MuJoCo, MuJoCo dense, Pinocchio,
    agreement): microseconds per call, or seconds per simulated second for
    RK4; agreement = max relative difference of mbfmu's result to MuJoCo's."""
    import mujoco
    import mujoco.rollout as rollout

    from mbfmu.dynamics import forward_dynamics
    rows = []
    for branchy in (False, True):
        for n in sizes:
            text = tree_urdf(n, branchy)
            m, h = load_urdf(text), None
            h = m._h
            mj = mujoco_from_urdf(text)
            md = mujoco.MjData(mj)
            pm = pin.buildModelFromXML(text)
            pd = pm.createData()
            names = [mj.joint(k).name for k in range(mj.njnt)]
            perm = np.array([names.index(name) for name in m.v_names])  # MuJoCo index of each mbfmu dof
            rng = np.random.default_rng(1)
            q, v, x = rng.uniform(-1, 1, (3, m.nv))
            md.qpos[perm], md.qvel[perm], md.qfrc_applied[perm] = q, v, x
            mujoco.mj_forward(mj, md)
            dense = np.zeros((mj.nv, mj.nv))
            mujoco.mj_fullM(mj, md, dense)

            def rel(a, b):
                return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))

            agree_M = rel(crba(m, q), dense[np.ix_(perm, perm)])
            agree_a = rel(forward_dynamics(m, q, v, x), md.qacc[perm])
            md.qacc[perm] = x

            def mj_crba():
                mujoco.mj_kinematics(mj, md)
                mujoco.mj_comPos(mj, md)
                mujoco.mj_crb(mj, md)

            def mj_crba_dense():
                mj_crba()
                mujoco.mj_fullM(mj, md, dense)

            rne_out = np.zeros(mj.nv)

            def mj_rnea():
                mujoco.mj_kinematics(mj, md)
                mujoco.mj_comPos(mj, md)
                mujoco.mj_comVel(mj, md)
                mujoco.mj_rne(mj, md, 1, rne_out)

            cases = [
                ("rnea", lambda: rnea(m, q, v, x), mj_rnea, None, lambda: pin.rnea(pm, pd, q, v, x), None),
                ("crba", lambda: crba(m, q), mj_crba, mj_crba_dense, lambda: pin.crba(pm, pd, q), agree_M),
                ("crbaS", lambda: _kernels.crba_pattern(h, q), mj_crba, None, None, None),
                ("aba", lambda: aba(m, q, v, x), lambda: mujoco.mj_forward(mj, md), None,
                 lambda: pin.aba(pm, pd, q, v, x), None),
                ("fd", lambda: forward_dynamics(m, q, v, x), lambda: mujoco.mj_forward(mj, md), None,
                 lambda: pin.aba(pm, pd, q, v, x), agree_a),
            ]
            label = "tree" if branchy else "chain"
            for name, ours, mjf, mjd, pinf, agree in cases:
                fns = [f for f in (ours, mjf, mjd, pinf) if f is not None]
                t = iter(cpu_us(fns, budget))
                a, b = next(t), next(t)
                c = next(t) if mjd else float("nan")
                d = next(t) if pinf else float("nan")
                rows.append((label, n, name, a, b, c, d, agree))
            # RK4 per simulated second, both from the same state
            tau = np.zeros(m.nv)
            steps = max(10, int(round(sim_time * (30 / n if n > 30 else 1) / 1e-3)))
            md.qpos[perm], md.qvel[perm], md.qfrc_applied[:] = q, v, 0.0
            state = np.zeros(mujoco.mj_stateSize(mj, mujoco.mjtState.mjSTATE_FULLPHYSICS))
            mujoco.mj_getState(mj, md, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
            t_ours, t_mj = cpu_us([lambda: _kernels.rk4(h, q, v, tau, 1e-3, steps),
                                   lambda: rollout.rollout(mj, md, state[None, :], nstep=steps)], 0.0, repeat=3)
            q_ours, _ = _kernels.rk4(h, q, v, tau, 1e-3, 100)
            st = rollout.rollout(mj, md, state[None, :], nstep=100)[0]
            q_mj = (st[0, -1] if st.ndim == 3 else st[-1])[1:1 + mj.nq][perm]
            per_s = 1e-6 / (steps * 1e-3)
            rows.append((label, n, "rk4", t_ours * per_s, t_mj * per_s, float("nan"), float("nan"),
                         rel(q_ours, q_mj)))
    return rows


def peers_table(args) -> None:
    """Print the three-engine table (``bench_peers``)."""
    try:
        import mujoco
    except ImportError:
        print("MuJoCo not installed (pip install .[bench]): no three-engine table")
        return
    budget = 0.1 if args.quick else 0.3
    print(f"mbfmu vs MuJoCo {mujoco.__version__} vs Pinocchio {pin.__version__}, process CPU time, best of "
          "interleaved repeats; us per call (rk4: s per simulated s); ratios mbfmu/peer; agree: max relative "
          "difference to MuJoCo's H (crba), qacc (fd), q after 0.1 s (rk4)")
    print(f"{'model':<6} {'links':>5} {'alg':<5} {'mbfmu':>9} {'MuJoCo':>9} {'MJ dense':>9} {'pin':>9} "
          f"{'/MuJoCo':>8} {'/pin':>6} {'agree':>8}")
    for label, n, name, a, b, c, d, agree in bench_peers([10, 30, 100, 300], budget, 0.5 if args.quick else 1.0):
        cd = f"{c:9.2f}" if c == c else f"{'':>9}"
        dd = f"{d:9.2f}" if d == d else f"{'':>9}"
        rp = f"{a / d:6.2f}" if d == d else f"{'':>6}"
        ag = f"{agree:8.1e}" if agree is not None else f"{'':>8}"
        if name == "rk4":
            print(f"{label:<6} {n:5d} {name:<5} {a:9.4f} {b:9.4f} {cd} {dd} {a / b:8.2f} {rp} {ag}", flush=True)
        else:
            print(f"{label:<6} {n:5d} {name:<5} {a:9.2f} {b:9.2f} {cd} {dd} {a / b:8.2f} {rp} {ag}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter timing budget")
    ap.add_argument("--mujoco-only", action="store_true", help="only the MuJoCo comparison")
    ap.add_argument("--peers", action="store_true", help="only the three-engine table (MuJoCo, Pinocchio)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="MuJoCo comparison rounds (each best of 3 interleaved); the median ratio "
                         "over the rounds is printed too")
    args = ap.parse_args()
    if args.mujoco_only:
        mujoco_table(args)
        return
    if args.peers:
        peers_table(args)
        return
    budget = 0.1 if args.quick else 0.4
    print(f"mbfmu engine vs Pinocchio {pin.__version__}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}")
    print(f"{'model':<11} {'algorithm':<7} {'mbfmu us':>10} {'pin us':>10} {'ratio':>7}")
    rows = bench_algorithms([7, 10, 30, 100, 300], budget)
    for label, name, a, b, r in rows:
        print(f"{label:<11} {name:<7} {a:10.2f} {b:10.2f} {r:7.2f}")
    aba_t = {label: a for label, name, a, b, r in rows if name == "aba"}
    print(f"aba growth t(300)/t(30): {aba_t['chain 300'] / aba_t['chain 30']:.2f} (linear: 10)")
    print(f"import mbfmu.dynamics in a fresh process: {import_time() * 1e3:.0f} ms "
          f"(of which numpy alone: {import_time('numpy') * 1e3:.0f} ms; pinocchio: "
          f"{import_time('pinocchio') * 1e3:.0f} ms)")
    t_c, t_ours, t_pin, diff = bench_pendulum()
    print("10 s of a free 10-link pendulum, RK4 at 1 ms (10,000 steps):")
    print(f"  mbfmu compiled loop (_kernels.rk4)      {t_c:8.3f} s  ratio to pin Python loop {t_c / t_pin:.3f}")
    print(f"  Python RK4 loop around mbfmu aba         {t_ours:8.3f} s  ratio {t_ours / t_pin:.3f}")
    print(f"  Python RK4 loop around pin.aba           {t_pin:8.3f} s  1.000")
    print(f"  max |q_mbfmu - q_pin| at t = 1 s (the chain is chaotic later): {diff:.1e} rad")
    mujoco_table(args)
    peers_table(args)


def mujoco_table(args) -> None:
    """Print the MuJoCo comparison (``args.rounds`` rounds, then the median ratios)."""
    try:
        import mujoco
    except ImportError:
        print("MuJoCo not installed (pip install .[bench]): no MuJoCo comparison")
        return
    sizes = [10, 30, 100, 300]
    sim_time = 0.5 if args.quick else 2.0
    print(f"free revolute chains, RK4 at 1 ms, per simulated second: mbfmu _kernels.rk4 vs MuJoCo "
          f"{mujoco.__version__} rollout (same run, best of 3 interleaved; {sim_time:g} s simulated, "
          f"{sim_time / 4:g} s at 300 links)")
    print(f"{'round':>5} {'links':>6} {'mbfmu s/s':>10} {'MuJoCo s/s':>11} {'ratio':>7} {'|dq| 0.1 s':>11}")
    ratios: dict[int, list[float]] = {n: [] for n in sizes}
    for k in range(max(1, args.rounds)):
        rows = bench_mujoco(sizes[:-1], sim_time) + bench_mujoco(sizes[-1:], sim_time / 4)
        for n, a, b, r, dq in rows:
            ratios[n].append(r)
            print(f"{k + 1:5d} {n:6d} {a:10.4f} {b:11.4f} {r:7.3f} {dq:11.1e}", flush=True)
    if args.rounds > 1:
        print("median ratio mbfmu/MuJoCo over the rounds: "
              + ", ".join(f"{n} links {np.median(v):.3f}" for n, v in ratios.items()))


if __name__ == "__main__":
    main()
