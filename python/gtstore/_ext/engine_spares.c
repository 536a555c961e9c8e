/* Spare blocks (engine_spares.h).
 *
 * `a + b` on a GPU makes a new storage per call. Its block costs a
 * stream-ordered allocation and free, and the engine's array over it (a
 * cupy.ndarray over a MemoryPointer over an UnownedMemory) about 3 us of
 * host time more: together more than CuPy's whole call, whose result comes
 * from its own pool with its array made in Cython. So when the last Python
 * holder of a GPU buffer goes (its SyncState), the buffer and the engine's
 * objects over it are kept, and the next storage of the same size on the
 * same device takes both: no allocation, no array built (the cached
 * writable view of the same shape is the call's output).
 *
 * What makes that safe:
 * - the buffer is reusable (gts_buffer_reusable): device memory, with a
 *   host side or without, whose only reference is the engine's block;
 * - the engine's objects are private (engine_private): none is referenced
 *   but by the others, so no array a user kept reaches the block;
 * - the block keeps its stream order: the new storage's first device
 *   access on another stream waits for the old work, and a host access
 *   waits for it as for any (gtstore/access.h);
 * - a spare holds old values: only allocations that do not zero take one
 *   (gts_storage_create_reusing asks for no other), and a mirrored one
 *   starts in sync, as a new one;
 * - a mirrored spare keeps its host side: changing whether new host sides
 *   are pinned releases the spares (memory.c).
 * The spares are a cache of freed blocks like libgtstore's: they count
 * against gts_cache_limit (clear_cache and set_cache_limit release them),
 * at most MAX_SPARES of them. The GIL guards them: every caller holds it. */
#include "engine_spares.h"
#include "engine_objects.h"

#include "convert.h"
#include "errors.h"

#include "gtstore/sync.h"

#define MAX_SPARES 8

static struct {
    EngineObject *engines[MAX_SPARES]; /* the oldest first */
    int count;
    int64_t bytes, hits;
} spares;

static int64_t block_bytes(const EngineObject *o)
{
    return gts_buffer_size(o->block->buffer);
}

/* Takes spare `i` out of the list (its reference goes to the caller). */
static EngineObject *take_out(int i)
{
    EngineObject *o = spares.engines[i];
    spares.bytes -= block_bytes(o);
    --spares.count;
    memmove(&spares.engines[i], &spares.engines[i + 1],
            (size_t)(spares.count - i) * sizeof spares.engines[0]);
    return o;
}

void gtpy_spares_trim(int64_t bytes)
{
    while (spares.count > 0 && spares.bytes > bytes)
        Py_DECREF(take_out(0)); /* after the list is consistent: its dealloc frees */
}

void gtpy_spares_stats(gtpy_spare_stats *stats)
{
    stats->blocks = spares.count;
    stats->bytes = spares.bytes;
    stats->hits = spares.hits;
}

/* ---- privacy ------------------------------------------------------------------------------ */

/* `obj.name` is `expected` (compared, not kept; false where obj has none
 * or reading it fails). `interned` caches the name. */
static bool attribute_is(PyObject *obj, const char *name, PyObject **interned,
                         PyObject *expected)
{
    PyObject *value = gtpy_optional_attr(obj, name, interned);
    Py_XDECREF(value);
    return value == expected;
}

/* A MemoryPointer over the engine's memory, counted once per reference
 * from the group's objects. */
typedef struct {
    PyObject *pointers[3];
    Py_ssize_t refs[3];
    int count;
} pointer_refs;

static void count_pointer(pointer_refs *p, PyObject *pointer)
{
    for (int i = 0; i < p->count; ++i)
        if (p->pointers[i] == pointer) {
            ++p->refs[i];
            return;
        }
    p->pointers[p->count] = pointer;
    p->refs[p->count++] = 1;
}

/* The CuPy views' MemoryPointers (their `data`) and the engine's last one,
 * each referenced only from those, over the engine's UnownedMemory (their
 * `mem`), which is referenced only from the engine and them. */
static bool cupy_objects_private(EngineObject *o)
{
    static PyObject *data_name, *mem_name;
    pointer_refs p = {.count = 0};
    if (o->pointer)
        count_pointer(&p, o->pointer);
    for (int i = 0; i < 2; ++i) {
        if (!o->views[i])
            continue;
        PyObject *data = gtpy_optional_attr(o->views[i], "data", &data_name);
        if (!data)
            return false;
        Py_DECREF(data); /* the view holds it */
        count_pointer(&p, data);
    }
    for (int i = 0; i < p.count; ++i)
        if (Py_REFCNT(p.pointers[i]) != p.refs[i] ||
            !attribute_is(p.pointers[i], "mem", &mem_name, o->memory))
            return false;
    return Py_REFCNT(o->memory) == 1 + p.count;
}

/* Whether nothing outside the engine's objects reaches its block: each of
 * them is referenced only by the others, as their reference counts show
 * against the references they make:
 * - the Engine: by the caller alone;
 * - each cached view: by the Engine alone;
 * - NumPy: the block by the Engine and the views (their base);
 * - CuPy: the block by the Engine and the UnownedMemory (its owner), the
 *   rest as cupy_objects_private says.
 * An array, pointer or memory a user kept adds a reference no member
 * explains, and the block is not reused. */
static bool engine_private(EngineObject *o)
{
    static PyObject *base_name;
    if (Py_REFCNT(o) != 1)
        return false;
    Py_ssize_t block_refs = 1;
    for (int i = 0; i < 2; ++i) {
        if (!o->views[i])
            continue;
        if (Py_REFCNT(o->views[i]) != 1)
            return false;
        if (o->block->host) {
            if (!attribute_is(o->views[i], "base", &base_name, (PyObject *)o->block))
                return false;
            ++block_refs;
        }
    }
    if (o->memory) {
        if (!cupy_objects_private(o))
            return false;
        ++block_refs;
    }
    return Py_REFCNT(o->block) == block_refs;
}

void gtpy_spare_offer(PyObject *engine)
{
    EngineObject *o = (EngineObject *)engine;
    int64_t limit = gts_cache_limit(), bytes = block_bytes(o);
    PyObject *pending = gtpy_error_take(); /* a dealloc may run while one propagates */
    bool keep = bytes > 0 && bytes <= limit && gts_buffer_reusable(o->block->buffer) &&
                engine_private(o);
    gtpy_error_put(pending);
    if (!keep) {
        Py_DECREF(engine);
        return;
    }
    if (spares.count == MAX_SPARES)
        Py_DECREF(take_out(0));
    gtpy_spares_trim(limit - bytes);
    spares.engines[spares.count++] = o; /* the reference moves in */
    spares.bytes += bytes;
}

/* ---- taking one ---------------------------------------------------------------------------- */

gts_buffer *gtpy_spare_take(void *ctx, const gts_device_ops *device, int64_t size,
                            unsigned flags)
{
    bool mirrored = flags & GTS_ALLOC_MIRRORED;
    for (int i = spares.count - 1; i >= 0; --i) {
        gts_buffer *buffer = spares.engines[i]->block->buffer;
        if (gts_buffer_device(buffer) == device && gts_buffer_size(buffer) == size &&
            gts_buffer_mirrored(buffer) == mirrored) {
            *(PyObject **)ctx = (PyObject *)take_out(i);
            ++spares.hits;
            return gts_buffer_retain(buffer);
        }
    }
    return NULL;
}
