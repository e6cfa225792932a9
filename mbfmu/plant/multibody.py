"""A plant built on a :class:`~mbfmu.dynamics.Model`: the common machinery.

:class:`MultibodyPlant` turns a model into a :class:`~mbfmu.plant.Plant`:

* state ``x = [q; v]`` (states ``q[1..nq]`` and ``v[1..nv]``, units from the
  joint types), or ``x = [q; p]`` with generalized momenta ``p = M(q) v``
  when ``canonical=True`` (the canonical variables of Shimanovsky and Ivanov 2013);
* inputs map linearly to generalized forces, ``tau = B u`` (``input_matrix``);
* subclasses add state-dependent forces that the kernels do not model
  (contact, motors with feedback, belts) by overriding :meth:`applied_forces`,
  and define their outputs as engine sensors (``sensors``, a tuple of
  :mod:`mbfmu.dynamics.sensors` elements, evaluated by the default
  :meth:`outputs_at` here and by the native FMU runtime in C) or override
  :meth:`outputs_at`;
* :meth:`advance` runs the compiled error-controlled integrator (in (q, v)
  or in canonical (q, p)) when no Python-level force is present
  (``applied_forces`` not overridden), else the same integrator around the
  Python right-hand side;
* plug-in elements written in C (:meth:`register_elements`,
  ``csrc/element.h``) run in the kernels, as the native FMU runs them; a
  frame element among them (such as the crash occupant's sled frame) sets
  the moving frame the whole plant, its elements and its sensors of the
  dynamics (:mod:`mbfmu.dynamics.motion_sensors`) run in.
"""
from __future__ import annotations

import numpy as np

from ..dynamics import _kernels, motion_sensors as _motion, sensors as _sensors
from ..dynamics.integrators import _failed, advance_rigid
from ..dynamics.algorithms import forward_kinematics, kinetic_energy, momentum, potential_energy
from ..dynamics.joints import FREE, PRISMATIC, SPHERICAL
from ..dynamics.model import Model
from ..dynamics.symbolic import has_sym, real_array, value
from ..errors import InputError, ModelError, SimulationError
from .contract import Plant
from .elements import ElementOutput, kernel_registry
from .signals import Signal


def _state_signals(model: Model, x0: np.ndarray, canonical: bool) -> tuple[Signal, ...]:
    """Signals q[1..nq], then v[1..nv] (or p[1..nv]) with units and joint labels."""
    q_units, v_units, p_units = [], [], []
    for j in model.joints[1:]:
        if j.code == PRISMATIC:
            q_units += ["m"]; v_units += ["m/s"]; p_units += ["N.s"]
        elif j.code == SPHERICAL:
            q_units += ["1"] * 4; v_units += ["rad/s"] * 3; p_units += ["N.m.s"] * 3
        elif j.code == FREE:
            q_units += ["m"] * 3 + ["1"] * 4
            v_units += ["rad/s"] * 3 + ["m/s"] * 3
            p_units += ["N.m.s"] * 3 + ["N.s"] * 3
        elif j.code == 6:  # planar
            q_units += ["m", "m", "rad"]; v_units += ["m/s", "m/s", "rad/s"]
            p_units += ["N.s", "N.s", "N.m.s"]
        else:
            q_units += ["rad"] * j.nq; v_units += ["rad/s"] * j.nv; p_units += ["N.m.s"] * j.nv
    sig = [Signal(f"q[{k + 1}]", q_units[k], f"configuration coordinate {model.q_names[k]}",
                  float(x0[k]), kind="state") for k in range(model.nq)]
    base, units, what = ("p", p_units, "generalized momentum") if canonical else \
        ("v", v_units, "velocity coordinate")
    sig += [Signal(f"{base}[{k + 1}]", units[k], f"{what} {model.v_names[k]}",
                   float(x0[model.nq + k]), kind="state") for k in range(model.nv)]
    return tuple(sig)


