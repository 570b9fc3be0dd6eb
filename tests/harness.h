/* The test harness shared by the suites: CHECK macros, SKIPPED tests,
   helpers for random host tensors and GPU copies, and the runner that
   prints one line per test and ends with "N passed, N failed, N skipped".
   Include after gpudl.h (with GPUDL_IMPLEMENTATION) in each suite. */
#ifndef GPUDL_TEST_HARNESS_H
#define GPUDL_TEST_HARNESS_H

#include <float.h>
#include <stdarg.h>
#if defined(_WIN32)
#  include <io.h>        /* dup, dup2, close */
#  include <process.h>   /* _getpid */
#  include <direct.h>    /* _mkdir */
#  define getpid _getpid
#  define make_dir(path) _mkdir(path)
#else
#  include <unistd.h>
#  include <sys/stat.h>
#  define make_dir(path) mkdir((path), 0755)
#endif

#if defined(__GNUC__)
#  define HARNESS_MAYBE_UNUSED __attribute__((unused))
#else
#  define HARNESS_MAYBE_UNUSED
#endif

/* >>harness --------------------------------------------------------------- */

static int g_failed_checks, g_skip, g_verbose;
static char g_skip_reason[256];
static char g_first_failure[512];

static void fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    char msg[400];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_verbose) fprintf(stderr, "  %s:%d: %s\n", file, line, msg);
    if (g_failed_checks++ == 0) snprintf(g_first_failure, sizeof g_first_failure, "%s:%d: %s", file, line, msg);
}

