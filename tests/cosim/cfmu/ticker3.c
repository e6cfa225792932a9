/* A small FMI 3.0 co-simulation FMU with event mode, for the master's tests.
 *
 * Its output clock `tick` ticks at the FMU's own times first + k * period (k = 0, 1, ...),
 * which fall inside communication steps. With eventModeUsed and earlyReturnAllowed,
 * fmi3DoStep returns early at the tick time exactly (lastSuccessfulTime) and asks for event
 * handling; without early return the tick is reported at the end of the step that holds it.
 * In event mode fmi3GetClock(tick) is true until fmi3UpdateDiscreteStates, which counts the
 * tick (`count`) and keeps its time (`t_event`). Without eventModeUsed the ticks are
 * counted inside the step and no clock is shown. The input clock `kick` (triggered), set in
 * event mode, is counted (`kicks`) with its time (`kick_time`). `x` integrates dx/dt = 1 over
 * every piece of every step, so x = t - t0 when the importer steps the remainder of a step
 * after an early return.
 *
 * Value references: 0 time, 1 period, 2 first, 3 x, 4 t_event, 5 count, 6 tick, 7 kick,
 * 8 kicks, 9 kick_time.
 *
 * The same binary offers Scheduled Execution (a second model description declares it):
 * the periodic input clock `sample` (vr 10) counts its activations in `count` with their
 * time in `t_event`, and sets the countdown clock `later` (vr 11) to fire `delay` (vr 12)
 * seconds after it (calling the clock-update callback); the partition of `later` counts in
 * `kicks` with its activation time in `kick_time`. Where that description declares `sample`
 * fixed without an interval, fmi3GetIntervalDecimal gives ASKED_SAMPLE_INTERVAL (0.75 s);
 * fmi3GetShiftDecimal is refused (the declared shift holds).
 * A third description declares `sample` (vr 10) a periodic input clock of co-simulation: set in
 * event mode (fmi3SetClock), it is counted in `count` with its time in `t_event` and the state
 * x at the tick in `xs` (vr 13).
 * Every other FMI 3.0 function exists and returns fmi3Error (frame3.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi3Functions.h"

enum { INIT, STEP, EVENT };
#define ASKED_SAMPLE_INTERVAL 0.75

typedef struct {
    double time, period, first, x, t_event, kick_time, delay, xs;
    int count, kicks, k, tick, kick, state, later_set, sample;
    fmi3Boolean event_mode_used, early_return;
    fmi3LogMessageCallback log;
    fmi3ClockUpdateCallback clock_update;
    fmi3InstanceEnvironment env;
} Inst;

#define FMU_CO_SIMULATION
#define FMU_SCHEDULED_EXECUTION
#include "frame3.h"  /* fail(), the FMI 3.0 functions this FMU refuses */

static double next_tick(const Inst *m) { return m->first + m->k * m->period; }

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String res, fmi3Boolean visible,
                                         fmi3Boolean logging, fmi3Boolean event_mode_used,
                                         fmi3Boolean early_return, const fmi3ValueReference req[], size_t nreq,
                                         fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                         fmi3IntermediateUpdateCallback upd) {
    (void)name, (void)token, (void)res, (void)visible, (void)logging, (void)req, (void)nreq, (void)upd;
    Inst *m = calloc(1, sizeof(Inst));
    if (!m) return NULL;
    m->period = 0.37;
    m->first = 0.1234567891234;
    m->event_mode_used = event_mode_used;
    m->early_return = early_return;
    m->log = log;
    m->env = env;
    return m;
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String res,
                                               fmi3Boolean visible, fmi3Boolean logging,
                                               fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                               fmi3ClockUpdateCallback clock_update, fmi3LockPreemptionCallback lock,
                                               fmi3UnlockPreemptionCallback unlock) {
    (void)lock, (void)unlock;
    Inst *m = fmi3InstantiateCoSimulation(name, token, res, visible, logging, fmi3False, fmi3False, NULL, 0, env,
                                          log, NULL);
    if (m) {
        m->clock_update = clock_update;
        m->delay = 0.25;
    }
    return m;
}

fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t) {
    Inst *m = i;
    if (!m->clock_update || m->state != STEP) return fail(m, "fmi3ActivateModelPartition: not scheduled execution");
    m->time = t;
    if (clock == 10) {
        m->count++;
        m->t_event = t;
        m->later_set = 1;
        m->clock_update(m->env);
    } else if (clock == 11) {
        m->kicks++;
        m->kick_time = t;
    } else {
        return fail(m, "fmi3ActivateModelPartition: not an input clock");
    }
    return fmi3OK;
}

fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[],
                                  fmi3IntervalQualifier q[]) {
    Inst *m = i;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == 10) {  /* `sample` declared fixed without an interval: the FMU's */
            v[k] = ASKED_SAMPLE_INTERVAL;
            q[k] = fmi3IntervalChanged;
            continue;
        }
        if (vr[k] != 11) return fail(m, "fmi3GetIntervalDecimal: not a countdown or periodic clock");
        q[k] = m->later_set ? fmi3IntervalChanged : fmi3IntervalUnchanged;
        if (m->later_set) v[k] = m->delay;
        m->later_set = 0;
    }
    return fmi3OK;
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
    Inst *m = i;
    m->state = m->event_mode_used ? EVENT : STEP;  /* FMI 3.0: event mode first when it is used */
    while (next_tick(m) < m->time) m->k++;
    return fmi3OK;
}

