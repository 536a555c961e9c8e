/* Specs: everything a caller can say about a storage to be made, and the
 * one resolution of it into complete parameters.
 *
 * Each parameter comes from the first of: the value given in the spec, the
 * preset, the template (an array the storage is made like or from), the
 * fallback. gts_storage_spec_resolve is the only place that applies this
 * order; the Python extension only converts its arguments into a spec. */
#ifndef GTSTORE_SPEC_H
#define GTSTORE_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/dtype.h"
#include "gtstore/error.h"
#include "gtstore/geometry.h"
#include "gtstore/layout.h"
#include "gtstore/preset.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gts_storage;

/* How the host reaches the values of a storage of the GPU device kind
 * (GDP-3's final text's `managed`); storages of the CPU kind ignore it. */
typedef enum gts_managed {
    GTS_MANAGED_GT4PY = 0, /* device memory and a host side synced by gtstore
                              (GTS_ALLOC_MIRRORED, gtstore/sync.h): the default */
    GTS_MANAGED_NONE = 1,  /* device memory only */
    GTS_MANAGED_CUDA = 2   /* CUDA managed (unified) memory of the same GPU */
} gts_managed;

/* The halo of one dimension: points at its start and at its end. */
typedef struct gts_halo {
    int64_t lower, upper;
} gts_halo;

/* gts_ijk_select (gtstore/layout.h) for a halo, every one of the three
 * entries checked, the field's and the others alike: a negative side is
 * GTS_EINVAL naming its position among the three. The field's entries
 * are checked against their extents when the spec resolves. */
int gts_halo_select_ijk(int ndim, const gts_dim *dims, const gts_halo ijk[3], gts_halo *halo,
                        gts_error *err);

/* The same for an index (aligned_index, named by `param` in the error):
 * a negative entry in any of the three positions is GTS_EINVAL. */
int gts_index_select_ijk(int ndim, const gts_dim *dims, const char *param, const int64_t ijk[3],
                         int64_t *index, gts_error *err);

/* A label left for the library in a given `dims`: the next free data
 * dimension number (one above the largest label given), in index order. */
#define GTS_DIM_NEXT ((gts_dim)INT32_MIN)
/* A rank left for the library in a given `layout`: outermost, in index
 * order; the ranks given (a permutation of 0 .. m-1 for m such entries)
 * move inwards. */
#define GTS_LAYOUT_OUTER (-1)

/* An existing array a storage is made like (gtstore's *_like functions) or
 * from (the data it copies): it gives what the spec and its preset leave
 * open. Its `ndim` dimensions are the spec's first; dimensions the spec has
 * beyond them (a subarray dtype's) get the next data dimension labels, go
 * outermost and have no halo. The pointers are borrowed and read only
 * while the spec is resolved; NULL ones give nothing. */
typedef struct gts_template {
    int ndim;
    const int64_t *shape;         /* with strides and itemsize: the layout */
    const int64_t *strides;       /* they show, by gts_layout_from_strides */
    int64_t itemsize;             /* (bytes) */
    const int *layout;            /* a storage's own layout: wins over strides */
    const gts_dim *dims;          /* the labels it declares */
    /* Its placement, which gtstore.*_like copies (gtstore.arrays does not) */
    const gts_halo *halo;
    const int64_t *aligned_index;
    int64_t alignment_size;       /* bytes; 0: none. Taken where it suits the itemsize */
    bool has_device;              /* its device kind, where it knows one (a storage's) */
    gts_device device;
} gts_template;

/* Everything a storage gives as a template: shape, strides, its own
 * layout, dims, its device kind (where its memory is), and with
 * `placement` its halo, aligned point and alignment. `out` borrows from
 * `storage`. */
void gts_template_from_storage(const struct gts_storage *storage, bool placement,
                               gts_template *out);

/* The per-dimension fields of a spec, X(type, name, comment), as
 * GTS_STORAGE_DIM_FIELDS in storage.h: widest types first, ndim entries
 * each, copied together. */
#define GTS_SPEC_DIM_FIELDS(X)                                              \
    X(int64_t, shape, "extent")                                             \
    X(int64_t, aligned_index, "if has_aligned_index")                       \
    X(gts_halo, halo, "zeros from gts_storage_spec_init")                   \
    X(int, layout, "if has_layout")                                         \
    X(gts_dim, dims, "if has_dims")

