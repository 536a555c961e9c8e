/* Geometry: padding, strides, sizes and the offset that aligns a grid point.
 * Exact tables for cases worked out by hand, then the alignment property
 * over thousands of random cases, as GridTools'
 * test_alignment_inner_region does. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "storage_helpers.h" /* product */
#include "random.h"
#include "gtstore/buffer.h"
#include "gtstore/geometry.h"

/* ---- exact tables ------------------------------------------------------ */

typedef struct known_case {
    const char *why; /* how the numbers come about */
    int ndim;
    int64_t shape[3];
    int layout[3];
    int64_t itemsize, alignment;
    int64_t padded[3], strides[3], span;
} known_case;

static const known_case known[] = {
    {"8-byte alignment with f8: block 1 element, no padding; strides 8, 8*64, 8*64*64",
     3, {64, 64, 80}, {2, 1, 0}, 8, 8, {64, 64, 80}, {8, 512, 32768}, 8 * 64 * 64 * 80},
    {"256 bytes with f8: block 32 elements, I 10 -> 32; J stride 8*32, K stride 256*20",
     3, {10, 20, 5}, {2, 1, 0}, 8, 256, {32, 20, 5}, {8, 256, 5120}, 8 * 32 * 20 * 5},
    {"gtmc-like: 32 bytes with f4 = block 8, I 10 -> 16; K (rank 1) 4*16, J 64*5",
     3, {10, 20, 5}, {2, 0, 1}, 4, 32, {16, 20, 5}, {4, 320, 64}, 4 * 16 * 20 * 5},
    {"K contiguous, 64 bytes with f8: block 8, K 7 -> 8; J 8*8, I 64*6",
     3, {5, 6, 7}, {0, 1, 2}, 8, 64, {5, 6, 8}, {384, 64, 8}, 8 * 5 * 6 * 8},
    {"alignment 4 below itemsize 8: block 1, no padding",
     2, {3, 5}, {0, 1}, 8, 4, {3, 5}, {40, 8}, 8 * 3 * 5},
    {"24 bytes with f8: block 3, not a power of two; 7 -> 9",
     2, {10, 7}, {0, 1}, 8, 24, {10, 9}, {72, 8}, 8 * 10 * 9},
    {"1 byte with u1 and F layout: nothing to pad",
     2, {3, 4}, {1, 0}, 1, 1, {3, 4}, {1, 3}, 12},
    {"empty middle dim, 16 bytes with f8: 3 -> 4; an empty extent counts as 1 in the\n"
     "stride products (as in NumPy) so no stride collapses to 0; the span is 0",
     3, {4, 0, 3}, {0, 1, 2}, 8, 16, {4, 0, 4}, {32, 32, 8}, 0},
    {"empty contiguous dim stays 0 after padding",
     2, {5, 0}, {0, 1}, 4, 32, {5, 0}, {4, 4}, 0},
    {"0-d: one element", 0, {0}, {0}, 8, 64, {0}, {0}, 8},
};

static void check_known(const known_case *c)
{
    gts_geometry g;
    memset(&g, 0xff, sizeof g);
    if (!CHECK_OK(gts_geometry_init(&g, c->ndim, c->shape, c->layout, c->itemsize, c->alignment,
                                    NULL, ERR)))
        return;
    bool ok = g.ndim == c->ndim && g.itemsize == c->itemsize && g.alignment == c->alignment &&
              g.span == c->span && g.alloc_size == c->span + c->alignment - 1 &&
              gts_geometry_size(&g) == product(c->ndim, c->shape);
    for (int d = 0; d < c->ndim; ++d)
        ok = ok && g.shape[d] == c->shape[d] && g.layout[d] == c->layout[d] &&
             g.padded_shape[d] == c->padded[d] && g.strides[d] == c->strides[d] &&
             g.aligned_index[d] == 0;
    if (!CHECK(ok)) {
        fprintf(stderr, "  case: %s\n  got span %lld, alloc_size %lld, padded/strides:",
                c->why, (long long)g.span, (long long)g.alloc_size);
        for (int d = 0; d < c->ndim; ++d)
            fprintf(stderr, " %lld/%lld", (long long)g.padded_shape[d], (long long)g.strides[d]);
        fprintf(stderr, "\n");
    }
}

