/* Halo exchange plans (gtstore/halo_plan.h): the regions each neighbour's
 * message carries, computed once; packing and unpacking are strided copies
 * between the fields and a caller's contiguous buffer. */
#include "gtstore/halo_plan.h"

#include <stdlib.h>
#include <string.h>

#include "gtstore/device.h"
#include "gtstore/kernels.h"
#include "gtstore/sync.h"

/* One field's part of one message. */
typedef struct region {
    int64_t offset; /* bytes from the field's element 0 to the region's first */
    int64_t bytes;  /* 0: nothing of this field travels */
    int64_t *shape; /* the field's ndim entries, in the plan's pool */
    int64_t *packed_strides;
} region;

/* A field in memory without a host side is packed on its device, into a
 * block of device memory made with the plan, then copied to the host
 * message (and the reverse for unpacking). */
typedef struct staging {
    const gts_device_ops *device; /* NULL: the field is packed on the host */
    void *block;
    int64_t size; /* bytes: the field's largest region */
} staging;

struct gts_halo_plan {
    int nfields;
    gts_storage *fields; /* views: one buffer reference each */
    staging *stage;      /* per field */
    int nneighbors;
    gts_halo_neighbor *neighbors;
    region *send, *recv; /* [neighbor * nfields + field] */
    int64_t *pool;       /* the regions' shapes and strides */
    int64_t send_bytes, recv_bytes;
    uint64_t signature;
};

enum { MAX_OFFSETS = 27 }; /* 3^GTS_PARTITION_MAX_NDIM */

/* ---- checks ---------------------------------------------------------------- */

/* The storage dimension of each split dimension of the partition. */
static int find_split_dims(const gts_partition *p, const gts_storage *field, int f, int *dims,
                           gts_error *err)
{
    for (int d = 0; d < p->ndim; ++d) {
        dims[d] = -1;
        for (int s = 0; s < field->ndim; ++s)
            if (field->dims[s] == p->labels[d])
                dims[d] = s;
        if (dims[d] < 0) {
            char label[GTS_DIM_TEXT_SIZE];
            gts_dim_format(p->labels[d], label);
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: has no dimension labelled %s, which the partition "
                                 "splits",
                                 f, label);
        }
    }
    return 0;
}

static bool has_neighbors_along(const gts_partition *p, int d)
{
    return p->nprocs[d] > 1 || p->periodic[d];
}

static int check_field(const gts_partition *p, const int64_t *subdomain, const gts_storage *field,
                       int f, const int *dims, gts_error *err)
{
    if (field->readonly)
        return gts_error_set(err, GTS_EREADONLY, "fields[%d]: is read-only", f);
    for (int d = 0; d < p->ndim; ++d) {
        int s = dims[d];
        gts_halo h = field->halo[s];
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(p->labels[d], label);
        int64_t extent = field->shape[s] - h.lower - h.upper;
        if (extent != subdomain[d])
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: its domain has %lld points along %s, this rank's "
                                 "subdomain %lld (a field of another partition?)",
                                 f, (long long)extent, label, (long long)subdomain[d]);
        int64_t smallest = gts_partition_min_block(p, d);
        if (has_neighbors_along(p, d) && (h.lower > smallest || h.upper > smallest))
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: its halo (%lld, %lld) along %s is wider than the "
                                 "smallest subdomain (%lld points), which must fill it",
                                 f, (long long)h.lower, (long long)h.upper, label,
                                 (long long)smallest);
    }
    return 0;
}

/* ---- regions --------------------------------------------------------------- */

/* The first index and count along split dimension `s` of a field for a
 * message at `offset` (-1, 0, 1) along it: received into the halo, or sent
 * from the domain points that are the neighbour's halo. */
