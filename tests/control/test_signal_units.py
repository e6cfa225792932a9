"""Units carried to the signals that do not declare their own: over a
system's connections, from the design (the plant's linear model) and from
the plant a controller was designed for; the loop gain labelled as the
dimensionless ratio it is."""
from __future__ import annotations

import zipfile
import xml.etree.ElementTree as ET

import control as ct
import numpy as np

from mbfmu.control import linearize, loop_analysis
from mbfmu.control.export import export_fmu
from mbfmu.control.lqr import carry_units, lqr_servo
from mbfmu.cosim import ControlUnit, System, simulate
from mbfmu.cosim.blocks import Sum
from mbfmu.plant.library import load_plant

H = 0.01


def torque_loop() -> System:
    """A PD-like controller without units driving a torque-input plant: the
    plant declares N.m in, rad out (1 / (J s^2 + c s), J = 2 kg m^2)."""
    plant = ControlUnit("plant", ct.ss(ct.tf([1.0], [2.0, 3.0, 0.0])), units={"u[1]": "N.m", "y[1]": "rad"})
    err = Sum("err", "+-", inputs=("r", "q"), unit="rad")
    ctrl = ControlUnit("ctrl", ct.ss([], [], [], [[40.0]], inputs=["e"], outputs=["tau"]))
    return System([err, ctrl, plant], [("plant.y[1]", "err.q"), ("err.y", "ctrl.e"), ("ctrl.tau", "plant.u[1]")],
                  values={"err.r": 0.1})


def test_control_unit_signals_without_units_take_them_from_their_connections():
    system = torque_loop()
    assert system.units["ctrl"].variables["tau"].unit is None  # the design declares none
    symbols = system.unit_symbols()
    assert symbols["ctrl.tau"] == "N.m" and symbols["ctrl.e"] == "rad" and symbols["err.r"] == "rad"
    result = simulate(system, stop_time=0.1, step=H)
    assert result.units["ctrl.tau"] == "N.m" and result.units["plant.y[1]"] == "rad"


def test_loop_gain_of_a_torque_loop_is_labelled_dimensionless():
    """Broken at ctrl.tau -> plant.u[1], L maps a torque back onto a torque:
    a ratio N.m/N.m, not ``1/N.m``."""
    la = loop_analysis(torque_loop(), "ctrl.tau->plant.u[1]", step=H)
    assert la.units == {"plant:u[1]": "N.m", "ctrl:tau": "N.m"}
    assert la.gain_label() == "|L| [1] (N.m/N.m)"
    w = 3.0  # |L(jw)| = 40 / |J (jw)^2 + c jw|, the loop's own definition
    assert np.isclose(abs(complex(np.squeeze(la.L(1j * w)))), 40.0 / abs(2.0 * (1j * w) ** 2 + 3.0 * 1j * w),
                      rtol=1e-9)
    fig = la.plot()
    assert fig.axes[0].get_ylabel() == "|L| [1] (N.m/N.m)"


def _md_units(fmu) -> dict[str, str]:
    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    return {v.get("name"): (v.find("Real").get("unit") if v.find("Real") is not None else None)
            for v in root.iter("ScalarVariable")}


def test_a_controller_designed_for_the_plant_carries_its_units_into_the_unit_and_the_exported_fmu(tmp_path):
    """The rigid arm's linear model knows its units and passes them to a
    design on it; after ``c2d`` (which keeps labels only) the plant itself
    gives them. The exported controller declares rad in and N.m out."""
    plant = load_plant("rigid_arm")
    lin = linearize(plant)
    assert lin.signal_units["q[1]"] == "rad" and lin.signal_units["v[2]"] == "rad/s"
    assert lin.signal_units["tau[3]"] == "N.m"
    design = carry_units(lin, ct.ss([], [], [], np.zeros((3, 6)), inputs=lin.state_labels,
                                    outputs=lin.input_labels))
    assert ControlUnit("c", design).variables["tau[1]"].unit == "N.m"
    sysd = ct.c2d(ct.ss(lin.A, lin.B, np.eye(6), 0, states=lin.state_labels, inputs=lin.input_labels,
                        outputs=lin.state_labels), H, "zoh")
    ctrl = lqr_servo(sysd, np.ones(6), 0.01 * np.ones(3))
    assert ControlUnit("c", ctrl, units=plant).variables["tau[2]"].unit == "N.m"
    units = _md_units(export_fmu(ctrl, tmp_path, "lqr", units=plant))
    assert units["q[1]"] == "rad" and units["v[1]"] == "rad/s" and units["tau[1]"] == "N.m"
