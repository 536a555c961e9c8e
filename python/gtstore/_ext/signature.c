/* gtstore.Signature: a stencil's fields (Field annotations), their access
 * extents, the written ones and the compute device, read once into a
 * libgtstore gts_signature and checked there (gts_signature_check). */
#include "args.h"
#include "binding_object.h"
#include "convert.h"
#include "errors.h"

#include <string.h>

/* ---- the signature ----------------------------------------------------- */

static void signature_dealloc(PyObject *self)
{
    SignatureObject *s = (SignatureObject *)self;
    if (s->owned)
        PyMem_Free(s->fields);
    Py_XDECREF(s->names);
    Py_TYPE(self)->tp_free(self);
}

/* The attribute `name` of a Field annotation (new reference; None where
 * absent). */
static PyObject *annotation_attr(PyObject *annotation, const char *name)
{
    PyObject *value = PyObject_GetAttrString(annotation, name);
    if (!value && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return Py_NewRef(Py_None);
    }
    return value;
}

/* ---- placeholder dtypes --------------------------------------------------- */

/* Signature's dtypes=: placeholder names bound to dtypes (spec 001's
 * "dtypes" parameter of the stencil decorator), and the names the fields'
 * annotations used. A placeholder is a str that is a Python identifier and
 * no dtype gtstore holds ("T", "dtype_in"; "f8", "float64", "i4" or "d"
 * are dtypes). */
typedef struct {
    PyObject *dtypes; /* dict, or NULL where not given */
    PyObject *used;   /* set of the names bound */
} placeholders;

/* The parse error of a dtypes= value, named "dtypes['T']: ...". None is
 * refused, not read as NumPy reads it (float64): a placeholder bound to
 * nothing is a mistake, never a choice of float64. */
static int bound_dtype(PyObject *name, PyObject *value, gtpy_dtype *out)
{
    if (value == Py_None) {
        PyErr_Format(PyExc_TypeError,
                     "dtypes[%R]: None binds the placeholder %R to no dtype (NumPy would read "
                     "it as float64); give a dtype, such as {%R: 'f8'}",
                     name, name, name);
        return -1;
    }
    if (gtpy_dtype_parse(value, out) == 0)
        return 0;
    PyObject *param = PyUnicode_FromFormat("dtypes[%R]", name);
    const char *text = param ? PyUnicode_AsUTF8(param) : NULL;
    if (text)
        gtpy_prefix_error(text);
    Py_XDECREF(param);
    return -1;
}

/* dtypes= checked before the fields read it: a dict of placeholder names
 * (str) to dtypes. */
static int read_dtypes(PyObject *dtypes, placeholders *p)
{
    p->dtypes = NULL;
    if (!(p->used = PySet_New(NULL)))
        return -1;
    if (!dtypes || dtypes == Py_None)
        return 0;
    if (!PyDict_Check(dtypes)) {
        PyErr_Format(PyExc_TypeError, "dtypes: expected a dict of placeholder names to dtypes, "
                                      "such as {'T': 'f4'}, got %.200R",
                     dtypes);
        return -1;
    }
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    gtpy_dtype parsed;
    while (PyDict_Next(dtypes, &pos, &name, &value)) {
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "dtypes: keys are placeholder names (str), got %.200R",
                         name);
            return -1;
        }
        if (bound_dtype(name, value, &parsed) < 0)
            return -1;
    }
    p->dtypes = dtypes;
    return 0;
}

/* Every name of dtypes= bound some field's placeholder, else a ValueError. */
static int check_dtypes_used(const placeholders *p)
{
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    while (p->dtypes && PyDict_Next(p->dtypes, &pos, &name, &value)) {
        int used = PySet_Contains(p->used, name);
        if (used < 0)
            return -1;
        if (!used) {
            PyErr_Format(PyExc_ValueError,
                         "dtypes: %R names no placeholder of the fields' dtypes (a placeholder "
                         "is a name that is no dtype, such as Field['T', 'IJK']; placeholders "
                         "used: %R)",
                         name, p->used);
            return -1;
        }
    }
    return 0;
}

/* A field's dtype: a dtype gtstore holds, else a placeholder that
 * dtypes= binds (an unbound one is a ValueError naming it). */
