"""Issues 26.4 and 26.11: a model description cannot redirect the master.

A value reference above 2^32 - 1 wrapped onto another variable (``--set
k=5`` set the state ``x`` instead, with no error); a ``modelIdentifier`` with
``../`` loaded a shared library from outside the FMU. Both, and duplicated
names and unknown causality/variability/initial, are refused when the FMU is
loaded, naming the variable.
"""
from __future__ import annotations

import subprocess

import pytest
from tooling import need_tool

from mbfmu.cli import main
from mbfmu.cosim import FmuUnit

from .attacks import patched_dahlquist


def test_the_unpatched_fmu_sets_k_and_not_x(tmp_path, capsys):
    """The control: on the Reference FMU, --set k=5 changes k (x = exp(-k t))."""
    fmu = patched_dahlquist(tmp_path)
    assert main(["simulate", str(fmu), "--set", "k=5", "--stop-time", "0.2", "--step", "0.1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "Dahlquist.x = " in out and "Dahlquist.x = 1.0\n" not in out


@pytest.mark.parametrize("vr", [str(2**32 + 1), "-4294967295", str(2**64 + 1)])
def test_value_reference_outside_uint32_is_refused(tmp_path, capsys, vr):
    fmu = patched_dahlquist(tmp_path, "fmi2", ('name="k" valueReference="3"', f'name="k" valueReference="{vr}"'))
    assert main(["simulate", str(fmu), "--set", "k=5", "--stop-time", "0.2", "--step", "0.1", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"'k': value reference {vr} is outside 0..4294967295" in err
    assert len(err.strip().splitlines()) == 1


def test_fmi3_value_reference_outside_uint32_is_refused(tmp_path):
    fmu = patched_dahlquist(tmp_path, "fmi3", ('name="k" valueReference="3"', f'name="k" valueReference="{2**32 + 1}"'),
                   ('dependencies="1 3"', f'dependencies="1 {2**32 + 1}"'))
    with pytest.raises(ValueError, match="value reference 4294967297 is outside"):
        FmuUnit(fmu)


@pytest.mark.parametrize("old, new, message", [
    ('name="der(x)"', 'name="x"', "variable names given twice: 'x'"),
    ('causality="parameter"', 'causality="sneaky"', "unknown causality 'sneaky'"),
    ('variability="fixed"', 'variability="sometimes"', "unknown variability 'sometimes'"),
    ('name="k" valueReference="3" causality="parameter" variability="fixed" initial="exact"',
     'name="k" valueReference="3" causality="parameter" variability="fixed" initial="later"', "unknown initial 'later'"),
])
def test_malformed_variables_are_refused_by_name(tmp_path, old, new, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        FmuUnit(patched_dahlquist(tmp_path, "fmi2", (old, new)))


def test_model_identifier_climbing_out_is_refused_and_loads_nothing(tmp_path, capsys):
    """``binaries/linux64/../../../evil`` would make fmpy load ``evil.so`` from
    beside the FMU's extraction folder; refused before anything is loaded."""
    need_tool("gcc")
    marker = tmp_path / "library.loaded"
    (tmp_path / "evil.c").write_text('#include <stdio.h>\n__attribute__((constructor)) static void hello(void) '
                                     f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "evil.so"), str(tmp_path / "evil.c")], check=True)
    ident = "../../../../../../../../../../" + str(tmp_path / "evil").lstrip("/")
    fmu = patched_dahlquist(tmp_path, "fmi2", ('<CoSimulation\n    modelIdentifier="Dahlquist"',
                                      f'<CoSimulation\n    modelIdentifier="{ident}"'))
    assert main(["simulate", str(fmu), "--stop-time", "0.2", "--step", "0.1", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "coSimulation modelIdentifier" in err and "is not a plain C name" in err
    assert not marker.exists()
