/*
 * Tangents of the sphere-plane contacts and ground-anchored cables
 * (mb_contact_force, mb_cable_force in algorithms.c) for the directional
 * derivatives of dirder.c. See contact_dirder.c.
 */
#ifndef MBFMU_CONTACT_DIRDER_H
#define MBFMU_CONTACT_DIRDER_H

#include "mb.h"

/* fx (+)= the contacts' and cables' body-frame forces (nb, 6, about the body
 * origins) and dfx (+)= their tangents, after mb_kinematics(q, vel), given the
 * bodies' accumulated configuration twists z (nb, 6, body frame) and
 * velocity tangents dv (nb, 6) along the direction */
void mbn_contact_tangents(const mb_model *m, mb_data *ws, const double *z, const double *dv, double *fx, double *dfx);

/* tangent (N) of cable k's tension (mb_cable_force; 0 when slack or
 * compressive) along the direction, after mb_kinematics(q, vel) */
double mbn_cable_tension_tangent(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k);

/* tangent (J) of the contacts' and cables' elastic energy (mb_passive_energy_posed) */
double mbn_contact_energy_tangent(const mb_model *m, mb_data *ws, const double *z);

#endif
