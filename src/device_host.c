/* The host device (device_host.h). */
#include "device_host.h"

#include <string.h>

#include "gtstore/kernels.h"
#include "host_memory.h"

/* ---- the host device -------------------------------------------------------
 * The host allocator (host_memory.c) and the kernels of kernels.c; every
 * "transfer" is a memmove. There is one stream, and everything has completed
 * when a call returns. */

int gts__host_device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                           gts_error *err)
{
    (void)dev;
    return gts__host_alloc(size, flags, out, err);
}

void gts__host_device_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)dev;
    gts__host_free(block, size);
}

int gts__host_move(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                   gts_stream stream, gts_error *err)
{
    (void)dev, (void)stream, (void)err;
    if (bytes > 0)
        memmove(dst, src, (size_t)bytes);
    return GTS_OK;
}

int gts__host_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                   const int64_t *strides, int64_t itemsize, const void *item,
                   gts_stream stream, gts_error *err)
{
    (void)dev, (void)stream;
    return gts_fill(data, ndim, shape, strides, itemsize, item, err);
}

int gts__host_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                   const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                   int64_t itemsize, gts_stream stream, gts_error *err)
{
    (void)dev, (void)stream;
    return gts_copy(dst, dst_strides, src, src_strides, ndim, shape, itemsize, err);
}

int gts__host_synchronize(const gts_device_ops *dev, gts_stream stream, gts_error *err)
{
    (void)dev, (void)stream, (void)err;
    return GTS_OK;
}

const gts_device_ops gts__device_host = {.id = {GTS_DL_CPU, 0}, .name = "cpu",
                                         GTS__HOST_OPERATIONS, .kind = GTS_MEMORY_HOST,
                                         .engine = GTS_ENGINE_NUMPY};

const gts_device_ops *gts_device_host(void)
{
    return &gts__device_host;
}
