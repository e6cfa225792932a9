"""The master's adaptive loop (Jacobi): steps rolled back and repeated smaller when
the extrapolation error estimate exceeds the tolerance.

A mixin of :class:`~mbfmu.cosim.master.run._Master`.
"""
from __future__ import annotations

import numpy as np

from ...errors import CosimError
from .progress_bar import RunProgress
from ..recording.result import RunSummary
from .run_guard import check_recording_fits


class AdaptiveLoop:
    """The adaptive-step run of a master."""

    def _warn_forced(self) -> None:
        f = self._forced_steps
        if f:
            import warnings
            warnings.warn(f"adaptive stepping accepted {f['count']} steps at the minimum step whose error estimate "
                          f"was above the tolerance (worst {f['worst_error']:.3g} times it, first at t = "
                          f"{f['first_time']!r} s): the result does not meet rtol/atol there; lower min_step or "
                          "loosen the tolerances (result.meta['adaptive_forced_steps'])", RuntimeWarning, stacklevel=4)

    def _run_adaptive(self, t0: float, stop: float, recs: list, summary: RunSummary) -> np.ndarray:
        o = self.opts
        self._note_loop()
        hmin = o.min_step if o.min_step is not None else (stop - t0) * 1e-9
        hmax = o.max_step if o.max_step is not None else (stop - t0)
        self._allocate(1024)
        self._window = self.opts.sink is not None and not check_recording_fits(o.max_steps + 1, len(self.names), True)
        self._record(t0, recs)
        self._push_history(t0)
        t, h = t0, min(self.H, hmax)
        p = max(self.opts.extrapolation, 0) + 1
        progress = RunProgress(t0, stop, self.opts.progress)
        try:
            self._adaptive_loop(t0, stop, t, h, hmin, hmax, p, recs, summary, progress)
        finally:
            progress.close()
        self._warn_forced()

    def _adaptive_loop(self, t0: float, stop: float, t: float, h: float, hmin: float, hmax: float, p: int,
                       recs: list, summary: RunSummary, progress: "RunProgress") -> None:
        o = self.opts
        rejected_last = False
        while t < stop:
            if summary.steps + summary.rejected_steps >= o.max_steps:
                raise CosimError(f"adaptive stepping took {o.max_steps} steps and reached only t = {t!r} s "
                                 f"(step {h!r} s); loosen the tolerances or raise min_step")
            last = t + h >= stop - 1e-12 * (stop - t0)
            if last:
                h = stop - t  # shrinks the step (it never grows it: a rejected last step makes progress)
            elif stop - (t + h) < hmin:  # no sliver shorter than min_step at the end: split the rest in two
                h = (stop - t) / 2
            saved = self._save()
            coeffs = self._coeffs()
            for u in self.units:
                self._step_unit(u, t, h, coeffs)
            own = self._own_outputs()
            t_new = stop if last else t + h
            self.exchange(t_new)
            y_new = np.array([src.y[k] for _, _, src, k in self.conns], float)
            c0, c1, c2 = coeffs
            pred = c0 + c1 * h + c2 * h * h
            scale = o.atol + o.rtol * np.maximum(np.abs(y_new), np.abs(c0))
            err = float(np.max(np.abs(y_new - pred) / scale)) if len(y_new) else 0.0
            fac = min(5.0, max(0.2, 0.9 * (1.0 / err) ** (1.0 / p))) if err > 0 else 5.0
            if err <= 1.0 or h <= hmin:
                if err > 1.0:  # the tolerance is not met even at the smallest step: say so
                    f = self._forced_steps
                    f["count"] = f.get("count", 0) + 1
                    f["worst_error"] = max(f.get("worst_error", 0.0), err)
                    f.setdefault("first_time", t)
                for u, s, _ in saved:
                    u.free_state(s)
                t = t_new
                summary.steps += 1
                self._record(t, recs)
                self._push_history(t)
                progress.tick(t)
                h = min(hmax, max(hmin, h * (min(fac, 1.0) if rejected_last else fac)))
                rejected_last = False
            else:  # the retry starts from the restored state: the rejected step repeated
                self._restore(saved, free=False)  # from it must give what it gave
                for u in self.units:
                    self._step_unit(u, t, h, coeffs)
                self._check_repeat(t, own, self._own_outputs(), "adaptive")
                self._restore(saved, free=True)
                self.exchange(t)
                summary.rejected_steps += 1
                rejected_last = True
                h = max(hmin, h * min(fac, 0.5))
