/*
 * Exact directional derivatives of a flexible plant (assumed-modes beams,
 * csrc/flexible.h), by forward-mode tangents of the equations mb_flex_rhs
 * solves (no step size, no truncation error).
 *
 * The flexible system is a "virtual tree" (an ordinary mb_model) whose 1-DOF
 * deformation joints have coordinates c = g . eta - 1/2 eta^T H eta of the
 * beam's modal coordinates eta; rigid and frame joints copy the public q.
 * With Phi the rows gr = g - H eta of the deformation joints (identity rows
 * for the others), the kernel's recursion (members' J = S gr, modal Schur
 * complement) solves the public equations
 *     R = Phi^T [ID_v(c, Phi v, Phi vdot + gam) - tau_v] + K eta + D eta_dot - tau = 0,
 * gam = -eta_dot^T H eta_dot, tau_v the virtual generalized forces of the
 * rigid and frame joints (commands and their passive forces; the kernel
 * applies none at deformation joints), ID_v the virtual tree's inverse
 * dynamics less its point forces. Along (dq, dv, du):
 *     dvdot = -Mpub^-1 dR|dvdot=0,   Mpub = Phi^T M_v Phi,
 *     dR|dvdot=0 = Phi^T (dID_v - dtau_v) + dPhi^T ID_v + K deta + D deta_dot - dtau,
 * with the virtual tangents dc (of c itself), dcd = Phi dv + dPhi v and
 * dcdd = dPhi vdot + dgam, dPhi = -H deta: dID_v along them is dirder.c's
 * rigid inverse-dynamics tangent on the virtual tree, and M_v Phi e_j its
 * tangent along dcdd = Phi e_j alone (ID is linear in cdd). The sensors of
 * the virtual tree (points, energies) take dirder.c's tangents at (dc, dcd);
 * the public ones (state values, velocities, linear combinations) and the
 * strain energy 1/2 eta^T K eta are differentiated here. Flexible systems
 * have no quaternion joints: dq/dt = v.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flex_dirder.h"
#include "flexsensors.h"

const char *mbn_flex_dirder_inexact(mbn_instance *in) {
    const mbn_data *D = in->data;
    const mb_model *m = in->m;
    if (mbn_elements_frame(D->nel, in->el)) return "a frame element has no tangents on a flexible plant in the C runtime";
    if (D->nq != D->nv || m->nq != m->nv)
        return "flexible systems with quaternion joints have no tangents in the C runtime";
    for (int i = 1; i < m->nb; ++i) {
        int t = m->jtype[i];
        if (t != MB_FIXED && t != MB_REVOLUTE && t != MB_PRISMATIC && t != MB_UNIVERSAL)
            return "flexible systems with planar, spherical or free joints have no tangents in the C runtime";
    }
    for (int k = 0; k < D->ny; ++k) {
        int kind = D->sens[4 * k];
        if (kind != MB_SENS_STATE && kind != MB_SENS_VELOCITY && kind != MB_SENS_COMBINATION &&
            kind != MB_SENS_POINT && kind != MB_SENS_KINETIC && kind != MB_SENS_POTENTIAL)
            return "a flexible system's output sensor (relative point) has no tangent in the C runtime";
    }
    return NULL;
}

/* y (nm) = H x for the H block (nm x nm, row-major) of deformation joint i, or 0 without one */
static void hmul(const mb_flex *fx, int i, int nm, const double *x, double *y) {
    if (fx->hoff[i] < 0) { for (int a = 0; a < nm; ++a) y[a] = 0.0; return; }
    const double *H = fx->htab + fx->hoff[i];
    for (int a = 0; a < nm; ++a) {
        double s = 0.0;
        for (int k = 0; k < nm; ++k) s += H[nm * a + k] * x[k];
        y[a] = s;
    }
}

/* xv (nv_v) = Phi x (public nv): the virtual rates of the public rates x (grow: fx->grow's rows) */
static void phi_mul(const mb_flex *fx, const double *grow, const double *x, double *xv) {
    const mb_model *m = fx->m;
    for (int i = 1; i < m->nb; ++i) {
        int role = fx->role[i];
        if (role == FX_RIGID || role == FX_FRAME) {
            for (int k = 0; k < m->nvi[i]; ++k) xv[m->iv[i] + k] = x[fx->pv[i] + k];
        } else if (role == FX_DEFORM) {
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *gr = grow + (size_t)fx->nm_max * i, *xe = x + fx->bv[b];
            double s = 0.0;
            for (int a = 0; a < nm; ++a) s += gr[a] * xe[a];
            xv[m->iv[i]] = s;
        }
    }
}

