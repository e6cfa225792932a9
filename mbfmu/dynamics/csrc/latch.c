/* Hinge latches (see latch.h). The algorithm is that of the satellite plant's
 * deployment: one implementation for the Python plant and the native FMU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "latch.h"

/* set the joint force rows of the hinges for the flags z from the saved
 * unlatched rows base (n, 3: K0, D0, Q0) */
static void apply(mb_model *m, const mb_latches *L, const double *base, const double *z) {
    for (int j = 0; j < L->n; ++j) {
        double *row = m->dof_force + DF_N * L->iv[j];
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

typedef struct {
    mb_model *m;
    const double *tau;
    int nq, nv;
} stepper;

/* (qo, vo) = n RK4 steps of h from (q, v) */
static int rk4(const stepper *s, const double *q, const double *v, double h, int n, double *qo, double *vo) {
    memcpy(qo, q, sizeof(double) * (size_t)s->nq);
    memcpy(vo, v, sizeof(double) * (size_t)s->nv);
    return mb_rk4(s->m, qo, vo, s->tau, NULL, h, n);
}

/* fraction s of the step h at which the first free hinge reaches its stop,
 * and the state (qs, vs) there */
static int locate(const stepper *st, const mb_latches *L, const double *q, const double *v, const double *z,
                  double h, double *s_out, double *qs, double *vs, double *q1, double *v1) {
    int err = rk4(st, q, v, h, 1, q1, v1);
    if (err) return err;
    double s = 1.0;
    for (int j = 0; j < L->n; ++j) {
        double d0 = pen(L, q, j), d1 = pen(L, q1, j);
        if (z[j] < 0.5 && d1 >= 0.0) {
            double f = -d0 / fmax(d1 - d0, 1e-300);
            if (f < s) s = f;
        }
    }
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 30; ++it) {
        if ((err = rk4(st, q, v, s * h, 1, qs, vs))) return err;
        double worst = -INFINITY;
        for (int j = 0; j < L->n; ++j)
            if (z[j] < 0.5 && pen(L, qs, j) > worst) worst = pen(L, qs, j);
        if (fabs(worst) < 1e-13) break;
        if (worst > 0) hi = s;
        else lo = s;
        s = 0.5 * (lo + hi);
    }
    *s_out = s;
    return 0;
}

static int advance(mb_model *m, const mb_latches *L, const double *base, double *q, double *v, double *z,
                   const double *tau, double dt, int n, double *w) {
    stepper st = {m, tau, m->nq, m->nv};
    int nq = m->nq, nv = m->nv, err;
    double *q1 = w, *v1 = q1 + nq, *qs = v1 + nv, *vs = qs + nq, *q2 = vs + nv, *v2 = q2 + nq;
    double h = dt / n;
    apply(m, L, base, z);
    int free_any = 0;
    for (int j = 0; j < L->n; ++j) free_any |= z[j] < 0.5;
    if ((err = rk4(&st, q, v, dt / n, n, q1, v1))) return err;
    if (!free_any || !any_reached(L, q1, z)) {
        memcpy(q, q1, sizeof(double) * (size_t)nq);
        memcpy(v, v1, sizeof(double) * (size_t)nv);
        return 0;
    }
    /* a latch engages in this interval: step by step, splitting at the event */
    int k = 0;
    double rem = h;
    while (k < n) {
        if ((err = rk4(&st, q, v, rem, 1, q1, v1))) return err;
        if (!any_reached(L, q1, z)) {
            memcpy(q, q1, sizeof(double) * (size_t)nq);
            memcpy(v, v1, sizeof(double) * (size_t)nv);
            k += 1;
            rem = h;
            continue;
        }
        double s;
        if ((err = locate(&st, L, q, v, z, rem, &s, qs, vs, q2, v2))) return err;
        memcpy(q, qs, sizeof(double) * (size_t)nq);
        memcpy(v, vs, sizeof(double) * (size_t)nv);
        for (int j = 0; j < L->n; ++j)
            if (z[j] < 0.5 && pen(L, q, j) >= -1e-12) z[j] = 1.0;
        apply(m, L, base, z);
        rem *= 1.0 - s;
        if (rem <= 1e-12 * h) {
            k += 1;
            rem = h;
        }
    }
    return 0;
}

int mb_latch_advance(mb_model *m, const mb_latches *L, double *q, double *v, double *z,
                     const double *tau, double dt, int n) {
    double *base = calloc((size_t)(3 * L->n + 1), sizeof(double));
    double *w = calloc((size_t)(3 * (m->nq + m->nv) + 1), sizeof(double));
    if (!base || !w) { free(base); free(w); return MB_LATCH_NOMEM; }
    for (int j = 0; j < L->n; ++j) {
        const double *row = m->dof_force + DF_N * L->iv[j];
        base[3 * j] = row[DF_K];
        base[3 * j + 1] = row[DF_D];
        base[3 * j + 2] = row[DF_Q0];
    }
    int err = advance(m, L, base, q, v, z, tau, dt, n, w);
    /* restore the unlatched rows */
    for (int j = 0; j < L->n; ++j) {
        double *row = m->dof_force + DF_N * L->iv[j];
        row[DF_K] = base[3 * j];
        row[DF_D] = base[3 * j + 1];
        row[DF_Q0] = base[3 * j + 2];
    }
    free(base);
    free(w);
    return err;
}

double mb_latch_energy(const mb_latches *L, const double *q, const double *z) {
    double s = 0.0;
    for (int j = 0; j < L->n; ++j)
        if (z[j] > 0.5) s += q[L->iq[j]] * q[L->iq[j]];
    return 0.5 * L->k * s;
}
