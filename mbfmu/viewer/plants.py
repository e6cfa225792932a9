"""Finding the plant behind a result file.

A result file is data: viewing one never imports code named inside it. The
plant is, in order: ``--model`` (a library name, ``module:Class``,
``file.py:Class`` or a URDF: named by the user, so it may be code); for a
co-simulation unit whose recorded plant is not a library plant, the plant
description embedded in the very FMU that ran (found through the metadata's
``"components": {unit: {"source": fmu path}}``, searched as given, next to
the result file and in the working folder), its model file or URDF loaded
from that FMU's resources only; a library plant named in the metadata
(``"plants"`` or ``"plant"``). Anything else the metadata names (a module, a
model file, a path) is refused with a message saying to pass ``--model``.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import stat
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import InputError, UnknownNameError
from ..plant import Plant
from .results import load_results
from .scene import Recording


def _spec_of(entry: Mapping[str, Any]) -> str | None:
    """Plant spec of a metadata entry: ``{"plant": spec}`` or a PlantRef dict."""
    if entry.get("plant"):
        return str(entry["plant"])[:1000]
    kind, target = entry.get("kind"), entry.get("target")
    if kind in ("library", "class") and target:
        return str(target)
    if kind == "file" and target:
        return f"{target}:{entry['class_name']}" if entry.get("class_name") else str(target)
    return None


def plant_from_metadata(metadata: Mapping[str, Any], unit: str | None = None) -> tuple[str | None, dict[str, Any]]:
    """Plant spec and parameters recorded in result metadata.

    Accepts ``{"plant": spec, "parameters": {...}}`` or, for a
    co-simulation, ``{"plants": {unit: entry}}`` where an entry is
    ``{"plant": spec, "parameters": {...}}`` or a PlantRef dict (``kind``,
    ``target``, ``class_name``, ``parameters``); the unit is chosen by
    ``unit``, or is the only one. Returns ``(None, {})`` when the metadata
    names no plant.
    """
    plants = metadata.get("plants")
    if isinstance(plants, Mapping) and plants:
        if unit is None and len(plants) > 1:
            raise InputError(f"the results hold several plants ({', '.join(sorted(plants))}); choose one with "
                             "--unit")
        key = unit if unit is not None else next(iter(plants))
        entry = plants.get(key)
        if isinstance(entry, Mapping) and _spec_of(entry):
            return _spec_of(entry), _mapping(entry.get("parameters"))
        if unit is not None and key not in plants:
            return None, {}
    if metadata.get("plant"):
        return str(metadata["plant"])[:1000], _mapping(metadata.get("parameters"))
    return None, {}


def _mapping(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"the recorded plant parameters must be a JSON object, got {type(value).__name__}")
    return dict(value)


def unit_parameter_values(metadata: Mapping[str, Any], unit: str | None, plant: Plant) -> dict[str, Any]:
    """Parameter values a co-simulation set on ``unit`` (metadata ``values``,
    ``"unit.name": value``), as keyword arguments for the plant: scalars by
    name, vector elements ``b[1]..b[n]`` gathered into one list ``b``."""
    values = metadata.get("values")
    if unit is None or not isinstance(values, Mapping):
        return {}
    out: dict[str, Any] = {}
    vectors: dict[str, dict[int, float]] = {}
    for sig in plant.parameters:
        key = f"{unit}.{sig.name}"
        if key not in values:
            continue
        try:
            value = float(values[key])
        except (TypeError, ValueError):
            raise InputError(f"the value recorded for {key!r} ({str(values[key])[:80]!r}) is not a number") from None
        base, br, idx = sig.name.partition("[")
        if br:
            vectors.setdefault(base, {})[int(idx.rstrip("]"))] = value
        else:
            out[sig.name] = value
    for base, items in vectors.items():
        n = sum(1 for s in plant.parameters if s.name.startswith(base + "["))
        if len(items) == n:
            out[base] = [items[i] for i in range(1, n + 1)]
    return out


def _unit_entry(metadata: Mapping[str, Any], unit: str | None) -> tuple[str | None, Mapping[str, Any] | None]:
    plants = metadata.get("plants")
    if not isinstance(plants, Mapping) or not plants:
        return None, None
    if unit is None:
        if len(plants) > 1:
            raise InputError(f"the results hold several plants ({', '.join(sorted(plants))}); choose one with "
                             "--unit")
        unit = next(iter(plants))
    entry = plants.get(unit)
    return unit, entry if isinstance(entry, Mapping) else None


def fmu_of_unit(metadata: Mapping[str, Any], unit: str, results_path: str | Path | None) -> Path | None:
    """The FMU file that ran as ``unit``, from the metadata's ``components``
    (its ``source`` as given, next to the result file, or in the working folder)."""
    comps = metadata.get("components")
    comp = comps.get(unit) if isinstance(comps, Mapping) else None
    source = comp.get("source") if isinstance(comp, Mapping) else None
    if not source or not isinstance(source, str):
        return None
    src = Path(source)
    candidates = [src]
    if results_path is not None and not src.is_absolute():
        here = Path(results_path).resolve().parent
        candidates += [here / src, here / src.name]
    return next((c for c in candidates if c.suffix == ".fmu" and c.is_file()), None)


def _planted_by_another(path: Path) -> str | None:
    """Why the FMU at ``path`` may have been put there by another user (``None``: it was not).

    A result file names the FMU that ran by its path; in a folder others can
    write to (``/tmp``) anyone could have left an FMU of that name. Such an
    FMU is used only when it belongs to this user (or root) and its folder
    is writable by no one else, or is sticky (``/tmp``: only its owner can
    replace it).
    """
    if not hasattr(os, "getuid"):
        return None
    st, folder = path.stat(), path.resolve().parent.stat()
    if st.st_uid not in (os.getuid(), 0):
        return f"it belongs to another user (uid {st.st_uid})"
    if folder.st_mode & (stat.S_IWOTH | stat.S_IWGRP) and not folder.st_mode & stat.S_ISVTX:
        return "its folder is writable by other users"
    return None


def library_name(spec: Any, where: str) -> str:
    """``spec`` if it names a plant of the library, else an :class:`InputError`.

    A result file is data: the plant it names is taken from the library by
    name only. A module, a model file or a URDF path named inside it is never
    loaded by itself; the user passes it with ``--model`` (``model=``).
    """
    from ..plant.library import list_plants
    name = str(spec)
    if name in list_plants():
        return name
    raise InputError(f"{where} names its plant as {name[:200]!r}, which is not a library plant; a result file "
                     "never names code to run: pass the model with --model (model=...) if you trust it")


def _numbers(values: Any, what: str) -> dict[str, Any]:
    """Recorded parameter values as numbers (a vector parameter as a list of them)."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise InputError(f"{what} must be a JSON object of numbers, got {type(values).__name__}")
    out: dict[str, Any] = {}
    for k, v in values.items():
        try:
            out[str(k)] = [float(x) for x in v] if isinstance(v, list) else float(v)
        except (TypeError, ValueError):
            raise InputError(f"{what}: {str(k)[:80]!r} = {str(v)[:80]!r} is not a number") from None
    return out


