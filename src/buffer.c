/* Buffers (gtstore/buffer.h): reference-counted blocks of a device's
 * memory, from the host allocator (host_memory.c), a device, or their
 * owner. */
#include "gtstore/buffer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_private.h"
#include "buffer_wrap.h"
#include "device_check.h"
#include "device_pool.h"
#include "host_memory.h"
#include "stream_free.h"
#include "stream_order.h"

/* ---- statistics -------------------------------------------------------- */

static atomic_llong live_buffers, live_bytes;

static void count_live(int64_t buffers, int64_t bytes)
{
    atomic_fetch_add_explicit(&live_buffers, buffers, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_bytes, bytes, memory_order_relaxed);
}

/* ---- pinned host sides -------------------------------------------------- */

static pthread_once_t environment_once = PTHREAD_ONCE_INIT;
static atomic_bool pinned_host_sides = true;

#define PINNED_VARIABLE "GTSTORE_PINNED_HOST_SIDES"
#define PINNED_ON "pinned host sides, the default"
#define PINNED_OFF "pageable"

int gts_pinned_host_sides_parse(const char *text, bool *pinned, gts_error *err)
{
    return gts_switch_parse(PINNED_VARIABLE, text, PINNED_ON, PINNED_OFF, pinned, err);
}

static int pinned_from_environment(bool *pinned, gts_error *err)
{
    return gts_switch_from_environment(PINNED_VARIABLE, true, PINNED_ON, PINNED_OFF, pinned,
                                       err);
}

int gts_pinned_host_sides_check_environment(gts_error *err)
{
    bool pinned;
    return pinned_from_environment(&pinned, err);
}

/* GTSTORE_PINNED_HOST_SIDES, as gts_pinned_host_sides_parse reads it. */
static void read_environment(void)
{
    bool pinned;
    gts_error err;
    if (pinned_from_environment(&pinned, &err) != GTS_OK) {
        /* No caller to return it to (the Python package refuses it at
         * import): say so, once, and keep the default rather than guess. */
        fprintf(stderr, "gtstore: %s; host sides stay pinned\n", err.message);
        return;
    }
    atomic_store(&pinned_host_sides, pinned);
}

void gts_memory_stats_get(gts_memory_stats *stats)
{
    gts__release_sweep(false); /* what completed is no longer held */
    stats->live_buffers = atomic_load_explicit(&live_buffers, memory_order_relaxed);
    stats->live_bytes = atomic_load_explicit(&live_bytes, memory_order_relaxed);
    gts__host_cache_stats(stats);
    gts__cache_stats device, pinned;
    gts__caches_stats(&device, &pinned);
    stats->device_cached_blocks = device.blocks;
    stats->device_cached_bytes = device.bytes;
    stats->device_cache_hits = device.hits;
    stats->device_cache_misses = device.misses;
    stats->pinned_cached_blocks = pinned.blocks;
    stats->pinned_cached_bytes = pinned.bytes;
    stats->pinned_cache_hits = pinned.hits;
    stats->pinned_cache_misses = pinned.misses;
}

bool gts_pinned_host_sides(void)
{
    pthread_once(&environment_once, read_environment);
    return atomic_load(&pinned_host_sides);
}

void gts_set_pinned_host_sides(bool pinned)
{
    pthread_once(&environment_once, read_environment); /* so that it cannot override this later */
    atomic_store(&pinned_host_sides, pinned);
}

static size_t heap_header_size(void)
{
    return (sizeof(gts_buffer) + GTS__HEAP_ALIGNMENT - 1) / GTS__HEAP_ALIGNMENT * GTS__HEAP_ALIGNMENT;
}

/* Fills in a new buffer of one reference over `data` on `device`. */
static gts_buffer *buffer_init(gts_buffer *buffer, const gts_device_ops *device,
                               memory_kind kind, void *data, int64_t size)
{
    atomic_init(&buffer->refs, 1);
    atomic_init(&buffer->sync, 0); /* GTS_SYNC_CLEAN, generation 0 */
    buffer->mirror = NULL;
    buffer->mirror_device = NULL;
    buffer->kind = kind;
    buffer->device = device;
    buffer->data = data;
    buffer->host = device->host_accessible ? data : NULL;
    buffer->size = size;
    buffer->mapped_size = 0;
    buffer->release = NULL;
    buffer->ctx = NULL;
    gts__order_init(&buffer->order);
    count_live(1, kind == MEMORY_WRAPPED ? 0 : size); /* wrapped bytes are not ours */
    return buffer;
}

