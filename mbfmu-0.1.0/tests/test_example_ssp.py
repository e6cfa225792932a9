"""The shipped example system (examples/system.ssp, the README's) is current
and does what it says: a PID holds the rigid arm at its set point."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from mbfmu.cosim import read_ssp, simulate

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "examples" / "system.ssp"
SET_POINT = (0.5, 0.6, -0.3)  # rad, the controller's start values (examples/make_system_ssp.py)


def _structure(ssp: Path) -> dict[str, bytes]:
    """What a user of the file relies on: the SSD's connections and each FMU's
    variables (names, references, causality, units), without dates or GUIDs."""
    out = {}
    with zipfile.ZipFile(ssp) as z:
        ssd = etree.fromstring(z.read("SystemStructure.ssd"))
        out["connections"] = b"".join(etree.tostring(c) for c in ssd.iter("{*}Connection"))
        for name in z.namelist():
            if name.endswith(".fmu"):
                with zipfile.ZipFile(z.open(name)) as fmu:
                    md = etree.fromstring(fmu.read("modelDescription.xml"))
                out[name] = etree.tostring(md.find("ModelVariables"))
    return out


def _run(ssp: Path):
    system = read_ssp(ssp)
    return simulate(system, system.experiment["stop_time"], system.experiment["step"])


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ssp")
    out = folder / "system.ssp"
    res = subprocess.run([sys.executable, str(REPO / "examples" / "make_system_ssp.py"), "--output", str(folder)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_shipped_ssp_is_what_its_script_writes_today(regenerated):
    assert _structure(SHIPPED) == _structure(regenerated), \
        "examples/system.ssp is out of date: run python examples/make_system_ssp.py"


def test_the_pid_holds_the_arm_at_its_set_point_and_the_shipped_file_runs_as_a_fresh_one(regenerated):
    shipped = _run(SHIPPED)
    assert shipped.time[-1] == pytest.approx(10.0)
    # integral action: the gravity load leaves no steady-state offset
    for i, r in enumerate(SET_POINT, start=1):
        assert abs(shipped[f"arm.q[{i}]"][-1] - r) < 1e-3
        assert abs(shipped[f"arm.v[{i}]"][-1]) < 1e-3
    fresh = _run(regenerated)
    for name in shipped.names:
        np.testing.assert_array_equal(shipped[name], fresh[name], err_msg=name)


def test_the_readme_sweep_on_the_example_system():
    from mbfmu.studies import sweep
    study = sweep(str(SHIPPED), {"arm.arm_mass": [16.0, 24.0]}, stop_time=10.0, metrics=["final:arm.q[2]"])
    assert list(study["status"]) == ["ok", "ok"]
    np.testing.assert_allclose(study["final:arm.q[2]"], SET_POINT[1], atol=5e-3)
