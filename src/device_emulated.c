/* The emulated device: a device for tests, in every build.
 *
 * Its memory is host memory of its own (one 64-byte aligned heap block per
 * allocation), but the addresses it hands out are not host addresses: they
 * are the block's host address plus BIAS, a power of two far above any user
 * address, so that code which dereferences device memory as host memory
 * faults at once instead of silently working. BIAS is a multiple of every
 * alignment a storage asks for, so device addresses keep the alignment of
 * the blocks behind them. Every address it is given is checked to lie in one
 * of its live blocks (GTS_EINVAL otherwise: a host address, a freed block,
 * bytes past the end), and it counts what it does. Its strided fill and copy
 * run the host kernels on its own memory, as a device runs its kernels.
 *
 * Freed blocks go to a pool (device_pool.h), as a GPU's do, and are reused
 * for allocations of exactly their size. A cached block is not live: it
 * leaves the list of live blocks, so an address in it is refused as one
 * in a freed block is, and a reused block reads as garbage again. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include "gtstore/device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/geometry.h"
#include "gtstore/kernels.h"
#include "device_emulated.h"
#include "device_host.h"
#include "device_pool.h"
#include "halo_region.h"
#include "internal.h"

#if UINTPTR_MAX > 0xffffffffu
#define BIAS ((uintptr_t)1 << 52)
#else
#define BIAS ((uintptr_t)0) /* no room: the checks of every address remain */
#endif

#define BLOCK_MAGIC 0x67747320656d7521ull  /* "gts emu!" */

typedef struct block {
    uint64_t magic;
    struct block *next;
    char *host;   /* the memory */
    int64_t size; /* usable bytes */
} block;

/* A stream is known by its address in the registry of live streams: a
 * stream given to an operation is looked up there, never dereferenced, so
 * that garbage or a destroyed stream is an error, not a crash. */
typedef struct stream {
    struct stream *next;
} stream;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *blocks;   /* live blocks, newest first */
static stream *streams; /* live streams, newest first */
static int64_t live_blocks, live_bytes;

static atomic_llong to_device, to_device_bytes, to_host, to_host_bytes, within, within_bytes;
static atomic_llong fills, copies, allocs, frees;
/* its pinned host memory (device.c) */
static atomic_llong pinned_allocs, pinned_frees, pinned_live_blocks, pinned_live_bytes;

static void count(atomic_llong *calls, atomic_llong *bytes, int64_t n)
{
    atomic_fetch_add_explicit(calls, 1, memory_order_relaxed);
    if (bytes)
        atomic_fetch_add_explicit(bytes, n, memory_order_relaxed);
}

static uintptr_t device_address(const block *b)
{
    return (uintptr_t)b->host + BIAS;
}

/* The live block holding device bytes [first, first + bytes) (at least one
 * byte: an empty range is in any block), or NULL. Caller holds the lock. */
static block *find(uintptr_t first, int64_t bytes)
{
    for (block *b = blocks; b; b = b->next) {
        uintptr_t base = device_address(b);
        if (first >= base && first - base <= (uint64_t)b->size &&
            (uint64_t)bytes <= (uint64_t)b->size - (first - base))
            return b;
    }
    return NULL;
}

/* The host address of device bytes [address + low, address + high) of one
 * live block, in *host; GTS_EINVAL naming `name` if they are not. An empty
 * range touches nothing and passes. */
static int translate(const char *name, const void *address, int64_t low, int64_t high,
                     char **host, gts_error *err)
{
    uintptr_t a = (uintptr_t)address, first = a + (uintptr_t)low;
    if (high == low) { /* no bytes: any address will do, none is touched */
        *host = NULL;
        return GTS_OK;
    }
    pthread_mutex_lock(&lock);
    block *b = find(first, high - low);
    if (b)
        *host = b->host + (first - device_address(b)) - low;
    pthread_mutex_unlock(&lock);
    if (!b)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: %p (bytes %lld to %lld from it) is not memory of the emulated "
                             "device",
                             name, address, (long long)low, (long long)high);
    return GTS_OK;
}

/* Whether a host address given to a transfer is in fact device memory. */
static int check_host(const char *name, const void *address, int64_t bytes, gts_error *err)
{
    if (bytes == 0)
        return GTS_OK;
    pthread_mutex_lock(&lock);
    block *b = find((uintptr_t)address, 1);
    pthread_mutex_unlock(&lock);
    if (b)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: %p is emulated device memory, where host memory is expected",
                             name, address);
    return GTS_OK;
}

/* The link that points at live stream `s` (compared by address), or NULL.
 * Caller holds the lock. */
