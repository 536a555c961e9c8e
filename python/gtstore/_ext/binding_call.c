/* The Binding (Signature.bind's result: the domain, the bound fields and
 * the __gt_interface__ sketch's protocol as a context manager) and the built-in stencils
 * (gtstore.stencils), which bind through the same path. */
#include "args.h"
#include "binding_object.h"
#include "convert.h"
#include "engine.h"
#include "errors.h"
#include "numpy.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject_VAR_HEAD
    SignatureObject *sig;
    gts_binding result; /* result.stream: the stream of the last __enter__ */
    bool entered;
    bind_slot slots[];
} BindingObject;

/* ---- call arguments ------------------------------------------------------- */

void gtpy_slots_init(bind_slot *slots, int n)
{
    for (int f = 0; f < n; ++f) {
        slots[f].obj = slots[f].storage = slots[f].copy_back = slots[f].converted = NULL;
        slots[f].acquire = slots[f].touch = slots[f].release = NULL;
        slots[f].in_place = slots[f].have_view = slots[f].device_side = false;
        slots[f].accessed = slots[f].host_ordered = false;
        slots[f].stream = NULL;
        slots[f].memory = NULL;
    }
}

void gtpy_slots_clear(bind_slot *slots, int n)
{
    for (int f = 0; f < n; ++f)
        gtpy_slot_clear(&slots[f]);
}

/* The keywords of Signature.bind and the built-in stencils, then
 * Signature.call's (args=, kwargs=) and call_c's (ctx=): the extras. The
 * fields come first, by position or name (gtpy_parse_named). */
static const char *const bind_names[] = {"domain", "origin"};
static const char *const call_names[] = {"domain", "origin", "args", "kwargs"};
static const char *const call_c_names[] = {"domain", "origin", "ctx"};
enum { ARG_DOMAIN, ARG_ORIGIN, ARG_EXTRAS };

/* Loads and binds every field of a call into `slots` (cleared by the
 * caller); `values` receives the keywords of `sig` (borrowed). */
static int bind_call(const SignatureObject *s, gtpy_signature *sig, PyObject *const *args,
                     Py_ssize_t nargs, PyObject *kwnames, bind_slot *slots, gts_binding *result,
                     PyObject **values)
{
    int n = s->sig.nfields;
    PyObject *stack[GTPY_BIND_STACK_FIELDS], **objects = stack;
    if (n > GTPY_BIND_STACK_FIELDS && !(objects = PyMem_Malloc((size_t)n * sizeof *objects)))
        return PyErr_NoMemory(), -1;
    gtpy_names fields = {s->names, "field", true, false, objects};
    int rc = gtpy_parse_named(sig, &fields, 1, args, nargs, kwnames, values);
    if (rc == 0)
        rc = gtpy_fields_given(s, sig->function, objects);
    for (int f = 0; f < n && rc == 0; ++f)
        rc = gtpy_slot_load(&slots[f], objects[f], &s->fields[f], s->sig.device);
    if (rc == 0)
        rc = gtpy_bind_slots(s, slots, values[ARG_DOMAIN], values[ARG_ORIGIN], result);
    if (objects != stack)
        PyMem_Free(objects);
    return rc;
}

/* ---- the Binding ---------------------------------------------------------------- */

static PyObject *signature_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames)
{
    SignatureObject *s = (SignatureObject *)self;
    int n = s->sig.nfields;
    /* not tp_alloc: it would zero some kilobytes of slots that binding fills */
    size_t size = sizeof(BindingObject) + (size_t)n * sizeof(bind_slot);
    BindingObject *b = PyObject_Malloc(size);
    if (!b)
        return PyErr_NoMemory();
    PyObject_InitVar((PyVarObject *)b, &gtpy_Binding_Type, n);
    b->entered = false;
    b->sig = (SignatureObject *)Py_NewRef(self);
    gtpy_slots_init(b->slots, n);
    static gtpy_signature sig = GTPY_SIGNATURE("bind", bind_names, 0, 0, 0);
    PyObject *values[2];
    if (bind_call(s, &sig, args, nargs, kwnames, b->slots, &b->result, values) < 0) {
        Py_DECREF(b);
        return NULL;
    }
    return (PyObject *)b;
}

static void binding_dealloc(PyObject *self)
{
    BindingObject *b = (BindingObject *)self;
    if (b->sig)
        gtpy_slots_clear(b->slots, b->sig->sig.nfields);
    Py_XDECREF(b->sig);
    PyObject_Free(self);
}

static PyObject *binding_domain(PyObject *self, void *closure)
{
    (void)closure;
    return gtpy_int64_tuple(3, ((BindingObject *)self)->result.domain);
}

/* The stream handle as an int, None for the default stream (as the CUDA
 * array interface's "stream"). */
