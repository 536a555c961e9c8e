/* The CUDA devices: the CUDA driver API, loaded at run time.
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
 * the device's primary context; gts_stream NULL is the legacy default
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
#define _POSIX_C_SOURCE 200809L
#include "gtstore/device.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/geometry.h"
#include "gtstore/kernels.h"
#include "device_pool.h"
#include "internal.h"
#include "kernel_args.h"

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

/* ---- state ------------------------------------------------------------------ */

#define MAX_DEVICES 64
#define NAME_SIZE 24

typedef struct cuda_device {
    int ordinal;
    CUdevice handle;
    bool managed; /* supports managed memory */
    _Atomic(CUcontext) context; /* the retained primary context; NULL until first use */
    char names[3][NAME_SIZE];   /* of its memory, managed and (device 0) pinned devices */
    _Atomic(bool) loaded;       /* the kernels below are loaded in the context */
    CUfunction copy, fill, batch;
    /* Freed device memory: the driver's stream-ordered pool where the device
     * has them (`pools`; the pool is made on first use), else `blocks`. */
    atomic_bool pools;
    _Atomic(CUmemoryPool) pool;
    gts__cache pool_cache;         /* the pool, for the registry of caches */
    atomic_llong reserved;         /* the pool's reservation when last seen */
    atomic_llong hits, misses;     /* allocations that did not / did grow it */
    gts__pool blocks;
} cuda_device;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_code;                                /* GTS_OK, or why CUDA is absent */
static char init_message[GTS_ERROR_MESSAGE_SIZE];
static cuda_api api;
static int driver_version;
static int device_count;                             /* usable: at most MAX_DEVICES */
static cuda_device devices[MAX_DEVICES];
static gts_device_ops memory_ops[MAX_DEVICES], managed_ops[MAX_DEVICES], pinned_ops;
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;

/* The kernels' PTX (generated by the build from device_kernels.cu). */
extern const unsigned char gts__device_kernels_ptx[];

/* ---- errors ------------------------------------------------------------------- */

/* The name of a CUresult: the driver's, else ours for the codes a broken or
 * absent driver answers with. */
static const char *result_name(CUresult rc)
{
    const char *name = NULL;
    if (api.GetErrorName && api.GetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    switch (rc) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 36: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "an unknown CUresult";
    }
}

/* A failed driver call during an operation: GTS_ENOMEM for out of memory,
 * GTS_EINVAL for a value or handle the driver refused, else GTS_ENOTSUP (the
 * device cannot do it, or is in an error state). */
static int driver_error(const cuda_device *d, const char *call, CUresult rc, gts_error *err)
{
    int code = GTS_ENOTSUP;
    if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        code = GTS_ENOMEM;
    else if (rc == CUDA_ERROR_INVALID_VALUE || rc == 101 || rc == 201 || rc == 400)
        code = GTS_EINVAL;
    const char *text = NULL;
    if (!api.GetErrorString || api.GetErrorString(rc, &text) != CUDA_SUCCESS || !text)
        text = "";
    return gts_error_set(err, code, "CUDA device %d: %s failed: %s (%d)%s%s", d->ordinal, call,
                         result_name(rc), rc, *text ? ": " : "", text);
}

static int check(const cuda_device *d, const char *call, CUresult rc, gts_error *err)
{
    return rc == CUDA_SUCCESS ? GTS_OK : driver_error(d, call, rc, err);
}

/* ---- loading the driver ---------------------------------------------------------- */

static void init_fail(int code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void init_fail(int code, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(init_message, sizeof init_message, format, args);
    va_end(args);
    init_code = code;
}

/* A hint for the results that mean "there is no real driver here". */
static const char *result_hint(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_STUB_LIBRARY:
        return ": the CUDA toolkit's stub library, not a driver (no NVIDIA driver installed)";
    case 35: return ": the NVIDIA driver is too old";
    case CUDA_ERROR_NO_DEVICE: return ": no CUDA-capable device";
    default: return "";
    }
}

static void init_caches(cuda_device *d, bool pools);

static void *load_symbol(void *library, const char *name)
{
    dlerror();
    return dlsym(library, name);
}

static void load(void)
{
    const char *path = getenv("GTSTORE_LIBCUDA");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        if (why && strstr(why, path)) /* glibc names the library */
            init_fail(GTS_ENOTSUP, "cannot load the CUDA driver: %s", why);
        else
            init_fail(GTS_ENOTSUP, "cannot load the CUDA driver %s: %s", path,
                      why ? why : "dlopen failed");
        return;
    }
    /* cuGetProcAddress: the one symbol taken with dlsym */
    get_proc_address_v2_fn gpa_v2 = NULL;
    get_proc_address_v1_fn gpa_v1 = NULL;
    void *symbol = load_symbol(library, "cuGetProcAddress_v2");
    if (symbol) {
        memcpy(&gpa_v2, &symbol, sizeof symbol);
    } else if ((symbol = load_symbol(library, "cuGetProcAddress"))) {
        memcpy(&gpa_v1, &symbol, sizeof symbol);
    } else {
        init_fail(GTS_ENOTSUP,
                  "%s has neither cuGetProcAddress_v2 nor cuGetProcAddress: not a CUDA driver, "
                  "or one older than CUDA 11.3",
                  path);
        return; /* the library stays open: harmless, and dlclose may not be */
    }
    int version = CUDA_MIN_VERSION;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i) {
        if (i == BOOTSTRAP_ENTRIES) {
            CUresult rc = api.DriverGetVersion(&driver_version);
            if (rc != CUDA_SUCCESS) {
                init_fail(GTS_ENOTSUP, "%s: cuDriverGetVersion failed: %s (%d)%s", path,
                          result_name(rc), rc, result_hint(rc));
                return;
            }
            if (driver_version < CUDA_MIN_VERSION) {
                init_fail(GTS_ENOTSUP,
                          "%s: the CUDA driver is version %d.%d; libgtstore needs 11.3 or newer",
                          path, driver_version / 1000, driver_version % 1000 / 10);
                return;
            }
            version = driver_version < CUDA_API_VERSION ? driver_version : CUDA_API_VERSION;
        }
        void *pfn = NULL;
        int status = 0;
        CUresult rc = gpa_v2 ? gpa_v2(entries[i].name, &pfn, version,
                                      CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status)
                             : gpa_v1(entries[i].name, &pfn, version,
                                      CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_FOUND) {
            init_fail(GTS_ENOTSUP, "%s: cuGetProcAddress(\"%s\", %d) failed: %s (%d)%s", path,
                      entries[i].name, version, result_name(rc), rc, result_hint(rc));
            return;
        }
        bool optional = entries[i].offset == offsetof(cuda_api, GetErrorName) ||
                        entries[i].offset == offsetof(cuda_api, GetErrorString);
        /* missing: NULL and success (the documented answer), or
         * CUDA_ERROR_NOT_FOUND (what drivers before 12.0 answered) */
        if (rc != CUDA_SUCCESS || !pfn || status != 0) {
            if (optional)
                continue;
            init_fail(GTS_ENOTSUP, "%s: the CUDA driver (version %d.%d) has no %s for CUDA %d.%d",
                      path, driver_version / 1000, driver_version % 1000 / 10, entries[i].name,
                      version / 1000, version % 1000 / 10);
            return;
        }
        memcpy((char *)&api + entries[i].offset, &pfn, sizeof pfn);
    }

    CUresult rc = api.Init(0);
    if (rc != CUDA_SUCCESS) {
        init_fail(rc == CUDA_ERROR_NO_DEVICE ? GTS_ENOTFOUND : GTS_ENOTSUP,
                  "%s: cuInit failed: %s (%d)%s", path, result_name(rc), rc, result_hint(rc));
        return;
    }
    int count = 0;
    if ((rc = api.DeviceGetCount(&count)) != CUDA_SUCCESS) {
        init_fail(GTS_ENOTSUP, "%s: cuDeviceGetCount failed: %s (%d)", path, result_name(rc),
                  rc);
        return;
    }
    if (count <= 0) {
        init_fail(GTS_ENOTFOUND, "the CUDA driver %d.%d (%s) found no device",
                  driver_version / 1000, driver_version % 1000 / 10, path);
        return;
    }
    if (count > MAX_DEVICES)
        count = MAX_DEVICES;
    for (int n = 0; n < count; ++n) {
        cuda_device *d = &devices[n];
        int managed = 0, pools = 0;
        d->ordinal = n;
        if ((rc = api.DeviceGet(&d->handle, n)) != CUDA_SUCCESS ||
            (rc = api.DeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
                                         d->handle)) != CUDA_SUCCESS ||
            (rc = api.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                         d->handle)) != CUDA_SUCCESS) {
            init_fail(GTS_ENOTSUP, "%s: cannot query CUDA device %d: %s (%d)", path, n,
                      result_name(rc), rc);
            return;
        }
        d->managed = managed != 0;
        atomic_init(&d->context, NULL);
        init_caches(d, pools != 0);
    }
    device_count = count;
}

