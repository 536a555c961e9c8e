/* The optional arguments of the Fortran module's allocation and wrap
 * (gtsf_options) written into a storage spec, which libgtstore resolves as
 * for any other caller. Only the conversions are Fortran's: names, counts,
 * and aligned indices from Fortran's bounds convention. */
#include <string.h>

#include "gtsf.h"

static int check_count(const char *name, int32_t count, int ndim, gts_error *err)
{
    if (count != 0 && count != ndim)
        return gts_error_set(err, GTS_EINVAL, "%s: %d entries for %d dimensions", name,
                             (int)count, ndim);
    return GTS_OK;
}

static int apply_halo(const gtsf_options *o, gts_storage_spec *spec, gts_error *err)
{
    int rc = check_count("halo", o->nhalo_lower, spec->ndim, err);
    if (!rc)
        rc = check_count("halo_upper", o->nhalo_upper, spec->ndim, err);
    if (rc || o->nhalo_lower == 0)
        return rc;
    /* halo alone: both sides; halo_upper: the upper side differs */
    const int64_t *upper = o->nhalo_upper ? o->halo_upper : o->halo_lower;
    spec->has_halo = true;
    for (int d = 0; d < spec->ndim; ++d)
        spec->halo[d] = (gts_halo){o->halo_lower[d], upper[d]};
    return GTS_OK;
}

/* Fortran's aligned index counts from 1 at the first domain point: index
 * 0 of the storage is 1 - the lower halo. An index outside the field is
 * said in those terms (the caller's indices and dimensions from 1), which
 * the C index the resolution would report is not. */
static int apply_aligned_index(const gtsf_options *o, gts_storage_spec *spec, gts_error *err)
{
    int rc = check_count("aligned_index", o->naligned_index, spec->ndim, err);
    if (rc || o->naligned_index == 0)
        return rc;
    spec->has_aligned_index = true;
    for (int d = 0; d < spec->ndim; ++d) {
        int64_t lower = spec->has_halo ? spec->halo[d].lower : 0, given = o->aligned_index[d];
        if (lower < 0 || lower > spec->shape[d]) {
            spec->aligned_index[d] = 0; /* the resolution refuses the halo or shape itself */
            continue;
        }
        int64_t first = 1 - lower, last = spec->shape[d] - lower; /* the field's bounds */
        if ((given < first || given > last) && !(spec->shape[d] == 0 && given == first))
            return gts_error_set(err, GTS_EINVAL,
                                 "aligned_index: %lld in dimension %d is outside the field's "
                                 "bounds %lld:%lld",
                                 (long long)given, d + 1, (long long)first, (long long)last);
        spec->aligned_index[d] = given - first;
    }
    return GTS_OK;
}

/* A spec of `shape` and `dtype` with the options written into it. A
 * preset named is looked up into `preset` (then *has_preset, and the
 * caller releases it after the spec has served). */
int gtsf_spec_make(const gtsf_options *o, int ndim, const int64_t *shape, gts_dtype dtype,
                   gts_storage_spec *spec, gts_preset *preset, bool *has_preset,
                   gts_error *err)
{
    *has_preset = false;
    int rc = gts_storage_spec_init(spec, ndim, shape, dtype, err);
    if (rc)
        return rc;
    if (o->invalid[0])
        return gts_error_set(err, GTS_EINVAL, "%.*s", (int)sizeof o->invalid, o->invalid);
    if (memchr(o->preset, 0, sizeof o->preset) == NULL || memchr(o->dims, 0, sizeof o->dims) == NULL)
        return gts_error_set(err, GTS_EINVAL, "preset or dims: longer than %d characters",
                             GTSF_NAME_SIZE - 1);
    if (o->dims[0]) {
        int ndim;
        rc = gts_dims_parse(o->dims, spec->dims, &ndim, err);
        if (!rc && ndim != spec->ndim)
            rc = gts_error_set(err, GTS_EINVAL, "dims: \"%s\" has %d labels for %d dimensions",
                               o->dims, ndim, spec->ndim);
        spec->has_dims = true;
    }
    if (!rc)
        rc = apply_halo(o, spec, err);
    if (!rc)
        rc = apply_aligned_index(o, spec, err);
    if (!rc && o->alignment != 0)
        spec->alignment_size = o->alignment; /* checked by the resolution */
    if (!rc && o->device != -1) {
        if (o->device != GTS_DEVICE_CPU && o->device != GTS_DEVICE_GPU)
            return gts_error_set(err, GTS_EINVAL,
                                 "device: %d is neither GTS_CPU (%d) nor GTS_GPU (%d)",
                                 (int)o->device, GTS_DEVICE_CPU, GTS_DEVICE_GPU);
        spec->has_device = true;
        spec->device = (gts_device)o->device;
    }
    if (!rc && o->preset[0]) {
        rc = gts_preset_lookup(o->preset, preset, err);
        if (!rc) {
            spec->preset = preset;
            *has_preset = true;
        }
    }
    return rc;
}
