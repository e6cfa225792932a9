"""The URDF's ``<visual>`` elements as the viewer's shapes.

Each ``<visual>`` of a link becomes :class:`~mbfmu.plant.Shape` objects on
that link's body, placed by the visual's ``<origin>``:

* ``<box size>``, ``<cylinder radius length>`` (axis z, as in URDF) and
  ``<sphere radius>`` become the viewer's primitives;
* ``<mesh filename scale>`` (STL, OBJ or DAE read by ``trimesh``; DAE
  through ``pycollada``; found and checked by :mod:`~mbfmu.plant.urdf_files`) becomes ``kind="mesh"`` shapes, one per part of the
  file with its own colour, vertices scaled to m in the shape frame.

Colours: the visual's ``<material><color rgba>`` (inline or by name from a
top-level ``<material>``), else the mesh file's own colour, else grey.

All meshes of a robot are decimated together (quadric decimation, the
``fast-simplification`` package) to at most ``mesh_faces`` triangles, shared
out by surface area, so a standalone HTML replay stays a few hundred kB.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

import numpy as np

from ..dynamics.urdf import parse_floats, parse_origin
from ..errors import require_extra
from .contract import Shape
from .urdf_files import usable_mesh

DEFAULT_COLOR = "#a0a0a8"
MIN_FACES = 24  # the smallest mesh part keeps at least this many triangles


def _floats(text: str | None, n: int, default: Sequence[float], where: str) -> np.ndarray:
    if text is not None and n == 3 and len(text.split()) == 1:
        text = " ".join([text.strip()] * 3)  # <mesh scale="s"> means s on every axis
    return parse_floats(text, n, tuple(default), where)


def _hex(rgba: np.ndarray) -> str:
    r, g, b = (int(round(255 * float(np.clip(c, 0, 1)))) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def _material_color(mat: ET.Element | None, named: dict[str, str], where: str) -> str | None:
    if mat is None:
        return None
    c = mat.find("color")
    if c is not None and c.get("rgba"):
        return _hex(_floats(c.get("rgba"), 4, (0.6, 0.6, 0.6, 1), f"{where} rgba"))
    return named.get(mat.get("name", ""))


def decimate(V: np.ndarray, F: np.ndarray, faces: int) -> tuple[np.ndarray, np.ndarray]:
    """``(V, F)`` reduced to at most about ``faces`` triangles.

    Quadric edge collapse first; where that stalls (open borders, many small
    pieces) vertex clustering on a grid coarse enough to meet the budget.
    """
    if len(F) <= faces:
        return V, F
    fast_simplification = require_extra("fast_simplification", "simplifying URDF meshes")
    Vd, Fd = fast_simplification.simplify(V.astype(np.float32), F.astype(np.int32),
                                          target_reduction=1.0 - faces / len(F))
    Vd, Fd = (np.asarray(Vd, dtype=float), np.asarray(Fd, dtype=np.int64)) if len(Fd) else (V, F)
    if len(Fd) > 1.25 * faces:
        Vd, Fd = _cluster(Vd, Fd, faces)
    return Vd, Fd


def _cluster(V: np.ndarray, F: np.ndarray, faces: int) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering: merge the vertices in each grid cell (bisection on
    the cell size until at most ``faces`` triangles remain)."""
    extent = float(np.ptp(V, axis=0).max()) or 1.0
    lo, hi = 0.0, extent / 4  # a 4-cell grid always meets any sensible budget
    best = None
    for _ in range(16):
        cell = (lo + hi) / 2 if best is not None else hi
        keys = np.floor((V - V.min(0)) / cell).astype(np.int64)
        _, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        counts = np.bincount(inv)
        Vc = np.stack([np.bincount(inv, V[:, k]) / counts for k in range(3)], axis=1)
        Fc = inv[F]
        Fc = np.unique(Fc[(Fc[:, 0] != Fc[:, 1]) & (Fc[:, 1] != Fc[:, 2]) & (Fc[:, 0] != Fc[:, 2])], axis=0)
        if len(Fc) <= faces:
            hi, best = cell, (Vc, Fc)
        else:
            lo = cell
    return best if best is not None and len(best[1]) else (V, F)


def _area(V: np.ndarray, F: np.ndarray) -> float:
    t = V[F]
    return float(np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1).sum() / 2)


_CACHE: dict[tuple, tuple[Shape, ...]] = {}


