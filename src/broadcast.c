/* Broadcasting by dims and the output parameters of GDP-3's first draft. */
#include "gtstore/broadcast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage_private.h"
#include "tuple_text.h"

static int find_dim(int ndim, const gts_dim *dims, gts_dim dim)
{
    for (int d = 0; d < ndim; ++d)
        if (dims[d] == dim)
            return d;
    return -1;
}

static int compare_dims(const void *a, const void *b)
{
    gts_dim x = *(const gts_dim *)a, y = *(const gts_dim *)b;
    return (x > y) - (x < y);
}

/* How an operand's axes map to labels: a storage's own, the result's in
 * order (an array of as many dimensions), I, J, K (a 3-d array), or none
 * (a scalar). */
typedef enum { BY_LABELS, BY_POSITION, BY_IJK, SCALAR } mapping;

static const gts_dim IJK[3] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K};

/* The dims arrays without dims line up with by position: a given output's,
 * else the storages' (before 3-d arrays add theirs), with their extents (1
 * where no storage has another). */
typedef struct base_dims {
    int ndim;
    gts_dim dims[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM];
    bool positional; /* the storages line up by position too (positional_dims) */
} base_dims;

/* Whether a 3-d array is I, J, K (GDP-3's first draft): unless it has exactly the
 * base's shape, which it then takes by position. Arrays of other
 * dimensions line up with the base by position where they have as many
 * dimensions (extents of 1 broadcasting, a mismatch reported by dim). */
static bool read_as_ijk(const gts_operand *op, const base_dims *base)
{
    if (op->storage || op->ndim != 3 || !op->shape)
        return false;
    if (base->ndim != 3)
        return true;
    for (int d = 0; d < 3; ++d)
        if (op->shape[d] != base->shape[d])
            return true;
    return false;
}

/* An operand's labels; by position they are the last of the dims arrays
 * line up with (`base`, before 3-d arrays add theirs), as NumPy aligns
 * shapes from the right: all of them for an array of as many dimensions. */
static const gts_dim *labels_of(const gts_operand *op, mapping how, const base_dims *base)
{
    int ndim = op->storage ? op->storage->ndim : op->ndim;
    return how == BY_LABELS ? op->storage->dims
           : how == BY_IJK  ? IJK
                            : base->dims + (base->ndim - ndim);
}

static int operand_ndim(const gts_operand *op)
{
    return op->storage ? op->storage->ndim : op->ndim;
}

static const int64_t *operand_shape(const gts_operand *op)
{
    return op->storage ? op->storage->shape : op->shape;
}

/* Adds `dim` to the union of `r` (no-op if present); false where the
 * union is full, which the caller reports. */
static bool add_dim(gts_broadcast *r, gts_dim dim)
{
    if (find_dim(r->ndim, r->dims, dim) >= 0)
        return true;
    if (r->ndim == GTS_MAX_NDIM)
        return false;
    r->dims[r->ndim++] = dim;
    return true;
}

static int too_many_dims(gts_error *err)
{
    return gts_error_set(err, GTS_EINVAL,
                         "operands: the result would have more than %d dims (the union of the "
                         "operands' dims)",
                         GTS_MAX_NDIM);
}

static bool same_dims(const gts_storage *a, const gts_storage *b)
{
    return a->ndim == b->ndim && memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof *a->dims) == 0;
}

/* An axis that None indexing added (gts_storage_insert_dim): a data dim of
 * extent 1 and stride 0. Storages gtstore allocates never have stride 0. */
static bool is_placeholder(const gts_storage *s, int d)
{
    return s->dims[d] >= 0 && s->shape[d] == 1 && s->strides[d] == 0;
}

/* Whether axis `p` of `nd` positions (aligned from the right) of `s` is
 * absent or a placeholder. */
static bool open_at(const gts_storage *s, int nd, int p)
{
    int d = p - (nd - s->ndim);
    return d < 0 || is_placeholder(s, d);
}

/* xarray's broadcasting (docs/storage.md, "Storages inside xarray"): xarray
 * lines its operands up by position, adding the dims one lacks by None
 * indexing, which gives an axis of extent 1 and stride 0 labelled with a
 * free data dim (a placeholder); its apply_ufunc leaves out the leading
 * ones, as NumPy aligns shapes from the right. Storages line up by position
 * from the right, each position taking its one label, where their labels
 * would otherwise grow the result (the union has more dims than the
 * longest), and at every position the labels other than placeholders are
 * one label, a different one at each position. Arrays without dims must
 * then be scalars or have as many dims as the longest. Else by labels. */
