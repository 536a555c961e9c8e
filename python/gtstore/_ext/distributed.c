/* gtstore._gtstore.Partition and HaloPlan: libgtstore's domain
 * decomposition (gtstore/partition.h) and halo plans (gtstore/halo_plan.h)
 * for gtstore.distributed, which communicates with mpi4py. The extension
 * links no MPI: it packs into and unpacks from buffers the Python side owns
 * and hands to MPI. */
#include "api.h"
#include "args.h"
#include "convert.h"
#include "errors.h"
#include "storage.h"

/* ---- Partition -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    gts_partition partition;
} Partition;

static int int_entries(PyObject *obj, const char *param, int ndim, int *out)
{
    int64_t values[GTS_PARTITION_MAX_NDIM];
    int n;
    if (gtpy_int_tuple(obj, param, GTS_PARTITION_MAX_NDIM, &n, values) < 0)
        return -1;
    if (n != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %R has %d entries, expected %d (one per split "
                     "dimension)", param, obj, n, ndim);
        return -1;
    }
    for (int d = 0; d < ndim; ++d) {
        if (values[d] < 0 || values[d] > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: entry %lld at position %d is outside [0, %d]",
                         param, (long long)values[d], d, INT_MAX);
            return -1;
        }
        out[d] = (int)values[d];
    }
    return 0;
}

/* periodic=: one bool for every dimension, or one per dimension. */
static int periodic_entries(PyObject *obj, int ndim, bool *out)
{
    if (PyBool_Check(obj)) {
        for (int d = 0; d < ndim; ++d)
            out[d] = obj == Py_True;
        return 0;
    }
    PyObject *seq = PySequence_Fast(obj, "periodic: expected a bool or a sequence of bools");
    if (!seq)
        return -1;
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(seq) != ndim) {
        PyErr_Format(PyExc_ValueError, "periodic: %R has %zd entries, expected %d (one per "
                     "split dimension)", obj, PySequence_Fast_GET_SIZE(seq), ndim);
        rc = -1;
    }
    for (int d = 0; !rc && d < ndim; ++d) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, d);
        if (!PyBool_Check(item)) {
            PyErr_Format(PyExc_TypeError, "periodic: entry %R at position %d is not a bool",
                         item, d);
            rc = -1;
        } else {
            out[d] = item == Py_True;
        }
    }
    Py_DECREF(seq);
    return rc;
}

static PyObject *partition_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"global_shape", "nranks", "process_grid", "periodic",
                                        "labels"};
    static gtpy_signature sig = GTPY_SIGNATURE("Partition", names, 5, 2, 0);
    PyObject *v[5];
    int nranks;
    if (gtpy_parse_tuple(&sig, args, kwargs, v) < 0 || gtpy_c_int(v[1], "nranks", &nranks) < 0)
        return NULL;
    PyObject *shape_obj = v[0], *grid_obj = v[2] ? v[2] : Py_None;
    PyObject *periodic_obj = v[3] ? v[3] : Py_False, *labels_obj = v[4] ? v[4] : Py_None;
    int ndim;
    int64_t shape[GTS_MAX_NDIM];
    gts_dim labels[GTS_MAX_NDIM];
    int nlabels = 0;
    if (gtpy_shape(shape_obj, "global_shape", &ndim, shape) < 0)
        return NULL;
    if (labels_obj != Py_None && gtpy_dims(labels_obj, "labels", &nlabels, labels) < 0)
        return NULL;
    if (labels_obj != Py_None && nlabels != ndim) {
        PyErr_Format(PyExc_ValueError, "labels: %R has %d labels for %d dimensions", labels_obj,
                     nlabels, ndim);
        return NULL;
    }
    if (ndim < 1 || ndim > GTS_PARTITION_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "global_shape: %R splits %d dimensions, expected 1 to %d",
                     shape_obj, ndim, GTS_PARTITION_MAX_NDIM);
        return NULL;
    }
    int grid[GTS_PARTITION_MAX_NDIM] = {0};
    bool periodic[GTS_PARTITION_MAX_NDIM] = {false};
    if ((grid_obj != Py_None && int_entries(grid_obj, "process_grid", ndim, grid) < 0) ||
        periodic_entries(periodic_obj, ndim, periodic) < 0)
        return NULL;
    gts_partition partition;
    gts_error err;
    if (gts_partition_init(&partition, ndim, labels_obj != Py_None ? labels : NULL, shape, grid,
                           periodic, nranks, &err))
        return gtpy_raise_null(&err);
    Partition *self = (Partition *)type->tp_alloc(type, 0);
    if (self)
        self->partition = partition;
    return (PyObject *)self;
}

