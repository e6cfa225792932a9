/*
 * Exact directional derivatives of the native runtime (component.h,
 * native.h): d(dx/dt, y) along a direction (dx, du) of the continuous states
 * and the inputs, by forward-mode tangents of the recursive algorithms, one
 * direction per pass (no step size, no truncation error).
 *
 * Rigid trees of revolute, prismatic, universal, fixed, spherical and free
 * joints, in velocity ([q; v]) or canonical ([q; p]) variables, with joint
 * springs, dampers, range limits (a spherical joint's on its rotation
 * vector: ballspring_dirder.c), drives, point-to-point spring-dampers,
 * sphere-plane contacts and cables (contact_dirder.c; a
 * universal joint's S and Sr move with q2: their tangents enter every
 * product with them), and a frame element's moving frame (element.h):
 *   - configuration tangents are body-frame twists zeta (the tangent of
 *     ^iX_p along dq_i is -zeta_i x ^iX_p, Featherstone's
 *     d(X)/dq = -crm(S dq) X; for a quaternion e, zeta = 2 vec(e* (x) de)/|e|^2
 *     since the kernels' rotation matrix depends on e/|e| only);
 *   - velocity variables: the tangent of the inverse dynamics
 *     ID(q, v, qdd) = tau(q, v, u) gives dqdd = M^-1 (dtau - dID|dqdd=0)
 *     (the route of Carpentier and Mansard 2018, whose results Pinocchio's
 *     computeABADerivatives returns: tests/dynamics/test_exact_tangents.py);
 *   - flexible plants (assumed-modes beams): these passes on the virtual
 *     tree, projected onto the modal coordinates (flex_dirder.c);
 *   - canonical variables: v = M^-1 p gives dv = M^-1 (dp - d(M v)|dq), and
 *     dp/dt = tau + S^T (F - v x* H) (mb_sweep) is differentiated term by term.
 *   - a frame element (the crash occupant's sled frame): the model's dynamics
 *     under the gravity g - a(t, u) (the frame's acceleration a), the gravity
 *     entering as the base acceleration -g of the recursions with the tangent
 *     -da, da the class's frame_accel_tangent along du (the input columns);
 *   - the sensors of the dynamics (element.h): accelerometers (specific
 *     force, the point acceleration under that base acceleration)
 *     differentiate mb_point_acceleration at the solved dv/dt with its
 *     tangent, the frame's acceleration is da, cable tensions are
 *     contact_dirder.c's, displacements point tangents;
 *   - plug-in elements (element.h): their classes' tangents (point forces,
 *     joint rows: a satellite's hinge latches, energies); in a frame
 *     their accel_rate reads the specific force under the frame's gravity
 *     (the HIC recorder of the crash occupant plant); their discrete states
 *     are neither knowns nor unknowns here, and their rates are zero.
 * Quaternion coordinates of the state are read, as every evaluation of the
 * runtime reads them, projected to unit norm: their seed is projected onto
 * the tangent of the unit sphere. Joint range limits and drive saturation
 * are piecewise smooth: the derivative is the active piece's (exact off the
 * switching surface).
 *
 * Elements with no tangent here make mbn_dirder_inexact name them, and the
 * FMU then does not claim directional derivatives (mbfmu.fmu.native.dirder
 * mirrors this test at build time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ballspring_dirder.h"
#include "contact_dirder.h"
#include "flex_dirder.h"
#include "native.h"
#include "spatial.h"

#define B6(p, i) ((p) + 6 * (i))
#define B36(p, i) ((p) + 36 * (i))
#define B9(p, i) ((p) + 9 * (i))
#define B3(p, i) ((p) + 3 * (i))

const char *mbn_dirder_inexact(mbn_instance *in) {
    const mbn_data *D = in->data;
    const mb_model *m = in->m;
    if (D->flex) return mbn_flex_dirder_inexact(in); /* flex_dirder.c */
    if (D->canonical && mbn_elements_frame(D->nel, in->el))
        return "a frame element in canonical variables has no tangents in the C runtime";
    for (int i = 1; i < m->nb; ++i) {
        int t = m->jtype[i];
        if (t == MB_PLANAR) return "planar joints have no tangents in the C runtime";
    }
    for (int k = 0; k < D->ny; ++k) {
        int kind = D->sens[4 * k];
        if (mbn_is_motion_sensor(kind)) {
            if (D->canonical) return "an accelerometer in canonical variables has no tangent in the C runtime";
            continue;
        }
        if (kind == MBN_SENS_ELEMENT) continue; /* the element's output_tangent */
        if (kind != MB_SENS_STATE && kind != MB_SENS_VELOCITY && kind != MB_SENS_POINT && kind != MB_SENS_KINETIC &&
            kind != MB_SENS_POTENTIAL && kind != MB_SENS_LINEAR && kind != MB_SENS_QUATERNION &&
            kind != MB_SENS_MOMENTUM && kind != MB_SENS_BODY_QUATERNION && kind != MB_SENS_BODY_TWIST)
            return "an output sensor (flexible) has no tangent in the C runtime";
    }
    return NULL;
}

/* ------------------------------------------------------------ workspace */
typedef struct {
    double *zr, *z;       /* (nb, 6) joint and accumulated configuration twists, body frame */
    double *v, *dv;       /* (nb, 6) body velocities and their tangents */
    double *a, *da;       /* (nb, 6) accelerations (or gravity in body axes) and tangents */
    double *f, *df;       /* (nb, 6) forces / momenta and tangents */
    double *g, *dg;       /* (nb, 6) second force accumulator (canonical F) */
    double *fx, *dfx;     /* (nb, 6) point-to-point spring forces (fext) and tangents */
    double *dS, *dSr;     /* (nb, 6, 6) tangents of S and of its apparent derivative Sr (universal joints) */
    double *dL;           /* (ns) spring length tangents */
    double *tau, *dtau;   /* (nv) total generalized force and tangent */
    double *vel, *dvel;   /* (nv) velocities and tangent */
    double *qdd, *dcmd, *r2, *r3; /* (nv; r3: nv + nq): accelerations, command tangents B du, scratch */
    double *dq;           /* (nq) projected configuration seed */
    double *block;
    double dgrav[3];      /* tangent of the gravity (world, m/s^2): a frame element's -da */
    double frame_a[3], frame_da[3]; /* a frame element's acceleration a and its tangent da (m/s^2) */
    const double *es, *des; /* the plug-in elements' states (x after [q; v]) and their seed */
    double *desdot;         /* their rates' tangents (dxdot after [q; v]) */
    int accel;            /* a, da hold the accelerations [with gravity] at the solved qdd, dqdd */
} dd_work;

