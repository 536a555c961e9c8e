#include "gtstore/layout.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int check_ndim(int ndim, gts_error *err)
{
    if (ndim < 0 || ndim > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [0, %d]", ndim, GTS_MAX_NDIM);
    return GTS_OK;
}

int gts_dims_default(int ndim, gts_dim *dims, gts_error *err)
{
    int rc = check_ndim(ndim, err);
    if (rc)
        return rc;
    static const gts_dim cartesian[3] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K};
    for (int d = 0; d < ndim; ++d)
        dims[d] = d < 3 ? cartesian[d] : d - 3;
    return GTS_OK;
}

int gts_dim_parse(const char *label, gts_dim *out, gts_error *err)
{
    if (label && label[0] && !label[1] && (label[0] == 'I' || label[0] == 'J' || label[0] == 'K')) {
        *out = label[0] == 'I' ? GTS_DIM_I : label[0] == 'J' ? GTS_DIM_J : GTS_DIM_K;
        return GTS_OK;
    }
    long value = 0;
    const char *p = label;
    for (; p && *p >= '0' && *p <= '9' && value <= GTS_MAX_DATA_DIM; ++p)
        value = value * 10 + (*p - '0');
    bool leading_zero = label && label[0] == '0' && label[1] != '\0'; /* "01" vs "1" */
    if (!label || p == label || *p || value > GTS_MAX_DATA_DIM || leading_zero)
        return gts_error_set(err, GTS_EINVAL,
                             "dims: invalid label '%s' (expected 'I', 'J', 'K' or a data "
                             "dimension number '0', '1', ...)",
                             label ? label : "(null)");
    *out = (gts_dim)value;
    return GTS_OK;
}

void gts_dim_format(gts_dim dim, char text[GTS_DIM_TEXT_SIZE])
{
    if (dim < GTS_DIM_I)
        snprintf(text, GTS_DIM_TEXT_SIZE, "?");
    else if (dim < 0)
        snprintf(text, GTS_DIM_TEXT_SIZE, "%c", "IJK"[dim - GTS_DIM_I]);
    else
        snprintf(text, GTS_DIM_TEXT_SIZE, "%d", (int)(dim % (GTS_MAX_DATA_DIM + 1)));
}

int gts_dims_axis(int ndim, const gts_dim *dims, const char *label, int *axis, gts_error *err)
{
    gts_dim dim;
    int rc = check_ndim(ndim, err);
    if (rc)
        return rc;
    bool valid = gts_dim_parse(label, &dim, NULL) == GTS_OK;
    for (int d = 0; valid && d < ndim; ++d) {
        if (dims[d] == dim) {
            *axis = d;
            return GTS_OK;
        }
    }
    char have[GTS_MAX_NDIM * (GTS_DIM_TEXT_SIZE + 4) + 1] = "";
    size_t used = 0;
    for (int d = 0; d < ndim; ++d) {
        char text[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[d], text);
        used += (size_t)snprintf(have + used, sizeof have - used, "%s'%s'", d ? ", " : "", text);
    }
    return gts_error_set(err, GTS_EINVAL, "'%.20s' is not one of the dims (%s)%s",
                         label ? label : "(null)", have,
                         valid ? "" : " (a label is 'I', 'J', 'K' or a data dimension number)");
}

int gts_dims_check(int ndim, const gts_dim *dims, gts_error *err)
{
    int rc = check_ndim(ndim, err);
    if (rc)
        return rc;
    for (int d = 0; d < ndim; ++d) {
        if (dims[d] < GTS_DIM_I || dims[d] > GTS_MAX_DATA_DIM)
            return gts_error_set(err, GTS_EINVAL, "dims: invalid label %d at position %d",
                                 (int)dims[d], d);
        for (int e = 0; e < d; ++e) {
            if (dims[e] == dims[d]) {
                char text[GTS_DIM_TEXT_SIZE];
                gts_dim_format(dims[d], text);
                return gts_error_set(err, GTS_EINVAL,
                                     "dims: '%s' appears twice (positions %d and %d)", text, e, d);
            }
        }
    }
    return GTS_OK;
}

