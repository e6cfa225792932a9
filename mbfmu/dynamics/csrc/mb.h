/*
 * mbfmu dynamics kernels: model layout and algorithm entry points.
 *
 * Conventions (the same as mbfmu.dynamics.spatial):
 *   - spatial vectors are ordered [angular; linear]; motion m = [w; v],
 *     force f = [n; f]; all 6x6 matrices are row-major;
 *   - body 0 is the world; bodies 1..nb-1 each have one joint to parent[i] < i;
 *   - the body frame coincides with the joint's child frame;
 *   - Xup[i] = ^iX_parent is stored as (E, r): E = R_PI^T (rotation from parent
 *     to body coordinates), r = origin of body i in parent coordinates, so
 *     ^iX_p = [E 0; -E r~ E] (Featherstone, RBDA 2008, sec. 2.8);
 *   - quaternions are scalar first (w, x, y, z);
 *   - free-joint configuration is (x, y, z, w, qx, qy, qz), velocity is the
 *     body-frame spatial velocity [w_B; v_B].
 * All units SI.
 */
#ifndef MBFMU_MB_H
#define MBFMU_MB_H

#include "glibc_baseline.h"

enum mb_joint_type {
    MB_FIXED = 0,
    MB_REVOLUTE = 1,
    MB_PRISMATIC = 2,
    MB_SPHERICAL = 3,
    MB_FREE = 4,
    MB_UNIVERSAL = 5,
    MB_PLANAR = 6
};

/* Per-velocity-coordinate joint force element parameters (columns of dof_force). */
enum { DF_K = 0, DF_D, DF_Q0, DF_LO, DF_HI, DF_KLIM, DF_DLIM, DF_N };
/* Point-to-point spring-damper parameters (columns of springs). */
enum { SP_BA = 0, SP_PAX, SP_PAY, SP_PAZ, SP_BB, SP_PBX, SP_PBY, SP_PBZ, SP_K, SP_D, SP_L0, SP_N };
/* Sphere-plane contact parameters (columns of contacts): body, sphere centre
 * (body frame, m), radius (m), unit plane normal (world, towards the free
 * side), plane offset (n . x = offset on the plane, m), stiffness (N/m),
 * damping (N s/m), friction coefficient, slip speed (m/s), damping ramp (m). */
enum { CT_BODY = 0, CT_CX, CT_CY, CT_CZ, CT_R, CT_NX, CT_NY, CT_NZ, CT_OFF, CT_K, CT_D, CT_MU,
       CT_EPS, CT_RAMP, CT_N };
/* Ground-anchored cable parameters (columns of cables): anchor (world, m),
 * body, point (body frame, m), rest length (m), stiffness (N/m), damping
 * (N s/m), damping ramp (m). */
enum { CB_AX = 0, CB_AY, CB_AZ, CB_BODY, CB_PX, CB_PY, CB_PZ, CB_L0, CB_K, CB_D, CB_RAMP, CB_N };

/* The model: the description of a plant, immutable once packed (mb_pack,
 * pack.c). Kernels read it through a const pointer, so one model serves
 * any number of callers, each with its own mb_data. */
