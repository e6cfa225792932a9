"""The flexible_arm plant: both link models, outputs, physics and bad input."""
import math

import numpy as np
import pytest

from mbfmu import load_plant
from mbfmu.dynamics.flexible import natural_frequencies, simulate
from mbfmu.errors import InputError
from mbfmu.plant.library import list_plants
from mbfmu.plant import Plant


@pytest.fixture(scope="module")
def modal():
    return load_plant("flexible_arm")


@pytest.fixture(scope="module")
def segments():
    return load_plant("flexible_arm", method="segments", n_segments=10)


def test_listed_and_ports_have_si_units(modal):
    assert "flexible_arm" in list_plants()
    names = [s.name for s in modal.outputs]
    assert names[:4] == ["q[1]", "q[2]", "v[1]", "v[2]"]
    for base, unit in (("tip_position", "m"), ("tip_deflection", "m"), ("root_strain", "1")):
        assert all(s.unit == unit for s in modal.outputs if s.name.startswith(base))
    assert [s.name for s in modal.inputs] == ["tau[1]", "tau[2]"]
    assert {s.unit for s in modal.inputs} == {"N.m"}
    y = modal.outputs_at(0.0, modal.initial_state(), [0.0, 0.0])
    assert y.shape == (len(modal.outputs),)
    # straight arm along x: tip at the sum of the lengths
    i = names.index("tip_position[1]")
    assert y[i] == pytest.approx(0.8 + 0.6)


@pytest.mark.parametrize("bad, match", [
    (dict(length_1=0.0), "length_1"), (dict(payload_mass=-1.0), "payload_mass"),
    (dict(density=float("nan")), "density"), (dict(damping_ratio=-0.1), "damping_ratio"),
    (dict(n_modes=0), "n_modes"), (dict(n_segments=2.5), "n_segments"),
    (dict(method="fem"), "method"),
])
def test_bad_parameters_are_refused(bad, match):
    with pytest.raises(InputError, match=match):
        load_plant("flexible_arm", **bad)


def test_link_frequencies_are_a_few_hertz(modal):
    # each link clamped at its motor: Euler-Bernoulli 1.8751^2 sqrt(EI / (rho A L^4)) / 2 pi
    f = [b.clamped_frequency(1) / (2 * math.pi) for b in modal.beams]
    assert 5.0 < f[0] < 8.0 and 9.0 < f[1] < 14.0


def test_modes_and_segments_agree_in_first_frequencies(modal, segments):
    """Both joints free: two rigid modes, then the flexible ones."""
    w_m = natural_frequencies(modal.system, n=4)[2:]
    w_s = natural_frequencies(segments.system, n=4)[2:]
    assert np.all(w_m > 10.0)
    assert np.allclose(w_m, w_s, rtol=0.01)


def test_modes_and_segments_agree_in_a_torque_step_response(modal, segments):
    u = [0.5, -0.2]
    out = {}
    for name, plant in (("modes", modal), ("segments", segments)):
        t, X, Y = plant.simulate(0.4, 0.02, u=u)
        out[name] = Y
    ym, ys = out["modes"], out["segments"]
    names = [s.name for s in modal.outputs]
    for key in ("q[1]", "q[2]"):
        i = names.index(key)
        assert np.max(np.abs(ym[:, i] - ys[:, i])) < 0.02 * np.max(np.abs(ys[:, i]))
    for key in ("tip_deflection[1]", "tip_deflection[2]"):
        i = names.index(key)
        assert np.max(np.abs(ys[:, i])) > 1e-4   # the links do bend
        assert np.max(np.abs(ym[:, i] - ys[:, i])) < 0.1 * np.max(np.abs(ys[:, i]))


@pytest.mark.parametrize("method", ["modes", "segments"])
def test_energy_balance_without_damping(method):
    """No damping: energy gained = work of the joint torques."""
    plant = load_plant("flexible_arm", method=method, damping_ratio=0.0, n_segments=8)
    s = plant.system
    tau = plant.input_matrix @ np.array([0.3, 0.1])
    x0 = plant.state_from((0.2, -0.4))
    traj = simulate(s, x0, 0.5, tau=tau, method="DOP853", rtol=1e-10, atol=1e-12, t_eval=[0.0, 0.5])
    x1 = traj.x[-1]
    E = lambda x: sum(plant.energies(x))
    work = tau @ (x1[:s.nq] - x0[:s.nq])   # constant torques on angle coordinates
    assert E(x1) - E(x0) == pytest.approx(work, rel=1e-6)


