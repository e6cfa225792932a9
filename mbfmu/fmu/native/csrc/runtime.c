/*
 * The native FMU runtime: packing a plant's model from its numeric
 * description, re-packing for new parameters, the integrator call, the
 * output sensors and the saved state (see native.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "native.h"

/* ------------------------------------------------------------- packing */
static double *copy_dbls(const double *src, int n) {
    double *p = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (p && n > 0) memcpy(p, src, sizeof(double) * (size_t)n);
    return p;
}

/* an mb_model from the numeric description d by the engine's one packer
 * (mb_pack, dynamics/csrc/pack.c); NULL on allocation failure */
static mb_model *pack_model(const mbn_data *D, const double *d) {
    mb_desc desc = {D->nb, D->ns, D->nct, D->ncb, D->ndr, D->parent, D->jtype, D->nqi, D->nvi,
                    d + D->o_axis1, d + D->o_axis2, d + D->o_Rtree, d + D->o_ptree, d + D->o_Ibody,
                    d + D->o_g, d + D->o_dof, d + D->o_springs, d + D->o_contacts, d + D->o_cables,
                    d + D->o_drives};
    mb_model *m = NULL;
    mb_pack(&desc, &m, NULL);
    return m;
}

/* the sensors' parameter pointers into the current description */
static void bind_sensors(mbn_instance *in) {
    const mbn_data *D = in->data;
    for (int k = 0; k < D->ny; ++k) {
        const int *row = D->sens + 4 * k;
        in->sens[k].kind = row[0];
        in->sens[k].index = row[1];
        in->sens[k].axis = row[2];
        in->sens[k].par = row[3] >= 0 ? in->d + row[3] : NULL;
    }
    in->mp.mass = in->d + D->o_mass;
    in->mp.com = in->d + D->o_com;
    in->mp.Ic = in->d + D->o_Ic;
    for (int e = 0; e < D->nel; ++e) in->el[e].par = in->d + D->elements[e].o_par;
}

/* x = [q0; v0] (or [q0; M(q0) v0] in canonical variables; the elements' s0 and z0) of
 * the model m described by d, quaternions normalized */
static void initial_state(const mbn_data *D, const mb_model *m, mb_data *ws, const double *d, double *x) {
    for (int k = D->nq + D->nv; k < D->nx; ++k) x[k] = 0.0;
    memcpy(x, d + D->o_q0, sizeof(double) * (size_t)D->nq);
    if (!D->flex) mb_normalize(m, x); /* a flexible plant's q0 is public: as the plant gives it */
    if (D->canonical) mb_momentum(m, ws, x, d + D->o_v0, x + D->nq);
    else memcpy(x + D->nq, d + D->o_v0, sizeof(double) * (size_t)D->nv);
    for (int e = 0; e < D->nel; ++e) { /* the plug-in elements' states (element.h) */
        const mbn_element *el = D->elements + e;
        memcpy(x + D->nq + D->nv + el->os, el->s0, sizeof(double) * (size_t)el->nstate);
        if (el->ndisc) memcpy(x + D->nq + D->nv + el->oz, el->z0, sizeof(double) * (size_t)el->ndisc);
    }
}

/* 1 if each plug-in element with discrete states has a positive, finite sampling
 * period at the description d (element.h) */
static int periods_valid(const mbn_data *D, const double *d) {
    for (int e = 0; e < D->nel; ++e) {
        const mbn_element *el = D->elements + e;
        if (!el->ndisc || !el->cls->period) continue;
        double T = el->cls->period(d + el->o_par + 3);
        if (!(T > 0 && isfinite(T))) return 0;
    }
    return 1;
}

/* 1 if each plug-in element's joint rows (element.h) index the plant's q and v, and each
 * event indicator row of an element (model_exchange.h's kind 4) names one of its indicators */
static int joint_rows_valid(const mbn_data *D) {
    for (int e = 0; e < D->nel; ++e) {
        const mbn_element *el = D->elements + e;
        if (el->cls->njoint && (!el->iq || !el->iv)) return 0;
        for (int k = 0; k < el->cls->njoint; ++k)
            if (el->iq[k] < 0 || el->iq[k] >= D->nq || el->iv[k] < 0 || el->iv[k] >= D->nv) return 0;
    }
    for (int r = 0; r < D->nz; ++r) {
        const int *row = D->ztab + 4 * r;
        if (row[0] == 4 && (row[1] < 0 || row[1] >= D->nel || row[2] < 0 ||
                            row[2] >= D->elements[row[1]].cls->nevent))
            return 0;
    }
    return 1;
}