def plant_from_fmu(metadata: Mapping[str, Any], unit: str, results_path: str | Path | None,
                   params: Mapping[str, Any] | None = None) -> Plant:
    """The plant behind co-simulation unit ``unit``, rebuilt from the FMU that ran it.

    The plant description is the FMU's own (``resources/mbfmu_plant.json`` or
    its slave script, read as a literal); what the result file says about it
    is not used, only the parameter values it recorded (numbers). A model
    file, URDF robot or embedded class is loaded from the FMU's resources,
    extracted into a private folder; a description naming a file outside
    them is refused.
    """
    from ..cosim.fmi.fmu_open import open_fmu
    from ..fmu.plantref import PlantRef, build_plant

    fmu = fmu_of_unit(metadata, unit, results_path)
    if fmu is None:
        comps = metadata.get("components")
        comp = comps.get(unit) if isinstance(comps, Mapping) else None
        src = comp.get("source") if isinstance(comp, Mapping) else None
        raise InputError(f"the plant of unit {unit!r} lives inside the FMU {str(src or '(not recorded)')[:200]}, "
                         "which is not found; keep the FMU where it ran or next to the results, or pass --model")
    planted = _planted_by_another(fmu)
    if planted:
        raise InputError(f"the FMU {str(fmu)!r} named by the results for unit {unit!r} is not used: {planted}; "
                         "pass --model")
    fmu_unit = open_fmu(fmu, unit)
    try:
        ref = PlantRef.from_dict(fmu_unit.plant_ref or {})
    except (KeyError, TypeError, ValueError):
        raise InputError(f"FMU {str(fmu)!r} (unit {unit!r}) carries no readable mbfmu plant description; "
                         "pass --model") from None
    base = None
    if ref.kind == "library":
        library_name(ref.target, f"FMU {str(fmu)!r}")
    elif ref.kind == "class":  # only a Plant subclass is called, never any attribute the description names
        from ..fmu.plantref import plant_factory
        cls = plant_factory(ref)
        if not (isinstance(cls, type) and issubclass(cls, Plant)):
            raise InputError(f"FMU {str(fmu)!r} names {ref.target[:200]!r} as its plant, which is not a Plant class")
    elif ref.kind in ("file", "urdf", "pickle"):
        base = (Path(fmu_unit._unzipdir) / "resources").resolve()
        inside = (base / ref.target).resolve()
        if Path(ref.target).is_absolute() or base not in inside.parents:
            raise InputError(f"FMU {str(fmu)!r} names its plant file {ref.target!r} outside its resources; refused")
        if not inside.is_file():
            raise InputError(f"FMU {str(fmu)!r} names its plant file {ref.target!r}, which its resources do not hold")
    entry = (metadata.get("plants") or {}).get(unit) or {}
    recorded = _numbers(entry.get("parameters") if isinstance(entry, Mapping) else None,
                        f"the recorded parameters of unit {unit!r}")
    wanted = {**ref.parameters, **recorded, **(params or {})}
    plant = build_plant(ref.with_parameters(wanted), base)
    values = metadata.get("values") if isinstance(metadata.get("values"), Mapping) else {}
    names = {s.name for s in plant.parameters}
    run = _numbers({k[len(unit) + 1:]: v for k, v in values.items()
                    if isinstance(k, str) and k.startswith(f"{unit}.") and k[len(unit) + 1:] in names
                    and k[len(unit) + 1:] not in (params or {})}, f"the values set on unit {unit!r}")
    if run:  # the parameter values the co-simulation set on the unit
        plant = build_plant(ref.with_parameters({**wanted, **run}), base)
    return plant


