/* gpudl tests: status, half, rng, context, tensor (the first sections of
   gpudl.h). Status strings; FP16/BF16 conversions on every 16-bit pattern;
   contexts (defaults, CUDA without a GPU, AUTO's fallback, flush-to-zero, a
   context on the second GPU, sticky CUDA errors in a child process, the
   emulated device's profiles); tensors (lifecycle, fills and the RNG, copies
   and casts), on the CPU and, in the nvcc build, on the GPU against the CPU.
   Part of the core suite: tests/suite_core.c #includes it (see there). */

/* >>status ---------------------------------------------------------------- */

static void test_status_strings(void) {
    int a, b;
    for (a = 0; a >= GPUDL_ERR_DIST; a--) {
        const char *s = gpudl_status_string((gpudl_status)a);
        CHECKF(s && s[0], "status %d has an empty string", a);
        CHECKF(strcmp(s, "unknown gpudl status") != 0, "status %d has no string", a);
        for (b = 0; b > a; b--) CHECKF(strcmp(s, gpudl_status_string((gpudl_status)b)) != 0, "statuses %d and %d share '%s'", a, b, s);
    }
    CHECK(strcmp(gpudl_status_string((gpudl_status)12345), "unknown gpudl status") == 0);
}

#ifndef GPUDL_NO_CUDA
/* Every cuBLAS and cuDNN status the kit can meet has a distinct, non-empty
   name (these are host functions: no GPU needed). */
static void test_library_status_names(void) {
    static const cublasStatus_t cb[] = {CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_ALLOC_FAILED,
        CUBLAS_STATUS_INVALID_VALUE, CUBLAS_STATUS_ARCH_MISMATCH, CUBLAS_STATUS_MAPPING_ERROR, CUBLAS_STATUS_EXECUTION_FAILED,
        CUBLAS_STATUS_INTERNAL_ERROR, CUBLAS_STATUS_NOT_SUPPORTED, CUBLAS_STATUS_LICENSE_ERROR};
    static const cudnnStatus_t cd[] = {CUDNN_STATUS_SUCCESS, CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_ALLOC_FAILED,
        CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_INTERNAL_ERROR, CUDNN_STATUS_EXECUTION_FAILED, CUDNN_STATUS_NOT_SUPPORTED,
        CUDNN_STATUS_ARCH_MISMATCH, CUDNN_STATUS_MAPPING_ERROR};
    size_t i, j;
    for (i = 0; i < sizeof cb / sizeof cb[0]; i++) {
        const char *a = cublasGetStatusName(cb[i]);
        CHECKF(a && a[0], "cuBLAS status %d has no name", (int)cb[i]);
        for (j = 0; j < i; j++) CHECKF(strcmp(a, cublasGetStatusName(cb[j])) != 0, "cuBLAS statuses share '%s'", a);
    }
    for (i = 0; i < sizeof cd / sizeof cd[0]; i++) {
        const char *a = cudnnGetErrorString(cd[i]);
        CHECKF(a && a[0], "cuDNN status %d has no string", (int)cd[i]);
        for (j = 0; j < i; j++) CHECKF(strcmp(a, cudnnGetErrorString(cd[j])) != 0, "cuDNN statuses share '%s'", a);
    }
}

static void test_gpu_library_status_names(void) { test_library_status_names(); }
#else
static void test_gpu_library_status_names(void) { SKIP("CPU-only build (GPUDL_NO_CUDA)"); }
#endif

/* >>half ------------------------------------------------------------------ */

static float f_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void test_f16_known_values(void) {
    struct { float f; uint16_t h; } v[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.5f, 0x3800},
        {65504.0f, 0x7bff}, {-65504.0f, 0xfbff}, {65519.0f, 0x7bff}, {65520.0f, 0x7c00}, {1e6f, 0x7c00},
        {0.1f, 0x2e66}, {3.14159265f, 0x4248},
        {6.103515625e-05f, 0x0400},          /* smallest normal 2^-14 */
        {5.9604644775390625e-08f, 0x0001},   /* smallest subnormal 2^-24 */
        {6.097555160522461e-05f, 0x03ff},    /* largest subnormal */
        {2.98023223876953125e-08f, 0x0000},  /* 2^-25: tie, rounds to even (0) */
        {4.470348358154297e-08f, 0x0001},    /* 1.5 * 2^-25: rounds up */
        {8.940696716308594e-08f, 0x0002},    /* 1.5 * 2^-24: tie, rounds to even (2) */
        {1.00048828125f, 0x3c00},            /* 1 + 2^-11: tie, rounds to even */
        {1.00146484375f, 0x3c02},            /* 1 + 3*2^-11: tie, rounds to even (up) */
    };
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint16_t h = gpudl_f32_to_f16(v[i].f);
        CHECKF(h == v[i].h, "f16(%.9g) = 0x%04x, want 0x%04x", (double)v[i].f, h, v[i].h);
    }
    CHECK(gpudl_f32_to_f16(f_from_bits(0x7f800000u)) == 0x7c00);
    CHECK(gpudl_f32_to_f16(f_from_bits(0xff800000u)) == 0xfc00);
    CHECK((gpudl_f32_to_f16(f_from_bits(0x7fc00000u)) & 0x7fff) > 0x7c00);   /* NaN stays NaN */
    CHECK((gpudl_f32_to_f16(f_from_bits(0x7f800001u)) & 0x7fff) > 0x7c00);   /* signalling NaN too */
    CHECK(gpudl_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(gpudl_f16_to_f32(0x0001) == 5.9604644775390625e-08f);
    CHECK(gpudl_f16_to_f32(0x8001) == -5.9604644775390625e-08f);
    CHECK(gpudl_f16_to_f32(0x03ff) == 6.097555160522461e-05f);
    CHECK(isinf(gpudl_f16_to_f32(0x7c00)) && gpudl_f16_to_f32(0xfc00) < 0);
    CHECK(is_nan(gpudl_f16_to_f32(0x7e00)));
}

/* Every half value survives f16 -> f32 -> f16; every float rounds to its
   nearest half, ties to even (checked against the neighbours in double). */
static void test_f16_roundtrip_and_rounding(void) {
    uint32_t i;
    int bad = 0;
    for (i = 0; i < 65536; i++) {
        float f = gpudl_f16_to_f32((uint16_t)i);
        uint16_t back = gpudl_f32_to_f16(f);
        if (is_nan(f)) { if ((back & 0x7fff) <= 0x7c00) bad++; }
        else if (back != i) bad++;
    }
    CHECKF(bad == 0, "%d half values do not round-trip", bad);
    bad = 0;
    for (i = 0; i < 2000000; i++) {
        uint32_t bits = (uint32_t)(gpudl_rng_bits(99, i) >> 32);
        float x = f_from_bits(bits);
        uint16_t h;
        double ax, got, up, dn;
        if (is_nan(x)) continue;
        if (i & 1) x = x / (float)(1 << 20);   /* spread over the half range too */
        if (i & 2) x = (float)(((int32_t)bits) % 70000) + x * 1e-3f;
        if (!(fabsf(x) < 65520.0f)) continue;
        h = gpudl_f32_to_f16(x);
        ax = fabs((double)x);
        got = fabs((double)gpudl_f16_to_f32(h));
        up = (h & 0x7fff) < 0x7bff ? fabs((double)gpudl_f16_to_f32((uint16_t)(h + 1))) : 1e300;
        dn = (h & 0x7fff) > 0 ? fabs((double)gpudl_f16_to_f32((uint16_t)(h - 1))) : -1e300;
        if (fabs(got - ax) > fabs(up - ax) || fabs(got - ax) > fabs(dn - ax)) bad++;
        else if ((fabs(got - ax) == fabs(up - ax) || fabs(got - ax) == fabs(dn - ax)) && (h & 1) && ax != got) bad++;
        if (bad == 1 && g_failed_checks == 0) { CHECKF(0, "f16 rounding of %.9g gave 0x%04x", (double)x, h); }
    }
    CHECKF(bad == 0, "%d floats round to the wrong half", bad);
}

/* The CPU backend's bulk conversions (gpudl__convert, branch-free so that they
   vectorise) give the bits of the scalar functions above: every FP16
   pattern, an FP32 sample every 61st pattern (with its NaNs, Infs and
   subnormals), and four floats either side of every FP16 rounding
   midpoint (all the ties); with and without flush-to-zero. */
