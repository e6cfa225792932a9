"""Trim for inputs: the inputs that hold a plant at a requested state.

:func:`trim_inputs` answers the question the state trim (:func:`~mbfmu.control.linearization.trim`)
cannot: *which torques hold the arm at this pose?* The unknowns are the plant's
inputs (and, on request, some states); the equations are the state
derivatives, which must vanish. It is solved by python-control's
:func:`control.find_operating_point` on the plant wrapped as a
:class:`control.NonlinearIOSystem`, with MINPACK's Levenberg-Marquardt
(least squares, so more equations than unknowns are fine) given the exact
Jacobians of :func:`~mbfmu.control.linearization.state_jacobians` (the C tangents
for every plant the native runtime packs); the result reports the residual it reached.

For a multibody plant asked to move at a constant velocity ``v != 0`` the
configuration rows ``dq/dt = v`` cannot vanish; there only the other rows
(accelerations and any extra states) are equations: a steady motion.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError, unknown_name
from ..plant import Plant


@dataclass
class InputTrim:
    """What :func:`trim_inputs` found.

    Attributes
    ----------
    x : ndarray
        The plant state (SI units of each state): the requested one, with
        the free states solved for.
    u : ndarray
        The inputs that hold it (SI units of each input).
    residual : float
        ``max |f_k(x, u)|`` over the equations (state-derivative units).
    derivatives : ndarray
        ``dx/dt`` at ``(x, u)``.
    equations : list of str
        The states whose derivatives were required to vanish.
    unknowns : list of str
        The states and inputs solved for.
    inputs, states : list of str
        Names of ``u`` and ``x``.
    success : bool
        Whether the solver converged.
    message : str
        The solver's message.
    plant : Plant
        The plant that was trimmed.
    model_source : str
        The model the trim solved with: the plant's exact Jacobians and how
        they were obtained (an mbfmu FMU is trimmed on its plant, rebuilt).
    """

    x: np.ndarray
    u: np.ndarray
    residual: float
    derivatives: np.ndarray
    equations: list[str]
    unknowns: list[str]
    inputs: list[str]
    states: list[str]
    success: bool
    message: str = ""
    plant: Any = field(default=None, repr=False)
    model_source: str = ""

    def report(self) -> str:
        """A few lines: the inputs found and the residual."""
        lines = [f"trim for inputs of {getattr(self.plant, 'name', 'plant')!r}: residual {self.residual:.3g} "
                 f"({'converged' if self.success else 'NOT converged: ' + self.message})"]
        units = {s.name: s.unit for s in getattr(self.plant, "inputs", ())}
        for n, val in zip(self.inputs, self.u):
            lines.append(f"  {n:>16} = {val: .9g} {units.get(n, '')}".rstrip())
        if self.model_source:
            lines.append(f"  model: {self.model_source}")
        return "\n".join(lines)


def plant_of(target: Any, **parameters: Any) -> Plant:
    """The plant behind ``target``: a :class:`Plant`, a library name, model
    file or URDF path, or an FMU built by mbfmu (its plant, rebuilt)."""
    if isinstance(target, Plant):
        return target
    if isinstance(target, (str, Path)) and str(target).lower().endswith(".fmu"):
        from .fmu_model import plant_of_fmu
        return plant_of_fmu(Path(target))
    if isinstance(target, (str, Path)):
        from ..plant.library import load_plant
        return load_plant(str(target), **parameters)
    raise InputError(f"expected a plant, a plant name, a model file or an mbfmu FMU, got {type(target).__name__}")


def _equation_rows(plant: Plant, x: np.ndarray) -> list[int]:
    """Rows of ``dx/dt`` that must vanish: all of them, but the configuration
    rows of a multibody plant that moves (``dq/dt = v`` is given there)."""
    from ..plant.multibody import MultibodyPlant
    n = len(plant.states)
    if isinstance(plant, MultibodyPlant) and not plant.canonical:
        nq, nv = plant.model.nq, plant.model.nv
        if np.any(x[nq:nq + nv] != 0.0):
            return list(range(nq, n))
    return list(range(n))


def _requested_state(plant: Plant, q, v, state) -> np.ndarray:
    from ..plant.multibody import MultibodyPlant
    from .linearization import operating_state
    if state is not None:
        if q is not None:
            raise InputError("give either the state (state=...) or q and v, not both")
        return operating_state(plant, state)
    x = plant.initial_state()
    if isinstance(plant, MultibodyPlant) and not plant.canonical:
        nq, nv = plant.model.nq, plant.model.nv
        if q is not None:
            q = np.asarray(q, float).reshape(-1)
            if q.size != nq:
                raise InputError(f"plant {plant.name!r}: q has {q.size} values, the plant has {nq} coordinates")
            x[:nq] = q
        v_arr = np.broadcast_to(np.asarray(v, float), (nv,)) if np.ndim(v) == 0 else np.asarray(v, float).reshape(-1)
        if v_arr.size != nv:
            raise InputError(f"plant {plant.name!r}: v has {v_arr.size} values, the plant has {nv} velocities")
        x[nq:nq + nv] = v_arr
    elif q is not None:
        raise InputError(f"plant {plant.name!r} is not a multibody plant in (q, v): give state=... instead of q")
    return plant.normalize_state(plant.check_state(x))


def trim_inputs(plant: Any, q: Any = None, v: Any = 0.0, *, state: Any = None, free: Sequence[str] | None = None,
                u: Mapping[str, float] | Sequence[float] | None = None, t: float = 0.0,
                tol: float = 1e-12) -> InputTrim:
    """Inputs that hold ``plant`` at a requested state, by least squares.

    Parameters
    ----------
    plant : Plant, str or path
        A plant, a library plant name, a model file, a URDF file or an FMU
        built by mbfmu (its plant is rebuilt from the FMU).
    q : array_like, optional
        Requested configuration of a multibody plant (SI: rad, m; default
        its initial one).
    v : float or array_like
        Requested velocities (rad/s, m/s); 0 holds the plant at rest, any
        other value asks for a steady motion (accelerations vanish).
    state : optional
        The whole requested state instead of ``q`` and ``v`` (a vector or a
        mapping ``{state name: value}``, as :func:`~mbfmu.control.linearization.operating_state`).
    free : sequence of str, optional
        The unknowns, by name: states listed are solved for (their
        requested values are the starting guess), inputs listed are solved
        for and the inputs *not* listed are fixed at ``u``. Default: every
        input, no state.
    u : mapping or array_like, optional
        Input values: the fixed inputs, and the starting guess of the free
        ones (default the inputs' start values).
    t : float
        Time of the operating point, s.
    tol : float
        Solver tolerance (relative, MINPACK's ``xtol``/``ftol``).

    Returns
    -------
    InputTrim
        ``.u`` the inputs, ``.x`` the state, ``.residual`` the largest
        remaining derivative.

    Raises
    ------
    InputError
        Unknown names, more unknowns than equations (fix some inputs), or a
        free quaternion state.

    Examples
    --------
    >>> import numpy as np
    >>> from mbfmu.control import trim_inputs
    >>> hold = trim_inputs("rigid_arm", q=[0.0, 0.0, 0.0])
    >>> [round(float(t), 6) + 0.0 for t in hold.u], hold.residual < 1e-10   # arms level, N m
    ([0.0, 196.2, 49.05], True)
    """
    import control as ct

    from .linearization import state_jacobians

    plant = plant_of(plant)
    x0 = _requested_state(plant, q, v, state)
    state_names = [s.name for s in plant.states]
    input_names = [s.name for s in plant.inputs]
    u0 = plant.default_inputs()
    if isinstance(u, Mapping):
        for n, val in u.items():
            if n not in input_names:
                raise unknown_name(f"plant {plant.name!r} has no input {n!r}", n, input_names)
            u0[input_names.index(n)] = float(val)
    elif u is not None:
        u0 = plant.check_inputs(u)
    if free is None:
        free_x, free_u = [], list(range(len(input_names)))
    else:
        free = [free] if isinstance(free, str) else list(free)
        for n in free:
            if n not in state_names and n not in input_names:
                raise unknown_name(f"plant {plant.name!r} has no state or input {n!r}", n, state_names + input_names)
        free_x = [state_names.index(n) for n in free if n in state_names]
        free_u = [input_names.index(n) for n in free if n in input_names]
    from ..plant.multibody import MultibodyPlant
    if free_x and isinstance(plant, MultibodyPlant) and plant.model.has_quaternions:
        raise InputError(f"plant {plant.name!r} has quaternion joints: its states cannot be free in a trim for "
                         "inputs; fix the configuration and leave inputs free")
    rows = _equation_rows(plant, x0)
    n_unknown = len(free_x) + len(free_u)
    if n_unknown == 0:
        raise InputError("trim_inputs: nothing to solve for (free names no input and no state)")
    if n_unknown > len(rows):
        raise InputError(f"trim_inputs on {plant.name!r}: {n_unknown} unknowns for {len(rows)} equations; fix some "
                         "inputs (leave them out of free=) so that the trim is determined")

    def updfcn(tt, x, uu, params=None):
        return plant.derivatives(tt, plant.normalize_state(np.asarray(x, float)), np.asarray(uu, float))

    from ..cosim.signal_names import control_name, control_names
    sys = ct.nlsys(updfcn, None, states=control_names(state_names), inputs=control_names(input_names),
                   name=control_name(f"{plant.name}_trim"))
    fixed_x = [k for k in range(len(state_names)) if k not in free_x]
    fixed_u = [k for k in range(len(input_names)) if k not in free_u]

    def jacobian(z):
        x = x0.copy()
        uu = u0.copy()
        x[free_x] = z[:len(free_x)]
        uu[free_u] = z[len(free_x):]
        A, B, _, _, _ = state_jacobians(plant, plant.normalize_state(x), uu, t)
        return np.hstack([A[np.ix_(rows, free_x)], B[np.ix_(rows, free_u)]])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "constraints do not match freedoms": least squares is meant
        op = ct.find_operating_point(
            sys, x0, u0, t=t, state_indices=fixed_x, input_indices=fixed_u, deriv_indices=rows,
            root_method="lm", root_kwargs={"jac": jacobian, "tol": tol}, return_result=True)
    x = plant.normalize_state(np.asarray(op.states, float))
    uu = np.asarray(op.inputs, float)
    f = np.asarray(plant.derivatives(t, x, uu), float)
    res = float(np.abs(f[rows]).max()) if rows else 0.0
    from .fmu_model import SOURCE_PLANT
    method = state_jacobians(plant, x, uu, t)[3]
    return InputTrim(x=x, u=uu, residual=res, derivatives=f, equations=[state_names[k] for k in rows],
                     unknowns=[state_names[k] for k in free_x] + [input_names[k] for k in free_u],
                     inputs=input_names, states=state_names, success=bool(op.result.success),
                     message=str(op.result.message), plant=plant,
                     model_source=f"{SOURCE_PLANT} ({method} Jacobians)")
