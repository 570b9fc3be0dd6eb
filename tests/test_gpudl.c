/* gpudl tests: every op on the CPU against a float64 reference, and (in the
   nvcc build) every op on the GPU against the CPU. Without a usable GPU the
   GPU tests print SKIPPED and count as skipped.

   CPU build:  cc -O2 -DGPUDL_NO_CUDA -fopenmp tests/test_gpudl.c -lm
   GPU build:  nvcc -O2 -x c tests/test_gpudl.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   Run:        ./test_gpudl [substring | --cpu-only | --gpu-only] */
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"

#include "harness.h"

/* >>status ---------------------------------------------------------------- */

static void test_status_strings(void) {
    int a, b;
    for (a = 0; a >= GPUDL_ERR_UNSUPPORTED; a--) {
        const char *s = gpudl_status_string((gpudl_status)a);
        CHECKF(s && s[0], "status %d has an empty string", a);
        CHECKF(strcmp(s, "unknown gpudl status") != 0, "status %d has no string", a);
        for (b = 0; b > a; b--) CHECKF(strcmp(s, gpudl_status_string((gpudl_status)b)) != 0, "statuses %d and %d share '%s'", a, b, s);
    }
    CHECK(strcmp(gpudl_status_string((gpudl_status)12345), "unknown gpudl status") == 0);
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
    CHECK_OK(gpudl_ctx_create(NULL, &ctx));
    CHECK(ctx != NULL);
    CHECK(gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU || gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA);
    CHECK(gpudl_ctx_math_mode(ctx) == GPUDL_MATH_FP32);
    CHECK(strcmp(gpudl_ctx_last_error(ctx), "") == 0);
    CHECK_OK(gpudl_ctx_set_math_mode(ctx, GPUDL_MATH_TF32));
    CHECK(gpudl_ctx_math_mode(ctx) == GPUDL_MATH_TF32);
    CHECK_ST(gpudl_ctx_set_math_mode(ctx, (gpudl_math_mode)7), GPUDL_ERR_INVALID_ARG);
    CHECK_OK(gpudl_ctx_sync(ctx));
    gpudl_ctx_destroy(ctx);
    gpudl_ctx_destroy(NULL);
    CHECK_ST(gpudl_ctx_create(NULL, NULL), GPUDL_ERR_INVALID_ARG);
    memset(&d, 0, sizeof d);
    d.device = (gpudl_device)9;
    ctx = (gpudl_ctx *)&d;
    CHECK_ST(gpudl_ctx_create(&d, &ctx), GPUDL_ERR_INVALID_ARG);
    CHECK(ctx == NULL);
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

/* The CPU backend's bulk conversions (gpudl__cvt, branch-free so that they
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
        gpudl__cvt(f, GPUDL_F32, h, GPUDL_F16, 65536);
        gpudl__cvt(g, GPUDL_F32, h, GPUDL_BF16, 65536);
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
                gpudl__cvt(h, GPUDL_F16, f, GPUDL_F32, n);
                gpudl__cvt(b, GPUDL_BF16, f, GPUDL_F32, n);
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

/* >>matmul ---------------------------------------------------------------- */

/* Checks C against alpha * op(A) op(B) + beta * C0 in float64, elementwise
   with tolerance tol * (sum_k |a_ik b_kj| + |beta c0|) + 1e-30. */
static int check_matmul(const gpudl_tensor *C, const gpudl_tensor *A, const gpudl_tensor *B, const gpudl_tensor *C0,
                        int ta, int tb, double alpha, double beta, double tol, const char *what) {
    int64_t L = C->ndim == 3 ? C->shape[0] : 1, M = C->shape[C->ndim - 2], N = C->shape[C->ndim - 1];
    int64_t K = ta ? A->shape[A->ndim - 2] : A->shape[A->ndim - 1];
    int64_t sa = A->ndim == 3 ? M * K : 0, sb = B->ndim == 3 ? K * N : 0, l, i, j, k, bad = 0;
    double worst = 0;
    for (l = 0; l < L; l++)
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) {
                double s = 0, mag = 0, ref, got, c0 = (C0 && beta != 0) ? ld(C0, l * M * N + i * N + j) : 0, err;
                for (k = 0; k < K; k++) {
                    double a = ld(A, l * sa + (ta ? k * M + i : i * K + k));
                    double b = ld(B, l * sb + (tb ? j * K + k : k * N + j));
                    s += a * b;
                    mag += fabs(a * b);
                }
                ref = alpha * s + beta * c0;
                got = ld(C, l * M * N + i * N + j);
                err = fabs(got - ref) / (fabs(alpha) * mag + fabs(beta * c0) + 1e-30);
                if (!(err <= tol)) bad++;
                if (!(err <= worst)) worst = err;
            }
    CHECKF(bad == 0, "%s: %lld of %lld elements off (worst relative error %.3g, tol %.3g)", what, (long long)bad,
           (long long)(L * M * N), worst, tol);
    return bad == 0;
}

