/* gtstore.Stream and the current stream (stream.h). */
#include "stream.h"
#include "args.h"
#include "convert.h"
#include "errors.h"

/* The test switch of the stream order (src/stream_order.h, linked in from
 * the static libgtstore): while set, no access waits for a buffer's device
 * work, so that a test can show that its checks see the missing waits. */
void gts__order_skip_waits_for_testing(bool skip);

typedef struct {
    PyObject_HEAD
    const gts_device_ops *device;
    gts_stream handle; /* NULL: the device's default stream */
    bool owned;        /* made by gts_device_stream_create: destroyed with the object */
    PyObject *owner;   /* the object `ptr` came from (a CuPy stream), kept alive; or NULL */
} StreamObject;

static PyObject *current; /* the context variable gtstore.current_stream() reads */

/* The context variable of the `with stream:` blocks entered in a context
 * (a thread, an asyncio task), innermost first: (stream, token of
 * `current`, CuPy's stream or None, the entry outside it or None), or None.
 * Per context, so that each __exit__ undoes its own context's __enter__
 * (a context copied from another, as a task's, starts with its entries:
 * their tokens then tell that they are not its own). */
static PyObject *entries;

/* The handles of the live streams that Stream made on devices other than
 * CUDA (the emulated device): a number given for one (Stream(ptr=),
 * __dlpack__(stream=)) must be one of them. CUDA's handles are the driver's
 * and other libraries': they are taken as given. */
static PyObject *live_handles;

static bool checks_handles(const gts_device_ops *device)
{
    return !device->cuda_array_interface;
}

static int check_live(const gts_device_ops *device, gts_stream handle, const char *what)
{
    if (!handle || !checks_handles(device))
        return 0;
    PyObject *key = PyLong_FromVoidPtr(handle);
    int live = key && live_handles ? PySet_Contains(live_handles, key) : 0;
    Py_XDECREF(key);
    if (live < 0 || !key)
        return -1;
    if (!live)
        PyErr_Format(PyExc_ValueError, "%s: %p is not a live stream of the %s device", what,
                     handle, device->name);
    return live ? 0 : -1;
}

static int set_live(gts_stream handle, bool live)
{
    if (!live_handles && !(live_handles = PySet_New(NULL)))
        return -1;
    PyObject *key = PyLong_FromVoidPtr(handle);
    int rc = !key ? -1 : live ? PySet_Add(live_handles, key) : PySet_Discard(live_handles, key);
    Py_XDECREF(key);
    return rc < 0 ? -1 : 0;
}

static PyObject *context_var(PyObject **var, const char *name)
{
    return *var ? *var : (*var = PyContextVar_New(name, NULL));
}

static PyObject *current_var(void)
{
    return context_var(&current, "gtstore.current_stream");
}

/* ---- the current stream ------------------------------------------------------------------ */

static bool is_cuda_gpu(const gts_device_ops *device)
{
    return device->cuda_array_interface && device->kind == GTS_MEMORY_GPU;
}

/* cupy.cuda where CuPy is imported (a new reference), else NULL: never
 * imported here. */
static PyObject *imported_cupy_cuda(void)
{
    static PyObject *name;
    if (!name && !(name = PyUnicode_InternFromString("cupy.cuda")))
        return NULL;
    return PyImport_GetModule(name);
}

