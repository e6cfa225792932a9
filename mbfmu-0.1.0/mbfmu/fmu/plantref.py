"""Naming a plant so that an FMU can rebuild it: :class:`PlantRef`.

An FMU embeds its plant *by reference*: the slave script in the FMU's
resources holds a :class:`PlantRef` (as a JSON-able dict) and rebuilds the
plant when the FMU is instantiated. Three kinds of reference:

``library``
    a name known to :func:`mbfmu.load_plant` (``"rigid_arm"``); the plant is
    ``mbfmu.load_plant(name, **parameters)``.
``class``
    an importable ``"package.module:ClassName"``; the plant is
    ``ClassName(**parameters)``. The module must be importable where the
    FMU runs.
``file``
    a model file ``path/to/model.py`` (optionally ``path.py:ClassName``); the
    file is copied into the FMU's resources and loaded from there, so the FMU
    does not need it installed.
``pickle``
    a class that has no importable module (defined in ``__main__``, a
    notebook or a function), carried by value in a resources file written by
    :func:`mbfmu.fmu.embed.pickle_class`; ``class_name`` is its qualified
    name, for messages.

User modules that ``class`` and ``file`` references import are embedded in
the FMU's resources by :mod:`mbfmu.fmu.embed`.

Parameters are passed as keyword arguments named after the plant's parameter
signals, in SI units; the elements ``b[1] .. b[n]`` of a vector parameter are
passed together as one list ``b=[...]``.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError, ModelError, UnknownNameError
from ..plant import Plant

_ELEMENT = re.compile(r"^(.*)\[([1-9][0-9]*)\]$")


@dataclass(frozen=True)
class PlantRef:
    """How to rebuild a plant.

    Parameters
    ----------
    kind : str
        ``"library"``, ``"class"``, ``"file"`` or ``"pickle"``.
    target : str
        Library name, ``"module:Class"``, or the file name (inside the FMU's
        resources once built; a path before).
    class_name : str
        Class to instantiate for ``"file"`` references ("" = the only
        :class:`~mbfmu.plant.Plant` subclass defined in the file).
    parameters : dict
        Parameter values by signal name, SI units.
    options : dict
        JSON-able keyword arguments of a ``"urdf"`` plant (empty otherwise).
    """

    kind: str
    target: str
    class_name: str = ""
    parameters: Mapping[str, float] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "target": self.target, "class_name": self.class_name,
             "parameters": {k: float(v) for k, v in self.parameters.items()}}
        if self.options:
            d["options"] = dict(self.options)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PlantRef":
        return cls(d["kind"], d["target"], d.get("class_name", ""), dict(d.get("parameters", {})),
                   dict(d.get("options") or {}))

    def with_parameters(self, parameters: Mapping[str, float]) -> "PlantRef":
        return PlantRef(self.kind, self.target, self.class_name, dict(parameters), dict(self.options))

    def digest(self) -> str:
        """Short hash identifying this reference (names the FMU's module)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:12]


def parse(spec: str) -> PlantRef:
    """Turn a command-line plant name into a :class:`PlantRef`.

    ``"rigid_arm"`` -> library; ``"pkg.mod:Class"`` -> class;
    ``"dir/model.py"`` or ``"dir/model.py:Class"`` -> file;
    ``"dir/robot.urdf"`` or a robot of example-robot-data by name
    (``"ur5"``, when no library plant has that name) -> urdf.
    """
    if spec.lower().endswith(".urdf"):
        if not Path(spec).is_file():
            raise InputError(f"URDF file {spec} does not exist")
        return PlantRef("urdf", str(Path(spec).resolve()))
    if spec.isidentifier():
        from ..plant import library, robots
        if spec not in library.list_plants() and robots.is_robot(spec):
            return PlantRef("urdf", str(robots.robot_urdf(spec)), options=robots.robot_options(spec))
    path_part, _, cls = spec.partition(":") if spec.count(":") == 1 else (spec, "", "")
    if path_part.endswith(".py"):
        path = Path(path_part)
        if not path.is_file():
            raise InputError(f"model file {path} does not exist")
        return PlantRef("file", str(path.resolve()), cls)
    if cls:
        return PlantRef("class", spec)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", spec):
        return PlantRef("library", spec)
    raise InputError(f"cannot read plant {spec!r}: give a library name, 'module:Class' or a model file path")


def _number(v):
    """``float(v)``; a symbolic parameter (the native packer's recording, dynamics.symbolic) as it is."""
    return v if getattr(v, "symbolic", False) else float(v)


def group_parameters(values: Mapping[str, float]) -> dict[str, Any]:
    """Keyword arguments for a plant constructor: vector elements ``b[i]``
    gathered into one list ``b`` (1-based, in order)."""
    kwargs: dict[str, Any] = {}
    vectors: dict[str, dict[int, float]] = {}
    for name, v in values.items():
        m = _ELEMENT.match(name)
        if m:
            vectors.setdefault(m.group(1), {})[int(m.group(2))] = _number(v)
        else:
            kwargs[name] = _number(v)
    for base, elems in vectors.items():
        n = max(elems)
        if sorted(elems) != list(range(1, n + 1)):
            raise InputError(f"vector parameter {base!r}: elements {sorted(elems)} are not 1..{n}")
        kwargs[base] = [elems[i] for i in range(1, n + 1)]
    return kwargs


def plant_classes(module: Any) -> list[type]:
    """The :class:`Plant` subclasses defined in ``module`` (not imported ones),
    each once however many names it has (``PLANT = MyPlant`` is an alias)."""
    found: list[type] = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if issubclass(obj, Plant) and obj is not Plant and obj.__module__ == module.__name__ and obj not in found:
            found.append(obj)
    return found


def load_file_module(path: Path) -> Any:
    """Import a model file under a name unique to its contents."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    name = f"mbfmu_model_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"cannot import model file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def plant_factory(ref: PlantRef, base_dir: Path | None = None):
    """The callable ``f(**kwargs) -> Plant`` that ``ref`` names.

    ``base_dir`` is where a ``"file"`` reference's relative file lives (the
    FMU's resources folder).
    """
    if ref.kind == "library":
        from ..plant import library
        return lambda **kw: library.load_plant(ref.target, **kw)
    if ref.kind == "class":
        module_name, _, cls_name = ref.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelError(f"cannot import plant module {module_name!r}: {exc}") from exc
        try:
            return getattr(module, cls_name)
        except AttributeError:
            raise UnknownNameError(f"module {module_name!r} has no plant class {cls_name!r}") from None
    if ref.kind == "file":
        path = Path(ref.target)
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        module = load_file_module(path)
        if ref.class_name:
            try:
                return getattr(module, ref.class_name)
            except AttributeError:
                raise UnknownNameError(f"model file {path} has no class {ref.class_name!r}") from None
        named = getattr(module, "PLANT", None)
        if isinstance(named, type) and issubclass(named, Plant):
            return named  # the documented way to name a file's plant
        classes = plant_classes(module)
        if len(classes) != 1:
            raise ModelError(f"model file {path} defines {len(classes)} Plant subclasses "
                             f"({', '.join(c.__name__ for c in classes) or 'none'}); name one as {path}:Class")
        return classes[0]
    if ref.kind == "urdf":
        from ..plant import library
        path = Path(ref.target)
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        return lambda **kw: library.robot_plant(path, {**ref.options, **kw})
    if ref.kind == "pickle":
        from .embed import load_pickled_class
        if base_dir is None:
            raise InputError(f"plant class {ref.class_name!r} is embedded by value: it loads from an FMU's "
                             "resources folder only")
        return load_pickled_class(base_dir / ref.target)
    raise InputError(f"unknown plant reference kind {ref.kind!r}")


def build_plant(ref: PlantRef, base_dir: Path | None = None) -> Plant:
    """Build the plant ``ref`` names with its parameters.

    Raises
    ------
    ModelError, InputError
        The reference cannot be resolved, or the plant refuses the
        parameters.
    """
    factory = plant_factory(ref, base_dir)
    from ..plant.library import construct
    # a robot takes the elements of its gravity vector one by one (library.robot_plant)
    values = dict(ref.parameters) if ref.kind == "urdf" else group_parameters(ref.parameters)
    plant = construct(factory, values, f"plant {ref.target!r}")
    if not isinstance(plant, Plant):
        raise ModelError(f"{ref.target!r} built a {type(plant).__name__}, not a mbfmu Plant")
    return plant
