/* The Storage object's C interface: its types, its fields as a libgtstore
 * struct, new storages, and host access (storage.c, storage_host.c,
 * storage_device.c). */
#ifndef GTSTORE_EXT_STORAGE_H
#define GTSTORE_EXT_STORAGE_H

#include "ext.h"

extern PyTypeObject gtpy_Storage_Type, gtpy_CPUStorage_Type, gtpy_GPUStorage_Type,
    gtpy_SoftwareManagedGPUStorage_Type, gtpy_CudaManagedGPUStorage_Type, gtpy_SyncState_Type;

static inline bool gtpy_is_storage(PyObject *obj)
{
    return PyObject_TypeCheck(obj, &gtpy_Storage_Type);
}

/* The storage as a libgtstore struct; the buffer reference is borrowed. */
void gtpy_storage_load(PyObject *storage, gts_storage *out);
/* The preset name a storage was made with (borrowed; NULL if none). */
PyObject *gtpy_storage_preset(PyObject *storage);
/* Sets the recorded preset name and the read-only flag (unpickling). */
void gtpy_storage_restore(PyObject *storage, PyObject *preset, bool readonly);
/* The SyncState shared by the views of `storage` (new reference). */
PyObject *gtpy_storage_sync_state(PyObject *storage);
/* The buffer whose state a SyncState reads (borrowed; the caller checked
 * the type). */
gts_buffer *gtpy_sync_state_buffer(PyObject *sync_state);
/* Whether `obj` is an int that is a state (SyncState.SYNC_CLEAN, ...),
 * into *state; never raises. */
bool gtpy_sync_state_number(PyObject *obj, gts_sync_state *state);
/* `obj` as sync_state= text for messages: a state given by its number
 * as its name ("SyncState.SYNC_HOST_DIRTY", not "1"), anything else as
 * its repr. */
PyObject *gtpy_sync_state_text(PyObject *obj);
/* Where the engine keeps its objects over `storage`'s buffer (engine_view.c):
 * a slot of the SyncState its views share, released with it, or NULL
 * where that SyncState is another buffer's. -1 on failure. */
int gtpy_storage_engine_slot(PyObject *storage, PyObject ***slot);

/* A new Python storage that takes over `s`'s buffer reference (released on
 * failure too). `preset` and `sync_state` may be NULL. */
PyObject *gtpy_storage_new(gts_storage *s, PyObject *preset, PyObject *sync_state);
/* A new Storage for `spec` (resolved in place, as by
 * gts_storage_create_in_place, with `flags`) over a spare block where one
 * of its size and device is kept (engine_spares.h), else over new memory.
 * A spare brings its engine objects into the Storage's SyncState.
 * `preset`: the preset name the Storage records, or NULL. */
PyObject *gtpy_storage_create(gts_storage_spec *spec, unsigned flags, PyObject *preset);
/* Whether memory in `buffer` has a host side: host or host-accessible
 * memory, or a mirrored buffer (not a GPUStorage's). */
static inline bool gtpy_has_host_side(const gts_buffer *buffer)
{
    return gts_buffer_device(buffer)->host_accessible || gts_buffer_mirrored(buffer);
}


/* Before the host touches a storage's memory (the rule of gtstore/sync.h):
 * its host side brought up to date, and for a `write` (of a writable
 * storage) marked written. GTNoSuchBufferError where there is no host side
 * (a GPUStorage). storage_host.c. */
int gtpy_storage_host_access(const gts_storage *g, bool write);
/* A new host storage in C order of the shape, dtype and dims of `g`, for values
 * on their way to memory without a host side; `host` describes it (its
 * buffer borrowed from the returned object). storage_host.c. */
PyObject *gtpy_storage_host_staging(const gts_storage *g, gts_storage *host);
/* An ndarray viewing the storage (its base is the storage), after host
 * access: writable only for a `write` of a writable storage, so that reads
 * (repr, scalars, pickling) do not mark the host side written. */
PyObject *gtpy_storage_ndarray(PyObject *storage, bool write);
/* The values on the host, to be read (display, pickling, a value NumPy
 * assigns): a read-only ndarray of the host side, or of a host copy of
 * memory without one (a GPUStorage's). storage_host.c. */
PyObject *gtpy_storage_host_values(PyObject *storage);
/* The same over the elements of `g` with base `base`. */
PyObject *gtpy_storage_ndarray_over(gts_storage *g, PyObject *base, bool write);

/* The device buffer as an array (storage_device.c): CuPy for CUDA memory,
 * NumPy over the emulated device's memory, the host ndarray for host
 * storages. */
PyObject *gtpy_storage_to_ndarray(PyObject *storage, PyObject *unused);

#endif