typedef struct {
    /* ---- description ---- */
    int nb;          /* number of bodies including the world body 0 */
    int nq, nv;      /* configuration and velocity sizes */
    int ns;          /* number of point-to-point springs */
    int nct, ncb;    /* number of sphere-plane contacts and of cables */
    int *parent;     /* (nb) parent body, -1 for the world */
    int *jtype;      /* (nb) enum mb_joint_type */
    int *iq, *iv;    /* (nb) first configuration / velocity index of the joint */
    int *nqi, *nvi;  /* (nb) configuration / velocity size of the joint */
    double *axis1;   /* (nb, 3) joint axis (revolute, prismatic, universal 1st) */
    double *axis2;   /* (nb, 3) universal joint 2nd axis */
    double *Rtree;   /* (nb, 3, 3) rotation of the joint frame in the parent frame */
    double *ptree;   /* (nb, 3) origin of the joint frame in the parent frame, m */
    double *Ibody;   /* (nb, 6, 6) spatial inertia about the body origin, body frame */
    double g[3];     /* gravity, world frame, m/s^2 */
    double *dof_force; /* (nv, DF_N) joint spring/damper/limit per velocity coordinate */
    double *springs;   /* (ns, SP_N) point-to-point spring-dampers */
    double *contacts;  /* (nct, CT_N) sphere-plane contacts */
    double *cables;    /* (ncb, CB_N) ground-anchored tension-only cables */
    int has_dof_force; /* any nonzero joint force element */
    int ndr;           /* number of joint drives (drives.h) */
    double *drives;    /* (ndr, DR_N) servo actuation and Coulomb friction, NULL if none */

    /* ---- derived from the description by mb_pack (fast paths) ---- */
    int *rotax;        /* (nb) k = 0..2: the rotation E of Xup is always about the body's
                          coordinate axis k (revolute about +-e_k, Rtree = 1); 3: E = 1
                          always (prismatic or fixed, Rtree = 1); -1: any rotation */
    int *sax;          /* (nb) revolute/prismatic with S = +-e_j (j = 0..5): j, else -1 */
    double *ssg;       /* (nb) the sign of that S, +1 or -1 */
    int vector_q;      /* no quaternion in q: nq = nv and dq/dt = v */
    int rigid_inertia; /* every Ibody has a rigid body's structural zeros ([Ibar h~; h~^T m 1]) */
    double *Rrod;      /* (nb, 2, 3, 3) of a revolute joint off the axis paths (rotax -1):
                          Rtree A and Rtree A^2 with A = [axis1]x, so that R_PI = Rtree
                          + sin(q) Rtree A + (1 - cos(q)) Rtree A^2 (Rodrigues); else 0 */
    /* ---- the dof tree of branch-induced sparsity (RBDA ch. 6), by mb_pack ---- */
    int *lambda;       /* (nv) parent dof of each dof, -1 at a root */
    int *lrun;         /* (nv) first dof of the run of consecutive parents ending at
                          each dof (lambda[t] = t - 1 from lrun[k] + 1 to k) */
    long lnnz;         /* ancestor-or-self pairs (i, j): the nonzeros of H's lower triangle */
    long *rowadr;      /* (nv) offset of dof k's row in mb_crba_pattern's values */
    int *lcol;         /* (lnnz) the column of each of those values: k, lambda[k], ... per row */
    int *root;         /* (nb) the ancestor of each body whose parent is the world */
    int fd_sparse;     /* forward dynamics by the sparse LTDL route (mb_forward_dynamics, mb_rhs) */
    int has_sr;        /* a joint whose S depends on q (universal, planar: Sr != 0) */
} mb_model;

/* the sparse route's dense H (mb_data.Hs) is held only up to this many
 * velocity coordinates; above, forward dynamics is by ABA */
#define MB_SPARSE_MAX_NV 1024

/* The data: one caller's workspace for one model (mb_data_new), overwritten
 * by every kernel call. Two threads need two mb_data; they may share the model. */
typedef struct {
    const mb_model *model; /* the model it was made for (for the ODE callbacks) */
    double *E, *r;     /* (nb,3,3), (nb,3) Xup */
    double *RW, *pW;   /* (nb,3,3), (nb,3) world pose R_WB, p_WB */
    double *S;         /* (nb,6,6) motion subspace, column k at S + 36 i + 6 k */
    double *Sr;        /* (nb,6,6) apparent derivative of S (S-ring times 1), same layout */
    double *cJ;        /* (nb,6) S-ring qd */
    double *v, *c, *a, *f; /* (nb,6) */
    double *IA;        /* (nb,6,6) articulated inertia; mb_crba: composite inertias,
                          world-aligned (10 numbers per body, stride 36) */
    double *pA;        /* (nb,6) bias force; the sparse route: world-aligned velocities */
    double *U;         /* (nb,6,6) IA S, column k at U + 36 i + 6 k; mb_crba: the
                          world-aligned motion subspaces, component a of dof k at
                          U + a nv + k */
    double *Dinv;      /* (nb,6,6) inverse of S^T IA S (nvi x nvi, row-major, stride 6) */
    double *uu;        /* (nb,6) tau - S^T pA; the sparse route: world-aligned accelerations */
    double *fext;      /* (nb,6) external + spring forces on each body, body frame */
    double *tau;       /* (nv) total generalized force */
    double *work;      /* scratch, 8 (nq + nv) */
    double g[3];       /* gravity in use, m/s^2: the model's, which a frame element (element.h)
                          offsets for the time of one call */
    double *dof_force; /* (nv, DF_N) the joint force rows in use: the model's */
    double *Hs;        /* (nv,nv) the sparse route's H and factor (lower pattern);
                          NULL when nv = 0 or nv > MB_SPARSE_MAX_NV */
} mb_data;

