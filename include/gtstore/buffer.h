/* Buffers: reference-counted memory blocks.
 *
 * A buffer owns one allocation (or wraps memory somebody else owns, keeping
 * that owner alive through a release callback). Counts are atomic, so
 * buffers may be retained and released from any thread.
 *
 * Host allocation: small blocks come from the C heap, 64-byte aligned. Large
 * blocks (>= GTS_LARGE_BLOCK bytes) are mapped directly, 2 MiB aligned and
 * advised for transparent huge pages, and when released they go to a bounded
 * cache instead of back to the system: allocating a block of a size just
 * freed then costs no page faults. The cache holds at most
 * gts_cache_limit() bytes; the environment variable GTSTORE_CACHE_LIMIT sets
 * the initial limit (bytes, with an optional K/M/G suffix; 0 turns the cache
 * off), default 1 GiB.
 *
 * Device memory and pinned host memory are cached too, by their devices
 * (gtstore/device.h): each GPU's freed device blocks (a CUDA driver's
 * stream-ordered pool, or a cache of blocks reused once the GPU has passed
 * the work queued before their release) and the freed pinned blocks. Each
 * of those caches holds at most gts_cache_limit() bytes as well;
 * gts_cache_set_limit and gts_cache_clear cover them all, and
 * gts_memory_stats_get reports them apart from the host cache.
 * gts_cache_clear also destroys the few device events kept for the stream
 * order's next records (gtstore/access.h).
 *
 * The host side of a mirrored buffer is the GPU's pinned host memory where
 * it has one (gts_device_pinned), so that syncs run at the bus's speed
 * rather than through the driver's staging; pageable memory where pinning
 * is turned off (gts_set_pinned_host_sides, or the environment variable
 * GTSTORE_PINNED_HOST_SIDES=0: page-locked memory is taken from what the
 * system can page out) or fails. */
#ifndef GTSTORE_BUFFER_H
#define GTSTORE_BUFFER_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/device.h"
#include "gtstore/error.h"
#include "gtstore/geometry.h"
#include "gtstore/preset.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gts_buffer gts_buffer;

/* Called once when the last reference to a wrapped buffer is released. */
typedef void (*gts_release_fn)(void *ctx);

#define GTS_LARGE_BLOCK ((int64_t)2 << 20)
#define GTS_DEFAULT_CACHE_LIMIT ((int64_t)1 << 30)

/* Allocation flags: GTS_ALLOC_ZERO (gtstore/device.h), and for buffers on
 * a device the host cannot reach GTS_ALLOC_MIRRORED: a host side of the
 * same size beside the device memory, kept in sync as gtstore/sync.h says
 * (GT4Py's software-managed storages). gts_buffer_host then gives the host
 * side. Any other bit, as gts_device_alloc says, and GTS_ALLOC_MIRRORED on
 * a host-accessible device (the host included) are GTS_EINVAL naming
 * `flags`, before anything is allocated. */
enum { GTS_ALLOC_MIRRORED = 1 << 8 };

/* The check of those flags that gts_buffer_alloc(device, ...) makes, for a
 * caller that takes a buffer from elsewhere in its place
 * (gts_storage_create_reusing): GTS_OK, or GTS_EINVAL naming `flags`. */
int gts_buffer_flags_check(const gts_device_ops *device, unsigned flags, gts_error *err);

/* Allocates `size` bytes of host memory owned by the new buffer: the same
 * as gts_buffer_alloc(gts_device_host(), ...), flags and errors included. */
int gts_buffer_alloc_host(int64_t size, unsigned flags, gts_buffer **out, gts_error *err);

/* Allocates `size` bytes on `device` (see gtstore/device.h), owned by the new
 * buffer. On the host this is gts_buffer_alloc_host; on other devices the
 * block comes from the device's alloc and goes back through its free.
 * GTS_ALLOC_ZERO on a device with streams (CUDA) queues the zeroing on the
 * legacy default stream and records it as the buffer's last device work,
 * without waiting: use the memory through gtstore/access.h, or wait with
 * gts_buffer_order_wait, before handing gts_buffer_data to other code. */
int gts_buffer_alloc(const gts_device_ops *device, int64_t size, unsigned flags,
                     gts_buffer **out, gts_error *err);

/* Wraps `size` bytes at `data` that the caller owns. `release(ctx)` (may be
 * NULL) runs when the buffer dies; the memory itself is never freed here. */
int gts_buffer_wrap_host(void *data, int64_t size, gts_release_fn release, void *ctx,
                         gts_buffer **out, gts_error *err);

/* Wraps `size` bytes of `device` memory at `data` that the caller owns, as
 * gts_buffer_wrap_host does for host memory. */
int gts_buffer_wrap(const gts_device_ops *device, void *data, int64_t size,
                    gts_release_fn release, void *ctx, gts_buffer **out, gts_error *err);

/* Wraps, as gts_buffer_wrap does, exactly the bytes of the elements of a
 * strided array in `device` memory (byte `strides`, see
 * gts_strided_extent) whose element 0 is at `element0`: NULL only for an empty array, which wraps 0 bytes at
 * element0. `*offset` receives element 0's byte offset from the buffer's
 * base: -low of gts_strided_extent, above 0 with negative strides, 0 for an
 * empty array. Fails with the errors of gts_strided_extent, GTS_EINVAL for a
 * NULL element0 with elements and GTS_EOVERFLOW for elements outside the
 * address space (the end, one past the last byte, must be an address too).
 * On failure nothing is wrapped, *out and *offset are untouched and
 * `release` is not called: the caller still owns `ctx`, as with
 * gts_buffer_wrap_host. */
