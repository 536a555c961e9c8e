/* Storages: typed, strided views of a buffer that carry the metadata of a
 * field (dimension labels, halo, aligned point).
 *
 * A gts_storage is a value the caller owns; it holds one reference to its
 * buffer, which gts_storage_release drops. Views (gts_storage_view, then
 * slice, index, transpose, domain) share the buffer and never copy, so they
 * also share its sync state. The view operations work in place on a view the
 * caller made, and on failure leave it unchanged.
 *
 * Invariants every storage keeps:
 * - every element lies inside the buffer;
 * - 0 <= halo[d].lower, 0 <= halo[d].upper, lower + upper <= shape[d];
 * - the element at aligned_index sits at a host address that is a multiple
 *   of alignment_size (for a non-empty storage). A view keeps the aligned
 *   point of its parent where it contains it. Else it takes the parent's
 *   point clamped into the view and, if that is not aligned, the aligned
 *   element nearest to it (by index) along one dimension whose stride is
 *   not a multiple of the alignment; where there is none, its
 *   alignment_size drops to the alignment that point has. (For memory with
 *   several such dimensions, which only wrapped memory has, the search may
 *   miss a point aligned in two of them at once: the alignment is then
 *   conservative, never false.) */
#ifndef GTSTORE_STORAGE_H
#define GTSTORE_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/buffer.h"
#include "gtstore/dtype.h"
#include "gtstore/error.h"
#include "gtstore/geometry.h"
#include "gtstore/layout.h"
#include "gtstore/preset.h"
#include "gtstore/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The per-dimension fields of a storage, X(type, name, comment), in one
 * list: the struct below declares them from it, and every copy of a storage
 * (the library's verbs, the Python extension's compact objects) iterates
 * it, so a new per-dimension field is added here and nowhere else. Widest
 * types first: packed one after the other, ndim entries each, every array
 * stays aligned. */
#define GTS_STORAGE_DIM_FIELDS(X)                                                \
    X(int64_t, shape, "extent")                                                  \
    X(int64_t, strides, "bytes, any sign")                                       \
    X(int64_t, aligned_index, "the aligned point")                               \
    X(gts_halo, halo, "points of the halo at the start and the end")            \
    X(int, layout, "rank in decreasing stride order, as allocated (see below)") \
    X(gts_dim, dims, "label")

/* A storage. The scalar fields come first and are copied as one block
 * (everything before `shape`); the per-dimension arrays follow, declared
 * by GTS_STORAGE_DIM_FIELDS, and only their first ndim entries are copied.
 * The layout is kept rather than read from the strides: with extents of 0
 * or 1 the strides cannot tell which dimension a preset made contiguous
 * and padded. Copy with gts_storage_view (a new reference) or
 * gts_storage_move (the reference moves); see "ABI" in docs/c-api.md. */
typedef struct gts_storage {
    gts_buffer *buffer;     /* one reference, owned by this struct */
    int64_t offset;         /* bytes from the buffer's base to element 0 */
    gts_dtype dtype;
    int ndim;
    bool readonly;
    int64_t alignment_size; /* bytes */
    GTS_STORAGE_DIM_FIELDS(GTS_DECLARE_DIM_FIELD)
} gts_storage;

/* gts_storage_create for a spec the caller no longer needs: it is resolved
 * in place (as by gts_storage_spec_resolve, so afterwards it describes the
 * storage; on failure it means what it meant), which saves copying it. */
int gts_storage_create_in_place(gts_storage_spec *spec, unsigned flags, gts_storage *out,
                                gts_error *err);

/* Memory for a new storage that is not new (gts_storage_create_reusing):
 * a new reference to a buffer that gts_buffer_alloc(device, size, flags)
 * could have made (`flags`: GTS_ALLOC_MIRRORED or 0), one
 * gts_buffer_reusable said may serve, or NULL to allocate. */
typedef gts_buffer *(*gts_buffer_reuse_fn)(void *ctx, const gts_device_ops *device,
                                           int64_t size, unsigned flags);

/* gts_storage_create_in_place, asking `reuse` (with `ctx`) for the buffer
 * first: for memory on a device other than the host, and not where
 * GTS_ALLOC_ZERO is given, since a reused block holds old values. The
 * block keeps its stream order (gtstore/access.h): device work still
 * queued on it is waited for as by any access. A mirrored buffer starts
 * GTS_SYNC_CLEAN, as a new one does, and keeps its host side (pinned or
 * not). A buffer that is not the one asked for is GTS_EINVAL (and
 * released); so are flags gts_buffer_flags_check refuses, before `reuse`
 * is asked. */
int gts_storage_create_reusing(gts_storage_spec *spec, unsigned flags, gts_buffer_reuse_fn reuse,
                               void *ctx, gts_storage *out, gts_error *err);

