"""Numbers as functions of a plant's parameters: the expression tape.

While :func:`recording` is active, a plant can be built with :class:`Sym`
parameters: every arithmetic operation and elementary function on them
(``+ - * / **``, ``sin``, ``cos``, ``sqrt``, ... on scalars and on numpy
object arrays of them) appends a node to a :class:`Tape`, so that every number
of the model computed from the parameters carries its expression. The
native FMU packer (:mod:`mbfmu.fmu.native.pack`) emits the tape as data that
the C runtime evaluates when a parameter is set (``csrc/tape.c``); the same
tape evaluates in Python (:meth:`Tape.evaluate`), which is how the packer
proves that the tape and the plant built with real numbers agree.

A comparison of a :class:`Sym` (``arm_mass <= 0`` in a plant's check) is a
*guard*: the tape records the branch the build took, and a parameter value
that would take the other branch is refused by the runtime, naming the
expression. ``float()`` of a Sym gives its value and drops its expression
(checks and compiled kernels read plain numbers); a number of the model that
lost its expression this way is found by the packer's verification.

Model-building code keeps expressions by using :func:`real_array` (instead
of ``np.asarray(x, float)``), :func:`value` before a compiled kernel or a
numerical check, and :func:`zeros` / :func:`tile` for arrays it fills.
Outside :func:`recording`, they are exactly the float versions.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import os
import sys
from typing import Sequence

import numpy as np

# node operations (the C runtime's csrc/tape.h uses the same codes)
CONST, PARAM, ADD, SUB, MUL, DIV, NEG, POW, SIN, COS, TAN, SQRT, EXP, LOG, ATAN2, ABS, ASIN, ACOS, ATAN, \
    HYPOT = range(20)
UNARY = {NEG: lambda a: -a, SIN: math.sin, COS: math.cos, TAN: math.tan, SQRT: math.sqrt, EXP: math.exp,
         LOG: math.log, ABS: abs, ASIN: math.asin, ACOS: math.acos, ATAN: math.atan}
BINARY = {ADD: lambda a, b: a + b, SUB: lambda a, b: a - b, MUL: lambda a, b: a * b, DIV: lambda a, b: a / b,
          POW: math.pow, ATAN2: math.atan2, HYPOT: math.hypot}
_NAMES = {SIN: "sin", COS: "cos", TAN: "tan", SQRT: "sqrt", EXP: "exp", LOG: "log", ABS: "abs", ASIN: "asin",
          ACOS: "acos", ATAN: "atan", ATAN2: "atan2", HYPOT: "hypot"}
_INFIX = {ADD: "+", SUB: "-", MUL: "*", DIV: "/", POW: "^"}
# guard comparisons: the branch taken is ``value(node) OP 0``
LT, LE, GT, GE, EQ, NE = range(6)
_CMP = {LT: (lambda d: d < 0, "<"), LE: (lambda d: d <= 0, "<="), GT: (lambda d: d > 0, ">"),
        GE: (lambda d: d >= 0, ">="), EQ: (lambda d: d == 0, "=="), NE: (lambda d: d != 0, "!=")}
_NOT = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}

# the tapes being recorded, innermost last: per thread and per task, so that a build
# recorded in one thread never records the numbers of a plant built in another
_recording: contextvars.ContextVar[tuple["Tape", ...]] = contextvars.ContextVar("mbfmu_symbolic_recording",
                                                                                default=())
_HERE = os.path.dirname(os.path.abspath(__file__))


class Tape:
    """The recorded expressions of one build.

    Attributes
    ----------
    names : list of str
        The parameters, in the order of :attr:`params`.
    nodes : list of tuple
        ``(op, a, b, c)``: operation, operand node indices (-1 none), and the
        constant (``CONST``) or the parameter index (``PARAM``).
    guards : list of tuple
        ``(node, cmp, where)``: the build took the branch ``value(node) cmp 0``
        (``cmp`` one of ``LT`` ... ``NE``), at source location ``where``.
    params : list of Sym
    """

    def __init__(self, names: Sequence[str], values: Sequence[float]):
        self.names = list(names)
        self.nodes: list[tuple[int, int, int, float]] = []
        self.guards: list[tuple[int, int, str]] = []
        self._consts: dict = {}
        self.params = [Sym(self, self._node(PARAM, -1, -1, float(k)), float(v)) for k, v in enumerate(values)]

    def _node(self, op: int, a: int, b: int, c: float = 0.0) -> int:
        self.nodes.append((op, a, b, c))
        return len(self.nodes) - 1

    def const(self, c: float) -> int:
        """The node of the constant ``c`` (one per distinct value)."""
        key = float(c).hex()
        if key not in self._consts:
            self._consts[key] = self._node(CONST, -1, -1, float(c))
        return self._consts[key]

    def guard(self, node: int, cmp: int) -> None:
        self.guards.append((node, cmp, _caller()))

    def evaluate(self, p: Sequence[float]) -> np.ndarray:
        """Values of all nodes for parameters ``p``, in the runtime's order of operations."""
        out = np.empty(len(self.nodes))
        for k, (op, a, b, c) in enumerate(self.nodes):
            if op == CONST:
                out[k] = c
            elif op == PARAM:
                out[k] = float(p[int(c)])
            elif op in UNARY:
                out[k] = _safe(UNARY[op], float(out[a]))
            else:
                out[k] = _safe(BINARY[op], float(out[a]), float(out[b]))
        return out

    def failed_guard(self, values: np.ndarray) -> int | None:
        """Index of the first guard that ``values`` (:meth:`evaluate`) breaks, or None."""
        for g, (node, cmp, _) in enumerate(self.guards):
            if not _CMP[cmp][0](values[node]):
                return g
        return None

    def text(self, node: int, limit: int = 160) -> str:
        """The expression of ``node`` in the parameters' names (shortened past ``limit`` characters)."""
        s = self._text(node, {}, 0)
        return s if len(s) <= limit else s[:limit - 3] + "..."

    def _text(self, k: int, memo: dict, depth: int) -> str:
        if k in memo:
            return memo[k]
        op, a, b, c = self.nodes[k]
        if depth > 12:
            s = "..."
        elif op == CONST:
            s = f"{c:.6g}"
        elif op == PARAM:
            s = self.names[int(c)]
        elif op == NEG:
            s = f"-{self._text(a, memo, depth + 1)}"
        elif op in _INFIX:
            s = f"({self._text(a, memo, depth + 1)} {_INFIX[op]} {self._text(b, memo, depth + 1)})"
        elif op in UNARY:
            s = f"{_NAMES[op]}({self._text(a, memo, depth + 1)})"
        else:
            s = f"{_NAMES[op]}({self._text(a, memo, depth + 1)}, {self._text(b, memo, depth + 1)})"
        memo[k] = s
        return s

    def guard_text(self, g: int) -> str:
        """``"<expression> <cmp> 0"`` of guard ``g``, the condition the parameters must keep."""
        node, cmp, _ = self.guards[g]
        op, a, b, _ = self.nodes[node]
        if op == SUB:  # a comparison x < y was recorded as x - y < 0
            return f"{self.text(a, 100)} {_CMP[cmp][1]} {self.text(b, 100)}"
        return f"{self.text(node)} {_CMP[cmp][1]} 0"