/* A model's description as flat arrays (borrowed: mb_pack copies them).
 * Limits of +-1e300 in dof_force mean none (non-finite values cannot come
 * through the FMI or the binding's checks). drives may be NULL when ndr = 0. */
typedef struct {
    int nb, ns, nct, ncb, ndr;
    const int *parent, *jtype, *nqi, *nvi;         /* (nb) */
    const double *axis1, *axis2, *Rtree, *ptree;   /* (nb, 3), (nb, 3), (nb, 3, 3), (nb, 3) */
    const double *Ibody;                           /* (nb, 6, 6) */
    const double *g;                               /* (3) m/s^2 */
    const double *dof_force;                       /* (nv, DF_N), nv = sum of nvi */
    const double *springs, *contacts, *cables;     /* (ns, SP_N), (nct, CT_N), (ncb, CB_N) */
    const double *drives;                          /* (ndr, DR_N) */
} mb_desc;

/* mb_pack's results: 0, or what is wrong (the index in *where) */
enum { MB_PACK_OK = 0, MB_PACK_NOMEM, MB_PACK_COUNT, MB_PACK_PARENT, MB_PACK_SPRING,
       MB_PACK_CONTACT, MB_PACK_CABLE };

/* model lifetime (pack.c): mb_pack copies the description into a new model
 * (*out, NULL on failure) and derives its fast paths; the one packer of the
 * Python binding and the native FMU runtime */
int mb_pack(const mb_desc *desc, mb_model **out, int *where);
/* pack.c's last step (algorithms.c): the fast paths rotax, sax, ssg and the
 * dof tree (lambda, lrun, lnnz, rowadr, lcol, root, has_sr, fd_sparse); 0 or -1 (no memory) */
int mb_model_derive(mb_model *m);
/* sum of the joints' velocity sizes nvi of a description (the rows of dof_force) */
int mb_desc_nv(const mb_desc *desc);
void mb_free(mb_model *m);
/* a workspace for the model m (NULL on allocation failure); mb_data_free(NULL) is a no-op */
mb_data *mb_data_new(const mb_model *m);
void mb_data_free(mb_data *d);

/* kinematics: Xup, S, cJ for all joints; world poses; with qd != NULL body
 * velocities v and c = cJ + v x vJ. */
void mb_kinematics(const mb_model *m, mb_data *d, const double *q, const double *qd);

/* qdd == NULL means zero. fext (nb,6) body-frame, may be NULL. tau out (nv). */
void mb_rnea(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *qdd,
             const double *fext, int with_gravity, double *tau);
/* mb_rnea without the world poses (d->RW, d->pW left as they were): for
 * callers that want tau alone */
void mb_rnea_tau(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *qdd,
                 const double *fext, int with_gravity, double *tau);
void mb_crba(const mb_model *m, mb_data *d, const double *q, double *M);
/* the same H as its lower pattern only (lnnz values: row by row, each row's
 * entries H[k][j] for j = k, lambda[k], lambda[lambda[k]], ...: decreasing
 * column; row k from values[rowadr[k]]), as MuJoCo's sparse qM; any nv
 * (no dense workspace); returns 0 */
