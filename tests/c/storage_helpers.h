/* Helpers shared by the storage and DLPack tests: elements are read from a
 * storage's own fields (buffer, offset, strides), never through the library
 * functions under test. */
#ifndef GTSTORE_TESTS_STORAGE_HELPERS_H
#define GTSTORE_TESTS_STORAGE_HELPERS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gtstore/storage.h"

static const gts_dtype F8 = {GTS_KIND_FLOAT, 8};

static inline int64_t live_buffers(void)
{
    gts_memory_stats s;
    gts_memory_stats_get(&s);
    return s.live_buffers;
}

/* Host address of an element. */
static inline uintptr_t address(const gts_storage *s, const int64_t *index)
{
    uintptr_t a = (uintptr_t)gts_buffer_host(s->buffer) + (uintptr_t)s->offset;
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

#endif
