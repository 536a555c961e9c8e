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
 * Stream-ordered pools (cuMemPoolCreate, cuMemAllocFromPoolAsync,
 * cuMemFreeAsync) keep freed blocks for reuse; a freed block is not live,
 * so reading it fails like any address outside the live blocks. Host
 * memory registered with cuMemHostRegister must not overlap a registered
 * range or a cuMemHostAlloc block. An event reads as not reached for its
 * first `eventpending` queries after each record.
 *
 * It loads gtstore's kernels (cuModuleLoadData of PTX that defines them,
 * cuModuleGetFunction of their names) and runs a launch by calling the
 * kernels' own per-thread code (src/device_kernels.h) for every block and
 * thread of the grid, over the host memory behind the device addresses,
 * after checking the launch: a live function and stream, the block shape
 * the kernels are built for, a grid inside CUDA's limits, and every word the
 * arguments reach inside one live block of device or managed memory.
 *
 * The environment variable FAKE_CUDA configures it, comma-separated:
 *   devices=N          GPUs (default 2)
 *   version=V          cuDriverGetVersion (default 12040)
 *   init=R             cuInit returns R (e.g. 34: the stub library)
 *   nomanaged=N        GPU N does not support managed memory
 *   nopools=N          GPU N has no stream-ordered memory pools
 *   eventpending=N     queries of an event read CUDA_ERROR_NOT_READY N times
 *   poolmax=BYTES      a pool that would reserve more runs out of memory
 *   registerlimit=BYTES  cuMemHostRegister runs out of memory beyond this many
 *                      bytes registered (as under a memory-locking limit)
 *   missing=NAME       cuGetProcAddress finds no NAME
 *   notfound=1         ... and answers CUDA_ERROR_NOT_FOUND for it, as drivers
 *                      before 12.0 did (else success and NULL, as documented)
 * fake_cuda_stats() returns what it has done, for the test's checks.
 *
 * fake_cuda_fail(name, code, nth) makes a driver function fail on demand,
 * so that tests reach the paths where CUDA reports an error: the nth call
 * of `name` from now on (nth >= 1; once) or every call (nth 0) returns
 * `code` without doing anything, until code 0 disarms it (name NULL: all).
 * Every entry point checks the one table of armed functions (INJECT);
 * stats.injected counts the failures made. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

/* The kernels' device addresses, as this driver hands them out. */
static char *kernel_address(unsigned long long address);
#define GTS_KERNEL_ADDRESS(address) kernel_address(address)
#include "device_kernels.h"
#include "stencil_kernels.h"

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
    INVALID_HANDLE = 400,
    NOT_READY = 600,
    ALREADY_REGISTERED = 712,
    NOT_REGISTERED = 713,
    LAUNCH_FAILED = 719
};

#define BIAS ((uintptr_t)1 << 52)
#define MAX_FAKE_DEVICES 8
#define STREAM_MAGIC 0x5354524du
#define MODULE_MAGIC 0x4d4f444cu

/* ---- configuration and state ---------------------------------------------------- */

static struct {
    int devices, version, init_result, no_managed, not_found, no_pools, event_pending;
    long long pool_max, register_limit;
    char missing[64];
} config = {2, 12040, 0, -1, 0, -1, 0, 1LL << 40, 1LL << 40, ""};
static long long registered_bytes;

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
        else if (!strncmp(item, "nopools=", 8))
            config.no_pools = atoi(item + 8);
        else if (!strncmp(item, "eventpending=", 13))
            config.event_pending = atoi(item + 13);
        else if (!strncmp(item, "poolmax=", 8))
            config.pool_max = atoll(item + 8);
        else if (!strncmp(item, "registerlimit=", 14))
            config.register_limit = atoll(item + 14);
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

enum { DEVICE_MEMORY, PINNED_MEMORY, MANAGED_MEMORY, REGISTERED_MEMORY };

typedef struct fake_pool *CUmemoryPool;

typedef struct block {
    struct block *next;
    char *host;
    size_t size;
    int kind;
    CUmemoryPool pool; /* device memory of a pool */
    int device;        /* the device whose context allocated it */
} block;
static block *blocks; /* live blocks (and registered ranges) */

#define POOL_MAGIC 0x504f4f4cu
struct fake_pool {
    unsigned magic;
    int device;
    unsigned long long threshold, reserved, used;
    block *free; /* freed blocks, not live */
};

#define EVENT_MAGIC 0x45564e54u
typedef struct fake_event {
    unsigned magic;
    int pending; /* queries still to read CUDA_ERROR_NOT_READY */
} *CUevent;

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

/* ---- failures on demand (fake_cuda_fail) ------------------------------------------------ */

/* One entry per armed driver function: its name without "cu" (as __func__
 * spells the entry point here), the error it returns, and the calls still
 * to pass before it fails (-1: every call fails). */
#define MAX_FAILURES 8
static struct failure {
    char name[48];
    int code;
    long long pass;
} failures[MAX_FAILURES];
/* Entries in use: read alone by every call, so that an unarmed driver costs
 * one load. */
