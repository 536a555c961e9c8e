/* Device memory freed in a stream's order (stream_free.h). */
#include "stream_free.h"

#include <pthread.h>

/* The order of each GPU's frees: a device's entry is made on its first
 * free in stream order and kept for the process (devices are never
 * unloaded), so that an entry's address stays valid without the lock. */
#define MAX_DEVICES 64

typedef struct {
    const gts_device_ops *device;
    gts__order frees;
} device_frees;

static device_frees table[MAX_DEVICES];
static int used;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* The frees' order of `dev`, made where `make` (NULL: none yet, or the
 * table is full, where frees are not stream-ordered). */
static gts__order *frees_of(const gts_device_ops *dev, bool make)
{
    gts__order *found = NULL;
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < used && !found; ++i)
        if (table[i].device == dev)
            found = &table[i].frees;
    if (!found && make && used < MAX_DEVICES) {
        table[used].device = dev;
        gts__order_init(&table[used].frees);
        found = &table[used++].frees;
    }
    pthread_mutex_unlock(&table_lock);
    return found;
}

bool gts__stream_free(const gts_device_ops *dev, gts__order *order)
{
    gts_stream legacy = gts_device_legacy_stream(dev);
    if (!legacy)
        return false;
    gts_error err;
    bool pending = gts__order_unfinished(dev, order);
    if (gts__order_device(dev, order, legacy, &err) != GTS_OK)
        return false;
    if (pending) { /* a new owner's accesses from elsewhere wait for this point */
        gts__order *frees = frees_of(dev, true);
        if (!frees || gts__order_record(dev, frees, legacy, &err) != GTS_OK)
            return false;
    }
    gts__order_forget(order);
    return true;
}

int gts__stream_free_order_new(const gts_device_ops *dev, gts__order *order, gts_error *err)
{
    gts_stream legacy = gts_device_legacy_stream(dev);
    gts__order *frees = legacy ? frees_of(dev, false) : NULL;
    if (!frees || !gts__order_pending(dev, frees))
        return GTS_OK;
    return gts__order_record(dev, order, legacy, err);
}