mbn_instance *mbn_new(const mbn_data *D) {
    mbn_instance *in = calloc(1, sizeof(mbn_instance));
    if (!in) return NULL;
    in->data = D;
    in->d = copy_dbls(D->d0, D->nd);
    in->p = copy_dbls(D->p0, D->np);
    in->u = calloc((size_t)D->nu + 1, sizeof(double));
    in->x = calloc((size_t)D->nx + 1, sizeof(double));
    in->xw = calloc((size_t)D->nx + 1, sizeof(double));
    in->y = calloc((size_t)D->ny + 1, sizeof(double));
    in->v = calloc((size_t)D->nv + 1, sizeof(double));
    in->tau = calloc((size_t)D->nv + 1, sizeof(double));
    in->sens = calloc((size_t)D->ny + 1, sizeof(mb_sensor));
    in->efext = calloc(6 * (size_t)D->nb + 1, sizeof(double));
    in->el = calloc((size_t)D->nel + 1, sizeof(mbn_element));
    if (in->el && D->nel) memcpy(in->el, D->elements, sizeof(mbn_element) * (size_t)D->nel);
    in->m = in->d ? pack_model(D, in->d) : NULL;
    in->ws = in->m ? mb_data_new(in->m) : NULL;
    if (in->m && D->flex) in->fx = mbn_flex_new(D, in->m, in->d);
    if (!in->p || !in->u || !in->x || !in->xw || !in->y || !in->v || !in->tau || !in->sens || !in->efext || !in->el || !in->m || !in->ws ||
        (D->flex && !in->fx)) {
        mbn_free(in);
        return NULL;
    }
    for (int e = 0; e < D->nel; ++e) /* a registry that does not match its classes (element.h) */
        if (D->elements[e].npar != D->elements[e].cls->npar || D->elements[e].nstate != D->elements[e].cls->nstate ||
            D->elements[e].nstate > MBN_ELEMENT_MAX_STATES || D->elements[e].body < 1 || D->elements[e].body >= D->nb ||
            D->elements[e].os < 0 || D->nq + D->nv + D->elements[e].os + D->elements[e].nstate > D->nx ||
            D->elements[e].o_par < 0 || D->elements[e].o_par + 3 + D->elements[e].npar > D->nd ||
            D->elements[e].ndisc != D->elements[e].cls->ndisc || D->elements[e].ndisc > MBN_ELEMENT_MAX_DISCRETE ||
            (D->elements[e].ndisc && (D->elements[e].oz < 0 || !D->elements[e].z0 ||
                                      D->nq + D->nv + D->elements[e].oz + D->elements[e].ndisc > D->nx)) ||
            !mbn_element_class_complete(D->elements[e].cls)) {
            mbn_free(in);
            return NULL;
        }
    if (!periods_valid(D, in->d) || !joint_rows_valid(D)) {
        mbn_free(in);
        return NULL;
    }
    if (mbn_elements_nframe(D->nel, D->elements) > 1) { /* one frame element at most (element.h) */
        mbn_free(in);
        return NULL;
    }
    for (int k = 0; k < D->ny; ++k) { /* element outputs of registered elements only */
        const int *row = D->sens + 4 * k;
        if (row[0] == MBN_SENS_ELEMENT &&
            (row[1] < 0 || row[1] >= D->nel || row[2] < 0 || row[2] >= D->elements[row[1]].cls->nout)) {
            mbn_free(in);
            return NULL;
        }
    }
    memcpy(in->u, D->u0, sizeof(double) * (size_t)D->nu);
    bind_sensors(in);
    initial_state(D, in->m, in->ws, in->d, in->x);
    return in;
}

void mbn_free(mbn_instance *in) {
    if (!in) return;
    mbn_flex_dirder_free(in);
    mb_flex_free(in->fx);
    mb_data_free(in->ws);
    mb_free(in->m);
    free(in->d); free(in->p); free(in->u); free(in->x); free(in->xw);
    free(in->y); free(in->v); free(in->tau); free(in->sens); free(in->efext); free(in->el);
    free(in);
}