static void matmul_case(gpudl_dtype dt, gpudl_dtype cdt, int64_t L, int64_t M, int64_t N, int64_t K, int ta, int tb,
                        int a3, int b3, float alpha, float beta, double tol) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor A = a3 ? host_rand(dt, 3, L, ta ? K : M, ta ? M : K) : host_rand(dt, 2, ta ? K : M, ta ? M : K, 0);
    gpudl_tensor B = b3 ? host_rand(dt, 3, L, tb ? N : K, tb ? K : N) : host_rand(dt, 2, tb ? N : K, tb ? K : N, 0);
    gpudl_tensor C = (a3 || b3) ? host_rand(cdt, 3, L, M, N) : host_rand(cdt, 2, M, N, 0);
    gpudl_tensor C0 = (a3 || b3) ? make(ctx, GPUDL_DEVICE_CPU, cdt, 3, L, M, N) : make(ctx, GPUDL_DEVICE_CPU, cdt, 2, M, N, 0);
    char what[160];
    snprintf(what, sizeof what, "%s->%s L%lld M%lld N%lld K%lld ta%d tb%d a3%d b3%d alpha %g beta %g",
             gpudl_dtype_name(dt), gpudl_dtype_name(cdt), (long long)L, (long long)M, (long long)N, (long long)K,
             ta, tb, a3, b3, (double)alpha, (double)beta);
    if (beta == 0.0f) CHECK_OK(gpudl_tensor_fill(ctx, &C, NAN));   /* beta 0 must not read C */
    CHECK_OK(gpudl_tensor_copy(ctx, &C0, &C));
    CHECK_OK(gpudl_matmul(ctx, &C, &A, &B, ta, tb, alpha, beta));
    check_matmul(&C, &A, &B, &C0, ta, tb, alpha, beta, tol, what);
    gpudl_tensor_free(ctx, &A); gpudl_tensor_free(ctx, &B); gpudl_tensor_free(ctx, &C); gpudl_tensor_free(ctx, &C0);
}

static void matmul_suite(void) {
    static const int64_t sizes[][3] = {   /* M, N, K */
        {1, 1, 1}, {7, 33, 5}, {33, 7, 1000}, {1000, 7, 33}, {1, 1000, 7}, {65, 129, 257},
        {100, 97, 300}, {7, 1, 33}, {257, 300, 64}, {96, 256, 256},
    };
    size_t s;
    int t;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (t = 0; t < 4; t++)
            matmul_case(GPUDL_F32, GPUDL_F32, 1, sizes[s][0], sizes[s][1], sizes[s][2], t & 1, t >> 1, 0, 0,
                        t == 3 ? -0.5f : 1.0f, (s & 1) ? 0.0f : 0.75f, 2e-6 * sqrt((double)sizes[s][2]) + 1e-6);
}

static void test_matmul_f32(void) { matmul_suite(); }

/* The same suite through each CPU micro-kernel this machine can run. */
static void test_matmul_f32_each_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(_WIN32)
    const char *names[3] = {"c", "avx2", "avx512"};
    int i;
    for (i = 0; i < 3; i++) {
        setenv("GPUDL_GEMM_KERNEL", names[i], 1);
        matmul_suite();
    }
    unsetenv("GPUDL_GEMM_KERNEL");
#else
    SKIP("micro-kernel selection is x86-64 only");
#endif
}

static void test_matmul_batched(void) {
    int t;
    for (t = 0; t < 4; t++) {
        matmul_case(GPUDL_F32, GPUDL_F32, 5, 33, 7, 65, t & 1, t >> 1, 1, 1, 1.0f, 0.0f, 1e-5);
        matmul_case(GPUDL_F32, GPUDL_F32, 3, 70, 40, 33, t & 1, t >> 1, 1, 0, 2.0f, 1.0f, 1e-5);   /* shared B */
        matmul_case(GPUDL_F32, GPUDL_F32, 3, 7, 100, 50, t & 1, t >> 1, 0, 1, 1.0f, 0.5f, 1e-5);   /* shared A */
    }
}

static void test_matmul_half(void) {
    gpudl_dtype dts[2] = {GPUDL_F16, GPUDL_BF16};
    int d, t;
    for (d = 0; d < 2; d++)
        for (t = 0; t < 4; t++) {
            /* FP32 accumulation: an F32 C is exact to FP32 rounding */
            matmul_case(dts[d], GPUDL_F32, 1, 33, 65, 129, t & 1, t >> 1, 0, 0, 1.0f, 0.5f, 1e-5);
            /* a 16-bit C adds one rounding of its own */
            matmul_case(dts[d], dts[d], 2, 17, 40, 100, t & 1, t >> 1, 1, 1, 1.0f, 0.0f, dts[d] == GPUDL_F16 ? 1e-3 : 8e-3);
        }
}