static _Atomic int armed;

/* The error injected into this call of `function` (OK: none); an entry
 * that fails once is cleared by its failure. */
static CUresult injected(const char *function)
{
    if (!atomic_load_explicit(&armed, memory_order_acquire))
        return OK;
    CUresult rc = OK;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_FAILURES && rc == OK; ++i) {
        struct failure *f = &failures[i];
        if (!f->code || strcmp(f->name, function))
            continue;
        if (f->pass > 0) {
            --f->pass;
            continue;
        }
        rc = f->code;
        ++stats.injected;
        if (f->pass == 0) {
            f->code = OK;
            atomic_fetch_sub_explicit(&armed, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
#define INJECT()                                   \
    do {                                           \
        CUresult injected_rc = injected(__func__); \
        if (injected_rc != OK)                     \
            return injected_rc;                    \
    } while (0)

static bool is_entry_point(const char *name);

int fake_cuda_fail(const char *name, int code, long long nth)
{
    if (name && (!is_entry_point(name) || nth < 0))
        return -1;
    pthread_mutex_lock(&lock);
    struct failure *slot = NULL;
    int now = 0;
    for (int i = 0; i < MAX_FAILURES; ++i) {
        struct failure *f = &failures[i];
        if (f->code && (!name || !strcmp(f->name, name + 2)))
            f->code = OK; /* disarmed: armed again below, where `code` says so */
        if (f->code)
            ++now;
        else if (!slot)
            slot = f;
    }
    bool arm = name && code && slot;
    if (arm) { /* (table names are shorter than an entry's) */
        snprintf(slot->name, sizeof slot->name, "%s", name + 2);
        slot->code = code;
        slot->pass = nth > 0 ? nth - 1 : -1;
        ++now;
    }
    atomic_store_explicit(&armed, now, memory_order_release);
    pthread_mutex_unlock(&lock);
    return !name || !code || arm ? 0 : -1;
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
        if ((b->kind == PINNED_MEMORY || b->kind == REGISTERED_MEMORY) && !pinned)
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

/* Whether host bytes [address, address + bytes) are pinned: in a block of
 * cuMemHostAlloc or a registered range. */
static int is_pinned(const void *address, size_t bytes)
{
    uintptr_t a = (uintptr_t)address;
    int pinned = 0;
    pthread_mutex_lock(&lock);
    for (block *b = blocks; b && !pinned; b = b->next)
        pinned = (b->kind == PINNED_MEMORY || b->kind == REGISTERED_MEMORY) &&
                 a >= (uintptr_t)b->host && bytes <= b->size &&
                 a - (uintptr_t)b->host <= b->size - bytes;
    pthread_mutex_unlock(&lock);
    return pinned;
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
    INJECT();
    *version = config.version;
    return OK;
}

static CUresult GetErrorName(CUresult error, const char **name)
{
    INJECT();
    switch (error) {
    case OK: *name = "CUDA_SUCCESS"; return OK;
    case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
    case OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
    case 34: *name = "CUDA_ERROR_STUB_LIBRARY"; return OK;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return OK;
    case INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
    case NOT_READY: *name = "CUDA_ERROR_NOT_READY"; return OK;
    case LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; return OK;
    default: *name = NULL; return INVALID_VALUE;
    }
}

static CUresult GetErrorString(CUresult error, const char **text)
{
    INJECT();
    *text = error == 34 ? "CUDA driver is a stub library" : "fake error";
    return OK;
}

static CUresult Init(unsigned int flags)
{
    INJECT();
    if (flags != 0)
        return fail(INVALID_VALUE);
    if (config.init_result)
        return config.init_result;
    initialized = 1;
    return OK;
}

static CUresult DeviceGetCount(int *n)
{
    INJECT();
    if (!initialized)
        return fail(NOT_INITIALIZED);
    *n = config.devices;
    return OK;
}

static CUresult DeviceGet(CUdevice *device, int ordinal)
{
    INJECT();
    if (!initialized)
        return fail(NOT_INITIALIZED);
    if (ordinal < 0 || ordinal >= config.devices)
        return fail(INVALID_DEVICE);
    *device = ordinal + 100; /* handles are not ordinals */
    return OK;
}

static CUresult DeviceGetAttribute(int *value, int attribute, CUdevice device)
{
    INJECT();
    if (device < 100 || device >= 100 + config.devices)
        return fail(INVALID_DEVICE);
    *value = attribute == 83    ? device - 100 != config.no_managed
             : attribute == 115 ? device - 100 != config.no_pools
                                : 0;
    return OK;
}

static CUresult DevicePrimaryCtxRetain(CUcontext *context, CUdevice device)
{
    INJECT();
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
    INJECT();
    if (!context || !context->retained || context_depth == 16)
        return fail(INVALID_CONTEXT);
    context_stack[context_depth++] = context;
    count(&stats.pushes);
    return OK;
}

static CUresult CtxPopCurrent(CUcontext *context)
{
    INJECT();
    if (context_depth == 0)
        return fail(INVALID_CONTEXT);
    *context = context_stack[--context_depth];
    count(&stats.pops);
    return OK;
}

static CUresult CtxSynchronize(void)
{
    INJECT();
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
    b->pool = NULL;
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
        if ((uintptr_t)(*p)->host == host && (*p)->kind == kind && !(*p)->pool) {
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
    INJECT();
    void *p;
    CUresult rc = allocate(&p, bytes, DEVICE_MEMORY);
    if (rc == OK)
        *out = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

static CUresult MemFree(CUdeviceptr block_address)
{
    INJECT();
    /* device and managed blocks: try device first */
    int kind = DEVICE_MEMORY;
    find((uintptr_t)block_address, 0, &kind);
    return release((void *)(uintptr_t)block_address, kind);
}

static CUresult MemHostAlloc(void **out, size_t bytes, unsigned int flags)
{
    INJECT();
    if (flags != 1) /* the library asks for CU_MEMHOSTALLOC_PORTABLE */
        return fail(INVALID_VALUE);
    return allocate(out, bytes, PINNED_MEMORY);
}

static CUresult MemFreeHost(void *p)
{
    INJECT();
    return release(p, PINNED_MEMORY);
}

static CUresult MemAllocManaged(CUdeviceptr *out, size_t bytes, unsigned int flags)
{
    INJECT();
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
    INJECT();
    return copy(resolve(dst, bytes, 1), resolve(src, bytes, 1), bytes, s, &stats.generic);
}

static CUresult Memcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    INJECT();
    return MemcpyAsync(dst, src, bytes, NULL);
}

static CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s)
{
    INJECT();
    if (is_device_memory(src))
        return fail(INVALID_VALUE);
    CUresult rc = copy(resolve(dst, bytes, 0), src, bytes, s, &stats.htod);
    if (rc == OK && is_pinned(src, bytes))
        count(&stats.pinned_copies);
    return rc;
}

static CUresult MemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes)
{
    INJECT();
    return MemcpyHtoDAsync(dst, src, bytes, NULL);
}

static CUresult MemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    INJECT();
    if (is_device_memory(dst))
        return fail(INVALID_VALUE);
    CUresult rc = copy(dst, resolve(src, bytes, 0), bytes, s, &stats.dtoh);
    if (rc == OK && is_pinned(dst, bytes))
        count(&stats.pinned_copies);
    return rc;
}

static CUresult MemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes)
{
    INJECT();
    return MemcpyDtoHAsync(dst, src, bytes, NULL);
}

static CUresult MemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    INJECT();
    return copy(resolve(dst, bytes, 0), resolve(src, bytes, 0), bytes, s, &stats.dtod);
}

