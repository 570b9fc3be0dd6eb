#define _POSIX_C_SOURCE 200809L   /* the implementation uses POSIX; this file includes system headers before gpudl.h */
/* gpudl fault tests (CPU): allocation failure injected at every allocation
   point of model creation and training set-up, a failed write under
   RLIMIT_FSIZE that must keep the previous checkpoint, every public
   function called with NULL arguments, API misuse, double free, and the
   logger's messages. Built with the host allocator replaced by a counting,
   failing one (GPUDL_MALLOC/REALLOC/FREE), so leaks are counted too.

   cc -O1 -DGPUDL_NO_CUDA tests/test_faults.c -lm   (make test-sanitize adds ASan/UBSan/LSan) */
#include <stdlib.h>
#include <stddef.h>

/* >>injection: the library's allocator ------------------------------------ */
static long long g_alloc_calls, g_fail_at = -1, g_live;   /* long is 32 bits on Windows */
static void *t_malloc(size_t n) {
    void *p;
    if (g_fail_at >= 0 && g_alloc_calls++ == g_fail_at) return NULL;
    p = malloc(n);
    if (p) g_live++;
    return p;
}
static void *t_realloc(void *p, size_t n) {
    void *q;
    if (g_fail_at >= 0 && g_alloc_calls++ == g_fail_at) return NULL;
    q = realloc(p, n);
    if (q && !p) g_live++;
    return q;
}
static void t_free(void *p) { if (p) { g_live--; free(p); } }
#define GPUDL_MALLOC(n) t_malloc(n)
#define GPUDL_REALLOC(p, n) t_realloc(p, n)
#define GPUDL_FREE(p) t_free(p)

#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"
#include "harness.h"

#if !defined(_WIN32)
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#endif

/* >>allocation failures --------------------------------------------------- */

/* Model creation and training set-up, as a user writes it; returns the first
   failure and cleans up whatever was created. */
static gpudl_status scenario(const char *ckpt) {
    static const unsigned char idx_img[] = {0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 6};
    unsigned char file[16 + 4 * 36], lab[12] = {0, 0, 8, 1, 0, 0, 0, 4, 1, 0, 2, 1};
    gpudl_ctx *ctx = NULL;
    gpudl_ctx_desc d;
    gpudl_model *m = NULL;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_tensor images, labels, x, y;
    gpudl_dataset ds;
    int64_t img[3] = {1, 6, 6};
    gpudl_status s;
    int i;
    memset(&images, 0, sizeof images); memset(&labels, 0, sizeof labels); memset(&ds, 0, sizeof ds);
    memcpy(file, idx_img, 16);
    for (i = 0; i < 4 * 36; i++) file[16 + i] = (unsigned char)(i * 37);
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = gpudl_log_quiet;   /* thousands of injected failures */
    s = gpudl_ctx_create(&d, &ctx);
    if (s != GPUDL_OK) return s;
#define STEP(expr) do { s = (expr); if (s != GPUDL_OK) goto done; } while (0)
    STEP(gpudl_idx_load_memory(ctx, "images", file, sizeof file, &images));
    STEP(gpudl_idx_load_memory(ctx, "labels", lab, sizeof lab, &labels));
    STEP(gpudl_dataset_create(ctx, &ds, &images, &labels, 4, 0.5f, 0.5f));
    STEP(gpudl_dataset_shuffle(ctx, &ds, 1, 0));
    STEP(gpudl_model_create(ctx, &m, 3, img));
    STEP(gpudl_model_add_conv2d(m, 1, 2, 3, NULL));
    STEP(gpudl_model_add_batchnorm2d(m, 2));
    STEP(gpudl_model_add_relu(m));
    STEP(gpudl_model_add_maxpool2d(m, 2, 2));
    STEP(gpudl_model_add_flatten(m));
    STEP(gpudl_model_add_dropout(m, 0.1f));
    STEP(gpudl_model_add_linear(m, 8, 3));
    memset(&md, 0, sizeof md);
    md.max_batch = 4;
    STEP(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    od.clip_norm = 1.0f;
    STEP(gpudl_model_set_optimizer(m, &od));
    STEP(gpudl_dataset_batch(ctx, &ds, 0, &x, &y));
    STEP(gpudl_model_zero_grad(m));
    STEP(gpudl_model_forward(m, &x, NULL));
    STEP(gpudl_model_loss(m, &y));
    STEP(gpudl_model_backward(m));
    STEP(gpudl_model_step(m));
    STEP(gpudl_model_save(ctx, m, ckpt));
    STEP(gpudl_model_load(ctx, m, ckpt));
#undef STEP
done:
    if (s != GPUDL_OK && !gpudl_ctx_last_error(ctx)[0]) s = (gpudl_status)-1000;   /* an error without a message */
    gpudl_model_destroy(m);
    gpudl_dataset_free(ctx, &ds);
    gpudl_tensor_free(ctx, &images);
    gpudl_tensor_free(ctx, &labels);
    gpudl_ctx_destroy(ctx);
    return s;
}

static void test_alloc_failure_at_every_point(void) {
    long long n, points;
    const char *ckpt = "build/test/tmp_faults.safetensors";
    g_fail_at = -1;
    g_alloc_calls = 0;
    g_live = 0;
    CHECK_OK(scenario(ckpt));
    CHECKF(g_live == 0, "the successful scenario leaks %lld allocations", g_live);
    /* count the allocation points, then fail each in turn */
    g_fail_at = 1LL << 40;
    g_alloc_calls = 0;
    CHECK_OK(scenario(ckpt));
    points = g_alloc_calls;
    CHECKF(points > 20, "only %lld allocation points?", points);
    for (n = 0; n < points; n++) {
        gpudl_status s;
        g_fail_at = n;
        g_alloc_calls = 0;
        g_live = 0;
        s = scenario(ckpt);
        CHECKF(s == GPUDL_ERR_OOM, "allocation %lld of %lld failed: status %d (%s), want out of memory", n, points, (int)s,
               s == (gpudl_status)-1000 ? "an error without a message" : gpudl_status_string(s));
        CHECKF(g_live == 0, "allocation %lld of %lld failed: %lld allocations leaked", n, points, g_live);
    }
    g_fail_at = -1;
    printf("    %lld allocation points, each failed once: a clear status and no leak\n", points);
}

/* >>atomic save ----------------------------------------------------------- */

HARNESS_MAYBE_UNUSED static gpudl_model *tiny_model(gpudl_ctx *c, uint64_t seed) {   /* the POSIX test only */
    gpudl_model *m;
    gpudl_model_desc md;
    int64_t v[1] = {64};
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, v));
    GPUDL_CHECK(gpudl_model_add_linear(m, 64, 64));
    memset(&md, 0, sizeof md);
    md.seed = seed;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    return m;
}

