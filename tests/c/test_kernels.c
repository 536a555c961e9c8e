/* Fill and copy of strided arrays, compared byte for byte with a naive
 * element-by-element reference.
 *
 * Every case works in one arena of bytes: the arrays are views into it
 * (an origin offset and byte strides of any sign). The reference runs on a
 * copy of the arena, reading from an untouched snapshot, so comparing the
 * whole arena afterwards checks the elements written, the bytes that must
 * stay untouched, and copies between overlapping views "as if through a
 * temporary" all at once. The value tests run three times: on the kernels
 * directly, and through the host and the emulated devices. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gtstore/device.h"
#include "gtstore/kernels.h"
#include "gtstore/layout.h"
#include "kernels_private.h"
#include "random.h"

#define MAXD 4

typedef struct view {
    int64_t origin; /* byte offset of element 0 in the arena */
    int64_t strides[MAXD];
} view;

typedef struct arena {
    unsigned char *bytes;
    int64_t size;
} arena;

/* 64-byte aligned, so that a view can start where streaming stores may go. */
static arena arena_new(int64_t size)
{
    arena a = {aligned_alloc(64, (size_t)(size + 63) / 64 * 64 + 64), size};
    for (int64_t i = 0; i < size; ++i)
        a.bytes[i] = (unsigned char)xorshift64();
    return a;
}

static unsigned char *arena_clone(arena a)
{
    unsigned char *copy = malloc((size_t)(a.size ? a.size : 1));
    memcpy(copy, a.bytes, (size_t)a.size);
    return copy;
}

/* A view of `shape` whose dims, padded by pad[d] elements, are laid out in
 * `layout` order; dims in `negative` (a bit mask) run backwards. The view
 * starts at byte `start` of the arena; returns the bytes it spans. */
static int64_t make_view(view *v, int ndim, const int64_t *shape, const int *layout,
                         const int64_t *pad, unsigned negative, int64_t itemsize, int64_t start)
{
    int by_rank[MAXD];
    for (int d = 0; d < ndim; ++d)
        by_rank[layout[d]] = d;
    int64_t stride = itemsize;
    for (int r = ndim - 1; r >= 0; --r) {
        int d = by_rank[r];
        v->strides[d] = stride;
        int64_t extent = shape[d] + (pad ? pad[d] : 0);
        stride *= extent > 0 ? extent : 1; /* never 0, even when empty */
    }
    v->origin = start;
    for (int d = 0; d < ndim; ++d) {
        if (negative & (1u << d)) {
            v->origin += (shape[d] > 0 ? shape[d] - 1 : 0) * v->strides[d];
            v->strides[d] = -v->strides[d];
        }
    }
    return stride;
}

/* Steps `index` through `shape` in C order; false after the last index. */
static bool next_index(int ndim, const int64_t *shape, int64_t *index)
{
    for (int d = ndim - 1; d >= 0; --d) {
        if (++index[d] < shape[d])
            return true;
        index[d] = 0;
    }
    return false;
}

static bool is_empty(int ndim, const int64_t *shape)
{
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return true;
    return false;
}

static int64_t address(const view *v, int ndim, const int64_t *index)
{
    int64_t a = v->origin;
    for (int d = 0; d < ndim; ++d)
        a += index[d] * v->strides[d];
    return a;
}

/* The reference: one element at a time, from `src` (NULL: `item`). */
static void naive(unsigned char *dst, const view *dv, const unsigned char *src, const view *sv,
                  const void *item, int ndim, const int64_t *shape, int64_t itemsize)
{
    int64_t index[MAXD] = {0};
    if (is_empty(ndim, shape))
        return;
    do {
        const void *from = src ? src + address(sv, ndim, index) : item;
        memcpy(dst + address(dv, ndim, index), from, (size_t)itemsize);
    } while (next_index(ndim, shape, index));
}

/* Where the value tests run: NULL calls gts_copy and gts_fill on the arena
 * directly; a device gets the arena copied into its memory, runs its own
 * strided copy or fill there, and gives the arena back. main runs them on
 * each. */
