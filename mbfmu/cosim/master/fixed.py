"""The master's fixed-step loop: Jacobi and Gauss-Seidel, with extrapolation,
multi-rate units and iterative steps in Python, or the compiled loop
(:mod:`.fast_loop`) when every unit allows it.

A mixin of :class:`~mbfmu.cosim.master.run._Master`.
"""
from __future__ import annotations

import logging

import numpy as np

from . import fast_loop
from .progress_bar import RunProgress
from ..recording.result import RunSummary

_LOG = logging.getLogger("mbfmu.cosim")


class FixedLoop:
    """The fixed-step run of a master."""

    def _run_fixed(self, t0: float, stop: float, recs: list, summary: RunSummary) -> np.ndarray:
        H = self.H
        n = int(round((stop - t0) / H))
        span = stop - t0
        self._allocate(n + 1)
        self._record(t0, recs)
        self._push_history(t0)
        progress = RunProgress(t0, stop, self.opts.progress)
        try:
            why = self._note_loop()
            if why is None:  # all-FMU fixed-step runs: the same loop in C
                fast_loop.run(self, t0, stop, n, progress, summary)
            else:
                if self.opts.threads > 1:
                    _LOG.warning("threads=%d not used: the run takes the Python loop (%s)", self.opts.threads, why)
                self._fixed_loop(t0, stop, n, span, recs, summary, progress)
        finally:
            self._fl_ctl = None
            progress.close()

    def _fixed_loop(self, t0: float, stop: float, n: int, span: float, recs: list, summary: RunSummary,
                    progress: "RunProgress") -> None:
        extrap = self.opts.extrapolation > 0 or any(m > 1 for m in self.sub.values())
        gs = self.opts.algorithm == "gauss-seidel"
        gs_exchange = gs and not all(self.simple)  # algebraic loops are solved in the exchange
        units = self.gs_order if gs else self.units
        simple_units = [(u, u.do_step) for u in units]
        t = t0
        for k in range(n):
            # both points counted, never accumulated; h is their difference, so that
            # t + h is t_next to the bit (an FMU that sums its steps stays on the grid)
            t_next = stop if k == n - 1 else t0 + (k + 1) * span / n
            h = t_next - t
            if gs:
                for u in units:
                    if self.inc[u.name]:
                        self._set_inputs(u)
                        u.push()
                    self._step_unit(u, t, h, None)
                    u.pull()
            elif self.opts.iterative:
                self._iterative_step(t, h, t_next)
            elif extrap:
                coeffs = self._coeffs() if self.opts.extrapolation > 0 else None
                if k == 0 and self.opts.extrapolation == 2 and all(u.can_rollback for u in units):
                    coeffs = self._startup_coeffs(t, h, coeffs)
                for u in units:
                    self._step_unit(u, t, h, coeffs)
            else:
                for u, step in simple_units:
                    self._where = (u, t)
                    step(t, h)
            t = t_next
            if (not gs and not self.opts.iterative) or gs_exchange:
                self.exchange(t)
            summary.steps += 1
            self._record(t, recs)
            self._push_history(t)
            progress.tick(t)
