/* The emulated device and its managed and pinned memory
 * (device_emulated.c, gtstore/device.h); not installed. */
#ifndef GTSTORE_DEVICE_EMULATED_H
#define GTSTORE_DEVICE_EMULATED_H

#include "gtstore/device.h"

extern const gts_device_ops gts__device_emulated;  /* (GTS_DL_EXT_DEV, 0) */
extern const gts_device_ops gts__emulated_managed; /* (GTS_DL_EXT_DEV, 1) */
extern const gts_device_ops gts__emulated_pinned;  /* (GTS_DL_EXT_DEV, 2) */

#endif