/* One rule for gts_buffer_alloc, gts_buffer_alloc_host (the same call on
 * the host) and gts_storage_create_reusing: no unknown bits, and a host
 * side only beside memory the host cannot reach. Checked before any memory
 * is taken. */
int gts_buffer_flags_check(const gts_device_ops *device, unsigned flags, gts_error *err)
{
    if (!device)
        return gts_error_set(err, GTS_EINVAL, "device: NULL");
    int rc = gts__alloc_flags_check(flags, GTS_ALLOC_ZERO | GTS_ALLOC_MIRRORED, err);
    if (rc)
        return rc;
    if ((flags & GTS_ALLOC_MIRRORED) && device->host_accessible)
        return gts_error_set(err, GTS_EINVAL,
                             "flags: a mirrored buffer needs memory the host cannot reach, and "
                             "device '%s' is host-accessible",
                             device->name);
    return GTS_OK;
}

/* gts_buffer_alloc_host, its flags already checked. */
static int alloc_host(int64_t size, unsigned flags, gts_buffer **out, gts_error *err)
{
    int rc = gts__host_check_size(size, err);
    if (rc)
        return rc;
    if (size < GTS_LARGE_BLOCK) {
        /* One block: header, then the data on a 64-byte boundary. */
        char *raw = malloc(heap_header_size() + GTS__HEAP_ALIGNMENT + (size_t)size);
        if (!raw)
            return gts__host_out_of_memory(err, size);
        uintptr_t data = ((uintptr_t)raw + heap_header_size() + GTS__HEAP_ALIGNMENT - 1) &
                         ~(uintptr_t)(GTS__HEAP_ALIGNMENT - 1);
        if (flags & GTS_ALLOC_ZERO)
            memset((void *)data, 0, (size_t)size);
        *out = buffer_init((gts_buffer *)raw, gts_device_host(), MEMORY_HEAP, (void *)data, size);
        return GTS_OK;
    }
    gts_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer)
        return gts__host_out_of_memory(err, size);
    void *base;
    int64_t mapped;
    if ((rc = gts__host_map(size, flags, &base, &mapped, err))) {
        free(buffer);
        return rc;
    }
    *out = buffer_init(buffer, gts_device_host(), MEMORY_MAPPED, base, size);
    buffer->mapped_size = mapped;
    return GTS_OK;
}

/* The host side of a mirrored buffer: host memory of the device block's
 * size, where views find their host addresses. Pinned memory of the
 * device where it has some and pinning is on: a sync from pageable memory
 * goes through the driver's staging at a sixth of the bus's speed (9 against
 * 55 GB/s on an H100). Pinning is an optimisation: where it fails (a
 * memory-locking limit, no pinned memory left) the host side is pageable. */
static int add_mirror(gts_buffer *buffer, unsigned flags, gts_error *err)
{
    const gts_device_ops *pinned = NULL;
    unsigned zero = flags & GTS_ALLOC_ZERO;
    if (gts_pinned_host_sides() && gts_device_pinned(buffer->device, &pinned, NULL) == GTS_OK &&
        gts_device_alloc(pinned, buffer->size, zero, &buffer->mirror, NULL) == GTS_OK) {
        buffer->mirror_device = pinned;
    } else {
        int rc = gts__host_alloc(buffer->size, zero, &buffer->mirror, err);
        if (rc)
            return rc;
        buffer->mirror_device = gts_device_host();
    }
    buffer->host = buffer->mirror;
    count_live(0, buffer->size);
    return GTS_OK;
}

/* Zeros for a new buffer on a CUDA GPU: a memset queued on the legacy
 * default stream (where its block was freed, stream_free.h) and the
 * buffer's order recorded after it, so that creating zeros does not wait on
 * the host (the device's own zeroing synchronises) and every access from
 * elsewhere waits for the memset. */
static int zero_in_stream_order(gts_buffer *buffer, gts_stream legacy, gts_error *err)
{
    static const unsigned char zero = 0;
    const int64_t unit = 1;
    int rc = gts__order_device(buffer->device, &buffer->order, legacy, err);
    if (!rc)
        rc = gts_device_fill(buffer->device, buffer->data, 1, &buffer->size, &unit, 1, &zero,
                             legacy, err);
    return rc ? rc : gts__order_record(buffer->device, &buffer->order, legacy, err);
}

