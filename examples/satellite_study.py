"""Satellite closed-loop study: attitude hold and slews with three reaction
wheels, during and after the deployment of the solar wings (the satellite
deployment test case of the MDAS II thesis, see ``models/satellite.py``).

The plant is ``models/satellite.py``: free-floating 500 kg hub, two wings of
three spring-deployed panels that latch, three reaction wheels (inputs
``wheel_torque[1..3]``, N m, the hub feels the reaction ``-wheel_torque``).

Design (on the linearized plant with its panel modes)
-----------------------------------------------------
1. Operating point: the deployed, latched configuration (found by
   :func:`mbfmu.control.trim` from the zero-angle guess with every latch
   engaged, zero rates, hub attitude = identity). :func:`mbfmu.control.linearize`
   gives the exact model (quaternion -> tangent increments); its lightly
   damped poles are the wing hinge modes (about 4.3 and 7.8 rad/s).
2. Controller: a quaternion PD on the attitude error with collocated rate
   feedback and the rigid-body feed-forward of the reference path::

       theta_e = 2 sign(q_e0) vec(q_e),  q_e = q_ref^* (x) q
       hub torque = -Kd (w - R_e^T w_ref + sat(Kd^-1 Kp theta_e)) + J a_ref
       wheel_torque = -hub torque            (saturated at U_MAX per wheel)

   (``sat`` limits the closing-rate demand to ``W_MAX`` in norm; in the small
   this is the plain PD ``-Kp theta_e - Kd w_e``.)

   ``Kp = J wn^2``, ``Kd = 2 zeta wn J`` per hub axis, with ``J`` the locked
   inertia of the deployed spacecraft about its centre of mass (joints held,
   wheel spin inertia removed). ``wn = 0.4 rad/s``, a decade below the first
   panel mode, so the loop does not excite the panels; sensors and actuators
   are collocated (hub attitude and rate, torque on the hub), so rate
   feedback only adds damping to the flexible modes.
3. Check on the linear model: the zero-order-hold discretization of the
   linear model at the controller step (50 ms) closed with the linearized
   control law; its poles (mapped back to ``s = ln z / h``) are reported
   next to the open-loop ones: rigid-body pairs near the design, panel modes
   at least as damped as in the open loop, the conserved quantities
   (angular and linear momentum, wheel angles, hub position) on ``z = 1``.
4. Robustness through deployment: the same fixed gains are checked on
   frozen-time linearizations along the open-loop deployment (stowed inertia
   is far smaller: the loop becomes faster and more damped) and then on the
   nonlinear plant, with a slew commanded while the wings are still opening.

Runs
----
``deploy_then_slew``
    Wings released at t = 0 under attitude hold; after they have latched, a
    rest-to-rest slew of ``SLEW_ANGLE`` about ``SLEW_AXIS`` along a quintic
    angle profile (``SLEW_START`` to ``SLEW_START + SLEW_TIME``).
``slew_during_deployment``
    The same slew starting at t = 2 s, while the inertia is still changing.

Figures: settling time (to 2 % of the slew angle, from the slew start),
overshoot past the target (% of the slew angle), peak attitude error during
deployment (deg), residual panel vibration (peak hinge deviation from the
latched equilibrium after the slew, over at most the last ``TAIL`` s, rad), peak wheel speed (rad/s)
and torque (N m), the angular-momentum drift (N m s) against the peak wheel
momentum it balances.

The two slew runs close the loop in the co-simulation master's compiled loop
(:func:`mbfmu.control.master_loop.simulate_fmu_loop`): the plant as its
native FMU (built by :func:`mbfmu.fmu.build_fmu`), the controller as a
``ControlUnit`` called back from C once per step.

A third run, ``step_deployed``, starts from the deployed equilibrium with a
0.5 deg attitude step (no saturation): its settling time and overshoot are
compared with the sampled linear closed loop (panel modes included). It runs
in the master's compiled loop too: its initial state (found by
:func:`mbfmu.control.trim`, every latch engaged) is no state the FMU's
parameters give, so it is set as the start values of the native FMU's states
(``simulate_fmu_loop(..., x0=...)``; the native FMU declares its states
``initial="exact"``, settable before initialization).

Run ``python examples/satellite_study.py --output DIR [--python-check]``; it
writes ``summary.json``, ``<run>.npz`` (structured results: time, states,
outputs, wheel torques), ``satellite_study.png`` (main run),
``satellite_slew_during_deployment.png``, ``satellite_poles.png`` (poles and
the step against the linear model) and ``replay.html`` (main run). With
``--python-check`` the ``deploy_then_slew`` loop is also run with the Python
plant (:func:`mbfmu.control.simulate_loop`), compared with the master's run
(``summary["python_plant_check"]``: largest differences) and saved as
``deploy_then_slew_python.npz``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import control
import numpy as np

import mbfmu
from mbfmu.control import linearize, simulate_loop, trim
from mbfmu.control.master_loop import native_plant_fmu, simulate_fmu_loop
from mbfmu.dynamics.algorithms import crba
from mbfmu.dynamics.spatial import quat_to_rot
from mbfmu.example_cli import example_parser
from mbfmu.cosim.recording.result import Result

H = 0.05                  # s, controller sample time (= plant default_step)
WN = 0.4                  # rad/s, designed rigid-body bandwidth
ZETA = 0.8                # designed rigid-body damping ratio
U_MAX = 1.0               # N m, wheel motor torque limit
W_MAX = math.radians(0.5)  # rad/s, largest closing rate the attitude error may demand
SLEW_ANGLE = math.radians(20.0)
SLEW_AXIS = np.array([0.2, 0.3, 1.0]) / np.linalg.norm([0.2, 0.3, 1.0])
SLEW_START = 30.0         # s (the default wings have latched by 14 s)
SLEW_TIME = 40.0          # s, duration of the quintic profile
STOP = 110.0              # s
TAIL = 20.0               # s, window at the end for the residual vibration
SETTLE_BAND = 0.02        # settling band, fraction of the commanded angle
FINE_BAND = 1e-3          # band after a profiled slew, fraction of the slew angle
STEP_ANGLE = math.radians(0.5)  # small step for the linear-model comparison
STEP_STOP = 20.0          # s


# ---------------------------------------------------------------------------- quaternion helpers
def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product (w, x, y, z)."""
    aw, av = a[0], a[1:]
    bw, bv = b[0], b[1:]
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


