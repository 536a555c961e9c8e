/* The message buffers of a halo plan (gtstore/halo_messages.h): which
 * memory they live in, chosen once, and the buffers, made once. */
#include "gtstore/halo_messages.h"

#include <stdlib.h>
#include <string.h>

#include "halo_layout.h"
#include "halo_transfer.h"
#include "stream_free.h"

/* One direction's buffers: a block cut into one buffer per neighbour. */
typedef struct direction {
    void *block;
    int64_t size;
    gts_halo_message *messages; /* per neighbour */
    gts__halo_block_order order; /* the device work queued on the block */
} direction;

struct gts_halo_messages {
    const gts_halo_plan *plan;
    gts_halo_memory memory;
    const gts_device_ops *device; /* where the blocks are */
    const gts_device_ops *gpu;    /* DEVICE: the plan's GPU, which packing is told; else NULL */
    int n;                        /* neighbours */
    direction send, recv;
    int *pair;                    /* per neighbour: see gts__halo_pair_local */
    gts__halo_transfer *pack_all, *pack_local, *unpack_all;
};

/* ---- the choice ---------------------------------------------------------------- */

/* GTSTORE_DEVICE_AWARE_MPI, where it says yes or no: AUTO where unset. */
static int aware_from_environment(gts_halo_device_aware *out, gts_error *err)
{
    const char *value = getenv("GTSTORE_DEVICE_AWARE_MPI");
    *out = GTS_HALO_AWARE_AUTO;
    if (!value || !value[0] || strcmp(value, "auto") == 0)
        return 0;
    if (strcmp(value, "1") == 0 || strcmp(value, "0") == 0) {
        *out = value[0] == '1' ? GTS_HALO_AWARE_YES : GTS_HALO_AWARE_NO;
        return 0;
    }
    return gts_error_set(err, GTS_EINVAL,
                         "GTSTORE_DEVICE_AWARE_MPI: expected '1', '0' or 'auto', got '%.60s'",
                         value);
}

/* Why messages cannot live in the memory of the plan's GPU; 0 where they
 * can. */
static int device_impossible(const gts_device_ops *const *gpus, int n, int32_t mpi_reads,
                             gts_error *err)
{
    if (n > 1)
        return gts_error_set(err, GTS_EINVAL,
                             "device_aware: the fields in device memory only are on %s and %s; "
                             "messages in device memory need them on one device",
                             gpus[0]->name, gpus[1]->name);
    /* memory with a host alias (the emulated device's): MPI reads that */
    if (gpus[0]->host_alias || gts_device_memory_is(gpus[0], mpi_reads))
        return 0;
    return gts_error_set(err, GTS_EINVAL,
                         "device_aware: asked for, but this MPI cannot read %s memory (it did "
                         "not report support for it, e.g. MPIX_Query_cuda_support() is 0 "
                         "for CUDA): use pinned host messages (device_aware off)",
                         gpus[0]->name);
}

