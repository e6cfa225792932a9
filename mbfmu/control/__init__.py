"""mbfmu.control: linear models of plants and FMUs, and controllers that
speak python-control.

==============================  ==================================================
``linearize``                   exact continuous-time model of a plant
                                (:mod:`~mbfmu.control.linearization`)
``trim``                        equilibrium for given inputs (Newton, exact Jacobian)
``trim_inputs``                 inputs that hold a given state (least squares,
                                :mod:`~mbfmu.control.input_trim`)
``linearize_fmu``, ``era``      discrete model of any FMU: exact for mbfmu-built FMUs
                                (:mod:`~mbfmu.control.fmu_model`), else ERA for FMUs
                                with state save/restore (:mod:`~mbfmu.control.fmu_era`:
                                it drives FMUs, so it lives in the co-simulation layer)
``linearize_system``            a whole co-simulation system with analysis points,
``loop_analysis``               sampled or continuous; loop gain, S, T, margins
                                (:mod:`~mbfmu.control.system_linearization`), every
                                crossover checked (:mod:`~mbfmu.control.crossovers`),
                                the stability verdict (:mod:`~mbfmu.control.loop_verdict`)
``find_crossovers``             gain and phase crossovers of any SISO loop gain
``schedule``                    gains designed on a grid of operating points, interpolated
                                (:mod:`~mbfmu.control.scheduling`)
``robustness``                  Monte Carlo of margins and poles of the linearized loop
                                (:mod:`~mbfmu.control.robust_analysis`)
``pid``                         discrete PID, derivative filter, anti-windup
``lqr_servo``, ``lqg_servo``    LQR with integral action; with a Kalman filter
``kalman_filter``               steady-state discrete Kalman filter
``computed_torque``             inverse-dynamics control of a rigid tree (rnea)
``simulate_loop``               plant + discrete controller, zero-order hold (Python plant)
``simulate_fmu_loop``           the same loop in the co-simulation master: the plant's
                                FMU, the controller a ControlUnit, references source units
                                (:mod:`~mbfmu.control.master_loop`; native FMU: compiled loop)
``export_fmu``                  any python-control system as an FMU (:mod:`~mbfmu.control.export`)
==============================  ==================================================

Every controller is a discrete-time python-control system (``StateSpace`` or
``NonlinearIOSystem``, sample time ``dt``) with named signals, so the
co-simulation master can use it as a unit. Names are imported lazily (this
package imports python-control, which is slow to import).
"""
from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {
    "linearize": "linearization", "trim": "linearization", "operating_state": "linearization",
    "Linearization": "linearization",
    "trim_inputs": "input_trim", "InputTrim": "input_trim",
    "linearize_fmu": "fmu_model", "plant_of_fmu": "fmu_model", "era": "mbfmu.control.fmu_era",
    "linearize_system": "system_linearization", "loop_analysis": "system_linearization",
    "LoopAnalysis": "system_linearization", "find_crossovers": "crossovers",
    "pid": "discrete_pid",
    "lqr_servo": "lqr", "lqg_servo": "lqr", "dlqr_gain": "lqr",
    "kalman_filter": "kalman", "kalman_gain": "kalman",
    "computed_torque": "inverse_dynamics_control",
    "schedule": "scheduling", "Schedule": "scheduling", "scheduled_controller": "scheduling",
    "robustness": "robust_analysis", "RobustnessResult": "robust_analysis",
    "simulate_loop": "sampled", "step_system": "sampled",
    "simulate_fmu_loop": "master_loop", "native_plant_fmu": "master_loop",
    "export_fmu": "export",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
