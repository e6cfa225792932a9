/*
 * O(N) recursive multibody algorithms on the flat model of mb.h.
 *
 * rnea:  recursive Newton-Euler inverse dynamics (Luh, Walker, Paul 1980;
 *        its outward and inward passes as in RBDA Table 5.1).
 * crba:  composite-rigid-body joint-space inertia (RBDA Table 6.2), computed
 *        in world-aligned coordinates and only over the nonzero pattern of
 *        branch-induced sparsity (RBDA ch. 6); its LTL and LTDL factorizations
 *        over the same pattern, and forward dynamics through them.
 * aba:   articulated-body forward dynamics (RBDA Table 7.1).
 * minv:  M^-1 b by the articulated-body passes with zero velocity and gravity.
 * momentum / sweep: generalized momenta p = M qd and the canonical-variable
 *        equations of Shimanovsky and Ivanov (2013; see canonical.py), dp/dt = tau + S^T (F - v x* H) + Sring^T H,
 *        with H the subtree momentum and F the subtree's applied forces.
 * RBDA: R. Featherstone, Rigid Body Dynamics Algorithms, Springer, 2008.
 * Symbols follow RBDA: Xup, S, vJ, cJ, c, IA, pA, U, D, u.
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "drives.h"
#include "mb.h"
#include "spatial.h"

#define B6(p, i) ((p) + 6 * (i))
#define B36(p, i) ((p) + 36 * (i))
#define B9(p, i) ((p) + 9 * (i))
#define B3(p, i) ((p) + 3 * (i))

static void jcalc_subspace(const mb_model *m, mb_data *d, int i);
static int dof_structure(mb_model *m);

/* f = I_i s for body i's spatial inertia (mv6 over the entries that are not
 * structural zeros when the model's inertias are rigid: rigid_inertia) */
static inline void body_inertia_mv(const mb_model *m, int i, const double *s, double *f) {
    const double *I = B36(m->Ibody, i);
    if (m->rigid_inertia) rigid_inertia_mv(I, s, f);
    else mv6(I, s, f);
}

/* k when a is +-e_k exactly (its sign in *sign), else -1 */
static int unit_axis(const double *a, double *sign) {
    for (int k = 0; k < 3; ++k) {
        int j = (k + 1) % 3, l = (k + 2) % 3;
        if (a[j] == 0.0 && a[l] == 0.0 && (a[k] == 1.0 || a[k] == -1.0)) {
            *sign = a[k];
            return k;
        }
    }
    return -1;
}

static int is_identity3(const double *R) {
    for (int k = 0; k < 9; ++k)
        if (R[k] != (k % 4 == 0 ? 1.0 : 0.0)) return 0;
    return 1;
}

/* whether the 6x6 I has the zeros of a rigid body's spatial inertia about
 * its origin, [Ibar h~; h~^T m 1] (the entries rigid_inertia_mv skips) */
static int is_rigid_inertia(const double *I) {
    static const int zeros[12] = {3, 10, 17, 18, 22, 23, 25, 27, 29, 32, 33, 34};
    for (int k = 0; k < 12; ++k)
        if (I[zeros[k]] != 0.0) return 0;
    return 1;
}

/* The fast-path structure of every joint (rotax, sax, ssg) and the dof tree
 * of the sparse route (dof_structure): mb_pack's last step (pack.c).
 * Returns 0, or -1 on allocation failure. */
int mb_model_derive(mb_model *m) {
    int nb = m->nb;
    m->rotax = calloc((size_t)nb + 1, sizeof(int));
    m->sax = calloc((size_t)nb + 1, sizeof(int));
    m->ssg = calloc((size_t)nb + 1, sizeof(double));
    m->Rrod = calloc((size_t)nb * 18 + 1, sizeof(double));
    if (!m->rotax || !m->sax || !m->ssg || !m->Rrod) return -1;
    m->vector_q = 1;
    m->rigid_inertia = 1;
    for (int i = 0; i < m->nb; ++i) m->rigid_inertia &= is_rigid_inertia(B36(m->Ibody, i));
    for (int i = 0; i < m->nb; ++i) {
        if (m->jtype[i] == MB_SPHERICAL || m->jtype[i] == MB_FREE) m->vector_q = 0;
        double sg = 1.0;
        int t = m->jtype[i], k = i > 0 ? unit_axis(B3(m->axis1, i), &sg) : -1;
        int tree_id = i > 0 && is_identity3(B9(m->Rtree, i));
        m->rotax[i] = -1;
        m->sax[i] = -1;
        m->ssg[i] = 1.0;
        if (i == 0) continue;
        if (t == MB_REVOLUTE && k >= 0) {
            m->sax[i] = k;
            m->ssg[i] = sg;
            if (tree_id) m->rotax[i] = k;
        } else if (t == MB_PRISMATIC && k >= 0) {
            m->sax[i] = 3 + k;
            m->ssg[i] = sg;
        }
        if ((t == MB_PRISMATIC || t == MB_FIXED) && tree_id) m->rotax[i] = 3;
        if (t == MB_REVOLUTE && m->rotax[i] < 0) {
            const double *a = B3(m->axis1, i);
            double A[9] = {0, -a[2], a[1], a[2], 0, -a[0], -a[1], a[0], 0}, A2[9];
            mm3(A, A, A2);
            mm3(B9(m->Rtree, i), A, m->Rrod + 18 * i);
            mm3(B9(m->Rtree, i), A2, m->Rrod + 18 * i + 9);
        }
    }
    return dof_structure(m);
}

void mb_free(mb_model *m) {
    if (!m) return;
    void *p[] = {m->parent, m->jtype, m->iq, m->iv, m->nqi, m->nvi, m->axis1, m->axis2,
                 m->Rtree, m->ptree, m->Ibody, m->dof_force, m->springs, m->contacts, m->cables, m->drives,
                 m->rotax, m->sax, m->ssg, m->Rrod, m->lambda, m->lrun, m->rowadr, m->lcol, m->root};
    for (size_t k = 0; k < sizeof(p) / sizeof(p[0]); ++k) free(p[k]);
    free(m);
}

mb_data *mb_data_new(const mb_model *m) {
    mb_data *d = calloc(1, sizeof(mb_data));
    if (!d) return NULL;
    size_t nb = (size_t)m->nb;
    d->model = m;
    d->E = calloc(nb * 9, sizeof(double));
    d->r = calloc(nb * 3, sizeof(double));
    d->RW = calloc(nb * 9, sizeof(double));
    d->pW = calloc(nb * 3, sizeof(double));
    d->S = calloc(nb * 36, sizeof(double));
    d->Sr = calloc(nb * 36, sizeof(double));
    d->cJ = calloc(nb * 6, sizeof(double));
    d->v = calloc(nb * 6, sizeof(double));
    d->c = calloc(nb * 6, sizeof(double));
    d->a = calloc(nb * 6, sizeof(double));
    d->f = calloc(nb * 6, sizeof(double));
    d->IA = calloc(nb * 36, sizeof(double));
    d->pA = calloc(nb * 6, sizeof(double));
    d->U = calloc(nb * 36, sizeof(double));
    d->Dinv = calloc(nb * 36, sizeof(double));
    d->uu = calloc(nb * 6, sizeof(double));
    d->fext = calloc(nb * 6, sizeof(double));
    d->tau = calloc((size_t)m->nv + 1, sizeof(double));
    d->work = calloc((size_t)8 * (size_t)(m->nq + m->nv) + 8, sizeof(double));
    d->dof_force = calloc((size_t)DF_N * (size_t)m->nv + 1, sizeof(double));
    /* the sparse route's H and factor, held only up to MB_SPARSE_MAX_NV */
    int sparse = m->nv > 0 && m->nv <= MB_SPARSE_MAX_NV;
    d->Hs = sparse ? malloc(sizeof(double) * (size_t)m->nv * (size_t)m->nv) : NULL;
    if ((sparse && !d->Hs) || !d->E || !d->r || !d->RW || !d->pW || !d->S || !d->Sr || !d->cJ || !d->v || !d->c ||
        !d->a || !d->f || !d->IA || !d->pA || !d->U || !d->Dinv || !d->uu || !d->fext ||
        !d->tau || !d->work || !d->dof_force) {
        mb_data_free(d);
        return NULL;
    }
    memcpy(d->g, m->g, sizeof d->g);
    if (m->nv > 0) memcpy(d->dof_force, m->dof_force, sizeof(double) * (size_t)DF_N * (size_t)m->nv);
    /* the world body, and the configuration-independent subspaces */
    d->RW[0] = d->RW[4] = d->RW[8] = 1.0;
    for (int i = 1; i < m->nb; ++i) jcalc_subspace(m, d, i);
    return d;
}

void mb_data_free(mb_data *d) {
    if (!d) return;
    void *p[] = {d->E, d->r, d->RW, d->pW, d->S, d->Sr, d->cJ, d->v, d->c, d->a, d->f, d->IA, d->pA, d->U,
                 d->Dinv, d->uu, d->fext, d->tau, d->work, d->dof_force, d->Hs};
    for (size_t k = 0; k < sizeof(p) / sizeof(p[0]); ++k) free(p[k]);
    free(d);
}

/* ------------------------------------------------------------------ joints */

/* The configuration-independent entries of joint i's motion subspace S
 * (columns, body frame); Sr and the other entries stay zero (set once). */
static void jcalc_subspace(const mb_model *m, mb_data *d, int i) {
    const double *a1 = B3(m->axis1, i), *a2 = B3(m->axis2, i);
    double *S = B36(d->S, i);
    memset(S, 0, 36 * sizeof(double));
    memset(B36(d->Sr, i), 0, 36 * sizeof(double));
    switch (m->jtype[i]) {
    case MB_REVOLUTE:
        S[0] = a1[0]; S[1] = a1[1]; S[2] = a1[2];
        break;
    case MB_PRISMATIC:
        S[3] = a1[0]; S[4] = a1[1]; S[5] = a1[2];
        break;
    case MB_SPHERICAL:
        S[0] = 1.0; S[6 + 1] = 1.0; S[12 + 2] = 1.0;
        break;
    case MB_FREE:
        for (int k = 0; k < 6; ++k) S[6 * k + k] = 1.0;
        break;
    case MB_UNIVERSAL:
        S[6] = a2[0]; S[7] = a2[1]; S[8] = a2[2];
        break;
    case MB_PLANAR:
        S[12 + 2] = 1.0; /* e_z */
        break;
    default:
        break;
    }
}

