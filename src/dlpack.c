#include "gtstore/dlpack.h"
#include "gtstore/wrap.h"

#include <stdlib.h>
#include <string.h>

#include "gtstore/sync.h"

/* ---- export ---------------------------------------------------------------
 * One block per export: the managed struct (either kind), the buffer
 * reference it holds, then shape and strides. */

typedef struct export_block {
    union {
        gts_dl_managed_versioned versioned;
        gts_dl_managed legacy;
    } managed; /* first: the deleter's argument is the block */
    gts_buffer *buffer;
    int64_t extents[]; /* shape[ndim], then strides[ndim] in elements */
} export_block;

static void free_block(export_block *block)
{
    gts_buffer_release(block->buffer);
    free(block);
}

static void delete_versioned(gts_dl_managed_versioned *self)
{
    free_block((export_block *)(void *)self);
}

static void delete_legacy(gts_dl_managed *self)
{
    free_block((export_block *)(void *)self);
}

/* Fills `tensor` for `storage`, shape and strides going into `block`. */
static int export_tensor(const gts_storage *storage, export_block **out, gts_dl_tensor **tensor,
                         bool versioned, bool host_side, gts_error *err)
{
    if (host_side && !gts_buffer_mirrored(storage->buffer) &&
        !gts_buffer_device(storage->buffer)->host_accessible)
        return gts_error_set(err, GTS_EINVAL,
                             "flags: GTS_DLPACK_HOST_SIDE needs a host side: a mirrored "
                             "buffer's, or memory the host reaches (managed, pinned)");
    int n = storage->ndim;
    int64_t itemsize = storage->dtype.itemsize;
    for (int d = 0; d < n; ++d)
        if (storage->strides[d] % itemsize != 0)
            return gts_error_set(err, GTS_EINVAL,
                                 "strides: %lld bytes in dimension %d is not a multiple of the "
                                 "itemsize (%lld); DLPack counts strides in elements",
                                 (long long)storage->strides[d], d, (long long)itemsize);
    export_block *block = malloc(sizeof *block + 2 * (size_t)n * sizeof(int64_t));
    if (!block)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot export to DLPack");
    memset(&block->managed, 0, sizeof block->managed);
    block->buffer = gts_buffer_retain(storage->buffer);
    gts_dl_tensor *t = versioned ? &block->managed.versioned.dl_tensor
                                 : &block->managed.legacy.dl_tensor;
    int64_t *shape = block->extents, *strides = block->extents + n;
    for (int d = 0; d < n; ++d) {
        shape[d] = storage->shape[d];
        strides[d] = storage->strides[d] / itemsize;
    }
    /* element 0 on the side exported, whose device the tensor names */
    char *base = host_side ? gts_buffer_host(storage->buffer)
                           : gts_buffer_data(storage->buffer); /* NULL: empty wrapped memory */
    gts_device_id device = host_side ? gts_device_host()->id
                                     : gts_buffer_device(storage->buffer)->id;
    t->data = base ? base + storage->offset : NULL;
    t->device = (gts_dl_device){device.type, device.id};
    t->ndim = n;
    gts_dtype_to_dlpack(storage->dtype, &t->dtype.code, &t->dtype.bits, &t->dtype.lanes);
    t->shape = n ? shape : NULL;
    t->strides = n ? strides : NULL;
    t->byte_offset = 0;
    *out = block;
    *tensor = t;
    return GTS_OK;
}

int gts_storage_to_dlpack(const gts_storage *storage, uint64_t flags,
                          gts_dl_managed_versioned **out, gts_error *err)
{
    export_block *block;
    gts_dl_tensor *tensor;
    bool host_side = (flags & GTS_DLPACK_HOST_SIDE) != 0;
    int rc = export_tensor(storage, &block, &tensor, true, host_side, err);
    if (rc)
        return rc;
    gts_dl_managed_versioned *m = &block->managed.versioned;
    m->version = (gts_dl_version){GTS_DLPACK_MAJOR, GTS_DLPACK_MINOR};
    m->manager_ctx = block;
    m->deleter = delete_versioned;
    m->flags = (flags & GTS_DLPACK_IS_COPIED) | (storage->readonly ? GTS_DLPACK_READ_ONLY : 0);
    *out = m;
    return GTS_OK;
}

