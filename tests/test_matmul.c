/* gpudl tests: matmul. gpudl_matmul on the CPU against float64 (every
   transpose, batched, shared operands, F16/BF16 inputs, each CPU
   micro-kernel, inside the caller's OpenMP threads, its errors) and, in the
   nvcc build, on the GPU against the CPU (FP32, TF32, F16, BF16).
   Part of the core suite: tests/suite_core.c #includes it (see there). */

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
        {50, 16, 64}, {37, 10, 131}, {300, 13, 785},   /* few columns: dot products on AVX-512 (with B transposed) */
        {20, 40, 2100},                                /* K in blocks (at most 1024 deep) */
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
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__GNUC__)
    gpudl_ctx *c = cpu_ctx();
    gpudl_cpu_gemm keep = c->cpu_gemm, k;
    for (k = GPUDL_CPU_GEMM_C; k <= GPUDL_CPU_GEMM_NEON; k = (gpudl_cpu_gemm)(k + 1)) {
        c->cpu_gemm = k;   /* what desc.cpu_gemm sets (a kernel this CPU lacks: the best it has) */
        matmul_suite();
    }
    c->cpu_gemm = keep;
#else
    SKIP("micro-kernel selection is for x86-64 and aarch64 with gcc or clang");
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
            /* the CPU widens 16-bit blocks where it packs them: 85 rows leave a block of one row (84-row
               blocks), K = 300 two segments, transposed or not; K = 1 a strip one deep */
            matmul_case(dts[d], GPUDL_F32, 1, 85, 70, 300, t & 1, t >> 1, 0, 0, 1.0f, 0.0f, 1e-5);
            matmul_case(dts[d], GPUDL_F32, 1, 40, 33, 1, t & 1, t >> 1, 0, 0, 1.0f, 0.0f, 1e-5);
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
