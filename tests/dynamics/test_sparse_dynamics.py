"""Branch-induced sparsity (RBDA ch. 6): the sparse crba, its LTL and LTDL
factorizations and the forward dynamics through them, against Pinocchio,
the dense RNEA columns of H, numpy's dense solve and the ABA."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from mbfmu import load_urdf
from mbfmu.dynamics import (FreeFlyer, JointForce, ModelBuilder, Revolute, Spherical, _kernels, aba, crba,
                            forward_dynamics, rnea)
from mbfmu.dynamics.spatial import rpy
from mbfmu.errors import InputError
from pinocchio_bridge import to_pinocchio
from random_trees import random_inertia, random_urdf
from trees import random_joint, random_state, random_tree


def _rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def _urdf_model(seed: int, n: int, branchy: bool):
    text = random_urdf(np.random.default_rng(seed), n, branchy=branchy)
    return load_urdf(text), text


def _dof_parents(model) -> np.ndarray:
    """lambda from the definition: the previous dof of the same joint, else
    the last dof of the nearest ancestor body that has dofs, else -1."""
    lam = []
    nvi = [j.nv for j in model.joints]
    for i in range(1, model.nbodies):
        p = model.parent[i]
        while p > 0 and nvi[p] == 0:
            p = model.parent[p]
        prev = model.idx_v[p] + nvi[p] - 1 if p > 0 else -1
        for a in range(nvi[i]):
            lam.append(prev)
            prev = model.idx_v[i] + a
    return np.array(lam, dtype=int)


def _is_ancestor_pattern(H: np.ndarray, lam: np.ndarray) -> bool:
    """H[i][j] = 0 wherever j is neither i nor an ancestor of i (and mirror)."""
    n = len(lam)
    mask = np.zeros((n, n), bool)
    for i in range(n):
        j = i
        while j >= 0:
            mask[i, j] = mask[j, i] = True
            j = lam[j]
    return not np.any(H[~mask])


def _h_by_rnea_columns(model, q):
    """H e_k = rnea(q, 0, e_k) - rnea(q, 0, 0): the dense H, one column at a time."""
    z = np.zeros(model.nv)
    bias = rnea(model, q, z, z)
    return np.column_stack([rnea(model, q, z, e) - bias for e in np.eye(model.nv)])


@pytest.mark.parametrize("branchy", [False, True], ids=["chain", "tree"])
@pytest.mark.parametrize("n", [1, 7, 30, 80])
def test_sparse_crba_equals_dense_h_and_pinocchio(n, branchy):
    model, text = _urdf_model(n, n, branchy)
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    lam, _ = _kernels.sparsity(model._h)
    assert np.array_equal(lam, _dof_parents(model))
    rng = np.random.default_rng(n)
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        H = crba(model, q)
        M_pin = pin.crba(pm, pd, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        assert _rel(H, M_pin) < 1e-12
        assert _rel(H, _h_by_rnea_columns(model, q)) < 1e-12
        assert np.array_equal(H, H.T)
        assert _is_ancestor_pattern(H, lam)


def _ancestors_or_self(lam, k):
    """dof k, then its parent dof, ... up to its root (the order of crba_pattern's rows)"""
    chain = []
    while k >= 0:
        chain.append(k)
        k = lam[k]
    return chain


@pytest.mark.parametrize("branchy", [False, True], ids=["chain", "tree"])
def test_crba_pattern_holds_the_nonzeros_of_h_row_by_row(branchy):
    model, _ = _urdf_model(5, 25, branchy)
    q = np.random.default_rng(5).uniform(-np.pi, np.pi, model.nq)
    H = crba(model, q)
    lam, _ = _kernels.sparsity(model._h)
    rows = [k for k in range(model.nv) for j in _ancestors_or_self(lam, k)]
    cols = [j for k in range(model.nv) for j in _ancestors_or_self(lam, k)]
    assert np.array_equal(_kernels.crba_pattern(model._h, q), H[rows, cols])


@pytest.mark.parametrize("seed", range(4))
def test_crba_pattern_rows_with_every_joint_type(seed):
    """Joints of 0 to 6 dofs (fixed, spherical, planar, universal, a free
    base): each row of the pattern holds H[k][j] for j = k and its ancestor
    dofs (lambda from its definition), in that order, equal to the dense
    crba's entries (the dense matrix is written by the other path)."""
    rng = np.random.default_rng(seed)
    model = random_tree(rng, 16, floating=seed % 2 == 0)
    q, _ = random_state(rng, model)
    lam = _dof_parents(model)
    rows = [k for k in range(model.nv) for j in _ancestors_or_self(lam, k)]
    cols = [j for k in range(model.nv) for j in _ancestors_or_self(lam, k)]
    values = _kernels.crba_pattern(model._h, q)
    H = crba(model, q)
    assert values.shape == (len(rows),)
    assert np.array_equal(values, H[rows, cols])


@pytest.mark.parametrize("seed", range(8))
def test_sparse_crba_with_multi_dof_joints_equals_pinocchio(seed):
    """Free, spherical, universal, prismatic and fixed joints (no planar:
    the Pinocchio bridge does not translate it) on random trees."""
    rng = np.random.default_rng(100 + seed)
    b = ModelBuilder()
    for k in range(1, 16):
        mass, com, inertia = random_inertia(rng)
        if k == 1:
            joint, parent = FreeFlyer(), 0
        else:
            joint = random_joint(rng)
            while type(joint).__name__ == "Planar":
                joint = random_joint(rng)
            parent = int(rng.integers(1, k))
        b.add_body(f"b{k}", parent, joint, mass, com, inertia, R_PJ=rpy(*rng.uniform(-np.pi, np.pi, 3)),
                   p_PJ=rng.uniform(-0.4, 0.4, 3))
    model = b.build()
    pm, perm_q, perm_v = to_pinocchio(model)
    pd = pm.createData()
    q, _ = random_state(rng, model)
    H = crba(model, q)
    # Pinocchio's H by its RNEA columns: its crba (4.1.0) on the bridge's
    # models (fixed bodies folded into their parent joint) differs from its
    # own rnea by up to 5 % on these trees, its rnea agrees with ours to 1e-15
    qp, z = q[perm_q], np.zeros(pm.nv)
    bias = pin.rnea(pm, pd, qp, z, z)
    M_pin = np.column_stack([pin.rnea(pm, pd, qp, z, e) - bias for e in np.eye(pm.nv)])
    assert _rel(H[np.ix_(perm_v, perm_v)], M_pin) < 1e-12
    assert _rel(H, _h_by_rnea_columns(model, q)) < 1e-12
    assert _is_ancestor_pattern(H, _kernels.sparsity(model._h)[0])


def test_crba_of_a_floating_tree_far_from_the_origin_keeps_its_digits():
    """With body-frame free-joint velocities H does not depend on where the
    floating base is: the same tree 1 km away gives the same H (the sparse
    crba works about each tree's root, not about the world origin)."""
    rng = np.random.default_rng(3)
    model = random_tree(rng, 12, floating=True)
    q, _ = random_state(rng, model)
    far = q.copy()
    far[:3] += [1000.0, -2000.0, 500.0]
    assert _rel(crba(model, far), crba(model, q)) < 1e-13


def _random_pattern(rng, n):
    """A random dof parent array (lambda[k] < k) and an SPD matrix with its
    pattern: H = L^T D L with L unit lower triangular on the pattern."""
    lam = np.array([-1] + [int(rng.integers(-1, k)) for k in range(1, n)])
    L = np.eye(n)
    for k in range(n):
        j = lam[k]
        while j >= 0:
            L[k, j] = rng.normal()
            j = lam[j]
    D = rng.uniform(0.1, 10.0, n)
    return lam, L, D, L.T @ np.diag(D) @ L


@pytest.mark.parametrize("seed", range(6))
def test_ltdl_and_ltl_factor_and_solve_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    lam, L, D, H = _random_pattern(rng, n)
    b = rng.normal(size=n)
    x_ref = np.linalg.solve(H, b)
    LD = _kernels.sparse_factor(H, lam, True)
    # the factor is H's own: unit L below the diagonal, D on it (the upper triangle is not touched)
    assert _rel(np.tril(LD, -1) + np.eye(n), L) < 1e-10
    assert _rel(np.diag(LD), D) < 1e-10
    assert np.array_equal(np.triu(LD, 1), np.triu(H, 1))
    assert _rel(_kernels.sparse_solve(LD, lam, b, True), x_ref) < 1e-10
    Lc = np.tril(_kernels.sparse_factor(H, lam, False))
    assert _rel(Lc.T @ Lc, H) < 1e-12
    assert _rel(_kernels.sparse_solve(Lc, lam, b, False), x_ref) < 1e-10


@pytest.mark.parametrize("seed", range(4))
def test_ltdl_of_crba_solves_like_numpy(seed):
    model, _ = _urdf_model(200 + seed, 40, branchy=True)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, model.nq)
    H = crba(model, q)
    lam, _ = _kernels.sparsity(model._h)
    b = rng.normal(size=model.nv)
    x_ref = np.linalg.solve(H, b)
    for unit in (True, False):
        x = _kernels.sparse_solve(_kernels.sparse_factor(H, lam, unit), lam, b, unit)
        assert _rel(x, x_ref) < 1e-12


