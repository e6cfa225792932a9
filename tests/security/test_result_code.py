"""Issue 26.1: a result file never runs code.

``mbfmu view`` rebuilt the plant from the metadata: ``"kind": "file"`` with an
absolute target imported that file, ``"kind": "class", "target": "os:abort"``
called any attribute, in the CSV sidecar, the ``.npz`` and the ``.mat``
metadata alike. Now the plant of a replay is a library plant by name, or the
description embedded in the FMU that ran; code runs only when the user names
it (``--model``).
"""
from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest
from tooling import reference_fmu

from mbfmu.cli import main
from mbfmu.cosim.recording import result as recording
from mbfmu.viewer import open_recording

from .attacks import code_marker


def _result(tmp_path, suffix, meta):
    data = np.zeros(3, dtype=[("time", float), ("arm.q[1]", float)])
    data["time"] = [0.0, 0.1, 0.2]
    return recording.Result(data, meta=meta).save(tmp_path / f"run{suffix}")


def _attacks(py):
    """Metadata entries that named code to run, each as the issue found them."""
    return {
        "file": {"plants": {"arm": {"kind": "file", "target": str(py), "class_name": "", "parameters": {}}}},
        "file-class": {"plants": {"arm": {"kind": "file", "target": str(py), "class_name": "Plant"}}},
        "class": {"plants": {"arm": {"kind": "class", "target": "os:abort"}}},
        "library-path": {"plants": {"arm": {"kind": "library", "target": str(py)}}},
        "pickle": {"plants": {"arm": {"kind": "pickle", "target": str(py)}}},
        "plant-spec": {"plant": f"{py}:Plant"},
        "unit-spec": {"plants": {"arm": {"plant": "os:abort"}}},
    }


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".mat"])
@pytest.mark.parametrize("attack", list(_attacks("x.py")))
def test_metadata_naming_code_is_refused_and_nothing_runs(tmp_path, capsys, suffix, attack):
    py, marker = code_marker(tmp_path)
    path = _result(tmp_path, suffix, _attacks(py)[attack])
    assert main(["view", str(path), "-o", str(tmp_path / "r.html")]) == 1  # os:abort would end pytest here
    err = capsys.readouterr().err
    assert not marker.exists(), "the result file ran code"
    assert len(err.strip().splitlines()) == 1 and "--model" in err, err
    assert not (tmp_path / "r.html").exists()


def test_the_same_code_runs_when_the_user_names_it(tmp_path, capsys):
    """The marker works: naming the file on the command line does import it."""
    py, marker = code_marker(tmp_path)
    path = _result(tmp_path, ".csv", _attacks(py)["file"])
    main(["view", str(path), "--model", f"{py}:Plant", "-o", str(tmp_path / "r.html")])
    assert marker.read_text() == "code ran"
    assert "did not produce a Plant" in capsys.readouterr().err


def _fmu_with_plant_ref(tmp_path, ref_json: str):
    """A real FMU (a Reference FMU) carrying an mbfmu plant description."""
    fmu = tmp_path / "unit.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    with zipfile.ZipFile(fmu, "a") as z:
        z.writestr("resources/mbfmu_plant.json", ref_json)
    return fmu


def test_the_fmus_own_description_wins_over_the_result_and_stays_inside_it(tmp_path, capsys):
    """With the FMU that ran present, the result's entry is not used; the
    FMU's description naming a file outside its resources is refused."""
    py, marker = code_marker(tmp_path)
    fmu = _fmu_with_plant_ref(tmp_path, f'{{"kind": "file", "target": "../../../../../../{py}"}}')
    meta = {"plants": {"arm": {"kind": "class", "target": "os:abort"}},
            "components": {"arm": {"type": "FmuUnit", "source": str(fmu)}}}
    path = _result(tmp_path, ".npz", meta)
    with pytest.raises(ValueError, match="outside its resources"):
        open_recording(path)
    assert not marker.exists()
    plain = tmp_path / "plain.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), plain)
    meta["components"]["arm"]["source"] = str(plain)
    with pytest.raises(ValueError, match="carries no readable mbfmu plant description"):
        open_recording(_result(tmp_path, ".csv", meta))


def test_a_library_plant_named_in_the_metadata_still_replays(tmp_path):
    """Data may name a library plant: the replay needs no --model for it."""
    from mbfmu import load_plant
    plant = load_plant("rigid_arm")
    n = len(plant.states)
    data = np.zeros(3, dtype=[("time", float)] + [(s.name, float) for s in plant.states])
    data["time"] = [0.0, 0.1, 0.2]
    path = recording.Result(data, meta={"plant": "rigid_arm", "parameters": {}}).save(tmp_path / "lib.csv")
    rec = open_recording(path)
    assert rec.plant.name == plant.name and len(rec.plant.states) == n


def test_an_fmu_others_could_have_planted_is_not_used(tmp_path, capsys):
    """A result names the FMU that ran by its path; in a folder anyone can
    write to, an FMU there is not trusted to describe the plant."""
    py, marker = code_marker(tmp_path)
    shared = tmp_path / "open_to_all"
    shared.mkdir()
    fmu = _fmu_with_plant_ref(shared, '{"kind": "file", "target": "model.py"}')
    shared.chmod(0o777)  # world-writable, not sticky
    meta = {"plants": {"arm": {"kind": "file", "target": "model.py"}},
            "components": {"arm": {"type": "FmuUnit", "source": str(fmu)}}}
    with pytest.raises(ValueError, match="its folder is writable by other users; pass --model"):
        open_recording(_result(tmp_path, ".csv", meta))
    shared.chmod(0o777 | 0o1000)  # sticky, as /tmp: only the file's owner can replace it
    with pytest.raises(ValueError, match="names its plant file 'model.py', which its resources do not hold"):
        open_recording(_result(tmp_path, ".csv", meta))  # used now (and found wanting: no model.py inside)
    assert not marker.exists()


def test_a_class_named_by_an_fmu_must_be_a_plant(tmp_path):
    fmu = _fmu_with_plant_ref(tmp_path, '{"kind": "class", "target": "os:abort"}')
    meta = {"plants": {"arm": {"kind": "class", "target": "os:abort"}},
            "components": {"arm": {"type": "FmuUnit", "source": str(fmu)}}}
    with pytest.raises(ValueError, match="'os:abort' as its plant, which is not a Plant class"):
        open_recording(_result(tmp_path, ".npz", meta))  # os.abort would end pytest here
