"""``mbfmu simulate`` on an SSP file and on a single FMU."""
from __future__ import annotations

import numpy as np

from mbfmu.cli import main
from mbfmu.cosim import load_result, simulate, write_ssp

from .systems import two_mass


def test_simulate_ssp_with_overrides_writes_results(mass_fmu, tmp_path, capsys):
    s = two_mass(mass_fmu)
    ssp = write_ssp(s, tmp_path / "s.ssp", stop_time=2.0, step=0.01)
    out = tmp_path / "r.csv"
    assert main(["simulate", str(ssp), "--stop-time", "1", "--set", "a.k=12.5", "--set", "b.nsub=5",
                 "-o", str(out), "--no-progress"]) == 0
    assert "100 steps" in capsys.readouterr().out
    r = load_result(out)
    s.set("a.k", 12.5)
    s.set("b.nsub", 5)
    ref = simulate(s, 1.0, 0.01)
    assert r.names == ref.names
    np.testing.assert_array_equal(r["a.x"], ref["a.x"])  # %.17g CSV round-trips doubles exactly


def test_simulate_single_fmu_and_errors(mass_fmu, tmp_path, capsys):
    assert main(["simulate", str(mass_fmu), "--stop-time", "3.14159265358979", "--step", "0.0314159265358979",
                 "--set", "k=1", "--set", "x0=1"]) == 0
    out = capsys.readouterr().out
    line = [ln for ln in out.splitlines() if ln.strip().startswith("mass.x =")][0]
    assert abs(float(line.split("=")[1]) + 1.0) < 1e-9  # x(t) = cos(t) for k = m = 1, x0 = 1
    assert main(["simulate", str(mass_fmu), "--set", "nothing=1"]) == 1
    assert "has no variable 'nothing'" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "none.ssp")]) == 1
