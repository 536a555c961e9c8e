/* A tiny test harness: checks count and report failures, and the test's
 * main returns check_summary() (nonzero if any check failed).
 *
 * Library calls take ERR as their gts_error argument; CHECK_OK and
 * CHECK_FAILS clear it before the call and inspect it after, so a failure
 * shows the library's own message. Every macro evaluates to true when the
 * check passed, so a test can stop early: if (!CHECK_OK(...)) return; */
#ifndef GTSTORE_TESTS_CHECK_H
#define GTSTORE_TESTS_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gtstore/error.h"

static int check_count, check_failures;
static gts_error check_error;
#define ERR (&check_error)

static inline bool check_report(bool ok, const char *file, int line, const char *what)
{
    ++check_count;
    if (!ok) {
        ++check_failures;
        fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    }
    return ok;
}

static inline void check_clear_error(void)
{
    check_error.code = 0;
    check_error.message[0] = '\0';
}

#define CHECK(cond) check_report((cond) ? true : false, __FILE__, __LINE__, #cond)

static inline bool check_int_eq(long long a, long long b, const char *file, int line,
                                const char *text)
{
    if (a != b)
        fprintf(stderr, "%s:%d: %lld != %lld\n", file, line, a, b);
    return check_report(a == b, file, line, text);
}
#define CHECK_INT_EQ(a, b) \
    check_int_eq((long long)(a), (long long)(b), __FILE__, __LINE__, #a " == " #b)

static inline bool check_str_eq(const char *a, const char *b, const char *file, int line,
                                const char *text)
{
    bool ok = a && b && strcmp(a, b) == 0;
    if (!ok)
        fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", file, line, a ? a : "(null)",
                b ? b : "(null)");
    return check_report(ok, file, line, text);
}
#define CHECK_STR_EQ(a, b) check_str_eq((a), (b), __FILE__, __LINE__, #a " == " #b)

static inline bool check_ok(int rc, const char *file, int line, const char *text)
{
    if (rc != 0)
        fprintf(stderr, "%s:%d: returned %d (%s): %s\n", file, line, rc, gts_status_name(rc),
                check_error.message);
    return check_report(rc == 0, file, line, text);
}
#define CHECK_OK(expr) (check_clear_error(), check_ok((expr), __FILE__, __LINE__, #expr))

/* The call fails with `code`, records the same code in ERR, and the message
 * contains `substring` (the parameter or the value at fault). */
static inline bool check_fails(int rc, int code, const char *substring, const char *file,
                               int line, const char *text)
{
    bool ok = rc == code && check_error.code == code &&
              strstr(check_error.message, substring) != NULL;
    if (!ok)
        fprintf(stderr, "%s:%d: returned %d (%s), error code %d, message \"%s\"; expected %s "
                        "and a message containing \"%s\"\n",
                file, line, rc, gts_status_name(rc), check_error.code, check_error.message,
                gts_status_name(code), substring);
    return check_report(ok, file, line, text);
}
#define CHECK_FAILS(expr, code, substring) \
    (check_clear_error(), check_fails((expr), (code), (substring), __FILE__, __LINE__, #expr))

static inline int check_summary(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
