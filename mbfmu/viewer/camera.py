"""The orbit camera shared by the HTML replay (``assets/replay.js``) and the
tests that check its pixels, and the extent of a scene."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..plant import Shape

if TYPE_CHECKING:
    from .scene import Frames, Recording


@dataclass(frozen=True)
class Camera:
    """An orbit camera, z up; the same math runs in ``assets/replay.js``.

    Parameters
    ----------
    target : (3,) array_like
        Point looked at, m.
    distance : float
        Eye to target, m.
    azimuth, elevation : float
        Direction from target to eye, rad (azimuth from +x towards +y).
    fov : float
        Vertical field of view, rad.
    """

    target: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: float = 5.0
    azimuth: float = np.radians(-60.0)
    elevation: float = np.radians(25.0)
    fov: float = np.radians(40.0)

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Eye position and right/up/forward unit vectors (world)."""
        c = np.asarray(self.target, dtype=float)
        ce, se = np.cos(self.elevation), np.sin(self.elevation)
        eye = c + self.distance * np.array([ce * np.cos(self.azimuth), ce * np.sin(self.azimuth), se])
        f = (c - eye) / np.linalg.norm(c - eye)
        r = np.cross(f, [0.0, 0.0, 1.0])
        r = r / np.linalg.norm(r) if np.linalg.norm(r) > 1e-9 else np.array([1.0, 0.0, 0.0])
        u = np.cross(r, f)
        return eye, r, u, f

    def project(self, P: Any, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pixel coordinates (column, row from the top-left) and depth (m) of world points ``P`` (..., 3)."""
        eye, r, u, f = self.basis()
        d = np.asarray(P, dtype=float) - eye
        xc, yc, zc = d @ r, d @ u, d @ f
        focal = (height / 2) / np.tan(self.fov / 2)
        return width / 2 + focal * xc / zc, height / 2 - focal * yc / zc, zc

    def as_dict(self) -> dict[str, Any]:
        return {"target": [float(v) for v in self.target], "distance": float(self.distance),
                "azimuth": float(self.azimuth), "elevation": float(self.elevation), "fov": float(self.fov)}


def scene_bounds(recording: Recording, frames: Frames) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners (3,) of a box holding every shape in ``frames``, m."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for i, s in enumerate(recording.shapes):
        if s.kind == "beam":
            pts, reach = frames.beams[i].reshape(-1, 3), float(s.size[0])
        else:
            pts, reach = frames.p[:, i], _shape_reach(s)
        lo = np.minimum(lo, pts.min(0) - reach)
        hi = np.maximum(hi, pts.max(0) + reach)
    if frames.trails.size:
        lo = np.minimum(lo, frames.trails.reshape(-1, 3).min(0))
        hi = np.maximum(hi, frames.trails.reshape(-1, 3).max(0))
    return lo, hi


def scene_extent(recording: Recording, frames: Frames) -> tuple[np.ndarray, float]:
    """Centre (3,) and radius (m) of a sphere holding every shape in ``frames``."""
    lo, hi = scene_bounds(recording, frames)
    return (lo + hi) / 2, float(np.linalg.norm(hi - lo) / 2) or 1.0


def _shape_reach(s: Shape) -> float:
    sz = [float(v) for v in s.size]
    if s.kind == "box":
        return float(np.linalg.norm(sz) / 2)
    if s.kind in ("sphere", "mesh"):
        return sz[0]
    return float(np.hypot(sz[0], sz[1] / 2) + (sz[0] if s.kind == "capsule" else 0))


def fit_camera(recording: Recording, frames: Frames, azimuth: float = np.radians(-60.0),
               elevation: float = np.radians(25.0), fov: float = np.radians(40.0)) -> Camera:
    """A camera that sees the whole motion in ``frames``."""
    c, rad = scene_extent(recording, frames)
    return Camera(tuple(float(v) for v in c), 1.15 * rad / np.sin(fov / 2), azimuth, elevation, fov)