/* ---- contexts ------------------------------------------------------------------- */

/* Makes the primary context of `d` current (retaining it on first use);
 * every successful enter is followed by one leave. */
static int enter(cuda_device *d, gts_error *err)
{
    CUcontext context = atomic_load_explicit(&d->context, memory_order_acquire);
    if (!context) {
        CUresult rc = CUDA_SUCCESS;
        pthread_mutex_lock(&context_lock);
        context = atomic_load_explicit(&d->context, memory_order_relaxed);
        if (!context && (rc = api.DevicePrimaryCtxRetain(&context, d->handle)) == CUDA_SUCCESS)
            atomic_store_explicit(&d->context, context, memory_order_release);
        pthread_mutex_unlock(&context_lock);
        if (rc != CUDA_SUCCESS)
            return driver_error(d, "cuDevicePrimaryCtxRetain", rc, err);
    }
    return check(d, "cuCtxPushCurrent", api.CtxPushCurrent(context), err);
}

static void leave(void)
{
    CUcontext popped;
    api.CtxPopCurrent(&popped);
}

static cuda_device *device_of(const gts_device_ops *dev)
{
    return dev->ctx;
}

static CUdeviceptr dptr(const void *address)
{
    return (CUdeviceptr)(uintptr_t)address;
}

/* On the default stream an operation has completed when it returns. */
static int finish(const cuda_device *d, gts_stream stream, gts_error *err)
{
    return stream ? GTS_OK : check(d, "cuStreamSynchronize", api.StreamSynchronize(NULL), err);
}

/* ---- transfers of device memory ----------------------------------------------------- */

static int htod(const cuda_device *d, CUdeviceptr dst, const void *src, int64_t bytes,
                gts_stream s, gts_error *err)
{
    if (s)
        return check(d, "cuMemcpyHtoDAsync",
                     api.MemcpyHtoDAsync(dst, src, (size_t)bytes, (CUstream)s), err);
    int rc = check(d, "cuMemcpyHtoD", api.MemcpyHtoD(dst, src, (size_t)bytes), err);
    return rc ? rc : finish(d, s, err);
}

static int dtoh(const cuda_device *d, void *dst, CUdeviceptr src, int64_t bytes, gts_stream s,
                gts_error *err)
{
    if (s)
        return check(d, "cuMemcpyDtoHAsync",
                     api.MemcpyDtoHAsync(dst, src, (size_t)bytes, (CUstream)s), err);
    return check(d, "cuMemcpyDtoH", api.MemcpyDtoH(dst, src, (size_t)bytes), err);
}

/* Device to device, the ranges possibly overlapping (the caller is in the
 * context). `generic`: cuMemcpy (managed memory) rather than cuMemcpyDtoD. */
static int dtod(const cuda_device *d, CUdeviceptr dst, CUdeviceptr src, int64_t bytes,
                gts_stream s, bool generic, gts_error *err)
{
    if (bytes == 0 || dst == src)
        return GTS_OK;
    CUdeviceptr distance = dst > src ? dst - src : src - dst;
    if (distance < (CUdeviceptr)bytes) { /* overlap: through a temporary block */
        CUdeviceptr temp = 0;
        int rc = check(d, "cuMemAlloc", api.MemAlloc(&temp, (size_t)bytes), err);
        if (!rc)
            rc = dtod(d, temp, src, bytes, s, generic, err);
        if (!rc)
            rc = dtod(d, dst, temp, bytes, s, generic, err);
        if (temp) {
            /* the temporary must outlive the copies queued on the stream */
            CUresult synced = s ? api.StreamSynchronize((CUstream)s) : CUDA_SUCCESS;
            if (!rc)
                rc = check(d, "cuStreamSynchronize", synced, err);
            api.MemFree(temp);
        }
        return rc;
    }
    if (s)
        return generic ? check(d, "cuMemcpyAsync",
                               api.MemcpyAsync(dst, src, (size_t)bytes, (CUstream)s), err)
                       : check(d, "cuMemcpyDtoDAsync",
                               api.MemcpyDtoDAsync(dst, src, (size_t)bytes, (CUstream)s), err);
    int rc = generic ? check(d, "cuMemcpy", api.Memcpy(dst, src, (size_t)bytes), err)
                     : check(d, "cuMemcpyDtoD", api.MemcpyDtoD(dst, src, (size_t)bytes), err);
    return rc ? rc : finish(d, s, err);
}

/* ---- the strided arrays of fill and copy -------------------------------------------- */


static bool kernel_itemsize(int64_t itemsize)
{
    return itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 || itemsize == 16;
}

