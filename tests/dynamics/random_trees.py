"""Random URDF trees for the engine's tests (revolute and prismatic joints,
branches, random inertias and placements)."""
from __future__ import annotations

import numpy as np


def random_inertia(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    """A physical (mass, com, inertia about com) triple."""
    mass = rng.uniform(0.2, 5.0)
    com = rng.uniform(-0.3, 0.3, 3)
    A = rng.normal(size=(3, 3))
    Q, _ = np.linalg.qr(A)
    d = np.sort(rng.uniform(0.01, 0.3, 3))
    d[2] = min(d[2], 0.99 * (d[0] + d[1]))  # keep the triangle inequality
    return mass, com, Q @ np.diag(d) @ Q.T


def random_urdf(rng: np.random.Generator, n: int, prismatic_fraction: float = 0.3,
                branchy: bool = True, aligned: bool = False) -> str:
    """URDF text of a random tree of ``n`` moving bodies below a fixed base.

    With ``aligned``, every joint axis is one of +-x, +-y, +-z and about half
    of the joint origins carry no rotation (the kernels' axis-aligned paths).
    """
    parts = ['<robot name="random">', '<link name="base"/>']
    names = ["base"]
    for k in range(1, n + 1):
        mass, com, I = random_inertia(rng)
        parts.append(
            f'<link name="l{k}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}" rpy="0 0 0"/>'
            f'<mass value="{mass}"/><inertia ixx="{I[0,0]}" iyy="{I[1,1]}" izz="{I[2,2]}" '
            f'ixy="{I[0,1]}" ixz="{I[0,2]}" iyz="{I[1,2]}"/></inertial></link>')
        parent = names[rng.integers(0, len(names))] if branchy else names[-1]
        jtype = "prismatic" if rng.random() < prismatic_fraction else "revolute"
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        xyz = rng.uniform(-0.5, 0.5, 3)
        r, p, y = rng.uniform(-np.pi, np.pi, 3)
        if aligned:
            axis = np.zeros(3)
            axis[rng.integers(0, 3)] = rng.choice([-1.0, 1.0])
            if rng.random() < 0.5:
                r = p = y = 0.0
        # random joint names so the name-sorted child order differs from creation order
        jname = f"j{rng.integers(0, 10**6):06d}_{k}"
        parts.append(
            f'<joint name="{jname}" type="{jtype}"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{r} {p} {y}"/>'
            f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
            f'<limit effort="100" velocity="10" lower="-3" upper="3"/></joint>')
        names.append(f"l{k}")
    parts.append("</robot>")
    return "\n".join(parts)
