"""The compiled fixed-step RK4 loop of flexible systems (``FlexibleSystem.step_rk4``).

It runs the rigid kernels' RK4 loop (``mb_rk4_steps``) on ``x = [q; v]`` with
the flexible ABA as right-hand side, so it must reproduce a Python RK4
around ``FlexibleSystem.rhs`` (with the same quaternion renormalization) to
rounding. Also: a tree of rigid bodies only is a valid flexible system.
"""
import math

import numpy as np
import pytest

from mbfmu.dynamics import (Fixed, FreeFlyer, JointForce, ModelBuilder, Prismatic, Revolute,
                            Spherical, _kernels, aba)
from mbfmu.dynamics.flexible import BeamProperties, FlexibleSystemBuilder, ModeSet
from mbfmu.errors import InputError, SimulationError

from .random_systems import random_state, random_system, singular_modal_mass_system


def quaternion_slices(s):
    """Slices of q holding the unit quaternions of ball and free joints."""
    out, k = [], 0
    for i in s.real_bodies:
        j = s.model.joints[i]
        if isinstance(j, Spherical):
            out.append(slice(k, k + 4))
        elif isinstance(j, FreeFlyer):
            out.append(slice(k + 3, k + 7))
        k += j.nq
    return out


def python_rk4(s, q, v, tau, f_ext, h, n):
    """``n`` classical RK4 steps around ``s.rhs``, quaternions renormalized
    after each step (the reference of the compiled loop)."""
    x = np.r_[q, v]
    quats = quaternion_slices(s)
    for _ in range(n):
        k1 = s.rhs(0.0, x, tau, f_ext)
        k2 = s.rhs(0.0, x + h / 2 * k1, tau, f_ext)
        k3 = s.rhs(0.0, x + h / 2 * k2, tau, f_ext)
        k4 = s.rhs(0.0, x + h * k3, tau, f_ext)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        for sl in quats:
            x[sl] /= np.linalg.norm(x[sl])
    return x[:s.nq], x[s.nq:]


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.mark.parametrize("seed, kinds", [(0, ("revolute", "prismatic", "ball", "free", "fixed")),
                                         (1, ("revolute", "prismatic", "ball", "free", "fixed")),
                                         (2, ("revolute", "prismatic", "ball", "free", "fixed")),
                                         (5, ("revolute", "prismatic", "ball", "free", "fixed")),
                                         (4100, ("ball", "free", "revolute")),
                                         (4101, ("universal", "planar", "revolute"))])
def test_compiled_loop_equals_python_rk4_around_rhs(seed, kinds):
    s = random_system(seed, kinds=kinds)
    q, v, tau, f_ext = random_state(s, np.random.default_rng(seed))
    h, n = 1e-4, 25
    qc, vc = s.step_rk4(q, v, tau, h, n, f_ext)
    qp, vp = python_rk4(s, q, v, tau, f_ext, h, n)
    assert rel_err(qc, qp) < 1e-12
    assert rel_err(vc, vp) < 1e-12
    for sl in quaternion_slices(s):
        assert np.linalg.norm(qc[sl]) == pytest.approx(1.0, abs=1e-15)
    assert rel_err(qc, q) > 1e-6   # it did move


def test_random_trees_of_the_loop_test_include_ball_and_free_joints():
    kinds = {type(s.model.joints[i]) for s in (random_system(2), random_system(5),
                                               random_system(4100, kinds=("ball", "free", "revolute")))
             for i in s.real_bodies}
    assert {Spherical, FreeFlyer} <= kinds


def test_zero_steps_return_the_state_and_tau_defaults_to_zero():
    s = random_system(3)
    q, v, _, _ = random_state(s, np.random.default_rng(1))
    q0, v0 = s.step_rk4(q, v, None, 1e-3, 0)
    assert np.array_equal(q0, q) and np.array_equal(v0, v)
    a = s.step_rk4(q, v, None, 1e-4, 3)
    b = s.step_rk4(q, v, np.zeros(s.nv), 1e-4, 3)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def flexible_pendulum(joint):
    """Undamped beam hanging from ``joint`` (bending both ways, axial and
    torsion modes, stiffening) with a tip mass, under gravity."""
    beam = BeamProperties.rectangular(0.5, 0.01, 0.012, E=5e9, density=2700.0)
    b = FlexibleSystemBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_beam("rod", "world", joint, beam,
               ModeSet(bending_y=2, bending_z=2, axial=1, torsion=1), mass=0.05,
               inertia=(1e-4, 1e-4, 1e-4),
               R_PJ=np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]))  # beam along -z
    b.add_body("bob", "rod.tip", Fixed(), mass=0.2, inertia=(2e-5, 2e-5, 2e-5))
    return b.build()


