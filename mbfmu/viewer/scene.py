"""The scene behind every replay: body poses at any time, from recorded results.

:class:`Recording` ties a result array to the plant that produced it and
answers "where is every shape at time t" exactly: the recorded state at ``t``
(linearly interpolated between samples, then ``plant.normalize_state``) goes
through ``plant.poses(x)``, the engine's forward kinematics. When the results
hold recorded body poses instead of states (``body{k}_p[i]``,
``body{k}_quat[i]``) those are used directly.

:meth:`Recording.frames` samples the scene at a bounded set of times for the
exporters (video, GIF, HTML); its memory is ``O(frames)``, independent of the
run's length. Signal plots are decimated the same way
(:func:`~mbfmu.viewer.frame_times.envelope`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, unknown_name
from ..plant import Plant, Shape
from .results import as_results, check_numeric

from .meshes import KINDS
_POSE_FIELD = re.compile(r"^(?:(?P<unit>.+)\.)?body(?P<k>\d+)_(?P<what>p|quat)\[(?P<i>[1-4])\]$")


# ---------------------------------------------------------------- columns
class PartialColumns(InputError):
    """Results hold some, not all, of the variables asked for."""


def pose_state_names(plant: Plant) -> list[str]:
    """The states that fix a plant's configuration (all :meth:`Plant.poses` reads).

    A plant may say so as ``pose_states``; a multibody plant's are its
    ``q[1..nq]``; otherwise every state."""
    named = getattr(plant, "pose_states", None)
    if named:
        return list(named)
    nq = getattr(getattr(plant, "model", None), "nq", None)
    states = [s.name for s in plant.states]
    if isinstance(nq, int) and all(n == f"q[{k + 1}]" for k, n in enumerate(states[:nq])):
        return states[:nq]
    return states


def _short(names: Sequence[str]) -> str:
    return ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")



def find_columns(fields: Sequence[str], wanted: Sequence[str], unit: str | None = None,
                 what: str = "variables") -> list[str] | None:
    """Names of the result fields holding ``wanted`` variables.

    A variable ``q[1]`` is found as ``q[1]`` or, in a co-simulation result,
    as ``<unit>.q[1]``. With ``unit`` given only ``<unit>.q[1]`` matches.

    Returns ``None`` when none of ``wanted`` is present; raises
    :class:`InputError` when only some are, or when several units hold all
    of them and ``unit`` does not choose one.
    """
    fset = set(fields)
    if unit is not None:
        cols = [f"{unit}.{n}" for n in wanted]
        missing = [c for c in cols if c not in fset]
        if len(missing) == len(cols):
            return None
        if missing:
            raise PartialColumns(f"results lack the {what} {', '.join(missing)} of unit {unit!r}")
        return cols
    if all(n in fset for n in wanted):
        return list(wanted)
    prefixes: set[str] | None = None
    for n in wanted:
        here = {f[: -len(n) - 1] for f in fields if f.endswith("." + n)}
        if n in fset:
            here.add("")
        prefixes = here if prefixes is None else prefixes & here
    if not prefixes:
        present = [n for n in wanted if n in fset or any(f.endswith("." + n) for f in fields)]
        if present:
            missing = [n for n in wanted if n not in present]
            raise PartialColumns(f"results hold only part of the {what}: missing {', '.join(missing)}")
        return None
    if len(prefixes) > 1:
        raise InputError(f"results hold the {what} of several units ({', '.join(sorted(prefixes))}); "
                         "choose one with unit=... (--unit)")
    (pre,) = prefixes
    return [f"{pre}.{n}" if pre else n for n in wanted]


def pose_columns(fields: Sequence[str], unit: str | None = None) -> dict[int, tuple[list[str], list[str]]]:
    """Recorded body poses in ``fields``: ``{body: (p columns, quat columns)}``.

    Body ``k``'s pose is recorded as ``body{k}_p[1..3]`` (origin in world, m)
    and ``body{k}_quat[1..4]`` (unit quaternion R_WB, scalar first), possibly
    prefixed by a unit name.
    """
    found: dict[tuple[str | None, int], dict[str, str]] = {}
    for f in fields:
        m = _POSE_FIELD.match(f)
        if m and (unit is None or m["unit"] == unit):
            found.setdefault((m["unit"], int(m["k"])), {})[f"{m['what']}{m['i']}"] = f
    units = {u for u, _ in found}
    if len(units) > 1:
        raise InputError(f"results hold body poses of several units ({', '.join(sorted(map(str, units)))}); "
                         "choose one with unit=... (--unit)")
    out = {}
    for (_, k), cols in sorted(found.items()):
        need = [f"p{i}" for i in (1, 2, 3)] + [f"quat{i}" for i in (1, 2, 3, 4)]
        missing = [n for n in need if n not in cols]
        if missing:
            raise InputError(f"recorded pose of body {k} is incomplete: missing {', '.join(missing)}")
        out[k] = ([cols[f"p{i}"] for i in (1, 2, 3)], [cols[f"quat{i}"] for i in (1, 2, 3, 4)])
    return out


# ---------------------------------------------------------------- rotations
def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices from unit quaternions (w, x, y, z), shape (..., 4) -> (..., 3, 3)."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of one rotation matrix, shape (3, 3) -> (4,)."""
    R = np.asarray(R, dtype=float)
    K = np.array([
        [R[0, 0] - R[1, 1] - R[2, 2], R[1, 0] + R[0, 1], R[2, 0] + R[0, 2], R[2, 1] - R[1, 2]],
        [R[1, 0] + R[0, 1], R[1, 1] - R[0, 0] - R[2, 2], R[2, 1] + R[1, 2], R[0, 2] - R[2, 0]],
        [R[2, 0] + R[0, 2], R[2, 1] + R[1, 2], R[2, 2] - R[0, 0] - R[1, 1], R[1, 0] - R[0, 1]],
        [R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], R[0, 0] + R[1, 1] + R[2, 2]],
    ]) / 3.0
    w, v = np.linalg.eigh(K)
    x, y, z, s = v[:, -1]
    q = np.array([s, x, y, z])
    return q if s >= 0 else -q


