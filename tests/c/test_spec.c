/* Specs and their one resolution (gtstore/spec.h): the fallbacks, presets
 * and explicit values, templates (a storage's and an array's strides),
 * subarray dims, labels and ranks left to the library, a caller's layout
 * function, and every error, with the rule that a failure changes nothing
 * a caller gave. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "storage_helpers.h"
#include "gtstore/spec.h"
#include "gtstore/storage.h"

static const gts_dtype F4 = {GTS_KIND_FLOAT, 4};

static gts_preset gpu, cpu_kfirst;

static gts_storage_spec spec_of(int ndim, const int64_t *shape, gts_dtype dtype)
{
    gts_storage_spec spec;
    CHECK_OK(gts_storage_spec_init(&spec, ndim, shape, dtype, ERR));
    return spec;
}

static bool layout_is(const gts_storage_spec *spec, const int *expected)
{
    return memcmp(spec->layout, expected, (size_t)spec->ndim * sizeof *expected) == 0;
}

static bool dims_are(const gts_storage_spec *spec, const gts_dim *expected)
{
    return memcmp(spec->dims, expected, (size_t)spec->ndim * sizeof *expected) == 0;
}

static void test_spec_defaults(void)
{
    const int64_t shape[3] = {5, 4, 3};
    gts_storage_spec spec = spec_of(3, shape, F8);
    CHECK(!spec.has_dims && !spec.has_layout && !spec.has_aligned_index && !spec.has_device);
    CHECK(spec.preset == NULL && spec.alignment_size == 0);
    spec.halo[0] = (gts_halo){1, 2};
    spec.halo[2] = (gts_halo){3, 0}; /* the lower halo covers K: clamped to 2 */
    gts_geometry g;
    if (!CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR)))
        return;
    CHECK(spec.has_dims && spec.has_layout && spec.has_aligned_index && spec.has_device);
    CHECK(spec.dims[0] == GTS_DIM_I && spec.dims[1] == GTS_DIM_J && spec.dims[2] == GTS_DIM_K);
    CHECK(spec.layout[0] == 0 && spec.layout[1] == 1 && spec.layout[2] == 2);
    CHECK_INT_EQ(spec.alignment_size, 1);
    CHECK(ints_eq(3, spec.aligned_index, (const int64_t[]){1, 0, 2}));
    CHECK_INT_EQ(spec.device, GTS_DEVICE_CPU);
    /* C order, no padding: 8, 8*3, 8*3*4 */
    CHECK(ints_eq(3, g.strides, (const int64_t[]){96, 24, 8}));
    CHECK_INT_EQ(g.alignment, 1);

    /* more than three dims: I, J, K, then data dims 0, 1 */
    const int64_t shape5[5] = {2, 2, 2, 2, 2};
    spec = spec_of(5, shape5, F4);
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK(spec.dims[0] == GTS_DIM_I && spec.dims[1] == GTS_DIM_J &&
              spec.dims[2] == GTS_DIM_K && spec.dims[3] == 0 && spec.dims[4] == 1);
    /* two dims: I, J */
    spec = spec_of(2, shape, F4);
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK(spec.dims[0] == GTS_DIM_I && spec.dims[1] == GTS_DIM_J);
    /* a 0-d spec needs no shape */
    CHECK_OK(gts_storage_spec_init(&spec, 0, NULL, F8, ERR));
    if (CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR)))
        CHECK(g.ndim == 0 && g.span == 8 && spec.alignment_size == 1);
}

