"""The signals of a python-control system as an exported FMU names them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from ..plant.signals import fmi_names


@dataclass(frozen=True)
class SignalLayout:
    """Labels, FMI names and initial state of an exported system.

    Attributes
    ----------
    inputs, outputs, states : list of str
        The system's labels.
    input_names, output_names, state_names : list of str
        Their FMI variable names (outputs never reuse an input's name).
    x0 : numpy.ndarray
        The initial state, in the units of the states.
    """

    inputs: list[str]
    outputs: list[str]
    states: list[str]
    input_names: list[str]
    output_names: list[str]
    state_names: list[str]
    x0: np.ndarray


def signal_layout(sys: Any, x0: Sequence[float] | None) -> SignalLayout:
    """The :class:`SignalLayout` of ``sys`` with initial state ``x0``.

    Parameters
    ----------
    sys : control.InputOutputSystem
        The system to export.
    x0 : array_like or None
        Initial state (zeros if ``None``), in the units of the states.

    Returns
    -------
    SignalLayout
        Labels, FMI names and the checked initial state.

    Raises
    ------
    InputError
        ``x0`` is not ``sys.nstates`` finite values.
    """
    ins, outs, states = list(sys.input_labels), list(sys.output_labels), list(sys.state_labels)
    nx = sys.nstates
    x0 = np.zeros(nx) if x0 is None else np.asarray(x0, dtype=float).reshape(-1)
    if x0.size != nx or not np.all(np.isfinite(x0)):
        raise InputError(f"x0 must be {nx} finite values (states {states}), got {x0.tolist()}")
    in_names = fmi_names(ins)
    return SignalLayout(ins, outs, states, list(in_names), list(fmi_names(outs, taken=in_names)),
                        list(fmi_names(states)), x0)
