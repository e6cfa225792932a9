"""``sweep``: run a target over a parameter grid or Monte Carlo samples and tabulate metrics."""
from __future__ import annotations

import math
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

from ..errors import InputError
from . import params as _params
from .cache import RunCache, run_key
from .executors import Outcome, make_executor
from .metrics import as_metrics, check_variables, evaluate
from .table import StudyResult, make_rows
from .targets import Options, resolve


def sweep(target: Any, parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]], *, stop_time: float,
          step: float | None = None, metrics: Any = None, executor: Any = None, workers: int | None = None,
          cache: str | None = None, samples: int | None = None, seed: int | None = None, sampling: str = "random",
          zipped: bool = False, start_time: float = 0.0, record: str | Sequence[str] = "outputs",
          algorithm: str = "jacobi", timeout: float | None = None, progress: bool = True) -> StudyResult:
    """Simulate ``target`` once per parameter set and tabulate the metrics.

    Parameters
    ----------
    target : str, Plant, path or callable
        A library plant name (``"flexible_arm"``), a model file or
        ``"module:Class"``, a :class:`~mbfmu.plant.Plant` (rebuilt from its
        class and parameter values), an ``.fmu`` or ``.ssp`` path, or a
        function returning a :class:`mbfmu.cosim.System` (called with the
        parameters it accepts as keyword arguments; the others are set on
        the system as ``unit.var``).
    parameters : mapping or list of mappings
        Variable name -> list of values (grid), distribution
        (:class:`~mbfmu.studies.Normal`, :class:`~mbfmu.studies.Uniform`;
        needs ``samples``) or one value; or one mapping per run. See
        :mod:`mbfmu.studies.params`.
    stop_time : float
        End of each run [s].
    step : float, optional
        Communication step [s] (default: the target's own).
    metrics : str, callable, list or mapping, optional
        ``"KIND:VARIABLE"`` specs and functions of the result
        (:mod:`mbfmu.studies.metrics`).
    executor : None, "local", "serial", "threads", int, "dask://HOST:PORT", "dask-local" or distributed.Client
        Where runs execute. ``None``/``"local"``: worker processes on this
        machine (``workers`` of them, default one per core; serial for a
        single run); ``"threads"``: ``workers`` threads of this process
        (the dynamics kernels release the GIL; no start-up, nothing
        pickled); ``"dask://HOST:PORT"`` or a client: a Dask cluster.
    workers : int, optional
        Local worker processes (or threads with ``"threads"``).
    cache : str or Path, optional
        Folder keeping finished runs; a later study with the same target,
        parameters and options takes them from there (resume).
    samples, seed, sampling, zipped
        Monte Carlo draws per grid point, their seed, ``"random"`` or
        ``"lhs"`` (Latin hypercube); zip value lists instead of the full
        factorial.
    start_time : float
        Start of each run [s].
    record : "outputs", "all" or list of str
        Recorded variables of co-simulated targets (plants record outputs and states).
    algorithm : str
        Master algorithm of co-simulated targets.
    timeout : float, optional
        Wall-time limit per run [s]; a run past it is stopped at its next
        step and reported ``timed out``.
    progress : bool
        Show a progress bar (runs done, failed, remaining, time left).

    Returns
    -------
    StudyResult
        One row per run. A failing run is reported in its row and never stops
        the study; after Ctrl-C or SIGTERM the finished runs are kept, the
        rest are ``cancelled``, ``interrupted`` is set and ``stopped_by``
        says which signal ("SIGINT" or "SIGTERM").
    """
    opts = _options(stop_time, step, start_time, record, algorithm, timeout)
    tgt = resolve(target)
    run_values = _params.runs(parameters, samples=samples, seed=seed, sampling=sampling, zipped=zipped)
    names = list(dict.fromkeys(k for v in run_values for k in v))
    tgt.runner().check_names(names)  # a misspelt name fails here, before any run
    ms = as_metrics(metrics)
    # a metric on a variable that will not be recorded fails here, before any run (for a
    # function target, whose system exists only in its runs, at its first result)
    columns = tgt.runner().recorded_names(run_values[0], opts) if run_values else None
    if columns is not None:
        check_variables(ms, columns)
    checked = [] if columns is None else None
    store = RunCache(cache) if cache is not None else None
    if store is not None and tgt.uncacheable:
        warnings.warn(f"study cache: runs of {tgt.label!r} are not taken from the cache, whose key cannot cover "
                      f"all they depend on: {tgt.uncacheable}", stacklevel=2)
    rows = make_rows(run_values, names)
    study = StudyResult(rows, names, [m.name for m in ms], _grid_of(parameters, zipped),
                        [n for n, s in parameters.items() if isinstance(s, _params.Distribution)]
                        if isinstance(parameters, Mapping) else [])
    study.units.update(tgt.runner().parameter_units)
    keys = [run_key(tgt, v, opts) for v in run_values]
    todo = []
    for i, (values, key) in enumerate(zip(run_values, keys)):
        rows[i]["key"] = key
        hit = store.load(key, tgt.kind == "function") if store is not None and not tgt.uncacheable else None
        if hit is None:
            todo.append((i, values))
            continue
        rows[i]["cached"] = True
        _fill(study, i, hit, ms, str(store.result_path(key)), checked)
    from tqdm import tqdm
    bar = tqdm(total=len(rows), initial=len(rows) - len(todo), unit="run", desc=f"study {tgt.label}",
               disable=not progress, dynamic_ncols=True)
    _postfix(bar, study, len(todo))
    ex = make_executor(executor, workers, len(todo)) if todo else None
    left = len(todo)
    stop = _Stop()
    try:
        with _ctrl_c(bar, stop):
            if ex is not None:
                for i, out in ex.run(tgt, todo, opts, stop):
                    if out.status == "cancelled":  # a worker's run stopped by the signal: its row stays so
                        continue
                    path = store.store(keys[i], run_values[i], out) if store is not None else None
                    _fill(study, i, out, ms, str(path) if path else "", checked)
                    left -= 1
                    _postfix(bar, study, left)
                    bar.update(1)
    except KeyboardInterrupt:  # Ctrl-C where no handler could be installed, or a second one
        stop.kind = stop.kind or "SIGINT"
    finally:
        bar.close()
        if ex is not None and ex is not executor:
            ex.close()
    # a signal that came while the last runs finished still asks to stop: never drop it
    study.interrupted = left > 0 or bool(stop.kind)
    study.stopped_by = (stop.kind or "SIGINT") if study.interrupted else ""
    if study.interrupted:
        what = "terminated (SIGTERM)" if study.stopped_by == "SIGTERM" else "interrupted"
        warnings.warn(f"study {what}: {len(rows) - left} runs finished, {left} cancelled"
                      + ("; run it again with the same cache to resume" if store is not None else ""), stacklevel=2)
    return study


