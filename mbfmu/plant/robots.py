"""Robots by name: the URDF files that the ``example-robot-data`` package installs.

``example-robot-data`` (PyPI; BSD-3-Clause, from LAAS-CNRS' Gepetto team)
ships the URDFs of about 60 robots under ``share/example-robot-data/robots``.
:func:`robot_names` names each by its file (``panda``, ``solo12``, ``tiago``),
without a ``_robot`` suffix (``ur5`` for ``ur5_robot.urdf``; the full stem is
accepted too); a name two packages share is given to the first package in
sorted order and the other becomes ``<package>_<name>`` (``anymal`` is
ANYmal B, ``anymal_c_anymal`` ANYmal C, also reachable as ``anymal_c``).
Robots whose base moves (legged robots, humanoids, aerial vehicles) get
``floating_base=True`` by default (:data:`FLOATING`).
"""
from __future__ import annotations

import functools
import importlib.metadata
from pathlib import Path

from ..errors import InputError, extra_hint, unknown_name

# the URDF files (stems, lower case, "-" and "." as "_") of robots whose base is not fixed to the world:
# legged robots, humanoids, aerial vehicles
FLOATING = frozenset({
    "a1", "alex_nub_hands", "alex_psyonic_hands", "alex_sake_hands", "alexander_v1_lowerbodyonly", "anymal",
    "anymal_kinova", "b1", "b1_z1", "bolt", "borinot_flying_arm_2", "centauro", "g1_29dof_rev_1_0",
    "g1_29dof_with_hand_rev_1_0", "go1", "go2", "hextilt_flying_arm_5", "human", "hyq_no_sensors", "icub",
    "icub_reduced", "iris", "iris_simple", "laikago", "quadrotor_base", "quadruped", "romeo",
    "romeo_laas_small", "romeo_small", "simple_humanoid", "simple_humanoid_classical", "solo", "solo12",
    "talos_full_v2", "talos_full_v2_box", "talos_reduced", "talos_reduced_box", "talos_reduced_corrected",
})


NOT_INSTALLED = ("robots by name come from the example-robot-data package, which is not installed "
                 f"({extra_hint('example_robot_data')})")


def _robots_folder() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        parts = f.parts
        if "example-robot-data" in parts and "robots" in parts and f.suffix == ".urdf":
            i = parts.index("robots")
            return Path(dist.locate_file(Path(*parts[:i + 1]))).resolve()
    return None


def _name(stem: str) -> str:
    return stem.lower().replace("-", "_").replace(".", "_")


def _package_name(package: str) -> str:
    return _name(package.replace("_description", "").replace("_simple", ""))


@functools.cache
def robot_catalog() -> dict[str, Path]:
    """Robot name -> URDF file of the installed example-robot-data (empty if not installed)."""
    folder = _robots_folder()
    if folder is None:
        return {}
    # a URDF without links is a placeholder (ur3.urdf, an empty xacro output)
    files = [f for f in sorted(folder.glob("*/*/*.urdf")) if "<link" in f.read_text(errors="replace")]
    out: dict[str, Path] = {}
    for f in files:
        name = _name(f.stem)
        out[f"{_package_name(f.parts[-3])}_{name}" if name in out else name] = f
    aliases: dict[str, Path] = {}
    for name, f in out.items():
        package = f.parts[-3]
        candidates = [name[:-len("_robot")]] if name.endswith("_robot") else []
        if sum(g.parts[-3] == package for g in files) == 1:  # a package of one robot: its name too
            candidates.append(_package_name(package))
        for alias in candidates:
            if alias not in out and alias not in aliases:
                aliases[alias] = f
    return {**out, **aliases}


def robot_names() -> list[str]:
    """The robots' names, sorted."""
    return sorted(robot_catalog())


def is_robot(name: str) -> bool:
    """True when ``name`` is a robot of the installed example-robot-data."""
    return str(name).lower() in robot_catalog()


def robot_urdf(name: str) -> Path:
    """The URDF file of robot ``name``.

    Raises
    ------
    InputError
        example-robot-data is not installed.
    UnknownNameError
        No such robot (with the closest names).
    """
    catalog = robot_catalog()
    if not catalog:
        raise InputError(f"robot {name!r}: {NOT_INSTALLED}")
    key = str(name).lower()
    if key not in catalog:
        raise unknown_name(f"unknown robot {name!r}", name, robot_names(), "robots in example-robot-data",
                           "mbfmu list --robots")
    return catalog[key]


def robot_options(name: str) -> dict:
    """The plant options a robot gets by default (``floating_base=True`` for a moving base)."""
    return {"floating_base": True} if _name(robot_urdf(name).stem) in FLOATING else {}
