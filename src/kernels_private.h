/* Zeroing memory (kernels.c), for the allocators; not installed. */
#ifndef GTSTORE_KERNELS_PRIVATE_H
#define GTSTORE_KERNELS_PRIVATE_H

#include <stdint.h>

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

#endif