static const gts_device_ops *device;

/* The operation on device memory: upload, run, download. */
static int run_on_device(arena a, const view *dv, const view *sv, const void *item, int ndim,
                         const int64_t *shape, int64_t itemsize)
{
    char *block;
    int rc = gts_device_alloc(device, a.size, 0, (void **)&block, ERR);
    if (rc)
        return rc;
    rc = gts_device_copy_to_device(device, block, a.bytes, a.size, NULL, ERR);
    if (!rc && sv)
        rc = gts_device_copy(device, block + dv->origin, dv->strides, block + sv->origin,
                             sv->strides, ndim, shape, itemsize, NULL, ERR);
    else if (!rc)
        rc = gts_device_fill(device, block + dv->origin, ndim, shape, dv->strides, itemsize, item,
                             NULL, ERR);
    if (!rc)
        rc = gts_device_synchronize(device, NULL, ERR);
    if (!rc)
        rc = gts_device_copy_to_host(device, a.bytes, block, a.size, NULL, ERR);
    gts_device_free(device, block, a.size);
    return rc;
}

/* Runs gts_copy (src != NULL) or gts_fill on the arena (or their device
 * versions) and compares it with the reference; prints `what` on a
 * mismatch. */
static bool run_case(const char *what, arena a, const view *dv, const view *sv, const void *item,
                     int ndim, const int64_t *shape, int64_t itemsize)
{
    unsigned char *snapshot = arena_clone(a), *expected = arena_clone(a);
    naive(expected, dv, sv ? snapshot : NULL, sv, item, ndim, shape, itemsize);
    int rc = device ? run_on_device(a, dv, sv, item, ndim, shape, itemsize)
             : sv   ? gts_copy(a.bytes + dv->origin, dv->strides, a.bytes + sv->origin,
                               sv->strides, ndim, shape, itemsize, ERR)
                    : gts_fill(a.bytes + dv->origin, ndim, shape, dv->strides, itemsize, item,
                               ERR);
    bool ok = rc == 0 && memcmp(a.bytes, expected, (size_t)a.size) == 0;
    if (!ok) {
        fprintf(stderr, "  %s on %s: rc %d (%s), itemsize %lld, shape", what,
                device ? device->name : "the kernels", rc, check_error.message,
                (long long)itemsize);
        for (int d = 0; d < ndim; ++d)
            fprintf(stderr, " %lld (dst stride %lld, src stride %lld)", (long long)shape[d],
                    (long long)dv->strides[d], sv ? (long long)sv->strides[d] : 0LL);
        fprintf(stderr, "\n");
    }
    free(snapshot);
    free(expected);
    return ok;
}

static const int64_t itemsizes[] = {1, 2, 4, 8, 16};

/* An item whose bytes differ (the general path) or are all equal (memset). */
static void make_item(unsigned char item[16], bool equal_bytes)
{
    for (int k = 0; k < 16; ++k)
        item[k] = (unsigned char)(equal_bytes ? 0x5a : 0x10 + k);
}

/* ---- fill ---------------------------------------------------------------- */

typedef struct fill_case {
    const char *what;
    int ndim;
    int64_t shape[MAXD], pad[MAXD];
    int layout[MAXD];
    unsigned negative;
} fill_case;

static const fill_case fill_cases[] = {
    {"contiguous", 3, {3, 5, 7}, {0, 0, 0}, {0, 1, 2}, 0},
    {"padded sub-region", 3, {3, 5, 4}, {2, 3, 5}, {0, 1, 2}, 0},
    {"padded, I contiguous", 3, {3, 5, 4}, {1, 0, 2}, {2, 1, 0}, 0},
    {"negative strides", 3, {3, 5, 4}, {2, 3, 5}, {0, 1, 2}, 5},
    {"all negative", 2, {6, 9}, {0, 0}, {0, 1}, 3},
    {"one row of length 1", 2, {9, 1}, {0, 4}, {1, 0}, 0},
    {"0-d", 0, {0}, {0}, {0}, 0},
    {"empty", 3, {3, 0, 2}, {1, 1, 1}, {0, 1, 2}, 1},
    {"4-d", 4, {2, 3, 4, 5}, {1, 0, 1, 0}, {3, 0, 2, 1}, 2},
};

