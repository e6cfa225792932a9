/*
 * FMI 3.0 interface of the native runtime, Co-Simulation and Model Exchange
 * in one binary. The types and signatures are the FMI 3.0 standard's own
 * headers' (fmi3Functions.h, shipped in the FMU's sources/ with their
 * license). The instance behind them, its state machine and its messages
 * are component.c's (shared with fmi2.c); this file maps FMI 3's variables
 * onto the runtime's scalars.
 *
 * Value references index MBN_DATA.v3tab (mbfmu.fmu.native.fmi3): rows
 * (kind, first scalar, count) of
 *   V_TIME        the independent variable (Float64);
 *   V_FLOAT64     count Float64 elements from the scalar first (an array, or 1);
 *   V_SIZE        a UInt64 structural parameter, an array length (count);
 *   V_COUNT       a UInt64 calculated parameter, the plant's count parameter
 *                 (the scalar first);
 *   V_INDICATORS  the event indicators (Float64 array of count).
 * Both are fixed by the build: another value is refused.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "component.h"
#include "fmi3Functions.h"
#include "fmi3_absent_types.h"
#include "fmi_logger.h"

enum { V_TIME = 0, V_FLOAT64 = 1, V_SIZE = 2, V_COUNT = 3, V_INDICATORS = 4 };

typedef struct {
    mbn_component *c;
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    double *z;        /* (nz) scratch for the event indicators */
    unsigned *vrs;    /* (nvars) scratch of scalar indices */
} fmu3;

#define F3(i) ((fmu3 *)(i))
#define C3(i) (F3(i)->c)

static void host_log3(void *host, int status, const char *msg) {
    fmu3 *f = host;
    if (f) fmi3_log_message(f->log, f->env, status, msg);
}

#define ENTER(i, mask, types, fn)                                                 \
    do {                                                                          \
        if (!(i)) return fmi3Error;                                               \
        if (mbn_allowed(C3(i), (mask), (types), (fn))) return fmi3Error;          \
    } while (0)

#define S_GET (MBN_S_INIT | MBN_S_RUNNING | MBN_S_TERMINATED | MBN_S_ERROR)
#define S_SET (MBN_S_INSTANTIATED | MBN_S_INIT | MBN_S_RUNNING)

static const int *row(fmi3ValueReference vr) { return MBN_DATA.v3tab + 3 * vr; }

static int check_vr3(mbn_component *c, fmi3ValueReference vr) {
    if (vr < (fmi3ValueReference)MBN_DATA.nv3) return 0;
    mbn_report(c, MBN_ERROR, "unknown value reference %u (this FMU has 0..%d)", vr, MBN_DATA.nv3 - 1);
    return -1;
}

/* the name of variable vr for messages */
static const char *name3(fmi3ValueReference vr) {
    const int *r = row(vr);
    switch (r[0]) {
    case V_TIME: return "time";
    case V_FLOAT64: case V_COUNT: return mbn_var_name(&MBN_DATA, (unsigned)r[1]);
    case V_SIZE: return "an array length";
    default: return "event_indicators";
    }
}

/* the number of values of vr (checked), -1 if not of the kind wanted */
static long values_of(mbn_component *c, fmi3ValueReference vr, int uint64, const char *fn) {
    if (check_vr3(c, vr)) return -1;
    const int *r = row(vr);
    int is_uint = r[0] == V_SIZE || r[0] == V_COUNT;
    if (is_uint != uint64) {
        mbn_report(c, MBN_ERROR, "%s: variable %u (%s) is %s", fn, vr, name3(vr), is_uint ? "UInt64" : "Float64");
        return -1;
    }
    return r[0] == V_TIME || r[0] == V_COUNT || r[0] == V_SIZE ? 1 : r[2];
}

/* the total number of values of vrs, reported and -1 if it is not n */
static long total(mbn_component *c, const fmi3ValueReference vr[], size_t nvr, size_t n, int uint64, const char *fn) {
    size_t sum = 0;
    for (size_t k = 0; k < nvr; ++k) {
        long m = values_of(c, vr[k], uint64, fn);
        if (m < 0) return -1;
        sum += (size_t)m;
    }
    if (sum != n) {
        mbn_report(c, MBN_ERROR, "%s: %zu values given for variables of %zu values", fn, n, sum);
        return -1;
    }
    return (long)sum;
}

