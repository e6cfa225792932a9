"""A co-simulation system: units, connections ``unit.output -> unit.input``,
start values, and the checks made before any run.

:meth:`System.validate` collects every problem (unknown names, causality,
type and unit mismatches, inputs driven twice, unconnected inputs without a
start value) and raises one :class:`~mbfmu.errors.CosimError` listing them
all. :func:`exchange_order` derives the data-exchange order from the units'
declared output dependencies and finds the algebraic loops.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..errors import CosimError, InputError, unknown_name
from ..plant.signals import current_name
from .units import Unit


@dataclass(frozen=True)
class Connection:
    """One connection ``src_unit.src_var -> dst_unit.dst_var`` of a :class:`System`.

    Parameters
    ----------
    src_unit, src_var : str
        Name of the unit and of its output variable that is read.
    dst_unit, dst_var : str
        Name of the unit and of its input variable that is set.
    """

    src_unit: str
    src_var: str
    dst_unit: str
    dst_var: str

    @property
    def src(self) -> str:
        return f"{self.src_unit}.{self.src_var}"

    @property
    def dst(self) -> str:
        return f"{self.dst_unit}.{self.dst_var}"

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst}"


#: at most this many units and connections are named in a System's repr
REPR_ITEMS = 12


def _grouped(connections: Sequence[Connection]) -> list[str]:
    """The connections as text, a vector's elements ``a.q[k] -> b.u[k]`` as one ``a.q -> b.u``."""
    groups: dict[tuple[str, str], list[int]] = {}
    for c in connections:
        ms, md = (re.fullmatch(r"(.+)\[(\d+)\]", v) for v in (c.src_var, c.dst_var))
        if ms and md and ms.group(2) == md.group(2):
            key = (f"{c.src_unit}.{ms.group(1)}", f"{c.dst_unit}.{md.group(1)}")
            groups.setdefault(key, []).append(int(ms.group(2)))
        else:
            groups.setdefault((c.src, c.dst), [])
    return [f"{a} -> {b}" if not k or k == list(range(1, len(k) + 1))
            else ", ".join(f"{a}[{i}] -> {b}[{i}]" for i in k) for (a, b), k in groups.items()]


def split_name(full: str) -> tuple[str, str]:
    """``"unit.var"`` -> ``("unit", "var")`` (the variable may contain dots)."""
    if not isinstance(full, str) or "." not in full:
        raise InputError(f"{full!r} is not a 'unit.variable' name")
    unit, var = full.split(".", 1)
    return unit, var


