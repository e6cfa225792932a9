/*
 * Output sensors of a flexible system (mbfmu.dynamics.flexible.sensors in C).
 *
 * The sensors read the public state x = [q; v] of an mb_flex (q = [q_rigid;
 * eta], v = [v_rigid; eta_dot]) and its virtual tree:
 *   MB_SENS_STATE        x[index]
 *   MB_SENS_VELOCITY     v[index]
 *   MB_SENS_COMBINATION  sum_k par[k] x[k] (nq + nv weights): joint angles,
 *                        modal deflections and strains, linear in the state
 *   MB_SENS_POINT        a point fixed on a body of the virtual tree, world, m
 *   MB_SENS_RELATIVE     coordinate axis % 3 of the point par (3, body frame,
 *                        m) fixed on body index, in the frame of body
 *                        axis / 3 relative to its origin, m (a segment
 *                        beam's tip in its root frame)
 *   MB_SENS_KINETIC      1/2 v^T M v (the virtual tree's kinetic energy), J
 *   MB_SENS_POTENTIAL    gravity and force elements of the virtual tree plus
 *                        the strain energy 1/2 eta^T K eta of the beams, J
 * Any other kind gives NaN.
 */
#ifndef MBFMU_FLEXSENSORS_H
#define MBFMU_FLEXSENSORS_H

#include "flexible.h"
#include "sensors.h"

/* kept clear of the rigid sensor codes (sensors.h) */
enum { MB_SENS_COMBINATION = 20, MB_SENS_RELATIVE = 21 };

/* strain energy 1/2 sum_b eta_b^T K_b eta_b of the beams at q (public), J */
double mb_flex_strain_energy(const mb_flex *fx, const double *q);

/* out[k] = value of sensor k (n sensors) at the public state x = [q; v] with
 * inputs u (nu); mp holds the virtual tree's mass properties. Overwrites the
 * flexible workspace (fx->c, fx->cd) and the tree's kinematics. */
void mb_flex_sensors_eval(mb_flex *fx, const mb_mass_props *mp, int n, const mb_sensor *s,
                          const double *x, const double *u, int nu, double *out);

#endif