def _options(stop_time, step, start_time, record, algorithm, timeout) -> Options:
    for name, v in (("stop_time", stop_time), ("start_time", start_time)):
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"{name} = {v!r} must be a finite number of seconds")
    if stop_time <= start_time:
        raise InputError(f"stop_time {stop_time!r} s must be after start_time {start_time!r} s")
    if step is not None and not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise InputError(f"step = {step!r} must be a positive number of seconds")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise InputError(f"timeout = {timeout!r} must be a positive number of seconds")
    rec = record if isinstance(record, str) else tuple(record)
    return Options(stop_time=float(stop_time), step=None if step is None else float(step),
                   start_time=float(start_time), record=rec, algorithm=algorithm,
                   timeout=None if timeout is None else float(timeout))


def _grid_of(parameters: Any, zipped: bool) -> dict[str, list[Any]]:
    if not isinstance(parameters, Mapping) or zipped:
        return {}
    if any(isinstance(s, _params.Distribution) for s in parameters.values()):
        return {}
    return {n: list(s) for n, s in parameters.items() if not isinstance(s, (str, bytes)) and hasattr(s, "__iter__")}


def _fill(study: StudyResult, i: int, out: Outcome, ms, path: str, checked: list | None = None) -> None:
    """Put outcome ``out`` of run ``i`` in its row, metrics evaluated from its result
    (an empty list ``checked``: check the metrics' variables on this result first)."""
    row = study.rows[i]
    row.update(status=out.status, error=out.error, wall_time=out.wall_time, result=path)
    result = out.result
    if out.status == "ok" and result is None and path:
        from ..cosim.recording.result import load_result
        result = load_result(path)
    if out.status == "ok":
        if checked is not None and not checked:
            check_variables(ms, result.names)
            checked.append(True)
        for m in ms:
            if m.name not in study.units:
                unit = m.unit(result.names, result.units)
                if unit:
                    study.units[m.name] = unit
        values, errors = evaluate(ms, result)
        row.update(values)
        for name in values:
            if name not in study.metrics:
                study.metrics.append(name)
        if errors:
            row["error"] = "; ".join(errors)
    else:
        row.update({m: math.nan for m in study.metrics})
    if not path and out.result is not None:
        study._results[i] = out.result


def _postfix(bar, study: StudyResult, left: int) -> None:
    bar.set_postfix_str(f"ok {study.count('ok')}, failed {study.count('failed') + study.count('timed out')}, "
                        f"remaining {left}", refresh=False)


class _Stop:
    """Whether the study was asked to stop, and by what (``kind``: "SIGINT", "SIGTERM" or "")."""

    def __init__(self) -> None:
        self.kind = ""

    def __call__(self) -> bool:
        return bool(self.kind)


@contextmanager
def _ctrl_c(bar, stop: _Stop) -> Iterator[_Stop]:
    """Within: the first Ctrl-C or SIGTERM asks to stop (``stop()`` turns true, the
    finished runs are kept); a second Ctrl-C aborts."""
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):
        if signum == signal.SIGINT and stop.kind == "SIGINT":
            raise KeyboardInterrupt
        if not stop.kind:
            bar.write("SIGTERM: cancelling the remaining runs, keeping the finished ones" if signum == signal.SIGTERM
                      else "Ctrl-C: cancelling the remaining runs, keeping the finished ones (Ctrl-C again to abort)",
                      file=sys.stderr)
        stop.kind = stop.kind or ("SIGTERM" if signum == signal.SIGTERM else "SIGINT")
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
