"""Which times a replay shows: video frame times, decimated frame times and
the min/max envelope of a signal for plotting (memory bounded by the number
of frames or bins, not the run's length)."""
from __future__ import annotations

import numpy as np


def video_times(t0: float, t1: float, fps: float, speed: float = 1.0) -> np.ndarray:
    """Frame times of a video replaying ``[t0, t1]`` at ``speed`` x real time.

    ``N = floor((t1 - t0) * fps / speed) + 1`` frames, frame ``k`` showing
    ``t0 + k * speed / fps``; the file lasts ``N / fps`` s.
    """
    from .options import positive, video_frames
    fps, speed = positive("fps", fps), positive("speed", speed)
    n = video_frames(int(np.floor((t1 - t0) * fps / speed + 1e-9)) + 1)
    return t0 + np.arange(n) * (speed / fps)


def decimated_times(time: np.ndarray, max_frames: int) -> np.ndarray:
    """At most ``max_frames`` frame times covering ``time``: the sample times
    themselves when there are few enough, else an even grid from first to last."""
    n = time.size
    if n <= max_frames:
        return np.asarray(time, dtype=float).copy()
    return np.linspace(float(time[0]), float(time[-1]), max(2, int(max_frames)))


def envelope(time: np.ndarray, y: np.ndarray, bins: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Min/max decimation of a signal for plotting: at most ``2 * bins``
    points that keep every peak. Arrays may be strided views (no copy made)."""
    n = time.size
    if n <= 2 * bins:
        return np.asarray(time, dtype=float).copy(), np.asarray(y, dtype=float).copy()
    edges = np.linspace(0, n, bins + 1).astype(np.intp)
    starts = edges[:-1]
    lo = np.minimum.reduceat(y, starts)
    hi = np.maximum.reduceat(y, starts)
    t = np.empty(2 * bins)
    v = np.empty(2 * bins)
    t[0::2] = time[starts]
    t[1::2] = time[edges[1:] - 1]
    v[0::2] = lo
    v[1::2] = hi
    return t, v
