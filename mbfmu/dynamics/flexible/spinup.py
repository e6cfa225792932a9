"""The spin-up beam of Kane, Ryan & Banerjee (1987).

T. R. Kane, R. R. Ryan, A. K. Banerjee, "Dynamics of a cantilever beam
attached to a moving base", J. Guidance, Control, and Dynamics 10(2),
139-151, 1987: a cantilever clamped to a hub spinning about an axis normal
to the beam, the hub angle following

    theta(t) = (Omega_s / T_s) (t^2 / 2 + (T_s / (2 pi))^2 (cos(2 pi t / T_s) - 1)),  t < T_s
    theta(t) = Omega_s (t - T_s / 2),                                              t >= T_s

A model without geometric stiffening predicts a spurious divergence of the
tip deflection once the spin rate exceeds the first cantilever frequency,
here 1.8751^2 sqrt(EI / (rho A L^4)) = 3.80 rad/s, so at both Omega_s = 4
and 10 rad/s (without stiffening our modal model reaches -69 m at t = 15 s
for Omega_s = 4 rad/s).
Beam data used here (as given in issue 4): L = 10 m, E = 7e10 Pa,
I = 2e-7 m^4 (EI = 14 000 N m^2), rho = 3000 kg/m^3, A = 4e-4 m^2
(rho A = 1.2 kg/m), T_s = 15 s; no gravity, hub radius zero. The same data
(EA = 2.8e7 N, EI = GJ = 1.4e4 N m^2, rho A = 1.2 kg/m, L = 10 m, T_s = 15 s,
same profile) define the "spin-up robot arm" example of the AeroBeams.jl
test suite (github.com/luizpancini/AeroBeams.jl,
test/examples/spinupRobotArm.jl, run there at Omega_s = 6 rad/s) and the
Ansys Mechanical APDL Verification Manual case VM258 "Spin-up Maneuver of a
Flexible Beam" (Omega_s = 6 rad/s, reference Simo & Vu-Quoc, CMAME 66 (1988)
125-161, targets read off that paper's graphs).

Reference values. No published number for the tip deflection history at
Omega_s = 4 or 10 rad/s (KRB 1987 or a later reproduction) could be
retrieved for this project, so none is used; VM258's target table (6 rad/s)
could not be retrieved either. The values below are this library's own,
converged (tip deflection in the hub frame, negative = lagging the spin):

* Omega_s = 4 rad/s: peak -0.4008 m at t = 6.95 s (modal, 4, 6 and 8 modes
  agree to 1e-5 m); finite-segment chain -0.3903 / -0.3976 / -0.3995 m with
  5 / 10 / 20 segments (error ~ 1/n^2), Richardson extrapolation (10 and
  20 segments) -0.4001 m at t = 6.95 s.
* Omega_s = 10 rad/s: peak -0.8658 m at t = 6.47 s (modal, 6 and 8 modes;
  -0.8656 m with 4); segment chain -0.8193 / -0.8477 / -0.8553 m, Richardson
  (10 and 20) -0.858 m at t = 6.45 s. The 0.9 % gap is of the order of
  (w_tip / L)^2 = 0.75 %, consistent with the modal model's kinematics being
  second-order in the deflection.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import InputError
from ..joints import Revolute
from ..model import ModelBuilder
from .beam import BeamProperties
from .integrators import simulate
from .rigid import RigidSystem
from .segments import add_segmented_beam, segment_tip_offset
from .system import FlexibleSystemBuilder, ModeSet

SPINUP_BEAM = dict(length=10.0, E=7.0e10, G=2.7e10, density=3000.0, area=4.0e-4, Iy=2.0e-7,
                   Iz=2.0e-7, J=4.0e-7)
SPINUP_TIME = 15.0


def spinup_profile(t: float, omega_s: float, T_s: float = SPINUP_TIME) -> tuple[float, float, float]:
    """Hub angle (rad), rate (rad/s) and acceleration (rad/s^2) at ``t`` (s)."""
    if t < T_s:
        w = 2 * math.pi / T_s
        th = omega_s / T_s * (t * t / 2 + (T_s / (2 * math.pi)) ** 2 * (math.cos(w * t) - 1))
        thd = omega_s / T_s * (t - math.sin(w * t) / w)
        thdd = omega_s / T_s * (1 - math.cos(w * t))
        return th, thd, thdd
    return omega_s * (t - T_s / 2), omega_s, 0.0


def spinup_system(method: str = "modes", n: int = 4, stiffening: bool = True):
    """The spin-up beam as a system: ``method="modes"`` (``n`` clamped-free
    modes in the plane of rotation) or ``"segments"`` (``n`` segments).

    Returns ``(system, tip)`` where ``tip(q)`` gives the tip's transverse
    deflection in the hub frame (m).
    """
    beam = BeamProperties(**SPINUP_BEAM)
    if method == "modes":
        b = FlexibleSystemBuilder(gravity=(0.0, 0.0, 0.0), name="spinup_modes")
        b.add_beam("beam", "world", Revolute(axis=(0.0, 0.0, 1.0)), beam, ModeSet(bending_y=n),
                   stiffening=stiffening)
        system = b.build()
        rec = system.beam("beam")
        return system, lambda q: float(rec.deflection(rec.coordinates(q), [beam.length])[0, 1])
    if method == "segments":
        b = ModelBuilder(gravity=(0.0, 0.0, 0.0), name="spinup_segments")
        hub = b.add_body("hub", "world", Revolute(axis=(0.0, 0.0, 1.0)))
        tip_body = add_segmented_beam(b, "beam", hub, beam, n)
        system = RigidSystem(b.build())
        off = segment_tip_offset(beam, n)

        def tip(q):
            R, p = system.poses(q)
            return float((R[hub].T @ (p[tip_body] + R[tip_body] @ off - p[hub]))[1])
        return system, tip
    raise ValueError(f"method {method!r} must be 'modes' or 'segments'")


def run_spinup(omega_s: float, t_final: float = 20.0, method: str = "modes", n: int = 4,
               stiffening: bool = True, dt_out: float = 0.05, integrator: str = "DOP853",
               rtol: float = 1e-8, atol: float = 1e-10, stop_above: float | None = None):
    """Simulate the spin-up; returns ``(t, tip_deflection)`` arrays (s, m).

    ``stop_above`` (m) ends the run once the tip deflection's magnitude
    exceeds it (a diverging model otherwise grows without bound and drives
    the adaptive step towards zero); the arrays then stop at the last output
    time before that instant.
    """
    system, tip = spinup_system(method, n, stiffening)

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
    t_eval = np.linspace(0.0, t_final, int(round(t_final / dt_out)) + 1)
    x0 = np.concatenate([system.neutral(), np.zeros(system.nv)])
    traj = simulate(system, x0, t_final, method=integrator, rtol=rtol, atol=atol, t_eval=t_eval,
                    prescribed=prescribed, events=events)
    return traj.t, np.array([tip(x[:system.nq]) for x in traj.x])
