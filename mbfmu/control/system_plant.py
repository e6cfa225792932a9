"""Discrete-time python-control systems as plants (what an exported controller FMU runs).

:func:`mbfmu.control.export.export_fmu` writes a system's *spec* (a small
JSON file, below) into the FMU's resources; the FMU's plant is one of the
classes here, rebuilt from that spec:

* :class:`LinearSystemPlant`: ``x[k+1] = A x[k] + B u[k]``,
  ``y[k] = C x[k] + D u[k]`` from the matrices in the spec (numpy only: the
  FMU does not import python-control);
* :class:`ReferencedSystemPlant`: a discrete ``NonlinearIOSystem`` rebuilt
  *by reference* inside the FMU (``"module:function"`` + JSON keyword
  arguments, e.g. ``mbfmu.control.discrete_pid:pid``), stepped with its own update
  and output functions.

Sampling semantics are those of :class:`mbfmu.cosim.units.ControlUnit`: one
communication step = one sample (the step must equal the sample time ``dt``,
any other step is refused with an FMI error); over a step the inputs last
set are held and the state makes one update; the outputs are computed from
the current state and the current inputs (direct feedthrough declared from
the nonzero columns of ``D``; every input for a nonlinear system).

Spec (JSON object, ``"format": "mbfmu.system", "version": 1``)::

    name        str            plant / FMU model name
    kind        "linear" | "reference"
    dt          float          sample time, s
    inputs, outputs, states    [{"name": FMI name, "label": python-control label,
                                 "unit": str, "start": float}]
    A, B, C, D  nested lists   (linear) shapes (n, n), (n, m), (p, n), (p, m)
    factory     str            (reference) "module:function" returning the system
    kwargs      object         (reference) its keyword arguments
    feedthrough object         (reference) output name -> input names
    origin      object         how the spec was made (continuous source, method)
"""
from __future__ import annotations

import hashlib
import importlib
import json
import math
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np

from ..errors import InputError, ModelError
from ..plant import Plant
from ..plant.signals import Signal

SPEC_FORMAT = "mbfmu.system"
SPEC_VERSION = 1


