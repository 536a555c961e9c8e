#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "gtstore/kernels.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtstore/geometry.h"
#include "gtstore/layout.h"
#include "kernels_private.h"
#include "strided_plan.h"

#ifdef _OPENMP
#include <omp.h>
#define OMP(directive) _Pragma(directive)
#else
#define OMP(directive)
#endif

/* Bytes per parallel task when one row is split between threads. */
#define ROW_PART_BYTES ((int64_t)256 << 10)
/* Edge of a square tile, in elements, for copies that change the contiguous
 * dimension: two tiles of 8-byte elements stay well inside L1. */
#define TILE 32

/* Contiguous rows up to this many bytes are copied a block of rows per
 * unit of work (copy_short_rows). */
#define SHORT_ROW_BYTES 256

typedef gts__strided_plan plan; /* strided_plan.h */

/* The checks every entry point makes before touching memory: a valid ndim
 * and itemsize, no negative extent, an element count that fits in 64 bits
 * (the plan merges dims by multiplying extents), and the bytes each array
 * spans computable. */
static int check_arrays(int ndim, const int64_t *shape, int64_t itemsize, gts_error *err)
{
    if (ndim < 0 || ndim > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [0, %d]", ndim, GTS_MAX_NDIM);
    if (ndim > 0 && !shape)
        return gts_error_set(err, GTS_EINVAL, "shape: NULL for %d dimensions", ndim);
    if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8 && itemsize != 16)
        return gts_error_set(err, GTS_EINVAL, "itemsize: %lld is not 1, 2, 4, 8 or 16",
                             (long long)itemsize);
    int64_t count = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "shape: negative extent %lld at position %d",
                                 (long long)shape[d], d);
        overflow = overflow || gts_mul_overflow(count, shape[d], &count);
    }
    if (overflow && count != 0)
        return gts_error_set(err, GTS_EOVERFLOW,
                             "shape: the number of elements does not fit in 64 bits");
    return GTS_OK;
}

/* `name` (the data, of a non-empty array) and its strides are usable. */
static int check_memory(const char *name, const void *data, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t itemsize, gts_error *err)
{
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return GTS_OK; /* touches nothing: data and strides are not read */
    if (!data)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL for a non-empty array", name);
    if (ndim > 0 && !strides)
        return gts_error_set(err, GTS_EINVAL, "%s: the strides are NULL", name);
    int64_t low, high;
    return gts_strided_extent(ndim, shape, strides, itemsize, &low, &high, err);
}


/* ---- the parallel walk over units ------------------------------------
 * The outer dims of a plan (all but its last `inner` dims) times `parts`
 * make the units of work; threads take contiguous ranges of units and walk
 * the outer index incrementally. */

typedef struct walker {
    const plan *p;
    int nouter;
    int64_t index[GTS_MAX_NDIM];
    char *dst;
    const char *src;
} walker;

static void walker_seek(walker *w, int64_t outer)
{
    const plan *p = w->p;
    w->dst = p->dst;
    w->src = p->src;
    for (int d = w->nouter - 1; d >= 0; --d) {
        w->index[d] = outer % p->shape[d];
        outer /= p->shape[d];
        w->dst += w->index[d] * p->dst_strides[d];
        if (w->src)
            w->src += w->index[d] * p->src_strides[d];
    }
}

static void walker_next(walker *w)
{
    const plan *p = w->p;
    for (int d = w->nouter - 1; d >= 0; --d) {
        int64_t back = ++w->index[d] < p->shape[d] ? 1 : 1 - p->shape[d];
        w->dst += back * p->dst_strides[d];
        if (w->src)
            w->src += back * p->src_strides[d];
        if (back == 1)
            return;
        w->index[d] = 0;
    }
}

typedef void (*unit_fn)(const plan *p, char *dst, const char *src, int64_t part, int64_t parts);

static int thread_count(int64_t bytes)
{
#ifdef _OPENMP
    if (bytes < GTS_PARALLEL_BYTES)
        return 1;
    int64_t wanted = bytes / (GTS_PARALLEL_BYTES / 2);
    int available = omp_get_max_threads();
    return wanted < available ? (int)wanted : available;
#else
    (void)bytes;
    return 1;
#endif
}

