/* GTSTORE_CACHE_LIMIT's syntax (gts_cache_limit_parse): bytes with an
 * optional K, M or G suffix; anything else is an error naming the text, and
 * a bad variable is reported, not silently replaced by the default. */
#define _POSIX_C_SOURCE 200112L /* setenv, dup, fileno */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    /* past 64 bits before any suffix: the same error, not "not a size" */
    CHECK_FAILS(gts_cache_limit_parse("9223372036854775808", &bytes, ERR), GTS_EOVERFLOW,
                "'9223372036854775808' does not fit in 64 bits");
    CHECK_FAILS(gts_cache_limit_parse("99999999999999999999K", &bytes, ERR), GTS_EOVERFLOW,
                "64 bits");
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

/* The library reads the variable at its first use of the caches: a bad
 * value keeps the default and says so on stderr (once), where it was
 * silently ignored. Runs first, before anything touches the caches. */
static void test_library_reports_a_bad_environment(void)
{
    CHECK(setenv("GTSTORE_CACHE_LIMIT", "12X", 1) == 0);
    FILE *log = tmpfile();
    CHECK(log != NULL);
    if (!log)
        return;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    CHECK(saved >= 0 && dup2(fileno(log), STDERR_FILENO) >= 0);
    int64_t limit = gts_cache_limit();
    int64_t again = gts_cache_limit();
    fflush(stderr);
    CHECK(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    char text[512] = {0};
    rewind(log);
    size_t n = fread(text, 1, sizeof text - 1, log);
    fclose(log);
    CHECK_INT_EQ(limit, GTS_DEFAULT_CACHE_LIMIT);
    CHECK_INT_EQ(again, GTS_DEFAULT_CACHE_LIMIT);
    CHECK(n > 0 && strstr(text, "gtstore: GTSTORE_CACHE_LIMIT: '12X' is not a size") != NULL);
    CHECK(strstr(text, "the caches keep the default limit") != NULL);
    CHECK(strchr(text, '\n') == text + n - 1); /* one line */
}

int main(void)
{
    test_library_reports_a_bad_environment();
    test_valid();
    test_invalid();
    test_environment();
    return check_summary("test_cache_limit");
}
