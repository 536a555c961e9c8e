/* The preset registry from Python: list, inspect, register, unregister. */
#include "api.h"
#include "args.h"
#include "convert.h"
#include "errors.h"

#include <string.h>

static PyObject *api_presets(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    size_t count = gts_preset_count();
    PyObject *names = PyList_New(0);
    for (size_t i = 0; names && i < count; ++i) {
        gts_preset preset;
        if (gts_preset_at(i, &preset, NULL) != 0)
            break; /* unregistered meanwhile */
        PyObject *name = PyUnicode_FromString(preset.name);
        gts_preset_release(&preset);
        if (!name || PyList_Append(names, name) < 0)
            Py_CLEAR(names);
        Py_XDECREF(name);
    }
    PyObject *tuple = names ? PyList_AsTuple(names) : NULL;
    Py_XDECREF(names);
    return tuple;
}

/* The text of a preset name (NULL with a TypeError or ValueError). */
static const char *name_text(PyObject *name)
{
    const char *text = PyUnicode_Check(name) ? gtpy_text(name, "name") : NULL;
    if (!text && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "name: expected a str, got %.200R", name);
    return text;
}

static int lookup(PyObject *name, gts_preset *preset)
{
    const char *text = name_text(name);
    if (!text)
        return -1;
    gts_error err;
    return gts_preset_lookup(text, preset, &err) ? gtpy_raise(&err) : 0;
}

static PyObject *layout_value(const gts_preset *preset)
{
    switch (preset->rule) {
    case GTS_LAYOUT_C: return PyUnicode_FromString("C");
    case GTS_LAYOUT_F: return PyUnicode_FromString("F");
    case GTS_LAYOUT_FUNCTION: return Py_NewRef((PyObject *)preset->layout_ctx);
    default:
        return Py_BuildValue("(iii)", preset->base_layout[0], preset->base_layout[1],
                             preset->base_layout[2]);
    }
}

static PyObject *api_get_preset(PyObject *self, PyObject *name)
{
    (void)self;
    gts_preset preset;
    if (lookup(name, &preset) < 0)
        return NULL;
    PyObject *layout = layout_value(&preset);
    PyObject *result = layout ? Py_BuildValue("{s:s,s:L,s:N,s:s}", "name", preset.name,
                                              "alignment", (long long)preset.alignment, "layout",
                                              layout, "device", gtpy_device_name(preset.device))
                              : NULL;
    gts_preset_release(&preset);
    return result;
}

/* A Python callable as a layout function, read as a layout= callable is (a
 * permutation or an axis order such as "KJI"); safe from any thread. */
static int call_layout(int ndim, const gts_dim *dims, int *layout, void *ctx, gts_error *err)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = gtpy_layout((PyObject *)ctx, "layout", ndim, dims, 0, false, layout);
    PyGILState_Release(gil);
    return rc ? gts_error_set(err, GTS_EINVAL, "layout: the preset's layout function failed")
              : GTS_OK;
}

static void release_layout(void *ctx)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(gil);
}

static int read_layout(PyObject *layout, gts_preset *preset)
{
    if (PyUnicode_Check(layout)) {
        const char *text = gtpy_text(layout, "layout");
        if (!text)
            return -1;
        gts_error err;
        return gts_preset_layout_text(preset, text, &err) == 0 ? 0 : gtpy_raise(&err);
    }
    if (PyCallable_Check(layout)) {
        preset->rule = GTS_LAYOUT_FUNCTION;
        preset->layout_fn = call_layout;
        preset->layout_ctx = Py_NewRef(layout);
        preset->release_ctx = release_layout;
        return 0;
    }
    int64_t ranks[GTS_MAX_NDIM];
    int n;
    if (gtpy_int_tuple(layout, "layout", GTS_MAX_NDIM, &n, ranks) < 0)
        return -1;
    if (n != 3) {
        PyErr_Format(PyExc_ValueError, "layout: %.200R must give the ranks of I, J and K", layout);
        return -1;
    }
    for (int a = 0; a < 3; ++a)
        preset->base_layout[a] = ranks[a] < 0 || ranks[a] > 2 ? -1 : (int)ranks[a];
    preset->rule = GTS_LAYOUT_NAMED;
    return 0;
}

static PyObject *api_register_preset(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames)
{
    (void)self;
    enum { NAME, ALIGNMENT, LAYOUT, DEVICE, NPARAMS };
    static const char *const names[NPARAMS] = {
        [NAME] = "name", [ALIGNMENT] = "alignment", [LAYOUT] = "layout", [DEVICE] = "device"};
    static gtpy_signature sig = GTPY_SIGNATURE("register_preset", names, 1, 1, 0);
    PyObject *v[NPARAMS];
    if (gtpy_parse_args(&sig, args, nargs, kwnames, v) < 0)
        return NULL;
    gts_preset preset = {.alignment = 1, .rule = GTS_LAYOUT_NAMED, .base_layout = {0, 1, 2}};
    const char *name = name_text(v[NAME]);
    if (!name)
        return NULL;
    if (strlen(name) >= GTS_PRESET_NAME_SIZE) {
        PyErr_Format(PyExc_ValueError, "name: %.80R is longer than %d characters", v[NAME],
                     GTS_PRESET_NAME_SIZE - 1);
        return NULL;
    }
    strcpy(preset.name, name);
    if ((v[ALIGNMENT] && gtpy_int(v[ALIGNMENT], "alignment", &preset.alignment) < 0) ||
        (v[DEVICE] && v[DEVICE] != Py_None && gtpy_device(v[DEVICE], false, &preset.device) < 0) ||
        (v[LAYOUT] && v[LAYOUT] != Py_None && read_layout(v[LAYOUT], &preset) < 0))
        return NULL;
    gts_error err;
    if (gts_preset_register(&preset, &err) != 0) {
        if (preset.release_ctx)
            preset.release_ctx(preset.layout_ctx);
        return gtpy_raise_null(&err);
    }
    Py_RETURN_NONE;
}

static PyObject *api_unregister_preset(PyObject *self, PyObject *name)
{
    (void)self;
    const char *text = name_text(name);
    if (!text)
        return NULL;
    gts_error err;
    if (gts_preset_unregister(text, &err) != 0)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

PyMethodDef gtpy_presets_methods[] = {
    {"presets", api_presets, METH_NOARGS,
     "presets()\n--\n\nNames of the registered presets: the built-ins, then the user's."},
    {"get_preset", api_get_preset, METH_O,
     "get_preset(name)\n--\n\nThe preset as a dict: name, alignment (elements), layout (ranks "
     "of I, J and K; 'C'; 'F'; or a function) and device."},
    {"register_preset", (PyCFunction)(void (*)(void))api_register_preset,
     METH_FASTCALL | METH_KEYWORDS,
     "register_preset(name, alignment=1, layout=None, device=None)\n--\n\n"
     "Registers (or replaces) a user preset. alignment is in elements (multiplied by the "
     "itemsize); layout is the ranks of I, J and K in decreasing stride order such as (2, 1, "
     "0), an axis order such as 'KJI', 'C' or 'F' (positional), or a function from the dims "
     "tuple to a layout tuple; device is 'cpu' or 'gpu'. Built-in presets cannot be replaced."},
    {"unregister_preset", api_unregister_preset, METH_O,
     "unregister_preset(name)\n--\n\nRemoves a user preset."},
    {NULL, NULL, 0, NULL},
};