static void test_spec_presets(void)
{
    const int64_t shape[3] = {5, 4, 3};
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    gts_geometry g;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR))) {
        CHECK_INT_EQ(spec.alignment_size, 32 * 8); /* 32 elements of 8 bytes */
        CHECK(spec.layout[0] == 2 && spec.layout[1] == 1 && spec.layout[2] == 0);
        CHECK_INT_EQ(spec.device, GTS_DEVICE_GPU);
        /* I contiguous and padded 5 -> 32: 8, 8*32, 256*4 */
        CHECK(ints_eq(3, g.strides, (const int64_t[]){8, 256, 1024}));
    }
    spec = spec_of(3, shape, F4);
    spec.preset = &gpu;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK_INT_EQ(spec.alignment_size, 32 * 4);
    /* an alignment in elements (GDP-3's first draft) beats the preset's, and
     * must agree with alignment_size where both are given */
    spec = spec_of(3, shape, F4);
    spec.preset = &gpu;
    spec.alignment = 4;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK(spec.alignment_size == 16 && spec.alignment == 0);
    spec = spec_of(3, shape, F8);
    spec.alignment = 4;
    spec.alignment_size = 32;
    CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR));
    spec = spec_of(3, shape, F8);
    spec.alignment = 4;
    spec.alignment_size = 16;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL,
                "alignment_size=16 and alignment=4 disagree: 4 elements of 8 bytes are 32 bytes");
    spec = spec_of(3, shape, F8);
    spec.alignment = -2;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL,
                "alignment: -2 elements is not positive");
    spec = spec_of(3, shape, F8);
    spec.alignment = INT64_MAX / 4;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EOVERFLOW, "overflows");

    /* gt:cpu_kfirst: K contiguous wherever it stands; dims KJI, shape (3, 4, 5) */
    spec = spec_of(3, (const int64_t[]){3, 4, 5}, F8);
    spec.preset = &cpu_kfirst;
    spec.has_dims = true;
    spec.dims[0] = GTS_DIM_K;
    spec.dims[1] = GTS_DIM_J;
    spec.dims[2] = GTS_DIM_I;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR))) {
        CHECK(spec.layout[0] == 2 && spec.layout[1] == 1 && spec.layout[2] == 0);
        CHECK(ints_eq(3, g.strides, (const int64_t[]){8, 24, 96}));
        CHECK_INT_EQ(spec.alignment_size, 8); /* alignment 1 element */
        CHECK_INT_EQ(spec.device, GTS_DEVICE_CPU);
    }

    /* explicit values win over the preset's */
    spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    spec.has_layout = true;
    spec.layout[0] = 0, spec.layout[1] = 1, spec.layout[2] = 2;
    spec.alignment_size = 64;
    spec.has_device = true;
    spec.device = GTS_DEVICE_CPU;
    spec.has_dims = true;
    spec.dims[0] = GTS_DIM_J, spec.dims[1] = 0, spec.dims[2] = GTS_DIM_I;
    spec.has_aligned_index = true;
    spec.aligned_index[0] = 4, spec.aligned_index[1] = 3, spec.aligned_index[2] = 1;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR))) {
        CHECK(spec.layout[0] == 0 && spec.layout[1] == 1 && spec.layout[2] == 2);
        CHECK_INT_EQ(spec.alignment_size, 64);
        CHECK_INT_EQ(spec.device, GTS_DEVICE_CPU);
        CHECK(spec.dims[0] == GTS_DIM_J && spec.dims[1] == 0 && spec.dims[2] == GTS_DIM_I);
        CHECK(ints_eq(3, spec.aligned_index, (const int64_t[]){4, 3, 1}));
        /* last dim contiguous, padded 3 -> 8 (64 bytes): 8, 64, 64*4 */
        CHECK(ints_eq(3, g.strides, (const int64_t[]){256, 64, 8}));
    }
}

