/* On/off environment variables (GTSTORE_PINNED_HOST_SIDES,
 * GTSTORE_NUMPY_CAPI): one rule for all, "1" or "0", so that a typo such
 * as "off" or "false" is an error naming the variable rather than read as
 * either value. */
#include "gtstore/error.h"

#include <stdlib.h>
#include <string.h>

int gts_switch_parse(const char *variable, const char *text, const char *on, const char *off,
                     bool *value, gts_error *err)
{
    if (!variable)
        variable = "(variable)";
    if (!value)
        return gts_error_set(err, GTS_EINVAL, "%s: the output is NULL", variable);
    if (text && (!strcmp(text, "0") || !strcmp(text, "1"))) {
        *value = text[0] == '1';
        return GTS_OK;
    }
    return gts_error_set(err, GTS_EINVAL, "%s: expected '1' (%s) or '0' (%s), got '%.60s'",
                         variable, on ? on : "on", off ? off : "off", text ? text : "(null)");
}

int gts_switch_from_environment(const char *variable, bool fallback, const char *on,
                                const char *off, bool *value, gts_error *err)
{
    const char *text = variable ? getenv(variable) : NULL;
    if (variable && value && (!text || !*text)) {
        *value = fallback;
        return GTS_OK;
    }
    return gts_switch_parse(variable, text, on, off, value, err);
}
