"""Checks of the replay options (speed, frame rate, image size, frame counts).

Each raises one :class:`~mbfmu.errors.InputError` naming the option and the
bound, before anything is drawn or allocated: ``--speed nan`` would write a
page that cannot load, ``--size 100000x100000`` would allocate 40 GB for one
frame.
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..untrusted.limits import limits


def positive(name: str, value: Any) -> float:
    """``value`` as a positive finite float (``speed``, ``fps``)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} {value!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise InputError(f"{name} {value!r} must be a positive finite number")
    return v


def finite_or_none(name: str, value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (a start time, s)."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} {value!r} is not a number of seconds") from None
    if not math.isfinite(v):
        raise InputError(f"{name} {value!r} must be a finite number of seconds")
    return v


def frame_count(name: str, value: Any, least: int = 2) -> int:
    """``value`` as a whole number of frames, at least ``least``."""
    whole = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
             and value == int(value))
    if not whole:
        raise InputError(f"{name} {value!r} must be a whole number of frames")
    n = int(value)
    if n < least:
        raise InputError(f"{name} {n} must be at least {least}")
    return n


def image_size(size: Any) -> tuple[int, int]:
    """``(width, height)`` in pixels: whole, at least 16 each, at most ``max_pixels`` in all."""
    try:
        w, h = size
        if any(isinstance(v, bool) or int(v) != v for v in (w, h)):
            raise ValueError
        w, h = int(w), int(h)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"size {size!r} must be two whole numbers of pixels (WIDTHxHEIGHT)") from None
    if w < 16 or h < 16:
        raise InputError(f"size {w}x{h} px: width and height must be at least 16 px")
    lim = limits().max_pixels
    if w * h > lim:
        raise InputError(f"size {w}x{h} px is {w * h / 1e6:.4g} Mpx (about {w * h * 4 / 2**30:.3g} GiB per frame), "
                         f"above the limit of {lim / 1e6:.4g} Mpx (MBFMU_MAX_PIXELS)")
    return w, h


def video_frames(n: int) -> int:
    """``n`` frames of a video, refused above ``max_video_frames``."""
    lim = limits().max_video_frames
    if n > lim:
        raise InputError(f"the video would have {n} frames, above the limit of {lim} (MBFMU_MAX_VIDEO_FRAMES); "
                         "lower --fps, raise --speed or shorten the span")
    return n
