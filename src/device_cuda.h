/* The CUDA devices: the CUDA driver API, loaded at run time; not
 * installed. One concept per file:
 * - device_cuda_driver.c: loading the driver, its errors, the contexts;
 * - device_cuda_memory.c: device, managed and pinned memory and their caches;
 * - device_cuda_copy.c: transfers, fills and copies (memsets and kernels),
 *   batches of copies;
 * - device_cuda_sync.c: synchronisation and streams;
 * - device_cuda.c: the devices' tables for the registry (device.c).
 *
 * One build of libgtstore runs on machines with and without a GPU: nothing
 * here links against CUDA or includes cuda.h. On first use (gts_device_get
 * of a CUDA device type, gts_device_list, gts_device_cuda_status; once per
 * process, under pthread_once) the driver library is opened with dlopen
 * ("libcuda.so.1", or the path in the environment variable GTSTORE_LIBCUDA),
 * cuGetProcAddress_v2 (CUDA >= 12.5) or else cuGetProcAddress (>= 11.3) is
 * looked up with dlsym, and every other entry point is fetched through it
 * with CU_GET_PROC_ADDRESS_LEGACY_STREAM (stream 0 is the legacy default
 * stream) and the CUDA version whose ABI the prototypes below declare:
 * 12000, or the driver's own version when that is older (cuGetProcAddress
 * refuses versions above the driver's). Then cuInit(0) and the devices are
 * counted. Whatever fails (no driver library, the toolkit's stub library, a
 * driver older than 11.3 or lacking an entry point, cuInit failing, no
 * device) is recorded once as an error naming the cause and the CUresult
 * (cuGetErrorName, or a table of our own where the driver cannot answer):
 * GTS_ENOTFOUND where the driver works but has no device, GTS_ENOTSUP
 * otherwise. The CUDA devices are then absent; the host and the emulated
 * device are not affected. The library is never closed (function pointers
 * into it live as long as the process).
 *
 * The devices, for each CUDA device n (at most MAX_DEVICES of them):
 * - (GTS_DL_CUDA, n): device memory from a stream-ordered pool of the
 *   device's (cuMemAllocFromPoolAsync), or where it has none from cuMemAlloc
 *   through a cache of freed blocks ("the pools" below). Not
 *   host-accessible.
 * - (GTS_DL_CUDA_MANAGED, n): managed memory, cuMemAllocManaged with
 *   CU_MEM_ATTACH_GLOBAL, where the device supports it
 *   (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY). Host-accessible.
 * and once, (GTS_DL_CUDA_HOST, 0): pinned host memory, host pages
 * page-locked with cuMemHostRegister and CU_MEMHOSTREGISTER_PORTABLE
 * (usable by every context) in device 0's context, cached when freed.
 * Host-accessible.
 *
 * Contexts: every call runs in the *primary context* of its device, retained
 * on the device's first use and kept for the life of the process, pushed
 * with cuCtxPushCurrent before the driver calls of an operation and popped
 * after them. Push/pop rather than cuCtxSetCurrent so that the caller's
 * current context (CuPy's, PyTorch's, its own) is exactly what it was; the
 * primary context is the one the runtime API (and so CuPy and PyTorch) uses,
 * so memory and streams are shared with them without further ado.
 *
 * Streams are CUDA streams (cuStreamCreate with CU_STREAM_NON_BLOCKING) of
 * the device's primary context, events CUDA events (cuEventCreate with
 * CU_EVENT_DISABLE_TIMING; a stream waits on one with cuStreamWaitEvent,
 * the default stream by cuEventSynchronize); gts_stream NULL is the legacy default
 * stream. An operation on stream NULL has completed when it returns (the
 * contract of device.h): the synchronous driver calls are followed by
 * cuStreamSynchronize(0) where the driver may return early (host to device,
 * device to device, memset). With a stream, transfers and memsets are the
 * Async variants and are only queued: the host memory of a queued transfer
 * must stay valid until the stream is synchronised. A stream is not checked
 * to belong to the device (the driver cannot tell cheaply).
 *
 * Fill and strided copy of device memory run on the GPU, never through the
 * host:
 * - a fill of a dense target (its elements cover the bytes [low, high) of
 *   gts_strided_extent exactly once, in any order and direction) with an
 *   item that repeats a 1-, 2- or 4-byte pattern is one cuMemsetD8/D16/D32;
 * - a copy between two dense arrays with the same strides is one device to
 *   device copy of their span;
 * - everything else is a kernel (device_kernels.h, .cu): the PTX embedded in
 *   the library is loaded into each device's primary context with
 *   cuModuleLoadData on the first kernel, and one cuLaunchKernel fills or
 *   copies the whole array (kernel_args.h describes it; an array of more
 *   than GTS_KERNEL_NDIM dimensions that cannot be merged is a launch per
 *   index of the dimensions beyond). A copy whose source and destination
 *   bytes meet reads the source from a temporary copy of its span, as the
 *   host kernels do. Nothing outside the operation's elements is written.
 * - a batch of copies (gtstore/copy_batch.h) is a table of kernel arrays in
 *   device memory, uploaded once, and one launch per run: row y of the grid
 *   copies array y.
 * - pinned and managed memory are host-accessible: their fill and copy run
 *   the host kernels directly (managed memory after cuCtxSynchronize, so
 *   that no GPU work touches it meanwhile; pinned memory after synchronising
 *   the stream given, if any).
 * Device to device copies that overlap (copy_within may, like memmove) go
 * through a temporary device block: cuMemcpyDtoD is undefined for overlap. */
