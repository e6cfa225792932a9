/* The inner loop of a Model Exchange unit (mbfmu.cosim.fmi.me_solver): CVODE's
 * right-hand side and root function, and one integration interval up to the
 * next communication point or event, calling the FMU's own function pointers.
 *
 * SUNDIALS is fmpy's bundled build, reached only through the function pointers
 * handed in (CVode, CVodeSetStopTime, N_VGetArrayPointer): no SUNDIALS header
 * or library is needed at build time. FMI 2.0 and 3.0 ME calls have the same
 * C signatures here except completedIntegratorStep's Boolean (int in FMI 2.0,
 * bool in FMI 3.0).
 *
 * A failing FMU call (status above warning) stops CVODE at once (the callback
 * returns -1, unrecoverable) and is kept in the context (status and which
 * call), so that Python raises it as fmpy would and makes no further call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2FunctionTypes.h"  /* fmi2EventInfo: the standard's header, not a copy */

typedef int (*set_time_fn)(void *c, double t);
typedef int (*set_x_fn)(void *c, const double *x, size_t n);
typedef int (*get_vec_fn)(void *c, double *v, size_t n);
typedef int (*completed2_fn)(void *c, int no_prior, int *enter_event, int *terminate);
typedef int (*completed3_fn)(void *c, unsigned char no_prior, unsigned char *enter_event, unsigned char *terminate);
typedef int (*cvode_fn)(void *mem, double tout, void *yout, double *tret, int itask);
typedef int (*set_stop_fn)(void *mem, double tstop);
typedef double *(*nv_data_fn)(void *v);
typedef int (*dq_jac_fn)(double t, void *y, void *fy, void *J, void *cvode_mem, void *t1, void *t2, void *t3);
typedef int (*mat_copy_fn)(void *from, void *to);
typedef int (*mode_fn)(void *c);
typedef int (*update2_fn)(void *c, fmi2EventInfo *info);
typedef int (*update3_fn)(void *c, unsigned char *needed, unsigned char *terminate, unsigned char *nominals,
                          unsigned char *values, unsigned char *defined, double *next);
typedef int (*reinit_fn)(void *mem, double t0, void *y0);
typedef int (*svtol_fn)(void *mem, double rtol, void *abstol);

/* the calls named in me_ctx.failed_call */
enum { ME_SET_TIME = 1, ME_SET_X, ME_GET_DX, ME_GET_Z, ME_COMPLETED, ME_GET_X, ME_GET_NOMINALS, ME_ENTER_EVENT,
       ME_ENTER_CT, ME_UPDATE };
/* the kinds of events (me_ctx.ev_kind) */
enum { ME_INITIAL, ME_STATE, ME_TIME, ME_STEP };

typedef struct {
    int fmi3;
    void *c;                       /* the FMU instance */
    void *set_time, *set_x, *get_dx, *get_z, *completed;
    void *cvode, *set_stop, *nv_data;
    void *cvode_mem, *x;           /* CVODE's memory and its state N_Vector */
    int nx, nz, discrete;          /* discrete: no continuous state (CVODE holds a dummy one) */
    int needs_completed, no_prior;
    int stop_valid;                /* whether CVODE holds stop_time as its stop time */
    double stop_time;
    int status, failed_call;       /* the first failed FMU call */
    double t;                      /* the time reached (the FMU is there) */
    void *dq_jac, *mat_copy;       /* CVODE's cvLsDQJac, SUNMatCopy */
    void *jac_cache;               /* a SUNMatrix: the last Jacobian computed */
    int jac_cached, reuse_jac;     /* reuse_jac: give the cached one at CVODE's next request */
    int jac_computed, jac_reused;  /* Jacobians computed and kept ones given */
    /* me_do_step: the unit's communication step (mbfmu.cosim.fmi.fmu_me._MeStepping) */
    void *enter_event, *enter_ct, *update, *get_x, *get_nominals; /* the FMU's calls */
    void *reinit, *svtol;          /* CVodeReInit, CVodeSVtolerances */
    void *abstol;                  /* CVODE's absolute tolerance (an N_Vector) */
    double rtol, atol;             /* atol <= 0: rtol times each state's nominal */
    double next_event, stop;       /* the FMU's next time event (inf: none), the run's stop time [s] */
    int inputs_driven, will_roll_back;
    double *u, *u_last;            /* the unit's inputs and those of the last step (n_u each) */
    int n_u, u_last_valid;
    double *dx_before, *dx_after;  /* [nx] */
    int max_iterations, max_events; /* newDiscreteStates calls per event, events per step */
    int restarts;                  /* CVODE reinitializations */
    int stop_kind;                 /* the kind of the event that asked to stop */
    int reinit_flag;               /* a failed CVodeReInit / CVodeSVtolerances flag */
    long long n_ev, cap_ev;        /* events since the unit last read them: time and kind */
    double *ev_t;
    int *ev_kind;
} me_ctx;