static void walk_range(const plan *p, int nouter, int64_t parts, unit_fn fn, int64_t begin,
                       int64_t end)
{
    if (begin >= end)
        return;
    walker w = {.p = p, .nouter = nouter};
    int64_t outer = begin / parts, part = begin % parts;
    walker_seek(&w, outer);
    for (int64_t unit = begin; unit < end; ++unit) {
        fn(p, w.dst, w.src, part, parts);
        if (++part == parts) {
            part = 0;
            walker_next(&w);
        }
    }
}

static void walk(const plan *p, int inner, int64_t parts, unit_fn fn)
{
    int nouter = p->ndim - inner;
    int64_t outer_count = 1;
    for (int d = 0; d < nouter; ++d)
        outer_count *= p->shape[d];
    int64_t units = outer_count * parts;
    int64_t bytes = units / parts * p->itemsize;
    for (int d = nouter; d < p->ndim; ++d)
        bytes *= p->shape[d];
    int threads = thread_count(bytes);
    if (threads <= 1) {
        walk_range(p, nouter, parts, fn, 0, units);
        return;
    }
    OMP("omp parallel num_threads(threads)")
    {
#ifdef _OPENMP
        int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
#else
        int64_t t = 0, n = 1;
#endif
        walk_range(p, nouter, parts, fn, units * t / n, units * (t + 1) / n);
    }
}

/* A row too long to be one unit is split into parts of ROW_PART_BYTES. */
static int64_t row_parts(const plan *p)
{
    if (p->ndim == 0)
        return 1;
    int64_t rows = 1;
    for (int d = 0; d < p->ndim - 1; ++d)
        rows *= p->shape[d];
    int64_t row_bytes = p->shape[p->ndim - 1] * p->itemsize;
    if (rows >= 64 || row_bytes <= ROW_PART_BYTES)
        return 1;
    return (row_bytes + ROW_PART_BYTES - 1) / ROW_PART_BYTES;
}

/* The element range [*first, *last) of the row that part `part` covers. */
static void row_part(const plan *p, int64_t part, int64_t parts, int64_t *first, int64_t *last)
{
    int64_t n = p->ndim ? p->shape[p->ndim - 1] : 1;
    *first = n * part / parts;
    *last = n * (part + 1) / parts;
}

/* ---- fill ------------------------------------------------------------- */

typedef struct fill_plan {
    plan p;
    unsigned char item[16];
    bool bytes_equal; /* all bytes of the item are the same: memset works */
} fill_plan;

#define FILL_CONTIGUOUS(size)                          \
    for (int64_t i = 0; i < count; ++i)                \
        memcpy(row + i * (size), item, (size));

static void fill_row(const plan *p, char *dst, const char *src, int64_t part, int64_t parts)
{
    (void)src;
    const fill_plan *f = (const fill_plan *)p;
    const unsigned char *item = f->item;
    int64_t first, last, size = p->itemsize;
    row_part(p, part, parts, &first, &last);
    int64_t stride = p->ndim ? p->dst_strides[p->ndim - 1] : size;
    char *row = dst + first * stride;
    int64_t count = last - first;
    if (stride == size && f->bytes_equal) {
        memset(row, item[0], (size_t)(count * size));
    } else if (stride == size) {
        switch (size) {
        case 2: FILL_CONTIGUOUS(2) break;
        case 4: FILL_CONTIGUOUS(4) break;
        case 8: FILL_CONTIGUOUS(8) break;
        default: FILL_CONTIGUOUS(16) break;
        }
    } else {
        for (int64_t i = 0; i < count; ++i)
            memcpy(row + i * stride, item, (size_t)size);
    }
}

