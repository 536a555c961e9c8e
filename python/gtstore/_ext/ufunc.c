/* Computing with storages: Storage.__array_ufunc__ (NEP 13).
 *
 * libgtstore lines the operands up by their dims (gtstore/broadcast.h) and
 * gives the parameters of a new output (GDP-3's first draft's rules); this file turns
 * every operand into an ndarray view whose axes run along the result's
 * dims (stride 0 where it broadcasts) and lets NumPy's loop compute into the
 * output's memory: no copies, no temporaries beyond NumPy's own.
 *
 * The compute device (GDP-3's first draft, "Mixing Devices"): the device when an
 * input is a GPU array (a storage without host side, a software-managed
 * storage whose host side was not written last, managed memory, another
 * library's CUDA array) or an output has no host side, else the host. On
 * the device the engine computes (engine.h: CuPy on CUDA, NumPy over the
 * emulated device's memory): storages there are viewed in place, other
 * inputs are copied to the device, outputs in host memory receive the
 * result after, and where= selects with the engine's copyto. Every
 * operand's side is synced before it is read and marked after it is
 * written (gtstore/sync.h). */
#include "ufunc.h"
#include "args.h"
#include "axes.h"
#include "convert.h"
#include "engine.h"
#include "errors.h"
#include "numpy.h"
#include "source.h"
#include "storage.h"
#include "storage_object.h"
#include "write_hold.h"


#include "gtstore/broadcast.h"
#include "gtstore/sync.h"

/* Operands of one call: inputs, `where` and outputs. NumPy allows more,
 * but no ufunc in use comes near; the struct lives on the stack. */
#define MAX_OPS 16

/* What one call has: the operands (inputs, then `where` if it is an
 * array, then the outputs), their libgtstore views and NumPy views. */
typedef struct call {
    PyObject *ufunc, *kwargs; /* kwargs: a copy without out and where (or NULL) */
    int nin, nout, nops;      /* nops: inputs and `where` */
    bool has_where, on_device;
    bool interface_outs; /* interfaces, entries and staged below are set (cleared, then
                            filled): only a call with such an out= pays for them */
    PyObject *objs[MAX_OPS];   /* borrowed: the operands as given (or the storage over an
                                  input's data interface, held in arrays); outputs NULL
                                  if absent */
    PyObject *arrays[MAX_OPS]; /* new: np.asarray of array-likes (NULL for others) */
    PyObject *made[MAX_OPS];   /* new: the outputs this call allocated */
    PyObject *views[MAX_OPS];  /* new: what NumPy (or the engine) computes on */
    PyObject *host_outs[MAX_OPS]; /* new: on the device, host outputs to copy the result to */
    /* An out= with a data interface (new references): the object, which
     * the call returns, and the entry written, touched after the write */
    PyObject *interfaces[MAX_OPS], *entries[MAX_OPS];
    const char *entry_names[MAX_OPS];
    PyObject *staged[MAX_OPS]; /* new: an unlabelled such out= in device memory, which
                                  receives its host stand-in (arrays) after the run */
    gtpy_engine engine;           /* on the device */
    gts_storage storages[MAX_OPS];
    gts_operand operands[MAX_OPS];
    int64_t shapes[MAX_OPS][GTS_MAX_NDIM];
    gts_broadcast result;
} call;

/* Names the hot path looks up, interned once: PyDict_GetItemString and
 * PyObject_GetAttrString make and hash a new string on every call. */
enum { NAME_OUT, NAME_WHERE, NAME_DTYPE, NAME_SIGNATURE, NAME_CASTING, NAME_NIN, NAME_NOUT,
       NAME_UFUNC, NAME_COUNT };

static PyObject *name(int which)
{
    static const char *const text[NAME_COUNT] = {"out",     "where", "dtype", "signature",
                                                 "casting", "nin",   "nout",  "__array_ufunc__"};
    static PyObject *interned[NAME_COUNT];
    if (!interned[which])
        interned[which] = PyUnicode_InternFromString(text[which]);
    return interned[which];
}

/* kwargs[key] (borrowed) or NULL, for a dict that may be NULL. */
static PyObject *keyword(PyObject *kwargs, int which)
{
    PyObject *key = name(which);
    return kwargs && key ? PyDict_GetItemWithError(kwargs, key) : NULL;
}

static bool is_scalar(PyObject *obj)
{
    return PyFloat_Check(obj) || PyLong_Check(obj) || PyComplex_Check(obj) ||
           PyObject_TypeCheck(obj, (PyTypeObject *)gtpy_numpy("generic"));
}

/* An operand other than a storage: a scalar as it is, another library's
 * CUDA array as it is, anything else as an ndarray (its shape into
 * `shape`). */
static int load_other(call *c, int k, PyObject *obj)
{
    c->operands[k] = (gts_operand){NULL, 0, NULL};
    if (is_scalar(obj))
        return 0;
    PyObject *asarray = gtpy_is_cuda_array(obj) ? NULL : gtpy_numpy_asarray();
    PyObject *array = asarray ? PyObject_CallOneArg(asarray, obj) : Py_NewRef(obj);
    PyObject *shape = array ? PyObject_GetAttrString(array, "shape") : NULL;
    int ndim = 0;
    int rc = shape ? gtpy_shape(shape, "operand", &ndim, c->shapes[k]) : -1;
    Py_XDECREF(shape);
    if (rc < 0) {
        Py_XDECREF(array);
        return -1;
    }
    c->arrays[k] = array;
    c->operands[k] = (gts_operand){NULL, ndim, c->shapes[k]};
    return 0;
}

/* An out= whose entry is read-only: NumPy would say "output array is
 * read-only" without naming the object. */
static int check_writable_out(const call *c, int k, PyObject *storage)
{
    gts_storage g;
    gtpy_storage_load(storage, &g);
    if (!g.readonly)
        return 0;
    PyErr_Format(PyExc_ValueError, "out: %s of %.200R is read-only (its 'data' is (address, "
                 "True)); a ufunc writes its output there", c->entry_names[k], c->interfaces[k]);
    return -1;
}

/* Output k's data interface read: the entry an input's would be (so the
 * computation's device follows as for a storage out= there), kept with the
 * object for the touch and the return value; it must be writable. */
static PyObject *output_interface(call *c, int k, PyObject *obj, bool *labelled)
{
    PyObject *storage = gtpy_data_interface_storage(obj, "out", labelled, &c->entries[k],
                                                    &c->entry_names[k]);
    if (!storage)
        return NULL;
    c->interfaces[k] = Py_NewRef(obj);
    if (check_writable_out(c, k, storage) < 0)
        Py_CLEAR(storage);
    return storage;
}

/* An output without labels goes by position, as an ndarray out= does:
 * written through a view of its host memory, or for device memory into a
 * host copy of its values (kept where where= leaves them) that is
 * assigned to it after the run (unstage_outputs): by position, as the
 * copy has its shape. */
static PyObject *unlabelled_out(call *c, int k, PyObject *storage)
{
    if (gtpy_has_host_side(STORAGE(storage)->buffer))
        return gtpy_storage_ndarray(storage, true);
    PyObject *values = gtpy_storage_host_values(storage);
    PyObject *copy = values ? PyObject_CallOneArg(gtpy_numpy("array"), values) : NULL;
    Py_XDECREF(values);
    if (copy)
        c->staged[k] = Py_NewRef(storage);
    return copy;
}

/* An input, where= or out= with GDP-3's data interface, read as an
 * assignment's value is (its "gpu" entry first, acquired once:
 * gtpy_data_interface_storage). Labelled by its entry it is a storage
 * operand (by dims, on the device where its memory is; c->arrays[k] holds
 * it); else an array without dims, by position: an input's host values (a
 * host copy of device memory), an output's host memory. 1 when loaded, 0
 * for an object without a data interface. */
static int load_data_interface(call *c, int k, PyObject *obj)
{
    if (is_scalar(obj) || PyList_Check(obj) || PyTuple_Check(obj) ||
        Py_IS_TYPE(obj, (PyTypeObject *)gtpy_numpy("ndarray")))
        return 0;
    bool labelled, output = k >= c->nops;
    PyObject *storage = output ? output_interface(c, k, obj, &labelled)
                               : gtpy_data_interface_storage(obj, "operand", &labelled, NULL, NULL);
    if (!storage)
        return PyErr_Occurred() ? -1 : 0;
    if (labelled) {
        c->objs[k] = c->arrays[k] = storage;
        gtpy_storage_load(storage, &c->storages[k]);
        c->operands[k] = (gts_operand){&c->storages[k], 0, NULL};
        return 1;
    }
    PyObject *host = output ? unlabelled_out(c, k, storage) : gtpy_storage_host_values(storage);
    Py_DECREF(storage); /* the host values' base, where they are its memory */
    int rc = host ? load_other(c, k, host) : -1;
    Py_XDECREF(host);
    return rc < 0 ? -1 : 1;
}

static int load_operand(call *c, int k, PyObject *obj)
{
    c->objs[k] = obj;
    if (!gtpy_is_storage(obj)) {
        int interface = load_data_interface(c, k, obj);
        return interface != 0 ? (interface < 0 ? -1 : 0) : load_other(c, k, obj);
    }
    gtpy_storage_load(obj, &c->storages[k]);
    c->operands[k] = (gts_operand){&c->storages[k], 0, NULL};
    return 0;
}

/* Whether an input is a GPU array for GDP-3's first draft's choice: on a device, and
 * for a software-managed storage, not last written on the host. */
