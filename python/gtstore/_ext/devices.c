/* Devices from Python: which device plays the GPU (use_gpu, GTSTORE_GPU),
 * the devices there are, and the emulated device's transfer counts. */
#include "api.h"
#include "args.h"
#include "convert.h"
#include "errors.h"

/* A device as a dict: its name, DLPack (type, id), and the capabilities
 * callers choose by (gtstore/device.h): its kind of memory and whether that
 * memory exports the CUDA array interface. */
static PyObject *device_dict(const gts_device_ops *device)
{
    static const char *const kinds[] = {[GTS_MEMORY_HOST] = "host", [GTS_MEMORY_GPU] = "gpu",
                                        [GTS_MEMORY_MANAGED] = "managed",
                                        [GTS_MEMORY_PINNED] = "pinned"};
    return Py_BuildValue("{s:s,s:(ii),s:s,s:O}", "name", device->name, "dlpack",
                         (int)device->id.type, (int)device->id.id, "kind", kinds[device->kind],
                         "cuda_array_interface",
                         device->cuda_array_interface ? Py_True : Py_False);
}

static PyObject *api_devices(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    size_t n = gts_device_list(NULL, 0);
    const gts_device_ops **devices = PyMem_Malloc((n ? n : 1) * sizeof *devices);
    if (!devices)
        return PyErr_NoMemory();
    size_t listed = gts_device_list(devices, n);
    n = listed < n ? listed : n;
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; ++i) {
        PyObject *item = device_dict(devices[i]);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    PyMem_Free(devices);
    return list;
}

/* use_gpu(name): the device of that name (libgtstore reads it), or None
 * for the environment's choice. */
static PyObject *api_use_gpu(PyObject *self, PyObject *name)
{
    (void)self;
    const gts_device_ops *device = NULL;
    gts_error err;
    if (name != Py_None) {
        const char *text = PyUnicode_Check(name) ? gtpy_text(name, "gpu") : NULL;
        if (!text || gts_device_gpu_named(text, &device, &err) != GTS_OK) {
            if (text && err.code != GTS_EINVAL)
                return gtpy_raise_param("gpu", &err), NULL;
            PyErr_Clear(); /* a str with a NUL character names no device either */
            return PyErr_Format(PyExc_ValueError,
                                "gpu: expected None, 'emulated', 'cuda' or 'cuda:N', got %.200R",
                                name);
        }
    }
    if (gts_device_use_gpu(device, &err) != 0)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *api_gpu(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    const gts_device_ops *device;
    gts_error err;
    if (gts_device_gpu(&device, &err) != 0)
        Py_RETURN_NONE;
    return device_dict(device);
}

static PyObject *api_transfer_counts(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gts_transfer_counts c;
    gts_pinned_counts p;
    gts_device_emulated_counts(&c);
    gts_device_emulated_pinned_counts(&p);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "to_device",
                         (long long)c.to_device, "to_device_bytes", (long long)c.to_device_bytes,
                         "to_host", (long long)c.to_host, "to_host_bytes",
                         (long long)c.to_host_bytes, "within", (long long)c.within, "fills",
                         (long long)c.fills, "copies", (long long)c.copies, "live_blocks",
                         (long long)c.live_blocks, "allocs", (long long)c.allocs,
                         "pinned_allocs", (long long)p.allocs, "pinned_live_blocks",
                         (long long)p.live_blocks, "pinned_live_bytes", (long long)p.live_bytes);
}

static PyObject *api_reset_transfer_counts(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gts_device_emulated_reset_counts();
    Py_RETURN_NONE;
}

/* _host_memory(type, id): whether the DLPack device (type, id) is host
 * memory (the host's, or a GPU's pinned memory) as its device describes
 * itself; False for devices gtstore cannot reach. */
static PyObject *api_host_memory(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *const names[] = {"type", "id"};
    static gtpy_signature sig = GTPY_SIGNATURE("_host_memory", names, 2, 2, 2);
    PyObject *v[2];
    int type, id;
    if (gtpy_parse_tuple(&sig, args, NULL, v) < 0 || gtpy_c_int(v[0], "type", &type) < 0 ||
        gtpy_c_int(v[1], "id", &id) < 0)
        return NULL;
    const gts_device_ops *device;
    gts_error err;
    bool host = gts_device_get((gts_device_id){type, id}, &device, &err) == 0 &&
                gts_device_is_host_memory(device);
    return PyBool_FromLong(host);
}

PyMethodDef gtpy_devices_methods[] = {
    {"_host_memory", api_host_memory, METH_VARARGS,
     "_host_memory(type, id)\n--\n\nWhether the DLPack device (type, id) is host memory (the "
     "host's, or a GPU's pinned memory)."},
    {"devices", api_devices, METH_NOARGS,
     "devices()\n--\n\nThe devices gtstore can reach: the host, the emulated device, and CUDA's "
     "where a driver and a GPU are present; each a dict with its name, DLPack (type, id), "
     "kind ('host', 'gpu', 'managed' or 'pinned') and cuda_array_interface (whether its "
     "memory exports the CUDA array interface)."},
    {"use_gpu", api_use_gpu, METH_O,
     "use_gpu(gpu)\n--\n\nChooses the device that plays the GPU for device='gpu' and GPU "
     "presets: 'emulated' (separate host memory that gtstore reaches only through device "
     "copies, for tests), 'cuda' (CUDA device 0), 'cuda:N' (CUDA device N) or None (back to "
     "the environment variable GTSTORE_GPU, else CUDA device 0)."},
    {"gpu", api_gpu, METH_NOARGS,
     "gpu()\n--\n\nThe device that plays the GPU (a dict as in devices()), or None where there "
     "is none."},
    {"transfer_counts", api_transfer_counts, METH_NOARGS,
     "transfer_counts()\n--\n\nWhat the emulated device has done since the last reset: "
     "host-to-device and device-to-host transfers (calls and bytes), copies within it, fills "
     "and strided copies, its allocations and live blocks, and those of its pinned host "
     "memory (pinned_allocs, pinned_live_blocks, pinned_live_bytes)."},
    {"reset_transfer_counts", api_reset_transfer_counts, METH_NOARGS,
     "reset_transfer_counts()\n--\n\nZeroes the emulated device's counts."},
    {NULL, NULL, 0, NULL},
};
