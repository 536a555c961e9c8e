/* Every message of a halo exchange moved at once (halo_transfer.h).
 *
 * Each region (one field's part of one message) is a copy between the
 * field and the message, run where the field is:
 * - a field with a host side is copied on the host (its host side synced
 *   first), into the message where the message is host memory, else into
 *   a host staging block that crosses to the device;
 * - a field in device memory only is copied by its GPU, into the message
 *   where the message is that GPU's memory, else into a staging block on
 *   the GPU that crosses to the host.
 * The copies of each GPU form one batch (gtstore/copy_batch.h: one kernel
 * launch), and the crossings of contiguous regions merge: where every field
 * is on one GPU and the messages are pinned host memory, an exchange packs
 * with one launch and one transfer, and unpacks with one transfer and one
 * launch. Staging blocks mirror the whole message block, so a region sits
 * at the same offset on both sides. */
#include "halo_transfer.h"

#include <stdlib.h>
#include <string.h>

#include "gtstore/access.h"
#include "gtstore/copy_batch.h"
#include "gtstore/kernels.h"
#include "gtstore/sync.h"
#include "buffer_private.h"
#include "halo_layout.h"
#include "halo_region.h"
#include "copy_batch_private.h"

/* Contiguous bytes between a GPU's memory and host memory. */
typedef struct crossing {
    const gts_device_ops *gpu;
    char *device_memory, *host_memory;
    int64_t bytes;
    bool field_on_gpu; /* packing crosses to the host; else to the device */
} crossing;

/* The copies one GPU runs, and its staging block (NULL where none). */
typedef struct group {
    const gts_device_ops *gpu;
    gts_strided_copy *copies;
    int ncopies, capacity;
    gts_copy_batch *batch;
    char *staging;
} group;

/* Packed values to negate, in the messages' memory: host memory (gpu
 * NULL), or a GPU's, by its kernel. */
typedef struct negation {
    const gts_device_ops *gpu;
    char *data;
    int64_t bytes;
    gts_dtype dtype;
} negation;

struct gts__halo_transfer {
    const gts_halo_plan *plan;
    bool send;
    int64_t block_size;
    gts_strided_copy *host; /* copies on the host */
    int nhost, host_capacity;
    char *host_staging;     /* where the messages are device memory */
    crossing *cross;
    int ncross, cross_capacity;
    group *groups;          /* one per GPU of the plan */
    int ngroups;
    unsigned char *host_fields; /* per field: READ and WRITTEN on the host */
    unsigned char *device_fields; /* per field: READ and WRITTEN on its GPU */
    gts__halo_block_order *order; /* the message block's, which covers the staging blocks */
    /* per buffer written on the host, one of its fields, in buffer address order */
    const gts_storage **held;
    int nheld;
    negation *negations;    /* after packing */
    int nnegations, negation_capacity;
};

enum { READ = 1, WRITTEN = 2 };

/* ---- building ------------------------------------------------------------------ */

/* Grows an array of `size`-byte items to hold one more. */
static int reserve(void **items, int *capacity, int count, size_t size, gts_error *err)
{
    if (count < *capacity)
        return GTS_OK;
    int grown = *capacity ? 2 * *capacity : 8;
    void *more = grown > 0 ? realloc(*items, (size_t)grown * size) : NULL;
    if (!more)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo exchange's copies");
    *items = more;
    *capacity = grown;
    return GTS_OK;
}

static int add_copy(gts_strided_copy **copies, int *count, int *capacity, gts_strided_copy c,
                    gts_error *err)
{
    int rc = reserve((void **)copies, capacity, *count, sizeof c, err);
    if (!rc)
        (*copies)[(*count)++] = c;
    return rc;
}