/* ------------------------------------------------------------ inquiry, life cycle */
FMI3_Export const char *fmi3GetVersion(void) { return "3.0"; }

FMI3_Export fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String cats[]) {
    (void)n; (void)cats;
    ENTER(i, MBN_S_ANY, 3, "fmi3SetDebugLogging");
    C3(i)->logging = on;
    return fmi3OK;
}

static fmi3Instance instantiate(int type, fmi3String name, fmi3String token, fmi3InstanceEnvironment env,
                                fmi3LogMessageCallback log, fmi3Boolean logging) {
    fmu3 *f = calloc(1, sizeof(fmu3));
    if (!f) return NULL;
    f->env = env;
    f->log = log;
    mbn_component tmp = {0};
    tmp.log = host_log3;
    tmp.host = f;
    if (MBN_DATA.fmi != 3) {
        mbn_report(&tmp, MBN_ERROR, "plant %s: this FMU is FMI %d; its FMI 3 interface has no variables",
                   MBN_DATA.plant, MBN_DATA.fmi);
        free(f);
        return NULL;
    }
    if (!token || strcmp(token, MBN_DATA.guid)) {
        mbn_report(&tmp, MBN_ERROR, "plant %s: instantiation token %s does not match this FMU's %s", MBN_DATA.plant,
                   token ? token : "(null)", MBN_DATA.guid);
        free(f);
        return NULL;
    }
    f->z = calloc((size_t)MBN_DATA.nz + 1, sizeof(double));
    f->vrs = calloc((size_t)mbn_nvars(&MBN_DATA) + 1, sizeof(unsigned));
    f->c = f->z && f->vrs ? mbn_component_new(3, type, name, host_log3, f, logging) : NULL;
    if (!f->c) {
        free(f->z); free(f->vrs); free(f);
        return NULL;
    }
    return f;
}

FMI3_Export fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                      fmi3Boolean visible, fmi3Boolean logging,
                                                      fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
    (void)resources; (void)visible;
    return instantiate(MBN_ME, name, token, env, log, logging);
}

FMI3_Export fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging,
                                                     fmi3Boolean event_mode, fmi3Boolean early_return,
                                                     const fmi3ValueReference required[], size_t nrequired,
                                                     fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                     fmi3IntermediateUpdateCallback update) {
    (void)resources; (void)visible; (void)early_return; (void)required; (void)nrequired; (void)update;
    (void)event_mode; /* hasEventMode="false": the FMU never asks for event handling */
    return instantiate(MBN_CS, name, token, env, log, logging);
}

FMI3_Export fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                                           fmi3Boolean visible, fmi3Boolean logging,
                                                           fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                           fmi3ClockUpdateCallback clock,
                                                           fmi3LockPreemptionCallback lock,
                                                           fmi3UnlockPreemptionCallback unlock) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging; (void)clock; (void)lock; (void)unlock;
    fmi3_log_message(log, env, fmi3Error, "this FMU offers Co-Simulation and Model Exchange, not Scheduled Execution");
    return NULL;
}

FMI3_Export void fmi3FreeInstance(fmi3Instance i) {
    if (!i) return;
    mbn_component_free(C3(i));
    free(F3(i)->z);
    free(F3(i)->vrs);
    free(i);
}

FMI3_Export fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tol_defined, fmi3Float64 tol,
                                                   fmi3Float64 start, fmi3Boolean stop_defined, fmi3Float64 stop) {
    (void)stop_defined; (void)stop;
    ENTER(i, MBN_S_INSTANTIATED, 3, "fmi3EnterInitializationMode");
    int st = mbn_setup(C3(i), tol_defined, tol, start);
    if (st) return (fmi3Status)st;
    return (fmi3Status)mbn_enter_init(C3(i));
}

FMI3_Export fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
    ENTER(i, MBN_S_INIT, 3, "fmi3ExitInitializationMode");
    return (fmi3Status)mbn_exit_init(C3(i));
}

FMI3_Export fmi3Status fmi3EnterEventMode(fmi3Instance i) {
    ENTER(i, MBN_S_EVENT | MBN_S_CONT, 2, "fmi3EnterEventMode");
    return (fmi3Status)mbn_enter_event_mode(C3(i));
}