int gts_dims_parse(const char *text, gts_dim *dims, int *ndim, gts_error *err)
{
    size_t n = text ? strlen(text) : 0;
    if (n > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "dims: '%s' has more than %d labels", text,
                             GTS_MAX_NDIM);
    for (size_t d = 0; d < n; ++d) {
        char label[2] = {text[d], '\0'};
        if (gts_dim_parse(label, &dims[d], NULL))
            return gts_error_set(err, GTS_EINVAL,
                                 "dims: invalid label '%c' in '%s' (expected I, J, K or a digit)",
                                 text[d], text);
    }
    int rc = gts_dims_check((int)n, dims, err);
    if (rc)
        return rc;
    *ndim = (int)n;
    return GTS_OK;
}

int gts_dims_format(int ndim, const gts_dim *dims, char text[GTS_MAX_NDIM + 1], gts_error *err)
{
    int rc = gts_dims_check(ndim, dims, err);
    if (rc)
        return rc;
    for (int d = 0; d < ndim; ++d) {
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[d], label);
        if (label[1] != '\0')
            return gts_error_set(err, GTS_EINVAL,
                                 "label '%s' (position %d) has more than one character, which a "
                                 "dims string cannot hold",
                                 label, d);
        text[d] = label[0];
    }
    text[ndim] = '\0';
    return GTS_OK;
}

int gts_layout_check(int ndim, const int *layout, gts_error *err)
{
    int rc = check_ndim(ndim, err);
    if (rc)
        return rc;
    unsigned char seen[GTS_MAX_NDIM] = {0};
    for (int d = 0; d < ndim; ++d) {
        if (layout[d] < 0 || layout[d] >= ndim || seen[layout[d]])
            return gts_error_set(err, GTS_EINVAL,
                                 "layout: not a permutation of 0..%d (entry %d at position %d)",
                                 ndim - 1, layout[d], d);
        seen[layout[d]] = 1;
    }
    return GTS_OK;
}

void gts_layout_c(int ndim, int *layout)
{
    for (int d = 0; d < ndim; ++d)
        layout[d] = d;
}

void gts_layout_f(int ndim, int *layout)
{
    for (int d = 0; d < ndim; ++d)
        layout[d] = ndim - 1 - d;
}

static int index_of(int n, const gts_dim *labels, gts_dim label)
{
    for (int i = 0; i < n; ++i)
        if (labels[i] == label)
            return i;
    return -1;
}

int gts_layout_from_order(int ndim, const gts_dim *dims, int norder, const gts_dim *order,
                          int *layout, gts_error *err)
{
    int rc = gts_dims_check(ndim, dims, err);
    if (rc)
        return rc;
    if (gts_dims_check(norder, order, NULL))
        return gts_error_set(err, GTS_EINVAL, "layout: the axis order repeats or misnames a label");
    int placed[GTS_MAX_NDIM]; /* dims from the largest stride inwards */
    int n = 0;
    /* Data dimensions the order leaves out are outermost, lowest number first. */
    for (int d = 0; d < ndim; ++d) {
        if (dims[d] < 0 || index_of(norder, order, dims[d]) >= 0)
            continue;
        int k = n++;
        for (; k > 0 && dims[placed[k - 1]] > dims[d]; --k)
            placed[k] = placed[k - 1];
        placed[k] = d;
    }
    for (int i = 0; i < norder; ++i) {
        int d = index_of(ndim, dims, order[i]);
        if (d >= 0)
            placed[n++] = d;
    }
    for (int d = 0; d < ndim && n != ndim; ++d) {
        if (index_of(norder, order, dims[d]) < 0 && dims[d] < 0) {
            char text[GTS_DIM_TEXT_SIZE];
            gts_dim_format(dims[d], text);
            return gts_error_set(err, GTS_EINVAL,
                                 "layout: the axis order does not place dimension '%s'", text);
        }
    }
    for (int r = 0; r < ndim; ++r)
        layout[placed[r]] = r;
    return GTS_OK;
}

/* A message of the parsers below without the parameter it starts with
 * ("dims: ", "layout: "): quoted inside a message about the layout, which
 * names its own parameter once. */
