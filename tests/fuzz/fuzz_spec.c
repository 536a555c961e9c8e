/* Spec resolution (gtstore/spec.h): a spec with any mix of given values
 * (labels and ranks left to the library among them, invalid ones too), a
 * built-in preset, a template with hostile strides and its own labels,
 * halo, aligned point and alignment, and a layout function that returns
 * anything, resolved by gts_storage_spec_resolve.
 *
 * Checks: a failure says why and leaves every flag, the template and the
 * layout function as they were, and every given entry as it was (but for
 * the entries left to the library); a success leaves a complete spec
 * (valid unrepeated labels, a permutation, halo and aligned point inside
 * the shape, an alignment that suits the itemsize), keeps what was given,
 * drops the template and function, and resolves again to itself. */
#include "fuzz_input.h"
#include "gtstore/preset.h"
#include "gtstore/spec.h"

typedef struct layout_answer {
    int rc;
    bool message;
    int layout[GTS_MAX_NDIM];
} layout_answer;

static int answer(int ndim, const gts_dim *dims, int *layout, void *ctx, gts_error *err)
{
    const layout_answer *a = ctx;
    FUZZ_CHECK(gts_dims_check(ndim, dims, NULL) == GTS_OK); /* runs on resolved dims */
    memcpy(layout, a->layout, (size_t)ndim * sizeof *layout);
    if (a->rc && a->message)
        return gts_error_set(err, GTS_EINVAL, "layout: refused");
    return a->rc;
}

static gts_dim fuzz_label(fuzz_input *in)
{
    int64_t v = fuzz_range(in, -5, 8);
    return v == -5 ? GTS_DIM_NEXT : (gts_dim)v; /* -4: no label */
}

static void read_dims(fuzz_input *in, int n, gts_dim *dims)
{
    for (int d = 0; d < n; ++d)
        dims[d] = fuzz_label(in);
}

static void read_ranks(fuzz_input *in, int n, int *layout)
{
    for (int d = 0; d < n; ++d)
        layout[d] = (int)fuzz_range(in, -2, 6); /* -1: GTS_LAYOUT_OUTER */
}

static void read_halo(fuzz_input *in, int n, gts_halo *halo)
{
    for (int d = 0; d < n; ++d)
        halo[d] = (gts_halo){fuzz_range(in, -1, 4), fuzz_range(in, -1, 4)};
}

static void read_points(fuzz_input *in, int n, int64_t *points)
{
    for (int d = 0; d < n; ++d)
        points[d] = fuzz_range(in, -1, 6);
}

typedef struct template_data {
    gts_template like;
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM], aligned[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM];
    gts_dim dims[GTS_MAX_NDIM];
    gts_halo halo[GTS_MAX_NDIM];
} template_data;

static void read_template(fuzz_input *in, const gts_storage_spec *spec, template_data *t)
{
    int n = (int)fuzz_range(in, -1, spec->ndim + 1), count = n < 0 ? 0 : n;
    t->like = (gts_template){.ndim = n, .shape = t->shape, .itemsize = fuzz_range(in, 0, 16),
                             .alignment_size = fuzz_range(in, 0, 70)};
    for (int d = 0; d < count; ++d) {
        t->shape[d] = d < spec->ndim ? spec->shape[d] : fuzz_range(in, 0, 5);
        t->strides[d] = fuzz_bool(in) ? fuzz_hostile(in) : fuzz_range(in, -64, 64);
    }
    uint8_t parts = fuzz_u8(in);
    t->like.strides = parts & 1 ? t->strides : NULL;
    if (parts & 2)
        read_ranks(in, count, t->layout), t->like.layout = t->layout;
    if (parts & 4)
        read_dims(in, count, t->dims), t->like.dims = t->dims;
    if (parts & 8)
        read_halo(in, count, t->halo), t->like.halo = t->halo;
    if (parts & 16)
        read_points(in, count, t->aligned), t->like.aligned_index = t->aligned;
}

static bool same_given(const gts_storage_spec *a, const gts_storage_spec *b)
{
    int n = a->ndim, outer = 0;
    for (int d = 0; a->has_layout && d < n; ++d)
        outer += a->layout[d] == GTS_LAYOUT_OUTER;
    bool same = a->has_dims == b->has_dims && a->has_layout == b->has_layout &&
                a->has_aligned_index == b->has_aligned_index && a->has_halo == b->has_halo &&
                a->has_device == b->has_device && a->alignment_size == b->alignment_size &&
                a->nsub == b->nsub && a->preset == b->preset;
    for (int d = 0; same && d < n; ++d) {
        same = a->shape[d] == b->shape[d] && a->halo[d].lower == b->halo[d].lower &&
               a->halo[d].upper == b->halo[d].upper;
        if (a->has_dims && a->dims[d] != GTS_DIM_NEXT)
            same = same && a->dims[d] == b->dims[d];
        if (a->has_layout && a->layout[d] != GTS_LAYOUT_OUTER)
            same = same && (b->layout[d] == a->layout[d] || b->layout[d] == a->layout[d] + outer);
        if (a->has_aligned_index)
            same = same && a->aligned_index[d] == b->aligned_index[d];
    }
    return same;
}

