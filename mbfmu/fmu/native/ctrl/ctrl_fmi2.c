/*
 * FMI 2.0 Co-Simulation interface of a native controller FMU (ctrl_fmu.h)
 * over the controller evaluator (controller.h). The types and signatures are
 * those of the FMI 2.0 standard (fmi2TypesPlatform.h, fmi2FunctionTypes.h),
 * declared here.
 *
 * A refused call (a variable that cannot be set in this state, a parameter
 * out of range, a step that is not a whole number of a discrete controller's
 * samples) is
 * reported through the host's logger, changes nothing and returns
 * fmi2Error. A step whose state would not be finite moves the instance to
 * the error state. Out of memory is fmi2Fatal.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl_fmu.h"

#if defined(_WIN32)
#define FMI2_Export __declspec(dllexport)
#else
#define FMI2_Export __attribute__((visibility("default")))
#endif

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
typedef struct {
    fmi2CallbackLogger logger;
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

enum { S_INSTANTIATED = 1, S_INIT = 2, S_STEP = 4, S_TERMINATED = 8, S_ERROR = 16 };
#define S_ANY (S_INSTANTIATED | S_INIT | S_STEP | S_TERMINATED | S_ERROR)

typedef struct {
    mbc_ctrl *c;
    fmi2CallbackFunctions cb;
    char name[128];
    int state, logging;
    double t;
} inst;

#define NU (MBC_FMU.desc->nu)
#define NY (MBC_FMU.desc->ny)
#define NX (MBC_FMU.desc->nx)
#define NP (MBC_FMU.desc->np)
#define NVARS ((unsigned)(NU + NY + NX + NP))

static void report(inst *f, fmi2Status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static void report(inst *f, fmi2Status status, const char *fmt, ...) {
    char msg[1024], esc[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the message is the logger's format: its percent signs are doubled */
    size_t k = 0;
    for (const char *p = msg; *p && k + 2 < sizeof esc; ++p) {
        if (*p == '%') esc[k++] = '%';
        esc[k++] = *p;
    }
    esc[k] = 0;
    if (f && f->cb.logger)
        f->cb.logger(f->cb.componentEnvironment, f->name, status,
                     status >= fmi2Error ? "logStatusError" : "logStatusWarning", esc);
}

static const char *state_name(int s) {
    switch (s) {
    case S_INSTANTIATED: return "instantiated";
    case S_INIT: return "initialization mode";
    case S_STEP: return "step mode";
    case S_TERMINATED: return "terminated";
    default: return "error";
    }
}

static int allowed(inst *f, int mask, const char *fn) {
    if (f->state & mask) return 1;
    report(f, fmi2Error, "%s is not allowed in the %s state", fn, state_name(f->state));
    return 0;
}

static const char *var_name(unsigned vr) {
    return vr < NVARS ? MBC_FMU.names[vr] : "?";
}

/* ---- common ------------------------------------------------------------------------- */

FMI2_Export const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_Export const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_Export fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    (void)n;
    (void)cats;
    ((inst *)c)->logging = on;
    return fmi2OK;
}

FMI2_Export fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                          const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                          fmi2Boolean logging) {
    (void)resources;
    (void)visible;
    inst tmp;
    memset(&tmp, 0, sizeof tmp);
    if (functions) tmp.cb = *functions;
    snprintf(tmp.name, sizeof tmp.name, "%s", name ? name : "");
    if (type != fmi2CoSimulation) {
        report(&tmp, fmi2Error, "fmi2Instantiate: %s is a co-simulation FMU only (no model exchange)", MBC_FMU.model);
        return NULL;
    }
    if (!guid || strcmp(guid, MBC_FMU.guid) != 0) {
        report(&tmp, fmi2Error, "fmi2Instantiate: GUID %s is not this FMU's (%s)", guid ? guid : "(null)",
               MBC_FMU.guid);
        return NULL;
    }
    inst *f = calloc(1, sizeof *f);
    mbc_ctrl *ctl = f ? mbc_new(MBC_FMU.desc) : NULL;
    if (!ctl) {
        free(f);
        report(&tmp, fmi2Fatal, "fmi2Instantiate: out of memory");
        return NULL;
    }
    *f = tmp;
    f->c = ctl;
    f->logging = logging;
    if (NU) memcpy(ctl->u, MBC_FMU.u0, (size_t)NU * sizeof *ctl->u);
    f->state = S_INSTANTIATED;
    return f;
}

