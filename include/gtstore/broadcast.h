/* Broadcasting by dimension names (GDP-3's first draft): how the operands of an
 * elementwise operation line up, and the parameters of the storage that
 * receives the result when none is given.
 *
 * Operands align by their dims labels, not by position. A dimension of
 * extent 1 is masked: it matches any extent. Arrays without labels follow
 * GDP-3's first draft's "Mixing Types", against the dims and shape the storages (or a
 * given output) have: a 3-d array is I, J, K with its extents of 1 masked,
 * unless it has exactly that shape; that one, and any other array with as
 * many dimensions (extents 1 broadcasting), takes those dims by position.
 * A given output may have more dimensions than the operands; the result is
 * replicated along them.
 *
 * One exception recognises xarray's broadcasting, which lines operands up
 * by position and adds the dims one lacks by None indexing (an axis of
 * extent 1 and stride 0 labelled with a free data dim, as
 * gts_storage_insert_dim makes it: a placeholder), leaving out leading ones
 * where NumPy's alignment from the right covers them. Without an output,
 * storages whose labels would otherwise grow the result (their union has
 * more dims than the longest), and whose labels other than placeholders
 * agree at every position counted from the right (a different label at
 * each), line up by position from the right: each position takes its one
 * label. Arrays without dims are then scalars or as long as the longest. */
#ifndef GTSTORE_BROADCAST_H
#define GTSTORE_BROADCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"
#include "gtstore/layout.h"
#include "gtstore/spec.h"
#include "gtstore/storage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most operands of one operation (inputs and outputs): NumPy's limit. */
#define GTS_BROADCAST_MAX_OPERANDS 64

/* An operand: a storage, or an array without dims (storage NULL; `ndim`
 * and `shape` then describe it; a scalar has ndim 0). */
typedef struct gts_operand {
    const gts_storage *storage;
    int ndim;
    const int64_t *shape;
} gts_operand;

/* The result's dims and shape, and for each operand and result dimension
 * the operand's axis that runs along it, or -1 where the operand is
 * broadcast (it lacks the dimension or has extent 1 there). */
typedef struct gts_broadcast {
    int ndim;
    gts_dim dims[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM];
    int8_t axis[GTS_BROADCAST_MAX_OPERANDS][GTS_MAX_NDIM];
} gts_broadcast;

/* Lines up `n` operands. Without `out` the result's dims are the storage
 * operands' dims where they all have the same, else their union in the
 * order I, J, K, 0, 1, ...; with `out` (a storage) they are its dims, and
 * every operand must fit in it. The extents of one dim must agree (or be
 * 1): else GTS_EINVAL naming the dim, the operands and the extents. An
 * array without dims that fits no rule of GDP-3's first draft is GTS_EINVAL naming
 * the operand and its shape. A result of more than GTS_MAX_NDIM dims is
 * GTS_EINVAL ("the result would have more than 64 dims"). Operands are
 * numbered from 0 in the messages. */
int gts_broadcast_operands(int n, const gts_operand *operands, const gts_storage *out,
                           gts_broadcast *result, gts_error *err);

/* The parameters of a new storage for the result (GDP-3's first draft, "Output Storage
 * Parameters"), given in a spec of `dtype` that gts_storage_create takes:
 * dims and shape `result`'s; per dimension the aligned index the largest of
 * the storage operands running along it (0 where none does); the halo such
 * that the domain is the intersection of theirs (empty where they do not
 * meet); the layout of the first storage operand, its dims in its order and
 * the others outermost; the alignment the least common multiple of the
 * storage operands' and the itemsize. `device` is the spec's device kind. */
int gts_broadcast_output_spec(int n, const gts_operand *operands, const gts_broadcast *result,
                              gts_dtype dtype, gts_device device, gts_storage_spec *spec,
                              gts_error *err);

/* The result of reducing `storage` along the axes where `reduced` is true
 * (one entry per axis): its other dims, or with `keepdims` all of them,
 * the reduced ones of extent 1. Operand 0 of `result` is the storage, so
 * gts_broadcast_output_spec gives the result's parameters from it. */
int gts_broadcast_reduce(const gts_storage *storage, const bool *reduced, bool keepdims,
                         gts_broadcast *result, gts_error *err);

/* ---- views along the result ------------------------------------------ */

/* Operand k's strides along the result's dims, from `strides` (its own,
 * one per axis): its stride where an axis runs along the dimension, 0
 * where it is broadcast. A view of `result->shape` with them reads the
 * operand as the result's dims see it. */
void gts_broadcast_strides(const gts_broadcast *result, int k, const int64_t *strides,
                           int64_t *out);

/* How operand k, an array without dims of `ndim` axes and `shape`, becomes
 * a view along the result's dims by transposing and reshaping (only axes
 * of extent 1 come and go): `perm` (ndim entries) its axes in the result's
 * order, those that run along no result dimension after; `view_shape`
 * (result->ndim entries) the reshaped extents, 1 where it broadcasts.
 * Returns false (perm and view_shape untouched) where the array already
 * lines up by position and is its own view. */
bool gts_broadcast_arrangement(const gts_broadcast *result, int k, int ndim,
                               const int64_t *shape, int *perm, int64_t *view_shape);

/* The fit of `out`, a storage given to hold a result: its strides along
 * the result's dims, matched by label (`strides`, result->ndim entries).
 * `out` must have exactly the result's dims and extents, in any order:
 * else GTS_EINVAL ("out: a storage of dims ('I', 'J') and shape (3, 4)
 * cannot hold the result, of dims ... and shape ..."). */
int gts_broadcast_fit_out(const gts_broadcast *result, const gts_storage *out, int64_t *strides,
                          gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
