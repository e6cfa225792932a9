"""A plant's numeric description for the native runtime, and its parameters.

:func:`describe` turns a plant built from the engine's elements into what the
C runtime holds (``csrc/native.h``): the integer structure of the model and
one vector ``d`` of doubles (model arrays, masses and centres of mass,
initial configuration and velocities, input matrix, internal step, sensor
parameters). :func:`check_supported` refuses, naming the piece, a plant
that computes anything in Python the runtime cannot express.

:func:`parameter_map` finds how each parameter moves ``d``. First choice:
the plant's expression tape (:mod:`.tape`), recorded from the plant's own
build with symbolic parameters and verified against builds with real
numbers; the runtime evaluates it in C. For a plant whose build the tape
cannot follow (numbers computed outside the recorded expressions), the
affine map of each parameter, probed by rebuilding the plant at probe
values one at a time and all together, when it takes more parameters. The
parameters neither takes are fixed in the native FMU, with the reason
recorded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ...dynamics import _kernels, motion_sensors as _motion, sensors as S
from ...dynamics.plugins import class_address
from ...dynamics.model import Model
from ...dynamics.symbolic import real_array
from ...errors import InputError
from ...plant.elements import ElementOutput
from ...plant.multibody import MultibodyPlant
from ...plant import Plant
from ...plant.parameters import declared_by
from .description import Description, NativeUnsupported, layout, model_blocks, model_structure  # noqa: F401
from .flexible import check_flexible, describe_flexible
from .tape import trace, verify

_REL_TOL = 1e-12


def check_supported(plant: Plant, outputs: bool = True) -> None:
    """Raise NativeUnsupported naming the first piece of ``plant`` that is Python code.

    Supported: a :class:`MultibodyPlant` integrated by the compiled kernels
    (no ``applied_forces``, ``normalize_state``, ``initial_state`` or
    ``split`` or ``advance`` of its own; its plug-in elements, such as a
    satellite's hinge latches, are C the runtime runs) whose outputs are
    engine sensors (with the sensors of the dynamics,
    :mod:`mbfmu.dynamics.motion_sensors`) or its plug-in elements' outputs; a frame
    element among its plug-in elements (the crash occupant's sled frame) sets the frame
    the whole plant runs in. (``derivatives`` is not used by an FMU.)
    With ``outputs`` False the outputs are not checked (a rigid plant's
    dynamics alone, as :func:`describe` with ``outputs=False`` packs it).
    """
    if getattr(plant, "native_elements", ()):
        _check_elements(plant)
    if getattr(plant, "flexible_system", None) is not None:
        return check_flexible(plant)
    cls = type(plant)
    name = f"plant {plant.name!r}"
    if not isinstance(plant, MultibodyPlant):
        raise NativeUnsupported(f"{name}: {cls.__name__} is not a MultibodyPlant; its dynamics "
                                f"({cls.__name__}.advance) is Python code the native runtime cannot run")
    for method in ("applied_forces", "normalize_state", "initial_state", "split", "advance"):
        if getattr(cls, method) is not getattr(MultibodyPlant, method):
            owner = next(k for k in cls.__mro__ if method in vars(k))
            raise NativeUnsupported(f"{name}: {owner.__name__}.{method} is Python code the native runtime "
                                    "cannot run (express it with the engine's elements)")
    if not outputs:
        return
    if cls.outputs_at is not MultibodyPlant.outputs_at or not plant.sensors:
        owner = next(k for k in cls.__mro__ if "outputs_at" in vars(k))
        raise NativeUnsupported(f"{name}: its outputs are computed in Python ({owner.__name__}.outputs_at); "
                                "declare them as engine sensors (mbfmu.dynamics.sensors) instead")
    if len(plant.sensors) != len(plant.outputs):
        raise NativeUnsupported(f"{name}: {len(plant.sensors)} output sensors for {len(plant.outputs)} outputs")
    # the engine's sensors and those of the dynamics (the elements' outputs are checked below)
    _motion.check([sen for sen in plant.sensors if not isinstance(sen, ElementOutput)], plant.model,
                  len(plant.states), len(plant.inputs))
    for k, sen in enumerate(plant.sensors):
        if isinstance(sen, ElementOutput) and not 0 <= sen.element < len(plant.native_elements):
            raise NativeUnsupported(f"{name}: output {k + 1} reads plug-in element {sen.element}, but the plant "
                                    f"registers {len(plant.native_elements)}")


def _check_elements(plant) -> None:
    """The plug-in elements (``dynamics/csrc/element.h``) act on the rigid right-hand side in (q, v) only."""
    name = f"plant {plant.name!r}"
    for what, present in (("a flexible system", getattr(plant, "flexible_system", None) is not None),
                          ("canonical variables", getattr(plant, "canonical", False))):
        if present:
            raise NativeUnsupported(f"{name}: plug-in elements run on a rigid plant in (q, v), not with {what}")
    for el in plant.native_elements:
        if not 1 <= el.body < plant.model.nbodies:
            raise NativeUnsupported(f"{name}: plug-in element {el.symbol} acts on body {el.body}, which is not "
                                    f"one of bodies 1..{plant.model.nbodies - 1}")
        if any(i >= plant.model.nq for i in el.joint_q) or any(i >= plant.model.nv for i in el.joint_v):
            raise NativeUnsupported(f"{name}: plug-in element {el.symbol} reads joint coordinates q{list(el.joint_q)}, "
                                    f"v{list(el.joint_v)}, beyond the model's {plant.model.nq} and {plant.model.nv}")
        _check_class_counts(el, name)
    n_own = plant.model.nq + plant.model.nv + sum(len(el.states) + len(el.discrete) for el in plant.native_elements)
    if len(plant.states) != n_own:
        raise NativeUnsupported(f"{name}: {len(plant.states)} states, not [q; v] and its plug-in elements' "
                                f"{n_own - plant.model.nq - plant.model.nv} (register them with register_elements)")
    # the kernels check the registry against the elements' classes (their C compiled for the Python
    # plant): sizes, bodies, periods, one frame element at most (csrc/element.h)
    nq, nv = plant.model.nq, plant.model.nv
    x0 = np.asarray(plant.initial_state(), float)
    try:
        _kernels.element_outputs(plant.model._h, x0[:nq], x0[nq:nq + nv], x0[nq + nv:], 0.0,
                                 plant._element_registry(), np.zeros((0, 2), np.intc))
    except InputError as exc:
        raise NativeUnsupported(f"{name}: {exc}") from None


def _check_class_counts(el, name: str) -> None:
    """The element as registered matches its class (its own C, compiled for the kernels): the
    counts the runtime would otherwise refuse at instantiation without saying why."""
    npar, nstate, ndisc, _, njoint, nevent = _kernels.element_class_counts(
        class_address(el.c_text(), el.symbol, f"plug-in element {el.symbol}"))
    for what, got, want in (("parameters", len(el.parameters), npar), ("states", len(el.states), nstate),
                            ("discrete states", len(el.discrete), ndisc), ("joint rows", len(el.joint_q), njoint),
                            ("event descriptions", len(el.events), nevent)):
        if got != want:
            raise NativeUnsupported(f"{name}: plug-in element {el.symbol} is registered with {got} {what}, "
                                    f"its class has {want}")


def _element_block(plant: MultibodyPlant) -> np.ndarray:
    """The plug-in elements' ``[point (3); parameters]``, element after element, in ``d``
    (expressions while recording: the parameters move them through the tape)."""
    rows = [v for el in getattr(plant, "native_elements", ()) for v in (*el.point, *el.parameters)]
    return real_array(rows) if rows else np.zeros(0)


def describe(plant: MultibodyPlant, outputs: bool = True) -> Description:
    """The numeric description of a supported plant (see :func:`check_supported`);
    with ``outputs`` False, of a rigid plant's dynamics alone (no sensors, ``ny`` 0)."""
    if getattr(plant, "flexible_system", None) is not None:
        return describe_flexible(plant)
    model: Model = plant.model
    nq, nv, nu = model.nq, model.nv, len(plant.inputs)
    blocks = model_blocks(model) + [
        ("o_q0", plant.initial_state()[:nq] if getattr(plant, "initial_configuration", None) is None
         else plant.initial_configuration), ("o_v0", plant.initial_velocity),
        ("o_B", plant.input_matrix), ("o_step", np.array([plant.internal_step])),
        # the options tuple advance passes to the compiled integrator (first step internal_step)
        ("o_adapt", np.array(plant.error_control.options(plant.internal_step), float)),
        ("o_elements", _element_block(plant)),
    ]
    offsets, parts, at = layout(blocks)
    sens = []
    for s in (plant.sensors if outputs else ()):
        if isinstance(s, S.PointPosition):
            sens.append((s.code, s.body, s.axis, at))
            parts.append(real_array(s.point))
            at += 3
        elif isinstance(s, S.Linear):
            sens.append((s.code, 0, 0, at))
            parts.append(np.r_[s.gain, np.asarray(s.weights, float)])
            at += 1 + nv + nu
        elif isinstance(s, _motion.KINDS):
            code, index, axis, par = _motion.sensor_row(s, nv, nu)
            sens.append((code, index, axis, at if par is not None else -1))
            if par is not None:
                parts.append(par)
                at += par.size
        else:
            sens.append((s.code, getattr(s, "index", 0), getattr(s, "axis", 0), -1))
    structure = dict(
        **model_structure(model), nq=nq, nv=nv, nu=nu, np=len(plant.parameters),
        ny=len(plant.outputs) if outputs else 0, nx=len(plant.states), canonical=int(plant.canonical), sens=tuple(sens))
    return Description(structure, np.concatenate(parts) if parts else np.zeros(0), offsets)


@dataclass
class ParameterMap:
    """How the parameters move the description.

    Attributes
    ----------
    coefficients : dict
        Re-packable parameter index -> (indices into ``d``, coefficients):
        ``d = d0 + sum_j c_j (p_j - p0_j)``.
    fixed : dict
        Parameter index -> why the native runtime cannot re-pack it.
    """

    coefficients: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    probe: dict = field(default_factory=dict)  # parameter index -> the probe offset that worked
    open: list = field(default_factory=list)  # per parameter: 1 its min is an open end (declared), 2 its max, 3 both
    tape: object = None  # the plant's expression tape (.tape.Traced), when its build could be recorded
    tape_failure: str | None = None  # else why not
    # the plant's step rule the runtime guards (csrc/steplimit.c): (step_cap, step_k), or None
    step_rule: tuple | None = None


def open_bounds(plant: Plant) -> list[int]:
    """Per parameter, which of its bounds is open (declared so, ``Signal.min_open``
    and ``max_open``, :mod:`mbfmu.plant.parameters`): 1 the minimum, 2 the
    maximum, 3 both. FMI's bounds are inclusive; the native FMU refuses these
    values itself, as the plant does."""
    return [int(bool(s.min_open)) | 2 * int(bool(s.max_open)) for s in plant.parameters]


def _probes(sig, p0: float) -> list[tuple[float, float]]:
    """Pairs (delta, 2 delta) of probe offsets inside the parameter's range:
    large ones first (a non-linearity shows clearly), then small ones (for a
    value at the edge of what the plant accepts); upwards first."""
    out = []
    for frac in (0.25, 0.01):
        step = frac * abs(p0) if p0 != 0 else frac
        for sign in (1.0, -1.0):
            a, b = p0 + sign * step, p0 + 2 * sign * step
            if (sig.min is None or min(a, b) >= sig.min) and (sig.max is None or max(a, b) <= sig.max):
                out.append((a - p0, b - p0))
    return out


def _close(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> bool:
    return bool(np.all(np.abs(a - b) <= _REL_TOL * scale + 1e-300))


def parameter_map(plant: MultibodyPlant, rebuild: Callable[[Mapping[str, float]], MultibodyPlant]
                  ) -> ParameterMap:
    """Classify the parameters of ``plant`` (see the module docstring).

    Parameters
    ----------
    plant : MultibodyPlant
        Built with its parameters' start values.
    rebuild : callable
        ``rebuild({name: value})`` builds the plant with those parameters
        changed (the others as in ``plant``); may raise for invalid values.
    """
    base = describe(plant)
    d0 = base.d
    rule = step_rule(plant)
    if rule is not None:  # the runtime computes the internal step by the rule: compared apart
        rebuild = _ruled_step(plant, rebuild, rule)
    out = ParameterMap()
    try:
        traced = trace(plant, rebuild, describe)
        why = None if traced.structure == base.structure else "its recorded build has another structure"
        traced = traced if why is None else None
    except Exception as exc:  # a build the recording cannot follow: the affine map below
        traced, why = None, f"{type(exc).__name__}: {exc}"
    if why is None:
        verify(traced, plant, rebuild, describe, d0)
        if not traced.fixed or _only_declared(plant, traced.fixed):
            out.tape, out.fixed, out.open, out.step_rule = traced, dict(traced.fixed), open_bounds(plant), rule
            return hold_to_declaration(plant, out)
        why = "it does not follow " + "; ".join(f"{plant.parameters[j].name} ({r})" for j, r in traced.fixed.items())
    # the recorded build misses some parameters: the affine map where it takes more of them
    affine = _affine_map(plant, rebuild, base)
    if traced is not None and len(traced.fixed) < len(affine.fixed):
        out.tape, out.fixed = traced, dict(traced.fixed)
    else:
        out = affine
        out.tape_failure = why
    out.open = open_bounds(plant)
    out.step_rule = rule
    return hold_to_declaration(plant, out)


def _only_declared(plant, fixed: Mapping[int, str]) -> bool:
    """True when every parameter in ``fixed`` is one the plant's declaration says needs a rebuild."""
    declared = declared_by(plant)
    listed = declared.rebuild_reasons() if declared is not None else {}
    return all(plant.parameters[j].name in listed for j in fixed)


def hold_to_declaration(plant, pmap: ParameterMap) -> ParameterMap:
    """``pmap`` with the parameters fixed that the plant's declaration says need a
    rebuild (with the declared reason); raises :class:`NativeUnsupported` naming a
    parameter the packer could not follow that the declaration does not list: it
    would be fixed in the native FMU silently (:mod:`mbfmu.plant.parameters`).
    A plant without a declaration of its own (:func:`~mbfmu.plant.parameters.declared_by`)
    keeps the packer's reasons."""
    declared = declared_by(plant)
    if declared is None:
        return pmap
    listed = declared.rebuild_reasons()
    for j, sig in enumerate(plant.parameters):
        if sig.name in listed:
            pmap.fixed[j] = listed[sig.name]
            pmap.coefficients.pop(j, None)
        elif j in pmap.fixed:
            raise NativeUnsupported(
                f"plant {plant.name!r}: the native FMU cannot follow parameter {sig.name!r} ({pmap.fixed[j]}); "
                "keep its expression in the plant's build (mbfmu.dynamics.symbolic), or declare it with "
                "Parameter(..., rebuild=<why a change needs a rebuild>)")
    return pmap


def step_rule(plant) -> tuple[float, float] | None:
    """``(step_cap, step_k)`` of a flexible plant whose internal step is
    ``min(step_cap, step_k / rho)`` (``plant.step_rule``; ``rho`` its
    ``spectral_radius``, of the structural Jacobian at rest), when the step is
    ``step_cap`` at the plant's start values and its integrator's first and
    largest steps are the internal step; else None. The runtime computes
    ``rho`` from its packed model as :func:`rest_radius` does and applies the
    rule when a parameter is set (``csrc/steplimit.c``)."""
    rule = getattr(plant, "step_rule", None)
    if rule is None or getattr(plant, "flexible_system", None) is None:
        return None
    cap, k = (float(v) for v in rule)
    rho = rest_radius(plant.flexible_system)
    if rho is None or abs(rho - plant.spectral_radius) > 1e-9 * plant.spectral_radius:
        return None  # the runtime's radius would not be the plant's
    options = plant.error_control.options(plant.internal_step)
    if options[2] != plant.internal_step or options[3] != plant.internal_step:
        return None
    return (cap, k) if plant.internal_step == cap and k / rho > cap * (1 + 1e-9) else None


def rest_radius(system) -> float | None:
    """The spectral radius (1/s) of ``J = [[0, I], [-M^-1 K, -M^-1 D]]`` at
    rest as the runtime computes it (``csrc/steplimit.c``): ``M^-1`` column
    by column from the flexible ABA, ``K`` and ``D`` the beams' modal blocks
    of the packed tables; None for a system whose rest linearization has
    other terms (no beams, force elements)."""
    if not getattr(system, "beams", ()) or system._has_passive or system.nq != system.nv:
        return None
    n, t = system.nv, system.flex_tables
    x0 = np.concatenate([system.neutral(), np.zeros(n)])
    a0 = system.rhs(0.0, x0, np.zeros(n))[n:]
    A = np.column_stack([system.rhs(0.0, x0, np.eye(n)[j])[n:] - a0 for j in range(n)])
    J = np.zeros((2 * n, 2 * n))
    J[:n, n:] = np.eye(n)
    for part in range(2):
        KD = np.zeros((n, n))
        for b in range(len(system.beams)):
            m, o, v = int(t["bnm"][b]), int(t["kdoff"][b]) + part * int(t["bnm"][b]) ** 2, int(t["bv"][b])
            KD[v:v + m, v:v + m] = t["kd"][o:o + m * m].reshape(m, m)
        J[n:, part * n:(part + 1) * n] = -A @ KD
    return float(np.abs(np.linalg.eigvals(J)).max())


def _ruled_step(plant, rebuild, rule):
    """``rebuild`` giving the plant as the runtime packs it (see :func:`step_rule`):
    its step entries (``o_step``, the integrator's first and largest step) those
    of the start values, which the runtime replaces by the rule; a value where the
    rule, with the radius as the runtime computes it, does not give the plant's
    step to 1e-12 is refused (the runtime's radius then is not the plant's)."""
    import dataclasses
    cap, k = rule

    def build(values):
        p = rebuild(values)
        rho = rest_radius(p.flexible_system)
        if rho is None or abs(min(cap, k / rho) - p.internal_step) > 1e-12 * p.internal_step or \
                p.error_control.options(p.internal_step)[2:4] != (p.internal_step, p.internal_step):
            raise NativeUnsupported(f"plant {plant.name!r}: at {values} its internal step does not follow the "
                                    "step rule the runtime applies")
        p.internal_step = plant.internal_step
        p.error_control = dataclasses.replace(p.error_control, max_step=plant.error_control.max_step)
        return p
    return build


def _affine_map(plant, rebuild, base: Description) -> ParameterMap:
    """The affine map of each parameter, probed (for a plant whose build the tape cannot follow)."""
    d0 = base.d
    out = ParameterMap()
    for j, sig in enumerate(plant.parameters):
        p0 = float(sig.start)
        reason = "no value near it builds a valid plant"
        for da, db in _probes(sig, p0):
            try:
                pa, pb = (rebuild({sig.name: p0 + dx}) for dx in (da, db))
                check_supported(pa)
                check_supported(pb)
                a, b = describe(pa), describe(pb)
            except Exception as exc:  # the plant refuses this probe: try the other direction
                reason = f"the plant refuses values near it ({type(exc).__name__}: {exc})"
                continue
            if a.structure != base.structure or b.structure != base.structure:
                reason = "it changes the model's structure"
                break
            scale = np.maximum(np.maximum(np.abs(d0), np.abs(a.d)), np.abs(b.d))
            if not _close(b.d - d0, (a.d - d0) * (db / da), scale):
                reason = "it enters the packed model non-linearly"
                break
            delta = a.d - d0
            idx = np.flatnonzero(delta)
            out.coefficients[j] = (idx, delta[idx] / da)
            out.probe[j] = da
            reason = None
            break
        if reason is not None:
            out.fixed[j] = reason
    _check_far(plant, rebuild, base, out)
    _check_jointly(plant, rebuild, d0, out)
    return out


_FAR = (0.1, 0.5, 2.0, 10.0)  # multiples of the start value probed for affinity far from it
_BLOCK_NAMES = {"o_step": "the integrator's internal step", "o_adapt": "the integrator's options"}


def _far_values(sig) -> list[float]:
    """Values of a parameter far from its start (multiples of it, or +-0.1..10
    around zero) and its finite bounds, inside the bounds."""
    p0 = float(sig.start)
    values = [p0 * f for f in _FAR] if p0 != 0 else [s * f for f in _FAR for s in (1.0, -1.0)]
    values += [b for b in (sig.min, sig.max) if b is not None]
    return [v for v in values if v != p0 and (sig.min is None or v >= sig.min)
            and (sig.max is None or v <= sig.max)]


def _check_far(plant, rebuild, base: Description, pmap: ParameterMap) -> None:
    """A re-packable parameter whose affine prediction of ``d`` fails at a value
    far from its start (a plant whose internal step follows its stiffest
    mode, say) becomes fixed, the reason naming the value and the block."""
    d0 = base.d
    for j in sorted(pmap.coefficients):
        sig = plant.parameters[j]
        idx, c = pmap.coefficients[j]
        for value in _far_values(sig):
            try:
                actual = describe(rebuild({sig.name: value}))
            except Exception:  # the plant refuses this value: nothing to compare
                continue
            predicted = d0.copy()
            predicted[idx] += c * (value - float(sig.start))
            if actual.structure == base.structure and _close(actual.d, predicted,
                                                             np.maximum(np.abs(actual.d), np.abs(d0))):
                continue
            what = "the model's structure"
            if actual.structure == base.structure:
                bad = int(np.flatnonzero(np.abs(actual.d - predicted) > _REL_TOL * np.maximum(
                    np.abs(actual.d), np.abs(d0)))[0])
                key = max((k for k, o in base.offsets.items() if o <= bad), key=lambda k: base.offsets[k],
                          default=None)
                what = _BLOCK_NAMES.get(key, "the packed model")
            pmap.fixed[j] = f"at {sig.name} = {value:.6g} it moves {what} non-linearly"
            del pmap.coefficients[j]
            break


def _check_jointly(plant, rebuild, d0: np.ndarray, pmap: ParameterMap) -> None:
    """Move every re-packable parameter at once; a parameter whose effect
    depends on another's value becomes fixed (greedily, in order)."""
    kept: dict = {}
    for j in sorted(pmap.coefficients):
        trial = {**kept, j: pmap.coefficients[j]}
        values, predicted = {}, d0.copy()
        for k, (idx, c) in trial.items():
            sig = plant.parameters[k]
            dx = pmap.probe[k] * (0.5 + 0.1 * (k % 5))
            values[sig.name] = float(sig.start) + dx
            predicted[idx] += c * dx
        try:
            actual = describe(rebuild(values)).d
        except Exception:
            actual = None
        if actual is not None and actual.shape == d0.shape and \
                _close(actual, predicted, np.maximum(np.abs(actual), np.abs(d0))):
            kept[j] = pmap.coefficients[j]
        else:
            pmap.fixed[j] = "it acts on the packed model together with other parameters non-linearly"
    pmap.coefficients = kept