static CUresult MemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    INJECT();
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
    INJECT();
    return memset_n(dst, &v, 1, n, s);
}
static CUresult MemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{
    INJECT();
    return memset_n(dst, &v, 2, n, s);
}
static CUresult MemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    INJECT();
    return memset_n(dst, &v, 4, n, s);
}
static CUresult MemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
    INJECT();
    return memset_n(dst, &v, 1, n, NULL);
}
static CUresult MemsetD16(CUdeviceptr dst, unsigned short v, size_t n)
{
    INJECT();
    return memset_n(dst, &v, 2, n, NULL);
}
static CUresult MemsetD32(CUdeviceptr dst, unsigned int v, size_t n)
{
    INJECT();
    return memset_n(dst, &v, 4, n, NULL);
}

static CUresult StreamCreate(CUstream *out, unsigned int flags)
{
    INJECT();
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
    INJECT();
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
    INJECT();
    CUresult rc = check_stream(s);
    if (rc)
        return rc;
    count(&stats.stream_syncs);
    return OK;
}

/* ---- modules and launches ---------------------------------------------------------------- */

struct fake_module {
    unsigned magic;
    int device;
};
static struct fake_module modules[MAX_FAKE_DEVICES];

/* The functions of gtstore's kernels; a handle is one of these. */
enum {
    COPY_KERNEL,
    FILL_KERNEL,
    BATCH_KERNEL,
    NEGATE_KERNEL,
    COPY_STENCIL_KERNEL, /* the built-in stencils, in gts_stencil's order */
    LAPLACIAN_KERNEL,
    HDIFF_KERNEL,
    TRIDIAGONAL_KERNEL,
    KERNELS
};
static const char *const kernel_names[KERNELS] = {
    "gts_copy_kernel",         "gts_fill_kernel",      "gts_copy_batch_kernel",
    "gts_negate_kernel",       "gts_copy_stencil_kernel", "gts_laplacian_kernel",
    "gts_hdiff_kernel",        "gts_tridiagonal_kernel"};
struct fake_function {
    int kernel;
    int device;
};
static struct fake_function functions[MAX_FAKE_DEVICES][KERNELS];
static const char *module_image; /* the PTX loaded, to find the names in */