int gtpy_cupy_stream(const gts_device_ops *device, gts_stream *out)
{
    static PyObject *get_current_stream; /* cupy.cuda.get_current_stream, once CuPy is in */
    /* CuPy's default, its stream 0, is the legacy default stream, which
     * libgtstore names otherwise (NULL is its "completed on return"): so
     * also where CuPy is not imported, as for torch and GT4Py */
    *out = gts_device_legacy_stream(device);
    if (!is_cuda_gpu(device))
        return 0;
    if (!get_current_stream) {
        PyObject *cuda = imported_cupy_cuda();
        if (!cuda)
            return PyErr_Occurred() ? -1 : 0;
        get_current_stream = PyObject_GetAttrString(cuda, "get_current_stream");
        Py_DECREF(cuda);
        if (!get_current_stream)
            return -1;
    }
    static PyObject *ptr_name; /* interned once: this runs on every GPU operation */
    /* CuPy's current device's, where CuPy computes (the storages must be on
     * it: docs/storage.md) */
    PyObject *stream = PyObject_CallNoArgs(get_current_stream), *ptr = NULL;
    if (stream && gtpy_lookup_attr(stream, "ptr", &ptr_name, &ptr) == 0 && !ptr)
        PyErr_Format(PyExc_TypeError, "CuPy's current stream %.200R has no ptr", stream);
    Py_XDECREF(stream);
    void *handle = ptr ? PyLong_AsVoidPtr(ptr) : NULL;
    Py_XDECREF(ptr);
    if (PyErr_Occurred())
        return -1;
    if (handle)
        *out = handle;
    return 0;
}

int gtpy_current_stream(const gts_device_ops *device, gts_stream *out)
{
    PyObject *var = current_var(), *value = NULL;
    if (!var || PyContextVar_Get(var, NULL, &value) < 0)
        return -1;
    if (value) {
        StreamObject *s = (StreamObject *)value;
        bool mine = s->device == device;
        gts_stream handle = s->handle;
        Py_DECREF(value);
        if (mine) {
            *out = handle;
            return 0;
        }
    }
    return gtpy_cupy_stream(device, out);
}

int gtpy_stream_number(const gts_device_ops *device, PyObject *number, const char *what,
                       gts_stream *out)
{
    *out = NULL;
    if (!number || number == Py_None)
        return 0;
    if (!PyLong_Check(number) || PyBool_Check(number)) { /* True is no stream handle */
        PyErr_Format(PyExc_TypeError, "%s: expected None or a stream handle (an int), got %.200R",
                     what, number);
        return -1;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (PyErr_Occurred())
        return -1;
    bool cuda = device->cuda_array_interface;
    bool streams = device->kind == GTS_MEMORY_GPU && device->stream_create; /* its own streams */
    if (!overflow && value == -1)
        return 0; /* the consumer asks for no ordering: the default stream's order holds */
    if (!overflow && value > 0 && (cuda || streams)) {
        /* 1 and 2 are CUDA's legacy and per-thread default streams, streams
         * like the others on a CUDA GPU; managed memory is ordered by the
         * host: the host waits */
        bool host_waits = cuda && device->kind != GTS_MEMORY_GPU;
        *out = host_waits ? NULL : (gts_stream)(uintptr_t)value;
        return check_live(device, *out, what);
    }
    PyErr_Format(PyExc_ValueError,
                 cuda      ? "%s: %.200R is not a stream handle (a positive int, or -1; 0 is "
                             "forbidden by the protocol)"
                 : streams ? "%s: %.200R is not valid for this memory (None, -1 or a stream "
                             "handle of its device, gtstore.Stream.ptr)"
                           : "%s: %.200R is not valid for this memory (only None or -1 are)",
                 what, number);
    return -1;
}

/* A stream handle given as an int, or in the int `ptr` of an object (a
 * CuPy stream): a new reference, or NULL without an exception. A bool is
 * no handle. */
static PyObject *handle_of(PyObject *obj)
{
    bool handle = PyLong_Check(obj) && !PyBool_Check(obj);
    PyObject *number = handle ? Py_NewRef(obj) : PyObject_GetAttrString(obj, "ptr");
    if (number && PyLong_Check(number) && !PyBool_Check(number))
        return number;
    PyErr_Clear();
    Py_XDECREF(number);
    return NULL;
}

int gtpy_stream_arg(const gts_device_ops *device, PyObject *obj, const char *what,
                    gts_stream *out)
{
    *out = NULL;
    if (obj == Py_None)
        return device ? gtpy_current_stream(device, out) : 0;
    if (PyObject_TypeCheck(obj, &gtpy_Stream_Type)) {
        StreamObject *s = (StreamObject *)obj;
        if (device && s->device != device) {
            PyErr_Format(PyExc_ValueError, "%s: %.200R is a stream of the %s device, the work "
                         "is on the %s device", what, obj, s->device->name, device->name);
            return -1;
        }
        *out = device ? s->handle : NULL;
        return 0;
    }
    PyObject *number = handle_of(obj);
    if (!number) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected None, a gtstore.Stream, a stream handle (int) or an object "
                     "with one in `ptr` (a CuPy stream), got %.200R",
                     what, obj);
        return -1;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    int rc = PyErr_Occurred() ? -1
             : !overflow && value == 0 ? 0 /* the default stream */
             : device ? gtpy_stream_number(device, number, what, out) : 0;
    Py_DECREF(number);
    return rc;
}

