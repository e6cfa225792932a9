/*
 * The native FMU runtime: one plant's packed data (generated at build time
 * into model_data.c by mbfmu.fmu.native.pack) and the instance that runs it.
 *
 * The numeric description of the plant is one vector d (nd doubles): the
 * model arrays of mb_model, body masses and centres of mass, the initial
 * configuration q0 and velocities v0, the input matrix B (nv x nu,
 * row-major), the integrator's internal step and the sensor parameters, at
 * the offsets o_*. The parameters move d through the plant's expression
 * tape (tape.h; recorded from the plant's own build and verified at build
 * time), or, for a plant whose build cannot be recorded, affinely:
 *     d = d0 + sum over entries e with aff_p[e] == j of aff_c[e] (p_j - p0_j) at d[aff_i[e]]
 * (verified at build time); the model is then rebuilt from d. Value
 * references (FMI 2): inputs, parameters, outputs, states, derivatives of
 * the continuous states (0-based, in this order).
 */
#ifndef MBFMU_NATIVE_H
#define MBFMU_NATIVE_H

#include <stddef.h>

#include "mb.h"
#include "drives.h"
#include "sensors.h"
#include "adaptive.h"
#include "flexible.h"
#include "tape.h"
#include "element.h"

/* a flexible plant's tables (flex_runtime.c): the state is the public
 * [q; v] of an mb_flex around the virtual tree that mbn_data describes */
typedef struct {
    int nbeam;
    const int *role, *beam, *pq, *pv, *goff, *hoff; /* (nb) csrc/flexible.h */
    const int *bbody, *bq, *bv, *bnm, *kdoff;       /* (nbeam) */
    int ng, nh, nkd;                                /* sizes of the tables in d */
    int o_gtab, o_htab, o_kd;                       /* their offsets in d */
} mbn_flex_data;

typedef struct {
    const char *plant;      /* plant name, for messages */
    const char *guid;
    int nb, nq, nv, nu, np, ny, nx, ns, nct, ncb;
    int ndr;                /* joint drives (drives.h): their rows at o_drives */
    int canonical;          /* state [q; p] with momenta p = M(q) v */
    const int *parent, *jtype, *nqi, *nvi; /* (nb) */
    int nd;
    const double *d0;       /* (nd) at the build-time parameters */
    int o_axis1, o_axis2, o_Rtree, o_ptree, o_Ibody, o_g, o_dof, o_springs, o_contacts, o_cables, o_drives;
    int o_mass, o_com, o_Ic, o_q0, o_v0, o_B, o_step;
    int o_adapt;            /* 7: rtol, atol, h_init, h_max, h_min, max_steps, method (ErrorControl.options) */
    int o_elements;         /* the plug-in elements' [rB; par] blocks (element.h: each at its o_par) */
    const int *sens;        /* (ny, 4): kind, index, axis, offset of its parameters in d (-1 none) */
    const double *p0;       /* (np) build-time parameter values */
    const double *u0;       /* (nu) start values of the inputs */
    const char *const *p_fixed; /* (np) NULL if re-packable, else why the runtime cannot */
    int naff;
    const int *aff_p, *aff_i;
    const double *aff_c;
    const char *const *names;   /* (nu + np + ny + nx) variable names by value reference */
    const char *const *units;   /* same, "" for dimensionless */
    const double *lo, *hi;      /* (nu + np + ny + nx) bounds by value reference, +-HUGE_VAL where unbounded */
    const int *open;            /* (nu + np + ny + nx) 1: the plant refuses the value lo itself, 2: hi itself, 3: both */
    const int *p_integer;       /* (np) 1: a count, declared Integer (fmi2GetInteger) */
    const mbn_flex_data *flex;  /* NULL: a rigid plant; else nq, nv are the public sizes */
    const mbn_tape *tape;       /* NULL, or d as a function of p (tape.h): its out entries replace d0's */
    /* the plant's internal-step rule (steplimit.c): internal_step = min(step_cap, step_k / rho), rho the
     * spectral radius at rest, applied when parameters are set; step_cap 0: none */
    double step_cap, step_k;
    /* Model Exchange (model_exchange.h): continuous states x[0..nxc), event
     * indicators (nz rows of 4 ints: kind, index, configuration index, side) */
    int nxc, nz;
    const int *ztab;
    /* the FMI version of the FMU (2 or 3), and FMI 3's value references:
     * nv3 rows of 3 ints (kind, first scalar index, count), fmi3.c */
    int fmi, nv3;
    const int *v3tab;
    /* the plug-in elements the plant registers (element.h; rigid plants in velocity variables) */
    int nel;
    const mbn_element *elements;
} mbn_data;

extern const mbn_data MBN_DATA;