static void test_fill(void)
{
    for (size_t c = 0; c < sizeof fill_cases / sizeof fill_cases[0]; ++c) {
        const fill_case *f = &fill_cases[c];
        for (size_t s = 0; s < sizeof itemsizes / sizeof itemsizes[0]; ++s) {
            for (int equal = 0; equal < 2; ++equal) {
                unsigned char item[16];
                make_item(item, equal);
                view v;
                /* start 3 items in, so that untouched bytes lie on both sides */
                int64_t start = 3 * itemsizes[s];
                int64_t span = make_view(&v, f->ndim, f->shape, f->layout, f->pad, f->negative,
                                         itemsizes[s], start);
                arena a = arena_new(span + 2 * start);
                CHECK(run_case(f->what, a, &v, NULL, item, f->ndim, f->shape, itemsizes[s]));
                free(a.bytes);
            }
        }
    }
}

/* Over GTS_PARALLEL_BYTES: the threaded paths, rows split into parts. */
static void test_fill_large(void)
{
    const fill_case cases[] = {
        {"large 1-d", 1, {300000}, {0}, {0}, 0},
        {"large padded rows", 2, {700, 400}, {0, 3}, {0, 1}, 0},
        {"large, strided rows", 2, {800, 200}, {0, 5}, {1, 0}, 1},
        {"large 3-d, few long rows", 3, {2, 3, 50000}, {0, 1, 0}, {0, 1, 2}, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        int64_t itemsize = c % 2 ? 16 : 8;
        unsigned char item[16];
        make_item(item, false);
        view v;
        int64_t span = make_view(&v, cases[c].ndim, cases[c].shape, cases[c].layout,
                                 cases[c].pad, cases[c].negative, itemsize, 64);
        arena a = arena_new(span + 128);
        CHECK(run_case(cases[c].what, a, &v, NULL, item, cases[c].ndim, cases[c].shape,
                       itemsize));
        free(a.bytes);
    }
}

static void test_fill_scalar(void)
{
    const int64_t shape[2] = {3, 4}, strides[2] = {8 * 2, 2}; /* 4 of 8 columns */
    uint16_t half[3 * 8];
    memset(half, 0xee, sizeof half);
    gts_dtype f2 = {GTS_KIND_FLOAT, 2};
    gts_scalar three = {GTS_SCALAR_INT, {.i = 3}};
    CHECK_OK(gts_fill_scalar(half, 2, shape, strides, f2, three, ERR));
    bool ok = true;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 8; ++j)
            ok = ok && half[i * 8 + j] == (j < 4 ? 0x4200 : 0xeeee); /* 3.0 as float16 */
    CHECK(ok);

    int32_t ints[6] = {0};
    const int64_t shape1[1] = {6}, strides1[1] = {4};
    gts_dtype i4 = {GTS_KIND_INT, 4};
    gts_scalar value = {GTS_SCALAR_FLOAT, {.f = -1.5}};
    CHECK_OK(gts_fill_scalar(ints, 1, shape1, strides1, i4, value, ERR));
    CHECK(ints[0] == -1 && ints[5] == -1);

    /* a value the dtype cannot hold fails before anything is written */
    int8_t bytes[4] = {7, 7, 7, 7};
    const int64_t shape4[1] = {4}, strides4[1] = {1};
    gts_dtype i1 = {GTS_KIND_INT, 1};
    gts_scalar too_big = {GTS_SCALAR_INT, {.i = 300}};
    CHECK_FAILS(gts_fill_scalar(bytes, 1, shape4, strides4, i1, too_big, ERR), GTS_ERANGE, "300");
    CHECK(bytes[0] == 7 && bytes[3] == 7);

    float pairs[4];
    gts_dtype c8 = {GTS_KIND_COMPLEX, 8};
    gts_scalar z = {GTS_SCALAR_COMPLEX, {.f = 0}};
    z.value.c.re = 0.5;
    z.value.c.im = -2;
    const int64_t shape2[1] = {2}, strides2[1] = {8};
    CHECK_OK(gts_fill_scalar(pairs, 1, shape2, strides2, c8, z, ERR));
    CHECK(pairs[0] == 0.5f && pairs[1] == -2.0f && pairs[2] == 0.5f && pairs[3] == -2.0f);
}

