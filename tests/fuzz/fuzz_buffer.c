/* Buffers and the large-block cache: random sequences of allocations
 * (small heap blocks, huge-page mappings up to 6 MiB, and hostile sizes),
 * releases, wraps and cache limits.
 *
 * Checks: a buffer has the size asked for, 64-byte aligned data (2 MiB for
 * mappings), and with GTS_ALLOC_ZERO reads as zeros even when the cache
 * hands back a block that was written before; its first and last bytes are
 * writable; a negative size or one no machine can map (>= 2**57 bytes) is
 * refused with a message; the live-buffer count follows the calls. */
#include "fuzz_input.h"
#include "gtstore/buffer.h"

#define SLOTS 8
/* Sizes tried for real stay below MAX_TRIED; from NEVER_MAPPED on (beyond
 * the 57-bit address space of 5-level paging) every request must fail. */
#define MAX_TRIED ((int64_t)1 << 24)
#define NEVER_MAPPED ((int64_t)1 << 57)

static int64_t live_buffers(void)
{
    gts_memory_stats stats;
    gts_memory_stats_get(&stats);
    return stats.live_buffers;
}

static int64_t draw_size(fuzz_input *in)
{
    switch (fuzz_range(in, 0, 3)) {
    case 0: return fuzz_range(in, 0, 4096);
    case 1: return GTS_LARGE_BLOCK - fuzz_range(in, 1, 4096);
    case 2: return GTS_LARGE_BLOCK + fuzz_range(in, 0, 4095) * 1024; /* up to 6 MiB */
    default: return fuzz_hostile(in);
    }
}

static void check_new(gts_buffer *buffer, int64_t size, bool zero)
{
    unsigned char *data = gts_buffer_host(buffer);
    FUZZ_CHECK(gts_buffer_size(buffer) == size);
    FUZZ_CHECK(gts_buffer_owns_memory(buffer));
    FUZZ_CHECK((uintptr_t)data % 64 == 0);
    if (size >= GTS_LARGE_BLOCK)
        FUZZ_CHECK((uintptr_t)data % ((uintptr_t)2 << 20) == 0);
    if (size == 0)
        return;
    if (zero) {
        for (int64_t i = 0; i < size; i += 4093)
            FUZZ_CHECK(data[i] == 0);
        FUZZ_CHECK(data[size - 1] == 0 && data[size / 2] == 0);
    }
    /* dirty the block, so that a cached reuse must zero it again */
    memset(data, 0xab, (size_t)(size < 8192 ? size : 8192));
    data[size - 1] = 0xcd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    gts_buffer *slots[SLOTS] = {NULL};
    int64_t start = live_buffers(), live = 0;
    gts_cache_set_limit(fuzz_range(&in, 0, 24) << 20);
    for (int step = 0; step < 24 && !fuzz_empty(&in); ++step) {
        int slot = (int)fuzz_range(&in, 0, SLOTS - 1);
        gts_error err;
        switch (fuzz_range(&in, 0, 3)) {
        case 0:
        case 1: { /* allocate into a free slot */
            if (slots[slot])
                break;
            int64_t request = draw_size(&in);
            if (request >= MAX_TRIED && request < NEVER_MAPPED)
                break; /* might be mapped and populated: too big to try */
            bool zero = fuzz_bool(&in);
            int rc = gts_buffer_alloc_host(request, zero ? GTS_ALLOC_ZERO : 0, &slots[slot],
                                           fuzz_error(&err));
            if (rc != GTS_OK) {
                fuzz_check_error(rc, &err);
                FUZZ_CHECK(request < 0 || request >= NEVER_MAPPED);
                if (request < 0)
                    FUZZ_CHECK(rc == GTS_EINVAL);
                slots[slot] = NULL;
                break;
            }
            FUZZ_CHECK(request >= 0 && request < NEVER_MAPPED);
            check_new(slots[slot], request, zero);
            ++live;
            break;
        }
        case 2: /* release */
            if (slots[slot]) {
                gts_buffer_release(slots[slot]);
                slots[slot] = NULL;
                --live;
            }
            break;
        default: { /* wrap foreign memory, possibly nonsense */
            static unsigned char memory[64];
            gts_buffer *wrapped;
            int64_t request = fuzz_bool(&in) ? fuzz_range(&in, 0, 64) : fuzz_hostile(&in);
            void *where = fuzz_bool(&in) ? (void *)memory : NULL;
            int rc = gts_buffer_wrap_host(where, request, NULL, NULL, &wrapped, fuzz_error(&err));
            if (rc != GTS_OK) {
                fuzz_check_error(rc, &err);
                FUZZ_CHECK(request < 0 || (!where && request > 0));
                break;
            }
            FUZZ_CHECK(request >= 0 && (where || request == 0));
            FUZZ_CHECK(gts_buffer_size(wrapped) == request && !gts_buffer_owns_memory(wrapped));
            FUZZ_CHECK(gts_buffer_host(wrapped) == where);
            gts_buffer_release(gts_buffer_retain(wrapped));
            gts_buffer_release(wrapped);
            break;
        }
        }
        FUZZ_CHECK(live_buffers() - start == live);
    }
    for (int i = 0; i < SLOTS; ++i)
        gts_buffer_release(slots[i]);
    FUZZ_CHECK(live_buffers() == start);
    return 0;
}