static const gts_partition *partition_of(PyObject *self)
{
    return &((Partition *)self)->partition;
}

static int check_rank(const gts_partition *p, PyObject *obj, int *rank)
{
    int64_t value;
    if (gtpy_int(obj, "rank", &value) < 0)
        return -1;
    if (value < 0 || value >= p->nranks) {
        PyErr_Format(PyExc_IndexError, "rank: %lld is outside [0, %d)", (long long)value,
                     p->nranks);
        return -1;
    }
    *rank = (int)value;
    return 0;
}

static PyObject *int_tuple(int n, const int *values)
{
    int64_t wide[GTS_PARTITION_MAX_NDIM];
    for (int i = 0; i < n; ++i)
        wide[i] = values[i];
    return gtpy_int64_tuple(n, wide);
}

static PyObject *rank_or_none(int rank)
{
    return rank == GTS_NO_RANK ? Py_NewRef(Py_None) : PyLong_FromLong(rank);
}

/* Coordinates or offsets: ndim ints of any sign. */
static int coordinates(const gts_partition *p, PyObject *obj, const char *param, int *out)
{
    int64_t values[GTS_PARTITION_MAX_NDIM];
    int n;
    if (gtpy_int_tuple(obj, param, GTS_PARTITION_MAX_NDIM, &n, values) < 0)
        return -1;
    if (n != p->ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %R has %d entries, expected %d", param, obj, n,
                     p->ndim);
        return -1;
    }
    for (int d = 0; d < n; ++d) {
        if (values[d] < INT_MIN || values[d] > INT_MAX) {
            PyErr_Format(PyExc_OverflowError, "%s: entry %lld does not fit in a C int", param,
                         (long long)values[d]);
            return -1;
        }
        out[d] = (int)values[d];
    }
    return 0;
}

static PyObject *partition_coords(PyObject *self, PyObject *rank_obj)
{
    int rank, coords[GTS_PARTITION_MAX_NDIM];
    if (check_rank(partition_of(self), rank_obj, &rank) < 0)
        return NULL;
    gts_partition_coords(partition_of(self), rank, coords);
    return int_tuple(partition_of(self)->ndim, coords);
}

static PyObject *partition_rank_of(PyObject *self, PyObject *coords_obj)
{
    int coords[GTS_PARTITION_MAX_NDIM];
    if (coordinates(partition_of(self), coords_obj, "coords", coords) < 0)
        return NULL;
    return rank_or_none(gts_partition_rank(partition_of(self), coords));
}

static PyObject *partition_neighbor(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[] = {"rank", "offset"};
    static gtpy_signature sig = GTPY_SIGNATURE("neighbor", names, 2, 2, 2);
    int rank, offset[GTS_PARTITION_MAX_NDIM];
    if (gtpy_parse_args(&sig, args, nargs, NULL, (PyObject *[2]){NULL}) < 0)
        return NULL;
    if (check_rank(partition_of(self), args[0], &rank) < 0 ||
        coordinates(partition_of(self), args[1], "offset", offset) < 0)
        return NULL;
    return rank_or_none(gts_partition_neighbor(partition_of(self), rank, offset));
}

