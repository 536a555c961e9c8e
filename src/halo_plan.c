/* Halo exchange plans (gtstore/halo_plan.h): the regions each neighbour's
 * message carries, computed once; packing and unpacking are strided copies
 * between the fields and a caller's contiguous buffer. */
#include "gtstore/halo_plan.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/access.h"
#include "gtstore/device.h"
#include "gtstore/kernels.h"
#include "gtstore/partition_halo.h"
#include "gtstore/sync.h"
#include "halo_region.h"
#include "storage_private.h"

typedef gts__halo_region region;

/* Where a field's region is packed before its bytes cross between host
 * and device memory: a field in device memory only is packed on its device
 * for messages in host memory; a field with a host side, in a plan that
 * also has fields in device memory only, is packed on the host for
 * messages in device memory (gtstore/halo_messages.h). Each block holds the
 * field's largest region and is made once, with the plan. */
typedef struct staging {
    const gts_device_ops *device; /* where the block is; NULL: no staging */
    void *block;
    int64_t size;
} staging;

struct gts_halo_plan {
    int rank;
    int nfields;
    gts_storage *fields; /* views: one buffer reference each */
    staging *stage;      /* per field */
    int nneighbors;
    gts_halo_neighbor *neighbors;
    region *send, *recv; /* neighbour i's: [first[i], first[i + 1]) */
    int *send_first, *recv_first;
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
        if (!gts_partition_halo_fits(p, d, h))
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
    r->packed_offset = 0;
    r->negate = false;
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

uint64_t gts__halo_hash(uint64_t h, int64_t value)
{
    for (int i = 0; i < 8; ++i) { /* FNV-1a, byte by byte */
        h ^= (uint64_t)value >> (8 * i) & 0xff;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint64_t gts__halo_fields_hash(uint64_t h, int nfields, const gts_storage *fields,
                               const bool *split)
{
    h = gts__halo_hash(h, nfields);
    for (int f = 0; f < nfields; ++f) {
        const gts_storage *g = &fields[f];
        int layout[GTS_MAX_NDIM];
        gts_storage_layout(g, layout);
        h = gts__halo_hash(h, g->dtype.kind);
        h = gts__halo_hash(h, g->dtype.itemsize);
        h = gts__halo_hash(h, g->ndim);
        for (int s = 0; s < g->ndim; ++s) {
            h = gts__halo_hash(h, g->dims[s]);
            h = gts__halo_hash(h, layout[s]);
            h = gts__halo_hash(h, g->halo[s].lower);
            h = gts__halo_hash(h, g->halo[s].upper);
            /* split extents differ by rank */
            h = gts__halo_hash(h, split[f * GTS_MAX_NDIM + s] ? -1 : g->shape[s]);
        }
    }
    return h;
}

static uint64_t signature(const gts_partition *p, int nfields, const gts_storage *fields,
                          int (*dims)[GTS_PARTITION_MAX_NDIM], bool *split)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = gts__halo_hash(h, p->ndim);
    for (int d = 0; d < p->ndim; ++d) {
        h = gts__halo_hash(h, p->labels[d]);
        h = gts__halo_hash(h, p->global_shape[d]);
        h = gts__halo_hash(h, p->nprocs[d]);
        h = gts__halo_hash(h, p->periodic[d]);
    }
    for (int f = 0; f < nfields; ++f)
        for (int d = 0; d < p->ndim; ++d)
            split[f * GTS_MAX_NDIM + dims[f][d]] = true;
    return gts__halo_fields_hash(h, nfields, fields, split);
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
    free(plan->send_first);
    free(plan->recv_first);
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

/* Neighbour i's regions start at first[i]: counts[i] of them. */
static int *prefix_sums(int n, const int *counts)
{
    int *first = calloc((size_t)n + 1, sizeof *first);
    for (int i = 0; first && i < n; ++i) {
        if (counts[i] > INT_MAX - first[i]) {
            free(first);
            return NULL;
        }
        first[i + 1] = first[i] + counts[i];
    }
    return first;
}

/* The region arrays of one direction, their shapes and strides in the
 * pool from `*next`. */
static region *make_regions(int count, int64_t **next)
{
    region *regions = calloc(count ? (size_t)count : 1, sizeof *regions);
    for (int k = 0; regions && k < count; ++k) {
        regions[k].shape = *next;
        regions[k].packed_strides = *next + GTS_MAX_NDIM;
        *next += 2 * GTS_MAX_NDIM;
    }
    return regions;
}

int gts__halo_plan_alloc(int rank, int nfields, const gts_storage *fields, int nneighbors,
                         const gts_halo_neighbor *neighbors, const int *nsend, const int *nrecv,
                         gts_halo_plan **out, gts_error *err)
{
    gts_halo_plan *plan = calloc(1, sizeof *plan);
    *out = plan;
    if (!plan)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan");
    plan->rank = rank;
    plan->nneighbors = nneighbors;
    plan->neighbors = calloc((size_t)nneighbors + 1, sizeof *plan->neighbors);
    plan->fields = calloc((size_t)nfields, sizeof *plan->fields);
    plan->stage = calloc((size_t)nfields, sizeof *plan->stage);
    plan->send_first = prefix_sums(nneighbors, nsend);
    plan->recv_first = prefix_sums(nneighbors, nrecv);
    if (!plan->neighbors || !plan->fields || !plan->stage || !plan->send_first ||
        !plan->recv_first)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan of %d fields",
                             nfields);
    int nsends = plan->send_first[nneighbors], nrecvs = plan->recv_first[nneighbors];
    size_t pool = ((size_t)nsends + (size_t)nrecvs) * 2 * GTS_MAX_NDIM;
    plan->pool = calloc(pool ? pool : 1, sizeof *plan->pool);
    int64_t *next = plan->pool;
    if (plan->pool) {
        plan->send = make_regions(nsends, &next);
        plan->recv = make_regions(nrecvs, &next);
    }
    if (!plan->pool || !plan->send || !plan->recv)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan of %d fields",
                             nfields);
    if (nneighbors)
        memcpy(plan->neighbors, neighbors, (size_t)nneighbors * sizeof *neighbors);
    plan->nfields = nfields;
    for (int f = 0; f < nfields; ++f)
        gts_storage_view(&fields[f], &plan->fields[f]);
    return 0;
}

gts__halo_region *gts__halo_plan_region_at(gts_halo_plan *plan, bool send, int neighbor, int k)
{
    const int *first = send ? plan->send_first : plan->recv_first;
    return (send ? plan->send : plan->recv) + first[neighbor] + k;
}

/* Fills the Cartesian plan's regions: one per field, in field order. */
static void layout_regions(gts_halo_plan *plan, const gts_partition *p, const gts_storage *fields,
                           int (*dims)[GTS_PARTITION_MAX_NDIM])
{
    for (int i = 0; i < plan->nneighbors; ++i)
        for (int f = 0; f < plan->nfields; ++f)
            for (int k = 0; k < 2; ++k) {
                region *r = gts__halo_plan_region_at(plan, k == 0, i, f);
                region_init(r, p, &fields[f], dims[f], plan->neighbors[i].offset, k == 0);
                r->field = f;
            }
}

const gts_device_ops *gts__halo_field_gpu(const gts_storage *field)
{
    const gts_buffer *buffer = field->buffer;
    if (gts_buffer_device(buffer)->host_accessible || gts_buffer_mirrored(buffer))
        return NULL;
    return gts_buffer_device(buffer);
}

static int64_t largest_region(const gts_halo_plan *plan, int f)
{
    int64_t size = 0;
    for (int k = 0; k < plan->send_first[plan->nneighbors]; ++k)
        if (plan->send[k].field == f && plan->send[k].bytes > size)
            size = plan->send[k].bytes;
    for (int k = 0; k < plan->recv_first[plan->nneighbors]; ++k)
        if (plan->recv[k].field == f && plan->recv[k].bytes > size)
            size = plan->recv[k].bytes;
    return size;
}

/* The staging blocks (see `staging`). */
static int allocate_staging(gts_halo_plan *plan, gts_error *err)
{
    bool any_on_device = false;
    for (int f = 0; f < plan->nfields; ++f)
        any_on_device = any_on_device || gts__halo_field_gpu(&plan->fields[f]);
    if (!any_on_device)
        return 0; /* messages in host memory only: every field packs straight into them */
    for (int f = 0; f < plan->nfields; ++f) {
        const gts_device_ops *gpu = gts__halo_field_gpu(&plan->fields[f]);
        staging *st = &plan->stage[f];
        st->size = largest_region(plan, f);
        int rc = gts_device_alloc(gpu ? gpu : gts_device_host(), st->size, 0, &st->block, err);
        if (rc)
            return rc;
        st->device = gpu ? gpu : gts_device_host();
    }
    return 0;
}

int gts_halo_plan_create(const gts_partition *partition, int rank, int nfields,
                         const gts_storage *fields, gts_halo_plan **out, gts_error *err)
{
    const gts_partition *p = partition;
    if (!fields || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", fields ? "out" : "fields");
    int rc = gts_partition_check(p, err);
    if (rc)
        return rc;
    if (rank < 0 || rank >= p->nranks)
        return gts_error_set(err, GTS_EINVAL, "rank: %d is outside [0, %d)", rank, p->nranks);
    if (nfields < 1)
        return gts_error_set(err, GTS_EINVAL, "nfields: %d is not positive", nfields);
    for (int f = 0; f < nfields; ++f) { /* public value structs: checked before use */
        char who[32];
        snprintf(who, sizeof who, "fields[%d]", f);
        if ((rc = gts__storage_check(&fields[f], who, true, err)))
            return rc;
    }
    int64_t start[GTS_PARTITION_MAX_NDIM], subdomain[GTS_PARTITION_MAX_NDIM];
    gts_partition_subdomain(p, rank, start, subdomain);
    int (*dims)[GTS_PARTITION_MAX_NDIM] = calloc((size_t)nfields, sizeof *dims);
    if (!dims)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan of %d fields",
                             nfields);
    for (int f = 0; f < nfields && !rc; ++f)
        if (!(rc = find_split_dims(p, &fields[f], f, dims[f], err)))
            rc = check_field(p, subdomain, &fields[f], f, dims[f], err);
    gts_halo_neighbor neighbors[MAX_OFFSETS];
    int nregions[MAX_OFFSETS], nneighbors = 0;
    gts_halo_plan *plan = NULL;
    if (!rc) {
        nneighbors = list_neighbors(p, rank, nfields, fields, dims, neighbors);
        for (int i = 0; i < nneighbors; ++i)
            nregions[i] = nfields;
        rc = gts__halo_plan_alloc(rank, nfields, fields, nneighbors, neighbors, nregions,
                                  nregions, &plan, err);
    }
    bool *split = rc ? NULL : calloc((size_t)nfields * GTS_MAX_NDIM, sizeof *split);
    if (!rc && !split)
        rc = gts_error_set(err, GTS_ENOMEM, "out of memory for a halo plan");
    if (!rc) {
        layout_regions(plan, p, fields, dims);
        rc = gts__halo_plan_complete(plan, signature(p, nfields, fields, dims, split), err);
    }
    free(split);
    free(dims);
    if (rc) {
        gts_halo_plan_destroy(plan);
        return rc;
    }
    *out = plan;
    return 0;
}

int gts__halo_plan_complete(gts_halo_plan *plan, uint64_t signature, gts_error *err)
{
    plan->send_bytes = plan->recv_bytes = 0;
    for (int i = 0; i < plan->nneighbors; ++i) {
        gts_halo_neighbor *n = &plan->neighbors[i];
        n->send_bytes = n->recv_bytes = 0;
        for (int k = plan->send_first[i]; k < plan->send_first[i + 1]; ++k)
            n->send_bytes += plan->send[k].bytes; /* bounded by the fields' sizes */
        for (int k = plan->recv_first[i]; k < plan->recv_first[i + 1]; ++k)
            n->recv_bytes += plan->recv[k].bytes;
        plan->send_bytes += n->send_bytes;
        plan->recv_bytes += n->recv_bytes;
    }
    plan->signature = signature;
    return allocate_staging(plan, err);
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

int gts_halo_plan_rank(const gts_halo_plan *plan)
{
    return plan->rank;
}

int gts__halo_plan_region_count(const gts_halo_plan *plan, bool send, int neighbor)
{
    const int *first = send ? plan->send_first : plan->recv_first;
    return first[neighbor + 1] - first[neighbor];
}

const gts__halo_region *gts__halo_plan_region(const gts_halo_plan *plan, bool send,
                                              int neighbor, int k)
{
    return gts__halo_plan_region_at((gts_halo_plan *)(uintptr_t)plan, send, neighbor, k);
}

int gts__halo_plan_nfields(const gts_halo_plan *plan)
{
    return plan->nfields;
}

const gts_storage *gts__halo_plan_field(const gts_halo_plan *plan, int field)
{
    return &plan->fields[field];
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

/* Between a field with a host side and host memory at `packed`. */
static int copy_on_host(const gts_storage *g, const region *r, char *packed, bool send,
                        gts_error *err)
{
    /* read its host side current, or write it (a write in flight,
     * gtstore/access.h) */
    void *data;
    gts_access access = send ? GTS_ACCESS_READ : GTS_ACCESS_WRITE_HELD;
    int rc = gts_storage_access(g, GTS_SIDE_HOST, access, NULL, &data, err);
    if (rc)
        return rc;
    char *field = (char *)data + r->offset;
    packed += r->packed_offset;
    if (send)
        rc = gts_copy(packed, r->packed_strides, field, g->strides, g->ndim, r->shape,
                      g->dtype.itemsize, err);
    else
        rc = gts_copy(field, g->strides, packed, r->packed_strides, g->ndim, r->shape,
                      g->dtype.itemsize, err);
    gts_storage_access_end(g, GTS_SIDE_HOST, access, NULL, NULL);
    return rc;
}

/* Between a field in device memory only and memory of its device at
 * `packed`: the device's strided copy on the default stream, after the
 * device work queued on the field (gtstore/access.h: the host waits for
 * it; completed on return). */
static int copy_on_device(const gts_storage *g, const gts_device_ops *gpu, const region *r,
                          char *packed, bool send, gts_error *err)
{
    void *data;
    gts_access access = send ? GTS_ACCESS_READ : GTS_ACCESS_WRITE;
    int rc = gts_storage_access(g, GTS_SIDE_DEVICE, access, NULL, &data, err);
    if (rc)
        return rc;
    char *field = (char *)data + r->offset;
    packed += r->packed_offset;
    rc = send ? gts_device_copy(gpu, packed, r->packed_strides, field, g->strides, g->ndim,
                                r->shape, g->dtype.itemsize, NULL, err)
              : gts_device_copy(gpu, field, g->strides, packed, r->packed_strides, g->ndim,
                                r->shape, g->dtype.itemsize, NULL, err);
    gts_storage_access_end(g, GTS_SIDE_DEVICE, access, NULL, NULL);
    return rc;
}

/* Contiguous bytes between memory of `gpu` and host memory. */
static int cross(const gts_device_ops *gpu, char *device_memory, char *host_memory,
                 int64_t bytes, bool to_host, gts_error *err)
{
    return to_host ? gts_device_copy_to_host(gpu, host_memory, device_memory, bytes, NULL, err)
                   : gts_device_copy_to_device(gpu, device_memory, host_memory, bytes, NULL, err);
}

/* One field's part of a message in memory of `message_gpu` (NULL: host
 * memory): packed straight into it where the field's memory is on the same
 * side, else packed on the field's side into its staging block and the
 * bytes copied across (the reverse for unpacking). */
static int transfer_field(const gts_halo_plan *plan, const region *r,
                          const gts_device_ops *message_gpu, char *message, bool send,
                          gts_error *err)
{
    int f = r->field;
    const gts_storage *g = &plan->fields[f];
    const gts_device_ops *gpu = gts__halo_field_gpu(g);
    if (!gpu && !message_gpu)
        return copy_on_host(g, r, message, send, err);
    if (gpu && message_gpu) {
        if (gpu != message_gpu) /* checked by the callers; kept for memory safety */
            return gts_error_set(err, GTS_EINVAL,
                                 "device: messages in %s memory, but fields[%d] is on %s",
                                 message_gpu->name, f, gpu->name);
        int rc = copy_on_device(g, gpu, r, message, send, err);
        return rc ? rc : gts_device_synchronize(gpu, NULL, err);
    }
    const staging *st = &plan->stage[f];
    const gts_device_ops *across = gpu ? gpu : message_gpu;
    char *device_memory = gpu ? st->block : message, *host_memory = gpu ? message : st->block;
    bool to_host = gpu ? send : !send;
    int rc = 0;
    if (send)
        rc = gpu ? copy_on_device(g, gpu, r, st->block, true, err)
                 : copy_on_host(g, r, st->block, true, err);
    if (!rc)
        rc = cross(across, device_memory, host_memory, r->bytes, to_host, err);
    if (!rc && !send)
        rc = gpu ? copy_on_device(g, gpu, r, st->block, false, err)
                 : copy_on_host(g, r, st->block, false, err);
    return rc ? rc : gts_device_synchronize(across, NULL, err); /* completed on return */
}

int gts__halo_negate_on(const gts_device_ops *gpu, void *data, int64_t bytes, gts_dtype dtype,
                        gts_stream stream, gts_error *err)
{
    if (!gpu) {
        gts__halo_negate(data, bytes, dtype);
        return GTS_OK;
    }
    return gts_device_negate(gpu, data, bytes, dtype, stream, err);
}

/* Copies between the fields and the message: pack (`send`) or unpack. */
static int transfer(const gts_halo_plan *plan, int index, const gts_device_ops *message_gpu,
                    char *message, bool send, gts_error *err)
{
    int count = gts__halo_plan_region_count(plan, send, index);
    for (int k = 0; k < count; ++k) {
        const region *r = gts__halo_plan_region(plan, send, index, k);
        if (r->bytes == 0)
            continue;
        int rc = transfer_field(plan, r, message_gpu, message, send, err);
        if (!rc && send && r->negate)
            rc = gts__halo_negate_on(message_gpu, message, r->bytes,
                                     plan->fields[r->field].dtype, NULL, err);
        if (rc)
            return rc;
        message += r->bytes;
    }
    return 0;
}

/* The GPU of a message in memory of `device`: NULL for host memory. Device
 * memory must be where the plan's fields in device memory only are. */
static int find_message_gpu(const gts_halo_plan *plan, const gts_device_ops *device,
                       const gts_device_ops **out, gts_error *err)
{
    *out = NULL;
    if (!device || device->host_accessible)
        return 0;
    const gts_device_ops *gpus[2];
    int n = gts_halo_plan_devices(plan, gpus, 2);
    if (n != 1 || gpus[0] != device)
        return gts_error_set(err, GTS_EINVAL,
                             "device: messages in %s memory need every field in device memory "
                             "only on that device (the plan has %d such device%s%s%s)",
                             device->name, n, n == 1 ? "" : "s", n == 1 ? ": " : "",
                             n == 1 ? gpus[0]->name : "");
    *out = device;
    return 0;
}

int gts_halo_plan_devices(const gts_halo_plan *plan, const gts_device_ops **out, int capacity)
{
    int count = 0;
    for (int f = 0; f < plan->nfields; ++f) {
        const gts_device_ops *gpu = gts__halo_field_gpu(&plan->fields[f]);
        bool seen = !gpu;
        for (int g = 0; !seen && g < count && g < capacity; ++g)
            seen = out[g] == gpu;
        if (seen)
            continue;
        if (count < capacity)
            out[count] = gpu;
        ++count;
    }
    return count;
}

int gts_halo_plan_pack_on(const gts_halo_plan *plan, int index, const gts_device_ops *device,
                          void *buffer, int64_t nbytes, gts_error *err)
{
    const gts_device_ops *gpu = NULL;
    int rc = check_message(plan, index, buffer, nbytes, true, err);
    if (!rc)
        rc = find_message_gpu(plan, device, &gpu, err);
    return rc ? rc : transfer(plan, index, gpu, buffer, true, err);
}

int gts_halo_plan_unpack_on(const gts_halo_plan *plan, int index, const gts_device_ops *device,
                            const void *buffer, int64_t nbytes, gts_error *err)
{
    const gts_device_ops *gpu = NULL;
    int rc = check_message(plan, index, buffer, nbytes, false, err);
    if (!rc)
        rc = find_message_gpu(plan, device, &gpu, err);
    /* transfer only reads the message when unpacking */
    return rc ? rc : transfer(plan, index, gpu, (char *)(uintptr_t)buffer, false, err);
}

int gts_halo_plan_pack(const gts_halo_plan *plan, int index, void *buffer, int64_t nbytes,
                       gts_error *err)
{
    return gts_halo_plan_pack_on(plan, index, NULL, buffer, nbytes, err);
}

int gts_halo_plan_unpack(const gts_halo_plan *plan, int index, const void *buffer,
                         int64_t nbytes, gts_error *err)
{
    return gts_halo_plan_unpack_on(plan, index, NULL, buffer, nbytes, err);
}
