/* IJK-ordered parameters of fields with fewer than three cartesian dims
 * (GDP-3's first draft; see gtstore/layout.h). */
#include "gtstore/layout.h"
#include "gtstore/spec.h"

#include <string.h>

bool gts_dims_take_ijk(int ndim, const gts_dim *dims)
{
    /* 0 dims: no place for any of the three entries (GDP-3 gives them to
     * fields of 1 or 2 dims), so a 0-d field takes none */
    if (ndim < 1 || ndim >= 3 || !dims)
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
    if (ndim >= 1 && ndim < 3)
        return gts_error_set(err, GTS_EINVAL,
                             "dims: IJK-ordered entries are for fields of 1 or 2 dims, each I, "
                             "J or K (got a data dimension among the %d)",
                             ndim);
    return gts_error_set(err, GTS_EINVAL,
                         "dims: IJK-ordered entries are for fields of 1 or 2 dims, each I, J "
                         "or K (got %d dims)",
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

/* Every entry is checked, the field's and the others alike: a value that
 * would be refused for a dim of the field is a mistake in any position.
 * Only what needs no extent is checked here (the others have none); the
 * field's own are checked against their extents when the spec resolves. */

int gts_halo_select_ijk(int ndim, const gts_dim *dims, const gts_halo ijk[3], gts_halo *halo,
                        gts_error *err)
{
    if (!ijk)
        return gts_error_set(err, GTS_EINVAL, "halo: NULL IJK entries");
    for (int d = 0; d < 3; ++d)
        if (ijk[d].lower < 0 || ijk[d].upper < 0)
            return gts_error_set(err, GTS_EINVAL,
                                 "halo: negative entry (%lld, %lld) at position %d of the I, J, "
                                 "K entries",
                                 (long long)ijk[d].lower, (long long)ijk[d].upper, d);
    return gts_ijk_select(ndim, dims, sizeof *halo, ijk, halo, err);
}

int gts_index_select_ijk(int ndim, const gts_dim *dims, const char *param, const int64_t ijk[3],
                         int64_t *index, gts_error *err)
{
    if (!param)
        param = "index";
    if (!ijk)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL IJK entries", param);
    for (int d = 0; d < 3; ++d)
        if (ijk[d] < 0)
            return gts_error_set(err, GTS_EINVAL,
                                 "%s: negative entry %lld at position %d of the I, J, K entries",
                                 param, (long long)ijk[d], d);
    return gts_ijk_select(ndim, dims, sizeof *index, ijk, index, err);
}