static void test_known(void)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i)
        check_known(&known[i]);
    /* an alignment in elements: B (bytes over the itemsize), at least 1 */
    CHECK_INT_EQ(gts_alignment_elements(64, 8), 8);
    CHECK_INT_EQ(gts_alignment_elements(8, 8), 1);
    CHECK_INT_EQ(gts_alignment_elements(8, 16), 1); /* each element aligned */
    CHECK_INT_EQ(gts_alignment_elements(1, 4), 1);
}

/* ---- offsets ----------------------------------------------------------- */

static int64_t point_offset(const gts_geometry *g, const int64_t *index)
{
    int64_t bytes = 0;
    for (int d = 0; d < g->ndim; ++d)
        bytes += index[d] * g->strides[d];
    return bytes;
}

/* For blocks at every base address modulo 2A: 0 <= offset < A and the
 * aligned point's address is a multiple of A. Together these pin the
 * offset down, since it is fixed modulo A. */
static void check_offsets_for_all_bases(const gts_geometry *g)
{
    bool ok = true;
    int64_t to_point = point_offset(g, g->aligned_index);
    for (uintptr_t base = 4096; base < 4096 + 2 * (uintptr_t)g->alignment && ok; ++base) {
        int64_t offset = gts_geometry_offset(g, base);
        ok = offset >= 0 && offset < g->alignment &&
             (base + (uintptr_t)offset + (uintptr_t)to_point) % (uintptr_t)g->alignment == 0;
        if (!ok)
            fprintf(stderr, "  base %#lx: offset %lld\n", (unsigned long)base, (long long)offset);
    }
    CHECK(ok);
}

static void test_offsets(void)
{
    gts_geometry g;
    const int64_t shape[3] = {10, 20, 5}, index[3] = {3, 3, 0};
    const int i_first[3] = {2, 1, 0};
    if (!CHECK_OK(gts_geometry_init(&g, 3, shape, i_first, 8, 256, index, ERR)))
        return;
    CHECK(g.aligned_index[0] == 3 && g.aligned_index[1] == 3 && g.aligned_index[2] == 0);
    /* Only I (contiguous) matters: the point (3, 3, 0) is aligned when I = 3
     * sits 29 elements before the next 32-element boundary: (32-3)*8 = 232
     * bytes from an aligned base, 8 bytes fewer from a base 8 bytes past. */
    CHECK_INT_EQ(gts_geometry_offset(&g, 0x10000), 232);
    CHECK_INT_EQ(gts_geometry_offset(&g, 0x10008), 224);
    CHECK_INT_EQ(gts_geometry_offset(&g, 0x100e8), 0); /* 0x10000 + 232 */
    check_offsets_for_all_bases(&g);

    /* aligned index 0 in the contiguous dim: an aligned base needs no shift */
    const int64_t j_only[3] = {0, 7, 4};
    CHECK_OK(gts_geometry_init(&g, 3, shape, i_first, 8, 256, j_only, ERR));
    CHECK_INT_EQ(gts_geometry_offset(&g, 0x10000), 0);
    check_offsets_for_all_bases(&g);

    /* 24-byte alignment, f8: I index 4 -> next multiple of 3 is 6: 16 bytes */
    const int64_t shape2[2] = {10, 7}, index2[2] = {0, 4};
    CHECK_OK(gts_geometry_init(&g, 2, shape2, (const int[]){0, 1}, 8, 24, index2, ERR));
    CHECK_INT_EQ(gts_geometry_offset(&g, 240), 16);
    check_offsets_for_all_bases(&g);

    /* alignment below the itemsize: only the base matters */
    CHECK_OK(gts_geometry_init(&g, 2, shape2, (const int[]){1, 0}, 8, 4, index2, ERR));
    CHECK_INT_EQ(gts_geometry_offset(&g, 4096), 0);
    CHECK_INT_EQ(gts_geometry_offset(&g, 4097), 3);
    check_offsets_for_all_bases(&g);

    /* 0-d */
    CHECK_OK(gts_geometry_init(&g, 0, NULL, NULL, 8, 64, NULL, ERR));
    CHECK_INT_EQ(gts_geometry_offset(&g, 4096), 0);
    CHECK_INT_EQ(gts_geometry_offset(&g, 4097), 63);
    check_offsets_for_all_bases(&g);

    /* an empty dim accepts aligned index 0 */
    const int64_t empty[2] = {0, 6}, zero[2] = {0, 5};
    CHECK_OK(gts_geometry_init(&g, 2, empty, (const int[]){0, 1}, 4, 16, zero, ERR));
    CHECK_INT_EQ(gts_geometry_size(&g), 0);
    check_offsets_for_all_bases(&g);
}

