"""ERA linearization of a third-party FMU (mbfmu.control.fmu_era):
a two-mass chain built here with pythonfmu; its exact ZOH discretization is
known, so the recovered poles and Markov parameters can be checked."""
from __future__ import annotations

import warnings

import control
import numpy as np
import pytest

from pathlib import Path

from mbfmu.control.fmu_era import ERAWarning, era, linearize_fmu
from mbfmu.errors import InputError
from tooling import reference_fmu

M1, M2, K1, K2, C1, C2 = 1.0, 0.5, 40.0, 20.0, 0.4, 0.2


def _two_mass_ss():
    """Continuous model of fmus/two_mass.py: x = [x1, v1, x2, v2]; outputs x1, x2, a2."""
    A = np.array([[0, 1, 0, 0],
                  [-(K1 + K2) / M1, -(C1 + C2) / M1, K2 / M1, C2 / M1],
                  [0, 0, 0, 1],
                  [K2 / M2, C2 / M2, -K2 / M2, -C2 / M2]])
    B = np.array([[0], [0], [0], [1 / M2]])
    C = np.vstack([[1, 0, 0, 0], [0, 0, 1, 0], A[3]])
    D = np.array([[0], [0], [1 / M2]])
    return control.ss(A, B, C, D)


def test_era_recovers_the_poles_and_markov_parameters_of_a_known_linear_fmu(two_mass_fmu):
    h = 0.05
    with pytest.warns(ERAWarning, match="not an equilibrium"):  # still swinging at t0 = 1 s
        sys_d = linearize_fmu(two_mass_fmu, step=h, t0=1.0, u0=[2.0], n_markov=60)
    assert sys_d.dt == h and sys_d.nstates == 4
    assert sys_d.linearization.confidence > 0.999  # the exact model reproduces the independent excitation
    assert sys_d.input_labels == ["F"] and sys_d.output_labels == ["x1", "x2", "a2"]
    ref = control.c2d(_two_mass_ss(), h, "zoh")
    p_era = np.sort_complex(sys_d.poles())
    p_ref = np.sort_complex(np.exp(_two_mass_ss().poles() * h))
    assert np.abs(p_era - p_ref).max() < 1e-6
    # Markov parameters C A^(k-1) B and the feedthrough D
    assert np.allclose(sys_d.D, ref.D, atol=1e-9)
    for k in (1, 2, 5, 20):
        Yk = sys_d.C @ np.linalg.matrix_power(sys_d.A, k - 1) @ sys_d.B
        Yr = ref.C @ np.linalg.matrix_power(ref.A, k - 1) @ ref.B
        assert np.abs(Yk - Yr).max() < 1e-6 * np.abs(Yr).max() + 1e-12
    info = sys_d.linearization
    assert info.method == "ERA" and info.t0 == 1.0
    assert info.hankel_singular_values[4] < 1e-7 * info.hankel_singular_values[0]


def test_era_of_a_synthetic_system_is_exact():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    A -= (np.linalg.eigvals(A).real.max() + 0.5) * np.eye(5)  # stable
    sysc = control.ss(A, rng.normal(size=(5, 2)), rng.normal(size=(2, 5)), rng.normal(size=(2, 2)))
    d = control.c2d(sysc, 0.1)
    Y = np.array([d.D] + [d.C @ np.linalg.matrix_power(d.A, k - 1) @ d.B for k in range(1, 41)])
    A, B, C, D, s = era(Y)
    assert A.shape == (5, 5)
    assert np.allclose(np.sort_complex(np.linalg.eigvals(A)), np.sort_complex(d.poles()), atol=1e-8)