/* The seeds' experiment: t of shape 500x500x500, t @ t, spot-checked. */
static void test_matmul_500_cube(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor t = host_rand(GPUDL_F32, 3, 500, 500, 500), r = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 3, 500, 500, 500);
    const float *a = (const float *)t.data, *c;
    int s;
    CHECK_OK(gpudl_matmul(ctx, &r, &t, &t, 0, 0, 1.0f, 0.0f));
    c = (const float *)r.data;
    for (s = 0; s < 200; s++) {
        uint64_t h = gpudl_rng_bits(5, (uint64_t)s);
        int64_t l = (int64_t)(h % 500), i = (int64_t)((h >> 16) % 500), j = (int64_t)((h >> 32) % 500), k;
        double ref = 0, mag = 0;
        for (k = 0; k < 500; k++) {
            ref += (double)a[l * 250000 + i * 500 + k] * a[l * 250000 + k * 500 + j];
            mag += fabs((double)a[l * 250000 + i * 500 + k] * a[l * 250000 + k * 500 + j]);
        }
        CHECKF(fabs(c[l * 250000 + i * 500 + j] - ref) <= 1e-5 * mag, "t@t[%lld,%lld,%lld] = %g, want %g",
               (long long)l, (long long)i, (long long)j, (double)c[l * 250000 + i * 500 + j], ref);
    }
    gpudl_tensor_free(ctx, &t);
    gpudl_tensor_free(ctx, &r);
}

/* gpudl used from inside the caller's own OpenMP threads (one context per
   thread, as the manual says): gpudl's regions are then nested and may get a
   team of one thread, which must still compute every block of C. */
static void test_matmul_inside_user_threads(void) {
#ifdef _OPENMP
    int bad = 0;
#pragma omp parallel num_threads(2) reduction(+:bad)
    {
        gpudl_ctx *ctx;
        gpudl_ctx_desc d;
        gpudl_tensor A, B, C;
        int64_t sa[2] = {200, 170}, sb[2] = {170, 150}, sc[2] = {200, 150}, i, j, k;
        memset(&d, 0, sizeof d);
        d.device = GPUDL_DEVICE_CPU;
        d.num_threads = 2;
        if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) bad++;
        else {
            if (gpudl_tensor_create(ctx, &A, GPUDL_F32, 2, sa) || gpudl_tensor_create(ctx, &B, GPUDL_F32, 2, sb) ||
                gpudl_tensor_create(ctx, &C, GPUDL_F32, 2, sc))
                bad++;
            else {
                const float *a = (const float *)A.data, *b = (const float *)B.data, *c = (const float *)C.data;
                for (i = 0; i < 200 * 170; i++) ((float *)A.data)[i] = (float)((i * 7 + omp_get_thread_num()) % 13) - 6.0f;
                for (i = 0; i < 170 * 150; i++) ((float *)B.data)[i] = (float)((i * 5) % 11) - 5.0f;
                if (gpudl_matmul(ctx, &C, &A, &B, 0, 0, 1.0f, 0.0f) != GPUDL_OK) bad++;
                for (i = 0; i < 200 && !bad; i++)
                    for (j = 0; j < 150; j++) {
                        double r = 0;   /* small integers: the float sum is exact */
                        for (k = 0; k < 170; k++) r += (double)a[i * 170 + k] * b[k * 150 + j];
                        if ((double)c[i * 150 + j] != r) { bad++; break; }
                    }
                gpudl_tensor_free(ctx, &A); gpudl_tensor_free(ctx, &B); gpudl_tensor_free(ctx, &C);
            }
            gpudl_ctx_destroy(ctx);
        }
    }
    CHECKF(bad == 0, "%d of 2 threads got a wrong product", bad);
#else
    SKIP("needs an OpenMP build");
#endif
}

/* gpudl_cpu_flush_denormals: a threaded product of subnormal inputs is 0
   with the flush on (denormals-are-zero) and not 0 with it off. */
static void test_cpu_flush_denormals(void) {
#if defined(__x86_64__) || defined(_M_X64)
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
    SKIP("flush-to-zero control is x86-64 only");
#endif
}