static PyObject *partition_subdomain(PyObject *self, PyObject *rank_obj)
{
    int rank;
    const gts_partition *p = partition_of(self);
    if (check_rank(p, rank_obj, &rank) < 0)
        return NULL;
    int64_t start[GTS_PARTITION_MAX_NDIM], size[GTS_PARTITION_MAX_NDIM];
    gts_partition_subdomain(p, rank, start, size);
    PyObject *starts = gtpy_int64_tuple(p->ndim, start);
    PyObject *sizes = starts ? gtpy_int64_tuple(p->ndim, size) : NULL;
    PyObject *result = sizes ? PyTuple_Pack(2, starts, sizes) : NULL;
    Py_XDECREF(starts);
    Py_XDECREF(sizes);
    return result;
}

static PyObject *partition_min_block(PyObject *self, PyObject *dim_obj)
{
    int64_t dim;
    const gts_partition *p = partition_of(self);
    if (gtpy_int(dim_obj, "dim", &dim) < 0)
        return NULL;
    if (dim < 0 || dim >= p->ndim) {
        PyErr_Format(PyExc_IndexError, "dim: %lld is outside [0, %d)", (long long)dim, p->ndim);
        return NULL;
    }
    return PyLong_FromLongLong(gts_partition_min_block(p, (int)dim));
}

/* A storage's dims and halo as the partitioner's methods take them: the
 * labels, and an int (that width on both sides of every split dimension,
 * gts_partition_halo) or one int or pair per dim. */
static int storage_halo(const gts_partition *p, PyObject *dims_obj, PyObject *halo_obj, int *ndim,
                        gts_dim *dims, gts_halo *halo)
{
    if (gtpy_dims(dims_obj, "dims", ndim, dims) < 0)
        return -1;
    if (!gtpy_is_integer(halo_obj))
        return gtpy_halo(halo_obj, "halo", *ndim, *ndim, halo);
    int64_t width;
    gts_error err;
    if (gtpy_int(halo_obj, "halo", &width) < 0)
        return -1;
    if (gts_partition_halo(p, *ndim, dims, width, halo, &err) != 0)
        return gtpy_raise_null(&err), -1;
    return 0;
}

static PyObject *partition_storage_halo(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int ndim;
    gts_dim dims[GTS_MAX_NDIM];
    gts_halo halo[GTS_MAX_NDIM];
    gts_error err;
    const gts_partition *p = partition_of(self);
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "storage_halo() takes 2 arguments (dims, halo), %zd given",
                     nargs);
        return NULL;
    }
    if (storage_halo(p, args[0], args[1], &ndim, dims, halo) < 0)
        return NULL;
    if (gts_partition_check_halo(p, ndim, dims, halo, &err) != 0)
        return gtpy_raise_null(&err);
    return gtpy_halo_to_tuple(ndim, halo);
}

static PyObject *partition_local_shape(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int rank, ndim, nglobal;
    gts_dim dims[GTS_MAX_NDIM];
    gts_halo halo[GTS_MAX_NDIM];
    int64_t global_shape[GTS_MAX_NDIM], shape[GTS_MAX_NDIM];
    gts_error err;
    const gts_partition *p = partition_of(self);
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "local_shape() takes 4 arguments (rank, dims, "
                     "global_shape, halo), %zd given", nargs);
        return NULL;
    }
    if (check_rank(p, args[0], &rank) < 0 ||
        storage_halo(p, args[1], args[3], &ndim, dims, halo) < 0 ||
        gtpy_shape(args[2], "global_shape", &nglobal, global_shape) < 0 ||
        gtpy_check_entries("global_shape", args[2], nglobal, "extents", ndim, ndim) < 0)
        return NULL;
    if (gts_partition_local_shape(p, rank, ndim, dims, global_shape, halo, shape, &err) != 0)
        return gtpy_raise_null(&err);
    return gtpy_int64_tuple(ndim, shape);
}