FMI2_Export void fmi2FreeInstance(fmi2Component c) {
    inst *f = c;
    if (!f) return;
    mbc_free(f->c);
    free(f);
}

FMI2_Export fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol, fmi2Real start,
                                           fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined;
    (void)tol;
    (void)stop_defined;
    (void)stop;
    inst *f = c;
    if (!allowed(f, S_INSTANTIATED, "fmi2SetupExperiment")) return fmi2Error;
    f->t = start;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    inst *f = c;
    if (!allowed(f, S_INSTANTIATED, "fmi2EnterInitializationMode")) return fmi2Error;
    f->state = S_INIT;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    inst *f = c;
    if (!allowed(f, S_INIT, "fmi2ExitInitializationMode")) return fmi2Error;
    f->state = S_STEP;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2Terminate(fmi2Component c) {
    inst *f = c;
    if (!allowed(f, S_STEP | S_ERROR, "fmi2Terminate")) return fmi2Error;
    f->state = S_TERMINATED;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2Reset(fmi2Component c) {
    inst *f = c;
    if (!allowed(f, S_ANY, "fmi2Reset")) return fmi2Error;
    mbc_reset(f->c, NULL);
    if (NU) memcpy(f->c->u, MBC_FMU.u0, (size_t)NU * sizeof *f->c->u);
    if (NP) memcpy(f->c->p, MBC_FMU.desc->p0, (size_t)NP * sizeof *f->c->p);
    f->t = 0.0;
    f->state = S_INSTANTIATED;
    return fmi2OK;
}

/* ---- values ------------------------------------------------------------------------- */

FMI2_Export fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    inst *f = c;
    if (!allowed(f, S_INIT | S_STEP | S_TERMINATED | S_ERROR, "fmi2GetReal")) return fmi2Error;
    for (size_t k = 0; k < n; ++k)
        if (vr[k] >= NVARS) {
            report(f, fmi2Error, "fmi2GetReal: no variable has value reference %u", vr[k]);
            return fmi2Error;
        }
    mbc_outputs(f->c);
    for (size_t k = 0; k < n; ++k) {
        unsigned r = vr[k];
        if (r < (unsigned)NU) value[k] = f->c->u[r];
        else if ((r -= NU) < (unsigned)NY) value[k] = f->c->y[r];
        else if ((r -= NY) < (unsigned)NX) value[k] = f->c->x[r];
        else value[k] = f->c->p[r - NX];
    }
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    inst *f = c;
    if (!allowed(f, S_INSTANTIATED | S_INIT | S_STEP, "fmi2SetReal")) return fmi2Error;
    double p[64], *pp = NP <= 64 ? p : NULL;
    if (NP && !pp) return fmi2Fatal; /* the build allows at most 64 parameters */
    if (NP) memcpy(p, f->c->p, (size_t)NP * sizeof *p);
    int params = 0;
    for (size_t k = 0; k < n; ++k) {
        unsigned r = vr[k];
        if (r >= NVARS) {
            report(f, fmi2Error, "fmi2SetReal: no variable has value reference %u", r);
            return fmi2Error;
        }
        if (r >= (unsigned)NU && r < (unsigned)(NU + NY)) {
            report(f, fmi2Error, "fmi2SetReal: %s is an output; it cannot be set", var_name(r));
            return fmi2Error;
        }
        if (r >= (unsigned)(NU + NY) && r < (unsigned)(NU + NY + NX) && !(f->state & (S_INSTANTIATED | S_INIT))) {
            report(f, fmi2Error, "fmi2SetReal: state %s is set only before initialization ends", var_name(r));
            return fmi2Error;
        }
        if (r < (unsigned)NU && !isfinite(value[k])) {
            report(f, fmi2Error, "fmi2SetReal: input %s = %g at t = %.17g s is not finite", var_name(r), value[k],
                   f->t);
            return fmi2Error;
        }
        if (r >= (unsigned)(NU + NY) && r < (unsigned)(NU + NY + NX) && !isfinite(value[k])) {
            report(f, fmi2Error, "fmi2SetReal: state %s = %g is not finite", var_name(r), value[k]);
            return fmi2Error;
        }
        if (r >= (unsigned)(NU + NY + NX)) {
            p[r - NU - NY - NX] = value[k];
            params = 1;
        }
    }
    const char *why = "";
    int bad = params ? mbc_check_parameters(MBC_FMU.desc, p, &why) : 0;
    if (bad) {
        report(f, fmi2Error, "fmi2SetReal: parameter %s = %g %s", var_name(NU + NY + NX + bad - 1), p[bad - 1], why);
        return fmi2Error;
    }
    for (size_t k = 0; k < n; ++k) {
        unsigned r = vr[k];
        if (r < (unsigned)NU) f->c->u[r] = value[k];
        else if (r < (unsigned)(NU + NY + NX)) f->c->x[r - NU - NY] = value[k];
    }
    if (params) memcpy(f->c->p, p, (size_t)NP * sizeof *p);
    return fmi2OK;
}