def _safe(fn, *args) -> float:
    try:
        return fn(*args)
    except (ValueError, ZeroDivisionError, OverflowError):
        return math.nan


def _caller() -> str:
    """``file:line`` of the first frame outside this module and numpy."""
    f = sys._getframe(2)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_HERE + os.sep + "symbolic") and f"{os.sep}numpy{os.sep}" not in path:
            return f"{os.path.basename(path)}:{f.f_lineno}"
        f = f.f_back
    return "?"


class Sym:
    """A number recorded on a :class:`Tape`: its value ``v`` and its node ``i``."""

    __slots__ = ("t", "i", "v")
    symbolic = True  # what plantref.group_parameters keeps as it is

    def __init__(self, tape: Tape, node: int, value: float):
        self.t, self.i, self.v = tape, node, value

    def __repr__(self) -> str:
        return f"Sym({self.v!r}: {self.t.text(self.i, 60)})"

    # ---- conversions: the value, the expression dropped
    def __float__(self) -> float:
        return self.v

    def __int__(self) -> int:
        return int(self.v)

    def __index__(self):
        raise TypeError("a parameter expression cannot be an index")

    def __hash__(self) -> int:
        # equal objects have equal hashes: a Sym equals the number of its value (__eq__)
        return hash(self.v)

    # ---- arithmetic
    def _other(self, x) -> int | None:
        if isinstance(x, Sym):
            return x.i
        if isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, bool):
            return self.t.const(float(x))
        if isinstance(x, bool):
            return self.t.const(float(x))
        return None

    def _bin(self, op: int, x, reverse: bool = False):
        j = self._other(x)
        if j is None:
            return NotImplemented
        xv = x.v if isinstance(x, Sym) else float(x)
        a, b, av, bv = (j, self.i, xv, self.v) if reverse else (self.i, j, self.v, xv)
        return Sym(self.t, self.t._node(op, a, b), _safe(BINARY[op], av, bv))

    def _un(self, op: int):
        return Sym(self.t, self.t._node(op, self.i, -1), _safe(UNARY[op], self.v))

    def __add__(self, x): return self._bin(ADD, x)
    def __radd__(self, x): return self._bin(ADD, x, True)
    def __sub__(self, x): return self._bin(SUB, x)
    def __rsub__(self, x): return self._bin(SUB, x, True)
    def __mul__(self, x): return self._bin(MUL, x)
    def __rmul__(self, x): return self._bin(MUL, x, True)
    def __truediv__(self, x): return self._bin(DIV, x)
    def __rtruediv__(self, x): return self._bin(DIV, x, True)
    def __pow__(self, x): return self._bin(POW, x)
    def __rpow__(self, x): return self._bin(POW, x, True)
    def __neg__(self): return self._un(NEG)
    def __pos__(self): return self
    def __abs__(self): return self._un(ABS)

    # numpy's object loops call these methods
    def sin(self): return self._un(SIN)
    def cos(self): return self._un(COS)
    def tan(self): return self._un(TAN)
    def sqrt(self): return self._un(SQRT)
    def exp(self): return self._un(EXP)
    def log(self): return self._un(LOG)
    def arcsin(self): return self._un(ASIN)
    def arccos(self): return self._un(ACOS)
    def arctan(self): return self._un(ATAN)
    def arctan2(self, x): return self._bin(ATAN2, x)
    def hypot(self, x): return self._bin(HYPOT, x)
    def conjugate(self): return self

    # ---- comparisons: guards
    def _cmp(self, x, cmp: int):
        if self._other(x) is None:
            return NotImplemented
        d = self - x
        taken = _CMP[cmp][0](d.v)
        self.t.guard(d.i, cmp if taken else _NOT[cmp])
        return taken

    def __lt__(self, x): return self._cmp(x, LT)
    def __le__(self, x): return self._cmp(x, LE)
    def __gt__(self, x): return self._cmp(x, GT)
    def __ge__(self, x): return self._cmp(x, GE)

    def __eq__(self, x):
        r = self._cmp(x, EQ)
        return False if r is NotImplemented else r

    def __ne__(self, x):
        r = self._cmp(x, NE)
        return True if r is NotImplemented else r

    def __bool__(self) -> bool:
        return self != 0