static void test_fill_errors(void)
{
    unsigned char data[64], item[16] = {0};
    const int64_t strides[2] = {8, 1};
    CHECK_FAILS(gts_fill(data, 2, (const int64_t[]){2, -1}, strides, 1, item, ERR), GTS_EINVAL,
                "shape");
    CHECK_FAILS(gts_fill(data, 2, (const int64_t[]){2, 2}, strides, 3, item, ERR), GTS_EINVAL,
                "itemsize: 3");
    CHECK_FAILS(gts_fill(data, GTS_MAX_NDIM + 1, (const int64_t[]){2, 2}, strides, 1, item, ERR),
                GTS_EINVAL, "ndim");
    /* empty arrays may sit at NULL, as a wrapped zero-byte buffer does */
    CHECK_OK(gts_fill(NULL, 1, (const int64_t[]){0}, strides, 8, item, ERR));
    CHECK_OK(gts_fill(NULL, 2, (const int64_t[]){3, 0}, (const int64_t[]){-16, 8}, 8, item, ERR));
    /* hostile sizes (issue 8): 2**33 x 2**31 elements at stride 0 merged into
     * 2**64 = 0 elements, and the fill returned 0 having written nothing */
    const int64_t huge[2] = {(int64_t)1 << 33, (int64_t)1 << 31}, zero[2] = {0, 0};
    CHECK_FAILS(gts_fill(data, 2, huge, zero, 1, item, ERR), GTS_EOVERFLOW, "number of elements");
    CHECK_FAILS(gts_fill(data, 2, (const int64_t[]){INT64_MAX, 2}, strides, 1, item, ERR),
                GTS_EOVERFLOW, "shape");
    CHECK_FAILS(gts_fill(data, 2, (const int64_t[]){1 << 20, 1 << 20}, (const int64_t[]){INT64_MAX / 2, 1},
                         1, item, ERR),
                GTS_EOVERFLOW, "strides");
    CHECK_FAILS(gts_fill(data, 1, (const int64_t[]){INT64_MIN}, strides, 1, item, ERR), GTS_EINVAL,
                "shape");
    CHECK_FAILS(gts_fill(NULL, 1, (const int64_t[]){2}, strides, 1, item, ERR), GTS_EINVAL, "data");
    CHECK_FAILS(gts_fill(data, 1, (const int64_t[]){2}, NULL, 1, item, ERR), GTS_EINVAL, "strides");
    CHECK_FAILS(gts_fill(data, 1, NULL, strides, 1, item, ERR), GTS_EINVAL, "shape");
    CHECK_FAILS(gts_fill(data, 1, (const int64_t[]){2}, strides, 1, NULL, ERR), GTS_EINVAL, "item");
    /* a stride-0 dimension is written once: a broadcast fill of 2**40 elements
     * of one byte finishes at once */
    memset(data, 0, sizeof data);
    item[0] = 7;
    CHECK_OK(gts_fill(data, 2, (const int64_t[]){(int64_t)1 << 40, 3}, (const int64_t[]){0, 2}, 1,
                      item, ERR));
    CHECK(data[0] == 7 && data[1] == 0 && data[2] == 7 && data[4] == 7 && data[5] == 0);
}

/* ---- copy ---------------------------------------------------------------- */