def visual_shapes(urdf: str | os.PathLike, model, package_dirs: Sequence[str | os.PathLike] = (),
                  mesh_faces: int = 12000, skip_bad_meshes: bool = False) -> tuple[Shape, ...]:
    """The shapes of ``urdf``'s visuals on the bodies of ``model`` (read from the same file).

    Parameters
    ----------
    urdf : path or str
        URDF file, or its XML text (then mesh paths resolve from the working folder).
    model : mbfmu.dynamics.Model
        The model read from it (gives each link's body index; a ``world``
        root link is body 0).
    package_dirs : sequence of path
        Extra folders for ``package://`` URIs.
    mesh_faces : int
        Triangle budget of all meshes together.
    skip_bad_meshes : bool
        Drop (with a warning) a mesh that :mod:`~mbfmu.plant.urdf_files`
        refuses, instead of raising :class:`~mbfmu.plant.urdf_files.BadMesh`.
    """
    text = str(urdf)
    key = (text if text.lstrip().startswith("<") else (str(Path(urdf).resolve()), Path(urdf).stat().st_mtime_ns),
           model.body_names, tuple(map(str, package_dirs)), int(mesh_faces), bool(skip_bad_meshes))
    if key not in _CACHE:  # reading and decimating meshes takes seconds; a replay builds its plant more than once
        _CACHE[key] = _visual_shapes(text, urdf, model, package_dirs, mesh_faces, skip_bad_meshes)
    return _CACHE[key]


def _visual_shapes(text: str, urdf, model, package_dirs, mesh_faces: int, skip_bad_meshes: bool
                   ) -> tuple[Shape, ...]:
    if text.lstrip().startswith("<"):
        root, base = ET.fromstring(text), None
    else:
        root, base = ET.parse(urdf).getroot(), Path(urdf).parent
    named = {}
    for m in root.findall("material"):
        col = _material_color(m, {}, f"material {m.get('name')!r}")
        if col and m.get("name"):
            named[m.get("name")] = col
    prims: list[Shape] = []
    pending: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, str, str]] = []
    for link in root.findall("link"):
        lname = link.get("name")
        if lname not in model.body_names:
            continue
        body = model.body_names.index(lname)
        for k, vis in enumerate(link.findall("visual")):
            where = f"link {lname!r} visual {k}"
            R, p = parse_origin(vis, where)
            color = _material_color(vis.find("material"), named, where)
            geom = vis.find("geometry")
            g = next(iter(geom), None) if geom is not None else None
            if g is None:
                continue
            label = vis.get("name") or lname
            if g.tag == "box":
                size = tuple(_floats(g.get("size"), 3, (0, 0, 0), f"{where} box size"))
                prims.append(Shape(body, "box", size, R, p, color or DEFAULT_COLOR, label))
            elif g.tag == "cylinder":
                size = (float(_floats(g.get("radius"), 1, (0,), where)[0]),
                        float(_floats(g.get("length"), 1, (0,), where)[0]))
                prims.append(Shape(body, "cylinder", size, R, p, color or DEFAULT_COLOR, label))
            elif g.tag == "sphere":
                prims.append(Shape(body, "sphere", (float(_floats(g.get("radius"), 1, (0,), where)[0]),), R, p,
                                   color or DEFAULT_COLOR, label))
            elif g.tag == "mesh":
                found = usable_mesh(g.get("filename", ""), base, package_dirs, skip_bad_meshes, where)
                if found is None:
                    continue
                scale = _floats(g.get("scale"), 3, (1, 1, 1), f"{where} mesh scale")
                for V, F, own in found[1]:
                    pending.append((body, V * scale, F, R, p, color or own or DEFAULT_COLOR, label))
    if not pending:
        return tuple(prims)
    areas = np.array([max(_area(V, F), 1e-12) for _, V, F, *_ in pending])
    share = max(int(mesh_faces), MIN_FACES * len(pending)) * areas / areas.sum()
    meshes = []
    for (body, V, F, R, p, color, label), n in zip(pending, share):
        Vd, Fd = decimate(V, F, max(MIN_FACES, int(n)))
        meshes.append(Shape(body, "mesh", (float(np.linalg.norm(Vd, axis=1).max()),), R, p, color, label,
                            mesh=(Vd, Fd)))
    return tuple(prims) + tuple(meshes)
