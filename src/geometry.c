#include "gtstore/geometry.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "geometry_private.h"
#include "tuple_text.h"
#include "strided_range.h"

static int too_big(gts_error *err, int ndim, const int64_t *shape)
{
    char text[160] = "";
    size_t used = 0;
    for (int d = 0; d < ndim && used + 24 < sizeof text; ++d)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", d ? ", " : "",
                                 (long long)shape[d]);
    return gts_error_set(err, GTS_EOVERFLOW,
                         "shape: (%s) is too big; its size in bytes does not fit in 64 bits", text);
}

/* A geometry whose sizes do not fit: the fault of alignment_size where the
 * shape alone fits (alignment 1 pads nothing and adds no byte to the
 * allocation: gts_strides_contiguous checks the same products then), else
 * of the shape. */
static int does_not_fit(gts_error *err, int ndim, const int64_t *shape, int64_t itemsize,
                        int64_t alignment)
{
    int64_t strides[GTS_MAX_NDIM], size = itemsize;
    gts_error ignored;
    if (gts_strides_contiguous(ndim, shape, itemsize, strides, &ignored) != GTS_OK)
        return too_big(err, ndim, shape);
    if (ndim > 0)
        size = strides[0] * (shape[0] > 0 ? shape[0] : 1); /* checked there */
    if ((uint64_t)size > (uint64_t)PTRDIFF_MAX)
        return too_big(err, ndim, shape);
    char text[GTS__TUPLE_TEXT_SIZE];
    gts__shape_text(ndim, shape, text);
    return gts_error_set(err, GTS_EOVERFLOW,
                         "alignment_size: %lld bytes is too big for shape %s: with the padding "
                         "it needs, the size in bytes does not fit in 64 bits",
                         (long long)alignment, text);
}

bool gts__alignment_suits(int64_t alignment, int64_t itemsize)
{
    return alignment >= 1 && (alignment % itemsize == 0 || itemsize % alignment == 0);
}

int gts__alignment_check(int64_t alignment, int64_t itemsize, gts_error *err)
{
    if (alignment < 1)
        return gts_error_set(err, GTS_EINVAL, "%lld bytes is not positive", (long long)alignment);
    if (!gts__alignment_suits(alignment, itemsize))
        return gts_error_set(err, GTS_EINVAL,
                             "%lld bytes and the itemsize (%lld bytes) must divide one another",
                             (long long)alignment, (long long)itemsize);
    return GTS_OK;
}