int gts_fill(void *data, int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
             const void *item, gts_error *err)
{
    int rc = check_arrays(ndim, shape, itemsize, err);
    if (!rc)
        rc = check_memory("data", data, ndim, shape, strides, itemsize, err);
    if (!rc && !item)
        rc = gts_error_set(err, GTS_EINVAL, "item: NULL");
    if (rc)
        return rc;
    fill_plan f;
    if (!gts__strided_plan_init(&f.p, data, strides, NULL, NULL, ndim, shape, itemsize))
        return GTS_OK;
    memcpy(f.item, item, (size_t)itemsize);
    f.bytes_equal = true;
    for (int64_t i = 1; i < itemsize; ++i)
        f.bytes_equal = f.bytes_equal && f.item[i] == f.item[0];
    walk(&f.p, f.p.ndim ? 1 : 0, row_parts(&f.p), fill_row);
    return GTS_OK;
}

int gts_fill_scalar(void *data, int ndim, const int64_t *shape, const int64_t *strides,
                    gts_dtype dtype, gts_scalar value, gts_error *err)
{
    unsigned char item[16];
    int rc = gts_scalar_store(value, dtype, item, err);
    return rc ? rc : gts_fill(data, ndim, shape, strides, dtype.itemsize, item, err);
}

void gts__zero(void *data, int64_t size)
{
    const int64_t shape[1] = {size}, strides[1] = {1};
    const unsigned char zero = 0;
    gts_fill(data, 1, shape, strides, 1, &zero, NULL);
}

/* ---- copy ------------------------------------------------------------- */

/* A destination that repeats an element (stride 0 over more than one index)
 * would keep whichever write came last, in no defined order across threads;
 * copies refuse it. (Overlap through other strides is not detected.) */
static int check_distinct_elements(int ndim, const int64_t *shape, const int64_t *strides,
                                   gts_error *err)
{
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return GTS_OK;
    for (int d = 0; d < ndim; ++d)
        if (shape[d] > 1 && strides[d] == 0)
            return gts_error_set(err, GTS_EINVAL,
                                 "dst_strides: dimension %d has stride 0 over %lld elements, so "
                                 "the destination's elements overlap",
                                 d, (long long)shape[d]);
    return GTS_OK;
}

/* Rows contiguous in both arrays. */
static void copy_rows(const plan *p, char *dst, const char *src, int64_t part, int64_t parts)
{
    int64_t first, last;
    row_part(p, part, parts, &first, &last);
    memcpy(dst + first * p->itemsize, src + first * p->itemsize,
           (size_t)((last - first) * p->itemsize));
}

/* Rows contiguous in both arrays but short (a halo of 3 points is a row of
 * 24 bytes): a unit is all rows along the next dim, so that the per-unit
 * cost of the walk (the call, the row split, the index update) is paid per
 * block of rows, not per row. */
static void copy_short_rows(const plan *p, char *dst, const char *src, int64_t part,
                            int64_t parts)
{
    (void)part;
    (void)parts;
    int64_t rows = p->shape[p->ndim - 2];
    int64_t dst_stride = p->dst_strides[p->ndim - 2], src_stride = p->src_strides[p->ndim - 2];
    size_t bytes = (size_t)(p->shape[p->ndim - 1] * p->itemsize);
    if (bytes % 8 != 0) {
        for (int64_t i = 0; i < rows; ++i)
            memcpy(dst + i * dst_stride, src + i * src_stride, bytes);
        return;
    }
    /* 8 bytes at a time, inlined: a call to memcpy per 24 bytes costs more
       than the copy */
    for (int64_t i = 0; i < rows; ++i) {
        char *d = dst + i * dst_stride;
        const char *s = src + i * src_stride;
        for (size_t k = 0; k < bytes; k += 8)
            memcpy(d + k, s + k, 8);
    }
}

/* Whether copy_short_rows serves: short rows, and units enough to share
 * between threads where the copy is large enough to run in parallel. */
static bool short_rows(const plan *p)
{
    if (p->ndim < 2 || p->shape[p->ndim - 1] * p->itemsize > SHORT_ROW_BYTES)
        return false;
    int64_t units = 1, bytes = p->itemsize; /* bounded by the arrays' memory */
    for (int d = 0; d < p->ndim; ++d) {
        bytes *= p->shape[d];
        if (d < p->ndim - 2)
            units *= p->shape[d];
    }
    return units >= 64 || bytes < GTS_PARALLEL_BYTES;
}

#define COPY_STRIDED(size)                                                         \
    for (int64_t i = first; i < last; ++i)                                         \
        memcpy(dst + i * dst_stride, src + i * src_stride, (size));

