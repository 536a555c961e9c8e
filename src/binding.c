/* Binding fields to a stencil (gtstore/binding.h): origins, the domain and
 * every check of one call, in the kernel's order of dimensions. */
#include "gtstore/binding.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gtstore/geometry.h"
#include "geometry_private.h"
#include "preset_private.h"

static bool is_cartesian(gts_dim dim)
{
    return dim < 0;
}

void gts_dims_canonical(int ndim, const gts_dim *dims, int *order)
{
    /* I, J, K are -3, -2, -1 and data dimensions their numbers: the
     * canonical order is increasing label value (insertion sort: ndim is
     * small and this runs on every call). */
    for (int i = 0; i < ndim; ++i) {
        int j = i;
        for (; j > 0 && dims[order[j - 1]] > dims[i]; --j)
            order[j] = order[j - 1];
        order[j] = i;
    }
}

/* The labels as text ("IJK", "IJ0"), for messages. */
static void dims_text(int ndim, const gts_dim *dims, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (int d = 0; d < ndim && used + 1 < size; ++d) {
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[d], label);
        int n = snprintf(text + used, size - used, "%s%s", d && !is_cartesian(dims[d]) ? "," : "",
                         label);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* ---- the signature ------------------------------------------------------ */

static int check_field_spec(const gts_field_spec *f, gts_error *err)
{
    gts_dtype checked;
    if (!f->name || !f->name[0])
        return gts_error_set(err, GTS_EINVAL, "signature: a field has no name");
    if (gts_dtype_make(f->dtype.kind, f->dtype.itemsize, &checked, NULL) != GTS_OK)
        return gts_error_set(err, GTS_ETYPE, "%s: unsupported dtype (kind '%c', %d bytes)",
                             f->name, f->dtype.kind ? f->dtype.kind : '?', f->dtype.itemsize);
    if (f->ndim < 0 || f->ndim > GTS_BIND_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "%s: %d dimensions, at most %d are supported",
                             f->name, f->ndim, GTS_BIND_MAX_NDIM);
    gts_error inner;
    if (gts_dims_check(f->ndim, f->dims, &inner) != GTS_OK)
        return gts_error_set(err, inner.code, "%s: dims: %s", f->name, inner.message);
    int order[GTS_BIND_MAX_NDIM];
    gts_dims_canonical(f->ndim, f->dims, order);
    for (int c = 0; c < f->ndim; ++c) {
        gts_halo e = f->extent[c];
        gts_dim dim = f->dims[order[c]];
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dim, label);
        if (e.lower < 0 || e.upper < 0 || (!is_cartesian(dim) && (e.lower || e.upper)))
            return gts_error_set(err, GTS_EINVAL,
                                 "%s: extent (%lld, %lld) in dimension %s: extents are >= 0, and "
                                 "0 in data dimensions",
                                 f->name, (long long)e.lower, (long long)e.upper, label);
    }
    if (f->has_layout && gts_layout_check(f->ndim, f->layout, &inner) != GTS_OK)
        return gts_error_set(err, inner.code, "%s: layout: %s", f->name, inner.message);
    /* 0: none; else the rule a storage's alignment_size follows */
    if (f->alignment != 0 && gts__alignment_check(f->alignment, checked.itemsize, &inner) != GTS_OK)
        return gts_error_set(err, inner.code, "%s: alignment: %s", f->name, inner.message);
    return GTS_OK;
}

int gts_signature_check(const gts_signature *sig, gts_error *err)
{
    if (!sig || sig->nfields < 0 || (sig->nfields > 0 && !sig->fields))
        return gts_error_set(err, GTS_EINVAL, "signature: no field list");
    int rc = gts__device_kind_check(sig->device, "signature: device", err);
    if (rc)
        return rc;
    for (int i = 0; i < sig->nfields; ++i) {
        rc = check_field_spec(&sig->fields[i], err);
        if (rc)
            return rc;
        for (int j = 0; j < i; ++j)
            if (strcmp(sig->fields[i].name, sig->fields[j].name) == 0)
                return gts_error_set(err, GTS_EINVAL, "signature: field '%s' appears twice",
                                     sig->fields[i].name);
    }
    return GTS_OK;
}

