"""Matplotlib replay: a desktop window, still images, MP4 and GIF export.

:class:`Viewer` draws a :class:`~mbfmu.viewer.scene.Recording` into a figure:
the shapes in a 3D axes, trails of chosen points, and a time-synced plot of
chosen signals beside the scene. With ``interactive=True`` it adds play/pause,
a time slider, speed and scale sliders (the view angle follows the mouse, as
in any mplot3d axes). The same figure, without widgets, makes stills and
videos, so a video shows exactly what the window shows.
"""
from __future__ import annotations

import shutil
import time as _time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from .camera import scene_bounds
from .meshes import shape_mesh, tube_mesh
from .frame_times import decimated_times, envelope, video_times
from .scene import Recording

_LIGHT = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])


def _shade(rgb: np.ndarray, V: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Face colours (nf, 4) lit by a fixed directional light."""
    tri = V[F]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    k = 0.45 + 0.55 * np.abs(n @ _LIGHT)
    out = np.ones((F.shape[0], 4))
    out[:, :3] = np.clip(rgb[None, :] * k[:, None], 0, 1)
    return out


class Viewer:
    """A matplotlib figure replaying a recording.

    Parameters
    ----------
    recording : Recording
        What to replay.
    signals : sequence of str
        Recorded variables plotted beside the scene, with a cursor at the
        current time.
    interactive : bool
        Add play/pause, time, speed and scale widgets.
    size : (int, int)
        Figure size in pixels (at ``dpi``).
    dpi : int
        Resolution, dots per inch.
    elevation, azimuth : float
        Initial view angle, deg.
    speed : float
        Replay speed, x real time.
    scale : float
        Zoom: > 1 magnifies.
    max_frames : int
        Frames sampled over the run for trails and the scene's extent.
    """

    def __init__(self, recording: Recording, signals: Sequence[str] = (), interactive: bool = False,
                 size: tuple[int, int] = (800, 600), dpi: int = 100, elevation: float = 25.0,
                 azimuth: float = -60.0, speed: float = 1.0, scale: float = 1.0, max_frames: int = 400) -> None:
        import matplotlib.pyplot as plt
        from matplotlib.colors import to_rgb
        from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

        from .options import image_size, positive
        size, self.speed = image_size(size), positive("speed", speed)
        positive("dpi", dpi)
        self.rec = recording
        self.scale = float(scale)
        self.playing = False
        self.clock = _time.perf_counter  # wall clock of the play loop, s
        self.t = recording.t0
        self.signals = [recording.resolve(s) for s in signals]
        self.overview = recording.frames(decimated_times(recording.time, max_frames))
        lo, hi = scene_bounds(recording, self.overview)
        self.centre, self.radius = (lo + hi) / 2, max(float(np.max(hi - lo)) / 2, 1e-3)

        w, h = size
        self.fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
        bottom = 0.16 if interactive else 0.0
        if self.signals:
            self.ax = self.fig.add_axes([0.0, bottom + 0.03, 0.58, 0.9 - bottom], projection="3d")
            self.ax_sig = self.fig.add_axes([0.66, bottom + 0.1, 0.31, 0.8 - bottom])
        else:
            self.ax = self.fig.add_axes([0.02, bottom + 0.03, 0.96, 0.9 - bottom], projection="3d")
            self.ax_sig = None
        self.ax.view_init(elev=elevation, azim=azimuth)
        self.ax.set_box_aspect((1, 1, 1), zoom=1.0)
        self.ax.set_xlabel("x, m")
        self.ax.set_ylabel("y, m")
        self.ax.set_zlabel("z, m")
        self._apply_scale()

        # one collection for all shapes, so that mplot3d depth-sorts every
        # triangle against every other (per-collection sorting misorders bodies)
        self.meshes = [(*shape_mesh(s), np.array(to_rgb(s.color))) for s in recording.shapes]
        self.coll = Poly3DCollection([], linewidth=0.3)
        self.ax.add_collection3d(self.coll, autolim=False)
        self.trail_coll = Line3DCollection([], colors="#d62728", linewidths=1.2)
        self.ax.add_collection3d(self.trail_coll, autolim=False)
        self.title = self.fig.text(0.02, 0.97, "", va="top", fontsize=11)

        self.cursor = None
        if self.ax_sig is not None:
            for name in self.signals:
                t, y = envelope(recording.time, recording.column(name))
                self.ax_sig.plot(t, y, lw=1, label=name)
            self.cursor = self.ax_sig.axvline(self.t, color="k", lw=1)
            self.ax_sig.set_xlabel("time, s")
            self.ax_sig.legend(fontsize="small", loc="best")
            self.ax_sig.grid(True, alpha=0.3)
        if interactive:
            self._add_widgets()
        self.set_time(recording.t0)

    # -- drawing --------------------------------------------------------------
    def _apply_scale(self) -> None:
        half = self.radius / self.scale
        for c, setter in zip(self.centre, (self.ax.set_xlim, self.ax.set_ylim, self.ax.set_zlim)):
            setter(c - half, c + half)

    def set_time(self, t: float) -> None:
        """Draw the scene at time ``t`` (s), clipped to the recorded span."""
        t = float(np.clip(t, self.rec.t0, self.rec.t1))
        self.t = t
        R_WS, p_WS, beams, trails = self.rec.scene_at(t)
        tris, colors = [], []
        for i, (s, (V, F, rgb)) in enumerate(zip(self.rec.shapes, self.meshes)):
            if s.kind == "beam":
                Vw, Fw = tube_mesh(beams[i], float(s.size[0]), R_WS[i])
            else:
                Vw, Fw = V @ R_WS[i].T + p_WS[i], F
            tris.append(Vw[Fw])
            colors.append(_shade(rgb, Vw, Fw))
        self.coll.set_verts(np.concatenate(tris))
        self.coll.set_facecolor(np.concatenate(colors))
        self.coll.set_edgecolor(np.concatenate(colors))  # hides the seams between triangles
        if len(self.rec.trail_points):
            past = self.overview.time <= t
            segs = []
            for j in range(trails.shape[0]):
                path = np.vstack([self.overview.trails[past, j], trails[j][None]])
                segs.append(path)
            self.trail_coll.set_segments(segs)
        self.title.set_text(f"{self.rec.plant.name}   t = {t:.3f} s")
        if self.cursor is not None:
            self.cursor.set_xdata([t, t])
        if getattr(self, "slider", None) is not None and abs(self.slider.val - t) > 1e-12:
            self._quiet = True
            self.slider.set_val(t)
            self._quiet = False

    # -- widgets --------------------------------------------------------------
    def _add_widgets(self) -> None:
        from matplotlib.widgets import Button, Slider

        f = self.fig
        self._quiet = False
        self.slider = Slider(f.add_axes([0.12, 0.09, 0.6, 0.03]), "time, s", self.rec.t0, self.rec.t1,
                             valinit=self.rec.t0)
        self.slider.on_changed(lambda v: None if self._quiet else self._scrub(v))
        self.speed_slider = Slider(f.add_axes([0.12, 0.04, 0.25, 0.03]), "speed, log10", -2, 2,
                                   valinit=np.log10(self.speed))
        self.speed_slider.on_changed(lambda v: setattr(self, "speed", 10.0 ** v))
        self.scale_slider = Slider(f.add_axes([0.50, 0.04, 0.22, 0.03]), "scale", 0.2, 5.0, valinit=self.scale)
        self.scale_slider.on_changed(self._set_scale)
        self.button = Button(f.add_axes([0.8, 0.04, 0.12, 0.08]), "play")
        self.button.on_clicked(lambda _e: self.toggle())
        self.timer = f.canvas.new_timer(interval=40)
        self.timer.add_callback(self._tick)
        self._wall = None

    def _scrub(self, v: float) -> None:
        self.set_time(v)
        self.fig.canvas.draw_idle()

    def _set_scale(self, v: float) -> None:
        self.scale = float(v)
        self._apply_scale()
        self.fig.canvas.draw_idle()

    def toggle(self) -> None:
        """Play or pause."""
        self.playing = not self.playing
        self.button.label.set_text("pause" if self.playing else "play")
        if self.playing:
            if self.t >= self.rec.t1:
                self.set_time(self.rec.t0)
            self._wall = self.clock()
            self.timer.start()
        else:
            self.timer.stop()
        self.fig.canvas.draw_idle()

    def _tick(self) -> None:
        now = self.clock()
        dt = now - (self._wall or now)
        self._wall = now
        t = self.t + self.speed * dt
        self.set_time(t)
        if t >= self.rec.t1:
            self.toggle()
        self.fig.canvas.draw_idle()

    # -- output ---------------------------------------------------------------
    def save_still(self, path: str | Path, t: float) -> Path:
        """Save the scene at ``t`` (s) as an image (format by suffix)."""
        self.set_time(t)
        self.fig.savefig(path, dpi=self.fig.dpi)
        return Path(path)

    def export(self, path: str | Path, fps: float = 25.0, t0: float | None = None, t1: float | None = None,
               progress: bool = False) -> int:
        """Write an MP4 (ffmpeg) or GIF (Pillow) replaying ``[t0, t1]`` at
        ``self.speed`` x real time, ``fps`` frames per second of video.

        Returns the number of frames: ``floor((t1 - t0) * fps / speed) + 1``.
        """
        from matplotlib.animation import FFMpegWriter, PillowWriter

        path = Path(path)
        t0 = self.rec.t0 if t0 is None else float(t0)
        t1 = self.rec.t1 if t1 is None else float(t1)
        times = video_times(t0, t1, fps, self.speed)
        if path.suffix == ".mp4":
            if shutil.which("ffmpeg") is None:
                raise InputError("MP4 export needs ffmpeg on PATH (Debian: apt-get install ffmpeg); GIF needs nothing")
            writer = FFMpegWriter(fps=fps, codec="libx264", extra_args=["-pix_fmt", "yuv420p"])
        elif path.suffix == ".gif":
            writer = PillowWriter(fps=fps)
        else:
            raise InputError(f"video {str(path)!r}: unknown suffix {path.suffix!r}; use .mp4 or .gif")
        it = times
        if progress:
            from tqdm import tqdm
            it = tqdm(times, unit="frame", desc=path.name)
        with writer.saving(self.fig, str(path), dpi=self.fig.dpi):
            for t in it:
                self.set_time(t)
                writer.grab_frame()
        return int(times.size)

    def close(self) -> None:
        import matplotlib.pyplot as plt
        plt.close(self.fig)


def _even(size: tuple[int, int]) -> tuple[int, int]:
    return (int(size[0]) // 2 * 2, int(size[1]) // 2 * 2)


def save_still(recording: Recording, path: str | Path, t: float, signals: Sequence[str] = (),
               size: tuple[int, int] = (800, 600), **kw) -> Path:
    """Image of the scene at time ``t`` (s); the format follows the suffix.

    Parameters
    ----------
    recording : Recording
        What to replay.
    path : str or Path
        Image file (``.png``, ``.svg``, ``.pdf``...).
    t : float
        Time of the picture, s.
    signals : sequence of str
        Recorded variables plotted beside the scene.
    size : (int, int)
        Image size, pixels.
    **kw
        Further options of :class:`Viewer` (``dpi``, ``elevation``, ``azimuth``, ``scale``...).

    Returns
    -------
    Path
        The written file.
    """
    v = Viewer(recording, signals, size=size, **kw)
    try:
        return v.save_still(path, t)
    finally:
        v.close()


def save_video(recording: Recording, path: str | Path, fps: float = 25.0, speed: float = 1.0,
               t0: float | None = None, t1: float | None = None, signals: Sequence[str] = (),
               size: tuple[int, int] = (640, 480), progress: bool = False, **kw) -> int:
    """MP4 or GIF of the replay; returns the number of frames written (see
    :func:`~mbfmu.viewer.frame_times.video_times`).

    Parameters
    ----------
    recording : Recording
        What to replay.
    path : str or Path
        Video file, ``.mp4`` (needs ffmpeg) or ``.gif``.
    fps : float
        Frames per second of the video, 1/s.
    speed : float
        Replay speed, x real time.
    t0, t1 : float, optional
        First and last recorded time shown, s (default: the whole run).
    signals : sequence of str
        Recorded variables plotted beside the scene.
    size : (int, int)
        Frame size, pixels (rounded to even numbers for the encoder).
    progress : bool
        Show a progress bar while writing.
    **kw
        Further options of :class:`Viewer` (``dpi``, ``elevation``, ``azimuth``, ``scale``...).
    """
    v = Viewer(recording, signals, size=_even(size), speed=speed, **kw)
    try:
        return v.export(path, fps, t0, t1, progress)
    finally:
        v.close()


def show(recording: Recording, signals: Sequence[str] = (), t: float | None = None, **kw) -> Viewer:
    """Open the interactive replay window (blocks until it is closed).

    Parameters
    ----------
    recording : Recording
        What to replay.
    signals : sequence of str
        Recorded variables plotted beside the scene.
    t : float, optional
        Time shown first, s (default: the start of the run).
    **kw
        Further options of :class:`Viewer` (``dpi``, ``elevation``, ``azimuth``, ``scale``...).

    Raises
    ------
    InputError
        When matplotlib has no interactive display.
    """
    import matplotlib.pyplot as plt

    backend = plt.get_backend().lower()
    if backend in ("agg", "pdf", "ps", "svg", "cairo", "template") or backend.endswith("inline"):
        raise InputError(f"no interactive display (matplotlib backend {backend!r}); write a file instead "
                         "(-o run.html, run.mp4, run.gif or run.png)")
    v = Viewer(recording, signals, interactive=True, **kw)
    if t is not None:
        v.set_time(t)
    plt.show()
    return v
