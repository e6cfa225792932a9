"""Checks of result files read from others, before and after they are parsed.

A result file is data (someone else's run, a sweep cache): reading one must
not allocate without a bound nor fail with a raw traceback.

* :func:`check_npz`: the archive's declared sizes and ratios
  (:mod:`mbfmu.untrusted.archive`) and, for every array, the size its
  ``.npy`` header declares (shape x item size) against the bytes the member
  holds: numpy allocates the declared array before reading it, so a 2.9 MB
  file declaring 2.8 GB is refused here, with both sizes in the message.
* :func:`check_mat`: a MATLAB file's compressed elements are decompressed in
  chunks that are counted and dropped, stopping as soon as an element passes
  ``max_ratio`` times its size or the file passes ``max_expand_bytes``; only
  an element within both is inflated again to check that every cell array
  and struct holds as many elements as it declares (scipy allocates them first).
* :func:`parse_meta`: the metadata JSON as a dict, nesting at most
  ``max_json_depth`` deep.
* :func:`check_array`: a structured one-dimensional array of numbers, bools
  or text.
"""
from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ...untrusted.archive import open_zip
from ...untrusted.limits import limits, size_text


def check_npz(path: Path, what: str) -> None:
    """Refuse the ``.npz`` at ``path`` unless every member's array fits the bytes it holds."""
    from numpy.lib import format as npy
    with open_zip(path, what, ".npz") as z:
        for info in z.infolist():
            if not info.filename.endswith(".npy"):
                continue
            try:
                with z.open(info) as f:
                    version = npy.read_magic(f)
                    shape, _, dtype = (npy.read_array_header_1_0(f) if version == (1, 0)
                                       else npy.read_array_header_2_0(f))
            except Exception as exc:  # any malformed header (ValueError, SyntaxError, EOFError...)
                raise InputError(f"{what}: array {info.filename!r} has a malformed header ({type(exc).__name__})") from None
            if dtype.hasobject:
                raise InputError(f"{what}: array {info.filename!r} holds Python objects; refused")
            need = math.prod(shape) * dtype.itemsize
            if need > info.file_size:
                raise InputError(f"{what}: array {info.filename!r} declares {size_text(need)} ({shape} of {dtype}) "
                                 f"but holds {size_text(info.file_size)}; refused")


_MI_MATRIX, _MI_COMPRESSED = 14, 15
_CELL, _STRUCT, _OBJECT = 1, 2, 3