/* A crossing, merged into the last where both sides continue it. */
static int add_crossing(gts__halo_transfer *t, crossing c, gts_error *err)
{
    crossing *last = t->ncross ? &t->cross[t->ncross - 1] : NULL;
    if (last && last->gpu == c.gpu && last->field_on_gpu == c.field_on_gpu &&
        last->device_memory + last->bytes == c.device_memory &&
        last->host_memory + last->bytes == c.host_memory) {
        last->bytes += c.bytes;
        return GTS_OK;
    }
    int rc = reserve((void **)&t->cross, &t->cross_capacity, t->ncross, sizeof c, err);
    if (!rc)
        t->cross[t->ncross++] = c;
    return rc;
}

static group *group_of(gts__halo_transfer *t, const gts_device_ops *gpu)
{
    for (int g = 0; g < t->ngroups; ++g)
        if (t->groups[g].gpu == gpu)
            return &t->groups[g];
    return NULL;
}

/* A staging block the size of the message block, made on first use. */
static int staging(const gts_device_ops *device, int64_t size, char **block, gts_error *err)
{
    return *block ? GTS_OK : gts_device_alloc(device, size, 0, (void **)block, err);
}

/* Where field f's element 0 is for the side that copies it. */
static char *field_memory(const gts_storage *g, const gts_device_ops *gpu)
{
    return gpu ? (char *)gts_buffer_data(g->buffer) + g->offset : gts_storage_data(g);
}

/* The copy between a field's region and `packed`, in the transfer's
 * direction. */
static gts_strided_copy region_copy(const gts__halo_transfer *t, const gts_storage *g,
                                    const gts__halo_region *r, char *field, char *packed)
{
    gts_strided_copy c = {.ndim = g->ndim, .shape = r->shape, .itemsize = g->dtype.itemsize};
    packed += r->packed_offset;
    if (t->send) {
        c.dst = packed;
        c.dst_strides = r->packed_strides;
        c.src = field + r->offset;
        c.src_strides = g->strides;
    } else {
        c.dst = field + r->offset;
        c.dst_strides = g->strides;
        c.src = packed;
        c.src_strides = r->packed_strides;
    }
    return c;
}

/* The copy of a region at `offset` of the message block. */
static int add_region(gts__halo_transfer *t, const gts__halo_region *r, int64_t offset,
                      const gts_device_ops *message_gpu, char *block, gts_error *err)
{
    int f = r->field;
    const gts_storage *g = gts__halo_plan_field(t->plan, f);
    const gts_device_ops *gpu = gts__halo_field_gpu(g);
    char *field = field_memory(g, gpu);
    int rc;
    if (!gpu) {
        t->host_fields[f] |= t->send ? READ : WRITTEN;
        char *packed = block + offset;
        if (message_gpu) { /* through host staging, then across */
            if ((rc = staging(gts_device_host(), t->block_size, &t->host_staging, err)))
                return rc;
            packed = t->host_staging + offset;
            crossing c = {message_gpu, block + offset, packed, r->bytes, false};
            if ((rc = add_crossing(t, c, err)))
                return rc;
        }
        return add_copy(&t->host, &t->nhost, &t->host_capacity,
                        region_copy(t, g, r, field, packed), err);
    }
    if (message_gpu && message_gpu != gpu) /* refused when the messages were made */
        return gts_error_set(err, GTS_EINVAL,
                             "device: messages in %s memory, but fields[%d] is on %s",
                             message_gpu->name, f, gpu->name);
    t->device_fields[f] |= t->send ? READ : WRITTEN;
    group *gr = group_of(t, gpu);
    char *packed = block + offset;
    if (!message_gpu) { /* through the GPU's staging, then across */
        if ((rc = staging(gpu, t->block_size, &gr->staging, err)))
            return rc;
        packed = gr->staging + offset;
        crossing c = {gpu, packed, block + offset, r->bytes, true};
        if ((rc = add_crossing(t, c, err)))
            return rc;
    }
    return add_copy(&gr->copies, &gr->ncopies, &gr->capacity,
                    region_copy(t, g, r, field, packed), err);
}

/* Region k of neighbour i's send message straight into region k of
 * neighbour j's receive message, the same field's (halo_messages.c pairs
 * only such messages): this rank is its own neighbour. */
