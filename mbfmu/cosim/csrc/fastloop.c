/* Fixed-step Jacobi and Gauss-Seidel co-simulation loops over FMI 2.0 and
 * FMI 3.0 co-simulation FMUs, in C.
 *
 * The same semantics as mbfmu.cosim.master's Python loop (counted time,
 * exchange after every step in the precomputed order, Jacobi input
 * extrapolation of order 0, 1 or 2 and multi-rate sub-steps, outputs
 * recorded into a preallocated row buffer), calling the FMUs' own
 * getters, setters and doStep through the function pointers fmpy loaded.
 * Values travel as doubles in the master's unit buffers u and y and are
 * converted per type exactly as the Python units convert them (fmu_unit.py,
 * fmu3_unit.py). String values travel as the codes of their interned texts
 * (mbfmu.cosim.typed): each String slot keeps its last text and code, so Python
 * is called (to intern a text, or to give the text of a code) only when a
 * value changes. Optionally paces the run to the wall clock and steps the units
 * of a Jacobi step in parallel threads.
 *
 * Loaded with ctypes (mbfmu/cosim/fast_loop.py); the Python module entry
 * point below only lets setuptools build it as an extension. Compiled with
 * -ffp-contract=off: time points and extrapolated inputs must be the
 * bit-exact doubles the Python loop computes. */
#define _POSIX_C_SOURCE 200809L
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmi2FunctionTypes.h"
#include "fmi3FunctionTypes.h"
#include "controller.h"

/* value types of a group (a buffer exchanged in one call) */
enum {
    T_F64, T_F32, T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_I64, T_U64, T_BOOL3, /* FMI 3 (T_F64: also fmi2Real) */
    T_INT2, T_BOOL2,                                                             /* fmi2Integer, fmi2Boolean */
    T_BOOL2N,                  /* fmi2Boolean read as 0 or 1 (as fmpy's getBoolean: the recording getters) */
    T_STR                      /* fmi2String / fmi3String */
};

/* the last value of a String slot: its text and code */
typedef struct {
    char *text;                /* read slots: a copy owned here; set slots: Python's buffer of the code's text */
    size_t cap;
    double code;
    int valid;
} fl_str;

/* what failed (fl_failure.call) */
enum { C_STEP, C_SET, C_GET, C_RANGE, C_STOP, C_PY, C_DERIV, C_RGET, C_NAN, C_LOOP, C_UNIT, C_SE, C_EV, C_ME };
/* what failed in a Scheduled Execution unit (fl_failure.index of a C_SE failure) */
enum { SE_ACTIVATE, SE_INTERVAL, SE_GET_CLOCK, SE_OFF_GRID, SE_COUNTDOWN_GRID, SE_COUNTDOWN_BACK, SE_NO_MEMORY };
/* what failed in a co-simulation unit with event mode (fl_failure.index of a C_EV failure) */
enum { EV_ENTER_EVENT, EV_SET_CLOCK, EV_GET_CLOCK, EV_UPDATE, EV_SETTLE, EV_ENTER_STEP, EV_NO_PROGRESS };

/* what a unit is: an FMU, a controller stepped by controller.c (a python-control
 * LTI system or discrete PID of mbfmu.cosim.units.ControlUnit), or a static block
 * of mbfmu.cosim.blocks evaluated here */
enum { U_FMU, U_CTRL, U_BLOCK, U_PY };  /* U_PY: a Python unit called back (pull, do_step) */
/* the blocks: controller.c's MBC_B_* operations (mbc_block), the ones a native
 * controller FMU of an interconnection evaluates */

/* a controller unit: controller.c's state, its inputs, outputs and state in the
 * Python unit's own buffers */
typedef struct {
    mbc_ctrl *c;
    double *block;             /* mbc_new's allocation (c->x pointed there) */
} fl_ctrl;

typedef struct {
    int type;
    int fmi3;                  /* FMI 3 signature (with nValues) */
    void *fn;                  /* the fmi2/fmi3 Set or Get function of the type */
    const unsigned int *vr;
    int n_vr;
    void *buf;                 /* the unit's own ctypes buffer of the group */
    int n_values;              /* elements in buf (FMI 3 arrays) */
    int n_slots;
    const int *slots;          /* (position in buf, index in u or y) */
    fl_str *str;               /* String groups: one per slot, allocated at first use (fl_release frees) */
} fl_group;

/* a countdown tick the FMU scheduled: at communication point k, clock c (index), time t */
typedef struct {
    long long k;
    int c;
    double t;
} fl_tick;

/* an activation due in a round: ordered by (priority, rank, t) as fmu3_scheduled's heap */
typedef struct {
    double priority;
    int c;                     /* clock index: its rank (declaration order) */
    double t;
} fl_due;

/* An FMI 3.0 Scheduled Execution unit's clocks and tick schedule: the state of
 * mbfmu.cosim.fmi.fmu3_scheduled.Fmu3ScheduledUnit, stepped here as its do_step,
 * push, pull and _activate step it (the same calls in the same order). Clocks are
 * indexed in declaration order (their rank). */
typedef struct {
    int n_clocks;
    const unsigned int *vr;    /* per clock */
    const double *priority;    /* per clock; inf: none declared */
    int n_periodic;            /* periodic input clocks (clocks.PeriodicTicks) */
    const int *per_clock;      /* clock index */
    const long long *per_every, *per_first;  /* interval and shift in master steps */
    const double *per_base;    /* t0 + shift [s] */
    const double *per_interval;
    int n_trig;                /* triggered input clocks driven by a connection: (input index, clock index) */
    const int *trig;
    int n_cd;                  /* countdown input clocks */
    const int *cd_clock;       /* clock index */
    const unsigned int *cd_vr;
    double *cd_interval;       /* [n_cd] scratch */
    int *cd_qualifier;         /* [n_cd] scratch */
    int n_oclk;                /* output clocks: (output index) and value reference */
    const int *oclk_j;
    const unsigned int *oclk_vr;
    bool *oclk_val;            /* [n_oclk] scratch */
    void *activate, *get_interval, *get_clock;  /* fmi3ActivateModelPartition, fmi3GetIntervalDecimal, fmi3GetClock */
    volatile int *clock_updated;  /* set by the unit's clock-update callback */
    double grid_tol;           /* clocks.GRID_TOLERANCE */
    int driven;                /* connected inputs: activates at push, else at pull */
    double t0, H;              /* the run's start and the unit's step at set-up [s] */
    /* state, in and out */
    long long k;               /* communication point of the unit's time, counted from t0 */
    double t_now;
    int pending;               /* the partitions due at k have not run yet */
    fl_tick *sched;            /* countdown ticks scheduled, in the order set (C owns; fl_release frees) */
    int n_sched, cap_sched;
    long long *count;          /* per clock: activations in this run, */
    double *last;              /* the time of the last, */
    long long *first;          /* the activation number of the first (-1: none) */
    long long n_act;           /* activations made here */
    int ring_cap;              /* the latest activations: clock index and time, ring_cap kept */
    int *ring_c;
    double *ring_t;
    fl_due *due;               /* scratch (C owns) */
    int cap_due;
} fl_se;

/* An FMI 3.0 co-simulation unit with event mode: the state of
 * mbfmu.cosim.fmi.fmu3_events.Fmu3EventUnit, stepped here as its do_step, push and
 * _event step it (the same calls in the same order). */
typedef struct {
    int n_trig;                /* triggered input clocks driven by a connection: (input index) and value reference */
    const int *trig_j;
    const unsigned int *trig_vr;
    unsigned int *kick_vr;     /* [n_trig] scratch */
    bool *kick_val;            /* [n_trig], all true */
    int n_oclk;                /* output clocks: (output index) and value reference */
    const int *oclk_j;
    const unsigned int *oclk_vr;
    bool *oclk_val;            /* [n_oclk] scratch */
    void *enter_event, *enter_step, *update, *set_clock, *get_clock;
    int max_iterations;        /* fmu3_events.EVENT_ITERATIONS */
    /* state, in and out */
    double time;               /* the unit's time [s] */
    int pending, first;        /* a step ended / the first exchange: the input clocks may tick */
    long long n_ev;            /* events recorded here */
    int ring_cap;              /* the latest events: time and the output clocks that ticked (n_oclk each) */
    double *ring_t;
    unsigned char *ring_clk;
} fl_ev;

