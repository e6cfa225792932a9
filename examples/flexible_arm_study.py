"""Flexible-arm closed-loop study: an LQG servo designed on the linearized
flexible plant against a PD controller designed on the rigid-body model.

Task: from rest at q = (0, 0) move the joints to ``Q_REF`` (rad) and hold,
sampling at ``H`` = 10 ms. Measurements: both joint angles and the bending
strain at both link roots (strain gauges).

``rigid_pd``
    ``tau = Kp (q_ref - q) - Kd qd`` per joint, with ``Kp = J w^2``,
    ``Kd = 2 zeta J w`` for the joint inertia ``J`` a rigid-body model sees
    (the low-frequency limit of the linear model, ``lim s^2 G(s)``) and a
    bandwidth ``w`` near the first flexible mode: fast on the rigid model,
    it excites the links' bending.
``lqg``
    LQR with integral action on the joint angles plus a steady-state Kalman
    filter on (q, root strain), designed on the ZOH-discretized linear model
    of the flexible plant (``mbfmu.linearize``), so the bending modes are in
    the model and are actively damped.

Figures per controller: 2 % settling time of each joint (s), overshoot (%),
residual vibration (RMS tip deflection over the last 0.5 s, mm), peak torques
(N m). Both loops run in the co-simulation master's compiled loop
(:func:`mbfmu.control.master_loop.simulate_fmu_loop`): the plant as its
native FMU, the controller as a python-control unit, the set-points as step
sources.

Run ``python examples/flexible_arm_study.py [--output DIR]``.
"""
from __future__ import annotations

import json
from pathlib import Path

import control
import numpy as np

import mbfmu
from mbfmu.control.kalman import kalman_filter
from mbfmu.control.lqr import lqg_servo, lqr_servo
from mbfmu.control.master_loop import native_plant_fmu, simulate_fmu_loop
from mbfmu.cosim import sources
from mbfmu.example_cli import example_parser
from mbfmu.cosim.recording.result import Result, make_array

H = 1e-3                        # s, sample / communication step (motor loops: the small rotor inertias need it)
Q_REF = np.array([0.6, -0.4])   # rad, joint targets
T_STEP = 0.05                   # s, time of the reference step
MEASURED = ["q[1]", "q[2]", "root_strain[1]", "root_strain[2]"]
TRACKED = ["q[1]", "q[2]"]


# Geared joint motors: a rotor inertia of 4e-5 and 1.2e-5 kg m^2 behind a 1:50
# gear reflects 0.1 and 0.03 kg m^2 onto the joints. (The library default, a
# direct drive with 0.01 and 0.004 kg m^2, lets the sampled velocity feedback
# of any useful PD destabilize the rotor modes unless sampled far above 1 kHz.)
GEARED = {"motor_inertia_1": 0.1, "motor_inertia_2": 0.03}


def make_plant(**parameters):
    """The library's flexible arm (assumed modes) with geared joint motors."""
    return mbfmu.load_plant("flexible_arm", **{**GEARED, **parameters})


def design(plant) -> dict:
    """Linearize at rest and design both controllers.

    Returns a dict with the continuous linear model ``sys``, its measured
    discrete part ``sysd``, the controllers ``lqg`` and ``rigid_pd`` and the
    flexible-mode frequencies (Hz) of the linear model.
    """
    sys = mbfmu.linearize(plant)
    idx = [list(sys.output_labels).index(n) for n in MEASURED]
    meas = control.ss(sys.A, sys.B, sys.C[idx], sys.D[idx], inputs=list(sys.input_labels),
                      outputs=MEASURED, states=list(sys.state_labels))
    sysd = control.c2d(meas, H, "zoh")
    n = sysd.nstates
    Cq = sysd.C[:2]
    Cs = sysd.C[2:]
    # weights: joint angles and bending strain (scaled to ~1 mm/m strain), velocities lightly
    Q = 10.0 * Cq.T @ Cq + 1e5 * Cs.T @ Cs + 1e-2 * np.eye(n)
    lqr = lqr_servo(sysd, Q, R=[1e-3, 1e-3], Qi=[200.0, 200.0], track=TRACKED)
    kf = kalman_filter(sysd, Qn=1e-2 * np.eye(n), Rn=[1e-8, 1e-8, 1e-12, 1e-12])
    lqg = lqg_servo(sysd, lqr, kf, track=TRACKED, name="lqg")
    poles = np.linalg.eigvals(sys.A)
    freqs = np.unique(np.round(np.abs(poles[np.abs(poles.imag) > 1e-6].imag) / (2 * np.pi), 6))
    return {"sys": sys, "sysd": sysd, "lqg": lqg, "rigid_pd": rigid_pd(sys, freqs[0]),
            "mode_frequencies_hz": freqs}


def rigid_joint_inertia(sys) -> np.ndarray:
    """Joint-space inertia (kg m^2) a rigid-body model sees: the inverse of
    ``lim_{s->0} s^2 G_q(s)``, taken at s = 0.05 j rad/s."""
    s = 0.05j
    iq = [list(sys.output_labels).index(n) for n in TRACKED]
    G = sys.C[iq] @ np.linalg.solve(s * np.eye(sys.nstates) - sys.A, sys.B)
    return np.real(np.linalg.inv(s * s * G))


def rigid_pd(sys, first_mode_hz: float, zeta: float = 0.7) -> control.StateSpace:
    """Discrete PD on each joint with bandwidth at 30 % of the first flexible mode."""
    J = np.diag(rigid_joint_inertia(sys))
    w = 0.3 * 2 * np.pi * first_mode_hz
    Kp, Kd = J * w * w, 2 * zeta * J * w
    D = np.hstack([np.diag(Kp), -np.diag(Kp), -np.diag(Kd)])
    ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, 6)), np.zeros((2, 0)), D, H,
                      inputs=["q[1]_ref", "q[2]_ref", "q[1]", "q[2]", "v[1]", "v[2]"],
                      outputs=["tau[1]", "tau[2]"], name="rigid_pd")
    ctrl.Kp, ctrl.Kd = Kp, Kd
    return ctrl