/* result bits of me_advance */
#define ME_ROOT 1
#define ME_STEP_EVENT 2
#define ME_TERMINATE 4
#define ME_TIME_EVENT 8
#define ME_REACHED 16
#define ME_FAILED (-1000)          /* an FMU call failed: see status, failed_call */
/* further results of me_do_step */
#define ME_STOP_COMPLETED (-1001)  /* completedIntegratorStep asked to stop (at m->t) */
#define ME_STOP_EVENT (-1002)      /* the event iteration asked to stop (at m->t, event m->stop_kind) */
#define ME_UNSETTLED (-1003)       /* the event iteration did not settle in max_iterations calls */
#define ME_CHATTER (-1004)         /* more than max_events events in the step */
#define ME_NO_MEMORY (-1005)       /* no memory for the events */
#define ME_REINIT (-1006)          /* CVodeReInit failed (reinit_flag) */
#define ME_SVTOL (-1007)           /* CVodeSVtolerances failed (reinit_flag) */

#define CV_NORMAL 1
#define CV_TSTOP_RETURN 1
#define CV_ROOT_RETURN 2

static int fmu_ok(me_ctx *m, int status, int call) {
    if (status > 1) {              /* above fmi2Warning / fmi3Warning */
        if (!m->status) {
            m->status = status;
            m->failed_call = call;
        }
        return 0;
    }
    return 1;
}

static int set_point(me_ctx *m, double t, void *y) {
    if (!fmu_ok(m, ((set_time_fn)m->set_time)(m->c, t), ME_SET_TIME)) return 0;
    if (!m->discrete && !fmu_ok(m, ((set_x_fn)m->set_x)(m->c, ((nv_data_fn)m->nv_data)(y), (size_t)m->nx),
                                ME_SET_X))
        return 0;
    return 1;
}

/* CVRhsFn */
int me_rhs(double t, void *y, void *ydot, void *user_data) {
    me_ctx *m = (me_ctx *)user_data;
    if (m->status || !set_point(m, t, y)) return -1;
    double *dx = ((nv_data_fn)m->nv_data)(ydot);
    if (m->discrete) {
        for (int i = 0; i < m->nx; i++) dx[i] = 0.0;
        return 0;
    }
    return fmu_ok(m, ((get_vec_fn)m->get_dx)(m->c, dx, (size_t)m->nx), ME_GET_DX) ? 0 : -1;
}

/* CVRootFn */
int me_roots(double t, void *y, double *gout, void *user_data) {
    me_ctx *m = (me_ctx *)user_data;
    if (m->status || !set_point(m, t, y)) return -1;
    return fmu_ok(m, ((get_vec_fn)m->get_z)(m->c, gout, (size_t)m->nz), ME_GET_Z) ? 0 : -1;
}

/* CVLsJacFn: CVODE's own difference-quotient Jacobian, kept; after a restart
 * (reuse_jac) CVODE's first request gets the kept one instead. CVODE asks for
 * a new Jacobian when Newton's iteration fails to converge with a stale one
 * (and every 50 steps), and then gets a fresh one: the answers keep the
 * tolerance, the restart saves nx right-hand-side evaluations. */