static void test_spec_errors(void)
{
    const int64_t shape[3] = {5, 4, 3};
    gts_storage_spec spec = spec_of(3, shape, F8), bad;

    bad = spec;
    bad.halo[1] = (gts_halo){-1, 0};
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "halo");
    CHECK(!bad.has_dims && !bad.has_layout); /* a failure resolves nothing */
    bad = spec;
    bad.halo[2] = (gts_halo){0, -2};
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "halo: negative");
    bad = spec;
    bad.halo[0] = (gts_halo){3, 3}; /* 6 > 5 */
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "halo");
    bad = spec;
    bad.halo[2] = (gts_halo){4, 0};
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "larger than the extent 3");
    bad = spec;
    bad.halo[0] = (gts_halo){5, 0}; /* all halo is fine */
    CHECK_OK(gts_storage_spec_resolve(&bad, NULL, ERR));

    bad = spec;
    bad.has_dims = true;
    bad.dims[0] = GTS_DIM_I, bad.dims[1] = GTS_DIM_K, bad.dims[2] = GTS_DIM_I;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "dims");
    bad = spec;
    bad.has_layout = true;
    bad.layout[0] = 0, bad.layout[1] = 0, bad.layout[2] = 1;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "layout");
    bad.layout[0] = 1, bad.layout[1] = 2, bad.layout[2] = 3;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "layout");
    bad = spec;
    bad.alignment_size = -8;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "alignment_size: -8");
    bad = spec;
    bad.has_aligned_index = true;
    bad.aligned_index[0] = 5; /* extent 5 */
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "aligned_index: 5");
    bad.aligned_index[0] = 0, bad.aligned_index[1] = -1;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "aligned_index: -1");
    bad = spec;
    bad.alignment_size = 12; /* 12 and 8 divide neither way */
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "alignment_size: 12");
    bad.alignment_size = 4; /* a divisor of the itemsize is fine */
    CHECK_OK(gts_storage_spec_resolve(&bad, NULL, ERR));
    bad = spec;
    bad.shape[1] = -1;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "shape");

    CHECK_FAILS(gts_storage_spec_init(&bad, -1, shape, F8, ERR), GTS_EINVAL, "ndim");
    CHECK_FAILS(gts_storage_spec_init(&bad, GTS_MAX_NDIM + 1, shape, F8, ERR), GTS_EINVAL,
                "ndim");
    bad = spec;
    bad.ndim = GTS_MAX_NDIM + 1;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "ndim");
    bad.ndim = -2;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "ndim");
    bad = spec;
    bad.dtype = (gts_dtype){GTS_KIND_FLOAT, 3};
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_ETYPE, "dtype");

    /* A device kind that is neither CPU nor GPU, as `managed` is checked:
     * creation took it for the GPU (and went to CUDA), wrapping for a
     * mismatch. Given, from a preset or from a template filled in by hand. */
    bad = spec;
    bad.managed = (gts_managed)7;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "managed: 7");
    bad = spec;
    bad.has_device = true;
    bad.device = (gts_device)5;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL,
                "device: 5 is no device kind");
    gts_storage s;
    CHECK_FAILS(gts_storage_create(&bad, 0, &s, ERR), GTS_EINVAL, "device: 5 is no device kind");
    double memory[60];
    gts_buffer *buffer;
    if (CHECK_OK(gts_buffer_wrap_host(memory, sizeof memory, NULL, NULL, &buffer, ERR))) {
        CHECK_FAILS(gts_storage_wrap(&bad, buffer, 0, (const int64_t[]){96, 24, 8}, false, &s,
                                     ERR),
                    GTS_EINVAL, "device: 5");
        gts_buffer_release(buffer);
    }
    bad.device = (gts_device)-1;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL, "device: -1");
    gts_preset odd = gpu;
    odd.device = (gts_device)2;
    bad = spec;
    bad.preset = &odd;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL,
                "preset: device: 2 is no device kind");
    gts_template like = {.ndim = 3, .shape = shape, .has_device = true,
                         .device = (gts_device)3};
    bad = spec;
    bad.like = &like;
    CHECK_FAILS(gts_storage_spec_resolve(&bad, NULL, ERR), GTS_EINVAL,
                "like: device: 3 is no device kind");
    CHECK(!bad.has_dims && !bad.has_layout && !bad.has_device); /* nothing resolved */
}

/* A storage as a template: its layout and dims always, its halo, aligned
 * point and alignment with `placement`; the preset and explicit values
 * win, as everywhere. */
