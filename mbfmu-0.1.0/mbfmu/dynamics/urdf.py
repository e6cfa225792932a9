"""URDF import.

Supported: links with ``<inertial>`` (origin xyz/rpy, mass, inertia), joints of
type revolute, continuous (both one angle, rad), prismatic, fixed and floating
(a free joint), with ``<origin>`` and ``<axis>`` (default x). Optional:
``<dynamics damping>`` becomes a joint damper when ``use_damping`` is true;
``<limit lower upper>`` becomes a stiff range limit when ``use_limits`` is true.

Body order: depth-first from the root link, the children of each link visited
in the order of their joint names. This is the order Pinocchio's URDF parser
produces (urdfdom keeps joints in a name-sorted map), so ``q``, ``v`` and
``tau`` of revolute and prismatic joints line up with Pinocchio's for the same
file. The root link is the world frame: it is welded to the world (a fixed
body at the world origin) unless ``floating_base`` is true. A root link named
``world`` (the ROS convention, e.g. ``world -> world_joint -> base_link``) *is*
the world body itself; with ``floating_base`` the free joint then replaces
the single joint hanging from it.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .joints import Fixed, FreeFlyer, Prismatic, Revolute
from .model import JointForce, Model, ModelBuilder
from .spatial import rpy


def parse_floats(text: str | None, n: int, default: tuple, where: str) -> np.ndarray:
    """``n`` finite numbers from a URDF attribute (``default`` when absent); raises naming ``where``."""
    if text is None:
        return np.array(default, dtype=float)
    try:
        vals = np.array([float(t) for t in text.split()], dtype=float)
    except ValueError:
        raise ModelError(f"{where}: {text!r} is not a list of numbers") from None
    if vals.size != n or not np.all(np.isfinite(vals)):
        raise ModelError(f"{where}: expected {n} finite numbers, got {text!r}")
    return vals


def parse_origin(elem, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(R, xyz)`` of an element's ``<origin rpy xyz>`` (identity when absent), m."""
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return np.eye(3), np.zeros(3)
    xyz = parse_floats(o.get("xyz"), 3, (0, 0, 0), f"{where} origin xyz")
    angles = parse_floats(o.get("rpy"), 3, (0, 0, 0), f"{where} origin rpy")
    return rpy(*angles), xyz


def _inertial(link, where: str):
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    R, xyz = parse_origin(inertial, where)
    m_el = inertial.find("mass")
    mass = float(parse_floats(m_el.get("value") if m_el is not None else None, 1, (0.0,), f"{where} mass")[0])
    i_el = inertial.find("inertia")
    I = np.zeros((3, 3))
    if i_el is not None:
        def g(name):
            return float(parse_floats(i_el.get(name), 1, (0.0,), f"{where} inertia {name}")[0])
        I = np.array([[g("ixx"), g("ixy"), g("ixz")],
                      [g("ixy"), g("iyy"), g("iyz")],
                      [g("ixz"), g("iyz"), g("izz")]])
    return mass, xyz, R @ I @ R.T


def load_urdf(path: str | os.PathLike, floating_base: bool = False,
              gravity=(0.0, 0.0, -9.81), use_damping: bool = False,
              use_limits: bool = False) -> Model:
    """Read a URDF file (or a URDF string) into a :class:`Model`.

    Parameters
    ----------
    path : str or PathLike
        File path, or the XML text itself when it starts with ``<``.
    floating_base : bool
        Attach the root link to the world with a free joint instead of welding it.
    gravity : array_like (3,)
        m/s^2, world frame.
    use_damping, use_limits : bool
        Turn ``<dynamics damping>`` and ``<limit lower upper>`` into joint
        force elements (off by default, as in Pinocchio's dynamics).

    Raises
    ------
    ModelError
        Malformed XML, unknown joint type, missing or repeated links, a link
        with two parents, a loop, or non-physical inertia (naming the element).
    """
    return urdf_builder(path, floating_base, gravity, use_damping, use_limits)[0].build()


def read_urdf(path: str | os.PathLike) -> tuple[ET.Element, str]:
    """The ``<robot>`` element of a URDF file (or of URDF text starting with
    ``<``) and a name of its source for messages; raises ModelError."""
    text = str(path)
    try:
        if text.lstrip().startswith("<"):
            root = ET.fromstring(text)
            source = "URDF string"
        else:
            source = str(path)
            if not Path(path).is_file():
                raise ModelError(f"URDF file {source!r} does not exist")
            root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ModelError(f"malformed URDF ({text[:60]!r}...): {exc}") from None
    if root.tag != "robot":
        raise ModelError(f"{source}: root element is <{root.tag}>, expected <robot>")
    return root, source


