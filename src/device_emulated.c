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
 * run the host kernels on its own memory, as a device runs its kernels; its
 * built-in stencils run the GPU's threads (stencil_kernels.h) one after the
 * other, so that the GPU's code is what its tests run.
 *
 * Freed blocks go to a pool (device_pool.h), as a GPU's do, and are reused
 * for allocations of exactly their size. A cached block is not live: it
 * leaves the list of live blocks, so an address in it is refused as one
 * in a freed block is, and a reused block reads as garbage again.
 *
 * Its streams are asynchronous (device_emulated_streams.h): work queued on
 * one runs later on a thread of its own, after a random delay, so that a
 * missing wait gives wrong values here as it would on a GPU. Its default
 * stream runs every operation before returning. */
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
#include "device_emulated_streams.h"
#include "device_host.h"
#include "device_pool.h"
#include "halo_region.h"
#include "kernels_private.h"
#include "stencil_kernels.h"
#include "strided_range.h"

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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *blocks;   /* live blocks, newest first */
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

static int check_stream(gts_stream s, gts_error *err)
{
    return gts__emu_stream_check(s, err);
}

/* ---- work on a stream ---------------------------------------------------------------
 * On a stream of its own (device_emulated_streams.h) the work is queued,
 * with its host addresses translated and its arrays copied, and runs later
 * on the stream's worker; on the default stream it runs now. */

typedef struct move_work {
    gts__emu_work base;
    void *dst;
    const void *src;
    int64_t bytes;
} move_work;

static void run_move(gts__emu_work *work)
{
    move_work *m = (move_work *)work;
    memmove(m->dst, m->src, (size_t)m->bytes);
    free(m);
}

/* A strided fill (src NULL) or copy of `ndim` dimensions. */
typedef struct strided_work {
    gts__emu_work base;
    char *dst;
    const char *src;
    int ndim;
    int64_t itemsize;
    int64_t shape[GTS_MAX_NDIM], dst_strides[GTS_MAX_NDIM], src_strides[GTS_MAX_NDIM];
    unsigned char item[16];
} strided_work;

/* A kernel queued was checked before: failing now is a bug here. */
static void kernel_failed(const char *what, const gts_error *e)
{
    fprintf(stderr, "gtstore: the emulated device's %s failed on a stream: %s\n", what,
            e->message);
    abort();
}

static void run_strided(gts__emu_work *work)
{
    strided_work *w = (strided_work *)work;
    gts_error e;
    if (!w->src && gts_fill(w->dst, w->ndim, w->shape, w->dst_strides, w->itemsize, w->item, &e))
        kernel_failed("fill", &e);
    if (w->src && gts_copy(w->dst, w->dst_strides, w->src, w->src_strides, w->ndim, w->shape,
                           w->itemsize, &e))
        kernel_failed("copy", &e);
    free(w);
}

/* Contiguous bytes, host addresses: now, or queued on `s`. */
static int move(gts_stream s, void *dst, const void *src, int64_t bytes, gts_error *err)
{
    if (bytes <= 0)
        return GTS_OK;
    if (!s) {
        memmove(dst, src, (size_t)bytes);
        return GTS_OK;
    }
    move_work *m = malloc(sizeof *m);
    if (!m)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot queue a copy");
    *m = (move_work){{NULL, run_move}, dst, src, bytes};
    gts__emu_submit(s, &m->base);
    return GTS_OK;
}

/* Whether the kernels accept the array as it is (so that it can be queued
 * and run later): ndim, itemsize and strides as gts_fill and gts_copy check
 * them, and at least one element (`valid` from gts__strided_range). An
 * array that is not runs on the caller's thread after the stream drains,
 * so that the kernel's own error is returned. */
static bool queueable(int ndim, int64_t itemsize, bool valid)
{
    return valid && ndim >= 0 && ndim <= GTS_MAX_NDIM &&
           (itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 || itemsize == 16);
}

