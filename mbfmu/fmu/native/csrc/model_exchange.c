/* Model Exchange core of the native runtime (see model_exchange.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_exchange.h"

int mbn_me_init(mbn_me *me, mbn_instance *in) {
    memset(me, 0, sizeof *me);
    me->in = in;
    me->dx = calloc((size_t)in->data->nx + 1, sizeof(double));
    me->el_done = calloc((size_t)in->data->nel + 1, sizeof(double));
    for (int e = 0; me->el_done && e < in->data->nel; ++e) me->el_done[e] = -INFINITY;
    return me->dx && me->el_done ? 0 : -1;
}

void mbn_me_free(mbn_me *me) {
    free(me->dx);
    free(me->el_done);
    me->dx = NULL;
    me->el_done = NULL;
}

void mbn_me_start(mbn_me *me) {
    for (int e = 0; e < me->in->data->nel; ++e) me->el_done[e] = me->in->t;
    me->drift = 0.0;
    mbn_me_changed(me);
}

void mbn_me_changed(mbn_me *me) {
    me->dx_valid = 0;
    me->in->y_valid = 0;
}

/* the largest | |e| - 1 | of the quaternions of q, normalizing them */
static double normalize(const mbn_instance *in, double *q) {
    const mb_model *m = in->m;
    double worst = 0.0;
    if (in->data->flex || m->vector_q) return 0.0; /* no quaternion (flexible systems have none) */
    for (int i = 1; i < m->nb; ++i) {
        int t = m->jtype[i];
        if (t != MB_SPHERICAL && t != MB_FREE) continue;
        const double *e = q + m->iq[i] + (t == MB_FREE ? 3 : 0);
        double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
        worst = fmax(worst, fabs(n - 1.0));
        mb_normalize_joint(m, i, q + m->iq[i]);
    }
    return worst;
}

void mbn_me_set_states(mbn_me *me, const double *x) {
    mbn_instance *in = me->in;
    memcpy(in->x, x, sizeof(double) * (size_t)in->data->nxc);
    me->drift = fmax(me->drift, normalize(in, in->x));
    mbn_me_changed(me);
}

int mbn_me_derivatives(mbn_me *me, double *dx) {
    mbn_instance *in = me->in;
    int nxc = in->data->nxc;
    if (!me->dx_valid) {
        mbn_generalized_forces(in);
        int err = mbn_rhs(in, in->t, in->x, me->dx);
        if (err) return err;
        me->dx_valid = 1;
    }
    memcpy(dx, me->dx, sizeof(double) * (size_t)nxc);
    return 0;
}

void mbn_me_indicators(mbn_me *me, double *z) {
    mbn_instance *in = me->in;
    const mbn_data *D = in->data;
    mb_model *m = in->m;
    mb_data *ws = in->ws;
    const double *q = in->x;
    int posed = 0;
    for (int r = 0; r < D->nz; ++r) {
        const int *row = D->ztab + 4 * r;
        int k = row[1];
        if ((row[0] == MBN_Z_CONTACT || row[0] == MBN_Z_CABLE) && !posed) {
            mb_kinematics(m, ws, q, NULL);
            posed = 1;
        }
        switch (row[0]) {
        case MBN_Z_ELEMENT: { /* element.h: indicator row[2] of element k */
            double g[MBN_ELEMENT_MAX_EVENTS];
            const double *blk = in->x + D->nq + D->nv;
            mbn_elements_events(1, in->el + k, in->t, q, q + D->nq, blk, blk, g);
            z[r] = g[row[2]];
            break;
        }
        case MBN_Z_CONTACT: {
            double F[3], rB[3];
            z[r] = mb_contact_force(m, ws, k, F, rB);
            break;
        }
        case MBN_Z_CABLE: {
            double F[3], L;
            mb_cable_force(m, ws, k, F, &L);
            z[r] = L - m->cables[CB_N * k + CB_L0];
            break;
        }
        default: { /* MBN_Z_LIMIT: row[2] the configuration index, row[3] the side */
            const double *P = ws->dof_force + DF_N * k;
            z[r] = row[3] < 0 ? q[row[2]] - P[DF_LO] : P[DF_HI] - q[row[2]];
            break;
        }
        }
    }
}

double mbn_me_next_time_event(const mbn_me *me) {
    const mbn_instance *in = me->in;
    const mbn_data *D = in->data;
    double t = in->t, next = INFINITY;
    /* the plug-in elements' grids (a period that is not positive is refused with the parameters) */
    double el_next = mbn_elements_next_instant(D->nel, in->el, t);
    if (el_next < next) next = el_next;
    /* a frame element's kinks in time (a sled pulse's start and end, element.h) */
    const mbn_element *fr = mbn_elements_frame(D->nel, in->el);
    if (fr && fr->cls->frame_next_kink) next = fmin(next, fr->cls->frame_next_kink(fr->par + 3, t));
    return next;
}

void mbn_me_event_update(mbn_me *me, int *x_changed) {
    mbn_instance *in = me->in;
    const mbn_data *D = in->data;
    /* the plug-in elements' state events (element.h; each decides from its own indicators) */
    mbn_elements_on_event(D->nel, in->el, in->t, in->x, in->x + D->nq, in->x + D->nq + D->nv);
    /* the plug-in elements' samples at an instant of their grids, each once (element.h) */
    mbn_elements_sample(D->nel, in->el, in->t, in->x + D->nq + D->nv, me->el_done);
    /* the projected quaternions go back to the host only past MBN_ME_DRIFT (as at a
     * step event): a round-off drift handed back at every event would make each
     * event (an element's sample) change the continuous states, and the host restart */
    *x_changed = me->drift > MBN_ME_DRIFT;
    if (*x_changed) me->drift = 0.0;
    mbn_me_changed(me);
}

int mbn_me_step_event(const mbn_me *me) { return me->drift > MBN_ME_DRIFT; }

void mbn_me_nominals(const mbn_me *me, double *x) {
    for (int k = 0; k < me->in->data->nxc; ++k) x[k] = 1.0;
}