int me_jac(double t, void *y, void *fy, void *J, void *user_data, void *t1, void *t2, void *t3) {
    me_ctx *m = (me_ctx *)user_data;
    if (m->reuse_jac && m->jac_cached) {
        m->reuse_jac = 0;
        m->jac_reused++;
        return ((mat_copy_fn)m->mat_copy)(m->jac_cache, J) == 0 ? 0 : -1;
    }
    m->reuse_jac = 0;
    int flag = ((dq_jac_fn)m->dq_jac)(t, y, fy, J, m->cvode_mem, t1, t2, t3);
    if (flag != 0 || m->status) return m->status ? -1 : flag;
    m->jac_computed++;
    m->jac_cached = ((mat_copy_fn)m->mat_copy)(J, m->jac_cache) == 0;
    return 0;
}

static int completed(me_ctx *m, int *enter_event, int *terminate) {
    int st;
    if (m->fmi3) {
        unsigned char e = 0, s = 0;
        st = ((completed3_fn)m->completed)(m->c, (unsigned char)(m->no_prior != 0), &e, &s);
        *enter_event = e != 0;
        *terminate = s != 0;
    } else {
        int e = 0, s = 0;
        st = ((completed2_fn)m->completed)(m->c, m->no_prior != 0, &e, &s);
        *enter_event = e != 0;
        *terminate = s != 0;
    }
    return fmu_ok(m, st, ME_COMPLETED);
}

/* One interval from m->t towards t_end [s]: up to min(t_end, next_event), past
 * t_end to the stop time max(t_end, min(next_event, stop)) where `interpolate`
 * allows it (CVODE's dense output at t_end then), exactly at t_out otherwise.
 * The FMU is left at the time and states reached (m->t), completedIntegratorStep
 * called where the FMU needs it. Returns ME_* bits (ME_REACHED: m->t is within
 * `tiny` of t_end), a CVODE flag < 0, or ME_FAILED. */
int me_advance(me_ctx *m, double t_end, double next_event, double stop, int interpolate, double tiny) {
    double t_out = t_end < next_event ? t_end : next_event;
    double t_stop = t_out;
    int bits = 0;
    if (interpolate && t_out == t_end) {
        double s = next_event < stop ? next_event : stop;
        t_stop = t_end > s ? t_end : s;
    }
    if (t_out - m->t > tiny) {
        if (!m->stop_valid || m->stop_time != t_stop) {
            m->stop_time = t_stop;
            m->stop_valid = ((set_stop_fn)m->set_stop)(m->cvode_mem, t_stop) >= 0;
            if (!m->stop_valid) return ME_FAILED;
        }
        double tret = m->t;
        int flag = ((cvode_fn)m->cvode)(m->cvode_mem, t_out, m->x, &tret, CV_NORMAL);
        if (m->status) return ME_FAILED;
        if (flag < 0) return flag;
        if (flag == CV_TSTOP_RETURN) m->stop_valid = 0;  /* SUNDIALS 7 disables a stop time once reached */
        if (flag == CV_ROOT_RETURN) bits |= ME_ROOT;
        m->t = tret;
        if (!set_point(m, tret, m->x)) return ME_FAILED;
    } else {  /* a time event within rounding of here: no integration to do */
        m->t = t_out;
        if (!fmu_ok(m, ((set_time_fn)m->set_time)(m->c, t_out), ME_SET_TIME)) return ME_FAILED;
    }
    if (m->needs_completed) {
        int enter_event, terminate;
        if (!completed(m, &enter_event, &terminate)) return ME_FAILED;
        if (enter_event) bits |= ME_STEP_EVENT;
        if (terminate) bits |= ME_TERMINATE;
    }
    if (m->t >= next_event - tiny) bits |= ME_TIME_EVENT;
    if (m->t >= t_end - tiny) bits |= ME_REACHED;
    return bits;
}