def quat_conj(a: np.ndarray) -> np.ndarray:
    return np.array([a[0], -a[1], -a[2], -a[3]])


def axis_angle_quat(axis: np.ndarray, angle: float) -> np.ndarray:
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * np.asarray(axis, float)])


def attitude_error(q_ref: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Rotation vector (rad, body frame) of ``q_ref^* (x) q``, shortest way."""
    qe = quat_mul(quat_conj(q_ref), q / np.linalg.norm(q))
    s = 1.0 if qe[0] >= 0 else -1.0
    w, v = s * qe[0], s * qe[1:]
    n = np.linalg.norm(v)
    return np.zeros(3) if n < 1e-15 else 2.0 * math.atan2(n, w) * v / n


# ---------------------------------------------------------------------------- reference path
def slew_reference(t: float, start: float = SLEW_START, duration: float = SLEW_TIME,
                   angle: float = SLEW_ANGLE, axis: np.ndarray = SLEW_AXIS):
    """Rest-to-rest quintic rotation about a fixed axis: ``(q_ref, w_ref, a_ref)``
    (unit quaternion, rad/s and rad/s^2 in the reference frame)."""
    s = min(max((t - start) / duration, 0.0), 1.0)
    th = angle * (10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5)
    inside = 0.0 < (t - start) < duration
    thd = angle * (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration if inside else 0.0
    thdd = angle * (60 * s - 180 * s ** 2 + 120 * s ** 3) / duration ** 2 if inside else 0.0
    return axis_angle_quat(axis, th), thd * axis, thdd * axis


def step_reference(angle: float, axis=SLEW_AXIS, start: float = 0.0):
    """A step of ``angle`` about ``axis`` at ``start`` (no rate, no feed-forward)."""
    def ref(t):
        th = angle if t >= start else 0.0
        return axis_angle_quat(axis, th), np.zeros(3), np.zeros(3)
    return ref


# ---------------------------------------------------------------------------- plant and design
def make_plant(**params):
    return mbfmu.load_plant("satellite", **params)


def deployed_state(plant) -> np.ndarray:
    """Equilibrium of the deployed spacecraft: every latch engaged, zero rates,
    hub attitude identity (found by :func:`trim`)."""
    nq, nv = plant.model.nq, plant.model.nv
    x = plant.initial_state()
    x[plant._hinge_iq] = 0.0
    x[nq:nq + nv] = 0.0
    x[nq + nv:] = 1.0
    return trim(plant, np.zeros(3), x)


def locked_inertia(plant, x: np.ndarray) -> np.ndarray:
    """Inertia (kg m^2, hub axes) of the whole spacecraft about its centre of
    mass with every joint held, minus the wheels' spin inertias (a wheel
    torque spins the rotor up relative to the hub)."""
    M = crba(plant.model, x[:plant.model.nq])
    Mrr, Mrt, Mtt = M[0:3, 0:3], M[0:3, 3:6], M[3:6, 3:6]
    J = Mrr - Mrt @ np.linalg.solve(Mtt, Mrt.T)
    Iw = next(s.start for s in plant.parameters if s.name == "wheel_inertia")
    return J - Iw * np.eye(3)


def pd_gains(J: np.ndarray, wn: float = WN, zeta: float = ZETA) -> tuple[np.ndarray, np.ndarray]:
    """``Kp = J wn^2`` (N m/rad) and ``Kd = 2 zeta wn J`` (N m s/rad), full matrices."""
    return J * wn ** 2, J * 2 * zeta * wn


def attitude_controller(Kp: np.ndarray, Kd: np.ndarray, J_ff: np.ndarray, reference,
                        dt: float = H, u_max: float = U_MAX, w_max: float = W_MAX
                        ) -> control.NonlinearIOSystem:
    """Discrete quaternion PD (static, sample time ``dt``) as a python-control system.

    Inputs ``attitude[1..4]``, ``rate[1..3]`` (plant outputs); outputs
    ``wheel_torque[1..3]`` (N m, each saturated at ``u_max``). ``reference(t)``
    gives ``(q_ref, w_ref, a_ref)``; ``J_ff`` (kg m^2) scales the
    acceleration feed-forward. The proportional action is written as the
    rate demand ``Kd^-1 Kp theta_e``, limited to ``w_max`` (rad/s) in norm: the
    linear law in the small, and a bounded closing rate after a saturated
    interval (no overshoot from rate built up while the wheels saturate).
    """
    def output(t, x, u, params=None):
        q, w = np.asarray(u[:4], float), np.asarray(u[4:7], float)
        if not np.linalg.norm(q) > 0:   # a master may evaluate outputs before the plant's are set
            return np.zeros(3)
        q_ref, w_ref, a_ref = reference(t)
        th = attitude_error(q_ref, q)
        qe = quat_mul(quat_conj(q_ref), q / np.linalg.norm(q))
        w_err = w - quat_to_rot(qe).T @ w_ref
        w_cmd = np.linalg.solve(Kd, Kp @ th)       # rate that closes the error, rad/s
        n = np.linalg.norm(w_cmd)
        if n > w_max:                               # rate-limited PD: brakes in time after saturation
            w_cmd *= w_max / n
        hub_torque = -Kd @ (w_err + w_cmd) + J_ff @ a_ref
        return np.clip(-hub_torque, -u_max, u_max)

    return control.nlsys(None, output, inputs=[f"attitude[{k}]" for k in range(1, 5)]
                         + [f"rate[{k}]" for k in range(1, 4)],
                         outputs=[f"wheel_torque[{k}]" for k in range(1, 4)], dt=dt,
                         name="attitude_pd")


def linear_feedback(sys: control.StateSpace, Kp: np.ndarray, Kd: np.ndarray) -> np.ndarray:
    """Gain ``K`` (3, ny) of the linearized control law ``du = K dy`` about an
    operating point with identity attitude (``theta_e = 2 d vec(q)``)."""
    names = list(sys.output_labels)
    K = np.zeros((3, len(names)))
    for k in range(3):
        K[:, names.index(f"attitude[{k + 2}]")] = 2.0 * Kp[:, k]   # wheel torque = +Kp theta
        K[:, names.index(f"rate[{k + 1}]")] = Kd[:, k]
    return K


def _at_identity(plant, x: np.ndarray) -> np.ndarray:
    """The same state with the hub at the origin and attitude identity (the
    free-floating dynamics do not depend on either)."""
    x = np.array(x, float)
    x[0:3] = 0.0
    x[3:7] = (1.0, 0.0, 0.0, 0.0)
    return x


def closed_loop(plant, x: np.ndarray, Kp, Kd, h: float = H):
    """Open- and closed-loop poles (continuous equivalents ``ln z / h``, 1/s) of
    the ZOH-sampled linear model at state ``x`` under the linearized PD law."""
    sys = linearize(plant, _at_identity(plant, x), np.zeros(3))
    sysd = control.c2d(sys, h, "zoh")
    K = linear_feedback(sys, Kp, Kd)
    Acl = sysd.A + sysd.B @ K @ sysd.C
    zo, zc = np.linalg.eigvals(sysd.A), np.linalg.eigvals(Acl)
    return sys, sysd, Acl, np.log(zo.astype(complex)) / h, np.log(zc.astype(complex)) / h, zc


def _split_poles(s: np.ndarray, tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(poles on z = 1 (conserved quantities), the others), upper half-plane + real."""
    s = s[s.imag >= -1e-12]
    conserved = np.abs(s) < tol
    return s[conserved], s[~conserved]


