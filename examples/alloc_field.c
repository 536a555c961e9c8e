/* Allocating a 3-d float64 field the way a GridTools CPU backend wants it.
 *
 *   1. look up the "gt:cpu_ifirst" preset (I contiguous);
 *   2. ask it for the layout of dims "IJK";
 *   3. compute the geometry of a (70, 70, 80) field whose point (3, 3, 0),
 *      the first point inside a halo of 3, is 64-byte aligned;
 *   4. allocate the block, fill the field with 1.0, release it.
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
    printf("%-14s (", label);
    for (int d = 0; d < ndim; ++d)
        printf("%s%lld", d ? ", " : "", (long long)values[d]);
    printf(")\n");
}

int main(void)
{
    gts_error err;

    gts_preset preset;
    check(gts_preset_lookup("gt:cpu_ifirst", &preset, &err), "gts_preset_lookup", &err);

    gts_dim dims[3];
    int ndim, layout[3];
    check(gts_dims_parse("IJK", dims, &ndim, &err), "gts_dims_parse", &err);
    check(gts_preset_layout(&preset, ndim, dims, layout, &err), "gts_preset_layout", &err);

    /* alignment_size is in bytes; here it overrides the preset's alignment */
    const int64_t shape[3] = {70, 70, 80}, aligned_index[3] = {3, 3, 0};
    gts_dtype f8;
    check(gts_dtype_make(GTS_KIND_FLOAT, 8, &f8, &err), "gts_dtype_make", &err);
    gts_geometry g;
    check(gts_geometry_init(&g, ndim, shape, layout, f8.itemsize, 64, aligned_index, &err),
          "gts_geometry_init", &err);

    gts_buffer *buffer;
    int64_t offset; /* bytes from the block to element (0, 0, 0) */
    check(gts_buffer_alloc_geometry(&g, 0, &buffer, &offset, &err), "gts_buffer_alloc_geometry",
          &err);
    char *origin = (char *)gts_buffer_host(buffer) + offset;

    gts_scalar one = {GTS_SCALAR_FLOAT, {.f = 1.0}};
    check(gts_fill_scalar(origin, g.ndim, g.shape, g.strides, f8, one, &err), "gts_fill_scalar",
          &err);

    char *aligned_point = origin;
    for (int d = 0; d < g.ndim; ++d)
        aligned_point += aligned_index[d] * g.strides[d];

    printf("preset         %s (layout %d %d %d)\n", preset.name, layout[0], layout[1], layout[2]);
    print_tuple("shape", g.ndim, g.shape);
    print_tuple("padded shape", g.ndim, g.padded_shape);
    print_tuple("strides", g.ndim, g.strides);
    printf("bytes          %lld allocated, %lld spanned\n", (long long)g.alloc_size,
           (long long)g.span);
    printf("aligned point  address %% 64 = %d, value %g\n", (int)((uintptr_t)aligned_point % 64),
           *(double *)aligned_point);

    gts_buffer_release(buffer);
    return 0;
}
