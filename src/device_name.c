/* Devices by the names the registry gives them ("emulated", "cuda:N"), for
 * choosing the GPU: the one reading of such a name, answered by the
 * registry (gts_device_get). */
#include "gtstore/device.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* "cuda" (device 0) or "cuda:N" (N a decimal ordinal): the ordinal, else
 * -1. */
static long cuda_ordinal(const char *name)
{
    if (strcmp(name, "cuda") == 0)
        return 0;
    if (strncmp(name, "cuda:", 5) != 0 || name[5] < '0' || name[5] > '9')
        return -1;
    char *end;
    errno = 0;
    long n = strtol(name + 5, &end, 10);
    return *end || errno || n > INT32_MAX ? -1 : n;
}

int gts_device_gpu_named(const char *name, const gts_device_ops **out, gts_error *err)
{
    if (!name || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", name ? "out" : "name");
    if (strcmp(name, "emulated") == 0) {
        *out = gts_device_emulated();
        return GTS_OK;
    }
    long ordinal = cuda_ordinal(name);
    if (ordinal < 0)
        return gts_error_set(err, GTS_EINVAL,
                             "name: expected 'emulated', 'cuda' or 'cuda:N', got '%.60s'", name);
    return gts_device_get((gts_device_id){GTS_DL_CUDA, (int32_t)ordinal}, out, err);
}
