/* The _gtstore extension module's initialisation: the top layer, which
 * gathers the types, exceptions and functions of the other files. */
#include "api.h"
#include "binding_object.h"
#include "errors.h"
#include "numpy.h"
#include "storage.h"
#include "stream.h"
#include "write_hold.h"

#include <stdio.h>

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gtstore._gtstore",
    .m_doc = "C extension of gtstore: allocation, presets and buffer exports over libgtstore.",
    .m_size = -1,
};

/* gtstore.arrays' functions share names with the Storage API's (empty,
 * zeros, ...): they live in a module object of their own. */
static struct PyModuleDef arrays_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gtstore._gtstore.arrays",
    .m_doc = "The C functions behind gtstore.arrays.",
    .m_size = -1,
    .m_methods = gtpy_arrays_methods,
};

static int add_arrays_module(PyObject *module)
{
    PyObject *arrays = PyModule_Create(&arrays_def);
    int rc = arrays ? PyModule_AddObjectRef(module, "arrays", arrays) : -1;
    Py_XDECREF(arrays);
    return rc;
}

static int add_types(PyObject *module)
{
    static const struct {
        const char *name;
        PyTypeObject *type;
    } types[] = {
        {"Plan", &gtpy_Plan_Type},
        {"Storage", &gtpy_Storage_Type},
        {"CPUStorage", &gtpy_CPUStorage_Type},
        {"GPUStorage", &gtpy_GPUStorage_Type},
        {"SoftwareManagedGPUStorage", &gtpy_SoftwareManagedGPUStorage_Type},
        {"CudaManagedGPUStorage", &gtpy_CudaManagedGPUStorage_Type},
        /* GDP-3's final names for the same types */
        {"GT4PySyncedGPUStorage", &gtpy_SoftwareManagedGPUStorage_Type},
        {"CUDASyncedGPUStorage", &gtpy_CudaManagedGPUStorage_Type},
        {"CUDAManagedGPUStorage", &gtpy_CudaManagedGPUStorage_Type},
        {"SyncState", &gtpy_SyncState_Type},
        {"Partition", &gtpy_Partition_Type},
        {"HaloPlan", &gtpy_HaloPlan_Type},
        {"CubePartition", &gtpy_CubePartition_Type},
        {"HaloMessages", &gtpy_HaloMessages_Type},
        {"HaloMessage", &gtpy_HaloMessage_Type},
        {"Stream", &gtpy_Stream_Type},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i)
        if (PyType_Ready(types[i].type) < 0 ||
            PyModule_AddObjectRef(module, types[i].name, (PyObject *)types[i].type) < 0)
            return -1;
    return gtpy_halo_neighbor_init(module);
}

/* SyncState.SYNC_CLEAN, ... as class attributes: libgtstore's states,
 * numbered from 0 (gts_sync_state_name names each). */
static int add_sync_states(void)
{
    PyObject *dict = gtpy_SyncState_Type.tp_dict;
    const char *name;
    for (int state = 0; (name = gts_sync_state_name((gts_sync_state)state)); ++state) {
        PyObject *value = PyLong_FromLong(state);
        int rc = value ? PyDict_SetItemString(dict, name, value) : -1;
        Py_XDECREF(value);
        if (rc < 0)
            return -1;
    }
    PyType_Modified(&gtpy_SyncState_Type);
    /* Storage.SyncState: GDP-3's final text types the state so */
    if (PyDict_SetItemString(gtpy_Storage_Type.tp_dict, "SyncState",
                             (PyObject *)&gtpy_SyncState_Type) < 0)
        return -1;
    PyType_Modified(&gtpy_Storage_Type);
    return 0;
}

/* The built-in stencils go into the module as _stencil_<name> (gtstore.stencils
 * re-exports them by their names), keeping their own name as __name__, which
 * their text signatures must start with for inspect.signature and help(). */
static int add_stencil_functions(PyObject *module)
{
    PyObject *module_name = PyModule_GetNameObject(module);
    if (!module_name)
        return -1;
    int status = 0;
    for (PyMethodDef *def = gtpy_stencil_methods; def->ml_name && status == 0; ++def) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", def->ml_name[0] == '_' ? "" : "_stencil_",
                 def->ml_name);
        PyObject *function = PyCFunction_NewEx(def, NULL, module_name);
        status = function ? PyModule_AddObjectRef(module, name, function) : -1;
        Py_XDECREF(function);
    }
    Py_DECREF(module_name);
    return status;
}

