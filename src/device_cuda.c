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
 * - (GTS_DL_CUDA, n): device memory, cuMemAlloc. Not host-accessible.
 * - (GTS_DL_CUDA_MANAGED, n): managed memory, cuMemAllocManaged with
 *   CU_MEM_ATTACH_GLOBAL, where the device supports it
 *   (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY). Host-accessible.
 * and once, (GTS_DL_CUDA_HOST, 0): pinned host memory, cuMemHostAlloc with
 * CU_MEMHOSTALLOC_PORTABLE (usable by every context), allocated in device
 * 0's context. Host-accessible.
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
 * Fill and strided copy of device memory: no kernel runs on the GPU yet.
 * - a fill of a dense target (its elements cover the bytes [low, high) of
 *   gts_strided_extent exactly once, in any order and direction) with an
 *   item that repeats a 1-, 2- or 4-byte pattern is one cuMemsetD8/D16/D32;
 * - a copy between two dense arrays with the same strides is one device to
 *   device copy of their span;
 * - everything else stages through host memory: the span [low, high) of the
 *   source (and of the destination, unless it is dense) is copied to the
 *   host, the host kernels of kernels.h (gts_fill, gts_copy) run there, and
 *   the destination's span is copied back. That is correct for any strides
 *   and overlap (the source is read in full before anything is written) but
 *   costs a round trip over the bus and rewrites the bytes between the
 *   destination's elements with the values read before (work queued on
 *   other streams must not write them meanwhile). The staging memory is
 *   pinned (a cached buffer of up to STAGING_PINNED_MAX bytes) where
 *   available, else pageable host memory; a staged operation waits for its
 *   stream before it returns. A PTX kernel loaded with cuModuleLoadData is
 *   the planned replacement; it is not written yet because no GPU was
 *   available to measure it against staging.
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
#include "internal.h"

/* ---- the driver API, declared here ------------------------------------------
 * The few types, constants and prototypes used, as cuda.h declares them for
 * the ABI of CUDA_API_VERSION (the _v2 entry points where there are two). */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
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
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
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
    CUresult (*PointerGetAttribute)(void *data, int attribute, CUdeviceptr pointer);
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
    ENTRY("cuPointerGetAttribute", PointerGetAttribute),
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
#define STAGING_PINNED_MAX ((int64_t)64 << 20)

typedef struct cuda_device {
    int ordinal;
    CUdevice handle;
    bool managed; /* supports managed memory */
    _Atomic(CUcontext) context; /* the retained primary context; NULL until first use */
    char names[3][NAME_SIZE];   /* of its memory, managed and (device 0) pinned devices */
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

/* The pinned staging buffer: one, grown on demand, used by one operation at
 * a time (others stage through pageable memory meanwhile). */
static pthread_mutex_t staging_lock = PTHREAD_MUTEX_INITIALIZER;
static char *staging_pinned;
static int64_t staging_pinned_size;

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
        int managed = 0;
        d->ordinal = n;
        if ((rc = api.DeviceGet(&d->handle, n)) != CUDA_SUCCESS ||
            (rc = api.DeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
                                         d->handle)) != CUDA_SUCCESS) {
            init_fail(GTS_ENOTSUP, "%s: cannot query CUDA device %d: %s (%d)", path, n,
                      result_name(rc), rc);
            return;
        }
        d->managed = managed != 0;
        atomic_init(&d->context, NULL);
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

/* ---- staging through the host ----------------------------------------------------------- */

typedef struct staging {
    char *memory;
    int64_t size;
    bool pinned;
} staging;

/* Host memory for spans of `a` and `b` bytes placed by staging_place; the
 * caller is in a context (cuMemHostAlloc needs one). */