static int field_dtype(PyObject *dtype, placeholders *p, gtpy_dtype *out)
{
    if (gtpy_dtype_parse(dtype, out) == 0)
        return 0;
    if (!PyUnicode_Check(dtype) || !PyUnicode_IsIdentifier(dtype) ||
        !PyErr_ExceptionMatches(PyExc_TypeError))
        return -1; /* no placeholder: the dtype's own error */
    PyObject *why = gtpy_error_take();
    PyObject *bound = p->dtypes ? Py_XNewRef(PyDict_GetItemWithError(p->dtypes, dtype)) : NULL;
    if (!bound && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError,
                     "dtype: %R is a placeholder that dtypes= does not bind; pass "
                     "Signature(..., dtypes={%R: 'f8'}), or a dtype gtstore holds (as a "
                     "dtype, %S)",
                     dtype, dtype, why);
    Py_XDECREF(why);
    /* held: parsing runs Python code, which may change the dict */
    int rc = bound && PySet_Add(p->used, dtype) == 0 ? bound_dtype(dtype, bound, out) : -1;
    Py_XDECREF(bound);
    return rc;
}

/* ---- the fields ------------------------------------------------------------ */

/* One field spec from a Field annotation (gtstore.Field[dtype, dims, ...]):
 * its dtype (or placeholder), dims, layout and alignment attributes. */
static int field_spec_from_annotation(PyObject *annotation, placeholders *p,
                                      gts_field_spec *spec)
{
    PyObject *dtype = annotation_attr(annotation, "dtype");
    PyObject *dims = dtype ? annotation_attr(annotation, "dims") : NULL;
    PyObject *layout = dims ? annotation_attr(annotation, "layout") : NULL;
    PyObject *alignment = layout ? annotation_attr(annotation, "alignment") : NULL;
    int rc = alignment ? 0 : -1;
    gtpy_dtype parsed;
    if (rc == 0 && (dtype == Py_None || !PyObject_HasAttrString(annotation, "dims"))) {
        PyErr_Format(PyExc_TypeError,
                     "expected a Field annotation such as Field['f8', 'IJK'], got %.200R",
                     annotation);
        rc = -1;
    }
    if (rc == 0 && (rc = field_dtype(dtype, p, &parsed)) == 0 && parsed.nsub) {
        PyErr_Format(PyExc_TypeError, "dtype: a subarray dtype %R: use data dimensions", dtype);
        rc = -1;
    }
    spec->dtype = parsed.base;
    gts_dim labels[GTS_MAX_NDIM];
    int ndim = 3;
    if (rc == 0 && dims != Py_None)
        rc = gtpy_dims(dims, "dims", &ndim, labels);
    else if (rc == 0)
        rc = gts_dims_default(3, labels, NULL);
    if (rc == 0 && ndim > GTS_BIND_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "dims: %d dimensions, at most %d", ndim,
                     GTS_BIND_MAX_NDIM);
        rc = -1;
    }
    if (rc == 0) {
        spec->ndim = ndim;
        memcpy(spec->dims, labels, (size_t)ndim * sizeof *labels);
    }
    if (rc == 0 && layout != Py_None) {
        int ranks[GTS_MAX_NDIM];
        rc = gtpy_layout(layout, "layout", ndim, spec->dims, 0, false, ranks);
        memcpy(spec->layout, ranks, (size_t)ndim * sizeof *ranks);
        spec->has_layout = true;
    }
    if (rc == 0 && alignment != Py_None)
        rc = gtpy_alignment(alignment, "alignment", &spec->alignment);
    Py_XDECREF(dtype);
    Py_XDECREF(dims);
    Py_XDECREF(layout);
    Py_XDECREF(alignment);
    return rc;
}

/* extents={"inp": ((1, 1), (1, 1), (0, 0))}: per field, per canonical
 * dimension, an int or a (lower, upper) pair. */
static int read_extents(SignatureObject *s, PyObject *extents)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (!PyDict_Check(extents)) {
        PyErr_Format(PyExc_TypeError, "extents: expected a dict of field names, got %.200R",
                     extents);
        return -1;
    }
    while (PyDict_Next(extents, &pos, &key, &value)) {
        int f = gtpy_signature_index(s, key);
        if (f < 0) {
            PyErr_Format(PyExc_ValueError, "extents: no field named %R", key);
            return -1;
        }
        gts_field_spec *spec = &s->fields[f];
        if (gtpy_halo(value, "extents", spec->ndim, spec->ndim, spec->extent) < 0)
            return gtpy_prefix_error(spec->name);
    }
    return 0;
}

