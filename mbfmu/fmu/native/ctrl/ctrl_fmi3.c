/*
 * FMI 3.0 Co-Simulation interface of a native controller FMU (ctrl_fmu.h).
 * The types and signatures are the FMI 3.0 standard's own headers'
 * (fmi3Functions.h, shipped in the FMU's sources/ with their license). The instance,
 * its state machine, checks and messages are ctrl_component.c's (shared with
 * ctrl_fmi2.c). Value reference 0 is the time; value reference k + 1 is the
 * component's scalar k (all Float64). Co-Simulation without event mode; a
 * discrete controller built for Scheduled Execution instead has one input
 * clock (value reference cc_nvars() + 1, periodic at its sample time) whose
 * model partition is one sample: fmi3ActivateModelPartition latches the
 * outputs of the current state and inputs, then advances the state.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl_component.h"
#include "fmi3Functions.h"
#include "fmi3_absent_types.h"
#include "fmi_logger.h"

typedef struct {
    cc_inst *f;
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    unsigned *k; /* (nvars) scratch of scalar indices */
} fmu3;

#define CC3(i) (((fmu3 *)(i))->f)

static void host_log3(void *host, int status, const char *msg) {
    fmu3 *h = host;
    if (h) fmi3_log_message(h->log, h->env, status, msg);
}

static fmi3Status guard(fmi3Instance i, int mask, const char *fn) {
    return cc_allowed(CC3(i), mask, fn) ? fmi3OK : fmi3Error;
}

FMI3_Export const char *fmi3GetVersion(void) { return "3.0"; }

FMI3_Export fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String cats[]) {
    (void)n;
    (void)cats;
    CC3(i)->logging = on;
    return fmi3OK;
}

static fmi3Instance refuse_instance(const char *kind, fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s is a %s FMU only", kind, MBC_FMU.model,
             MBC_FMU.scheduled ? "scheduled-execution" : "co-simulation");
    fmi3_log_message(log, env, fmi3Error, msg);
    return NULL;
}

static fmu3 *instantiate(fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible,
                         fmi3Boolean logging, fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                         const char *fn) {
    (void)resources;
    (void)visible;
    char msg[512];
    if (!token || strcmp(token, MBC_FMU.guid) != 0) {
        snprintf(msg, sizeof msg, "%s: the instantiation token is not this FMU's (%s, %s)", fn, MBC_FMU.model,
                 MBC_FMU.guid);
        fmi3_log_message(log, env, fmi3Error, msg);
        return NULL;
    }
    fmu3 *h = calloc(1, sizeof *h);
    unsigned *k = h ? calloc(cc_nvars() + 1, sizeof *k) : NULL;
    if (!k) {
        free(h);
        snprintf(msg, sizeof msg, "%s: out of memory", fn);
        fmi3_log_message(log, env, fmi3Fatal, msg);
        return NULL;
    }
    h->env = env;
    h->log = log;
    h->k = k;
    h->f = cc_new(3, name, host_log3, h, logging);
    if (!h->f) {
        free(k);
        free(h);
        return NULL;
    }
    return h;
}

FMI3_Export fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean event_mode,
                                                     fmi3Boolean early_return, const fmi3ValueReference required[],
                                                     size_t nrequired, fmi3InstanceEnvironment env,
                                                     fmi3LogMessageCallback log,
                                                     fmi3IntermediateUpdateCallback intermediate) {
    (void)event_mode;
    (void)early_return;
    (void)required;
    (void)nrequired;
    (void)intermediate;
    if (MBC_FMU.scheduled) return refuse_instance("fmi3InstantiateCoSimulation", env, log);
    return instantiate(name, token, resources, visible, logging, env, log, "fmi3InstantiateCoSimulation");
}

FMI3_Export fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                      fmi3Boolean visible, fmi3Boolean logging,
                                                      fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
    (void)name;
    (void)token;
    (void)resources;
    (void)visible;
    (void)logging;
    return refuse_instance("fmi3InstantiateModelExchange", env, log);
}

FMI3_Export fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                                           fmi3Boolean visible, fmi3Boolean logging,
                                                           fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                           fmi3ClockUpdateCallback clock,
                                                           fmi3LockPreemptionCallback lock,
                                                           fmi3UnlockPreemptionCallback unlock) {
    (void)clock;
    (void)lock;
    (void)unlock;
    if (!MBC_FMU.scheduled) return refuse_instance("fmi3InstantiateScheduledExecution", env, log);
    fmu3 *h = instantiate(name, token, resources, visible, logging, env, log, "fmi3InstantiateScheduledExecution");
    if (h) h->f->scheduled = 1;
    return h;
}

