/*
 * The FMU instance of the native runtime behind the FMI 2 and FMI 3 entry
 * points (see component.h): state machine, values, steps, Model Exchange
 * and saved states, with the messages the host's logger receives.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "component.h"

/* ------------------------------------------------------------ messages */
void mbn_report(mbn_component *c, int status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c && c->log) c->log(c->host, status, msg);
}

static const char *state_name(int state) {
    switch (state) {
    case MBN_S_INSTANTIATED: return "instantiated";
    case MBN_S_INIT: return "initialization mode";
    case MBN_S_EVENT: return "event mode";
    case MBN_S_CONT: return "continuous-time mode";
    case MBN_S_STEP: return "step mode (initialized)";
    case MBN_S_TERMINATED: return "terminated";
    case MBN_S_CONFIG: return "configuration mode";
    case MBN_S_ERROR: return "error (after a failed step or evaluation: restore a saved state, reset or free)";
    default: return "fatal";
    }
}

int mbn_allowed(mbn_component *c, unsigned mask, int types, const char *fn) {
    if (!(types & (c->type == MBN_CS ? 1 : 2))) {
        mbn_report(c, MBN_ERROR, "%s is a %s call; this instance is %s; nothing done", fn,
                   c->type == MBN_CS ? "model exchange" : "co-simulation",
                   c->type == MBN_CS ? "co-simulation" : "model exchange");
        return -1;
    }
    if (mask & (unsigned)c->state) return 0;
    char allowed[512] = "";
    size_t at = 0;
    for (unsigned bit = 1; bit <= MBN_S_CONFIG; bit <<= 1)
        if ((mask & bit) && bit != MBN_S_ERROR && at < sizeof allowed)
            at += (size_t)snprintf(allowed + at, sizeof allowed - at, "%s%s", at ? ", " : "",
                                   bit == MBN_S_STEP ? "step mode" : state_name((int)bit));
    mbn_report(c, MBN_ERROR, "%s is not allowed in %s (only in %s); nothing done", fn, state_name(c->state),
               allowed);
    return -1;
}

int mbn_fail(mbn_component *c) {
    if (c->state != MBN_S_ERROR) c->state_before_error = c->state;
    c->state = MBN_S_ERROR;
    return MBN_ERROR;
}

/* ------------------------------------------------------------ life cycle */
mbn_component *mbn_component_new(int fmi, int type, const char *name, mbn_log_fn log, void *host, int logging) {
    mbn_component tmp = {0};
    tmp.log = log;
    tmp.host = host;
    tmp.fmi = fmi;
    tmp.type = type;
    mbn_component *c = calloc(1, sizeof(mbn_component));
    if (!c) {
        mbn_report(&tmp, MBN_FATAL, "plant %s: out of memory", MBN_DATA.plant);
        return NULL;
    }
    *c = tmp;
    c->logging = logging;
    c->state = MBN_S_INSTANTIATED;
    c->name = malloc(strlen(name ? name : "") + 1);
    c->in = mbn_new(&MBN_DATA);
    c->xstart = calloc((size_t)MBN_DATA.nx + 1, sizeof(double));
    c->xset = calloc((size_t)MBN_DATA.nx + 1, 1);
    if (!c->name || !c->in || !c->xstart || !c->xset || mbn_me_init(&c->me, c->in)) {
        mbn_report(&tmp, MBN_FATAL, "plant %s: out of memory", MBN_DATA.plant);
        mbn_component_free(c);
        return NULL;
    }
    strcpy(c->name, name ? name : "");
    return c;
}

void mbn_component_free(mbn_component *c) {
    if (!c) return;
    mbn_me_free(&c->me);
    mbn_free(c->in);
    free(c->name);
    free(c->xstart);
    free(c->xset);
    free(c);
}

