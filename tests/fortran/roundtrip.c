/* The C side of test_gtstore.f90's round trips through the C API: a field
 * Fortran allocated is read here with gts_storage_data and its strides (and
 * after a DLPack export and import), and
 * a storage made here is read in Fortran. The value at Fortran index
 * (i, j, k) is 10000 i + 100 j + k in both directions. */
#include <stdint.h>

#include "gtstore/gtstore.h"

static double expected(const gts_storage *s, const int64_t *index)
{
    /* Fortran's index is 1 - lower halo at the storage's index 0 */
    double f[3];
    for (int d = 0; d < 3; ++d)
        f[d] = (double)(index[d] + 1 - s->halo[d].lower);
    return 10000 * f[0] + 100 * f[1] + f[2];
}

/* The number of elements of the 3-d float64 `s` that differ (-1: wrong kind). */
int64_t roundtrip_count_wrong(const gts_storage *s)
{
    if (s->ndim != 3 || s->dtype.kind != GTS_KIND_FLOAT || s->dtype.itemsize != 8)
        return -1;
    int64_t wrong = 0, i[3];
    const char *base = gts_storage_data(s);
    for (i[0] = 0; i[0] < s->shape[0]; ++i[0])
        for (i[1] = 0; i[1] < s->shape[1]; ++i[1])
            for (i[2] = 0; i[2] < s->shape[2]; ++i[2]) {
                const double *v = (const double *)(base + i[0] * s->strides[0] +
                                                   i[1] * s->strides[1] + i[2] * s->strides[2]);
                wrong += *v != expected(s, i);
            }
    return wrong;
}

/* A (6, 5, 4) float64 storage in C order with a halo of 1 in I and J, holding
 * the values above; the caller releases it with roundtrip_release. */
int roundtrip_make(gts_storage *out, gts_error *err)
{
    const int64_t shape[3] = {6, 5, 4};
    gts_storage_spec spec;
    int rc = gts_storage_spec_init(&spec, 3, shape, (gts_dtype){GTS_KIND_FLOAT, 8}, err);
    if (rc)
        return rc;
    spec.has_halo = true;
    spec.halo[0] = spec.halo[1] = (gts_halo){1, 1};
    rc = gts_storage_create(&spec, 0, out, err);
    if (rc)
        return rc;
    int64_t i[3];
    char *base = gts_storage_data(out);
    for (i[0] = 0; i[0] < shape[0]; ++i[0])
        for (i[1] = 0; i[1] < shape[1]; ++i[1])
            for (i[2] = 0; i[2] < shape[2]; ++i[2])
                *(double *)(base + i[0] * out->strides[0] + i[1] * out->strides[1] +
                            i[2] * out->strides[2]) = expected(out, i);
    return GTS_OK;
}

void roundtrip_release(gts_storage *s)
{
    gts_storage_release(s);
}

/* The size of a gts_storage, for the Fortran side to hold one. */
int64_t roundtrip_storage_size(void)
{
    return (int64_t)sizeof(gts_storage);
}

/* `s` exported to DLPack and imported back (gts_storage_from_dlpack), as a
 * DLPack consumer would take a Fortran field: into `out`, with `s`'s halo
 * given again (DLPack carries none). Same memory, no copy. */
int roundtrip_dlpack(const gts_storage *s, gts_storage *out, gts_error *err)
{
    gts_dl_managed_versioned *tensor;
    int rc = gts_storage_to_dlpack(s, 0, &tensor, err);
    if (rc)
        return rc;
    gts_storage_spec options;
    rc = gts_storage_spec_init(&options, s->ndim, s->shape, s->dtype, err);
    if (!rc) {
        options.has_halo = true;
        for (int d = 0; d < s->ndim; ++d)
            options.halo[d] = s->halo[d];
        rc = gts_storage_from_dlpack(tensor, &options, out, err);
    }
    if (rc && tensor->deleter) /* on failure the tensor is still ours */
        tensor->deleter(tensor);
    return rc;
}
