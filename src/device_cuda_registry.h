/* CUDA's devices as the registry (device.c) sees them: device_cuda.c
 * answers, loading the driver on first use; not installed. The driver's
 * own declarations stay in device_cuda.h, for the device_cuda*.c files. */
#ifndef GTSTORE_DEVICE_CUDA_REGISTRY_H
#define GTSTORE_DEVICE_CUDA_REGISTRY_H

#include <stddef.h>

#include "gtstore/device.h"

/* The device of a CUDA type (GTS_DL_CUDA, GTS_DL_CUDA_HOST,
 * GTS_DL_CUDA_MANAGED) with the errors of gts_device_get. */
int gts__cuda_get(gts_device_id id, const gts_device_ops **out, gts_error *err);
/* Writes up to `capacity` of the CUDA devices to `out` and returns how many
 * there are (0 where CUDA cannot be reached). */
size_t gts__cuda_list(const gts_device_ops **out, size_t capacity);
/* The CUDA device whose memory `address` is, as the driver says
 * (gts_device_locate); GTS_ENOTFOUND where it is not CUDA memory. */
int gts__cuda_locate(const void *address, const gts_device_ops **out, gts_error *err);

#endif
