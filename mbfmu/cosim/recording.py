"""Run results: a structured numpy array with ``time`` first, plus metadata.

The array has one float64 field per recorded variable, named
``"unit.variable"`` (``"time"`` first, in s), so ``fmpy.util.plot_result``
works on it directly. :class:`Result` carries it with the run summary and
metadata (units of each column, the system's parameters, the algorithm,
how the run ended). One layout, three formats (:data:`FORMATS`):

* ``.csv``: the first line is the header (``time,unit.var,...``), then one
  row per line (``%.17g``, so doubles round-trip exactly); plain
  ``pandas.read_csv`` and ``numpy.genfromtxt(names=True)`` read it. The
  metadata (units, values, summary, status) is in the sidecar
  ``NAME.csv.json``.
* ``.npz``: the structured array ``data`` and the metadata JSON ``meta``.
* ``.mat`` (MATLAB v5, :func:`scipy.io.savemat`): ``data`` (rows x columns),
  ``names`` and ``units`` (cell arrays of strings), ``meta`` (JSON) and a
  struct ``signals`` with one field per column (names made MATLAB-safe).

:func:`open_writer` streams rows to a file while a run goes (the master
hands rows over at least every second): a CSV directly, the binary formats
through ``NAME.part.csv`` that is replaced by the final file at the end, so
even a killed process leaves the rows so far in a readable CSV.
:func:`load_result` reads every format back, and the CSV layout written
before (a ``# mbfmu {...}`` first line).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, unknown_name
from .typed import string_code, string_text, typed_columns

FORMATS = {".csv": "CSV, header first, metadata in NAME.csv.json", ".npz": "NumPy .npz", ".mat": "MATLAB .mat"}


def _formats_text() -> str:
    return ", ".join(f"{k} ({v})" for k, v in FORMATS.items())


@dataclass
class RunSummary:
    """What a run cost and how it ended.

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
    status : str
        ``"completed"``, ``"stopped"`` (a unit asked to stop), ``"failed"``
        or ``"interrupted"`` (Ctrl-C, timeout).
    message : str
        Why the run ended early (empty when completed).
    """

    steps: int = 0
    rejected_steps: int = 0
    loop_iterations: int = 0
    wall_time: float = 0.0
    real_time_factor: float = 0.0
    end_time: float = 0.0
    status: str = "completed"
    message: str = ""

    def __str__(self) -> str:
        text = (f"{self.steps} steps ({self.rejected_steps} rejected), {self.loop_iterations} loop iterations, "
                f"t_end = {self.end_time!r} s, wall {self.wall_time:.3f} s, real-time factor {self.real_time_factor:.1f}")
        return text if self.status == "completed" else f"{text}; {self.status}: {self.message.splitlines()[0] if self.message else ''}"


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
            raise unknown_name(f"no recorded column {name!r}", name, self.names, "recorded")
        return self.data[name]

    def __len__(self) -> int:
        return len(self.data)

    @property
    def units(self) -> dict[str, str]:
        """Unit symbol per column (``time``: ``"s"``; ``""`` where none is declared)."""
        known = self.meta.get("units", {})
        return {n: ("s" if n == "time" else (known.get(n) or "")) for n in self.names}

    def save(self, path: str | Path) -> Path:
        """Write to ``.csv``, ``.npz`` or ``.mat`` (chosen by the suffix); returns the path."""
        path = check_output(path)
        writer = _FinalWriter(path)
        writer.start(self.names, self.meta)
        writer.write(self._rows())
        writer.finish(self)
        return path

    def _rows(self) -> np.ndarray:
        """The data as float rows, as the master records them (String columns as codes)."""
        if not len(self.data):
            return np.zeros((0, len(self.names)))
        cols = [[string_code(v) for v in self.data[n]] if self.data.dtype[n].kind == "U"
                else np.asarray(self.data[n], float) for n in self.names]
        return np.column_stack(cols)

    def _full_meta(self) -> dict[str, Any]:
        return dict(self.meta, summary=asdict(self.summary))

    def to_dataframe(self) -> Any:
        """A ``pandas.DataFrame`` with one column per recorded variable (``time`` first);
        units in ``df.attrs["units"]``, metadata in ``df.attrs["meta"]``."""
        import pandas as pd
        df = pd.DataFrame({n: self.data[n] for n in self.names})
        df.attrs["units"] = self.units
        df.attrs["meta"] = self._full_meta()
        return df

    def plot(self, names: Sequence[str] | None = None, *, figure: Any = None) -> Any:
        """Plot columns against time, one subplot per unit, axes labelled with units.

        The drawing is the viewer's (:func:`mbfmu.viewer.result_plot.plot_result`),
        imported only when called, so the co-simulation layer never loads matplotlib.

        Parameters
        ----------
        names : sequence of str, optional
            Columns to plot (default: all but ``time``); a bare unit name
            selects all of that unit's columns.
        figure : matplotlib.figure.Figure, optional
            Drawn into (default: a new figure).

        Returns
        -------
        matplotlib.figure.Figure
        """
        from ..viewer.result_plot import plot_result  # the one upward edge: tests/test_architecture.py
        return plot_result(self, names, figure=figure)


def make_array(names: list[str], rows: np.ndarray, types: dict[str, str] | None = None) -> np.ndarray:
    """Structured array with fields ``names`` from a 2-D array of float rows:
    float64, or int64 / bool / str for the Integer, Boolean and String
    columns named in ``types`` (see :func:`mbfmu.cosim.typed.typed_columns`)."""
    return typed_columns(names, rows, types)


def check_output(path: str | Path) -> Path:
    """Check before a run that results can be written to ``path``; returns it as a Path.

    Raises :class:`InputError` naming the path and what is wrong (unknown
    suffix, with the formats listed; missing or unwritable folder; a folder).
    """
    path = Path(path)
    if path.suffix not in FORMATS:
        raise InputError(f"cannot write results to {str(path)!r}: unknown format {path.suffix or '(no suffix)'!r}; "
                         f"use one of {_formats_text()}")
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise InputError(f"cannot write results to {str(path)!r}: it is a folder")
    if not folder.is_dir():
        raise InputError(f"cannot write results to {str(path)!r}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"cannot write results to {str(path)!r}: permission denied")
    return path


def _csv_line(fields: Sequence[str]) -> str:
    """One CSV line, fields quoted where they hold a comma or a quote (``A[2,1]``)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(fields)
    return buf.getvalue()


