/* Dimension labels, layouts and presets: gts_dim_parse, gts_dims_parse,
 * gts_dims_check, gts_layout_check, gts_layout_from_axes,
 * gts_layout_from_strides, preset lookup, registration and layouts.
 *
 * Checks: a parsed label or dims string formats back to the same text;
 * gts_dims_check and gts_layout_check accept exactly what a brute-force
 * check accepts; gts_layout_from_axes succeeds exactly when a reference
 * implementation of the naming rule (layout.h) does, with the same layout;
 * every layout the library returns is a permutation; a registered preset is
 * found by its name and gone after unregistering. */
#include "fuzz_input.h"
#include "gtstore/layout.h"
#include "gtstore/preset.h"

static bool is_permutation(int n, const int *layout)
{
    bool seen[GTS_MAX_NDIM] = {false};
    for (int d = 0; d < n; ++d) {
        if (layout[d] < 0 || layout[d] >= n || seen[layout[d]])
            return false;
        seen[layout[d]] = true;
    }
    return true;
}

static bool dims_valid(int n, const gts_dim *dims)
{
    if (n < 0 || n > GTS_MAX_NDIM)
        return false;
    for (int d = 0; d < n; ++d) {
        if (dims[d] < GTS_DIM_I || dims[d] > GTS_MAX_DATA_DIM)
            return false;
        for (int e = 0; e < d; ++e)
            if (dims[e] == dims[d])
                return false;
    }
    return true;
}

static int find(int n, const gts_dim *labels, gts_dim label)
{
    for (int i = 0; i < n; ++i)
        if (labels[i] == label)
            return i;
    return -1;
}

/* layout.h's rule, written plainly: data dims missing from the order go
 * outermost by number, then the order's labels that dims has. */
static bool reference_layout(int n, const gts_dim *dims, int norder, const gts_dim *order,
                             int *layout)
{
    int outer[GTS_MAX_NDIM], nouter = 0, rank = 0;
    for (int d = 0; d < n; ++d)
        if (dims[d] >= 0 && find(norder, order, dims[d]) < 0)
            outer[nouter++] = d;
    for (int i = 0; i < nouter; ++i) /* selection sort by label */
        for (int j = i + 1; j < nouter; ++j)
            if (dims[outer[j]] < dims[outer[i]]) {
                int t = outer[i];
                outer[i] = outer[j];
                outer[j] = t;
            }
    for (int i = 0; i < nouter; ++i)
        layout[outer[i]] = rank++;
    for (int i = 0; i < norder; ++i) {
        int d = find(n, dims, order[i]);
        if (d >= 0)
            layout[d] = rank++;
    }
    return rank == n;
}