def test_factor_refuses_bad_input_in_one_line():
    H = np.eye(3)
    with pytest.raises(InputError, match=r"lambda\[1\] = 1: a parent must come before"):
        _kernels.sparse_factor(H, [-1, 1, 0])
    with pytest.raises(InputError, match="H .* has 4 values, expected 9"):
        _kernels.sparse_factor(np.eye(2), [-1, 0, 1])
    with pytest.raises(InputError, match="not positive definite: the pivot of row 2 is not positive"):
        _kernels.sparse_factor(np.diag([1.0, 1.0, -1.0]), [-1, 0, 1])
    with pytest.raises(InputError, match=r"H .*\[5\] is nan"):
        _kernels.sparse_factor(np.array([[1, 0, 0], [0, np.nan, 0], [0, 0, 1.0]]), [-1, 0, 1])
    model, _ = _urdf_model(1, 3, branchy=True)
    z = np.zeros(model.nv)
    with pytest.raises(InputError, match="route 2: expected -1"):
        _kernels.forward_dynamics(model._h, z, z, z, None, True, 2)
    lam = [-1, 0, 1]
    F = _kernels.sparse_factor(np.diag([1.0, 2.0, 3.0]), lam)
    F[1, 1] = 0.0
    with pytest.raises(InputError, match=r"F\[1\]\[1\] is not positive: F is not a factor of sparse_factor"):
        _kernels.sparse_solve(F, lam, np.ones(3))


