/*
 * A message to the host's logger, for both native runtimes: the plant's
 * (csrc/fmi2.c, csrc/fmi3.c) and the controller's (ctrl/ctrl_fmi2.c,
 * ctrl/ctrl_fmi3.c). status is the FMI status of the message (OK to Fatal,
 * the same numbers in FMI 2 and 3); instance may be NULL.
 */
#ifndef MBFMU_FMI_LOGGER_H
#define MBFMU_FMI_LOGGER_H

#include <stddef.h>

#include "fmi2FunctionTypes.h"
#include "fmi3FunctionTypes.h"

/* FMI 2: the logger takes the message as a printf format (a host that does
 * not format still reads it), so its percent signs are doubled */
static inline void fmi2_log_message(const fmi2CallbackFunctions *cb, fmi2String instance, int status,
                                    const char *msg) {
    char esc[2048];
    size_t k = 0;
    if (!cb || !cb->logger) return;
    for (const char *p = msg; *p && k + 2 < sizeof esc; ++p) {
        if (*p == '%') esc[k++] = '%';
        esc[k++] = *p;
    }
    esc[k] = 0;
    cb->logger(cb->componentEnvironment, instance ? instance : "", (fmi2Status)status,
               status >= fmi2Error ? "logStatusError" : "logStatusWarning", esc);
}

/* FMI 3: the message as it is */
static inline void fmi3_log_message(fmi3LogMessageCallback log, fmi3InstanceEnvironment env, int status,
                                    const char *msg) {
    if (log) log(env, (fmi3Status)status, status >= fmi3Error ? "logStatusError" : "logStatusWarning", msg);
}

#endif