def load_plant_spec(spec: str, **params: Any) -> Plant:
    """Build a plant from a library name (``mbfmu.load_plant``), a URDF file, or from
    ``package.module:Class`` / ``path/to/file.py:Class`` (any callable
    returning a :class:`~mbfmu.plant.Plant`), with ``params`` as keyword
    arguments."""
    if spec.lower().endswith(".urdf"):
        from ..plant.library import load_plant
        return load_plant(spec, **params)
    if ":" in spec:
        mod_name, _, attr = spec.rpartition(":")
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise InputError(f"model {spec!r}: file {mod_name!r} does not exist")
            mspec = importlib.util.spec_from_file_location(f"_mbfmu_model_{path.stem}", path)
            module = importlib.util.module_from_spec(mspec)
            mspec.loader.exec_module(module)
        else:
            try:
                module = importlib.import_module(mod_name)
            except ModuleNotFoundError as exc:
                raise UnknownNameError(f"model {spec!r}: cannot import module {mod_name!r} ({exc})") from None
        factory = getattr(module, attr, None)
        if factory is None:
            raise UnknownNameError(f"model {spec!r}: module {mod_name!r} has no {attr!r}")
        try:
            inspect.signature(factory).bind(**params)
        except (TypeError, ValueError) as exc:
            raise InputError(f"model {spec!r} does not take the parameters {sorted(params)} ({exc})") from None
        plant = factory(**params)
    else:
        try:
            from ..plant.library import load_plant
        except ModuleNotFoundError as exc:
            if exc.name != "mbfmu.plant.library":
                raise
            raise InputError(f"model {spec!r}: the plant library (mbfmu.plant.library) is not available here; "
                             "give the model as module:Class") from None
        plant = load_plant(spec, **params)
    if not isinstance(plant, Plant):
        raise InputError(f"model {spec!r} did not produce a Plant (got {type(plant).__name__})")
    return plant


