/* Fortran's C descriptors (CFI_cdesc_t, Fortran 2018) and storages: the
 * dtype a descriptor's type code means, a Fortran pointer set over a
 * storage with gtstore's bounds convention, and a storage over the memory
 * a descriptor describes (any section, any lower bounds, no copy). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "gtsf.h"

static bool type_in(CFI_type_t type, const CFI_type_t *list, int n)
{
    for (int i = 0; i < n; ++i)
        if (type == list[i])
            return true;
    return false;
}

/* The kind of element a descriptor's type code names: the codes of one kind
 * differ in size only, which elem_len gives (several codes may be equal on a
 * platform, e.g. CFI_type_long and CFI_type_int64_t, so no switch). */
int gtsf_dtype_of(const CFI_cdesc_t *desc, gts_dtype *out, gts_error *err)
{
    static const CFI_type_t ints[] = {
        CFI_type_signed_char, CFI_type_short, CFI_type_int, CFI_type_long, CFI_type_long_long,
        CFI_type_size_t, CFI_type_int8_t, CFI_type_int16_t, CFI_type_int32_t, CFI_type_int64_t,
        CFI_type_intmax_t, CFI_type_intptr_t, CFI_type_ptrdiff_t};
    static const CFI_type_t floats[] = {CFI_type_float, CFI_type_double};
    static const CFI_type_t complexes[] = {CFI_type_float_Complex, CFI_type_double_Complex};
    char kind;
    if (type_in(desc->type, ints, (int)(sizeof ints / sizeof *ints)))
        kind = GTS_KIND_INT;
    else if (type_in(desc->type, floats, (int)(sizeof floats / sizeof *floats)))
        kind = GTS_KIND_FLOAT;
    else if (type_in(desc->type, complexes, (int)(sizeof complexes / sizeof *complexes)))
        kind = GTS_KIND_COMPLEX;
    else if (desc->type == CFI_type_Bool)
        kind = GTS_KIND_BOOL;
    else
        return gts_error_set(err, GTS_ETYPE,
                             "array: C descriptor type code %d is no type gtstore stores "
                             "(integer, real, complex of C kinds, logical(c_bool))",
                             (int)desc->type);
    if (desc->elem_len > 16)
        return gts_error_set(err, GTS_ETYPE, "array: element length %zu bytes",
                             (size_t)desc->elem_len);
    return gts_dtype_make(kind, (int)desc->elem_len, out, err);
}

/* Points the Fortran pointer `pointer` (its type and rank declared by the
 * caller) at the host side of `storage`: extents and byte strides are the
 * storage's, and each lower bound is 1 - the lower halo, so that the first
 * domain point is index 1 and the halo is 1-h .. 0 (docs/fortran.md). */
int gtsf_set_pointer(const gts_storage *storage, CFI_cdesc_t *pointer, gts_error *err)
{
    gts_dtype dtype;
    int rc = gtsf_dtype_of(pointer, &dtype, err);
    if (rc)
        return rc;
    if (!gts_dtype_equal(dtype, storage->dtype))
        return gts_error_set(err, GTS_ETYPE, "pointer: declared %s, the field holds %s",
                             gts_dtype_name(dtype), gts_dtype_name(storage->dtype));
    if (pointer->rank != storage->ndim)
        return gts_error_set(err, GTS_EINVAL, "pointer: rank %d, the field has %d dimensions",
                             (int)pointer->rank, storage->ndim);
    void *data = gts_storage_data(storage);
    if (!data && gts_storage_size(storage) > 0)
        return gts_error_set(err, GTS_EINVAL,
                             "field: its memory is on the device only (no host side); use "
                             "gts_device_pointer");
    for (int d = 0; d < storage->ndim; ++d)
        if (storage->strides[d] % storage->dtype.itemsize)
            return gts_error_set(err, GTS_EINVAL,
                                 "field: stride %lld bytes in dimension %d is no multiple of "
                                 "the element (%d bytes): Fortran cannot point at it",
                                 (long long)storage->strides[d], d + 1,
                                 (int)storage->dtype.itemsize);
    pointer->base_addr = data;
    for (int d = 0; d < storage->ndim; ++d) {
        pointer->dim[d].lower_bound = 1 - storage->halo[d].lower;
        pointer->dim[d].extent = storage->shape[d];
        pointer->dim[d].sm = storage->strides[d];
    }
    return GTS_OK;
}

/* A storage over the elements `array` describes, on the host or (options'
 * device GPU) on the device that plays the GPU: the address in the
 * descriptor is then a device address (!$acc host_data use_device). The
 * descriptor's lower bounds play no part: the storage's index 0 is the
 * array's first element, and its halo is the caller's. */
int gtsf_wrap(const CFI_cdesc_t *array, const gtsf_options *options, gts_storage **out,
              gts_error *err)
{
    gts_dtype dtype;
    int rc = gtsf_dtype_of(array, &dtype, err);
    if (rc)
        return rc;
    if (!array->base_addr)
        return gts_error_set(err, GTS_EINVAL, "array: not allocated or not associated");
    int64_t shape[CFI_MAX_RANK], strides[CFI_MAX_RANK];
    for (int d = 0; d < array->rank; ++d) {
        shape[d] = array->dim[d].extent;
        strides[d] = array->dim[d].sm;
    }
    gts_storage_spec spec;
    gts_preset preset;
    bool has_preset;
    rc = gtsf_spec_make(options, array->rank, shape, dtype, &spec, &preset, &has_preset, err);
    if (rc)
        return rc;
    /* The device argument alone says where the memory is (a GPU preset only
     * lends its layout and alignment to host memory). */
    const gts_device_ops *device = gts_device_host();
    spec.has_device = true;
    spec.device = options->device == GTS_DEVICE_GPU ? GTS_DEVICE_GPU : GTS_DEVICE_CPU;
    if (spec.device == GTS_DEVICE_GPU)
        rc = gts_device_gpu(&device, err);
    gts_storage *storage = NULL;
    if (!rc) {
        storage = malloc(sizeof *storage);
        rc = storage ? GTS_OK : gts_error_set(err, GTS_ENOMEM, "out of memory for a handle");
    }
    if (!rc)
        rc = gts_storage_wrap_memory(&spec, device, array->base_addr, strides,
                                     options->readonly != 0, NULL, NULL, storage, err);
    if (has_preset)
        gts_preset_release(&preset);
    if (rc) {
        free(storage);
        return rc;
    }
    *out = storage;
    return GTS_OK;
}
