/* Binding (gtstore/binding.h): origins by precedence and permuted by dims,
 * the domain from the call, the halos or the shapes, and every check with
 * its message. */
#include "check.h"
#include "gtstore/binding.h"

#include <stdlib.h>

#define F8_INIT {'f', 8}
#define F8 ((gts_dtype)F8_INIT)
#define IJK {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K}

static gts_field_spec lap_fields[2] = {
    {.name = "out", .dtype = F8_INIT, .ndim = 3, .dims = IJK, .written = true},
    {.name = "inp", .dtype = F8_INIT, .ndim = 3, .dims = IJK, .extent = {{1, 1}, {1, 1}, {0, 0}}},
};
static const gts_signature lap = {2, lap_fields, GTS_DEVICE_CPU};

/* A C-order float64 field of `shape` over `memory`, no labels or halo. */
typedef struct field {
    int64_t shape[3], strides[3];
    gts_dim dims[3];
    gts_halo halo[3];
    int64_t origin[3];
    gts_field_desc desc;
} field;

static void field_init(field *f, double *memory, int64_t n0, int64_t n1, int64_t n2)
{
    *f = (field){.shape = {n0, n1, n2}, .strides = {8 * n1 * n2, 8 * n2, 8}};
    f->desc = (gts_field_desc){.data = memory, .device = GTS_DEVICE_CPU, .dtype = F8, .ndim = 3,
                               .shape = f->shape, .strides = f->strides};
}

static void field_dims(field *f, gts_dim a, gts_dim b, gts_dim c)
{
    f->dims[0] = a, f->dims[1] = b, f->dims[2] = c;
    f->desc.dims = f->dims;
}

static void field_halo(field *f, int64_t lower, int64_t upper)
{
    for (int d = 0; d < 3; ++d)
        f->halo[d] = (gts_halo){d < 2 ? lower : 0, d < 2 ? upper : 0};
    f->desc.halo = f->halo;
}

static double memory_a[1000], memory_b[1000];

static int bind2(field *out, field *inp, const gts_bind_args *args, gts_binding *b,
                 gts_bound_field *bound)
{
    gts_field_desc descs[2] = {out->desc, inp->desc};
    return gts_bind(&lap, descs, args, b, bound, ERR);
}

static void test_signature_check(void)
{
    CHECK_OK(gts_signature_check(&lap, ERR));
    gts_field_spec bad[2];
    gts_signature sig = {2, bad, GTS_DEVICE_CPU};
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].name = "out";
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "'out' appears twice");
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].name = NULL;
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "no name");
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].dtype = (gts_dtype){'f', 3};
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_ETYPE, "inp: unsupported dtype");
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].dims[2] = GTS_DIM_I;
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "inp: dims");
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].extent[0].lower = -1;
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "extent (-1, 1) in dimension I");
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].dims[2] = 0;
    bad[1].extent[2] = (gts_halo){1, 0};
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "dimension 0");
    memcpy(bad, lap_fields, sizeof bad);
    bad[0].has_layout = true; /* all ranks 0 */
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "out: layout");
    memcpy(bad, lap_fields, sizeof bad);
    bad[1].alignment = 3; /* the rule of a storage's alignment_size (gts_geometry_init) */
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL,
                "inp: alignment: 3 bytes and the itemsize (8 bytes) must divide one another");
    bad[1].alignment = -8;
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "inp: alignment: -8 bytes is not "
                                                            "positive");
    static const int64_t fine[] = {0, 1, 2, 4, 8, 16, 64}; /* 0: none */
    for (size_t i = 0; i < sizeof fine / sizeof *fine; ++i) {
        bad[1].alignment = fine[i];
        CHECK_OK(gts_signature_check(&sig, ERR));
    }
    memcpy(bad, lap_fields, sizeof bad);
    bad[0].ndim = GTS_BIND_MAX_NDIM + 1;
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "at most 16");
    sig.device = (gts_device)7;
    CHECK_FAILS(gts_signature_check(&sig, ERR), GTS_EINVAL, "no device kind");
    CHECK_FAILS(gts_signature_check(NULL, ERR), GTS_EINVAL, "signature");
}