static int work_new(const mbn_data *D, const mb_model *m, dd_work *w) {
    /* a flexible plant's virtual tree (m) is larger than its public state (D) */
    size_t nb6 = 6 * (size_t)D->nb, nv = (size_t)(D->nv > m->nv ? D->nv : m->nv) + 1;
    size_t nq = (size_t)(D->nq > m->nq ? D->nq : m->nq) + 1;
    w->block = malloc(sizeof(double) * (24 * nb6 + 8 * nv + 2 * nq + (size_t)D->ns + 1));
    if (!w->block) return -1;
    double *p = w->block;
    w->zr = p; p += nb6; w->z = p; p += nb6; w->v = p; p += nb6; w->dv = p; p += nb6;
    w->a = p; p += nb6; w->da = p; p += nb6; w->f = p; p += nb6; w->df = p; p += nb6;
    w->g = p; p += nb6; w->dg = p; p += nb6;
    w->fx = p; p += nb6; w->dfx = p; p += nb6;
    w->dS = p; p += 6 * nb6; w->dSr = p; p += 6 * nb6;
    w->dL = p; p += D->ns;
    w->tau = p; p += nv; w->dtau = p; p += nv; w->vel = p; p += nv; w->dvel = p; p += nv;
    w->qdd = p; p += nv; w->dcmd = p; p += nv; w->r2 = p; p += nv;
    w->r3 = p; p += nv + nq; /* also mb_rhs's unused dq/dt (nq) */
    w->dq = p;
    return 0;
}

/* ------------------------------------------------------------ joints */
/* the body-frame twist 2 vec(e* (x) de) / |e|^2 of a quaternion tangent de */
static void quat_twist(const double *e, const double *de, double *eta) {
    double n = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3], s = n > 0 ? 2.0 / n : 0.0, c[3];
    cross3(e + 1, de + 1, c);
    for (int k = 0; k < 3; ++k) eta[k] = s * (e[0] * de[1 + k] - de[0] * e[1 + k] - c[k]);
}

/* the joint twist zr (6, body frame) of joint i along the configuration tangent dq */
static void joint_twist(const mb_model *m, mb_data *ws, int i, const double *q, const double *dq, double *zr) {
    const double *qi = q + m->iq[i], *dqi = dq + m->iq[i], *a1 = B3(m->axis1, i);
    for (int k = 0; k < 6; ++k) zr[k] = 0.0;
    switch (m->jtype[i]) {
    case MB_REVOLUTE:
        for (int k = 0; k < 3; ++k) zr[k] = a1[k] * dqi[0];
        break;
    case MB_PRISMATIC:
        for (int k = 0; k < 3; ++k) zr[3 + k] = a1[k] * dqi[0];
        break;
    case MB_UNIVERSAL: /* R_J = R1(q1) R2(q2): the body-frame twist S dq at the current S */
        for (int j = 0; j < 2; ++j)
            for (int k = 0; k < 6; ++k) zr[k] += ws->S[36 * i + 6 * j + k] * dqi[j];
        break;
    case MB_SPHERICAL:
        quat_twist(qi, dqi, zr);
        break;
    case MB_FREE: {
        /* r = ptree + Rtree p: the body-frame translation E Rtree dp */
        double t[3];
        quat_twist(qi + 3, dqi + 3, zr);
        mv3(B9(m->Rtree, i), dqi, t);
        mv3(B9(ws->E, i), t, zr + 3);
        break;
    }
    default:
        break;
    }
}

/* seed dq of the runtime's configuration: quaternion parts projected onto
 * the tangent of the unit sphere at q/|q| (the runtime normalizes them) */
static void project_seed(const mb_model *m, const double *q, const double *dq, double *out) {
    memcpy(out, dq, sizeof(double) * (size_t)m->nq);
    for (int i = 1; i < m->nb; ++i) {
        int t = m->jtype[i];
        if (t != MB_SPHERICAL && t != MB_FREE) continue;
        int o = m->iq[i] + (t == MB_FREE ? 3 : 0);
        const double *e = q + o;
        double n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3], n = sqrt(n2), s = 0.0;
        if (!(n > 0)) continue;
        for (int k = 0; k < 4; ++k) s += e[k] * dq[o + k];
        for (int k = 0; k < 4; ++k) out[o + k] = (dq[o + k] - e[k] * s / n2) / n;
    }
}

/* z (+)= S qd_i for the columns S (6 x nvi, column-major as in mb_model) of joint i */
static void smul(const mb_model *m, int i, const double *S, const double *qd, double *z, int add) {
    if (!add) for (int k = 0; k < 6; ++k) z[k] = 0.0;
    for (int j = 0; j < m->nvi[i]; ++j)
        for (int k = 0; k < 6; ++k) z[k] += S[6 * j + k] * qd[m->iv[i] + j];
}

/* out[iv + j] = S_j . f for the columns of S (6 x nvi) of joint i, added when add */
static void stmul(const mb_model *m, int i, const double *S, const double *f, double *out, int add) {
    for (int j = 0; j < m->nvi[i]; ++j) {
        double s = dot6(S + 6 * j, f);
        out[m->iv[i] + j] = add ? out[m->iv[i] + j] + s : s;
    }
}

/* the tangents dS, dSr of joint i's S and Sr (after mb_kinematics(q, vel)) along (dq, dvel):
 * only a universal joint's first column b = R2(q2)^T a1 moves, db = dq2 (b x a2), and
 * its Sr = q2d (b x a2) */
static void subspace_tangent(const mb_model *m, mb_data *ws, dd_work *w, int i, const double *dq, const double *dvel) {
    double *dS = B36(w->dS, i), *dSr = B36(w->dSr, i);
    memset(dS, 0, 36 * sizeof(double));
    memset(dSr, 0, 36 * sizeof(double));
    if (m->jtype[i] != MB_UNIVERSAL) return;
    const double *b = B36(ws->S, i), *a2 = B3(m->axis2, i);
    double bxa2[3], dbxa2[3], dq2 = dq[m->iq[i] + 1], q2d = w->vel[m->iv[i] + 1], dq2d = dvel[m->iv[i] + 1];
    cross3(b, a2, bxa2);
    cross3(bxa2, a2, dbxa2); /* (db x a2) / dq2 */
    for (int k = 0; k < 3; ++k) {
        dS[k] = dq2 * bxa2[k];
        dSr[k] = dq2d * bxa2[k] + q2d * dq2 * dbxa2[k];
    }
}

/* ------------------------------------------------------------ passes */
/* Forward pass at (q, vel) after mb_kinematics(q, vel): joint twists,
 * accumulated twists, velocities and their tangents along (dq, dvel); with
 * acc: accelerations a = X a_p + v x S qd + S qdd (gravity at the root when
 * gravity, qdd NULL meaning zero) and their tangents along dqdd (NULL: 0)
 * and, with gravity, along the gravity tangent w->dgrav (the base acceleration
 * -g has tangent -dg). */
