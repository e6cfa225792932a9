"""Results: structured array with time first, any variable, CSV/npz round trips, fmpy plotting."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, FmuUnit, System, load_result, simulate, sources
from mbfmu.errors import InputError, UnknownNameError


@pytest.fixture
def result(mass_fmu):
    s = System([FmuUnit(mass_fmu, "m", values={"k": 4.0, "x0": 1.0}), sources.sine("f", 1.0, 0.5)],
               [("f.y", "m.F")])
    return simulate(s, 1.0, 0.01, record=["m.x", "m.F", "m.k", "m.nsub", "f.y"])


def test_structured_array_time_first_with_any_variable(result):
    assert result.names == ["time", "m.x", "m.F", "m.k", "m.nsub", "f.y"]
    assert result.data.dtype.names[0] == "time"
    assert np.all(result["m.k"] == 4.0) and np.all(result["m.nsub"] == 20)  # parameters, Integer too
    np.testing.assert_array_equal(result["m.F"], result["f.y"])  # recorded input = its source
    assert result.meta["units"]["m.x"] == "m"
    with pytest.raises(UnknownNameError, match="recorded: time, m.x"):
        result["m.v"]


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_save_and_load_round_trip(result, tmp_path, suffix):
    back = load_result(result.save(tmp_path / f"r{suffix}"))
    assert back.names == result.names
    for n in result.names:
        np.testing.assert_array_equal(back[n], result[n])
    assert back.summary.steps == 100 and back.meta["units"]["m.x"] == "m"
    with pytest.raises(InputError):
        result.save(tmp_path / "r.txt")


def test_fmpy_tools_accept_the_result(result, tmp_path):
    """fmpy's CSV writer and reader take the array as a SimulationResult."""
    from fmpy.util import read_csv, write_csv
    write_csv(str(tmp_path / "f.csv"), result.data)
    back = read_csv(str(tmp_path / "f.csv"))
    np.testing.assert_allclose(back["m.x"], result["m.x"], rtol=1e-12)


def test_fmpy_plotting_accepts_the_result(result, tmp_path):
    # fmpy 0.3.32 plots with plotly (a test dependency)
    from fmpy.util import create_plotly_figure
    assert create_plotly_figure(result.data, names=["m.x", "f.y"]) is not None


def test_record_all_includes_inputs_and_control_states(mass_fmu):
    import control
    sys = control.ss([[-1.0]], [[1.0]], [[2.0]], 0, inputs=["u"], outputs=["y"], states=["s"])
    s = System([ControlUnit("c", sys, x0=[1.0], inputs_start=0.0)])
    r = simulate(s, 1.0, 0.1, record="all")
    assert r.names == ["time", "c.u", "c.y", "c.s"]  # inputs, outputs, then the state (a local)
    r2 = simulate(s, 1.0, 0.1, record=["c.s", "c.y"])
    np.testing.assert_allclose(r2["c.s"], np.exp(-r2.time), rtol=1e-12)
    np.testing.assert_allclose(r2["c.y"], 2 * r2["c.s"], rtol=1e-12)
    with pytest.raises(InputError, match="unknown variables: c.nope"):
        simulate(s, 1.0, 0.1, record=["c.nope"])


def test_progress_bar_and_summary(mass_fmu, capsys):
    r = simulate(System([FmuUnit(mass_fmu, "m")]), 1.0, 1e-4, progress=True)
    err = capsys.readouterr().err
    assert "co-simulation" in err and "/1 s" in err
    assert r.summary.steps == 10_000 and r.summary.wall_time > 0
    assert "10000 steps (0 rejected)" in str(r.summary)
    simulate(System([FmuUnit(mass_fmu, "m")]), 1.0, 1e-3, progress=False)
    assert capsys.readouterr().err == ""


def test_unconnected_input_set_by_name_is_used_and_recorded(mass_fmu):
    s = System([FmuUnit(mass_fmu, "m", values={"F": 2.0}), sources.step("s", 0.0, 0.0)], [("s.y", "m.xin")])
    r = simulate(s, 1.0, 0.5, record="all")
    assert np.all(r["m.F"] == 2.0)
    assert r["m.v"][-1] == pytest.approx(2.0, rel=1e-9)  # F = m a with m = 1 kg, no springs


@pytest.mark.parametrize("how", ["json", "slave-script"])
def test_results_name_the_plant_behind_an_mbfmu_fmu(mass_fmu, tmp_path, how):
    """FMUs built by `mbfmu build` carry a plant reference; the result metadata
    passes it on (as the viewer reads it), without executing the FMU's script."""
    import json
    import shutil
    import zipfile
    ref = {"kind": "library", "target": "rigid_arm", "class_name": "", "parameters": {"l1": 0.5}}
    fmu = tmp_path / "plant.fmu"
    shutil.copy(mass_fmu, fmu)
    with zipfile.ZipFile(fmu, "a") as z:
        if how == "json":
            z.writestr("resources/mbfmu_plant.json", json.dumps(ref))
        else:
            z.writestr("resources/arm.py", f"class PlantFmu:\n    plant_ref = {ref!r}\n    raise SystemExit\n")
    r = simulate(System([FmuUnit(fmu, "arm"), FmuUnit(mass_fmu, "other")]), 0.1, 0.05)
    assert r.meta["plants"] == {"arm": ref}
    back = load_result(r.save(tmp_path / "r.npz"))
    assert back.meta["plants"] == {"arm": ref}


def test_a_record_list_that_interleaves_units_keeps_each_column_with_its_variable(mass_fmu):
    """Columns are filled unit by unit: a list naming m, then f, then m again must not
    shift f's values under m's names (the satellite study recorded the controller's
    torques between the plant's outputs and its states, and read 1e-4 for 1 N.m)."""
    def system():
        return System([FmuUnit(mass_fmu, "m", values={"k": 4.0, "x0": 1.0}), sources.sine("f", 1.0, 0.5)],
                      [("f.y", "m.F")])
    mixed = simulate(system(), 1.0, 0.01, record=["m.x", "f.y", "m.k", "m.F"])
    alone = {n: simulate(system(), 1.0, 0.01, record=[n])[n] for n in ("m.x", "f.y", "m.k", "m.F")}
    for name, values in alone.items():
        np.testing.assert_array_equal(mixed[name], values, err_msg=name)
    assert set(mixed.names) == {"time", "m.x", "f.y", "m.k", "m.F"}
