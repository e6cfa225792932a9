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
 * returns fmi3Error with a log message (frame3.h).
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

#define FMU_MODEL_EXCHANGE
#include "frame3.h"  /* fail(), the FMI 3.0 functions this FMU refuses */

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