static char *kernel_address(unsigned long long address)
{
    return find((uintptr_t)address, 0, NULL);
}

static CUresult ModuleLoadData(struct fake_module **out, const void *image)
{
    INJECT();
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    const char *text = image;
    /* PTX: text with a version and a target, as nvcc writes it */
    if (!text || !strstr(text, "\n.version ") || !strstr(text, "\n.target sm_"))
        return fail(218); /* CUDA_ERROR_INVALID_PTX */
    /* one per device, as the library loads it once per context (and never
       unloads it: the driver's memory, not the caller's) */
    struct fake_module *m = &modules[current()];
    m->magic = MODULE_MAGIC;
    m->device = current();
    pthread_mutex_lock(&lock);
    module_image = text;
    ++stats.modules;
    pthread_mutex_unlock(&lock);
    *out = m;
    return OK;
}

static CUresult ModuleGetFunction(struct fake_function **out, struct fake_module *m,
                                  const char *name)
{
    INJECT();
    if (!m || m->magic != MODULE_MAGIC)
        return fail(INVALID_HANDLE);
    char entry[64];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    for (int k = 0; k < KERNELS; ++k)
        if (!strcmp(name, kernel_names[k]) && strstr(module_image, entry)) {
            functions[m->device][k] = (struct fake_function){k, m->device};
            *out = &functions[m->device][k];
            return OK;
        }
    return fail(500); /* CUDA_ERROR_NOT_FOUND */
}

/* The bytes [low, high) of one side of a kernel array, from its first word. */
static void side_range(const gts_kernel_array *a, const long long *strides, long long *low,
                       long long *high)
{
    *low = 0;
    *high = a->unit;
    for (int k = 0; k < a->ndim; ++k) {
        long long far = (a->shape[k] - 1) * strides[k];
        *low += far < 0 ? far : 0;
        *high += far > 0 ? far : 0;
    }
}

/* A kernel array the kernels may run: a word size they know, a count that
 * is its shape's product, and every word of each side in one live block. */
static int valid_array(const gts_kernel_array *a, int fill)
{
    if ((a->unit != 1 && a->unit != 2 && a->unit != 4 && a->unit != 8) || a->ndim < 0 ||
        a->ndim > GTS_KERNEL_NDIM)
        return 0;
    long long count = 1;
    for (int k = 0; k < a->ndim; ++k) {
        if (a->shape[k] < 1 || __builtin_mul_overflow(count, a->shape[k], &count))
            return 0;
        if (a->dst_strides[k] % a->unit || a->src_strides[k] % a->unit)
            return 0; /* the kernels' words would be misaligned */
    }
    long long low, high;
    side_range(a, a->dst_strides, &low, &high);
    if (count != a->count || a->dst % (unsigned)a->unit ||
        !find((uintptr_t)(a->dst + (unsigned long long)low), (size_t)(high - low), NULL))
        return 0;
    if (fill)
        return a->src == 0;
    side_range(a, a->src_strides, &low, &high);
    return a->src % (unsigned)a->unit == 0 &&
           find((uintptr_t)(a->src + (unsigned long long)low), (size_t)(high - low), NULL);
}

/* Whether no two words of the destination share a byte (dimensions nested
 * by stride). A parallel launch over words that do would race on the GPU. */
static bool distinct_words(const gts_kernel_array *a)
{
    long long strides[GTS_KERNEL_NDIM], extents[GTS_KERNEL_NDIM];
    int n = 0;
    for (int k = 0; k < a->ndim; ++k) { /* insertion by |stride| */
        long long m = a->dst_strides[k] < 0 ? -a->dst_strides[k] : a->dst_strides[k];
        int j = n++;
        for (; j > 0 && strides[j - 1] > m; --j) {
            strides[j] = strides[j - 1];
            extents[j] = extents[j - 1];
        }
        strides[j] = m;
        extents[j] = a->shape[k];
    }
    long long reach = a->unit;
    for (int j = 0; j < n; ++j) {
        if (extents[j] > 1 && strides[j] < reach)
            return false;
        reach += strides[j] * (extents[j] - 1);
    }
    return true;
}

/* Every thread of blocks_x blocks of `threads` of one array, as the GPU
 * would run them (one after the other: where they write the same bytes,
 * the GPU's result may differ, which is why such arrays run serially). */
static void run_threads(int kernel, const void *args, unsigned blocks_x, unsigned threads)
{
    gts_kernel_thread t = {0, (unsigned long long)blocks_x * threads};
    for (unsigned long long b = 0; b < blocks_x; ++b)
        for (unsigned x = 0; x < threads; ++x) {
            t.first = b * threads + x;
            if (kernel == FILL_KERNEL)
                gts_kernel_fill_thread(args, t);
            else if (kernel == NEGATE_KERNEL)
                gts_kernel_negate_thread(args, t);
            else if (kernel == COPY_STENCIL_KERNEL)
                gts_kernel_copy_stencil_thread(args, t);
            else if (kernel == LAPLACIAN_KERNEL)
                gts_kernel_laplacian_thread(args, t);
            else if (kernel == HDIFF_KERNEL)
                gts_kernel_hdiff_thread(args, t);
            else if (kernel == TRIDIAGONAL_KERNEL)
                gts_kernel_tridiagonal_thread(args, t);
            else
                gts_kernel_copy_thread(args, t);
        }
}

