/* Spare blocks: released GPU buffers kept with the engine's objects over
 * them, for the next storage of the same size (engine_spares.c). */
#ifndef GTPY_ENGINE_SPARES_H
#define GTPY_ENGINE_SPARES_H

#include "ext.h"

/* A new Storage for `spec` (resolved in place, as by
 * gts_storage_create_in_place, with `flags`) over a spare block where one
 * of its size and device is kept, else over new memory. A spare brings its
 * engine objects into the Storage's SyncState. `preset`: the preset name
 * the Storage records, or NULL. */
PyObject *gtpy_storage_create(gts_storage_spec *spec, unsigned flags, PyObject *preset);

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