static void forward(const mb_model *m, mb_data *ws, dd_work *w, const double *q, const double *dq, const double *dvel, int acc,
                    const double *qdd, const double *dqdd, int gravity) {
    double a0[6] = {0, 0, 0, 0, 0, 0}, da0[6] = {0, 0, 0, 0, 0, 0};
    if (gravity)
        for (int k = 0; k < 3; ++k) { a0[3 + k] = -ws->g[k]; da0[3 + k] = -w->dgrav[k]; }
    for (int k = 0; k < 6; ++k) w->z[k] = w->zr[k] = w->v[k] = w->dv[k] = w->a[k] = w->da[k] = 0.0;
    for (int i = 1; i < m->nb; ++i) {
        int p = m->parent[i];
        const double *E = B9(ws->E, i), *r = B3(ws->r, i), *S = B36(ws->S, i);
        const double *dS = B36(w->dS, i), *Sr = B36(ws->Sr, i), *dSr = B36(w->dSr, i);
        double *zr = B6(w->zr, i), *z = B6(w->z, i), *v = B6(w->v, i), *dv = B6(w->dv, i);
        double Xp[6], t[6], vJ[6], dvJ[6];
        joint_twist(m, ws, i, q, dq, zr);
        subspace_tangent(m, ws, w, i, dq, dvel);
        memcpy(v, B6(ws->v, i), 6 * sizeof(double));
        smul(m, i, S, w->vel, vJ, 0);
        smul(m, i, S, dvel, dvJ, 0);
        smul(m, i, dS, w->vel, dvJ, 1);
        if (p > 0) {
            Xmv(E, r, B6(w->z, p), z);
            Xmv(E, r, B6(ws->v, p), Xp);
            crm(zr, Xp, t);
            Xmv(E, r, B6(w->dv, p), dv);
            for (int k = 0; k < 6; ++k) { z[k] += zr[k]; dv[k] += dvJ[k] - t[k]; }
        } else
            for (int k = 0; k < 6; ++k) { z[k] = zr[k]; dv[k] = dvJ[k]; }
        if (!acc) continue;
        /* a = X a_p + Sr qd + v x S qd + S qdd */
        double *a = B6(w->a, i), *da = B6(w->da, i), c[6];
        Xmv(E, r, p > 0 ? B6(w->a, p) : a0, Xp);
        crm(zr, Xp, t);
        Xmv(E, r, p > 0 ? B6(w->da, p) : da0, da);
        crm(v, vJ, c);
        for (int k = 0; k < 6; ++k) { a[k] = Xp[k] + c[k]; da[k] -= t[k]; }
        smul(m, i, Sr, w->vel, a, 1);
        smul(m, i, Sr, dvel, da, 1);
        smul(m, i, dSr, w->vel, da, 1);
        crm(dv, vJ, c);
        for (int k = 0; k < 6; ++k) da[k] += c[k];
        crm(v, dvJ, c);
        for (int k = 0; k < 6; ++k) da[k] += c[k];
        if (qdd) { smul(m, i, S, qdd, a, 1); smul(m, i, dS, qdd, da, 1); }
        if (dqdd) smul(m, i, S, dqdd, da, 1);
    }
}

/* world position x, velocity V and their tangents of the point rB of body b
 * (world: fixed) after forward() */
static void point_motion(mb_data *ws, const dd_work *w, int b, const double *rB, double *x, double *dx,
                         double *V, double *dV) {
    const double *R = B9(ws->RW, b), *z = B6(w->z, b), *v = B6(w->v, b), *dv = B6(w->dv, b);
    double t[3], u[3], e[3];
    mv3(R, rB, t);
    for (int k = 0; k < 3; ++k) x[k] = ws->pW[3 * b + k] + t[k];
    cross3(z, rB, t);
    for (int k = 0; k < 3; ++k) t[k] += z[3 + k];
    mv3(R, t, dx);
    cross3(v, rB, u);
    for (int k = 0; k < 3; ++k) u[k] += v[3 + k]; /* body-frame point velocity */
    mv3(R, u, V);
    cross3(z, u, e);
    cross3(dv, rB, t);
    for (int k = 0; k < 3; ++k) e[k] += t[k] + dv[3 + k];
    mv3(R, e, dV);
}

/* fext += the body-frame force of the world force F at rB of body b, dfext its tangent */
static void add_point_force(mb_data *ws, const dd_work *w, int b, const double *rB, const double *F,
                            const double *dF) {
    if (b <= 0) return;
    const double *R = B9(ws->RW, b), *z = B6(w->z, b);
    double f[3], df[3], t[3], n[3];
    double *fe = B6(w->fx, b), *dfe = B6(w->dfx, b);
    mtv3(R, F, f);
    mtv3(R, dF, df);
    cross3(z, f, t);
    for (int k = 0; k < 3; ++k) df[k] -= t[k]; /* d(R^T) = -[eta] R^T */
    cross3(rB, f, n);
    for (int k = 0; k < 3; ++k) { fe[k] += n[k]; fe[3 + k] += f[k]; }
    cross3(rB, df, n);
    for (int k = 0; k < 3; ++k) { dfe[k] += n[k]; dfe[3 + k] += df[k]; }
}

/* the point-to-point springs' forces (w->fx) and tangents (w->dfx), the laws of
 * mb_passive_forces, after forward() */