def test_above_1024_coordinates_the_sparse_route_refuses_and_forward_dynamics_is_aba():
    """The data holds the dense nv x nv H only up to 1024 coordinates: above,
    the forced sparse route says so in one line, the model's own pick is ABA,
    and crba (the caller's dense M) and crba_pattern (its nonzeros, written
    without the dense workspace) still work."""
    b = ModelBuilder()
    for k in range(1, 1026):
        b.add_body(f"b{k}", k // 2, Revolute([0, 0, 1]), 1.0, [0.1, 0, 0], np.eye(3) * 0.01, p_PJ=[0.2, 0, 0])
    model = b.build()
    assert model.nv == 1025
    lam, route = _kernels.sparsity(model._h)
    assert route == 0 and np.array_equal(lam, _dof_parents(model))
    rng = np.random.default_rng(3)
    q, v, tau = rng.normal(size=(3, model.nv))
    with pytest.raises(InputError, match="the sparse route works in .* this model has 1025"):
        _kernels.forward_dynamics(model._h, q, v, tau, None, True, 1)
    np.testing.assert_array_equal(forward_dynamics(model, q, v, tau), aba(model, q, v, tau))
    H = crba(model, q)
    assert _is_ancestor_pattern(H, lam)
    assert _rel(H @ v, _kernels.momentum(model._h, q, v)) < 1e-12  # M v by the O(N) momentum sweep
    rows = [k for k in range(model.nv) for j in _ancestors_or_self(lam, k)]
    cols = [j for k in range(model.nv) for j in _ancestors_or_self(lam, k)]
    assert np.array_equal(_kernels.crba_pattern(model._h, q), H[rows, cols])


def _forward_routes(model, q, v, tau, fext=None):
    ref = aba(model, q, v, tau, fext)
    for route in (-1, 0, 1):
        a = _kernels.forward_dynamics(model._h, q, v, tau, fext, True, route)
        assert _rel(a, ref) < 1e-12, route
    assert _rel(forward_dynamics(model, q, v, tau, fext), ref) < 1e-12
    return ref


@pytest.mark.parametrize("seed", range(10))
def test_forward_dynamics_by_either_route_equals_aba_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    model, _ = _urdf_model(300 + seed, int(rng.integers(2, 120)), branchy=True)
    q = rng.uniform(-np.pi, np.pi, model.nq)
    v, tau = rng.normal(size=(2, model.nv))
    fext = rng.normal(size=(model.nbodies, 6))
    _forward_routes(model, q, v, tau, fext)


@pytest.mark.parametrize("seed", range(6))
def test_forward_dynamics_routes_with_multi_dof_joints(seed):
    """Every joint type (free base, spherical, universal, planar, fixed)."""
    rng = np.random.default_rng(400 + seed)
    model = random_tree(rng, 20, floating=seed % 2 == 0)
    q, v = random_state(rng, model)
    _forward_routes(model, q, v, rng.normal(size=model.nv), rng.normal(size=(model.nbodies, 6)))


def test_rhs_and_rk4_of_a_wide_tree_take_the_sparse_route_and_equal_aba():
    """A wide tree picks the sparse route; its right-hand side (with joint
    springs and dampers and a point spring: the passive forces of mb_rhs)
    equals the ABA with the same forces, and its RK4 step equals a Python
    RK4 around aba."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    for k in range(1, 41):
        mass, com, inertia = random_inertia(rng)
        joint = Spherical() if k % 5 == 0 else Revolute(axis=tuple(rng.normal(size=3)))
        b.add_body(f"b{k}", int(rng.integers(0, k)), joint, mass, com, inertia,
                   R_PJ=rpy(*rng.uniform(-np.pi, np.pi, 3)), p_PJ=rng.uniform(-0.4, 0.4, 3))
        b.add_joint_force(f"b{k}", JointForce(stiffness=3.0, damping=0.5))
    b.add_spring("b3", (0.1, 0.0, 0.0), "b17", (0.0, 0.2, 0.0), stiffness=50.0, damping=2.0)
    model = b.build()
    lam, route = _kernels.sparsity(model._h)
    assert route == 1
    q, v = random_state(rng, model)
    tau = rng.normal(size=model.nv)

    def acc(qq, vv):
        tau_p, fext_p = _kernels.passive_forces(model._h, qq, vv, tau)  # the elements' part
        return aba(model, qq, vv, tau + tau_p, fext_p)

    _, vdot = _kernels.rhs(model._h, q, v, tau)
    assert _rel(vdot, acc(q, v)) < 1e-12
    h = 1e-3
    q1, v1 = _kernels.rk4(model._h, q, v, tau, h, 1)

    def f(qq, vv):
        return _kernels.qdot(model._h, qq, vv), acc(qq, vv)

    k1 = f(q, v)
    k2 = f(q + h / 2 * k1[0], v + h / 2 * k1[1])
    k3 = f(q + h / 2 * k2[0], v + h / 2 * k2[1])
    k4 = f(q + h * k3[0], v + h * k3[1])
    q_ref = _kernels.normalize(model._h, q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]))
    v_ref = v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    assert _rel(q1, q_ref) < 1e-13 and _rel(v1, v_ref) < 1e-12


def test_route_rule_picks_by_mean_ancestor_depth():
    """The stated rule (csrc/algorithms.c): sparse when the mean number of
    ancestor-or-self dofs per dof is at most 8, or 5 when most joints are
    axis-aligned revolutes (a long chain: ABA; a wide tree: sparse)."""
    cases = [(n, branchy, aligned) for n in (10, 15, 17, 30, 60) for branchy in (False, True)
             for aligned in (False, True)]
    routes = set()
    for n, branchy, aligned in cases:
        text = random_urdf(np.random.default_rng(n), n, prismatic_fraction=0.0, branchy=branchy,
                           aligned=aligned)
        model = load_urdf(text)
        lam, route = _kernels.sparsity(model._h)
        depth = np.zeros(len(lam), int)
        for k, p in enumerate(lam):
            depth[k] = 1 + (depth[p] if p >= 0 else 0)
        # axis-aligned revolutes with no origin rotation (random_urdf: about half when aligned)
        fast = sum(j.kind == "revolute" and sorted(np.abs(j.axis)) == [0, 0, 1]
                   and np.array_equal(b.R_PJ, np.eye(3)) for j, b in zip(model.joints[1:], model.bodies[1:]))
        limit = 5.0 if 2 * fast > model.nbodies - 1 else 8.0
        assert route == int(depth.mean() <= limit), (n, branchy, aligned)
        routes.add(route)
    assert routes == {0, 1}
