/* The cache limit as text (GTSTORE_CACHE_LIMIT): bytes with an optional K, M
 * or G suffix. One parser serves the library, which reads the variable at
 * its first cached allocation, and the Python package, which checks it at
 * import so that a typo is an error rather than a silent default. */
#include "gtstore/buffer.h"

#include <errno.h>
#include <stdlib.h>

int gts_cache_limit_parse(const char *text, int64_t *bytes, gts_error *err)
{
    static const char *const expected =
        "expected bytes with an optional K, M or G suffix (powers of 1024), e.g. 512M; 0 "
        "turns the caches off";
    if (!text || !*text)
        return gts_error_set(err, GTS_EINVAL, "GTSTORE_CACHE_LIMIT: empty; %s", expected);
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: break;
    }
    /* strtoll skips leading white space and takes a sign: neither is a size */
    if (end == text || *end || value < 0 || text[0] < '0' || text[0] > '9')
        return gts_error_set(err, GTS_EINVAL, "GTSTORE_CACHE_LIMIT: '%.64s' is not a size; %s",
                             text, expected);
    /* a size all the same: past 64 bits before the suffix (strtoll's
     * ERANGE) or with it, one error */
    if (errno == ERANGE || value > (INT64_MAX >> shift))
        return gts_error_set(err, GTS_EOVERFLOW,
                             "GTSTORE_CACHE_LIMIT: '%.64s' does not fit in 64 bits", text);
    *bytes = (int64_t)value << shift;
    return GTS_OK;
}

int gts_cache_limit_check_environment(gts_error *err)
{
    const char *text = getenv("GTSTORE_CACHE_LIMIT");
    int64_t bytes;
    return text && *text ? gts_cache_limit_parse(text, &bytes, err) : GTS_OK;
}
