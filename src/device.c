/* The registry of devices (gtstore/device.h): the built-in devices and
 * CUDA's, the device that plays the GPU, and the checked operations. */
#include "gtstore/device.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "device_check.h"
#include "device_cuda_registry.h"
#include "device_emulated.h"
#include "device_host.h"

/* ---- the registry ------------------------------------------------------------ */

static const gts_device_ops *const devices[] = {&gts__device_host, &gts__device_emulated,
                                                 &gts__emulated_managed, &gts__emulated_pinned};
#define DEVICE_COUNT (sizeof devices / sizeof devices[0])

int gts_device_managed(const gts_device_ops *gpu, const gts_device_ops **out, gts_error *err)
{
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (gpu == &gts__device_emulated) {
        *out = &gts__emulated_managed;
        return GTS_OK;
    }
    if (gpu && gpu->id.type == GTS_DL_CUDA)
        return gts_device_get((gts_device_id){GTS_DL_CUDA_MANAGED, gpu->id.id}, out, err);
    return gts_error_set(err, GTS_ENOTSUP, "managed: the %s device has no managed memory",
                         gpu ? gpu->name : "(NULL)");
}

bool gts_device_is_managed(const gts_device_ops *device)
{
    return device && device->kind == GTS_MEMORY_MANAGED;
}

int gts_device_pinned(const gts_device_ops *gpu, const gts_device_ops **out, gts_error *err)
{
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (gpu == &gts__device_emulated) {
        *out = &gts__emulated_pinned;
        return GTS_OK;
    }
    if (gpu && gpu->id.type == GTS_DL_CUDA)
        return gts_device_get((gts_device_id){GTS_DL_CUDA_HOST, 0}, out, err);
    return gts_error_set(err, GTS_ENOTSUP, "pinned: the %s device has no pinned host memory",
                         gpu ? gpu->name : "(NULL)");
}

bool gts_device_is_pinned(const gts_device_ops *device)
{
    return device && device->kind == GTS_MEMORY_PINNED;
}

bool gts_device_is_host_memory(const gts_device_ops *device)
{
    return device && (device->kind == GTS_MEMORY_HOST || device->kind == GTS_MEMORY_PINNED);
}

void *gts_device_host_alias(const gts_device_ops *device, const void *address)
{
    if (!device)
        return NULL;
    if (device->host_accessible)
        return (void *)address;
    return device->host_alias ? device->host_alias(device, address) : NULL;
}

/* ---- the device that plays the GPU ------------------------------------------- */

/* NULL until chosen: the environment decides on first use. */
static _Atomic(const gts_device_ops *) chosen_gpu;

/* GTSTORE_GPU: "emulated" for the emulated device, "cuda" (or unset) for
 * CUDA device 0. */
static int gpu_from_environment(const gts_device_ops **out, gts_error *err)
{
    const char *name = getenv("GTSTORE_GPU");
    if (name && strcmp(name, "emulated") == 0) {
        *out = &gts__device_emulated;
        return GTS_OK;
    }
    if (name && name[0] && strcmp(name, "cuda") != 0)
        return gts_error_set(err, GTS_EINVAL,
                             "GTSTORE_GPU: expected 'cuda' or 'emulated', got '%.60s'", name);
    return gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, out, err);
}

int gts_device_gpu(const gts_device_ops **out, gts_error *err)
{
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    const gts_device_ops *gpu = atomic_load(&chosen_gpu);
    if (gpu) {
        *out = gpu;
        return GTS_OK;
    }
    /* not remembered: a driver installed later, or the variable set, is
     * seen by the next call */
    return gpu_from_environment(out, err);
}

int gts_device_use_gpu(const gts_device_ops *device, gts_error *err)
{
    if (device && device->host_accessible)
        return gts_error_set(err, GTS_EINVAL,
                             "device: '%s' is host memory and cannot play the GPU", device->name);
    atomic_store(&chosen_gpu, device);
    return GTS_OK;
}

/* The built-in devices, then the CUDA devices (device_cuda.c; none where the
 * driver cannot be loaded). */
size_t gts_device_list(const gts_device_ops **out, size_t capacity)
{
    for (size_t i = 0; i < DEVICE_COUNT && i < capacity; ++i)
        out[i] = devices[i];
    size_t rest = capacity > DEVICE_COUNT ? capacity - DEVICE_COUNT : 0;
    return DEVICE_COUNT + gts__cuda_list(rest ? out + DEVICE_COUNT : NULL, rest);
}

bool gts_device_id_equal(gts_device_id a, gts_device_id b)
{
    return a.type == b.type && a.id == b.id;
}

bool gts_device_memory_is(const gts_device_ops *device, int32_t type)
{
    return device && type != 0 && device->id.type == type;
}

/* The name of a DLPack device type, or NULL for a code DLPack does not
 * define. */