static void test_origin_and_domain_from_shapes(void)
{
    field out, inp;
    field_init(&out, memory_a, 10, 10, 5);
    field_init(&inp, memory_b, 10, 10, 5);
    gts_binding b;
    gts_bound_field bound[2];
    /* origin 0 leaves no room for inp's lower extent */
    CHECK_FAILS(bind2(&out, &inp, NULL, &b, bound), GTS_EINVAL,
                "inp: dimension I: origin 0 - lower extent 1 = -1");
    int64_t all[3] = {1, 1, 0};
    gts_bind_args args = {.origin_all = all};
    b.stream = &b; /* gts_bind sets the default stream: a caller sets its own */
    if (CHECK_OK(bind2(&out, &inp, &args, &b, bound))) {
        CHECK(b.stream == NULL);
        CHECK_INT_EQ(b.domain[0], 8); /* inp: 10 - 1 - 1 */
        CHECK_INT_EQ(b.domain[1], 8);
        CHECK_INT_EQ(b.domain[2], 5);
        CHECK_INT_EQ(b.nwarnings, 0);
        CHECK(bound[1].origin_data == (char *)&memory_b[1 * 50 + 1 * 5]);
        CHECK(bound[0].origin_data == (char *)&memory_a[55]);
    }
    /* a per-field origin wins over "_all_" */
    int64_t inp_origin[3] = {2, 1, 0};
    const int64_t *origins[2] = {NULL, inp_origin};
    args.origins = origins;
    if (CHECK_OK(bind2(&out, &inp, &args, &b, bound))) {
        CHECK_INT_EQ(bound[1].origin[0], 2);
        CHECK_INT_EQ(bound[0].origin[0], 1);
        CHECK_INT_EQ(b.domain[0], 7); /* inp: 10 - 2 - 1 */
    }
    /* an explicit domain wins, and is checked against every field */
    int64_t domain[3] = {8, 8, 5};
    args.domain = domain;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "inp: dimension I: origin 2 + domain 8 + upper extent 1 = 11 exceeds the "
                "field's extent 10");
    domain[0] = 0;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL, "domain: 0 points in dimension I");
    domain[0] = INT64_MAX;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EOVERFLOW, "overflows");
    /* negative and too large origins */
    args = (gts_bind_args){.origin_all = all};
    all[1] = -1;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "out: origin -1 in dimension J (from origin['_all_'])");
    all[1] = 11;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL, "outside the field's extent 10");
    /* fields too small for any point */
    all[1] = 1;
    field_init(&inp, memory_b, 10, 2, 5);
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "domain: the fields leave 0 points in dimension J: field inp has extent 2, "
                "origin 1 and the stencil's upper extent 1");
}

static void test_halo(void)
{
    field out, inp;
    field_init(&out, memory_a, 10, 10, 5);
    field_init(&inp, memory_b, 10, 10, 5);
    field_halo(&out, 1, 2);
    field_halo(&inp, 1, 2);
    gts_binding b;
    gts_bound_field bound[2];
    if (CHECK_OK(bind2(&out, &inp, NULL, &b, bound))) {
        /* the upper halo is no part of the domain (GT4Py writes into it) */
        CHECK_INT_EQ(b.domain[0], 7);
        CHECK_INT_EQ(b.domain[1], 7);
        CHECK_INT_EQ(b.domain[2], 5);
        CHECK_INT_EQ(bound[0].origin[0], 1);
        CHECK_INT_EQ(bound[1].origin[1], 1);
    }
    /* the object's own default origin wins over its halo, and the upper halo
     * still bounds the domain */
    out.origin[0] = 3, out.origin[1] = 3, out.origin[2] = 0;
    out.desc.origin = out.origin;
    if (CHECK_OK(bind2(&out, &inp, NULL, &b, bound))) {
        CHECK_INT_EQ(bound[0].origin[0], 3);
        CHECK_INT_EQ(b.domain[0], 5); /* out: 10 - 3 - 2 */
    }
    /* halos that do not fit */
    field_halo(&inp, -1, 0);
    CHECK_FAILS(bind2(&out, &inp, NULL, &b, bound), GTS_EINVAL, "inp: halo (-1, 0) in dimension I");
    field_halo(&inp, 6, 5);
    CHECK_FAILS(bind2(&out, &inp, NULL, &b, bound), GTS_EINVAL, "at most the extent 10");
    /* a halo smaller than the extent: the access is refused, not inferred away */
    field_halo(&inp, 0, 0);
    out.desc.origin = NULL;
    CHECK_FAILS(bind2(&out, &inp, NULL, &b, bound), GTS_EINVAL, "inp: dimension I: origin 0");
}

