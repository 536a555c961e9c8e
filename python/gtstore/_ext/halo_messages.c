/* gtstore._gtstore.HaloMessages and HaloMessage: the message buffers of a
 * halo plan (libgtstore's gtstore/halo_messages.h) for gtstore.distributed,
 * which hands them to mpi4py. libgtstore chooses their memory (host,
 * pinned host or device) and packs into them; here each buffer becomes an
 * object mpi4py takes: the buffer protocol over the address MPI is to read
 * (host memory, or the host memory behind the emulated device's), or for
 * CUDA device memory the CUDA array interface. */
#include "api.h"
#include "args.h"
#include "convert.h"
#include "errors.h"
#include "stream.h"

typedef struct {
    PyObject_HEAD
    gts_halo_messages *messages;
    PyObject *plan; /* the HaloPlan, which must outlive the buffers */
} HaloMessages;

typedef struct {
    PyObject_HEAD
    PyObject *owner; /* the HaloMessages, kept alive while the buffer is */
    const gts_halo_message *message;
    bool cuda;       /* CUDA device memory: no buffer protocol */
} HaloMessage;

/* ---- HaloMessage --------------------------------------------------------------- */

static int message_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    HaloMessage *m = (HaloMessage *)self;
    if (m->cuda) {
        PyErr_SetString(PyExc_BufferError,
                        "this halo message is CUDA device memory: read it through "
                        "__cuda_array_interface__");
        return -1;
    }
    return PyBuffer_FillInfo(view, self, m->message->mpi, (Py_ssize_t)m->message->bytes, 0,
                             flags);
}

static PyBufferProcs message_as_buffer = {.bf_getbuffer = message_getbuffer};

static void message_dealloc(PyObject *self)
{
    Py_XDECREF(((HaloMessage *)self)->owner);
    Py_TYPE(self)->tp_free(self);
}

/* Version 3 of the interface: one dimension of bytes, no stream to wait on
 * (packing has completed when pack() returns; pack_all(stream) is followed
 * by host_wait(True) before MPI is given the buffers). */
static PyObject *message_cuda_array_interface(PyObject *self, void *unused)
{
    (void)unused;
    HaloMessage *m = (HaloMessage *)self;
    if (!m->cuda) {
        PyErr_SetString(PyExc_AttributeError,
                        "__cuda_array_interface__: this halo message is host memory");
        return NULL;
    }
    return Py_BuildValue("{s:(L),s:s,s:(Ki),s:O,s:i}", "shape", (long long)m->message->bytes,
                         "typestr", "|u1", "data",
                         (unsigned long long)(uintptr_t)m->message->mpi, 0, "strides", Py_None,
                         "version", 3);
}

static PyObject *message_nbytes(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLongLong(((HaloMessage *)self)->message->bytes);
}