FMI3_Export void fmi3FreeInstance(fmi3Instance i) {
    fmu3 *h = i;
    if (!h) return;
    cc_free(h->f);
    free(h->k);
    free(h);
}

FMI3_Export fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tol_defined, fmi3Float64 tol,
                                                   fmi3Float64 start, fmi3Boolean stop_defined, fmi3Float64 stop) {
    (void)tol_defined;
    (void)tol;
    (void)stop_defined;
    (void)stop;
    if (guard(i, CS_INSTANTIATED, "fmi3EnterInitializationMode")) return fmi3Error;
    cc_setup(CC3(i), start);
    return (fmi3Status)cc_enter_init(CC3(i));
}

FMI3_Export fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
    return guard(i, CS_INIT, "fmi3ExitInitializationMode") ? fmi3Error : (fmi3Status)cc_exit_init(CC3(i));
}

FMI3_Export fmi3Status fmi3Terminate(fmi3Instance i) {
    return guard(i, CS_STEP | CS_ERROR, "fmi3Terminate") ? fmi3Error : (fmi3Status)cc_terminate(CC3(i));
}

FMI3_Export fmi3Status fmi3Reset(fmi3Instance i) {
    return (fmi3Status)cc_reset(CC3(i));
}

static fmi3Status unsupported(fmi3Instance i, const char *what) {
    cc_report(CC3(i), CC_ERROR, "%s: not supported by this FMU (co-simulation without event mode or clocks)", what);
    return fmi3Error;
}

FMI3_Export fmi3Status fmi3EnterEventMode(fmi3Instance i) { return unsupported(i, "fmi3EnterEventMode"); }
FMI3_Export fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) {
    return unsupported(i, "fmi3EnterConfigurationMode");
}
FMI3_Export fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) {
    return unsupported(i, "fmi3ExitConfigurationMode");
}
FMI3_Export fmi3Status fmi3EnterStepMode(fmi3Instance i) { return unsupported(i, "fmi3EnterStepMode"); }
FMI3_Export fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) {
    return unsupported(i, "fmi3EvaluateDiscreteStates");
}
FMI3_Export fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean *update_needed, fmi3Boolean *terminate,
                                                fmi3Boolean *nominals_changed, fmi3Boolean *values_changed,
                                                fmi3Boolean *next_defined, fmi3Float64 *next_time) {
    (void)update_needed;
    (void)terminate;
    (void)nominals_changed;
    (void)values_changed;
    (void)next_defined;
    (void)next_time;
    return unsupported(i, "fmi3UpdateDiscreteStates");
}

/* scalar indices of value references vr (0, the time, is -> UINT32_MAX) */
static int scalars(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, size_t nvalues, const char *fn) {
    fmu3 *h = i;
    if (nvr != nvalues) {
        cc_report(h->f, CC_ERROR, "%s: %lu values for %lu value references (every variable is a scalar)", fn,
                  (unsigned long)nvalues, (unsigned long)nvr);
        return -1;
    }
    for (size_t k = 0; k < nvr; ++k) {
        if (vr[k] > cc_nvars()) {
            cc_report(h->f, CC_ERROR, "%s: no Float64 variable has value reference %u", fn, (unsigned)vr[k]);
            return -1;
        }
    }
    return 0;
}

FMI3_Export fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 values[],
                                      size_t n) {
    fmu3 *h = i;
    const char *fn = "fmi3GetFloat64";
    if (guard(i, CS_INIT | CS_STEP | CS_TERMINATED | CS_ERROR, fn) || scalars(i, vr, nvr, n, fn)) return fmi3Error;
    for (size_t k = 0; k < nvr; ++k) {
        if (vr[k] == 0) {
            values[k] = h->f->t;
            continue;
        }
        unsigned s = vr[k] - 1;
        fmi3Status st = (fmi3Status)cc_get(h->f, &s, 1, values + k, fn);
        if (st) return st;
    }
    return fmi3OK;
}

FMI3_Export fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                      const fmi3Float64 values[], size_t n) {
    fmu3 *h = i;
    const char *fn = "fmi3SetFloat64";
    if (guard(i, CS_INSTANTIATED | CS_INIT | CS_STEP, fn) || scalars(i, vr, nvr, n, fn)) return fmi3Error;
    for (size_t k = 0; k < nvr; ++k) {
        if (vr[k] == 0) {
            cc_report(h->f, CC_ERROR, "%s: the time (value reference 0) cannot be set", fn);
            return fmi3Error;
        }
        h->k[k] = vr[k] - 1;
    }
    return (fmi3Status)cc_set(h->f, h->k, nvr, values, fn);
}

