/* Helpers shared between the library's source files; not installed. */
#ifndef GTSTORE_INTERNAL_H
#define GTSTORE_INTERNAL_H

#include <stdint.h>

#include "gtstore/buffer.h"
#include "gtstore/device.h"

/* The host device (device.c); buffers compare against it. */
extern const gts_device_ops gts__device_host;

/* The host allocator of buffer.c for raw blocks: 64-byte aligned heap
 * blocks, large ones (>= GTS_LARGE_BLOCK) from the huge-page cache. `size`
 * at free is the size allocated. */
int gts__host_alloc(int64_t size, unsigned flags, void **out, gts_error *err);
void gts__host_free(void *block, int64_t size);

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

/* Sets the release callback of a wrapped buffer after the fact: importers
 * take ownership of foreign memory only once the storage over it exists. */
void gts__buffer_set_release(gts_buffer *buffer, gts_release_fn release, void *ctx);

#endif