static stream **find_stream(gts_stream s)
{
    for (stream **link = &streams; *link; link = &(*link)->next)
        if ((void *)*link == s)
            return link;
    return NULL;
}

static int check_stream(gts_stream s, gts_error *err)
{
    if (!s)
        return GTS_OK;
    pthread_mutex_lock(&lock);
    bool live = find_stream(s) != NULL;
    pthread_mutex_unlock(&lock);
    if (!live)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: %p is not a live stream of the emulated device", s);
    return GTS_OK;
}


/* ---- the operations ----------------------------------------------------------- */

/* The pool's release: a cached block freed for good. */
static void emu_release(gts__pool *pool, void *handle, int64_t size)
{
    (void)pool, (void)size;
    block *b = handle;
    b->magic = 0;
    free(b->host);
    free(b);
}

static const gts__pool_memory emu_memory = {.release = emu_release};
static gts__pool emu_pool = GTS__POOL_INIT(GTS__CACHE_DEVICE, &emu_memory, NULL, false);

/* A new block of `size` bytes, not yet live. */
static int emu_new_block(int64_t size, block **out, gts_error *err)
{
    block *b = malloc(sizeof *b);
    void *memory = NULL;
    if (!b || posix_memalign(&memory, 64, (size_t)(size ? size : 1))) {
        free(b);
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot allocate %lld bytes",
                             (long long)size);
    }
    b->host = memory;
    b->size = size;
    *out = b;
    return GTS_OK;
}

static int emu_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                     gts_error *err)
{
    (void)dev;
    if ((uint64_t)size > SIZE_MAX - 64 || (BIAS && (int64_t)(BIAS / 2) < size))
        return gts_error_set(err, GTS_EOVERFLOW,
                             "size: %lld bytes is more than the emulated device holds",
                             (long long)size);
    block *b = NULL;
    void *cached;
    int rc = GTS_OK;
    if (gts__pool_take(&emu_pool, size, &cached))
        b = cached;
    else if ((rc = emu_new_block(size, &b, err)))
        return rc;
    if (flags & GTS_ALLOC_ZERO)
        memset(b->host, 0, (size_t)size);
    else
        memset(b->host, 0xcd, (size_t)size); /* what is never written reads as garbage */
    b->magic = BLOCK_MAGIC;
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    ++live_blocks;
    live_bytes += size;
    pthread_mutex_unlock(&lock);
    count(&allocs, NULL, 0);
    *out = (void *)device_address(b);
    return GTS_OK;
}

static void emu_free(const gts_device_ops *dev, void *address, int64_t size)
{
    (void)dev;
    block *found = NULL;
    pthread_mutex_lock(&lock);
    for (block **p = &blocks; *p; p = &(*p)->next) {
        if (device_address(*p) == (uintptr_t)address && (*p)->magic == BLOCK_MAGIC) {
            found = *p;
            *p = found->next;
            --live_blocks;
            live_bytes -= found->size;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (!found || found->size != size) {
        /* A double free or a foreign pointer: memory is corrupt from here. */
        fprintf(stderr,
                "gtstore: the emulated device was asked to free %p (%lld bytes), which is "
                "not one of its live blocks\n",
                address, (long long)size);
        abort();
    }
    count(&frees, NULL, 0);
    found->magic = 0;
    gts__pool_put(&emu_pool, found, size);
}

static int emu_copy_to_device(const gts_device_ops *dev, void *dst, const void *src,
                              int64_t bytes, gts_stream s, gts_error *err)
{
    (void)dev;
    char *host;
    int rc = check_stream(s, err);
    if (!rc)
        rc = check_host("src", src, bytes, err);
    if (!rc)
        rc = translate("dst", dst, 0, bytes, &host, err);
    if (rc)
        return rc;
    if (bytes > 0)
        memcpy(host, src, (size_t)bytes);
    count(&to_device, &to_device_bytes, bytes);
    return GTS_OK;
}

static int emu_copy_to_host(const gts_device_ops *dev, void *dst, const void *src,
                            int64_t bytes, gts_stream s, gts_error *err)
{
    (void)dev;
    char *host;
    int rc = check_stream(s, err);
    if (!rc)
        rc = check_host("dst", dst, bytes, err);
    if (!rc)
        rc = translate("src", src, 0, bytes, &host, err);
    if (rc)
        return rc;
    if (bytes > 0)
        memcpy(dst, host, (size_t)bytes);
    count(&to_host, &to_host_bytes, bytes);
    return GTS_OK;
}

static int emu_copy_within(const gts_device_ops *dev, void *dst, const void *src,
                           int64_t bytes, gts_stream s, gts_error *err)
{
    (void)dev;
    char *host_dst, *host_src;
    int rc = check_stream(s, err);
    if (!rc)
        rc = translate("dst", dst, 0, bytes, &host_dst, err);
    if (!rc)
        rc = translate("src", src, 0, bytes, &host_src, err);
    if (rc)
        return rc;
    if (bytes > 0)
        memmove(host_dst, host_src, (size_t)bytes);
    count(&within, &within_bytes, bytes);
    return GTS_OK;
}

static int emu_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                    const int64_t *strides, int64_t itemsize, const void *item, gts_stream s,
                    gts_error *err)
{
    (void)dev;
    bool valid;
    int64_t low, high;
    char *host = data; /* untranslated only where the kernel refuses or touches nothing */
    int rc = check_stream(s, err);
    if (!rc)
        rc = gts__strided_range(ndim, shape, strides, itemsize, &valid, &low, &high, err);
    if (!rc && valid && data)
        rc = translate("data", data, low, high, &host, err);
    if (!rc)
        rc = gts_fill(host, ndim, shape, strides, itemsize, item, err);
    if (!rc)
        count(&fills, NULL, 0);
    return rc;
}

static int emu_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                    const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                    int64_t itemsize, gts_stream s, gts_error *err)
{
    (void)dev;
    bool valid;
    int64_t low, high;
    char *host_dst = dst; /* untranslated only where the kernel refuses or touches nothing */
    const char *host_src = src;
    int rc = check_stream(s, err);
    if (!rc)
        rc = gts__strided_range(ndim, shape, dst_strides, itemsize, &valid, &low, &high, err);
    if (!rc && valid && dst)
        rc = translate("dst", dst, low, high, &host_dst, err);
    if (!rc)
        rc = gts__strided_range(ndim, shape, src_strides, itemsize, &valid, &low, &high, err);
    char *translated;
    if (!rc && valid && src && !(rc = translate("src", src, low, high, &translated, err)))
        host_src = translated;
    if (!rc)
        rc = gts_copy(host_dst, dst_strides, host_src, src_strides, ndim, shape, itemsize, err);
    if (!rc)
        count(&copies, NULL, 0);
    return rc;
}

