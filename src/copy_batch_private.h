/* Copy batches of copies known to be independent (copy_batch.c), for the
 * halo transfers; not installed. */
#ifndef GTSTORE_COPY_BATCH_PRIVATE_H
#define GTSTORE_COPY_BATCH_PRIVATE_H

#include <stdbool.h>

#include "gtstore/copy_batch.h"

/* gts_copy_batch_create (gtstore/copy_batch.h), where `check_sides` may be
 * false for callers that know their copies independent (a halo plan's
 * regions never share an element, though their byte ranges interleave). */
int gts__copy_batch_create(const gts_device_ops *dev, int count, const gts_strided_copy *copies,
                           bool check_sides, gts_copy_batch **out, gts_error *err);

#endif