/* Joint transform (R_J, p_J), and the configuration-dependent entries of
 * the motion subspace S (columns, body frame) and of its apparent
 * derivative Sr = dS/dt, for joint i at (q, qd); qd may be NULL (Sr = 0). */
static void jcalc(const mb_model *m, mb_data *d, int i, const double *q, const double *qd,
                  double *RJ, double *pJ) {
    const double *a1 = B3(m->axis1, i), *a2 = B3(m->axis2, i);
    double *S = B36(d->S, i), *Sr = B36(d->Sr, i);
    const double *qi = q + m->iq[i];
    pJ[0] = pJ[1] = pJ[2] = 0.0;
    switch (m->jtype[i]) {
    default: /* MB_FIXED */
        RJ[0] = RJ[4] = RJ[8] = 1.0;
        RJ[1] = RJ[2] = RJ[3] = RJ[5] = RJ[6] = RJ[7] = 0.0;
        break;
    case MB_REVOLUTE:
        axis_rot(a1, qi[0], RJ);
        break;
    case MB_PRISMATIC:
        RJ[0] = RJ[4] = RJ[8] = 1.0;
        RJ[1] = RJ[2] = RJ[3] = RJ[5] = RJ[6] = RJ[7] = 0.0;
        pJ[0] = a1[0] * qi[0]; pJ[1] = a1[1] * qi[0]; pJ[2] = a1[2] * qi[0];
        break;
    case MB_SPHERICAL:
        quat_rot(qi, RJ);
        break;
    case MB_FREE:
        pJ[0] = qi[0]; pJ[1] = qi[1]; pJ[2] = qi[2];
        quat_rot(qi + 3, RJ);
        break;
    case MB_UNIVERSAL: {
        double R1[9], R2[9], b[3], bxa2[3];
        double q2d = qd ? qd[m->iv[i] + 1] : 0.0;
        axis_rot(a1, qi[0], R1);
        axis_rot(a2, qi[1], R2);
        mm3(R1, R2, RJ);
        mtv3(R2, a1, b); /* a1 seen in the body frame */
        S[0] = b[0]; S[1] = b[1]; S[2] = b[2];
        cross3(b, a2, bxa2);
        Sr[0] = q2d * bxa2[0]; Sr[1] = q2d * bxa2[1]; Sr[2] = q2d * bxa2[2];
        break;
    }
    case MB_PLANAR: {
        double th = qi[2], s = sin(th), c = cos(th);
        double thd = qd ? qd[m->iv[i] + 2] : 0.0;
        RJ[0] = c; RJ[1] = -s; RJ[2] = 0; RJ[3] = s; RJ[4] = c; RJ[5] = 0;
        RJ[6] = 0; RJ[7] = 0; RJ[8] = 1;
        pJ[0] = qi[0]; pJ[1] = qi[1];
        S[3] = c; S[4] = -s;            /* R^T e_x */
        S[6 + 3] = s; S[6 + 4] = c;     /* R^T e_y */
        Sr[3] = -s * thd; Sr[4] = -c * thd;
        Sr[6 + 3] = c * thd; Sr[6 + 4] = -s * thd;
        break;
    }
    }
}

/* Xup = (E, r) of a revolute joint about +-e_k (rotax k = 0..2, Rtree = 1):
 * E = R_J^T, the rotation by -(sign) q about e_k; r = ptree */
AXIS_INLINE void revolute_axis_xup_k(const mb_model *m, mb_data *d, int i, int k, double th) {
    double *E = B9(d->E, i), *r = B3(d->r, i);
    const double *pt = B3(m->ptree, i);
    double s = sin(th), c = cos(th);
    s *= m->ssg[i];
    AXIS_PAIR(k, i1, i2);
    E[3 * k + k] = 1.0;
    E[3 * k + i1] = E[3 * k + i2] = E[3 * i1 + k] = E[3 * i2 + k] = 0.0;
    E[3 * i1 + i1] = c; E[3 * i1 + i2] = s;
    E[3 * i2 + i1] = -s; E[3 * i2 + i2] = c;
    r[0] = pt[0]; r[1] = pt[1]; r[2] = pt[2];
}
static void revolute_axis_xup(const mb_model *m, mb_data *d, int i, int k, double th) {
    switch (k) {
    case 0: revolute_axis_xup_k(m, d, i, 0, th); break;
    case 1: revolute_axis_xup_k(m, d, i, 1, th); break;
    default: revolute_axis_xup_k(m, d, i, 2, th); break;
    }
}

/* Xup, S (and with qd: v, vJ, cJ, c) for every body; the world pose too
 * when world != 0 (the articulated-body passes do not need it). */
static void kinematics(const mb_model *m, mb_data *d, const double *q, const double *qd, int world) {
    for (int i = 1; i < m->nb; ++i) {
        double RJ[9], pJ[3], Rpi[9], tmp[3];
        int p = m->parent[i], k = m->rotax[i];
        double *E = B9(d->E, i), *r = B3(d->r, i);
        if (k >= 0 && k < 3) {
            revolute_axis_xup(m, d, i, k, q[m->iq[i]]);
        } else if (m->jtype[i] == MB_REVOLUTE) {
            /* R_PI = Rtree R_J by Rodrigues' formula on the stored Rtree A,
             * Rtree A^2 (Rrod), r = ptree; E = R_PI^T */
            const double *P1 = m->Rrod + 18 * i, *P2 = P1 + 9, *Rt = B9(m->Rtree, i), *pt = B3(m->ptree, i);
            double th = q[m->iq[i]], sn = sin(th), vc = 1.0 - cos(th);
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) E[3 * b + a] = Rt[3 * a + b] + sn * P1[3 * a + b] + vc * P2[3 * a + b];
            r[0] = pt[0]; r[1] = pt[1]; r[2] = pt[2];
        } else {
            jcalc(m, d, i, q, qd, RJ, pJ);
            /* R_PI = Rtree R_J, r = ptree + Rtree p_J; no products with the
             * R_J = 1 of prismatic and fixed joints, nor with the p_J = 0 of
             * revolute ones */
            const double *Rt = B9(m->Rtree, i), *pt = B3(m->ptree, i);
            int t = m->jtype[i], rigid = t == MB_PRISMATIC || t == MB_FIXED;
            if (k == 3) {
                memcpy(E, RJ, sizeof RJ); /* RJ = 1 */
                memcpy(tmp, pJ, sizeof tmp);
            } else {
                const double *Rp = Rt;
                if (!rigid) {
                    mm3(Rt, RJ, Rpi);
                    Rp = Rpi;
                }
                for (int a = 0; a < 3; ++a)
                    for (int b = 0; b < 3; ++b) E[3 * a + b] = Rp[3 * b + a];
                if (t == MB_REVOLUTE || t == MB_FIXED) tmp[0] = tmp[1] = tmp[2] = 0.0;
                else mv3(Rt, pJ, tmp);
            }
            r[0] = pt[0] + tmp[0]; r[1] = pt[1] + tmp[1]; r[2] = pt[2] + tmp[2];
        }
        if (world) {
            const double *RWp = B9(d->RW, p), *pWp = B3(d->pW, p);
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) Rpi[3 * a + b] = E[3 * b + a];
            mm3(RWp, Rpi, B9(d->RW, i));
            mv3(RWp, r, tmp);
            double *pw = B3(d->pW, i);
            pw[0] = pWp[0] + tmp[0]; pw[1] = pWp[1] + tmp[1]; pw[2] = pWp[2] + tmp[2];
        }
        if (!qd) continue;
        double *v = B6(d->v, i), *c = B6(d->c, i);
        int j = m->sax[i];
        if (j >= 0) {
            /* vJ = w e_j, cJ = 0 (set once) */
            double w = m->ssg[i] * qd[m->iv[i]];
            if (p == 0) for (int a = 0; a < 6; ++a) v[a] = 0.0;
            else if (k >= 0) Xmv_axis(E, k, r, B6(d->v, p), v);
            else Xmv(E, r, B6(d->v, p), v);
            v[j] += w;
            crm_unit(v, j, w, c);
            continue;
        }
        int t = m->jtype[i];
        if (t == MB_REVOLUTE || t == MB_PRISMATIC) {
            /* one column along a general axis: vJ = S w is an angular (o = 0)
             * or a linear (o = 3) 3-vector u, cJ = 0 (Sr = 0, set once) */
            const double *s = B36(d->S, i);
            double w = qd[m->iv[i]];
            int o = t == MB_PRISMATIC ? 3 : 0;
            double u[3] = {s[o] * w, s[o + 1] * w, s[o + 2] * w};
            if (p > 0) {
                if (k >= 0) Xmv_axis(E, k, r, B6(d->v, p), v);
                else Xmv(E, r, B6(d->v, p), v);
            } else {
                for (int a = 0; a < 6; ++a) v[a] = 0.0;
            }
            v[o] += u[0]; v[o + 1] += u[1]; v[o + 2] += u[2];
            /* c = v x vJ */
            if (o == 0) {
                cross3(v, u, c);
                cross3(v + 3, u, c + 3);
            } else {
                c[0] = c[1] = c[2] = 0.0;
                cross3(v, u, c + 3);
            }
            continue;
        }
        double vJ[6] = {0, 0, 0, 0, 0, 0}, vx[6];
        const double *S = B36(d->S, i), *Sr = B36(d->Sr, i);
        const double *qdi = qd + m->iv[i];
        double *cJ = B6(d->cJ, i);
        for (int a = 0; a < 6; ++a) cJ[a] = 0.0;
        for (int jj = 0; jj < m->nvi[i]; ++jj)
            for (int a = 0; a < 6; ++a) {
                vJ[a] += S[6 * jj + a] * qdi[jj];
                cJ[a] += Sr[6 * jj + a] * qdi[jj];
            }
        if (p > 0) {
            if (k >= 0) Xmv_axis(E, k, r, B6(d->v, p), v);
            else Xmv(E, r, B6(d->v, p), v);
            for (int a = 0; a < 6; ++a) v[a] += vJ[a];
        } else {
            for (int a = 0; a < 6; ++a) v[a] = vJ[a];
        }
        crm(v, vJ, vx);
        for (int a = 0; a < 6; ++a) c[a] = cJ[a] + vx[a];
    }
}

