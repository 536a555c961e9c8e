/* Zeroing memory (kernels.c), for the allocators, and the copies' tuning for
 * the tests; not installed. */
#ifndef GTSTORE_KERNELS_PRIVATE_H
#define GTSTORE_KERNELS_PRIVATE_H

#include <stdint.h>

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

/* Sets how many bytes a layout-changing copy moves (both sides) from which
 * it streams its stores (kernels.c), instead of a quarter of the last-level
 * cache; -1 restores that default. For the tests, which reach the
 * streaming kernels with small arrays. */
void gts__copy_set_streaming_bytes(int64_t bytes);

#endif
