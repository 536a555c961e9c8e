/* GPU fields from Fortran: the sync of a field with a host side and a
 * device side (gtstore/sync.h), and the device address of element 0, to
 * hand to a kernel (CUDA Fortran, OpenACC's deviceptr). */
#include "gtsf.h"

static int side_of(int32_t side, gts_side *out, gts_error *err)
{
    if (side != GTS_SIDE_HOST && side != GTS_SIDE_DEVICE)
        return gts_error_set(err, GTS_EINVAL, "side: %d (gts_host or gts_device)", (int)side);
    *out = (gts_side)side;
    return GTS_OK;
}

/* Brings side `side` up to date (nothing to do for a field with one side). */
int gtsf_sync(const gts_storage *field, int32_t side, gts_error *err)
{
    gts_side to = GTS_SIDE_HOST;
    int rc = side_of(side, &to, err);
    return rc ? rc : gts_buffer_sync(field->buffer, to, false, NULL, err);
}

/* Before writing side `side`: brings it up to date and marks it modified. */
int gtsf_prepare_write(const gts_storage *field, int32_t side, gts_error *err)
{
    gts_side to = GTS_SIDE_HOST;
    int rc = side_of(side, &to, err);
    return rc ? rc : gts_buffer_prepare_write(field->buffer, to, NULL, err);
}

int gtsf_sync_state(const gts_storage *field, int32_t *state, gts_error *err)
{
    (void)err;
    *state = (int32_t)gts_buffer_sync_state(field->buffer);
    return GTS_OK;
}

/* The address of element 0 on the field's device (its host address for
 * host memory): the buffer's base on its device plus the storage's offset,
 * which is the same on both sides of a mirrored buffer. */
int gtsf_device_pointer(const gts_storage *field, void **out, gts_error *err)
{
    (void)err;
    char *base = gts_buffer_data(field->buffer);
    *out = base ? base + field->offset : NULL;
    return GTS_OK;
}
