"""Run results: a structured numpy array with ``time`` first, plus metadata.

The array has one float64 field per recorded variable, named
``"unit.variable"`` (``"time"`` first, in s), so ``fmpy.util.plot_result``
works on it directly. :class:`Result` carries it with the run summary and
metadata (units of each column, the system's parameters, the algorithm);
``save`` writes CSV (``.csv``, with a ``#``-comment header holding the
metadata as JSON) or ``.npz`` (array + metadata JSON), and :func:`load_result`
reads either back.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, UnknownNameError
from .typed import typed_columns


@dataclass
class RunSummary:
    """What a run cost.

    Attributes
    ----------
    steps : int
        Accepted macro steps.
    rejected_steps : int
        Macro steps rejected and repeated (adaptive stepping).
    loop_iterations : int
        Total iterations spent solving algebraic loops.
    wall_time : float
        Wall-clock time of the run [s] (set-up excluded).
    real_time_factor : float
        Simulated time per wall-clock time [s/s] (>1: faster than real time).
    end_time : float
        Time reached [s].
    """

    steps: int = 0
    rejected_steps: int = 0
    loop_iterations: int = 0
    wall_time: float = 0.0
    real_time_factor: float = 0.0
    end_time: float = 0.0

    def __str__(self) -> str:
        return (f"{self.steps} steps ({self.rejected_steps} rejected), {self.loop_iterations} loop iterations, "
                f"t_end = {self.end_time!r} s, wall {self.wall_time:.3f} s, real-time factor {self.real_time_factor:.1f}")


@dataclass
class Result:
    """A co-simulation result.

    Attributes
    ----------
    data : numpy.ndarray
        Structured array, field ``time`` [s] first, then ``"unit.variable"``.
    summary : RunSummary
        Steps, rejections, loop iterations, wall time, real-time factor.
    meta : dict
        ``units`` (column -> unit symbol), ``algorithm``, ``step``, ``values``, ...
    """

    data: np.ndarray
    summary: RunSummary = field(default_factory=RunSummary)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """Column names, ``time`` first."""
        return list(self.data.dtype.names)

    @property
    def time(self) -> np.ndarray:
        """The time column [s]."""
        return self.data["time"]

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.data.dtype.names:
            raise UnknownNameError(f"no recorded column {name!r}; recorded: {', '.join(self.names)}")
        return self.data[name]

    def __len__(self) -> int:
        return len(self.data)

    def save(self, path: str | Path) -> Path:
        """Write to ``.csv`` or ``.npz`` (chosen by the suffix); returns the path."""
        path = Path(path)
        meta = dict(self.meta, summary=asdict(self.summary))
        if path.suffix == ".csv":
            header = "# mbfmu " + json.dumps(meta, default=str) + "\n" + ",".join(self.names)
            if any(self.data.dtype[n].kind == "U" for n in self.names):
                _save_text_csv(path, self.data, header)
                return path
            arr = np.column_stack([self.data[n] for n in self.names]) if len(self.data) else np.zeros((0, len(self.names)))
            np.savetxt(path, arr, delimiter=",", header=header, comments="", fmt="%.17g")
        elif path.suffix == ".npz":
            np.savez(path, data=self.data, meta=np.array(json.dumps(meta, default=str)))
        else:
            raise InputError(f"cannot save results to {str(path)!r}: use a .csv or .npz file")
        return path


def make_array(names: list[str], rows: np.ndarray, types: dict[str, str] | None = None) -> np.ndarray:
    """Structured array with fields ``names`` from a 2-D array of float rows:
    float64, or int64 / bool / str for the Integer, Boolean and String
    columns named in ``types`` (see :func:`mbfmu.cosim.typed.typed_columns`)."""
    return typed_columns(names, rows, types)


def _save_text_csv(path: Path, data: np.ndarray, header: str) -> None:
    """CSV with text columns (quoted where needed), numbers at full precision."""
    import csv
    with open(path, "w", newline="") as f:
        f.write(header + "\n")
        w = csv.writer(f)
        kinds = [data.dtype[n].kind for n in data.dtype.names]
        for row in data:
            w.writerow([v if k == "U" else int(v) if k in "ib" else f"{v:.17g}" for v, k in zip(row.tolist(), kinds)])


def _load_text_csv(path: Path, names: list[str], skip: int, types: dict[str, str]) -> np.ndarray:
    import csv
    from .typed import numpy_dtype
    with open(path, newline="") as f:
        rows = list(csv.reader(f))[skip:]
    cols = list(zip(*rows)) if rows else [()] * len(names)
    out = {}
    for n, c in zip(names, cols):
        t = types.get(n, "Real")
        out[n] = np.array(c, dtype=str) if t == "String" else np.array([float(x) for x in c])
    dtype = np.dtype([(n, numpy_dtype(types.get(n, "Real"), out[n])) for n in names])
    data = np.empty(len(rows), dtype=dtype)
    for n in names:
        data[n] = out[n] if types.get(n) != "Boolean" else out[n] != 0
    return data


def load_result(path: str | Path) -> Result:
    """Read a result written by :meth:`Result.save`."""
    path = Path(path)
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            data = z["data"]
            meta = json.loads(str(z["meta"]))
    elif path.suffix == ".csv":
        with open(path) as f:
            first = f.readline()
            names_line = f.readline() if first.startswith("# mbfmu") else first
        meta = json.loads(first[len("# mbfmu "):]) if first.startswith("# mbfmu") else {}
        names = names_line.strip().split(",")
        skip = 2 if first.startswith("# mbfmu") else 1
        types = meta.get("types") or {}
        if "String" in types.values():
            data = _load_text_csv(path, names, skip, types)
        else:
            rows = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2)
            data = make_array(names, rows.reshape(-1, len(names)), types)
    else:
        raise InputError(f"cannot load results from {str(path)!r}: use a .csv or .npz file")
    summary = RunSummary(**meta.pop("summary", {}))
    return Result(data, summary, meta)