static void check_label(const char *text)
{
    gts_error err;
    gts_dim dim;
    int rc = gts_dim_parse(text, &dim, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    char back[GTS_DIM_TEXT_SIZE];
    gts_dim_format(dim, back);
    FUZZ_CHECK(strcmp(back, text) == 0);
}

/* Parses `text` as dims; returns ndim or -1. */
static int check_dims_string(const char *text, gts_dim *dims)
{
    gts_error err;
    int ndim = -1;
    int rc = gts_dims_parse(text, dims, &ndim, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return -1;
    }
    FUZZ_CHECK(ndim == (int)strlen(text));
    FUZZ_CHECK(dims_valid(ndim, dims));
    for (int d = 0; d < ndim; ++d) {
        char back[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[d], back);
        FUZZ_CHECK(back[0] == text[d] && back[1] == '\0');
    }
    return ndim;
}

static void check_axes(int ndim, const gts_dim *dims, const char *axes)
{
    gts_error err;
    gts_dim order[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM], expected[GTS_MAX_NDIM], norder = -1;
    bool order_ok = gts_dims_parse(axes, order, &norder, NULL) == GTS_OK;
    bool expect_ok = order_ok && reference_layout(ndim, dims, norder, order, expected);
    int rc = gts_layout_from_axes(ndim, dims, axes, layout, fuzz_error(&err));
    FUZZ_CHECK((rc == GTS_OK) == expect_ok);
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    FUZZ_CHECK(memcmp(layout, expected, (size_t)ndim * sizeof *layout) == 0);
}

/* Arbitrary labels and ranks against the brute-force checks. */
static void check_raw(fuzz_input *in)
{
    gts_error err;
    int n = (int)fuzz_range(in, -2, GTS_MAX_NDIM + 2);
    int count = n < 0 ? 0 : n > GTS_MAX_NDIM ? GTS_MAX_NDIM : n;
    gts_dim dims[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    bool small = fuzz_bool(in);
    for (int d = 0; d < count; ++d) {
        dims[d] = small ? (gts_dim)fuzz_range(in, -4, 6) : (gts_dim)fuzz_bits(in, 4);
        layout[d] = small ? (int)fuzz_range(in, -1, count) : (int)fuzz_bits(in, 4);
        strides[d] = fuzz_hostile(in);
        shape[d] = fuzz_range(in, 0, 3);
    }
    int rc = gts_dims_check(n, dims, fuzz_error(&err));
    FUZZ_CHECK((rc == GTS_OK) == dims_valid(n, dims));
    if (rc)
        fuzz_check_error(rc, &err);
    rc = gts_layout_check(n, layout, fuzz_error(&err));
    FUZZ_CHECK((rc == GTS_OK) == (n >= 0 && n <= GTS_MAX_NDIM && is_permutation(n, layout)));
    if (rc)
        fuzz_check_error(rc, &err);
    gts_layout_from_strides(count, shape, strides, fuzz_range(in, 0, 17), layout);
    FUZZ_CHECK(is_permutation(count, layout));
    int contiguous = gts_layout_contiguous_dim(count, layout);
    FUZZ_CHECK(count == 0 ? contiguous == -1 : layout[contiguous] == count - 1);

    /* every preset gives a valid layout for valid dims */
    size_t npresets = gts_preset_count();
    gts_preset preset;
    rc = gts_preset_at(fuzz_range(in, 0, (int64_t)npresets), &preset, fuzz_error(&err));
    if (rc) {
        fuzz_check_error(rc, &err);
        return;
    }
    rc = gts_preset_layout(&preset, n, dims, layout, fuzz_error(&err));
    if (rc == GTS_OK)
        FUZZ_CHECK(dims_valid(n, dims) && is_permutation(n, layout));
    else
        fuzz_check_error(rc, &err);
    gts_preset_release(&preset);
}

/* Registers a preset with fuzzed fields, finds it, removes it. */
static void check_registry(fuzz_input *in, const char *name)
{
    gts_error err;
    gts_preset preset, found;
    int rc = gts_preset_lookup(name, &found, fuzz_error(&err));
    if (rc == GTS_OK) {
        FUZZ_CHECK(strcmp(found.name, name) == 0);
        gts_preset_release(&found);
    } else {
        fuzz_check_error(rc, &err);
    }
    memset(&preset, 0, sizeof preset);
    size_t length = strlen(name);
    for (size_t i = 0; i < GTS_PRESET_NAME_SIZE; ++i) /* may lack a terminator */
        preset.name[i] = i < length ? name[i] : (char)(fuzz_bool(in) ? 0 : 'x');
    preset.alignment = fuzz_hostile(in);
    preset.rule = (gts_layout_rule)fuzz_range(in, -1, 4);
    preset.device = (gts_device)fuzz_range(in, -1, 2);
    for (int a = 0; a < 3; ++a)
        preset.base_layout[a] = (int)fuzz_range(in, -1, 3);
    size_t before = gts_preset_count();
    rc = gts_preset_register(&preset, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(gts_preset_count() == before);
        return;
    }
    FUZZ_CHECK(memchr(preset.name, '\0', sizeof preset.name) != NULL);
    FUZZ_CHECK(gts_preset_count() == before + 1);
    FUZZ_CHECK(gts_preset_lookup(preset.name, &found, &err) == GTS_OK);
    FUZZ_CHECK(found.alignment == preset.alignment && found.alignment >= 1);
    gts_preset_release(&found);
    FUZZ_CHECK(gts_preset_unregister(preset.name, &err) == GTS_OK);
    FUZZ_CHECK(gts_preset_count() == before);
    FUZZ_CHECK(gts_preset_lookup(preset.name, &found, fuzz_error(&err)) == GTS_ENOTFOUND);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    char dims_text[GTS_MAX_NDIM + 8], axes[GTS_MAX_NDIM + 8];
    char name[GTS_PRESET_NAME_SIZE + 8];
    gts_dim dims[GTS_MAX_NDIM], order[GTS_MAX_NDIM];
    fuzz_string(&in, dims_text, sizeof dims_text);
    fuzz_string(&in, axes, sizeof axes);
    check_label(dims_text);
    check_label(axes);
    check_dims_string(axes, order);
    int ndim = check_dims_string(dims_text, dims);
    if (ndim >= 0)
        check_axes(ndim, dims, axes);
    fuzz_string(&in, name, sizeof name);
    check_registry(&in, name);
    check_raw(&in);
    return 0;
}
