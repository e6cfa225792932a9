"""The files behind a URDF: finding its meshes (confined), reading them, bundling a robot for an FMU.

A URDF is data from someone else: reading it never reads outside the folders
it may use. A URDF names its meshes by ``package://PKG/path``, ``file://path``
or a path; :func:`resolve_uri` finds the file and refuses
(:class:`BadMesh`) any that resolves (symbolic links followed) outside

* for ``package://PKG/rest``: the folder of package ``PKG``, looked up in
  ``package_dirs`` (each a folder holding ``PKG/`` or being ``PKG``
  itself), in ``$ROS_PACKAGE_PATH`` and ``$AMENT_PREFIX_PATH``
  (``share/PKG``), in the share folder of the installed
  ``example-robot-data``, and in the folders above the URDF file that are
  ROS packages (hold a ``package.xml``: the layout
  ``.../PKG/urdf/robot.urdf``, or ``PKG/`` or ``share/PKG/`` beside it);
* for ``file://`` and plain paths: the URDF's own folder, or a ROS package
  folder above it (or one of ``package_dirs``) that contains the URDF.

:func:`usable_mesh` accepts a file only if it is a mesh (STL, OBJ or DAE,
at most :data:`MAX_MESH_BYTES`, :func:`check_mesh_file`) that parses into
triangles (:func:`mesh_parts`); a COLLADA file with a document type
declaration (entities) is refused unread.

:func:`bundle` copies a URDF and every mesh its visuals use into a folder
with the mesh URIs rewritten as relative paths, so that the copy (inside an
FMU's resources) no longer needs the original package; a bad mesh is
refused by name, or, with ``skip_bad_meshes``, dropped with a warning.
"""
from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ModelError, option_hint, require_extra