/* Whether the elements cover their span exactly once: the dimensions of
 * extent > 1, ordered by |stride|, are a contiguous layout (any order, any
 * signs). Call with a valid, non-empty array. */
static bool dense(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize)
{
    int64_t magnitude[GTS_MAX_NDIM], extent[GTS_MAX_NDIM];
    int n = 0;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] == 1)
            continue;
        if (strides[d] == INT64_MIN)
            return false;
        int64_t m = strides[d] < 0 ? -strides[d] : strides[d];
        int k = n++;
        for (; k > 0 && magnitude[k - 1] > m; --k) {
            magnitude[k] = magnitude[k - 1];
            extent[k] = extent[k - 1];
        }
        magnitude[k] = m;
        extent[k] = shape[d];
    }
    int64_t expected = itemsize;
    for (int k = 0; k < n; ++k) {
        if (magnitude[k] != expected || gts_mul_overflow(expected, extent[k], &expected))
            return false;
    }
    return true;
}

/* Whether two arrays have the same strides where they matter. */
static bool same_strides(int ndim, const int64_t *shape, const int64_t *a, const int64_t *b)
{
    for (int d = 0; d < ndim; ++d)
        if (shape[d] > 1 && a[d] != b[d])
            return false;
    return true;
}

/* ---- kernels ---------------------------------------------------------------------------- */

/* Loads the kernels into the context of `d` once (the caller is in it). A
 * failure is returned each time, never remembered: it names the cause. */
static int load_kernels(cuda_device *d, gts_error *err)
{
    if (atomic_load_explicit(&d->loaded, memory_order_acquire))
        return GTS_OK;
    pthread_mutex_lock(&context_lock);
    int rc = GTS_OK;
    if (!atomic_load_explicit(&d->loaded, memory_order_relaxed)) {
        CUmodule module = NULL;
        rc = check(d, "cuModuleLoadData (gtstore's kernels)",
                   api.ModuleLoadData(&module, gts__device_kernels_ptx), err);
        struct {
            CUfunction *out;
            const char *name;
        } kernels[] = {{&d->copy, "gts_copy_kernel"},
                       {&d->fill, "gts_fill_kernel"},
                       {&d->batch, "gts_copy_batch_kernel"}};
        for (size_t k = 0; !rc && k < sizeof kernels / sizeof kernels[0]; ++k)
            rc = check(d, kernels[k].name,
                       api.ModuleGetFunction(kernels[k].out, module, kernels[k].name), err);
        /* the module stays loaded for the life of the context (the process) */
        if (!rc)
            atomic_store_explicit(&d->loaded, true, memory_order_release);
    }
    pthread_mutex_unlock(&context_lock);
    return rc;
}

/* One launch of `f` with a grid of blocks_x * blocks_y blocks;
 * blocks_x 0: one block of one thread, a serial walk. */
static int launch(const cuda_device *d, CUfunction f, const char *name, unsigned blocks_x,
                  unsigned blocks_y, void **params, gts_stream s, gts_error *err)
{
    unsigned threads = blocks_x ? GTS_KERNEL_THREADS : 1;
    return check(d, name,
                 api.LaunchKernel(f, blocks_x ? blocks_x : 1, blocks_y, 1, threads, 1, 1, 0,
                                  (CUstream)s, params, NULL),
                 err);
}

typedef struct kernel_call {
    const cuda_device *d;
    bool serial;
    gts_stream stream;
    const void *item; /* a fill's */
    int64_t itemsize;
    gts_error *err;
} kernel_call;

static int launch_copy(const gts_kernel_array *array, void *ctx)
{
    const kernel_call *call = ctx;
    gts_kernel_array a = *array;
    void *params[] = {&a};
    return launch(call->d, call->d->copy, "cuLaunchKernel (gts_copy_kernel)",
                  call->serial ? 0 : gts__kernel_blocks(a.count), 1, params, call->stream,
                  call->err);
}

static int launch_fill(const gts_kernel_array *array, void *ctx)
{
    const kernel_call *call = ctx;
    gts_kernel_fill f;
    gts__kernel_fill_init(&f, array, call->item, call->itemsize);
    void *params[] = {&f};
    return launch(call->d, call->d->fill, "cuLaunchKernel (gts_fill_kernel)",
                  call->serial ? 0 : gts__kernel_blocks(array->count), 1, params, call->stream,
                  call->err);
}

/* A fill (src NULL) or copy as kernels, on the stream; the caller is in
 * the context and finishes the stream. */
static int run_kernels(cuda_device *d, void *dst, const int64_t *dst_strides, const void *src,
                       const int64_t *src_strides, int ndim, const int64_t *shape,
                       int64_t itemsize, const void *item, gts_stream s, gts_error *err)
{
    gts_kernel_plan plan;
    int rc = load_kernels(d, err);
    if (!rc)
        rc = gts__kernel_plan_init(&plan, dst, dst_strides, src, src_strides, ndim, shape,
                                   itemsize, err);
    if (rc)
        return rc;
    kernel_call call = {d, plan.serial, s, item, itemsize, err};
    return gts__kernel_plan_each(&plan, src ? launch_copy : launch_fill, &call);
}

/* ---- the operations of device memory ------------------------------------------------------ */

/* The largest block: its size rounded up to the driver's 256 bytes still
 * fits in an address difference. */
#define MAX_BLOCK ((int64_t)PTRDIFF_MAX - 255)

static int size_check(int64_t size, const char *what, gts_error *err)
{
    if (size > MAX_BLOCK)
        return gts_error_set(err, GTS_EOVERFLOW, "size: %lld bytes is more than %s can address",
                             (long long)size, what);
    return GTS_OK;
}

static void free_failed(const cuda_device *d, const char *call, CUresult rc, const void *block)
{
    /* nobody to report to: say it, and carry on (after a fault on the GPU
     * every call fails, and aborting at teardown helps nobody) */
    fprintf(stderr, "gtstore: CUDA device %d: %s(%p) failed: %s (%d)\n", d->ordinal, call, block,
            result_name(rc), rc);
}

/* ---- device memory: the pools ---------------------------------------------------------------
 * cuMemAlloc + cuMemFree of 64 MiB cost 92 us on an H100, a stream-ordered
 * pool 1 us. Where the device has pools, its blocks come from a pool of
 * gtstore's own (cuMemPoolCreate; the device's default pool is shared with
 * other libraries, whose memory gtstore would count and trim): allocated
 * and freed on the legacy default stream (cuMemAllocFromPoolAsync,
 * cuMemFreeAsync), so the driver reuses a freed block in that stream's
 * order, after the work queued before the free on it or on any blocking
 * stream. Its release threshold is the maximum, so that it keeps its memory
 * across synchronisations; gtstore trims it to the cache limit instead
 * (after a free that leaves more than the limit unused: the default stream
 * synchronised, then cuMemPoolTrimTo(used + limit)), and releases it all on
 * gts_cache_clear and when an allocation runs out of memory. An allocation
 * counts as a hit when the pool's reservation did not grow.
 * Without pools (or where making one fails): blocks of size classes from
 * cuMemAlloc in a gts__pool, each freed block fenced by an event recorded
 * on the default stream and reused only once the event has completed. */

