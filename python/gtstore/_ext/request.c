/* Allocation requests: the arguments of an allocation or wrap call resolved
 * into a libgtstore spec. Each parameter comes from the first of: the
 * explicit keyword, the preset (resolved by libgtstore), the template or
 * data, the fallback. gtstore.arrays and the Storage API share this. */
#include "request.h"
#include "array_interface.h"
#include "convert.h"
#include "errors.h"
#include "source.h"
#include "storage.h"

#include <stdio.h>
#include <string.h>

/* ---- conversion into a spec ------------------------------------------------------
 * Each argument becomes C values in the spec; libgtstore resolves it
 * (gts_storage_spec_resolve): nothing here chooses a layout, a label, a
 * halo or an alignment. */

static int convert_preset(const gtpy_request *r, gtpy_resolved *out)
{
    out->has_preset = false;
    if (!r->preset)
        return 0;
    if (!PyUnicode_Check(r->preset)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a preset name (str), got %.200R",
                     r->preset_param, r->preset);
        return -1;
    }
    const char *name = gtpy_text(r->preset, r->preset_param);
    if (!name)
        return -1;
    if (gts_preset_lookup(name, &out->preset, NULL) == 0) {
        out->has_preset = true;
        return 0;
    }
    PyErr_Format(gtpy_UnknownPresetError,
                 "%s: storage preset %.200R is not registered "
                 "(gtstore.arrays.presets() lists those that are)",
                 r->preset_param, r->preset);
    return -1;
}

static int convert_dtype(const gtpy_request *r, const gtpy_source *src, gtpy_dtype *dtype)
{
    if (r->dtype)
        return gtpy_dtype_parse(r->dtype, dtype);
    dtype->nsub = 0;
    if (src->array) {
        if (!src->dtype_known && !src->byteswapped)
            return gtpy_source_dtype_error(src);
        dtype->base = src->dtype;
        return 0;
    }
    dtype->base = (gts_dtype){GTS_KIND_FLOAT, 8};
    return 0;
}

/* A shape of 3 extents in I, J, K order for a field of fewer cartesian
 * dims given as dims= (gtstore.* only: GT4Py's keywords take none): the
 * extents of those dims. */
static int select_ijk_shape(const gtpy_request *r, int *ndim, int64_t *shape)
{
    gts_dim dims[GTS_MAX_NDIM];
    int n;
    if (!r->storage_api || !r->dims || *ndim != 3)
        return 0;
    if (gtpy_dims(r->dims, r->dims_param, &n, dims) < 0)
        return -1;
    if (!gts_dims_take_ijk(n, dims))
        return 0;
    int64_t ijk[3] = {shape[0], shape[1], shape[2]};
    *ndim = n;
    return gts_ijk_select(n, dims, sizeof *shape, ijk, shape, NULL);
}

