/*
 * Output sensors evaluated on a model (mbfmu.dynamics.sensors in C).
 *
 * A sensor reads the state x = [q; y] (y = v, or the momenta p in canonical
 * variables), the velocities v and the inputs u. Codes and meaning are those
 * of mbfmu/dynamics/sensors.py. Units SI.
 */
#ifndef MBFMU_SENSORS_H
#define MBFMU_SENSORS_H

#include "mb.h"

enum { MB_SENS_STATE = 1, MB_SENS_VELOCITY, MB_SENS_POINT, MB_SENS_KINETIC, MB_SENS_POTENTIAL,
       MB_SENS_LINEAR };

typedef struct {
    int kind;          /* MB_SENS_* */
    int index;         /* STATE: entry of x; VELOCITY: entry of v; POINT: body */
    int axis;          /* POINT: world axis 0..2 */
    const double *par; /* POINT: point (3, body frame, m); LINEAR: gain, then nv + nu weights */
} mb_sensor;

/* body masses (nb, kg) and centres of mass (nb, 3, body frame, m) for the
 * gravitational potential energy */
typedef struct {
    const double *mass;
    const double *com;
} mb_mass_props;

/* out[k] = value of sensor k (n sensors) at state x with velocities v (nv)
 * and inputs u (nu); runs the kinematics it needs. */
void mb_sensors_eval(mb_model *m, const mb_mass_props *mp, int n, const mb_sensor *s,
                     const double *x, const double *v, const double *u, int nu, double *out);

#endif
