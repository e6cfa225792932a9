"""The native description of a flexible plant (assumed-modes beams).

A plant that advances a :class:`~mbfmu.dynamics.flexible.FlexibleSystem`
with the compiled flexible integrator declares it as ``flexible_system``
(and ``None`` when its advance is something else, e.g. SciPy's implicit
methods). Its advance must be
:func:`~mbfmu.dynamics.integrators.advance_flexible` with the plant's
``error_control`` and ``internal_step`` (for a
:class:`~mbfmu.dynamics.flexible.RigidSystem`, a tree without beams such as
finite-segment links: :func:`~mbfmu.dynamics.integrators.advance_rigid`,
which the runtime runs when the description has no beams) and generalized forces
``input_matrix @ u`` (as ``FlexibleArm._compiled_adaptive``), its state the
public ``[q; v]`` and its outputs ``sensors`` of
:mod:`mbfmu.dynamics.flexible.sensors`.

The description holds the virtual tree as a rigid plant's model (the same
``d`` blocks and structure, :mod:`.pack`), the public initial state and
input matrix, and a flexible block: the kernel's integer tables (body roles,
index maps; structure) and its station tables ``g``, ``H`` and modal
stiffness and damping ``K``, ``D`` (numbers in ``d``, so that a parameter
moving them affinely is re-packed by :func:`.pack.parameter_map` like any
other). The runtime (``csrc/flex_runtime.c``) builds the ``mb_flex`` from
them and integrates it with ``mb_flex_ode``.
"""
from __future__ import annotations

import numpy as np

from ...dynamics.flexible import sensors as FS
from ...errors import ModelError
from .description import Description, NativeUnsupported, layout, model_blocks, model_structure

_INT_TABLES = ("role", "beam", "pq", "pv", "goff", "hoff", "bbody", "bq", "bv", "bnm", "kdoff")
_NUM_TABLES = (("gtab", "ng"), ("htab", "nh"), ("kd", "nkd"))


def check_flexible(plant) -> None:
    """Raise NativeUnsupported naming what of the flexible ``plant`` the runtime cannot run."""
    system = plant.flexible_system
    name = f"plant {plant.name!r}"
    if system.model.has_quaternions:
        raise NativeUnsupported(f"{name}: the native runtime packs flexible systems without "
                                "quaternion joints only")
    sensors = getattr(plant, "sensors", None)
    if not sensors or len(sensors) != len(plant.outputs):
        raise NativeUnsupported(f"{name}: its outputs are computed in Python ({type(plant).__name__}.outputs_at); "
                                "declare them as flexible-system sensors (mbfmu.dynamics.flexible.sensors)")
    if len(plant.states) != system.nq + system.nv:
        raise NativeUnsupported(f"{name}: its state is not the flexible system's [q; v]")
    try:
        FS.check(sensors, system)
    except ModelError as exc:
        raise NativeUnsupported(f"{name}: {exc}") from None


def describe_flexible(plant) -> Description:
    """The numeric description of a flexible plant (see the module docstring)."""
    system = plant.flexible_system
    model = system.model
    nq, nv, nu = system.nq, system.nv, len(plant.inputs)
    x0 = plant.initial_state()
    tables = system.flex_tables
    blocks = model_blocks(model) + [
        ("o_q0", x0[:nq]), ("o_v0", x0[nq:]),
        ("o_B", plant.input_matrix), ("o_step", np.array([plant.internal_step])),
        ("o_adapt", np.array(plant.error_control.options(plant.internal_step), float)),
    ]
    rows, par = FS.table(plant.sensors)
    blocks.append(("o_sensors", par))
    blocks += [(f"o_{key}", tables[key]) for key, _ in _NUM_TABLES]
    offsets, parts, _ = layout(blocks)
    at = offsets.pop("o_sensors")
    sens = tuple((int(r[0]), int(r[1]), int(r[2]), int(r[3]) + at if r[3] >= 0 else -1) for r in rows)
    flex = dict(nbeam=len(system.beams), **{k: tuple(int(v) for v in tables[k]) for k in _INT_TABLES},
                **{n: int(np.asarray(tables[k]).size) for k, n in _NUM_TABLES},
                **{f"o_{k}": offsets.pop(f"o_{k}") for k, _ in _NUM_TABLES})
    structure = dict(**model_structure(model), nq=nq, nv=nv, nu=nu, np=len(plant.parameters),
                     ny=len(plant.outputs), nx=nq + nv, canonical=0, sens=sens,
                     flex=tuple(sorted(flex.items())))
    return Description(structure, np.concatenate(parts), offsets)


def flex_source(structure: dict, c_array) -> tuple[str, str]:
    """The C text of the flexible block of ``model_data.c`` (``FLEX``, an
    ``mbn_flex_data``) and the initializer of ``MBN_DATA.flex``; empty and
    ``NULL`` for a rigid plant."""
    if "flex" not in structure:
        return "", "NULL"
    flex = dict(structure["flex"])
    arrays = "".join(c_array("int", f"FX_{k.upper()}", flex[k]) for k in _INT_TABLES)
    fields = {k: (f"FX_{k.upper()}" if k in _INT_TABLES else v) for k, v in flex.items()}
    body = "".join(f"    .{k} = {v},\n" for k, v in fields.items())
    return arrays + "static const mbn_flex_data FLEX = {\n" + body + "};\n", "&FLEX"
