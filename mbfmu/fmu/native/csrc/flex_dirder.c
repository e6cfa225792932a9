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
    if (D->sled) return "the sled frame's pulse and belt forces have no tangents in the C runtime";
    if (D->nh) return "the HIC recorder's running maximum is not differentiable";
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

/* in-place Cholesky A = L L^T (n x n, lower triangle); -1 unless clearly positive definite */
static int chol(double *A, int n) {
    double scale = 0.0;
    for (int k = 0; k < n; ++k) scale = fmax(scale, fabs(A[n * k + k]));
    for (int j = 0; j < n; ++j) {
        double s = A[n * j + j];
        for (int k = 0; k < j; ++k) s -= A[n * j + k] * A[n * j + k];
        if (!(s > 1e-14 * scale) || !(s > 0.0)) return -1;
        double d = sqrt(s);
        A[n * j + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double t = A[n * i + j];
            for (int k = 0; k < j; ++k) t -= A[n * i + k] * A[n * j + k];
            A[n * i + j] = t / d;
        }
    }
    return 0;
}

static void chol_solve(const double *L, int n, double *x) {
    for (int i = 0; i < n; ++i) {
        double t = x[i];
        for (int k = 0; k < i; ++k) t -= L[n * i + k] * x[k];
        x[i] = t / L[n * i + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double t = x[i];
        for (int k = i + 1; k < n; ++k) t -= L[n * k + i] * x[k];
        x[i] = t / L[n * i + i];
    }
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

/* xv (nv_v) = Phi x (public nv): the virtual rates of the public rates x */
static void phi_mul(const mb_flex *fx, const double *x, double *xv) {
    const mb_model *m = fx->m;
    for (int i = 1; i < m->nb; ++i) {
        int role = fx->role[i];
        if (role == FX_RIGID || role == FX_FRAME) {
            for (int k = 0; k < m->nvi[i]; ++k) xv[m->iv[i] + k] = x[fx->pv[i] + k];
        } else if (role == FX_DEFORM) {
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *gr = fx->grow + (size_t)fx->nm_max * i, *xe = x + fx->bv[b];
            double s = 0.0;
            for (int a = 0; a < nm; ++a) s += gr[a] * xe[a];
            xv[m->iv[i]] = s;
        }
    }
}

/* out (public nv) += Phi^T f (f: nv_v virtual joint forces; the deformation joints' through gr) */
static void phi_tmul_add(const mb_flex *fx, const double *f, double *out) {
    const mb_model *m = fx->m;
    for (int i = 1; i < m->nb; ++i) {
        int role = fx->role[i];
        if (role == FX_RIGID || role == FX_FRAME) {
            for (int k = 0; k < m->nvi[i]; ++k) out[fx->pv[i] + k] += f[m->iv[i] + k];
        } else if (role == FX_DEFORM) {
            int b = fx->beam[i], nm = fx->bnm[b];
            const double *gr = fx->grow + (size_t)fx->nm_max * i;
            for (int a = 0; a < nm; ++a) out[fx->bv[b] + a] += gr[a] * f[m->iv[i]];
        }
    }
}

int mbn_flex_tangent(mbn_instance *in, const mbn_vtree_tangents *ops, const double *dx, const double *du,
                     const double *dcmd, double *dxdot, double *dy) {
    const mbn_data *D = in->data;
    mb_flex *fx = in->fx;
    const mb_model *m = fx->m;
    int nq = fx->nq, nv = fx->nv, nqv = m->nq, nvv = m->nv, nmx = fx->nm_max > 0 ? fx->nm_max : 1;
    const double *q = in->x, *v = in->x + nq, *dq = dx, *dv = dx + nq;
    size_t nvb = (size_t)nvv + 1, nqb = (size_t)nqv + 1, npb = (size_t)nv + 1;
    double *blk = malloc(sizeof(double) * (2 * nqb + 11 * nvb + (3 + (size_t)nv) * npb + 4 * (size_t)nmx));
    if (!blk) return MBN_NOMEM;
    double *c = blk, *dc = c + nqb, *cd = dc + nqb, *dcd = cd + nvb, *cdd = dcd + nvb, *dcdd = cdd + nvb;
    double *cmd = dcdd + nvb, *dcmdv = cmd + nvb, *id = dcmdv + nvb, *did = id + nvb, *dpass = did + nvb;
    double *zc = dpass + nvb, *zv = zc + nvb;
    double *qdot = zv + nvb, *vdot = qdot + npb, *r = vdot + npb, *Mp = r + npb;
    double *hde = Mp + (size_t)nv * npb, *hdv = hde + nmx, *hv = hdv + nmx, *t = hv + nmx;
    int err;
    memset(fx->pres, 0, sizeof(int) * (size_t)m->nb);
    /* the state's accelerations, and the virtual state the kernel left in fx */
    err = mb_flex_rhs(fx, q, v, in->tau, NULL, qdot, vdot);
    if (err) { free(blk); return err < 0 ? -err : MBN_DD_SINGULAR; }
    memcpy(c, fx->c, sizeof(double) * (size_t)nqv);
    memcpy(cd, fx->cd, sizeof(double) * (size_t)nvv);
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
            const double *g = fx->gtab + fx->goff[i], *gr = fx->grow + (size_t)fx->nm_max * i;
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
            cdd[iv] = sdd + fx->gam[i];
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
    phi_tmul_add(fx, zc, r);
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
    /* Mpub = Phi^T M_v Phi, column j from the tangent along dcdd = Phi e_j alone */
    memset(zc, 0, sizeof(double) * nvb);
    for (int j = 0; j < nv; ++j) {
        memset(t, 0, sizeof(double) * (size_t)nmx);
        memset(qdot, 0, sizeof(double) * npb);
        qdot[j] = 1.0;
        phi_mul(fx, qdot, dcdd);
        ops->id(in, ops->w, c, cd, cdd, cmd, zc, zc, dcdd, zc, id, did, NULL);
        memset(vdot, 0, sizeof(double) * npb);
        phi_tmul_add(fx, did, vdot);
        for (int k = 0; k < nv; ++k) Mp[nv * k + j] = vdot[k];
    }
    /* symmetric to rounding: factor its lower triangle */
    if (chol(Mp, nv)) { free(blk); return MBN_DD_SINGULAR; }
    for (int k = 0; k < nv; ++k) r[k] = -r[k];
    chol_solve(Mp, nv, r);
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
    free(blk);
    return 0;
}
