/* Every message of a halo exchange moved at once (used by halo_messages.c):
 * the copies between a plan's fields and one direction's message block,
 * sorted once by where they run, so that each exchange is one batch of
 * device copies per GPU (one kernel launch), the host copies, and one
 * transfer across the bus per run of contiguous bytes. */
#ifndef GTSTORE_HALO_TRANSFER_H
#define GTSTORE_HALO_TRANSFER_H

#include <stdbool.h>

#include "gtstore/halo_plan.h"
#include "stream_order.h"

typedef struct gts__halo_transfer gts__halo_transfer;

/* The stream order of a message block (stream_order.h), kept by its owner
 * (halo_messages.c) for the transfers that move it: an event of `device`
 * (the GPU whose streams copy into or out of the block; the host where
 * none does, whose order is empty) recorded after the device work queued
 * on the block, and on the staging blocks that cross to it. */
typedef struct gts__halo_block_order {
    const gts_device_ops *device;
    gts__order order;
} gts__halo_block_order;

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
 * gts_halo_messages cuts them, `order` its stream order. The plan, the
 * block and the order must outlive the transfer. */
int gts__halo_transfer_create(const gts_halo_plan *plan, gts__halo_moves moves,
                              const gts_device_ops *device, char *block, const int64_t *offset,
                              const int *pair, gts__halo_block_order *order,
                              gts__halo_transfer **out, gts_error *err);
/* Runs it: the copies of fields with a host side on the host (completed on
 * return; the host waits for their device work, gtstore/access.h), those of
 * fields in device memory only, the crossings and the negations on their
 * GPU queued on `stream` (NULL: the default stream, completed on return).
 * The queued work follows the fields' producers and the block's previous
 * use on the device, and is recorded on the fields' buffers and on the
 * block's order; the host waits for it only where it touches what the
 * GPU wrote (a host copy out of a block a GPU copied into, a negation on
 * the host). GTS_EINVAL for a stream where the fields in device memory
 * only are on several GPUs. */
int gts__halo_transfer_run(const gts__halo_transfer *transfer, gts_stream stream,
                           gts_error *err);
void gts__halo_transfer_destroy(gts__halo_transfer *transfer); /* NULL ignored */

#endif