/* CVODE restarted at m->t from the FMU's states (rtol times their nominals, or atol, as
 * absolute tolerance); reuse_jac: its first Newton iteration takes the last Jacobian */
int me_restart(me_ctx *m, int reuse_jac) {
    double *x = ((nv_data_fn)m->nv_data)(m->x), *abstol = ((nv_data_fn)m->nv_data)(m->abstol);
    if (m->discrete) {
        for (int i = 0; i < m->nx; i++) abstol[i] = 1.0;
        x[0] = 1.0;
    } else {
        if (!fmu_ok(m, ((get_vec_fn)m->get_x)(m->c, x, (size_t)m->nx), ME_GET_X)) return ME_FAILED;
        if (!fmu_ok(m, ((get_vec_fn)m->get_nominals)(m->c, abstol, (size_t)m->nx), ME_GET_NOMINALS)) return ME_FAILED;
    }
    for (int i = 0; i < m->nx; i++) abstol[i] *= m->rtol;
    if ((m->reinit_flag = ((reinit_fn)m->reinit)(m->cvode_mem, m->t, m->x)) != 0) return ME_REINIT;
    m->stop_valid = 0;
    m->reuse_jac = reuse_jac && !m->will_roll_back;
    if (m->atol > 0 && !m->discrete) {
        for (int i = 0; i < m->nx; i++) abstol[i] = m->atol;
        if ((m->reinit_flag = ((svtol_fn)m->svtol)(m->cvode_mem, m->rtol, m->abstol)) != 0) return ME_SVTOL;
    }
    m->restarts++;
    return 0;
}

static int add_event(me_ctx *m, int kind) {
    if (m->n_ev == m->cap_ev) {
        long long cap = m->cap_ev ? 2 * m->cap_ev : 64;
        double *t = realloc(m->ev_t, (size_t)cap * sizeof *t);
        if (!t) return ME_NO_MEMORY;
        m->ev_t = t;
        int *k = realloc(m->ev_kind, (size_t)cap * sizeof *k);
        if (!k) return ME_NO_MEMORY;
        m->ev_kind = k;
        m->cap_ev = cap;
    }
    m->ev_t[m->n_ev] = m->t;
    m->ev_kind[m->n_ev++] = kind;
    return 0;
}

void me_free_events(me_ctx *m) {
    free(m->ev_t);
    free(m->ev_kind);
    m->ev_t = NULL;
    m->ev_kind = NULL;
    m->n_ev = m->cap_ev = 0;
}

/* The event iteration at m->t (the FMU in event mode): newDiscreteStates /
 * updateDiscreteStates until no more is needed. Returns whether the continuous
 * states or their nominals changed, or an ME_* result < 0. */
static int event_update(me_ctx *m, int kind) {
    int changed = 0, needed = 1, terminate = 0, defined = 0, it;
    double next = 0.0;
    for (it = 0; it < m->max_iterations; it++) {
        int st, nominals, values;
        if (m->fmi3) {
            unsigned char a = 0, b = 0, c = 0, d = 0, e = 0;
            st = ((update3_fn)m->update)(m->c, &a, &b, &c, &d, &e, &next);
            needed = a != 0; terminate = b != 0; nominals = c != 0; values = d != 0; defined = e != 0;
        } else {
            fmi2EventInfo info = {0, 0, 0, 0, 0, 0.0};
            st = ((update2_fn)m->update)(m->c, &info);
            needed = info.newDiscreteStatesNeeded != 0; terminate = info.terminateSimulation != 0;
            nominals = info.nominalsOfContinuousStatesChanged != 0;
            values = info.valuesOfContinuousStatesChanged != 0; defined = info.nextEventTimeDefined != 0;
            next = info.nextEventTime;
        }
        if (!fmu_ok(m, st, ME_UPDATE)) return ME_FAILED;
        changed = changed || nominals || values;
        if (terminate) {
            m->stop_kind = kind;
            return ME_STOP_EVENT;
        }
        if (!needed) break;
    }
    if (it == m->max_iterations) return ME_UNSETTLED;
    m->next_event = defined ? next : INFINITY;
    if (kind != ME_INITIAL && add_event(m, kind)) return ME_NO_MEMORY;
    return changed;
}

