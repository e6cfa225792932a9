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
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...errors import InputError, require_extra, unknown_name
from ...plant.signals import current_name
from .checks import check_array, check_mat, check_npz, parse_meta
from ..typed import string_code, string_text, typed_columns

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
        ``"completed"``, ``"stopped"`` (a unit asked to stop), ``"failed"``,
        ``"interrupted"`` (Ctrl-C, SIGTERM) or ``"timeout"`` (the wall-clock limit).
    message : str
        Why the run ended early (empty when completed).
    realtime : float
        The pacing factor asked for (``simulate(realtime=...)``), 0 when not paced.
    realtime_overruns : int
        Paced runs: steps that ended after their wall-clock deadline.
    realtime_worst_lag : float
        Paced runs: the largest lag behind the wall clock [s].
    threads : int
        Threads that stepped the units (parallel Jacobi stepping of the compiled loop).
    """

    steps: int = 0
    rejected_steps: int = 0
    loop_iterations: int = 0
    wall_time: float = 0.0
    real_time_factor: float = 0.0
    end_time: float = 0.0
    status: str = "completed"
    message: str = ""
    realtime: float = 0.0
    realtime_overruns: int = 0
    realtime_worst_lag: float = 0.0
    threads: int = 1

    def __str__(self) -> str:
        text = (f"{self.steps} steps ({self.rejected_steps} rejected), {self.loop_iterations} loop iterations, "
                f"t_end = {self.end_time!r} s, wall {self.wall_time:.3f} s, real-time factor {self.real_time_factor:.1f}")
        if self.realtime:
            text += (f", paced at x{self.realtime:g}: {self.realtime_overruns} overruns, worst lag "
                     f"{self.realtime_worst_lag * 1e3:.3f} ms")
        if self.threads > 1:
            text += f", {self.threads} threads"
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
        name = current_name(name, self.data.dtype.names)
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
        units in ``df.attrs["units"]``, metadata in ``df.attrs["meta"]`` (the ``pandas`` extra)."""
        pd = require_extra("pandas", "Result.to_dataframe")
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
        from ...viewer.result_plot import plot_result  # the one upward edge: tests/test_architecture.py
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
    from .output_path import check_writable
    return check_writable(path, "results")


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

    Nothing touches the disk before the first row: the header and that row
    go to a temporary file in the same folder, which then replaces ``path``
    (and the sidecar, status ``running``, its own). A run refused or failing
    before its first row leaves an existing file and sidecar as they were.
    Rows are written with one ``os.write`` per batch, unbuffered, so a killed
    process leaves only whole lines behind. Errors (a full disk, /dev/full)
    become :class:`InputError` naming the file.

    Parameters
    ----------
    path : Path
        The CSV file.
    sidecar : Path or None
        Where the metadata JSON goes (``None``: nowhere).
    keep_empty : bool
        Write the file (header only) even when no row comes (an explicit save).
    """

    def __init__(self, path: Path, sidecar: Path | None, keep_empty: bool = False) -> None:
        self.path, self.sidecar = Path(path), sidecar
        self.keep_empty = keep_empty
        self._fd: int | None = None
        self._types: list[str] = []
        self._names: list[str] = []
        self._start_meta: dict[str, Any] = {}
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
        """Take the header and the metadata; the file is made with the first row."""
        types = meta.get("types") or {}
        self._names = list(names)
        self._types = [types.get(n, "Real") for n in names]
        self._start_meta = dict(meta)

    def _create(self, first: str) -> None:
        """Write the header and ``first`` rows to a temporary name, then put it in place."""
        tmp = _temporary_name(self.path)
        try:
            self._fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise self._fail(exc) from None
        try:
            self._put(_csv_line(self._names) + first)
            os.close(self._fd)
            self._fd = None
            self._meta(dict(self._start_meta, summary=asdict(RunSummary(status="running"))))
            os.replace(tmp, self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise self._fail(exc) from None
        finally:
            if self._fd is None:
                Path(tmp).unlink(missing_ok=True)

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
            text = _csv_text(rows, self._types)
            if self._fd is None:
                self._create(text)
            else:
                self._put(text)
            self.rows += len(rows)

    def _meta(self, meta: dict[str, Any]) -> None:
        if self.sidecar is None:
            return
        tmp = _temporary_name(self.sidecar)
        try:
            Path(tmp).write_text(json.dumps(meta, default=str, indent=1))
            os.replace(tmp, self.sidecar)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise self._fail(exc) from None

    def finish(self, result: "Result") -> None:
        """Close the file and write the final metadata (summary, status); with no
        row written, nothing is (unless ``keep_empty``)."""
        if self._fd is None and not self.rows:
            if not self.keep_empty:
                return
            self._create("")
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        self._meta(result._full_meta())


def _temporary_name(path: Path) -> str:
    """A fresh hidden name beside ``path`` (same folder: ``os.replace`` stays atomic)."""
    return str(path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part"))


class _FinalWriter:
    """Writes a whole result in the format of ``path``'s suffix (CSV streams through)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.csv = CsvWriter(path, path.with_name(path.name + ".json"), keep_empty=True) if path.suffix == ".csv" else None

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
        tmp = _temporary_name(self.path)  # whole or nothing: a killed writer leaves no partial file
        try:
            if self.path.suffix == ".npz":
                with open(tmp, "wb") as f:
                    np.savez(f, data=result.data, meta=np.array(meta))
            else:
                with open(tmp, "wb") as f:
                    _save_mat(f, result, meta)
            os.replace(tmp, self.path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise InputError(f"cannot write results to {str(self.path)!r}: {exc.strerror or exc}") from None


def _mat_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name).strip("_") or "v"
    base = ("v_" + base if not base[0].isalpha() else base)[:60]
    out, k = base, 1
    while out in taken:
        out, k = f"{base[:56]}_{k}", k + 1
    taken.add(out)
    return out