static int staging_get(staging *st, int64_t a, int64_t b, gts_error *err)
{
    int64_t size;
    st->pinned = false;
    st->memory = NULL;
    st->size = 0;
    if (a > INT64_MAX / 4 || b > INT64_MAX / 4 || gts_add_overflow(a + 128, b + 128, &size))
        return gts_error_set(err, GTS_EOVERFLOW,
                             "the %lld + %lld bytes to stage through the host do not fit in "
                             "64 bits",
                             (long long)a, (long long)b);
    if (size <= STAGING_PINNED_MAX && pthread_mutex_trylock(&staging_lock) == 0) {
        if (staging_pinned_size < size) {
            int64_t grown = (int64_t)1 << 20;
            while (grown < size)
                grown *= 2;
            void *memory = NULL;
            if (api.MemHostAlloc(&memory, (size_t)grown, CU_MEMHOSTALLOC_PORTABLE) ==
                CUDA_SUCCESS) {
                if (staging_pinned)
                    api.MemFreeHost(staging_pinned);
                staging_pinned = memory;
                staging_pinned_size = grown;
            }
        }
        if (staging_pinned_size >= size) {
            st->memory = staging_pinned;
            st->size = size;
            st->pinned = true;
            return GTS_OK;
        }
        pthread_mutex_unlock(&staging_lock);
    }
    void *memory;
    int rc = gts__host_alloc(size, 0, &memory, err);
    st->memory = memory;
    st->size = size;
    return rc;
}

static void staging_put(staging *st)
{
    if (st->pinned)
        pthread_mutex_unlock(&staging_lock);
    else
        gts__host_free(st->memory, st->size);
}

/* Where in staging memory a device span starting at `first` goes: at the
 * same address modulo 64 as on the device, so that the host kernels see the
 * elements with the alignment they have there. `offset` advances past it. */
static char *staging_place(const staging *st, int64_t *offset, CUdeviceptr first, int64_t span)
{
    char *place = st->memory + *offset + (int64_t)(first % 64);
    *offset += 64 + (span + 63) / 64 * 64;
    return place;
}

/* Waits for the stream of a staged operation: its host memory is reused. */
static int stage_wait(const cuda_device *d, gts_stream s, gts_error *err)
{
    return check(d, "cuStreamSynchronize", api.StreamSynchronize((CUstream)s), err);
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

/* Device or managed memory, zeroed on request: one allocation path. */
static int device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, bool managed,
                        void **out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = size_check(size, managed ? "managed memory" : "a CUDA device", err);
    if (rc || (rc = enter(d, err)))
        return rc;
    CUdeviceptr block = 0;
    size_t bytes = (size_t)(size ? size : 1);
    rc = managed ? check(d, "cuMemAllocManaged",
                         api.MemAllocManaged(&block, bytes, CU_MEM_ATTACH_GLOBAL), err)
                 : check(d, "cuMemAlloc", api.MemAlloc(&block, bytes), err);
    if (!rc && (flags & GTS_ALLOC_ZERO) && size > 0) {
        rc = check(d, "cuMemsetD8", api.MemsetD8(block, 0, (size_t)size), err);
        if (!rc)
            rc = finish(d, NULL, err);
        if (rc)
            api.MemFree(block);
    }
    leave();
    if (!rc)
        *out = (void *)(uintptr_t)block;
    return rc;
}

static int memory_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    return device_alloc(dev, size, flags, false, out, err);
}

static void free_failed(const cuda_device *d, const char *call, CUresult rc, const void *block)
{
    /* nobody to report to: say it, and carry on (after a fault on the GPU
     * every call fails, and aborting at teardown helps nobody) */
    fprintf(stderr, "gtstore: CUDA device %d: %s(%p) failed: %s (%d)\n", d->ordinal, call, block,
            result_name(rc), rc);
}