/* The inferred domain's upper margin per field and axis is the larger of
 * the upper halo and the stencil's upper extent: the halo still bounds the
 * domain, and an inferred domain passes the bounds check. */
static void test_upper_margin_is_the_larger_of_halo_and_extent(void)
{
    field out, inp;
    field_init(&out, memory_a, 10, 10, 5);
    field_init(&inp, memory_b, 10, 10, 5);
    field_halo(&out, 0, 0);
    field_halo(&inp, 0, 0); /* a storage without a halo, extent 1 in I and J */
    int64_t all[3] = {1, 1, 0};
    gts_bind_args args = {.origin_all = all};
    gts_binding b;
    gts_bound_field bound[2];
    if (CHECK_OK(bind2(&out, &inp, &args, &b, bound))) {
        CHECK_INT_EQ(b.domain[0], 8); /* inp: 10 - 1 - max(0, 1) */
        CHECK_INT_EQ(b.domain[1], 8);
        CHECK_INT_EQ(b.domain[2], 5);
    }
    field_halo(&inp, 1, 3); /* the halo is larger: it bounds the domain */
    if (CHECK_OK(bind2(&out, &inp, &args, &b, bound)))
        CHECK_INT_EQ(b.domain[0], 6); /* inp: 10 - 1 - max(3, 1) */
    field_halo(&inp, 1, 1); /* equal */
    if (CHECK_OK(bind2(&out, &inp, &args, &b, bound)))
        CHECK_INT_EQ(b.domain[0], 8);
    field_halo(&inp, 0, 0);
    field_halo(&out, 0, 4); /* another field's halo is smaller still */
    if (CHECK_OK(bind2(&out, &inp, &args, &b, bound)))
        CHECK_INT_EQ(b.domain[0], 5); /* out: 10 - 1 - 4 */
    /* a field too small for one point names the margin that bounded it */
    field_halo(&out, 0, 0);
    field_init(&inp, memory_b, 2, 10, 5);
    field_halo(&inp, 0, 0);
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "domain: the fields leave 0 points in dimension I: field inp has extent 2, "
                "origin 1 and the stencil's upper extent 1");
    field_halo(&inp, 0, 1);
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "field inp has extent 2, origin 1 and upper halo 1");
}

static void test_permuted_dims(void)
{
    /* inp stored as K, J, I with shape (5, 10, 10): its own origin (0, 2, 1)
     * means I = 1, J = 2, K = 0 */
    field out, inp;
    field_init(&out, memory_a, 10, 10, 5);
    field_init(&inp, memory_b, 5, 10, 10);
    field_dims(&inp, GTS_DIM_K, GTS_DIM_J, GTS_DIM_I);
    inp.origin[0] = 0, inp.origin[1] = 2, inp.origin[2] = 1;
    inp.desc.origin = inp.origin;
    out.origin[0] = 1, out.origin[1] = 2, out.origin[2] = 0;
    out.desc.origin = out.origin;
    gts_binding b;
    gts_bound_field bound[2];
    if (CHECK_OK(bind2(&out, &inp, NULL, &b, bound))) {
        CHECK_INT_EQ(bound[1].dims[0], GTS_DIM_I);
        CHECK_INT_EQ(bound[1].axis[0], 2);
        CHECK_INT_EQ(bound[1].shape[0], 10);
        CHECK_INT_EQ(bound[1].shape[2], 5);
        CHECK_INT_EQ(bound[1].strides[0], 8);
        CHECK_INT_EQ(bound[1].strides[2], 800);
        CHECK_INT_EQ(bound[1].origin[0], 1);
        CHECK_INT_EQ(bound[1].origin[1], 2);
        CHECK_INT_EQ(bound[1].origin[2], 0);
        CHECK(bound[1].origin_data == (char *)&memory_b[2 * 10 + 1]);
        CHECK_INT_EQ(b.domain[0], 8); /* inp: 10 - 1 - 1 */
        CHECK_INT_EQ(b.domain[1], 7); /* inp: 10 - 2 - 1 */
        CHECK_INT_EQ(b.domain[2], 5);
    }
    /* labels that are not the signature's, or repeated */
    field_dims(&inp, GTS_DIM_K, GTS_DIM_J, 0);
    CHECK_FAILS(bind2(&out, &inp, NULL, &b, bound), GTS_EINVAL,
                "inp: dims KJ,0 do not match the signature's IJK");
    field_dims(&inp, GTS_DIM_K, GTS_DIM_K, GTS_DIM_I);
    CHECK_FAILS(bind2(&out, &inp, NULL, &b, bound), GTS_EINVAL, "inp: dims:");
}