/* ---- one field ------------------------------------------------------------ */

/* Labels, dtype, device, write access and shape: what does not depend on
 * the other fields. Fills the canonical order of `b`. */
static int bind_description(const gts_signature *sig, const gts_field_spec *spec,
                            const gts_field_desc *desc, gts_bound_field *b, gts_error *err)
{
    const char *name = spec->name;
    char want[64], have[64];
    if (desc->ndim != spec->ndim) {
        dims_text(spec->ndim, spec->dims, want, sizeof want);
        return gts_error_set(err, GTS_EINVAL,
                             "%s: %d dimensions, the signature expects %d (%s)", name, desc->ndim,
                             spec->ndim, want);
    }
    if (desc->ndim > 0 && (!desc->shape || !desc->strides))
        return gts_error_set(err, GTS_EINVAL, "%s: no shape or strides", name);
    const gts_dim *dims = desc->dims ? desc->dims : spec->dims;
    if (desc->dims) {
        gts_error inner;
        if (gts_dims_check(desc->ndim, desc->dims, &inner) != GTS_OK)
            return gts_error_set(err, GTS_EINVAL, "%s: dims: %s", name, inner.message);
        for (int d = 0; d < desc->ndim; ++d) {
            bool known = false;
            for (int e = 0; e < spec->ndim && !known; ++e)
                known = spec->dims[e] == dims[d];
            if (!known) {
                dims_text(spec->ndim, spec->dims, want, sizeof want);
                dims_text(desc->ndim, dims, have, sizeof have);
                return gts_error_set(err, GTS_EINVAL,
                                     "%s: dims %s do not match the signature's %s", name, have,
                                     want);
            }
        }
    }
    if (!gts_dtype_equal(desc->dtype, spec->dtype))
        return gts_error_set(err, GTS_ETYPE, "%s: dtype %s, the signature expects %s", name,
                             gts_dtype_name(desc->dtype), gts_dtype_name(spec->dtype));
    if (desc->device != sig->device)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: the field's memory is on the %s, the stencil computes on the %s",
                             name, desc->device == GTS_DEVICE_GPU ? "gpu" : "cpu",
                             sig->device == GTS_DEVICE_GPU ? "gpu" : "cpu");
    if (spec->written && desc->readonly)
        return gts_error_set(err, GTS_EREADONLY, "%s: the stencil writes it, but it is read-only",
                             name);
    b->ndim = desc->ndim;
    gts_dims_canonical(desc->ndim, dims, b->axis);
    for (int c = 0; c < desc->ndim; ++c) {
        int d = b->axis[c];
        b->dims[c] = dims[d];
        b->shape[c] = desc->shape[d];
        b->strides[c] = desc->strides[d];
        if (b->shape[c] < 0)
            return gts_error_set(err, GTS_EINVAL, "%s: shape[%d] = %lld is negative", name, d,
                                 (long long)b->shape[c]);
        if (desc->halo && (desc->halo[d].lower < 0 || desc->halo[d].upper < 0 ||
                           desc->halo[d].lower > b->shape[c] - desc->halo[d].upper)) {
            char label[GTS_DIM_TEXT_SIZE];
            gts_dim_format(b->dims[c], label);
            return gts_error_set(err, GTS_EINVAL,
                                 "%s: halo (%lld, %lld) in dimension %s: each side >= 0, together "
                                 "at most the extent %lld",
                                 name, (long long)desc->halo[d].lower,
                                 (long long)desc->halo[d].upper, label, (long long)b->shape[c]);
        }
    }
    int64_t low, high;
    gts_error inner;
    if (gts_strided_extent(desc->ndim, desc->shape, desc->strides, desc->dtype.itemsize, &low,
                           &high, &inner) != GTS_OK)
        return gts_error_set(err, inner.code, "%s: %s", name, inner.message);
    if (!desc->data && high > low)
        return gts_error_set(err, GTS_EINVAL, "%s: no memory (a NULL data pointer)", name);
    return GTS_OK;
}

/* The origin of canonical dimension `c`, by the precedence of binding.h;
 * `source` names where it came from, for messages. */
