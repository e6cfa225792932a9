/*
 * The controller evaluator: one C implementation of the controllers mbfmu
 * exports (native controller FMUs, mbfmu.fmu.native.controller) and that a
 * compiled co-simulation loop can run in place of the Python unit
 * (mbfmu.cosim.units.ControlUnit). It computes what ControlUnit computes, in
 * the same order of operations (C99, no fused multiply-add).
 *
 * Kinds
 * -----
 * MBC_LTI  x[k+1] = Ad x[k] + Bd u[k],  y = g (C x + D u)
 *          Discrete (dt > 0): Ad = A, Bd = B; a step of n dt (n >= 1 whole,
 *          relative 1e-12) runs n samples with the inputs held, as the
 *          co-simulation master steps a unit whose own step divides the
 *          macro step; any other step is refused (MBC_E_STEP). Continuous (dt == 0): zero-order hold over the
 *          step h, [Ad Bd; 0 I] = expm([A B; 0 0] h), recomputed when h
 *          changes; at h0 the build-time matrices Ad0, Bd0 are used (those of
 *          control.c2d, so the FMU equals ControlUnit bit for bit there),
 *          at any other step mbc_expm computes them. Parameters p = {g}
 *          (an output gain, 1 by default: a scaled K).
 * MBC_PID  mbfmu.control.discrete_pid.pid: inputs {r, y}, output {u},
 *          states {I, D, s_prev}; parameters p = {Kp, Ki, Kd, Tf, Tt, u_min,
 *          u_max}; desc.on_error 1: derivative on the error, 0: on -y;
 *          always discrete at dt. Tt >= DBL_MAX (or inf): no anti-windup.
 * MBC_SCHED mbfmu.control.scheduling.scheduled_controller: no state,
 *          y = u_ref - g K(s) (u[0..nk) - x_ref), K(s) the gains (ng, ny, nk)
 *          interpolated linearly at s = u[sidx] (s = 0 when sidx < 0),
 *          element by element, clamped at the grid's ends (one grid point:
 *          K itself); always discrete at dt. Parameters p = {g} (a scaled
 *          K, 1 by default).
 * MBC_BLOCK a static block of mbfmu.cosim.blocks (no state, no parameter):
 *          op MBC_B_GAIN y = k u (element-wise), MBC_B_MATRIX y = K u (K:
 *          ny x nu), MBC_B_OFFSET y = u + k, MBC_B_SAT y = clip(u, k, k2)
 *          (NaN stays NaN), MBC_B_SUM y = sum_g k[g] u[g ny ..] (Sum),
 *          MBC_B_COPY y = u (Mux, Demux).
 * MBC_TAPE a traced python-control NonlinearIOSystem (mbfmu.control.traced):
 *          discrete at dt, x[k+1] = f(x, u), y = g(x, u), the values of
 *          nodes tout[0..nx) and tout[nx..nx+ny) of the expression tape
 *          (tape.h) whose leaves are (t = 0, x, u). A guard the inputs and
 *          state break (a comparison that took the other branch when
 *          traced) gives NaN outputs, refuses the step (MBC_E_GUARD) and
 *          leaves its index in c->guard.
 * MBC_NET  an interconnection of nsub controllers and blocks (sub[], in
 *          evaluation order: each one's direct-feedthrough inputs come
 *          from the net's inputs or from earlier units). The sub-units'
 *          inputs, concatenated, come from src[]: -1 the constant su0[],
 *          j < nu the net's input j, nu + o the o-th of the sub-units'
 *          outputs (concatenated); the net's outputs from out[] (same
 *          numbering). Its states and parameters are the sub-units', in
 *          order. Outputs: each sub-unit's, in order. A step of h: the
 *          outputs, then every sub-unit steps h with its inputs held (as
 *          the co-simulation master holds each unit's inputs over a macro
 *          step); a step that is not a whole number of some discrete
 *          sub-unit's samples is refused before any steps.
 *
 * Matrices are row-major doubles. Nothing here allocates except
 * mbc_new; nothing logs: functions return 0 or an MBC_E_* code.
 *
 * Use
 * ---
 *     mbc_ctrl *c = mbc_new(&desc);            NULL: out of memory
 *     mbc_reset(c, x0);                        x0 NULL: desc's x0
 *     c->u[j] = ...;  mbc_outputs(c);  ... c->y[i]
 *     if (mbc_step(c, h)) ...                  advance one step, inputs held
 *     mbc_free(c);
 * Parameters are c->p (np values); mbc_check_parameters says whether a set
 * of them is acceptable before it is copied in.
 */
#ifndef MBFMU_CONTROLLER_H
#define MBFMU_CONTROLLER_H

#include <stddef.h>

#include "tape.h"