static PyGetSetDef message_getset[] = {
    {"__cuda_array_interface__", message_cuda_array_interface, NULL,
     "The CUDA array interface of a message in CUDA device memory.", NULL},
    {"nbytes", message_nbytes, NULL, "The message's bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_HaloMessage_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.distributed.HaloMessage",
    .tp_doc = "One message buffer of a HaloMessages, for MPI: the buffer protocol (host "
              "memory), or __cuda_array_interface__ (CUDA device memory).",
    .tp_basicsize = sizeof(HaloMessage),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = message_dealloc,
    .tp_as_buffer = &message_as_buffer,
    .tp_getset = message_getset,
};

/* ---- HaloMessages ------------------------------------------------------------- */

static int aware_from(PyObject *obj, gts_halo_device_aware *out)
{
    if (obj == Py_None)
        *out = GTS_HALO_AWARE_AUTO;
    else if (PyBool_Check(obj))
        *out = obj == Py_True ? GTS_HALO_AWARE_YES : GTS_HALO_AWARE_NO;
    else {
        PyErr_Format(PyExc_TypeError, "device_aware: expected None, True or False, got %R", obj);
        return -1;
    }
    return 0;
}

static PyObject *messages_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"plan", "device_aware", "mpi_reads"};
    static gtpy_signature sig = GTPY_SIGNATURE("HaloMessages", names, 3, 1, 0);
    PyObject *v[3];
    int mpi_reads = 0;
    if (gtpy_parse_tuple(&sig, args, kwargs, v) < 0 ||
        (v[2] && gtpy_c_int(v[2], "mpi_reads", &mpi_reads) < 0))
        return NULL;
    PyObject *plan = v[0], *aware_obj = v[1] ? v[1] : Py_None;
    if (!PyObject_TypeCheck(plan, &gtpy_HaloPlan_Type)) {
        PyErr_Format(PyExc_TypeError, "plan: expected a gtstore.HaloPlan, got %.200R", plan);
        return NULL;
    }
    gts_halo_device_aware aware;
    if (aware_from(aware_obj, &aware) < 0)
        return NULL;
    const gts_halo_plan *p = gtpy_halo_plan_of(plan);
    gts_halo_memory memory;
    gts_halo_messages *messages = NULL;
    gts_error err;
    if (gts_halo_memory_choose(p, aware, mpi_reads, &memory, &err) ||
        gts_halo_messages_create(p, memory, &messages, &err))
        return gtpy_raise_null(&err);
    HaloMessages *self = (HaloMessages *)type->tp_alloc(type, 0);
    if (!self) {
        gts_halo_messages_destroy(messages);
        return NULL;
    }
    self->messages = messages;
    self->plan = Py_NewRef(plan);
    return (PyObject *)self;
}

static void messages_dealloc(PyObject *self)
{
    HaloMessages *m = (HaloMessages *)self;
    gts_halo_messages_destroy(m->messages); /* no buffer is left: each holds a reference */
    Py_XDECREF(m->plan);
    Py_TYPE(self)->tp_free(self);
}

static int index_of(HaloMessages *m, PyObject *obj, int *out)
{
    int64_t index;
    if (gtpy_int(obj, "index", &index) < 0)
        return -1;
    int n = gts_halo_plan_neighbor_count(gtpy_halo_plan_of(m->plan));
    if (index < 0 || index >= n) {
        PyErr_Format(PyExc_IndexError, "index: %lld is outside [0, %d)", (long long)index, n);
        return -1;
    }
    *out = (int)index;
    return 0;
}

static PyObject *buffer_of(PyObject *self, PyObject *index_obj, bool send)
{
    HaloMessages *m = (HaloMessages *)self;
    int index;
    if (index_of(m, index_obj, &index) < 0)
        return NULL;
    HaloMessage *buffer = PyObject_New(HaloMessage, &gtpy_HaloMessage_Type);
    if (!buffer)
        return NULL;
    const gts_device_ops *device = gts_halo_messages_device(m->messages);
    buffer->owner = Py_NewRef(self);
    buffer->message = send ? gts_halo_messages_send(m->messages, index)
                           : gts_halo_messages_recv(m->messages, index);
    buffer->cuda = device->cuda_array_interface;
    return (PyObject *)buffer;
}

static PyObject *messages_send_buffer(PyObject *self, PyObject *index)
{
    return buffer_of(self, index, true);
}

static PyObject *messages_recv_buffer(PyObject *self, PyObject *index)
{
    return buffer_of(self, index, false);
}

