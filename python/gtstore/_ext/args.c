/* The declarative argument parser of METH_FASTCALL | METH_KEYWORDS
 * functions and methods (gtpy_signature in args.h): positional and
 * keyword arguments matched to a list of names, with the messages CPython
 * gives for its own functions; with groups of names known at run time
 * (gtpy_names), it parses the stencil calls' fields too, and with a rest
 * dict (Python's **kwargs) a Signature's fields and the keywords a method
 * passes on to NumPy. */
#include "args.h"

#include <string.h>

static int intern_names(gtpy_signature *sig)
{
    if (sig->interned)
        return 0;
    PyObject **interned = PyMem_Calloc((size_t)sig->nnames, sizeof *interned);
    if (!interned)
        return PyErr_NoMemory(), -1;
    for (int i = 0; i < sig->nnames; ++i) {
        interned[i] = PyUnicode_InternFromString(sig->names[i]);
        if (!interned[i])
            return -1; /* the strings made so far live as long as the module */
    }
    sig->interned = interned;
    return 0;
}

static int keyword_index(const gtpy_signature *sig, PyObject *key)
{
    for (int i = sig->nposonly; i < sig->nnames; ++i)
        if (sig->interned[i] == key)
            return i;
    for (int i = sig->nposonly; i < sig->nnames; ++i) /* not interned: compare text */
        if (PyUnicode_Compare(sig->interned[i], key) == 0)
            return i;
    return -1;
}

static Py_ssize_t name_index(PyObject *names, PyObject *key)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; ++i)
        if (PyTuple_GET_ITEM(names, i) == key)
            return i;
    for (Py_ssize_t i = 0; i < n; ++i)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(names, i), key) == 0)
            return i;
    return -1;
}

/* What a message starts with: "f() " for a function, nothing for a
 * callable object. */
#define WHO(sig) (sig)->function ? (sig)->function : "", (sig)->function ? "() " : ""

/* Too many positional arguments: "takes 2 fields" where only fields are,
 * "at most" where some are optional (all of a plain signature's, as
 * before run-time names existed). */
static int too_many(const gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                    Py_ssize_t capacity, Py_ssize_t nargs)
{
    bool fields = sig->npositional == 0 && capacity > 0;
    for (int g = 0; g < ngroups; ++g)
        fields = fields && (!groups[g].positional || strcmp(groups[g].noun, "field") == 0);
    PyErr_Format(PyExc_TypeError, "%s%stakes %s%zd %s (%zd given)", WHO(sig),
                 ngroups == 0 || sig->npositional > sig->nrequired ? "at most " : "", capacity,
                 fields ? "fields" : "positional arguments", nargs);
    return -1;
}

static int unexpected(const gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                      PyObject *key)
{
    for (int g = 0; g < ngroups; ++g)
        if (strcmp(groups[g].noun, "field") == 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s%sgot an unexpected keyword argument '%U' (fields: %R)", WHO(sig),
                         key, groups[g].names);
            return -1;
        }
    PyErr_Format(PyExc_TypeError, "%s%sgot an unexpected keyword argument '%U'", WHO(sig), key);
    return -1;
}

/* The slot of a keyword: a group's, else the signature's; *found false
 * where nothing takes it, *slot NULL where it is dropped. */
static PyObject **keyword_slot(const gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                               PyObject **values, PyObject *key, const char **noun, bool *found)
{
    *found = true;
    for (int g = 0; g < ngroups; ++g) {
        Py_ssize_t i = name_index(groups[g].names, key);
        if (i >= 0) {
            *noun = groups[g].noun;
            return groups[g].values ? &groups[g].values[i] : NULL;
        }
    }
    int i = keyword_index(sig, key);
    *noun = "argument";
    *found = i >= 0;
    return i >= 0 ? &values[i] : NULL;
}

static int check_required(const gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                          PyObject **values)
{
    for (int g = 0; g < ngroups; ++g)
        for (Py_ssize_t i = 0; groups[g].required && i < PyTuple_GET_SIZE(groups[g].names); ++i)
            if (!groups[g].values[i]) {
                PyErr_Format(PyExc_TypeError, "%s%smissing %s '%U'", WHO(sig), groups[g].noun,
                             PyTuple_GET_ITEM(groups[g].names, i));
                return -1;
            }
    for (int i = 0; i < sig->nrequired; ++i) {
        if (!values[i]) {
            PyErr_Format(PyExc_TypeError, "%s%smissing required argument '%s'", WHO(sig),
                         sig->names[i]);
            return -1;
        }
    }
    return 0;
}