#ifndef GTSTORE_DEVICE_CUDA_H
#define GTSTORE_DEVICE_CUDA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gtstore/device.h"
#include "device_pool.h"

/* ---- the driver API, declared here ------------------------------------------
 * The few types, constants and prototypes used, as cuda.h declares them for
 * the ABI of CUDA_API_VERSION (the _v2 entry points where there are two). */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

/* CUmemPoolProps: allocations on one device, no export handles */
typedef struct pool_props {
    int alloc_type, handle_types, location_type, location_id;
    void *win32_security_attributes;
    size_t max_size;
    unsigned short usage;
    unsigned char reserved[54];
} pool_props;
#if UINTPTR_MAX > 0xffffffffu
typedef unsigned long long CUdeviceptr;
#else
typedef unsigned int CUdeviceptr;
#endif

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_NOT_FOUND = 500,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
    CUDA_ERROR_NOT_READY = 600,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
    CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_EVENT_DISABLE_TIMING = 2,
    CU_MEMHOSTREGISTER_PORTABLE = 1,
    CU_MEMHOSTALLOC_PORTABLE = 1,
    CU_MEM_ATTACH_GLOBAL = 1,
    CU_STREAM_NON_BLOCKING = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_MEMORYTYPE_HOST = 1
};

#define CUDA_API_VERSION 12000 /* the ABI of the prototypes below */
#define CUDA_MIN_VERSION 11030 /* the first driver with cuGetProcAddress */

typedef CUresult (*get_proc_address_v1_fn)(const char *symbol, void **pfn, int cuda_version,
                                           unsigned long long flags);
typedef CUresult (*get_proc_address_v2_fn)(const char *symbol, void **pfn, int cuda_version,
                                           unsigned long long flags, int *symbol_status);