static bool gpu_array(const gts_storage *g)
{
    if (gts_buffer_device_kind(g->buffer) == GTS_DEVICE_CPU)
        return false;
    return !gts_buffer_mirrored(g->buffer) ||
           gts_buffer_sync_state(g->buffer) != GTS_SYNC_HOST_DIRTY;
}

/* The GPU of the call and its engine. Another library's CUDA array needs
 * a CUDA GPU: with the emulated device playing the GPU it cannot join. */
static int use_device(call *c, bool cuda_input)
{
    const gts_device_ops *gpu;
    gts_error err;
    if (gts_device_gpu(&gpu, &err) != 0)
        return gtpy_raise(&err);
    if (cuda_input && !gpu->cuda_array_interface) {
        PyErr_Format(PyExc_TypeError,
                     "%S: an operand is a CUDA array, but the storages' GPU is the %s device",
                     c->ufunc, gpu->name);
        return -1;
    }
    return gtpy_engine_get(gpu, &c->engine);
}

static int choose_device(call *c)
{
    bool cuda_input = false;
    c->on_device = false;
    for (int k = 0; k < c->nops + c->nout; ++k) {
        if (!c->objs[k])
            continue;
        bool input = k < c->nops;
        if (!gtpy_is_storage(c->objs[k])) {
            cuda_input = cuda_input || (c->arrays[k] && gtpy_is_cuda_array(c->arrays[k]));
            continue;
        }
        const gts_storage *g = &c->storages[k];
        c->on_device = c->on_device || (input ? gpu_array(g) : !gtpy_has_host_side(g->buffer));
    }
    c->on_device = c->on_device || cuda_input;
    return c->on_device ? use_device(c, cuda_input) : 0;
}

/* Operand k's shape and strides along the result's dims (stride 0 where
 * it broadcasts: gts_broadcast_strides). */
static void result_strides(const call *c, int k, Py_ssize_t *shape, Py_ssize_t *strides)
{
    const gts_broadcast *r = &c->result;
    int64_t along[GTS_MAX_NDIM];
    gts_broadcast_strides(r, k, c->storages[k].strides, along);
    for (int p = 0; p < r->ndim; ++p) {
        shape[p] = (Py_ssize_t)r->shape[p];
        strides[p] = (Py_ssize_t)along[p];
    }
}

/* An ndarray over the host side of `g` with the result's shape (after host
 * access: synced, and for an output marked written). */
static PyObject *storage_view(const call *c, int k, bool write)
{
    const gts_storage *g = &c->storages[k];
    const gts_broadcast *r = &c->result;
    Py_ssize_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    result_strides(c, k, shape, strides);
    if (gtpy_storage_host_access(g, write) < 0)
        return NULL;
    char *data = gts_storage_data(g);
    if (!gtpy_numpy_capi()) {
        PyErr_SetString(PyExc_RuntimeError,
                        "ufuncs on storages need NumPy's C API, which is unavailable here "
                        "(GTSTORE_NUMPY_CAPI=0 or an unknown NumPy ABI)");
        return NULL;
    }
    return gtpy_numpy_capi_array(g->dtype, r->ndim, shape, strides, data,
                                 !write || g->readonly, c->objs[k]);
}

/* An array without dims, arranged along the result's dims: as it is where
 * it matches by position, else transposed and reshaped as
 * gts_broadcast_arrangement says (a view: only axes of extent 1 come and go). */
static PyObject *array_view(const call *c, int k)
{
    PyObject *array = c->arrays[k];
    int perm[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM];
    if (!gts_broadcast_arrangement(&c->result, k, c->operands[k].ndim, c->shapes[k], perm, shape))
        return Py_NewRef(array);
    int64_t order[GTS_MAX_NDIM];
    for (int a = 0; a < c->operands[k].ndim; ++a)
        order[a] = perm[a];
    PyObject *axes = gtpy_int64_tuple(c->operands[k].ndim, order);
    PyObject *extents = gtpy_int64_tuple(c->result.ndim, shape);
    PyObject *moved = axes && extents ? PyObject_CallMethod(array, "transpose", "O", axes) : NULL;
    PyObject *view = moved ? PyObject_CallMethod(moved, "reshape", "O", extents) : NULL;
    Py_XDECREF(moved);
    Py_XDECREF(axes);
    Py_XDECREF(extents);
    return view;
}

static PyObject *operand_view(const call *c, int k)
{
    if (c->operands[k].storage)
        return storage_view(c, k, k >= c->nops);
    if (c->arrays[k])
        return array_view(c, k);
    return Py_NewRef(c->objs[k]); /* a scalar */
}

/* An array of the engine over operand k's device side in place, with the
 * result's shape (gtpy_engine_storage_view: synced there first and, for a
 * `write`, marked written). */
static PyObject *device_storage_view(call *c, int k, bool write)
{
    Py_ssize_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    result_strides(c, k, shape, strides);
    return gtpy_engine_storage_view(&c->engine, c->objs[k], c->result.ndim, shape, strides,
                                    write, true);
}

/* Operand k as the engine computes on it: storages the engine reaches in
 * place; inputs elsewhere copied to the device; outputs elsewhere as a
 * device copy (its values kept for where=) whose result goes to the host
 * view after the call (host_outs). */
static int device_operand_view(call *c, int k)
{
    bool output = k >= c->nops;
    const gts_storage *g = c->operands[k].storage;
    if (g && gtpy_engine_reaches(&c->engine, gts_buffer_device(g->buffer)))
        c->views[k] = device_storage_view(c, k, output);
    else if (!g && !c->arrays[k])
        c->views[k] = Py_NewRef(c->objs[k]); /* a scalar */
    else if (!output) {
        PyObject *host = operand_view(c, k);
        c->views[k] = host ? gtpy_engine_asarray(&c->engine, host) : NULL;
        Py_XDECREF(host);
    } else if ((c->host_outs[k] = operand_view(c, k)))
        c->views[k] = gtpy_engine_copy(&c->engine, c->host_outs[k]);
    return c->views[k] ? 0 : -1;
}

/* ---- output dtypes ---------------------------------------------------------------------- */

/* What NumPy's type resolution sees of an operand: a dtype, or for a Python
 * number its type (NEP 50: weakly typed). */
static PyObject *dtype_key(const call *c, int k)
{
    PyObject *obj = c->objs[k];
    if (c->operands[k].storage)
        return gtpy_dtype_object(c->storages[k].dtype);
    if (PyBool_Check(obj))
        return PyObject_CallOneArg(gtpy_numpy("dtype"), (PyObject *)&PyBool_Type);
    if (PyFloat_CheckExact(obj) || PyLong_CheckExact(obj) || PyComplex_CheckExact(obj))
        return Py_NewRef((PyObject *)Py_TYPE(obj));
    if (!c->arrays[k] && !PyObject_TypeCheck(obj, (PyTypeObject *)gtpy_numpy("generic"))) {
        /* a subclass of a Python number (an IntEnum): NumPy types it as its array */
        PyObject *asarray = gtpy_numpy_asarray();
        PyObject *array = asarray ? PyObject_CallOneArg(asarray, obj) : NULL;
        PyObject *dtype = array ? PyObject_GetAttrString(array, "dtype") : NULL;
        Py_XDECREF(array);
        return dtype;
    }
    return PyObject_GetAttrString(c->arrays[k] ? c->arrays[k] : obj, "dtype");
}

/* The dtypes NumPy resolved for a ufunc and its inputs' keys, remembered
 * in a direct-mapped table. The keys are compared by identity: NumPy's
 * dtypes of the built-in types and Python's number types are singletons,
 * so a hit costs a few pointer compares where a dict's key would be a
 * tuple made, hashed and compared (and equality would confuse `float`
 * with np.dtype(float)). An entry holds its objects, so no address is
 * reused while it is there. */
#define RESOLVED_SLOTS 128
typedef struct resolved_entry {
    PyObject *ufunc, *dtypes; /* dtypes: the tuple of nin + nout */
    int nin;
    PyObject *keys[MAX_OPS / 2];
} resolved_entry;

static resolved_entry resolved[RESOLVED_SLOTS];

static resolved_entry *resolved_slot(PyObject *ufunc, int nin, PyObject *const *keys)
{
    uintptr_t h = (uintptr_t)ufunc;
    for (int k = 0; k < nin; ++k)
        h = h * 31 + ((uintptr_t)keys[k] >> 4);
    return &resolved[(h ^ (h >> 7)) % RESOLVED_SLOTS];
}

static bool resolved_matches(const resolved_entry *e, PyObject *ufunc, int nin,
                             PyObject *const *keys)
{
    return e->ufunc == ufunc && e->nin == nin &&
           memcmp(e->keys, keys, (size_t)nin * sizeof *keys) == 0;
}

/* Stores `dtypes` for the call's ufunc and `keys` (new references taken). */
static void resolved_store(resolved_entry *e, PyObject *ufunc, int nin, PyObject *const *keys,
                           PyObject *dtypes)
{
    resolved_entry old = *e;
    e->ufunc = Py_NewRef(ufunc);
    e->dtypes = Py_NewRef(dtypes);
    e->nin = nin;
    for (int k = 0; k < nin; ++k)
        e->keys[k] = Py_NewRef(keys[k]);
    /* after the entry is whole: a dealloc may run code that calls here */
    Py_XDECREF(old.ufunc);
    Py_XDECREF(old.dtypes);
    for (int k = 0; old.ufunc && k < old.nin; ++k)
        Py_DECREF(old.keys[k]);
}

/* ufunc.resolve_dtypes of the inputs' keys, `dtype=`, `signature=` and
 * `casting=` passed on. */