static CUresult launch_batch(void **params, unsigned gx, unsigned gy)
{
    unsigned long long table = *(unsigned long long *)params[0];
    unsigned first = *(unsigned *)params[1];
    for (unsigned y = 0; y < gy; ++y) {
        unsigned long long row = table + (unsigned long long)(first + y) * sizeof(gts_kernel_array);
        const char *entry = find((uintptr_t)row, sizeof(gts_kernel_array), NULL);
        gts_kernel_array a;
        if (!entry)
            return fail(700); /* CUDA_ERROR_ILLEGAL_ADDRESS */
        memcpy(&a, entry, sizeof a);
        if (!valid_array(&a, 0) || !distinct_words(&a))
            return fail(700);
        run_threads(BATCH_KERNEL, &a, gx, GTS_KERNEL_THREADS);
    }
    return OK;
}

/* A negation the kernel may run: a value size it knows, and every value
 * in one live block. */
static bool valid_negation(const gts_kernel_negate *n)
{
    long long bytes;
    return (n->size == 1 || n->size == 2 || n->size == 4 || n->size == 8) && n->count >= 0 &&
           !__builtin_mul_overflow(n->count, (long long)n->size, &bytes) &&
           (bytes == 0 || find((uintptr_t)n->data, (size_t)bytes, NULL));
}

/* A built-in stencil the kernel may run: its fields (as many as the
 * stencil has), work items that the domain holds, every byte each field's
 * threads touch, 8-byte aligned, in one live block, and the tridiagonal
 * solve's scratch memory too. */
static bool valid_stencil(int kernel, const gts_kernel_stencil *k)
{
    static const int nfields[] = {2, 2, 3, 5};
    int which = kernel - COPY_STENCIL_KERNEL;
    long long columns = k->domain[0] * k->domain[1];
    if (k->nfields != nfields[which] || k->count < 1 || k->domain[0] < 1 || k->domain[1] < 1 ||
        k->domain[2] < 1 || k->count != (kernel == TRIDIAGONAL_KERNEL ? columns : columns * k->domain[2]))
        return false;
    for (int f = 0; f < k->nfields; ++f) {
        long long low, high;
        gts_kernel_stencil_span(k, f, &low, &high);
        if (k->origin[f] % 8 || !find((uintptr_t)(k->origin[f] + (unsigned long long)low),
                                      (size_t)(high - low), NULL))
            return false;
    }
    if (kernel != TRIDIAGONAL_KERNEL)
        return k->scratch == 0;
    return k->scratch % 8 == 0 &&
           find((uintptr_t)k->scratch, (size_t)(columns * k->domain[2] * 8), NULL);
}

static CUresult LaunchKernel(struct fake_function *f, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz, unsigned shared, CUstream s,
                             void **params, void **extra)
{
    INJECT();
    if (current() < 0 || !f || f->device != current())
        return fail(!f ? INVALID_HANDLE : INVALID_CONTEXT);
    if (check_stream(s))
        return INVALID_HANDLE;
    /* the kernels are built for blocks of GTS_KERNEL_THREADS, or one thread
       alone (a serial walk); CUDA's grid limits */
    bool serial = bx == 1 && gx == 1 && f->kernel != BATCH_KERNEL;
    if ((bx != GTS_KERNEL_THREADS && !serial) || by != 1 || bz != 1 || shared != 0 || extra ||
        !params ||
        gx == 0 || gx > 0x7fffffffu || gy == 0 || gy > GTS_KERNEL_MAX_BATCH || gz != 1 ||
        (f->kernel != BATCH_KERNEL && gy != 1))
        return fail(INVALID_VALUE);
    CUresult rc = OK;
    if (f->kernel == BATCH_KERNEL) {
        rc = launch_batch(params, gx, gy);
    } else if (f->kernel == NEGATE_KERNEL) {
        if (!valid_negation(params[0]))
            return fail(700); /* CUDA_ERROR_ILLEGAL_ADDRESS */
        run_threads(f->kernel, params[0], gx, bx);
    } else if (f->kernel >= COPY_STENCIL_KERNEL) {
        if (!valid_stencil(f->kernel, params[0]))
            return fail(700);
        run_threads(f->kernel, params[0], gx, bx);
    } else {
        const gts_kernel_fill *fill = params[0];
        const gts_kernel_array *a = f->kernel == FILL_KERNEL ? &fill->array : params[0];
        int fill_ok = f->kernel == COPY_KERNEL ||
                      (fill->words >= 1 && fill->words * a->unit <= 16 &&
                       (fill->words == 1 || (a->ndim > 0 && a->shape[0] % fill->words == 0 &&
                                              a->dst_strides[0] == a->unit)));
        if (!fill_ok || !valid_array(a, f->kernel == FILL_KERNEL) ||
            (!serial && !distinct_words(a)))
            return fail(700); /* the last: a race */
        run_threads(f->kernel, params[0], gx, bx);
    }
    if (rc != OK)
        return rc;
    pthread_mutex_lock(&lock);
    ++stats.launches[f->kernel];
    stats.stencil_launches += f->kernel >= COPY_STENCIL_KERNEL;
    stats.serial_launches += bx == 1;
    stats.kernel_arrays += gy;
    stats.last_grid[0] = gx;
    stats.last_grid[1] = gy;
    if (s)
        ++stats.async_calls;
    pthread_mutex_unlock(&lock);
    return OK;
}

