"""The best model of each unit, checked before it is called exact or confident (issue 32, items 1, 3).

References are independent of the code under test: the Van der Pol equations
(the Reference FMU's model), the Drivetrain FMU's own Model Exchange
Jacobian by central differences, and the flexible arm's plant.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from mbfmu.control import linearize_fmu
from mbfmu.control.fmu_jacobians import CENTRAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance
from mbfmu.control.fmu_era import ERAWarning
from mbfmu.control.fmu_era import linearize_fmu as era
from mbfmu.control.jacobian_check import DerivativeWarning
from mbfmu.errors import InputError
from tooling import FMPY_FMUS, reference_fmu

DRIVETRAIN = FMPY_FMUS / "Drivetrain.fmu"


def test_vanderpol_wrong_directional_derivatives_are_caught_and_replaced():
    """The Reference VanDerPol returns 0 for d(x)/d(x): its outputs are its
    states, so C must be the identity; A is the Van der Pol Jacobian at (2, 0), mu = 1."""
    with pytest.warns(DerivativeWarning) as caught:
        sys = linearize_fmu(reference_fmu("fmi2", "VanDerPol"), step=0.01)
    message = str(caught[0].message)
    assert "VanDerPol.fmu" in message and "directional derivatives" in message and "\n" not in message
    assert "d(x0)/d(x0)" in message and "d(x1)/d(x1)" in message
    jac = sys.linearization.continuous
    np.testing.assert_allclose(jac.C, np.eye(2), atol=1e-8)
    np.testing.assert_allclose(jac.A, [[0, 1], [-2 * 1 * 2 * 0 - 1, 1 * (1 - 2 ** 2)]], atol=1e-6)
    assert "exact" not in sys.model_source and "failed the check" in sys.model_source


def test_drivetrain_era_at_its_loaded_start_reports_a_fit_below_the_threshold():
    """The load torque accelerates the drivetrain: no equilibrium. The fit is
    reported below 95 %, or the model is refused when min_fit says so."""
    with pytest.warns(ERAWarning, match=r"fit of only [\d.]+ % \(below 95 %\)") as caught:
        sys = era(DRIVETRAIN, step=1e-3)
    assert all("\n" not in str(w.message) for w in caught)
    assert sys.linearization.confidence < 0.95
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ERAWarning)
        with pytest.raises(InputError, match="Drivetrain.fmu: ERA model of order .* validated fit"):
            era(DRIVETRAIN, step=1e-3, min_fit=0.95)


def test_drivetrain_era_at_its_unloaded_start_finds_the_two_poles_of_its_model_exchange_jacobian():
    h = 1e-3
    unloaded = {"loadTorque.tau_constant": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ERAWarning)
        sys = era(DRIVETRAIN, step=h, parameters=unloaded)
    with ModelExchangeInstance(DRIVETRAIN, unloaded) as inst:
        A = jacobians(inst, method=CENTRAL).A
    exact = np.exp(np.linalg.eigvals(A) * h)
    exact = exact[np.abs(exact.imag) > 1e-6]  # the spring mode (the other two are the rigid rotation)
    assert len(exact) == 2
    for p in exact:
        assert np.min(np.abs(sys.poles() - p)) < 0.01 * abs(p)


def test_era_no_longer_reports_confidence_on_the_flexible_arm_it_cannot_model(native_flexible_arm):
    """ERA misses flexible modes of the arm (1888 rad/s is above what 80 steps
    at 1 ms resolve well): the validated fit says so."""
    with pytest.warns(ERAWarning, match="below 95 %"):
        sys = era(native_flexible_arm, step=1e-3)
    assert sys.linearization.confidence < 0.95


def test_the_native_fmu_is_modelled_by_its_checked_directional_derivatives(native_flexible_arm):
    """Equal to the plant's exact linearization discretized at the step (the same model, two routes)."""
    import sys as _sys
    from pathlib import Path
    _sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
    import control
    import flexible_arm_study as study
    import mbfmu
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fmu = linearize_fmu(native_flexible_arm, step=1e-3)
    assert fmu.model_source == "FMU directional derivatives (checked)"
    plant = mbfmu.linearize(study.make_plant())
    ref = control.c2d(plant, 1e-3, "zoh")
    idx = [list(fmu.output_labels).index(n) for n in plant.output_labels]
    w = np.logspace(0, 3, 30)
    got, want = control.frequency_response(fmu[idx, :], w).frdata, control.frequency_response(ref, w).frdata
    assert np.abs(got - want).max() < 1e-4 * np.abs(want).max()  # the C tangent and the Python plant agree


def test_cli_warnings_are_one_line_without_file_paths(capsys, tmp_path):
    from mbfmu.cli import main
    assert main(["linearize", str(reference_fmu("fmi2", "VanDerPol")), "--step", "0.01",
                 "-o", str(tmp_path / "vdp.npz")]) == 0
    out, err = capsys.readouterr()
    assert "model: central differences of the FMU (its directional derivatives failed the check)" in out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("warning: VanDerPol.fmu: its directional derivatives")
    assert not any(".py" in ln or "warnings.warn" in ln for ln in lines)


def test_fmi3_native_fmu_uses_its_checked_directional_derivatives(native_fmus):
    """FMI 3 declares providesDirectionalDerivatives (fmpy reads only FMI 2's
    attribute); the model is the plant's exact one, with no false alarm of the
    probe on kinetic_energy (its derivative is zero at rest: the central
    difference's own error must not count as a mismatch)."""
    import control
    import mbfmu
    fmu = native_fmus("rigid_arm", platforms=("linux64",), fmi_version=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sys = linearize_fmu(fmu, step=1e-3)
    assert sys.model_source == "FMU directional derivatives (checked)"
    ref = control.c2d(mbfmu.linearize(mbfmu.load_plant("rigid_arm")), 1e-3, "zoh")
    idx = [list(sys.output_labels).index(n) for n in ref.output_labels]
    w = np.logspace(-1, 3, 20)
    got, want = control.frequency_response(sys[idx, :], w).frdata, control.frequency_response(ref, w).frdata
    assert np.abs(got - want).max() < 1e-8 * np.abs(want).max()


def test_cli_prints_eras_fit_warning_as_one_line_and_names_the_model(capsys, tmp_path):
    """The CLI's warning format (mbfmu.cli.one_line_warnings) on ERA's warning;
    an FMU without directional derivatives (FMI 3 StateSpace) is modelled by
    ERA and the output says so, with the fit."""
    from mbfmu.cli import main, one_line_warnings
    with one_line_warnings():
        warnings.simplefilter("always")
        era(DRIVETRAIN, step=1e-3)
    err = capsys.readouterr().err
    warned = [ln for ln in err.splitlines() if ln.strip()]
    assert warned and all(ln.startswith("warning: Drivetrain.fmu: ") for ln in warned)
    assert any("ERA model of order" in ln for ln in warned)
    assert "Warning:" not in err and ".py" not in err  # no Python warning format, no file paths
    assert main(["linearize", str(reference_fmu("fmi3", "StateSpace")), "-o", str(tmp_path / "ss.npz")]) == 0
    assert "model: ERA (validated fit 100.0 %)" in capsys.readouterr().out
