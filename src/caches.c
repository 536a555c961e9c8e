/* The limit and the clearing of every cache (gtstore/buffer.h): the host
 * cache, each device's and pinned memory's caches, the buffers parked
 * until their device work completes (whose blocks go to those caches) and
 * the stream order's pooled events. */
#include "gtstore/buffer.h"

#include "deferred_release.h"
#include "device_pool.h"
#include "host_memory.h"
#include "order_event.h"

void gts_cache_set_limit(int64_t bytes)
{
    gts__host_cache_set_limit(bytes);
    gts__parked_trim(bytes > 0 ? bytes : 0);
    gts__caches_trim(bytes > 0 ? bytes : 0); /* the device and pinned caches */
}

void gts_cache_clear(void)
{
    gts__parked_trim(0);
    /* device and pinned blocks first: releasing a pinned block hands its
     * host memory to the host cache */
    gts__caches_trim(0);
    gts__host_cache_clear();
    gts__order_events_clear();
}