static void copy_strided(const plan *p, char *dst, const char *src, int64_t part, int64_t parts)
{
    int64_t first, last;
    row_part(p, part, parts, &first, &last);
    int64_t dst_stride = p->ndim ? p->dst_strides[p->ndim - 1] : 0;
    int64_t src_stride = p->ndim ? p->src_strides[p->ndim - 1] : 0;
    switch (p->itemsize) {
    case 1: COPY_STRIDED(1) break;
    case 2: COPY_STRIDED(2) break;
    case 4: COPY_STRIDED(4) break;
    case 8: COPY_STRIDED(8) break;
    default: COPY_STRIDED(16) break;
    }
}

/* ---- layout-changing copies --------------------------------------------
 * The two last dims of the plan are (b, a): a is contiguous in dst, b in
 * src. A unit is one band of TILE b-values across all of a, walked in
 * TILE x TILE tiles so that the strided side stays in cache. Inside a tile,
 * W x W blocks are transposed in registers where the CPU allows (SSE2 is
 * part of x86-64; AVX is checked at run time), the edges element by
 * element. One loop, instantiated per block kernel and kind of store. */

typedef struct tile {
    char *dst;
    const char *src;
    int64_t na, b0, b1, dst_b, src_a;
} tile;

typedef void (*tile_fn)(const tile *t);

/* The fields are copied to locals: stores through char * could alias *t,
 * which would make the compiler reload them after every store. FENCE ends
 * the unit (streaming stores are ordered by a fence only). */
#define TILE_KERNEL(name, SIZE, W, BLOCK, STORE, FENCE, ...)                                     \
    __VA_ARGS__ static void name(const tile *t)                                                  \
    {                                                                                            \
        char *const dst = t->dst;                                                                \
        const char *const src = t->src;                                                          \
        const int64_t na = t->na, b0 = t->b0, b1 = t->b1, dst_b = t->dst_b, src_a = t->src_a;    \
        for (int64_t a0 = 0; a0 < na; a0 += TILE) {                                              \
            int64_t a1 = a0 + TILE < na ? a0 + TILE : na;                                        \
            for (int64_t b = b0; b < b1; b += (W)) {                                             \
                char *d = dst + b * dst_b;                                                       \
                const char *s = src + b * (SIZE);                                                \
                int64_t a = a0;                                                                  \
                for (; (W) > 1 && b + (W) <= b1 && a + (W) <= a1; a += (W))                      \
                    BLOCK(d + a * (SIZE), dst_b, s + a * src_a, src_a, STORE);                   \
                for (int64_t k = 0; k < (W) && b + k < b1; ++k)                                  \
                    for (int64_t e = a; e < a1; ++e)                                             \
                        memcpy(d + k * dst_b + e * (SIZE), s + k * (SIZE) + e * src_a, (SIZE));  \
            }                                                                                    \
        }                                                                                        \
        FENCE;                                                                                   \
    }

#define NO_BLOCK(d, dst_b, s, src_a, STORE) (void)0
TILE_KERNEL(tile_1, 1, 1, NO_BLOCK, , (void)0, )
TILE_KERNEL(tile_2, 2, 1, NO_BLOCK, , (void)0, )
TILE_KERNEL(tile_4, 4, 1, NO_BLOCK, , (void)0, )
TILE_KERNEL(tile_8, 8, 1, NO_BLOCK, , (void)0, )
TILE_KERNEL(tile_16, 16, 1, NO_BLOCK, , (void)0, )

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SIMD_TILES 1

/* d[k][j] = s[j][k]: rows of s are src_a apart, rows of d dst_b apart;
 * STORE writes one vector to an address aligned for it (streaming) or
 * not. */
#define BLOCK_4x4_F32(d, dst_b, s, src_a, STORE)                                     \
    do {                                                                             \
        __m128 r0 = _mm_loadu_ps((const float *)(s));                                \
        __m128 r1 = _mm_loadu_ps((const float *)((s) + (src_a)));                    \
        __m128 r2 = _mm_loadu_ps((const float *)((s) + 2 * (src_a)));                \
        __m128 r3 = _mm_loadu_ps((const float *)((s) + 3 * (src_a)));                \
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);                                           \
        STORE((float *)(d), r0);                                                     \
        STORE((float *)((d) + (dst_b)), r1);                                         \
        STORE((float *)((d) + 2 * (dst_b)), r2);                                     \
        STORE((float *)((d) + 3 * (dst_b)), r3);                                     \
    } while (0)