static void test_half_bulk_conversions(void) {
    const int64_t chunk = 1 << 20;
    float *f = (float *)malloc(sizeof(float) * (size_t)chunk), *g = (float *)malloc(sizeof(float) * (size_t)chunk);
    uint16_t *h = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)chunk), *b = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)chunk);
    int64_t bad = 0, n, k, i;
    uint64_t u = 0;
    int ftz, pass;
    if (!f || !g || !h || !b) { free(f); free(g); free(h); free(b); CHECKF(0, "out of memory"); return; }
    for (ftz = 0; ftz <= 1; ftz++) {
        if (ftz && gpudl_cpu_flush_denormals(cpu_ctx(), 1) != GPUDL_OK) break;   /* not x86-64: the default mode only */
        for (i = 0; i < 65536; i++) h[i] = (uint16_t)i;
        gpudl__convert(f, GPUDL_F32, h, GPUDL_F16, 65536);
        gpudl__convert(g, GPUDL_F32, h, GPUDL_BF16, 65536);
        for (i = 0; i < 65536; i++) {
            bad += gpudl__f32_bits(f[i]) != gpudl__f32_bits(gpudl_f16_to_f32((uint16_t)i));
            bad += gpudl__f32_bits(g[i]) != gpudl__f32_bits(gpudl_bf16_to_f32((uint16_t)i));
        }
        for (pass = 0; pass < 2; pass++)
            for (u = 0, n = 0; pass == 0 ? u <= 0xffffffffull : u < 65536 * 8;) {
                for (n = 0; n < chunk && (pass == 0 ? u <= 0xffffffffull : u < 65536 * 8); n++) {
                    if (pass == 0) { f[n] = gpudl__bits_f32((uint32_t)u); u += 61; continue; }
                    /* the midpoint between FP16 values k and k + 1, +-4 float ulps */
                    k = (int64_t)(u >> 3);
                    if ((k & 0x7fff) < 0x400)   /* subnormal: (k + 1/2) 2^-24, exact in a float */
                        f[n] = gpudl__bits_f32(gpudl__f32_bits(((float)(k & 0x3ff) + 0.5f) * 5.9604644775390625e-08f) +
                                               (uint32_t)(u & 7) - 4u);
                    else
                        f[n] = gpudl__bits_f32(gpudl__f32_bits(gpudl_f16_to_f32((uint16_t)k)) + 0x1000u + (uint32_t)(u & 7) - 4u);
                    u++;
                }
                gpudl__convert(h, GPUDL_F16, f, GPUDL_F32, n);
                gpudl__convert(b, GPUDL_BF16, f, GPUDL_F32, n);
                for (i = 0; i < n; i++) bad += (h[i] != gpudl_f32_to_f16(f[i])) + (b[i] != gpudl_f32_to_bf16(f[i]));
            }
        if (ftz) gpudl_cpu_flush_denormals(cpu_ctx(), 0);
    }
    CHECKF(bad == 0, "%lld bulk conversions differ from the scalar ones", (long long)bad);
    free(f); free(g); free(h); free(b);
}

