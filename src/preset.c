#include "gtstore/preset.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "preset_private.h"

#define NAMED(name, alignment, i, j, k, device) \
    {name, alignment, GTS_LAYOUT_NAMED, {i, j, k}, NULL, NULL, NULL, device, NULL}
#define POSITIONAL(name, rule) {name, 1, rule, {0, 0, 0}, NULL, NULL, NULL, GTS_DEVICE_CPU, NULL}

/* GT4Py 1.x's registry, the positional C/F of GDP-3 and GridTools' legacy
 * backends; the values are binding (DESIGN.md section 3). */
static const gts_preset builtins[] = {
    NAMED("numpy", 1, 0, 1, 2, GTS_DEVICE_CPU),
    NAMED("debug", 1, 0, 1, 2, GTS_DEVICE_CPU),
    NAMED("gt:cpu_kfirst", 1, 0, 1, 2, GTS_DEVICE_CPU),
    NAMED("gt:cpu_ifirst", 1, 2, 1, 0, GTS_DEVICE_CPU),
    NAMED("gt:gpu", 32, 2, 1, 0, GTS_DEVICE_GPU),
    NAMED("dace:cpu", 1, 1, 2, 0, GTS_DEVICE_CPU),
    NAMED("dace:cpu_kfirst", 1, 0, 1, 2, GTS_DEVICE_CPU),
    NAMED("dace:cpu_KJI", 1, 2, 1, 0, GTS_DEVICE_CPU),
    NAMED("dace:gpu", 1, 2, 1, 0, GTS_DEVICE_GPU),
    NAMED("dace:gpu_IJK", 1, 0, 1, 2, GTS_DEVICE_GPU),
    POSITIONAL("C", GTS_LAYOUT_C),
    POSITIONAL("F", GTS_LAYOUT_F),
    NAMED("gtx86", 1, 0, 1, 2, GTS_DEVICE_CPU),
    NAMED("gtmc", 8, 2, 0, 1, GTS_DEVICE_CPU),
    NAMED("gtcuda", 32, 2, 1, 0, GTS_DEVICE_GPU),
};
#define NBUILTINS (sizeof builtins / sizeof builtins[0])

/* A user preset lives in a reference-counted entry: the registry holds one
 * reference, and every copy handed out by a lookup holds another, so that
 * a layout_ctx stays alive while a caller uses it even if the preset is
 * unregistered meanwhile (by another thread, or by user code that the
 * caller runs, such as a Python __index__). release_ctx runs when the last
 * reference goes. Counts change without the lock held by anyone calling
 * back into user code: the lock guards the table only. */
typedef struct user_entry {
    atomic_long refs;
    gts_preset preset;
} user_entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static user_entry **user_presets;
static size_t user_count, user_capacity;