static PyObject *numpy_resolve_dtypes(const call *c, PyObject *const *keys, PyObject *dtype,
                                      PyObject *signature, PyObject *casting)
{
    PyObject *dtypes = PyTuple_New(c->nin + c->nout);
    for (int k = 0; dtypes && k < c->nin + c->nout; ++k)
        PyTuple_SET_ITEM(dtypes, k, Py_NewRef(k < c->nin ? keys[k] : Py_None));
    PyObject *kw = dtypes ? PyDict_New() : NULL;
    PyObject *method = kw ? PyObject_GetAttrString(c->ufunc, "resolve_dtypes") : NULL;
    PyObject *resolved_dtypes = NULL;
    if (method && (!signature || !PyDict_SetItemString(kw, "signature", signature)) &&
        (!casting || !PyDict_SetItemString(kw, "casting", casting))) {
        if (dtype && !signature) { /* dtype=: the outputs' (NumPy's meaning) */
            PyObject *sig = PyTuple_New(c->nin + c->nout);
            PyObject *out_dtype = sig ? PyObject_CallOneArg(gtpy_numpy("dtype"), dtype) : NULL;
            for (int k = 0; out_dtype && k < c->nin + c->nout; ++k)
                PyTuple_SET_ITEM(sig, k, Py_NewRef(k < c->nin ? Py_None : out_dtype));
            if (!out_dtype || PyDict_SetItemString(kw, "signature", sig) < 0)
                Py_CLEAR(kw);
            Py_XDECREF(out_dtype);
            Py_XDECREF(sig);
        }
        PyObject *args = kw ? PyTuple_Pack(1, dtypes) : NULL;
        resolved_dtypes = args ? PyObject_Call(method, args, kw) : NULL;
        Py_XDECREF(args);
    }
    Py_XDECREF(method);
    Py_XDECREF(kw);
    Py_XDECREF(dtypes);
    if (resolved_dtypes && (!PyTuple_Check(resolved_dtypes) ||
                            PyTuple_GET_SIZE(resolved_dtypes) != c->nin + c->nout)) {
        /* a ufunc of another library's making */
        PyErr_Format(PyExc_TypeError, "%S: resolve_dtypes gave %.200R, not a tuple of %d dtypes",
                     c->ufunc, resolved_dtypes, c->nin + c->nout);
        Py_CLEAR(resolved_dtypes);
    }
    return resolved_dtypes;
}

/* The dtypes NumPy resolves for the outputs, remembered per ufunc and
 * input keys where nothing else was given. A new tuple of nin + nout
 * dtypes. */
static PyObject *resolve_dtypes(call *c)
{
    PyObject *dtype = keyword(c->kwargs, NAME_DTYPE);
    if (dtype == Py_None) /* NumPy's default: not np.dtype(None), float64 */
        dtype = NULL;
    PyObject *signature = keyword(c->kwargs, NAME_SIGNATURE);
    PyObject *casting = keyword(c->kwargs, NAME_CASTING);
    bool plain = !dtype && !signature && !casting;
    PyObject *keys[MAX_OPS / 2];
    int n = 0;
    while (n < c->nin && (keys[n] = dtype_key(c, n)))
        ++n;
    PyObject *dtypes = NULL;
    resolved_entry *e = n == c->nin ? resolved_slot(c->ufunc, n, keys) : NULL;
    if (e && plain && resolved_matches(e, c->ufunc, n, keys))
        dtypes = Py_NewRef(e->dtypes);
    else if (e && !PyErr_Occurred())
        dtypes = numpy_resolve_dtypes(c, keys, dtype, signature, casting);
    if (dtypes && plain && e->dtypes != dtypes)
        resolved_store(e, c->ufunc, n, keys, dtypes);
    for (int k = 0; k < n; ++k)
        Py_DECREF(keys[k]);
    return dtypes;
}

/* ---- outputs ------------------------------------------------------------------------------ */

/* Where outputs made by a call live: with the first input on a device,
 * there too, in its managed mode (a software-managed input gives a
 * software-managed output even where the host computes); else the host.
 * False for the host. */
static bool device_of_inputs(const call *c, gts_managed *managed)
{
    for (int k = 0; k < c->nin; ++k) {
        if (!c->operands[k].storage)
            continue;
        const gts_buffer *buffer = c->storages[k].buffer;
        if (gts_buffer_device_kind(buffer) == GTS_DEVICE_CPU)
            continue;
        *managed = gts_storage_managed(&c->storages[k]);
        return true;
    }
    return false;
}

/* The dtype NumPy gives the result of `function`, as a storage's: a
 * TypeError that says it is the result's dtype where storages hold no such
 * elements (object, datetime64, a byte order not the machine's, a
 * subarray). */
static int result_dtype(PyObject *function, PyObject *dtype_obj, gtpy_dtype *dtype)
{
    if (gtpy_dtype_parse(dtype_obj, dtype) == 0 && dtype->nsub == 0)
        return 0;
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))
        return -1;
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "%S: the result's dtype, %R, is not one a storage holds (storages hold bool, "
                 "ints, floats and complex numbers in the machine's byte order); compute on "
                 "np.asarray(...) for such a result",
                 function, dtype_obj);
    return -1;
}

/* A new storage for output k, of the result's dims and the parameters seed
 * 001 infers from the inputs. */
static int allocate_output(call *c, int k, PyObject *dtype_obj)
{
    gtpy_dtype dtype;
    gts_storage_spec spec;
    gts_error err;
    if (result_dtype(c->ufunc, dtype_obj, &dtype) < 0)
        return -1;
    gts_managed managed = GTS_MANAGED_GT4PY;
    bool on_device = device_of_inputs(c, &managed) || c->on_device;
    if (gts_broadcast_output_spec(c->nin, c->operands, &c->result, dtype.base,
                                  on_device ? GTS_DEVICE_GPU : GTS_DEVICE_CPU, &spec, &err) != 0)
        return gtpy_raise(&err);
    spec.managed = managed;
    PyObject *out = gtpy_storage_create(&spec, 0, NULL);
    if (!out)
        return -1;
    gtpy_storage_load(out, &c->storages[k]);
    c->objs[k] = c->made[k] = out;
    c->operands[k] = (gts_operand){&c->storages[k], 0, NULL};
    for (int p = 0; p < c->result.ndim; ++p)
        c->result.axis[k][p] = (int8_t)p;
    return 0;
}

/* ---- the call ----------------------------------------------------------------------------- */

/* Only what call_release reads is cleared: the storages and shapes are
 * written before they are read (clearing them all cost microseconds). */
static void call_init(call *c, PyObject *ufunc)
{
    memset(c->objs, 0, sizeof c->objs);
    memset(c->arrays, 0, sizeof c->arrays);
    memset(c->made, 0, sizeof c->made);
    memset(c->views, 0, sizeof c->views);
    memset(c->host_outs, 0, sizeof c->host_outs);
    c->ufunc = ufunc;
    c->kwargs = NULL;
    c->nin = c->nout = c->nops = 0;
    c->has_where = c->on_device = c->interface_outs = false;
}

static void call_release(call *c)
{
    for (int k = 0; k < c->nops + c->nout; ++k) { /* (no operand is stored beyond) */
        Py_CLEAR(c->arrays[k]);
        Py_CLEAR(c->made[k]);
        Py_CLEAR(c->views[k]);
        Py_CLEAR(c->host_outs[k]);
        if (c->interface_outs) {
            Py_CLEAR(c->interfaces[k]);
            Py_CLEAR(c->entries[k]);
            Py_CLEAR(c->staged[k]);
        }
    }
    Py_CLEAR(c->kwargs);
}

/* Another participant of NEP 13 (xarray, dask, ...): it decides. */
static bool defers(PyObject *obj)
{
    if (!obj || gtpy_is_storage(obj) || is_scalar(obj) || PyList_Check(obj) ||
        PyTuple_Check(obj) || gtpy_is_cuda_array(obj)) /* a CUDA array: an operand on the GPU */
        return false;
    PyObject *ndarray_ufunc = PyObject_GetAttr(gtpy_numpy("ndarray"), name(NAME_UFUNC));
    PyObject *own = PyObject_GetAttr((PyObject *)Py_TYPE(obj), name(NAME_UFUNC));
    PyErr_Clear();
    bool other = own && own != ndarray_ufunc;
    Py_XDECREF(own);
    Py_XDECREF(ndarray_ufunc);
    return other;
}

static int read_int_attr(PyObject *obj, int which, int *out)
{
    PyObject *value = PyObject_GetAttr(obj, name(which));
    long v = value ? PyLong_AsLong(value) : -1;
    Py_XDECREF(value);
    if (v < 0 || v > MAX_OPS / 2 - 1) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%S: %S is beyond what storages take", obj,
                         name(which));
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A ufunc's nin and nout. NumPy's ufuncs cannot change them: read once
 * for the last few seen, each kept alive so that its address names it. */
static int ufunc_arity(PyObject *ufunc, int *nin, int *nout)
{
    enum { SEEN = 8 };
    static struct {
        PyObject *ufunc;
        int nin, nout;
    } seen[SEEN];
    static int next;
    for (int i = 0; i < SEEN; ++i)
        if (seen[i].ufunc == ufunc) {
            *nin = seen[i].nin;
            *nout = seen[i].nout;
            return 0;
        }
    if (read_int_attr(ufunc, NAME_NIN, nin) < 0 || read_int_attr(ufunc, NAME_NOUT, nout) < 0)
        return -1;
    if (Py_TYPE(ufunc) == (PyTypeObject *)gtpy_numpy("ufunc")) {
        Py_XSETREF(seen[next].ufunc, Py_NewRef(ufunc));
        seen[next].nin = *nin;
        seen[next].nout = *nout;
        next = (next + 1) % SEEN;
    }
    return 0;
}

