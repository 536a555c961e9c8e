/* gtstore.KernelCaller: a Python kernel with a stencil's call signature,
 * bound by gtstore on every call, in one C call.
 *
 *   caller = KernelCaller(signature, kernel, parameters=(), leading=(), ignored=())
 *   caller(*fields, *parameters, domain=None, origin=None, **by_name)
 *
 * The positional arguments are the signature's fields, then the parameters;
 * all may come by name too. Each call binds the fields (Signature.bind's
 * rules and checks), acquires them, calls
 *   kernel(domain, origins, *leading_values, **arrays, **parameters)
 * (the `leading` keywords, None where not given, go positionally; `ignored`
 * keywords are accepted and dropped), then touches the written fields if
 * the kernel returned, and releases all. The fields' names, "domain",
 * "origin", parameters, leading and ignored are all distinct (else a
 * ValueError when made). The GT4Py adapter is a subclass:
 * GT4Py's generated run(_domain_, _origin_, exec_info, **fields, **params). */
#include "args.h"
#include "binding_object.h"
#include "convert.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    SignatureObject *sig;
    PyObject *kernel;
    PyObject *parameters, *leading, *ignored; /* tuples of str */
} KernelCallerObject;

/* The arguments of one call, borrowed. */
typedef struct call_args {
    PyObject **fields, **parameters, **leading;
    PyObject *values[2]; /* domain, origin */
} call_args;

/* fields and parameters by position or name, leading arguments and
 * domain= and origin= by name, the ignored names dropped. */
static int parse(const KernelCallerObject *c, PyObject *const *args, size_t nargsf,
                 PyObject *kwnames, call_args *a)
{
    static const char *const names[] = {"domain", "origin"};
    static gtpy_signature sig = GTPY_SIGNATURE(NULL, names, 0, 0, 0);
    const gtpy_names groups[] = {
        {c->sig->names, "argument", true, false, a->fields},
        {c->parameters, "argument", true, true, a->parameters},
        {c->leading, "argument", false, false, a->leading},
        {c->ignored, "argument", false, false, NULL},
    };
    if (gtpy_parse_named(&sig, groups, 4, args, PyVectorcall_NARGS(nargsf), kwnames, a->values) < 0)
        return -1;
    return gtpy_fields_given(c->sig, NULL, a->fields);
}

/* kernel(domain, origins, *leading, **arrays, **parameters) */
static PyObject *run_kernel(const KernelCallerObject *c, bind_slot *slots, const gts_binding *b,
                            const call_args *a)
{
    Py_ssize_t nleading = PyTuple_GET_SIZE(c->leading);
    PyObject *positional = PyTuple_New(2 + nleading);
    PyObject *domain = positional ? gtpy_int64_tuple(3, b->domain) : NULL;
    PyObject *origins = domain ? gtpy_bound_origins(c->sig, slots) : NULL;
    PyObject *arrays = origins ? gtpy_bound_arrays(c->sig, slots, b->stream) : NULL;
    PyObject *result = NULL;
    if (arrays) {
        PyTuple_SET_ITEM(positional, 0, Py_NewRef(domain));
        PyTuple_SET_ITEM(positional, 1, Py_NewRef(origins));
        for (Py_ssize_t i = 0; i < nleading; ++i)
            PyTuple_SET_ITEM(positional, 2 + i,
                             Py_NewRef(a->leading[i] ? a->leading[i] : Py_None));
        int rc = 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c->parameters) && rc == 0; ++i)
            rc = PyDict_SetItem(arrays, PyTuple_GET_ITEM(c->parameters, i), a->parameters[i]);
        if (rc == 0)
            result = PyObject_Call(c->kernel, positional, arrays);
    }
    Py_XDECREF(positional);
    Py_XDECREF(domain);
    Py_XDECREF(origins);
    Py_XDECREF(arrays);
    return result;
}

enum { STACK = 8 };

