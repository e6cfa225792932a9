/* A small FMI 3.0 Model Exchange FMU with clocks, for the master's tests.
 *
 * Continuous states: an undamped oscillator x' = v, v' = -w^2 x (x(0) = 1, v(0) = 0, so
 * x = cos(w t)). The periodic input clock `sample` (interval and shift in the model
 * description) samples the state into its clocked variables: xs = k * x, where `k` is a
 * clocked input of the same clock; `count` counts the ticks and `ts` keeps the tick time.
 * The output clock `cross` ticks at the state event x = 0 (event indicator x), with its
 * time in `t_cross`. The triggered input clock `kick` is counted (`kicks`, `kick_time`).
 *
 * The FMU is strict about clocks as FMI 3.0 says: clocks are set and read in event mode
 * only, clocked variables are read and set only while one of their clocks is active (or in
 * initialization mode), and fmi3UpdateDiscreteStates deactivates every clock. Declared `fixed`
 * without an interval, `sample` has the interval 0.3 s and shift 0.1 s that
 * fmi3GetIntervalDecimal and fmi3GetShiftDecimal give. Any other call
 * returns fmi3Error with a log message.
 *
 * Value references: 0 time, 1 x, 2 der(x), 3 v, 4 der(v), 5 k, 6 xs, 7 count, 8 ts, 9 w,
 * 10 sample, 11 cross, 12 t_cross, 13 kick, 14 kicks, 15 kick_time.
 */
#include <stdlib.h>
#include "fmi3Functions.h"

enum { INSTANTIATED, INIT, EVENT, CONT };

typedef struct {
    double time, x, v, w, k, xs, ts, t_cross, kick_time, interval, shift;
    int count, kicks, state, sample, kick, cross, positive;
    fmi3LogMessageCallback log;
    fmi3InstanceEnvironment env;
} Inst;

static fmi3Status fail(Inst *m, const char *what) {
    if (m && m->log) m->log(m->env, fmi3Error, "logStatusError", what);
    return fmi3Error;
}

/* the output clock ticks where x changed sign since the last event */
static void evaluate_cross(Inst *m) {
    if (m->state == EVENT && (m->x > 0) != m->positive) m->cross = 1;
}

/* whether a clocked variable may be accessed now: in initialization, or while its clock is active */
static int clock_active(Inst *m, fmi3ValueReference vr) {
    int clocked = (vr >= 5 && vr <= 8) || vr == 12 || vr == 14 || vr == 15;
    if (!clocked || m->state == INIT) return 1;
    if (m->state != EVENT) return 0;
    if (vr == 12) {
        evaluate_cross(m);
        return m->cross;
    }
    return vr >= 14 ? m->kick : m->sample;
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String res, fmi3Boolean visible,
                                          fmi3Boolean logging, fmi3InstanceEnvironment env,
                                          fmi3LogMessageCallback log) {
    (void)name, (void)token, (void)res, (void)visible, (void)logging;
    Inst *m = calloc(1, sizeof(Inst));
    if (!m) return NULL;
    m->x = 1.0;
    m->w = 2.0;
    m->k = 1.0;
    m->interval = 0.3;  /* what fmi3GetIntervalDecimal and fmi3GetShiftDecimal give for `sample` */
    m->shift = 0.1;
    m->log = log;
    m->env = env;
    return m;
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

fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
    Inst *m = i;
    if (m->state != INIT) return fail(m, "fmi3ExitInitializationMode: not in initialization mode");
    m->positive = m->x > 0;
    m->state = EVENT;
    return fmi3OK;
}

fmi3Status fmi3EnterEventMode(fmi3Instance i) {
    Inst *m = i;
    if (m->state != CONT) return fail(m, "fmi3EnterEventMode: not in continuous-time mode");
    m->state = EVENT;
    return fmi3OK;
}

fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3EnterContinuousTimeMode: not in event mode");
    if (m->sample || m->kick || m->cross) return fail(m, "fmi3EnterContinuousTimeMode: a clock is still active");
    m->state = CONT;
    return fmi3OK;
}

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean *need_update, fmi3Boolean *terminate,
                                    fmi3Boolean *nominals, fmi3Boolean *values, fmi3Boolean *next_defined,
                                    fmi3Float64 *next) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3UpdateDiscreteStates: not in event mode");
    if (m->sample) {
        m->count++;
        m->ts = m->time;
        m->xs = m->k * m->x;
    }
    if (m->kick) {
        m->kicks++;
        m->kick_time = m->time;
    }
    evaluate_cross(m);
    if (m->cross) m->t_cross = m->time;
    m->positive = m->x > 0;
    m->sample = m->kick = m->cross = 0;  /* FMI 3.0: the FMU deactivates its clocks here */
    *need_update = *terminate = *nominals = *values = *next_defined = fmi3False;
    *next = 0.0;
    return fmi3OK;
}

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean no_prior, fmi3Boolean *enter_event,
                                       fmi3Boolean *terminate) {
    (void)i, (void)no_prior;
    *enter_event = *terminate = fmi3False;
    return fmi3OK;
}

fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 t) {
    ((Inst *)i)->time = t;
    return fmi3OK;
}

fmi3Status fmi3SetContinuousStates(fmi3Instance i, const fmi3Float64 x[], size_t n) {
    Inst *m = i;
    if (n != 2) return fail(m, "fmi3SetContinuousStates: two states");
    m->x = x[0];
    m->v = x[1];
    return fmi3OK;
}

fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
    Inst *m = i;
    if (n != 2) return fail(m, "fmi3GetContinuousStates: two states");
    x[0] = m->x;
    x[1] = m->v;
    return fmi3OK;
}

fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 d[], size_t n) {
    Inst *m = i;
    if (n != 2) return fail(m, "fmi3GetContinuousStateDerivatives: two states");
    d[0] = m->v;
    d[1] = -m->w * m->w * m->x;
    return fmi3OK;
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
    (void)i;
    for (size_t k = 0; k < n; k++) x[k] = 1.0;
    return fmi3OK;
}

fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
    Inst *m = i;
    if (n != 1) return fail(m, "fmi3GetEventIndicators: one indicator");
    z[0] = m->x;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance i, size_t *n) {
    (void)i;
    *n = 1;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance i, size_t *n) {
    (void)i;
    *n = 2;
    return fmi3OK;
}

fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
    Inst *m = i;
    if (n != nv) return fail(m, "fmi3GetFloat64: arrays not supported");
    for (size_t k = 0; k < n; k++) {
        if (!clock_active(m, vr[k])) return fail(m, "fmi3GetFloat64: a clocked variable read while its clock is inactive");
        switch (vr[k]) {
        case 0: v[k] = m->time; break;
        case 1: v[k] = m->x; break;
        case 2: v[k] = m->v; break;
        case 3: v[k] = m->v; break;
        case 4: v[k] = -m->w * m->w * m->x; break;
        case 5: v[k] = m->k; break;
        case 6: v[k] = m->state == EVENT ? m->k * m->x : m->xs; break;  /* the value of this tick */
        case 8: v[k] = m->state == EVENT ? m->time : m->ts; break;
        case 9: v[k] = m->w; break;
        case 12: v[k] = m->state == EVENT ? m->time : m->t_cross; break;
        case 15: v[k] = m->state == EVENT ? m->time : m->kick_time; break;
        default: return fail(m, "fmi3GetFloat64: unknown value reference");
        }
    }
    return fmi3OK;
}

fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                          size_t nv) {
    Inst *m = i;
    if (n != nv) return fail(m, "fmi3SetFloat64: arrays not supported");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == 5) {
            if (!clock_active(m, 5)) return fail(m, "fmi3SetFloat64: k set while its clock is inactive");
            m->k = v[k];
        } else if (m->state != INIT && m->state != INSTANTIATED) {
            return fail(m, "fmi3SetFloat64: parameters and start values are set before initialization ends");
        } else if (vr[k] == 1) m->x = v[k];
        else if (vr[k] == 3) m->v = v[k];
        else if (vr[k] == 9) m->w = v[k];
        else return fail(m, "fmi3SetFloat64: not settable");
    }
    return fmi3OK;
}

