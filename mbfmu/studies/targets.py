"""What a study runs: a plant, an FMU, an SSP system or a system-building function.

:func:`resolve` turns the user's ``target`` into a :class:`Target`: a small
picklable description that carries the target's *content* (the FMU or SSP
bytes, the plant reference, the pickled function) and its content hash
:attr:`Target.digest`. The target travels to each worker once; there
:meth:`Target.runner` builds a :class:`Runner` (FMU extracted, SSP read,
plant class imported) once per process and thread, and every run only sets
the run's parameters and simulates.

Parameter names are the target's variable names: plant parameters or inputs
(``payload_mass``; an input given a value is held constant), FMU variables
(``k``, or ``unit.k``), SSP system variables (``ctrl.Kp``), and for a
function the keyword arguments it accepts, the rest set on the system it
returns (``unit.var``).
"""
from __future__ import annotations

import hashlib
import inspect
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import CosimError, InputError, unknown_name

FORMAT = 1  # bump when a run's result would change for the same inputs


@dataclass(frozen=True, kw_only=True)
class Options:
    """How each run is simulated (part of the cache key); built by keyword only.

    Attributes
    ----------
    stop_time : float
        End of each run [s].
    step : float or None
        Communication (macro) step [s]; ``None``: the target's default
        (plant ``default_step``, FMU/SSP default experiment, else
        ``stop_time / 500``).
    start_time : float
        Start of each run [s].
    record : "outputs", "all" or tuple of str
        Recorded variables (see :func:`mbfmu.cosim.simulate`).
    algorithm : str
        Co-simulation master algorithm.
    timeout : float or None
        Wall-time limit of one run [s], checked at every macro step.
    """

    stop_time: float
    step: float | None = None
    start_time: float = 0.0
    record: str | tuple[str, ...] = "outputs"
    algorithm: str = "jacobi"
    timeout: float | None = None

    def key(self) -> dict[str, Any]:
        """The options that change a run's result (timeout excluded)."""
        return {"stop_time": float(self.stop_time).hex(), "step": None if self.step is None else float(self.step).hex(),
                "start_time": float(self.start_time).hex(), "record": self.record, "algorithm": self.algorithm}


class RunTimeout(CosimError):
    """A run went past its wall-time limit."""


def _watchdog(timeout: float | None) -> Callable[[], None]:
    """A check raising :class:`RunTimeout` once ``timeout`` seconds have passed."""
    if timeout is None:
        return lambda: None
    deadline = time.perf_counter() + float(timeout)

    def check() -> None:
        if time.perf_counter() > deadline:
            raise RunTimeout(f"the run took longer than its timeout of {timeout:g} s")
    return check


class Runner:
    """A target made ready to run in this process (built once, run many times)."""

    parameter_names: Sequence[str] = ()
    parameter_units: Mapping[str, str] = {}  # parameter -> unit symbol, where known

    def check_names(self, names: Sequence[str]) -> None:
        """Raise :class:`UnknownNameError` naming the parameters this target lacks."""
        bad = [n for n in names if not self.knows(n)]
        if bad:
            raise unknown_name(f"unknown parameter{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))}",
                               bad[0], self.parameter_names, "parameters of the target")

    def knows(self, name: str) -> bool:
        return name in self.parameter_names

    def run(self, values: Mapping[str, Any], opts: Options):
        """Simulate once with ``values``; returns a :class:`mbfmu.cosim.Result`."""
        raise NotImplementedError

    def recorded_names(self, values: Mapping[str, Any], opts: Options) -> list[str] | None:
        """The columns a run with ``values`` records (``time`` first) when they
        are known before it runs (so that a metric on a variable that is not
        there is refused up front), else None."""
        return None

    def system_for(self, values: Mapping[str, Any]):
        """The co-simulation :class:`~mbfmu.cosim.System` a run with ``values``
        simulates (its units and connections), or None for a plant run alone."""
        return None

    def step_for(self, values: Mapping[str, Any], opts: Options) -> float:
        """The communication step a run with ``values`` takes, s."""
        if opts.step is not None:
            return opts.step
        system = self.system_for(values)
        return _default_step(system.experiment if system is not None else {}, opts)


