/* Broadcasting by dims and GDP-3's first draft's output parameters
 * (gtstore/broadcast.h): the result's dims (agreeing storages, the union,
 * a given output), extents of 1 as masked dims, arrays without dims by
 * position and as I, J, K, scalars, replication into a larger output; the
 * inferred aligned index, halo (intersection of the domains), layout (the
 * first storage's, missing dims outermost) and alignment (lcm); reductions;
 * every error. */
#include <string.h>

#include "check.h"
#include "storage_helpers.h"
#include "gtstore/broadcast.h"

static const gts_dim I = GTS_DIM_I, J = GTS_DIM_J, K = GTS_DIM_K;

/* A host storage of `dims` (a string) and shape, with halo h on every side
 * of the dims that allow it, laid out by `layout` (NULL: the default). */
static bool make(gts_storage *s, const char *dims, const int64_t *shape, int64_t halo,
                 const int *layout, int64_t alignment)
{
    gts_storage_spec spec;
    int ndim = (int)strlen(dims);
    if (!CHECK_OK(gts_storage_spec_init(&spec, ndim, shape, F8, ERR)) ||
        !CHECK_OK(gts_dims_parse(dims, spec.dims, &ndim, ERR)))
        return false;
    spec.has_dims = true;
    spec.has_halo = true;
    for (int d = 0; d < ndim; ++d)
        spec.halo[d] = 2 * halo <= shape[d] ? (gts_halo){halo, halo} : (gts_halo){0, 0};
    if (layout) {
        memcpy(spec.layout, layout, (size_t)ndim * sizeof *layout);
        spec.has_layout = true;
    }
    spec.alignment_size = alignment;
    return CHECK_OK(gts_storage_create(&spec, 0, s, ERR));
}

static gts_operand of(const gts_storage *s)
{
    return (gts_operand){s, 0, NULL};
}

static bool dims_are(const gts_broadcast *r, const char *expected)
{
    gts_dim dims[GTS_MAX_NDIM];
    int n;
    gts_dims_parse(expected, dims, &n, NULL);
    return r->ndim == n && memcmp(r->dims, dims, (size_t)n * sizeof *dims) == 0;
}

