/* Synchronisation of mirrored buffers: device memory with a host side.
 *
 * A mirrored buffer (gts_buffer_alloc with GTS_ALLOC_MIRRORED) holds the same
 * bytes twice: on its device and in host memory of the same size, at the
 * same offsets, so every view of it has an address on either side. This is
 * GT4Py's software-managed GPU storage. Its sync state says which side holds
 * writes the other lacks; every view shares it, and its changes are atomic.
 *
 * The rule that loses no write: read a side after gts_buffer_sync to it;
 * write a side after gts_buffer_prepare_write for it (a sync, then the mark,
 * as one step). A sync always moves the whole allocation, never the extent
 * of one view: another view may have written anywhere.
 *
 * Buffers with one side (host memory, plain device memory, managed or
 * pinned memory) have nothing to track: their state is always
 * GTS_SYNC_CLEAN, and these calls do nothing.
 *
 * A NULL buffer: not mirrored, GTS_SYNC_CLEAN, and GTS_EINVAL from the
 * calls that sync or mark. */
#ifndef GTSTORE_SYNC_H
#define GTSTORE_SYNC_H

#include <stdbool.h>

#include "gtstore/buffer.h"
#include "gtstore/device.h"
#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which side of a mirrored buffer is current. */
typedef enum gts_sync_state {
    GTS_SYNC_CLEAN = 0,       /* both sides hold the same values */
    GTS_SYNC_HOST_DIRTY = 1,  /* the host side holds writes the device lacks */
    GTS_SYNC_DEVICE_DIRTY = 2 /* the device side holds writes the host lacks */
} gts_sync_state;

typedef enum gts_side { GTS_SIDE_HOST = 0, GTS_SIDE_DEVICE = 1 } gts_side;

/* Whether `buffer` has a host side beside its device memory. */
bool gts_buffer_mirrored(const gts_buffer *buffer);

gts_sync_state gts_buffer_sync_state(const gts_buffer *buffer);

/* Declares the state, whatever it was (GT4Py's set_host_modified,
 * set_device_modified, set_synchronized): for writes made behind gtstore's
 * back. An invalid state gives GTS_EINVAL. */
int gts_buffer_set_sync_state(gts_buffer *buffer, gts_sync_state state, gts_error *err);

/* Brings side `to` up to date: if the other side holds writes it lacks (or
 * always, with `force`), copies the whole allocation over, and the state
 * becomes clean. A side already current costs one atomic load. The copy
 * goes on `stream` (NULL: the default stream) and has completed when this
 * returns. */
int gts_buffer_sync(gts_buffer *buffer, gts_side to, bool force, gts_stream stream,
                    gts_error *err);

/* Before writing side `side`: brings it up to date, then marks it modified,
 * atomically with respect to other marks (a write marked by another thread
 * meanwhile is synced too, never overwritten). */
int gts_buffer_prepare_write(gts_buffer *buffer, gts_side side, gts_stream stream,
                             gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
