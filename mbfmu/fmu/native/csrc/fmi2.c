/*
 * FMI 2.0 co-simulation interface of the native runtime (one plant, data in
 * model_data.c). The types and signatures are those of the FMI 2.0
 * standard (fmi2TypesPlatform.h / fmi2FunctionTypes.h), declared here.
 *
 * Errors are reported through the host's logger with a message naming the
 * variable, value and time, and the call returns fmi2Error; the instance
 * keeps its state. Nothing returns fmi2Fatal except allocation failures.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native.h"

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

enum { ST_INSTANTIATED, ST_INIT, ST_STEP, ST_TERMINATED };

typedef struct {
    mbn_instance *in;
    fmi2CallbackFunctions cb;
    char *name;
    int logging;
    int phase;
} component;

typedef struct {
    size_t size;
    unsigned char bytes[];
} saved_state;

#define COMP(c) ((component *)(c))

static void report(component *c, fmi2Status status, const char *fmt, ...) {
    char msg[1024], esc[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the message is passed as the format (hosts that do not format still
     * read it), so its percent signs are doubled */
    size_t k = 0;
    for (const char *p = msg; *p && k + 2 < sizeof esc; ++p) {
        if (*p == '%') esc[k++] = '%';
        esc[k++] = *p;
    }
    esc[k] = 0;
    if (c && c->cb.logger) {
        const char *cat = status >= fmi2Error ? "logStatusError" : "logStatusWarning";
        c->cb.logger(c->cb.componentEnvironment, c->name, status, cat, esc);
    }
}

static const char *var_name(const mbn_data *D, fmi2ValueReference vr) { return D->names[vr]; }
static int nvars(const mbn_data *D) { return D->nu + D->np + D->ny + D->nx; }

/* ------------------------------------------------------------ inquiry */
FMI2_Export const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_Export const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_Export fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    (void)n; (void)cats;
    if (!c) return fmi2Error;
    COMP(c)->logging = on;
    return fmi2OK;
}

/* ------------------------------------------------------------ life cycle */
FMI2_Export fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                          fmi2String resources, const fmi2CallbackFunctions *cb,
                                          fmi2Boolean visible, fmi2Boolean logging) {
    (void)resources; (void)visible;
    component tmp = {0};
    if (cb) tmp.cb = *cb;
    tmp.name = (char *)(name ? name : "");
    if (type != fmi2CoSimulation) {
        report(&tmp, fmi2Error, "plant %s: this FMU supports co-simulation only", MBN_DATA.plant);
        return NULL;
    }
    if (!guid || strcmp(guid, MBN_DATA.guid)) {
        report(&tmp, fmi2Error, "plant %s: GUID %s does not match this FMU's %s", MBN_DATA.plant,
               guid ? guid : "(null)", MBN_DATA.guid);
        return NULL;
    }
    component *c = calloc(1, sizeof(component));
    if (!c) return NULL;
    c->cb = tmp.cb;
    c->logging = logging;
    c->name = malloc(strlen(tmp.name) + 1);
    c->in = mbn_new(&MBN_DATA);
    if (!c->name || !c->in) {
        report(&tmp, fmi2Fatal, "plant %s: out of memory", MBN_DATA.plant);
        mbn_free(c->in);
        free(c->name);
        free(c);
        return NULL;
    }
    strcpy(c->name, tmp.name);
    return c;
}

FMI2_Export void fmi2FreeInstance(fmi2Component c) {
    if (!c) return;
    mbn_free(COMP(c)->in);
    free(COMP(c)->name);
    free(c);
}