static const char *type_name(int32_t type)
{
    switch (type) {
    case GTS_DL_CPU: return "CPU";
    case GTS_DL_CUDA: return "CUDA";
    case GTS_DL_CUDA_HOST: return "CUDA host";
    case GTS_DL_OPENCL: return "OpenCL";
    case GTS_DL_VULKAN: return "Vulkan";
    case GTS_DL_METAL: return "Metal";
    case GTS_DL_VPI: return "VPI";
    case GTS_DL_ROCM: return "ROCm";
    case GTS_DL_ROCM_HOST: return "ROCm host";
    case GTS_DL_EXT_DEV: return "ext_dev";
    case GTS_DL_CUDA_MANAGED: return "CUDA managed";
    case GTS_DL_ONEAPI: return "oneAPI";
    case GTS_DL_WEBGPU: return "WebGPU";
    case GTS_DL_HEXAGON: return "Hexagon";
    case GTS_DL_MAIA: return "MAIA";
    default: return NULL;
    }
}

int gts_device_get(gts_device_id id, const gts_device_ops **out, gts_error *err)
{
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (id.type == GTS_DL_CUDA || id.type == GTS_DL_CUDA_HOST || id.type == GTS_DL_CUDA_MANAGED)
        return gts__cuda_get(id, out, err); /* loads the driver on first use */
    bool type_present = false;
    for (size_t i = 0; i < DEVICE_COUNT; ++i) {
        if (gts_device_id_equal(devices[i]->id, id)) {
            *out = devices[i];
            return GTS_OK;
        }
        type_present = type_present || devices[i]->id.type == id.type;
    }
    const char *name = type_name(id.type);
    if (!name)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "device: (%d, %d) has type %d, which is not a DLPack device type",
                             (int)id.type, (int)id.id, (int)id.type);
    if (type_present)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "device: (%d, %d) does not exist: there is no %s device %d",
                             (int)id.type, (int)id.id, name, (int)id.id);
    return gts_error_set(err, GTS_ENOTSUP,
                         "device: (%d, %d): this build of libgtstore cannot reach %s devices",
                         (int)id.type, (int)id.id, name);
}

/* ---- other libraries' memory ------------------------------------------------------ */

int gts_device_locate(const void *address, const gts_device_ops **out, gts_error *err)
{
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (gts_device_emulated_host_address(address)) {
        *out = &gts__device_emulated;
        return GTS_OK;
    }
    gts_error cuda;
    if (gts__cuda_locate(address, out, &cuda) == GTS_OK)
        return GTS_OK;
    return gts_error_set(err, GTS_ENOTFOUND,
                         "address %p is not the memory of a device gtstore reaches (not the "
                         "emulated device's; %s)",
                         address, cuda.message);
}

/* How an error names a device: its name and DLPack id. */
#define DEVICE_FORMAT "%s (%d, %d)"
#define DEVICE_ARGS(d) (d)->name, (int)(d)->id.type, (int)(d)->id.id

int gts_device_check_usable(const gts_device_ops *device, gts_error *err)
{
    if (!device)
        return gts_error_set(err, GTS_EINVAL, "device: NULL");
    if (device->host_accessible)
        return GTS_OK;
    const gts_device_ops *gpu;
    if (gts_device_gpu(&gpu, NULL) != GTS_OK)
        return GTS_OK; /* no GPU to compete with: the memory is where it is */
    if (gpu != device)
        return gts_error_set(err, GTS_EINVAL,
                             "memory on " DEVICE_FORMAT ", another GPU than gtstore's, " DEVICE_FORMAT
                             " (gtstore.use_gpu chooses it)",
                             DEVICE_ARGS(device), DEVICE_ARGS(gpu));
    return GTS_OK;
}

/* The stream numbers of the CUDA array interface and DLPack are CUDA's: 1
 * and 2 are the handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD. */
static bool is_cuda(const gts_device_ops *device)
{
    int32_t type = device->id.type;
    return type == GTS_DL_CUDA || type == GTS_DL_CUDA_MANAGED || type == GTS_DL_CUDA_HOST;
}

gts_stream gts_device_legacy_stream(const gts_device_ops *device)
{
    bool cuda_gpu = device && is_cuda(device) && device->kind == GTS_MEMORY_GPU;
    return cuda_gpu ? (gts_stream)(uintptr_t)1 : NULL; /* CU_STREAM_LEGACY */
}

int gts_device_wait_stream(const gts_device_ops *device, int64_t stream, gts_error *err)
{
    if (!device)
        return gts_error_set(err, GTS_EINVAL, "device: NULL");
    if (stream <= 0)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: %lld is not a stream (0 is forbidden by the protocols, and "
                             "handles are positive)",
                             (long long)stream);
    if (is_cuda(device)) /* a handle the driver checks */
        return device->synchronize(device, (gts_stream)(uintptr_t)stream, err);
    if (stream > 2)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: %lld names a CUDA stream, and the memory is on " DEVICE_FORMAT
                             " (only its default streams, 1 and 2, can be named)",
                             (long long)stream, DEVICE_ARGS(device));
    return gts_device_synchronize(device, NULL, err);
}

/* ---- checked operations ---------------------------------------------------------- */