numbers.Real.register(Sym)


# ---- the functions of math and numpy on scalars that may be Sym
def _fn(op: int, f):
    def apply(x):
        return x._un(op) if isinstance(x, Sym) else f(x)
    return apply


sin, cos, tan, sqrt, exp, log = (_fn(op, f) for op, f in ((SIN, math.sin), (COS, math.cos), (TAN, math.tan),
                                                          (SQRT, math.sqrt), (EXP, math.exp), (LOG, math.log)))


@contextlib.contextmanager
def recording(names: Sequence[str], values: Sequence[float]):
    """Record a build: yields the :class:`Tape` whose ``params`` are the
    symbolic parameters (in the order of ``names``)."""
    tape = Tape(names, values)
    token = _recording.set(_recording.get() + (tape,))
    try:
        yield tape
    finally:
        _recording.reset(token)


def is_recording() -> bool:
    """True inside :func:`recording` (in this thread or task)."""
    return bool(_recording.get())


def has_sym(x) -> bool:
    """True if ``x`` (a number or an array) holds a :class:`Sym`."""
    if isinstance(x, Sym):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype == object and any(isinstance(e, Sym) for e in x.flat)
    if isinstance(x, (list, tuple)):
        return any(has_sym(e) for e in x)
    return False


def real_array(x) -> np.ndarray:
    """``np.asarray(x, float)``, or an object array while recording if ``x`` holds a :class:`Sym`
    (its other entries then plain floats)."""
    if is_recording() and has_sym(x):
        arr = np.array(x, dtype=object)
        flat = arr.reshape(-1)
        for k, e in enumerate(flat):
            if not isinstance(e, Sym):
                flat[k] = float(e)
        return arr
    return np.asarray(x, dtype=float)


def value(x):
    """The numbers of ``x`` (a float array for an array, a float for a Sym): for kernels and checks."""
    if isinstance(x, Sym):
        return x.v
    if isinstance(x, np.ndarray) and x.dtype == object or isinstance(x, (list, tuple)) and has_sym(x):
        return np.vectorize(float, otypes=[float])(np.asarray(x, dtype=object))
    return x


def number(x):
    """``float(x)``, or ``x`` itself while recording if it is a :class:`Sym`."""
    return x if isinstance(x, Sym) and is_recording() else float(x)


def zeros(shape) -> np.ndarray:
    """Zeros to fill: object dtype while recording (so that a Sym keeps its expression)."""
    on = is_recording()
    return np.zeros(shape, dtype=object if on else float) + (0.0 if on else 0)


def tile(a, reps) -> np.ndarray:
    """``np.tile`` of ``a``, object dtype while recording."""
    out = np.tile(a, reps)
    return out.astype(object) if is_recording() else out


def matmul(a, b) -> np.ndarray:
    """``a @ b`` of a matrix and a vector or a matrix, each entry summed in order
    (``a[i, 0] b[0] + a[i, 1] b[1] + ...``), for numbers and :class:`Sym` alike.

    numpy's BLAS product may fuse or reorder the sums for numbers (OpenBLAS's
    AVX-512 kernels do), while the tape records the order written here: a plant
    whose build goes through this function gives the same bits with numbers as its
    tape gives in Python and in C."""
    a, b = np.asarray(a), np.asarray(b)
    cols = b[:, None] if b.ndim == 1 else b
    out = [[_ordered_dot(a[i], cols[:, j]) for j in range(cols.shape[1])] for i in range(a.shape[0])]
    arr = real_array(out)
    return arr[:, 0] if b.ndim == 1 else arr


def _ordered_dot(x, y):
    acc = x[0] * y[0]
    for k in range(1, len(x)):
        acc = acc + x[k] * y[k]
    return acc