def reference_sources() -> list:
    """The joint set-points: a step of ``Q_REF`` at ``T_STEP`` per joint, as
    source units (outputs ``q[1]_ref``, ``q[2]_ref``, rad). The step is placed
    1e-12 s early so that the sample at ``T_STEP`` sees it whatever the last
    bit of its time."""
    return [sources.step(f"q{k + 1}_ref", T_STEP - 1e-12, float(Q_REF[k]), unit="rad", output=f"q[{k + 1}]_ref")
            for k in range(2)]


def figures(plant, time, Y, U) -> dict:
    """Settling time, overshoot, residual vibration and peak torque."""
    names = [s.name for s in plant.outputs]
    out = {}
    for k in range(2):
        q = Y[:, names.index(f"q[{k + 1}]")]
        err = np.abs(q - Q_REF[k])
        outside = np.flatnonzero(err > 0.02 * abs(Q_REF[k]))
        # None: not settled within the run (JSON has no infinity)
        t_settle = float(time[outside[-1] + 1] - T_STEP) if outside.size and outside[-1] + 1 < len(time) \
            else (None if outside.size else 0.0)
        over = max(0.0, float(np.max((q - Q_REF[k]) * np.sign(Q_REF[k])))) / abs(Q_REF[k]) * 100
        out[f"joint{k + 1}"] = {"settling_time_s": t_settle, "overshoot_percent": over,
                                "peak_torque_Nm": float(np.max(np.abs(U[:, k])))}
    last = time >= time[-1] - 0.5
    defl = np.hypot(Y[last, names.index("tip_deflection[1]")], Y[last, names.index("tip_deflection[2]")])
    out["residual_vibration_mm"] = float(np.sqrt(np.mean(defl ** 2)) * 1e3)
    out["peak_tip_deflection_mm"] = float(np.max(np.abs(Y[:, [names.index("tip_deflection[1]"),
                                                              names.index("tip_deflection[2]")]])) * 1e3)
    return out


def run_loop(plant, controller, stop_time: float, fmu):
    """The loop in the co-simulation master: the plant's native FMU, the
    controller as a python-control unit, the references as step sources.
    Returns ``(time, X, Y, U)``: states, outputs and torques at the samples."""
    res = simulate_fmu_loop(plant, fmu, controller, stop_time, references=reference_sources())
    return res.time, res.x, res.y, res.u


def _plot(plant, runs: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [s.name for s in plant.outputs]
    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for label, (time, _, Y, U) in runs.items():
        for k, ls in ((0, "-"), (1, "--")):
            ax[0].plot(time, Y[:, names.index(f"q[{k + 1}]")], ls, label=f"{label} q[{k + 1}]")
            ax[1].plot(time, Y[:, names.index(f"tip_deflection[{k + 1}]")] * 1e3, ls,
                       label=f"{label} link {k + 1}")
            ax[2].plot(time, U[:, k], ls, label=f"{label} tau[{k + 1}]")
    for k, q in enumerate(Q_REF):
        ax[0].axhline(q, color="gray", lw=0.6)
    ax[0].set_ylabel("joint angle [rad]")
    ax[1].set_ylabel("tip deflection [mm]")
    ax[2].set_ylabel("joint torque [N m]")
    ax[2].set_xlabel("time [s]")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=7, ncol=2)
    ax[0].set_title("Flexible arm: LQG on the flexible model vs PD on the rigid model")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(output_dir: str | Path = "results/flexible_arm_study", stop_time: float = 2.0,
        plots: bool = True, replay: bool = True, fmu_dir: str | Path | None = None) -> dict:
    """Design, simulate both loops, write results; returns the figures.

    Both loops run in the co-simulation master with the plant's native FMU
    (geared motors, so not the library's default parameters), built into
    ``fmu_dir``, by default ``output_dir``.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    plant = make_plant()
    d = design(plant)
    fmu = native_plant_fmu(plant, out if fmu_dir is None else Path(fmu_dir))
    runs = {label: run_loop(plant, d[label], stop_time, fmu) for label in ("rigid_pd", "lqg")}
    summary = {"mode_frequencies_hz": [float(f) for f in d["mode_frequencies_hz"][:4]],
               "plant": "native FMU in the co-simulation master"}
    for label, (time, X, Y, U) in runs.items():
        summary[label] = figures(plant, time, Y, U)
        # outputs and inputs to read, the states to replay (mbfmu view places the bodies from them)
        names = (["time"] + [s.name for s in plant.outputs] + [s.name for s in plant.inputs]
                 + [f"states.{s.name}" for s in plant.states])
        Result(make_array(names, np.column_stack([time, Y, U, X])), meta={"plant": "flexible_arm"}).save(
            out / f"{label}.npz")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if plots:
        _plot(plant, runs, out / "flexible_arm_study.png")
    if replay:
        from mbfmu.viewer import Recording, write_html
        for label, (time, X, _, _) in runs.items():
            rec = make_array(["time"] + [s.name for s in plant.states], np.column_stack([time, X]))
            write_html(Recording(rec, plant), out / f"replay_{label}.html",
                       title=f"flexible arm, {label}")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = example_parser(__doc__, "results/flexible_arm_study")
    ap.add_argument("--stop-time", type=float, default=2.0, help="simulated time, s")
    args = ap.parse_args(argv)
    print(json.dumps(run(args.output, args.stop_time), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
