/* Dimension labels, layouts and presets. The point users rely on: a layout
 * follows the names of the dims, not their positions. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gtstore/layout.h"
#include "gtstore/preset.h"
#include "gtstore/spec.h"

/* ---- helpers ----------------------------------------------------------- */

/* The labels of `dims` as one string ("IJK0"), through gts_dim_format. */
static void dims_text(int ndim, const gts_dim *dims, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (int d = 0; d < ndim; ++d) {
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[d], label);
        used += (size_t)snprintf(text + used, size - used, "%s", label);
    }
}

/* Parses a label string that the test knows to be valid. */
static int parse_dims(const char *text, gts_dim *dims)
{
    int ndim = -1;
    CHECK_OK(gts_dims_parse(text, dims, &ndim, ERR));
    return ndim;
}

static bool check_layout(int line, int ndim, const int *layout, const int *expected)
{
    bool ok = memcmp(layout, expected, (size_t)ndim * sizeof *layout) == 0;
    if (!ok) {
        fprintf(stderr, "%s:%d: layout (", __FILE__, line);
        for (int d = 0; d < ndim; ++d)
            fprintf(stderr, "%s%d", d ? ", " : "", layout[d]);
        fprintf(stderr, "), expected (");
        for (int d = 0; d < ndim; ++d)
            fprintf(stderr, "%s%d", d ? ", " : "", expected[d]);
        fprintf(stderr, ")\n");
    }
    return check_report(ok, __FILE__, line, "layout");
}
#define CHECK_LAYOUT(ndim, layout, ...) \
    check_layout(__LINE__, ndim, layout, (const int[GTS_MAX_NDIM]){__VA_ARGS__})

/* ---- dims -------------------------------------------------------------- */

static void test_dims_default(void)
{
    const char *expected[] = {"", "I", "IJ", "IJK", "IJK0", "IJK01", "IJK012"};
    for (int ndim = 0; ndim < (int)(sizeof expected / sizeof expected[0]); ++ndim) {
        gts_dim dims[GTS_MAX_NDIM];
        char text[64];
        CHECK_OK(gts_dims_default(ndim, dims, ERR));
        dims_text(ndim, dims, text, sizeof text);
        CHECK_STR_EQ(text, expected[ndim]);
    }
    gts_dim dims[GTS_MAX_NDIM];
    CHECK_OK(gts_dims_default(GTS_MAX_NDIM, dims, ERR));
    CHECK_INT_EQ(dims[GTS_MAX_NDIM - 1], GTS_MAX_NDIM - 4); /* data dims count from 0 */
    CHECK_FAILS(gts_dims_default(-1, dims, ERR), GTS_EINVAL, "ndim");
    CHECK_FAILS(gts_dims_default(GTS_MAX_NDIM + 1, dims, ERR), GTS_EINVAL, "ndim");
}

static void test_dim_parse_format(void)
{
    const struct {
        const char *text;
        gts_dim dim;
    } labels[] = {{"I", GTS_DIM_I}, {"J", GTS_DIM_J}, {"K", GTS_DIM_K},
                  {"0", 0},         {"12", 12},       {"999999", GTS_MAX_DATA_DIM}};
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; ++i) {
        gts_dim dim = -100;
        char text[GTS_DIM_TEXT_SIZE];
        CHECK_OK(gts_dim_parse(labels[i].text, &dim, ERR));
        CHECK_INT_EQ(dim, labels[i].dim);
        gts_dim_format(labels[i].dim, text);
        CHECK_STR_EQ(text, labels[i].text);
    }
    const char *rejected[] = {"", "L", "IJ", "-1", "1a", "i", " 1", "1000000", "99999999999"};
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; ++i) {
        gts_dim dim;
        char quoted[32];
        snprintf(quoted, sizeof quoted, "'%s'", rejected[i]);
        CHECK_FAILS(gts_dim_parse(rejected[i], &dim, ERR), GTS_EINVAL, quoted);
    }
    gts_dim dim;
    CHECK_FAILS(gts_dim_parse(NULL, &dim, ERR), GTS_EINVAL, "(null)");
}

/* An axis named by its label: its position among the dims, whatever the
 * order of the dims; labels that are not there, or no labels, name what is. */
static void test_dims_axis(void)
{
    gts_dim dims[GTS_MAX_NDIM];
    int ndim = parse_dims("K0JI", dims), axis = -1;
    const struct {
        const char *label;
        int axis;
    } found[] = {{"K", 0}, {"0", 1}, {"J", 2}, {"I", 3}};
    for (size_t i = 0; i < sizeof found / sizeof found[0]; ++i) {
        CHECK_OK(gts_dims_axis(ndim, dims, found[i].label, &axis, ERR));
        CHECK_INT_EQ(axis, found[i].axis);
    }
    CHECK_FAILS(gts_dims_axis(ndim, dims, "1", &axis, ERR), GTS_EINVAL,
                "'1' is not one of the dims ('K', '0', 'J', 'I')");
    CHECK_FAILS(gts_dims_axis(2, dims, "J", &axis, ERR), GTS_EINVAL, "'J' is not one");
    CHECK_FAILS(gts_dims_axis(ndim, dims, "X", &axis, ERR), GTS_EINVAL, "a label is 'I'");
    CHECK_FAILS(gts_dims_axis(ndim, dims, "", &axis, ERR), GTS_EINVAL, "'' is not one");
    CHECK_FAILS(gts_dims_axis(ndim, dims, NULL, &axis, ERR), GTS_EINVAL, "(null)");
    CHECK_FAILS(gts_dims_axis(0, dims, "I", &axis, ERR), GTS_EINVAL, "dims ()");
    CHECK_FAILS(gts_dims_axis(-1, dims, "I", &axis, ERR), GTS_EINVAL, "ndim");
    CHECK_INT_EQ(axis, 3); /* failures leave it */
}