def energy_drift(s, h, t_final=0.25, checks=5):
    """Largest |E(t) - E(0)| over ``checks`` instants up to ``t_final`` s of
    compiled RK4 steps of ``h`` s, relative to the initial kinetic energy;
    and the final q."""
    q, v = s.neutral(), np.zeros(s.nv)
    v[:s.nv_rigid] = 2.0 if s.nv_rigid == 1 else (1.5, 2.0, 0.5)   # a large swing, spinning
    E = lambda q, v: s.kinetic_energy(q, v) + s.potential_energy(q)  # noqa: E731
    E0, scale = E(q, v), s.kinetic_energy(q, v)
    drift = 0.0
    for _ in range(checks):
        q, v = s.step_rk4(q, v, None, h, int(round(t_final / checks / h)))
        drift = max(drift, abs(E(q, v) - E0) / scale)
    return drift, q


@pytest.mark.parametrize("joint", [Revolute(axis=(0, 1, 0)), Spherical()], ids=["revolute", "ball"])
def test_energy_is_conserved_on_an_undamped_flexible_pendulum(joint):
    s = flexible_pendulum(joint)
    coarse, _ = energy_drift(s, 1e-4)
    drift, q = energy_drift(s, 5e-5)
    assert drift < 2e-8
    assert coarse / drift > 16      # the RK4 truncation error, not a modelling one
    assert np.max(np.abs(q[s.nq_rigid:])) > 1e-5   # the beam bends
    for sl in quaternion_slices(s):
        assert np.linalg.norm(q[sl]) == pytest.approx(1.0, abs=1e-15)


def test_bad_input_raises_and_never_crashes():
    s = random_system(7)
    q, v, tau, f_ext = random_state(s, np.random.default_rng(0))
    beam = s.beams[0]
    bad = q.copy()
    bad[beam.offset] = math.nan
    with pytest.raises(InputError, match=rf"q\[{beam.offset + 1}\] \({beam.name}\.eta\[1\]\) is nan"):
        s.step_rk4(bad, v, tau, 1e-4, 2)
    v2 = v.copy()
    v2[s.nv_rigid] = -math.inf
    with pytest.raises(InputError, match=r"eta_dot\[1\]\) is -inf"):
        s.step_rk4(q, v2, tau, 1e-4, 2)
    with pytest.raises(InputError, match="tau has 3 values"):
        s.step_rk4(q, v, np.zeros(3), 1e-4, 2)
    with pytest.raises(InputError, match="f_ext"):
        s.step_rk4(q, v, tau, 1e-4, 2, f_ext=np.zeros((2, 6)))
    for h, n in ((0.0, 2), (-1e-3, 2), (math.nan, 2), (1e-3, -1)):
        with pytest.raises(InputError, match="step"):
            s.step_rk4(q, v, tau, h, n)
    with pytest.raises(InputError, match=r"step \(-0.001 s\)"):   # the number, not "%g"
        s.step_rk4(q, v, tau, -1e-3, 2)
    with pytest.raises(InputError, match="prescribed"):
        s.step_rk4(q, v, tau, 1e-4, 2, prescribed=([0], [1.0]))
    with pytest.raises(TypeError):
        _kernels.flex_rk4(s.model._h, q, v, tau, 1e-4, 2)


def test_unstable_step_is_a_simulation_error():
    """Far beyond the RK4 stability limit of the stiff modes."""
    s = flexible_pendulum(Revolute(axis=(0, 1, 0)))
    q, v = s.neutral(), np.zeros(s.nv)
    v[0] = 2.0
    with pytest.raises(SimulationError, match=r"(non-finite|singular state) within 200 steps of 0.05 s.*reduce the step"):
        s.step_rk4(q, v, None, 0.05, 200)


