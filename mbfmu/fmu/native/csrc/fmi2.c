/*
 * FMI 2.0 interface of the native runtime, Co-Simulation and Model Exchange
 * in one binary (one plant, data in model_data.c). The types and signatures
 * are the FMI 2.0 standard's own headers' (fmi2Functions.h, shipped in the
 * FMU's sources/ with their license). The instance behind them, its state
 * machine and its messages are component.c's (shared with fmi3.c).
 *
 * Errors are reported through the host's logger with a message naming the
 * variable, value and time, and the call returns fmi2Error; a refused call
 * changes nothing. Nothing returns fmi2Fatal except allocation failures.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "component.h"
#include "fmi2Functions.h"
#include "fmi_logger.h"

/* the component and the host's callbacks it logs through */
typedef struct {
    mbn_component *c;
    fmi2CallbackFunctions cb;
} fmu2;

#define F2(c) ((fmu2 *)(c))
#define CC(c) (F2(c)->c)

static void host_log2(void *host, int status, const char *msg) {
    fmu2 *f = host;
    if (f) fmi2_log_message(&f->cb, f->c ? f->c->name : NULL, status, msg);
}

/* the entry of every call on an instance: c not NULL and the call allowed
 * in its state (types: 1 CS, 2 ME, 3 both) */
#define ENTER(c, mask, types, fn)                                               \
    do {                                                                        \
        if (!(c)) return fmi2Error;                                             \
        if (mbn_allowed(CC(c), (mask), (types), (fn))) return fmi2Error;        \
    } while (0)

/* FMI 2 states in which the calls are allowed (FMI 2.0 sections 3.2.3, 4.2.4) */
#define S_GET (MBN_S_INIT | MBN_S_RUNNING | MBN_S_TERMINATED | MBN_S_ERROR)
#define S_SET (MBN_S_INSTANTIATED | MBN_S_INIT | MBN_S_RUNNING)
#define S_STATE (MBN_S_ANY)
#define S_STATUS (MBN_S_STEP | MBN_S_TERMINATED | MBN_S_ERROR)

/* ------------------------------------------------------------ inquiry */
FMI2_Export const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_Export const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_Export fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    (void)n; (void)cats;
    ENTER(c, MBN_S_ANY, 3, "fmi2SetDebugLogging");
    CC(c)->logging = on;
    return fmi2OK;
}

/* ------------------------------------------------------------ life cycle */
FMI2_Export fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                          fmi2String resources, const fmi2CallbackFunctions *cb,
                                          fmi2Boolean visible, fmi2Boolean logging) {
    (void)resources; (void)visible;
    fmu2 *f = calloc(1, sizeof(fmu2));
    if (!f) return NULL;
    if (cb) f->cb = *cb;
    mbn_component tmp = {0};
    tmp.log = host_log2;
    tmp.host = f;
    if (type != fmi2CoSimulation && type != fmi2ModelExchange) {
        mbn_report(&tmp, fmi2Error, "plant %s: unknown FMU type %d (0 model exchange, 1 co-simulation)",
                   MBN_DATA.plant, (int)type);
        free(f);
        return NULL;
    }
    if (MBN_DATA.fmi != 2) {
        mbn_report(&tmp, fmi2Error, "plant %s: this FMU is FMI %d; its FMI 2 interface has no variables",
                   MBN_DATA.plant, MBN_DATA.fmi);
        free(f);
        return NULL;
    }
    if (!guid || strcmp(guid, MBN_DATA.guid)) {
        mbn_report(&tmp, fmi2Error, "plant %s: GUID %s does not match this FMU's %s", MBN_DATA.plant,
                   guid ? guid : "(null)", MBN_DATA.guid);
        free(f);
        return NULL;
    }
    f->c = mbn_component_new(2, type == fmi2ModelExchange ? MBN_ME : MBN_CS, name, host_log2, f, logging);
    if (!f->c) { free(f); return NULL; }
    return f;
}

FMI2_Export void fmi2FreeInstance(fmi2Component c) {
    if (!c) return;
    mbn_component_free(CC(c));
    free(c);
}

