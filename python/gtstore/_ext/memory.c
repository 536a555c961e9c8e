/* Memory statistics and the cache of large blocks, from Python. */
#include "api.h"
#include "convert.h"
#include "engine_spares.h"

static PyObject *api_cache_limit(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLongLong(gts_cache_limit());
}

static PyObject *api_set_cache_limit(PyObject *self, PyObject *nbytes)
{
    (void)self;
    int64_t value;
    if (gtpy_int(nbytes, "nbytes", &value) < 0)
        return NULL;
    if (value < 0) {
        PyErr_Format(PyExc_ValueError, "nbytes: %lld is negative (0 turns the cache off)",
                     (long long)value);
        return NULL;
    }
    gtpy_spares_trim(value);
    gts_cache_set_limit(value);
    Py_RETURN_NONE;
}

static PyObject *api_clear_cache(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gtpy_spares_trim(0); /* first: their blocks then go to the caches cleared */
    gts_cache_clear();
    Py_RETURN_NONE;
}

static PyObject *api_memory_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gts_memory_stats s;
    gtpy_spare_stats spare;
    gts_memory_stats_get(&s);
    gtpy_spares_stats(&spare);
    const struct {
        const char *name;
        int64_t value;
    } items[] = {
        {"live_buffers", s.live_buffers},
        {"live_bytes", s.live_bytes},
        {"cached_blocks", s.cached_blocks},
        {"cached_bytes", s.cached_bytes},
        {"cache_hits", s.cache_hits},
        {"cache_misses", s.cache_misses},
        {"device_cached_blocks", s.device_cached_blocks},
        {"device_cached_bytes", s.device_cached_bytes},
        {"device_cache_hits", s.device_cache_hits},
        {"device_cache_misses", s.device_cache_misses},
        {"pinned_cached_blocks", s.pinned_cached_blocks},
        {"pinned_cached_bytes", s.pinned_cached_bytes},
        {"pinned_cache_hits", s.pinned_cache_hits},
        {"pinned_cache_misses", s.pinned_cache_misses},
        {"spare_blocks", spare.blocks},
        {"spare_bytes", spare.bytes},
        {"spare_hits", spare.hits},
    };
    PyObject *dict = PyDict_New();
    for (size_t i = 0; dict && i < sizeof items / sizeof items[0]; ++i) {
        PyObject *value = PyLong_FromLongLong(items[i].value);
        if (!value || PyDict_SetItemString(dict, items[i].name, value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

static PyObject *api_pinned_host_sides(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(gts_pinned_host_sides());
}

static PyObject *api_set_pinned_host_sides(PyObject *self, PyObject *pinned)
{
    (void)self;
    if (!PyBool_Check(pinned)) {
        PyErr_Format(PyExc_TypeError, "pinned: expected True or False, got %R", pinned);
        return NULL;
    }
    if ((pinned == Py_True) != gts_pinned_host_sides())
        gtpy_spares_trim(0); /* their host sides are of the other kind */
    gts_set_pinned_host_sides(pinned == Py_True);
    Py_RETURN_NONE;
}

PyMethodDef gtpy_memory_methods[] = {
    {"cache_limit", api_cache_limit, METH_NOARGS,
     "cache_limit()\n--\n\nBytes each cache of freed blocks may hold (host, device, "
     "pinned, spare GPU blocks)."},
    {"set_cache_limit", api_set_cache_limit, METH_O,
     "set_cache_limit(nbytes)\n--\n\nSets the cache limit in bytes, evicting down to it; 0 "
     "turns the caches off. The limit applies to each cache: host blocks, each GPU's device "
     "memory, pinned host memory, spare GPU blocks. The environment variable "
     "GTSTORE_CACHE_LIMIT sets the initial limit (bytes with an optional K, M or G suffix; "
     "default 1 GiB; any other form is a ValueError at import)."},
    {"clear_cache", api_clear_cache, METH_NOARGS,
     "clear_cache()\n--\n\nReturns every cached block to the system: host blocks, device "
     "memory (once the GPU is done with it), pinned host memory and the spare GPU blocks."},
    {"memory_stats", api_memory_stats, METH_NOARGS,
     "memory_stats()\n--\n\nLive buffers and bytes owned by gtstore (on every device), and "
     "the blocks, bytes, hits and misses of each kind of cache: the host's (cached_blocks, "
     "cached_bytes, cache_hits, cache_misses), the GPUs' device memory (device_cached_*, "
     "device_cache_*; a CUDA stream-ordered pool holds bytes, not blocks) and pinned host "
     "memory (pinned_cached_*, pinned_cache_*). spare_blocks, spare_bytes: GPU storages' "
     "blocks kept after their last holder went, with the engine's arrays over them, for the "
     "next storage of their size on their device (these count as live buffers); spare_hits: "
     "storages made over one."},
    {"pinned_host_sides", api_pinned_host_sides, METH_NOARGS,
     "pinned_host_sides()\n--\n\nWhether new software-managed GPU storages get a pinned "
     "(page-locked) host side."},
    {"set_pinned_host_sides", api_set_pinned_host_sides, METH_O,
     "set_pinned_host_sides(pinned)\n--\n\nTurns pinned host sides of new software-managed "
     "GPU storages on (the default) or off. Pinned memory makes syncs run at the bus's speed, "
     "but the system cannot page it out: memory-constrained runs may turn it off (the "
     "environment variable GTSTORE_PINNED_HOST_SIDES=0 does at start). Storages keep the host "
     "side they were made with."},
    {NULL, NULL, 0, NULL},
};