#define BLOCK_2x2_F64(d, dst_b, s, src_a, STORE)                                     \
    do {                                                                             \
        __m128d r0 = _mm_loadu_pd((const double *)(s));                              \
        __m128d r1 = _mm_loadu_pd((const double *)((s) + (src_a)));                  \
        STORE((double *)(d), _mm_unpacklo_pd(r0, r1));                               \
        STORE((double *)((d) + (dst_b)), _mm_unpackhi_pd(r0, r1));                   \
    } while (0)

#define BLOCK_4x4_F64(d, dst_b, s, src_a, STORE)                                       \
    do {                                                                               \
        __m256d r0 = _mm256_loadu_pd((const double *)(s));                             \
        __m256d r1 = _mm256_loadu_pd((const double *)((s) + (src_a)));                 \
        __m256d r2 = _mm256_loadu_pd((const double *)((s) + 2 * (src_a)));             \
        __m256d r3 = _mm256_loadu_pd((const double *)((s) + 3 * (src_a)));             \
        __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);     \
        __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);     \
        STORE((double *)(d), _mm256_permute2f128_pd(t0, t2, 0x20));                   \
        STORE((double *)((d) + (dst_b)), _mm256_permute2f128_pd(t1, t3, 0x20));       \
        STORE((double *)((d) + 2 * (dst_b)), _mm256_permute2f128_pd(t0, t2, 0x31));   \
        STORE((double *)((d) + 3 * (dst_b)), _mm256_permute2f128_pd(t1, t3, 0x31));   \
    } while (0)

/* Units copied with streaming stores, for the tests (a relaxed count: one
 * per band of TILE rows, nothing beside the copy's own traffic). */
static _Atomic int64_t streamed_units;
#define STREAMED                                                                                 \
    (_mm_sfence(), (void)atomic_fetch_add_explicit(&streamed_units, 1, memory_order_relaxed))

/* Bit-exact for any 4- or 8-byte items: loads, shuffles and stores only.
 * The _stream kernels store the blocks with non-temporal stores (see
 * streams_stores): the vector width's alignment is the caller's check. */
#define AVX __attribute__((target("avx")))
TILE_KERNEL(tile_4_sse, 4, 4, BLOCK_4x4_F32, _mm_storeu_ps, (void)0, )
TILE_KERNEL(tile_4_sse_stream, 4, 4, BLOCK_4x4_F32, _mm_stream_ps, STREAMED, )
TILE_KERNEL(tile_8_sse2, 8, 2, BLOCK_2x2_F64, _mm_storeu_pd, (void)0, )
TILE_KERNEL(tile_8_sse2_stream, 8, 2, BLOCK_2x2_F64, _mm_stream_pd, STREAMED, )
TILE_KERNEL(tile_8_avx, 8, 4, BLOCK_4x4_F64, _mm256_storeu_pd, (void)0, AVX)
TILE_KERNEL(tile_8_avx_stream, 8, 4, BLOCK_4x4_F64, _mm256_stream_pd, STREAMED, AVX)

static _Atomic bool avx_allowed = true; /* false: as on a CPU without AVX (the tests) */

static bool use_avx(void)
{
    __builtin_cpu_init();
    return atomic_load_explicit(&avx_allowed, memory_order_relaxed) &&
           __builtin_cpu_supports("avx");
}
#endif

/* A layout-changing copy whose two sides together reach a quarter of the
 * last-level cache (the cache is shared by every core, and the copy
 * competes with what the others hold) streams its stores: they write the
 * destination's lines whole, without first reading them into the cache,
 * and evict none of the source lines the next tiles read. A smaller copy
 * stores through the cache, where a caller that reads the result next
 * finds it. On a 2-core Xeon with a 260 MiB L3, a 64 MiB copy to
 * gt:cpu_ifirst took half the time with streaming stores, a 32 MiB one
 * 1.2x longer. */
