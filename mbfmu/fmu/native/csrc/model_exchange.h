/*
 * Model Exchange core of the native runtime, shared by the FMI 2 (fmi2.c)
 * and FMI 3 (fmi3.c) interfaces: the continuous states, their derivatives
 * from the right-hand side that mbn_advance integrates (mbn_rhs), the event
 * indicators and the events.
 *
 * Continuous states: the prefix x[0..nxc) of the plant state, [q; v] (or
 * [q; p] in canonical variables) and the plug-in elements' continuous states
 * (a HIC recorder's integral). The rest of x is discrete: the plug-in
 * elements' discrete states (a satellite's latch flags, a HIC recorder's
 * history and maximum).
 *
 * Events (the discontinuities of the kernel elements):
 *   - state events, one indicator per row of data->ztab: a contact's penetration, a
 *     cable's stretch, a joint coordinate's distance to its range limits
 *     (the force elements' switches: kinks, no state changes), a plug-in
 *     element's own indicators (element.h's event: a hinge latch's travel
 *     past its stop, +1 once engaged; its on_event runs at each event, as
 *     mbn_element_advance runs it at a located instant);
 *   - time events: the plug-in elements' sampling grids (their discrete
 *     states sampled there, as mbn_element_advance samples them; element.h)
 *     and a frame element's kinks in time (frame_next_kink: the ends of the
 *     crash sled's built-in pulse);
 *   - step events for quaternions: every evaluation uses the host's states
 *     with each quaternion normalized (a projection at each set of the
 *     states); when the host's quaternion has drifted from unit norm by more
 *     than MBN_ME_DRIFT, the completed integrator step asks for an event, at
 *     which the projected states go back to the host. The norm never enters
 *     the physics (only the projection does), so the hand-back only keeps the
 *     host's states bounded: MBN_ME_DRIFT is far above an integrator's drift
 *     over a step (1e-9 made every completed step of an integrator at rtol
 *     1e-6 an event, and the host restart there).
 */
#ifndef MBFMU_MODEL_EXCHANGE_H
#define MBFMU_MODEL_EXCHANGE_H

#include "native.h"

#define MBN_ME_DRIFT 1e-6

/* kinds of the rows (kind, index, side) of data->ztab */
enum { MBN_Z_CONTACT = 1, MBN_Z_CABLE = 2, MBN_Z_LIMIT = 3,
       MBN_Z_ELEMENT = 4 /* a plug-in element's indicator: index the element, third entry which one (element.h) */ };

typedef struct {
    mbn_instance *in;
    double *dx;        /* (nx) slopes at the current time, states and inputs */
    int dx_valid;
    double drift;      /* largest | |quaternion| - 1 | the host set since the last event */
    double *el_done;   /* (data->nel) the grid instant of each plug-in element's last sample (s) */
} mbn_me;

/* 0, or -1 out of memory */
int mbn_me_init(mbn_me *me, mbn_instance *in);
void mbn_me_free(mbn_me *me);
/* the event bookkeeping starts at in->t (leaving initialization, or a
 * restored state): an element's grid instant at in->t counts as sampled */
void mbn_me_start(mbn_me *me);
/* the instance changed (time, states, inputs, parameters, a restored state) */
void mbn_me_changed(mbn_me *me);
/* the host's continuous states x (nxc): quaternions normalized into in->x */
void mbn_me_set_states(mbn_me *me, const double *x);
/* the derivatives (nxc) at in->t; 0 or the kernel's error code (mbn_rhs) */
int mbn_me_derivatives(mbn_me *me, double *dx);
/* the event indicators (data->nz) */
void mbn_me_indicators(mbn_me *me, double *z);
/* the next time event after in->t (s), INFINITY if none */
double mbn_me_next_time_event(const mbn_me *me);
/* the events at in->t: the plug-in elements' state events (on_event: a hinge latch reached
 * engages), the plug-in elements whose
 * grid has an instant there sample their discrete states, the projection of the quaternions is handed over; *x_changed:
 * the continuous states changed */
void mbn_me_event_update(mbn_me *me, int *x_changed);
/* the completed integrator step: 1 if a step event is due */
int mbn_me_step_event(const mbn_me *me);
/* the nominal magnitudes of the continuous states (nxc): 1 */
void mbn_me_nominals(const mbn_me *me, double *x);

#endif