static void spring_forces(const mb_model *m, mb_data *ws, dd_work *w) {
    memset(w->fx, 0, sizeof(double) * 6 * (size_t)m->nb);
    memset(w->dfx, 0, sizeof(double) * 6 * (size_t)m->nb);
    for (int s = 0; s < m->ns; ++s) {
        const double *P = m->springs + SP_N * s;
        int ba = (int)P[SP_BA], bb = (int)P[SP_BB];
        double xa[3], dxa[3], Va[3], dVa[3], xb[3], dxb[3], Vb[3], dVb[3], d[3], dd[3], u[3], du[3];
        point_motion(ws, w, ba, P + SP_PAX, xa, dxa, Va, dVa);
        point_motion(ws, w, bb, P + SP_PBX, xb, dxb, Vb, dVb);
        for (int k = 0; k < 3; ++k) { d[k] = xb[k] - xa[k]; dd[k] = dxb[k] - dxa[k]; }
        double L = sqrt(dot3(d, d));
        w->dL[s] = 0.0;
        if (L < 1e-12) continue;
        for (int k = 0; k < 3; ++k) u[k] = d[k] / L;
        double dL = dot3(u, dd);
        for (int k = 0; k < 3; ++k) du[k] = (dd[k] - u[k] * dL) / L;
        double rel[3], drel[3];
        for (int k = 0; k < 3; ++k) { rel[k] = Vb[k] - Va[k]; drel[k] = dVb[k] - dVa[k]; }
        double Ld = dot3(rel, u), dLd = dot3(drel, u) + dot3(rel, du);
        double F = P[SP_K] * (L - P[SP_L0]) + P[SP_D] * Ld, dF = P[SP_K] * dL + P[SP_D] * dLd;
        double Fw[3], dFw[3];
        for (int k = 0; k < 3; ++k) { Fw[k] = F * u[k]; dFw[k] = dF * u[k] + F * du[k]; }
        add_point_force(ws, w, ba, P + SP_PAX, Fw, dFw);
        for (int k = 0; k < 3; ++k) { Fw[k] = -Fw[k]; dFw[k] = -dFw[k]; }
        add_point_force(ws, w, bb, P + SP_PBX, Fw, dFw);
        w->dL[s] = dL;
    }
    mbn_contact_tangents(m, ws, w->z, w->dv, w->fx, w->dfx); /* contact_dirder.c */
}

/* the plug-in elements' forces (w->fx) and tangents (w->dfx), after forward()
 * (element.h; the runtime's forces are mbn_elements_fext's) */
static void element_forces(mbn_instance *in, dd_work *w) {
    const mbn_data *D = in->data;
    for (int e = 0; e < D->nel; ++e) {
        const mbn_element *el = in->el + e;
        if (!el->cls->force) { /* no point force (joint rows: velocity_tangent; rates: accel_rate's alone) */
            for (int k = 0; k < el->nstate; ++k) w->desdot[el->os + k] = 0.0;
            continue;
        }
        double x[3], dx[3], V[3], dV[3], F[3], dF[3];
        point_motion(in->ws, w, el->body, el->par, x, dx, V, dV);
        double sdot[MBN_ELEMENT_MAX_STATES];
        const double *s = w->es + el->os;
        el->cls->force(el->par + 3, in->t, x, V, s, F, sdot);
        el->cls->tangent(el->par + 3, in->t, x, V, s, dx, dV, w->des + el->os, dF, w->desdot + el->os);
        add_point_force(in->ws, w, el->body, el->par, F, dF);
    }
}

/* the tangents of the elements' accel_rate (element.h) along the solved dqdd (dxdot after q),
 * added to w->desdot: the specific force at the point is the acceleration with the base at -g
 * (forward() with gravity, as the accelerometers) */
static int element_accel_tangents(mbn_instance *in, dd_work *w, const double *x, double *dxdot);

/* force to the parent with its tangent: fp += X^T f, dfp += X^T (zr x* f + df) */
static void to_parent(mb_data *ws, dd_work *w, int i, const double *f, const double *df, double *fp, double *dfp) {
    double t[6];
    const double *E = B9(ws->E, i), *r = B3(ws->r, i);
    crf(B6(w->zr, i), f, t);
    for (int k = 0; k < 6; ++k) t[k] += df[k];
    XTf_add(E, r, f, fp);
    XTf_add(E, r, t, dfp);
}

/* Backward pass of the inverse dynamics after forward(acc): the tangent
 * dtau_id (nv) of ID = S^T f, f = I a + v x* I v summed over the subtree */
static void backward_id(const mb_model *m, mb_data *ws, dd_work *w, double *dtau_id) {
    for (int i = 1; i < m->nb; ++i) {
        const double *I = B36(m->Ibody, i), *v = B6(w->v, i), *dv = B6(w->dv, i);
        double *f = B6(w->f, i), *df = B6(w->df, i), Iv[6], Idv[6], t[6];
        mv6(I, B6(w->a, i), f);
        mv6(I, B6(w->da, i), df);
        mv6(I, v, Iv);
        mv6(I, dv, Idv);
        crf(v, Iv, t);
        for (int k = 0; k < 6; ++k) f[k] += t[k];
        crf(dv, Iv, t);
        for (int k = 0; k < 6; ++k) df[k] += t[k];
        crf(v, Idv, t);
        for (int k = 0; k < 6; ++k) { df[k] += t[k] - w->dfx[6 * i + k]; f[k] -= w->fx[6 * i + k]; }
    }
    for (int i = m->nb - 1; i > 0; --i) {
        stmul(m, i, B36(ws->S, i), B6(w->df, i), dtau_id, 0);
        stmul(m, i, B36(w->dS, i), B6(w->f, i), dtau_id, 1);
        int p = m->parent[i];
        if (p > 0) to_parent(ws, w, i, B6(w->f, i), B6(w->df, i), B6(w->f, p), B6(w->df, p));
    }
}

/* subtree momenta H (w->f) and their tangents (w->df) after forward(): H_i = I v_i + children */
static void subtree_momenta(const mb_model *m, mb_data *ws, dd_work *w) {
    for (int i = 1; i < m->nb; ++i) {
        mv6(B36(m->Ibody, i), B6(w->v, i), B6(w->f, i));
        mv6(B36(m->Ibody, i), B6(w->dv, i), B6(w->df, i));
    }
    for (int i = m->nb - 1; i > 0; --i) {
        int p = m->parent[i];
        if (p > 0) to_parent(ws, w, i, B6(w->f, i), B6(w->df, i), B6(w->f, p), B6(w->df, p));
    }
}

/* the tangent dtau (nv) of the generalized forces after mb_passive_forces
 * (drives, joint springs, dampers, limits) at (q, vel) with commands cmd
 * along (dq, dvel, dcmd): the laws of mb_drive_forces and mb_passive_forces */