def urdf_builder(path: str | os.PathLike, floating_base: bool = False, gravity=(0.0, 0.0, -9.81),
                 use_damping: bool = False, use_limits: bool = False,
                 damping_scale: float = 1.0) -> tuple[ModelBuilder, ET.Element]:
    """The :class:`ModelBuilder` of a URDF (as :func:`load_urdf` builds it,
    the URDF's ``<dynamics damping>`` times ``damping_scale``) and its
    ``<robot>`` element, so that a caller can add elements before building."""
    root, source = read_urdf(path)

    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            raise ModelError(f"{source}: a <link> has no name")
        if name in links:
            raise ModelError(f"{source}: link {name!r} is defined twice")
        links[name] = link
    if not links:
        raise ModelError(f"{source}: no <link> elements")

    joints = {}
    child_of = {}
    for j in root.findall("joint"):
        name = j.get("name")
        jtype = j.get("type")
        p_el, c_el = j.find("parent"), j.find("child")
        if not name or p_el is None or c_el is None:
            raise ModelError(f"{source}: joint {name!r} needs a name, a <parent> and a <child>")
        parent, child = p_el.get("link"), c_el.get("link")
        for ln in (parent, child):
            if ln not in links:
                raise ModelError(f"{source}: joint {name!r} refers to unknown link {ln!r}")
        if jtype not in ("revolute", "continuous", "prismatic", "fixed", "floating"):
            raise ModelError(f"{source}: joint {name!r} has unsupported type {jtype!r} "
                             "(supported: revolute, continuous, prismatic, fixed, floating)")
        if name in joints:
            raise ModelError(f"{source}: joint {name!r} is defined twice")
        if child in child_of:
            raise ModelError(f"{source}: link {child!r} has two parent joints "
                             f"({child_of[child]!r} and {name!r}); URDF describes trees only")
        joints[name] = j
        child_of[child] = name

    roots = [ln for ln in links if ln not in child_of]
    if len(roots) != 1:
        raise ModelError(f"{source}: expected exactly one root link, found {roots or 'none (a loop)'}")
    children = {ln: [] for ln in links}
    for name, j in joints.items():
        children[j.find("parent").get("link")].append(name)

    b = ModelBuilder(gravity=gravity, name=root.get("name", "urdf"))
    root_link = roots[0]
    free_joint = None  # the joint a floating base replaces when the root is the world link
    if root_link == "world":
        if floating_base:
            if len(children["world"]) != 1:
                raise ModelError(f"{source}: floating_base needs exactly one joint on the 'world' link, found "
                                 f"{len(children['world'])}")
            free_joint = children["world"][0]
    else:
        mass, com, I = _inertial(links[root_link], f"link {root_link!r}")
        b.add_body(root_link, "world", FreeFlyer() if floating_base else Fixed(), mass, com, I,
                   joint_name="root_joint" if floating_base else root_link)

    stack = [(root_link, jn) for jn in sorted(children[root_link], reverse=True)]
    visited = {root_link}
    while stack:
        parent_link, jname = stack.pop()
        j = joints[jname]
        child = j.find("child").get("link")
        if child in visited:
            raise ModelError(f"{source}: link {child!r} is reached twice (a loop)")
        visited.add(child)
        where = f"joint {jname!r}"
        R, xyz = parse_origin(j, where)
        axis_el = j.find("axis")
        axis = parse_floats(axis_el.get("xyz") if axis_el is not None else None, 3, (1, 0, 0), f"{where} axis")
        jtype = "floating" if jname == free_joint else j.get("type")
        if jtype in ("revolute", "continuous"):
            joint = Revolute(axis=tuple(axis))
        elif jtype == "prismatic":
            joint = Prismatic(axis=tuple(axis))
        elif jtype == "floating":
            joint = FreeFlyer()
            if jname == free_joint:
                R, xyz = np.eye(3), np.zeros(3)  # the free joint's q holds the whole placement
                jname = "root_joint"
        else:
            joint = Fixed()
        mass, com, I = _inertial(links[child], f"link {child!r}")
        b.add_body(child, parent_link, joint, mass, com, I, R_PJ=R, p_PJ=xyz, joint_name=jname)
        _joint_forces(b, child, j, joint, use_damping, use_limits, where, damping_scale)
        for jn in sorted(children[child], reverse=True):
            stack.append((child, jn))
    detached = [ln for ln in links if ln not in visited]
    if detached:
        raise ModelError(f"{source}: links {detached} are not connected to the root link {root_link!r} "
                         "(their joints form a loop apart from the tree); URDF describes one tree")
    return b, root


def _joint_forces(b: ModelBuilder, body: str, j, joint, use_damping: bool, use_limits: bool,
                  where: str, damping_scale: float = 1.0) -> None:
    if joint.nv != 1:
        return
    damping = 0.0
    lower, upper = -np.inf, np.inf
    dyn = j.find("dynamics")
    if use_damping and dyn is not None and dyn.get("damping") is not None:
        damping = damping_scale * float(parse_floats(dyn.get("damping"), 1, (0.0,), f"{where} damping")[0])
        if damping < 0:
            raise ModelError(f"{where}: damping {damping!r} N m s/rad is negative")
    lim = j.find("limit")
    if use_limits and lim is not None and j.get("type") != "continuous":
        lower = float(parse_floats(lim.get("lower"), 1, (-np.inf,), f"{where} lower")[0])
        upper = float(parse_floats(lim.get("upper"), 1, (np.inf,), f"{where} upper")[0])
    if damping or np.isfinite(lower) or np.isfinite(upper):
        b.add_joint_force(body, JointForce(damping=damping, lower=lower, upper=upper,
                                           limit_stiffness=1e5 if use_limits else 0.0,
                                           limit_damping=1e2 if use_limits else 0.0))