static PyObject *caller_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    KernelCallerObject *c = (KernelCallerObject *)self;
    if (!c->sig) {
        PyErr_SetString(PyExc_TypeError, "KernelCaller: not initialised (__init__ not called)");
        return NULL;
    }
    int n = c->sig->sig.nfields;
    Py_ssize_t nparams = PyTuple_GET_SIZE(c->parameters), nleading = PyTuple_GET_SIZE(c->leading);
    size_t nobjects = (size_t)(n + nparams + nleading);
    PyObject *object_stack[3 * STACK], **objects = object_stack;
    bind_slot slot_stack[STACK], *slots = slot_stack;
    if (nobjects > 3 * STACK && !(objects = PyMem_Calloc(nobjects, sizeof *objects)))
        return PyErr_NoMemory();
    if (n > STACK && !(slots = PyMem_Malloc((size_t)n * sizeof *slots))) {
        if (objects != object_stack)
            PyMem_Free(objects);
        return PyErr_NoMemory();
    }
    memset(objects, 0, nobjects * sizeof *objects);
    call_args a = {objects, objects + n, objects + n + nparams, {NULL, NULL}};
    gtpy_slots_init(slots, n);
    PyObject *result = NULL;
    int rc = parse(c, args, nargsf, kwnames, &a);
    for (int f = 0; f < n && rc == 0; ++f)
        rc = gtpy_slot_load(&slots[f], a.fields[f], &c->sig->fields[f], c->sig->sig.device);
    gts_binding binding;
    if (rc == 0 && gtpy_bind_slots(c->sig, slots, a.values[0], a.values[1], &binding) == 0 &&
        gtpy_slots_stream(slots, n, c->sig->sig.device, true, &binding.stream) == 0 &&
        gtpy_slots_acquire(slots, n) == 0) {
        result = run_kernel(c, slots, &binding, &a);
        if (gtpy_slots_finish(c->sig, slots, result != NULL) < 0)
            Py_CLEAR(result);
    }
    gtpy_slots_clear(slots, n);
    if (slots != slot_stack)
        PyMem_Free(slots);
    if (objects != object_stack)
        PyMem_Free(objects);
    return result;
}

static PyObject *caller_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *self = PyType_GenericNew(type, args, kwargs);
    if (self) /* callable before __init__ too, to say so */
        ((KernelCallerObject *)self)->vectorcall = caller_vectorcall;
    return self;
}

/* A tuple of str from a sequence of str (new reference). */
static PyObject *names_tuple(PyObject *obj, const char *param)
{
    PyObject *names = obj ? PySequence_Tuple(obj) : PyTuple_New(0);
    for (Py_ssize_t i = 0; names && i < PyTuple_GET_SIZE(names); ++i)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_Format(PyExc_TypeError, "%s: expected names (str), got %.200R", param,
                         PyTuple_GET_ITEM(names, i));
            Py_CLEAR(names);
        }
    if (!names && obj && PyErr_ExceptionMatches(PyExc_TypeError) && !PySequence_Check(obj)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a sequence of names, got %.200R", param, obj);
    }
    return names;
}

/* Adds `names` (of the argument `param`) to `taken` (name -> what it is,
 * in messages); a name already there is a ValueError: the call would pass
 * one argument for two (parameters=("inp",) beside a field inp, or
 * "origin", captured by origin=). */
static int claim_names(PyObject *taken, PyObject *names, const char *param)
{
    PyObject *what = PyUnicode_FromFormat("a name in %s", param);
    int rc = what ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(names); ++i) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *prev = PyDict_GetItemWithError(taken, name);
        if (prev)
            PyErr_Format(PyExc_ValueError,
                         "%s: %R is already %U; each name is one argument of the call", param,
                         name, prev);
        rc = prev || PyErr_Occurred() ? -1 : PyDict_SetItem(taken, name, what);
    }
    Py_XDECREF(what);
    return rc;
}

/* The fields, domain= and origin=, then parameters, leading and ignored:
 * all names distinct. */
static int check_names(const SignatureObject *sig, PyObject *const groups[3])
{
    static const char *const params[] = {"parameters", "leading", "ignored"};
    PyObject *taken = PyDict_New();
    PyObject *field = PyUnicode_FromString("a field's name");
    PyObject *keyword = PyUnicode_FromString("a keyword of the call");
    int rc = taken && field && keyword ? 0 : -1;
    for (Py_ssize_t f = 0; rc == 0 && f < PyTuple_GET_SIZE(sig->names); ++f)
        rc = PyDict_SetItem(taken, PyTuple_GET_ITEM(sig->names, f), field);
    if (rc == 0)
        rc = PyDict_SetItemString(taken, "domain", keyword);
    if (rc == 0)
        rc = PyDict_SetItemString(taken, "origin", keyword);
    for (int g = 0; g < 3 && rc == 0; ++g)
        rc = claim_names(taken, groups[g], params[g]);
    Py_XDECREF(taken);
    Py_XDECREF(field);
    Py_XDECREF(keyword);
    return rc;
}

