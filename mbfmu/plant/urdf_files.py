"""The files behind a URDF: resolving mesh URIs and bundling a robot for an FMU.

A URDF names its meshes by ``package://PKG/path``, ``file://path``, or a path
relative to the URDF file. :func:`resolve_uri` finds the file:

* ``package://PKG/rest``: ``PKG`` is looked up in ``package_dirs`` (each a
  folder holding ``PKG/`` or being ``PKG`` itself), in ``$ROS_PACKAGE_PATH``
  and ``$AMENT_PREFIX_PATH`` (``share/PKG``), and in the folders above the
  URDF file (the ROS layout ``.../PKG/urdf/robot.urdf`` and installs such as
  ``share/PKG/robots/...``);
* ``file://`` and plain paths: absolute, or relative to the URDF's folder.

:func:`bundle` copies a URDF and every mesh its visuals use into a folder
with the mesh URIs rewritten as relative paths, so that the copy (inside an
FMU's resources) no longer needs the original package.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

from ..errors import ModelError

_PACKAGE = re.compile(r"^package://([^/]+)/(.*)$")


def _package_roots(pkg: str, urdf_dir: Path | None, package_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    """Candidate folders that are package ``pkg``, most specific first."""
    roots: list[Path] = []
    for d in package_dirs:
        d = Path(d)
        roots += [d / pkg, d] if d.name != pkg else [d]
    for var in ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"):
        for d in filter(None, os.environ.get(var, "").split(os.pathsep)):
            roots += [Path(d) / pkg, Path(d) / "share" / pkg]
    if urdf_dir is not None:
        for up in [urdf_dir, *urdf_dir.parents]:
            roots += [up] if up.name == pkg else [up / pkg, up / "share" / pkg]
    return roots


def resolve_uri(uri: str, urdf_dir: str | os.PathLike | None = None,
                package_dirs: Sequence[str | os.PathLike] = ()) -> Path:
    """The file a URDF's ``filename`` attribute names.

    Parameters
    ----------
    uri : str
        ``package://PKG/path``, ``file:///abs/path`` or a (relative) path.
    urdf_dir : path, optional
        Folder of the URDF file (relative paths and the package search).
    package_dirs : sequence of path
        Extra folders to look for packages in.

    Raises
    ------
    ModelError
        The file cannot be found; the message lists where it was looked for.
    """
    base = Path(urdf_dir) if urdf_dir is not None else None
    m = _PACKAGE.match(uri)
    if m:
        pkg, rest = m.groups()
        tried = []
        for root in _package_roots(pkg, base, package_dirs):
            cand = root / rest
            if cand.is_file():
                return cand
            tried.append(str(root))
        raise ModelError(f"mesh {uri!r}: package {pkg!r} not found (looked in {', '.join(tried[:6])}"
                         f"{', ...' if len(tried) > 6 else ''}); pass package_dirs=[...] or set ROS_PACKAGE_PATH")
    path = Path(uri[len("file://"):] if uri.startswith("file://") else uri)
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise ModelError(f"mesh {uri!r}: file {str(path)!r} does not exist")
    return path


def bundle(urdf: str | os.PathLike, dest: str | os.PathLike,
           package_dirs: Sequence[str | os.PathLike] = ()) -> Path:
    """Copy ``urdf`` and its visual meshes into folder ``dest``.

    The copy is ``dest/<name>.urdf`` with every mesh ``filename`` rewritten to
    ``meshes/<k>_<file name>`` next to it. Collision meshes are dropped (the
    dynamics never reads them). Returns the path of the copied URDF.
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
    dest = Path(dest)
    (dest / "meshes").mkdir(parents=True, exist_ok=True)
    copied: dict[Path, str] = {}
    for mesh in root.iter("mesh"):
        uri = mesh.get("filename")
        if not uri:
            continue
        path = resolve_uri(uri, src.parent, package_dirs).resolve()
        if path not in copied:
            copied[path] = f"meshes/{len(copied)}_{path.name}"
            (dest / copied[path]).write_bytes(path.read_bytes())
        mesh.set("filename", copied[path])
    out = dest / f"{src.stem}.urdf"
    tree.write(out, encoding="utf-8", xml_declaration=True)
    return out
