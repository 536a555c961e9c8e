/* Helpers shared by the storage and DLPack tests and the views fuzzer:
 * elements are read from a
 * storage's own fields (buffer, offset, strides), never through the library
 * functions under test. */
#ifndef GTSTORE_TESTS_STORAGE_HELPERS_H
#define GTSTORE_TESTS_STORAGE_HELPERS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gtstore/device.h"
#include "gtstore/storage.h"

static const gts_dtype F8 = {GTS_KIND_FLOAT, 8};

static inline int64_t live_buffers(void)
{
    gts_memory_stats s;
    gts_memory_stats_get(&s);
    return s.live_buffers;
}

/* Number of elements of a shape. */
static inline int64_t product(int ndim, const int64_t *shape)
{
    int64_t p = 1;
    for (int d = 0; d < ndim; ++d)
        p *= shape[d];
    return p;
}

/* The bytes of a buffer as the host sees them: its host memory, or for the
 * emulated device the memory behind its device addresses (what a kernel on
 * the device would read). */
static inline char *buffer_bytes(const gts_buffer *buffer)
{
    char *host = gts_buffer_host(buffer);
    return host ? host : (char *)gts_device_emulated_host_address(gts_buffer_data(buffer));
}

/* Host address of an element (see buffer_bytes). */
static inline uintptr_t address(const gts_storage *s, const int64_t *index)
{
    uintptr_t a = (uintptr_t)buffer_bytes(s->buffer) + (uintptr_t)s->offset;
    for (int d = 0; d < s->ndim; ++d)
        a += (uintptr_t)(index[d] * s->strides[d]);
    return a;
}

/* An element of a float64 storage. */
static inline double get(const gts_storage *s, const int64_t *index)
{
    double v;
    memcpy(&v, (const void *)address(s, index), sizeof v);
    return v;
}

static inline bool ints_eq(int n, const int64_t *a, const int64_t *b)
{
    for (int i = 0; i < n; ++i)
        if (a[i] != b[i])
            return false;
    return true;
}

/* The halo rule, by brute force over the selected indices: selected
 * elements in the old lower halo and in the old upper one, the sides
 * swapped for a negative step. */
static inline gts_halo halo_after_slice(int64_t n, gts_halo h, int64_t start, int64_t step,
                                 int64_t count)
{
    int64_t in_lower = 0, in_upper = 0;
    for (int64_t k = 0; k < count; ++k) {
        int64_t i = start + k * step;
        in_lower += i < h.lower;
        in_upper += i >= n - h.upper;
    }
    return step > 0 ? (gts_halo){in_lower, in_upper} : (gts_halo){in_upper, in_lower};
}

#endif