/* ---- stream-ordered pools -------------------------------------------------------------- */

/* CUmemPoolProps as cuda.h lays it out */
typedef struct pool_props {
    int alloc_type, handle_types, location_type, location_id;
    void *win32;
    size_t max_size;
    unsigned short usage;
    unsigned char reserved[54];
} pool_props;

static CUresult MemPoolCreate(CUmemoryPool *out, const pool_props *props)
{
    INJECT();
    int zero = props->win32 == NULL && props->max_size == 0 && props->usage == 0;
    for (size_t i = 0; i < sizeof props->reserved; ++i)
        zero = zero && props->reserved[i] == 0;
    /* pinned (device-resident) allocations on a device that has pools, no export handles */
    if (props->alloc_type != 1 || props->handle_types != 0 || props->location_type != 1 ||
        props->location_id < 0 || props->location_id >= config.devices || !zero)
        return fail(INVALID_VALUE);
    if (props->location_id == config.no_pools)
        return fail(801);
    CUmemoryPool pool = calloc(1, sizeof *pool);
    if (!pool)
        return fail(OUT_OF_MEMORY);
    pool->magic = POOL_MAGIC;
    pool->device = props->location_id;
    count(&stats.pools);
    *out = pool;
    return OK;
}

static CUresult MemPoolSetAttribute(CUmemoryPool pool, int attribute, void *value)
{
    INJECT();
    if (!pool || pool->magic != POOL_MAGIC || attribute < 1 || attribute > 4)
        return fail(INVALID_VALUE); /* 5 and above are read-only */
    if (attribute == 4)
        memcpy(&pool->threshold, value, sizeof pool->threshold);
    return OK;
}

static CUresult MemPoolGetAttribute(CUmemoryPool pool, int attribute, void *value)
{
    INJECT();
    if (!pool || pool->magic != POOL_MAGIC || (attribute != 4 && attribute != 5 && attribute != 7))
        return fail(INVALID_VALUE);
    pthread_mutex_lock(&lock);
    unsigned long long v = attribute == 4 ? pool->threshold
                           : attribute == 5 ? pool->reserved
                                            : pool->used;
    pthread_mutex_unlock(&lock);
    memcpy(value, &v, sizeof v);
    return OK;
}

/* Frees a pool's unused blocks, the most recently freed first, until at most
 * `keep` bytes are reserved (caller holds the lock). */
static void pool_release(CUmemoryPool pool, unsigned long long keep)
{
    while (pool->free && pool->reserved > keep) {
        block *b = pool->free;
        pool->free = b->next;
        pool->reserved -= b->size;
        free(b->host);
        free(b);
    }
}

static CUresult MemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    INJECT();
    if (!pool || pool->magic != POOL_MAGIC)
        return fail(INVALID_VALUE);
    pthread_mutex_lock(&lock);
    pool_release(pool, keep);
    pthread_mutex_unlock(&lock);
    return OK;
}

static CUresult MemAllocFromPoolAsync(CUdeviceptr *out, size_t bytes, CUmemoryPool pool,
                                      CUstream s)
{
    INJECT();
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (!pool || pool->magic != POOL_MAGIC || bytes == 0)
        return fail(INVALID_VALUE);
    bool made = s && s != LEGACY_STREAM && s != PER_THREAD_STREAM; /* by StreamCreate */
    if (check_stream(s) || (made && s->device != current()))
        return fail(INVALID_HANDLE);
    if (bytes > ((size_t)1 << 40))
        return fail(OUT_OF_MEMORY);
    pthread_mutex_lock(&lock);
    block **best = NULL; /* the smallest free block that fits */
    for (block **p = &pool->free; *p; p = &(*p)->next)
        if ((*p)->size >= bytes && (!best || (*p)->size < (*best)->size))
            best = p;
    block *b = NULL;
    if (best) {
        b = *best;
        *best = b->next;
        ++stats.pool_reuses;
    }
    int full = !b && pool->reserved + bytes > (unsigned long long)config.pool_max;
    pthread_mutex_unlock(&lock);
    if (full)
        return OUT_OF_MEMORY; /* what the driver answers, not a misuse */
    if (!b) {
        b = malloc(sizeof *b);
        void *memory = NULL;
        if (!b || posix_memalign(&memory, 256, bytes)) {
            free(b);
            return fail(OUT_OF_MEMORY);
        }
        b->host = memory;
        b->size = bytes;
        b->kind = DEVICE_MEMORY;
        b->pool = pool;
        b->device = pool->device;
        pthread_mutex_lock(&lock);
        pool->reserved += bytes;
        pthread_mutex_unlock(&lock);
    }
    memset(b->host, 0xab, b->size); /* reused memory is garbage too */
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    pool->used += b->size;
    ++stats.allocs[DEVICE_MEMORY];
    ++stats.live[DEVICE_MEMORY];
    ++stats.pool_allocs;
    pthread_mutex_unlock(&lock);
    *out = (CUdeviceptr)((uintptr_t)b->host + BIAS);
    return OK;
}

