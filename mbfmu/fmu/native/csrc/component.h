/*
 * One FMU instance of the native runtime as FMI 2 (fmi2.c) and FMI 3
 * (fmi3.c) see it: the running plant (mbn_instance), its Model Exchange
 * bookkeeping (model_exchange.h), the interface type, the state of the FMI
 * state machine and the host's logger. Both interfaces call the functions
 * below, so values, steps, checks and messages are one implementation.
 *
 * Statuses are FMI's numbers (equal in FMI 2 and 3): OK 0, Warning 1,
 * Discard 2, Error 3, Fatal 4.
 *
 * State machine (FMI 2.0 sections 3.2.3 and 4.2.4, FMI 3.0 section 3.3):
 * every entry point names the states it is allowed in; a call in another
 * state returns Error with a log message naming the call and the state, and
 * changes nothing. A call that refuses its arguments (an unknown value
 * reference, a value out of range, a parameter the runtime cannot re-pack)
 * changes nothing and leaves the instance in its state. A step or a model
 * evaluation that fails (the integrator, a singular inertia, a non-finite
 * state) moves the instance to the error state: the values can still be
 * read, and a saved FMU state restored (back to the state the instance was
 * in), or the instance reset or freed. Out of memory is Fatal.
 *
 * Value references (scalar indices): inputs, parameters, outputs, states,
 * derivatives of the continuous states (native.h), as unsigned numbers.
 *
 * Start values of the states (initial="exact" in the model description, as
 * a Modelica tool exports states with fixed start values): a state set in
 * the instantiated state or initialization mode is kept; every state not
 * set starts where the parameters put it (the plant's initial state, an
 * initial rate parameter, say). A set state wins over the parameters, also
 * over a parameter set after it (re-packing re-imposes the set states until
 * the first step). After initialization a state is refused by name, as are
 * a value that is not finite or outside the state's declared bounds (a
 * satellite's latch flag: [0, 1], engaged above 0.5). A restored
 * FMU state, or a reset, forgets the set start values.
 */
#ifndef MBFMU_COMPONENT_H
#define MBFMU_COMPONENT_H

#include <stddef.h>

#include "model_exchange.h"

enum { MBN_OK = 0, MBN_WARNING = 1, MBN_DISCARD = 2, MBN_ERROR = 3, MBN_FATAL = 4 };
enum { MBN_CS = 0, MBN_ME = 1 };

/* states of the state machine (bits) */
enum {
    MBN_S_INSTANTIATED = 1,
    MBN_S_INIT = 2,          /* initialization mode */
    MBN_S_EVENT = 4,         /* ME event mode */
    MBN_S_CONT = 8,          /* ME continuous-time mode */
    MBN_S_STEP = 16,         /* CS step complete (initialized) */
    MBN_S_TERMINATED = 32,
    MBN_S_ERROR = 64,
    MBN_S_FATAL = 128,
    MBN_S_CONFIG = 256       /* FMI 3 configuration mode */
};
#define MBN_S_ANY (MBN_S_CONFIG | MBN_S_INSTANTIATED | MBN_S_INIT | MBN_S_EVENT | MBN_S_CONT | MBN_S_STEP | MBN_S_TERMINATED | \
                   MBN_S_ERROR)
#define MBN_S_RUNNING (MBN_S_EVENT | MBN_S_CONT | MBN_S_STEP)

/* the host's logger: status, message (plain text, no format) */
typedef void (*mbn_log_fn)(void *host, int status, const char *message);

typedef struct {
    mbn_instance *in;
    mbn_me me;
    int type;          /* MBN_CS or MBN_ME */
    int state;         /* MBN_S_* */
    int state_before_error;
    int fmi;           /* 2 or 3, for messages */
    mbn_log_fn log;
    void *host;
    char *name;
    int logging;
    double *xstart;          /* (nx) start values of the states set before initialization ends */
    unsigned char *xset;     /* (nx) 1 where xstart holds a set start value */
} mbn_component;

