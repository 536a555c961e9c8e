/* Storages for a request: the allocation path of both APIs (storage_api.c,
 * storage_sides.c). */
#ifndef GTSTORE_EXT_ALLOCATION_H
#define GTSTORE_EXT_ALLOCATION_H

#include "request.h"
#include "source.h"

/* as_storage / storage with device_data (storage_sides.c): one
 * software-managed storage over (copy false) or copied from (copy true)
 * the request's data and device_data, in the state sync_state says. */
PyObject *gtpy_storage_sides(const gtpy_request *r, bool copy);
/* `obj` (the argument `param`) opened as device_data is (its data
 * interface's "gpu" entry first, acquired once) into `src`, which the
 * caller releases: 0, or -1 with a ValueError naming it where it is not
 * device memory. */
int gtpy_open_device_side(gtpy_source *src, PyObject *obj, const char *param);

/* A new host storage for a request resolved into `resolved` (a spec the
 * library resolves), filled or copied as the request says: the one
 * allocation path of both APIs (storage_api.c). `s` is the scratch struct
 * it is made in; on success it describes the storage, whose buffer
 * reference the returned object holds. */
PyObject *gtpy_storage_allocate(const gtpy_request *r, gtpy_source *src, gtpy_resolved *resolved,
                                gts_storage *s);

/* The preset name a new storage records (borrowed): the one given, else
 * its data's; NULL if none. */
PyObject *gtpy_preset_name(const gtpy_request *r, const gtpy_source *src);

#endif
