/* Storages over memory others allocated (gtstore/wrap.h): the memory is
 * wrapped in a buffer header, and gts_storage_wrap makes and checks the
 * storage. */
#include "gtstore/wrap.h"

#include "gtstore/geometry.h"
#include "buffer_wrap.h"

int gts_storage_wrap_memory(const gts_storage_spec *spec, const gts_device_ops *device,
                            void *element0, const int64_t *strides, bool readonly,
                            gts_release_fn release, void *ctx, gts_storage *out, gts_error *err)
{
    if (!spec || !device)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", !spec ? "spec" : "device");
    gts_buffer *buffer;
    int64_t offset;
    /* No release yet: a failed wrap leaves ctx to the caller. */
    int rc = gts_buffer_wrap_elements(device, element0, spec->ndim, spec->shape, strides,
                                      spec->dtype.itemsize, NULL, NULL, &buffer, &offset, err);
    if (rc)
        return rc;
    rc = gts_storage_wrap(spec, buffer, offset, strides, readonly, out, err);
    if (!rc) /* the storage owns ctx from here on */
        gts__buffer_set_release(buffer, release, ctx);
    gts_buffer_release(buffer);
    return rc;
}

/* The two sides of a mirrored buffer put every element at the same offset:
 * equal strides, except along dims of extent 1, which no offset uses, and
 * any strides for an array of no elements. */
static int check_same_strides(int ndim, const int64_t *shape, const int64_t *device_strides,
                              const int64_t *host_strides, gts_error *err)
{
    if (ndim > 0 && (!device_strides || !host_strides))
        return gts_error_set(err, GTS_EINVAL, "strides: NULL");
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return GTS_OK;
    for (int d = 0; d < ndim; ++d)
        if (shape[d] > 1 && device_strides[d] != host_strides[d])
            return gts_error_set(err, GTS_EINVAL,
                                 "device_data: stride %lld bytes in dimension %d, and data's is "
                                 "%lld: the host and device sides of a storage have one layout",
                                 (long long)device_strides[d], d, (long long)host_strides[d]);
    return GTS_OK;
}

int gts_storage_wrap_mirrored(const gts_storage_spec *spec, const gts_device_ops *device,
                              void *device_element0, const int64_t *device_strides,
                              void *host_element0, const int64_t *host_strides, bool readonly,
                              gts_sync_state state, gts_release_fn release, void *ctx,
                              gts_storage *out, gts_error *err)
{
    if (!spec || !device)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", !spec ? "spec" : "device");
    if (device->host_accessible)
        return gts_error_set(err, GTS_EINVAL,
                             "device_data: memory on '%s', which the host reaches: it needs no "
                             "host side (wrap it alone)",
                             device->name);
    if (spec->managed != GTS_MANAGED_GT4PY)
        return gts_error_set(err, GTS_EINVAL,
                             "managed: a host and a device buffer wrapped together are kept in "
                             "sync by gtstore ('gt4py')");
    if (!gts_sync_state_name(state))
        return gts_error_set(err, GTS_EINVAL, "sync_state: %d is no gts_sync_state", (int)state);
    int rc = check_same_strides(spec->ndim, spec->shape, device_strides, host_strides, err);
    if (rc)
        return rc;
    gts_buffer *buffer;
    int64_t offset;
    if ((rc = gts_buffer_wrap_elements(device, device_element0, spec->ndim, spec->shape,
                                       device_strides, spec->dtype.itemsize, NULL, NULL, &buffer,
                                       &offset, err)))
        return rc;
    /* The host side starts as far before element 0 as the device side. An
     * empty array has no bytes on either side; the buffer's own address
     * stands in for a host side that is never read. */
    uintptr_t host = (uintptr_t)host_element0;
    if (gts_buffer_size(buffer) > 0 && (!host_element0 || host < (uint64_t)offset)) {
        gts_buffer_release(buffer);
        return gts_error_set(err, GTS_EINVAL,
                             "data: element 0 at %p cannot have elements %lld bytes before it",
                             host_element0, (long long)offset);
    }
    gts__buffer_wrap_host_side(buffer,
                               gts_buffer_size(buffer) > 0 ? (void *)(host - (uint64_t)offset)
                                                           : (void *)buffer,
                               state);
    rc = gts_storage_wrap(spec, buffer, offset, device_strides, readonly, out, err);
    if (!rc)
        gts__buffer_set_release(buffer, release, ctx);
    gts_buffer_release(buffer);
    return rc;
}

/* The byte offset of `address` from `base`, if it fits an int64_t. */
static bool offset_from(const void *address, const void *base, int64_t *out)
{
    uintptr_t a = (uintptr_t)address, b = (uintptr_t)base;
    uint64_t distance = a >= b ? a - b : b - a;
    if (distance > (uint64_t)INT64_MAX)
        return false;
    *out = a >= b ? (int64_t)distance : -(int64_t)distance;
    return true;
}

int gts_storage_wrap_in(const gts_storage_spec *spec, gts_buffer *buffer,
                        const void *device_element0, const int64_t *device_strides,
                        const void *host_element0, const int64_t *host_strides, bool readonly,
                        gts_storage *out, gts_error *err)
{
    if (!spec || !buffer)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", !spec ? "spec" : "buffer");
    if (!gts_buffer_mirrored(buffer))
        return gts_error_set(err, GTS_EINVAL,
                             "sync_state: the state of a storage without a host and a device "
                             "side, which has nothing to share");
    int rc = check_same_strides(spec->ndim, spec->shape, device_strides, host_strides, err);
    if (rc)
        return rc;
    int64_t offset, host_offset;
    if (!offset_from(device_element0, gts_buffer_data(buffer), &offset) ||
        !offset_from(host_element0, gts_buffer_host(buffer), &host_offset) ||
        offset != host_offset)
        return gts_error_set(err, GTS_EINVAL,
                             "sync_state: data (at %p) and device_data (at %p) are not the same "
                             "elements of the storage the state belongs to (its host side at "
                             "%p, its device side at %p)",
                             host_element0, device_element0, gts_buffer_host(buffer),
                             gts_buffer_data(buffer));
    return gts_storage_wrap(spec, buffer, offset, device_strides, readonly, out, err);
}
