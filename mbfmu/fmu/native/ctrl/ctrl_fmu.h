/*
 * One native controller FMU: its evaluator description (controller.h) and
 * its variables, generated into ctrl_data.c by mbfmu.fmu.native.controller.
 *
 * Value references: inputs [0, nu), outputs [nu, nu + ny), states
 * [nu + ny, nu + ny + nx), parameters after them (np).
 */
#ifndef MBFMU_CTRL_FMU_H
#define MBFMU_CTRL_FMU_H

#include "controller.h"

typedef struct {
    const char *model;          /* model name, for messages */
    const char *guid;
    const mbc_desc *desc;
    const double *u0;           /* (nu) start values of the inputs */
    const char *const *names;   /* (nu + ny + nx + np) variable names by value reference */
    int scheduled;              /* 1: an FMI 3 Scheduled Execution FMU (ctrl_fmi3.c), else co-simulation */
} mbc_fmu;

extern const mbc_fmu MBC_FMU;

#endif
