/* Broadcasting by dims (gtstore/broadcast.h): up to six operands, each a
 * storage (labels from I, J, K, 0, 1, extents 0 to 4, any halo, aligned
 * point, layout and alignment; hostile values where the input says) or an
 * array without dims, and optionally a given output, lined up by
 * gts_broadcast_operands, then the output's spec made and resolved.
 *
 * Checks: a success gives valid unrepeated dims and extents >= 0, every
 * operand axis of extent other than 1 runs along a result dim of the same
 * extent (a given output's dims and shape kept), no axis twice; with
 * storages whose parameters are valid the output spec always resolves (its
 * halo and aligned point inside the shape) unless the alignments' least
 * common multiple is too large; a reduction of a valid storage always
 * resolves. A failure says why. The views along the result: a storage's
 * strides are its own or 0 where it broadcasts; an array's arrangement is
 * a permutation of its axes and a reshape that keeps its size, only axes
 * of extent 1 coming and going; a given output that fits a reduction has
 * its own strides along the result's dims, one that does not is refused
 * with a message. Storages here are descriptions only: the functions never
 * touch memory. */
#include "fuzz_input.h"
#include "gtstore/broadcast.h"

#define MAX_OPS 6
static const gts_dim LABELS[5] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K, 0, 1};

/* A storage description; `valid` says whether its parameters are ones the
 * library could have made. */
static void read_storage(fuzz_input *in, gts_storage *s, bool *valid)
{
    memset(s, 0, sizeof *s);
    s->dtype = (gts_dtype){GTS_KIND_FLOAT, 8};
    s->ndim = (int)fuzz_range(in, 0, 5);
    bool used[5] = {false};
    bool hostile = fuzz_u8(in) == 0xff;
    *valid = !hostile;
    for (int d = 0; d < s->ndim; ++d) {
        int pick = (int)fuzz_range(in, 0, 4);
        *valid = *valid && !used[pick];
        used[pick] = true;
        s->dims[d] = LABELS[pick];
        s->shape[d] = hostile ? fuzz_hostile(in) : fuzz_range(in, 0, 4);
        int64_t lower = fuzz_range(in, 0, 4), upper = fuzz_range(in, 0, 4);
        if (!hostile && lower + upper > s->shape[d])
            lower = upper = 0;
        s->halo[d] = hostile ? (gts_halo){fuzz_hostile(in), fuzz_hostile(in)}
                             : (gts_halo){lower, upper};
        s->aligned_index[d] = hostile ? fuzz_hostile(in)
                                      : fuzz_range(in, 0, s->shape[d] > 0 ? s->shape[d] - 1 : 0);
        s->layout[d] = (int)fuzz_range(in, -1, 5);
    }
    *valid = *valid && gts_layout_check(s->ndim, s->layout, NULL) == GTS_OK;
    s->alignment_size = hostile ? fuzz_hostile(in) : fuzz_range(in, 0, 256);
    *valid = *valid && s->alignment_size >= 0;
}

static void check_result(int n, const gts_operand *ops, const gts_storage *out,
                         const gts_broadcast *r)
{
    FUZZ_CHECK(gts_dims_check(r->ndim, r->dims, NULL) == GTS_OK);
    for (int p = 0; p < r->ndim; ++p) {
        FUZZ_CHECK(r->shape[p] >= 0);
        if (out)
            FUZZ_CHECK(r->dims[p] == out->dims[p] && r->shape[p] == out->shape[p]);
    }
    for (int k = 0; k < n; ++k) {
        int ndim = ops[k].storage ? ops[k].storage->ndim : ops[k].ndim;
        const int64_t *shape = ops[k].storage ? ops[k].storage->shape : ops[k].shape;
        bool mapped[GTS_MAX_NDIM] = {false};
        for (int p = 0; p < r->ndim; ++p) {
            int a = r->axis[k][p];
            if (a < 0)
                continue;
            FUZZ_CHECK(a < ndim && !mapped[a] && shape[a] == r->shape[p]);
            mapped[a] = true;
        }
        for (int a = 0; a < ndim; ++a)
            FUZZ_CHECK(mapped[a] || shape[a] == 1 || ndim == 0);
    }
}