def test_bad_fmu_arguments_are_named(two_mass_fmu, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        linearize_fmu(tmp_path / "nope.fmu")
    with pytest.raises(InputError, match="no real inputs"):
        linearize_fmu(two_mass_fmu, step=0.05, inputs=["G"])
    with pytest.raises(InputError, match="whole number"):
        linearize_fmu(two_mass_fmu, step=0.05, t0=0.01)


STATE_SPACE = reference_fmu("fmi3", "StateSpace")
A_SS = np.array([[-1.0, 2.0, 0.0], [-2.0, -1.0, 0.0], [0.0, 0.0, -0.5]])  # poles -1 +- 2j, -0.5


def _state_space():
    return {"A": A_SS.ravel(), "B": np.eye(3).ravel(), "C": np.eye(3).ravel(), "D": np.zeros(9)}


def test_era_on_the_fmi3_reference_state_space_fmu_recovers_its_poles():
    """The Reference FMUs' StateSpace (FMI 3, arrays) with A of known poles, at
    rest: order 3 found from the singular-value gap, the poles to the
    accuracy of the FMU's own integrator, full confidence, no warning."""
    import warnings
    h = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", ERAWarning)
        sys_d = linearize_fmu(STATE_SPACE, step=h, u0=[0.0, 0.0, 0.0], parameters=_state_space(), n_markov=60)
    assert sys_d.nstates == 3 and sys_d.input_labels == ["u[1]", "u[2]", "u[3]"]
    poles_c = np.sort_complex(np.log(sys_d.poles().astype(complex)) / h)
    np.testing.assert_allclose(poles_c, np.sort_complex(np.linalg.eigvals(A_SS)), rtol=2e-3)
    info = sys_d.linearization
    assert info.confidence > 0.99 and info.gap > 1e6 and info.drift == 0.0


def test_era_warns_off_equilibrium():
    """At rest with a constant input u = (1, 0, 0) switched on at t0 = 0 the state moves."""
    with pytest.warns(ERAWarning, match="not an equilibrium"):
        linearize_fmu(STATE_SPACE, step=0.05, u0=[1.0, 0.0, 0.0], parameters=_state_space(), n_markov=40)


@pytest.mark.parametrize("noise", [0.0, 1e-6, 1e-4, 1e-3])
def test_era_order_from_the_gap_above_the_noise_floor(noise):
    """Markov parameters of a known 4th-order system (poles -0.5 +- 3j, -2 +- 8j)
    with white noise added: the order stays 4 and the poles are found."""
    h = 0.05
    poles = np.array([-0.5 + 3j, -0.5 - 3j, -2 + 8j, -2 - 8j])
    d = control.c2d(control.ss(control.zpk([], poles, 50.0)), h)
    Y = np.array([d.D] + [d.C @ np.linalg.matrix_power(d.A, k - 1) @ d.B for k in range(1, 101)])
    Y = Y + noise * np.abs(Y).max() * np.random.default_rng(1).normal(size=Y.shape)
    A, B, C, D, s = era(Y)
    assert A.shape == (4, 4)
    found = np.sort_complex(np.log(np.linalg.eigvals(A).astype(complex)) / h)
    np.testing.assert_allclose(found, np.sort_complex(poles), rtol=max(1e-6, 3 * noise))


def test_mbfmu_built_fmu_gets_the_plants_exact_linearization(tmp_path):
    """An FMU built by mbfmu names its plant: the model is the plant's exact
    linearization discretized with ZOH, not an ERA fit. Checked against an
    independent ZOH model of the pendulum linearized by hand about its rest
    state, and against ERA of the same FMU."""
    from mbfmu.control import linearize_fmu as model_of_fmu
    from mbfmu.fmu.builder import build_fmu

    plants = Path(__file__).resolve().parents[1] / "fmu" / "plants.py"
    fmu = build_fmu(f"{plants}:DampedPendulum", tmp_path, parameters={"theta0": 0.0})
    h = 0.01
    sys_d = model_of_fmu(fmu, step=h, u0=[0.0], outputs=["theta", "omega"])
    assert "ZOH" in sys_d.linearization.method
    L, m, c, g = 1.0, 2.0, 0.1, 9.81  # DampedPendulum defaults: theta'' = -g/L sin - c/(m L2) theta' + tau/(m L2)
    ref = control.c2d(control.ss([[0, 1], [-g / L, -c / (m * L * L)]], [[0], [1 / (m * L * L)]], np.eye(2),
                                 np.zeros((2, 1))), h, "zoh")
    np.testing.assert_allclose(np.sort_complex(sys_d.poles()), np.sort_complex(ref.poles()), rtol=1e-10)
    np.testing.assert_allclose(sys_d.B, ref.B, rtol=1e-8, atol=1e-14)
    era_model = model_of_fmu(fmu, step=h, u0=[0.0], outputs=["theta", "omega"], exact=False, n_markov=60)
    assert era_model.linearization.method == "ERA"
    np.testing.assert_allclose(np.sort_complex(era_model.poles()), np.sort_complex(ref.poles()), atol=1e-6)


def test_pulses_scale_to_the_declared_nominal_then_range_then_operating_point():
    """Per input: its nominal value, else max - min, else max(1, |u0|)."""
    from types import SimpleNamespace

    from mbfmu.control.fmu_era import _pulse_scale

    variables = [SimpleNamespace(name="a", nominal="250", min=None, max=None),
                 SimpleNamespace(name="b", nominal=None, min="-3", max="5"),
                 SimpleNamespace(name="c", nominal=None, min=None, max=None),
                 SimpleNamespace(name="d", nominal=None, min=None, max=None)]
    unit = SimpleNamespace(md=SimpleNamespace(modelVariables=variables))
    scale = _pulse_scale(unit, ["a", "b", "c", "d"], np.array([0.0, 0.0, 40.0, 0.2]))
    np.testing.assert_array_equal(scale, [250.0, 8.0, 40.0, 1.0])


def test_the_tolerance_reaches_the_fmus_setup_experiment(two_mass_fmu, monkeypatch):
    """linearize_fmu hands its solver tolerance to fmi2SetupExperiment."""
    from fmpy.fmi2 import FMU2Slave

    seen = []
    real = FMU2Slave.setupExperiment

    def spy(self, *args, **kw):
        seen.append(kw.get("tolerance"))
        return real(self, *args, **kw)

    monkeypatch.setattr(FMU2Slave, "setupExperiment", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ERAWarning)  # t0 = 1 s is no equilibrium: not the point here
        linearize_fmu(two_mass_fmu, step=0.05, t0=1.0, u0=[2.0], n_markov=20, tolerance=1e-8)
    assert seen and all(tol == 1e-8 for tol in seen)