/* out (public nv) += Phi^T f (f: nv_v virtual joint forces; the deformation joints' through gr) */
static void phi_tmul_add(const mb_flex *fx, const double *grow, const double *f, double *out) {
    const mb_model *m = fx->m;
    for (int i = 1; i < m->nb; ++i) {
        int role = fx->role[i];
        if (role == FX_RIGID || role == FX_FRAME) {
            for (int k = 0; k < m->nvi[i]; ++k) out[fx->pv[i] + k] += f[m->iv[i] + k];
        } else if (role == FX_DEFORM) {
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *gr = grow + (size_t)fx->nm_max * i;
            for (int a = 0; a < nm; ++a) out[fx->bv[b] + a] += gr[a] * f[m->iv[i]];
        }
    }
}

/* ------------------------------------------------------------ the seed-free pieces, cached
 * A full Jacobian takes n + m directional derivatives at one point; the forward
 * solve (mb_flex_rhs: vdot, the virtual state c, cd, the rows gr and gam) and
 * the Cholesky factor of Mpub do not depend on the seed. They are kept in the
 * instance (in->flexdd) with the point they hold at: the time, the state, the
 * inputs, the commands tau, the whole numeric description d and the parameter
 * generation in->pgen (bumped by mbn_set_parameters, which replaces d, m and
 * fx), compared bit for bit on every call; any difference recomputes them.
 * The per-call scratch lives there too (no allocation after the first call). */
typedef struct {
    int nkey, nqv, nvv, nv, ngrow, nb; /* the sizes it was made for */
    int valid;
    unsigned long pgen;
    const mb_flex *fx;
    double *key;              /* (nkey) t, x (nx), u (nu), tau (nv), d (nd) */
    double *c, *cd;           /* (nq_v), (nv_v) the virtual state at the point */
    double *vdot, *grow, *gam; /* (nv) accelerations, (nb, nm_max) fx->grow, (nb) fx->gam */
    double *L;                /* (nv, nv) Cholesky factor of Mpub (lower triangle) */
    double *scratch;          /* the per-call work of mbn_flex_tangent */
    double *block;
} flex_cache;

void mbn_flex_dirder_free(mbn_instance *in) {
    flex_cache *C = in->flexdd;
    if (C) free(C->block);
    free(C);
    in->flexdd = NULL;
}

static flex_cache *cache_get(mbn_instance *in, size_t nscratch) {
    const mbn_data *D = in->data;
    const mb_flex *fx = in->fx;
    const mb_model *m = fx->m;
    int nkey = 1 + D->nx + D->nu + D->nv + D->nd, ngrow = m->nb * fx->nm_max;
    flex_cache *C = in->flexdd;
    if (C && C->nkey == nkey && C->nqv == m->nq && C->nvv == m->nv && C->nv == fx->nv && C->ngrow == ngrow &&
        C->nb == m->nb)
        return C;
    mbn_flex_dirder_free(in); /* sizes are fixed by the plant: only reached on the first call */
    C = calloc(1, sizeof(flex_cache));
    if (!C) return NULL;
    size_t nv = (size_t)fx->nv;
    size_t n = (size_t)nkey + (size_t)m->nq + (size_t)m->nv + nv + (size_t)ngrow + (size_t)m->nb + nv * nv + nscratch + 1;
    C->block = calloc(n, sizeof(double));
    if (!C->block) { free(C); return NULL; }
    C->nkey = nkey; C->nqv = m->nq; C->nvv = m->nv; C->nv = fx->nv; C->ngrow = ngrow; C->nb = m->nb;
    C->key = C->block;
    C->c = C->key + nkey;
    C->cd = C->c + m->nq;
    C->vdot = C->cd + m->nv;
    C->grow = C->vdot + nv;
    C->gam = C->grow + ngrow;
    C->L = C->gam + m->nb;
    C->scratch = C->L + nv * nv;
    C->valid = 0;
    in->flexdd = C;
    return C;
}

/* 1 if C holds the pieces at the instance's current point, bit for bit */
static int cache_hit(const mbn_instance *in, const flex_cache *C) {
    const mbn_data *D = in->data;
    const double *k = C->key;
    if (!C->valid || C->pgen != in->pgen || C->fx != in->fx) return 0;
    if (memcmp(k, &in->t, sizeof(double))) return 0;
    k += 1;
    if (memcmp(k, in->x, sizeof(double) * (size_t)D->nx)) return 0;
    k += D->nx;
    if (memcmp(k, in->u, sizeof(double) * (size_t)D->nu)) return 0;
    k += D->nu;
    if (memcmp(k, in->tau, sizeof(double) * (size_t)D->nv)) return 0;
    k += D->nv;
    return memcmp(k, in->d, sizeof(double) * (size_t)D->nd) == 0;
}

