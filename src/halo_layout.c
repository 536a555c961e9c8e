/* Where a halo plan's messages sit (src/halo_layout.h, and
 * gts_halo_plan_message_layout of gtstore/halo_messages.h). */
#include "halo_layout.h"

#include <stdlib.h>
#include <string.h>

#include "gtstore/halo_messages.h"
#include "halo_region.h"

/* Whether neighbour i's send regions and neighbour j's receive regions
 * have the same shapes, field by field. */
static bool same_regions(const gts_halo_plan *plan, int i, int j)
{
    int count = gts__halo_plan_region_count(plan, true, i);
    if (count != gts__halo_plan_region_count(plan, false, j))
        return false;
    for (int k = 0; k < count; ++k) {
        const gts__halo_region *a = gts__halo_plan_region(plan, true, i, k);
        const gts__halo_region *b = gts__halo_plan_region(plan, false, j, k);
        int ndim = gts__halo_plan_field(plan, a->field)->ndim;
        if (a->field != b->field || a->negate || a->bytes != b->bytes ||
            a->packed_offset != b->packed_offset ||
            memcmp(a->shape, b->shape, (size_t)ndim * sizeof *a->shape) != 0 ||
            memcmp(a->packed_strides, b->packed_strides, (size_t)ndim * sizeof *a->shape) != 0)
            return false; /* a turned region is no straight copy */
    }
    return true;
}

void gts__halo_pair_local(const gts_halo_plan *plan, int *pair)
{
    int rank = gts_halo_plan_rank(plan), n = gts_halo_plan_neighbor_count(plan);
    bool all = true;
    for (int i = 0; i < n; ++i)
        pair[i] = -1;
    for (int i = 0; i < n; ++i) {
        const gts_halo_neighbor *a = gts_halo_plan_neighbor(plan, i);
        if (a->rank != rank || a->send_bytes == 0)
            continue;
        for (int j = 0; j < n && pair[i] < 0; ++j) {
            const gts_halo_neighbor *b = gts_halo_plan_neighbor(plan, j);
            if (b->rank == rank && b->recv_tag == a->send_tag && same_regions(plan, i, j))
                pair[i] = j;
        }
        all = all && pair[i] >= 0;
    }
    for (int j = 0; j < n && all; ++j) { /* every receive from this rank is a target */
        const gts_halo_neighbor *b = gts_halo_plan_neighbor(plan, j);
        bool target = b->rank != rank || b->recv_bytes == 0;
        for (int i = 0; i < n && !target; ++i)
            target = pair[i] == j;
        all = all && target;
    }
    for (int i = 0; i < n && !all; ++i)
        pair[i] = -1;
}

bool gts__halo_is_local(const int *pair, int n, int index)
{
    if (index < 0 || index >= n)
        return false;
    if (pair[index] >= 0)
        return true;
    for (int i = 0; i < n; ++i)
        if (pair[i] == index)
            return true;
    return false;
}

void gts__halo_layout(const gts_halo_plan *plan, const int *pair, bool send, int64_t *offset,
                      int64_t *travel_bytes)
{
    int n = gts_halo_plan_neighbor_count(plan);
    int64_t next = 0; /* the plan's totals are the sums: no overflow below them */
    for (int local = 0; local < 2; ++local) {
        if (local == 1)
            *travel_bytes = next;
        for (int i = 0; i < n; ++i) {
            if (gts__halo_is_local(pair, n, i) != (local == 1))
                continue;
            const gts_halo_neighbor *nb = gts_halo_plan_neighbor(plan, i);
            offset[i] = next;
            next += send ? nb->send_bytes : nb->recv_bytes;
        }
    }
}

int gts_halo_plan_message_layout(const gts_halo_plan *plan, bool send, int64_t *offsets, int n,
                                 int64_t *travel_bytes, gts_error *err)
{
    if (!plan || !offsets || !travel_bytes)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL",
                             !plan ? "plan" : !offsets ? "offsets" : "travel_bytes");
    int count = gts_halo_plan_neighbor_count(plan);
    if (n != count)
        return gts_error_set(err, GTS_EINVAL,
                             "n: %d entries for the plan's %d neighbours", n, count);
    int *pair = malloc((size_t)(count ? count : 1) * sizeof *pair);
    if (!pair)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo message layout");
    gts__halo_pair_local(plan, pair);
    gts__halo_layout(plan, pair, send, offsets, travel_bytes);
    free(pair);
    return 0;
}
