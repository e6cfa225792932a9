/*
 * The native controller FMU instance shared by the FMI 2 and FMI 3
 * interfaces (ctrl_component.h).
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl_component.h"

#define NU (MBC_FMU.desc->nu)
#define NY (MBC_FMU.desc->ny)
#define NX (MBC_FMU.desc->nx)
#define NP (MBC_FMU.desc->np)
#define MAX_PARAMETERS 64 /* mbfmu.fmu.native.controller.MAX_PARAMETERS */

unsigned cc_nvars(void) {
    return (unsigned)(NU + NY + NX + NP);
}

const char *cc_var_name(unsigned k) {
    return k < cc_nvars() ? MBC_FMU.names[k] : "?";
}

void cc_report(cc_inst *f, int status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (f && f->log) f->log(f->host, status, msg);
}

static const char *state_name(int s) {
    switch (s) {
    case CS_INSTANTIATED: return "instantiated";
    case CS_INIT: return "initialization mode";
    case CS_STEP: return "step mode";
    case CS_TERMINATED: return "terminated";
    default: return "error";
    }
}

int cc_allowed(cc_inst *f, int mask, const char *fn) {
    if (f->state & mask) return 1;
    cc_report(f, CC_ERROR, "%s is not allowed in the %s state", fn, state_name(f->state));
    return 0;
}

cc_inst *cc_new(int fmi, const char *name, cc_log_fn log, void *host, int logging) {
    cc_inst tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.log = log;
    tmp.host = host;
    tmp.fmi = fmi;
    snprintf(tmp.name, sizeof tmp.name, "%s", name ? name : "");
    cc_inst *f = calloc(1, sizeof *f);
    mbc_ctrl *ctl = f ? mbc_new(MBC_FMU.desc) : NULL;
    if (!ctl) {
        free(f);
        cc_report(&tmp, CC_FATAL, "instantiating %s: out of memory", MBC_FMU.model);
        return NULL;
    }
    *f = tmp;
    f->c = ctl;
    f->logging = logging;
    if (NU) memcpy(ctl->u, MBC_FMU.u0, (size_t)NU * sizeof *ctl->u);
    f->state = CS_INSTANTIATED;
    return f;
}

void cc_free(cc_inst *f) {
    if (!f) return;
    mbc_free(f->c);
    free(f);
}

int cc_setup(cc_inst *f, double start) {
    f->t = start;
    return CC_OK;
}

int cc_enter_init(cc_inst *f) {
    f->state = CS_INIT;
    return CC_OK;
}

int cc_exit_init(cc_inst *f) {
    if (f->scheduled) mbc_outputs(f->c); /* the outputs until the first tick */
    f->state = CS_STEP;
    return CC_OK;
}

int cc_terminate(cc_inst *f) {
    f->state = CS_TERMINATED;
    return CC_OK;
}

int cc_reset(cc_inst *f) {
    mbc_reset(f->c, NULL);
    if (NU) memcpy(f->c->u, MBC_FMU.u0, (size_t)NU * sizeof *f->c->u);
    if (NP) memcpy(f->c->p, MBC_FMU.desc->p0, (size_t)NP * sizeof *f->c->p);
    f->t = 0.0;
    f->state = CS_INSTANTIATED;
    return CC_OK;
}

int cc_get(cc_inst *f, const unsigned k[], size_t n, double value[], const char *fn) {
    for (size_t j = 0; j < n; ++j)
        if (k[j] >= cc_nvars()) {
            cc_report(f, CC_ERROR, "%s: no Float64 variable has index %u", fn, k[j]);
            return CC_ERROR;
        }
    if (!f->scheduled || f->state == CS_INIT) {
        mbc_outputs(f->c);
        if (f->c->guard >= 0) {
            cc_report(f, CC_ERROR, "%s: at t = %.17g s the inputs leave the branch %s was traced on: %s", fn, f->t,
                      MBC_FMU.model, MBC_FMU.desc->tape->g_text[f->c->guard]);
            return CC_ERROR;
        }
    }
    for (size_t j = 0; j < n; ++j) {
        unsigned r = k[j];
        if (r < (unsigned)NU) value[j] = f->c->u[r];
        else if ((r -= NU) < (unsigned)NY) value[j] = f->c->y[r];
        else if ((r -= NY) < (unsigned)NX) value[j] = f->c->x[r];
        else value[j] = f->c->p[r - NX];
    }
    return CC_OK;
}

