"""The progress bar of a co-simulation run (tqdm, over simulated time)."""
from __future__ import annotations

import time as _time


class RunProgress:
    """A tqdm bar over simulated time, shown when forced or when the run is
    projected to last more than ``after`` seconds of wall time."""

    def __init__(self, t0: float, stop: float, mode: bool | None, after: float = 3.0) -> None:
        self.t0, self.stop, self.mode, self.after = t0, stop, mode, after
        self.wall0 = _time.perf_counter()
        self.bar = None
        self.calls = 0

    def tick(self, t: float) -> None:
        self.calls += 1
        if self.mode is False or self.calls & 255:
            return
        if self.bar is None:
            el = _time.perf_counter() - self.wall0
            done = (t - self.t0) / (self.stop - self.t0)
            if self.mode or (done > 0 and el * (1 - done) / done > self.after):
                from tqdm import tqdm
                self.bar = tqdm(total=self.stop - self.t0, unit="s", unit_scale=True, leave=False,
                                desc="co-simulation",
                                bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]")
        if self.bar is not None:
            self.bar.update(t - self.t0 - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
