/*
 * Flexible articulated-body algorithm: assumed-modes beams inside the O(N)
 * recursion (hybrid ABA with prescribed joints).
 *
 * A beam with floating frame B and modal coordinates eta has "members" k (its
 * cross-sections and the bodies of its tip chain). Each member moves as
 *     A_k = X_k A_B + J_k eta_ddot + zeta_k,
 * where X_k = ^kX_B, and J_k, zeta_k come from a forward recursion over the
 * member's virtual chain with c_dot = (g - H eta).eta_dot and
 * c_ddot = (g - H eta).eta_ddot - eta_dot^T H eta_dot. With the member's
 * articulated inertia I_k and bias p_k (the tip collects those of the bodies
 * it carries), the beam's modal equations are solved locally (Schur
 * complement of M_ee), leaving B an ordinary articulated inertia:
 *     IA_B += sum X^T I X - M_Re M_ee^-1 M_eR
 *     pA_B += sum X^T (I zeta + p) + M_Re M_ee^-1 (Q - K eta - D eta_dot - b_e)
 *     eta_ddot = M_ee^-1 (Q - K eta - D eta_dot - b_e - M_eR A_B).
 * Cost O(N) in bodies and O(ns m^2 + m^3) per beam of m modes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flexible.h"
#include "spatial.h"

#define B6(p, i) ((p) + 6 * (i))
#define B36(p, i) ((p) + 36 * (i))
#define B9(p, i) ((p) + 9 * (i))
#define B3(p, i) ((p) + 3 * (i))

int mb_flex_alloc_workspace(mb_flex *fx) {
    const mb_model *m = fx->m;
    size_t nb = (size_t)m->nb, nm = (size_t)(fx->nm_max > 0 ? fx->nm_max : 1);
    size_t nbeam = (size_t)(fx->nbeam > 0 ? fx->nbeam : 1);
    fx->c = calloc((size_t)m->nq + 1, sizeof(double));
    fx->cd = calloc((size_t)m->nv + 1, sizeof(double));
    fx->cqd = calloc((size_t)m->nq + 1, sizeof(double));
    fx->vtau = calloc((size_t)m->nv + 1, sizeof(double));
    fx->XE = calloc(nb * 9, sizeof(double));
    fx->Xr = calloc(nb * 3, sizeof(double));
    fx->J = calloc(nb * nm * 6, sizeof(double));
    fx->zeta = calloc(nb * 6, sizeof(double));
    fx->grow = calloc(nb * nm, sizeof(double));
    fx->gam = calloc(nb, sizeof(double));
    fx->Mre = calloc(nbeam * 6 * nm, sizeof(double));
    fx->Mee = calloc(nbeam * nm * nm, sizeof(double));
    fx->be = calloc(nbeam * nm, sizeof(double));
    fx->Y = calloc(nbeam * 6 * nm, sizeof(double));
    fx->w = calloc(nbeam * nm, sizeof(double));
    fx->pacc = calloc((size_t)fx->nv + 1, sizeof(double));
    fx->pres = calloc(nb, sizeof(int));
    fx->xid = calloc(nb, sizeof(int));
    fx->rk = calloc((size_t)8 * (size_t)(fx->nq + fx->nv) + 8, sizeof(double));
    fx->d = mb_data_new(m);
    if (!fx->d || !fx->xid || !fx->c || !fx->cd || !fx->cqd || !fx->vtau || !fx->XE || !fx->Xr || !fx->J || !fx->zeta ||
        !fx->grow || !fx->gam || !fx->Mre || !fx->Mee || !fx->be || !fx->Y || !fx->w ||
        !fx->pacc || !fx->pres || !fx->rk)
        return -1;
    return 0;
}

void mb_flex_free(mb_flex *fx) {
    if (!fx) return;
    void *p[] = {fx->role, fx->beam, fx->pq, fx->pv, fx->goff, fx->hoff, fx->gtab, fx->htab,
                 fx->bbody, fx->bq, fx->bv, fx->bnm, fx->kdoff, fx->kd, fx->c, fx->cd, fx->cqd,
                 fx->vtau, fx->XE, fx->Xr, fx->J, fx->zeta, fx->grow, fx->gam, fx->Mre, fx->Mee,
                 fx->be, fx->Y, fx->w, fx->pacc, fx->pres, fx->xid, fx->rk};
    for (size_t k = 0; k < sizeof(p) / sizeof(p[0]); ++k) free(p[k]);
    mb_data_free(fx->d);
    free(fx);
}

/* In-place Cholesky A = L L^T of an n x n SPD matrix (leading dimension ld,
 * lower triangle used). Returns -1 when a pivot is not clearly positive. */
