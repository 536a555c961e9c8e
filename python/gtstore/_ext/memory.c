/* Memory statistics and the cache of large blocks, from Python. */
#include "module.h"

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
    gts_cache_set_limit(value);
    Py_RETURN_NONE;
}

static PyObject *api_clear_cache(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gts_cache_clear();
    Py_RETURN_NONE;
}

static PyObject *api_memory_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gts_memory_stats s;
    gts_memory_stats_get(&s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L}", "live_buffers", (long long)s.live_buffers,
                         "live_bytes", (long long)s.live_bytes, "cached_blocks",
                         (long long)s.cached_blocks, "cached_bytes", (long long)s.cached_bytes,
                         "cache_hits", (long long)s.cache_hits, "cache_misses",
                         (long long)s.cache_misses);
}

PyMethodDef gtpy_memory_methods[] = {
    {"cache_limit", api_cache_limit, METH_NOARGS,
     "cache_limit()\n--\n\nBytes the cache of freed large blocks may hold."},
    {"set_cache_limit", api_set_cache_limit, METH_O,
     "set_cache_limit(nbytes)\n--\n\nSets the cache limit in bytes, evicting down to it; 0 "
     "turns the cache off. The environment variable GTSTORE_CACHE_LIMIT sets the initial "
     "limit (default 1 GiB)."},
    {"clear_cache", api_clear_cache, METH_NOARGS,
     "clear_cache()\n--\n\nReturns every cached block to the system."},
    {"memory_stats", api_memory_stats, METH_NOARGS,
     "memory_stats()\n--\n\nLive buffers and bytes owned by gtstore, and the cache's blocks, "
     "bytes, hits and misses."},
    {NULL, NULL, 0, NULL},
};