int mbn_setup(mbn_component *c, int tol_defined, double tol, double start) {
    if (!isfinite(start)) {
        mbn_report(c, MBN_ERROR, "start time %g is not finite", start);
        return MBN_ERROR;
    }
    if (tol_defined) { /* advance's tolerance (rtol = atol), else the plant's default */
        if (!(isfinite(tol) && tol > 0)) {
            mbn_report(c, MBN_ERROR, "tolerance %g must be finite and > 0", tol);
            return MBN_ERROR;
        }
        c->in->tolerance = tol;
    }
    c->in->t = start;
    mbn_me_changed(&c->me);
    return MBN_OK;
}

int mbn_enter_init(mbn_component *c) {
    c->state = MBN_S_INIT;
    return MBN_OK;
}

int mbn_exit_init(mbn_component *c) {
    c->state = c->type == MBN_ME ? MBN_S_EVENT : MBN_S_STEP;
    if (c->type == MBN_ME) c->in->stepped = 1; /* from here on parameters keep the state */
    mbn_me_start(&c->me);
    return MBN_OK;
}

int mbn_terminate(mbn_component *c) {
    c->state = MBN_S_TERMINATED;
    return MBN_OK;
}

int mbn_reset(mbn_component *c) {
    mbn_instance *fresh = mbn_new(&MBN_DATA);
    mbn_me me;
    if (!fresh || mbn_me_init(&me, fresh)) {
        mbn_free(fresh);
        mbn_report(c, MBN_FATAL, "plant %s: out of memory", MBN_DATA.plant);
        c->state = MBN_S_FATAL;
        return MBN_FATAL;
    }
    mbn_me_free(&c->me);
    mbn_free(c->in);
    c->in = fresh;
    c->me = me;
    memset(c->xset, 0, (size_t)MBN_DATA.nx + 1);
    c->state = MBN_S_INSTANTIATED;
    return MBN_OK;
}

/* ------------------------------------------------------------ values */
unsigned mbn_nvars(const mbn_data *D) {
    return (unsigned)D->nu + (unsigned)D->np + (unsigned)D->ny + (unsigned)D->nx + (unsigned)D->nxc;
}

const char *mbn_var_name(const mbn_data *D, unsigned vr) {
    unsigned named = mbn_nvars(D) - (unsigned)D->nxc;
    return vr < named ? D->names[vr] : "a state derivative";
}

int mbn_check_vr(mbn_component *c, unsigned vr) {
    if (vr < mbn_nvars(&MBN_DATA)) return 0;
    mbn_report(c, MBN_ERROR, "unknown value reference %u (this FMU has 0..%u)", vr, mbn_nvars(&MBN_DATA) - 1);
    return -1;
}

/* the derivatives into me->dx, reporting a failure (the error state) */
static int derivatives(mbn_component *c) {
    mbn_instance *in = c->in;
    const mbn_data *D = in->data;
    int err = mbn_me_derivatives(&c->me, in->xw);
    if (!err) {
        /* finite states can still give non-finite derivatives (1e308 squared): refused, as a
         * co-simulation step refuses a non-finite state */
        for (int k = 0; k < D->nxc; ++k)
            if (!isfinite(c->me.dx[k])) {
                c->me.dx_valid = 0;
                mbn_report(c, MBN_ERROR, "plant %s: the derivative of state %s is not finite at t = %.15g s "
                           "(state %s = %g)", D->plant, D->names[D->nu + D->np + D->ny + k], in->t,
                           D->names[D->nu + D->np + D->ny + k], in->x[k]);
                return mbn_fail(c);
            }
        return 0;
    }
    if (err == MB_ADAPT_NO_MEMORY) mbn_report(c, MBN_ERROR, "plant %s: out of memory evaluating the derivatives",
                                              in->data->plant);
    else
        mbn_report(c, MBN_ERROR, "plant %s: the derivatives at t = %.15g s cannot be evaluated: the articulated "
                   "inertia of the joint of body %d is singular (or a stage is not finite)", in->data->plant, in->t,
                   err < 0 ? -err : err);
    return mbn_fail(c);
}

