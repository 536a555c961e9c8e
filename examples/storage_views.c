/* Views of a 3-d float64 field with a halo: the domain and a column, taken
 * without copying, then a copy handed to another library through DLPack.
 *
 *   1. create a (10, 8, 5) storage with the "gt:cpu_ifirst" preset (I
 *      contiguous) and a halo of 2 points in I and J, 1 in K;
 *   2. fill it with -1.0, then its domain view (the halo removed) with 1.0:
 *      a view writes into the memory of the storage it came from;
 *   3. take the column at I = 5, J = 4 by fixing I and J with an index;
 *   4. copy the column into new memory and export the copy to DLPack, as a
 *      consumer such as NumPy or PyTorch would receive it;
 *   5. release everything: the memory goes when its last user lets go.
 *
 * Every gtstore call returns 0 or a negative gts_status and explains a
 * failure in the gts_error it was given. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gtstore/gtstore.h"

/* Stops the example with the library's message if a call failed. */
static void check(int rc, const char *what, const gts_error *err)
{
    if (rc != GTS_OK) {
        fprintf(stderr, "%s failed (%s): %s\n", what, gts_status_name(rc), err->message);
        exit(1);
    }
}

static void print_tuple(const char *label, int ndim, const int64_t *values)
{
    printf("  %-9s (", label);
    for (int d = 0; d < ndim; ++d)
        printf("%s%lld", d ? ", " : "", (long long)values[d]);
    printf(ndim == 1 ? ",)\n" : ")\n");
}

/* The value at `index`: element 0 plus the byte strides. */
static double value_at(const gts_storage *s, const int64_t *index)
{
    const char *element = gts_storage_data(s);
    for (int d = 0; d < s->ndim; ++d)
        element += index[d] * s->strides[d];
    return *(const double *)element;
}

static void describe(const char *name, const gts_storage *s)
{
    printf("%s\n", name);
    print_tuple("shape", s->ndim, s->shape);
    print_tuple("strides", s->ndim, s->strides); /* bytes */
    printf("  %-9s (", "halo");
    for (int d = 0; d < s->ndim; ++d)
        printf("%s(%lld, %lld)", d ? ", " : "", (long long)s->halo[d].lower,
               (long long)s->halo[d].upper);
    printf(")\n  %-9s ", "dims");
    for (int d = 0; d < s->ndim; ++d) {
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(s->dims[d], label);
        printf("%s", label);
    }
    printf("\n");
}

int main(void)
{
    gts_error err;

    gts_preset preset;
    check(gts_preset_lookup("gt:cpu_ifirst", &preset, &err), "gts_preset_lookup", &err);
    gts_dtype f8;
    check(gts_dtype_make(GTS_KIND_FLOAT, 8, &f8, &err), "gts_dtype_make", &err);

    /* dims default to I, J, K; the preset makes I contiguous */
    const int64_t shape[3] = {10, 8, 5};
    gts_storage_spec spec;
    check(gts_storage_spec_init(&spec, 3, shape, f8, &err), "gts_storage_spec_init", &err);
    spec.preset = &preset;
    spec.halo[0] = (gts_halo){2, 2};
    spec.halo[1] = (gts_halo){2, 2};
    spec.halo[2] = (gts_halo){1, 1};
    gts_storage field;
    check(gts_storage_create(&spec, 0, &field, &err), "gts_storage_create", &err);

    gts_scalar minus_one = {GTS_SCALAR_FLOAT, {.f = -1.0}}, one = {GTS_SCALAR_FLOAT, {.f = 1.0}};
    check(gts_storage_fill(&field, minus_one, &err), "gts_storage_fill", &err);

    /* the domain: a view of the same memory whose index 0 is the first
     * point inside the halo */
    gts_storage domain;
    gts_storage_view(&field, &domain);
    check(gts_storage_domain(&domain, &err), "gts_storage_domain", &err);
    check(gts_storage_fill(&domain, one, &err), "gts_storage_fill", &err);

    /* a column: fix I at 5, then J (now the first dimension) at 4 */
    gts_storage column;
    gts_storage_view(&field, &column);
    check(gts_storage_index(&column, 0, 5, &err), "gts_storage_index", &err);
    check(gts_storage_index(&column, 0, 4, &err), "gts_storage_index", &err);

    describe("field", &field);
    printf("  field[0, 0, 0] = %g (halo), field[2, 2, 1] = %g (domain)\n",
           value_at(&field, (const int64_t[]){0, 0, 0}),
           value_at(&field, (const int64_t[]){2, 2, 1}));
    describe("domain", &domain);
    printf("  domain[0, 0, 0] = %g, the same element as field[2, 2, 1]: %s\n",
           value_at(&domain, (const int64_t[]){0, 0, 0}),
           gts_storage_data(&domain) ==
                   (const char *)gts_storage_data(&field) + 2 * field.strides[0] +
                       2 * field.strides[1] + 1 * field.strides[2]
               ? "yes"
               : "no");
    describe("column I = 5, J = 4", &column);
    printf("  values   ");
    for (int64_t k = 0; k < column.shape[0]; ++k)
        printf(" %g", value_at(&column, &k)); /* the K halo keeps -1 */
    printf("\n");

    /* a copy has new memory, laid out contiguously, with the same halo */
    gts_storage copy;
    check(gts_storage_copy(&column, &copy, &err), "gts_storage_copy", &err);
    describe("copy of the column", &copy);

    /* DLPack counts strides in elements; the export keeps the copy's
     * memory alive after the storage is released */
    gts_dl_managed_versioned *tensor;
    check(gts_storage_to_dlpack(&copy, 0, &tensor, &err), "gts_storage_to_dlpack", &err);
    gts_storage_release(&copy);
    const gts_dl_tensor *t = &tensor->dl_tensor;
    printf("DLPack %u.%u tensor\n", (unsigned)tensor->version.major,
           (unsigned)tensor->version.minor);
    printf("  dtype     code %u, %u bits, %u lane\n", (unsigned)t->dtype.code,
           (unsigned)t->dtype.bits, (unsigned)t->dtype.lanes);
    print_tuple("shape", t->ndim, t->shape);
    print_tuple("strides", t->ndim, t->strides); /* elements */
    printf("  data[2] = %g\n", ((const double *)t->data)[2]);
    tensor->deleter(tensor); /* what the consumer does when it is done */

    gts_storage_release(&column);
    gts_storage_release(&domain);
    gts_storage_release(&field);
    return 0;
}
