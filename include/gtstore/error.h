/* Error codes and the error struct every fallible gtstore function takes. */
#ifndef GTSTORE_ERROR_H
#define GTSTORE_ERROR_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes: 0 is success, every failure is negative. */
typedef enum gts_status {
    GTS_OK = 0,
    GTS_EINVAL = -1,    /* an argument has an invalid value */
    GTS_ETYPE = -2,     /* an unsupported data type */
    GTS_ENOTFOUND = -3, /* an unknown name (preset) */
    GTS_EOVERFLOW = -4, /* a size or offset does not fit in 64 bits */
    GTS_ENOMEM = -5,    /* the system is out of memory */
    GTS_ERANGE = -6,    /* a value does not fit in the target dtype */
    GTS_EEXIST = -7,    /* a name is already taken */
    GTS_EBOUNDS = -8,   /* an index outside the extent of a dimension */
    GTS_EREADONLY = -9, /* writing through a read-only storage */
    GTS_ENOTSUP = -10   /* memory this build cannot reach (a device without support) */
} gts_status;

#define GTS_ERROR_MESSAGE_SIZE 256

/* Optional out-parameter: on failure it receives the code and a message that
 * names the offending parameter and its value. Pass NULL to skip messages. */
typedef struct gts_error {
    int code;
    char message[GTS_ERROR_MESSAGE_SIZE];
} gts_error;

/* Records `code` and a printf-style message in `err` (if not NULL) and
 * returns `code`, so that callers can write `return gts_error_set(...)`. */
int gts_error_set(gts_error *err, int code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A short constant name for a status code ("GTS_EINVAL", ...). */
const char *gts_status_name(int code);

/* On/off environment variables (GTSTORE_PINNED_HOST_SIDES,
 * GTSTORE_NUMPY_CAPI): "1" (on) or "0" (off), nothing else. Another text
 * is GTS_EINVAL naming the variable, what each value does (`on`, `off`:
 * "pinned host sides, the default") and the text, *value untouched.
 * gts_switch_from_environment reads the variable, unset or empty giving
 * `fallback`. */
int gts_switch_parse(const char *variable, const char *text, const char *on, const char *off,
                     bool *value, gts_error *err);
int gts_switch_from_environment(const char *variable, bool fallback, const char *on,
                                const char *off, bool *value, gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
