/* Access to one side of a storage: the one call that every reader and
 * writer of a storage's memory goes through.
 *
 * A storage's elements live on its buffer's device, and a mirrored buffer
 * (gtstore/sync.h) holds them on the host too. Before the memory of a side
 * is read or written the rules of gtstore/sync.h apply (bring the side up
 * to date; mark a write), a read-only storage is never written, and
 * memory that the host and a GPU share (managed or pinned memory) is read
 * by the host only once the work queued on the GPU is done, and work on a
 * buffer follows its stream order (below).
 * gts_storage_access applies all of them and gives the address of element
 * 0 on that side, so that no caller assembles them itself. */
#ifndef GTSTORE_ACCESS_H
#define GTSTORE_ACCESS_H

#include "gtstore/device.h"
#include "gtstore/error.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gts_access {
    GTS_ACCESS_READ = 0,  /* the side is brought up to date */
    GTS_ACCESS_WRITE = 1, /* and marked written (gts_buffer_prepare_write) */
    /* and the write is in flight (gts_buffer_write_begin) until
     * gts_storage_access_end: syncs on other threads wait for it */
    GTS_ACCESS_WRITE_HELD = 2
} gts_access;

/* Gives side `side` of `storage` for `access`: brings it up to date (a
 * mirrored buffer's copy goes on `stream`, NULL the default stream), marks
 * a write, and orders the access after the device work queued on the
 * buffer (the stream order, below). On success *element0 is the address of
 * element 0 on that side (NULL for an empty storage over no memory). The
 * device side of host memory is the host memory itself.
 *
 * The stream order: each buffer remembers an event recorded after the last
 * device work queued on it on a stream (by gts_storage_access_end, and by
 * the syncs of gtstore/sync.h).
 * - The host side (any stream): the host waits for that work before this
 *   returns (and, for memory the host shares with a GPU, for the work queued
 *   on the device).
 * - The device side on `stream`: work queued on `stream` from now on waits
 *   for it on the device (nothing waits on the host); on the default stream
 *   (NULL) the host waits, and everything has completed on return, as
 *   before streams.
 *
 * Errors: GTS_EINVAL for a NULL storage or out, an unknown side or access;
 * GTS_EREADONLY for a write to a read-only storage; GTS_ENOTSUP for the
 * host side of device memory without a host side; a sync's or a wait's
 * errors. No write is held on failure. */
int gts_storage_access(const gts_storage *storage, gts_side side, gts_access access,
                       gts_stream stream, void **element0, gts_error *err);

/* Ends an access made with the same side, access and stream, once its work
 * is queued: for the device side on a stream, records the buffer's event
 * there, so that later accesses wait for that work (on the default stream
 * the work has completed: nothing to record); then a GTS_ACCESS_WRITE_HELD
 * access ends its write in flight. Where no event can be recorded the
 * stream is synchronised instead; the error is returned only if that fails
 * too (the write ends all the same). A NULL storage is ignored. */
int gts_storage_access_end(const gts_storage *storage, gts_side side, gts_access access,
                           gts_stream stream, gts_error *err);

/* The stream order of one buffer, for callers that hold buffers rather
 * than storages (writes held on several buffers with
 * gts_buffer_write_begin, which orders its side as gts_storage_access
 * does): gts_buffer_order_wait orders work on side `side` (the device side
 * on `stream`) after the buffer's device work, as gts_storage_access does;
 * gts_buffer_order_record says that device work on the buffer was queued on
 * `stream` (NULL: nothing to do), as gts_storage_access_end does: call it
 * before gts_buffer_write_end. GTS_EINVAL for a NULL buffer or an unknown
 * side; the device's errors. */
int gts_buffer_order_wait(gts_buffer *buffer, gts_side side, gts_stream stream, gts_error *err);
int gts_buffer_order_record(gts_buffer *buffer, gts_stream stream, gts_error *err);
/* As gts_buffer_order_record for each of `n` buffers (a buffer may repeat),
 * recording one event for all those on the same device instead of one
 * each: what a call that queued work on several buffers (a ufunc's inputs
 * and outputs) says at its end. Every buffer is recorded, or, where a
 * record fails, its work is waited for; the first error is returned.
 * GTS_EINVAL for a NULL array or buffer (none is recorded) or a negative
 * `n`. */
int gts_buffers_order_record(gts_buffer *const *buffers, int n, gts_stream stream,
                             gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
