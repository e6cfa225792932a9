"""Each parameter of a plant declared once: :class:`Parameter` and :class:`Declaration`.

A plant lists its parameters in one :class:`Declaration`, each with its name,
SI unit, default, bounds (an interval whose ends are open or closed,
``"(0, inf)"`` for a mass, ``"[0, inf)"`` for a damping), description, and,
for a count or a structural choice, why a change needs the plant rebuilt.
Everything else comes from it:

* the constructor's keywords and defaults (:meth:`Declaration.constructor`,
  which also checks every value: a number, finite, a whole number where it
  must be, inside its bounds, the message naming the parameter, its value and
  its interval);
* the plant's ``parameters`` signals (:meth:`Declaration.signals`) with
  ``min``/``max`` and which end is open, from which the FMU declarations, the
  study ranges and the native FMU's bounds are written (the native runtime
  refuses exactly the values outside these intervals, open ends included);
* the parameters the native FMU keeps fixed: exactly those declared with a
  ``rebuild`` reason (:func:`mbfmu.fmu.native.build.build_native_fmu` refuses
  to build a plant whose tape fixes any other).

Conditions that tie several parameters together (a moment of inertia at most
the sum of the other two) stay in the plant's build, where the expression
tape records them as guards (:mod:`mbfmu.dynamics.symbolic`).
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from ..dynamics import symbolic
from ..errors import InputError
from .signals import Signal

_INTERVAL = re.compile(r"^\s*([\[(])\s*([^,\s]+)\s*,\s*([^,\s]+)\s*([\])])\s*$")


@dataclass(frozen=True)
class Parameter:
    """One parameter of a plant.

    Parameters
    ----------
    name : str
        Keyword of the constructor and name of the FMU variable (a vector's
        elements are ``name[1]`` .. ``name[size]``).
    unit : str
        SI unit as FMI writes it (``"kg"``, ``"N.m/rad"``, ``"1"``).
    default : float or tuple of float
        Value when the keyword is not given (a tuple of ``size`` for a vector).
    description : str
        One line; for a vector, ``{i}`` is the element's 1-based index.
    bounds : str
        The interval of accepted values, ``"(0, inf)"``, ``"[0, inf)"``,
        ``"[1.2, 2.2]"``: a round bracket is an open end, a square one a
        closed end; ``inf`` is no bound.
    integer : bool
        Whole numbers only (a count).
    rebuild : str or None
        Why a change needs the plant rebuilt (a count that changes the
        model's structure): the native FMU keeps it fixed, and says so.
    size : int
        0 for a scalar, else the length of a vector parameter.
    """

    name: str
    unit: str
    default: Any
    description: str
    bounds: str = "(-inf, inf)"
    integer: bool = False
    rebuild: str | None = None
    size: int = 0

    def __post_init__(self) -> None:
        if not _INTERVAL.match(self.bounds):
            raise InputError(f"parameter {self.name!r}: bounds {self.bounds!r} are not an interval like '(0, inf)'")
        lo, hi = self.min, self.max
        if lo is not None and hi is not None and lo > hi:
            raise InputError(f"parameter {self.name!r}: bounds {self.bounds!r} are empty")

    def _ends(self) -> tuple[str, float, float, str]:
        left, lo, hi, right = _INTERVAL.match(self.bounds).groups()
        return left, float(lo), float(hi), right

    @property
    def min(self) -> float | None:
        """Lower bound, or None."""
        lo = self._ends()[1]
        return None if lo == -math.inf else lo

    @property
    def max(self) -> float | None:
        """Upper bound, or None."""
        hi = self._ends()[2]
        return None if hi == math.inf else hi

    @property
    def min_open(self) -> bool:
        """True when the lower bound itself is refused."""
        return self.min is not None and self._ends()[0] == "("

    @property
    def max_open(self) -> bool:
        """True when the upper bound itself is refused."""
        return self.max is not None and self._ends()[3] == ")"

    def interval(self) -> str:
        """The bounds as the messages print them, ``"(0, inf)"``."""
        left, lo, hi, right = self._ends()
        return f"{left}{lo:g}, {hi:g}{right}"

    def contains(self, x: float) -> bool:
        """True when the number ``x`` lies inside the bounds."""
        left, lo, hi, right = self._ends()
        return (x > lo if left == "(" and lo > -math.inf else x >= lo) and \
            (x < hi if right == ")" and hi < math.inf else x <= hi)

    def check(self, plant: str, v):
        """``v`` if it is a valid value (a Sym kept while recording); raises
        :class:`InputError` naming the parameter, the value and the bounds."""
        what = f"plant {plant!r}: parameter {self.name!r} = {v!r}"
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise InputError(f"{what} is not a number")
        x = symbolic.value(v)
        if not math.isfinite(x):
            raise InputError(f"{what} must be finite")
        if self.integer and x != round(x):
            raise InputError(f"{what} must be a whole number in {self.interval()}")
        if not self.contains(x):
            unit = "" if self.unit == "1" else f" {self.unit}"
            raise InputError(f"{what} must be in {self.interval()}{unit}")
        if self.rebuild is not None:  # a structural choice: the build takes its plain number
            return int(round(x)) if self.integer else x
        return v

    def element_names(self) -> list[str]:
        """The FMU names: ``[name]``, or ``name[1]`` .. ``name[size]`` for a vector."""
        return [self.name] if not self.size else [f"{self.name}[{i + 1}]" for i in range(self.size)]


class Values(Mapping):
    """The checked values of a plant's parameters, by name and as attributes."""

    def __init__(self, values: Mapping[str, Any]):
        self.__dict__.update(values)
        self._names = list(values)

    def __getitem__(self, name: str):
        if name not in self._names:
            raise KeyError(name)
        return self.__dict__[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class Declaration:
    """The parameters of one plant, in order (see the module docstring).

    Parameters
    ----------
    plant : str
        The plant's name, for messages.
    *parameters : Parameter
    """

    def __init__(self, plant: str, *parameters: Parameter):
        self.plant = plant
        self.parameters = tuple(parameters)
        names = [p.name for p in self.parameters]
        if len(set(names)) != len(names):
            raise InputError(f"plant {plant!r}: a parameter is declared twice in {names}")
        self._by_name = dict(zip(names, self.parameters))

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.parameters)

    def __getitem__(self, name: str) -> Parameter:
        return self._by_name[name]

    def names(self) -> list[str]:
        """The constructor's keywords, in order."""
        return list(self._by_name)

    def rebuild_reasons(self) -> dict[str, str]:
        """FMU name -> why a change needs a rebuild, for the parameters the native FMU keeps fixed."""
        return {n: p.rebuild for p in self.parameters if p.rebuild for n in p.element_names()}

    def resolve(self, values: Mapping[str, Any]) -> Values:
        """The checked values: the given ones, the defaults for the others."""
        out = {}
        for p in self.parameters:
            v = values.get(p.name, p.default)
            if p.size:
                arr = symbolic.real_array(v).reshape(-1) if _numeric_sequence(v) else None
                if arr is None or arr.size != p.size:
                    raise InputError(f"plant {self.plant!r}: parameter {p.name!r} = {v!r} must be "
                                     f"{p.size} numbers")
                for k in range(p.size):
                    p.check(self.plant, arr[k])
                out[p.name] = arr
            else:
                out[p.name] = p.check(self.plant, v)
        return Values(out)

    def signals(self, values: Mapping[str, Any]) -> tuple[Signal, ...]:
        """The plant's ``parameters`` signals for ``values`` (:meth:`resolve`)."""
        out = []
        for p in self.parameters:
            starts = list(values[p.name]) if p.size else [values[p.name]]
            for k, name in enumerate(p.element_names()):
                out.append(Signal(name, p.unit, p.description.format(i=k + 1),
                                  float(symbolic.value(starts[k])),
                                  p.min, p.max, kind="parameter", min_open=p.min_open, max_open=p.max_open))
        return tuple(out)

    def constructor(self, init: Callable) -> Callable:
        """Decorate a plant's ``__init__(self, p, **options)``: it is called with
        ``p`` the checked :class:`Values` and its own keyword options, and the
        plant's constructor takes every declared parameter by keyword, with its
        default (``inspect.signature`` shows them)."""
        own = list(inspect.signature(init).parameters.values())[2:]
        names = set(self._by_name)

        @functools.wraps(init)
        def __init__(plant, **kwargs):
            values = {k: v for k, v in kwargs.items() if k in names}
            options = {k: v for k, v in kwargs.items() if k not in names}
            init(plant, self.resolve(values), **options)

        K = inspect.Parameter.KEYWORD_ONLY
        __init__.__signature__ = inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [inspect.Parameter(p.name, K, default=p.default) for p in self.parameters]
            + [o.replace(kind=K) for o in own])
        return __init__


def declared_by(plant) -> Declaration | None:
    """The :class:`Declaration` that ``plant``'s own class makes, or None.

    A subclass that inherits a declaration but builds another model (the
    flexible arm with ``method="segments"`` in a model file, say) is not held
    to it: its native FMU keeps the packer's own reasons for the parameters it
    fixes, until the subclass declares its parameters itself."""
    return vars(type(plant)).get("parameter_declaration")


def _numeric_sequence(v) -> bool:
    try:
        return all(isinstance(e, numbers.Real) and not isinstance(e, bool) for e in v)
    except TypeError:
        return False