int gts__device_check(const gts_device_ops *dev, gts_stream stream, gts_error *err)
{
    if (!dev)
        return gts_error_set(err, GTS_EINVAL, "device: NULL");
    if (stream && !dev->stream_create)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: %p given, but device %s has its default stream only",
                             stream, dev->name);
    return GTS_OK;
}

static int check_transfer(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                          gts_stream stream, gts_error *err)
{
    int rc = gts__device_check(dev, stream, err);
    if (rc)
        return rc;
    if (bytes < 0)
        return gts_error_set(err, GTS_EINVAL, "bytes: %lld is negative", (long long)bytes);
    if (bytes > 0 && (!dst || !src))
        return gts_error_set(err, GTS_EINVAL, "%s: NULL for %lld bytes", !dst ? "dst" : "src",
                             (long long)bytes);
    return GTS_OK;
}

int gts__alloc_flags_check(unsigned flags, unsigned known, gts_error *err)
{
    if (flags & ~known)
        return gts_error_set(err, GTS_EINVAL, "flags: %#x has unknown bits", flags);
    return GTS_OK;
}

int gts_device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                     gts_error *err)
{
    int rc = gts__device_check(dev, NULL, err);
    if (rc)
        return rc;
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (size < 0)
        return gts_error_set(err, GTS_EINVAL, "size: %lld bytes is negative", (long long)size);
    if ((rc = gts__alloc_flags_check(flags, GTS_ALLOC_ZERO, err)))
        return rc;
    return dev->alloc(dev, size, flags, out, err);
}

void gts_device_free(const gts_device_ops *dev, void *block, int64_t size)
{
    if (dev && block)
        dev->free(dev, block, size);
}

int gts_device_copy_to_device(const gts_device_ops *dev, void *dst, const void *src,
                              int64_t bytes, gts_stream stream, gts_error *err)
{
    int rc = check_transfer(dev, dst, src, bytes, stream, err);
    return rc ? rc : dev->copy_to_device(dev, dst, src, bytes, stream, err);
}

int gts_device_copy_to_host(const gts_device_ops *dev, void *dst, const void *src,
                            int64_t bytes, gts_stream stream, gts_error *err)
{
    int rc = check_transfer(dev, dst, src, bytes, stream, err);
    return rc ? rc : dev->copy_to_host(dev, dst, src, bytes, stream, err);
}

int gts_device_copy_within(const gts_device_ops *dev, void *dst, const void *src,
                           int64_t bytes, gts_stream stream, gts_error *err)
{
    int rc = check_transfer(dev, dst, src, bytes, stream, err);
    return rc ? rc : dev->copy_within(dev, dst, src, bytes, stream, err);
}

int gts_device_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                    const int64_t *strides, int64_t itemsize, const void *item,
                    gts_stream stream, gts_error *err)
{
    int rc = gts__device_check(dev, stream, err);
    return rc ? rc : dev->fill(dev, data, ndim, shape, strides, itemsize, item, stream, err);
}

int gts_device_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                    const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                    int64_t itemsize, gts_stream stream, gts_error *err)
{
    int rc = gts__device_check(dev, stream, err);
    return rc ? rc
              : dev->copy(dev, dst, dst_strides, src, src_strides, ndim, shape, itemsize, stream,
                          err);
}

int gts_device_synchronize(const gts_device_ops *dev, gts_stream stream, gts_error *err)
{
    int rc = gts__device_check(dev, stream, err);
    return rc ? rc : dev->synchronize(dev, stream, err);
}

int gts_device_negate(const gts_device_ops *dev, void *data, int64_t bytes, gts_dtype dtype,
                      gts_stream stream, gts_error *err)
{
    int rc = check_transfer(dev, data, data, bytes, stream, err);
    if (rc)
        return rc;
    if (!dev->negate)
        return gts_error_set(err, GTS_ENOTSUP, "device: %s has no kernel that negates",
                             dev->name);
    gts_dtype valid;
    if ((rc = gts_dtype_make(dtype.kind, dtype.itemsize, &valid, err)))
        return rc;
    if (dtype.kind == GTS_KIND_BOOL)
        return gts_error_set(err, GTS_EINVAL, "dtype: a boolean has no sign to negate");
    if (bytes % dtype.itemsize)
        return gts_error_set(err, GTS_EINVAL, "bytes: %lld is not a multiple of the itemsize %d",
                             (long long)bytes, (int)dtype.itemsize);
    return dev->negate(dev, data, bytes, dtype, stream, err);
}

int gts_device_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err)
{
    int rc = gts__device_check(dev, NULL, err);
    if (rc)
        return rc;
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (!dev->stream_create)
        return gts_error_set(err, GTS_ENOTSUP, "stream: device %s has its default stream only",
                             dev->name);
    return dev->stream_create(dev, out, err);
}

void gts_device_stream_destroy(const gts_device_ops *dev, gts_stream stream)
{
    if (dev && stream && dev->stream_destroy)
        dev->stream_destroy(dev, stream);
}
