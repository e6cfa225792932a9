"""Triangle meshes of the plant's shapes (box, cylinder, sphere, capsule, beam tube, given mesh)."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..plant import Shape

KINDS = ("box", "cylinder", "sphere", "capsule", "beam", "mesh")


def shape_mesh(shape: Shape, segments: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Triangle mesh of a rigid shape in its own frame.

    Box, cylinder, capsule and sphere are centred on the shape frame's
    origin (cylinder and capsule axis along z). A beam is returned
    undeformed, from the origin along +x (see :func:`tube_mesh`).

    Returns
    -------
    V : ndarray, shape (nv, 3)
        Vertices, m.
    F : ndarray, shape (nf, 3), int
        Counter-clockwise triangles (outward normals).
    """
    k = shape.kind
    sz = [float(v) for v in shape.size]
    if k == "mesh":
        if shape.mesh is None:
            raise InputError(f"mesh shape {shape.name!r} carries no mesh (Shape.mesh = (V, F))")
        V, F = (np.asarray(a) for a in shape.mesh)
        if V.ndim != 2 or V.shape[1] != 3 or F.ndim != 2 or F.shape[1] != 3 or (F.size and (F.min() < 0 or F.max() >= len(V))):
            raise InputError(f"mesh shape {shape.name!r}: need V (n, 3) and F (m, 3) indexing V, got {V.shape}, {F.shape}")
        return np.asarray(V, dtype=float), np.asarray(F, dtype=np.int64)
    if k == "box":
        if len(sz) != 3:
            raise InputError(f"box {shape.name!r}: size must be (x, y, z) edge lengths, got {shape.size}")
        h = np.array(sz) / 2
        V = np.array([[sx, sy, sz_] for sx in (-1, 1) for sy in (-1, 1) for sz_ in (-1, 1)], float) * h
        F = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
        return V, F
    if k == "sphere":
        return _revolve(np.full(segments // 2 + 1, sz[0]) * np.sin(np.linspace(0, np.pi, segments // 2 + 1)),
                        -sz[0] * np.cos(np.linspace(0, np.pi, segments // 2 + 1)), segments)
    if k in ("cylinder", "capsule", "beam"):
        if len(sz) != 2:
            raise InputError(f"{k} {shape.name!r}: size must be (radius, length), got {shape.size}")
        r, L = sz
        if k == "cylinder":
            # rings along the axis keep triangles short, so painters' depth sorting works
            k = int(np.clip(np.ceil(L / (2 * r)), 1, 12))
            zs = np.linspace(-L / 2, L / 2, k + 1)
            return _revolve(np.concatenate([[0], np.full(k + 1, r), [0]]),
                            np.concatenate([[-L / 2], zs, [L / 2]]), segments)
        if k == "capsule":
            lo = np.linspace(-np.pi / 2, 0, segments // 4 + 1)
            hi = np.linspace(0, np.pi / 2, segments // 4 + 1)
            rr = np.concatenate([r * np.cos(lo), r * np.cos(hi)])
            zz = np.concatenate([-L / 2 + r * np.sin(lo), L / 2 + r * np.sin(hi)])
            return _revolve(rr, zz, segments)
        centre = np.zeros((segments // 2 + 1, 3))
        centre[:, 0] = np.linspace(0, L, centre.shape[0])
        return tube_mesh(centre, r, np.eye(3), segments)
    raise InputError(f"shape {shape.name!r}: unknown kind {k!r}; known: {', '.join(KINDS)}")


def _revolve(r: np.ndarray, z: np.ndarray, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """Surface of revolution about z of the profile ``(r, z)`` (bottom to top)."""
    th = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    V = np.stack([np.outer(r, np.cos(th)), np.outer(r, np.sin(th)), np.repeat(z[:, None], segments, 1)], -1)
    V = V.reshape(-1, 3)
    F = []
    m = r.size
    for i in range(m - 1):
        for j in range(segments):
            a, b = i * segments + j, i * segments + (j + 1) % segments
            c, d = a + segments, b + segments
            F += [[a, b, d], [a, d, c]]
    F = np.array(F)
    # drop triangles degenerate at the poles (r == 0)
    tri = V[F]
    area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    return V, F[area > 1e-12 * max(1.0, float(np.max(np.abs(V))) ** 2)]


def tube_frames(centre: np.ndarray, R_WS: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross-section axes along a centre line (``(n, 3)``): the shape's y and
    z axes made orthogonal to the local tangent. Returns ``Y, Z`` (n, 3)."""
    T = np.gradient(centre, axis=0)
    T /= np.maximum(np.linalg.norm(T, axis=1, keepdims=True), 1e-12)
    y = R_WS[:, 1]
    Y = y - (T @ y)[:, None] * T
    Y /= np.maximum(np.linalg.norm(Y, axis=1, keepdims=True), 1e-12)
    Z = np.cross(T, Y)
    return Y, Z


def tube_mesh(centre: np.ndarray, radius: float, R_WS: np.ndarray, segments: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Triangle mesh of a tube of ``radius`` (m) around ``centre`` (n, 3), m."""
    Y, Z = tube_frames(centre, R_WS)
    th = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    V = (centre[:, None, :] + radius * (np.cos(th)[None, :, None] * Y[:, None, :]
                                        + np.sin(th)[None, :, None] * Z[:, None, :])).reshape(-1, 3)
    n = centre.shape[0]
    F = []
    for i in range(n - 1):
        for j in range(segments):
            a, b = i * segments + j, i * segments + (j + 1) % segments
            F += [[a, b, b + segments], [a, b + segments, a + segments]]
    return V, np.array(F)