static void memory_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)size;
    cuda_device *d = device_of(dev);
    if (enter(d, NULL))
        return;
    CUresult rc = api.MemFree(dptr(block));
    leave();
    if (rc != CUDA_SUCCESS)
        free_failed(d, "cuMemFree", rc, block);
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
    if (period) {
        rc = memset_span(d, first, span, period, item, s, err);
    } else {
        staging st;
        int64_t offset = 0;
        if (!(rc = staging_get(&st, span, 0, err))) {
            char *host = staging_place(&st, &offset, first, span);
            if (!is_dense && !(rc = dtoh(d, host, first, span, s, err)) && s)
                rc = stage_wait(d, s, err);
            if (!rc)
                rc = gts_fill(host - low, ndim, shape, strides, itemsize, item, err);
            if (!rc && !(rc = htod(d, first, host, span, s, err)) && s)
                rc = stage_wait(d, s, err);
            staging_put(&st);
        }
    }
    leave();
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
    } else {
        staging st;
        int64_t offset = 0;
        if (!(rc = staging_get(&st, dspan, sspan, err))) {
            char *host_dst = staging_place(&st, &offset, dst_first, dspan);
            char *host_src = staging_place(&st, &offset, src_first, sspan);
            rc = dtoh(d, host_src, src_first, sspan, s, err);
            if (!rc && !dst_dense)
                rc = dtoh(d, host_dst, dst_first, dspan, s, err);
            if (!rc && s)
                rc = stage_wait(d, s, err);
            if (!rc)
                rc = gts_copy(host_dst - dlow, dst_strides, host_src - slow, src_strides, ndim,
                              shape, itemsize, err);
            if (!rc && !(rc = htod(d, dst_first, host_dst, dspan, s, err)) && s)
                rc = stage_wait(d, s, err);
            staging_put(&st);
        }
    }
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
    return s ? stage_wait(d, s, err) : GTS_OK;
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

static int pinned_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                        gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = size_check(size, "pinned host memory", err);
    if (rc || (rc = enter(d, err)))
        return rc;
    void *block = NULL;
    rc = check(d, "cuMemHostAlloc",
               api.MemHostAlloc(&block, (size_t)(size ? size : 1), CU_MEMHOSTALLOC_PORTABLE), err);
    leave();
    if (rc)
        return rc;
    if (flags & GTS_ALLOC_ZERO)
        gts__zero(block, size);
    *out = block;
    return GTS_OK;
}

static void pinned_free(const gts_device_ops *dev, void *block, int64_t size)
{
    (void)size;
    cuda_device *d = device_of(dev);
    if (enter(d, NULL))
        return;
    CUresult rc = api.MemFreeHost(block);
    leave();
    if (rc != CUDA_SUCCESS)
        free_failed(d, "cuMemFreeHost", rc, block);
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
        };
        managed_ops[n] = (gts_device_ops){
            .id = {GTS_DL_CUDA_MANAGED, n},
            .name = d->names[1],
            .host_accessible = true,
            .ctx = d,
            .alloc = managed_alloc,
            .free = memory_free,
            .copy_to_device = managed_transfer,
            .copy_to_host = managed_transfer,
            .copy_within = managed_transfer,
            .fill = managed_fill,
            .copy = managed_copy,
            .synchronize = any_synchronize,
            .stream_create = any_stream_create,
            .stream_destroy = any_stream_destroy,
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

/* One attribute of a pointer; CUDA_ERROR_INVALID_VALUE for memory the
 * driver does not know (pageable host memory). */
static CUresult pointer_attribute(void *data, int attribute, const void *address)
{
    return api.PointerGetAttribute(data, attribute, dptr(address));
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
    CUresult cu = pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address);
    if (cu == CUDA_SUCCESS && type != CU_MEMORYTYPE_HOST)
        cu = pointer_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address);
    if (cu == CUDA_SUCCESS && type != CU_MEMORYTYPE_HOST)
        cu = pointer_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address);
    leave();
    if (cu != CUDA_SUCCESS)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "address %p is not CUDA memory (cuPointerGetAttribute: %s (%d))",
                             address, result_name(cu), cu);
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
