/* DLPack: import and export (dlpack.c). */
#ifndef GTSTORE_EXT_DLPACK_H
#define GTSTORE_EXT_DLPACK_H

#include "ext.h"

/* DLPack (dlpack.c): a storage over the memory a DLPack producer exports
 * (the parameters come after, from as_storage's checks; memory of another
 * GPU than gtstore's is refused, naming `param`), and Storage.__dlpack__
 * and __dlpack_device__. */
PyObject *gtpy_storage_from_dlpack(PyObject *producer, const char *param);
/* Whether `obj` exports DLPack memory on a device other than the host
 * (its __dlpack_device__), which NumPy cannot read. */
bool gtpy_dlpack_on_device(PyObject *obj);


PyObject *gtpy_storage_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);
PyObject *gtpy_storage_dlpack_device(PyObject *self, PyObject *unused);

#endif
