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
 * The engine's work follows the stream order (gtstore/access.h,
 * docs/storage.md "Stream order"): CuPy computes on its current stream, so
 * the storages' device sides are accessed on that stream (which waits for
 * their buffers' device work on the device), and gtpy_engine_finish records
 * each buffer's event there instead of synchronising. NumPy over the
 * emulated device computes on the host: its accesses are on the default
 * stream, for which the host waits.
 *
 * CuPy computes on its current device, which gtstore does not query (that
 * would cost a call per operation): where it is not the storages' GPU,
 * CuPy's kernels raise their ValueError ("... different from the current
 * device ...") or, with peer access, compute correctly with a warning. */
#ifndef GTSTORE_EXT_ENGINE_H
#define GTSTORE_EXT_ENGINE_H

#include "ext.h"

#define GTPY_ENGINE_MAX_BUFFERS 16
typedef struct gtpy_engine {
    const char *name;          /* "NumPy" or "CuPy", for messages */
    const gts_device_ops *gpu; /* the device it computes on */
    PyObject *module;          /* numpy or cupy (borrowed: cached for the process) */
    bool cuda;
    gts_stream stream; /* where it computes: CuPy's current stream; NULL for NumPy */
    /* the buffers whose device sides one call's views access (their own
     * references), recorded on `stream` by gtpy_engine_finish; where more
     * than fit, or a view is of memory no event orders (a GPU's managed
     * memory, ordered by the host), the stream is synchronised instead */
    int nbuffers;
    bool unrecorded;
    gts_buffer *buffers[GTPY_ENGINE_MAX_BUFFERS];
    struct { /* CuPy's types and functions (borrowed, cached; NULL for NumPy) */
        PyObject *ndarray, *memory_pointer, *unowned_memory;
    } cupy;
} gtpy_engine;

/* The engine of `gpu` (the emulated device or a CUDA device; the host's is
 * NumPy too, for the steps the host path borrows), for one call, which ends
 * with gtpy_engine_finish. CUDA needs CuPy: else an error that says so.
 * Cached: no call into Python once imported but CuPy's current stream. */
int gtpy_engine_get(const gts_device_ops *gpu, gtpy_engine *out);

/* Where the engine of `gpu` computes, into *out: CuPy's current stream on
 * a CUDA GPU (gtpy_cupy_stream); NULL, the default stream, for NumPy, which
 * computes on the host (the emulated device). Imports nothing. */
int gtpy_engine_stream(const gts_device_ops *gpu, gts_stream *out);

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
 * not the storage. The access is on the engine's stream: the buffer is
 * recorded there by gtpy_engine_finish. */
PyObject *gtpy_engine_storage_view(gtpy_engine *e, PyObject *storage, int ndim,
                                   const Py_ssize_t *shape, const Py_ssize_t *strides, bool write,
                                   bool operand);

/* An array of the engine over a stencil's bound field, made without an
 * access (the binding's acquire ordered the memory): `ndim` sizes and byte
 * strides from element 0 at `element0`, a device address. Over the memory
 * of `storage` where one is given (its buffer's engine objects, made once);
 * else over memory of `device` (NULL: the engine's GPU) that `owner` keeps
 * alive, another library's array. NumPy's arrays of a `readonly` field are
 * read-only; CuPy has none. */
PyObject *gtpy_engine_field_array(const gtpy_engine *e, PyObject *storage, PyObject *owner,
                                  const gts_device_ops *device, char *element0, gts_dtype dtype,
                                  int ndim, const int64_t *shape, const int64_t *strides,
                                  bool readonly);

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

/* Ends the call: the work the engine queued on its stream is recorded as
 * the last device work of each buffer its views accessed (no wait; the
 * host waits only where it touches them later), and their references go.
 * Work no event orders (managed memory) completes here. Every call that
 * made views of storages ends with it, also after a failure: the pending
 * exception is kept and -1 returned. */
int gtpy_engine_finish(gtpy_engine *e);
/* Adds `buffer` to those gtpy_engine_finish records (engine_view.c). */
void gtpy_engine_add_buffer(gtpy_engine *e, gts_buffer *buffer);

/* Whether `obj` is an array in CUDA memory of another library (it has
 * __cuda_array_interface__ and is not a storage): a GPU array for seed
 * 001's choice of the compute device. */
bool gtpy_is_cuda_array(PyObject *obj);

#endif