static void test_template_storage(void)
{
    const int64_t shape[3] = {6, 5, 4};
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.has_dims = spec.has_layout = true;
    memcpy(spec.dims, (const gts_dim[]){GTS_DIM_K, 0, GTS_DIM_I}, sizeof(gts_dim[3]));
    memcpy(spec.layout, (const int[]){1, 2, 0}, sizeof(int[3]));
    spec.halo[0] = (gts_halo){2, 1};
    spec.halo[2] = (gts_halo){1, 1};
    spec.alignment_size = 64;
    gts_storage model;
    if (!CHECK_OK(gts_storage_create(&spec, 0, &model, ERR)))
        return;
    gts_template like;
    gts_template_from_storage(&model, true, &like);
    spec = spec_of(3, shape, F8);
    spec.like = &like;
    gts_geometry g;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR))) {
        CHECK(dims_are(&spec, model.dims) && layout_is(&spec, (const int[]){1, 2, 0}));
        CHECK(spec.halo[0].lower == 2 && spec.halo[0].upper == 1 && spec.halo[2].lower == 1);
        CHECK(ints_eq(3, spec.aligned_index, model.aligned_index));
        CHECK_INT_EQ(spec.alignment_size, 64);
        CHECK(spec.like == NULL && spec.has_halo); /* resolved: no longer refers to it */
        CHECK(ints_eq(3, g.strides, model.strides));
    }
    /* without placement: labels and layout only */
    gts_template_from_storage(&model, false, &like);
    spec = spec_of(3, shape, F4);
    spec.like = &like;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR))) {
        CHECK(dims_are(&spec, model.dims) && layout_is(&spec, (const int[]){1, 2, 0}));
        CHECK(spec.halo[0].lower == 0 && spec.halo[2].upper == 0);
        CHECK(ints_eq(3, spec.aligned_index, (const int64_t[]){0, 0, 0}));
        CHECK_INT_EQ(spec.alignment_size, 1);
    }
    /* the preset's layout and alignment win; the template still labels */
    gts_template_from_storage(&model, true, &like);
    spec = spec_of(3, shape, F8);
    spec.like = &like;
    spec.preset = &cpu_kfirst; /* K contiguous: K is dim 0 here */
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR))) {
        CHECK(dims_are(&spec, model.dims));
        CHECK_INT_EQ(gts_layout_contiguous_dim(3, spec.layout), 0);
        CHECK_INT_EQ(spec.alignment_size, 8);
        CHECK(spec.halo[0].lower == 2); /* the preset gives no halo */
    }
    /* explicit values win over the template's */
    spec = spec_of(3, shape, F8);
    spec.like = &like;
    spec.has_halo = spec.has_aligned_index = true;
    spec.aligned_index[0] = spec.aligned_index[1] = spec.aligned_index[2] = 0;
    spec.alignment_size = 16;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR))) {
        CHECK(spec.halo[0].lower == 0 && spec.halo[2].lower == 0);
        CHECK(ints_eq(3, spec.aligned_index, (const int64_t[]){0, 0, 0}));
        CHECK_INT_EQ(spec.alignment_size, 16);
    }
    /* an alignment the new itemsize does not suit is not taken */
    gts_template odd = {.ndim = 3, .alignment_size = 12};
    spec = spec_of(3, shape, F8);
    spec.like = &odd;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK_INT_EQ(spec.alignment_size, 1);
    odd.alignment_size = 4; /* a divisor of 8 suits */
    spec = spec_of(3, shape, F8);
    spec.like = &odd;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK_INT_EQ(spec.alignment_size, 4);
    gts_storage_release(&model);
}

/* An array as a template: the layout its strides show (NumPy's order='K'
 * rule), the labels it declares. */
static void test_template_array(void)
{
    const int64_t shape[3] = {3, 4, 5};
    const struct {
        int64_t strides[3];
        int layout[3];
    } cases[] = {
        {{160, 40, 8}, {0, 1, 2}},  /* C */
        {{8, 24, 96}, {2, 1, 0}},   /* Fortran */
        {{8, 120, 24}, {2, 0, 1}},  /* J outermost, I contiguous */
        {{-160, 40, -8}, {0, 1, 2}} /* signs do not matter */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gts_template like = {.ndim = 3, .shape = shape, .strides = cases[i].strides,
                             .itemsize = 8};
        gts_storage_spec spec = spec_of(3, shape, F8);
        spec.like = &like;
        if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
            CHECK(layout_is(&spec, cases[i].layout) &&
                  dims_are(&spec, (const gts_dim[]){GTS_DIM_I, GTS_DIM_J, GTS_DIM_K}));
    }
    /* labels it declares */
    const gts_dim kji[3] = {GTS_DIM_K, GTS_DIM_J, GTS_DIM_I};
    gts_template like = {.ndim = 3, .shape = shape, .strides = cases[1].strides, .itemsize = 8,
                         .dims = kji};
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.like = &like;
    spec.preset = &cpu_kfirst;
    gts_geometry g;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, &g, ERR))) {
        CHECK(dims_are(&spec, kji));
        CHECK(ints_eq(3, g.strides, (const int64_t[]){8, 24, 96})); /* K (dim 0) contiguous */
    }
}

