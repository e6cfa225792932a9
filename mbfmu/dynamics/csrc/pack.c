/*
 * The one packer of a model (mb.h): the Python binding (binding.c) and the
 * native FMU runtime (fmu/native/csrc/runtime.c) both call mb_pack.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb.h"
#include "drives.h"

static int *copy_ints(const int *src, int n) {
    int *p = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (p && n > 0) memcpy(p, src, sizeof(int) * (size_t)n);
    return p;
}

static double *copy_dbls(const double *src, int n) {
    double *p = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (p && n > 0) memcpy(p, src, sizeof(double) * (size_t)n);
    return p;
}

int mb_desc_nv(const mb_desc *desc) {
    int nv = 0;
    for (int i = 0; i < desc->nb; ++i) nv += desc->nvi[i];
    return nv;
}

/* 0, or the MB_PACK_* code of the first element that names a body that
 * does not exist (springs: any body; contacts and cables: not the world) */
static int check_element_bodies(const mb_model *m, int *where) {
    for (int k = 0; k < m->ns; ++k) {
        double a = m->springs[SP_N * k + SP_BA], b = m->springs[SP_N * k + SP_BB];
        if (!(a >= 0 && a < m->nb && b >= 0 && b < m->nb)) return *where = k, MB_PACK_SPRING;
    }
    for (int k = 0; k < m->nct; ++k) {
        double b = m->contacts[CT_N * k + CT_BODY];
        if (!(b >= 1 && b < m->nb)) return *where = k, MB_PACK_CONTACT;
    }
    for (int k = 0; k < m->ncb; ++k) {
        double b = m->cables[CB_N * k + CB_BODY];
        if (!(b >= 1 && b < m->nb)) return *where = k, MB_PACK_CABLE;
    }
    return 0;
}

int mb_pack(const mb_desc *D, mb_model **out, int *where) {
    int nb = D->nb, unused;
    if (!where) where = &unused;
    *out = NULL;
    *where = 0;
    if (nb < 1 || D->ns < 0 || D->nct < 0 || D->ncb < 0 || D->ndr < 0) return MB_PACK_COUNT;
    for (int i = 1; i < nb; ++i)
        if (D->parent[i] < 0 || D->parent[i] >= i) return *where = i, MB_PACK_PARENT;
    mb_model *m = calloc(1, sizeof(mb_model));
    if (!m) return MB_PACK_NOMEM;
    m->nb = nb;
    m->ns = D->ns;
    m->nct = D->nct;
    m->ncb = D->ncb;
    m->ndr = D->ndr;
    m->parent = copy_ints(D->parent, nb);
    m->jtype = copy_ints(D->jtype, nb);
    m->nqi = copy_ints(D->nqi, nb);
    m->nvi = copy_ints(D->nvi, nb);
    m->iq = malloc(sizeof(int) * (size_t)nb);
    m->iv = malloc(sizeof(int) * (size_t)nb);
    m->axis1 = copy_dbls(D->axis1, 3 * nb);
    m->axis2 = copy_dbls(D->axis2, 3 * nb);
    m->Rtree = copy_dbls(D->Rtree, 9 * nb);
    m->ptree = copy_dbls(D->ptree, 3 * nb);
    m->Ibody = copy_dbls(D->Ibody, 36 * nb);
    m->springs = copy_dbls(D->springs, SP_N * D->ns);
    m->contacts = copy_dbls(D->contacts, CT_N * D->nct);
    m->cables = copy_dbls(D->cables, CB_N * D->ncb);
    m->drives = D->ndr ? copy_dbls(D->drives, DR_N * D->ndr) : NULL;
    if (!m->parent || !m->jtype || !m->nqi || !m->nvi || !m->iq || !m->iv || !m->axis1 || !m->axis2 ||
        !m->Rtree || !m->ptree || !m->Ibody || !m->springs || !m->contacts || !m->cables ||
        (D->ndr && !m->drives)) {
        mb_free(m);
        return MB_PACK_NOMEM;
    }
    memcpy(m->g, D->g, sizeof m->g);
    int nq = 0, nv = 0;
    for (int i = 0; i < nb; ++i) {
        m->iq[i] = nq;
        m->iv[i] = nv;
        nq += m->nqi[i];
        nv += m->nvi[i];
    }
    m->nq = nq;
    m->nv = nv;
    /* the tree's own velocities (a flexible plant's public nv is another) */
    m->dof_force = copy_dbls(D->dof_force, DF_N * nv);
    if (!m->dof_force) {
        mb_free(m);
        return MB_PACK_NOMEM;
    }
    /* limits of +-1e300 mean none: the binding refuses non-finite values and
     * the FMI passes none, so "no limit" is encoded as +-1e300 */
    m->has_dof_force = 0;
    for (int k = 0; k < nv; ++k) {
        const double *P = m->dof_force + DF_N * k;
        if (P[DF_K] != 0 || P[DF_D] != 0 || fabs(P[DF_LO]) < 1e299 || fabs(P[DF_HI]) < 1e299)
            m->has_dof_force = 1;
    }
    int bad = check_element_bodies(m, where);
    if (bad) {
        mb_free(m);
        return bad;
    }
    if (mb_model_derive(m)) {
        mb_free(m);
        return MB_PACK_NOMEM;
    }
    *out = m;
    return MB_PACK_OK;
}