def _modes(s: np.ndarray) -> list[dict]:
    return [dict(re=float(p.real), im=float(p.imag), wn_rad_s=float(abs(p)),
                 zeta=float(-p.real / abs(p))) for p in sorted(s, key=abs)]


def design(plant) -> dict:
    """Gains and the linear check at the deployed configuration."""
    xd = deployed_state(plant)
    J = locked_inertia(plant, xd)
    Kp, Kd = pd_gains(J)
    sys, sysd, Acl, s_open, s_closed, zc = closed_loop(plant, xd, Kp, Kd)
    n_cons_o, open_modes = _split_poles(s_open)
    n_cons_c, closed_modes = _split_poles(s_closed)
    panel_open = [m for m in _modes(open_modes) if m["wn_rad_s"] > 1.0]
    panel_closed = [m for m in _modes(closed_modes) if m["wn_rad_s"] > 1.0]
    rigid_closed = [m for m in _modes(closed_modes) if m["wn_rad_s"] <= 1.0]
    return dict(x_deployed=xd, J=J, Kp=Kp, Kd=Kd, sys=sys, sysd=sysd, Acl=Acl, s_open=s_open,
                s_closed=s_closed, max_abs_z=float(np.abs(zc).max()),
                panel_open=panel_open, panel_closed=panel_closed, rigid_closed=rigid_closed,
                conserved_closed=int(len(n_cons_c)))


