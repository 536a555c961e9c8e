/* The host device, (GTS_DL_CPU, 0) (device_host.c); not installed.
 *
 * Its memory is the host allocator's (host_memory.h); its strided fill and
 * copy are the kernels of gtstore/kernels.h; every transfer is a memmove;
 * everything has completed when a call returns. The same operations but
 * allocation serve the other devices whose memory is host memory (the
 * emulated device's managed and pinned memory, device_emulated.c). */
#ifndef GTSTORE_DEVICE_HOST_H
#define GTSTORE_DEVICE_HOST_H

#include "gtstore/device.h"

extern const gts_device_ops gts__device_host;

int gts__host_device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                           gts_error *err);
void gts__host_device_free(const gts_device_ops *dev, void *block, int64_t size);
int gts__host_move(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                   gts_stream stream, gts_error *err);
int gts__host_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                   const int64_t *strides, int64_t itemsize, const void *item,
                   gts_stream stream, gts_error *err);
int gts__host_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                   const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                   int64_t itemsize, gts_stream stream, gts_error *err);
int gts__host_synchronize(const gts_device_ops *dev, gts_stream stream, gts_error *err);

/* The host's operations but allocation, shared by the devices whose memory
 * is host memory; with the host allocator's alloc and free. */
#define GTS__HOST_KERNELS                                                                      \
    .host_accessible = true, .ctx = NULL, .copy_to_device = gts__host_move,                    \
    .copy_to_host = gts__host_move, .copy_within = gts__host_move, .fill = gts__host_fill,      \
    .copy = gts__host_copy, .synchronize = gts__host_synchronize, .stream_create = NULL,        \
    .stream_destroy = NULL
#define GTS__HOST_OPERATIONS .alloc = gts__host_device_alloc, .free = gts__host_device_free, \
                             GTS__HOST_KERNELS

#endif
