/* GTSTORE_PINNED_HOST_SIDES's values (gts_pinned_host_sides_parse): "1" or
 * "0"; anything else is an error naming the text, as for the other
 * GTSTORE_* variables, and the library keeps the default (pinned). */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"
#include "gtstore/buffer.h"

static void test_parse(void)
{
    bool pinned = false;
    if (CHECK_OK(gts_pinned_host_sides_parse("1", &pinned, ERR)))
        CHECK(pinned);
    if (CHECK_OK(gts_pinned_host_sides_parse("0", &pinned, ERR)))
        CHECK(!pinned);
    const char *bad[] = {"", "2", "yes", "off", "false", " 0", "0 ", "01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
        CHECK_FAILS(gts_pinned_host_sides_parse(bad[i], &pinned, ERR), GTS_EINVAL,
                    "GTSTORE_PINNED_HOST_SIDES: expected '1' (pinned host sides, the default) "
                    "or '0' (pageable), got '");
    CHECK(!pinned); /* untouched on failure */
    CHECK_FAILS(gts_pinned_host_sides_parse(NULL, &pinned, ERR), GTS_EINVAL, "'(null)'");
    CHECK_FAILS(gts_pinned_host_sides_parse("1", NULL, ERR), GTS_EINVAL, "output is NULL");
}

/* The rule every on/off variable shares (GTSTORE_NUMPY_CAPI too): the
 * variable and what each value does named in the error. */
static void test_switch(void)
{
    bool on = false;
    if (CHECK_OK(gts_switch_parse("GTSTORE_X", "1", "on", "off", &on, ERR)))
        CHECK(on);
    CHECK_FAILS(gts_switch_parse("GTSTORE_X", "true", "fast", "slow", &on, ERR), GTS_EINVAL,
                "GTSTORE_X: expected '1' (fast) or '0' (slow), got 'true'");
    CHECK(on); /* untouched on failure */
    CHECK(unsetenv("GTSTORE_SWITCH_TEST") == 0);
    on = false;
    if (CHECK_OK(gts_switch_from_environment("GTSTORE_SWITCH_TEST", true, "on", "off", &on, ERR)))
        CHECK(on); /* unset: the fallback */
    CHECK(setenv("GTSTORE_SWITCH_TEST", "", 1) == 0);
    if (CHECK_OK(gts_switch_from_environment("GTSTORE_SWITCH_TEST", false, "on", "off", &on, ERR)))
        CHECK(!on); /* empty: the fallback */
    CHECK(setenv("GTSTORE_SWITCH_TEST", "1", 1) == 0);
    if (CHECK_OK(gts_switch_from_environment("GTSTORE_SWITCH_TEST", false, "on", "off", &on, ERR)))
        CHECK(on);
    CHECK(setenv("GTSTORE_SWITCH_TEST", "on", 1) == 0);
    CHECK_FAILS(gts_switch_from_environment("GTSTORE_SWITCH_TEST", false, "on", "off", &on, ERR),
                GTS_EINVAL, "GTSTORE_SWITCH_TEST: expected '1' (on) or '0' (off), got 'on'");
    CHECK_FAILS(gts_switch_from_environment("GTSTORE_SWITCH_TEST", false, "on", "off", NULL, ERR),
                GTS_EINVAL, "GTSTORE_SWITCH_TEST: the output is NULL");
}

static void test_environment(void)
{
    CHECK(unsetenv("GTSTORE_PINNED_HOST_SIDES") == 0);
    CHECK_OK(gts_pinned_host_sides_check_environment(ERR));
    CHECK(setenv("GTSTORE_PINNED_HOST_SIDES", "", 1) == 0); /* empty: unset */
    CHECK_OK(gts_pinned_host_sides_check_environment(ERR));
    CHECK(setenv("GTSTORE_PINNED_HOST_SIDES", "0", 1) == 0);
    CHECK_OK(gts_pinned_host_sides_check_environment(ERR));
    CHECK(setenv("GTSTORE_PINNED_HOST_SIDES", "no", 1) == 0);
    CHECK_FAILS(gts_pinned_host_sides_check_environment(ERR), GTS_EINVAL, "got 'no'");
}

/* The library reads the variable once, on first use: a bad value keeps
 * the default and says so on stderr (before, "off" left pinning on
 * without a word). */
static void test_library_keeps_the_default(void)
{
    CHECK(setenv("GTSTORE_PINNED_HOST_SIDES", "off", 1) == 0);
    CHECK(gts_pinned_host_sides());
}

int main(void)
{
    test_library_keeps_the_default(); /* first: before anything reads the variable */
    test_parse();
    test_environment();
    test_switch();
    return check_summary("test_pinned_host_sides");
}