#define GTS_DECLARE_DIM_FIELD(type, name, comment) type name[GTS_MAX_NDIM];

/* What a storage should be: the shape and dtype, and parameters that are
 * either given or left to the preset, the template and the fallbacks.
 * Resolution order for each parameter: the value given here, then the
 * preset, then the template, then the fallback named beside it. */
typedef struct gts_storage_spec {
    int ndim;
    gts_dtype dtype;
    /* The trailing dimensions a subarray dtype adds (0 <= nsub <= ndim):
     * the fallback labels the others ("IJK"...) and numbers these on as
     * data dimensions. */
    int nsub;
    const gts_preset *preset;     /* NULL: no preset */
    const gts_template *like;     /* NULL: no template */
    /* A layout rule given by the caller, run on the resolved dims where
     * has_layout is false: it wins over the preset. Its result may hold
     * GTS_LAYOUT_OUTER entries. NULL: none. */
    gts_layout_fn layout_fn;
    void *layout_ctx;
    bool has_dims;          /* else the template's, else "IJK"[:ndim - nsub] then data dims */
    bool has_layout;        /* else layout_fn, the preset's rule, the template's, C order */
    bool has_aligned_index; /* else the template's, else the lower halo (within the shape) */
    bool has_halo;          /* else the template's, else `halo` as it is (zeros from init) */
    bool has_device;        /* else the preset's device, the template's, the CPU;
                               whichever it is, another value than GTS_DEVICE_CPU or
                               GTS_DEVICE_GPU is GTS_EINVAL */
    gts_device device;
    gts_managed managed;    /* GTS_MANAGED_GT4PY from gts_storage_spec_init */
    int64_t alignment_size; /* bytes; 0: `alignment` times the itemsize, else the preset's
                               alignment times the itemsize, else the template's, else 1 */
    int64_t alignment;      /* elements (GDP-3's first draft); 0: not given. Given with
                               alignment_size, the two must agree (GTS_EINVAL naming both);
                               resolution folds it into alignment_size and clears it */
    GTS_SPEC_DIM_FIELDS(GTS_DECLARE_DIM_FIELD)
} gts_storage_spec;

/* Starts a spec with nothing but the shape and dtype given. */
int gts_storage_spec_init(gts_storage_spec *spec, int ndim, const int64_t *shape,
                          gts_dtype dtype, gts_error *err);

/* The full shape of a storage of a subarray dtype, whose `nsub` trailing
 * dimensions are `sub_shape`. Where `with_subarray` (the shape is the
 * data's, which holds the subarray's dimensions) the shape must end with
 * sub_shape, else GTS_EINVAL naming both shapes; otherwise sub_shape is
 * appended to `shape` (room for GTS_MAX_NDIM entries) and `*ndim` grows,
 * GTS_EINVAL where that exceeds GTS_MAX_NDIM. `nbase` receives the number
 * of leading dimensions, those the subarray does not add (spec.nsub is
 * then *ndim - *nbase). */
int gts_subarray_shape(int *ndim, int64_t *shape, int nsub, const int64_t *sub_shape,
                       bool with_subarray, int *nbase, gts_error *err);

/* Resolves every parameter in place (afterwards has_dims, has_layout,
 * has_aligned_index, has_halo and has_device are true, alignment_size is
 * set, and the spec no longer refers to its template or layout_fn), checks
 * them against each other and computes the allocation geometry (`geometry`
 * may be NULL). On failure the spec means what it meant: only entries
 * nobody gave (their has_ flag false) may have been written. */
int gts_storage_spec_resolve(gts_storage_spec *spec, gts_geometry *geometry, gts_error *err);

/* The device kind `spec` resolves to: the one given, else its preset's,
 * else its template's, else the CPU. */
gts_device gts_storage_spec_device(const gts_storage_spec *spec);

/* The dims `spec` resolves to (ndim entries into `dims`), before the rest
 * is resolved: what a caller needs to read parameters that depend on them
 * (IJK-ordered entries, gtstore/layout.h). */
int gts_storage_spec_dims(const gts_storage_spec *spec, gts_dim *dims, gts_error *err);

/* Copies the parameters of a spec (the preset and template pointers, not
 * what they point at). */
void gts_storage_spec_copy(gts_storage_spec *dst, const gts_storage_spec *src);

#ifdef __cplusplus
}
#endif
#endif
