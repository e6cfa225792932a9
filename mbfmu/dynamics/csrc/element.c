/* The engine's side of the plug-in elements (element.h): the native runtime's
 * and the kernels' (the Python plant's). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "element.h"
#include "adaptive.h"

int mbn_element_class_complete(const mbn_element_class *cls) {
    /* a point force and its tangent, both or neither (an element with no point force: a
     * recorder, a frame, joint rows only) */
    int joints = cls->njoint > 0 && cls->joint_force && cls->joint_tangent;
    return !cls->force == !cls->tangent && cls->njoint >= 0 &&
           cls->njoint <= MBN_ELEMENT_MAX_JOINTS && (cls->njoint == 0 || joints) && cls->nevent >= 0 &&
           cls->nevent <= MBN_ELEMENT_MAX_EVENTS && (cls->nevent == 0 || (cls->event && cls->on_event)) &&
           !cls->energy == !cls->energy_tangent && cls->npar >= 0 && cls->nstate >= 0 && cls->nout >= 0 &&
           (cls->nout == 0 || (cls->output && cls->output_tangent)) && !cls->accel_rate == !cls->accel_rate_tangent &&
           cls->ndisc >= 0 && !cls->period == !cls->sample &&
           (cls->ndisc == 0 || cls->period || cls->nevent > 0) && /* z sampled on a grid, or changed at events */
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
        if (b <= 0 || b >= m->nb) continue; /* the world (refused at build) */
        if (!el[e].cls->force) { /* no point force: its states' rates are accel_rate's alone */
            if (sdot)
                for (int k = 0; k < el[e].nstate; ++k) sdot[el[e].os + k] = 0.0;
            continue;
        }
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
    double fixed[256], *tj = NULL; /* the commanded tau plus the elements' joint rows */
    if (mbn_elements_have_joints(e->nel, e->el)) {
        tj = nv <= 256 ? fixed : malloc(sizeof(double) * (size_t)nv);
        if (!tj) { memcpy(e->ws->g, g0, sizeof g0); return MB_ADAPT_NO_MEMORY; }
        memcpy(tj, tau, sizeof(double) * (size_t)nv);
        mbn_elements_joint_forces(e->nel, e->el, t, q, y, y + nv, e->blk ? e->blk : y + nv, tj);
    }
    int err = e->inner.f(e->inner.ctx, q, y, tj ? tj : tau, e->fext, qdot, ydot);
    if (tj && tj != fixed) free(tj);
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
    e->blk = NULL;
    *ode = e->inner;
    ode->ctx = e;
    ode->f = element_f;
    ode->normalize = element_normalize;
    ode->t_stage = &e->t_stage;
    ode->ny = m->nv + mbn_elements_nstate(nel, el);
    if (ode->ny > m->nv) ode->work = NULL; /* the inner scratch is sized for [q; v]: mb_adapt_advance only */
}

/* ------------------------------------------------------------ joint rows, events, energy */
int mbn_elements_have_joints(int nel, const mbn_element *el) {
    for (int e = 0; e < nel; ++e)
        if (el[e].cls->njoint > 0) return 1;
    return 0;
}

/* the element's joint coordinates qj, velocities vj (NULL v: zeros) */
static void joint_values(const mbn_element *el, const double *q, const double *v, double *qj, double *vj) {
    for (int k = 0; k < el->cls->njoint; ++k) {
        qj[k] = q[el->iq[k]];
        vj[k] = v ? v[el->iv[k]] : 0.0;
    }
}

void mbn_elements_joint_forces(int nel, const mbn_element *el, double t, const double *q, const double *v,
                               const double *sblk, const double *zblk, double *tau) {
    for (int e = 0; e < nel; ++e) {
        int nj = el[e].cls->njoint;
        if (!nj) continue;
        double qj[MBN_ELEMENT_MAX_JOINTS], vj[MBN_ELEMENT_MAX_JOINTS], tj[MBN_ELEMENT_MAX_JOINTS];
        joint_values(el + e, q, v, qj, vj);
        el[e].cls->joint_force(el[e].par + 3, t, qj, vj, sblk + el[e].os, zblk + el[e].oz, tj);
        for (int k = 0; k < nj; ++k) tau[el[e].iv[k]] += tj[k];
    }
}

