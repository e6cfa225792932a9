"""``mbfmu linearize``: modal table and saved matrices."""
from __future__ import annotations

import itertools

from pathlib import Path

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.control.cli import modal_lines, modal_table

from ctl_plants import G

HERE = Path(__file__).parent


def test_modal_table_of_continuous_and_discrete_poles():
    s = -0.5 + 4j
    for p, dt in ((s, None), (np.exp(s * 0.01), 0.01)):
        (pole, wn, fn, zeta), = modal_table([p], dt)
        assert np.isclose(wn, abs(s)) and np.isclose(fn, abs(s) / (2 * np.pi))
        assert np.isclose(zeta, 0.5 / abs(s))


def test_pole_table_prints_zeta_only_for_oscillatory_poles_and_round_off_as_zero():
    """s = 0 (z = 1) and real poles get no damping ratio ("-", not 1 or -1);
    a pair's zeta is -Re(s)/|s|; parts of 1e-20 are round-off, shown as 0."""
    s = np.array([0.0, 3.0, -3.0, -1 + 2j, -1 - 2j, 4e-21 + 1e-20j])
    for poles, dt, zero in ((s, None, "s = 0"), (np.exp(s * 0.01), 0.01, "z = 1 (s = 0)")):
        lines = modal_lines(poles, dt)
        assert lines[0].split() == ["pole", "wn", "[rad/s]", "fn", "[Hz]", "zeta", "kind"]
        rows = [line.split(None, 5) for line in lines[1:]]  # pole re, im, wn, fn, zeta, kind
        zeros = [r for r in rows if r[5] == zero]
        assert len(zeros) == 2 and all(r[1] == "+0j" and r[4] == "-" and float(r[2]) == 0 for r in zeros)
        for kind in ("real, unstable", "real"):
            [real] = [r for r in rows if r[5] == kind]
            assert real[4] == "-" and np.isclose(float(real[2]), 3.0, rtol=1e-5)
        pair = [r for r in rows if r[5] == "oscillatory"]
        assert len(pair) == 2 and all(np.isclose(float(r[4]), 1 / np.sqrt(5), atol=1e-4) for r in pair)


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


# ---------------------------------------------------------------------------- guard rails
def _printed_values(text: str) -> dict[str, float]:
    """``name = value unit`` lines of the printed operating point."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=":
            out[parts[0]] = float(parts[2])
    return out


def test_cli_prints_the_operating_point_trim_found(tmp_path, capsys):
    """Pendulum under torque tau rests at sin(theta) = tau / (m g l), at rest."""
    m, l, tau = 2.0, 0.5, 3.0
    rc = main(["linearize", str(HERE / "pendulum_model.py"), "--param", f"m={m},l={l}", "--at", "trim",
               "--u", f"tau={tau}", "-o", str(tmp_path / "p.npz")])
    assert rc == 0
    captured = capsys.readouterr()
    assert "operating point (trim)" in captured.out and "warning" not in captured.err
    values = _printed_values(captured.out)
    assert np.isclose(abs(values["q[1]"]), np.arcsin(tau / (m * G * l)), rtol=1e-8)
    assert values["v[1]"] == 0.0 and values["tau"] == tau


def test_cli_warns_when_the_point_is_not_an_equilibrium(tmp_path, capsys):
    """The pendulum hanging at rest is an equilibrium (no warning); the rigid
    arm at its initial pose (0, 45 deg, -45 deg) falls under gravity."""
    rc = main(["linearize", str(HERE / "pendulum_model.py"), "--param", "l=0.5",
               "-o", str(tmp_path / "p.npz")])
    assert rc == 0 and "not an equilibrium" not in capsys.readouterr().err
    rc = main(["linearize", "rigid_arm", "-o", str(tmp_path / "arm.npz")])
    err = capsys.readouterr().err
    assert rc == 0 and "warning: the operating point is not an equilibrium" in err


def test_cli_refuses_to_overwrite_a_linear_model_without_force(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    default = tmp_path / "test_pendulum_linear.npz"
    default.write_bytes(b"an earlier model")
    rc = main(["linearize", str(HERE / "pendulum_model.py")])
    captured = capsys.readouterr()
    assert rc == 1 and default.read_bytes() == b"an earlier model"
    assert "exists" in captured.err and "--force" in captured.err and len(captured.err.splitlines()) == 1
    (tmp_path / "mine.npz").write_bytes(b"kept")
    assert main(["linearize", str(HERE / "pendulum_model.py"), "-o", "mine"]) == 1  # numpy would append .npz
    assert (tmp_path / "mine.npz").read_bytes() == b"kept"
    assert main(["linearize", str(HERE / "pendulum_model.py"), "--force"]) == 0
    assert np.load(default)["A"].shape == (2, 2)


def test_cli_refuses_to_overwrite_before_identifying_an_fmu(two_mass_fmu, tmp_path, capsys):
    out = tmp_path / "fmu.npz"
    out.write_bytes(b"kept")
    assert main(["linearize", str(two_mass_fmu), "--step", "0.05", "-o", str(out)]) == 1
    assert out.read_bytes() == b"kept" and "exists" in capsys.readouterr().err


@pytest.mark.parametrize("at", ["trim", "x[1]=0.1"])
def test_cli_at_trim_on_an_fmu_is_a_one_line_error(two_mass_fmu, tmp_path, capsys, at):
    rc = main(["linearize", str(two_mass_fmu), "--at", at, "-o", str(tmp_path / "f.npz")])
    err = capsys.readouterr().err
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert f"--at {at!r} is not available for an FMU" in err and "Traceback" not in err


def test_operating_point_prints_round_off_as_zero(tmp_path, capsys):
    """The trimmed rigid arm holds still: its rates are zero up to round-off
    (the trim leaves values like 3e-24 rad/s), printed as 0; every other
    printed value is a real number of the point."""
    assert main(["linearize", "rigid_arm", "--at", "trim", "-o", str(tmp_path / "arm.npz")]) == 0
    text = capsys.readouterr().out
    lines = text.split("operating point", 1)[1].splitlines()[1:]
    point = dict(line.split(" = ", 1) for line in itertools.takewhile(lambda l: l.startswith("  "), lines))
    values = {name.strip(): float(rest.split()[0]) for name, rest in point.items()}
    assert len(values) == 9 and all(v == 0.0 or abs(v) > 1e-12 for v in values.values())
    assert [values[f"v[{k}]"] for k in (1, 2, 3)] == [0.0, 0.0, 0.0]
