/* The engine's side of the plug-in elements (element.h): the native runtime's
 * and the kernels' (the Python plant's). */
#include <math.h>
#include <string.h>

#include "element.h"
#include "adaptive.h"

int mbn_element_class_complete(const mbn_element_class *cls) {
    return cls->force && cls->tangent && cls->npar >= 0 && cls->nstate >= 0 && cls->nout >= 0 &&
           (cls->nout == 0 || (cls->output && cls->output_tangent)) && !cls->accel_rate == !cls->accel_rate_tangent &&
           cls->ndisc >= 0 && (cls->ndisc == 0 || (cls->period && cls->sample)) &&
           !cls->frame_accel == !cls->frame_accel_tangent && (cls->frame_accel || !cls->frame_next_kink);
}

int mbn_elements_accel_rates(const mb_model *m, mb_data *ws, int nel, const mbn_element *el, double t,
                             const double *q, const double *v, const double *vdot, const double *s, double *sdot) {
    int any = 0;
    for (int e = 0; e < nel; ++e) any |= el[e].cls->accel_rate != NULL;
    if (!any) return 0;
    mb_rnea(m, ws, q, v, vdot, NULL, 1, ws->tau); /* with gravity: the point accelerations minus g */
    for (int e = 0; e < nel; ++e) {
        if (!el[e].cls->accel_rate) continue;
        double x[3], V[3], A[3];
        mbn_element_point(m, ws, el + e, x, V);
        mb_point_acceleration(m, ws, el[e].body, el[e].par, A);
        el[e].cls->accel_rate(el[e].par + 3, t, x, V, A, s + el[e].os, sdot + el[e].os);
    }
    return 1;
}

int mbn_elements_nstate(int nel, const mbn_element *el) {
    int n = 0;
    for (int e = 0; e < nel; ++e) n += el[e].nstate;
    return n;
}

void mbn_element_point(const mb_model *m, mb_data *ws, const mbn_element *el, double *x, double *V) {
    int b = el->body;
    const double *R = ws->RW + 9 * b, *tw = ws->v + 6 * b, *rB = el->par;
    double u[3];
    mb_point_position(m, ws, b, rB, x);
    /* body-frame point velocity w x rB + v_origin, to the world */
    u[0] = tw[1] * rB[2] - tw[2] * rB[1] + tw[3];
    u[1] = tw[2] * rB[0] - tw[0] * rB[2] + tw[4];
    u[2] = tw[0] * rB[1] - tw[1] * rB[0] + tw[5];
    for (int r = 0; r < 3; ++r) V[r] = R[3 * r] * u[0] + R[3 * r + 1] * u[1] + R[3 * r + 2] * u[2];
}

void mbn_elements_fext(const mb_model *m, mb_data *ws, int nel, const mbn_element *el, double t, const double *q,
                       const double *v, const double *s, double *fext, double *sdot) {
    memset(fext, 0, sizeof(double) * 6 * (size_t)m->nb);
    mb_kinematics(m, ws, q, v);
    for (int e = 0; e < nel; ++e) {
        int b = el[e].body;
        if (b <= 0 || b >= m->nb) continue; /* the world: no body to push (refused at build) */
        const double *R = ws->RW + 9 * b, *rB = el[e].par;
        double x[3], V[3], F[3], f[3];
        mbn_element_point(m, ws, el + e, x, V);
        double scratch[MBN_ELEMENT_MAX_STATES];
        el[e].cls->force(el[e].par + 3, t, x, V, s + el[e].os, F, sdot ? sdot + el[e].os : scratch);
        for (int c = 0; c < 3; ++c) f[c] = R[c] * F[0] + R[3 + c] * F[1] + R[6 + c] * F[2]; /* R^T F */
        double *fe = fext + 6 * b;
        fe[0] += rB[1] * f[2] - rB[2] * f[1];
        fe[1] += rB[2] * f[0] - rB[0] * f[2];
        fe[2] += rB[0] * f[1] - rB[1] * f[0];
        for (int k = 0; k < 3; ++k) fe[3 + k] += f[k];
    }
}