typedef struct {
    int fmi3;
    void *component;
    void *do_step;
    int no_prior;              /* noSetFMUStatePriorToCurrentPoint */
    int n_push;
    fl_group *push;            /* connected inputs, per type */
    int n_pull;
    fl_group *pull;            /* all outputs, per type */
    double *u;                 /* the unit's input buffer (inputs order) */
    double *y;                 /* the unit's output buffer */
    int n_in_conn;             /* incoming connections: (dst index in u, source unit, source index in y) */
    const int *in_conn;
    int sub;                   /* sub-steps per macro step (multi-rate) */
    int n_x;                   /* incoming connections as indices into the system's list (extrapolation) */
    const int *x_conn;
    int interpolate;           /* canInterpolateInputs: point values (and FMI 2 derivatives) */
    int max_order;             /* FMI 2 input derivative order sent; 2 -> 1 when the FMU refuses 2 */
    void *set_derivs;          /* fmi2SetRealInputDerivatives */
    int n_der;                 /* connected Real inputs: value references, positions in u */
    const unsigned int *der_vr;
    const int *der_idx;
    const int *order1, *order2;
    double *der_buf;
    double *d1, *d2;           /* scratch, one per input */
    int refused_order2;        /* out: the FMU refused order 2 in this call */
    int stop_requested;        /* FMI 3 terminateSimulation seen; the next doStep ends the run */
    double stop_at;
    const int *conv_on;        /* per input: sent as conv[2j] u + conv[2j+1] (a unit conversion); NULL: none */
    const double *conv;
    int n_rget;                /* recorded variables read from the FMU (not from y), per type */
    fl_group *rget;            /* slots: (position in buf, recorded column after time) */
    int kind;                  /* U_FMU, U_CTRL or U_BLOCK */
    fl_ctrl *ctrl;             /* U_CTRL */
    int n_zoh;                 /* U_CTRL continuous: the step sizes of the run with their */
    const double *zoh_h;       /* matrices, as ControlUnit discretizes them (Ad: nx x nx, */
    const double *zoh_A;       /* Bd: nx x nu each) */
    const double *zoh_B;
    int op, n_u, n_y;          /* U_BLOCK: B_*, input and output widths */
    const double *k, *k2;      /* U_BLOCK: gains, offsets, lower and upper limits, signs */
    fl_se *se;                 /* U_FMU of FMI 3.0 Scheduled Execution: its clocks (NULL: none) */
    fl_ev *ev;                 /* U_FMU of FMI 3.0 co-simulation with event mode (NULL: none) */
    void *me;                  /* U_FMU of Model Exchange: its solver's context (NULL: none) */
    int (*me_step)(void *me, double t, double h); /* its step: me_do_step (csrc/me_step.c) */
    int py_push;               /* U_PY whose push must run (an isolated unit): calls 3 and 4 */
} fl_unit;

typedef struct {
    int unit, call, status, step, group, index;
    double t, h, value;
} fl_failure;

/* an algebraic loop of the exchange (mbfmu.cosim.master.loops), with its scratch */
typedef struct {
    int n_block;
    const int *block;          /* its units, in order */
    int n;
    const int *conns;          /* (unit, input index, source unit, output index) per loop connection */
    double *z, *F, *g, *zp, *J; /* [n], [n], [n], [n], [n * n] (column i: J[i * n ..]) */
    int *piv;                  /* [n] */
} fl_loop;

/* call 0: pull, 1: do_step, 2: do_step of a controller from the state C holds, 3: push (the
 * input buffer sent), 4: push_derivatives (of the unit's d1, d2); returns 1 when it failed */
typedef int (*py_unit_t)(int unit, int call, double t, double h);
typedef double (*py_code_t)(const char *text);       /* the code of a text (< 0: failed) */
typedef const char *(*py_text_t)(double code);        /* the text of a code (NULL: failed) */

/* Shared with the run's watchdog thread, which reads it while this loop may be
 * stuck inside an FMU call: stop is set by it (checked before every step),
 * reached counts the rows written, unit is the unit of the latest call, and
 * in_call[i] is 1 while unit i is inside a call (with threads, several units are
 * stepped at once: the unit of the latest call need not be the one stuck). */
typedef struct {
    volatile int *stop;
    volatile int reached;
    volatile int unit;
    volatile int *in_call;
} fl_control;

typedef struct {
    fl_unit *units;
    int n_units;
    const int *pre_pull;       /* units whose outputs are read first in an exchange */
    int n_pre;
    const int *plan;           /* (unit, read outputs again) per exchange entry, in order; unit -1 - i: loop i */
    int n_plan;
    fl_loop *loops;
    double loop_tol;           /* Options.loop_tolerance */
    int loop_max_iterations;
    int newton_iterations;     /* loops.NEWTON_ITERATIONS */
    long long loop_iterations; /* out: iterations of the loops solved in C */
    int gauss_seidel;
    int gs_exchange;           /* Gauss-Seidel with algebraic loops: the exchange after the sweep too */
    const int *order;          /* the Gauss-Seidel stepping order */
    const int *rec;            /* (unit, output index) per recorded column after time; unit -1: read by rget */
    int n_rec;
    int n_chk;                 /* connected outputs not recorded, checked for non-finite values */
    const int *chk;            /* (unit, output index) */
    double *rows;              /* n_steps rows of 1 + n_rec doubles; step k writes row k */
    /* input extrapolation (Jacobi) */
    int extrapolation;         /* order 0, 1 or 2 */
    int n_conn;
    const int *conns;          /* (dst unit, dst index, src unit, src index, held) per connection */
    int n_hist;                /* exchanged values kept (newest first), at most 3 */
    double *hist_t;            /* [3] */
    double *hist_y;            /* [3 * n_conn] */
    double *c0, *c1, *c2;      /* [n_conn] the step's coefficients */
    int startup;               /* step 0 takes the coefficients given in c0..c2 */
    py_code_t py_code;
    py_text_t py_text;
    /* real time */
    double realtime;           /* simulated seconds per wall-clock second; 0: as fast as possible */
    double wall0;              /* CLOCK_MONOTONIC [s] at which t0 was */
    double t_start;            /* t0 of the run */
    long long overruns;        /* in/out: steps that ended after their wall-clock deadline */
    double worst_lag;          /* in/out: largest lag behind it [s] */
    /* parallel Jacobi stepping */
    int threads;
    fl_failure *unit_fail;     /* [n_units] scratch */
    fl_failure fail;           /* out; unit -1: none (stopped on request) */
    fl_control *ctl;
    double **rec_ptr;          /* per recorded column whose rec unit is -2: the double it reads
                                  (an input or state of a unit evaluated here) */
    py_unit_t py_unit;         /* the Python units' pull and do_step */
} fl_system;

/* -- values ---------------------------------------------------------------------- */
static const double TWO63 = 9223372036854775808.0;

/* The low 64 bits of the two's complement of the integer r (finite), as ctypes
 * keeps them when it stores a Python int into a C integer */
static uint64_t low_bits(double r) {
    if (r >= -TWO63 && r < TWO63) return (uint64_t)(int64_t)r;
    int e;
    const double m = frexp(fabs(r), &e);          /* |r| = m 2^e, 0.5 <= m < 1, e > 63 */
    const uint64_t mant = (uint64_t)ldexp(m, 53);  /* exact: |r| = mant 2^(e - 53) */
    const uint64_t bits = (e - 53 >= 64) ? 0 : mant << (e - 53);
    return r < 0 ? (uint64_t)0 - bits : bits;
}

/* A master buffer value into the group's C type as the Python units store it:
 * Real as is, Boolean (FMI 3) v != 0, integers int(round(v)) (round half to even)
 * wrapped to the type's width as ctypes does; -1 when v is not finite (Python
 * raises there) */
static int put_value(fl_group *g, int k, double v) {
    void *b = g->buf;
    switch (g->type) {
    case T_F64: ((double *)b)[k] = v; return 0;
    case T_F32: ((float *)b)[k] = (float)v; return 0;
    case T_BOOL3: ((bool *)b)[k] = v != 0.0; return 0;
    default: break;
    }
    if (!isfinite(v)) return -1;
    const uint64_t i = low_bits(rint(v));
    switch (g->type) {
    case T_I8: ((int8_t *)b)[k] = (int8_t)i; break;
    case T_U8: ((uint8_t *)b)[k] = (uint8_t)i; break;
    case T_I16: ((int16_t *)b)[k] = (int16_t)i; break;
    case T_U16: ((uint16_t *)b)[k] = (uint16_t)i; break;
    case T_I32: ((int32_t *)b)[k] = (int32_t)i; break;
    case T_U32: ((uint32_t *)b)[k] = (uint32_t)i; break;
    case T_I64: ((int64_t *)b)[k] = (int64_t)i; break;
    case T_U64: ((uint64_t *)b)[k] = i; break;
    case T_INT2: case T_BOOL2: ((int *)b)[k] = (int)i; break;
    default: return -1;
    }
    return 0;
}