static void test_bf16_values_and_rounding(void) {
    uint32_t i;
    int bad = 0;
    CHECK(gpudl_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(gpudl_f32_to_bf16(-2.0f) == 0xc000);
    CHECK(gpudl_f32_to_bf16(f_from_bits(0x3f808000u)) == 0x3f80);   /* tie -> even */
    CHECK(gpudl_f32_to_bf16(f_from_bits(0x3f818000u)) == 0x3f82);   /* tie -> even (up) */
    CHECK(gpudl_f32_to_bf16(f_from_bits(0x3f808001u)) == 0x3f81);
    CHECK(gpudl_f32_to_bf16(f_from_bits(0x7f7fffffu)) == 0x7f80);   /* FLT_MAX rounds to Inf */
    CHECK(gpudl_f32_to_bf16(f_from_bits(0x00000001u)) == 0x0000);   /* tiny subnormal */
    CHECK(gpudl_f32_to_bf16(f_from_bits(0x00018000u)) == 0x0002);   /* subnormal tie -> even */
    CHECK(gpudl_f32_to_bf16(f_from_bits(0xff800000u)) == 0xff80);
    CHECK(is_nan(gpudl_bf16_to_f32(gpudl_f32_to_bf16(f_from_bits(0x7f800001u)))));
    CHECK(is_nan(gpudl_bf16_to_f32(gpudl_f32_to_bf16(f_from_bits(0xffc00000u)))));
    for (i = 0; i < 65536; i++) {
        float f = gpudl_bf16_to_f32((uint16_t)i);
        uint16_t back = gpudl_f32_to_bf16(f);
        if (is_nan(f) ? !is_nan(gpudl_bf16_to_f32(back)) : back != i) bad++;
    }
    CHECKF(bad == 0, "%d bf16 values do not round-trip", bad);
    bad = 0;
    for (i = 0; i < 1000000; i++) {
        uint32_t bits = (uint32_t)(gpudl_rng_bits(7, i) >> 32);
        float x = f_from_bits(bits);
        uint16_t b;
        double ax, got, up, dn;
        if (is_nan(x) || isinf(x) || (bits & 0x7fffffffu) >= 0x7f7f8000u) continue;
        b = gpudl_f32_to_bf16(x);
        ax = fabs((double)x);
        got = fabs((double)gpudl_bf16_to_f32(b));
        up = fabs((double)gpudl_bf16_to_f32((uint16_t)(b + 1)));
        dn = (b & 0x7fff) ? fabs((double)gpudl_bf16_to_f32((uint16_t)(b - 1))) : -1e300;
        if (fabs(got - ax) > fabs(up - ax) || fabs(got - ax) > fabs(dn - ax)) bad++;
        else if ((fabs(got - ax) == fabs(up - ax) || fabs(got - ax) == fabs(dn - ax)) && (b & 1) && ax != got) bad++;
    }
    CHECKF(bad == 0, "%d floats round to the wrong bf16", bad);
}

/* >>context --------------------------------------------------------------- */

typedef struct { int n[5]; char last[1024]; } log_capture;

static void capture_log(void *user, gpudl_log_level level, const char *msg) {
    log_capture *c = (log_capture *)user;
    if (level >= 1 && level <= 4) c->n[level]++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

static void test_ctx_defaults(void) {
    gpudl_ctx *ctx = NULL;
    gpudl_ctx_desc d;
    FILE *tmp;
    char said[2048];
    int saved;
    CHECK_OK(gpudl_ctx_create(NULL, &ctx));
    CHECK(ctx != NULL);
    CHECK(gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU || gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA);
    CHECK(gpudl_ctx_math_mode(ctx) == GPUDL_MATH_FP32);
    CHECK(strcmp(gpudl_ctx_last_error(ctx), "") == 0);
    CHECK_OK(gpudl_ctx_set_math_mode(ctx, GPUDL_MATH_TF32));
    CHECK(gpudl_ctx_math_mode(ctx) == GPUDL_MATH_TF32);
    /* without a logger, an error's message reaches stderr (a GPUDL_CHECK that
       prints only the status leaves the user something to go on) */
    saved = stderr_capture(&tmp);
    CHECK_ST(gpudl_ctx_set_math_mode(ctx, (gpudl_math_mode)7), GPUDL_ERR_INVALID_ARG);
    stderr_release(saved, tmp, said, sizeof said);
    CHECKF(strstr(said, "gpudl error:") && strstr(said, "math mode 7"), "stderr got '%s'", said);
    CHECK_OK(gpudl_ctx_sync(ctx));
    gpudl_ctx_destroy(ctx);
    gpudl_ctx_destroy(NULL);
    CHECK_ST(gpudl_ctx_create(NULL, NULL), GPUDL_ERR_INVALID_ARG);
    memset(&d, 0, sizeof d);
    d.device = (gpudl_device)9;
    ctx = (gpudl_ctx *)&d;
    saved = stderr_capture(&tmp);   /* no context yet: the message still reaches stderr */
    CHECK_ST(gpudl_ctx_create(&d, &ctx), GPUDL_ERR_INVALID_ARG);
    stderr_release(saved, tmp, said, sizeof said);
    CHECKF(strstr(said, "desc->device must be"), "stderr got '%s'", said);
    CHECK(ctx == NULL);
    d.log = gpudl_log_quiet;   /* and a quiet logger silences it */
    saved = stderr_capture(&tmp);
    CHECK_ST(gpudl_ctx_create(&d, &ctx), GPUDL_ERR_INVALID_ARG);
    stderr_release(saved, tmp, said, sizeof said);
    CHECKF(said[0] == 0, "stderr got '%s'", said);
    CHECK_ST(gpudl_ctx_sync(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_ctx_last_error(NULL)[0] != 0);
}

/* CUDA requested on a machine (or build) without a usable GPU: a status and
   a message that says which of the three cases it is. */
static void test_ctx_cuda_request(void) {
    gpudl_ctx *ctx = NULL;
    gpudl_ctx_desc d;
    log_capture cap;
    gpudl_status s;
    memset(&d, 0, sizeof d);
    memset(&cap, 0, sizeof cap);
    d.device = GPUDL_DEVICE_CUDA;
    d.log = capture_log;
    d.log_user = &cap;
    s = gpudl_ctx_create(&d, &ctx);
    if (s == GPUDL_OK) { gpudl_ctx_destroy(ctx); SKIP("a usable GPU is present; the no-GPU message cannot be shown"); }
    CHECK_ST(s, GPUDL_ERR_NO_DEVICE);
    CHECK(ctx == NULL);
    CHECKF(cap.n[GPUDL_LOG_ERROR] == 1, "want one error log, got %d", cap.n[GPUDL_LOG_ERROR]);
#ifdef GPUDL_NO_CUDA
    CHECKF(strstr(cap.last, "GPUDL_NO_CUDA") != NULL, "message: %s", cap.last);
#else
    CHECKF(strstr(cap.last, "no NVIDIA driver") || strstr(cap.last, "too old") || strstr(cap.last, "no CUDA device")
           || strstr(cap.last, "has no code for"), "message does not name the case: %s", cap.last);
#endif
}

/* AUTO without a GPU falls back to the CPU and says why, once, at INFO. */
static void test_ctx_auto_fallback(void) {
    gpudl_ctx *ctx = NULL;
    gpudl_ctx_desc d;
    log_capture cap;
    memset(&d, 0, sizeof d);
    memset(&cap, 0, sizeof cap);
    d.log = capture_log;
    d.log_user = &cap;
    CHECK_OK(gpudl_ctx_create(&d, &ctx));
    if (gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA) { gpudl_ctx_destroy(ctx); SKIP("a usable GPU is present: AUTO chose it"); }
    CHECKF(cap.n[GPUDL_LOG_INFO] == 1 && cap.n[GPUDL_LOG_ERROR] == 0, "info %d error %d", cap.n[GPUDL_LOG_INFO], cap.n[GPUDL_LOG_ERROR]);
    CHECKF(strstr(cap.last, "using the CPU") != NULL, "message: %s", cap.last);
    gpudl_ctx_destroy(ctx);
}

/* gpudl_cpu_flush_denormals: a threaded product of subnormal inputs is 0
   with the flush on (denormals-are-zero) and not 0 with it off. */
static void test_cpu_flush_denormals(void) {
#if defined(__x86_64__) || defined(_M_X64) || (defined(__aarch64__) && defined(__GNUC__))
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor A = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 100, 100, 0), B = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 100, 100, 0);
    gpudl_tensor C = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 100, 100, 0);
    int on, i, zeros;
    CHECK_OK(gpudl_tensor_fill(ctx, &A, 1e-39f));   /* subnormal */
    CHECK_OK(gpudl_tensor_fill(ctx, &B, 1.0f));
    for (on = 1; on >= 0; on--) {
        CHECK_OK(gpudl_cpu_flush_denormals(ctx, on));
        CHECK_OK(gpudl_matmul(ctx, &C, &A, &B, 0, 0, 1.0f, 0.0f));
        for (i = 0, zeros = 0; i < 100 * 100; i++) zeros += ((const float *)C.data)[i] == 0.0f;
        CHECKF(on ? zeros == 100 * 100 : zeros == 0, "flush %d: %d of 10000 results are 0 (C[0] = %g)", on, zeros,
               (double)((const float *)C.data)[0]);
    }
    CHECK_ST(gpudl_cpu_flush_denormals(NULL, 1), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(ctx, &A); gpudl_tensor_free(ctx, &B); gpudl_tensor_free(ctx, &C);
#else
    SKIP("flush-to-zero control is known for x86-64 and aarch64 only");
#endif
}

#ifndef GPUDL_NO_CUDA
int test_k_oob_write(void *stream, float *buf, int n);        /* tests/gpu_faults.cu */
int test_k_illegal_address(void *stream);

/* Run in a child process (a fresh CUDA context): a kernel writes to an
   illegal address; the error is sticky, so gpudl must report it as fatal,
   say the process must restart, and fail every later call at once. */
static int child_sticky_error(void) {
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_tensor t;
    int64_t n = 16;
    gpudl_status s;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) return 3;
    if (gpudl_tensor_create(ctx, &t, GPUDL_F32, 1, &n) != GPUDL_OK) return 4;
    (void)test_k_illegal_address(gpudl_ctx_stream(ctx));
    s = gpudl_ctx_sync(ctx);
    printf("    expected (a fault provoked on purpose): sync -> %s: %s\n", gpudl_status_string(s), gpudl_ctx_last_error(ctx));
    if (s != GPUDL_ERR_CUDA_FATAL || !strstr(gpudl_ctx_last_error(ctx), "restart the process")) return 5;
    if (gpudl_tensor_fill(ctx, &t, 1.0f) != GPUDL_ERR_CUDA_FATAL) return 6;    /* later calls: the same status, no hang */
    if (gpudl_matmul(ctx, &t, &t, &t, 0, 0, 1, 0) != GPUDL_ERR_CUDA_FATAL) return 7;
    if (gpudl_ctx_sync(ctx) != GPUDL_ERR_CUDA_FATAL) return 8;
    gpudl_ctx_destroy(ctx);                                                      /* must not hang either */
    return 0;
}

/* A fault that a library call meets first: the program synchronised the
   device itself, so the sticky error is there but gpudl has not looked.
   cuBLAS (or cuDNN) then fails; gpudl must see the sticky error behind it
   and call the context fatal, not report an ordinary cuBLAS error. */
static int child_sticky_library(void) {
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_tensor a, x, w, y;
    int64_t n[2] = {8, 8}, xs[4] = {1, 1, 5, 5}, ws[4] = {1, 1, 3, 3}, ys[4] = {1, 1, 3, 3};
    gpudl_status s;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) return 3;
    if (gpudl_tensor_create(ctx, &a, GPUDL_F32, 2, n) != GPUDL_OK || gpudl_tensor_fill(ctx, &a, 1.0f) != GPUDL_OK) return 4;
    if (gpudl_tensor_create(ctx, &x, GPUDL_F32, 4, xs) != GPUDL_OK || gpudl_tensor_create(ctx, &w, GPUDL_F32, 4, ws) != GPUDL_OK ||
        gpudl_tensor_create(ctx, &y, GPUDL_F32, 4, ys) != GPUDL_OK) return 4;
    (void)test_k_illegal_address(gpudl_ctx_stream(ctx));
    (void)cudaDeviceSynchronize();   /* the program's own wait: the fault has happened */
    s = gpudl_matmul(ctx, &a, &a, &a, 0, 0, 1, 0);
    printf("    expected (a fault provoked on purpose): matmul after it -> %s: %s\n", gpudl_status_string(s), gpudl_ctx_last_error(ctx));
    if (s != GPUDL_OK && s != GPUDL_ERR_CUDA_FATAL) return 5;   /* OK: the library did not look; else it must be fatal */
    s = gpudl_conv2d_forward(ctx, &y, &x, &w, NULL, NULL);
    if (s != GPUDL_OK && s != GPUDL_ERR_CUDA_FATAL) return 6;
    if (gpudl_ctx_sync(ctx) != GPUDL_ERR_CUDA_FATAL) return 7;
    gpudl_ctx_destroy(ctx);
    return 0;
}