static void test_dims_parse_check(void)
{
    gts_dim dims[GTS_MAX_NDIM];
    int ndim = -1;
    CHECK_OK(gts_dims_parse("IJK0", dims, &ndim, ERR));
    CHECK_INT_EQ(ndim, 4);
    CHECK(dims[0] == GTS_DIM_I && dims[1] == GTS_DIM_J && dims[2] == GTS_DIM_K && dims[3] == 0);
    CHECK_OK(gts_dims_parse("", dims, &ndim, ERR));
    CHECK_INT_EQ(ndim, 0);
    CHECK_OK(gts_dims_parse("0KJI1", dims, &ndim, ERR));
    CHECK_INT_EQ(ndim, 5);
    CHECK(dims[0] == 0 && dims[1] == GTS_DIM_K && dims[4] == 1);

    CHECK_FAILS(gts_dims_parse("IJI", dims, &ndim, ERR), GTS_EINVAL, "'I' appears twice");
    CHECK_FAILS(gts_dims_parse("IJ00", dims, &ndim, ERR), GTS_EINVAL, "'0' appears twice");
    CHECK_FAILS(gts_dims_parse("IJL", dims, &ndim, ERR), GTS_EINVAL, "'L'");
    CHECK_FAILS(gts_dims_parse("IJ-", dims, &ndim, ERR), GTS_EINVAL, "'-'");
    char too_many[GTS_MAX_NDIM + 2];
    memset(too_many, '0', sizeof too_many - 1);
    too_many[sizeof too_many - 1] = '\0';
    CHECK_FAILS(gts_dims_parse(too_many, dims, &ndim, ERR), GTS_EINVAL, "more than 64");

    const gts_dim valid[] = {GTS_DIM_K, 0, GTS_DIM_I, 5, GTS_MAX_DATA_DIM};
    CHECK_OK(gts_dims_check(5, valid, ERR));
    CHECK_OK(gts_dims_check(0, valid, ERR));
    const gts_dim bad_label[] = {GTS_DIM_I, -4};
    CHECK_FAILS(gts_dims_check(2, bad_label, ERR), GTS_EINVAL, "-4");
    const gts_dim too_big[] = {GTS_MAX_DATA_DIM + 1};
    CHECK_FAILS(gts_dims_check(1, too_big, ERR), GTS_EINVAL, "1000000");
    const gts_dim repeated[] = {GTS_DIM_J, 3, GTS_DIM_J};
    CHECK_FAILS(gts_dims_check(3, repeated, ERR), GTS_EINVAL, "'J' appears twice");
    CHECK_FAILS(gts_dims_check(GTS_MAX_NDIM + 1, valid, ERR), GTS_EINVAL, "ndim");

    /* the inverse of parse: one character per label */
    char text[GTS_MAX_NDIM + 1];
    CHECK_OK(gts_dims_parse("0KJI1", dims, &ndim, ERR));
    if (CHECK_OK(gts_dims_format(ndim, dims, text, ERR)))
        CHECK(strcmp(text, "0KJI1") == 0);
    if (CHECK_OK(gts_dims_format(0, dims, text, ERR)))
        CHECK(text[0] == '\0');
    const gts_dim two_characters[] = {GTS_DIM_I, 10};
    CHECK_FAILS(gts_dims_format(2, two_characters, text, ERR), GTS_EINVAL,
                "label '10' (position 1) has more than one character");
    CHECK_FAILS(gts_dims_format(2, bad_label, text, ERR), GTS_EINVAL, "-4");
    CHECK_FAILS(gts_dims_format(GTS_MAX_NDIM + 1, valid, text, ERR), GTS_EINVAL, "ndim");
}

/* ---- layouts ----------------------------------------------------------- */

static void test_layout_check_c_f(void)
{
    CHECK_OK(gts_layout_check(3, (const int[]){2, 0, 1}, ERR));
    CHECK_OK(gts_layout_check(0, NULL, ERR));
    CHECK_FAILS(gts_layout_check(3, (const int[]){0, 0, 1}, ERR), GTS_EINVAL, "layout");
    CHECK_FAILS(gts_layout_check(3, (const int[]){0, 1, 3}, ERR), GTS_EINVAL, "entry 3");
    CHECK_FAILS(gts_layout_check(3, (const int[]){-1, 0, 1}, ERR), GTS_EINVAL, "entry -1");
    CHECK_FAILS(gts_layout_check(-2, NULL, ERR), GTS_EINVAL, "ndim");

    int layout[GTS_MAX_NDIM];
    gts_layout_c(4, layout);
    CHECK_LAYOUT(4, layout, 0, 1, 2, 3);
    gts_layout_f(4, layout);
    CHECK_LAYOUT(4, layout, 3, 2, 1, 0);
    layout[0] = 42;
    gts_layout_c(0, layout); /* writes nothing */
    gts_layout_f(0, layout);
    CHECK_INT_EQ(layout[0], 42);
}

typedef struct order_case {
    const char *dims, *order;
    int expected[6];
} order_case;

/* Both entry points, gts_layout_from_order (labels) and
 * gts_layout_from_axes (text), must agree with the table. */
static void check_order_case(const order_case *c)
{
    gts_dim dims[GTS_MAX_NDIM], order[GTS_MAX_NDIM];
    int ndim = parse_dims(c->dims, dims), norder = parse_dims(c->order, order);
    int layout[GTS_MAX_NDIM];
    CHECK_OK(gts_layout_from_axes(ndim, dims, c->order, layout, ERR));
    if (!check_layout(__LINE__, ndim, layout, c->expected))
        fprintf(stderr, "  dims \"%s\", order \"%s\"\n", c->dims, c->order);
    memset(layout, -1, sizeof layout);
    CHECK_OK(gts_layout_from_order(ndim, dims, norder, order, layout, ERR));
    check_layout(__LINE__, ndim, layout, c->expected);
}