static int64_t pool_attribute(CUmemoryPool pool, int attribute)
{
    unsigned long long value = 0; /* cuuint64_t */
    api.MemPoolGetAttribute(pool, attribute, &value);
    return value > INT64_MAX ? INT64_MAX : (int64_t)value;
}

/* The pool of `d`, made on first use; NULL where it has none. The caller
 * is in the context. */
static CUmemoryPool device_pool(cuda_device *d)
{
    CUmemoryPool pool = atomic_load_explicit(&d->pool, memory_order_acquire);
    if (pool || !atomic_load_explicit(&d->pools, memory_order_acquire))
        return pool;
    bool made = false;
    pthread_mutex_lock(&context_lock);
    pool = atomic_load_explicit(&d->pool, memory_order_relaxed);
    if (!pool && atomic_load_explicit(&d->pools, memory_order_relaxed)) {
        pool_props props = {.alloc_type = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location_type = CU_MEM_LOCATION_TYPE_DEVICE,
                            .location_id = d->ordinal};
        unsigned long long keep_all = UINT64_MAX;
        if (api.MemPoolCreate(&pool, &props) == CUDA_SUCCESS) {
            api.MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
            atomic_store_explicit(&d->pool, pool, memory_order_release);
            made = true;
        } else {
            pool = NULL; /* the block cache serves, as on devices without pools */
            atomic_store_explicit(&d->pools, false, memory_order_release);
        }
    }
    pthread_mutex_unlock(&context_lock);
    if (made) /* outside the lock: the registry's lock comes first where both are held */
        gts__cache_register(&d->pool_cache);
    return pool;
}

/* Releases the pool's unused memory beyond `keep` bytes, once the frees
 * queued on the default stream have run (the caller is in the context). */
static void pool_trim(cuda_device *d, CUmemoryPool pool, int64_t keep)
{
    api.StreamSynchronize(NULL);
    int64_t used = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    api.MemPoolTrimTo(pool, (size_t)(used > INT64_MAX - keep ? INT64_MAX : used + keep));
    atomic_store(&d->reserved, pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));
}

static int pool_alloc(cuda_device *d, CUmemoryPool pool, int64_t size, CUdeviceptr *out,
                      gts_error *err)
{
    size_t bytes = (size_t)(size ? size : 1);
    CUresult rc = api.MemAllocFromPoolAsync(out, bytes, pool, NULL);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) { /* what the pool keeps may be enough */
        pool_trim(d, pool, 0);
        rc = api.MemAllocFromPoolAsync(out, bytes, pool, NULL);
    }
    if (rc != CUDA_SUCCESS)
        return driver_error(d, "cuMemAllocFromPoolAsync", rc, err);
    int64_t now = pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    atomic_fetch_add(now > atomic_exchange(&d->reserved, now) ? &d->misses : &d->hits, 1);
    return GTS_OK;
}

static void pool_free(cuda_device *d, CUmemoryPool pool, CUdeviceptr block, int64_t size)
{
    CUresult rc = api.MemFreeAsync(block, NULL);
    if (rc != CUDA_SUCCESS) {
        free_failed(d, "cuMemFreeAsync", rc, (void *)(uintptr_t)block);
        return;
    }
    /* The pool's use may drop only once the free has run in stream order
     * (a GPU's driver does so): the block counts as unused already. */
    int64_t limit = gts_cache_limit();
    int64_t used = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    int64_t unused = pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) -
                     (used > size ? used - size : 0);
    if (limit == 0 || unused > limit)
        pool_trim(d, pool, limit);
}

static cuda_device *pool_owner(gts__cache *cache)
{
    return (cuda_device *)((char *)cache - offsetof(cuda_device, pool_cache));
}

static void pool_cache_trim(gts__cache *cache, int64_t keep)
{
    cuda_device *d = pool_owner(cache);
    CUmemoryPool pool = atomic_load(&d->pool);
    if (pool && !enter(d, NULL)) {
        pool_trim(d, pool, keep);
        leave();
    }
}

static void pool_cache_stats(gts__cache *cache, gts__cache_stats *out)
{
    cuda_device *d = pool_owner(cache);
    CUmemoryPool pool = atomic_load(&d->pool);
    if (!pool || enter(d, NULL))
        return;
    out->bytes += pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) -
                  pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    leave();
    out->hits += atomic_load(&d->hits);
    out->misses += atomic_load(&d->misses);
}

/* The block cache's side (device_pool.h): cuMemFree, and events as fences. */
/* cuMemFree of a block of `d` (outside the context); a failure is
 * reported, since a free cannot return one. */
static void free_block(cuda_device *d, void *block)
{
    if (enter(d, NULL))
        return;
    CUresult rc = api.MemFree(dptr(block));
    leave();
    if (rc != CUDA_SUCCESS)
        free_failed(d, "cuMemFree", rc, block);
}

static void block_release(gts__pool *pool, void *block, int64_t size)
{
    (void)size;
    free_block(pool->ctx, block);
}

static bool block_fence(gts__pool *pool, void **fence)
{
    cuda_device *d = pool->ctx;
    CUevent event = NULL;
    if (enter(d, NULL))
        return false;
    bool made = api.EventCreate(&event, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
    if (made && api.EventRecord(event, NULL) != CUDA_SUCCESS) {
        api.EventDestroy(event);
        made = false;
    }
    leave();
    *fence = made ? event : NULL;
    return made;
}

static bool block_passed(gts__pool *pool, void *fence)
{
    (void)pool;
    return api.EventQuery(fence) == CUDA_SUCCESS;
}

static void block_drop(gts__pool *pool, void *fence)
{
    (void)pool;
    api.EventSynchronize(fence);
    api.EventDestroy(fence);
}

static const gts__pool_memory block_memory = {block_release, block_fence, block_passed,
                                              block_drop};

static void init_caches(cuda_device *d, bool pools)
{
    atomic_init(&d->pools, pools);
    atomic_init(&d->pool, NULL);
    d->pool_cache = (gts__cache){
        .kind = GTS__CACHE_DEVICE, .trim = pool_cache_trim, .stats = pool_cache_stats};
    d->blocks = (gts__pool){
        .cache = {.kind = GTS__CACHE_DEVICE, .trim = gts__pool_trim, .stats = gts__pool_stats},
        .memory = &block_memory, .ctx = d, .classes = true};
    pthread_mutex_init(&d->blocks.lock, NULL);
}

/* A block of device memory (the caller is in the context). */
static int block_alloc(cuda_device *d, int64_t size, CUdeviceptr *out, gts_error *err)
{
    CUmemoryPool pool = device_pool(d);
    if (pool)
        return pool_alloc(d, pool, size, out, err);
    void *cached;
    if (gts__pool_take(&d->blocks, size, &cached)) {
        *out = dptr(cached);
        return GTS_OK;
    }
    size_t bytes = (size_t)gts__pool_size(&d->blocks, size);
    CUresult rc = api.MemAlloc(out, bytes);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        gts__pool_trim(&d->blocks.cache, 0);
        rc = api.MemAlloc(out, bytes);
    }
    return check(d, "cuMemAlloc", rc, err);
}

