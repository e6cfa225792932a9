/*
 * A sled frame: the model's world frame translates with a uniform
 * acceleration a_s(t) along a fixed axis (the crash sled of the occupant
 * plant), and sensors read in it.
 *
 * a_s(t) = u[input] (if input >= 0) - peak sin(pi (t - start) / duration)
 * on [start, start + duration] (a half-sine deceleration pulse, peak > 0).
 * In the sled frame every body gets the d'Alembert force -m a_s axis at its
 * centre of mass, which is a uniform, time-varying gravity: the dynamics is
 * the model's with gravity g - a_s axis (set for the call, then restored).
 *
 * Sensors of the sled frame (codes after the engine's, sensors.h):
 *   ACCELEROMETER  specific force (inertial acceleration minus gravity) at a
 *                  point of a body, world (sled) axes, m/s^2: axis 0..2, or 3
 *                  for the magnitude; par: point (3, body frame, m);
 *   SLED_ACCEL     a_s(t), m/s^2;
 *   CABLE_TENSION  tension of cable index (N);
 *   DISPLACEMENT   world coordinate axis of a point of a body minus a
 *                  reference, m; par: point (3, body frame, m), reference (m).
 */
#ifndef MBFMU_SLED_H
#define MBFMU_SLED_H

#include "adaptive.h"
#include "mb.h"
#include "sensors.h"

/* columns of the sled's parameters: axis (world, unit), pulse peak (m/s^2),
 * duration (s), start (s) */
enum { SL_AX = 0, SL_AY, SL_AZ, SL_PEAK, SL_DUR, SL_START, SL_N };

enum { MB_SENS_ACCELEROMETER = 31, MB_SENS_SLED_ACCEL, MB_SENS_CABLE_TENSION, MB_SENS_DISPLACEMENT };

typedef struct {
    int input;         /* input added to the pulse, -1: none */
    const double *par; /* (SL_N) */
} mb_sled;

/* a_s at time t (s) with inputs u, m/s^2 */
double mb_sled_acceleration(const mb_sled *s, double t, const double *u);

/* dq/dt, dv/dt in the sled frame at sled acceleration a_s (the model's
 * right-hand side with gravity g - a_s axis); returns as mb_rhs */
int mb_sled_rhs(const mb_model *m, mb_data *d, const mb_sled *s, double a_s, const double *q, const double *v,
                const double *tau, double *qdot, double *vdot);

/* specific force (3, m/s^2, sled axes) at the point r_B (body frame) of body
 * b, from (q, v, vdot) of the sled-frame dynamics at a_s (runs mb_rnea) */
void mb_sled_specific_force(const mb_model *m, mb_data *d, const mb_sled *s, double a_s, const double *q, const double *v,
                            const double *vdot, int b, const double *r_B, double *acc);

/* x' = f(x) of the sled frame: y = v, at time t (s) */
int mb_sled_ode_rhs(const mb_model *m, mb_data *d, const mb_sled *s, double t, const double *u, const double *q,
                    const double *y, const double *tau, double *qdot, double *ydot);

/* State after dt (s) from time t (s), inputs u and generalized forces tau
 * held: mb_adapt_advance with opt on x = [q; v] (quaternions renormalized).
 * Returns MB_ADAPT_OK or its status (stats are then its; q, v the last
 * state reached). A plant with plug-in elements (their states, a HIC
 * recorder's sampled history: element.h) advances with mbn_element_advance
 * instead, the sled set on its ode (mbn_element_ode_sled). */
int mb_sled_advance(const mb_model *m, mb_data *d, const mb_sled *s, double t, double *q, double *v, const double *tau,
                    const double *u, double dt, const mb_adapt_options *opt, mb_adapt_stats *stats);

/* as mb_sensors_eval (sensors.h) at time t, with the sled frame's sensors
 * as well (tau: the generalized forces of the accelerometers' dynamics) */
void mb_sled_sensors_eval(const mb_model *m, mb_data *d, const mb_mass_props *mp, const mb_sled *s, double t, int n,
                          const mb_sensor *sens, const double *x, const double *v, const double *u, int nu,
                          const double *tau, double *out);

#endif