/* ---- errors ------------------------------------------------------------ */

static void test_errors(void)
{
    gts_geometry g;
    const int64_t shape[3] = {10, 20, 5};
    const int c3[3] = {0, 1, 2};
    CHECK_FAILS(gts_geometry_init(&g, 3, (const int64_t[]){10, -1, 5}, c3, 8, 8, NULL, ERR),
                GTS_EINVAL, "shape");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 8, 0, NULL, ERR), GTS_EINVAL,
                "alignment_size");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 8, -64, NULL, ERR), GTS_EINVAL,
                "alignment_size");
    /* 12 and 8 divide neither way */
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 8, 12, NULL, ERR), GTS_EINVAL,
                "alignment_size: 12");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 4, 6, NULL, ERR), GTS_EINVAL,
                "alignment_size: 6");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 0, 8, NULL, ERR), GTS_EINVAL, "itemsize");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, (const int[]){0, 2, 2}, 8, 8, NULL, ERR),
                GTS_EINVAL, "layout");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, (const int[]){1, 2, 3}, 8, 8, NULL, ERR),
                GTS_EINVAL, "layout");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 8, 8, (const int64_t[]){0, -1, 0}, ERR),
                GTS_EINVAL, "aligned_index: -1");
    CHECK_FAILS(gts_geometry_init(&g, 3, shape, c3, 8, 8, (const int64_t[]){10, 0, 0}, ERR),
                GTS_EINVAL, "aligned_index: 10");
    CHECK_FAILS(gts_geometry_init(&g, 2, (const int64_t[]){0, 4}, c3, 8, 8,
                                  (const int64_t[]){1, 0}, ERR),
                GTS_EINVAL, "aligned_index: 1");
    CHECK_FAILS(gts_geometry_init(&g, -1, shape, c3, 8, 8, NULL, ERR), GTS_EINVAL, "ndim");
    CHECK_FAILS(gts_geometry_init(&g, GTS_MAX_NDIM + 1, shape, c3, 8, 8, NULL, ERR), GTS_EINVAL,
                "ndim");
}

/* The bytes a strided array spans, and bad input to it (an extent of
 * INT64_MIN once overflowed computing extent - 1). */