static PyObject *binding_stream(PyObject *self, void *closure)
{
    (void)closure;
    gts_stream stream = ((BindingObject *)self)->result.stream;
    return stream ? PyLong_FromVoidPtr(stream) : Py_NewRef(Py_None);
}

static PyObject *binding_fields(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(((BindingObject *)self)->sig->names);
}

static PyObject *binding_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    BindingObject *b = (BindingObject *)self;
    if (b->entered) {
        PyErr_SetString(PyExc_RuntimeError, "this Binding is entered already");
        return NULL;
    }
    int n = b->sig->sig.nfields;
    if (gtpy_slots_stream(b->slots, n, b->sig->sig.device, false, &b->result.stream) < 0 ||
        gtpy_slots_reread(b->sig, b->slots) < 0 || gtpy_slots_acquire(b->slots, n) < 0)
        return NULL;
    b->entered = true;
    return Py_NewRef(self);
}

/* On a clean exit the written fields are touched; on an exception they are
 * not (their values are not the stencil's result). All are released. */
static PyObject *binding_exit(PyObject *self, PyObject *args)
{
    BindingObject *b = (BindingObject *)self;
    static const char *const names[] = {"type", "value", "traceback"};
    static gtpy_signature sig = GTPY_SIGNATURE("__exit__", names, 3, 3, 3);
    PyObject *v[3];
    if (gtpy_parse_tuple(&sig, args, NULL, v) < 0)
        return NULL;
    PyObject *type = v[0];
    if (!b->entered) {
        PyErr_SetString(PyExc_RuntimeError, "this Binding was not entered");
        return NULL;
    }
    b->entered = false;
    int touched = type == Py_None ? gtpy_slots_touch(b->sig, b->slots) : 0;
    PyObject *error = touched < 0 ? gtpy_error_take() : NULL;
    int released = gtpy_slots_release(b->slots, b->sig->sig.nfields);
    if (touched < 0) {
        if (released < 0)
            PyErr_Clear();
        gtpy_error_put(error);
        return NULL;
    }
    return released < 0 ? NULL : Py_NewRef(Py_False);
}

/* gtstore.BoundField: one field as the kernel indexes it. */
static PyTypeObject bound_field_type;
static PyStructSequence_Field bound_field_fields[] = {
    {"name", "the field's name in the signature"},
    {"dims", "labels, in the kernel's order (I, J, K, then data dimensions)"},
    {"shape", "extents, kernel order"},
    {"strides", "byte strides, kernel order"},
    {"origin", "the origin point, kernel order"},
    {"data", "address of the element at the origin"},
    {"obj", "the object passed"},
    {NULL, NULL},
};
static PyStructSequence_Desc bound_field_desc = {
    "gtstore.BoundField", "A field of a Binding, in the kernel's order of dimensions.",
    bound_field_fields, 6}; /* obj: an attribute, not in the tuple or repr */

int gtpy_bound_field_init(PyObject *module)
{
    if (PyStructSequence_InitType2(&bound_field_type, &bound_field_desc) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "BoundField", (PyObject *)&bound_field_type);
}

static PyObject *bound_field(BindingObject *b, int f)
{
    const gts_bound_field *bf = &b->slots[f].bound;
    PyObject *item = PyStructSequence_New(&bound_field_type);
    if (!item)
        return NULL;
    PyObject *values[7] = {
        Py_NewRef(PyTuple_GET_ITEM(b->sig->names, f)), gtpy_dims_to_tuple(bf->ndim, bf->dims),
        gtpy_int64_tuple(bf->ndim, bf->shape),          gtpy_int64_tuple(bf->ndim, bf->strides),
        gtpy_int64_tuple(bf->ndim, bf->origin),         PyLong_FromVoidPtr(bf->origin_data),
        Py_NewRef(b->slots[f].obj)};
    bool ok = true;
    for (int i = 0; i < 7; ++i) {
        ok &= values[i] != NULL;
        PyStructSequence_SetItem(item, i, values[i] ? values[i] : Py_NewRef(Py_None));
    }
    if (!ok)
        Py_CLEAR(item);
    return item;
}

static int field_of(BindingObject *b, PyObject *key)
{
    int f = gtpy_signature_index(b->sig, key);
    if (f < 0)
        PyErr_Format(PyExc_KeyError, "%R: no such field (fields: %R)", key, b->sig->names);
    return f;
}

static PyObject *binding_getitem(PyObject *self, PyObject *key)
{
    BindingObject *b = (BindingObject *)self;
    int f = field_of(b, key);
    return f < 0 ? NULL : bound_field(b, f);
}

static Py_ssize_t binding_length(PyObject *self)
{
    return ((BindingObject *)self)->sig->sig.nfields;
}

static PyMappingMethods binding_as_mapping = {
    .mp_length = binding_length,
    .mp_subscript = binding_getitem,
};