/* A subarray dtype's trailing dims: data labels numbered on, outermost in
 * a template's layout, no halo; a base-only dims or layout leaves them to
 * the library with GTS_DIM_NEXT and GTS_LAYOUT_OUTER. */
static void test_subarray_dims(void)
{
    const int64_t shape[4] = {5, 4, 2, 3};
    gts_storage_spec spec = spec_of(4, shape, F8);
    spec.nsub = 2;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK(dims_are(&spec, (const gts_dim[]){GTS_DIM_I, GTS_DIM_J, 0, 1}) &&
              layout_is(&spec, (const int[]){0, 1, 2, 3}));
    /* a template of the base dims: its labels and layout, the rest outermost */
    const int64_t base_strides[2] = {8, 40};
    const gts_dim labels[2] = {GTS_DIM_K, 3};
    const gts_halo halo[2] = {{1, 1}, {0, 2}};
    gts_template like = {.ndim = 2, .shape = shape, .strides = base_strides, .itemsize = 8,
                         .dims = labels, .halo = halo};
    spec = spec_of(4, shape, F8);
    spec.nsub = 2;
    spec.like = &like;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR))) {
        CHECK(dims_are(&spec, (const gts_dim[]){GTS_DIM_K, 3, 4, 5}));
        CHECK(layout_is(&spec, (const int[]){3, 2, 0, 1}));
        CHECK(spec.halo[1].upper == 2 && spec.halo[2].lower == 0 && spec.halo[3].upper == 0);
    }
    /* labels and ranks left to the library, anywhere */
    spec = spec_of(4, shape, F8);
    spec.has_dims = spec.has_layout = true;
    memcpy(spec.dims, (const gts_dim[]){GTS_DIM_NEXT, GTS_DIM_J, 7, GTS_DIM_NEXT},
           sizeof(gts_dim[4]));
    memcpy(spec.layout, (const int[]){1, GTS_LAYOUT_OUTER, 0, GTS_LAYOUT_OUTER}, sizeof(int[4]));
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR))) {
        CHECK(dims_are(&spec, (const gts_dim[]){8, GTS_DIM_J, 7, 9}));
        CHECK(layout_is(&spec, (const int[]){3, 0, 2, 1}));
    }
    /* no label above the largest data dimension number */
    spec = spec_of(2, shape, F8);
    spec.has_dims = true;
    spec.dims[0] = GTS_MAX_DATA_DIM, spec.dims[1] = GTS_DIM_NEXT;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL, "dims");
    /* the ranks given must be a permutation of their own */
    spec = spec_of(4, shape, F8);
    spec.has_layout = true;
    memcpy(spec.layout, (const int[]){2, GTS_LAYOUT_OUTER, 0, GTS_LAYOUT_OUTER}, sizeof(int[4]));
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL, "layout");
    CHECK(spec.has_layout && !spec.has_dims && spec.like == NULL);
    spec = spec_of(4, shape, F8);
    spec.nsub = 5;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL, "nsub: 5");
    spec.nsub = -1;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL, "nsub");
    /* a template with more dims than the spec */
    gts_template big = {.ndim = 5};
    spec = spec_of(4, shape, F8);
    spec.like = &big;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL, "like");
}

static int calls;

/* The K dimension contiguous, wherever it stands; data dims left outermost. */
static int k_innermost(int ndim, const gts_dim *dims, int *layout, void *ctx, gts_error *err)
{
    (void)err;
    ++calls;
    int rank = 0, *base = ctx;
    for (int d = 0; d < ndim; ++d)
        if (dims[d] < 0 && dims[d] != GTS_DIM_K)
            layout[d] = *base + rank++;
    for (int d = 0; d < ndim; ++d)
        if (dims[d] == GTS_DIM_K)
            layout[d] = *base + rank++;
        else if (dims[d] >= 0)
            layout[d] = GTS_LAYOUT_OUTER;
    return GTS_OK;
}