# -- plants ---------------------------------------------------------------------------
class PlantRunner(Runner):
    """A plant simulated in Python (``Plant.simulate``) with constant inputs."""

    def __init__(self, ref: dict[str, Any], base_dir: Path | None) -> None:
        from ..fmu.plantref import PlantRef, build_plant
        self._ref = PlantRef.from_dict(ref)
        self._base = base_dir
        self._build = build_plant
        plant = build_plant(self._ref, base_dir)
        self._params = [s.name for s in plant.parameters]
        self._inputs = [s.name for s in plant.inputs]
        self.parameter_names = self._params + self._inputs
        self.parameter_units = {s.name: s.unit for s in (*plant.parameters, *plant.inputs) if s.unit}
        self.name = plant.name
        self._default_step = float(plant.default_step)
        self._columns = ["time", *(s.name for s in plant.outputs), *(f"states.{s.name}" for s in plant.states)]

    def recorded_names(self, values: Mapping[str, Any], opts: Options) -> list[str]:
        return list(self._columns)

    def step_for(self, values: Mapping[str, Any], opts: Options) -> float:
        return self._default_step if opts.step is None else opts.step

    def run(self, values: Mapping[str, Any], opts: Options):
        from ..cosim.recording.result import Result, RunSummary, make_array
        if opts.start_time != 0.0:
            raise InputError("plant targets start at t = 0 s (give start_time=0)")
        params = {**self._ref.parameters, **{k: v for k, v in values.items() if k in self._params}}
        plant = self._build(self._ref.with_parameters(params), self._base)
        u = plant.default_inputs()
        for k, v in values.items():
            if k in self._inputs:
                u[plant.input_index(k)] = float(v)
        check = _watchdog(opts.timeout)
        advance = plant.advance

        def watched_advance(t, x, uu, dt):  # per step, so a run past its time limit stops
            check()
            return advance(t, x, uu, dt)
        plant.advance = watched_advance
        step = plant.default_step if opts.step is None else opts.step
        wall = time.perf_counter()
        t, X, Y = plant.simulate(opts.stop_time, step, u)
        wall = time.perf_counter() - wall
        names = ["time", *(s.name for s in plant.outputs), *(f"states.{s.name}" for s in plant.states)]
        data = make_array(names, np.column_stack([t, Y, X]))
        units = {s.name: s.unit for s in plant.outputs} | {f"states.{s.name}": s.unit for s in plant.states}
        summary = RunSummary(steps=len(t) - 1, wall_time=wall, end_time=float(t[-1]),
                             real_time_factor=float(t[-1] - t[0]) / wall if wall > 0 else float("inf"))
        return Result(data, summary, {"units": units, "plant": self.name, "values": dict(values), "step": step})


# -- co-simulation systems (FMU, SSP, function) -------------------------------------------
class SystemRunner(Runner):
    """A co-simulation system run by :func:`mbfmu.cosim.simulate`."""

    def __init__(self, system, default_unit: str | None = None, experiment: Mapping[str, float] | None = None) -> None:
        self.system = system
        self.default_unit = default_unit
        self.experiment = dict(experiment or {})
        self._base_values = {n: dict(u.values) for n, u in system.units.items()}
        self.parameter_names = [v if default_unit else f"{n}.{v}" for n, u in system.units.items()
                                for v, var in u.variables.items() if var.causality in ("parameter", "input")]
        self.parameter_units = {v if default_unit else f"{n}.{v}": var.unit for n, u in system.units.items()
                                for v, var in u.variables.items()
                                if var.causality in ("parameter", "input") and var.unit}

    def full_name(self, name: str) -> str:
        if self.default_unit is not None and not name.startswith(self.default_unit + "."):
            return f"{self.default_unit}.{name}"
        return name

    def knows(self, name: str) -> bool:
        unit, _, var = self.full_name(name).partition(".")
        u = self.system.units.get(unit)
        v = u.variables.get(var) if u is not None else None
        return v is not None and v.causality in ("parameter", "input")

    def run(self, values: Mapping[str, Any], opts: Options):
        for n, u in self.system.units.items():  # each run starts from the values as loaded
            u.values = dict(self._base_values[n])
        self.check_names(list(values))
        for k, v in values.items():
            self.system.set(self.full_name(k), v)
        return _simulate_watched(self.system, opts, self.experiment)

    def recorded_names(self, values: Mapping[str, Any], opts: Options) -> list[str]:
        return _columns(self.system, opts)

    def system_for(self, values: Mapping[str, Any]):
        return self.system

    def step_for(self, values: Mapping[str, Any], opts: Options) -> float:
        return _default_step(self.experiment, opts) if opts.step is None else opts.step


def _columns(system, opts: Options) -> list[str]:
    from ..cosim.master.run import recorded_variables
    record = list(opts.record) if isinstance(opts.record, tuple) else opts.record
    return ["time", *(f"{u.name}.{n}" for u, n in recorded_variables(system, record))]


def _default_step(experiment: Mapping[str, float], opts: Options) -> float:
    """The step of a system run given none: its default experiment's, else 1/500 of the run, s."""
    return float(experiment.get("step", (opts.stop_time - opts.start_time) / 500))


