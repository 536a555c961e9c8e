/* Device, managed and pinned memory of the CUDA devices, and their caches
 * (device_cuda.h). */
#define _POSIX_C_SOURCE 200809L
#include "device_cuda.h"

#include <stdlib.h>

#include "host_memory.h"
#include "kernels_private.h"

/* ---- sizes ------------------------------------------------------ */

/* The largest block: its size rounded up to the driver's 256 bytes still
 * fits in an address difference. */
#define MAX_BLOCK ((int64_t)PTRDIFF_MAX - 255)

static int size_check(int64_t size, const char *what, gts_error *err)
{
    if (size > MAX_BLOCK)
        return gts_error_set(err, GTS_EOVERFLOW, "size: %lld bytes is more than %s can address",
                             (long long)size, what);
    return GTS_OK;
}

/* ---- device memory: the pools ---------------------------------------------------------------
 * cuMemAlloc + cuMemFree of 64 MiB cost 92 us on an H100, a stream-ordered
 * pool 1 us. Where the device has pools, its blocks come from a pool of
 * gtstore's own (cuMemPoolCreate; the device's default pool is shared with
 * other libraries, whose memory gtstore would count and trim): allocated
 * and freed on the legacy default stream (cuMemAllocFromPoolAsync,
 * cuMemFreeAsync), so the driver reuses a freed block in that stream's
 * order, after the work queued before the free on it or on any blocking
 * stream. Its release threshold is the maximum, so that it keeps its memory
 * across synchronisations; gtstore trims it to the cache limit instead
 * (after a free that leaves more than the limit unused: the default stream
 * synchronised, then cuMemPoolTrimTo(used + limit)), and releases it all on
 * gts_cache_clear and when an allocation runs out of memory. An allocation
 * counts as a hit when the pool's reservation did not grow.
 * Without pools (or where making one fails): blocks of size classes from
 * cuMemAlloc in a gts__pool, each freed block fenced by an event recorded
 * on the default stream and reused only once the event has completed. */

static int64_t pool_attribute(CUmemoryPool pool, int attribute)
{
    unsigned long long value = 0; /* cuuint64_t */
    api.MemPoolGetAttribute(pool, attribute, &value);
    return value > INT64_MAX ? INT64_MAX : (int64_t)value;
}

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The pool of `d`, made on first use; NULL where it has none. The caller
 * is in the context. */
static CUmemoryPool device_pool(cuda_device *d)
{
    CUmemoryPool pool = atomic_load_explicit(&d->pool, memory_order_acquire);
    if (pool || !atomic_load_explicit(&d->pools, memory_order_acquire))
        return pool;
    bool made = false;
    pthread_mutex_lock(&pool_lock);
    pool = atomic_load_explicit(&d->pool, memory_order_relaxed);
    if (!pool && atomic_load_explicit(&d->pools, memory_order_relaxed)) {
        pool_props props = {.alloc_type = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location_type = CU_MEM_LOCATION_TYPE_DEVICE,
                            .location_id = d->ordinal};
        unsigned long long keep_all = UINT64_MAX;
        if (api.MemPoolCreate(&pool, &props) == CUDA_SUCCESS) {
            api.MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
            atomic_store_explicit(&d->pool, pool, memory_order_release);
            made = true;
        } else {
            pool = NULL; /* the block cache serves, as on devices without pools */
            atomic_store_explicit(&d->pools, false, memory_order_release);
        }
    }
    pthread_mutex_unlock(&pool_lock);
    if (made) /* outside the lock: the registry's lock comes first where both are held */
        gts__cache_register(&d->pool_cache);
    return pool;
}

/* Releases the pool's unused memory beyond `keep` bytes, once the frees
 * queued on the default stream have run (the caller is in the context). */
static void pool_trim(cuda_device *d, CUmemoryPool pool, int64_t keep)
{
    api.StreamSynchronize(NULL);
    int64_t used = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    api.MemPoolTrimTo(pool, (size_t)(used > INT64_MAX - keep ? INT64_MAX : used + keep));
    atomic_store(&d->reserved, pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));
}

static int pool_alloc(cuda_device *d, CUmemoryPool pool, int64_t size, CUdeviceptr *out,
                      gts_error *err)
{
    size_t bytes = (size_t)(size ? size : 1);
    CUresult rc = api.MemAllocFromPoolAsync(out, bytes, pool, NULL);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) { /* what the pool keeps may be enough */
        pool_trim(d, pool, 0);
        rc = api.MemAllocFromPoolAsync(out, bytes, pool, NULL);
    }
    if (rc != CUDA_SUCCESS)
        return gts__cuda_error(d, "cuMemAllocFromPoolAsync", rc, err);
    int64_t now = pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    atomic_fetch_add(now > atomic_exchange(&d->reserved, now) ? &d->misses : &d->hits, 1);
    return GTS_OK;
}