def test_singular_modal_mass_is_a_simulation_error():
    s = singular_modal_mass_system()
    with pytest.raises(SimulationError, match="thin"):
        s.step_rk4(s.neutral(), np.zeros(s.nv), None, 1e-3, 3)


# ---- a tree of rigid bodies only -------------------------------------------------

def rigid_tree(builder):
    """The same rigid tree (ball, free, revolute and prismatic joints) on a
    ModelBuilder or a FlexibleSystemBuilder."""
    I = lambda a, b, c: np.diag([a, b, c])  # noqa: E731
    builder.add_body("base", "world", FreeFlyer(), mass=2.0, com=(0.0, 0.1, 0.0), inertia=I(0.1, 0.2, 0.15))
    builder.add_body("arm", "base", Spherical(), mass=0.7, com=(0.2, 0.0, 0.0), inertia=I(0.01, 0.03, 0.02),
                     p_PJ=(0.1, 0.0, 0.05))
    builder.add_body("fore", "arm", Revolute(axis=(0.0, 0.6, 0.8)), mass=0.4, com=(0.15, 0.0, 0.0),
                     inertia=I(0.004, 0.01, 0.008), p_PJ=(0.4, 0.0, 0.0))
    builder.add_body("slider", "base", Prismatic(axis=(1.0, 0.0, 0.0)), mass=0.3,
                     inertia=I(0.002, 0.002, 0.002), p_PJ=(0.0, -0.2, 0.0))
    builder.add_body("tool", "fore", Fixed(), mass=0.1, inertia=I(1e-4, 1e-4, 1e-4), p_PJ=(0.3, 0.0, 0.0))


def test_system_without_beams_builds_and_equals_the_rigid_engine():
    fb = FlexibleSystemBuilder(gravity=(0.0, -1.0, -9.81))
    rigid_tree(fb)
    s = fb.build()
    mb = ModelBuilder(gravity=(0.0, -1.0, -9.81))
    rigid_tree(mb)
    model = mb.build()
    assert (s.nf, s.nq, s.nv, s.beams) == (0, model.nq, model.nv, ())
    rng = np.random.default_rng(11)
    q, v, tau, f_ext = random_state(s, rng, scale=0.3)
    ref = aba(model, q, v, tau, f_ext)
    assert rel_err(s.accelerations(q, v, tau, f_ext), ref) < 1e-12
    assert rel_err(s.accelerations(q, v, tau, f_ext, method="projection"), ref) < 1e-10
    x = np.r_[q, v]
    assert np.allclose(s.rhs(0.0, x, tau, f_ext)[:s.nq], _kernels.qdot(model._h, q, v), rtol=0, atol=1e-14)
    qr, vr = _kernels.rk4(model._h, q, v, tau, 1e-3, 20, f_ext)
    qc, vc = s.step_rk4(q, v, tau, 1e-3, 20, f_ext)
    assert rel_err(qc, qr) < 1e-12 and rel_err(vc, vr) < 1e-12
    assert s.kinetic_energy(q, v) > 0 and math.isfinite(s.potential_energy(q))


def test_system_without_beams_keeps_its_force_elements():
    fb = FlexibleSystemBuilder(gravity=(0.0, 0.0, -9.81))
    fb.add_body("a", "world", Revolute(axis=(0, 1, 0)), mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01)
    fb.add_body("b", "a", Revolute(axis=(0, 1, 0)), mass=0.5, com=(0.2, 0, 0), inertia=np.eye(3) * 0.01,
                p_PJ=(0.6, 0, 0))
    fb.add_joint_force("b", JointForce(stiffness=20.0, damping=0.3, rest=0.2))
    fb.add_spring("world", (0.0, 0.0, 0.5), "b", (0.2, 0.0, 0.0), stiffness=30.0, damping=0.1)
    s = fb.build()
    q, v = np.array([0.4, -0.7]), np.array([1.0, -2.0])
    qd, vd = _kernels.rhs(s.model._h, q, v, np.zeros(2))
    assert rel_err(s.rhs(0.0, np.r_[q, v]), np.r_[qd, vd]) < 1e-12
    assert rel_err(s.accelerations(q, v, method="projection"), vd) < 1e-10