static void test_matmul_errors(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor A = host_rand(GPUDL_F32, 2, 3, 4, 0), B = host_rand(GPUDL_F32, 2, 5, 6, 0), C = host_rand(GPUDL_F32, 2, 3, 6, 0);
    gpudl_tensor H = host_rand(GPUDL_F16, 2, 4, 6, 0), B3 = host_rand(GPUDL_F32, 3, 2, 4, 6), C3 = host_rand(GPUDL_F32, 3, 3, 3, 6);
    const char *e;
    CHECK_ST(gpudl_matmul(ctx, &C, &A, &B, 0, 0, 1, 0), GPUDL_ERR_SHAPE);
    e = gpudl_ctx_last_error(ctx);
    CHECKF(strstr(e, "f32[3,4]") && strstr(e, "f32[5,6]"), "message does not name both shapes: %s", e);
    CHECK_ST(gpudl_matmul(ctx, &C, &A, &H, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_matmul(ctx, &C3, &A, &B3, 0, 0, 1, 0), GPUDL_ERR_SHAPE);   /* batch 3 vs 2 */
    CHECK_ST(gpudl_matmul(ctx, &C, &A, &B3, 0, 0, 1, 0), GPUDL_ERR_SHAPE);    /* 2-D C, 3-D B */
    CHECK_ST(gpudl_matmul(ctx, NULL, &A, &B, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_matmul(NULL, &C, &A, &B, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    {
        gpudl_tensor empty;
        memset(&empty, 0, sizeof empty);
        CHECK_ST(gpudl_matmul(ctx, &C, &empty, &B, 0, 0, 1, 0), GPUDL_ERR_INVALID_ARG);
    }
    gpudl_tensor_free(ctx, &A); gpudl_tensor_free(ctx, &B); gpudl_tensor_free(ctx, &C);
    gpudl_tensor_free(ctx, &H); gpudl_tensor_free(ctx, &B3); gpudl_tensor_free(ctx, &C3);
}

/* >>elementwise and reductions -------------------------------------------- */

static void test_elementwise(void) {
    static const int64_t ns[] = {1, 7, 33, 1000, 100003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *ctx = cpu_ctx();
    size_t s;
    int d, op;
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++)
            for (op = 0; op < 4; op++) {
                int64_t n = ns[s], i, bad = 0;
                gpudl_tensor a = host_rand(dts[d], 1, n, 0, 0), b = host_rand(dts[d], 1, n, 0, 0);
                gpudl_tensor o = make(ctx, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0);
                double tol = dts[d] == GPUDL_F32 ? 1e-7 : dts[d] == GPUDL_F16 ? 1e-3 : 8e-3;
                CHECK_OK(gpudl_tensor_copy(ctx, &o, &b));
                if (op == 0) CHECK_OK(gpudl_add(ctx, &o, &a, &b));
                if (op == 1) CHECK_OK(gpudl_mul(ctx, &o, &a, &b));
                if (op == 2) CHECK_OK(gpudl_scale(ctx, &o, -1.5f));
                if (op == 3) CHECK_OK(gpudl_axpy(ctx, &o, 0.25f, &a));
                for (i = 0; i < n; i++) {
                    double x = ld(&a, i), y = ld(&b, i);
                    double ref = op == 0 ? x + y : op == 1 ? x * y : op == 2 ? -1.5 * y : 0.25 * x + y;
                    if (!(fabs(ld(&o, i) - ref) <= tol * (fabs(x) + fabs(y) + fabs(ref)))) bad++;
                }
                CHECKF(bad == 0, "op %d %s n=%lld: %lld wrong", op, gpudl_dtype_name(dts[d]), (long long)n, (long long)bad);
                gpudl_tensor_free(ctx, &a); gpudl_tensor_free(ctx, &b); gpudl_tensor_free(ctx, &o);
            }
    {
        gpudl_tensor a = host_rand(GPUDL_F32, 1, 7, 0, 0), b = host_rand(GPUDL_F32, 1, 8, 0, 0), h = host_rand(GPUDL_F16, 1, 7, 0, 0);
        CHECK_ST(gpudl_add(ctx, &a, &a, &b), GPUDL_ERR_SHAPE);
        CHECK(strstr(gpudl_ctx_last_error(ctx), "f32[7] cpu") && strstr(gpudl_ctx_last_error(ctx), "f32[8] cpu"));
        CHECK_ST(gpudl_mul(ctx, &a, &a, &h), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_axpy(ctx, &a, 1.0f, NULL), GPUDL_ERR_INVALID_ARG);
        gpudl_tensor_free(ctx, &a); gpudl_tensor_free(ctx, &b); gpudl_tensor_free(ctx, &h);
    }
}

static void test_reductions(void) {
    static const int64_t ns[] = {1, 7, 33, 1000, 100003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor out = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0);
    size_t s;
    int d;
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++) {
            int64_t n = ns[s], i;
            gpudl_tensor x = host_rand(dts[d], 1, n, 0, 0);
            double ref = 0, mag = 0, mx = -1e300;
            float got;
            for (i = 0; i < n; i++) { double v = ld(&x, i); ref += v; mag += fabs(v); mx = v > mx ? v : mx; }
            CHECK_OK(gpudl_sum(ctx, &out, &x));
            CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
            CHECKF(fabs(got - ref) <= 1e-6 * mag, "sum %s n=%lld: %g want %g", gpudl_dtype_name(dts[d]), (long long)n, (double)got, ref);
            CHECK_OK(gpudl_max(ctx, &out, &x));
            CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
            CHECKF(got == (float)mx, "max %s n=%lld: %g want %g", gpudl_dtype_name(dts[d]), (long long)n, (double)got, mx);
            gpudl_tensor_free(ctx, &x);
        }
    {   /* max of negatives, and NaN propagation */
        float v[5] = {-3, -1, -2, -7, -1.5f}, got;
        gpudl_tensor x;
        int64_t n5[1] = {5};
        CHECK_OK(gpudl_tensor_wrap(&x, v, GPUDL_DEVICE_CPU, GPUDL_F32, 1, n5));
        CHECK_OK(gpudl_max(ctx, &out, &x));
        CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
        CHECK(got == -1.0f);
        v[3] = NAN;
        CHECK_OK(gpudl_max(ctx, &out, &x));
        CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
        CHECK(is_nan(got));
        CHECK_ST(gpudl_sum(ctx, &x, &x), GPUDL_ERR_SHAPE);
    }
    gpudl_tensor_free(ctx, &out);
}

static void test_argmax_rows(void) {
    gpudl_ctx *ctx = cpu_ctx();
    static const int64_t shapes[][2] = {{1, 1}, {7, 33}, {33, 7}, {1000, 10}, {3, 1000}};
    size_t s;
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t R = shapes[s][0], C = shapes[s][1], r, c;
        gpudl_tensor x = host_rand(GPUDL_F32, 2, R, C, 0), o = make(ctx, GPUDL_DEVICE_CPU, GPUDL_I32, 1, R, 0, 0);
        int bad = 0;
        CHECK_OK(gpudl_argmax_rows(ctx, &o, &x));
        for (r = 0; r < R; r++) {
            int64_t bi = 0;
            for (c = 1; c < C; c++) if (ld(&x, r * C + c) > ld(&x, r * C + bi)) bi = c;
            if (((int32_t *)o.data)[r] != bi) bad++;
        }
        CHECKF(bad == 0, "argmax %lldx%lld: %d rows wrong", (long long)R, (long long)C, bad);
        gpudl_tensor_free(ctx, &x); gpudl_tensor_free(ctx, &o);
    }
    {
        float v[8] = {1, 5, 5, 2, /* tie -> first */ 0, NAN, 3, NAN /* NaN wins, first NaN */};
        int64_t sh[2] = {2, 4}, n1[1] = {2};
        int32_t out[2];
        gpudl_tensor x, o;
        CHECK_OK(gpudl_tensor_wrap(&x, v, GPUDL_DEVICE_CPU, GPUDL_F32, 2, sh));
        CHECK_OK(gpudl_tensor_wrap(&o, out, GPUDL_DEVICE_CPU, GPUDL_I32, 1, n1));
        CHECK_OK(gpudl_argmax_rows(ctx, &o, &x));
        CHECK(out[0] == 1 && out[1] == 1);
        CHECK_ST(gpudl_argmax_rows(ctx, &x, &x), GPUDL_ERR_SHAPE);
    }
}

/* >>timing ---------------------------------------------------------------- */

typedef struct { gpudl_tensor a, b, c; } mm_args;
static gpudl_status run_mm(gpudl_ctx *ctx, void *user) {
    mm_args *m = (mm_args *)user;
    return gpudl_matmul(ctx, &m->c, &m->a, &m->b, 0, 0, 1.0f, 0.0f);
}

static void test_timer_and_bench(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_timer tm;
    gpudl_bench_desc bd;
    gpudl_bench_result br;
    gpudl_device_info info;
    mm_args m;
    double ms = -1, t0 = gpudl_now();
    CHECK_OK(gpudl_timer_create(ctx, &tm));
    CHECK_OK(gpudl_timer_start(&tm));
    while (gpudl_now() - t0 < 0.002) {}
    CHECK_OK(gpudl_timer_stop(&tm));
    CHECK_OK(gpudl_timer_elapsed_ms(&tm, &ms));
    CHECKF(ms >= 1.9 && ms < 1000, "timer says %g ms for a 2 ms spin", ms);
    gpudl_timer_destroy(&tm);
    m.a = host_rand(GPUDL_F32, 2, 64, 64, 0); m.b = host_rand(GPUDL_F32, 2, 64, 64, 0); m.c = host_rand(GPUDL_F32, 2, 64, 64, 0);
    memset(&bd, 0, sizeof bd);
    bd.reps = 5;
    bd.flops = 2.0 * 64 * 64 * 64;
    CHECK_OK(gpudl_bench(ctx, run_mm, &m, &bd, &br));
    CHECK(br.reps == 5 && br.calls_per_sample >= 1);
    CHECK(br.min_ms > 0 && br.min_ms <= br.median_ms && br.median_ms <= br.max_ms);
    CHECK(fabs(br.gflops - bd.flops / (br.median_ms * 1e6)) < 1e-9 * br.gflops);
    CHECK(br.gbs == 0);
    CHECK_ST(gpudl_bench(ctx, NULL, &m, &bd, &br), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(ctx, &m.a); gpudl_tensor_free(ctx, &m.b); gpudl_tensor_free(ctx, &m.c);
    CHECK_OK(gpudl_device_info_get(ctx, &info));
    CHECK(info.device == GPUDL_DEVICE_CPU && info.name[0] && info.sm_count >= 1);
}

/* >>gpu: every op on the GPU against the CPU ------------------------------ */

static void test_gpu_device_info(void) {
    gpudl_device_info info;
    NEED_GPU(g);
    CHECK_OK(gpudl_device_info_get(g, &info));
    CHECK(info.device == GPUDL_DEVICE_CUDA && info.name[0] && info.sm_count > 0 && info.cc_major >= 7);
    CHECK(info.mem_total > 0 && info.clock_mhz > 0 && info.peak_fp32_tflops > 0 && info.peak_mem_gbs > 0);
    printf("    %s, %d SMs, sm_%d%d, %.1f GiB, %d MHz, peak %.1f FP32 / %.0f FP16 TFLOP/s, %.0f GB/s, kernels for %s\n",
           info.name, info.sm_count, info.cc_major, info.cc_minor, info.mem_total / 1073741824.0, info.clock_mhz,
           info.peak_fp32_tflops, info.peak_fp16_tflops, info.peak_mem_gbs, info.archs);
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
        CHECKF(max_rel(&back, &hd, 1e-3) <= (dts[d] == GPUDL_F32 ? 1e-5 : 1e-2), "%s normal GPU vs CPU", gpudl_dtype_name(dts[d]));
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

static void gpu_matmul_case(gpudl_ctx *g, gpudl_math_mode mode, gpudl_dtype dt, gpudl_dtype cdt, int64_t L, int64_t M,
                            int64_t N, int64_t K, int ta, int tb, int a3, int b3, float alpha, float beta, double tol) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor A = a3 ? host_rand(dt, 3, L, ta ? K : M, ta ? M : K) : host_rand(dt, 2, ta ? K : M, ta ? M : K, 0);
    gpudl_tensor B = b3 ? host_rand(dt, 3, L, tb ? N : K, tb ? K : N) : host_rand(dt, 2, tb ? N : K, tb ? K : N, 0);
    gpudl_tensor C = (a3 || b3) ? host_rand(cdt, 3, L, M, N) : host_rand(cdt, 2, M, N, 0);
    gpudl_tensor dA = to_dev(g, &A), dB = to_dev(g, &B), dC = to_dev(g, &C), got;
    char what[160];
    snprintf(what, sizeof what, "GPU %s %s->%s L%lld M%lld N%lld K%lld ta%d tb%d", mode == GPUDL_MATH_TF32 ? "tf32" : "fp32",
             gpudl_dtype_name(dt), gpudl_dtype_name(cdt), (long long)L, (long long)M, (long long)N, (long long)K, ta, tb);
    CHECK_OK(gpudl_ctx_set_math_mode(g, mode));
    CHECK_OK(gpudl_matmul(g, &dC, &dA, &dB, ta, tb, alpha, beta));
    got = to_host(g, &dC);
    check_matmul(&got, &A, &B, &C, ta, tb, alpha, beta, tol, what);
    CHECK_OK(gpudl_ctx_set_math_mode(g, GPUDL_MATH_FP32));
    gpudl_tensor_free(c, &A); gpudl_tensor_free(c, &B); gpudl_tensor_free(c, &C); gpudl_tensor_free(c, &got);
    gpudl_tensor_free(g, &dA); gpudl_tensor_free(g, &dB); gpudl_tensor_free(g, &dC);
}

static void test_gpu_matmul(void) {
    static const int64_t sizes[][3] = {{1, 1, 1}, {7, 33, 5}, {33, 7, 1000}, {1000, 7, 33}, {65, 129, 257}, {256, 256, 256}};
    size_t s;
    int t;
    NEED_GPU(g);
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (t = 0; t < 4; t++) {
            int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_F32, GPUDL_F32, 1, M, N, K, t & 1, t >> 1, 0, 0, 1.0f, 0.5f, 1e-5);
            gpu_matmul_case(g, GPUDL_MATH_TF32, GPUDL_F32, GPUDL_F32, 1, M, N, K, t & 1, t >> 1, 0, 0, 1.0f, 0.0f, 4e-3);
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_F16, GPUDL_F32, 1, M, N, K, t & 1, t >> 1, 0, 0, 1.0f, 0.0f, 1e-5);
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_BF16, GPUDL_BF16, 1, M, N, K, t & 1, t >> 1, 0, 0, 1.0f, 0.0f, 8e-3);
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_F16, GPUDL_F16, 1, M, N, K, t & 1, t >> 1, 0, 0, -1.0f, 0.0f, 1e-3);
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_F32, GPUDL_F32, 3, M, N, K, t & 1, t >> 1, 1, 1, 1.0f, 0.0f, 1e-5);
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_F32, GPUDL_F32, 3, M, N, K, t & 1, t >> 1, 1, 0, 1.0f, 1.0f, 1e-5);
            gpu_matmul_case(g, GPUDL_MATH_FP32, GPUDL_F16, GPUDL_F16, 2, M, N, K, t & 1, t >> 1, 0, 1, 1.0f, 0.0f, 1e-3);
        }
}