typedef struct cuda_api {
    CUresult (*DriverGetVersion)(int *version);
    CUresult (*GetErrorName)(CUresult error, const char **name);
    CUresult (*GetErrorString)(CUresult error, const char **text);
    CUresult (*Init)(unsigned int flags);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *device, int ordinal);
    CUresult (*DeviceGetAttribute)(int *value, int attribute, CUdevice device);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
    CUresult (*CtxPushCurrent)(CUcontext context);
    CUresult (*CtxPopCurrent)(CUcontext *context);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *out, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr block);
    CUresult (*MemHostAlloc)(void **out, size_t bytes, unsigned int flags);
    CUresult (*MemFreeHost)(void *block);
    CUresult (*MemAllocManaged)(CUdeviceptr *out, size_t bytes, unsigned int flags);
    CUresult (*Memcpy)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
    CUresult (*MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);
    CUresult (*MemsetD16)(CUdeviceptr dst, unsigned short value, size_t count);
    CUresult (*MemsetD32)(CUdeviceptr dst, unsigned int value, size_t count);
    CUresult (*MemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream s);
    CUresult (*MemsetD16Async)(CUdeviceptr dst, unsigned short value, size_t count, CUstream s);
    CUresult (*MemsetD32Async)(CUdeviceptr dst, unsigned int value, size_t count, CUstream s);
    CUresult (*StreamCreate)(CUstream *out, unsigned int flags);
    CUresult (*StreamDestroy)(CUstream stream);
    CUresult (*StreamSynchronize)(CUstream stream);
    CUresult (*ModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*ModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
    CUresult (*LaunchKernel)(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                             unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                             void **params, void **extra);
    /* the pools of device_pool.h: stream-ordered allocation, events, pinning */
    CUresult (*MemPoolCreate)(CUmemoryPool *out, const pool_props *props);
    CUresult (*MemPoolSetAttribute)(CUmemoryPool pool, int attribute, void *value);
    CUresult (*MemPoolGetAttribute)(CUmemoryPool pool, int attribute, void *value);
    CUresult (*MemPoolTrimTo)(CUmemoryPool pool, size_t keep);
    CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *out, size_t bytes, CUmemoryPool pool,
                                      CUstream stream);
    CUresult (*MemFreeAsync)(CUdeviceptr block, CUstream stream);
    CUresult (*EventCreate)(CUevent *out, unsigned int flags);
    CUresult (*EventRecord)(CUevent event, CUstream stream);
    CUresult (*EventQuery)(CUevent event);
    CUresult (*EventSynchronize)(CUevent event);
    CUresult (*EventDestroy)(CUevent event);
    CUresult (*StreamWaitEvent)(CUstream stream, CUevent event, unsigned int flags);
    CUresult (*MemHostRegister)(void *block, size_t bytes, unsigned int flags);
    CUresult (*MemHostUnregister)(void *block);
    CUresult (*PointerGetAttributes)(unsigned int count, int *attributes, void **data,
                                     CUdeviceptr pointer);
} cuda_api;

/* Every entry point, by its base name (cuGetProcAddress picks the _v2 that
 * the version asks for). The first three are fetched before the driver's
 * version is known, with the oldest version that has cuGetProcAddress; the
 * error names are optional. */
