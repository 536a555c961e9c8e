/* NumPy's C API, bound at run time through the `_ARRAY_API` capsule that
 * NumPy exports for extensions (no NumPy headers at build time).
 *
 * Creating an ndarray directly over our memory costs about a third of
 * np.asarray on a buffer exporter (which builds a memoryview and parses a
 * PEP 3118 format). Only five slots of the table are used; their indices
 * and the type numbers below are part of NumPy's ABI, unchanged from 1.x to
 * 2.x. Anything unexpected (another ABI version, no capsule) disables this
 * path, and allocation goes through the buffer protocol instead, as it also
 * does when GTSTORE_NUMPY_CAPI=0 is set. */
#include "numpy.h"

#include <stdint.h>
#include <string.h>

enum { /* slots of the API table */
    SLOT_ABI_VERSION = 0,
    SLOT_ARRAY_TYPE = 2,
    SLOT_DESCR_FROM_TYPE = 45,
    SLOT_NEW_FROM_DESCR = 94,
    SLOT_SET_BASE_OBJECT = 282
};

enum { /* NumPy's type numbers */
    NPY_BOOL = 0, NPY_BYTE = 1, NPY_UBYTE = 2, NPY_SHORT = 3, NPY_USHORT = 4, NPY_INT = 5,
    NPY_UINT = 6, NPY_LONG = 7, NPY_ULONG = 8, NPY_LONGLONG = 9, NPY_ULONGLONG = 10,
    NPY_FLOAT = 11, NPY_DOUBLE = 12, NPY_CFLOAT = 14, NPY_CDOUBLE = 15, NPY_HALF = 23
};

#define NPY_ARRAY_C_CONTIGUOUS 0x0001
#define NPY_ARRAY_F_CONTIGUOUS 0x0002
#define NPY_ARRAY_WRITEABLE 0x0400
/* A view NumPy warns about writing (np.broadcast_arrays' broadcast results):
 * its buffer export is read-only. */
#define NPY_ARRAY_WARN_ON_WRITE 0x80000000u

static struct {
    int state; /* 0 not tried, 1 bound, -1 unavailable */
    PyTypeObject *array_type;
    PyObject *(*descr_from_type)(int);
    PyObject *(*new_from_descr)(PyTypeObject *, PyObject *, int, const Py_ssize_t *,
                                const Py_ssize_t *, void *, int, PyObject *);
    int (*set_base_object)(PyObject *, PyObject *);
    PyObject *descrs[NPY_HALF + 1];
} api;

static void **array_api_table(void)
{
    static const char *const modules[] = {"numpy._core._multiarray_umath",
                                          "numpy.core._multiarray_umath"};
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; ++i) {
        PyObject *module = PyImport_ImportModule(modules[i]);
        PyObject *capsule = module ? PyObject_GetAttrString(module, "_ARRAY_API") : NULL;
        void **table = capsule && PyCapsule_CheckExact(capsule)
                           ? PyCapsule_GetPointer(capsule, NULL)
                           : NULL;
        Py_XDECREF(capsule);
        Py_XDECREF(module);
        PyErr_Clear();
        if (table)
            return table;
    }
    return NULL;
}

/* GTSTORE_NUMPY_CAPI, by the rule of every gtstore switch (gtstore/error.h). */
static int wanted(bool *on, gts_error *err)
{
    return gts_switch_from_environment("GTSTORE_NUMPY_CAPI", true,
                                       "NumPy's C API where it is found, the default",
                                       "the buffer protocol", on, err);
}

int gtpy_numpy_capi_check_environment(gts_error *err)
{
    bool on;
    return wanted(&on, err);
}

static void bind(void)
{
    bool on = true;
    api.state = -1;
    /* a bad value was refused at import; one set since then keeps the
     * default (on), as libgtstore does for its variables */
    (void)wanted(&on, NULL);
    if (!on)
        return;
    void **table = array_api_table();
    if (!table)
        return;
    /* Function pointers are stored as void * in the table; POSIX lets them
     * round-trip, ISO C only through memcpy. */
    unsigned int (*abi_version)(void);
    memcpy(&abi_version, &table[SLOT_ABI_VERSION], sizeof abi_version);
    unsigned int abi = abi_version();
    if (abi != 0x01000009u && abi != 0x02000000u) /* NumPy 1.x and 2.x */
        return;
    api.array_type = (PyTypeObject *)table[SLOT_ARRAY_TYPE];
    memcpy(&api.descr_from_type, &table[SLOT_DESCR_FROM_TYPE], sizeof api.descr_from_type);
    memcpy(&api.new_from_descr, &table[SLOT_NEW_FROM_DESCR], sizeof api.new_from_descr);
    memcpy(&api.set_base_object, &table[SLOT_SET_BASE_OBJECT], sizeof api.set_base_object);
    api.state = 1;
}