_PACKAGE = re.compile(r"^package://([^/]+)/(.*)$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
MESH_TYPES = (".stl", ".obj", ".dae")
MAX_MESH_BYTES = 256 * 2 ** 20  # a robot's visual mesh is a few MB; this bounds what a URDF makes us read
_log = logging.getLogger("mbfmu.plant")


class BadMesh(ModelError):
    """A URDF mesh that is refused: outside the folders the URDF may use, or not a readable mesh."""


def _skip_hint() -> str:
    return option_hint("skip_bad_meshes=True", "--skip-bad-meshes")


def _package_dir_hint() -> str:
    return option_hint("package_dirs=[...]", "--package-dir DIR")


@functools.cache
def installed_share_dirs() -> tuple[Path, ...]:
    """Share folders of installed Python distributions that carry ROS-style
    packages (``example-robot-data``'s ``cmeel.prefix/share``)."""
    out = []
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return ()
    for f in dist.files or ():
        if f.name == "package.xml" and f.parent.parent.name == "share":
            out.append(Path(dist.locate_file(f)).resolve().parents[1])
    return tuple(dict.fromkeys(out))


def _is_package(d: Path) -> bool:
    return (d / "package.xml").is_file()


def _package_roots(pkg: str, urdf_dir: Path | None, package_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    """Candidate folders that are package ``pkg``, most specific first."""
    roots: list[Path] = []
    for d in package_dirs:
        d = Path(d)
        roots += [d / pkg, d] if d.name != pkg else [d]
    for var in ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"):
        for d in filter(None, os.environ.get(var, "").split(os.pathsep)):
            roots += [Path(d) / pkg, Path(d) / "share" / pkg]
    roots += [share / pkg for share in installed_share_dirs()]
    if urdf_dir is not None:
        for up in [urdf_dir, *urdf_dir.parents]:
            near = [up] if up.name == pkg else [up / pkg, up / "share" / pkg]
            roots += [d for d in near if _is_package(d)]
    return roots


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _local_roots(urdf_dir: Path | None, package_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    """Folders a relative or ``file://`` mesh path may resolve into: the URDF's
    own, and the package folders (found above it, or given) that contain it."""
    base = (urdf_dir if urdf_dir is not None else Path.cwd()).resolve()
    roots = [base] + [up for up in base.parents if _is_package(up)]
    roots += [Path(d).resolve() for d in package_dirs if _inside(base, Path(d).resolve())]
    return roots


def resolve_uri(uri: str, urdf_dir: str | os.PathLike | None = None,
                package_dirs: Sequence[str | os.PathLike] = ()) -> Path:
    """The file a URDF's mesh ``filename`` names, resolved (symbolic links
    followed) inside the folders the URDF may use (see the module docstring).

    Parameters
    ----------
    uri : str
        ``package://PKG/path``, ``file:///abs/path`` or a (relative) path.
    urdf_dir : path, optional
        Folder of the URDF file (relative paths and the package search);
        ``None`` for URDF text (then the working folder).
    package_dirs : sequence of path
        Extra folders to look for packages in.

    Raises
    ------
    BadMesh
        The path leaves its package folder or the URDF's folder, or uses a
        scheme other than ``package://`` and ``file://``.
    ModelError
        The file cannot be found; the message lists where it was looked for.
    """
    base = Path(urdf_dir) if urdf_dir is not None else None
    if not uri:
        raise BadMesh("a <mesh> has no filename")
    m = _PACKAGE.match(uri)
    if m:
        pkg, rest = m.groups()
        tried = []
        for root in _package_roots(pkg, base, package_dirs):
            if not root.is_dir():
                tried.append(str(root))
                continue
            root = root.resolve()
            cand = (root / rest).resolve()
            if not _inside(cand, root):
                raise BadMesh(f"mesh {uri!r} leaves the folder of package {pkg!r} ({root}); refused")
            if cand.is_file():
                return cand
            tried.append(str(root))
        raise ModelError(f"mesh {uri!r}: package {pkg!r} not found (looked in {', '.join(tried[:6])}"
                         f"{', ...' if len(tried) > 6 else ''}); pass {_package_dir_hint()} or set "
                         "ROS_PACKAGE_PATH")
    scheme = _SCHEME.match(uri)
    if scheme and scheme.group(1).lower() != "file":
        raise BadMesh(f"mesh {uri!r}: the {scheme.group(1)}:// scheme is not a file; refused")
    path = Path(uri[len("file://"):] if scheme else uri)
    if not path.is_absolute():
        path = (base if base is not None else Path.cwd()) / path
    cand = path.resolve()
    roots = _local_roots(base, package_dirs)
    if not any(_inside(cand, r) for r in roots):
        raise BadMesh(f"mesh {uri!r} resolves outside the URDF's folder ({roots[0]}); refused")
    if not cand.is_file():
        raise ModelError(f"mesh {uri!r}: file {str(cand)!r} does not exist")
    return cand


def mesh_parts(path: Path) -> list[tuple[np.ndarray, np.ndarray, str | None]]:
    """Triangle parts of a mesh file in its own frame: ``(V (n, 3), F (m, 3), colour)``.

    Read from the file's bytes alone (files it refers to, such as OBJ
    materials or textures, are not opened); the file must pass
    :func:`check_mesh_file`.

    Raises
    ------
    BadMesh
        The file cannot be read as its type.
    """
    trimesh = require_extra("trimesh", "reading URDF meshes")
    check_mesh_file(path)
    if path.suffix.lower() == ".dae":
        require_extra("collada", "reading COLLADA (.dae) meshes")
    try:
        with open(path, "rb") as f:
            loaded = trimesh.load(f, file_type=path.suffix.lower()[1:])
    except Exception as exc:  # trimesh raises many kinds for unreadable files
        raise BadMesh(f"mesh {str(path)!r} cannot be read as {path.suffix.upper()[1:]}: "
                      f"{type(exc).__name__}: {exc}") from None
    meshes = loaded.dump() if isinstance(loaded, trimesh.Scene) else [loaded]
    parts = []
    for m in meshes:
        if not isinstance(m, trimesh.Trimesh) or len(m.faces) == 0:
            continue
        m.merge_vertices(merge_tex=True, merge_norm=True)  # shared vertices let the decimation collapse edges
        parts.append((np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.int64), _mesh_color(m)))
    return parts


def _mesh_color(m) -> str | None:
    vis = m.visual
    try:
        if getattr(vis, "kind", None) == "texture" or hasattr(vis, "material"):
            rgba = np.asarray(vis.material.main_color, dtype=float) / 255.0
        else:
            rgba = np.asarray(vis.main_color, dtype=float) / 255.0
    except Exception:  # a visual without any colour information
        return None
    r, g, b = (int(round(255 * float(np.clip(c, 0, 1)))) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def check_mesh_file(path: Path) -> None:
    """Refuse (:class:`BadMesh`) a file that is not a mesh type this reads,
    is larger than :data:`MAX_MESH_BYTES`, or is a COLLADA file declaring a
    document type (entities), before anything parses it."""
    kind = path.suffix.lower()
    if kind not in MESH_TYPES:
        raise BadMesh(f"{path.name!r} is not a mesh file (STL, OBJ or DAE); refused")
    size = path.stat().st_size
    if size > MAX_MESH_BYTES:
        raise BadMesh(f"mesh {path.name!r} has {size} bytes, more than the {MAX_MESH_BYTES} a mesh may have")
    if kind == ".dae":
        with open(path, "rb") as f:
            head = f.read(4096).lower()
        if b"<!doctype" in head or b"<!entity" in head:
            raise BadMesh(f"mesh {path.name!r} declares a document type (entities); a COLLADA file needs none")


def _visual_meshes(root: ET.Element) -> list[tuple[ET.Element, ET.Element, ET.Element, str]]:
    """``(link, visual, mesh, where)`` for every mesh of a link's visuals."""
    out = []
    for link in root.findall("link"):
        for k, vis in enumerate(link.findall("visual")):
            for mesh in vis.iter("mesh"):
                out.append((link, vis, mesh, f"link {link.get('name')!r} visual {k}"))
    return out


def usable_mesh(uri: str, urdf_dir: Path | None, package_dirs: Sequence[str | os.PathLike],
                skip_bad_meshes: bool, where: str) -> tuple[Path, list] | None:
    """The mesh file ``uri`` names and its triangle parts (:func:`mesh_parts`),
    or None when it is bad and ``skip_bad_meshes`` (a warning then names it).

    Raises
    ------
    BadMesh, ModelError
        Naming ``where``, when the mesh is refused or not found (and not skipped).
    """
    try:
        path = resolve_uri(uri, urdf_dir, package_dirs)
        parts = mesh_parts(path)
        if not parts:
            raise BadMesh(f"mesh {path.name!r} holds no triangles")
        return path, parts
    except ModelError as exc:
        if skip_bad_meshes:
            _log.warning(f"mbfmu: dropped the mesh of {where}: {exc}")
            return None
        hint = f" (or pass {_skip_hint()} to drop it)" if isinstance(exc, BadMesh) else ""
        raise type(exc)(f"{where}: {exc}{hint}") from None


def bundle(urdf: str | os.PathLike, dest: str | os.PathLike,
           package_dirs: Sequence[str | os.PathLike] = (), skip_bad_meshes: bool = False) -> Path:
    """Copy ``urdf`` and its visual meshes into folder ``dest``.

    The copy is ``dest/<name>.urdf`` with every mesh ``filename`` rewritten to
    ``meshes/<k>_<file name>`` next to it. Collision geometry and any other
    element naming a mesh outside the links' visuals are dropped (neither the
    dynamics nor the viewer reads them). Each mesh is resolved and checked
    (:func:`usable_mesh`); a bad one is refused, or with
    ``skip_bad_meshes`` its visual is dropped with a warning. Returns the path
    of the copied URDF.
    """
    src = Path(urdf)
    try:
        tree = ET.parse(src)
    except (OSError, ET.ParseError) as exc:
        raise ModelError(f"cannot read URDF {str(src)!r}: {exc}") from None
    root = tree.getroot()
    for link in root.findall("link"):
        for col in link.findall("collision"):
            link.remove(col)
    visual = _visual_meshes(root)
    keep = {id(mesh) for _, _, mesh, _ in visual}
    parents = {child: parent for parent in root.iter() for child in parent}
    for mesh in list(root.iter("mesh")):
        if id(mesh) not in keep:
            parents[mesh].remove(mesh)
    dest = Path(dest)
    (dest / "meshes").mkdir(parents=True, exist_ok=True)
    copied: dict[Path, str] = {}
    for link, vis, mesh, where in visual:
        found = usable_mesh(mesh.get("filename", ""), src.parent, package_dirs, skip_bad_meshes, where)
        if found is None:
            if vis in list(link):
                link.remove(vis)
            continue
        path = found[0]
        if path not in copied:
            copied[path] = f"meshes/{len(copied)}_{path.name}"
            (dest / copied[path]).write_bytes(path.read_bytes())
        mesh.set("filename", copied[path])
    out = dest / f"{src.stem}.urdf"
    tree.write(out, encoding="utf-8", xml_declaration=True)
    return out
