/* Releases deferred until a buffer's device work completes
 * (deferred_release.c); not installed.
 *
 * A buffer whose last reference goes while device work on its memory is
 * still queued on a stream (its stream order, stream_order.h, has an event
 * not yet reached) must not be freed: its blocks would go back to a device
 * pool or block cache, and the next allocation would hand them to a new
 * owner that the queued work then overwrites. Waiting on the host there
 * would stall every temporary freed right after its work was queued. So
 * such a buffer is parked instead: the host goes on at once, and the
 * buffer is freed (its device block, its host side, its owner's release
 * callback) only once its event is seen complete, by a sweep that queries
 * the events of the parked buffers, oldest first, without waiting, and
 * stops at the first still pending (so that it costs one query where
 * nothing completed, as in a loop that frees temporaries faster than the
 * device computes them). Sweeps run at every
 * release and allocation of a buffer and at gts_memory_stats_get; the
 * memory thus returns to its pool ordered after the work, and no block is
 * handed out again while work that uses it may still run.
 *
 * CUDA's device memory without a host side is not parked (buffer.c): its
 * blocks go back in the order of the legacy default stream, which first
 * waits for the buffer's event, so that the next allocation on that stream
 * may take them at once.
 *
 * Parking is bounded: beyond GTS__PARKED_BYTES bytes or GTS__PARKED_COUNT
 * buffers parked, a release waits on the host for the oldest parked
 * buffers' work (the device is then that far behind the host: throttling
 * the host costs nothing). gts_cache_clear and gts_cache_set_limit
 * (device_pool.h) free parked buffers first, waiting for their work, until
 * at most their limit is parked, so that the blocks freed then are trimmed
 * with the rest. */
#ifndef GTSTORE_DEFERRED_RELEASE_H
#define GTSTORE_DEFERRED_RELEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/device.h"
#include "stream_order.h"

#define GTS__PARKED_BYTES ((int64_t)1 << 30)
#define GTS__PARKED_COUNT 1024

/* What a buffer parks: filled in by its owner, linked here. */
typedef struct gts__parked gts__parked;
struct gts__parked {
    gts__parked *next;             /* the list's own */
    const gts_device_ops *device;  /* whose events order the work */
    gts__order *order;             /* the work on the memory */
    int64_t bytes;                 /* the memory held, counted against the bound */
    void (*destroy)(gts__parked *parked); /* frees the owner: its work is complete */
};

/* Parks `parked` if its device work may be pending (recorded, and not yet
 * seen complete: not queried here), and says so; false: nothing pending,
 * the caller frees it now. */
bool gts__release_park(gts__parked *parked);
/* Frees the parked owners whose device work has completed, oldest first,
 * up to the first still pending; with `wait`, every one, waiting for its
 * work on the host. */
void gts__release_sweep(bool wait);
/* Frees parked buffers, oldest first, waiting for their work, until at
 * most `keep` bytes are parked (gts_cache_clear, gts_cache_set_limit:
 * before the caches are trimmed, so that the blocks freed here are
 * trimmed with the rest); outside every lock, since their owners' release
 * callbacks run. */
void gts__parked_trim(int64_t keep);
/* How many are parked now (for tests). */
int64_t gts__release_parked(void);

#endif
