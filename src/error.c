#include "gtstore/error.h"

#include <stdarg.h>
#include <stdio.h>

int gts_error_set(gts_error *err, int code, const char *format, ...)
{
    if (err) {
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
        err->code = code;
    }
    return code;
}

const char *gts_status_name(int code)
{
    switch (code) {
    case GTS_OK: return "GTS_OK";
    case GTS_EINVAL: return "GTS_EINVAL";
    case GTS_ETYPE: return "GTS_ETYPE";
    case GTS_ENOTFOUND: return "GTS_ENOTFOUND";
    case GTS_EOVERFLOW: return "GTS_EOVERFLOW";
    case GTS_ENOMEM: return "GTS_ENOMEM";
    case GTS_ERANGE: return "GTS_ERANGE";
    case GTS_EEXIST: return "GTS_EEXIST";
    case GTS_EBOUNDS: return "GTS_EBOUNDS";
    case GTS_EREADONLY: return "GTS_EREADONLY";
    case GTS_ENOTSUP: return "GTS_ENOTSUP";
    default: return "unknown status";
    }
}
