/* What the module's initialisation gathers: the function tables and types
 * of the Python API. */
#ifndef GTSTORE_EXT_API_H
#define GTSTORE_EXT_API_H

#include "ext.h"

/* ---- Python API functions (arrays.c, presets.c, memory.c, storage_api.c) - */

extern PyMethodDef gtpy_arrays_methods[];
extern PyMethodDef gtpy_presets_methods[];
extern PyMethodDef gtpy_memory_methods[];
extern PyMethodDef gtpy_devices_methods[];
extern PyMethodDef gtpy_storage_api_methods[];
extern PyTypeObject gtpy_Plan_Type;
/* gtstore.distributed's Partition and HaloPlan (distributed.c), and the
 * plan's message buffers (halo_messages.c). */
extern PyTypeObject gtpy_Partition_Type, gtpy_HaloPlan_Type;
extern PyTypeObject gtpy_HaloMessages_Type, gtpy_HaloMessage_Type;
/* The cubed sphere's partition (cube_partition.c); HaloPlan makes its plans. */
extern PyTypeObject gtpy_CubePartition_Type;
const gts_cube_partition *gtpy_cube_partition_of(PyObject *partition);
/* The plan of a HaloPlan (the caller checked the type). */
const gts_halo_plan *gtpy_halo_plan_of(PyObject *plan);
/* Readies HaloNeighbor, the struct sequence of HaloPlan.neighbors, and adds
 * it to `module`. */
int gtpy_halo_neighbor_init(PyObject *module);

/* Binds the Storage type's tables to its core and readies it, before the
 * kinds of storage (storage_type.c). */
int gtpy_storage_type_ready(void);

#endif