static const char *reason(const gts_error *inner)
{
    const char *colon = strstr(inner->message, ": ");
    const char *space = strchr(inner->message, ' ');
    return colon && (!space || colon < space) ? colon + 2 : inner->message;
}

int gts_layout_from_axes(int ndim, const gts_dim *dims, const char *axes, int *layout,
                         gts_error *err)
{
    gts_dim order[GTS_MAX_NDIM];
    int norder = 0;
    gts_error inner;
    if (!axes)
        return gts_error_set(err, GTS_EINVAL, "layout: the axis order is NULL");
    if (gts_dims_parse(axes, order, &norder, &inner))
        return gts_error_set(err, GTS_EINVAL, "layout: '%s' is not an axis order such as 'KJI' (%s)",
                             axes, reason(&inner));
    int rc = gts_layout_from_order(ndim, dims, norder, order, layout, &inner);
    if (rc)
        return gts_error_set(err, rc, "layout: '%s' does not fit the dims (%s)", axes,
                             reason(&inner));
    return GTS_OK;
}

int gts_layout_ijk_ranks(const char *axes, int ranks[3], gts_error *err)
{
    gts_dim order[GTS_MAX_NDIM];
    int n = 0;
    bool seen[3] = {false, false, false};
    bool ok = axes && gts_dims_parse(axes, order, &n, NULL) == GTS_OK && n == 3;
    for (int r = 0; ok && r < 3; ++r) {
        ok = order[r] < 0 && !seen[order[r] - GTS_DIM_I]; /* I, J and K, each once */
        if (ok) {
            seen[order[r] - GTS_DIM_I] = true;
            ranks[order[r] - GTS_DIM_I] = r;
        }
    }
    if (!ok)
        return gts_error_set(err, GTS_EINVAL,
                             "layout: '%.200s' is not an order of the axes I, J and K such as "
                             "'KJI'",
                             axes ? axes : "(null)");
    return GTS_OK;
}

static uint64_t magnitude(int64_t value)
{
    return value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
}

bool gts_is_contiguous(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       char order)
{
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return true; /* no elements: any strides are contiguous */
    int64_t expected = itemsize;
    for (int k = 0; k < ndim; ++k) {
        int d = order == 'F' ? k : ndim - 1 - k;
        if (shape[d] != 1 && strides[d] != expected)
            return false;
        if (__builtin_mul_overflow(expected, shape[d], &expected))
            return false;
    }
    return true;
}

/* An insertion sort of the dimensions, outermost first, by decreasing
 * absolute stride (PyArray_CreateMultiSortedStridePerm). A pair with a
 * dimension of extent 1 is ambiguous (its stride says nothing) and is
 * passed over, so such a dimension keeps its place in index order, as do
 * ties. */
static void sort_by_strides(int ndim, const int64_t *shape, const int64_t *strides, int *layout)
{
    int order[GTS_MAX_NDIM]; /* order[rank] = dimension */
    for (int i = 0; i < ndim; ++i) {
        int at = i;
        for (int j = i - 1; j >= 0; --j) {
            int e = order[j];
            if (shape[i] == 1 || shape[e] == 1)
                continue; /* ambiguous: look further out */
            if (magnitude(strides[i]) <= magnitude(strides[e]))
                break;
            at = j;
        }
        memmove(order + at + 1, order + at, (size_t)(i - at) * sizeof *order);
        order[at] = i;
    }
    for (int rank = 0; rank < ndim; ++rank)
        layout[order[rank]] = rank;
}

void gts_layout_from_strides(int ndim, const int64_t *shape, const int64_t *strides,
                             int64_t itemsize, int *layout)
{
    if (gts_is_contiguous(ndim, shape, strides, itemsize, 'C'))
        gts_layout_c(ndim, layout);
    else if (gts_is_contiguous(ndim, shape, strides, itemsize, 'F'))
        gts_layout_f(ndim, layout);
    else
        sort_by_strides(ndim, shape, strides, layout);
}

int gts_layout_contiguous_dim(int ndim, const int *layout)
{
    int best = -1;
    for (int d = 0; d < ndim; ++d)
        if (best < 0 || layout[d] > layout[best])
            best = d;
    return best;
}
