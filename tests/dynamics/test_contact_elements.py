"""Sphere-plane contacts and ground-anchored cables, force elements of the kernels.

The compiled elements (``mb_contact_force``, ``mb_cable_force`` in
``csrc/algorithms.c``) against the laws written out here in numpy on the
kernels' kinematics; energy conservation without damping and friction;
dissipation by friction; tension only; parameter validation.
"""
import numpy as np
import pytest

from mbfmu.dynamics import (FreeFlyer, ModelBuilder, Revolute, Spherical, _kernels, element_forces,
                            kinetic_energy, potential_energy)
from mbfmu.dynamics.flexible import BeamProperties, FlexibleSystemBuilder, ModeSet
from mbfmu.dynamics.model import Cable, JointForce, Model, SpherePlaneContact, Spring
from mbfmu.errors import ModelError

G = 9.81


# ---- the laws, independently in numpy --------------------------------------------
def _point(R, p, vel, body, r_B):
    """World position and velocity of the body point r_B."""
    w, vo = vel[body, :3], vel[body, 3:]
    return p[body] + R[body] @ r_B, R[body] @ (vo + np.cross(w, r_B))


def _contact(c, R, p, vel):
    """(world force, body-frame point, penetration) of one sphere-plane contact."""
    n = np.asarray(c.normal)
    depth = c.radius - (n @ (p[c.body] + R[c.body] @ c.center) - c.offset)
    r_B = c.center - c.radius * (R[c.body].T @ n)
    _, v = _point(R, p, vel, c.body, r_B)
    d = max(depth, 0.0)
    vn = n @ v
    fn = max(c.stiffness * d - c.damping * min(d / c.ramp, 1.0) * vn, 0.0)
    vt = v - vn * n
    F = fn * n - c.friction * fn / np.sqrt(vt @ vt + c.slip_speed ** 2) * vt
    return F, r_B, depth


def _cable(c, R, p, vel):
    """(world force on the body point, tension, length) of one cable."""
    x, v = _point(R, p, vel, c.body, c.point)
    d = c.anchor - x
    L = np.linalg.norm(d)
    u = d / L
    s = max(L - c.rest_length, 0.0)
    T = max(c.stiffness * s + c.damping * min(s / c.ramp, 1.0) * (-(u @ v)), 0.0)
    return T * u, T, L


def _fext(model, q, v):
    """Body-frame spatial forces (nbodies, 6) of all contacts and cables."""
    R, p, vel = _kernels.kinematics(model._h, q, v)
    f = np.zeros((model.nbodies, 6))
    for F, r_B, b in ([_contact(c, R, p, vel)[:2] + (c.body,) for c in model.contacts]
                      + [(_cable(c, R, p, vel)[0], c.point, c.body) for c in model.cables]):
        f_B = R[b].T @ F
        f[b] += np.r_[np.cross(r_B, f_B), f_B]
    return f


# ---- models ------------------------------------------------------------------------
def _tree():
    """Free base, a ball-jointed arm and a hinged forearm (no elements)."""
    b = ModelBuilder(name="tree")
    b.add_body("base", "world", FreeFlyer(), 3.0, (0.01, 0.02, 0.0), np.diag([0.05, 0.04, 0.03]))
    b.add_body("arm", "base", Spherical(), 1.5, (0, 0, -0.2), np.diag([0.02, 0.02, 0.005]), p_PJ=(0.1, 0, 0))
    b.add_body("fore", "arm", Revolute(axis=(0, 1, 0)), 0.8, (0, 0, -0.15), np.diag([0.01, 0.01, 0.002]),
               p_PJ=(0, 0, -0.4))
    return b


def _random_state(model, rng):
    q = model.neutral()
    q[:3] = rng.normal(scale=0.05, size=3)
    for i in (1, 2):  # the two quaternions
        s = model.idx_q[i] + (3 if i == 1 else 0)
        e = np.r_[1.0, rng.normal(scale=0.3, size=3)]
        q[s:s + 4] = e / np.linalg.norm(e)
    q[-1] = rng.normal(scale=0.5)
    return q, rng.normal(scale=0.8, size=model.nv)