/* Gives a block back to the pool it came from (outside the context). */
static void block_free(cuda_device *d, CUdeviceptr block, int64_t size)
{
    CUmemoryPool pool = atomic_load_explicit(&d->pool, memory_order_acquire);
    if (!pool) {
        gts__pool_put(&d->blocks, (void *)(uintptr_t)block, size);
    } else if (!enter(d, NULL)) {
        pool_free(d, pool, block, size);
        leave();
    }
}

/* Device or managed memory, zeroed on request: one allocation path. */
static int device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, bool managed,
                        void **out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = size_check(size, managed ? "managed memory" : "a CUDA device", err);
    if (rc || (rc = enter(d, err)))
        return rc;
    CUdeviceptr block = 0;
    rc = managed ? check(d, "cuMemAllocManaged",
                         api.MemAllocManaged(&block, (size_t)(size ? size : 1),
                                             CU_MEM_ATTACH_GLOBAL),
                         err)
                 : block_alloc(d, size, &block, err);
    bool allocated = !rc;
    if (!rc && (flags & GTS_ALLOC_ZERO) && size > 0) {
        rc = check(d, "cuMemsetD8", api.MemsetD8(block, 0, (size_t)size), err);
        if (!rc)
            rc = finish(d, NULL, err);
        if (rc && managed)
            api.MemFree(block);
    }
    leave();
    if (rc && allocated && !managed)
        block_free(d, block, size);
    if (!rc)
        *out = (void *)(uintptr_t)block;
    return rc;
}

static int memory_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    return device_alloc(dev, size, flags, false, out, err);
}

static void memory_free(const gts_device_ops *dev, void *block, int64_t size)
{
    block_free(device_of(dev), dptr(block), size);
}

static void managed_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)size;
    free_block(device_of(dev), block);
}

/* How a contiguous transfer goes: cuMemcpy for managed memory finds out
 * from the (unified) addresses where each side is. */
typedef enum direction { TO_DEVICE, TO_HOST, WITHIN, UNIFIED } direction;

/* One contiguous transfer, in the device's context. */
static int transfer(const gts_device_ops *dev, direction how, void *dst, const void *src,
                    int64_t bytes, gts_stream s, gts_error *err)
{
    cuda_device *d = device_of(dev);
    if (bytes == 0)
        return GTS_OK;
    int rc = enter(d, err);
    if (rc)
        return rc;
    switch (how) {
    case TO_DEVICE: rc = htod(d, dptr(dst), src, bytes, s, err); break;
    case TO_HOST: rc = dtoh(d, dst, dptr(src), bytes, s, err); break;
    default: rc = dtod(d, dptr(dst), dptr(src), bytes, s, how == UNIFIED, err);
    }
    leave();
    return rc;
}

static int memory_to_device(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                            gts_stream s, gts_error *err)
{
    return transfer(dev, TO_DEVICE, dst, src, bytes, s, err);
}

static int memory_to_host(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                          gts_stream s, gts_error *err)
{
    return transfer(dev, TO_HOST, dst, src, bytes, s, err);
}

static int memory_within(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                         gts_stream s, gts_error *err)
{
    return transfer(dev, WITHIN, dst, src, bytes, s, err);
}

/* The period (1, 2 or 4) of an item that repeats it and whose span starts
 * aligned to it, else 0. */
static int memset_period(const unsigned char *item, int64_t itemsize, CUdeviceptr first)
{
    for (int period = 1; period <= 4 && period <= itemsize; period *= 2) {
        bool repeats = itemsize % period == 0;
        for (int64_t i = period; repeats && i < itemsize; ++i)
            repeats = item[i] == item[i % period];
        if (repeats)
            return first % (CUdeviceptr)period == 0 ? period : 0;
    }
    return 0;
}

static int memset_span(const cuda_device *d, CUdeviceptr first, int64_t span, int period,
                       const unsigned char *item, gts_stream s, gts_error *err)
{
    CUstream stream = (CUstream)s;
    size_t n = (size_t)(span / period);
    int rc;
    if (period == 1) {
        rc = s ? check(d, "cuMemsetD8Async", api.MemsetD8Async(first, item[0], n, stream), err)
               : check(d, "cuMemsetD8", api.MemsetD8(first, item[0], n), err);
    } else if (period == 2) {
        unsigned short v;
        memcpy(&v, item, 2);
        rc = s ? check(d, "cuMemsetD16Async", api.MemsetD16Async(first, v, n, stream), err)
               : check(d, "cuMemsetD16", api.MemsetD16(first, v, n), err);
    } else {
        unsigned int v;
        memcpy(&v, item, 4);
        rc = s ? check(d, "cuMemsetD32Async", api.MemsetD32Async(first, v, n, stream), err)
               : check(d, "cuMemsetD32", api.MemsetD32(first, v, n), err);
    }
    return rc ? rc : finish(d, s, err);
}

static int memory_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                       const int64_t *strides, int64_t itemsize, const void *item, gts_stream s,
                       gts_error *err)
{
    cuda_device *d = device_of(dev);
    bool valid;
    int64_t low, high;
    int rc = gts__strided_range(ndim, shape, strides, itemsize, &valid, &low, &high, err);
    if (rc)
        return rc;
    /* what the kernel refuses before touching memory, or an array that
     * touches nothing: the kernel says so (data is never dereferenced) */
    if (!valid || !data || !item || !kernel_itemsize(itemsize))
        return gts_fill(data, ndim, shape, strides, itemsize, item, err);
    CUdeviceptr first = dptr(data) + (CUdeviceptr)low; /* modulo 2**64 */
    int64_t span = high - low;
    bool is_dense = dense(ndim, shape, strides, itemsize);
    if ((rc = enter(d, err)))
        return rc;
    int period = is_dense ? memset_period(item, itemsize, first) : 0;
    rc = period ? memset_span(d, first, span, period, item, s, err)
                : run_kernels(d, data, strides, NULL, NULL, ndim, shape, itemsize, item, s, err);
    if (!rc && !period)
        rc = finish(d, s, err);
    leave();
    return rc;
}

/* A copy whose source and destination bytes meet: the source's span is
 * copied to a temporary block first, and the kernel reads it there, so
 * that every element is read before any is written (as gts_copy does). */