/* The control case for compute-sanitizer: an out-of-bounds write it must flag. */
static int child_control_oob(void) {
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_tensor t;
    int64_t n = 64;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) return 3;
    if (gpudl_tensor_create(ctx, &t, GPUDL_F32, 1, &n) != GPUDL_OK) return 4;
    (void)test_k_oob_write(gpudl_ctx_stream(ctx), (float *)t.data, 64);
    (void)gpudl_ctx_sync(ctx);
    gpudl_tensor_free(ctx, &t);
    gpudl_ctx_destroy(ctx);
    return 0;
}
#endif

#ifndef GPUDL_NO_CUDA
typedef struct { gpudl_ctx *ctx; gpudl_status s; double err; } device_job;

/* A matmul on the context, checked against the CPU. */
static void matmul_on(device_job *j) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor a = host_rand(GPUDL_F32, 2, 33, 17, 0), b = host_rand(GPUDL_F32, 2, 17, 9, 0);
    gpudl_tensor r = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 33, 9, 0), da, db, dr, back;
    da = to_dev(j->ctx, &a); db = to_dev(j->ctx, &b);
    GPUDL_CHECK(gpudl_tensor_create_on(j->ctx, &dr, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, r.shape));
    GPUDL_CHECK(gpudl_matmul(c, &r, &a, &b, 0, 0, 1, 0));
    j->s = gpudl_matmul(j->ctx, &dr, &da, &db, 0, 0, 1, 0);
    if (j->s == GPUDL_OK) j->s = gpudl_ctx_sync(j->ctx);
    if (j->s == GPUDL_OK) {
        back = to_host(j->ctx, &dr);
        j->err = max_rel(&back, &r, 1.0);
        gpudl_tensor_free(c, &back);
    }
    gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &r);
    gpudl_tensor_free(j->ctx, &da); gpudl_tensor_free(j->ctx, &db); gpudl_tensor_free(j->ctx, &dr);
}

#if !defined(_WIN32)
#include <pthread.h>
static void *matmul_thread(void *p) { matmul_on((device_job *)p); return NULL; }
#endif
#endif

/* A context on the second GPU keeps working there when the program (or
   another thread, whose current device is the first GPU) has another device
   current: cudaSetDevice is per host thread. */
static void test_gpu_context_keeps_its_device(void) {
#if defined(GPUDL_NO_CUDA) || defined(_WIN32)
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    device_job j;
    pthread_t th;
    int count = 0;
    NEED_GPU(g);
    (void)g;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) SKIP("one CUDA device (this needs two)");
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    d.cuda_device = 1;
    GPUDL_CHECK(gpudl_ctx_create(&d, &ctx));
    CHECK(cudaSetDevice(0) == cudaSuccess);   /* the program moves on to the first GPU */
    j.ctx = ctx; j.s = GPUDL_OK; j.err = 1;
    matmul_on(&j);
    CHECKF(j.s == GPUDL_OK && j.err < 1e-5, "a context on device 1, device 0 current: %s, error %g (%s)",
           gpudl_status_string(j.s), j.err, gpudl_ctx_last_error(ctx));
    j.s = GPUDL_OK; j.err = 1;
    CHECK(pthread_create(&th, NULL, matmul_thread, &j) == 0);   /* a thread whose current device is 0 */
    pthread_join(th, NULL);
    CHECKF(j.s == GPUDL_OK && j.err < 1e-5, "from another thread: %s, error %g (%s)", gpudl_status_string(j.s), j.err,
           gpudl_ctx_last_error(ctx));
    gpudl_ctx_destroy(ctx);
    CHECK(cudaSetDevice(0) == cudaSuccess);
#endif
}

#ifdef __CUEMU__
#include <cuemu.h>

static char g_profile_log[1024];
static void profile_log(void *user, gpudl_log_level level, const char *msg) {
    (void)user;
    if (level == GPUDL_LOG_ERROR) snprintf(g_profile_log, sizeof g_profile_log, "%s", msg);
}
#endif

/* What a user sees on other machines, on the emulated device's profiles
   (make test-emu runs this under each): no GPU (GPUDL_EMU_DEVICE=none), a
   GPU the kernels were not built for (7.0), a GPU with little memory (9.0:1G). */
static void test_emu_profile(void) {
#if !defined(__CUEMU__)
    SKIP("runs on the emulated device's profiles (make test-emu)");
#else
    const char *spec = cuemu_device_spec();
    gpudl_ctx *ctx = NULL;
    gpudl_ctx_desc d;
    char msg[600] = "";
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    d.log = profile_log;
    g_profile_log[0] = 0;
    if (!strcmp(spec, "none")) {
        CHECK_ST(gpudl_ctx_create(&d, &ctx), GPUDL_ERR_NO_DEVICE);
        CHECKF(strstr(g_profile_log, "sees no CUDA device") != NULL, "message: %s", g_profile_log);
        d.device = GPUDL_DEVICE_AUTO;
        CHECK_OK(gpudl_ctx_create(&d, &ctx));
        CHECK(ctx && gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU);   /* AUTO falls back to the CPU */
        if (ctx) gpudl_ctx_destroy(ctx);
    } else if (!strncmp(spec, "7.0", 3)) {
        CHECK_ST(gpudl_ctx_create(&d, &ctx), GPUDL_ERR_NO_DEVICE);
        /* names the GPU's architecture, the ones the kernels were built for, and the fix */
        CHECKF(strstr(g_profile_log, "sm_70") && strstr(g_profile_log, "sm_80 sm_90") && strstr(g_profile_log, "-gencode"),
               "message: %s", g_profile_log);
        d.device = GPUDL_DEVICE_AUTO;
        CHECK_OK(gpudl_ctx_create(&d, &ctx));
        CHECK(ctx && gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU);
        if (ctx) gpudl_ctx_destroy(ctx);
    } else if (!strcmp(spec, "9.0:1G")) {
        gpudl_tensor big, small;
        int64_t n = (int64_t)1 << 28, m = 1 << 20;   /* 1 GiB of floats: more than the device has free */
        CHECK_OK(gpudl_ctx_create(&d, &ctx));
        if (!ctx) return;
        CHECK_ST(gpudl_tensor_create(ctx, &big, GPUDL_F32, 1, &n), GPUDL_ERR_OOM);
        snprintf(msg, sizeof msg, "%s", gpudl_ctx_last_error(ctx));
        CHECKF(strstr(msg, "cudaErrorMemoryAllocation") && strstr(msg, "free on the device"), "message: %s", msg);
        CHECK_OK(gpudl_tensor_create(ctx, &small, GPUDL_F32, 1, &m));   /* recovered: the context goes on */
        CHECK_OK(gpudl_tensor_fill(ctx, &small, 2.0f));
        CHECK_OK(gpudl_ctx_sync(ctx));
        gpudl_tensor_free(ctx, &small);
        gpudl_ctx_destroy(ctx);
    } else {
        SKIP("run it under GPUDL_EMU_DEVICE=none, 7.0:16G or 9.0:1G (now %s)", spec);
    }
#endif
}

static const char *g_argv0;

/* A device tensor belongs to its context (issue 35): a copy of the struct
   kept after gpudl_tensor_free, and a tensor of another context, are
   refused by name before any launch (before: the freed memory was used, and
   another context's device memory accepted). */
static void test_gpu_misuse_caught(void) {
    gpudl_ctx *other = NULL;
    gpudl_ctx_desc d;
    gpudl_tensor a, stale, o;
    int64_t s23[2] = {2, 3};
    NEED_GPU(g);
    GPUDL_CHECK(gpudl_tensor_create(g, &a, GPUDL_F32, 2, s23));
    stale = a;
    gpudl_tensor_free(g, &a);
    CHECK_ST(gpudl_add(g, &stale, &stale, &stale), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(g), "allocations") && strstr(gpudl_ctx_last_error(g), "freed already"), "%s",
           gpudl_ctx_last_error(g));
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    d.log = gpudl_log_quiet;
    if (gpudl_ctx_create(&d, &other) != GPUDL_OK) SKIP("a second CUDA context could not be made");
    GPUDL_CHECK(gpudl_tensor_create(other, &o, GPUDL_F32, 2, s23));
    GPUDL_CHECK(gpudl_tensor_create(g, &a, GPUDL_F32, 2, s23));
    CHECK_ST(gpudl_add(g, &a, &a, &o), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(g), "created by another context") != NULL, "%s", gpudl_ctx_last_error(g));
    {   /* gpudl_tensor_copy moves data between contexts, after the other one's sync */
        float v[6];
        int i;
        GPUDL_CHECK(gpudl_tensor_fill(other, &o, 2.5f));
        GPUDL_CHECK(gpudl_ctx_sync(other));
        CHECK_OK(gpudl_tensor_copy(g, &a, &o));
        GPUDL_CHECK(gpudl_tensor_download(g, &a, v, sizeof v));
        for (i = 0; i < 6; i++) CHECK(v[i] == 2.5f);
    }
    gpudl_tensor_free(g, &a);
    gpudl_tensor_free(other, &o);
    gpudl_ctx_destroy(other);
}

