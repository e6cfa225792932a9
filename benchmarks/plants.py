"""Real-time factor of every plant in the library, each on its own.

For each plant of ``mbfmu.list_plants()`` (default parameters, constant
default inputs), runs ``Plant.simulate`` (``advance`` plus ``outputs_at`` at
every communication step, what an FMU ``doStep`` does) over a stretch of
simulated time and reports the wall time per simulated second and the
real-time factor (simulated time / wall time; > 1 is faster than real time),
with the integrator's internal step and the communication step used. The
best of ``--repeat`` runs is kept (the machine is shared).

Peer: for the plants whose mechanics a Pinocchio model reproduces with a few
lines (``rigid_arm``, ``canonical_2body``), the same run also times what a
user would otherwise write: a Python fixed-step RK4 loop at the plant's
internal step around ``pin.aba`` (the plant's default constant inputs and its
joint and spring forces written out in the right-hand side), plus the same
outputs computed with Pinocchio at every communication step. The Pinocchio
model is the plant's tree translated by ``tests/dynamics/pinocchio_bridge.py``.
Plant and peer runs alternate, best of ``--repeat`` each; ``ratio`` = plant
wall / peer wall (< 1: the plant is faster). Before timing, the peer's final
state and outputs after ``CHECK_TIME`` s must agree with the plant's to
``CHECK_TOL`` (relative, max norm), else the plant is reported as an error;
the difference is printed in the ``peer diff`` column.

Run from the repository root::

    .venv/bin/python benchmarks/plants.py                 # all plants, 2 s each
    .venv/bin/python benchmarks/plants.py rigid_arm --duration 5 --repeat 3

Output: a Markdown table (paste it into ``benchmarks/RESULTS.md``).
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import time
import traceback

import numpy as np

import mbfmu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "dynamics"))

CHECK_TIME = 0.5  # s of simulated time for the agreement check
CHECK_TOL = 1e-8  # relative (max norm) agreement of the final state and outputs (the peer: RK4)

NO_PEER = {
    "crash_occupant": "seat and floor contact, lap-and-shoulder belt, ball joints with stiffness, "
                      "damping and range limits: force laws a peer would have to re-implement",
    "satellite": "hinge latches (state switching), spring-deployed panels with dampers, reaction "
                 "wheels",
    "flexible_arm": "flexible links (assumed modes): not a rigid Pinocchio tree",
}


# ----------------------------------------------------------------- peers
def _rk4_peer(plant, q0, v0, accel, outputs):
    """A Python RK4 loop at the plant's internal step around ``accel(q, v)``
    from ``(q0, v0)`` (Pinocchio coordinates; additive q: the peer plants have
    no quaternions),
    with ``outputs(q, v)`` at every communication step, stored as
    ``Plant.simulate`` stores them."""
    def run(stop, step):
        n = int(round(stop / step))
        sub = max(1, int(np.ceil(step / plant.internal_step - 1e-9)))
        h = step / sub
        q, v = q0, v0
        Y = np.empty((n + 1, len(plant.outputs)))
        Y[0] = outputs(q, v)
        for k in range(n):
            for _ in range(sub):
                k1v = accel(q, v)
                k2q = v + h / 2 * k1v
                k2v = accel(q + h / 2 * v, k2q)
                k3q = v + h / 2 * k2v
                k3v = accel(q + h / 2 * k2q, k3q)
                k4q = v + h * k3v
                k4v = accel(q + h * k3q, k4q)
                q = q + h / 6 * (v + 2 * k2q + 2 * k3q + k4q)
                v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
            Y[k + 1] = outputs(q, v)
        return q, v, Y
    return run


def peer_rigid_arm(plant):
    """rigid_arm: frictionless revolute joints, no springs or limits, joint
    torques ``tau = u`` (default 0); outputs q, qd, tip position (forward
    kinematics of the forearm frame, point ``(l3, 0, 0)``), kinetic and
    potential energy."""
    import pinocchio as pin
    from pinocchio_bridge import to_pinocchio

    assert not plant.model.joint_forces and not plant.model.springs  # the RHS below has none
    pm, pq, pv = to_pinocchio(plant.model)
    pd = pm.createData()
    q0, v0 = plant.split(plant.initial_state())
    tau = (plant.input_matrix @ plant.default_inputs())[pv]
    fid = pm.getFrameId("forearm")
    tip = np.array([plant.l3, 0.0, 0.0])

    def accel(q, v):
        return pin.aba(pm, pd, q, v, tau)

    def outputs(q, v):
        pin.forwardKinematics(pm, pd, q, v)
        p_tip = pin.updateFramePlacement(pm, pd, fid).act(tip)
        ke = pin.computeKineticEnergy(pm, pd)
        pe = pin.computePotentialEnergy(pm, pd, q)
        return np.concatenate([q, v, p_tip, [ke, pe]])

    return _rk4_peer(plant, q0[pq], v0[pv], accel, outputs), pq, pv


def peer_canonical_2body(plant):
    """canonical_2body: arm gamma_1 (revolute about Ox), slider y_2
    (prismatic), body 2 on a 2-axis hinge (two revolute joints); forces
    written out: the O-A spring ``-c (y_2 - y20) - spring_damping y_2'`` (the
    slider moves on a line through O, so the spring acts along y_2 while
    ``y_2 > 0``), the motor ``k (omega_0 - gamma_1') + external_torque`` and
    the gimbal damping. Outputs q, qd, the generalized momenta ``M qd``
    (the plant integrates in canonical variables; the peer in (q, v)),
    kinetic energy, potential energy (gravity plus spring) and the motor
    torque."""
    import pinocchio as pin
    from pinocchio_bridge import to_pinocchio

    pm, pq, pv = to_pinocchio(plant.model)
    assert list(pv) == [0, 1, 2, 3], pv  # no permutation: the forces below use plant order
    pd = pm.createData()
    par = {s.name: s.start for s in plant.parameters}
    c, y20, k = par["c"], par["y20"], par["k"]
    ds, dg = par["spring_damping"], par["gimbal_damping"]
    omega0, ext = plant.default_inputs()
    q0, v0 = plant.split(plant.initial_state())

    def accel(q, v):
        tau = np.array([k * (omega0 - v[0]) + ext, -c * (q[1] - y20) - ds * v[1],
                        -dg * v[2], -dg * v[3]])
        return pin.aba(pm, pd, q, v, tau)

    def outputs(q, v):
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        ke = 0.5 * v @ M @ v
        pe = pin.computePotentialEnergy(pm, pd, q) + 0.5 * c * (q[1] - y20) ** 2
        return np.concatenate([q, v, M @ v, [ke, pe, k * (omega0 - v[0])]])

    return _rk4_peer(plant, q0, v0, accel, outputs), pq, pv


PEERS = {"rigid_arm": peer_rigid_arm, "canonical_2body": peer_canonical_2body}


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def check_peer(plant, peer, pq, pv, step) -> float:
    """Largest relative difference between the peer's and the plant's final
    (q, v) and outputs after ``CHECK_TIME`` s; raises if above ``CHECK_TOL``.
    The plant runs for the check at tolerance 1e-12 (its error-controlled
    ``advance`` at the default 1e-6 is accurate to about that, not 1e-9)."""
    stop = max(step, round(CHECK_TIME / step) * step)
    plant = copy.copy(plant)
    plant.set_tolerance(1e-12)
    _, X, Y = plant.simulate(stop, step)
    q, v = plant.split(X[-1])
    qp, vp, Yp = peer(stop, step)
    diff = max(_rel(qp, q[pq]), _rel(vp, v[pv]), _rel(Yp[-1], Y[-1]))
    if not diff <= CHECK_TOL:
        raise AssertionError(f"peer disagrees with the plant after {stop:g} s: relative difference "
                             f"{diff:.2e} > {CHECK_TOL:g}")
    return diff


def measure(name: str, duration: float, repeat: int) -> dict:
    """Build plant ``name`` and time ``simulate`` over ``duration`` s (or its
    default stop time if shorter)."""
    t0 = time.perf_counter()
    plant = mbfmu.load_plant(name)
    build = time.perf_counter() - t0
    step = plant.default_step
    stop = min(duration, plant.default_stop_time)
    stop = max(step, round(stop / step) * step)
    peer = diff = None
    if name in PEERS:
        peer, pq, pv = PEERS[name](plant)
        diff = check_peer(plant, peer, pq, pv, step)
    best = best_peer = float("inf")
    for _ in range(repeat):  # interleaved: plant, peer, plant, peer, ...
        t0 = time.perf_counter()
        plant.simulate(stop, step)
        best = min(best, time.perf_counter() - t0)
        if peer is not None:
            t0 = time.perf_counter()
            peer(stop, step)
            best_peer = min(best_peer, time.perf_counter() - t0)
    return dict(plant=name, states=len(plant.states), internal_step=plant.internal_step, step=step,
                simulated=stop, wall=best, per_second=best / stop, rtf=stop / best, build=build,
                peer=best_peer if peer is not None else None, diff=diff)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plants", nargs="*", help="plants to time (default: the whole library)")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds per plant (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per plant, best kept (default 1)")
    args = ap.parse_args(argv)
    names = args.plants or mbfmu.list_plants()
    try:
        import pinocchio
        pin_version = pinocchio.__version__
    except ImportError:  # the peers need the test dependency
        pin_version = None
        PEERS.clear()
    load = os.getloadavg()
    print(f"# plants benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, Pinocchio {pin_version or '(not installed)'}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    print("| plant | states | first step (s) | comm. step (s) | simulated (s) | wall (s) "
          "| wall per simulated s (s) | real-time factor | build (s) | peer (s) | ratio | peer diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for name in names:
        try:
            r = measure(name, args.duration, args.repeat)
        except Exception as exc:  # other plants may be work in progress: report, go on
            failed += 1
            print(f"| {name} | error: {type(exc).__name__}: {str(exc)[:80]} | | | | | | | | | | |")
            traceback.print_exc()
            continue
        print(f"| {r['plant']} | {r['states']} | {r['internal_step']:g} | {r['step']:g} | "
              f"{r['simulated']:g} | {r['wall']:.3f} | {r['per_second']:.4g} | {r['rtf']:.3g} | "
              f"{r['build']:.3f} | " + (f"{r['peer']:.3f} | {r['wall'] / r['peer']:.3g} | {r['diff']:.1e} |"
                                       if r["peer"] is not None else "- | - | - |"), flush=True)
    print("\npeer: Python RK4 loop around pin.aba at the plant's internal step, plus the outputs with "
          f"Pinocchio; ratio = plant wall / peer wall; peer diff = relative difference of the final "
          f"state and outputs after {CHECK_TIME:g} s (asserted <= {CHECK_TOL:g}).")
    absent = [n for n in names if n not in PEERS]
    if absent:
        print("no peer:")
        for n in absent:
            print(f"- {n}: {NO_PEER.get(n, 'no Pinocchio peer written' if pin_version else 'Pinocchio not installed')}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