class MultibodyPlant(Plant):
    """Plant whose dynamics is a multibody model.

    Parameters
    ----------
    model : Model
    input_matrix : ndarray (nv, nu)
        Generalized forces per unit input: ``tau = input_matrix @ u``.
    q0, v0 : array_like, optional
        Initial configuration and velocity (default: neutral, zero).
    canonical : bool
        Integrate in canonical variables (q, p) instead of (q, v).

    Subclasses set ``name``, ``inputs``, ``outputs``, ``parameters`` and
    implement :meth:`outputs_at`; they call ``super().__init__`` with the model.
    """

    def __init__(self, model: Model, input_matrix: np.ndarray, q0=None, v0=None,
                 canonical: bool = False):
        self.model = model
        self.canonical = bool(canonical)
        B = real_array(input_matrix)
        if B.ndim != 2 or B.shape[0] != model.nv:
            raise InputError(f"input_matrix must have shape (nv={model.nv}, nu), got {B.shape}")
        self.input_matrix = B
        q = model.neutral() if q0 is None else real_array(q0).reshape(-1)
        v = np.zeros(model.nv) if v0 is None else real_array(v0).reshape(-1)
        if q.size != model.nq or v.size != model.nv:
            raise InputError(f"initial q has {q.size} values (nq={model.nq}), v has {v.size} (nv={model.nv})")
        # q0 and v0 as the parameters give them (expressions while recording, symbolic.py)
        self.initial_configuration = q if has_sym(q) and not model.has_quaternions else None
        q = _kernels.normalize(model._h, value(q))
        self.initial_velocity = np.array(real_array(v))  # v at t = 0 (a copy; the state may hold momenta)
        v = np.asarray(value(v), float)
        second = _kernels.momentum(model._h, q, v) if self.canonical else v
        self.states = _state_signals(model, np.concatenate([q, second]), self.canonical)
        self._python_forces = type(self).applied_forces is not MultibodyPlant.applied_forces

    # ---- state helpers ----------------------------------------------------
    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q, v)`` from a state (converting momenta when canonical).

        Plants may append states of their own after ``[q; v]`` (plug-in elements',
        injury-criterion bookkeeping); they are ignored here."""
        nq, nv = self.model.nq, self.model.nv
        q = x[:nq]
        if self.canonical:
            return q, _kernels.minv(self.model._h, q, x[nq:nq + nv])
        return q, x[nq:nq + nv]

    def state_from(self, q, v) -> np.ndarray:
        """State vector for configuration ``q`` and velocity ``v``."""
        q = np.asarray(q, float)
        v = np.asarray(v, float)
        second = _kernels.momentum(self.model._h, q, v) if self.canonical else v
        return np.concatenate([q, second])

    # ---- forces -------------------------------------------------------------
    def applied_forces(self, t: float, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        """Extra generalized forces (nv,) and body wrenches (nbodies, 6, body
        frame, [n; f]) at time ``t``; ``None`` for either means none.
        Override for contact, feedback motors, belts."""
        return None, None

    def _input_forces(self, u) -> np.ndarray:
        """``B u`` (nv,)."""
        return self.input_matrix @ np.asarray(u, float) if len(u) else np.zeros(self.model.nv)

    def generalized_forces(self, t, q, v, u):
        """``(tau, f_ext)`` for the kernels: ``B u`` plus :meth:`applied_forces`."""
        tau = self.input_matrix @ u if u.size else np.zeros(self.model.nv)
        f_ext = None
        if self._python_forces:
            extra_tau, f_ext = self.applied_forces(t, q, v, u)
            if extra_tau is not None:
                tau = tau + extra_tau
        return tau, f_ext

    # ---- Plant interface ----------------------------------------------------
    def derivatives(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """dx/dt: ``[dq/dt; dv/dt]``, or ``[dq/dt; dp/dt]`` in canonical variables
        (with plug-in elements, the rates of their states after them)."""
        self._refuse_native_only()
        u = np.asarray(u, float)
        h = self.model._h
        nq = self.model.nq
        q = x[:nq]
        if self.native_elements:  # their own C, as the native FMU runs it (a frame element reads u)
            qdot, ydot = _kernels.element_rhs(h, q, x[nq:], self._input_forces(u), float(t), self._element_registry(),
                                              u)
            return np.concatenate([qdot, ydot])
        if self.canonical:
            v = _kernels.minv(h, q, x[nq:])
            tau, f_ext = self.generalized_forces(t, q, v, u)
            tau_p, f_p = _kernels.passive_forces(h, q, v, tau)  # drives read their commands in tau
            f_all = f_p if f_ext is None else f_p + f_ext
            qdot, pdot, _ = _kernels.sweep(h, q, x[nq:], tau + tau_p, f_all)
            return np.concatenate([qdot, pdot])
        v = x[nq:]
        tau, f_ext = self.generalized_forces(t, q, v, u)
        qdot, vdot = _kernels.rhs(h, q, v, tau, f_ext)
        return np.concatenate([qdot, vdot])

    sensors: tuple = ()
    _compiled_sensors = None
    # plug-in elements (mbfmu.plant.elements.NativeElement; register_elements): their own C, run
    # by the native FMU and, through the kernels, by this plant (advance, derivatives, outputs_at)
    native_elements: tuple = ()

    def register_elements(self, *elements) -> None:
        """Register plug-in elements of the native runtime and append their states.

        Parameters
        ----------
        *elements : NativeElement
            The elements (:mod:`mbfmu.plant.elements`); their own continuous states
            follow the plant's states before its first element, element after element (all
            registered elements'), then their discrete states.
        """
        registered = tuple(self.native_elements)
        own = len(self.states) - sum(len(el.states) + len(el.discrete) for el in registered)
        self.native_elements = registered + tuple(elements)
        self.states = (tuple(self.states)[:own] + tuple(sig for el in self.native_elements for sig in el.states)
                       + tuple(sig for el in self.native_elements for sig in el.discrete))
        self.__dict__.pop("_el_registry", None)

    def _refuse_native_only(self) -> None:
        """The Python plant runs plug-in elements on a rigid plant in ``(q, v)`` with its forces
        in the engine (the native FMU's case); with anything else the dynamics would omit them."""
        if not self.native_elements:
            return
        for what, present in (("canonical variables", self.canonical),
                              ("forces computed in Python", self._python_forces)):
            if present:
                raise ModelError(f"plant {self.name!r} registers plug-in elements ({self.native_elements[0].symbol}), "
                                 f"which run on a rigid plant in (q, v), not with {what}")

    def _element_registry(self) -> tuple:
        """The kernels' registry of the plug-in elements (compiled once per process)."""
        reg = self.__dict__.get("_el_registry")
        if reg is None:
            reg = self._el_registry = kernel_registry(self.native_elements)
        return reg

    def _element_registry_or_none(self) -> tuple | None:
        """The kernels' registry of the plug-in elements, or None without any."""
        return self._element_registry() if self.native_elements else None

    def outputs_at(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Outputs from the plant's engine sensors (``sensors``), in output order."""
        self._refuse_native_only()
        if not self.sensors:
            raise NotImplementedError(f"plant {self.name!r} declares no output sensors and no outputs_at")
        q, v = self.split(x)
        if any(isinstance(s, _motion.KINDS) for s in self.sensors):  # sensors of the dynamics (element.h)
            if self._compiled_sensors is None:
                self._compiled_sensors = _motion.CompiledSensors(self.sensors, self.model, len(self.inputs))
            u = np.asarray(u, float)
            out = self._compiled_sensors(t, x, v, u, self._input_forces(u), self._element_registry_or_none())
            mine = [k for k, s in enumerate(self.sensors) if isinstance(s, ElementOutput)]
            if mine:
                out[mine] = self._element_outputs(t, x, v, mine)
            return out
        if self.native_elements:
            return self._outputs_with_elements(t, x, v, np.asarray(u, float))
        packed = self.__dict__.get("_packed_sensors")
        if packed is None:  # the kernels' sensor code, the native FMU's: one compiled call for all outputs
            try:
                packed = _sensors.PackedSensors(self.sensors, self.model, len(self.inputs))
            except (InputError, ModelError):
                packed = False  # sensors the kernels cannot read (state entries beyond [q; y])
            self._packed_sensors = packed
        if packed:
            return packed(x, v, u)
        return _sensors.evaluate(self.sensors, self.model, x, v, np.asarray(u, float))

    def _outputs_with_elements(self, t: float, x: np.ndarray, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The outputs of a plant with plug-in elements: the engine's sensors and the elements'
        outputs (:class:`~mbfmu.plant.elements.ElementOutput`, their own C)."""
        mine = [k for k, s in enumerate(self.sensors) if isinstance(s, ElementOutput)]
        rest = [k for k, s in enumerate(self.sensors) if not isinstance(s, ElementOutput)]
        out = np.empty(len(self.sensors))
        if rest:
            packed = self.__dict__.get("_packed_sensors")
            if packed is None:  # the native runtime's sensor code, as mbn_outputs runs it
                try:
                    packed = _sensors.PackedSensors([self.sensors[k] for k in rest], self.model, len(self.inputs))
                except (InputError, ModelError):
                    packed = False  # sensors the kernels cannot read (the elements' states)
                self._packed_sensors = packed
            out[rest] = packed(x, v, u) if packed else \
                _sensors.evaluate([self.sensors[k] for k in rest], self.model, x, v, u)
            # then the elements' elastic energy (their own C) on the potential energy that counts it
            counted = [j for j, k in enumerate(rest) if isinstance(self.sensors[k], _sensors.PotentialEnergy)
                       and self.sensors[k].elements]
            if counted:
                nqv = self.model.nq + self.model.nv
                out[[rest[j] for j in counted]] += _kernels.element_energy(
                    self.model._h, x[:self.model.nq], v, x[nqv:], self._element_registry())
        if mine:
            out[mine] = self._element_outputs(t, x, v, mine)
        return out

    def _element_outputs(self, t: float, x: np.ndarray, v: np.ndarray, which: list[int]) -> np.ndarray:
        """The values of the outputs ``which`` (:class:`~mbfmu.plant.elements.ElementOutput`
        sensors) from the elements' own C."""
        nqv = self.model.nq + self.model.nv
        rows = np.array([(self.sensors[k].element, self.sensors[k].output) for k in which], dtype=np.intc)
        return _kernels.element_outputs(self.model._h, x[:self.model.nq], v, x[nqv:], float(t),
                                        self._element_registry(), rows)

    def normalize_state(self, x: np.ndarray) -> np.ndarray:
        if not self.model.has_quaternions:
            return x
        nq = self.model.nq
        x = np.array(x)
        x[:nq] = _kernels.normalize(self.model._h, x[:nq])
        return x

    def advance(self, t: float, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
        """State at ``t + dt``, error-controlled to ``error_control``: wholly
        in compiled code when the plant has no Python-level forces, else
        around :meth:`derivatives`."""
        self._refuse_native_only()
        if self._python_forces:
            return super().advance(t, x, u, dt)
        nq = self.model.nq
        tau = self._input_forces(u)
        if self.native_elements:  # their own C, with the integrator and options of advance_rigid
            try:
                q, y, _ = _kernels.element_adapt(self.model._h, x[:nq], x[nq:], tau, float(t), float(dt),
                                                 self.error_control.options(self.internal_step),
                                                 self._element_registry(), np.asarray(u, float))
            except SimulationError as exc:
                err = blown_up_error(self, t, dt, x, tau, exc)  # else the failure, naming the plant and the step
                raise (_failed(f"plant {self.name!r}", t, dt, exc) if err is exc else err) from None
            out = np.concatenate([q, y])
            raise_if_nonfinite(out, self.name, t + dt)
            return out
        try:
            q, second = advance_rigid(self.model, x[:nq], x[nq:], tau, t, dt, self.error_control,
                                      self.internal_step, canonical=self.canonical, what=f"plant {self.name!r}")
        except SimulationError as exc:
            raise blown_up_error(self, t, dt, x, tau, exc) from None
        return np.concatenate([q, second])

    def poses(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World rotation (nbodies, 3, 3) and origin (nbodies, 3, m) of each body."""
        kin = forward_kinematics(self.model, x[:self.model.nq])
        return kin.R_WB, kin.p_WB

    # ---- diagnostics --------------------------------------------------------
    def energies(self, x: np.ndarray) -> tuple[float, float]:
        """Kinetic and potential energy (J) of state ``x`` (springs included)."""
        q, v = self.split(x)
        return kinetic_energy(self.model, q, v), potential_energy(self.model, q)

    def momenta(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Total linear (kg m/s) and angular momentum about the world origin
        (kg m^2/s), world frame."""
        q, v = self.split(x)
        return momentum(self.model, q, v)


def parameter_signals(values: dict[str, tuple[float, str, str]],
                      ranges: dict[str, tuple[float | None, float | None]] | None = None
                      ) -> tuple[Signal, ...]:
    """Parameter signals from ``{name: (value, unit, description)}`` and closed
    ``ranges``, for a plant that does not declare its parameters; the library
    plants declare them once instead (:class:`mbfmu.plant.parameters.Declaration`:
    constructor, checks, open or closed bounds and signals from one place)."""
    ranges = ranges or {}
    return tuple(Signal(k, unit, desc, float(val), *ranges.get(k, (None, None)), kind="parameter")
                 for k, (val, unit, desc) in values.items())


BLOWN_UP = 1e50  # a state or generalized force beyond this has left any physical range


def blown_up_error(plant: "MultibodyPlant", t: float, dt: float, x: np.ndarray, tau: np.ndarray,
                   exc: Exception) -> Exception:
    """``exc`` from a failed step, or, when the state or the forces have blown up
    (non-finite or beyond 1e50), a :class:`SimulationError` saying so, naming the
    state by its signal (``v[2]``) or the generalized force by its 1-based number
    and coordinate: a singular inertia found then is a consequence of the
    overflow, not a massless joint."""
    x, tau = np.asarray(x, float), np.asarray(tau, float)
    big_x = float(np.max(np.abs(x))) if x.size else 0.0
    big_tau = float(np.max(np.abs(tau))) if tau.size else 0.0
    if np.isfinite(big_x) and big_x < BLOWN_UP and np.isfinite(big_tau) and big_tau < BLOWN_UP:
        return exc
    k = int(np.argmax(np.abs(x))) if big_x >= big_tau else int(np.argmax(np.abs(tau)))
    if big_x >= big_tau:
        what = f"state {plant.states[k].name} = {float(x[k])!r}"
    else:
        what = f"generalized force tau[{k + 1}] = {float(tau[k])!r} on {plant.model.v_names[k]}"
    return SimulationError(f"plant {plant.name!r}: the state has blown up in the step from t = {t!r} s to "
                           f"{t + dt!r} s (largest: {what}); check the inputs and the step size")


def raise_if_nonfinite(x: np.ndarray, plant: str, t: float) -> None:
    if not np.all(np.isfinite(x)):
        raise SimulationError(f"plant {plant!r}: state became non-finite at t = {t} s")