static void test_gpu_sticky_error_is_fatal(void) {
#if defined(GPUDL_NO_CUDA) || defined(_WIN32)
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    char cmd[1024];
    int rc;
    NEED_GPU(g);
    (void)g;
    snprintf(cmd, sizeof cmd, "'%s' --child-sticky-error", g_argv0);
    rc = system(cmd);
    CHECKF(rc == 0, "the child's sticky-error scenario failed (exit %d): see its output above", rc);
    snprintf(cmd, sizeof cmd, "'%s' --child-sticky-library", g_argv0);
    rc = system(cmd);
    CHECKF(rc == 0, "the child's sticky-error-behind-a-library scenario failed (exit %d): see its output above", rc);
#endif
}

/* >>tensor ---------------------------------------------------------------- */

static void test_tensor_lifecycle(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor t, v;
    int64_t shape[4] = {2, 3, 4, 5}, bad[2] = {3, 0}, rs[2] = {-1, 20}, rs_bad[2] = {7, -1};
    char buf[96];
    CHECK_OK(gpudl_tensor_create(ctx, &t, GPUDL_F32, 4, shape));
    CHECK(t.owner == 1 && t.device == GPUDL_DEVICE_CPU && gpudl_tensor_numel(&t) == 120 && gpudl_tensor_bytes(&t) == 480);
    CHECK(strcmp(gpudl_tensor_describe(&t, buf, sizeof buf), "f32[2,3,4,5] cpu") == 0);
    CHECK_OK(gpudl_tensor_reshape(&v, &t, 2, rs));
    CHECK(v.ndim == 2 && v.shape[0] == 6 && v.shape[1] == 20 && v.data == t.data && v.owner == 0);
    CHECK_ST(gpudl_tensor_reshape(&v, &t, 2, rs_bad), GPUDL_ERR_SHAPE);
    gpudl_tensor_free(ctx, &v);           /* a view: frees nothing */
    gpudl_tensor_free(ctx, &t);
    CHECK(t.data == NULL && t.owner == 0);
    gpudl_tensor_free(ctx, &t);           /* second free is harmless */
    CHECK_ST(gpudl_tensor_create(ctx, &t, GPUDL_F32, 2, bad), GPUDL_ERR_SHAPE);
    CHECK(t.data == NULL);
    CHECK_ST(gpudl_tensor_create(ctx, &t, GPUDL_F32, 5, shape), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_tensor_create(ctx, &t, GPUDL_F32, 0, shape), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_tensor_create(ctx, &t, (gpudl_dtype)42, 1, shape), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_create(ctx, NULL, GPUDL_F32, 1, shape), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_tensor_create(NULL, &t, GPUDL_F32, 1, shape), GPUDL_ERR_INVALID_ARG);
    {   /* element count that overflows int64 */
        int64_t huge[4] = {INT64_C(1) << 40, INT64_C(1) << 40, 1, 1};
        CHECK_ST(gpudl_tensor_create(ctx, &t, GPUDL_F32, 2, huge), GPUDL_ERR_SHAPE);
    }
    {   /* a host allocation that cannot succeed */
        int64_t big[1] = {INT64_C(1) << 58};
        CHECK_ST(gpudl_tensor_create(ctx, &t, GPUDL_U8, 1, big), GPUDL_ERR_OOM);
        CHECK(strstr(gpudl_ctx_last_error(ctx), "allocation") != NULL);
    }
    {   /* wrap user memory */
        float mem[6] = {1, 2, 3, 4, 5, 6};
        int64_t s2[2] = {2, 3};
        float x = 0;
        CHECK_OK(gpudl_tensor_wrap(&t, mem, GPUDL_DEVICE_CPU, GPUDL_F32, 2, s2));
        CHECK_OK(gpudl_tensor_item(ctx, &t, 4, &x));
        CHECK(x == 5.0f);
        CHECK_ST(gpudl_tensor_item(ctx, &t, 6, &x), GPUDL_ERR_SHAPE);
        gpudl_tensor_free(ctx, &t);
        CHECK(mem[0] == 1.0f);
    }
}

static void test_fill_and_random(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    int d;
    for (d = 0; d < 3; d++) {
        gpudl_tensor t = make(ctx, GPUDL_DEVICE_CPU, dts[d], 1, 100003, 0, 0), u;
        double sum = 0, sq = 0, mn = 1e9, mx = -1e9;
        int64_t i, n = 100003;
        CHECK_OK(gpudl_tensor_fill(ctx, &t, 0.75f));
        for (i = 0; i < n; i++) if (ld(&t, i) != 0.75) break;
        CHECKF(i == n, "%s fill wrong at %lld", gpudl_dtype_name(dts[d]), (long long)i);
        gpudl_ctx_set_seed(ctx, 42);
        CHECK_OK(gpudl_tensor_uniform(ctx, &t, -2.0f, 3.0f));
        for (i = 0; i < n; i++) { double v = ld(&t, i); sum += v; mn = v < mn ? v : mn; mx = v > mx ? v : mx; }
        CHECKF(mn >= -2.0 && mx <= 3.0 && mn < -1.99 && mx > 2.99, "uniform range [%g, %g]", mn, mx);
        CHECKF(fabs(sum / n - 0.5) < 0.03, "uniform mean %g", sum / n);
        CHECK_OK(gpudl_tensor_normal(ctx, &t, 1.0f, 2.0f));
        sum = 0;
        for (i = 0; i < n; i++) { double v = ld(&t, i); sum += v; sq += v * v; }
        CHECKF(fabs(sum / n - 1.0) < 0.03, "normal mean %g", sum / n);
        CHECKF(fabs(sqrt(sq / n - (sum / n) * (sum / n)) - 2.0) < 0.03, "normal std %g", sqrt(sq / n - (sum / n) * (sum / n)));
        /* the same seed gives the same bits; the next call gives others */
        u = make(ctx, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0);
        gpudl_ctx_set_seed(ctx, 42);
        CHECK_OK(gpudl_tensor_uniform(ctx, &u, -2.0f, 3.0f));
        gpudl_ctx_set_seed(ctx, 42);
        CHECK_OK(gpudl_tensor_uniform(ctx, &t, -2.0f, 3.0f));
        CHECK(memcmp(t.data, u.data, gpudl_tensor_bytes(&t)) == 0);
        CHECK_OK(gpudl_tensor_uniform(ctx, &u, -2.0f, 3.0f));
        CHECK(memcmp(t.data, u.data, gpudl_tensor_bytes(&t)) != 0);
        CHECK_ST(gpudl_tensor_uniform(ctx, &u, 3.0f, -2.0f), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_tensor_normal(ctx, &u, 0.0f, -1.0f), GPUDL_ERR_INVALID_ARG);
        gpudl_tensor_free(ctx, &t);
        gpudl_tensor_free(ctx, &u);
    }
    {
        gpudl_tensor it = make(ctx, GPUDL_DEVICE_CPU, GPUDL_I32, 1, 5, 0, 0);
        CHECK_OK(gpudl_tensor_fill(ctx, &it, 7.0f));
        CHECK(((int32_t *)it.data)[4] == 7);
        CHECK_ST(gpudl_tensor_uniform(ctx, &it, 0.0f, 1.0f), GPUDL_ERR_INVALID_ARG);
        gpudl_tensor_free(ctx, &it);
    }
}