static bool positional_dims(int n, const gts_operand *ops, gts_broadcast *r, base_dims *base)
{
    const gts_storage *longest = NULL;
    int count = 0;
    for (int k = 0; k < n; ++k) {
        const gts_storage *s = ops[k].storage;
        if (s && (!longest || s->ndim > longest->ndim))
            longest = s;
        count += s != NULL;
    }
    if (count < 2 || r->ndim <= longest->ndim) /* r: the union of the labels */
        return false;
    int nd = longest->ndim;
    for (int k = 0; k < n; ++k)
        if (!ops[k].storage && ops[k].ndim != 0 && ops[k].ndim != nd)
            return false;
    gts_dim labels[GTS_MAX_NDIM];
    for (int p = 0; p < nd; ++p) {
        bool known = false;
        labels[p] = longest->dims[p]; /* where all are placeholders: the longest's */
        base->shape[p] = 1;
        for (int k = 0; k < n; ++k) {
            const gts_storage *s = ops[k].storage;
            if (!s || open_at(s, nd, p))
                continue;
            int d = p - (nd - s->ndim);
            if (known && s->dims[d] != labels[p])
                return false;
            known = true;
            labels[p] = s->dims[d];
            base->shape[p] = s->shape[d] != 1 ? s->shape[d] : base->shape[p];
        }
        if (find_dim(p, labels, labels[p]) >= 0)
            return false; /* one label at two positions */
    }
    r->ndim = base->ndim = nd;
    memcpy(r->dims, labels, (size_t)nd * sizeof *labels);
    memcpy(base->dims, labels, (size_t)nd * sizeof *labels);
    base->positional = true;
    return true;
}

/* The result's dims without a given output: the storages' if they agree,
 * else their labels by position where positional_dims finds xarray's
 * broadcasting, else their union, sorted; that is the base. 3-d arrays that do not fit it
 * by position are I, J, K and join the union with their dims of extent
 * other than 1. GTS_EINVAL where the union has more than GTS_MAX_NDIM. */
static int result_dims(int n, const gts_operand *ops, gts_broadcast *r, base_dims *base,
                       gts_error *err)
{
    const gts_storage *first = NULL;
    bool agree = true;
    for (int k = 0; k < n; ++k) {
        const gts_storage *s = ops[k].storage;
        if (!s)
            continue;
        agree = agree && (!first || same_dims(first, s));
        first = first ? first : s;
    }
    r->ndim = 0;
    for (int k = 0; k < n; ++k) {
        const gts_storage *s = ops[k].storage;
        for (int d = 0; s && d < s->ndim; ++d)
            if (!add_dim(r, s->dims[d]))
                return too_many_dims(err);
    }
    base->positional = false;
    if (!agree && positional_dims(n, ops, r, base))
        return GTS_OK;
    if (!agree)
        qsort(r->dims, (size_t)r->ndim, sizeof *r->dims, compare_dims);
    base->ndim = r->ndim;
    for (int p = 0; p < r->ndim; ++p) {
        base->dims[p] = r->dims[p];
        base->shape[p] = 1;
        for (int k = 0; k < n; ++k) {
            const gts_storage *s = ops[k].storage;
            int a = s ? find_dim(s->ndim, s->dims, r->dims[p]) : -1;
            if (a >= 0 && s->shape[a] != 1 && base->shape[p] == 1)
                base->shape[p] = s->shape[a];
        }
    }
    bool grown = false;
    for (int k = 0; k < n; ++k) {
        bool ijk = read_as_ijk(&ops[k], base);
        for (int d = 0; ijk && d < 3; ++d) {
            int before = r->ndim;
            if (ops[k].shape[d] != 1 && !add_dim(r, IJK[d]))
                return too_many_dims(err);
            grown = grown || r->ndim != before;
        }
    }
    if (grown)
        qsort(r->dims, (size_t)r->ndim, sizeof *r->dims, compare_dims);
    return GTS_OK;
}