def _with_elements(rng, q):
    """The tree with contacts (most penetrating at q, some apart) and cables
    (most stretched at q, some slack), random parameters."""
    base = _tree().build()
    R, p, _ = _kernels.kinematics(base._h, q)
    b = _tree()
    for k in range(6):
        body = 1 + k % 3
        center = rng.normal(scale=0.1, size=3)
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        r = 0.05
        depth = rng.uniform(-0.005, 0.02)
        b.add_contact_sphere_plane(body, center, r, n, n @ (p[body] + R[body] @ center) + r - depth,
                                   stiffness=rng.uniform(1e3, 1e5), damping=rng.uniform(0, 1e3),
                                   friction=rng.uniform(0, 1), slip_speed=rng.uniform(0.005, 0.05),
                                   ramp=rng.uniform(1e-3, 5e-3), name=f"c{k}")
    for k in range(4):
        body = 1 + k % 3
        point = rng.normal(scale=0.1, size=3)
        anchor = rng.normal(scale=0.5, size=3)
        L = np.linalg.norm(anchor - p[body] - R[body] @ point)
        b.add_cable(anchor, body, point, L - rng.uniform(-0.01, 0.03), stiffness=rng.uniform(1e3, 1e5),
                    damping=rng.uniform(0, 1e3), ramp=rng.uniform(1e-3, 5e-3), name=f"b{k}")
    return b.build(), base


