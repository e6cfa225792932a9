/* The sled frame (see sled.h): one implementation for the Python plant and
 * the native FMU. */
#include <math.h>
#include <string.h>

#include "sled.h"

#define SLED_PI 3.14159265358979323846

double mb_sled_acceleration(const mb_sled *s, double t, const double *u) {
    const double *p = s->par;
    double a = s->input >= 0 ? u[s->input] : 0.0;
    if (p[SL_PEAK] > 0 && p[SL_START] <= t && t <= p[SL_START] + p[SL_DUR])
        a -= p[SL_PEAK] * sin(SLED_PI * (t - p[SL_START]) / p[SL_DUR]);
    return a;
}

int mb_sled_rhs(const mb_model *m, mb_data *d, const mb_sled *s, double a_s, const double *q, const double *v,
                const double *tau, double *qdot, double *vdot) {
    double g0[3];
    memcpy(g0, d->g, sizeof g0);
    for (int r = 0; r < 3; ++r)
        if (s->par[SL_AX + r] != 0.0) d->g[r] = g0[r] - a_s * s->par[SL_AX + r];
    int err = mb_rhs(m, d, q, v, tau, NULL, qdot, vdot);
    memcpy(d->g, g0, sizeof g0);
    return err;
}

void mb_sled_specific_force(const mb_model *m, mb_data *d, const mb_sled *s, double a_s, const double *q, const double *v,
                            const double *vdot, int b, const double *r_B, double *acc) {
    mb_rnea(m, d, q, v, vdot, NULL, 0, d->tau);
    mb_point_acceleration(m, d, b, r_B, acc);
    for (int r = 0; r < 3; ++r) {
        if (s->par[SL_AX + r] != 0.0) acc[r] += a_s * s->par[SL_AX + r];
        acc[r] -= d->g[r];
    }
}

int mb_sled_ode_rhs(const mb_model *m, mb_data *d, const mb_sled *s, double t, const double *u, const double *q,
                    const double *y, const double *tau, double *qdot, double *ydot) {
    return mb_sled_rhs(m, d, s, mb_sled_acceleration(s, t, u), q, y, tau, qdot, ydot);
}

/* ------------------------------------------------------------ advance */
typedef struct {
    const mb_model *m;
    mb_data *d;
    const mb_sled *s;
    const double *u;
    double t0, ts; /* start of the interval, time of the stage from it (s) */
} sled_ctx;

static int ode_f(void *ctx, const double *q, const double *y, const double *tau, const double *fext,
                 double *qdot, double *ydot) {
    (void)fext;
    sled_ctx *c = ctx;
    return mb_sled_ode_rhs(c->m, c->d, c->s, c->t0 + c->ts, c->u, q, y, tau, qdot, ydot);
}

static void ode_normalize(void *ctx, double *q) { mb_normalize(((sled_ctx *)ctx)->m, q); }

int mb_sled_advance(const mb_model *m, mb_data *d, const mb_sled *s, double t, double *q, double *v, const double *tau,
                    const double *u, double dt, const mb_adapt_options *opt, mb_adapt_stats *stats) {
    sled_ctx c = {m, d, s, u, t, 0.0};
    mb_ode ode = {&c, ode_f, ode_normalize, m->nq, m->nv, NULL, &c.ts};
    return mb_adapt_advance(&ode, q, v, tau, NULL, dt, opt, stats);
}

/* ------------------------------------------------------------ sensors */
static int is_sled_kind(int kind) { return kind >= MB_SENS_ACCELEROMETER && kind <= MB_SENS_DISPLACEMENT; }

void mb_sled_sensors_eval(const mb_model *m, mb_data *d, const mb_mass_props *mp, const mb_sled *s, double t, int n,
                          const mb_sensor *sens, const double *x, const double *v, const double *u, int nu,
                          const double *tau, double *out) {
    const double *q = x;
    int any = 0, accel = 0;
    mb_sensors_eval(m, d, mp, n, sens, x, v, u, nu, out); /* the engine's kinds (the others NaN here) */
    for (int k = 0; k < n; ++k) {
        any |= is_sled_kind(sens[k].kind);
        accel |= sens[k].kind == MB_SENS_ACCELEROMETER;
    }
    if (!any) return;
    double a_s = mb_sled_acceleration(s, t, u);
    if (accel) { /* one dynamics evaluation for every accelerometer (d->work is free scratch) */
        double *qdot = d->work, *vdot = qdot + m->nq;
        int err = mb_sled_rhs(m, d, s, a_s, q, v, tau, qdot, vdot);
        for (int k = 0; k < n; ++k) {
            const mb_sensor *sk = sens + k;
            if (sk->kind != MB_SENS_ACCELEROMETER) continue;
            double acc[3];
            if (err) { out[k] = NAN; continue; }
            mb_sled_specific_force(m, d, s, a_s, q, v, vdot, sk->index, sk->par, acc);
            out[k] = sk->axis < 3 ? acc[sk->axis] : sqrt(acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2]);
        }
    }
    mb_kinematics(m, d, q, v);
    for (int k = 0; k < n; ++k) {
        const mb_sensor *sk = sens + k;
        switch (sk->kind) {
        case MB_SENS_SLED_ACCEL: out[k] = a_s; break;
        case MB_SENS_CABLE_TENSION: {
            double F[3], L;
            out[k] = mb_cable_force(m, d, sk->index, F, &L);
            break;
        }
        case MB_SENS_DISPLACEMENT: {
            double p[3];
            mb_point_position(m, d, sk->index, sk->par, p);
            out[k] = p[sk->axis] - sk->par[3];
            break;
        }
        default: break;
        }
    }
}