void mb_kinematics(const mb_model *m, mb_data *d, const double *q, const double *qd) { kinematics(m, d, q, qd, 1); }

/* spatial acceleration of the world: -g, so that gravity acts on every body */
static void base_acc(const mb_data *d, int with_gravity, double *a0) {
    a0[0] = a0[1] = a0[2] = 0.0;
    a0[3] = with_gravity ? -d->g[0] : 0.0;
    a0[4] = with_gravity ? -d->g[1] : 0.0;
    a0[5] = with_gravity ? -d->g[2] : 0.0;
}

/* ------------------------------------------------------------------ RNEA */
/* the outward and inward passes; world != 0: the world poses too */
static void rnea(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *qdd,
                 const double *fext, int with_gravity, double *tau, int world) {
    double a0[6];
    base_acc(d, with_gravity, a0);
    kinematics(m, d, q, qd, world);
    if (!qd) {
        memset(d->v, 0, (size_t)m->nb * 6 * sizeof(double));
        memset(d->c, 0, (size_t)m->nb * 6 * sizeof(double));
    }
    for (int i = 1; i < m->nb; ++i) {
        int p = m->parent[i], k = m->rotax[i], j = m->sax[i];
        const double *E = B9(d->E, i), *r = B3(d->r, i), *S = B36(d->S, i);
        double *a = B6(d->a, i), *f = B6(d->f, i), *v = B6(d->v, i);
        const double *ap = p > 0 ? B6(d->a, p) : a0;
        if (k >= 0) Xmv_axis(E, k, r, ap, a);
        else Xmv(E, r, ap, a);
        const double *c = B6(d->c, i);
        for (int b = 0; b < 6; ++b) a[b] += c[b];
        if (qdd && j >= 0) {
            a[j] += m->ssg[i] * qdd[m->iv[i]];
        } else if (qdd) {
            for (int jj = 0; jj < m->nvi[i]; ++jj) {
                double qj = qdd[m->iv[i] + jj];
                for (int b = 0; b < 6; ++b) a[b] += S[6 * jj + b] * qj;
            }
        }
        double Iv[6], vxIv[6];
        body_inertia_mv(m, i, a, f);
        body_inertia_mv(m, i, v, Iv);
        crf(v, Iv, vxIv);
        for (int b = 0; b < 6; ++b) f[b] += vxIv[b];
        if (fext)
            for (int b = 0; b < 6; ++b) f[b] -= fext[6 * i + b];
    }
    for (int i = m->nb - 1; i > 0; --i) {
        const double *S = B36(d->S, i), *f = B6(d->f, i);
        int j = m->sax[i], k = m->rotax[i], p = m->parent[i];
        if (j >= 0) tau[m->iv[i]] = m->ssg[i] * f[j];
        else
            for (int jj = 0; jj < m->nvi[i]; ++jj) tau[m->iv[i] + jj] = dot6(S + 6 * jj, f);
        if (p > 0) {
            if (k >= 0) XTf_axis_add(B9(d->E, i), k, B3(d->r, i), f, B6(d->f, p));
            else XTf_add(B9(d->E, i), B3(d->r, i), f, B6(d->f, p));
        }
    }
}

void mb_rnea(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *qdd,
             const double *fext, int with_gravity, double *tau) {
    rnea(m, d, q, qd, qdd, fext, with_gravity, tau, 1);
}

void mb_rnea_tau(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *qdd,
                 const double *fext, int with_gravity, double *tau) {
    rnea(m, d, q, qd, qdd, fext, with_gravity, tau, 0);
}

static void crba_lower(const mb_model *m, mb_data *d, double *H, int packed);
static int sparse_forward(const mb_model *m, mb_data *d, const double *qd, const double *tau, const double *fext,
                          int with_gravity, double *qdd);

void mb_point_acceleration(const mb_model *m, const mb_data *d, int b, const double *r_B, double *acc) {
    (void)m; /* the uniform (model, data) signature: this one reads the data only */
    const double *v = B6(d->v, b), *a = B6(d->a, b);
    double t[3], u[3], aB[3];
    /* aB = dv + w x (v + w x r) + dw x r */
    cross3(v, r_B, t);
    for (int k = 0; k < 3; ++k) t[k] += v[3 + k];
    cross3(v, t, u);
    cross3(a, r_B, t);
    for (int k = 0; k < 3; ++k) aB[k] = a[3 + k] + u[k] + t[k];
    mv3(B9(d->RW, b), aB, acc);
}

/* ------------------------------------------------------------------ CRBA */
int mb_crba_pattern(const mb_model *m, mb_data *d, const double *q, double *values) {
    mb_kinematics(m, d, q, NULL);
    crba_lower(m, d, values, 1);
    return 0;
}

void mb_crba(const mb_model *m, mb_data *d, const double *q, double *M) {
    mb_kinematics(m, d, q, NULL);
    memset(M, 0, sizeof(double) * (size_t)m->nv * (size_t)m->nv);
    crba_lower(m, d, M, 0);
    mb_sparse_mirror(M, m->lambda, m->nv, m->lnnz);
}

/* ------------------------------------------------------------------ ABA */

/* In-place inverse of a symmetric positive definite n x n block (stride 6) by
 * Cholesky; returns 0, or -1 when not positive definite. */
static int spd_inverse(const double *D, double *Dinv, int n) {
    double L[36] = {0}, Linv[36] = {0};
    double scale = 0.0;
    for (int k = 0; k < n; ++k) scale = fmax(scale, fabs(D[6 * k + k]));
    for (int j = 0; j < n; ++j) {
        double s = D[6 * j + j];
        for (int k = 0; k < j; ++k) s -= L[6 * j + k] * L[6 * j + k];
        if (!(s > 1e-14 * scale) || !(s > 0.0)) return -1;
        L[6 * j + j] = sqrt(s);
        for (int i = j + 1; i < n; ++i) {
            double t = D[6 * i + j];
            for (int k = 0; k < j; ++k) t -= L[6 * i + k] * L[6 * j + k];
            L[6 * i + j] = t / L[6 * j + j];
        }
    }
    for (int j = 0; j < n; ++j) {
        Linv[6 * j + j] = 1.0 / L[6 * j + j];
        for (int i = j + 1; i < n; ++i) {
            double t = 0.0;
            for (int k = j; k < i; ++k) t -= L[6 * i + k] * Linv[6 * k + j];
            Linv[6 * i + j] = t / L[6 * i + i];
        }
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double t = 0.0;
            for (int k = (i > j ? i : j); k < n; ++k) t += Linv[6 * k + i] * Linv[6 * k + j];
            Dinv[6 * i + j] = t;
        }
    return 0;
}

/* The reduction of body i's articulated inertia and bias through its joint
 * (RBDA Table 7.1): U = IA S, D = S^T U, u = tau - S^T pA, Ia = IA - U D^-1 U^T,
 * pa = pA + U D^-1 u. For S = +-e_j (sax[i] = j): U is a column of IA and D
 * a diagonal entry, no products with S. Returns 0, or
 * -1 when D is singular. */
static int reduce_unit_axis(const mb_model *m, mb_data *d, int i, const double *tau, double *Ia, double *pa) {
    const double *IA = B36(d->IA, i), *pA = B6(d->pA, i);
    double *U = B36(d->U, i), *u = B6(d->uu, i);
    int j = m->sax[i];
    double sg = m->ssg[i], D = IA[6 * j + j];
    for (int a = 0; a < 6; ++a) U[a] = sg * IA[6 * a + j];
    u[0] = tau[m->iv[i]] - sg * pA[j];
    if (!(D > 0.0)) return -1; /* as spd_inverse for n = 1 */
    double dinv = 1.0 / D, w = u[0] * dinv;
    d->Dinv[36 * i] = dinv;
    for (int a = 0; a < 6; ++a) {
        double ua = U[a] * dinv;
        for (int b = 0; b < 6; ++b) Ia[6 * a + b] = IA[6 * a + b] - ua * U[b];
        pa[a] = pA[a] + U[a] * w;
    }
    return 0;
}

/* The same reduction for any motion subspace of nvi >= 1 columns; Ia and pa
 * enter as IA and pA. */
static int reduce_general(const mb_model *m, mb_data *d, int i, const double *tau, double *Ia, double *pa) {
    int nvi = m->nvi[i], iv = m->iv[i];
    const double *IA = B36(d->IA, i), *pA = B6(d->pA, i), *S = B36(d->S, i);
    double *U = B36(d->U, i), *Dinv = B36(d->Dinv, i), *u = B6(d->uu, i);
    if (nvi == 1) {
        /* one joint coordinate (revolute, prismatic): scalar D, no factorization */
        mv6(IA, S, U);
        double D = dot6(S, U);
        u[0] = tau[iv] - dot6(S, pA);
        if (!(D > 0.0)) return -1; /* as spd_inverse for n = 1 */
        double dinv = 1.0 / D, w = u[0] * dinv;
        Dinv[0] = dinv;
        for (int a = 0; a < 6; ++a) {
            double ua = U[a] * dinv;
            for (int b = 0; b < 6; ++b) Ia[6 * a + b] -= ua * U[b];
            pa[a] += U[a] * w;
        }
        return 0;
    }
    double D[36], UD[36];
    for (int j = 0; j < nvi; ++j) mv6(IA, S + 6 * j, U + 6 * j);
    for (int j = 0; j < nvi; ++j) {
        for (int k = 0; k < nvi; ++k) D[6 * j + k] = dot6(S + 6 * j, U + 6 * k);
        u[j] = tau[iv + j] - dot6(S + 6 * j, pA);
    }
    if (spd_inverse(D, Dinv, nvi) != 0) return -1;
    /* Ia = IA - U Dinv U^T,  pa = pA + U Dinv u */
    for (int k = 0; k < 6; ++k)
        for (int j = 0; j < nvi; ++j) {
            double t = 0.0;
            for (int l = 0; l < nvi; ++l) t += U[6 * l + k] * Dinv[6 * l + j];
            UD[6 * j + k] = t; /* column j of U Dinv */
        }
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b) {
            double t = 0.0;
            for (int j = 0; j < nvi; ++j) t += UD[6 * j + a] * U[6 * j + b];
            Ia[6 * a + b] -= t;
        }
    for (int k = 0; k < 6; ++k)
        for (int j = 0; j < nvi; ++j) pa[k] += UD[6 * j + k] * u[j];
    return 0;
}