enum { MBC_LTI = 1, MBC_PID = 2, MBC_SCHED = 3, MBC_BLOCK = 4, MBC_NET = 5, MBC_TAPE = 6 };
enum { MBC_B_GAIN, MBC_B_MATRIX, MBC_B_OFFSET, MBC_B_SAT, MBC_B_SUM, MBC_B_COPY };
enum {
    MBC_E_STEP = 1,     /* a discrete controller's step is not a whole number of samples */
    MBC_E_EXPM = 2,     /* the matrix exponential of a continuous one is not finite */
    MBC_E_NOMEM = 3,
    MBC_E_STATE = 4,    /* a new state is not finite (the state is that of the last finite sample) */
    MBC_E_GUARD = 5     /* a traced system's inputs and state leave the branch it was traced on */
};

typedef struct mbc_desc {
    int kind;                     /* MBC_LTI, MBC_PID, MBC_SCHED, MBC_BLOCK or MBC_NET */
    int nx, nu, ny, np;
    double dt;                    /* sample time (s) > 0, or 0: continuous (LTI only) */
    const double *A, *B, *C, *D;  /* LTI: (nx,nx), (nx,nu), (ny,nx), (ny,nu) */
    double h0;                    /* continuous LTI: the step (s) of Ad0, Bd0 (0: none) */
    const double *Ad0, *Bd0;
    const double *x0;             /* (nx) initial state */
    const double *p0;             /* (np) default parameters */
    int on_error;                 /* PID: the derivative acts on the error (1) or on -y (0) */
    int ng, nk, sidx;             /* SCHED: grid points, measured inputs, the scheduling input (-1: none) */
    const double *grid;           /* SCHED: (ng) increasing */
    const double *K;              /* SCHED: (ng, ny, nk) the gains at the grid points */
    const double *xr, *ur;        /* SCHED: (nk) x_ref, (ny) u_ref */
    int op;                       /* BLOCK: MBC_B_* */
    const double *k, *k2;         /* BLOCK: gains, offsets, limits or signs */
    int nsub;                     /* NET: sub-units */
    const struct mbc_desc *const *sub;
    const int *src;               /* NET: (sum of the sub-units' nu) where each input comes from */
    const double *su0;            /* NET: (same) the constant of an input whose src is -1 */
    const int *out;               /* NET: (ny) where each output comes from */
    const mbn_tape *tape;         /* TAPE: the expression tape */
    const int *tout;              /* TAPE: (nx + ny) the nodes of the next state and the outputs */
} mbc_desc;

typedef struct mbc_ctrl {
    const mbc_desc *d;
    double *x, *u, *y, *p;        /* (nx), (nu), (ny), (np) */
    double *Ad, *Bd;              /* LTI: the matrices of step h */
    double h;                     /* the step (s) Ad, Bd belong to (0: none yet) */
    double *xn;                   /* (nx) scratch */
    double *work;                 /* continuous LTI: the exponential's scratch */
    void *mem;                    /* the allocation x, u, y, p ... live in */
    struct mbc_ctrl **sub;        /* NET: the sub-units (their x and p point into x and p) */
    const double **in, **out;     /* NET: where each sub-unit input and each output is read */
    double *leaf, *node;          /* TAPE: (1 + nx + nu) the tape's leaves, (nn) its values */
    int guard;                    /* TAPE: the guard the last evaluation broke, or -1 */
} mbc_ctrl;

mbc_ctrl *mbc_new(const mbc_desc *d);
void mbc_free(mbc_ctrl *c);
/* state to x0 (desc's when NULL); parameters and inputs are kept */
void mbc_reset(mbc_ctrl *c, const double *x0);
/* 0 if the parameters p (np) are acceptable, else 1 + the index of the first
 * that is not, with why set to a short reason */
int mbc_check_parameters(const mbc_desc *d, const double *p, const char **why);
/* the outputs c->y of the current state, inputs and parameters */
void mbc_outputs(mbc_ctrl *c);
/* advance one step of h (s) with the inputs held: 0 or MBC_E_* */
int mbc_step(mbc_ctrl *c, double h);
/* y = the block op of u (nu inputs, ny outputs; see MBC_BLOCK) */
void mbc_block(int op, int nu, int ny, const double *k, const double *k2, const double *u, double *y);
/* e = expm(a) of the n x n matrix a (row-major): Higham's scaling and
 * squaring with the degree-13 Pade approximant (SIAM J. Matrix Anal. Appl.
 * 26(4), 2005). work: mbc_expm_work(n) doubles. 0, or
 * MBC_E_EXPM if the result is not finite or the Pade denominator singular */
int mbc_expm(int n, const double *a, double *e, double *work);
/* doubles of scratch mbc_expm needs for an n x n matrix */
size_t mbc_expm_work(int n);

#endif
