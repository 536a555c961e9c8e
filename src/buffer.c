#define _DEFAULT_SOURCE /* mmap flags and madvise */
#include "gtstore/buffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "buffer_private.h"
#include "device_pool.h"
#include "internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL */
#endif

#define HUGE_PAGE ((int64_t)2 << 20)
#define HEAP_ALIGNMENT 64

/* The largest request. Rounding it up to whole huge pages and adding the
 * alignment slack of a mapping stay at most PTRDIFF_MAX, so no size
 * computation below can overflow (a request near 2**63 once rounded to a
 * small number and was served by a cached 4 MiB block). */
#define MAX_ALLOC_SIZE (PTRDIFF_MAX / HUGE_PAGE * HUGE_PAGE - 2 * HUGE_PAGE)

/* ---- statistics -------------------------------------------------------- */

static atomic_llong live_buffers, live_bytes;

static void count_live(int64_t buffers, int64_t bytes)
{
    atomic_fetch_add_explicit(&live_buffers, buffers, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_bytes, bytes, memory_order_relaxed);
}

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

static atomic_bool pinned_host_sides = true;

/* GTSTORE_CACHE_LIMIT: bytes with an optional K, M or G suffix.
 * GTSTORE_PINNED_HOST_SIDES: "0" turns pinned host sides off. */
static void read_environment(void)
{
    const char *pinned = getenv("GTSTORE_PINNED_HOST_SIDES");
    if (pinned && !strcmp(pinned, "0"))
        atomic_store(&pinned_host_sides, false);
    const char *text = getenv("GTSTORE_CACHE_LIMIT");
    if (!text || !*text)
        return;
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: break;
    }
    if (errno || end == text || *end || value < 0 || value > (INT64_MAX >> shift))
        return; /* malformed: keep the default rather than guess */
    cache_bytes_limit = (int64_t)value << shift;
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

void gts_cache_set_limit(int64_t bytes)
{
    cached_block evicted[CACHE_SLOTS + 1];
    pthread_once(&cache_once, read_environment);
    pthread_mutex_lock(&cache_lock);
    cache_bytes_limit = bytes > 0 ? bytes : 0;
    int n = evict_for(0, evicted);
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < n; ++i)
        unmap(evicted[i]);
    gts__caches_trim(bytes > 0 ? bytes : 0); /* the device and pinned caches */
}

