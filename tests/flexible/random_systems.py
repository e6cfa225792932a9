"""Random trees of rigid bodies and beams, their states, and a beam whose modal
mass is singular: the systems the flexible-dynamics tests share."""
import numpy as np

from mbfmu.dynamics import Fixed, FreeFlyer, Planar, Prismatic, Revolute, Spherical, Universal
from mbfmu.dynamics.flexible import BeamProperties, FlexibleSystemBuilder, ModeSet
from mbfmu.dynamics.model import JointForce


def _unit(rng, n):
    x = rng.normal(size=n)
    return x / np.linalg.norm(x)


def _random_joint(rng, kinds):
    kind = kinds[rng.integers(len(kinds))]
    if kind == "revolute":
        return Revolute(axis=tuple(_unit(rng, 3)))
    if kind == "prismatic":
        return Prismatic(axis=tuple(_unit(rng, 3)))
    if kind == "ball":
        return Spherical()
    if kind == "free":
        return FreeFlyer()
    if kind == "universal":
        a = _unit(rng, 3)
        b = np.cross(a, _unit(rng, 3))
        return Universal(axis1=tuple(a), axis2=tuple(b / np.linalg.norm(b)))
    if kind == "planar":
        return Planar()
    return Fixed()


def _random_modes(rng):
    while True:
        n = dict(bending_y=int(rng.integers(0, 4)), bending_z=int(rng.integers(0, 3)),
                 axial=int(rng.integers(0, 2)), torsion=int(rng.integers(0, 2)))
        if sum(n.values()):
            boundary = ("clamped", "pinned")[rng.integers(2)]
            tip = boundary == "clamped" and rng.random() < 0.5
            return ModeSet(**n, boundary=boundary, tip_shapes=bool(tip))


def random_system(seed, n_items=6, kinds=("revolute", "prismatic", "ball", "free", "fixed")):
    """A random tree of rigid bodies and beams (clamped-free, tip-loaded or
    pinned-free shapes): children on beam tips and on beam frames, beams on beams, joint springs, point springs (some between
    tips), random gravity."""
    rng = np.random.default_rng(seed)
    b = FlexibleSystemBuilder(gravity=tuple(rng.normal(scale=5.0, size=3)))
    parents, movable, beams = ["world"], [], []
    for k in range(n_items):
        parent = parents[rng.integers(len(parents))]
        joint = _random_joint(rng, kinds)
        p_PJ = tuple(rng.normal(scale=0.2, size=3))
        inertia = np.diag(rng.uniform(0.02, 0.03, 3))
        if k == 0 or rng.random() < 0.5:
            name = f"beam{k}"
            beam = BeamProperties.rectangular(rng.uniform(0.5, 1.5), rng.uniform(0.01, 0.04),
                                              rng.uniform(0.01, 0.04), E=rng.uniform(1e8, 7e10),
                                              poisson=rng.uniform(0.2, 0.4), density=rng.uniform(1e3, 8e3))
            b.add_beam(name, parent, joint, beam, _random_modes(rng), stiffening=bool(rng.random() < 0.7),
                       mass=rng.uniform(0.1, 1.0), com=tuple(rng.normal(scale=0.05, size=3)),
                       inertia=inertia, p_PJ=p_PJ,
                       n_sections=None if rng.random() < 0.5 else int(rng.integers(8, 14)))
            parents += [name, f"{name}.tip"]
            beams.append(name)
        else:
            name = f"body{k}"
            b.add_body(name, parent, joint, mass=rng.uniform(0.1, 1.0),
                       com=tuple(rng.normal(scale=0.1, size=3)), inertia=inertia, p_PJ=p_PJ)
            parents.append(name)
        if joint.nv and not isinstance(joint, FreeFlyer):
            movable.append(name)
    for name in movable[:2]:
        b.add_joint_force(name, JointForce(stiffness=rng.uniform(1, 10), damping=rng.uniform(0, 1),
                                           rest=0.1))
    ends = [(parents[1], parents[-1])]
    if len(beams) >= 2:
        ends.append((f"{beams[0]}.tip", f"{beams[1]}.tip"))
    for end in {e for pair in ends for e in pair if e.endswith(".tip")}:
        b.add_body(f"{end}.probe", end, Fixed(), mass=0.05)   # a tip chain must carry mass
    for a, c in ends:
        b.add_spring(a, (0.1, 0.0, 0.0), c, (0.0, 0.05, 0.0), stiffness=50.0, damping=0.5,
                     rest_length=0.1)
    return b.build()


def random_state(s, rng, scale=0.05):
    """Random q (unit quaternions), v, tau, body wrenches."""
    q = s.neutral() + rng.normal(scale=scale, size=s.nq)
    k = 0
    for i in s.real_bodies:
        j = s.model.joints[i]
        if isinstance(j, Spherical):
            q[k:k + 4] = _unit(rng, 4)
        elif isinstance(j, FreeFlyer):
            q[k + 3:k + 7] = _unit(rng, 4)
        k += j.nq
    v = rng.normal(size=s.nv)
    tau = rng.normal(size=s.nv)
    f_ext = rng.normal(size=(s.model.nbodies, 6))
    return q, v, tau, f_ext


def singular_modal_mass_system():
    """A beam "thin" with six bending modes sampled by two stations: M_ee has rank 2."""
    b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    b.add_beam("thin", "world", Revolute(axis=(0, 0, 1)),
               BeamProperties.rectangular(1.0, 0.01, 0.01, E=1e9, density=1e3),
               ModeSet(bending_y=6), mass=1.0, inertia=(0.1, 0.1, 0.1), n_sections=2)
    return b.build()