static void test_copy_cast(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor a = host_rand(GPUDL_F32, 2, 33, 7, 0), b = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 231, 0, 0);
    gpudl_tensor h = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F16, 2, 33, 7, 0), bf = make(ctx, GPUDL_DEVICE_CPU, GPUDL_BF16, 2, 33, 7, 0);
    gpudl_tensor c = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 5, 0, 0);
    float buf[231];
    int64_t i;
    CHECK_OK(gpudl_tensor_copy(ctx, &b, &a));
    CHECK(memcmp(a.data, b.data, gpudl_tensor_bytes(&a)) == 0);
    CHECK_ST(gpudl_tensor_copy(ctx, &c, &a), GPUDL_ERR_SHAPE);
    CHECK(strstr(gpudl_ctx_last_error(ctx), "f32[5] cpu") && strstr(gpudl_ctx_last_error(ctx), "f32[33,7] cpu"));
    CHECK_ST(gpudl_tensor_copy(ctx, &h, &a), GPUDL_ERR_INVALID_ARG);
    CHECK_OK(gpudl_tensor_download(ctx, &a, buf, sizeof buf));
    CHECK(memcmp(a.data, buf, sizeof buf) == 0);
    CHECK_ST(gpudl_tensor_download(ctx, &a, buf, 8), GPUDL_ERR_SHAPE);
    CHECK_OK(gpudl_tensor_upload(ctx, &b, buf, sizeof buf));
    CHECK_OK(gpudl_tensor_cast(ctx, &h, &a));
    CHECK_OK(gpudl_tensor_cast(ctx, &bf, &h));
    for (i = 0; i < 231; i++) {
        float x = ((float *)a.data)[i];
        CHECK(((uint16_t *)h.data)[i] == gpudl_f32_to_f16(x));
        CHECK(((uint16_t *)bf.data)[i] == gpudl_f32_to_bf16(gpudl_f16_to_f32(gpudl_f32_to_f16(x))));
    }
    gpudl_tensor_free(ctx, &a); gpudl_tensor_free(ctx, &b); gpudl_tensor_free(ctx, &h);
    gpudl_tensor_free(ctx, &bf); gpudl_tensor_free(ctx, &c);
}

static void test_gpu_fill_random_cast(void) {
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    int d;
    NEED_GPU(g);
    for (d = 0; d < 3; d++) {
        gpudl_tensor hd = make(c, GPUDL_DEVICE_CPU, dts[d], 1, 100003, 0, 0), dd, back;
        GPUDL_CHECK(gpudl_tensor_create_on(g, &dd, GPUDL_DEVICE_CUDA, dts[d], 1, hd.shape));
        /* the same (seed, offset) on both sides draws the same numbers */
        gpudl_ctx_set_seed(c, 77); gpudl_ctx_set_seed(g, 77);
        CHECK_OK(gpudl_tensor_uniform(c, &hd, -1.0f, 2.0f));
        CHECK_OK(gpudl_tensor_uniform(g, &dd, -1.0f, 2.0f));
        back = to_host(g, &dd);
        CHECKF(max_rel(&back, &hd, 1e-6) <= 1e-6, "%s uniform GPU vs CPU", gpudl_dtype_name(dts[d]));
        gpudl_tensor_free(c, &back);
        CHECK_OK(gpudl_tensor_normal(c, &hd, 0.5f, 3.0f));
        CHECK_OK(gpudl_tensor_normal(g, &dd, 0.5f, 3.0f));
        back = to_host(g, &dd);
        /* Box-Muller through logf, sqrtf and cosf: NVIDIA documents 1, 0 and 2 ulp for them, and nvcc
           contracts a*b+c, so a draw differs from the CPU's by a few float ulp of its terms; relative to
           the spread (3), not to the value, which crosses zero */
        CHECKF(max_rel(&back, &hd, 3.0) <= (dts[d] == GPUDL_F32 ? 1e-5 : 1e-2), "%s normal GPU vs CPU", gpudl_dtype_name(dts[d]));
        gpudl_tensor_free(c, &back);
        CHECK_OK(gpudl_tensor_fill(g, &dd, -3.25f));
        back = to_host(g, &dd);
        CHECK(ld(&back, 0) == -3.25 && ld(&back, 100002) == -3.25);
        gpudl_tensor_free(c, &back); gpudl_tensor_free(c, &hd); gpudl_tensor_free(g, &dd);
    }
    {   /* casts are bit-identical: every half and bf16 value, and random floats */
        gpudl_tensor bits = make(c, GPUDL_DEVICE_CPU, GPUDL_F16, 1, 65536, 0, 0), f = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 65536, 0, 0);
        gpudl_tensor db, df, dh, hb;
        int i, k;
        for (k = 0; k < 2; k++) {
            bits.dtype = k ? GPUDL_BF16 : GPUDL_F16;
            for (i = 0; i < 65536; i++) ((uint16_t *)bits.data)[i] = (uint16_t)i;
            db = to_dev(g, &bits);
            GPUDL_CHECK(gpudl_tensor_create_on(g, &df, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, f.shape));
            CHECK_OK(gpudl_tensor_cast(g, &df, &db));
            CHECK_OK(gpudl_tensor_cast(c, &f, &bits));
            hb = to_host(g, &df);
            CHECK(memcmp(hb.data, f.data, gpudl_tensor_bytes(&f)) == 0);
            gpudl_tensor_free(c, &hb);
            for (i = 0; i < 65536; i++) ((uint32_t *)f.data)[i] = (uint32_t)(gpudl_rng_bits(3, (uint64_t)i) >> 32);
            gpudl_tensor_free(g, &df);
            df = to_dev(g, &f);
            GPUDL_CHECK(gpudl_tensor_create_on(g, &dh, GPUDL_DEVICE_CUDA, bits.dtype, 1, f.shape));
            CHECK_OK(gpudl_tensor_cast(g, &dh, &df));
            CHECK_OK(gpudl_tensor_cast(c, &bits, &f));
            hb = to_host(g, &dh);
            CHECK(memcmp(hb.data, bits.data, gpudl_tensor_bytes(&bits)) == 0);
            gpudl_tensor_free(c, &hb); gpudl_tensor_free(g, &db); gpudl_tensor_free(g, &df); gpudl_tensor_free(g, &dh);
        }
        gpudl_tensor_free(c, &bits); gpudl_tensor_free(c, &f);
    }
}

static void test_gpu_copies(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor h = host_rand(GPUDL_F32, 2, 33, 7, 0), h2 = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 33, 7, 0), d1, d2;
    float x;
    NEED_GPU(g);
    d1 = to_dev(g, &h);                                           /* host -> device */
    GPUDL_CHECK(gpudl_tensor_create_on(g, &d2, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, h.shape));
    CHECK_OK(gpudl_tensor_copy(g, &d2, &d1));                     /* device -> device */
    CHECK_OK(gpudl_tensor_copy(g, &h2, &d2));                     /* device -> host */
    CHECK(memcmp(h.data, h2.data, gpudl_tensor_bytes(&h)) == 0);
    CHECK_OK(gpudl_tensor_item(g, &d2, 230, &x));
    CHECK(x == ((float *)h.data)[230]);
    CHECK_ST(gpudl_add(g, &d2, &d1, &h), GPUDL_ERR_INVALID_ARG);       /* mixed devices */
    CHECK(strstr(gpudl_ctx_last_error(g), "cuda") && strstr(gpudl_ctx_last_error(g), "cpu"));
    CHECK_ST(gpudl_add(c, &h2, &h, &h), GPUDL_OK);
    CHECK_ST(gpudl_add(c, &d2, &d1, &d1), GPUDL_ERR_INVALID_ARG);      /* device tensor on a CPU context */
    {   /* out of device memory: a status, and the context keeps working */
        gpudl_tensor big;
        int64_t n[1] = {INT64_C(1) << 50};
        CHECK_ST(gpudl_tensor_create(g, &big, GPUDL_U8, 1, n), GPUDL_ERR_OOM);
        CHECKF(strstr(gpudl_ctx_last_error(g), "cudaErrorMemoryAllocation") != NULL, "%s", gpudl_ctx_last_error(g));
        CHECK_OK(gpudl_tensor_copy(g, &d2, &d1));
        CHECK_OK(gpudl_ctx_sync(g));
    }
    gpudl_tensor_free(c, &h); gpudl_tensor_free(c, &h2); gpudl_tensor_free(g, &d1); gpudl_tensor_free(g, &d2);
}