static int read_writes(SignatureObject *s, PyObject *writes)
{
    if (PyUnicode_Check(writes)) {
        PyErr_SetString(PyExc_TypeError, "writes: expected a list of field names, got a str");
        return -1;
    }
    PyObject *iter = PyObject_GetIter(writes), *item;
    if (!iter)
        return gtpy_prefix_error("writes");
    while ((item = PyIter_Next(iter))) {
        int f = gtpy_signature_index(s, item);
        if (f < 0)
            PyErr_Format(PyExc_ValueError, "writes: no field named %R", item);
        else
            s->fields[f].written = true;
        Py_DECREF(item);
        if (f < 0)
            break;
    }
    Py_DECREF(iter);
    return PyErr_Occurred() ? -1 : 0;
}

int gtpy_signature_index(const SignatureObject *s, PyObject *name)
{
    Py_ssize_t n = PyTuple_GET_SIZE(s->names);
    for (Py_ssize_t i = 0; i < n; ++i)
        if (PyTuple_GET_ITEM(s->names, i) == name)
            return (int)i;
    if (!PyUnicode_Check(name))
        return -1;
    for (Py_ssize_t i = 0; i < n; ++i)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(s->names, i), name) == 0)
            return (int)i;
    return -1;
}

int gtpy_fields_given(const SignatureObject *s, const char *function, PyObject *const *objects)
{
    for (int f = 0; f < s->sig.nfields; ++f) {
        if (!objects[f]) {
            PyErr_Format(PyExc_TypeError, "%s%smissing field '%s'", function ? function : "",
                         function ? "() " : "", s->fields[f].name);
            return -1;
        }
        if (objects[f] == Py_None) {
            PyErr_Format(PyExc_TypeError, "%s: expected a field, got None", s->fields[f].name);
            return -1;
        }
    }
    return 0;
}

/* Signature(**fields, extents=, writes=, device=, relies_on_layout=): the
 * options by name (the one parser, args.c), every other keyword a field. */
static const char *const signature_options[] = {"extents", "writes", "device",
                                                "relies_on_layout", "dtypes"};
enum { OPT_EXTENTS, OPT_WRITES, OPT_DEVICE, OPT_RELIES, OPT_DTYPES, NOPTIONS };
static gtpy_signature signature_parser = GTPY_SIGNATURE("Signature", signature_options, 0, 0, 0);

/* The fields, {name: Field annotation} in the call's order, into
 * s->fields and s->names (interned; the specs' names point into them),
 * their placeholders bound by dtypes=. */
static int read_fields(SignatureObject *s, PyObject *fields, PyObject *dtypes)
{
    Py_ssize_t n = PyDict_GET_SIZE(fields);
    if (!(s->fields = PyMem_Calloc((size_t)(n ? n : 1), sizeof *s->fields)))
        return PyErr_NoMemory(), -1;
    if (!(s->names = PyTuple_New(n)))
        return -1;
    placeholders p;
    int rc = read_dtypes(dtypes, &p);
    PyObject *key, *value;
    Py_ssize_t pos = 0, f = 0;
    while (rc == 0 && PyDict_Next(fields, &pos, &key, &value)) {
        PyObject *interned = Py_NewRef(key);
        PyUnicode_InternInPlace(&interned);
        PyTuple_SET_ITEM(s->names, f, interned);
        gts_field_spec *spec = &s->fields[f++];
        if (!(spec->name = PyUnicode_AsUTF8(interned)))
            rc = -1;
        else if (field_spec_from_annotation(value, &p, spec) < 0)
            rc = gtpy_prefix_error(spec->name);
    }
    if (rc == 0)
        rc = check_dtypes_used(&p);
    Py_XDECREF(p.used);
    return rc;
}

