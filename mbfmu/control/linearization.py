"""Linear models of plants at an operating point, as python-control systems.

``linearize(plant, x0, u0)`` returns a continuous-time
:class:`control.StateSpace` in *deviation variables* around the operating
point ``(x0, u0)``::

    d(dz)/dt = A dz + B du,     dy = C dz + D du,

with named states, inputs and outputs (the plant's signal names). How the
Jacobians are obtained, by plant kind:

* Any plant may provide ``state_jacobian(t, x, u) -> (A, B)`` itself, in
  the coordinates of the linear state (tangent increments for quaternion
  multibody plants); it takes precedence.
* A plant the native runtime packs (a :class:`~mbfmu.plant.multibody.MultibodyPlant`
  built from the engine's elements: joints, joint springs, dampers and
  limits, drives, point springs, sphere-plane contacts, cables, plug-in
  elements (hinge latches, a frame element such as the crash sled's and the
  HIC recorder in it, their own C tangents), assumed-modes beams; outputs
  from engine sensors or, for the dynamics alone, computed in Python):
  **exact** Jacobians from the forward-mode tangents of the recursive
  dynamics in C (:func:`exact_jacobian`, :mod:`mbfmu.dynamics.tangents`),
  the implementation the native FMU's directional derivatives run, checked
  against a central difference of the plant's own ``derivatives`` along
  one direction before use. Discrete states (latch flags, the HIC
  recorder's history and maximum) have zero columns and rates in A.
* A multibody plant in (q, v) the C tangents do not cover (Python-level
  forces, an overridden ``derivatives``, planar joints, accelerometers in
  canonical variables, finite-segment beams' relative tip points): the
  velocity (and extra) rows by a **central difference** of
  ``plant.derivatives`` with step ``h_k = eps^(1/3) max(1, |z_k|)``
  (about 6e-6; truncation ``O(h^2)`` and rounding ``O(eps/h)`` balanced, so
  about 1e-10 relative accuracy); the configuration rows stay exact. The
  reason is named in ``sys.linearization.notes``.
* Any other plant: central differences of ``derivatives`` in the plain
  state coordinates, same step rule.

The output map: exact from the same C tangents when the plant's outputs are
engine sensors; else a plant may provide ``output_jacobian(t, x, u) -> (C_x, D)``
(with respect to its stored state ``x``); otherwise ``C`` and ``D`` come from a
central difference of ``outputs_at`` with the same step rule.

**Quaternion states.** For a multibody plant with spherical or free joints,
the configuration part of the linear state is the tangent increment ``dq``
(nv values, states named ``dq[1]..dq[nv]``) with ``q = q0 (+) dq`` (see
:func:`mbfmu.dynamics.configuration_chart.integrate`: ``R = R0 Exp(dq_rot)`` in the
body frame, free-joint position ``p = p0 + R0 dq_lin``), followed by the
velocity deviations ``v[k]``. ``sys.linearization.to_state(dz)`` and
``from_state(x)`` convert between linear and nonlinear states. Without
quaternion joints ``dq = q - q0`` and the states keep the plant's names.

Every returned system carries ``sys.linearization`` (a
:class:`Linearization`) saying how it was made.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import control
import numpy as np

from ..errors import InputError, SimulationError
from ..plant import Plant

_EPS3 = np.finfo(float).eps ** (1.0 / 3.0)


def fd_step(z: np.ndarray) -> np.ndarray:
    """Central-difference steps ``eps^(1/3) max(1, |z_k|)`` per coordinate."""
    return _EPS3 * np.maximum(1.0, np.abs(np.asarray(z, float)))


#: What each Jacobian method of :class:`Linearization` means, for people.
METHOD_MEANINGS = {
    "analytic": ("exact, from the analytic derivatives of the recursive dynamics (their forward-mode "
                 "tangents in C, the native FMU's directional derivatives)"),
    "analytic kinematics + central difference": (
        "the configuration rows exact, the velocity rows by central differences of the dynamics "
        "(about 1e-10 relative)"),
    "central difference": "central differences, step eps^(1/3) max(1, abs(z)) (about 1e-10 relative)",
    "output_jacobian": "the plant's own output Jacobian",
    "state_jacobian": "the plant's own state Jacobian",
    "none": "no outputs",
}


@dataclass
class Linearization:
    """How a linear model was obtained (attached as ``sys.linearization``).

    Attributes
    ----------
    method : str
        ``"analytic"`` (exact derivatives of the dynamics: the C tangents),
        ``"state_jacobian"`` (the plant's own),
        ``"analytic kinematics + central difference"`` or ``"central difference"``.
    output_method : str
        ``"analytic"`` (the C tangents of the engine sensors), ``"output_jacobian"``
        (the plant's own), ``"central difference"`` or ``"none"`` (no outputs).
    step : str
        The finite-difference step rule, or ``""`` when none was used.
    t : float
        Time of the operating point, s.
    x0, u0, y0 : ndarray
        Operating point: plant state, inputs, outputs (plant units).
    xdot0 : ndarray
        Linear-state derivative at the operating point (zero at an equilibrium).
    tangent : bool
        True when the configuration states are tangent increments ``dq``.
    to_state : callable
        Linear state deviation ``dz`` -> plant state ``x``.
    from_state : callable
        Plant state ``x`` -> linear state deviation ``dz``.
    notes : str
        The chart of quaternion states, and why there are no exact tangents
        (``"no exact tangents: ..."``, naming the piece) when there are none.
    """

    method: str
    output_method: str
    step: str
    t: float
    x0: np.ndarray
    u0: np.ndarray
    y0: np.ndarray
    xdot0: np.ndarray
    tangent: bool
    to_state: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    from_state: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    notes: str = ""

    def is_equilibrium(self, tol: float = 1e-8) -> bool:
        """Whether the operating point is at rest: ``max |xdot0| <= tol (1 + max |x0|)``
        (SI units). A linear model about a moving point holds near it only."""
        if not self.xdot0.size:
            return True
        scale = 1.0 + (float(np.abs(self.x0).max()) if self.x0.size else 0.0)
        return float(np.abs(self.xdot0).max()) <= tol * scale


# ---------------------------------------------------------------------------- state charts
class _Chart:
    """Local coordinates z of the plant state around x0.

    For a multibody plant in (q, v) the configuration part is the tangent
    increment (nv values) when the model has quaternion joints; the states
    after ``q`` (velocities, then any extra states a plant appends) are
    plain offsets. Other plants: plain offsets of every state.
    """

    def __init__(self, plant: Plant, x0: np.ndarray):
        from ..plant.multibody import MultibodyPlant
        self.plant = plant
        self.x0 = x0
        self.nq = self.nv = 0
        self.multibody = False
        if isinstance(plant, MultibodyPlant):
            nq, nv = plant.model.nq, plant.model.nv
            if plant.canonical and plant.model.has_quaternions:
                raise InputError(f"plant {plant.name!r}: linearizing a canonical (q, p) plant with quaternion "
                                 "joints is not supported; build it with canonical=False")
            if not plant.canonical and len(x0) >= nq + nv:
                self.multibody = True
                self.nq, self.nv = nq, nv
        self.tangent = bool(self.multibody and plant.model.has_quaternions)
        self.n = len(x0) - self.nq + self.nv if self.tangent else len(x0)

    def to_state(self, dz: np.ndarray, x_ref: np.ndarray | None = None) -> np.ndarray:
        x_ref = self.x0 if x_ref is None else x_ref
        dz = np.asarray(dz, float)
        if not self.tangent:
            return x_ref + dz
        from ..dynamics.configuration_chart import integrate
        q = integrate(self.plant.model, x_ref[:self.nq], dz[:self.nv])
        return np.concatenate([q, x_ref[self.nq:] + dz[self.nv:]])

    def from_state(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        if not self.tangent:
            return x - self.x0
        from ..dynamics.configuration_chart import difference
        return np.concatenate([difference(self.plant.model, self.x0[:self.nq], x[:self.nq]),
                               x[self.nq:] - self.x0[self.nq:]])

    def state_jacobian(self) -> np.ndarray:
        """d x / d z at z = 0, (len(x), n) (computed once; a copy)."""
        if getattr(self, "_dxdz", None) is None:
            if not self.tangent:
                self._dxdz = np.eye(len(self.x0))
            else:
                from ..dynamics.configuration_chart import configuration_jacobian
                J = np.zeros((len(self.x0), self.n))
                J[:self.nq, :self.nv] = configuration_jacobian(self.plant.model, self.x0[:self.nq])
                J[self.nq:, self.nv:] = np.eye(len(self.x0) - self.nq)
                self._dxdz = J
        return self._dxdz.copy()

    def state_names(self) -> list[str]:
        if not self.tangent:
            return [s.name for s in self.plant.states]
        return [f"dq[{k + 1}]" for k in range(self.nv)] + [s.name for s in self.plant.states[self.nq:]]


# ---------------------------------------------------------------------------- Jacobians
def _central(f: Callable[[np.ndarray], np.ndarray], z0: np.ndarray) -> np.ndarray:
    h = fd_step(z0)
    cols = []
    for k in range(len(z0)):
        e = np.zeros(len(z0))
        e[k] = h[k]
        cols.append((f(z0 + e) - f(z0 - e)) / (2 * h[k]))
    return np.column_stack(cols) if cols else np.zeros((len(f(z0)), 0))


def linearize_io_system(sys, x0: np.ndarray, u0: np.ndarray, t: float) -> control.StateSpace:
    """Central-difference linearization of a python-control nonlinear system
    (``control.linearize`` differences forward, with a fixed step).

    Parameters
    ----------
    sys : control.NonlinearIOSystem
        The system.
    x0, u0 : array_like
        State and input of the operating point, in the system's units.
    t : float
        Time of the operating point, s.

    Returns
    -------
    control.StateSpace
        ``(A, B, C, D)`` at the point, with the system's sample time and state labels.
    """
    x0, u0 = np.asarray(x0, float), np.asarray(u0, float)
    A = _central(lambda x: np.asarray(sys._rhs(t, x, u0), float).reshape(-1), x0)
    B = _central(lambda u: np.asarray(sys._rhs(t, x0, u), float).reshape(-1), u0)
    C = _central(lambda x: np.asarray(sys._out(t, x, u0), float).reshape(-1), x0)
    D = _central(lambda u: np.asarray(sys._out(t, x0, u), float).reshape(-1), u0)
    return control.ss(A.reshape(sys.nstates, sys.nstates), B.reshape(sys.nstates, sys.ninputs),
                      C.reshape(sys.noutputs, sys.nstates), D.reshape(sys.noutputs, sys.ninputs), sys.dt,
                      states=list(sys.state_labels))


def _mixed_multibody(plant, chart: _Chart, t, x0, u0):
    """Exact configuration rows, central differences for the others
    (velocities and any extra states)."""
    from ..dynamics.configuration_chart import tangent_kinematics
    nq, nv = chart.nq, chart.nv
    Kq, Kv = tangent_kinematics(plant.model, x0[:nq], x0[nq:nq + nv])

    def rest(z):
        return plant.derivatives(t, chart.to_state(z), u0)[nq:]
    z0 = np.zeros(chart.n)
    Ar = _central(rest, z0)
    Br = _central(lambda u: plant.derivatives(t, x0, u)[nq:], u0)
    top = np.zeros((nv, chart.n))
    top[:, :nv], top[:, nv:2 * nv] = Kq, Kv
    A = np.vstack([top, Ar])
    B = np.vstack([np.zeros((nv, u0.size)), Br])
    return A, B, np.concatenate([x0[nq:nq + nv], rest(z0)])


@dataclass
class _Exact:
    """The plant's exact ``[A B; C D]`` in its own state (``J``; ``[A B]`` alone
    when ``outputs`` is False: outputs computed in Python), or why there is none."""
    J: np.ndarray | None
    why: str
    outputs: bool = True


def exact_jacobian(plant: Plant, x0: np.ndarray, u0: np.ndarray, t: float = 0.0, chart: _Chart | None = None
                   ) -> _Exact:
    """The exact Jacobian ``d[dx/dt; y] / d[x; u]`` of ``plant`` at ``(t, x0, u0)``
    by the native runtime's C tangents (:func:`mbfmu.dynamics.tangents.packed_jacobian`,
    the implementation the native FMU's directional derivatives run), on the plant's
    packed description (``mbfmu.fmu.native.pack.describe``).

    Checked before it is used: along one direction of the continuous states and
    inputs, ``J`` must agree with a central difference of the plant's own
    ``derivatives`` and ``outputs_at`` (to 1e-4 of the change: the difference's own
    error is about 1e-10 of it, a packed model that is not the plant's is off by far
    more).

    Parameters
    ----------
    plant : Plant
        The plant.
    x0 : ndarray
        Its state (the plant's own coordinates and units).
    u0 : ndarray
        Its inputs (SI units).
    t : float
        Time, s.
    chart : optional
        The linear model's state chart at ``x0`` (made here when not given).

    Returns
    -------
    _Exact
        ``J`` ((nx + ny, nx + nu), SI units) and ``why == ""``, or ``J is None`` and
        ``why`` naming the piece without a tangent (or the failed check).
    """
    from ..dynamics.tangents import packed_jacobian
    from ..fmu.native.description import NativeUnsupported
    from ..fmu.native.model_exchange import continuous_states
    from ..fmu.native.pack import check_supported, describe
    from ..plant.elements import tangent_registry
    from ..plant.multibody import MultibodyPlant
    flexible = getattr(plant, "flexible_system", None) is not None
    if not flexible and isinstance(plant, MultibodyPlant) and \
            type(plant).derivatives is not MultibodyPlant.derivatives:
        return _Exact(None, f"{type(plant).__name__}.derivatives is Python code with no C tangent")
    outputs = True
    try:
        check_supported(plant)
    except NativeUnsupported as exc:
        try:  # the dynamics alone (outputs computed in Python)
            check_supported(plant, outputs=False)
            outputs = False
        except NativeUnsupported:
            return _Exact(None, str(exc))
    desc = describe(plant, outputs=outputs)
    elements = getattr(plant, "native_elements", ())
    registry = tangent_registry(elements, desc.offsets["o_elements"]) if elements else None
    J, why = packed_jacobian(desc.structure, desc.d, desc.offsets, x0, u0, t, registry)
    if J is None:
        return _Exact(None, why)
    why = _check_exact(plant, J, outputs, continuous_states(plant), x0, u0, t, chart or _Chart(plant, x0))
    if why:
        return _Exact(None, why)
    return _Exact(J, "", outputs)


def _check_exact(plant, J: np.ndarray, outputs: bool, nxc: int, x0, u0, t, chart: "_Chart") -> str:
    """"" when ``J`` agrees with a central difference of the plant's own ``derivatives``
    (and ``outputs_at``) along one random direction of the continuous states (in the
    chart: tangent to the unit quaternions) and the inputs, each coordinate k stepped
    by ``fd_step``'s h_k; else what differs. The difference errs by about 1e-10 of
    the change and eps of the values; a packed model that is not the plant's by far
    more than the 1e-4 of the change allowed."""
    nx, nu = x0.size, u0.size
    nzc = chart.n - (nx - nxc)
    rng = np.random.default_rng(0)
    dz = np.zeros(chart.n)
    dz[:nzc] = rng.standard_normal(nzc) * fd_step(_chart_scale(chart, x0, nzc))
    du = rng.standard_normal(nu) * fd_step(u0)

    def f(sign):
        xs, us = chart.to_state(sign * dz), u0 + sign * du
        xdot = plant.derivatives(t, xs, us)
        return np.r_[xdot, plant.outputs_at(t, xs, us)] if outputs else xdot
    f0 = f(0.0)
    fd = (f(1.0) - f(-1.0)) / 2.0
    got = J @ np.r_[chart.state_jacobian() @ dz, du]
    err = float(np.abs(got - fd).max())
    change = float(np.abs(fd).max())
    if err > 1e-4 * change + 100 * np.finfo(float).eps * float(np.abs(f0).max(initial=0.0)):
        return (f"the exact tangents differ from the plant's own derivatives by {err:.3g} "
                f"along a change of {change:.3g} (a packed model that is not the plant's)")
    return ""


def _chart_scale(chart: _Chart, x0: np.ndarray, nzc: int) -> np.ndarray:
    """The magnitudes of the plant coordinates behind the first nzc chart coordinates
    (the chart's own deviations are zero at x0): the scales of their steps."""
    if not chart.tangent:
        return np.abs(x0[:nzc])
    return np.r_[np.zeros(chart.nv), np.abs(x0[chart.nq:chart.nq + nzc - chart.nv])]


def _exact_state(plant, chart: _Chart, J: np.ndarray, t, x0, u0):
    """A, B and zdot of the chart from the exact J (the configuration rows of a
    tangent chart from its kinematics)."""
    nx = x0.size
    Jx, Ju = J[:nx, :nx], J[:nx, nx:]
    if not chart.tangent:
        return Jx, Ju, plant.derivatives(t, x0, u0)
    from ..dynamics.configuration_chart import tangent_kinematics
    nq, nv = chart.nq, chart.nv
    T = chart.state_jacobian()
    Kq, Kv = tangent_kinematics(plant.model, x0[:nq], x0[nq:nq + nv])
    top = np.zeros((nv, chart.n))
    top[:, :nv], top[:, nv:2 * nv] = Kq, Kv
    A = np.vstack([top, Jx[nq:] @ T])
    B = np.vstack([np.zeros((nv, u0.size)), Ju[nq:]])
    zdot = plant.derivatives(t, x0, u0)
    return A, B, np.concatenate([x0[nq:nq + nv], zdot[nq:]])


def state_jacobians(plant: Plant, x0: np.ndarray, u0: np.ndarray, t: float = 0.0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str, _Chart]:
    """``(A, B, zdot0, method, chart)`` of the plant dynamics at ``(x0, u0)``."""
    A, B, zdot, method, chart, _ = _state_jacobians(plant, x0, u0, t)
    return A, B, zdot, method, chart


def _state_jacobians(plant: Plant, x0: np.ndarray, u0: np.ndarray, t: float = 0.0, exact: _Exact | None = None):
    """:func:`state_jacobians` and the exact Jacobian it tried (``_Exact``)."""
    chart = _Chart(plant, x0)
    if hasattr(plant, "state_jacobian"):
        A, B = plant.state_jacobian(t, x0, u0)
        A, B = np.asarray(A, float), np.asarray(B, float)
        if A.shape != (chart.n, chart.n) or B.shape != (chart.n, u0.size):
            raise InputError(f"plant {plant.name!r}: state_jacobian returned A {A.shape}, B {B.shape}; "
                             f"expected ({chart.n}, {chart.n}) and ({chart.n}, {u0.size})")
        zdot = plant.derivatives(t, x0, u0)
        if chart.tangent:
            zdot = np.concatenate([x0[chart.nq:chart.nq + chart.nv], zdot[chart.nq:]])
        return A, B, zdot, "state_jacobian", chart, _Exact(None, "the plant's own state_jacobian")
    if exact is None:
        exact = exact_jacobian(plant, x0, u0, t, chart)
    if exact.J is not None:
        A, B, zdot = _exact_state(plant, chart, exact.J, t, x0, u0)
        return A, B, zdot, "analytic", chart, exact
    if chart.multibody:
        A, B, zdot = _mixed_multibody(plant, chart, t, x0, u0)
        return A, B, zdot, "analytic kinematics + central difference", chart, exact
    A = _central(lambda z: plant.derivatives(t, chart.to_state(z), u0), np.zeros(chart.n))
    B = _central(lambda u: plant.derivatives(t, x0, u), u0)
    return A, B, plant.derivatives(t, x0, u0), "central difference", chart, exact


def _output_jacobians(plant: Plant, chart: _Chart, t, x0, u0, exact: _Exact
                       ) -> tuple[np.ndarray, np.ndarray, str]:
    ny = len(plant.outputs)
    if ny == 0:
        return np.zeros((0, chart.n)), np.zeros((0, u0.size)), "none"
    if exact.J is not None and exact.outputs:
        nx = x0.size
        return exact.J[nx:, :nx] @ chart.state_jacobian(), exact.J[nx:, nx:], "analytic"
    if hasattr(plant, "output_jacobian"):
        Cx, D = plant.output_jacobian(t, x0, u0)
        return np.asarray(Cx, float) @ chart.state_jacobian(), np.asarray(D, float), "output_jacobian"
    C = _central(lambda z: plant.outputs_at(t, chart.to_state(z), u0), np.zeros(chart.n))
    D = _central(lambda u: plant.outputs_at(t, x0, u), u0) if u0.size else np.zeros((ny, 0))
    return C, D, "central difference"


# ---------------------------------------------------------------------------- operating points
def operating_state(plant: Plant, x0: Any = None, at: float | None = None) -> np.ndarray:
    """The plant state of an operating point, from any of the accepted forms.

    Parameters
    ----------
    plant : Plant
        The plant whose state is wanted.
    x0 : None, array_like, mapping or structured ndarray, optional
        The operating point:

        * ``None``: ``plant.initial_state()``;
        * an array of ``len(plant.states)`` values (SI units of each state);
        * a mapping ``{state name: value}`` (missing states keep their start values);
        * a recorded result (structured array with a ``time`` field and one
          field per state name, possibly prefixed ``<unit>.`` as the
          co-simulation recorder writes): the row at time ``at``.
    at : float, optional
        Time of the row taken from a recorded result, s (nearest sample;
        default the last).

    Returns
    -------
    ndarray
        The checked and normalized state (unit quaternions).
    """
    if x0 is None:
        return plant.initial_state()
    names = [s.name for s in plant.states]
    if isinstance(x0, np.ndarray) and x0.dtype.names:
        fields = x0.dtype.names
        prefix = ""
        if names and names[0] not in fields:  # a co-simulation result: "<unit>.q[1]"
            prefixes = {f[:-len(names[0])] for f in fields if f.endswith("." + names[0])}
            if len(prefixes) == 1:
                prefix = prefixes.pop()
        missing = [n for n in names if prefix + n not in fields]
        if missing:
            raise InputError(f"recorded result lacks the states {missing[:5]} of plant {plant.name!r}")
        if "time" not in fields:
            raise InputError("recorded result has no 'time' field")
        k = len(x0) - 1 if at is None else int(np.argmin(np.abs(x0["time"] - float(at))))
        x = np.array([x0[prefix + n][k] for n in names], float)
    elif isinstance(x0, Mapping):
        unknown = [n for n in x0 if n not in names]
        if unknown:
            raise InputError(f"unknown state names {unknown} for plant {plant.name!r}; known: {names}")
        x = plant.initial_state()
        for n, val in x0.items():
            x[names.index(n)] = float(val)
    else:
        x = x0
    x = plant.check_state(x)
    return plant.normalize_state(x)


def trim(plant: Plant, u0=None, x_guess=None, t: float = 0.0, tol: float = 1e-10,
         max_iter: int = 50) -> np.ndarray:
    """Equilibrium state ``x`` with ``dx/dt = 0`` for constant inputs ``u0``.

    Newton's method on the exact Jacobian of :func:`state_jacobians` (in the
    tangent chart for quaternion states), least-squares steps when the
    Jacobian is singular (free-floating bodies), halving the step while the
    residual grows.

    Parameters
    ----------
    plant : Plant
        The plant to trim.
    u0 : array_like, optional
        Inputs in their SI units (default: their start values).
    x_guess : optional
        Starting state (anything :func:`operating_state` accepts).
    t : float
        Time at which the derivatives are evaluated, s.
    tol : float
        Converged when ``max |dz/dt| <= tol (1 + max |z|)`` in SI units.
    max_iter : int
        Largest number of Newton iterations.

    Raises
    ------
    SimulationError
        When Newton's method does not converge in ``max_iter`` iterations.
    """
    u = plant.default_inputs() if u0 is None else plant.check_inputs(u0)
    x = operating_state(plant, x_guess)
    res = None
    for _ in range(max_iter):
        A, _, f, _, chart = state_jacobians(plant, x, u, t)
        res = float(np.abs(f).max()) if f.size else 0.0
        if res <= tol * (1.0 + float(np.abs(x).max())):
            return x
        dz = -np.linalg.lstsq(A, f, rcond=None)[0]
        lam = 1.0
        for _ in range(30):
            x_new = plant.normalize_state(chart.to_state(lam * dz))
            f_new = state_jacobians(plant, x_new, u, t)[2]
            if np.all(np.isfinite(f_new)) and np.abs(f_new).max() < res:
                break
            lam *= 0.5
        x = x_new
    raise SimulationError(f"trim of plant {plant.name!r}: no equilibrium found in {max_iter} Newton "
                          f"iterations (residual {res:.3g}); try another x_guess")


# ---------------------------------------------------------------------------- the entry point
def linearize(plant: Plant, x0: Any = None, u0=None, *, t: float = 0.0, at: float | None = None,
              trim_state: bool = False) -> control.StateSpace:
    """Continuous-time linear model of ``plant`` at an operating point.

    Parameters
    ----------
    plant : Plant
    x0 : optional
        Operating state: ``None`` (the initial state), a state vector, a
        mapping ``{state name: value}`` or a recorded result (structured
        array, see :func:`operating_state`), or the starting guess when
        ``trim_state`` is set.
    u0 : array_like, optional
        Operating inputs (default: their start values).
    t : float
        Time of the operating point, s (for time-varying plants).
    at : float, optional
        Time (s) of the row to take from a recorded result.
    trim_state : bool
        Find the equilibrium for ``u0`` by :func:`trim`, starting from ``x0``.

    Returns
    -------
    control.StateSpace
        ``(A, B, C, D)`` in deviation variables, states/inputs/outputs named
        after the plant's signals (tangent increments ``dq[k]`` for plants
        with quaternion joints), with ``.linearization`` describing the
        method and the operating point, and ``.signal_units`` the unit of
        each signal by label (carried to the controllers designed on it).
    """
    if not isinstance(plant, Plant):
        raise InputError(f"linearize needs a Plant, got {type(plant).__name__}")
    u = plant.default_inputs() if u0 is None else plant.check_inputs(u0)
    x = trim(plant, u, x0, t) if trim_state else operating_state(plant, x0, at)
    A, B, zdot, method, chart, exact = _state_jacobians(plant, x, u, t)
    C, D, out_method = _output_jacobians(plant, chart, t, x, u, exact)
    step = "" if method == "analytic" and out_method != "central difference" else \
        "central difference, h_k = eps^(1/3) max(1, |z_k|)"
    info = Linearization(
        method=method, output_method=out_method, step=step, t=float(t), x0=x, u0=u,
        y0=np.asarray(plant.outputs_at(t, x, u), float), xdot0=np.asarray(zdot, float),
        tangent=chart.tangent, to_state=chart.to_state, from_state=chart.from_state,
        notes="; ".join(n for n in (
            "configuration states are tangent increments dq: q = q0 (+) dq" if chart.tangent else "",
            f"no exact tangents: {exact.why}" if exact.J is None else "") if n))
    from ..cosim.signal_names import control_name, control_names
    sys = control.ss(A, B, C, D, states=control_names(chart.state_names()),
                     inputs=control_names(s.name for s in plant.inputs),
                     outputs=control_names(s.name for s in plant.outputs), name=control_name(f"{plant.name}_lin"))
    sys.linearization = info
    by_name = {sig.name: sig.unit for sig in (*plant.states, *plant.inputs, *plant.outputs)}
    sys.signal_units = {lab: by_name[lab] for lab in (*sys.state_labels, *sys.input_labels, *sys.output_labels)
                        if by_name.get(lab)}
    return sys