int gts_buffer_wrap_elements(const gts_device_ops *device, void *element0, int ndim,
                             const int64_t *shape, const int64_t *strides, int64_t itemsize,
                             gts_release_fn release, void *ctx, gts_buffer **out,
                             int64_t *offset, gts_error *err);

/* Allocates the block for `geometry` on the host; `*offset` receives the byte offset of
 * element 0 from the block base (see gts_geometry_offset). */
int gts_buffer_alloc_geometry(const gts_geometry *geometry, unsigned flags, gts_buffer **out,
                              int64_t *offset, gts_error *err);

gts_buffer *gts_buffer_retain(gts_buffer *buffer);
/* Drops one reference; the last one frees or uncaches the block, or calls
 * the release callback of wrapped memory. NULL is ignored. It never waits
 * for device work: where work recorded on the buffer (its stream order,
 * gtstore/access.h) may still run, the buffer is kept until that work has
 * completed and freed then (at a later release or allocation of a buffer,
 * gts_memory_stats_get, or gts_cache_clear, which waits for it), so that
 * no block is handed out again while work on it may run. */
void gts_buffer_release(gts_buffer *buffer);

/* The device the buffer's memory lives on. */
const gts_device_ops *gts_buffer_device(const gts_buffer *buffer);
/* The device kind of that memory: the CPU for host and pinned host memory,
 * the GPU for any other device (gtstore/preset.h). */
gts_device gts_buffer_device_kind(const gts_buffer *buffer);
/* The block's base as a host address (a mirrored buffer's host side), or
 * NULL when the memory is not host-accessible (device memory): nothing may
 * dereference device memory as host memory. */
void *gts_buffer_host(const gts_buffer *buffer);
/* The block's base on its device (for the host device the host address);
 * only the device's operations may dereference it. */
void *gts_buffer_data(const gts_buffer *buffer);
int64_t gts_buffer_size(const gts_buffer *buffer);
bool gts_buffer_owns_memory(const gts_buffer *buffer);
/* Whether the buffer may serve a new storage instead of new memory
 * (gts_storage_create_reusing): it owns device memory (with a host side
 * or without), and the caller holds its only reference. Nothing else can
 * then reach it, and nothing can start to: only a holder can make a
 * reference. */
bool gts_buffer_reusable(const gts_buffer *buffer);

/* The caches: the host's large blocks, and each device and pinned memory
 * cache. The limit applies to each cache; setting it evicts down to it, 0
 * (or a negative value) disables them. gts_cache_clear releases what every
 * cache holds (device memory once the GPU is done with it), after freeing
 * the released buffers whose device work was still running (waiting for
 * it); setting the limit frees them until at most that many bytes are
 * kept. */
int64_t gts_cache_limit(void);
void gts_cache_set_limit(int64_t bytes);
void gts_cache_clear(void);

/* A limit as GTSTORE_CACHE_LIMIT spells it: decimal bytes with an optional K,
 * M or G suffix (powers of 1024). Anything else is GTS_EINVAL (GTS_EOVERFLOW
 * past 64 bits), with a message naming the variable and the text. A bad
 * GTSTORE_CACHE_LIMIT leaves the caches at the default, with one line on
 * stderr; gts_cache_limit_check_environment returns that error instead
 * (GTS_OK where the variable is unset, empty or valid). */
int gts_cache_limit_parse(const char *text, int64_t *bytes, gts_error *err);
int gts_cache_limit_check_environment(gts_error *err);

typedef struct gts_memory_stats {
    int64_t live_buffers; /* buffers not yet released, on every device */
    int64_t live_bytes;   /* bytes of memory they own, on every device */
    /* the host cache of large blocks */
    int64_t cached_blocks;
    int64_t cached_bytes;
    int64_t cache_hits;   /* large allocations served from the cache */
    int64_t cache_misses; /* large allocations that mapped new memory */
    /* the device memory caches of every GPU, summed: blocks and bytes held,
     * allocations served from them and allocations that took new memory
     * (a driver's stream-ordered pool holds bytes, not blocks gtstore
     * counts: it adds its free bytes, and 0 blocks) */
    int64_t device_cached_blocks, device_cached_bytes, device_cache_hits, device_cache_misses;
    /* the pinned host memory caches, the same way */
    int64_t pinned_cached_blocks, pinned_cached_bytes, pinned_cache_hits, pinned_cache_misses;
} gts_memory_stats;

void gts_memory_stats_get(gts_memory_stats *stats);

/* Whether new mirrored buffers get pinned host sides (default true; the
 * environment variable GTSTORE_PINNED_HOST_SIDES=0 sets false at start).
 * Buffers keep the host side they were made with. */
bool gts_pinned_host_sides(void);
void gts_set_pinned_host_sides(bool pinned);

/* GTSTORE_PINNED_HOST_SIDES as text: "1" (on) or "0" (off). Anything else
 * is GTS_EINVAL naming the variable and the text. A bad value leaves
 * pinned host sides on (the default), with one line on stderr;
 * gts_pinned_host_sides_check_environment returns that error instead
 * (GTS_OK where the variable is unset, empty or valid), as
 * gts_cache_limit_check_environment does for its variable. */
int gts_pinned_host_sides_parse(const char *text, bool *pinned, gts_error *err);
int gts_pinned_host_sides_check_environment(gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
