/* A fake CUDA driver library for the tests of src/device_cuda.c: a shared
 * library that test_device_cuda loads through GTSTORE_LIBCUDA, so that the
 * loader, the registry and every operation of the CUDA devices run on
 * machines without a GPU. It is a test double, not an emulator of CUDA's
 * performance or asynchrony: every call completes at once.
 *
 * Like the real driver it exports cuGetProcAddress_v2 and cuGetProcAddress
 * (built with FAKE_CUDA_V1: only cuGetProcAddress, as drivers before 12.5;
 * with FAKE_CUDA_NO_GPA: neither) and hands out the entry points through
 * them, refusing a CUDA version above its own (CUDA_ERROR_INVALID_VALUE).
 * It checks what the real driver leaves undefined or checks: memory calls
 * need a current context, device addresses must lie in live blocks (they
 * are host addresses plus 2**52, so that the library dereferencing one
 * faults), cuMemcpyDtoD must not overlap, cuMemsetD16/D32 need aligned
 * targets, streams must be live. Managed and pinned memory are host memory.
 *
 * The environment variable FAKE_CUDA configures it, comma-separated:
 *   devices=N          GPUs (default 2)
 *   version=V          cuDriverGetVersion (default 12040)
 *   init=R             cuInit returns R (e.g. 34: the stub library)
 *   nomanaged=N        GPU N does not support managed memory
 *   missing=NAME       cuGetProcAddress finds no NAME
 *   notfound=1         ... and answers CUDA_ERROR_NOT_FOUND for it, as drivers
 *                      before 12.0 did (else success and NULL, as documented)
 * fake_cuda_stats() returns what it has done, for the test's checks. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_context *CUcontext;
typedef struct fake_stream *CUstream;

enum {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NOT_INITIALIZED = 3,
    INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400
};

#define BIAS ((uintptr_t)1 << 52)
#define MAX_FAKE_DEVICES 8
#define STREAM_MAGIC 0x5354524du

/* ---- configuration and state ---------------------------------------------------- */

static struct {
    int devices, version, init_result, no_managed, not_found;
    char missing[64];
} config = {2, 12040, 0, -1, 0, ""};

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_cuda_stats stats;
static int initialized;