static void test_strided_extent(void)
{
    int64_t low = -1, high = -1;
    CHECK_OK(gts_strided_extent(2, (const int64_t[]){3, 4}, (const int64_t[]){-32, 8}, 8, &low,
                                &high, ERR));
    CHECK(low == -64 && high == 32);
    CHECK_OK(gts_strided_extent(2, (const int64_t[]){3, 0}, (const int64_t[]){INT64_MAX, 8}, 8,
                                &low, &high, ERR));
    CHECK(low == 0 && high == 0); /* empty */
    CHECK_OK(gts_strided_extent(0, NULL, NULL, 4, &low, &high, ERR));
    CHECK(low == 0 && high == 4); /* 0-d: one element */
    CHECK_FAILS(gts_strided_extent(1, (const int64_t[]){INT64_MIN}, (const int64_t[]){8}, 8, &low,
                                   &high, ERR),
                GTS_EINVAL, "shape: -9223372036854775808");
    CHECK_FAILS(gts_strided_extent(2, (const int64_t[]){0, -1}, (const int64_t[]){8, 8}, 8, &low,
                                   &high, ERR),
                GTS_EINVAL, "shape: -1 in dimension 1");
    CHECK_FAILS(gts_strided_extent(1, (const int64_t[]){3}, (const int64_t[]){INT64_MIN}, 8, &low,
                                   &high, ERR),
                GTS_EOVERFLOW, "strides");
    CHECK_FAILS(gts_strided_extent(1, (const int64_t[]){2}, (const int64_t[]){INT64_MAX}, 8, &low,
                                   &high, ERR),
                GTS_EOVERFLOW, "strides");
    CHECK_FAILS(gts_strided_extent(1, (const int64_t[]){2}, (const int64_t[]){8}, 0, &low, &high,
                                   ERR),
                GTS_EINVAL, "itemsize");
    CHECK_FAILS(gts_strided_extent(GTS_MAX_NDIM + 1, (const int64_t[]){2}, (const int64_t[]){8}, 8,
                                   &low, &high, ERR),
                GTS_EINVAL, "ndim");
}

/* C-order strides: the innermost stride is the itemsize, each outer one the
 * next inner times its extent, an empty extent counting as 1 (NumPy's
 * strides); the whole size must fit, and nothing is written on failure. */
static void test_strides_contiguous(void)
{
    int64_t strides[3] = {-1, -1, -1};
    CHECK_OK(gts_strides_contiguous(3, (const int64_t[]){3, 4, 5}, 8, strides, ERR));
    CHECK(strides[0] == 160 && strides[1] == 40 && strides[2] == 8);
    CHECK_OK(gts_strides_contiguous(1, (const int64_t[]){7}, 2, strides, ERR));
    CHECK(strides[0] == 2);
    /* empty extents: no stride collapses to 0 */
    CHECK_OK(gts_strides_contiguous(3, (const int64_t[]){4, 0, 3}, 8, strides, ERR));
    CHECK(strides[0] == 24 && strides[1] == 24 && strides[2] == 8);
    CHECK_OK(gts_strides_contiguous(2, (const int64_t[]){0, 0}, 4, strides, ERR));
    CHECK(strides[0] == 4 && strides[1] == 4);
    /* 0-d: no strides, and no shape needed */
    strides[0] = -1;
    CHECK_OK(gts_strides_contiguous(0, NULL, 8, strides, ERR));
    CHECK(strides[0] == -1);
    /* the largest sizes that fit, and the smallest that do not */
    CHECK_OK(gts_strides_contiguous(1, (const int64_t[]){INT64_MAX}, 1, strides, ERR));
    CHECK(strides[0] == 1);
    CHECK_OK(gts_strides_contiguous(2, (const int64_t[]){INT64_C(1) << 60, 4}, 1, strides, ERR));
    CHECK(strides[0] == 4 && strides[1] == 1); /* 2**62 bytes */
    strides[0] = strides[1] = -1;
    CHECK_FAILS(gts_strides_contiguous(2, (const int64_t[]){INT64_C(1) << 60, 4}, 2, strides, ERR),
                GTS_EOVERFLOW, "shape: (1152921504606846976, 4) is too big");
    CHECK(strides[0] == -1 && strides[1] == -1); /* untouched */
    CHECK_FAILS(gts_strides_contiguous(1, (const int64_t[]){INT64_MAX}, 2, strides, ERR),
                GTS_EOVERFLOW, "shape");
    /* empty, but its size counting the empty extent as 1 does not fit (as
     * in NumPy and gts_geometry_init) */
    const int64_t big = INT64_C(1) << 40;
    CHECK_FAILS(gts_strides_contiguous(3, (const int64_t[]){0, big, big}, 8, strides, ERR),
                GTS_EOVERFLOW, "shape");
    /* bad input: the checks of gts_strided_extent */
    CHECK_FAILS(gts_strides_contiguous(2, (const int64_t[]){3, -1}, 8, strides, ERR), GTS_EINVAL,
                "shape: -1 in dimension 1");
    CHECK_FAILS(gts_strides_contiguous(1, (const int64_t[]){3}, 0, strides, ERR), GTS_EINVAL,
                "itemsize");
    CHECK_FAILS(gts_strides_contiguous(-1, NULL, 8, strides, ERR), GTS_EINVAL, "ndim");
    CHECK_FAILS(gts_strides_contiguous(GTS_MAX_NDIM + 1, (const int64_t[]){3}, 8, strides, ERR),
                GTS_EINVAL, "ndim");
}