/* Integer tensors fill on the GPU as on the CPU: the same conversion of the
   value (U8: rounded, clamped to [0, 255]; I32: toward zero, saturated; NaN: 0). */
static void test_gpu_fill_integer_tensors(void) {
    static const float values[] = {0.0f, 1.0f, 7.6f, -3.5f, 300.0f, 1e10f, -1e10f, NAN};
    gpudl_ctx *c = cpu_ctx();
    int dt;
    size_t v;
    NEED_GPU(g);
    for (dt = 0; dt < 2; dt++)
        for (v = 0; v < sizeof values / sizeof values[0]; v++) {
            gpudl_dtype t = dt ? GPUDL_I32 : GPUDL_U8;
            gpudl_tensor h = make(c, GPUDL_DEVICE_CPU, t, 1, 1037, 0, 0), d = make(g, GPUDL_DEVICE_CUDA, t, 1, 1037, 0, 0), back;
            CHECK_OK(gpudl_tensor_fill(c, &h, values[v]));
            CHECK_OK(gpudl_tensor_fill(g, &d, values[v]));
            back = to_host(g, &d);
            CHECKF(!memcmp(back.data, h.data, (size_t)1037 * gpudl_dtype_size(t)), "fill %s with %g: GPU %g, CPU %g",
                   gpudl_dtype_name(t), (double)values[v], ld(&back, 1036), ld(&h, 1036));
            gpudl_tensor_free(c, &back); gpudl_tensor_free(c, &h); gpudl_tensor_free(g, &d);
        }
}

/* gpudl_ctx_desc.bind_threads = 1: in a CPU-only OpenMP build on Linux,
   with no placement in the environment, the first context that asks binds
   its threads one per core (the harness's CPU context asks, and was the
   first). The default leaves them alone: tests/test_guest.c. */
static void test_threads_bound(void) {
#ifdef GPUDL__CAN_BIND
    int n = gpudl__num_threads_max(cpu_ctx()), single = 0, distinct = 1;
    int cpu_of[64];
    if (getenv("OMP_PROC_BIND") || getenv("OMP_PLACES") || getenv("GOMP_CPU_AFFINITY") || getenv("KMP_AFFINITY"))
        SKIP("the environment places OpenMP's threads");
    if (n < 2 || n > 64) SKIP("%d OpenMP threads", n);
    if (n > (int)sysconf(_SC_NPROCESSORS_ONLN)) SKIP("%d OpenMP threads on fewer cores: left to the scheduler", n);
#pragma omp parallel num_threads(n) reduction(+:single)
    {
        unsigned long m[16];
        int b, k = 0, c = -1;
        memset(m, 0, sizeof m);
        (void)syscall(SYS_sched_getaffinity, 0, sizeof m, m);
        for (b = 0; b < 1024; b++)
            if (m[b / (8 * (int)sizeof(unsigned long))] >> (b % (8 * (int)sizeof(unsigned long))) & 1ul) { k++; c = b; }
        single += k == 1;
        cpu_of[omp_get_thread_num()] = c;
    }
    {
        int a, b;
        for (a = 0; a < n; a++)
            for (b = 0; b < a; b++) distinct &= cpu_of[a] != cpu_of[b];
    }
    CHECKF(single == n && distinct, "%d of %d threads bound to one core each (distinct: %d)", single, n, distinct);
#else
    SKIP("threads are bound only in CPU-only OpenMP builds on Linux");
#endif
}

#ifdef GPUDL__SHARE
#include <signal.h>
#include <sys/wait.h>
#endif

/* Sharing the CPU (issue 23): fewer threads while ours wait for cores,
   the same bits whatever the team, and a real drop when busy loops in
   other processes take every core. */
static void test_share_cpu(void) {
#ifdef GPUDL__SHARE
    gpudl_ctx *c = cpu_ctx();
    int mx = gpudl__num_threads_max(c), keep = gpudl__share.shed;
    CHECK(gpudl__share_decide(0, 2, 0.5, 0.0) == 1);    /* our threads waited half the time: one fewer */
    CHECK(gpudl__share_decide(0, 2, 0.1, 0.0) == 0);    /* a little waiting: stay */
    CHECK(gpudl__share_decide(1, 2, 0.0, 0.1) == 1);    /* the other core busy: stay at one */
    CHECK(gpudl__share_decide(1, 2, 0.0, 0.9) == 0);    /* a core sat idle: one back */
    CHECK(gpudl__share_decide(1, 2, 1.0, 0.0) == 1);    /* one thread runs, whatever the wait */
    CHECK(gpudl__share_decide(0, 8, 0.3, 0.0) == 1 && gpudl__share_decide(0, 1, 1.0, 0.0) == 0);
    {   /* a context that asks for more threads than OpenMP's default sheds as many, no more */
        gpudl_ctx_desc d;
        gpudl_ctx *big;
        memset(&d, 0, sizeof d);
        d.device = GPUDL_DEVICE_CPU;
        d.num_threads = mx + 3;
        d.log = gpudl_log_quiet;
        GPUDL_CHECK(gpudl_ctx_create(&d, &big));
        gpudl__share.shed = 1;
        __atomic_store_n(&gpudl__share.t_us, (long long)(gpudl_now() * 1e6) + 60000000LL, __ATOMIC_RELAXED);   /* no poll for a minute */
        CHECKF(gpudl__num_threads(big) == mx + 2, "a context of %d threads, one shed: %d", mx + 3, gpudl__num_threads(big));
        gpudl__share.shed = keep;
        gpudl__share.t_us = 0;
        gpudl_ctx_destroy(big);
    }
    {   /* the same bits on any team: a conv backward (per-group partials), a sum (chunks), a matmul */
        int64_t x4[4] = {64, 6, 14, 14}, w4[4] = {8, 6, 3, 3}, y4[4] = {64, 8, 14, 14}, n1 = 3000001, p2[2] = {300, 200},
                q2[2] = {200, 100}, r2[2] = {300, 100}, one = 1;
        gpudl_tensor x, w, dy, a, p, q, dx[2], dw[2], sm[2], r[2];
        gpudl_conv2d_desc cd;
        int k, same = 1;
        memset(&cd, 0, sizeof cd);
        cd.pad_h = cd.pad_w = 1;
        GPUDL_CHECK(gpudl_tensor_create(c, &x, GPUDL_F32, 4, x4)); GPUDL_CHECK(gpudl_tensor_create(c, &w, GPUDL_F32, 4, w4));
        GPUDL_CHECK(gpudl_tensor_create(c, &dy, GPUDL_F32, 4, y4)); GPUDL_CHECK(gpudl_tensor_create(c, &a, GPUDL_F32, 1, &n1));
        GPUDL_CHECK(gpudl_tensor_create(c, &p, GPUDL_F32, 2, p2)); GPUDL_CHECK(gpudl_tensor_create(c, &q, GPUDL_F32, 2, q2));
        GPUDL_CHECK(gpudl_tensor_uniform(c, &x, -1, 1)); GPUDL_CHECK(gpudl_tensor_uniform(c, &w, -1, 1));
        GPUDL_CHECK(gpudl_tensor_uniform(c, &dy, -1, 1)); GPUDL_CHECK(gpudl_tensor_uniform(c, &a, -1, 1));
        GPUDL_CHECK(gpudl_tensor_uniform(c, &p, -1, 1)); GPUDL_CHECK(gpudl_tensor_uniform(c, &q, -1, 1));
        for (k = 0; k < 2; k++) {
            gpudl__share.shed = k ? mx - 1 : 0;   /* all threads, then one */
            __atomic_store_n(&gpudl__share.t_us, (long long)(gpudl_now() * 1e6) + 60000000LL, __ATOMIC_RELAXED);
            GPUDL_CHECK(gpudl_tensor_create(c, &dx[k], GPUDL_F32, 4, x4)); GPUDL_CHECK(gpudl_tensor_create(c, &dw[k], GPUDL_F32, 4, w4));
            GPUDL_CHECK(gpudl_tensor_create(c, &sm[k], GPUDL_F32, 1, &one)); GPUDL_CHECK(gpudl_tensor_create(c, &r[k], GPUDL_F32, 2, r2));
            CHECK_OK(gpudl_tensor_fill(c, &dw[k], 0.0f));
            CHECK_OK(gpudl_conv2d_backward(c, &dx[k], &dw[k], NULL, &dy, &x, &w, &cd));
            CHECK_OK(gpudl_sum(c, &sm[k], &a));
            CHECK_OK(gpudl_matmul(c, &r[k], &p, &q, 0, 0, 1.0f, 0.0f));
        }
        gpudl__share.shed = keep;
        gpudl__share.t_us = 0;
        same = !memcmp(dx[0].data, dx[1].data, gpudl_tensor_bytes(&dx[0])) && !memcmp(dw[0].data, dw[1].data, gpudl_tensor_bytes(&dw[0])) &&
               !memcmp(sm[0].data, sm[1].data, 4) && !memcmp(r[0].data, r[1].data, gpudl_tensor_bytes(&r[0]));
        CHECKF(same, "%d threads and 1 gave different bits", mx);
        for (k = 0; k < 2; k++) { gpudl_tensor_free(c, &dx[k]); gpudl_tensor_free(c, &dw[k]); gpudl_tensor_free(c, &sm[k]); gpudl_tensor_free(c, &r[k]); }
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &a);
        gpudl_tensor_free(c, &p); gpudl_tensor_free(c, &q);
    }
    if (mx >= 2 && mx <= (int)sysconf(_SC_NPROCESSORS_ONLN) && mx <= 16) {
        /* a busy loop on every core: our GEMMs' threads wait, and within
           three seconds the team is smaller */
        pid_t hogs[16];
        int i, team = 0;
        double t0;
        gpudl_tensor p = host_rand(GPUDL_F32, 2, 384, 384, 0), r = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 384, 384, 0);
        fflush(stdout);   /* the children must not print what this process has buffered */
        for (i = 0; i < mx; i++) {
            hogs[i] = fork();
            if (hogs[i] == 0) { volatile unsigned long spin = 0; double end = gpudl_now() + 6.0; while (gpudl_now() < end) spin++; _exit(0); }
        }
        gpudl__share.shed = 0;
        gpudl__share.t_us = 0;
        for (t0 = gpudl_now(); gpudl_now() - t0 < 3.0 && (team = gpudl__num_threads(c)) >= mx;)
            CHECK_OK(gpudl_matmul(c, &r, &p, &p, 0, 0, 1.0f, 0.0f));
        for (i = 0; i < mx; i++) { kill(hogs[i], SIGKILL); waitpid(hogs[i], NULL, 0); }
        CHECKF(team < mx, "%d busy loops on %d cores for 3 s, and the team is still %d (waiting %.2f threads)", mx, mx, team,
               gpudl__share.waiting);
        printf("    %d busy loops in other processes: a team of %d of %d after %.1f s (our threads waited %.2f of the time)\n",
               mx, team, mx, gpudl_now() - t0, gpudl__share.waiting);
        gpudl_tensor_free(c, &p);
        gpudl_tensor_free(c, &r);
        gpudl__share.shed = keep;
    }
