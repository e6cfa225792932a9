"""Reading and writing recorded results for the viewer.

A result is a structured numpy array, ``time`` (s) first, one float field per
recorded variable, plus a metadata dict. The file format is the one
:mod:`mbfmu.cosim.recording.result` writes, read here without importing the
co-simulation layer:

``.npz``
    key ``data``: the structured array; key ``meta``: a 0-d string array
    holding JSON. Also accepted: ``results``/``result`` and ``metadata``
    keys, or one plain array per variable with a ``time`` array.
``.mat``
    a co-simulation's MATLAB v5 result (:func:`mbfmu.cosim.recording.result.load_result`).
``.csv``
    a first line ``# mbfmu {json metadata}`` (optional; ``# metadata:
    {json}`` is accepted too), then a header row of names (``time`` first)
    and one row per sample. A sidecar ``<stem>.json`` next to the file is
    read as metadata when the CSV has none.

Metadata the viewer uses (see :func:`mbfmu.viewer.plants.plant_from_metadata`):
``"plant"`` and ``"parameters"`` for a single plant's run, ``"plants":
{unit: {"plant": spec, "parameters": {...}}}`` (or a PlantRef dict
``{"kind", "target", "class_name", "parameters"}``) for a co-simulation, and
``"values": {"unit.param": value}`` for parameter values set in a
co-simulation.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import InputError

_META_PREFIXES = ("# mbfmu ", "# metadata:")


def as_results(data: Any) -> np.ndarray:
    """Validate ``data`` as a result array: structured, ``time`` first,
    numeric, finite and non-decreasing (other fields are checked when used).

    Returns the same array (no copy) when it is valid.
    """
    arr = np.asarray(data)
    if arr.dtype.names is None:
        raise InputError("results must be a structured array with named fields (time first); got a plain "
                         f"array of dtype {arr.dtype}")
    if arr.ndim != 1:
        raise InputError(f"results must be one-dimensional (one row per sample); got shape {arr.shape}")
    names = arr.dtype.names
    if names[0] != "time":
        raise InputError(f"results: the first field must be 'time', got {names[0]!r}")
    check_numeric(arr, ["time"])
    if arr.size == 0:
        raise InputError("results hold no samples")
    t = arr["time"]
    # chunked check keeps the temporary memory small for very long runs
    chunk = 1 << 16
    for i in range(0, t.size, chunk):
        seg = np.asarray(t[i:i + chunk + 1], dtype=float)
        if not np.all(np.isfinite(seg)):
            raise InputError(f"results: 'time' has a non-finite value near row {i}")
        if np.any(np.diff(seg) < 0):
            k = i + int(np.flatnonzero(np.diff(seg) < 0)[0])
            raise InputError(f"results: 'time' decreases at row {k + 1} ({seg[k - i]} s -> {seg[k - i + 1]} s)")
    return arr


def check_numeric(results: np.ndarray, names: list[str]) -> None:
    """Raise :class:`InputError` unless every field in ``names`` is a scalar number."""
    for n in names:
        dt = results.dtype[n]
        if dt.kind not in "fiub" or dt.shape != ():
            raise InputError(f"results: field {n!r} has dtype {dt}, expected a scalar number")


def save_results(path: str | Path, results: np.ndarray, metadata: Mapping[str, Any] | None = None) -> Path:
    """Write ``results`` (and ``metadata``) as ``.npz`` or ``.csv`` by suffix.

    Parameters
    ----------
    path : str or Path
        Destination; the suffix ``.npz`` or ``.csv`` chooses the format.
    results : ndarray
        Structured array, ``time`` (s) first, one field per signal in its SI unit.
    metadata : mapping, optional
        JSON-serializable facts stored with the data (plant name, units...).

    Returns
    -------
    Path
        The written file.
    """
    path = Path(path)
    results = as_results(results)
    meta = json.dumps(dict(metadata or {}))
    if path.suffix == ".npz":
        np.savez(path, data=results, meta=np.array(meta))
    elif path.suffix == ".csv":
        with open(path, "w", newline="") as f:
            f.write(f"{_META_PREFIXES[0]}{meta}\n")
            w = csv.writer(f)
            w.writerow(results.dtype.names)
            for row in results:
                w.writerow([repr(float(v)) for v in row])
    else:
        raise InputError(f"results file {str(path)!r}: unknown suffix {path.suffix!r}; use .npz or .csv")
    return path


def load_results(path: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    """Read a result file written by mbfmu (``.npz``, ``.csv`` or a co-simulation's ``.mat``).

    Parameters
    ----------
    path : str or Path
        The result file; a ``.json`` sidecar beside it supplies the metadata
        when the file itself carries none.

    Returns
    -------
    results : ndarray
        Structured array, ``time`` first.
    metadata : dict
        ``{}`` when the file carries none.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"results file {str(path)!r} does not exist")
    if path.suffix == ".npz":
        arr, meta = _load_npz(path)
    elif path.suffix == ".csv":
        arr, meta = _load_csv(path)
    elif path.suffix == ".mat":  # a co-simulation's MATLAB result, checked and bounded there
        from ..cosim.recording.result import load_result
        result = load_result(path)
        arr, meta = result.data, result.meta
    else:
        raise InputError(f"results file {str(path)!r}: unknown suffix {path.suffix!r}; expected .npz, .csv or .mat")
    if not meta:  # the sidecar mbfmu.cosim.recording.result writes (run.csv.json), else run.json
        side = next((p for p in (path.with_name(path.name + ".json"), path.with_suffix(".json")) if p.is_file()), None)
        if side is not None:
            meta = _parse_meta(side.read_text(), side)
    try:
        return as_results(arr), meta
    except InputError as exc:
        raise InputError(f"results file {str(path)!r}: {exc}") from None


