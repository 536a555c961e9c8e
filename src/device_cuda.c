/* The CUDA devices' tables for the registry (device.c): which devices
 * there are, the devices of DLPack ids and of addresses (device_cuda.h). */
#define _POSIX_C_SOURCE 200809L
#include "device_cuda.h"
#include "device_cuda_registry.h"

#include <stdio.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static gts_device_ops memory_ops[MAX_DEVICES], managed_ops[MAX_DEVICES], pinned_ops;

/* The tables: who each device is, then the operations of each concept. */
static void build_ops(void)
{
    for (int n = 0; n < gts__cuda_device_count; ++n) {
        cuda_device *d = &gts__cuda_devices[n];
        snprintf(d->names[0], NAME_SIZE, "cuda:%d", n);
        snprintf(d->names[1], NAME_SIZE, "cuda_managed:%d", n);
        memory_ops[n] = (gts_device_ops){
            .id = {GTS_DL_CUDA, n},
            .name = d->names[0],
            .host_accessible = false,
            .ctx = d,
            .kind = GTS_MEMORY_GPU,
            .cuda_array_interface = true,
            .engine = GTS_ENGINE_CUPY,
        };
        managed_ops[n] = (gts_device_ops){
            .id = {GTS_DL_CUDA_MANAGED, n},
            .name = d->names[1],
            .host_accessible = true,
            .ctx = d,
            .kind = GTS_MEMORY_MANAGED,
            .owner = &memory_ops[n],
            .cuda_array_interface = true,
            .engine = GTS_ENGINE_CUPY,
        };
        gts__cuda_memory_ops(&memory_ops[n], &managed_ops[n], NULL);
        gts__cuda_copy_ops(&memory_ops[n], &managed_ops[n], NULL);
        gts__cuda_sync_ops(&memory_ops[n], &managed_ops[n], NULL);
    }
    snprintf(gts__cuda_devices[0].names[2], NAME_SIZE, "cuda_host:0");
    pinned_ops = (gts_device_ops){
        .id = {GTS_DL_CUDA_HOST, 0},
        .name = gts__cuda_devices[0].names[2],
        .host_accessible = true,
        .ctx = &gts__cuda_devices[0],
        .kind = GTS_MEMORY_PINNED,
        .engine = GTS_ENGINE_NUMPY,
    };
    gts__cuda_memory_ops(NULL, NULL, &pinned_ops);
    gts__cuda_copy_ops(NULL, NULL, &pinned_ops);
    gts__cuda_sync_ops(NULL, NULL, &pinned_ops);
}

static void initialize(void)
{
    gts__cuda_load();
    if (gts__cuda_init_code != GTS_OK)
        return;
    for (int n = 0; n < gts__cuda_device_count; ++n)
        gts__cuda_init_caches(&gts__cuda_devices[n]);
    build_ops();
}

static int ready(void)
{
    pthread_once(&init_once, initialize);
    return gts__cuda_init_code;
}

int gts_device_cuda_status(int *count, int *version, gts_error *err)
{
    int rc = ready();
    if (count)
        *count = rc ? 0 : gts__cuda_device_count;
    if (version)
        /* known once the driver answered, even if cuInit failed */
        *version = gts__cuda_driver_version;
    if (rc)
        return gts_error_set(err, rc, "CUDA: %s", gts__cuda_init_message);
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
                             gts__cuda_init_message);
    if (id.type == GTS_DL_CUDA_HOST) {
        if (id.id != 0)
            return gts_error_set(err, GTS_ENOTFOUND,
                                 "device: (%d, %d) does not exist: there is no %s device %d "
                                 "(pinned host memory is device 0)",
                                 (int)id.type, (int)id.id, kind, (int)id.id);
        *out = &pinned_ops;
        return GTS_OK;
    }
    if (id.id < 0 || id.id >= gts__cuda_device_count)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "device: (%d, %d) does not exist: there is no %s device %d (%d "
                             "found)",
                             (int)id.type, (int)id.id, kind, (int)id.id, gts__cuda_device_count);
    if (id.type == GTS_DL_CUDA) {
        *out = &memory_ops[id.id];
        return GTS_OK;
    }
    if (!gts__cuda_devices[id.id].managed)
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
                             gts__cuda_init_message);
    /* any context will do with unified addressing: device 0's */
    if ((rc = gts__cuda_enter(&gts__cuda_devices[0], err)))
        return rc;
    unsigned int type = 0;
    int managed = 0, ordinal = -1;
    CUresult cu = pointer_attributes(address, &type, &managed, &ordinal);
    leave();
    if (cu != CUDA_SUCCESS || type == 0)
        return gts_error_set(err, GTS_ENOTFOUND,
                             "address %p is not CUDA memory (cuPointerGetAttributes: %s)",
                             address,
                             cu != CUDA_SUCCESS ? gts__cuda_result_name(cu) : "no memory type");
    if (type == CU_MEMORYTYPE_HOST) {
        *out = &pinned_ops;
        return GTS_OK;
    }
    if (ordinal < 0 || ordinal >= gts__cuda_device_count ||
        (managed && !gts__cuda_devices[ordinal].managed))
        return gts_error_set(err, GTS_ENOTFOUND,
                             "address %p is memory of CUDA device %d, which gtstore does not "
                             "reach (%d devices)",
                             address, ordinal, gts__cuda_device_count);
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
    for (int k = 0; k < gts__cuda_device_count; ++k)
        ADD(&memory_ops[k]);
    ADD(&pinned_ops);
    for (int k = 0; k < gts__cuda_device_count; ++k)
        if (gts__cuda_devices[k].managed)
            ADD(&managed_ops[k]);
#undef ADD
    return n;
}