int gts_storage_to_dlpack_legacy(const gts_storage *storage, gts_dl_managed **out,
                                 gts_error *err)
{
    if (storage->readonly)
        return gts_error_set(err, GTS_EREADONLY,
                             "max_version: a read-only storage needs DLPack 1.0 or later, which "
                             "can mark it read-only");
    export_block *block;
    gts_dl_tensor *tensor;
    int rc = export_tensor(storage, &block, &tensor, false, false, err);
    if (rc)
        return rc;
    gts_dl_managed *m = &block->managed.legacy;
    m->manager_ctx = block;
    m->deleter = delete_legacy;
    *out = m;
    return GTS_OK;
}

/* ---- import ------------------------------------------------------------------ */

static void release_versioned(void *ctx)
{
    gts_dl_managed_versioned *tensor = ctx;
    if (tensor->deleter)
        tensor->deleter(tensor);
}

static void release_legacy(void *ctx)
{
    gts_dl_managed *tensor = ctx;
    if (tensor->deleter)
        tensor->deleter(tensor);
}

/* Byte strides of the tensor (C order when it gives none). */
static int byte_strides(const gts_dl_tensor *t, int64_t itemsize, int64_t *strides,
                        gts_error *err)
{
    if (!t->strides)
        return gts_strides_contiguous(t->ndim, t->shape, itemsize, strides, err);
    for (int d = t->ndim - 1; d >= 0; --d)
        if (gts_mul_overflow(t->strides[d], itemsize, &strides[d]))
            return gts_error_set(err, GTS_EOVERFLOW,
                                 "strides: %lld elements in dimension %d overflow in bytes",
                                 (long long)t->strides[d], d);
    return GTS_OK;
}

/* Whether the tensor has elements, which need data. */
static bool has_elements(const gts_dl_tensor *t)
{
    for (int d = 0; d < t->ndim; ++d)
        if (t->shape[d] == 0)
            return false;
    return true;
}

/* The address of element 0, data + byte_offset, as an integer: a pointer
 * moved outside the address space is undefined (and an empty tensor may
 * have no data, which stays NULL). */
static int element0_address(const gts_dl_tensor *t, uintptr_t *element0, gts_error *err)
{
    if (t->byte_offset > (uint64_t)INT64_MAX)
        return gts_error_set(err, GTS_EOVERFLOW, "byte_offset: %llu does not fit in 64 bits",
                             (unsigned long long)t->byte_offset);
    if (!t->data && has_elements(t))
        return gts_error_set(err, GTS_EINVAL, "data: NULL for a tensor with elements");
    *element0 = (uintptr_t)t->data;
    if (t->data && __builtin_add_overflow(*element0, t->byte_offset, element0))
        return gts_error_set(err, GTS_EOVERFLOW,
                             "byte_offset: %llu bytes past data leave the address space",
                             (unsigned long long)t->byte_offset);
    return GTS_OK;
}