int mbn_get(mbn_component *c, unsigned vr, double *value) {
    mbn_instance *in = c->in;
    const mbn_data *D = in->data;
    unsigned r = vr;
    if (r < (unsigned)D->nu) { *value = in->u[r]; return 0; }
    if ((r -= (unsigned)D->nu) < (unsigned)D->np) { *value = in->p[r]; return 0; }
    if ((r -= (unsigned)D->np) < (unsigned)D->ny) { *value = mbn_outputs(in)[r]; return 0; }
    if ((r -= (unsigned)D->ny) < (unsigned)D->nx) { *value = in->x[r]; return 0; }
    r -= (unsigned)D->nx;
    if (!c->me.dx_valid && derivatives(c)) { *value = NAN; return MBN_ERROR; }
    *value = c->me.dx[r];
    return 0;
}

/* v for a message, into buf: 6 significant digits, or all 17 where those would print v as the
 * value it is told apart from (a bound, the value kept) */
static const char *short_value(char *buf, size_t size, double v, double apart) {
    char other[32];
    snprintf(buf, size, "%.6g", v);
    snprintf(other, sizeof other, "%.6g", apart);
    if (v != apart && strcmp(buf, other) == 0) snprintf(buf, size, "%.17g", v);
    return buf;
}

/* the bound check of mbfmu.signals.Signal.check: 0 or -1 (reported) */
static int check_value(mbn_component *c, const mbn_data *D, unsigned vr, const char *kind, double v) {
    const char *unit = D->units[vr][0] ? D->units[vr] : "";
    if (!isfinite(v)) {
        mbn_report(c, MBN_ERROR, "refused: %s %s = %g is not finite at t = %.15g s; it keeps its value",
                   kind, D->names[vr], v, c->in->t);
        return -1;
    }
    int open_lo = D->open && (D->open[vr] & 1), open_hi = D->open && (D->open[vr] & 2);
    if (v < D->lo[vr] || v > D->hi[vr] || (open_lo && v == D->lo[vr]) || (open_hi && v == D->hi[vr])) {
        char text[32];
        double bound = fabs(v - D->lo[vr]) < fabs(v - D->hi[vr]) ? D->lo[vr] : D->hi[vr];
        mbn_report(c, MBN_ERROR, "refused: %s %s = %s%s%s is outside %c%g, %g%c at t = %.15g s; it keeps its value",
                   kind, D->names[vr], short_value(text, sizeof text, v, bound), unit[0] ? " " : "", unit, open_lo || isinf(D->lo[vr]) ? '(' : '[', D->lo[vr], D->hi[vr],
                   open_hi || isinf(D->hi[vr]) ? ')' : ']',
                   c->in->t);
        return -1;
    }
    return 0;
}

/* "name = value, ..." of the parameters p that differ from the current ones, into buf */
static void changed_parameters(const mbn_data *D, const double *p, const double *now, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int j = 0; j < D->np && at + 1 < size; ++j) {
        if (p[j] == now[j]) continue;
        char text[32];
        int n = snprintf(buf + at, size - at, "%s%s = %s", at ? ", " : "", D->names[D->nu + j],
                         short_value(text, sizeof text, p[j], now[j]));
        if (n < 0) break;
        at += (size_t)n;
    }
}