static void split_range(gts_halo h, int64_t extent, int offset, bool send, int64_t *start,
                        int64_t *count)
{
    if (offset == 0) {
        *start = h.lower;
        *count = extent;
    } else if (offset < 0) {
        *start = send ? h.lower : 0;
        *count = send ? h.upper : h.lower;
    } else { /* sent: the last h.lower domain points, the upper neighbour's lower halo */
        *start = send ? h.lower + (extent - h.lower) : h.lower + extent;
        *count = send ? h.lower : h.upper;
    }
}

/* Fills `r` (its shape and stride arrays already pointing into the pool). */
static void region_init(region *r, const gts_partition *p, const gts_storage *field,
                        const int *dims, const int *offset, bool send)
{
    int64_t itemsize = field->dtype.itemsize, bytes = itemsize;
    r->offset = 0;
    for (int s = 0; s < field->ndim; ++s) {
        int64_t start = 0, count = field->shape[s];
        for (int d = 0; d < p->ndim; ++d)
            if (dims[d] == s)
                split_range(field->halo[s], field->shape[s] - field->halo[s].lower -
                            field->halo[s].upper, offset[d], send, &start, &count);
        r->shape[s] = count;
        r->offset += start * field->strides[s]; /* inside the storage: no overflow */
        bytes *= count;
    }
    r->bytes = bytes;
    /* Packed in the storage's layout order: contiguous where it is. */
    int layout[GTS_MAX_NDIM];
    gts_storage_layout(field, layout);
    int64_t stride = itemsize;
    for (int rank = field->ndim - 1; rank >= 0; --rank)
        for (int s = 0; s < field->ndim; ++s)
            if (layout[s] == rank) {
                r->packed_strides[s] = stride;
                stride *= r->shape[s];
            }
}

static int offset_index(const gts_partition *p, const int *offset)
{
    int index = 0;
    for (int d = 0; d < p->ndim; ++d)
        index = index * 3 + offset[d] + 1;
    return index;
}

/* ---- the signature ----------------------------------------------------------- */