static int add_local(gts__halo_transfer *t, int k, int i, int j, gts_error *err)
{
    const gts__halo_region *from = gts__halo_plan_region(t->plan, true, i, k);
    const gts__halo_region *to = gts__halo_plan_region(t->plan, false, j, k);
    int f = from->field;
    const gts_storage *g = gts__halo_plan_field(t->plan, f);
    const gts_device_ops *gpu = gts__halo_field_gpu(g);
    char *field = field_memory(g, gpu);
    gts_strided_copy c = {field + to->offset, g->strides,   field + from->offset, g->strides,
                          g->ndim,            from->shape, g->dtype.itemsize};
    if (!gpu) {
        t->host_fields[f] |= READ | WRITTEN;
        return add_copy(&t->host, &t->nhost, &t->host_capacity, c, err);
    }
    t->device_fields[f] |= READ | WRITTEN;
    group *gr = group_of(t, gpu);
    return add_copy(&gr->copies, &gr->ncopies, &gr->capacity, c, err);
}

/* A region whose values travel negated, negated in the message block
 * once packed: on the host, or by the messages' GPU where they are in its
 * memory (no byte crosses for it). Merged into the last negation where it
 * continues it. A local copy never turns (a rank is its own neighbour only
 * on a Cartesian grid). */
static int add_negation(gts__halo_transfer *t, const gts__halo_region *r, char *packed,
                        const gts_device_ops *message_gpu, gts_error *err)
{
    if (message_gpu && !message_gpu->negate)
        return gts_error_set(err, GTS_ENOTSUP,
                             "device: a turned vector component is negated where the message "
                             "is, but %s has no kernel that negates",
                             message_gpu->name);
    negation n = {message_gpu, packed, r->bytes,
                  gts__halo_plan_field(t->plan, r->field)->dtype};
    negation *last = t->nnegations ? &t->negations[t->nnegations - 1] : NULL;
    if (last && last->gpu == n.gpu && gts_dtype_equal(last->dtype, n.dtype) &&
        last->data + last->bytes == n.data) {
        last->bytes += n.bytes;
        return GTS_OK;
    }
    int rc = reserve((void **)&t->negations, &t->negation_capacity, t->nnegations, sizeof n,
                     err);
    if (!rc)
        t->negations[t->nnegations++] = n;
    return rc;
}

/* Neighbour i's regions, its message at `offset` of the block. */
static int add_neighbor(gts__halo_transfer *t, int i, const int *pair,
                        const gts_device_ops *message_gpu, char *block, int64_t offset,
                        gts_error *err)
{
    int count = gts__halo_plan_region_count(t->plan, t->send, i);
    for (int k = 0; k < count; ++k) {
        const gts__halo_region *r = gts__halo_plan_region(t->plan, t->send, i, k);
        if (r->bytes == 0)
            continue;
        bool local = t->send && pair[i] >= 0;
        int rc = local ? add_local(t, k, i, pair[i], err)
                       : add_region(t, r, offset, message_gpu, block, err);
        if (!rc && !local && t->send && r->negate)
            rc = add_negation(t, r, block + offset, message_gpu, err);
        if (rc)
            return rc;
        offset += r->bytes;
    }
    return GTS_OK;
}

static int make_groups(gts__halo_transfer *t, gts_error *err)
{
    int nfields = gts__halo_plan_nfields(t->plan);
    const gts_device_ops **gpus = calloc((size_t)nfields, sizeof *gpus);
    t->groups = calloc((size_t)nfields, sizeof *t->groups);
    t->host_fields = calloc((size_t)nfields, sizeof *t->host_fields);
    t->device_fields = calloc((size_t)nfields, sizeof *t->device_fields);
    t->held = calloc((size_t)nfields, sizeof *t->held);
    if (!gpus || !t->groups || !t->host_fields || !t->device_fields || !t->held) {
        free(gpus);
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo exchange");
    }
    t->ngroups = gts_halo_plan_devices(t->plan, gpus, nfields); /* at most one per field */
    for (int g = 0; g < t->ngroups; ++g)
        t->groups[g].gpu = gpus[g];
    free(gpus);
    return GTS_OK;
}