/* Allocates a storage for `spec` (flags: GTS_ALLOC_ZERO) where its device
 * kind says: host memory for the CPU kind; for the GPU kind the device that
 * plays the GPU (gts_device_gpu), with a host side synced by gtstore
 * (spec->managed GTS_MANAGED_GT4PY, the default), device memory only
 * (GTS_MANAGED_NONE) or CUDA managed memory (GTS_MANAGED_CUDA). Without a
 * GPU it fails with the reason. The same as gts_storage_create_on(NULL, ...). */
int gts_storage_create(const gts_storage_spec *spec, unsigned flags, gts_storage *out,
                       gts_error *err);

/* Allocates a storage for `spec` on `device` (gtstore/device.h), with the
 * geometry the spec resolves to (a GPU preset's padding on any device); the
 * aligned point is aligned on the device's addresses. NULL: the device the
 * spec's device kind names, as gts_storage_create. A device given wins over
 * the spec's device kind, which only chooses where no device is given. */
int gts_storage_create_on(const gts_device_ops *device, const gts_storage_spec *spec,
                          unsigned flags, gts_storage *out, gts_error *err);

/* A storage over memory laid out by somebody else: element 0 at byte
 * `offset` of `buffer` (retained; the caller keeps its own reference),
 * with the spec's shape and dtype and these byte `strides`. The spec's other
 * parameters resolve as for an allocation and are checked against the
 * memory: every element must lie in the buffer, a layout asked for (given,
 * the preset's or the template's) must agree with the strides, and the
 * element at aligned_index must sit at a multiple of alignment_size. Where
 * nothing asks for a layout, the storage has the one its strides show.
 * A spec that resolves to the GPU gives GTS_ENOTSUP (the buffer is host
 * memory). Nothing is allocated or copied. */
int gts_storage_wrap(const gts_storage_spec *spec, gts_buffer *buffer, int64_t offset,
                     const int64_t *strides, bool readonly, gts_storage *out, gts_error *err);

/* How the storage's memory is managed, as a spec's `managed` says (for a
 * storage made like it): GTS_MANAGED_GT4PY where its buffer is mirrored,
 * GTS_MANAGED_CUDA in a GPU's managed memory, else GTS_MANAGED_NONE. */
gts_managed gts_storage_managed(const gts_storage *storage);

/* A new view of all of `src` (one more reference to its buffer). */
void gts_storage_view(const gts_storage *src, gts_storage *out);

/* Moves `src` into `dst` (its buffer reference included) and leaves `src`
 * empty, as gts_storage_release does; `dst` must hold no reference. */
void gts_storage_move(gts_storage *dst, gts_storage *src);

/* Drops the buffer reference; the struct is then empty. NULL is ignored. */
void gts_storage_release(gts_storage *storage);

/* ---- view operations: in place on a view the caller owns ----------------
 * A `dim` outside [0, ndim) gives GTS_EBOUNDS. */

/* Keeps `count` elements of dimension `dim`: start, start + step, ... (step
 * nonzero, any sign; every selected index inside the extent). The halo
 * becomes the selected elements that lie in the halo. */
int gts_storage_slice(gts_storage *view, int dim, int64_t start, int64_t step, int64_t count,
                      gts_error *err);

/* Fixes dimension `dim` at `index` (0 <= index < extent; GTS_EBOUNDS
 * otherwise) and drops the dimension with its label and halo. */
int gts_storage_index(gts_storage *view, int dim, int64_t index, gts_error *err);

/* Inserts a dimension of extent 1 before `dim` (0 <= dim <= ndim), labelled
 * with the next free data dimension number, without halo. */
int gts_storage_insert_dim(gts_storage *view, int dim, gts_error *err);

/* Reshapes to `shape` (`ndim` extents) as a view, where that is one: the
 * same shape, or the same without dimensions of extent 1, which are
 * dropped as gts_storage_index(view, d, 0) drops them (the first ones
 * where several of extent 1 could go). One extent may be -1, as in NumPy:
 * the view's size over the product of the others (GTS_EINVAL for two -1s,
 * another negative extent, or a -1 beside an extent of 0). A reshape that
 * regroups the values has no labels to give them: GTS_EINVAL naming both
 * shapes, the view unchanged. */
int gts_storage_reshape(gts_storage *view, int ndim, const int64_t *shape, gts_error *err);

/* Permutes the dimensions: new dimension i is old dimension axes[i] (NULL:
 * reversed). Shape, strides, dims, halo and aligned_index move together. */
int gts_storage_transpose(gts_storage *view, const int *axes, gts_error *err);

/* Permutes the dimensions into the order of `like`'s, matched by label (as
 * GDP-3's first draft lines storages up by dims): `view` must have the same
 * labels, each of the same extent; else GTS_EINVAL naming both dims and
 * shapes, the view unchanged. A copy between a storage and another's
 * transpose by labels is then one of equal shapes. */
