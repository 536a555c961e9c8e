/* The objects the engine keeps over a buffer (engine_view.c makes them;
 * engine_spares.c keeps those of released buffers for reuse); private to
 * those two files. */
#ifndef GTPY_ENGINE_OBJECTS_H
#define GTPY_ENGINE_OBJECTS_H

#include "ext.h"

#include "gtstore/buffer.h"
#include "gtstore/dtype.h"

typedef struct {
    PyObject_HEAD
    gts_buffer *buffer; /* a reference of its own */
    char *base;         /* the block as the engine addresses it */
    Py_ssize_t size;
    bool host; /* `base` is host memory (NumPy's engine) */
} BlockObject;

/* What makes two views of a block the same array. */
typedef struct {
    Py_ssize_t offset; /* bytes from the block's base to element 0 */
    int ndim;
    gts_dtype dtype;
    Py_ssize_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
} view_key;

typedef struct {
    PyObject_HEAD
    BlockObject *block;
    PyObject *memory, *pointer; /* CuPy: UnownedMemory, the last MemoryPointer */
    Py_ssize_t pointer_offset;
    PyObject *views[2]; /* the last operand view, writable [0] and read-only [1] */
    view_key keys[2];
} EngineObject;

#endif
