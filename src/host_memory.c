/* The host allocator (host_memory.h): 64-byte aligned heap blocks, and
 * huge-page mappings for large ones, whose freed mappings are cached. */
#define _DEFAULT_SOURCE /* mmap flags and madvise */
#include "host_memory.h"

#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels_private.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL */
#endif

#define HUGE_PAGE ((int64_t)2 << 20)

/* The largest request. Rounding it up to whole huge pages and adding the
 * alignment slack of a mapping stay at most PTRDIFF_MAX, so no size
 * computation below can overflow (a request near 2**63 once rounded to a
 * small number and was served by a cached 4 MiB block). */
#define MAX_ALLOC_SIZE (PTRDIFF_MAX / HUGE_PAGE * HUGE_PAGE - 2 * HUGE_PAGE)

/* ---- the cache of large mappings ----------------------------------------
 * A small array, most recently freed last. Bounded by `cache_bytes_limit`;
 * the oldest mappings are unmapped first. */

#define CACHE_SLOTS 64

typedef struct cached_block {
    void *base;
    int64_t size;
} cached_block;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static cached_block cache[CACHE_SLOTS];
static int cache_count;
static int64_t cache_bytes, cache_bytes_limit = GTS_DEFAULT_CACHE_LIMIT;
static int64_t cache_hits, cache_misses;

/* GTSTORE_CACHE_LIMIT, as gts_cache_limit_parse reads it. */
static void read_environment(void)
{
    const char *text = getenv("GTSTORE_CACHE_LIMIT");
    if (!text || !*text)
        return;
    int64_t bytes;
    gts_error err;
    if (gts_cache_limit_parse(text, &bytes, &err) != GTS_OK) {
        /* No caller to return it to (the Python package refuses it at
         * import): say so, once, and keep the default rather than guess. */
        fprintf(stderr, "gtstore: %s; the caches keep the default limit of %lld bytes\n",
                err.message, (long long)cache_bytes_limit);
        return;
    }
    cache_bytes_limit = bytes;
}

static void unmap(cached_block block)
{
    munmap(block.base, (size_t)block.size);
}

/* Removes the oldest entries until `incoming` more bytes fit; caller holds
 * the lock, has checked incoming <= cache_bytes_limit (so the subtraction
 * cannot overflow) and unmaps what lands in `evicted`. */
static int evict_for(int64_t incoming, cached_block *evicted)
{
    int n = 0;
    while (cache_count > 0 &&
           (cache_bytes > cache_bytes_limit - incoming || cache_count == CACHE_SLOTS)) {
        evicted[n++] = cache[0];
        cache_bytes -= cache[0].size;
        memmove(cache, cache + 1, (size_t)--cache_count * sizeof *cache);
    }
    return n;
}

/* The best-fitting cached mapping of at least `size` bytes and at most a
 * quarter more, or {NULL, 0}. */
static cached_block cache_take(int64_t size)
{
    pthread_once(&cache_once, read_environment);
    pthread_mutex_lock(&cache_lock);
    int best = -1;
    for (int i = 0; i < cache_count; ++i) {
        int64_t s = cache[i].size;
        if (s >= size && s - size <= size / 4 && (best < 0 || s < cache[best].size))
            best = i;
    }
    cached_block block = {NULL, 0};
    if (best >= 0) {
        block = cache[best];
        cache_bytes -= block.size;
        memmove(cache + best, cache + best + 1, (size_t)(--cache_count - best) * sizeof *cache);
        ++cache_hits;
    } else {
        ++cache_misses;
    }
    pthread_mutex_unlock(&cache_lock);
    return block;
}

static void cache_put(cached_block block)
{
    cached_block evicted[CACHE_SLOTS + 1];
    int n = 0;
    pthread_once(&cache_once, read_environment);
    pthread_mutex_lock(&cache_lock);
    if (block.size <= cache_bytes_limit) {
        n = evict_for(block.size, evicted);
        cache[cache_count++] = block;
        cache_bytes += block.size;
    } else {
        evicted[n++] = block;
    }
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < n; ++i)
        unmap(evicted[i]);
}

int64_t gts_cache_limit(void)
{
    pthread_once(&cache_once, read_environment);
    pthread_mutex_lock(&cache_lock);
    int64_t limit = cache_bytes_limit;
    pthread_mutex_unlock(&cache_lock);
    return limit;
}

void gts__host_cache_set_limit(int64_t bytes)
{
    cached_block evicted[CACHE_SLOTS + 1];
    pthread_once(&cache_once, read_environment);
    pthread_mutex_lock(&cache_lock);
    cache_bytes_limit = bytes > 0 ? bytes : 0;
    int n = evict_for(0, evicted);
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < n; ++i)
        unmap(evicted[i]);
}