static void check_resolved(const gts_storage_spec *s, const gts_storage_spec *given)
{
    int n = s->ndim;
    FUZZ_CHECK(s->has_dims && s->has_layout && s->has_aligned_index && s->has_halo &&
               s->has_device);
    FUZZ_CHECK(s->like == NULL && s->layout_fn == NULL && s->layout_ctx == NULL);
    FUZZ_CHECK(gts_dims_check(n, s->dims, NULL) == GTS_OK);
    FUZZ_CHECK(gts_layout_check(n, s->layout, NULL) == GTS_OK);
    int64_t a = s->alignment_size, itemsize = s->dtype.itemsize;
    FUZZ_CHECK(a >= 1 && (a % itemsize == 0 || itemsize % a == 0));
    if (given->alignment_size > 0)
        FUZZ_CHECK(a == given->alignment_size);
    for (int d = 0; d < n; ++d) {
        FUZZ_CHECK(s->halo[d].lower >= 0 && s->halo[d].upper >= 0);
        FUZZ_CHECK(s->halo[d].lower + s->halo[d].upper <= s->shape[d]);
        FUZZ_CHECK(s->aligned_index[d] >= 0);
        FUZZ_CHECK(s->aligned_index[d] < s->shape[d] || s->aligned_index[d] == 0);
        if (given->has_dims && given->dims[d] != GTS_DIM_NEXT)
            FUZZ_CHECK(s->dims[d] == given->dims[d]);
        if (given->has_aligned_index)
            FUZZ_CHECK(s->aligned_index[d] == given->aligned_index[d]);
    }
    if (given->has_layout) { /* the ranks given keep their order */
        for (int d = 0; d < n; ++d)
            for (int e = 0; e < n; ++e)
                if (given->layout[d] >= 0 && given->layout[e] >= 0 &&
                    given->layout[d] < given->layout[e])
                    FUZZ_CHECK(s->layout[d] < s->layout[e]);
    } else if (!given->layout_fn && given->preset) {
        int layout[GTS_MAX_NDIM];
        FUZZ_CHECK(gts_preset_layout(given->preset, n, s->dims, layout, NULL) == GTS_OK);
        FUZZ_CHECK(memcmp(layout, s->layout, (size_t)n * sizeof *layout) == 0);
    }
    /* a resolved spec resolves to itself */
    gts_storage_spec again;
    gts_storage_spec_copy(&again, s);
    FUZZ_CHECK(gts_storage_spec_resolve(&again, NULL, NULL) == GTS_OK);
    FUZZ_CHECK(memcmp(again.dims, s->dims, (size_t)n * sizeof *s->dims) == 0);
    FUZZ_CHECK(memcmp(again.layout, s->layout, (size_t)n * sizeof *s->layout) == 0);
    FUZZ_CHECK(memcmp(again.aligned_index, s->aligned_index, (size_t)n * sizeof(int64_t)) == 0);
    FUZZ_CHECK(again.alignment_size == s->alignment_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    static const gts_dtype dtypes[] = {
        {GTS_KIND_FLOAT, 8}, {GTS_KIND_FLOAT, 4}, {GTS_KIND_INT, 1}, {GTS_KIND_COMPLEX, 16}};
    int ndim = (int)fuzz_range(&in, 0, 6);
    gts_dtype dtype = dtypes[fuzz_range(&in, 0, 3)];
    int64_t shape[GTS_MAX_NDIM];
    for (int d = 0; d < ndim; ++d)
        shape[d] = fuzz_range(&in, 0, 5);
    gts_storage_spec spec, given;
    gts_error err;
    FUZZ_CHECK(gts_storage_spec_init(&spec, ndim, shape, dtype, &err) == GTS_OK);
    spec.nsub = (int)fuzz_range(&in, -1, ndim + 1);
    int preset_index = (int)fuzz_range(&in, -1, 5);
    gts_preset preset;
    bool have_preset = preset_index >= 0 &&
                       gts_preset_at((size_t)preset_index, &preset, NULL) == GTS_OK;
    spec.preset = have_preset ? &preset : NULL;
    uint8_t flags = fuzz_u8(&in);
    if ((spec.has_dims = flags & 1))
        read_dims(&in, ndim, spec.dims);
    if ((spec.has_layout = flags & 2))
        read_ranks(&in, ndim, spec.layout);
    if ((spec.has_aligned_index = flags & 4))
        read_points(&in, ndim, spec.aligned_index);
    spec.has_halo = flags & 8;
    if (fuzz_bool(&in))
        read_halo(&in, ndim, spec.halo);
    if ((spec.has_device = flags & 16))
        spec.device = fuzz_bool(&in) ? GTS_DEVICE_GPU : GTS_DEVICE_CPU;
    spec.alignment_size = fuzz_bool(&in) ? fuzz_hostile(&in) : fuzz_range(&in, 0, 70);
    template_data t;
    if (flags & 32) {
        read_template(&in, &spec, &t);
        spec.like = &t.like;
    }
    layout_answer a = {0};
    if (flags & 64) {
        static const int codes[] = {GTS_OK, GTS_EINVAL, GTS_ENOMEM, 5};
        a.rc = codes[fuzz_range(&in, 0, 3)];
        a.message = fuzz_bool(&in);
        read_ranks(&in, ndim, a.layout);
        spec.layout_fn = answer;
        spec.layout_ctx = &a;
    }
    gts_storage_spec_copy(&given, &spec);
    gts_geometry geometry;
    int rc = gts_storage_spec_resolve(&spec, &geometry, &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(same_given(&given, &spec));
        FUZZ_CHECK(spec.like == given.like && spec.layout_fn == given.layout_fn);
    } else {
        check_resolved(&spec, &given);
    }
    if (have_preset)
        gts_preset_release(&preset);
    return 0;
}