/* gts__storage_check for operand k (k < 0: the output). */
static int check_storage(int k, const gts_storage *s, gts_error *err)
{
    if (k < 0)
        return gts__storage_check(s, "out", false, err);
    if (gts__storage_check(s, "operands", false, NULL) == GTS_OK)
        return GTS_OK; /* the operand's name is formatted only for the message */
    char who[32];
    snprintf(who, sizeof who, "operands: operand %d", k);
    return gts__storage_check(s, who, false, err);
}

static int mapping_of(int k, const gts_operand *op, const base_dims *base, mapping *how,
                      gts_error *err)
{
    if (op->storage) {
        *how = base->positional ? BY_POSITION : BY_LABELS;
        return GTS_OK; /* checked above */
    }
    bool valid = op->ndim >= 0 && op->ndim <= GTS_MAX_NDIM && (op->ndim == 0 || op->shape);
    for (int d = 0; valid && d < op->ndim; ++d)
        valid = op->shape[d] >= 0;
    if (!valid)
        return gts_error_set(err, GTS_EINVAL, "operands: operand %d has no valid shape", k);
    bool ijk = read_as_ijk(op, base);
    *how = op->ndim == 0 ? SCALAR : ijk ? BY_IJK : op->ndim == base->ndim ? BY_POSITION : SCALAR;
    if (op->ndim == 0 || *how != SCALAR)
        return GTS_OK;
    char shape[96] = "";
    for (int d = 0, used = 0; d < op->ndim && used < (int)sizeof shape - 24; ++d)
        used += snprintf(shape + used, sizeof shape - (size_t)used, d ? ", %lld" : "%lld",
                         (long long)op->shape[d]);
    return gts_error_set(err, GTS_EINVAL,
                         "operands: operand %d is an array without dims of shape (%s%s): it needs "
                         "the %d dimensions of the result, or 3 (I, J, K, with extent 1 where it "
                         "broadcasts)",
                         k, shape, op->ndim == 1 ? "," : "", base->ndim);
}

/* Merges the extents of operand k into the result's shape; owner[p]
 * records which operand set extent p (-1: the given output), for the
 * message. */
static int merge_extents(int k, const gts_operand *op, mapping how, const base_dims *base,
                         bool fixed, gts_broadcast *r, int *owner, gts_error *err)
{
    const gts_dim *labels = labels_of(op, how, base);
    const int64_t *shape = operand_shape(op);
    for (int a = 0; how != SCALAR && a < operand_ndim(op); ++a) {
        if (shape[a] == 1)
            continue; /* masked: fits anywhere, or is dropped */
        int p = find_dim(r->ndim, r->dims, labels[a]);
        if (p >= 0 && r->shape[p] == shape[a])
            continue;
        if (p >= 0 && r->shape[p] == 1 && !fixed) {
            r->shape[p] = shape[a];
            owner[p] = k;
            continue;
        }
        char name[GTS_DIM_TEXT_SIZE], where[32] = "the output";
        gts_dim_format(labels[a], name);
        if (p < 0)
            return gts_error_set(err, GTS_EINVAL,
                                 "out: the output has no dim '%s', which operand %d has with "
                                 "extent %lld",
                                 name, k, (long long)shape[a]);
        if (owner[p] >= 0)
            snprintf(where, sizeof where, "operand %d", owner[p]);
        return gts_error_set(err, GTS_EINVAL,
                             "dims: '%s' has extent %lld in %s and %lld in operand %d", name,
                             (long long)r->shape[p], where, (long long)shape[a], k);
    }
    return GTS_OK;
}

/* Operand k's axis along each result dimension: where its extent is the
 * result's, else -1 (broadcast). */
static void map_axes(int k, const gts_operand *op, mapping how, const base_dims *base,
                     gts_broadcast *r)
{
    memset(r->axis[k], -1, sizeof r->axis[k]);
    const gts_dim *labels = labels_of(op, how, base);
    const int64_t *shape = operand_shape(op);
    for (int a = 0; how != SCALAR && a < operand_ndim(op); ++a) {
        int p = find_dim(r->ndim, r->dims, labels[a]);
        if (p >= 0 && shape[a] == r->shape[p])
            r->axis[k][p] = (int8_t)a;
    }
}