def predicted_step(d: dict, angle: float, axis=SLEW_AXIS, stop: float = 40.0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sampled linear closed loop (panel modes included) after a reference
    step of ``angle`` about ``axis`` at t = 0: ``(time, |error| (rad), angle
    past the target along the axis (rad))`` at the samples."""
    sysd, Kp, Kd = d["sysd"], d["Kp"], d["Kd"]
    K = linear_feedback(d["sys"], Kp, Kd)
    # the reference enters as an attitude offset: theta_e = theta - theta_ref
    u_ref = -Kp @ (angle * axis)
    n = int(round(stop / H))
    x = np.zeros(sysd.nstates)
    names = list(sysd.output_labels)
    ia = [names.index(f"attitude[{k}]") for k in range(2, 5)]
    err, past = np.empty(n + 1), np.empty(n + 1)
    for k in range(n + 1):
        y = sysd.C @ x
        e = 2 * y[ia] - angle * axis
        err[k], past[k] = np.linalg.norm(e), e @ axis
        x = sysd.A @ x + sysd.B @ (K @ y + u_ref)
    return np.arange(n + 1) * H, err, past


def settling_time(t: np.ndarray, err: np.ndarray, band: float, t0: float = 0.0) -> float:
    """First time (from ``t0``) after which ``err`` stays within ``band``."""
    mask = t >= t0 - 1e-12
    tt, ee = t[mask], err[mask]
    out = np.flatnonzero(ee > band)
    if not out.size:
        return 0.0
    if out[-1] + 1 >= len(tt):
        return float("inf")
    return float(tt[out[-1] + 1] - t0)


# ---------------------------------------------------------------------------- runs
def run_loop(plant, d: dict, reference, stop: float, fmu, J_ff=None):
    """The attitude loop in the co-simulation master: the plant's native FMU
    (from its stowed initial state) and the quaternion PD as a python-control
    unit. Returns a :class:`mbfmu.control.sampled.LoopResult`."""
    ctrl = attitude_controller(d["Kp"], d["Kd"], d["J"] if J_ff is None else J_ff, reference)
    return simulate_fmu_loop(plant, fmu, ctrl, stop)


def _column(plant, name: str) -> int:
    return [s.name for s in plant.outputs].index(name)


def _outputs(plant, res, base: str, n: int) -> np.ndarray:
    i = _column(plant, f"{base}[1]")
    return res.y[:, i:i + n]


def error_history(plant, res, reference) -> np.ndarray:
    q = _outputs(plant, res, "attitude", 4)
    return np.array([attitude_error(reference(t)[0], qk) for t, qk in zip(res.time, q)])


def metrics(plant, d: dict, res, reference, slew_start: float, slew_end: float,
            slew_angle: float = SLEW_ANGLE) -> dict:
    """Performance figures of a run (see the module docstring)."""
    t = res.time
    err = np.linalg.norm(error_history(plant, res, reference), axis=1)
    q = _outputs(plant, res, "attitude", 4)
    q_final = reference(t[-1])[0]
    # angle past the final target along the slew axis (positive = overshoot)
    past = np.array([attitude_error(q_final, qk) @ SLEW_AXIS for qk in q])
    after = t >= slew_end - 1e-9
    during = (t >= slew_start) & (t < slew_end)
    wheel = _outputs(plant, res, "wheel_speed", 3)
    rate = _outputs(plant, res, "rate", 3)
    H_tot = _outputs(plant, res, "angular_momentum", 3)
    hinge = _outputs(plant, res, "hinge_angle", plant.n_hinges)
    hinge_eq = d["x_deployed"][plant._hinge_iq]
    tail = t >= max(t[-1] - TAIL, slew_end)
    wheel_momentum = _wheel_inertia(plant) * (wheel + rate)  # spin momentum of each rotor (hub axes)
    nz = plant.model.nq + plant.model.nv
    latched_at = []
    for j in range(plant.n_hinges):
        idx = np.flatnonzero(res.x[:, nz + j] > 0.5)
        latched_at.append(float(t[idx[0]]) if idx.size else float("inf"))
    before = t < min(slew_start, t[-1])
    return dict(
        settling_after_profile_end_s=settling_time(t, err, FINE_BAND * slew_angle, slew_end),
        overshoot_percent=float(max(0.0, past[after].max()) / slew_angle * 100.0) if after.any() else float("nan"),
        peak_tracking_error_during_slew_deg=float(np.degrees(err[during].max())) if during.any() else 0.0,
        final_error_deg=float(np.degrees(err[-1])),
        peak_error_before_slew_deg=float(np.degrees(err[before].max())) if before.any() else 0.0,
        residual_hinge_vibration_rad=float(np.abs(hinge[tail] - hinge_eq).max()),
        peak_wheel_speed_rad_s=float(np.abs(wheel).max()),
        peak_wheel_torque_Nm=float(np.abs(res.u).max()),
        torque_saturated_fraction=float(np.mean(np.abs(res.u) >= U_MAX - 1e-12)),
        peak_wheel_momentum_Nms=float(np.abs(wheel_momentum).max()),
        angular_momentum_drift_Nms=float(np.abs(H_tot - H_tot[0]).max()),
        last_latch_s=float(max(latched_at)),
    )


def _wheel_inertia(plant) -> float:
    return float(next(s.start for s in plant.parameters if s.name == "wheel_inertia"))


def step_response(plant, d: dict, fmu, angle: float = STEP_ANGLE, stop: float = STEP_STOP) -> dict:
    """A small attitude step on the deployed, latched spacecraft: settling time
    and overshoot of the nonlinear loop against the sampled linear closed loop
    (panel modes included) and the envelope estimate ``-ln(0.02) / sigma`` of
    its slowest pole pair ``-sigma +- j wd``. The loop runs in the
    co-simulation master, the plant's native FMU ``fmu`` started at the trimmed
    state ``d["x_deployed"]`` (set as its states' start values)."""
    ref = step_reference(angle)
    res = simulate_fmu_loop(plant, fmu, attitude_controller(d["Kp"], d["Kd"], d["J"], ref), stop,
                            x0=d["x_deployed"])
    err = np.linalg.norm(error_history(plant, res, ref), axis=1)
    t_lin, err_lin, past_lin = predicted_step(d, angle, stop=stop)
    q = _outputs(plant, res, "attitude", 4)
    past = np.array([attitude_error(ref(stop)[0], qk) @ SLEW_AXIS for qk in q])
    # the dominant closed-loop pole pair (slowest decay) of the linear model
    dominant = min(d["rigid_closed"], key=lambda m: -m["re"])
    return dict(
        angle_deg=math.degrees(angle),
        settling_time_s=settling_time(res.time, err, SETTLE_BAND * angle),
        settling_time_linear_model_s=settling_time(t_lin, err_lin, SETTLE_BAND * angle),
        settling_time_pole_estimate_s=float(-math.log(SETTLE_BAND) / -dominant["re"]),
        overshoot_percent=float(max(0.0, past.max()) / angle * 100.0),
        overshoot_linear_model_percent=float(max(0.0, past_lin.max()) / angle * 100.0),
        max_deviation_from_linear_deg=float(np.degrees(np.abs(err - err_lin[:len(err)]).max())),
        peak_wheel_torque_Nm=float(np.abs(res.u).max()),
        residual_hinge_vibration_rad=float(np.abs(_outputs(plant, res, "hinge_angle", plant.n_hinges)[
            res.time >= stop - 5.0] - d["x_deployed"][plant._hinge_iq]).max()),
    ), res, (t_lin, err_lin)


def rigid_closed_loop(J: np.ndarray, Kp: np.ndarray, Kd: np.ndarray, h: float = H) -> np.ndarray:
    """Poles (z) of the ZOH-sampled rigid attitude loop ``J w' = -Kp th - Kd w``,
    ``th' = w`` (small angles) for the locked inertia ``J`` (kg m^2)."""
    n = 3
    A = np.block([[np.zeros((n, n)), np.eye(n)], [np.zeros((n, n)), np.zeros((n, n))]])
    B = np.vstack([np.zeros((n, n)), np.linalg.inv(J)])
    sysd = control.c2d(control.ss(A, B, np.eye(2 * n), 0), h, "zoh")
    return np.linalg.eigvals(sysd.A - sysd.B @ np.hstack([Kp, Kd]))


def frozen_time_check(plant, d: dict, times=(0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0)) -> list[dict]:
    """The fixed gains on frozen configurations of the open-loop deployment:
    the sampled rigid attitude loop with the locked inertia there (largest
    |z|, natural frequency and damping ranges). (The full linear model is
    not used here: away from the latched equilibrium the springs of the free
    panels are not in equilibrium and a frozen Jacobian says little.)"""
    x = plant.initial_state()
    t, out = 0.0, []
    nq, nv = plant.model.nq, plant.model.nv
    for target in times:
        while t < target - 1e-9:
            x = plant.advance(t, x, np.zeros(3), H)
            t += H
        xf = np.array(x)
        xf[nq:nq + nv] = 0.0
        J = locked_inertia(plant, xf)
        z = rigid_closed_loop(J, d["Kp"], d["Kd"])
        s = np.log(z.astype(complex)) / H
        out.append(dict(t=float(target), latched=int(np.sum(x[nq + nv:] > 0.5)),
                        locked_inertia_diag_kgm2=[float(v) for v in np.diag(J)],
                        rigid_max_abs_z=float(np.abs(z).max()),
                        rigid_wn_range_rad_s=[float(np.abs(s).min()), float(np.abs(s).max())],
                        rigid_zeta_range=[float((-s.real / np.abs(s)).min()), float((-s.real / np.abs(s)).max())]))
    return out


# ---------------------------------------------------------------------------- the Python-plant check
def compare_runs(plant, res, other) -> dict:
    """Largest differences between two runs of one loop (:class:`LoopResult`)."""
    n = min(len(other.time), len(res.time))
    out = {}
    for base, m in (("attitude", 4), ("rate", 3), ("hinge_angle", plant.n_hinges), ("wheel_speed", 3)):
        out[f"max_diff_{base}"] = float(np.abs(_outputs(plant, res, base, m)[:n]
                                               - _outputs(plant, other, base, m)[:n]).max())
    out["max_diff_wheel_torque"] = float(np.abs(res.u[:n] - other.u[:n]).max())
    out["time_grid_max_diff_s"] = float(np.abs(res.time[:n] - other.time[:n]).max())
    out["samples_compared"] = int(n)
    return out


# ---------------------------------------------------------------------------- output files
def _record(plant, res) -> np.ndarray:
    names = (["time"] + [s.name for s in plant.states] + [s.name for s in plant.outputs
                                                          if s.name not in ("kinetic_energy", "potential_energy")])
    inputs = [f"wheel_torque[{k}]" for k in range(1, 4)]
    names = [n for n in names if n not in inputs] + inputs
    rec = np.zeros(len(res.time), dtype=[(n, float) for n in dict.fromkeys(names)])
    rec["time"] = res.time
    for k, s in enumerate(plant.states):
        rec[s.name] = res.x[:, k]
    for k, s in enumerate(plant.outputs):
        if s.name in rec.dtype.names:
            rec[s.name] = res.y[:, k]
    for k, n in enumerate(inputs):
        rec[n] = res.u[:, k]
    return rec


def _plot_run(plant, d: dict, res, reference, title: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = res.time
    err = np.degrees(error_history(plant, res, reference))
    fig, ax = plt.subplots(3, 2, figsize=(12, 10), sharex=True)
    for k, c in enumerate("xyz"):
        ax[0, 0].plot(t, err[:, k], label=f"about hub {c}")
    ax[0, 0].set_ylabel("attitude error (deg)")
    ax[0, 0].set_title("attitude error from the reference (rotation vector)")
    rate = _outputs(plant, res, "rate", 3)
    for k, c in enumerate("xyz"):
        ax[0, 1].plot(t, np.degrees(rate[:, k]), label=f"hub {c}")
    ax[0, 1].set_ylabel("hub body rate (deg/s)")
    ax[0, 1].set_title("hub angular velocity")
    wheel = _outputs(plant, res, "wheel_speed", 3)
    for k, c in enumerate("xyz"):
        ax[1, 0].plot(t, wheel[:, k], label=f"wheel {c}")
    ax[1, 0].set_ylabel("wheel speed rel. hub (rad/s)")
    ax[1, 0].set_title("reaction wheel speeds")
    for k in range(3):
        ax[1, 1].step(t, res.u[:, k], where="post", label=f"wheel {'xyz'[k]}")
    ax[1, 1].set_ylabel("wheel motor torque (N m)")
    ax[1, 1].set_title(f"wheel torques (limit {U_MAX:g} N m)")
    hinge = _outputs(plant, res, "hinge_angle", plant.n_hinges)
    for j in range(plant.n_hinges):
        ax[2, 0].plot(t, np.degrees(hinge[:, j]), label=f"hinge {j + 1}")
    ax[2, 0].set_ylabel("hinge angle from deployed stop (deg)")
    ax[2, 0].set_title("wing hinge angles (1-3 wing 1, 4-6 wing 2)")
    H_tot = _outputs(plant, res, "angular_momentum", 3)
    Iw = next(s.start for s in plant.parameters if s.name == "wheel_inertia")
    wm = Iw * (wheel + rate)
    for k, c in enumerate("xyz"):
        ax[2, 1].plot(t, wm[:, k], label=f"wheel {c} spin momentum")
    ax[2, 1].plot(t, np.linalg.norm(H_tot - H_tot[0], axis=1), "k--", label="|H_total - H_total(0)|")
    ax[2, 1].set_ylabel("angular momentum (N m s)")
    ax[2, 1].set_title("momentum: wheels absorb it, the total is conserved")
    for a in ax.flat:
        a.grid(alpha=0.3)
        a.legend(fontsize=7, ncol=2)
    for a in ax[2]:
        a.set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_poles(d: dict, plant, step_res, step_lin, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(16, 5))
    so = _split_poles(d["s_open"])[1]
    sc = _split_poles(d["s_closed"])[1]
    for a in ax[:2]:
        a.plot(so.real, so.imag, "x", ms=9, label="open loop (deployed, latched)")
        a.plot(sc.real, sc.imag, "o", mfc="none", ms=8, label="closed loop, PD")
        a.set_xlabel("real part (1/s)")
        a.set_ylabel("imaginary part (rad/s)")
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    ax[0].set_title("poles of the sampled linear model, s = ln(z)/h\n(conserved modes at s = 0 not drawn)",
                    fontsize=10)
    ax[1].set_xlim(-1.0, 0.1)
    ax[1].set_ylim(-0.05, 1.0)
    ax[1].set_title(f"zoom: rigid-body poles (design wn = {WN} rad/s, zeta = {ZETA});\nopen loop: double integrators at s = 0", fontsize=10)
    ref = step_reference(STEP_ANGLE)
    err = np.linalg.norm(error_history(plant, step_res, ref), axis=1)
    ax[2].plot(step_res.time, np.degrees(err), label="nonlinear plant")
    ax[2].plot(step_lin[0], np.degrees(step_lin[1]), "--", label="linear closed loop (panel modes)")
    ax[2].axhline(np.degrees(SETTLE_BAND * STEP_ANGLE), color="k", lw=0.8, label="2 % band")
    ax[2].set_yscale("log")
    ax[2].set_xlabel("time (s)")
    ax[2].set_ylabel("attitude error (deg)")
    ax[2].set_title(f"{np.degrees(STEP_ANGLE):.1f} deg step on the deployed spacecraft", fontsize=10)
    ax[2].grid(alpha=0.3)
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------- entry point
def run(output_dir: str | Path = "results/satellite_study", stop: float = STOP, slew_start: float = SLEW_START,
        slew_time: float = SLEW_TIME, slew_angle: float = SLEW_ANGLE, step_stop: float = STEP_STOP, plots: bool = True, replay: bool = True, python_check: bool = False, frozen: bool = True,
        during_deployment: bool = True, fmu_dir: str | Path | None = None) -> dict:
    """Design, run the loops, write results, plots and replay; return the figures.

    Parameters
    ----------
    output_dir : path
    stop : float
        Simulated time of each run, s.
    slew_start : float
        Start of the slew in the main run, s (after the latches engage).
    slew_time : float
        Duration of the slew profile, s.
    slew_angle : float
        Slew angle, rad.
    step_stop : float
        Simulated time of the small-step run, s.
    plots, replay : bool
        Write the PNG figures / the HTML replay.
    python_check : bool
        Also run the main loop with the Python plant
        (:func:`mbfmu.control.simulate_loop`) and compare.
    frozen : bool
        Frozen-time closed-loop poles along the deployment.
    during_deployment : bool
        Run the slew commanded at t = 2 s, during the deployment.
    fmu_dir : path, optional
        Where to build the plant's native FMU (default: ``output_dir``).
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    plant = make_plant()
    d = design(plant)
    fmu = native_plant_fmu(plant, out if fmu_dir is None else Path(fmu_dir))
    summary = {"design": dict(
        H_s=H, wn_rad_s=WN, zeta=ZETA, U_MAX_Nm=U_MAX,
        locked_inertia_deployed_kgm2=d["J"].tolist(), Kp_Nm_per_rad=d["Kp"].tolist(),
        Kd_Nms_per_rad=d["Kd"].tolist(), closed_loop_max_abs_z=d["max_abs_z"],
        panel_modes_open=d["panel_open"], panel_modes_closed=d["panel_closed"],
        rigid_modes_closed=d["rigid_closed"], conserved_modes=d["conserved_closed"],
        slew_angle_deg=math.degrees(slew_angle), slew_axis=SLEW_AXIS.tolist(), slew_time_s=slew_time)}
    if frozen:
        summary["frozen_time_deployment"] = frozen_time_check(plant, d)

    step, step_res, step_lin = step_response(plant, d, fmu, stop=step_stop)
    summary["step_deployed"] = step
    Result(_record(plant, step_res), meta={"plant": "satellite"}).save(out / "step_deployed.npz")

    runs = {}
    ref_main = lambda t: slew_reference(t, start=slew_start, duration=slew_time, angle=slew_angle)
    runs["deploy_then_slew"] = (run_loop(plant, d, ref_main, stop, fmu), ref_main, slew_start)
    if during_deployment:
        ref_dep = lambda t: slew_reference(t, start=2.0, duration=slew_time, angle=slew_angle)
        runs["slew_during_deployment"] = (run_loop(plant, d, ref_dep, stop - slew_start + 2.0, fmu), ref_dep, 2.0)
    for name, (res, ref, t0) in runs.items():
        summary[name] = metrics(plant, d, res, ref, t0, t0 + slew_time, slew_angle)
        Result(_record(plant, res), meta={"plant": "satellite"}).save(out / f"{name}.npz")

    if python_check:
        res, ref, t0 = runs["deploy_then_slew"]
        direct = simulate_loop(plant, attitude_controller(d["Kp"], d["Kd"], d["J"], ref), stop)
        summary["python_plant_check"] = compare_runs(plant, res, direct)
        Result(_record(plant, direct), meta={"plant": "satellite"}).save(out / "deploy_then_slew_python.npz")

    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if plots:
        res, ref, _ = runs["deploy_then_slew"]
        _plot_run(plant, d, res, ref, "satellite: deployment under attitude hold, then a "
                  f"{math.degrees(slew_angle):.0f} deg slew at t = {slew_start:g} s", out / "satellite_study.png")
        if "slew_during_deployment" in runs:
            res, ref, _ = runs["slew_during_deployment"]
            _plot_run(plant, d, res, ref, "satellite: the same slew commanded at t = 2 s, while the wings open",
                      out / "satellite_slew_during_deployment.png")
        _plot_poles(d, plant, step_res, step_lin, out / "satellite_poles.png")
    if replay:
        from mbfmu.viewer import Recording, write_html
        res = runs["deploy_then_slew"][0]
        write_html(Recording(_record(plant, res), plant), out / "replay.html")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = example_parser(__doc__, "results/satellite_study")
    ap.add_argument("--python-check", action="store_true",
                    help="also run the main loop with the Python plant and compare")
    ap.add_argument("--no-replay", action="store_true", help="skip the HTML replay")
    args = ap.parse_args(argv)
    summary = run(args.output, python_check=args.python_check, replay=not args.no_replay)
    print(json.dumps({k: v for k, v in summary.items() if k != "frozen_time_deployment"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
