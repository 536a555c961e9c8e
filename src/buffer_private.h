/* The buffer struct, shared by buffer.c (memory) and sync.c (the sync state
 * of mirrored buffers); not installed. */
#ifndef GTSTORE_BUFFER_PRIVATE_H
#define GTSTORE_BUFFER_PRIVATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "gtstore/buffer.h"
#include "gtstore/device.h"
#include "stream_order.h"

typedef enum memory_kind {
    MEMORY_HEAP,    /* header and data in one malloc block */
    MEMORY_MAPPED,  /* a huge-page mapping, cached on release */
    MEMORY_WRAPPED, /* somebody else's; release callback */
    MEMORY_DEVICE   /* from device->alloc, back through device->free */
} memory_kind;

struct gts_buffer {
    atomic_llong refs;
    /* A gts_sync_state in the low two bits; a flag raised while a sync
     * copies; the count of writes in flight (gts_buffer_write_begin and
     * _end), which a sync waits to see at 0; and above them a generation
     * that every mark raises: a sync that copied while another thread
     * declared a state does not call the buffer clean. Always
     * GTS_SYNC_CLEAN without a mirror. */
    _Atomic uint64_t sync;
    memory_kind kind;
    const gts_device_ops *device; /* where the block lives */
    void *data;          /* usable bytes start here, on the device */
    void *host;          /* the same as a host address (the mirror, if any); else NULL */
    void *mirror;        /* a mirrored buffer's host side, else NULL */
    const gts_device_ops *mirror_device; /* its memory: the GPU's pinned memory or the host */
    int64_t size;        /* usable bytes, on each side */
    int64_t mapped_size; /* MEMORY_MAPPED: length of the mapping */
    gts_release_fn release;
    void *ctx;
    gts__order order; /* the last device work on it (stream_order.h) */
};

#endif