int gts_broadcast_operands(int n, const gts_operand *operands, const gts_storage *out,
                           gts_broadcast *result, gts_error *err)
{
    if (n < 0 || n > GTS_BROADCAST_MAX_OPERANDS || (n > 0 && !operands) || !result)
        return gts_error_set(err, GTS_EINVAL, "operands: %d operands (at most %d), or NULL", n,
                             GTS_BROADCAST_MAX_OPERANDS);
    int owner[GTS_MAX_NDIM];
    base_dims base;
    mapping how[GTS_BROADCAST_MAX_OPERANDS];
    int rc = out ? check_storage(-1, out, err) : GTS_OK;
    for (int k = 0; rc == GTS_OK && k < n; ++k)
        if (operands[k].storage)
            rc = check_storage(k, operands[k].storage, err);
    if (rc)
        return rc;
    base.positional = false;
    if (out) {
        result->ndim = base.ndim = out->ndim;
        memcpy(result->dims, out->dims, (size_t)out->ndim * sizeof *out->dims);
        memcpy(base.dims, out->dims, (size_t)out->ndim * sizeof *out->dims);
        memcpy(base.shape, out->shape, (size_t)out->ndim * sizeof *out->shape);
    } else if ((rc = result_dims(n, operands, result, &base, err))) {
        return rc;
    }
    for (int p = 0; p < result->ndim; ++p) {
        result->shape[p] = out ? out->shape[p] : 1;
        owner[p] = -1;
    }
    for (int k = 0; k < n; ++k) {
        rc = mapping_of(k, &operands[k], &base, &how[k], err);
        if (!rc)
            rc = merge_extents(k, &operands[k], how[k], &base, out != NULL, result, owner,
                               err);
        if (rc)
            return rc;
    }
    for (int k = 0; k < n; ++k)
        map_axes(k, &operands[k], how[k], &base, result);
    return GTS_OK;
}

/* Least common multiple, GTS_EINVAL beyond `limit`. */
static int lcm(int64_t a, int64_t b, int64_t limit, int64_t *out, gts_error *err)
{
    int64_t x = a, y = b;
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    int64_t step = a / x;
    if (step > limit / b)
        return gts_error_set(err, GTS_EINVAL,
                             "alignment_size: the least common multiple of the operands' "
                             "alignments (%lld and %lld) exceeds %lld bytes",
                             (long long)a, (long long)b, (long long)limit);
    *out = step * b;
    return GTS_OK;
}

/* The layout of `first` on the result's dims: its own order for the dims it
 * runs along, the others outermost (GTS_LAYOUT_OUTER). */
static void layout_of_first(const gts_storage *first, const int8_t *axis, int ndim, int *layout)
{
    int rank = 0;
    for (int d = 0; d < ndim; ++d)
        layout[d] = GTS_LAYOUT_OUTER;
    /* hand out 0, 1, ... in the order of the storage's own ranks */
    for (int want = 0; want < first->ndim; ++want)
        for (int d = 0; d < ndim; ++d)
            if (axis[d] >= 0 && first->layout[axis[d]] == want)
                layout[d] = rank++;
}

#define MAX_ALIGNMENT ((int64_t)1 << 30)

int gts_broadcast_output_spec(int n, const gts_operand *operands, const gts_broadcast *result,
                              gts_dtype dtype, gts_device device, gts_storage_spec *spec,
                              gts_error *err)
{
    int rc = gts_storage_spec_init(spec, result->ndim, result->shape, dtype, err);
    if (rc)
        return rc;
    int64_t alignment = dtype.itemsize > 0 ? dtype.itemsize : 1;
    int first = -1;
    for (int d = 0; d < result->ndim; ++d) {
        int64_t lower = 0, end = result->shape[d], aligned = 0;
        for (int k = 0; k < n; ++k) {
            const gts_storage *s = operands[k].storage;
            int a = result->axis[k][d];
            if (!s || a < 0)
                continue;
            aligned = s->aligned_index[a] > aligned ? s->aligned_index[a] : aligned;
            lower = s->halo[a].lower > lower ? s->halo[a].lower : lower;
            end = s->shape[a] - s->halo[a].upper < end ? s->shape[a] - s->halo[a].upper : end;
        }
        end = end < lower ? lower : end; /* domains that do not meet: an empty one */
        spec->halo[d] = (gts_halo){lower, result->shape[d] - end};
        spec->aligned_index[d] = aligned;
        spec->dims[d] = result->dims[d];
    }
    for (int k = 0; k < n; ++k) {
        const gts_storage *s = operands[k].storage;
        if (!s)
            continue;
        first = first < 0 ? k : first;
        if (s->alignment_size > 0 &&
            (rc = lcm(alignment, s->alignment_size, MAX_ALIGNMENT, &alignment, err)))
            return rc;
    }
    if (first >= 0) {
        layout_of_first(operands[first].storage, result->axis[first], result->ndim,
                        spec->layout);
        spec->has_layout = true;
    }
    spec->has_dims = spec->has_halo = spec->has_aligned_index = spec->has_device = true;
    spec->device = device;
    spec->alignment_size = alignment;
    return GTS_OK;
}