/* The same strides as the geometry of a C layout without padding (an
 * alignment of the itemsize), over random shapes with empty extents. */
static void test_strides_contiguous_random(void)
{
    static const int64_t itemsizes[] = {1, 2, 4, 8, 16};
    const int c4[4] = {0, 1, 2, 3};
    bool ok = true;
    for (int i = 0; i < 1000 && ok; ++i) {
        int ndim = (int)rnd(5);
        int64_t shape[4], strides[4], itemsize = itemsizes[rnd(5)];
        for (int d = 0; d < ndim; ++d)
            shape[d] = rnd(6);
        gts_geometry g;
        ok = CHECK_OK(gts_geometry_init(&g, ndim, shape, c4, itemsize, itemsize, NULL, ERR)) &&
             CHECK_OK(gts_strides_contiguous(ndim, shape, itemsize, strides, ERR));
        for (int d = 0; d < ndim && ok; ++d)
            ok = CHECK_INT_EQ(strides[d], g.strides[d]);
    }
}

static void test_overflow(void)
{
    gts_geometry g;
    const int c2[2] = {0, 1};
    const int64_t big = INT64_C(1) << 40;
    /* 8 * 2**80 bytes */
    CHECK_FAILS(gts_geometry_init(&g, 2, (const int64_t[]){big, big}, c2, 8, 8, NULL, ERR),
                GTS_EOVERFLOW, "shape");
    /* empty, but the strides themselves would not fit */
    CHECK_FAILS(gts_geometry_init(&g, 3, (const int64_t[]){0, big, big}, (const int[]){0, 1, 2},
                                  8, 8, NULL, ERR),
                GTS_EOVERFLOW, "shape");
    /* padding the contiguous extent up to a block of INT64_MAX elements: the
     * shape alone fits, so the message names the alignment */
    CHECK_FAILS(gts_geometry_init(&g, 1, (const int64_t[]){2}, c2, 1, INT64_MAX, NULL, ERR),
                GTS_EOVERFLOW,
                "alignment_size: 9223372036854775807 bytes is too big for shape (2,)");
    /* 2**62 bytes: 10 rows of 2**59 padded elements of 8 bytes */
    CHECK_FAILS(gts_geometry_init(&g, 2, (const int64_t[]){10, 10}, c2, 8, INT64_C(1) << 62, NULL,
                                  ERR),
                GTS_EOVERFLOW,
                "alignment_size: 4611686018427387904 bytes is too big for shape (10, 10): with "
                "the padding it needs, the size in bytes does not fit in 64 bits");
    /* A = 3 * 2**60 bytes: the span 2A still fits, span + A - 1 does not */
    const int64_t a = INT64_C(3) << 60;
    CHECK_FAILS(gts_geometry_init(&g, 2, (const int64_t[]){2, 1}, c2, 8, a, NULL, ERR),
                GTS_EOVERFLOW, "alignment_size: 3458764513820540928 bytes");
    /* ... while one row of it, 2A - 1 bytes, is representable */
    CHECK_OK(gts_geometry_init(&g, 2, (const int64_t[]){1, 1}, c2, 8, a, NULL, ERR));
    CHECK_INT_EQ(g.alloc_size, 2 * a - 1);
    /* An empty array allows an alignment above 2**62; the offset's two
     * parts, each below it, overflowed when added (found by fuzz_geometry). */
    const int64_t huge = INT64_C(3) << 61;
    if (CHECK_OK(gts_geometry_init(&g, 2, (const int64_t[]){0, 37}, c2, 4, huge,
                                   (const int64_t[]){0, 26}, ERR)))
        CHECK_INT_EQ(gts_geometry_offset(&g, 4096), huge - 4096 - 26 * 4);

    int64_t out = 42;
    CHECK(gts_mul_overflow(INT64_MAX, 2, &out) && out == 42); /* out untouched */
    CHECK(gts_mul_overflow(INT64_MIN, -1, &out) && out == 42);
    CHECK(gts_add_overflow(INT64_MAX, 1, &out) && out == 42);
    CHECK(gts_add_overflow(INT64_MIN, -1, &out) && out == 42);
    CHECK(!gts_mul_overflow(-3, 4, &out) && out == -12);
    CHECK(!gts_mul_overflow(INT64_C(1) << 31, INT64_C(1) << 31, &out) && out == INT64_C(1) << 62);
    CHECK(!gts_add_overflow(-5, 3, &out) && out == -2);
    CHECK(!gts_add_overflow(INT64_MAX - 1, 1, &out) && out == INT64_MAX);
}

