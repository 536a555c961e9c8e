/* Binding fields to a stencil: the checks and numbers of one stencil call.
 *
 * A stencil declares a signature: per field its dtype, its dimension labels
 * (the annotation), how far around each domain point it reads or writes
 * (access extents), whether it is written, and optionally the layout and
 * alignment it was written for; plus the device kind it computes on. A call
 * hands over each field as a plain description of its memory (pointer,
 * shape, byte strides, labels, halo, default origin, device kind).
 *
 * gts_bind then decides, in the kernel's order of dimensions (I, J, K of
 * those the field has, then its data dimensions in increasing number; call
 * it the canonical order):
 * - each field's origin, first found of: the call's origin for that field,
 *   the call's origin for all fields ("_all_", I, J, K; data dimensions 0),
 *   the field's own default origin (GT4Py's __gt_origin__), the lower halo,
 *   0. The default origin and the halo are in the field's own order of
 *   dimensions and are permuted; the call's origins are canonical already;
 * - the domain (I, J, K): the call's, else the largest every field allows:
 *   shape - origin - its upper margin, the larger of its upper halo (seed
 *   000: the halo is what lies outside the domain; 0 without one) and the
 *   stencil's upper extent for it (the points read past the domain); the
 *   smallest over the fields, per dimension. An inferred domain therefore
 *   always passes the bounds check below;
 * - every check, on every call (nothing is cached): labels, dtype, device
 *   kind, read-only fields that are written, and that each field holds
 *   origin - lower extent .. origin + domain + upper extent, with the field,
 *   the dimension and the numbers in the message.
 * Layout and alignment that differ from the signature's expectations are
 * warnings (the kernel reads any strides correctly, only slower), or errors
 * where the field spec says the kernel relies on them (GDP-3's first draft: an
 * exception where going on is undefined behaviour, else a warning).
 *
 * Everything is caller memory: gts_bind allocates nothing, so a call costs
 * only its arithmetic. */
#ifndef GTSTORE_BINDING_H
#define GTSTORE_BINDING_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/device.h"
#include "gtstore/dtype.h"
#include "gtstore/error.h"
#include "gtstore/layout.h"
#include "gtstore/preset.h"
#include "gtstore/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions of one bound field (3 cartesian and data dimensions);
 * a field with more is refused with a message. */
#define GTS_BIND_MAX_NDIM 16
/* Warnings one call keeps (later ones are counted, not kept). */
#define GTS_BIND_MAX_WARNINGS 4

/* What a stencil expects of one field. */
typedef struct gts_field_spec {
    const char *name;                     /* for messages; borrowed */
    gts_dtype dtype;
    int ndim;
    gts_dim dims[GTS_BIND_MAX_NDIM];      /* the annotation, in the order assumed
                                             for fields that carry no labels */
    gts_halo extent[GTS_BIND_MAX_NDIM];   /* points accessed below / above the
                                             domain, canonical order; 0 on data
                                             dimensions */
    bool written;
    bool has_layout;                      /* expected layout: layout[d] is the rank */
    int layout[GTS_BIND_MAX_NDIM];        /* of dims[d] (gtstore/layout.h) */
    int64_t alignment;                    /* expected byte alignment of the origin
                                             point; 0 or 1: none. Else a multiple
                                             or a divisor of the itemsize */
    bool relies_on_layout;                /* layout/alignment differences are errors */
} gts_field_spec;

/* A stencil's fields and the device kind it computes on. */
typedef struct gts_signature {
    int nfields;
    const gts_field_spec *fields; /* borrowed */
    gts_device device;
} gts_signature;

/* Checks a signature once, where it is made: names present and distinct,
 * a supported dtype, valid unrepeated labels, extents >= 0 and 0 on data
 * dimensions, a permutation as layout, an alignment 0 (none) or one
 * gts_geometry_init takes (positive, a multiple or a divisor of the
 * itemsize). gts_bind assumes a checked signature. */
int gts_signature_check(const gts_signature *sig, gts_error *err);

/* One field of a call: its memory as its owner describes it. */
typedef struct gts_field_desc {
    void *data;              /* element 0 (a device address for device memory) */
    gts_device device;       /* the kind of memory `data` is */
    gts_dtype dtype;
    int ndim;
    const int64_t *shape;
    const int64_t *strides;  /* bytes, any sign */
    const gts_dim *dims;     /* its own labels; NULL: the annotation's (the No-Storage work plan) */
    const gts_halo *halo;    /* NULL: it carries none */
    const int64_t *origin;   /* its default origin (__gt_origin__); NULL: none */
    bool readonly;
} gts_field_desc;