int gts_broadcast_reduce(const gts_storage *storage, const bool *reduced, bool keepdims,
                         gts_broadcast *result, gts_error *err)
{
    if (!storage || (storage->ndim > 0 && !reduced) || !result)
        return gts_error_set(err, GTS_EINVAL, "storage, reduced, result: NULL");
    result->ndim = 0;
    memset(result->axis[0], -1, sizeof result->axis[0]);
    for (int a = 0; a < storage->ndim; ++a) {
        if (reduced[a] && !keepdims)
            continue;
        int p = result->ndim++;
        result->dims[p] = storage->dims[a];
        result->shape[p] = reduced[a] ? 1 : storage->shape[a];
        if (!reduced[a] || storage->shape[a] == 1)
            result->axis[0][p] = (int8_t)a;
    }
    return GTS_OK;
}

/* ---- views along the result ----------------------------------------------- */

void gts_broadcast_strides(const gts_broadcast *result, int k, const int64_t *strides,
                           int64_t *out)
{
    for (int p = 0; p < result->ndim; ++p) {
        int a = result->axis[k][p];
        out[p] = a >= 0 ? strides[a] : 0;
    }
}

/* Whether an array of `ndim` axes already lines up by position: axis p
 * runs along dimension p, or is masked (extent 1) there. */
static bool lines_up(const gts_broadcast *result, int k, int ndim, const int64_t *shape)
{
    if (ndim != result->ndim)
        return false;
    for (int p = 0; p < ndim; ++p)
        if (result->axis[k][p] != p && !(result->axis[k][p] < 0 && shape[p] == 1))
            return false;
    return true;
}

bool gts_broadcast_arrangement(const gts_broadcast *result, int k, int ndim,
                               const int64_t *shape, int *perm, int64_t *view_shape)
{
    if (lines_up(result, k, ndim, shape))
        return false;
    bool used[GTS_MAX_NDIM] = {false};
    int next = 0;
    for (int p = 0; p < result->ndim; ++p) {
        int a = result->axis[k][p];
        if (a >= 0) {
            used[a] = true;
            perm[next++] = a;
        }
        view_shape[p] = a >= 0 ? shape[a] : 1;
    }
    /* the axes left over have extent 1 (they broadcast), which the reshape drops */
    for (int a = 0; a < ndim; ++a)
        if (!used[a])
            perm[next++] = a;
    return true;
}

/* Which axis of `out` has label `dim`, -1 where none. */
static int axis_of(const gts_storage *out, gts_dim dim)
{
    return find_dim(out->ndim, out->dims, dim);
}

int gts_broadcast_fit_out(const gts_broadcast *result, const gts_storage *out, int64_t *strides,
                          gts_error *err)
{
    if (!result || !out || !strides)
        return gts_error_set(err, GTS_EINVAL, "result, out, strides: NULL");
    bool fits = out->ndim == result->ndim;
    for (int p = 0; fits && p < result->ndim; ++p) {
        int a = axis_of(out, result->dims[p]);
        fits = a >= 0 && out->shape[a] == result->shape[p];
        strides[p] = fits ? out->strides[a] : 0;
    }
    if (fits)
        return GTS_OK;
    char have[GTS__TUPLE_TEXT_SIZE], have_shape[GTS__TUPLE_TEXT_SIZE];
    char want[GTS__TUPLE_TEXT_SIZE], want_shape[GTS__TUPLE_TEXT_SIZE];
    gts__dims_text(out->ndim, out->dims, have);
    gts__shape_text(out->ndim, out->shape, have_shape);
    gts__dims_text(result->ndim, result->dims, want);
    gts__shape_text(result->ndim, result->shape, want_shape);
    return gts_error_set(err, GTS_EINVAL,
                         "out: a storage of dims %s and shape %s cannot hold the result, of "
                         "dims %s and shape %s",
                         have, have_shape, want, want_shape);
}