FMI3_Export fmi3Status fmi3Terminate(fmi3Instance i) {
    ENTER(i, MBN_S_RUNNING | MBN_S_ERROR, 3, "fmi3Terminate");
    return (fmi3Status)mbn_terminate(C3(i));
}

FMI3_Export fmi3Status fmi3Reset(fmi3Instance i) {
    ENTER(i, MBN_S_ANY, 3, "fmi3Reset");
    return (fmi3Status)mbn_reset(C3(i));
}

FMI3_Export fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) {
    ENTER(i, MBN_S_INSTANTIATED, 3, "fmi3EnterConfigurationMode");
    C3(i)->state = MBN_S_CONFIG;
    return fmi3OK;
}

FMI3_Export fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) {
    ENTER(i, MBN_S_CONFIG, 3, "fmi3ExitConfigurationMode");
    C3(i)->state = MBN_S_INSTANTIATED;
    return fmi3OK;
}

/* ------------------------------------------------------------ values */
FMI3_Export fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                      fmi3Float64 values[], size_t n) {
    ENTER(i, S_GET, 3, "fmi3GetFloat64");
    mbn_component *c = C3(i);
    if ((nvr && !vr) || (n && !values)) { mbn_report(c, MBN_ERROR, "fmi3GetFloat64: NULL arrays"); return fmi3Error; }
    if (total(c, vr, nvr, n, 0, "fmi3GetFloat64") < 0) return fmi3Error;
    fmi3Status st = fmi3OK;
    size_t at = 0;
    for (size_t k = 0; k < nvr; ++k) {
        const int *r = row(vr[k]);
        if (r[0] == V_TIME) values[at++] = c->in->t;
        else if (r[0] == V_INDICATORS) {
            if (mbn_get_indicators(c, values + at, (size_t)r[2])) st = fmi3Error;
            at += (size_t)r[2];
        } else
            for (int e = 0; e < r[2]; ++e)
                if (mbn_get(c, (unsigned)(r[1] + e), &values[at++])) st = fmi3Error;
    }
    return st;
}

FMI3_Export fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                      const fmi3Float64 values[], size_t n) {
    ENTER(i, S_SET, 3, "fmi3SetFloat64");
    mbn_component *c = C3(i);
    if ((nvr && !vr) || (n && !values)) { mbn_report(c, MBN_ERROR, "fmi3SetFloat64: NULL arrays"); return fmi3Error; }
    if (total(c, vr, nvr, n, 0, "fmi3SetFloat64") < 0) return fmi3Error;
    size_t m = 0;
    for (size_t k = 0; k < nvr; ++k) {
        const int *r = row(vr[k]);
        if (r[0] != V_FLOAT64) {
            mbn_report(c, MBN_ERROR, "%s cannot be set", name3(vr[k]));
            return fmi3Error;
        }
        if (m + (size_t)r[2] > mbn_nvars(&MBN_DATA)) {
            mbn_report(c, MBN_ERROR, "fmi3SetFloat64: variables given more than once");
            return fmi3Error;
        }
        for (int e = 0; e < r[2]; ++e) F3(i)->vrs[m++] = (unsigned)(r[1] + e);
    }
    return (fmi3Status)mbn_set(c, F3(i)->vrs, m, values);
}

FMI3_Export fmi3Status fmi3GetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                     fmi3UInt64 values[], size_t n) {
    ENTER(i, MBN_S_CONFIG | MBN_S_INSTANTIATED | S_GET, 3, "fmi3GetUInt64");
    mbn_component *c = C3(i);
    if ((nvr && !vr) || (n && !values)) { mbn_report(c, MBN_ERROR, "fmi3GetUInt64: NULL arrays"); return fmi3Error; }
    if (total(c, vr, nvr, n, 1, "fmi3GetUInt64") < 0) return fmi3Error;
    for (size_t k = 0; k < nvr; ++k) {
        const int *r = row(vr[k]);
        values[k] = r[0] == V_SIZE ? (fmi3UInt64)r[2] : (fmi3UInt64)c->in->p[r[1] - MBN_DATA.nu];
    }
    return fmi3OK;
}