static void test_gpu_elementwise_reductions(void) {
    static const int64_t ns[] = {1, 7, 33, 1000, 1000003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    int d, op;
    NEED_GPU(g);
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++) {
            int64_t n = ns[s];
            double tol = dts[d] == GPUDL_F32 ? 1e-6 : dts[d] == GPUDL_F16 ? 1e-3 : 8e-3;
            gpudl_tensor a = host_rand(dts[d], 1, n, 0, 0), b = host_rand(dts[d], 1, n, 0, 0), o = make(c, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0);
            gpudl_tensor da = to_dev(g, &a), db = to_dev(g, &b), dout, got, r1 = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0), dr;
            float gv, cv;
            GPUDL_CHECK(gpudl_tensor_create_on(g, &dr, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, r1.shape));
            for (op = 0; op < 4; op++) {
                dout = to_dev(g, &b);
                CHECK_OK(gpudl_tensor_copy(c, &o, &b));
                if (op == 0) { CHECK_OK(gpudl_add(g, &dout, &da, &db)); CHECK_OK(gpudl_add(c, &o, &a, &b)); }
                if (op == 1) { CHECK_OK(gpudl_mul(g, &dout, &da, &db)); CHECK_OK(gpudl_mul(c, &o, &a, &b)); }
                if (op == 2) { CHECK_OK(gpudl_scale(g, &dout, 3.0f)); CHECK_OK(gpudl_scale(c, &o, 3.0f)); }
                if (op == 3) { CHECK_OK(gpudl_axpy(g, &dout, -0.5f, &da)); CHECK_OK(gpudl_axpy(c, &o, -0.5f, &a)); }
                got = to_host(g, &dout);
                CHECKF(max_rel(&got, &o, 1.0) <= tol, "GPU op %d %s n=%lld", op, gpudl_dtype_name(dts[d]), (long long)n);
                gpudl_tensor_free(c, &got); gpudl_tensor_free(g, &dout);
            }
            CHECK_OK(gpudl_sum(g, &dr, &da)); CHECK_OK(gpudl_sum(c, &r1, &a));
            CHECK_OK(gpudl_tensor_item(g, &dr, 0, &gv)); CHECK_OK(gpudl_tensor_item(c, &r1, 0, &cv));
            CHECKF(fabs(gv - cv) <= 1e-5 * (double)n, "GPU sum %s n=%lld: %g vs %g", gpudl_dtype_name(dts[d]), (long long)n, (double)gv, (double)cv);
            CHECK_OK(gpudl_max(g, &dr, &da)); CHECK_OK(gpudl_max(c, &r1, &a));
            CHECK_OK(gpudl_tensor_item(g, &dr, 0, &gv)); CHECK_OK(gpudl_tensor_item(c, &r1, 0, &cv));
            CHECKF(gv == cv, "GPU max %s n=%lld: %g vs %g", gpudl_dtype_name(dts[d]), (long long)n, (double)gv, (double)cv);
            gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &o); gpudl_tensor_free(c, &r1);
            gpudl_tensor_free(g, &da); gpudl_tensor_free(g, &db); gpudl_tensor_free(g, &dr);
        }
}