static int fails_quietly(int ndim, const gts_dim *dims, int *layout, void *ctx, gts_error *err)
{
    (void)ndim, (void)dims, (void)layout, (void)ctx, (void)err;
    return GTS_EINVAL;
}

/* A caller's layout rule runs on the resolved dims and wins over the preset. */
static void test_layout_function(void)
{
    const int64_t shape[4] = {3, 4, 5, 2};
    int base = 0;
    gts_storage_spec spec = spec_of(4, shape, F8);
    spec.has_dims = true;
    memcpy(spec.dims, (const gts_dim[]){GTS_DIM_K, GTS_DIM_I, GTS_DIM_J, 0}, sizeof(gts_dim[4]));
    spec.preset = &gpu;
    spec.layout_fn = k_innermost;
    spec.layout_ctx = &base;
    calls = 0;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR))) {
        CHECK_INT_EQ(calls, 1);
        CHECK(layout_is(&spec, (const int[]){3, 1, 2, 0}));
        CHECK(spec.layout_fn == NULL && spec.layout_ctx == NULL);
        CHECK_INT_EQ(spec.alignment_size, 32 * 8); /* the preset still aligns */
    }
    /* a layout given is not overridden, and the function does not run */
    spec = spec_of(2, shape, F8);
    spec.has_layout = true;
    spec.layout[0] = 1, spec.layout[1] = 0;
    spec.layout_fn = k_innermost;
    spec.layout_ctx = &base;
    calls = 0;
    if (CHECK_OK(gts_storage_spec_resolve(&spec, NULL, ERR)))
        CHECK(calls == 0 && layout_is(&spec, (const int[]){1, 0}));
    /* its result is checked, and a failure without a message gets one */
    base = 1; /* ranks 1..n: no permutation */
    spec = spec_of(3, shape, F8);
    spec.layout_fn = k_innermost;
    spec.layout_ctx = &base;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL, "layout");
    CHECK(!spec.has_layout && spec.layout_fn == k_innermost);
    spec.layout_fn = fails_quietly;
    CHECK_FAILS(gts_storage_spec_resolve(&spec, NULL, ERR), GTS_EINVAL,
                "the layout function given failed");
}

/* Wrapping checks a template's layout against the memory, as a preset's. */
static void test_wrap_with_template(void)
{
    double data[12];
    gts_buffer *buffer;
    if (!CHECK_OK(gts_buffer_wrap_host(data, sizeof data, NULL, NULL, &buffer, ERR)))
        return;
    const int64_t shape[2] = {3, 4}, c_strides[2] = {32, 8}, f_strides[2] = {8, 24};
    gts_template like = {.ndim = 2, .shape = shape, .strides = f_strides, .itemsize = 8};
    gts_storage_spec spec = spec_of(2, shape, F8);
    spec.like = &like;
    gts_storage s;
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR), GTS_EINVAL,
                "(the template's) does not match");
    like.strides = c_strides;
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR))) {
        CHECK(s.layout[0] == 0 && s.layout[1] == 1);
        gts_storage_release(&s);
    }
    spec = spec_of(2, shape, F8); /* nothing asks: the memory's own */
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, 0, f_strides, false, &s, ERR))) {
        CHECK(s.layout[0] == 1 && s.layout[1] == 0);
        gts_storage_release(&s);
    }
    gts_buffer_release(buffer);
}

/* A subarray dtype's shape: appended to a shape given, or checked at the
 * end of a data's shape; both refusals name what they refuse. */
