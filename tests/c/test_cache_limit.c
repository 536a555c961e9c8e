/* GTSTORE_CACHE_LIMIT's syntax (gts_cache_limit_parse): bytes with an
 * optional K, M or G suffix; anything else is an error naming the text, and
 * a bad variable is reported, not silently replaced by the default. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "gtstore/buffer.h"

static int64_t parsed(const char *text)
{
    int64_t bytes = -1;
    CHECK_OK(gts_cache_limit_parse(text, &bytes, ERR));
    return bytes;
}

static void test_valid(void)
{
    CHECK_INT_EQ(parsed("0"), 0);
    CHECK_INT_EQ(parsed("4096"), 4096);
    CHECK_INT_EQ(parsed("3k"), 3 << 10);
    CHECK_INT_EQ(parsed("512M"), (int64_t)512 << 20);
    CHECK_INT_EQ(parsed("2G"), (int64_t)2 << 30);
    CHECK_INT_EQ(parsed("8589934591G"), (int64_t)8589934591 << 30);
}

static void test_invalid(void)
{
    int64_t bytes = 7;
    CHECK_FAILS(gts_cache_limit_parse("12X", &bytes, ERR), GTS_EINVAL, "'12X' is not a size");
    CHECK_FAILS(gts_cache_limit_parse("1GB", &bytes, ERR), GTS_EINVAL, "e.g. 512M");
    CHECK_FAILS(gts_cache_limit_parse("-1", &bytes, ERR), GTS_EINVAL, "GTSTORE_CACHE_LIMIT");
    CHECK_FAILS(gts_cache_limit_parse("+1", &bytes, ERR), GTS_EINVAL, "'+1'");
    CHECK_FAILS(gts_cache_limit_parse(" 1", &bytes, ERR), GTS_EINVAL, "' 1'");
    CHECK_FAILS(gts_cache_limit_parse("1.5G", &bytes, ERR), GTS_EINVAL, "'1.5G'");
    CHECK_FAILS(gts_cache_limit_parse("", &bytes, ERR), GTS_EINVAL, "empty");
    CHECK_FAILS(gts_cache_limit_parse("8589934592G", &bytes, ERR), GTS_EOVERFLOW, "64 bits");
    CHECK_FAILS(gts_cache_limit_parse("99999999999999999999", &bytes, ERR), GTS_EINVAL,
                "not a size");
    CHECK_INT_EQ(bytes, 7); /* untouched on failure */
}

static void test_environment(void)
{
    CHECK(unsetenv("GTSTORE_CACHE_LIMIT") == 0);
    CHECK_OK(gts_cache_limit_check_environment(ERR));
    CHECK(setenv("GTSTORE_CACHE_LIMIT", "", 1) == 0); /* empty: unset */
    CHECK_OK(gts_cache_limit_check_environment(ERR));
    CHECK(setenv("GTSTORE_CACHE_LIMIT", "64M", 1) == 0);
    CHECK_OK(gts_cache_limit_check_environment(ERR));
    CHECK(setenv("GTSTORE_CACHE_LIMIT", "lots", 1) == 0);
    CHECK_FAILS(gts_cache_limit_check_environment(ERR), GTS_EINVAL, "'lots' is not a size");
}

int main(void)
{
    test_valid();
    test_invalid();
    test_environment();
    return check_summary("test_cache_limit");
}