static void passive_tangent(const mb_model *m, mb_data *ws, const double *q, const double *vel, const double *cmd,
                            const double *dq, const double *dvel, const double *dcmd, double *dtau) {
    memcpy(dtau, dcmd, sizeof(double) * (size_t)m->nv);
    for (int k = 0; k < m->ndr; ++k) {
        const double *P = m->drives + DR_N * k;
        int iv = (int)P[DR_IV], iq = (int)P[DR_IQ], mode = (int)P[DR_MODE];
        double wv = vel[iv], c = cmd[iv], df = dcmd[iv];
        if (mode == DRIVE_POSITION) {
            double f = P[DR_KP] * (c - q[iq]) - P[DR_KD] * wv;
            df = fabs(f) < P[DR_LIM] ? P[DR_KP] * (dcmd[iv] - dq[iq]) - P[DR_KD] * dvel[iv] : 0.0;
        } else if (mode == DRIVE_VELOCITY) {
            double f = P[DR_KD] * (c - wv);
            df = fabs(f) < P[DR_LIM] ? P[DR_KD] * (dcmd[iv] - dvel[iv]) : 0.0;
        }
        if (P[DR_FC] != 0.0) {
            double th = tanh(wv / P[DR_VS]);
            df -= P[DR_FC] * (1.0 - th * th) * dvel[iv] / P[DR_VS];
        }
        dtau[iv] = df;
    }
    if (!m->has_dof_force) return;
    for (int i = 1; i < m->nb; ++i) {
        if (m->nvi[i] == 0 || m->jtype[i] == MB_FREE || m->jtype[i] == MB_SPHERICAL) continue;
        for (int k = 0; k < m->nvi[i]; ++k) {
            int iv = m->iv[i] + k, iq = m->iq[i] + k;
            const double *P = ws->dof_force + DF_N * iv;
            double d = q[iq], wv = vel[iv], dd = dq[iq], dw = dvel[iv];
            dtau[iv] += mbn_dof_force_tangent(P, d, wv, dd, dw);
        }
    }
    mbn_ballspring_tangents(m, ws, q, vel, dq, dvel, dtau); /* ballspring_dirder.c */
}

/* tangent dqdot (nq) of the configuration rate dq/dt (mb_qdot) */
static void qdot_tangent(const mb_model *m, const double *q, const double *vel, const double *dq, const double *dvel,
                         double *dqdot) {
    if (m->vector_q) { memcpy(dqdot, dvel, sizeof(double) * (size_t)m->nv); return; }
    for (int i = 1; i < m->nb; ++i) {
        const double *qi = q + m->iq[i], *dqi = dq + m->iq[i], *vi = vel + m->iv[i], *dvi = dvel + m->iv[i];
        double *o = dqdot + m->iq[i];
        const double *e = qi, *de = dqi, *wv = vi, *dwv = dvi;
        switch (m->jtype[i]) {
        case MB_FREE: {
            /* d(R vlin) = R (eta x vlin + dvlin) */
            double R[9], eta[3], t[3];
            quat_rot(qi + 3, R);
            quat_twist(qi + 3, dqi + 3, eta);
            cross3(eta, vi + 3, t);
            for (int k = 0; k < 3; ++k) t[k] += dvi[3 + k];
            mv3(R, t, o);
            o += 3; e = qi + 3; de = dqi + 3;
        } /* fall through: the quaternion rate */
        /* FALLTHROUGH */
        case MB_SPHERICAL:
            /* quat_rate is bilinear in (e, w) */
            o[0] = -0.5 * (de[1] * wv[0] + de[2] * wv[1] + de[3] * wv[2] + e[1] * dwv[0] + e[2] * dwv[1] + e[3] * dwv[2]);
            o[1] = 0.5 * (de[0] * wv[0] + de[2] * wv[2] - de[3] * wv[1] + e[0] * dwv[0] + e[2] * dwv[2] - e[3] * dwv[1]);
            o[2] = 0.5 * (de[0] * wv[1] + de[3] * wv[0] - de[1] * wv[2] + e[0] * dwv[1] + e[3] * dwv[0] - e[1] * dwv[2]);
            o[3] = 0.5 * (de[0] * wv[2] + de[1] * wv[1] - de[2] * wv[0] + e[0] * dwv[2] + e[1] * dwv[1] - e[2] * dwv[0]);
            break;
        default:
            for (int k = 0; k < m->nqi[i]; ++k) o[k] = dvi[k];
        }
    }
}

/* ------------------------------------------------------------ outputs */
/* world tangent of the point rB of body b: R (z_ang x rB + z_lin) */
static void point_tangent(mb_data *ws, const dd_work *w, int b, const double *rB, double *dx) {
    double t[3];
    const double *z = B6(w->z, b);
    cross3(z, rB, t);
    for (int k = 0; k < 3; ++k) t[k] += z[3 + k];
    mv3(B9(ws->RW, b), t, dx);
}

/* tangent de (4) of body b's world orientation quaternion e (mb_body_quaternion: unit, w >= 0)
 * under the body-frame rotation z_ang (dR = R [z_ang]x): de = e (x) (0, z_ang) / 2 */
static void body_quaternion_tangent(const mb_model *m, mb_data *ws, const dd_work *w, int b, double *de) {
    double e[4], t[3];
    const double *z = B6(w->z, b);
    mb_body_quaternion(m, ws, b, e);
    cross3(e + 1, z, t);
    de[0] = -0.5 * dot3(e + 1, z);
    for (int k = 0; k < 3; ++k) de[1 + k] = 0.5 * (e[0] * z[k] + t[k]);
}

/* tangent dtw (6) of body b's world twist (mb_body_twist: R v_ang, R v_lin of the body-frame
 * velocity v): d(R v) = R (z_ang x v + dv) for each half */
static void body_twist_tangent(mb_data *ws, const dd_work *w, int b, double *dtw) {
    const double *v = B6(w->v, b), *dv = B6(w->dv, b), *z = B6(w->z, b);
    for (int h = 0; h < 2; ++h) {
        double t[3];
        cross3(z, v + 3 * h, t);
        for (int k = 0; k < 3; ++k) t[k] += dv[3 * h + k];
        mv3(B9(ws->RW, b), t, dtw + 3 * h);
    }
}

/* the acceleration acc (3, world axes, m/s^2) of the point rB of body b and
 * its tangent dacc, after forward(acc) at the solved qdd, dqdd (w->accel):
 * mb_point_acceleration's aB = a_lin + w x (w x rB + v_lin) + a_ang x rB
 * (body frame) differentiated, then d(R aB) = R (z_ang x aB + daB). With the
 * base acceleration -g_f of a frame element's frame (g_f = g - a) this is the
 * specific force of mbn_motion_sensors_eval: the point's acceleration in the
 * frame, plus the frame's a, minus g. */
static void accel_tangent(mb_data *ws, const dd_work *w, int b, const double *rB, double *acc, double *dacc) {
    const double *v = B6(w->v, b), *dv = B6(w->dv, b), *a = B6(w->a, b), *da = B6(w->da, b), *z = B6(w->z, b);
    double t[3], dt[3], u[3], e[3], aB[3], daB[3];
    cross3(v, rB, t);
    for (int k = 0; k < 3; ++k) t[k] += v[3 + k]; /* body-frame point velocity */
    cross3(dv, rB, dt);
    for (int k = 0; k < 3; ++k) dt[k] += dv[3 + k];
    cross3(v, t, u);
    cross3(a, rB, e);
    for (int k = 0; k < 3; ++k) aB[k] = a[3 + k] + u[k] + e[k];
    cross3(dv, t, u);
    cross3(v, dt, e);
    for (int k = 0; k < 3; ++k) daB[k] = da[3 + k] + u[k] + e[k];
    cross3(da, rB, e);
    for (int k = 0; k < 3; ++k) daB[k] += e[k];
    cross3(z, aB, e);
    for (int k = 0; k < 3; ++k) e[k] += daB[k];
    mv3(B9(ws->RW, b), aB, acc);
    mv3(B9(ws->RW, b), e, dacc);
}