FMI2_Export fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol,
                                           fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
    (void)stop_defined; (void)stop;
    ENTER(c, MBN_S_INSTANTIATED, 3, "fmi2SetupExperiment");
    return (fmi2Status)mbn_setup(CC(c), tol_defined, tol, start);
}

FMI2_Export fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    ENTER(c, MBN_S_INSTANTIATED, 3, "fmi2EnterInitializationMode");
    return (fmi2Status)mbn_enter_init(CC(c));
}

FMI2_Export fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    ENTER(c, MBN_S_INIT, 3, "fmi2ExitInitializationMode");
    return (fmi2Status)mbn_exit_init(CC(c));
}

FMI2_Export fmi2Status fmi2Terminate(fmi2Component c) {
    /* also from the error state: hosts end a failed run with it (FMI 2 would only free) */
    ENTER(c, MBN_S_RUNNING | MBN_S_ERROR, 3, "fmi2Terminate");
    return (fmi2Status)mbn_terminate(CC(c));
}

FMI2_Export fmi2Status fmi2Reset(fmi2Component c) {
    ENTER(c, MBN_S_ANY, 3, "fmi2Reset");
    return (fmi2Status)mbn_reset(CC(c));
}

/* ------------------------------------------------------------ values */
FMI2_Export fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    ENTER(c, S_GET, 3, "fmi2GetReal");
    if (n && (!vr || !value)) { mbn_report(CC(c), fmi2Error, "fmi2GetReal: NULL arrays"); return fmi2Error; }
    fmi2Status st = fmi2OK;
    for (size_t k = 0; k < n; ++k) {
        if (mbn_check_vr(CC(c), vr[k])) { value[k] = NAN; st = fmi2Error; continue; }
        if (mbn_get(CC(c), vr[k], &value[k])) st = fmi2Error;
    }
    return st;
}

FMI2_Export fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    ENTER(c, S_SET, 3, "fmi2SetReal");
    if (n && (!vr || !value)) { mbn_report(CC(c), fmi2Error, "fmi2SetReal: NULL arrays"); return fmi2Error; }
    return (fmi2Status)mbn_set(CC(c), vr, n, value);
}

#define NO_TYPE(T, name, arr, mask)                                                             \
    FMI2_Export fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], size_t n, arr) { \
        (void)vr; (void)value;                                                                  \
        ENTER(c, mask, 3, #name);                                                               \
        if (n == 0) return fmi2OK;                                                              \
        mbn_report(CC(c), fmi2Error, "this FMU has no " T " variables");                        \
        return fmi2Error;                                                                       \
    }
/* the count parameters (MBN_DATA.p_integer) are the Integer variables: their
 * value references are the parameters' (a count is held as a whole double) */
FMI2_Export fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer value[]) {
    ENTER(c, S_GET, 3, "fmi2GetInteger");
    if (n && (!vr || !value)) { mbn_report(CC(c), fmi2Error, "fmi2GetInteger: NULL arrays"); return fmi2Error; }
    const mbn_data *D = CC(c)->in->data;
    fmi2Status st = fmi2OK;
    for (size_t k = 0; k < n; ++k) {
        unsigned j = vr[k] - (unsigned)D->nu;
        if (vr[k] < (unsigned)D->nu || j >= (unsigned)D->np || !D->p_integer || !D->p_integer[j]) {
            mbn_report(CC(c), fmi2Error, "fmi2GetInteger: value reference %u is not an Integer variable", vr[k]);
            value[k] = 0;
            st = fmi2Error;
            continue;
        }
        value[k] = (fmi2Integer)CC(c)->in->p[j];
    }
    return st;
}
NO_TYPE("Boolean", fmi2GetBoolean, fmi2Boolean value[], S_GET)
NO_TYPE("String", fmi2GetString, fmi2String value[], S_GET)
NO_TYPE("Integer", fmi2SetInteger, const fmi2Integer value[], S_SET)
NO_TYPE("Boolean", fmi2SetBoolean, const fmi2Boolean value[], S_SET)
NO_TYPE("String", fmi2SetString, const fmi2String value[], S_SET)

/* ------------------------------------------------------------ co-simulation */
FMI2_Export fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    (void)no_prior;
    ENTER(c, MBN_S_STEP, 1, "fmi2DoStep");
    return (fmi2Status)mbn_do_step(CC(c), t, h);
}