class System:
    """Units plus connections.

    Parameters
    ----------
    units : iterable of Unit
        The units; names must be unique.
    connections : iterable of (str, str)
        Pairs ``("a.y", "b.u")``; a pair of vector names connects every
        element (see :meth:`connect`).
    values : mapping, optional
        ``{"unit.var": value}`` parameters and start values.

    Examples
    --------
    >>> from mbfmu.cosim import System, sources
    >>> s = System([sources.step("ref", 1.0)])
    >>> s.units["ref"].outputs
    ['y']
    """

    def __init__(self, units: Iterable[Unit] = (), connections: Iterable[tuple[str, str]] = (),
                 values: Mapping[str, Any] | None = None) -> None:
        self.units: dict[str, Unit] = {}
        self.connections: list[Connection] = []
        self._duplicates: list[str] = []
        self.experiment: dict[str, Any] = {}  # start_time, stop_time, step, algorithm (e.g. from SSP)
        for u in units:
            self.add(u)
        for src, dst in connections:
            self.connect(src, dst)
        for k, v in (values or {}).items():
            self.set(k, v)

    def add(self, unit: Unit) -> Unit:
        """Add ``unit`` and return it."""
        if not isinstance(unit, Unit):
            raise InputError(f"{unit!r} is not a co-simulation Unit")
        if unit.name in self.units:
            self._duplicates.append(unit.name)
        self.units[unit.name] = unit
        return unit

    def connect(self, src: str, dst: str) -> None:
        """Connect output ``src`` (``"unit.output"``) to input ``dst`` (``"unit.input"``).

        A whole vector connects in one call: when a unit has no variable
        ``q`` but has ``q[1]..q[n]``, ``"plant.q"`` stands for all of them, in
        index order, and is connected element by element to a vector (or, for
        ``n = 1``, a scalar) of the same size on the other side. Both units
        must have been added for that; otherwise, and for unknown names, the
        names are kept as given and checked by :meth:`validate`, so that all
        problems are reported together.

        Raises
        ------
        InputError
            When the two sides have different sizes, or a vector's elements
            are not numbered ``1..n`` without gaps.
        """
        (su, sv), (du, dv) = split_name(src), split_name(dst)
        srcs, dsts = self._elements(su, sv), self._elements(du, dv)
        if srcs is None or dsts is None:
            self.connections.append(Connection(su, sv, du, dv))
            return
        if len(srcs) != len(dsts):
            raise InputError(f"cannot connect {src} -> {dst}: {_size(su, srcs)} but {_size(du, dsts)}")
        self.connections.extend(Connection(su, a, du, b) for a, b in zip(srcs, dsts))

    def _elements(self, unit: str, var: str) -> list[str] | None:
        """``[var]``, the elements ``var[1..n]`` of a vector, or None when unknown."""
        u = self.units.get(unit)
        if u is None:
            return None
        var = current_name(var, u.variables)
        if var in u.variables:
            return [var]
        indices = sorted(int(m.group(1)) for n in u.variables
                         if (m := re.fullmatch(re.escape(var) + r"\[(\d+)\]", n)))
        if not indices:
            return None
        if indices != list(range(1, len(indices) + 1)):
            raise InputError(f"{unit}.{var} is not a vector {var}[1..n]: its elements are numbered {indices}")
        return [f"{var}[{k}]" for k in indices]

    def __repr__(self) -> str:
        units = ", ".join(f"{n} ({type(u).__name__})" for n, u in list(self.units.items())[:REPR_ITEMS])
        if len(self.units) > REPR_ITEMS:
            units += f", ... {len(self.units) - REPR_ITEMS} more"
        wires = _grouped(self.connections)
        shown = ", ".join(wires[:REPR_ITEMS]) + (f", ... {len(wires) - REPR_ITEMS} more" if len(wires) > REPR_ITEMS
                                                  else "")
        return (f"System({len(self.units)} unit{'s' if len(self.units) != 1 else ''}: {units or 'none'}; "
                f"{len(self.connections)} connections: {shown or 'none'})")

    def unit_symbols(self) -> dict[str, str]:
        """The physical unit of each variable ``"unit.var"`` ("" when unknown).

        A variable's own unit, else the one carried over its connections: a
        python-control unit or a block declared without units takes the unit
        of what it is connected to (``ctrl.tau[1] -> arm.tau[1]`` in N.m),
        along chains of connections.

        Returns
        -------
        dict
            ``"unit.var"`` -> unit symbol, for every variable of every unit.
        """
        symbols = {f"{n}.{v}": var.unit or "" for n, u in self.units.items() for v, var in u.variables.items()}
        ends = [(c.src, c.dst) for c in self.connections if c.src in symbols and c.dst in symbols]
        changed = True
        while changed:  # each pass fills at least one more end, or stops
            changed = False
            for a, b in ends:
                if bool(symbols[a]) != bool(symbols[b]):
                    symbols[a] = symbols[b] = symbols[a] or symbols[b]
                    changed = True
        return symbols

    def set(self, name: str, value: Any) -> None:
        """Set a parameter or start value ``"unit.var"``."""
        unit, var = split_name(name)
        if unit not in self.units:
            raise unknown_name(f"unknown unit {unit!r} in {name!r}", unit, self.units)
        self.units[unit].set(var, value)

    # ------------------------------------------------------------------------------
    def validate(self, step: float | None = None) -> None:
        """Check the whole system; raise one :class:`CosimError` listing every problem.

        Parameters
        ----------
        step : float, optional
            The macro step [s]; when given, each unit's own step must divide it.
        """
        problems: list[str] = [f"unit name {n!r} is used more than once" for n in dict.fromkeys(self._duplicates)]
        if not self.units:
            problems.append("the system has no units")
        driven: dict[str, list[str]] = {}
        for c in self.connections:
            src = self.units.get(c.src_unit)
            dst = self.units.get(c.dst_unit)
            ok = True
            for end, u, var in (("source", src, c.src_var), ("target", dst, c.dst_var)):
                name = c.src_unit if end == "source" else c.dst_unit
                if u is None:
                    problems.append(f"{c}: unknown {end} unit {name!r} (known: {', '.join(self.units) or 'none'})")
                    ok = False
                elif var not in u.variables:
                    problems.append(f"{c}: unit {name!r} has no variable {var!r} (known: {', '.join(u.variables)})")
                    ok = False
            if not ok:
                continue
            sv, dv = src.variables[c.src_var], dst.variables[c.dst_var]
            if sv.causality != "output":
                problems.append(f"{c}: source {c.src} is {_a(sv.causality)}, not an output")
            if dv.causality != "input":
                problems.append(f"{c}: target {c.dst} is {_a(dv.causality)}, not an input")
            if sv.type != dv.type:
                problems.append(f"{c}: type mismatch, {c.src} is {sv.type} but {c.dst} is {dv.type}")
            if sv.unit and dv.unit and sv.unit != dv.unit:
                problems.append(f"{c}: unit mismatch, {c.src} is in {sv.unit!r} but {c.dst} in {dv.unit!r}")
            driven.setdefault(c.dst, []).append(c.src)
        for dst, srcs in driven.items():
            if len(srcs) > 1:
                problems.append(f"input {dst} is driven {len(srcs)} times (by {', '.join(srcs)})")
        for u in self.units.values():
            for n in u.inputs:
                full = f"{u.name}.{n}"
                if full not in driven and u.variables[n].start is None and n not in u.values:
                    problems.append(f"input {full} is not connected and has no start value")
            if step is not None and u.step is not None:
                ratio = step / u.step
                if u.step > step * (1 + 1e-12) or abs(ratio - round(ratio)) > 1e-9 * ratio:
                    problems.append(f"unit {u.name!r}: its step {u.step!r} s does not divide the macro step {step!r} s")
        if problems:
            raise CosimError(f"the system is invalid ({len(problems)} problem{'s' if len(problems) > 1 else ''}):\n  - "
                             + "\n  - ".join(problems))

    def algebraic_loops(self) -> list[list[str]]:
        """The algebraic loops, each as the list of ``unit.variable`` names on it.

        A loop is a cycle through connections and direct feedthroughs
        (output depends on input) at variable level.
        """
        graph: dict[str, list[str]] = {}
        for c in self.connections:
            graph.setdefault(c.src, []).append(c.dst)
        for u in self.units.values():
            for o, ins in u.feedthrough.items():
                for i in ins:
                    graph.setdefault(f"{u.name}.{i}", []).append(f"{u.name}.{o}")
        return [sorted(s) for s in _sccs(graph) if len(s) > 1]


