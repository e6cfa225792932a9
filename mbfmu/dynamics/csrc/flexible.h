/*
 * Assumed-modes beams inside the articulated-body recursion.
 *
 * The flexible system is packed as the "virtual tree" of
 * mbfmu.dynamics.flexible.system (an ordinary mb_model): rigid bodies and
 * beam floating frames with ordinary joints, and each beam's cross-sections
 * and tip frame placed on its frame by chains of 1-DOF virtual joints whose
 * coordinates are functions of the beam's modal coordinates eta:
 *     c = g . eta - 1/2 eta^T H eta        (H only on axial rows)
 * mb_flex adds the map between the public coordinates q = [q_rigid; eta]
 * and the virtual tree, the station tables (g rows, H blocks) and the modal
 * stiffness and damping, plus workspace.
 */
#ifndef MBFMU_FLEXIBLE_H
#define MBFMU_FLEXIBLE_H

#include "mb.h"

/* role of each body of the virtual tree */
enum { FX_WORLD = 0, FX_RIGID = 1, FX_FRAME = 2, FX_DEFORM = 3 };

typedef struct {
    /* ---- description (immutable after creation) ---- */
    const mb_model *m; /* the virtual tree (owned by its own handle) */
    int nq, nv;       /* public configuration / velocity sizes */
    int nbeam, nm_max;
    int *role;        /* (nb) FX_* */
    int *beam;        /* (nb) beam of a frame or deformation body, else -1 */
    int *pq, *pv;     /* (nb) public first q / v index of a rigid or frame joint */
    int *goff, *hoff; /* (nb) deformation joint: offsets of its g row and H block (-1: none) */
    double *gtab, *htab;
    int *bbody;       /* (nbeam) floating-frame body */
    int *bq, *bv;     /* (nbeam) public index of the first modal coordinate in q and v */
    int *bnm;         /* (nbeam) number of modes */
    int *kdoff;       /* (nbeam) offset of K (nm x nm) then D (nm x nm) in kd */
    double *kd;

    /* ---- workspace ---- */
    mb_data *d;           /* the virtual tree's workspace (owned: mb_flex_alloc_workspace) */
    double *c, *cd, *cqd; /* virtual q (nq_v), v (nv_v), dq/dt (nq_v) */
    double *vtau;         /* virtual generalized forces (nv_v) */
    double *XE, *Xr;      /* (nb,9), (nb,3): ^kX_B of a deformation body k */
    double *J;            /* (nb, nm_max, 6): columns of dA_k/d(eta_ddot) */
    double *zeta;         /* (nb, 6) velocity-product acceleration of k */
    double *grow;         /* (nb, nm_max) g - H eta of a deformation joint */
    double *gam;          /* (nb) -eta_dot^T H eta_dot of a deformation joint */
    double *Mre, *Mee, *be, *Y, *w; /* per beam, stride 6 nm_max, nm_max^2, nm_max, 6 nm_max, nm_max */
    double *pacc;         /* (nv) prescribed accelerations (public) */
    int *pres;            /* (nb) joint of body i is prescribed */
    int *xid;             /* (nb) ^kX_B of a deformation body is a pure translation */
    double *rk;           /* 8 (nq + nv): scratch of the fixed-step loop */
} mb_flex;

/* error code of mb_flex_rk4: a stage state became non-finite */
#define FX_NONFINITE 0x7fffffff

int mb_flex_alloc_workspace(mb_flex *fx);

/* In-place Cholesky A = L L^T of an n x n symmetric positive definite matrix
 * (leading dimension ld, lower triangle used); -1 when a pivot is not clearly
 * positive (below 1e-14 of the largest diagonal entry). mb_chol_solve: x <- A^-1 x
 * with that factor. */
int mb_chol(double *A, int n, int ld);
void mb_chol_solve(const double *L, int n, int ld, double *x);
void mb_flex_free(mb_flex *fx);

/* dq/dt (nq) and dv/dt (nv) in public coordinates, with the model's force
 * elements, fext (nb,6) body frame or NULL, and the joints of bodies with
 * fx->pres[i] != 0 driven at the accelerations fx->pacc (public indices).
 * Returns 0; -i if the articulated inertia of the joint of body i is
 * singular; 1 + b if the modal mass M_ee of beam b is singular. */
int mb_flex_rhs(mb_flex *fx, const double *q, const double *v, const double *tau,
                const double *fext, double *qdot, double *vdot);

/* n classical RK4 steps of size h (s) on x = [q; v] (public coordinates)
 * with mb_flex_rhs, tau and fext held and no prescribed joints; quaternions
 * renormalized after each step. Returns 0, an mb_flex_rhs error code, or
 * FX_NONFINITE if a stage state is not finite (q, v are then those at the
 * start of the failing step). */
int mb_flex_rk4(mb_flex *fx, double *q, double *v, const double *tau, const double *fext,
                double h, int n);

/* the virtual tree's coordinates fx->c (model nq) and rates fx->cd (model
 * nv) at the public state (q, v), for kinematics and energies */
void mb_flex_virtual_state(mb_flex *fx, const double *q, const double *v);

/* the mb_ode of mb_flex_rhs (public coordinates, no prescribed joints) for
 * mb_rk4_steps or mb_adapt_advance */
void mb_flex_ode(mb_flex *fx, mb_ode *ode);

#endif
