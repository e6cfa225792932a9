"""Which factory call rebuilds a python-control system: the reference that
:func:`mbfmu.control.export_fmu` writes into a python FMU, and that the native
export reads a PID's options from (:mod:`mbfmu.control.native_export`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .system_plant import rebuild

PID_FACTORY = "mbfmu.control.discrete_pid:pid"


def same_system(a: Any, b: Any) -> bool:
    """Whether two python-control systems have the same labels and sample time
    and the same update and output functions at eight random points.

    Parameters
    ----------
    a, b : control.InputOutputSystem
        The systems.

    Returns
    -------
    bool
        True when they agree to 1e-12 (relative and absolute) everywhere tried.
    """
    for what in ("input_labels", "output_labels", "state_labels"):
        if list(getattr(a, what)) != list(getattr(b, what)):
            return False
    if a.dt != b.dt:
        return False
    rng = np.random.default_rng(12345)
    for k in range(8):
        x = rng.normal(scale=10.0 ** (k % 4 - 1), size=a.nstates)
        u = rng.normal(scale=10.0 ** (k % 4 - 1), size=a.ninputs)
        for f in ("_rhs", "_out"):
            ya = np.asarray(getattr(a, f)(0.1 * k, x, u), float)
            yb = np.asarray(getattr(b, f)(0.1 * k, x, u), float)
            if ya.shape != yb.shape or not np.allclose(ya, yb, rtol=1e-12, atol=1e-12):
                return False
    return True


def known_reference(sys: Any) -> tuple[str, dict[str, Any]] | None:
    """The reference rebuilding a nonlinear system made by an mbfmu
    controller factory (:func:`mbfmu.control.pid`), or None.

    Parameters
    ----------
    sys : control.InputOutputSystem
        The system.

    Returns
    -------
    (str, dict) or None
        ``("module:function", keyword arguments)`` that build the same system.
    """
    fn = getattr(sys, "updfcn", None)
    if getattr(fn, "__module__", None) == "mbfmu.control.discrete_pid" and hasattr(sys, "gains"):
        base = dict(sys.gains, dt=float(sys.dt), reference=sys.input_labels[0], measurement=sys.input_labels[1],
                    output=sys.output_labels[0], name=sys.name)
        base = {k: (float(v) if isinstance(v, (int, float, np.floating)) else v) for k, v in base.items()}
        for derivative_on in ("measurement", "error"):
            kwargs = dict(base, derivative_on=derivative_on)
            try:
                if same_system(sys, rebuild(PID_FACTORY, kwargs)):
                    return PID_FACTORY, kwargs
            except Exception:
                return None
    return None
