"""The engine's rigid models seen through the :class:`FlexibleSystem` API.

:class:`RigidSystem` wraps a :class:`~mbfmu.dynamics.Model` (for instance a
finite-segment beam) so that the analysis and integration helpers of this
package treat both beam methods alike.
"""
from __future__ import annotations

import numpy as np

from .. import _kernels
from ..algorithms import kinetic_energy, point_jacobian, point_position, potential_energy
from ..model import Model, check_vector
from .system import solve_prescribed


class RigidSystem:
    """A plain engine model with the generalized-force interface.

    Parameters
    ----------
    model : Model
    """

    def __init__(self, model: Model):
        self.model = model
        self.nq, self.nv = model.nq, model.nv
        self.nf = 0
        self.beams = ()
        # the tree as a flexible system without beams (every body rigid, public
        # coordinates the model's), for the flexible sensors (csrc/flexsensors.h)
        nb = model.nbodies
        ib = lambda xs: np.array(xs, np.intc)  # noqa: E731
        none = ib([])
        self.flex_tables = dict(
            role=ib([0] + [1] * (nb - 1)), beam=ib([-1] * nb), pq=ib([0, *model.idx_q[1:]]),
            pv=ib([0, *model.idx_v[1:]]), goff=ib([-1] * nb), hoff=ib([-1] * nb), gtab=np.zeros(0),
            htab=np.zeros(0), bbody=none, bq=none, bv=none, bnm=none, kdoff=none, kd=np.zeros(0))
        t = self.flex_tables
        self._fh = _kernels.new_flex(model._h, self.nq, self.nv, t["role"], t["beam"], t["pq"], t["pv"],
                                     t["goff"], t["hoff"], t["gtab"], t["htab"], none, none, none, none,
                                     none, t["kd"], tuple(model.q_names), tuple(model.v_names), ())

    def neutral(self) -> np.ndarray:
        return self.model.neutral()

    def mass_matrix(self, q) -> np.ndarray:
        """``crba``."""
        return _kernels.crba(self.model._h, check_vector(q, self.nq, "q"))

    def generalized_forces(self, q, v, tau=None, f_ext=None) -> np.ndarray:
        """``F`` with ``M v_dot = F`` (inputs, joint/point springs, gravity,
        velocity products)."""
        h = self.model._h
        tau_p, f_p = _kernels.passive_forces(h, q, v, tau)  # drives read their commands in tau
        fe = f_p if f_ext is None else f_p + f_ext
        F = tau_p - _kernels.rnea(h, q, v, np.zeros(self.nv), fe)
        return F if tau is None else F + tau

    def accelerations(self, q, v, tau=None, f_ext=None, prescribed=None) -> np.ndarray:
        """``v_dot`` (the O(N) kernel when nothing is prescribed)."""
        if prescribed is None:
            t = np.zeros(self.nv) if tau is None else tau
            return _kernels.rhs(self.model._h, q, v, t, f_ext)[1]
        M = self.mass_matrix(q)
        return solve_prescribed(M, self.generalized_forces(q, v, tau, f_ext), prescribed)

    def qdot(self, q, v) -> np.ndarray:
        return _kernels.qdot(self.model._h, q, v)

    def rhs(self, t, x, tau=None, f_ext=None, prescribed=None) -> np.ndarray:
        q, v = x[:self.nq], x[self.nq:]
        if prescribed is None:
            t_ = np.zeros(self.nv) if tau is None else tau
            qd, vd = _kernels.rhs(self.model._h, q, v, t_, f_ext)
            return np.concatenate([qd, vd])
        return np.concatenate([self.qdot(q, v), self.accelerations(q, v, tau, f_ext, prescribed)])

    def poses(self, q):
        R, p, _ = _kernels.kinematics(self.model._h, np.asarray(q, float))
        return R, p

    def point_position(self, q, body, p_BP=(0.0, 0.0, 0.0)) -> np.ndarray:
        return point_position(self.model, q, body, p_BP)

    def point_jacobian(self, q, body, p_BP=(0.0, 0.0, 0.0)) -> np.ndarray:
        return point_jacobian(self.model, q, body, p_BP)

    def kinetic_energy(self, q, v) -> float:
        return kinetic_energy(self.model, q, v)

    def potential_energy(self, q) -> float:
        return potential_energy(self.model, q)
