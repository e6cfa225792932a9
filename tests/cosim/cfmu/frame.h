/* A minimal FMI 2.0 co-simulation frame shared by the test FMUs of mbfmu.cosim.
 *
 * A model file defines NR, NI, MODEL_ID, the arrays of start values and the hooks
 *   model_init(Inst*), model_derivs(Inst*, tau, x[], dx[]), model_outputs(Inst*)
 * and then includes this file. Real variables live in r[], Integer ones in i[];
 * the value reference is the index. Reals marked as inputs in IS_INPUT may carry
 * first and second input derivatives (canInterpolateInputs="true"): over a step,
 * u(tau) = u + d1*tau + d2*tau^2/2. States are integrated with classic RK4 and
 * nsub sub-steps per doStep. fail_time makes doStep fail (for error tests).
 * A model that defines MODEL_STEP_HOOK provides model_step(Inst*, t, h), called
 * first in every doStep; MODEL_RESTORE_HOOK, model_restore(Inst*), called after
 * fmi2SetFMUstate copied the state back.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "fmi2Functions.h"

typedef struct {
    double r[NR];
    int i[NI > 0 ? NI : 1];
    double d1[NR], d2[NR];
    double time;
    const fmi2CallbackFunctions *cb;
    char name[64];
} Inst;

static void model_init(Inst *m);
static void model_outputs(Inst *m);
static void model_derivs(Inst *m, double tau, const double *x, double *dx);
#ifdef MODEL_STEP_HOOK
static void model_step(Inst *m, double t, double h);
#endif
#ifdef MODEL_RESTORE_HOOK
static void model_restore(Inst *m);
#endif

__attribute__((unused)) static double input_at(const Inst *m, int vr, double tau) {
    return m->r[vr] + m->d1[vr] * tau + 0.5 * m->d2[vr] * tau * tau;
}

static void logmsg(Inst *m, fmi2Status s, const char *msg) {
    if (m->cb && m->cb->logger)
        m->cb->logger(m->cb->componentEnvironment, m->name, s, "logStatusError", msg);
}

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }
fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cat[]) { return fmi2OK; }

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                              const fmi2CallbackFunctions *cb, fmi2Boolean vis, fmi2Boolean log) {
    Inst *m = (Inst *)calloc(1, sizeof(Inst));
    if (!m) return NULL;
    m->cb = cb;
    strncpy(m->name, name ? name : "?", sizeof(m->name) - 1);
    memcpy(m->r, R_START, sizeof(m->r));
#if NI > 0
    memcpy(m->i, I_START, sizeof(int) * NI);
#endif
    return m;
}
void fmi2FreeInstance(fmi2Component c) { free(c); }
fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDef, fmi2Real tol, fmi2Real t0, fmi2Boolean stopDef, fmi2Real tStop) {
    ((Inst *)c)->time = t0; return fmi2OK;
}
fmi2Status fmi2EnterInitializationMode(fmi2Component c) { return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { model_init((Inst *)c); return fmi2OK; }
fmi2Status fmi2Terminate(fmi2Component c) { return fmi2OK; }
fmi2Status fmi2Reset(fmi2Component c) {
    Inst *m = (Inst *)c; memcpy(m->r, R_START, sizeof(m->r)); m->time = 0; return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
    Inst *m = (Inst *)c; model_outputs(m);
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NR) return fmi2Error; v[k] = m->r[vr[k]]; }
    return fmi2OK;
}
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
    Inst *m = (Inst *)c;
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NR) return fmi2Error; m->r[vr[k]] = v[k]; }
    return fmi2OK;
}
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
    Inst *m = (Inst *)c;
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NI) return fmi2Error; v[k] = m->i[vr[k]]; }
    return fmi2OK;
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
    Inst *m = (Inst *)c;
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NI) return fmi2Error; m->i[vr[k]] = v[k]; }
    return fmi2OK;
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) { return n ? fmi2Error : fmi2OK; }
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) { return n ? fmi2Error : fmi2OK; }
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[]) { return n ? fmi2Error : fmi2OK; }
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[]) { return n ? fmi2Error : fmi2OK; }

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) {
    Inst *copy = (Inst *)malloc(sizeof(Inst));
    if (!copy) return fmi2Error;
    memcpy(copy, c, sizeof(Inst)); *s = copy; return fmi2OK;
}
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) {
    memcpy(c, s, sizeof(Inst));
#ifdef MODEL_RESTORE_HOOK
    model_restore((Inst *)c);
#endif
    return fmi2OK;
}
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) { free(*s); *s = NULL; return fmi2OK; }
fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *size) { *size = sizeof(Inst); return fmi2OK; }
fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t size) { memcpy(b, s, sizeof(Inst)); return fmi2OK; }
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t size, fmi2FMUstate *s) {
    Inst *copy = (Inst *)malloc(sizeof(Inst)); memcpy(copy, b, sizeof(Inst)); *s = copy; return fmi2OK;
}
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
    const fmi2ValueReference z[], size_t nz, const fmi2Real dz[], fmi2Real dv[]) { return fmi2Error; }

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real v[]) {
    Inst *m = (Inst *)c;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] >= NR || !IS_INPUT[vr[k]]) return fmi2Error;
        if (order[k] == 1) m->d1[vr[k]] = v[k];
        else if (order[k] == 2) m->d2[vr[k]] = v[k];
        else return fmi2Error;
    }
    return fmi2OK;
}
fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real v[]) { return fmi2Error; }

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noPrior) {
    Inst *m = (Inst *)c;
#ifdef MODEL_STEP_HOOK
    model_step(m, t, h);  /* a model's own work at the start of every step */
#endif
    if (t + h > m->r[VR_FAIL_TIME]) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: simulated failure in doStep from t=%g (fail_time=%g)", m->name, t, m->r[VR_FAIL_TIME]);
        logmsg(m, fmi2Error, msg);
        return fmi2Error;
    }
#if NX > 0
    int nsub = m->i[0] > 0 ? m->i[0] : 1;
    double dt = h / nsub, x[NX], k1[NX], k2[NX], k3[NX], k4[NX], y[NX];
    for (int j = 0; j < NX; j++) x[j] = m->r[STATE_VR[j]];
    for (int s = 0; s < nsub; s++) {
        double tau = s * dt;
        model_derivs(m, tau, x, k1);
        for (int j = 0; j < NX; j++) y[j] = x[j] + 0.5 * dt * k1[j];
        model_derivs(m, tau + 0.5 * dt, y, k2);
        for (int j = 0; j < NX; j++) y[j] = x[j] + 0.5 * dt * k2[j];
        model_derivs(m, tau + 0.5 * dt, y, k3);
        for (int j = 0; j < NX; j++) y[j] = x[j] + dt * k3[j];
        model_derivs(m, tau + dt, y, k4);
        for (int j = 0; j < NX; j++) x[j] += dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    }
    for (int j = 0; j < NX; j++) m->r[STATE_VR[j]] = x[j];
#endif
    memset(m->d1, 0, sizeof m->d1); memset(m->d2, 0, sizeof m->d2);
    m->time = t + h;
    return fmi2OK;
}
fmi2Status fmi2CancelStep(fmi2Component c) { return fmi2Error; }
fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) { return fmi2Error; }
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) {
    if (s == fmi2LastSuccessfulTime) { *v = ((Inst *)c)->time; return fmi2OK; } return fmi2Error;
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) { return fmi2Error; }
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) { return fmi2Error; }
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) { return fmi2Error; }