def _tag(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """``(type, nbytes, data start)`` of the MAT v5 element at ``pos`` (small or normal format)."""
    if pos + 8 > end:
        raise ValueError("truncated element")
    typ, nbytes = struct.unpack_from("<II", buf, pos)
    if typ >> 16:  # small element: the size in the high half, the data in the next 4 bytes
        return typ & 0xFFFF, typ >> 16, pos + 4
    return typ, nbytes, pos + 8


def _next(pos: int, nbytes: int, small: bool) -> int:
    return pos + (4 if small else (nbytes + 7) // 8 * 8)


def _walk_matrix(buf: bytes, start: int, end: int, depth: int = 0) -> None:
    """Check that every cell array and struct inside the miMATRIX data
    ``buf[start:end]`` has room for the elements its dimensions declare."""
    if depth > 64:
        raise ValueError("cells nest too deeply")
    pos, sub = start, []
    while pos < end and len(sub) < 5:
        typ, n, data = _tag(buf, pos, end)
        small = data == pos + 4
        sub.append((typ, n, data))
        pos = _next(data, n, small)
        if len(sub) == 3:
            break
    if len(sub) < 3:
        return  # an empty matrix
    flags, dims = sub[0], sub[1]
    cls = buf[flags[2]] if flags[2] < end else 0
    count = math.prod(struct.unpack_from(f"<{dims[1] // 4}i", buf, dims[2])) if dims[1] >= 4 else 0
    if cls == _CELL:
        children = count
    elif cls in (_STRUCT, _OBJECT):
        if cls == _OBJECT:  # the class name comes first
            typ, n, data = _tag(buf, pos, end)
            pos = _next(data, n, data == pos + 4)
        typ, n, data = _tag(buf, pos, end)  # field name length
        width = struct.unpack_from("<i", buf, data)[0] if n >= 4 else 0
        pos = _next(data, n, data == pos + 4)
        typ, n, data = _tag(buf, pos, end)  # field names
        pos = _next(data, n, data == pos + 4)
        children = count * (n // width if width > 0 else 0)
    else:
        return
    if count < 0 or children * 8 > end - pos:
        raise ValueError(f"a {'cell array' if cls == _CELL else 'struct'} declares {count} elements in "
                         f"{end - pos} bytes")
    for _ in range(children):
        typ, n, data = _tag(buf, pos, end)
        if typ == _MI_MATRIX and n:
            _walk_matrix(buf, data, min(data + n, end), depth + 1)
        pos = _next(data, n, data == pos + 4)


def check_mat(path: Path, what: str) -> None:
    """Refuse the MATLAB v5 file at ``path`` if it expands past the limits or
    declares more cell or struct elements than it holds."""
    lim = limits()
    total = 0
    with open(path, "rb") as f:
        head = f.read(128)
        if len(head) < 128:
            raise InputError(f"{what} is not a MATLAB v5 file: it is {len(head)} bytes long")
        while True:
            tag = f.read(8)
            if len(tag) < 8:
                return
            typ, nbytes = struct.unpack("<II", tag)
            if typ >> 16:
                f.read(4)
                continue
            if typ != _MI_COMPRESSED:
                body = f.read(nbytes)
                total += len(body)
                if typ == _MI_MATRIX:
                    _check_matrix(body, what)
            else:
                start = f.tell()
                room = min(lim.max_expand_bytes - total, max(lim.ratio_floor_bytes, int(lim.max_ratio * nbytes)))
                size, head = _inflate(f, nbytes, room, None, what)  # counted, not kept: a bomb stops at the limit
                if size > room:
                    if room < lim.max_expand_bytes - total:
                        raise InputError(f"{what}: a compressed element of {size_text(nbytes)} expands more than "
                                         f"{lim.max_ratio:g} times (MBFMU_MAX_RATIO); refused")
                    raise InputError(f"{what} expands past {size_text(lim.max_expand_bytes)} "
                                     "(MBFMU_MAX_EXPAND_BYTES); refused")
                total += size
                typ, n, data = _tag(head, 0, len(head)) if len(head) >= 8 else (0, 0, 0)
                if typ == _MI_MATRIX:  # its cells and structs are checked: inflate again, now known bounded
                    f.seek(start)
                    body = bytearray()
                    _inflate(f, nbytes, room, body, what)
                    _check_matrix(memoryview(body)[data:data + n], what)
                    del body
                f.seek(start + nbytes)
            if total > lim.max_expand_bytes:
                raise InputError(f"{what} expands past {size_text(lim.max_expand_bytes)} "
                                 "(MBFMU_MAX_EXPAND_BYTES); refused")


def _check_matrix(body: Any, what: str) -> None:
    try:
        _walk_matrix(body, 0, len(body))
    except (ValueError, struct.error, IndexError) as exc:
        raise InputError(f"{what}: a variable is malformed ({exc}); refused") from None


def _inflate(f, nbytes: int, room: int, keep: bytearray | None, what: str) -> tuple[int, bytes]:
    """Decompress the next ``nbytes`` of ``f``, stopping once past ``room`` bytes out.

    Returns the bytes inflated (``room + 1`` at most: more means past the
    limit) and the first 8 of them. The output is appended to ``keep`` when
    given, else dropped as it comes (at most 1 MiB held).
    """
    try:
        return _inflate_into(f, nbytes, room, keep)
    except zlib.error as exc:
        raise InputError(f"{what}: a compressed element is damaged ({exc})") from None


def _inflate_into(f, nbytes: int, room: int, keep: bytearray | None) -> tuple[int, bytes]:
    d = zlib.decompressobj()
    left, size, head = nbytes, 0, b""
    while left > 0 and size <= room:
        chunk = f.read(min(left, 1 << 16))
        if not chunk:
            break
        left -= len(chunk)
        while chunk and size <= room:
            data = d.decompress(chunk, min(1 << 20, room - size + 1))
            size += len(data)
            if len(head) < 8:
                head += data[:8 - len(head)]
            if keep is not None:
                keep += data
            chunk = d.unconsumed_tail
    return size, head


def _depth(value: Any, limit: int) -> bool:
    """True when ``value`` nests at most ``limit`` containers deep (iterative)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def parse_meta(text: str, what: str) -> dict[str, Any]:
    """The metadata JSON ``text`` of a result file as a dict (one-line errors)."""
    lim = limits()
    try:
        meta = json.loads(text)
    except RecursionError:
        meta = None
        deep = True
    except ValueError as exc:
        raise InputError(f"{what}: its metadata is not valid JSON ({exc})") from None
    else:
        deep = not _depth(meta, lim.max_json_depth)
    if deep:
        raise InputError(f"{what}: its metadata nests deeper than {lim.max_json_depth} levels "
                         "(MBFMU_MAX_JSON_DEPTH); refused")
    if not isinstance(meta, dict):
        raise InputError(f"{what}: its metadata must be a JSON object, not {type(meta).__name__}")
    return meta


def check_array(data: Any, what: str) -> np.ndarray:
    """``data`` if it is a structured one-dimensional array of numbers, bools or text, ``time`` first."""
    if not isinstance(data, np.ndarray) or data.dtype.names is None or data.ndim != 1:
        shape = getattr(data, "shape", None)
        raise InputError(f"{what}: 'data' must be a one-dimensional structured array (time first), "
                         f"got {getattr(data, 'dtype', type(data).__name__)} of shape {shape}")
    names = data.dtype.names
    if not names or names[0] != "time":
        raise InputError(f"{what}: the first column must be 'time', got {(names or ('nothing',))[0]!r}")
    bad = [n for n in names if data.dtype[n].kind not in "fiubU" or data.dtype[n].shape != ()]
    if bad:
        raise InputError(f"{what}: columns {bad[:5]} are not scalar numbers, bools or text")
    return data