/* The initial event iteration (the FMU in initialization mode), then continuous-time mode. */
int me_initial_events(me_ctx *m) {
    int r = event_update(m, ME_INITIAL);
    if (r < 0) return r;
    return fmu_ok(m, ((mode_fn)m->enter_ct)(m->c), ME_ENTER_CT) ? 0 : ME_FAILED;
}

static int inputs_changed(me_ctx *m) {
    int changed = !m->u_last_valid || memcmp(m->u, m->u_last, (size_t)m->n_u * sizeof(double)) != 0;
    memcpy(m->u_last, m->u, (size_t)m->n_u * sizeof(double));
    m->u_last_valid = 1;
    return changed;
}

/* The unit's communication step from t to t + h [s], as the module docstring of
 * mbfmu.cosim.fmi.fmu_me describes it: every event on the way handled (event
 * mode, the event iteration, continuous-time mode, a restart unless a time event
 * changed nothing). Returns 0, a CVODE flag < 0 or an ME_* result < 0. */
int me_do_step(me_ctx *m, double t, double h) {
    double t_end = t + h;
    int r;
    if ((m->inputs_driven && inputs_changed(m)) || m->will_roll_back) {
        /* an input jumped; or the step may be repeated after a restore (same result to the bit) */
        if (!fmu_ok(m, ((set_time_fn)m->set_time)(m->c, m->t), ME_SET_TIME)) return ME_FAILED;
        if ((r = me_restart(m, 1)) != 0) return r;
    }
    /* past the communication point only where nothing can change there */
    int interpolate = !(m->inputs_driven || m->will_roll_back);
    double a = fabs(t_end) > 1.0 ? fabs(t_end) : 1.0;
    double tiny = 4 * (nextafter(a, INFINITY) - a);
    for (int n = 0; n < m->max_events; n++) {
        int bits = me_advance(m, t_end, m->next_event, m->stop, interpolate, tiny);
        if (bits < 0) return bits;
        if (bits & ME_TERMINATE) return ME_STOP_COMPLETED;
        if (bits & (ME_ROOT | ME_TIME_EVENT | ME_STEP_EVENT)) {
            int root = bits & ME_ROOT, time_event = bits & ME_TIME_EVENT;
            /* a time event alone may leave the dynamics as they were (a sampled recorder) */
            int smooth = time_event && !(bits & (ME_ROOT | ME_STEP_EVENT));
            size_t bytes = (size_t)m->nx * sizeof(double);
            if (smooth && !m->discrete &&
                !fmu_ok(m, ((get_vec_fn)m->get_dx)(m->c, m->dx_before, (size_t)m->nx), ME_GET_DX))
                return ME_FAILED;
            if (!fmu_ok(m, ((mode_fn)m->enter_event)(m->c), ME_ENTER_EVENT)) return ME_FAILED;
            int changed = event_update(m, root ? ME_STATE : time_event ? ME_TIME : ME_STEP);
            if (changed < 0) return changed;
            if (!fmu_ok(m, ((mode_fn)m->enter_ct)(m->c), ME_ENTER_CT)) return ME_FAILED;
            if (smooth && !changed && !m->discrete) {
                if (!fmu_ok(m, ((get_vec_fn)m->get_dx)(m->c, m->dx_after, (size_t)m->nx), ME_GET_DX)) return ME_FAILED;
                smooth = memcmp(m->dx_before, m->dx_after, bytes) == 0;
            }
            if (!(smooth && !changed) && (r = me_restart(m, 1)) != 0) return r;
        }
        if (bits & ME_REACHED) {
            if (m->t != t_end) {
                m->t = t_end;
                if (!fmu_ok(m, ((set_time_fn)m->set_time)(m->c, t_end), ME_SET_TIME)) return ME_FAILED;
            }
            return 0;
        }
    }
    return ME_CHATTER;
}
