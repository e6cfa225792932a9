/* The engine's side of the plug-in elements (element.h): the native runtime's
 * and the kernels' (the Python plant's). */
#include <string.h>

#include "element.h"
#include "adaptive.h"

int mbn_element_class_complete(const mbn_element_class *cls) {
    return cls->force && cls->tangent && cls->npar >= 0 && cls->nstate >= 0 && cls->nout >= 0 &&
           (cls->nout == 0 || (cls->output && cls->output_tangent)) && !cls->accel_rate == !cls->accel_rate_tangent;
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
    mbn_elements_fext(e->m, e->ws, e->nel, e->el, e->t0 + e->t_stage, q, y, y + nv, e->fext, ydot + nv);
    if (fext)
        for (int k = 0; k < 6 * e->m->nb; ++k) e->fext[k] += fext[k];
    int err = e->inner.f(e->inner.ctx, q, y, tau, e->fext, qdot, ydot);
    if (!err) mbn_elements_accel_rates(e->m, e->ws, e->nel, e->el, e->t0 + e->t_stage, q, y, ydot, y + nv, ydot + nv);
    return err;
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
    *ode = e->inner;
    ode->ctx = e;
    ode->f = element_f;
    ode->normalize = element_normalize;
    ode->t_stage = &e->t_stage;
    ode->ny = m->nv + mbn_elements_nstate(nel, el);
    if (ode->ny > m->nv) ode->work = NULL; /* the inner scratch is sized for [q; v]: mb_adapt_advance only */
}