/* 1 if the symmetric 3x3 matrix A (row-major) is positive semi-definite
 * (every k x k principal minor >= -1e-12 scale^k: a round-off negative
 * moment, as of a thin strip's cross-section on the triangle inequality's
 * edge, times a positive one stays inside) */
static int psd3(const double *A, double scale) {
    double s = scale > 0 ? scale : 1.0, t = 1e-12 * s;
    for (int i = 0; i < 3; ++i)
        if (A[4 * i] < -t) return 0;
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if (A[4 * i] * A[4 * j] - A[3 * i + j] * A[3 * i + j] < -t * s) return 0;
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                 A[2] * (A[3] * A[7] - A[4] * A[6]);
    return det >= -t * s * s;
}

/* 0 if every body of the description d is physical (mass >= 0, rotational
 * inertia about the centre of mass positive semi-definite with principal
 * moments that satisfy the triangle inequality), else the first bad body */
static int check_bodies(const mbn_data *D, const double *d) {
    for (int i = 1; i < D->nb; ++i) {
        double m = d[D->o_mass + i];
        const double *c = d + D->o_com + 3 * i, *I6 = d + D->o_Ibody + 36 * i;
        if (!(m >= 0) || !isfinite(m)) return i;
        double Ic[9], S[9], cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2], tr = 0.0, scale = 0.0;
        for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 3; ++k) {
                Ic[3 * r + k] = I6[6 * r + k] - m * ((r == k ? cc : 0.0) - c[r] * c[k]);
                scale = fmax(scale, fabs(I6[6 * r + k]));
            }
        for (int r = 0; r < 3; ++r) tr += Ic[4 * r];
        for (int k = 0; k < 9; ++k) S[k] = (k % 4 == 0 ? 0.5 * tr : 0.0) - Ic[k]; /* second moment */
        if (!psd3(Ic, scale) || !psd3(S, scale)) return i;
    }
    return 0;
}

int mbn_set_parameters(mbn_instance *in, const double *p) {
    const mbn_data *D = in->data;
    for (int j = 0; j < D->np; ++j)
        if (p[j] != in->p[j] && D->p_fixed[j] && p[j] != D->p0[j]) return -1 - j;
    double *d = copy_dbls(D->d0, D->nd);
    if (!d) return -1000;
    for (int e = 0; e < D->naff; ++e) {
        int j = D->aff_p[e];
        d[D->aff_i[e]] += D->aff_c[e] * (p[j] - D->p0[j]);
    }
    if (D->tape && memcmp(p, D->p0, sizeof(double) * (size_t)D->np)) {
        const mbn_tape *T = D->tape;
        double *v = malloc(sizeof(double) * (size_t)(T->nn + 1));
        if (!v) { free(d); return -1000; }
        mbn_tape_eval(T, p, v);
        int g = mbn_tape_failed_guard(T, v);
        if (g >= 0) { free(v); free(d); return -3000 - g; }
        for (int k = 0; k < T->nout; ++k) d[T->out_d[k]] = v[T->out_n[k]];
        free(v);
        for (int k = 0; k < D->nd; ++k)
            if (!isfinite(d[k])) { free(d); return -1000; }
    }
    int body = check_bodies(D, d);
    if (body) { free(d); return -2000 - body; }
    if (!periods_valid(D, d)) { free(d); return -5000; }
    mb_model *m = pack_model(D, d);
    mb_data *ws = m ? mb_data_new(m) : NULL;
    if (!ws) { mb_free(m); free(d); return -1000; }
    mb_flex *fx = D->flex ? mbn_flex_new(D, m, d) : NULL;
    if (D->flex && !fx) { mb_data_free(ws); mb_free(m); free(d); return -1000; }
    double *x0 = in->xw;
    initial_state(D, m, ws, d, x0);
    for (int k = 0; k < D->nx; ++k)
        if (!isfinite(x0[k])) { mb_flex_free(fx); mb_data_free(ws); mb_free(m); free(d); return -1000; }
    if (fx && D->step_cap > 0) { /* the plant's step rule (steplimit.c): min(step_cap, step_k / rho) */
        double rho = HUGE_VAL;
        if (mbn_flex_rest_radius(D, fx, x0, &rho) || !(rho >= 0)) {
            in->rho_refused = rho;
            mb_flex_free(fx); mb_data_free(ws); mb_free(m); free(d);
            return -4000;
        }
        double h = D->step_k / rho < D->step_cap ? D->step_k / rho : D->step_cap;
        d[D->o_step] = d[D->o_adapt + 2] = d[D->o_adapt + 3] = h; /* the first and largest steps too */
    }
    mb_flex_free(in->fx);
    mb_data_free(in->ws);
    mb_free(in->m);
    free(in->d);
    in->fx = fx;
    in->ws = ws;
    in->m = m;
    in->d = d;
    memcpy(in->p, p, sizeof(double) * (size_t)D->np);
    bind_sensors(in);
    if (!in->stepped) memcpy(in->x, x0, sizeof(double) * (size_t)D->nx);
    in->y_valid = 0;
    in->pgen++; /* invalidates what was cached at the old parameters (flex_dirder.c) */
    return 0;
}

