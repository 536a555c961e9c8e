/* A Storage as an array one computes with: Python's operators, each one
 * NumPy ufunc that dispatches to __array_ufunc__ (ufunc.c), as
 * numpy.lib.mixins.NDArrayOperatorsMixin does; elementwise comparisons;
 * `in`; and the ndarray methods (reductions, astype, fill, item, tolist,
 * reshape, T). */
#include "args.h"
#include "convert.h"
#include "errors.h"
#include "numpy.h"
#include "storage.h"
#include "storage_object.h"
#include "ufunc.h"

#include <string.h>

/* An operand that opts out of NumPy's dispatch (__array_ufunc__ = None),
 * so that Python tries its reflected method: NEP 13's rule for binops. */
static bool opts_out(PyObject *obj)
{
    /* the common operands first: a failed lookup on their type would cost
     * an AttributeError each call */
    if (gtpy_is_storage(obj) || PyFloat_CheckExact(obj) || PyLong_CheckExact(obj) ||
        PyComplex_CheckExact(obj) || PyBool_Check(obj) ||
        Py_TYPE(obj) == (PyTypeObject *)gtpy_numpy("ndarray"))
        return false;
    PyObject *attr = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__array_ufunc__");
    PyErr_Clear();
    bool none = attr == Py_None;
    Py_XDECREF(attr);
    return none;
}

/* An operand whose ufuncs only gtstore's __array_ufunc__ computes: a
 * storage of gtstore's own types (a Python subclass may override it), a
 * Python number or an ndarray (whose __array_ufunc__ defers to ours). */
static bool plain(PyObject *obj)
{
    return (gtpy_is_storage(obj) && !(Py_TYPE(obj)->tp_flags & Py_TPFLAGS_HEAPTYPE)) ||
           PyFloat_CheckExact(obj) || PyLong_CheckExact(obj) || PyComplex_CheckExact(obj) ||
           PyBool_Check(obj) || Py_TYPE(obj) == (PyTypeObject *)gtpy_numpy("ndarray");
}

/* ufunc(a, b): where both are plain, what NumPy's dispatch would call (our
 * __array_ufunc__'s "__call__"), without the dispatch (a tenth of a small
 * call's time); else through it. */
static PyObject *binary(const char *name, PyObject *a, PyObject *b)
{
    if (opts_out(a) || opts_out(b))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *ufunc = gtpy_numpy(name);
    if (!ufunc || !plain(a) || !plain(b))
        return ufunc ? PyObject_CallFunctionObjArgs(ufunc, a, b, NULL) : NULL;
    PyObject *inputs = PyTuple_Pack(2, a, b);
    PyObject *result = inputs ? gtpy_ufunc_call(ufunc, inputs, NULL) : NULL;
    Py_XDECREF(inputs);
    return result;
}

/* a op= b: into a's memory (out=(a,)), a itself the result. Called with
 * vectorcall: a keyword dict per call showed in the overhead. */
static PyObject *in_place(const char *name, PyObject *a, PyObject *b)
{
    static PyObject *out_name;
    if (opts_out(b))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *ufunc = gtpy_numpy(name);
    if (!out_name && !(out_name = Py_BuildValue("(s)", "out")))
        return NULL;
    PyObject *out = ufunc ? PyTuple_Pack(1, a) : NULL;
    if (!out)
        return NULL;
    PyObject *result = NULL;
    if (plain(a) && plain(b)) { /* as binary: without NumPy's dispatch */
        PyObject *inputs = PyTuple_Pack(2, a, b);
        PyObject *kwargs = inputs ? PyDict_New() : NULL;
        if (kwargs && PyDict_SetItem(kwargs, PyTuple_GET_ITEM(out_name, 0), out) == 0)
            result = gtpy_ufunc_call(ufunc, inputs, kwargs);
        Py_XDECREF(kwargs);
        Py_XDECREF(inputs);
    } else {
        PyObject *args[3] = {a, b, out};
        result = PyObject_Vectorcall(ufunc, args, 2, out_name);
    }
    Py_DECREF(out);
    return result;
}

static PyObject *unary(const char *name, PyObject *a)
{
    PyObject *ufunc = gtpy_numpy(name);
    return ufunc ? PyObject_CallOneArg(ufunc, a) : NULL;
}

