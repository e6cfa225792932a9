"""The Reference FMUs' ``Clocks.fmu``, the output of their synchronous scheduled-execution
importer ``scs_synchronous.c`` kept in tests/fixtures (see its README), and a unit that
pulses a Boolean to trigger a clock."""
from __future__ import annotations

import csv
import re

from mbfmu.cosim.units import Unit, Variable
from tooling import FIXTURES, REFERENCE_FMUS


CLOCKS = REFERENCE_FMUS / "fmi3" / "Clocks.fmu"


SCS = FIXTURES / "reference-fmus" / "scs_synchronous"


class BooleanPulses(Unit):
    """A Boolean output that is true at the given communication points (s) only."""

    def __init__(self, name: str, times: list[float]) -> None:
        super().__init__(name, [Variable("y", "output", "Boolean", None, 0.0)], {})
        self.times = set(times)
        self.t = 0.0
        self.y = [0.0]

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.t = t0
        self.pull()

    def pull(self) -> None:
        self.y[0] = 1.0 if self.t in self.times else 0.0

    def do_step(self, t: float, h: float) -> None:
        self.t = t + h


def scs_reference() -> tuple[list[dict[str, float]], list[tuple[int, float]], list[int]]:
    """The importer's rows, its (clock value reference, activation time) calls and its outClock reads."""
    with open(SCS / "scs_synchronous_out.csv", newline="") as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    log = (SCS / "scs_synchronous_log.txt").read_text()
    calls = [(int(vr), float(t)) for vr, t in
             re.findall(r"fmi3ActivateModelPartition\(clockReference=(\d+), activationTime=([0-9.e+-]+)\) -> OK", log)]
    out_clock = [int(v) for v in re.findall(r"fmi3GetClock\(valueReferences=\{1005\}, nValueReferences=1, "
                                            r"values=\{(\d)\}\) -> OK", log)]
    return rows, calls, out_clock