/* ---- libgtstore's operations on the current stream ------------------------------------------ */

static int stream_of(const gts_storage *g, gts_stream *out)
{
    return gtpy_current_stream(gts_buffer_device(g->buffer), out);
}

int gtpy_stream_assign(const gts_storage *dst, const gts_storage *src)
{
    gts_stream stream;
    gts_error err;
    if (stream_of(dst, &stream) < 0)
        return -1;
    return gts_storage_assign_on(dst, src, stream, &err) == GTS_OK ? 0 : gtpy_raise(&err);
}

int gtpy_stream_fill_item(const gts_storage *dst, const void *item)
{
    gts_stream stream;
    gts_error err;
    if (stream_of(dst, &stream) < 0)
        return -1;
    return gts_storage_fill_item_on(dst, item, stream, &err) == GTS_OK ? 0 : gtpy_raise(&err);
}

int gtpy_stream_fill(const gts_storage *dst, gts_scalar value)
{
    unsigned char item[16];
    gts_error err;
    if (gts_scalar_store(value, dst->dtype, item, &err) != GTS_OK)
        return gtpy_raise(&err);
    return gtpy_stream_fill_item(dst, item);
}

int gtpy_stream_copy(const gts_storage *src, gts_storage *out)
{
    gts_stream stream;
    gts_error err;
    int rc;
    if (stream_of(src, &stream) < 0)
        return -1;
    Py_BEGIN_ALLOW_THREADS
    rc = gts_storage_copy_on(src, stream, out, &err);
    Py_END_ALLOW_THREADS
    return rc == GTS_OK ? 0 : gtpy_raise(&err);
}

/* ---- the Stream type ---------------------------------------------------------------------- */

/* ptr=: None, an int handle or an object with an int `ptr` (CuPy's streams). */
static int read_ptr(PyObject *ptr, StreamObject *s)
{
    PyObject *number = handle_of(ptr);
    if (!number) {
        PyErr_Format(PyExc_TypeError,
                     "ptr: expected None, a stream handle (int) or an object with one in `ptr` "
                     "(a CuPy stream), got %.200R",
                     ptr);
        return -1;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    Py_DECREF(number);
    if (PyErr_Occurred())
        return -1;
    if (overflow || value < 0 || (uint64_t)value > (uint64_t)UINTPTR_MAX) {
        PyErr_Format(PyExc_ValueError, "ptr: %.200R is not a stream handle (0 or more)", ptr);
        return -1;
    }
    s->handle = (gts_stream)(uintptr_t)value;
    if (!PyLong_Check(ptr))
        s->owner = Py_NewRef(ptr);
    return 0;
}

/* device=: None (the GPU) or a GPU's name ('emulated', 'cuda', 'cuda:N'). */
static int read_device(PyObject *device, const gts_device_ops **out)
{
    gts_error err;
    if (!device || device == Py_None) {
        if (gts_device_gpu(out, &err) == GTS_OK)
            return 0;
        PyErr_Format(PyExc_NotImplementedError,
                     "device: None names the GPU, and there is none (%s)", err.message);
        return -1;
    }
    const char *name = PyUnicode_Check(device) ? gtpy_text(device, "device") : NULL;
    if (name && gts_device_gpu_named(name, out, &err) == GTS_OK)
        return 0;
    if (name && err.code != GTS_EINVAL)
        return gtpy_raise_param("device", &err);
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError,
                 "device: expected None, 'emulated', 'cuda' or 'cuda:N', got %.200R", device);
    return -1;
}