/* {name: f(field)} over every field. */
static PyObject *per_field(const SignatureObject *s, const bind_slot *slots,
                           PyObject *(*make)(const SignatureObject *, const bind_slot *, int))
{
    PyObject *result = PyDict_New();
    for (int f = 0; result && f < s->sig.nfields; ++f) {
        PyObject *value = make(s, &slots[f], f);
        if (!value || PyDict_SetItem(result, PyTuple_GET_ITEM(s->names, f), value) < 0)
            Py_CLEAR(result);
        Py_XDECREF(value);
    }
    return result;
}

static PyObject *field_origin(const SignatureObject *s, const bind_slot *slot, int f)
{
    (void)s, (void)f;
    return gtpy_int64_tuple(slot->bound.ndim, slot->bound.origin);
}

static bool kernel_order(const bind_slot *slot)
{
    for (int c = 0; c < slot->bound.ndim; ++c)
        if (slot->bound.axis[c] != c)
            return false;
    return true;
}

/* Whether the object passed is an ndarray already in the kernel's order,
 * read in place: it is then its own kernel-order view (a new array would
 * cost its creation, and consumers' buffer-info caches miss on every new
 * array). */
static bool is_kernel_order_ndarray(const bind_slot *slot)
{
    return slot->in_place && gtpy_numpy_is_ndarray(gtpy_slot_source(slot)) && kernel_order(slot);
}

/* An ndarray over the whole field (element 0 first) in the kernel's order
 * (host memory: a stencil on the CPU), whose base keeps the memory alive:
 * the Storage bound (a copy's too), else the object passed. */
static PyObject *field_array(const SignatureObject *s, const bind_slot *slot, int f)
{
    (void)s, (void)f;
    if (is_kernel_order_ndarray(slot))
        return Py_NewRef(gtpy_slot_source(slot));
    Py_ssize_t shape[GTS_BIND_MAX_NDIM], strides[GTS_BIND_MAX_NDIM];
    for (int c = 0; c < slot->bound.ndim; ++c) {
        shape[c] = (Py_ssize_t)slot->bound.shape[c];
        strides[c] = (Py_ssize_t)slot->bound.strides[c];
    }
    return gtpy_numpy_capi_array(slot->desc.dtype, slot->bound.ndim, shape, strides,
                                 slot->desc.data, slot->desc.readonly,
                                 slot->storage ? slot->storage : gtpy_slot_source(slot));
}

/* An array of the engine over a field of a stencil on the GPU, in the
 * kernel's order: over its Storage's memory, else the object's in place (a
 * CuPy array already in that order is passed as it is). */
static PyObject *engine_field_array(const gtpy_engine *e, const bind_slot *slot)
{
    if (e->cuda && !slot->storage && Py_TYPE(slot->obj) == (PyTypeObject *)e->cupy.ndarray &&
        kernel_order(slot))
        return Py_NewRef(slot->obj);
    return gtpy_engine_field_array(e, slot->storage, gtpy_slot_source(slot), slot->memory,
                                   slot->desc.data, slot->desc.dtype, slot->bound.ndim,
                                   slot->bound.shape, slot->bound.strides, slot->desc.readonly);
}

/* {name: engine array} of a stencil on the GPU. NumPy computes on the
 * host: it waits for `stream` first, the fields' acquired device work. */
static PyObject *engine_arrays(const SignatureObject *s, const bind_slot *slots,
                               gts_stream stream)
{
    const gts_device_ops *gpu = gtpy_slots_gpu(slots, s->sig.nfields);
    gtpy_engine e;
    gts_error err;
    if (!gpu) {
        PyErr_SetString(PyExc_RuntimeError,
                        "arrays(): the stencil computes on the gpu, and there is no GPU");
        return NULL;
    }
    if (gtpy_engine_get(gpu, &e) < 0)
        return NULL;
    if (!e.cuda && stream && gts_device_synchronize(gpu, stream, &err) != GTS_OK)
        return gtpy_raise_null(&err);
    PyObject *result = PyDict_New();
    for (int f = 0; result && f < s->sig.nfields; ++f) {
        PyObject *value = engine_field_array(&e, &slots[f]);
        if (!value || PyDict_SetItem(result, PyTuple_GET_ITEM(s->names, f), value) < 0)
            Py_CLEAR(result);
        Py_XDECREF(value);
    }
    return result;
}

static PyObject *binding_origins(PyObject *self, PyObject *unused)
{
    (void)unused;
    BindingObject *b = (BindingObject *)self;
    return per_field(b->sig, b->slots, field_origin);
}

/* A field bound as a copy takes its object's values when the Binding is
 * entered (after the object's acquire): before, its memory holds none. */
