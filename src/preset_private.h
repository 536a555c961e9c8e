/* Running a layout function and checking a device kind (preset.c), for
 * presets, specs and signatures; not installed. */
#ifndef GTSTORE_PRESET_PRIVATE_H
#define GTSTORE_PRESET_PRIVATE_H

#include "gtstore/preset.h"

/* Runs a layout function (a preset's or a spec's) and gives a failure a
 * message naming `owner` where the function left none. The result is not
 * checked: callers know what it may hold. */
int gts__layout_call(gts_layout_fn fn, void *ctx, const char *owner, int ndim,
                     const gts_dim *dims, int *layout, gts_error *err);

/* GTS_EINVAL where `device` is no gts_device (a C caller's struct holds
 * any int; anything but the CPU would be taken for the GPU), naming it as
 * `who`. */
int gts__device_kind_check(gts_device device, const char *who, gts_error *err);

#endif