/* apply the parameters p (np): a status */
static int apply_parameters(mbn_component *c, const double *p) {
    mbn_instance *in = c->in;
    const mbn_data *D = in->data;
    int err = mbn_set_parameters(in, p);
    mbn_me_changed(&c->me);
    if (!err) return MBN_OK;
    if (err <= -1 && err > -1000) {
        int j = -1 - err;
        char given[32], kept[32];
        mbn_report(c, MBN_ERROR, "refused parameter %s = %s: %s; the native FMU keeps %s (rebuild "
                   "it with this value, or use the pythonfmu runtime)", D->names[D->nu + j],
                   short_value(given, sizeof given, p[j], in->p[j]), D->p_fixed[j],
                   short_value(kept, sizeof kept, in->p[j], p[j]));
    } else if (err == -4000) {
        char what[512];
        changed_parameters(D, p, in->p, what, sizeof what);
        mbn_report(c, MBN_ERROR, "refused parameters %s: the spectral radius at rest of plant %s, which sets its "
                   "internal step, cannot be computed (%g 1/s); the previous values are kept", what, D->plant,
                   in->rho_refused);
    } else if (err == -5000) {
        char what[512];
        changed_parameters(D, p, in->p, what, sizeof what);
        mbn_report(c, MBN_ERROR, "refused parameters %s: a plug-in element of plant %s would sample its discrete "
                   "states with a period that is not a positive finite time; the previous values are kept", what,
                   D->plant);
    } else if (err <= -3000) {
        char what[512];
        changed_parameters(D, p, in->p, what, sizeof what);
        mbn_report(c, MBN_ERROR, "refused parameters %s: the plant %s requires %s; the previous values are kept",
                   what, D->plant, D->tape->g_text[-3000 - err]);
    } else if (err <= -2000) {
        char what[512];
        changed_parameters(D, p, in->p, what, sizeof what);
        mbn_report(c, MBN_ERROR, "refused parameters %s: body %d of plant %s would not be physical (negative mass, "
                   "or an inertia that is not positive or breaks the triangle inequality); the previous values "
                   "are kept", what, -2000 - err, D->plant);
    } else {
        mbn_report(c, MBN_ERROR, "refused parameters: the re-packed model of plant %s is invalid; "
                   "the previous values are kept", D->plant);
    }
    return MBN_ERROR;
}

/* state k's start value v (scalar r), before initialization ends (checked by the caller): 0, or -1
 * (reported: not finite, or outside the state's declared bounds, such as a latch flag's [0, 1]) */
static int set_start(mbn_component *c, const mbn_data *D, unsigned r, int k, double v) {
    if (check_value(c, D, r, "start value of state", v)) return -1;
    c->xstart[k] = v;
    c->xset[k] = 1;
    return 0;
}

/* the set start values over the state the parameters give, until the first step (a set state wins) */
static void impose_starts(mbn_component *c) {
    mbn_instance *in = c->in;
    if (in->stepped) return;
    for (int k = 0; k < in->data->nx; ++k)
        if (c->xset[k]) in->x[k] = c->xstart[k];
    mbn_me_changed(&c->me);
}

int mbn_set(mbn_component *c, const unsigned *vr, size_t n, const double *value) {
    mbn_instance *in = c->in;
    const mbn_data *D = in->data;
    int st = MBN_OK;
    double *p = NULL;
    /* continuous-time mode (ME) takes the continuous inputs only */
    int params_ok = c->state != MBN_S_CONT, starts = 0;
    int starts_ok = (c->state & (MBN_S_INSTANTIATED | MBN_S_INIT)) != 0;
    const unsigned o_x = (unsigned)(D->nu + D->np + D->ny);
    unsigned late = 0, first_late = 0; /* states given after initialization: one message */
    for (size_t k = 0; k < n; ++k) {
        unsigned r = vr[k];
        if (mbn_check_vr(c, r)) { st = MBN_ERROR; continue; }
        if (r < (unsigned)D->nu) {
            if (check_value(c, D, r, "input", value[k])) { st = MBN_ERROR; continue; }
            in->u[r] = value[k];
            mbn_me_changed(&c->me);
        } else if (r < (unsigned)(D->nu + D->np)) {
            if (!params_ok) {
                mbn_report(c, MBN_ERROR, "parameter %s cannot be set in continuous-time mode (enter event mode "
                           "first)", D->names[r]);
                st = MBN_ERROR;
                continue;
            }
            if (check_value(c, D, r, "parameter", value[k])) { st = MBN_ERROR; continue; }
            if (!p) {
                p = malloc(sizeof(double) * (size_t)(D->np + 1));
                if (!p) { mbn_report(c, MBN_FATAL, "out of memory"); c->state = MBN_S_FATAL; return MBN_FATAL; }
                memcpy(p, in->p, sizeof(double) * (size_t)D->np);
            }
            p[r - D->nu] = value[k];
        } else if (r >= o_x && r < o_x + (unsigned)D->nx) {
            if (!starts_ok) {
                if (!late++) first_late = r;
                st = MBN_ERROR;
                continue;
            }
            if (set_start(c, D, r, (int)(r - o_x), value[k])) { st = MBN_ERROR; continue; }
            starts = 1;
        } else {
            mbn_report(c, MBN_ERROR, "%s %s cannot be set", r < o_x ? "output" : "state derivative",
                       mbn_var_name(D, r));
            st = MBN_ERROR;
        }
    }
    if (late) {
        char more[64] = "";
        if (late > 1) snprintf(more, sizeof more, " (and %u more states)", late - 1);
        mbn_report(c, MBN_ERROR, "state %s%s cannot be set in %s: a state's start value is set before "
                   "initialization ends (instantiated or initialization mode)", D->names[first_late], more,
                   state_name(c->state));
    }
    int repacked = p && memcmp(p, in->p, sizeof(double) * (size_t)D->np);
    if (repacked && apply_parameters(c, p)) st = MBN_ERROR;
    if (repacked || starts) impose_starts(c);
    free(p);
    return st;
}

