/* The regions of a halo plan (halo_plan.c), for the code that moves them
 * (halo_transfer.c): which elements of which field one message carries. */
#ifndef GTSTORE_HALO_REGION_H
#define GTSTORE_HALO_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/halo_plan.h"

/* One field's part of one message. */
typedef struct gts__halo_region {
    int64_t offset; /* bytes from the field's element 0 to the region's first */
    int64_t bytes;  /* 0: nothing of this field travels */
    int64_t *shape; /* the field's ndim entries, in the plan's pool */
    int64_t *packed_strides;
} gts__halo_region;

/* Field `field`'s part of neighbour `neighbor`'s send (or receive)
 * message; the arguments are in range. */
const gts__halo_region *gts__halo_plan_region(const gts_halo_plan *plan, bool send,
                                              int neighbor, int field);
int gts__halo_plan_nfields(const gts_halo_plan *plan);
const gts_storage *gts__halo_plan_field(const gts_halo_plan *plan, int field);

/* The device of a field in device memory only; NULL for a field with a
 * host side (host memory, or a mirrored buffer's host side, synced). */
const gts_device_ops *gts__halo_field_gpu(const gts_storage *field);

#endif
