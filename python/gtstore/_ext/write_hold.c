/* Writes in flight from Python (gtstore/sync.h): the mirrored buffers one
 * call writes are held from just before NumPy (or the engine) writes them
 * until it is done, so that another thread's sync, which may run while the
 * GIL is released in the middle of the write, waits for the write instead
 * of copying half of it. And while a call of libgtstore waits for another
 * thread's write, the GIL is let go: that thread needs it to end its write. */
#include "write_hold.h"
#include "errors.h"

#include "gtstore/sync.h"

/* The wait hooks: the GIL released if this thread holds it (a call made
 * with the GIL released already has nothing to let go). */
static void *release_gil(void)
{
    return PyGILState_Check() ? (void *)PyEval_SaveThread() : NULL;
}

static void take_gil(void *token)
{
    if (token)
        PyEval_RestoreThread((PyThreadState *)token);
}

void gtpy_write_hold_init(void)
{
    static const gts_wait_hooks hooks = {release_gil, take_gil};
    gts_sync_set_wait_hooks(&hooks);
}

void gtpy_holds_init(gtpy_holds *h)
{
    h->n = 0;
    h->begun = 0;
}

void gtpy_holds_add(gtpy_holds *h, const gts_storage *g)
{
    if (!gts_buffer_mirrored(g->buffer) || g->readonly)
        return; /* nothing to hold: one side, or nothing written */
    for (int i = 0; i < h->n; ++i)
        if (h->buffers[i] == g->buffer)
            return;
    if (h->n < GTPY_MAX_HOLDS)
        h->buffers[h->n++] = g->buffer;
}

/* In address order: two calls that write the same buffers never wait for
 * each other in a cycle. */
static void sort_by_address(gtpy_holds *h)
{
    for (int i = 1; i < h->n; ++i)
        for (int j = i; j > 0 && (uintptr_t)h->buffers[j] < (uintptr_t)h->buffers[j - 1]; --j) {
            gts_buffer *t = h->buffers[j];
            h->buffers[j] = h->buffers[j - 1];
            h->buffers[j - 1] = t;
        }
}

int gtpy_holds_begin(gtpy_holds *h, gts_side side, gts_stream stream)
{
    gts_error err;
    sort_by_address(h);
    for (; h->begun < h->n; ++h->begun)
        if (gts_buffer_write_begin(h->buffers[h->begun], side, stream, &err) != 0) {
            gtpy_holds_end(h);
            return gtpy_raise(&err);
        }
    return 0;
}

void gtpy_holds_end(gtpy_holds *h)
{
    while (h->begun > 0)
        gts_buffer_write_end(h->buffers[--h->begun], NULL);
}
