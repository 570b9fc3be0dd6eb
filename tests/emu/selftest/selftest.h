/* selftest.h - a tiny harness for the emulator's self-tests (C and C++).
   Each test program: ST_TEST(name) { ... ST_CHECK(cond); ... } functions,
   run from main with ST_RUN(name), ending with return st_summary();
   It prints "ok   name" or "FAIL name: file:line: what" per test and, last,
   "N passed, N failed"; the exit status is 1 when anything failed. */
#ifndef CUEMU_SELFTEST_H
#define CUEMU_SELFTEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int st_passed, st_failed, st_cur_failed;
static char st_first[512];

#define ST_CHECK(cond) do { if (!(cond)) { if (!st_cur_failed++) \
    snprintf(st_first, sizeof st_first, "%s:%d: %s", __FILE__, __LINE__, #cond); } } while (0)
#define ST_CHECKF(cond, ...) do { if (!(cond)) { if (!st_cur_failed++) { \
    int st_n_ = snprintf(st_first, sizeof st_first, "%s:%d: ", __FILE__, __LINE__); \
    if (st_n_ > 0 && st_n_ < (int)sizeof st_first) snprintf(st_first + st_n_, sizeof st_first - (size_t)st_n_, __VA_ARGS__); } } } while (0)
#define ST_TEST(name) static void name(void)
#define ST_RUN(name) do { st_cur_failed = 0; st_first[0] = 0; name(); fflush(stdout); \
    if (st_cur_failed) { st_failed++; printf("FAIL %s: %s\n", #name, st_first); } \
    else { st_passed++; printf("ok   %s\n", #name); } fflush(stdout); } while (0)

/* CUEMU_SELFTEST_QUICK=1 (run.sh --quick, which make test runs): the
   exhaustive arithmetic sweeps (fp16_*) take a sample of each range, every
   STRIDE-th pattern, instead of every pattern; run.sh without --quick
   (make test-emu) sweeps them all. */
static inline unsigned st_stride(unsigned stride) {
    const char *e = getenv("CUEMU_SELFTEST_QUICK");
    return e && *e && strcmp(e, "0") ? stride : 1u;
}

static int st_summary(void) {
    printf("%d passed, %d failed\n", st_passed, st_failed);
    return st_failed ? 1 : 0;
}
#endif