void mbn_elements_joint_tangents(int nel, const mbn_element *el, double t, const double *q, const double *v,
                                 const double *sblk, const double *zblk, const double *dq, const double *dv, const double *dblk,
                                 double *dtau) {
    for (int e = 0; e < nel; ++e) {
        int nj = el[e].cls->njoint;
        if (!nj) continue;
        double qj[MBN_ELEMENT_MAX_JOINTS], vj[MBN_ELEMENT_MAX_JOINTS], dqj[MBN_ELEMENT_MAX_JOINTS],
            dvj[MBN_ELEMENT_MAX_JOINTS], dtj[MBN_ELEMENT_MAX_JOINTS];
        joint_values(el + e, q, v, qj, vj);
        joint_values(el + e, dq, dv, dqj, dvj);
        el[e].cls->joint_tangent(el[e].par + 3, t, qj, vj, sblk + el[e].os, zblk + el[e].oz, dqj, dvj,
                                 dblk + el[e].os, dtj);
        for (int k = 0; k < nj; ++k) dtau[el[e].iv[k]] += dtj[k];
    }
}

int mbn_elements_nevent(int nel, const mbn_element *el) {
    int n = 0;
    for (int e = 0; e < nel; ++e) n += el[e].cls->nevent;
    return n;
}

void mbn_elements_events(int nel, const mbn_element *el, double t, const double *q, const double *v,
                         const double *sblk, const double *zblk, double *g) {
    for (int e = 0; e < nel; ++e) {
        if (!el[e].cls->nevent) continue;
        double qj[MBN_ELEMENT_MAX_JOINTS], vj[MBN_ELEMENT_MAX_JOINTS];
        joint_values(el + e, q, v, qj, vj);
        el[e].cls->event(el[e].par + 3, t, qj, vj, sblk + el[e].os, zblk + el[e].oz, g);
        g += el[e].cls->nevent;
    }
}

void mbn_elements_on_event(int nel, const mbn_element *el, double t, const double *q, const double *v, double *blk) {
    for (int e = 0; e < nel; ++e) {
        if (!el[e].cls->nevent) continue;
        double qj[MBN_ELEMENT_MAX_JOINTS], vj[MBN_ELEMENT_MAX_JOINTS];
        joint_values(el + e, q, v, qj, vj);
        el[e].cls->on_event(el[e].par + 3, t, qj, vj, blk + el[e].os, blk + el[e].oz);
    }
}

double mbn_elements_energy(int nel, const mbn_element *el, const double *q, const double *v, const double *sblk,
                           const double *zblk) {
    double E = 0.0;
    for (int e = 0; e < nel; ++e) {
        if (!el[e].cls->energy) continue;
        double qj[MBN_ELEMENT_MAX_JOINTS], vj[MBN_ELEMENT_MAX_JOINTS];
        joint_values(el + e, q, v, qj, vj);
        E += el[e].cls->energy(el[e].par + 3, qj, vj, sblk + el[e].os, zblk + el[e].oz);
    }
    return E;
}

double mbn_elements_energy_tangent(int nel, const mbn_element *el, const double *q, const double *v,
                                   const double *sblk, const double *zblk, const double *dq, const double *dv, const double *dblk) {
    double dE = 0.0;
    for (int e = 0; e < nel; ++e) {
        if (!el[e].cls->energy_tangent) continue;
        double qj[MBN_ELEMENT_MAX_JOINTS], vj[MBN_ELEMENT_MAX_JOINTS], dqj[MBN_ELEMENT_MAX_JOINTS],
            dvj[MBN_ELEMENT_MAX_JOINTS];
        joint_values(el + e, q, v, qj, vj);
        joint_values(el + e, dq, dv, dqj, dvj);
        dE += el[e].cls->energy_tangent(el[e].par + 3, qj, vj, sblk + el[e].os, zblk + el[e].oz, dqj, dvj,
                                        dblk + el[e].os);
    }
    return dE;
}

/* ------------------------------------------------------------ discrete states */
int mbn_elements_ndisc(int nel, const mbn_element *el) {
    int n = 0;
    for (int e = 0; e < nel; ++e) n += el[e].ndisc;
    return n;
}

/* 1 if the element samples its discrete states on a grid (rather than at its events only) */
static int has_grid(const mbn_element *el) { return el->ndisc && el->cls->period; }

/* the element's grid spacing (s), or NAN if it is not positive and finite */
static double element_period(const mbn_element *el) {
    double T = el->cls->period(el->par + 3);
    return T > 0 && isfinite(T) ? T : NAN;
}