/* ---- the alignment property over random cases ------------------------- */

/* An alignment in [1, 512] bytes that divides or is a multiple of the
 * itemsize, non-powers of two included (24, 40, 3, ...). */
static int64_t random_alignment(int64_t itemsize)
{
    for (;;) {
        int64_t a = 1 + rnd(512);
        if (a % itemsize == 0 || itemsize % a == 0)
            return a;
    }
}

typedef struct random_case {
    int ndim;
    int64_t shape[4], aligned_index[4], itemsize, alignment;
    int layout[4];
} random_case;

static random_case make_random_case(void)
{
    static const int64_t itemsizes[] = {1, 2, 4, 8, 16};
    random_case c;
    c.ndim = 1 + (int)rnd(4);
    c.itemsize = itemsizes[rnd(5)];
    c.alignment = random_alignment(c.itemsize);
    random_permutation(c.ndim, c.layout);
    for (int d = 0; d < c.ndim; ++d) {
        c.shape[d] = rnd(18);
        c.aligned_index[d] = c.shape[d] ? rnd(c.shape[d]) : 0;
    }
    return c;
}

/* (d) strides decrease in layout order, exactly as products of the padded
 * extents (an empty one counting as 1), the contiguous one the itemsize;
 * (e) only the contiguous extent is padded, to the next multiple of
 * B = max(A / itemsize, 1). */
static bool strides_and_padding_ok(const gts_geometry *g)
{
    int by_rank[4];
    for (int d = 0; d < g->ndim; ++d)
        by_rank[g->layout[d]] = d;
    int c = by_rank[g->ndim - 1];
    int64_t block = g->alignment > g->itemsize ? g->alignment / g->itemsize : 1;
    bool ok = g->strides[c] == g->itemsize && g->padded_shape[c] % block == 0 &&
              g->padded_shape[c] >= g->shape[c] && g->padded_shape[c] < g->shape[c] + block;
    for (int r = 0; r + 1 < g->ndim; ++r) {
        int outer = by_rank[r], inner = by_rank[r + 1];
        int64_t extent = g->padded_shape[inner] ? g->padded_shape[inner] : 1;
        ok = ok && g->strides[outer] == g->strides[inner] * extent &&
             g->padded_shape[outer] == g->shape[outer];
    }
    return ok;
}

/* (b) every point sharing the aligned point's contiguous index is aligned
 * (the inner region), and (c) every element lies inside the block. */