static int caller_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"signature", "kernel", "parameters", "leading",
                                        "ignored"};
    static gtpy_signature parser = GTPY_SIGNATURE("KernelCaller", names, 5, 2, 0);
    PyObject *v[5];
    if (gtpy_parse_tuple(&parser, args, kwargs, v) < 0)
        return -1;
    PyObject *sig = v[0], *kernel = v[1], *parameters = v[2], *leading = v[3], *ignored = v[4];
    if (!PyObject_TypeCheck(sig, &gtpy_Signature_Type)) {
        PyErr_Format(PyExc_TypeError, "signature: expected a gtstore.Signature, got %.200R", sig);
        return -1;
    }
    if (!PyCallable_Check(kernel)) {
        PyErr_Format(PyExc_TypeError, "kernel: expected a callable, got %.200R", kernel);
        return -1;
    }
    PyObject *p = names_tuple(parameters, "parameters");
    PyObject *l = p ? names_tuple(leading, "leading") : NULL;
    PyObject *i = l ? names_tuple(ignored, "ignored") : NULL;
    PyObject *const groups[3] = {p, l, i};
    if (!i || check_names((const SignatureObject *)sig, groups) < 0) {
        Py_XDECREF(i);
        Py_XDECREF(p);
        Py_XDECREF(l);
        return -1;
    }
    KernelCallerObject *c = (KernelCallerObject *)self;
    Py_XSETREF(c->sig, (SignatureObject *)Py_NewRef(sig));
    Py_XSETREF(c->kernel, Py_NewRef(kernel));
    Py_XSETREF(c->parameters, p);
    Py_XSETREF(c->leading, l);
    Py_XSETREF(c->ignored, i);
    c->vectorcall = caller_vectorcall;
    return 0;
}

static int caller_traverse(PyObject *self, visitproc visit, void *arg)
{
    KernelCallerObject *c = (KernelCallerObject *)self;
    Py_VISIT(c->kernel); /* (a subclass's type and __dict__: subtype_traverse's) */
    return 0;
}

static int caller_clear(PyObject *self)
{
    KernelCallerObject *c = (KernelCallerObject *)self;
    Py_CLEAR(c->kernel);
    return 0;
}

static void caller_dealloc(PyObject *self)
{
    KernelCallerObject *c = (KernelCallerObject *)self;
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    caller_clear(self);
    Py_CLEAR(c->sig);
    Py_CLEAR(c->parameters);
    Py_CLEAR(c->leading);
    Py_CLEAR(c->ignored);
    type->tp_free(self); /* a heap subclass's type reference: subtype_dealloc's */
}

static PyObject *caller_signature(PyObject *self, void *closure)
{
    (void)closure;
    KernelCallerObject *c = (KernelCallerObject *)self;
    return Py_NewRef(c->sig ? (PyObject *)c->sig : Py_None);
}

static PyGetSetDef caller_getset[] = {
    {"signature", caller_signature, NULL, "The Signature the fields are bound with.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_KernelCaller_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gtstore.KernelCaller",
    .tp_basicsize = sizeof(KernelCallerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "KernelCaller(signature, kernel, parameters=(), leading=(), ignored=())\n--\n\n"
              "A Python kernel with a stencil's call signature: the fields, then the named "
              "parameters, by position or name, with domain= and origin=. Every call binds "
              "the fields (every check), acquires them, calls kernel(domain, origins, "
              "*leading, **arrays, **parameters) (on the GPU with its engine's arrays, as "
              "Signature.call), touches the written fields after a successful run and "
              "releases all. `leading` keywords are passed positionally "
              "(None when not given); `ignored` keywords are accepted and dropped. All "
              "names (fields, domain, origin, parameters, leading, ignored) are distinct: "
              "ValueError otherwise.",
    .tp_new = caller_new,
    .tp_init = caller_init,
    .tp_dealloc = caller_dealloc,
    .tp_traverse = caller_traverse,
    .tp_clear = caller_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(KernelCallerObject, vectorcall),
    .tp_getset = caller_getset,
};
