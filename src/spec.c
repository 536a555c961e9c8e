/* Specs and their one resolution: given value, preset, template, fallback
 * (see gtstore/spec.h). */
#include "gtstore/spec.h"

#include <stddef.h>
#include <string.h>

#include "gtstore/storage.h"
#include "geometry_private.h"
#include "preset_private.h"
#include "spec_resolution.h"
#include "tuple_text.h"

/* Whether the last `nsub` of `ndim` extents are `sub_shape`. */
static bool ends_with(int ndim, const int64_t *shape, int nsub, const int64_t *sub_shape)
{
    if (nsub > ndim)
        return false;
    for (int k = 0; k < nsub; ++k)
        if (shape[ndim - nsub + k] != sub_shape[k])
            return false;
    return true;
}

int gts_subarray_shape(int *ndim, int64_t *shape, int nsub, const int64_t *sub_shape,
                       bool with_subarray, int *nbase, gts_error *err)
{
    if (!ndim || !nbase)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", ndim ? "nbase" : "ndim");
    if (*ndim < 0 || *ndim > GTS_MAX_NDIM || nsub < 0 || nsub > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim, nsub: %d and %d, each in [0, %d]", *ndim,
                             nsub, GTS_MAX_NDIM);
    if ((*ndim > 0 && !shape) || (nsub > 0 && !sub_shape))
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", shape ? "sub_shape" : "shape");
    if (with_subarray) {
        if (!ends_with(*ndim, shape, nsub, sub_shape)) {
            char have[GTS__TUPLE_TEXT_SIZE], sub[GTS__TUPLE_TEXT_SIZE];
            gts__shape_text(*ndim, shape, have);
            gts__shape_text(nsub, sub_shape, sub);
            return gts_error_set(err, GTS_EINVAL,
                                 "dtype: the data's shape %s does not end with the subarray "
                                 "shape %s",
                                 have, sub);
        }
        *nbase = *ndim - nsub;
        return GTS_OK;
    }
    if (*ndim + nsub > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL,
                             "dtype: the subarray adds too many dimensions (max %d)",
                             GTS_MAX_NDIM);
    *nbase = *ndim;
    if (nsub > 0)
        memcpy(shape + *ndim, sub_shape, (size_t)nsub * sizeof *shape);
    *ndim += nsub;
    return GTS_OK;
}