static PyMethodDef partition_methods[] = {
    {"coords", partition_coords, METH_O, "coords($self, rank, /)\n--\n\nThe rank's position in the process grid."},
    {"rank_of", partition_rank_of, METH_O,
     "rank_of($self, coords, /)\n--\n\nThe rank at these grid coordinates (periodic dimensions wrap); None past "
     "a non-periodic edge."},
    {"neighbor", (PyCFunction)(void (*)(void))partition_neighbor, METH_FASTCALL,
     "neighbor($self, rank, offset, /)\n--\n\nThe rank at `offset` from `rank`, or None."},
    {"subdomain", partition_subdomain, METH_O,
     "subdomain($self, rank, /)\n--\n\n(starts, sizes) of the rank's block, per split dimension."},
    {"min_block", partition_min_block, METH_O,
     "min_block($self, dim, /)\n--\n\nThe smallest block along split dimension `dim`."},
    {"storage_halo", (PyCFunction)(void (*)(void))partition_storage_halo, METH_FASTCALL,
     "storage_halo($self, dims, halo, /)\n--\n\nThe halo of a storage of these dims as (lower, "
     "upper) pairs: `halo` an int (that width on both sides of every split dimension) or one "
     "int or pair per dim. ValueError for a negative width, and where a pair is wider than "
     "the smallest subdomain along a split dimension with neighbours."},
    {"local_shape", (PyCFunction)(void (*)(void))partition_local_shape, METH_FASTCALL,
     "local_shape($self, rank, dims, global_shape, halo, /)\n--\n\nThe shape of the rank's "
     "storage of these dims over `global_shape`: its subdomain along the split dimensions, "
     "the global extent along the others, plus `halo` (as storage_halo takes it)."},
    {NULL, NULL, 0, NULL},
};

static PyObject *partition_ndim(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLong(partition_of(self)->ndim);
}

static PyObject *partition_nranks(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLong(partition_of(self)->nranks);
}

static PyObject *partition_labels(PyObject *self, void *unused)
{
    (void)unused;
    return gtpy_dims_to_tuple(partition_of(self)->ndim, partition_of(self)->labels);
}

static PyObject *partition_global_shape(PyObject *self, void *unused)
{
    (void)unused;
    return gtpy_int64_tuple(partition_of(self)->ndim, partition_of(self)->global_shape);
}

static PyObject *partition_process_grid(PyObject *self, void *unused)
{
    (void)unused;
    return int_tuple(partition_of(self)->ndim, partition_of(self)->nprocs);
}

static PyObject *partition_periodic(PyObject *self, void *unused)
{
    (void)unused;
    const gts_partition *p = partition_of(self);
    PyObject *result = PyTuple_New(p->ndim);
    for (int d = 0; result && d < p->ndim; ++d)
        PyTuple_SET_ITEM(result, d, PyBool_FromLong(p->periodic[d]));
    return result;
}

static PyGetSetDef partition_getset[] = {
    {"ndim", partition_ndim, NULL, "The number of split dimensions.", NULL},
    {"nranks", partition_nranks, NULL, "The number of ranks.", NULL},
    {"labels", partition_labels, NULL, "The label of each split dimension.", NULL},
    {"global_shape", partition_global_shape, NULL, "The split extents (domain points).", NULL},
    {"process_grid", partition_process_grid, NULL, "Blocks (ranks) per split dimension.", NULL},
    {"periodic", partition_periodic, NULL, "Whether each split dimension wraps around.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_Partition_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.distributed.Partition",
    .tp_doc = "Partition(global_shape, nranks, process_grid=None, periodic=False, labels=None)\n"
              "--\n\n"
              "A domain split over a Cartesian grid of ranks (libgtstore's gts_partition): "
              "`global_shape` gives the extents of the split dimensions (labelled `labels`, "
              "I, J, K by default); `process_grid` the ranks per dimension (None or 0 entries: "
              "chosen as MPI_Dims_create does); uneven extents give the first blocks one point "
              "more. Nothing here communicates.",
    .tp_basicsize = sizeof(Partition),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = partition_new,
    .tp_methods = partition_methods,
    .tp_getset = partition_getset,
};

/* ---- HaloPlan --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    gts_halo_plan *plan;
    PyObject *fields;    /* the storages, kept alive with the plan */
    PyObject *neighbors; /* tuple of tuples, made once */
} HaloPlan;

