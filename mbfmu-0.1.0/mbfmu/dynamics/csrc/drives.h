/*
 * Joint drives: servo actuation and Coulomb friction of 1-DOF joints, force
 * elements of the model (mb_model.drives, ndr rows of DR_N columns) that
 * mb_passive_forces applies, so every integrator and the native FMU runtime
 * run them (mbfmu.dynamics.drives declares them from Python).
 *
 * Drive k acts on the velocity coordinate iv (configuration coordinate iq)
 * of a revolute or prismatic joint. Its command c is the entry tau[iv] of
 * the generalized forces the caller passes (tau = B u):
 *   DRIVE_TORQUE    c is the joint torque (N m) or force (N) itself;
 *   DRIVE_POSITION  c is a position set-point (rad or m):
 *                   f = clip(kp (c - q[iq]) - kd v[iv], -limit, limit);
 *   DRIVE_VELOCITY  c is a velocity set-point (rad/s or m/s):
 *                   f = clip(kd (c - v[iv]), -limit, limit);
 * then Coulomb friction fc (N m or N), smoothed over the velocity vs,
 * opposes the motion: f -= fc tanh(v[iv] / vs). The drive replaces tau[iv]
 * by f. Units of kp: N m/rad (N/m); kd: N m s/rad (N s/m). A limit of
 * 1e300 or more means none.
 */
#ifndef MBFMU_DRIVES_H
#define MBFMU_DRIVES_H

#include "mb.h"

enum { DRIVE_TORQUE = 0, DRIVE_POSITION = 1, DRIVE_VELOCITY = 2 };
/* columns of a drive row: coordinates (stored as doubles), mode, gains, torque
 * limit, Coulomb friction and its smoothing velocity (> 0) */
enum { DR_IV = 0, DR_IQ, DR_MODE, DR_KP, DR_KD, DR_LIM, DR_FC, DR_VS, DR_N };

/* replace the commands tau[iv] of the driven coordinates by the drives'
 * torques at (q, qd) */
void mb_drive_forces(const mb_model *m, const double *q, const double *qd, double *tau);

/* 1 if a drive reads its command as a set-point (position or velocity servo) */
int mb_drives_have_servo(const mb_model *m);

/* 0 if the rows drives (n, DR_N) fit the model m (coordinates of 1-DOF
 * revolute or prismatic joints, each driven once, a known mode, finite gains
 * and friction >= 0, limit >= 0, vs > 0), else 1 + the first bad row */
int mb_drives_check(const mb_model *m, int n, const double *drives);

#endif