void gts__host_cache_clear(void)
{
    cached_block evicted[CACHE_SLOTS];
    pthread_mutex_lock(&cache_lock);
    int n = cache_count;
    memcpy(evicted, cache, (size_t)n * sizeof *cache);
    cache_count = 0;
    cache_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < n; ++i)
        unmap(evicted[i]);
}

void gts__host_cache_stats(gts_memory_stats *stats)
{
    pthread_mutex_lock(&cache_lock);
    stats->cached_blocks = cache_count;
    stats->cached_bytes = cache_bytes;
    stats->cache_hits = cache_hits;
    stats->cache_misses = cache_misses;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- allocation --------------------------------------------------------- */

int gts__host_out_of_memory(gts_error *err, int64_t size)
{
    return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot allocate %lld bytes",
                         (long long)size);
}

/* A fresh mapping, aligned to the huge page size, advised to use huge pages
 * and populated; its pages read as zeros. */
static cached_block map_huge(int64_t size)
{
    size_t length = (size_t)size + (size_t)HUGE_PAGE;
    char *raw = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return (cached_block){NULL, 0};
    uintptr_t start = ((uintptr_t)raw + (uintptr_t)HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    size_t head = start - (uintptr_t)raw, tail = length - head - (size_t)size;
    if (head)
        munmap(raw, head);
    if (tail)
        munmap((char *)start + size, tail);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, (size_t)size, MADV_HUGEPAGE);
#endif
    /* Fault the pages in now, in the kernel and from one thread: faulting
     * from user space runs at a fraction of the speed, and parallel kernels
     * that fault the same fresh mapping from several threads are slower
     * still (measured in docs/design.md). Without the flag (Linux < 5.14)
     * the pages fault in on first use. */
    madvise((void *)start, (size_t)size, MADV_POPULATE_WRITE);
    return (cached_block){(void *)start, size};
}

int gts__host_check_size(int64_t size, gts_error *err)
{
    if (size < 0 || size > MAX_ALLOC_SIZE)
        return gts_error_set(err, size < 0 ? GTS_EINVAL : GTS_EOVERFLOW,
                             "size: %lld bytes cannot be allocated (at most %lld)",
                             (long long)size, (long long)MAX_ALLOC_SIZE);
    return GTS_OK;
}

static int map_block(int64_t size, unsigned flags, cached_block *out, gts_error *err)
{
    int64_t rounded = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    cached_block block = cache_take(rounded);
    bool fresh = block.base == NULL;
    if (fresh)
        block = map_huge(rounded);
    if (!block.base)
        return gts__host_out_of_memory(err, size);
    if ((flags & GTS_ALLOC_ZERO) && !fresh)
        gts__zero(block.base, size);
    *out = block;
    return GTS_OK;
}

/* ---- the host device's allocator -----------------------------------------
 * The same memory as the buffers' (64-byte aligned heap blocks, large ones
 * from the huge-page cache) for callers that hold raw blocks: the host
 * device's alloc and free, staging for copies between devices. A cached
 * mapping larger than asked for is trimmed, so that the size given to free
 * tells the mapping's length. */

int gts__host_alloc(int64_t size, unsigned flags, void **out, gts_error *err)
{
    int rc = gts__host_check_size(size, err);
    if (rc)
        return rc;
    if (size < GTS_LARGE_BLOCK) {
        void *block = NULL;
        if (posix_memalign(&block, GTS__HEAP_ALIGNMENT, (size_t)(size ? size : 1)))
            return gts__host_out_of_memory(err, size);
        if (flags & GTS_ALLOC_ZERO)
            memset(block, 0, (size_t)size);
        *out = block;
        return GTS_OK;
    }
    cached_block block;
    if ((rc = map_block(size, flags, &block, err)))
        return rc;
    int64_t rounded = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (block.size > rounded)
        munmap((char *)block.base + rounded, (size_t)(block.size - rounded));
    *out = block.base;
    return GTS_OK;
}

void gts__host_free(void *block, int64_t size)
{
    if (!block)
        return;
    if (size < GTS_LARGE_BLOCK)
        free(block);
    else
        cache_put((cached_block){block, (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE});
}

int gts__host_map(int64_t size, unsigned flags, void **base, int64_t *mapped, gts_error *err)
{
    cached_block block;
    int rc = map_block(size, flags, &block, err);
    if (!rc) {
        *base = block.base;
        *mapped = block.size;
    }
    return rc;
}

void gts__host_unmap(void *base, int64_t mapped)
{
    cache_put((cached_block){base, mapped});
}
