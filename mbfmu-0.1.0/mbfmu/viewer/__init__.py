"""Replay recorded runs in 3D: a matplotlib window, MP4/GIF/still export and a
standalone HTML page (``mbfmu view``).

Quick use::

    from mbfmu.viewer import Recording, write_html, save_video, save_still, show
    rec = Recording(results, plant, trails=[(2, (0, 0, -0.8))])
    write_html(rec, "run.html")            # open run.html#t=1.5 for t = 1.5 s
    save_video(rec, "run.mp4", fps=25, speed=0.5)
    save_still(rec, "run.png", t=1.5, signals=["q[1]"])

What the viewer needs from a plant (:class:`mbfmu.plant.Plant`)
----------------------------------------------------------------
``states``
    Signals whose names are the result fields of the recorded state
    (``q[1]``; in a co-simulation result ``<unit>.q[1]``).
``poses(x) -> (R, p)``
    ``R`` (nbodies, 3, 3) = ``R_WB``, ``p`` (nbodies, 3) = ``p_WB`` in m, the
    world pose of every body for state ``x``, indexed like ``Shape.body``
    (row 0 is the world: identity, zero). Must accept a state obtained by
    linear interpolation between two samples followed by
    ``normalize_state``.
``geometry``
    Tuple of :class:`~mbfmu.plant.Shape`, each on a body, placed by
    ``Shape.R``/``Shape.p`` (shape frame in the body frame). Box
    (x, y, z edges), cylinder (radius, length; axis z), capsule (radius,
    length of the straight part; axis z) and sphere (radius) are centred on
    the shape frame's origin. A beam (radius, length) runs from the shape
    frame's origin along its +x axis. A mesh carries its triangles in
    ``Shape.mesh = (V, F)`` (vertices in the shape frame, m); a URDF
    robot's visuals arrive this way (:mod:`mbfmu.plant.urdf_visuals`).
``beam_deflection(x, shape_index, s) -> d`` (only for plants with beams)
    ``d`` (len(s), 3): displacement, in the *shape* frame, m, of the beam's
    centre line at stations ``s`` (m from the shape origin along x, in
    ``[0, length]``), for state ``x``; ``shape_index`` is the beam's position
    in ``geometry``. Without this method a beam is drawn straight.
``normalize_state(x)``
    Applied after interpolating states (unit quaternions).

Results that hold only the configuration (the states named in the plant's
``pose_states``, or a multibody plant's ``q[1..nq]``, e.g. recorded as
outputs of the same names) are replayed with the other states at their
initial values. Results without states may carry the body poses instead, as
``body{k}_p[1..3]`` (m, world) and ``body{k}_quat[1..4]`` (``R_WB`` as a
unit quaternion, scalar first), optionally unit-prefixed; the plant then
only supplies ``geometry``. Result files: see :mod:`mbfmu.viewer.results`;
the metadata's ``"plant"`` and ``"parameters"`` (or, for a co-simulation,
``"plants": {unit: {"plant", "parameters"}}`` or a PlantRef dict per unit,
with the run's ``"values": {"unit.param": v}``) let ``mbfmu view`` rebuild
the plant by itself; a model file or URDF robot embedded in an FMU is
rebuilt from that FMU (``"components": {unit: {"source": path}}``);
otherwise pass ``--model``. ``Recording._repr_html_`` shows the HTML
replay inline in Jupyter.

The HTML page stores at most ``max_frames`` frames and interpolates between
them (positions and beam centre lines linearly, orientations by quaternion
slerp, so a fast-spinning body keeps its size); the window, stills and
videos evaluate the recorded state at every drawn instant exactly.

Modules: :mod:`.results` (files), :mod:`.scene` (poses at any time,
decimation), :mod:`.meshes`, :mod:`.camera`, :mod:`.mpl` (window, stills,
video), :mod:`.html` (+ ``assets/replay.js``), :mod:`.plants` (finding the
plant), :mod:`.cli`.
"""
from __future__ import annotations

from .._lazy import lazy_getattr

from .results import load_results, save_results
from .scene import Frames, Recording

_LAZY = {
    "write_html": "mbfmu.viewer.html",
    "save_video": "mbfmu.viewer.mpl",
    "save_still": "mbfmu.viewer.mpl",
    "show": "mbfmu.viewer.mpl",
    "Viewer": "mbfmu.viewer.mpl",
    "open_recording": "mbfmu.viewer.plants",
    "check_plant": "mbfmu.viewer.plants",
    "Camera": "mbfmu.viewer.camera",
}

__all__ = ["Frames", "Recording", "load_results", "save_results", *sorted(_LAZY)]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