def _simulate_watched(system, opts: Options, experiment: Mapping[str, float]):
    """``simulate`` on ``system`` plus, with a timeout, a watchdog unit stepping with it."""
    from ..cosim import FunctionUnit, System, simulate
    step = opts.step if opts.step is not None else _default_step(experiment, opts)
    if opts.timeout is not None:
        check = _watchdog(opts.timeout)

        def tick(t, u):
            check()
            return ()
        watched = System([*system.units.values(), FunctionUnit("mbfmu_watchdog", tick, outputs=())],
                         [(c.src, c.dst) for c in system.connections])
    else:
        watched = system
    record = list(opts.record) if isinstance(opts.record, tuple) else opts.record
    return simulate(watched, opts.stop_time, step, start_time=opts.start_time, algorithm=opts.algorithm,
                    record=record, progress=False)


class FunctionRunner(Runner):
    """A function returning a :class:`~mbfmu.cosim.System`, called for each run."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        sig = inspect.signature(fn)
        self._any_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        self._kw = [n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        self.parameter_names = list(self._kw)

    def knows(self, name: str) -> bool:
        return self._any_kw or name in self._kw or "." in name

    def _system(self, values: Mapping[str, Any], loaded: dict[str, str] | None = None):
        """The system for ``values``; the FMUs (and SSPs) it loads go into ``loaded``
        (path -> SHA-256 of the bytes), for the cache to check them."""
        from ..cosim import System
        from ..untrusted.archive import note_input, watch_inputs
        kwargs = {k: v for k, v in values.items() if self._any_kw or k in self._kw}
        with watch_inputs() as seen:
            system = self.fn(**kwargs)
            for u in (system.units.values() if isinstance(system, System) else ()):
                if getattr(u, "path", None) is not None and Path(u.path).is_file():
                    note_input(u.path)
        if loaded is not None:
            loaded.update(seen)
        if not isinstance(system, System):
            raise InputError(f"the target function {getattr(self.fn, '__name__', self.fn)!r} returned "
                             f"{type(system).__name__}, not a mbfmu.cosim.System")
        for k, v in values.items():
            if k not in kwargs:
                system.set(k, v)
        return system

    def system_for(self, values: Mapping[str, Any]):
        return self._system(values)

    def run(self, values: Mapping[str, Any], opts: Options):
        from .run_inputs import record_opened
        loaded: dict[str, str] = {}
        with record_opened() as opened:  # the data files it reads, building the system or running it
            system = self._system(values, loaded)
            result = _simulate_watched(system, opts, system.experiment)
        result.meta["inputs"] = {**opened, **loaded}
        return result



# -- the picklable description ----------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A study target as it travels to the workers.

    Attributes
    ----------
    kind : {"plant", "fmu", "ssp", "function"}
    label : str
        Shown in messages and tables.
    digest : str
        SHA-256 of the content (file bytes, plant model source and
        reference, function source): part of every cache key.
    payload : bytes or dict or callable
        The content itself.
    uncacheable : str
        Why runs of this target are never taken from a cache ("" when they
        may be): a function reading a value the digest cannot cover
        (:mod:`.function_digest`).
    """

    kind: str
    label: str
    digest: str
    payload: Any = field(repr=False)
    file_name: str = ""
    uncacheable: str = ""

    def __reduce__(self):
        # a function travels by value (cloudpickle, as Dask does), so lambdas and
        # functions defined in a script or notebook reach process workers too
        if self.kind == "function":
            import cloudpickle
            return (_unpickle_function, (self.label, self.digest, cloudpickle.dumps(self.payload), self.uncacheable))
        return (Target, (self.kind, self.label, self.digest, self.payload, self.file_name))

    def runner(self) -> Runner:
        """The ready-to-run form, built once per process and thread."""
        key = (self.digest, threading.get_ident())
        with _LOCK:
            r = _RUNNERS.get(key)
        if r is None:
            r = self._build_runner()
            with _LOCK:
                _RUNNERS[key] = r
        return r

    def _build_runner(self) -> Runner:
        if self.kind == "plant":
            ref = dict(self.payload["ref"])
            base = None
            if self.payload.get("source") is not None:  # a model file: write it next to the other copies
                path = _materialize(self.digest, self.file_name, self.payload["source"])
                ref["target"], base = path.name, path.parent
            return PlantRunner(ref, base)
        if self.kind == "function":
            return FunctionRunner(self.payload)
        path = _materialize(self.digest, self.file_name, self.payload)
        if self.kind == "fmu":
            from ..cosim import System, open_fmu
            unit = open_fmu(path)
            de = unit.md.defaultExperiment
            exp = {"step": float(de.stepSize)} if de is not None and de.stepSize is not None else {}
            return SystemRunner(System([unit]), unit.name, exp)
        from ..cosim import read_ssp
        system = read_ssp(path)
        return SystemRunner(system, None, system.experiment)