static uint64_t hash_add(uint64_t h, int64_t value)
{
    for (int i = 0; i < 8; ++i) { /* FNV-1a, byte by byte */
        h ^= (uint64_t)value >> (8 * i) & 0xff;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static uint64_t signature(const gts_partition *p, int nfields, const gts_storage *fields,
                          int (*dims)[GTS_PARTITION_MAX_NDIM])
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = hash_add(h, p->ndim);
    for (int d = 0; d < p->ndim; ++d) {
        h = hash_add(h, p->labels[d]);
        h = hash_add(h, p->global_shape[d]);
        h = hash_add(h, p->nprocs[d]);
        h = hash_add(h, p->periodic[d]);
    }
    h = hash_add(h, nfields);
    for (int f = 0; f < nfields; ++f) {
        const gts_storage *g = &fields[f];
        int layout[GTS_MAX_NDIM];
        gts_storage_layout(g, layout);
        h = hash_add(h, g->dtype.kind);
        h = hash_add(h, g->dtype.itemsize);
        h = hash_add(h, g->ndim);
        for (int s = 0; s < g->ndim; ++s) {
            bool split = false;
            for (int d = 0; d < p->ndim; ++d)
                split = split || dims[f][d] == s;
            h = hash_add(h, g->dims[s]);
            h = hash_add(h, layout[s]);
            h = hash_add(h, g->halo[s].lower);
            h = hash_add(h, g->halo[s].upper);
            h = hash_add(h, split ? -1 : g->shape[s]); /* split extents differ by rank */
        }
    }
    return h;
}

/* ---- making and freeing --------------------------------------------------- */

void gts_halo_plan_destroy(gts_halo_plan *plan)
{
    if (!plan)
        return;
    for (int f = 0; plan->stage && f < plan->nfields; ++f)
        gts_device_free(plan->stage[f].device, plan->stage[f].block, plan->stage[f].size);
    for (int f = 0; f < plan->nfields; ++f)
        gts_storage_release(&plan->fields[f]);
    free(plan->stage);
    free(plan->fields);
    free(plan->neighbors);
    free(plan->send);
    free(plan->recv);
    free(plan->pool);
    free(plan);
}

/* The neighbours with a message either way; their regions are laid out
 * afterwards, when their number is known. Returns the count. */
static int list_neighbors(const gts_partition *p, int rank, int nfields, const gts_storage *fields,
                          int (*dims)[GTS_PARTITION_MAX_NDIM], gts_halo_neighbor *out)
{
    int noffsets = 1, count = 0;
    for (int d = 0; d < p->ndim; ++d)
        noffsets *= 3;
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    region scratch = {.shape = shape, .packed_strides = strides};
    for (int index = 0; index < noffsets; ++index) {
        gts_halo_neighbor n = {.rank = GTS_NO_RANK};
        int opposite[GTS_PARTITION_MAX_NDIM];
        bool center = true;
        for (int d = p->ndim - 1, rest = index; d >= 0; --d, rest /= 3) {
            n.offset[d] = rest % 3 - 1;
            opposite[d] = -n.offset[d];
            center = center && n.offset[d] == 0;
        }
        if (center || (n.rank = gts_partition_neighbor(p, rank, n.offset)) == GTS_NO_RANK)
            continue;
        for (int f = 0; f < nfields; ++f) {
            region_init(&scratch, p, &fields[f], dims[f], n.offset, true);
            n.send_bytes += scratch.bytes; /* bounded by the fields' sizes */
            region_init(&scratch, p, &fields[f], dims[f], n.offset, false);
            n.recv_bytes += scratch.bytes;
        }
        if (n.send_bytes == 0 && n.recv_bytes == 0)
            continue;
        n.send_tag = index;
        n.recv_tag = offset_index(p, opposite);
        out[count++] = n;
    }
    return count;
}

static int allocate(gts_halo_plan *plan, int nfields, const gts_storage *fields, gts_error *err)
{
    size_t nregions = (size_t)plan->nneighbors * (size_t)nfields;
    size_t per_neighbor = 0;
    for (int f = 0; f < nfields; ++f)
        per_neighbor += (size_t)fields[f].ndim;
    size_t pool = per_neighbor * (size_t)plan->nneighbors * 4; /* send and recv, 2 arrays each */
    plan->fields = calloc((size_t)nfields, sizeof *plan->fields);
    plan->stage = calloc((size_t)nfields, sizeof *plan->stage);
    plan->send = calloc(nregions ? nregions : 1, sizeof *plan->send);
    plan->recv = calloc(nregions ? nregions : 1, sizeof *plan->recv);
    plan->pool = calloc(pool ? pool : 1, sizeof *plan->pool);
    if (!plan->fields || !plan->stage || !plan->send || !plan->recv || !plan->pool)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan of %d fields",
                             nfields);
    return 0;
}

static void layout_regions(gts_halo_plan *plan, const gts_partition *p, const gts_storage *fields,
                           int (*dims)[GTS_PARTITION_MAX_NDIM])
{
    int64_t *next = plan->pool;
    for (int i = 0; i < plan->nneighbors; ++i)
        for (int f = 0; f < plan->nfields; ++f) {
            region *both[2] = {&plan->send[i * plan->nfields + f],
                               &plan->recv[i * plan->nfields + f]};
            for (int k = 0; k < 2; ++k) {
                both[k]->shape = next;
                both[k]->packed_strides = next + fields[f].ndim;
                next += 2 * fields[f].ndim;
                region_init(both[k], p, &fields[f], dims[f], plan->neighbors[i].offset, k == 0);
            }
        }
}

/* Device memory for the fields without a host side: each field's largest
 * region, made once. */