# ---------------------------------------------------------------- frames
@dataclass(frozen=True)
class Frames:
    """The scene sampled at ``nf`` times (what the exporters draw).

    Attributes
    ----------
    time : ndarray, shape (nf,)
        Frame times, s.
    R : ndarray, shape (nf, nshapes, 3, 3)
        ``R_WS``: orientation of every shape frame in the world.
    p : ndarray, shape (nf, nshapes, 3)
        ``p_WS``: origin of every shape frame in the world, m.
    beams : dict of int -> ndarray, shape (nf, nstations, 3)
        Deformed centre line of each beam shape (by shape index), world, m.
    trails : ndarray, shape (nf, ntrails, 3)
        World position of every trail point, m.
    """

    time: np.ndarray
    R: np.ndarray
    p: np.ndarray
    beams: dict[int, np.ndarray] = field(default_factory=dict)
    trails: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))

    def points(self) -> np.ndarray:
        """Every shape origin, beam station and trail point, shape (m, 3), m."""
        parts = [self.p.reshape(-1, 3), self.trails.reshape(-1, 3)]
        parts += [b.reshape(-1, 3) for b in self.beams.values()]
        return np.concatenate(parts)


def _last_at_or_before(time: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``searchsorted(time, t, side="right") - 1`` without copying ``time``
    (a strided column of a possibly huge result array): a vectorised
    bisection touching ``O(len(t) log n)`` elements."""
    n = time.size
    lo = np.full(t.shape, -1, dtype=np.intp)  # invariant: time[lo] <= t (lo = -1: before all)
    hi = np.full(t.shape, n, dtype=np.intp)   # invariant: time[hi] > t  (hi = n: after all)
    while True:
        open_ = hi - lo > 1
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        m = np.where(open_, mid, 0)
        go = open_ & (time[m] <= t)
        lo = np.where(go, mid, lo)
        hi = np.where(open_ & ~go, mid, hi)


# ---------------------------------------------------------------- recording
class Recording:
    """Recorded results of one plant (or of one unit of a co-simulation).

    Parameters
    ----------
    results : ndarray
        Structured result array, ``time`` (s) first.
    plant : Plant
        The plant that produced the results (for ``poses``, ``geometry``,
        ``beam_deflection`` and the state names).
    unit : str, optional
        Unit name prefixing the plant's variables in a co-simulation result
        (``arm`` for ``arm.q[1]``). Found automatically when unambiguous.
    interpolation : {"linear", "hold"}
        Between samples: interpolate the state linearly (then
        ``normalize_state``) or hold the last sample.
    trails : sequence of tuple
        Points to trace: ``(body, point in the body frame, m)`` for a point
        fixed to a body, or ``("beam", shape index, s)`` for the point of a
        beam's deformed centre line at ``s`` m from its origin.
    stations : int
        Points along each beam's centre line.

    Attributes
    ----------
    unit : str or None
        The unit prefix found for the plant's variables (None: unprefixed).
    source : {"states", "poses"}
        Whether poses come from ``plant.poses`` of the recorded states or
        from recorded body poses.

    Raises
    ------
    InputError
        When the results hold neither the plant's states nor recorded poses
        of the bodies that carry shapes.
    """

    def __init__(self, results: np.ndarray, plant: Plant, unit: str | None = None,
                 interpolation: str = "linear", trails: Sequence[tuple[int, Any]] = (),
                 stations: int = 21) -> None:
        self.results = as_results(results)
        self.plant = plant
        self.units: dict[str, str] = {}  # column -> unit, from the result's metadata (open_recording fills it)
        self.time = self.results["time"]
        if interpolation not in ("linear", "hold"):
            raise InputError(f"interpolation {interpolation!r} is not 'linear' or 'hold'")
        self.interpolation = interpolation
        self.shapes: tuple[Shape, ...] = tuple(plant.geometry)
        if not self.shapes:
            raise InputError(f"plant {plant.name!r} has no geometry to draw")
        for i, s in enumerate(self.shapes):
            if s.kind not in KINDS:
                raise InputError(f"plant {plant.name!r}: shape {i} ({s.name!r}) has unknown kind {s.kind!r}; "
                                 f"known: {', '.join(KINDS)}")
        fields = self.results.dtype.names
        state_names = [s.name for s in plant.states]
        self.state_columns, self.state_index, used = self._find_states(fields, unit)
        self.pose_columns = {} if self.state_columns else pose_columns(fields, unit)
        if self.state_columns is None:
            bodies = sorted({s.body for s in self.shapes if s.body != 0})
            missing = [k for k in bodies if k not in self.pose_columns]
            if not self.pose_columns or missing:
                raise InputError(
                    f"cannot place plant {plant.name!r}: the results hold neither its states "
                    f"({_short(state_names)}) nor its body poses; record the states (mbfmu simulate "
                    "--record all, or record=['UNIT.states.NAME', ...] for a plant FMU)"
                    + (f"; {self._partial}" if getattr(self, "_partial", None) else ""))
        self.source = "states" if self.state_columns else "poses"
        if self.state_columns:
            first = self.state_columns[0]
            self.unit = first[: -len(used) - 1] or None if first != used else None
        else:
            self.unit = unit if unit is not None else next(
                (_POSE_FIELD.match(pc[0])["unit"] for pc, _ in self.pose_columns.values()), None)
        check_numeric(self.results, self.state_columns or [c for pc, qc in self.pose_columns.values() for c in pc + qc])
        self.nbodies = (1 + max([s.body for s in self.shapes] + [0] + list(self.pose_columns))
                        if self.source == "poses" else None)
        self.trail_points = [self._trail(tr) for tr in trails]
        self.stations = np.linspace(0.0, 1.0, max(2, int(stations)))
        self.has_deflection = self.source == "states" and hasattr(plant, "beam_deflection")

    def _find_states(self, fields: Sequence[str], unit: str | None
                     ) -> tuple[list[str] | None, np.ndarray | None, str]:
        """Result columns holding the plant's state, or the part of it that
        fixes the configuration: ``(columns, state indices, first name)``.

        Tried in order: every state as the FMU locals ``states.<name>``, or
        under its own name (outputs named like the states); then only the
        configuration states (:func:`pose_state_names`), likewise. The states
        not recorded keep their ``initial_state()`` values (velocities do not
        move a replay).
        """
        names = [s.name for s in self.plant.states]
        if not names:
            return None, None, ""
        wanted = [names, [n for n in pose_state_names(self.plant) if n in names]]
        for subset in wanted:
            if not subset:
                continue
            for pre in ("states.", ""):
                used = [pre + n for n in subset]
                try:
                    cols = find_columns(fields, used, unit, "states")
                except PartialColumns as exc:
                    cols = None  # only part of them: try the next way
                    self._partial = getattr(self, "_partial", None) or str(exc)
                if cols is not None:
                    return cols, np.array([names.index(n) for n in subset], dtype=np.intp), used[0]
        return None, None, ""

    # -- basic queries ------------------------------------------------------
    @property
    def t0(self) -> float:
        """First recorded time, s."""
        return float(self.time[0])

    @property
    def t1(self) -> float:
        """Last recorded time, s."""
        return float(self.time[-1])

    def column(self, name: str) -> np.ndarray:
        """A recorded variable by field name (a view, no copy)."""
        if name not in self.results.dtype.names:
            raise unknown_name(f"results have no variable {name!r}", name, self.results.dtype.names)
        return self.results[name]

    def _weights(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample indices ``i0, i1`` and weight ``a`` of ``i1`` for times ``t``."""
        n = self.time.size
        i0 = np.clip(_last_at_or_before(self.time, t), 0, n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        if self.interpolation == "hold":
            return i0, i1, np.zeros(t.shape)
        t0, t1 = self.time[i0], self.time[i1]
        dt = t1 - t0
        a = np.where(dt > 0, (t - t0) / np.where(dt > 0, dt, 1.0), 0.0)
        return i0, i1, np.clip(a, 0.0, 1.0)

    def _gather(self, cols: Sequence[str], i0, i1, a) -> np.ndarray:
        x0 = np.stack([np.asarray(self.results[c][i0], dtype=float) for c in cols], axis=-1)
        x1 = np.stack([np.asarray(self.results[c][i1], dtype=float) for c in cols], axis=-1)
        return x0 + a[..., None] * (x1 - x0)

    def states_at(self, times: Any) -> np.ndarray:
        """Recorded states at ``times`` (s), shape (len(times), nstates)."""
        if self.state_columns is None:
            raise InputError(f"results do not hold the states of plant {self.plant.name!r} (only body poses)")
        t = np.atleast_1d(np.asarray(times, dtype=float))
        recorded = self._gather(self.state_columns, *self._weights(t))
        if recorded.shape[1] == len(self.plant.states):
            X = recorded
        else:
            X = np.tile(np.asarray(self.plant.initial_state(), dtype=float), (t.size, 1))
            X[:, self.state_index] = recorded
        if self.interpolation == "linear":
            X = np.array([self.plant.normalize_state(x) for x in X])
        return X

    def state_at(self, t: float) -> np.ndarray:
        """The recorded state at time ``t`` (s), shape (nstates,)."""
        return self.states_at([t])[0]

    def poses_at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """World pose of every body at ``t`` (s): ``R_WB (nb, 3, 3)``, ``p_WB (nb, 3)`` m."""
        if self.source == "states":
            R, p = self.plant.poses(self.state_at(t))
            return np.asarray(R, dtype=float), np.asarray(p, dtype=float)
        i0, i1, a = self._weights(np.array([float(t)]))
        R = np.tile(np.eye(3), (self.nbodies, 1, 1))
        p = np.zeros((self.nbodies, 3))
        for k, (pc, qc) in self.pose_columns.items():
            p[k] = self._gather(pc, i0, i1, a)[0]
            q0 = self._gather(qc, i0, i0, a)[0]
            q1 = self._gather(qc, i1, i1, a)[0]
            if q0 @ q1 < 0:
                q1 = -q1
            R[k] = quat_to_matrix((1 - a[0]) * q0 + a[0] * q1)
        return R, p

    def scene_at(self, t: float) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray], np.ndarray]:
        """Everything drawn at time ``t`` (s).

        Returns
        -------
        R_WS : ndarray, shape (nshapes, 3, 3)
        p_WS : ndarray, shape (nshapes, 3), m
        beams : dict of int -> ndarray, shape (nstations, 3), m (world)
        trails : ndarray, shape (ntrails, 3), m (world)
        """
        R_WB, p_WB = self.poses_at(t)
        x = self.state_at(t) if self.has_deflection else None
        return self._place(R_WB, p_WB, x)

    def _place(self, R_WB, p_WB, x):
        nb = R_WB.shape[0]
        ns = len(self.shapes)
        R_WS = np.empty((ns, 3, 3))
        p_WS = np.empty((ns, 3))
        beams = {}
        for i, s in enumerate(self.shapes):
            if not 0 <= s.body < nb:
                raise InputError(f"plant {self.plant.name!r}: shape {i} ({s.name!r}) is on body {s.body}, "
                                 f"but poses() returned {nb} bodies")
            R_BS = np.asarray(s.R, dtype=float)
            R_WS[i] = R_WB[s.body] @ R_BS
            p_WS[i] = R_WB[s.body] @ np.asarray(s.p, dtype=float) + p_WB[s.body]
            if s.kind == "beam":
                L = float(s.size[1])
                st = self.stations * L
                local = np.zeros((st.size, 3))
                local[:, 0] = st
                if x is not None:
                    d = np.asarray(self.plant.beam_deflection(x, i, st), dtype=float)
                    if d.shape != (st.size, 3):
                        raise InputError(f"plant {self.plant.name!r}: beam_deflection returned shape {d.shape}, "
                                         f"expected ({st.size}, 3)")
                    local = local + d
                beams[i] = local @ R_WS[i].T + p_WS[i]
        trails = np.empty((len(self.trail_points), 3))
        for j, (b, r) in enumerate(self.trail_points):
            if b == "beam":
                i, st = r
                local = np.array([st, 0.0, 0.0])
                if x is not None:
                    local = local + np.asarray(self.plant.beam_deflection(x, i, np.array([st])), float).reshape(3)
                trails[j] = R_WS[i] @ local + p_WS[i]
            elif 0 <= b < nb:
                trails[j] = R_WB[b] @ r + p_WB[b]
            else:
                raise InputError(f"trail on body {b}: plant {self.plant.name!r} has bodies 0..{nb - 1}")
        return R_WS, p_WS, beams, trails

    def _trail(self, spec: tuple) -> tuple:
        """Validated trail spec: ``(body, r_B (3,))`` or ``("beam", (shape index, s))``."""
        if len(spec) == 3 and spec[0] == "beam":
            i, st = int(spec[1]), float(spec[2])
            if not (0 <= i < len(self.shapes) and self.shapes[i].kind == "beam"):
                raise InputError(f"trail {spec!r}: shape {i} is not a beam of plant {self.plant.name!r}")
            if not 0.0 <= st <= float(self.shapes[i].size[1]):
                raise InputError(f"trail {spec!r}: station {st} m is outside the beam's length "
                                 f"{self.shapes[i].size[1]} m")
            return "beam", (i, st)
        if len(spec) != 2:
            raise InputError(f"trail {spec!r} is neither (body, (x, y, z)) nor ('beam', shape index, s)")
        return int(spec[0]), np.asarray(spec[1], dtype=float).reshape(3)

    def frames(self, times: Any) -> Frames:
        """The scene at each of ``times`` (s); memory ``O(len(times))``."""
        times = np.atleast_1d(np.asarray(times, dtype=float))
        nf, ns = times.size, len(self.shapes)
        R = np.empty((nf, ns, 3, 3))
        p = np.empty((nf, ns, 3))
        beams = {i: np.empty((nf, self.stations.size, 3)) for i, s in enumerate(self.shapes) if s.kind == "beam"}
        trails = np.empty((nf, len(self.trail_points), 3))
        X = self.states_at(times) if self.source == "states" else None
        for k, t in enumerate(times):
            if X is not None:
                R_WB, p_WB = self.plant.poses(X[k])
                R_WB, p_WB = np.asarray(R_WB, dtype=float), np.asarray(p_WB, dtype=float)
            else:
                R_WB, p_WB = self.poses_at(t)
            R[k], p[k], b, trails[k] = self._place(R_WB, p_WB, X[k] if self.has_deflection else None)
            for i, pts in b.items():
                beams[i][k] = pts
        return Frames(times, R, p, beams, trails)

    def values_at(self, name: str, times: Any) -> np.ndarray:
        """Recorded variable ``name`` at ``times`` (s), interpolated like the state."""
        self.column(name)  # raises naming the variable when it is not recorded
        t = np.atleast_1d(np.asarray(times, dtype=float))
        return self._gather([name], *self._weights(t))[:, 0]

    def resolve(self, name: str) -> str:
        """Field name of a variable given as recorded (``arm.q[1]``) or as
        the plant names it (``q[1]``, found under a unit prefix)."""
        fields = self.results.dtype.names
        if name in fields:
            return name
        hits = [f for f in fields if f.endswith("." + name)]
        # a unit's output and its state of one name (rigid_arm.q[2], rigid_arm.states.q[2]) are one
        # quantity: the output is taken
        outputs = {f[:-len(name) - 1] for f in hits if not f.endswith(".states." + name)}
        hits = [f for f in hits if not (f.endswith(".states." + name)
                                        and f[:-len(".states." + name)] in outputs)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise InputError(f"signal {name!r} is recorded for several units: {', '.join(hits)}")
        raise InputError(f"results have no signal {name!r}; recorded: {', '.join(fields[1:12])}"
                         f"{', ...' if len(fields) > 12 else ''}")

    def unit_of(self, name: str) -> str:
        """Unit of a recorded variable: as the result's metadata states it
        (:attr:`units`), else as the plant's signal of that name does; ``"1"``
        when neither says."""
        col = self.resolve(name)
        if self.units.get(col):
            return str(self.units[col])
        bare = col[len(self.unit) + 1:] if self.unit and col.startswith(self.unit + ".") else col
        bare = bare[len("states."):] if bare.startswith("states.") else bare
        for sig in (*self.plant.states, *self.plant.outputs, *self.plant.inputs, *self.plant.parameters):
            if sig.name == bare:
                return sig.unit
        return "1"

    def _repr_html_(self) -> str:
        """The HTML replay inline (Jupyter shows it in the cell's output)."""
        import html as _html

        from .html import page_html
        page = page_html(self, max_frames=600, autoplay=False)
        return (f'<iframe srcdoc="{_html.escape(page, quote=True)}" style="width: 100%; height: 480px; '
                'border: 1px solid #ccc" sandbox="allow-scripts"></iframe>')

    def signal_names(self) -> list[str]:
        """All recorded variables except ``time``."""
        return list(self.results.dtype.names[1:])