/* The call side: Signature, Binding, KernelCaller, FieldWarning, stencils. */
static int add_binding(PyObject *module)
{
    gtpy_FieldWarning = PyErr_NewExceptionWithDoc(
        "gtstore.FieldWarning",
        "A field differs from its annotation (layout, alignment) in a way the stencil "
        "handles correctly, only slower.",
        PyExc_UserWarning, NULL);
    if (!gtpy_FieldWarning || PyModule_AddObjectRef(module, "FieldWarning", gtpy_FieldWarning) < 0)
        return -1;
    gtpy_Signature_Type.tp_methods = gtpy_signature_methods;
    if (PyType_Ready(&gtpy_Signature_Type) < 0 || PyType_Ready(&gtpy_Binding_Type) < 0 ||
        PyType_Ready(&gtpy_KernelCaller_Type) < 0 ||
        PyModule_AddObjectRef(module, "KernelCaller", (PyObject *)&gtpy_KernelCaller_Type) < 0 ||
        PyModule_AddObjectRef(module, "Signature", (PyObject *)&gtpy_Signature_Type) < 0 ||
        PyModule_AddObjectRef(module, "Binding", (PyObject *)&gtpy_Binding_Type) < 0)
        return -1;
    if (gtpy_bound_field_init(module) < 0)
        return -1;
    return add_stencil_functions(module);
}

PyMODINIT_FUNC PyInit__gtstore(void)
{
    gts_error err;
    if (gts_cache_limit_check_environment(&err) != GTS_OK ||
        gts_pinned_host_sides_check_environment(&err) != GTS_OK ||
        gtpy_numpy_capi_check_environment(&err) != GTS_OK)
        return (PyObject *)gtpy_raise_null(&err); /* a typo is an error, not the default */
    PyObject *module = PyModule_Create(&module_def);
    if (!module)
        return NULL;
    PyObject *bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_RuntimeError);
    if (!bases)
        goto fail;
    gtpy_UnknownPresetError = PyErr_NewExceptionWithDoc(
        "gtstore.UnknownPresetError",
        "No preset (backend) of that name is registered. Both a ValueError and a RuntimeError "
        "(what GT4Py raises for an unknown backend).",
        bases, NULL);
    Py_DECREF(bases);
    if (!gtpy_UnknownPresetError ||
        PyModule_AddObjectRef(module, "UnknownPresetError", gtpy_UnknownPresetError) < 0)
        goto fail;
    gtpy_NoSuchBufferError = PyErr_NewExceptionWithDoc(
        "gtstore.GTNoSuchBufferError",
        "The storage has no buffer on the requested side (host or device).",
        PyExc_BufferError, NULL);
    if (!gtpy_NoSuchBufferError ||
        PyModule_AddObjectRef(module, "GTNoSuchBufferError", gtpy_NoSuchBufferError) < 0)
        goto fail;
    if (gtpy_storage_type_ready() < 0 || add_types(module) < 0 || add_sync_states() < 0 ||
        add_binding(module) < 0)
        goto fail;
    gtpy_write_hold_init();
    if (add_arrays_module(module) < 0 ||
        PyModule_AddFunctions(module, gtpy_presets_methods) < 0 ||
        PyModule_AddFunctions(module, gtpy_memory_methods) < 0 ||
        PyModule_AddFunctions(module, gtpy_devices_methods) < 0 ||
        PyModule_AddFunctions(module, gtpy_stream_methods) < 0 ||
        PyModule_AddFunctions(module, gtpy_storage_api_methods) < 0)
        goto fail;
    if (PyModule_AddStringConstant(module, "__version__", GTS_VERSION_STRING) < 0 ||
        PyModule_AddIntConstant(module, "MAX_NDIM", GTS_MAX_NDIM) < 0)
        goto fail;
    return module;
fail:
    Py_DECREF(module);
    return NULL;
}