static void test_layout_from_order(void)
{
    const order_case cases[] = {
        /* order "IJK": K contiguous, whatever its position in dims */
        {"IJK", "IJK", {0, 1, 2}},
        {"KJI", "IJK", {2, 1, 0}},
        {"JKI", "IJK", {1, 2, 0}},
        /* data dims outermost, "0" outermost of all */
        {"IJK0", "KJI", {3, 2, 1, 0}},
        {"0KJI1", "IJK", {0, 4, 3, 2, 1}},
        {"10IJK", "IJK", {1, 0, 2, 3, 4}},
        {"I0J", "KJI", {2, 0, 1}},
        /* data dims named in the order go where the order puts them */
        {"IJK0", "0IJK", {1, 2, 3, 0}},
        {"IJK0", "IJ0K", {0, 1, 3, 2}},
        /* labels of the order missing from dims are skipped */
        {"IJ", "IJK", {0, 1}},
        {"IJ", "KJI", {1, 0}},
        {"K", "IJK", {0}},
        {"0", "IJK", {0}},
        {"", "IJK", {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        check_order_case(&cases[i]);
}

static void test_layout_from_order_errors(void)
{
    gts_dim dims[GTS_MAX_NDIM], order[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM];
    int ndim = parse_dims("IJK", dims), norder = parse_dims("IJ", order);
    /* a cartesian dim the order does not place */
    CHECK_FAILS(gts_layout_from_order(ndim, dims, norder, order, layout, ERR), GTS_EINVAL,
                "'K'");
    CHECK_FAILS(gts_layout_from_axes(ndim, dims, "IJ", layout, ERR), GTS_EINVAL, "'K'");
    CHECK_FAILS(gts_layout_from_axes(ndim, dims, "IJL", layout, ERR), GTS_EINVAL, "'IJL'");
    /* the parameter named once, at the start: the reasons quoted without theirs */
    CHECK_FAILS(gts_layout_from_axes(ndim, dims, "KXI", layout, ERR), GTS_EINVAL,
                "layout: 'KXI' is not an axis order such as 'KJI' (invalid label 'X' in 'KXI'");
    CHECK_FAILS(gts_layout_from_axes(ndim, dims, "KJ", layout, ERR), GTS_EINVAL,
                "layout: 'KJ' does not fit the dims (the axis order does not place dimension "
                "'I')");
    CHECK_FAILS(gts_layout_from_axes(ndim, dims, "IJKI", layout, ERR), GTS_EINVAL, "'IJKI'");
    CHECK_FAILS(gts_layout_from_axes(ndim, dims, NULL, layout, ERR), GTS_EINVAL, "NULL");
    const gts_dim repeated_order[] = {GTS_DIM_I, GTS_DIM_I, GTS_DIM_K};
    CHECK_FAILS(gts_layout_from_order(ndim, dims, 3, repeated_order, layout, ERR), GTS_EINVAL,
                "order");
    const gts_dim repeated_dims[] = {GTS_DIM_I, GTS_DIM_I};
    CHECK_FAILS(gts_layout_from_order(2, repeated_dims, norder, order, layout, ERR), GTS_EINVAL,
                "'I' appears twice");
}

static void test_layout_from_strides(void)
{
    const struct {
        int ndim;
        int64_t shape[4], strides[4];
        int expected[4];
    } cases[] = {
        {3, {2, 3, 4}, {8, 80, 800}, {2, 1, 0}},
        {3, {2, 3, 4}, {800, 80, 8}, {0, 1, 2}},
        {2, {2, 3}, {8, 8}, {0, 1}},                 /* ties keep the index order */
        {3, {2, 3, 4}, {-800, 8, 80}, {0, 2, 1}},    /* by magnitude */
        {3, {2, 3, 4}, {-8, 16, -24}, {2, 1, 0}},
        {2, {2, 3}, {0, 8}, {1, 0}},
        {2, {2, 3}, {INT64_MIN, 8}, {0, 1}},         /* |INT64_MIN| does not overflow */
        {4, {2, 3, 4, 5}, {96, 8, 96, 24}, {0, 3, 1, 2}},
        {1, {2}, {8}, {0}},
        /* contiguous (extent 1 not looked at): C, else Fortran order */
        {2, {5, 1}, {8, 8}, {0, 1}},
        {2, {1, 5}, {8, 8}, {0, 1}},
        {3, {1, 4, 1}, {8, 8, 320}, {0, 1, 2}},
        {3, {3, 1, 4}, {8, 96, 24}, {2, 1, 0}},
        {3, {4, 3, 1}, {8, 32, 8}, {2, 1, 0}},
        {2, {1, 1}, {8, 8}, {0, 1}},
        {2, {0, 5}, {8, 40}, {0, 1}},                /* no elements: contiguous */
        /* padded: extent 1 says nothing and keeps its place in index order */
        {3, {3, 1, 4}, {16, 96, 48}, {1, 2, 0}},
        {3, {4, 3, 1}, {8, 40, 8}, {1, 0, 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int layout[4];
        gts_layout_from_strides(cases[i].ndim, cases[i].shape, cases[i].strides, 8, layout);
        check_layout(__LINE__, cases[i].ndim, layout, cases[i].expected);
    }
}

static void test_contiguous_dim(void)
{
    CHECK_INT_EQ(gts_layout_contiguous_dim(3, (const int[]){2, 0, 1}), 0);
    CHECK_INT_EQ(gts_layout_contiguous_dim(3, (const int[]){0, 1, 2}), 2);
    CHECK_INT_EQ(gts_layout_contiguous_dim(4, (const int[]){1, 3, 0, 2}), 1);
    CHECK_INT_EQ(gts_layout_contiguous_dim(1, (const int[]){0}), 0);
    CHECK_INT_EQ(gts_layout_contiguous_dim(0, NULL), -1);
}

/* ---- built-in presets -------------------------------------------------- */

#define NBUILTINS 15

typedef struct builtin_row {
    const char *name;
    int64_t alignment;
    gts_layout_rule rule;
    int base[3];
    gts_device device;
} builtin_row;

/* DESIGN.md section 3, binding. */
static const builtin_row builtins[NBUILTINS] = {
    {"numpy", 1, GTS_LAYOUT_NAMED, {0, 1, 2}, GTS_DEVICE_CPU},
    {"debug", 1, GTS_LAYOUT_NAMED, {0, 1, 2}, GTS_DEVICE_CPU},
    {"gt:cpu_kfirst", 1, GTS_LAYOUT_NAMED, {0, 1, 2}, GTS_DEVICE_CPU},
    {"gt:cpu_ifirst", 1, GTS_LAYOUT_NAMED, {2, 1, 0}, GTS_DEVICE_CPU},
    {"gt:gpu", 32, GTS_LAYOUT_NAMED, {2, 1, 0}, GTS_DEVICE_GPU},
    {"dace:cpu", 1, GTS_LAYOUT_NAMED, {1, 2, 0}, GTS_DEVICE_CPU},
    {"dace:cpu_kfirst", 1, GTS_LAYOUT_NAMED, {0, 1, 2}, GTS_DEVICE_CPU},
    {"dace:cpu_KJI", 1, GTS_LAYOUT_NAMED, {2, 1, 0}, GTS_DEVICE_CPU},
    {"dace:gpu", 1, GTS_LAYOUT_NAMED, {2, 1, 0}, GTS_DEVICE_GPU},
    {"dace:gpu_IJK", 1, GTS_LAYOUT_NAMED, {0, 1, 2}, GTS_DEVICE_GPU},
    {"C", 1, GTS_LAYOUT_C, {0, 0, 0}, GTS_DEVICE_CPU},
    {"F", 1, GTS_LAYOUT_F, {0, 0, 0}, GTS_DEVICE_CPU},
    {"gtx86", 1, GTS_LAYOUT_NAMED, {0, 1, 2}, GTS_DEVICE_CPU},
    {"gtmc", 8, GTS_LAYOUT_NAMED, {2, 0, 1}, GTS_DEVICE_CPU},
    {"gtcuda", 32, GTS_LAYOUT_NAMED, {2, 1, 0}, GTS_DEVICE_GPU},
};

static bool preset_matches(const gts_preset *p, const builtin_row *row)
{
    bool ok = strcmp(p->name, row->name) == 0 && p->alignment == row->alignment &&
              p->rule == row->rule && p->device == row->device;
    if (row->rule == GTS_LAYOUT_NAMED)
        ok = ok && memcmp(p->base_layout, row->base, sizeof row->base) == 0;
    return ok;
}

static void test_builtin_presets(void)
{
    for (size_t i = 0; i < NBUILTINS; ++i) {
        gts_preset p;
        memset(&p, 0, sizeof p);
        if (CHECK_OK(gts_preset_lookup(builtins[i].name, &p, ERR)) &&
            !CHECK(preset_matches(&p, &builtins[i])))
            fprintf(stderr, "  preset '%s' differs from DESIGN.md\n", builtins[i].name);
    }
    /* the listing starts with exactly the built-ins */
    CHECK(gts_preset_count() >= NBUILTINS);
    for (size_t i = 0; i < NBUILTINS; ++i) {
        gts_preset p;
        CHECK_OK(gts_preset_at(i, &p, ERR));
        CHECK(preset_matches(&p, &builtins[i]));
    }
    gts_preset p;
    CHECK_FAILS(gts_preset_lookup("no-such-preset", &p, ERR), GTS_ENOTFOUND, "'no-such-preset'");
    CHECK_FAILS(gts_preset_lookup("Numpy", &p, ERR), GTS_ENOTFOUND, "'Numpy'"); /* exact names */
    CHECK_FAILS(gts_preset_lookup(NULL, &p, ERR), GTS_EINVAL, "NULL");
    CHECK_FAILS(gts_preset_at(gts_preset_count(), &p, ERR), GTS_EINVAL, "index");
}

typedef struct preset_layout_case {
    const char *preset, *dims;
    int expected[6];
} preset_layout_case;

static void check_preset_layout(const preset_layout_case *c)
{
    gts_preset p;
    gts_dim dims[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM], ndim = parse_dims(c->dims, dims);
    if (!CHECK_OK(gts_preset_lookup(c->preset, &p, ERR)) ||
        !CHECK_OK(gts_preset_layout(&p, ndim, dims, layout, ERR)))
        return;
    if (!check_layout(__LINE__, ndim, layout, c->expected))
        fprintf(stderr, "  preset '%s', dims \"%s\"\n", c->preset, c->dims);
}

static void test_preset_layout(void)
{
    const preset_layout_case cases[] = {
        {"gt:cpu_kfirst", "IJK", {0, 1, 2}},
        {"gt:cpu_kfirst", "KJI", {2, 1, 0}}, /* K stays contiguous */
        {"gt:cpu_ifirst", "IJK", {2, 1, 0}},
        {"gt:cpu_ifirst", "KJI", {0, 1, 2}},
        {"gt:cpu_ifirst", "0KJI1", {0, 2, 3, 4, 1}},
        {"dace:cpu", "IJK", {1, 2, 0}},      /* J contiguous, then I, then K */
        {"dace:cpu", "KIJ", {0, 1, 2}},
        {"gtmc", "IJK", {2, 0, 1}},
        {"gtmc", "IJK0", {3, 1, 2, 0}},
        {"gt:gpu", "IJK0", {3, 2, 1, 0}},
        {"numpy", "IJK0", {1, 2, 3, 0}},
        {"numpy", "IJ", {0, 1}},
        {"dace:gpu_IJK", "JK", {0, 1}},
        /* positional presets ignore the names */
        {"C", "KJI", {0, 1, 2}},
        {"C", "IJK0", {0, 1, 2, 3}},
        {"F", "KJI", {2, 1, 0}},
        {"F", "IJ", {1, 0}},
        {"F", "", {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        check_preset_layout(&cases[i]);

    gts_preset p;
    int layout[3];
    const gts_dim repeated[] = {GTS_DIM_I, GTS_DIM_I};
    CHECK_OK(gts_preset_lookup("numpy", &p, ERR));
    CHECK_FAILS(gts_preset_layout(&p, 2, repeated, layout, ERR), GTS_EINVAL, "appears twice");
    CHECK_OK(gts_preset_lookup("C", &p, ERR));
    CHECK_FAILS(gts_preset_layout(&p, 2, repeated, layout, ERR), GTS_EINVAL, "appears twice");
}

/* ---- user presets ------------------------------------------------------ */

/* What a layout function saw, and how often its context was released. */
typedef struct fn_ctx {
    int calls, releases;
    int last_ndim;
    int result; /* 0, or an error to return */
    bool silent; /* return `result` without a message */
    bool bad_layout; /* return a layout that is not a permutation */
} fn_ctx;

/* Fortran order, whatever the names. */
static int fortran_fn(int ndim, const gts_dim *dims, int *layout, void *ctx, gts_error *err)
{
    (void)dims;
    fn_ctx *c = ctx;
    ++c->calls;
    c->last_ndim = ndim;
    if (c->result)
        return c->silent ? c->result : gts_error_set(err, c->result, "fortran_fn: asked to fail");
    gts_layout_f(ndim, layout);
    if (c->bad_layout && ndim > 1)
        layout[0] = layout[1];
    return GTS_OK;
}

static void release_fn_ctx(void *ctx)
{
    ++((fn_ctx *)ctx)->releases;
}

static gts_preset named_preset(const char *name, int64_t alignment, int i, int j, int k)
{
    gts_preset p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.alignment = alignment;
    p.rule = GTS_LAYOUT_NAMED;
    p.base_layout[0] = i;
    p.base_layout[1] = j;
    p.base_layout[2] = k;
    p.device = GTS_DEVICE_CPU;
    return p;
}

static gts_preset function_preset(const char *name, fn_ctx *ctx)
{
    gts_preset p = named_preset(name, 1, 0, 1, 2);
    p.rule = GTS_LAYOUT_FUNCTION;
    p.layout_fn = fortran_fn;
    p.layout_ctx = ctx;
    p.release_ctx = release_fn_ctx;
    return p;
}

/* The layout the registered preset `name` gives to `dims`. */
static int registered_layout(const char *name, const char *dims_text_, int *layout)
{
    gts_preset p;
    gts_dim dims[GTS_MAX_NDIM];
    int ndim = parse_dims(dims_text_, dims);
    int rc = gts_preset_lookup(name, &p, ERR);
    if (!rc)
        rc = gts_preset_layout(&p, ndim, dims, layout, ERR);
    gts_preset_release(&p);
    return rc;
}

static void test_register_named(void)
{
    size_t count = gts_preset_count();
    /* base ranks I 0, J 2, K 1: J contiguous, then K */
    gts_preset mine = named_preset("test:jfirst", 4, 0, 2, 1), got;
    CHECK_OK(gts_preset_register(&mine, ERR));
    CHECK_INT_EQ(gts_preset_count(), count + 1);
    CHECK_OK(gts_preset_lookup("test:jfirst", &got, ERR));
    CHECK_STR_EQ(got.name, "test:jfirst");
    CHECK_INT_EQ(got.alignment, 4);
    gts_preset_release(&got);
    CHECK_OK(gts_preset_at(count, &got, ERR)); /* user presets come after the built-ins */
    CHECK_STR_EQ(got.name, "test:jfirst");
    gts_preset_release(&got);
    gts_preset_release(&got); /* again: nothing to do */
    int layout[GTS_MAX_NDIM];
    CHECK_OK(registered_layout("test:jfirst", "IJK", layout));
    CHECK_LAYOUT(3, layout, 0, 2, 1);
    CHECK_OK(registered_layout("test:jfirst", "KJI0", layout));
    CHECK_LAYOUT(4, layout, 2, 3, 1, 0);

    /* replacing a user preset keeps its place and count */
    gts_preset replacement = named_preset("test:jfirst", 16, 2, 1, 0);
    CHECK_OK(gts_preset_register(&replacement, ERR));
    CHECK_INT_EQ(gts_preset_count(), count + 1);
    CHECK_OK(gts_preset_lookup("test:jfirst", &got, ERR));
    CHECK_INT_EQ(got.alignment, 16);
    gts_preset_release(&got);
    CHECK_OK(registered_layout("test:jfirst", "IJK", layout));
    CHECK_LAYOUT(3, layout, 2, 1, 0);

    CHECK_OK(gts_preset_unregister("test:jfirst", ERR));
    CHECK_INT_EQ(gts_preset_count(), count);
    CHECK_FAILS(gts_preset_lookup("test:jfirst", &got, ERR), GTS_ENOTFOUND, "'test:jfirst'");
    CHECK_FAILS(gts_preset_unregister("test:jfirst", ERR), GTS_ENOTFOUND, "'test:jfirst'");
}

static void test_register_function(void)
{
    size_t count = gts_preset_count();
    fn_ctx first = {0}, second = {0};
    gts_preset p = function_preset("test:fortran", &first);
    CHECK_OK(gts_preset_register(&p, ERR));
    int layout[GTS_MAX_NDIM];
    CHECK_OK(registered_layout("test:fortran", "IJK0", layout));
    CHECK_LAYOUT(4, layout, 3, 2, 1, 0);
    CHECK_INT_EQ(first.calls, 1);
    CHECK_INT_EQ(first.last_ndim, 4);
    CHECK_INT_EQ(first.releases, 0);

    /* the function's errors and invalid layouts come back to the caller */
    first.result = GTS_ENOTFOUND;
    CHECK_FAILS(registered_layout("test:fortran", "IJK", layout), GTS_ENOTFOUND, "asked to fail");
    first.silent = true; /* no message: the registry says who failed */
    CHECK_FAILS(registered_layout("test:fortran", "IJK", layout), GTS_ENOTFOUND,
                "layout: the layout function of preset 'test:fortran' failed (GTS_ENOTFOUND)");
    first.result = 7; /* not a status */
    CHECK_FAILS(registered_layout("test:fortran", "IJK", layout), GTS_EINVAL, "'test:fortran'");
    first.silent = false;
    first.result = 0;
    first.bad_layout = true;
    CHECK_FAILS(registered_layout("test:fortran", "IJK", layout), GTS_EINVAL, "permutation");
    first.bad_layout = false;

    /* replacing releases the old context once, not the new one */
    gts_preset q = function_preset("test:fortran", &second);
    CHECK_OK(gts_preset_register(&q, ERR));
    CHECK_INT_EQ(first.releases, 1);
    CHECK_INT_EQ(second.releases, 0);
    CHECK_OK(registered_layout("test:fortran", "IJ", layout));
    CHECK_INT_EQ(second.calls, 1);
    CHECK_INT_EQ(first.calls, 5);

    /* unregistering releases the current context once */
    CHECK_OK(gts_preset_unregister("test:fortran", ERR));
    CHECK_INT_EQ(first.releases, 1);
    CHECK_INT_EQ(second.releases, 1);
    CHECK_INT_EQ(gts_preset_count(), count);
}

/* A looked-up preset stays usable while it is unregistered or replaced (by
 * another thread, or by user code the caller runs: issue 8 found a Python
 * __index__ that unregistered the preset and freed its callable mid-call);
 * its context is released when the last copy is. */
static void test_preset_in_use(void)
{
    fn_ctx first = {0}, second = {0};
    gts_preset p = function_preset("test:in-use", &first), a, b;
    CHECK_OK(gts_preset_register(&p, ERR));
    CHECK_OK(gts_preset_lookup("test:in-use", &a, ERR));
    CHECK_OK(gts_preset_at(gts_preset_count() - 1, &b, ERR));
    CHECK_OK(gts_preset_unregister("test:in-use", ERR));
    CHECK_INT_EQ(first.releases, 0); /* two copies in use */
    int layout[GTS_MAX_NDIM];
    const gts_dim ijk[3] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K};
    CHECK_OK(gts_preset_layout(&a, 3, ijk, layout, ERR));
    CHECK_LAYOUT(3, layout, 2, 1, 0);
    gts_preset_release(&a);
    CHECK_INT_EQ(first.releases, 0);
    gts_preset_release(&b);
    CHECK_INT_EQ(first.releases, 1);

    /* replacing: the old context lives as long as its copy */
    p = function_preset("test:in-use", &first);
    CHECK_OK(gts_preset_register(&p, ERR));
    CHECK_OK(gts_preset_lookup("test:in-use", &a, ERR));
    gts_preset q = function_preset("test:in-use", &second);
    CHECK_OK(gts_preset_register(&q, ERR));
    CHECK_INT_EQ(first.releases, 1);
    CHECK_OK(gts_preset_layout(&a, 3, ijk, layout, ERR));
    CHECK_INT_EQ(first.calls, 2);
    gts_preset_release(&a);
    CHECK_INT_EQ(first.releases, 2);
    CHECK_OK(gts_preset_unregister("test:in-use", ERR));
    CHECK_INT_EQ(second.releases, 1);
    /* built-ins hold nothing */
    CHECK_OK(gts_preset_lookup("numpy", &a, ERR));
    CHECK(a.owner == NULL);
    gts_preset_release(&a);
}

static void test_register_refused(void)
{
    size_t count = gts_preset_count();
    fn_ctx ctx = {0};
    /* built-in names are taken; the caller keeps its context */
    gts_preset numpy = function_preset("numpy", &ctx);
    CHECK_FAILS(gts_preset_register(&numpy, ERR), GTS_EEXIST, "'numpy'");
    CHECK_INT_EQ(ctx.releases, 0);
    CHECK_FAILS(gts_preset_unregister("numpy", ERR), GTS_EINVAL, "'numpy'");
    gts_preset still;
    CHECK_OK(gts_preset_lookup("numpy", &still, ERR));
    CHECK_INT_EQ(still.rule, GTS_LAYOUT_NAMED);

    gts_preset p = named_preset("test:bad", 0, 0, 1, 2);
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "alignment");
    p = named_preset("test:bad", -8, 0, 1, 2);
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "alignment");
    p = named_preset("test:bad", 1, 0, 0, 2);
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "layout");
    p = named_preset("test:bad", 1, 0, 1, 3);
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "layout");
    p = named_preset("", 1, 0, 1, 2);
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "name");
    p = named_preset("test:bad", 1, 0, 1, 2);
    memset(p.name, 'x', sizeof p.name); /* no terminating NUL */
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "name");
    p = function_preset("test:bad", &ctx);
    p.layout_fn = NULL;
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "layout_fn");
    p = named_preset("test:bad", 1, 0, 1, 2);
    p.device = (gts_device)7;
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "device");
    p = named_preset("test:bad", 1, 0, 1, 2);
    p.rule = (gts_layout_rule)9;
    CHECK_FAILS(gts_preset_register(&p, ERR), GTS_EINVAL, "rule");

    CHECK_INT_EQ(ctx.releases, 0);
    CHECK_INT_EQ(gts_preset_count(), count);
    CHECK_FAILS(gts_preset_lookup("test:bad", &p, ERR), GTS_ENOTFOUND, "test:bad");
    CHECK_FAILS(gts_preset_unregister("no-such-preset", ERR), GTS_ENOTFOUND, "'no-such-preset'");
}

