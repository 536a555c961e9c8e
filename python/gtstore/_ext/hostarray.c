/* BufferView: a strided window into a libgtstore buffer, and the base of the
 * NumPy arrays gtstore.arrays returns. It holds a reference to the buffer,
 * so the memory lives as long as any array or view of it. NumPy arrays are
 * made over it with NumPy's C API (numpy_api.c) or, where that is not
 * available, through the buffer protocol it exports (np.asarray; the
 * array's base is then a memoryview of the BufferView). */
#include "module.h"

#include <stddef.h>

typedef struct {
    PyObject_VAR_HEAD
    gts_buffer *buffer;
    char *data; /* element 0 */
    gts_dtype dtype;
    Py_ssize_t exports;
    int ndim;
    bool readonly, c_contiguous, f_contiguous;
    Py_ssize_t extents[]; /* shape[ndim], then strides[ndim] */
} BufferView;

#define SHAPE(v) ((v)->extents)
#define STRIDES(v) ((v)->extents + (v)->ndim)

/* Contiguous in C order (last index fastest) or Fortran order. */
static bool contiguous(const BufferView *v, bool fortran)
{
    Py_ssize_t expected = v->dtype.itemsize;
    for (int k = 0; k < v->ndim; ++k) {
        int d = fortran ? k : v->ndim - 1 - k;
        if (SHAPE(v)[d] == 0)
            return true;
        if (SHAPE(v)[d] != 1 && STRIDES(v)[d] != expected)
            return false;
        expected *= SHAPE(v)[d];
    }
    return true;
}

static int refuse(Py_buffer *view, const char *why)
{
    view->obj = NULL;
    PyErr_Format(PyExc_BufferError, "gtstore buffer: %s", why);
    return -1;
}

int gtpy_export_buffer(PyObject *exporter, const gtpy_export *e, Py_buffer *view, int flags)
{
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && e->readonly)
        return refuse(view, "the array is read-only");
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !e->c_contiguous)
        return refuse(view, "the array is not C-contiguous");
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !e->f_contiguous)
        return refuse(view, "the array is not Fortran-contiguous");
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !e->c_contiguous &&
        !e->f_contiguous)
        return refuse(view, "the array is not contiguous");
    if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !e->c_contiguous)
        return refuse(view, "the array is not C-contiguous; request strides");
    Py_ssize_t len = e->dtype.itemsize;
    for (int d = 0; d < e->ndim; ++d)
        len *= e->shape[d];
    view->buf = e->data;
    view->obj = Py_NewRef(exporter);
    view->len = len;
    view->itemsize = e->dtype.itemsize;
    view->readonly = e->readonly;
    view->ndim = e->ndim;
    view->format = (flags & PyBUF_FORMAT) ? (char *)gts_dtype_format(e->dtype) : NULL;
    view->shape = (flags & PyBUF_ND) ? e->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? e->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static int bufferview_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    BufferView *v = (BufferView *)self;
    gtpy_export e = {v->data, v->dtype, v->ndim, SHAPE(v), STRIDES(v), v->readonly,
                     v->c_contiguous, v->f_contiguous};
    if (gtpy_export_buffer(self, &e, view, flags) < 0)
        return -1;
    ++v->exports;
    return 0;
}

static void bufferview_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    --((BufferView *)self)->exports;
}

static void bufferview_dealloc(PyObject *self)
{
    assert(((BufferView *)self)->exports == 0); /* every export holds a reference */
    gts_buffer_release(((BufferView *)self)->buffer);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs bufferview_as_buffer = {
    .bf_getbuffer = bufferview_getbuffer,
    .bf_releasebuffer = bufferview_releasebuffer,
};

PyTypeObject gtpy_BufferView_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore._gtstore.BufferView",
    .tp_doc = "A strided window into memory owned by libgtstore, exported through the buffer "
              "protocol. NumPy arrays from gtstore.arrays view their memory through one.",
    .tp_basicsize = offsetof(BufferView, extents),
    .tp_itemsize = sizeof(Py_ssize_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = bufferview_dealloc,
    .tp_as_buffer = &bufferview_as_buffer,
};

static BufferView *bufferview_new(gts_buffer *buffer, char *data, int ndim, const int64_t *shape,
                                  const int64_t *strides, gts_dtype dtype)
{
    BufferView *v = PyObject_NewVar(BufferView, &gtpy_BufferView_Type, 2 * ndim);
    if (!v)
        return NULL;
    v->buffer = gts_buffer_retain(buffer);
    v->data = data;
    v->dtype = dtype;
    v->exports = 0;
    v->ndim = ndim;
    v->readonly = false;
    for (int d = 0; d < ndim; ++d) {
        SHAPE(v)[d] = (Py_ssize_t)shape[d];
        STRIDES(v)[d] = (Py_ssize_t)strides[d];
    }
    v->c_contiguous = contiguous(v, false);
    v->f_contiguous = contiguous(v, true);
    return v;
}

PyObject *gtpy_ndarray(gts_buffer *buffer, int64_t offset, const gts_geometry *geometry,
                       gts_dtype dtype)
{
    bool capi = gtpy_numpy_capi();
    PyObject *asarray = capi ? NULL : gtpy_numpy_asarray();
    if (!capi && !asarray)
        return NULL;
    char *data = (char *)gts_buffer_host(buffer) + offset;
    BufferView *view = bufferview_new(buffer, data, geometry->ndim, geometry->shape,
                                      geometry->strides, dtype);
    if (!view)
        return NULL;
    PyObject *array = capi ? gtpy_numpy_capi_array(dtype, view->ndim, SHAPE(view), STRIDES(view),
                                                   data, view->readonly, (PyObject *)view)
                           : PyObject_CallOneArg(asarray, (PyObject *)view);
    Py_DECREF(view);
    return array;
}