static int allocate_staging(gts_halo_plan *plan, gts_error *err)
{
    for (int f = 0; f < plan->nfields; ++f) {
        const gts_buffer *buffer = plan->fields[f].buffer;
        if (gts_buffer_device(buffer)->host_accessible || gts_buffer_mirrored(buffer))
            continue; /* packed on the host (a mirrored buffer's host side, synced) */
        int64_t size = 0;
        for (int i = 0; i < plan->nneighbors; ++i) {
            int64_t send = plan->send[i * plan->nfields + f].bytes;
            int64_t recv = plan->recv[i * plan->nfields + f].bytes;
            size = send > size ? send : size;
            size = recv > size ? recv : size;
        }
        staging *st = &plan->stage[f];
        int rc = gts_device_alloc(gts_buffer_device(buffer), size, 0, &st->block, err);
        if (rc)
            return rc;
        st->device = gts_buffer_device(buffer);
        st->size = size;
    }
    return 0;
}

int gts_halo_plan_create(const gts_partition *partition, int rank, int nfields,
                         const gts_storage *fields, gts_halo_plan **out, gts_error *err)
{
    const gts_partition *p = partition;
    if (rank < 0 || rank >= p->nranks)
        return gts_error_set(err, GTS_EINVAL, "rank: %d is outside [0, %d)", rank, p->nranks);
    if (nfields < 1)
        return gts_error_set(err, GTS_EINVAL, "nfields: %d is not positive", nfields);
    int64_t start[GTS_PARTITION_MAX_NDIM], subdomain[GTS_PARTITION_MAX_NDIM];
    gts_partition_subdomain(p, rank, start, subdomain);
    int (*dims)[GTS_PARTITION_MAX_NDIM] = calloc((size_t)nfields, sizeof *dims);
    if (!dims)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan of %d fields",
                             nfields);
    int rc = 0;
    for (int f = 0; f < nfields && !rc; ++f)
        if (!(rc = find_split_dims(p, &fields[f], f, dims[f], err)))
            rc = check_field(p, subdomain, &fields[f], f, dims[f], err);
    gts_halo_plan *plan = rc ? NULL : calloc(1, sizeof *plan);
    gts_halo_neighbor neighbors[MAX_OFFSETS];
    if (!rc && !plan)
        rc = gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan");
    if (!rc) {
        plan->nneighbors = list_neighbors(p, rank, nfields, fields, dims, neighbors);
        plan->neighbors = calloc((size_t)plan->nneighbors + 1, sizeof *plan->neighbors);
        rc = plan->neighbors ? allocate(plan, nfields, fields, err)
                             : gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan");
    }
    if (rc) {
        free(dims);
        gts_halo_plan_destroy(plan);
        return rc;
    }
    memcpy(plan->neighbors, neighbors, (size_t)plan->nneighbors * sizeof *neighbors);
    plan->nfields = nfields;
    for (int f = 0; f < nfields; ++f)
        gts_storage_view(&fields[f], &plan->fields[f]);
    layout_regions(plan, p, fields, dims);
    if ((rc = allocate_staging(plan, err))) {
        free(dims);
        gts_halo_plan_destroy(plan);
        return rc;
    }
    for (int i = 0; i < plan->nneighbors; ++i) {
        plan->send_bytes += plan->neighbors[i].send_bytes;
        plan->recv_bytes += plan->neighbors[i].recv_bytes;
    }
    plan->signature = signature(p, nfields, fields, dims);
    free(dims);
    *out = plan;
    return 0;
}

/* ---- queries -------------------------------------------------------------- */

int gts_halo_plan_neighbor_count(const gts_halo_plan *plan)
{
    return plan->nneighbors;
}

const gts_halo_neighbor *gts_halo_plan_neighbor(const gts_halo_plan *plan, int index)
{
    return index >= 0 && index < plan->nneighbors ? &plan->neighbors[index] : NULL;
}

int64_t gts_halo_plan_send_bytes(const gts_halo_plan *plan)
{
    return plan->send_bytes;
}

int64_t gts_halo_plan_recv_bytes(const gts_halo_plan *plan)
{
    return plan->recv_bytes;
}

uint64_t gts_halo_plan_signature(const gts_halo_plan *plan)
{
    return plan->signature;
}

/* ---- packing -------------------------------------------------------------- */