static int check_copies_filled(const BindingObject *b)
{
    if (b->entered)
        return 0;
    for (int f = 0; f < b->sig->sig.nfields; ++f)
        if (b->slots[f].copy_back) {
            PyErr_Format(PyExc_RuntimeError,
                         "%s: bound as a copy (no buffer on the %s, where the stencil "
                         "computes), which takes its object's values when the Binding is "
                         "entered: call arrays() inside `with binding:`",
                         b->sig->fields[f].name,
                         b->sig->sig.device == GTS_DEVICE_GPU ? "gpu" : "cpu");
            return -1;
        }
    return 0;
}

static PyObject *binding_arrays(PyObject *self, PyObject *unused)
{
    (void)unused;
    BindingObject *b = (BindingObject *)self;
    if (check_copies_filled(b) < 0)
        return NULL;
    return gtpy_bound_arrays(b->sig, b->slots, b->entered ? b->result.stream : NULL);
}

static PyObject *binding_repr(PyObject *self)
{
    BindingObject *b = (BindingObject *)self;
    PyObject *domain = binding_domain(self, NULL);
    PyObject *text = domain ? PyUnicode_FromFormat("gtstore.Binding(fields=%R, domain=%R)",
                                                   b->sig->names, domain)
                            : NULL;
    Py_XDECREF(domain);
    return text;
}

static PyGetSetDef binding_getset[] = {
    {"domain", binding_domain, NULL, "The domain (I, J, K).", NULL},
    {"fields", binding_fields, NULL, "The field names, in the signature's order.", NULL},
    {"stream", binding_stream, NULL,
     "The stream the kernel queues its work on, from __enter__ on: the handle (an int, "
     "gtstore.Stream(ptr=...) wraps it) of the current stream of a stencil on the GPU, whose "
     "Storages' device sides it was ordered after; None for the default stream (on the CPU, "
     "or no current stream), where the host waited and the kernel completes its work before "
     "the block ends.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef binding_methods[] = {
    {"__enter__", binding_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\n"
     "Reads the fields bound as copies again (np.asarray(obj) of an object read through "
     "__array__, a copy in of memory on the other device), then acquires every "
     "field (its data interface's acquire; a Storage's host side synced, "
     "or for a stencil on the GPU its device side ordered on the current stream, self.stream)."},
    {"__exit__", binding_exit, METH_VARARGS,
     "__exit__($self, exc_type, exc_value, traceback, /)\n--\n\nTouches the written fields (only without an exception), then releases all "
     "(on the GPU: each Storage's buffer records its event on self.stream)."},
    {"origins", binding_origins, METH_NOARGS,
     "origins($self, /)\n--\n\n{name: origin}, each in the kernel's order (I, J, K, data dimensions)."},
    {"arrays", binding_arrays, METH_NOARGS,
     "arrays($self, /)\n--\n\n{name: ndarray}: each field's memory in the kernel's order of dimensions "
     "(a view, no copy). For a stencil on the GPU, arrays of its engine: CuPy's on a CUDA GPU, "
     "NumPy's over the emulated device's memory (after the host waited for self.stream)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject gtpy_Binding_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gtstore.Binding",
    .tp_basicsize = sizeof(BindingObject),
    .tp_itemsize = sizeof(bind_slot),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The fields of one stencil call, bound and checked (Signature.bind). "
              "binding['name'] is a BoundField; `with binding:` runs the acquire/touch/release "
              "protocol around the body (for a stencil on the GPU in the stream order: its "
              "kernel queues its work on binding.stream).",
    .tp_dealloc = binding_dealloc,
    .tp_repr = binding_repr,
    .tp_as_mapping = &binding_as_mapping,
    .tp_getset = binding_getset,
    .tp_methods = binding_methods,
};

/* ---- Signature.call: bind, then a Python kernel inside the protocol ------------ */

/* Touches (after success) and releases, keeping the first error. */
int gtpy_slots_finish(const SignatureObject *s, bind_slot *slots, bool succeeded)
{
    int rc = succeeded ? gtpy_slots_touch(s, slots) : -1;
    PyObject *error = rc < 0 ? gtpy_error_take() : NULL;
    int released = gtpy_slots_release(slots, s->sig.nfields);
    if (rc < 0) {
        if (released < 0)
            PyErr_Clear();
        gtpy_error_put(error);
        return -1;
    }
    return released;
}

/* args=: the kernel's extra positional arguments, any iterable, as a
 * tuple (new reference); else a TypeError naming args. */
static PyObject *extra_args(PyObject *args)
{
    if (PyTuple_Check(args))
        return Py_NewRef(args);
    PyObject *iter = PyObject_GetIter(args);
    if (!iter) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "args: expected an iterable of the kernel's extra positional "
                         "arguments, got %.200R (type %.80s)",
                         args, Py_TYPE(args)->tp_name);
        }
        return NULL;
    }
    PyObject *tuple = PySequence_Tuple(iter);
    Py_DECREF(iter);
    return tuple;
}

/* kwargs= beside the arrays: a dict of keyword names; a field's name is a
 * TypeError, as Python's "got multiple values" would be. */