int mb_aba_joint_step(const mb_model *m, mb_data *d, int i, const double *tau, const double *qdd_prescribed) {
    int p = m->parent[i], nvi = m->nvi[i], k = m->rotax[i];
    const double *S = B36(d->S, i);
    double Ia[36], pa[6], ca[6], Ic[6];
    memcpy(ca, B6(d->c, i), sizeof ca);
    if (m->sax[i] >= 0 && !qdd_prescribed) {
        if (reduce_unit_axis(m, d, i, tau, Ia, pa)) return -i;
    } else {
        memcpy(Ia, B36(d->IA, i), sizeof Ia);
        memcpy(pa, B6(d->pA, i), sizeof pa);
        if (nvi > 0 && qdd_prescribed) {
            /* a prescribed joint passes IA unreduced, with the bias at c + S qdd */
            for (int j = 0; j < nvi; ++j)
                for (int a = 0; a < 6; ++a) ca[a] += S[6 * j + a] * qdd_prescribed[j];
        } else if (nvi > 0 && reduce_general(m, d, i, tau, Ia, pa)) {
            return -i;
        }
    }
    mv6(Ia, ca, Ic);
    for (int a = 0; a < 6; ++a) pa[a] += Ic[a];
    if (p > 0) {
        const double *E = B9(d->E, i), *r = B3(d->r, i);
        if (k >= 0) {
            XTIX_axis_add(E, k, r, Ia, B36(d->IA, p));
            XTf_axis_add(E, k, r, pa, B6(d->pA, p));
        } else {
            XTIX_add(E, r, Ia, B36(d->IA, p));
            XTf_add(E, r, pa, B6(d->pA, p));
        }
    }
    return 0;
}

void mb_aba_joint_forward(const mb_model *m, mb_data *d, int i, const double *a_parent, const double *qdd_prescribed,
                          double *qdd) {
    int nvi = m->nvi[i];
    double *a = B6(d->a, i);
    const double *c = B6(d->c, i), *S = B36(d->S, i), *U = B36(d->U, i);
    const double *Dinv = B36(d->Dinv, i), *u = B6(d->uu, i);
    int j = m->sax[i], k = m->rotax[i];
    if (k >= 0) Xmv_axis(B9(d->E, i), k, B3(d->r, i), a_parent, a);
    else Xmv(B9(d->E, i), B3(d->r, i), a_parent, a);
    for (int b = 0; b < 6; ++b) a[b] += c[b];
    if (nvi == 0) return;
    if (j >= 0 && !qdd_prescribed) {
        qdd[0] = Dinv[0] * (u[0] - dot6(U, a));
        a[j] += m->ssg[i] * qdd[0];
        return;
    }
    if (qdd_prescribed) {
        memcpy(qdd, qdd_prescribed, sizeof(double) * (size_t)nvi);
    } else {
        double t[6];
        for (int j = 0; j < nvi; ++j) t[j] = u[j] - dot6(U + 6 * j, a);
        for (int j = 0; j < nvi; ++j) {
            double s = 0.0;
            for (int k = 0; k < nvi; ++k) s += Dinv[6 * j + k] * t[k];
            qdd[j] = s;
        }
    }
    for (int j = 0; j < nvi; ++j)
        for (int k = 0; k < 6; ++k) a[k] += S[6 * j + k] * qdd[j];
}

/* Backward pass: articulated inertias and bias forces; pA must hold the
 * rigid-body bias forces and c the velocity-product accelerations. */
static int aba_backward(const mb_model *m, mb_data *d, const double *tau) {
    memcpy(d->IA, m->Ibody, (size_t)m->nb * 36 * sizeof(double));
    for (int i = m->nb - 1; i > 0; --i) {
        int err = mb_aba_joint_step(m, d, i, tau, NULL);
        if (err) return err;
    }
    return 0;
}

static void aba_forward(const mb_model *m, mb_data *d, const double *a0, double *qdd) {
    for (int i = 1; i < m->nb; ++i) {
        int p = m->parent[i];
        mb_aba_joint_forward(m, d, i, p > 0 ? B6(d->a, p) : a0, NULL, qdd + m->iv[i]);
    }
}

void mb_bias_forces(const mb_model *m, mb_data *d, const double *fext) {
    for (int i = 1; i < m->nb; ++i) {
        double Iv[6];
        const double *v = B6(d->v, i);
        double *pA = B6(d->pA, i);
        body_inertia_mv(m, i, v, Iv);
        crf(v, Iv, pA);
        if (fext)
            for (int k = 0; k < 6; ++k) pA[k] -= fext[6 * i + k];
    }
}

int mb_aba(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *tau,
           const double *fext, int with_gravity, double *qdd) {
    double a0[6];
    mb_kinematics(m, d, q, qd);
    mb_bias_forces(m, d, fext);
    int err = aba_backward(m, d, tau);
    if (err) return err;
    base_acc(d, with_gravity, a0);
    aba_forward(m, d, a0, qdd);
    return 0;
}

int mb_minv(const mb_model *m, mb_data *d, const double *q, const double *b, double *x) {
    double a0[6] = {0, 0, 0, 0, 0, 0};
    mb_kinematics(m, d, q, NULL);
    memset(d->pA, 0, (size_t)m->nb * 6 * sizeof(double));
    memset(d->c, 0, (size_t)m->nb * 6 * sizeof(double));
    int err = aba_backward(m, d, b);
    if (err) return err;
    aba_forward(m, d, a0, x);
    return 0;
}

/* ------------------------------------------------------- canonical variables */

/* subtree momenta H_i = sum over the subtree of I_j v_j, in body-i coordinates,
 * into d->f; needs v from mb_kinematics */
static void subtree_momenta(const mb_model *m, mb_data *d) {
    for (int i = 1; i < m->nb; ++i) body_inertia_mv(m, i, B6(d->v, i), B6(d->f, i));
    for (int i = m->nb - 1; i > 0; --i) {
        int p = m->parent[i];
        if (p > 0) XTf_add(B9(d->E, i), B3(d->r, i), B6(d->f, i), B6(d->f, p));
    }
}

void mb_momentum(const mb_model *m, mb_data *d, const double *q, const double *qd, double *p) {
    mb_kinematics(m, d, q, qd);
    subtree_momenta(m, d);
    for (int i = 1; i < m->nb; ++i) {
        const double *S = B36(d->S, i), *H = B6(d->f, i);
        for (int j = 0; j < m->nvi[i]; ++j) p[m->iv[i] + j] = dot6(S + 6 * j, H);
    }
}

int mb_sweep(const mb_model *m, mb_data *d, const double *q, const double *p, const double *tau,
             const double *fext, double *qd, double *qdot, double *pdot) {
    int err = mb_minv(m, d, q, p, qd);
    if (err) return err;
    mb_kinematics(m, d, q, qd);
    subtree_momenta(m, d); /* H in d->f */
    /* F_i: gravity and external forces on the subtree, in body-i coordinates,
     * accumulated in d->pA; gravity seen in body coordinates via d->a */
    double a0[6];
    base_acc(d, 1, a0);
    for (int k = 3; k < 6; ++k) a0[k] = -a0[k]; /* [0; g] */
    for (int i = 1; i < m->nb; ++i) {
        int par = m->parent[i];
        double *ag = B6(d->a, i);
        Xmv(B9(d->E, i), B3(d->r, i), par > 0 ? B6(d->a, par) : a0, ag);
        body_inertia_mv(m, i, ag, B6(d->pA, i));
        if (fext)
            for (int k = 0; k < 6; ++k) d->pA[6 * i + k] += fext[6 * i + k];
    }
    for (int i = m->nb - 1; i > 0; --i) {
        int par = m->parent[i];
        if (par > 0) XTf_add(B9(d->E, i), B3(d->r, i), B6(d->pA, i), B6(d->pA, par));
    }
    for (int i = 1; i < m->nb; ++i) {
        const double *S = B36(d->S, i), *Sr = B36(d->Sr, i);
        const double *H = B6(d->f, i), *F = B6(d->pA, i), *v = B6(d->v, i);
        double vxH[6], G[6];
        crf(v, H, vxH);
        for (int k = 0; k < 6; ++k) G[k] = F[k] - vxH[k];
        for (int j = 0; j < m->nvi[i]; ++j) {
            int iv = m->iv[i] + j;
            pdot[iv] = tau[iv] + dot6(S + 6 * j, G) + dot6(Sr + 6 * j, H);
        }
    }
    mb_qdot(m, q, qd, qdot);
    return 0;
}

/* ------------------------------------------------- configuration manifold */

static void quat_rate(const double *e, const double *w, double *ed) {
    ed[0] = -0.5 * (e[1] * w[0] + e[2] * w[1] + e[3] * w[2]);
    ed[1] = 0.5 * (e[0] * w[0] + e[2] * w[2] - e[3] * w[1]);
    ed[2] = 0.5 * (e[0] * w[1] + e[3] * w[0] - e[1] * w[2]);
    ed[3] = 0.5 * (e[0] * w[2] + e[1] * w[1] - e[2] * w[0]);
}

void mb_qdot(const mb_model *m, const double *q, const double *qd, double *qdot) {
    if (m->vector_q) {
        memcpy(qdot, qd, (size_t)m->nv * sizeof(double));
        return;
    }
    for (int i = 1; i < m->nb; ++i) {
        const double *qi = q + m->iq[i], *vi = qd + m->iv[i];
        double *o = qdot + m->iq[i];
        switch (m->jtype[i]) {
        case MB_SPHERICAL:
            quat_rate(qi, vi, o);
            break;
        case MB_FREE: {
            double R[9];
            quat_rot(qi + 3, R);
            mv3(R, vi + 3, o);
            quat_rate(qi + 3, vi, o + 3);
            break;
        }
        default:
            for (int k = 0; k < m->nvi[i]; ++k) o[k] = vi[k];
        }
    }
}