FMI3_Export fmi3Status fmi3SetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                     const fmi3UInt64 values[], size_t n) {
    ENTER(i, MBN_S_CONFIG, 3, "fmi3SetUInt64");
    mbn_component *c = C3(i);
    if ((nvr && !vr) || (n && !values)) { mbn_report(c, MBN_ERROR, "fmi3SetUInt64: NULL arrays"); return fmi3Error; }
    if (total(c, vr, nvr, n, 1, "fmi3SetUInt64") < 0) return fmi3Error;
    fmi3Status st = fmi3OK;
    for (size_t k = 0; k < nvr; ++k) {
        const int *r = row(vr[k]);
        fmi3UInt64 now = r[0] == V_SIZE ? (fmi3UInt64)r[2] : (fmi3UInt64)c->in->p[r[1] - MBN_DATA.nu];
        if (values[k] == now) continue;
        mbn_report(c, MBN_ERROR, "refused: %s %s = %llu: this FMU is built for %llu (rebuild it "
                   "with the new value: mbfmu build ... -p NAME=VALUE --fmi 3)",
                   r[0] == V_SIZE ? "structural parameter" : "calculated parameter", name3(vr[k]),
                   (unsigned long long)values[k], (unsigned long long)now);
        st = fmi3Error;
    }
    return st;
}

/* the types this FMU has no variables of (fmi3_absent_types.h) */
#define NO_GET(T, fn)                                                                                 \
    FMI3_Export fmi3Status fn(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, T values[], size_t n) { \
        (void)vr; (void)values; (void)n;                                                              \
        ENTER(i, MBN_S_ANY, 3, #fn);                                                                  \
        if (nvr == 0) return fmi3OK;                                                                  \
        mbn_report(C3(i), MBN_ERROR, #fn ": this FMU has no variables of this type");                 \
        return fmi3Error;                                                                             \
    }
#define NO_TYPE(T, get, set) NO_GET(T, get) NO_GET(const T, set)
FMI3_ABSENT_TYPES(NO_TYPE)

static fmi3Status unsupported(fmi3Instance i, const char *what) {
    if (!i) return fmi3Error;
    mbn_report(C3(i), MBN_ERROR, "%s: not supported by this FMU", what);
    return fmi3Error;
}

FMI3_Export fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, size_t sizes[],
                                     fmi3Binary values[], size_t n) {
    (void)vr; (void)sizes; (void)values; (void)n;
    return nvr ? unsupported(i, "fmi3GetBinary (no Binary variables)") : fmi3OK;
}
FMI3_Export fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const size_t sizes[],
                                     const fmi3Binary values[], size_t n) {
    (void)vr; (void)sizes; (void)values; (void)n;
    return nvr ? unsupported(i, "fmi3SetBinary (no Binary variables)") : fmi3OK;
}
FMI3_Export fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Clock values[]) {
    (void)vr; (void)values;
    return nvr ? unsupported(i, "fmi3GetClock (no clocks)") : fmi3OK;
}
FMI3_Export fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                    const fmi3Clock values[]) {
    (void)vr; (void)values;
    return nvr ? unsupported(i, "fmi3SetClock (no clocks)") : fmi3OK;
}
FMI3_Export fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                              fmi3Float64 intervals[], fmi3IntervalQualifier q[]) {
    (void)vr; (void)nvr; (void)intervals; (void)q;
    return unsupported(i, "fmi3GetIntervalDecimal (no clocks)");
}
FMI3_Export fmi3Status fmi3GetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                               fmi3UInt64 counters[], fmi3UInt64 res[], fmi3IntervalQualifier q[]) {
    (void)vr; (void)nvr; (void)counters; (void)res; (void)q;
    return unsupported(i, "fmi3GetIntervalFraction (no clocks)");
}
FMI3_Export fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           fmi3Float64 shifts[]) {
    (void)vr; (void)nvr; (void)shifts;
    return unsupported(i, "fmi3GetShiftDecimal (no clocks)");
}
FMI3_Export fmi3Status fmi3GetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                            fmi3UInt64 counters[], fmi3UInt64 res[]) {
    (void)vr; (void)nvr; (void)counters; (void)res;
    return unsupported(i, "fmi3GetShiftFraction (no clocks)");
}
FMI3_Export fmi3Status fmi3SetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                              const fmi3Float64 intervals[]) {
    (void)vr; (void)nvr; (void)intervals;
    return unsupported(i, "fmi3SetIntervalDecimal (no clocks)");
}
FMI3_Export fmi3Status fmi3SetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                               const fmi3UInt64 counters[], const fmi3UInt64 res[]) {
    (void)vr; (void)nvr; (void)counters; (void)res;
    return unsupported(i, "fmi3SetIntervalFraction (no clocks)");
}
FMI3_Export fmi3Status fmi3SetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           const fmi3Float64 shifts[]) {
    (void)vr; (void)nvr; (void)shifts;
    return unsupported(i, "fmi3SetShiftDecimal (no clocks)");
}
FMI3_Export fmi3Status fmi3SetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                            const fmi3UInt64 counters[], const fmi3UInt64 res[]) {
    (void)vr; (void)nvr; (void)counters; (void)res;
    return unsupported(i, "fmi3SetShiftFraction (no clocks)");
}
FMI3_Export fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) {
    return unsupported(i, "fmi3EvaluateDiscreteStates (no clocks)");
}
FMI3_Export fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t) {
    (void)clock; (void)t;
    return unsupported(i, "fmi3ActivateModelPartition (no Scheduled Execution)");
}
FMI3_Export fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance i, fmi3ValueReference vr, size_t *n) {
    (void)vr; (void)n;
    return unsupported(i, "fmi3GetNumberOfVariableDependencies (the dependencies are in the model description)");
}
FMI3_Export fmi3Status fmi3GetVariableDependencies(fmi3Instance i, fmi3ValueReference dependent, size_t ed[],
                                                   fmi3ValueReference independents[], size_t ei[],
                                                   fmi3DependencyKind kinds[], size_t n) {
    (void)dependent; (void)ed; (void)independents; (void)ei; (void)kinds; (void)n;
    return unsupported(i, "fmi3GetVariableDependencies (the dependencies are in the model description)");
}