FMI2_Export fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol,
                                           fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
    (void)stop_defined; (void)stop;
    if (!c) return fmi2Error;
    if (!isfinite(start)) {
        report(COMP(c), fmi2Error, "start time %g is not finite", start);
        return fmi2Error;
    }
    if (tol_defined) { /* advance's tolerance (rtol = atol), else the plant's default */
        if (!(isfinite(tol) && tol > 0)) {
            report(COMP(c), fmi2Error, "tolerance %g must be finite and > 0", tol);
            return fmi2Error;
        }
        COMP(c)->in->tolerance = tol;
    }
    COMP(c)->in->t = start;
    COMP(c)->in->y_valid = 0;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    if (!c) return fmi2Error;
    COMP(c)->phase = ST_INIT;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    if (!c) return fmi2Error;
    COMP(c)->phase = ST_STEP;
    COMP(c)->in->y_valid = 0;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2Terminate(fmi2Component c) {
    if (!c) return fmi2Error;
    COMP(c)->phase = ST_TERMINATED;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2Reset(fmi2Component c) {
    if (!c) return fmi2Error;
    mbn_instance *fresh = mbn_new(&MBN_DATA);
    if (!fresh) {
        report(COMP(c), fmi2Fatal, "plant %s: out of memory", MBN_DATA.plant);
        return fmi2Fatal;
    }
    mbn_free(COMP(c)->in);
    COMP(c)->in = fresh;
    COMP(c)->phase = ST_INSTANTIATED;
    return fmi2OK;
}

/* ------------------------------------------------------------ values */
static int check_vr(component *c, fmi2ValueReference vr) {
    if ((int)vr < nvars(&MBN_DATA)) return 0;
    report(c, fmi2Error, "unknown value reference %u (this FMU has 0..%d)", vr, nvars(&MBN_DATA) - 1);
    return -1;
}

FMI2_Export fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    if (!c) return fmi2Error;
    mbn_instance *in = COMP(c)->in;
    const mbn_data *D = in->data;
    fmi2Status st = fmi2OK;
    for (size_t k = 0; k < n; ++k) {
        int r = (int)vr[k];
        if (check_vr(COMP(c), vr[k])) { value[k] = NAN; st = fmi2Error; continue; }
        if (r < D->nu) value[k] = in->u[r];
        else if ((r -= D->nu) < D->np) value[k] = in->p[r];
        else if ((r -= D->np) < D->ny) value[k] = mbn_outputs(in)[r];
        else value[k] = in->x[r - D->ny];
    }
    return st;
}

/* the bound check of mbfmu.signals.Signal.check: 0 or -1 (reported) */
static int check_value(component *c, const mbn_data *D, int vr, const char *kind, double v) {
    const char *unit = D->units[vr][0] ? D->units[vr] : "";
    if (!isfinite(v)) {
        report(c, fmi2Error, "refused: %s %s = %g is not finite at t = %.15g s; it keeps its value",
               kind, var_name(D, vr), v, c->in->t);
        return -1;
    }
    if (v < D->lo[vr] || v > D->hi[vr]) {
        report(c, fmi2Error, "refused: %s %s = %.17g %s is outside [%g, %g] at t = %.15g s; it keeps its value",
               kind, var_name(D, vr), v, unit, D->lo[vr], D->hi[vr], c->in->t);
        return -1;
    }
    return 0;
}

FMI2_Export fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    if (!c) return fmi2Error;
    component *cc = COMP(c);
    mbn_instance *in = cc->in;
    const mbn_data *D = in->data;
    fmi2Status st = fmi2OK;
    double *p = NULL;
    for (size_t k = 0; k < n; ++k) {
        int r = (int)vr[k];
        if (check_vr(cc, vr[k])) { st = fmi2Error; continue; }
        if (r < D->nu) {
            if (check_value(cc, D, r, "input", value[k])) { st = fmi2Error; continue; }
            in->u[r] = value[k];
            in->y_valid = 0;
        } else if (r < D->nu + D->np) {
            if (check_value(cc, D, r, "parameter", value[k])) { st = fmi2Error; continue; }
            if (!p) {
                p = malloc(sizeof(double) * (size_t)D->np);
                if (!p) return fmi2Fatal;
                memcpy(p, in->p, sizeof(double) * (size_t)D->np);
            }
            p[r - D->nu] = value[k];
        } else {
            report(cc, fmi2Error, "%s %s cannot be set", r < D->nu + D->np + D->ny ? "output" : "state",
                   var_name(D, r));
            st = fmi2Error;
        }
    }
    if (p && memcmp(p, in->p, sizeof(double) * (size_t)D->np)) {
        int err = mbn_set_parameters(in, p);
        if (err <= -1 && err > -1000) {
            int j = -1 - err;
            report(cc, fmi2Error, "refused parameter %s = %.17g: %s; the native FMU keeps %.17g (rebuild "
                   "it with this value, or use the pythonfmu runtime)", var_name(D, D->nu + j), p[j],
                   D->p_fixed[j], in->p[j]);
            st = fmi2Error;
        } else if (err <= -2000) {
            report(cc, fmi2Error, "refused parameters: body %d of plant %s would not be physical (negative mass, "
                   "or an inertia that is not positive or breaks the triangle inequality); the previous values "
                   "are kept", -2000 - err, D->plant);
            st = fmi2Error;
        } else if (err) {
            report(cc, fmi2Error, "refused parameters: the re-packed model of plant %s is invalid; "
                   "the previous values are kept", D->plant);
            st = fmi2Error;
        }
    }
    free(p);
    return st;
}