/* Output k given with out=: a storage, an ndarray, or an object with a
 * data interface (load_data_interface). */
static int load_output(call *c, int k, PyObject *obj)
{
    if (gtpy_is_storage(obj) || PyObject_TypeCheck(obj, (PyTypeObject *)gtpy_numpy("ndarray")))
        return load_operand(c, k, obj);
    if (!c->interface_outs) {
        memset(c->interfaces, 0, sizeof c->interfaces);
        memset(c->entries, 0, sizeof c->entries);
        memset(c->staged, 0, sizeof c->staged);
        c->interface_outs = true;
    }
    c->objs[k] = obj; /* until the storage over its entry takes its place */
    int interface = load_data_interface(c, k, obj);
    if (interface != 0)
        return interface < 0 ? -1 : 0;
    c->objs[k] = NULL;
    PyErr_Format(PyExc_TypeError, "out: expected storages, ndarrays, objects with "
                 "__gt_data_interface__ or None, got %.200R", (PyObject *)Py_TYPE(obj));
    return -1;
}

/* The outputs given with out=: each one load_output takes, or None. */
static int load_outputs(call *c, PyObject *out)
{
    if (!out)
        return 0;
    if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != c->nout) {
        PyErr_Format(PyExc_ValueError, "out: expected a tuple of %d entries, got %.200R", c->nout,
                     out);
        return -1;
    }
    for (int i = 0; i < c->nout; ++i) {
        PyObject *obj = PyTuple_GET_ITEM(out, i);
        if (obj != Py_None && load_output(c, c->nops + i, obj) < 0)
            return -1;
    }
    return 0;
}

/* Reads the call: inputs, `where` (an operand unless a plain True), out. */
static int call_load(call *c, PyObject *ufunc, PyObject *inputs, PyObject *kwargs)
{
    call_init(c, ufunc);
    /* a copy, without out and where: none where no keyword was given */
    if (kwargs && PyDict_GET_SIZE(kwargs) > 0 && !(c->kwargs = PyDict_Copy(kwargs)))
        return -1;
    if (ufunc_arity(ufunc, &c->nin, &c->nout) < 0)
        return -1;
    if (PyTuple_GET_SIZE(inputs) != c->nin) {
        PyErr_Format(PyExc_TypeError, "%S: takes %d inputs, got %zd", ufunc, c->nin,
                     PyTuple_GET_SIZE(inputs));
        return -1;
    }
    PyObject *out = Py_XNewRef(keyword(c->kwargs, NAME_OUT));
    PyObject *where = Py_XNewRef(keyword(c->kwargs, NAME_WHERE));
    if ((out && PyDict_DelItem(c->kwargs, name(NAME_OUT)) < 0) ||
        (where && PyDict_DelItem(c->kwargs, name(NAME_WHERE)) < 0)) {
        Py_XDECREF(out);
        Py_XDECREF(where);
        return -1;
    }
    if (where == Py_None) { /* NumPy takes it as no element and leaves the output unwritten */
        PyErr_Format(PyExc_TypeError, "%S: where: expected True or an array of bool, got None",
                     ufunc);
        Py_XDECREF(out);
        Py_DECREF(where);
        return -1;
    }
    c->has_where = where && where != Py_True;
    c->nops = c->nin + c->has_where;
    int rc = 0;
    for (int k = 0; rc == 0 && k < c->nin; ++k)
        rc = load_operand(c, k, PyTuple_GET_ITEM(inputs, k));
    if (rc == 0 && c->has_where)
        rc = load_operand(c, c->nin, where);
    if (rc == 0)
        rc = load_outputs(c, out);
    Py_XDECREF(out);
    Py_XDECREF(where);
    return rc;
}