/* e <- e (x) exp(w dt / 2) */
static void quat_step(double *e, const double *w, double dt) {
    double th = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * dt;
    double c = cos(0.5 * th), s = th > 1e-12 ? sin(0.5 * th) / th * dt : 0.5 * dt;
    double d[4] = {c, s * w[0], s * w[1], s * w[2]};
    double r[4];
    r[0] = e[0] * d[0] - e[1] * d[1] - e[2] * d[2] - e[3] * d[3];
    r[1] = e[0] * d[1] + e[1] * d[0] + e[2] * d[3] - e[3] * d[2];
    r[2] = e[0] * d[2] - e[1] * d[3] + e[2] * d[0] + e[3] * d[1];
    r[3] = e[0] * d[3] + e[1] * d[2] - e[2] * d[1] + e[3] * d[0];
    memcpy(e, r, sizeof r);
}

void mb_integrate(const mb_model *m, double *q, const double *qd, double dt) {
    for (int i = 1; i < m->nb; ++i) {
        double *qi = q + m->iq[i];
        const double *vi = qd + m->iv[i];
        switch (m->jtype[i]) {
        case MB_SPHERICAL:
            quat_step(qi, vi, dt);
            break;
        case MB_FREE: {
            /* first-order: position with the rotation at the start of the step */
            double R[9], d[3];
            quat_rot(qi + 3, R);
            mv3(R, vi + 3, d);
            for (int k = 0; k < 3; ++k) qi[k] += d[k] * dt;
            quat_step(qi + 3, vi, dt);
            break;
        }
        default:
            for (int k = 0; k < m->nvi[i]; ++k) qi[k] += vi[k] * dt;
        }
    }
}

void mb_normalize_joint(const mb_model *m, int i, double *qi) {
    double *e = NULL;
    if (m->jtype[i] == MB_SPHERICAL) e = qi;
    else if (m->jtype[i] == MB_FREE) e = qi + 3;
    if (!e) return;
    double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    if (n > 0) for (int k = 0; k < 4; ++k) e[k] /= n;
}

void mb_normalize(const mb_model *m, double *q) {
    for (int i = 1; i < m->nb; ++i) mb_normalize_joint(m, i, q + m->iq[i]);
}

/* ------------------------------------------------------------ force elements */