/* The positional arguments, into the positional groups then the
 * signature's first parameters. */
static int take_positional(const gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                           PyObject *const *args, Py_ssize_t nargs, PyObject **values)
{
    Py_ssize_t k = 0, capacity = sig->npositional;
    for (int g = 0; g < ngroups; ++g) {
        Py_ssize_t n = PyTuple_GET_SIZE(groups[g].names);
        capacity += groups[g].positional ? n : 0;
        for (Py_ssize_t i = 0; groups[g].values && i < n; ++i)
            groups[g].values[i] = groups[g].positional && k < nargs ? args[k++] : NULL;
    }
    for (int i = 0; i < sig->nnames; ++i)
        values[i] = i < sig->npositional && k < nargs ? args[k++] : NULL;
    return nargs > capacity ? too_many(sig, groups, ngroups, capacity, nargs) : 0;
}

/* The keywords, into the groups' and the signature's slots; those nothing
 * takes into `rest` (a dict: Python's **kwargs), or an error where it is
 * NULL. */
static int take_keywords(const gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                         PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         PyObject **values, PyObject *rest)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; ++k) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        const char *noun;
        bool found;
        PyObject **slot = keyword_slot(sig, groups, ngroups, values, key, &noun, &found);
        if (!found && rest) {
            if (PyDict_SetItem(rest, key, args[nargs + k]) < 0)
                return -1;
            continue;
        }
        if (!found)
            return unexpected(sig, groups, ngroups, key);
        if (slot && *slot) {
            PyErr_Format(PyExc_TypeError, "%s%sgot multiple values for %s '%U'", WHO(sig), noun,
                         key);
            return -1;
        }
        if (slot)
            *slot = args[nargs + k];
    }
    return 0;
}

static int parse(gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                 PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **values,
                 PyObject *rest)
{
    if (intern_names(sig) < 0 || take_positional(sig, groups, ngroups, args, nargs, values) < 0 ||
        take_keywords(sig, groups, ngroups, args, nargs, kwnames, values, rest) < 0)
        return -1;
    return check_required(sig, groups, ngroups, values);
}

int gtpy_parse_named(gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                     PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     PyObject **values)
{
    return parse(sig, groups, ngroups, args, nargs, kwnames, values, NULL);
}

int gtpy_parse_args(gtpy_signature *sig, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyObject **values)
{
    return parse(sig, NULL, 0, args, nargs, kwnames, values, NULL);
}

int gtpy_parse_tuple_rest(gtpy_signature *sig, PyObject *args, PyObject *kwargs,
                          PyObject **values, PyObject **rest)
{
    /* the arguments as a vectorcall's: on the stack, or the heap for many
     * (a Signature's fields) */
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0;
    PyObject *stack[GTPY_MAX_ARGS] = {NULL}, **vector = stack, *key, *value;
    if (nargs + nkw > GTPY_MAX_ARGS &&
        !(vector = PyMem_Malloc((size_t)(nargs + nkw) * sizeof *vector)))
        return PyErr_NoMemory(), -1;
    PyObject *kwnames = nkw ? PyTuple_New(nkw) : NULL;
    int rc = -1;
    if (rest && !(*rest = PyDict_New()))
        goto done;
    if (nkw && !kwnames)
        goto done;
    for (Py_ssize_t i = 0; i < nargs; ++i)
        vector[i] = PyTuple_GET_ITEM(args, i);
    Py_ssize_t pos = 0, k = 0;
    while (nkw && PyDict_Next(kwargs, &pos, &key, &value)) {
        PyTuple_SET_ITEM(kwnames, k, Py_NewRef(key));
        vector[nargs + k++] = value; /* borrowed: the dict lives through the call */
    }
    rc = parse(sig, NULL, 0, vector, nargs, kwnames, values, rest ? *rest : NULL);
done:
    if (rc < 0 && rest)
        Py_CLEAR(*rest);
    Py_XDECREF(kwnames);
    if (vector != stack)
        PyMem_Free(vector);
    return rc;
}

int gtpy_parse_tuple(gtpy_signature *sig, PyObject *args, PyObject *kwargs, PyObject **values)
{
    return gtpy_parse_tuple_rest(sig, args, kwargs, values, NULL);
}
