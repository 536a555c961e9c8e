/* The sync state of mirrored buffers (gtstore/sync.h). */
#include "gtstore/sync.h"

#include "buffer_private.h"
#include "internal.h"

#define STATE_BITS 3u
#define GENERATION ((uint64_t)1 << 2)

static gts_sync_state state_of(uint64_t word)
{
    return (gts_sync_state)(word & STATE_BITS);
}

/* The same generation with a new state (a sync that made the sides equal). */
static uint64_t with_state(uint64_t word, gts_sync_state state)
{
    return (word & ~(uint64_t)STATE_BITS) | (uint64_t)state;
}

/* A new generation with `state` (a mark). */
static uint64_t marked(uint64_t word, gts_sync_state state)
{
    return with_state(word + GENERATION, state);
}

bool gts_buffer_mirrored(const gts_buffer *buffer)
{
    return buffer && buffer->mirror != NULL;
}

void gts__buffer_wrap_host_side(gts_buffer *buffer, void *host, gts_sync_state state)
{
    buffer->mirror = host;
    buffer->host = host;
    atomic_store_explicit(&buffer->sync, (uint64_t)state, memory_order_release);
}

gts_sync_state gts_buffer_sync_state(const gts_buffer *buffer)
{
    if (!buffer) /* no buffer, nothing to track */
        return GTS_SYNC_CLEAN;
    return state_of(atomic_load_explicit(&buffer->sync, memory_order_acquire));
}

static int null_buffer(gts_error *err)
{
    return gts_error_set(err, GTS_EINVAL, "buffer: NULL");
}

int gts_buffer_set_sync_state(gts_buffer *buffer, gts_sync_state state, gts_error *err)
{
    if (state != GTS_SYNC_CLEAN && state != GTS_SYNC_HOST_DIRTY && state != GTS_SYNC_DEVICE_DIRTY)
        return gts_error_set(err, GTS_EINVAL, "state: %d is no gts_sync_state", (int)state);
    if (!buffer)
        return null_buffer(err);
    if (!buffer->mirror)
        return GTS_OK;
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    while (!atomic_compare_exchange_weak_explicit(&buffer->sync, &word, marked(word, state),
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
    return GTS_OK;
}

/* The state in which side `to` lacks writes of the other. */
static gts_sync_state stale(gts_side to)
{
    return to == GTS_SIDE_HOST ? GTS_SYNC_DEVICE_DIRTY : GTS_SYNC_HOST_DIRTY;
}

/* The whole allocation from the other side to `to`, completed on return. */
static int copy_whole(gts_buffer *b, gts_side to, gts_stream stream, gts_error *err)
{
    const gts_device_ops *dev = b->device;
    int rc = to == GTS_SIDE_DEVICE
                 ? gts_device_copy_to_device(dev, b->data, b->mirror, b->size, stream, err)
                 : gts_device_copy_to_host(dev, b->mirror, b->data, b->size, stream, err);
    return rc || !stream ? rc : gts_device_synchronize(dev, stream, err);
}

int gts_buffer_sync(gts_buffer *buffer, gts_side to, bool force, gts_stream stream,
                    gts_error *err)
{
    if (to != GTS_SIDE_HOST && to != GTS_SIDE_DEVICE)
        return gts_error_set(err, GTS_EINVAL, "to: %d is no gts_side", (int)to);
    if (!buffer)
        return null_buffer(err);
    if (!buffer->mirror)
        return GTS_OK;
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    while (force || state_of(word) == stale(to)) {
        int rc = copy_whole(buffer, to, stream, err);
        if (rc)
            return rc;
        force = false;
        /* Clean only if nobody marked a write meanwhile; else look again. */
        if (atomic_compare_exchange_strong_explicit(&buffer->sync, &word,
                                                    with_state(word, GTS_SYNC_CLEAN),
                                                    memory_order_acq_rel, memory_order_acquire))
            return GTS_OK;
    }
    return GTS_OK;
}

int gts_buffer_prepare_write(gts_buffer *buffer, gts_side side, gts_stream stream,
                             gts_error *err)
{
    if (side != GTS_SIDE_HOST && side != GTS_SIDE_DEVICE)
        return gts_error_set(err, GTS_EINVAL, "side: %d is no gts_side", (int)side);
    if (!buffer)
        return null_buffer(err);
    if (!buffer->mirror)
        return GTS_OK;
    gts_sync_state written = side == GTS_SIDE_HOST ? GTS_SYNC_HOST_DIRTY : GTS_SYNC_DEVICE_DIRTY;
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    for (;;) {
        /* A new generation even where the side is marked already: a sync
         * copying meanwhile must not call the buffer clean after it. */
        if (state_of(word) == stale(side)) {
            int rc = gts_buffer_sync(buffer, side, false, stream, err);
            if (rc)
                return rc;
            word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&buffer->sync, &word, marked(word, written),
                                                  memory_order_acq_rel, memory_order_acquire))
            return GTS_OK;
    }
}