def _parse_meta(text: str, where: Path) -> dict[str, Any]:
    from ..cosim.recording.checks import parse_meta
    return parse_meta(text, f"results file {str(where)!r}")


def _load_npz(path: Path) -> tuple[np.ndarray, dict[str, Any]]:
    from ..cosim.recording.checks import check_npz
    what = f"results file {str(path)!r}"
    if path.stat().st_size == 0:
        raise InputError(f"{what} is empty (0 bytes)")
    check_npz(path, what)  # bounded before numpy allocates anything
    try:
        return _read_npz(np.load(path, allow_pickle=False), path)
    except InputError:
        raise
    except Exception as exc:  # zipfile/ValueError/OSError: all mean a malformed file
        raise InputError(f"{what} is not a readable .npz ({type(exc).__name__}: "
                         f"{(str(exc).splitlines() or [''])[0][:200]})") from None


def _read_npz(z: Any, path: Path) -> tuple[np.ndarray, dict[str, Any]]:
    with z:
        key = next((k for k in ("meta", "metadata") if k in z.files), None)
        meta = _parse_meta(str(z[key]), path) if key else {}
        for key in ("data", "results", "result"):
            if key in z.files:
                return z[key], meta
        if "time" not in z.files:
            raise InputError(f"results file {str(path)!r} has neither a 'results' array nor a 'time' column "
                             f"(keys: {', '.join(z.files)})")
        cols = [k for k in z.files if k not in ("meta", "metadata")]
        cols.remove("time")
        cols.insert(0, "time")
        data = [np.asarray(z[k], dtype=float).reshape(-1) for k in cols]
    n = data[0].size
    for k, d in zip(cols, data):
        if d.size != n:
            raise InputError(f"results file {str(path)!r}: column {k!r} has {d.size} values, 'time' has {n}")
    arr = np.empty(n, dtype=[(k, float) for k in cols])
    for k, d in zip(cols, data):
        arr[k] = d
    return arr, meta


def _load_csv(path: Path) -> tuple[np.ndarray, dict[str, Any]]:
    meta: dict[str, Any] = {}
    lines = path.read_bytes().decode("utf-8", "replace").split("\n")
    for i, line in enumerate(lines):
        pre = next((m for m in _META_PREFIXES if line.startswith(m)), None)
        if pre:
            meta = _parse_meta(line[len(pre):], path)
        elif not line.startswith("#") and line.strip():
            break
    else:
        raise InputError(f"results file {str(path)!r} has no header row")
    reader = csv.reader(io.StringIO("\n".join(lines[i:])))
    header = [h.strip() for h in next(reader)]  # quoted names may hold commas and line breaks
    rows = [r for r in lines[i + reader.line_num:] if r.strip()]
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise InputError(f"results file {str(path)!r}: repeated column names {dup}")
    try:
        values = np.loadtxt(rows, delimiter=",", dtype=float, ndmin=2) if rows else np.zeros((0, len(header)))
    except ValueError as exc:
        raise InputError(f"results file {str(path)!r}: a data row is malformed ({exc})") from None
    if values.size and values.shape[1] != len(header):
        raise InputError(f"results file {str(path)!r}: rows have {values.shape[1]} values, header has {len(header)}")
    arr = np.empty(values.shape[0], dtype=[(h, float) for h in header])
    for i, h in enumerate(header):
        arr[h] = values[:, i]
    return arr, meta