def _unpickle_function(label: str, digest: str, data: bytes, uncacheable: str = "") -> Target:
    import cloudpickle
    return Target("function", label, digest, cloudpickle.loads(data), uncacheable=uncacheable)


_RUNNERS: dict[tuple[str, int], Runner] = {}
_LOCK = threading.Lock()


_MATERIALIZED: dict[str, Path] = {}
_MATERIALIZE_LOCK = threading.Lock()


def _materialize(digest: str, file_name: str, data: bytes) -> Path:
    """``data`` as a file in a private folder of this process (written once per process).

    Never a shared folder with a predictable name: another user could plant a
    file there that the study would run (:mod:`mbfmu.untrusted.scratch`).
    """
    from ..untrusted.scratch import private_dir
    with _MATERIALIZE_LOCK:
        path = _MATERIALIZED.get(digest)
        if path is None or not path.is_file():
            path = private_dir("study") / (Path(file_name).name or "target")
            path.write_bytes(data)
            _MATERIALIZED[digest] = path
    return path


def _sha(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


def resolve(target: Any) -> Target:
    """A :class:`Target` for a library plant name, a Plant, an FMU or SSP path, or a function.

    Raises
    ------
    InputError
        ``target`` is none of these, or its file does not exist.
    """
    from .. import __version__
    from ..plant import Plant
    if isinstance(target, Plant):
        return _plant_target(type(target), target.parameter_values(), __version__)
    if callable(target) and not isinstance(target, type):
        return _function_target(target, __version__)
    if isinstance(target, type) and issubclass(target, Plant):
        return _plant_target(target, {}, __version__)
    if not isinstance(target, (str, os.PathLike)):
        raise InputError(f"cannot run a study on {target!r}: give a library plant name, a Plant, an .fmu or "
                         ".ssp path, or a function returning a mbfmu.cosim.System")
    text = os.fspath(target)
    suffix = Path(text).suffix.lower()
    if suffix in (".fmu", ".ssp"):
        path = Path(text)
        if not path.is_file():
            raise InputError(f"{suffix[1:].upper()} file {text!r} does not exist")
        data = path.read_bytes()
        return Target(suffix[1:], path.name, _sha(suffix, data), data, path.name)
    if suffix == ".ssd":
        raise InputError(f"{text!r}: pack the system as an .ssp archive (the .ssd and its FMUs) so it can travel")
    from ..fmu.plantref import parse
    ref = parse(text)
    if ref.kind == "file":
        if not ref.class_name:  # name the class, as the file's PLANT does, so every worker takes the same one
            from ..plant.library import plant_class
            from ..fmu.plantref import PlantRef
            ref = PlantRef("file", ref.target, plant_class(ref.target).__name__, ref.parameters)
        source = Path(ref.target).read_bytes()
        name = Path(ref.target).name
        return Target("plant", name, _sha("file", source, ref.class_name, __version__),
                      {"ref": ref.to_dict(), "source": source}, name)
    from ..plant.library import plant_class
    cls = plant_class(text) if ref.kind == "library" else None
    return _plant_target(cls, {}, __version__) if cls is not None else \
        Target("plant", text, _sha("class", text, __version__), {"ref": ref.to_dict(), "source": None})


def _plant_target(cls: type, parameters: Mapping[str, float], version: str) -> Target:
    from ..fmu.plantref import PlantRef
    module = inspect.getmodule(cls)
    file = getattr(module, "__file__", None)
    source = Path(file).read_bytes() if file else b""
    if module is not None and module.__name__.startswith("mbfmu_user_model_") and file:  # loaded from a file
        ref = PlantRef("file", Path(file).name, "" if getattr(module, "PLANT", None) is cls else cls.__name__,
                       dict(parameters))
        return Target("plant", cls.name, _sha("file", source, repr(sorted(ref.to_dict().items())), version),
                      {"ref": ref.to_dict(), "source": source}, Path(file).name)
    ref = PlantRef("class", f"{cls.__module__}:{cls.__qualname__}", "", dict(parameters))
    return Target("plant", cls.name, _sha("class", source, repr(sorted(ref.to_dict().items())), version),
                  {"ref": ref.to_dict(), "source": None})


def _function_target(fn: Callable[..., Any], version: str) -> Target:
    from .function_digest import function_digest
    text, why = function_digest(fn)  # source, defaults, closure, the globals it reads
    return Target("function", getattr(fn, "__name__", "function"), _sha("function", text, version), fn, uncacheable=why)