static int copy_overlapping(cuda_device *d, void *dst, const int64_t *dst_strides,
                            const void *src, const int64_t *src_strides, int ndim,
                            const int64_t *shape, int64_t itemsize, int64_t slow, int64_t sspan,
                            gts_stream s, gts_error *err)
{
    CUdeviceptr temp = 0, src_first = dptr(src) + (CUdeviceptr)slow;
    int rc = check(d, "cuMemAlloc", api.MemAlloc(&temp, (size_t)sspan), err);
    if (rc)
        return rc;
    rc = dtod(d, temp, src_first, sspan, s, false, err);
    if (!rc) /* element 0 of the copy: the same offset from the temporary */
        rc = run_kernels(d, dst, dst_strides, (const void *)(uintptr_t)(temp - (CUdeviceptr)slow),
                         src_strides, ndim, shape, itemsize, NULL, s, err);
    /* the temporary must outlive the kernel: on the stream, and on return */
    CUresult synced = api.StreamSynchronize((CUstream)s);
    if (!rc)
        rc = check(d, "cuStreamSynchronize", synced, err);
    api.MemFree(temp);
    return rc;
}

static int memory_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                       const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                       int64_t itemsize, gts_stream s, gts_error *err)
{
    cuda_device *d = device_of(dev);
    bool dst_valid, src_valid;
    int64_t dlow, dhigh, slow, shigh;
    int rc =
        gts__strided_range(ndim, shape, dst_strides, itemsize, &dst_valid, &dlow, &dhigh, err);
    if (!rc)
        rc = gts__strided_range(ndim, shape, src_strides, itemsize, &src_valid, &slow, &shigh, err);
    if (rc)
        return rc;
    if (!dst_valid || !src_valid || !dst || !src || !kernel_itemsize(itemsize))
        return gts_copy(dst, dst_strides, src, src_strides, ndim, shape, itemsize, err);
    for (int k = 0; k < ndim; ++k)
        if (shape[k] > 1 && dst_strides[k] == 0) /* refused by the kernel */
            return gts_copy(dst, dst_strides, src, src_strides, ndim, shape, itemsize, err);
    CUdeviceptr dst_first = dptr(dst) + (CUdeviceptr)dlow;
    CUdeviceptr src_first = dptr(src) + (CUdeviceptr)slow;
    int64_t dspan = dhigh - dlow, sspan = shigh - slow;
    bool dst_dense = dense(ndim, shape, dst_strides, itemsize);
    if ((rc = enter(d, err)))
        return rc;
    if (dst_dense && same_strides(ndim, shape, dst_strides, src_strides)) {
        rc = dtod(d, dst_first, src_first, dspan, s, false, err); /* one layout: a memmove */
    } else if (dst == src && same_strides(ndim, shape, dst_strides, src_strides)) {
        rc = GTS_OK; /* every element onto itself */
    } else if (dst_first < src_first + (CUdeviceptr)sspan &&
               src_first < dst_first + (CUdeviceptr)dspan) {
        rc = copy_overlapping(d, dst, dst_strides, src, src_strides, ndim, shape, itemsize, slow,
                              sspan, s, err);
    } else {
        rc = run_kernels(d, dst, dst_strides, src, src_strides, ndim, shape, itemsize, NULL, s,
                         err);
        if (!rc)
            rc = finish(d, s, err);
    }
    leave();
    return rc;
}

/* ---- batches of copies --------------------------------------------------------------------- */

/* A prepared batch: its kernel arrays in device memory, one row of the
 * grid each. */
typedef struct cuda_batch {
    CUdeviceptr table;
    unsigned count;
    unsigned blocks; /* along x: for the largest array */
} cuda_batch;

typedef struct table_builder {
    gts_kernel_array *arrays;
    int64_t count, capacity;
} table_builder;

static int table_append(const gts_kernel_array *array, void *ctx)
{
    table_builder *t = ctx;
    if (t->count == t->capacity) {
        int64_t grown = t->capacity ? 2 * t->capacity : 16;
        void *arrays = grown <= INT32_MAX ? realloc(t->arrays, (size_t)grown * sizeof *array)
                                          : NULL;
        if (!arrays)
            return GTS_ENOMEM;
        t->arrays = arrays;
        t->capacity = grown;
    }
    t->arrays[t->count++] = *array;
    return GTS_OK;
}

/* The kernel arrays of every copy, on the host. */
static int build_table(int count, const gts_strided_copy *copies, table_builder *t,
                       gts_error *err)
{
    for (int i = 0; i < count; ++i) {
        const gts_strided_copy *c = &copies[i];
        gts_kernel_plan plan;
        int rc = gts__kernel_plan_init(&plan, c->dst, c->dst_strides, c->src, c->src_strides,
                                       c->ndim, c->shape, c->itemsize, err);
        if (rc)
            return rc;
        if (plan.serial) /* refused by copy_batch.c first; kept for memory safety */
            return gts_error_set(err, GTS_EINVAL, "copies[%d]: elements that may overlap", i);
        if (gts__kernel_plan_each(&plan, table_append, t))
            return gts_error_set(err, GTS_ENOMEM, "out of memory for a batch of %d copies",
                                 count);
    }
    return GTS_OK;
}

static void memory_batch_release(const gts_device_ops *dev, void *state)
{
    cuda_batch *b = state;
    if (!b)
        return;
    if (b->table)
        free_block(device_of(dev), (void *)(uintptr_t)b->table);
    free(b);
}

static int memory_batch_prepare(const gts_device_ops *dev, int count,
                                const gts_strided_copy *copies, void **out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    table_builder t = {0};
    cuda_batch *b = calloc(1, sizeof *b);
    int rc = b ? build_table(count, copies, &t, err)
               : gts_error_set(err, GTS_ENOMEM, "out of memory for a batch of copies");
    if (!rc && t.count > UINT32_MAX)
        rc = gts_error_set(err, GTS_EOVERFLOW, "a batch of %lld kernel arrays is too large",
                           (long long)t.count);
    for (int64_t i = 0; !rc && i < t.count; ++i) {
        unsigned blocks = gts__kernel_blocks(t.arrays[i].count);
        b->blocks = blocks > b->blocks ? blocks : b->blocks;
    }
    size_t bytes = (size_t)t.count * sizeof *t.arrays;
    if (!rc && t.count > 0 && !(rc = enter(d, err))) {
        rc = load_kernels(d, err);
        if (!rc)
            rc = check(d, "cuMemAlloc", api.MemAlloc(&b->table, bytes), err);
        if (!rc)
            rc = htod(d, b->table, t.arrays, (int64_t)bytes, NULL, err);
        leave();
    }
    free(t.arrays);
    if (rc) {
        memory_batch_release(dev, b);
        return rc;
    }
    b->count = (unsigned)t.count;
    *out = b;
    return GTS_OK;
}

