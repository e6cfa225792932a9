"""The command line end to end, as a user would chain it: build a plant FMU,
co-simulate it recording everything, replay the result, linearize the plant."""
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _mbfmu(*args, cwd):
    res = subprocess.run([sys.executable, "-m", "mbfmu", *args], cwd=cwd, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_build_simulate_view_linearize(tmp_path):
    from mbfmu import load_plant
    from mbfmu.cosim import load_result
    _mbfmu("build", "rigid_arm", "-o", str(tmp_path / "fmus"), cwd=REPO)
    _mbfmu("simulate", str(tmp_path / "fmus" / "rigid_arm.fmu"), "--stop-time", "0.5", "--step", "0.01",
           "--set", "tau[2]=50", "--record", "all", "-o", str(tmp_path / "run.npz"), "--no-progress", cwd=REPO)
    result = load_result(tmp_path / "run.npz")
    # the FMU's recorded state reproduces the plant simulated directly
    plant = load_plant("rigid_arm")
    _, X, _ = plant.simulate(stop_time=0.5, step=0.01, u=[0.0, 50.0, 0.0])
    got = np.column_stack([result[f"rigid_arm.states.{s.name}"] for s in plant.states])
    np.testing.assert_allclose(got, X, rtol=0, atol=1e-10)
    _mbfmu("view", str(tmp_path / "run.npz"), "-o", str(tmp_path / "run.html"), cwd=REPO)
    assert (tmp_path / "run.html").stat().st_size > 10_000
    out = _mbfmu("linearize", "rigid_arm", "-o", str(tmp_path / "lin.npz"), cwd=tmp_path)
    lin = np.load(tmp_path / "lin.npz")
    assert lin["A"].shape == (6, 6) and "pole" in out


def test_linearize_refuses_an_existing_output_before_the_work(tmp_path, monkeypatch, capsys):
    """The guard comes first: no trim, no linearization, nothing printed but the refusal; the file is kept."""
    import pytest

    from mbfmu.cli import main
    from mbfmu.control import input_trim, linearization

    def no_work(*args, **kwargs):
        raise AssertionError("linearize worked before refusing the output file")
    monkeypatch.setattr(linearization, "linearize", no_work)
    monkeypatch.setattr(input_trim, "trim_inputs", no_work)
    monkeypatch.chdir(tmp_path)
    for at, out in (("trim", "rigid_arm_linear.npz"), ("hold:q=0,0.5,-1", "held.npz")):
        (tmp_path / out).write_bytes(b"the user's file")
        rc = main(["linearize", "rigid_arm", "--at", at, *(["-o", out] if out == "held.npz" else [])])
        captured = capsys.readouterr()
        assert rc == 1 and captured.out == "", captured.out
        assert f"{out} exists; not overwriting it" in captured.err
        assert (tmp_path / out).read_bytes() == b"the user's file"
    with pytest.raises(AssertionError, match="linearize worked"):  # without the file, the work is reached
        main(["linearize", "rigid_arm", "--at", "trim", "-o", "new.npz"])