static int64_t field_origin(const gts_bind_args *args, int field, const gts_field_desc *desc,
                            const gts_bound_field *b, int c, const char **source)
{
    if (args && args->origins && args->origins[field]) {
        *source = "origin";
        return args->origins[field][c];
    }
    if (args && args->origin_all) {
        *source = "origin['_all_']";
        return is_cartesian(b->dims[c]) ? args->origin_all[gts_domain_axis(b->dims[c])] : 0;
    }
    if (desc->origin) {
        *source = "__gt_origin__";
        return desc->origin[b->axis[c]];
    }
    *source = "the lower halo";
    return desc->halo ? desc->halo[b->axis[c]].lower : 0;
}

static int bind_origin(const gts_bind_args *args, int field, const gts_field_spec *spec,
                       const gts_field_desc *desc, gts_bound_field *b, gts_error *err)
{
    for (int c = 0; c < b->ndim; ++c) {
        const char *source;
        int64_t o = field_origin(args, field, desc, b, c, &source);
        if (o < 0 || o > b->shape[c]) {
            char label[GTS_DIM_TEXT_SIZE];
            gts_dim_format(b->dims[c], label);
            return gts_error_set(err, GTS_EINVAL,
                                 "%s: origin %lld in dimension %s (from %s) is outside the "
                                 "field's extent %lld",
                                 spec->name, (long long)o, label, source,
                                 (long long)b->shape[c]);
        }
        b->origin[c] = o;
    }
    return GTS_OK;
}

/* ---- the domain ------------------------------------------------------------ */

/* Which field and number bounded the inferred domain, for the message when
 * it leaves no points. */
typedef struct domain_bound {
    int field;
    int64_t shape, origin, upper;
    bool halo; /* the upper margin is the field's upper halo (else the stencil's extent) */
} domain_bound;

/* Each field allows shape - origin - its upper margin per axis: the larger
 * of its upper halo (the halo is no part of the domain) and the stencil's
 * upper extent (the points the stencil reads past the domain must exist).
 * The domain is the smallest per axis, so that an inferred domain always
 * passes check_bounds. */
static void infer_domain(const gts_signature *sig, const gts_field_desc *fields,
                         const gts_bound_field *bound, int64_t domain[3], domain_bound why[3])
{
    for (int a = 0; a < 3; ++a) {
        domain[a] = INT64_MAX;
        why[a].field = -1;
    }
    for (int f = 0; f < sig->nfields; ++f) {
        const gts_bound_field *b = &bound[f];
        for (int c = 0; c < b->ndim && is_cartesian(b->dims[c]); ++c) {
            int64_t halo = fields[f].halo ? fields[f].halo[b->axis[c]].upper : 0;
            int64_t extent = sig->fields[f].extent[c].upper;
            int64_t upper = halo >= extent ? halo : extent;
            /* origin <= shape and 0 <= upper <= INT64_MAX: no overflow */
            int64_t limit = b->shape[c] - b->origin[c] - upper;
            int a = gts_domain_axis(b->dims[c]);
            if (limit < domain[a]) {
                domain[a] = limit;
                why[a] = (domain_bound){f, b->shape[c], b->origin[c], upper,
                                        fields[f].halo && halo >= extent};
            }
        }
    }
    for (int a = 0; a < 3; ++a)
        if (why[a].field < 0)
            domain[a] = 1; /* no field has this axis */
}

static int bind_domain(const gts_signature *sig, const gts_field_desc *fields,
                       const gts_bind_args *args, const gts_bound_field *bound, int64_t domain[3],
                       gts_error *err)
{
    static const char axes[] = "IJK";
    if (args && args->domain) {
        for (int a = 0; a < 3; ++a) {
            domain[a] = args->domain[a];
            if (domain[a] < 1)
                return gts_error_set(err, GTS_EINVAL,
                                     "domain: %lld points in dimension %c; a domain has at least "
                                     "one point per dimension",
                                     (long long)domain[a], axes[a]);
        }
        return GTS_OK;
    }
    domain_bound why[3];
    infer_domain(sig, fields, bound, domain, why);
    for (int a = 0; a < 3; ++a)
        if (domain[a] < 1)
            return gts_error_set(
                err, GTS_EINVAL,
                "domain: the fields leave %lld points in dimension %c: field %s has extent "
                "%lld, origin %lld and %s %lld",
                (long long)domain[a], axes[a], sig->fields[why[a].field].name,
                (long long)why[a].shape, (long long)why[a].origin,
                why[a].halo ? "upper halo" : "the stencil's upper extent",
                (long long)why[a].upper);
    return GTS_OK;
}