/* the types this FMU has no variables of (fmi3_absent_types.h) */
#define NO_GET(T, fn)                                                                                           \
    FMI3_Export fmi3Status fn(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, T values[], size_t n) { \
        (void)vr;                                                                                               \
        (void)values;                                                                                           \
        (void)n;                                                                                                \
        if (nvr == 0) return fmi3OK;                                                                            \
        cc_report(CC3(i), CC_ERROR, #fn ": this FMU has no variables of this type");                           \
        return fmi3Error;                                                                                       \
    }
#define NO_TYPE(T, get, set) NO_GET(T, get) NO_GET(const T, set)
FMI3_ABSENT_TYPES(NO_TYPE)
NO_TYPE(fmi3UInt64, fmi3GetUInt64, fmi3SetUInt64)

FMI3_Export fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, size_t sizes[],
                                     fmi3Binary values[], size_t n) {
    (void)vr;
    (void)sizes;
    (void)values;
    (void)n;
    return nvr ? unsupported(i, "fmi3GetBinary") : fmi3OK;
}
FMI3_Export fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const size_t sizes[],
                                     const fmi3Binary values[], size_t n) {
    (void)vr;
    (void)sizes;
    (void)values;
    (void)n;
    return nvr ? unsupported(i, "fmi3SetBinary") : fmi3OK;
}
FMI3_Export fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Clock values[]) {
    (void)vr;
    (void)values;
    return nvr ? unsupported(i, "fmi3GetClock") : fmi3OK;
}
FMI3_Export fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                    const fmi3Clock values[]) {
    (void)vr;
    (void)values;
    return nvr ? unsupported(i, "fmi3SetClock") : fmi3OK;
}
FMI3_Export fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                              fmi3Float64 intervals[], fmi3IntervalQualifier q[]) {
    (void)vr;
    (void)nvr;
    (void)intervals;
    (void)q;
    return unsupported(i, "fmi3GetIntervalDecimal");
}
FMI3_Export fmi3Status fmi3GetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                               fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                               fmi3IntervalQualifier q[]) {
    (void)vr;
    (void)nvr;
    (void)counters;
    (void)resolutions;
    (void)q;
    return unsupported(i, "fmi3GetIntervalFraction");
}
FMI3_Export fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           fmi3Float64 shifts[]) {
    (void)vr;
    (void)nvr;
    (void)shifts;
    return unsupported(i, "fmi3GetShiftDecimal");
}
FMI3_Export fmi3Status fmi3GetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                            fmi3UInt64 counters[], fmi3UInt64 resolutions[]) {
    (void)vr;
    (void)nvr;
    (void)counters;
    (void)resolutions;
    return unsupported(i, "fmi3GetShiftFraction");
}
FMI3_Export fmi3Status fmi3SetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                              const fmi3Float64 intervals[]) {
    (void)vr;
    (void)nvr;
    (void)intervals;
    return unsupported(i, "fmi3SetIntervalDecimal");
}
FMI3_Export fmi3Status fmi3SetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                               const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr;
    (void)nvr;
    (void)counters;
    (void)resolutions;
    return unsupported(i, "fmi3SetIntervalFraction");
}
FMI3_Export fmi3Status fmi3SetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           const fmi3Float64 shifts[]) {
    (void)vr;
    (void)nvr;
    (void)shifts;
    return unsupported(i, "fmi3SetShiftDecimal");
}
FMI3_Export fmi3Status fmi3SetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                            const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr;
    (void)nvr;
    (void)counters;
    (void)resolutions;
    return unsupported(i, "fmi3SetShiftFraction");
}
FMI3_Export fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance i, fmi3ValueReference vr, size_t *n) {
    (void)vr;
    (void)n;
    return unsupported(i, "fmi3GetNumberOfVariableDependencies");
}
FMI3_Export fmi3Status fmi3GetVariableDependencies(fmi3Instance i, fmi3ValueReference dependent, size_t ed[],
                                                   fmi3ValueReference independents[], size_t ei[],
                                                   fmi3DependencyKind kinds[], size_t n) {
    (void)dependent;
    (void)ed;
    (void)independents;
    (void)ei;
    (void)kinds;
    (void)n;
    return unsupported(i, "fmi3GetVariableDependencies");
}
FMI3_Export fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nu,
                                                    const fmi3ValueReference knowns[], size_t nk,
                                                    const fmi3Float64 seed[], size_t ns, fmi3Float64 sens[],
                                                    size_t nsens) {
    (void)unknowns;
    (void)nu;
    (void)knowns;
    (void)nk;
    (void)seed;
    (void)ns;
    (void)sens;
    (void)nsens;
    return unsupported(i, "fmi3GetDirectionalDerivative");
}
FMI3_Export fmi3Status fmi3GetAdjointDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nu,
                                                const fmi3ValueReference knowns[], size_t nk, const fmi3Float64 seed[],
                                                size_t ns, fmi3Float64 sens[], size_t nsens) {
    (void)unknowns;
    (void)nu;
    (void)knowns;
    (void)nk;
    (void)seed;
    (void)ns;
    (void)sens;
    (void)nsens;
    return unsupported(i, "fmi3GetAdjointDerivative");
}
FMI3_Export fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                                const fmi3Int32 orders[], fmi3Float64 values[], size_t n) {
    (void)vr;
    (void)orders;
    (void)values;
    (void)n;
    return nvr ? unsupported(i, "fmi3GetOutputDerivatives") : fmi3OK;
}