/* ---------------------------------------------------------- integration */
/* tau = B u (B: nv x nu, row-major, in d) */
void mbn_generalized_forces(mbn_instance *in) {
    const mbn_data *D = in->data;
    const double *B = in->d + D->o_B;
    for (int r = 0; r < D->nv; ++r) {
        double s = 0.0;
        for (int c = 0; c < D->nu; ++c) s += B[D->nu * r + c] * in->u[c];
        in->tau[r] = s;
    }
}

/* the integrator options of the Python plant's advance (ErrorControl.options,
 * first step internal_step), with fmi2SetupExperiment's tolerance if set */
static void adapt_options(const mbn_instance *in, mb_adapt_options *o) {
    const double *a = in->d + in->data->o_adapt;
    o->rtol = in->tolerance > 0 ? in->tolerance : a[0];
    o->atol = in->tolerance > 0 ? in->tolerance : a[1];
    o->h_init = a[2];
    o->h_max = a[3];
    o->h_min = a[4];
    o->max_steps = (long)a[5];
    o->method = (int)a[6];
}

/* THE integrator call of the native runtime: the compiled error-controlled
 * integrator (adaptive.h) that the Python plant's advance calls
 * (MultibodyPlant.advance: mb_rigid_ode / mb_canonical_ode; with plug-in elements
 * mbn_element_advance, with their grids and state events), with the same options.
 * Replace here (only) to follow a change of Plant.advance. x = [q; y; z]. Returns an
 * mb_adapt status (in->adapt_stats holds the call's statistics). */
static int integrate(mbn_instance *in, double *x, double dt) {
    const mbn_data *D = in->data;
    mb_adapt_options opt;
    adapt_options(in, &opt);
    double *q = x, *y = x + D->nq;
    mb_ode ode;
    mbn_element_ode eo;
    if (D->nel) { /* the elements' discrete states sampled on their grids, in a frame element's frame (element.h) */
        mbn_element_ode_init(&eo, in->m, in->ws, D->nel, in->el, in->t, in->efext, &ode);
        mbn_element_ode_inputs(&eo, in->u, D->nu);
        return mbn_element_advance(&eo, &ode, q, y, in->tau, dt, &opt, &in->adapt_stats);
    }
    /* FlexibleArm._compiled_adaptive: advance_flexible; without beams (segments) advance_rigid */
    if (D->flex && D->flex->nbeam) mb_flex_ode(in->fx, &ode);
    else if (D->canonical) mb_canonical_ode(in->m, in->ws, &ode);
    else mb_rigid_ode(in->m, in->ws, &ode);
    return mb_adapt_advance(&ode, q, y, in->tau, NULL, dt, &opt, &in->adapt_stats);
}

/* THE right-hand side of that integration at time t: the slopes dx (nx) at
 * x = [q; y; z] with the inputs held (in->tau from mbn_generalized_forces),
 * z's slopes 0 (the plug-in elements' discrete states). Returns 0 or the kernel's error code
 * (a singular articulated inertia, a non-finite flexible stage). */