int mb_chol(double *A, int n, int ld) {
    double scale = 0.0;
    for (int k = 0; k < n; ++k) scale = fmax(scale, fabs(A[ld * k + k]));
    for (int j = 0; j < n; ++j) {
        double s = A[ld * j + j];
        for (int k = 0; k < j; ++k) s -= A[ld * j + k] * A[ld * j + k];
        if (!(s > 1e-14 * scale) || !(s > 0.0)) return -1;
        double d = sqrt(s);
        A[ld * j + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double t = A[ld * i + j];
            for (int k = 0; k < j; ++k) t -= A[ld * i + k] * A[ld * j + k];
            A[ld * i + j] = t / d;
        }
    }
    return 0;
}

/* x <- A^-1 x with the factor of chol */
void mb_chol_solve(const double *L, int n, int ld, double *x) {
    for (int i = 0; i < n; ++i) {
        double t = x[i];
        for (int k = 0; k < i; ++k) t -= L[ld * i + k] * x[k];
        x[i] = t / L[ld * i + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double t = x[i];
        for (int k = i + 1; k < n; ++k) t -= L[ld * k + i] * x[k];
        x[i] = t / L[ld * i + i];
    }
}

/* virtual coordinates c, rates cd, and per deformation joint g - H eta and
 * -eta_dot^T H eta_dot, from the public state */
static void virtual_state(mb_flex *fx, const double *q, const double *v) {
    const mb_model *m = fx->m;
    for (int i = 1; i < m->nb; ++i) {
        int role = fx->role[i];
        if (role == FX_RIGID || role == FX_FRAME) {
            memcpy(fx->c + m->iq[i], q + fx->pq[i], sizeof(double) * (size_t)m->nqi[i]);
            memcpy(fx->cd + m->iv[i], v + fx->pv[i], sizeof(double) * (size_t)m->nvi[i]);
        } else if (role == FX_DEFORM) {
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *eta = q + fx->bq[b], *etad = v + fx->bv[b];
            const double *g = fx->gtab + fx->goff[i];
            double *gr = fx->grow + (size_t)fx->nm_max * i;
            double c = 0.0, cd = 0.0, gam = 0.0;
            if (fx->hoff[i] >= 0) {
                const double *H = fx->htab + fx->hoff[i];
                for (int a = 0; a < nm; ++a) {
                    double he = 0.0, hd = 0.0;
                    for (int k = 0; k < nm; ++k) {
                        he += H[nm * a + k] * eta[k];
                        hd += H[nm * a + k] * etad[k];
                    }
                    gr[a] = g[a] - he;
                    c += (g[a] - 0.5 * he) * eta[a];
                    gam -= hd * etad[a];
                }
            } else {
                for (int a = 0; a < nm; ++a) {
                    gr[a] = g[a];
                    c += g[a] * eta[a];
                }
            }
            for (int a = 0; a < nm; ++a) cd += gr[a] * etad[a];
            fx->c[m->iq[i]] = c;
            fx->cd[m->iv[i]] = cd;
            fx->gam[i] = gam;
        }
    }
}

void mb_flex_virtual_state(mb_flex *fx, const double *q, const double *v) { virtual_state(fx, q, v); }

/* Most virtual joints are prismatic with an unrotated joint frame, so their
 * transforms are pure translations (E exactly the identity): these helpers
 * skip the rotations. */
static int is_identity(const double *E) {
    return E[0] == 1.0 && E[4] == 1.0 && E[8] == 1.0 && E[1] == 0.0 && E[2] == 0.0 &&
           E[3] == 0.0 && E[5] == 0.0 && E[6] == 0.0 && E[7] == 0.0;
}
/* y = X x for X = (1, r) */
static inline void Tmv(const double *r, const double *x, double *y) {
    double rw[3];
    cross3(r, x, rw);
    y[0] = x[0]; y[1] = x[1]; y[2] = x[2];
    y[3] = x[3] - rw[0]; y[4] = x[4] - rw[1]; y[5] = x[5] - rw[2];
}
/* y = X^T x for X = (1, r) */
static inline void Ttf(const double *r, const double *x, double *y) {
    double rf[3];
    cross3(r, x + 3, rf);
    y[0] = x[0] + rf[0]; y[1] = x[1] + rf[1]; y[2] = x[2] + rf[2];
    y[3] = x[3]; y[4] = x[4]; y[5] = x[5];
}
/* Ip += X^T I X for X = (1, r): XTIX_add without the rotations */
static void TTIT_add(const double *r, const double *I, double *Ip) {
    double A[9], B[9], C[9];
    inertia_blocks(I, A, B, C);
    shifted_inertia_add(A, B, C, r, Ip);
}

/* ^kX_B, J_k and zeta_k of every deformation body (needs mb_kinematics) */
static void member_kinematics(mb_flex *fx) {
    const mb_model *m = fx->m;
    const mb_data *d = fx->d;
    int nmx = fx->nm_max;
    for (int i = 1; i < m->nb; ++i) {
        if (fx->role[i] != FX_DEFORM) continue;
        int p = m->parent[i], nm = fx->bnm[fx->beam[i]];
        const double *E = B9(d->E, i), *r = B3(d->r, i), *S = B36(d->S, i);
        const double *gr = fx->grow + (size_t)nmx * i, *cv = B6(d->c, i);
        double *XE = B9(fx->XE, i), *Xr = B3(fx->Xr, i), *zeta = B6(fx->zeta, i);
        double *J = fx->J + (size_t)6 * nmx * i;
        double gam = fx->gam[i];
        int eid = is_identity(E);
        if (fx->role[p] == FX_DEFORM) {
            const double *Jp = fx->J + (size_t)6 * nmx * p;
            double t[3];
            if (eid) memcpy(XE, B9(fx->XE, p), 9 * sizeof(double));
            else mm3(E, B9(fx->XE, p), XE);
            mtv3(B9(fx->XE, p), r, t);
            for (int k = 0; k < 3; ++k) Xr[k] = fx->Xr[3 * p + k] + t[k];
            for (int j = 0; j < nm; ++j) {
                if (eid) Tmv(r, Jp + 6 * j, J + 6 * j);
                else Xmv(E, r, Jp + 6 * j, J + 6 * j);
                for (int k = 0; k < 6; ++k) J[6 * j + k] += S[k] * gr[j];
            }
            if (eid) Tmv(r, B6(fx->zeta, p), zeta);
            else Xmv(E, r, B6(fx->zeta, p), zeta);
            fx->xid[i] = eid && fx->xid[p];
        } else { /* the first joint of a chain, on the floating frame */
            memcpy(XE, E, 9 * sizeof(double));
            memcpy(Xr, r, 3 * sizeof(double));
            for (int j = 0; j < nm; ++j)
                for (int k = 0; k < 6; ++k) J[6 * j + k] = S[k] * gr[j];
            memset(zeta, 0, 6 * sizeof(double));
            fx->xid[i] = eid;
        }
        for (int k = 0; k < 6; ++k) zeta[k] += cv[k] + S[k] * gam;
    }
}

static int all_zero(const double *x, int n) {
    for (int k = 0; k < n; ++k)
        if (x[k] != 0.0) return 0;
    return 1;
}

/* add member i (articulated inertia IA_i, bias pA_i) to its beam's sums */
static void add_member(mb_flex *fx, int i) {
    mb_data *d = fx->d;
    const double *I = B36(d->IA, i), *p = B6(d->pA, i);
    if (all_zero(p, 6) && all_zero(I, 36)) return; /* a massless link of a chain */
    int b = fx->beam[i], nm = fx->bnm[b], nmx = fx->nm_max, B = fx->bbody[b];
    const double *XE = B9(fx->XE, i), *Xr = B3(fx->Xr, i), *zeta = B6(fx->zeta, i);
    const double *J = fx->J + (size_t)6 * nmx * i;
    double *Mre = fx->Mre + (size_t)6 * nmx * b, *Mee = fx->Mee + (size_t)nmx * nmx * b;
    double *be = fx->be + (size_t)nmx * b;
    double f0[6], IJ[6], t[6];
    int xid = fx->xid[i];
    /* a bare cross-section: inertia about its centroid, blocks diag(A, C) */
    int blockdiag = all_zero(I + 3, 3) && all_zero(I + 9, 3) && all_zero(I + 15, 3);
    mv6(I, zeta, f0);
    for (int k = 0; k < 6; ++k) f0[k] += p[k];
    if (xid) {
        TTIT_add(Xr, I, B36(d->IA, B));
        Ttf(Xr, f0, t);
        for (int k = 0; k < 6; ++k) d->pA[6 * B + k] += t[k];
    } else {
        XTIX_add(XE, Xr, I, B36(d->IA, B));
        XTf_add(XE, Xr, f0, B6(d->pA, B));
    }
    for (int j = 0; j < nm; ++j) {
        const double *Jj = J + 6 * j;
        if (blockdiag) {
            for (int a = 0; a < 3; ++a) {
                const double *Ia = I + 6 * a, *Ic = I + 6 * (a + 3) + 3;
                IJ[a] = Ia[0] * Jj[0] + Ia[1] * Jj[1] + Ia[2] * Jj[2];
                IJ[a + 3] = Ic[0] * Jj[3] + Ic[1] * Jj[4] + Ic[2] * Jj[5];
            }
        } else {
            mv6(I, Jj, IJ);
        }
        if (xid) Ttf(Xr, IJ, t);
        else XTf(XE, Xr, IJ, t);
        for (int k = 0; k < 6; ++k) Mre[6 * j + k] += t[k];
        be[j] += dot6(Jj, f0);
        for (int l = 0; l <= j; ++l) Mee[nm * j + l] += dot6(J + 6 * l, IJ);
    }
}

/* Schur complement of beam b's modal block into the articulated inertia of
 * its frame; keeps Y = M_ee^-1 M_eR and w = M_ee^-1 u_e for the forward pass */
static int reduce_beam(mb_flex *fx, int b, const double *q, const double *v, const double *tau) {
    mb_data *d = fx->d;
    int nm = fx->bnm[b], nmx = fx->nm_max, B = fx->bbody[b];
    double *Mre = fx->Mre + (size_t)6 * nmx * b, *Mee = fx->Mee + (size_t)nmx * nmx * b;
    double *be = fx->be + (size_t)nmx * b, *Y = fx->Y + (size_t)6 * nmx * b;
    double *w = fx->w + (size_t)nmx * b;
    const double *K = fx->kd + fx->kdoff[b], *D = K + nm * nm;
    const double *eta = q + fx->bq[b], *etad = v + fx->bv[b];
    if (mb_chol(Mee, nm, nm)) return 1 + b;
    for (int j = 0; j < nm; ++j) {
        double s = tau[fx->bv[b] + j] - be[j];
        for (int k = 0; k < nm; ++k) s -= K[nm * j + k] * eta[k] + D[nm * j + k] * etad[k];
        w[j] = s;
    }
    mb_chol_solve(Mee, nm, nm, w);
    /* Y column k (of 6) = M_ee^-1 (row k of M_Re)^T, stored Y[6 j + k] */
    double col[64], *y = nm <= 64 ? col : NULL;
    if (!y) y = malloc(sizeof(double) * (size_t)nm);
    if (!y) return 1 + b;
    for (int k = 0; k < 6; ++k) {
        for (int j = 0; j < nm; ++j) y[j] = Mre[6 * j + k];
        mb_chol_solve(Mee, nm, nm, y);
        for (int j = 0; j < nm; ++j) Y[6 * j + k] = y[j];
    }
    if (y != col) free(y);
    double *IA = B36(d->IA, B), *pA = B6(d->pA, B);
    for (int a = 0; a < 6; ++a) {
        double s = 0.0;
        for (int j = 0; j < nm; ++j) s += Mre[6 * j + a] * w[j];
        pA[a] += s;
        for (int c = 0; c < 6; ++c) {
            double t = 0.0;
            for (int j = 0; j < nm; ++j) t += Mre[6 * j + a] * Y[6 * j + c];
            IA[6 * a + c] -= t;
        }
    }
    return 0;
}

static int flex_backward(mb_flex *fx, const double *q, const double *v, const double *tau) {
    const mb_model *m = fx->m;
    mb_data *d = fx->d;
    int nmx = fx->nm_max;
    memset(fx->Mre, 0, sizeof(double) * (size_t)fx->nbeam * 6 * nmx);
    memset(fx->Mee, 0, sizeof(double) * (size_t)fx->nbeam * nmx * nmx);
    memset(fx->be, 0, sizeof(double) * (size_t)fx->nbeam * nmx);
    for (int i = m->nb - 1; i > 0; --i) {
        int role = fx->role[i], err;
        if (role == FX_DEFORM) {
            add_member(fx, i);
            continue;
        }
        if (role == FX_FRAME && (err = reduce_beam(fx, fx->beam[i], q, v, tau))) return err;
        const double *pres = fx->pres[i] ? fx->pacc + fx->pv[i] : NULL;
        if ((err = mb_aba_joint_step(m, d, i, fx->vtau, pres))) return err;
    }
    return 0;
}

static void flex_forward(mb_flex *fx, double *vdot) {
    const mb_model *m = fx->m;
    mb_data *d = fx->d;
    int nmx = fx->nm_max;
    double a0[6] = {0, 0, 0, -d->g[0], -d->g[1], -d->g[2]};
    for (int i = 1; i < m->nb; ++i) {
        int p = m->parent[i], role = fx->role[i];
        double *a = B6(d->a, i);
        const double *ap = p > 0 ? B6(d->a, p) : a0;
        if (role == FX_DEFORM) {
            /* virtual joint: a = X a_p + c + S c_ddot(eta_ddot) */
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *S = B36(d->S, i);
            const double *gr = fx->grow + (size_t)nmx * i, *etadd = vdot + fx->bv[b];
            double cdd = fx->gam[i];
            Xmv(B9(d->E, i), B3(d->r, i), ap, a);
            for (int j = 0; j < nm; ++j) cdd += gr[j] * etadd[j];
            for (int k = 0; k < 6; ++k) a[k] += d->c[6 * i + k] + S[k] * cdd;
            continue;
        }
        const double *pres = fx->pres[i] ? fx->pacc + fx->pv[i] : NULL;
        mb_aba_joint_forward(m, d, i, ap, pres, m->nvi[i] > 0 ? vdot + fx->pv[i] : NULL);
        if (role == FX_FRAME) {
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *Y = fx->Y + (size_t)6 * nmx * b, *w = fx->w + (size_t)nmx * b;
            double *etadd = vdot + fx->bv[b];
            for (int j = 0; j < nm; ++j) etadd[j] = w[j] - dot6(Y + 6 * j, a);
        }
    }
}

int mb_flex_rhs(mb_flex *fx, const double *q, const double *v, const double *tau,
                const double *fext, double *qdot, double *vdot) {
    const mb_model *m = fx->m;
    mb_data *d = fx->d;
    int nb = m->nb;
    virtual_state(fx, q, v);
    mb_kinematics(m, d, fx->c, fx->cd);
    memset(fx->vtau, 0, sizeof(double) * (size_t)m->nv);
    for (int i = 1; i < nb; ++i)
        if (fx->role[i] == FX_RIGID || fx->role[i] == FX_FRAME)
            memcpy(fx->vtau + m->iv[i], tau + fx->pv[i], sizeof(double) * (size_t)m->nvi[i]);
    if (fext) memcpy(d->fext, fext, sizeof(double) * (size_t)nb * 6);
    else memset(d->fext, 0, sizeof(double) * (size_t)nb * 6);
    mb_passive_forces(m, d, fx->c, fx->cd, fx->vtau, d->fext);
    /* rigid-body inertias and bias forces v x* I v - fext */
    memcpy(d->IA, m->Ibody, sizeof(double) * (size_t)nb * 36);
    mb_bias_forces(m, d, d->fext);
    member_kinematics(fx);
    int err = flex_backward(fx, q, v, tau);
    if (err) return err;
    flex_forward(fx, vdot);
    /* configuration rates: rigid joints through the engine, modal ones = v */
    mb_qdot(m, fx->c, fx->cd, fx->cqd);
    for (int i = 1; i < nb; ++i)
        if (fx->role[i] == FX_RIGID || fx->role[i] == FX_FRAME)
            memcpy(qdot + fx->pq[i], fx->cqd + m->iq[i], sizeof(double) * (size_t)m->nqi[i]);
    for (int b = 0; b < fx->nbeam; ++b)
        memcpy(qdot + fx->bq[b], v + fx->bv[b], sizeof(double) * (size_t)fx->bnm[b]);
    return 0;
}

/* ------------------------------------------------------ fixed-step loop */

static int all_finite(const double *x, int n) {
    for (int k = 0; k < n; ++k)
        if (!isfinite(x[k])) return 0;
    return 1;
}

/* mb_flex_rhs as an mb_ode right-hand side, refusing a non-finite stage
 * (the Cholesky factors would otherwise report it as a singular mass) */
static int flex_ode_rhs(void *ctx, const double *q, const double *v, const double *tau,
                        const double *fext, double *qdot, double *vdot) {
    mb_flex *fx = ctx;
    if (!all_finite(q, fx->nq) || !all_finite(v, fx->nv)) return FX_NONFINITE;
    return mb_flex_rhs(fx, q, v, tau, fext, qdot, vdot);
}

/* unit quaternions of the rigid and frame joints, in public coordinates */
static void flex_normalize(void *ctx, double *q) {
    mb_flex *fx = ctx;
    for (int i = 1; i < fx->m->nb; ++i)
        if (fx->role[i] == FX_RIGID || fx->role[i] == FX_FRAME)
            mb_normalize_joint(fx->m, i, q + fx->pq[i]);
}

int mb_flex_rk4(mb_flex *fx, double *q, double *v, const double *tau, const double *fext,
                double h, int n) {
    mb_ode ode = {fx, flex_ode_rhs, flex_normalize, fx->nq, fx->nv, fx->rk, NULL};
    memset(fx->pres, 0, sizeof(int) * (size_t)fx->m->nb);
    return mb_rk4_steps(&ode, q, v, tau, fext, h, n);
}

void mb_flex_ode(mb_flex *fx, mb_ode *ode) {
    mb_ode o = {fx, flex_ode_rhs, flex_normalize, fx->nq, fx->nv, fx->rk, NULL};
    memset(fx->pres, 0, sizeof(int) * (size_t)fx->m->nb);
    *ode = o;
}