/* Lines the operands up; the first output storage, if any, fixes the dims. */
static int call_broadcast(call *c)
{
    const gts_storage *fixed = NULL;
    int n = c->nops;
    for (int i = 0; i < c->nout; ++i) {
        int k = c->nops + i;
        if (c->objs[k])
            n = k + 1;
        if (!fixed && c->objs[k] && c->operands[k].storage)
            fixed = &c->storages[k];
    }
    gts_operand ops[MAX_OPS];
    for (int k = 0; k < n; ++k) /* absent outputs take part as scalars */
        ops[k] = c->objs[k] ? c->operands[k] : (gts_operand){NULL, 0, NULL};
    gts_error err;
    if (gts_broadcast_operands(n, ops, fixed, &c->result, &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

static int call_allocate(call *c)
{
    bool missing = false;
    for (int i = 0; i < c->nout; ++i)
        missing = missing || !c->objs[c->nops + i];
    if (!missing)
        return 0;
    PyObject *dtypes = resolve_dtypes(c);
    int rc = dtypes ? 0 : -1;
    for (int i = 0; rc == 0 && i < c->nout; ++i)
        if (!c->objs[c->nops + i])
            rc = allocate_output(c, c->nops + i, PyTuple_GET_ITEM(dtypes, c->nin + i));
    Py_XDECREF(dtypes);
    return rc;
}

/* The keywords' names of a call: out (unless an assignment), where, then
 * the other keywords in kwargs' order. Without other keywords, the same
 * tuple each time. A new reference. */
static PyObject *keyword_names(const call *c, bool with_out, bool with_where)
{
    static PyObject *fixed[2][2];
    PyObject **known = &fixed[with_out][with_where];
    Py_ssize_t extra = c->kwargs ? PyDict_GET_SIZE(c->kwargs) : 0;
    if (extra == 0 && *known)
        return Py_NewRef(*known);
    PyObject *names = PyTuple_New(with_out + with_where + extra);
    Py_ssize_t n = 0, pos = 0;
    PyObject *key, *value;
    if (names && with_out)
        PyTuple_SET_ITEM(names, n++, Py_NewRef(name(NAME_OUT)));
    if (names && with_where)
        PyTuple_SET_ITEM(names, n++, Py_NewRef(name(NAME_WHERE)));
    while (names && extra && PyDict_Next(c->kwargs, &pos, &key, &value))
        PyTuple_SET_ITEM(names, n++, Py_NewRef(key));
    if (names && extra == 0)
        *known = Py_NewRef(names);
    return names;
}

/* function(*views, out=views[, where=view], **kwargs), or for an
 * assignment (one input, the value; one output, the target)
 * function(target, value, **kwargs): NumPy's copyto or the engine's. One
 * vectorcall: a dict of keywords would cost its making and NumPy's
 * unpacking of it. */
static int invoke(call *c, PyObject *function, bool with_where, bool assign)
{
    /* NumPy's ufuncs take a dozen keywords: more is an error they report */
    enum { MAX_KEYWORDS = 32 };
    PyObject *stack[MAX_OPS + MAX_KEYWORDS];
    Py_ssize_t extra = c->kwargs ? PyDict_GET_SIZE(c->kwargs) : 0;
    if (extra > MAX_KEYWORDS - 2) {
        PyErr_Format(PyExc_TypeError, "%S: %zd keyword arguments are more than any ufunc takes",
                     c->ufunc, extra);
        return -1;
    }
    PyObject *outs = assign ? NULL : PyTuple_New(c->nout);
    PyObject *names = assign || outs ? keyword_names(c, !assign, with_where) : NULL;
    if (!names) {
        Py_XDECREF(outs);
        return -1;
    }
    int n = 0;
    if (assign) {
        stack[n++] = c->views[1];
        stack[n++] = c->views[0];
    }
    for (int k = 0; !assign && k < c->nin; ++k)
        stack[n++] = c->views[k];
    size_t nargs = (size_t)n;
    for (int i = 0; !assign && i < c->nout; ++i)
        PyTuple_SET_ITEM(outs, i, Py_NewRef(c->views[c->nops + i]));
    if (!assign)
        stack[n++] = outs;
    if (with_where)
        stack[n++] = c->views[c->nin];
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (extra && PyDict_Next(c->kwargs, &pos, &key, &value))
        stack[n++] = value;
    PyObject *result = assign ? PyObject_Vectorcall(function, stack, nargs, names)
                              : gtpy_numpy_loop_call(function, stack, nargs, names);
    Py_DECREF(names);
    Py_XDECREF(outs);
    Py_XDECREF(result);
    return result ? 0 : -1;
}

/* ---- NumPy's bugs routed around (docs/storage.md) -------------------------------------------- */

/* Whether the Python int `value` is an element of the integer dtype. */
static bool int_fits(PyObject *value, gts_dtype dtype)
{
    int bits = 8 * dtype.itemsize, overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) { /* beyond int64: only uint64 may hold it */
        PyErr_Clear();
        bool fits = overflow > 0 && dtype.kind == GTS_KIND_UINT && bits == 64 &&
                    !(PyLong_AsUnsignedLongLong(value) == (unsigned long long)-1 &&
                      PyErr_Occurred());
        PyErr_Clear();
        return fits;
    }
    if (dtype.kind == GTS_KIND_UINT)
        return v >= 0 && (bits == 64 || v < (1LL << bits));
    return bits == 64 || (v >= -(1LL << (bits - 1)) && v < (1LL << (bits - 1)));
}

/* The dtype of input j where it is an array (a storage or an ndarray). */
static bool input_dtype(const call *c, int j, gts_dtype *out)
{
    if (c->operands[j].storage) {
        *out = c->storages[j].dtype;
        return true;
    }
    PyObject *dtype = c->arrays[j] ? PyObject_GetAttrString(c->arrays[j], "dtype") : NULL;
    gtpy_dtype parsed;
    bool known = dtype && gtpy_dtype_parse(dtype, &parsed) == 0 && parsed.nsub == 0;
    Py_XDECREF(dtype);
    PyErr_Clear(); /* (a dtype storages do not hold: no integer) */
    if (known)
        *out = parsed.base;
    return known;
}

/* NumPy 2.4.6's comparisons of an integer array with a Python int outside
 * its dtype's range (np.less(int8, 300)) crash in the masked loop of
 * where=. Whether this call is one. */
static bool masked_comparison_crashes(const call *c)
{
    static const char *const names[] = {"equal", "not_equal", "less", "less_equal", "greater",
                                        "greater_equal"};
    bool comparison = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        comparison = comparison || c->ufunc == gtpy_numpy(names[i]);
    for (int k = 0; comparison && k < c->nin; ++k) {
        PyObject *value = c->objs[k];
        if (!PyLong_Check(value) || PyBool_Check(value))
            continue;
        gts_dtype dtype;
        for (int j = 0; j < c->nin; ++j)
            if (input_dtype(c, j, &dtype) &&
                (dtype.kind == GTS_KIND_INT || dtype.kind == GTS_KIND_UINT) &&
                !int_fits(value, dtype))
                return true;
    }
    return false;
}

/* NumPy 2.4.6 with where=, an output that overlaps an input and a cast
 * writes elements the mask leaves out (np.less(s, s[::-1], out=s,
 * where=m)): such inputs are copied first. */
static int copy_overlapping_inputs(call *c)
{
    PyObject *may_share = gtpy_numpy("may_share_memory"), *copy = gtpy_numpy("array");
    if (!may_share || !copy)
        return -1;
    for (int k = 0; k < c->nin; ++k) {
        bool overlaps = false;
        for (int j = c->nops; !overlaps && j < c->nops + c->nout; ++j) {
            if (!c->objs[j] || is_scalar(c->views[k]))
                continue;
            PyObject *answer = PyObject_CallFunctionObjArgs(may_share, c->views[k], c->views[j],
                                                            NULL);
            int truth = answer ? PyObject_IsTrue(answer) : -1;
            Py_XDECREF(answer);
            if (truth < 0)
                return -1;
            overlaps = truth;
        }
        if (overlaps) {
            PyObject *copied = PyObject_CallOneArg(copy, c->views[k]);
            if (!copied)
                return -1;
            Py_SETREF(c->views[k], copied);
        }
    }
    return 0;
}

/* The output storages on `side` (those the engine reaches, on the device)
 * held as writes in flight (gtstore/sync.h). */
static int hold_outputs(call *c, gtpy_holds *holds, gts_side side, gts_stream stream)
{
    gtpy_holds_init(holds);
    for (int k = c->nops; k < c->nops + c->nout; ++k)
        if (c->operands[k].storage && !c->host_outs[k])
            gtpy_holds_add(holds, &c->storages[k]);
    return gtpy_holds_begin(holds, side, stream);
}

/* where= on the device: each output computed whole into a new array, then
 * copied where the mask holds (CuPy's ufuncs take no where=). */
static int invoke_where(call *c, PyObject *function)
{
    PyObject *targets[MAX_OPS / 2] = {NULL};
    int rc = 0;
    for (int i = 0; rc == 0 && i < c->nout; ++i) {
        PyObject *temporary = gtpy_engine_empty_like(&c->engine, c->views[c->nops + i]);
        if (!temporary)
            rc = -1;
        else
            targets[i] = c->views[c->nops + i], c->views[c->nops + i] = temporary;
    }
    rc = rc == 0 ? invoke(c, function, false, false) : rc;
    PyObject *copyto = rc == 0 ? gtpy_engine_function(&c->engine, gtpy_numpy("copyto")) : NULL;
    /* an array of the engine even for a scalar mask (where=np.True_) */
    PyObject *where = copyto ? gtpy_engine_asarray(&c->engine, c->views[c->nin]) : NULL;
    PyObject *mask = where ? PyDict_New() : NULL;
    rc = mask && PyDict_SetItem(mask, name(NAME_WHERE), where) == 0 ? rc : -1;
    Py_XDECREF(where);
    for (int i = 0; rc == 0 && i < c->nout; ++i) {
        PyObject *args = PyTuple_Pack(2, targets[i], c->views[c->nops + i]);
        PyObject *done = args ? PyObject_Call(copyto, args, mask) : NULL;
        rc = done ? 0 : -1;
        Py_XDECREF(done);
        Py_XDECREF(args);
    }
    Py_XDECREF(mask);
    Py_XDECREF(copyto);
    for (int i = 0; i < c->nout; ++i) /* the views again the outputs' */
        if (targets[i])
            Py_SETREF(c->views[c->nops + i], targets[i]);
    return rc;
}

/* On the host: NumPy computes on views of the operands' memory, around
 * two bugs of NumPy's where= (docs/storage.md): an input that overlaps an
 * output is copied first, and a comparison whose masked loop would crash
 * computes whole into temporaries that the mask then selects from, as on
 * the device. */
static int run_on_host(call *c, bool assign)
{
    gtpy_holds holds;
    for (int k = 0; k < c->nops + c->nout; ++k)
        if (!(c->views[k] = operand_view(c, k)))
            return -1;
    bool around = c->has_where && !assign && masked_comparison_crashes(c);
    if ((c->has_where && !assign && copy_overlapping_inputs(c) < 0) ||
        (around && gtpy_engine_get(gts_device_host(), &c->engine) < 0) ||
        hold_outputs(c, &holds, GTS_SIDE_HOST, NULL) < 0)
        return -1;
    int rc = around ? invoke_where(c, c->ufunc) : invoke(c, c->ufunc, c->has_where, assign);
    gtpy_holds_end(&holds);
    return rc;
}

/* On the device: the engine computes (its function of the ufunc's name),
 * then the outputs in host memory receive the result. */
static int run_on_device(call *c, bool assign)
{
    gtpy_holds holds;
    for (int k = 0; k < c->nops + c->nout; ++k)
        if (device_operand_view(c, k) < 0)
            return gtpy_engine_finish(&c->engine), -1;
    PyObject *function = gtpy_engine_function(&c->engine, c->ufunc);
    int rc = function && (assign || gtpy_engine_check_keywords(&c->engine, c->ufunc,
                                                               c->kwargs) == 0)
                 ? 0
                 : -1;
    bool held = rc == 0 && hold_outputs(c, &holds, GTS_SIDE_DEVICE, c->engine.stream) == 0;
    rc = !held                ? -1
         : c->has_where ? invoke_where(c, function)
                        : invoke(c, function, false, assign);
    Py_XDECREF(function);
    if (gtpy_engine_finish(&c->engine) < 0)
        rc = -1;
    if (held) /* the writes end once their work is recorded (gtstore/sync.h) */
        gtpy_holds_end(&holds);
    for (int k = c->nops; rc == 0 && k < c->nops + c->nout; ++k)
        if (c->host_outs[k])
            rc = gtpy_engine_to_host(&c->engine, c->host_outs[k], c->views[k]);
    return rc;
}

static int call_run(call *c, bool assign)
{
    return c->on_device ? run_on_device(c, assign) : run_on_host(c, assign);
}

/* Output k as the call returns it: the object given (for a data
 * interface, not the storage over its entry), or the one made. */
static PyObject *output(const call *c, int k)
{
    return Py_NewRef(c->interface_outs && c->interfaces[k] ? c->interfaces[k] : c->objs[k]);
}

/* The outputs: one object, or a tuple of them. */
static PyObject *call_outputs(const call *c)
{
    if (c->nout == 1)
        return output(c, c->nops);
    PyObject *outs = PyTuple_New(c->nout);
    for (int i = 0; outs && i < c->nout; ++i)
        PyTuple_SET_ITEM(outs, i, output(c, c->nops + i));
    return outs;
}

/* The unlabelled out= in device memory given their host stand-ins. */
static int unstage_outputs(const call *c)
{
    for (int k = c->nops; k < c->nops + c->nout; ++k)
        if (c->staged[k] && PyObject_SetItem(c->staged[k], Py_Ellipsis, c->arrays[k]) < 0)
            return -1;
    return 0;
}

/* GDP-3: "touch" is called on the objects whose memory changed, after all
 * computations completed: each out= entry's once, after the run. Every
 * one is touched; the first exception (the object's own) is raised. */
static int touch_outputs(const call *c)
{
    PyObject *error = NULL;
    for (int k = c->nops; k < c->nops + c->nout; ++k) {
        PyObject *touch = NULL, *done = NULL;
        if (!c->entries[k])
            continue;
        if (gtpy_entry_callback(c->entries[k], "touch", &touch) == 0)
            done = touch ? PyObject_CallNoArgs(touch) : Py_NewRef(Py_None);
        Py_XDECREF(touch);
        Py_XDECREF(done);
        if (!done && !error)
            error = gtpy_error_take();
        else if (!done)
            PyErr_Clear();
    }
    gtpy_error_put(error);
    return error ? -1 : 0;
}

/* target[...] = value by dims: the same steps as a ufunc with out=target,
 * with copyto (NumPy's assignment casting) as the operation. */
int gtpy_storage_assign_by_dims(PyObject *target, PyObject *value)
{
    call c;
    call_init(&c, gtpy_numpy("copyto"));
    c.nin = c.nops = c.nout = 1;
    c.kwargs = Py_BuildValue("{s:s}", "casting", "unsafe");
    int rc = c.ufunc && c.kwargs && load_operand(&c, 0, value) == 0 &&
                     load_operand(&c, 1, target) == 0 && choose_device(&c) == 0 &&
                     call_broadcast(&c) == 0 && call_run(&c, true) == 0
                 ? 0
                 : -1;
    call_release(&c);
    return rc;
}

static PyObject *ufunc_call(PyObject *ufunc, PyObject *inputs, PyObject *kwargs)
{
    call c;
    PyObject *result = NULL;
    if (call_load(&c, ufunc, inputs, kwargs) == 0 && choose_device(&c) == 0 &&
        call_broadcast(&c) == 0 && call_allocate(&c) == 0 && call_run(&c, false) == 0 &&
        (!c.interface_outs || (unstage_outputs(&c) == 0 && touch_outputs(&c) == 0)))
        result = call_outputs(&c);
    call_release(&c);
    return result;
}

/* An operand a computation reads: a storage as an array of the engine `e`
 * (its device memory in place, else its host values copied there) or,
 * without an engine, as host values (a host copy of memory without a
 * host side); another array-like moved to a CUDA engine's device; anything
 * else (indices, scalars) as it is. */
static PyObject *read_operand(PyObject *obj, gtpy_engine *e)
{
    bool storage = gtpy_is_storage(obj);
    if (storage && e && gtpy_engine_reaches(e, gts_buffer_device(STORAGE(obj)->buffer)) &&
        !gts_buffer_mirrored(STORAGE(obj)->buffer))
        return gtpy_engine_storage_view(e, obj, 0, NULL, NULL, false, false);
    if (storage && !e)
        return gtpy_has_host_side(STORAGE(obj)->buffer) ? gtpy_storage_ndarray(obj, false)
                                                         : gtpy_storage_host_values(obj);
    if (!e || (!storage && (!e->cuda || PyTuple_Check(obj) || is_scalar(obj))))
        return Py_NewRef(obj);
    PyObject *host = storage ? read_operand(obj, NULL) : Py_NewRef(obj);
    PyObject *array = host ? gtpy_engine_asarray(e, host) : NULL;
    Py_XDECREF(host);
    return array;
}

/* The storages among `objs` (a storage, or a tuple of objects), whose
 * host sides NumPy writes, held while it does (gtstore/sync.h). */
static int hold_host_writes(gtpy_holds *holds, PyObject *objs)
{
    gtpy_holds_init(holds);
    Py_ssize_t n = objs && PyTuple_Check(objs) ? PyTuple_GET_SIZE(objs) : 1;
    for (Py_ssize_t i = 0; objs && i < n; ++i) {
        PyObject *obj = PyTuple_Check(objs) ? PyTuple_GET_ITEM(objs, i) : objs;
        if (gtpy_is_storage(obj)) {
            gts_storage g;
            gtpy_storage_load(obj, &g);
            gtpy_holds_add(holds, &g);
        }
    }
    return gtpy_holds_begin(holds, GTS_SIDE_HOST, NULL);
}

/* ---- reductions ------------------------------------------------------------------------ */

/* The positional parameters of a reduction, after the array: NumPy's. A
 * reduction drops the axes it reduces; the others (`keeps_dims`) give a
 * result of the array's dims: along an axis (accumulate, cumsum, cumprod,
 * argsort), which `flat_without_axis` ones flatten to NumPy's 1-d result
 * where axis is None, or elementwise (round). `indices` (argmin, argmax) are
 * NumPy's result, not a field. A result that `assigns` is computed, then
 * assigned to the new storage: argsort has no out=, and NumPy's round of
 * integers to decimals < 0 fails with out= of their dtype. */
typedef struct reduction {
    const char *name;
    const char *params[6];
    bool keeps_dims, flat_without_axis, indices, assigns;
} reduction;

static const reduction REDUCTIONS[] = {
    {"sum", {"axis", "dtype", "out", "keepdims", "initial", "where"}, false, false, false, false},
    {"prod", {"axis", "dtype", "out", "keepdims", "initial", "where"}, false, false, false, false},
    {"mean", {"axis", "dtype", "out", "keepdims", "where"}, false, false, false, false},
    {"std", {"axis", "dtype", "out", "ddof", "keepdims", "where"}, false, false, false, false},
    {"var", {"axis", "dtype", "out", "ddof", "keepdims", "where"}, false, false, false, false},
    {"min", {"axis", "out", "keepdims", "initial", "where"}, false, false, false, false},
    {"max", {"axis", "out", "keepdims", "initial", "where"}, false, false, false, false},
    {"any", {"axis", "out", "keepdims", "where"}, false, false, false, false},
    {"all", {"axis", "out", "keepdims", "where"}, false, false, false, false},
    {"argmin", {"axis", "out", "keepdims"}, false, false, true, false},
    {"argmax", {"axis", "out", "keepdims"}, false, false, true, false},
    {"reduce", {"axis", "dtype", "out", "keepdims", "initial", "where"}, false, false, false,
     false},
    {"accumulate", {"axis", "dtype", "out"}, true, false, false, false},
    {"cumsum", {"axis", "dtype", "out"}, true, true, false, false},
    {"cumprod", {"axis", "dtype", "out"}, true, true, false, false},
    {"argsort", {"axis", "kind", "order"}, true, true, false, true},
    {"round", {"decimals", "out"}, true, false, false, true},
};

/* Whether `r` takes `param`: round takes no axis= (nor does its dtype
 * probe). */
static bool takes(const reduction *r, const char *param)
{
    for (int i = 0; i < 6 && r->params[i]; ++i)
        if (strcmp(r->params[i], param) == 0)
            return true;
    return false;
}

/* Each reduction's parameters for the one parser (args.c), declared on
 * first use from the table. */
#define NREDUCTIONS (sizeof REDUCTIONS / sizeof *REDUCTIONS)
static gtpy_signature reduction_parsers[NREDUCTIONS];

static gtpy_signature *reduction_parser(const reduction *r)
{
    gtpy_signature *sig = &reduction_parsers[r - REDUCTIONS];
    if (!sig->names) {
        int n = 0;
        while (n < 6 && r->params[n])
            ++n;
        *sig = (gtpy_signature){r->name, r->params, n, n, 0, 0, NULL, NULL};
    }
    return sig;
}

/* The arguments after the first `first` as a new dict of keywords by name:
 * the parameters by position or keyword, and the keywords NumPy takes
 * besides them. */
static PyObject *keywords_of(const reduction *r, PyObject *args, Py_ssize_t first,
                             PyObject *kwargs)
{
    gtpy_signature *sig = reduction_parser(r);
    PyObject *positional = PyTuple_GetSlice(args, first, PY_SSIZE_T_MAX), *values[6];
    PyObject *kw = NULL;
    if (positional && gtpy_parse_tuple_rest(sig, positional, kwargs, values, &kw) == 0)
        for (int i = 0; kw && i < sig->nnames; ++i)
            if (values[i] && PyDict_SetItemString(kw, r->params[i], values[i]) < 0)
                Py_CLEAR(kw);
    Py_XDECREF(positional);
    return kw;
}

/* axis= (None: all; default_all says what absent means) into one flag per
 * axis, and in `kw` as the axis numbers NumPy takes (labels resolved,
 * axes.h). */
static int reduced_axes(const gts_storage *g, PyObject *kw, bool default_all, bool *reduced)
{
    PyObject *axis = PyDict_GetItemString(kw, "axis");
    for (int a = 0; a < g->ndim; ++a)
        reduced[a] = axis ? axis == Py_None : default_all;
    if (!axis && !default_all && g->ndim > 0)
        reduced[0] = true; /* ufunc.reduce: axis=0 */
    if (!axis || axis == Py_None)
        return 0;
    PyObject *numbers = gtpy_axis_argument(axis, g, "axis");
    if (!numbers || PyDict_SetItemString(kw, "axis", numbers) < 0) {
        Py_XDECREF(numbers);
        return -1;
    }
    Py_ssize_t n = PyTuple_Check(numbers) ? PyTuple_GET_SIZE(numbers) : 1;
    for (Py_ssize_t i = 0; i < n; ++i)
        reduced[PyLong_AsLong(PyTuple_Check(numbers) ? PyTuple_GET_ITEM(numbers, i) : numbers)] =
            true;
    Py_DECREF(numbers);
    return 0;
}

/* NumPy's answer for a 1 x 1 probe of `dtype`: function(probe[, axis=0][,
 * dtype=wanted]).dtype (an array, also where the result's elements are
 * Python objects; axis=0 where the function takes an axis). */
static PyObject *probe_dtype(PyObject *function, PyObject *dtype, PyObject *wanted, bool axis)
{
    PyObject *probe = PyObject_CallFunction(gtpy_numpy("zeros"), "(ii)O", 1, 1, dtype);
    PyObject *probe_kw = !probe ? NULL : axis ? Py_BuildValue("{s:i}", "axis", 0) : PyDict_New();
    PyObject *args = probe_kw && (!wanted || PyDict_SetItemString(probe_kw, "dtype", wanted) == 0)
                         ? PyTuple_Pack(1, probe)
                         : NULL;
    PyObject *value = args ? PyObject_Call(function, args, probe_kw) : NULL;
    PyObject *result = value ? PyObject_GetAttrString(value, "dtype") : NULL;
    Py_XDECREF(value);
    Py_XDECREF(args);
    Py_XDECREF(probe_kw);
    Py_XDECREF(probe);
    return result;
}

/* The dtype of `function`'s result for the keywords `kw` (only dtype=
 * matters) on elements of `g`'s dtype, remembered per function and dtypes
 * (asking NumPy costs microseconds). */
static PyObject *reduction_dtype(const reduction *r, PyObject *function, PyObject *kw,
                                 const gts_storage *g)
{
    static PyObject *cache;
    PyObject *wanted = PyDict_GetItemString(kw, "dtype");
    PyObject *dtype = gtpy_dtype_object(g->dtype);
    PyObject *key = dtype ? PyTuple_Pack(3, function, dtype, wanted ? wanted : Py_None) : NULL;
    if (!cache && key && !(cache = PyDict_New()))
        Py_CLEAR(key);
    PyObject *result = key ? PyDict_GetItemWithError(cache, key) : NULL; /* borrowed */
    if (result)
        Py_INCREF(result);
    else if (key && !PyErr_Occurred() &&
             (result = probe_dtype(function, dtype, wanted, takes(r, "axis")))) {
        if (PyDict_GET_SIZE(cache) > 4096)
            PyDict_Clear(cache); /* a bound, for programs that make dtypes */
        if (PyDict_SetItem(cache, key, result) < 0)
            Py_CLEAR(result);
    }
    Py_XDECREF(key);
    Py_XDECREF(dtype);
    return result;
}

/* A new storage for the result of a reduction of `g`, of the dims `result`
 * gives (gts_broadcast_reduce), the parameters gtstore/broadcast.h infers
 * from `g` and the dtype `dtype_obj`. */
static PyObject *reduced_storage(PyObject *function, const gts_storage *g,
                                 const gts_broadcast *result, PyObject *dtype_obj)
{
    gts_storage_spec spec;
    gts_error err;
    gtpy_dtype dtype;
    gts_operand operand = {g, 0, NULL};
    if (result_dtype(function, dtype_obj, &dtype) < 0)
        return NULL;
    if (gts_broadcast_output_spec(1, &operand, result, dtype.base,
                                  gts_buffer_device_kind(g->buffer), &spec, &err) != 0)
        return gtpy_raise_null(&err);
    spec.managed = gts_storage_managed(g);
    return gtpy_storage_create(&spec, 0, NULL);
}

/* function(view, **kw) writing straight into a new storage of the result
 * (no temporary): its memory on the side the reduction reads, as out=, or
 * where `r` assigns, NumPy's result assigned to it. */
static PyObject *reduce_into_storage(const reduction *r, const gts_storage *g,
                                     const gts_broadcast *result, PyObject *function,
                                     PyObject *view, PyObject *kw, gtpy_engine *e)
{
    PyObject *dtype = reduction_dtype(r, function, kw, g);
    PyObject *storage = dtype ? reduced_storage(function, g, result, dtype) : NULL;
    Py_XDECREF(dtype);
    PyObject *target = !storage                           ? NULL
                       : gtpy_has_host_side(g->buffer) ? gtpy_storage_ndarray(storage, true)
                       : gtpy_engine_storage_view(e, storage, 0, NULL, NULL, true, false);
    PyObject *args = target && (r->assigns || PyDict_SetItemString(kw, "out", target) == 0)
                         ? PyTuple_Pack(1, view)
                         : NULL;
    PyObject *value = args ? PyObject_Call(function, args, kw) : NULL;
    if (value && r->assigns && PyObject_SetItem(target, Py_Ellipsis, value) < 0)
        Py_CLEAR(value);
    Py_XDECREF(args);
    Py_XDECREF(target);
    if (!value)
        Py_CLEAR(storage);
    Py_XDECREF(value);
    return storage;
}

/* out= of a reduction, a storage: its axes along the result's dims (by
 * name), written on the host, or with an engine `e` that reaches its memory
 * (a GPUStorage's) on the device; it must have exactly those dims and
 * extents. */
static PyObject *reduction_out_view(PyObject *out, const gts_broadcast *result,
                                    gtpy_engine *e)
{
    gts_storage o;
    gts_error err;
    int64_t along[GTS_MAX_NDIM];
    gtpy_storage_load(out, &o);
    if (gts_broadcast_fit_out(result, &o, along, &err) != 0)
        return gtpy_raise_null(&err);
    Py_ssize_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    for (int p = 0; p < result->ndim; ++p) {
        shape[p] = (Py_ssize_t)result->shape[p];
        strides[p] = (Py_ssize_t)along[p];
    }
    if (e && !gtpy_has_host_side(o.buffer))
        return gtpy_engine_storage_view(e, out, result->ndim, shape, strides, true, false);
    if (gtpy_storage_host_access(&o, true) < 0)
        return NULL;
    return gtpy_numpy_capi_array(o.dtype, result->ndim, shape, strides, gts_storage_data(&o),
                                 o.readonly, out);
}

/* where= of a reduction, a storage: on the host, its axes along the
 * reduced storage's dims (stride 0 where it broadcasts), as for a ufunc. */
static PyObject *reduction_where_view(PyObject *where, PyObject *target)
{
    call c;
    gts_error err;
    gts_storage t;
    call_init(&c, NULL);
    c.nin = c.nops = 1;
    gtpy_storage_load(target, &t);
    PyObject *view = NULL;
    if (load_operand(&c, 0, where) == 0) {
        if (gts_broadcast_operands(1, c.operands, &t, &c.result, &err) != 0)
            gtpy_raise(&err);
        else
            view = storage_view(&c, 0, false);
    }
    call_release(&c);
    return view;
}

/* Replaces the storage kw[name] by `view` (a new reference); 0 where there
 * is none. */
static int replace_keyword(PyObject *kw, const char *name, PyObject *view)
{
    int rc = view ? PyDict_SetItemString(kw, name, view) : -1;
    Py_XDECREF(view);
    return rc;
}

/* numpy_function(view of self, **keywords): a reduction along axes of a
 * storage. Its result is a storage of the remaining dims, or NumPy's
 * result where none remain or no field results (argmin, argmax). out= may
 * be a storage (written on the host) or an ndarray. */
static PyObject *reduce_with(PyObject *self, PyObject *function, const reduction *r,
                             PyObject *kw, bool default_all)
{
    gts_storage g;
    gts_broadcast result;
    gts_error err;
    bool reduced[GTS_MAX_NDIM];
    gtpy_storage_load(self, &g);
    PyObject *keep = PyDict_GetItemString(kw, "keepdims");
    PyObject *out = PyDict_GetItemString(kw, "out");
    PyObject *where = PyDict_GetItemString(kw, "where");
    int keepdims = keep ? PyObject_IsTrue(keep) : 0;
    if (keepdims < 0 || reduced_axes(&g, kw, default_all, reduced) < 0)
        return NULL;
    if (r->keeps_dims) /* along an axis, which stays, or elementwise */
        memset(reduced, 0, sizeof reduced);
    if (gts_broadcast_reduce(&g, reduced, keepdims, &result, &err) != 0)
        return gtpy_raise_null(&err);
    if (out && PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1)
        out = PyTuple_GET_ITEM(out, 0); /* ufunc.reduce's form */
    Py_XINCREF(out);
    /* on the device where the storage or an out= storage has no host side
     * (a GPUStorage): the engine reads the one and writes the other there */
    const gts_buffer *device_only = !gtpy_has_host_side(g.buffer) ? g.buffer
                                    : out && gtpy_is_storage(out) &&
                                            !gtpy_has_host_side(STORAGE(out)->buffer)
                                        ? STORAGE(out)->buffer
                                        : NULL;
    gtpy_engine engine, *on_device = device_only ? &engine : NULL;
    int rc = device_only ? gtpy_engine_get(gts_buffer_device(device_only), &engine) : 0;
    if (rc == 0 && out && gtpy_is_storage(out))
        rc = replace_keyword(kw, "out", reduction_out_view(out, &result, on_device));
    if (rc == 0 && where && gtpy_is_storage(where))
        rc = replace_keyword(kw, "where", reduction_where_view(where, self));
    PyObject *view = rc < 0 ? NULL : read_operand(self, on_device);
    bool given = out && out != Py_None;
    bool field = !r->indices;
    PyObject *value = NULL;
    if (view && !given && field && result.ndim > 0) {
        value = reduce_into_storage(r, &g, &result, function, view, kw, on_device);
    } else if (view) {
        gtpy_holds holds; /* an out= storage: written on the host */
        PyObject *args = PyTuple_Pack(1, view);
        if (args && hold_host_writes(&holds, out) == 0) {
            value = PyObject_Call(function, args, kw);
            gtpy_holds_end(&holds);
        }
        Py_XDECREF(args);
    }
    Py_XDECREF(view);
    /* device memory: the reduction's work is recorded on the engine's stream */
    if (on_device && gtpy_engine_finish(on_device) < 0)
        Py_CLEAR(value);
    if (value && given) { /* the storage or array given, not NumPy's view of it */
        Py_DECREF(value);
        return out;
    }
    Py_XDECREF(out);
    return value;
}

/* function(values, **kw) along no axis (cumsum(), argsort(axis=None)):
 * NumPy's 1-d result of the values in C order, read on the host (a copy
 * from a device without host side); an out= storage is written there. */
static PyObject *flat_on_host(PyObject *self, PyObject *function, PyObject *kw)
{
    PyObject *out = PyDict_GetItemString(kw, "out");
    bool storage_out = out && gtpy_is_storage(out);
    Py_XINCREF(out);
    PyObject *values = gtpy_storage_host_values(self);
    PyObject *args = values ? PyTuple_Pack(1, values) : NULL;
    int rc = args ? 0 : -1;
    if (rc == 0 && storage_out)
        rc = replace_keyword(kw, "out", gtpy_storage_ndarray(out, true));
    gtpy_holds holds;
    PyObject *result = NULL;
    if (rc == 0 && hold_host_writes(&holds, storage_out ? out : NULL) == 0) {
        result = PyObject_Call(function, args, kw);
        gtpy_holds_end(&holds);
    }
    if (result && storage_out) /* the storage given, not its view */
        Py_SETREF(result, Py_NewRef(out));
    Py_XDECREF(out);
    Py_XDECREF(args);
    Py_XDECREF(values);
    return result;
}

PyObject *gtpy_storage_reduction(PyObject *self, const char *name, PyObject *args,
                                 PyObject *kwargs)
{
    const reduction *r = NULL;
    for (size_t i = 0; i < sizeof REDUCTIONS / sizeof REDUCTIONS[0]; ++i)
        if (strcmp(REDUCTIONS[i].name, name) == 0)
            r = &REDUCTIONS[i];
    PyObject *function = r ? gtpy_numpy(name) : NULL;
    PyObject *kw = function ? keywords_of(r, args, 0, kwargs) : NULL;
    PyObject *axis = kw ? PyDict_GetItemString(kw, "axis") : NULL, *result = NULL;
    if (kw && !axis && strcmp(name, "argsort") == 0) { /* NumPy's default: the last axis */
        PyObject *last = PyLong_FromLong(-1);
        if (!last || PyDict_SetItemString(kw, "axis", last) < 0)
            Py_CLEAR(kw);
        axis = last; /* borrowed from kw */
        Py_XDECREF(last);
    }
    if (kw && r->flat_without_axis && (!axis || axis == Py_None))
        result = flat_on_host(self, function, kw);
    else if (kw)
        result = reduce_with(self, function, r, kw, true);
    Py_XDECREF(kw);
    return result;
}

/* ---- __array_ufunc__ ---------------------------------------------------------------------- */

/* Whether an input or output belongs to another NEP 13 participant. */
static bool any_defers(PyObject *inputs, PyObject *kwargs)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inputs); ++i)
        if (defers(PyTuple_GET_ITEM(inputs, i)))
            return true;
    PyObject *out = keyword(kwargs, NAME_OUT);
    for (Py_ssize_t i = 0; out && PyTuple_Check(out) && i < PyTuple_GET_SIZE(out); ++i)
        if (defers(PyTuple_GET_ITEM(out, i)))
            return true;
    return false;
}