def test_beam_deflection_matches_outputs(modal, segments):
    for plant in (modal, segments):
        x = plant.advance(0.0, plant.initial_state(), [0.5, 0.0], 0.05)
        y = plant.outputs_at(0.05, x, [0.5, 0.0])
        names = [s.name for s in plant.outputs]
        for k in (0, 1):
            L = plant.beams[k].length
            d = plant.beam_deflection(x, k, np.linspace(0, L, 7))
            assert d.shape == (7, 3)
            assert np.allclose(d[0], 0.0, atol=1e-12)
            assert d[-1, 1] == pytest.approx(y[names.index(f"tip_deflection[{k + 1}]")])
        with pytest.raises(InputError):
            plant.beam_deflection(x, 4, [0.0])


def test_root_strain_sign_follows_the_bending(modal):
    """Positive joint-1 torque accelerates the arm; inertia bends link 1
    backwards (tip deflection < 0), i.e. curvature v'' < 0 at the root and
    tension on the +y fibre."""
    x = modal.advance(0.0, modal.initial_state(), [1.0, 0.0], 0.02)
    y = modal.outputs_at(0.02, x, [1.0, 0.0])
    names = [s.name for s in modal.outputs]
    assert y[names.index("tip_deflection[1]")] < 0
    assert y[names.index("root_strain[1]")] > 0


@pytest.mark.parametrize("method", ["segments", "modes"])
def test_implicit_integrator_option_agrees_with_rk4(method):
    a = load_plant("flexible_arm", method=method, n_segments=6)
    b = load_plant("flexible_arm", method=method, n_segments=6, integrator="Radau")
    xa = a.advance(0.0, a.initial_state(), [0.5, 0.0], 0.05)
    xb = b.advance(0.0, b.initial_state(), [0.5, 0.0], 0.05)
    assert np.allclose(xa[:a.nq], xb[:b.nq], atol=1e-6)


@pytest.mark.parametrize("method", ["modes", "segments"])
def test_compiled_advance_takes_the_steps_of_the_python_one(method):
    """The default integrator runs wholly in C (``_kernels.flex_adapt`` for
    modes, ``_kernels.adapt`` for segments) the same error-controlled steps
    as ``Plant.advance`` around the Python ``derivatives``."""
    plant = load_plant("flexible_arm", method=method, n_segments=4)
    x0 = plant.state_from((0.2, -0.4), (0.5, 0.1))
    xc = plant.advance(0.0, x0, [0.5, -0.2], 0.03)
    xp = Plant.advance(plant, 0.0, x0, [0.5, -0.2], 0.03)
    assert np.allclose(xc, xp, rtol=1e-12, atol=1e-13)
    assert not np.allclose(xc, x0)


def test_each_modal_state_says_which_link_and_mode_it_is():
    """The description names the link; moving that coordinate alone bends that link
    (its tip deflection and root strain move) and leaves the other link straight."""
    import re

    from mbfmu.plant.library import load_plant
    plant = load_plant("flexible_arm")
    x0 = plant.initial_state()
    u0 = plant.default_inputs()
    names = [s.name for s in plant.outputs]
    y0 = plant.outputs_at(0.0, x0, u0) if hasattr(plant, "outputs_at") else plant.outputs(0.0, x0, u0)
    seen = {}
    for k, s in enumerate(plant.states[:plant.nq]):
        m = re.fullmatch(r"link (\d), bending in y mode (\d) \(modal coordinate\)", s.description)
        if m is None:
            assert s.description.startswith("angle of joint"), s.description
            continue
        link, mode = int(m.group(1)), int(m.group(2))
        seen.setdefault(link, []).append(mode)
        x = x0.copy()
        x[k] += 1e-3
        y = plant.outputs_at(0.0, x, u0) if hasattr(plant, "outputs_at") else plant.outputs(0.0, x, u0)
        other = 3 - link
        assert abs(y[names.index(f"tip_deflection[{link}]")] - y0[names.index(f"tip_deflection[{link}]")]) > 1e-5
        assert abs(y[names.index(f"tip_deflection[{other}]")] - y0[names.index(f"tip_deflection[{other}]")]) < 1e-12
        assert plant.states[plant.nq + k].description == f"link {link}, bending in y mode {mode} (modal rate)"
    assert seen == {1: [1, 2, 3], 2: [1, 2, 3]}
