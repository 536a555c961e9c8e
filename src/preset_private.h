/* Running a layout function (preset.c), for presets and specs; not
 * installed. */
#ifndef GTSTORE_PRESET_PRIVATE_H
#define GTSTORE_PRESET_PRIVATE_H

#include "gtstore/preset.h"

/* Runs a layout function (a preset's or a spec's) and gives a failure a
 * message naming `owner` where the function left none. The result is not
 * checked: callers know what it may hold. */
int gts__layout_call(gts_layout_fn fn, void *ctx, const char *owner, int ndim,
                     const gts_dim *dims, int *layout, gts_error *err);

#endif
