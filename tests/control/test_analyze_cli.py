"""mbfmu analyze: margins of an SSP system (plant FMU + exported controller
FMU) broken at a connection, equal to loop_analysis on the same system, and
the exported controller's own matrices in the loop."""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from mbfmu.cli import main

H = 0.01


@pytest.fixture(scope="module")
def ssp(tmp_path_factory):
    from mbfmu.control.export import export_fmu
    from mbfmu.cosim import FmuUnit, System, write_ssp
    from mbfmu.fmu import build_fmu
    out = tmp_path_factory.mktemp("analyze")
    K = np.hstack([np.diag([300.0, 400.0, 200.0]), np.diag([30.0, 40.0, 20.0])])
    pd = ct.ss(np.zeros((1, 1)), np.zeros((1, 6)), np.zeros((3, 1)), -K, H,
               inputs=[f"x[{k}]" for k in range(1, 7)], outputs=["tau[1]", "tau[2]", "tau[3]"], name="pd")
    ctrl = FmuUnit(export_fmu(pd, out, units={f"tau[{k}]": "N.m" for k in (1, 2, 3)}), name="ctrl")
    arm = FmuUnit(build_fmu("rigid_arm", out), name="arm")
    system = System([arm, ctrl], [("arm.q[1]", "ctrl.x[1]")])
    for k in (2, 3):
        system.connect(f"arm.q[{k}]", f"ctrl.x[{k}]")
    for k in (1, 2, 3):
        system.connect(f"arm.{arm.outputs[2 + k]}", f"ctrl.x[{k + 3}]")
    system.connect("ctrl.tau", "arm.tau")
    return write_ssp(system, out / "arm_pd.ssp", stop_time=1.0, step=H), system, K


def test_cli_prints_the_margins_of_loop_analysis_and_saves_the_plots(ssp, tmp_path, capsys):
    from mbfmu.control import loop_analysis, linearize_system
    path, system, K = ssp
    png = tmp_path / "loop.png"
    assert main(["analyze", str(path), "--open", "ctrl.tau[2]->arm.tau[2]", "--sampled", "-o", str(png)]) == 0
    text = capsys.readouterr().out
    la = loop_analysis(system, "ctrl.tau[2]->arm.tau[2]", sampled=True, step=H)
    m = la.margins()
    assert f"phase margin = {m['phase_margin']:.6g} deg" in text
    assert f"disk margin (alpha) = {m['disk_margin']:.6g}" in text
    assert png.stat().st_size > 10_000
    models = linearize_system(system, step=H, sampled=True).unit_models
    assert models["ctrl"].startswith("exact (exported") and models["arm"].startswith("plant's exact linearization")
    assert la.unit_models == models
    for name, source in models.items():  # the source of each unit's model is printed
        assert f"model of {name}: {source}" in text


def test_cli_refuses_a_non_ssp_file(tmp_path, capsys):
    assert main(["analyze", str(tmp_path / "x.fmu"), "--open", "a.y->b.u"]) != 0
    assert "give an SSP system" in capsys.readouterr().err


def test_cli_on_the_shipped_example_ssp(tmp_path, capsys):
    """examples/system.ssp (the arm held by a PID, two FMUs): the shoulder loop
    has the margins of loop_analysis on the same file (a finite gain margin:
    the integral action makes the loop conditionally stable)."""
    from pathlib import Path

    from mbfmu.control import loop_analysis
    from mbfmu.cosim import read_ssp
    ssp_file = Path(__file__).resolve().parents[2] / "examples" / "system.ssp"
    assert main(["analyze", str(ssp_file), "--open", "ctrl.tau[2]->arm.tau[2]", "--at", "0", "--sampled",
                 "-o", str(tmp_path / "l.png")]) == 0
    text = capsys.readouterr().out
    la = loop_analysis(read_ssp(ssp_file), "ctrl.tau[2]->arm.tau[2]", 0.0, sampled=True)
    m = la.margins()
    assert f"phase margin = {m['phase_margin']:.6g} deg" in text and np.isfinite(m["gain_margin"])
    assert 0 < m["phase_margin"] < 90 and m["delay_margin"] > 0.01
    # every crossover listed, each holding its definition on L evaluated here; the sentence in words
    assert m["gain_margin"] < 1 and m["conditionally_stable"] and "conditionally stable" in text
    for c in m["gain_crossovers"]:
        assert f"{c.frequency:>12.6g} rad/s" in text
        assert abs(abs(la.L(np.exp(1j * c.frequency * la.L.dt))) - 1) <= 1e-6
    for c in m["phase_crossovers"]:
        assert f"{c.frequency:>12.6g} rad/s" in text
    assert "closed loop stable by its eigenvalues" in text and "linear simulation: agrees" in text


def test_cli_stores_the_margins_crossovers_and_verdict(ssp, tmp_path, capsys):
    import json

    from mbfmu.control import loop_analysis
    path, system, _ = ssp
    out = tmp_path / "loop.json"
    assert main(["analyze", str(path), "--open", "ctrl.tau[2]->arm.tau[2]", "--sampled", "--no-cosim",
                 "-o", str(tmp_path / "l.png"), "--json", str(out)]) == 0
    stored = json.loads(out.read_text())
    la = loop_analysis(system, "ctrl.tau[2]->arm.tau[2]", sampled=True, step=H)
    m = la.margins()
    assert stored["margins"]["phase_margin"] == m["phase_margin"]
    assert [c["frequency"] for c in stored["gain_crossovers"]] == [c.frequency for c in m["gain_crossovers"]]
    assert stored["verdict"]["stable"] == bool(np.abs(la.S.poles()).max() < 1)
    assert stored["verdict"]["cosim_check"] == "not run" and "exact" in stored["unit_models"]["arm"]