/* ------------------------------------------------------------ stepping */
int mbn_do_step(mbn_component *c, double t, double h) {
    mbn_instance *in = c->in;
    const mbn_data *D = in->data;
    double hs = in->d[D->o_step];
    if (!(isfinite(t) && isfinite(h) && h > 0) || h / hs > 1e9) {
        mbn_report(c, MBN_ERROR, "refused step from t = %.15g s of size %g s", t, h);
        return MBN_ERROR;
    }
    in->t = t;
    mbn_me_changed(&c->me);
    int err = mbn_advance(in, h);
    mbn_me_changed(&c->me);
    if (err == MBN_NOMEM) {
        mbn_report(c, MBN_ERROR, "plant %s: out of memory in the step from t = %.15g s", D->plant, t);
        return mbn_fail(c);
    }
    if (err == MBN_ADAPT) {
        const mb_adapt_stats *st = &in->adapt_stats;
        int big = 0; /* as the Python plant's blown_up_error: a runaway force is named as such */
        for (int k = 1; k < D->nv; ++k)
            if (fabs(in->tau[k]) > fabs(in->tau[big])) big = k;
        if (D->nv > 0 && !(fabs(in->tau[big]) < 1e50)) {
            mbn_report(c, MBN_ERROR, "plant %s: the state has blown up in the step from t = %.15g s to %.15g s "
                       "(largest: generalized force tau[%d] = %g); check the inputs and the step size; the state "
                       "is kept", D->plant, t, t + h, big + 1, in->tau[big]); /* names count from 1 */
            return mbn_fail(c);
        }
        mbn_report(c, MBN_ERROR, "plant %s: step from t = %.15g s to %.15g s: %s: reached %g s of the interval "
                   "after %ld accepted and %ld rejected steps (last step %g s); the state is kept", D->plant, t,
                   t + h, mb_adapt_message(in->adapt_status), st->t_reached, st->accepted, st->rejected, st->h_last);
        return mbn_fail(c);
    }
    if (err > 0) {
        mbn_report(c, MBN_ERROR, "plant %s: step from t = %.15g s to %.15g s failed: the articulated inertia of "
                   "the joint of body %d is singular; the state is kept", D->plant, t, t + h, err);
        return mbn_fail(c);
    }
    if (err < 0) {
        mbn_report(c, MBN_ERROR, "plant %s: state %s became non-finite in the step from t = %.15g s to %.15g s "
                   "(unstable: reduce the step); the state is kept", D->plant,
                   D->names[D->nu + D->np + D->ny + (-1 - err)], t, t + h);
        return mbn_fail(c);
    }
    const double *y = mbn_outputs(in);
    for (int k = 0; k < D->ny; ++k)
        if (!isfinite(y[k])) {
            mbn_report(c, MBN_ERROR, "plant %s: output %s is not finite at t = %.15g s", D->plant,
                       D->names[D->nu + D->np + k], in->t);
            return mbn_fail(c);
        }
    return MBN_OK;
}