int mb_crba_pattern(const mb_model *m, mb_data *d, const double *q, double *values);
/* returns 0, or -(i) with i the body whose articulated joint inertia is singular */
int mb_aba(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *tau,
           const double *fext, int with_gravity, double *qdd);
/* ABA building blocks (also used by the flexible kernel, flexible.c).
 * mb_bias_forces: pA = v x* I v - fext for every body (needs v from
 * mb_kinematics). mb_aba_joint_step: backward step of body i: reduce IA and
 * pA through its joint with generalized force tau[iv..] (or, with
 * qdd_prescribed != NULL, pass them unreduced at that joint acceleration)
 * and add them to the parent; returns 0 or -i when S^T IA S is singular.
 * mb_aba_joint_forward: a_i = X a_parent + c + S qdd with qdd (nvi) from the
 * stored reduction, or the prescribed one. */
void mb_bias_forces(const mb_model *m, mb_data *d, const double *fext);
int mb_aba_joint_step(const mb_model *m, mb_data *d, int i, const double *tau, const double *qdd_prescribed);
void mb_aba_joint_forward(const mb_model *m, mb_data *d, int i, const double *a_parent, const double *qdd_prescribed,
                          double *qdd);
/* Forward dynamics by the route the model's structure picks (fd_sparse):
 * the articulated-body algorithm, or H(q) qdd = tau - C(q, qd) by the sparse
 * crba and LTDL factorization; route -1 picks, 0 forces ABA, 1 the sparse
 * route (ABA when the data holds no Hs). Returns 0, or -(i) with i a body at
 * which the inertia is singular. */
int mb_forward_dynamics(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *tau,
                        const double *fext, int with_gravity, double *qdd, int route);
/* Branch-induced sparsity of the joint-space inertia H (n x n, row-major):
 * H[i][j] != 0 only when j is i or an ancestor of i in the dof parent array
 * lambda (lambda[i] < i, -1 at a root; RBDA 2008, ch. 6). The routines read
 * and write only those entries of the lower triangle (H[i][j], j <= i); the
 * other entries are neither read nor written.
 * mb_ltdl_factor: H = L^T D L in place (L unit lower triangular in the
 * strict lower pattern, D on the diagonal); mb_ltl_factor: H = L^T L (L
 * lower triangular, diagonal included). Both return 0, or k + 1 when the
 * pivot of dof k is not positive (H not positive definite).
 * mb_ltdl_solve / mb_ltl_solve: x <- H^-1 x with the factor. */
int mb_ltdl_factor(double *H, const int *lambda, int n);
int mb_ltl_factor(double *H, const int *lambda, int n);
void mb_ltdl_solve(const double *LD, const int *lambda, int n, double *x);
void mb_ltl_solve(const double *L, const int *lambda, int n, double *x);
/* copy the lower triangle of H to its upper mirror (H[j][i] = H[i][j]) when
 * H is zero outside the pattern; nnz: the pattern's entries in the lower
 * triangle, diagonal included (decides between a walk and a tiled copy) */
void mb_sparse_mirror(double *H, const int *lambda, int n, long nnz);

/* x = M(q)^-1 b in O(N); returns as mb_aba */
int mb_minv(const mb_model *m, mb_data *d, const double *q, const double *b, double *x);
/* generalized momentum p = M(q) qd in O(N) */
void mb_momentum(const mb_model *m, mb_data *d, const double *q, const double *qd, double *p);
/* canonical sweep: from (q, p, tau) give qd (nv), dq/dt (nq) and dp/dt (nv) */
int mb_sweep(const mb_model *m, mb_data *d, const double *q, const double *p, const double *tau,
             const double *fext, double *qd, double *qdot, double *pdot);

/* configuration rate dq/dt (nq) from velocity qd (nv) */
void mb_qdot(const mb_model *m, const double *q, const double *qd, double *qdot);
/* q <- q (+) qd dt on the configuration manifold (exact quaternion exponential) */
void mb_integrate(const mb_model *m, double *q, const double *qd, double dt);
/* renormalize quaternions in place */
void mb_normalize(const mb_model *m, double *q);
/* renormalize the quaternion, if any, of the joint of body i whose
 * coordinates start at qi (any layout of q) */