/* A save that fails half-way (RLIMIT_FSIZE in a child) must leave the
   previous checkpoint loadable and no partial file at the final path. */
static void test_failed_save_keeps_previous(void) {
#if defined(_WIN32)
    SKIP("POSIX only");
#else
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *a = tiny_model(c, 1), *b = tiny_model(c, 2);
    const char *path = "build/test/tmp_atomic.safetensors";
    gpudl_tensor pa, pb;
    pid_t pid;
    int status = 0;
    char tmp[600];
    FILE *f;
    memset(&pa, 0, sizeof pa); memset(&pb, 0, sizeof pb);
    CHECK_OK(gpudl_model_save(c, a, path));
    fflush(NULL);
    pid = fork();
    if (pid == 0) {   /* the child: model b, a file size limit far below its size */
        struct rlimit rl;
        gpudl_status s;
        signal(SIGXFSZ, SIG_IGN);    /* writes past the limit fail with EFBIG instead of killing us */
        rl.rlim_cur = rl.rlim_max = 4096;
        setrlimit(RLIMIT_FSIZE, &rl);
        s = gpudl_model_save(c, b, path);
        _exit(s == GPUDL_ERR_IO && strstr(gpudl_ctx_last_error(c), path) && strstr(gpudl_ctx_last_error(c), "File too large") ? 0 : 1);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's save did not fail with GPUDL_ERR_IO naming the path and EFBIG");
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)pid);
    f = fopen(tmp, "rb");
    CHECKF(f == NULL, "the partial temporary file %s was left behind", tmp);
    if (f) fclose(f);
    CHECK_OK(gpudl_model_load(c, b, path));   /* the previous checkpoint (model a's) is intact */
    CHECK_OK(gpudl_model_params(a, &pa, NULL));
    CHECK_OK(gpudl_model_params(b, &pb, NULL));
    CHECK(memcmp(pa.data, pb.data, gpudl_tensor_bytes(&pa)) == 0);
    gpudl_model_destroy(a);
    gpudl_model_destroy(b);
#endif
}

/* A save killed midway (the process dies while it writes the temporary
   file) leaves the previous checkpoint whole at the path: a child saves a
   large model there, and is killed as soon as its temporary file exists.
   On Windows the child is this program again (--child-save PATH). */
static gpudl_model *big_model(gpudl_ctx *c, uint64_t seed) {   /* 64 MB of parameters: its save takes a while */
    gpudl_model *m;
    gpudl_model_desc md;
    int64_t v[1] = {4096};
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, v));
    GPUDL_CHECK(gpudl_model_add_linear(m, 4096, 4096));
    memset(&md, 0, sizeof md);
    md.seed = seed;
    md.max_batch = 1;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    return m;
}

static int child_save(const char *path) {   /* saves over and over until killed */
    gpudl_model *b = big_model(cpu_ctx(), 2);
    for (;;) if (gpudl_model_save(cpu_ctx(), b, path) != GPUDL_OK) return 1;
}

