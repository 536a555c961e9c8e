/* What every file of the extension starts from: Python's C API (with
 * Py_ssize_t lengths) and libgtstore's. */
#ifndef GTSTORE_EXT_EXT_H
#define GTSTORE_EXT_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gtstore/gtstore.h"

#endif