static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"ptr", "device"};
    static gtpy_signature sig = GTPY_SIGNATURE("Stream", names, 2, 0, 0);
    PyObject *v[2];
    if (gtpy_parse_tuple(&sig, args, kwargs, v) < 0)
        return NULL;
    StreamObject *s = (StreamObject *)type->tp_alloc(type, 0);
    if (!s)
        return NULL;
    gts_error err;
    if (read_device(v[1], &s->device) < 0 ||
        (v[0] && v[0] != Py_None && read_ptr(v[0], s) < 0)) {
        Py_DECREF(s);
        return NULL;
    }
    if (v[0] && v[0] != Py_None) {
        if (check_live(s->device, s->handle, "ptr") < 0)
            Py_CLEAR(s);
        return (PyObject *)s;
    }
    if (gts_device_stream_create(s->device, &s->handle, &err) != GTS_OK) {
        Py_DECREF(s);
        return gtpy_raise_null(&err);
    }
    s->owned = true;
    if (checks_handles(s->device) && set_live(s->handle, true) < 0)
        Py_CLEAR(s);
    return (PyObject *)s;
}

/* The garbage collector sees what a stream holds (a CuPy stream may hold
 * it back). Its `with` entries are its contexts' (`entries`): a `with` left
 * entered in a thread that ended goes with the thread's context. */
static int stream_traverse(PyObject *self, visitproc visit, void *arg)
{
    StreamObject *s = (StreamObject *)self;
    Py_VISIT(s->owner);
    return 0;
}

/* What a cycle's collection drops: the references only. A stream that
 * owns its handle destroys it at dealloc, without them. */
static int stream_clear(PyObject *self)
{
    StreamObject *s = (StreamObject *)self;
    Py_CLEAR(s->owner);
    return 0;
}

static void stream_dealloc(PyObject *self)
{
    StreamObject *s = (StreamObject *)self;
    PyObject_GC_UnTrack(self);
    if (s->owned) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (checks_handles(s->device) && set_live(s->handle, false) < 0)
            PyErr_WriteUnraisable(self);
        PyErr_Restore(type, value, traceback);
        /* Its work first: buffers remember the stream their last work was
         * on by its handle, which a new stream may get again. */
        Py_BEGIN_ALLOW_THREADS
        gts_device_synchronize(s->device, s->handle, NULL);
        gts_device_stream_destroy(s->device, s->handle);
        Py_END_ALLOW_THREADS
    }
    stream_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *stream_synchronize(PyObject *self, PyObject *unused)
{
    (void)unused;
    StreamObject *s = (StreamObject *)self;
    gts_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gts_device_synchronize(s->device, s->handle, &err);
    Py_END_ALLOW_THREADS
    if (rc != GTS_OK)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

/* A CuPy stream over the same handle: Stream.from_external(s) (CuPy 14 on,
 * through the CUDA stream protocol, __cuda_stream__: it keeps `s` alive),
 * else ExternalStream(ptr) (before; deprecated since). */
static PyObject *cupy_stream_over(PyObject *cuda, StreamObject *s)
{
    static PyObject *stream_name, *from_external_name;
    PyObject *type = gtpy_optional_attr(cuda, "Stream", &stream_name);
    PyObject *from_external =
        type ? gtpy_optional_attr(type, "from_external", &from_external_name) : NULL;
    Py_XDECREF(type);
    if (!from_external)
        return PyObject_CallMethod(cuda, "ExternalStream", "N", PyLong_FromVoidPtr(s->handle));
    PyObject *stream = PyObject_CallOneArg(from_external, (PyObject *)s);
    Py_DECREF(from_external);
    return stream;
}

/* CuPy's stream of the same handle, entered too where CuPy is imported and
 * the stream is CUDA's, so that CuPy computes where gtstore queues (None
 * otherwise; a new reference). */
static PyObject *enter_cupy(StreamObject *s)
{
    PyObject *cuda = is_cuda_gpu(s->device) ? imported_cupy_cuda() : NULL;
    if (!cuda)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *stream = s->owner ? Py_NewRef(s->owner) : cupy_stream_over(cuda, s);
    Py_DECREF(cuda);
    PyObject *done = stream ? PyObject_CallMethod(stream, "__enter__", NULL) : NULL;
    Py_XDECREF(done);
    if (!done)
        Py_CLEAR(stream);
    return stream;
}

static PyObject *stream_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    StreamObject *s = (StreamObject *)self;
    PyObject *var = current_var(), *entries_var = context_var(&entries, "gtstore.Stream entries");
    PyObject *outer = NULL;
    if (!var || !entries_var || PyContextVar_Get(entries_var, Py_None, &outer) < 0)
        return NULL;
    PyObject *cupy = enter_cupy(s);
    PyObject *token = cupy ? PyContextVar_Set(var, self) : NULL;
    PyObject *entry = token ? PyTuple_Pack(4, self, token, cupy, outer) : NULL;
    PyObject *pushed = entry ? PyContextVar_Set(entries_var, entry) : NULL;
    if (!pushed && token) { /* a MemoryError: the current stream stays */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (PyContextVar_Reset(var, token) < 0)
            PyErr_Clear();
        PyErr_Restore(type, value, traceback);
    }
    Py_XDECREF(pushed);
    Py_XDECREF(entry);
    Py_XDECREF(token);
    Py_XDECREF(cupy);
    Py_DECREF(outer);
    return pushed ? Py_NewRef(self) : NULL;
}