static PyObject *messages_transfer(PyObject *self, PyObject *index_obj, bool pack)
{
    HaloMessages *m = (HaloMessages *)self;
    int index;
    if (index_of(m, index_obj, &index) < 0)
        return NULL;
    gts_error err;
    int rc = pack ? gts_halo_messages_pack(m->messages, index, &err)
                  : gts_halo_messages_unpack(m->messages, index, &err);
    if (rc)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *messages_pack(PyObject *self, PyObject *index)
{
    return messages_transfer(self, index, true);
}

static PyObject *messages_unpack(PyObject *self, PyObject *index)
{
    return messages_transfer(self, index, false);
}

/* The GPU whose streams move the messages (the plan's GPU of fields in
 * device memory only), or NULL: host work only. */
static const gts_device_ops *messages_gpu(PyObject *self)
{
    const gts_device_ops *gpu;
    return gts_halo_plan_devices(gtpy_halo_plan_of(((HaloMessages *)self)->plan), &gpu, 1) > 0
               ? gpu
               : NULL;
}

/* pack_all(stream=None) / unpack_all(stream=None): queued on the stream;
 * the GIL is let go while the host copies run. */
static PyObject *messages_all(PyObject *self, PyObject *args, PyObject *kwargs, bool pack)
{
    static const char *const names[] = {"stream"};
    static gtpy_signature pack_sig = GTPY_SIGNATURE("pack_all", names, 1, 0, 0);
    static gtpy_signature unpack_sig = GTPY_SIGNATURE("unpack_all", names, 1, 0, 0);
    PyObject *v[1];
    gts_stream stream;
    if (gtpy_parse_tuple(pack ? &pack_sig : &unpack_sig, args, kwargs, v) < 0 ||
        gtpy_stream_arg(messages_gpu(self), v[0] ? v[0] : Py_None, "stream", &stream) < 0)
        return NULL;
    const gts_halo_messages *messages = ((HaloMessages *)self)->messages;
    gts_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = pack ? gts_halo_messages_pack_all_on(messages, stream, &err)
              : gts_halo_messages_unpack_all_on(messages, stream, &err);
    Py_END_ALLOW_THREADS
    if (rc)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *messages_pack_all(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return messages_all(self, args, kwargs, true);
}

static PyObject *messages_unpack_all(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return messages_all(self, args, kwargs, false);
}

/* stream_handle(stream=None): the handle that pack_all and unpack_all
 * would queue on (0: the default stream), for a caller that resolves the
 * argument before it starts anything. */
static PyObject *messages_stream_handle(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"stream"};
    static gtpy_signature sig = GTPY_SIGNATURE("stream_handle", names, 1, 0, 0);
    PyObject *v[1];
    gts_stream stream;
    if (gtpy_parse_tuple(&sig, args, kwargs, v) < 0 ||
        gtpy_stream_arg(messages_gpu(self), v[0] ? v[0] : Py_None, "stream", &stream) < 0)
        return NULL;
    return PyLong_FromVoidPtr(stream);
}

/* host_wait(send): before MPI reads the send buffers or writes the
 * receive buffers. */
static PyObject *messages_host_wait(PyObject *self, PyObject *send_obj)
{
    int send = PyObject_IsTrue(send_obj);
    if (send < 0)
        return NULL;
    gts_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gts_halo_messages_host_wait(((HaloMessages *)self)->messages, send, &err);
    Py_END_ALLOW_THREADS
    if (rc)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *messages_pack_local(PyObject *self, PyObject *unused)
{
    (void)unused;
    gts_error err;
    if (gts_halo_messages_pack_local(((HaloMessages *)self)->messages, &err))
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *messages_local(PyObject *self, PyObject *index_obj)
{
    HaloMessages *m = (HaloMessages *)self;
    int index;
    if (index_of(m, index_obj, &index) < 0)
        return NULL;
    return PyBool_FromLong(gts_halo_messages_local(m->messages, index));
}

static PyMethodDef messages_methods[] = {
    {"pack_all", (PyCFunction)(void (*)(void))messages_pack_all, METH_VARARGS | METH_KEYWORDS,
     "pack_all($self, /, stream=None)\n--\n\nPacks every message that travels and fills the "
     "halos of the rank's own (local) messages straight from its domain: one launch per GPU, "
     "queued on `stream` (None: the current stream; a gtstore.Stream or its handle) after the "
     "work queued on the fields in device memory only, and recorded on them. Fields with a "
     "host side are packed on the host. Call host_wait(True) before MPI reads the buffers."},
    {"unpack_all", (PyCFunction)(void (*)(void))messages_unpack_all,
     METH_VARARGS | METH_KEYWORDS,
     "unpack_all($self, /, stream=None)\n--\n\nWrites every received message that travelled "
     "into the halos: for fields in device memory only queued on `stream` (as pack_all) and "
     "recorded on their buffers, so that later work on any stream, or the host, reads the "
     "halos after it. Call host_wait(False) before MPI writes the buffers again."},
    {"stream_handle", (PyCFunction)(void (*)(void))messages_stream_handle,
     METH_VARARGS | METH_KEYWORDS,
     "stream_handle($self, /, stream=None)\n--\n\nThe stream handle (an int, 0 the default "
     "stream) that pack_all(stream) and unpack_all(stream) queue on: `stream` checked and, "
     "where None, the current stream of the fields' GPU. Fields with a host side only: 0, "
     "`stream` only checked."},
    {"host_wait", messages_host_wait, METH_O,
     "host_wait($self, send, /)\n--\n\nWaits until the device work queued on the send "
     "buffers (send true: the packing) or the receive buffers (false: the unpacking) has "
     "completed: before MPI reads or writes them."},
    {"pack_local", messages_pack_local, METH_NOARGS,
     "pack_local($self, /)\n--\n\nFills the halos of the rank's own (local) messages straight from its "
     "domain, and packs nothing (for an exchange that packs each message as it sends it)."},
    {"local", messages_local, METH_O,
     "local($self, index, /)\n--\n\nWhether neighbour `index` is this rank itself, whose halos pack_all fills "
     "(no message travels)."},
    {"send_buffer", messages_send_buffer, METH_O,
     "send_buffer($self, index, /)\n--\n\nNeighbour `index`'s send buffer, a HaloMessage for MPI."},
    {"recv_buffer", messages_recv_buffer, METH_O,
     "recv_buffer($self, index, /)\n--\n\nNeighbour `index`'s receive buffer, a HaloMessage for MPI."},
    {"pack", messages_pack, METH_O,
     "pack($self, index, /)\n--\n\nPacks neighbour `index`'s message from the fields into its send buffer."},
    {"unpack", messages_unpack, METH_O,
     "unpack($self, index, /)\n--\n\nWrites neighbour `index`'s received message into the fields' halos."},
    {NULL, NULL, 0, NULL},
};

static PyObject *messages_memory(PyObject *self, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(
        gts_halo_memory_name(gts_halo_messages_memory(((HaloMessages *)self)->messages)));
}

static PyObject *messages_device(PyObject *self, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(gts_halo_messages_device(((HaloMessages *)self)->messages)->name);
}

static PyObject *messages_at_once(PyObject *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(gts_halo_messages_at_once(((HaloMessages *)self)->messages));
}

static PyGetSetDef messages_getset[] = {
    {"at_once", messages_at_once, NULL,
     "Whether an exchange packs all messages at once and unpacks them once all have arrived "
     "(fields in device memory only: one launch each), rather than packing each just before "
     "sending it and unpacking each as it arrives (host work, which overlaps the "
     "communication).",
     NULL},
    {"memory", messages_memory, NULL,
     "Where the buffers are: 'host', 'pinned' (the GPU's pinned host memory) or 'device' (the "
     "GPU's memory, for an MPI that reads it).",
     NULL},
    {"device", messages_device, NULL,
     "The name of the device whose memory holds the buffers (e.g. 'cpu', 'cuda_host:0').",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_HaloMessages_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.distributed.HaloMessages",
    .tp_doc = "HaloMessages(plan, device_aware=None, mpi_reads=0)\n--\n\n"
              "The message buffers of a HaloPlan, made once, in the memory libgtstore chooses "
              "(gts_halo_memory_choose): host memory for fields with a host side; for fields "
              "in device memory only, the GPU's pinned host memory, or its device memory where "
              "`device_aware` is True, or None and the MPI reads that memory (`mpi_reads`: its "
              "DLPack device type, 2 for CUDA) or GTSTORE_DEVICE_AWARE_MPI=1.",
    .tp_basicsize = sizeof(HaloMessages),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = messages_new,
    .tp_dealloc = messages_dealloc,
    .tp_methods = messages_methods,
    .tp_getset = messages_getset,
};
