/* Allocation requests: the arguments of the creation functions (keywords.c)
 * converted into a libgtstore spec (request.c). */
#ifndef GTSTORE_EXT_REQUEST_H
#define GTSTORE_EXT_REQUEST_H

#include "args.h"
#include "source.h"

typedef enum gtpy_fill { FILL_NONE, FILL_ZEROS, FILL_ONES, FILL_VALUE, FILL_COPY } gtpy_fill;

/* What a call asks for. Borrowed references; NULL when absent (or None,
 * for the parameters where None means absent). */
typedef struct gtpy_request {
    PyObject *shape, *dtype, *fill_value;
    PyObject *source;    /* data to copy or wrap, or a template */
    bool source_is_data; /* from_array, storage, as_storage (else *_like) */
    bool storage_api;    /* gtstore.*: templates also give halo, aligned point, alignment */
    bool relabel;        /* dims= may differ from a wrapped storage's (a fresh import) */
    PyObject *preset, *aligned_index, *dims, *alignment_size, *alignment, *layout, *device;
    PyObject *halo, *managed, *copy, *device_data, *sync_state; /* the last four: the caller's */
    const char *preset_param; /* the keyword used: "backend", "defaults", "default_parameters" */
    const char *dims_param;   /* "dims", "dimensions" or "axes" */
    const char *layout_param; /* "layout" or "layout_map" */
    const char *device_param; /* "device" or "gpu" (a bool: True is "gpu", False "cpu") */
    gtpy_fill fill;
} gtpy_request;

/* The arguments of a creation function, read into `r` (whose other fields
 * the caller set) as the keyword table says (keywords.c): each parameter
 * named in `sig` has an entry there, with the field of gtpy_request it
 * fills. Aliases (backend/defaults/default_parameters, dims/dimensions/axes,
 * layout/layout_map, device/gpu) fill one field:
 * the first given, in the order of `sig`, names it (`preset_param`,
 * `dims_param`), and the others must agree with it. */
int gtpy_request_parse(gtpy_request *r, gtpy_signature *sig, PyObject *const *args,
                       Py_ssize_t nargs, PyObject *kwnames);

/* The device kind a device= or gpu= value (`param` names which; neither
 * is None here) asks for; gpu= takes a bool only (TypeError). */
int gtpy_request_device(PyObject *value, const char *param, gts_device *out);


/* The device kind the call asks for (device=, gpu=, else the preset's;
 * the CPU where it names none): the data interface entry its data is read
 * from first (gtpy_source_open). -1 with an exception for a device= value
 * that is no device. */
int gtpy_request_asked_device(const gtpy_request *r, gts_device *out);

/* The request converted into a spec, with what the spec points at: the
 * preset (a counted copy), the template and the layout= argument, which
 * libgtstore runs on the resolved dims. The struct points into itself:
 * copy it only once resolved (resolution drops the template and the
 * layout function), and then renew the preset pointer with gtpy_spec(). */
typedef struct gtpy_resolved {
    gts_storage_spec spec;
    gts_preset preset;
    bool has_preset;
    PyObject *layout;               /* borrowed: the request's */
    const char *layout_param;       /* "layout" or "layout_map" */
    bool layout_ijk;                /* 3 ranks in IJK order for a field of fewer dims
                                       (gtstore.*, not GT4Py's keywords) */
    gts_template like;
    gts_dim like_dims[GTS_MAX_NDIM]; /* an array's __gt_dims__ or data interface dims */
    gts_halo like_halo[GTS_MAX_NDIM]; /* an array's data interface halo */
    gts_storage like_storage;       /* a storage template's fields (buffer borrowed) */
} gtpy_resolved;

static inline gts_storage_spec *gtpy_spec(gtpy_resolved *r)
{
    r->spec.preset = r->has_preset ? &r->preset : NULL;
    return &r->spec;
}

/* Fills `out` (parameters left open stay open for libgtstore). On success
 * `out` holds the preset, which stays valid (even if unregistered by user
 * code meanwhile) until gtpy_resolved_release; on failure there is nothing
 * to release. */
int gtpy_request_spec(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out);
/* The same, then resolved completely with the allocation geometry. */
int gtpy_request_resolve(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out,
                         gts_geometry *geometry);

static inline void gtpy_resolved_release(gtpy_resolved *r)
{
    if (r->has_preset)
        gts_preset_release(&r->preset);
    r->has_preset = false;
    r->spec.preset = NULL;
}
/* The fill value as one element of the spec's dtype (ones: 1). */
int gtpy_request_fill_item(const gtpy_request *r, gts_dtype dtype, unsigned char item[16]);

/* A storage of the GPU kind needs a device that plays the GPU: where there
 * is none, NotImplementedError with the reason, naming what asked for the
 * GPU. */
int gtpy_check_gpu(const gtpy_request *r, const gts_storage_spec *spec);

#endif