static bool is_gufunc(PyObject *ufunc)
{
    PyObject *signature = PyObject_GetAttr(ufunc, name(NAME_SIGNATURE));
    PyErr_Clear();
    bool core = signature && signature != Py_None;
    Py_XDECREF(signature);
    return core;
}

/* function(*inputs, **kwargs) with NumPy's semantics on host views: for a
 * generalized ufunc (np.matmul, ...), whose core dims are not fields, and a
 * reduction of an array that is no storage. Storages among the inputs and
 * in where= are read, those in out= written on the host; the result is
 * NumPy's, or the out= storages given. */
/* A new tuple of `items` with each storage replaced by an ndarray of its
 * host side, accessed for reading or for a `write`. */
static PyObject *host_views(PyObject *items, bool write)
{
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *views = PyTuple_New(n);
    for (Py_ssize_t i = 0; views && i < n; ++i) {
        PyObject *obj = PyTuple_GET_ITEM(items, i);
        PyObject *view = gtpy_is_storage(obj) ? gtpy_storage_ndarray(obj, write) : Py_NewRef(obj);
        if (!view)
            Py_CLEAR(views);
        else
            PyTuple_SET_ITEM(views, i, view);
    }
    return views;
}

static PyObject *numpy_on_host(PyObject *function, PyObject *inputs, PyObject *kwargs)
{
    PyObject *kw = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
    PyObject *out = keyword(kw, NAME_OUT), *where = keyword(kw, NAME_WHERE);
    bool outs = out && PyTuple_Check(out);
    PyObject *args = kw ? host_views(inputs, false) : NULL;
    PyObject *where_view = where && gtpy_is_storage(where) ? gtpy_storage_ndarray(where, false)
                                                           : NULL;
    PyObject *out_views = outs ? host_views(out, true) : NULL, *result = NULL;
    /* `out` lives on in kwargs when kw's entry is replaced */
    gtpy_holds holds;
    if (args && (!where || !gtpy_is_storage(where) ||
                 (where_view && PyDict_SetItem(kw, name(NAME_WHERE), where_view) == 0)) &&
        (!outs || (out_views && PyDict_SetItem(kw, name(NAME_OUT), out_views) == 0)) &&
        hold_host_writes(&holds, outs ? out : NULL) == 0) {
        result = PyObject_Call(function, args, kw);
        gtpy_holds_end(&holds);
    }
    if (result && outs) { /* the storages given, not their views */
        Py_DECREF(result);
        result = PyTuple_GET_SIZE(out) == 1 ? Py_NewRef(PyTuple_GET_ITEM(out, 0)) : Py_NewRef(out);
    }
    Py_XDECREF(args);
    Py_XDECREF(where_view);
    Py_XDECREF(out_views);
    Py_XDECREF(kw);
    return result;
}

