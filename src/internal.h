/* Helpers shared between the library's source files; not installed. */
#ifndef GTSTORE_INTERNAL_H
#define GTSTORE_INTERNAL_H

#include <stdint.h>

#include "gtstore/buffer.h"

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

/* Sets the release callback of a wrapped buffer after the fact: importers
 * take ownership of foreign memory only once the storage over it exists. */
void gts__buffer_set_release(gts_buffer *buffer, gts_release_fn release, void *ctx);

#endif