static void read_config(void)
{
    const char *text = getenv("FAKE_CUDA");
    char buffer[256];
    snprintf(buffer, sizeof buffer, "%s", text ? text : "");
    char *save = NULL;
    for (char *item = strtok_r(buffer, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (!strncmp(item, "devices=", 8))
            config.devices = atoi(item + 8);
        else if (!strncmp(item, "version=", 8))
            config.version = atoi(item + 8);
        else if (!strncmp(item, "init=", 5))
            config.init_result = atoi(item + 5);
        else if (!strncmp(item, "nomanaged=", 10))
            config.no_managed = atoi(item + 10);
        else if (!strncmp(item, "notfound=", 9))
            config.not_found = atoi(item + 9);
        else if (!strncmp(item, "missing=", 8))
            snprintf(config.missing, sizeof config.missing, "%s", item + 8);
    }
    if (config.devices > MAX_FAKE_DEVICES)
        config.devices = MAX_FAKE_DEVICES;
}

struct fake_context {
    int device;
    int retained;
};
static struct fake_context contexts[MAX_FAKE_DEVICES];

struct fake_stream {
    unsigned magic;
    int device;
};

/* The current-context stack of each thread. */
static _Thread_local CUcontext context_stack[16];
static _Thread_local int context_depth;

enum { DEVICE_MEMORY, PINNED_MEMORY, MANAGED_MEMORY };

typedef struct block {
    struct block *next;
    char *host;
    size_t size;
    int kind;
    int device; /* the device whose context allocated it */
} block;
static block *blocks;

static void count(long long *counter)
{
    pthread_mutex_lock(&lock);
    ++*counter;
    pthread_mutex_unlock(&lock);
}

static CUresult fail(CUresult rc)
{
    count(&stats.errors);
    return rc;
}

static int current(void)
{
    return context_depth > 0 ? context_stack[context_depth - 1]->device : -1;
}

/* The live block of device or managed memory holding [address, address +
 * bytes): the host bytes behind the address, and the block's kind; NULL if
 * there is none. */
static char *find_in(uintptr_t address, size_t bytes, bool pinned, int *kind, int *device)
{
    char *host = NULL;
    pthread_mutex_lock(&lock);
    for (block *b = blocks; b; b = b->next) {
        if (b->kind == PINNED_MEMORY && !pinned)
            continue;
        uintptr_t base = (uintptr_t)b->host + (b->kind == DEVICE_MEMORY ? BIAS : 0);
        if (address >= base && address - base <= b->size && bytes <= b->size - (address - base)) {
            host = b->host + (address - base);
            if (kind)
                *kind = b->kind;
            if (device)
                *device = b->device;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return host;
}

static char *find(uintptr_t address, size_t bytes, int *kind)
{
    return find_in(address, bytes, false, kind, NULL);
}

/* Whether an address given as host memory is in fact device memory. */
static int is_device_memory(const void *address)
{
    int kind = -1;
    return find((uintptr_t)address, 0, &kind) && kind == DEVICE_MEMORY;
}

/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: the default streams, valid
 * handles wherever a context is current (what the CUDA array interface's
 * and DLPack's stream numbers 1 and 2 name). */
#define LEGACY_STREAM ((CUstream)(uintptr_t)1)
#define PER_THREAD_STREAM ((CUstream)(uintptr_t)2)

static CUresult check_stream(CUstream s)
{
    if ((s == LEGACY_STREAM || s == PER_THREAD_STREAM) && current() < 0)
        return fail(INVALID_CONTEXT);
    if (s && s != LEGACY_STREAM && s != PER_THREAD_STREAM && s->magic != STREAM_MAGIC)
        return fail(INVALID_HANDLE);
    return OK;
}

/* ---- the entry points --------------------------------------------------------------- */

static CUresult DriverGetVersion(int *version)
{
    *version = config.version;
    return OK;
}

static CUresult GetErrorName(CUresult error, const char **name)
{
    switch (error) {
    case OK: *name = "CUDA_SUCCESS"; return OK;
    case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
    case OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
    case 34: *name = "CUDA_ERROR_STUB_LIBRARY"; return OK;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return OK;
    case INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
    default: *name = NULL; return INVALID_VALUE;
    }
}

static CUresult GetErrorString(CUresult error, const char **text)
{
    *text = error == 34 ? "CUDA driver is a stub library" : "fake error";
    return OK;
}

static CUresult Init(unsigned int flags)
{
    if (flags != 0)
        return fail(INVALID_VALUE);
    if (config.init_result)
        return config.init_result;
    initialized = 1;
    return OK;
}

static CUresult DeviceGetCount(int *n)
{
    if (!initialized)
        return fail(NOT_INITIALIZED);
    *n = config.devices;
    return OK;
}

static CUresult DeviceGet(CUdevice *device, int ordinal)
{
    if (!initialized)
        return fail(NOT_INITIALIZED);
    if (ordinal < 0 || ordinal >= config.devices)
        return fail(INVALID_DEVICE);
    *device = ordinal + 100; /* handles are not ordinals */
    return OK;
}

static CUresult DeviceGetAttribute(int *value, int attribute, CUdevice device)
{
    if (device < 100 || device >= 100 + config.devices)
        return fail(INVALID_DEVICE);
    *value = attribute == 83 ? device - 100 != config.no_managed : 0;
    return OK;
}

static CUresult DevicePrimaryCtxRetain(CUcontext *context, CUdevice device)
{
    if (device < 100 || device >= 100 + config.devices)
        return fail(INVALID_DEVICE);
    pthread_mutex_lock(&lock);
    contexts[device - 100].device = device - 100;
    ++contexts[device - 100].retained;
    ++stats.retains;
    pthread_mutex_unlock(&lock);
    *context = &contexts[device - 100];
    return OK;
}

static CUresult CtxPushCurrent(CUcontext context)
{
    if (!context || !context->retained || context_depth == 16)
        return fail(INVALID_CONTEXT);
    context_stack[context_depth++] = context;
    count(&stats.pushes);
    return OK;
}

static CUresult CtxPopCurrent(CUcontext *context)
{
    if (context_depth == 0)
        return fail(INVALID_CONTEXT);
    *context = context_stack[--context_depth];
    count(&stats.pops);
    return OK;
}

static CUresult CtxSynchronize(void)
{
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    count(&stats.context_syncs);
    return OK;
}

static CUresult allocate(void **out, size_t bytes, int kind)
{
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (bytes == 0)
        return fail(INVALID_VALUE);
    if (bytes > ((size_t)1 << 40))
        return fail(OUT_OF_MEMORY);
    block *b = malloc(sizeof *b);
    void *memory = NULL;
    if (!b || posix_memalign(&memory, 256, bytes)) {
        free(b);
        return fail(OUT_OF_MEMORY);
    }
    memset(memory, 0xab, bytes); /* fresh memory is garbage */
    b->host = memory;
    b->size = bytes;
    b->kind = kind;
    b->device = current();
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    ++stats.allocs[kind];
    ++stats.live[kind];
    pthread_mutex_unlock(&lock);
    *out = kind == DEVICE_MEMORY ? (void *)((uintptr_t)memory + BIAS) : memory;
    return OK;
}

static CUresult release(const void *address, int kind)
{
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    uintptr_t host = (uintptr_t)address - (kind == DEVICE_MEMORY ? BIAS : 0);
    block *found = NULL;
    pthread_mutex_lock(&lock);
    for (block **p = &blocks; *p; p = &(*p)->next) {
        if ((uintptr_t)(*p)->host == host &&
            (*p)->kind == kind) {
            found = *p;
            *p = found->next;
            --stats.live[found->kind];
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (!found)
        return fail(INVALID_VALUE);
    free(found->host);
    free(found);
    return OK;
}

static CUresult MemAlloc(CUdeviceptr *out, size_t bytes)
{
    void *p;
    CUresult rc = allocate(&p, bytes, DEVICE_MEMORY);
    if (rc == OK)
        *out = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

static CUresult MemFree(CUdeviceptr block_address)
{
    /* device and managed blocks: try device first */
    int kind = DEVICE_MEMORY;
    find((uintptr_t)block_address, 0, &kind);
    return release((void *)(uintptr_t)block_address, kind);
}

static CUresult MemHostAlloc(void **out, size_t bytes, unsigned int flags)
{
    if (flags != 1) /* the library asks for CU_MEMHOSTALLOC_PORTABLE */
        return fail(INVALID_VALUE);
    return allocate(out, bytes, PINNED_MEMORY);
}

static CUresult MemFreeHost(void *p)
{
    return release(p, PINNED_MEMORY);
}

static CUresult MemAllocManaged(CUdeviceptr *out, size_t bytes, unsigned int flags)
{
    if (flags != 1 || current() == config.no_managed)
        return fail(flags != 1 ? INVALID_VALUE : 801);
    void *p;
    CUresult rc = allocate(&p, bytes, MANAGED_MEMORY);
    if (rc == OK)
        *out = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

/* A device or managed range, or else (for cuMemcpy) host memory. */
static char *resolve(CUdeviceptr address, size_t bytes, int host_ok)
{
    char *host = find((uintptr_t)address, bytes, NULL);
    if (!host && host_ok && !is_device_memory((void *)(uintptr_t)address))
        host = (char *)(uintptr_t)address;
    return host;
}

static CUresult copy(char *dst, const char *src, size_t bytes, CUstream s, long long *counter)
{
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (check_stream(s))
        return INVALID_HANDLE;
    if (!dst || !src)
        return fail(INVALID_VALUE);
    uintptr_t d = (uintptr_t)dst, r = (uintptr_t)src;
    if (bytes > 0 && d < r + bytes && r < d + bytes)
        return fail(INVALID_VALUE); /* overlap: undefined in CUDA, a bug of the caller */
    memcpy(dst, src, bytes);
    pthread_mutex_lock(&lock);
    ++*counter;
    if (s)
        ++stats.async_calls;
    pthread_mutex_unlock(&lock);
    return OK;
}

static CUresult MemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    return copy(resolve(dst, bytes, 1), resolve(src, bytes, 1), bytes, s, &stats.generic);
}

static CUresult Memcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return MemcpyAsync(dst, src, bytes, NULL);
}

static CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s)
{
    if (is_device_memory(src))
        return fail(INVALID_VALUE);
    return copy(resolve(dst, bytes, 0), src, bytes, s, &stats.htod);
}

static CUresult MemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes)
{
    return MemcpyHtoDAsync(dst, src, bytes, NULL);
}

static CUresult MemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    if (is_device_memory(dst))
        return fail(INVALID_VALUE);
    return copy(dst, resolve(src, bytes, 0), bytes, s, &stats.dtoh);
}

static CUresult MemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes)
{
    return MemcpyDtoHAsync(dst, src, bytes, NULL);
}

static CUresult MemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    return copy(resolve(dst, bytes, 0), resolve(src, bytes, 0), bytes, s, &stats.dtod);
}

static CUresult MemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return MemcpyDtoDAsync(dst, src, bytes, NULL);
}

