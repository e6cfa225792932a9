"""Plug-in elements a plant registers with the native runtime.

A plug-in element is a force element the engine core does not know, written
once in C against the native runtime's element interface
(``mbfmu/fmu/native/csrc/element.h``: a ``const mbn_element_class`` with a
force on a body point, the rates of its own continuous states, and their
tangent) and registered by the plant that uses it
(:meth:`MultibodyPlant.register_elements`). The native FMU compiles
the C file with the runtime, lists it in the registry the runtime iterates
(Co-Simulation and Model Exchange, FMI 2 and 3) and differentiates it
exactly in the directional derivatives.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
        The class's parameters (as many as its ``npar``; units the class's).
    states : tuple of Signal
        The element's own continuous states (as many as its class's ``nstate``;
        names, units and start values), which follow the plant's ``[q; v]`` in the
        state vector (:meth:`MultibodyPlant.register_elements` appends them).
    """

    source: Path
    symbol: str
    body: int
    point: tuple[float, float, float]
    parameters: tuple[float, ...] = ()
    states: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "source", Path(self.source))
        object.__setattr__(self, "point", tuple(float(v) for v in self.point))
        object.__setattr__(self, "parameters", tuple(float(v) for v in self.parameters))
        if not _IDENT.match(self.symbol):
            raise InputError(f"plug-in element symbol {self.symbol!r} is not a C identifier")
        if len(self.point) != 3:
            raise InputError(f"plug-in element {self.symbol}: point has {len(self.point)} coordinates, not 3")
        object.__setattr__(self, "states", tuple(self.states))
        for sig in self.states:
            if getattr(sig, "kind", None) != "state":
                raise InputError(f"plug-in element {self.symbol}: its states must be Signals of kind 'state', "
                                 f"got {sig!r}")
        for v in (*self.point, *self.parameters, *(sig.start for sig in self.states)):
            if not math.isfinite(v):
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