def _csv_text(rows: np.ndarray, types: Sequence[str] | None = None) -> str:
    """CSV lines of float rows: Real at full precision, Integer and Boolean as
    integers, String columns (which hold codes, :mod:`.typed`) as quoted text."""
    if not types or all(t == "Real" for t in types):
        buf = io.StringIO()
        np.savetxt(buf, rows, delimiter=",", fmt="%.17g")
        return buf.getvalue()
    fmt = [string_text if t == "String" else (lambda v: str(int(v))) if t in ("Integer", "Boolean")
           else (lambda v: f"{v:.17g}") for t in types]
    return "".join(_csv_line([f(v) for f, v in zip(fmt, row)]) for row in rows.tolist())


class CsvWriter:
    """Streams rows to a CSV file (header first) with its sidecar ``NAME.json``.

    Rows are written with one ``os.write`` per batch, unbuffered, so a killed
    process leaves only whole lines behind. Errors (a full disk, /dev/full)
    become :class:`InputError` naming the file.

    Parameters
    ----------
    path : Path
        The CSV file.
    sidecar : Path or None
        Where the metadata JSON goes (``None``: nowhere).
    """

    def __init__(self, path: Path, sidecar: Path | None) -> None:
        self.path, self.sidecar = Path(path), sidecar
        self._fd: int | None = None
        self._types: list[str] = []
        self.rows = 0

    def _fail(self, exc: OSError) -> InputError:
        return InputError(f"cannot write results to {str(self.path)!r}: {exc.strerror or exc}")

    def _put(self, text: str) -> None:
        data = text.encode()
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError as exc:
            raise self._fail(exc) from None

    def start(self, names: Sequence[str], meta: dict[str, Any]) -> None:
        """Create the file, write the header line and the sidecar (status ``running``)."""
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError as exc:
            raise self._fail(exc) from None
        types = meta.get("types") or {}
        self._types = [types.get(n, "Real") for n in names]
        self._put(_csv_line(names))
        self._meta(dict(meta, summary=asdict(RunSummary(status="running"))))

    def reserve(self, nrows: float, ncols: int) -> None:
        """Refuse before the run when ``nrows`` rows cannot fit on the disk."""
        need = float(nrows) * ncols * 24
        free = shutil.disk_usage(self.path.parent if str(self.path.parent) else ".").free
        if need > free:
            raise InputError(f"cannot write results to {str(self.path)!r}: {nrows:.4g} rows need about "
                             f"{need / 2**30:.3g} GiB, the disk has {free / 2**30:.3g} GiB free; use a longer step")

    def write(self, rows: np.ndarray) -> None:
        """Append ``rows`` (2-D, columns in header order); on disk when this returns."""
        if len(rows):
            self._put(_csv_text(rows, self._types))
            self.rows += len(rows)

    def _meta(self, meta: dict[str, Any]) -> None:
        if self.sidecar is None:
            return
        try:
            self.sidecar.write_text(json.dumps(meta, default=str, indent=1))
        except OSError as exc:
            raise self._fail(exc) from None

    def finish(self, result: "Result") -> None:
        """Close the file and write the final metadata (summary, status)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        self._meta(result._full_meta())


class _FinalWriter:
    """Writes a whole result in the format of ``path``'s suffix (CSV streams through)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.csv = CsvWriter(path, path.with_name(path.name + ".json")) if path.suffix == ".csv" else None

    def start(self, names: Sequence[str], meta: dict[str, Any]) -> None:
        if self.csv is not None:
            self.csv.start(names, meta)

    def write(self, rows: np.ndarray) -> None:
        if self.csv is not None:
            self.csv.write(rows)

    def finish(self, result: "Result") -> None:
        if self.csv is not None:
            self.csv.finish(result)
            return
        meta = json.dumps(result._full_meta(), default=str)
        try:
            if self.path.suffix == ".npz":
                with open(self.path, "wb") as f:
                    np.savez(f, data=result.data, meta=np.array(meta))
            else:
                _save_mat(self.path, result, meta)
        except OSError as exc:
            raise InputError(f"cannot write results to {str(self.path)!r}: {exc.strerror or exc}") from None