/* ------------------------------------------------------------ model exchange */
static int check_count(mbn_component *c, const char *what, size_t n, int expected) {
    if (n == (size_t)expected) return 0;
    mbn_report(c, MBN_ERROR, "%zu %s given; this FMU has %d", n, what, expected);
    return -1;
}

int mbn_set_time(mbn_component *c, double t) {
    if (!isfinite(t)) {
        mbn_report(c, MBN_ERROR, "time %g is not finite", t);
        return MBN_ERROR;
    }
    c->in->t = t;
    mbn_me_changed(&c->me);
    return MBN_OK;
}

int mbn_set_states(mbn_component *c, const double *x, size_t nx) {
    const mbn_data *D = c->in->data;
    if (check_count(c, "continuous states", nx, D->nxc)) return MBN_ERROR;
    if (nx && !x) { mbn_report(c, MBN_ERROR, "no continuous states given (NULL)"); return MBN_ERROR; }
    for (size_t k = 0; k < nx; ++k)
        if (!isfinite(x[k])) {
            mbn_report(c, MBN_ERROR, "refused: state %s = %g is not finite at t = %.15g s; the states are kept",
                       D->names[D->nu + D->np + D->ny + k], x[k], c->in->t);
            return MBN_ERROR;
        }
    mbn_me_set_states(&c->me, x);
    return MBN_OK;
}

int mbn_get_states(mbn_component *c, double *x, size_t nx) {
    if (check_count(c, "continuous states", nx, c->in->data->nxc)) return MBN_ERROR;
    if (nx && !x) { mbn_report(c, MBN_ERROR, "no array for the continuous states (NULL)"); return MBN_ERROR; }
    memcpy(x, c->in->x, sizeof(double) * nx);
    return MBN_OK;
}

int mbn_get_derivatives(mbn_component *c, double *dx, size_t nx) {
    if (check_count(c, "derivatives", nx, c->in->data->nxc)) return MBN_ERROR;
    if (nx && !dx) { mbn_report(c, MBN_ERROR, "no array for the derivatives (NULL)"); return MBN_ERROR; }
    if (!c->me.dx_valid && derivatives(c)) return MBN_ERROR;
    memcpy(dx, c->me.dx, sizeof(double) * nx);
    return MBN_OK;
}

int mbn_get_indicators(mbn_component *c, double *z, size_t nz) {
    if (check_count(c, "event indicators", nz, c->in->data->nz)) return MBN_ERROR;
    if (nz && !z) { mbn_report(c, MBN_ERROR, "no array for the event indicators (NULL)"); return MBN_ERROR; }
    if (nz) mbn_me_indicators(&c->me, z);
    return MBN_OK;
}

int mbn_get_nominals(mbn_component *c, double *x, size_t nx) {
    if (check_count(c, "nominals", nx, c->in->data->nxc)) return MBN_ERROR;
    if (nx && !x) { mbn_report(c, MBN_ERROR, "no array for the nominals (NULL)"); return MBN_ERROR; }
    mbn_me_nominals(&c->me, x);
    return MBN_OK;
}

int mbn_new_discrete_states(mbn_component *c, int *x_changed, double *next_time) {
    mbn_me_event_update(&c->me, x_changed);
    *next_time = mbn_me_next_time_event(&c->me);
    return MBN_OK;
}

int mbn_enter_event_mode(mbn_component *c) {
    c->state = MBN_S_EVENT;
    return MBN_OK;
}

