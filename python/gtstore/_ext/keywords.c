/* The parameters of the creation functions of both APIs, declared once:
 * each name with the field of gtpy_request it fills and its check. An API
 * function lists the names it takes (its gtpy_signature, in arrays.c and
 * storage_api.c); adding a keyword is an entry here and its name there. */
#include "args.h"
#include "convert.h"
#include "request.h"

#include <stddef.h>
#include <string.h>

typedef struct gtpy_keyword {
    const char *name;
    size_t field;       /* offsetof the PyObject * of gtpy_request it fills */
    size_t param;       /* aliases: offsetof the const char * naming the one used; else 0 */
    bool none_is_value; /* None is passed on (else it means absent) */
    /* Aliases: whether a value agrees with the one given first (1 or 0; -1
     * with an exception). */
    int (*same)(PyObject *first, const char *first_name, PyObject *value, const char *name);
    int (*check)(PyObject *value); /* a value given: 0, or -1 with an exception */
} gtpy_keyword;

static int same_value(PyObject *first, const char *first_name, PyObject *value, const char *name)
{
    (void)first_name;
    (void)name;
    return PyObject_RichCompareBool(first, value, Py_EQ);
}

/* Dims compare by meaning: "IJK" agrees with ("I", "J", "K"). */
static int same_dims(PyObject *first, const char *first_name, PyObject *value, const char *name)
{
    gts_dim a[GTS_MAX_NDIM], b[GTS_MAX_NDIM];
    int na, nb;
    if (gtpy_dims(first, first_name, &na, a) < 0 || gtpy_dims(value, name, &nb, b) < 0)
        return -1;
    return na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

/* Layouts compare as written, a list agreeing with the tuple of the same
 * ranks ([0, 1] and (0, 1)); an axis string or a function as itself. */
static int same_layout(PyObject *first, const char *first_name, PyObject *value,
                       const char *name)
{
    bool ranks = PyList_Check(first) || PyTuple_Check(first);
    if (!ranks || !(PyList_Check(value) || PyTuple_Check(value)))
        return same_value(first, first_name, value, name);
    PyObject *a = PySequence_Tuple(first), *b = a ? PySequence_Tuple(value) : NULL;
    int same = b ? PyObject_RichCompareBool(a, b, Py_EQ) : -1;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return same;
}

/* device= and gpu= compare by the device kind: gpu=True agrees with
 * device="gpu". */
static int same_device(PyObject *first, const char *first_name, PyObject *value, const char *name)
{
    gts_device a, b;
    if (gtpy_request_device(first, first_name, &a) < 0 ||
        gtpy_request_device(value, name, &b) < 0)
        return -1;
    return a == b;
}

static int check_gpu(PyObject *value)
{
    gts_device device;
    return gtpy_request_device(value, "gpu", &device);
}

#define FIELD(name) offsetof(gtpy_request, name)

static const gtpy_keyword keywords[] = {
    /* The leading parameters. None is passed on for the shape, data and
     * fill value (the functions refuse it) and for copy (storage(copy=None)
     * does not copy); elsewhere it means "not given". */
    {.name = "shape", .field = FIELD(shape), .none_is_value = true},
    {.name = "a", .field = FIELD(source), .none_is_value = true},
    {.name = "data", .field = FIELD(source), .none_is_value = true},
    {.name = "x", .field = FIELD(source), .none_is_value = true},
    {.name = "fill_value", .field = FIELD(fill_value), .none_is_value = true},
    {.name = "dtype", .field = FIELD(dtype)},
    {.name = "device_data", .field = FIELD(device_data)},
    {.name = "sync_state", .field = FIELD(sync_state)},
    {.name = "copy", .field = FIELD(copy), .none_is_value = true},
    /* The keywords, converted by request.c. */
    {.name = "backend", .field = FIELD(preset), .param = FIELD(preset_param), .same = same_value},
    {.name = "defaults", .field = FIELD(preset), .param = FIELD(preset_param), .same = same_value},
    {.name = "default_parameters", .field = FIELD(preset), .param = FIELD(preset_param),
     .same = same_value},
    {.name = "aligned_index", .field = FIELD(aligned_index)},
    {.name = "alignment_size", .field = FIELD(alignment_size)},
    /* In elements (GDP-3's first draft): libgtstore multiplies it by the
     * itemsize and checks it against alignment_size. */
    {.name = "alignment", .field = FIELD(alignment)},
    {.name = "device", .field = FIELD(device), .param = FIELD(device_param), .same = same_device},
    {.name = "gpu", .field = FIELD(device), .param = FIELD(device_param), .same = same_device,
     .check = check_gpu},
    {.name = "dims", .field = FIELD(dims), .param = FIELD(dims_param), .same = same_dims},
    {.name = "dimensions", .field = FIELD(dims), .param = FIELD(dims_param), .same = same_dims},
    {.name = "axes", .field = FIELD(dims), .param = FIELD(dims_param), .same = same_dims},
    {.name = "halo", .field = FIELD(halo)},
    {.name = "layout", .field = FIELD(layout), .param = FIELD(layout_param), .same = same_layout},
    {.name = "layout_map", .field = FIELD(layout), .param = FIELD(layout_param),
     .same = same_layout},
    /* None is a value: device memory only (absent: "gt4py"); request.c
     * converts it. */
    {.name = "managed", .field = FIELD(managed), .none_is_value = true},
};

/* The entries of a signature's names, found on first use. */
static int find_keywords(gtpy_signature *sig)
{
    if (sig->keywords)
        return 0;
    if (sig->nnames > GTPY_MAX_ARGS) {
        PyErr_Format(PyExc_SystemError, "%s(): more than %d parameters", sig->function,
                     GTPY_MAX_ARGS);
        return -1;
    }
    const gtpy_keyword **found = PyMem_Calloc((size_t)sig->nnames, sizeof *found);
    if (!found)
        return PyErr_NoMemory(), -1;
    for (int i = 0; i < sig->nnames; ++i) {
        for (size_t k = 0; !found[i] && k < sizeof keywords / sizeof *keywords; ++k)
            if (strcmp(keywords[k].name, sig->names[i]) == 0)
                found[i] = &keywords[k];
        if (!found[i]) {
            PyErr_Format(PyExc_SystemError, "%s(): no keyword entry for '%s'", sig->function,
                         sig->names[i]);
            PyMem_Free(found);
            return -1;
        }
    }
    sig->keywords = found;
    return 0;
}

int gtpy_request_parse(gtpy_request *r, gtpy_signature *sig, PyObject *const *args,
                       Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *values[GTPY_MAX_ARGS];
    if (find_keywords(sig) < 0 || gtpy_parse_args(sig, args, nargs, kwnames, values) < 0)
        return -1;
    for (int i = 0; i < sig->nnames; ++i) {
        const gtpy_keyword *kw = sig->keywords[i];
        PyObject *value = values[i];
        if (!value || (value == Py_None && !kw->none_is_value))
            continue;
        PyObject **field = (PyObject **)((char *)r + kw->field);
        const char **param = kw->param ? (const char **)((char *)r + kw->param) : NULL;
        if (param && *field) { /* an alias given before */
            int same = kw->same(*field, *param, value, kw->name);
            if (same < 0)
                return -1;
            if (!same) {
                PyErr_Format(PyExc_ValueError,
                             "%s=%.200R and %s=%.200R disagree; they are aliases", *param,
                             *field, kw->name, value);
                return -1;
            }
            continue;
        }
        *field = value;
        if (param)
            *param = kw->name;
        if (kw->check && kw->check(value) < 0)
            return -1;
    }
    return 0;
}