FMI3_Export fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_prior,
                                  fmi3Boolean *event_needed, fmi3Boolean *terminate, fmi3Boolean *early_return,
                                  fmi3Float64 *last_time) {
    (void)no_prior;
    if (event_needed) *event_needed = false;
    if (terminate) *terminate = false;
    if (early_return) *early_return = false;
    if (CC3(i)->scheduled) return unsupported(i, "fmi3DoStep");
    if (guard(i, CS_STEP, "fmi3DoStep")) return fmi3Error;
    fmi3Status st = (fmi3Status)cc_do_step(CC3(i), t, h, "fmi3DoStep");
    if (last_time) *last_time = CC3(i)->t;
    return st;
}

FMI3_Export fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState *s) {
    return (fmi3Status)cc_get_state(CC3(i), s, "fmi3GetFMUState");
}
FMI3_Export fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState s) {
    return (fmi3Status)cc_set_state(CC3(i), s, "fmi3SetFMUState");
}
FMI3_Export fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState *s) {
    (void)i;
    cc_free_state(s);
    return fmi3OK;
}
FMI3_Export fmi3Status fmi3SerializedFMUStateSize(fmi3Instance i, fmi3FMUState s, size_t *size) {
    (void)i;
    (void)s;
    *size = cc_state_size();
    return fmi3OK;
}
FMI3_Export fmi3Status fmi3SerializeFMUState(fmi3Instance i, fmi3FMUState s, fmi3Byte bytes[], size_t size) {
    return (fmi3Status)cc_serialize(CC3(i), s, bytes, size, "fmi3SerializeFMUState");
}
FMI3_Export fmi3Status fmi3DeserializeFMUState(fmi3Instance i, const fmi3Byte bytes[], size_t size,
                                               fmi3FMUState *s) {
    return (fmi3Status)cc_deserialize(CC3(i), bytes, size, s, "fmi3DeserializeFMUState");
}

/* ---- Model Exchange and Scheduled Execution: not this FMU's interfaces -------------- */

FMI3_Export fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t) {
    const char *fn = "fmi3ActivateModelPartition";
    if (!CC3(i)->scheduled) return unsupported(i, fn);
    if (guard(i, CS_STEP, fn)) return fmi3Error;
    if (clock != cc_nvars() + 1) {
        cc_report(CC3(i), CC_ERROR, "%s: value reference %u is not this FMU's clock (%u)", fn, (unsigned)clock,
                  cc_nvars() + 1);
        return fmi3Error;
    }
    return (fmi3Status)cc_tick(CC3(i), t, fn);
}
FMI3_Export fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) {
    return unsupported(i, "fmi3EnterContinuousTimeMode");
}
FMI3_Export fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean no_prior, fmi3Boolean *enter_event,
                                                   fmi3Boolean *terminate) {
    (void)no_prior;
    (void)enter_event;
    (void)terminate;
    return unsupported(i, "fmi3CompletedIntegratorStep");
}
FMI3_Export fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 t) {
    (void)t;
    return unsupported(i, "fmi3SetTime");
}
#define NO_ME_VECTOR(Q, T, fn)                                     \
    FMI3_Export fmi3Status fn(fmi3Instance i, Q T x[], size_t n) { \
        (void)x;                                                   \
        (void)n;                                                   \
        return unsupported(i, #fn);                                \
    }
NO_ME_VECTOR(const, fmi3Float64, fmi3SetContinuousStates)
NO_ME_VECTOR(, fmi3Float64, fmi3GetContinuousStateDerivatives)
NO_ME_VECTOR(, fmi3Float64, fmi3GetEventIndicators)
NO_ME_VECTOR(, fmi3Float64, fmi3GetContinuousStates)
NO_ME_VECTOR(, fmi3Float64, fmi3GetNominalsOfContinuousStates)
FMI3_Export fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance i, size_t *n) {
    (void)i;
    *n = 0;
    return fmi3OK;
}
FMI3_Export fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance i, size_t *n) {
    (void)i;
    *n = 0;
    return fmi3OK;
}