int gts_buffer_alloc_host(int64_t size, unsigned flags, gts_buffer **out, gts_error *err)
{
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    int rc = gts_buffer_flags_check(gts_device_host(), flags, err);
    return rc ? rc : alloc_host(size, flags, out, err);
}

int gts_buffer_alloc(const gts_device_ops *device, int64_t size, unsigned flags,
                     gts_buffer **out, gts_error *err)
{
    if (!device || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", !device ? "device" : "out");
    int rc = gts_buffer_flags_check(device, flags, err);
    if (rc)
        return rc;
    bool mirrored = flags & GTS_ALLOC_MIRRORED; /* on a device the host cannot reach */
    if (device->kind == GTS_MEMORY_HOST)
        return alloc_host(size, flags, out, err);
    gts__release_sweep(false); /* blocks whose work completed go back to their pools */
    gts_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer)
        return gts__host_out_of_memory(err, (int64_t)sizeof *buffer);
    void *block;
    bool zero = (flags & GTS_ALLOC_ZERO) && size > 0;
    gts_stream legacy = zero ? gts_device_legacy_stream(device) : NULL;
    rc = gts_device_alloc(device, size, legacy ? 0 : flags & GTS_ALLOC_ZERO, &block, err);
    if (rc) {
        free(buffer);
        return rc;
    }
    buffer_init(buffer, device, MEMORY_DEVICE, block, size);
    /* the block may be one freed in a stream's order whose last work has
     * not run yet (freed_in_stream_order) */
    if ((rc = gts__stream_free_order_new(device, &buffer->order, err)) ||
        (legacy && (rc = zero_in_stream_order(buffer, legacy, err)))) {
        gts_buffer_release(buffer);
        return rc;
    }
    if (mirrored && (rc = add_mirror(buffer, flags, err))) {
        gts_buffer_release(buffer);
        return rc;
    }
    *out = buffer;
    return GTS_OK;
}

int gts_buffer_wrap_host(void *data, int64_t size, gts_release_fn release, void *ctx,
                         gts_buffer **out, gts_error *err)
{
    return gts_buffer_wrap(gts_device_host(), data, size, release, ctx, out, err);
}

int gts_buffer_wrap(const gts_device_ops *device, void *data, int64_t size,
                    gts_release_fn release, void *ctx, gts_buffer **out, gts_error *err)
{
    if (!device)
        return gts_error_set(err, GTS_EINVAL, "device: NULL");
    if (size < 0)
        return gts_error_set(err, GTS_EINVAL, "size: %lld bytes is negative", (long long)size);
    if (!data && size > 0)
        return gts_error_set(err, GTS_EINVAL, "data: NULL for %lld bytes", (long long)size);
    gts_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer)
        return gts__host_out_of_memory(err, (int64_t)sizeof *buffer);
    *out = buffer_init(buffer, device, MEMORY_WRAPPED, data, size);
    buffer->release = release;
    buffer->ctx = ctx;
    return GTS_OK;
}

/* The first byte and the length of [element0 + low, element0 + high) with
 * low <= 0 < high, or an error if it leaves the address space. Computed on
 * integers: a pointer moved outside its object is undefined. */
static int element_span(void *element0, int64_t low, int64_t high, void **first, int64_t *span,
                        gts_error *err)
{
    uint64_t base = (uintptr_t)element0, below = (uint64_t)0 - (uint64_t)low;
    if (__builtin_sub_overflow(high, low, span) || base < below ||
        (uint64_t)*span > UINTPTR_MAX - (base - below))
        return gts_error_set(err, GTS_EOVERFLOW,
                             "strides: the elements reach %llu bytes below and %lld above "
                             "element 0 at %p, outside the address space",
                             (unsigned long long)below, (long long)high, element0);
    *first = (void *)(uintptr_t)(base - below);
    return GTS_OK;
}

int gts_buffer_wrap_elements(const gts_device_ops *device, void *element0, int ndim,
                             const int64_t *shape, const int64_t *strides, int64_t itemsize,
                             gts_release_fn release, void *ctx, gts_buffer **out, int64_t *offset,
                             gts_error *err)
{
    int64_t low, high, span = 0;
    int rc = gts_strided_extent(ndim, shape, strides, itemsize, &low, &high, err);
    if (rc)
        return rc;
    void *first = element0; /* an empty array: no bytes, at element 0 */
    if (high > low) {
        if (!element0)
            return gts_error_set(err, GTS_EINVAL, "element0: NULL for an array with elements");
        if ((rc = element_span(element0, low, high, &first, &span, err)))
            return rc;
    }
    if ((rc = gts_buffer_wrap(device, first, span, release, ctx, out, err)))
        return rc;
    /* high - low fits and high > 0, so -low cannot overflow */
    *offset = -low;
    return GTS_OK;
}