int gts_storage_transpose_like(gts_storage *view, const gts_storage *like, gts_error *err);

/* Reads the same bytes as another dtype (NumPy's ndarray.view(dtype)). Of
 * the same itemsize, everything else stays. Of another itemsize, as NumPy:
 * the last dimension (by position) must be contiguous (or of extent 1),
 * and its extent, halo and aligned index are regrouped into elements of
 * the new size, each a whole number of them; a 0-d storage keeps its
 * itemsize. GTS_EINVAL otherwise, naming the dimension and the sizes;
 * GTS_ETYPE for a dtype that gts_dtype_make refuses. The view is unchanged
 * on failure. */
int gts_storage_view_dtype(gts_storage *view, gts_dtype dtype, gts_error *err);

/* Removes the halo: the view of the domain, whose index 0 is the first
 * domain point; its halo is zero. */
int gts_storage_domain(gts_storage *view, gts_error *err);

/* Sets the halo (per dimension; each side >= 0, their sum at most the
 * extent). The aligned point stays where it is. */
int gts_storage_set_halo(gts_storage *storage, const gts_halo *halo, gts_error *err);

/* ---- data ----------------------------------------------------------------- */

/* A new storage with the parameters of `src` (dtype, shape, dims, halo,
 * aligned_index, alignment_size and its layout) in new
 * memory on the device of `src`, holding a copy of the values. The copy is
 * writable. */
int gts_storage_copy(const gts_storage *src, gts_storage *out, gts_error *err);
/* The same on `device` (NULL: the source's), e.g. a host copy of device
 * memory; mirrored only on the source's own device. */
int gts_storage_copy_to(const gts_device_ops *device, const gts_storage *src, gts_storage *out,
                        gts_error *err);
/* The storage gts_storage_copy_to would make, with its values undefined:
 * for a copy whose values are written later (the stencil call's copy-in
 * fills it only when the call runs). */
int gts_storage_like_to(const gts_device_ops *device, const gts_storage *src, gts_storage *out,
                        gts_error *err);
/* gts_storage_copy with the copy queued on `stream` of the source's device
 * (gts_storage_assign_on): it may still run when this returns. */
int gts_storage_copy_on(const gts_storage *src, gts_stream stream, gts_storage *out,
                        gts_error *err);

/* Copies the values of `src` into `dst`: same shape and dtype, `dst`
 * writable (GTS_EREADONLY otherwise). Overlapping storages are fine. On one
 * device (or between host-accessible ones) the device's strided copy does
 * it; between devices the values go through host memory in C order, in one
 * transfer each way (see docs/design.md, "Devices"). */
int gts_storage_assign(const gts_storage *dst, const gts_storage *src, gts_error *err);
/* The same with the copy queued on `stream` of the storages' device (NULL:
 * the default stream, as gts_storage_assign), in the stream order of
 * gtstore/access.h: it waits for the device work on both buffers and is
 * recorded as the last work of both, and may still run when this returns.
 * A copy between two devices goes through the host on the default
 * streams, whatever `stream`. */
int gts_storage_assign_on(const gts_storage *dst, const gts_storage *src, gts_stream stream,
                          gts_error *err);

/* Stores `value` (see gts_scalar_store) into every element, with the fill
 * of the storage's device. */
int gts_storage_fill(const gts_storage *storage, gts_scalar value, gts_error *err);
/* The same with the element already in the storage's dtype (itemsize bytes). */
int gts_storage_fill_item(const gts_storage *storage, const void *item, gts_error *err);
/* The same queued on `stream` of the storage's device, in the stream order
 * of gtstore/access.h (NULL: the default stream). */
int gts_storage_fill_item_on(const gts_storage *storage, const void *item, gts_stream stream,
                             gts_error *err);

/* ---- properties ----------------------------------------------------------- */

/* Host address of element 0; NULL when the storage's memory is not
 * host-accessible (device memory: reach it through gtstore/device.h). */
void *gts_storage_data(const gts_storage *storage);

/* Number of elements, and their bytes without padding. */
int64_t gts_storage_size(const gts_storage *storage);
int64_t gts_storage_nbytes(const gts_storage *storage);

/* The storage's layout. Views keep it: an index drops the dimension's rank
 * (the ranks above close the gap), insert_dim adds an outermost one,
 * transpose permutes. Memory wrapped without a layout gets the one its
 * strides show, dimensions of extent 1 outermost. */
void gts_storage_layout(const gts_storage *storage, int *layout);

/* shape - lower halo - upper halo, per dimension. */
void gts_storage_domain_shape(const gts_storage *storage, int64_t *shape);

/* Whether the elements are contiguous in C order ('C': last index fastest)
 * or Fortran order ('F'); dimensions of extent 1 and empty storages are
 * contiguous in both. */
bool gts_storage_contiguous(const gts_storage *storage, char order);

#ifdef __cplusplus
}
#endif
#endif
