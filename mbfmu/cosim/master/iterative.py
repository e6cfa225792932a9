"""The master's iterative (implicit Jacobi) step: rolled back and repeated until
the interpolated inputs agree with the outputs they produce.

A mixin of :class:`~mbfmu.cosim.master.run._Master` (its exchange, extrapolation
and rollback).
"""
from __future__ import annotations

import numpy as np

from ...errors import CosimError


class IterativeStep:
    """One iterative-coupling step of a fixed-step Jacobi run."""

    def _iterative_step(self, t: float, h: float, t_new: float) -> None:
        """One implicit (iterative) Jacobi step: inputs over the step are the linear
        interpolation between the consistent values at ``t`` and a guess at ``t + h``;
        the step is rolled back and repeated with the exchanged values as the new guess
        until they agree to ``loop_tolerance`` (fixed-point iteration)."""
        c0, c1, c2 = self._coeffs()
        guess = c0 + c1 * h + c2 * h * h  # extrapolated start guess
        saved = self._save()
        tol = max(self.opts.loop_tolerance, 1e-14)
        try:
            for it in range(self.opts.loop_max_iterations):
                coeffs = (c0, (guess - c0) / h, np.zeros_like(c0))
                for u in self.units:
                    self._step_unit(u, t, h, coeffs)
                if it < 2:  # each unit's outputs after its step, its inputs still those of the step
                    own = self._own_outputs()
                self.exchange(t_new)
                self.loop_iterations += 1
                y = np.array([src.y[k] for _, _, src, k in self.conns], float)
                if it == 0:  # repeat the first iteration, same inputs, from the restored state:
                    first = own  # the restore must give the step taken from the state itself
                    self._restore(saved, free=False)
                    continue
                if it == 1:
                    self._check_repeat(t, first, own)
                gap = np.abs(y - guess) / (1.0 + np.abs(y))
                if np.all(gap <= tol):
                    return
                guess = y
                self._restore(saved, free=False)
            worst = int(np.argmax(gap))  # of the last iteration (guess is y by now)
            dst, j, src, k = self.conns[worst]
            raise CosimError(f"iterative coupling did not converge in {self.opts.loop_max_iterations} iterations "
                             f"at t = {t!r} s (worst: {src.name}.{src.outputs[k]} -> {dst.name}.{dst.inputs[j]}); "
                             "use a smaller step")
        finally:
            for u, st, _ in saved:
                u.free_state(st)
