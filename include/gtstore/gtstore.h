/* libgtstore: storage for stencil codes. Include this umbrella header or the
 * header of one concept. */
#ifndef GTSTORE_GTSTORE_H
#define GTSTORE_GTSTORE_H

#include "gtstore/access.h"
#include "gtstore/binding.h"
#include "gtstore/broadcast.h"
#include "gtstore/buffer.h"
#include "gtstore/copy_batch.h"
#include "gtstore/cube_halo.h"
#include "gtstore/cube_halo_plan.h"
#include "gtstore/cube_partition.h"
#include "gtstore/device.h"
#include "gtstore/dlpack.h"
#include "gtstore/dtype.h"
#include "gtstore/error.h"
#include "gtstore/geometry.h"
#include "gtstore/halo_messages.h"
#include "gtstore/halo_plan.h"
#include "gtstore/kernels.h"
#include "gtstore/layout.h"
#include "gtstore/partition.h"
#include "gtstore/partition_halo.h"
#include "gtstore/preset.h"
#include "gtstore/spec.h"
#include "gtstore/stencils.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"
#include "gtstore/version.h"
#include "gtstore/wrap.h"

#endif