/* gtstore.distributed.HaloNeighbor: a plan's neighbour, a tuple whose
 * fields also have names (plain tuples before; unpacking still works). */
static PyTypeObject neighbor_type;
static PyStructSequence_Field neighbor_fields[] = {
    {"rank", "the neighbour's rank"},
    {"offset", "where it lies: -1, 0 or 1 per split dimension"},
    {"send_tag", "the tag of the message sent to it"},
    {"recv_tag", "the tag of the message received from it"},
    {"send_bytes", "bytes sent to it per exchange (0: no message that way)"},
    {"recv_bytes", "bytes received from it per exchange (0: no message that way)"},
    {NULL, NULL},
};
static PyStructSequence_Desc neighbor_desc = {
    "gtstore.distributed.HaloNeighbor",
    "A neighbour of a HaloPlan (libgtstore's gts_halo_neighbor): (rank, offset, send_tag, "
    "recv_tag, send_bytes, recv_bytes).",
    neighbor_fields, 6};

int gtpy_halo_neighbor_init(PyObject *module)
{
    if (PyStructSequence_InitType2(&neighbor_type, &neighbor_desc) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "HaloNeighbor", (PyObject *)&neighbor_type);
}

static PyObject *neighbor_tuple(const gts_halo_neighbor *n, int ndim)
{
    PyObject *item = PyStructSequence_New(&neighbor_type);
    if (!item)
        return NULL;
    PyObject *values[6] = {PyLong_FromLong(n->rank), int_tuple(ndim, n->offset),
                           PyLong_FromLong(n->send_tag), PyLong_FromLong(n->recv_tag),
                           PyLong_FromLongLong((long long)n->send_bytes),
                           PyLong_FromLongLong((long long)n->recv_bytes)};
    bool ok = true;
    for (int i = 0; i < 6; ++i) {
        ok &= values[i] != NULL;
        PyStructSequence_SetItem(item, i, values[i] ? values[i] : Py_NewRef(Py_None));
    }
    if (!ok)
        Py_CLEAR(item);
    return item;
}

static PyObject *neighbors_tuple(const gts_halo_plan *plan, int ndim)
{
    int n = gts_halo_plan_neighbor_count(plan);
    PyObject *result = PyTuple_New(n);
    for (int i = 0; result && i < n; ++i) {
        PyObject *item = neighbor_tuple(gts_halo_plan_neighbor(plan, i), ndim);
        if (!item)
            Py_CLEAR(result);
        else
            PyTuple_SET_ITEM(result, i, item);
    }
    return result;
}

/* components=: per field "scalar", "u" or "v" (None: all scalars). */
static int component_entries(PyObject *obj, Py_ssize_t nfields, gts_cube_component *out)
{
    for (Py_ssize_t f = 0; f < nfields; ++f)
        out[f] = GTS_CUBE_SCALAR;
    if (obj == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(obj, "components: expected a sequence of \"scalar\", \"u\" "
                                         "and \"v\"");
    if (!seq)
        return -1;
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(seq) != nfields) {
        PyErr_Format(PyExc_ValueError, "components: %R has %zd entries for %zd fields", obj,
                     PySequence_Fast_GET_SIZE(seq), nfields);
        rc = -1;
    }
    static const char *names[3] = {"scalar", "u", "v"};
    for (Py_ssize_t f = 0; !rc && f < nfields; ++f) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, f);
        const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        int found = -1;
        for (int c = 0; text && c < 3; ++c)
            if (strcmp(text, names[c]) == 0)
                found = c;
        if (found < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyUnicode_Check(item) ? PyExc_ValueError : PyExc_TypeError,
                             "components: entry %R at position %zd is not \"scalar\", \"u\" "
                             "or \"v\"", item, f);
            rc = -1;
        } else {
            out[f] = (gts_cube_component)found;
        }
    }
    Py_DECREF(seq);
    return rc;
}

