/* Field handles of the Fortran module: a storage on the heap, owning one
 * reference to its buffer. Allocation (Fortran order unless a preset says
 * otherwise), views (a new handle on the same memory, then domain and
 * slices in Fortran indices) and the shape a Fortran caller reads. */
#include <stdlib.h>

#include "gtsf.h"

static int new_handle(gts_storage **out, gts_error *err)
{
    *out = malloc(sizeof **out);
    return *out ? GTS_OK : gts_error_set(err, GTS_ENOMEM, "out of memory for a field handle");
}

/* Fortran order, first index contiguous: the layout a Fortran model's
 * arrays have, where no preset chooses one. */
static void fortran_order(gts_storage_spec *spec)
{
    spec->has_layout = true;
    for (int d = 0; d < spec->ndim; ++d)
        spec->layout[d] = spec->ndim - 1 - d;
}

/* Allocates a storage of the pointer's type and rank, `shape` points
 * including the halo, and points `pointer` at it (gtsf_set_pointer). */
int gtsf_allocate(CFI_cdesc_t *pointer, const int64_t *shape, int32_t nshape,
                  const gtsf_options *options, gts_storage **out, gts_error *err)
{
    pointer->base_addr = NULL; /* disassociated unless it succeeds */
    gts_dtype dtype;
    int rc = gtsf_dtype_of(pointer, &dtype, err);
    if (rc)
        return rc;
    if (nshape != pointer->rank)
        return gts_error_set(err, GTS_EINVAL, "shape: %d entries for a pointer of rank %d",
                             (int)nshape, (int)pointer->rank);
    gts_storage_spec spec;
    gts_preset preset;
    bool has_preset;
    rc = gtsf_spec_make(options, nshape, shape, dtype, &spec, &preset, &has_preset, err);
    if (rc)
        return rc;
    if (!has_preset)
        fortran_order(&spec);
    gts_storage *field;
    rc = new_handle(&field, err);
    if (!rc) {
        rc = gts_storage_create_in_place(&spec, GTS_ALLOC_ZERO, field, err);
        if (rc)
            free(field);
    }
    if (has_preset)
        gts_preset_release(&preset);
    if (rc)
        return rc;
    /* a GPU field without a host side has no Fortran pointer: nullified */
    if (gts_storage_data(field) || gts_storage_size(field) == 0)
        rc = gtsf_set_pointer(field, pointer, err);
    else
        pointer->base_addr = NULL;
    if (rc) {
        gtsf_release(field);
        return rc;
    }
    *out = field;
    return GTS_OK;
}

void gtsf_release(gts_storage *field)
{
    if (field) {
        gts_storage_release(field);
        free(field);
    }
}

int gtsf_view(const gts_storage *field, gts_storage **out, gts_error *err)
{
    int rc = new_handle(out, err);
    if (!rc)
        gts_storage_view(field, *out);
    return rc;
}

int gtsf_domain(gts_storage *view, gts_error *err)
{
    return gts_storage_domain(view, err);
}

/* Keeps first, first + step, ... up to last of dimension `dim` (from 1),
 * in the view's Fortran indices (1 - lower halo upwards), as the section
 * a(first:last:step) does. */
int gtsf_slice(gts_storage *view, int32_t dim, int64_t first, int64_t last, int64_t step,
               gts_error *err)
{
    if (dim < 1 || dim > view->ndim)
        return gts_error_set(err, GTS_EBOUNDS, "dim: %d for a field of %d dimensions", (int)dim,
                             view->ndim);
    if (step == 0)
        return gts_error_set(err, GTS_EINVAL, "step: 0");
    int64_t lower_bound = 1 - view->halo[dim - 1].lower;
    /* Fortran's count of a section, without overflow: 0 when last lies
     * before first in the direction of step. */
    int64_t count = 0;
    if ((step > 0 && last >= first) || (step < 0 && last <= first)) {
        uint64_t span = step > 0 ? (uint64_t)last - (uint64_t)first
                                 : (uint64_t)first - (uint64_t)last;
        uint64_t stride = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
        count = (int64_t)(span / stride) + 1;
    }
    if (count > 0 && (first < lower_bound || first - lower_bound >= view->shape[dim - 1]))
        return gts_error_set(err, GTS_EBOUNDS, "first: %lld outside %lld:%lld of dimension %d",
                             (long long)first, (long long)lower_bound,
                             (long long)(lower_bound + view->shape[dim - 1] - 1), (int)dim);
    return gts_storage_slice(view, dim - 1, count > 0 ? first - lower_bound : 0, step, count,
                             err);
}

/* The shape of `field` (including the halo) and its halo, for Fortran's
 * lbound/ubound-like queries. */
int gtsf_shape(const gts_storage *field, int64_t *shape, int64_t *halo_lower,
               int64_t *halo_upper, int32_t *ndim, gts_error *err)
{
    if (!field)
        return gts_error_set(err, GTS_EINVAL, "field: not allocated");
    *ndim = field->ndim;
    for (int d = 0; d < field->ndim && d < CFI_MAX_RANK; ++d) {
        shape[d] = field->shape[d];
        halo_lower[d] = field->halo[d].lower;
        halo_upper[d] = field->halo[d].upper;
    }
    return GTS_OK;
}

/* Points `pointer` at all of `field`, or (domain nonzero) at its domain,
 * whose first point is then index 1 in every dimension. */
int gtsf_pointer(const gts_storage *field, CFI_cdesc_t *pointer, int32_t domain, gts_error *err)
{
    pointer->base_addr = NULL; /* disassociated unless it succeeds */
    if (!field)
        return gts_error_set(err, GTS_EINVAL, "field: not allocated (no gts_allocate, gts_wrap "
                                              "or gts_view made it, or it was released)");
    if (!domain)
        return gtsf_set_pointer(field, pointer, err);
    gts_storage view;
    gts_storage_view(field, &view);
    int rc = gts_storage_domain(&view, err);
    if (!rc)
        rc = gtsf_set_pointer(&view, pointer, err);
    /* the memory stays: `field` holds its buffer */
    gts_storage_release(&view);
    return rc;
}