static int import_tensor(const gts_dl_tensor *t, bool readonly, gts_release_fn release,
                         void *ctx, const gts_storage_spec *options, gts_storage *out,
                         gts_error *err)
{
    const gts_device_ops *device; /* pinned memory is host memory to us */
    int rc = t->device.device_type == GTS_DL_CPU || t->device.device_type == GTS_DL_CUDA_HOST
                 ? (device = gts_device_host(), GTS_OK)
                 : gts_device_get((gts_device_id){t->device.device_type, t->device.device_id},
                                  &device, err);
    if (rc == GTS_ENOTFOUND) { /* a device this machine lacks: not reachable here */
        if (err)
            err->code = GTS_ENOTSUP;
        return GTS_ENOTSUP;
    }
    if (rc)
        return rc;
    if (t->ndim < 0 || t->ndim > GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [0, %d]", (int)t->ndim,
                             GTS_MAX_NDIM);
    if (t->ndim > 0 && !t->shape)
        return gts_error_set(err, GTS_EINVAL, "shape: NULL for %d dimensions", (int)t->ndim);
    gts_dtype dtype;
    rc = gts_dtype_from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes, &dtype, err);
    if (rc)
        return rc;
    for (int d = 0; d < t->ndim; ++d)
        if (t->shape[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "shape: negative extent %lld at position %d",
                                 (long long)t->shape[d], d);
    gts_storage_spec spec;
    if ((rc = gts_storage_spec_init(&spec, t->ndim, t->shape, dtype, err)))
        return rc;
    if (options) { /* its parameters, with the tensor's shape and dtype */
        gts_storage_spec given = *options;
        given.ndim = spec.ndim;
        given.dtype = dtype;
        memcpy(given.shape, spec.shape, (size_t)spec.ndim * sizeof *spec.shape);
        spec = given;
    }
    int64_t strides[GTS_MAX_NDIM];
    uintptr_t element0 = 0;
    if ((rc = byte_strides(t, dtype.itemsize, strides, err)) ||
        (rc = element0_address(t, &element0, err)))
        return rc;
    return gts_storage_wrap_memory(&spec, device, (void *)element0, strides, readonly, release,
                                   ctx, out, err);
}

int gts_storage_from_dlpack(gts_dl_managed_versioned *tensor, const gts_storage_spec *options,
                            gts_storage *out, gts_error *err)
{
    if (tensor->version.major != 1)
        return gts_error_set(err, GTS_ENOTSUP, "version: DLPack %u.%u is not supported (1.x is)",
                             (unsigned)tensor->version.major, (unsigned)tensor->version.minor);
    bool readonly = (tensor->flags & GTS_DLPACK_READ_ONLY) != 0;
    return import_tensor(&tensor->dl_tensor, readonly, release_versioned, tensor, options, out,
                         err);
}

int gts_storage_from_dlpack_legacy(gts_dl_managed *tensor, const gts_storage_spec *options,
                                   gts_storage *out, gts_error *err)
{
    return import_tensor(&tensor->dl_tensor, false, release_legacy, tensor, options, out, err);
}

/* ---- which side an export serves ------------------------------------------------ */

/* Whether the host reads `buffer` in place: a mirrored buffer's host side,
 * or memory the host reaches itself (managed, pinned). */
static bool has_host_side(const gts_buffer *buffer)
{
    return gts_buffer_mirrored(buffer) || gts_buffer_device(buffer)->host_accessible;
}

int gts_dlpack_serve_side(const gts_buffer *buffer, const int64_t *asked, int copy,
                          gts_dlpack_serve *out, gts_error *err)
{
    if (!buffer || !out)
        return gts_error_set(err, GTS_EINVAL, "buffer, out: NULL");
    if (copy < -1 || copy > 1) /* else read below as "a copy asked for" */
        return gts_error_set(err, GTS_EINVAL, "copy: %d is not 1, 0 or -1", copy);
    gts_device_id own = gts_buffer_device(buffer)->id;
    *out = GTS_DLPACK_SERVE_OWN;
    if (!asked || (asked[0] == own.type && asked[1] == own.id))
        return GTS_OK;
    bool cpu = asked[0] == GTS_DL_CPU && asked[1] == 0;
    if (cpu && (copy > 0 || (copy < 0 && !has_host_side(buffer)))) {
        *out = GTS_DLPACK_SERVE_HOST_COPY;
        return GTS_OK;
    }
    if (cpu && has_host_side(buffer)) {
        *out = GTS_DLPACK_SERVE_HOST_SIDE;
        return GTS_OK;
    }
    return gts_error_set(err, GTS_ENOTSUP,
                         "dl_device: (%lld, %lld) cannot be served%s; the storage is on (%d, %d)",
                         (long long)asked[0], (long long)asked[1],
                         cpu ? " without a copy (copy=False)" : "", (int)own.type, (int)own.id);
}