/* one running instance (the FMI component) */
typedef struct {
    const mbn_data *data;
    mb_model *m;          /* the plant's model, packed by mb_pack (dynamics/csrc/pack.c) */
    mb_data *ws;          /* its workspace (the kernels' data) */
    mb_flex *fx;          /* data->flex: the flexible system around m (with a workspace of its own) */
    mb_sensor *sens;      /* (ny) pointing into d */
    mb_mass_props mp;
    double *d;            /* (nd) current numeric description */
    double *p, *u, *x;    /* (np), (nu), (nx) */
    double *y, *v, *tau;  /* (ny) cached outputs, (nv) velocities, (nv) generalized forces */
    double *xw;           /* (nx) scratch state */
    double *efext;        /* (nb, 6) the plug-in elements' forces (element.h) */
    mbn_element *el;      /* (data->nel) the registry with par pointing into d */
    double t;
    int stepped;          /* a step was taken (parameters then keep the state) */
    double tolerance;     /* fmi2SetupExperiment's (rtol = atol), 0: the plant's own */
    int adapt_status;     /* mb_adapt status of the last failed integration (MBN_ADAPT) */
    mb_adapt_stats adapt_stats;
    int y_valid;
    double rho_refused;   /* the spectral radius (1/s) of the last parameters refused by the step rule */
    unsigned long pgen;   /* bumped whenever mbn_set_parameters replaces d, m and fx */
    void *flexdd;         /* flex_dirder.c's cache of a flexible plant's seed-free pieces (NULL: none yet) */
} mbn_instance;

/* life cycle: NULL on allocation failure */
mbn_instance *mbn_new(const mbn_data *data);
void mbn_free(mbn_instance *in);
/* re-pack the model for parameters p (np); unless stepped, reset x to the
 * initial state. Returns 0, or -1 - j if parameter j cannot be re-packed
 * (data->p_fixed[j]), -2000 - i if body i would not be physical (negative
 * mass, inertia not positive semi-definite or breaking the triangle
 * inequality), -3000 - g if the parameters break the plant's condition g
 * (data->tape->g_text[g]), -4000 if the spectral radius of the plant's step rule cannot be computed
 * (in->rho_refused), -5000 if a plug-in element's sampling period would not be positive and finite
 * (element.h), or -1000 if the model cannot be made. */
int mbn_set_parameters(mbn_instance *in, const double *p);
/* advance by dt (s) with inputs held: returns 0, or the failing body (> 0,
 * singular articulated inertia), MBN_NOMEM, MBN_ADAPT, or -1 - k with state k
 * non-finite (the state is then unchanged in every failure) */
#define MBN_NOMEM 0x7fffffff
#define MBN_ADAPT 0x7ffffffe /* the integrator could not meet the tolerance: in->adapt_status, adapt_stats */
int mbn_advance(mbn_instance *in, double dt);
/* in->tau = B u of the current inputs */
void mbn_generalized_forces(mbn_instance *in);
/* the slopes dx (nx) at time t (s) and state x (nx) of the integration
 * mbn_advance runs, inputs held (call mbn_generalized_forces first);
 * returns 0 or the kernel's error code */
int mbn_rhs(mbn_instance *in, double t, const double *x, double *dx);
/* outputs at the current time, state and inputs */
const double *mbn_outputs(mbn_instance *in);

/* flex_runtime.c: the mb_flex of the virtual tree m described by d (NULL on
 * allocation failure), and the outputs of a flexible plant into in->y */
mb_flex *mbn_flex_new(const mbn_data *D, mb_model *m, const double *d);
void mbn_flex_outputs(mbn_instance *in);
/* steplimit.c: the spectral radius (1/s) of the flexible system fx linearized at rest at the public
 * configuration q0; 0, or -1 if it cannot be computed */
int mbn_flex_rest_radius(const mbn_data *D, mb_flex *fx, const double *q0, double *radius);
/* 1 if the flexible right-hand side's error err (mb_flex_rhs, FX_NONFINITE)
 * in a step from in->x comes from a state the step reached (the equations
 * hold at in->x: the state blew up, as advance_flexible says), a stage that
 * was not finite, or a singular modal mass; 0 if a joint's articulated
 * inertia is singular at in->x itself */
int mbn_flex_blown_up(mbn_instance *in, int err);

/* dirder.c: exact directional derivatives (component.h's mbn_directional).
 * sens[k] = sum_j d unknown iu[k] / d known ik[j] seed[j], knowns indexed
 * into [x (nx); u (nu)], unknowns into [dx/dt (nx); y (ny)], at the current
 * state and inputs (in->tau = B u set). Returns 0, MBN_NOMEM, MBN_DD_SINGULAR
 * or the body whose articulated inertia is singular. mbn_dirder_inexact: NULL
 * when the plant's derivatives are exact here, else why not. */
#define MBN_DD_INEXACT 1
#define MBN_DD_SINGULAR 0x7ffffffd
int mbn_directional_derivative(mbn_instance *in, size_t nknown, const int *ik, const double *seed, size_t nunknown,
                               const int *iu, double *sens);
const char *mbn_dirder_inexact(mbn_instance *in);
/* flex_dirder.c: free in->flexdd (mbn_free) */
void mbn_flex_dirder_free(mbn_instance *in);

/* the saved FMU state: bytes of a flat record (see runtime.c) */
size_t mbn_state_size(const mbn_instance *in);
void mbn_state_write(const mbn_instance *in, unsigned char *buf);
/* restore from buf (size bytes); 0 on success, else a negative code and the
 * instance is unchanged; why receives a message */
int mbn_state_read(mbn_instance *in, const unsigned char *buf, size_t size, const char **why);

#endif