static int element_accel_tangents(mbn_instance *in, dd_work *w, const double *x, double *dxdot) {
    const mbn_data *D = in->data;
    mb_data *ws = in->ws;
    int any = 0;
    for (int e = 0; e < D->nel; ++e) any |= in->el[e].cls->accel_rate != NULL;
    if (!any) return 0;
    if (!w->accel) { /* the accelerations at the solved qdd and their tangents along dqdd */
        mb_kinematics(in->m, ws, x, w->vel);
        forward(in->m, ws, w, x, w->dq, w->dvel, 1, w->qdd, dxdot + D->nq, 1);
        w->accel = 1;
    }
    for (int e = 0; e < D->nel; ++e) {
        const mbn_element *el = in->el + e;
        if (!el->cls->accel_rate) continue;
        double xp[3], dxp[3], V[3], dV[3], A[3], dA[3];
        point_motion(ws, w, el->body, el->par, xp, dxp, V, dV);
        accel_tangent(ws, w, el->body, el->par, A, dA);
        el->cls->accel_rate_tangent(el->par + 3, in->t, xp, V, A, w->es + el->os, dxp, dV, dA, w->des + el->os,
                                    w->desdot + el->os);
    }
    return 0;
}

/* tangents dy (ny) of the outputs (mb_sensors_eval) after forward() at the
 * state x along (dx, du) with velocity tangent w->dvel */
static void outputs_tangent(mbn_instance *in, dd_work *w, const double *x, const double *dx, const double *du,
                            double *dy) {
    const mbn_data *D = in->data;
    const mb_model *m = in->m;
    mb_data *ws = in->ws;
    const double *q = x;
    double dke = 0.0, dpe = 0.0, dhl[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 1; i < m->nb; ++i) {
        const double *I = B36(m->Ibody, i), *v = B6(w->v, i), *dv = B6(w->dv, i), *z = B6(w->z, i);
        double Idv[6], Iv[6], t[6], dc[3];
        mv6(I, dv, Idv);
        dke += dot6(v, Idv);
        point_tangent(ws, w, i, in->mp.com + 3 * i, dc);
        dpe -= in->mp.mass[i] * (dc[0] * ws->g[0] + dc[1] * ws->g[1] + dc[2] * ws->g[2]);
        /* world momentum about the origin X_W^* (I v); its tangent X_W^* (z x* I v + I dv)
         * (the term z x* moves both the axes and the origin) */
        mv6(I, v, Iv);
        crf(z, Iv, t);
        for (int k = 0; k < 6; ++k) t[k] += Idv[k];
        const double *R = B9(ws->RW, i), *p = B3(ws->pW, i);
        double n[3], f[3], pf[3];
        mv3(R, t, n);
        mv3(R, t + 3, f);
        cross3(p, f, pf);
        for (int k = 0; k < 3; ++k) { dhl[k] += n[k] + pf[k]; dhl[3 + k] += f[k]; }
    }
    if (m->has_dof_force)
        for (int i = 1; i < m->nb; ++i) {
            if (m->nvi[i] == 0 || m->jtype[i] == MB_FREE || m->jtype[i] == MB_SPHERICAL) continue;
            for (int k = 0; k < m->nvi[i]; ++k) {
                const double *P = ws->dof_force + DF_N * (m->iv[i] + k);
                double d = q[m->iq[i] + k], dd = w->dq[m->iq[i] + k];
                double pen = d < P[DF_LO] ? d - P[DF_LO] : (d > P[DF_HI] ? d - P[DF_HI] : 0.0);
                dpe += (P[DF_K] * (d - P[DF_Q0]) + P[DF_KLIM] * pen) * dd;
            }
        }
    for (int s = 0; s < m->ns; ++s) {
        const double *P = m->springs + SP_N * s;
        double xa[3], xb[3], d[3];
        mb_point_position(m, ws, (int)P[SP_BA], P + SP_PAX, xa);
        mb_point_position(m, ws, (int)P[SP_BB], P + SP_PBX, xb);
        for (int k = 0; k < 3; ++k) d[k] = xb[k] - xa[k];
        dpe += P[SP_K] * (sqrt(dot3(d, d)) - P[SP_L0]) * w->dL[s];
    }
    dpe += mbn_contact_energy_tangent(m, ws, w->z) + mbn_ballspring_energy_tangent(m, ws, q, w->dq);
    for (int k = 0; k < D->ny; ++k) {
        const mb_sensor *s = in->sens + k;
        switch (s->kind) {
        case MB_SENS_STATE: dy[k] = s->index < D->nq ? w->dq[s->index] : dx[s->index]; break;
        case MB_SENS_VELOCITY: dy[k] = w->dvel[s->index]; break;
        case MB_SENS_POINT: {
            double t[3];
            point_tangent(ws, w, s->index, s->par, t);
            dy[k] = t[s->axis];
            break;
        }
        case MB_SENS_KINETIC: dy[k] = dke; break;
        case MB_SENS_POTENTIAL:
            dy[k] = dpe + (s->index && D->nel ? mbn_elements_energy_tangent(D->nel, in->el, q, w->vel, w->es, w->es,
                                                                            w->dq, w->dvel, w->des)
                                              : 0.0);
            break;
        case MB_SENS_QUATERNION:
            /* e_a / |e| of the runtime's unit e: the projected seed itself */
            dy[k] = w->dq[s->index + s->axis];
            break;
        case MB_SENS_MOMENTUM: dy[k] = dhl[s->axis]; break;
        case MB_SENS_BODY_QUATERNION: {
            double de[4];
            body_quaternion_tangent(m, ws, w, s->index, de);
            dy[k] = de[s->axis];
            break;
        }
        case MB_SENS_BODY_TWIST: {
            double dtw[6];
            body_twist_tangent(ws, w, s->index, dtw);
            dy[k] = dtw[s->axis];
            break;
        }
        case MBN_SENS_ACCELEROMETER: {
            double a[3], da[3];
            if (!w->accel) { dy[k] = 0.0 / 0.0; break; }
            accel_tangent(ws, w, s->index, s->par, a, da);
            if (s->axis < 3) dy[k] = da[s->axis];
            else {
                double n = sqrt(dot3(a, a)); /* |a| is smooth off a = 0 */
                dy[k] = n > 0 ? dot3(a, da) / n : 0.0;
            }
            break;
        }
        case MBN_SENS_FRAME_ACCEL: dy[k] = w->frame_da[s->axis]; break;
        case MBN_SENS_CABLE_TENSION: dy[k] = mbn_cable_tension_tangent(m, ws, w->z, w->dv, s->index); break;
        case MBN_SENS_DISPLACEMENT: {
            double t[3];
            point_tangent(ws, w, s->index, s->par, t);
            dy[k] = t[s->axis];
            break;
        }
        case MB_SENS_LINEAR: {
            double acc = 0.0;
            const double *wt = s->par + 1;
            for (int j = 0; j < D->nv + D->nu; ++j)
                if (wt[j] != 0.0) acc += wt[j] * (j < D->nv ? w->dvel[j] : du[j - D->nv]);
            dy[k] = s->par[0] * acc;
            break;
        }
        case MBN_SENS_ELEMENT: { /* element.h: its output's tangent at its point's motion */
            const mbn_element *el = in->el + s->index;
            double xp[3], dxp[3], V[3], dV[3];
            point_motion(ws, w, el->body, el->par, xp, dxp, V, dV);
            dy[k] = el->cls->output_tangent(el->par + 3, in->t, xp, V, w->es + el->os, s->axis, dxp, dV,
                                            w->des + el->os);
            break;
        }
        default: dy[k] = 0.0 / 0.0;
        }
    }
}

