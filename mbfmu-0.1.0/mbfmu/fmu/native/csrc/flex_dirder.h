/*
 * Exact directional derivatives of a flexible plant (assumed-modes beams,
 * csrc/flexible.h) for the directional derivatives of dirder.c. See
 * flex_dirder.c.
 */
#ifndef MBFMU_FLEX_DIRDER_H
#define MBFMU_FLEX_DIRDER_H

#include "native.h"

/* the rigid tangents of dirder.c run on the virtual tree (model sizes nq_v, nv_v) */
typedef struct {
    void *w; /* dirder.c's workspace */
    /* at the virtual state (c, cd) with accelerations cdd and commands cmd (nv_v): the
     * inverse dynamics id = ID(c, cd, cdd) - fext(c, cd) (nv_v, joint forces S^T f of the
     * subtrees), its tangent did along (dc, dcd, dcdd), and, unless dpass is NULL, the
     * tangent dpass (nv_v) of the generalized forces (commands and the joints' passive
     * forces) along (dc, dcd, dcmd). Leaves the forward pass in w for outputs. */
    void (*id)(mbn_instance *in, void *w, const double *c, const double *cd, const double *cdd, const double *cmd,
               const double *dc, const double *dcd, const double *dcdd, const double *dcmd, double *id, double *did,
               double *dpass);
    /* after id: dy[k] for the virtual tree's sensors k (points, energies of the tree)
     * at c along dc; the other entries are left for flex_dirder.c */
    void (*tree_outputs)(mbn_instance *in, void *w, const double *c, const double *dc, const double *dx,
                         const double *du, double *dy);
} mbn_vtree_tangents;

/* NULL when the flexible plant's derivatives are exact here, else why not */
const char *mbn_flex_dirder_inexact(mbn_instance *in);

/* dxdot (nx) and dy (ny) along (dx (nx), du (nu)) at the instance's state with
 * command tangent dcmd = B du (nv, public); 0, the body whose articulated
 * inertia is singular, MBN_DD_SINGULAR (a singular modal or public mass) or MBN_NOMEM */
int mbn_flex_tangent(mbn_instance *in, const mbn_vtree_tangents *ops, const double *dx, const double *du,
                     const double *dcmd, double *dxdot, double *dy);

#endif
