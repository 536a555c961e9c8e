/* Zeroing memory (kernels.c), for the allocators, and the copies' tuning for
 * the tests; not installed. */
#ifndef GTSTORE_KERNELS_PRIVATE_H
#define GTSTORE_KERNELS_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

/* For the tests, which reach every copy kernel with small arrays: from how
 * many bytes (both sides) a layout-changing copy streams its stores (-1: a
 * quarter of the last-level cache, the default), and whether the AVX
 * kernels may serve (false: the SSE2 ones, as on a CPU without AVX). */
void gts__copy_tune_for_testing(int64_t streaming_bytes, bool avx);
/* Units of layout-changing copies stored streaming so far (0 where the
 * CPU has no streaming kernels). */
int64_t gts__copy_streamed_units(void);

#endif