static void test_gpu_argmax(void) {
    static const int64_t shapes[][2] = {{1, 1}, {7, 33}, {33, 7}, {1000, 10}, {3, 1000}, {4097, 129}};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    NEED_GPU(g);
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gpudl_tensor x = host_rand(GPUDL_BF16, 2, shapes[s][0], shapes[s][1], 0), o = make(c, GPUDL_DEVICE_CPU, GPUDL_I32, 1, shapes[s][0], 0, 0);
        gpudl_tensor dx, dout, got;
        if (s == 2) { ((uint16_t *)x.data)[5] = 0x7fc0; ((uint16_t *)x.data)[3] = 0x7fc0; }   /* NaNs */
        if (s == 1) { ((uint16_t *)x.data)[10] = 0x4000; ((uint16_t *)x.data)[20] = 0x4000; } /* a tie */
        dx = to_dev(g, &x);
        GPUDL_CHECK(gpudl_tensor_create_on(g, &dout, GPUDL_DEVICE_CUDA, GPUDL_I32, 1, o.shape));
        CHECK_OK(gpudl_argmax_rows(g, &dout, &dx));
        CHECK_OK(gpudl_argmax_rows(c, &o, &x));
        got = to_host(g, &dout);
        CHECKF(memcmp(got.data, o.data, gpudl_tensor_bytes(&o)) == 0, "GPU argmax %lldx%lld differs from the CPU",
               (long long)shapes[s][0], (long long)shapes[s][1]);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &o); gpudl_tensor_free(c, &got);
        gpudl_tensor_free(g, &dx); gpudl_tensor_free(g, &dout);
    }
}