static void pool_free(cuda_device *d, CUmemoryPool pool, CUdeviceptr block, int64_t size)
{
    CUresult rc = api.MemFreeAsync(block, NULL);
    if (rc != CUDA_SUCCESS) {
        gts__cuda_free_failed(d, "cuMemFreeAsync", rc, (void *)(uintptr_t)block);
        return;
    }
    /* The pool's use may drop only once the free has run in stream order
     * (a GPU's driver does so): the block counts as unused already. */
    int64_t limit = gts_cache_limit();
    int64_t used = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    int64_t unused = pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) -
                     (used > size ? used - size : 0);
    if (limit == 0 || unused > limit)
        pool_trim(d, pool, limit);
}

static cuda_device *pool_owner(gts__cache *cache)
{
    return (cuda_device *)((char *)cache - offsetof(cuda_device, pool_cache));
}

static void pool_cache_trim(gts__cache *cache, int64_t keep)
{
    cuda_device *d = pool_owner(cache);
    CUmemoryPool pool = atomic_load(&d->pool);
    if (pool && !gts__cuda_enter(d, NULL)) {
        pool_trim(d, pool, keep);
        leave();
    }
}

static void pool_cache_stats(gts__cache *cache, gts__cache_stats *out)
{
    cuda_device *d = pool_owner(cache);
    CUmemoryPool pool = atomic_load(&d->pool);
    if (!pool || gts__cuda_enter(d, NULL))
        return;
    out->bytes += pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) -
                  pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    leave();
    out->hits += atomic_load(&d->hits);
    out->misses += atomic_load(&d->misses);
}

/* The block cache's side (device_pool.h): cuMemFree, and events as fences. */
/* cuMemFree of a block of `d` (outside the context); a failure is
 * reported, since a free cannot return one. */
void gts__cuda_free_block(cuda_device *d, void *block)
{
    if (gts__cuda_enter(d, NULL))
        return;
    CUresult rc = api.MemFree(dptr(block));
    leave();
    if (rc != CUDA_SUCCESS)
        gts__cuda_free_failed(d, "cuMemFree", rc, block);
}

static void block_release(gts__pool *pool, void *block, int64_t size)
{
    (void)size;
    gts__cuda_free_block(pool->ctx, block);
}

static bool block_fence(gts__pool *pool, void **fence)
{
    cuda_device *d = pool->ctx;
    CUevent event = NULL;
    if (gts__cuda_enter(d, NULL))
        return false;
    bool made = api.EventCreate(&event, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
    if (made && api.EventRecord(event, NULL) != CUDA_SUCCESS) {
        api.EventDestroy(event);
        made = false;
    }
    leave();
    *fence = made ? event : NULL;
    return made;
}

static bool block_passed(gts__pool *pool, void *fence)
{
    (void)pool;
    return api.EventQuery(fence) == CUDA_SUCCESS;
}

static void block_drop(gts__pool *pool, void *fence)
{
    (void)pool;
    api.EventSynchronize(fence);
    api.EventDestroy(fence);
}

static const gts__pool_memory block_memory = {block_release, block_fence, block_passed,
                                              block_drop};

void gts__cuda_init_caches(cuda_device *d)
{
    atomic_init(&d->pool, NULL);
    d->pool_cache = (gts__cache){
        .kind = GTS__CACHE_DEVICE, .trim = pool_cache_trim, .stats = pool_cache_stats};
    d->blocks = (gts__pool){
        .cache = {.kind = GTS__CACHE_DEVICE, .trim = gts__pool_trim, .stats = gts__pool_stats},
        .memory = &block_memory, .ctx = d, .classes = true};
    pthread_mutex_init(&d->blocks.lock, NULL);
}

/* A block of device memory (the caller is in the context). */
static int block_alloc(cuda_device *d, int64_t size, CUdeviceptr *out, gts_error *err)
{
    CUmemoryPool pool = device_pool(d);
    if (pool)
        return pool_alloc(d, pool, size, out, err);
    void *cached;
    if (gts__pool_take(&d->blocks, size, &cached)) {
        *out = dptr(cached);
        return GTS_OK;
    }
    size_t bytes = (size_t)gts__pool_size(&d->blocks, size);
    CUresult rc = api.MemAlloc(out, bytes);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        gts__pool_trim(&d->blocks.cache, 0);
        rc = api.MemAlloc(out, bytes);
    }
    return check(d, "cuMemAlloc", rc, err);
}