static int element_f(void *ctx, const double *q, const double *y, const double *tau, const double *fext,
                     double *qdot, double *ydot) {
    mbn_element_ode *e = ctx;
    int nv = e->m->nv;
    double t = e->t0 + e->t_stage, g0[3];
    memcpy(g0, e->ws->g, sizeof g0);
    /* a frame element's gravity for the whole evaluation (the block "frame elements" of element.h) */
    const mbn_element *fr = mbn_elements_frame(e->nel, e->el);
    if (fr) mbn_frame_gravity(fr, t, e->u, e->nu, g0, e->ws->g, NULL);
    mbn_elements_fext(e->m, e->ws, e->nel, e->el, t, q, y, y + nv, e->fext, ydot + nv);
    if (fext)
        for (int k = 0; k < 6 * e->m->nb; ++k) e->fext[k] += fext[k];
    int err = e->inner.f(e->inner.ctx, q, y, tau, e->fext, qdot, ydot);
    if (!err) mbn_elements_accel_rates(e->m, e->ws, e->nel, e->el, t, q, y, ydot, y + nv, ydot + nv);
    memcpy(e->ws->g, g0, sizeof g0);
    return err;
}

void mbn_element_ode_inputs(mbn_element_ode *e, const double *u, int nu) {
    e->u = u;
    e->nu = nu;
}

static void element_normalize(void *ctx, double *q) {
    mbn_element_ode *e = ctx;
    e->inner.normalize(e->inner.ctx, q);
}

void mbn_element_ode_init(mbn_element_ode *e, const mb_model *m, mb_data *ws, int nel, const mbn_element *el,
                          double t0, double *fext, mb_ode *ode) {
    mb_rigid_ode(m, ws, &e->inner);
    e->m = m;
    e->ws = ws;
    e->nel = nel;
    e->el = el;
    e->t0 = t0;
    e->t_stage = 0.0;
    e->fext = fext;
    e->u = NULL;
    e->nu = 0;
    *ode = e->inner;
    ode->ctx = e;
    ode->f = element_f;
    ode->normalize = element_normalize;
    ode->t_stage = &e->t_stage;
    ode->ny = m->nv + mbn_elements_nstate(nel, el);
    if (ode->ny > m->nv) ode->work = NULL; /* the inner scratch is sized for [q; v]: mb_adapt_advance only */
}

/* ------------------------------------------------------------ discrete states */
int mbn_elements_ndisc(int nel, const mbn_element *el) {
    int n = 0;
    for (int e = 0; e < nel; ++e) n += el[e].ndisc;
    return n;
}

/* the element's grid spacing (s), or NAN if it is not positive and finite */
static double element_period(const mbn_element *el) {
    double T = el->cls->period(el->par + 3);
    return T > 0 && isfinite(T) ? T : NAN;
}

double mbn_elements_next_instant(int nel, const mbn_element *el, double t) {
    double next = INFINITY;
    for (int e = 0; e < nel; ++e) {
        if (!el[e].ndisc) continue;
        double T = element_period(el + e);
        if (isnan(T)) return NAN;
        next = fmin(next, (floor(t / T + 1e-6) + 1.0) * T);
    }
    return next;
}

int mbn_elements_periods_valid(int nel, const mbn_element *el) {
    for (int e = 0; e < nel; ++e)
        if (el[e].ndisc && isnan(element_period(el + e))) return 0;
    return 1;
}

/* 1e-9 of the smallest grid spacing: instants closer than this are one */
static double grid_eps(int nel, const mbn_element *el) {
    double T = INFINITY;
    for (int e = 0; e < nel; ++e)
        if (el[e].ndisc) T = fmin(T, element_period(el + e));
    return 1e-9 * T;
}

void mbn_elements_sample(int nel, const mbn_element *el, double t, double *blk, double *done) {
    for (int e = 0; e < nel; ++e) {
        if (!el[e].ndisc) continue;
        double T = element_period(el + e), grid = floor(t / T + 0.5) * T;
        if (!(fabs(t - grid) <= 1e-9 * T) || (done && !(grid > done[e] + 0.5 * T))) continue;
        el[e].cls->sample(el[e].par + 3, grid, blk + el[e].os, blk + el[e].oz);
        if (done) done[e] = grid;
    }
}

int mbn_element_advance(mbn_element_ode *e, const mb_ode *ode, double *q, double *y, const double *tau, double dt,
                        const mb_adapt_options *opt, mb_adapt_stats *stats) {
    if (!mbn_elements_ndisc(e->nel, e->el)) return mb_adapt_advance(ode, q, y, tau, NULL, dt, opt, stats);
    double eps = grid_eps(e->nel, e->el);
    if (!(eps > 0)) return MB_ADAPT_BAD_GRID;
    /* the instants are multiples of each spacing from the absolute time */
    double t_end = e->t0 + dt, tk = e->t0;
    while (tk < t_end - eps) {
        double next = mbn_elements_next_instant(e->nel, e->el, tk);
        if (isnan(next)) return MB_ADAPT_BAD_GRID;
        double seg_end = fmin(next, t_end);
        e->t0 = tk;
        int err = mb_adapt_advance(ode, q, y, tau, NULL, seg_end - tk, opt, stats);
        if (err) return err;
        tk = seg_end;
        if (fabs(seg_end - next) <= eps) mbn_elements_sample(e->nel, e->el, next, y + e->m->nv, NULL);
    }
    return MB_ADAPT_OK;
}