static int emu_synchronize(const gts_device_ops *dev, gts_stream s, gts_error *err)
{
    (void)dev;
    return check_stream(s, err); /* every operation completed when it returned */
}

static int emu_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err)
{
    (void)dev;
    stream *s = malloc(sizeof *s);
    if (!s)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot create a stream");
    pthread_mutex_lock(&lock);
    s->next = streams;
    streams = s;
    pthread_mutex_unlock(&lock);
    *out = s;
    return GTS_OK;
}

static void emu_stream_destroy(const gts_device_ops *dev, gts_stream s)
{
    (void)dev;
    pthread_mutex_lock(&lock);
    stream **link = find_stream(s), *found = link ? *link : NULL;
    if (found)
        *link = found->next;
    pthread_mutex_unlock(&lock);
    if (!found) { /* no error channel: a caller's bug, stopped where it is */
        fprintf(stderr, "gtstore: the emulated device was asked to destroy %p, which is not one "
                        "of its live streams\n", s);
        abort();
    }
    free(found);
}

/* A negation of packed values (a turned vector component in a message in
 * its memory): the host's on its own memory, as a GPU runs its kernel. */
static int emu_negate(const gts_device_ops *dev, void *data, int64_t bytes, gts_dtype dtype,
                      gts_stream s, gts_error *err)
{
    (void)dev;
    char *host;
    int rc = check_stream(s, err);
    if (!rc)
        rc = translate("data", data, 0, bytes, &host, err);
    if (!rc && bytes > 0)
        gts__halo_negate(host, bytes, dtype);
    return rc;
}

static void *emu_host_alias(const gts_device_ops *dev, const void *address)
{
    (void)dev;
    return gts_device_emulated_host_address(address);
}

const gts_device_ops gts__device_emulated = {
    .id = {GTS_DL_EXT_DEV, 0},
    .name = "emulated",
    .host_accessible = false,
    .ctx = NULL,
    .alloc = emu_alloc,
    .free = emu_free,
    .copy_to_device = emu_copy_to_device,
    .copy_to_host = emu_copy_to_host,
    .copy_within = emu_copy_within,
    .fill = emu_fill,
    .copy = emu_copy,
    .synchronize = emu_synchronize,
    .stream_create = emu_stream_create,
    .stream_destroy = emu_stream_destroy,
    .kind = GTS_MEMORY_GPU,
    .engine = GTS_ENGINE_NUMPY,
    .host_alias = emu_host_alias,
    .negate = emu_negate,
};

/* ---- counts and inspection -------------------------------------------------------- */