/* ------------------------------------------------------------ derivatives */
/* the scalar indices (*out, *m of them, malloc'ed) of the Float64 variables vr */
static int expand(mbn_component *c, const fmi3ValueReference vr[], size_t n, unsigned **out, size_t *m,
                  const char *fn) {
    size_t total_n = 0;
    *out = NULL;
    if (n && !vr) { mbn_report(c, MBN_ERROR, "%s: NULL value references", fn); return -1; }
    for (size_t k = 0; k < n; ++k) {
        if (check_vr3(c, vr[k])) return -1;
        if (row(vr[k])[0] != V_FLOAT64) {
            mbn_report(c, MBN_ERROR, "%s: %s is not a continuous Float64 variable", fn, name3(vr[k]));
            return -1;
        }
        total_n += (size_t)row(vr[k])[2];
    }
    *out = malloc(sizeof(unsigned) * (total_n + 1));
    if (!*out) { mbn_report(c, MBN_ERROR, "%s: out of memory", fn); return -1; }
    *m = 0;
    for (size_t k = 0; k < n; ++k)
        for (int e = 0; e < row(vr[k])[2]; ++e) (*out)[(*m)++] = (unsigned)(row(vr[k])[1] + e);
    return 0;
}

/* both derivative calls: the unknowns' and knowns' elements, seed and
 * sensitivity sizes checked, then component.c's mbn_directional */
static fmi3Status derivative3(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nu,
                              const fmi3ValueReference knowns[], size_t nk, const fmi3Float64 seed[], size_t ns,
                              fmi3Float64 sens[], size_t nsens, int adjoint, const char *fn) {
    mbn_component *c = C3(i);
    unsigned *u = NULL, *k = NULL;
    size_t mu = 0, mk = 0;
    fmi3Status st = fmi3Error;
    if (expand(c, unknowns, nu, &u, &mu, fn) || expand(c, knowns, nk, &k, &mk, fn)) goto done;
    if (ns != (adjoint ? mu : mk) || nsens != (adjoint ? mk : mu)) {
        mbn_report(c, MBN_ERROR, "%s: %zu seeds and %zu sensitivities for %zu unknown and %zu known elements", fn, ns,
                   nsens, mu, mk);
        goto done;
    }
    st = (fmi3Status)mbn_directional(c, u, mu, k, mk, seed, sens, adjoint);
done:
    free(u);
    free(k);
    return st;
}

