"""Issue 37.4: an SSP repeating one FMU across components does not multiply the expansion bound.

A 146 kB ``.ssp`` holding one 144 kB FMU used as 13 components wrote 1.27 GB
to the temp folder (every component extracted the FMU anew, each within the
2 GiB bound). Now units made from the same FMU bytes share one extraction,
and the sum over a system's distinct extractions is bounded too.
"""
from __future__ import annotations

import zipfile

import pytest
from tooling import reference_fmu

from mbfmu.cosim import read_ssp
from mbfmu.errors import InputError

from .attacks import scratch_folders

N = 13


def _ssp(tmp_path, fmus: dict[str, bytes], sources: list[str]):
    comps = "\n".join(
        f'<ssd:Component name="d{k}" type="application/x-fmu-sharedlibrary" source="{src}">'
        '<ssd:Connectors><ssd:Connector name="x" kind="output"><ssc:Real/></ssd:Connector></ssd:Connectors>'
        '</ssd:Component>' for k, src in enumerate(sources))
    ssd = f"""<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="s"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssd:System name="s"><ssd:Elements>{comps}</ssd:Elements></ssd:System>
</ssd:SystemStructureDescription>
"""
    path = tmp_path / "repeat.ssp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("SystemStructure.ssd", ssd)
        for name, data in fmus.items():
            z.writestr(name, data)
    return path


def _expanded(fmu: bytes, tmp_path) -> int:
    (tmp_path / "probe.fmu").write_bytes(fmu)
    with zipfile.ZipFile(tmp_path / "probe.fmu") as z:
        return sum(i.file_size for i in z.infolist())


def _disk_bytes(root) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_one_fmu_repeated_13_times_is_extracted_once(tmp_path, scratch_root, limits):
    fmu = reference_fmu("fmi2", "Dahlquist").read_bytes()
    size = _expanded(fmu, tmp_path)
    ssp = _ssp(tmp_path, {"resources/d.fmu": fmu}, ["resources/d.fmu"] * N)
    limits(max_expand_bytes=3 * size)  # one extraction (and the SSP's own) fit; 13 would not
    system = read_ssp(ssp)
    assert len(system.units) == N
    assert len({u._unzipdir for u in system.units.values()}) == 1
    fmu_folders = {f for f in scratch_folders(scratch_root) if f.startswith("mbfmu-fmu-")}
    assert len(fmu_folders) == 1
    # the SSP's extraction (the FMU file itself) plus one extracted FMU, not 13
    assert _disk_bytes(scratch_root) <= len(fmu) + 2 * size


def test_distinct_fmus_past_the_bound_together_are_refused_by_name(tmp_path, scratch_root, limits):
    """Two different FMUs, each within the bound, whose extractions together pass it."""
    a = reference_fmu("fmi2", "Dahlquist").read_bytes()
    b = reference_fmu("fmi2", "VanDerPol").read_bytes()
    ssp = _ssp(tmp_path, {"resources/a.fmu": a, "resources/b.fmu": b}, ["resources/a.fmu", "resources/b.fmu"])
    bound = max(_expanded(a, tmp_path), _expanded(b, tmp_path), len(a) + len(b)) + 10_000
    assert bound < _expanded(a, tmp_path) + _expanded(b, tmp_path)
    limits(max_expand_bytes=bound)
    with pytest.raises(InputError, match=r"repeat\.ssp'.*components' FMUs expand to .* together.*MBFMU_MAX_EXPAND_BYTES"):
        read_ssp(ssp)