def parse_trail(spec: str, plant: Plant) -> tuple:
    """A trail given on the command line, as :class:`~mbfmu.viewer.scene.Recording` takes it.

    ``BODY`` (body origin), ``BODY:x,y,z`` (point in the body frame, m),
    ``SHAPE`` (that shape frame's origin; for a beam its deformed tip) or
    ``BEAM@s`` (the beam's deformed centre line at ``s`` m).
    """
    head, _, point = spec.partition(":")
    name, at, station = head.partition("@")
    if name.isdigit() and not at:
        body = int(name)
    else:
        hits = [(i, s) for i, s in enumerate(plant.geometry) if s.name == name]
        if not hits:
            raise UnknownNameError(f"trail {spec!r}: no body index or shape named {name!r}; shapes: "
                                   f"{', '.join(s.name for s in plant.geometry if s.name) or 'none'}")
        i, shape = hits[0]
        if shape.kind == "beam" and not point:
            try:
                st = float(station) if at else float(shape.size[1])
            except ValueError:
                raise InputError(f"trail {spec!r}: station {station!r} is not a number of m") from None
            return "beam", i, st
        if at:
            raise InputError(f"trail {spec!r}: '@s' needs a beam; {name!r} is a {shape.kind}")
        body = shape.body
        if not point:
            return body, tuple(float(v) for v in shape.p)
    if not point:
        return body, (0.0, 0.0, 0.0)
    try:
        xyz = tuple(float(v) for v in point.split(","))
    except ValueError:
        xyz = ()
    if len(xyz) != 3:
        raise InputError(f"trail {spec!r}: point must be x,y,z in m, got {point!r}")
    return body, xyz


def open_recording(path: str | Path, model: str | None = None, params: Mapping[str, Any] | None = None,
                   unit: str | None = None, trails: Sequence[str] = (), **kw: Any) -> Recording:
    """Load a result file and the plant that made it.

    Parameters
    ----------
    path : str or Path
        ``.npz`` or ``.csv`` result file.
    model : str, optional
        Plant spec; default: the one named in the file's metadata.
    params : mapping, optional
        Parameters overriding those in the metadata.
    unit : str, optional
        Unit prefix of the plant's variables in a co-simulation result.
    trails : sequence of str
        Trail specs (see :func:`parse_trail`).
    **kw
        Passed to :class:`~mbfmu.viewer.scene.Recording`.
    """
    results, meta = read_results(path)
    where = f"results file {str(path)!r}"
    raw_units = meta.get("units")
    units = {str(k): str(v) for k, v in raw_units.items() if v} if isinstance(raw_units, Mapping) else {}
    spec, mparams = plant_from_metadata(meta, unit)
    if model is None:  # the plant comes from the library by name, or from the FMU that ran
        unit_name, entry = _unit_entry(meta, unit)
        if entry is not None and entry.get("kind") not in (None, "library"):
            plant = plant_from_fmu(meta, unit_name, path, params)
            rec = Recording(results, plant, unit=unit, **kw)
            if trails:
                rec = Recording(results, plant, unit=rec.unit, trails=[parse_trail(t, plant) for t in trails], **kw)
            rec.units = units
            return rec
        if not spec:
            raise InputError(f"{where} does not name its plant; pass the model (--model NAME, module:Class or "
                             "file.py:Class)")
        spec = library_name(spec, where)
        mparams = _numbers(mparams, f"{where}: the recorded parameters")
    elif model != spec:
        mparams = {}  # parameters recorded for another plant do not apply
    else:
        mparams = _numbers(mparams, f"{where}: the recorded parameters")
    spec = model or spec
    mparams.update(params or {})
    plant = load_plant_spec(spec, **mparams)
    rec = Recording(results, plant, unit=unit, **kw)
    # a co-simulation records the parameter values it set on each unit
    extra = {k: v for k, v in unit_parameter_values(meta, rec.unit, plant).items() if k not in (params or {})}
    if extra:
        plant = load_plant_spec(spec, **{**mparams, **extra})
        rec = Recording(results, plant, unit=rec.unit, **kw)
    if trails:
        rec = Recording(results, plant, unit=rec.unit, trails=[parse_trail(t, plant) for t in trails], **kw)
    rec.units = units
    return rec