static void test_ij_plus_k(void)
{
    /* GDP-3's first draft's example: IJ (70, 70) with halo 3 + K (80,) -> IJK */
    gts_storage a, b;
    const int ifirst[2] = {1, 0}; /* I contiguous */
    if (!make(&a, "IJ", (const int64_t[]){70, 70}, 3, ifirst, 64))
        return;
    if (make(&b, "K", (const int64_t[]){80}, 0, NULL, 8)) {
        gts_operand ops[2] = {of(&a), of(&b)};
        gts_broadcast r;
        gts_storage_spec spec;
        if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR))) {
            CHECK(dims_are(&r, "IJK") && ints_eq(3, r.shape, (const int64_t[]){70, 70, 80}));
            CHECK(r.axis[0][0] == 0 && r.axis[0][1] == 1 && r.axis[0][2] == -1);
            CHECK(r.axis[1][0] == -1 && r.axis[1][1] == -1 && r.axis[1][2] == 0);
            if (CHECK_OK(gts_broadcast_output_spec(2, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
                CHECK(spec.halo[0].lower == 3 && spec.halo[0].upper == 3);
                CHECK(spec.halo[2].lower == 0 && spec.halo[2].upper == 0);
                CHECK(ints_eq(3, spec.aligned_index, (const int64_t[]){3, 3, 0}));
                /* a's order (J outer, I inner), K left outermost */
                CHECK(spec.layout[0] == 1 && spec.layout[1] == 0 &&
                      spec.layout[2] == GTS_LAYOUT_OUTER);
                CHECK_INT_EQ(spec.alignment_size, 64);
                gts_storage c;
                if (CHECK_OK(gts_storage_create(&spec, 0, &c, ERR))) {
                    CHECK(c.layout[0] == 2 && c.layout[1] == 1 && c.layout[2] == 0);
                    CHECK(c.strides[0] == 8 && c.strides[2] > c.strides[1]);
                    gts_storage_release(&c);
                }
            }
        }
        /* the order of the operands does not change the dims; the layout is
         * the first storage's */
        gts_operand swapped[2] = {of(&b), of(&a)};
        if (CHECK_OK(gts_broadcast_operands(2, swapped, NULL, &r, ERR)) &&
            CHECK_OK(gts_broadcast_output_spec(2, swapped, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
            CHECK(dims_are(&r, "IJK"));
            CHECK(spec.layout[2] == 0 && spec.layout[0] == GTS_LAYOUT_OUTER &&
                  spec.layout[1] == GTS_LAYOUT_OUTER);
        }
        gts_storage_release(&b);
    }
    gts_storage_release(&a);
}

static void test_agreeing_dims_keep_their_order(void)
{
    gts_storage a, b;
    if (!make(&a, "KJI", (const int64_t[]){4, 5, 6}, 1, NULL, 0))
        return;
    if (make(&b, "KJI", (const int64_t[]){4, 1, 6}, 0, NULL, 0)) { /* J masked */
        gts_operand ops[3] = {of(&a), of(&b), {NULL, 0, NULL}};      /* and a scalar */
        gts_broadcast r;
        gts_storage_spec spec;
        if (CHECK_OK(gts_broadcast_operands(3, ops, NULL, &r, ERR))) {
            CHECK(dims_are(&r, "KJI") && ints_eq(3, r.shape, (const int64_t[]){4, 5, 6}));
            CHECK(r.axis[1][1] == -1 && r.axis[1][0] == 0 && r.axis[1][2] == 2);
            for (int p = 0; p < 3; ++p)
                CHECK(r.axis[2][p] == -1);
            /* halos: a has 1, b 0 where it runs along; J only a's */
            if (CHECK_OK(gts_broadcast_output_spec(3, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
                CHECK(spec.halo[0].lower == 1 && spec.halo[1].lower == 1);
                CHECK(ints_eq(3, spec.aligned_index, (const int64_t[]){1, 1, 1}));
            }
        }
        gts_storage_release(&b);
    }
    gts_storage_release(&a);
}

static void test_domains_intersect(void)
{
    /* I: a has halo (1, 1) of 10, b (3, 0) by a view: domain [3, 9) */
    gts_storage a, b;
    if (!make(&a, "I", (const int64_t[]){10}, 1, NULL, 0))
        return;
    if (make(&b, "I", (const int64_t[]){10}, 0, NULL, 0)) {
        b.halo[0] = (gts_halo){3, 0};
        b.aligned_index[0] = 3;
        gts_operand ops[2] = {of(&a), of(&b)};
        gts_broadcast r;
        gts_storage_spec spec;
        if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)) &&
            CHECK_OK(gts_broadcast_output_spec(2, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
            CHECK(spec.halo[0].lower == 3 && spec.halo[0].upper == 1);
            CHECK_INT_EQ(spec.aligned_index[0], 3);
        }
        /* domains that do not meet: an empty one */
        b.halo[0] = (gts_halo){9, 0};
        a.halo[0] = (gts_halo){0, 5};
        if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)) &&
            CHECK_OK(gts_broadcast_output_spec(2, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
            CHECK(spec.halo[0].lower == 9 && spec.halo[0].upper == 1);
            gts_geometry g;
            CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR));
        }
        gts_storage_release(&b);
    }
    gts_storage_release(&a);
}