static int check_arguments(int ndim, const int64_t *shape, const int *layout, int64_t itemsize,
                           int64_t alignment, const int64_t *aligned_index, gts_error *err)
{
    if (ndim < 0 || ndim > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [0, %d]", ndim, GTS_MAX_NDIM);
    if (itemsize < 1)
        return gts_error_set(err, GTS_EINVAL, "itemsize: %lld is not positive", (long long)itemsize);
    gts_error inner;
    if (gts__alignment_check(alignment, itemsize, &inner) != GTS_OK)
        return gts_error_set(err, inner.code, "alignment_size: %s", inner.message);
    for (int d = 0; d < ndim; ++d)
        if (shape[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "shape: negative extent %lld at position %d",
                                 (long long)shape[d], d);
    int rc = gts_layout_check(ndim, layout, err);
    if (rc)
        return rc;
    for (int d = 0; aligned_index && d < ndim; ++d) {
        int64_t index = aligned_index[d];
        if (index < 0 || (index >= shape[d] && index != 0))
            return gts_error_set(err, GTS_EINVAL,
                                 "aligned_index: %lld at position %d is outside the shape "
                                 "(extent %lld)",
                                 (long long)index, d, (long long)shape[d]);
    }
    return GTS_OK;
}

int gts_geometry_init(gts_geometry *g, int ndim, const int64_t *shape, const int *layout,
                      int64_t itemsize, int64_t alignment, const int64_t *aligned_index,
                      gts_error *err)
{
    int rc = check_arguments(ndim, shape, layout, itemsize, alignment, aligned_index, err);
    if (rc)
        return rc;
    g->ndim = ndim;
    g->itemsize = itemsize;
    g->alignment = alignment;
    int64_t block = gts_alignment_elements(alignment, itemsize); /* elements per block */
    int contiguous = gts_layout_contiguous_dim(ndim, layout);
    int by_rank[GTS_MAX_NDIM];
    for (int d = 0; d < ndim; ++d) {
        g->layout[d] = layout[d];
        g->shape[d] = shape[d];
        g->padded_shape[d] = shape[d];
        g->aligned_index[d] = aligned_index ? aligned_index[d] : 0;
        by_rank[layout[d]] = d;
    }
    if (ndim > 0) {
        int64_t rounded;
        if (gts_add_overflow(shape[contiguous], block - 1, &rounded))
            return does_not_fit(err, ndim, shape, itemsize, alignment);
        g->padded_shape[contiguous] = rounded / block * block;
    }
    /* Strides count an empty extent as 1 (as NumPy does) so that they never
     * collapse to 0; the span counts it as 0: an empty array spans no bytes. */
    int64_t stride = itemsize, span = itemsize;
    for (int r = ndim - 1; r >= 0; --r) {
        int d = by_rank[r];
        int64_t extent = g->padded_shape[d];
        g->strides[d] = stride;
        if (gts_mul_overflow(stride, extent > 0 ? extent : 1, &stride) ||
            gts_mul_overflow(span, extent, &span))
            return does_not_fit(err, ndim, shape, itemsize, alignment);
    }
    g->span = span;
    if (gts_add_overflow(span, alignment - 1, &g->alloc_size) ||
        (uint64_t)g->alloc_size > (uint64_t)PTRDIFF_MAX)
        return does_not_fit(err, ndim, shape, itemsize, alignment);
    return GTS_OK;
}

int64_t gts_geometry_offset(const gts_geometry *g, uintptr_t base)
{
    int64_t alignment = g->alignment;
    int64_t block = alignment > g->itemsize ? alignment / g->itemsize : 1;
    int64_t to_aligned_point = 0;
    if (g->ndim > 0) {
        int64_t index = g->aligned_index[gts_layout_contiguous_dim(g->ndim, g->layout)];
        to_aligned_point = ((index + block - 1) / block * block - index) * g->itemsize;
    }
    uint64_t a = (uint64_t)alignment;
    uint64_t base_misalignment = (a - base % a) % a;
    /* both parts are below A <= INT64_MAX: their sum fits in 64 unsigned bits */
    return (int64_t)(((uint64_t)to_aligned_point + base_misalignment) % a);
}

int64_t gts_alignment_elements(int64_t alignment, int64_t itemsize)
{
    return alignment > itemsize ? alignment / itemsize : 1;
}

int64_t gts_geometry_size(const gts_geometry *g)
{
    int64_t size = 1;
    for (int d = 0; d < g->ndim; ++d)
        size *= g->shape[d]; /* cannot overflow: bounded by the checked span */
    return size;
}

/* The checks shared by the functions on a strided array's shape, so that
 * they agree on what an array is; *empty (may be NULL) tells whether it has
 * no elements. */
static int check_array(int ndim, const int64_t *shape, int64_t itemsize, bool *empty,
                       gts_error *err)
{
    if (ndim < 0 || ndim > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is not between 0 and %d", ndim,
                             GTS_MAX_NDIM);
    if (itemsize < 1)
        return gts_error_set(err, GTS_EINVAL, "itemsize: %lld bytes is not positive",
                             (long long)itemsize);
    bool any_empty = false;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "shape: %lld in dimension %d is negative",
                                 (long long)shape[d], d);
        any_empty = any_empty || shape[d] == 0;
    }
    if (empty)
        *empty = any_empty;
    return GTS_OK;
}

int gts_strided_extent(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       int64_t *low, int64_t *high, gts_error *err)
{
    bool empty = false;
    int rc = check_array(ndim, shape, itemsize, &empty, err);
    if (rc)
        return rc;
    if (empty) {
        *low = *high = 0;
        return GTS_OK;
    }
    int64_t lo = 0, hi = itemsize;
    for (int d = 0; d < ndim; ++d) {
        int64_t reach;
        if (gts_mul_overflow(shape[d] - 1, strides[d], &reach) ||
            gts_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
            return gts_error_set(err, GTS_EOVERFLOW,
                                 "strides: the extent of dimension %d (%lld elements, stride %lld "
                                 "bytes) does not fit in 64 bits",
                                 d, (long long)shape[d], (long long)strides[d]);
    }
    *low = lo;
    *high = hi;
    return GTS_OK;
}

int gts_strides_contiguous(int ndim, const int64_t *shape, int64_t itemsize, int64_t *strides,
                           gts_error *err)
{
    int rc = check_array(ndim, shape, itemsize, NULL, err);
    if (rc)
        return rc;
    int64_t computed[GTS_MAX_NDIM]; /* `strides` stays untouched on failure */
    int64_t stride = itemsize;
    for (int d = ndim - 1; d >= 0; --d) {
        computed[d] = stride;
        /* The last product is no stride, but checking it too bounds the
         * array's size in bytes, as NumPy does: callers may then compute it
         * unchecked. */
        if (gts_mul_overflow(stride, shape[d] > 0 ? shape[d] : 1, &stride))
            return too_big(err, ndim, shape);
    }
    for (int d = 0; d < ndim; ++d)
        strides[d] = computed[d];
    return GTS_OK;
}

/* For devices that move or check the bytes of strided arrays (strided_range.h). */
int gts__strided_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       bool *valid, int64_t *low, int64_t *high, gts_error *err)
{
    *valid = false;
    *low = *high = 0;
    if (ndim < 0 || ndim > GTS_MAX_NDIM || (ndim > 0 && !shape) || itemsize <= 0)
        return GTS_OK;
    for (int d = 0; d < ndim; ++d)
        if (shape[d] <= 0)
            return GTS_OK; /* empty, or refused by the kernel */
    if (ndim > 0 && !strides)
        return GTS_OK;
    *valid = true;
    return gts_strided_extent(ndim, shape, strides, itemsize, low, high, err);
}