static _Atomic int64_t streaming_bytes = -1; /* -1: not decided yet */

void gts__copy_tune_for_testing(int64_t bytes, bool avx)
{
    atomic_store_explicit(&streaming_bytes, bytes, memory_order_relaxed);
#ifdef SIMD_TILES
    atomic_store_explicit(&avx_allowed, avx, memory_order_relaxed);
#else
    (void)avx;
#endif
}

int64_t gts__copy_streamed_units(void)
{
#ifdef SIMD_TILES
    return atomic_load_explicit(&streamed_units, memory_order_relaxed);
#else
    return 0;
#endif
}

#ifdef SIMD_TILES
/* The last-level cache's size; unknown (not reported, or not Linux): a
 * typical L3's, rather than an L2's, which would stream small copies. */
static int64_t cache_bytes(void)
{
    long size = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    size = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return size > 0 ? (int64_t)size : (int64_t)32 << 20;
}

static int64_t streaming_threshold(void)
{
    int64_t bytes = atomic_load_explicit(&streaming_bytes, memory_order_relaxed);
    if (bytes >= 0)
        return bytes;
    bytes = cache_bytes() / 4;
    atomic_store_explicit(&streaming_bytes, bytes, memory_order_relaxed);
    return bytes;
}

/* Whether the blocks of a layout-changing copy of `bytes` per side may be
 * stored streaming: large enough, and every block's row starts at a
 * multiple of the vector width `width` (the destination's address and
 * strides are; a is walked in blocks from 0). */
static bool streams_stores(const plan *p, int64_t bytes, int64_t width)
{
    if (bytes < streaming_threshold() / 2 || (uintptr_t)p->dst % (uintptr_t)width)
        return false;
    for (int d = 0; d < p->ndim - 1; ++d)
        if (p->dst_strides[d] % width)
            return false;
    return true;
}
#endif

static tile_fn tile_kernel(const plan *p, int64_t bytes)
{
    int64_t itemsize = p->itemsize;
#ifdef SIMD_TILES
    if (itemsize == 8 && use_avx())
        return streams_stores(p, bytes, 32) ? tile_8_avx_stream : tile_8_avx;
    if (itemsize == 8)
        return streams_stores(p, bytes, 16) ? tile_8_sse2_stream : tile_8_sse2;
    if (itemsize == 4)
        return streams_stores(p, bytes, 16) ? tile_4_sse_stream : tile_4_sse;
#else
    (void)bytes;
#endif
    switch (itemsize) {
    case 1: return tile_1;
    case 2: return tile_2;
    case 4: return tile_4;
    case 8: return tile_8;
    default: return tile_16;
    }
}

typedef struct transpose_plan {
    plan p;
    tile_fn kernel;
} transpose_plan;

static void copy_transposed(const plan *p, char *dst, const char *src, int64_t band,
                            int64_t bands)
{
    (void)bands;
    int n = p->ndim;
    tile t = {dst, src, p->shape[n - 1], band * TILE, 0, p->dst_strides[n - 2],
              p->src_strides[n - 1]};
    t.b1 = t.b0 + TILE < p->shape[n - 2] ? t.b0 + TILE : p->shape[n - 2];
    ((const transpose_plan *)p)->kernel(&t);
}

/* Moves the dim in which src is contiguous next to the innermost one, if
 * the innermost is contiguous in dst only; returns whether it did. */
static bool make_transposed(plan *p)
{
    int n = p->ndim, inner = n - 1;
    if (n < 2 || p->dst_strides[inner] != p->itemsize || p->src_strides[inner] == p->itemsize)
        return false;
    int b = -1;
    for (int d = 0; d < inner; ++d)
        if (p->src_strides[d] == p->itemsize)
            b = d;
    if (b < 0 || p->shape[b] < 4 || p->shape[inner] < 4)
        return false;
    int64_t shape = p->shape[b], ds = p->dst_strides[b], ss = p->src_strides[b];
    for (int d = b; d < inner - 1; ++d) {
        p->shape[d] = p->shape[d + 1];
        p->dst_strides[d] = p->dst_strides[d + 1];
        p->src_strides[d] = p->src_strides[d + 1];
    }
    p->shape[inner - 1] = shape;
    p->dst_strides[inner - 1] = ds;
    p->src_strides[inner - 1] = ss;
    return true;
}