static CUresult memset_n(CUdeviceptr dst, const void *value, size_t width, size_t n, CUstream s)
{
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (check_stream(s))
        return INVALID_HANDLE;
    char *host = resolve(dst, n * width, 0);
    if (!host || dst % width)
        return fail(INVALID_VALUE);
    for (size_t i = 0; i < n; ++i)
        memcpy(host + i * width, value, width);
    pthread_mutex_lock(&lock);
    ++stats.memsets[width == 1 ? 0 : width == 2 ? 1 : 2];
    if (s)
        ++stats.async_calls;
    pthread_mutex_unlock(&lock);
    return OK;
}

static CUresult MemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    return memset_n(dst, &v, 1, n, s);
}
static CUresult MemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{
    return memset_n(dst, &v, 2, n, s);
}
static CUresult MemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    return memset_n(dst, &v, 4, n, s);
}
static CUresult MemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
    return memset_n(dst, &v, 1, n, NULL);
}
static CUresult MemsetD16(CUdeviceptr dst, unsigned short v, size_t n)
{
    return memset_n(dst, &v, 2, n, NULL);
}
static CUresult MemsetD32(CUdeviceptr dst, unsigned int v, size_t n)
{
    return memset_n(dst, &v, 4, n, NULL);
}

static CUresult StreamCreate(CUstream *out, unsigned int flags)
{
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (flags != 1) /* the library asks for CU_STREAM_NON_BLOCKING */
        return fail(INVALID_VALUE);
    CUstream s = malloc(sizeof *s);
    if (!s)
        return fail(OUT_OF_MEMORY);
    s->magic = STREAM_MAGIC;
    s->device = current();
    count(&stats.live_streams);
    *out = s;
    return OK;
}