static void test_description_checks(void)
{
    field out, inp;
    gts_binding b;
    gts_bound_field bound[2];
    int64_t all[3] = {1, 1, 0};
    gts_bind_args args = {.origin_all = all};
    field_init(&out, memory_a, 10, 10, 5);
    field_init(&inp, memory_b, 10, 10, 5);
    inp.desc.dtype = (gts_dtype){'f', 4};
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_ETYPE,
                "inp: dtype float32, the signature expects float64");
    inp.desc.dtype = F8;
    inp.desc.device = GTS_DEVICE_GPU;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "inp: the field's memory is on the gpu, the stencil computes on the cpu");
    inp.desc.device = GTS_DEVICE_CPU;
    out.desc.readonly = true;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EREADONLY, "out: the stencil writes it");
    out.desc.readonly = false;
    inp.desc.readonly = true; /* read only: fine */
    CHECK_OK(bind2(&out, &inp, &args, &b, bound));
    inp.desc.ndim = 2;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL,
                "inp: 2 dimensions, the signature expects 3 (IJK)");
    inp.desc.ndim = 3;
    inp.desc.data = NULL;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL, "inp: no memory");
    inp.desc.data = memory_b;
    inp.shape[1] = -3;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EINVAL, "inp: shape[1] = -3");
    inp.shape[1] = 10;
    inp.strides[0] = INT64_MAX / 2;
    CHECK_FAILS(bind2(&out, &inp, &args, &b, bound), GTS_EOVERFLOW, "inp:");
    CHECK_FAILS(gts_bind(&lap, NULL, NULL, &b, bound, ERR), GTS_EINVAL, "NULL");
}

