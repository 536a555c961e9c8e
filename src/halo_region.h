/* The regions of a halo plan (halo_plan.c), for the code that moves them
 * (halo_transfer.c): which elements of which field one message carries. */
#ifndef GTSTORE_HALO_REGION_H
#define GTSTORE_HALO_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/halo_plan.h"

/* One field's part of one message. A message is its regions one after the
 * other; a Cartesian plan has one per field, in field order, a cubed-sphere
 * plan one per field per piece (gtstore/cube_halo.h). */
typedef struct gts__halo_region {
    int field;      /* the plan's field whose memory it is */
    bool negate;    /* sent values travel negated (a vector component turned) */
    int64_t offset; /* bytes from the field's element 0 to the region's first */
    int64_t bytes;  /* 0: nothing of this field travels */
    int64_t *shape; /* the field's ndim entries, in the plan's pool */
    int64_t *packed_strides; /* any sign: a turned region is packed in the receiver's order */
    int64_t packed_offset;   /* bytes from the region's place in the message to where the
                                field's first element of it goes */
} gts__halo_region;

/* The number of regions of neighbour `neighbor`'s send (or receive)
 * message, and region k of them; the arguments are in range. */
int gts__halo_plan_region_count(const gts_halo_plan *plan, bool send, int neighbor);
const gts__halo_region *gts__halo_plan_region(const gts_halo_plan *plan, bool send,
                                              int neighbor, int k);
int gts__halo_plan_nfields(const gts_halo_plan *plan);

/* Making a plan of another decomposition (cube_halo_plan.c): a plan for
 * `nfields` fields (checked by the caller) and the neighbours, with
 * nsend[i] and nrecv[i] regions for neighbour i, their shape and stride
 * arrays ready for GTS_MAX_NDIM entries; the caller fills every region
 * (gts__halo_plan_region_at), then completes the plan: the neighbours'
 * byte counts, the totals, the staging blocks and the signature. On
 * failure of either, the caller destroys the plan. */
int gts__halo_plan_alloc(int rank, int nfields, const gts_storage *fields, int nneighbors,
                         const gts_halo_neighbor *neighbors, const int *nsend, const int *nrecv,
                         gts_halo_plan **out, gts_error *err);
gts__halo_region *gts__halo_plan_region_at(gts_halo_plan *plan, bool send, int neighbor, int k);
int gts__halo_plan_complete(gts_halo_plan *plan, uint64_t signature, gts_error *err);

/* The signature's hash (FNV-1a over the value's bytes), and its part for
 * the fields: dtypes, layouts, halos, and the extents of the dimensions
 * not in `split` (a field's storage dimensions a decomposition splits,
 * whose extents differ by rank; split[f * GTS_MAX_NDIM + s]). */
uint64_t gts__halo_hash(uint64_t h, int64_t value);
uint64_t gts__halo_fields_hash(uint64_t h, int nfields, const gts_storage *fields,
                               const bool *split);

/* Negates `bytes` of packed values of `dtype` in host memory (a vector
 * component turned by a cube edge): the sign bit of floats (complex: of
 * both parts), two's complement of integers. */
void gts__halo_negate(void *data, int64_t bytes, gts_dtype dtype);
/* The same where the packed values are: host memory (`gpu` NULL), or the
 * memory of `gpu`, by its kernel (gts_device_negate) queued on `stream`
 * (NULL: completed on return). */
int gts__halo_negate_on(const gts_device_ops *gpu, void *data, int64_t bytes, gts_dtype dtype,
                        gts_stream stream, gts_error *err);
const gts_storage *gts__halo_plan_field(const gts_halo_plan *plan, int field);

/* The device of a field in device memory only; NULL for a field with a
 * host side (host memory, or a mirrored buffer's host side, synced). */
const gts_device_ops *gts__halo_field_gpu(const gts_storage *field);

#endif
