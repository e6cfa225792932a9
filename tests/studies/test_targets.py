"""Every kind of target runs the same physics: plant name, Plant, FMU, SSP system, system function."""
from __future__ import annotations

import pytest

from mbfmu import load_plant
from mbfmu.cosim import FmuUnit, System, write_ssp
from mbfmu.errors import MbfmuError
from mbfmu.studies import sweep

MASSES = [10.0, 25.0]
KW = dict(stop_time=0.1, step=0.01, executor="serial", progress=False)


def _finals(study, column):
    return [study.result(i)[column][-1] for i in range(len(study))]


def test_fmu_ssp_and_function_targets_give_bit_identical_runs(arm_fmu, tmp_path):
    ssp = write_ssp(System([FmuUnit(arm_fmu, name="arm")]), tmp_path / "arm.ssp")
    fmu = sweep(arm_fmu, {"arm_mass": MASSES}, **KW)
    from_ssp = sweep(ssp, {"arm.arm_mass": MASSES}, **KW)
    from_fn = sweep(lambda: System([FmuUnit(arm_fmu, name="arm")]), {"arm.arm_mass": MASSES}, **KW)
    for i in range(len(MASSES)):
        a = fmu.result(i).data
        for other in (from_ssp, from_fn):
            b = other.result(i).data
            assert [n.split(".", 1)[1] for n in a.dtype.names[1:]] == [n.split(".", 1)[1] for n in b.dtype.names[1:]]
            assert a.tobytes() == b.tobytes()


def test_plant_name_plant_instance_and_constant_inputs(arm_fmu):
    by_name = sweep("rigid_arm", {"arm_mass": MASSES, "theta3_0": [-0.5]}, **KW)
    by_instance = sweep(load_plant("rigid_arm", theta3_0=-0.5), {"arm_mass": MASSES}, **KW)
    assert _finals(by_name, "q[2]") == _finals(by_instance, "q[2]")
    # an input given a value is held constant: the plant simulated with that input
    torque = sweep("rigid_arm", {"tau[2]": [5.0]}, **KW)
    plant = load_plant("rigid_arm")
    u = plant.default_inputs()
    u[plant.input_index("tau[2]")] = 5.0
    assert torque.result(0)["q[2]"][-1] == plant.simulate(0.1, 0.01, u)[2][-1, plant.output_index("q[2]")]
    # and the plant run in Python is the FMU's run
    fmu = sweep(arm_fmu, {"arm_mass": MASSES}, **KW)
    assert _finals(fmu, "rigid_arm.q[2]") == pytest.approx(_finals(sweep("rigid_arm", {"arm_mass": MASSES}, **KW),
                                                                   "q[2]"), abs=1e-12)


@pytest.mark.parametrize("target, words", [("no_such_plant", "unknown plant"), ("missing.fmu", "does not exist"),
                                           (42, "cannot run a study on 42")])
def test_bad_target_is_refused_with_a_clear_message(target, words):
    with pytest.raises(MbfmuError, match=words):
        sweep(target, {"x": [1.0]}, **KW)


def test_model_file_target_travels_with_its_source_and_matches_the_library_plant(tmp_path):
    import shutil
    from pathlib import Path
    import mbfmu.models.rigid_arm as lib
    mine = tmp_path / "my_arm.py"
    shutil.copy(Path(lib.__file__), mine)
    from_file = sweep(str(mine), {"arm_mass": MASSES}, **dict(KW, executor="local"), workers=2)
    assert from_file.summary() == "2 runs: 2 ok"
    assert _finals(from_file, "q[2]") == _finals(sweep("rigid_arm", {"arm_mass": MASSES}, **KW), "q[2]")