/* The full shape: the base shape and the subarray's trailing dims. */
static int convert_shape(const gtpy_request *r, const gtpy_source *src, const gtpy_dtype *dtype,
                         int *ndim, int *nbase, int64_t *shape)
{
    if (src->array) {
        *ndim = src->ndim;
        memcpy(shape, src->shape, (size_t)src->ndim * sizeof *shape);
    } else if (gtpy_shape(r->shape, "shape", ndim, shape) < 0 ||
               select_ijk_shape(r, ndim, shape) < 0) {
        return -1;
    }
    gts_error err;
    if (gts_subarray_shape(ndim, shape, dtype->nsub, dtype->sub_shape, r->source_is_data, nbase,
                           &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

/* Labels for the base dims (the rest left to the library), or for all. */
static int convert_dims(const gtpy_request *r, int ndim, int nbase, gts_storage_spec *spec)
{
    int n;
    if (gtpy_dims(r->dims, r->dims_param, &n, spec->dims) < 0 ||
        gtpy_check_entries(r->dims_param, r->dims, n, "labels", nbase, ndim) < 0)
        return -1;
    for (int d = n; d < ndim; ++d)
        spec->dims[d] = GTS_DIM_NEXT;
    spec->has_dims = true;
    return 0;
}

/* The labels of an array's data interface entry (src->entry_dims), one
 * per base dim or per dim: else a ValueError naming the entry. */
static int entry_dims(const gtpy_source *src, int nbase, gtpy_resolved *out)
{
    int n = src->entry_ndims;
    if (n != nbase && n != src->ndim) {
        PyErr_Format(PyExc_ValueError, "%s['dims']: %d labels for %d dimensions",
                     src->entry_name, n, nbase);
        return -1;
    }
    memcpy(out->like_dims, src->entry_dims, (size_t)n * sizeof *out->like_dims);
    for (int d = n; d < src->ndim; ++d)
        out->like_dims[d] = GTS_DIM_NEXT;
    out->like.dims = out->like_dims;
    return 0;
}

/* The labels an array declares: its data interface entry's, else
 * __gt_dims__ if they are one per base dim (the rest left to the
 * library); else none. */
static int source_dims(const gtpy_request *r, const gtpy_source *src, int nbase,
                       gtpy_resolved *out)
{
    if (src->entry)
        return src->entry_ndims < 0 ? 0 : entry_dims(src, nbase, out);
    PyObject *labels; /* as given; one that cannot be read is none, as an optional attribute */
    if (gtpy_gt_dims(r->source, &labels) < 0)
        PyErr_Clear();
    if (!labels)
        return 0;
    int n;
    int rc = gtpy_dims(labels, r->source_is_data ? "data.__gt_dims__" : "a.__gt_dims__", &n,
                       out->like_dims);
    Py_DECREF(labels);
    if (rc < 0)
        return -1;
    if (n != nbase) /* labels that do not fit the array are not its dims */
        return 0;
    for (int d = n; d < src->ndim; ++d)
        out->like_dims[d] = GTS_DIM_NEXT;
    out->like.dims = out->like_dims;
    return 0;
}

/* The halo of an array's data interface entry, for the Storage API (a
 * template's placement, which gtstore.arrays does not take). */
static int entry_halo(const gtpy_request *r, const gtpy_source *src, int nbase,
                      gtpy_resolved *out)
{
    if (!src->entry || !r->storage_api || r->halo)
        return 0;
    PyObject *halo = gtpy_mapping_entry(src->entry, "halo");
    char param[64];
    snprintf(param, sizeof param, "%s['halo']", src->entry_name);
    int rc = halo && halo != Py_None ? gtpy_halo(halo, param, src->ndim, nbase, out->like_halo)
                                     : PyErr_Occurred() ? -1 : 0;
    if (halo && halo != Py_None && rc == 0)
        out->like.halo = out->like_halo;
    Py_XDECREF(halo);
    return rc;
}

/* The template or data: a storage gives its layout and dims, and to the
 * Storage API also its halo, aligned point and alignment; another array
 * its strides and the labels it declares. */
static int convert_template(const gtpy_request *r, const gtpy_source *src, int nbase,
                            gtpy_resolved *out)
{
    if (!src->array)
        return 0;
    out->spec.like = &out->like;
    if (src->storage) {
        /* an imported array (another library's memory) is an array: its
         * strides, dtype and device, and the labels it declares */
        gtpy_storage_load(src->storage, &out->like_storage);
        gts_template_from_storage(&out->like_storage, r->storage_api && !src->imported,
                                  &out->like);
        if (out->like_storage.ndim != nbase || src->imported)
            out->like.dims = NULL; /* a subarray's dims in the data: labelled anew */
        if (entry_halo(r, src, nbase, out) < 0)
            return -1;
        return src->imported && !r->dims ? source_dims(r, src, nbase, out) : 0;
    }
    out->like = (gts_template){.ndim = src->ndim, .shape = src->shape, .strides = src->strides,
                               .itemsize = src->dtype_known ? src->dtype.itemsize
                                           : src->have_view ? src->view.itemsize : 0};
    return r->dims ? 0 : source_dims(r, src, nbase, out);
}

/* layout= runs in the library once the dims are resolved: a string names
 * dims, and a callable receives them. */
static int python_layout(int ndim, const gts_dim *dims, int *layout, void *ctx, gts_error *err)
{
    const gtpy_resolved *out = ctx;
    if (gtpy_layout(out->layout, out->layout_param, ndim, dims, out->spec.nsub,
                    out->layout_ijk, layout) == 0)
        return GTS_OK;
    return gts_error_set(err, GTS_EINVAL, "%s: see the Python exception", out->layout_param);
}

/* alignment_size= in bytes; alignment= in elements, which libgtstore turns
 * into bytes with the resolved dtype (and checks against alignment_size=). */
static int convert_alignment(const gtpy_request *r, gts_storage_spec *spec)
{
    if (r->alignment_size &&
        gtpy_alignment(r->alignment_size, "alignment_size", &spec->alignment_size) < 0)
        return -1;
    if (!r->alignment)
        return 0;
    if (gtpy_int(r->alignment, "alignment", &spec->alignment) < 0)
        return -1;
    if (spec->alignment >= 1)
        return 0;
    PyErr_Format(PyExc_ValueError, "alignment: %lld elements is not positive",
                 (long long)spec->alignment);
    return -1;
}

/* request.h */
int gtpy_request_device(PyObject *value, const char *param, gts_device *out)
{
    if (strcmp(param, "gpu") != 0)
        return gtpy_device(value, true, out);
    if (!PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "gpu: expected a bool, got %.200R", value);
        return -1;
    }
    *out = value == Py_True ? GTS_DEVICE_GPU : GTS_DEVICE_CPU;
    return 0;
}

/* request.h */
int gtpy_request_asked_device(const gtpy_request *r, gts_device *out)
{
    *out = GTS_DEVICE_CPU;
    if (r->device)
        return gtpy_request_device(r->device, r->device_param, out);
    const char *name =
        r->preset && PyUnicode_Check(r->preset) ? PyUnicode_AsUTF8(r->preset) : NULL;
    gts_preset preset;
    if (name && gts_preset_lookup(name, &preset, NULL) == 0) {
        *out = preset.device;
        gts_preset_release(&preset);
    }
    PyErr_Clear(); /* a preset= that names none is convert_preset's error */
    return 0;
}

static int convert_device(const gtpy_request *r, gts_storage_spec *spec)
{
    if (!r->device)
        return 0;
    if (gtpy_request_device(r->device, r->device_param, &spec->device) < 0)
        return -1;
    spec->has_device = true;
    return 0;
}

/* managed=: who keeps a GPU storage's host and device sides equal. None or
 * False: nobody, device memory only; "gt4py" (the default): gtstore;
 * "cuda": CUDA's managed memory. The CPU ignores it. */
static int convert_managed(const gtpy_request *r, gts_storage_spec *spec)
{
    static const char *const kinds[] = {"gt4py", "cuda"};
    static const gts_managed modes[] = {GTS_MANAGED_GT4PY, GTS_MANAGED_CUDA};
    if (!r->managed)
        return 0;
    if (r->managed == Py_None || r->managed == Py_False) {
        spec->managed = GTS_MANAGED_NONE;
        return 0;
    }
    int which = gtpy_choice(r->managed, "managed", kinds, 2, "None, False, 'gt4py' or 'cuda'");
    if (which < 0)
        return -1;
    spec->managed = modes[which];
    return 0;
}

/* The field's dims where they take IJK-ordered halo= and aligned_index=
 * (gtstore.* only: GT4Py's keywords take none), else NULL. */
static const gts_dim *ijk_dims(const gtpy_request *r, gtpy_resolved *out, gts_dim *dims)
{
    if (!r->storage_api || gts_storage_spec_dims(gtpy_spec(out), dims, NULL) != 0)
        return NULL; /* dims that do not resolve fail with their reason later */
    return gts_dims_take_ijk(out->spec.ndim, dims) ? dims : NULL;
}

static int convert_halo(const gtpy_request *r, int nbase, const gts_dim *ijk,
                        gts_storage_spec *spec)
{
    if (!r->halo)
        return 0;
    int rc = ijk ? gtpy_halo_ijk(r->halo, "halo", spec->ndim, ijk, spec->halo)
                 : gtpy_halo(r->halo, "halo", spec->ndim, nbase, spec->halo);
    spec->has_halo = rc == 0;
    return rc;
}

/* Entries for the base dims (the rest are 0), all, or 3 in IJK order. */
static int convert_aligned_index(const gtpy_request *r, int nbase, const gts_dim *ijk,
                                 gts_storage_spec *spec)
{
    int n = 0, ndim = spec->ndim;
    int64_t given[GTS_MAX_NDIM];
    gts_error err;
    if (!r->aligned_index)
        return 0;
    if (gtpy_int_tuple(r->aligned_index, "aligned_index", GTS_MAX_NDIM, &n, given) < 0 ||
        gtpy_check_entries_ijk("aligned_index", r->aligned_index, n, "entries", nbase, ndim,
                               ijk != NULL) < 0)
        return -1;
    if (ijk && n == 3 && ndim != 3) {
        if (gts_index_select_ijk(ndim, ijk, "aligned_index", given, spec->aligned_index,
                                 &err) != 0)
            return gtpy_raise_param("aligned_index", &err);
    } else {
        memcpy(spec->aligned_index, given, (size_t)n * sizeof *given);
        for (int d = n; d < ndim; ++d)
            spec->aligned_index[d] = 0;
    }
    spec->has_aligned_index = true;
    return 0;
}

/* gtpy_request_spec, less the preset: every argument converted into the
 * spec, which libgtstore resolves. */
static int request_spec(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out)
{
    gtpy_dtype dtype;
    int ndim, nbase;
    int64_t shape[GTS_MAX_NDIM];
    gts_error err;
    if (convert_dtype(r, src, &dtype) < 0 ||
        convert_shape(r, src, &dtype, &ndim, &nbase, shape) < 0)
        return -1;
    gts_storage_spec *spec = &out->spec;
    if (gts_storage_spec_init(spec, ndim, shape, dtype.base, &err) != 0)
        return gtpy_raise(&err);
    spec->nsub = ndim - nbase;
    if (r->layout) {
        out->layout = r->layout;
        out->layout_param = r->layout_param;
        out->layout_ijk = r->storage_api;
        spec->layout_fn = python_layout;
        spec->layout_ctx = out;
    }
    if ((r->dims && convert_dims(r, ndim, nbase, spec) < 0) ||
        convert_template(r, src, nbase, out) < 0)
        return -1;
    gts_dim dims[GTS_MAX_NDIM];
    const gts_dim *ijk = ijk_dims(r, out, dims);
    if (convert_halo(r, nbase, ijk, spec) < 0 || convert_alignment(r, spec) < 0 ||
        convert_device(r, spec) < 0 || convert_managed(r, spec) < 0 ||
        convert_aligned_index(r, nbase, ijk, spec) < 0)
        return -1;
    gtpy_spec(out);
    return 0;
}

int gtpy_request_spec(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out)
{
    if (convert_preset(r, out) < 0)
        return -1;
    if (request_spec(r, src, out) < 0) {
        gtpy_resolved_release(out);
        return -1;
    }
    return 0;
}

int gtpy_request_resolve(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out,
                         gts_geometry *geometry)
{
    gts_error err;
    if (gtpy_request_spec(r, src, out) < 0)
        return -1;
    if (gts_storage_spec_resolve(gtpy_spec(out), geometry, &err) != 0) {
        gtpy_resolved_release(out);
        return gtpy_raise(&err);
    }
    return 0;
}

int gtpy_request_fill_item(const gtpy_request *r, gts_dtype dtype, unsigned char item[16])
{
    gts_scalar value = {.kind = GTS_SCALAR_INT, .value.i = 1}; /* ones */
    if (r->fill == FILL_VALUE && gtpy_scalar(r->fill_value, "fill_value", &value) < 0)
        return -1;
    /* A Python int beyond 64 bits arrives as a float, which loses digits:
     * no integer dtype can hold it, whatever the rounding says. NumPy
     * converts an int to bool through a C long, so for bool any int beyond
     * int64 is out of bounds too. */
    bool integer_dtype = dtype.kind == GTS_KIND_INT || dtype.kind == GTS_KIND_UINT;
    bool beyond_int64 = value.kind == GTS_SCALAR_FLOAT ||
                        (dtype.kind == GTS_KIND_BOOL && value.kind == GTS_SCALAR_UINT);
    if ((integer_dtype || dtype.kind == GTS_KIND_BOOL) && beyond_int64 &&
        PyLong_Check(r->fill_value) && !PyBool_Check(r->fill_value)) {
        PyErr_Format(PyExc_OverflowError, "fill_value: %.80R is out of bounds for %s",
                     r->fill_value, gts_dtype_name(dtype));
        return -1;
    }
    gts_error err;
    if (gts_scalar_store(value, dtype, item, &err) != 0)
        return gtpy_raise_param("fill_value", &err);
    return 0;
}

/* request.h */
int gtpy_check_gpu(const gtpy_request *r, const gts_storage_spec *spec)
{
    const gts_device_ops *gpu;
    gts_error err;
    if (gts_storage_spec_device(spec) == GTS_DEVICE_CPU || gts_device_gpu(&gpu, &err) == 0)
        return 0;
    if (r->device)
        PyErr_Format(PyExc_NotImplementedError,
                     "%s: %.200R asks for a GPU, and there is none here (%s); "
                     "gtstore.use_gpu('emulated') plays one for tests",
                     r->device_param, r->device, err.message);
    else if (r->preset)
        PyErr_Format(PyExc_NotImplementedError,
                     "%s: preset %.200R is for the GPU, and there is none here (%s); pass "
                     "device='cpu' for host memory with its layout and alignment, or call "
                     "gtstore.use_gpu('emulated')",
                     r->preset_param, r->preset, err.message);
    else /* the template's or data's device kind */
        PyErr_Format(PyExc_NotImplementedError,
                     "%s: a storage on the GPU, and there is no GPU to allocate on here (%s); "
                     "pass device='cpu' for a host copy",
                     r->source_is_data ? "data" : "a", err.message);
    return -1;
}
