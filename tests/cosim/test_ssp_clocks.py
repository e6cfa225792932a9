"""SSP 1.0 has no Clock type: a connection between FMI 3.0 clocks (one unit's output clock
triggering another's input clock) is written with untyped connectors (SSP 1.0 then takes
the FMU variable's type) marked by an ``org.mbfmu.clock`` annotation, and read back to
the same run. A clock's connector typed Boolean, or the mark on a variable that is no
clock, is refused by name."""
from __future__ import annotations

import numpy as np
import pytest
from lxml import etree

from mbfmu.cosim import FmuUnit, System, read_ssp, simulate, write_ssp
from mbfmu.cosim.ssp.read_write import CLOCK_TYPE, NS
from mbfmu.errors import CosimError

from .fmu_build import build_ticker3

STOP, H = 2.0, 0.1  # [s]


@pytest.fixture(scope="module")
def ticker(tmp_path_factory):
    """An FMI 3.0 co-simulation FMU with an output clock ``tick`` (every 0.37 s) and a
    triggered input clock ``kick`` (cfmu/ticker3.c)."""
    return build_ticker3(tmp_path_factory.mktemp("ticker3"))


def _clocked_pair(ticker) -> System:
    """a's output clock kicks b's input clock; b's own clock stays quiet."""
    b = FmuUnit(ticker, "b", values={"first": 10.0})
    return System([FmuUnit(ticker, "a"), b], [("a.tick", "b.kick")])


def _connector(root, comp: str, name: str):
    (c,) = root.findall(f".//ssd:Component[@name='{comp}']/ssd:Connectors/ssd:Connector[@name='{name}']", NS)
    return c


@pytest.mark.parametrize("suffix", [".ssp", ".ssd"])
def test_a_clocked_connection_is_written_and_read_back_to_the_same_run(ticker, tmp_path, suffix):
    out = write_ssp(_clocked_pair(ticker), tmp_path / f"clocks{suffix}", stop_time=STOP, step=H)
    back = read_ssp(out, allow_external=suffix == ".ssd")
    assert [str(c) for c in back.connections] == ["a.tick -> b.kick"]
    want = simulate(_clocked_pair(ticker), STOP, H)
    got = simulate(back, STOP, H)
    assert want["b.kicks"].max() >= 5  # the clock connection carries a's ticks (0.12 s, then every 0.37 s)
    for n in want.names:
        np.testing.assert_array_equal(got[n], want[n], err_msg=n)


def test_a_clock_connector_has_no_ssp_type_and_carries_the_clock_mark(ticker, tmp_path):
    root = etree.parse(str(write_ssp(_clocked_pair(ticker), tmp_path / "clocks.ssd"))).getroot()
    for comp, name in (("a", "tick"), ("b", "kick")):
        c = _connector(root, comp, name)
        assert [etree.QName(e).localname for e in c] == ["Annotations"]
        assert c.find("ssd:Annotations/ssc:Annotation", NS).get("type") == CLOCK_TYPE
    assert _connector(root, "b", "kick").get("kind") == "input"
    assert _connector(root, "a", "x").find("ssc:Real", NS) is not None  # other connectors keep their type


def _edited(ticker, tmp_path, edit) -> str:
    path = write_ssp(_clocked_pair(ticker), tmp_path / "clocks.ssd")
    tree = etree.parse(str(path))
    edit(tree.getroot())
    tree.write(str(path))
    return path


def test_a_clock_typed_boolean_is_refused_by_name(ticker, tmp_path):
    def as_boolean(root):
        c = _connector(root, "b", "kick")
        c.remove(c[0])
        etree.SubElement(c, f"{{{NS['ssc']}}}Boolean")
    with pytest.raises(CosimError, match=r"connector b\.kick is typed Boolean, but the FMU variable is a clock") as err:
        read_ssp(_edited(ticker, tmp_path, as_boolean), allow_external=True)
    assert "kick" in str(err.value)


def test_the_clock_mark_on_a_variable_that_is_no_clock_is_refused(ticker, tmp_path):
    def mark_wrong(root):
        c = _connector(root, "b", "kick")
        c.set("name", "kicks")
        c.set("kind", "output")
    with pytest.raises(CosimError, match=r"b\.kicks is marked as a clock"):
        read_ssp(_edited(ticker, tmp_path, mark_wrong), allow_external=True)


def test_fmpy_reads_the_untyped_clock_connectors(ticker, tmp_path):
    from fmpy.ssp.ssd import read_ssd
    ssd = read_ssd(str(write_ssp(_clocked_pair(ticker), tmp_path / "clocks.ssp")), validate=True)
    (conn,) = ssd.system.connections
    assert (conn.startElement, conn.startConnector, conn.endElement, conn.endConnector) == ("a", "tick", "b", "kick")
    kick = next(c for c in ssd.system.elements[1].connectors if c.name == "kick")
    assert kick.kind == "input"
