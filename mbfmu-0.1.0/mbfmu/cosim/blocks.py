"""Static signal blocks as co-simulation units: Gain, Sum, Offset,
Saturation, Mux and Demux.

Each block is a :class:`~mbfmu.cosim.units.FunctionUnit` (memoryless, direct
feedthrough, rollback for free), so controllers written in deviation
variables (``du = K (y - y0)``, ``u = u0 + du``, limited to the actuators'
range) are put together from blocks instead of hand-written function units.

Port names: a block of width ``n`` has the scalar ports ``u`` and ``y`` when
``n == 1`` and the vector ports ``u[1]..u[n]``, ``y[1]..y[n]`` otherwise, so
a whole vector connects in one call (``system.connect("plant.q", "gain.u")``,
see :meth:`mbfmu.cosim.System.connect`). Multi-input blocks (Sum, Mux) name
their inputs ``u1, u2, ...`` (each a vector of the block's width), or the names
given; Demux names its outputs ``y1, y2, ...`` likewise.

Examples
--------
A proportional-derivative law ``tau = Kp (q_ref - q) - Kd v`` on a 3-joint arm,
its torque limited to 50 N m:

>>> from mbfmu.cosim.blocks import Gain, Saturation, Sum
>>> err = Sum("err", "+-", n=3, inputs=("ref", "q"), unit="rad")
>>> pd = Sum("pd", "+-", n=3, unit="N.m")
>>> kp = Gain("kp", 400.0, n=3, unit_in="rad", unit_out="N.m")
>>> kd = Gain("kd", 40.0, n=3, unit_in="rad/s", unit_out="N.m")
>>> lim = Saturation("lim", -50.0, 50.0, n=3, unit="N.m")
>>> err.inputs[:4], lim.outputs
(['ref[1]', 'ref[2]', 'ref[3]', 'q[1]'], ['y[1]', 'y[2]', 'y[3]'])
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import InputError
from .units import FunctionUnit


def port_names(base: str, n: int) -> list[str]:
    """``[base]`` for a scalar port, ``[base[1], ..., base[n]]`` for a vector."""
    return [base] if n == 1 else [f"{base}[{k}]" for k in range(1, n + 1)]


def _width(name: str, n: int | None, *arrays: np.ndarray) -> int:
    """The block width: ``n`` if given, else the length of the vector parameters (1 for scalars)."""
    sizes = {a.size for a in arrays if a.ndim > 0 and a.size != 1}
    if len(sizes) > 1:
        raise InputError(f"block {name!r}: parameter vectors of different lengths {sorted(sizes)}")
    if n is None:
        return sizes.pop() if sizes else 1
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise InputError(f"block {name!r}: width n = {n!r} must be a positive integer")
    if sizes and sizes != {n}:
        raise InputError(f"block {name!r}: a parameter vector of length {sizes.pop()} for width n = {n}")
    return int(n)


def _vector(name: str, what: str, value) -> np.ndarray:
    a = np.asarray(value, float)
    if a.ndim > 1 or not np.all(np.isfinite(a)):
        raise InputError(f"block {name!r}: {what} must be a finite number or vector, got {value!r}")
    return a


def _units(names: Sequence[str], unit: str | None) -> dict[str, str]:
    return {n: unit for n in names} if unit else {}


def _start(names: Sequence[str], start: float | None) -> dict[str, float] | None:
    return None if start is None else {n: float(start) for n in names}


def _groups(name: str, count: int, names: Sequence[str] | None, prefix: str) -> list[str]:
    """Port group names: ``prefix1, prefix2, ...`` or the ``names`` given (distinct, ``count`` of them)."""
    groups = [f"{prefix}{k}" for k in range(1, count + 1)] if names is None else list(names)
    if len(groups) != count or len(set(groups)) != count:
        raise InputError(f"block {name!r}: {count} distinct port names needed, got {groups!r}")
    return groups


def _sizes(name: str, sizes: Sequence[int] | int) -> list[int]:
    """Widths of a Mux's inputs / a Demux's outputs; an integer ``m`` means ``m`` scalars."""
    sizes = [1] * int(sizes) if isinstance(sizes, (int, np.integer)) else list(sizes)
    if not sizes or any(not (isinstance(m, (int, np.integer)) and m >= 1) for m in sizes):
        raise InputError(f"block {name!r}: sizes {sizes!r} must be positive integers")
    return sizes


class Gain(FunctionUnit):
    """``y = k u``: scalar or element-wise gain, or a matrix gain ``y = K u``.

    Parameters
    ----------
    name : str
        Unit name.
    k : float, sequence of float or 2-D array
        Scalar (every element), vector of length ``n`` (element-wise) or an
        ``(m, n)`` matrix (``m`` outputs from ``n`` inputs), in
        ``unit_out / unit_in``.
    n : int, optional
        Width (number of inputs); default from ``k`` (1 for a scalar).
    unit_in, unit_out : str, optional
        Units of the inputs and of the outputs.
    start : float, optional
        Start value of the inputs (used when one is left unconnected).
    """

    def __init__(self, name: str, k, n: int | None = None, *, unit_in: str | None = None,
                 unit_out: str | None = None, start: float | None = None) -> None:
        K = np.asarray(k, float)
        if K.ndim == 2:
            if not np.all(np.isfinite(K)) or K.size == 0:
                raise InputError(f"block {name!r}: the gain matrix must be finite and non-empty")
            if n is not None and n != K.shape[1]:
                raise InputError(f"block {name!r}: a {K.shape[0]}x{K.shape[1]} gain matrix for width n = {n}")
            m, n = K.shape
            fn = lambda t, u: K @ u  # noqa: E731
        else:
            K = _vector(name, "gain", k)
            n = m = _width(name, n, K)
            fn = lambda t, u: K * u  # noqa: E731
        self.k = K
        ins, outs = port_names("u", n), port_names("y", m)
        super().__init__(name, fn, ins, outs, {**_units(ins, unit_in), **_units(outs, unit_out)}, _start(ins, start))


class Offset(FunctionUnit):
    """``y = u + offset``: into or out of deviation variables around an operating point.

    Parameters
    ----------
    name : str
        Unit name.
    offset : float or sequence of float
        Scalar (every element) or vector of length ``n``, in ``unit``.
    n : int, optional
        Width; default from ``offset`` (1 for a scalar).
    unit : str, optional
        Unit of every port.
    start : float, optional
        Start value of the inputs (used when one is left unconnected).
    """

    def __init__(self, name: str, offset, n: int | None = None, *, unit: str | None = None,
                 start: float | None = None) -> None:
        self.offset = b = _vector(name, "offset", offset)
        n = _width(name, n, b)
        ins, outs = port_names("u", n), port_names("y", n)
        super().__init__(name, lambda t, u: u + b, ins, outs, _units(ins + outs, unit), _start(ins, start))


class Saturation(FunctionUnit):
    """``y = clip(u, lower, upper)``; limits scalar or per element, in ``unit``.

    Parameters
    ----------
    name : str
        Unit name.
    lower, upper : float or sequence of float
        Limits, scalar (every element) or one per element, in ``unit``; ``lower <= upper``.
    n : int, optional
        Width; default from the limits (1 for scalars).
    unit : str, optional
        Unit of every port.
    start : float, optional
        Start value of the inputs (used when one is left unconnected).
    """

    def __init__(self, name: str, lower, upper, n: int | None = None, *, unit: str | None = None,
                 start: float | None = None) -> None:
        lo, hi = _vector(name, "lower", lower), _vector(name, "upper", upper)
        n = _width(name, n, lo, hi)
        if np.any(lo > hi):
            raise InputError(f"block {name!r}: lower limit {lower!r} above upper limit {upper!r}")
        self.lower, self.upper = lo, hi
        ins, outs = port_names("u", n), port_names("y", n)
        super().__init__(name, lambda t, u: np.clip(u, lo, hi), ins, outs, _units(ins + outs, unit),
                         _start(ins, start))


class Sum(FunctionUnit):
    """``y = s1 u1 + s2 u2 + ...`` with the signs ``"+"``/``"-"`` of ``signs``.

    Parameters
    ----------
    name : str
        Unit name.
    signs : str
        One ``+`` or ``-`` per input, e.g. ``"+-"`` for ``y = u1 - u2``.
    n : int
        Width of every input and of the output.
    inputs : sequence of str, optional
        Port names of the inputs (default ``u1, u2, ...``); each is a vector
        ``name[1..n]`` when ``n > 1``.
    unit : str, optional
        Unit of every port.
    start : float, optional
        Start value of the inputs.
    """

    def __init__(self, name: str, signs: str = "++", n: int = 1, *, inputs: Sequence[str] | None = None,
                 unit: str | None = None, start: float | None = None) -> None:
        if not isinstance(signs, str) or not signs or set(signs) - {"+", "-"}:
            raise InputError(f"block {name!r}: signs {signs!r} must be a non-empty string of '+' and '-'")
        n = _width(name, n)
        groups = _groups(name, len(signs), inputs, "u")
        ins = [p for g in groups for p in port_names(g, n)]
        outs = port_names("y", n)
        s = np.array([1.0 if c == "+" else -1.0 for c in signs])
        self.signs = signs
        super().__init__(name, lambda t, u: s @ u.reshape(len(s), n), ins, outs, _units(ins + outs, unit),
                         _start(ins, start))


class Mux(FunctionUnit):
    """Stack the inputs into one vector output ``y[1..sum(sizes)]``.

    Parameters
    ----------
    name : str
        Unit name.
    sizes : sequence of int or int
        The width of each input; an integer ``m`` means ``m`` scalar inputs.
    inputs : sequence of str, optional
        Port names of the inputs (default ``u1, u2, ...``); each is a vector
        ``name[1..m]`` when its width ``m > 1``.
    unit : str, optional
        Unit of every port.
    start : float, optional
        Start value of the inputs (used when one is left unconnected).
    """

    def __init__(self, name: str, sizes: Sequence[int] | int, *, inputs: Sequence[str] | None = None,
                 unit: str | None = None, start: float | None = None) -> None:
        sizes = _sizes(name, sizes)
        groups = _groups(name, len(sizes), inputs, "u")
        ins = [p for g, m in zip(groups, sizes) for p in port_names(g, m)]
        outs = port_names("y", sum(sizes))
        super().__init__(name, lambda t, u: u, ins, outs, _units(ins + outs, unit), _start(ins, start))


class Demux(FunctionUnit):
    """Split the vector input ``u[1..sum(sizes)]`` into outputs of the given widths.

    Parameters
    ----------
    name : str
        Unit name.
    sizes : sequence of int or int
        The width of each output; an integer ``m`` means ``m`` scalar outputs.
    outputs : sequence of str, optional
        Port names of the outputs (default ``y1, y2, ...``); each is a vector
        ``name[1..m]`` when its width ``m > 1``.
    unit : str, optional
        Unit of every port.
    start : float, optional
        Start value of the inputs (used when one is left unconnected).
    """

    def __init__(self, name: str, sizes: Sequence[int] | int, *, outputs: Sequence[str] | None = None,
                 unit: str | None = None, start: float | None = None) -> None:
        sizes = _sizes(name, sizes)
        groups = _groups(name, len(sizes), outputs, "y")
        ins = port_names("u", sum(sizes))
        outs = [p for g, m in zip(groups, sizes) for p in port_names(g, m)]
        super().__init__(name, lambda t, u: u, ins, outs, _units(ins + outs, unit), _start(ins, start))