static CUresult StreamDestroy(CUstream s)
{
    if (!s || s->magic != STREAM_MAGIC)
        return fail(INVALID_HANDLE);
    s->magic = 0;
    free(s);
    pthread_mutex_lock(&lock);
    --stats.live_streams;
    pthread_mutex_unlock(&lock);
    return OK;
}

static CUresult StreamSynchronize(CUstream s)
{
    CUresult rc = check_stream(s);
    if (rc)
        return rc;
    count(&stats.stream_syncs);
    return OK;
}

/* What the driver knows of an address (CU_POINTER_ATTRIBUTE_*): the memory
 * type (CU_MEMORYTYPE_HOST 1 for pinned, DEVICE 2 for device and managed
 * memory), whether it is managed, and the device ordinal. Other memory is
 * CUDA_ERROR_INVALID_VALUE, as the real driver answers for pageable host
 * memory. */
static CUresult PointerGetAttribute(void *data, int attribute, CUdeviceptr address)
{
    int kind = -1, device = -1;
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (!data)
        return fail(INVALID_VALUE);
    count(&stats.pointer_queries);
    if (!find_in((uintptr_t)address, 0, true, &kind, &device))
        return INVALID_VALUE; /* an answer, not a misuse: the memory is not CUDA's */
    switch (attribute) {
    case 2: *(unsigned int *)data = kind == PINNED_MEMORY ? 1u : 2u; return OK;
    case 8: *(int *)data = kind == MANAGED_MEMORY; return OK;
    case 9: *(int *)data = device; return OK;
    default: return fail(INVALID_VALUE);
    }
}

