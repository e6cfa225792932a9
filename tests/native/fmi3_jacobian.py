"""The full Jacobian of an FMI 3.0 Model Exchange FMU through fmpy, from its directional
derivatives, with its adjoint products: for the tests that compare FMI 3 with FMI 2."""
from __future__ import annotations

import ctypes

import numpy as np
from fmpy import read_model_description

from .fmi_instances import me3_model


def value_count(md, vrs) -> int:
    """The number of values of the Float64 variables ``vrs`` (an array counts its length)."""
    by_vr = {v.valueReference: v for v in md.modelVariables}
    return sum(int(by_vr[by_vr[r].dimensions[0].valueReference].start) if by_vr[r].dimensions else 1
               for r in vrs)


def fmi3_jacobian(path, x=None, u=None, t=None, w=None):
    """``(J, adjoint)``: ``J`` = d(derivatives, outputs)/d(states, inputs) of the FMI 3 FMU at
    ``path`` (columns from getDirectionalDerivative with unit seeds) at time ``t`` (s), states
    ``x`` and inputs ``u`` (None: the start point), and ``adjoint`` = getAdjointDerivative(w)."""
    md = read_model_description(str(path))
    unknowns = [d.variable.valueReference for d in md.derivatives] + [
        v.valueReference for v in md.modelVariables if v.causality == "output"]
    inputs = [v.valueReference for v in md.modelVariables if v.causality == "input"]
    knowns = [d.variable.derivative.valueReference for d in md.derivatives] + inputs
    mu, mk = value_count(md, unknowns), value_count(md, knowns)
    with me3_model(path, md) as model:
        if t is not None:
            model.setTime(t)
        if x is not None:
            xc = np.ascontiguousarray(x, float)
            model.setContinuousStates(xc.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), xc.size)
        if u is not None:
            model.setFloat64(inputs, list(u))
        J = np.column_stack([model.getDirectionalDerivative(unknowns, knowns, list(e), mu) for e in np.eye(mk)])
        adjoint = None if w is None else np.array(model.getAdjointDerivative(unknowns, knowns, list(w), mk))
        model.terminate()
    return J, adjoint