static int64_t load(atomic_llong *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

void gts_device_emulated_counts(gts_transfer_counts *out)
{
    out->to_device = load(&to_device);
    out->to_device_bytes = load(&to_device_bytes);
    out->to_host = load(&to_host);
    out->to_host_bytes = load(&to_host_bytes);
    out->within = load(&within);
    out->within_bytes = load(&within_bytes);
    out->fills = load(&fills);
    out->copies = load(&copies);
    out->allocs = load(&allocs);
    out->frees = load(&frees);
    pthread_mutex_lock(&lock);
    out->live_blocks = live_blocks;
    out->live_bytes = live_bytes;
    pthread_mutex_unlock(&lock);
}

void gts_device_emulated_reset_counts(void)
{
    atomic_llong *all[] = {&to_device, &to_device_bytes, &to_host, &to_host_bytes, &within,
                           &within_bytes, &fills, &copies, &allocs, &frees, &pinned_allocs,
                           &pinned_frees};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
        atomic_store_explicit(all[i], 0, memory_order_relaxed);
}

void gts_device_emulated_pinned_counts(gts_pinned_counts *out)
{
    out->allocs = load(&pinned_allocs);
    out->frees = load(&pinned_frees);
    out->live_blocks = load(&pinned_live_blocks);
    out->live_bytes = load(&pinned_live_bytes);
}

void *gts_device_emulated_host_address(const void *address)
{
    char *host = NULL;
    pthread_mutex_lock(&lock);
    block *b = find((uintptr_t)address, 0);
    if (b)
        host = b->host + ((uintptr_t)address - device_address(b));
    pthread_mutex_unlock(&lock);
    return host;
}

const gts_device_ops *gts_device_emulated(void)
{
    return &gts__device_emulated;
}

/* Counts a block of its pinned memory: `size` bytes allocated, or freed. */
static void count_pinned(int64_t size, bool freed)
{
    count(freed ? &pinned_frees : &pinned_allocs, NULL, 0);
    atomic_fetch_add_explicit(&pinned_live_blocks, freed ? -1 : 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pinned_live_bytes, freed ? -size : size, memory_order_relaxed);
}

/* ---- the emulated device's managed and pinned memory -------------------------------- */

/* The emulated device's managed memory, (GTS_DL_EXT_DEV, 1): memory both
 * sides reach, as CUDA managed memory is to a CUDA GPU, so that storages in
 * managed memory are tested where there is no GPU. The emulated device's
 * kernels are the host's, so here its memory is host memory and every
 * operation the host's; unlike the host's, its DLPack device is not the
 * CPU. */
const gts_device_ops gts__emulated_managed = {
    .id = {GTS_DL_EXT_DEV, 1}, .name = "emulated_managed", GTS__HOST_OPERATIONS,
    .kind = GTS_MEMORY_MANAGED, .owner = &gts__device_emulated, .engine = GTS_ENGINE_NUMPY};

/* The emulated device's pinned host memory, (GTS_DL_EXT_DEV, 2): host
 * memory, as CUDA's pinned memory is, in whole pages of its own; its blocks
 * are counted with the emulated device's, so that tests see which buffers
 * are pinned and that they are made once. Freed blocks are cached in size
 * classes, as CUDA's pinned blocks are (device_cuda.c), so that every CI
 * run tests the cache that spares CUDA its milliseconds of pinning. */
static void pinned_release(gts__pool *pool, void *block, int64_t size)
{
    (void)pool;
    gts__host_pages_free(block, size);
}

static const gts__pool_memory pinned_memory = {.release = pinned_release};
static gts__pool pinned_pool = GTS__POOL_INIT(GTS__CACHE_PINNED, &pinned_memory, NULL, true);

static int pinned_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    (void)dev;
    int rc = GTS_OK;
    if (gts__pool_take(&pinned_pool, size, out)) {
        if (flags & GTS_ALLOC_ZERO)
            gts__zero(*out, size);
    } else {
        rc = gts__host_pages_alloc(gts__pool_size(&pinned_pool, size), flags, out, err);
    }
    if (!rc)
        count_pinned(size, false);
    return rc;
}

static void pinned_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)dev;
    gts__pool_put(&pinned_pool, block, size);
    count_pinned(size, true);
}

const gts_device_ops gts__emulated_pinned = {
    .id = {GTS_DL_EXT_DEV, 2}, .name = "emulated_pinned", .alloc = pinned_alloc,
    .free = pinned_free, GTS__HOST_KERNELS, .kind = GTS_MEMORY_PINNED,
    .owner = &gts__device_emulated, .engine = GTS_ENGINE_NUMPY};