/* rotation vector (log map) of a unit quaternion, |result| <= pi */
static void quat_log(const double *e, double *phi) {
    double w = e[0], s = sqrt(e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    double sign = w < 0 ? -1.0 : 1.0; /* shortest rotation */
    double ang = 2.0 * atan2(s, fabs(w));
    double k = s > 1e-12 ? sign * ang / s : 2.0 * sign;
    phi[0] = k * e[1]; phi[1] = k * e[2]; phi[2] = k * e[3];
}

/* displacements (nvi) the joint spring of body i acts on: the rotation
 * vector of a spherical joint, else the joint coordinates */
static void joint_displacement(const mb_model *m, int i, const double *q, double *disp) {
    if (m->jtype[i] == MB_SPHERICAL) quat_log(q + m->iq[i], disp);
    else for (int k = 0; k < m->nvi[i]; ++k) disp[k] = q[m->iq[i] + k];
}

/* bodies whose joint takes a joint force element (not free, not fixed) */
static int has_joint_spring(const mb_model *m, int i) {
    return m->nvi[i] > 0 && m->jtype[i] != MB_FREE;
}

void mb_point_position(const mb_model *m, const mb_data *d, int b, const double *r_B, double *x) {
    (void)m; /* the uniform (model, data) signature: this one reads the data only */
    double t[3];
    mv3(B9(d->RW, b), r_B, t);
    for (int k = 0; k < 3; ++k) x[k] = d->pW[3 * b + k] + t[k];
}

/* world velocity xd of the point r_B (body frame) of body b (needs body velocities) */
static void point_velocity(const mb_data *d, int b, const double *r_B, double *xd) {
    double t[3];
    const double *vb = B6(d->v, b);
    cross3(vb, r_B, t);
    for (int k = 0; k < 3; ++k) t[k] += vb[3 + k];
    mv3(B9(d->RW, b), t, xd);
}

/* add the world force F_W applied at the point r_B of body b (body frame) to
 * fext[b] as a body-frame spatial force about the body origin (world: ignored) */
static void add_point_force(const mb_data *d, double *fext, int b, const double *r_B, const double *F_W) {
    if (b <= 0) return;
    double f[3], n[3];
    double *fe = B6(fext, b);
    mtv3(B9(d->RW, b), F_W, f);
    cross3(r_B, f, n);
    for (int k = 0; k < 3; ++k) { fe[k] += n[k]; fe[3 + k] += f[k]; }
}

/* damping weight r(x) = min(1, x / ramp) for x >= 0: the damping force fades
 * in from zero, so the element force is continuous at first contact */
static double ramp_weight(double x, double ramp) {
    double r = x / ramp;
    return r < 1.0 ? r : 1.0;
}

/* length of point-to-point spring s, with the unit vector u from a to b and
 * the attachment points' world velocities Va, Vb when with_velocity */
static double spring_length(const mb_model *m, const mb_data *d, int s, double *u, double *Va, double *Vb, int with_velocity) {
    const double *P = m->springs + SP_N * s;
    int ba = (int)P[SP_BA], bb = (int)P[SP_BB];
    double Pa[3], Pb[3];
    mb_point_position(m, d, ba, P + SP_PAX, Pa);
    mb_point_position(m, d, bb, P + SP_PBX, Pb);
    for (int k = 0; k < 3; ++k) u[k] = Pb[k] - Pa[k];
    double L = sqrt(dot3(u, u));
    if (L >= 1e-12) for (int k = 0; k < 3; ++k) u[k] /= L;
    if (with_velocity) {
        point_velocity(d, ba, P + SP_PAX, Va);
        point_velocity(d, bb, P + SP_PBX, Vb);
    }
    return L;
}

/* penetration of contact k (m, negative when apart) */
static double contact_depth(const mb_model *m, const mb_data *d, int k) {
    const double *P = m->contacts + CT_N * k;
    double x[3];
    mb_point_position(m, d, (int)P[CT_BODY], P + CT_CX, x);
    return P[CT_R] - (dot3(P + CT_NX, x) - P[CT_OFF]);
}

/* length of cable k and the vector u from its body point to its anchor */
static double cable_length(const mb_model *m, const mb_data *d, int k, double *u) {
    const double *P = m->cables + CB_N * k;
    double x[3];
    mb_point_position(m, d, (int)P[CB_BODY], P + CB_PX, x);
    for (int j = 0; j < 3; ++j) u[j] = P[CB_AX + j] - x[j];
    return sqrt(dot3(u, u));
}

/* Sphere against plane: penetration d = radius - (n . centre - offset);
 * normal force fn = max(k d - c r(d) vn, 0) (never pulling) with vn the
 * normal velocity of the deepest point; regularized Coulomb friction
 * -mu fn v_t / sqrt(|v_t|^2 + eps^2). */
double mb_contact_force(const mb_model *m, const mb_data *d, int k, double *F, double *rB) {
    const double *P = m->contacts + CT_N * k;
    int b = (int)P[CT_BODY];
    const double *n = P + CT_NX;
    double nB[3], v[3];
    double depth = contact_depth(m, d, k);
    mtv3(B9(d->RW, b), n, nB);
    for (int j = 0; j < 3; ++j) rB[j] = P[CT_CX + j] - nB[j] * P[CT_R];
    F[0] = F[1] = F[2] = 0.0;
    if (depth <= 0) return depth;
    point_velocity(d, b, rB, v);
    double vn = dot3(n, v);
    double fn = P[CT_K] * depth - P[CT_D] * ramp_weight(depth, P[CT_RAMP]) * vn;
    if (fn <= 0) return depth;
    double vt[3] = {v[0] - vn * n[0], v[1] - vn * n[1], v[2] - vn * n[2]};
    double mu = P[CT_MU] * fn / sqrt(dot3(vt, vt) + P[CT_EPS] * P[CT_EPS]);
    for (int j = 0; j < 3; ++j) F[j] = fn * n[j] - mu * vt[j];
    return depth;
}

/* Tension-only cable from a ground anchor to a body point: tension
 * max(k s + c r(s) dL/dt, 0) with the stretch s = max(L - L0, 0). */
double mb_cable_force(const mb_model *m, const mb_data *d, int k, double *F, double *L) {
    const double *P = m->cables + CB_N * k;
    double dir[3], v[3];
    *L = cable_length(m, d, k, dir);
    F[0] = F[1] = F[2] = 0.0;
    double s = *L - P[CB_L0];
    if (s <= 0 || *L < 1e-12) return 0.0;
    double u[3] = {dir[0] / *L, dir[1] / *L, dir[2] / *L};
    point_velocity(d, (int)P[CB_BODY], P + CB_PX, v);
    double T = P[CB_K] * s - P[CB_D] * ramp_weight(s, P[CB_RAMP]) * dot3(u, v);
    if (T <= 0) return 0.0;
    for (int j = 0; j < 3; ++j) F[j] = T * u[j];
    return T;
}

void mb_passive_forces(const mb_model *m, mb_data *d, const double *q, const double *qd, double *tau, double *fext) {
    if (m->ndr) mb_drive_forces(m, q, qd, tau);
    if (m->has_dof_force) {
        for (int i = 1; i < m->nb; ++i) {
            if (!has_joint_spring(m, i)) continue;
            int iv = m->iv[i];
            double disp[6];
            joint_displacement(m, i, q, disp);
            for (int k = 0; k < m->nvi[i]; ++k) {
                const double *P = d->dof_force + DF_N * (iv + k);
                double x = disp[k], w = qd[iv + k];
                double t_el = -P[DF_K] * (x - P[DF_Q0]) - P[DF_D] * w;
                if (x < P[DF_LO]) {
                    double fl = P[DF_KLIM] * (P[DF_LO] - x) - P[DF_DLIM] * w;
                    if (fl > 0) t_el += fl;
                } else if (x > P[DF_HI]) {
                    double fl = P[DF_KLIM] * (x - P[DF_HI]) + P[DF_DLIM] * w;
                    if (fl > 0) t_el -= fl;
                }
                tau[iv + k] += t_el;
            }
        }
    }
    for (int s = 0; s < m->ns; ++s) {
        const double *P = m->springs + SP_N * s;
        double u[3], Va[3], Vb[3];
        double L = spring_length(m, d, s, u, Va, Vb, 1);
        if (L < 1e-12) continue;
        double Ld = (Vb[0] - Va[0]) * u[0] + (Vb[1] - Va[1]) * u[1] + (Vb[2] - Va[2]) * u[2];
        double F = P[SP_K] * (L - P[SP_L0]) + P[SP_D] * Ld; /* tension */
        double Fw[3] = {F * u[0], F * u[1], F * u[2]};     /* on a, towards b */
        add_point_force(d, fext, (int)P[SP_BA], P + SP_PAX, Fw);
        for (int k = 0; k < 3; ++k) Fw[k] = -Fw[k];
        add_point_force(d, fext, (int)P[SP_BB], P + SP_PBX, Fw);
    }
    for (int k = 0; k < m->nct; ++k) {
        double F[3], rB[3];
        if (mb_contact_force(m, d, k, F, rB) > 0)
            add_point_force(d, fext, (int)m->contacts[CT_N * k + CT_BODY], rB, F);
    }
    for (int k = 0; k < m->ncb; ++k) {
        double F[3], L;
        if (mb_cable_force(m, d, k, F, &L) > 0)
            add_point_force(d, fext, (int)m->cables[CB_N * k + CB_BODY], m->cables + CB_N * k + CB_PX, F);
    }
}

double mb_passive_energy(const mb_model *m, mb_data *d, const double *q) {
    mb_kinematics(m, d, q, NULL);
    return mb_passive_energy_posed(m, d, q);
}

double mb_passive_energy_posed(const mb_model *m, mb_data *d, const double *q) {
    double e = 0.0;
    for (int i = 1; i < m->nb && m->has_dof_force; ++i) {
        if (!has_joint_spring(m, i)) continue;
        double disp[6];
        joint_displacement(m, i, q, disp);
        for (int k = 0; k < m->nvi[i]; ++k) {
            const double *P = d->dof_force + DF_N * (m->iv[i] + k);
            double x = disp[k], r = x - P[DF_Q0];
            double pen = x < P[DF_LO] ? P[DF_LO] - x : (x > P[DF_HI] ? x - P[DF_HI] : 0.0);
            e += 0.5 * (P[DF_K] * r * r + P[DF_KLIM] * pen * pen);
        }
    }
    for (int s = 0; s < m->ns; ++s) {
        double u[3], x = spring_length(m, d, s, u, NULL, NULL, 0) - m->springs[SP_N * s + SP_L0];
        e += 0.5 * m->springs[SP_N * s + SP_K] * x * x;
    }
    for (int k = 0; k < m->nct; ++k) {
        double depth = contact_depth(m, d, k);
        if (depth > 0) e += 0.5 * m->contacts[CT_N * k + CT_K] * depth * depth;
    }
    for (int k = 0; k < m->ncb; ++k) {
        double u[3], s = cable_length(m, d, k, u) - m->cables[CB_N * k + CB_L0];
        if (s > 0) e += 0.5 * m->cables[CB_N * k + CB_K] * s * s;
    }
    return e;
}

int mb_rhs(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *tau,
           const double *fext, double *qdot, double *qdd) {
    double a0[6];
    int nb = m->nb, sparse = m->fd_sparse && d->Hs, points = m->ns + m->nct + m->ncb > 0;
    /* point elements and the sparse route need world poses; the sparse route
     * needs body velocities only for point elements and Sring */
    kinematics(m, d, q, sparse && !points && !m->has_sr ? NULL : qd, sparse || points);
    memcpy(d->tau, tau, (size_t)m->nv * sizeof(double));
    if (fext) memcpy(d->fext, fext, (size_t)nb * 6 * sizeof(double));
    else memset(d->fext, 0, (size_t)nb * 6 * sizeof(double));
    mb_passive_forces(m, d, q, qd, d->tau, d->fext);
    if (sparse) {
        int err = sparse_forward(m, d, qd, d->tau, d->fext, 1, qdd);
        if (err) return err;
    } else {
        mb_bias_forces(m, d, d->fext);
        int err = aba_backward(m, d, d->tau);
        if (err) return err;
        base_acc(d, 1, a0);
        aba_forward(m, d, a0, qdd);
    }
    mb_qdot(m, q, qd, qdot);
    return 0;
}

/* n classical RK4 steps on x = [q; y] with the system's right-hand side;
 * the quaternions are renormalized after each step. The first stage reads
 * x itself; each stage's slopes go into the weighted sum and the next
 * stage's state in one pass. Uses the first 3 (nq + ny) doubles of the
 * scratch; f may use the last ny. */
int mb_rk4_steps(const mb_ode *ode, double *q, double *y, const double *tau,
                 const double *fext, double h, int n) {
    int nq = ode->nq, nv = ode->ny, err;
    double *w = ode->work;
    double *qt = w, *yt = qt + nq, *kq = yt + nv, *ky = kq + nq, *sq = ky + nv, *sy = sq + nq;
    static const double cnext[3] = {0.5, 0.5, 1.0};
    static const double wstage[4] = {1.0, 2.0, 2.0, 1.0};
    for (int step = 0; step < n; ++step) {
        for (int s = 0; s < 4; ++s) {
            err = ode->f(ode->ctx, s ? qt : q, s ? yt : y, tau, fext, kq, ky);
            if (err) return err;
            if (s == 0) {
                memcpy(sq, kq, nq * sizeof(double));
                memcpy(sy, ky, nv * sizeof(double));
            } else {
                for (int k = 0; k < nq; ++k) sq[k] += wstage[s] * kq[k];
                for (int k = 0; k < nv; ++k) sy[k] += wstage[s] * ky[k];
            }
            if (s < 3) {
                double hc = h * cnext[s];
                for (int k = 0; k < nq; ++k) qt[k] = q[k] + hc * kq[k];
                for (int k = 0; k < nv; ++k) yt[k] = y[k] + hc * ky[k];
            }
        }
        for (int k = 0; k < nq; ++k) q[k] += h / 6.0 * sq[k];
        for (int k = 0; k < nv; ++k) y[k] += h / 6.0 * sy[k];
        ode->normalize(ode->ctx, q);
    }
    return 0;
}

/* the ODE callbacks' context is the data; its model is d->model */
static void rigid_normalize(void *ctx, double *q) { mb_normalize(((mb_data *)ctx)->model, q); }

/* x = [q; v] of the rigid tree, with the model's force elements */
static int rigid_rhs(void *ctx, const double *q, const double *qd, const double *tau,
                     const double *fext, double *qdot, double *qdd) {
    mb_data *d = ctx;
    return mb_rhs(d->model, d, q, qd, tau, fext, qdot, qdd);
}

int mb_rk4(const mb_model *m, mb_data *d, double *q, double *qd, const double *tau, const double *fext,
           double h, int n) {
    mb_ode ode = {d, rigid_rhs, rigid_normalize, m->nq, m->nv, d->work, NULL};
    return mb_rk4_steps(&ode, q, qd, tau, fext, h, n);
}

/* canonical right-hand side with the model's force elements: dq/dt (nq)
 * and dp/dt (nv) from (q, p); the velocity goes to the RK4 scratch */
static int canonical_rhs(void *ctx, const double *q, const double *p, const double *tau,
                         const double *fext, double *qdot, double *pdot) {
    mb_data *d = ctx;
    const mb_model *m = d->model;
    double *qd = d->work + 8 * (m->nq + m->nv) - m->nv;
    int err = mb_minv(m, d, q, p, qd);
    if (err) return err;
    mb_kinematics(m, d, q, qd);
    memcpy(d->tau, tau, (size_t)m->nv * sizeof(double));
    if (fext) memcpy(d->fext, fext, (size_t)m->nb * 6 * sizeof(double));
    else memset(d->fext, 0, (size_t)m->nb * 6 * sizeof(double));
    mb_passive_forces(m, d, q, qd, d->tau, d->fext);
    return mb_sweep(m, d, q, p, d->tau, d->fext, qd, qdot, pdot);
}

int mb_rk4_canonical(const mb_model *m, mb_data *d, double *q, double *p, const double *tau, const double *fext,
                     double h, int n) {
    mb_ode ode = {d, canonical_rhs, rigid_normalize, m->nq, m->nv, d->work, NULL};
    return mb_rk4_steps(&ode, q, p, tau, fext, h, n);
}

void mb_rigid_ode(const mb_model *m, mb_data *d, mb_ode *ode) {
    mb_ode o = {d, rigid_rhs, rigid_normalize, m->nq, m->nv, d->work, NULL};
    *ode = o;
}

void mb_canonical_ode(const mb_model *m, mb_data *d, mb_ode *ode) {
    mb_ode o = {d, canonical_rhs, rigid_normalize, m->nq, m->nv, d->work, NULL};
    *ode = o;
}

/* ------------------------------------------------- branch-induced sparsity */
/*
 * RBDA 2008, ch. 6. Number the dofs so that every dof's parent dof lambda(k)
 * (the previous dof of its own joint, else the last dof of the nearest
 * ancestor joint that has dofs) comes before it. H[i][j] = S_i^T Ic_i S_j
 * when j is an ancestor of i (Ic_i the composite inertia of the subtree of
 * dof i), H[i][j] = 0 when neither is an ancestor of the other. Eliminating
 * the last dof k first touches only entries (i, j) with i and j both
 * ancestors of k, which are ancestors of each other: no fill-in, so the
 * factors keep H's pattern and every sweep walks the ancestor chains.
 */

/* The route rule. The sparse route costs O(N) for kinematics, RNEA and the
 * composite inertias plus O(sum of depth^2) for the factorization; ABA
 * costs O(N), less for joints on the axis-aligned fast path. Forward
 * dynamics takes the sparse route when the mean number of ancestor-or-self
 * dofs per dof (the nonzeros of a row of L) is at most SPARSE_DEPTH, or
 * SPARSE_DEPTH_ALIGNED when most joints are axis-aligned revolutes (rotax).
 * Measured (process CPU time, random revolute trees with parents drawn among
 * the last w bodies, 10-300 bodies, 2026-12-05; benchmarks/RESULTS.md
 * "sparse forward dynamics"): general axes, sparse / ABA = 0.62-0.78 at mean
 * depth 2.3-8.0, 0.86-1.06 at 8.9-9.5, 1.10-2.53 at 11.6-21; axis-aligned:
 * 0.86-0.98 at 2.6-5.7, 0.99 at 6.3, 1.21-1.84 at 9-15.5. */
#define SPARSE_DEPTH 8.0
#define SPARSE_DEPTH_ALIGNED 5.0
/* lambda, lrun, rowadr, lcol, root, lnnz, has_sr and the route rule (mb_model_derive,
 * mb_pack's last step); 0, or -1 on allocation failure */
static int dof_structure(mb_model *m) {
    int nb = m->nb, nv = m->nv;
    m->lambda = malloc(sizeof(int) * (size_t)(nv > 0 ? nv : 1));
    m->lrun = malloc(sizeof(int) * (size_t)(nv > 0 ? nv : 1));
    m->rowadr = malloc(sizeof(long) * (size_t)(nv > 0 ? nv : 1));
    m->root = malloc(sizeof(int) * (size_t)nb);
    int *last = malloc(sizeof(int) * (size_t)nb); /* last dof of i or its ancestors */
    int *depth = malloc(sizeof(int) * (size_t)(nv > 0 ? nv : 1));
    if (!m->lambda || !m->lrun || !m->rowadr || !m->root || !last || !depth) {
        free(last);
        free(depth);
        return -1;
    }
    long nnz = 0;
    last[0] = -1;
    m->root[0] = 0;
    m->has_sr = 0;
    for (int i = 1; i < nb; ++i) {
        int p = m->parent[i], prev = last[p];
        m->root[i] = p > 0 ? m->root[p] : i;
        m->has_sr |= m->jtype[i] == MB_UNIVERSAL || m->jtype[i] == MB_PLANAR;
        for (int a = 0; a < m->nvi[i]; ++a) {
            int k = m->iv[i] + a;
            m->lambda[k] = prev;
            m->lrun[k] = prev >= 0 && prev == k - 1 ? m->lrun[prev] : k;
            depth[k] = prev >= 0 ? depth[prev] + 1 : 1;
            m->rowadr[k] = nnz;
            nnz += depth[k];
            prev = k;
        }
        last[i] = prev;
    }
    free(last);
    free(depth);
    m->lnnz = nnz;
    m->lcol = malloc(sizeof(int) * (size_t)(nnz > 0 ? nnz : 1));
    if (!m->lcol) return -1;
    for (int k = 0, *col = m->lcol; k < nv; ++k)
        for (int j = k; j >= 0; j = m->lambda[j]) *col++ = j;
    m->fd_sparse = 0;
    if (nv > 0 && nv <= MB_SPARSE_MAX_NV) {
        int aligned = 0;
        for (int i = 1; i < nb; ++i) aligned += m->rotax[i] >= 0 && m->rotax[i] < 3;
        double limit = 2 * aligned > nb - 1 ? SPARSE_DEPTH_ALIGNED : SPARSE_DEPTH;
        m->fd_sparse = (double)nnz / nv <= limit;
    }
    return 0;
}

/* The spatial inertia of body i in world-aligned coordinates about the point
 * O (world, m), as 10 numbers J = [m, h (3), Ibar (xx, yy, zz, xy, xz, yz)]:
 * the spatial inertia [Ibar h~; h~^T m 1], h = m c the first moment and Ibar
 * the rotational inertia about O. With R, p the body's world pose, d = p - O
 * and h' = R h_B: h = h' + m d, Ibar = R Ibar_B R^T + m (|d|^2 1 - d d^T)
 * + 2 (d . h') 1 - d h'^T - h' d^T (the sum of m_k (|r|^2 1 - r r^T) over
 * the body's mass points r = d + R rho). */
static void world_inertia(const mb_model *m, const mb_data *d, int i, const double *O, double *J) {
    const double *I = B36(m->Ibody, i), *R = B9(d->RW, i), *p = B3(d->pW, i);
    double mass = I[21], hB[3] = {I[16], I[5], I[9]}, h[3], dp[3], A[9], RA[9], W[9];
    for (int a = 0; a < 3; ++a) {
        dp[a] = p[a] - O[a];
        for (int b = 0; b < 3; ++b) A[3 * a + b] = I[6 * a + b];
    }
    mv3(R, hB, h);
    mm3(R, A, RA);
    for (int a = 0; a < 3; ++a)
        for (int b = a; b < 3; ++b)
            W[3 * a + b] = RA[3 * a] * R[3 * b] + RA[3 * a + 1] * R[3 * b + 1] + RA[3 * a + 2] * R[3 * b + 2];
    double dd = dot3(dp, dp), dh = dot3(dp, h);
    J[0] = mass;
    for (int a = 0; a < 3; ++a) {
        J[1 + a] = h[a] + mass * dp[a];
        J[4 + a] = W[4 * a] + mass * (dd - dp[a] * dp[a]) + 2.0 * (dh - dp[a] * h[a]);
    }
    J[7] = W[1] - mass * dp[0] * dp[1] - dp[0] * h[1] - h[0] * dp[1];
    J[8] = W[2] - mass * dp[0] * dp[2] - dp[0] * h[2] - h[0] * dp[2];
    J[9] = W[5] - mass * dp[1] * dp[2] - dp[1] * h[2] - h[1] * dp[2];
}

/* f = J s for the 10-number inertia J and the motion s = [w; v]:
 * n = Ibar w + h x v, f = m v - h x w */
static inline void inertia10_mv(const double *J, const double *s, double *f) {
    const double *h = J + 1, *w = s, *v = s + 3;
    f[0] = J[4] * w[0] + J[7] * w[1] + J[8] * w[2] + h[1] * v[2] - h[2] * v[1];
    f[1] = J[7] * w[0] + J[5] * w[1] + J[9] * w[2] + h[2] * v[0] - h[0] * v[2];
    f[2] = J[8] * w[0] + J[9] * w[1] + J[6] * w[2] + h[0] * v[1] - h[1] * v[0];
    f[3] = J[0] * v[0] - (h[1] * w[2] - h[2] * w[1]);
    f[4] = J[0] * v[1] - (h[2] * w[0] - h[0] * w[2]);
    f[5] = J[0] * v[2] - (h[0] * w[1] - h[1] * w[0]);
}

/* Body i in its tree's world-aligned coordinates about the root body's
 * origin: its 10-number inertia at IA + 36 i and its motion subspace
 * (component a of dof k at U[a nv + k]); returns d = p_i - O in dO. Each
 * tree of the world's children has its own origin, so a floating tree far
 * from the world origin keeps its digits. */
static void world_body(const mb_model *m, mb_data *d, int i, double *dO) {
    int nv = m->nv;
    const double *O = B3(d->pW, m->root[i]), *R = B9(d->RW, i), *p = B3(d->pW, i);
    for (int b = 0; b < 3; ++b) dO[b] = p[b] - O[b];
    world_inertia(m, d, i, O, B36(d->IA, i));
    /* a revolute S has no linear part, a prismatic one no angular part */
    int t = m->jtype[i], ang = t != MB_PRISMATIC, lin = t != MB_REVOLUTE;
    for (int a = 0; a < m->nvi[i]; ++a) {
        const double *s = B36(d->S, i) + 6 * a;
        double sw[6] = {0, 0, 0, 0, 0, 0}, dw[3] = {0, 0, 0};
        if (ang) {
            mv3(R, s, sw);
            cross3(dO, sw, dw);
        }
        if (lin) mv3(R, s + 3, sw + 3);
        for (int b = 0; b < 3; ++b) d->U[(3 + b) * nv + m->iv[i] + a] = sw[3 + b] + dw[b];
        for (int b = 0; b < 3; ++b) d->U[b * nv + m->iv[i] + a] = sw[b];
    }
}

/* The rows of H of body i's dofs over the lower pattern, H[k][j] =
 * S_j . (Ic_i S_k) for j = k and its ancestors, with Ic_i the composite
 * inertia at IA + 36 i (complete once i's descendants are done); then Ic_i
 * is added to its parent's. All in one frame per tree, so the composite
 * inertias add without transforms and each entry is one dot product (RBDA
 * Table 6.2 in one frame instead of link frames). A run of consecutive
 * ancestor dofs is a matrix-vector product over contiguous components.
 * packed = 0: H is the row-major nv x nv matrix; 1: H holds the pattern's
 * values row after row (row k at rowadr[k], its columns decreasing), so a
 * wide tree's rows are written contiguously instead of one scattered entry
 * per cache line of a dense matrix. */
AXIS_INLINE void composite_rows_k(const mb_model *m, mb_data *d, int i, double *H, int packed) {
    int nv = m->nv;
    const double *S0 = d->U, *S1 = S0 + nv, *S2 = S1 + nv, *S3 = S2 + nv, *S4 = S3 + nv, *S5 = S4 + nv;
    const double *J = B36(d->IA, i);
    for (int a = 0; a < m->nvi[i]; ++a) {
        int k = m->iv[i] + a;
        double F[6], s[6] = {S0[k], S1[k], S2[k], S3[k], S4[k], S5[k]};
        inertia10_mv(J, s, F);
        if (packed) {
            /* the row's columns listed (lcol): independent loads, no walk */
            long e0 = m->rowadr[k], e1 = k + 1 < nv ? m->rowadr[k + 1] : m->lnnz;
            for (long e = e0; e < e1; ++e) {
                int t = m->lcol[e];
                H[e] = S0[t] * F[0] + S1[t] * F[1] + S2[t] * F[2] + S3[t] * F[3] + S4[t] * F[4] + S5[t] * F[5];
            }
            continue;
        }
        double *Hk = H + (size_t)k * nv;
        for (int j = k; j >= 0; j = m->lambda[j]) {
            int j0 = m->lrun[j];
            for (int t = j0; t <= j; ++t)
                Hk[t] = S0[t] * F[0] + S1[t] * F[1] + S2[t] * F[2] + S3[t] * F[3] + S4[t] * F[4] +
                        S5[t] * F[5];
            j = j0;
        }
    }
    int p = m->parent[i];
    if (p > 0)
        for (int b = 0; b < 10; ++b) d->IA[36 * p + b] += J[b];
}
static void composite_rows(const mb_model *m, mb_data *d, int i, double *H) { composite_rows_k(m, d, i, H, 0); }

/* CRBA over the lower pattern of H (row-major nv x nv; nothing else
 * written; packed: the pattern's values, as composite_rows_k), from the
 * world poses of mb_kinematics. */
static void crba_lower(const mb_model *m, mb_data *d, double *H, int packed) {
    double dO[3];
    for (int i = 1; i < m->nb; ++i) world_body(m, d, i, dO);
    if (packed)
        for (int i = m->nb - 1; i > 0; --i) composite_rows_k(m, d, i, H, 1);
    else
        for (int i = m->nb - 1; i > 0; --i) composite_rows_k(m, d, i, H, 0);
}

/* The sparse route's two passes: C = RNEA(q, qd, qdd = 0) (gravity and
 * fext included) and the lower pattern of H, in the same world-aligned
 * coordinates. There a body-fixed motion vector s changes as v x s, so
 * v_i = v_parent + S qd, a_i = a_parent + v_i x (S qd) + X cJ (cJ = Sring qd
 * of universal and planar joints, from mb_kinematics with qd), f_i = I_i a_i
 * + v_i x* I_i v_i - fext_i, and f adds up the tree untransformed (RBDA
 * Table 5.1 in one frame). Needs the world poses of mb_kinematics (and cJ
 * for joints with Sring). Workspace: pA (velocities), uu (accelerations),
 * f (forces), IA and U as crba_lower. */
static void sparse_bias_crba(const mb_model *m, mb_data *d, const double *qd, const double *fext, int with_gravity,
                             double *C, double *H) {
    int nv = m->nv;
    const double *S0 = d->U, *S1 = S0 + nv, *S2 = S1 + nv, *S3 = S2 + nv, *S4 = S3 + nv, *S5 = S4 + nv;
    double a0[6], zero[6] = {0, 0, 0, 0, 0, 0};
    base_acc(d, with_gravity, a0);
    for (int i = 1; i < m->nb; ++i) {
        double dO[3], vJ[6] = {0, 0, 0, 0, 0, 0}, Jv[6], vxJv[6];
        world_body(m, d, i, dO);
        int p = m->parent[i];
        const double *vp = p > 0 ? B6(d->pA, p) : zero, *ap = p > 0 ? B6(d->uu, p) : a0;
        const double *J = B36(d->IA, i);
        double *v = B6(d->pA, i), *a = B6(d->uu, i), *f = B6(d->f, i);
        for (int k = m->iv[i]; k < m->iv[i] + m->nvi[i]; ++k) {
            double w = qd[k];
            vJ[0] += S0[k] * w; vJ[1] += S1[k] * w; vJ[2] += S2[k] * w;
            vJ[3] += S3[k] * w; vJ[4] += S4[k] * w; vJ[5] += S5[k] * w;
        }
        for (int b = 0; b < 6; ++b) v[b] = vp[b] + vJ[b];
        crm(v, vJ, a);
        if (m->jtype[i] == MB_UNIVERSAL || m->jtype[i] == MB_PLANAR) {
            const double *cJ = B6(d->cJ, i), *R = B9(d->RW, i);
            double cw[6], dc[3];
            mv3(R, cJ, cw);
            mv3(R, cJ + 3, cw + 3);
            cross3(dO, cw, dc);
            for (int b = 0; b < 3; ++b) { a[b] += cw[b]; a[3 + b] += cw[3 + b] + dc[b]; }
        }
        for (int b = 0; b < 6; ++b) a[b] += ap[b];
        inertia10_mv(J, a, f);
        inertia10_mv(J, v, Jv);
        crf(v, Jv, vxJv);
        for (int b = 0; b < 6; ++b) f[b] += vxJv[b];
        if (fext) {
            /* the body-frame force about the body origin, in the tree's frame about O */
            const double *fe = B6(fext, i), *R = B9(d->RW, i);
            double n[6], dn[3];
            mv3(R, fe, n);
            mv3(R, fe + 3, n + 3);
            cross3(dO, n + 3, dn);
            for (int b = 0; b < 3; ++b) { f[b] -= n[b] + dn[b]; f[3 + b] -= n[3 + b]; }
        }
    }
    for (int i = m->nb - 1; i > 0; --i) {
        const double *f = B6(d->f, i);
        for (int k = m->iv[i]; k < m->iv[i] + m->nvi[i]; ++k)
            C[k] = S0[k] * f[0] + S1[k] * f[1] + S2[k] * f[2] + S3[k] * f[3] + S4[k] * f[4] + S5[k] * f[5];
        int p = m->parent[i];
        if (p > 0)
            for (int b = 0; b < 6; ++b) d->f[6 * p + b] += f[b];
        composite_rows(m, d, i, H);
    }
}

void mb_sparse_mirror(double *H, const int *lambda, int n, long nnz) {
    if (4 * nnz <= (long)n * n) {
        /* few entries: copy each along the ancestor chains */
        for (int k = 1; k < n; ++k) {
            const double *Hk = H + (size_t)k * n;
            for (int j = lambda[k]; j >= 0; j = lambda[j]) H[(size_t)j * n + k] = Hk[j];
        }
        return;
    }
    /* dense (a chain): transpose the whole lower triangle in tiles that stay
     * in the L1 cache, instead of one cache line per strided write */
    enum { T = 32 };
    for (int ib = 0; ib < n; ib += T) {
        int ie = ib + T < n ? ib + T : n;
        for (int jb = 0; jb <= ib; jb += T)
            for (int i = ib; i < ie; ++i) {
                const double *Hi = H + (size_t)i * n;
                int je = jb + T < i ? jb + T : i;
                for (int j = jb; j < je; ++j) H[(size_t)j * n + i] = Hi[j];
            }
    }
}

int mb_ltdl_factor(double *H, const int *lambda, int n) {
    for (int k = n - 1; k >= 0; --k) {
        double *Hk = H + (size_t)k * n, dk = Hk[k];
        if (!(dk > 0.0)) return k + 1;
        for (int i = lambda[k]; i >= 0; i = lambda[i]) {
            double a = Hk[i] / dk, *Hi = H + (size_t)i * n;
            for (int j = i; j >= 0; j = lambda[j]) Hi[j] -= a * Hk[j];
            Hk[i] = a;
        }
    }
    return 0;
}

int mb_ltl_factor(double *H, const int *lambda, int n) {
    for (int k = n - 1; k >= 0; --k) {
        double *Hk = H + (size_t)k * n;
        if (!(Hk[k] > 0.0)) return k + 1;
        double lk = sqrt(Hk[k]);
        Hk[k] = lk;
        for (int i = lambda[k]; i >= 0; i = lambda[i]) Hk[i] /= lk;
        for (int i = lambda[k]; i >= 0; i = lambda[i]) {
            double a = Hk[i], *Hi = H + (size_t)i * n;
            for (int j = i; j >= 0; j = lambda[j]) Hi[j] -= a * Hk[j];
        }
    }
    return 0;
}

/* H = L^T D L: L^T y = x from the last dof up (dof k's y is final once its
 * descendants are done), y <- D^-1 y, then L x = y from the first dof down */
void mb_ltdl_solve(const double *LD, const int *lambda, int n, double *x) {
    for (int k = n - 1; k >= 0; --k) {
        const double *Lk = LD + (size_t)k * n;
        for (int i = lambda[k]; i >= 0; i = lambda[i]) x[i] -= Lk[i] * x[k];
    }
    for (int k = 0; k < n; ++k) x[k] /= LD[(size_t)k * n + k];
    for (int k = 0; k < n; ++k) {
        const double *Lk = LD + (size_t)k * n;
        for (int i = lambda[k]; i >= 0; i = lambda[i]) x[k] -= Lk[i] * x[i];
    }
}

/* H = L^T L: the same sweeps with the diagonal of L in each */
void mb_ltl_solve(const double *L, const int *lambda, int n, double *x) {
    for (int k = n - 1; k >= 0; --k) {
        const double *Lk = L + (size_t)k * n;
        x[k] /= Lk[k];
        for (int i = lambda[k]; i >= 0; i = lambda[i]) x[i] -= Lk[i] * x[k];
    }
    for (int k = 0; k < n; ++k) {
        const double *Lk = L + (size_t)k * n;
        for (int i = lambda[k]; i >= 0; i = lambda[i]) x[k] -= Lk[i] * x[i];
        x[k] /= Lk[k];
    }
}

/* the body whose joint carries dof k */
static int dof_body(const mb_model *m, int k) {
    for (int i = 1; i < m->nb; ++i)
        if (k >= m->iv[i] && k < m->iv[i] + m->nvi[i]) return i;
    return 0;
}

/* qdd = H^-1 (tau - C) with C from the RNEA at qdd = 0 and H from the sparse
 * CRBA, factored H = L^T D L in d->Hs; needs kinematics(q, ...) with the
 * world poses (and qd when a joint has Sring). Returns 0 or -(body) when H is
 * not positive definite. */
static int sparse_forward(const mb_model *m, mb_data *d, const double *qd, const double *tau, const double *fext,
                          int with_gravity, double *qdd) {
    int nv = m->nv;
    sparse_bias_crba(m, d, qd, fext, with_gravity, qdd, d->Hs);
    for (int k = 0; k < nv; ++k) qdd[k] = tau[k] - qdd[k];
    int err = mb_ltdl_factor(d->Hs, m->lambda, nv);
    if (err) return -dof_body(m, err - 1);
    mb_ltdl_solve(d->Hs, m->lambda, nv, qdd);
    return 0;
}

int mb_forward_dynamics(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *tau,
                        const double *fext, int with_gravity, double *qdd, int route) {
    if (route < 0) route = m->fd_sparse;
    if (!route || !d->Hs) return mb_aba(m, d, q, qd, tau, fext, with_gravity, qdd);
    kinematics(m, d, q, m->has_sr ? qd : NULL, 1);
    return sparse_forward(m, d, qd, tau, fext, with_gravity, qdd);
}
