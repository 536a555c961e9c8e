/* The checks every checked device operation shares (device.c), for the
 * files that add operations (event.c); not installed. */
#ifndef GTSTORE_DEVICE_CHECK_H
#define GTSTORE_DEVICE_CHECK_H

#include "gtstore/device.h"

/* GTS_EINVAL for a NULL device, or a stream on a device without streams. */
int gts__device_check(const gts_device_ops *dev, gts_stream stream, gts_error *err);

/* GTS_EINVAL naming `flags` where it has bits outside `known`: one rule
 * for allocation flags, whether a device's block (GTS_ALLOC_ZERO) or a
 * buffer (buffer.c: GTS_ALLOC_MIRRORED too) takes them. */
int gts__alloc_flags_check(unsigned flags, unsigned known, gts_error *err);

#endif
