/* The declarative argument parser (args.c). */
#ifndef GTSTORE_EXT_ARGS_H
#define GTSTORE_EXT_ARGS_H

#include "ext.h"

/* Fast argument parsing for METH_FASTCALL | METH_KEYWORDS functions.
 * `names` lists every parameter, the first `npositional` may be passed by
 * position, the first `nrequired` are required, the first `nposonly` can
 * only be passed by position. Missing ones are NULL. */
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

#endif
