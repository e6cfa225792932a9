/* A small FMI 2.0 Model Exchange FMU whose derivatives fail on purpose (fault-injection tests).
 *
 * Real variables (value reference = index): fail_time [s] (parameter), x (the
 * continuous state, x(0) = 1, dx/dt = -x), der(x). fmi2GetDerivatives at a time
 * past fail_time logs and returns fmi2Error. FMI 2.0 then allows no call on the
 * instance but fmi2Get*, fmi2Reset and fmi2FreeInstance: every other call logs
 * "called after fmi2Error: <function>" (a master must make none).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"
#include "refused2.h"  /* the FMI 2.0 calls neither fault FMU implements */

enum { FAIL, X, DX, NR };
typedef struct {
    double r[NR];
    double time;
    int error;
    const fmi2CallbackFunctions *cb;
    char name[64];
} Inst;

static void logmsg(Inst *m, fmi2Status s, const char *msg) {
    if (m->cb && m->cb->logger) m->cb->logger(m->cb->componentEnvironment, m->name, s, "logAll", msg);
}

/* every call FMI 2.0 forbids in the error state goes through here */
static int late(fmi2Component c, const char *fn) {
    Inst *m = (Inst *)c;
    char msg[120];
    if (!m->error) return 0;
    snprintf(msg, sizeof msg, "called after fmi2Error: %s", fn);
    logmsg(m, fmi2Error, msg);
    return 1;
}
#define LATE(c) do { if (late((c), __func__)) return fmi2Error; } while (0)

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                              const fmi2CallbackFunctions *cb, fmi2Boolean vis, fmi2Boolean log) {
    Inst *m = (Inst *)calloc(1, sizeof(Inst));
    if (!m) return NULL;
    m->cb = cb;
    strncpy(m->name, name ? name : "?", sizeof(m->name) - 1);
    m->r[FAIL] = 1e300;
    m->r[X] = 1.0;
    return m;
}
void fmi2FreeInstance(fmi2Component c) { free(c); }
fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDef, fmi2Real tol, fmi2Real t0, fmi2Boolean stopDef, fmi2Real tStop) {
    LATE(c); ((Inst *)c)->time = t0; return fmi2OK;
}
fmi2Status fmi2EnterInitializationMode(fmi2Component c) { LATE(c); return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { LATE(c); return fmi2OK; }
fmi2Status fmi2Terminate(fmi2Component c) { LATE(c); return fmi2OK; }
fmi2Status fmi2Reset(fmi2Component c) { return fmi2Error; }
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
    Inst *m = (Inst *)c;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] >= NR) return fmi2Error;
        v[k] = vr[k] == DX ? -m->r[X] : m->r[vr[k]];
    }
    return fmi2OK;
}
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
    Inst *m = (Inst *)c; LATE(c);
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NR) return fmi2Error; m->r[vr[k]] = v[k]; }
    return fmi2OK;
}

/* Model Exchange */
fmi2Status fmi2EnterEventMode(fmi2Component c) { LATE(c); return fmi2OK; }
fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
    LATE(c);
    memset(info, 0, sizeof *info);
    return fmi2OK;
}
fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { LATE(c); return fmi2OK; }
fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noPrior, fmi2Boolean *enter, fmi2Boolean *stop) {
    LATE(c); *enter = fmi2False; *stop = fmi2False; return fmi2OK;
}
fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { LATE(c); ((Inst *)c)->time = t; return fmi2OK; }
fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
    LATE(c); if (nx != 1) return fmi2Error; ((Inst *)c)->r[X] = x[0]; return fmi2OK;
}
fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
    Inst *m = (Inst *)c;
    char msg[120];
    LATE(c);
    if (nx != 1) return fmi2Error;
    if (m->time > m->r[FAIL]) {
        snprintf(msg, sizeof msg, "injected error in fmi2GetDerivatives at t=%.17g", m->time);
        logmsg(m, fmi2Error, msg);
        m->error = 1;
        return fmi2Error;
    }
    dx[0] = -m->r[X];
    return fmi2OK;
}
fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t nz) { LATE(c); return nz ? fmi2Error : fmi2OK; }
fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    if (nx != 1) return fmi2Error; x[0] = ((Inst *)c)->r[X]; return fmi2OK;
}
fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    if (nx != 1) return fmi2Error; x[0] = 1.0; return fmi2OK;
}
fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) { return fmi2Error; }
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) { return fmi2Error; }
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) { return fmi2Error; }
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) { return fmi2Error; }
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) { return fmi2Error; }