static CUresult MemFreeAsync(CUdeviceptr address, CUstream s)
{
    INJECT();
    if (check_stream(s))
        return INVALID_HANDLE;
    block *found = NULL;
    pthread_mutex_lock(&lock);
    for (block **p = &blocks; *p; p = &(*p)->next) {
        if ((*p)->pool && (uintptr_t)(*p)->host + BIAS == address) {
            found = *p;
            *p = found->next;
            break;
        }
    }
    if (found) {
        CUmemoryPool pool = found->pool;
        found->next = pool->free;
        pool->free = found;
        pool->used -= found->size;
        --stats.live[DEVICE_MEMORY];
        ++stats.pool_frees;
    }
    pthread_mutex_unlock(&lock);
    return found ? OK : fail(INVALID_VALUE); /* not a live block of a pool */
}

/* ---- events --------------------------------------------------------------------------------- */

static CUresult EventCreate(CUevent *out, unsigned int flags)
{
    INJECT();
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (flags != 2) /* the library asks for CU_EVENT_DISABLE_TIMING */
        return fail(INVALID_VALUE);
    CUevent e = calloc(1, sizeof *e);
    if (!e)
        return fail(OUT_OF_MEMORY);
    e->magic = EVENT_MAGIC;
    pthread_mutex_lock(&lock);
    ++stats.events;
    ++stats.live_events;
    pthread_mutex_unlock(&lock);
    *out = e;
    return OK;
}

/* Under the lock: threads record and wait for one event (a buffer's). */
static CUresult EventRecord(CUevent e, CUstream s)
{
    INJECT();
    if (!e || e->magic != EVENT_MAGIC || check_stream(s))
        return fail(INVALID_HANDLE);
    pthread_mutex_lock(&lock);
    e->pending = config.event_pending;
    ++stats.event_records;
    pthread_mutex_unlock(&lock);
    return OK;
}

static CUresult EventQuery(CUevent e)
{
    INJECT();
    if (!e || e->magic != EVENT_MAGIC)
        return fail(INVALID_HANDLE);
    pthread_mutex_lock(&lock);
    bool pending = e->pending > 0;
    if (pending)
        --e->pending;
    pthread_mutex_unlock(&lock);
    return pending ? NOT_READY : OK;
}

static CUresult EventSynchronize(CUevent e)
{
    INJECT();
    if (!e || e->magic != EVENT_MAGIC)
        return fail(INVALID_HANDLE);
    pthread_mutex_lock(&lock);
    if (e->pending > 0)
        ++stats.event_waits;
    e->pending = 0;
    pthread_mutex_unlock(&lock);
    return OK;
}

/* Completes at once, as every call here does; counted, and the handles
 * checked. */
static CUresult StreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    INJECT();
    if (!e || e->magic != EVENT_MAGIC || check_stream(s))
        return fail(INVALID_HANDLE);
    if (flags != 0)
        return fail(INVALID_VALUE);
    count(&stats.stream_event_waits);
    return OK;
}

static CUresult EventDestroy(CUevent e)
{
    INJECT();
    if (!e || e->magic != EVENT_MAGIC)
        return fail(INVALID_HANDLE);
    e->magic = 0;
    free(e);
    pthread_mutex_lock(&lock);
    --stats.live_events;
    pthread_mutex_unlock(&lock);
    return OK;
}

/* ---- page-locking host memory ------------------------------------------------------------------ */

