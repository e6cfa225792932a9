"""The plant contract: what every plant is, however it was made.

A plant is a mechanism (``mbfmu.dynamics`` model) with named, unit-carrying
ports. The modules of this layer, each with one job:

- :mod:`~mbfmu.plant.signals`: the signal specification (name, SI unit,
  start, bounds, kind) that feeds the FMU variables, python-control names and
  the master's connections;
- :mod:`~mbfmu.plant.parameters`: each parameter declared once
  (:class:`Parameter`, :class:`Declaration`: unit, default, bounds with open
  or closed ends, rebuild reason), from which constructors, checks, signals
  and FMU bounds come; :mod:`~mbfmu.plant.outputs`: each output declared
  with the sensor that computes it;
- :mod:`~mbfmu.plant.contract`: :class:`Plant` (inputs, outputs, parameters,
  states; derivatives, outputs, advance, poses) and :class:`Shape`;
- :mod:`~mbfmu.plant.multibody`: :class:`MultibodyPlant`, a plant on the
  engine's compiled kernels;
- :mod:`~mbfmu.plant.urdf`, :mod:`~mbfmu.plant.urdf_files`,
  :mod:`~mbfmu.plant.urdf_visuals`: robots from URDF files, their files and
  their visuals;
- :mod:`~mbfmu.plant.library`: the plant library by name (``load_plant``).

Names are imported lazily, so that ``mbfmu.plant.signals`` stays light for
the layers that need only signals.
"""
from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {
    "Plant": "contract",
    "Shape": "contract",
    "Signal": "signals",
    "MultibodyPlant": "multibody",
    "Parameter": "parameters",
    "Declaration": "parameters",
    "declare_outputs": "outputs",
    "measured": "outputs",
    "measured_vector": "outputs",
    "URDFPlant": "urdf",
    "Servo": "urdf",
    "plant_from_urdf": "urdf",
    "load_plant": "library",
    "list_plants": "library",
}

# URDFPlant is reached by name but documented through plant_from_urdf, which builds it
__all__ = sorted(set(_LAZY) - {"URDFPlant"})

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