typedef struct copy_case {
    int ndim;
    int64_t shape[MAXD], itemsize;
    int dst_layout[MAXD], src_layout[MAXD];
    int64_t dst_pad[MAXD], src_pad[MAXD];
    unsigned dst_negative, src_negative;
    bool dst_aligned; /* dst starts 64-byte aligned (it may take streaming stores) */
} copy_case;

/* src and dst side by side in one arena, a gap of untouched bytes around. */
static bool run_copy(const char *what, const copy_case *c)
{
    view dv, sv;
    int64_t gap = 2 * c->itemsize;
    int64_t src_span = make_view(&sv, c->ndim, c->shape, c->src_layout, c->src_pad,
                                 c->src_negative, c->itemsize, gap);
    int64_t dst_start = 2 * gap + src_span;
    if (c->dst_aligned)
        dst_start = (dst_start + 63) / 64 * 64;
    int64_t dst_span = make_view(&dv, c->ndim, c->shape, c->dst_layout, c->dst_pad,
                                 c->dst_negative, c->itemsize, dst_start);
    arena a = arena_new(dst_start + dst_span + gap);
    bool ok = run_case(what, a, &dv, &sv, NULL, c->ndim, c->shape, c->itemsize);
    free(a.bytes);
    return ok;
}

static copy_case random_copy_case(void)
{
    copy_case c;
    memset(&c, 0, sizeof c);
    c.ndim = (int)rnd(MAXD + 1);
    c.itemsize = itemsizes[rnd(5)];
    random_permutation(c.ndim, c.dst_layout);
    random_permutation(c.ndim, c.src_layout);
    for (int d = 0; d < c.ndim; ++d) {
        /* mostly 1-9 (4 and up engage the tiled transpose), sometimes 0 */
        c.shape[d] = rnd(12) ? 1 + rnd(9) : 0;
        c.dst_pad[d] = rnd(3);
        c.src_pad[d] = rnd(3);
    }
    c.dst_negative = (unsigned)rnd(1 << c.ndim);
    c.src_negative = (unsigned)rnd(1 << c.ndim);
    c.dst_aligned = rnd(2);
    return c;
}

static void test_copy_random(void)
{
    for (int i = 0; i < 2000; ++i) {
        copy_case c = random_copy_case();
        char what[48];
        snprintf(what, sizeof what, "random copy case %d", i);
        if (!CHECK(run_copy(what, &c)))
            break; /* one failing case says enough */
    }
}

/* Fixed cases: the transposing path (src and dst contiguous in different
 * dims), with dims in between, and over GTS_PARALLEL_BYTES. */