int gts_storage_spec_init(gts_storage_spec *spec, int ndim, const int64_t *shape,
                          gts_dtype dtype, gts_error *err)
{
    if (ndim < 0 || ndim > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [0, %d]", ndim, GTS_MAX_NDIM);
    if (!spec || (ndim > 0 && !shape))
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", spec ? "shape" : "spec");
    /* Only the first ndim entries of the arrays are ever read, and those of
     * dims, layout and aligned_index only when their has_ flag is set:
     * setting the rest would cost more than the small allocations this
     * serves. The halo is zeroed whole, as spec.h promises: DLPack import
     * options ignore their ndim and use the tensor's. */
    spec->ndim = ndim;
    spec->dtype = dtype;
    spec->nsub = 0;
    spec->preset = NULL;
    spec->like = NULL;
    spec->layout_fn = NULL;
    spec->layout_ctx = NULL;
    spec->has_dims = spec->has_layout = spec->has_aligned_index = false;
    spec->has_halo = spec->has_device = false;
    spec->alignment_size = 0;
    spec->alignment = 0;
    spec->device = GTS_DEVICE_CPU;
    spec->managed = GTS_MANAGED_GT4PY;
    memset(spec->halo, 0, sizeof spec->halo);
    if (ndim > 0) /* a 0-d spec may pass no shape: memcpy must not see NULL */
        memcpy(spec->shape, shape, (size_t)ndim * sizeof *shape);
    return GTS_OK;
}

/* The scalar fields as one block (all that precedes `shape`), then the
 * first ndim entries of each array: a spec is 3 KiB, and copying one whole
 * cost a third of a small allocation. */
#define COPY_DIM_FIELD(type, name, comment) memcpy(dst->name, src->name, n * sizeof *dst->name);

void gts_storage_spec_copy(gts_storage_spec *dst, const gts_storage_spec *src)
{
    size_t n = src->ndim >= 0 && src->ndim <= GTS_MAX_NDIM ? (size_t)src->ndim : 0;
    memcpy(dst, src, offsetof(gts_storage_spec, shape));
    GTS_SPEC_DIM_FIELDS(COPY_DIM_FIELD)
}

void gts_template_from_storage(const gts_storage *storage, bool placement, gts_template *out)
{
    *out = (gts_template){
        .ndim = storage->ndim,
        .shape = storage->shape,
        .strides = storage->strides,
        .itemsize = storage->dtype.itemsize,
        .layout = storage->layout,
        .dims = storage->dims,
        .halo = placement ? storage->halo : NULL,
        .aligned_index = placement ? storage->aligned_index : NULL,
        .alignment_size = placement ? storage->alignment_size : 0,
        .has_device = true,
        .device = gts_buffer_device_kind(storage->buffer),
    };
}

gts_device gts_storage_spec_device(const gts_storage_spec *spec)
{
    if (spec->has_device)
        return spec->device;
    if (spec->preset)
        return spec->preset->device;
    return spec->like && spec->like->has_device ? spec->like->device : GTS_DEVICE_CPU;
}

/* ---- dims and layout -------------------------------------------------------- */

/* Numbers the GTS_DIM_NEXT entries on from the largest label given. */
static void number_next_dims(int n, gts_dim *dims)
{
    gts_dim next = 0;
    for (int d = 0; d < n; ++d)
        if (dims[d] != GTS_DIM_NEXT && dims[d] >= next && dims[d] <= GTS_MAX_DATA_DIM)
            next = dims[d] + 1;
    for (int d = 0; d < n; ++d)
        if (dims[d] == GTS_DIM_NEXT)
            dims[d] = next++;
}

/* The given dims, else the template's, else the fallback; into `dims`. */
static int spec_dims(const gts_storage_spec *spec, gts_dim *dims, gts_error *err)
{
    int n = spec->ndim, nlabelled = n - spec->nsub;
    const gts_template *like = spec->like;
    if (spec->has_dims) {
        memmove(dims, spec->dims, (size_t)n * sizeof *dims);
    } else if (like && like->dims) {
        nlabelled = like->ndim;
        memcpy(dims, like->dims, (size_t)nlabelled * sizeof *dims);
    } else {
        int rc = gts_dims_default(nlabelled, dims, err);
        if (rc)
            return rc;
    }
    if (!spec->has_dims)
        for (int d = nlabelled; d < n; ++d)
            dims[d] = GTS_DIM_NEXT;
    number_next_dims(n, dims);
    return gts_dims_check(n, dims, err);
}

static int resolve_dims(gts_storage_spec *spec, gts_error *err)
{
    return spec_dims(spec, spec->dims, err);
}

int gts_storage_spec_dims(const gts_storage_spec *spec, gts_dim *dims, gts_error *err)
{
    if (!spec || !dims)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", spec ? "dims" : "spec");
    if (spec->ndim < 0 || spec->ndim > GTS_MAX_NDIM || spec->nsub < 0 || spec->nsub > spec->ndim ||
        (spec->like && (spec->like->ndim < 0 || spec->like->ndim > spec->ndim)))
        return gts_error_set(err, GTS_EINVAL, "spec: ndim %d, nsub %d out of range", spec->ndim,
                             spec->nsub);
    return spec_dims(spec, dims, err);
}

/* Ranks the GTS_LAYOUT_OUTER entries outermost in index order; the ranks
 * given, which must be a permutation of their own, move inwards. */
static int complete_layout(int n, int *layout, gts_error *err)
{
    int ranked[GTS_MAX_NDIM], m = 0;
    for (int d = 0; d < n; ++d)
        if (layout[d] != GTS_LAYOUT_OUTER)
            ranked[m++] = layout[d];
    int rc = gts_layout_check(m, ranked, err);
    for (int d = 0, outer = 0; !rc && d < n; ++d)
        layout[d] = layout[d] == GTS_LAYOUT_OUTER ? outer++ : layout[d] + (n - m);
    return rc;
}

/* The template's layout: its own, else the one its strides show; dims it
 * lacks outermost. */
static bool template_has_layout(const gts_template *like)
{
    return like && (like->layout || (like->shape && like->strides));
}

static int template_layout(const gts_template *like, int n, int *layout, gts_error *err)
{
    if (like->layout)
        memcpy(layout, like->layout, (size_t)like->ndim * sizeof *layout);
    else
        gts_layout_from_strides(like->ndim, like->shape, like->strides, like->itemsize, layout);
    for (int d = like->ndim; d < n; ++d)
        layout[d] = GTS_LAYOUT_OUTER;
    return complete_layout(n, layout, err);
}

static int resolve_layout(gts_storage_spec *spec, gts__layout_source *source, gts_error *err)
{
    int n = spec->ndim, rc;
    if (spec->has_layout) {
        *source = GTS__LAYOUT_GIVEN;
        return complete_layout(n, spec->layout, err);
    }
    if (spec->layout_fn) {
        *source = GTS__LAYOUT_GIVEN;
        rc = gts__layout_call(spec->layout_fn, spec->layout_ctx, "the layout function given",
                              n, spec->dims, spec->layout, err);
        return rc ? rc : complete_layout(n, spec->layout, err);
    }
    if (spec->preset) {
        *source = GTS__LAYOUT_PRESET;
        return gts_preset_layout(spec->preset, n, spec->dims, spec->layout, err);
    }
    if (template_has_layout(spec->like)) {
        *source = GTS__LAYOUT_TEMPLATE;
        return template_layout(spec->like, n, spec->layout, err);
    }
    *source = GTS__LAYOUT_FALLBACK;
    gts_layout_c(n, spec->layout);
    return GTS_OK;
}

/* ---- placement: halo, aligned point, alignment ------------------------------- */

int gts__halo_check(int ndim, const int64_t *shape, const gts_halo *halo, gts_error *err)
{
    for (int d = 0; d < ndim; ++d) {
        int64_t lo = halo[d].lower, hi = halo[d].upper;
        if (lo < 0 || hi < 0)
            return gts_error_set(err, GTS_EINVAL, "halo: negative entry (%lld, %lld) at position %d",
                                 (long long)lo, (long long)hi, d);
        if (lo > shape[d] || hi > shape[d] - lo)
            return gts_error_set(err, GTS_EINVAL,
                                 "halo: (%lld, %lld) at position %d is larger than the extent %lld",
                                 (long long)lo, (long long)hi, d, (long long)shape[d]);
    }
    return GTS_OK;
}

/* The halo to check: the one given or the spec's own, else the template's
 * for its dims and none for the rest (in `scratch`). */
static const gts_halo *resolve_halo(const gts_storage_spec *spec, gts_halo *scratch)
{
    const gts_template *like = spec->like;
    if (spec->has_halo || !like || !like->halo || like->ndim > spec->ndim)
        return spec->halo;
    memcpy(scratch, like->halo, (size_t)like->ndim * sizeof *scratch);
    for (int d = like->ndim; d < spec->ndim; ++d)
        scratch[d] = (gts_halo){0, 0};
    return scratch;
}

static int64_t clamp(int64_t value, int64_t low, int64_t high)
{
    return value < low ? low : value > high ? high : value;
}

/* The template's aligned point for its dims and 0 for the rest, else the
 * first point past the lower halo (within the shape). */
static void resolve_aligned_index(gts_storage_spec *spec, const gts_halo *halo)
{
    const gts_template *like = spec->like;
    int n = spec->ndim;
    if (like && like->aligned_index && like->ndim <= n) {
        memcpy(spec->aligned_index, like->aligned_index, (size_t)like->ndim * sizeof(int64_t));
        for (int d = like->ndim; d < n; ++d)
            spec->aligned_index[d] = 0;
        return;
    }
    for (int d = 0; d < n; ++d)
        spec->aligned_index[d] = spec->shape[d] ? clamp(halo[d].lower, 0, spec->shape[d] - 1) : 0;
}

/* An alignment in elements (alignment= or the preset's, named by `what`)
 * in bytes: the one rule for both, elements times the itemsize. */
static int alignment_bytes(int64_t elements, int64_t itemsize, const char *what, int64_t *bytes,
                           gts_error *err)
{
    if (elements < 1)
        return gts_error_set(err, GTS_EINVAL, "%s: %lld elements is not positive", what,
                             (long long)elements);
    if (gts_mul_overflow(elements, itemsize, bytes))
        return gts_error_set(err, GTS_EOVERFLOW, "alignment_size: %s (%lld elements) overflows",
                             what, (long long)elements);
    return GTS_OK;
}

/* Given (in bytes, or in elements times the itemsize; both: they agree),
 * else the preset's times the itemsize, else the template's where the
 * itemsize still suits it (a multiple or a divisor of it), else 1. */
static int resolve_alignment(const gts_storage_spec *spec, int64_t *alignment, gts_error *err)
{
    int64_t itemsize = spec->dtype.itemsize, like = spec->like ? spec->like->alignment_size : 0;
    *alignment = spec->alignment_size;
    if (*alignment < 0)
        return gts_error_set(err, GTS_EINVAL, "alignment_size: %lld bytes is negative",
                             (long long)*alignment);
    if (spec->alignment) {
        int64_t bytes = 0;
        int rc = alignment_bytes(spec->alignment, itemsize, "alignment", &bytes, err);
        if (rc)
            return rc;
        if (*alignment > 0 && *alignment != bytes)
            return gts_error_set(err, GTS_EINVAL,
                                 "alignment_size=%lld and alignment=%lld disagree: %lld elements "
                                 "of %lld bytes are %lld bytes",
                                 (long long)*alignment, (long long)spec->alignment,
                                 (long long)spec->alignment, (long long)itemsize,
                                 (long long)bytes);
        *alignment = bytes;
        return GTS_OK;
    }
    if (*alignment > 0)
        return GTS_OK;
    *alignment = 1;
    if (spec->preset)
        return alignment_bytes(spec->preset->alignment, itemsize, "the preset's alignment",
                               alignment, err);
    if (gts__alignment_suits(like, itemsize))
        *alignment = like;
    return GTS_OK;
}

/* ---- resolution ---------------------------------------------------------------- */

static int check_scalars(gts_storage_spec *spec, gts_error *err)
{
    int rc = gts_dtype_make(spec->dtype.kind, spec->dtype.itemsize, &spec->dtype, err);
    if (rc)
        return rc;
    int n = spec->ndim;
    if (n < 0 || n > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [0, %d]", n, GTS_MAX_NDIM);
    if (spec->managed != GTS_MANAGED_GT4PY && spec->managed != GTS_MANAGED_NONE &&
        spec->managed != GTS_MANAGED_CUDA)
        return gts_error_set(err, GTS_EINVAL, "managed: %d is no gts_managed", (int)spec->managed);
    /* the device kind it resolves to, wherever that comes from (the spec,
     * a preset or a template filled in by hand) */
    const char *source = spec->has_device ? "device"
                         : spec->preset   ? "preset: device"
                                          : "like: device";
    if ((rc = gts__device_kind_check(gts_storage_spec_device(spec), source, err)))
        return rc;
    if (spec->nsub < 0 || spec->nsub > n)
        return gts_error_set(err, GTS_EINVAL, "nsub: %d is outside [0, ndim=%d]", spec->nsub, n);
    if (spec->like && (spec->like->ndim < 0 || spec->like->ndim > n))
        return gts_error_set(err, GTS_EINVAL,
                             "like: the template's %d dimensions are more than the spec's %d",
                             spec->like->ndim, n);
    for (int d = 0; d < n; ++d)
        if (spec->shape[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "shape: negative extent %lld at position %d",
                                 (long long)spec->shape[d], d);
    return GTS_OK;
}

int gts__spec_resolve_parameters(gts_storage_spec *spec, gts__resolution *out, gts_error *err)
{
    int rc = check_scalars(spec, err);
    const gts_halo *halo = rc ? NULL : resolve_halo(spec, out->halo);
    if (rc || (rc = gts__halo_check(spec->ndim, spec->shape, halo, err)) ||
        (rc = resolve_dims(spec, err)) || (rc = resolve_layout(spec, &out->layout_source, err)) ||
        (rc = resolve_alignment(spec, &out->alignment, err)))
        return rc;
    if (!spec->has_aligned_index)
        resolve_aligned_index(spec, halo);
    if (!spec->has_device)
        spec->device = gts_storage_spec_device(spec);
    out->halo_from_template = halo != spec->halo;
    return GTS_OK;
}

void gts__spec_commit(gts_storage_spec *spec, const gts__resolution *resolution)
{
    if (resolution->halo_from_template)
        memcpy(spec->halo, resolution->halo, (size_t)spec->ndim * sizeof *spec->halo);
    spec->has_dims = spec->has_layout = spec->has_aligned_index = true;
    spec->has_halo = spec->has_device = true;
    spec->alignment_size = resolution->alignment;
    spec->alignment = 0;
    spec->like = NULL;
    spec->layout_fn = NULL;
    spec->layout_ctx = NULL;
}

int gts_storage_spec_resolve(gts_storage_spec *spec, gts_geometry *geometry, gts_error *err)
{
    gts_geometry local;
    gts__resolution resolution;
    int rc = gts__spec_resolve_parameters(spec, &resolution, err);
    if (!rc)
        rc = gts_geometry_init(geometry ? geometry : &local, spec->ndim, spec->shape,
                               spec->layout, spec->dtype.itemsize, resolution.alignment,
                               spec->aligned_index, err);
    if (!rc)
        gts__spec_commit(spec, &resolution);
    return rc;
}