static void test_killed_save_keeps_previous(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *a = big_model(c, 1), *b = big_model(c, 3);
    const char *path = "build/test/tmp_killed.safetensors";
    gpudl_tensor pa, pb;
    char tmp[600];
    FILE *f = NULL;
    double t0;
    long pid;
    CHECK_OK(gpudl_model_save(c, a, path));
    fflush(NULL);
#if defined(_WIN32)
    {
        char self[MAX_PATH];
        intptr_t h;
        GetModuleFileNameA(NULL, self, sizeof self);
        h = _spawnl(_P_NOWAIT, self, self, "--child-save", path, NULL);
        CHECK(h != -1);
        if (h == -1) return;
        pid = (long)GetProcessId((HANDLE)h);
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, pid);
        for (t0 = gpudl_now(); !f && gpudl_now() - t0 < 60; ) f = fopen(tmp, "rb");
        TerminateProcess((HANDLE)h, 9);
        WaitForSingleObject((HANDLE)h, INFINITE);
        CloseHandle((HANDLE)h);
    }
#else
    {
        pid_t p = fork();
        if (p == 0) _exit(child_save(path));
        CHECK(p > 0);
        if (p <= 0) return;
        pid = (long)p;
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, pid);
        for (t0 = gpudl_now(); !f && gpudl_now() - t0 < 60; ) f = fopen(tmp, "rb");
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
    }
#endif
    CHECKF(f != NULL, "the child's temporary file %s never appeared", tmp);
    if (f) fclose(f);
    remove(tmp);   /* what a killed process leaves behind: the caller's to clean up */
    memset(&pa, 0, sizeof pa); memset(&pb, 0, sizeof pb);
    CHECK_OK(gpudl_model_load(c, b, path));   /* whole: model a's, or (had the child finished one) model 2's */
    CHECK_OK(gpudl_model_params(a, &pa, NULL));
    CHECK_OK(gpudl_model_params(b, &pb, NULL));
    printf("    killed while writing %s: the checkpoint at the path loads (%s)\n", tmp,
           memcmp(pa.data, pb.data, gpudl_tensor_bytes(&pa)) == 0 ? "the previous one" : "a complete newer one");
    gpudl_model_destroy(a);
    gpudl_model_destroy(b);
    remove(path);
}

/* >>API misuse ------------------------------------------------------------ */