/* a new component (NULL: out of memory, reported through log) */
mbn_component *mbn_component_new(int fmi, int type, const char *name, mbn_log_fn log, void *host, int logging);
void mbn_component_free(mbn_component *c);

/* report through the host's logger (printf format) */
void mbn_report(mbn_component *c, int status, const char *fmt, ...);
/* 0 if the call fn is allowed in the current state (mask of MBN_S_*), else
 * reported, -1; the interface type too (types: 1 CS, 2 ME, 3 both) */
int mbn_allowed(mbn_component *c, unsigned mask, int types, const char *fn);
/* a failed evaluation: into the error state; returns MBN_ERROR */
int mbn_fail(mbn_component *c);

/* value references */
unsigned mbn_nvars(const mbn_data *D);
const char *mbn_var_name(const mbn_data *D, unsigned vr);
/* 0 if vr indexes a variable, else reported, -1 */
int mbn_check_vr(mbn_component *c, unsigned vr);
/* the value of variable vr (checked); 0, or MBN_ERROR if a derivative could
 * not be evaluated (reported) */
int mbn_get(mbn_component *c, unsigned vr, double *value);
/* set n values (inputs, parameters; states as start values before
 * initialization ends) as one call: a status */
int mbn_set(mbn_component *c, const unsigned *vr, size_t n, const double *value);

/* life cycle */
int mbn_setup(mbn_component *c, int tol_defined, double tol, double start);
int mbn_enter_init(mbn_component *c);
int mbn_exit_init(mbn_component *c);
int mbn_terminate(mbn_component *c);
int mbn_reset(mbn_component *c);

/* CS: a step from t of size h (s) */
int mbn_do_step(mbn_component *c, double t, double h);

/* ME */
int mbn_set_time(mbn_component *c, double t);
int mbn_set_states(mbn_component *c, const double *x, size_t nx);
int mbn_get_states(mbn_component *c, double *x, size_t nx);
int mbn_get_derivatives(mbn_component *c, double *dx, size_t nx);
int mbn_get_indicators(mbn_component *c, double *z, size_t nz);
int mbn_get_nominals(mbn_component *c, double *x, size_t nx);
/* event mode: the events at the current time; *x_changed, *next_time
 * (INFINITY: none) */
int mbn_new_discrete_states(mbn_component *c, int *x_changed, double *next_time);
int mbn_enter_event_mode(mbn_component *c);
int mbn_enter_continuous_mode(mbn_component *c);
int mbn_completed_step(mbn_component *c, int *enter_event);

/* directional derivatives (dirder.c, when compiled in: native.h then
 * defines MBN_DD_INEXACT): sens[k] = sum_j d unknown[k] / d known[j] seed[j]
 * with unknowns outputs or state derivatives and knowns inputs or continuous
 * states (scalar value references); with adjoint, sens[j] = sum_k d
 * unknown[k] / d known[j] seed[k]. A status (refused, saying why, where the
 * plant has no exact derivatives or dirder.c is not in this build). */
int mbn_directional(mbn_component *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                    size_t nknown, const double *seed, double *sens, int adjoint);

/* FMU state: an opaque copy the host holds */
typedef struct {
    size_t size;
    int state;         /* the state machine's state when saved */
    unsigned char bytes[];
} mbn_saved;
int mbn_get_state(mbn_component *c, mbn_saved **saved);
int mbn_set_state(mbn_component *c, const mbn_saved *saved);
int mbn_free_state(mbn_component *c, mbn_saved **saved);
int mbn_serialized_size(mbn_component *c, const mbn_saved *saved, size_t *size);
int mbn_serialize(mbn_component *c, const mbn_saved *saved, unsigned char *bytes, size_t size);
int mbn_deserialize(mbn_component *c, const unsigned char *bytes, size_t size, mbn_saved **saved);

#endif
