/*
 * One native controller FMU instance as FMI 2 (ctrl_fmi2.c) and FMI 3
 * (ctrl_fmi3.c) see it: the controller (controller.h), the FMI state
 * machine, the time and the host's logger. Both interfaces call the
 * functions below, so values, steps, checks and messages are one
 * implementation.
 *
 * Statuses are FMI's numbers (equal in FMI 2 and 3): OK 0, Warning 1,
 * Discard 2, Error 3, Fatal 4. A refused call (a variable that cannot be
 * set in this state, a parameter out of range, a step that is not a whole
 * number of a discrete controller's samples) is reported, changes nothing
 * and returns Error. A step whose state would not be finite moves the
 * instance to the error state. Out of memory is Fatal.
 *
 * Scalar indices: inputs [0, nu), outputs [nu, nu + ny), states
 * [nu + ny, nu + ny + nx), parameters after them (ctrl_fmu.h); FMI 2's value
 * references are these, FMI 3's are these plus 1 (0 is the time; the clock
 * of a Scheduled Execution FMU is the last, cc_nvars() + 1).
 */
#ifndef MBFMU_CTRL_COMPONENT_H
#define MBFMU_CTRL_COMPONENT_H

#include <stddef.h>

#include "ctrl_fmu.h"

enum { CC_OK = 0, CC_WARNING = 1, CC_DISCARD = 2, CC_ERROR = 3, CC_FATAL = 4 };
enum { CS_INSTANTIATED = 1, CS_INIT = 2, CS_STEP = 4, CS_TERMINATED = 8, CS_ERROR = 16 };
#define CS_ANY (CS_INSTANTIATED | CS_INIT | CS_STEP | CS_TERMINATED | CS_ERROR)

typedef void (*cc_log_fn)(void *host, int status, const char *message);

typedef struct {
    mbc_ctrl *c;
    int state, logging, fmi;
    int scheduled;   /* FMI 3 Scheduled Execution: the outputs are those latched at the last clock tick */
    double t;
    cc_log_fn log;
    void *host;
    char name[128];
} cc_inst;

/* NULL: out of memory (reported through log) */
cc_inst *cc_new(int fmi, const char *name, cc_log_fn log, void *host, int logging);
void cc_free(cc_inst *f);
#if defined(__GNUC__)
void cc_report(cc_inst *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#else
void cc_report(cc_inst *f, int status, const char *fmt, ...);
#endif
/* 1 if fn is allowed in the current state (mask of CS_*), else reported, 0 */
int cc_allowed(cc_inst *f, int mask, const char *fn);
unsigned cc_nvars(void);
const char *cc_var_name(unsigned k);

int cc_setup(cc_inst *f, double start);          /* time of the first step */
int cc_enter_init(cc_inst *f);
int cc_exit_init(cc_inst *f);
int cc_terminate(cc_inst *f);
int cc_reset(cc_inst *f);
/* n values of scalars k[] (checked; outputs computed from the current inputs) */
int cc_get(cc_inst *f, const unsigned k[], size_t n, double value[], const char *fn);
/* n values as one call: inputs, states (before initialization ends), parameters */
int cc_set(cc_inst *f, const unsigned k[], size_t n, const double value[], const char *fn);
int cc_do_step(cc_inst *f, double t, double h, const char *fn);
/* Scheduled Execution: one tick of the controller's clock at time t (s): the
 * outputs of the current state and inputs are latched, then the state
 * advances one sample */
int cc_tick(cc_inst *f, double t, const char *fn);

/* the FMU state: an opaque copy the host holds (t, x, u, p and the machine's state) */
int cc_get_state(cc_inst *f, void **saved, const char *fn);
int cc_set_state(cc_inst *f, const void *saved, const char *fn);
void cc_free_state(void **saved);
size_t cc_state_size(void);
int cc_serialize(cc_inst *f, const void *saved, unsigned char *bytes, size_t size, const char *fn);
int cc_deserialize(cc_inst *f, const unsigned char *bytes, size_t size, void **saved, const char *fn);

#endif