#define NO_TYPE(T, name, arr)                                                                   \
    FMI2_Export fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], size_t n, arr) { \
        (void)vr; (void)value;                                                                  \
        if (n == 0) return fmi2OK;                                                              \
        report(COMP(c), fmi2Error, "this FMU has no " T " variables");                          \
        return fmi2Error;                                                                       \
    }
NO_TYPE("Integer", fmi2GetInteger, fmi2Integer value[])
NO_TYPE("Boolean", fmi2GetBoolean, fmi2Boolean value[])
NO_TYPE("String", fmi2GetString, fmi2String value[])
NO_TYPE("Integer", fmi2SetInteger, const fmi2Integer value[])
NO_TYPE("Boolean", fmi2SetBoolean, const fmi2Boolean value[])
NO_TYPE("String", fmi2SetString, const fmi2String value[])

/* ------------------------------------------------------------ stepping */
FMI2_Export fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    (void)no_prior;
    if (!c) return fmi2Error;
    component *cc = COMP(c);
    mbn_instance *in = cc->in;
    const mbn_data *D = in->data;
    double hs = in->d[D->o_step];
    if (!(isfinite(t) && isfinite(h) && h > 0) || h / hs > 1e9) {
        report(cc, fmi2Error, "refused step from t = %.15g s of size %g s", t, h);
        return fmi2Error;
    }
    in->t = t;
    int err = mbn_advance(in, h);
    if (err == MBN_NOMEM) {
        report(cc, fmi2Error, "plant %s: out of memory in the step from t = %.15g s", D->plant, t);
        return fmi2Error;
    }
    if (err == MBN_ADAPT) {
        const mb_adapt_stats *st = &in->adapt_stats;
        int big = 0; /* as the Python plant's blown_up_error: a runaway force is named as such */
        for (int k = 1; k < D->nv; ++k)
            if (fabs(in->tau[k]) > fabs(in->tau[big])) big = k;
        if (D->nv > 0 && !(fabs(in->tau[big]) < 1e50)) {
            report(cc, fmi2Error, "plant %s: the state has blown up in the step from t = %.15g s to %.15g s "
                   "(largest: generalized force tau[%d] = %g); check the inputs and the step size; the state "
                   "is kept", D->plant, t, t + h, big, in->tau[big]);
            return fmi2Error;
        }
        report(cc, fmi2Error, "plant %s: step from t = %.15g s to %.15g s: %s: reached %g s of the interval "
               "after %ld accepted and %ld rejected steps (last step %g s); the state is kept", D->plant, t, t + h,
               mb_adapt_message(in->adapt_status), st->t_reached, st->accepted, st->rejected, st->h_last);
        return fmi2Error;
    }
    if (err > 0) {
        report(cc, fmi2Error, "plant %s: step from t = %.15g s to %.15g s failed: the articulated inertia of "
               "the joint of body %d is singular; the state is kept", D->plant, t, t + h, err);
        return fmi2Error;
    }
    if (err < 0) {
        report(cc, fmi2Error, "plant %s: state %s became non-finite in the step from t = %.15g s to %.15g s "
               "(unstable: reduce the step); the state is kept", D->plant,
               var_name(D, D->nu + D->np + D->ny + (-1 - err)), t, t + h);
        return fmi2Error;
    }
    const double *y = mbn_outputs(in);
    for (int k = 0; k < D->ny; ++k)
        if (!isfinite(y[k])) {
            report(cc, fmi2Error, "plant %s: output %s is not finite at t = %.15g s", D->plant,
                   var_name(D, D->nu + D->np + k), in->t);
            return fmi2Error;
        }
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