FMI3_Export fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nu,
                                                    const fmi3ValueReference knowns[], size_t nk,
                                                    const fmi3Float64 seed[], size_t ns, fmi3Float64 sens[],
                                                    size_t nsens) {
    ENTER(i, S_GET, 3, "fmi3GetDirectionalDerivative");
    return derivative3(i, unknowns, nu, knowns, nk, seed, ns, sens, nsens, 0, "fmi3GetDirectionalDerivative");
}
FMI3_Export fmi3Status fmi3GetAdjointDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nu,
                                                const fmi3ValueReference knowns[], size_t nk, const fmi3Float64 seed[],
                                                size_t ns, fmi3Float64 sens[], size_t nsens) {
    ENTER(i, S_GET, 3, "fmi3GetAdjointDerivative");
    return derivative3(i, unknowns, nu, knowns, nk, seed, ns, sens, nsens, 1, "fmi3GetAdjointDerivative");
}

/* ------------------------------------------------------------ co-simulation */
FMI3_Export fmi3Status fmi3EnterStepMode(fmi3Instance i) {
    ENTER(i, MBN_S_STEP, 1, "fmi3EnterStepMode");
    return fmi3OK; /* hasEventMode="false": the instance is in step mode already */
}

FMI3_Export fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                                const fmi3Int32 orders[], fmi3Float64 values[], size_t n) {
    (void)vr; (void)orders; (void)values; (void)n;
    ENTER(i, MBN_S_STEP | MBN_S_TERMINATED | MBN_S_ERROR, 1, "fmi3GetOutputDerivatives");
    return nvr ? unsupported(i, "fmi3GetOutputDerivatives (maxOutputDerivativeOrder=0)") : fmi3OK;
}

FMI3_Export fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_prior,
                                  fmi3Boolean *event_needed, fmi3Boolean *terminate, fmi3Boolean *early,
                                  fmi3Float64 *last) {
    (void)no_prior;
    ENTER(i, MBN_S_STEP, 1, "fmi3DoStep");
    if (!event_needed || !terminate || !early || !last) {
        mbn_report(C3(i), MBN_ERROR, "fmi3DoStep: NULL result pointers");
        return fmi3Error;
    }
    int st = mbn_do_step(C3(i), t, h);
    *event_needed = false;
    *terminate = false;
    *early = false;
    *last = st ? t : t + h;
    return (fmi3Status)st;
}

/* ------------------------------------------------------------ model exchange */
FMI3_Export fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean *update_needed, fmi3Boolean *terminate,
                                                fmi3Boolean *nominals_changed, fmi3Boolean *values_changed,
                                                fmi3Boolean *next_defined, fmi3Float64 *next_time) {
    ENTER(i, MBN_S_EVENT, 2, "fmi3UpdateDiscreteStates");
    if (!update_needed || !terminate || !nominals_changed || !values_changed || !next_defined || !next_time) {
        mbn_report(C3(i), MBN_ERROR, "fmi3UpdateDiscreteStates: NULL result pointers");
        return fmi3Error;
    }
    int changed = 0;
    double next = INFINITY;
    int st = mbn_new_discrete_states(C3(i), &changed, &next);
    *update_needed = false;
    *terminate = false;
    *nominals_changed = false;
    *values_changed = changed != 0;
    *next_defined = isfinite(next);
    *next_time = isfinite(next) ? next : 0.0;
    return (fmi3Status)st;
}

FMI3_Export fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) {
    ENTER(i, MBN_S_EVENT, 2, "fmi3EnterContinuousTimeMode");
    return (fmi3Status)mbn_enter_continuous_mode(C3(i));
}

FMI3_Export fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean no_prior, fmi3Boolean *enter_event,
                                                   fmi3Boolean *terminate) {
    (void)no_prior;
    ENTER(i, MBN_S_CONT, 2, "fmi3CompletedIntegratorStep");
    if (!enter_event || !terminate) {
        mbn_report(C3(i), MBN_ERROR, "fmi3CompletedIntegratorStep: NULL result pointers");
        return fmi3Error;
    }
    int ev = 0;
    int st = mbn_completed_step(C3(i), &ev);
    *enter_event = ev != 0;
    *terminate = false;
    return (fmi3Status)st;
}

FMI3_Export fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 t) {
    ENTER(i, MBN_S_EVENT | MBN_S_CONT, 2, "fmi3SetTime");
    return (fmi3Status)mbn_set_time(C3(i), t);
}

