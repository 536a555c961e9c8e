/* Every message of a halo exchange moved at once (used by halo_messages.c):
 * the copies between a plan's fields and one direction's message block,
 * sorted once by where they run, so that each exchange is one batch of
 * device copies per GPU (one kernel launch), the host copies, and one
 * transfer across the bus per run of contiguous bytes. */
#ifndef GTSTORE_HALO_TRANSFER_H
#define GTSTORE_HALO_TRANSFER_H

#include <stdbool.h>

#include "gtstore/halo_plan.h"

typedef struct gts__halo_transfer gts__halo_transfer;

/* What a transfer moves:
 * - PACK: packs the send message of every neighbour i with pair[i] < 0
 *   into `block`, and copies the regions of every pair (i, pair[i] >= 0)
 *   straight from the fields' domains (neighbour i's send regions) into
 *   their halos (neighbour pair[i]'s receive regions): this rank is its own
 *   neighbour there, and no message is needed;
 * - LOCAL: only the pairs' copies (for an exchange that packs each message
 *   itself, just before sending it);
 * - UNPACK: unpacks the receive message of every neighbour that is no
 *   pair's target from `block`. */
typedef enum gts__halo_moves { GTS__HALO_PACK, GTS__HALO_LOCAL, GTS__HALO_UNPACK } gts__halo_moves;

/* `block` is memory of `device` (host, pinned or the plan's GPU) holding
 * the direction's messages, neighbour i's at block + offset[i], as
 * gts_halo_messages cuts them. The plan and the block must outlive the
 * transfer. */
int gts__halo_transfer_create(const gts_halo_plan *plan, gts__halo_moves moves,
                              const gts_device_ops *device, char *block, const int64_t *offset,
                              const int *pair, gts__halo_transfer **out, gts_error *err);
/* Runs it; completed on return. */
int gts__halo_transfer_run(const gts__halo_transfer *transfer, gts_error *err);
void gts__halo_transfer_destroy(gts__halo_transfer *transfer); /* NULL ignored */

#endif