/* op(a, out=(a,)): a itself the result. */
static PyObject *in_place_unary(const char *name, PyObject *a)
{
    PyObject *ufunc = gtpy_numpy(name);
    PyObject *kw = ufunc ? Py_BuildValue("{s:(O)}", "out", a) : NULL;
    PyObject *args = kw ? PyTuple_Pack(1, a) : NULL;
    PyObject *result = args ? PyObject_Call(ufunc, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return result;
}

#define BINARY(slot, ufunc)                                                                  \
    static PyObject *op_##slot(PyObject *a, PyObject *b) { return binary(ufunc, a, b); }    \
    static PyObject *op_i##slot(PyObject *a, PyObject *b) { return in_place(ufunc, a, b); }
BINARY(add, "add")
BINARY(subtract, "subtract")
BINARY(multiply, "multiply")
BINARY(true_divide, "true_divide")
BINARY(floor_divide, "floor_divide")
BINARY(remainder, "remainder")
BINARY(lshift, "left_shift")
BINARY(rshift, "right_shift")
BINARY(and, "bitwise_and")
BINARY(or, "bitwise_or")
BINARY(xor, "bitwise_xor")
BINARY(matmul, "matmul")

static PyObject *op_divmod(PyObject *a, PyObject *b)
{
    return binary("divmod", a, b);
}

/* The ufunc ndarray's `**` computes `a ** b` with (NumPy's
 * fast_scalar_power), which is not always np.power: for an exponent that
 * is exactly the Python int 2, np.square (so bool ** 2 is int8); for
 * floats and complex numbers, the Python int -1 np.reciprocal and the
 * Python float 0.5 np.sqrt (so complex(inf) ** -1 is 0, not nan). NULL for
 * np.power. */
static const char *power_shortcut(PyObject *a, PyObject *b)
{
    if (!gtpy_is_storage(a))
        return NULL; /* a reflected power: np.power */
    gts_storage g;
    gtpy_storage_load(a, &g);
    bool inexact = g.dtype.kind == GTS_KIND_FLOAT || g.dtype.kind == GTS_KIND_COMPLEX;
    if (PyLong_CheckExact(b)) {
        int overflow;
        long exponent = PyLong_AsLongAndOverflow(b, &overflow);
        if (!overflow && exponent == 2)
            return "square";
        return !overflow && exponent == -1 && inexact ? "reciprocal" : NULL;
    }
    if (PyFloat_CheckExact(b) && inexact && PyFloat_AS_DOUBLE(b) == 0.5)
        return "sqrt";
    return NULL;
}

static PyObject *op_power(PyObject *a, PyObject *b, PyObject *modulo)
{
    if (modulo != Py_None)
        Py_RETURN_NOTIMPLEMENTED; /* pow(a, b, m): NumPy has none either */
    const char *shortcut = power_shortcut(a, b);
    return shortcut ? unary(shortcut, a) : binary("power", a, b);
}

static PyObject *op_ipower(PyObject *a, PyObject *b, PyObject *modulo)
{
    if (modulo != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    const char *shortcut = power_shortcut(a, b);
    return shortcut ? in_place_unary(shortcut, a) : in_place("power", a, b);
}

#define UNARY(slot, ufunc) \
    static PyObject *op_##slot(PyObject *a) { return unary(ufunc, a); }
UNARY(negative, "negative")
UNARY(positive, "positive")
UNARY(absolute, "absolute")
UNARY(invert, "invert")

/* bool(), int(), float() and operator.index() are NumPy's on an ndarray
 * view: a size-1 storage converts as NumPy allows, any other raises
 * NumPy's error. */
static PyObject *through_ndarray(PyObject *self, PyObject *(*convert)(PyObject *))
{
    PyObject *array = gtpy_storage_ndarray(self, false);
    PyObject *result = array ? convert(array) : NULL;
    Py_XDECREF(array);
    return result;
}

static int op_bool(PyObject *self)
{
    PyObject *array = gtpy_storage_ndarray(self, false);
    int truth = array ? PyObject_IsTrue(array) : -1;
    Py_XDECREF(array);
    return truth;
}

static PyObject *op_int(PyObject *self)
{
    return through_ndarray(self, PyNumber_Long);
}

static PyObject *op_float(PyObject *self)
{
    return through_ndarray(self, PyNumber_Float);
}

static PyObject *op_index(PyObject *self)
{
    return through_ndarray(self, PyNumber_Index);
}

static PyObject *call_complex(PyObject *array)
{
    return PyObject_CallOneArg((PyObject *)&PyComplex_Type, array);
}

PyObject *gtpy_storage_complex(PyObject *self, PyObject *unused)
{
    (void)unused;
    return through_ndarray(self, call_complex);
}

PyNumberMethods gtpy_storage_as_number = {
    .nb_add = op_add,
    .nb_subtract = op_subtract,
    .nb_multiply = op_multiply,
    .nb_remainder = op_remainder,
    .nb_divmod = op_divmod,
    .nb_power = op_power,
    .nb_negative = op_negative,
    .nb_positive = op_positive,
    .nb_absolute = op_absolute,
    .nb_bool = op_bool,
    .nb_invert = op_invert,
    .nb_lshift = op_lshift,
    .nb_rshift = op_rshift,
    .nb_and = op_and,
    .nb_xor = op_xor,
    .nb_or = op_or,
    .nb_int = op_int,
    .nb_float = op_float,
    .nb_inplace_add = op_iadd,
    .nb_inplace_subtract = op_isubtract,
    .nb_inplace_multiply = op_imultiply,
    .nb_inplace_remainder = op_iremainder,
    .nb_inplace_power = op_ipower,
    .nb_inplace_lshift = op_ilshift,
    .nb_inplace_rshift = op_irshift,
    .nb_inplace_and = op_iand,
    .nb_inplace_xor = op_ixor,
    .nb_inplace_or = op_ior,
    .nb_floor_divide = op_floor_divide,
    .nb_true_divide = op_true_divide,
    .nb_inplace_floor_divide = op_ifloor_divide,
    .nb_inplace_true_divide = op_itrue_divide,
    .nb_index = op_index,
    .nb_matrix_multiply = op_matmul,
    .nb_inplace_matrix_multiply = op_imatmul,
};

/* ---- comparisons and `in` ------------------------------------------------------------------ */

/* `obj` as an array of Python objects (new reference). */
static PyObject *as_objects(PyObject *obj)
{
    PyObject *asarray = gtpy_numpy_asarray();
    PyObject *args = asarray ? PyTuple_Pack(1, obj) : NULL;
    PyObject *kwargs = args ? Py_BuildValue("{s:O}", "dtype", (PyObject *)&PyBaseObject_Type)
                            : NULL;
    PyObject *result = kwargs ? PyObject_Call(asarray, args, kwargs) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return result;
}

/* Elementwise, as ufuncs. == and != with a value no loop of the ufunc
 * compares with the storage's dtype (a str, bytes, a datetime64) are
 * NumPy's: each element compared as a Python object (elementwise False,
 * True for !=), here through the same ufunc on that value as an object
 * array, so that the result is a storage of bool, as with None. */
PyObject *gtpy_storage_richcompare(PyObject *a, PyObject *b, int op)
{
    static const char *const names[] = {"less", "less_equal", "equal", "not_equal", "greater",
                                        "greater_equal"};
    PyObject *result = binary(names[op], a, b);
    if (result || (op != Py_EQ && op != Py_NE) || !PyErr_ExceptionMatches(PyExc_TypeError))
        return result;
    bool self_first = gtpy_is_storage(a);
    PyObject *other = self_first ? b : a;
    if (gtpy_is_storage(other))
        return NULL; /* two storages: every dtype of theirs compares */
    PyErr_Clear();
    PyObject *objects = as_objects(other);
    result = objects ? binary(names[op], self_first ? a : objects, self_first ? objects : b)
                     : NULL;
    Py_XDECREF(objects);
    return result;
}

/* value in s: NumPy's (s == value).any(). */
int gtpy_storage_contains(PyObject *self, PyObject *value)
{
    PyObject *equal = gtpy_storage_richcompare(self, value, Py_EQ);
    if (equal == Py_NotImplemented) {
        Py_DECREF(equal);
        return 0;
    }
    PyObject *any = equal ? PyObject_CallMethod(equal, "any", NULL) : NULL;
    int found = any ? PyObject_IsTrue(any) : -1;
    Py_XDECREF(equal);
    Py_XDECREF(any);
    return found;
}

/* ---- methods --------------------------------------------------------------------------------- */

#define REDUCTION(name)                                                                   \
    PyObject *gtpy_storage_##name(PyObject *self, PyObject *args, PyObject *kwargs)       \
    {                                                                                     \
        return gtpy_storage_reduction(self, #name, args, kwargs);                         \
    }
REDUCTION(sum)
REDUCTION(prod)
REDUCTION(mean)
REDUCTION(std)
REDUCTION(var)
REDUCTION(min)
REDUCTION(max)
REDUCTION(any)
REDUCTION(all)
REDUCTION(argmin)
REDUCTION(argmax)

/* NumPy's result on the host view: item(*args), tolist(). */
static PyObject *host_method(PyObject *self, const char *name, PyObject *args)
{
    PyObject *view = gtpy_storage_ndarray(self, false);
    PyObject *method = view ? PyObject_GetAttrString(view, name) : NULL;
    PyObject *result = method ? PyObject_Call(method, args, NULL) : NULL;
    Py_XDECREF(method);
    Py_XDECREF(view);
    return result;
}

PyObject *gtpy_storage_item(PyObject *self, PyObject *args)
{
    return host_method(self, "item", args);
}

PyObject *gtpy_storage_tolist(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *empty = PyTuple_New(0);
    PyObject *result = empty ? host_method(self, "tolist", empty) : NULL;
    Py_XDECREF(empty);
    return result;
}

/* fill(value): s[...] = value, on the side GDP-3's final text chooses. */
PyObject *gtpy_storage_fill(PyObject *self, PyObject *value)
{
    if (PyObject_SetItem(self, Py_Ellipsis, value) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* astype(dtype, casting="unsafe", copy=True): a storage like this one (dims,
 * halo, aligned point, layout, alignment where it suits the itemsize,
 * device) of another dtype, the values cast by NumPy's rules. */
PyObject *gtpy_storage_astype(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "order", "casting", "subok", "copy"};
    static gtpy_signature sig = GTPY_SIGNATURE("astype", names, 5, 1, 0);
    PyObject *values[5];
    gtpy_dtype dtype;
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0 ||
        gtpy_dtype_parse(values[0], &dtype) < 0)
        return NULL;
    gts_storage g;
    gts_storage_spec spec;
    gts_template like;
    gts_error err;
    gtpy_storage_load(self, &g);
    int copy;
    if (gtpy_copy_flag(values[4], 1, 0, &copy) < 0)
        return NULL;
    if (values[1] && values[1] != Py_None &&
        !(PyUnicode_Check(values[1]) && PyUnicode_CompareWithASCIIString(values[1], "K") == 0)) {
        PyErr_Format(PyExc_ValueError,
                     "order: %.200R; a storage keeps its layout (only 'K' is accepted)",
                     values[1]);
        return NULL;
    }
    if (values[2] && values[2] != Py_None) { /* NumPy's casting rule, checked by NumPy */
        PyObject *from = gtpy_storage_get(self, (void *)(intptr_t)GET_DTYPE);
        PyObject *can = from ? PyObject_CallFunctionObjArgs(gtpy_numpy("can_cast"), from,
                                                            values[0], values[2], NULL)
                             : NULL;
        int ok = can ? PyObject_IsTrue(can) : -1;
        if (ok == 0)
            PyErr_Format(PyExc_TypeError, "astype: cannot cast %S to %S under casting=%R", from,
                         values[0], values[2]);
        Py_XDECREF(can);
        Py_XDECREF(from);
        if (ok <= 0)
            return NULL;
    }
    if (dtype.nsub) {
        PyErr_Format(PyExc_TypeError, "dtype: %.200R is a subarray dtype", values[0]);
        return NULL;
    }
    if (!copy && gts_dtype_equal(dtype.base, g.dtype))
        return Py_NewRef(self);
    gts_template_from_storage(&g, true, &like);
    if (gts_storage_spec_init(&spec, g.ndim, g.shape, dtype.base, &err) != 0)
        return gtpy_raise_null(&err);
    spec.like = &like;
    spec.managed = gts_storage_managed(&g); /* a GPUStorage stays one */
    PyObject *result = gtpy_storage_create(&spec, 0, NULL);
    if (result && PyObject_SetItem(result, Py_Ellipsis, self) < 0)
        Py_CLEAR(result);
    return result;
}

/* reshape(*shape): a view where it is one: the same shape, or the same
 * without dims of extent 1 (dropped as an index 0 drops them). A reshape
 * that regroups the values has no dims to give them: ValueError. */
PyObject *gtpy_storage_reshape(PyObject *self, PyObject *args)
{
    PyObject *shape_obj = PyTuple_GET_SIZE(args) == 1 && !gtpy_is_integer(PyTuple_GET_ITEM(args, 0))
                              ? PyTuple_GET_ITEM(args, 0)
                              : args;
    int ndim;
    int64_t shape[GTS_MAX_NDIM];
    if (gtpy_extents(shape_obj, "shape", &ndim, shape) < 0)
        return NULL;
    gts_storage g, view;
    gts_error err;
    gtpy_storage_load(self, &g);
    gts_storage_view(&g, &view);
    if (gts_storage_reshape(&view, ndim, shape, &err) != 0) {
        gts_storage_release(&view);
        /* a regrouping ("reshape: ...") is NumPy's on the array; a bad shape
         * is bad there too */
        bool regroups = strncmp(err.message, "reshape:", 8) == 0;
        PyErr_Format(PyExc_ValueError, "%s%s", err.message,
                     regroups ? "; reshape np.asarray(s) instead" : "");
        return NULL;
    }
    return gtpy_storage_derived(self, &view);
}

PyObject *gtpy_storage_T(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *empty = PyTuple_New(0);
    PyObject *result = empty ? gtpy_storage_transpose(self, empty) : NULL;
    Py_XDECREF(empty);
    return result;
}

/* Seed 001: 11 for the managed storage types, which handle mixed
 * operations first, 10 for the others. */
PyObject *gtpy_storage_array_priority(PyObject *self, void *closure)
{
    (void)closure;
    bool managed = PyObject_TypeCheck(self, &gtpy_SoftwareManagedGPUStorage_Type) ||
                   PyObject_TypeCheck(self, &gtpy_CudaManagedGPUStorage_Type);
    return PyFloat_FromDouble(managed ? 11.0 : 10.0);
}
