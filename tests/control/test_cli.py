"""``mbfmu linearize``: modal table and saved matrices."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mbfmu.cli import main
from mbfmu.control.cli import modal_table

from ctl_plants import G

HERE = Path(__file__).parent


def test_modal_table_of_continuous_and_discrete_poles():
    s = -0.5 + 4j
    for p, dt in ((s, None), (np.exp(s * 0.01), 0.01)):
        (pole, wn, fn, zeta), = modal_table([p], dt)
        assert np.isclose(wn, abs(s)) and np.isclose(fn, abs(s) / (2 * np.pi))
        assert np.isclose(zeta, 0.5 / abs(s))


def test_cli_linearizes_a_model_file_at_a_trimmed_point(tmp_path, capsys):
    """Pendulum trimmed under torque tau: w^2 = g cos(theta) / l, theta = asin(tau / (m g l))."""
    out = tmp_path / "pend.npz"
    m, l, tau = 2.0, 0.5, 3.0
    rc = main(["linearize", str(HERE / "pendulum_model.py"), "--param", f"m={m},l={l}", "--at", "trim",
               "--u", f"tau={tau}", "--step", "0.01", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    w = np.sqrt(G * np.cos(np.arcsin(tau / (m * G * l))) / l)
    assert f"{w:12.6g}" in text and f"{w / (2 * np.pi):10.6g}" in text
    data = np.load(out)
    assert data["A"].shape == (2, 2) and list(data["inputs"]) == ["tau"]
    assert np.allclose(np.sort(np.abs(np.linalg.eigvals(data["A"]).imag)), [w, w])
    assert data["Ad"].shape == (2, 2)


def test_cli_linearizes_an_fmu(two_mass_fmu, tmp_path, capsys):
    out = tmp_path / "fmu.npz"
    rc = main(["linearize", str(two_mass_fmu), "--step", "0.05", "--at", "0.5", "--markov", "60", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "ERA" in text
    data = np.load(out)
    assert data["A"].shape == (4, 4) and data["dt"] == 0.05


def test_cli_reports_bad_input(capsys):
    rc = main(["linearize", str(HERE / "pendulum_model.py"), "--u", "tau"])
    assert rc == 1
    assert "name=value" in capsys.readouterr().err