static int by_buffer_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)(*(const gts_storage *const *)a)->buffer;
    uintptr_t y = (uintptr_t)(*(const gts_storage *const *)b)->buffer;
    return (x > y) - (x < y);
}

/* The buffers written on the host, each once (through its first field so
 * written), in address order: the order every holder of several takes
 * them in (gtstore/sync.h), so that two holders never wait on each other. */
static void list_held(gts__halo_transfer *t)
{
    int nfields = gts__halo_plan_nfields(t->plan);
    for (int f = 0; f < nfields; ++f) {
        const gts_storage *field = gts__halo_plan_field(t->plan, f);
        bool seen = false;
        for (int k = 0; k < t->nheld; ++k)
            seen = seen || t->held[k]->buffer == field->buffer;
        if ((t->host_fields[f] & WRITTEN) && !seen)
            t->held[t->nheld++] = field;
    }
    qsort(t->held, (size_t)t->nheld, sizeof *t->held, by_buffer_address);
}

/* Whether neighbour i's regions belong to the transfer. */
static bool moved(gts__halo_moves moves, const int *pair, int n, int i)
{
    switch (moves) {
    case GTS__HALO_PACK: return true;
    case GTS__HALO_LOCAL: return pair[i] >= 0;
    /* a pair's target receives nothing by message; a paired neighbour's
     * own receive message (pair[i] >= 0) is none either: it is empty or
     * another pair's target (gts__halo_pair_local pairs all or none) */
    default: return !gts__halo_is_local(pair, n, i);
    }
}

int gts__halo_transfer_create(const gts_halo_plan *plan, gts__halo_moves moves,
                              const gts_device_ops *device, char *block, const int64_t *offset,
                              const int *pair, gts__halo_block_order *order,
                              gts__halo_transfer **out, gts_error *err)
{
    gts__halo_transfer *t = calloc(1, sizeof *t);
    if (!t)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo exchange");
    bool send = moves != GTS__HALO_UNPACK;
    t->plan = plan;
    t->order = order;
    t->send = send;
    t->block_size = send ? gts_halo_plan_send_bytes(plan) : gts_halo_plan_recv_bytes(plan);
    const gts_device_ops *message_gpu = device->host_accessible ? NULL : device;
    int n = gts_halo_plan_neighbor_count(plan), rc = make_groups(t, err);
    for (int i = 0; !rc && i < n; ++i)
        if (moved(moves, pair, n, i))
            rc = add_neighbor(t, i, pair, message_gpu, block, offset[i], err);
    if (!rc)
        list_held(t);
    /* the plan's regions never share an element: the sides need no check */
    for (int g = 0; !rc && g < t->ngroups; ++g)
        rc = gts__copy_batch_create(t->groups[g].gpu, t->groups[g].ncopies, t->groups[g].copies,
                                    false, &t->groups[g].batch, err);
    if (rc) {
        gts__halo_transfer_destroy(t);
        return rc;
    }
    *out = t;
    return GTS_OK;
}

void gts__halo_transfer_destroy(gts__halo_transfer *t)
{
    if (!t)
        return;
    for (int g = 0; g < t->ngroups; ++g) {
        gts_copy_batch_destroy(t->groups[g].batch);
        gts_device_free(t->groups[g].gpu, t->groups[g].staging, t->block_size);
        free(t->groups[g].copies);
    }
    gts_device_free(gts_device_host(), t->host_staging, t->block_size);
    free(t->groups);
    free(t->host);
    free(t->cross);
    free(t->host_fields);
    free(t->device_fields);
    free(t->held);
    free(t->negations);
    free(t);
}

/* ---- running ---------------------------------------------------------------------- */

