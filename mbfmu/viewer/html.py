"""A single self-contained HTML file that replays a run offline.

The page holds the scene sampled at a bounded number of frames (base64
float32 arrays in a JSON block) and our own canvas-2D renderer
(``assets/replay.js``, inlined): play/pause, scrub, speed, orbit (drag) and
zoom (wheel), trails, and a link to the current time. Opening
``replay.html#t=1.5`` shows the run paused at t = 1.5 s. Nothing is fetched.
Between stored frames the page interpolates positions linearly and
orientations by slerp, which stays exact for a body spinning at a constant
rate about a fixed axis by less than 180 deg per frame interval.

For tests and tooling the page exposes ``#mbfmu-status`` (``data-ready="1"``
once drawn, ``data-t`` the time shown) and ``#mbfmu-errors`` (every uncaught
error and ``console.error`` message, one per line).
"""
from __future__ import annotations

import base64
import copy
import html as _html
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import InputError

from .camera import Camera, fit_camera, scene_bounds
from .meshes import shape_mesh
from .frame_times import decimated_times, envelope

if TYPE_CHECKING:
    from .scene import Recording

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")

BACKGROUND = "#ffffff"
TRAIL_COLOR = "#d62728"

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}</title>
<script>
(function () {{  // record every error in the page for humans and for tests
  function note(msg) {{
    var box = document.getElementById("mbfmu-errors");
    if (box) {{ box.textContent += msg + "\\n"; box.style.display = "block"; }}
    else {{ (window.__mbfmuEarly = window.__mbfmuEarly || []).push(msg); }}
  }}
  window.addEventListener("error", function (e) {{ note("error: " + e.message); }});
  window.addEventListener("unhandledrejection", function (e) {{ note("rejection: " + e.reason); }});
  var ce = console.error;
  console.error = function () {{ note("console.error: " + Array.prototype.join.call(arguments, " ")); ce.apply(console, arguments); }};
}})();
</script>
<style>
html, body {{ margin: 0; height: 100%; overflow: hidden; background: {background}; font: 13px sans-serif; }}
#mbfmu-canvas {{ position: fixed; left: 0; top: 0; width: 100vw; height: 100vh; touch-action: none; cursor: grab; }}
#mbfmu-bar {{ position: fixed; left: 8px; right: 8px; bottom: 6px; display: flex; gap: 8px; align-items: center;
  background: rgba(255,255,255,0.85); border: 1px solid #ccc; border-radius: 4px; padding: 4px 8px; }}
#mbfmu-slider {{ flex: 1; }}
#mbfmu-plot {{ position: fixed; right: 8px; top: 8px; background: rgba(255,255,255,0.9); border: 1px solid #ccc; }}
#mbfmu-errors {{ display: none; position: fixed; top: 30px; left: 8px; color: #b00; background: #fff;
  border: 1px solid #b00; margin: 0; padding: 4px; white-space: pre-wrap; }}
</style></head>
<body>
<canvas id="mbfmu-canvas"></canvas>
<canvas id="mbfmu-plot" width="360" height="200" hidden></canvas>
<pre id="mbfmu-errors"></pre>
<div id="mbfmu-status" data-ready="0" hidden></div>
<div id="mbfmu-bar">
  <button id="mbfmu-play">play</button>
  <input id="mbfmu-slider" type="range" min="0" max="1000" value="0" aria-label="time">
  <span id="mbfmu-time">0 s</span>
  <label>speed <select id="mbfmu-speed">
    <option>0.1</option><option>0.25</option><option>0.5</option><option>1</option>
    <option>2</option><option>5</option><option>10</option></select></label>
  <label><input id="mbfmu-trails" type="checkbox" checked> trails</label>
  <button id="mbfmu-reset">reset view</button>
  <a id="mbfmu-link" href="#t=0">link to this time</a>
</div>
<script>
if (window.__mbfmuEarly) {{ var b = document.getElementById("mbfmu-errors"); b.textContent = window.__mbfmuEarly.join("\\n"); b.style.display = "block"; }}
</script>
<script type="application/json" id="mbfmu-data">{data}</script>
<script>
{script}
</script>
</body></html>
"""


def _b64(a: np.ndarray, dtype: Any) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def scene_data(recording: Recording, max_frames: int = 1500, speed: float = 1.0, start: float | None = None,
               autoplay: bool = True, camera: Camera | None = None, title: str | None = None,
               signals: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON object the page renders (see ``assets/replay.js``).

    At most ``max_frames`` frames are stored, so the page's size does not
    grow with the run's length.
    """
    from matplotlib.colors import to_rgb

    trails_on = bool(recording.trail_points)
    if not trails_on:  # the page's trails box still works: it traces the tips of the mechanism
        recording = with_trails(recording, default_trails(recording))
    frames = recording.frames(decimated_times(recording.time, max_frames))
    camera = camera or fit_camera(recording, frames)
    lo, hi = scene_bounds(recording, frames)
    half = 0.6 * float(np.max(hi[:2] - lo[:2])) or 1.0
    step = nice_step(2 * half / 10)
    n = max(2, int(np.ceil(2 * half / step)))
    shapes = []
    for i, s in enumerate(recording.shapes):
        V, F = shape_mesh(s)
        item = {"kind": s.kind, "name": s.name, "rgb": [round(c, 4) for c in to_rgb(s.color)],
                "V": _b64(V, "<f4"), "F": _b64(F, "<i4"), "radius": float(s.size[0]), "beam": None}
        if s.kind == "beam":
            item["beam"] = _b64(frames.beams[i], "<f4")
        shapes.append(item)
    plots = []
    for j, name in enumerate(signals):
        col = recording.resolve(name)
        t, y = envelope(recording.time, recording.column(col), bins=600)
        plots.append({"name": col, "unit": recording.unit_of(col), "color": PALETTE[j % len(PALETTE)],
                      "t": _b64(t, "<f8"), "y": _b64(y, "<f8"),
                      "at_frames": _b64(recording.values_at(col, frames.time), "<f8")})
    return {
        "title": title or recording.plant.name,
        "signals": plots,
        "time": _b64(frames.time, "<f8"),
        "R": _b64(frames.R, "<f4"),
        "p": _b64(frames.p, "<f4"),
        "trails": _b64(frames.trails, "<f4"),
        "ntrails": int(frames.trails.shape[1]),
        "nstations": int(recording.stations.size),
        "shapes": shapes,
        "camera": camera.as_dict(),
        "grid": {"c": [float(np.round((lo[0] + hi[0]) / 2 / step) * step),
                       float(np.round((lo[1] + hi[1]) / 2 / step) * step)], "z": float(lo[2]),
                 "half": n * step / 2, "n": n, "step": step, "label": f"{step:g} m"},
        "trails_on": trails_on,
        "background": BACKGROUND,
        "trail_color": TRAIL_COLOR,
        "speed": float(speed),
        "start": None if start is None else float(start),
        "autoplay": bool(autoplay),
    }