static int add_kwargs(PyObject *arrays, PyObject *kwargs)
{
    if (!PyDict_Check(kwargs)) {
        PyErr_Format(PyExc_TypeError, "kwargs: expected a dict, got %.200R (type %.80s)", kwargs,
                     Py_TYPE(kwargs)->tp_name);
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "kwargs: keys are keyword names (str), got %.200R",
                         key);
            return -1;
        }
        int taken = PyDict_Contains(arrays, key);
        if (taken) {
            if (taken > 0)
                PyErr_Format(PyExc_TypeError, "kwargs: got multiple values for field %R", key);
            return -1;
        }
        if (PyDict_SetItem(arrays, key, value) < 0)
            return -1;
    }
    return 0;
}

/* kernel(domain, origins, *args, **arrays, **kwargs) on bound slots. */
PyObject *gtpy_bound_origins(const SignatureObject *s, const bind_slot *slots)
{
    return per_field(s, slots, field_origin);
}

PyObject *gtpy_bound_arrays(const SignatureObject *s, const bind_slot *slots, gts_stream stream)
{
    return s->sig.device == GTS_DEVICE_GPU ? engine_arrays(s, slots, stream)
                                           : per_field(s, slots, field_array);
}

static PyObject *call_kernel(const SignatureObject *s, bind_slot *slots, const gts_binding *b,
                             PyObject *kernel, PyObject *kernel_args, PyObject *kernel_kwargs)
{
    PyObject *domain = gtpy_int64_tuple(3, b->domain);
    PyObject *origins = domain ? per_field(s, slots, field_origin) : NULL;
    PyObject *arrays = origins ? gtpy_bound_arrays(s, slots, b->stream) : NULL;
    PyObject *head = arrays ? PyTuple_Pack(2, domain, origins) : NULL;
    PyObject *positional = NULL, *result = NULL;
    if (head && kernel_args && kernel_args != Py_None) {
        PyObject *rest = extra_args(kernel_args);
        positional = rest ? PySequence_Concat(head, rest) : NULL;
        Py_XDECREF(rest);
    } else if (head) {
        positional = Py_NewRef(head);
    }
    if (positional && kernel_kwargs && kernel_kwargs != Py_None &&
        add_kwargs(arrays, kernel_kwargs) < 0)
        Py_CLEAR(positional);
    if (positional)
        result = PyObject_Call(kernel, positional, arrays);
    Py_XDECREF(domain);
    Py_XDECREF(origins);
    Py_XDECREF(arrays);
    Py_XDECREF(head);
    Py_XDECREF(positional);
    return result;
}

/* The bind-acquire-run-finish sequence of call and call_c: `run` gets the
 * bound slots, the binding and the extras (NULL where not given), and
 * returns a new reference or NULL. A Python kernel (`engine`) computes on
 * the stream of its engine's arrays (gtpy_slots_stream). */
typedef PyObject *(*slot_runner)(const SignatureObject *s, bind_slot *slots,
                                 const gts_binding *b, PyObject *kernel, PyObject *const *extras);

static PyObject *bind_and_run(PyObject *self, gtpy_signature *sig, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames, slot_runner run, bool engine)
{
    SignatureObject *s = (SignatureObject *)self;
    int n = s->sig.nfields;
    enum { STACK = 8 };
    bind_slot stack[STACK], *slots = stack;
    if (n > STACK && !(slots = PyMem_Malloc((size_t)n * sizeof *slots)))
        return PyErr_NoMemory();
    gtpy_slots_init(slots, n);
    gts_binding binding;
    PyObject *result = NULL;
    PyObject *values[GTPY_MAX_ARGS];
    if (bind_call(s, sig, args + 1, nargs - 1, kwnames, slots, &binding, values) == 0 &&
        gtpy_slots_stream(slots, n, s->sig.device, engine, &binding.stream) == 0 &&
        gtpy_slots_acquire(slots, n) == 0) {
        result = run(s, slots, &binding, args[0], values + ARG_EXTRAS);
        if (gtpy_slots_finish(s, slots, result != NULL) < 0)
            Py_CLEAR(result);
    }
    gtpy_slots_clear(slots, n);
    if (slots != stack)
        PyMem_Free(slots);
    return result;
}

static PyObject *run_python_kernel(const SignatureObject *s, bind_slot *slots,
                                   const gts_binding *b, PyObject *kernel, PyObject *const *extras)
{
    return call_kernel(s, slots, b, kernel, extras[0], extras[1]);
}

static PyObject *signature_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames)
{
    if (nargs < 1 || !PyCallable_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "call(kernel, *fields, ...): the kernel, a callable, "
                                         "comes first");
        return NULL;
    }
    static gtpy_signature sig = GTPY_SIGNATURE("call", call_names, 0, 0, 0);
    return bind_and_run(self, &sig, args, nargs, kwnames, run_python_kernel, true);
}

