/*
 * Plug-in elements of the native runtime: a force element that the engine
 * core does not know, written once in C against this interface and
 * registered by the plant that uses it (MultibodyPlant.register_elements;
 * the FMU's model_data.c holds the registry MBN_DATA.elements, which the
 * runtime iterates).
 *
 * An element acts on one point rB (body frame, m) of one body. From the
 * point's world position x (m) and velocity V (m/s), the time t (s) and its
 * own continuous states s (nstate, units the class's) it gives the world
 * force F (N) on that point and the rates sdot of its states (units of s per
 * second), and the tangent (dF, dsdot) of (F, sdot) along (dx, dV, ds) for
 * the exact directional derivatives (dirder.c). The runtime turns F into
 * the body's spatial force (fext) of the rigid right-hand side; the states
 * of all elements follow the plant's [q; v] in the state vector, element
 * after element in registry order, and are integrated with them (Co-
 * Simulation) or are continuous states (Model Exchange).
 */
#ifndef MBFMU_ELEMENT_H
#define MBFMU_ELEMENT_H

#include "mb.h"

/* most states one element may carry (mbn_new refuses more) */
#define MBN_ELEMENT_MAX_STATES 16

typedef struct {
    const char *name; /* for messages */
    int npar;         /* its parameters after the point (element.c's table) */
    int nstate;       /* its continuous states (0: none; s and sdot are then not read / written) */
    void (*force)(const double *par, double t, const double *x, const double *V, const double *s, double *F,
                  double *sdot);
    void (*tangent)(const double *par, double t, const double *x, const double *V, const double *s, const double *dx,
                    const double *dV, const double *ds, double *dF, double *dsdot);
} mbn_element_class;

/* one registered element: its class, body, parameters [rB (3); npar], npar
 * and nstate as registered (mbn_new refuses a registry that does not match
 * its classes), the offset os of its states in the elements' block (after
 * [q; v]) and their start values s0 (nstate) */
typedef struct {
    const mbn_element_class *cls;
    int body;
    const double *par;
    int npar;
    int nstate, os;
    const double *s0;
} mbn_element;

/* the elements' states in all (the block after [q; v]) */
int mbn_elements_nstate(int nel, const mbn_element *el);

/* fext (nb, 6; body frame, zeroed first) = the elements' forces at state
 * (q, v, s) and time t, s the elements' states block; their rates into sdot
 * (same layout) unless NULL; runs mb_kinematics(q, v) */
void mbn_elements_fext(const mb_model *m, mb_data *ws, int nel, const mbn_element *el, double t, const double *q,
                       const double *v, const double *s, double *fext, double *sdot);

/* the rigid velocity-variable mb_ode of m with the elements' forces added to
 * the fext it is given and their states after v: y = [v; s] (ny = nv +
 * mbn_elements_nstate); ctx holds what f reads (mbn_element_ode_init) */
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