/* The plan of either decomposition. */
static int make_plan(PyObject *partition, int rank, Py_ssize_t n, const gts_storage *storages,
                     PyObject *components_obj, gts_halo_plan **plan)
{
    gts_error err;
    int rc;
    if (PyObject_TypeCheck(partition, &gtpy_CubePartition_Type)) {
        gts_cube_component *components = PyMem_Calloc((size_t)(n ? n : 1), sizeof *components);
        if (!components) {
            PyErr_NoMemory();
            return -1;
        }
        if (component_entries(components_obj, n, components) < 0) {
            PyMem_Free(components);
            return -1;
        }
        rc = gts_cube_halo_plan_create(gtpy_cube_partition_of(partition), rank, (int)n,
                                       storages, components, plan, &err);
        PyMem_Free(components);
    } else if (PyObject_TypeCheck(partition, &gtpy_Partition_Type)) {
        if (components_obj != Py_None) {
            PyErr_SetString(PyExc_ValueError, "components: only a CubePartition turns vectors");
            return -1;
        }
        rc = gts_halo_plan_create(partition_of(partition), rank, (int)n, storages, plan, &err);
    } else {
        PyErr_Format(PyExc_TypeError, "partition: expected a Partition or a CubePartition, got "
                     "%.200s", Py_TYPE(partition)->tp_name);
        return -1;
    }
    if (rc)
        gtpy_raise_null(&err);
    return rc ? -1 : 0;
}

static PyObject *halo_plan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"partition", "rank", "fields", "components"};
    static gtpy_signature sig = GTPY_SIGNATURE("HaloPlan", names, 4, 3, 0);
    PyObject *v[4];
    int rank;
    if (gtpy_parse_tuple(&sig, args, kwargs, v) < 0 || gtpy_c_int(v[1], "rank", &rank) < 0)
        return NULL;
    PyObject *partition = v[0], *fields_obj = v[2], *components_obj = v[3] ? v[3] : Py_None;
    PyObject *fields = PySequence_Tuple(fields_obj);
    if (!fields)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    if (n == 0) { /* libgtstore's nfields is no parameter here */
        PyErr_SetString(PyExc_ValueError, "fields: empty; an exchange needs at least one field");
        Py_DECREF(fields);
        return NULL;
    }
    gts_storage *storages = n > INT_MAX ? NULL : PyMem_Calloc((size_t)n, sizeof *storages);
    if (!storages) {
        Py_DECREF(fields);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t f = 0; f < n; ++f) {
        PyObject *item = PyTuple_GET_ITEM(fields, f);
        if (!gtpy_is_storage(item)) {
            PyErr_Format(PyExc_TypeError, "fields[%zd]: expected a gtstore Storage, got %.200s", f,
                         Py_TYPE(item)->tp_name);
            PyMem_Free(storages);
            Py_DECREF(fields);
            return NULL;
        }
        gtpy_storage_load(item, &storages[f]); /* buffer borrowed; the plan takes its own */
    }
    gts_halo_plan *plan = NULL;
    int rc = make_plan(partition, rank, n, storages, components_obj, &plan);
    PyMem_Free(storages);
    if (rc) {
        Py_DECREF(fields);
        return NULL;
    }
    int ndim = PyObject_TypeCheck(partition, &gtpy_Partition_Type) ? partition_of(partition)->ndim
                                                                   : 2;
    HaloPlan *self = (HaloPlan *)type->tp_alloc(type, 0);
    PyObject *neighbors = self ? neighbors_tuple(plan, ndim) : NULL;
    if (!neighbors) {
        gts_halo_plan_destroy(plan);
        Py_DECREF(fields);
        Py_XDECREF(self);
        return NULL;
    }
    self->plan = plan;
    self->fields = fields;
    self->neighbors = neighbors;
    return (PyObject *)self;
}

const gts_halo_plan *gtpy_halo_plan_of(PyObject *plan)
{
    return ((HaloPlan *)plan)->plan;
}