static CUresult MemHostRegister(void *p, size_t bytes, unsigned int flags)
{
    INJECT();
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (!p || bytes == 0 || flags != 1) /* the library asks for CU_MEMHOSTREGISTER_PORTABLE */
        return fail(INVALID_VALUE);
    if (is_device_memory(p))
        return fail(INVALID_VALUE);
    block *b = malloc(sizeof *b);
    if (!b)
        return fail(OUT_OF_MEMORY);
    uintptr_t a = (uintptr_t)p;
    int overlap = 0;
    pthread_mutex_lock(&lock);
    for (block *o = blocks; o && !overlap; o = o->next)
        overlap = (o->kind == PINNED_MEMORY || o->kind == REGISTERED_MEMORY) &&
                  a < (uintptr_t)o->host + o->size && (uintptr_t)o->host < a + bytes;
    int full = !overlap && registered_bytes + (long long)bytes > config.register_limit;
    if (!overlap && !full) {
        registered_bytes += (long long)bytes;
        *b = (block){blocks, p, bytes, REGISTERED_MEMORY, NULL, current()};
        blocks = b;
        ++stats.allocs[REGISTERED_MEMORY];
        ++stats.live[REGISTERED_MEMORY];
    }
    pthread_mutex_unlock(&lock);
    if (overlap || full) {
        free(b);
        return overlap ? fail(ALREADY_REGISTERED) : OUT_OF_MEMORY;
    }
    return OK;
}

static CUresult MemHostUnregister(void *p)
{
    INJECT();
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    block *found = NULL;
    pthread_mutex_lock(&lock);
    for (block **q = &blocks; *q; q = &(*q)->next) {
        if ((*q)->kind == REGISTERED_MEMORY && (*q)->host == p) {
            found = *q;
            *q = found->next;
            --stats.live[REGISTERED_MEMORY];
            registered_bytes -= (long long)found->size;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (!found)
        return fail(NOT_REGISTERED);
    free(found);
    return OK;
}

/* What the driver knows of an address (CU_POINTER_ATTRIBUTE_*): the memory
 * type (CU_MEMORYTYPE_HOST 1 for pinned, DEVICE 2 for device and managed
 * memory), whether it is managed, and the device ordinal. Memory it does
 * not know reads as type 0, ordinal -2, with success, as the real driver's
 * cuPointerGetAttributes answers for pageable host memory. */
static CUresult PointerGetAttributes(unsigned int n, int *attributes, void **data,
                                     CUdeviceptr address)
{
    INJECT();
    int kind = -1, device = -2;
    if (current() < 0)
        return fail(INVALID_CONTEXT);
    if (!attributes || !data)
        return fail(INVALID_VALUE);
    count(&stats.pointer_queries);
    bool known = find_in((uintptr_t)address, 0, true, &kind, &device) != NULL;
    for (unsigned int i = 0; i < n; ++i) {
        switch (attributes[i]) {
        case 2:
            *(unsigned int *)data[i] =
                !known ? 0u : kind == PINNED_MEMORY || kind == REGISTERED_MEMORY ? 1u : 2u;
            break;
        case 8: *(int *)data[i] = known && kind == MANAGED_MEMORY; break;
        case 9: *(int *)data[i] = known ? device : -2; break;
        default: return fail(INVALID_VALUE);
        }
    }
    return OK;
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
    FN("cuModuleLoadData", ModuleLoadData),
    FN("cuModuleGetFunction", ModuleGetFunction),
    FN("cuLaunchKernel", LaunchKernel),
    FN("cuMemPoolCreate", MemPoolCreate),
    FN("cuMemPoolSetAttribute", MemPoolSetAttribute),
    FN("cuMemPoolGetAttribute", MemPoolGetAttribute),
    FN("cuMemPoolTrimTo", MemPoolTrimTo),
    FN("cuMemAllocFromPoolAsync", MemAllocFromPoolAsync),
    FN("cuMemFreeAsync", MemFreeAsync),
    FN("cuEventCreate", EventCreate),
    FN("cuEventRecord", EventRecord),
    FN("cuEventQuery", EventQuery),
    FN("cuEventSynchronize", EventSynchronize),
    FN("cuEventDestroy", EventDestroy),
    FN("cuStreamWaitEvent", StreamWaitEvent),
    FN("cuMemHostRegister", MemHostRegister),
    FN("cuMemHostUnregister", MemHostUnregister),
    FN("cuPointerGetAttributes", PointerGetAttributes),
};

static bool is_entry_point(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
        if (!strcmp(name, table[i].name))
            return true;
    return false;
}

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

long long fake_cuda_stat(const char *name)
{
#define STAT(field) {#field, offsetof(fake_cuda_stats, field)}
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {
        STAT(lookups), STAT(retains), STAT(pushes), STAT(pops), STAT(context_syncs),
        STAT(stream_syncs), STAT(htod), STAT(dtoh), STAT(dtod), STAT(generic),
        STAT(async_calls), STAT(live_streams), STAT(errors), STAT(modules),
        STAT(kernel_arrays), STAT(serial_launches), STAT(pinned_copies), STAT(pools),
        STAT(pool_allocs), STAT(pool_reuses), STAT(pool_frees), STAT(events),
        STAT(live_events), STAT(event_waits), STAT(pointer_queries), STAT(stream_event_waits),
        STAT(event_records), STAT(stencil_launches), STAT(injected),
    };
#undef STAT
    fake_cuda_stats now;
    fake_cuda_stats_get(&now);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i)
        if (!strcmp(name, fields[i].name)) {
            long long value;
            memcpy(&value, (const char *)&now + fields[i].offset, sizeof value);
            return value;
        }
    return -1;
}
