/*
 * Output sensors evaluated on a model (mbfmu.dynamics.sensors in C).
 *
 * A sensor reads the state x = [q; y] (y = v, or the momenta p in canonical
 * variables), the velocities v and the inputs u. Codes and meaning are those
 * of mbfmu/dynamics/sensors.py. Units SI. Codes 1-19 are these; 20-29 are the
 * flexible-system sensors (flexsensors.h), 31-39 the sensors of the dynamics
 * (accelerometers, a frame element's acceleration, cable tensions, point
 * displacements: element.h).
 */
#ifndef MBFMU_SENSORS_H
#define MBFMU_SENSORS_H

#include "mb.h"

enum { MB_SENS_STATE = 1, MB_SENS_VELOCITY, MB_SENS_POINT, MB_SENS_KINETIC, MB_SENS_POTENTIAL,
       MB_SENS_LINEAR, MB_SENS_QUATERNION, MB_SENS_MOMENTUM, MB_SENS_BODY_QUATERNION, MB_SENS_BODY_TWIST };

typedef struct {
    int kind;          /* MB_SENS_* */
    int index;         /* STATE: entry of x; VELOCITY: entry of v; POINT, BODY_QUATERNION,
                          BODY_TWIST: body; QUATERNION: first q index; POTENTIAL: 1 when the
                          plant adds its plug-in elements' energy (element.h; the
                          runtime's, not this file's) */
    int axis;          /* POINT: world axis 0..2; QUATERNION, BODY_QUATERNION: element 0..3
                          (0 = w); MOMENTUM: 0..2 angular (about the world origin), 3..5
                          linear, world axes; BODY_TWIST: 0..2 angular velocity (rad/s), 3..5
                          velocity of the body origin (m/s), world axes */
    const double *par; /* POINT: point (3, body frame, m); LINEAR: gain, then nv + nu weights */
} mb_sensor;

/* body masses (nb, kg), centres of mass (nb, 3, body frame, m) and
 * rotational inertias about them (nb, 3, 3, body axes, kg m^2), for the
 * potential energy and the momenta */
typedef struct {
    const double *mass;
    const double *com;
    const double *Ic;
} mb_mass_props;

/* total momentum HL = [H (about the world origin, N m s); L (N s)], world
 * axes, at (q, v); runs mb_kinematics(q, v) */
void mb_momenta(const mb_model *m, mb_data *d, const mb_mass_props *mp, const double *q, const double *v, double *HL);

/* the body orientation R_WB of body b as a unit quaternion (w, x, y, z),
 * w >= 0 (Shepperd's method), after mb_kinematics */
void mb_body_quaternion(const mb_model *m, const mb_data *d, int b, double *quat);
/* the twist of body b in world axes: angular velocity (rad/s), then the
 * velocity of its origin (m/s), after mb_kinematics(q, v) */
void mb_body_twist(const mb_model *m, const mb_data *d, int b, double *twist);

/* out[k] = value of sensor k (n sensors) at state x with velocities v (nv)
 * and inputs u (nu); runs the kinematics it needs. */
void mb_sensors_eval(const mb_model *m, mb_data *d, const mb_mass_props *mp, int n, const mb_sensor *s,
                     const double *x, const double *v, const double *u, int nu, double *out);

#endif
