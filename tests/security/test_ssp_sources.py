"""Issue 26.8: SSP references stay inside the archive (or the .ssd's folder).

A component ``source`` or a ``ParameterBinding`` ``source`` of
``../../outside/x.fmu``, an absolute path, a ``file:`` URI or a symbolic
link leading out ran the FMU outside, applied the outside ``.ssv``, and
errors echoed the XML of local files. Now they are refused before the file
is opened; ``allow_external=True`` / ``--allow-external`` opts in.
"""
from __future__ import annotations

import os
import shutil
import zipfile

import pytest
from tooling import reference_fmu

from mbfmu.cli import main
from mbfmu.cosim import read_ssp
from mbfmu.errors import CosimError

from .attacks import ssd_with_sources

SECRET = "TOPSECRET-7f3a"


def _ssv(k: float) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<ssv:ParameterSet version="1.0" name="p" xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssv:Parameters><ssv:Parameter name="k"><ssv:Real value="{k}"/></ssv:Parameter></ssv:Parameters>
</ssv:ParameterSet>
"""


@pytest.fixture
def outside(tmp_path):
    """An FMU and a parameter file outside the system's folder, and a secret."""
    out = tmp_path / "outside"
    out.mkdir()
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), out / "x.fmu")
    (out / "p.ssv").write_text(_ssv(7.0))
    (out / "secret.txt").write_text(f"<root><{SECRET}/></root>")
    return out


def _archive(tmp_path, ssd_text, with_fmu=True):
    path = tmp_path / "sys" / "s.ssp"
    path.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", ssd_text)
        if with_fmu:
            z.write(reference_fmu("fmi2", "Dahlquist"), "resources/d.fmu")
    return path


@pytest.mark.parametrize("source", ["../outside/x.fmu", "ABS", "file://ABS", "resources/../../outside/x.fmu"])
def test_component_source_outside_the_archive_is_refused(tmp_path, outside, source):
    source = source.replace("ABS", str(outside / "x.fmu"))
    path = _archive(tmp_path, ssd_with_sources(source), with_fmu=False)
    with pytest.raises(CosimError, match="outside the system's folder; refused"):
        read_ssp(path)
    # the opt-in: the FMU outside is used (a relative one taken from the archive's folder)
    system = read_ssp(path, allow_external=True)
    assert system.units["d"].path.resolve() == (outside / "x.fmu").resolve()


@pytest.mark.parametrize("source", ["ABS/secret.txt", "/etc/passwd", "../outside/p.ssv", "../outside/secret.txt"])
def test_parameter_file_outside_is_refused_without_echoing_it(tmp_path, outside, source):
    path = _archive(tmp_path, ssd_with_sources("resources/d.fmu", source.replace("ABS", str(outside))))
    with pytest.raises(CosimError) as e:
        read_ssp(path)
    msg = str(e.value)
    assert "outside the system's folder; refused" in msg
    assert SECRET not in msg and "root:" not in msg


def test_opt_in_applies_the_outside_parameter_file(tmp_path, outside):
    path = _archive(tmp_path, ssd_with_sources("resources/d.fmu", str(outside / "p.ssv")))
    assert read_ssp(path, allow_external=True).units["d"].values == {"k": 7.0}


def test_ssd_sources_resolve_in_its_folder_and_the_cli_opts_in(tmp_path, outside, capsys):
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), sysdir / "d.fmu")
    (sysdir / "ok.ssd").write_text(ssd_with_sources("d.fmu"))
    assert set(read_ssp(sysdir / "ok.ssd").units) == {"d"}  # beside the .ssd: no opt-in needed
    (sysdir / "out.ssd").write_text(ssd_with_sources("../outside/x.fmu"))
    args = ["simulate", str(sysdir / "out.ssd"), "--stop-time", "0.1", "--step", "0.05", "--no-progress"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "'../outside/x.fmu' is outside the system's folder" in err and "--allow-external" in err
    assert main([*args, "--allow-external"]) == 0


def test_a_symbolic_link_leading_out_is_refused(tmp_path, outside):
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    os.symlink(outside / "x.fmu", sysdir / "d.fmu")
    (sysdir / "s.ssd").write_text(ssd_with_sources("d.fmu"))
    with pytest.raises(CosimError, match="outside the system's folder"):
        read_ssp(sysdir / "s.ssd")
