"""The master's recording: the columns a run records, the row buffer (whole or a
window streamed to a sink), the non-finite check, the sink's flushes (also from
the watchdog thread while a unit is inside a call) and the result's metadata.

A mixin of :class:`~mbfmu.cosim.master.run._Master`: it reads the master's units,
connections, options and run guard.
"""
from __future__ import annotations

import logging
import math
import sys
import time as _time
from typing import Any, Sequence

import numpy as np

from ...errors import CosimError, InputError, RunInterrupted
from . import fast_loop
from ..recording.result import Result, RunSummary, make_array
from .run_guard import check_recording_fits
from ..units import Unit

_LOG = logging.getLogger("mbfmu.cosim")


class Recording:
    """Recording, streaming and result building of a master run."""

    def _record_setup(self, record: Sequence[str] | str | None) -> None:
        wanted = recorded_variables(self.system, record)
        # the columns are filled unit by unit (one getter call per unit), so the names
        # follow the same grouping, first appearance of each unit first
        order = list(dict.fromkeys(u.name for u, _ in wanted))
        wanted.sort(key=lambda uv: order.index(uv[0].name))
        self.names = ["time"] + [f"{u.name}.{n}" for u, n in wanted]
        symbols = self.system.unit_symbols()  # a variable without its own unit: its connections'
        self.col_units = {f"{u.name}.{n}": symbols[f"{u.name}.{n}"] or None for u, n in wanted}
        self.col_types = {f"{u.name}.{n}": u.variables[n].type for u, n in wanted if u.variables[n].type != "Real"}
        groups: dict[str, list[str]] = {}
        for u, n in wanted:
            groups.setdefault(u.name, []).append(n)
        self.groups = []  # (unit, var names, first column)
        col = 1
        for un, vars_ in groups.items():
            self.groups.append((self.system.units[un], vars_, col))
            col += len(vars_)

    def _recorders(self) -> tuple[list, list]:
        """(views, getters): numpy views on output buffers recorded as they are,
        and getter functions for everything else, each with its columns."""
        views, getters = [], []
        for u, vars_, col in self.groups:
            if all(v in u.outputs for v in vars_):  # read from the output buffer: no extra unit call
                y = u.y
                view = y if isinstance(y, np.ndarray) else (np.ctypeslib.as_array(y)[:len(u.outputs)] if not isinstance(y, list) else None)
                if view is not None:
                    if vars_ != u.outputs:
                        idx = np.array([u.outputs.index(v) for v in vars_])
                        getters.append((lambda view=view, idx=idx: view[idx], col, col + len(vars_)))
                    else:
                        views.append((view, col, col + len(vars_)))
                    continue
            getters.append((u.getter(vars_), col, col + len(vars_)))
        return views, getters

    def _unrecorded_sources(self) -> list[tuple[Unit, int]]:
        """Connected outputs that are not recorded (checked for NaN apart)."""
        rec = set(self.names)
        return [(src, k) for _, _, src, k in self.conns if f"{src.name}.{src.outputs[k]}" not in rec]

    def _check_finite(self, row: np.ndarray, t: float) -> None:
        if not np.isfinite(row).all():
            j = int(np.argmax(~np.isfinite(row)))
            name = self.names[j]
            unit, var = name.split(".", 1) if "." in name else (name, name)
            raise CosimError(f"unit {unit!r}: {var!r} is {float(row[j])!r} at t = {t!r} s (pass allow_nan=True to let "
                             "non-finite values through)")
        for src, k in self._unchecked:
            if not math.isfinite(src.y[k]):
                raise CosimError(f"unit {src.name!r}: output {src.outputs[k]!r} is {src.y[k]!r} at t = {t!r} s "
                                 "(pass allow_nan=True to let non-finite values through)")

    def _flush(self, upto: int | None = None) -> None:
        """Hand the rows recorded since the last flush (up to row ``upto``) to the sink
        (the caller holds ``guard.lock``, or is the master outside the watchdog's reach)."""
        n = self._nrows if upto is None else upto  # read once: the master may record a row meanwhile
        if self.opts.sink is not None and n > self._flushed:
            self.opts.sink.write(self._rows[self._flushed: n])
            self._flushed = n

    def _flush_while_in_a_call(self) -> None:
        """From the watchdog (``guard.lock`` held), the master inside one call for a
        whole flush period: the rows so far go to the sink, also those the compiled
        loop has written (up to its first non-finite row when NaN is not allowed)."""
        if self._sink_done:
            return
        n = self._nrows
        ctl = self._fl_ctl
        if ctl is not None:
            n = max(n, 1 + ctl.reached)
            if not self.opts.allow_nan:
                bad = fast_loop._first_non_finite_row(self._rows, self._flushed, n)
                n = n if bad is None else bad + 1
        self._flush(n)

    def _finish_sink(self, result: Result) -> None:
        with self.guard.lock:
            self._finish_sink_locked(result)

    def _finish_sink_locked(self, result: Result) -> None:
        if self._sink_done:
            return
        self._sink_done = True  # also without a sink: the result is made, the run is ending
        if self.opts.sink is not None:
            try:
                self._flush()
            finally:
                self.opts.sink.finish(result)

    def _result(self, rows: np.ndarray, summary: RunSummary, start_wall: float) -> Result:
        summary.wall_time = _time.perf_counter() - start_wall
        summary.end_time = float(rows[-1, 0]) if len(rows) else math.nan
        span = summary.end_time - float(rows[0, 0]) if len(rows) else 0.0
        summary.real_time_factor = span / summary.wall_time if summary.wall_time > 0 else math.inf
        summary.loop_iterations = self.loop_iterations
        if self.pacer is not None:  # never silent: the summary and a warning tell the overruns
            summary.realtime = self.pacer.factor
            summary.realtime_overruns, summary.realtime_worst_lag = self.pacer.overruns, self.pacer.worst_lag
            if self.pacer.overruns:
                _LOG.warning("%s", self.pacer.report())
        meta = self._meta()
        if self._first_row > 0:
            meta["first_row"] = self._first_row  # earlier rows were streamed to the sink only
        return Result(make_array(self.names, rows, self.col_types), summary, meta)

    def _meta(self) -> dict[str, Any]:
        """Metadata of the run: algorithm, step, column units, values, components, plants."""
        meta = {"algorithm": self.opts.algorithm, "step": self.H, "extrapolation": self.opts.extrapolation,
                "adaptive": self.opts.adaptive, "units": self.col_units, "types": self.col_types,
                "values": {f"{u.name}.{k}": v for u in self.units for k, v in u.values.items()},
                "components": {u.name: {"type": type(u).__name__, "source": str(getattr(u, "path", ""))}
                               for u in self.units}}
        if self._rollback_note:
            meta["rollback"] = self._rollback_note
        if self._python_loop:
            meta["python_loop"] = self._python_loop
        if self._forced_steps:
            meta["adaptive_forced_steps"] = self._forced_steps
        plants = {u.name: u.plant_ref for u in self.units if getattr(u, "plant_ref", None)}
        if plants:  # the viewer rebuilds poses from these (mbfmu.viewer.results)
            meta["plants"] = plants
        return meta

    def _allocate(self, nrows: int) -> None:
        """The row buffer: all ``nrows`` rows when they fit in memory, else (streaming
        to a sink) a window that is handed to the sink and reused."""
        ncols = len(self.names)
        if self.opts.sink is not None and hasattr(self.opts.sink, "reserve"):
            self.opts.sink.reserve(nrows, ncols)
        fits = check_recording_fits(nrows, ncols, streaming=self.opts.sink is not None)
        self._window = not fits
        self._rows = np.empty((nrows if fits else 1 << 16, ncols))
        self._nrows = 0
        self._first_row = 0

    def _record(self, t: float, recs: list) -> None:
        if self._nrows == len(self._rows):
            if self._window:  # streamed: pass the window on and start it again
                with self.guard.lock:
                    self._flush()
                    self._first_row += self._nrows
                    self._nrows = self._flushed = 0
            else:
                self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        row = self._rows[self._nrows]
        row[0] = t
        views, getters = recs
        for view, a, b in views:
            row[a:b] = view
        for get, a, b in getters:
            row[a:b] = get()
        self._nrows += 1
        if not self.opts.allow_nan:
            self._check_finite(row, t)
        if self.pacer is not None:
            self.pacer.pace(t, lambda: bool(self.guard.stop_flag.value))
        if self.guard.due():
            self._between_steps(t)

    def _between_steps(self, t: float) -> None:
        """Periodic work between two steps: flush rows; stop on Ctrl-C, SIGTERM or timeout."""
        with self.guard.lock:
            self._flush()
        reason = self.guard.stop_reason()
        if reason:
            exc = RunInterrupted(f"{reason} at t = {t!r} s")
            exc.kind = self.guard.kind or "SIGINT"
            raise exc

    def _progress_mark(self) -> tuple:
        """Changes with every step or row (read by the watchdog thread)."""
        ctl = self._fl_ctl
        return (self._first_row, self._nrows, self._where, ctl.reached if ctl is not None else -1)

    def _on_stuck(self, kind: str, reason: str) -> bool:
        """Called by the run's watchdog thread (with ``guard.lock`` held) when the
        master did not stop between steps in time: a unit is stuck inside a call.
        Keeps the rows so far (flushed to the sink with the summary) and says so
        on stderr; the watchdog then ends the process. Returns False (nothing
        done) when the master has already handed its result over."""
        if self._sink_done:
            return False
        where = self._where
        ctl = self._fl_ctl
        n = self._nrows
        stuck = [where[0]] if where is not None else []
        if ctl is not None:  # the compiled loop: its rows are counted in C
            n = self._nrows = max(n, 1 + ctl.reached)  # so that the flush below hands them over
            stuck = [self.units[i] for i in fast_loop.units_in_call(ctl, len(self.units))]
            where = (None, float(self._rows[n - 1, 0])) if stuck else None
        summary = RunSummary(**vars(self._summary))
        summary.steps = self._first_row + n - 1 if n else 0
        summary.status = "timeout" if kind == "timeout" else "interrupted"
        names = ", ".join(repr(u.name) for u in stuck)
        inside = ("a unit was inside a call" if where is None
                  else f"unit {names} was inside a call from t = {where[1]!r} s" if len(stuck) == 1
                  else f"units {names} were inside calls from t = {where[1]!r} s")
        summary.message = f"{reason} while {inside}; the process was ended"
        result = self._result(self._rows[:n], summary, self._start_wall)
        self._finish_sink_locked(result)
        path = getattr(self.opts.sink, "path", None)
        kept = (f"the {len(result)} rows so far are in {str(path)!r}" if path is not None and len(result)
                else f"{len(result)} rows recorded, none kept (no output file)" if self.opts.sink is None
                else "no rows were recorded")
        from .run_guard import EXIT_CODES
        print(f"mbfmu: {summary.message}; {kept}; exit status {EXIT_CODES[kind]}", file=sys.stderr)
        return True


def recorded_variables(system, record: Sequence[str] | str | None) -> list[tuple[Unit, str]]:
    """The ``(unit, variable)`` pairs a run of ``system`` records, in column
    order: ``"outputs"`` (default), ``"all"`` (inputs, outputs and Real locals,
    a plant FMU's ``states.*`` among them) or the named ``"unit.var"`` list."""
    wanted: list[tuple[Unit, str]] = []
    if record is None or record == "outputs" or record == "all":
        for u in system.units.values():
            if record == "all":
                wanted += [(u, n) for n in u.inputs]
            wanted += [(u, n) for n in u.outputs]
            if record == "all":
                wanted += [(u, n) for n, v in u.variables.items() if v.causality == "local" and v.type == "Real"]
        return wanted
    from ..system import split_name
    bad = []
    for full in record:
        un, var = split_name(full)
        if un not in system.units or var not in system.units[un].variables:
            bad.append(full)
        else:
            wanted.append((system.units[un], var))
    if bad:
        raise InputError(f"cannot record unknown variables: {', '.join(bad)}")
    return wanted