/* ------------------------------------------------------------ the tangent of the whole model */
/* velocity variables: dv/dt = qdd with ID(q, v, qdd) - fext(q, v) = tau(q, v, u), so
 * dqdd = M^-1 (dtau - dID|dqdd=0) */
static int velocity_tangent(mbn_instance *in, dd_work *w, const double *dvel, double *dvdot) {
    mb_model *m = in->m;
    mb_data *ws = in->ws;
    const double *q = in->x;
    const mbn_data *D = in->data;
    if (D->nel) mbn_elements_fext(m, ws, D->nel, in->el, in->t, q, w->vel, w->es, in->efext, NULL);
    const double *tau = in->tau;
    if (mbn_elements_have_joints(D->nel, in->el)) { /* the elements' joint rows (element.h), r2 as scratch */
        memcpy(w->r2, in->tau, sizeof(double) * (size_t)m->nv);
        mbn_elements_joint_forces(D->nel, in->el, in->t, q, w->vel, w->es, w->es, w->r2);
        tau = w->r2;
    }
    int err = mb_rhs(m, ws, q, w->vel, tau, D->nel ? in->efext : NULL, w->r3 /* dq/dt: unused */, w->qdd);
    if (err) return err;
    mb_kinematics(m, ws, q, w->vel);
    forward(m, ws, w, q, w->dq, dvel, 1, w->qdd, NULL, 1);
    spring_forces(m, ws, w);
    element_forces(in, w);
    backward_id(m, ws, w, w->r2);
    passive_tangent(m, ws, q, w->vel, in->tau, w->dq, dvel, w->dcmd, w->dtau);
    for (int k = 0; k < m->nv; ++k) w->dtau[k] -= w->r2[k];
    if (D->nel) mbn_elements_joint_tangents(D->nel, in->el, in->t, q, w->vel, w->es, w->es, w->dq, dvel, w->des, w->dtau);
    return mb_minv(m, ws, q, w->dtau, dvdot);
}

/* canonical variables: v = M^-1 p, dv = M^-1 (dp - d(M v)/dq dq) into w->dvel, then
 * dp/dt = tau + S^T (F - v x* H) + Sr^T H (mb_sweep) differentiated term by term */