def load_spec(spec: Mapping[str, Any] | str | Path, sha256: str | None = None) -> dict[str, Any]:
    """The spec as a dict: given as one, or read from a JSON file (whose
    SHA-256 must be ``sha256`` when given)."""
    if isinstance(spec, Mapping):
        data = dict(spec)
    else:
        try:
            raw = Path(spec).read_bytes()
            if sha256 is not None and hashlib.sha256(raw).hexdigest() != sha256:
                raise ModelError(f"the system spec {str(spec)!r} was modified (SHA-256 differs from the exported one)")
            data = json.loads(raw.decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelError(f"cannot read the system spec {str(spec)!r}: {exc}") from exc
    if data.get("format") != SPEC_FORMAT or data.get("version") != SPEC_VERSION:
        raise ModelError(f"not an mbfmu system spec (format {SPEC_FORMAT!r} version {SPEC_VERSION}): "
                         f"format {data.get('format')!r} version {data.get('version')!r}")
    return data


def _signals(entries: list[Mapping[str, Any]], kind: str, what: str) -> tuple[Signal, ...]:
    return tuple(Signal(e["name"], e.get("unit", "1"), f"{what} {e['label']!r} of the python-control system",
                        float(e.get("start", 0.0)), kind=kind) for e in entries)


class SystemPlant(Plant):
    """Common part: ports, sample time and the step check, from a spec.

    Parameters
    ----------
    spec : mapping, str or Path, optional
        The spec or its JSON file (default: the class attributes
        ``default_spec`` / ``spec_path``, set by the model file an exported
        FMU carries; the spec is read when that file is imported, so an
        instance never depends on the file still being there).
    """

    spec_path: ClassVar[str | Path | None] = None
    default_spec: ClassVar[Mapping[str, Any] | None] = None   # read once when the model file is imported
    kind: ClassVar[str] = ""

    def __init__(self, spec: Mapping[str, Any] | str | Path | None = None) -> None:
        if spec is None:
            spec = self.default_spec if self.default_spec is not None else self.spec_path
            if spec is None:
                raise ModelError(f"{type(self).__name__}: no spec given and no spec_path")
        self.spec = load_spec(spec)
        if self.spec["kind"] != self.kind:
            raise ModelError(f"{type(self).__name__} runs {self.kind!r} specs, not {self.spec['kind']!r}")
        self.name = str(self.spec["name"])
        self.description = f"python-control system {self.name!r}, discrete, sample time {self.spec['dt']} s"
        self.dt = float(self.spec["dt"])
        if not (self.dt > 0 and math.isfinite(self.dt)):
            raise ModelError(f"system {self.name!r}: sample time {self.dt!r} s must be positive and finite")
        self.inputs = _signals(self.spec["inputs"], "input", "input")
        self.outputs = _signals(self.spec["outputs"], "output", "output")
        self.states = _signals(self.spec["states"], "state", "state")
        self.parameters = ()
        self.default_step = self.internal_step = self.dt
        self.default_stop_time = 100 * self.dt
        self.labels = {s.name: e["label"] for s, e in zip((*self.inputs, *self.outputs),
                                                         (*self.spec["inputs"], *self.spec["outputs"]))}

    def initial_state(self) -> np.ndarray:
        return np.array([float(e.get("start", 0.0)) for e in self.spec["states"]], dtype=float)

    def derivatives(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        raise ModelError(f"system {self.name!r} is discrete-time: it has no derivatives, only updates")

    def check_step(self, t: float, dt: float) -> None:
        """Refuse a communication step that is not one sample."""
        if not math.isclose(dt, self.dt, rel_tol=1e-9, abs_tol=0.0):
            raise InputError(f"system {self.name!r} is discrete with sample time {self.dt!r} s: a communication "
                             f"step of {dt!r} s (from t={t} s) is refused; step it with its sample time")

    def update(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """State at the next sample."""
        raise NotImplementedError

    def advance(self, t: float, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
        """One sample: ``x[k+1]`` from ``x[k]`` and ``u[k]``; ``dt`` must be the sample time."""
        self.check_step(t, dt)
        return self.update(t, x, u)


class LinearSystemPlant(SystemPlant):
    """A discrete linear state-space system ``(A, B, C, D, dt)`` as a plant.

    Examples
    --------
    >>> import control
    >>> from mbfmu.control.export import system_spec
    >>> p = LinearSystemPlant(system_spec(control.ss(0.5, 1.0, 2.0, 0.0, 0.1, inputs="e", outputs="u")))
    >>> p.advance(0.0, [1.0], [1.0], 0.1), p.feedthrough
    (array([1.5]), {'u': ()})
    """

    kind = "linear"

    def __init__(self, spec: Mapping[str, Any] | str | Path | None = None) -> None:
        super().__init__(spec)
        n, m, p = len(self.states), len(self.inputs), len(self.outputs)
        self.A = np.array(self.spec["A"], dtype=float).reshape(n, n)   # (n, n)
        self.B = np.array(self.spec["B"], dtype=float).reshape(n, m)   # (n, m)
        self.C = np.array(self.spec["C"], dtype=float).reshape(p, n)   # (p, n)
        self.D = np.array(self.spec["D"], dtype=float).reshape(p, m)   # (p, m)
        self.feedthrough = {o.name: tuple(i.name for j, i in enumerate(self.inputs) if self.D[k, j] != 0.0)
                            for k, o in enumerate(self.outputs)}

    def update(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.A @ np.asarray(x, dtype=float) + self.B @ np.asarray(u, dtype=float)

    def outputs_at(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.C @ np.asarray(x, dtype=float) + self.D @ np.asarray(u, dtype=float)


class ReferencedSystemPlant(SystemPlant):
    """A discrete ``NonlinearIOSystem`` rebuilt from ``factory(**kwargs)``.

    The factory (``"module:function"``) must be importable where the FMU
    runs; python-control is imported there.
    """

    kind = "reference"

    def __init__(self, spec: Mapping[str, Any] | str | Path | None = None) -> None:
        super().__init__(spec)
        self.system = rebuild(self.spec["factory"], self.spec.get("kwargs", {}))
        for what, sigs in (("input", self.spec["inputs"]), ("output", self.spec["outputs"]),
                           ("state", self.spec["states"])):
            labels = list(getattr(self.system, f"{what}_labels"))
            if labels != [e["label"] for e in sigs]:
                raise ModelError(f"{self.spec['factory']} rebuilt a system with {what}s {labels}, the spec "
                                 f"has {[e['label'] for e in sigs]}")
        self.feedthrough = {k: tuple(v) for k, v in self.spec.get("feedthrough", {}).items()}

    def update(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.system._rhs(t, np.asarray(x, dtype=float), np.asarray(u, dtype=float)), dtype=float)

    def outputs_at(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.system._out(t, np.asarray(x, dtype=float), np.asarray(u, dtype=float)),
                          dtype=float).reshape(len(self.outputs))


#: Modules renamed before mbfmu 0.1.0 (each had the name of the function it exports, so
#: importing it replaced the package's function by the module); controller FMUs
#: exported before name the old module.
RENAMED_MODULES = {"mbfmu.control.pid": "mbfmu.control.discrete_pid"}


def rebuild(factory: str, kwargs: Mapping[str, Any]) -> Any:
    """``module:function`` called with ``kwargs``."""
    module_name, _, fn_name = str(factory).partition(":")
    module_name = RENAMED_MODULES.get(module_name, module_name)
    try:
        fn = getattr(importlib.import_module(module_name), fn_name)
    except (ImportError, AttributeError) as exc:
        raise ModelError(f"cannot import the system factory {factory!r}: {exc}") from exc
    return fn(**dict(kwargs))


def plant_from_spec(spec: Mapping[str, Any] | str | Path) -> SystemPlant:
    """The plant of a spec of either kind."""
    data = load_spec(spec)
    cls = {"linear": LinearSystemPlant, "reference": ReferencedSystemPlant}.get(data["kind"])
    if cls is None:
        raise ModelError(f"unknown system spec kind {data['kind']!r}")
    return cls(data)