static void test_arrays_without_dims(void)
{
    gts_storage a;
    if (!make(&a, "IJ", (const int64_t[]){4, 5}, 0, NULL, 0))
        return;
    gts_broadcast r;
    /* by position: the result's shape, or extents of 1 */
    const int64_t same[2] = {4, 5}, row[2] = {1, 5}, ijk[3] = {1, 1, 7}, bad[2] = {5, 4},
                  one_d[1] = {5};
    gts_operand ops[2] = {of(&a), {NULL, 2, same}};
    if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)))
        CHECK(dims_are(&r, "IJ") && r.axis[1][0] == 0 && r.axis[1][1] == 1);
    ops[1].shape = row;
    if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)))
        CHECK(r.axis[1][0] == -1 && r.axis[1][1] == 1);
    /* a 3-d array is I, J, K with its 1s masked: here a K field */
    ops[1] = (gts_operand){NULL, 3, ijk};
    if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR))) {
        CHECK(dims_are(&r, "IJK") && ints_eq(3, r.shape, (const int64_t[]){4, 5, 7}));
        CHECK(r.axis[1][0] == -1 && r.axis[1][1] == -1 && r.axis[1][2] == 2);
    }
    /* a 3-d array is I, J, K even where the result comes out 3-d too */
    gts_storage j0;
    if (make(&j0, "J0", (const int64_t[]){3, 2}, 0, NULL, 0)) {
        const int64_t k5[3] = {1, 3, 5};
        gts_operand mix[2] = {of(&j0), {NULL, 3, k5}};
        if (CHECK_OK(gts_broadcast_operands(2, mix, NULL, &r, ERR))) {
            CHECK(dims_are(&r, "JK0") && ints_eq(3, r.shape, (const int64_t[]){3, 5, 2}));
            CHECK(r.axis[1][0] == 1 && r.axis[1][1] == 2 && r.axis[1][2] == -1);
        }
        gts_storage_release(&j0);
    }
    ops[1] = (gts_operand){NULL, 2, bad};
    CHECK_FAILS(gts_broadcast_operands(2, ops, NULL, &r, ERR), GTS_EINVAL,
                "dims: 'I' has extent 4 in operand 0 and 5 in operand 1");
    ops[1] = (gts_operand){NULL, 1, one_d};
    CHECK_FAILS(gts_broadcast_operands(2, ops, NULL, &r, ERR), GTS_EINVAL,
                "operand 1 is an array without dims of shape (5,)");
    ops[1] = (gts_operand){NULL, -1, NULL};
    CHECK_FAILS(gts_broadcast_operands(2, ops, NULL, &r, ERR), GTS_EINVAL, "operand 1");
    /* a storage filled in by hand: its layout and dtype checked too */
    gts_storage hand = a;
    hand.layout[0] = 7;
    ops[1] = of(&hand);
    CHECK_FAILS(gts_broadcast_operands(2, ops, NULL, &r, ERR), GTS_EINVAL,
                "operand 1: layout (7,");
    hand = a;
    hand.dtype.itemsize = 3;
    CHECK_FAILS(gts_broadcast_operands(2, ops, NULL, &r, ERR), GTS_ETYPE,
                "operand 1: dtype: unsupported kind 'f' with itemsize 3");
    gts_storage_release(&a);
}

static void test_given_output(void)
{
    gts_storage out, k;
    if (!make(&out, "KJI", (const int64_t[]){3, 4, 5}, 0, NULL, 0))
        return;
    if (make(&k, "K", (const int64_t[]){3}, 0, NULL, 0)) {
        gts_operand ops[2] = {of(&k), of(&out)};
        gts_broadcast r;
        /* the output's dims; K replicated along J and I */
        if (CHECK_OK(gts_broadcast_operands(2, ops, &out, &r, ERR))) {
            CHECK(dims_are(&r, "KJI") && ints_eq(3, r.shape, out.shape));
            CHECK(r.axis[0][0] == 0 && r.axis[0][1] == -1 && r.axis[0][2] == -1);
            CHECK(r.axis[1][0] == 0 && r.axis[1][1] == 1 && r.axis[1][2] == 2);
        }
        gts_storage_release(&k);
    }
    gts_storage i9, m;
    if (make(&i9, "I", (const int64_t[]){9}, 0, NULL, 0)) {
        gts_operand ops[1] = {of(&i9)};
        gts_broadcast r;
        CHECK_FAILS(gts_broadcast_operands(1, ops, &out, &r, ERR), GTS_EINVAL,
                    "'I' has extent 5 in the output and 9 in operand 0");
        gts_storage_release(&i9);
    }
    if (make(&m, "0", (const int64_t[]){2}, 0, NULL, 0)) {
        gts_operand ops[1] = {of(&m)};
        gts_broadcast r;
        CHECK_FAILS(gts_broadcast_operands(1, ops, &out, &r, ERR), GTS_EINVAL,
                    "the output has no dim '0'");
        gts_storage_release(&m);
    }
    gts_storage_release(&out);
}

