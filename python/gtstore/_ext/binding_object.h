/* The call side of the extension, shared by binding.c (Signature, reading
 * objects, the acquire/touch/release protocol) and binding_call.c (the
 * Binding object and the built-in stencils). */
#ifndef GTSTORE_EXT_BINDING_OBJECT_H
#define GTSTORE_EXT_BINDING_OBJECT_H

#include "ext.h"

/* Fields bound without a heap allocation for the C arrays of gts_bind. */
#define GTPY_BIND_STACK_FIELDS 16

typedef struct {
    PyObject_HEAD
    gts_signature sig;
    gts_field_spec *fields;
    bool owned;       /* fields allocated here (else a built-in's static ones) */
    PyObject *names;  /* tuple of interned str; the specs' names point into them */
} SignatureObject;

/* One field of a call: the object, what keeps its memory exported, its
 * callbacks, its C description and, once bound, the bound field. */
typedef struct bind_slot {
    PyObject *obj;
    PyObject *storage;                   /* a gtstore Storage read directly, or NULL */
    PyObject *copy_back;                 /* the device Storage `storage` is a host copy of
                                            (copy-in/copy-out, GDP-3's final text), or NULL */
    PyObject *converted;                 /* the array np.asarray made of an object that only
                                            speaks __array__, read in its place; assigned
                                            back (obj[...] = converted) after a run that
                                            writes the field; or NULL */
    PyObject *acquire, *touch, *release; /* data interface callbacks, or NULL */
    bool device_side;                    /* `storage` is bound by its device side, for a
                                            stencil on the GPU: accessed in the stream
                                            order (gtstore/access.h) */
    bool accessed;                       /* its device side was acquired on `stream`: the
                                            release records its event there */
    bool host_ordered;                   /* memory no event orders (a GPU's managed
                                            memory): accessed on the default stream, and
                                            the call's work on `stream` completes at the
                                            release */
    gts_stream stream;                   /* the call's */
    /* the device whose memory desc.data is in, for a stencil on the GPU (a
     * Storage's or an imported array's buffer's); NULL: the GPU's own */
    const gts_device_ops *memory;
    bool in_place;  /* the object's memory, read in place (load_memory) */
    bool have_view; /* the buffer export that memory came with */
    Py_buffer view;
    int64_t shape[GTS_BIND_MAX_NDIM], strides[GTS_BIND_MAX_NDIM], origin[GTS_BIND_MAX_NDIM];
    int64_t call_origin[GTS_BIND_MAX_NDIM];
    gts_dim dims[GTS_BIND_MAX_NDIM];
    gts_halo halo[GTS_BIND_MAX_NDIM];
    gts_field_desc desc;
    gts_bound_field bound;
} bind_slot;

/* The object whose memory the slot's field is (or was copied from): the
 * one passed, or the array NumPy made of it. */
static inline PyObject *gtpy_slot_source(const bind_slot *slot)
{
    return slot->converted ? slot->converted : slot->obj;
}

extern PyTypeObject gtpy_Signature_Type, gtpy_Binding_Type;
extern PyObject *gtpy_FieldWarning;
extern PyMethodDef gtpy_stencil_methods[];

/* The field index of `name` (a str), or -1 (signature.c). */
int gtpy_signature_index(const SignatureObject *s, PyObject *name);
/* Every field of a call given, and none None (`function` names the call in
 * messages, or NULL): else a TypeError. */
int gtpy_fields_given(const SignatureObject *s, const char *function, PyObject *const *objects);
/* A Signature over a static libgtstore signature (a built-in stencil's). */
PyObject *gtpy_signature_wrap(const gts_signature *sig);
/* Signature.bind, call and call_c (binding_call.c), the methods that the
 * module's initialisation binds to the type's core (signature.c). */
extern PyMethodDef gtpy_signature_methods[];

/* Reads `obj` as field `spec` of a stencil on `device` into an empty slot
 * (the slot then needs gtpy_slot_clear, on failure too). */
int gtpy_slot_load(bind_slot *slot, PyObject *obj, const gts_field_spec *spec,
                   gts_device device);
void gtpy_slot_clear(bind_slot *slot);
/* gts_bind over loaded slots with the call's domain= and origin= (NULL or
 * None: not given); the warnings become FieldWarnings. */
int gtpy_bind_slots(const SignatureObject *s, bind_slot *slots, PyObject *domain,
                    PyObject *origin, gts_binding *out);
/* The GPU a stencil on the GPU computes on: that of its first Storage
 * bound by its device side (the owner of managed memory), else the GPU
 * (gts_device_gpu); NULL without one. */
const gts_device_ops *gtpy_slots_gpu(const bind_slot *slots, int n);
/* The stream a call's kernel runs on, into *out (binding.c): for a
 * stencil on the GPU (gtpy_slots_gpu) the current stream (stream.h) or,
 * for a Python kernel (`engine`), the stream its engine's arrays compute
 * on (gtpy_engine_stream); NULL (the default stream) on the CPU or without
 * a GPU. Sets the stream of each Storage slot's accesses: that one where
 * the storage is memory of the stream's device, else the default stream.
 * Before gtpy_slots_acquire; -1 with an exception where the current stream
 * cannot be read. */
int gtpy_slots_stream(bind_slot *slots, int n, gts_device device, bool engine, gts_stream *out);
/* Seed 004's protocol: acquire all (on a failure the acquired ones are
 * released), touch the written ones, release all (each is released even if
 * another fails; the first error is raised). A Storage's host side is
 * synced (acquire) and marked written (touch), for a stencil on the CPU.
 * For a stencil on the GPU its device side is accessed on the slot's
 * stream (gtpy_slots_stream) with gts_storage_access: the stream is
 * ordered after the buffer's device work without a host wait (acquire),
 * the side is marked written (touch), and the buffer's event is recorded
 * on the stream after the kernel, for read and written fields alike
 * (release, gts_storage_access_end). */
int gtpy_slots_acquire(bind_slot *slots, int n);
/* A Binding entered (before gtpy_slots_acquire): the objects read through
 * __array__ converted again (np.asarray(obj)), since they may have changed
 * since the call was bound or last run. (A field copied to the other
 * device takes its values in gtpy_slots_acquire, every run.) -1 with an
 * error naming the field. */
int gtpy_slots_reread(const SignatureObject *s, bind_slot *slots);
int gtpy_slots_touch(const SignatureObject *s, bind_slot *slots);
int gtpy_slots_release(bind_slot *slots, int n);

/* Empty slots (before loading) and their release (binding_call.c). */
void gtpy_slots_init(bind_slot *slots, int n);
void gtpy_slots_clear(bind_slot *slots, int n);
/* After a run: touch (if it succeeded) and release; the first error wins. */
int gtpy_slots_finish(const SignatureObject *s, bind_slot *slots, bool succeeded);
/* {name: origin} and {name: array} of bound slots, in the kernel's order:
 * ndarrays over host memory; for a stencil on the GPU, arrays of its
 * engine (engine.h: CuPy on a CUDA GPU, NumPy over the emulated device's
 * memory), where NumPy, which computes on the host, first waits for
 * `stream` (the one the fields were acquired on). */
PyObject *gtpy_bound_origins(const SignatureObject *s, const bind_slot *slots);
PyObject *gtpy_bound_arrays(const SignatureObject *s, const bind_slot *slots, gts_stream stream);

int gtpy_bound_field_init(PyObject *module);
/* gtstore.KernelCaller (kernel_caller.c). */
extern PyTypeObject gtpy_KernelCaller_Type;

#endif
