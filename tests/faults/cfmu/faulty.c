/* A small FMI 2.0 co-simulation FMU that misbehaves on purpose (fault-injection tests).
 *
 * Real variables (value reference = index): fail_time [s], mode, u (input),
 * y (output, y = t + u), x (output, the time the FMU has reached [s]).
 * From the first step that ends after fail_time, fmi2DoStep does what `mode` says:
 *   0 nothing, 1 fmi2Discard, 2 fmi2Error, 3 fmi2Fatal, 4 dereference NULL (segfault),
 *   5 y = NaN, 6 hang (sleep forever), 7 ask to stop (fmi2Discard + fmi2Terminated).
 * After it returned fmi2Fatal, any further call on the instance aborts the process (a
 * master must make none, FMI 2.0 section 2.1.3). A step that ends past the stop time given in fmi2SetupExperiment is refused
 * to the last bit (as strict FMUs do), and so is a step that does not start at the
 * FMU's time (to 1e-9 relative).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmi2Functions.h"
#include "refused2.h"  /* the FMI 2.0 calls neither fault FMU implements */

enum { FAIL, MODE, U, Y, X, NR };
typedef struct {
    double r[NR];
    double time, stop;
    int stop_defined, terminated, fatal;
    const fmi2CallbackFunctions *cb;
    char name[64];
} Inst;

#define ALIVE(c) do { if (((Inst *)(c))->fatal) abort(); } while (0)

static void logmsg(Inst *m, fmi2Status s, const char *msg) {
    if (m->cb && m->cb->logger) m->cb->logger(m->cb->componentEnvironment, m->name, s, "logAll", msg);
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                              const fmi2CallbackFunctions *cb, fmi2Boolean vis, fmi2Boolean log) {
    Inst *m = (Inst *)calloc(1, sizeof(Inst));
    if (!m) return NULL;
    m->cb = cb;
    strncpy(m->name, name ? name : "?", sizeof(m->name) - 1);
    m->r[FAIL] = 1e300;
    return m;
}
void fmi2FreeInstance(fmi2Component c) { ALIVE(c); free(c); }
fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDef, fmi2Real tol, fmi2Real t0, fmi2Boolean stopDef, fmi2Real tStop) {
    Inst *m = (Inst *)c; m->time = t0; m->r[X] = t0; m->stop = tStop; m->stop_defined = stopDef; return fmi2OK;
}
fmi2Status fmi2EnterInitializationMode(fmi2Component c) { return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { Inst *m = (Inst *)c; m->r[Y] = m->time + m->r[U]; return fmi2OK; }
fmi2Status fmi2Terminate(fmi2Component c) { ALIVE(c); return fmi2OK; }
fmi2Status fmi2Reset(fmi2Component c) { return fmi2Error; }
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
    Inst *m = (Inst *)c; ALIVE(c);
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NR) return fmi2Error; v[k] = m->r[vr[k]]; }
    return fmi2OK;
}
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
    Inst *m = (Inst *)c; ALIVE(c);
    for (size_t k = 0; k < n; k++) { if (vr[k] >= NR) return fmi2Error; m->r[vr[k]] = v[k]; }
    return fmi2OK;
}
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real v[]) { return fmi2Error; }
fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real v[]) { return fmi2Error; }

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noPrior) {
    Inst *m = (Inst *)c;
    char msg[200];
    ALIVE(c);
    if (fabs(t - m->time) > 1e-9 * (1.0 + fabs(t))) {
        snprintf(msg, sizeof msg, "doStep from t=%.17g but the FMU is at t=%.17g", t, m->time);
        logmsg(m, fmi2Error, msg); return fmi2Error;
    }
    if (m->stop_defined && t + h > m->stop) {
        snprintf(msg, sizeof msg, "doStep to t=%.17g past the stop time %.17g", t + h, m->stop);
        logmsg(m, fmi2Error, msg); return fmi2Error;
    }
    if (t + h > m->r[FAIL]) {
        int mode = (int)m->r[MODE];
        snprintf(msg, sizeof msg, "injected fault %d in the step from t=%.17g", mode, t);
        if (mode) logmsg(m, mode == 1 || mode == 7 ? fmi2Discard : fmi2Error, msg);
        switch (mode) {
        case 1: return fmi2Discard;
        case 2: return fmi2Error;
        case 3: m->fatal = 1; return fmi2Fatal;
        case 4: { volatile int *p = NULL; *p = 1; break; }
        case 5: m->r[Y] = NAN; m->time = t + h; m->r[X] = m->time; return fmi2OK;
        case 6: for (;;) sleep(1);
        case 7: m->terminated = 1; return fmi2Discard;
        }
    }
    m->time = t + h;
    m->r[X] = m->time;
    m->r[Y] = m->time + m->r[U];
    return fmi2OK;
}
fmi2Status fmi2CancelStep(fmi2Component c) { return fmi2Error; }
fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) { return fmi2Error; }
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) {
    Inst *m = (Inst *)c;
    if (s == fmi2LastSuccessfulTime) { *v = m->time; return fmi2OK; }
    return fmi2Error;
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) { return fmi2Error; }
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) {
    Inst *m = (Inst *)c;
    if (s == fmi2Terminated) { *v = m->terminated; return fmi2OK; }
    return fmi2Error;
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) { return fmi2Error; }