static PyObject *signature_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError,
                        "Signature() takes fields by keyword: Signature(out=Field['f8', 'IJK'], "
                        "...)");
        return NULL;
    }
    PyObject *options[NOPTIONS], *fields;
    if (gtpy_parse_tuple_rest(&signature_parser, args, kwargs, options, &fields) < 0)
        return NULL;
    SignatureObject *s = (SignatureObject *)type->tp_alloc(type, 0);
    if (!s) {
        Py_DECREF(fields);
        return NULL;
    }
    s->owned = true;
    int rc = read_fields(s, fields, options[OPT_DTYPES]);
    int nfields = (int)PyDict_GET_SIZE(fields);
    Py_DECREF(fields);
    if (rc < 0)
        goto fail;
    s->sig = (gts_signature){nfields, s->fields, GTS_DEVICE_CPU};
    if ((options[OPT_DEVICE] && options[OPT_DEVICE] != Py_None &&
         gtpy_device(options[OPT_DEVICE], false, &s->sig.device) < 0) ||
        (options[OPT_EXTENTS] && options[OPT_EXTENTS] != Py_None &&
         read_extents(s, options[OPT_EXTENTS]) < 0) ||
        (options[OPT_WRITES] && options[OPT_WRITES] != Py_None &&
         read_writes(s, options[OPT_WRITES]) < 0))
        goto fail;
    if (options[OPT_RELIES]) {
        int relies = PyObject_IsTrue(options[OPT_RELIES]);
        if (relies < 0)
            goto fail;
        for (int f = 0; f < nfields; ++f)
            s->fields[f].relies_on_layout = relies;
    }
    gts_error err;
    if (gts_signature_check(&s->sig, &err) != GTS_OK) {
        gtpy_raise(&err);
        goto fail;
    }
    return (PyObject *)s;
fail:
    Py_DECREF(s);
    return NULL;
}

PyObject *gtpy_signature_wrap(const gts_signature *sig)
{
    SignatureObject *s = PyObject_New(SignatureObject, &gtpy_Signature_Type);
    if (!s)
        return NULL;
    s->sig = *sig;
    s->fields = (gts_field_spec *)sig->fields; /* static: never written, never freed */
    s->owned = false;
    s->names = PyTuple_New(sig->nfields);
    for (int f = 0; s->names && f < sig->nfields; ++f) {
        PyObject *name = PyUnicode_InternFromString(sig->fields[f].name);
        if (!name)
            Py_CLEAR(s->names);
        else
            PyTuple_SET_ITEM(s->names, f, name);
    }
    if (!s->names) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static PyObject *signature_fields(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(((SignatureObject *)self)->names);
}

static PyObject *signature_extents(PyObject *self, void *closure)
{
    (void)closure;
    SignatureObject *s = (SignatureObject *)self;
    PyObject *result = PyDict_New();
    for (int f = 0; result && f < s->sig.nfields; ++f) {
        PyObject *value = gtpy_halo_to_tuple(s->fields[f].ndim, s->fields[f].extent);
        if (!value || PyDict_SetItem(result, PyTuple_GET_ITEM(s->names, f), value) < 0)
            Py_CLEAR(result);
        Py_XDECREF(value);
    }
    return result;
}

static PyObject *signature_writes(PyObject *self, void *closure)
{
    (void)closure;
    SignatureObject *s = (SignatureObject *)self;
    PyObject *result = PyList_New(0);
    for (int f = 0; result && f < s->sig.nfields; ++f)
        if (s->fields[f].written && PyList_Append(result, PyTuple_GET_ITEM(s->names, f)) < 0)
            Py_CLEAR(result);
    return result;
}

static PyObject *signature_device(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(gtpy_device_name(((SignatureObject *)self)->sig.device));
}

static PyObject *signature_repr(PyObject *self)
{
    SignatureObject *s = (SignatureObject *)self;
    return PyUnicode_FromFormat("gtstore.Signature(fields=%R, device='%s')", s->names,
                                gtpy_device_name(s->sig.device));
}

static PyGetSetDef signature_getset[] = {
    {"fields", signature_fields, NULL, "The field names, in call order.", NULL},
    {"extents", signature_extents, NULL, "Per field, the (lower, upper) access extent per "
                                         "dimension (I, J, K, then data dimensions).", NULL},
    {"writes", signature_writes, NULL, "The fields the stencil writes.", NULL},
    {"device", signature_device, NULL, "The device kind the stencil computes on.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_Signature_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gtstore.Signature",
    .tp_basicsize = sizeof(SignatureObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Signature(*, extents=None, writes=None, device='cpu', relies_on_layout=False, "
              "dtypes=None, **fields)\n--\n\n"
              "A stencil's fields: each a Field annotation (Field['f8', 'IJK', ...], whose "
              "dtype may be a placeholder name such as 'T' that dtypes={'T': 'f4'} binds); "
              "extents "
              "per field as ((lower, upper) per dimension, I, J, K first); the names of the "
              "fields it writes; the device kind it computes on. With relies_on_layout, "
              "layouts and alignments that differ from the annotations are errors, else "
              "warnings (FieldWarning).",
    .tp_new = signature_new,
    .tp_dealloc = signature_dealloc,
    .tp_repr = signature_repr,
    .tp_getset = signature_getset,
};