bool gtpy_numpy_capi(void)
{
    if (api.state == 0)
        bind();
    return api.state == 1;
}

/* NumPy's type numbers of the dtypes storages hold, both ways. A dtype
 * takes the first number of its kind and size: int for 4 bytes, then long
 * (64 bits where long is, as NumPy's default integer), then long long. */
static const struct {
    int number;
    gts_dtype dtype;
} TYPES[] = {
    {NPY_BOOL, {GTS_KIND_BOOL, 1}},     {NPY_BYTE, {GTS_KIND_INT, 1}},
    {NPY_UBYTE, {GTS_KIND_UINT, 1}},    {NPY_SHORT, {GTS_KIND_INT, 2}},
    {NPY_USHORT, {GTS_KIND_UINT, 2}},   {NPY_INT, {GTS_KIND_INT, 4}},
    {NPY_UINT, {GTS_KIND_UINT, 4}},     {NPY_LONG, {GTS_KIND_INT, sizeof(long)}},
    {NPY_ULONG, {GTS_KIND_UINT, sizeof(long)}}, {NPY_LONGLONG, {GTS_KIND_INT, 8}},
    {NPY_ULONGLONG, {GTS_KIND_UINT, 8}}, {NPY_HALF, {GTS_KIND_FLOAT, 2}},
    {NPY_FLOAT, {GTS_KIND_FLOAT, 4}},   {NPY_DOUBLE, {GTS_KIND_FLOAT, 8}},
    {NPY_CFLOAT, {GTS_KIND_COMPLEX, 8}}, {NPY_CDOUBLE, {GTS_KIND_COMPLEX, 16}},
};
enum { NTYPES = sizeof TYPES / sizeof TYPES[0] };

/* -1 for a dtype storages do not hold. */
static int type_number(gts_dtype dtype)
{
    for (int i = 0; i < NTYPES; ++i)
        if (TYPES[i].dtype.kind == dtype.kind && TYPES[i].dtype.itemsize == dtype.itemsize)
            return TYPES[i].number;
    return -1;
}

/* The storage dtype of one of NumPy's type numbers; false for the others
 * (long double, object, strings, datetimes, user dtypes). */
static bool dtype_of_type_number(int number, gts_dtype *out)
{
    for (int i = 0; i < NTYPES; ++i)
        if (TYPES[i].number == number) {
            *out = TYPES[i].dtype;
            return true;
        }
    return false;
}