double mbn_elements_next_instant(int nel, const mbn_element *el, double t) {
    double next = INFINITY;
    for (int e = 0; e < nel; ++e) {
        if (!has_grid(el + e)) continue;
        double T = element_period(el + e);
        if (isnan(T)) return NAN;
        next = fmin(next, (floor(t / T + 1e-6) + 1.0) * T);
    }
    return next;
}

int mbn_elements_periods_valid(int nel, const mbn_element *el) {
    for (int e = 0; e < nel; ++e)
        if (has_grid(el + e) && isnan(element_period(el + e))) return 0;
    return 1;
}

/* 1e-9 of the smallest grid spacing: instants closer than this are one */
static double grid_eps(int nel, const mbn_element *el) {
    double T = INFINITY;
    for (int e = 0; e < nel; ++e)
        if (has_grid(el + e)) T = fmin(T, element_period(el + e));
    return 1e-9 * T;
}

void mbn_elements_sample(int nel, const mbn_element *el, double t, double *blk, double *done) {
    for (int e = 0; e < nel; ++e) {
        if (!has_grid(el + e)) continue;
        double T = element_period(el + e), grid = floor(t / T + 0.5) * T;
        if (!(fabs(t - grid) <= 1e-9 * T) || (done && !(grid > done[e] + 0.5 * T))) continue;
        el[e].cls->sample(el[e].par + 3, grid, blk + el[e].os, blk + el[e].oz);
        if (done) done[e] = grid;
    }
}

/* ---- state events (element.h): an armed indicator reaching 0 splits the interval there ---- */
typedef struct {
    mbn_element_ode *e;
    const mb_ode *ode;
    const double *tau;
    const mb_adapt_options *opt;
    mb_adapt_stats *stats;
    int nq, ny, ng;
    double *g, *armed; /* (ng) indicators, 1 where armed (negative at the interval's start) */
    double *q1, *y1, *qm, *ym, *qb, *yb;
} ev_work;

/* (qo, yo) = (q, y) after span (s) from the time t0 (s), error-controlled */
static int ev_step(ev_work *w, double t0, const double *q, const double *y, double span, double *qo, double *yo) {
    memcpy(qo, q, sizeof(double) * (size_t)w->nq);
    memcpy(yo, y, sizeof(double) * (size_t)w->ny);
    w->e->t0 = t0;
    return mb_adapt_advance(w->ode, qo, yo, w->tau, NULL, span, w->opt, w->stats);
}

/* the largest armed indicator at (q, y) at time t (-inf: none armed): the continuous states
 * from y (after v), the discrete ones from blk (the elements' block) */
static double ev_worst(ev_work *w, double t, const double *q, const double *y, const double *blk) {
    mbn_element_ode *e = w->e;
    double worst = -INFINITY;
    mbn_elements_events(e->nel, e->el, t, q, y, y + e->m->nv, blk, w->g);
    for (int k = 0; k < w->ng; ++k)
        if (w->armed[k] != 0.0 && w->g[k] > worst) worst = w->g[k];
    return worst;
}

/* the instant b (s after t0, within span) at which the first armed indicator reaches 0, and the
 * state (q, y) there (on the reached side), from (q, y) at t0 and the end state (w->q1, w->y1)
 * already past it: bisection, each half integrated from the latest state short of it, to
 * g < 1e-13 or 2^-60 of span */
static int ev_locate(ev_work *w, double t0, double *q, double *y, const double *blk, double span, double *b_out) {
    int err;
    double a = 0.0, b = span;
    memcpy(w->qb, w->q1, sizeof(double) * (size_t)w->nq);
    memcpy(w->yb, w->y1, sizeof(double) * (size_t)w->ny);
    for (int it = 0; it < 60; ++it) {
        double mid = 0.5 * (a + b);
        if ((err = ev_step(w, t0 + a, q, y, mid - a, w->qm, w->ym))) return err;
        double worst = ev_worst(w, t0 + mid, w->qm, w->ym, blk);
        if (worst >= 0.0) {
            b = mid;
            memcpy(w->qb, w->qm, sizeof(double) * (size_t)w->nq);
            memcpy(w->yb, w->ym, sizeof(double) * (size_t)w->ny);
            if (worst < 1e-13) break;
        } else {
            a = mid;
            memcpy(q, w->qm, sizeof(double) * (size_t)w->nq);
            memcpy(y, w->ym, sizeof(double) * (size_t)w->ny);
        }
    }
    memcpy(q, w->qb, sizeof(double) * (size_t)w->nq);
    memcpy(y, w->yb, sizeof(double) * (size_t)w->ny);
    *b_out = b;
    return 0;
}