static int canonical_tangent(mbn_instance *in, dd_work *w, const double *dp, double *dpdot) {
    mb_model *m = in->m;
    mb_data *ws = in->ws;
    const double *q = in->x;
    double *dvel = w->dvel;
    int err = mb_minv(m, ws, q, q + m->nq, w->vel);
    if (err) return err;
    mb_kinematics(m, ws, q, w->vel);
    for (int k = 0; k < m->nv; ++k) w->r2[k] = 0.0;
    forward(m, ws, w, q, w->dq, w->r2, 0, NULL, NULL, 0);
    subtree_momenta(m, ws, w);
    for (int i = 1; i < m->nb; ++i)
        for (int j = 0; j < m->nvi[i]; ++j)
            w->r3[m->iv[i] + j] = dp[m->iv[i] + j] - dot6(B36(ws->S, i) + 6 * j, B6(w->df, i)) -
                                  dot6(B36(w->dS, i) + 6 * j, B6(w->f, i));
    err = mb_minv(m, ws, q, w->r3, dvel);
    if (err) return err;
    mb_kinematics(m, ws, q, w->vel);
    forward(m, ws, w, q, w->dq, dvel, 0, NULL, NULL, 0);
    spring_forces(m, ws, w);
    subtree_momenta(m, ws, w); /* H, dH */
    /* F: gravity I [0; g] and the springs' forces, summed over the subtree (w->g), and tangents */
    double ag0[6] = {0, 0, 0, ws->g[0], ws->g[1], ws->g[2]};
    for (int i = 1; i < m->nb; ++i) {
        int p = m->parent[i];
        const double *E = B9(ws->E, i), *r = B3(ws->r, i);
        double *ag = B6(w->a, i), *dag = B6(w->da, i), t[6];
        Xmv(E, r, p > 0 ? B6(w->a, p) : ag0, ag);
        if (p > 0) Xmv(E, r, B6(w->da, p), dag);
        else for (int k = 0; k < 6; ++k) dag[k] = 0.0;
        crm(B6(w->zr, i), ag, t);
        for (int k = 0; k < 6; ++k) dag[k] -= t[k];
        mv6(B36(m->Ibody, i), ag, B6(w->g, i));
        mv6(B36(m->Ibody, i), dag, B6(w->dg, i));
        for (int k = 0; k < 6; ++k) { w->g[6 * i + k] += w->fx[6 * i + k]; w->dg[6 * i + k] += w->dfx[6 * i + k]; }
    }
    for (int i = m->nb - 1; i > 0; --i) {
        int p = m->parent[i];
        if (p > 0) to_parent(ws, w, i, B6(w->g, i), B6(w->dg, i), B6(w->g, p), B6(w->dg, p));
    }
    passive_tangent(m, ws, q, w->vel, in->tau, w->dq, dvel, w->dcmd, w->dtau);
    for (int i = 1; i < m->nb; ++i) {
        const double *H = B6(w->f, i), *dH = B6(w->df, i), *v = B6(w->v, i), *dv = B6(w->dv, i);
        double G[6], G0[6], t[6];
        crf(dv, H, G);
        crf(v, dH, t);
        crf(v, H, G0);
        for (int k = 0; k < 6; ++k) { G[k] = B6(w->dg, i)[k] - G[k] - t[k]; G0[k] = B6(w->g, i)[k] - G0[k]; }
        for (int j = 0; j < m->nvi[i]; ++j) {
            int iv = m->iv[i] + j;
            dpdot[iv] = w->dtau[iv] + dot6(B36(ws->S, i) + 6 * j, G) + dot6(B36(w->dS, i) + 6 * j, G0) +
                        dot6(B36(w->dSr, i) + 6 * j, H) + dot6(B36(ws->Sr, i) + 6 * j, dH);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ flexible plants */
/* the passes above on a flexible plant's virtual tree (flex_dirder.h) */
static void vtree_id(mbn_instance *in, void *wp, const double *c, const double *cd, const double *cdd,
                     const double *cmd, const double *dc, const double *dcd, const double *dcdd, const double *dcmd,
                     double *id, double *did, double *dpass) {
    dd_work *w = wp;
    mb_model *m = in->m;
    mb_data *ws = in->ws;
    memcpy(w->vel, cd, sizeof(double) * (size_t)m->nv);
    memcpy(w->dvel, dcd, sizeof(double) * (size_t)m->nv);
    mb_kinematics(m, ws, c, cd);
    forward(m, ws, w, c, dc, dcd, 1, cdd, dcdd, 1);
    spring_forces(m, ws, w);
    backward_id(m, ws, w, did);
    for (int i = 1; i < m->nb; ++i) stmul(m, i, B36(ws->S, i), B6(w->f, i), id, 0);
    if (dpass) passive_tangent(m, ws, c, cd, cmd, dc, dcd, dcmd, dpass);
}

/* the virtual tree's sensors (outputs_tangent at the virtual state c along dc) */
static void vtree_outputs(mbn_instance *in, void *wp, const double *c, const double *dc, const double *dx,
                          const double *du, double *dy) {
    dd_work *w = wp;
    memcpy(w->dq, dc, sizeof(double) * (size_t)in->m->nq);
    outputs_tangent(in, w, c, dx, du, dy);
}

static int flex_tangent(mbn_instance *in, dd_work *w, const double *dx, const double *du, double *dxdot,
                        double *dy) {
    mbn_vtree_tangents ops = {w, vtree_id, vtree_outputs};
    return mbn_flex_tangent(in, &ops, dx, du, w->dcmd, dxdot, dy); /* flex_dirder.c */
}

/* dxdot (nx) and dy (ny) along (dx (nx), du (nu)) at the instance's state and inputs */
static int tangent(mbn_instance *in, dd_work *w, const double *dx, const double *du, double *dxdot, double *dy) {
    const mbn_data *D = in->data;
    mb_model *m = in->m;
    mb_data *ws = in->ws;
    const double *x = in->x, *B = in->d + D->o_B;
    int nq = D->nq, nv = D->nv, err;
    for (int r = 0; r < nv; ++r) {
        double s = 0.0;
        for (int c = 0; c < D->nu; ++c) s += B[D->nu * r + c] * du[c];
        w->dcmd[r] = s;
    }
    /* the gravity's tangent (forward() reads it) is zero but for a frame element's, set below;
     * a flexible plant has none (flex_dirder.c refuses frame elements) */
    w->accel = 0;
    for (int r = 0; r < 3; ++r) w->dgrav[r] = w->frame_a[r] = w->frame_da[r] = 0.0;
    if (D->flex) return flex_tangent(in, w, dx, du, dxdot, dy);
    project_seed(m, x, dx, w->dq);
    for (int k = nq + nv; k < D->nx; ++k) dxdot[k] = 0.0;
    /* a frame element (element.h): the model's dynamics with gravity g_f = g - a(t, u),
     * whose tangent is -da along du */
    double g0[3];
    memcpy(g0, ws->g, sizeof g0);
    const mbn_element *fr = mbn_elements_frame(D->nel, in->el);
    int motion = 0;
    for (int k = 0; k < D->ny; ++k) motion |= in->sens[k].kind == MBN_SENS_ACCELEROMETER;
    if (fr) {
        mbn_frame_gravity(fr, in->t, in->u, D->nu, g0, ws->g, w->frame_a);
        fr->cls->frame_accel_tangent(fr->par + 3, in->t, in->u, D->nu, du, w->frame_da);
        for (int r = 0; r < 3; ++r) w->dgrav[r] = -w->frame_da[r];
    }
    w->es = x + nq + nv;
    w->des = dx + nq + nv;
    w->desdot = dxdot + nq + nv;
    if (D->canonical) err = canonical_tangent(in, w, dx + nq, dxdot + nq);
    else {
        memcpy(w->vel, x + nq, sizeof(double) * (size_t)nv);
        memcpy(w->dvel, dx + nq, sizeof(double) * (size_t)nv);
        err = velocity_tangent(in, w, w->dvel, dxdot + nq);
    }
    if (!err && (fr || motion)) {
        /* the accelerations at the solved qdd and their tangents along dqdd (with the
         * frame's gravity): the accelerometers and the elements' accel_rate (a HIC recorder's) */
        mb_kinematics(m, ws, x, w->vel);
        forward(m, ws, w, x, w->dq, w->dvel, 1, w->qdd, dxdot + nq, 1);
        w->accel = 1;
    }
    if (!err && D->nel) err = element_accel_tangents(in, w, x, dxdot);
    memcpy(ws->g, g0, sizeof g0); /* the outputs' energies read the model's own gravity */
    if (err) return err < 0 ? -err : err;
    qdot_tangent(m, x, w->vel, w->dq, w->dvel, dxdot);
    outputs_tangent(in, w, x, dx, du, dy);
    return 0;
}

int mbn_directional_derivative(mbn_instance *in, size_t nknown, const int *ik, const double *seed, size_t nunknown,
                               const int *iu, double *sens) {
    const mbn_data *D = in->data;
    dd_work w;
    size_t nx = (size_t)D->nx, nu = (size_t)D->nu, ny = (size_t)D->ny;
    double *buf = calloc(2 * (nx + nu + ny) + 1, sizeof(double));
    if (!buf || work_new(D, in->m, &w)) { free(buf); return MBN_NOMEM; }
    double *dxu = buf, *out = buf + nx + nu;
    for (size_t j = 0; j < nknown; ++j) dxu[ik[j]] += seed[j];
    int err = tangent(in, &w, dxu, dxu + nx, out, out + nx);
    if (!err)
        for (size_t k = 0; k < nunknown; ++k) sens[k] = out[iu[k]];
    free(w.block);
    free(buf);
    return err;
}