/* An address given as an int (`param` names it): 0 to the largest
 * pointer, else a ValueError (-1 is no address, and must not become
 * 2**64 - 1); a TypeError for anything but an int. */
static int address_arg(PyObject *obj, const char *param, void **out)
{
    *out = NULL;
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an address (an int), got %.200R", param, obj);
        return -1;
    }
    unsigned long long value = PyLong_AsUnsignedLongLong(obj);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear(); /* negative, or beyond 64 bits */
        goto out_of_range;
    }
    if (value > UINTPTR_MAX)
        goto out_of_range;
    *out = (void *)(uintptr_t)value;
    return 0;
out_of_range:
    PyErr_Format(PyExc_ValueError, "%s: %.200R is not an address (0 to 2**%d - 1)", param, obj,
                 (int)(sizeof(void *) * CHAR_BIT));
    return -1;
}

/* A C kernel: a capsule holding a gts_kernel_fn, or its address as an int. */
static gts_kernel_fn c_kernel(PyObject *obj)
{
    void *address = NULL;
    if (PyCapsule_CheckExact(obj))
        address = PyCapsule_GetPointer(obj, PyCapsule_GetName(obj));
    else if (PyLong_Check(obj) && !PyBool_Check(obj) && address_arg(obj, "kernel", &address) < 0)
        return NULL;
    if (!address && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError,
                     "call_c(kernel, ...): expected a capsule or the address (an int) of a "
                     "gts_kernel_fn, e.g. ctypes.cast(lib.kernel, ctypes.c_void_p).value; got "
                     "%.200R",
                     obj);
    gts_kernel_fn fn = NULL;
    if (address) /* POSIX: function and object pointers round-trip */
        memcpy(&fn, &address, sizeof fn);
    return fn;
}

static PyObject *run_c_kernel(const SignatureObject *s, bind_slot *slots, const gts_binding *b,
                              PyObject *kernel, PyObject *const *extras)
{
    gts_kernel_fn fn = c_kernel(kernel);
    void *ctx = NULL;
    PyObject *ctx_obj = extras[0];
    if (!fn || (ctx_obj && ctx_obj != Py_None && address_arg(ctx_obj, "ctx", &ctx) < 0))
        return NULL;
    int n = s->sig.nfields;
    gts_bound_field stack[GTPY_BIND_STACK_FIELDS], *bound = stack;
    if (n > GTPY_BIND_STACK_FIELDS && !(bound = PyMem_Malloc((size_t)n * sizeof *bound)))
        return PyErr_NoMemory();
    for (int f = 0; f < n; ++f)
        bound[f] = slots[f].bound;
    gts_error err = {GTS_OK, ""};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(b, bound, n, ctx, &err);
    Py_END_ALLOW_THREADS
    if (bound != stack)
        PyMem_Free(bound);
    if (rc == GTS_OK)
        return Py_NewRef(Py_None);
    if (err.code == GTS_OK) { /* the kernel failed without a message */
        err.code = rc < 0 ? rc : GTS_EINVAL;
        snprintf(err.message, sizeof err.message, "the kernel returned %d", rc);
    }
    return gtpy_raise_null(&err);
}

static PyObject *signature_call_c(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "call_c(kernel, *fields, ...): the kernel comes first");
        return NULL;
    }
    static gtpy_signature sig = GTPY_SIGNATURE("call_c", call_c_names, 0, 0, 0);
    return bind_and_run(self, &sig, args, nargs, kwnames, run_c_kernel, false);
}

/* ---- built-in stencils ------------------------------------------------------------ */

static const char *const builtin_names[] = {"domain", "origin", "device"};

/* The Signature of a built-in stencil on `device`, made once. */
static PyObject *builtin_signature(gts_stencil which, gts_device device)
{
    static PyObject *signatures[2][GTS_STENCIL_TRIDIAGONAL + 1];
    if (!signatures[device][which])
        signatures[device][which] = gtpy_signature_wrap(gts_stencil_signature_on(which, device));
    return signatures[device][which];
}

/* The device= keyword, read before the fields (it picks the signature they
 * bind with): 'cpu' (the default) or 'gpu'. */
static int builtin_device(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                          gts_device *out)
{
    *out = GTS_DEVICE_CPU;
    Py_ssize_t n = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < n; ++i)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "device") == 0)
            return gtpy_device(args[nargs + i], false, out);
    return 0;
}

/* Where a built-in stencil runs: the host, or the GPU of the fields' device
 * sides, whose kernel reaches every field's memory (its own, or its
 * managed memory). */
