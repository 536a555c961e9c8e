/* Caches of device and pinned memory (device_pool.h). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign, sysconf */
#include "device_pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_memory.h"

/* ---- the registry of caches --------------------------------------------------
 * A list of static objects, each added once. Trimming holds the registry's
 * lock and then a cache's own; nothing takes them the other way round. */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static gts__cache *registry;

void gts__cache_register(gts__cache *cache)
{
    if (atomic_load_explicit(&cache->registered, memory_order_acquire))
        return;
    pthread_mutex_lock(&registry_lock);
    if (!atomic_load_explicit(&cache->registered, memory_order_relaxed)) {
        cache->next = registry;
        registry = cache;
        atomic_store_explicit(&cache->registered, true, memory_order_release);
    }
    pthread_mutex_unlock(&registry_lock);
}

void gts__caches_trim(int64_t keep)
{
    pthread_mutex_lock(&registry_lock);
    for (gts__cache *c = registry; c; c = c->next)
        c->trim(c, keep);
    pthread_mutex_unlock(&registry_lock);
}

void gts__caches_stats(gts__cache_stats *device, gts__cache_stats *pinned)
{
    memset(device, 0, sizeof *device);
    memset(pinned, 0, sizeof *pinned);
    pthread_mutex_lock(&registry_lock);
    for (gts__cache *c = registry; c; c = c->next)
        c->stats(c, c->kind == GTS__CACHE_DEVICE ? device : pinned);
    pthread_mutex_unlock(&registry_lock);
}

/* ---- size classes -------------------------------------------------------------- */

static int64_t page_size(void)
{
    static atomic_llong cached;
    int64_t page = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!page) {
        long value = sysconf(_SC_PAGESIZE);
        page = value > 0 ? value : 4096;
        atomic_store_explicit(&cached, page, memory_order_relaxed);
    }
    return page;
}

/* Eight classes per power of two (a block is at most 1/8 larger than the
 * request, as the host cache's blocks are at most 1/4 larger), in whole
 * pages: a 40 MiB field and one of 40 MiB plus a row share a class. */
int64_t gts__pool_size(const gts__pool *pool, int64_t size)
{
    if (!pool->classes)
        return size;
    int64_t granule = page_size();
    if (size > granule) {
        int log2 = 63 - __builtin_clzll((unsigned long long)size);
        if (log2 - 3 < 62 && ((int64_t)1 << (log2 - 3)) > granule)
            granule = (int64_t)1 << (log2 - 3);
    }
    if (size > INT64_MAX - granule)
        return size; /* no device has that much: its allocation fails */
    return size <= 0 ? granule : (size + granule - 1) / granule * granule;
}

/* ---- block pools --------------------------------------------------------------- */

/* Removes entry i; caller holds the lock. */
static gts__pool_entry pool_remove(gts__pool *pool, int i)
{
    gts__pool_entry e = pool->entries[i];
    pool->bytes -= e.size;
    memmove(pool->entries + i, pool->entries + i + 1,
            (size_t)(--pool->count - i) * sizeof *pool->entries);
    return e;
}

/* Releases blocks taken out of the pool, each after its fence (outside the
 * lock: the device's calls may wait). */
static void pool_release(gts__pool *pool, const gts__pool_entry *entries, int n)
{
    for (int i = 0; i < n; ++i) {
        if (entries[i].fence)
            pool->memory->drop(pool, entries[i].fence);
        pool->memory->release(pool, entries[i].block, entries[i].size);
    }
}

bool gts__pool_take(gts__pool *pool, int64_t size, void **out)
{
    int64_t want = gts__pool_size(pool, size);
    gts__pool_entry found = {NULL, 0, NULL};
    bool hit = false;
    pthread_mutex_lock(&pool->lock);
    /* the newest first: its memory is the likeliest still in a cache */
    for (int i = pool->count - 1; i >= 0; --i) {
        const gts__pool_entry *e = &pool->entries[i];
        if (e->size == want && (!e->fence || pool->memory->passed(pool, e->fence))) {
            found = pool_remove(pool, i);
            hit = true;
            break;
        }
    }
    if (hit)
        ++pool->hits;
    else
        ++pool->misses;
    pthread_mutex_unlock(&pool->lock);
    if (found.fence)
        pool->memory->drop(pool, found.fence); /* passed: returns at once */
    if (hit)
        *out = found.block;
    return hit;
}

/* Takes the oldest entries out until `incoming` more bytes fit under
 * `limit` (and a slot is free, if `incoming`); caller holds the lock and
 * has checked incoming <= limit. */
static int pool_evict(gts__pool *pool, int64_t limit, int64_t incoming, gts__pool_entry *out)
{
    int n = 0;
    while (pool->count > 0 &&
           (pool->bytes > limit - incoming || (incoming && pool->count == GTS__POOL_SLOTS)))
        out[n++] = pool_remove(pool, 0);
    return n;
}

void gts__pool_put(gts__pool *pool, void *block, int64_t size)
{
    gts__pool_entry entry = {block, gts__pool_size(pool, size), NULL};
    int64_t limit = gts_cache_limit();
    if (entry.size > limit || entry.size == 0 ||
        (pool->memory->fence && !pool->memory->fence(pool, &entry.fence))) {
        pool_release(pool, &entry, 1);
        return;
    }
    gts__cache_register(&pool->cache);
    gts__pool_entry evicted[GTS__POOL_SLOTS];
    pthread_mutex_lock(&pool->lock);
    int n = pool_evict(pool, limit, entry.size, evicted);
    pool->entries[pool->count++] = entry;
    pool->bytes += entry.size;
    pthread_mutex_unlock(&pool->lock);
    pool_release(pool, evicted, n);
}

void gts__pool_trim(gts__cache *cache, int64_t keep)
{
    gts__pool *pool = (gts__pool *)cache;
    gts__pool_entry evicted[GTS__POOL_SLOTS];
    pthread_mutex_lock(&pool->lock);
    int n = pool_evict(pool, keep > 0 ? keep : 0, 0, evicted);
    pthread_mutex_unlock(&pool->lock);
    pool_release(pool, evicted, n);
}

void gts__pool_stats(gts__cache *cache, gts__cache_stats *out)
{
    gts__pool *pool = (gts__pool *)cache;
    pthread_mutex_lock(&pool->lock);
    out->blocks += pool->count;
    out->bytes += pool->bytes;
    out->hits += pool->hits;
    out->misses += pool->misses;
    pthread_mutex_unlock(&pool->lock);
}

/* ---- host memory for pinning ---------------------------------------------------- */

int gts__host_pages_alloc(int64_t size, unsigned flags, void **out, gts_error *err)
{
    /* whole huge pages of a mapping of its own (which checks the size) */
    if (size >= GTS_LARGE_BLOCK)
        return gts__host_alloc(size, flags, out, err);
    int64_t page = page_size();
    if (size <= 0 || size % page)
        return gts_error_set(err, GTS_EINVAL,
                             "size: %lld bytes is not a positive multiple of the page size %lld",
                             (long long)size, (long long)page);
    void *block = NULL;
    if (posix_memalign(&block, (size_t)page, (size_t)size))
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot allocate %lld bytes",
                             (long long)size);
    if (flags & GTS_ALLOC_ZERO)
        memset(block, 0, (size_t)size);
    *out = block;
    return GTS_OK;
}

void gts__host_pages_free(void *block, int64_t size)
{
    if (size >= GTS_LARGE_BLOCK)
        gts__host_free(block, size);
    else
        free(block);
}
