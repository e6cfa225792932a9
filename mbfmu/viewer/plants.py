"""Finding the plant behind a result file.

In order: ``--model`` (a library name, ``module:Class`` or ``file.py:Class``);
the plant reference the co-simulation recorded for the unit (metadata
``"plants"``: a library plant or an importable class directly; a model file
or a URDF robot from the resources of the very FMU that ran, found through
the metadata's ``"components": {unit: {"source": fmu path}}``, searched as
given, next to the result file and in the working folder); a single plant's
``"plant"`` entry.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import InputError, UnknownNameError
from ..plant import Plant
from .results import load_results
from .scene import Recording


def _spec_of(entry: Mapping[str, Any]) -> str | None:
    """Plant spec of a metadata entry: ``{"plant": spec}`` or a PlantRef dict."""
    if entry.get("plant"):
        return str(entry["plant"])
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
            return _spec_of(entry), dict(entry.get("parameters") or {})
        if unit is not None and key not in plants:
            return None, {}
    if metadata.get("plant"):
        return str(metadata["plant"]), dict(metadata.get("parameters") or {})
    return None, {}


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
        base, br, idx = sig.name.partition("[")
        if br:
            vectors.setdefault(base, {})[int(idx.rstrip("]"))] = float(values[key])
        else:
            out[sig.name] = float(values[key])
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
    comp = (metadata.get("components") or {}).get(unit) or {}
    source = comp.get("source") if isinstance(comp, Mapping) else None
    if not source:
        return None
    src = Path(str(source))
    candidates = [src]
    if results_path is not None and not src.is_absolute():
        here = Path(results_path).resolve().parent
        candidates += [here / src, here / src.name]
    return next((c for c in candidates if c.is_file() and c.suffix == ".fmu"), None)


def fmu_resources(fmu: Path) -> Path:
    """The ``resources`` folder of ``fmu``, unpacked once into a cache folder keyed by its contents."""
    import hashlib
    import tempfile
    import zipfile
    digest = hashlib.sha256(fmu.read_bytes()).hexdigest()[:16]
    dest = Path(tempfile.gettempdir()) / f"mbfmu-view-{digest}"
    if not (dest / ".complete").is_file():
        try:
            with zipfile.ZipFile(fmu) as z:
                z.extractall(dest, [n for n in z.namelist() if n.startswith("resources/")])
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"cannot unpack FMU {str(fmu)!r} to find its plant: {exc}") from None
        (dest / ".complete").write_text(str(fmu))
    return dest / "resources"


def plant_from_reference(metadata: Mapping[str, Any], unit: str | None,
                         results_path: str | Path | None = None) -> tuple[Plant | None, str | None]:
    """The plant the results' recorded plant reference names, rebuilt with its parameters.

    Model files and URDF robots embedded in an FMU are rebuilt from that
    FMU's resources. Returns ``(None, None)`` when the metadata holds no
    reference for the unit; ``(None, reason)`` when it does but the plant
    cannot be found (``reason`` says what to do).
    """
    from ..fmu.plantref import PlantRef, build_plant

    unit, entry = _unit_entry(metadata, unit)
    if entry is None or "kind" not in entry:
        return None, None
    ref = PlantRef.from_dict(entry)
    base = None
    if ref.kind in ("file", "urdf") and not Path(ref.target).is_absolute():
        fmu = fmu_of_unit(metadata, unit, results_path)
        if fmu is None:
            src = ((metadata.get("components") or {}).get(unit) or {}).get("source")
            return None, (f"the plant of unit {unit!r} ({ref.target}) lives inside the FMU "
                          f"{src or '(not recorded)'}, which is not found; keep the FMU where it ran or next to "
                          "the results, or pass --model")
        base = fmu_resources(fmu)
    plant = build_plant(ref, base)
    values = metadata.get("values") if isinstance(metadata.get("values"), Mapping) else {}
    names = {s.name for s in plant.parameters}
    run = {k[len(unit) + 1:]: float(v) for k, v in values.items()
           if k.startswith(f"{unit}.") and k[len(unit) + 1:] in names}
    if run:  # the parameter values the co-simulation set on the unit
        plant = build_plant(ref.with_parameters({**ref.parameters, **run}), base)
    return plant, None


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
    units = {str(k): str(v) for k, v in (meta.get("units") or {}).items() if v}
    plant, why = (None, None) if model is not None or params else plant_from_reference(meta, unit, path)
    if plant is not None:
        rec = Recording(results, plant, unit=unit, **kw)
        if trails:
            rec = Recording(results, plant, unit=rec.unit, trails=[parse_trail(t, plant) for t in trails], **kw)
        rec.units = units
        return rec
    spec, mparams = plant_from_metadata(meta, unit)
    if model is not None and model != spec:
        mparams = {}  # parameters recorded for another plant do not apply
    spec = model or spec
    if not spec or (why and model is None):
        raise InputError(f"results file {str(path)!r}: {why}" if why else
                         f"results file {str(path)!r} does not name its plant; pass the model (--model NAME, "
                         "module:Class or file.py:Class)")
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
    :func:`~mbfmu.cosim.recording.load_result` (one reader for every tool);
    files it does not read (older layouts) by :func:`~mbfmu.viewer.results.load_results`."""
    from ..cosim.recording import load_result
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