static int memory_batch_run(const gts_device_ops *dev, void *state, gts_stream s,
                            gts_error *err)
{
    cuda_device *d = device_of(dev);
    const cuda_batch *b = state;
    if (b->count == 0)
        return GTS_OK;
    int rc = enter(d, err);
    if (rc)
        return rc;
    for (unsigned first = 0; !rc && first < b->count; first += GTS_KERNEL_MAX_BATCH) {
        unsigned rows = b->count - first < GTS_KERNEL_MAX_BATCH ? b->count - first
                                                                 : GTS_KERNEL_MAX_BATCH;
        CUdeviceptr table = b->table;
        void *params[] = {&table, &first};
        rc = launch(d, d->batch, "cuLaunchKernel (gts_copy_batch_kernel)", b->blocks, rows,
                    params, s, err);
    }
    if (!rc)
        rc = finish(d, s, err);
    leave();
    return rc;
}

/* In the device's context: the default streams (CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD, which gts_device_wait_stream passes on) are the
 * current context's. */
static int any_synchronize(const gts_device_ops *dev, gts_stream s, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = enter(d, err);
    if (rc)
        return rc;
    rc = s ? check(d, "cuStreamSynchronize", api.StreamSynchronize((CUstream)s), err)
           : check(d, "cuCtxSynchronize", api.CtxSynchronize(), err);
    leave();
    return rc;
}

static int any_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = enter(d, err);
    if (rc)
        return rc;
    CUstream stream = NULL;
    rc = check(d, "cuStreamCreate", api.StreamCreate(&stream, CU_STREAM_NON_BLOCKING), err);
    leave();
    if (!rc)
        *out = stream;
    return rc;
}

static void any_stream_destroy(const gts_device_ops *dev, gts_stream s)
{
    cuda_device *d = device_of(dev);
    if (enter(d, NULL))
        return;
    CUresult rc = api.StreamDestroy((CUstream)s);
    leave();
    if (rc != CUDA_SUCCESS)
        free_failed(d, "cuStreamDestroy", rc, s);
}

/* ---- host-accessible memory: pinned and managed --------------------------------------------- */

/* Before the host touches pinned memory: the work queued on the stream given
 * has completed. */
static int pinned_wait(const cuda_device *d, gts_stream s, gts_error *err)
{
    return s ? check(d, "cuStreamSynchronize", api.StreamSynchronize((CUstream)s), err) : GTS_OK;
}

/* Before the host touches managed memory: no GPU work runs in the context
 * (devices without concurrent managed access fault otherwise). */
static int managed_wait(cuda_device *d, gts_error *err)
{
    int rc = enter(d, err);
    if (rc)
        return rc;
    rc = check(d, "cuCtxSynchronize", api.CtxSynchronize(), err);
    leave();
    return rc;
}

/* Pinned memory is host memory of whole pages that cuMemHostRegister
 * page-locks (0.2 ms for 1 MiB and 2.5 ms for 64 MiB on an H100, against
 * 0.73 and 27 ms for cuMemHostAlloc), kept in a gts__pool when freed and
 * reused at once: the contract of device.h has every transfer that reads
 * or writes it synchronised before it is freed. */
static void pinned_release(gts__pool *pool, void *block, int64_t size)
{
    cuda_device *d = pool->ctx;
    if (enter(d, NULL))
        return; /* kept: host memory the GPU may reach must not be reused */
    CUresult rc = api.MemHostUnregister(block);
    leave();
    if (rc != CUDA_SUCCESS)
        free_failed(d, "cuMemHostUnregister", rc, block);
    else
        gts__host_pages_free(block, size);
}

static const gts__pool_memory pinned_memory = {.release = pinned_release};
static gts__pool pinned_pool =
    GTS__POOL_INIT(GTS__CACHE_PINNED, &pinned_memory, &devices[0], true);

static int pinned_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = size_check(size, "pinned host memory", err);
    if (rc)
        return rc;
    if (gts__pool_take(&pinned_pool, size, out)) {
        if (flags & GTS_ALLOC_ZERO)
            gts__zero(*out, size);
        return GTS_OK;
    }
    int64_t bytes = gts__pool_size(&pinned_pool, size);
    void *block;
    if ((rc = gts__host_pages_alloc(bytes, flags & GTS_ALLOC_ZERO, &block, err)))
        return rc;
    if (!(rc = enter(d, err))) {
        rc = check(d, "cuMemHostRegister",
                   api.MemHostRegister(block, (size_t)bytes, CU_MEMHOSTREGISTER_PORTABLE), err);
        leave();
    }
    if (rc)
        gts__host_pages_free(block, bytes);
    else
        *out = block;
    return rc;
}

static void pinned_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)dev;
    gts__pool_put(&pinned_pool, block, size);
}

static int pinned_move(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                       gts_stream s, gts_error *err)
{
    int rc = pinned_wait(device_of(dev), s, err);
    if (!rc && bytes > 0)
        memmove(dst, src, (size_t)bytes);
    return rc;
}

static int pinned_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                       const int64_t *strides, int64_t itemsize, const void *item, gts_stream s,
                       gts_error *err)
{
    int rc = pinned_wait(device_of(dev), s, err);
    return rc ? rc : gts_fill(data, ndim, shape, strides, itemsize, item, err);
}

static int pinned_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                       const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                       int64_t itemsize, gts_stream s, gts_error *err)
{
    int rc = pinned_wait(device_of(dev), s, err);
    return rc ? rc : gts_copy(dst, dst_strides, src, src_strides, ndim, shape, itemsize, err);
}

static int managed_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                         gts_error *err)
{
    return device_alloc(dev, size, flags, true, out, err);
}

/* Transfers to, from and within managed memory. */
static int managed_transfer(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                            gts_stream s, gts_error *err)
{
    return transfer(dev, UNIFIED, dst, src, bytes, s, err);
}

static int managed_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t itemsize, const void *item, gts_stream s,
                        gts_error *err)
{
    (void)s;
    int rc = managed_wait(device_of(dev), err);
    return rc ? rc : gts_fill(data, ndim, shape, strides, itemsize, item, err);
}

static int managed_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                        const void *src, const int64_t *src_strides, int ndim,
                        const int64_t *shape, int64_t itemsize, gts_stream s, gts_error *err)
{
    (void)s;
    int rc = managed_wait(device_of(dev), err);
    return rc ? rc : gts_copy(dst, dst_strides, src, src_strides, ndim, shape, itemsize, err);
}

/* ---- the registry's side ------------------------------------------------------------------- */

