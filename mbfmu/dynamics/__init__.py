"""mbfmu.dynamics: the multibody dynamics engine.

Model/Data split: a :class:`Model` is an immutable description (bodies, joints,
spatial inertias, the parent array, gravity, force elements) packed once into
the compiled kernels; algorithms are free functions named like the math that
take the model first and return numpy arrays. Conventions (spatial vectors
[angular; linear], frame names, quaternions (w, x, y, z)) are stated once in
:mod:`mbfmu.dynamics.spatial`.
"""
from .algorithms import (ElementForces, Kinematics, aba, body_accelerations, body_jacobian,
                         body_velocities, center_of_mass, coriolis_matrix, coriolis_torques, crba,
                         element_forces, forward_dynamics, forward_kinematics, frame_jacobian,
                         gravity_torques, kinetic_energy, minv, momentum, nonlinear_effects,
                         point_accelerations, point_jacobian, point_position, potential_energy, rnea)
from .joints import (Fixed, FreeFlyer, Joint, Planar, Prismatic, Revolute, Spherical, Universal,
                     make_joint)
from .drives import JointDrive
from .model import Body, Cable, JointForce, Model, ModelBuilder, SpherePlaneContact, Spring
from .dh import DHRow, dh_forward_kinematics, dh_transform, from_dh

__all__ = [
    "Body", "Cable", "DHRow", "ElementForces", "Fixed", "FreeFlyer", "Joint", "JointDrive", "JointForce",
    "Kinematics", "Model", "ModelBuilder", "Planar", "Prismatic", "Revolute", "SpherePlaneContact", "Spherical",
    "Spring", "Universal", "aba", "body_accelerations", "body_jacobian", "body_velocities",
    "center_of_mass", "coriolis_matrix", "coriolis_torques", "crba", "dh_forward_kinematics", "dh_transform",
    "element_forces", "forward_dynamics", "forward_kinematics", "frame_jacobian", "from_dh", "gravity_torques",
    "kinetic_energy",
    "make_joint", "minv", "momentum", "nonlinear_effects", "point_accelerations", "point_jacobian",
    "point_position", "potential_energy", "rnea",
]