/* origin - lower extent .. origin + domain + upper extent inside the field,
 * and the address of the origin point. */
static int check_bounds(const gts_field_spec *spec, const gts_field_desc *desc,
                        const int64_t domain[3], gts_bound_field *b, gts_error *err)
{
    int64_t offset = 0;
    char label[GTS_DIM_TEXT_SIZE]; /* formatted on the error paths only: this runs per call */
    for (int c = 0; c < b->ndim; ++c) {
        if (is_cartesian(b->dims[c])) {
            gts_halo e = spec->extent[c];
            int64_t n = domain[gts_domain_axis(b->dims[c])], end;
            if (b->origin[c] < e.lower)
                return gts_dim_format(b->dims[c], label), gts_error_set(err, GTS_EINVAL,
                                     "%s: dimension %s: origin %lld - lower extent %lld = %lld is "
                                     "before the field's start (0)",
                                     spec->name, label, (long long)b->origin[c],
                                     (long long)e.lower, (long long)(b->origin[c] - e.lower));
            if (gts_add_overflow(b->origin[c], n, &end) || gts_add_overflow(end, e.upper, &end))
                return gts_dim_format(b->dims[c], label), gts_error_set(err, GTS_EOVERFLOW,
                                     "%s: dimension %s: origin + domain + extent overflows",
                                     spec->name, label);
            if (end > b->shape[c])
                return gts_dim_format(b->dims[c], label), gts_error_set(err, GTS_EINVAL,
                                     "%s: dimension %s: origin %lld + domain %lld + upper extent "
                                     "%lld = %lld exceeds the field's extent %lld",
                                     spec->name, label, (long long)b->origin[c], (long long)n,
                                     (long long)e.upper, (long long)end, (long long)b->shape[c]);
        }
        int64_t step;
        /* bind_description checked that the field's bytes fit in 64 bits */
        if (gts_mul_overflow(b->origin[c], b->strides[c], &step) ||
            gts_add_overflow(offset, step, &offset))
            return gts_error_set(err, GTS_EOVERFLOW, "%s: the origin's offset overflows",
                                 spec->name);
    }
    b->origin_data = (char *)((uintptr_t)desc->data + (uintptr_t)offset);
    return GTS_OK;
}

/* ---- expectations: layout and alignment ------------------------------------- */

static void add_warning(gts_binding *out, int field, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_warning(gts_binding *out, int field, const char *format, ...)
{
    if (out->nwarnings < GTS_BIND_MAX_WARNINGS) {
        gts_bind_warning *w = &out->warnings[out->nwarnings];
        w->field = field;
        va_list args;
        va_start(args, format);
        vsnprintf(w->message, sizeof w->message, format, args);
        va_end(args);
    }
    ++out->nwarnings;
}

/* The labels from the largest stride to the contiguous one ("KJI"). */
static void order_text(int ndim, const gts_dim *dims, const int *layout, char *text, size_t size)
{
    gts_dim by_rank[GTS_BIND_MAX_NDIM];
    for (int d = 0; d < ndim; ++d)
        by_rank[layout[d]] = dims[d];
    dims_text(ndim, by_rank, text, size);
}

static int check_layout(const gts_field_spec *spec, const gts_field_desc *desc,
                        const gts_bound_field *b, int field, gts_binding *out, gts_error *err)
{
    if (!spec->has_layout)
        return GTS_OK;
    const gts_dim *dims = desc->dims ? desc->dims : spec->dims;
    int have[GTS_BIND_MAX_NDIM];
    gts_layout_from_strides(desc->ndim, desc->shape, desc->strides, desc->dtype.itemsize, have);
    bool same = true;
    for (int d = 0; d < desc->ndim && same; ++d)
        for (int e = 0; e < spec->ndim; ++e)
            if (spec->dims[e] == dims[d])
                same = spec->layout[e] == have[d];
    if (same)
        return GTS_OK;
    char want_text[64], have_text[64];
    order_text(spec->ndim, spec->dims, spec->layout, want_text, sizeof want_text);
    order_text(desc->ndim, dims, have, have_text, sizeof have_text);
    (void)b;
    if (spec->relies_on_layout)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: layout %s (largest stride first), the stencil relies on %s",
                             spec->name, have_text, want_text);
    add_warning(out, field, "%s: layout %s (largest stride first) differs from the annotation's %s",
                spec->name, have_text, want_text);
    return GTS_OK;
}

