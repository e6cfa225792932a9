"""Typed values on the master's numeric buffers: Integer, Boolean and String.

The master moves every value through float64 buffers (a unit's ``u`` and
``y``) and records float64 rows, so its hot loop stays free of type tests.
Integer and Boolean values are exact there (|integers| below 2**53). A String
travels as the code of the interned text (:func:`string_code`); units decode
codes when they set a String input (:func:`string_text`) and the recorder
turns coded columns back into text (:func:`typed_columns`).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

_CODES: dict[str, int] = {}
_TEXTS: list[str] = []


def string_code(text: str) -> float:
    """The float code of ``text`` (the same text always gets the same code)."""
    code = _CODES.get(text)
    if code is None:
        code = _CODES[text] = len(_TEXTS)
        _TEXTS.append(text)
    return float(code)


def string_text(code: float) -> str:
    """The text behind a code made by :func:`string_code` (``""`` for an unknown code)."""
    k = int(round(code)) if code == code else -1
    return _TEXTS[k] if 0 <= k < len(_TEXTS) else ""


def string_texts(codes: np.ndarray) -> np.ndarray:
    """:func:`string_text` of every code in ``codes``, as a unicode array (one
    table look-up for the whole column, not a Python call per value)."""
    codes = np.asarray(codes, dtype=float)
    idx = np.full(codes.shape, len(_TEXTS), dtype=np.int64)  # the table's last entry: ""
    finite = np.isfinite(codes)
    k = np.rint(codes[finite])
    known = (k >= 0) & (k < len(_TEXTS))
    sub = idx[finite]
    sub[known] = k[known].astype(np.int64)
    idx[finite] = sub
    if not len(codes):
        return np.zeros(0, "U1")
    used = np.unique(idx)  # only the texts the column holds: the width is theirs
    table = np.zeros(len(_TEXTS) + 1, dtype=np.array([(_TEXTS + [""])[i] for i in used], dtype=str).dtype)
    table[used] = [(_TEXTS + [""])[i] for i in used]
    return table[idx]


def numpy_dtype(vtype: str, values: np.ndarray | None = None) -> np.dtype:
    """The result field type of a variable of FMI type ``vtype``: float64,
    int64, bool, or unicode wide enough for ``values`` (String)."""
    if vtype == "Integer":
        return np.dtype(np.int64)
    if vtype == "Boolean":
        return np.dtype(bool)
    if vtype == "String":
        if isinstance(values, np.ndarray) and values.dtype.kind == "U":
            return np.dtype(f"U{max(values.dtype.itemsize // 4, 1)}")  # as wide as its longest text
        width = max((len(s) for s in values), default=1) if values is not None else 1
        return np.dtype(f"U{max(width, 1)}")
    return np.dtype(np.float64)


def typed_columns(names: Sequence[str], rows: np.ndarray, types: Mapping[str, str] | None) -> np.ndarray:
    """Structured array with one field per name, each of its variable's own type.

    Parameters
    ----------
    names : sequence of str
        Field names (``"time"`` first).
    rows : ndarray (n, len(names))
        Float rows as the master records them (String columns hold codes).
    types : mapping, optional
        FMI type per name (``"Real"``, ``"Integer"``, ``"Boolean"``,
        ``"String"``); names not in it are Real.
    """
    types = types or {}
    cols = []
    for j, n in enumerate(names):
        col = rows[:, j]
        vtype = types.get(n, "Real")
        if vtype == "String":
            col = string_texts(col)
        elif vtype == "Integer":
            col = np.rint(col).astype(np.int64)
        elif vtype == "Boolean":
            col = col != 0.0
        cols.append(col)
    dtype = np.dtype([(n, numpy_dtype(types.get(n, "Real"), c)) for n, c in zip(names, cols)])
    out = np.empty(len(rows), dtype=dtype)
    for n, c in zip(names, cols):
        out[n] = c
    return out