int mbn_enter_continuous_mode(mbn_component *c) {
    c->state = MBN_S_CONT;
    return MBN_OK;
}

int mbn_completed_step(mbn_component *c, int *enter_event) {
    *enter_event = mbn_me_step_event(&c->me);
    return MBN_OK;
}

/* ------------------------------------------------------------ directional derivatives */
#ifdef MBN_DD_INEXACT
/* the index of a known (into [x; u]) or an unknown (into [dx/dt; y]) of
 * mbn_directional_derivative for the scalar vr, -1 (reported) if it is not one */
static int dd_index(mbn_component *c, unsigned vr, int known) {
    const mbn_data *D = c->in->data;
    unsigned o_y = (unsigned)(D->nu + D->np), o_x = o_y + (unsigned)D->ny, o_der = o_x + (unsigned)D->nx;
    if (mbn_check_vr(c, vr)) return -1;
    if (known && vr < (unsigned)D->nu) return D->nx + (int)vr;
    if (known && vr >= o_x && vr < o_x + (unsigned)D->nxc) return (int)(vr - o_x);
    if (!known && vr >= o_y && vr < o_x) return D->nx + (int)(vr - o_y);
    if (!known && vr >= o_der) return (int)(vr - o_der);
    mbn_report(c, MBN_ERROR, "directional derivative %s %s: the %s are %s", known ? "with respect to" : "of",
               mbn_var_name(D, vr), known ? "knowns" : "unknowns",
               known ? "inputs and continuous states" : "outputs and state derivatives");
    return -1;
}

int mbn_directional(mbn_component *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                    size_t nknown, const double *seed, double *sens, int adjoint) {
    mbn_instance *in = c->in;
    const mbn_data *D = in->data;
    const char *why = mbn_dirder_inexact(in);
    if (why) {
        mbn_report(c, MBN_ERROR, "plant %s provides no exact directional derivatives: %s", D->plant, why);
        return MBN_ERROR;
    }
    if ((nknown && (!known || (adjoint ? !sens : !seed))) || (nunknown && (!unknown || (adjoint ? !seed : !sens)))) {
        mbn_report(c, MBN_ERROR, "directional derivative: an array of %zu knowns or %zu unknowns is NULL", nknown,
                   nunknown);
        return MBN_ERROR;
    }
    int *ik = malloc(sizeof(int) * (nknown + 1)), *iu = malloc(sizeof(int) * (nunknown + 1));
    double *unit = calloc(nknown + 1, sizeof(double)), *col = malloc(sizeof(double) * (nunknown + 1));
    int st = MBN_OK, err = 0;
    if (!ik || !iu || !unit || !col) { st = MBN_ERROR; mbn_report(c, st, "out of memory"); goto done; }
    for (size_t j = 0; j < nknown && st == MBN_OK; ++j)
        if ((ik[j] = dd_index(c, known[j], 1)) < 0) st = MBN_ERROR;
    for (size_t k = 0; k < nunknown && st == MBN_OK; ++k)
        if ((iu[k] = dd_index(c, unknown[k], 0)) < 0) st = MBN_ERROR;
    if (st) goto done;
    mbn_generalized_forces(in);
    if (!adjoint) err = mbn_directional_derivative(in, nknown, ik, seed, nunknown, iu, sens);
    else /* one column per known: sens[j] = (J e_j) . seed */
        for (size_t j = 0; j < nknown && !err; ++j) {
            unit[j] = 1.0;
            err = mbn_directional_derivative(in, nknown, ik, unit, nunknown, iu, col);
            unit[j] = 0.0;
            double s = 0.0;
            for (size_t k = 0; k < nunknown; ++k) s += col[k] * seed[k];
            sens[j] = s;
        }
    if (err) {
        st = MBN_ERROR;
        if (err == MBN_NOMEM) mbn_report(c, st, "plant %s: out of memory for the directional derivatives", D->plant);
        else if (err == MBN_DD_SINGULAR)
            mbn_report(c, st, "plant %s: a beam's modal mass is singular at t = %.15g s", D->plant, in->t);
        else
            mbn_report(c, st, "plant %s: the articulated inertia of the joint of body %d is singular at t = %.15g s",
                       D->plant, err, in->t);
    }
done:
    free(ik); free(iu); free(unit); free(col);
    return st;
}
#else
int mbn_directional(mbn_component *c, const unsigned *unknown, size_t nunknown, const unsigned *known,
                    size_t nknown, const double *seed, double *sens, int adjoint) {
    (void)unknown; (void)nunknown; (void)known; (void)nknown; (void)seed; (void)sens;
    mbn_report(c, MBN_ERROR, "this FMU provides no %s derivatives", adjoint ? "adjoint" : "directional");
    return MBN_ERROR;
}
#endif