int mbn_rhs(mbn_instance *in, double t, const double *x, double *dx) {
    const mbn_data *D = in->data;
    const double *q = x, *y = x + D->nq;
    double *qdot = dx, *ydot = dx + D->nq;
    for (int k = D->nq + D->nv; k < D->nx; ++k) dx[k] = 0.0;
    mb_ode ode;
    mbn_element_ode eo;
    if (D->nel) {
        mbn_element_ode_init(&eo, in->m, in->ws, D->nel, in->el, t, in->efext, &ode);
        mbn_element_ode_inputs(&eo, in->u, D->nu);
        return ode.f(ode.ctx, q, y, in->tau, NULL, qdot, ydot);
    }
    if (D->flex && D->flex->nbeam) mb_flex_ode(in->fx, &ode);
    else if (D->canonical) mb_canonical_ode(in->m, in->ws, &ode);
    else mb_rigid_ode(in->m, in->ws, &ode);
    return ode.f(ode.ctx, q, y, in->tau, NULL, qdot, ydot);
}

int mbn_advance(mbn_instance *in, double dt) {
    const mbn_data *D = in->data;
    double *x = in->xw;
    memcpy(x, in->x, sizeof(double) * (size_t)D->nx);
    mbn_generalized_forces(in);
    int status = integrate(in, x, dt);
    for (int k = 0; k < D->nx; ++k)
        if (!isfinite(x[k])) return -1 - k;
    if (status) {
        /* the integrator leaves x at the last accepted state: a state that
         * has run away there made a stage non-finite (the inertia then looks
         * singular), so name it rather than the inertia */
        int big = 0;
        for (int k = 1; k < D->nx; ++k)
            if (fabs(x[k]) > fabs(x[big])) big = k;
        if (D->nx > 0 && fabs(x[big]) > 1e100) return -1 - big;
        if (status == MB_ADAPT_NO_MEMORY) return MBN_NOMEM;
        if (status == MB_ADAPT_RHS_ERROR) {
            int err = in->adapt_stats.rhs_error;
            if (D->flex && mbn_flex_blown_up(in, err)) { in->adapt_status = status; return MBN_ADAPT; }
            return err < 0 ? -err : err;
        }
        in->adapt_status = status;
        return MBN_ADAPT;
    }
    memcpy(in->x, x, sizeof(double) * (size_t)D->nx);
    in->t += dt;
    in->stepped = 1;
    in->y_valid = 0;
    return 0;
}

/* the outputs of kind MBN_SENS_ELEMENT (element.h) into in->y, at velocities v, and the
 * elements' energy added to the potential energy that counts it (index 1) */
static void element_outputs(mbn_instance *in, const double *v) {
    const mbn_data *D = in->data;
    int kin = 0;
    for (int k = 0; k < D->ny; ++k) {
        const mb_sensor *s = in->sens + k;
        if (s->kind == MB_SENS_POTENTIAL && s->index && D->nel) {
            const double *blk = in->x + D->nq + D->nv;
            in->y[k] += mbn_elements_energy(D->nel, in->el, in->x, v, blk, blk);
        }
        if (s->kind != MBN_SENS_ELEMENT) continue;
        if (!kin) mb_kinematics(in->m, in->ws, in->x, v);
        kin = 1;
        const mbn_element *el = in->el + s->index;
        double x[3], V[3];
        mbn_element_point(in->m, in->ws, el, x, V);
        in->y[k] = el->cls->output(el->par + 3, in->t, x, V, in->x + D->nq + D->nv + el->os, s->axis);
    }
}

const double *mbn_outputs(mbn_instance *in) {
    const mbn_data *D = in->data;
    if (in->y_valid) return in->y;
    const double *v = in->x + D->nq;
    if (D->canonical) {
        mb_minv(in->m, in->ws, in->x, in->x + D->nq, in->v);
        v = in->v;
    }
    int motion = 0; /* sensors of the dynamics (element.h): accelerometers, a frame's acceleration, ... */
    for (int k = 0; k < D->ny; ++k) motion |= mbn_is_motion_sensor(in->sens[k].kind);
    if (motion && !D->flex) {
        mbn_generalized_forces(in);
        mbn_motion_sensors_eval(in->m, in->ws, &in->mp, D->nel, in->el, in->t, D->ny, in->sens, in->x, v,
                                in->x + D->nq + D->nv, in->u, D->nu, in->tau, in->efext, in->y);
    } else if (D->flex)
        mbn_flex_outputs(in);
    else
        mb_sensors_eval(in->m, in->ws, &in->mp, D->ny, in->sens, in->x, v, in->u, D->nu, in->y);
    element_outputs(in, v);
    in->y_valid = 1;
    return in->y;
}

