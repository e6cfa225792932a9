"""Issue 37.3: every command that opens an FMU checks it before loading anything.

``mbfmu linearize`` extracted a Model Exchange FMU with ``fmpy.extract`` and
never checked its model description: a ``modelIdentifier`` of
``../../…/evil`` loaded ``evil.so`` from outside the FMU (its constructor
ran), the run ended in a raw traceback and left ``mbfmu_jac_*`` behind. Now the
Jacobian path opens FMUs the way :class:`~mbfmu.cosim.FmuUnit` does (checked,
private extraction) and refuses in one line.
"""
from __future__ import annotations

import subprocess
import zipfile

import pytest
from tooling import need_tool, reference_fmu

from mbfmu.cli import main
from mbfmu.control.fmu_jacobians import fmu_jacobians
from mbfmu.errors import InputError


def _evil_library(tmp_path):
    """``evil.so`` whose constructor writes a marker file; returns (identifier reaching it, marker)."""
    need_tool("gcc")
    marker = tmp_path / "library.loaded"
    (tmp_path / "evil.c").write_text('#include <stdio.h>\n__attribute__((constructor)) static void hello(void) '
                                     f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "evil.so"), str(tmp_path / "evil.c")], check=True)
    return "../../../../../../../../../../" + str(tmp_path / "evil").lstrip("/"), marker


def _me_identifier(tmp_path, ident, directional=False):
    """The FMI 2 Dahlquist Reference FMU (ME and CS) with its Model Exchange identifier replaced
    (and declaring directional derivatives: linearize then takes its Jacobians, not ERA)."""
    out = tmp_path / "dahlquist_me.fmu"
    with zipfile.ZipFile(reference_fmu("fmi2", "Dahlquist")) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "modelDescription.xml":
                text = data.decode()
                old = '<ModelExchange\n    modelIdentifier="Dahlquist"'
                assert old in text
                flag = ' providesDirectionalDerivative="true"' if directional else ""
                data = text.replace(old, f'<ModelExchange{flag}\n    modelIdentifier="{ident}"').encode()
            zout.writestr(info, data)
    return out


def _leftovers(root):
    return sorted(p.name for p in root.iterdir() if p.name.startswith("mbfmu"))


def test_linearize_refuses_a_model_identifier_climbing_out_and_loads_nothing(tmp_path, scratch_root, capsys):
    ident, marker = _evil_library(tmp_path)
    fmu = _me_identifier(tmp_path, ident, directional=True)
    assert main(["linearize", str(fmu), "-o", str(tmp_path / "lin.npz")]) == 1
    err = capsys.readouterr().err
    assert "modelExchange modelIdentifier" in err and "is not a plain C name" in err
    assert len(err.strip().splitlines()) == 1
    assert not marker.exists()
    assert _leftovers(scratch_root) == []


def test_the_jacobian_api_refuses_it_too(tmp_path, scratch_root):
    ident, marker = _evil_library(tmp_path)
    with pytest.raises(InputError, match="modelExchange modelIdentifier"):
        fmu_jacobians(_me_identifier(tmp_path, ident))
    assert not marker.exists()
    assert _leftovers(scratch_root) == []


def test_the_unpatched_fmu_linearizes_and_leaves_no_folder(tmp_path, scratch_root, capsys):
    """The control: Dahlquist's Jacobian is dx/dt = -k x, k = 1 (its start value)."""
    jac = fmu_jacobians(_me_identifier(tmp_path, "Dahlquist"))
    assert jac.A.shape == (1, 1) and jac.A[0, 0] == pytest.approx(-1.0, rel=1e-6)
    assert _leftovers(scratch_root) == []