static void test_gpu_timer(void) {
    gpudl_timer tm;
    double ms = -1;
    mm_args m;
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor a = host_rand(GPUDL_F32, 2, 1024, 1024, 0);
    NEED_GPU(g);
    m.a = to_dev(g, &a); m.b = to_dev(g, &a); m.c = to_dev(g, &a);
    CHECK_OK(gpudl_timer_create(g, &tm));
    CHECK(tm.ev[0] != NULL);
    CHECK_OK(gpudl_timer_start(&tm));
    CHECK_OK(run_mm(g, &m));
    CHECK_OK(gpudl_timer_stop(&tm));
    CHECK_OK(gpudl_timer_elapsed_ms(&tm, &ms));
    CHECKF(ms > 0 && ms < 1000, "event timer says %g ms", ms);
    gpudl_timer_destroy(&tm);
    gpudl_tensor_free(c, &a); gpudl_tensor_free(g, &m.a); gpudl_tensor_free(g, &m.b); gpudl_tensor_free(g, &m.c);
}

/* >>faults ---------------------------------------------------------------- */

#ifndef GPUDL_NO_CUDA
int test_k_oob_write(void *stream, float *buf, int n);        /* tests/gpu_faults.cu */
int test_k_illegal_address(void *stream);

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
    printf("child: sync -> %s: %s\n", gpudl_status_string(s), gpudl_ctx_last_error(ctx));
    if (s != GPUDL_ERR_CUDA_FATAL || !strstr(gpudl_ctx_last_error(ctx), "restart the process")) return 5;
    if (gpudl_tensor_fill(ctx, &t, 1.0f) != GPUDL_ERR_CUDA_FATAL) return 6;    /* later calls: the same status, no hang */
    if (gpudl_matmul(ctx, &t, &t, &t, 0, 0, 1, 0) != GPUDL_ERR_CUDA_FATAL) return 7;
    if (gpudl_ctx_sync(ctx) != GPUDL_ERR_CUDA_FATAL) return 8;
    gpudl_ctx_destroy(ctx);                                                      /* must not hang either */
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