/* ---- cuGetProcAddress ------------------------------------------------------------------- */

typedef void (*function)(void);
#define FN(base, name) {base, (function)name}
static const struct {
    const char *name;
    function fn;
} table[] = {
    FN("cuDriverGetVersion", DriverGetVersion),
    FN("cuGetErrorName", GetErrorName),
    FN("cuGetErrorString", GetErrorString),
    FN("cuInit", Init),
    FN("cuDeviceGetCount", DeviceGetCount),
    FN("cuDeviceGet", DeviceGet),
    FN("cuDeviceGetAttribute", DeviceGetAttribute),
    FN("cuDevicePrimaryCtxRetain", DevicePrimaryCtxRetain),
    FN("cuCtxPushCurrent", CtxPushCurrent),
    FN("cuCtxPopCurrent", CtxPopCurrent),
    FN("cuCtxSynchronize", CtxSynchronize),
    FN("cuMemAlloc", MemAlloc),
    FN("cuMemFree", MemFree),
    FN("cuMemHostAlloc", MemHostAlloc),
    FN("cuMemFreeHost", MemFreeHost),
    FN("cuMemAllocManaged", MemAllocManaged),
    FN("cuMemcpy", Memcpy),
    FN("cuMemcpyAsync", MemcpyAsync),
    FN("cuMemcpyHtoD", MemcpyHtoD),
    FN("cuMemcpyDtoH", MemcpyDtoH),
    FN("cuMemcpyDtoD", MemcpyDtoD),
    FN("cuMemcpyHtoDAsync", MemcpyHtoDAsync),
    FN("cuMemcpyDtoHAsync", MemcpyDtoHAsync),
    FN("cuMemcpyDtoDAsync", MemcpyDtoDAsync),
    FN("cuMemsetD8", MemsetD8),
    FN("cuMemsetD16", MemsetD16),
    FN("cuMemsetD32", MemsetD32),
    FN("cuMemsetD8Async", MemsetD8Async),
    FN("cuMemsetD16Async", MemsetD16Async),
    FN("cuMemsetD32Async", MemsetD32Async),
    FN("cuStreamCreate", StreamCreate),
    FN("cuStreamDestroy", StreamDestroy),
    FN("cuStreamSynchronize", StreamSynchronize),
    FN("cuPointerGetAttribute", PointerGetAttribute),
};

static CUresult get_proc_address(const char *symbol, void **pfn, int version,
                                 unsigned long long flags, int *status)
{
    pthread_once(&config_once, read_config);
    *pfn = NULL;
    if (status)
        *status = 1; /* not found */
    if (version > config.version || flags > 2)
        return fail(INVALID_VALUE);
    pthread_mutex_lock(&lock);
    ++stats.lookups;
    if (version > stats.max_version)
        stats.max_version = version;
    if (flags != 1)
        ++stats.lookups_not_legacy;
    pthread_mutex_unlock(&lock);
    if (!strcmp(symbol, config.missing))
        return config.not_found ? 500 : OK;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
        if (!strcmp(symbol, table[i].name)) {
            memcpy(pfn, &table[i].fn, sizeof *pfn);
            if (status)
                *status = 0;
            return OK;
        }
    }
    return OK;
}

#if defined(FAKE_CUDA_NO_GPA)
/* no driver at all: the entry points stay unreachable */
FAKE_CUDA_EXPORT void fake_cuda_not_a_driver(void);
void fake_cuda_not_a_driver(void)
{
    void *pfn;
    get_proc_address("cuInit", &pfn, 0, 0, NULL);
}
#else
#if !defined(FAKE_CUDA_V1)
FAKE_CUDA_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                              unsigned long long flags, int *status);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                             unsigned long long flags, int *status)
{
    count(&stats.v2_calls);
    return get_proc_address(symbol, pfn, version, flags, status);
}
#endif

FAKE_CUDA_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                                           unsigned long long flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags)
{
    count(&stats.v1_calls);
    return get_proc_address(symbol, pfn, version, flags, NULL);
}
#endif

void fake_cuda_stats_get(fake_cuda_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = stats;
    pthread_mutex_unlock(&lock);
}
