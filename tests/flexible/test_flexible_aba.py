"""The compiled flexible articulated-body algorithm against the dense projection.

``FlexibleSystem.accelerations`` runs the O(N) flexible ABA in C by default;
``method="projection"`` is the independent dense solve
``(G^T M_v G) v_dot = F`` built from the engine's crba and rnea over the
virtual tree. Both are exact for the same model, so they agree to rounding.
"""
import math

import numpy as np
import pytest

from mbfmu.dynamics import Fixed, Revolute, Spherical, _kernels
from mbfmu.dynamics.flexible import BeamProperties, FlexibleSystemBuilder, ModeSet, simulate
from mbfmu.errors import InputError, SimulationError

from .random_systems import random_state, random_system, singular_modal_mass_system

RTOL = 1e-10


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def rigid_joint_starts(s):
    """(first velocity index, size) of every rigid joint with coordinates."""
    out, k = [], 0
    for i in s.real_bodies:
        j = s.model.joints[i]
        if j.nv:
            out.append((k, j.nv))
        k += j.nv
    return out


@pytest.mark.parametrize("seed", range(12))
def test_aba_matches_projection_on_random_trees(seed):
    s = random_system(seed)
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        q, v, tau, f_ext = random_state(s, rng)
        a = s.accelerations(q, v, tau, f_ext, method="aba")
        ref = s.accelerations(q, v, tau, f_ext, method="projection")
        assert rel_err(a, ref) < RTOL
        # qdot and the default path of rhs
        x = np.r_[q, v]
        assert np.array_equal(s.rhs(0.0, x, tau, f_ext)[s.nq:], a)
        assert np.allclose(s.rhs(0.0, x, tau, f_ext)[:s.nq], s.qdot(q, v), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_aba_matches_projection_with_universal_and_planar_joints(seed):
    """Joints whose motion subspace moves (S-ring terms in the bias)."""
    s = random_system(3000 + seed, kinds=("universal", "planar", "revolute"))
    rng = np.random.default_rng(seed)
    q, v, tau, f_ext = random_state(s, rng, scale=0.3)
    ref = s.accelerations(q, v, tau, f_ext, method="projection")
    assert rel_err(s.accelerations(q, v, tau, f_ext), ref) < RTOL


@pytest.mark.parametrize("seed", range(6))
def test_aba_matches_projection_without_inputs_and_with_large_deformation(seed):
    s = random_system(1000 + seed, kinds=("revolute", "ball", "fixed"))
    rng = np.random.default_rng(seed)
    q, v, _, _ = random_state(s, rng, scale=0.3)
    # two backward-stable solves of one system agree to about cond(M) * eps, not better:
    # at large deformation M reaches cond ~ 3e7 (seed 2), so RTOL alone would test rounding luck
    bound = max(RTOL, np.finfo(float).eps * np.linalg.cond(s.mass_matrix(q)))
    assert rel_err(s.accelerations(q, v), s.accelerations(q, v, method="projection")) < bound


@pytest.mark.parametrize("seed", range(8))
def test_hybrid_aba_with_prescribed_joints_matches_projection(seed):
    s = random_system(2000 + seed)
    rng = np.random.default_rng(seed)
    joints = rigid_joint_starts(s)
    pick = [joints[k] for k in rng.permutation(len(joints))[:max(1, len(joints) // 2)]]
    idx = [first + k for first, n in pick for k in range(n)]
    acc = rng.normal(size=len(idx))
    assert s.fast_path_reason((idx, acc)) is None
    q, v, tau, f_ext = random_state(s, rng)
    a = s.accelerations(q, v, tau, f_ext, prescribed=(idx, acc), method="aba")
    ref = s.accelerations(q, v, tau, f_ext, prescribed=(idx, acc), method="projection")
    assert np.array_equal(a[idx], acc)
    assert rel_err(a, ref) < RTOL


def test_prescribed_modal_or_partial_joint_falls_back_to_the_projection():
    b = FlexibleSystemBuilder(gravity=(0, 0, -9.81))
    b.add_beam("beam", "world", Spherical(), BeamProperties.rectangular(1.0, 0.02, 0.03, E=1e9, density=2e3),
               ModeSet(bending_y=2), mass=0.1, inertia=(1e-3, 1e-3, 1e-3))
    s = b.build()
    q, v, tau, _ = random_state(s, np.random.default_rng(0))
    for idx, why in (([0], "one of the 3 coordinates"), ([3], "modal coordinate")):
        pres = (idx, [0.7])
        assert why in s.fast_path_reason(pres)
        with pytest.raises(InputError, match=why):
            s.accelerations(q, v, tau, prescribed=pres, method="aba")
        a = s.accelerations(q, v, tau, prescribed=pres)
        assert np.allclose(a, s.accelerations(q, v, tau, prescribed=pres, method="projection"),
                           rtol=0, atol=0)
        assert a[idx[0]] == 0.7


def test_spinup_beam_with_prescribed_hub_uses_the_fast_path():
    from mbfmu.dynamics.flexible.spinup import spinup_system
    s, _ = spinup_system("modes", 4)
    assert s.fast_path_reason(([0], [1.0])) is None
    q, v, tau, _ = random_state(s, np.random.default_rng(3))
    a = s.accelerations(q, v, tau, prescribed=([0], [0.4]))
    assert rel_err(a, s.accelerations(q, v, tau, prescribed=([0], [0.4]), method="projection")) < RTOL


def chain_of_beams():
    """Rigid pendulum on a beam frame, a second beam on the first one's tip,
    a payload on its tip: undamped, under gravity."""
    beam = BeamProperties.rectangular(0.6, 0.02, 0.004, E=70e9, density=2700.0)
    b = FlexibleSystemBuilder(gravity=(0, 0, -9.81))
    b.add_beam("upper", "world", Revolute(axis=(0, 1, 0)), beam, ModeSet(bending_y=0, bending_z=2),
               mass=0.05, inertia=(1e-5, 1e-5, 1e-5))
    b.add_body("pendulum", "upper", Revolute(axis=(0, 1, 0)), mass=0.05, com=(0.0, 0.0, -0.1),
               inertia=(1e-5, 1e-5, 1e-5), p_PJ=(0.1, 0.0, 0.0))
    b.add_beam("lower", "upper.tip", Revolute(axis=(0, 1, 0)), beam,
               ModeSet(bending_y=0, bending_z=2), mass=0.02, inertia=(1e-5, 1e-5, 1e-5))
    b.add_body("bob", "lower.tip", Fixed(), mass=0.1, inertia=(1e-5, 1e-5, 1e-5))
    return b.build()


def test_energy_is_conserved_by_the_compiled_path():
    s = chain_of_beams()
    x0 = np.zeros(s.nq + s.nv)
    x0[:3] = [1.0, -0.5, 0.3]
    x = x0[:s.nq], x0[s.nq:]
    # the integrators' right-hand side is the compiled one
    assert np.array_equal(s.rhs(0.0, x0)[s.nq:], s.accelerations(*x, method="aba"))
    E = lambda x: s.kinetic_energy(x[:s.nq], x[s.nq:]) + s.potential_energy(x[:s.nq])
    traj = simulate(s, x0, 1.0, method="DOP853", rtol=1e-10, atol=1e-12, t_eval=[0.0, 0.5, 1.0])
    E0 = E(x0)
    assert max(abs(E(x) - E0) for x in traj.x) < 1e-7 * abs(E0)
    assert np.max(np.abs(traj.x[:, 3:s.nq])) > 1e-5   # the beams did bend


def test_bad_input_raises_and_never_crashes():
    s = random_system(7)
    q, v, tau, f_ext = random_state(s, np.random.default_rng(0))
    beam = s.beams[0]
    bad = q.copy()
    bad[beam.offset] = math.nan
    with pytest.raises(InputError, match=rf"q\[{beam.offset + 1}\] \({beam.name}\.eta\[1\]\) is nan"):
        s.accelerations(bad, v)
    with pytest.raises(InputError, match=r"eta_dot\[1\]"):
        v2 = v.copy()
        v2[s.nv_rigid] = math.inf
        s.rhs(0.0, np.r_[q, v2])
    with pytest.raises(InputError, match="has 3 values"):
        s.rhs(0.0, np.r_[q, v], tau=np.zeros(3))
    with pytest.raises(InputError, match="f_ext"):
        s.accelerations(q, v, f_ext=np.zeros((2, 6)))
    with pytest.raises(InputError, match="out of range"):
        _kernels.flex_rhs(s._fh, q, v, tau, None, np.array([s.nv + 3]), np.array([1.0]))
    with pytest.raises(InputError, match="method"):
        s.accelerations(q, v, method="dense")
    with pytest.raises(TypeError):
        _kernels.flex_rhs(s.model._h, q, v, tau)


def test_singular_modal_mass_is_a_simulation_error():
    s = singular_modal_mass_system()
    with pytest.raises(SimulationError, match="thin"):
        s.accelerations(s.neutral(), np.zeros(s.nv))


def test_joint_moving_no_inertia_is_a_simulation_error():
    """A point mass spinning about an axis through itself: its joint's
    articulated inertia S^T IA S is zero."""
    b = FlexibleSystemBuilder(gravity=(0, 0, -9.81))
    b.add_beam("arm", "world", Revolute(axis=(0, 0, 1)),
               BeamProperties.rectangular(1.0, 0.01, 0.01, E=1e9, density=1e3), ModeSet(bending_y=2),
               mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_body("spinner", "arm.tip", Revolute(axis=(1, 0, 0)), mass=0.5)
    s = b.build()
    with pytest.raises(SimulationError, match="spinner"):
        s.accelerations(s.neutral(), np.zeros(s.nv), method="aba")
