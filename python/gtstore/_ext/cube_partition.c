/* gtstore._gtstore.CubePartition: libgtstore's cubed-sphere decomposition
 * (gtstore/cube_partition.h) for gtstore.distributed; HaloPlan
 * (distributed.c) makes its plans (gtstore/cube_halo_plan.h). Every number
 * is libgtstore's: this file converts. */
#include "api.h"
#include "args.h"
#include "convert.h"
#include "errors.h"

#include "gtstore/cube_partition.h"

typedef struct {
    PyObject_HEAD
    gts_cube_partition partition;
} CubePartition;

const gts_cube_partition *gtpy_cube_partition_of(PyObject *self)
{
    return &((CubePartition *)self)->partition;
}

static PyObject *cube_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"n", "layout"};
    static gtpy_signature sig = GTPY_SIGNATURE("CubePartition", names, 2, 1, 0);
    PyObject *values[2];
    if (gtpy_parse_tuple(&sig, args, kwargs, values) < 0)
        return NULL;
    PyObject *n_obj = values[0], *layout_obj = values[1];
    int64_t n, layout[2] = {1, 1};
    int count = 2;
    if (gtpy_int(n_obj, "n", &n) < 0)
        return NULL;
    if (layout_obj && gtpy_int_tuple(layout_obj, "layout", 2, &count, layout) < 0)
        return NULL;
    if (count != 2) {
        PyErr_Format(PyExc_ValueError, "layout: %R has %d entries, expected 2 (rows, columns "
                     "of ranks per tile)", layout_obj, count);
        return NULL;
    }
    for (int d = 0; d < 2; ++d)
        if (layout[d] < 1 || layout[d] > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "layout: entry %lld at position %d is outside "
                         "[1, %d]", (long long)layout[d], d, INT_MAX);
            return NULL;
        }
    gts_cube_partition partition;
    gts_error err;
    if (gts_cube_partition_init(&partition, n, (int)layout[0], (int)layout[1], &err))
        return gtpy_raise_null(&err);
    CubePartition *self = (CubePartition *)type->tp_alloc(type, 0);
    if (self)
        self->partition = partition;
    return (PyObject *)self;
}

static int check_rank(PyObject *self, PyObject *obj, int *rank)
{
    int64_t value;
    if (gtpy_int(obj, "rank", &value) < 0)
        return -1;
    int nranks = gtpy_cube_partition_of(self)->nranks;
    if (value < 0 || value >= nranks) {
        PyErr_Format(PyExc_IndexError, "rank: %lld is outside [0, %d)", (long long)value,
                     nranks);
        return -1;
    }
    *rank = (int)value;
    return 0;
}

static PyObject *cube_locate(PyObject *self, PyObject *rank_obj)
{
    int rank, tile, row, column;
    if (check_rank(self, rank_obj, &rank) < 0)
        return NULL;
    gts_cube_partition_locate(gtpy_cube_partition_of(self), rank, &tile, &row, &column);
    return Py_BuildValue("(iii)", tile, row, column);
}

static PyObject *cube_rank(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const gts_cube_partition *p = gtpy_cube_partition_of(self);
    static const char *const names[] = {"tile", "row", "column"};
    static gtpy_signature sig = GTPY_SIGNATURE("rank", names, 3, 3, 3);
    PyObject *objs[3];
    if (gtpy_parse_args(&sig, args, nargs, NULL, objs) < 0)
        return NULL;
    int64_t v[3], limit[3] = {GTS_CUBE_TILES, p->layout[0], p->layout[1]};
    for (int i = 0; i < 3; ++i) {
        if (gtpy_int(objs[i], names[i], &v[i]) < 0)
            return NULL;
        if (v[i] < 0 || v[i] >= limit[i]) {
            PyErr_Format(PyExc_IndexError, "%s: %lld is outside [0, %lld)", names[i],
                         (long long)v[i], (long long)limit[i]);
            return NULL;
        }
    }
    return PyLong_FromLong(gts_cube_partition_rank(p, (int)v[0], (int)v[1], (int)v[2]));
}

static PyObject *cube_subdomain(PyObject *self, PyObject *rank_obj)
{
    int rank;
    if (check_rank(self, rank_obj, &rank) < 0)
        return NULL;
    int64_t start[2], size[2];
    gts_cube_partition_subdomain(gtpy_cube_partition_of(self), rank, start, size);
    return Py_BuildValue("(NN)", gtpy_int64_tuple(2, start), gtpy_int64_tuple(2, size));
}

static PyObject *cube_neighbor(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[] = {"rank", "dx", "dy"};
    static gtpy_signature sig = GTPY_SIGNATURE("neighbor", names, 3, 3, 3);
    if (gtpy_parse_args(&sig, args, nargs, NULL, (PyObject *[3]){NULL}) < 0)
        return NULL;
    int rank;
    int64_t d[2];
    if (check_rank(self, args[0], &rank) < 0 || gtpy_int(args[1], "dx", &d[0]) < 0 ||
        gtpy_int(args[2], "dy", &d[1]) < 0)
        return NULL;
    for (int i = 0; i < 2; ++i)
        if (d[i] < -1 || d[i] > 1) {
            PyErr_Format(PyExc_ValueError, "%s: %lld is not -1, 0 or 1", i ? "dy" : "dx",
                         (long long)d[i]);
            return NULL;
        }
    if (d[0] == 0 && d[1] == 0) {
        PyErr_SetString(PyExc_ValueError, "dx, dy: (0, 0) is no direction");
        return NULL;
    }
    int turns = 0;
    int to = gts_cube_partition_neighbor(gtpy_cube_partition_of(self), rank, (int)d[0],
                                         (int)d[1], &turns);
    if (to == GTS_NO_RANK)
        Py_RETURN_NONE;
    return Py_BuildValue("(ii)", to, turns);
}

