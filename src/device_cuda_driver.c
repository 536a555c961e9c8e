/* Loading the CUDA driver, its errors, and the contexts (device_cuda.h). */
#define _POSIX_C_SOURCE 200809L
#include "device_cuda.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- state ------------------------------------------------------------------ */

int gts__cuda_init_code;                                /* GTS_OK, or why CUDA is absent */
char gts__cuda_init_message[GTS_ERROR_MESSAGE_SIZE];
cuda_api gts__cuda_api;
int gts__cuda_driver_version;
int gts__cuda_device_count;                             /* usable: at most MAX_DEVICES */
cuda_device gts__cuda_devices[MAX_DEVICES];
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;


/* ---- errors ------------------------------------------------------------------- */

const char *gts__cuda_result_name(CUresult rc)
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

int gts__cuda_error(const cuda_device *d, const char *call, CUresult rc, gts_error *err)
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
                         gts__cuda_result_name(rc), rc, *text ? ": " : "", text);
}

void gts__cuda_free_failed(const cuda_device *d, const char *call, CUresult rc, const void *block)
{
    /* nobody to report to: say it, and carry on (after a fault on the GPU
     * every call fails, and aborting at teardown helps nobody) */
    fprintf(stderr, "gtstore: CUDA device %d: %s(%p) failed: %s (%d)\n", d->ordinal, call, block,
            gts__cuda_result_name(rc), rc);
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
    vsnprintf(gts__cuda_init_message, sizeof gts__cuda_init_message, format, args);
    va_end(args);
    gts__cuda_init_code = code;
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

void gts__cuda_load(void)
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
            CUresult rc = api.DriverGetVersion(&gts__cuda_driver_version);
            if (rc != CUDA_SUCCESS) {
                init_fail(GTS_ENOTSUP, "%s: cuDriverGetVersion failed: %s (%d)%s", path,
                          gts__cuda_result_name(rc), rc, result_hint(rc));
                return;
            }
            if (gts__cuda_driver_version < CUDA_MIN_VERSION) {
                init_fail(GTS_ENOTSUP,
                          "%s: the CUDA driver is version %d.%d; libgtstore needs 11.3 or newer",
                          path, gts__cuda_driver_version / 1000,
                          gts__cuda_driver_version % 1000 / 10);
                return;
            }
            version = gts__cuda_driver_version < CUDA_API_VERSION ? gts__cuda_driver_version
                                                                  : CUDA_API_VERSION;
        }
        void *pfn = NULL;
        int status = 0;
        CUresult rc = gpa_v2 ? gpa_v2(entries[i].name, &pfn, version,
                                      CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status)
                             : gpa_v1(entries[i].name, &pfn, version,
                                      CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_FOUND) {
            init_fail(GTS_ENOTSUP, "%s: cuGetProcAddress(\"%s\", %d) failed: %s (%d)%s", path,
                      entries[i].name, version, gts__cuda_result_name(rc), rc, result_hint(rc));
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
                      path, gts__cuda_driver_version / 1000,
                      gts__cuda_driver_version % 1000 / 10, entries[i].name, version / 1000,
                      version % 1000 / 10);
            return;
        }
        memcpy((char *)&api + entries[i].offset, &pfn, sizeof pfn);
    }

    CUresult rc = api.Init(0);
    if (rc != CUDA_SUCCESS) {
        init_fail(rc == CUDA_ERROR_NO_DEVICE ? GTS_ENOTFOUND : GTS_ENOTSUP,
                  "%s: cuInit failed: %s (%d)%s", path, gts__cuda_result_name(rc), rc,
                  result_hint(rc));
        return;
    }
    int count = 0;
    if ((rc = api.DeviceGetCount(&count)) != CUDA_SUCCESS) {
        init_fail(GTS_ENOTSUP, "%s: cuDeviceGetCount failed: %s (%d)", path,
                  gts__cuda_result_name(rc), rc);
        return;
    }
    if (count <= 0) {
        init_fail(GTS_ENOTFOUND, "the CUDA driver %d.%d (%s) found no device",
                  gts__cuda_driver_version / 1000, gts__cuda_driver_version % 1000 / 10, path);
        return;
    }
    if (count > MAX_DEVICES)
        count = MAX_DEVICES;
    for (int n = 0; n < count; ++n) {
        cuda_device *d = &gts__cuda_devices[n];
        int managed = 0, pools = 0;
        d->ordinal = n;
        if ((rc = api.DeviceGet(&d->handle, n)) != CUDA_SUCCESS ||
            (rc = api.DeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
                                         d->handle)) != CUDA_SUCCESS ||
            (rc = api.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                         d->handle)) != CUDA_SUCCESS) {
            init_fail(GTS_ENOTSUP, "%s: cannot query CUDA device %d: %s (%d)", path, n,
                      gts__cuda_result_name(rc), rc);
            return;
        }
        d->managed = managed != 0;
        atomic_init(&d->context, NULL);
        atomic_init(&d->pools, pools != 0);
    }
    gts__cuda_device_count = count;
}

/* ---- contexts ------------------------------------------------------------------- */

int gts__cuda_enter(cuda_device *d, gts_error *err)
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
            return gts__cuda_error(d, "cuDevicePrimaryCtxRetain", rc, err);
    }
    return check(d, "cuCtxPushCurrent", api.CtxPushCurrent(context), err);
}

