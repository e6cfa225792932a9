"""Random mixed-joint trees built with the Python API (all joint types)."""
from __future__ import annotations

import numpy as np

from mbfmu.dynamics import (Fixed, FreeFlyer, ModelBuilder, Planar, Prismatic, Revolute, Spherical,
                            Universal)
from mbfmu.dynamics.spatial import rpy
from random_trees import random_inertia


def random_joint(rng: np.random.Generator, allow_quaternions: bool = True, allow_fixed: bool = True):
    kinds = ["revolute", "prismatic", "universal", "planar"] + (["fixed"] if allow_fixed else [])
    if allow_quaternions:
        kinds.append("spherical")
    kind = kinds[rng.integers(0, len(kinds))]
    axis = tuple(rng.normal(size=3))
    return {"revolute": lambda: Revolute(axis=axis), "prismatic": lambda: Prismatic(axis=axis),
            "universal": lambda: Universal(axis1=axis, axis2=tuple(np.cross(axis, rng.normal(size=3)))),
            "planar": lambda: Planar(), "fixed": lambda: Fixed(),
            "spherical": lambda: Spherical()}[kind]()


def random_tree(rng: np.random.Generator, n: int, floating: bool = False, gravity=(0, 0, -9.81),
                allow_quaternions: bool = True):
    """A random tree of ``n`` bodies with every joint type (a free base when
    ``floating``)."""
    b = ModelBuilder(gravity=gravity)
    for k in range(1, n + 1):
        mass, com, I = random_inertia(rng)
        if k == 1 and floating:
            joint, parent = FreeFlyer(), 0
        else:
            joint = random_joint(rng, allow_quaternions, allow_fixed=k > 1)
            parent = int(rng.integers(1 if floating else 0, k))
        b.add_body(f"b{k}", parent, joint, mass, com, I, R_PJ=rpy(*rng.uniform(-np.pi, np.pi, 3)),
                   p_PJ=rng.uniform(-0.4, 0.4, 3))
    return b.build()


def random_state(rng: np.random.Generator, model):
    """A random (q, v) with unit quaternions."""
    from mbfmu.dynamics import _kernels
    q = _kernels.normalize(model._h, model.neutral() + rng.normal(size=model.nq) * 0.8)
    return q, rng.normal(size=model.nv)
