/* Fill and copy kernels with hostile strides: any sign, zero, not multiples
 * of the itemsize, arrays that overlap themselves or each other, and
 * shapes or strides whose sizes do not fit in 64 bits.
 *
 * Checks: on small arrays inside the test's block, gts_fill and gts_copy
 * give exactly what a plain loop over the indices gives (a copy as if
 * through a temporary), and never touch a byte outside the destination's
 * elements (ASan guards the block); where the destination's elements
 * overlap, only the latter holds, and a copy whose destination repeats an
 * element (stride 0) is refused. Empty arrays change nothing, even at
 * NULL. An itemsize other than 1, 2, 4, 8, 16, an ndim outside [0, 64], a
 * negative extent, and arrays whose element count or byte extent does not
 * fit in 64 bits are refused with a message, before anything is written. */
#include "../c/storage_helpers.h" /* product */
#include "fuzz_input.h"
#include "gtstore/kernels.h"
#include "gtstore/layout.h"

#define ARENA 2048
#define MAX_DIMS 6

typedef fuzz_wide wide;

typedef struct array {
    int64_t base; /* byte offset of element 0 in the arena */
    int64_t strides[GTS_MAX_NDIM];
} array;

/* Whether every element lies in [0, ARENA): the extent in 128 bits. */
static bool inside(const array *a, int ndim, const int64_t *shape, int64_t itemsize)
{
    wide low = a->base, high = (wide)a->base + itemsize;
    for (int d = 0; d < ndim; ++d) {
        wide reach = (wide)(shape[d] - 1) * a->strides[d];
        *(reach < 0 ? &low : &high) += reach;
    }
    return low >= 0 && high <= ARENA;
}

/* Byte offset of each element of `a` in C order into `offsets`. */
static void element_offsets(const array *a, int ndim, const int64_t *shape, int64_t *offsets)
{
    int64_t index[GTS_MAX_NDIM] = {0}, count = product(ndim, shape);
    for (int64_t k = 0; k < count; ++k) {
        offsets[k] = a->base;
        for (int d = 0; d < ndim; ++d)
            offsets[k] += index[d] * a->strides[d];
        for (int d = ndim - 1; d >= 0 && ++index[d] == shape[d]; --d)
            index[d] = 0;
    }
}

/* Marks the destination's bytes; false if two elements share one. */
static bool mark(const int64_t *offsets, int64_t count, int64_t itemsize, unsigned char *covered)
{
    bool distinct = true;
    memset(covered, 0, ARENA);
    for (int64_t k = 0; k < count; ++k)
        for (int64_t b = 0; b < itemsize; ++b)
            if (covered[offsets[k] + b])
                distinct = false;
            else
                covered[offsets[k] + b] = 1;
    return distinct;
}

static void compare(const unsigned char *arena, const unsigned char *expected,
                    const unsigned char *before, const unsigned char *covered, bool distinct)
{
    for (int b = 0; b < ARENA; ++b) {
        if (!covered[b])
            FUZZ_CHECK(arena[b] == before[b]);
        else if (distinct)
            FUZZ_CHECK(arena[b] == expected[b]);
    }
}

/* Small arrays in the arena, against a plain loop. */
static void run_small(fuzz_input *in, unsigned char *arena)
{
    static const int64_t itemsizes[] = {1, 2, 4, 8, 16};
    int64_t itemsize = itemsizes[fuzz_range(in, 0, 4)];
    int ndim = (int)fuzz_range(in, 0, MAX_DIMS);
    int64_t shape[MAX_DIMS];
    array dst = {.base = fuzz_range(in, 0, ARENA - 1)}, src = {.base = fuzz_range(in, 0, ARENA - 1)};
    for (int d = 0; d < ndim; ++d) {
        shape[d] = fuzz_range(in, 0, 5);
        dst.strides[d] = fuzz_u8(in) < 192 ? itemsize * fuzz_range(in, -6, 6) : fuzz_range(in, -40, 40);
        src.strides[d] = fuzz_u8(in) < 192 ? itemsize * fuzz_range(in, -6, 6) : fuzz_range(in, -40, 40);
    }
    if (!inside(&dst, ndim, shape, itemsize) || !inside(&src, ndim, shape, itemsize))
        return; /* would write outside the block: the caller's error, not checkable */
    for (int b = 0; b < ARENA; ++b)
        arena[b] = (unsigned char)(b * 7 + 1);
    static unsigned char before[ARENA], expected[ARENA], covered[ARENA];
    static int64_t dst_at[5 * 5 * 5 * 5 * 5 * 5], src_at[5 * 5 * 5 * 5 * 5 * 5];
    int64_t count = product(ndim, shape);
    element_offsets(&dst, ndim, shape, dst_at);
    element_offsets(&src, ndim, shape, src_at);
    bool distinct = mark(dst_at, count, itemsize, covered);
    memcpy(before, arena, ARENA);
    memcpy(expected, arena, ARENA);
    gts_error err;
    int rc;
    if (fuzz_bool(in)) {
        unsigned char item[16];
        for (int b = 0; b < 16; ++b)
            item[b] = fuzz_bool(in) ? 0x5a : fuzz_u8(in);
        for (int64_t k = 0; k < count; ++k)
            memcpy(expected + dst_at[k], item, (size_t)itemsize);
        rc = gts_fill(arena + dst.base, ndim, shape, dst.strides, itemsize, item, fuzz_error(&err));
    } else {
        static unsigned char temporary[sizeof dst_at / sizeof *dst_at * 16];
        for (int64_t k = 0; k < count; ++k)
            memcpy(temporary + k * itemsize, before + src_at[k], (size_t)itemsize);
        for (int64_t k = 0; k < count; ++k)
            memcpy(expected + dst_at[k], temporary + k * itemsize, (size_t)itemsize);
        rc = gts_copy(arena + dst.base, dst.strides, arena + src.base, src.strides, ndim, shape,
                      itemsize, fuzz_error(&err));
        /* a destination that repeats an element (stride 0) is refused */
        bool repeats = false;
        for (int d = 0; d < ndim && count > 0; ++d)
            repeats = repeats || (shape[d] > 1 && dst.strides[d] == 0);
        if (repeats) {
            FUZZ_CHECK(rc == GTS_EINVAL);
            fuzz_check_error(rc, &err);
            FUZZ_CHECK(memcmp(arena, before, ARENA) == 0);
            return;
        }
    }
    FUZZ_CHECK(rc == GTS_OK);
    compare(arena, expected, before, covered, distinct);
}