/* What a call says beyond its fields. NULL pointers: not given. */
typedef struct gts_bind_args {
    const int64_t *domain;          /* I, J, K */
    const int64_t *const *origins;  /* per field (NULL entries), canonical, ndim entries */
    const int64_t *origin_all;      /* I, J, K */
} gts_bind_args;

/* One field as the kernel indexes it: canonical order. */
typedef struct gts_bound_field {
    char *origin_data;                 /* the element at the origin */
    int ndim;
    gts_dim dims[GTS_BIND_MAX_NDIM];
    int axis[GTS_BIND_MAX_NDIM];       /* the field's own dimension behind each */
    int64_t shape[GTS_BIND_MAX_NDIM];
    int64_t strides[GTS_BIND_MAX_NDIM]; /* bytes */
    int64_t origin[GTS_BIND_MAX_NDIM];
} gts_bound_field;

typedef struct gts_bind_warning {
    int field; /* index in the signature */
    char message[GTS_ERROR_MESSAGE_SIZE];
} gts_bind_warning;

/* The result of a call's binding; the fields go to a caller array. */
typedef struct gts_binding {
    int64_t domain[3]; /* I, J, K; 1 for an axis no field has */
    int nwarnings;     /* may exceed GTS_BIND_MAX_WARNINGS: the rest are not kept */
    gts_bind_warning warnings[GTS_BIND_MAX_WARNINGS];
    /* The stream a kernel on the GPU queues its work on (ABI 6). gts_bind
     * sets NULL, the default stream, on which the kernel completes its
     * work before it returns. A caller that ordered the fields' device
     * sides on a stream (gtstore/access.h: gts_storage_access before the
     * kernel, gts_storage_access_end after it, as the Python API's GPU
     * stencil calls do) sets it: the kernel launches there and may return
     * with its work still queued. */
    gts_stream stream;
} gts_binding;

/* Binds `fields` (sig->nfields of them, in the signature's order) into
 * `bound` (as many) and `out`. Errors (each message names the field and the
 * parameter): GTS_EINVAL for labels, shapes, origins, domains, bounds and
 * device kinds, GTS_ETYPE for a dtype, GTS_EREADONLY for a
 * written read-only field, GTS_EOVERFLOW where a bound does not fit in 64
 * bits. On failure `bound` and `out` hold nothing of use. */
int gts_bind(const gts_signature *sig, const gts_field_desc *fields, const gts_bind_args *args,
             gts_binding *out, gts_bound_field *bound, gts_error *err);

/* A kernel over one call's bound fields, in the signature's order: the C
 * kernel hook. The Python API calls it with the GIL released
 * (Signature.call_c), so it must not touch Python objects. `ctx` is the
 * caller's. A kernel on the GPU queues its work on binding->stream (NULL:
 * the default stream, where it completes before returning). Returns 0, or
 * a negative gts_status with `err` filled. */
typedef int (*gts_kernel_fn)(const gts_binding *binding, const gts_bound_field *fields,
                             int nfields, void *ctx, gts_error *err);

/* Whether two fields' memory may overlap: the bytes from the lowest to
 * the highest of each one's elements intersect (bounds only, as NumPy's
 * may_share_memory: fields that interleave without a shared byte count
 * too). Empty fields and fields of NULL data share none. The fields are
 * valid ones (gts_bind accepted them, or a storage's); where a span does
 * not fit in 64 bits they count as overlapping. */
bool gts_fields_may_share_memory(const gts_field_desc *a, const gts_field_desc *b);

/* The canonical order of `ndim` labels: order[c] is the index in `dims` of
 * the c-th dimension the kernel indexes (I, J, K, then data dimensions by
 * number). The labels must be valid and unrepeated. */
void gts_dims_canonical(int ndim, const gts_dim *dims, int *order);

/* The axis of domain entry `dim` (GTS_DIM_I/J/K): 0, 1, 2. */
static inline int gts_domain_axis(gts_dim dim)
{
    return dim - GTS_DIM_I;
}

#ifdef __cplusplus
}
#endif
#endif