/* ------------------------------------------------------------ frame elements */
const mbn_element *mbn_elements_frame(int nel, const mbn_element *el) {
    for (int e = 0; e < nel; ++e)
        if (el[e].cls->frame_accel) return el + e;
    return NULL;
}

int mbn_elements_nframe(int nel, const mbn_element *el) {
    int n = 0;
    for (int e = 0; e < nel; ++e) n += el[e].cls->frame_accel != NULL;
    return n;
}

void mbn_frame_gravity(const mbn_element *fr, double t, const double *u, int nu, const double *g0, double *g,
                       double *a) {
    double acc[3] = {0.0, 0.0, 0.0};
    if (fr) fr->cls->frame_accel(fr->par + 3, t, u, nu, acc);
    for (int r = 0; r < 3; ++r) {
        g[r] = acc[r] != 0.0 ? g0[r] - acc[r] : g0[r];
        if (a) a[r] = acc[r];
    }
}

int mbn_is_motion_sensor(int kind) { return kind >= MBN_SENS_ACCELEROMETER && kind <= MBN_SENS_DISPLACEMENT; }

void mbn_motion_sensors_eval(const mb_model *m, mb_data *ws, const mb_mass_props *mp, int nel, const mbn_element *el,
                             double t, int n, const mb_sensor *sens, const double *x, const double *v,
                             const double *s, const double *u, int nu, const double *tau, double *fext, double *out) {
    const double *q = x;
    int any = 0, accel = 0;
    mb_sensors_eval(m, ws, mp, n, sens, x, v, u, nu, out); /* the engine's kinds (the others NaN here) */
    for (int k = 0; k < n; ++k) {
        any |= mbn_is_motion_sensor(sens[k].kind);
        accel |= sens[k].kind == MBN_SENS_ACCELEROMETER;
    }
    if (!any) return;
    const mbn_element *fr = mbn_elements_frame(nel, el);
    double a[3], g0[3];
    memcpy(g0, ws->g, sizeof g0);
    if (accel) { /* one dynamics evaluation for every accelerometer (ws->work is free scratch) */
        double *qdot = ws->work, *vdot = qdot + m->nq;
        mbn_frame_gravity(fr, t, u, nu, g0, ws->g, a);
        if (nel) mbn_elements_fext(m, ws, nel, el, t, q, v, s, fext, NULL);
        int err = mb_rhs(m, ws, q, v, tau, nel ? fext : NULL, qdot, vdot);
        if (!err) mb_rnea(m, ws, q, v, vdot, NULL, 0, ws->tau); /* the accelerations in the frame */
        memcpy(ws->g, g0, sizeof g0);
        for (int k = 0; k < n; ++k) {
            const mb_sensor *sk = sens + k;
            if (sk->kind != MBN_SENS_ACCELEROMETER) continue;
            double acc[3];
            if (err) { out[k] = NAN; continue; }
            mb_point_acceleration(m, ws, sk->index, sk->par, acc);
            for (int r = 0; r < 3; ++r) { /* plus the frame's acceleration, minus gravity */
                if (a[r] != 0.0) acc[r] += a[r];
                acc[r] -= g0[r];
            }
            out[k] = sk->axis < 3 ? acc[sk->axis] : sqrt(acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2]);
        }
    } else {
        double g[3];
        mbn_frame_gravity(fr, t, u, nu, g0, g, a);
    }
    mb_kinematics(m, ws, q, v);
    for (int k = 0; k < n; ++k) {
        const mb_sensor *sk = sens + k;
        switch (sk->kind) {
        case MBN_SENS_FRAME_ACCEL: out[k] = a[sk->axis]; break;
        case MBN_SENS_CABLE_TENSION: {
            double F[3], L;
            out[k] = mb_cable_force(m, ws, sk->index, F, &L);
            break;
        }
        case MBN_SENS_DISPLACEMENT: {
            double p[3];
            mb_point_position(m, ws, sk->index, sk->par, p);
            out[k] = p[sk->axis] - sk->par[3];
            break;
        }
        default: break;
        }
    }
}