#define ENTRY(name, field) {name, offsetof(cuda_api, field)}
static const struct entry {
    const char *name;
    size_t offset;
} entries[] = {
    ENTRY("cuDriverGetVersion", DriverGetVersion),
    ENTRY("cuGetErrorName", GetErrorName),
    ENTRY("cuGetErrorString", GetErrorString),
    ENTRY("cuInit", Init),
    ENTRY("cuDeviceGetCount", DeviceGetCount),
    ENTRY("cuDeviceGet", DeviceGet),
    ENTRY("cuDeviceGetAttribute", DeviceGetAttribute),
    ENTRY("cuDevicePrimaryCtxRetain", DevicePrimaryCtxRetain),
    ENTRY("cuCtxPushCurrent", CtxPushCurrent),
    ENTRY("cuCtxPopCurrent", CtxPopCurrent),
    ENTRY("cuCtxSynchronize", CtxSynchronize),
    ENTRY("cuMemAlloc", MemAlloc),
    ENTRY("cuMemFree", MemFree),
    ENTRY("cuMemHostAlloc", MemHostAlloc),
    ENTRY("cuMemFreeHost", MemFreeHost),
    ENTRY("cuMemAllocManaged", MemAllocManaged),
    ENTRY("cuMemcpy", Memcpy),
    ENTRY("cuMemcpyAsync", MemcpyAsync),
    ENTRY("cuMemcpyHtoD", MemcpyHtoD),
    ENTRY("cuMemcpyDtoH", MemcpyDtoH),
    ENTRY("cuMemcpyDtoD", MemcpyDtoD),
    ENTRY("cuMemcpyHtoDAsync", MemcpyHtoDAsync),
    ENTRY("cuMemcpyDtoHAsync", MemcpyDtoHAsync),
    ENTRY("cuMemcpyDtoDAsync", MemcpyDtoDAsync),
    ENTRY("cuMemsetD8", MemsetD8),
    ENTRY("cuMemsetD16", MemsetD16),
    ENTRY("cuMemsetD32", MemsetD32),
    ENTRY("cuMemsetD8Async", MemsetD8Async),
    ENTRY("cuMemsetD16Async", MemsetD16Async),
    ENTRY("cuMemsetD32Async", MemsetD32Async),
    ENTRY("cuStreamCreate", StreamCreate),
    ENTRY("cuStreamDestroy", StreamDestroy),
    ENTRY("cuStreamSynchronize", StreamSynchronize),
    ENTRY("cuModuleLoadData", ModuleLoadData),
    ENTRY("cuModuleGetFunction", ModuleGetFunction),
    ENTRY("cuLaunchKernel", LaunchKernel),
    ENTRY("cuMemPoolCreate", MemPoolCreate),
    ENTRY("cuMemPoolSetAttribute", MemPoolSetAttribute),
    ENTRY("cuMemPoolGetAttribute", MemPoolGetAttribute),
    ENTRY("cuMemPoolTrimTo", MemPoolTrimTo),
    ENTRY("cuMemAllocFromPoolAsync", MemAllocFromPoolAsync),
    ENTRY("cuMemFreeAsync", MemFreeAsync),
    ENTRY("cuEventCreate", EventCreate),
    ENTRY("cuEventRecord", EventRecord),
    ENTRY("cuEventQuery", EventQuery),
    ENTRY("cuEventSynchronize", EventSynchronize),
    ENTRY("cuEventDestroy", EventDestroy),
    ENTRY("cuStreamWaitEvent", StreamWaitEvent),
    ENTRY("cuMemHostRegister", MemHostRegister),
    ENTRY("cuMemHostUnregister", MemHostUnregister),
    ENTRY("cuPointerGetAttributes", PointerGetAttributes),
};
#undef ENTRY
#define BOOTSTRAP_ENTRIES 3

/* A data pointer from dlsym or cuGetProcAddress becomes a function pointer
 * by copying its bytes (ISO C has no conversion between the two; POSIX
 * guarantees that they have one representation). */
_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "function and data pointers differ");

/* ---- state (device_cuda_driver.c) ---------------------------------------------- */

#define MAX_DEVICES 64
#define NAME_SIZE 24

typedef struct cuda_device {
    int ordinal;
    CUdevice handle;
    bool managed; /* supports managed memory */
    _Atomic(CUcontext) context; /* the retained primary context; NULL until first use */
    char names[3][NAME_SIZE];   /* of its memory, managed and (device 0) pinned devices */
    _Atomic(bool) loaded;       /* the kernels below are loaded in the context */
    CUfunction copy, fill, batch, negate;
    CUfunction stencils[4]; /* the built-in stencils, by gts_stencil */
    /* Freed device memory: the driver's stream-ordered pool where the device
     * has them (`pools`; the pool is made on first use), else `blocks`. */
    atomic_bool pools;
    _Atomic(CUmemoryPool) pool;
    gts__cache pool_cache;         /* the pool, for the registry of caches */
    atomic_llong reserved;         /* the pool's reservation when last seen */
    atomic_llong hits, misses;     /* allocations that did not / did grow it */
    gts__pool blocks;
} cuda_device;

