/* Tuples as text for messages (tuple_text.h). */
#include "tuple_text.h"

#include <stdio.h>

/* Appends entry `i` of `n` written by snprintf's `format` of `entry`; a
 * 1-tuple keeps its trailing comma, as Python writes it. */
static size_t append(char *text, size_t used, int i, int n, const char *entry)
{
    int w = snprintf(text + used, GTS__TUPLE_TEXT_SIZE - used, "%s%s%s", i ? ", " : "", entry,
                     n == 1 ? "," : "");
    return w < 0 ? used : used + (size_t)w;
}

static void close_tuple(char *text, size_t used)
{
    snprintf(text + used, GTS__TUPLE_TEXT_SIZE - used, ")");
}

void gts__shape_text(int n, const int64_t *values, char text[GTS__TUPLE_TEXT_SIZE])
{
    size_t used = (size_t)snprintf(text, GTS__TUPLE_TEXT_SIZE, "(");
    for (int i = 0; i < n && used < GTS__TUPLE_TEXT_SIZE; ++i) {
        char entry[24];
        snprintf(entry, sizeof entry, "%lld", (long long)values[i]);
        used = append(text, used, i, n, entry);
    }
    if (used < GTS__TUPLE_TEXT_SIZE)
        close_tuple(text, used);
}

void gts__dims_text(int n, const gts_dim *dims, char text[GTS__TUPLE_TEXT_SIZE])
{
    size_t used = (size_t)snprintf(text, GTS__TUPLE_TEXT_SIZE, "(");
    for (int i = 0; i < n && used < GTS__TUPLE_TEXT_SIZE; ++i) {
        char label[GTS_DIM_TEXT_SIZE], entry[GTS_DIM_TEXT_SIZE + 2];
        gts_dim_format(dims[i], label);
        snprintf(entry, sizeof entry, "'%s'", label);
        used = append(text, used, i, n, entry);
    }
    if (used < GTS__TUPLE_TEXT_SIZE)
        close_tuple(text, used);
}
