/* Dimension labels and memory layouts.
 *
 * A dimension is labelled I, J or K (the cartesian axes) or with a data
 * dimension number 0, 1, .... A layout gives each dimension its rank in
 * decreasing stride order: layout[d] == 0 is the largest stride, the
 * dimension with the highest rank is contiguous. */
#ifndef GTSTORE_LAYOUT_H
#define GTSTORE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on the number of dimensions (NumPy 2 and PEP 3118 allow 64). */
#define GTS_MAX_NDIM 64

/* Largest data dimension number. */
#define GTS_MAX_DATA_DIM 999999

/* A dimension label: the three cartesian axes are negative, a data dimension
 * is its number (>= 0). */
typedef int32_t gts_dim;
enum { GTS_DIM_I = -3, GTS_DIM_J = -2, GTS_DIM_K = -1 };

/* Big enough for any formatted label ("I", "123456"). */
#define GTS_DIM_TEXT_SIZE 8

/* The default labels for `ndim` dimensions: "IJK"[:ndim] for ndim <= 3, else
 * I, J, K, 0, 1, .... */
int gts_dims_default(int ndim, gts_dim *dims, gts_error *err);

/* One label: "I", "J", "K" or a decimal number ("0", "12"). */
int gts_dim_parse(const char *label, gts_dim *out, gts_error *err);
/* Writes the label ("I", "12"; "?" for a value that is no label). */
void gts_dim_format(gts_dim dim, char text[GTS_DIM_TEXT_SIZE]);

/* A string of one-character labels such as "IJK0"; `*ndim` receives the
 * count. Checked with gts_dims_check. */
int gts_dims_parse(const char *text, gts_dim *dims, int *ndim, gts_error *err);

/* The inverse of gts_dims_parse: the one-character labels of `dims` as a
 * string ("JI", "IJK0"; `text` has room for GTS_MAX_NDIM + 1 chars).
 * GTS_EINVAL where a label has more than one character (a data dimension
 * from 10 on), which a dims string cannot hold unambiguously. */
int gts_dims_format(int ndim, const gts_dim *dims, char text[GTS_MAX_NDIM + 1], gts_error *err);

/* The position of the dimension labelled `label` ("I", "0", ...) among
 * `dims`: how an axis given by its label (axis="K") becomes the axis
 * number NumPy's functions take. A label that is not one of `dims`, or no
 * label at all, is GTS_EINVAL naming it and the dims there are. */
int gts_dims_axis(int ndim, const gts_dim *dims, const char *label, int *axis, gts_error *err);

/* Valid labels, none repeated, ndim in [0, GTS_MAX_NDIM]. */
int gts_dims_check(int ndim, const gts_dim *dims, gts_error *err);

/* `layout` is a permutation of 0 .. ndim-1. */
int gts_layout_check(int ndim, const int *layout, gts_error *err);

/* Positional layouts: C (last index contiguous) and Fortran (first). */
void gts_layout_c(int ndim, int *layout);
void gts_layout_f(int ndim, int *layout);

/* Layout by names. `order` lists labels from the largest stride to the
 * contiguous one. Dimensions of `dims` missing from `order` must be data
 * dimensions: they become the outermost, lowest number first. Labels of
 * `order` missing from `dims` are skipped, so "IJK" also serves 2-d fields.
 * This is where the position of a label in `dims` stops mattering: with
 * order "IJK", K is contiguous for dims "IJK" and for dims "KJI" alike. */
int gts_layout_from_order(int ndim, const gts_dim *dims, int norder, const gts_dim *order,
                          int *layout, gts_error *err);

/* Layout from an axis string such as "KJI" (the order above, as text). */
int gts_layout_from_axes(int ndim, const gts_dim *dims, const char *axes, int *layout,
                         gts_error *err);

/* The ranks of I, J and K (ranks[0] is I's) that an axis string naming
 * each of them once gives, from the largest stride to the contiguous one:
 * "KJI" gives {2, 1, 0}, I contiguous. GTS_EINVAL for any other text. */
int gts_layout_ijk_ranks(const char *axes, int ranks[3], gts_error *err);

/* IJK-ordered parameters (GDP-3's first draft): a field of one or two
 * dimensions, all of them cartesian (I, J or K, no data dimension), may
 * take a per-dimension parameter (shape, halo, aligned index, layout)
 * with three entries in I, J, K order, whatever its own dims' order; the
 * entries of its dims are used, the others are checked (as far as they
 * can be without an extent: gts_halo_select_ijk, gts_index_select_ijk in
 * gtstore/spec.h) and then ignored. A 0-d field takes none: it has no
 * place for any entry. This is the one place that reads such entries. */

/* Whether a field of these dims takes IJK-ordered parameters (false for
 * 0 dims and for invalid dims: a repeated label, NULL, ndim out of
 * range). */
bool gts_dims_take_ijk(int ndim, const gts_dim *dims);

/* The entries of `ijk` (3 of `size` bytes each, in I, J, K order) for the
 * field's dims, in the dims' order, into `out` (ndim entries, apart from
 * `ijk`). GTS_EINVAL where the dims take no IJK-ordered parameters (the
 * reason named: a repeated label, NULL dims, ...) or a pointer is NULL. */
int gts_ijk_select(int ndim, const gts_dim *dims, size_t size, const void *ijk, void *out,
                   gts_error *err);

/* The same for a layout: `ijk` (a permutation of 0..2, the ranks of I, J
 * and K) restricted to the field's dims and renumbered 0..ndim-1 in the
 * same order: (2, 1, 0) gives (1, 0) for dims "IJ", (0, 1) for "JI".
 * GTS_EINVAL where `ijk` is no permutation or the dims take no
 * IJK-ordered parameters. */
int gts_layout_select_ijk(int ndim, const gts_dim *dims, const int ijk[3], int *layout,
                          gts_error *err);

/* Whether an array of these byte strides is contiguous in C order ('C':
 * last index fastest) or Fortran order ('F'); dimensions of extent 1 are
 * not looked at, and an array without elements is contiguous. */
bool gts_is_contiguous(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       char order);

/* The layout an existing array has: the one rule by which libgtstore reads
 * a layout from strides (templates, wrapped memory), NumPy's for
 * order='K' (so a copy like np.array's has its strides): C order for a
 * C-contiguous array, Fortran order for a Fortran-contiguous one, else
 * ranks by decreasing absolute stride, ties in index order, and a
 * dimension of extent 1, whose stride says nothing, keeps its place in
 * index order relative to the others. */
void gts_layout_from_strides(int ndim, const int64_t *shape, const int64_t *strides,
                             int64_t itemsize, int *layout);

/* The dimension with the highest rank (the contiguous one); -1 if ndim == 0. */
int gts_layout_contiguous_dim(int ndim, const int *layout);

#ifdef __cplusplus
}
#endif
#endif