static double get_value(const fl_group *g, int k) {
    const void *b = g->buf;
    switch (g->type) {
    case T_F64: return ((const double *)b)[k];
    case T_F32: return (double)((const float *)b)[k];
    case T_I8: return (double)((const int8_t *)b)[k];
    case T_U8: return (double)((const uint8_t *)b)[k];
    case T_I16: return (double)((const int16_t *)b)[k];
    case T_U16: return (double)((const uint16_t *)b)[k];
    case T_I32: return (double)((const int32_t *)b)[k];
    case T_U32: return (double)((const uint32_t *)b)[k];
    case T_I64: return (double)((const int64_t *)b)[k];
    case T_U64: return (double)((const uint64_t *)b)[k];
    case T_BOOL3: return ((const bool *)b)[k] ? 1.0 : 0.0;
    case T_BOOL2N: return ((const int *)b)[k] != 0 ? 1.0 : 0.0;
    default: return (double)((const int *)b)[k];
    }
}

#define CALL3(kind, T, ctype)                                                                  \
    return ((fmi3##kind##T##TYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (ctype *)g->buf, (size_t)g->n_values)

static int set_call(void *c, fl_group *g) {
    if (!g->fmi3) {
        if (g->type == T_F64) return ((fmi2SetRealTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (const fmi2Real *)g->buf);
        if (g->type == T_INT2) return ((fmi2SetIntegerTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (const fmi2Integer *)g->buf);
        if (g->type == T_STR) return ((fmi2SetStringTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (const fmi2String *)g->buf);
        return ((fmi2SetBooleanTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (const fmi2Boolean *)g->buf);
    }
    switch (g->type) {
    case T_F64: CALL3(Set, Float64, const fmi3Float64);
    case T_F32: CALL3(Set, Float32, const fmi3Float32);
    case T_I8: CALL3(Set, Int8, const fmi3Int8);
    case T_U8: CALL3(Set, UInt8, const fmi3UInt8);
    case T_I16: CALL3(Set, Int16, const fmi3Int16);
    case T_U16: CALL3(Set, UInt16, const fmi3UInt16);
    case T_I32: CALL3(Set, Int32, const fmi3Int32);
    case T_U32: CALL3(Set, UInt32, const fmi3UInt32);
    case T_I64: CALL3(Set, Int64, const fmi3Int64);
    case T_U64: CALL3(Set, UInt64, const fmi3UInt64);
    case T_STR: CALL3(Set, String, const fmi3String);
    default: CALL3(Set, Boolean, const fmi3Boolean);
    }
}

static int get_call(void *c, fl_group *g) {
    if (!g->fmi3) {
        if (g->type == T_F64) return ((fmi2GetRealTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (fmi2Real *)g->buf);
        if (g->type == T_INT2) return ((fmi2GetIntegerTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (fmi2Integer *)g->buf);
        if (g->type == T_STR) return ((fmi2GetStringTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (fmi2String *)g->buf);
        return ((fmi2GetBooleanTYPE *)g->fn)(c, g->vr, (size_t)g->n_vr, (fmi2Boolean *)g->buf);
    }
    switch (g->type) {
    case T_F64: CALL3(Get, Float64, fmi3Float64);
    case T_F32: CALL3(Get, Float32, fmi3Float32);
    case T_I8: CALL3(Get, Int8, fmi3Int8);
    case T_U8: CALL3(Get, UInt8, fmi3UInt8);
    case T_I16: CALL3(Get, Int16, fmi3Int16);
    case T_U16: CALL3(Get, UInt16, fmi3UInt16);
    case T_I32: CALL3(Get, Int32, fmi3Int32);
    case T_U32: CALL3(Get, UInt32, fmi3UInt32);
    case T_I64: CALL3(Get, Int64, fmi3Int64);
    case T_U64: CALL3(Get, UInt64, fmi3UInt64);
    case T_STR: CALL3(Get, String, fmi3String);
    default: CALL3(Get, Boolean, fmi3Boolean);
    }
}

/* -- String values ------------------------------------------------------------------ */
static fl_str *str_slots(fl_group *g) {
    if (!g->str) g->str = calloc((size_t)(g->n_slots > 0 ? g->n_slots : 1), sizeof(fl_str));
    return g->str;
}

/* the texts of the group's slots from the codes in u: Python is asked only for a code
 * not seen last time in that slot; 1 when it failed */
static int put_strings(fl_system *S, fl_group *g, const double *u) {
    fl_str *cache = str_slots(g);
    if (!cache) return 1;
    for (int s = 0; s < g->n_slots; s++) {
        const double code = u[g->slots[2 * s + 1]];
        fl_str *c = &cache[s];
        if (!c->valid || memcmp(&c->code, &code, sizeof code) != 0) {
            const char *text = S->py_text(code);
            if (!text) return 1;
            c->text = (char *)text;  /* kept alive by Python for the run */
            c->code = code;
            c->valid = 1;
        }
        ((const char **)g->buf)[g->slots[2 * s]] = c->text;
    }
    return 0;
}

/* the codes of the texts just read into the group's buffer, written to out[slot index]:
 * Python is asked only for a text that differs from the slot's last one; 1 when it failed */
static int get_strings(fl_system *S, fl_group *g, double *out) {
    fl_str *cache = str_slots(g);
    if (!cache) return 1;
    for (int s = 0; s < g->n_slots; s++) {
        const char *text = ((const char **)g->buf)[g->slots[2 * s]];
        if (!text) text = "";
        fl_str *c = &cache[s];
        if (!c->valid || strcmp(c->text, text) != 0) {
            const size_t n = strlen(text) + 1;
            if (n > c->cap) {
                char *p = realloc(c->text, n);
                if (!p) return 1;
                c->text = p;
                c->cap = n;
            }
            memcpy(c->text, text, n);
            c->code = S->py_code(text);
            c->valid = c->code >= 0.0;
            if (!c->valid) return 1;
        }
        out[g->slots[2 * s + 1]] = c->code;
    }
    return 0;
}

static void release_groups(fl_group *gs, int n, int owned) {
    for (int i = 0; i < n; i++) {
        if (!gs[i].str) continue;
        if (owned)
            for (int s = 0; s < gs[i].n_slots; s++) free(gs[i].str[s].text);
        free(gs[i].str);
        gs[i].str = NULL;
    }
}

/* frees the String caches of a run (called once it is over) */
void fl_release(fl_system *S) {
    for (int i = 0; i < S->n_units; i++) {
        fl_unit *u = &S->units[i];
        release_groups(u->push, u->n_push, 0);
        release_groups(u->pull, u->n_pull, 1);
        release_groups(u->rget, u->n_rget, 1);
        if (u->se) {  /* read back by the master before (fast_loop.run) */
            free(u->se->sched);
            free(u->se->due);
            u->se->sched = NULL;
            u->se->due = NULL;
            u->se->n_sched = u->se->cap_sched = u->se->cap_due = 0;
        }
    }
}

/* -- unit calls: 0 on success, else *f describes the failure ---------------------- */
static int failed(fl_failure *f, int unit, int call, int status, int group, double t, double h) {
    f->unit = unit; f->call = call; f->status = status; f->group = group; f->t = t; f->h = h;
    return 1;
}

/* -- units evaluated here ------------------------------------------------------------ */
/* a controller of desc d reading u, writing y, its state in x (nx, its initial value) */
fl_ctrl *fl_ctrl_new(const mbc_desc *d, double *u, double *y, double *x) {
    fl_ctrl *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->c = mbc_new(d);
    if (!w->c) {
        free(w);
        return NULL;
    }
    w->block = w->c->x;
    w->c->u = u;
    w->c->y = y;
    w->c->x = x;
    return w;
}

void fl_ctrl_free(fl_ctrl *w) {
    if (!w) return;
    w->c->x = w->block;  /* mbc_free frees the block that starts at x */
    mbc_free(w->c);
    free(w);
}

/* ControlUnit.pull / FunctionUnit.pull of a block; a block's output that is not
 * finite fails, as FunctionUnit.pull raises */
static int eval_unit(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    if (u->kind == U_CTRL) {
        mbc_outputs(u->ctrl->c);
        return 0;
    }
    double *y = u->y;
    const int ny = u->n_y;
    mbc_block(u->op, u->n_u, ny, u->k, u->k2, u->u, y);
    for (int j = 0; j < ny; j++)
        if (!isfinite(y[j])) {
            f->index = j;
            return failed(f, i, C_UNIT, 0, 0, t, 0.0);
        }
    return 0;
}

/* ControlUnit.do_step of a controller: the step's matrices taken from the run's
 * table (those ControlUnit computes) when h is in it */
static int step_ctrl(fl_system *S, int i, double t, double h, fl_failure *f) {
    fl_unit *u = &S->units[i];
    mbc_ctrl *c = u->ctrl->c;
    const mbc_desc *d = c->d;
    if (d->kind == MBC_LTI && d->dt == 0.0 && h != c->h) {
        for (int z = 0; z < u->n_zoh; z++)
            if (u->zoh_h[z] == h) {
                const size_t nx = (size_t)d->nx, nu = (size_t)d->nu;
                memcpy(c->Ad, u->zoh_A + (size_t)z * nx * nx, nx * nx * sizeof(double));
                if (nu) memcpy(c->Bd, u->zoh_B + (size_t)z * nx * nu, nx * nu * sizeof(double));
                c->h = h;
                break;
            }
    }
    /* a discrete controller takes one sample per (sub-)step, as ControlUnit.do_step does:
       the master steps it at its dt, and a step counted from the run's time points may
       differ from dt in its last bits by more than controller.c's whole-sample check allows */
    const int rc = mbc_step(c, d->dt > 0.0 ? d->dt : h);
    /* a state that is not finite: controller.c keeps the last finite one, the Python
       unit takes the step (its state then holds what ControlUnit holds: NaN, inf) */
    if (rc == MBC_E_STATE) return S->py_unit(i, 2, t, h) ? failed(f, i, C_PY, 0, 0, t, h) : 0;
    return rc ? failed(f, i, C_UNIT, rc, 0, t, h) : 0;
}

static int se_activate(fl_system *S, int i, double t, fl_failure *f);

static int ev_push(fl_system *S, int i, double t, fl_failure *f);

/* the FMU's connected inputs from u (Fmu3Unit.push, FmuUnit.push) */
static int set_inputs_calls(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    for (int gi = 0; gi < u->n_push; gi++) {
        fl_group *g = &u->push[gi];
        if (g->type == T_STR) {
            if (put_strings(S, g, u->u)) return failed(f, i, C_PY, 0, gi, t, 0.0);
        } else for (int s = 0; s < g->n_slots; s++) {
            const int j = g->slots[2 * s + 1];
            double v = u->u[j];
            if (u->conv && u->conv_on[j]) v = u->conv[2 * j] * v + u->conv[2 * j + 1];  /* as FmuUnit._converted_inputs */
            if (put_value(g, g->slots[2 * s], v)) {
                f->index = g->slots[2 * s + 1];
                f->value = v;
                return failed(f, i, C_RANGE, 0, gi, t, 0.0);
            }
        }
        int st = set_call(u->component, g);
        if (st > 1) return failed(f, i, C_SET, st, gi, t, 0.0);
    }
    return 0;
}

static int push_calls(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    if (u->kind == U_PY && u->py_push) return S->py_unit(i, 3, t, 0.0) ? failed(f, i, C_PY, 0, 0, t, 0.0) : 0;
    if (u->kind != U_FMU) return 0;  /* reads its input buffer when evaluated */
    if (u->ev) return ev_push(S, i, t, f);
    if (set_inputs_calls(S, i, t, f)) return 1;
    if (u->se && u->se->pending) return se_activate(S, i, t, f);  /* Fmu3ScheduledUnit.push */
    return 0;
}

/* the FMU's outputs into y */
static int read_outputs(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    for (int gi = 0; gi < u->n_pull; gi++) {
        fl_group *g = &u->pull[gi];
        int st = get_call(u->component, g);
        if (st > 1) return failed(f, i, C_GET, st, gi, t, 0.0);
        if (g->type == T_STR) {
            if (get_strings(S, g, u->y)) return failed(f, i, C_PY, 0, gi, t, 0.0);
        } else for (int s = 0; s < g->n_slots; s++) u->y[g->slots[2 * s + 1]] = get_value(g, g->slots[2 * s]);
    }
    return 0;
}

static int pull_calls(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    if (u->kind == U_PY) return S->py_unit(i, 0, t, 0.0) ? failed(f, i, C_PY, 0, 0, t, 0.0) : 0;
    if (u->kind != U_FMU) return eval_unit(S, i, t, f);
    if (u->se && u->se->pending && !u->se->driven) return se_activate(S, i, t, f);  /* Fmu3ScheduledUnit.pull */
    return read_outputs(S, i, t, f);
}

/* -- FMI 3.0 Scheduled Execution: Fmu3ScheduledUnit's do_step and _activate ------------- */
static int se_failed(fl_failure *f, int i, int what, int status, int clock, double t, double value) {
    f->index = what;
    f->value = value;
    return failed(f, i, C_SE, status, clock, t, 0.0);
}

static int due_add(fl_se *e, int *n, int c, double t) {
    if (*n >= e->cap_due) {
        const int cap = e->cap_due ? 2 * e->cap_due : 16;
        fl_due *p = realloc(e->due, sizeof *p * (size_t)cap);
        if (!p) return 1;
        e->due = p;
        e->cap_due = cap;
    }
    e->due[(*n)++] = (fl_due){e->priority[c], c, t};
    return 0;
}

/* the next activation of the round (heapq.heappop of (priority, rank, clock, time)) */
static fl_due due_pop(fl_se *e, int *n) {
    int best = 0;
    for (int m = 1; m < *n; m++) {
        const fl_due *a = &e->due[m], *b = &e->due[best];
        if (a->priority < b->priority || (a->priority == b->priority && (a->c < b->c || (a->c == b->c && a->t < b->t))))
            best = m;
    }
    const fl_due d = e->due[best];
    e->due[best] = e->due[--(*n)];
    return d;
}

static int schedule(fl_se *e, long long k, int c, double t) {
    if (e->n_sched >= e->cap_sched) {
        const int cap = e->cap_sched ? 2 * e->cap_sched : 16;
        fl_tick *p = realloc(e->sched, sizeof *p * (size_t)cap);
        if (!p) return 1;
        e->sched = p;
        e->cap_sched = cap;
    }
    e->sched[e->n_sched++] = (fl_tick){k, c, t};
    return 0;
}

/* a countdown tick scheduled before the compiled run (the unit's schedule copied here); 1: no memory */
int fl_se_schedule(fl_se *e, long long k, int c, double t) { return schedule(e, k, c, t); }

/* Fmu3ScheduledUnit._countdowns_set after the activation at ta: the countdown clocks the
 * FMU changed; those due at ta join the round, later ones are scheduled */
static int se_countdowns(fl_system *S, int i, double ta, int *n_due, fl_failure *f) {
    fl_se *e = S->units[i].se;
    const int st = ((fmi3GetIntervalDecimalTYPE *)e->get_interval)(
        S->units[i].component, e->cd_vr, (size_t)e->n_cd, e->cd_interval, (fmi3IntervalQualifier *)e->cd_qualifier);
    if (st > 1) return se_failed(f, i, SE_INTERVAL, st, 0, ta, 0.0);
    for (int m = 0; m < e->n_cd; m++) {
        if (e->cd_qualifier[m] != fmi3IntervalChanged) continue;
        const double d = e->cd_interval[m];
        const int c = e->cd_clock[m];
        if (d == 0.0) {
            if (due_add(e, n_due, c, ta)) return se_failed(f, i, SE_NO_MEMORY, 0, c, ta, 0.0);
            continue;
        }
        /* clocks.steps_of(name, "countdown tick at", ta + d - t0, H) */
        const double seconds = ta + d - e->t0;
        const double step = e->H;
        if (!(isfinite(seconds) && seconds >= 0)) return se_failed(f, i, SE_COUNTDOWN_GRID, 0, c, ta, seconds);
        const double n = rint(seconds / step);
        if (fabs(n * step - seconds) > e->grid_tol * (seconds >= step ? seconds : step))
            return se_failed(f, i, SE_COUNTDOWN_GRID, 0, c, ta, seconds);
        if ((long long)n <= e->k) return se_failed(f, i, SE_COUNTDOWN_BACK, 0, c, ta, d);
        if (schedule(e, (long long)n, c, ta + d)) return se_failed(f, i, SE_NO_MEMORY, 0, c, ta, 0.0);
    }
    return 0;
}

/* Fmu3ScheduledUnit._activate: every partition due at the unit's communication point, by
 * priority, then the output clocks and the outputs */
static int se_activate(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    fl_se *e = u->se;
    e->pending = 0;
    const long long k = e->k;
    int n = 0;
    for (int p = 0; p < e->n_periodic; p++) {  /* clocks.PeriodicTicks.tick_at */
        const long long first = e->per_first[p], every = e->per_every[p];
        if (k < first || (k - first) % every) continue;
        const double ta = e->per_base[p] + (double)((k - first) / every) * e->per_interval[p];
        if (due_add(e, &n, e->per_clock[p], ta)) return se_failed(f, i, SE_NO_MEMORY, 0, e->per_clock[p], t, 0.0);
    }
    for (int m = 0; m < e->n_trig; m++)
        if (u->u[e->trig[2 * m]] != 0.0 && due_add(e, &n, e->trig[2 * m + 1], e->t_now))
            return se_failed(f, i, SE_NO_MEMORY, 0, e->trig[2 * m + 1], t, 0.0);
    int kept = 0;
    for (int m = 0; m < e->n_sched; m++) {  /* the countdown ticks scheduled at k, in the order set */
        const fl_tick tk = e->sched[m];
        if (tk.k == k) {
            if (due_add(e, &n, tk.c, tk.t)) return se_failed(f, i, SE_NO_MEMORY, 0, tk.c, t, 0.0);
        } else {
            e->sched[kept++] = tk;
        }
    }
    e->n_sched = kept;
    if (!n) return read_outputs(S, i, t, f);
    while (n) {
        const fl_due d = due_pop(e, &n);
        *e->clock_updated = 0;
        const int st = ((fmi3ActivateModelPartitionTYPE *)e->activate)(u->component, e->vr[d.c], d.t);
        if (st > 1) return se_failed(f, i, SE_ACTIVATE, st, d.c, d.t, 0.0);
        if (e->count[d.c] == 0 && e->first[d.c] < 0) e->first[d.c] = e->n_act;
        e->count[d.c]++;
        e->last[d.c] = d.t;
        const int r = (int)(e->n_act % e->ring_cap);
        e->ring_c[r] = d.c;
        e->ring_t[r] = d.t;
        e->n_act++;
        if (*e->clock_updated && e->n_cd && se_countdowns(S, i, d.t, &n, f)) return 1;
    }
    if (e->n_oclk) {  /* ClockedFmu3Unit._read_output_clocks */
        const int st = ((fmi3GetClockTYPE *)e->get_clock)(u->component, e->oclk_vr, (size_t)e->n_oclk, e->oclk_val);
        if (st > 1) return se_failed(f, i, SE_GET_CLOCK, st, 0, e->t_now, 0.0);
        for (int m = 0; m < e->n_oclk; m++)
            if (e->oclk_val[m]) u->y[e->oclk_j[m]] = 1.0;
    }
    return read_outputs(S, i, t, f);
}

/* Fmu3ScheduledUnit.do_step: no FMU call; the partitions due at t + h run at the next push
 * (or pull of a unit without inputs) */
static int se_step(fl_system *S, int i, double t, double h, fl_failure *f) {
    fl_unit *u = &S->units[i];
    fl_se *e = u->se;
    const double end = t + h;
    const double r = rint((end - e->t0) / e->H);
    const double scale = e->H >= fabs(end) ? e->H : fabs(end);
    if (fabs(e->t0 + r * e->H - end) > 1e-9 * scale) return se_failed(f, i, SE_OFF_GRID, 0, 0, end, 0.0);
    for (int m = 0; m < e->n_oclk; m++) u->y[e->oclk_j[m]] = 0.0;
    e->k = (long long)r;
    e->t_now = end;
    e->pending = 1;
    return 0;
}

/* -- FMI 3.0 co-simulation with event mode: Fmu3EventUnit's push, do_step and _event ---- */
static int ev_failed(fl_failure *f, int i, int what, int status, double t, double value) {
    f->index = what;
    f->value = value;
    return failed(f, i, C_EV, status, 0, t, 0.0);
}

/* Fmu3EventUnit._event at t: event mode (unless entered), the inputs and the n_kick input
 * clocks in kick_vr, the output clocks, the discrete-state iteration, step mode */
static int ev_event(fl_system *S, int i, double t, int entered, int n_kick, fl_failure *f) {
    fl_unit *u = &S->units[i];
    fl_ev *e = u->ev;
    void *c = u->component;
    int st;
    if (!entered && (st = ((fmi3EnterEventModeTYPE *)e->enter_event)(c)) > 1)
        return ev_failed(f, i, EV_ENTER_EVENT, st, t, 0.0);
    if (n_kick) {
        if (set_inputs_calls(S, i, t, f)) return 1;
        if ((st = ((fmi3SetClockTYPE *)e->set_clock)(c, e->kick_vr, (size_t)n_kick, e->kick_val)) > 1)
            return ev_failed(f, i, EV_SET_CLOCK, st, t, 0.0);
    }
    int ticked = 0;
    if (e->n_oclk) {  /* ClockedFmu3Unit._read_output_clocks */
        if ((st = ((fmi3GetClockTYPE *)e->get_clock)(c, e->oclk_vr, (size_t)e->n_oclk, e->oclk_val)) > 1)
            return ev_failed(f, i, EV_GET_CLOCK, st, t, 0.0);
        for (int m = 0; m < e->n_oclk; m++)
            if (e->oclk_val[m]) {
                u->y[e->oclk_j[m]] = 1.0;
                ticked = 1;
            }
    }
    if (ticked || n_kick || !entered) {  /* Fmu3EventUnit.events */
        const int r = (int)(e->n_ev % e->ring_cap);
        e->ring_t[r] = t;
        for (int m = 0; m < e->n_oclk; m++) e->ring_clk[(size_t)r * (size_t)e->n_oclk + (size_t)m] = e->oclk_val[m];
        e->n_ev++;
    }
    fmi3Boolean need = false, term = false, nominals = false, values = false, next_defined = false;
    fmi3Float64 next = 0.0;
    int it;
    for (it = 0; it < e->max_iterations; it++) {
        if ((st = ((fmi3UpdateDiscreteStatesTYPE *)e->update)(c, &need, &term, &nominals, &values, &next_defined,
                                                               &next)) > 1)
            return ev_failed(f, i, EV_UPDATE, st, t, 0.0);
        if (term && !u->stop_requested) {  /* terminateSimulation */
            u->stop_requested = 1;
            u->stop_at = t;
        }
        if (!need) break;
    }
    if (it == e->max_iterations) return ev_failed(f, i, EV_SETTLE, 0, t, 0.0);
    if ((st = ((fmi3EnterStepModeTYPE *)e->enter_step)(c)) > 1) return ev_failed(f, i, EV_ENTER_STEP, st, t, 0.0);
    return 0;
}

/* Fmu3EventUnit.push: an input clock true after a step (or at the first exchange) ticks
 * in an event at the unit's time, which also sets the inputs and reads the outputs */
static int ev_push(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    fl_ev *e = u->ev;
    int n_kick = 0;
    if (e->pending || e->first)
        for (int m = 0; m < e->n_trig; m++)
            if (u->u[e->trig_j[m]] != 0.0) e->kick_vr[n_kick++] = e->trig_vr[m];
    e->pending = e->first = 0;
    if (!n_kick) return set_inputs_calls(S, i, t, f);
    if (ev_event(S, i, e->time, 0, n_kick, f)) return 1;
    return read_outputs(S, i, t, f);
}

/* Fmu3EventUnit.do_step: fmi3DoStep to t + h, each early return at an event handled at
 * the time the FMU reached and the rest of the step stepped from there */
static int ev_step(fl_system *S, int i, double t, double h, fl_failure *f) {
    fl_unit *u = &S->units[i];
    fl_ev *e = u->ev;
    const double end = t + h;
    double tc = t;
    for (int m = 0; m < e->n_oclk; m++) u->y[e->oclk_j[m]] = 0.0;
    for (;;) {
        fmi3Boolean event = false, terminate = false, early = false;
        fmi3Float64 reached = 0.0;
        const int st = ((fmi3DoStepTYPE *)u->do_step)(u->component, tc, end - tc, u->no_prior != 0, &event,
                                                      &terminate, &early, &reached);
        if (st > 1) return failed(f, i, C_STEP, st, 0, tc, end - tc);
        const double at = early ? reached : end;
        if (terminate) {  /* keep this step, stop before the next */
            u->stop_requested = 1;
            u->stop_at = at;
        }
        if (event && ev_event(S, i, at, 0, 0, f)) return 1;
        if (!early || reached >= end || u->stop_requested) break;
        if (!(reached > tc || event)) return ev_failed(f, i, EV_NO_PROGRESS, 0, reached, tc);
        tc = reached;
    }
    e->time = end;
    e->pending = 1;
    return 0;
}

/* the recorded variables that are not read from the output buffers (Unit.getter) */
static int record_getters(fl_system *S, double *cols, double t, fl_failure *f) {
    for (int i = 0; i < S->n_units; i++) {
        fl_unit *u = &S->units[i];
        for (int gi = 0; gi < u->n_rget; gi++) {
            fl_group *g = &u->rget[gi];
            S->ctl->unit = i;
            int st = get_call(u->component, g);
            if (st > 1) return failed(f, i, C_RGET, st, gi, t, 0.0);
            if (g->type == T_STR) {
                if (get_strings(S, g, cols)) return failed(f, i, C_PY, 0, gi, t, 0.0);
            } else for (int s = 0; s < g->n_slots; s++) cols[g->slots[2 * s + 1]] = get_value(g, g->slots[2 * s]);
        }
    }
    return 0;
}

static int do_step_calls(fl_system *S, int i, double t, double h, fl_failure *f) {
    fl_unit *u = &S->units[i];
    if (u->kind == U_CTRL) return step_ctrl(S, i, t, h, f);
    if (u->kind == U_BLOCK) return 0;
    if (u->kind == U_PY) return S->py_unit(i, 1, t, h) ? failed(f, i, C_PY, 0, 0, t, h) : 0;
    if (u->se) return se_step(S, i, t, h, f);
    if (u->me) {  /* a Model Exchange unit: its integration and events (status: me_do_step's result) */
        int r = u->me_step(u->me, t, h);
        return r ? failed(f, i, C_ME, r, 0, t, h) : 0;
    }
    if (u->stop_requested) return failed(f, i, C_STOP, 0, 0, t, h);
    if (u->ev) return ev_step(S, i, t, h, f);
    if (!u->fmi3) {
        int st = ((fmi2DoStepTYPE *)u->do_step)(u->component, t, h, u->no_prior);
        return st > 1 ? failed(f, i, C_STEP, st, 0, t, h) : 0;
    }
    fmi3Boolean event = false, terminate = false, early = false;
    fmi3Float64 last = 0.0;
    int st = ((fmi3DoStepTYPE *)u->do_step)(u->component, t, h, u->no_prior != 0, &event, &terminate, &early, &last);
    if (st > 1) return failed(f, i, C_STEP, st, 0, t, h);
    if (terminate) {  /* keep this step, stop before the next (as Fmu3Unit.do_step) */
        u->stop_requested = 1;
        u->stop_at = t + h;
    }
    return 0;
}

/* the calls of unit i, marked as inside a call for the watchdog while they run */
static void enter(fl_system *S, int i) {
    S->ctl->unit = i;
    if (S->ctl->in_call) __atomic_store_n(&S->ctl->in_call[i], 1, __ATOMIC_RELEASE);
}

static int leave(fl_system *S, int i, int r) {
    if (S->ctl->in_call) __atomic_store_n(&S->ctl->in_call[i], 0, __ATOMIC_RELEASE);
    return r;
}

static int push(fl_system *S, int i, double t, fl_failure *f) {
    enter(S, i);
    return leave(S, i, push_calls(S, i, t, f));
}

static int pull(fl_system *S, int i, double t, fl_failure *f) {
    enter(S, i);
    return leave(S, i, pull_calls(S, i, t, f));
}

static int do_step(fl_system *S, int i, double t, double h, fl_failure *f) {
    enter(S, i);
    return leave(S, i, do_step_calls(S, i, t, h, f));
}

static int push_derivatives_calls(fl_system *S, int i, double t, fl_failure *f) {
    fl_unit *u = &S->units[i];
    if (u->kind == U_PY && u->py_push) return S->py_unit(i, 4, t, 0.0) ? failed(f, i, C_PY, 0, 0, t, 0.0) : 0;
    if (!u->n_der) return 0;
    for (int order = 1; order <= 2; order++) {
        if (order > u->max_order) continue;
        const double *d = order == 1 ? u->d1 : u->d2;
        for (int m = 0; m < u->n_der; m++) {
            const int j = u->der_idx[m];
            u->der_buf[m] = (u->conv && u->conv_on[j]) ? u->conv[2 * j] * d[j] : d[j];  /* gain only */
        }
        int st = ((fmi2SetRealInputDerivativesTYPE *)u->set_derivs)(
            u->component, u->der_vr, (size_t)u->n_der, order == 1 ? u->order1 : u->order2, u->der_buf);
        if (st > 1 && order > 1) {  /* learnt: this FMU takes lower orders only */
            u->max_order = order - 1;
            u->refused_order2 = 1;
        } else if (st > 1) {
            return failed(f, i, C_DERIV, st, order, t, 0.0);
        }
    }
    return 0;
}

static int push_derivatives(fl_system *S, int i, double t, fl_failure *f) {
    enter(S, i);
    return leave(S, i, push_derivatives_calls(S, i, t, f));
}

/* Master._step_unit: the unit's sub-steps over [t, t + h], inputs extrapolated
 * with the step's coefficients when coeffs is set; sub-step points counted
 * from t (the last one t + h), each sub-step the difference of its two points */
static int step_unit(fl_system *S, int i, double t, double h, int coeffs, fl_failure *f) {
    fl_unit *u = &S->units[i];
    const int m = u->sub;
    const double hs = h / (double)m;
    const int *cn = S->conns;
    double ts_next = t;
    for (int s = 0; s < m; s++) {
        const double ts = ts_next;
        ts_next = (s == m - 1) ? t + h : t + (double)(s + 1) * hs;
        if (coeffs && u->n_x) {
            const double a = (double)s * hs;
            if (u->interpolate) {
                /* every connected Real input gets its derivatives here, so d1 and d2
                   need no clearing (Python makes fresh zero lists) */
                for (int c = 0; c < u->n_x; c++) {
                    const int x = u->x_conn[c], j = cn[5 * x + 1];
                    const double c0 = S->c0[x], c1 = S->c1[x], c2 = S->c2[x];
                    u->u[j] = c0 + c1 * a + c2 * a * a;
                    u->d1[j] = c1 + 2.0 * c2 * a;
                    u->d2[j] = 2.0 * c2;
                }
                if (push(S, i, ts, f)) return 1;
                if (push_derivatives(S, i, ts, f)) return 1;
            } else {
                const double b = a + hs;
                for (int c = 0; c < u->n_x; c++) {
                    const int x = u->x_conn[c], j = cn[5 * x + 1];
                    const double c0 = S->c0[x], c1 = S->c1[x], c2 = S->c2[x];
                    u->u[j] = c0 + c1 * (a + b) / 2.0 + c2 * (a * a + a * b + b * b) / 3.0;
                }
                if (push(S, i, ts, f)) return 1;
            }
        }
        if (do_step(S, i, ts, ts_next - ts, f)) return 1;
    }
    return 0;
}

/* Master._coeffs: monomial coefficients (in tau = t - t_n) of each connection's
 * polynomial through the last order + 1 exchanged values */
static void coefficients(fl_system *S) {
    const int n = S->n_conn;
    int k = S->extrapolation < S->n_hist - 1 ? S->extrapolation : S->n_hist - 1;
    const double *Y0 = S->hist_y, *Y1 = S->hist_y + n, *Y2 = S->hist_y + 2 * n;
    const double t0 = S->hist_t[0], t1 = S->hist_t[1], t2 = S->hist_t[2];
    for (int c = 0; c < n; c++) {
        const int held = S->conns[5 * c + 4];
        S->c0[c] = Y0[c];
        S->c1[c] = 0.0;
        S->c2[c] = 0.0;
        if (k <= 0) continue;
        const double a = held ? 0.0 : (Y0[c] - Y1[c]) / (t0 - t1);
        if (k == 1) {
            S->c1[c] = a;
            continue;
        }
        const double a12 = (Y1[c] - Y2[c]) / (t1 - t2);
        const double b = held ? 0.0 : (a - a12) / (t0 - t2);
        S->c1[c] = a - b * (t1 - t0);
        S->c2[c] = b;
    }
}

/* Master._push_history */
static void push_history(fl_system *S, double t) {
    const int n = S->n_conn;
    memmove(S->hist_y + n, S->hist_y, sizeof(double) * (size_t)(2 * n));
    S->hist_t[2] = S->hist_t[1];
    S->hist_t[1] = S->hist_t[0];
    S->hist_t[0] = t;
    for (int c = 0; c < n; c++) {
        const int *e = S->conns + 5 * c;
        S->hist_y[c] = S->units[e[2]].y[e[3]];
    }
    if (S->n_hist < 3) S->n_hist++;
}

static void set_inputs(fl_system *S, fl_unit *u) {
    for (int c = 0; c < u->n_in_conn; c++) {
        const int *e = u->in_conn + 3 * c;
        u->u[e[0]] = S->units[e[1]].y[e[2]];
    }
}

/* -- algebraic loops: mbfmu.cosim.master.loops in C, the same iterations and tests ---------- */
/* G(z) of loops.newton: the loop inputs set to z, every unit pushed and pulled; the
 * source outputs into out */
static int loop_G(fl_system *S, fl_loop *L, const double *z, double *out, double t, fl_failure *f) {
    for (int c = 0; c < L->n; c++) S->units[L->conns[4 * c]].u[L->conns[4 * c + 1]] = z[c];
    for (int b = 0; b < L->n_block; b++) {
        if (push(S, L->block[b], t, f) || pull(S, L->block[b], t, f)) return 1;
    }
    for (int c = 0; c < L->n; c++) out[c] = S->units[L->conns[4 * c + 2]].y[L->conns[4 * c + 3]];
    return 0;
}

/* J x = F by LU with partial pivoting; F is overwritten by x; 1 when J is singular */
static int lu_solve(double *J, double *F, int *piv, int n) {
#define A(r, c) J[(size_t)(c) * (size_t)n + (size_t)(r)]
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int r = k + 1; r < n; r++)
            if (fabs(A(r, k)) > fabs(A(p, k))) p = r;
        piv[k] = p;
        if (A(p, k) == 0.0) return 1;
        if (p != k) {
            for (int c = 0; c < n; c++) {
                const double tmp = A(k, c); A(k, c) = A(p, c); A(p, c) = tmp;
            }
            const double tmp = F[k]; F[k] = F[p]; F[p] = tmp;
        }
        for (int r = k + 1; r < n; r++) {
            const double l = A(r, k) / A(k, k);
            A(r, k) = l;
            for (int c = k + 1; c < n; c++) A(r, c) -= l * A(k, c);
            F[r] -= l * F[k];
        }
    }
    for (int k = n - 1; k >= 0; k--) {
        double v = F[k];
        for (int c = k + 1; c < n; c++) v -= A(k, c) * F[c];
        F[k] = v / A(k, k);
    }
    return 0;
#undef A
}

static int loop_failed(fl_failure *f, fl_system *S, int li, int why, double residual, double t) {
    f->index = why;
    f->value = residual;
    return failed(f, S->loops[li].block[0], C_LOOP, 0, li, t, 0.0);
}

/* loops.newton */
static int newton(fl_system *S, int li, double t, long long *its, fl_failure *f) {
    fl_loop *L = &S->loops[li];
    const int n = L->n;
    double *z = L->z, *F = L->F, *g = L->g, *zp = L->zp, *J = L->J;
    for (int c = 0; c < n; c++) z[c] = S->units[L->conns[4 * c]].u[L->conns[4 * c + 1]];
    int it, converged = 0;
    double residual = 0.0;
    for (it = 1; it <= S->newton_iterations; it++) {
        if (loop_G(S, L, z, g, t, f)) return 1;
        double worst = 0.0;
        residual = 0.0;
        for (int c = 0; c < n; c++) {
            F[c] = z[c] - g[c];
            const double e = fabs(F[c]) / (1.0 + fabs(z[c]));
            if (isnan(e) || e > worst) worst = e;  /* as np.max: NaN wins */
            if (isnan(F[c]) || fabs(F[c]) > residual) residual = fabs(F[c]);
        }
        if (worst <= S->loop_tol) {
            converged = 1;
            break;
        }
        for (int i = 0; i < n; i++) {
            const double dz = 1e-7 * (fabs(z[i]) > 1.0 ? fabs(z[i]) : 1.0);
            memcpy(zp, z, sizeof(double) * (size_t)n);
            zp[i] += dz;
            if (loop_G(S, L, zp, g, t, f)) return 1;
            for (int r = 0; r < n; r++) J[(size_t)i * (size_t)n + (size_t)r] = ((zp[r] - g[r]) - F[r]) / dz;
        }
        if (lu_solve(J, F, L->piv, n)) return loop_failed(f, S, li, 0, residual, t);
        for (int c = 0; c < n; c++) z[c] = z[c] - F[c];
    }
    if (!converged) return loop_failed(f, S, li, 1, residual, t);
    if (loop_G(S, L, z, g, t, f)) return 1;
    for (int b = 0; b < L->n_block; b++) {  /* consistent values everywhere, inputs from outside the loop too */
        const int ui = L->block[b];
        set_inputs(S, &S->units[ui]);
        if (push(S, ui, t, f) || pull(S, ui, t, f)) return 1;
    }
    *its += it;
    return 0;
}

/* loops.solve_loop: Gauss-Seidel sweeps, Newton when they do not contract */
static int solve_loop(fl_system *S, int li, double t, fl_failure *f) {
    fl_loop *L = &S->loops[li];
    double prev = INFINITY;
    int it;
    for (it = 1; it <= S->loop_max_iterations; it++) {
        for (int b = 0; b < L->n_block; b++) {
            const int ui = L->block[b];
            set_inputs(S, &S->units[ui]);
            if (push(S, ui, t, f) || pull(S, ui, t, f)) return 1;
        }
        double err = 0.0;
        for (int c = 0; c < L->n; c++) {
            const int *e = L->conns + 4 * c;
            const double y = S->units[e[2]].y[e[3]];
            const double d = fabs(y - S->units[e[0]].u[e[1]]) / (S->loop_tol * (1.0 + fabs(y)));
            if (d > err) err = d;
        }
        if (err <= 1.0) {
            S->loop_iterations += it;
            return 0;
        }
        if (it >= 4 && err > 0.5 * prev) break;  /* not contracting */
        prev = err;
    }
    if (it > S->loop_max_iterations) it = S->loop_max_iterations;
    long long its = it;
    if (newton(S, li, t, &its, f)) return 1;
    S->loop_iterations += its;
    return 0;
}

/* Master.exchange at t */
static int exchange(fl_system *S, double t, fl_failure *f) {
    for (int i = 0; i < S->n_pre; i++)
        if (pull(S, S->pre_pull[i], t, f)) return 1;
    for (int p = 0; p < S->n_plan; p++) {
        const int ui = S->plan[2 * p];
        if (ui < 0) {
            if (solve_loop(S, -1 - ui, t, f)) return 1;
            continue;
        }
        set_inputs(S, &S->units[ui]);
        if (push(S, ui, t, f)) return 1;
        if (S->plan[2 * p + 1] && pull(S, ui, t, f)) return 1;
    }
    return 0;
}

/* -- parallel stepping ---------------------------------------------------------------
 * A pool of threads and the loop's own thread take the units of a Jacobi step from
 * a shared ticket counter: whoever is free steps the next unit, so a worker that
 * wakes late (a loaded machine) costs nothing; the loop's thread waits only for the
 * units to be done. Tickets only grow, so a late worker never takes a unit of a
 * later step with the times of an earlier one. */
typedef struct {
    fl_system *S;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    int generation, quit;
    double t, h;
    int coeffs;
    long long next;            /* the next ticket (atomic) */
    long long base, limit;     /* this step's tickets: base .. limit - 1, unit = ticket - base */
    int completed;             /* units of this step done (atomic) */
} fl_pool;

static void take_units(fl_pool *P, long long base, long long limit, double t, double h, int coeffs) {
    fl_system *S = P->S;
    for (;;) {
        long long tk = __atomic_load_n(&P->next, __ATOMIC_ACQUIRE);
        do {
            if (tk >= limit) return;
        } while (!__atomic_compare_exchange_n(&P->next, &tk, tk + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
        const int i = (int)(tk - base);
        S->unit_fail[i].unit = -1;
        step_unit(S, i, t, h, coeffs, &S->unit_fail[i]);
        if (__atomic_add_fetch(&P->completed, 1, __ATOMIC_ACQ_REL) == S->n_units) {
            pthread_mutex_lock(&P->lock);
            pthread_cond_signal(&P->done);
            pthread_mutex_unlock(&P->lock);
        }
    }
}

static void *worker_main(void *arg) {
    fl_pool *P = arg;
    int seen = 0;
    for (;;) {
        pthread_mutex_lock(&P->lock);
        while (P->generation == seen && !P->quit) pthread_cond_wait(&P->go, &P->lock);
        if (P->quit) {
            pthread_mutex_unlock(&P->lock);
            return NULL;
        }
        seen = P->generation;
        const long long base = P->base, limit = P->limit;
        const double t = P->t, h = P->h;
        const int coeffs = P->coeffs;
        pthread_mutex_unlock(&P->lock);
        take_units(P, base, limit, t, h, coeffs);
    }
}

/* every unit steps [t, t + h], in parallel; the failure reported is the first
 * unit's in unit order, as the serial loop would have met it */
static int parallel_step(fl_pool *P, double t, double h, int coeffs, fl_failure *f) {
    fl_system *S = P->S;
    pthread_mutex_lock(&P->lock);
    P->t = t; P->h = h; P->coeffs = coeffs;
    P->base = P->limit;  /* every ticket before was taken and its unit is done */
    P->limit = P->base + S->n_units;
    __atomic_store_n(&P->completed, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&P->next, P->base, __ATOMIC_RELEASE);
    P->generation++;
    const long long base = P->base, limit = P->limit;
    pthread_cond_broadcast(&P->go);
    pthread_mutex_unlock(&P->lock);
    take_units(P, base, limit, t, h, coeffs);
    pthread_mutex_lock(&P->lock);
    while (__atomic_load_n(&P->completed, __ATOMIC_ACQUIRE) < S->n_units) pthread_cond_wait(&P->done, &P->lock);
    pthread_mutex_unlock(&P->lock);
    for (int i = 0; i < S->n_units; i++)
        if (S->unit_fail[i].unit >= 0) {
            *f = S->unit_fail[i];
            return 1;
        }
    return 0;
}

/* -- real time --------------------------------------------------------------------- */
static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* wait until simulated time t is due on the wall clock; a step that ends after
 * it is an overrun (counted, with the worst lag) */
static void pace(fl_system *S, double t) {
    const double due = S->wall0 + (t - S->t_start) / S->realtime;
    const double now = monotonic();
    if (now > due) {
        S->overruns++;
        if (now - due > S->worst_lag) S->worst_lag = now - due;
        return;
    }
    /* in slices of at most 50 ms, so that a stop request is heard while waiting */
    for (double at = now; at < due && !*S->ctl->stop; at = monotonic()) {
        const double until = due - at > 0.05 ? at + 0.05 : due;
        struct timespec ts;
        ts.tv_sec = (time_t)until;
        ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}

/* -- the loop ---------------------------------------------------------------------- */
#define CHECK(expr)                                                                    \
    do {                                                                               \
        if (expr) {                                                                    \
            S->fail.step = k;                                                          \
            goto out;                                                                  \
        }                                                                              \
    } while (0)

/* Runs steps k = k_begin .. k_end - 1 of the n_steps from t0 to stop (the state at
 * t_{k_begin} is where the units are); returns the step reached (k_end unless a
 * call failed or a unit asked to stop, described in S->fail). */
int fl_run(fl_system *S, int k_begin, int k_end, int n_steps, double t0, double stop, double H) {
    const double span = stop - t0;
    double t = (k_begin == 0) ? t0 : t0 + (double)k_begin * span / (double)n_steps;
    fl_failure *f = &S->fail;
    int k = k_begin;
    fl_pool pool;
    pthread_t tids[64];
    int n_started = 0;
    const int parallel = S->threads > 1 && !S->gauss_seidel;
    if (parallel) {
        memset(&pool, 0, sizeof pool);
        pool.S = S;
        pthread_mutex_init(&pool.lock, NULL);
        pthread_cond_init(&pool.go, NULL);
        pthread_cond_init(&pool.done, NULL);
        for (int w = 1; w < S->threads && w < 64; w++) {
            if (pthread_create(&tids[w], NULL, worker_main, &pool) != 0) break;
            n_started++;
        }
        if (n_started != S->threads - 1) S->threads = n_started + 1;  /* fewer threads than asked */
    }
    (void)H; /* the step is the difference of two counted points */
    f->unit = -1;
    for (k = k_begin; k < k_end; k++) {
        if (*S->ctl->stop) break;  /* a stop was requested: end between two steps */
        /* both points counted, never accumulated; h is their difference, so that
           t + h is t_next to the bit (as in the Python loop) */
        const double t_next = (k == n_steps - 1) ? stop : t0 + (double)(k + 1) * span / (double)n_steps;
        const double h = t_next - t;
        if (S->gauss_seidel) {
            for (int i = 0; i < S->n_units; i++) {
                const int ui = S->order[i];
                fl_unit *u = &S->units[ui];
                if (u->n_in_conn) {
                    set_inputs(S, u);
                    CHECK(push(S, ui, t, f));
                }
                CHECK(step_unit(S, ui, t, h, 0, f));
                CHECK(pull(S, ui, t_next, f));
            }
        } else {
            int coeffs = S->extrapolation > 0;
            if (coeffs && !(k == 0 && S->startup)) coefficients(S);
            if (parallel) {
                CHECK(parallel_step(&pool, t, h, coeffs, f));
            } else {
                for (int i = 0; i < S->n_units; i++) CHECK(step_unit(S, i, t, h, coeffs, f));
            }
        }
        t = t_next;
        /* Jacobi: the exchange at the new time; Gauss-Seidel has already set and
           read every unit once in this step (and adds the exchange for its algebraic loops) */
        if (!S->gauss_seidel || S->gs_exchange) CHECK(exchange(S, t, f));
        double *row = S->rows + (size_t)k * (size_t)(1 + S->n_rec);
        row[0] = t;
        for (int c = 0; c < S->n_rec; c++)
            if (S->rec[2 * c] >= 0) row[1 + c] = S->units[S->rec[2 * c]].y[S->rec[2 * c + 1]];
            else if (S->rec[2 * c] == -2) row[1 + c] = *S->rec_ptr[c];
        CHECK(record_getters(S, row + 1, t, f));
        if (S->extrapolation > 0) push_history(S, t);
        S->ctl->reached = k + 1;
        for (int c = 0; c < S->n_chk; c++) {  /* the row is kept, then the run ends (as Master._check_finite) */
            const int ui = S->chk[2 * c];
            if (!isfinite(S->units[ui].y[S->chk[2 * c + 1]])) {
                failed(f, ui, C_NAN, 0, c, t, 0.0);
                S->fail.step = k++;
                goto out;
            }
        }
        if (S->realtime > 0.0) pace(S, t);
    }
out:
    if (parallel) {
        pthread_mutex_lock(&pool.lock);
        pool.quit = 1;
        pthread_cond_broadcast(&pool.go);
        pthread_mutex_unlock(&pool.lock);
        for (int w = 1; w <= n_started; w++) pthread_join(tids[w], NULL);
        pthread_mutex_destroy(&pool.lock);
        pthread_cond_destroy(&pool.go);
        pthread_cond_destroy(&pool.done);
    }
    return k;
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastloop",
                                    "C co-simulation loop, loaded with ctypes", -1, NULL};

PyMODINIT_FUNC PyInit__fastloop(void) { return PyModule_Create(&module); }
