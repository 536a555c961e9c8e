/* Allocation geometry: gts_geometry_init with random shapes, layouts,
 * itemsizes, alignments and aligned indices (hostile values included), and
 * gts_strided_extent with any shapes and strides.
 *
 * Checks, recomputed in 128-bit arithmetic: a successful geometry pads only
 * the contiguous dimension, to a multiple of B = max(A / itemsize, 1); its
 * strides are the products of padded extents in layout order; span and
 * alloc_size are what geometry.h says and fit in ptrdiff_t; for any base
 * address, the offset lies in [0, A), the aligned point is aligned and
 * every element lies inside the alloc_size bytes. A geometry is refused
 * exactly when an argument is out of range or a size does not fit. Small
 * geometries are allocated and their first, last and aligned elements
 * written (ASan checks the block). gts_strided_extent agrees with the exact
 * extent, fails with GTS_EOVERFLOW exactly when that does not fit in 64
 * bits, and refuses negative extents and itemsizes below 1. */
#include "fuzz_input.h"
#include "gtstore/buffer.h"
#include "gtstore/geometry.h"

typedef fuzz_wide wide;

static bool fits(wide value)
{
    return value >= INT64_MIN && value <= INT64_MAX;
}

/* Whether the arguments are in range (not whether the sizes fit). */
static bool arguments_valid(int ndim, const int64_t *shape, const int *layout, int64_t itemsize,
                            int64_t alignment, const int64_t *aligned_index)
{
    if (ndim < 0 || ndim > GTS_MAX_NDIM || itemsize < 1 || alignment < 1)
        return false;
    if (alignment % itemsize != 0 && itemsize % alignment != 0)
        return false;
    bool seen[GTS_MAX_NDIM] = {false};
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0 || layout[d] < 0 || layout[d] >= ndim || seen[layout[d]])
            return false;
        seen[layout[d]] = true;
        if (aligned_index[d] < 0 || (aligned_index[d] >= shape[d] && aligned_index[d] != 0))
            return false;
    }
    return true;
}

static void check_geometry(const gts_geometry *g, const int64_t *shape, const int *layout,
                           int64_t itemsize, int64_t alignment, const int64_t *aligned_index,
                           uintptr_t base)
{
    int n = g->ndim;
    int64_t block = alignment > itemsize ? alignment / itemsize : 1;
    int contiguous = -1, by_rank[GTS_MAX_NDIM];
    for (int d = 0; d < n; ++d) {
        by_rank[layout[d]] = d;
        if (layout[d] == n - 1)
            contiguous = d;
    }
    FUZZ_CHECK(g->itemsize == itemsize && g->alignment == alignment);
    /* padding: the contiguous dim only, to the next multiple of B */
    for (int d = 0; d < n; ++d) {
        FUZZ_CHECK(g->shape[d] == shape[d] && g->layout[d] == layout[d]);
        FUZZ_CHECK(g->aligned_index[d] == aligned_index[d]);
        if (d != contiguous) {
            FUZZ_CHECK(g->padded_shape[d] == shape[d]);
            continue;
        }
        FUZZ_CHECK(g->padded_shape[d] % block == 0);
        FUZZ_CHECK(g->padded_shape[d] >= shape[d] && g->padded_shape[d] - shape[d] < block);
    }
    /* strides: products of padded extents (empty ones counting 1) */
    wide stride = itemsize, span = itemsize;
    for (int r = n - 1; r >= 0; --r) {
        int d = by_rank[r];
        FUZZ_CHECK(g->strides[d] == stride);
        stride *= g->padded_shape[d] > 0 ? g->padded_shape[d] : 1;
        span *= g->padded_shape[d];
    }
    FUZZ_CHECK(g->span == span);
    FUZZ_CHECK(g->alloc_size == span + alignment - 1);
    FUZZ_CHECK((uint64_t)g->alloc_size <= (uint64_t)PTRDIFF_MAX);
    wide size = 1;
    for (int d = 0; d < n; ++d)
        size *= shape[d];
    FUZZ_CHECK(gts_geometry_size(g) == size);

    int64_t offset = gts_geometry_offset(g, base);
    FUZZ_CHECK(offset >= 0 && offset < alignment);
    if (size == 0)
        return;
    wide last = offset + itemsize, point = (wide)base + offset;
    for (int d = 0; d < n; ++d) {
        last += (wide)(shape[d] - 1) * g->strides[d];
        point += (wide)aligned_index[d] * g->strides[d];
    }
    FUZZ_CHECK(last <= g->alloc_size);
    FUZZ_CHECK(point % alignment == 0);
}

/* Allocates a small geometry and writes its extreme and aligned elements. */
static void allocate(const gts_geometry *g)
{
    gts_error err;
    gts_buffer *buffer;
    int64_t offset;
    int rc = gts_buffer_alloc_geometry(g, GTS_ALLOC_ZERO, &buffer, &offset, fuzz_error(&err));
    if (rc) {
        fuzz_check_error(rc, &err);
        return;
    }
    char *base = (char *)gts_buffer_host(buffer);
    FUZZ_CHECK(gts_buffer_size(buffer) == g->alloc_size);
    FUZZ_CHECK(offset == gts_geometry_offset(g, (uintptr_t)base));
    if (gts_geometry_size(g) > 0) {
        int64_t last = offset, point = offset;
        for (int d = 0; d < g->ndim; ++d) {
            last += (g->shape[d] - 1) * g->strides[d];
            point += g->aligned_index[d] * g->strides[d];
        }
        memset(base + offset, 1, (size_t)g->itemsize);
        memset(base + last, 2, (size_t)g->itemsize);
        memset(base + point, 3, (size_t)g->itemsize);
        FUZZ_CHECK((uintptr_t)(base + point) % (uint64_t)g->alignment == 0);
    }
    gts_buffer_release(buffer);
}

