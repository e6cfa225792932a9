/* What the FMI 3.0 test FMUs of mbfmu.cosim share (ticker3.c, sampler_me3.c).
 *
 * A model file defines its instance type `Inst` (allocated with calloc, with the fields
 * `log`, a fmi3LogMessageCallback, `env`, its fmi3InstanceEnvironment, `time` [s] and
 * `state`, set to the model's INIT in initialization mode), says which interfaces it
 * implements (FMU_CO_SIMULATION, FMU_MODEL_EXCHANGE, FMU_SCHEDULED_EXECUTION) and then
 * includes this file, which gives
 *   fail(m, what): logs `what` as an error and returns fmi3Error;
 *   fmi3FreeInstance, fmi3EnterInitializationMode (the start time, state INIT);
 *   fmi3Terminate, fmi3Reset (refused), fmi3GetVersion, fmi3SetDebugLogging;
 *   every other FMI 3.0 function that none of these FMUs implements, and those of the
 *   interfaces the model does not implement, refused through fail ("<name>: not supported";
 *   an instantiation function of such an interface returns NULL).
 * The model defines fmi3GetFloat64, fmi3SetFloat64, fmi3GetInt32, fmi3GetClock,
 * fmi3SetClock, fmi3GetIntervalDecimal and fmi3GetShiftDecimal (NO() refuses one).
 */
#include <stdlib.h>
#include "fmi3Functions.h"

static fmi3Status fail(Inst *m, const char *what) {
    if (m && m->log) m->log(m->env, fmi3Error, "logStatusError", what);
    return fmi3Error;
}

void fmi3FreeInstance(fmi3Instance i) { free(i); }

fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tol_defined, fmi3Float64 tol,
                                       fmi3Float64 t0, fmi3Boolean stop_defined, fmi3Float64 stop) {
    (void)tol_defined, (void)tol, (void)stop_defined, (void)stop;
    Inst *m = i;
    m->time = t0;
    m->state = INIT;
    return fmi3OK;
}

fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }
fmi3Status fmi3Reset(fmi3Instance i) { return fail(i, "fmi3Reset: not supported"); }
const char *fmi3GetVersion(void) { return fmi3Version; }
fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String c[]) {
    (void)i, (void)on, (void)n, (void)c;
    return fmi3OK;
}

/* ---- the rest of the FMI 3.0 API: not these FMUs' --------------------------------- */
#define NO(name, ...) fmi3Status name(fmi3Instance i, __VA_ARGS__) { return fail(i, #name ": not supported"); }
#define NO_VALUES(T, Tc)                                                                                   \
    NO(fmi3Get##T, const fmi3ValueReference vr[], size_t n, Tc v[], size_t nv)                             \
    NO(fmi3Set##T, const fmi3ValueReference vr[], size_t n, const Tc v[], size_t nv)
NO_VALUES(Float32, fmi3Float32)
NO_VALUES(Int8, fmi3Int8)
NO_VALUES(UInt8, fmi3UInt8)
NO_VALUES(Int16, fmi3Int16)
NO_VALUES(UInt16, fmi3UInt16)
NO_VALUES(UInt32, fmi3UInt32)
NO_VALUES(Int64, fmi3Int64)
NO_VALUES(UInt64, fmi3UInt64)
NO_VALUES(Boolean, fmi3Boolean)
NO_VALUES(String, fmi3String)
NO(fmi3SetInt32, const fmi3ValueReference vr[], size_t n, const fmi3Int32 v[], size_t nv)
NO(fmi3GetBinary, const fmi3ValueReference vr[], size_t n, size_t s[], fmi3Binary v[], size_t nv)
NO(fmi3SetBinary, const fmi3ValueReference vr[], size_t n, const size_t s[], const fmi3Binary v[], size_t nv)
NO(fmi3GetNumberOfVariableDependencies, fmi3ValueReference vr, size_t *n)
NO(fmi3GetVariableDependencies, fmi3ValueReference d, size_t e[], fmi3ValueReference f[], size_t g[],
   fmi3DependencyKind h[], size_t n)
NO(fmi3GetFMUState, fmi3FMUState *s)
NO(fmi3SetFMUState, fmi3FMUState s)
NO(fmi3FreeFMUState, fmi3FMUState *s)
NO(fmi3SerializedFMUStateSize, fmi3FMUState s, size_t *n)
NO(fmi3SerializeFMUState, fmi3FMUState s, fmi3Byte b[], size_t n)
NO(fmi3DeserializeFMUState, const fmi3Byte b[], size_t n, fmi3FMUState *s)
NO(fmi3GetDirectionalDerivative, const fmi3ValueReference a[], size_t b, const fmi3ValueReference c[], size_t d,
   const fmi3Float64 e[], size_t f, fmi3Float64 g[], size_t h)
NO(fmi3GetAdjointDerivative, const fmi3ValueReference a[], size_t b, const fmi3ValueReference c[], size_t d,
   const fmi3Float64 e[], size_t f, fmi3Float64 g[], size_t h)
fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) { return fail(i, "fmi3EnterConfigurationMode: not supported"); }
fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) { return fail(i, "fmi3ExitConfigurationMode: not supported"); }
NO(fmi3GetIntervalFraction, const fmi3ValueReference vr[], size_t n, fmi3UInt64 c[], fmi3UInt64 r[],
   fmi3IntervalQualifier q[])
