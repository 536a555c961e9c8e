/* An N-d iteration over one or two strided arrays (a fill, or a copy
 * dst = src), reduced to its simplest form once, for the host's kernels
 * (kernels.c) and the GPU's (kernel_args.c): no dimensions of extent 1 (nor,
 * in a fill, of stride 0: their elements are one), destination strides
 * positive (a dimension with a negative one is walked backwards on both
 * sides, so the same pairs meet) and decreasing, and neighbouring
 * dimensions merged where both arrays run on seamlessly across them. */
#ifndef GTSTORE_STRIDED_PLAN_H
#define GTSTORE_STRIDED_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/storage.h"

typedef struct gts__strided_plan {
    int ndim;
    int64_t itemsize;
    int64_t shape[GTS_MAX_NDIM]; /* outermost first */
    int64_t dst_strides[GTS_MAX_NDIM];
    int64_t src_strides[GTS_MAX_NDIM];
    char *dst; /* element 0 of the walk */
    const char *src; /* NULL for a fill */
} gts__strided_plan;

/* Plans the iteration; false if it is empty. The arguments are valid (the
 * kernels' checks, or gts__strided_range): the arithmetic does not
 * overflow. The addresses are only offset, never dereferenced, so device
 * addresses may be planned too. */
bool gts__strided_plan_init(gts__strided_plan *p, char *dst, const int64_t *dst_strides,
                            const char *src, const int64_t *src_strides, int ndim,
                            const int64_t *shape, int64_t itemsize);

/* Whether the destination's elements are certainly distinct: each
 * dimension's stride at least the extent of the ones inside it (so no two
 * elements share a byte). False can also mean an interleaving without
 * overlap; callers then take the safe way (a serial walk, a refusal). */
bool gts__strided_plan_distinct(const gts__strided_plan *p);

#endif