/* (q, y) after span (s) from t0 (s): an interval in which an armed indicator reaches 0 is split
 * at that instant, where the elements' on_event runs, and the rest integrated anew */
static int ev_advance(ev_work *w, double t0, double *q, double *y, double *blk, double span) {
    mbn_element_ode *e = w->e;
    double rest = span, t = t0;
    int err;
    while (rest > 1e-12 * span) {
        mbn_elements_events(e->nel, e->el, t, q, y, blk, blk, w->g);
        for (int k = 0; k < w->ng; ++k) w->armed[k] = w->g[k] < 0.0;
        if ((err = ev_step(w, t, q, y, rest, w->q1, w->y1))) return err;
        if (!(ev_worst(w, t + rest, w->q1, w->y1, blk) >= 0.0)) {
            memcpy(q, w->q1, sizeof(double) * (size_t)w->nq);
            memcpy(y, w->y1, sizeof(double) * (size_t)w->ny);
            break;
        }
        double b;
        if ((err = ev_locate(w, t, q, y, blk, rest, &b))) return err;
        mbn_elements_on_event(e->nel, e->el, t + b, q, y, blk);
        rest -= b;
        t += b;
    }
    return 0;
}

/* one interval of span (s) from t0 (s): with events, ev_advance (the work allocated here) */
static int advance_span(mbn_element_ode *e, const mb_ode *ode, double t0, double *q, double *y, const double *tau,
                        double span, const mb_adapt_options *opt, mb_adapt_stats *stats) {
    int ng = mbn_elements_nevent(e->nel, e->el);
    e->t0 = t0;
    if (!ng) return mb_adapt_advance(ode, q, y, tau, NULL, span, opt, stats);
    int nq = e->m->nq, ny = ode->ny;
    double *buf = malloc(sizeof(double) * (size_t)(2 * ng + 3 * nq + 3 * ny + 1));
    if (!buf) return MB_ADAPT_NO_MEMORY;
    double *q1 = buf + 2 * ng, *y1 = q1 + 3 * nq;
    ev_work w = {e, ode, tau, opt, stats, nq, ny, ng, buf, buf + ng, q1, y1, q1 + nq, y1 + ny, q1 + 2 * nq, y1 + 2 * ny};
    double *blk = y + e->m->nv;
    const double *saved = e->blk;
    e->blk = blk; /* the stages' y holds [v; s]: the joint rows read z here */
    int err = ev_advance(&w, t0, q, y, blk, span);
    e->blk = saved;
    e->t0 = t0;
    free(buf);
    return err;
}

int mbn_element_advance(mbn_element_ode *e, const mb_ode *ode, double *q, double *y, const double *tau, double dt,
                        const mb_adapt_options *opt, mb_adapt_stats *stats) {
    const double *saved = e->blk;
    if (!e->blk) e->blk = y + e->m->nv; /* the stages' y holds [v; s]: the joint rows read z here */
    int status = MB_ADAPT_OK;
    int grid = 0;
    for (int k = 0; k < e->nel; ++k) grid |= has_grid(e->el + k);
    if (!grid) {
        status = advance_span(e, ode, e->t0, q, y, tau, dt, opt, stats);
        e->blk = saved;
        return status;
    }
    double eps = grid_eps(e->nel, e->el);
    if (!(eps > 0)) { e->blk = saved; return MB_ADAPT_BAD_GRID; }
    /* the instants are multiples of each spacing from the absolute time */
    double t_end = e->t0 + dt, tk = e->t0;
    while (tk < t_end - eps) {
        double next = mbn_elements_next_instant(e->nel, e->el, tk);
        if (isnan(next)) { status = MB_ADAPT_BAD_GRID; break; }
        double seg_end = fmin(next, t_end);
        int err = advance_span(e, ode, tk, q, y, tau, seg_end - tk, opt, stats);
        if (err) { status = err; break; }
        tk = seg_end;
        if (fabs(seg_end - next) <= eps) mbn_elements_sample(e->nel, e->el, next, y + e->m->nv, NULL);
    }
    e->blk = saved;
    return status;
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
