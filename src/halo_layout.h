/* Where a halo plan's messages sit (used by halo_messages.c and the public
 * gts_halo_plan_message_layout of gtstore/halo_messages.h): which
 * neighbours are this rank itself ("local": no message travels), and, per
 * direction, the place of each neighbour's message in one block. One rule
 * for both, so that every block cut from a plan (gts_halo_messages', or a
 * caller's own, e.g. a shared-memory window) has the same layout. */
#ifndef GTSTORE_HALO_LAYOUT_H
#define GTSTORE_HALO_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/halo_plan.h"

/* pair[i] (one entry per neighbour) = j where neighbour i's send message
 * would be neighbour j's receive message on this rank (the tag that a
 * receive expects is the send's, the regions have the same shapes), so
 * that the regions are copied straight from the domain into the halo and
 * no message travels; -1 elsewhere. All or nothing: if any of this rank's
 * own messages has no match, none is paired, and every message travels. */
void gts__halo_pair_local(const gts_halo_plan *plan, int *pair);

/* Whether neighbour `index` (in [0, n)) is local: paired, or a pair's
 * target. */
bool gts__halo_is_local(const int *pair, int n, int index);

/* One direction's block (send or receive): the messages that travel first,
 * in neighbour order, so that their bytes are one run (one MPI window, one
 * transfer across the bus where they are packed on a GPU), then the local
 * ones. offset[i]: where neighbour i's message starts; *travel_bytes: the
 * bytes of the travelling ones (the block's size is the plan's total of
 * the direction). */
void gts__halo_layout(const gts_halo_plan *plan, const int *pair, bool send, int64_t *offset,
                      int64_t *travel_bytes);

#endif