def read_results(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """A result file's array and metadata, read by the co-simulation layer's
    :func:`~mbfmu.cosim.recording.result.load_result` (one reader for every tool);
    files it does not read (older layouts) by :func:`~mbfmu.viewer.results.load_results`."""
    from ..cosim.recording.result import load_result
    from ..errors import MbfmuError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"results file {str(p)!r} does not exist")
    try:
        res = load_result(p)
    except (MbfmuError, KeyError, ValueError, OSError, TypeError):
        return load_results(p)
    meta = dict(res.meta)
    return res.data, meta


def check_plant(plant: Plant, x: Any = None) -> None:
    """Check that ``plant`` gives the viewer what it needs; raise
    :class:`InputError` listing every problem found.

    Checks ``geometry`` (known kinds, sizes, ``Shape.R`` a rotation),
    ``poses(x)`` (shapes ``(nb, 3, 3)`` and ``(nb, 3)``, rotations, row 0 the
    world, every shape's body present) and, for beams, ``beam_deflection``
    (shape ``(len(s), 3)``, finite). Plant authors can call this in their tests.

    Parameters
    ----------
    plant : Plant
        The plant to check.
    x : array_like, optional
        The state at which poses are evaluated (SI units); defaults to
        ``plant.initial_state()``.
    """
    import numpy as np

    from .meshes import KINDS

    name = getattr(plant, "name", type(plant).__name__)
    problems: list[str] = []

    def rotation(R) -> bool:
        R = np.asarray(R, dtype=float)
        return R.shape == (3, 3) and np.allclose(R @ R.T, np.eye(3), atol=1e-8) and np.linalg.det(R) > 0

    sizes = {"box": 3, "cylinder": 2, "capsule": 2, "beam": 2, "sphere": 1, "mesh": 1}
    if not plant.geometry:
        problems.append("geometry is empty: nothing to draw")
    for i, s in enumerate(plant.geometry):
        what = f"shape {i} ({s.name!r})"
        if s.kind not in KINDS:
            problems.append(f"{what}: unknown kind {s.kind!r}")
            continue
        if len(s.size) != sizes[s.kind] or not all(float(v) > 0 for v in s.size):
            problems.append(f"{what}: a {s.kind} needs {sizes[s.kind]} positive sizes, got {s.size}")
        if not rotation(s.R):
            problems.append(f"{what}: R is not a rotation matrix")
        if np.asarray(s.p, dtype=float).shape != (3,):
            problems.append(f"{what}: p must have shape (3,)")
    x = plant.initial_state() if x is None else np.asarray(x, dtype=float)
    try:
        R, p = plant.poses(x)
        R, p = np.asarray(R, dtype=float), np.asarray(p, dtype=float)
    except Exception as exc:  # report, do not hide, whatever the plant raised
        problems.append(f"poses(x) raised {type(exc).__name__}: {exc}")
        R = p = None
    if R is not None:
        nb = R.shape[0] if R.ndim == 3 else -1
        if R.shape != (nb, 3, 3) or p.shape != (nb, 3):
            problems.append(f"poses(x) returned shapes {R.shape} and {p.shape}, expected (nb, 3, 3) and (nb, 3)")
        elif not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
            problems.append("poses(x) returned non-finite values")
        else:
            bad = [k for k in range(nb) if not rotation(R[k])]
            if bad:
                problems.append(f"poses(x): R of bodies {bad} are not rotation matrices")
            if nb and not (np.allclose(R[0], np.eye(3)) and np.allclose(p[0], 0)):
                problems.append("poses(x): row 0 must be the world (identity, origin)")
            far = sorted({s.body for s in plant.geometry if not 0 <= s.body < nb})
            if far:
                problems.append(f"geometry uses bodies {far}, but poses(x) returns {nb} bodies")
    for i, s in enumerate(plant.geometry):
        if s.kind == "beam" and hasattr(plant, "beam_deflection"):
            st = np.linspace(0.0, float(s.size[1]), 5)
            try:
                d = np.asarray(plant.beam_deflection(x, i, st), dtype=float)
            except Exception as exc:
                problems.append(f"beam_deflection(x, {i}, s) raised {type(exc).__name__}: {exc}")
                continue
            if d.shape != (5, 3) or not np.all(np.isfinite(d)):
                problems.append(f"beam_deflection(x, {i}, s) for 5 stations returned shape {d.shape} "
                                "(expected (5, 3), finite)")
    if problems:
        raise InputError(f"plant {name!r} does not meet the viewer's contract:\n  - " + "\n  - ".join(problems))