NO(fmi3GetShiftFraction, const fmi3ValueReference vr[], size_t n, fmi3UInt64 c[], fmi3UInt64 r[])
NO(fmi3SetIntervalDecimal, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[])
NO(fmi3SetIntervalFraction, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 c[], const fmi3UInt64 r[])
NO(fmi3SetShiftDecimal, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[])
NO(fmi3SetShiftFraction, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 c[], const fmi3UInt64 r[])
fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) { return fail(i, "fmi3EvaluateDiscreteStates: not supported"); }
NO(fmi3GetOutputDerivatives, const fmi3ValueReference vr[], size_t n, const fmi3Int32 o[], fmi3Float64 v[],
   size_t nv)

#ifndef FMU_MODEL_EXCHANGE
fmi3Instance fmi3InstantiateModelExchange(fmi3String a, fmi3String b, fmi3String c, fmi3Boolean d, fmi3Boolean e,
                                          fmi3InstanceEnvironment f, fmi3LogMessageCallback g) {
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g;
    return NULL;
}
fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) { return fail(i, "fmi3EnterContinuousTimeMode: not supported"); }
NO(fmi3CompletedIntegratorStep, fmi3Boolean a, fmi3Boolean *b, fmi3Boolean *c)
NO(fmi3SetTime, fmi3Float64 t)
NO(fmi3SetContinuousStates, const fmi3Float64 x[], size_t n)
NO(fmi3GetContinuousStateDerivatives, fmi3Float64 x[], size_t n)
NO(fmi3GetEventIndicators, fmi3Float64 x[], size_t n)
NO(fmi3GetContinuousStates, fmi3Float64 x[], size_t n)
NO(fmi3GetNominalsOfContinuousStates, fmi3Float64 x[], size_t n)
NO(fmi3GetNumberOfEventIndicators, size_t *n)
NO(fmi3GetNumberOfContinuousStates, size_t *n)
#endif

#ifndef FMU_CO_SIMULATION
fmi3Instance fmi3InstantiateCoSimulation(fmi3String a, fmi3String b, fmi3String c, fmi3Boolean d, fmi3Boolean e,
                                         fmi3Boolean f, fmi3Boolean g, const fmi3ValueReference h[], size_t n,
                                         fmi3InstanceEnvironment j, fmi3LogMessageCallback k,
                                         fmi3IntermediateUpdateCallback l) {
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)n, (void)j, (void)k, (void)l;
    return NULL;
}
NO(fmi3DoStep, fmi3Float64 t, fmi3Float64 h, fmi3Boolean p, fmi3Boolean *a, fmi3Boolean *b, fmi3Boolean *c,
   fmi3Float64 *d)
fmi3Status fmi3EnterStepMode(fmi3Instance i) { return fail(i, "fmi3EnterStepMode: not supported"); }
#endif

#ifndef FMU_SCHEDULED_EXECUTION
fmi3Instance fmi3InstantiateScheduledExecution(fmi3String a, fmi3String b, fmi3String c, fmi3Boolean d,
                                               fmi3Boolean e, fmi3InstanceEnvironment f, fmi3LogMessageCallback g,
                                               fmi3ClockUpdateCallback h, fmi3LockPreemptionCallback j,
                                               fmi3UnlockPreemptionCallback k) {
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)j, (void)k;
    return NULL;
}
NO(fmi3ActivateModelPartition, fmi3ValueReference c, fmi3Float64 t)
#endif