def _save_mat(path: Any, result: "Result", meta: str) -> None:
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
    ``NAME.part.csv`` (with its sidecar, status ``running`` until the end)
    first, which the final file replaces at the end (also when the run fails
    or is interrupted: the partial result is written). Nothing is written
    before the first row, so a run refused before it leaves an existing
    result as it was.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = check_output(path)  # the final file must be writable too: found out now
        if self.path.suffix == ".csv":
            self.stream = CsvWriter(self.path, self.path.with_name(self.path.name + ".json"))
            self.part = None
        else:
            self.part = self.path.with_name(self.path.name + ".part.csv")
            self.stream = CsvWriter(self.part, self.part.with_name(self.part.name + ".json"))

    def start(self, names: Sequence[str], meta: dict[str, Any]) -> None:
        self.stream.start(names, meta)

    def reserve(self, nrows: float, ncols: int) -> None:
        self.stream.reserve(nrows, ncols)

    def write(self, rows: np.ndarray) -> None:
        self.stream.write(rows)

    def finish(self, result: "Result") -> None:
        self.stream.finish(result)
        if self.part is not None and self.stream.rows:
            if result.meta.get("first_row"):  # early rows exist only in the part file: keep it
                return
            _FinalWriter(self.path).finish(result)
            self.part.unlink(missing_ok=True)
            self.part.with_name(self.part.name + ".json").unlink(missing_ok=True)

    @property
    def rows(self) -> int:
        """Rows written so far (0: the output file was not touched)."""
        return self.stream.rows


def open_writer(path: str | Path) -> StreamingWriter:
    """A sink for :func:`~mbfmu.cosim.simulate` streaming rows to ``path`` (checked now)."""
    return StreamingWriter(path)


def _read_csv(path: Path, what: str) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    text = path.read_bytes().decode("utf-8", "replace")  # no newline translation: names may hold "\r\n"
    text = text[: text.rfind("\n") + 1]  # a last line cut short (a killed writer): not a row
    meta: dict[str, Any] = {}
    if text.startswith("# mbfmu"):  # the layout of earlier versions
        first, _, text = text.partition("\n")
        meta = parse_meta(first[len("# mbfmu "):], what)
    if not text.strip():
        raise InputError(f"{what} is not a results CSV: it is empty")
    reader = csv.reader(io.StringIO(text))
    names = next(reader)  # quoted names may hold commas and line breaks
    lines = text.split("\n")[reader.line_num:]
    if lines and lines[-1] == "":
        lines.pop()
    side = path.with_name(path.name + ".json")
    if side.is_file():
        meta = parse_meta(side.read_text(errors="replace"), f"{what} (sidecar {side.name})")
    types = _types_of(meta, what)
    if "String" in types.values():  # text columns: back to codes, as the master records them
        records = list(csv.reader(io.StringIO("\n".join(lines) + "\n"))) if lines else []
        kinds = [types.get(n, "Real") for n in names]
        bad = next((i for i, r in enumerate(records) if len(r) != len(names)), None)
        if bad is not None:
            raise InputError(f"{what}: row {bad + 1} has {len(records[bad])} values, the header names {len(names)}")
        rows = np.array([[string_code(v) if k == "String" else float(v) for v, k in zip(r, kinds)]
                         for r in records], dtype=float).reshape(-1, len(names))
    else:
        rows = np.loadtxt(lines, delimiter=",", ndmin=2) if lines else np.zeros((0, len(names)))
    if rows.shape[1] != len(names):
        raise InputError(f"{what}: rows have {rows.shape[1]} values, the header names {len(names)}")
    return names, rows, meta


def _types_of(meta: dict[str, Any], what: str) -> dict[str, str]:
    types = meta.get("types") or {}
    if not isinstance(types, dict) or not all(isinstance(v, str) for v in types.values()):
        raise InputError(f"{what}: metadata 'types' must map column names to FMI type names")
    return types


