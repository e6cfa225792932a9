"""The spin-up beam of Kane, Ryan & Banerjee (1987).

T. R. Kane, R. R. Ryan, A. K. Banerjee, "Dynamics of a cantilever beam
attached to a moving base", J. Guidance, Control, and Dynamics 10(2),
139-151, 1987: a cantilever clamped to a hub spinning about an axis normal
to the beam, the hub angle following

    theta(t) = (Omega_s / T_s) (t^2 / 2 + (T_s / (2 pi))^2 (cos(2 pi t / T_s) - 1)),  t < T_s
    theta(t) = Omega_s (t - T_s / 2),                                              t >= T_s

A model without geometric stiffening predicts a spurious divergence of the
tip deflection once the spin rate exceeds the first cantilever frequency
1.8751^2 sqrt(EI / (rho A L^4)) (here 3.6 rad/s for the KRB beam, 3.80 rad/s
for the other), so at both Omega_s = 4 and 10 rad/s.

Beams (``beam=`` of :func:`spinup_system` and :func:`run_spinup`):

* ``"krb"`` (default), the beam of Kane, Ryan & Banerjee (1987): L = 8 m,
  E = 6.895e10 Pa, A = 7.2968e-5 m^2, I = 8.2189e-9 m^4,
  rho = 2766.67 kg/m^3 (EI = 566.7 N m^2, rho A = 0.2019 kg/m), T_s = 15 s,
  Omega_s = 4 and 10 rad/s; no gravity, hub radius zero.
* ``"simo-vu-quoc"``: L = 10 m, E = 7e10 Pa, I = 2e-7 m^4 (EI = 14 000
  N m^2), rho = 3000 kg/m^3, A = 4e-4 m^2 (rho A = 1.2 kg/m), T_s = 15 s:
  the beam of Simo & Vu-Quoc (CMAME 66 (1988) 125-161), also the "spin-up
  robot arm" of the AeroBeams.jl test suite (test/examples/spinupRobotArm.jl)
  and Ansys Verification Manual case VM258, run there at Omega_s = 6 rad/s.

Accuracy of the models, KRB beam, peak tip deflection against a
geometrically exact reference: the segment chain Richardson-extrapolated from
20 and 40 segments, -0.53360 m at 4 rad/s and -1.08304 m at 10 rad/s
(computed by the slow tests of ``tests/flexible/test_spinup.py``; it agrees
with the ANCF values of issue 19, 32 cable elements converged to 1e-5 m,
-0.5336 m and -1.0831 m, to 0.01 %):

============================================  =========  ==========
model (``method``, ``n``)                     4 rad/s    10 rad/s
============================================  =========  ==========
``"modes"``, 4 modes (with stiffening)        +0.49 %    +2.58 %
``"segments"``, 20 segments                   -0.18 %    -0.37 %
``"segments"``, 40 segments                   -0.05 %    -0.09 %
``"subbeams"``, 2 sub-beams x 2 modes         +0.12 %    +0.58 %
``"subbeams"``, 3 sub-beams x 2 modes         +0.04 %    +0.23 %
``"subbeams"``, 4 sub-beams x 2 modes         +0.02 %    +0.11 %
``"subbeams"``, 6 sub-beams x 2 modes         +0.005 %   +0.03 %
``"subbeams"``, 8 sub-beams x 2 modes         +0.002 %   +0.014 %
============================================  =========  ==========

The modal beam's error does not shrink with more modes: it is the model
form (kinematics second-order in the deflection), so agreement between mode
counts says nothing about accuracy. The finite-segment chain is exact in the
limit and converges as 1/n^2, but slowly and at a high frequency per
segment. The beam of chained sub-beams
(:mod:`~mbfmu.dynamics.flexible.subbeams`) is exact in the limit too and
converges as about 1/n^3; the slow tests check the example's modal and
sub-beam histories against the extrapolated chain. Cost per simulated second
next to Exudyn's ANCF cable: ``benchmarks/flexible.py`` section 4.

Simo-Vu-Quoc beam (the previous default), this library's own numbers, for
comparison: peak -0.4008 m at 4 rad/s (modal, 4 to 8 modes agree to 1e-5 m;
segment chain extrapolated from 10 and 20 segments -0.4001 m) and -0.8658 m
at 10 rad/s (segments, extrapolated: -0.858 m, 0.9 % apart, of the order of
(w_tip / L)^2).
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import InputError
from ..joints import Revolute
from .beam import BeamProperties
from .driven import PAIRS, simulate_driven, stable_step
from .integrators import simulate
from .segments import add_segmented_beam, segment_tip_offset
from .system import FlexibleSystemBuilder, ModeSet

KRB_BEAM = dict(length=8.0, E=6.895e10, G=6.895e10 / 2.6, density=2766.67, area=7.2968e-5,
                Iy=8.2189e-9, Iz=8.2189e-9, J=2 * 8.2189e-9)
SIMO_VU_QUOC_BEAM = dict(length=10.0, E=7.0e10, G=2.7e10, density=3000.0, area=4.0e-4, Iy=2.0e-7,
                         Iz=2.0e-7, J=4.0e-7)
BEAMS = {"krb": KRB_BEAM, "simo-vu-quoc": SIMO_VU_QUOC_BEAM}
SPINUP_BEAM = KRB_BEAM  # the default
SPINUP_TIME = 15.0


def spinup_beam(beam: str = "krb") -> BeamProperties:
    """Properties of the named spin-up beam (``"krb"`` or ``"simo-vu-quoc"``)."""
    if beam not in BEAMS:
        raise InputError(f"spin-up beam {beam!r} is not one of {sorted(BEAMS)}")
    return BeamProperties(**BEAMS[beam])


def spinup_profile(t: float, omega_s: float, T_s: float = SPINUP_TIME) -> tuple[float, float, float]:
    """Hub angle (rad), rate (rad/s) and acceleration (rad/s^2) at ``t`` (s)."""
    if t < T_s:
        w = 2 * math.pi / T_s
        th = omega_s / T_s * (t * t / 2 + (T_s / (2 * math.pi)) ** 2 * (math.cos(w * t) - 1))
        thd = omega_s / T_s * (t - math.sin(w * t) / w)
        thdd = omega_s / T_s * (1 - math.cos(w * t))
        return th, thd, thdd
    return omega_s * (t - T_s / 2), omega_s, 0.0


def peak_deflection(t, d) -> tuple[float, float]:
    """Time (s) and value (m) of the most negative sample of the tip history
    ``d(t)`` (uniform ``t``), refined by the parabola through it and its two
    neighbours (an interior minimum is required).

    Parameters
    ----------
    t : array_like
        Uniformly spaced times, s.
    d : array_like
        Tip deflections, m.
    """
    t, d = np.asarray(t, float), np.asarray(d, float)
    i = int(np.argmin(d))
    if not 0 < i < d.size - 1:
        raise InputError("peak_deflection: the minimum lies at an end of the history; run past the peak")
    y0, y1, y2 = d[i - 1], d[i], d[i + 1]
    s = 0.5 * (y0 - y2) / (y0 - 2.0 * y1 + y2)
    return float(t[i] + s * (t[1] - t[0])), float(y1 - 0.25 * (y0 - y2) * s)


def spinup_system(method: str = "modes", n: int = 4, stiffening: bool = True, beam: str = "krb",
                  subbeam_modes: int = 2):
    """The spin-up beam as a system.

    Parameters
    ----------
    method : {"modes", "segments", "subbeams"}
        ``"modes"``: one assumed-modes beam with ``n`` clamped-free modes in
        the plane of rotation; ``"segments"``: ``n`` rigid segments;
        ``"subbeams"``: ``n`` chained floating-frame sub-beams with
        ``subbeam_modes`` tip-loaded modes each
        (:mod:`~mbfmu.dynamics.flexible.subbeams`).
    n : int
        Modes, segments or sub-beams.
    stiffening : bool
        Geometric stiffening of the modal beams and sub-beams.
    beam : str
        ``"krb"`` or ``"simo-vu-quoc"`` (see the module docstring).
    subbeam_modes : int
        Bending modes per sub-beam (``method="subbeams"``).

    Returns
    -------
    system : FlexibleSystem
        The hub joint is velocity coordinate 0.
    tip : callable
        ``tip(q)``: the tip's transverse deflection in the hub frame, m.
    """
    beam = spinup_beam(beam)
    if method == "subbeams":
        b = FlexibleSystemBuilder(gravity=(0.0, 0.0, 0.0), name="spinup_subbeams")
        hub = b.add_beam("beam", "world", Revolute(axis=(0.0, 0.0, 1.0)), beam,
                         ModeSet(bending_y=subbeam_modes, tip_shapes=True), stiffening=stiffening, subbeams=n)
        system = b.build()

        def tip(q):
            R, p = system.poses(q)
            _, p_tip = system.tip_frame(q, "beam")
            return float((R[hub].T @ (p_tip - p[hub]))[1])
        return system, tip
    if method == "modes":
        b = FlexibleSystemBuilder(gravity=(0.0, 0.0, 0.0), name="spinup_modes")
        b.add_beam("beam", "world", Revolute(axis=(0.0, 0.0, 1.0)), beam, ModeSet(bending_y=n),
                   stiffening=stiffening)
        system = b.build()
        rec = system.beam("beam")
        return system, lambda q: float(rec.deflection(rec.coordinates(q), [beam.length])[0, 1])
    if method == "segments":
        # rigid bodies only, but in a flexible system: its compiled ABA drives the hub
        b = FlexibleSystemBuilder(gravity=(0.0, 0.0, 0.0), name="spinup_segments")
        hub = b.add_body("hub", "world", Revolute(axis=(0.0, 0.0, 1.0)))
        tip_body = add_segmented_beam(b, "beam", hub, beam, n)
        system = b.build()
        off = segment_tip_offset(beam, n)

        def tip(q):
            R, p = system.poses(q)
            return float((R[hub].T @ (p[tip_body] + R[tip_body] @ off - p[hub]))[1])
        return system, tip
    raise InputError(f"spin-up method {method!r} must be 'modes', 'segments' or 'subbeams'")


def run_spinup(omega_s: float, t_final: float = 20.0, method: str = "modes", n: int = 4,
               stiffening: bool = True, dt_out: float = 0.05, integrator: str = "DOP853",
               rtol: float = 1e-8, atol: float = 1e-10, stop_above: float | None = None,
               beam: str = "krb", subbeam_modes: int = 2, max_step: float | None = None):
    """Simulate the spin-up of beam ``beam`` (default the KRB beam).

    Parameters
    ----------
    omega_s : float
        Final spin rate, rad/s.
    t_final : float
        Simulated time, s.
    method, n, stiffening, beam, subbeam_modes
        The model, as :func:`spinup_system`.
    dt_out : float
        Output interval, s.
    integrator : str
        One of :data:`~mbfmu.dynamics.flexible.integrators.METHODS` (scipy
        or Python RK4 around the right-hand side), or ``"DP54"`` / ``"BS32"``:
        the compiled error-controlled pairs with the hub driven in the
        compiled flexible ABA (:func:`~mbfmu.dynamics.flexible.driven.simulate_driven`;
        any method, no ``stop_above``).
    max_step : float, optional
        Largest internal step of ``"DP54"`` / ``"BS32"``, s; default the
        chain's stable explicit step (:func:`~mbfmu.dynamics.flexible.driven.stable_step`,
        hub held), 0 for none.
    rtol, atol : float
        Tolerances (atol in m, rad and modal units).
    stop_above : float, optional
        m: end the run once the tip deflection's magnitude exceeds it (a
        diverging model otherwise grows without bound and drives the
        adaptive step towards zero); the arrays then stop at the last output
        time before that instant.

    Returns
    -------
    t, tip_deflection : ndarray
        s, m (transverse, in the hub frame).
    """
    system, tip = spinup_system(method, n, stiffening, beam, subbeam_modes)
    t_eval = np.linspace(0.0, t_final, int(round(t_final / dt_out)) + 1)
    x0 = np.concatenate([system.neutral(), np.zeros(system.nv)])
    if integrator in PAIRS:
        if stop_above is not None:
            raise InputError(f"stop_above needs a scipy integrator, not {integrator!r}")
        h_max = stable_step(system, fixed=(0,)) if max_step is None else max_step
        traj = simulate_driven(system, x0, t_eval, lambda t: ((0,), (spinup_profile(t, omega_s)[2],)),
                               rtol=rtol, atol=atol, method=integrator, max_step=h_max)
        return traj.t, np.array([tip(x[:system.nq]) for x in traj.x])

    def prescribed(t):
        th, thd, thdd = spinup_profile(t, omega_s)
        return [0], th, thd, thdd

    events = None
    if stop_above is not None:
        if not stop_above > 0:
            raise InputError(f"stop_above = {stop_above!r} must be > 0 m")

        def diverged(t, x):
            return stop_above - abs(tip(x[:system.nq]))
        diverged.terminal = True
        events = [diverged]
    traj = simulate(system, x0, t_final, method=integrator, rtol=rtol, atol=atol, t_eval=t_eval,
                    prescribed=prescribed, events=events)
    return traj.t, np.array([tip(x[:system.nq]) for x in traj.x])