FMI2_Export fmi2Status fmi2CancelStep(fmi2Component c) {
    ENTER(c, MBN_S_STEP, 1, "fmi2CancelStep");
    mbn_report(CC(c), fmi2Error, "fmi2CancelStep: this FMU steps synchronously; there is no step to cancel");
    return fmi2Error;
}

/* the status getters: allowed states, a value pointer */
#define STATUS_ENTER(c, value, fn)                                                                \
    do {                                                                                          \
        ENTER(c, S_STATUS, 1, fn);                                                                \
        if (!(value)) { mbn_report(CC(c), fmi2Error, fn ": no value pointer (NULL)"); return fmi2Error; } \
    } while (0)

FMI2_Export fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value) {
    STATUS_ENTER(c, value, "fmi2GetStatus");
    if (s != fmi2DoStepStatus) return fmi2Discard;
    *value = CC(c)->state == MBN_S_ERROR ? fmi2Error : fmi2OK; /* the last step ran synchronously */
    return fmi2OK;
}
FMI2_Export fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value) {
    STATUS_ENTER(c, value, "fmi2GetRealStatus");
    if (s == fmi2LastSuccessfulTime) { *value = CC(c)->in->t; return fmi2OK; }
    return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value) {
    (void)s;
    STATUS_ENTER(c, value, "fmi2GetIntegerStatus");
    return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value) {
    STATUS_ENTER(c, value, "fmi2GetBooleanStatus");
    if (s == fmi2Terminated) { *value = 0; return fmi2OK; } /* the FMU never asks to stop */
    return fmi2Discard;
}
FMI2_Export fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value) {
    (void)s;
    STATUS_ENTER(c, value, "fmi2GetStringStatus");
    return fmi2Discard;
}

FMI2_Export fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                   const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr; (void)order; (void)value;
    ENTER(c, MBN_S_INSTANTIATED | MBN_S_INIT | MBN_S_STEP, 1, "fmi2SetRealInputDerivatives");
    if (n == 0) return fmi2OK;
    mbn_report(CC(c), fmi2Error, "this FMU cannot interpolate inputs (canInterpolateInputs=false)");
    return fmi2Error;
}
FMI2_Export fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                    const fmi2Integer order[], fmi2Real value[]) {
    (void)vr; (void)order; (void)value;
    ENTER(c, MBN_S_STEP | MBN_S_TERMINATED | MBN_S_ERROR, 1, "fmi2GetRealOutputDerivatives");
    if (n == 0) return fmi2OK;
    mbn_report(CC(c), fmi2Error, "this FMU provides no output derivatives (maxOutputDerivativeOrder=0)");
    return fmi2Error;
}
FMI2_Export fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference unknown[],
                                                    size_t nunknown, const fmi2ValueReference known[],
                                                    size_t nknown, const fmi2Real dknown[], fmi2Real dunknown[]) {
    ENTER(c, S_GET, 3, "fmi2GetDirectionalDerivative");
    return (fmi2Status)mbn_directional(CC(c), unknown, nunknown, known, nknown, dknown, dunknown, 0);
}

/* ------------------------------------------------------------ model exchange */
FMI2_Export fmi2Status fmi2EnterEventMode(fmi2Component c) {
    ENTER(c, MBN_S_EVENT | MBN_S_CONT, 2, "fmi2EnterEventMode");
    return (fmi2Status)mbn_enter_event_mode(CC(c));
}

FMI2_Export fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
    ENTER(c, MBN_S_EVENT, 2, "fmi2NewDiscreteStates");
    if (!info) { mbn_report(CC(c), fmi2Error, "fmi2NewDiscreteStates: no event info (NULL)"); return fmi2Error; }
    int changed = 0;
    double next = INFINITY;
    fmi2Status st = (fmi2Status)mbn_new_discrete_states(CC(c), &changed, &next);
    info->newDiscreteStatesNeeded = 0;
    info->terminateSimulation = 0;
    info->nominalsOfContinuousStatesChanged = 0;
    info->valuesOfContinuousStatesChanged = changed;
    info->nextEventTimeDefined = isfinite(next);
    info->nextEventTime = isfinite(next) ? next : 0.0;
    return st;
}

