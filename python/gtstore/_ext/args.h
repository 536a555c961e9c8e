/* The declarative argument parser (args.c). */
#ifndef GTSTORE_EXT_ARGS_H
#define GTSTORE_EXT_ARGS_H

#include "ext.h"

/* The parameters of a METH_FASTCALL | METH_KEYWORDS function or method
 * (or a vectorcall), declared once: `names` lists every parameter, the
 * first `npositional` may be passed by position, the first `nrequired`
 * are required, the first `nposonly` can only be passed by position.
 * `function` names it in messages ("f() takes ..."); NULL for a callable
 * object, whose messages start with the verb. Missing values are NULL. */
typedef struct gtpy_signature {
    const char *function;
    const char *const *names;
    int nnames;
    int npositional;
    int nrequired;
    int nposonly;
    PyObject **interned;                  /* filled on first use */
    const struct gtpy_keyword **keywords; /* creation functions: see gtpy_request_parse */
} gtpy_signature;
#define GTPY_SIGNATURE(function, names, npositional, nrequired, nposonly)                  \
    {function, names, (int)(sizeof(names) / sizeof *(names)), npositional, nrequired, nposonly, \
     NULL, NULL}
int gtpy_parse_args(gtpy_signature *sig, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyObject **values);

/* The same for a tp_new, tp_init or METH_VARARGS | METH_KEYWORDS
 * function: the arguments as a tuple and a dict (or NULL). */
#define GTPY_MAX_ARGS 24
int gtpy_parse_tuple(gtpy_signature *sig, PyObject *args, PyObject *kwargs, PyObject **values);
/* gtpy_parse_tuple for a function that also takes **kwargs: *rest receives
 * a new dict of the keywords none of the signature's names take (NULL on
 * failure). */
int gtpy_parse_tuple_rest(gtpy_signature *sig, PyObject *args, PyObject *kwargs,
                          PyObject **values, PyObject **rest);

/* Parameters whose names are known at run time only (a stencil's fields,
 * a kernel's parameters): a group of them comes before the signature's,
 * positional groups take the leading positional arguments in order. */
typedef struct gtpy_names {
    PyObject *names;   /* a tuple of str */
    const char *noun;  /* what one is, in messages: "field" (listed when a
                          keyword matches nothing) or "argument" */
    bool positional;   /* also by position, before the signature's parameters */
    bool required;     /* else the caller checks what is missing */
    PyObject **values; /* one per name; NULL: the names are accepted and dropped */
} gtpy_names;
/* gtpy_parse_args with `ngroups` groups of run-time names before the
 * signature's own. */
int gtpy_parse_named(gtpy_signature *sig, const gtpy_names *groups, int ngroups,
                     PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     PyObject **values);

#endif