static void test_copy_fixed(void)
{
    const copy_case cases[] = {
        {2, {37, 45}, 8, {0, 1}, {1, 0}, {0}, {0}, 0, 0, false},
        {2, {37, 45}, 1, {1, 0}, {0, 1}, {0, 3}, {2, 0}, 0, 0, false},
        {2, {37, 45}, 4, {0, 1}, {1, 0}, {1, 0}, {0, 2}, 0, 0, false}, /* edges of 4x4 blocks */
        {2, {37, 45}, 8, {0, 1}, {1, 0}, {0}, {0}, 1, 2, false},
        {3, {5, 40, 6}, 16, {0, 1, 2}, {2, 1, 0}, {0}, {0}, 0, 0, false},
        {3, {5, 40, 6}, 2, {1, 0, 2}, {2, 0, 1}, {1, 1, 1}, {0}, 2, 1, false},
        {4, {3, 4, 5, 6}, 4, {0, 1, 2, 3}, {3, 2, 1, 0}, {0}, {0}, 0, 15, false},
        {0, {0}, 16, {0}, {0}, {0}, {0}, 0, 0, false},
        {3, {4, 0, 5}, 8, {0, 1, 2}, {2, 1, 0}, {0}, {0}, 0, 0, false},
        /* large */
        {2, {512, 512}, 8, {0, 1}, {1, 0}, {0}, {0}, 0, 0, false},
        {2, {1200, 1100}, 1, {1, 0}, {0, 1}, {0}, {0, 7}, 0, 0, false},
        {3, {64, 64, 80}, 4, {0, 1, 2}, {2, 1, 0}, {0}, {0}, 5, 2, false},
        {1, {300000}, 8, {0}, {0}, {0}, {0}, 0, 0, false},
        {1, {300000}, 4, {0}, {0}, {0}, {0}, 1, 0, false},
        {2, {1000, 300}, 16, {0, 1}, {0, 1}, {0, 2}, {1, 0}, 0, 3, false},
        {3, {2, 3, 100000}, 8, {0, 1, 2}, {1, 0, 2}, {0}, {0}, 0, 0, false},
        /* rows of dst a multiple of 32 bytes apart from an aligned start: the
         * transposing kernels may stream their stores */
        {2, {37, 45}, 8, {0, 1}, {1, 0}, {0, 3}, {0}, 0, 0, true},
        {2, {37, 45}, 4, {0, 1}, {1, 0}, {0, 3}, {1, 0}, 0, 0, true},
        {3, {4, 37, 45}, 8, {0, 1, 2}, {0, 2, 1}, {0, 0, 3}, {0}, 0, 0, true},
        {2, {512, 512}, 8, {0, 1}, {1, 0}, {0}, {0}, 0, 0, true},
        {2, {37, 45}, 8, {0, 1}, {1, 0}, {0, 3}, {0}, 1, 0, true}, /* runs backwards */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char what[32];
        snprintf(what, sizeof what, "fixed copy case %zu", i);
        CHECK(run_copy(what, &cases[i]));
    }
}

/* The copies again, streaming their stores wherever the destination's
 * alignment lets them (by default only copies of a quarter of the
 * last-level cache do): with the AVX kernels where the CPU has them, and
 * with the SSE2 ones. On x86-64 every kernel must have streamed (an
 * aligned 8-byte case alone for the second). */
static void test_copy_streaming(void)
{
    const copy_case aligned = {2, {37, 45}, 8, {0, 1}, {1, 0}, {0, 3}, {0}, 0, 0, true};
    for (int avx = 1; avx >= 0; --avx) {
        gts__copy_tune_for_testing(0, avx);
        int64_t before = gts__copy_streamed_units();
        test_copy_random();
        test_copy_fixed();
        int64_t eight = gts__copy_streamed_units();
        CHECK(run_copy("aligned 8-byte copy, streaming", &aligned));
#if defined(__x86_64__) && defined(__GNUC__)
        CHECK(gts__copy_streamed_units() > eight && eight > before);
#else
        CHECK(gts__copy_streamed_units() == 0); /* no streaming kernels */
#endif
    }
    gts__copy_tune_for_testing(-1, true);
}

/* Views of one block that overlap. */
static void test_copy_overlapping(void)
{
    const int64_t n = 1000, big = 300000;
    arena a = arena_new(big * 8 + 64);
    /* 1-d, shifted by one element, both ways; dst reversed */
    view lo = {0, {8}}, hi = {8, {8}}, reversed = {(n - 1) * 8, {-8}};
    CHECK(run_case("shift up", a, &hi, &lo, NULL, 1, &n, 8));
    CHECK(run_case("shift down", a, &lo, &hi, NULL, 1, &n, 8));
    CHECK(run_case("reverse in place", a, &reversed, &lo, NULL, 1, &n, 8));
    CHECK(run_case("shift up, large", a, &hi, &lo, NULL, 1, &big, 8));
    /* dst starts on src's last element: one shared element is overlap too */
    view last = {(n - 1) * 8, {8}}, every_other = {0, {16}}, last2 = {(n - 1) * 16, {16}};
    CHECK(run_case("touching at one element", a, &last, &lo, NULL, 1, &n, 8));
    CHECK(run_case("touching, strided", a, &last2, &every_other, NULL, 1, &n, 8));
    /* transpose in place: the same bytes, different strides */
    const int64_t square[2] = {30, 30};
    view c_order = {0, {30 * 4, 4}}, f_order = {0, {4, 30 * 4}};
    CHECK(run_case("transpose in place", a, &f_order, &c_order, NULL, 2, square, 4));
    /* 2-d, one row down and one column right */
    const int64_t rows[2] = {10, 20};
    view src2 = {0, {24 * 2, 2}}, dst2 = {24 * 2 + 2, {24 * 2, 2}};
    CHECK(run_case("2-d shift", a, &dst2, &src2, NULL, 2, rows, 2));
    /* onto itself: nothing changes */
    CHECK(run_case("onto itself", a, &c_order, &c_order, NULL, 2, square, 4));
    CHECK(run_case("onto itself, reversed", a, &reversed, &reversed, NULL, 1, &n, 8));
    free(a.bytes);
}