static const gts_preset *find_builtin(const char *name)
{
    for (size_t i = 0; i < NBUILTINS; ++i)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

/* Caller holds the lock. */
static size_t find_user(const char *name)
{
    size_t i = 0;
    while (i < user_count && strcmp(user_presets[i]->preset.name, name) != 0)
        ++i;
    return i;
}

static void entry_release(user_entry *entry)
{
    if (!entry || atomic_fetch_sub_explicit(&entry->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (entry->preset.release_ctx)
        entry->preset.release_ctx(entry->preset.layout_ctx);
    free(entry);
}

/* A copy of the entry's preset holding a reference to it; caller holds the
 * lock. */
static void copy_out(user_entry *entry, gts_preset *out)
{
    atomic_fetch_add_explicit(&entry->refs, 1, memory_order_relaxed);
    *out = entry->preset;
    out->owner = entry;
}

void gts_preset_release(gts_preset *preset)
{
    if (!preset)
        return;
    user_entry *entry = preset->owner;
    preset->owner = NULL;
    entry_release(entry);
}

int gts_preset_lookup(const char *name, gts_preset *out, gts_error *err)
{
    if (!name)
        return gts_error_set(err, GTS_EINVAL, "backend: the preset name is NULL");
    const gts_preset *builtin = find_builtin(name);
    if (builtin) {
        *out = *builtin;
        return GTS_OK;
    }
    pthread_mutex_lock(&lock);
    size_t i = find_user(name);
    bool found = i < user_count;
    if (found)
        copy_out(user_presets[i], out);
    pthread_mutex_unlock(&lock);
    if (found)
        return GTS_OK;
    return gts_error_set(err, GTS_ENOTFOUND, "backend: storage preset '%.64s' is not registered",
                         name);
}

int gts__device_kind_check(gts_device device, const char *who, gts_error *err)
{
    if (device != GTS_DEVICE_CPU && device != GTS_DEVICE_GPU)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: %d is no device kind (GTS_DEVICE_CPU or GTS_DEVICE_GPU)", who,
                             (int)device);
    return GTS_OK;
}

static int validate(const gts_preset *preset, gts_error *err)
{
    const char *end = memchr(preset->name, '\0', GTS_PRESET_NAME_SIZE);
    if (!end || end == preset->name)
        return gts_error_set(err, GTS_EINVAL, "name: a preset name has 1 to %d characters",
                             GTS_PRESET_NAME_SIZE - 1);
    if (preset->alignment < 1)
        return gts_error_set(err, GTS_EINVAL, "alignment: %lld elements is not positive",
                             (long long)preset->alignment);
    int rc = gts__device_kind_check(preset->device, "device", err);
    if (rc)
        return rc;
    switch (preset->rule) {
    case GTS_LAYOUT_NAMED: return gts_layout_check(3, preset->base_layout, err);
    case GTS_LAYOUT_C:
    case GTS_LAYOUT_F: return GTS_OK;
    case GTS_LAYOUT_FUNCTION:
        if (!preset->layout_fn)
            return gts_error_set(err, GTS_EINVAL, "layout_fn: NULL for a function layout");
        return GTS_OK;
    default: return gts_error_set(err, GTS_EINVAL, "rule: unknown layout rule %d", (int)preset->rule);
    }
}

int gts_preset_register(const gts_preset *preset, gts_error *err)
{
    if (!preset)
        return gts_error_set(err, GTS_EINVAL, "preset: NULL");
    int rc = validate(preset, err);
    if (rc)
        return rc;
    if (find_builtin(preset->name))
        return gts_error_set(err, GTS_EEXIST, "name: '%s' is a built-in preset", preset->name);
    user_entry *entry = malloc(sizeof *entry);
    if (!entry)
        return gts_error_set(err, GTS_ENOMEM, "out of memory registering a preset");
    atomic_init(&entry->refs, 1);
    entry->preset = *preset;
    entry->preset.owner = NULL;
    pthread_mutex_lock(&lock);
    size_t i = find_user(preset->name);
    user_entry *old = i < user_count ? user_presets[i] : NULL;
    if (!old && user_count == user_capacity) {
        size_t capacity = user_capacity ? 2 * user_capacity : 8;
        user_entry **grown = realloc(user_presets, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&lock);
            free(entry);
            return gts_error_set(err, GTS_ENOMEM, "out of memory registering a preset");
        }
        user_presets = grown;
        user_capacity = capacity;
    }
    if (!old)
        ++user_count;
    user_presets[i] = entry;
    pthread_mutex_unlock(&lock);
    entry_release(old);
    return GTS_OK;
}

int gts_preset_unregister(const char *name, gts_error *err)
{
    if (!name)
        return gts_error_set(err, GTS_EINVAL, "name: NULL");
    if (find_builtin(name))
        return gts_error_set(err, GTS_EINVAL, "name: '%s' is a built-in preset", name);
    pthread_mutex_lock(&lock);
    size_t i = find_user(name);
    user_entry *old = i < user_count ? user_presets[i] : NULL;
    if (old) {
        memmove(user_presets + i, user_presets + i + 1, (user_count - i - 1) * sizeof *user_presets);
        --user_count;
    }
    pthread_mutex_unlock(&lock);
    if (!old)
        return gts_error_set(err, GTS_ENOTFOUND, "name: no user preset '%.64s'", name);
    entry_release(old);
    return GTS_OK;
}

size_t gts_preset_count(void)
{
    pthread_mutex_lock(&lock);
    size_t count = NBUILTINS + user_count;
    pthread_mutex_unlock(&lock);
    return count;
}

int gts_preset_at(size_t index, gts_preset *out, gts_error *err)
{
    if (index < NBUILTINS) {
        *out = builtins[index];
        return GTS_OK;
    }
    pthread_mutex_lock(&lock);
    bool found = index - NBUILTINS < user_count;
    if (found)
        copy_out(user_presets[index - NBUILTINS], out);
    pthread_mutex_unlock(&lock);
    if (!found)
        return gts_error_set(err, GTS_EINVAL, "index: %zu is past the last preset", index);
    return GTS_OK;
}

/* The user's layout function, whose failures always reach the caller with
 * a status and a message: a function that returned an error without a
 * message (or a positive number) once gave an empty one. */
int gts__layout_call(gts_layout_fn fn, void *ctx, const char *owner, int ndim,
                     const gts_dim *dims, int *layout, gts_error *err)
{
    gts_error mine = {0, ""};
    int rc = fn(ndim, dims, layout, ctx, &mine);
    if (rc == GTS_OK)
        return GTS_OK;
    if (rc > 0 || !mine.message[0])
        return gts_error_set(err, rc < 0 ? rc : GTS_EINVAL,
                             "layout: %s failed (%s) without a message", owner,
                             gts_status_name(rc));
    return gts_error_set(err, rc, "%s", mine.message);
}

static int call_layout_fn(const gts_preset *preset, int ndim, const gts_dim *dims, int *layout,
                          gts_error *err)
{
    char owner[GTS_PRESET_NAME_SIZE + 48];
    snprintf(owner, sizeof owner, "the layout function of preset '%s'", preset->name);
    int rc = gts__layout_call(preset->layout_fn, preset->layout_ctx, owner, ndim, dims, layout,
                              err);
    return rc ? rc : gts_layout_check(ndim, layout, err);
}

int gts_preset_layout_text(gts_preset *preset, const char *text, gts_error *err)
{
    int ranks[3];
    if (!preset)
        return gts_error_set(err, GTS_EINVAL, "preset: NULL");
    if (text && (strcmp(text, "C") == 0 || strcmp(text, "F") == 0)) {
        preset->rule = text[0] == 'C' ? GTS_LAYOUT_C : GTS_LAYOUT_F;
        return GTS_OK;
    }
    if (gts_layout_ijk_ranks(text, ranks, NULL) != GTS_OK)
        return gts_error_set(err, GTS_EINVAL,
                             "layout: '%.200s' is not 'C', 'F' or an order of the axes I, J and "
                             "K such as 'KJI'",
                             text ? text : "(null)");
    memcpy(preset->base_layout, ranks, sizeof ranks);
    preset->rule = GTS_LAYOUT_NAMED;
    return GTS_OK;
}

int gts_preset_layout(const gts_preset *preset, int ndim, const gts_dim *dims, int *layout,
                      gts_error *err)
{
    int rc = gts_dims_check(ndim, dims, err);
    if (rc)
        return rc;
    switch (preset->rule) {
    case GTS_LAYOUT_C: gts_layout_c(ndim, layout); return GTS_OK;
    case GTS_LAYOUT_F: gts_layout_f(ndim, layout); return GTS_OK;
    case GTS_LAYOUT_FUNCTION:
        if (!preset->layout_fn)
            return gts_error_set(err, GTS_EINVAL, "layout_fn: NULL for a function layout");
        return call_layout_fn(preset, ndim, dims, layout, err);
    default: {
        rc = gts_layout_check(3, preset->base_layout, err);
        if (rc)
            return rc;
        gts_dim order[3]; /* I, J, K sorted by their base rank */
        static const gts_dim ijk[3] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K};
        for (int a = 0; a < 3; ++a)
            order[preset->base_layout[a]] = ijk[a];
        return gts_layout_from_order(ndim, dims, 3, order, layout, err);
    }
    }
}