/* The host sides of the fields copied on the host, through the one access
 * rule (gtstore/access.h): those read are brought up to date; those
 * written are held as writes in flight (GTS_ACCESS_WRITE_HELD) until
 * end_writes, so that a sync on another thread waits for the copies
 * instead of losing them; managed memory is fenced. The host waits for
 * their device work. The copies' addresses were fixed when the transfer
 * was made: the access's element 0 is not needed. */
static int begin_host_access(const gts__halo_transfer *t, int *begun, gts_error *err)
{
    int nfields = gts__halo_plan_nfields(t->plan);
    void *element0;
    *begun = 0;
    for (int f = 0; f < nfields; ++f)
        if (t->host_fields[f] == READ) {
            int rc = gts_storage_access(gts__halo_plan_field(t->plan, f), GTS_SIDE_HOST,
                                        GTS_ACCESS_READ, NULL, &element0, err);
            if (rc)
                return rc;
        }
    for (; *begun < t->nheld; ++*begun) {
        int rc = gts_storage_access(t->held[*begun], GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL,
                                    &element0, err);
        if (rc)
            return rc;
    }
    return GTS_OK;
}

static void end_writes(const gts__halo_transfer *t, int begun)
{
    while (begun > 0)
        gts_storage_access_end(t->held[--begun], GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, NULL);
}

static gts_access device_access(unsigned char use)
{
    return use & WRITTEN ? GTS_ACCESS_WRITE : GTS_ACCESS_READ;
}

/* The device sides of the fields copied on their GPU, on `stream`: the
 * stream waits for their producers' work (gtstore/access.h: on the device;
 * on the default stream the host waits). *begun: the fields [0, *begun)
 * were accessed. */
static int begin_device_access(const gts__halo_transfer *t, gts_stream stream, int *begun,
                               gts_error *err)
{
    int nfields = gts__halo_plan_nfields(t->plan);
    void *element0;
    for (*begun = 0; *begun < nfields; ++*begun) {
        unsigned char use = t->device_fields[*begun];
        int rc = use ? gts_storage_access(gts__halo_plan_field(t->plan, *begun), GTS_SIDE_DEVICE,
                                          device_access(use), stream, &element0, err)
                     : GTS_OK;
        if (rc)
            return rc;
    }
    return GTS_OK;
}

/* Records the work queued on `stream` in the stream order of the message
 * block and of the fields [0, begun) accessed on their GPU, read or
 * written: a later writer waits for the packing's reads, a later reader
 * for the unpacking's writes. One event for the block and every field on
 * its GPU (an exchange's fields are), recorded once; a field elsewhere
 * gets its own. Their accesses end so (device_access holds no write).
 * Recorded after an error (rc) too: whatever was queued is waited for.
 * The first error is kept. */
static int record_queued(const gts__halo_transfer *t, gts_stream stream, int begun, int rc,
                         gts_error *err)
{
    gts__halo_block_order *o = t->order;
    gts__order *orders[GTS__ORDER_BATCH] = {&o->order};
    int n = 1;
    for (int f = 0; f < begun; ++f) {
        gts_buffer *buffer = t->device_fields[f] ? gts__halo_plan_field(t->plan, f)->buffer
                                                 : NULL;
        if (buffer && buffer->device == o->device && n < GTS__ORDER_BATCH) {
            orders[n++] = &buffer->order;
        } else if (buffer) {
            int alone_rc = gts_buffer_order_record(buffer, stream, rc ? NULL : err);
            rc = rc ? rc : alone_rc;
        }
    }
    int record_rc = gts__order_record_all(o->device, orders, n, stream, rc ? NULL : err);
    return rc ? rc : record_rc;
}

static int run_host(const gts__halo_transfer *t, gts_error *err)
{
    for (int i = 0; i < t->nhost; ++i) {
        const gts_strided_copy *c = &t->host[i];
        int rc = gts_copy(c->dst, c->dst_strides, c->src, c->src_strides, c->ndim, c->shape,
                          c->itemsize, err);
        if (rc)
            return rc;
    }
    return GTS_OK;
}