static void test_union_order_and_data_dims(void)
{
    gts_storage a, b;
    if (!make(&a, "K0", (const int64_t[]){3, 2}, 0, NULL, 0))
        return;
    if (make(&b, "JI", (const int64_t[]){4, 5}, 1, NULL, 0)) {
        gts_operand ops[2] = {of(&a), of(&b)};
        gts_broadcast r;
        gts_storage_spec spec;
        if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)) &&
            CHECK_OK(gts_broadcast_output_spec(2, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
            CHECK(dims_are(&r, "IJK0") && ints_eq(4, r.shape, (const int64_t[]){5, 4, 3, 2}));
            CHECK(spec.dims[3] == 0 && spec.dims[0] == I && spec.dims[1] == J && spec.dims[2] == K);
            /* a's layout on K and 0 (C order: K outer), I and J outermost */
            CHECK(spec.layout[2] == 0 && spec.layout[3] == 1);
            CHECK(spec.layout[0] == GTS_LAYOUT_OUTER && spec.layout[1] == GTS_LAYOUT_OUTER);
            gts_storage c;
            if (CHECK_OK(gts_storage_create(&spec, 0, &c, ERR))) {
                CHECK(c.strides[3] == 8 && c.strides[2] == 16);
                CHECK(c.halo[0].lower == 1 && c.halo[2].lower == 0);
                gts_storage_release(&c);
            }
        }
        gts_storage_release(&b);
    }
    gts_storage_release(&a);
}

static void test_alignment_and_limits(void)
{
    gts_storage a, b;
    if (!make(&a, "I", (const int64_t[]){8}, 0, NULL, 24))
        return;
    if (make(&b, "I", (const int64_t[]){8}, 0, NULL, 64)) {
        gts_operand ops[2] = {of(&a), of(&b)};
        gts_broadcast r;
        gts_storage_spec spec;
        if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)) &&
            CHECK_OK(gts_broadcast_output_spec(2, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR)))
            CHECK_INT_EQ(spec.alignment_size, 192);
        /* the itemsize joins: a complex128 output of 24-byte aligned input */
        gts_operand one[1] = {of(&a)};
        if (CHECK_OK(gts_broadcast_operands(1, one, NULL, &r, ERR)) &&
            CHECK_OK(gts_broadcast_output_spec(1, one, &r, (gts_dtype){GTS_KIND_COMPLEX, 16},
                                               GTS_DEVICE_CPU, &spec, ERR)))
            CHECK_INT_EQ(spec.alignment_size, 48);
        /* an lcm beyond 2^30 bytes is refused, never overflows */
        a.alignment_size = (int64_t)1 << 29;
        b.alignment_size = 3;
        CHECK_FAILS(gts_broadcast_output_spec(2, ops, &r, F8, GTS_DEVICE_CPU, &spec, ERR),
                    GTS_EINVAL, "alignment_size");
        gts_storage_release(&b);
    }
    gts_broadcast r;
    gts_operand ops[1] = {of(&a)};
    CHECK_FAILS(gts_broadcast_operands(GTS_BROADCAST_MAX_OPERANDS + 1, ops, NULL, &r, ERR),
                GTS_EINVAL, "operands");
    CHECK_FAILS(gts_broadcast_operands(1, NULL, NULL, &r, ERR), GTS_EINVAL, "operands");
    gts_storage_release(&a);
}

/* A storage of GTS_MAX_NDIM data dims first, first + 1, ... (shape all 1). */
static bool make_wide(gts_storage *s, gts_dim first)
{
    int64_t shape[GTS_MAX_NDIM];
    gts_storage_spec spec;
    for (int d = 0; d < GTS_MAX_NDIM; ++d)
        shape[d] = 1;
    if (!CHECK_OK(gts_storage_spec_init(&spec, GTS_MAX_NDIM, shape, F8, ERR)))
        return false;
    for (int d = 0; d < GTS_MAX_NDIM; ++d)
        spec.dims[d] = first + d;
    spec.has_dims = true;
    return CHECK_OK(gts_storage_create(&spec, 0, s, ERR));
}

