/* Caches of device and pinned memory: what a device does with its freed
 * blocks (device_pool.c); not installed.
 *
 * Allocating device memory or pinning host memory costs far more than
 * reusing a block (an H100 takes 92 us for cudaMalloc + cudaFree of 64 MiB,
 * 27 ms to cudaHostAlloc it), so the devices keep freed blocks for the next
 * allocation, as the host allocator (host_memory.c) keeps huge-page mappings. Two kinds of cache:
 *
 * - a gts__pool: freed blocks of one device, each reused for a request of
 *   its size class, at most gts_cache_limit() bytes (oldest released
 *   first). A block may carry a fence, a mark in the device's work
 *   recorded when it was freed: it is reused only once the device has
 *   passed it, so that no new owner writes a block that queued work still
 *   reads. The emulated device, CUDA's pinned host memory and CUDA devices
 *   without stream-ordered pools use one each.
 * - anything else that holds freed memory (a CUDA driver's stream-ordered
 *   pool) registers a gts__cache, so that gts_cache_set_limit,
 *   gts_cache_clear and gts_memory_stats_get reach every cache.
 *
 * A pool's memory is the device's: the pool calls back to release a block
 * for good, and hands out and takes back opaque block handles. */
#ifndef GTSTORE_DEVICE_POOL_H
#define GTSTORE_DEVICE_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gtstore/buffer.h"

/* What a cache holds, for gts_memory_stats. */
typedef enum gts__cache_kind { GTS__CACHE_DEVICE, GTS__CACHE_PINNED } gts__cache_kind;

typedef struct gts__cache_stats {
    int64_t blocks, bytes, hits, misses;
} gts__cache_stats;

/* A cache of freed memory in the registry. */
typedef struct gts__cache gts__cache;
struct gts__cache {
    gts__cache_kind kind;
    /* Releases cached memory until at most `keep` bytes are cached. */
    void (*trim)(gts__cache *cache, int64_t keep);
    /* Adds what it holds and its hits and misses to *out. */
    void (*stats)(gts__cache *cache, gts__cache_stats *out);
    gts__cache *next; /* the registry's; set by gts__cache_register */
    atomic_bool registered;
};

/* Adds `cache` to the registry (once; later calls do nothing). Caches are
 * static objects that live as long as the process. */
void gts__cache_register(gts__cache *cache);
/* Every registered cache trimmed to `keep` bytes (gts_cache_set_limit,
 * gts_cache_clear), and the sums of their stats by kind. */
void gts__caches_trim(int64_t keep);
void gts__caches_stats(gts__cache_stats *device, gts__cache_stats *pinned);

/* ---- block pools -------------------------------------------------------- */

#define GTS__POOL_SLOTS 64

typedef struct gts__pool gts__pool;

/* The device's side of a pool. `release` is required; the fence functions
 * are optional (all NULL: a freed block may be reused at once). */
typedef struct gts__pool_memory {
    /* Frees `block` of `size` bytes (its size class) for good. */
    void (*release)(gts__pool *pool, void *block, int64_t size);
    /* A fence after the work queued so far on the device, in *fence (NULL
     * where nothing is pending); false if none can be made, and then the
     * block is released instead of cached. */
    bool (*fence)(gts__pool *pool, void **fence);
    /* Whether the device has passed `fence`. */
    bool (*passed)(gts__pool *pool, void *fence);
    /* Waits for the device to pass `fence` (at once where it has), then
     * drops it: a block is released only after its fence. */
    void (*drop)(gts__pool *pool, void *fence);
} gts__pool_memory;

typedef struct gts__pool_entry {
    void *block;
    int64_t size;
    void *fence;
} gts__pool_entry;

struct gts__pool {
    gts__cache cache; /* first: the registry's view of the pool */
    const gts__pool_memory *memory;
    void *ctx; /* the device's own */
    /* true: sizes are rounded up to size classes (at most 1/8 more, whole
     * pages), so that requests of similar sizes share blocks; false: a
     * block is reused only for its exact size (the emulated device, whose
     * checks of every address should stay exact). */
    bool classes;
    /* below: the pool's own state, zero-initialised */
    pthread_mutex_t lock;
    int count;
    gts__pool_entry entries[GTS__POOL_SLOTS]; /* oldest first */
    int64_t bytes, hits, misses;
};

/* A pool over `memory` (static objects: the lock is initialised here). */
#define GTS__POOL_INIT(kind_, memory_, ctx_, classes_)                                            \
    {.cache = {.kind = (kind_), .trim = gts__pool_trim, .stats = gts__pool_stats},                \
     .memory = (memory_), .ctx = (ctx_), .classes = (classes_),                                   \
     .lock = PTHREAD_MUTEX_INITIALIZER}

/* The size a pool allocates and caches for a request of `size` bytes: its
 * class, or `size` itself for an exact pool. */
int64_t gts__pool_size(const gts__pool *pool, int64_t size);

/* A cached block of size gts__pool_size(pool, size) that the device has
 * passed, into *out (true, a hit); else false (a miss: the caller
 * allocates that many bytes itself). */
bool gts__pool_take(gts__pool *pool, int64_t size, void **out);

/* Takes back a freed block of the request size `size`: cached with a
 * fence, or released (beyond the cache limit, with the limit 0, or when no
 * fence can be made), along with the oldest blocks that no longer fit. */
void gts__pool_put(gts__pool *pool, void *block, int64_t size);

/* The gts__cache functions of a pool. */
void gts__pool_trim(gts__cache *cache, int64_t keep);
void gts__pool_stats(gts__cache *cache, gts__cache_stats *out);

/* ---- pinned host memory ---------------------------------------------------- */

/* Host memory for pinning: `size` bytes (a multiple of the page size, as
 * a pool's size classes are) in whole pages that no other block shares,
 * since a page-locked range must not overlap another. Large blocks come
 * from the host allocator's huge-page mappings. `flags`: GTS_ALLOC_ZERO. */
int gts__host_pages_alloc(int64_t size, unsigned flags, void **out, gts_error *err);
void gts__host_pages_free(void *block, int64_t size);

#endif
