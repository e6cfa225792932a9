"""Nested SSP systems flattened: components named by their path, connections
through system connectors followed to the components at their ends.

A component ``C`` inside system ``B`` (inside the top-level system) becomes
the unit ``B/C`` (``/`` joins the path: a unit name cannot hold the ``.``
that SSP's hierarchical names use, ``B.C.x``). A connection that ends at a
system's connector continues along the connections leaving that connector,
inward or outward, until it reaches a component; every such path from a
component output to a component input is one flat connection, with the
connections (hops) it went through, so that their unit conversions and
transformations can be composed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

SEP = "/"
NS_SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
Key = tuple  # ("u", flat unit name, variable) or ("s", system path, connector name)


def _q(tag: str) -> str:
    return f"{{{NS_SSD}}}{tag}"


def flat_name(path: tuple[str, ...], name: str) -> str:
    """The unit name of element ``name`` of the system at ``path``."""
    return SEP.join((*path, name))


@dataclass(frozen=True)
class Connector:
    """A connector of a system: ``kind``, ``type`` (``Real``, ...) and ``unit``."""

    kind: str
    type: str
    unit: str | None


@dataclass(frozen=True)
class Hop:
    """One ``ssd:Connection`` of the system at ``path``, between two keys."""

    start: Key
    end: Key
    element: Any
    path: tuple[str, ...]

    def label(self) -> str:
        return f"{_text(self.start)} -> {_text(self.end)}"


def _text(key: Key) -> str:
    if key[0] == "u":
        return f"{key[1]}.{key[2]}"
    return ".".join((*key[1], key[2])) if key[1] else f"(system).{key[2]}"


def connectors(element: Any) -> dict[str, Connector]:
    """The ``ssd:Connectors`` of a system or component element."""
    out = {}
    for c in element.findall(f"{_q('Connectors')}/{_q('Connector')}"):
        typ, unit = "Real", None
        for e in c:
            if isinstance(e.tag, str) and e.tag.startswith("{http://ssp-standard.org/SSP1/SystemStructureCommon}"):
                typ, unit = e.tag.rsplit("}", 1)[-1], e.get("unit")
        out[c.get("name")] = Connector(c.get("kind"), typ, unit)
    return out


class Hierarchy:
    """The systems, components and connections of one SSD's top-level ``System``.

    Parameters
    ----------
    root : lxml element
        The top-level ``ssd:System``.

    Attributes
    ----------
    systems : dict[tuple, element]
        Every system by path (``()`` is the top level).
    components : list[(str, element, tuple)]
        ``(unit name, ssd:Component, path of its system)`` in document order.
    hops : list[Hop]
        Every connection.
    problems : list[str]
        Names that collide or cannot be flattened, connections naming unknown elements.
    """

    def __init__(self, root: Any) -> None:
        self.systems: dict[tuple[str, ...], Any] = {}
        self.components: list[tuple[str, Any, tuple[str, ...]]] = []
        self.hops: list[Hop] = []
        self.problems: list[str] = []
        self.system_connectors: dict[tuple[str, ...], dict[str, Connector]] = {}
        self._walk(root, ())
        self._out: dict[Key, list[Hop]] = {}
        self._in: dict[Key, list[Hop]] = {}
        for h in self.hops:
            self._out.setdefault(h.start, []).append(h)
            self._in.setdefault(h.end, []).append(h)
        # a system connector driven twice is an error, and followed it would multiply the paths
        self._driven_twice = {k for k, hs in self._in.items() if k[0] == "s" and len(hs) > 1}
        for k in self._driven_twice:
            self.problems.append(f"system connector {_text(k)} is driven by {len(self._in[k])} connections "
                                 f"({', '.join(h.label() for h in self._in[k])})")

    def _walk(self, system: Any, path: tuple[str, ...]) -> None:
        self.systems[path] = system
        self.system_connectors[path] = connectors(system)
        kinds: dict[str, str] = {}
        for e in system.findall(f"{_q('Elements')}/*"):
            tag, name = e.tag.rsplit("}", 1)[-1], e.get("name")
            if tag not in ("Component", "System"):
                continue  # SignalDictionaryReference: reported by the reader
            if SEP in name:
                self.problems.append(f"element {flat_name(path, name)!r}: names holding {SEP!r} cannot be flattened")
                continue
            if name in kinds:
                self.problems.append(f"element name {flat_name(path, name)!r} is used more than once")
                continue
            kinds[name] = tag
            if tag == "Component":
                self.components.append((flat_name(path, name), e, path))
            else:
                self._walk(e, (*path, name))
        for c in system.findall(f"{_q('Connections')}/{_q('Connection')}"):
            start = self._key(path, kinds, c.get("startElement"), c.get("startConnector"))
            end = self._key(path, kinds, c.get("endElement"), c.get("endConnector"))
            label = (f"connection {c.get('startElement') or '(system)'}.{c.get('startConnector')} -> "
                     f"{c.get('endElement') or '(system)'}.{c.get('endConnector')} in "
                     + (f"system {'.'.join(path)!r}" if path else "the top-level system"))
            bad = [why for key, elem, conn in ((start, c.get("startElement"), c.get("startConnector")),
                                               (end, c.get("endElement"), c.get("endConnector")))
                   if (why := self._missing(key, path, elem, conn))]
            if bad:
                self.problems.append(f"{label}: {'; '.join(bad)}")
                continue
            self.hops.append(Hop(start, end, c, path))

    def _missing(self, key: Key | None, path: tuple[str, ...], element: str | None, connector: str) -> str | None:
        """Why a connection end names nothing, or ``None`` (component variables are checked by System.validate)."""
        if key is None:
            return f"no element {element!r} there"
        if key[0] == "s" and connector not in self.system_connectors.get(key[1], {}):
            owner = f"system {'.'.join(key[1])!r}" if key[1] else "the top-level system"
            return f"{owner} has no connector {connector!r}"
        return None

    def _key(self, path: tuple[str, ...], kinds: dict[str, str], element: str | None, connector: str) -> Key | None:
        if element is None or element == "":
            return ("s", path, connector)
        kind = kinds.get(element)
        if kind == "Component":
            return ("u", flat_name(path, element), connector)
        if kind == "System":
            return ("s", (*path, element), connector)
        return None

    def flat_connections(self) -> Iterator[tuple[Key, Key, list[Hop]]]:
        """``(source key, target key, hops)`` for every path from a component to a component."""
        for h in self.hops:
            if h.start[0] == "u":
                yield from self._follow(h.start, [h], set())

    def _follow(self, src: Key, hops: list[Hop], seen: set[Key]) -> Iterator[tuple[Key, Key, list[Hop]]]:
        end = hops[-1].end
        if end[0] == "u":
            yield src, end, hops
            return
        if end in self._driven_twice:
            return
        if end in seen:
            self.problems.append(f"connections loop through system connector {_text(end)}")
            return
        for nxt in self._out.get(end, []):
            yield from self._follow(src, [*hops, nxt], seen | {end})

    def connector_targets(self, key: Key) -> list[Key]:
        """The component variables a system connector stands for: those its
        connections reach, inward and outward (for a parameter binding)."""
        found: list[Key] = []
        todo, seen = [key], {key}
        while todo:
            k = todo.pop()
            for nxt in [h.end for h in self._out.get(k, [])] + [h.start for h in self._in.get(k, [])]:
                if nxt in seen:
                    continue
                seen.add(nxt)
                # stay inside the connector's system: a binding of system B parametrizes B's content
                if nxt[0] == "u" and _inside(nxt[1].split(SEP)[:-1], key[1]):
                    found.append(nxt)
                elif nxt[0] == "s" and _inside(list(nxt[1]), key[1]):
                    todo.append(nxt)
        return found

    def resolve(self, path: tuple[str, ...], name: str) -> list[Key]:
        """The component variables that hierarchical name ``name`` (as seen
        from the system at ``path``) refers to; ``[]`` when it names nothing."""
        if name in self.system_connectors.get(path, {}):
            return self.connector_targets(("s", path, name))
        head, dot, rest = name.partition(".")
        if not dot:
            return []
        if (*path, head) in self.systems:
            return self.resolve((*path, head), rest)
        unit = flat_name(path, head)
        if any(u == unit for u, _, _ in self.components):
            return [("u", unit, rest)]
        return []


def _inside(path: list[str] | tuple[str, ...], system: tuple[str, ...]) -> bool:
    return tuple(path[:len(system)]) == tuple(system)