def _close(a, b, tol=1e-12):
    scale = max(1.0, float(np.max(np.abs(b))) if np.size(b) else 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


# ---- agreement with the numpy laws ----------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_compiled_elements_equal_the_numpy_laws(seed):
    rng = np.random.default_rng(seed)
    q, v = _random_state(_tree().build(), rng)
    model, base = _with_elements(rng, q)
    f_ref = _fext(model, q, v)
    tau_p, f_p = _kernels.passive_forces(model._h, q, v)
    _close(f_p, f_ref)
    assert np.all(tau_p == 0)
    # the readout: world forces, points, penetrations, tensions, lengths
    R, p, vel = _kernels.kinematics(model._h, q, v)
    e = element_forces(model, q, v)
    for k, c in enumerate(model.contacts):
        F, r_B, depth = _contact(c, R, p, vel)
        _close(e.contact_force[k], F)
        _close(e.contact_point[k], p[c.body] + R[c.body] @ r_B)
        _close(e.penetration[k], depth)
    for k, c in enumerate(model.cables):
        _, T, L = _cable(c, R, p, vel)
        _close(e.cable_tension[k], T)
        _close(e.cable_length[k], L)
    assert (e.penetration > 0).sum() >= 2 and (e.cable_tension > 0).sum() >= 1
    # every path with passive forces: rhs and the compiled RK4 see them as f_ext
    tau = rng.normal(size=model.nv)
    qd, vd = _kernels.rhs(model._h, q, v, tau)
    qd0, vd0 = _kernels.rhs(base._h, q, v, tau, f_ref)
    _close(qd, qd0)
    _close(vd, vd0, 1e-11)
    h = 1e-4
    q1, v1 = _kernels.rk4(model._h, q, v, tau, h, 1)
    k = [np.r_[qd, vd]]
    for c in (0.5, 0.5, 1.0):
        x = np.r_[q, v] + c * h * k[-1]
        k.append(np.r_[_kernels.rhs(model._h, x[:model.nq], x[model.nq:], tau)])
    x1 = np.r_[q, v] + h / 6 * (k[0] + 2 * k[1] + 2 * k[2] + k[3])
    x1[:model.nq] = _kernels.normalize(model._h, x1[:model.nq])
    _close(np.r_[q1, v1], x1)


def _rotation_vector(e):
    """Rotation vector of the unit quaternion e (w, x, y, z), the shorter way round."""
    e = e if e[0] >= 0 else -e
    s = np.linalg.norm(e[1:])
    return 2 * np.arctan2(s, e[0]) / s * e[1:] if s > 0 else np.zeros(3)


def test_potential_energy_includes_every_force_element():
    """Gravity plus joint springs and range limits, a point spring, contacts
    and cables (the compiled mb_passive_energy) against numpy."""
    rng = np.random.default_rng(11)
    q, v = _random_state(_tree().build(), rng)
    with_el, base = _with_elements(rng, q)
    ball = JointForce(stiffness=(3.0, 4.0, 5.0), rest=(0.1, -0.1, 0.0), lower=-0.05, upper=0.05,
                      limit_stiffness=200.0)
    hinge = JointForce(stiffness=7.0, rest=0.2, lower=-0.1, upper=0.1, limit_stiffness=300.0)
    spring = Spring(1, (0.1, 0, 0), 3, (0, 0.1, 0), 150.0, 0.0, 0.05)
    model = Model(with_el.bodies, with_el.gravity, {2: ball, 3: hinge}, [spring], contacts=with_el.contacts,
                  cables=with_el.cables)
    R, p, vel = _kernels.kinematics(model._h, q, v)
    e = 0.0
    for jf, d in ((ball, _rotation_vector(q[model.idx_q[2]:model.idx_q[2] + 4])), (hinge, q[-1:])):
        pen = np.maximum(jf.lower - d, 0) + np.maximum(d - jf.upper, 0)
        assert pen.any()
        e += 0.5 * np.sum(np.asarray(jf.stiffness) * (d - jf.rest) ** 2 + jf.limit_stiffness * pen ** 2)
    L = np.linalg.norm(p[3] + R[3] @ spring.point_b - p[1] - R[1] @ spring.point_a)
    e += 0.5 * spring.stiffness * (L - spring.rest_length) ** 2
    e_c = sum(0.5 * c.stiffness * max(_contact(c, R, p, vel)[2], 0.0) ** 2 for c in model.contacts)
    e_b = sum(0.5 * c.stiffness * max(_cable(c, R, p, vel)[2] - c.rest_length, 0.0) ** 2
              for c in model.cables)
    assert e_c > 0 and e_b > 0
    assert potential_energy(model, q) == pytest.approx(potential_energy(base, q) + e + e_c + e_b, rel=1e-13)
    assert potential_energy(model, q, include_springs=False) == potential_energy(base, q, False)


def test_elements_act_in_the_flexible_kernel():
    """A contact on a beam tip and a cable on the hub: the compiled flexible
    ABA and the dense projection (passive_forces on the virtual tree) agree,
    and equal the system without elements loaded by the numpy forces."""
    def system(elements: bool):
        b = FlexibleSystemBuilder(gravity=(0, 0, -G))
        beam = BeamProperties.rectangular(0.8, 0.01, 0.04, E=70e9, density=2700)
        b.add_beam("link", "world", Revolute(axis=(0, 1, 0)), beam, ModeSet(bending_z=2, axial=1),
                   mass=0.5, inertia=(1e-3, 1e-3, 1e-3))
        b.add_body("tip", "link.tip", Revolute(axis=(0, 1, 0)), 0.3, (0.05, 0, 0), (1e-4, 1e-4, 1e-4))
        if elements:
            b.add_contact_sphere_plane("tip", (0.05, 0, 0), 0.02, (0, 0, 1), -0.02, 2e4, 50.0, 0.4, 0.01,
                                       2e-3)
            b.add_cable((0.3, 0.0, 0.2), "link", (0.2, 0, 0), 0.2, 1e4, 20.0)
        return b.build()
    rng = np.random.default_rng(3)
    sysc, sys0 = system(True), system(False)
    q = sysc.neutral() + rng.normal(scale=0.02, size=sysc.nq)
    q[0] = 0.03  # the tip sphere dips into the plane z = -0.02 ...
    v = rng.normal(scale=0.3, size=sysc.nv)
    c, cd, _, _ = sysc.virtual_state(q, v)
    e = element_forces(sysc.model, c, cd)
    assert e.penetration[0] > 0 and e.cable_tension[0] > 0  # ... and the cable pulls
    a_aba = sysc.accelerations(q, v, method="aba")
    a_proj = sysc.accelerations(q, v, method="projection")
    np.testing.assert_allclose(a_aba, a_proj, rtol=1e-9, atol=1e-9 * np.abs(a_proj).max())
    a_ref = sys0.accelerations(q, v, f_ext=_fext(sysc.model, c, cd), method="aba")
    np.testing.assert_allclose(a_aba, a_ref, rtol=1e-11, atol=1e-11 * np.abs(a_ref).max())


# ---- energy ---------------------------------------------------------------------------
def _energy(model, q, v):
    return kinetic_energy(model, q, v) + potential_energy(model, q)


def _run(model, q, v, h, n, every):
    """States every ``every`` steps of the compiled RK4."""
    out = [(q, v)]
    for _ in range(n // every):
        q, v = _kernels.rk4(model._h, q, v, np.zeros(model.nv), h, every)
        out.append((q, v))
    return out


def _ball(damping=0.0, friction=0.0):
    b = ModelBuilder(gravity=(0, 0, -G), name="ball")
    b.add_body("ball", "world", FreeFlyer(), 1.0, (0, 0, 0), np.eye(3) * 4e-3)
    b.add_contact_sphere_plane("ball", (0, 0, 0), 0.1, (0, 0, 1), 0.0, 1e4, damping, friction, 0.01)
    return b.build()


def test_bouncing_ball_conserves_energy_without_damping_and_friction():
    model = _ball()
    q = np.array([0, 0, 0.2, 1, 0, 0, 0.0])
    v = np.array([1.0, -2.0, 0.5, 0.3, 0.0, 0.0])  # spin, and sliding along x
    states = _run(model, q, v, 1e-5, 60000, 500)  # 0.6 s: three bounces
    z = np.array([s[0][2] for s in states])
    assert np.sum((z[1:] < 0.1) & (z[:-1] >= 0.1)) >= 2
    E = np.array([_energy(model, *s) for s in states])
    assert np.ptp(E) < 1e-7 * abs(E[0])


def test_cable_pendulum_conserves_energy_and_pulls_only():
    b = ModelBuilder(gravity=(0, 0, -G), name="cable pendulum")
    b.add_body("bob", "world", FreeFlyer(), 2.0, (0, 0, 0), np.eye(3) * 1e-3)
    cable = b.add_cable((0, 0, 0), "bob", (0, 0, 0.05), 1.0, 2e4)
    model = b.build()
    q = np.array([0.6, 0.0, -0.8, 1, 0, 0, 0.0])  # swung out by 37 deg, cable 1 m + 5 cm
    v = np.array([0, 0, 0, 0, 2.0, 0.5])
    states = _run(model, q, v, 1e-5, 100000, 1000)  # 1 s
    E = np.array([_energy(model, *s) for s in states])
    assert np.ptp(E) < 1e-7 * abs(E[0])
    T = np.array([element_forces(model, *s).cable_tension[0] for s in states])
    assert T.min() >= 0 and T.max() > 2.0 * G
    # slack (closer than the rest length), or stretching back with a large
    # damping: never a push
    b2 = ModelBuilder()
    b2.add_body("bob", "world", FreeFlyer(), 2.0)
    b2.add_cable(cable.anchor, "bob", cable.point, 1.0, 2e4, damping=1e5)
    slack = b2.build()
    e = element_forces(slack, np.array([0, 0, -0.5, 1, 0, 0, 0.0]), np.array([0, 0, 0, 0, 0, -3.0]))
    assert e.cable_tension[0] == 0 and e.cable_length[0] == pytest.approx(0.45)
    e = element_forces(slack, np.array([0, 0, -1.96, 1, 0, 0, 0.0]), np.array([0, 0, 0, 0, 0, 1.0]))
    assert e.cable_length[0] > 1.0 and e.cable_tension[0] == 0  # k s = 18 kN < c |dL/dt| = 100 kN
    tau_p, f_p = _kernels.passive_forces(slack._h, np.array([0, 0, -1.96, 1, 0, 0, 0.0]),
                                         np.array([0, 0, 0, 0, 0, 1.0]))
    assert not f_p.any()


def test_friction_and_damping_dissipate():
    """A ball thrown sliding along the plane: friction (about mu m g against
    the slip) never adds energy and brings it to rolling, with 5/7 of the
    initial speed for a solid ball; with damping, the bounces shrink."""
    model = _ball(friction=0.5)
    q = np.array([0, 0, 0.1 - G / 1e4, 1, 0, 0, 0.0])  # resting depth m g / k
    v = np.array([0, 0, 0, 3.0, 0, 0.0])  # sliding at 3 m/s along x
    states = _run(model, q, v, 1e-4, 10000, 100)
    E = np.array([_energy(model, *s) for s in states])
    assert np.all(np.diff(E) <= 1e-9 * abs(E[0]))
    rolling = 0.5 * (1.0 + 0.4) * (3.0 * 5 / 7) ** 2  # m = 1 kg, I = 2/5 m r^2
    assert kinetic_energy(model, *states[-1]) == pytest.approx(rolling, rel=1e-3)
    F = element_forces(model, *states[2]).contact_force[0]
    assert F[0] == pytest.approx(-0.5 * F[2], rel=0.01) and F[2] == pytest.approx(G, rel=0.05)
    damped = _ball(damping=20.0)
    q = np.array([0, 0, 0.2, 1, 0, 0, 0.0])
    states = _run(damped, q, np.zeros(6), 1e-5, 60000, 500)
    E = np.array([_energy(damped, *s) for s in states])
    assert np.all(np.diff(E) <= 1e-9 * abs(E[0])) and E[-1] < E[0] - 0.05


# ---- validation ------------------------------------------------------------------------
def _builder():
    b = ModelBuilder()
    b.add_body("ball", "world", FreeFlyer(), 1.0)
    return b


@pytest.mark.parametrize("kwargs, match", [
    (dict(radius=0.0), "radius"), (dict(radius=np.nan), "radius"), (dict(stiffness=-1.0), "stiffness"),
    (dict(damping=-1.0), "damping"), (dict(friction=-0.1), "friction"), (dict(slip_speed=0.0), "slip_speed"),
    (dict(ramp=0.0), "ramp"), (dict(normal_W=(0, 0, 0)), "normal"), (dict(normal_W=(0, 1)), "normal"),
    (dict(center_B=(0, np.inf, 0)), "center"), (dict(offset=np.nan), "offset"),
    (dict(body="world"), "not the world"),
])
def test_bad_contact_parameters_raise(kwargs, match):
    args = dict(body="ball", center_B=(0, 0, 0), radius=0.1, normal_W=(0, 0, 1), offset=0.0, stiffness=1e4)
    args.update(kwargs)
    with pytest.raises(ModelError, match=match):
        _builder().add_contact_sphere_plane(**args)


@pytest.mark.parametrize("kwargs, match", [
    (dict(rest_length=-0.1), "rest_length"), (dict(stiffness=np.nan), "stiffness"),
    (dict(damping=-2.0), "damping"), (dict(ramp=-1e-3), "ramp"), (dict(anchor_W=(0, 0)), "anchor"),
    (dict(point_B="x"), "point"), (dict(body=0), "not the world"),
])
def test_bad_cable_parameters_raise(kwargs, match):
    args = dict(anchor_W=(0, 0, 1), body="ball", point_B=(0, 0, 0), rest_length=1.0, stiffness=1e3)
    args.update(kwargs)
    with pytest.raises(ModelError, match=match):
        _builder().add_cable(**args)


def test_elements_on_missing_bodies_raise():
    m = _builder().build()
    with pytest.raises(ModelError, match="out of range"):
        Model(m.bodies, m.gravity, contacts=[SpherePlaneContact(2, (0, 0, 0), 0.1, (0, 0, 1), 0.0, 1e3)])
    with pytest.raises(ModelError, match="out of range"):
        Model(m.bodies, m.gravity, cables=[Cable((0, 0, 0), 5, (0, 0, 0), 1.0, 1e3)])
    with pytest.raises(ModelError, match="Cable"):
        Model(m.bodies, m.gravity, cables=[SpherePlaneContact(1, (0, 0, 0), 0.1, (0, 0, 1), 0.0, 1e3)])


def test_normal_is_normalized_and_gravity_copy_keeps_elements():
    b = _builder()
    c = b.add_contact_sphere_plane("ball", (0, 0, 0), 0.1, (0, 0, 2.0), 0.05, 1e4)
    assert np.allclose(c.normal, (0, 0, 1))
    model = b.build().with_gravity((0, 0, -1.0))
    assert model.contacts[0] is c
    e = element_forces(model, np.array([0, 0, 0.1, 1, 0, 0, 0.0]), np.zeros(6))
    assert e.penetration[0] == pytest.approx(0.05)
