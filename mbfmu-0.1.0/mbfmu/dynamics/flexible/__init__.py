"""Flexible bodies: finite-segment and assumed-modes beams (issue 4).

* :class:`BeamProperties`: material and cross-section with units;
* :func:`add_segmented_beam`: the finite-segment method in any
  :class:`~mbfmu.dynamics.ModelBuilder` tree;
* :class:`FlexibleSystemBuilder` / :class:`FlexibleSystem`: assumed-modes
  beams in a floating frame with the rigid bodies of a tree,
  equations projected from the engine's kernels;
* :class:`RigidSystem`: an engine model behind the same interface;
* ``FlexibleSystemBuilder.add_beam(..., subbeams=n)``: a beam of ``n``
  chained floating-frame sub-beams, geometrically exact in the limit
  (:mod:`~mbfmu.dynamics.flexible.subbeams`, :class:`SubbeamChain`);
* analysis (:func:`natural_frequencies`, :func:`static_response`,
  :func:`static_equilibrium`) and integrators (:func:`simulate`, explicit
  and implicit; :func:`simulate_driven`, compiled, with driven joints).
"""
from .analysis import natural_frequencies, static_response, stiffness_matrix
from .beam import BeamProperties
from .hub_beam import hub_beam
from .integrators import StructuralJacobian, Trajectory, damping_matrix, simulate
from .modes import BendingModes, SineModes, TipLoadedModes, clamped_free_roots, pinned_free_roots
from .driven import simulate_driven
from .rigid import RigidSystem
from .segments import add_segmented_beam, segment_joint_layout, segment_tip_offset
from .statics import static_equilibrium, tangent_stiffness
from .subbeams import SubbeamChain
from .modes import ModeSet
from .system import FlexibleSystem, FlexibleSystemBuilder, ModalBeam, solve_prescribed

__all__ = [
    "BeamProperties", "BendingModes", "FlexibleSystem", "FlexibleSystemBuilder", "ModalBeam",
    "ModeSet", "RigidSystem", "SineModes", "StructuralJacobian", "TipLoadedModes", "Trajectory",
    "add_segmented_beam", "clamped_free_roots", "hub_beam", "damping_matrix", "natural_frequencies",
    "pinned_free_roots", "segment_joint_layout", "segment_tip_offset", "simulate",
    "solve_prescribed", "static_response", "stiffness_matrix", "SubbeamChain", "simulate_driven",
    "static_equilibrium", "tangent_stiffness",
]