static void check_spec(int n, const gts_operand *ops, const gts_broadcast *r, bool all_valid)
{
    gts_storage_spec spec;
    gts_error err;
    int rc = gts_broadcast_output_spec(n, ops, r, (gts_dtype){GTS_KIND_FLOAT, 8}, GTS_DEVICE_CPU,
                                       &spec, &err);
    if (rc) {
        FUZZ_CHECK(err.message[0] != '\0');
        FUZZ_CHECK(!all_valid || strstr(err.message, "alignment_size"));
        return;
    }
    gts_geometry geometry;
    rc = gts_storage_spec_resolve(&spec, &geometry, &err);
    FUZZ_CHECK(rc == GTS_OK || !all_valid || strstr(err.message, "alignment"));
    if (rc == GTS_OK)
        for (int d = 0; d < spec.ndim; ++d)
            FUZZ_CHECK(spec.halo[d].lower + spec.halo[d].upper <= spec.shape[d] &&
                       (spec.aligned_index[d] < spec.shape[d] || spec.aligned_index[d] == 0));
}

static int64_t product(int n, const int64_t *shape)
{
    int64_t size = 1;
    for (int d = 0; d < n; ++d)
        size *= shape[d]; /* the arrays' extents (0 to 4, 4 dims) or 1: no overflow */
    return size;
}

static void check_views(int n, const gts_operand *ops, const gts_broadcast *r)
{
    for (int k = 0; k < n; ++k) {
        int64_t strides[GTS_MAX_NDIM], view_shape[GTS_MAX_NDIM];
        int perm[GTS_MAX_NDIM];
        if (ops[k].storage) {
            gts_broadcast_strides(r, k, ops[k].storage->strides, strides);
            for (int p = 0; p < r->ndim; ++p)
                FUZZ_CHECK(strides[p] ==
                           (r->axis[k][p] >= 0 ? ops[k].storage->strides[r->axis[k][p]] : 0));
            continue;
        }
        int ndim = ops[k].ndim;
        if (!gts_broadcast_arrangement(r, k, ndim, ops[k].shape, perm, view_shape))
            continue;
        bool seen[GTS_MAX_NDIM] = {false};
        for (int a = 0; a < ndim; ++a) {
            FUZZ_CHECK(perm[a] >= 0 && perm[a] < ndim && !seen[perm[a]]);
            seen[perm[a]] = true;
        }
        FUZZ_CHECK(product(r->ndim, view_shape) == product(ndim, ops[k].shape));
    }
}

static void check_fit(const gts_broadcast *r, const gts_storage *out)
{
    int64_t strides[GTS_MAX_NDIM];
    gts_error err;
    if (gts_broadcast_fit_out(r, out, strides, &err) != GTS_OK) {
        FUZZ_CHECK(strstr(err.message, "cannot hold the result") != NULL);
        return;
    }
    FUZZ_CHECK(out->ndim == r->ndim);
    for (int p = 0; p < r->ndim; ++p) {
        int a = 0;
        while (a < out->ndim && out->dims[a] != r->dims[p])
            ++a;
        FUZZ_CHECK(a < out->ndim && out->shape[a] == r->shape[p] && strides[p] == out->strides[a]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    int n = (int)fuzz_range(&in, 0, MAX_OPS);
    gts_storage storages[MAX_OPS + 1];
    gts_operand ops[MAX_OPS];
    int64_t shapes[MAX_OPS][4];
    bool all_valid = true, valid;
    for (int k = 0; k < n; ++k) {
        if (fuzz_bool(&in)) {
            read_storage(&in, &storages[k], &valid);
            all_valid = all_valid && valid;
            ops[k] = (gts_operand){&storages[k], 0, NULL};
        } else {
            int ndim = (int)fuzz_range(&in, 0, 4);
            for (int d = 0; d < ndim; ++d)
                shapes[k][d] = fuzz_range(&in, 0, 4);
            ops[k] = (gts_operand){NULL, ndim, shapes[k]};
        }
    }
    gts_storage *out = NULL;
    if (fuzz_bool(&in)) {
        read_storage(&in, &storages[MAX_OPS], &valid);
        out = &storages[MAX_OPS];
    }
    gts_broadcast result;
    gts_error err;
    if (gts_broadcast_operands(n, ops, out, &result, &err) != GTS_OK) {
        FUZZ_CHECK(err.message[0] != '\0');
        return 0;
    }
    check_result(n, ops, out, &result);
    check_views(n, ops, &result);
    if (!out)
        check_spec(n, ops, &result, all_valid);
    /* a reduction of the first storage operand */
    for (int k = 0; k < n; ++k) {
        if (!ops[k].storage)
            continue;
        bool reduced[GTS_MAX_NDIM];
        for (int a = 0; a < ops[k].storage->ndim; ++a)
            reduced[a] = fuzz_bool(&in);
        if (gts_broadcast_reduce(ops[k].storage, reduced, fuzz_bool(&in), &result, &err) == GTS_OK) {
            check_spec(1, &ops[k], &result, all_valid);
            if (out)
                check_fit(&result, out);
        }
        break;
    }
    return 0;
}