def _size(unit: str, elements: list[str]) -> str:
    if len(elements) == 1:
        return f"{unit}.{elements[0]} is a scalar"
    return f"{unit}.{elements[0][:elements[0].index('[')]} has {len(elements)} elements"


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _sccs(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), in reverse topological order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    nodes = list(dict.fromkeys([*graph, *(w for ws in graph.values() for w in ws)]))
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def exchange_order(system: System) -> list[list[str]]:
    """Blocks of unit names in the order their inputs must be set.

    Unit ``B`` must come after unit ``A`` when a connection ``A.y -> B.u``
    starts at an output ``y`` with direct feedthrough in ``A`` (so ``A``'s
    inputs must be set before ``y`` is read). Blocks with more than one unit
    (or a unit feeding itself) are algebraic loops, solved by iteration.
    Within the order, units keep the order in which they were added.
    """
    names = list(system.units)
    graph: dict[str, list[str]] = {n: [] for n in names}
    for c in system.connections:
        if system.units[c.src_unit].feedthrough.get(c.src_var):
            graph[c.src_unit].append(c.dst_unit)
    comps = _sccs(graph)[::-1]  # topological order
    pos = {n: i for i, n in enumerate(names)}
    # stable: Kahn's algorithm over components, smallest position first
    comp_of = {n: i for i, comp in enumerate(comps) for n in comp}
    indeg = [0] * len(comps)
    succ: list[set[int]] = [set() for _ in comps]
    for a, bs in graph.items():
        for b in bs:
            ca, cb = comp_of[a], comp_of[b]
            if ca != cb and cb not in succ[ca]:
                succ[ca].add(cb)
                indeg[cb] += 1
    ready = sorted((min(pos[n] for n in comps[i]), i) for i in range(len(comps)) if indeg[i] == 0)
    order: list[list[str]] = []
    while ready:
        _, i = ready.pop(0)
        order.append(sorted(comps[i], key=pos.__getitem__))
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append((min(pos[n] for n in comps[j]), j))
                ready.sort()
    return order


def self_loops(system: System) -> set[str]:
    """Units whose feedthrough output feeds back into one of their own inputs."""
    return {c.src_unit for c in system.connections
            if c.src_unit == c.dst_unit and system.units[c.src_unit].feedthrough.get(c.src_var)}