static const gts_device_ops *builtin_where(const SignatureObject *s, const bind_slot *slots)
{
    int n = s->sig.nfields;
    if (s->sig.device == GTS_DEVICE_CPU)
        return gts_device_host();
    const gts_device_ops *gpu = gtpy_slots_gpu(slots, n);
    if (!gpu) {
        PyErr_SetString(PyExc_RuntimeError,
                        "device: the stencil computes on the gpu, and there is no GPU");
        return NULL;
    }
    for (int f = 0; f < n; ++f) {
        const gts_device_ops *m = slots[f].memory;
        if (m && (m->owner ? m->owner : m) != gpu) {
            PyErr_Format(PyExc_ValueError,
                         "%U: its memory is on the %s device, the stencil runs on %s; copy it "
                         "there first",
                         PyTuple_GET_ITEM(s->names, f), m->name, gpu->name);
            return NULL;
        }
    }
    return gpu;
}

static PyObject *run_builtin(gts_stencil which, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    static gtpy_signature sigs[] = {
        GTPY_SIGNATURE("copy", builtin_names, 0, 0, 0),
        GTPY_SIGNATURE("laplacian", builtin_names, 0, 0, 0),
        GTPY_SIGNATURE("hdiff", builtin_names, 0, 0, 0),
        GTPY_SIGNATURE("tridiagonal", builtin_names, 0, 0, 0),
    };
    gts_device device;
    if (builtin_device(args, nargs, kwnames, &device) < 0)
        return NULL;
    SignatureObject *s = (SignatureObject *)builtin_signature(which, device);
    if (!s)
        return NULL;
    enum { MAX_FIELDS = 5 };
    bind_slot slots[MAX_FIELDS];
    int n = s->sig.nfields;
    gts_binding binding;
    gtpy_slots_init(slots, n);
    PyObject *values[3];
    const gts_device_ops *where = NULL;
    int rc = bind_call(s, &sigs[which], args, nargs, kwnames, slots, &binding, values);
    if (rc == 0 && !(where = builtin_where(s, slots)))
        rc = -1;
    if (rc == 0)
        rc = gtpy_slots_stream(slots, n, device, false, &binding.stream);
    if (rc == 0 && (rc = gtpy_slots_acquire(slots, n)) == 0) {
        gts_bound_field bound[MAX_FIELDS];
        for (int f = 0; f < n; ++f)
            bound[f] = slots[f].bound;
        gts_error err;
        Py_BEGIN_ALLOW_THREADS
        rc = gts_stencil_launch(where, which, &binding, bound, &err);
        Py_END_ALLOW_THREADS
        if (rc != GTS_OK)
            gtpy_raise(&err);
        rc = gtpy_slots_finish(s, slots, rc == GTS_OK);
    }
    gtpy_slots_clear(slots, n);
    return rc < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stencil_copy(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    (void)module;
    return run_builtin(GTS_STENCIL_COPY, args, nargs, kwnames);
}

static PyObject *stencil_laplacian(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    (void)module;
    return run_builtin(GTS_STENCIL_LAPLACIAN, args, nargs, kwnames);
}

static PyObject *stencil_hdiff(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    (void)module;
    return run_builtin(GTS_STENCIL_HDIFF, args, nargs, kwnames);
}

static PyObject *stencil_tridiagonal(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames)
{
    (void)module;
    return run_builtin(GTS_STENCIL_TRIDIAGONAL, args, nargs, kwnames);
}

static PyObject *stencil_signature(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    (void)module;
    static const char *const names[] = {"copy", "laplacian", "hdiff", "tridiagonal"};
    static const char *const params[] = {"name", "device"};
    static gtpy_signature sig = GTPY_SIGNATURE("_stencil_signature", params, 2, 1, 1);
    PyObject *v[2];
    gts_device device = GTS_DEVICE_CPU;
    if (gtpy_parse_args(&sig, args, nargs, kwnames, v) < 0 ||
        (v[1] && gtpy_device(v[1], false, &device) < 0))
        return NULL;
    int which = gtpy_choice(v[0], "stencil", names, 4,
                            "'copy', 'laplacian', 'hdiff' or 'tridiagonal'");
    return which < 0 ? NULL : Py_XNewRef(builtin_signature((gts_stencil)which, device));
}

/* _field_dims(dims, ndim=None): the labels of Field(array, dims), checked
 * as every dims= is; None with `ndim`: the default labels of that many
 * dimensions, those of storage creation (gts_dims_default). With `ndim`,
 * one label per dimension. */
static PyObject *field_dims(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    (void)module;
    static const char *const params[] = {"dims", "ndim"};
    static gtpy_signature sig = GTPY_SIGNATURE("_field_dims", params, 2, 1, 0);
    PyObject *v[2];
    int ndim = -1, n = 0;
    gts_dim dims[GTS_MAX_NDIM];
    gts_error err;
    if (gtpy_parse_args(&sig, args, nargs, kwnames, v) < 0 ||
        (v[1] && v[1] != Py_None && gtpy_c_int(v[1], "ndim", &ndim) < 0))
        return NULL;
    if (v[0] == Py_None && ndim >= 0) {
        if (gts_dims_default(ndim, dims, &err) != GTS_OK)
            return gtpy_raise_null(&err);
        n = ndim;
    } else if (gtpy_dims(v[0], "dims", &n, dims) < 0) {
        return NULL;
    } else if (ndim >= 0 && n != ndim) {
        PyErr_Format(PyExc_ValueError, "dims: %.200R has %d labels for the array's %d dimensions",
                     v[0], n, ndim);
        return NULL;
    }
    return gtpy_dims_to_tuple(n, dims);
}

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
#define BUILTIN_DEVICE_DOC                                                                    \
    "device='gpu': one kernel on the GPU, queued on the current stream (the fields' device "   \
    "sides ordered there; host fields copied in and out, with a FieldWarning)."
PyMethodDef gtpy_stencil_methods[] = {
    {"copy", FASTCALL(stencil_copy),
     "copy(out, inp, *, domain=None, origin=None, device='cpu')\n--\n\nout = inp over the domain. "
     BUILTIN_DEVICE_DOC},
    {"laplacian", FASTCALL(stencil_laplacian),
     "laplacian(out, inp, *, domain=None, origin=None, device='cpu')\n--\n\n"
     "out = inp[i-1] + inp[i+1] + inp[j-1] + inp[j+1] - 4 inp over the domain (inp: extent 1 "
     "in I and J). " BUILTIN_DEVICE_DOC},
    {"hdiff", FASTCALL(stencil_hdiff),
     "hdiff(out, inp, coeff, *, domain=None, origin=None, device='cpu')\n--\n\n"
     "The horizontal diffusion of GT4Py's examples, with flux limiter, into out (inp: extent 2 "
     "in I and J). " BUILTIN_DEVICE_DOC},
    {"tridiagonal", FASTCALL(stencil_tridiagonal),
     "tridiagonal(x, a, b, c, d, *, domain=None, origin=None, device='cpu')\n--\n\n"
     "Per column, the Thomas algorithm along K for a[k] x[k-1] + b[k] x[k] + c[k] x[k+1] = d[k] "
     "over the domain's K (a at its first and c at its last level are not read; no pivoting). "
     BUILTIN_DEVICE_DOC},
    {"_stencil_signature", FASTCALL(stencil_signature),
     "_stencil_signature(name, /, device='cpu')\n--\n\nThe Signature of a built-in stencil, by "
     "name, on the device kind."},
    {"_field_dims", FASTCALL(field_dims),
     "_field_dims(dims, ndim=None)\n--\n\nThe labels of Field(array, dims), checked; None "
     "with ndim: storage creation's default labels of ndim dimensions (I, J, K, then data "
     "dimensions 0, 1, ...)."},
    {NULL, NULL, 0, NULL},
};

PyMethodDef gtpy_signature_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))signature_bind, METH_FASTCALL | METH_KEYWORDS,
     "bind($self, /, *fields, domain=None, origin=None, **named_fields)\n--\n\n"
     "Returns a Binding. "
     "Reads each field (any object: Storage, NumPy, CuPy, xarray, Field(array, dims), a "
     "DLPack producer, or anything with __array__, read as np.asarray(obj) and, written, "
     "assigned back with obj[...] = values), decides origins and the domain and checks "
     "everything (see docs/stencils.md). Nothing is acquired until the Binding is entered."},
    {"call", (PyCFunction)(void (*)(void))signature_call, METH_FASTCALL | METH_KEYWORDS,
     "call($self, kernel, /, *fields, domain=None, origin=None, args=(), kwargs=None, "
     "**named_fields)\n--\n\n"
     "Binds the fields as bind() does, acquires them, calls kernel(domain, origins, *args, "
     "**arrays, **kwargs) (origins and arrays: {name: ...} in the kernel's order of "
     "dimensions; on the GPU its engine's arrays: CuPy's, computing on CuPy's current stream, or "
     "NumPy's over the emulated device's memory), then touches the written fields (only if the "
     "kernel returned) and releases all. Returns the kernel's result."},
    {"call_c", (PyCFunction)(void (*)(void))signature_call_c, METH_FASTCALL | METH_KEYWORDS,
     "call_c($self, kernel, /, *fields, domain=None, origin=None, ctx=None, **named_fields)\n--\n\n"
     "As call(), with a C kernel (gtstore/binding.h's gts_kernel_fn: a capsule, or its address "
     "as an int, e.g. ctypes.cast(lib.kernel, ctypes.c_void_p).value) that receives the "
     "binding and the bound fields, with ctx (an int address or None) and the GIL "
     "released; on the GPU it queues its work on binding->stream, the current stream. A "
     "kernel's error becomes the matching Python exception."},
    {NULL, NULL, 0, NULL},
};