static fmi2Status no_vars(inst *f, const fmi2ValueReference vr[], size_t n, const char *fn) {
    if (!allowed(f, S_ANY, fn)) return fmi2Error;
    if (n == 0) return fmi2OK;
    report(f, fmi2Error, "%s: no variable of this type has value reference %u", fn, vr[0]);
    return fmi2Error;
}

FMI2_Export fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
    (void)v;
    return no_vars(c, vr, n, "fmi2GetInteger");
}
FMI2_Export fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
    (void)v;
    return no_vars(c, vr, n, "fmi2GetBoolean");
}
FMI2_Export fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[]) {
    (void)v;
    return no_vars(c, vr, n, "fmi2GetString");
}
FMI2_Export fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      const fmi2Integer v[]) {
    (void)v;
    return no_vars(c, vr, n, "fmi2SetInteger");
}
FMI2_Export fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      const fmi2Boolean v[]) {
    (void)v;
    return no_vars(c, vr, n, "fmi2SetBoolean");
}
FMI2_Export fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[]) {
    (void)v;
    return no_vars(c, vr, n, "fmi2SetString");
}

/* ---- FMU state: t, x, u, p and the state machine's state ---------------------------- */

#define SAVED_MAGIC 0x4d424331u /* "MBC1" */
typedef struct {
    unsigned magic;
    int state;
    double t;
    double v[]; /* x (nx), u (nu), p (np) */
} saved;

static size_t saved_size(void) {
    return sizeof(saved) + (size_t)(NX + NU + NP) * sizeof(double);
}

FMI2_Export fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) {
    inst *f = c;
    if (!allowed(f, S_ANY, "fmi2GetFMUstate")) return fmi2Error;
    saved *r = *s ? *s : malloc(saved_size());
    if (!r) {
        report(f, fmi2Fatal, "fmi2GetFMUstate: out of memory");
        return fmi2Fatal;
    }
    r->magic = SAVED_MAGIC;
    r->state = f->state;
    r->t = f->t;
    memcpy(r->v, f->c->x, (size_t)NX * sizeof(double));
    memcpy(r->v + NX, f->c->u, (size_t)NU * sizeof(double));
    memcpy(r->v + NX + NU, f->c->p, (size_t)NP * sizeof(double));
    *s = r;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) {
    inst *f = c;
    const saved *r = s;
    if (!allowed(f, S_ANY, "fmi2SetFMUstate")) return fmi2Error;
    if (!r || r->magic != SAVED_MAGIC) {
        report(f, fmi2Error, "fmi2SetFMUstate: not a state of this FMU");
        return fmi2Error;
    }
    f->state = r->state;
    f->t = r->t;
    memcpy(f->c->x, r->v, (size_t)NX * sizeof(double));
    memcpy(f->c->u, r->v + NX, (size_t)NU * sizeof(double));
    memcpy(f->c->p, r->v + NX + NU, (size_t)NP * sizeof(double));
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) {
    (void)c;
    if (s) {
        free(*s);
        *s = NULL;
    }
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *size) {
    (void)c;
    (void)s;
    *size = saved_size();
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte bytes[], size_t size) {
    inst *f = c;
    if (!s || size != saved_size()) {
        report(f, fmi2Error, "fmi2SerializeFMUstate: %zu bytes given, the state takes %zu", size, saved_size());
        return fmi2Error;
    }
    memcpy(bytes, s, size);
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                               fmi2FMUstate *s) {
    inst *f = c;
    saved head;
    if (size != saved_size() || (memcpy(&head, bytes, sizeof head), head.magic != SAVED_MAGIC) ||
        !(head.state & S_ANY)) {
        report(f, fmi2Error, "fmi2DeSerializeFMUstate: %zu bytes are not a serialized state of this FMU", size);
        return fmi2Error;
    }
    saved *r = malloc(size);
    if (!r) {
        report(f, fmi2Fatal, "fmi2DeSerializeFMUstate: out of memory");
        return fmi2Fatal;
    }
    memcpy(r, bytes, size);
    *s = r;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                                    const fmi2ValueReference z[], size_t nz, const fmi2Real dv[],
                                                    fmi2Real dz[]) {
    (void)u;
    (void)nu;
    (void)z;
    (void)nz;
    (void)dv;
    (void)dz;
    report(c, fmi2Error, "fmi2GetDirectionalDerivative: this FMU does not provide directional derivatives");
    return fmi2Error;
}