#define CHECK(cond) do { if (!(cond)) fail_at(__FILE__, __LINE__, "%s", #cond); } while (0)
#define CHECKF(cond, ...) do { if (!(cond)) fail_at(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_OK(expr) do { gpudl_status s_ = (expr); if (s_ != GPUDL_OK) \
    fail_at(__FILE__, __LINE__, "%s -> %s", #expr, gpudl_status_string(s_)); } while (0)
#define CHECK_ST(expr, want) do { gpudl_status s_ = (expr); if (s_ != (want)) \
    fail_at(__FILE__, __LINE__, "%s -> %s, want %s", #expr, gpudl_status_string(s_), gpudl_status_string(want)); } while (0)
#define SKIP(...) do { g_skip = 1; snprintf(g_skip_reason, sizeof g_skip_reason, __VA_ARGS__); return; } while (0)

typedef struct { const char *name; void (*fn)(void); } test_case;

/* A CPU context for the reference side of every test. */
static gpudl_ctx *cpu_ctx(void) {
    static gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    if (!ctx) {
        memset(&d, 0, sizeof d);
        d.device = GPUDL_DEVICE_CPU;
        d.seed = 1234;
        d.bind_threads = 1;   /* a test program owns its process (test_threads_bound checks the opt-in) */
        d.log = gpudl_log_quiet;   /* the tests provoke errors on purpose and read them with gpudl_ctx_last_error */
        GPUDL_CHECK(gpudl_ctx_create(&d, &ctx));
    }
    return ctx;
}

HARNESS_MAYBE_UNUSED static gpudl_tensor make(gpudl_ctx *ctx, gpudl_device dev, gpudl_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2) {
    gpudl_tensor t;
    int64_t shape[3];
    shape[0] = d0; shape[1] = d1; shape[2] = d2;
    GPUDL_CHECK(gpudl_tensor_create_on(ctx, &t, dev, dt, ndim, shape));
    return t;
}

HARNESS_MAYBE_UNUSED static gpudl_tensor host_rand(gpudl_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2) {
    gpudl_tensor t = make(cpu_ctx(), GPUDL_DEVICE_CPU, dt, ndim, d0, d1, d2);
    GPUDL_CHECK(gpudl_tensor_uniform(cpu_ctx(), &t, -1.0f, 1.0f));
    return t;
}

static double ld(const gpudl_tensor *t, int64_t i) {
    switch (t->dtype) {
    case GPUDL_F32: return ((const float *)t->data)[i];
    case GPUDL_F16: return gpudl_f16_to_f32(((const uint16_t *)t->data)[i]);
    case GPUDL_BF16: return gpudl_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case GPUDL_I32: return ((const int32_t *)t->data)[i];
    case GPUDL_U8: return ((const uint8_t *)t->data)[i];
    default: return 0;
    }
}

HARNESS_MAYBE_UNUSED static int is_nan(double x) { return x != x; }

static gpudl_ctx *gpu_ctx(void) {
    static gpudl_ctx *ctx;
    static int tried;
    if (!tried) {
        gpudl_ctx_desc d;
        tried = 1;
        memset(&d, 0, sizeof d);
        d.device = GPUDL_DEVICE_CUDA;
        d.seed = 1234;
        d.log = gpudl_log_quiet;
        if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) ctx = NULL;
    }
    return ctx;
}

/* stderr into a temporary file for a while, and what was written there. */
HARNESS_MAYBE_UNUSED static int stderr_capture(FILE **tmp) {
    int saved;
    fflush(stderr);
    saved = dup(2);
    *tmp = tmpfile();
    if (*tmp) dup2(fileno(*tmp), 2);
    return saved;
}
HARNESS_MAYBE_UNUSED static void stderr_release(int saved, FILE *tmp, char *buf, size_t size) {
    size_t n = 0;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (tmp) { rewind(tmp); n = fread(buf, 1, size - 1, tmp); fclose(tmp); }
    buf[n] = 0;
}

#ifdef GPUDL_NO_CUDA
#define NEED_GPU(g) gpudl_ctx *g = NULL; (void)g; SKIP("CPU-only build (GPUDL_NO_CUDA)")
#else
#define NEED_GPU(g) gpudl_ctx *g = gpu_ctx(); if (!g) SKIP("no usable CUDA device")
#endif

/* A device copy of a host tensor, and a host copy of a device tensor. */
HARNESS_MAYBE_UNUSED static gpudl_tensor to_dev(gpudl_ctx *g, const gpudl_tensor *h) {
    gpudl_tensor d;
    GPUDL_CHECK(gpudl_tensor_create_on(g, &d, GPUDL_DEVICE_CUDA, h->dtype, h->ndim, h->shape));
    GPUDL_CHECK(gpudl_tensor_copy(g, &d, h));
    return d;
}

/* The host copy belongs to cpu_ctx(): free it there. */
HARNESS_MAYBE_UNUSED static gpudl_tensor to_host(gpudl_ctx *g, const gpudl_tensor *d) {
    gpudl_tensor h;
    GPUDL_CHECK(gpudl_tensor_create_on(cpu_ctx(), &h, GPUDL_DEVICE_CPU, d->dtype, d->ndim, d->shape));
    GPUDL_CHECK(gpudl_tensor_copy(g, &h, d));
    return h;
}

/* max |x - y| / (|y| + floor) over two host tensors */
HARNESS_MAYBE_UNUSED static double max_rel(const gpudl_tensor *x, const gpudl_tensor *y, double floor) {
    int64_t i, n = gpudl_tensor_numel(x);
    double w = 0;
    for (i = 0; i < n; i++) {
        double e = fabs(ld(x, i) - ld(y, i)) / (fabs(ld(y, i)) + floor);
        if (!(e <= w)) w = e;
    }
    return w;
}

/* Does a --skip=NAME argument name this test? */
static int skipped_by_args(const char *name, int argc, char **argv) {
    int a, only = 0, listed = 0;
    for (a = 1; a < argc; a++) {
        if (!strncmp(argv[a], "--skip=", 7) && !strcmp(argv[a] + 7, name)) return 1;
        if (!strncmp(argv[a], "--only=", 7)) { only = 1; listed |= !strcmp(argv[a] + 7, name); }
    }
    return only && !listed;
}

/* argv[1]: --cpu-only, --gpu-only or a substring of the names to run;
   further --skip=NAME arguments leave those tests out, and --only=NAME
   arguments (any number) run just those (neither is counted). */
static int run_tests(const test_case *tests, size_t count, int argc, char **argv) {
    int passed = 0, failed = 0, skipped = 0;
    size_t i;
    const char *filter = argc > 1 && strncmp(argv[1], "--skip=", 7) && strncmp(argv[1], "--only=", 7) ? argv[1] : NULL;
    g_verbose = getenv("GPUDL_TEST_VERBOSE") != NULL;
    for (i = 0; i < count; i++) {
        double t0;
        int is_gpu = strncmp(tests[i].name, "gpu_", 4) == 0;
        if (filter && !strcmp(filter, "--cpu-only") ? is_gpu : filter && !strcmp(filter, "--gpu-only") ? !is_gpu
            : filter && !strstr(tests[i].name, filter)) continue;
        if (skipped_by_args(tests[i].name, argc, argv)) continue;
        g_failed_checks = 0;
        g_skip = 0;
        t0 = gpudl_now();
        tests[i].fn();
        if (g_failed_checks) {
            printf("FAIL    %-34s %s (%d failed checks)\n", tests[i].name, g_first_failure, g_failed_checks);
            failed++;
        } else if (g_skip) {
            printf("SKIPPED %-34s %s\n", tests[i].name, g_skip_reason);
            skipped++;
        } else {
            printf("ok      %-34s %.2f s\n", tests[i].name, gpudl_now() - t0);
            passed++;
        }
        fflush(stdout);
    }
    {   /* a --only= or --skip= that names no test is a typo in the caller: say so, or a test quietly goes unrun */
        int a;
        for (a = 1; a < argc; a++) {
            size_t k;
            int known = 0;
            if (strncmp(argv[a], "--only=", 7) && strncmp(argv[a], "--skip=", 7)) continue;
            for (k = 0; k < count && !known; k++) known = !strcmp(tests[k].name, argv[a] + 7);
            if (!known) { printf("FAIL    %-34s no test of that name here\n", argv[a]); failed++; }
        }
    }
    if (gpu_ctx()) gpudl_ctx_destroy(gpu_ctx());
    gpudl_ctx_destroy(cpu_ctx());
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

#endif