/* [lowest, highest) byte addresses an array touches (its shape is non-empty
 * and fits in memory: the plan dropped empty arrays). */
static void extent(const char *base, int ndim, const int64_t *shape, const int64_t *strides,
                   int64_t itemsize, uintptr_t *lowest, uintptr_t *highest)
{
    int64_t low, high;
    gts_strided_extent(ndim, shape, strides, itemsize, &low, &high, NULL);
    *lowest = (uintptr_t)base + (uintptr_t)low;
    *highest = (uintptr_t)base + (uintptr_t)high;
}

static int copy_through_temporary(void *dst, const int64_t *dst_strides, const void *src,
                                  const int64_t *src_strides, int ndim, const int64_t *shape,
                                  int64_t itemsize, gts_error *err)
{
    int64_t strides[GTS_MAX_NDIM], bytes = itemsize;
    for (int d = ndim - 1; d >= 0; --d) {
        strides[d] = bytes;
        if (gts_mul_overflow(bytes, shape[d], &bytes))
            return gts_error_set(err, GTS_EOVERFLOW, "copy: the temporary does not fit in memory");
    }
    char *temporary = malloc((size_t)bytes);
    if (!temporary)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot allocate %lld bytes",
                             (long long)bytes);
    int rc = gts_copy(temporary, strides, src, src_strides, ndim, shape, itemsize, err);
    if (!rc)
        rc = gts_copy(dst, dst_strides, temporary, strides, ndim, shape, itemsize, err);
    free(temporary);
    return rc;
}

int gts_copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides,
             int ndim, const int64_t *shape, int64_t itemsize, gts_error *err)
{
    int rc = check_arrays(ndim, shape, itemsize, err);
    if (!rc)
        rc = check_memory("dst", dst, ndim, shape, dst_strides, itemsize, err);
    if (!rc)
        rc = check_memory("src", src, ndim, shape, src_strides, itemsize, err);
    if (!rc)
        rc = check_distinct_elements(ndim, shape, dst_strides, err);
    if (rc)
        return rc;
    transpose_plan t; /* the plan, and a kernel if the copy changes layout */
    plan *p = &t.p;
    if (!gts__strided_plan_init(p, dst, dst_strides, src, src_strides, ndim, shape, itemsize))
        return GTS_OK;
    uintptr_t dst_low, dst_high, src_low, src_high;
    extent(p->dst, p->ndim, p->shape, p->dst_strides, itemsize, &dst_low, &dst_high);
    extent(p->src, p->ndim, p->shape, p->src_strides, itemsize, &src_low, &src_high);
    if (dst_low < src_high && src_low < dst_high) {
        bool same = p->dst == p->src && memcmp(p->dst_strides, p->src_strides,
                                               (size_t)p->ndim * sizeof *p->dst_strides) == 0;
        return same ? GTS_OK
                    : copy_through_temporary(dst, dst_strides, src, src_strides, ndim, shape,
                                             itemsize, err);
    }
    int inner = p->ndim - 1;
    if (p->ndim == 0 || (p->dst_strides[inner] == itemsize && p->src_strides[inner] == itemsize)) {
        if (short_rows(p))
            walk(p, 2, 1, copy_short_rows);
        else
            walk(p, p->ndim ? 1 : 0, row_parts(p), copy_rows);
    } else if (make_transposed(p)) {
        int64_t bytes = itemsize; /* of one side; saturated, only compared */
        for (int d = 0; d < p->ndim && bytes < INT64_MAX; ++d)
            if (gts_mul_overflow(bytes, p->shape[d], &bytes))
                bytes = INT64_MAX;
        t.kernel = tile_kernel(p, bytes);
        walk(p, 2, (p->shape[p->ndim - 2] + TILE - 1) / TILE, copy_transposed);
    } else {
        walk(p, 1, row_parts(p), copy_strided);
    }
    return GTS_OK;
}