void mb_normalize_joint(const mb_model *m, int i, double *qi);

/* passive forces: the joint drives first (drives.h: they read their
 * commands from tau and replace them by their torques), then joint
 * springs/dampers/limits into tau (added), spring-damper, contact and cable
 * forces into fext (added, body frame). Needs mb_kinematics(q, qd) first. */
void mb_passive_forces(const mb_model *m, mb_data *d, const double *q, const double *qd, double *tau, double *fext);
/* elastic energy (J) of the force elements at q: joint springs and range
 * limits, point-to-point springs, contacts, cables (runs mb_kinematics(q)) */
double mb_passive_energy(const mb_model *m, mb_data *d, const double *q);
/* the same with the world poses of mb_kinematics(q) already in place */
double mb_passive_energy_posed(const mb_model *m, mb_data *d, const double *q);
/* world position x (m) of the point r_B (body frame, m) of body b after mb_kinematics */
void mb_point_position(const mb_model *m, const mb_data *d, int b, const double *r_B, double *x);
/* world-frame classical acceleration (m/s^2) of the point r_B (body frame, m)
 * of body b from the body velocities v and accelerations a of the last
 * mb_rnea call (with_gravity = 0: the inertial acceleration; 1: minus gravity) */
void mb_point_acceleration(const mb_model *m, const mb_data *d, int b, const double *r_B, double *acc);
/* Force element readouts (need mb_kinematics(q, qd) first).
 * mb_contact_force: world force F (3, N) of contact k on its body, applied at
 * the point rB (3, body frame, m: the sphere's deepest point along -normal);
 * returns the penetration (m, negative when apart; F = 0 then).
 * mb_cable_force: world force F (3, N) of cable k on its body point and the
 * length L (m); returns the tension (N, >= 0). */
double mb_contact_force(const mb_model *m, const mb_data *d, int k, double *F, double *rB);
double mb_cable_force(const mb_model *m, const mb_data *d, int k, double *F, double *L);
/* whole right-hand side with passive forces: dq/dt (nq), dv/dt (nv) */
int mb_rhs(const mb_model *m, mb_data *d, const double *q, const double *qd, const double *tau,
           const double *fext, double *qdot, double *qdd);
/* A first-order system x = [q; y] (y = v or p, or public coordinates of a
 * flexible system) for the shared fixed-step loop: the right-hand side f
 * (returns 0 or a nonzero error code that stops the loop), the
 * renormalization of the quaternions in q, the sizes and a scratch of
 * 8 (nq + ny) doubles, of which f may use the last ny. */
typedef int (*mb_ode_rhs)(void *ctx, const double *q, const double *y, const double *tau,
                          const double *fext, double *qdot, double *ydot);
typedef struct {
    void *ctx;
    mb_ode_rhs f;
    void (*normalize)(void *ctx, double *q);
    int nq, ny;
    double *work;
    /* optional: mb_adapt_advance stores the time of each stage (s from the
     * start of the interval) here before calling f (time-dependent f) */
    double *t_stage;
} mb_ode;

/* n classical RK4 steps of size h (s) on x = [q; y] with tau and fext held;
 * quaternions renormalized after each step. Returns 0 or f's error code. */
int mb_rk4_steps(const mb_ode *ode, double *q, double *y, const double *tau, const double *fext,
                 double h, int n);

/* n classical RK4 steps of size h on x = [q; v]; quaternions renormalized
 * after each step. Returns 0 or the mb_aba error code. */
int mb_rk4(const mb_model *m, mb_data *d, double *q, double *qd, const double *tau, const double *fext,
           double h, int n);

/* n classical RK4 steps of size h in canonical variables x = [q; p], with the
 * model's force elements; quaternions renormalized after each step. */
int mb_rk4_canonical(const mb_model *m, mb_data *d, double *q, double *p, const double *tau, const double *fext,
                     double h, int n);

#endif