def nice_step(length: float) -> float:
    """A round grid spacing near ``length`` (1, 2 or 5 times a power of ten), m."""
    if not np.isfinite(length) or length <= 0:
        return 1.0
    e = 10.0 ** np.floor(np.log10(length))
    return float(min((1, 2, 5, 10), key=lambda m: abs(np.log(m * e / length))) * e)


def default_trails(recording: Recording, limit: int = 4) -> list[tuple]:
    """Trails traced when none were asked for: the origins of the tip bodies
    (bodies no other body hangs from) that carry shapes, at most ``limit``."""
    bodies = sorted({s.body for s in recording.shapes if s.body > 0})
    parent = getattr(getattr(recording.plant, "model", None), "parent", None)
    if parent is not None:
        tips = [b for b in range(1, len(parent)) if b not in set(int(p) for p in parent)]
        # a tip without shapes (a tool frame) still shows where the mechanism ends
        bodies = tips or bodies
    if recording.source == "poses":
        bodies = [b for b in bodies if b in recording.pose_columns] or bodies
    return [(b, (0.0, 0.0, 0.0)) for b in bodies[-limit:]]


def with_trails(recording: Recording, trails: Sequence[tuple]) -> Recording:
    """A shallow copy of ``recording`` tracing ``trails`` instead of its own."""
    rec = copy.copy(recording)
    rec.trail_points = [rec._trail(t) for t in trails]
    return rec


def page_html(recording: Recording, max_frames: int = 1500, speed: float = 1.0, start: float | None = None,
              autoplay: bool = True, camera: Camera | None = None, title: str | None = None,
              signals: Sequence[str] = ()) -> str:
    """The standalone replay page as text (see :func:`write_html`)."""
    from .options import finite_or_none, frame_count, positive
    speed, start = positive("speed", speed), finite_or_none("start", start)
    max_frames = frame_count("max_frames", max_frames)
    data = scene_data(recording, max_frames, speed, start, autoplay, camera, title, signals)
    script = resources.files("mbfmu.viewer").joinpath("assets/replay.js").read_text(encoding="utf-8")
    return _PAGE.format(title=_html.escape(data["title"]), background=BACKGROUND, data=script_json(data),
                        script=script)


_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                   0x2028: "\\u2028", 0x2029: "\\u2029"}


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` are written as JSON escapes, so no text from the
    data (a variable named ``<!--<script>``, ``</script>``) can end the
    element or switch the HTML parser into its escaped script states; JSON
    has no NaN, so a non-finite number is refused here rather than written
    into a page that cannot load.
    """
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise InputError("the replay data holds a non-finite number (NaN or infinity), which a page cannot "
                         "load") from None
    return text.translate(_SCRIPT_ESCAPES)


def write_html(recording: Recording, path: str | Path, max_frames: int = 1500, speed: float = 1.0,
               start: float | None = None, autoplay: bool = True, camera: Camera | None = None,
               title: str | None = None, signals: Sequence[str] = ()) -> Path:
    """Write the standalone replay page.

    Parameters
    ----------
    recording : Recording
        What to replay.
    path : str or Path
        Output ``.html`` file.
    max_frames : int
        Upper bound on the frames stored (decimation for long runs).
    speed : float
        Initial replay speed, x real time.
    start : float, optional
        Time shown when the page opens, s (a ``#t=`` link overrides it).
    autoplay : bool
        Start playing on open (not when opened with ``#t=``).
    camera : Camera, optional
        Initial view; default: fitted to the whole motion.
    title : str, optional
        Shown in the page; default: the plant's name.
    signals : sequence of str
        Recorded variables plotted beside the scene (min/max decimated), one
        axis per unit, with a cursor and their values at the current time.

    The page shows the world axes at the origin and a floor grid of a
    round spacing (stated on the page). Its "trails" box traces the points
    given as the recording's trails (shown from the start), or else the
    tips of the mechanism (shown when the box is ticked).
    """
    text = page_html(recording, max_frames, speed, start, autoplay, camera, title, signals)
    path = Path(path)
    path.write_text(text, encoding="utf-8")
    return path