def _mat_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name).strip("_") or "v"
    base = ("v_" + base if not base[0].isalpha() else base)[:60]
    out, k = base, 1
    while out in taken:
        out, k = f"{base[:56]}_{k}", k + 1
    taken.add(out)
    return out


def _save_mat(path: Path, result: "Result", meta: str) -> None:
    import scipy.io
    taken: set[str] = set()
    signals = {_mat_name(n, taken): result.data[n] for n in result.names}
    units = result.units
    scipy.io.savemat(path, {"data": result._rows(), "names": np.array(result.names, dtype=object),
                            "units": np.array([units[n] for n in result.names], dtype=object),
                            "meta": meta, "signals": signals}, do_compression=True, oned_as="column")


class StreamingWriter:
    """The sink of a run writing to ``path`` (any of :data:`FORMATS`).

    A ``.csv`` is written as it goes; ``.npz`` and ``.mat`` stream into
    ``NAME.part.csv`` first, which the final file replaces at the end (also
    when the run fails or is interrupted: the partial result is written).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = check_output(path)
        if self.path.suffix == ".csv":
            self.stream = CsvWriter(self.path, self.path.with_name(self.path.name + ".json"))
            self.part = None
        else:
            self.part = self.path.with_name(self.path.name + ".part.csv")
            self.stream = CsvWriter(self.part, None)

    def start(self, names: Sequence[str], meta: dict[str, Any]) -> None:
        if self.part is not None:  # the final file must be writable too: find out now
            try:
                with open(self.path, "ab"):
                    pass
            except OSError as exc:
                raise InputError(f"cannot write results to {str(self.path)!r}: {exc.strerror or exc}") from None
        self.stream.start(names, meta)

    def reserve(self, nrows: float, ncols: int) -> None:
        self.stream.reserve(nrows, ncols)

    def write(self, rows: np.ndarray) -> None:
        self.stream.write(rows)

    def finish(self, result: "Result") -> None:
        self.stream.finish(result)
        if self.part is not None:
            if result.meta.get("first_row"):  # early rows exist only in the part file: keep it
                return
            _FinalWriter(self.path).finish(result)
            self.part.unlink(missing_ok=True)


def open_writer(path: str | Path) -> StreamingWriter:
    """A sink for :func:`~mbfmu.cosim.simulate` streaming rows to ``path`` (checked now)."""
    return StreamingWriter(path)


def _read_csv(path: Path) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    text = path.read_text()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:  # a last line cut short (a killed writer): not a row
        lines.pop()
    meta: dict[str, Any] = {}
    if lines and lines[0].startswith("# mbfmu"):  # the layout of earlier versions
        meta = json.loads(lines.pop(0)[len("# mbfmu "):])
    if not lines:
        raise InputError(f"{str(path)!r} is not a results CSV: it is empty")
    names = next(csv.reader([lines[0]]))
    side = path.with_name(path.name + ".json")
    if side.is_file():
        meta = json.loads(side.read_text())
    types = meta.get("types") or {}
    if "String" in types.values():  # text columns: back to codes, as the master records them
        records = list(csv.reader(lines[1:]))
        kinds = [types.get(n, "Real") for n in names]
        rows = np.array([[string_code(v) if k == "String" else float(v) for v, k in zip(r, kinds)]
                         for r in records], dtype=float).reshape(-1, len(names))
    else:
        rows = np.loadtxt(lines[1:], delimiter=",", ndmin=2) if len(lines) > 1 else np.zeros((0, len(names)))
    if rows.shape[1] != len(names):
        raise InputError(f"{str(path)!r}: rows have {rows.shape[1]} values, the header names {len(names)}")
    return names, rows, meta


def load_result(path: str | Path) -> Result:
    """Read a result written by :meth:`Result.save` or a run's streaming writer (any of :data:`FORMATS`).

    Parameters
    ----------
    path : str or Path
        The result file; its suffix (``.npz``, ``.csv`` or ``.mat``) names the format.

    Returns
    -------
    Result
        The recorded signals (SI units, ``time`` in s) with the run's summary and metadata.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"results file {str(path)!r} does not exist")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                if "data" not in z or "meta" not in z:
                    raise InputError(f"{str(path)!r} is not an mbfmu results file (it holds {', '.join(z.files)}; "
                                     "expected 'data' and 'meta')")
                data = z["data"]
                meta = json.loads(str(z["meta"]))
        elif path.suffix == ".csv":
            names, rows, meta = _read_csv(path)
            data = make_array(names, rows, meta.get("types"))
        elif path.suffix == ".mat":
            import scipy.io
            m = scipy.io.loadmat(path, simplify_cells=True)
            names = [str(n) for n in np.atleast_1d(m["names"])]
            meta = json.loads(str(m["meta"]))
            data = make_array(names, np.asarray(m["data"], float).reshape(-1, len(names)), meta.get("types"))
        else:
            raise InputError(f"cannot load results from {str(path)!r}: use one of {_formats_text()}")
    except (ValueError, KeyError, OSError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{str(path)!r} is not a readable results file: {exc}") from None
    summary = RunSummary(**{k: v for k, v in meta.pop("summary", {}).items() if k in RunSummary.__dataclass_fields__})
    return Result(data, summary, meta)