static PyObject *cube_wrap(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[] = {"tile", "x", "y"};
    static gtpy_signature sig = GTPY_SIGNATURE("wrap", names, 3, 3, 3);
    if (gtpy_parse_args(&sig, args, nargs, NULL, (PyObject *[3]){NULL}) < 0)
        return NULL;
    int64_t tile, x, y;
    if (gtpy_int(args[0], "tile", &tile) < 0 || gtpy_int(args[1], "x", &x) < 0 ||
        gtpy_int(args[2], "y", &y) < 0)
        return NULL;
    if (tile < 0 || tile >= GTS_CUBE_TILES) {
        PyErr_Format(PyExc_IndexError, "tile: %lld is outside [0, 6)", (long long)tile);
        return NULL;
    }
    int to, turns;
    int64_t wx, wy;
    if (!gts_cube_wrap(gtpy_cube_partition_of(self), (int)tile, x, y, &to, &wx, &wy, &turns,
                       NULL))
        Py_RETURN_NONE;
    return Py_BuildValue("(iLLi)", to, (long long)wx, (long long)wy, turns);
}

static PyObject *cube_min_block(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLongLong(gts_cube_partition_min_block(gtpy_cube_partition_of(self)));
}

static PyObject *cube_check_halo(PyObject *self, PyObject *halo_obj)
{
    int64_t halo;
    gts_error err;
    if (gtpy_int(halo_obj, "halo", &halo) < 0)
        return NULL;
    if (gts_cube_partition_check_halo(gtpy_cube_partition_of(self), halo, false, &err) != 0)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyMethodDef cube_methods[] = {
    {"locate", cube_locate, METH_O, "locate($self, rank, /)\n--\n\n(tile, row, column) of a rank."},
    {"rank", (PyCFunction)(void (*)(void))cube_rank, METH_FASTCALL,
     "rank($self, tile, row, column, /)\n--\n\nThe rank there (pace's order)."},
    {"subdomain", cube_subdomain, METH_O,
     "subdomain($self, rank, /)\n--\n\n((x0, y0), (nx, ny)), the rank's cells of its tile."},
    {"neighbor", (PyCFunction)(void (*)(void))cube_neighbor, METH_FASTCALL,
     "neighbor($self, rank, dx, dy, /)\n--\n\n(rank, rotations) of the neighbour that way, or None at a "
     "corner of the cube. rotations: clockwise quarter turns from its frame to this one."},
    {"wrap", (PyCFunction)(void (*)(void))cube_wrap, METH_FASTCALL,
     "wrap($self, tile, x, y, /)\n--\n\n(tile, x, y, rotations) of the cell, x or y possibly past the tile's "
     "edge; None past both (a corner of the cube)."},
    {"min_block", cube_min_block, METH_NOARGS, "min_block($self, /)\n--\n\nThe smallest block: the widest halo."},
    {"check_halo", cube_check_halo, METH_O,
     "check_halo($self, halo, /)\n--\n\nRaises ValueError unless `halo` cells on each side of I "
     "and J fit: 0 to the smallest block."},
    {NULL, NULL, 0, NULL},
};

static PyObject *cube_get(PyObject *self, void *which)
{
    const gts_cube_partition *p = gtpy_cube_partition_of(self);
    switch ((int)(intptr_t)which) {
    case 0: return PyLong_FromLongLong(p->n);
    case 1: return Py_BuildValue("(ii)", p->layout[0], p->layout[1]);
    case 2: return PyLong_FromLong(p->nranks);
    default: return PyLong_FromLong(p->ranks_per_tile);
    }
}

static PyGetSetDef cube_getset[] = {
    {"n", cube_get, NULL, "Cells along each edge of a tile.", (void *)0},
    {"layout", cube_get, NULL, "(rows, columns) of ranks per tile.", (void *)1},
    {"nranks", cube_get, NULL, "6 * rows * columns.", (void *)2},
    {"ranks_per_tile", cube_get, NULL, "rows * columns.", (void *)3},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_CubePartition_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.distributed.CubePartition",
    .tp_doc = "CubePartition(n, layout=(1, 1))\n--\n\n"
              "The cubed sphere's six tiles of n x n cells, each split over a rows x columns "
              "grid of ranks, ordered as pace's CubedSpherePartitioner (libgtstore's "
              "gts_cube_partition). Nothing here communicates.",
    .tp_basicsize = sizeof(CubePartition),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = cube_new,
    .tp_methods = cube_methods,
    .tp_getset = cube_getset,
};