static void halo_plan_dealloc(PyObject *self)
{
    HaloPlan *h = (HaloPlan *)self;
    gts_halo_plan_destroy(h->plan);
    Py_XDECREF(h->fields);
    Py_XDECREF(h->neighbors);
    Py_TYPE(self)->tp_free(self);
}

/* pack(index, buffer) / unpack(index, buffer): a C-contiguous buffer of
 * exactly the message's bytes (libgtstore checks the size and index). */
static PyObject *halo_plan_transfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    bool pack)
{
    static const char *const names[] = {"index", "buffer"};
    static gtpy_signature sigs[] = {GTPY_SIGNATURE("pack", names, 2, 2, 2),
                                    GTPY_SIGNATURE("unpack", names, 2, 2, 2)};
    if (gtpy_parse_args(&sigs[pack ? 0 : 1], args, nargs, NULL, (PyObject *[2]){NULL}) < 0)
        return NULL;
    int64_t index;
    if (gtpy_int(args[0], "index", &index) < 0)
        return NULL;
    const gts_halo_plan *plan = ((HaloPlan *)self)->plan;
    if (index < 0 || index >= gts_halo_plan_neighbor_count(plan)) {
        PyErr_Format(PyExc_IndexError, "index: %lld is outside [0, %d)", (long long)index,
                     gts_halo_plan_neighbor_count(plan));
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view,
                           pack ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    gts_error err;
    int rc = pack ? gts_halo_plan_pack(plan, (int)index, view.buf, view.len, &err)
                  : gts_halo_plan_unpack(plan, (int)index, view.buf, view.len, &err);
    PyBuffer_Release(&view);
    if (rc)
        return gtpy_raise_param("buffer", &err), NULL;
    Py_RETURN_NONE;
}

static PyObject *halo_plan_pack(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return halo_plan_transfer(self, args, nargs, true);
}

static PyObject *halo_plan_unpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return halo_plan_transfer(self, args, nargs, false);
}

/* message_layout(direction): libgtstore's layout of one direction's block
 * (gts_halo_plan_message_layout) as a slice per neighbour, and the bytes
 * of the travelling messages. */
static PyObject *halo_plan_message_layout(PyObject *self, PyObject *const *args,
                                          Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"direction"};
    static gtpy_signature sig = GTPY_SIGNATURE("message_layout", names, 1, 1, 0);
    PyObject *direction;
    if (gtpy_parse_args(&sig, args, nargs, kwnames, &direction) < 0)
        return NULL;
    const char *text = PyUnicode_Check(direction) ? PyUnicode_AsUTF8(direction) : NULL;
    if (!text || (strcmp(text, "send") != 0 && strcmp(text, "recv") != 0)) {
        if (!PyErr_Occurred())
            PyErr_Format(text ? PyExc_ValueError : PyExc_TypeError,
                         "direction: expected \"send\" or \"recv\", got %R", direction);
        return NULL;
    }
    bool send = text[0] == 's';
    const gts_halo_plan *plan = ((HaloPlan *)self)->plan;
    int n = gts_halo_plan_neighbor_count(plan);
    int64_t *offsets = PyMem_Calloc((size_t)(n ? n : 1), sizeof *offsets), travel_bytes;
    if (!offsets)
        return PyErr_NoMemory();
    gts_error err;
    if (gts_halo_plan_message_layout(plan, send, offsets, n, &travel_bytes, &err)) {
        PyMem_Free(offsets);
        return gtpy_raise_null(&err);
    }
    PyObject *slices = PyTuple_New(n);
    for (int i = 0; slices && i < n; ++i) {
        /* a slice is how Python names a range: [offset, offset + the message's bytes) */
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(plan, i);
        int64_t bytes = send ? nb->send_bytes : nb->recv_bytes;
        PyObject *start = PyLong_FromLongLong((long long)offsets[i]);
        PyObject *stop = PyLong_FromLongLong((long long)(offsets[i] + bytes));
        PyObject *item = start && stop ? PySlice_New(start, stop, NULL) : NULL;
        Py_XDECREF(start);
        Py_XDECREF(stop);
        if (!item)
            Py_CLEAR(slices);
        else
            PyTuple_SET_ITEM(slices, i, item);
    }
    PyMem_Free(offsets);
    return slices ? Py_BuildValue("(NL)", slices, (long long)travel_bytes) : NULL;
}