static void test_too_many_dims(void)
{
    /* Two valid storages whose dims together exceed GTS_MAX_NDIM: the union
     * would not fit gts_broadcast.dims (this wrote past it). */
    gts_storage a, b;
    if (!make_wide(&a, 0))
        return;
    gts_broadcast r;
    if (make_wide(&b, GTS_MAX_NDIM)) {
        gts_operand ops[2] = {of(&a), of(&b)};
        CHECK_FAILS(gts_broadcast_operands(2, ops, NULL, &r, ERR), GTS_EINVAL,
                    "the result would have more than 64 dims");
        gts_storage_release(&b);
    }
    /* one wide storage and a 3-d array read as I, J, K: the same */
    const int64_t ijk[3] = {2, 1, 1};
    gts_operand with_array[2] = {of(&a), {NULL, 3, ijk}};
    CHECK_FAILS(gts_broadcast_operands(2, with_array, NULL, &r, ERR), GTS_EINVAL,
                "more than 64 dims");
    /* exactly 64 dims still broadcast: a with itself */
    gts_operand same[2] = {of(&a), of(&a)};
    if (CHECK_OK(gts_broadcast_operands(2, same, NULL, &r, ERR)))
        CHECK_INT_EQ(r.ndim, GTS_MAX_NDIM);
    gts_storage_release(&a);
}

