/* Access to one side of a storage: the one call that every reader and
 * writer of a storage's memory goes through.
 *
 * A storage's elements live on its buffer's device, and a mirrored buffer
 * (gtstore/sync.h) holds them on the host too. Before the memory of a side
 * is read or written the rules of gtstore/sync.h apply (bring the side up
 * to date; mark a write), a read-only storage is never written, and
 * memory that the host and a GPU share (managed or pinned memory) is read
 * by the host only once the work queued on the GPU is done.
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
 * mirrored buffer's copy goes on `stream`, NULL the default stream, and
 * has completed on return), marks a write, and, for the host side of
 * host-accessible device memory, waits for the device's queued work. On
 * success *element0 is the address of element 0 on that side (NULL for an
 * empty storage over no memory). The device side of host memory is the
 * host memory itself.
 *
 * Errors: GTS_EINVAL for a NULL storage or out, an unknown side or access;
 * GTS_EREADONLY for a write to a read-only storage; GTS_ENOTSUP for the
 * host side of device memory without a host side; a sync's errors. No write
 * is held on failure. */
int gts_storage_access(const gts_storage *storage, gts_side side, gts_access access,
                       gts_stream stream, void **element0, gts_error *err);

/* Ends an access: a GTS_ACCESS_WRITE_HELD one ends its write in flight;
 * the others hold nothing (nothing to do). */
void gts_storage_access_end(const gts_storage *storage, gts_access access);

#ifdef __cplusplus
}
#endif
#endif