static int queue_strided(gts_stream s, char *dst, const int64_t *dst_strides, const char *src,
                         const int64_t *src_strides, int ndim, const int64_t *shape,
                         int64_t itemsize, const void *item, gts_error *err)
{
    strided_work *w = malloc(sizeof *w);
    if (!w)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot queue a kernel");
    w->base.run = run_strided;
    w->dst = dst;
    w->src = src;
    w->ndim = ndim;
    w->itemsize = itemsize;
    size_t dims = (size_t)ndim * sizeof *shape;
    if (dims) {
        memcpy(w->shape, shape, dims);
        memcpy(w->dst_strides, dst_strides, dims);
        if (src)
            memcpy(w->src_strides, src_strides, dims);
    }
    if (item)
        memcpy(w->item, item, (size_t)itemsize);
    gts__emu_submit(s, &w->base);
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
    if ((rc = move(s, host, src, bytes, err)))
        return rc;
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
    if ((rc = move(s, dst, host, bytes, err)))
        return rc;
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
    if ((rc = move(s, host_dst, host_src, bytes, err)))
        return rc;
    count(&within, &within_bytes, bytes);
    return GTS_OK;
}

static int emu_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                    const int64_t *strides, int64_t itemsize, const void *item, gts_stream s,
                    gts_error *err)
{
    bool valid;
    int64_t low, high;
    char *host = data; /* untranslated only where the kernel refuses or touches nothing */
    int rc = check_stream(s, err);
    if (!rc)
        rc = gts__strided_range(ndim, shape, strides, itemsize, &valid, &low, &high, err);
    if (!rc && valid && data)
        rc = translate("data", data, low, high, &host, err);
    if (!rc && s && queueable(ndim, itemsize, valid && data && item))
        rc = queue_strided(s, host, strides, NULL, NULL, ndim, shape, itemsize, item, err);
    else if (!rc && !(s && (rc = gts__emu_synchronize(dev, s, err))))
        rc = gts_fill(host, ndim, shape, strides, itemsize, item, err);
    if (!rc)
        count(&fills, NULL, 0);
    return rc;
}

/* No destination element written twice (gts_copy refuses a stride 0
 * over more than one index). */
static bool distinct_elements(int ndim, const int64_t *shape, const int64_t *strides)
{
    for (int d = 0; d < ndim; ++d)
        if (shape[d] > 1 && strides[d] == 0)
            return false;
    return true;
}

static int emu_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                    const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                    int64_t itemsize, gts_stream s, gts_error *err)
{
    bool valid = false;
    int64_t low, high;
    char *host_dst = dst; /* untranslated only where the kernel refuses or touches nothing */
    const char *host_src = src;
    int rc = check_stream(s, err);
    if (!rc)
        rc = gts__strided_range(ndim, shape, dst_strides, itemsize, &valid, &low, &high, err);
    if (!rc && valid && dst)
        rc = translate("dst", dst, low, high, &host_dst, err);
    bool dst_valid = valid;
    if (!rc)
        rc = gts__strided_range(ndim, shape, src_strides, itemsize, &valid, &low, &high, err);
    char *translated;
    bool queue = dst_valid && valid && dst && src && distinct_elements(ndim, shape, dst_strides);
    if (!rc && valid && src && !(rc = translate("src", src, low, high, &translated, err)))
        host_src = translated;
    if (!rc && s && queueable(ndim, itemsize, queue))
        rc = queue_strided(s, host_dst, dst_strides, host_src, src_strides, ndim, shape,
                           itemsize, NULL, err);
    else if (!rc && !(s && (rc = gts__emu_synchronize(dev, s, err))))
        rc = gts_copy(host_dst, dst_strides, host_src, src_strides, ndim, shape, itemsize, err);
    if (!rc)
        count(&copies, NULL, 0);
    return rc;
}

/* A negation of packed values (a turned vector component in a message in
 * its memory): the host's on its own memory, as a GPU runs its kernel,
 * queued on a stream as the other work. */
typedef struct negate_work {
    gts__emu_work base;
    char *data;
    int64_t bytes;
    gts_dtype dtype;
} negate_work;

static void run_negate(gts__emu_work *work)
{
    negate_work *n = (negate_work *)work;
    gts__halo_negate(n->data, n->bytes, n->dtype);
    free(n);
}

