"""The result table of a study: one row per run.

Columns, in order: ``run`` (index), the parameters, ``status`` (``ok``,
``failed``, ``timed out``, or ``cancelled`` after Ctrl-C), ``error`` (the
message of a failed run, or of a failing metric), ``wall_time`` [s],
``cached`` (taken from the cache, not run), the metrics, ``result`` (the
file holding the run's full result; empty when it is held in memory) and
``key`` (the run's cache key).
"""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, require_extra, unknown_name

STATUSES = ("ok", "failed", "timed out", "cancelled")


@dataclass
class StudyResult:
    """Rows of a finished (or interrupted) study.

    Attributes
    ----------
    rows : list of dict
        One mapping per run, keys :attr:`columns`.
    parameters : list of str
        Parameter column names.
    metrics : list of str
        Metric column names.
    grid : dict
        For a grid study, parameter -> its distinct values in order
        (empty for Monte Carlo and explicit run lists).
    sampled : list of str
        Parameters drawn from distributions (Monte Carlo).
    interrupted : bool
        True when Ctrl-C or SIGTERM cancelled runs.
    stopped_by : str
        The signal that cancelled them: ``"SIGINT"`` (Ctrl-C) or
        ``"SIGTERM"`` ("" when none did).
    units : dict
        Column -> unit symbol for the parameters and metrics whose unit is
        known (SI; "%" for overshoot), used to label plots.
    """

    rows: list[dict[str, Any]]
    parameters: list[str]
    metrics: list[str]
    grid: dict[str, list[Any]] = field(default_factory=dict)
    sampled: list[str] = field(default_factory=list)
    interrupted: bool = False
    stopped_by: str = ""
    units: dict[str, str] = field(default_factory=dict)
    _results: dict[int, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        kind = ("grid " + " x ".join(f"{k} ({len(v)})" for k, v in self.grid.items()) if self.grid
                else "Monte Carlo of " + ", ".join(self.sampled) if self.sampled
                else "parameters " + ", ".join(self.parameters))
        metrics = ", ".join(self.metrics) or "none"
        return (f"StudyResult({self.summary()}{', interrupted' if self.interrupted else ''}; {kind}; "
                f"metrics: {metrics})")

    def label(self, column: str) -> str:
        """``column [unit]`` when its unit is known, else the column name."""
        unit = self.units.get(column, "")
        return f"{column} [{unit}]" if unit else column

    @property
    def columns(self) -> list[str]:
        return ["run", *self.parameters, "status", "error", "wall_time", "cached", *self.metrics, "result", "key"]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, name: str) -> np.ndarray:
        """One column as an array (float for numbers, object otherwise)."""
        if name not in self.columns:
            raise unknown_name(f"no column {name!r}", name, self.columns, "columns")
        values = [r.get(name) for r in self.rows]
        if all(isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) for v in values):
            return np.array(values, dtype=float)
        return np.array(values, dtype=object)

    def count(self, status: str) -> int:
        """Number of runs with ``status``."""
        return sum(r["status"] == status for r in self.rows)

    @property
    def ok(self) -> list[dict[str, Any]]:
        """The rows of the successful runs."""
        return [r for r in self.rows if r["status"] == "ok"]

    def summary(self) -> str:
        """``"12 runs: 11 ok, 1 failed"``."""
        parts = [f"{self.count(s)} {s}" for s in STATUSES if self.count(s)]
        return f"{len(self)} runs: " + ", ".join(parts)

    def result(self, run: int):
        """The full :class:`mbfmu.cosim.Result` of run ``run`` (from memory or its file)."""
        if not 0 <= run < len(self.rows):
            raise InputError(f"run {run} does not exist (the study has {len(self.rows)} runs)")
        if run in self._results:
            return self._results[run]
        path = self.rows[run].get("result")
        if not path:
            raise InputError(f"run {run} has no stored result (status {self.rows[run]['status']})")
        from ..cosim.recording.result import load_result
        return load_result(path)

    def to_dataframe(self):
        """The table as a ``pandas.DataFrame`` (the ``pandas`` extra)."""
        pd = require_extra("pandas", "StudyResult.to_dataframe")
        return pd.DataFrame(self.rows, columns=self.columns)

    def to_csv(self, path: str | Path) -> Path:
        """Write the table as CSV (floats with all 17 digits); returns the path.

        The ``result`` column holds each stored result's path relative to the
        CSV file's folder, so the table names no folder of this machine and
        still finds the results when both are moved together."""
        path = Path(path)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            for r in self.rows:
                row = dict(r, result=_relative(r.get("result"), path.parent))
                w.writerow([_cell(row.get(c)) for c in self.columns])
        return path

    def plot(self, path: str | Path | None = None, **kwargs):
        """The pictures for this kind of study (see :func:`mbfmu.studies.plots.plot_study`)."""
        from .plots import plot_study
        return plot_study(self, path, **kwargs)


def _relative(result: Any, folder: Path) -> Any:
    """A result path relative to ``folder`` (POSIX separators); other values unchanged."""
    if not result:
        return result
    return Path(os.path.relpath(os.path.abspath(result), os.path.abspath(folder))).as_posix()


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    return str(v)


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """The rows of a table written by :meth:`StudyResult.to_csv` (as strings)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def make_rows(values: Sequence[dict[str, Any]], parameters: Sequence[str]) -> list[dict[str, Any]]:
    """Empty rows (status ``cancelled``) for runs not done yet."""
    return [{"run": i, **{p: v.get(p) for p in parameters}, "status": "cancelled", "error": "", "wall_time": math.nan,
             "cached": False, "result": "", "key": ""} for i, v in enumerate(values)]
