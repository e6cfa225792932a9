"""The bounds mbfmu applies to what a file from someone else can make it do.

========================  =========  ==========================================
limit                     default    environment variable
========================  =========  ==========================================
``max_expand_bytes``      2 GiB      ``MBFMU_MAX_EXPAND_BYTES``: total declared
                                     size of an archive's members (FMU, SSP,
                                     ``.npz``, ``.mat``), and of one result
                                     array loaded from a file
``max_ratio``             200        ``MBFMU_MAX_RATIO``: declared size over
                                     compressed size of one member (members
                                     under ``ratio_floor_bytes`` are exempt)
``ratio_floor_bytes``     1 MiB      ``MBFMU_RATIO_FLOOR_BYTES``
``max_members``           100000     ``MBFMU_MAX_MEMBERS``: entries of an
                                     archive
``max_runs``              1000000    ``MBFMU_MAX_RUNS``: runs of one study
                                     (grid points times samples)
``max_pixels``            67108864   ``MBFMU_MAX_PIXELS``: width x height of an
                                     image or video frame (8192 x 8192)
``max_video_frames``      1000000    ``MBFMU_MAX_VIDEO_FRAMES``: frames of one
                                     video (11 h at 25 fps)
``max_json_depth``        64         ``MBFMU_MAX_JSON_DEPTH``: nesting of the
                                     metadata JSON of a result file
========================  =========  ==========================================

Each is read from the environment when first used (so worker processes
inherit it), and :func:`set_limits` changes them for this process.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from ..errors import InputError

GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The bounds in force.

    Attributes
    ----------
    max_expand_bytes : int
        Total declared size of an archive's members, and of one result array, bytes.
    max_ratio : float
        Declared over compressed size of one archive member.
    ratio_floor_bytes : int
        Members smaller than this (bytes) are exempt from ``max_ratio``.
    max_members : int
        Entries of one archive.
    max_runs : int
        Runs of one study (grid points x samples).
    max_pixels : int
        Width x height of an image or video frame, pixels.
    max_video_frames : int
        Frames of one video.
    max_json_depth : int
        Nesting of a result file's metadata JSON.
    """

    max_expand_bytes: int = 2 * GiB
    max_ratio: float = 200.0
    ratio_floor_bytes: int = MiB
    max_members: int = 100_000
    max_runs: int = 1_000_000
    max_pixels: int = 8192 * 8192
    max_video_frames: int = 1_000_000
    max_json_depth: int = 64


_ENV = {f.name: "MBFMU_" + f.name.upper() for f in dataclasses.fields(Limits)}
_current: Limits | None = None


def _from_env() -> Limits:
    values = {}
    for f in dataclasses.fields(Limits):
        text = os.environ.get(_ENV[f.name])
        if text is None or not text.strip():
            continue
        try:
            v = float(text)
        except ValueError:
            raise InputError(f"environment variable {_ENV[f.name]}={text!r} is not a number") from None
        values[f.name] = v
    return _checked(Limits(), values)


def _checked(base: Limits, values: dict) -> Limits:
    out = {}
    for name, v in values.items():
        if name not in _ENV:
            raise InputError(f"unknown limit {name!r}; the limits are: {', '.join(_ENV)}")
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise InputError(f"limit {name} = {v!r} is not a number") from None
        if not f > 0 or f != f or f == float("inf"):
            raise InputError(f"limit {name} = {v!r} must be a positive finite number")
        out[name] = f if name == "max_ratio" else int(f)
    return dataclasses.replace(base, **out)


def limits() -> Limits:
    """The limits in force in this process (read from the environment on first use).

    Returns
    -------
    Limits
    """
    global _current
    if _current is None:
        _current = _from_env()
    return _current


def set_limits(**values: float) -> Limits:
    """Change limits for this process (names as in :class:`Limits`); returns the previous ones.

    Parameters
    ----------
    **values : float
        New values by limit name (bytes, a ratio, counts or pixels: see
        :class:`Limits`), each positive and finite.

    Returns
    -------
    Limits
        The limits in force before the call (``set_limits(**dataclasses.asdict(old))`` restores
        them; ``set_limits()`` only reads them).

    Examples
    --------
    >>> import dataclasses
    >>> from mbfmu.untrusted.limits import set_limits
    >>> old = set_limits(max_expand_bytes=8 * 2**30)   # FMUs of up to 8 GiB
    >>> _ = set_limits(**dataclasses.asdict(old))       # back
    """
    global _current
    old = limits()
    _current = _checked(old, values)
    return old


def size_text(n: float) -> str:
    """``n`` bytes in the unit a reader takes in at a glance (``1.43 GiB``)."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("kiB", 1024)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"
