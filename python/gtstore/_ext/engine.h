/* The array library that computes on a GPU (engine.c; its arrays over
 * storages: engine_view.c).
 *
 * Seed 001 computes with storages through NumPy on the host and CuPy on a
 * GPU. On a CUDA GPU the engine is CuPy (imported on first use); on the
 * emulated device it is NumPy over the host memory behind the device's
 * addresses, reached through the same steps (arrays over an object per
 * buffer that holds its block, the engine's functions by NumPy's names,
 * copies to and from the host), so that everything but CuPy itself is
 * tested on every machine.
 *
 * Every engine call has completed when the caller's operation returns
 * (gtpy_engine_finish): gtstore's sync rule and its other operations assume
 * it, whatever stream CuPy computes on.
 *
 * CuPy computes on its current device, which gtstore does not query (that
 * would cost a call per operation): where it is not the storages' GPU,
 * CuPy's kernels raise their ValueError ("... different from the current
 * device ...") or, with peer access, compute correctly with a warning. */
#ifndef GTSTORE_EXT_ENGINE_H
#define GTSTORE_EXT_ENGINE_H

#include "ext.h"

typedef struct gtpy_engine {
    const char *name;          /* "NumPy" or "CuPy", for messages */
    const gts_device_ops *gpu; /* the device it computes on */
    PyObject *module;          /* numpy or cupy (borrowed: cached for the process) */
    bool cuda;
    struct { /* CuPy's types and functions (borrowed, cached; NULL for NumPy) */
        PyObject *ndarray, *memory_pointer, *unowned_memory, *get_current_stream;
    } cupy;
} gtpy_engine;

/* The engine of `gpu` (the emulated device or a CUDA device; the host's is
 * NumPy too, for the steps the host path borrows). CUDA needs CuPy: else
 * an error that says so. Cached: no call into Python once imported. */
int gtpy_engine_get(const gts_device_ops *gpu, gtpy_engine *out);

/* Whether the engine reads and writes memory of `device` in place: the
 * GPU's own memory and its managed memory. */
bool gtpy_engine_reaches(const gtpy_engine *e, const gts_device_ops *device);

/* An array of the engine over `storage`'s device side in place
 * (engine_view.c): synced there first and, for a `write` of a writable
 * storage, marked written (gtstore/access.h); read-only otherwise (NumPy).
 * Of `shape` and `strides` (bytes, 0 broadcasts), or where `shape` is NULL
 * the storage's own. One array construction at most: the engine's objects
 * over the buffer are made once per buffer. An `operand` view (used only
 * within the caller's operation, never handed out) is the same array as
 * the last one of its buffer with the same shape, strides, offset and
 * writability, if there is one. The array keeps the buffer's memory alive,
 * not the storage. */
PyObject *gtpy_engine_storage_view(const gtpy_engine *e, PyObject *storage, int ndim,
                                   const Py_ssize_t *shape, const Py_ssize_t *strides, bool write,
                                   bool operand);

/* engine.asarray(obj): an array-like on the GPU, copied there if it is not
 * (CuPy copies host arrays; NumPy reads them where they are). */
PyObject *gtpy_engine_asarray(const gtpy_engine *e, PyObject *obj);
/* engine.array(obj): a new array on the GPU holding obj's values. */
PyObject *gtpy_engine_copy(const gtpy_engine *e, PyObject *obj);
/* engine.empty_like(array). */
PyObject *gtpy_engine_empty_like(const gtpy_engine *e, PyObject *array);
/* `array`'s values into the host ndarray `host` (NumPy's assignment). */
int gtpy_engine_to_host(const gtpy_engine *e, PyObject *host, PyObject *array);

/* The engine's function of the name of a NumPy function or ufunc (a new
 * reference): TypeError where the engine has none. */
PyObject *gtpy_engine_function(const gtpy_engine *e, PyObject *numpy_function);

/* Keywords the engine's ufuncs take beyond out=: NumPy takes all of
 * NumPy's; CuPy dtype= and casting= (where= is applied by the caller). A
 * TypeError naming the first other one. */
int gtpy_engine_check_keywords(const gtpy_engine *e, PyObject *ufunc, PyObject *kwargs);

/* Waits for the work queued by the engine (CuPy's current stream). May be
 * called with an exception pending (after a failure): it is kept and -1
 * returned. */
int gtpy_engine_finish(const gtpy_engine *e);

/* Whether `obj` is an array in CUDA memory of another library (it has
 * __cuda_array_interface__ and is not a storage): a GPU array for seed
 * 001's choice of the compute device. */
bool gtpy_is_cuda_array(PyObject *obj);

#endif