/* User presets are listed after the built-ins in registration order, and
 * removing one closes the gap. */
static void test_listing(void)
{
    size_t count = gts_preset_count();
    const char *names[] = {"test:a", "test:b", "test:c"};
    for (int i = 0; i < 3; ++i) {
        gts_preset p = named_preset(names[i], 1, 0, 1, 2);
        CHECK_OK(gts_preset_register(&p, ERR));
    }
    CHECK_INT_EQ(gts_preset_count(), count + 3);
    CHECK_OK(gts_preset_unregister("test:a", ERR));
    gts_preset p;
    CHECK_OK(gts_preset_at(count, &p, ERR));
    CHECK_STR_EQ(p.name, "test:b");
    gts_preset_release(&p);
    CHECK_OK(gts_preset_at(count + 1, &p, ERR));
    CHECK_STR_EQ(p.name, "test:c");
    gts_preset_release(&p);
    CHECK_FAILS(gts_preset_at(count + 2, &p, ERR), GTS_EINVAL, "index");
    CHECK_OK(gts_preset_unregister("test:c", ERR));
    CHECK_OK(gts_preset_unregister("test:b", ERR));
    CHECK_INT_EQ(gts_preset_count(), count);
}

/* Axis strings: "KJI" as ranks of I, J, K; "C" and "F" as positional
 * rules; anything else refused naming the text, the preset unchanged. */