fmi3Status fmi3EnterEventMode(fmi3Instance i) {
    Inst *m = i;
    if (m->state != STEP || !m->event_mode_used) return fail(m, "fmi3EnterEventMode: not in step mode");
    m->state = EVENT;
    return fmi3OK;
}

fmi3Status fmi3EnterStepMode(fmi3Instance i) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3EnterStepMode: not in event mode");
    if (m->tick) return fail(m, "fmi3EnterStepMode: the tick was not handled (fmi3UpdateDiscreteStates)");
    m->state = STEP;
    return fmi3OK;
}

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean *need_update, fmi3Boolean *terminate,
                                    fmi3Boolean *nominals, fmi3Boolean *values, fmi3Boolean *next_defined,
                                    fmi3Float64 *next) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3UpdateDiscreteStates: not in event mode");
    if (m->tick) {
        m->count++;
        m->t_event = m->time;
        m->k++;
        m->tick = 0;
    }
    if (m->kick) {
        m->kicks++;
        m->kick_time = m->time;
        m->kick = 0;
    }
    if (m->sample) {
        m->count++;
        m->t_event = m->time;
        m->xs = m->x;
        m->sample = 0;
    }
    *need_update = fmi3False;
    *terminate = fmi3False;
    *nominals = fmi3False;
    *values = fmi3False;
    *next_defined = fmi3True;
    *next = next_tick(m);
    return fmi3OK;
}

fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_prior,
                      fmi3Boolean *event_needed, fmi3Boolean *terminate, fmi3Boolean *early,
                      fmi3Float64 *last) {
    (void)no_prior;
    Inst *m = i;
    if (m->state != STEP) return fail(m, "fmi3DoStep: not in step mode");
    if (t != m->time) return fail(m, "fmi3DoStep: the communication point is not the FMU's time");
    double end = t + h, te = next_tick(m);
    *event_needed = *terminate = *early = fmi3False;
    if (m->event_mode_used && te <= end) {
        if (m->early_return && te < end) {
            m->x += te - t;
            m->time = *last = te;
            *early = fmi3True;
        } else {
            m->x += h;
            m->time = *last = end;
        }
        m->tick = 1;
        *event_needed = fmi3True;
        return fmi3OK;
    }
    for (; !m->event_mode_used && te <= end; te = next_tick(m)) {  /* ticks handled inside the step */
        m->count++;
        m->t_event = te;
        m->k++;
    }
    m->x += h;
    m->time = *last = end;
    return fmi3OK;
}

fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
    Inst *m = i;
    if (n != nv) return fail(m, "fmi3GetFloat64: arrays not supported");
    for (size_t k = 0; k < n; k++) {
        switch (vr[k]) {
        case 0: v[k] = m->time; break;
        case 1: v[k] = m->period; break;
        case 2: v[k] = m->first; break;
        case 3: v[k] = m->x; break;
        case 4: v[k] = m->t_event; break;
        case 9: v[k] = m->kick_time; break;
        case 12: v[k] = m->delay; break;
        case 13: v[k] = m->xs; break;
        default: return fail(m, "fmi3GetFloat64: unknown value reference");
        }
    }
    return fmi3OK;
}

fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                          size_t nv) {
    Inst *m = i;
    if (n != nv || m->state != INIT) return fail(m, "fmi3SetFloat64: parameters are set in initialization");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == 1) m->period = v[k];
        else if (vr[k] == 2) m->first = v[k];
        else if (vr[k] == 12) m->delay = v[k];
        else return fail(m, "fmi3SetFloat64: not a parameter");
    }
    return fmi3OK;
}

fmi3Status fmi3GetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Int32 v[], size_t nv) {
    Inst *m = i;
    if (n != nv) return fail(m, "fmi3GetInt32: arrays not supported");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == 5) v[k] = m->count;
        else if (vr[k] == 8) v[k] = m->kicks;
        else return fail(m, "fmi3GetInt32: unknown value reference");
    }
    return fmi3OK;
}

fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Clock v[]) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3GetClock: not in event mode");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != 6) return fail(m, "fmi3GetClock: not an output clock");
        v[k] = m->tick ? fmi3ClockActive : fmi3ClockInactive;
    }
    return fmi3OK;
}

fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Clock v[]) {
    Inst *m = i;
    if (m->state != EVENT) return fail(m, "fmi3SetClock: not in event mode");
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == 7) {
            if (v[k]) m->kick = 1;
        } else if (vr[k] == 10 && !m->clock_update) {
            if (v[k]) m->sample = 1;
        } else {
            return fail(m, "fmi3SetClock: not an input clock");
        }
    }
    return fmi3OK;
}

NO(fmi3GetShiftDecimal, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[])