/* ---------------------------------------------------------- saved state */
/* Layout: "MBFMUNS1", uint32 nx, nu, np, then doubles t, stepped, p[np],
 * u[nu], x[nx], then the 64-bit FNV-1a hash of everything before it. */
static const char MAGIC[8] = {'M', 'B', 'F', 'M', 'U', 'N', 'S', '1'};

static uint64_t fnv1a(const unsigned char *b, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t k = 0; k < n; ++k) {
        h ^= b[k];
        h *= 1099511628211ULL;
    }
    return h;
}

static size_t body_size(const mbn_data *D) {
    return 8 + 3 * 4 + sizeof(double) * (size_t)(2 + D->np + D->nu + D->nx);
}

size_t mbn_state_size(const mbn_instance *in) { return body_size(in->data) + 8; }

void mbn_state_write(const mbn_instance *in, unsigned char *buf) {
    const mbn_data *D = in->data;
    unsigned char *b = buf;
    uint32_t sizes[3] = {(uint32_t)D->nx, (uint32_t)D->nu, (uint32_t)D->np};
    double head[2] = {in->t, (double)in->stepped};
    memcpy(b, MAGIC, 8); b += 8;
    memcpy(b, sizes, sizeof sizes); b += sizeof sizes;
    memcpy(b, head, sizeof head); b += sizeof head;
    memcpy(b, in->p, sizeof(double) * (size_t)D->np); b += sizeof(double) * (size_t)D->np;
    memcpy(b, in->u, sizeof(double) * (size_t)D->nu); b += sizeof(double) * (size_t)D->nu;
    memcpy(b, in->x, sizeof(double) * (size_t)D->nx); b += sizeof(double) * (size_t)D->nx;
    uint64_t h = fnv1a(buf, (size_t)(b - buf));
    memcpy(b, &h, 8);
}

int mbn_state_read(mbn_instance *in, const unsigned char *buf, size_t size, const char **why) {
    const mbn_data *D = in->data;
    size_t body = body_size(D);
    uint32_t sizes[3];
    uint64_t h;
    if (!buf || size != body + 8) { *why = "it has the wrong length (truncated or not a state of this FMU)"; return -1; }
    if (memcmp(buf, MAGIC, 8)) { *why = "it is not a native mbfmu FMU state"; return -2; }
    memcpy(&h, buf + body, 8);
    if (h != fnv1a(buf, body)) { *why = "its checksum does not match (corrupted)"; return -3; }
    memcpy(sizes, buf + 8, sizeof sizes);
    if (sizes[0] != (uint32_t)D->nx || sizes[1] != (uint32_t)D->nu || sizes[2] != (uint32_t)D->np) {
        *why = "its sizes are those of another plant";
        return -4;
    }
    const double *v = (const double *)(const void *)(buf + 8 + sizeof sizes);
    double head[2];
    memcpy(head, v, sizeof head);
    size_t nvals = (size_t)(D->np + D->nu + D->nx);
    double *vals = malloc(sizeof(double) * (nvals + 1));
    if (!vals) { *why = "out of memory"; return -5; }
    memcpy(vals, buf + 8 + sizeof sizes + sizeof head, sizeof(double) * nvals);
    for (size_t k = 0; k < nvals; ++k)
        if (!isfinite(vals[k])) { free(vals); *why = "it holds non-finite values"; return -6; }
    if (!isfinite(head[0])) { free(vals); *why = "its time is not finite"; return -6; }
    const double *p = vals, *u = vals + D->np, *x = vals + D->np + D->nu;
    if (memcmp(p, in->p, sizeof(double) * (size_t)D->np)) {
        int saved = in->stepped;
        in->stepped = 1; /* keep the current state while re-packing */
        int err = mbn_set_parameters(in, p);
        in->stepped = saved;
        if (err) { free(vals); *why = "its parameters cannot be applied"; return -7; }
    }
    memcpy(in->u, u, sizeof(double) * (size_t)D->nu);
    memcpy(in->x, x, sizeof(double) * (size_t)D->nx);
    in->t = head[0];
    in->stepped = head[1] != 0.0;
    in->y_valid = 0;
    free(vals);
    return 0;
}