static void test_axis_text(void)
{
    int ranks[3] = {-1, -1, -1};
    if (CHECK_OK(gts_layout_ijk_ranks("KJI", ranks, ERR)))
        CHECK(ranks[0] == 2 && ranks[1] == 1 && ranks[2] == 0);
    if (CHECK_OK(gts_layout_ijk_ranks("JKI", ranks, ERR)))
        CHECK(ranks[0] == 2 && ranks[1] == 0 && ranks[2] == 1);
    const char *bad[] = {"IJ", "IJK0", "IIJ", "IJ0", "", "ijk", "KJI "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
        CHECK_FAILS(gts_layout_ijk_ranks(bad[i], ranks, ERR), GTS_EINVAL,
                    "is not an order of the axes I, J and K such as 'KJI'");
    CHECK_FAILS(gts_layout_ijk_ranks(NULL, ranks, ERR), GTS_EINVAL, "'(null)'");
    gts_preset p = {0};
    if (CHECK_OK(gts_preset_layout_text(&p, "F", ERR)))
        CHECK(p.rule == GTS_LAYOUT_F);
    if (CHECK_OK(gts_preset_layout_text(&p, "C", ERR)))
        CHECK(p.rule == GTS_LAYOUT_C);
    if (CHECK_OK(gts_preset_layout_text(&p, "IKJ", ERR)))
        CHECK(p.rule == GTS_LAYOUT_NAMED && p.base_layout[0] == 0 && p.base_layout[1] == 2 &&
              p.base_layout[2] == 1);
    CHECK_FAILS(gts_preset_layout_text(&p, "CF", ERR), GTS_EINVAL,
                "layout: 'CF' is not 'C', 'F' or an order of the axes I, J and K such as 'KJI'");
    CHECK(p.rule == GTS_LAYOUT_NAMED && p.base_layout[1] == 2);
}

/* IJK-ordered parameters: 3 entries in I, J, K order, of which a field of
 * fewer cartesian dims takes its own, in its dims' order. */
static void test_ijk_entries(void)
{
    gts_dim dims[GTS_MAX_NDIM];
    int n = parse_dims("JI", dims);
    CHECK(gts_dims_take_ijk(n, dims));
    CHECK(gts_dims_take_ijk(parse_dims("K", dims), dims));
    CHECK(!gts_dims_take_ijk(0, dims)); /* 0-d: no place for any of the entries */
    CHECK(!gts_dims_take_ijk(parse_dims("IJK", dims), dims)); /* 3 dims: positional */
    CHECK(!gts_dims_take_ijk(parse_dims("I0", dims), dims));  /* a data dim: no IJK order */
    CHECK(!gts_dims_take_ijk(parse_dims("0", dims), dims));

    n = parse_dims("JI", dims);
    const int64_t shape[3] = {3, 4, 5};
    int64_t out[3] = {-1, -1, -1};
    if (CHECK_OK(gts_ijk_select(n, dims, sizeof *out, shape, out, ERR)))
        CHECK(out[0] == 4 && out[1] == 3 && out[2] == -1);
    n = parse_dims("K", dims);
    if (CHECK_OK(gts_ijk_select(n, dims, sizeof *out, shape, out, ERR)))
        CHECK(out[0] == 5);
    n = parse_dims("I0", dims);
    CHECK_FAILS(gts_ijk_select(n, dims, sizeof *out, shape, out, ERR), GTS_EINVAL,
                "1 or 2 dims, each I, J or K (got a data dimension among the 2)");

    const int ijk[3] = {2, 1, 0}, bad[3] = {2, 1, 1};
    int layout[2] = {-1, -1};
    n = parse_dims("IJ", dims);
    if (CHECK_OK(gts_layout_select_ijk(n, dims, ijk, layout, ERR)))
        CHECK(layout[0] == 1 && layout[1] == 0);
    n = parse_dims("JI", dims);
    if (CHECK_OK(gts_layout_select_ijk(n, dims, ijk, layout, ERR)))
        CHECK(layout[0] == 0 && layout[1] == 1);
    n = parse_dims("KI", dims); /* ranks 0 and 2: renumbered 0 and 1 */
    if (CHECK_OK(gts_layout_select_ijk(n, dims, ijk, layout, ERR)))
        CHECK(layout[0] == 0 && layout[1] == 1);
    CHECK_FAILS(gts_layout_select_ijk(n, dims, bad, layout, ERR), GTS_EINVAL, "permutation");
    CHECK_FAILS(gts_ijk_select(0, dims, sizeof *out, shape, out, ERR), GTS_EINVAL,
                "fields of 1 or 2 dims");
}

/* A halo or aligned index in I, J, K order: every entry checked, the
 * field's and the ones it does not use alike, the position named. */
static void test_ijk_entries_checked(void)
{
    gts_dim dims[GTS_MAX_NDIM];
    int n = parse_dims("JI", dims);
    const gts_halo halo[3] = {{1, 2}, {3, 4}, {0, 0}};
    gts_halo halo_out[2];
    if (CHECK_OK(gts_halo_select_ijk(n, dims, halo, halo_out, ERR)))
        CHECK(halo_out[0].lower == 3 && halo_out[0].upper == 4 && halo_out[1].lower == 1 &&
              halo_out[1].upper == 2);
    const gts_halo unused_negative[3] = {{1, 1}, {1, 1}, {0, -1}};
    CHECK_FAILS(gts_halo_select_ijk(n, dims, unused_negative, halo_out, ERR), GTS_EINVAL,
                "halo: negative entry (0, -1) at position 2 of the I, J, K entries");
    const gts_halo used_negative[3] = {{-2, 1}, {1, 1}, {0, 0}};
    CHECK_FAILS(gts_halo_select_ijk(n, dims, used_negative, halo_out, ERR), GTS_EINVAL,
                "halo: negative entry (-2, 1) at position 0 of the I, J, K entries");
    CHECK_FAILS(gts_halo_select_ijk(n, dims, NULL, halo_out, ERR), GTS_EINVAL, "halo: NULL");

    n = parse_dims("K", dims);
    const int64_t index[3] = {-1, 0, 5}, good[3] = {3, 3, 2};
    int64_t index_out[1] = {-7};
    CHECK_FAILS(gts_index_select_ijk(n, dims, "aligned_index", index, index_out, ERR), GTS_EINVAL,
                "aligned_index: negative entry -1 at position 0 of the I, J, K entries");
    CHECK(index_out[0] == -7); /* nothing written on failure */
    if (CHECK_OK(gts_index_select_ijk(n, dims, "aligned_index", good, index_out, ERR)))
        CHECK(index_out[0] == 2);
    CHECK_FAILS(gts_index_select_ijk(n, dims, NULL, NULL, index_out, ERR), GTS_EINVAL,
                "index: NULL");
    CHECK_FAILS(gts_index_select_ijk(0, dims, "aligned_index", good, index_out, ERR), GTS_EINVAL,
                "fields of 1 or 2 dims");
}

/* Bad input to the IJK entries: an error naming it, never a crash, never
 * one entry picked twice (a repeated label) or a layout that is no
 * permutation. */
static void test_ijk_entries_bad_input(void)
{
    const gts_dim twice[2] = {GTS_DIM_I, GTS_DIM_I};
    const int64_t shape[3] = {3, 4, 5};
    const int ijk[3] = {2, 1, 0};
    int64_t out[3];
    int layout[2];
    CHECK(!gts_dims_take_ijk(2, twice));
    CHECK(!gts_dims_take_ijk(1, NULL));
    CHECK(!gts_dims_take_ijk(-1, twice));
    CHECK_FAILS(gts_ijk_select(2, twice, sizeof *out, shape, out, ERR), GTS_EINVAL,
                "'I' appears twice");
    CHECK_FAILS(gts_layout_select_ijk(2, twice, ijk, layout, ERR), GTS_EINVAL, "'I' appears twice");
    CHECK_FAILS(gts_ijk_select(1, NULL, sizeof *out, shape, out, ERR), GTS_EINVAL, "dims: NULL");
    CHECK_FAILS(gts_ijk_select(-1, twice, sizeof *out, shape, out, ERR), GTS_EINVAL, "ndim: -1");
    CHECK_FAILS(gts_ijk_select(1, twice, sizeof *out, NULL, out, ERR), GTS_EINVAL, "ijk: NULL");
    CHECK_FAILS(gts_ijk_select(1, twice, sizeof *out, shape, NULL, ERR), GTS_EINVAL, "out: NULL");
    CHECK_FAILS(gts_layout_select_ijk(1, twice, NULL, layout, ERR), GTS_EINVAL, "NULL IJK ranks");
    CHECK_FAILS(gts_layout_select_ijk(1, twice, ijk, NULL, ERR), GTS_EINVAL, "NULL output");
    CHECK_FAILS(gts_layout_select_ijk(1, NULL, ijk, layout, ERR), GTS_EINVAL, "dims: NULL");
}

int main(void)
{
    test_dims_default();
    test_dim_parse_format();
    test_dims_parse_check();
    test_dims_axis();
    test_layout_check_c_f();
    test_layout_from_order();
    test_layout_from_order_errors();
    test_layout_from_strides();
    test_contiguous_dim();
    test_builtin_presets();
    test_preset_layout();
    test_register_named();
    test_register_function();
    test_preset_in_use();
    test_register_refused();
    test_listing();
    test_axis_text();
    test_ijk_entries();
    test_ijk_entries_bad_input();
    test_ijk_entries_checked();
    /* every test leaves the registry as it found it */
    CHECK_INT_EQ(gts_preset_count(), NBUILTINS);
    return check_summary("test_layout");
}