int gts_buffer_alloc_geometry(const gts_geometry *geometry, unsigned flags, gts_buffer **out,
                              int64_t *offset, gts_error *err)
{
    int rc = gts_buffer_alloc_host(geometry->alloc_size, flags, out, err);
    if (!rc)
        *offset = gts_geometry_offset(geometry, (uintptr_t)(*out)->host);
    return rc;
}

void gts__buffer_set_release(gts_buffer *buffer, gts_release_fn release, void *ctx)
{
    buffer->release = release;
    buffer->ctx = ctx;
}

gts_buffer *gts_buffer_retain(gts_buffer *buffer)
{
    atomic_fetch_add_explicit(&buffer->refs, 1, memory_order_relaxed);
    return buffer;
}

/* Frees a buffer without references: its device work has completed (or is
 * waited for here). */
static void destroy(gts_buffer *buffer)
{
    gts__order_release(buffer->device, &buffer->order);
    switch (buffer->kind) {
    case MEMORY_HEAP:
        count_live(-1, -buffer->size);
        free(buffer); /* the data lives in the same block */
        return;
    case MEMORY_MAPPED:
        count_live(-1, -buffer->size);
        gts__host_unmap(buffer->host, buffer->mapped_size);
        break;
    case MEMORY_WRAPPED:
        count_live(-1, 0);
        if (buffer->release)
            buffer->release(buffer->ctx);
        break;
    case MEMORY_DEVICE:
        count_live(-1, -buffer->size);
        buffer->device->free(buffer->device, buffer->data, buffer->size);
        if (buffer->mirror) {
            count_live(0, -buffer->size);
            buffer->mirror_device->free(buffer->mirror_device, buffer->mirror, buffer->size);
        }
        break;
    }
    free(buffer);
}

static void destroy_parked(gts__parked *parked)
{
    destroy((gts_buffer *)((char *)parked - offsetof(gts_buffer, parked)));
}

/* Whether the buffer may be freed now, in a stream's order: CUDA's device
 * memory without a host side (stream_free.h). A host side (pinned: the
 * host reuses it out of any stream's order) or another library's memory
 * parks. */
static bool freed_in_stream_order(gts_buffer *buffer)
{
    return buffer->kind == MEMORY_DEVICE && !buffer->mirror &&
           gts__stream_free(buffer->device, &buffer->order);
}

void gts_buffer_release(gts_buffer *buffer)
{
    if (!buffer || atomic_fetch_sub_explicit(&buffer->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (freed_in_stream_order(buffer)) {
        destroy(buffer);
        gts__release_sweep(false);
        return;
    }
    /* No device work may run on memory that is freed: a buffer whose work
     * is pending is parked, and freed once it completes
     * (deferred_release.h); the host does not wait. */
    buffer->parked = (gts__parked){
        .device = buffer->device, .order = &buffer->order, .destroy = destroy_parked,
        .bytes = buffer->kind == MEMORY_WRAPPED ? 0 : buffer->mirror ? 2 * buffer->size
                                                                     : buffer->size};
    if (!gts__release_park(&buffer->parked))
        destroy(buffer);
    gts__release_sweep(false);
}

gts_device gts_buffer_device_kind(const gts_buffer *buffer)
{
    return gts_device_is_host_memory(buffer->device) ? GTS_DEVICE_CPU : GTS_DEVICE_GPU;
}

const gts_device_ops *gts_buffer_device(const gts_buffer *buffer)
{
    return buffer->device;
}

void *gts_buffer_host(const gts_buffer *buffer)
{
    return buffer->host;
}

void *gts_buffer_data(const gts_buffer *buffer)
{
    return buffer->data;
}

int64_t gts_buffer_size(const gts_buffer *buffer)
{
    return buffer->size;
}

bool gts_buffer_owns_memory(const gts_buffer *buffer)
{
    return buffer->kind != MEMORY_WRAPPED;
}

bool gts_buffer_reusable(const gts_buffer *buffer)
{
    return buffer->kind == MEMORY_DEVICE &&
           atomic_load_explicit(&buffer->refs, memory_order_acquire) == 1;
}
