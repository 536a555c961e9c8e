/* A strided fill or copy described for the GPU's kernels
 * (device_kernels.h): the words, the dimensions dropped, flipped, ordered
 * and merged, decided once here for every device that runs the kernels. */
#ifndef GTSTORE_KERNEL_ARGS_H
#define GTSTORE_KERNEL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "device_kernels.h"
#include "gtstore/error.h"
#include "gtstore/storage.h"

/* One fill or copy: the kernel array of its innermost GTS_KERNEL_NDIM
 * dimensions, and the dimensions beyond them (rare: more than
 * GTS_KERNEL_NDIM that cannot be merged), which the caller loops over. */
typedef struct gts_kernel_plan {
    gts_kernel_array inner;
    bool serial; /* the destination's elements may overlap: one thread, in
                    the host kernels' order, gives the host's result */
    int outer_ndim;
    int64_t outer_shape[GTS_MAX_NDIM + 1];
    int64_t outer_dst[GTS_MAX_NDIM + 1], outer_src[GTS_MAX_NDIM + 1];
} gts_kernel_plan;

/* Plans dst = src (src NULL: a fill, whose element 0 is at dst) over
 * `shape` with the given byte strides. The arguments are those that
 * gts__strided_range found valid and non-empty, with no destination stride
 * 0 over more than one element in a copy. GTS_EOVERFLOW where the words
 * do not fit in 64 bits. */
int gts__kernel_plan_init(gts_kernel_plan *plan, void *dst, const int64_t *dst_strides,
                          const void *src, const int64_t *src_strides, int ndim,
                          const int64_t *shape, int64_t itemsize, gts_error *err);

/* Calls `visit` with each kernel array of the plan (one unless outer_ndim
 * > 0), stopping at the first nonzero result, which it returns. */
int gts__kernel_plan_each(const gts_kernel_plan *plan,
                          int (*visit)(const gts_kernel_array *array, void *ctx), void *ctx);

/* The item of a fill as the fill kernel's arguments, over `array`. */
void gts__kernel_fill_init(gts_kernel_fill *fill, const gts_kernel_array *array,
                           const void *item, int64_t itemsize);

/* Blocks along x for `count` words: enough for one word per thread, at
 * most GTS_KERNEL_MAX_BLOCKS (the threads then stride). */
unsigned gts__kernel_blocks(long long count);

#endif