void gts_cache_clear(void)
{
    /* device and pinned blocks first: releasing a pinned block hands its
     * host memory to the host cache */
    gts__caches_trim(0);
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

void gts_memory_stats_get(gts_memory_stats *stats)
{
    stats->live_buffers = atomic_load_explicit(&live_buffers, memory_order_relaxed);
    stats->live_bytes = atomic_load_explicit(&live_bytes, memory_order_relaxed);
    pthread_mutex_lock(&cache_lock);
    stats->cached_blocks = cache_count;
    stats->cached_bytes = cache_bytes;
    stats->cache_hits = cache_hits;
    stats->cache_misses = cache_misses;
    pthread_mutex_unlock(&cache_lock);
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
    pthread_once(&cache_once, read_environment);
    return atomic_load(&pinned_host_sides);
}

void gts_set_pinned_host_sides(bool pinned)
{
    pthread_once(&cache_once, read_environment); /* so that it cannot override this later */
    atomic_store(&pinned_host_sides, pinned);
}

/* ---- allocation --------------------------------------------------------- */

static int out_of_memory(gts_error *err, int64_t size)
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

static int check_size(int64_t size, gts_error *err)
{
    if (size < 0 || size > MAX_ALLOC_SIZE)
        return gts_error_set(err, size < 0 ? GTS_EINVAL : GTS_EOVERFLOW,
                             "size: %lld bytes cannot be allocated (at most %lld)",
                             (long long)size, (long long)MAX_ALLOC_SIZE);
    return GTS_OK;
}

/* A huge-page mapping of at least `size` bytes (whole huge pages, at most a
 * quarter more if it comes from the cache), zeroed if asked: a fresh one
 * reads as zeros already. */
static int map_block(int64_t size, unsigned flags, cached_block *out, gts_error *err)
{
    int64_t rounded = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    cached_block block = cache_take(rounded);
    bool fresh = block.base == NULL;
    if (fresh)
        block = map_huge(rounded);
    if (!block.base)
        return out_of_memory(err, size);
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
    int rc = check_size(size, err);
    if (rc)
        return rc;
    if (size < GTS_LARGE_BLOCK) {
        void *block = NULL;
        if (posix_memalign(&block, HEAP_ALIGNMENT, (size_t)(size ? size : 1)))
            return out_of_memory(err, size);
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

static size_t heap_header_size(void)
{
    return (sizeof(gts_buffer) + HEAP_ALIGNMENT - 1) / HEAP_ALIGNMENT * HEAP_ALIGNMENT;
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
    count_live(1, kind == MEMORY_WRAPPED ? 0 : size); /* wrapped bytes are not ours */
    return buffer;
}

int gts_buffer_alloc_host(int64_t size, unsigned flags, gts_buffer **out, gts_error *err)
{
    int rc = check_size(size, err);
    if (rc)
        return rc;
    if (size < GTS_LARGE_BLOCK) {
        /* One block: header, then the data on a 64-byte boundary. */
        char *raw = malloc(heap_header_size() + HEAP_ALIGNMENT + (size_t)size);
        if (!raw)
            return out_of_memory(err, size);
        uintptr_t data = ((uintptr_t)raw + heap_header_size() + HEAP_ALIGNMENT - 1) &
                         ~(uintptr_t)(HEAP_ALIGNMENT - 1);
        if (flags & GTS_ALLOC_ZERO)
            memset((void *)data, 0, (size_t)size);
        *out = buffer_init((gts_buffer *)raw, &gts__device_host, MEMORY_HEAP, (void *)data, size);
        return GTS_OK;
    }
    gts_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer)
        return out_of_memory(err, size);
    cached_block block;
    if ((rc = map_block(size, flags, &block, err))) {
        free(buffer);
        return rc;
    }
    *out = buffer_init(buffer, &gts__device_host, MEMORY_MAPPED, block.base, size);
    buffer->mapped_size = block.size;
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
    if (buffer->device->host_accessible)
        return gts_error_set(err, GTS_EINVAL,
                             "flags: a mirrored buffer needs memory the host cannot reach, and "
                             "device '%s' is host-accessible",
                             buffer->device->name);
    const gts_device_ops *pinned = NULL;
    unsigned zero = flags & GTS_ALLOC_ZERO;
    if (gts_pinned_host_sides() && gts_device_pinned(buffer->device, &pinned, NULL) == GTS_OK &&
        gts_device_alloc(pinned, buffer->size, zero, &buffer->mirror, NULL) == GTS_OK) {
        buffer->mirror_device = pinned;
    } else {
        int rc = gts__host_alloc(buffer->size, zero, &buffer->mirror, err);
        if (rc)
            return rc;
        buffer->mirror_device = &gts__device_host;
    }
    buffer->host = buffer->mirror;
    count_live(0, buffer->size);
    return GTS_OK;
}

int gts_buffer_alloc(const gts_device_ops *device, int64_t size, unsigned flags,
                     gts_buffer **out, gts_error *err)
{
    bool mirrored = flags & GTS_ALLOC_MIRRORED;
    if (device && device->kind == GTS_MEMORY_HOST && !mirrored)
        return gts_buffer_alloc_host(size, flags, out, err);
    if (!device || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", !device ? "device" : "out");
    gts_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer)
        return out_of_memory(err, (int64_t)sizeof *buffer);
    void *block;
    int rc = gts_device_alloc(device, size, flags & GTS_ALLOC_ZERO, &block, err);
    if (rc) {
        free(buffer);
        return rc;
    }
    buffer_init(buffer, device, MEMORY_DEVICE, block, size);
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
    return gts_buffer_wrap(&gts__device_host, data, size, release, ctx, out, err);
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
        return out_of_memory(err, (int64_t)sizeof *buffer);
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

void gts_buffer_release(gts_buffer *buffer)
{
    if (!buffer || atomic_fetch_sub_explicit(&buffer->refs, 1, memory_order_acq_rel) != 1)
        return;
    switch (buffer->kind) {
    case MEMORY_HEAP:
        count_live(-1, -buffer->size);
        free(buffer); /* the data lives in the same block */
        return;
    case MEMORY_MAPPED:
        count_live(-1, -buffer->size);
        cache_put((cached_block){buffer->host, buffer->mapped_size});
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

gts_device gts_buffer_device_kind(const gts_buffer *buffer)
{
    gts_memory_kind kind = buffer->device->kind;
    return kind == GTS_MEMORY_HOST || kind == GTS_MEMORY_PINNED ? GTS_DEVICE_CPU : GTS_DEVICE_GPU;
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
