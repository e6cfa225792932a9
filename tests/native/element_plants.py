"""Plants that register the test-only plug-in element (``elements/point_damper.c``:
a linear damper F = -c V between a body point and the ground, with its dissipated
energy E as a state of its own, dE/dt = c |V|^2), for the element interface tests
(``csrc/element.h``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mbfmu.dynamics import JointForce, ModelBuilder, sensors
from mbfmu.dynamics.joints import Prismatic, Revolute
from mbfmu.dynamics.motion_sensors import Accelerometer, FrameAcceleration
from mbfmu.plant.elements import ElementOutput, NativeElement
from mbfmu.plant.multibody import MultibodyPlant, parameter_signals
from mbfmu.plant.signals import Signal

DAMPER_C = Path(__file__).with_name("elements") / "point_damper.c"


def point_damper(body: int, point, c: float) -> NativeElement:
    """The test damper (N s/m) on ``point`` (m, body frame) of ``body``, its state the
    energy it has dissipated (J, from 0)."""
    return NativeElement(DAMPER_C, "test_point_damper", body, point, (c,),
                         states=(Signal("dissipated", "J", "energy the damper has dissipated", 0.0, kind="state"),))


METER_C = DAMPER_C.with_name("accel_meter.c")


def accel_meter(body: int, point) -> NativeElement:
    """The test accelerometer on ``point`` (m, body frame) of ``body``: its states integrate
    the x and z components of the specific force there (m/s, from 0)."""
    return NativeElement(METER_C, "test_accel_meter", body, point,
                         states=(Signal("meter_x", "m/s", "integral of the specific force along x", kind="state"),
                                 Signal("meter_z", "m/s", "integral of the specific force along z", kind="state")))


class DampedSlider(MultibodyPlant):
    """A 2 kg block on a prismatic joint along x (no gravity along it), a point damper on
    it (parameter ``c``, 3 N s/m by default), a force input: v(t) = v0 exp(-c t / m) with
    the input at zero."""

    name = "damped_slider"
    default_step = 0.05
    default_stop_time = 1.0
    internal_step = 1e-3
    MASS, C, V0 = 2.0, 3.0, 1.5

    def __init__(self, c: float = C):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        b.add_body("block", "world", Prismatic(axis=(1.0, 0.0, 0.0)), self.MASS, (0.0, 0.0, 0.0),
                   np.eye(3) * 0.01)
        model = b.build()
        super().__init__(model, np.ones((1, 1)), v0=[self.V0])
        self.parameters = parameter_signals({"c": (c, "N.s/m", "damping of the point damper")}, {"c": (0.0, None)})
        self.register_elements(point_damper(1, (0.0, 0.2, 0.1), c), accel_meter(1, (0.1, -0.2, 0.3)))
        self.inputs = (Signal("push", "N", "force along the slide", kind="input"),)
        self.sensors = (sensors.StateValue(0), sensors.StateValue(1), sensors.StateValue(2), ElementOutput(0),
                        sensors.StateValue(3), sensors.StateValue(4))
        self.outputs = (Signal("x", "m", kind="output"), Signal("v", "m/s", kind="output"),
                        Signal("dissipated", "J", kind="output"), Signal("power", "W", kind="output"),
                        Signal("meter_x", "m/s", kind="output"), Signal("meter_z", "m/s", kind="output"))


class DampedPendulum(MultibodyPlant):
    """A double pendulum (hinges about y, gravity -z) with a 0.8 N s/m point damper on
    an off-axis point of its second link: a damper force that depends on q and v."""

    name = "damped_pendulum"
    default_step = 0.01
    default_stop_time = 1.0
    internal_step = 1e-3

    def __init__(self):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        inertia = np.diag([1e-3, 2e-2, 2e-2])
        b.add_body("upper", "world", Revolute(axis=(0.0, 1.0, 0.0)), 1.0, (0.25, 0.0, 0.0), inertia)
        b.add_body("lower", "upper", Revolute(axis=(0.0, 1.0, 0.0)), 0.7, (0.2, 0.0, 0.0), inertia,
                   p_PJ=(0.5, 0.0, 0.0))
        model = b.build()
        super().__init__(model, np.array([[1.0], [0.0]]), q0=[0.4, -0.3], v0=[0.5, -1.0])
        self.register_elements(point_damper(2, (0.4, 0.05, 0.03), 0.8), accel_meter(2, (0.3, -0.02, 0.05)))
        self.inputs = (Signal("tau", "N.m", "shoulder torque", kind="input"),)
        self.sensors = (tuple(sensors.StateValue(k) for k in range(5))
                        + tuple(sensors.PointPosition(2, (0.4, 0.0, 0.0), k) for k in range(3))
                        + (sensors.KineticEnergy(), sensors.PotentialEnergy(), ElementOutput(0)))
        self.outputs = (tuple(Signal(f"x[{k + 1}]", kind="output") for k in range(5))
                        + tuple(Signal(f"tip[{k + 1}]", "m", kind="output") for k in range(3))
                        + (Signal("ke", "J", kind="output"), Signal("pe", "J", kind="output"),
                           Signal("power", "W", kind="output")))


SAMPLER_C = DAMPER_C.with_name("grid_sampler.c")


def grid_sampler(body: int, point, period) -> NativeElement:
    """The test sampler on ``point`` (m, body frame) of ``body``: its state the path the point
    travels (m, from 0); at each instant k ``period`` (s) it samples the path, counts the
    instant and keeps the largest growth of the path between consecutive instants."""
    return NativeElement(SAMPLER_C, "test_grid_sampler", body, point, (period,),
                         states=(Signal("path", "m", "path length of the sampler's point", kind="state"),),
                         discrete=(Signal("path_held", "m", "path at the last grid instant", kind="state"),
                                   Signal("instants", "1", "grid instants passed", kind="state"),
                                   Signal("growth_max", "m", "largest growth of the path between instants",
                                          kind="state")))


class SampledSlider(DampedSlider):
    """The damped slider with the test sampler on its block (its period the parameter ``T``,
    s): the path is x(t) = v0 m / c (1 - exp(-c t / m)) (the block moves forward only)."""

    name = "sampled_slider"
    PERIOD = 0.0437  # s: no instant on the 0.05 s output grid before 1 s

    def __init__(self, c: float = DampedSlider.C, T: float = PERIOD):
        super().__init__(c)
        self.parameters = parameter_signals({"c": (c, "N.s/m", "damping of the point damper"),
                                             "T": (T, "s", "sampling period of the grid sampler")},
                                            {"c": (0.0, None), "T": (0.0, None)})
        self.register_elements(grid_sampler(1, (0.0, 0.1, -0.1), T))
        n = len(self.states)  # [x, v, dissipated, meter_x, meter_z, path, path_held, instants, growth_max]
        self.sensors = self.sensors + tuple(sensors.StateValue(k) for k in range(n - 4, n))
        self.outputs = self.outputs + (Signal("path", "m", kind="output"), Signal("path_held", "m", kind="output"),
                                       Signal("instants", "1", kind="output"),
                                       Signal("growth_max", "m", kind="output"))


FRAME_STEP_C = DAMPER_C.with_name("frame_step.c")


def frame_step(axis, a0: float, t_on: float, input: int = -1) -> NativeElement:
    """The test frame element: the plant's frame accelerates by ``(a0 + u[input]) axis``
    (m/s2) from ``t_on`` (s) on, not before (``input`` -1: no input)."""
    return NativeElement(FRAME_STEP_C, "test_frame_step", 1, (0.0, 0.0, 0.0), (*axis, a0, t_on, float(input)))


class SledDampedSlider(MultibodyPlant):
    """A 2 kg block on a prismatic joint along the sled's x axis, in the frame of a sled that
    accelerates by the input (m/s2; the test frame element from t = 0), with the test point
    damper (3 N s/m) on it: relative to the sled m dv/dt = -m a_s - c v,
    v(t) = v0 e^(-c t / m) - (m a_s / c) (1 - e^(-c t / m))."""

    name = "sled_damped_slider"
    default_step = 0.05
    default_stop_time = 1.0
    internal_step = 1e-3
    MASS, C, V0 = 2.0, 3.0, 1.5

    def __init__(self):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        b.add_body("block", "world", Prismatic(axis=(1.0, 0.0, 0.0)), self.MASS, (0.0, 0.0, 0.0),
                   np.eye(3) * 0.01)
        super().__init__(b.build(), np.zeros((1, 1)), v0=[self.V0])
        self.register_elements(frame_step((1.0, 0.0, 0.0), 0.0, 0.0, input=0),
                               point_damper(1, (0.0, 0.2, 0.1), self.C))
        self.inputs = (Signal("sled_acceleration", "m/s2", "the sled's acceleration along x", kind="input"),)
        self.sensors = (sensors.StateValue(1), sensors.StateValue(2), ElementOutput(1))
        self.outputs = (Signal("v", "m/s", kind="output"), Signal("dissipated", "J", kind="output"),
                        Signal("power", "W", kind="output"))


class SpringInFrame(MultibodyPlant):
    """A 2 kg block on a prismatic joint along x, held by a joint spring (``k``, N/m) and
    damper (``c``, N s/m) to the frame, which accelerates by ``a0 + u`` (m/s2, the input
    ``push``) along x from ``t_on`` (s) on (the test frame element): m x'' = -k x - c x' - m a.
    Outputs: x, v, the frame's acceleration and the block's accelerometer (x and z)."""

    name = "spring_in_frame"
    default_step = 0.05
    default_stop_time = 2.0
    internal_step = 1e-3
    MASS, K, C, A0, T_ON = 2.0, 200.0, 20.0, 3.0, 0.33

    def __init__(self, k: float = K, a0: float = A0, t_on: float = T_ON):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        i = b.add_body("block", "world", Prismatic(axis=(1.0, 0.0, 0.0)), self.MASS, (0.0, 0.0, 0.0),
                       np.eye(3) * 0.01)
        b.add_joint_force(i, JointForce(stiffness=k, damping=self.C))
        super().__init__(b.build(), np.zeros((1, 1)))
        self.parameters = parameter_signals({"k": (k, "N/m", "spring stiffness"),
                                             "a0": (a0, "m/s2", "frame acceleration from t_on, input aside"),
                                             "t_on": (t_on, "s", "when the frame starts accelerating")},
                                            {"k": (0.0, None), "t_on": (0.0, None)})
        self.register_elements(frame_step((1.0, 0.0, 0.0), a0, t_on, input=0))
        self.inputs = (Signal("push", "m/s2", "frame acceleration added from t_on", kind="input"),)
        self.sensors = (sensors.StateValue(0), sensors.StateValue(1), FrameAcceleration(0),
                        Accelerometer(1, (0.0, 0.1, 0.0), 0), Accelerometer(1, (0.0, 0.1, 0.0), 2))
        self.outputs = (Signal("x", "m", kind="output"), Signal("v", "m/s", kind="output"),
                        Signal("frame_a", "m/s2", kind="output"), Signal("meter_x", "m/s2", kind="output"),
                        Signal("meter_z", "m/s2", kind="output"))


STOP_C = DAMPER_C.with_name("joint_stop.c")


def joint_stop(body: int, iq: int, iv: int, q_stop, sign, k, c) -> NativeElement:
    """The test stop (``elements/joint_stop.c``) on the joint of ``body`` (coordinate ``q[iq]``,
    velocity ``v[iv]``): engages when ``sign (q - q_stop)`` first reaches 0 (m or rad) and then
    holds the joint with stiffness ``k`` and damping ``c`` about ``q_stop``."""
    return NativeElement(STOP_C, "test_joint_stop", body, (0.0, 0.0, 0.0), (q_stop, sign, k, c),
                         discrete=(Signal("engaged", "1", "the stop has caught the joint (0 or 1)", 0.0,
                                          kind="state"),),
                         joint_q=(iq,), joint_v=(iv,), events=("stop: travel past the stop (m), engages at 0",))


class CaughtOscillator(MultibodyPlant):
    """A block of mass m on a prismatic joint along x with a joint spring k0 (no gravity
    along x), released at rest from x = A: x = A cos(w0 t), w0 = sqrt(k0 / m), until it
    reaches the stop at x_s (< A, from above) at t* = acos(x_s / A) / w0; the stop then holds
    it with stiffness ``k_stop`` (and damping ``c_stop``) about x_s. A force input."""

    name = "caught_oscillator"
    default_step = 0.05
    default_stop_time = 2.0
    internal_step = 1e-3
    MASS, K0, A, X_STOP, K_STOP = 2.0, 8.0, 0.5, -0.2, 50.0

    def __init__(self, k_stop: float = K_STOP, c_stop: float = 0.0):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        block = b.add_body("block", "world", Prismatic(axis=(1.0, 0.0, 0.0)), self.MASS, (0.0, 0.0, 0.0),
                           np.eye(3) * 0.01)
        b.add_joint_force(block, JointForce(stiffness=self.K0, damping=0.0, rest=0.0))
        model = b.build()
        super().__init__(model, np.ones((1, 1)), q0=[self.A], v0=[0.0])
        self.parameters = parameter_signals({"k_stop": (k_stop, "N/m", "stiffness of the engaged stop"),
                                             "c_stop": (c_stop, "N.s/m", "damping of the engaged stop")},
                                            {"k_stop": (0.0, None), "c_stop": (0.0, None)})
        # travel past the stop: x_s - x (the block comes from above)
        self.register_elements(joint_stop(block, 0, 0, self.X_STOP, -1.0, k_stop, c_stop))
        self.inputs = (Signal("push", "N", "force along the slide", kind="input"),)
        self.sensors = (sensors.StateValue(0), sensors.StateValue(1), sensors.StateValue(2),
                        sensors.KineticEnergy(), sensors.PotentialEnergy(elements=True))
        self.outputs = (Signal("x", "m", kind="output"), Signal("v", "m/s", kind="output"),
                        Signal("engaged", "1", kind="output"), Signal("ke", "J", kind="output"),
                        Signal("pe", "J", kind="output"))

    @classmethod
    def analytic(cls, t: np.ndarray, k_stop: float = K_STOP) -> tuple[float, np.ndarray, np.ndarray]:
        """The undamped motion: the engagement time t* (s), x(t) (m) and v(t) (m/s)."""
        m, k0, A, xs = cls.MASS, cls.K0, cls.A, cls.X_STOP
        w0 = np.sqrt(k0 / m)
        t_star = np.arccos(xs / A) / w0
        v_star = -A * w0 * np.sin(w0 * t_star)
        K = k0 + k_stop
        w1, xe = np.sqrt(K / m), k_stop * xs / K  # about the combined springs' rest
        tau = np.maximum(t - t_star, 0.0)
        caught_x = xe + (xs - xe) * np.cos(w1 * tau) + v_star / w1 * np.sin(w1 * tau)
        caught_v = -(xs - xe) * w1 * np.sin(w1 * tau) + v_star * np.cos(w1 * tau)
        x = np.where(t < t_star, A * np.cos(w0 * t), caught_x)
        v = np.where(t < t_star, -A * w0 * np.sin(w0 * t), caught_v)
        return t_star, x, v