/* Undoes the innermost __enter__ of this context, which must be this
 * stream's: else a RuntimeError, and nothing changes. */
static PyObject *stream_exit(PyObject *self, PyObject *args)
{
    (void)args;
    PyObject *var = current_var(), *entries_var = context_var(&entries, "gtstore.Stream entries");
    PyObject *entry = NULL;
    if (!var || !entries_var || PyContextVar_Get(entries_var, Py_None, &entry) < 0)
        return NULL;
    if (entry == Py_None || PyTuple_GET_ITEM(entry, 0) != self) {
        if (entry == Py_None)
            PyErr_Format(PyExc_RuntimeError,
                         "__exit__: %.200R was not entered in this thread (and asyncio task)",
                         self);
        else
            PyErr_Format(PyExc_RuntimeError,
                         "__exit__: %.200R is not the stream entered last in this thread (and "
                         "asyncio task), %.200R is",
                         self, PyTuple_GET_ITEM(entry, 0));
        Py_DECREF(entry);
        return NULL;
    }
    /* The token of another context's __enter__ (this context was copied
     * from it: a task made inside its `with`) is refused, and changes nothing */
    if (PyContextVar_Reset(var, PyTuple_GET_ITEM(entry, 1)) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_RuntimeError,
                     "__exit__: %.200R was entered in another context (the thread or asyncio "
                     "task this one was copied from), not in this one",
                     self);
        Py_DECREF(entry);
        return NULL;
    }
    PyObject *popped = PyContextVar_Set(entries_var, PyTuple_GET_ITEM(entry, 3));
    PyObject *cupy = PyTuple_GET_ITEM(entry, 2);
    PyObject *done = !popped        ? NULL
                     : cupy == Py_None ? Py_NewRef(Py_None)
                                       : PyObject_CallMethod(cupy, "__exit__", "OOO", Py_None,
                                                             Py_None, Py_None);
    Py_XDECREF(popped);
    Py_DECREF(entry);
    if (!done)
        return NULL;
    Py_DECREF(done);
    Py_RETURN_FALSE; /* exceptions propagate */
}

static PyObject *stream_ptr(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(((StreamObject *)self)->handle);
}

static PyObject *stream_device(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(((StreamObject *)self)->device->name);
}

static PyObject *stream_repr(PyObject *self)
{
    StreamObject *s = (StreamObject *)self;
    return PyUnicode_FromFormat("<gtstore.Stream ptr=%p device='%s'%s>", s->handle,
                                s->device->name, s->owned ? "" : " (not owned)");
}