PyObject *gtpy_numpy_capi_array(gts_dtype dtype, int ndim, const Py_ssize_t *shape,
                                const Py_ssize_t *strides, void *data, bool readonly,
                                PyObject *base)
{
    if (!gtpy_numpy_capi()) { /* bound on first use: a caller may be the first */
        PyErr_SetString(PyExc_RuntimeError,
                        "this needs NumPy's C API, which is unavailable here "
                        "(GTSTORE_NUMPY_CAPI=0 or an unknown NumPy ABI)");
        return NULL;
    }
    int number = type_number(dtype);
    if (number < 0) {
        PyErr_Format(PyExc_TypeError, "NumPy has no type of kind '%c' and %d bytes", dtype.kind,
                     dtype.itemsize);
        return NULL;
    }
    if (!api.descrs[number] && !(api.descrs[number] = api.descr_from_type(number)))
        return NULL;
    Py_INCREF(api.descrs[number]); /* stolen by new_from_descr */
    PyObject *array = api.new_from_descr(api.array_type, api.descrs[number], ndim, shape, strides,
                                         data, readonly ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (!array)
        return NULL;
    if (api.set_base_object(array, Py_NewRef(base)) < 0) { /* steals base */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* ---- reading an ndarray ------------------------------------------------- */

/* The start of NumPy's array and descriptor structs, the same in NumPy 1.x
 * and 2.x (their public ABI; the descriptor's fields after type_num moved
 * in 2.x, so only these are read). */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    intptr_t *dimensions;
    intptr_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} array_head;

typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind, type, byteorder, former_flags;
    int type_num;
} descr_head;

bool gtpy_numpy_is_ndarray(PyObject *obj)
{
    if (gtpy_numpy_capi())
        return Py_TYPE(obj) == api.array_type;
    PyObject *ndarray = gtpy_numpy("ndarray");
    if (!ndarray)
        PyErr_Clear();
    return ndarray && Py_TYPE(obj) == (PyTypeObject *)ndarray;
}

/* NumPy's descriptor of a built-in type number (borrowed, cached): native
 * byte order, no fields, no metadata. */
static PyObject *canonical_descr(int number)
{
    if (!api.descrs[number] && !(api.descrs[number] = api.descr_from_type(number)))
        PyErr_Clear(); /* then nothing is read in C */
    return api.descrs[number];
}

bool gtpy_numpy_read(PyObject *obj, int max_ndim, gtpy_array_info *out)
{
    if (!gtpy_numpy_capi() || Py_TYPE(obj) != api.array_type)
        return false;
    const array_head *a = (const array_head *)obj;
    const descr_head *d = (const descr_head *)a->descr;
    /* only the canonical descriptor of its type number: another one may
     * have the other byte order, fields over the same bytes (a union) or
     * metadata, which the buffer protocol's reading refuses or reports */
    if (a->nd < 0 || a->nd > max_ndim || !dtype_of_type_number(d->type_num, &out->dtype) ||
        a->descr != canonical_descr(d->type_num))
        return false;
    out->ndim = a->nd;
    unsigned flags = (unsigned)a->flags;
    for (int i = 0; i < a->nd; ++i) {
        out->shape[i] = (int64_t)a->dimensions[i];
        out->strides[i] = (int64_t)a->strides[i];
    }
    /* The strides its buffer export gives: a contiguous array's are
     * recomputed in C order, else in Fortran order (NumPy leaves any
     * stride on an extent of 1, and zeros on an empty array). */
    if (flags & (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS)) {
        int64_t step = out->dtype.itemsize;
        bool c_order = flags & NPY_ARRAY_C_CONTIGUOUS;
        for (int k = 0; k < a->nd; ++k) {
            int i = c_order ? a->nd - 1 - k : k;
            out->strides[i] = step;
            if (gts_mul_overflow(step, out->shape[i], &step))
                return false; /* an empty array of huge extents: its export says */
        }
    }
    out->data = a->data;
    out->readonly = !(flags & NPY_ARRAY_WRITEABLE) || (flags & NPY_ARRAY_WARN_ON_WRITE);
    out->has_stream = false;
    out->stream = 0;
    return true;
}

/* ---- the numpy module --------------------------------------------------- */

PyObject *gtpy_numpy_asarray(void)
{
    static PyObject *asarray; /* on the hot path of every allocation */
    if (!asarray)
        asarray = Py_XNewRef(gtpy_numpy("asarray"));
    return asarray;
}

/* Names gtpy_numpy looked up, by the address of the caller's string
 * (direct-mapped; the text kept to tell a reused address): a ufunc call
 * looks up several, and the dict's lookup by a C string made a str each
 * time. */
enum { RECENT_NAMES = 64, RECENT_NAME_SIZE = 24 };
static struct {
    const char *address;
    char text[RECENT_NAME_SIZE];
    PyObject *value; /* borrowed from the dict */
} recent[RECENT_NAMES];

PyObject *gtpy_numpy(const char *name)
{
    static PyObject *numpy, *cache;
    /* by the whole address: string literals are not aligned, so two names
     * a few bytes apart (shifted out) shared a slot and evicted each other
     * on every ufunc call */
    size_t slot = (uintptr_t)name % RECENT_NAMES;
    if (recent[slot].address == name && strcmp(recent[slot].text, name) == 0)
        return recent[slot].value;
    if ((!numpy && !(numpy = PyImport_ImportModule("numpy"))) ||
        (!cache && !(cache = PyDict_New())))
        return NULL;
    PyObject *value = PyDict_GetItemString(cache, name);
    if (!value) {
        value = PyObject_GetAttrString(numpy, name);
        if (!value || PyDict_SetItemString(cache, name, value) < 0) {
            Py_XDECREF(value);
            return NULL;
        }
        Py_DECREF(value); /* the cache keeps it */
    }
    if (strlen(name) < RECENT_NAME_SIZE) {
        recent[slot].address = name;
        strcpy(recent[slot].text, name);
        recent[slot].value = value;
    }
    return value;
}