static void test_subarray_shape(void)
{
    int64_t shape[GTS_MAX_NDIM] = {4, 5};
    const int64_t sub[2] = {3, 2};
    int ndim = 2, nbase = -1;
    if (CHECK_OK(gts_subarray_shape(&ndim, shape, 2, sub, false, &nbase, ERR)))
        CHECK(ndim == 4 && nbase == 2 && ints_eq(4, shape, (const int64_t[]){4, 5, 3, 2}));
    /* the data's shape (4, 5, 3, 2) holds them */
    if (CHECK_OK(gts_subarray_shape(&ndim, shape, 2, sub, true, &nbase, ERR)))
        CHECK(ndim == 4 && nbase == 2);
    if (CHECK_OK(gts_subarray_shape(&ndim, shape, 0, NULL, true, &nbase, ERR)))
        CHECK(ndim == 4 && nbase == 4);
    ndim = 2;
    CHECK_FAILS(gts_subarray_shape(&ndim, shape, 2, sub, true, &nbase, ERR), GTS_EINVAL,
                "dtype: the data's shape (4, 5) does not end with the subarray shape (3, 2)");
    ndim = 1;
    CHECK_FAILS(gts_subarray_shape(&ndim, shape, 2, sub, true, &nbase, ERR), GTS_EINVAL,
                "shape (4,) does not end with");
    ndim = GTS_MAX_NDIM - 1;
    CHECK_FAILS(gts_subarray_shape(&ndim, shape, 2, sub, false, &nbase, ERR), GTS_EINVAL,
                "dtype: the subarray adds too many dimensions (max 64)");
    CHECK(ndim == GTS_MAX_NDIM - 1);
    ndim = -1;
    CHECK_FAILS(gts_subarray_shape(&ndim, shape, 2, sub, false, &nbase, ERR), GTS_EINVAL,
                "ndim, nsub: -1 and 2, each in [0, 64]");
    ndim = 2;
    CHECK_FAILS(gts_subarray_shape(&ndim, shape, 2, NULL, false, &nbase, ERR), GTS_EINVAL,
                "sub_shape: NULL");
    CHECK_FAILS(gts_subarray_shape(&ndim, shape, 2, sub, false, NULL, ERR), GTS_EINVAL,
                "nbase: NULL");
}

/* The dims a spec resolves to, before resolution: given, the template's
 * (a subarray's dims numbered on), the fallback; the spec unchanged. */
static void test_spec_dims(void)
{
    const int64_t shape[3] = {3, 4, 2};
    gts_dim dims[3] = {0};
    gts_storage_spec spec = spec_of(2, shape, F8);
    if (CHECK_OK(gts_storage_spec_dims(&spec, dims, ERR)))
        CHECK(dims[0] == GTS_DIM_I && dims[1] == GTS_DIM_J);
    CHECK(!spec.has_dims);
    const gts_dim kj[2] = {GTS_DIM_K, GTS_DIM_J};
    gts_template like = {.ndim = 2, .shape = shape, .dims = kj};
    spec = spec_of(3, shape, F8);
    spec.nsub = 1;
    spec.like = &like;
    if (CHECK_OK(gts_storage_spec_dims(&spec, dims, ERR)))
        CHECK(dims[0] == GTS_DIM_K && dims[1] == GTS_DIM_J && dims[2] == 0);
    spec.has_dims = true;
    memcpy(spec.dims, (const gts_dim[]){GTS_DIM_J, GTS_DIM_I, GTS_DIM_NEXT}, sizeof dims);
    if (CHECK_OK(gts_storage_spec_dims(&spec, dims, ERR)))
        CHECK(dims[0] == GTS_DIM_J && dims[1] == GTS_DIM_I && dims[2] == 0);
    CHECK(spec.dims[2] == GTS_DIM_NEXT);
    spec.dims[1] = GTS_DIM_J;
    CHECK_FAILS(gts_storage_spec_dims(&spec, dims, ERR), GTS_EINVAL, "appears twice");
    CHECK_FAILS(gts_storage_spec_dims(NULL, dims, ERR), GTS_EINVAL, "spec: NULL");
}

int main(void)
{
    test_spec_dims();
    if (!CHECK_OK(gts_preset_lookup("gt:gpu", &gpu, ERR)) ||
        !CHECK_OK(gts_preset_lookup("gt:cpu_kfirst", &cpu_kfirst, ERR)))
        return check_summary("spec");
    int64_t start = live_buffers();
    test_spec_defaults();
    test_subarray_shape();
    test_spec_presets();
    test_spec_errors();
    test_template_storage();
    test_template_array();
    test_subarray_dims();
    test_layout_function();
    test_wrap_with_template();
    CHECK_INT_EQ(live_buffers(), start);
    return check_summary("spec");
}