def _read_npz(path: Path, what: str) -> tuple[np.ndarray, dict[str, Any]]:
    check_npz(path, what)  # bounded before numpy allocates anything
    with np.load(path, allow_pickle=False) as z:
        if "data" not in z or "meta" not in z:
            raise InputError(f"{what} is not an mbfmu results file (it holds {', '.join(z.files)[:200]}; "
                             "expected 'data' and 'meta')")
        meta_arr = z["meta"]
        if meta_arr.dtype.kind != "U" or meta_arr.shape != ():
            raise InputError(f"{what}: 'meta' must be one JSON string, got {meta_arr.dtype} of shape {meta_arr.shape}")
        return z["data"], parse_meta(str(meta_arr), what)


def _read_mat(path: Path, what: str) -> tuple[np.ndarray, dict[str, Any]]:
    import scipy.io
    check_mat(path, what)  # bounded before scipy allocates anything
    m = scipy.io.loadmat(path, simplify_cells=True, variable_names=["data", "names", "meta"])
    if not {"data", "names", "meta"} <= set(m):
        raise InputError(f"{what} is not an mbfmu results file (expected 'data', 'names' and 'meta')")
    names = [str(n) for n in np.atleast_1d(m["names"])]
    meta = parse_meta(str(m["meta"]), what)
    data = np.asarray(m["data"], float)
    if data.size % max(len(names), 1):
        raise InputError(f"{what}: 'data' holds {data.size} values, not rows of the {len(names)} names")
    return make_array(names, data.reshape(-1, len(names)), _types_of(meta, what)), meta


_STATUSES = ("completed", "stopped", "failed", "interrupted", "timeout")


def _summary(meta: dict[str, Any], path: Path, what: str, rows: int) -> RunSummary:
    """The run summary in ``meta`` (removed from it), checked; a writer that never
    finished (status ``running``, or a ``.part.csv`` without one) is an interrupted run."""
    raw = meta.pop("summary", None)
    if raw is None:
        raw = {"status": "running"} if path.name.endswith(".part.csv") else {}
    if not isinstance(raw, dict):
        raise InputError(f"{what}: metadata 'summary' must be a JSON object")
    fields = RunSummary.__dataclass_fields__
    values: dict[str, Any] = {}
    for k, v in raw.items():
        if k not in fields:
            continue
        kind = type(getattr(RunSummary, k))
        try:
            values[k] = str(v) if kind is str else kind(v)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{what}: summary {k!r} = {str(v)[:40]!r} is not a {kind.__name__}") from None
    summary = RunSummary(**values)
    if summary.status == "running":
        summary.status = "interrupted"
        summary.message = (f"the run writing this file did not finish (it was killed, or is still running); "
                           f"{rows} rows were written")
    elif summary.status not in _STATUSES:
        raise InputError(f"{what}: unknown run status {summary.status[:40]!r} (one of {', '.join(_STATUSES)})")
    return summary


def load_result(path: str | Path) -> Result:
    """Read a result written by :meth:`Result.save` or a run's streaming writer (any of :data:`FORMATS`).

    The file is data: it is checked before anything large is allocated
    (:mod:`.checks`), and every problem with it, a malformed,
    truncated or empty file, odd metadata, is one :class:`InputError` line.

    Parameters
    ----------
    path : str or Path
        The result file; its suffix (``.npz``, ``.csv`` or ``.mat``) names the format.

    Returns
    -------
    Result
        The recorded signals (SI units, ``time`` in s) with the run's summary and metadata;
        status ``interrupted`` for the file of a run that never finished.
    """
    path = Path(path)
    what = f"results file {str(path)!r}"
    if not path.is_file():
        raise InputError(f"{what} does not exist")
    if path.suffix not in FORMATS:
        raise InputError(f"cannot load results from {str(path)!r}: use one of {_formats_text()}")
    if path.stat().st_size == 0:
        raise InputError(f"{what} is empty (0 bytes): the run writing it was killed before it finished; "
                         + (f"its rows may be in {path.name}.part.csv" if path.suffix != ".csv" else "no rows"))
    try:
        if path.suffix == ".npz":
            data, meta = _read_npz(path, what)
        elif path.suffix == ".csv":
            names, rows, meta = _read_csv(path, what)
            data = make_array(names, rows, _types_of(meta, what))
        else:
            data, meta = _read_mat(path, what)
        check_array(data, what)
        summary = _summary(meta, path, what, len(data))
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"{what} nests too deeply to be read; refused") from None
    except Exception as exc:  # whatever a malformed file makes numpy, scipy or zipfile raise
        detail = (str(exc).splitlines() or [""])[0][:200]
        raise InputError(f"{what} is not a readable results file: {type(exc).__name__}: {detail}") from None
    return Result(data, summary, meta)
