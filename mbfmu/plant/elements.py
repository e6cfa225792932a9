"""Plug-in elements a plant registers with the native runtime.

A plug-in element is a force element the engine core does not know, written
once in C against the engine's element interface
(``mbfmu/dynamics/csrc/element.h``: a ``const mbn_element_class`` with a
force on a body point and/or generalized forces on joint coordinates, the
rates of its own continuous states, and their tangent; discrete states
sampled on a time grid or changed at its state events; an elastic energy; or,
as a frame element, the acceleration of the moving frame the whole plant runs
in, such as the crash occupant's sled) and registered by the plant that uses it
(:meth:`MultibodyPlant.register_elements`). The native FMU compiles
the C file with the runtime, lists it in the registry the runtime iterates
(Co-Simulation and Model Exchange, FMI 2 and 3) and differentiates it
exactly in the directional derivatives; the Python plant runs the same C
through the kernels (:func:`kernel_registry`, :mod:`mbfmu.dynamics.plugins`)
and ``mbfmu.linearize`` its tangent (:func:`tangent_registry`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..dynamics.plugins import class_address
from ..dynamics.symbolic import Sym, value
from ..errors import InputError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _number(v):
    """``v`` as a float, or as itself while the tape records (an expression of the parameters)."""
    return v if isinstance(v, Sym) else float(v)


@dataclass(frozen=True)
class NativeElement:
    """One registered plug-in element: a force on the point of one body.

    Parameters
    ----------
    source : Path
        The C file defining the element's class (``element.h``).
    symbol : str
        The name of its ``const mbn_element_class`` in ``source``.
    body : int
        The body the force acts on (1-based engine body index).
    point : tuple of float
        The point of application in the body frame, m.
    parameters : tuple of float
        The class's parameters (as many as its ``npar``; units the class's). Computed
        from the plant's parameters, they follow them in the native FMU (the
        expression tape moves them like the model's own numbers).
    states : tuple of Signal
        The element's own continuous states (as many as its class's ``nstate``;
        names, units and start values), which follow the plant's ``[q; v]`` in the
        state vector (:meth:`MultibodyPlant.register_elements` appends them).
    discrete : tuple of Signal
        The element's discrete states (as many as its class's ``ndisc``; names, units and
        start values): changed only at the instants of its sampling grid (``period`` and
        ``sample`` of its class) or at its state events (``on_event``), they follow all
        elements' continuous states in the state vector and are discrete states of the FMU
        in Model Exchange.
    joint_q, joint_v : tuple of int
        The configuration and velocity coordinates (0-based indices into ``q`` and ``v``) of
        the class's joint rows (as many as its ``njoint``): it reads ``q[joint_q]``,
        ``v[joint_v]`` and adds generalized forces on ``v[joint_v]``.
    events : tuple of str
        What each of the class's event indicators is (as many as its ``nevent``, with
        units, naming the element: ``"latch 2: travel past the stop (rad)"``): the
        descriptions of the Model Exchange FMU's event indicators.
    """

    source: Path
    symbol: str
    body: int
    point: tuple[float, float, float]
    parameters: tuple[float, ...] = ()
    states: tuple = ()
    discrete: tuple = ()
    joint_q: tuple[int, ...] = ()
    joint_v: tuple[int, ...] = ()
    events: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "source", Path(self.source))
        # expressions of the plant's parameters stay expressions while the tape records
        object.__setattr__(self, "point", tuple(_number(v) for v in self.point))
        object.__setattr__(self, "parameters", tuple(_number(v) for v in self.parameters))
        if not _IDENT.match(self.symbol):
            raise InputError(f"plug-in element symbol {self.symbol!r} is not a C identifier")
        if len(self.point) != 3:
            raise InputError(f"plug-in element {self.symbol}: point has {len(self.point)} coordinates, not 3")
        object.__setattr__(self, "joint_q", tuple(int(i) for i in self.joint_q))
        object.__setattr__(self, "joint_v", tuple(int(i) for i in self.joint_v))
        object.__setattr__(self, "events", tuple(str(e) for e in self.events))
        if len(self.joint_q) != len(self.joint_v):
            raise InputError(f"plug-in element {self.symbol}: {len(self.joint_q)} joint coordinates (joint_q) but "
                             f"{len(self.joint_v)} velocities (joint_v)")
        if any(i < 0 for i in (*self.joint_q, *self.joint_v)):
            raise InputError(f"plug-in element {self.symbol}: joint_q and joint_v are 0-based indices, got "
                             f"{self.joint_q}, {self.joint_v}")
        object.__setattr__(self, "states", tuple(self.states))
        object.__setattr__(self, "discrete", tuple(self.discrete))
        for sig in (*self.states, *self.discrete):
            if getattr(sig, "kind", None) != "state":
                raise InputError(f"plug-in element {self.symbol}: its states must be Signals of kind 'state', "
                                 f"got {sig!r}")
        for v in (*self.point, *self.parameters, *(sig.start for sig in (*self.states, *self.discrete))):
            if not math.isfinite(value(v)):
                raise InputError(f"plug-in element {self.symbol}: point, parameters and state starts must be finite, got {v}")

    def c_text(self) -> str:
        """The element's C source (read once per build).

        Returns
        -------
        str
            The text of :attr:`source`.
        """
        if not self.source.is_file():
            raise InputError(f"plug-in element {self.symbol}: no C file {self.source.name!r}")
        return self.source.read_text()


#: The runtime's sensor kind of an element's outputs (``MBN_SENS_ELEMENT``, ``csrc/element.h``).
ELEMENT_OUTPUT = 64


@dataclass(frozen=True)
class ElementOutput:
    """An output sensor reading output ``output`` of the plant's plug-in element ``element``.

    The element's class computes it (``output`` of its ``mbn_element_class``, units the
    class's) and its tangent; the native FMU evaluates it (the Python plant does not run
    plug-in elements). The native runtime refuses at instantiation an ``output`` beyond the
    class's ``nout``.

    Parameters
    ----------
    element : int
        Position of the element in :attr:`MultibodyPlant.native_elements` (0-based).
    output : int
        Which of its outputs (0-based).
    """

    element: int
    output: int = 0
    code = ELEMENT_OUTPUT

    @property
    def index(self) -> int:
        """The element's position (the runtime's sensor row ``index``)."""
        return self.element

    @property
    def axis(self) -> int:
        """The output's position (the runtime's sensor row ``axis``)."""
        return self.output


def kernel_registry(elements) -> tuple:
    """The kernels' registry of ``elements`` (``element_adapt``, ``element_rhs``,
    ``element_outputs``): each class compiled from its own C (:mod:`mbfmu.dynamics.plugins`).

    Parameters
    ----------
    elements : sequence of NativeElement
        The plant's plug-in elements.

    Returns
    -------
    tuple
        ``(class addresses, bodies, [point; parameters] concatenated, npar, nstate, ndisc,
        joint_q concatenated, joint_v concatenated)``.
    """
    addresses = tuple(class_address(el.c_text(), el.symbol, f"plug-in element {el.symbol}") for el in elements)
    par = np.array([value(v) for el in elements for v in (*el.point, *el.parameters)], float)
    return (addresses, np.array([el.body for el in elements], np.intc), par,
            np.array([len(el.parameters) for el in elements], np.intc),
            np.array([len(el.states) for el in elements], np.intc),
            np.array([len(el.discrete) for el in elements], np.intc),
            np.array([i for el in elements for i in el.joint_q], np.intc),
            np.array([i for el in elements for i in el.joint_v], np.intc))


def tangent_registry(elements, o_elements: int) -> tuple:
    """The plug-in elements for the kernels' exact tangents (``packed_jacobian``).

    Parameters
    ----------
    elements : sequence of NativeElement
        The plant's plug-in elements.
    o_elements : int
        Offset of their ``[point; parameters]`` block in the plant's description ``d``.

    Returns
    -------
    tuple
        ``(class addresses, rows, joint_q, joint_v)``, rows ``(nel, 5)`` int32: body, offset in
        ``d``, number of parameters, of continuous and of discrete states; ``joint_q``,
        ``joint_v`` int32: the joint rows' coordinates, element after element.
    """
    reg = kernel_registry(elements)
    rows, at = [], int(o_elements)
    for el in elements:
        rows.append((el.body, at, len(el.parameters), len(el.states), len(el.discrete)))
        at += 3 + len(el.parameters)
    return (reg[0], np.ascontiguousarray(np.array(rows, np.intc).reshape(-1)), np.ascontiguousarray(reg[6]),
            np.ascontiguousarray(reg[7]))