static void test_expectations(void)
{
    gts_field_spec fields[2];
    memcpy(fields, lap_fields, sizeof fields);
    /* the annotation says K is the largest stride, I contiguous */
    fields[1].has_layout = true;
    fields[1].layout[0] = 2, fields[1].layout[1] = 1, fields[1].layout[2] = 0;
    fields[1].alignment = 64;
    gts_signature sig = {2, fields, GTS_DEVICE_CPU};
    CHECK_OK(gts_signature_check(&sig, ERR));
    field out, inp;
    field_init(&out, memory_a, 10, 10, 5);
    field_init(&inp, memory_b, 10, 10, 5);
    int64_t all[3] = {1, 1, 0};
    gts_bind_args args = {.origin_all = all};
    gts_field_desc descs[2] = {out.desc, inp.desc};
    gts_binding b;
    gts_bound_field bound[2];
    /* C order is IJK: a warning, the kernel reads any strides; the origin
     * point (element 51) is 8 bytes past a 64-byte boundary at most */
    if (CHECK_OK(gts_bind(&sig, descs, &args, &b, bound, ERR))) {
        bool aligned = (uintptr_t)bound[1].origin_data % 64 == 0;
        CHECK_INT_EQ(b.nwarnings, aligned ? 1 : 2);
        CHECK_INT_EQ(b.warnings[0].field, 1);
        CHECK(strstr(b.warnings[0].message, "inp: layout IJK (largest stride first) differs "
                                            "from the annotation's KJI") != NULL);
    }
    fields[1].relies_on_layout = true;
    CHECK_FAILS(gts_bind(&sig, descs, &args, &b, bound, ERR), GTS_EINVAL,
                "inp: layout IJK (largest stride first), the stencil relies on KJI");
    /* matching layout: a field stored K, J, I (I contiguous) */
    static double memory_c[1000];
    field kji;
    field_init(&kji, memory_c, 5, 10, 10);
    field_dims(&kji, GTS_DIM_K, GTS_DIM_J, GTS_DIM_I);
    descs[1] = kji.desc;
    fields[1].alignment = 0;
    if (CHECK_OK(gts_bind(&sig, descs, &args, &b, bound, ERR)))
        CHECK_INT_EQ(b.nwarnings, 0);
    /* misaligned origin */
    fields[1].alignment = 4096;
    CHECK_FAILS(gts_bind(&sig, descs, &args, &b, bound, ERR), GTS_EINVAL,
                "inp: the origin point is");
    fields[1].relies_on_layout = false;
    if (CHECK_OK(gts_bind(&sig, descs, &args, &b, bound, ERR)))
        CHECK(b.nwarnings == 1 && strstr(b.warnings[0].message, "4096-byte alignment"));
}

static void test_canonical(void)
{
    gts_dim dims[5] = {1, GTS_DIM_K, 0, GTS_DIM_I, GTS_DIM_J};
    int order[5];
    gts_dims_canonical(5, dims, order);
    CHECK(order[0] == 3 && order[1] == 4 && order[2] == 1 && order[3] == 2 && order[4] == 0);
}

/* Bounds only: fields share memory where the bytes from their lowest to
 * their highest element intersect. */
static void test_may_share_memory(void)
{
    field a, b;
    field_init(&a, memory_a, 2, 5, 10); /* 100 doubles of memory_a */
    field_init(&b, memory_a + 100, 2, 5, 10);
    CHECK(!gts_fields_may_share_memory(&a.desc, &b.desc)); /* adjacent */
    CHECK(gts_fields_may_share_memory(&a.desc, &a.desc));
    b.desc.data = memory_a + 99; /* one element in common */
    CHECK(gts_fields_may_share_memory(&a.desc, &b.desc) &&
          gts_fields_may_share_memory(&b.desc, &a.desc));
    field_init(&b, memory_a + 1, 2, 5, 5); /* every other element: interleaved */
    b.strides[0] = 8 * 50, b.strides[1] = 8 * 10, b.strides[2] = 16;
    CHECK(gts_fields_may_share_memory(&a.desc, &b.desc));
    field_init(&b, memory_a + 199, 2, 5, 10); /* negative strides down to memory_a + 100 */
    for (int d = 0; d < 3; ++d)
        b.strides[d] = -b.strides[d];
    CHECK(!gts_fields_may_share_memory(&a.desc, &b.desc));
    b.desc.data = memory_a + 198;
    CHECK(gts_fields_may_share_memory(&a.desc, &b.desc));
    field_init(&b, memory_a, 2, 0, 10); /* no elements */
    CHECK(!gts_fields_may_share_memory(&a.desc, &b.desc));
    field_init(&b, NULL, 2, 5, 10);
    CHECK(!gts_fields_may_share_memory(&a.desc, &b.desc));
    field_init(&b, memory_b, 2, 5, 10);
    CHECK(!gts_fields_may_share_memory(&a.desc, &b.desc));
    b.strides[0] = INT64_MAX; /* a span beyond 64 bits: counted as overlapping */
    CHECK(gts_fields_may_share_memory(&a.desc, &b.desc));
}

int main(void)
{
    test_signature_check();
    test_origin_and_domain_from_shapes();
    test_halo();
    test_upper_margin_is_the_larger_of_halo_and_extent();
    test_permuted_dims();
    test_description_checks();
    test_expectations();
    test_canonical();
    test_may_share_memory();
    return check_summary("binding");
}