/* ufunc.at(a, indices, b): in place on the host side of `a`, or where it
 * has none (a GPUStorage) on its device, by the engine's ufunc.at. */
static PyObject *ufunc_at(PyObject *ufunc, PyObject *inputs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(inputs);
    if (n < 2 || n > 3)
        return PyErr_Format(PyExc_TypeError, "%S.at: takes (a, indices[, b])", ufunc);
    PyObject *a = PyTuple_GET_ITEM(inputs, 0);
    gtpy_engine engine, *on_device = NULL;
    if (gtpy_is_storage(a) && !gtpy_has_host_side(STORAGE(a)->buffer)) {
        if (gtpy_engine_get(gts_buffer_device(STORAGE(a)->buffer), &engine) < 0)
            return NULL;
        on_device = &engine;
    }
    PyObject *items[3] = {NULL, NULL, NULL};
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < n; ++i) {
        PyObject *obj = PyTuple_GET_ITEM(inputs, i);
        items[i] = i > 0 || !gtpy_is_storage(obj) ? read_operand(obj, on_device)
                   : on_device ? gtpy_engine_storage_view(on_device, obj, 0, NULL, NULL, true, false)
                                                  : gtpy_storage_ndarray(obj, true);
        ok = items[i] != NULL;
    }
    PyObject *function = !ok ? NULL : on_device ? gtpy_engine_function(on_device, ufunc)
                                                : Py_NewRef(ufunc);
    gtpy_holds holds;
    PyObject *result = NULL;
    if (function && hold_host_writes(&holds, a) == 0) {
        result = PyObject_CallMethod(function, "at", n == 2 ? "OO" : "OOO", items[0], items[1],
                                     items[2]);
        gtpy_holds_end(&holds);
    }
    if (on_device && gtpy_engine_finish(on_device) < 0)
        Py_CLEAR(result);
    Py_XDECREF(function);
    for (Py_ssize_t i = 0; i < n; ++i)
        Py_XDECREF(items[i]);
    return result;
}