int cc_set(cc_inst *f, const unsigned k[], size_t n, const double value[], const char *fn) {
    double p[MAX_PARAMETERS];
    if (NP) memcpy(p, f->c->p, (size_t)NP * sizeof *p);
    int params = 0;
    for (size_t j = 0; j < n; ++j) {
        unsigned r = k[j];
        int is_input = r < (unsigned)NU, is_output = !is_input && r < (unsigned)(NU + NY);
        int is_state = !is_input && !is_output && r < (unsigned)(NU + NY + NX);
        if (r >= cc_nvars()) {
            cc_report(f, CC_ERROR, "%s: no variable has index %u", fn, r);
            return CC_ERROR;
        }
        if (is_output) {
            cc_report(f, CC_ERROR, "%s: %s is an output; it cannot be set", fn, cc_var_name(r));
            return CC_ERROR;
        }
        if (is_state && !(f->state & (CS_INSTANTIATED | CS_INIT))) {
            cc_report(f, CC_ERROR, "%s: state %s is set only before initialization ends", fn, cc_var_name(r));
            return CC_ERROR;
        }
        if ((is_input || is_state) && !isfinite(value[j])) {
            cc_report(f, CC_ERROR, "%s: %s %s = %g at t = %.17g s is not finite", fn, is_input ? "input" : "state",
                      cc_var_name(r), value[j], f->t);
            return CC_ERROR;
        }
        if (!is_input && !is_state) {
            p[r - NU - NY - NX] = value[j];
            params = 1;
        }
    }
    const char *why = "";
    int bad = params ? mbc_check_parameters(MBC_FMU.desc, p, &why) : 0;
    if (bad) {
        cc_report(f, CC_ERROR, "%s: parameter %s = %g %s", fn, cc_var_name((unsigned)(NU + NY + NX + bad - 1)),
                  p[bad - 1], why);
        return CC_ERROR;
    }
    for (size_t j = 0; j < n; ++j) {
        unsigned r = k[j];
        if (r < (unsigned)NU) f->c->u[r] = value[j];
        else if (r < (unsigned)(NU + NY + NX)) f->c->x[r - NU - NY] = value[j];
    }
    if (params) memcpy(f->c->p, p, (size_t)NP * sizeof *p);
    return CC_OK;
}

int cc_do_step(cc_inst *f, double t, double h, const char *fn) {
    if (!(h > 0.0) || !isfinite(h)) {
        cc_report(f, CC_ERROR, "%s: step %g s at t = %.17g s must be a positive finite number", fn, h, t);
        return CC_ERROR;
    }
    /* the master's step is the difference of two rounded communication points: near t = 8 s a
       1 ms step is 1 ms +- 2e-15 s, beyond mbc_step's 1e-12 relative tolerance; a step within that
       rounding of a whole number of samples is those samples */
    const double dt = MBC_FMU.desc->dt, n = dt > 0.0 ? nearbyint(h / dt) : 0.0;
    if (n >= 1.0 && fabs(h - n * dt) <= 4.0 * DBL_EPSILON * (fabs(t) + fabs(t + h))) h = n * dt;
    int rc = mbc_step(f->c, h);
    if (rc == MBC_E_STEP) {
        cc_report(f, CC_ERROR, "%s: %s is discrete with sample time %.17g s; a step of %.17g s (at t = %.17g s) "
                  "is not a whole number of samples", fn, MBC_FMU.model, MBC_FMU.desc->dt, h, t);
        return CC_ERROR;
    }
    if (rc == MBC_E_GUARD) {
        cc_report(f, CC_ERROR, "%s: at t = %.17g s the inputs and state leave the branch %s was traced on: %s", fn,
                  t, MBC_FMU.model, MBC_FMU.desc->tape->g_text[f->c->guard]);
        f->state = CS_ERROR; /* a step of several samples may have taken some */
        return CC_ERROR;
    }
    if (rc) {
        cc_report(f, CC_ERROR, "%s: %s at t = %.17g s, step %.17g s", fn,
                  rc == MBC_E_EXPM ? "the matrix exponential of the zero-order hold is not finite"
                                   : "the state is not finite", t, h);
        f->state = CS_ERROR;
        return CC_ERROR;
    }
    f->t = t + h;
    return CC_OK;
}