static int emu_negate(const gts_device_ops *dev, void *data, int64_t bytes, gts_dtype dtype,
                      gts_stream s, gts_error *err)
{
    (void)dev;
    char *host;
    int rc = check_stream(s, err);
    if (!rc)
        rc = translate("data", data, 0, bytes, &host, err);
    if (rc || bytes <= 0)
        return rc;
    if (!s) {
        gts__halo_negate(host, bytes, dtype);
        return GTS_OK;
    }
    negate_work *n = malloc(sizeof *n);
    if (!n)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot queue a negation");
    *n = (negate_work){{NULL, run_negate}, host, bytes, dtype};
    gts__emu_submit(s, &n->base);
    return GTS_OK;
}

/* A built-in stencil: every thread of the GPU's kernel in turn, over the
 * host addresses of its fields, queued on a stream as the other work. */
typedef struct stencil_work {
    gts__emu_work base;
    int stencil;
    gts_kernel_stencil args;
} stencil_work;

static void run_stencil_threads(int stencil, const gts_kernel_stencil *k)
{
    gts_kernel_thread all = {0, 1};
    switch (stencil) {
    case 0: gts_kernel_copy_stencil_thread(k, all); break;
    case 1: gts_kernel_laplacian_thread(k, all); break;
    case 2: gts_kernel_hdiff_thread(k, all); break;
    default: gts_kernel_tridiagonal_thread(k, all); break;
    }
}

static void run_stencil(gts__emu_work *work)
{
    stencil_work *w = (stencil_work *)work;
    run_stencil_threads(w->stencil, &w->args);
    free(w);
}

/* The launch with host addresses: every byte its threads touch checked to
 * lie in one live block (its managed memory, host memory, is not its
 * own: its kernels do not reach it). */
static int translate_stencil(const gts_kernel_stencil *args, const char *const *names,
                             gts_kernel_stencil *k, gts_error *err)
{
    *k = *args;
    int rc = GTS_OK;
    char *host;
    for (int f = 0; f < k->nfields && !rc; ++f) {
        long long low, high;
        gts_kernel_stencil_span(k, f, &low, &high);
        if (!(rc = translate(names[f], (void *)(uintptr_t)k->origin[f], low, high, &host, err)))
            k->origin[f] = (unsigned long long)(uintptr_t)host;
    }
    if (!rc && k->scratch) {
        long long bytes = k->count * k->domain[2] * (long long)sizeof(double);
        if (!(rc = translate("scratch", (void *)(uintptr_t)k->scratch, 0, bytes, &host, err)))
            k->scratch = (unsigned long long)(uintptr_t)host;
    }
    return rc;
}

static int emu_stencil(const gts_device_ops *dev, int stencil, const gts_kernel_stencil *args,
                       const char *const *names, gts_stream s, gts_error *err)
{
    (void)dev;
    gts_kernel_stencil k;
    int rc = check_stream(s, err);
    if (!rc && (stencil < 0 || stencil > 3))
        rc = gts_error_set(err, GTS_EINVAL, "stencil: %d is no built-in stencil", stencil);
    if (!rc)
        rc = translate_stencil(args, names, &k, err);
    if (rc)
        return rc;
    if (!s) {
        run_stencil_threads(stencil, &k);
        return GTS_OK;
    }
    stencil_work *w = malloc(sizeof *w);
    if (!w)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot queue a stencil");
    *w = (stencil_work){{NULL, run_stencil}, stencil, k};
    gts__emu_submit(s, &w->base);
    return GTS_OK;
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
    .synchronize = gts__emu_synchronize,
    .stream_create = gts__emu_stream_create,
    .stream_destroy = gts__emu_stream_destroy,
    .kind = GTS_MEMORY_GPU,
    .engine = GTS_ENGINE_NUMPY,
    .host_alias = emu_host_alias,
    .event_create = gts__emu_event_create,
    .event_destroy = gts__emu_event_destroy,
    .event_record = gts__emu_event_record,
    .stream_wait_event = gts__emu_stream_wait_event,
    .event_synchronize = gts__emu_event_synchronize,
    .event_query = gts__emu_event_query,
    .negate = emu_negate,
    .stencil = emu_stencil,
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
