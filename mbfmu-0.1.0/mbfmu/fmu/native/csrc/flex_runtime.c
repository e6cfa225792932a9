/*
 * The native FMU runtime for a flexible plant (assumed-modes beams,
 * csrc/flexible.h): the mb_flex around the packed virtual tree, from the
 * plant's tables (mbn_flex_data) and the numeric description d (station
 * tables g, H and the modal stiffness and damping K, D), and its output
 * sensors (csrc/flexsensors.h). runtime.c integrates it with mb_flex_ode,
 * the right-hand side the Python plant's advance_flexible hands to the same
 * mb_adapt_advance.
 */
#include <stdlib.h>
#include <string.h>

#include "flexsensors.h"
#include "native.h"

static int *dup_ints(const int *src, int n) {
    int *p = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (p && n > 0) memcpy(p, src, sizeof(int) * (size_t)n);
    return p;
}

static double *dup_dbls(const double *src, int n) {
    double *p = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (p && n > 0) memcpy(p, src, sizeof(double) * (size_t)n);
    return p;
}

mb_flex *mbn_flex_new(const mbn_data *D, mb_model *m, const double *d) {
    const mbn_flex_data *F = D->flex;
    mb_flex *fx = calloc(1, sizeof(mb_flex));
    if (!fx) return NULL;
    int nb = m->nb, nbeam = F->nbeam;
    fx->m = m;
    fx->nq = D->nq;
    fx->nv = D->nv;
    fx->nbeam = nbeam;
    fx->role = dup_ints(F->role, nb);
    fx->beam = dup_ints(F->beam, nb);
    fx->pq = dup_ints(F->pq, nb);
    fx->pv = dup_ints(F->pv, nb);
    fx->goff = dup_ints(F->goff, nb);
    fx->hoff = dup_ints(F->hoff, nb);
    fx->bbody = dup_ints(F->bbody, nbeam);
    fx->bq = dup_ints(F->bq, nbeam);
    fx->bv = dup_ints(F->bv, nbeam);
    fx->bnm = dup_ints(F->bnm, nbeam);
    fx->kdoff = dup_ints(F->kdoff, nbeam);
    fx->gtab = dup_dbls(d + F->o_gtab, F->ng);
    fx->htab = dup_dbls(d + F->o_htab, F->nh);
    fx->kd = dup_dbls(d + F->o_kd, F->nkd);
    fx->nm_max = 0;
    for (int b = 0; b < nbeam && fx->bnm; ++b)
        if (fx->nm_max < fx->bnm[b]) fx->nm_max = fx->bnm[b];
    if (!fx->role || !fx->beam || !fx->pq || !fx->pv || !fx->goff || !fx->hoff || !fx->bbody || !fx->bq ||
        !fx->bv || !fx->bnm || !fx->kdoff || !fx->gtab || !fx->htab || !fx->kd || mb_flex_alloc_workspace(fx)) {
        mb_flex_free(fx);
        return NULL;
    }
    return fx;
}

void mbn_flex_outputs(mbn_instance *in) {
    const mbn_data *D = in->data;
    mb_flex_sensors_eval(in->fx, &in->mp, D->ny, in->sens, in->x, in->u, D->nu, in->y);
}

int mbn_flex_blown_up(mbn_instance *in, int err) {
    mb_flex *fx = in->fx;
    if (err > 0) return 1;
    /* fx->rk is free once the integrator has returned */
    return mb_flex_rhs(fx, in->x, in->x + fx->nq, in->tau, NULL, fx->rk, fx->rk + fx->nq) == 0;
}
