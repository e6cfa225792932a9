/*
 * FMI 2.0 Co-Simulation interface of a native controller FMU (ctrl_fmu.h)
 * over the controller evaluator (controller.h). The types and signatures are
 * the FMI 2.0 standard's own headers' (fmi2Functions.h, shipped in the FMU's
 * sources/ with their license).
 *
 * A refused call (a variable that cannot be set in this state, a parameter
 * out of range, a step that is not a whole number of a discrete controller's
 * samples) is
 * reported through the host's logger, changes nothing and returns
 * fmi2Error. A step whose state would not be finite moves the instance to
 * the error state. Out of memory is fmi2Fatal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl_component.h"
#include "fmi2Functions.h"
#include "fmi_logger.h"

typedef struct {
    cc_inst *f;
    fmi2CallbackFunctions cb;
} fmu2;

#define CC(c) (((fmu2 *)(c))->f)

static void host_log2(void *host, int status, const char *msg) {
    fmu2 *h = host;
    if (h) fmi2_log_message(&h->cb, h->f ? h->f->name : NULL, status, msg);
}

static fmi2Status guard(fmi2Component c, int mask, const char *fn) {
    return cc_allowed(CC(c), mask, fn) ? fmi2OK : fmi2Error;
}

FMI2_Export const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_Export const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_Export fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
    (void)n;
    (void)cats;
    CC(c)->logging = on;
    return fmi2OK;
}

FMI2_Export fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                          const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                          fmi2Boolean logging) {
    (void)resources;
    (void)visible;
    fmu2 *h = calloc(1, sizeof *h);
    fmu2 tmp;
    memset(&tmp, 0, sizeof tmp);
    if (functions) tmp.cb = *functions;
    if (!h) {
        host_log2(&tmp, fmi2Fatal, "fmi2Instantiate: out of memory");
        return NULL;
    }
    *h = tmp;
    const char *why = NULL;
    if (type != fmi2CoSimulation) why = "this FMU is co-simulation only (no model exchange)";
    else if (!guid || strcmp(guid, MBC_FMU.guid) != 0) why = "the GUID is not this FMU's";
    if (why) {
        char msg[512];
        snprintf(msg, sizeof msg, "fmi2Instantiate: %s (%s, GUID %s)", why, MBC_FMU.model, MBC_FMU.guid);
        host_log2(h, fmi2Error, msg);
        free(h);
        return NULL;
    }
    h->f = cc_new(2, name, host_log2, h, logging);
    if (!h->f) {
        free(h);
        return NULL;
    }
    return h;
}

FMI2_Export void fmi2FreeInstance(fmi2Component c) {
    if (!c) return;
    cc_free(CC(c));
    free(c);
}

FMI2_Export fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol, fmi2Real start,
                                           fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined;
    (void)tol;
    (void)stop_defined;
    (void)stop;
    return guard(c, CS_INSTANTIATED, "fmi2SetupExperiment") ? fmi2Error : (fmi2Status)cc_setup(CC(c), start);
}

FMI2_Export fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    return guard(c, CS_INSTANTIATED, "fmi2EnterInitializationMode") ? fmi2Error : (fmi2Status)cc_enter_init(CC(c));
}

FMI2_Export fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    return guard(c, CS_INIT, "fmi2ExitInitializationMode") ? fmi2Error : (fmi2Status)cc_exit_init(CC(c));
}

FMI2_Export fmi2Status fmi2Terminate(fmi2Component c) {
    return guard(c, CS_STEP | CS_ERROR, "fmi2Terminate") ? fmi2Error : (fmi2Status)cc_terminate(CC(c));
}

FMI2_Export fmi2Status fmi2Reset(fmi2Component c) {
    return (fmi2Status)cc_reset(CC(c));
}

FMI2_Export fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[]) {
    if (guard(c, CS_INIT | CS_STEP | CS_TERMINATED | CS_ERROR, "fmi2GetReal")) return fmi2Error;
    return (fmi2Status)cc_get(CC(c), vr, n, value, "fmi2GetReal");
}

FMI2_Export fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[]) {
    if (guard(c, CS_INSTANTIATED | CS_INIT | CS_STEP, "fmi2SetReal")) return fmi2Error;
    return (fmi2Status)cc_set(CC(c), vr, n, value, "fmi2SetReal");
}

static fmi2Status no_vars(fmi2Component c, const fmi2ValueReference vr[], size_t n, const char *fn) {
    if (n == 0) return fmi2OK;
    cc_report(CC(c), CC_ERROR, "%s: no variable of this type has value reference %u", fn, vr[0]);
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

FMI2_Export fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) {
    return (fmi2Status)cc_get_state(CC(c), s, "fmi2GetFMUstate");
}
FMI2_Export fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) {
    return (fmi2Status)cc_set_state(CC(c), s, "fmi2SetFMUstate");
}
FMI2_Export fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) {
    (void)c;
    cc_free_state(s);
    return fmi2OK;
}
FMI2_Export fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *size) {
    (void)c;
    (void)s;
    *size = cc_state_size();
    return fmi2OK;
}
FMI2_Export fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte bytes[], size_t size) {
    return (fmi2Status)cc_serialize(CC(c), s, (unsigned char *)bytes, size, "fmi2SerializeFMUstate");
}
FMI2_Export fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                               fmi2FMUstate *s) {
    return (fmi2Status)cc_deserialize(CC(c), (const unsigned char *)bytes, size, s, "fmi2DeSerializeFMUstate");
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
    cc_report(CC(c), CC_ERROR, "fmi2GetDirectionalDerivative: this FMU does not provide directional derivatives");
    return fmi2Error;
}

FMI2_Export fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                   const fmi2Integer order[], const fmi2Real value[]) {
    (void)vr;
    (void)order;
    (void)value;
    if (n == 0) return fmi2OK;
    cc_report(CC(c), CC_ERROR, "fmi2SetRealInputDerivatives: this FMU holds its inputs over a step (no interpolation)");
    return fmi2Error;
}

FMI2_Export fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                    const fmi2Integer order[], fmi2Real value[]) {
    (void)vr;
    (void)order;
    (void)value;
    if (n == 0) return fmi2OK;
    cc_report(CC(c), CC_ERROR, "fmi2GetRealOutputDerivatives: this FMU does not provide output derivatives");
    return fmi2Error;
}

FMI2_Export fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior) {
    (void)no_prior;
    if (guard(c, CS_STEP, "fmi2DoStep")) return fmi2Error;
    return (fmi2Status)cc_do_step(CC(c), t, h, "fmi2DoStep");
}

FMI2_Export fmi2Status fmi2CancelStep(fmi2Component c) {
    cc_report(CC(c), CC_ERROR, "fmi2CancelStep: steps are synchronous; there is nothing to cancel");
    return fmi2Error;
}

static fmi2Status no_status(fmi2Component c, const char *fn) {
    cc_report(CC(c), CC_DISCARD, "%s: steps are synchronous; no status to report", fn);
    return fmi2Discard;
}

FMI2_Export fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) {
    (void)s;
    (void)v;
    return no_status(c, "fmi2GetStatus");
}
FMI2_Export fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) {
    if (s == fmi2LastSuccessfulTime) {
        *v = CC(c)->t;
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