static void cache_key(const mbn_instance *in, flex_cache *C) {
    const mbn_data *D = in->data;
    double *k = C->key;
    memcpy(k, &in->t, sizeof(double));
    k += 1;
    memcpy(k, in->x, sizeof(double) * (size_t)D->nx);
    k += D->nx;
    memcpy(k, in->u, sizeof(double) * (size_t)D->nu);
    k += D->nu;
    memcpy(k, in->tau, sizeof(double) * (size_t)D->nv);
    k += D->nv;
    memcpy(k, in->d, sizeof(double) * (size_t)D->nd);
    C->pgen = in->pgen;
    C->fx = in->fx;
}

int mbn_flex_tangent(mbn_instance *in, const mbn_vtree_tangents *ops, const double *dx, const double *du,
                     const double *dcmd, double *dxdot, double *dy) {
    const mbn_data *D = in->data;
    mb_flex *fx = in->fx;
    const mb_model *m = fx->m;
    int nq = fx->nq, nv = fx->nv, nqv = m->nq, nvv = m->nv, nmx = fx->nm_max > 0 ? fx->nm_max : 1;
    const double *q = in->x, *v = in->x + nq, *dq = dx, *dv = dx + nq;
    size_t nvb = (size_t)nvv + 1, nqb = (size_t)nqv + 1, npb = (size_t)nv + 1;
    flex_cache *C = cache_get(in, nqb + 10 * nvb + 3 * npb + 4 * (size_t)nmx);
    if (!C) return MBN_NOMEM;
    double *dc = C->scratch, *dcd = dc + nqb, *cdd = dcd + nvb, *dcdd = cdd + nvb;
    double *cmd = dcdd + nvb, *dcmdv = cmd + nvb, *id = dcmdv + nvb, *did = id + nvb, *dpass = did + nvb;
    double *zc = dpass + nvb, *zv = zc + nvb;
    double *qdot = zv + nvb, *col = qdot + npb, *r = col + npb;
    double *hde = r + npb, *hdv = hde + nmx, *hv = hdv + nmx, *t = hv + nmx;
    double *c = C->c, *cd = C->cd, *vdot = C->vdot, *Mp = C->L;
    const double *grow = C->grow, *gam = C->gam;
    int err, hit = cache_hit(in, C);
    memset(fx->pres, 0, sizeof(int) * (size_t)m->nb);
    if (!hit) {
        /* the state's accelerations, and the virtual state the kernel left in fx */
        C->valid = 0;
        err = mb_flex_rhs(fx, q, v, in->tau, NULL, qdot, vdot);
        if (err) return err < 0 ? -err : MBN_DD_SINGULAR;
        memcpy(c, fx->c, sizeof(double) * (size_t)nqv);
        memcpy(cd, fx->cd, sizeof(double) * (size_t)nvv);
        memcpy(C->grow, fx->grow, sizeof(double) * (size_t)C->ngrow);
        memcpy(C->gam, fx->gam, sizeof(double) * (size_t)m->nb);
    }
    memset(cmd, 0, sizeof(double) * nvb);
    memset(dcmdv, 0, sizeof(double) * nvb);
    memset(zc, 0, sizeof(double) * nvb);
    memset(zv, 0, sizeof(double) * nvb);
    for (int i = 1; i < m->nb; ++i) {
        int role = fx->role[i];
        if (role == FX_RIGID || role == FX_FRAME) {
            for (int k = 0; k < m->nqi[i]; ++k) dc[m->iq[i] + k] = dq[fx->pq[i] + k];
            for (int k = 0; k < m->nvi[i]; ++k) {
                int iv = m->iv[i] + k, pv = fx->pv[i] + k;
                dcd[iv] = dv[pv];
                cdd[iv] = vdot[pv];
                dcdd[iv] = 0.0;
                cmd[iv] = in->tau[pv];
                dcmdv[iv] = dcmd[pv];
            }
        } else if (role == FX_DEFORM) {
            /* c = (g - 1/2 H eta) . eta, cd = gr . eta_dot, cdd = gr . eta_ddot + gam with
             * gr = g - H eta, gam = -eta_dot^T H eta_dot: their tangents, dgr = -H deta */
            int b = fx->beam[i], nm = fx->bnm[b], iv = m->iv[i];
            const double *eta = q + fx->bq[b], *etad = v + fx->bv[b], *etadd = vdot + fx->bv[b];
            const double *deta = dq + fx->bq[b], *detad = dv + fx->bv[b];
            const double *g = fx->gtab + fx->goff[i], *gr = grow + (size_t)fx->nm_max * i;
            double sc = 0.0, scd = 0.0, scdd = 0.0, sdd = 0.0;
            hmul(fx, i, nm, deta, hde);
            hmul(fx, i, nm, detad, hdv);
            hmul(fx, i, nm, etad, hv);
            hmul(fx, i, nm, eta, t);
            for (int a = 0; a < nm; ++a) {
                sc += (g[a] - 0.5 * t[a]) * deta[a] - 0.5 * hde[a] * eta[a];
                scd += gr[a] * detad[a] - hde[a] * etad[a];
                scdd += -hde[a] * etadd[a] - hdv[a] * etad[a] - hv[a] * detad[a];
                sdd += gr[a] * etadd[a];
            }
            dc[m->iq[i]] = sc;
            dcd[iv] = scd;
            dcdd[iv] = scdd;
            cdd[iv] = sdd + gam[i];
        }
    }
    /* dR|dvdot=0 */
    ops->id(in, ops->w, c, cd, cdd, cmd, dc, dcd, dcdd, dcmdv, id, did, dpass);
    ops->tree_outputs(in, ops->w, c, dc, dx, du, dy);
    for (int k = 0; k < nvv; ++k) zc[k] = did[k];
    for (int i = 1; i < m->nb; ++i)
        if (fx->role[i] == FX_RIGID || fx->role[i] == FX_FRAME)
            for (int k = 0; k < m->nvi[i]; ++k) zc[m->iv[i] + k] -= dpass[m->iv[i] + k];
    memset(r, 0, sizeof(double) * npb);
    phi_tmul_add(fx, grow, zc, r);
    for (int i = 1; i < m->nb; ++i) {
        if (fx->role[i] != FX_DEFORM) continue;
        int b = fx->beam[i], nm = fx->bnm[b];
        hmul(fx, i, nm, dq + fx->bq[b], hde);
        for (int a = 0; a < nm; ++a) r[fx->bv[b] + a] -= hde[a] * id[m->iv[i]];
    }
    for (int b = 0; b < fx->nbeam; ++b) {
        int nm = fx->bnm[b];
        const double *K = fx->kd + fx->kdoff[b], *Dm = K + nm * nm;
        const double *deta = dq + fx->bq[b], *detad = dv + fx->bv[b];
        for (int j = 0; j < nm; ++j) {
            double s = -dcmd[fx->bv[b] + j];
            for (int k = 0; k < nm; ++k) s += K[nm * j + k] * deta[k] + Dm[nm * j + k] * detad[k];
            r[fx->bv[b] + j] += s;
        }
    }
    if (!hit) {
        /* Mpub = Phi^T M_v Phi, column j from the tangent along dcdd = Phi e_j alone */
        memset(zc, 0, sizeof(double) * nvb);
        for (int j = 0; j < nv; ++j) {
            memset(t, 0, sizeof(double) * (size_t)nmx);
            memset(qdot, 0, sizeof(double) * npb);
            qdot[j] = 1.0;
            phi_mul(fx, grow, qdot, dcdd);
            ops->id(in, ops->w, c, cd, cdd, cmd, zc, zc, dcdd, zc, id, did, NULL);
            memset(col, 0, sizeof(double) * npb);
            phi_tmul_add(fx, grow, did, col);
            for (int k = 0; k < nv; ++k) Mp[nv * k + j] = col[k];
        }
        /* symmetric to rounding: factor its lower triangle */
        if (mb_chol(Mp, nv, nv)) return MBN_DD_SINGULAR; /* flexible.c */
        cache_key(in, C);
        C->valid = 1;
    }
    for (int k = 0; k < nv; ++k) r[k] = -r[k];
    mb_chol_solve(Mp, nv, nv, r);
    memcpy(dxdot, dv, sizeof(double) * (size_t)nq);
    memcpy(dxdot + nq, r, sizeof(double) * (size_t)nv);
    for (int k = nq + nv; k < D->nx; ++k) dxdot[k] = 0.0;
    /* the public sensors and the strain energy's tangent eta^T (K + K^T)/2 deta */
    double dse = 0.0;
    for (int b = 0; b < fx->nbeam; ++b) {
        int nm = fx->bnm[b];
        const double *K = fx->kd + fx->kdoff[b], *eta = q + fx->bq[b], *deta = dq + fx->bq[b];
        for (int a = 0; a < nm; ++a)
            for (int k = 0; k < nm; ++k) dse += 0.5 * K[nm * a + k] * (deta[a] * eta[k] + eta[a] * deta[k]);
    }
    for (int k = 0; k < D->ny; ++k) {
        const mb_sensor *s = in->sens + k;
        switch (s->kind) {
        case MB_SENS_STATE: dy[k] = dx[s->index]; break;
        case MB_SENS_VELOCITY: dy[k] = dv[s->index]; break;
        case MB_SENS_COMBINATION: {
            double acc = 0.0;
            for (int j = 0; j < nq + nv; ++j)
                if (s->par[j] != 0.0) acc += s->par[j] * dx[j];
            dy[k] = acc;
            break;
        }
        case MB_SENS_POTENTIAL: dy[k] += dse; break;
        case MB_SENS_POINT: case MB_SENS_KINETIC: break; /* the tree's (ops->tree_outputs) */
        default: dy[k] = 0.0 / 0.0;
        }
    }
    return 0;
}