int cc_tick(cc_inst *f, double t, const char *fn) {
    mbc_outputs(f->c);
    int rc = mbc_step(f->c, MBC_FMU.desc->dt);
    if (rc) {
        cc_report(f, CC_ERROR, "%s: %s after the tick at t = %.17g s", fn,
                  rc == MBC_E_GUARD ? "the inputs and state leave the branch the system was traced on"
                                    : "the state is not finite", t);
        f->state = CS_ERROR;
        return CC_ERROR;
    }
    f->t = t;
    return CC_OK;
}

/* ---- FMU state ---------------------------------------------------------------------- */

#define SAVED_MAGIC 0x4d424331u /* "MBC1" */
typedef struct {
    unsigned magic;
    int state;
    double t;
    double v[]; /* x (nx), u (nu), p (np), y (ny: the latched outputs of Scheduled Execution) */
} saved;

size_t cc_state_size(void) {
    return sizeof(saved) + (size_t)(NX + NU + NP + NY) * sizeof(double);
}

int cc_get_state(cc_inst *f, void **out, const char *fn) {
    saved *r = *out ? *out : malloc(cc_state_size());
    if (!r) {
        cc_report(f, CC_FATAL, "%s: out of memory", fn);
        return CC_FATAL;
    }
    r->magic = SAVED_MAGIC;
    r->state = f->state;
    r->t = f->t;
    memcpy(r->v, f->c->x, (size_t)NX * sizeof(double));
    memcpy(r->v + NX, f->c->u, (size_t)NU * sizeof(double));
    memcpy(r->v + NX + NU, f->c->p, (size_t)NP * sizeof(double));
    memcpy(r->v + NX + NU + NP, f->c->y, (size_t)NY * sizeof(double));
    *out = r;
    return CC_OK;
}

int cc_set_state(cc_inst *f, const void *in, const char *fn) {
    const saved *r = in;
    if (!r || r->magic != SAVED_MAGIC) {
        cc_report(f, CC_ERROR, "%s: not a state of this FMU", fn);
        return CC_ERROR;
    }
    f->state = r->state;
    f->t = r->t;
    memcpy(f->c->x, r->v, (size_t)NX * sizeof(double));
    memcpy(f->c->u, r->v + NX, (size_t)NU * sizeof(double));
    memcpy(f->c->p, r->v + NX + NU, (size_t)NP * sizeof(double));
    memcpy(f->c->y, r->v + NX + NU + NP, (size_t)NY * sizeof(double));
    return CC_OK;
}

void cc_free_state(void **s) {
    if (s) {
        free(*s);
        *s = NULL;
    }
}

int cc_serialize(cc_inst *f, const void *s, unsigned char *bytes, size_t size, const char *fn) {
    if (!s || size != cc_state_size()) {
        cc_report(f, CC_ERROR, "%s: %lu bytes given, the state takes %lu", fn, (unsigned long)size,
                  (unsigned long)cc_state_size());
        return CC_ERROR;
    }
    memcpy(bytes, s, size);
    return CC_OK;
}

int cc_deserialize(cc_inst *f, const unsigned char *bytes, size_t size, void **out, const char *fn) {
    saved head;
    if (size != cc_state_size() || (memcpy(&head, bytes, sizeof head), head.magic != SAVED_MAGIC) ||
        !(head.state & CS_ANY) || (head.state & (head.state - 1))) {
        cc_report(f, CC_ERROR, "%s: %lu bytes are not a serialized state of this FMU", fn, (unsigned long)size);
        return CC_ERROR;
    }
    saved *r = malloc(size);
    if (!r) {
        cc_report(f, CC_FATAL, "%s: out of memory", fn);
        return CC_FATAL;
    }
    memcpy(r, bytes, size);
    *out = r;
    return CC_OK;
}
