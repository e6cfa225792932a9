/* Hinge latches (see latch.h): one implementation for the Python plant and
 * the native FMU, error-controlled between events (adaptive.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "latch.h"

/* set the joint force rows of the hinges for the flags z from the saved
 * unlatched rows base (n, 3: K0, D0, Q0) */
static void apply(mb_data *d, const mb_latches *L, const double *base, const double *z) {
    for (int j = 0; j < L->n; ++j) {
        double *row = d->dof_force + DF_N * L->iv[j];
        const double *b = base + 3 * j;
        if (z[j] > 0.5) {
            double K = b[0] + L->k;
            row[DF_K] = K;
            row[DF_D] = b[1] + L->c;
            row[DF_Q0] = b[0] * b[2] / K;
        } else {
            row[DF_K] = b[0];
            row[DF_D] = b[1];
            row[DF_Q0] = b[2];
        }
    }
}

static double pen(const mb_latches *L, const double *q, int j) { return L->sign[j] * q[L->iq[j]]; }

/* 1 if a free hinge is at or past its stop at q */
static int any_reached(const mb_latches *L, const double *q, const double *z) {
    for (int j = 0; j < L->n; ++j)
        if (z[j] < 0.5 && pen(L, q, j) >= 0.0) return 1;
    return 0;
}

/* (qo, vo) = (q, v) after span (s), error-controlled, latches held */
static int step(const mb_model *m, mb_data *d, const double *q, const double *v, const double *tau, double span,
                const mb_adapt_options *opt, mb_adapt_stats *st, double *qo, double *vo) {
    mb_ode ode;
    mb_rigid_ode(m, d, &ode);
    memcpy(qo, q, sizeof(double) * (size_t)m->nq);
    memcpy(vo, v, sizeof(double) * (size_t)m->nv);
    return mb_adapt_advance(&ode, qo, vo, tau, NULL, span, opt, st);
}

/* largest travel past the stop among the free hinges at q (-inf: none free) */
static double worst_free(const mb_latches *L, const double *q, const double *z) {
    double worst = -INFINITY;
    for (int j = 0; j < L->n; ++j)
        if (z[j] < 0.5 && pen(L, q, j) > worst) worst = pen(L, q, j);
    return worst;
}

/* time b (s after the start, within span) at which the first free hinge
 * reaches its stop, and the state (q, v) there, from the state (q, v) at the
 * start and (q1, v1) at the end of span (already past a stop): bisection,
 * each half integrated from the latest state short of the stop, to 1e-13 rad
 * or 2^-60 of span. The state returned is on the reached side. */
static int locate(const mb_model *m, mb_data *d, const mb_latches *L, double *q, double *v, const double *z, const double *tau,
                  double span, const double *q1, const double *v1, const mb_adapt_options *opt,
                  mb_adapt_stats *st, double *b_out, double *w) {
    int nq = m->nq, nv = m->nv, err;
    double *qb = w, *vb = qb + nq, *qm = vb + nv, *vm = qm + nq;
    double a = 0.0, b = span;
    memcpy(qb, q1, sizeof(double) * (size_t)nq);
    memcpy(vb, v1, sizeof(double) * (size_t)nv);
    for (int it = 0; it < 60; ++it) {
        double mid = 0.5 * (a + b);
        if ((err = step(m, d, q, v, tau, mid - a, opt, st, qm, vm))) return err;
        double worst = worst_free(L, qm, z);
        if (worst >= 0.0) {
            b = mid;
            memcpy(qb, qm, sizeof(double) * (size_t)nq);
            memcpy(vb, vm, sizeof(double) * (size_t)nv);
            if (worst < 1e-13) break;
        } else {
            a = mid;
            memcpy(q, qm, sizeof(double) * (size_t)nq);
            memcpy(v, vm, sizeof(double) * (size_t)nv);
        }
    }
    memcpy(q, qb, sizeof(double) * (size_t)nq);
    memcpy(v, vb, sizeof(double) * (size_t)nv);
    *b_out = b;
    return 0;
}

static int advance(const mb_model *m, mb_data *d, const mb_latches *L, const double *base, double *q, double *v, double *z,
                   const double *tau, double dt, const mb_adapt_options *opt, mb_adapt_stats *st,
                   double *w) {
    int nq = m->nq, nv = m->nv, err;
    double *q1 = w, *v1 = q1 + nq, *wl = v1 + nv;
    double rest = dt;
    while (rest > 1e-12 * dt) {
        apply(d, L, base, z);
        if ((err = step(m, d, q, v, tau, rest, opt, st, q1, v1))) return err;
        if (!any_reached(L, q1, z)) {
            memcpy(q, q1, sizeof(double) * (size_t)nq);
            memcpy(v, v1, sizeof(double) * (size_t)nv);
            break;
        }
        double b;
        if ((err = locate(m, d, L, q, v, z, tau, rest, q1, v1, opt, st, &b, wl))) return err;
        for (int j = 0; j < L->n; ++j)
            if (z[j] < 0.5 && pen(L, q, j) >= -1e-12) z[j] = 1.0;
        rest -= b;
    }
    return 0;
}

/* the unlatched rows (n, 3: K0, D0, Q0) of the hinges, saved into base */
static void save_rows(const mb_data *d, const mb_latches *L, double *base) {
    for (int j = 0; j < L->n; ++j) {
        const double *row = d->dof_force + DF_N * L->iv[j];
        base[3 * j] = row[DF_K];
        base[3 * j + 1] = row[DF_D];
        base[3 * j + 2] = row[DF_Q0];
    }
}

static void restore_rows(mb_data *d, const mb_latches *L, const double *base) {
    for (int j = 0; j < L->n; ++j) {
        double *row = d->dof_force + DF_N * L->iv[j];
        row[DF_K] = base[3 * j];
        row[DF_D] = base[3 * j + 1];
        row[DF_Q0] = base[3 * j + 2];
    }
}

int mb_latch_advance(const mb_model *m, mb_data *d, const mb_latches *L, double *q, double *v, double *z,
                     const double *tau, double dt, const mb_adapt_options *opt, mb_adapt_stats *stats) {
    mb_adapt_stats own;
    if (!stats) stats = &own;
    memset(stats, 0, sizeof *stats);
    double *base = calloc((size_t)(3 * L->n + 1), sizeof(double));
    double *w = calloc((size_t)(3 * (m->nq + m->nv) + 1), sizeof(double));
    if (!base || !w) { free(base); free(w); return MB_ADAPT_NO_MEMORY; }
    save_rows(d, L, base);
    int err = advance(m, d, L, base, q, v, z, tau, dt, opt, stats, w);
    restore_rows(d, L, base);
    free(base);
    free(w);
    return err;
}

int mb_latch_rhs(const mb_model *m, mb_data *d, const mb_latches *L, const double *q, const double *v, const double *z,
                 const double *tau, double *qdot, double *vdot) {
    double fixed[3 * 8], *base = L->n <= 8 ? fixed : malloc(sizeof(double) * (size_t)(3 * L->n));
    if (!base) return MB_ADAPT_NO_MEMORY;
    save_rows(d, L, base);
    apply(d, L, base, z);
    int err = mb_rhs(m, d, q, v, tau, NULL, qdot, vdot);
    restore_rows(d, L, base);
    if (base != fixed) free(base);
    return err;
}

double mb_latch_energy(const mb_latches *L, const double *q, const double *z) {
    double s = 0.0;
    for (int j = 0; j < L->n; ++j)
        if (z[j] > 0.5) s += q[L->iq[j]] * q[L->iq[j]];
    return 0.5 * L->k * s;
}