#else
    SKIP("the team follows the load only in OpenMP builds on Linux");
#endif
}

/* Views at odd offsets (issue 26). The element-wise kernels move 16 bytes
   per access where every pointer is 16-byte aligned, and must fall back to
   scalar accesses where one is not (a GPU faults on a misaligned vector
   access, and so does the strict emulator), and their tails must stop at
   the view's end. view_make: a device buffer of n + 8 elements whose bytes
   outside the view hold a guard pattern, and a view of n elements at
   element offset off (its data from init when given); view_guard_ok: the
   guard is intact after an op. Shared with tests/test_arith.c. */
typedef struct dev_view { gpudl_tensor buf, view; int64_t off, n; } dev_view;

static const int64_t view_sizes[] = {1, 3, 5, 7, 1023, 4097};

static dev_view view_make(gpudl_ctx *g, gpudl_dtype dt, int64_t n, int64_t off, const gpudl_tensor *init) {
    dev_view v;
    size_t es = gpudl_dtype_size(dt), i;
    gpudl_tensor h = make(cpu_ctx(), GPUDL_DEVICE_CPU, dt, 1, n + 8, 0, 0);
    for (i = 0; i < (size_t)(n + 8) * es; i++) ((unsigned char *)h.data)[i] = (unsigned char)(0xa5u ^ (unsigned)i);
    if (init) memcpy((char *)h.data + (size_t)off * es, init->data, (size_t)n * es);
    v.buf = to_dev(g, &h);
    v.off = off;
    v.n = n;
    GPUDL_CHECK(gpudl_tensor_wrap(&v.view, (char *)v.buf.data + (size_t)off * es, GPUDL_DEVICE_CUDA, dt, 1, &n));
    gpudl_tensor_free(cpu_ctx(), &h);
    return v;
}

static int view_guard_ok(gpudl_ctx *g, const dev_view *v) {
    gpudl_tensor h = to_host(g, &v->buf);
    size_t es = gpudl_dtype_size(v->buf.dtype), i, lo = (size_t)v->off * es, hi = (size_t)(v->off + v->n) * es;
    int ok = 1;
    for (i = 0; i < (size_t)(v->n + 8) * es; i++)
        if ((i < lo || i >= hi) && ((unsigned char *)h.data)[i] != (unsigned char)(0xa5u ^ (unsigned)i)) ok = 0;
    gpudl_tensor_free(cpu_ctx(), &h);
    return ok;
}

static void view_free(gpudl_ctx *g, dev_view *v) { gpudl_tensor_free(g, &v->buf); }

/* fill, uniform and cast on views at element offsets 0-3 (0: the aligned
   control) against the CPU, sizes around the vector widths (4 floats, 8
   halves) and the tails; the bytes around each view untouched. */
static void test_gpu_misaligned_views_tensor(void) {
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    int d, d2, off;
    NEED_GPU(g);
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof view_sizes / sizeof view_sizes[0]; s++)
            for (off = 0; off < 4; off++) {
                int64_t n = view_sizes[s], i, bad = 0;
                dev_view v = view_make(g, dts[d], n, off, NULL);
                gpudl_tensor h = make(c, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0), back;
                CHECK_OK(gpudl_tensor_fill(g, &v.view, -2.75f));
                back = to_host(g, &v.view);
                for (i = 0; i < n; i++) bad += ld(&back, i) != -2.75;
                CHECKF(bad == 0 && view_guard_ok(g, &v), "fill %s n=%lld offset %d", gpudl_dtype_name(dts[d]), (long long)n, off);
                gpudl_tensor_free(c, &back);
                gpudl_ctx_set_seed(c, 5 + off); gpudl_ctx_set_seed(g, 5 + off);
                CHECK_OK(gpudl_tensor_uniform(c, &h, -1.0f, 3.0f));
                CHECK_OK(gpudl_tensor_uniform(g, &v.view, -1.0f, 3.0f));
                back = to_host(g, &v.view);
                CHECKF(max_rel(&back, &h, 1e-6) <= 1e-6 && view_guard_ok(g, &v), "uniform %s n=%lld offset %d",
                       gpudl_dtype_name(dts[d]), (long long)n, off);
                for (d2 = 0; d2 < 3; d2++) {   /* cast from this view into a view at another offset */
                    int off2 = (off + 1 + d2) % 4;
                    dev_view w = view_make(g, dts[d2], n, off2, NULL);
                    gpudl_tensor hc = make(c, GPUDL_DEVICE_CPU, dts[d2], 1, n, 0, 0), got;
                    CHECK_OK(gpudl_tensor_cast(g, &w.view, &v.view));
                    CHECK_OK(gpudl_tensor_cast(c, &hc, &back));   /* the CPU casts the GPU's values: bit for bit */
                    got = to_host(g, &w.view);
                    CHECKF(!memcmp(got.data, hc.data, (size_t)n * gpudl_dtype_size(dts[d2])) && view_guard_ok(g, &w),
                           "cast %s (offset %d) -> %s (offset %d) n=%lld", gpudl_dtype_name(dts[d]), off, gpudl_dtype_name(dts[d2]),
                           off2, (long long)n);
                    gpudl_tensor_free(c, &got); gpudl_tensor_free(c, &hc); view_free(g, &w);
                }
                gpudl_tensor_free(c, &back);
                gpudl_tensor_free(c, &h); view_free(g, &v);
            }
}