/* The driver's entry points; where loading failed, the code and message
 * every CUDA call answers with; its version; the usable devices. */
extern cuda_api gts__cuda_api;
extern int gts__cuda_init_code;
extern char gts__cuda_init_message[GTS_ERROR_MESSAGE_SIZE];
extern int gts__cuda_driver_version;
extern int gts__cuda_device_count; /* at most MAX_DEVICES */
extern cuda_device gts__cuda_devices[MAX_DEVICES];

/* The CUDA files call the driver as api.Name(...). */
#define api gts__cuda_api

/* ---- the driver (device_cuda_driver.c) ------------------------------------------- */

/* Loads the driver, fetches its entry points, counts and queries the
 * devices; a failure is recorded in gts__cuda_init_code and _message.
 * Once, before anything else (device_cuda.c). */
void gts__cuda_load(void);

/* The name of a CUresult: the driver's, else ours for the codes a broken or
 * absent driver answers with. */
const char *gts__cuda_result_name(CUresult rc);

/* A failed driver call during an operation: GTS_ENOMEM for out of memory,
 * GTS_EINVAL for a value or handle the driver refused, else GTS_ENOTSUP (the
 * device cannot do it, or is in an error state). */
int gts__cuda_error(const cuda_device *d, const char *call, CUresult rc, gts_error *err);

/* A failure where nobody can be told (a free): said on stderr. */
void gts__cuda_free_failed(const cuda_device *d, const char *call, CUresult rc,
                           const void *block);

/* Makes the primary context of `d` current (retaining it on first use);
 * every successful enter is followed by one gts__cuda_leave. */
int gts__cuda_enter(cuda_device *d, gts_error *err);

static inline int check(const cuda_device *d, const char *call, CUresult rc, gts_error *err)
{
    return rc == CUDA_SUCCESS ? GTS_OK : gts__cuda_error(d, call, rc, err);
}

static inline void leave(void)
{
    CUcontext popped;
    api.CtxPopCurrent(&popped);
}

static inline cuda_device *device_of(const gts_device_ops *dev)
{
    return dev->ctx;
}

static inline CUdeviceptr dptr(const void *address)
{
    return (CUdeviceptr)(uintptr_t)address;
}

/* On the default stream an operation has completed when it returns. */
static inline int finish(const cuda_device *d, gts_stream stream, gts_error *err)
{
    return stream ? GTS_OK : check(d, "cuStreamSynchronize", api.StreamSynchronize(NULL), err);
}

/* ---- memory (device_cuda_memory.c) ------------------------------------------------ */

/* The caches of `d` (its stream-ordered pool where d->pools, else a
 * gts__pool of blocks); once, after loading (device_cuda.c). */
void gts__cuda_init_caches(cuda_device *d);
/* cuMemFree of a block outside the pools (managed memory, batch tables). */
void gts__cuda_free_block(cuda_device *d, void *block);

/* ---- synchronisation (device_cuda_sync.c) ------------------------------------------- */

/* Before the host touches pinned memory: the work queued on the stream
 * given has completed. */
int gts__cuda_pinned_wait(const cuda_device *d, gts_stream s, gts_error *err);
/* Before the host touches managed memory: no GPU work runs in the
 * context. */
int gts__cuda_managed_wait(cuda_device *d, gts_error *err);

/* ---- the operations of each concept, for the devices' tables ------------------------- */

/* Each sets its operations (alloc and free; transfers, fill, copy and
 * batches; synchronize and streams) in the tables of a device's memory,
 * its managed memory and the pinned memory (device_cuda.c). */
void gts__cuda_memory_ops(gts_device_ops *memory, gts_device_ops *managed,
                          gts_device_ops *pinned);
void gts__cuda_copy_ops(gts_device_ops *memory, gts_device_ops *managed,
                        gts_device_ops *pinned);
void gts__cuda_sync_ops(gts_device_ops *memory, gts_device_ops *managed,
                        gts_device_ops *pinned);

#endif
