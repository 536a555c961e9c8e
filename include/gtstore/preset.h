/* Presets: named sets of allocation parameters for a backend (alignment,
 * layout rule, device). The registry holds the built-in presets of GT4Py and
 * GridTools and any the user registers. It is thread-safe, and a preset in
 * use stays valid while it is unregistered (see gts_preset_release). */
#ifndef GTSTORE_PRESET_H
#define GTSTORE_PRESET_H

#include <stddef.h>
#include <stdint.h>

#include "gtstore/error.h"
#include "gtstore/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GTS_PRESET_NAME_SIZE 64

/* The device *kind* a preset prefers (CPU or GPU): not a device. Devices
 * are DLPack (type, id) pairs with their operations (gtstore/device.h). */
typedef enum gts_device { GTS_DEVICE_CPU = 0, GTS_DEVICE_GPU = 1 } gts_device;

typedef enum gts_layout_rule {
    GTS_LAYOUT_NAMED,   /* base_layout ranks I, J, K; data dims outermost */
    GTS_LAYOUT_C,       /* positional: last index contiguous */
    GTS_LAYOUT_F,       /* positional: first index contiguous */
    GTS_LAYOUT_FUNCTION /* layout_fn decides */
} gts_layout_rule;

/* Computes a layout for `ndim` dimensions labelled `dims`; returns 0 or a
 * gts_status (setting `err`). The result is validated by the caller. */
typedef int (*gts_layout_fn)(int ndim, const gts_dim *dims, int *layout, void *ctx,
                             gts_error *err);

typedef struct gts_preset {
    char name[GTS_PRESET_NAME_SIZE];
    int64_t alignment; /* in elements: the byte alignment is this times the itemsize */
    gts_layout_rule rule;
    int base_layout[3]; /* GTS_LAYOUT_NAMED: the ranks of I, J and K */
    gts_layout_fn layout_fn;
    void *layout_ctx;
    /* Called with layout_ctx when the preset is unregistered or replaced. */
    void (*release_ctx)(void *ctx);
    gts_device device;
    /* Private: the registry entry a looked-up user preset keeps alive (NULL
     * for built-ins and for presets being registered). */
    void *owner;
} gts_preset;

/* Copies the preset called `name` into `out`; GTS_ENOTFOUND if none. A copy
 * of a user preset keeps its layout_ctx alive, even if the preset is
 * unregistered or replaced meanwhile, until gts_preset_release(out). */
int gts_preset_lookup(const char *name, gts_preset *out, gts_error *err);

/* Ends the use of a copy made by gts_preset_lookup or gts_preset_at (a
 * no-op for built-ins; calling it again does nothing). The last use of an
 * unregistered or replaced user preset runs its release_ctx. */
void gts_preset_release(gts_preset *preset);

/* Adds a user preset, or replaces a user preset of the same name (whose
 * release_ctx then runs once no copy of it is in use, even if the new preset
 * has the same ctx). Built-in names cannot be replaced (GTS_EEXIST). The
 * preset is validated. On success the registry owns layout_ctx. */
int gts_preset_register(const gts_preset *preset, gts_error *err);

/* Removes a user preset: GTS_ENOTFOUND if there is none of that name,
 * GTS_EINVAL for a built-in name. */
int gts_preset_unregister(const char *name, gts_error *err);

/* Number of presets and the i-th (built-ins first, then user presets in
 * registration order), for listing; release the copy as after a lookup. */
size_t gts_preset_count(void);
int gts_preset_at(size_t index, gts_preset *out, gts_error *err);

/* Sets the layout rule of `preset` from text: "C", "F" (positional) or an
 * order of the axes I, J and K such as "KJI" (GTS_LAYOUT_NAMED, the ranks
 * gts_layout_ijk_ranks gives). GTS_EINVAL otherwise ("layout: 'X' is not
 * 'C', 'F' or an order of the axes I, J and K such as 'KJI'"), the preset
 * unchanged. */
int gts_preset_layout_text(gts_preset *preset, const char *text, gts_error *err);

/* The layout `preset` gives to `ndim` dimensions labelled `dims`. */
int gts_preset_layout(const gts_preset *preset, int ndim, const gts_dim *dims, int *layout,
                      gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
