/* Synchronisation of mirrored buffers: device memory with a host side.
 *
 * A mirrored buffer (gts_buffer_alloc with GTS_ALLOC_MIRRORED) holds the same
 * bytes twice: on its device and in host memory of the same size, at the
 * same offsets, so every view of it has an address on either side. This is
 * GT4Py's software-managed GPU storage. Its sync state says which side holds
 * writes the other lacks; every view shares it, and its changes are atomic.
 *
 * The rule that loses no write: read a side after gts_buffer_sync to it;
 * write a side between gts_buffer_write_begin and gts_buffer_write_end (or
 * after gts_buffer_prepare_write, which marks but holds nothing). A sync
 * always moves the whole allocation, never the extent of one view: another
 * view may have written anywhere.
 *
 * Between threads: a write begun (and not yet ended) is in flight, and a
 * sync of either side waits until no write is in flight before it copies,
 * so that it never copies half a write nor copies over one; a write begun
 * while a sync copies waits for the copy. Writes to the same side run side
 * by side. A thread that holds a write must not sync the other side of the
 * same buffer (it would wait for itself), nor begin writes on several
 * buffers in an order another thread reverses.
 *
 * Buffers with one side (host memory, plain device memory, managed or
 * pinned memory) have nothing to track: their state is always
 * GTS_SYNC_CLEAN, and these calls copy and mark nothing, but still order
 * the side as they say (gtstore/access.h), so that code written for
 * mirrored buffers is right for every buffer. (Before, they did nothing,
 * and a write begun on plain device memory on one stream could run before
 * the work queued on it on another: the random sequences of the stream
 * order test found it.)
 *
 * A NULL buffer: not mirrored, GTS_SYNC_CLEAN, and GTS_EINVAL from the
 * calls that sync or mark. */
#ifndef GTSTORE_SYNC_H
#define GTSTORE_SYNC_H

#include <stdbool.h>
#include <stdint.h>

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

/* The state's name without the prefix ("SYNC_CLEAN", "SYNC_HOST_DIRTY",
 * "SYNC_DEVICE_DIRTY": Python's SyncState attributes), NULL for a value
 * that is no state: the one list of the states, for messages and checks. */
const char *gts_sync_state_name(gts_sync_state state);

/* Declares the state, whatever it was (GT4Py's set_host_modified,
 * set_device_modified, set_synchronized): for writes made behind gtstore's
 * back. An invalid state gives GTS_EINVAL. */
int gts_buffer_set_sync_state(gts_buffer *buffer, gts_sync_state state, gts_error *err);

/* Brings side `to` up to date: if the other side holds writes it lacks (or
 * always, with `force`), copies the whole allocation over, and the state
 * becomes clean. A side already current costs one atomic load and a check
 * of the stream order. The copy goes on `stream` in the buffer's stream
 * order (gtstore/access.h): after its device work, and recorded as its
 * last. Then side `to` is ordered as by gts_storage_access: the host side
 * after the host waited for the buffer's device work (the copy included);
 * the device side on `stream` after `stream` waited for it (on NULL, the
 * default stream, everything has completed on return). */
int gts_buffer_sync(gts_buffer *buffer, gts_side to, bool force, gts_stream stream,
                    gts_error *err);

/* Before writing side `side`: brings it up to date, then marks it modified,
 * atomically with respect to other marks (a write marked by another thread
 * meanwhile is synced too, never overwritten). A sync by another thread may
 * copy while the write that follows runs: use gts_buffer_write_begin where
 * other threads may sync the buffer. */
int gts_buffer_prepare_write(gts_buffer *buffer, gts_side side, gts_stream stream,
                             gts_error *err);

/* gts_buffer_prepare_write, and the write is in flight until
 * gts_buffer_write_end: syncs of the buffer (to either side) wait for it.
 * The side is ordered as by gts_buffer_sync. The fast path (the side
 * current, no copy running) is one atomic load and one compare-and-swap.
 * Work queued on a stream is part of the write: end it once that work is
 * complete, or through gts_storage_access_end, which records the buffer's
 * event first so that the syncs wait for the work on the device. */
int gts_buffer_write_begin(gts_buffer *buffer, gts_side side, gts_stream stream,
                           gts_error *err);

/* Ends one write begun by gts_buffer_write_begin (one atomic update).
 * GTS_EINVAL where no write is in flight. */
int gts_buffer_write_end(gts_buffer *buffer, gts_error *err);

/* The writes in flight (begun and not ended): 0 for one-sided buffers. */
int64_t gts_buffer_writes_in_flight(const gts_buffer *buffer);

/* A caller that holds a lock of its own while it calls gtstore (CPython's
 * GIL) must let it go while a call waits for another thread's write, or
 * that thread could never end it. Before its first wait a call runs
 * `leave` (which returns a token), and after its last `enter(token)`; a call
 * that does not wait runs neither. NULL (the default) waits holding
 * whatever the caller holds. The hooks are process-wide, set once before
 * threads use mirrored buffers; `hooks` must outlive its use. */
typedef struct gts_wait_hooks {
    void *(*leave)(void);
    void (*enter)(void *token);
} gts_wait_hooks;

void gts_sync_set_wait_hooks(const gts_wait_hooks *hooks);

#ifdef __cplusplus
}
#endif
#endif