fmi3Status fmi3GetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Int32 v[], size_t nv) {
    Inst *m = i;
    if (n != nv) return fail(m, "fmi3GetInt32: arrays not supported");
    for (size_t k = 0; k < n; k++) {
        if (!clock_active(m, vr[k])) return fail(m, "fmi3GetInt32: a clocked variable read while its clock is inactive");
        if (vr[k] == 7) v[k] = m->count + (m->state == EVENT);
        else if (vr[k] == 14) v[k] = m->kicks + (m->state == EVENT);
        else return fail(m, "fmi3GetInt32: unknown value reference");
    }
    return fmi3OK;
}

fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Clock v[]) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3GetClock: not in event mode");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != 11) return fail(m, "fmi3GetClock: not an output clock");
        evaluate_cross(m);
        v[k] = m->cross ? fmi3ClockActive : fmi3ClockInactive;
    }
    return fmi3OK;
}

fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Clock v[]) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3SetClock: not in event mode");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == 10) m->sample = v[k];
        else if (vr[k] == 13) m->kick = v[k];
        else return fail(m, "fmi3SetClock: not an input clock");
    }
    return fmi3OK;
}

fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }
fmi3Status fmi3Reset(fmi3Instance i) { return fail(i, "fmi3Reset: not supported"); }
const char *fmi3GetVersion(void) { return fmi3Version; }
fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String c[]) {
    (void)i, (void)on, (void)n, (void)c;
    return fmi3OK;
}

/* ---- the rest of the FMI 3.0 API: not this FMU's ---------------------------------- */
fmi3Instance fmi3InstantiateCoSimulation(fmi3String a, fmi3String b, fmi3String c, fmi3Boolean d, fmi3Boolean e,
                                         fmi3Boolean f, fmi3Boolean g, const fmi3ValueReference h[], size_t n,
                                         fmi3InstanceEnvironment j, fmi3LogMessageCallback k,
                                         fmi3IntermediateUpdateCallback l) {
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)n, (void)j, (void)k, (void)l;
    return NULL;
}
fmi3Instance fmi3InstantiateScheduledExecution(fmi3String a, fmi3String b, fmi3String c, fmi3Boolean d,
                                               fmi3Boolean e, fmi3InstanceEnvironment f, fmi3LogMessageCallback g,
                                               fmi3ClockUpdateCallback h, fmi3LockPreemptionCallback j,
                                               fmi3UnlockPreemptionCallback k) {
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)j, (void)k;
    return NULL;
}
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
fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[],
                                  fmi3IntervalQualifier q[]) {
    Inst *m = i;
    if (m->state != INIT && m->state != EVENT) return fail(m, "fmi3GetIntervalDecimal: not in initialization or event mode");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != 10) return fail(m, "fmi3GetIntervalDecimal: not a periodic clock");
        v[k] = m->interval;
        q[k] = fmi3IntervalChanged;
    }
    return fmi3OK;
}
fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[]) {
    Inst *m = i;
    if (m->state != INIT && m->state != EVENT) return fail(m, "fmi3GetShiftDecimal: not in initialization or event mode");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != 10) return fail(m, "fmi3GetShiftDecimal: not a periodic clock");
        v[k] = m->shift;
    }
    return fmi3OK;
}
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
NO(fmi3DoStep, fmi3Float64 t, fmi3Float64 h, fmi3Boolean p, fmi3Boolean *a, fmi3Boolean *b, fmi3Boolean *c,
   fmi3Float64 *d)
fmi3Status fmi3EnterStepMode(fmi3Instance i) { return fail(i, "fmi3EnterStepMode: not supported"); }
NO(fmi3ActivateModelPartition, fmi3ValueReference c, fmi3Float64 t)