/* Gives a block back to the pool it came from (outside the context). */
static void block_free(cuda_device *d, CUdeviceptr block, int64_t size)
{
    CUmemoryPool pool = atomic_load_explicit(&d->pool, memory_order_acquire);
    if (!pool) {
        gts__pool_put(&d->blocks, (void *)(uintptr_t)block, size);
    } else if (!gts__cuda_enter(d, NULL)) {
        pool_free(d, pool, block, size);
        leave();
    }
}

/* Device or managed memory, zeroed on request: one allocation path. */
static int device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, bool managed,
                        void **out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = size_check(size, managed ? "managed memory" : "a CUDA device", err);
    if (rc || (rc = gts__cuda_enter(d, err)))
        return rc;
    CUdeviceptr block = 0;
    rc = managed ? check(d, "cuMemAllocManaged",
                         api.MemAllocManaged(&block, (size_t)(size ? size : 1),
                                             CU_MEM_ATTACH_GLOBAL),
                         err)
                 : block_alloc(d, size, &block, err);
    bool allocated = !rc;
    if (!rc && (flags & GTS_ALLOC_ZERO) && size > 0) {
        rc = check(d, "cuMemsetD8", api.MemsetD8(block, 0, (size_t)size), err);
        if (!rc)
            rc = finish(d, NULL, err);
        if (rc && managed)
            api.MemFree(block);
    }
    leave();
    if (rc && allocated && !managed)
        block_free(d, block, size);
    if (!rc)
        *out = (void *)(uintptr_t)block;
    return rc;
}

static int memory_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    return device_alloc(dev, size, flags, false, out, err);
}

static void memory_free(const gts_device_ops *dev, void *block, int64_t size)
{
    block_free(device_of(dev), dptr(block), size);
}

static void managed_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)size;
    gts__cuda_free_block(device_of(dev), block);
}

static int managed_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                         gts_error *err)
{
    return device_alloc(dev, size, flags, true, out, err);
}

/* Pinned memory is host memory of whole pages that cuMemHostRegister
 * page-locks (0.2 ms for 1 MiB and 2.5 ms for 64 MiB on an H100, against
 * 0.73 and 27 ms for cuMemHostAlloc), kept in a gts__pool when freed and
 * reused at once: the contract of device.h has every transfer that reads
 * or writes it synchronised before it is freed. */
static void pinned_release(gts__pool *pool, void *block, int64_t size)
{
    cuda_device *d = pool->ctx;
    if (gts__cuda_enter(d, NULL))
        return; /* kept: host memory the GPU may reach must not be reused */
    CUresult rc = api.MemHostUnregister(block);
    leave();
    if (rc != CUDA_SUCCESS)
        gts__cuda_free_failed(d, "cuMemHostUnregister", rc, block);
    else
        gts__host_pages_free(block, size);
}

static const gts__pool_memory pinned_memory = {.release = pinned_release};
static gts__pool pinned_pool =
    GTS__POOL_INIT(GTS__CACHE_PINNED, &pinned_memory, &gts__cuda_devices[0], true);

static int pinned_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = size_check(size, "pinned host memory", err);
    if (rc)
        return rc;
    if (gts__pool_take(&pinned_pool, size, out)) {
        if (flags & GTS_ALLOC_ZERO)
            gts__zero(*out, size);
        return GTS_OK;
    }
    int64_t bytes = gts__pool_size(&pinned_pool, size);
    void *block;
    if ((rc = gts__host_pages_alloc(bytes, flags & GTS_ALLOC_ZERO, &block, err)))
        return rc;
    if (!(rc = gts__cuda_enter(d, err))) {
        rc = check(d, "cuMemHostRegister",
                   api.MemHostRegister(block, (size_t)bytes, CU_MEMHOSTREGISTER_PORTABLE), err);
        leave();
    }
    if (rc)
        gts__host_pages_free(block, bytes);
    else
        *out = block;
    return rc;
}

static void pinned_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)dev;
    gts__pool_put(&pinned_pool, block, size);
}


void gts__cuda_memory_ops(gts_device_ops *memory, gts_device_ops *managed, gts_device_ops *pinned)
{
    if (memory) {
        memory->alloc = memory_alloc;
        memory->free = memory_free;
    }
    if (managed) {
        managed->alloc = managed_alloc;
        managed->free = managed_free;
    }
    if (pinned) {
        pinned->alloc = pinned_alloc;
        pinned->free = pinned_free;
    }
}