/* ufunc.reduce / ufunc.accumulate of a storage; `method` names which. */
static PyObject *ufunc_reduce(PyObject *ufunc, const char *method, PyObject *args,
                              PyObject *kwargs)
{
    const reduction *r = strcmp(method, "reduce") == 0 ? &REDUCTIONS[11] : &REDUCTIONS[12];
    if (PyTuple_GET_SIZE(args) < 3)
        return PyErr_Format(PyExc_TypeError, "%S.%s: takes an array", ufunc, method);
    PyObject *array = PyTuple_GET_ITEM(args, 2);
    PyObject *function = PyObject_GetAttrString(ufunc, method);
    if (function && !gtpy_is_storage(array)) { /* a storage in out= or where=: NumPy's rules */
        PyObject *inputs = PyTuple_GetSlice(args, 2, PyTuple_GET_SIZE(args));
        PyObject *result = inputs ? numpy_on_host(function, inputs, kwargs) : NULL;
        Py_XDECREF(inputs);
        Py_DECREF(function);
        return result;
    }
    PyObject *kw = function ? keywords_of(r, args, 3, kwargs) : NULL;
    PyObject *result = kw ? reduce_with(array, function, r, kw, false) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(function);
    return result;
}

PyObject *gtpy_ufunc_call(PyObject *ufunc, PyObject *inputs, PyObject *kwargs)
{
    return is_gufunc(ufunc) ? numpy_on_host(ufunc, inputs, kwargs)
                            : ufunc_call(ufunc, inputs, kwargs);
}

PyObject *gtpy_storage_array_ufunc(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    if (PyTuple_GET_SIZE(args) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 1))) {
        PyErr_SetString(PyExc_TypeError, "__array_ufunc__(ufunc, method, *inputs, **kwargs)");
        return NULL;
    }
    PyObject *ufunc = PyTuple_GET_ITEM(args, 0);
    const char *method = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 1));
    PyObject *inputs = PyTuple_GetSlice(args, 2, PyTuple_GET_SIZE(args));
    if (!method || !inputs) {
        Py_XDECREF(inputs);
        return NULL;
    }
    PyObject *result;
    if (any_defers(inputs, kwargs))
        result = Py_NewRef(Py_NotImplemented);
    else if (strcmp(method, "__call__") == 0)
        result = gtpy_ufunc_call(ufunc, inputs, kwargs);
    else if (strcmp(method, "reduce") == 0 || strcmp(method, "accumulate") == 0)
        result = ufunc_reduce(ufunc, method, args, kwargs);
    else if (strcmp(method, "at") == 0)
        result = ufunc_at(ufunc, inputs);
    else
        result = PyErr_Format(PyExc_TypeError,
                              "%S.%s: not supported on storages (its result has no dims that "
                              "follow from the operands'); apply it to np.asarray(...)",
                              ufunc, method);
    Py_DECREF(inputs);
    return result;
}
