/* Device memory freed in a stream's order (stream_free.c); not installed.
 *
 * CUDA's device memory goes back to its pool on the legacy default stream
 * (a stream-ordered pool's cuMemFreeAsync there, or a block fenced by an
 * event recorded there: device_cuda_memory.c), and the next allocation on
 * that stream may take it at once. So a device-only buffer released while
 * its work may still run is not parked (deferred_release.h): the legacy
 * stream waits for the buffer's event and the block is freed behind it, as
 * CuPy's pool frees its blocks, and a loop of temporaries reuses one block
 * instead of growing the pool.
 *
 * The new owner of such a block may use it on another stream, or from the
 * host, which the legacy stream does not order. Each GPU therefore keeps
 * one more stream order, of its frees: an event recorded on the legacy
 * stream after every such free whose buffer's work was still pending (the
 * record deferred, as every record on that stream is: the next allocation's
 * query makes it, stream_order.h). An allocation while that event is
 * pending starts the new buffer's own order there (a record on the legacy
 * stream, deferred too), so that its first access from elsewhere waits for
 * the frees before it; once the event is seen complete (a query),
 * allocations record nothing. The halo messages' blocks (device
 * messages, staging blocks), which are not buffers, start their orders the
 * same way (halo_messages.c). */
#ifndef GTSTORE_STREAM_FREE_H
#define GTSTORE_STREAM_FREE_H

#include <stdbool.h>

#include "stream_order.h"

/* Whether a buffer of `dev`'s memory, with the stream order `order`, whose
 * last reference went, may be freed now: its memory goes back in the
 * legacy stream's order, after that stream waited for its work (its event
 * is gone then). False where the device has no such order or a driver call
 * failed: the caller parks it (nothing changed). */
bool gts__stream_free(const gts_device_ops *dev, gts__order *order);

/* A new buffer of `dev`'s memory: its order starts after the frees its
 * block may come from, where any may still wait for work (see above). */
int gts__stream_free_order_new(const gts_device_ops *dev, gts__order *order, gts_error *err);

#endif