int gts_halo_memory_choose(const gts_halo_plan *plan, gts_halo_device_aware aware,
                           int32_t mpi_reads, gts_halo_memory *out, gts_error *err)
{
    if (!plan || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", plan ? "out" : "plan");
    if (aware != GTS_HALO_AWARE_AUTO && aware != GTS_HALO_AWARE_NO && aware != GTS_HALO_AWARE_YES)
        return gts_error_set(err, GTS_EINVAL, "device_aware: %d is none of -1 (auto), 0, 1",
                             (int)aware);
    const gts_device_ops *gpus[2];
    int n = gts_halo_plan_devices(plan, gpus, 2);
    if (n == 0) {
        *out = GTS_HALO_MEMORY_HOST; /* nothing in device memory: nothing to be aware of */
        return 0;
    }
    int rc = aware == GTS_HALO_AWARE_AUTO ? aware_from_environment(&aware, err) : 0;
    if (rc)
        return rc;
    if (aware == GTS_HALO_AWARE_AUTO) /* detection: never the emulated device */
        aware = n == 1 && gts_device_memory_is(gpus[0], mpi_reads) ? GTS_HALO_AWARE_YES
                                                                   : GTS_HALO_AWARE_NO;
    if (aware == GTS_HALO_AWARE_YES && (rc = device_impossible(gpus, n, mpi_reads, err)))
        return rc;
    *out = aware == GTS_HALO_AWARE_YES ? GTS_HALO_MEMORY_DEVICE : GTS_HALO_MEMORY_PINNED;
    return 0;
}

const char *gts_halo_memory_name(gts_halo_memory memory)
{
    switch (memory) {
    case GTS_HALO_MEMORY_HOST: return "host";
    case GTS_HALO_MEMORY_PINNED: return "pinned";
    case GTS_HALO_MEMORY_DEVICE: return "device";
    }
    return "unknown";
}

/* ---- the buffers --------------------------------------------------------------- */

/* The device whose memory holds the buffers. */
static int buffer_device(const gts_halo_plan *plan, gts_halo_memory memory,
                         const gts_device_ops **out, gts_error *err)
{
    const gts_device_ops *gpus[2];
    int n = gts_halo_plan_devices(plan, gpus, 2);
    switch (memory) {
    case GTS_HALO_MEMORY_HOST:
        *out = gts_device_host();
        return 0;
    case GTS_HALO_MEMORY_PINNED:
        if (n == 0)
            break;
        return gts_device_pinned(gpus[0], out, err);
    case GTS_HALO_MEMORY_DEVICE:
        if (n == 0)
            break;
        if (n > 1)
            return device_impossible(gpus, n, 0, err);
        *out = gpus[0];
        return 0;
    default:
        return gts_error_set(err, GTS_EINVAL, "memory: %d is no gts_halo_memory", (int)memory);
    }
    return gts_error_set(err, GTS_EINVAL,
                         "memory: %s messages, but no field of the plan is in device memory only",
                         gts_halo_memory_name(memory));
}

void gts_halo_messages_destroy(gts_halo_messages *m)
{
    if (!m)
        return;
    /* no queued copy may touch a block once it is freed */
    gts__order_release(m->send.order.device, &m->send.order.order);
    gts__order_release(m->recv.order.device, &m->recv.order.order);
    gts_device_free(m->device, m->send.block, m->send.size);
    gts_device_free(m->device, m->recv.block, m->recv.size);
    gts__halo_transfer_destroy(m->pack_all);
    gts__halo_transfer_destroy(m->pack_local);
    gts__halo_transfer_destroy(m->unpack_all);
    free(m->pair);
    free(m->send.messages);
    free(m->recv.messages);
    free(m);
}

/* One direction's block, cut into the neighbours' buffers as
 * gts__halo_layout places them (halo_layout.h: the travelling ones first,
 * then the local ones). offset[i]: where neighbour i's buffer starts. */
static int allocate(gts_halo_messages *m, direction *dir, bool send, int64_t *offset,
                    gts_error *err)
{
    dir->size = send ? gts_halo_plan_send_bytes(m->plan) : gts_halo_plan_recv_bytes(m->plan);
    dir->messages = calloc((size_t)(m->n ? m->n : 1), sizeof *dir->messages);
    if (!dir->messages)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for halo messages");
    int rc = gts_device_alloc(m->device, dir->size, 0, &dir->block, err);
    if (rc)
        return rc;
    /* a device-aware MPI reads memory with a host alias (the emulated
     * device's) there, other device memory where it is */
    char *data = dir->block;
    char *mpi = m->device->host_alias ? gts_device_host_alias(m->device, data) : data;
    int64_t travel_bytes;
    gts__halo_layout(m->plan, m->pair, send, offset, &travel_bytes);
    for (int i = 0; i < m->n; ++i) {
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(m->plan, i);
        dir->messages[i] = (gts_halo_message){data + offset[i], mpi + offset[i],
                                              send ? nb->send_bytes : nb->recv_bytes};
    }
    return 0;
}

int gts_halo_messages_create(const gts_halo_plan *plan, gts_halo_memory memory,
                             gts_halo_messages **out, gts_error *err)
{
    if (!plan || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", plan ? "out" : "plan");
    const gts_device_ops *device;
    int rc = buffer_device(plan, memory, &device, err);
    if (rc)
        return rc;
    gts_halo_messages *m = calloc(1, sizeof *m);
    if (!m)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for halo messages");
    m->plan = plan;
    m->memory = memory;
    m->device = device;
    m->gpu = memory == GTS_HALO_MEMORY_DEVICE ? device : NULL;
    m->n = gts_halo_plan_neighbor_count(plan);
    /* the blocks' stream order: events of the GPU that copies into and out
     * of them (gts__halo_transfer_run); the host's (none) where none does */
    const gts_device_ops *gpu;
    m->send.order.device = m->recv.order.device =
        gts_halo_plan_devices(plan, &gpu, 1) > 0 ? gpu : gts_device_host();
    gts__order_init(&m->send.order.order);
    gts__order_init(&m->recv.order.order);
    m->pair = calloc((size_t)m->n + 1, sizeof *m->pair);
    int64_t *offsets = calloc(2 * (size_t)m->n + 1, sizeof *offsets);
    rc = m->pair && offsets ? GTS_OK
                            : gts_error_set(err, GTS_ENOMEM, "out of memory for halo messages");
    if (!rc)
        gts__halo_pair_local(plan, m->pair);
    int64_t *send_at = offsets, *recv_at = offsets + m->n;
    if (!rc && !(rc = allocate(m, &m->send, true, send_at, err)))
        rc = allocate(m, &m->recv, false, recv_at, err);
    if (!rc)
        rc = gts__halo_transfer_create(plan, GTS__HALO_PACK, device, m->send.block, send_at,
                                       m->pair, &m->send.order, &m->pack_all, err);
    if (!rc)
        rc = gts__halo_transfer_create(plan, GTS__HALO_LOCAL, device, m->send.block, send_at,
                                       m->pair, &m->send.order, &m->pack_local, err);
    if (!rc)
        rc = gts__halo_transfer_create(plan, GTS__HALO_UNPACK, device, m->recv.block, recv_at,
                                       m->pair, &m->recv.order, &m->unpack_all, err);
    /* the GPU's blocks (messages, staging) may come from frees in a
     * stream's order whose work still runs (stream_free.h): their use on
     * any stream starts after those frees */
    if (!rc)
        rc = gts__stream_free_order_new(m->send.order.device, &m->send.order.order, err);
    if (!rc)
        rc = gts__stream_free_order_new(m->recv.order.device, &m->recv.order.order, err);
    free(offsets);
    if (rc) {
        gts_halo_messages_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* ---- use ------------------------------------------------------------------------- */

gts_halo_memory gts_halo_messages_memory(const gts_halo_messages *m)
{
    return m->memory;
}

const gts_device_ops *gts_halo_messages_device(const gts_halo_messages *m)
{
    return m->device;
}

const gts_halo_message *gts_halo_messages_send(const gts_halo_messages *m, int index)
{
    return index >= 0 && index < m->n ? &m->send.messages[index] : NULL;
}

const gts_halo_message *gts_halo_messages_recv(const gts_halo_messages *m, int index)
{
    return index >= 0 && index < m->n ? &m->recv.messages[index] : NULL;
}

int gts_halo_messages_pack(const gts_halo_messages *m, int index, gts_error *err)
{
    const gts_halo_message *message = gts_halo_messages_send(m, index);
    if (!message)
        return gts_error_set(err, GTS_EINVAL, "index: %d is outside [0, %d)", index, m->n);
    return gts_halo_plan_pack_on(m->plan, index, m->gpu, message->data, message->bytes, err);
}

int gts_halo_messages_unpack(const gts_halo_messages *m, int index, gts_error *err)
{
    const gts_halo_message *message = gts_halo_messages_recv(m, index);
    if (!message)
        return gts_error_set(err, GTS_EINVAL, "index: %d is outside [0, %d)", index, m->n);
    return gts_halo_plan_unpack_on(m->plan, index, m->gpu, message->data, message->bytes, err);
}

bool gts_halo_messages_local(const gts_halo_messages *m, int index)
{
    return gts__halo_is_local(m->pair, m->n, index);
}

bool gts_halo_messages_at_once(const gts_halo_messages *m)
{
    const gts_device_ops *gpu;
    return gts_halo_plan_devices(m->plan, &gpu, 1) > 0;
}

int gts_halo_messages_pack_local(const gts_halo_messages *m, gts_error *err)
{
    return gts__halo_transfer_run(m->pack_local, NULL, err);
}

int gts_halo_messages_pack_all(const gts_halo_messages *m, gts_error *err)
{
    return gts_halo_messages_pack_all_on(m, NULL, err);
}

int gts_halo_messages_unpack_all(const gts_halo_messages *m, gts_error *err)
{
    return gts_halo_messages_unpack_all_on(m, NULL, err);
}

int gts_halo_messages_pack_all_on(const gts_halo_messages *m, gts_stream stream, gts_error *err)
{
    return gts__halo_transfer_run(m->pack_all, stream, err);
}

int gts_halo_messages_unpack_all_on(const gts_halo_messages *m, gts_stream stream,
                                    gts_error *err)
{
    return gts__halo_transfer_run(m->unpack_all, stream, err);
}

int gts_halo_messages_host_wait(const gts_halo_messages *m, bool send, gts_error *err)
{
    gts_halo_messages *w = (gts_halo_messages *)m; /* the order is the messages' own state */
    direction *dir = send ? &w->send : &w->recv;
    return gts__order_host(dir->order.device, &dir->order.order, err);
}