FMI2_Export fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value) {
    (void)c; (void)s; *value = fmi2OK; return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value) {
    if (!c) return fmi2Error;
    if (s == fmi2LastSuccessfulTime) { *value = COMP(c)->in->t; return fmi2OK; }
    return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value) {
    (void)c; (void)s; (void)value; return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value) {
    (void)c; (void)s; if (value) *value = 0; return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value) {
    (void)c; (void)s; (void)value; return fmi2Discard;
}

FMI2_Export fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                   const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr; (void)order; (void)value;
    if (n == 0) return fmi2OK;
    report(COMP(c), fmi2Error, "this FMU cannot interpolate inputs (canInterpolateInputs=false)");
    return fmi2Error;
}
FMI2_Export fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                    const fmi2Integer order[], fmi2Real value[]) {
    (void)vr; (void)order; (void)value;
    if (n == 0) return fmi2OK;
    report(COMP(c), fmi2Error, "this FMU provides no output derivatives");
    return fmi2Error;
}
FMI2_Export fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                                    const fmi2ValueReference z[], size_t nz,
                                                    const fmi2Real dv[], fmi2Real dz[]) {
    (void)u; (void)nu; (void)z; (void)nz; (void)dv; (void)dz;
    report(COMP(c), fmi2Error, "this FMU provides no directional derivatives");
    return fmi2Error;
}

/* ------------------------------------------------------------ FMU state */
static saved_state *save(mbn_instance *in) {
    size_t n = mbn_state_size(in);
    saved_state *s = malloc(sizeof(saved_state) + n);
    if (!s) return NULL;
    s->size = n;
    mbn_state_write(in, s->bytes);
    return s;
}

FMI2_Export fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    if (!c || !state) return fmi2Error;
    saved_state *s = save(COMP(c)->in);
    if (!s) { report(COMP(c), fmi2Error, "out of memory saving the FMU state"); return fmi2Error; }
    free(*state);
    *state = s;
    return fmi2OK;
}

static fmi2Status restore(component *c, const unsigned char *bytes, size_t size) {
    const char *why = "";
    if (mbn_state_read(c->in, bytes, size, &why)) {
        report(c, fmi2Error, "cannot restore the FMU state of plant %s: %s; the instance keeps its state "
               "(t = %.15g s)", MBN_DATA.plant, why, c->in->t);
        return fmi2Error;
    }
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    if (!c) return fmi2Error;
    if (!state) { report(COMP(c), fmi2Error, "no FMU state given"); return fmi2Error; }
    saved_state *s = state;
    return restore(COMP(c), s->bytes, s->size);
}

FMI2_Export fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    (void)c;
    if (state) { free(*state); *state = NULL; }
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
    if (!c || !state || !size) return fmi2Error;
    *size = ((saved_state *)state)->size;
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    if (!c || !state) return fmi2Error;
    saved_state *s = state;
    if (size < s->size) {
        report(COMP(c), fmi2Error, "serialization buffer of %zu bytes is too small (%zu needed)", size, s->size);
        return fmi2Error;
    }
    memcpy(bytes, s->bytes, s->size);
    return fmi2OK;
}

FMI2_Export fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                               fmi2FMUstate *state) {
    if (!c || !state) return fmi2Error;
    const char *why = "";
    /* validate against a scratch instance so a bad state never reaches the host */
    mbn_instance *probe = mbn_new(&MBN_DATA);
    if (!probe) return fmi2Error;
    probe->stepped = 1;
    int err = mbn_state_read(probe, (const unsigned char *)bytes, size, &why);
    mbn_free(probe);
    if (err) {
        report(COMP(c), fmi2Error, "cannot deserialize the FMU state of plant %s: %s", MBN_DATA.plant, why);
        return fmi2Error;
    }
    saved_state *s = malloc(sizeof(saved_state) + size);
    if (!s) return fmi2Error;
    s->size = size;
    memcpy(s->bytes, bytes, size);
    free(*state);
    *state = s;
    return fmi2OK;
}