FMI2_Export fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
    ENTER(c, MBN_S_EVENT, 2, "fmi2EnterContinuousTimeMode");
    return (fmi2Status)mbn_enter_continuous_mode(CC(c));
}

FMI2_Export fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean no_prior, fmi2Boolean *enter_event,
                                                   fmi2Boolean *terminate) {
    (void)no_prior;
    ENTER(c, MBN_S_CONT, 2, "fmi2CompletedIntegratorStep");
    if (!enter_event || !terminate) {
        mbn_report(CC(c), fmi2Error, "fmi2CompletedIntegratorStep: NULL flags");
        return fmi2Error;
    }
    int ev = 0;
    fmi2Status st = (fmi2Status)mbn_completed_step(CC(c), &ev);
    *enter_event = ev;
    *terminate = 0;
    return st;
}

FMI2_Export fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) {
    ENTER(c, MBN_S_EVENT | MBN_S_CONT, 2, "fmi2SetTime");
    return (fmi2Status)mbn_set_time(CC(c), t);
}

FMI2_Export fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
    ENTER(c, MBN_S_EVENT | MBN_S_CONT, 2, "fmi2SetContinuousStates");
    return (fmi2Status)mbn_set_states(CC(c), x, nx);
}

FMI2_Export fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
    ENTER(c, S_GET, 2, "fmi2GetDerivatives");
    return (fmi2Status)mbn_get_derivatives(CC(c), dx, nx);
}

FMI2_Export fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t nz) {
    ENTER(c, S_GET, 2, "fmi2GetEventIndicators");
    return (fmi2Status)mbn_get_indicators(CC(c), z, nz);
}

FMI2_Export fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    ENTER(c, S_GET, 2, "fmi2GetContinuousStates");
    return (fmi2Status)mbn_get_states(CC(c), x, nx);
}

FMI2_Export fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    ENTER(c, MBN_S_INSTANTIATED | S_GET, 2, "fmi2GetNominalsOfContinuousStates");
    return (fmi2Status)mbn_get_nominals(CC(c), x, nx);
}

/* ------------------------------------------------------------ FMU state */
FMI2_Export fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    ENTER(c, S_STATE, 3, "fmi2GetFMUstate");
    if (!state) { mbn_report(CC(c), fmi2Error, "fmi2GetFMUstate: no state pointer (NULL)"); return fmi2Error; }
    return (fmi2Status)mbn_get_state(CC(c), (mbn_saved **)state);
}

FMI2_Export fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    ENTER(c, S_STATE, 3, "fmi2SetFMUstate");
    if (!state) { mbn_report(CC(c), fmi2Error, "no FMU state given"); return fmi2Error; }
    return (fmi2Status)mbn_set_state(CC(c), state);
}

FMI2_Export fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    ENTER(c, S_STATE, 3, "fmi2FreeFMUstate");
    return (fmi2Status)mbn_free_state(CC(c), (mbn_saved **)state);
}

FMI2_Export fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
    ENTER(c, S_STATE, 3, "fmi2SerializedFMUstateSize");
    if (!state || !size) { mbn_report(CC(c), fmi2Error, "fmi2SerializedFMUstateSize: NULL pointers"); return fmi2Error; }
    return (fmi2Status)mbn_serialized_size(CC(c), state, size);
}

FMI2_Export fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size) {
    ENTER(c, S_STATE, 3, "fmi2SerializeFMUstate");
    if (!state || !bytes) { mbn_report(CC(c), fmi2Error, "fmi2SerializeFMUstate: NULL pointers"); return fmi2Error; }
    return (fmi2Status)mbn_serialize(CC(c), state, (unsigned char *)bytes, size);
}

FMI2_Export fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                               fmi2FMUstate *state) {
    ENTER(c, S_STATE, 3, "fmi2DeSerializeFMUstate");
    if (!state) { mbn_report(CC(c), fmi2Error, "fmi2DeSerializeFMUstate: no state pointer (NULL)"); return fmi2Error; }
    return (fmi2Status)mbn_deserialize(CC(c), (const unsigned char *)bytes, size, (mbn_saved **)state);
}