FMI3_Export fmi3Status fmi3SetContinuousStates(fmi3Instance i, const fmi3Float64 x[], size_t n) {
    ENTER(i, MBN_S_EVENT | MBN_S_CONT, 2, "fmi3SetContinuousStates");
    return (fmi3Status)mbn_set_states(C3(i), x, n);
}

FMI3_Export fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t n) {
    ENTER(i, S_GET, 2, "fmi3GetContinuousStateDerivatives");
    return (fmi3Status)mbn_get_derivatives(C3(i), dx, n);
}

FMI3_Export fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
    ENTER(i, S_GET, 2, "fmi3GetEventIndicators");
    return (fmi3Status)mbn_get_indicators(C3(i), z, n);
}

FMI3_Export fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
    ENTER(i, S_GET, 2, "fmi3GetContinuousStates");
    return (fmi3Status)mbn_get_states(C3(i), x, n);
}

FMI3_Export fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
    ENTER(i, MBN_S_INSTANTIATED | S_GET, 2, "fmi3GetNominalsOfContinuousStates");
    return (fmi3Status)mbn_get_nominals(C3(i), x, n);
}

FMI3_Export fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance i, size_t *n) {
    ENTER(i, MBN_S_ANY, 2, "fmi3GetNumberOfEventIndicators");
    if (!n) { mbn_report(C3(i), MBN_ERROR, "fmi3GetNumberOfEventIndicators: NULL pointer"); return fmi3Error; }
    *n = (size_t)MBN_DATA.nz;
    return fmi3OK;
}

FMI3_Export fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance i, size_t *n) {
    ENTER(i, MBN_S_ANY, 2, "fmi3GetNumberOfContinuousStates");
    if (!n) { mbn_report(C3(i), MBN_ERROR, "fmi3GetNumberOfContinuousStates: NULL pointer"); return fmi3Error; }
    *n = (size_t)MBN_DATA.nxc;
    return fmi3OK;
}

/* ------------------------------------------------------------ FMU state */
FMI3_Export fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState *state) {
    ENTER(i, MBN_S_ANY, 3, "fmi3GetFMUState");
    if (!state) { mbn_report(C3(i), MBN_ERROR, "fmi3GetFMUState: no state pointer (NULL)"); return fmi3Error; }
    return (fmi3Status)mbn_get_state(C3(i), (mbn_saved **)state);
}

FMI3_Export fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState state) {
    ENTER(i, MBN_S_ANY, 3, "fmi3SetFMUState");
    if (!state) { mbn_report(C3(i), MBN_ERROR, "no FMU state given"); return fmi3Error; }
    return (fmi3Status)mbn_set_state(C3(i), state);
}

FMI3_Export fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState *state) {
    ENTER(i, MBN_S_ANY, 3, "fmi3FreeFMUState");
    return (fmi3Status)mbn_free_state(C3(i), (mbn_saved **)state);
}

FMI3_Export fmi3Status fmi3SerializedFMUStateSize(fmi3Instance i, fmi3FMUState state, size_t *size) {
    ENTER(i, MBN_S_ANY, 3, "fmi3SerializedFMUStateSize");
    if (!state || !size) { mbn_report(C3(i), MBN_ERROR, "fmi3SerializedFMUStateSize: NULL pointers"); return fmi3Error; }
    return (fmi3Status)mbn_serialized_size(C3(i), state, size);
}

FMI3_Export fmi3Status fmi3SerializeFMUState(fmi3Instance i, fmi3FMUState state, fmi3Byte bytes[], size_t size) {
    ENTER(i, MBN_S_ANY, 3, "fmi3SerializeFMUState");
    if (!state || !bytes) { mbn_report(C3(i), MBN_ERROR, "fmi3SerializeFMUState: NULL pointers"); return fmi3Error; }
    return (fmi3Status)mbn_serialize(C3(i), state, bytes, size);
}

FMI3_Export fmi3Status fmi3DeserializeFMUState(fmi3Instance i, const fmi3Byte bytes[], size_t size,
                                               fmi3FMUState *state) {
    ENTER(i, MBN_S_ANY, 3, "fmi3DeserializeFMUState");
    if (!state) { mbn_report(C3(i), MBN_ERROR, "fmi3DeserializeFMUState: no state pointer (NULL)"); return fmi3Error; }
    return (fmi3Status)mbn_deserialize(C3(i), bytes, size, (mbn_saved **)state);
}