static void test_copy_errors(void)
{
    unsigned char dst[64] = {0}, src[64] = {0};
    const int64_t strides[2] = {8, 1};
    CHECK_FAILS(gts_copy(dst, strides, src, strides, 2, (const int64_t[]){-2, 2}, 1, ERR),
                GTS_EINVAL, "shape");
    CHECK_FAILS(gts_copy(dst, strides, src, strides, 2, (const int64_t[]){2, 2}, 3, ERR),
                GTS_EINVAL, "itemsize: 3");
    CHECK_FAILS(gts_copy(dst, strides, src, strides, -1, (const int64_t[]){2, 2}, 1, ERR),
                GTS_EINVAL, "ndim");
    CHECK_OK(gts_copy(NULL, strides, NULL, strides, 2, (const int64_t[]){0, 4}, 8, ERR));
    const int64_t huge[2] = {(int64_t)1 << 33, (int64_t)1 << 31}, zero[2] = {0, 0};
    CHECK_FAILS(gts_copy(dst, zero, src, zero, 2, huge, 1, ERR), GTS_EOVERFLOW,
                "number of elements");
    CHECK_FAILS(gts_copy(dst, strides, src, (const int64_t[]){INT64_MAX / 4, 1}, 2,
                         (const int64_t[]){8, 2}, 1, ERR),
                GTS_EOVERFLOW, "strides");
    CHECK_FAILS(gts_copy(dst, strides, NULL, strides, 2, (const int64_t[]){2, 2}, 1, ERR),
                GTS_EINVAL, "src");
    CHECK_FAILS(gts_copy(NULL, strides, src, strides, 2, (const int64_t[]){2, 2}, 1, ERR),
                GTS_EINVAL, "dst");
    /* a destination repeating an element has no defined result */
    CHECK_FAILS(gts_copy(dst, (const int64_t[]){0, 1}, src, strides, 2, (const int64_t[]){2, 2}, 1,
                         ERR),
                GTS_EINVAL, "dst_strides: dimension 0 has stride 0");
    /* ...but a source may (a broadcast) */
    memset(dst, 0, sizeof dst);
    src[0] = 5;
    src[1] = 6;
    CHECK_OK(gts_copy(dst, strides, src, (const int64_t[]){0, 1}, 2, (const int64_t[]){3, 2}, 1,
                      ERR));
    CHECK(dst[0] == 5 && dst[1] == 6 && dst[8] == 5 && dst[17] == 6 && dst[2] == 0);
}

int main(void)
{
    /* the value tests: the kernels themselves, then through each device */
    const gts_device_ops *devices[] = {NULL, gts_device_host(), gts_device_emulated()};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; ++i) {
        device = devices[i];
        test_fill();
        test_fill_large();
        test_copy_random();
        test_copy_fixed();
        test_copy_overlapping();
    }
    device = NULL;
    test_copy_streaming();
    gts_transfer_counts counts;
    gts_device_emulated_counts(&counts);
    CHECK(counts.live_blocks == 0 && counts.copies > 2000 && counts.fills > 90);
    test_fill_scalar();
    test_fill_errors();
    test_copy_errors();
    return check_summary("test_kernels");
}
