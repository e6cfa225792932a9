/*
 * Plug-in elements of the native runtime: a force element that the engine
 * core does not know, written once in C against this interface and
 * registered by the plant that uses it (MultibodyPlant.native_elements; the
 * FMU's model_data.c holds the registry MBN_DATA.elements, which the
 * runtime iterates).
 *
 * An element acts on one point rB (body frame, m) of one body: from the
 * point's world position x (m) and velocity V (m/s) and the time t (s) it
 * gives the world force F (N) on that point, and the tangent dF of F along
 * (dx, dV) for the exact directional derivatives (dirder.c). The runtime
 * turns F into the body's spatial force (fext) of the rigid right-hand side.
 */
#ifndef MBFMU_ELEMENT_H
#define MBFMU_ELEMENT_H

#include "mb.h"

typedef struct {
    const char *name; /* for messages */
    int npar;         /* its parameters after the point (element.c's table) */
    void (*force)(const double *par, double t, const double *x, const double *V, double *F);
    void (*tangent)(const double *par, double t, const double *x, const double *V, const double *dx,
                    const double *dV, double *dF);
} mbn_element_class;

/* one registered element: its class, body, parameters [rB (3); npar] and
 * npar as registered (mbn_new refuses a registry that does not match its class) */
typedef struct {
    const mbn_element_class *cls;
    int body;
    const double *par;
    int npar;
} mbn_element;

/* fext (nb, 6; body frame, zeroed first) = the elements' forces at state
 * (q, v) and time t; runs mb_kinematics(q, v) */
void mbn_elements_fext(const mb_model *m, mb_data *ws, int nel, const mbn_element *el, double t, const double *q,
                       const double *v, double *fext);

/* the rigid velocity-variable mb_ode of m with the elements' forces added to
 * the fext it is given; ctx holds what f reads (mbn_element_ode_init) */
typedef struct {
    mb_ode inner;
    const mb_model *m;
    mb_data *ws;
    int nel;
    const mbn_element *el;
    double t0, t_stage; /* the interval's start (s), the stage's time from it (mb_adapt_advance) */
    double *fext;       /* (nb, 6) scratch */
} mbn_element_ode;
void mbn_element_ode_init(mbn_element_ode *e, const mb_model *m, mb_data *ws, int nel, const mbn_element *el,
                          double t0, double *fext, mb_ode *ode);

#endif
