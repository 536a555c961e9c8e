/* IJK-ordered parameters of fields with fewer than three cartesian dims
 * (GDP-3's first draft; see gtstore/layout.h). */
#include "gtstore/layout.h"

#include <string.h>

bool gts_dims_take_ijk(int ndim, const gts_dim *dims)
{
    if (ndim < 0 || ndim >= 3 || (ndim > 0 && !dims))
        return false;
    /* A repeated label would pick one entry twice (and rank a layout's
     * two dims alike): no valid dims, so none that take IJK entries. */
    if (gts_dims_check(ndim, dims, NULL))
        return false;
    for (int d = 0; d < ndim; ++d)
        if (dims[d] < GTS_DIM_I || dims[d] > GTS_DIM_K)
            return false;
    return true;
}

static int check_take_ijk(int ndim, const gts_dim *dims, gts_error *err)
{
    if (ndim > 0 && !dims)
        return gts_error_set(err, GTS_EINVAL, "dims: NULL for %d dims", ndim);
    if (gts_dims_take_ijk(ndim, dims))
        return GTS_OK;
    /* Bad labels, a repeated one or ndim out of range: gts_dims_check's
     * message says which; valid dims that are no IJK field: ours. */
    int rc = gts_dims_check(ndim, dims, err);
    if (rc)
        return rc;
    return gts_error_set(err, GTS_EINVAL,
                         "dims: IJK-ordered entries are for fields of fewer than 3 dims, "
                         "each I, J or K (got %d dims)",
                         ndim);
}

int gts_ijk_select(int ndim, const gts_dim *dims, size_t size, const void *ijk, void *out,
                   gts_error *err)
{
    int rc = check_take_ijk(ndim, dims, err);
    if (rc)
        return rc;
    if (ndim > 0 && (!ijk || !out))
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", ijk ? "out" : "ijk");
    for (int d = 0; d < ndim; ++d)
        memcpy((unsigned char *)out + (size_t)d * size,
               (const unsigned char *)ijk + (size_t)(dims[d] - GTS_DIM_I) * size, size);
    return GTS_OK;
}

int gts_layout_select_ijk(int ndim, const gts_dim *dims, const int ijk[3], int *layout,
                          gts_error *err)
{
    if (!ijk || !layout)
        return gts_error_set(err, GTS_EINVAL, "layout: NULL %s", ijk ? "output" : "IJK ranks");
    int rc = gts_layout_check(3, ijk, err);
    int ranks[3];
    if (rc || (rc = gts_ijk_select(ndim, dims, sizeof *ranks, ijk, ranks, err)))
        return rc;
    /* Renumbered: a dim's rank is how many of the field's dims rank before it. */
    for (int d = 0; d < ndim; ++d) {
        layout[d] = 0;
        for (int e = 0; e < ndim; ++e)
            layout[d] += ranks[e] < ranks[d];
    }
    return GTS_OK;
}
