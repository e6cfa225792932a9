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
#include <stddef.h>

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

/* the calls named in me_ctx.failed_call */
enum { ME_SET_TIME = 1, ME_SET_X, ME_GET_DX, ME_GET_Z, ME_COMPLETED };

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
} me_ctx;

/* result bits of me_advance */
#define ME_ROOT 1
#define ME_STEP_EVENT 2
#define ME_TERMINATE 4
#define ME_TIME_EVENT 8
#define ME_REACHED 16
#define ME_FAILED (-1000)          /* an FMU call failed: see status, failed_call */

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
