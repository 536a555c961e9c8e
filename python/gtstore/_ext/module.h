/* All of the extension's shared declarations, for the files that use most
 * of them; a file that needs few includes the headers of its concepts
 * instead. All layout arithmetic is libgtstore's. */
#ifndef GTSTORE_EXT_MODULE_H
#define GTSTORE_EXT_MODULE_H

#include "allocation.h"
#include "api.h"
#include "args.h"
#include "array_interface.h"
#include "convert.h"
#include "dlpack.h"
#include "errors.h"
#include "numpy.h"
#include "request.h"
#include "source.h"
#include "storage.h"
#include "write_hold.h"

#endif
