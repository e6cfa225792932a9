/*
 * The FMI 3 variable types neither native runtime has variables of, for the
 * plant's (csrc/fmi3.c) and the controller's (ctrl/ctrl_fmi3.c) getters and
 * setters that refuse them: FMI3_ABSENT_TYPES(X) expands X(type, getter,
 * setter) for each. UInt64 is not among them: the plant's array sizes and
 * counts are UInt64 (the controller adds it to its own list).
 */
#ifndef MBFMU_FMI3_ABSENT_TYPES_H
#define MBFMU_FMI3_ABSENT_TYPES_H

#include "fmi3Functions.h"

#define FMI3_ABSENT_TYPES(X)                         \
    X(fmi3Float32, fmi3GetFloat32, fmi3SetFloat32)   \
    X(fmi3Int8, fmi3GetInt8, fmi3SetInt8)            \
    X(fmi3UInt8, fmi3GetUInt8, fmi3SetUInt8)         \
    X(fmi3Int16, fmi3GetInt16, fmi3SetInt16)         \
    X(fmi3UInt16, fmi3GetUInt16, fmi3SetUInt16)      \
    X(fmi3Int32, fmi3GetInt32, fmi3SetInt32)         \
    X(fmi3UInt32, fmi3GetUInt32, fmi3SetUInt32)      \
    X(fmi3Int64, fmi3GetInt64, fmi3SetInt64)         \
    X(fmi3Boolean, fmi3GetBoolean, fmi3SetBoolean)   \
    X(fmi3String, fmi3GetString, fmi3SetString)

#endif