static const char *g_argv0;

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
#endif
}

#ifndef GPUDL_NO_CUDA
static void test_gpu_library_status_names(void) { test_library_status_names(); }
#else
static void test_gpu_library_status_names(void) { SKIP("CPU-only build (GPUDL_NO_CUDA)"); }
#endif

/* >>main ------------------------------------------------------------------ */

static const test_case tests[] = {
    {"status_strings", test_status_strings},
    {"ctx_defaults", test_ctx_defaults},
    {"ctx_cuda_request_without_gpu", test_ctx_cuda_request},
    {"ctx_auto_fallback", test_ctx_auto_fallback},
    {"f16_known_values", test_f16_known_values},
    {"f16_roundtrip_and_rounding", test_f16_roundtrip_and_rounding},
    {"bf16_values_and_rounding", test_bf16_values_and_rounding},
    {"half_bulk_conversions", test_half_bulk_conversions},
    {"tensor_lifecycle", test_tensor_lifecycle},
    {"fill_and_random", test_fill_and_random},
    {"copy_cast", test_copy_cast},
    {"matmul_f32", test_matmul_f32},
    {"matmul_f32_each_kernel", test_matmul_f32_each_kernel},
    {"matmul_batched", test_matmul_batched},
    {"matmul_half", test_matmul_half},
    {"matmul_500_cube", test_matmul_500_cube},
    {"matmul_errors", test_matmul_errors},
    {"cpu_flush_denormals", test_cpu_flush_denormals},
    {"matmul_inside_user_threads", test_matmul_inside_user_threads},
    {"elementwise", test_elementwise},
    {"reductions", test_reductions},
    {"argmax_rows", test_argmax_rows},
    {"timer_and_bench", test_timer_and_bench},
    {"gpu_device_info", test_gpu_device_info},
    {"gpu_fill_random_cast", test_gpu_fill_random_cast},
    {"gpu_copies", test_gpu_copies},
    {"gpu_matmul", test_gpu_matmul},
    {"gpu_elementwise_reductions", test_gpu_elementwise_reductions},
    {"gpu_argmax", test_gpu_argmax},
    {"gpu_timer", test_gpu_timer},
    {"gpu_sticky_error_is_fatal", test_gpu_sticky_error_is_fatal},
    {"cublas_cudnn_status_names", test_gpu_library_status_names},
};

int main(int argc, char **argv) {
    g_argv0 = argv[0];
#ifndef GPUDL_NO_CUDA
    if (argc > 1 && !strcmp(argv[1], "--child-sticky-error")) return child_sticky_error();
    if (argc > 1 && !strcmp(argv[1], "--control-oob")) return child_control_oob();
#endif
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
