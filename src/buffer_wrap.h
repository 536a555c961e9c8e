/* Wrapped buffers finished after the fact, for the importers (wrap.c):
 * their release callback (buffer.c) and a host side that makes them
 * mirrored (sync.c); not installed. */
#ifndef GTSTORE_BUFFER_WRAP_H
#define GTSTORE_BUFFER_WRAP_H

#include "gtstore/buffer.h"
#include "gtstore/sync.h"

/* Makes a wrapped buffer of device memory mirrored (gtstore/sync.h) over
 * `host`, non-NULL host memory of the buffer's size that its owner keeps
 * (the buffer never frees it), in sync state `state` (sync.c). */
void gts__buffer_wrap_host_side(gts_buffer *buffer, void *host, gts_sync_state state);

/* Sets the release callback of a wrapped buffer after the fact: importers
 * take ownership of foreign memory only once the storage over it exists
 * (buffer.c). */
void gts__buffer_set_release(gts_buffer *buffer, gts_release_fn release, void *ctx);

#endif