/* The CUDA stream protocol: (version 0, the cudaStream_t as an int). */
static PyObject *stream_cuda_stream(PyObject *self, PyObject *unused)
{
    (void)unused;
    StreamObject *s = (StreamObject *)self;
    if (!is_cuda_gpu(s->device))
        return PyErr_Format(PyExc_TypeError,
                            "__cuda_stream__: a stream of the %s device is no CUDA stream",
                            s->device->name);
    return Py_BuildValue("(iN)", 0, PyLong_FromVoidPtr(s->handle));
}

static PyMethodDef stream_methods[] = {
    {"__cuda_stream__", stream_cuda_stream, METH_NOARGS,
     "__cuda_stream__()\n--\n\nThe CUDA stream protocol: (0, the cudaStream_t as an int), "
     "as CuPy's Stream.from_external reads it. A TypeError for a stream of a device other "
     "than a CUDA GPU."},
    {"synchronize", stream_synchronize, METH_NOARGS,
     "synchronize()\n--\n\nWaits until the work queued on the stream has completed."},
    {"__enter__", stream_enter, METH_NOARGS,
     "__enter__()\n--\n\nMakes the stream current in this thread (and context) until "
     "__exit__: gtstore's operations on its device's storages are queued on it (and, on a "
     "CUDA GPU where CuPy is imported, CuPy's too)."},
    {"__exit__", stream_exit, METH_VARARGS,
     "__exit__(exc_type, exc_value, traceback)\n--\n\nUndoes the last __enter__ of this "
     "thread (and context), which must be this stream's (else RuntimeError): the stream "
     "current before it is current again (and CuPy's)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"ptr", stream_ptr, NULL,
     "The stream's handle as an int (0: the device's default stream): a CUDA stream "
     "(cudaStream_t) on a CUDA GPU, what __dlpack__(stream=) takes.",
     NULL},
    {"device", stream_device, NULL, "The name of the stream's device.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_Stream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.Stream",
    .tp_doc = "Stream(ptr=None, device=None)\n--\n\n"
              "A stream (queue of work) of a GPU. device: None (the GPU, gtstore.gpu()) or a "
              "GPU's name ('emulated', 'cuda', 'cuda:N'). ptr: None makes a new stream, owned "
              "(synchronised and destroyed with this object); else a stream handle (int) or an "
              "object with one in `ptr` (a CuPy stream, kept alive), wrapped without owning it. "
              "`with stream:` makes it current: gtstore's operations on storages of its device "
              "are queued on it and return without waiting (docs/storage.md, Stream order).",
    .tp_basicsize = sizeof(StreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = stream_new,
    .tp_dealloc = stream_dealloc,
    .tp_traverse = stream_traverse,
    .tp_clear = stream_clear,
    .tp_repr = stream_repr,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

/* ---- module functions ---------------------------------------------------------------------- */

static PyObject *api_current_stream(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *var = current_var(), *value = NULL;
    if (!var || PyContextVar_Get(var, Py_None, &value) < 0)
        return NULL;
    return value;
}

static PyObject *api_skip_waits(PyObject *self, PyObject *skip)
{
    (void)self;
    int on = PyObject_IsTrue(skip);
    if (on < 0)
        return NULL;
    gts__order_skip_waits_for_testing(on);
    Py_RETURN_NONE;
}

PyMethodDef gtpy_stream_methods[] = {
    {"current_stream", api_current_stream, METH_NOARGS,
     "current_stream()\n--\n\nThe Stream made current by `with stream:` in this thread (and "
     "context), or None: then gtstore queues on CuPy's current stream on a CUDA GPU (the "
     "legacy default stream unless CuPy has another current), else on the device's default "
     "stream."},
    {"_skip_stream_waits_for_testing", api_skip_waits, METH_O,
     "_skip_stream_waits_for_testing(skip)\n--\n\nFor tests only: while true, no access "
     "waits for a buffer's device work, so that a test shows it detects a missing wait."},
    {NULL, NULL, 0, NULL},
};