/* ------------------------------------------------------------ FMU state */
int mbn_get_state(mbn_component *c, mbn_saved **saved) {
    size_t n = mbn_state_size(c->in);
    mbn_saved *s = malloc(sizeof(mbn_saved) + n);
    if (!s) { mbn_report(c, MBN_ERROR, "out of memory saving the FMU state"); return MBN_ERROR; }
    s->size = n;
    s->state = c->state == MBN_S_ERROR ? c->state_before_error : c->state;
    mbn_state_write(c->in, s->bytes);
    free(*saved);
    *saved = s;
    return MBN_OK;
}

int mbn_set_state(mbn_component *c, const mbn_saved *s) {
    const char *why = "";
    if (mbn_state_read(c->in, s->bytes, s->size, &why)) {
        mbn_report(c, MBN_ERROR, "cannot restore the FMU state of plant %s: %s; the instance keeps its state "
                   "(t = %.15g s)", MBN_DATA.plant, why, c->in->t);
        return MBN_ERROR;
    }
    mbn_me_start(&c->me);
    memset(c->xset, 0, (size_t)MBN_DATA.nx + 1); /* the restored state is the state (component.h) */
    if (c->state == MBN_S_ERROR) c->state = s->state;
    return MBN_OK;
}

int mbn_free_state(mbn_component *c, mbn_saved **saved) {
    (void)c;
    if (saved) { free(*saved); *saved = NULL; }
    return MBN_OK;
}

int mbn_serialized_size(mbn_component *c, const mbn_saved *s, size_t *size) {
    (void)c;
    *size = s->size;
    return MBN_OK;
}

int mbn_serialize(mbn_component *c, const mbn_saved *s, unsigned char *bytes, size_t size) {
    if (size < s->size) {
        mbn_report(c, MBN_ERROR, "serialization buffer of %zu bytes is too small (%zu needed)", size, s->size);
        return MBN_ERROR;
    }
    memcpy(bytes, s->bytes, s->size);
    return MBN_OK;
}

int mbn_deserialize(mbn_component *c, const unsigned char *bytes, size_t size, mbn_saved **saved) {
    const char *why = "";
    /* validate against a scratch instance so a bad state never reaches the host */
    mbn_instance *probe = mbn_new(&MBN_DATA);
    if (!probe) { mbn_report(c, MBN_ERROR, "out of memory deserializing the FMU state"); return MBN_ERROR; }
    probe->stepped = 1;
    int err = mbn_state_read(probe, bytes, size, &why);
    mbn_free(probe);
    if (err) {
        mbn_report(c, MBN_ERROR, "cannot deserialize the FMU state of plant %s: %s", MBN_DATA.plant, why);
        return MBN_ERROR;
    }
    mbn_saved *s = malloc(sizeof(mbn_saved) + size);
    if (!s) { mbn_report(c, MBN_ERROR, "out of memory deserializing the FMU state"); return MBN_ERROR; }
    s->size = size;
    s->state = c->type == MBN_ME ? MBN_S_EVENT : MBN_S_STEP;
    memcpy(s->bytes, bytes, size);
    free(*saved);
    *saved = s;
    return MBN_OK;
}