/* Every public function with NULL where a pointer is required. */
static void test_null_arguments(void) {
    gpudl_ctx *c = cpu_ctx(), *none = NULL;
    gpudl_tensor t, u;
    gpudl_model *m = NULL;
    gpudl_dataset ds;
    gpudl_timer tm;
    gpudl_bench_result br;
    gpudl_gradcheck_result gr;
    gpudl_conv2d_desc cd;
    gpudl_pool2d_desc pd;
    int64_t s2[2] = {2, 3}, s1[1] = {3};
    float v;
    char buf[64];
    memset(&cd, 0, sizeof cd);
    memset(&pd, 0, sizeof pd);
    pd.kind = GPUDL_POOL_MAX; pd.k_h = pd.k_w = 1;
    GPUDL_CHECK(gpudl_tensor_create(c, &t, GPUDL_F32, 2, s2));
    GPUDL_CHECK(gpudl_tensor_fill(c, &t, 1.0f));
    u = t;
    /* context */
    CHECK_ST(gpudl_ctx_create(NULL, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_ctx_destroy(NULL);
    CHECK(gpudl_ctx_device(NULL) == GPUDL_DEVICE_CPU);
    CHECK(gpudl_ctx_last_error(NULL)[0] != 0);
    CHECK_ST(gpudl_ctx_sync(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_ctx_set_math_mode(NULL, GPUDL_MATH_TF32), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_ctx_math_mode(NULL) == GPUDL_MATH_FP32);
    gpudl_ctx_set_seed(NULL, 1);
    CHECK(gpudl_ctx_stream(NULL) == NULL);
    /* tensors */
    CHECK(gpudl_tensor_numel(NULL) == 0 && gpudl_tensor_bytes(NULL) == 0);
    CHECK_ST(gpudl_tensor_create(none, &u, GPUDL_F32, 2, s2), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_create(c, NULL, GPUDL_F32, 2, s2), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_create(c, &u, GPUDL_F32, 2, NULL), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_tensor_create_on(c, NULL, GPUDL_DEVICE_CPU, GPUDL_F32, 2, s2), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(c, NULL);
    gpudl_tensor_free(NULL, NULL);
    CHECK_ST(gpudl_tensor_wrap(NULL, t.data, GPUDL_DEVICE_CPU, GPUDL_F32, 2, s2), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_wrap(&u, NULL, GPUDL_DEVICE_CPU, GPUDL_F32, 2, s2), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_reshape(NULL, &t, 1, s1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_reshape(&u, NULL, 1, s1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_reshape(&u, &t, 1, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_fill(none, &t, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_fill(c, NULL, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_uniform(c, NULL, 0, 1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_normal(c, NULL, 0, 1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_copy(c, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_copy(c, &t, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_upload(c, &t, NULL, 24), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_download(c, &t, NULL, 24), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_cast(c, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_item(c, &t, 0, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_item(c, NULL, 0, &v), GPUDL_ERR_INVALID_ARG);
    CHECK(strcmp(gpudl_tensor_describe(NULL, buf, sizeof buf), "(null tensor)") == 0);
    CHECK(gpudl_tensor_describe(&t, NULL, 10) == NULL);
    /* ops */
    CHECK_ST(gpudl_matmul(none, &t, &t, &t, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_matmul(c, NULL, &t, &t, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_matmul(c, &t, NULL, &t, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_matmul(c, &t, &t, NULL, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_add(c, NULL, &t, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_mul(c, &t, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_scale(c, NULL, 2), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_axpy(c, &t, 1, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_sum(c, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_max(c, &t, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_argmax_rows(c, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_sum_rows_acc(c, NULL, &t), GPUDL_ERR_INVALID_ARG);
    /* layers */
    CHECK_ST(gpudl_act_forward(c, GPUDL_ACT_RELU, 0, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_act_backward(c, GPUDL_ACT_RELU, 0, &t, NULL, &t, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_linear_forward(c, &t, NULL, &t, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_linear_backward(c, NULL, NULL, NULL, NULL, &t, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_softmax_xent_forward(c, NULL, &t, &t, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_softmax_xent_backward(c, &t, &t, NULL, 1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_mse_forward(c, NULL, &t, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_mse_backward(c, &t, NULL, &t, 1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_conv2d_forward(c, &t, NULL, &t, NULL, &cd), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_conv2d_backward(c, NULL, NULL, NULL, &t, &t, NULL, &cd), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_pool2d_forward(c, &t, &t, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_pool2d_backward(c, &t, &t, NULL, &pd), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_batchnorm_forward(c, &t, NULL, NULL, &t, NULL, NULL, NULL, NULL, 1, 0.1f, 1e-5f), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_batchnorm_backward(c, NULL, NULL, NULL, &t, &t, NULL, NULL, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_dropout_forward(c, NULL, &t, 0.5f, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_dropout_backward(c, &t, NULL, 0.5f, 1, 0), GPUDL_ERR_INVALID_ARG);
    /* model */
    CHECK_ST(gpudl_model_create(none, &m, 1, s1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_create(c, NULL, 1, s1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_create(c, &m, 1, NULL), GPUDL_ERR_SHAPE);
    gpudl_model_destroy(NULL);
    CHECK_ST(gpudl_model_add_linear(NULL, 3, 3), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_conv2d(NULL, 1, 1, 1, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_act(NULL, GPUDL_ACT_RELU, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_relu(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_pool2d(NULL, &pd), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_maxpool2d(NULL, 2, 2), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_batchnorm2d(NULL, 3), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_dropout(NULL, 0.5f), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_flatten(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_build(NULL, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_model_train(NULL, 1);
    CHECK_ST(gpudl_model_forward(NULL, &t, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_loss(NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_loss_value(NULL, &v), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_backward(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_zero_grad(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_model_num_params(NULL) == 0);
    CHECK_ST(gpudl_model_params(NULL, &t, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_predict(NULL, &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_count_correct(NULL, &t, &t), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_model_summary(NULL, buf, sizeof buf) == buf && buf[0] == 0);
    CHECK_ST(gpudl_model_set_optimizer(NULL, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_step(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_model_step_count(NULL) == 0);
    CHECK(gpudl_optim_lr(NULL, 3) == 0.0f);
    CHECK_ST(gpudl_gradcheck(NULL, &t, &t, 0, 0, 0, 0, &gr), GPUDL_ERR_INVALID_ARG);
    /* data, checkpoints */
    CHECK_ST(gpudl_idx_load(none, "x", &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_idx_load(c, NULL, &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_idx_load(c, "x", NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_idx_load_memory(c, "x", NULL, 10, &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_idx_load_memory(c, "x", buf, 4, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_mnist_load(c, NULL, 1, &u, &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_mnist_load(c, ".", 1, NULL, &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_dataset_create(c, NULL, &t, &t, 4, 0, 1), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_dataset_create(c, &ds, NULL, &t, 4, 0, 1), GPUDL_ERR_INVALID_ARG);
    gpudl_dataset_free(c, NULL);
    CHECK_ST(gpudl_dataset_shuffle(c, NULL, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_dataset_num_batches(NULL) == 0);
    CHECK_ST(gpudl_dataset_batch(c, NULL, 0, &u, &u), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_save(c, NULL, "x"), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_load(c, NULL, "x"), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_load_memory(c, NULL, "x", buf, 8), GPUDL_ERR_INVALID_ARG);
    /* timing */
    CHECK_ST(gpudl_timer_create(none, &tm), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_timer_create(c, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_timer_destroy(NULL);
    CHECK_ST(gpudl_timer_start(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_timer_stop(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_timer_elapsed_ms(NULL, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_bench(c, NULL, NULL, NULL, &br), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_device_info_get(c, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_progress_begin(NULL, "x", 1, 1);
    gpudl_progress_update(NULL, 1, 0);
    gpudl_progress_end(NULL, 0);
    /* override, check, custom layers */
    {
        gpudl_ops ops;
        gpudl_check_report rep;
        gpudl_op_timing ot;
        gpudl_layer_desc ld;
        gpudl_dist *d = NULL;
        int64_t one = 1;
        memset(&ld, 0, sizeof ld);
        CHECK_ST(gpudl_ctx_set_ops(none, GPUDL_DEVICE_CPU, NULL), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_ctx_ops(none, GPUDL_DEVICE_CPU, &ops), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_ctx_ops(c, GPUDL_DEVICE_CPU, NULL), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_check_op(none, GPUDL_OP_GEMM, 0, &rep), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_check_op(c, GPUDL_OP_GEMM, 0, NULL), GPUDL_ERR_INVALID_ARG);
        CHECK(gpudl_check_explain(NULL, buf, sizeof buf) != NULL && gpudl_check_explain(&rep, NULL, 0) != NULL);
        CHECK_ST(gpudl_check_layer(c, NULL, 1, &one, &rep), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_check_layer(c, &ld, 1, NULL, &rep), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_check_layer(c, &ld, 1, &one, NULL), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_time_op(none, GPUDL_OP_GEMM, 0, &ot), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_time_op(c, GPUDL_OP_GEMM, 0, NULL), GPUDL_ERR_INVALID_ARG);
        CHECK(gpudl_op_timing_explain(NULL, buf, sizeof buf) != NULL && gpudl_op_timing_explain(&ot, NULL, 0) != NULL);
        CHECK_ST(gpudl_model_add_custom(NULL, &ld), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_model_profile(NULL, 1), GPUDL_ERR_INVALID_ARG);
        CHECK(gpudl_model_profile_report(NULL, buf, sizeof buf) == buf && gpudl_model_profile_report(NULL, NULL, 0) == NULL);
        /* dist */
        CHECK_ST(gpudl_dist_create(NULL, NULL), GPUDL_ERR_INVALID_ARG);
        gpudl_dist_destroy(NULL);
        CHECK(gpudl_dist_rank(NULL) == 0 && gpudl_dist_size(NULL) == 1 && gpudl_dist_local_rank(NULL) == 0);
        CHECK_ST(gpudl_dist_allreduce(NULL, c, &t, 0), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_dist_broadcast(NULL, c, &t, 0), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_model_set_dist(NULL, NULL), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_dataset_shard(c, NULL, 0, 1), GPUDL_ERR_INVALID_ARG);
        CHECK_OK(gpudl_dist_create(NULL, &d));   /* no launcher: one rank, which does nothing */
        CHECK(d && gpudl_dist_size(d) == 1);
        CHECK_ST(gpudl_dist_allreduce(d, none, &t, 0), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_dist_allreduce(d, c, NULL, 0), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_dist_broadcast(d, c, NULL, 0), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_dist_broadcast(d, c, &t, 1), GPUDL_ERR_INVALID_ARG);   /* no rank 1 */
        gpudl_dist_destroy(d);
    }
    gpudl_tensor_free(c, &t);
}

/* Misuse that is not NULL: each an error whose message names both sides. */
static void test_misuse_messages(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, v[1] = {3};
    gpudl_tensor a, b, h, copy;
    GPUDL_CHECK(gpudl_tensor_create(c, &a, GPUDL_F32, 2, s23));
    GPUDL_CHECK(gpudl_tensor_create(c, &b, GPUDL_F32, 2, s32));
    GPUDL_CHECK(gpudl_tensor_create(c, &h, GPUDL_F16, 2, s23));
    CHECK_ST(gpudl_add(c, &a, &a, &h), GPUDL_ERR_INVALID_ARG);                                 /* dtype mismatch */
    CHECKF(strstr(gpudl_ctx_last_error(c), "f32[2,3]") && strstr(gpudl_ctx_last_error(c), "f16[2,3]"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_add(c, &a, &a, &b), GPUDL_ERR_SHAPE);                                       /* shape mismatch */
    CHECKF(strstr(gpudl_ctx_last_error(c), "f32[2,3]") && strstr(gpudl_ctx_last_error(c), "f32[3,2]"), "%s", gpudl_ctx_last_error(c));
    b.device = GPUDL_DEVICE_CUDA;                                                              /* wrong device */
    CHECK_ST(gpudl_add(c, &a, &a, &b), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(c), "cuda") && strstr(gpudl_ctx_last_error(c), "cpu"), "%s", gpudl_ctx_last_error(c));
    b.device = GPUDL_DEVICE_CPU;
    CHECK_OK(gpudl_model_create(c, &m, 1, v));                                                 /* used before build */
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);
    CHECK(strstr(gpudl_ctx_last_error(c), "not built") != NULL);
    gpudl_model_destroy(m);
    copy = a;                                                                                   /* double free */
    gpudl_tensor_free(c, &a);
    gpudl_tensor_free(c, &copy);
    CHECKF(strstr(gpudl_ctx_last_error(c), "already freed") != NULL, "%s", gpudl_ctx_last_error(c));
    CHECK(copy.data == NULL);
    {   /* a tensor of another context */
        gpudl_ctx *other;
        gpudl_ctx_desc d;
        gpudl_tensor o;
        memset(&d, 0, sizeof d);
        d.device = GPUDL_DEVICE_CPU;
        GPUDL_CHECK(gpudl_ctx_create(&d, &other));
        GPUDL_CHECK(gpudl_tensor_create(other, &o, GPUDL_F32, 2, s23));
        copy = o;
        gpudl_tensor_free(c, &copy);                                                           /* wrong context: not freed */
        CHECK(strstr(gpudl_ctx_last_error(c), "not allocated by this context") != NULL);
        gpudl_tensor_free(other, &o);                                                          /* its own context frees it */
        gpudl_ctx_destroy(other);
    }
    gpudl_tensor_free(c, &b);
    gpudl_tensor_free(c, &h);
}

/* Misuse caught cheaply (issue 35): a model of another context, and calls
   without a context or a model, each refused with a message the program
   can read; *out is NULL after a failed create (device tensors of another
   context or freed: on the emulated device). Before: the other context's
   model was saved, and a NULL context said nothing. */
static void test_misuse_caught(void) {
    gpudl_ctx *c = cpu_ctx(), *other;
    gpudl_ctx_desc d;
    gpudl_model *m, *m2 = (gpudl_model *)&d;   /* not NULL: a failed create must set it */
    gpudl_tensor a, stale, o;
    int64_t s23[2] = {2, 3}, v[1] = {3};
    (void)stale;   /* a stale device tensor: gpu_misuse_caught; a stale host tensor is undefined (the manual) */
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = gpudl_log_quiet;
    GPUDL_CHECK(gpudl_ctx_create(&d, &other));
    GPUDL_CHECK(gpudl_tensor_create(other, &o, GPUDL_F32, 2, s23));
    GPUDL_CHECK(gpudl_tensor_create(c, &a, GPUDL_F32, 2, s23));
    CHECK_OK(gpudl_model_create(other, &m, 1, v));
    CHECK_OK(gpudl_model_add_linear(m, 3, 2));
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_ST(gpudl_model_save(c, m, "build/test/misuse.safetensors"), GPUDL_ERR_INVALID_ARG);   /* another context's model */
    CHECKF(strstr(gpudl_ctx_last_error(c), "belongs to context") != NULL, "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_load(c, m, "build/test/misuse.safetensors"), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_create(NULL, &m2, 1, v), GPUDL_ERR_INVALID_ARG);                        /* no context */
    CHECK(m2 == NULL);
    CHECKF(strstr(gpudl_ctx_last_error(NULL), "gpudl_model_create: the context is NULL") != NULL, "%s", gpudl_ctx_last_error(NULL));
    CHECK_ST(gpudl_tensor_create(NULL, &o, GPUDL_F32, 2, s23), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(NULL), "gpudl_tensor_create: the context is NULL") != NULL, "%s", gpudl_ctx_last_error(NULL));
    CHECK_ST(gpudl_model_forward(NULL, &a, NULL), GPUDL_ERR_INVALID_ARG);                        /* no model */
    CHECKF(strstr(gpudl_ctx_last_error(NULL), "the model is NULL") != NULL, "%s", gpudl_ctx_last_error(NULL));
    gpudl_model_destroy(m);
    gpudl_tensor_free(c, &a);
    gpudl_tensor_free(other, &o);
    gpudl_ctx_destroy(other);
}

/* A step after a failed call of the same step refuses (issue 23: a label
   out of range failed the loss loudly, then backward blamed the wrong call
   and the step updated the weights with zero or stale gradients). */
static gpudl_status failing_backward(gpudl_layer_io *io) {
    (void)io;
    return GPUDL_ERR_UNSUPPORTED;   /* a custom layer whose backward fails */
}
static gpudl_status pass_forward(gpudl_layer_io *io) {
    memcpy(io->y.data, io->x.data, gpudl_tensor_bytes(&io->x));
    return GPUDL_OK;
}
static int fail_backward_now;
static gpudl_status maybe_backward(gpudl_layer_io *io) {
    if (fail_backward_now) return failing_backward(io);
    if (io->dx) memcpy(io->dx->data, io->dy.data, gpudl_tensor_bytes(&io->dy));
    return GPUDL_OK;
}

static void test_step_after_failed_call(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_layer_desc ld;
    gpudl_tensor x, y, bad_y, bad_x, params;
    int64_t v[1] = {4}, xs[2] = {2, 4}, bxs[2] = {2, 5}, ys[1] = {2};
    float *before;
    size_t bytes;
    const char *e;
    CHECK_OK(gpudl_model_create(c, &m, 1, v));
    CHECK_OK(gpudl_model_add_linear(m, 4, 3));
    memset(&ld, 0, sizeof ld);
    ld.name = "flaky";
    ld.forward = pass_forward;
    ld.backward = maybe_backward;
    ld.f32_only = 1;
    CHECK_OK(gpudl_model_add_custom(m, &ld));
    memset(&md, 0, sizeof md);
    md.max_batch = 2;
    CHECK_OK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_SGD;
    od.lr = 0.1f;
    od.momentum = 0.9f;
    CHECK_OK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_tensor_create(c, &x, GPUDL_F32, 2, xs));
    GPUDL_CHECK(gpudl_tensor_create(c, &bad_x, GPUDL_F32, 2, bxs));
    GPUDL_CHECK(gpudl_tensor_create(c, &y, GPUDL_I32, 1, ys));
    GPUDL_CHECK(gpudl_tensor_create(c, &bad_y, GPUDL_I32, 1, ys));
    GPUDL_CHECK(gpudl_tensor_uniform(c, &x, -1.0f, 1.0f));
    GPUDL_CHECK(gpudl_tensor_uniform(c, &bad_x, -1.0f, 1.0f));
    ((int32_t *)y.data)[0] = 1; ((int32_t *)y.data)[1] = 2;
    ((int32_t *)bad_y.data)[0] = 0; ((int32_t *)bad_y.data)[1] = 3;   /* label 3 of 3 classes */
    CHECK_OK(gpudl_model_params(m, &params, NULL));
    bytes = gpudl_tensor_bytes(&params);
    before = (float *)malloc(bytes);
    memcpy(before, params.data, bytes);

    /* a failed loss: backward and step refuse, naming it; the weights stay */
    CHECK_OK(gpudl_model_zero_grad(m));
    CHECK_OK(gpudl_model_forward(m, &x, NULL));
    CHECK_ST(gpudl_model_loss(m, &bad_y), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_INVALID_ARG);
    e = gpudl_ctx_last_error(c);
    CHECKF(strstr(e, "model_backward: refused, because gpudl_model_loss failed") && strstr(e, "outside [0, 3)"), "%s", e);
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);
    e = gpudl_ctx_last_error(c);
    CHECKF(strstr(e, "model_step: refused, because gpudl_model_loss failed") && strstr(e, "nothing was changed"), "%s", e);
    CHECK(memcmp(before, params.data, bytes) == 0 && gpudl_model_step_count(m) == 0);
    /* the loss again with good labels: the step goes on */
    CHECK_OK(gpudl_model_loss(m, &y));
    CHECK_OK(gpudl_model_backward(m));
    CHECK_OK(gpudl_model_step(m));
    CHECK(memcmp(before, params.data, bytes) != 0 && gpudl_model_step_count(m) == 1);
    memcpy(before, params.data, bytes);

    /* a failed forward: loss, backward and step refuse, naming it */
    CHECK_OK(gpudl_model_zero_grad(m));
    CHECK_ST(gpudl_model_forward(m, &bad_x, NULL), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_model_loss(m, &y), GPUDL_ERR_INVALID_ARG);
    e = gpudl_ctx_last_error(c);
    CHECKF(strstr(e, "model_loss: refused, because gpudl_model_forward failed") && strstr(e, "f32[2,5]"), "%s", e);
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(c), "gpudl_model_forward failed"), "%s", gpudl_ctx_last_error(c));
    CHECK(memcmp(before, params.data, bytes) == 0 && gpudl_model_step_count(m) == 1);

    /* a failed backward (a custom layer's): step refuses until zero_grad,
       even after a forward and loss that succeed */
    CHECK_OK(gpudl_model_forward(m, &x, NULL));
    CHECK_OK(gpudl_model_loss(m, &y));
    fail_backward_now = 1;
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_UNSUPPORTED);
    fail_backward_now = 0;
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);
    e = gpudl_ctx_last_error(c);
    CHECKF(strstr(e, "gpudl_model_backward failed") && strstr(e, "zero_grad"), "%s", e);
    CHECK_OK(gpudl_model_forward(m, &x, NULL));
    CHECK_OK(gpudl_model_loss(m, &y));
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_INVALID_ARG);
    CHECK(memcmp(before, params.data, bytes) == 0 && gpudl_model_step_count(m) == 1);
    CHECK_OK(gpudl_model_zero_grad(m));
    CHECK_OK(gpudl_model_forward(m, &x, NULL));
    CHECK_OK(gpudl_model_loss(m, &y));
    CHECK_OK(gpudl_model_backward(m));
    CHECK_OK(gpudl_model_step(m));
    CHECK(gpudl_model_step_count(m) == 2);
    free(before);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &bad_x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &bad_y);
    gpudl_model_destroy(m);
}

/* A destroyed model passed again gets a clear error, not a crash (issue 23:
   forward returned -1 with no message, and the next step read freed memory). */
static void test_destroyed_model(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    gpudl_tensor x;
    int64_t v[1] = {4}, xs[2] = {2, 4};
    char buf[256];
    GPUDL_CHECK(gpudl_tensor_create(c, &x, GPUDL_F32, 2, xs));
    CHECK_OK(gpudl_model_create(c, &m, 1, v));
    CHECK_OK(gpudl_model_add_linear(m, 4, 3));
    CHECK_OK(gpudl_model_build(m, NULL));
    gpudl_model_destroy(m);
    CHECK_ST(gpudl_model_forward(m, &x, NULL), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(c), "model_forward: this model was destroyed"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(c), "model_step: this model was destroyed"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_add_relu(m), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_model_num_params(m) == 0 && gpudl_model_step_count(m) == 0);
    gpudl_model_train(m, 0);
    CHECK(gpudl_model_summary(m, buf, sizeof buf) == buf && buf[0] == 0);
    gpudl_model_destroy(m);   /* twice: refused, said */
    CHECKF(strstr(gpudl_ctx_last_error(c), "model_destroy: this model was destroyed"), "%s", gpudl_ctx_last_error(c));
    gpudl_tensor_free(c, &x);
}

/* What gpudl_ctx_destroy reports: who should have freed what (issue 23: a
   forgotten gpudl_model_destroy read as "13 tensor(s) were never freed"). */
static void leak_log(void *user, gpudl_log_level level, const char *msg) {
    if (level == GPUDL_LOG_WARN) snprintf((char *)user, 512, "%s", msg);
}
static void test_leak_report_names_owners(void) {
    static const unsigned char img[16 + 8] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned char lab[8 + 2] = {0, 0, 8, 1, 0, 0, 0, 2, 0, 1};
    gpudl_ctx *c;
    gpudl_ctx_desc d;
    gpudl_model *m;
    gpudl_dataset ds;
    gpudl_tensor images, labels, mine;
    int64_t v[1] = {4};
    char said[512] = "";
    long long live0 = g_live;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = leak_log;
    d.log_user = said;
    CHECK_OK(gpudl_ctx_create(&d, &c));
    CHECK_OK(gpudl_model_create(c, &m, 1, v));
    CHECK_OK(gpudl_model_add_linear(m, 4, 3));
    CHECK_OK(gpudl_model_build(m, NULL));
    gpudl_ctx_destroy(c);   /* only the model forgotten */
    CHECKF(strstr(said, "1 model was never destroyed (gpudl_model_destroy)") && !strstr(said, "tensor_free"), "%s", said);
    CHECKF(g_live == live0, "the forgotten model's %lld allocations were not freed with its context", g_live - live0);

    said[0] = 0;
    CHECK_OK(gpudl_ctx_create(&d, &c));
    CHECK_OK(gpudl_idx_load_memory(c, "img", img, sizeof img, &images));
    CHECK_OK(gpudl_idx_load_memory(c, "lab", lab, sizeof lab, &labels));
    CHECK_OK(gpudl_dataset_create(c, &ds, &images, &labels, 2, 0.5f, 0.5f));
    CHECK_OK(gpudl_tensor_create(c, &mine, GPUDL_F32, 1, v));
    gpudl_tensor_free(c, &images);
    gpudl_tensor_free(c, &labels);
    gpudl_ctx_destroy(c);   /* a dataset and a tensor of the user's */
    CHECKF(strstr(said, "1 dataset was never freed (gpudl_dataset_free), holding 5 tensors") &&
           strstr(said, "and 1 tensor was never freed (gpudl_tensor_free)") && !strstr(said, "model"), "%s", said);
    t_free(mine.data);   /* ours to clean now (the context is gone) */
    t_free(ds.images.data); t_free(ds.labels.data); t_free(ds.perm.data); t_free(ds.xb.data); t_free(ds.yb.data);
}

/* >>logger ---------------------------------------------------------------- */

typedef struct { int n[5]; char msgs[8][512]; int count; } capture;
static void cap_log(void *user, gpudl_log_level level, const char *msg) {
    capture *c = (capture *)user;
    if (level >= 1 && level <= 4) c->n[level]++;
    if (c->count < 8) snprintf(c->msgs[c->count++], 512, "%s", msg);
}

static void test_logger(void) {
    gpudl_ctx *c;
    gpudl_ctx_desc d;
    capture cap;
    gpudl_tensor t, leak;
    int64_t s[1] = {4}, bad[1] = {0};
    memset(&cap, 0, sizeof cap);
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = cap_log;
    d.log_user = &cap;
    CHECK_OK(gpudl_ctx_create(&d, &c));
    CHECK(cap.count == 0);                                                   /* silent while nothing goes wrong */
    CHECK_ST(gpudl_tensor_create(c, &t, GPUDL_F32, 1, bad), GPUDL_ERR_SHAPE);
    CHECK(cap.n[GPUDL_LOG_ERROR] == 1 && strstr(cap.msgs[0], "dim 0 is 0"));
    CHECK(strcmp(cap.msgs[0], gpudl_ctx_last_error(c)) == 0);                 /* the log line is the recorded error */
    CHECK_ST(gpudl_idx_load(c, "build/test/none.idx", &t), GPUDL_ERR_IO);
    CHECK(cap.n[GPUDL_LOG_ERROR] == 2 && strstr(cap.msgs[1], "none.idx") && strstr(cap.msgs[1], "No such file"));
    CHECK_OK(gpudl_tensor_create(c, &leak, GPUDL_F32, 1, s));                /* never freed: destroy warns */
    gpudl_ctx_destroy(c);
    CHECKF(cap.n[GPUDL_LOG_WARN] == 1 && strstr(cap.msgs[2], "1 tensor was never freed (gpudl_tensor_free)"), "%s", cap.msgs[2]);
    free(leak.data);   /* ours to clean now (the context is gone) */
    g_live--;
}

static const test_case tests[] = {
    {"alloc_failure_at_every_point", test_alloc_failure_at_every_point},
    {"failed_save_keeps_previous", test_failed_save_keeps_previous},
    {"killed_save_keeps_previous", test_killed_save_keeps_previous},
    {"null_arguments", test_null_arguments},
    {"misuse_messages", test_misuse_messages},
    {"misuse_caught", test_misuse_caught},
    {"step_after_failed_call", test_step_after_failed_call},
    {"destroyed_model", test_destroyed_model},
    {"leak_report_names_owners", test_leak_report_names_owners},
    {"logger", test_logger},
};

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--child-save")) return child_save(argv[2]);
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