static int check_alignment(const gts_field_spec *spec, const gts_bound_field *b, int field,
                           gts_binding *out, gts_error *err)
{
    if (spec->alignment <= 1)
        return GTS_OK;
    uint64_t off = (uint64_t)(uintptr_t)b->origin_data % (uint64_t)spec->alignment;
    if (!off)
        return GTS_OK;
    if (spec->relies_on_layout)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: the origin point is %llu bytes off the %lld-byte alignment the "
                             "stencil relies on",
                             spec->name, (unsigned long long)off, (long long)spec->alignment);
    add_warning(out, field,
                "%s: the origin point is %llu bytes off the %lld-byte alignment of the annotation",
                spec->name, (unsigned long long)off, (long long)spec->alignment);
    return GTS_OK;
}

/* ---- the call ------------------------------------------------------------------ */

int gts_bind(const gts_signature *sig, const gts_field_desc *fields, const gts_bind_args *args,
             gts_binding *out, gts_bound_field *bound, gts_error *err)
{
    if (!sig || !out || (sig->nfields > 0 && (!fields || !bound)))
        return gts_error_set(err, GTS_EINVAL, "bind: NULL argument");
    out->nwarnings = 0;
    out->stream = NULL;
    int rc;
    for (int f = 0; f < sig->nfields; ++f) {
        const gts_field_spec *spec = &sig->fields[f];
        if ((rc = bind_description(sig, spec, &fields[f], &bound[f], err)) ||
            (rc = bind_origin(args, f, spec, &fields[f], &bound[f], err)))
            return rc;
    }
    if ((rc = bind_domain(sig, fields, args, bound, out->domain, err)))
        return rc;
    for (int f = 0; f < sig->nfields; ++f) {
        const gts_field_spec *spec = &sig->fields[f];
        if ((rc = check_bounds(spec, &fields[f], out->domain, &bound[f], err)) ||
            (rc = check_layout(spec, &fields[f], &bound[f], f, out, err)) ||
            (rc = check_alignment(spec, &bound[f], f, out, err)))
            return rc;
    }
    return GTS_OK;
}

/* ---- memory ---------------------------------------------------------------------- */

/* The bytes [low, high) a field's elements span, as addresses; false for
 * none (empty, or no memory) and true with the whole address space for a
 * span beyond 64 bits, so that it counts as overlapping. */
static bool field_bytes(const gts_field_desc *f, uintptr_t *low, uintptr_t *high)
{
    int64_t below, above;
    gts_error err;
    if (!f->data)
        return false;
    if (gts_strided_extent(f->ndim, f->shape, f->strides, f->dtype.itemsize, &below, &above,
                           &err) != GTS_OK) {
        *low = 0, *high = UINTPTR_MAX;
        return true;
    }
    if (above <= below)
        return false;
    /* on integers (a pointer moved outside its object is undefined); a
     * field that wraps past the address space spans all of it */
    *low = (uintptr_t)f->data + (uintptr_t)below;
    *high = (uintptr_t)f->data + (uintptr_t)above;
    if (*high < *low)
        *low = 0, *high = UINTPTR_MAX;
    return true;
}

bool gts_fields_may_share_memory(const gts_field_desc *a, const gts_field_desc *b)
{
    uintptr_t a_low, a_high, b_low, b_high;
    return field_bytes(a, &a_low, &a_high) && field_bytes(b, &b_low, &b_high) &&
           a_low < b_high && b_low < a_high;
}
