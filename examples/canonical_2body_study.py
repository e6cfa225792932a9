"""Canonical two-body study: the velocity-feedback motor
``k (omega_0 - gamma_1_dot)`` spinning the arm up to ``omega_0``, on the
two-body, 4-DOF example of Shimanovsky and Ivanov, "Equations of motion of
systems of coupled rigid bodies in canonical variables" (Bulletin of Perm
University, Mathematics, Mechanics, Informatics, 2013).

The plant is ``models/canonical_2body.py`` (integrated in canonical
variables ``(q, p)``): body 1 turns about the vertical ``Ox`` (``gamma_1``),
the point A slides along it (``y_2``, O-A spring ``c``, free length
``y_20``), body 2 hangs from A on a two-axis hinge (``beta_2``, ``alpha_2``).
The motor is part of the plant; its set-point ``omega_0`` is the input. The
paper's model has no damping; here the O-A spring and the hinge get light
dampers (``SPRING_DAMPING``, ``GIMBAL_DAMPING``) so the runs reach a steady
state.

Steady state (a relative equilibrium): ``gamma_1_dot = omega_0`` (the
motor torque vanishes: no other torque acts about ``Ox``), the slider where
the spring balances the centrifugal force on body 2, body 2 swung outward
(``alpha_2 < 0`` for ``x_c2 < 0``), ``beta_2 = 0``. :func:`relative_equilibrium`
finds it with Newton's method on the plant's own equations (``p_dot = 0``
for the rates ``(omega_0, 0, 0, 0)``).

Runs
----
Both run in the co-simulation master's compiled loop
(:func:`mbfmu.control.master_loop.simulate_fmu_loop`), the plant as its
native FMU sampled every ``H``; the small step starts there from the steady
state given as the plant's initial-condition parameters.

``spin_up``
    From rest (spring at its free length, body 2 hanging), ``omega_0`` steps
    from 0 to ``OMEGA_0`` at t = 0.
``small_step``
    From the steady state at ``OMEGA_0``, ``omega_0`` steps by ``SMALL_STEP``
    (rad/s) at t = 0: the settling times of ``gamma_1_dot`` and ``y_2`` are
    compared with the linear model at the steady state
    (:func:`mbfmu.control.linearize`, central differences in canonical
    variables): its step response and its poles.

Figures: settling times (2 % of the change) of ``gamma_1_dot`` and ``y_2``,
overshoot of ``gamma_1_dot``, steady slider position and swing angle, peak
motor torque, the linear model's poles (natural frequency, damping) and its
predicted settling times.

Run ``python examples/canonical_2body_study.py --output DIR``; it writes
``summary.json``, ``spin_up.npz`` and ``small_step.npz`` (time, states,
outputs), ``canonical_2body_study.png`` and ``replay.html`` (spin-up).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import control
import numpy as np

import mbfmu
from mbfmu.control import linearize
from mbfmu.control.master_loop import native_plant_fmu, simulate_fmu_loop
from mbfmu.errors import SimulationError
from mbfmu.example_cli import example_parser
from mbfmu.cosim.recording.result import Result

OMEGA_0 = 2.0            # rad/s, motor set-point of the spin-up
SMALL_STEP = 0.05        # rad/s, set-point step for the linear comparison
SPRING_DAMPING = 10.0    # N s/m, O-A spring damper (slider mode ~ 14 rad/s: zeta ~ 0.25)
GIMBAL_DAMPING = 0.3     # N m s/rad, hinge dampers of body 2 (swing ~ 6 rad/s: zeta ~ 0.15)
H = 0.01                 # s, output sample time (plant default_step)
SPIN_UP_STOP = 20.0      # s
SMALL_STEP_STOP = 12.0   # s
BAND = 0.02              # settling band, fraction of the change


def make_plant(**params):
    kw = dict(spring_damping=SPRING_DAMPING, gimbal_damping=GIMBAL_DAMPING)
    kw.update(params)
    return mbfmu.load_plant("canonical_2body", **kw)


def relative_equilibrium(plant, omega_0: float, tol: float = 1e-12) -> np.ndarray:
    """State of steady rotation at ``omega_0``: rates ``(omega_0, 0, 0, 0)``,
    ``(y_2, beta_2, alpha_2)`` solving ``p_dot[2:4] = 0`` (Newton, central
    differences of the plant's derivatives). ``gamma_1 = 0``."""
    u = np.array([omega_0, 0.0])
    qd = np.array([omega_0, 0.0, 0.0, 0.0])

    def residual(z):
        x = plant.state_from([0.0, z[0], z[1], z[2]], qd)
        return plant.derivatives(0.0, x, u)[5:8]

    y20 = next(s.start for s in plant.parameters if s.name == "y20")
    z = np.array([y20, 0.0, -0.3])
    for _ in range(50):
        r = residual(z)
        if np.abs(r).max() < tol:
            return plant.state_from([0.0, z[0], z[1], z[2]], qd)
        J = np.column_stack([(residual(z + e) - residual(z - e)) / 2e-6 for e in 1e-6 * np.eye(3)])
        z = z - np.linalg.solve(J, r)
    raise SimulationError(f"no steady rotation found at omega_0 = {omega_0} rad/s (residual {np.abs(r).max():.3g})")


def initial_condition(x: np.ndarray, plant) -> dict[str, float]:
    """The plant parameters that start it at state ``x`` (``gamma_1``, ``y_2``,
    ``beta_2``, ``alpha_2`` and the rate of body 1; the other rates must be
    zero, as in a steady rotation)."""
    q = x[:4]
    qd = plant.derivatives(0.0, x, plant.default_inputs())[:4]
    if np.abs(qd[1:]).max() > 1e-9 * max(1.0, abs(qd[0])):
        raise SimulationError(f"state {x} moves more than body 1: the plant's parameters cannot start it there")
    return dict(gamma1_0=float(q[0]), y2_0=float(q[1]), beta2_0=float(q[2]), alpha2_0=float(q[3]),
                gamma1_dot_0=float(qd[0]))


def simulate(plant, fmu, omega_0: float, stop: float, h: float = H, start: dict | None = None) -> dict:
    """Constant set-point run in the co-simulation master (the plant's native
    FMU, its set-point input held at ``omega_0``, sampled at ``h``), from the
    plant's initial state or the initial condition ``start`` (parameters of
    :func:`initial_condition`): samples of time, states, outputs, rates."""
    res = simulate_fmu_loop(plant, fmu, None, stop, values=start, u_offset=np.array([omega_0, 0.0]), step=h)
    names = [s.name for s in plant.outputs]
    qd = res.y[:, names.index("v[1]"):names.index("v[1]") + 4]
    return dict(time=res.time, x=res.x, y=res.y, qd=qd, q=res.x[:, :4], omega_0=omega_0,
                motor=res.y[:, names.index("motor_torque")])


def settling_time(t: np.ndarray, y: np.ndarray, final: float, change: float, band: float = BAND) -> float:
    """First time after which ``|y - final| <= band |change|`` for good."""
    out = np.flatnonzero(np.abs(y - final) > band * abs(change))
    if not out.size:
        return 0.0
    return float("inf") if out[-1] + 1 >= len(t) else float(t[out[-1] + 1])


def linear_model(plant, x_ss: np.ndarray, omega_0: float) -> control.StateSpace:
    return linearize(plant, x_ss, [omega_0, 0.0])


def linear_prediction(sys: control.StateSpace, step: float, stop: float, h: float = H) -> dict:
    """Step response of the linear model to ``omega_0 += step``: ``v[1]`` and
    ``q[2]`` deviations at the samples, their settling times, and the poles."""
    t = np.arange(int(round(stop / h)) + 1) * h
    resp = control.forced_response(sys, t, np.vstack([np.full(len(t), step), np.zeros(len(t))]))
    outs = list(sys.output_labels)
    dqd1 = resp.outputs[outs.index("v[1]")]
    dy2 = resp.outputs[outs.index("q[2]")]
    poles = np.linalg.eigvals(sys.A)
    moving = poles[np.abs(poles) > 1e-8]
    slow = moving[np.argmax(moving.real)]
    return dict(time=t, dqd1=dqd1, dy2=dy2, poles=poles, slowest=slow,
                overshoot_qd1_percent=float(max(0.0, (dqd1 - step).max() * math.copysign(1.0, step)) / abs(step) * 100),
                settle_qd1=settling_time(t, dqd1, dqd1[-1], step),
                settle_y2=settling_time(t, dy2, dy2[-1], dy2[-1]))


def _modes(poles: np.ndarray) -> list[dict]:
    out = []
    for p in sorted(poles[poles.imag >= -1e-12], key=lambda p: (abs(p), p.imag)):
        w = abs(p)
        out.append(dict(re=float(p.real), im=float(p.imag), wn_rad_s=float(w),
                        zeta=float(-p.real / w) if w > 1e-12 else None))
    return out


def metrics(run: dict, omega_0: float, start_rate: float, y2_change: float | None = None) -> dict:
    t, qd, q = run["time"], run["qd"], run["q"]
    change = omega_0 - start_rate
    y2_final = float(q[-1, 1])
    y2_change = (y2_final - float(q[0, 1])) if y2_change is None else y2_change
    past = (qd[:, 0] - omega_0) * math.copysign(1.0, change)
    return dict(
        settling_time_gamma1_dot_s=settling_time(t, qd[:, 0], omega_0, change),
        settling_time_y2_s=settling_time(t, q[:, 1], y2_final, y2_change),
        overshoot_gamma1_dot_percent=float(max(0.0, past.max()) / abs(change) * 100.0),
        final_gamma1_dot_rad_s=float(qd[-1, 0]),
        final_y2_m=y2_final,
        final_beta2_rad=float(q[-1, 2]),
        final_alpha2_rad=float(q[-1, 3]),
        peak_motor_torque_Nm=float(np.abs(run["motor"]).max()),
        final_motor_torque_Nm=float(run["motor"][-1]),
    )


def _record(plant, run: dict) -> np.ndarray:
    names = ["time"] + [s.name for s in plant.states] + [s.name for s in plant.outputs if s.name[:2] != "p["]
    rec = np.zeros(len(run["time"]), dtype=[(n, float) for n in dict.fromkeys(names)])
    rec["time"] = run["time"]
    for k, s in enumerate(plant.states):
        rec[s.name] = run["x"][:, k]
    for k, s in enumerate(plant.outputs):
        if s.name in rec.dtype.names and s.name not in [st.name for st in plant.states]:
            rec[s.name] = run["y"][:, k]
    return rec


def _plot(spin: dict, small: dict, lin: dict, x_ss: np.ndarray, step: float, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    t = spin["time"]
    ax[0, 0].plot(t, spin["qd"][:, 0], label="gamma_1_dot (nonlinear)")
    ax[0, 0].axhline(spin["omega_0"], color="k", ls="--", lw=0.8, label="omega_0")
    ax[0, 0].set_ylabel("body 1 rate (rad/s)")
    ax[0, 0].set_title(f"spin-up from rest: omega_0 = 0 -> {spin['omega_0']:g} rad/s")
    ax2 = ax[0, 0].twinx()
    ax2.plot(t, spin["motor"], color="C3", lw=0.8, label="motor torque")
    ax2.set_ylabel("motor torque (N m)", color="C3")
    ax[0, 0].legend(loc="center right", fontsize=8)
    ax[0, 1].plot(t, spin["q"][:, 1], label="y_2 (nonlinear)")
    ax[0, 1].axhline(x_ss[1], color="k", ls="--", lw=0.8, label="steady state (spring = centrifugal)")
    ax[0, 1].set_ylabel("slider position y_2 = OA (m)")
    ax3 = ax[0, 1].twinx()
    ax3.plot(t, np.degrees(spin["q"][:, 3]), color="C2", lw=0.8, label="alpha_2")
    ax3.plot(t, np.degrees(spin["q"][:, 2]), color="C4", lw=0.8, label="beta_2")
    ax3.set_ylabel("body 2 hinge angles (deg)")
    ax[0, 1].legend(loc="lower right", fontsize=8)
    ax3.legend(loc="upper right", fontsize=8)
    ax[0, 1].set_title("slider and body 2 during the spin-up")
    ts = small["time"]
    ax[1, 0].plot(ts, small["qd"][:, 0] - small["qd"][0, 0], label="nonlinear plant")
    ax[1, 0].plot(lin["time"], lin["dqd1"], "--", label="linear model at the steady state")
    ax[1, 0].set_ylabel("change of gamma_1_dot (rad/s)")
    ax[1, 0].set_title(f"small step omega_0 += {step:g} rad/s from the steady rotation")
    ax[1, 1].plot(ts, 1e3 * (small["q"][:, 1] - small["q"][0, 1]), label="nonlinear plant")
    ax[1, 1].plot(lin["time"], 1e3 * lin["dy2"], "--", label="linear model at the steady state")
    ax[1, 1].set_ylabel("change of y_2 (mm)")
    ax[1, 1].set_title("slider response to the small step")
    for a in ax.flat:
        a.set_xlabel("time (s)")
        a.grid(alpha=0.3)
    for a in ax[1]:
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run(output_dir: str | Path = "results/canonical_2body_study", spin_up_stop: float = SPIN_UP_STOP,
        small_step_stop: float = SMALL_STEP_STOP, omega_0: float = OMEGA_0, step: float = SMALL_STEP,
        plots: bool = True, replay: bool = True, fmu_dir: str | Path | None = None) -> dict:
    """Spin-up and small-step runs, linear model at the steady state; writes
    results, plots and replay; returns the performance figures.

    Parameters
    ----------
    output_dir : path
    spin_up_stop, small_step_stop : float
        Simulated time of the two runs, s.
    omega_0 : float
        Set-point of the spin-up, rad/s.
    step : float
        Set-point step of the small-step run, rad/s.
    plots, replay : bool
        Write the PNG figure / the HTML replay.
    fmu_dir : path, optional
        Where to build the plant's native FMU (default: ``output_dir``).
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    plant = make_plant()
    x_ss = relative_equilibrium(plant, omega_0)
    x_ss2 = relative_equilibrium(plant, omega_0 + step)
    sys = linear_model(plant, x_ss, omega_0)
    lin = linear_prediction(sys, step, small_step_stop)

    fmu = native_plant_fmu(plant, out if fmu_dir is None else Path(fmu_dir))
    spin = simulate(plant, fmu, omega_0, spin_up_stop)
    small = simulate(plant, fmu, omega_0 + step, small_step_stop, start=initial_condition(x_ss, plant))
    slow = lin["slowest"]
    summary = dict(
        parameters=dict(omega_0_rad_s=omega_0, small_step_rad_s=step, spring_damping_Ns_per_m=SPRING_DAMPING,
                        gimbal_damping_Nms_per_rad=GIMBAL_DAMPING, motor_gain_Nms_per_rad=plant.k),
        steady_state=dict(y2_m=float(x_ss[1]), beta2_rad=float(x_ss[2]), alpha2_rad=float(x_ss[3]),
                          y2_after_small_step_m=float(x_ss2[1])),
        linear_model=dict(
            method=sys.linearization.method, poles=_modes(lin["poles"]),
            slowest_pole=dict(re=float(slow.real), im=float(slow.imag)),
            settling_time_pole_estimate_s=float(-math.log(BAND) / -slow.real),
            settling_time_gamma1_dot_s=lin["settle_qd1"], settling_time_y2_s=lin["settle_y2"],
            overshoot_gamma1_dot_percent=lin["overshoot_qd1_percent"],
            dc_gain_y2_m_per_rad_s=float(lin["dy2"][-1] / step)),
        spin_up=metrics(spin, omega_0, 0.0),
        small_step=metrics(small, omega_0 + step, omega_0, y2_change=float(x_ss2[1] - x_ss[1])),
    )
    summary["small_step"]["max_deviation_from_linear_gamma1_dot_rad_s"] = float(
        np.abs(small["qd"][:, 0] - small["qd"][0, 0] - lin["dqd1"]).max())
    summary["small_step"]["max_deviation_from_linear_y2_m"] = float(
        np.abs(small["q"][:, 1] - small["q"][0, 1] - lin["dy2"]).max())
    for name, r in (("spin_up", spin), ("small_step", small)):
        Result(_record(plant, r), meta={"plant": "canonical_2body"}).save(out / f"{name}.npz")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if plots:
        _plot(spin, small, lin, x_ss, step, out / "canonical_2body_study.png")
    if replay:
        from mbfmu.viewer import Recording, write_html
        write_html(Recording(_record(plant, spin), plant), out / "replay.html")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = example_parser(__doc__, "results/canonical_2body_study")
    ap.add_argument("--no-replay", action="store_true", help="skip the HTML replay")
    args = ap.parse_args(argv)
    summary = run(args.output, replay=not args.no_replay)
    print(json.dumps({k: v for k, v in summary.items() if k != "linear_model"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
