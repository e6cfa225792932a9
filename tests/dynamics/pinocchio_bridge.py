"""An mbfmu :class:`~mbfmu.dynamics.Model` as a Pinocchio model (the tests'
oracle and the benchmarks' peer), with the permutations between the two
libraries' coordinates."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from mbfmu.dynamics.joints import FIXED, FREE, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL

__all__ = ["to_pinocchio"]


def to_pinocchio(model) -> tuple[pin.Model, np.ndarray, np.ndarray]:
    """The same tree as a Pinocchio model, and the coordinate permutations.

    Parameters
    ----------
    model : mbfmu.dynamics.Model
        Tree of revolute, prismatic, spherical, free-flyer, universal and
        fixed joints (planar joints are not translated).

    Returns
    -------
    pm : pinocchio.Model
        One Pinocchio joint per moving mbfmu body, in mbfmu's body order, with
        the body's placement in its parent (``R_PJ``, ``p_PJ``), its inertia,
        and the model's gravity. A body on a ``Fixed`` joint has no joint of
        its own: its inertia is appended to the parent's Pinocchio joint at the
        accumulated fixed placement, and its children hang from that joint at
        the composed placement. Every mbfmu body also gets a Pinocchio ``BODY``
        frame of its name (the body frame, in its supporting joint), so
        ``pm.getFrameId(body.name)`` and ``data.oMf`` give its world pose.
        A universal joint becomes two revolute joints, the first
        (``<name>_1``, about ``axis1``, massless) carrying the second (about
        ``axis2`` in the frame turned by the first), which carries the body.
    perm_q : ndarray of int (pm.nq,)
        mbfmu index of each Pinocchio configuration coordinate:
        ``q_pin = q[perm_q]``.
    perm_v : ndarray of int (pm.nv,)
        mbfmu index of each Pinocchio velocity coordinate:
        ``v_pin = v[perm_v]`` (same for accelerations and generalized
        forces; ``x[perm_v] = x_pin`` maps back).

    Notes
    -----
    The orderings that differ:

    * quaternion (spherical and free-flyer joints): Pinocchio stores
      ``(x, y, z, w)``, mbfmu ``(w, x, y, z)``;
    * free-flyer velocity: Pinocchio ``[v; w]`` (linear first), mbfmu
      ``[w; v]`` (angular first), both in the body frame.

    Revolute and prismatic joints map to Pinocchio's unaligned joints about
    the same axis, with the same coordinate.

    Raises
    ------
    NotImplementedError
        For a planar joint.
    """
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[model.gravity, 0, 0, 0])
    # per mbfmu body (0 = world): supporting Pinocchio joint, body frame in it
    support = [(0, pin.SE3.Identity())]
    perm_q: list[int] = []
    perm_v: list[int] = []
    for i in range(1, model.nbodies):
        body, j = model.bodies[i - 1], model.joints[i]
        iq, iv = model.idx_q[i], model.idx_v[i]
        parent_jid, parent_M = support[body.parent]
        placement = parent_M * pin.SE3(np.asarray(body.R_PJ, float), np.asarray(body.p_PJ, float))
        inertia = pin.Inertia(body.mass, np.asarray(body.com, float), np.asarray(body.inertia, float))
        if j.code == FIXED:
            pm.appendBodyToJoint(parent_jid, inertia, placement)
            support.append((parent_jid, placement))
        else:
            if j.code == REVOLUTE:
                jm = pin.JointModelRevoluteUnaligned(*j.axes()[0])
                perm_q += [iq]
                perm_v += [iv]
            elif j.code == PRISMATIC:
                jm = pin.JointModelPrismaticUnaligned(*j.axes()[0])
                perm_q += [iq]
                perm_v += [iv]
            elif j.code == SPHERICAL:
                jm = pin.JointModelSpherical()
                perm_q += [iq + 1, iq + 2, iq + 3, iq]
                perm_v += [iv, iv + 1, iv + 2]
            elif j.code == FREE:
                jm = pin.JointModelFreeFlyer()
                perm_q += [iq, iq + 1, iq + 2, iq + 4, iq + 5, iq + 6, iq + 3]
                perm_v += [iv + 3, iv + 4, iv + 5, iv, iv + 1, iv + 2]
            elif j.code == UNIVERSAL:
                a1, a2 = j.axes()
                parent_jid = pm.addJoint(parent_jid, pin.JointModelRevoluteUnaligned(*a1), placement,
                                         f"{body.name}_1")
                placement = pin.SE3.Identity()
                jm = pin.JointModelRevoluteUnaligned(*a2)
                perm_q += [iq, iq + 1]
                perm_v += [iv, iv + 1]
            else:
                raise NotImplementedError(f"to_pinocchio: joint {j.kind!r} of body {body.name!r} "
                                          "is not translated")
            jid = pm.addJoint(parent_jid, jm, placement, body.name)
            pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
            support.append((jid, pin.SE3.Identity()))
        jid, M = support[-1]
        pm.addFrame(pin.Frame(body.name, jid, M, pin.FrameType.BODY))
    return pm, np.array(perm_q, dtype=int), np.array(perm_v, dtype=int)