static void build_ops(void)
{
    for (int n = 0; n < device_count; ++n) {
        cuda_device *d = &devices[n];
        snprintf(d->names[0], NAME_SIZE, "cuda:%d", n);
        snprintf(d->names[1], NAME_SIZE, "cuda_managed:%d", n);
        memory_ops[n] = (gts_device_ops){
            .id = {GTS_DL_CUDA, n},
            .name = d->names[0],
            .host_accessible = false,
            .ctx = d,
            .alloc = memory_alloc,
            .free = memory_free,
            .copy_to_device = memory_to_device,
            .copy_to_host = memory_to_host,
            .copy_within = memory_within,
            .fill = memory_fill,
            .copy = memory_copy,
            .synchronize = any_synchronize,
            .stream_create = any_stream_create,
            .stream_destroy = any_stream_destroy,
            .batch_prepare = memory_batch_prepare,
            .batch_run = memory_batch_run,
            .batch_release = memory_batch_release,
            .kind = GTS_MEMORY_GPU,
            .cuda_array_interface = true,
            .engine = GTS_ENGINE_CUPY,
        };
        managed_ops[n] = (gts_device_ops){
            .id = {GTS_DL_CUDA_MANAGED, n},
            .name = d->names[1],
            .host_accessible = true,
            .ctx = d,
            .alloc = managed_alloc,
            .free = managed_free,
            .copy_to_device = managed_transfer,
            .copy_to_host = managed_transfer,
            .copy_within = managed_transfer,
            .fill = managed_fill,
            .copy = managed_copy,
            .synchronize = any_synchronize,
            .stream_create = any_stream_create,
            .stream_destroy = any_stream_destroy,
            .kind = GTS_MEMORY_MANAGED,
            .owner = &memory_ops[n],
            .cuda_array_interface = true,
            .engine = GTS_ENGINE_CUPY,
        };
    }
    snprintf(devices[0].names[2], NAME_SIZE, "cuda_host:0");
    pinned_ops = (gts_device_ops){
        .id = {GTS_DL_CUDA_HOST, 0},
        .name = devices[0].names[2],
        .host_accessible = true,
        .ctx = &devices[0],
        .alloc = pinned_alloc,
        .free = pinned_free,
        .copy_to_device = pinned_move,
        .copy_to_host = pinned_move,
        .copy_within = pinned_move,
        .fill = pinned_fill,
        .copy = pinned_copy,
        .synchronize = any_synchronize,
        .stream_create = any_stream_create,
        .stream_destroy = any_stream_destroy,
        .kind = GTS_MEMORY_PINNED,
        .engine = GTS_ENGINE_NUMPY,
    };
}

static void initialize(void)
{
    load();
    if (init_code == GTS_OK)
        build_ops();
}

static int ready(void)
{
    pthread_once(&init_once, initialize);
    return init_code;
}

int gts_device_cuda_status(int *count, int *version, gts_error *err)
{
    int rc = ready();
    if (count)
        *count = rc ? 0 : device_count;
    if (version)
        *version = driver_version; /* known once the driver answered, even if cuInit failed */
    if (rc)
        return gts_error_set(err, rc, "CUDA: %s", init_message);
    return GTS_OK;
}

static const char *kind_name(int32_t type)
{
    return type == GTS_DL_CUDA ? "CUDA" : type == GTS_DL_CUDA_HOST ? "CUDA host" : "CUDA managed";
}

int gts__cuda_get(gts_device_id id, const gts_device_ops **out, gts_error *err)
{
    const char *kind = kind_name(id.type);
    int rc = ready();
    if (rc)
        return gts_error_set(err, rc, "device: (%d, %d) (%s): %s", (int)id.type, (int)id.id, kind,
                             init_message);
    if (id.type == GTS_DL_CUDA_HOST) {
        if (id.id != 0)
            return gts_error_set(err, GTS_ENOTFOUND,
                                 "device: (%d, %d) does not exist: there is no %s device %d "
                                 "(pinned host memory is device 0)",
                                 (int)id.type, (int)id.id, kind, (int)id.id);
        *out = &pinned_ops;
        return GTS_OK;
    }
    if (id.id < 0 || id.id >= device_count)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "device: (%d, %d) does not exist: there is no %s device %d (%d "
                             "found)",
                             (int)id.type, (int)id.id, kind, (int)id.id, device_count);
    if (id.type == GTS_DL_CUDA) {
        *out = &memory_ops[id.id];
        return GTS_OK;
    }
    if (!devices[id.id].managed)
        return gts_error_set(err, GTS_ENOTSUP,
                             "device: (%d, %d): CUDA device %d does not support managed memory",
                             (int)id.type, (int)id.id, (int)id.id);
    *out = &managed_ops[id.id];
    return GTS_OK;
}

/* What the driver knows of an address: its memory type (0 for memory it
 * does not know, such as pageable host memory: cuPointerGetAttributes
 * answers that as a success, where cuPointerGetAttribute fails and tools
 * such as compute-sanitizer report the failure), whether it is managed,
 * and its device. */
static CUresult pointer_attributes(const void *address, unsigned int *type, int *managed,
                                   int *ordinal)
{
    int attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[] = {type, managed, ordinal};
    return api.PointerGetAttributes(3, attributes, data, dptr(address));
}

int gts__cuda_locate(const void *address, const gts_device_ops **out, gts_error *err)
{
    int rc = ready();
    if (rc)
        return gts_error_set(err, GTS_ENOTFOUND, "address %p: no CUDA (%s)", address,
                             init_message);
    /* any context will do with unified addressing: device 0's */
    if ((rc = enter(&devices[0], err)))
        return rc;
    unsigned int type = 0;
    int managed = 0, ordinal = -1;
    CUresult cu = pointer_attributes(address, &type, &managed, &ordinal);
    leave();
    if (cu != CUDA_SUCCESS || type == 0)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "address %p is not CUDA memory (cuPointerGetAttributes: %s)",
                             address, cu != CUDA_SUCCESS ? result_name(cu) : "no memory type");
    if (type == CU_MEMORYTYPE_HOST) {
        *out = &pinned_ops;
        return GTS_OK;
    }
    if (ordinal < 0 || ordinal >= device_count || (managed && !devices[ordinal].managed))
        return gts_error_set(err, GTS_ENOTFOUND,
                             "address %p is memory of CUDA device %d, which gtstore does not "
                             "reach (%d devices)",
                             address, ordinal, device_count);
    *out = managed ? &managed_ops[ordinal] : &memory_ops[ordinal];
    return GTS_OK;
}

size_t gts__cuda_list(const gts_device_ops **out, size_t capacity)
{
    if (ready())
        return 0;
    size_t n = 0;
#define ADD(ops)                                                                                  \
    do {                                                                                          \
        if (n < capacity)                                                                         \
            out[n] = (ops);                                                                       \
        ++n;                                                                                      \
    } while (0)
    for (int k = 0; k < device_count; ++k)
        ADD(&memory_ops[k]);
    ADD(&pinned_ops);
    for (int k = 0; k < device_count; ++k)
        if (devices[k].managed)
            ADD(&managed_ops[k]);
#undef ADD
    return n;
}