/* Arguments that must be refused (or, for empty arrays, do nothing). */
static void run_hostile(fuzz_input *in, unsigned char *arena)
{
    bool fill = fuzz_bool(in);
    int ndim = (int)fuzz_range(in, -2, GTS_MAX_NDIM + 2);
    int count = ndim < 0 ? 0 : ndim > GTS_MAX_NDIM ? GTS_MAX_NDIM : ndim;
    int64_t shape[GTS_MAX_NDIM], dst_strides[GTS_MAX_NDIM], src_strides[GTS_MAX_NDIM];
    bool empty = false, negative = false;
    wide elements = 1, dst_low = 0, dst_high = 0, src_low = 0, src_high = 0;
    int64_t itemsize = fuzz_bool(in) ? (int64_t)1 << fuzz_range(in, 0, 4) : fuzz_hostile(in);
    bool item_ok = itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 ||
                   itemsize == 16;
    for (int d = 0; d < count; ++d) {
        shape[d] = fuzz_bool(in) ? fuzz_range(in, 0, 3) : fuzz_hostile(in);
        dst_strides[d] = fuzz_bool(in) ? fuzz_range(in, -2, 2) : fuzz_hostile(in);
        src_strides[d] = fuzz_bool(in) ? fuzz_range(in, -2, 2) : fuzz_hostile(in);
        empty = empty || shape[d] == 0;
        negative = negative || shape[d] < 0;
        if (shape[d] <= 0)
            continue;
        if (elements <= INT64_MAX)
            elements *= shape[d];
        wide reach = fuzz_saturate((wide)(shape[d] - 1) * dst_strides[d]);
        wide *end = reach < 0 ? &dst_low : &dst_high;
        *end = fuzz_saturate(*end + reach);
        reach = fuzz_saturate((wide)(shape[d] - 1) * src_strides[d]);
        end = reach < 0 ? &src_low : &src_high;
        *end = fuzz_saturate(*end + reach);
    }
    bool ndim_ok = ndim >= 0 && ndim <= GTS_MAX_NDIM;
    bool too_big = elements > INT64_MAX || dst_low < INT64_MIN || dst_high + itemsize > INT64_MAX ||
                   (!fill && (src_low < INT64_MIN || src_high + itemsize > INT64_MAX));
    bool must_fail = !ndim_ok || negative || !item_ok || (!empty && too_big);
    if (!must_fail && !empty)
        return; /* a valid array somewhere in memory: not ours to write */
    bool may_fail = empty && too_big; /* nothing to write, nonsense strides: either is fine */
    memset(arena, 0x3c, ARENA);
    unsigned char item[16] = {0};
    gts_error err;
    bool null_data = empty && fuzz_bool(in);
    unsigned char *dst = null_data ? NULL : arena, *src = null_data ? NULL : arena + ARENA / 2;
    int rc = fill ? gts_fill(dst, ndim, shape, dst_strides, itemsize, item, fuzz_error(&err))
                           : gts_copy(dst, dst_strides, src, src_strides, ndim, shape, itemsize,
                                      fuzz_error(&err));
    if (must_fail || (may_fail && rc != GTS_OK))
        fuzz_check_error(rc, &err);
    else
        FUZZ_CHECK(rc == GTS_OK);
    for (int b = 0; b < ARENA; ++b)
        FUZZ_CHECK(arena[b] == 0x3c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    unsigned char *arena = malloc(ARENA);
    if (fuzz_u8(&in) < 224)
        run_small(&in, arena);
    else
        run_hostile(&in, arena);
    free(arena);
    return 0;
}