static void fuzz_geometry(fuzz_input *in)
{
    bool hostile = fuzz_bool(in);
    int ndim = hostile ? (int)fuzz_range(in, -1, GTS_MAX_NDIM + 1) : (int)fuzz_range(in, 0, 5);
    int count = ndim < 0 ? 0 : ndim > GTS_MAX_NDIM ? GTS_MAX_NDIM : ndim;
    int64_t shape[GTS_MAX_NDIM], aligned_index[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM];
    fuzz_permutation(in, count, layout);
    if (hostile && fuzz_bool(in) && count > 0) /* break the permutation */
        layout[fuzz_range(in, 0, count - 1)] = (int)fuzz_range(in, -1, count);
    for (int d = 0; d < count; ++d) {
        shape[d] = hostile && fuzz_bool(in) ? fuzz_hostile(in) : fuzz_range(in, 0, 40);
        aligned_index[d] = hostile && fuzz_bool(in) ? fuzz_hostile(in)
                                                    : fuzz_range(in, 0, shape[d] > 0 ? shape[d] - 1 : 0);
    }
    static const int64_t itemsizes[] = {1, 2, 4, 8, 16, 3, 12};
    int64_t itemsize = hostile && fuzz_bool(in) ? fuzz_hostile(in) : itemsizes[fuzz_range(in, 0, 6)];
    int64_t alignment = hostile && fuzz_bool(in) ? fuzz_hostile(in)
                                                 : (int64_t)1 << fuzz_range(in, 0, 12);
    bool null_index = fuzz_u8(in) < 16;
    uintptr_t base = (uintptr_t)fuzz_bits(in, 8);

    gts_error err;
    gts_geometry g;
    int64_t zeros[GTS_MAX_NDIM] = {0};
    const int64_t *index = null_index ? zeros : aligned_index;
    int rc = gts_geometry_init(&g, ndim, shape, layout, itemsize, alignment,
                               null_index ? NULL : aligned_index, fuzz_error(&err));
    bool valid = arguments_valid(ndim, shape, layout, itemsize, alignment, index);
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        /* a refusal of valid arguments is an overflow, and a true one */
        FUZZ_CHECK(valid == (rc == GTS_EOVERFLOW));
        if (valid) {
            int64_t block = alignment > itemsize ? alignment / itemsize : 1;
            int by_rank[GTS_MAX_NDIM];
            for (int d = 0; d < ndim; ++d)
                by_rank[layout[d]] = d;
            wide stride = itemsize, span = itemsize;
            bool overflow = ndim > 0 && !fits((wide)shape[by_rank[ndim - 1]] + block - 1);
            for (int r = ndim - 1; r >= 0 && !overflow; --r) {
                int d = by_rank[r];
                wide extent = shape[d];
                if (r == ndim - 1)
                    extent = (extent + block - 1) / block * block;
                stride *= extent > 0 ? extent : 1;
                span *= extent;
                overflow = !fits(stride);
            }
            FUZZ_CHECK(overflow || span + alignment - 1 > PTRDIFF_MAX);
        }
        return;
    }
    FUZZ_CHECK(valid);
    check_geometry(&g, shape, layout, itemsize, alignment, index, base);
    if (g.alloc_size <= (64 << 10))
        allocate(&g);
}

static void fuzz_extent(fuzz_input *in)
{
    int ndim = (int)fuzz_range(in, 0, 4);
    int64_t shape[4], strides[4];
    bool negative = false;
    for (int d = 0; d < ndim; ++d) {
        shape[d] = fuzz_bool(in) ? fuzz_range(in, 0, 50) : fuzz_hostile(in);
        strides[d] = fuzz_bool(in) ? fuzz_range(in, -64, 64) : fuzz_hostile(in);
        negative = negative || shape[d] < 0;
    }
    int64_t itemsize = fuzz_bool(in) ? fuzz_range(in, 1, 16) : fuzz_hostile(in);
    gts_error err;
    int64_t low = 0, high = 0;
    int rc = gts_strided_extent(ndim, shape, strides, itemsize, &low, &high, fuzz_error(&err));
    if (negative || itemsize < 1) {
        FUZZ_CHECK(rc == GTS_EINVAL);
        fuzz_check_error(rc, &err);
        return;
    }
    wide lo = 0, hi = itemsize;
    bool ok = true, empty = false;
    for (int d = 0; d < ndim; ++d)
        empty = empty || shape[d] == 0;
    for (int d = 0; d < ndim && !empty && ok; ++d) {
        wide reach = (wide)(shape[d] - 1) * strides[d];
        if (reach < 0)
            lo += reach;
        else
            hi += reach;
        ok = fits(reach) && fits(lo) && fits(hi); /* stop before 128 bits overflow */
    }
    ok = empty || ok;
    FUZZ_CHECK((rc == GTS_OK) == ok);
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    FUZZ_CHECK(empty ? low == 0 && high == 0 : low == lo && high == hi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    fuzz_geometry(&in);
    fuzz_extent(&in);
    return 0;
}
