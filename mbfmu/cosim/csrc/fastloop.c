/* Fixed-step Jacobi and Gauss-Seidel co-simulation loops over FMI 2.0 FMUs, in C.
 *
 * The same semantics as mbfmu.cosim.master's Python loop (counted time,
 * exchange after every step in the precomputed order, outputs recorded into
 * a preallocated row buffer), calling the FMUs' own fmi2SetReal, fmi2GetReal
 * and fmi2DoStep through the function pointers fmpy loaded. Loaded with
 * ctypes (mbfmu/cosim/fast_loop.py); the Python module entry point below only
 * lets setuptools build it as an extension. Compiled with -ffp-contract=off:
 * the time points must be the bit-exact doubles the Python loop computes. */
#include <Python.h>
#include <stddef.h>
#include <string.h>

typedef int (*set_real_t)(void *, const unsigned int *, size_t, const double *);
typedef int (*get_real_t)(void *, const unsigned int *, size_t, double *);
typedef int (*do_step_t)(void *, double, double, int);

typedef struct {
    void *component;
    set_real_t set_real;
    get_real_t get_real;
    do_step_t do_step;
    int no_prior;              /* noSetFMUStatePriorToCurrentPoint */
    int n_push;                /* connected Real inputs, sent in one fmi2SetReal */
    const unsigned int *push_vr;
    const int *push_idx;       /* their positions in u */
    double *push_buf;
    double *u;                 /* the unit's input buffer (inputs order) */
    int n_out;                 /* all outputs, Real, read in one fmi2GetReal */
    const unsigned int *out_vr;
    double *y;                 /* the unit's output buffer */
    int n_in_conn;             /* incoming connections: (dst index in u, source unit, source index in y) */
    const int *in_conn;
} fl_unit;

/* What failed: call 0 fmi2DoStep, 1 fmi2SetReal, 2 fmi2GetReal (unit -1: none,
 * the loop stopped because *stop was set). */
typedef struct {
    int unit, call, status, step;
} fl_failure;

/* Shared with the run's watchdog thread, which reads it while this loop may be
 * stuck inside an FMU call: stop is set by it (checked before every step),
 * reached counts the rows written, unit is the unit of the current call. */
typedef struct {
    volatile int *stop;
    volatile int reached;
    volatile int unit;
} fl_control;

static void set_inputs(fl_unit *units, fl_unit *u) {
    for (int c = 0; c < u->n_in_conn; c++) {
        const int *e = u->in_conn + 3 * c;
        u->u[e[0]] = units[e[1]].y[e[2]];
    }
}

static int push(fl_unit *u) {
    for (int m = 0; m < u->n_push; m++) u->push_buf[m] = u->u[u->push_idx[m]];
    return u->set_real(u->component, u->push_vr, (size_t)u->n_push, u->push_buf);
}

static int pull(fl_unit *u) {
    return u->get_real(u->component, u->out_vr, (size_t)u->n_out, u->y);
}

#define CHECK(expr, which, callno)                                            \
    do {                                                                       \
        ctl->unit = (which);                                                   \
        int s_ = (expr);                                                       \
        if (s_ > 1) {                                                          \
            fail->unit = (which); fail->call = (callno); fail->status = s_;    \
            fail->step = k;                                                    \
            return k;                                                          \
        }                                                                      \
    } while (0)

/* Runs steps k = k_begin .. k_end - 1 of the n_steps from t0 to stop (the
 * state at t_{k_begin} is where the units are); returns the step reached
 * (k_end unless a call failed, described in *fail).
 *
 * pre_pull:   units whose outputs are read first in an exchange
 * plan:       (unit, read outputs again) per exchange entry, in order
 * order:      the Gauss-Seidel stepping order (gauss_seidel != 0)
 * rec:        (unit, output index) per recorded column after time
 * rows:       n_steps rows of 1 + n_rec doubles; step k writes row k
 * ctl:        shared with the watchdog thread (see fl_control) */
int fl_run(fl_unit *units, int n_units, const int *pre_pull, int n_pre, const int *plan, int n_plan,
           int gauss_seidel, const int *order, int k_begin, int k_end, int n_steps, double t0, double stop,
           double H,
           const int *rec, int n_rec, double *rows, fl_failure *fail, fl_control *ctl) {
    const double span = stop - t0;
    (void)H; /* the step is the difference of two counted points */
    double t = (k_begin == 0) ? t0 : t0 + (double)k_begin * span / (double)n_steps;
    int k;
    fail->unit = -1;
    for (k = k_begin; k < k_end; k++) {
        if (*ctl->stop) return k;  /* a stop was requested: end between two steps */
        /* both points counted, never accumulated; h is their difference, so that
           t + h is t_next to the bit (as in the Python loop) */
        const double t_next = (k == n_steps - 1) ? stop : t0 + (double)(k + 1) * span / (double)n_steps;
        const double h = t_next - t;
        if (gauss_seidel) {
            for (int i = 0; i < n_units; i++) {
                fl_unit *u = &units[order[i]];
                if (u->n_in_conn) {
                    set_inputs(units, u);
                    CHECK(push(u), order[i], 1);
                }
                CHECK(u->do_step(u->component, t, h, u->no_prior), order[i], 0);
                CHECK(pull(u), order[i], 2);
            }
        } else {
            for (int i = 0; i < n_units; i++)
                CHECK(units[i].do_step(units[i].component, t, h, units[i].no_prior), i, 0);
        }
        t = t_next;
        /* Jacobi: the exchange at the new time; Gauss-Seidel has already set and
           read every unit once in this step (no algebraic loop on this path) */
        if (!gauss_seidel) {
            for (int i = 0; i < n_pre; i++) CHECK(pull(&units[pre_pull[i]]), pre_pull[i], 2);
            for (int p = 0; p < n_plan; p++) {
                fl_unit *u = &units[plan[2 * p]];
                set_inputs(units, u);
                CHECK(push(u), plan[2 * p], 1);
                if (plan[2 * p + 1]) CHECK(pull(u), plan[2 * p], 2);
            }
        }
        double *row = rows + (size_t)k * (size_t)(1 + n_rec);
        row[0] = t;
        for (int c = 0; c < n_rec; c++) row[1 + c] = units[rec[2 * c]].y[rec[2 * c + 1]];
        ctl->reached = k + 1;
    }
    return k;
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastloop",
                                    "C co-simulation loop, loaded with ctypes", -1, NULL};

PyMODINIT_FUNC PyInit__fastloop(void) { return PyModule_Create(&module); }