static void check_points(const gts_geometry *g, uintptr_t origin, uintptr_t block_end,
                         bool *aligned, bool *inside)
{
    int c = gts_layout_contiguous_dim(g->ndim, g->layout);
    int64_t index[4] = {0, 0, 0, 0};
    *aligned = *inside = true;
    if (gts_geometry_size(g) == 0)
        return;
    for (;;) {
        uintptr_t address = origin + (uintptr_t)point_offset(g, index);
        *inside = *inside && address + (uintptr_t)g->itemsize <= block_end;
        if (index[c] == g->aligned_index[c])
            *aligned = *aligned && address % (uintptr_t)g->alignment == 0;
        int d = g->ndim - 1;
        for (; d >= 0 && ++index[d] == g->shape[d]; --d)
            index[d] = 0;
        if (d < 0)
            return;
    }
}

static bool check_random_case(const random_case *c)
{
    gts_geometry g;
    gts_buffer *buffer = NULL;
    int64_t offset = -1;
    if (!CHECK_OK(gts_geometry_init(&g, c->ndim, c->shape, c->layout, c->itemsize, c->alignment,
                                    c->aligned_index, ERR)) ||
        !CHECK_OK(gts_buffer_alloc_geometry(&g, 0, &buffer, &offset, ERR)))
        return false;
    uintptr_t base = (uintptr_t)gts_buffer_host(buffer);
    uintptr_t origin = base + (uintptr_t)offset;
    bool ok = true, aligned, inside;
    check_points(&g, origin, base + (uintptr_t)gts_buffer_size(buffer), &aligned, &inside);
    /* (a) the aligned point itself */
    ok &= CHECK(gts_geometry_size(&g) == 0 ||
                (origin + (uintptr_t)point_offset(&g, g.aligned_index)) % (uintptr_t)c->alignment ==
                    0);
    ok &= CHECK(aligned);
    /* (c) */
    ok &= CHECK(offset >= 0 && offset < c->alignment && offset + g.span <= g.alloc_size &&
                gts_buffer_size(buffer) == g.alloc_size && inside);
    ok &= CHECK(strides_and_padding_ok(&g));
    ok &= CHECK(g.span == g.itemsize * product(g.ndim, g.padded_shape) &&
                g.alloc_size == g.span + g.alignment - 1);
    ok &= CHECK_INT_EQ(offset, gts_geometry_offset(&g, base));
    /* the first and last bytes of the span are ours to write (ASan checks) */
    if (g.span > 0) {
        ((unsigned char *)origin)[0] = 1;
        ((unsigned char *)origin)[g.span - 1] = 1;
    }
    gts_buffer_release(buffer);
    return ok;
}

static void print_case(int number, const random_case *c)
{
    fprintf(stderr, "  random case %d: itemsize %lld, alignment %lld, shape/layout/index:",
            number, (long long)c->itemsize, (long long)c->alignment);
    for (int d = 0; d < c->ndim; ++d)
        fprintf(stderr, " %lld/%d/%lld", (long long)c->shape[d], c->layout[d],
                (long long)c->aligned_index[d]);
    fprintf(stderr, "\n");
}

static void test_alignment_inner_region(void)
{
    gts_memory_stats before, after;
    gts_memory_stats_get(&before);
    for (int i = 0; i < 3000; ++i) {
        random_case c = make_random_case();
        if (!check_random_case(&c)) {
            print_case(i, &c);
            break; /* one failing case says enough */
        }
    }
    gts_memory_stats_get(&after);
    CHECK_INT_EQ(after.live_buffers, before.live_buffers);
}

int main(void)
{
    test_known();
    test_offsets();
    test_errors();
    test_overflow();
    test_strided_extent();
    test_strides_contiguous();
    test_alignment_inner_region();
    test_strides_contiguous_random(); /* last: the cases above stay those they were */
    return check_summary("test_geometry");
}
