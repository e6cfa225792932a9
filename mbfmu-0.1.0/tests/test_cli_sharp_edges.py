"""The command line's sharp edges a newcomer meets first: mistyped flags and
names get the sub-command's usage and a "did you mean", bad input exits 1 in
one line, repeated flags are not silently dropped, help text is plain."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mbfmu.cli import main


def _run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's exits
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_mistyped_flag_prints_the_subcommands_usage_with_a_suggestion_and_exits_1(capsys):
    rc, _, err = _run(capsys, "simulate", "x.fmu", "--stop-tme", "2")
    assert rc == 1
    assert err.startswith("usage: mbfmu simulate") and "did you mean --stop-time?" in err


def test_a_mistyped_command_gets_a_suggestion_and_exits_1(capsys):
    rc, _, err = _run(capsys, "simulte", "x.fmu")
    assert rc == 1 and "did you mean simulate?" in err


@pytest.mark.parametrize("argv, words", [
    (["list", "rigd_arm"], ["unknown plant 'rigd_arm'", "did you mean 'rigid_arm'?"]),
    (["build", "rigid_arm", "-p", "arm_mas=3", "-o", "OUT"], ["has no parameter 'arm_mas'", "did you mean 'arm_mass'"]),
    (["linearize", "rigid_arm", "--at", "trm"], ["did you mean 'trim'?"]),
    (["linearize", "rigid_arm", "--param", "arm_mass=30", "--param", "arm_mass=40"], ["'arm_mass' is given twice"]),
])
def test_bad_names_get_one_line_with_the_closest_known_name(argv, words, capsys, tmp_path):
    rc, _, err = _run(capsys, *[str(tmp_path) if a == "OUT" else a for a in argv])
    assert rc == 1
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "TypeError" not in err
    for w in words:
        assert w in err, err


def test_help_texts_are_plain_and_every_command_says_what_it_does():
    for command in ("list", "build", "simulate", "linearize", "view", "demo", "sweep"):
        res = subprocess.run([sys.executable, "-m", "mbfmu", command, "--help"], capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 0, res.stderr
        assert "``" not in res.stdout and ":func:" not in res.stdout, command
        usage_and_description = res.stdout.split("positional arguments")[0].split("options:")[0]
        assert len(usage_and_description.splitlines()) > 3, f"{command} has no description"


def test_list_is_one_line_per_plant_unless_asked_for_more(capsys):
    from mbfmu.plant.library import list_plants
    rc, short, _ = _run(capsys, "list")
    assert rc == 0 and len(short.strip().splitlines()) == len(list_plants()) + 1
    rc, long, _ = _run(capsys, "list", "--long")
    assert rc == 0 and len(long.splitlines()) > 5 * len(list_plants())
    rc, one, _ = _run(capsys, "list", "rigid_arm")
    assert "parameters:" in one and "arm_mass" in one and "[kg]" in one


def test_linearize_applies_every_repeated_param(capsys, tmp_path):
    """Each --param counts (the last one alone used to win, silently)."""
    import mbfmu
    rc, _, err = _run(capsys, "linearize", "rigid_arm", "--param", "arm_mass=30", "--param", "gravity=3.7",
                      "-o", str(tmp_path / "lin.npz"))
    assert rc == 0, err
    got = np.load(tmp_path / "lin.npz")
    want = mbfmu.linearize(mbfmu.load_plant("rigid_arm", arm_mass=30.0, gravity=3.7))
    assert np.allclose(got["A"], want.A, rtol=1e-12, atol=1e-12)
    other = mbfmu.linearize(mbfmu.load_plant("rigid_arm", gravity=3.7))
    assert not np.allclose(got["A"], other.A)


def test_linearize_of_an_fmu_away_from_equilibrium_warns(capsys, tmp_path):
    """The help promises the warning for FMUs too (the plant path had it)."""
    from mbfmu.fmu import build_fmu
    fmu = build_fmu("rigid_arm", tmp_path)
    rc, _, err = _run(capsys, "linearize", str(fmu), "-o", str(tmp_path / "lin.npz"))
    assert rc == 0
    assert err.startswith("warning: the operating point is not an equilibrium"), err
    assert "Warning:" not in err  # a plain line, not Python's warning format