static PyMethodDef halo_plan_methods[] = {
    {"pack", (PyCFunction)(void (*)(void))halo_plan_pack, METH_FASTCALL,
     "pack($self, index, buffer, /)\n--\n\nWrites the message for neighbour `index` into `buffer` (writable, "
     "C-contiguous, exactly its send_bytes)."},
    {"unpack", (PyCFunction)(void (*)(void))halo_plan_unpack, METH_FASTCALL,
     "unpack($self, index, buffer, /)\n--\n\nWrites the message received from neighbour `index` (exactly its "
     "recv_bytes) into the fields' halos."},
    {"message_layout", (PyCFunction)(void (*)(void))halo_plan_message_layout,
     METH_FASTCALL | METH_KEYWORDS,
     "message_layout($self, direction)\n--\n\nWhere each neighbour's message of `direction` "
     "(\"send\" or \"recv\") sits in one block of that direction, as libgtstore lays out "
     "HaloMessages' blocks (gts_halo_plan_message_layout): (slices, travel_bytes), a slice of "
     "the block per neighbour, and the bytes of the messages that travel (not this rank's own, "
     "HaloMessages.local), which come first, in neighbour order: a block of travel_bytes holds "
     "them all."},
    {NULL, NULL, 0, NULL},
};

static PyObject *halo_plan_neighbors(PyObject *self, void *unused)
{
    (void)unused;
    return Py_NewRef(((HaloPlan *)self)->neighbors);
}

static PyObject *halo_plan_fields(PyObject *self, void *unused)
{
    (void)unused;
    return Py_NewRef(((HaloPlan *)self)->fields);
}

static PyObject *halo_plan_signature(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(gts_halo_plan_signature(((HaloPlan *)self)->plan));
}

static PyObject *halo_plan_send_bytes(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLongLong(gts_halo_plan_send_bytes(((HaloPlan *)self)->plan));
}

static PyObject *halo_plan_recv_bytes(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLongLong(gts_halo_plan_recv_bytes(((HaloPlan *)self)->plan));
}

static PyGetSetDef halo_plan_getset[] = {
    {"neighbors", halo_plan_neighbors, NULL,
     "Per neighbour with a message either way, a HaloNeighbor: (rank, offset, send_tag, "
     "recv_tag, send_bytes, recv_bytes), also by name.",
     NULL},
    {"fields", halo_plan_fields, NULL, "The storages, as a tuple.", NULL},
    {"signature", halo_plan_signature, NULL,
     "A hash of what must agree on every rank (dtypes, halos, layouts, undivided extents).",
     NULL},
    {"send_bytes", halo_plan_send_bytes, NULL, "Bytes sent per exchange.", NULL},
    {"recv_bytes", halo_plan_recv_bytes, NULL, "Bytes received per exchange.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_HaloPlan_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.distributed.HaloPlan",
    .tp_doc = "HaloPlan(partition, rank, fields, components=None)\n--\n\n"
              "The halo exchange plan of one rank for a sequence of storages (libgtstore's "
              "gts_halo_plan): its neighbours (diagonal ones included), and the packing of "
              "each one's message into a contiguous buffer. It communicates nothing. On a "
              "CubePartition (gts_cube_halo_plan_create), `components` names each field "
              "\"scalar\", \"u\" or \"v\" (the k-th u pairs with the k-th v); one "
              "message per neighbour rank.",
    .tp_basicsize = sizeof(HaloPlan),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = halo_plan_new,
    .tp_dealloc = halo_plan_dealloc,
    .tp_methods = halo_plan_methods,
    .tp_getset = halo_plan_getset,
};