/* ---- co-simulation ------------------------------------------------------------------ */

FMI2_Export fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                   const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr;
    (void)order;
    (void)value;
    if (n == 0) return fmi2OK;
    report(c, fmi2Error, "fmi2SetRealInputDerivatives: this FMU holds its inputs over a step (no interpolation)");
    return fmi2Error;
}

FMI2_Export fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                    const fmi2Integer order[], fmi2Real value[]) {
    (void)vr;
    (void)order;
    (void)value;
    if (n == 0) return fmi2OK;
    report(c, fmi2Error, "fmi2GetRealOutputDerivatives: this FMU does not provide output derivatives");
    return fmi2Error;
}

FMI2_Export fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    (void)no_prior;
    inst *f = c;
    if (!allowed(f, S_STEP, "fmi2DoStep")) return fmi2Error;
    if (!(h > 0.0) || !isfinite(h)) {
        report(f, fmi2Error, "fmi2DoStep: step %g s at t = %.17g s must be a positive finite number", h, t);
        return fmi2Error;
    }
    int rc = mbc_step(f->c, h);
    if (rc == MBC_E_STEP) {
        report(f, fmi2Error, "fmi2DoStep: %s is discrete with sample time %.17g s; a step of %.17g s (at t = "
               "%.17g s) is not a whole number of samples", MBC_FMU.model, MBC_FMU.desc->dt, h, t);
        return fmi2Error;
    }
    if (rc) {
        report(f, fmi2Error, "fmi2DoStep: %s at t = %.17g s, step %.17g s", rc == MBC_E_EXPM ?
               "the matrix exponential of the zero-order hold is not finite" : "the state is not finite", t, h);
        f->state = S_ERROR;
        return fmi2Error;
    }
    f->t = t + h;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2CancelStep(fmi2Component c) {
    report(c, fmi2Error, "fmi2CancelStep: steps are synchronous; there is nothing to cancel");
    return fmi2Error;
}

static fmi2Status no_status(fmi2Component c, const char *fn) {
    report(c, fmi2Discard, "%s: steps are synchronous; no status to report", fn);
    return fmi2Discard;
}

FMI2_Export fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) {
    (void)s;
    (void)v;
    return no_status(c, "fmi2GetStatus");
}
FMI2_Export fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) {
    inst *f = c;
    if (s == fmi2LastSuccessfulTime) {
        *v = f->t;
        return fmi2OK;
    }
    return no_status(c, "fmi2GetRealStatus");
}
FMI2_Export fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) {
    (void)s;
    (void)v;
    return no_status(c, "fmi2GetIntegerStatus");
}
FMI2_Export fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) {
    (void)s;
    (void)v;
    return no_status(c, "fmi2GetBooleanStatus");
}
FMI2_Export fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) {
    (void)s;
    (void)v;
    return no_status(c, "fmi2GetStringStatus");
}
