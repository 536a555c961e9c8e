/* Spare blocks: released GPU buffers kept with the engine's objects over
 * them, for the next storage of the same size (engine_spares.c). */
#ifndef GTPY_ENGINE_SPARES_H
#define GTPY_ENGINE_SPARES_H

#include "ext.h"

/* gts_buffer_reuse_fn for a new storage (gtpy_storage_create, storage.h):
 * the newest spare of `size` bytes on `device`, mirrored as `flags` say,
 * its engine objects moved to *(PyObject **)ctx; NULL where none is. */
gts_buffer *gtpy_spare_take(void *ctx, const gts_device_ops *device, int64_t size,
                            unsigned flags);

/* The engine's objects over a buffer whose last Python holder went (steals
 * the reference): kept as a spare where nothing else can reach the buffer
 * or the objects and the cache limit allows, else released. */
void gtpy_spare_offer(PyObject *engine);

/* Releases spares, the oldest first, until they hold at most `bytes`. */
void gtpy_spares_trim(int64_t bytes);

typedef struct gtpy_spare_stats {
    int64_t blocks, bytes; /* kept now */
    int64_t hits;          /* storages made over a spare */
} gtpy_spare_stats;

void gtpy_spares_stats(gtpy_spare_stats *stats);

#endif