static int run_devices(const gts__halo_transfer *t, gts_stream stream, gts_error *err)
{
    for (int g = 0; g < t->ngroups; ++g) {
        int rc = gts_copy_batch_run(t->groups[g].batch, stream, err);
        if (rc)
            return rc;
    }
    return GTS_OK;
}

/* Packing moves the packed bytes to the messages' side, unpacking from
 * it. */
static int run_crossings(const gts__halo_transfer *t, gts_stream stream, gts_error *err)
{
    for (int k = 0; k < t->ncross; ++k) {
        const crossing *c = &t->cross[k];
        int rc = c->field_on_gpu == t->send
                     ? gts_device_copy_to_host(c->gpu, c->host_memory, c->device_memory,
                                               c->bytes, stream, err)
                     : gts_device_copy_to_device(c->gpu, c->device_memory, c->host_memory,
                                                 c->bytes, stream, err);
        if (rc)
            return rc;
    }
    return GTS_OK;
}

/* The packed values that travel negated, where the messages are: by
 * their GPU on `stream` (on_gpu), or by the host (not on_gpu) once the
 * bytes that crossed into host memory are there. Nothing for the other
 * side: every negation of a transfer is on the messages' side. */
static int run_negations(const gts__halo_transfer *t, bool on_gpu, gts_stream stream,
                         gts_error *err)
{
    if (!t->nnegations || (t->negations[0].gpu != NULL) != on_gpu)
        return GTS_OK;
    int rc = on_gpu ? GTS_OK : gts__order_host(t->order->device, &t->order->order, err);
    for (int k = 0; !rc && k < t->nnegations; ++k)
        rc = gts__halo_negate_on(t->negations[k].gpu, t->negations[k].data,
                                 t->negations[k].bytes, t->negations[k].dtype, stream, err);
    return rc;
}

/* The work queued on `stream` (the GPUs' copies, the crossings, the
 * negations on a GPU), in the stream order of the fields and of the
 * message block: it follows the fields' producers and the block's previous
 * use (the staging blocks' too: they are used only with it), and is
 * recorded on both. */
static int run_queued(const gts__halo_transfer *t, gts_stream stream, gts_error *err)
{
    gts__halo_block_order *o = t->order;
    int begun, rc = begin_device_access(t, stream, &begun, err);
    if (!rc)
        rc = gts__order_device(o->device, &o->order, stream, err);
    if (!rc && t->send && !(rc = run_devices(t, stream, err)) &&
        !(rc = run_crossings(t, stream, err)))
        rc = run_negations(t, true, stream, err);
    if (!rc && !t->send && !(rc = run_crossings(t, stream, err)))
        rc = run_devices(t, stream, err);
    rc = record_queued(t, stream, begun, rc, err);
    return !rc && t->send ? run_negations(t, false, stream, err) : rc;
}

int gts__halo_transfer_run(const gts__halo_transfer *t, gts_stream stream, gts_error *err)
{
    if (stream && t->ngroups > 1)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: the fields in device memory only are on %s and %s; a "
                             "stream is one device's",
                             t->groups[0].gpu->name, t->groups[1].gpu->name);
    gts__halo_block_order *o = t->order;
    int begun, rc = begin_host_access(t, &begun, err);
    /* the host copies touch the message block (or the host staging block
     * that crosses to it): once its queued work is done */
    if (!rc && t->nhost)
        rc = gts__order_host(o->device, &o->order, err);
    if (!rc && t->send) { /* fields -> (staging) -> messages */
        if (!(rc = run_host(t, err)))
            rc = run_queued(t, stream, err);
    } else if (!rc) { /* messages -> (staging) -> fields */
        if (!(rc = run_queued(t, stream, err)) && t->nhost &&
            !(rc = gts__order_host(o->device, &o->order, err)))
            rc = run_host(t, err);
    }
    end_writes(t, begun);
    return rc;
}
