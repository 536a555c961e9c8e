/* Writes held in flight (write_hold.c). */
#ifndef GTSTORE_EXT_WRITE_HOLD_H
#define GTSTORE_EXT_WRITE_HOLD_H

#include "ext.h"

/* The mirrored buffers one call writes, held as writes in flight while
 * NumPy or the engine writes them (gtstore/sync.h): add the storages
 * written, begin just before the write, end after it. write_hold.c. */
#define GTPY_MAX_HOLDS 16
typedef struct gtpy_holds {
    int n, begun;
    gts_buffer *buffers[GTPY_MAX_HOLDS];
} gtpy_holds;
void gtpy_holds_init(gtpy_holds *h);
void gtpy_holds_add(gtpy_holds *h, const gts_storage *g);
/* Begins each write (its side synced, marked and held, and ordered on
 * `stream` as by gts_storage_access): -1 with an exception, nothing held,
 * on failure. Device work queued on a stream is recorded on the buffers
 * (gtpy_engine_finish) before the writes end. */
int gtpy_holds_begin(gtpy_holds *h, gts_side side, gts_stream stream);
void gtpy_holds_end(gtpy_holds *h);
/* Lets the GIL go while libgtstore waits for another thread's write. */
void gtpy_write_hold_init(void);

#endif
