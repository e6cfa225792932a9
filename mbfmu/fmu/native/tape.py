"""The plant's numeric description as a function of its parameters, for the C runtime.

:func:`trace` builds the plant once with symbolic parameters
(:mod:`mbfmu.dynamics.symbolic`) and keeps, for every number of the native
description ``d`` that the parameters move, the node of the expression tape
that computes it, and the guards (the plant's own checks, ``arm_mass > 0``).
The runtime evaluates that tape in C (``csrc/tape.c``) when a parameter is
set: one description, evaluated by Python (:meth:`Tape.evaluate`, in the
verification here and the tests) and by C.

:func:`verify` proves it: for each parameter at values around its start
(0.8x and 1.25x, inside its range) and for all of them together, the
description of the plant built with real numbers equals the tape's to
1e-12; a parameter it cannot prove (a number computed outside the recorded
expressions, a change of the model's structure, a guard that refuses a value
the plant accepts) is fixed in the native FMU, with the reason, only where the
plant says so: a plant that declares its parameters
(:mod:`mbfmu.plant.parameters`) lists the ones a change of which needs a
rebuild, with the reason, and any other parameter found fixed fails the build
(:func:`.pack.hold_to_declaration`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ...dynamics import symbolic

_REL_TOL = 1e-12
_FACTORS = (0.8, 1.25)
_REFUSED = "the plant refuses the value"


@dataclass
class Traced:
    """The tape of one plant and where its nodes go in ``d``.

    Attributes
    ----------
    tape : symbolic.Tape
    out_d, out_node : ndarray of int
        ``d[out_d[k]] = value(out_node[k])``: the entries of ``d`` the parameters move.
    fixed : dict
        Parameter index -> why the tape cannot set it (after :func:`verify`).
    """

    tape: symbolic.Tape
    out_d: np.ndarray
    out_node: np.ndarray
    structure: dict
    fixed: dict = field(default_factory=dict)

    def description(self, d0: np.ndarray, p) -> np.ndarray:
        """``d`` for parameters ``p`` as the runtime computes it (``d0`` at the others)."""
        values = self.tape.evaluate(p)
        d = np.array(d0, dtype=float)
        d[self.out_d] = values[self.out_node]
        return d


def trace(plant, rebuild: Callable[[Mapping], object], describe: Callable) -> Traced:
    """Build ``plant`` again with symbolic parameters and keep the tape of its description.

    Raises whatever the symbolic build raises (the caller falls back, with the reason)."""
    names = [s.name for s in plant.parameters]
    values = [float(s.start) for s in plant.parameters]
    with symbolic.recording(names, values) as tape:
        desc = describe(rebuild(dict(zip(names, tape.params))))
    flat = desc.d
    idx = [k for k, e in enumerate(flat) if isinstance(e, symbolic.Sym)]
    return Traced(tape, np.array(idx, dtype=int), np.array([flat[k].i for k in idx], dtype=int),
                  desc.structure)


def _close(a: np.ndarray, b: np.ndarray, offsets: Mapping[str, int]) -> bool:
    """``a`` equals ``b`` to 1e-12 of each number, or of the largest magnitude in its block
    of the description (``offsets``: block name -> first index). The block floor admits a
    number that cancels to rounding noise (a body's offset along an axis it does not move
    on, 1e-17 m): its last bits depend on the summation order, which the BLAS kernel the
    CPU selects decides, not on the parameters."""
    scale = np.maximum(np.abs(a), np.abs(b))
    starts = sorted(set(offsets.values()) | {0, len(a)})
    for lo, hi in zip(starts[:-1], starts[1:]):
        if hi > lo:
            scale[lo:hi] = np.maximum(scale[lo:hi], 1e-3 * scale[lo:hi].max())
    return bool(np.all(np.abs(a - b) <= _REL_TOL * scale + 1e-300))


def probe_values(sig) -> list[float]:
    """The values of a parameter the verification builds: 0.8x and 1.25x its start
    (0.1 either side of a zero start), a factor outside the range replaced by that end."""
    p0 = float(sig.start)
    out = [p0 * f for f in _FACTORS] if p0 != 0 else [-0.1, 0.1]
    for k, v in enumerate(out):
        if sig.min is not None and v < sig.min:
            out[k] = float(sig.min)
        if sig.max is not None and v > sig.max:
            out[k] = float(sig.max)
    return [v for v in dict.fromkeys(out) if v != p0]


def verify(traced: Traced, plant, rebuild: Callable[[Mapping], object], describe: Callable, d0: np.ndarray
           ) -> None:
    """Fix (in ``traced.fixed``) each parameter whose tape the plant does not confirm (module docstring)."""
    p0 = np.array([float(s.start) for s in plant.parameters])
    confirmed = {}  # parameter index -> the first probe value the plant built and the tape matched
    for j, sig in enumerate(plant.parameters):
        built = 0
        # a whole-number start (a count) is also probed one up and one down
        extra = [p0[j] - 1, p0[j] + 1] if float(p0[j]).is_integer() else []
        # values close to the start where the plant refuses the far ones (a moment on the triangle inequality's edge)
        near = [p0[j] * f for f in (0.99, 1.01, 0.9999, 1.0001)] if p0[j] != 0 else []
        whole = integral = 0
        fraction_refused = False  # a probe value that is not a whole number was refused
        for v in probe_values(sig) + extra + near:
            if built >= 2:
                break
            p = p0.copy()
            p[j] = v
            why = _check(traced, rebuild, describe, d0, p, {sig.name: v})
            if why == _REFUSED:
                fraction_refused |= not float(v).is_integer()
                continue
            built += 1
            whole += v in extra
            integral += float(v).is_integer()
            if why:
                traced.fixed[j] = why
                break
            confirmed.setdefault(j, v)
        count = whole == built or integral == built and fraction_refused
        if not built:
            traced.fixed[j] = "the plant refuses every probe value near it"
        elif count and "structure" not in traced.fixed.get(j, ""):
            # whole numbers only: a count (its check is not recorded), also one without effect here
            # (a number of segments of a model built of modes) or one that switches the model
            traced.fixed[j] = "it is a count (the plant takes whole numbers only): a structural choice"
    # all together: each free parameter moved to its first confirmed probe value
    p, values = p0.copy(), {}
    for j, sig in enumerate(plant.parameters):
        if j not in traced.fixed and j in confirmed:
            p[j] = values[sig.name] = confirmed[j]
    if values:
        why = _check(traced, rebuild, describe, d0, p, values)
        if why == _REFUSED:  # the values combine to ones the plant refuses: nothing to compare
            why = None
        if why:  # name the parameters that do not combine: fix them all (rare; rebuild to change them)
            for j, sig in enumerate(plant.parameters):
                if sig.name in values:
                    traced.fixed[j] = f"together with the other parameters {why}"


def _check(traced: Traced, rebuild, describe, d0, p, values) -> str | None:
    """None if the plant built with ``values`` equals the tape at ``p``, else why not."""
    shown = ", ".join(f"{k} = {v:.6g}" for k, v in values.items()) if len(values) < 3 else "the probe values"
    try:
        real = describe(rebuild(values))
    except Exception:  # the plant refuses these values: nothing to compare (the runtime's checks refuse them)
        return _REFUSED
    if real.structure != traced.structure:
        return f"changes the model's structure (at {shown})"
    tv = traced.tape.evaluate(p)
    g = traced.tape.failed_guard(tv)
    if g is not None:
        return f"is refused by the recorded condition {traced.tape.guard_text(g)} at {shown}, which the plant accepts"
    if not _close(traced.description(d0, p), np.asarray(real.d, float), real.offsets):
        return f"moves a number of the packed model outside the recorded expressions (at {shown})"
    return None


def tape_source(traced: Traced | None, c_array, c_double, c_string) -> tuple[str, dict]:
    """The C text of the tape (``csrc/tape.h``) and the fields of ``MBN_DATA`` that point to it."""
    if traced is None:
        return "", dict(tape="NULL")
    tape = traced.tape
    ops = [n[0] for n in tape.nodes]
    text = "".join([
        c_array("unsigned char", "TP_OP", ops),
        c_array("int", "TP_A", [n[1] for n in tape.nodes]),
        c_array("int", "TP_B", [n[2] for n in tape.nodes]),
        c_array("double", "TP_C", [n[3] for n in tape.nodes], c_double),
        c_array("int", "TP_OUT_D", traced.out_d.tolist()),
        c_array("int", "TP_OUT_N", traced.out_node.tolist()),
        c_array("int", "TP_G_NODE", [g[0] for g in tape.guards]),
        c_array("int", "TP_G_CMP", [g[1] for g in tape.guards]),
        c_array("char *", "TP_G_TEXT", [f"{tape.guard_text(k)} ({g[2]})" for k, g in enumerate(tape.guards)],
                c_string),
        "static const mbn_tape TAPE = {\n"
        f"    .nn = {len(tape.nodes)}, .op = TP_OP, .a = TP_A, .b = TP_B, .c = TP_C,\n"
        f"    .nout = {len(traced.out_d)}, .out_d = TP_OUT_D, .out_n = TP_OUT_N,\n"
        f"    .ng = {len(tape.guards)}, .g_node = TP_G_NODE, .g_cmp = TP_G_CMP, .g_text = TP_G_TEXT,\n"
        "};\n",
    ])
    return text, dict(tape="&TAPE")