static int check_message(const gts_halo_plan *plan, int index, const void *buffer, int64_t nbytes,
                         bool send, gts_error *err)
{
    if (index < 0 || index >= plan->nneighbors)
        return gts_error_set(err, GTS_EINVAL, "index: %d is outside [0, %d)", index,
                             plan->nneighbors);
    int64_t expected = send ? plan->neighbors[index].send_bytes
                            : plan->neighbors[index].recv_bytes;
    if (nbytes != expected)
        return gts_error_set(err, GTS_EINVAL, "nbytes: %lld, but neighbour %d's message has %lld",
                             (long long)nbytes, index, (long long)expected);
    if (!buffer && nbytes > 0)
        return gts_error_set(err, GTS_EINVAL, "buffer: NULL");
    return 0;
}

/* One field's region packed on its device into the staging block, then
 * copied to the message on the host; or the reverse. Completed on return. */
static int transfer_on_device(const gts_storage *g, const staging *st, const region *r,
                              char *message, bool send, gts_error *err)
{
    char *field = (char *)gts_buffer_data(g->buffer) + g->offset + r->offset;
    int64_t itemsize = g->dtype.itemsize;
    int rc;
    if (send) {
        rc = gts_device_copy(st->device, st->block, r->packed_strides, field, g->strides,
                             g->ndim, r->shape, itemsize, NULL, err);
        if (!rc)
            rc = gts_device_copy_to_host(st->device, message, st->block, r->bytes, NULL, err);
    } else {
        rc = gts_device_copy_to_device(st->device, st->block, message, r->bytes, NULL, err);
        if (!rc)
            rc = gts_device_copy(st->device, field, g->strides, st->block, r->packed_strides,
                                 g->ndim, r->shape, itemsize, NULL, err);
    }
    return rc ? rc : gts_device_synchronize(st->device, NULL, err);
}

/* Copies between the fields and the message: pack (`send`) or unpack. */
static int transfer(const gts_halo_plan *plan, int index, char *message, bool send,
                    gts_error *err)
{
    const region *regions = (send ? plan->send : plan->recv) + (size_t)index * plan->nfields;
    for (int f = 0; f < plan->nfields; ++f) {
        const gts_storage *g = &plan->fields[f];
        const region *r = &regions[f];
        if (r->bytes == 0)
            continue;
        int rc;
        if (plan->stage[f].block) {
            rc = transfer_on_device(g, &plan->stage[f], r, message, send, err);
            if (rc)
                return rc;
            message += r->bytes;
            continue;
        }
        /* a mirrored buffer: read its host side current, or mark it written */
        rc = send ? gts_buffer_sync(g->buffer, GTS_SIDE_HOST, false, NULL, err)
                  : gts_buffer_prepare_write(g->buffer, GTS_SIDE_HOST, NULL, err);
        if (!rc) {
            char *field = (char *)gts_storage_data(g) + r->offset;
            rc = send ? gts_copy(message, r->packed_strides, field, g->strides, g->ndim,
                                 r->shape, g->dtype.itemsize, err)
                      : gts_copy(field, g->strides, message, r->packed_strides, g->ndim,
                                 r->shape, g->dtype.itemsize, err);
        }
        if (rc)
            return rc;
        message += r->bytes;
    }
    return 0;
}

int gts_halo_plan_pack(const gts_halo_plan *plan, int index, void *buffer, int64_t nbytes,
                       gts_error *err)
{
    int rc = check_message(plan, index, buffer, nbytes, true, err);
    return rc ? rc : transfer(plan, index, buffer, true, err);
}

int gts_halo_plan_unpack(const gts_halo_plan *plan, int index, const void *buffer,
                         int64_t nbytes, gts_error *err)
{
    int rc = check_message(plan, index, buffer, nbytes, false, err);
    /* transfer only reads the message when unpacking */
    return rc ? rc : transfer(plan, index, (char *)(uintptr_t)buffer, false, err);
}