static void test_reduce(void)
{
    gts_storage a;
    const int kfirst[3] = {0, 1, 2};
    if (!make(&a, "IJK", (const int64_t[]){6, 7, 8}, 2, kfirst, 0))
        return;
    const bool over_k[3] = {false, false, true}, over_i[3] = {true, false, false};
    gts_broadcast r;
    gts_storage_spec spec;
    gts_operand op = of(&a);
    if (CHECK_OK(gts_broadcast_reduce(&a, over_k, false, &r, ERR)) &&
        CHECK_OK(gts_broadcast_output_spec(1, &op, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
        CHECK(dims_are(&r, "IJ") && ints_eq(2, r.shape, (const int64_t[]){6, 7}));
        CHECK(spec.halo[0].lower == 2 && spec.halo[1].upper == 2);
        CHECK(spec.layout[0] == 0 && spec.layout[1] == 1);
    }
    if (CHECK_OK(gts_broadcast_reduce(&a, over_i, true, &r, ERR)) &&
        CHECK_OK(gts_broadcast_output_spec(1, &op, &r, F8, GTS_DEVICE_CPU, &spec, ERR))) {
        CHECK(dims_are(&r, "IJK") && ints_eq(3, r.shape, (const int64_t[]){1, 7, 8}));
        CHECK(spec.halo[0].lower == 0 && spec.halo[0].upper == 0); /* kept, of extent 1 */
    }
    CHECK_FAILS(gts_broadcast_reduce(&a, NULL, false, &r, ERR), GTS_EINVAL, "NULL");
    gts_storage_release(&a);
}

/* xarray's broadcasting: storages of one ndim whose labels other than
 * placeholders (the axes None indexing adds: '_' in `dims`, inserted with
 * gts_storage_insert_dim) agree by position line up by position; otherwise
 * by labels, as before. */
static bool make_with_new_axes(gts_storage *s, const char *dims, const int64_t *shape)
{
    char own[GTS_MAX_NDIM + 1] = "";
    int64_t extents[GTS_MAX_NDIM];
    int n = 0;
    for (const char *c = dims; *c; ++c)
        if (*c != '_') {
            extents[n] = shape[c - dims];
            own[n++] = *c;
        }
    if (!make(s, own, extents, 0, NULL, 0))
        return false;
    for (const char *c = dims; *c; ++c)
        if (*c == '_' && !CHECK_OK(gts_storage_insert_dim(s, (int)(c - dims), ERR))) {
            gts_storage_release(s);
            return false;
        }
    return true;
}

static bool broadcast2(const char *da, const int64_t *sa, const char *db, const int64_t *sb,
                       gts_broadcast *r)
{
    gts_storage a, b;
    bool ok = false;
    if (!make_with_new_axes(&a, da, sa))
        return false;
    if (make_with_new_axes(&b, db, sb)) {
        gts_operand ops[2] = {of(&a), of(&b)};
        ok = CHECK_OK(gts_broadcast_operands(2, ops, NULL, r, ERR));
        gts_storage_release(&b);
    }
    gts_storage_release(&a);
    return ok;
}

static void test_placeholders_line_up_by_position(void)
{
    gts_broadcast r;
    /* IJK + K[None, None, :] */
    if (broadcast2("IJK", (const int64_t[]){3, 4, 5}, "__K", (const int64_t[]){1, 1, 5}, &r)) {
        CHECK(dims_are(&r, "IJK") && ints_eq(3, r.shape, (const int64_t[]){3, 4, 5}));
        CHECK(r.axis[1][0] == -1 && r.axis[1][1] == -1 && r.axis[1][2] == 2);
        CHECK(r.axis[0][0] == 0 && r.axis[0][2] == 2);
    }
    /* J as (J, new) + I as (new, I): xarray's order J, I is kept */
    if (broadcast2("J_", (const int64_t[]){4, 1}, "_I", (const int64_t[]){1, 3}, &r))
        CHECK(dims_are(&r, "JI") && ints_eq(2, r.shape, (const int64_t[]){4, 3}));
    /* placeholders at one position in both keep the first's label */
    if (broadcast2("_IJ", (const int64_t[]){1, 3, 4}, "__J", (const int64_t[]){1, 1, 4}, &r))
        CHECK(dims_are(&r, "0IJ") && ints_eq(3, r.shape, (const int64_t[]){1, 3, 4}));
    /* a data dim of extent 1 that a storage has (not None's): a label, so
     * the union, sorted (GDP-3's first draft) */
    if (broadcast2("0J", (const int64_t[]){1, 4}, "IJ", (const int64_t[]){3, 4}, &r))
        CHECK(dims_are(&r, "IJ0") && ints_eq(3, r.shape, (const int64_t[]){3, 4, 1}));
    /* one label at two positions: by labels */
    if (broadcast2("I_", (const int64_t[]){3, 1}, "_I", (const int64_t[]){1, 3}, &r))
        CHECK(dims_are(&r, "I0") && ints_eq(2, r.shape, (const int64_t[]){3, 1}));
    /* the same labels in another order do not grow the result: by labels */
    if (broadcast2("JI", (const int64_t[]){4, 3}, "IJ", (const int64_t[]){3, 4}, &r))
        CHECK(dims_are(&r, "IJ") && r.axis[0][0] == 1 && r.axis[0][1] == 0);
    /* labels that disagree at a position: by labels (GDP-3's first draft's IJ + JK) */
    if (broadcast2("IJ", (const int64_t[]){3, 4}, "JK", (const int64_t[]){4, 5}, &r))
        CHECK(dims_are(&r, "IJK"));
    /* different numbers of dims align from the right, as NumPy's shapes
     * (xarray's apply_ufunc leaves leading new axes out) */
    if (broadcast2("IJK", (const int64_t[]){3, 4, 5}, "J_", (const int64_t[]){4, 1}, &r)) {
        CHECK(dims_are(&r, "IJK") && ints_eq(3, r.shape, (const int64_t[]){3, 4, 5}));
        CHECK(r.axis[1][0] == -1 && r.axis[1][1] == 0 && r.axis[1][2] == -1);
    }
    if (broadcast2("IJ", (const int64_t[]){3, 4}, "K__", (const int64_t[]){5, 1, 1}, &r))
        CHECK(dims_are(&r, "KIJ") && ints_eq(3, r.shape, (const int64_t[]){5, 3, 4}));
    /* without placeholders the labels do not grow: by labels (GDP-3's first draft) */
    if (broadcast2("KIJ", (const int64_t[]){5, 3, 4}, "J", (const int64_t[]){4}, &r))
        CHECK(dims_are(&r, "IJK"));
}

/* Views along the result: a storage's strides with 0 where it broadcasts;
 * an array without dims transposed and reshaped onto the result's dims, or
 * left as it is where it lines up by position; an out= storage matched by
 * label, refused with both dims and shapes where it does not fit. */
static void test_views_along_the_result(void)
{
    gts_storage a, b, out;
    int64_t strides[GTS_MAX_NDIM];
    const int kfirst[3] = {0, 1, 2};
    if (!make(&a, "IJ", (const int64_t[]){3, 4}, 0, NULL, 0))
        return;
    if (make(&b, "K", (const int64_t[]){5}, 0, NULL, 0)) {
        gts_operand ops[2] = {of(&a), of(&b)};
        gts_broadcast r;
        if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR))) {
            gts_broadcast_strides(&r, 0, a.strides, strides);
            CHECK(strides[0] == a.strides[0] && strides[1] == a.strides[1] && strides[2] == 0);
            gts_broadcast_strides(&r, 1, b.strides, strides);
            CHECK(strides[0] == 0 && strides[1] == 0 && strides[2] == b.strides[0]);
        }
        gts_storage_release(&b);
    }
    /* IJ + a 2-d array of shape (3, 1): by position, masked along J */
    gts_operand ops[2] = {of(&a), {NULL, 2, (const int64_t[]){3, 1}}};
    gts_broadcast r;
    int perm[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM];
    if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)))
        CHECK(!gts_broadcast_arrangement(&r, 1, 2, (const int64_t[]){3, 1}, perm, shape));
    /* a 3-d array of extents (3, 1, 1) on the result IJ: I, J, K with K of
     * extent 1 dropped; J masked there */
    ops[1] = (gts_operand){NULL, 3, (const int64_t[]){3, 1, 1}};
    if (CHECK_OK(gts_broadcast_operands(2, ops, NULL, &r, ERR)) &&
        CHECK(gts_broadcast_arrangement(&r, 1, 3, (const int64_t[]){3, 1, 1}, perm, shape))) {
        CHECK(perm[0] == 0 && perm[1] == 1 && perm[2] == 2);
        CHECK(r.ndim == 2 && ints_eq(2, shape, (const int64_t[]){3, 1}));
    }
    /* a 3-d array of shape (3, 5, 2), I, J, K, into an output of dims KJI:
     * reversed */
    if (make(&out, "KJI", (const int64_t[]){2, 5, 3}, 0, kfirst, 0)) {
        const int64_t arr[3] = {3, 5, 2};
        gts_operand one = {NULL, 3, arr};
        if (CHECK_OK(gts_broadcast_operands(1, &one, &out, &r, ERR)) &&
            CHECK(gts_broadcast_arrangement(&r, 0, 3, arr, perm, shape))) {
            CHECK(perm[0] == 2 && perm[1] == 1 && perm[2] == 0);
            CHECK(ints_eq(3, shape, (const int64_t[]){2, 5, 3}));
        }
        gts_storage_release(&out);
    }
    /* out= of a reduction of a (I 3, J 4) over J: dims I, shape (3,) */
    bool reduced[2] = {false, true};
    if (CHECK_OK(gts_broadcast_reduce(&a, reduced, false, &r, ERR))) {
        if (make(&out, "I", (const int64_t[]){3}, 0, NULL, 0)) {
            if (CHECK_OK(gts_broadcast_fit_out(&r, &out, strides, ERR)))
                CHECK(strides[0] == out.strides[0]);
            gts_storage_release(&out);
        }
        if (make(&out, "J", (const int64_t[]){3}, 0, NULL, 0)) {
            CHECK_FAILS(gts_broadcast_fit_out(&r, &out, strides, ERR), GTS_EINVAL,
                        "out: a storage of dims ('J',) and shape (3,) cannot hold the result, "
                        "of dims ('I',) and shape (3,)");
            gts_storage_release(&out);
        }
    }
    /* keepdims: (I 3, J 1); an out of dims JI with those extents fits by label */
    if (CHECK_OK(gts_broadcast_reduce(&a, reduced, true, &r, ERR)) &&
        make(&out, "JI", (const int64_t[]){1, 3}, 0, NULL, 0)) {
        if (CHECK_OK(gts_broadcast_fit_out(&r, &out, strides, ERR)))
            CHECK(strides[0] == out.strides[1] && strides[1] == out.strides[0]);
        gts_storage_release(&out);
    }
    if (make(&out, "IJ", (const int64_t[]){3, 2}, 0, NULL, 0)) {
        CHECK_FAILS(gts_broadcast_fit_out(&r, &out, strides, ERR), GTS_EINVAL,
                    "of dims ('I', 'J') and shape (3, 2) cannot hold the result, of dims ('I', "
                    "'J') and shape (3, 1)");
        gts_storage_release(&out);
    }
    gts_storage_release(&a);
}

int main(void)
{
    int64_t start = live_buffers();
    test_ij_plus_k();
    test_agreeing_dims_keep_their_order();
    test_domains_intersect();
    test_arrays_without_dims();
    test_given_output();
    test_union_order_and_data_dims();
    test_alignment_and_limits();
    test_too_many_dims();
    test_reduce();
    test_placeholders_line_up_by_position();
    test_views_along_the_result();
    CHECK_INT_EQ(live_buffers(), start);
    return check_summary("broadcast");
}
