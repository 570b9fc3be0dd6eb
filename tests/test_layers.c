/* gpudl tests: activation, linear, loss, conv, pool, batchnorm, dropout (the
   layer ops). Each forward and backward on the CPU against a float64
   reference; every layer with f16/bf16 activations; and, in the nvcc build,
   every layer on the GPU against the CPU, cuBLASLt's linear epilogues, the
   bias-gradient sums, batch norm's chunked passes, cuDNN's algorithm choice
   and a bad label's deferred error.
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* A device result against its host reference (the GPU tests below). */
static void gpu_vs_cpu(gpudl_ctx *g, const char *what, const gpudl_tensor *dev, const gpudl_tensor *host, double tol) {
    gpudl_tensor back = to_host(g, dev);
    double e = max_rel(&back, host, 1.0);
    CHECKF(e <= tol, "%s: GPU vs CPU rel err %g > %g", what, e, tol);
    gpudl_tensor_free(cpu_ctx(), &back);
}

/* >>activation ------------------------------------------------------------ */

static double act_ref(int act, double x, double a) {
    switch (act) {
    case GPUDL_ACT_RELU: return x > 0 ? x : 0;
    case GPUDL_ACT_LEAKY_RELU: return x > 0 ? x : a * x;
    case GPUDL_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case GPUDL_ACT_TANH: return tanh(x);
    default: return 1 / (1 + exp(-x));
    }
}

static double dact_ref(int act, double x, double a) {
    switch (act) {
    case GPUDL_ACT_RELU: return x > 0 ? 1 : 0;
    case GPUDL_ACT_LEAKY_RELU: return x > 0 ? 1 : a;
    case GPUDL_ACT_GELU: return 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846);
    case GPUDL_ACT_TANH: return 1 - tanh(x) * tanh(x);
    default: { double s = 1 / (1 + exp(-x)); return s * (1 - s); }
    }
}

static void test_activations(void) {
    static const int64_t ns[] = {1, 7, 33, 1000};
    gpudl_ctx *c = cpu_ctx();
    int act;
    size_t s;
    for (act = GPUDL_ACT_RELU; act <= GPUDL_ACT_SIGMOID; act++)
        for (s = 0; s < 4; s++) {
            int64_t n = ns[s], i;
            float alpha = act == GPUDL_ACT_LEAKY_RELU && s == 2 ? 0.2f : 0.0f;
            double a = alpha == 0.0f ? 0.01 : alpha;
            gpudl_tensor x = rnd(1, &n, -4.0f, 4.0f), y = mk(c, GPUDL_F32, 1, &n), dy = rnd(1, &n, -1.0f, 1.0f), dx = mk(c, GPUDL_F32, 1, &n);
            double *ry = dalloc(n), *rdx = dalloc(n);
            CHECK_OK(gpudl_act_forward(c, (gpudl_act)act, alpha, &y, &x));
            CHECK_OK(gpudl_act_backward(c, (gpudl_act)act, alpha, &dx, &dy, &x, &y));
            for (i = 0; i < n; i++) {
                ry[i] = act_ref(act, F(&x)[i], a);
                rdx[i] = F(&dy)[i] * dact_ref(act, F(&x)[i], a);
            }
            /* values are O(1): errors relative to |ref| + 1 */
            CHECKF(rel_err(F(&y), ry, n, 1.0) < 2e-6, "act %d forward n=%lld: rel err %g", act, (long long)n, rel_err(F(&y), ry, n, 1.0));
            CHECKF(rel_err(F(&dx), rdx, n, 1.0) < 2e-6, "act %d backward n=%lld: rel err %g", act, (long long)n, rel_err(F(&dx), rdx, n, 1.0));
            free(ry); free(rdx);
            gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx);
        }
    {
        int64_t n = 4, m = 5;
        gpudl_tensor x = rnd(1, &n, -1, 1), y = mk(c, GPUDL_F32, 1, &m);
        CHECK_ST(gpudl_act_forward(c, GPUDL_ACT_RELU, 0, &y, &x), GPUDL_ERR_SHAPE);
        CHECK_ST(gpudl_act_forward(c, (gpudl_act)99, 0, &x, &x), GPUDL_ERR_INVALID_ARG);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
    }
}

/* >>linear ---------------------------------------------------------------- */

static void test_linear(void) {
    static const int64_t dims[][3] = {{1, 1, 1}, {7, 33, 5}, {33, 7, 1000}, {128, 784, 33}};   /* N, F, O */
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    for (s = 0; s < sizeof dims / sizeof dims[0]; s++) {
        int64_t N = dims[s][0], Fi = dims[s][1], O = dims[s][2], n, f, o;
        int64_t xs[2] = {N, Fi}, ws[2] = {O, Fi}, ys[2] = {N, O};
        gpudl_tensor x = rnd(2, xs, -1, 1), w = rnd(2, ws, -1, 1), b = rnd(1, &O, -1, 1), y = mk(c, GPUDL_F32, 2, ys);
        gpudl_tensor dy = rnd(2, ys, -1, 1), dx = mk(c, GPUDL_F32, 2, xs), dw = rnd(2, ws, -1, 1), db = rnd(1, &O, -1, 1);
        double *ry = dalloc(N * O), *rdx = dalloc(N * Fi), *rdw = dalloc(O * Fi), *rdb = dalloc(O);
        for (o = 0; o < O * Fi; o++) rdw[o] = F(&dw)[o];   /* parameter gradients accumulate */
        for (o = 0; o < O; o++) rdb[o] = F(&db)[o];
        CHECK_OK(gpudl_linear_forward(c, &y, &x, &w, &b));
        CHECK_OK(gpudl_linear_backward(c, &dx, &dw, &db, &dy, &x, &w));
        for (n = 0; n < N; n++)
            for (o = 0; o < O; o++) {
                double acc = F(&b)[o];
                for (f = 0; f < Fi; f++) acc += (double)F(&x)[n * Fi + f] * F(&w)[o * Fi + f];
                ry[n * O + o] = acc;
                rdb[o] += F(&dy)[n * O + o];
                for (f = 0; f < Fi; f++) {
                    rdx[n * Fi + f] += (double)F(&dy)[n * O + o] * F(&w)[o * Fi + f];
                    rdw[o * Fi + f] += (double)F(&dy)[n * O + o] * F(&x)[n * Fi + f];
                }
            }
        CHECKF(rel_err(F(&y), ry, N * O, 1.0) < 1e-5, "linear fwd %lldx%lldx%lld", (long long)N, (long long)Fi, (long long)O);
        CHECKF(rel_err(F(&dx), rdx, N * Fi, 1.0) < 1e-5, "linear dx");
        CHECKF(rel_err(F(&dw), rdw, O * Fi, 1.0) < 1e-5, "linear dw");
        CHECKF(rel_err(F(&db), rdb, O, 1.0) < 1e-5, "linear db");
        free(ry); free(rdx); free(rdw); free(rdb);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &y);
        gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx); gpudl_tensor_free(c, &dw); gpudl_tensor_free(c, &db);
    }
    {
        int64_t xs[2] = {3, 4}, ws[2] = {5, 6}, ys[2] = {3, 5};
        gpudl_tensor x = rnd(2, xs, -1, 1), w = rnd(2, ws, -1, 1), y = mk(c, GPUDL_F32, 2, ys);
        CHECK_ST(gpudl_linear_forward(c, &y, &x, &w, NULL), GPUDL_ERR_SHAPE);
        CHECKF(strstr(gpudl_ctx_last_error(c), "f32[3,4]") && strstr(gpudl_ctx_last_error(c), "f32[5,6]"), "%s", gpudl_ctx_last_error(c));
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &y);
    }
}

/* Bias gradients: out += the column sums of x (N, C) (linear) and the
   channel sums of x (N, C, H, W) (conv), against float64, at shapes that
   cross every edge of the GPU kernels: 32-column tiles, rows 32 apart,
   image chunks of about 8192 values, one chunk when C * chunks would pass
   the scratch, N = 1. Tolerance: relative to the sum of |terms|, for
   float accumulation of up to ~200 terms per thread. */
static void run_bias_sums(gpudl_ctx *d) {
    static const int64_t rows[][2] = {{1, 1}, {5, 33}, {33, 19}, {31, 64}, {128, 1024}, {1024, 10}, {1000, 70}, {3, 1000}};
    static const int64_t chans[][4] = {{2, 3, 7, 1}, {128, 6, 28, 28}, {128, 16, 10, 10}, {4, 1100, 3, 1}, {9, 5, 7, 143},
                                       {1, 2, 250, 200}, {33, 1, 1, 1}};
    gpudl_ctx *c = cpu_ctx();
    int on_gpu = gpudl_ctx_device(d) != GPUDL_DEVICE_CPU;
    size_t t;
    for (t = 0; t < sizeof rows / sizeof rows[0] + sizeof chans / sizeof chans[0]; t++) {
        int conv = t >= sizeof rows / sizeof rows[0];
        const int64_t *q = conv ? chans[t - sizeof rows / sizeof rows[0]] : rows[t];
        int64_t N = q[0], C = q[1], inner = conv ? q[2] * q[3] : 1, n, j, i;
        int64_t xs[4] = {N, 1, conv ? q[2] : 1, conv ? q[3] : 1}, ws[4] = {C, 1, 1, 1};
        gpudl_tensor x = rnd(conv ? 4 : 2, q, -1, 1), o = rnd(1, &C, -1, 1), dx, dout, back, img, w, dimg, dw;
        double *ref = dalloc(C), *mag = dalloc(C), worst = 0;
        gpudl_conv2d_desc cd;
        memset(&cd, 0, sizeof cd);
        for (j = 0; j < C; j++) { ref[j] = F(&o)[j]; mag[j] = fabs(F(&o)[j]); }
        for (n = 0; n < N; n++)
            for (j = 0; j < C; j++)
                for (i = 0; i < inner; i++) {
                    double v = F(&x)[(n * C + j) * inner + i];
                    ref[j] += v; mag[j] += fabs(v);
                }
        dx = on_gpu ? to_dev(d, &x) : x;
        dout = on_gpu ? to_dev(d, &o) : o;
        if (conv) {   /* db alone, through a 1x1 convolution with C outputs */
            img = rnd(4, xs, -1, 1); w = rnd(4, ws, -1, 1);
            dimg = on_gpu ? to_dev(d, &img) : img; dw = on_gpu ? to_dev(d, &w) : w;
            CHECK_OK(gpudl_conv2d_backward(d, NULL, NULL, &dout, &dx, &dimg, &dw, &cd));
            if (on_gpu) { gpudl_tensor_free(d, &dimg); gpudl_tensor_free(d, &dw); }
            gpudl_tensor_free(c, &img); gpudl_tensor_free(c, &w);
        } else {
            CHECK_OK(gpudl_sum_rows_acc(d, &dout, &dx));
        }
        back = on_gpu ? to_host(d, &dout) : dout;
        for (j = 0; j < C; j++) {
            double e = fabs(F(&back)[j] - ref[j]) / mag[j];
            if (!(e <= worst)) worst = e;
        }
        CHECKF(worst <= 3e-5, "%s sums of a (%lld, %lld, %lld) tensor: error %g of the sum of |terms|",
               conv ? "channel" : "column", (long long)N, (long long)C, (long long)inner, worst);
        if (on_gpu) { gpudl_tensor_free(d, &dx); gpudl_tensor_free(d, &dout); gpudl_tensor_free(c, &back); }
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &o);
        free(ref); free(mag);
    }
}

static void test_bias_sums(void) { run_bias_sums(cpu_ctx()); }

static void test_gpu_layers_bias_sums(void) {
    NEED_GPU(g);
    run_bias_sums(g);
}

/* cuBLASLt's bias and bias+ReLU epilogues against the CPU, f32/f16/bf16. */
static void test_gpu_layers_linear_lt(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    static const int64_t shapes[][3] = {{33, 37, 19}, {128, 784, 1024}, {5, 1024, 10}};
    gpudl_ctx *c = cpu_ctx();
    size_t t;
    int d, relu;
    NEED_GPU(g);
    g->use_lt = 1;
    for (d = 0; d < 3; d++)
        for (t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
            for (relu = 0; relu <= 1; relu++) {
                gpudl_dtype dt = d == 0 ? GPUDL_F32 : d == 1 ? GPUDL_F16 : GPUDL_BF16;
                int64_t xs[2] = {shapes[t][0], shapes[t][1]}, ws[2] = {shapes[t][2], shapes[t][1]}, ys[2] = {shapes[t][0], shapes[t][2]};
                gpudl_tensor x = rnd(2, xs, -1, 1), w = rnd(2, ws, -0.1f, 0.1f), b = rnd(1, &shapes[t][2], -1, 1);
                gpudl_tensor y = mk(c, GPUDL_F32, 2, ys), x16 = mk(c, dt, 2, xs), w16 = mk(c, dt, 2, ws), b16 = mk(c, dt, 1, &shapes[t][2]);
                gpudl_tensor gx, gw, gb, gy, back, backf = mk(c, GPUDL_F32, 2, ys);
                int done = 0;
                double e;
                /* the reference from the 16-bit values the GPU sees */
                CHECK_OK(gpudl_tensor_cast(c, &x16, &x)); CHECK_OK(gpudl_tensor_cast(c, &x, &x16));
                CHECK_OK(gpudl_tensor_cast(c, &w16, &w)); CHECK_OK(gpudl_tensor_cast(c, &w, &w16));
                CHECK_OK(gpudl_tensor_cast(c, &b16, &b)); CHECK_OK(gpudl_tensor_cast(c, &b, &b16));
                CHECK_OK(gpudl_linear_forward(c, &y, &x, &w, &b));
                if (relu) CHECK_OK(gpudl_act_forward(c, GPUDL_ACT_RELU, 0.0f, &y, &y));
                gx = to_dev(g, &x16); gw = to_dev(g, &w16); gb = to_dev(g, &b16);
                GPUDL_CHECK(gpudl_tensor_create(g, &gy, dt, 2, ys));
                CHECK_OK(gpudl__lt_linear(g, &gy, &gx, &gw, &gb, relu, NULL, &done));
                CHECKF(done, "cuBLASLt offered no algorithm for %s %lldx%lldx%lld %s", gpudl_dtype_name(dt),
                       (long long)shapes[t][0], (long long)shapes[t][1], (long long)shapes[t][2], relu ? "bias+relu" : "bias");
                back = to_host(g, &gy);
                CHECK_OK(gpudl_tensor_cast(c, &backf, &back));
                e = max_rel(&backf, &y, 1.0);
                CHECKF(e < (dt == GPUDL_F32 ? 1e-4 : dt == GPUDL_F16 ? 4e-3 : 2e-2), "cuBLASLt %s %s %lldx%lldx%lld: error %g",
                       relu ? "bias+relu" : "bias", gpudl_dtype_name(dt), (long long)shapes[t][0], (long long)shapes[t][1],
                       (long long)shapes[t][2], e);
                gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &y);
                gpudl_tensor_free(c, &x16); gpudl_tensor_free(c, &w16); gpudl_tensor_free(c, &b16);
                gpudl_tensor_free(c, &back); gpudl_tensor_free(c, &backf);
                gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gw); gpudl_tensor_free(g, &gb); gpudl_tensor_free(g, &gy);
            }
    g->use_lt = 1;   /* the default */
#endif
}

/* cuBLASLt plans are per alignment: a linear layer on operands only 4 (or 2)
   bytes aligned, after the same shape ran 256-byte aligned, must still work
   (cuBLASLt's heuristic assumes 256-byte alignment unless told, and an
   algorithm chosen for it may refuse less). And operands on two devices are
   an argument error, not a cuBLASLt call with a host pointer. */
static void test_gpu_layers_linear_lt_alignment(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    gpudl_ctx *c = cpu_ctx();
    int d;
    NEED_GPU(g);
    g->use_lt = 1;
    for (d = 0; d < 2; d++) {
        gpudl_dtype dt = d == 0 ? GPUDL_F32 : GPUDL_BF16;
        int64_t N = 12, F = 40, O = 24, xs[2] = {N, F}, ws[2] = {O, F}, ys[2] = {N, O};
        int64_t xbig = N * F + 1, ybig = N * O + 1, bbig = O + 1;
        gpudl_tensor x = rnd(2, xs, -1, 1), w = rnd(2, ws, -0.2f, 0.2f), b = rnd(1, &O, -1, 1), ref = mk(c, GPUDL_F32, 2, ys);
        gpudl_tensor x16 = mk(c, dt, 2, xs), w16 = mk(c, dt, 2, ws), b16 = mk(c, dt, 1, &O);
        gpudl_tensor gx, gw, gb, gy, bx, by, bb, vx, vy, vb, back, backf = mk(c, GPUDL_F32, 2, ys);
        int done = 0, pass;
        size_t es = gpudl_dtype_size(dt);
        CHECK_OK(gpudl_tensor_cast(c, &x16, &x)); CHECK_OK(gpudl_tensor_cast(c, &x, &x16));
        CHECK_OK(gpudl_tensor_cast(c, &w16, &w)); CHECK_OK(gpudl_tensor_cast(c, &w, &w16));
        CHECK_OK(gpudl_tensor_cast(c, &b16, &b)); CHECK_OK(gpudl_tensor_cast(c, &b, &b16));
        CHECK_OK(gpudl_linear_forward(c, &ref, &x, &w, &b));
        gx = to_dev(g, &x16); gw = to_dev(g, &w16); gb = to_dev(g, &b16);
        GPUDL_CHECK(gpudl_tensor_create(g, &gy, dt, 2, ys));
        /* the same operands one element into bigger buffers: aligned to one element only */
        GPUDL_CHECK(gpudl_tensor_create(g, &bx, dt, 1, &xbig));
        GPUDL_CHECK(gpudl_tensor_create(g, &by, dt, 1, &ybig));
        GPUDL_CHECK(gpudl_tensor_create(g, &bb, dt, 1, &bbig));
        vx = gx; vx.data = (char *)bx.data + es;
        vy = gy; vy.data = (char *)by.data + es;
        vb = gb; vb.data = (char *)bb.data + es;
        CHECK_OK(gpudl_tensor_copy(g, &vx, &gx));
        CHECK_OK(gpudl_tensor_copy(g, &vb, &gb));
        for (pass = 0; pass < 2; pass++) {
            gpudl_tensor *yy = pass ? &vy : &gy;
            CHECK_OK(gpudl__lt_linear(g, yy, pass ? &vx : &gx, &gw, &gb, 0, NULL, &done));
            CHECKF(done, "%s pass %d: cuBLASLt offered no algorithm", gpudl_dtype_name(dt), pass);
            back = to_host(g, yy);
            CHECK_OK(gpudl_tensor_cast(c, &backf, &back));
            CHECKF(max_rel(&backf, &ref, 1.0) < (dt == GPUDL_F32 ? 1e-4 : 2e-2), "%s, operands %s: error %g",
                   gpudl_dtype_name(dt), pass ? "one element off alignment" : "aligned", max_rel(&backf, &ref, 1.0));
            gpudl_tensor_free(c, &back);
        }
        /* a bias off 16-byte alignment (cuBLASLt reads it in 16-byte pieces): not cuBLASLt's */
        CHECK_OK(gpudl__lt_linear(g, &gy, &gx, &gw, &vb, 0, NULL, &done));
        CHECKF(!done, "%s: a bias one element off alignment went to cuBLASLt", gpudl_dtype_name(dt));
        /* x on the host, the rest on the GPU */
        CHECK_ST(gpudl__lt_linear(g, &gy, &x16, &gw, &gb, 0, NULL, &done), GPUDL_ERR_INVALID_ARG);
        CHECK_OK(gpudl_ctx_sync(g));
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &ref);
        gpudl_tensor_free(c, &x16); gpudl_tensor_free(c, &w16); gpudl_tensor_free(c, &b16); gpudl_tensor_free(c, &backf);
        gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gw); gpudl_tensor_free(g, &gb); gpudl_tensor_free(g, &gy);
        gpudl_tensor_free(g, &bx); gpudl_tensor_free(g, &by); gpudl_tensor_free(g, &bb);
    }
    g->use_lt = 1;   /* the default */
#endif
}

/* >>loss ------------------------------------------------------------------ */

static void test_softmax_xent(void) {
    static const int64_t dims[][2] = {{1, 1}, {7, 10}, {33, 3}, {100, 1000}};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    int ldt;
    for (s = 0; s < 4; s++)
        for (ldt = 0; ldt < 2; ldt++) {
            int64_t N = dims[s][0], K = dims[s][1], one = 1, r, k;
            int64_t zs[2] = {N, K};
            gpudl_tensor z = rnd(2, zs, -20, 20), p = mk(c, GPUDL_F32, 2, zs), dz = mk(c, GPUDL_F32, 2, zs), loss = mk(c, GPUDL_F32, 1, &one);
            gpudl_tensor lab = mk(c, ldt ? GPUDL_U8 : GPUDL_I32, 1, &N);
            double total = 0, *rp = dalloc(N * K), *rdz = dalloc(N * K);
            float got;
            if (N > 1) F(&z)[K] = 1000.0f;   /* a huge logit: log-sum-exp must stay finite */
            for (r = 0; r < N; r++) {
                int64_t L = (int64_t)(gpudl_rng_bits(11, (uint64_t)r) % (uint64_t)K);
                if (ldt) ((uint8_t *)lab.data)[r] = (uint8_t)(L % 256 < K ? L % 256 : 0);
                else ((int32_t *)lab.data)[r] = (int32_t)L;
            }
            CHECK_OK(gpudl_softmax_xent_forward(c, &loss, &p, &z, &lab));
            CHECK_OK(gpudl_softmax_xent_backward(c, &dz, &p, &lab, 2.0f));
            for (r = 0; r < N; r++) {
                double mx = -1e300, se = 0;
                int64_t L = ldt ? ((uint8_t *)lab.data)[r] : ((int32_t *)lab.data)[r];
                for (k = 0; k < K; k++) mx = F(&z)[r * K + k] > mx ? F(&z)[r * K + k] : mx;
                for (k = 0; k < K; k++) se += exp(F(&z)[r * K + k] - mx);
                total += mx + log(se) - F(&z)[r * K + L];
                for (k = 0; k < K; k++) {
                    rp[r * K + k] = exp(F(&z)[r * K + k] - mx) / se;
                    rdz[r * K + k] = 2.0 * (rp[r * K + k] - (k == L)) / N;
                }
            }
            got = F(&loss)[0];
            CHECKF(isfinite(got) && fabs(got - total / N) <= 1e-5 * (1 + fabs(total / N)), "xent %lldx%lld loss %g want %g",
                   (long long)N, (long long)K, (double)got, total / N);
            CHECKF(rel_err(F(&p), rp, N * K, 1e-6) < 1e-4, "xent probs");
            CHECKF(rel_err(F(&dz), rdz, N * K, 1e-3) < 1e-4, "xent backward");
            free(rp); free(rdz);
            if (N > 1) {   /* a label out of range is an error on the CPU */
                if (ldt) ((uint8_t *)lab.data)[0] = (uint8_t)K; else ((int32_t *)lab.data)[0] = -1;
                if (ldt == 0 || K < 256) CHECK_ST(gpudl_softmax_xent_forward(c, &loss, &p, &z, &lab), GPUDL_ERR_INVALID_ARG);
            }
            gpudl_tensor_free(c, &z); gpudl_tensor_free(c, &p); gpudl_tensor_free(c, &dz); gpudl_tensor_free(c, &loss); gpudl_tensor_free(c, &lab);
        }
}

static void test_mse(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t s[2] = {33, 7}, one = 1, i;
    gpudl_tensor p = rnd(2, s, -2, 2), t = rnd(2, s, -2, 2), d = mk(c, GPUDL_F32, 2, s), l = mk(c, GPUDL_F32, 1, &one);
    double ref = 0, *rd = dalloc(231);
    CHECK_OK(gpudl_mse_forward(c, &l, &p, &t));
    CHECK_OK(gpudl_mse_backward(c, &d, &p, &t, 0.5f));
    for (i = 0; i < 231; i++) {
        double e = (double)F(&p)[i] - F(&t)[i];
        ref += e * e;
        rd[i] = 0.5 * 2 * e / 231;
    }
    CHECK(fabs(F(&l)[0] - ref / 231) < 1e-6 * ref);
    CHECK(rel_err(F(&d), rd, 231, 1e-4) < 1e-5);
    free(rd);
    gpudl_tensor_free(c, &p); gpudl_tensor_free(c, &t); gpudl_tensor_free(c, &d); gpudl_tensor_free(c, &l);
}

/* A label outside [0, K) is an error on both devices: at once on the CPU;
   on the GPU at the next call that waits for it (the loss is NaN). */
static void test_gpu_xent_label_out_of_range(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t zs[2] = {5, 4}, one = 1;
    gpudl_tensor z = host_rand(GPUDL_F32, 2, 5, 4, 0), lab = make(c, GPUDL_DEVICE_CPU, GPUDL_I32, 1, 5, 0, 0);
    gpudl_tensor loss = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0), p = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 5, 4, 0);
    gpudl_tensor gz, glab, gloss, gp;
    float l = 0;
    int i;
    NEED_GPU(g);
    (void)zs; (void)one;
    for (i = 0; i < 5; i++) ((int32_t *)lab.data)[i] = i % 4;
    ((int32_t *)lab.data)[3] = 4;   /* out of range */
    CHECK_ST(gpudl_softmax_xent_forward(c, &loss, &p, &z, &lab), GPUDL_ERR_INVALID_ARG);
    gz = to_dev(g, &z); glab = to_dev(g, &lab);
    GPUDL_CHECK(gpudl_tensor_create_on(g, &gloss, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, loss.shape));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &gp, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, p.shape));
    CHECK_OK(gpudl_softmax_xent_forward(g, &gloss, &gp, &gz, &glab));   /* queued: the GPU has not looked yet */
    CHECK_ST(gpudl_tensor_item(g, &gloss, 0, &l), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(g), "row 3") != NULL, "message: %s", gpudl_ctx_last_error(g));
    CHECK_OK(gpudl_tensor_item(g, &gloss, 0, &l));                      /* said once; the context goes on */
    CHECKF(l != l, "the loss of a bad label is NaN on the GPU (got %g)", (double)l);
    ((int32_t *)lab.data)[3] = 1;
    CHECK_OK(gpudl_tensor_copy(g, &glab, &lab));
    CHECK_OK(gpudl_softmax_xent_forward(g, &gloss, &gp, &gz, &glab));
    CHECK_OK(gpudl_ctx_sync(g));
    gpudl_tensor_free(c, &z); gpudl_tensor_free(c, &lab); gpudl_tensor_free(c, &loss); gpudl_tensor_free(c, &p);
    gpudl_tensor_free(g, &gz); gpudl_tensor_free(g, &glab); gpudl_tensor_free(g, &gloss); gpudl_tensor_free(g, &gp);
}

/* >>conv ------------------------------------------------------------------ */

typedef struct { int64_t N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw; } conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 7, 7, 4, 3, 3, 1, 1, 0, 0, 1, 1},
    {1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1},
    {3, 2, 9, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1},
    {2, 3, 11, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2},
    {1, 4, 6, 6, 3, 5, 5, 1, 1, 2, 2, 1, 1},
    {2, 2, 7, 9, 3, 2, 3, 2, 1, 1, 0, 1, 2},
    {4, 1, 28, 28, 8, 5, 5, 1, 1, 2, 2, 1, 1},
    {3, 2, 9, 7, 5, 3, 2, 1, 1, 1, 0, 2, 1},   /* stride 1, uneven kernel and dilation: the wide columns */
    {2, 3, 6, 5, 2, 3, 5, 1, 1, 0, 0, 1, 1},   /* stride 1 but 5 wide for 1 output column: im2col */
};

static void conv_ref(const conv_case *q, const float *x, const float *w, const float *b, const float *dy, int64_t Ho, int64_t Wo,
                     double *y, double *dx, double *dw, double *db) {
    int64_t n, o, c, oh, ow, i, j;
    for (n = 0; n < q->N; n++)
        for (o = 0; o < q->O; o++)
            for (oh = 0; oh < Ho; oh++)
                for (ow = 0; ow < Wo; ow++) {
                    double acc = b[o], g = dy[((n * q->O + o) * Ho + oh) * Wo + ow];
                    db[o] += g;
                    for (c = 0; c < q->C; c++)
                        for (i = 0; i < q->kh; i++)
                            for (j = 0; j < q->kw; j++) {
                                int64_t h = oh * q->sh - q->ph + i * q->dh, ww = ow * q->sw - q->pw + j * q->dw, xi, wi;
                                if (h < 0 || h >= q->H || ww < 0 || ww >= q->W) continue;
                                xi = ((n * q->C + c) * q->H + h) * q->W + ww;
                                wi = ((o * q->C + c) * q->kh + i) * q->kw + j;
                                acc += (double)x[xi] * w[wi];
                                dx[xi] += g * w[wi];
                                dw[wi] += g * x[xi];
                            }
                    y[((n * q->O + o) * Ho + oh) * Wo + ow] = acc;
                }
}

/* A CPU context with its own thread count (1: every batch takes the
   one-image-per-thread convolution path; 5: these small batches take the
   whole-batch path). */
static gpudl_ctx *cpu_ctx_threads(int nt) {
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.num_threads = nt;
    GPUDL_CHECK(gpudl_ctx_create(&d, &ctx));
    return ctx;
}

static void test_conv2d(void) {
    gpudl_ctx *c = cpu_ctx(), *ctxs[3];
    size_t s, k;
    ctxs[0] = c; ctxs[1] = cpu_ctx_threads(1); ctxs[2] = cpu_ctx_threads(5);
    for (k = 0; k < 3; k++)
    for (s = 0; s < sizeof conv_cases / sizeof conv_cases[0]; s++) {
        const conv_case *q = &conv_cases[s];
        int64_t Ho = (q->H + 2 * q->ph - q->dh * (q->kh - 1) - 1) / q->sh + 1, Wo = (q->W + 2 * q->pw - q->dw * (q->kw - 1) - 1) / q->sw + 1;
        int64_t xs[4] = {q->N, q->C, q->H, q->W}, ws[4] = {q->O, q->C, q->kh, q->kw}, ys[4] = {q->N, q->O, Ho, Wo}, i;
        int64_t nx = q->N * q->C * q->H * q->W, nw = q->O * q->C * q->kh * q->kw, ny = q->N * q->O * Ho * Wo;
        gpudl_conv2d_desc d;
        gpudl_tensor x = rnd(4, xs, -1, 1), w = rnd(4, ws, -1, 1), b = rnd(1, &q->O, -1, 1), y = mk(c, GPUDL_F32, 4, ys);
        gpudl_tensor dy = rnd(4, ys, -1, 1), dx = mk(c, GPUDL_F32, 4, xs), dw = rnd(4, ws, -1, 1), db = rnd(1, &q->O, -1, 1);
        double *ry = dalloc(ny), *rdx = dalloc(nx), *rdw = dalloc(nw), *rdb = dalloc(q->O);
        memset(&d, 0, sizeof d);
        d.stride_h = q->sh; d.stride_w = q->sw; d.pad_h = q->ph; d.pad_w = q->pw; d.dil_h = q->dh; d.dil_w = q->dw;
        for (i = 0; i < nw; i++) rdw[i] = F(&dw)[i];
        for (i = 0; i < q->O; i++) rdb[i] = F(&db)[i];
        CHECK_OK(gpudl_conv2d_forward(ctxs[k], &y, &x, &w, &b, &d));
        CHECK_OK(gpudl_conv2d_backward(ctxs[k], &dx, &dw, &db, &dy, &x, &w, &d));
        conv_ref(q, F(&x), F(&w), F(&b), F(&dy), Ho, Wo, ry, rdx, rdw, rdb);
        /* FP32 sums of K terms: error grows like sqrt(K) */
        CHECKF(rel_err(F(&y), ry, ny, 1.0) < 1e-6 * sqrt((double)(q->C * q->kh * q->kw)) + 1e-6, "conv case %zu (%zu) forward: %g", s, k, rel_err(F(&y), ry, ny, 1.0));
        CHECKF(rel_err(F(&dx), rdx, nx, 1.0) < 1e-6 * sqrt((double)(q->O * q->kh * q->kw)) + 1e-6, "conv case %zu (%zu) dx: %g", s, k, rel_err(F(&dx), rdx, nx, 1.0));
        CHECKF(rel_err(F(&dw), rdw, nw, 1.0) < 1e-6 * sqrt((double)(q->N * Ho * Wo)) + 1e-6, "conv case %zu (%zu) dw: %g", s, k, rel_err(F(&dw), rdw, nw, 1.0));
        CHECKF(rel_err(F(&db), rdb, q->O, 1.0) < 1e-6 * sqrt((double)(q->N * Ho * Wo)) + 1e-6, "conv case %zu (%zu) db", s, k);
        free(ry); free(rdx); free(rdw); free(rdb);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &y);
        gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx); gpudl_tensor_free(c, &dw); gpudl_tensor_free(c, &db);
    }
    gpudl_ctx_destroy(ctxs[1]);
    gpudl_ctx_destroy(ctxs[2]);
    {
        int64_t xs[4] = {1, 3, 5, 5}, ws[4] = {2, 4, 3, 3}, ys[4] = {1, 2, 3, 3};
        gpudl_tensor x = rnd(4, xs, -1, 1), w = rnd(4, ws, -1, 1), y = mk(c, GPUDL_F32, 4, ys);
        CHECK_ST(gpudl_conv2d_forward(c, &y, &x, &w, NULL, NULL), GPUDL_ERR_SHAPE);
        CHECKF(strstr(gpudl_ctx_last_error(c), "f32[1,3,5,5]") && strstr(gpudl_ctx_last_error(c), "f32[2,4,3,3]"), "%s", gpudl_ctx_last_error(c));
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &y);
    }
}

/* How gpudl picks from cuDNN's heuristic results (best first): the first
   that ran (SUCCESS), fits the workspace limit and keeps strict FP32 strict;
   deterministic ones preferred; none usable: -1. */
static void test_gpu_conv_algorithm_choice(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    size_t big = (size_t)GPUDL_CUDNN_WORKSPACE_LIMIT + 1;
    gpudl__conv_cand a[4] = {{7, CUDNN_STATUS_NOT_SUPPORTED, 0, CUDNN_DETERMINISTIC, CUDNN_DEFAULT_MATH},
                             {6, CUDNN_STATUS_SUCCESS, big, CUDNN_DETERMINISTIC, CUDNN_DEFAULT_MATH},
                             {5, CUDNN_STATUS_SUCCESS, 1024, CUDNN_NON_DETERMINISTIC, CUDNN_DEFAULT_MATH},
                             {4, CUDNN_STATUS_SUCCESS, 4096, CUDNN_DETERMINISTIC, CUDNN_DEFAULT_MATH}};
    gpudl__conv_cand b[2] = {{1, CUDNN_STATUS_SUCCESS, 0, CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH},
                             {0, CUDNN_STATUS_SUCCESS, 0, CUDNN_NON_DETERMINISTIC, CUDNN_DEFAULT_MATH}};
    gpudl__conv_cand z[2] = {{1, CUDNN_STATUS_NOT_SUPPORTED, 0, CUDNN_DETERMINISTIC, CUDNN_DEFAULT_MATH},
                             {0, CUDNN_STATUS_SUCCESS, big, CUDNN_DETERMINISTIC, CUDNN_DEFAULT_MATH}};
    gpudl__conv_cand b2[2];
    NEED_GPU(g);
    (void)g;
    memcpy(b2, b, sizeof b);
    CHECK(gpudl__conv_choose(a, 4, CUDNN_DEFAULT_MATH) == 3);   /* not 0 (failed), 1 (too big), 2 (non-deterministic) */
    CHECK(gpudl__conv_choose(a, 3, CUDNN_DEFAULT_MATH) == 2);   /* no deterministic one left: the best usable */
    CHECK(gpudl__conv_choose(b, 2, CUDNN_TENSOR_OP_MATH) == 0 && b[0].math == CUDNN_TENSOR_OP_MATH);   /* its own math type */
    CHECK(gpudl__conv_choose(b2, 2, CUDNN_FMA_MATH) == 1 && b2[1].math == CUDNN_FMA_MATH);   /* strict FP32: no tensor ops */
    CHECK(gpudl__conv_choose(z, 2, CUDNN_DEFAULT_MATH) == -1);
#endif
}

/* >>pool ------------------------------------------------------------------ */

static void test_pool2d(void) {
    static const int64_t cases[][7] = {   /* H W k s p kind(1 max 2 avg) N*C */
        {6, 6, 2, 2, 0, 1, 6}, {7, 7, 3, 2, 1, 1, 4}, {5, 8, 2, 1, 0, 1, 3}, {6, 6, 2, 2, 0, 2, 6}, {7, 9, 3, 2, 1, 2, 2},
        {28, 28, 2, 2, 0, 1, 16}, {1, 1, 1, 1, 0, 1, 1},
    };
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    for (s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        int64_t H = cases[s][0], W = cases[s][1], k = cases[s][2], st = cases[s][3], p = cases[s][4], NC = cases[s][6];
        int64_t Ho = (H + 2 * p - k) / st + 1, Wo = (W + 2 * p - k) / st + 1, pl, oh, ow, i, j;
        int64_t xs[4] = {1, NC, H, W}, ys[4] = {1, NC, Ho, Wo};
        gpudl_pool2d_desc d;
        gpudl_tensor x = rnd(4, xs, -1, 1), y = mk(c, GPUDL_F32, 4, ys), dy = rnd(4, ys, -1, 1), dx = mk(c, GPUDL_F32, 4, xs);
        double *ry = dalloc(NC * Ho * Wo), *rdx = dalloc(NC * H * W);
        memset(&d, 0, sizeof d);
        d.kind = (gpudl_pool)cases[s][5]; d.k_h = d.k_w = k; d.stride_h = d.stride_w = st; d.pad_h = d.pad_w = p;
        CHECK_OK(gpudl_pool2d_forward(c, &y, &x, &d));
        CHECK_OK(gpudl_pool2d_backward(c, &dx, &dy, &x, &d));
        for (pl = 0; pl < NC; pl++)
            for (oh = 0; oh < Ho; oh++)
                for (ow = 0; ow < Wo; ow++) {
                    double best = -1e300, sum = 0, g = F(&dy)[(pl * Ho + oh) * Wo + ow];
                    int64_t arg = -1;
                    for (i = 0; i < k; i++)
                        for (j = 0; j < k; j++) {
                            int64_t h = oh * st - p + i, w = ow * st - p + j;
                            if (h < 0 || h >= H || w < 0 || w >= W) continue;
                            sum += F(&x)[(pl * H + h) * W + w];
                            if (F(&x)[(pl * H + h) * W + w] > best) { best = F(&x)[(pl * H + h) * W + w]; arg = h * W + w; }
                        }
                    ry[(pl * Ho + oh) * Wo + ow] = d.kind == GPUDL_POOL_MAX ? best : sum / (double)(k * k);
                    if (d.kind == GPUDL_POOL_MAX) rdx[pl * H * W + arg] += g;
                    else for (i = 0; i < k; i++) for (j = 0; j < k; j++) {
                        int64_t h = oh * st - p + i, w = ow * st - p + j;
                        if (h >= 0 && h < H && w >= 0 && w < W) rdx[(pl * H + h) * W + w] += g / (double)(k * k);
                    }
                }
        CHECKF(rel_err(F(&y), ry, NC * Ho * Wo, 1e-6) < 1e-6, "pool case %zu forward", s);
        CHECKF(rel_err(F(&dx), rdx, NC * H * W, 1.0) < 1e-6, "pool case %zu backward", s);
        free(ry); free(rdx);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx);
    }
}

/* The 2x2 / stride 2 CPU fast path (SIMD for four windows at a time, then
   scalar) against the general path, bit for bit, on ties (the first maximum
   wins), NaN (wins), -0.0 (avg sums from +0.0, backward adds onto +0.0).
   A 3-row input takes the general path (H is not 2 Ho) and its first two
   rows are the same five windows. */
static void test_pool2d_2x2_special(void) {
    static const float plane[20] = {
        1.0f, 1.0f, -0.0f, NAN, 3.0f, 2.0f, NAN, 5.0f, -1.0f, -2.0f,    /* windows: tie, NaN, tie, NaN first, tail */
        0.5f, 1.0f, 2.0f, NAN, 3.0f, 1.0f, NAN, 7.0f, -0.5f, -3.0f};
    static const float dyv[5] = {-0.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    gpudl_ctx *c = cpu_ctx();
    int kind;
    for (kind = GPUDL_POOL_MAX; kind <= GPUDL_POOL_AVG; kind++) {
        int64_t x2s[4] = {1, 1, 2, 10}, x3s[4] = {1, 1, 3, 10}, ys[4] = {1, 1, 1, 5};
        gpudl_tensor x2 = mk(c, GPUDL_F32, 4, x2s), x3 = mk(c, GPUDL_F32, 4, x3s), y2 = mk(c, GPUDL_F32, 4, ys);
        gpudl_tensor y3 = mk(c, GPUDL_F32, 4, ys), dy = mk(c, GPUDL_F32, 4, ys), dx2 = mk(c, GPUDL_F32, 4, x2s);
        gpudl_tensor dx3 = mk(c, GPUDL_F32, 4, x3s);
        gpudl_pool2d_desc d;
        float *a = F(&x2), *b = F(&x3);
        int i;
        for (i = 0; i < 20; i++) a[i] = b[i] = kind == GPUDL_POOL_MAX ? plane[i] : (i % 10 < 2 ? -0.0f : (float)i);
        for (i = 20; i < 30; i++) b[i] = 100.0f;   /* the general path's unused third row */
        for (i = 0; i < 5; i++) F(&dy)[i] = dyv[i];
        memset(&d, 0, sizeof d);
        d.kind = (gpudl_pool)kind; d.k_h = d.k_w = 2; d.stride_h = d.stride_w = 2;
        CHECK_OK(gpudl_pool2d_forward(c, &y2, &x2, &d));
        CHECK_OK(gpudl_pool2d_forward(c, &y3, &x3, &d));
        CHECK_OK(gpudl_pool2d_backward(c, &dx2, &dy, &x2, &d));
        CHECK_OK(gpudl_pool2d_backward(c, &dx3, &dy, &x3, &d));
        CHECKF(!memcmp(F(&y2), F(&y3), 5 * sizeof(float)), "pool kind %d forward: %g %g %g %g %g vs %g %g %g %g %g", kind,
               (double)F(&y2)[0], (double)F(&y2)[1], (double)F(&y2)[2], (double)F(&y2)[3], (double)F(&y2)[4],
               (double)F(&y3)[0], (double)F(&y3)[1], (double)F(&y3)[2], (double)F(&y3)[3], (double)F(&y3)[4]);
        CHECKF(!memcmp(F(&dx2), F(&dx3), 20 * sizeof(float)), "pool kind %d backward differs from the general path", kind);
        if (kind == GPUDL_POOL_MAX) {
            CHECKF(F(&y2)[0] == 1.0f && isnan(F(&y2)[1]) && F(&y2)[2] == 3.0f && isnan(F(&y2)[3]) && F(&y2)[4] == -0.5f,
                   "max: %g %g %g %g %g", (double)F(&y2)[0], (double)F(&y2)[1], (double)F(&y2)[2], (double)F(&y2)[3],
                   (double)F(&y2)[4]);
            CHECKF(!signbit(F(&dx2)[0]) && F(&dx2)[3] == 3.0f && F(&dx2)[13] == 0.0f && F(&dx2)[4] == 4.0f &&
                   F(&dx2)[14] == 0.0f && F(&dx2)[6] == 5.0f && F(&dx2)[16] == 0.0f && F(&dx2)[18] == 6.0f,
                   "max backward: first maximum, first NaN, +0 from -0");
        } else {
            CHECKF(F(&y2)[0] == 0.0f && !signbit(F(&y2)[0]), "avg of -0s: %g", (double)F(&y2)[0]);
        }
        gpudl_tensor_free(c, &x2); gpudl_tensor_free(c, &x3); gpudl_tensor_free(c, &y2); gpudl_tensor_free(c, &y3);
        gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx2); gpudl_tensor_free(c, &dx3);
    }
}

/* >>batchnorm ------------------------------------------------------------- */

static void test_batchnorm(void) {
    static const int64_t cases[][3] = {{4, 3, 25}, {7, 5, 1}, {2, 1, 33}, {16, 8, 49}};   /* N C inner */
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    int training;
    for (s = 0; s < 4; s++)
        for (training = 1; training >= 0; training--) {
            int64_t N = cases[s][0], C = cases[s][1], in = cases[s][2], M = N * in, ch, n, i;
            int64_t xs[3] = {N, C, in};
            gpudl_tensor x = rnd(3, xs, -2, 3), y = mk(c, GPUDL_F32, 3, xs), dy = rnd(3, xs, -1, 1), dx = mk(c, GPUDL_F32, 3, xs);
            gpudl_tensor g = rnd(1, &C, 0.5f, 1.5f), b = rnd(1, &C, -1, 1), rm = rnd(1, &C, -1, 1), rv = rnd(1, &C, 0.5f, 2.0f);
            gpudl_tensor sm = mk(c, GPUDL_F32, 1, &C), si = mk(c, GPUDL_F32, 1, &C), dg = rnd(1, &C, -1, 1), db = rnd(1, &C, -1, 1);
            double *ry = dalloc(N * C * in), *rdx = dalloc(N * C * in), *rrm = dalloc(C), *rrv = dalloc(C), *rdg = dalloc(C), *rdb = dalloc(C);
            for (ch = 0; ch < C; ch++) {
                double mean = 0, var = 0, inv, sdy = 0, sdyx = 0;
                for (n = 0; n < N; n++) for (i = 0; i < in; i++) mean += F(&x)[(n * C + ch) * in + i];
                mean /= M;
                for (n = 0; n < N; n++) for (i = 0; i < in; i++) { double e = F(&x)[(n * C + ch) * in + i] - mean; var += e * e; }
                var /= M;
                if (!training) { mean = F(&rm)[ch]; var = F(&rv)[ch]; }
                inv = 1 / sqrt(var + 1e-5);
                rrm[ch] = training ? 0.9 * F(&rm)[ch] + 0.1 * mean : F(&rm)[ch];
                rrv[ch] = training ? 0.9 * F(&rv)[ch] + 0.1 * var * M / (M - 1) : F(&rv)[ch];
                for (n = 0; n < N; n++) for (i = 0; i < in; i++) {
                    int64_t k = (n * C + ch) * in + i;
                    double xh = (F(&x)[k] - mean) * inv;
                    ry[k] = xh * F(&g)[ch] + F(&b)[ch];
                    sdy += F(&dy)[k];
                    sdyx += F(&dy)[k] * xh;
                }
                rdg[ch] = F(&dg)[ch] + sdyx;
                rdb[ch] = F(&db)[ch] + sdy;
                for (n = 0; n < N; n++) for (i = 0; i < in; i++) {
                    int64_t k = (n * C + ch) * in + i;
                    double xh = (F(&x)[k] - mean) * inv;
                    rdx[k] = F(&g)[ch] * inv * (F(&dy)[k] - sdy / M - xh * sdyx / M);
                }
            }
            CHECK_OK(gpudl_batchnorm_forward(c, &y, &sm, &si, &x, &g, &b, &rm, &rv, training, 0.1f, 1e-5f));
            CHECKF(rel_err(F(&y), ry, N * C * in, 1.0) < 1e-5, "bn forward case %zu training %d", s, training);
            CHECKF(rel_err(F(&rm), rrm, C, 1e-3) < 1e-5 && rel_err(F(&rv), rrv, C, 1e-3) < 1e-5, "bn running stats case %zu", s);
            if (training) {
                CHECK_OK(gpudl_batchnorm_backward(c, &dx, &dg, &db, &dy, &x, &g, &sm, &si));
                CHECKF(rel_err(F(&dx), rdx, N * C * in, 1.0) < 2e-5, "bn dx case %zu: %g", s, rel_err(F(&dx), rdx, N * C * in, 1.0));
                CHECKF(rel_err(F(&dg), rdg, C, 1.0) < 1e-5 && rel_err(F(&db), rdb, C, 1.0) < 1e-5, "bn dgamma/dbeta case %zu", s);
            }
            free(ry); free(rdx); free(rrm); free(rrv); free(rdg); free(rdb);
            gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx);
            gpudl_tensor_free(c, &g); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &rm); gpudl_tensor_free(c, &rv);
            gpudl_tensor_free(c, &sm); gpudl_tensor_free(c, &si); gpudl_tensor_free(c, &dg); gpudl_tensor_free(c, &db);
        }
}

/* Batch norm on the GPU at sizes where its passes split each channel into
   several image chunks (and unevenly), in training and eval mode, against
   the CPU. */
static void test_gpu_layers_batchnorm_chunks(void) {
    static const int64_t shapes[][4] = {{64, 6, 14, 14}, {128, 16, 28, 28}, {9, 5, 7, 143}, {300, 2, 1, 1}, {2, 40, 3, 3}};
    gpudl_ctx *c = cpu_ctx();
    size_t t;
    int training;
    NEED_GPU(g);
    for (t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
        for (training = 1; training >= 0; training--) {
            int64_t C = shapes[t][1];
            gpudl_tensor x = rnd(4, shapes[t], -2, 3), dy = rnd(4, shapes[t], -1, 1), y = mk(c, GPUDL_F32, 4, shapes[t]);
            gpudl_tensor dx = mk(c, GPUDL_F32, 4, shapes[t]), gam = rnd(1, &C, 0.5f, 1.5f), bet = rnd(1, &C, -1, 1);
            gpudl_tensor rm = rnd(1, &C, -1, 1), rv = rnd(1, &C, 0.5f, 2), sm = rnd(1, &C, -1, 1), si = rnd(1, &C, 0.5f, 2);
            gpudl_tensor dg = rnd(1, &C, -1, 1), db = rnd(1, &C, -1, 1);
            gpudl_tensor gx = to_dev(g, &x), gdy = to_dev(g, &dy), gy = to_dev(g, &y), gdx = to_dev(g, &dx), ggam = to_dev(g, &gam);
            gpudl_tensor gbet = to_dev(g, &bet), grm = to_dev(g, &rm), grv = to_dev(g, &rv), gsm = to_dev(g, &sm), gsi = to_dev(g, &si);
            gpudl_tensor gdg = to_dev(g, &dg), gdb = to_dev(g, &db);
            CHECK_OK(gpudl_batchnorm_forward(c, &y, &sm, &si, &x, &gam, &bet, &rm, &rv, training, 0.1f, 1e-5f));
            CHECK_OK(gpudl_batchnorm_forward(g, &gy, &gsm, &gsi, &gx, &ggam, &gbet, &grm, &grv, training, 0.1f, 1e-5f));
            gpu_vs_cpu(g, "batchnorm forward", &gy, &y, 1e-5);
            gpu_vs_cpu(g, "batchnorm saved mean", &gsm, &sm, 1e-5);
            gpu_vs_cpu(g, "batchnorm saved invstd", &gsi, &si, 1e-5);
            gpu_vs_cpu(g, "batchnorm running mean", &grm, &rm, 1e-5);
            gpu_vs_cpu(g, "batchnorm running var", &grv, &rv, 1e-5);
            CHECK_OK(gpudl_batchnorm_backward(c, &dx, &dg, &db, &dy, &x, &gam, &sm, &si));
            CHECK_OK(gpudl_batchnorm_backward(g, &gdx, &gdg, &gdb, &gdy, &gx, &ggam, &gsm, &gsi));
            gpu_vs_cpu(g, "batchnorm dx", &gdx, &dx, 1e-4);
            gpu_vs_cpu(g, "batchnorm dgamma", &gdg, &dg, 1e-4);
            gpu_vs_cpu(g, "batchnorm dbeta", &gdb, &db, 1e-4);
            CHECK_OK(gpudl_batchnorm_backward(g, NULL, &gdg, NULL, &gdy, &gx, &ggam, &gsm, &gsi));   /* no dx, no dbeta */
            CHECK_OK(gpudl_batchnorm_backward(c, NULL, &dg, NULL, &dy, &x, &gam, &sm, &si));
            gpu_vs_cpu(g, "batchnorm dgamma (alone)", &gdg, &dg, 1e-4);
            gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dx);
            gpudl_tensor_free(c, &gam); gpudl_tensor_free(c, &bet); gpudl_tensor_free(c, &rm); gpudl_tensor_free(c, &rv);
            gpudl_tensor_free(c, &sm); gpudl_tensor_free(c, &si); gpudl_tensor_free(c, &dg); gpudl_tensor_free(c, &db);
            gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gy); gpudl_tensor_free(g, &gdx);
            gpudl_tensor_free(g, &ggam); gpudl_tensor_free(g, &gbet); gpudl_tensor_free(g, &grm); gpudl_tensor_free(g, &grv);
            gpudl_tensor_free(g, &gsm); gpudl_tensor_free(g, &gsi); gpudl_tensor_free(g, &gdg); gpudl_tensor_free(g, &gdb);
        }
}

/* >>dropout --------------------------------------------------------------- */

static void test_dropout(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t n = 100003, i, kept = 0, bad = 0;
    gpudl_tensor x = rnd(1, &n, 0.5f, 1.5f), y = mk(c, GPUDL_F32, 1, &n), dy = rnd(1, &n, -1, 1), dx = mk(c, GPUDL_F32, 1, &n);
    gpudl_tensor y2 = mk(c, GPUDL_F32, 1, &n);
    CHECK_OK(gpudl_dropout_forward(c, &y, &x, 0.3f, 42, 1000));
    CHECK_OK(gpudl_dropout_backward(c, &dx, &dy, 0.3f, 42, 1000));
    for (i = 0; i < n; i++) {
        int keep = F(&y)[i] != 0.0f;
        kept += keep;
        if (keep && F(&y)[i] != F(&x)[i] / 0.7f) bad++;
        if (F(&dx)[i] != (keep ? F(&dy)[i] / 0.7f : 0.0f)) bad++;   /* the same mask in backward */
    }
    CHECKF(fabs((double)kept / n - 0.7) < 0.01, "kept fraction %g", (double)kept / n);
    CHECKF(bad == 0, "%lld elements disagree with the mask", (long long)bad);
    CHECK_OK(gpudl_dropout_forward(c, &y2, &x, 0.3f, 42, 1000));          /* reproducible */
    CHECK(memcmp(y.data, y2.data, (size_t)n * 4) == 0);
    CHECK_OK(gpudl_dropout_forward(c, &y2, &x, 0.3f, 42, 1001));          /* another offset, another mask */
    CHECK(memcmp(y.data, y2.data, (size_t)n * 4) != 0);
    CHECK_OK(gpudl_dropout_forward(c, &y2, &x, 0.0f, 42, 0));
    CHECK(memcmp(x.data, y2.data, (size_t)n * 4) == 0);
    CHECK_OK(gpudl_dropout_forward(c, &y2, &x, 1.0f, 42, 0));
    CHECK(F(&y2)[0] == 0.0f && F(&y2)[n - 1] == 0.0f);
    CHECK_ST(gpudl_dropout_forward(c, &y2, &x, 1.5f, 42, 0), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx); gpudl_tensor_free(c, &y2);
}

/* >>every layer with f16/bf16 activations --------------------------------- */

/* One run of the 16-bit layers on context d (the CPU or the GPU): each op
   gets 16-bit operands and is compared with the f32 op on the host applied
   to exactly the values the 16-bit op saw; outputs stored in 16 bits must
   be within ulps units of their precision (one rounding, plus the GEMM's
   own on the GPU), f32 outputs (weight gradients, statistics) close. */
typedef struct k16 {
    gpudl_ctx *d;
    gpudl_dtype dt;
    double ulp;      /* one unit in the last place, relative */
    int n;
    gpudl_ctx *owner[96];
    gpudl_tensor t[96];
} k16;

static gpudl_tensor *k_keep(k16 *k, gpudl_ctx *c, gpudl_tensor t) {
    if (k->n == 96) { fprintf(stderr, "k16: too many tensors\n"); exit(1); }
    k->owner[k->n] = c;
    k->t[k->n] = t;
    return &k->t[k->n++];
}

/* A random host tensor rounded to k->dt in place; returns its 16-bit copy on d. */
static gpudl_tensor *k_in(k16 *k, gpudl_tensor **host, int ndim, const int64_t *shape, float lo, float hi) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor h16 = mk(c, k->dt, ndim, shape);
    *host = k_keep(k, c, rnd(ndim, shape, lo, hi));
    GPUDL_CHECK(gpudl_tensor_cast(c, &h16, *host));
    GPUDL_CHECK(gpudl_tensor_cast(c, *host, &h16));   /* the host copy now holds exactly the 16-bit values */
    if (gpudl_ctx_device(k->d) == GPUDL_DEVICE_CPU) return k_keep(k, c, h16);
    {
        gpudl_tensor *t = k_keep(k, k->d, to_dev(k->d, &h16));
        gpudl_tensor_free(c, &h16);
        return t;
    }
}

/* An uninitialised tensor of dtype dt on d (or a copy of host when given). */
static gpudl_tensor *k_new(k16 *k, gpudl_dtype dt, int ndim, const int64_t *shape, const gpudl_tensor *host) {
    gpudl_tensor t;
    GPUDL_CHECK(gpudl_tensor_create(k->d, &t, dt, ndim, shape));
    if (host) GPUDL_CHECK(gpudl_tensor_copy(k->d, &t, host));
    return k_keep(k, k->d, t);
}

/* A host f32 copy of a tensor on d: the exact values it holds. */
static gpudl_tensor *k_back(k16 *k, const gpudl_tensor *t) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor h = gpudl_ctx_device(k->d) == GPUDL_DEVICE_CPU ? *t : to_host(k->d, t), f = mk(c, GPUDL_F32, t->ndim, t->shape);
    GPUDL_CHECK(gpudl_tensor_cast(c, &f, &h));
    if (gpudl_ctx_device(k->d) != GPUDL_DEVICE_CPU) gpudl_tensor_free(c, &h);
    return k_keep(k, c, f);
}

static void k_close(k16 *k, const char *what, const gpudl_tensor *got, const gpudl_tensor *ref, double tol, double floor) {
    double e = max_rel(k_back(k, got), ref, floor);
    CHECKF(e <= tol, "%s %s on %s: rel err %g > %g", gpudl_dtype_name(k->dt), what,
           gpudl_ctx_device(k->d) == GPUDL_DEVICE_CPU ? "cpu" : "gpu", e, tol);
}

static void k_free(k16 *k) { while (k->n > 0) { k->n--; gpudl_tensor_free(k->owner[k->n], &k->t[k->n]); } }

static void run_layers16(gpudl_ctx *d, gpudl_dtype dt) {
    gpudl_ctx *c = cpu_ctx();
    k16 *k = (k16 *)calloc(1, sizeof *k);
    double u;
    int act, kind;
    size_t ci;
    if (!k) { fprintf(stderr, "out of memory\n"); exit(1); }
    k->d = d; k->dt = dt;
    u = k->ulp = dt == GPUDL_F16 ? 1.0 / 1024 : 1.0 / 128;
    for (act = GPUDL_ACT_RELU; act <= GPUDL_ACT_SIGMOID; act++) {
        int64_t n = 999;
        gpudl_tensor *hx, *hdy, *x = k_in(k, &hx, 1, &n, -4, 4), *dy = k_in(k, &hdy, 1, &n, -1, 1);
        gpudl_tensor *y = k_new(k, dt, 1, &n, NULL), *dx = k_new(k, dt, 1, &n, NULL);
        gpudl_tensor *ry = k_keep(k, c, mk(c, GPUDL_F32, 1, &n)), *rdx = k_keep(k, c, mk(c, GPUDL_F32, 1, &n));
        CHECK_OK(gpudl_act_forward(d, (gpudl_act)act, 0, y, x));
        CHECK_OK(gpudl_act_backward(d, (gpudl_act)act, 0, dx, dy, x, y));
        CHECK_OK(gpudl_act_forward(c, (gpudl_act)act, 0, ry, hx));
        k_close(k, "activation forward", y, ry, u, 1e-3);
        CHECK_OK(gpudl_act_backward(c, (gpudl_act)act, 0, rdx, hdy, hx, k_back(k, y)));   /* with the y it saw */
        k_close(k, "activation backward", dx, rdx, u, 1e-3);
        k_free(k);
    }
    {   /* linear: odd sizes; dw and db accumulate into f32 */
        int64_t xs[2] = {33, 37}, ws[2] = {19, 37}, ys[2] = {33, 19}, O = 19;
        gpudl_tensor *hx, *hw, *hb, *hdy, *x = k_in(k, &hx, 2, xs, -1, 1), *w = k_in(k, &hw, 2, ws, -0.5f, 0.5f);
        gpudl_tensor *b = k_in(k, &hb, 1, &O, -1, 1), *dy = k_in(k, &hdy, 2, ys, -1, 1);
        gpudl_tensor *dw0 = k_keep(k, c, rnd(2, ws, -1, 1)), *db0 = k_keep(k, c, rnd(1, &O, -1, 1));
        gpudl_tensor *y = k_new(k, dt, 2, ys, NULL), *dx = k_new(k, dt, 2, xs, NULL);
        gpudl_tensor *dw = k_new(k, GPUDL_F32, 2, ws, dw0), *db = k_new(k, GPUDL_F32, 1, &O, db0);
        gpudl_tensor *ry = k_keep(k, c, mk(c, GPUDL_F32, 2, ys)), *rdx = k_keep(k, c, mk(c, GPUDL_F32, 2, xs));
        CHECK_OK(gpudl_linear_forward(d, y, x, w, b));
        CHECK_OK(gpudl_linear_backward(d, dx, dw, db, dy, x, w));
        CHECK_OK(gpudl_linear_forward(c, ry, hx, hw, hb));
        CHECK_OK(gpudl_linear_backward(c, rdx, dw0, db0, hdy, hx, hw));
        k_close(k, "linear forward", y, ry, 2 * u, 1.0);
        k_close(k, "linear dx", dx, rdx, 2 * u, 1.0);
        k_close(k, "linear dw (f32)", dw, dw0, 1e-5, 1.0);
        k_close(k, "linear db (f32)", db, db0, 1e-5, 1.0);
        CHECK_ST(gpudl_linear_backward(d, dx, y, NULL, dy, x, w), GPUDL_ERR_INVALID_ARG);   /* a 16-bit dw */
        CHECK_ST(gpudl_linear_forward(d, y, x, dw, b), GPUDL_ERR_INVALID_ARG);   /* f32 weights with 16-bit activations */
        k_free(k);
    }
    for (ci = 2; ci < sizeof conv_cases / sizeof conv_cases[0]; ci += 1) {
        const conv_case *q = &conv_cases[ci];
        int64_t Ho = (q->H + 2 * q->ph - q->dh * (q->kh - 1) - 1) / q->sh + 1, Wo = (q->W + 2 * q->pw - q->dw * (q->kw - 1) - 1) / q->sw + 1;
        int64_t xs[4] = {q->N, q->C, q->H, q->W}, ws[4] = {q->O, q->C, q->kh, q->kw}, ys[4] = {q->N, q->O, Ho, Wo};
        gpudl_conv2d_desc cd;
        gpudl_tensor *hx, *hw, *hb, *hdy, *x = k_in(k, &hx, 4, xs, -1, 1), *w = k_in(k, &hw, 4, ws, -0.5f, 0.5f);
        gpudl_tensor *b = k_in(k, &hb, 1, &q->O, -1, 1), *dy = k_in(k, &hdy, 4, ys, -1, 1);
        gpudl_tensor *dw0 = k_keep(k, c, rnd(4, ws, -1, 1)), *db0 = k_keep(k, c, rnd(1, &q->O, -1, 1));
        gpudl_tensor *y = k_new(k, dt, 4, ys, NULL), *dx = k_new(k, dt, 4, xs, NULL);
        gpudl_tensor *dw = k_new(k, GPUDL_F32, 4, ws, dw0), *db = k_new(k, GPUDL_F32, 1, &q->O, db0);
        gpudl_tensor *ry = k_keep(k, c, mk(c, GPUDL_F32, 4, ys)), *rdx = k_keep(k, c, mk(c, GPUDL_F32, 4, xs));
        memset(&cd, 0, sizeof cd);
        cd.stride_h = q->sh; cd.stride_w = q->sw; cd.pad_h = q->ph; cd.pad_w = q->pw; cd.dil_h = q->dh; cd.dil_w = q->dw;
        CHECK_OK(gpudl_conv2d_forward(d, y, x, w, b, &cd));
        CHECK_OK(gpudl_conv2d_backward(d, dx, dw, db, dy, x, w, &cd));
        CHECK_OK(gpudl_conv2d_forward(c, ry, hx, hw, hb, &cd));
        CHECK_OK(gpudl_conv2d_backward(c, rdx, dw0, db0, hdy, hx, hw, &cd));
        k_close(k, "conv2d forward", y, ry, 2 * u, 1.0);
        k_close(k, "conv2d dx", dx, rdx, 2 * u, 1.0);
        /* on the GPU cuDNN computes dw in 16 bits before it is added */
        k_close(k, "conv2d dw", dw, dw0, gpudl_ctx_device(d) == GPUDL_DEVICE_CPU ? 1e-5 : 2 * u, 1.0);
        k_close(k, "conv2d db (f32)", db, db0, 1e-5, 1.0);
        k_free(k);
    }
    for (kind = GPUDL_POOL_MAX; kind <= GPUDL_POOL_AVG; kind++) {
        int64_t xs[4] = {3, 2, 9, 7}, ys[4] = {3, 2, 5, 4};
        gpudl_pool2d_desc pd;
        gpudl_tensor *hx, *hdy, *x = k_in(k, &hx, 4, xs, -1, 1), *dy = k_in(k, &hdy, 4, ys, -1, 1);
        gpudl_tensor *y = k_new(k, dt, 4, ys, NULL), *dx = k_new(k, dt, 4, xs, NULL);
        gpudl_tensor *ry = k_keep(k, c, mk(c, GPUDL_F32, 4, ys)), *rdx = k_keep(k, c, mk(c, GPUDL_F32, 4, xs));
        memset(&pd, 0, sizeof pd);
        pd.kind = (gpudl_pool)kind; pd.k_h = pd.k_w = 3; pd.stride_h = pd.stride_w = 2; pd.pad_h = pd.pad_w = 1;
        CHECK_OK(gpudl_pool2d_forward(d, y, x, &pd));
        CHECK_OK(gpudl_pool2d_backward(d, dx, dy, x, &pd));
        CHECK_OK(gpudl_pool2d_forward(c, ry, hx, &pd));
        CHECK_OK(gpudl_pool2d_backward(c, rdx, hdy, hx, &pd));
        k_close(k, "pool forward", y, ry, u, 1e-3);
        k_close(k, "pool backward", dx, rdx, u, 1e-3);
        k_free(k);
    }
    {   /* batch norm (f32 scale, shift and statistics), dropout, softmax-xent, mse */
        int64_t xs[4] = {5, 3, 4, 3}, C = 3, zs[2] = {33, 10}, N = 33, one = 1, i;
        gpudl_tensor *hx, *hdy, *hz, *hp, *x = k_in(k, &hx, 4, xs, -2, 3), *dy = k_in(k, &hdy, 4, xs, -1, 1);
        gpudl_tensor *gam = k_keep(k, c, rnd(1, &C, 0.5f, 1.5f)), *bet = k_keep(k, c, rnd(1, &C, -1, 1));
        gpudl_tensor *rm = k_keep(k, c, rnd(1, &C, -1, 1)), *rv = k_keep(k, c, rnd(1, &C, 0.5f, 2));
        gpudl_tensor *dg0 = k_keep(k, c, rnd(1, &C, -1, 1)), *dbt0 = k_keep(k, c, rnd(1, &C, -1, 1));
        gpudl_tensor *dgam = k_new(k, GPUDL_F32, 1, &C, gam), *dbet = k_new(k, GPUDL_F32, 1, &C, bet);
        gpudl_tensor *drm = k_new(k, GPUDL_F32, 1, &C, rm), *drv = k_new(k, GPUDL_F32, 1, &C, rv);
        gpudl_tensor *ddg = k_new(k, GPUDL_F32, 1, &C, dg0), *ddbt = k_new(k, GPUDL_F32, 1, &C, dbt0);
        gpudl_tensor *sm = k_new(k, GPUDL_F32, 1, &C, NULL), *si = k_new(k, GPUDL_F32, 1, &C, NULL);
        gpudl_tensor *rsm = k_keep(k, c, mk(c, GPUDL_F32, 1, &C)), *rsi = k_keep(k, c, mk(c, GPUDL_F32, 1, &C));
        gpudl_tensor *y = k_new(k, dt, 4, xs, NULL), *dx = k_new(k, dt, 4, xs, NULL);
        gpudl_tensor *ry = k_keep(k, c, mk(c, GPUDL_F32, 4, xs)), *rdx = k_keep(k, c, mk(c, GPUDL_F32, 4, xs));
        gpudl_tensor *z = k_in(k, &hz, 2, zs, -5, 5), *pr = k_in(k, &hp, 2, zs, -1, 1), *tg = k_keep(k, c, rnd(2, zs, -1, 1));
        gpudl_tensor *lab = k_keep(k, c, mk(c, GPUDL_I32, 1, &N)), *dlab, *dtg;
        gpudl_tensor *probs = k_new(k, GPUDL_F32, 2, zs, NULL), *loss = k_new(k, GPUDL_F32, 1, &one, NULL), *dz = k_new(k, dt, 2, zs, NULL);
        gpudl_tensor *rprobs = k_keep(k, c, mk(c, GPUDL_F32, 2, zs)), *rloss = k_keep(k, c, mk(c, GPUDL_F32, 1, &one));
        gpudl_tensor *rdz = k_keep(k, c, mk(c, GPUDL_F32, 2, zs));
        CHECK_OK(gpudl_batchnorm_forward(d, y, sm, si, x, dgam, dbet, drm, drv, 1, 0.1f, 1e-5f));
        CHECK_OK(gpudl_batchnorm_forward(c, ry, rsm, rsi, hx, gam, bet, rm, rv, 1, 0.1f, 1e-5f));
        k_close(k, "batchnorm forward", y, ry, 2 * u, 1.0);
        k_close(k, "batchnorm saved invstd (f32)", si, rsi, 1e-5, 1e-3);
        k_close(k, "batchnorm running var (f32)", drv, rv, 1e-5, 1e-3);
        CHECK_OK(gpudl_batchnorm_backward(d, dx, ddg, ddbt, dy, x, dgam, sm, si));
        CHECK_OK(gpudl_batchnorm_backward(c, rdx, dg0, dbt0, hdy, hx, gam, rsm, rsi));
        k_close(k, "batchnorm dx", dx, rdx, 2 * u, 1.0);
        k_close(k, "batchnorm dgamma (f32)", ddg, dg0, 1e-4, 1.0);
        CHECK_OK(gpudl_dropout_forward(d, y, x, 0.3f, 9, 77));
        CHECK_OK(gpudl_dropout_forward(c, ry, hx, 0.3f, 9, 77));
        k_close(k, "dropout", y, ry, u, 1e-3);
        for (i = 0; i < N; i++) ((int32_t *)lab->data)[i] = (int32_t)((i * 7) % 10);
        dlab = gpudl_ctx_device(d) == GPUDL_DEVICE_CPU ? lab : k_keep(k, d, to_dev(d, lab));
        dtg = gpudl_ctx_device(d) == GPUDL_DEVICE_CPU ? tg : k_keep(k, d, to_dev(d, tg));
        CHECK_OK(gpudl_softmax_xent_forward(d, loss, probs, z, dlab));
        CHECK_OK(gpudl_softmax_xent_backward(d, dz, probs, dlab, 1.0f));
        CHECK_OK(gpudl_softmax_xent_forward(c, rloss, rprobs, hz, lab));
        CHECK_OK(gpudl_softmax_xent_backward(c, rdz, rprobs, lab, 1.0f));
        k_close(k, "softmax-xent loss (f32)", loss, rloss, 1e-5, 1e-3);
        k_close(k, "softmax-xent probs (f32)", probs, rprobs, 1e-5, 1e-3);
        k_close(k, "softmax-xent backward", dz, rdz, u, 1e-4);
        CHECK_OK(gpudl_mse_forward(d, loss, pr, dtg));
        CHECK_OK(gpudl_mse_backward(d, dz, pr, dtg, 1.0f));
        CHECK_OK(gpudl_mse_forward(c, rloss, hp, tg));
        CHECK_OK(gpudl_mse_backward(c, rdz, hp, tg, 1.0f));
        k_close(k, "mse loss (f32)", loss, rloss, 1e-5, 1e-3);
        k_close(k, "mse backward", dz, rdz, u, 1e-4);
        CHECK_ST(gpudl_batchnorm_forward(d, dx, sm, si, x, y, y, drm, drv, 1, 0.1f, 1e-5f), GPUDL_ERR_INVALID_ARG);   /* 16-bit gamma */
        k_free(k);
    }
    free(k);
}

static void test_layers_16bit(void) {
    run_layers16(cpu_ctx(), GPUDL_F16);
    run_layers16(cpu_ctx(), GPUDL_BF16);
}

static void test_gpu_layers_16bit(void) {
    NEED_GPU(g);
    run_layers16(g, GPUDL_F16);
    run_layers16(g, GPUDL_BF16);
}

/* >>every layer on the GPU against the CPU -------------------------------- */

static void test_gpu_layers(void) {
    gpudl_ctx *c = cpu_ctx();
    int act;
    size_t s;
    NEED_GPU(g);
    for (act = GPUDL_ACT_RELU; act <= GPUDL_ACT_SIGMOID; act++) {
        int64_t n = 1000;
        gpudl_tensor x = rnd(1, &n, -4, 4), y = mk(c, GPUDL_F32, 1, &n), dy = rnd(1, &n, -1, 1), dx = mk(c, GPUDL_F32, 1, &n);
        gpudl_tensor gx = to_dev(g, &x), gy = to_dev(g, &y), gdy = to_dev(g, &dy), gdx = to_dev(g, &dx);
        CHECK_OK(gpudl_act_forward(c, (gpudl_act)act, 0, &y, &x));
        CHECK_OK(gpudl_act_forward(g, (gpudl_act)act, 0, &gy, &gx));
        CHECK_OK(gpudl_act_backward(c, (gpudl_act)act, 0, &dx, &dy, &x, &y));
        CHECK_OK(gpudl_act_backward(g, (gpudl_act)act, 0, &gdx, &gdy, &gx, &gy));
        gpu_vs_cpu(g, "activation forward", &gy, &y, 1e-5);
        gpu_vs_cpu(g, "activation backward", &gdx, &dx, 1e-5);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx);
        gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gy); gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gdx);
    }
    for (s = 0; s < sizeof conv_cases / sizeof conv_cases[0]; s++) {
        const conv_case *q = &conv_cases[s];
        int64_t Ho = (q->H + 2 * q->ph - q->dh * (q->kh - 1) - 1) / q->sh + 1, Wo = (q->W + 2 * q->pw - q->dw * (q->kw - 1) - 1) / q->sw + 1;
        int64_t xs[4] = {q->N, q->C, q->H, q->W}, ws[4] = {q->O, q->C, q->kh, q->kw}, ys[4] = {q->N, q->O, Ho, Wo};
        gpudl_conv2d_desc d;
        gpudl_tensor x = rnd(4, xs, -1, 1), w = rnd(4, ws, -1, 1), b = rnd(1, &q->O, -1, 1), y = mk(c, GPUDL_F32, 4, ys);
        gpudl_tensor dy = rnd(4, ys, -1, 1), dx = mk(c, GPUDL_F32, 4, xs), dw = rnd(4, ws, -1, 1), db = rnd(1, &q->O, -1, 1);
        gpudl_tensor gx = to_dev(g, &x), gw = to_dev(g, &w), gb = to_dev(g, &b), gy = to_dev(g, &y), gdy = to_dev(g, &dy);
        gpudl_tensor gdx = to_dev(g, &dx), gdw = to_dev(g, &dw), gdb = to_dev(g, &db);
        memset(&d, 0, sizeof d);
        d.stride_h = q->sh; d.stride_w = q->sw; d.pad_h = q->ph; d.pad_w = q->pw; d.dil_h = q->dh; d.dil_w = q->dw;
        CHECK_OK(gpudl_conv2d_forward(c, &y, &x, &w, &b, &d));
        CHECK_OK(gpudl_conv2d_forward(g, &gy, &gx, &gw, &gb, &d));
        CHECK_OK(gpudl_conv2d_backward(c, &dx, &dw, &db, &dy, &x, &w, &d));
        CHECK_OK(gpudl_conv2d_backward(g, &gdx, &gdw, &gdb, &gdy, &gx, &gw, &d));
        gpu_vs_cpu(g, "conv2d forward", &gy, &y, 1e-4);
        gpu_vs_cpu(g, "conv2d dx", &gdx, &dx, 1e-4);
        gpu_vs_cpu(g, "conv2d dw", &gdw, &dw, 1e-4);
        gpu_vs_cpu(g, "conv2d db", &gdb, &db, 1e-4);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &y);
        gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx); gpudl_tensor_free(c, &dw); gpudl_tensor_free(c, &db);
        gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gw); gpudl_tensor_free(g, &gb); gpudl_tensor_free(g, &gy);
        gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gdx); gpudl_tensor_free(g, &gdw); gpudl_tensor_free(g, &gdb);
    }
    {   /* pool, batch norm, dropout, softmax-xent, linear bias grad */
        int64_t xs[4] = {4, 3, 7, 9}, ps[4] = {4, 3, 4, 5}, C = 3, zs[2] = {33, 10}, N = 33, one = 1, i;
        gpudl_pool2d_desc pd;
        gpudl_tensor x = rnd(4, xs, -1, 1), y = mk(c, GPUDL_F32, 4, ps), dy = rnd(4, ps, -1, 1), dx = mk(c, GPUDL_F32, 4, xs);
        gpudl_tensor gx = to_dev(g, &x), gy = to_dev(g, &y), gdy = to_dev(g, &dy), gdx = to_dev(g, &dx);
        gpudl_tensor bn_y = mk(c, GPUDL_F32, 4, xs), gam = rnd(1, &C, 0.5f, 1.5f), bet = rnd(1, &C, -1, 1), rm = rnd(1, &C, -1, 1);
        gpudl_tensor rv = rnd(1, &C, 0.5f, 2), sm = mk(c, GPUDL_F32, 1, &C), si = mk(c, GPUDL_F32, 1, &C), dg = rnd(1, &C, -1, 1), dbb = rnd(1, &C, -1, 1);
        gpudl_tensor gbn_y = to_dev(g, &bn_y), ggam = to_dev(g, &gam), gbet = to_dev(g, &bet), grm = to_dev(g, &rm), grv = to_dev(g, &rv);
        gpudl_tensor gsm = to_dev(g, &sm), gsi = to_dev(g, &si), gdg = to_dev(g, &dg), gdbb = to_dev(g, &dbb), bdy = rnd(4, xs, -1, 1), gbdy;
        gpudl_tensor z = rnd(2, zs, -5, 5), p = mk(c, GPUDL_F32, 2, zs), l = mk(c, GPUDL_F32, 1, &one), lab = mk(c, GPUDL_I32, 1, &N), dz = mk(c, GPUDL_F32, 2, zs);
        gpudl_tensor gz, gp, gl, glab, gdz;
        int kind;
        for (kind = 1; kind <= 2; kind++) {
            memset(&pd, 0, sizeof pd);
            pd.kind = (gpudl_pool)kind; pd.k_h = pd.k_w = 3; pd.stride_h = pd.stride_w = 2; pd.pad_h = pd.pad_w = 1;
            CHECK_OK(gpudl_pool2d_forward(c, &y, &x, &pd)); CHECK_OK(gpudl_pool2d_forward(g, &gy, &gx, &pd));
            CHECK_OK(gpudl_pool2d_backward(c, &dx, &dy, &x, &pd)); CHECK_OK(gpudl_pool2d_backward(g, &gdx, &gdy, &gx, &pd));
            gpu_vs_cpu(g, "pool forward", &gy, &y, 1e-6);
            gpu_vs_cpu(g, "pool backward", &gdx, &dx, 1e-6);
        }
        gbdy = to_dev(g, &bdy);
        CHECK_OK(gpudl_batchnorm_forward(c, &bn_y, &sm, &si, &x, &gam, &bet, &rm, &rv, 1, 0.1f, 1e-5f));
        CHECK_OK(gpudl_batchnorm_forward(g, &gbn_y, &gsm, &gsi, &gx, &ggam, &gbet, &grm, &grv, 1, 0.1f, 1e-5f));
        gpu_vs_cpu(g, "batchnorm forward", &gbn_y, &bn_y, 1e-5);
        gpu_vs_cpu(g, "batchnorm running var", &grv, &rv, 1e-5);
        CHECK_OK(gpudl_batchnorm_backward(c, &dx, &dg, &dbb, &bdy, &x, &gam, &sm, &si));
        CHECK_OK(gpudl_batchnorm_backward(g, &gdx, &gdg, &gdbb, &gbdy, &gx, &ggam, &gsm, &gsi));
        gpu_vs_cpu(g, "batchnorm dx", &gdx, &dx, 1e-4);
        gpu_vs_cpu(g, "batchnorm dgamma", &gdg, &dg, 1e-4);
        CHECK_OK(gpudl_dropout_forward(c, &bn_y, &x, 0.3f, 9, 77)); CHECK_OK(gpudl_dropout_forward(g, &gbn_y, &gx, 0.3f, 9, 77));
        gpu_vs_cpu(g, "dropout (the same mask)", &gbn_y, &bn_y, 1e-6);
        for (i = 0; i < N; i++) ((int32_t *)lab.data)[i] = (int32_t)(i % 10);
        gz = to_dev(g, &z); gp = to_dev(g, &p); gl = to_dev(g, &l); glab = to_dev(g, &lab); gdz = to_dev(g, &dz);
        CHECK_OK(gpudl_softmax_xent_forward(c, &l, &p, &z, &lab)); CHECK_OK(gpudl_softmax_xent_forward(g, &gl, &gp, &gz, &glab));
        CHECK_OK(gpudl_softmax_xent_backward(c, &dz, &p, &lab, 1.0f)); CHECK_OK(gpudl_softmax_xent_backward(g, &gdz, &gp, &glab, 1.0f));
        gpu_vs_cpu(g, "softmax-xent loss", &gl, &l, 1e-5);
        gpu_vs_cpu(g, "softmax-xent probs", &gp, &p, 1e-5);
        gpu_vs_cpu(g, "softmax-xent backward", &gdz, &dz, 1e-5);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx);
        gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gy); gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gdx);
        gpudl_tensor_free(c, &bn_y); gpudl_tensor_free(c, &gam); gpudl_tensor_free(c, &bet); gpudl_tensor_free(c, &rm);
        gpudl_tensor_free(c, &rv); gpudl_tensor_free(c, &sm); gpudl_tensor_free(c, &si); gpudl_tensor_free(c, &dg); gpudl_tensor_free(c, &dbb);
        gpudl_tensor_free(g, &gbn_y); gpudl_tensor_free(g, &ggam); gpudl_tensor_free(g, &gbet); gpudl_tensor_free(g, &grm);
        gpudl_tensor_free(g, &grv); gpudl_tensor_free(g, &gsm); gpudl_tensor_free(g, &gsi); gpudl_tensor_free(g, &gdg);
        gpudl_tensor_free(g, &gdbb); gpudl_tensor_free(c, &bdy); gpudl_tensor_free(g, &gbdy);
        gpudl_tensor_free(c, &z); gpudl_tensor_free(c, &p); gpudl_tensor_free(c, &l); gpudl_tensor_free(c, &lab); gpudl_tensor_free(c, &dz);
        gpudl_tensor_free(g, &gz); gpudl_tensor_free(g, &gp); gpudl_tensor_free(g, &gl); gpudl_tensor_free(g, &glab); gpudl_tensor_free(g, &gdz);
    }
}

/* >>activation: non-finite inputs --------------------------------------- */

/* NaN goes through every activation (as in PyTorch): a ReLU that maps NaN
   to 0 hides a poisoned input, and training goes on with a loss that looks
   normal. Infinities map as the functions say. Dropout keeps a NaN in the
   positions it drops (x * 0). CPU, and the GPU when there is one. */
static void check_acts_nonfinite(gpudl_ctx *c, const char *where) {
    static const float xv[6] = {NAN, INFINITY, -INFINITY, -0.0f, 1.5f, -2.0f};
    int64_t n = 6, i;
    int act;
    float y[6];
    gpudl_tensor hx, x, out;
    GPUDL_CHECK(gpudl_tensor_create_on(cpu_ctx(), &hx, GPUDL_DEVICE_CPU, GPUDL_F32, 1, &n));
    memcpy(hx.data, xv, sizeof xv);
    x = gpudl_ctx_device(c) == GPUDL_DEVICE_CUDA ? to_dev(c, &hx) : hx;
    GPUDL_CHECK(gpudl_tensor_create(c, &out, GPUDL_F32, 1, &n));
    for (act = GPUDL_ACT_RELU; act <= GPUDL_ACT_SIGMOID; act++) {
        CHECK_OK(gpudl_act_forward(c, (gpudl_act)act, 0.0f, &out, &x));
        CHECK_OK(gpudl_tensor_download(c, &out, y, sizeof y));
        CHECKF(y[0] != y[0], "%s: activation %d of NaN is %g, not NaN", where, act, (double)y[0]);
        for (i = 4; i < 6; i++) CHECKF(y[i] == y[i], "%s: activation %d of %g is NaN", where, act, (double)xv[i]);
    }
    CHECK_OK(gpudl_act_forward(c, GPUDL_ACT_RELU, 0.0f, &out, &x));
    CHECK_OK(gpudl_tensor_download(c, &out, y, sizeof y));
    CHECKF(y[1] == INFINITY && y[2] == 0.0f && y[3] == 0.0f && y[4] == 1.5f && y[5] == 0.0f, "%s: relu gives %g %g %g %g %g",
           where, (double)y[1], (double)y[2], (double)y[3], (double)y[4], (double)y[5]);
    for (i = 0; i < 64; i++) {   /* dropout: every draw, kept or dropped, leaves the NaN a NaN */
        CHECK_OK(gpudl_dropout_forward(c, &out, &x, 0.5f, 7, (uint64_t)i * 6));
        CHECK_OK(gpudl_tensor_download(c, &out, y, sizeof y));
        if (y[0] == y[0]) break;
    }
    CHECKF(i == 64, "%s: dropout turned a NaN into %g", where, (double)y[0]);
    if (x.data != hx.data) gpudl_tensor_free(c, &x);
    gpudl_tensor_free(cpu_ctx(), &hx);
    gpudl_tensor_free(c, &out);
}

static void test_activations_nonfinite(void) { check_acts_nonfinite(cpu_ctx(), "CPU"); }

static void test_gpu_activations_nonfinite(void) {
    NEED_GPU(g);
    check_acts_nonfinite(g, "GPU");
}

/* >>activation: edge values, as PyTorch ------------------------------------ */

/* PyTorch's formulas (torch.nn.functional relu, leaky_relu, gelu with
   approximate='none', tanh, sigmoid and their autograd backward), in
   float64. ReLU is clamp_min(x, 0): -0 stays -0, NaN stays NaN; its
   backward is threshold_backward: 0 where x <= 0, else dy (a select, so
   NaN <= 0 being false passes dy at a NaN input, and a NaN or Inf dy gives
   0 where x <= 0). LeakyReLU: x > 0 ? x : x*slope, dx = x > 0 ? dy :
   dy*slope. GELU: x/2 (1 + erf(x/sqrt 2)), dx = dy (cdf + x pdf), so -Inf
   gives NaN (-Inf * 0) and dx at +-Inf is NaN (Inf * 0). tanh and
   sigmoid's backward read the forward's output y (a float): dy (1 - y^2),
   dy (1 - y) y. */
static double edge_y(int act, double x) {
    switch (act) {
    case GPUDL_ACT_RELU: return x < 0 ? 0.0 : x;
    case GPUDL_ACT_LEAKY_RELU: return x > 0 ? x : x * (double)0.01f;
    case GPUDL_ACT_GELU: return x * 0.5 * (1 + erf(x / sqrt(2.0)));
    case GPUDL_ACT_TANH: return tanh(x);
    default: return 1 / (1 + exp(-x));
    }
}
static double edge_dx(int act, double x, double y, double dy) {
    switch (act) {
    case GPUDL_ACT_RELU: return x <= 0 ? 0.0 : dy;
    case GPUDL_ACT_LEAKY_RELU: return x > 0 ? dy : dy * (double)0.01f;
    case GPUDL_ACT_GELU:
        return dy * (0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846));
    case GPUDL_ACT_TANH: return dy * (1 - y * y);
    default: return dy * (1 - y) * y;
    }
}

/* got against want: NaN, +-Inf and an exact +-0 as they are (the sign of a
   zero too); finite values within float rounding: 2e-6 relative, plus 1e-6
   for O(1) values (GELU's erf is within 4e-7) shrinking with |x| for tiny
   inputs, plus one subnormal step (subnormals are kept, not flushed). */
static int edge_close(double got, double want, double x, double dy) {
    double ax = fabs(x) < 1 ? fabs(x) : 1, ady = fabs(dy) > 1 && !isinf(dy) ? fabs(dy) : 1;
    if (want != want) return got != got;
    if (isinf(want) || want == 0) return got == want && !signbit(got) == !signbit(want);
    return fabs(got - want) <= 2e-6 * fabs(want) + 1e-6 * ax * ady + 1.5e-45;
}

static void check_acts_edges(gpudl_ctx *c, const char *where) {
    static const float xv[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-40f, -1e-40f, 1e30f, -1e30f,
                               3.9f, -3.9f, 5.7f, -5.7f, 10.0f, -10.0f, 100.0f, -100.0f, 0.5f, -2.0f};
    static const float dys[] = {1.0f, -0.75f, INFINITY, NAN};
    enum { NX = sizeof xv / sizeof xv[0], ND = sizeof dys / sizeof dys[0] };
    int64_t n = NX * ND;
    float hx[NX * ND], hdy[NX * ND], y[NX * ND], dx[NX * ND];
    int act, i, d;
    gpudl_tensor tx, tdy, ty, tdx;
    for (d = 0; d < ND; d++)
        for (i = 0; i < NX; i++) { hx[d * NX + i] = xv[i]; hdy[d * NX + i] = dys[d]; }
    GPUDL_CHECK(gpudl_tensor_create(c, &tx, GPUDL_F32, 1, &n));
    GPUDL_CHECK(gpudl_tensor_create(c, &tdy, GPUDL_F32, 1, &n));
    GPUDL_CHECK(gpudl_tensor_create(c, &ty, GPUDL_F32, 1, &n));
    GPUDL_CHECK(gpudl_tensor_create(c, &tdx, GPUDL_F32, 1, &n));
    CHECK_OK(gpudl_tensor_upload(c, &tx, hx, sizeof hx));
    CHECK_OK(gpudl_tensor_upload(c, &tdy, hdy, sizeof hdy));
    for (act = GPUDL_ACT_RELU; act <= GPUDL_ACT_SIGMOID; act++) {
        int bad = 0;
        CHECK_OK(gpudl_act_forward(c, (gpudl_act)act, 0.0f, &ty, &tx));
        CHECK_OK(gpudl_act_backward(c, (gpudl_act)act, 0.0f, &tdx, &tdy, &tx, &ty));
        CHECK_OK(gpudl_tensor_download(c, &ty, y, sizeof y));
        CHECK_OK(gpudl_tensor_download(c, &tdx, dx, sizeof dx));
        for (i = 0; i < n && bad < 4; i++) {
            double want = edge_y(act, hx[i]), dwant = edge_dx(act, hx[i], y[i], hdy[i]);
            if (i < NX && !edge_close(y[i], want, hx[i], 1.0)) {
                CHECKF(0, "%s: activation %d of %g is %g, PyTorch's %g", where, act, (double)hx[i], (double)y[i], want);
                bad++;
            }
            if (!edge_close(dx[i], dwant, hx[i], hdy[i])) {
                CHECKF(0, "%s: activation %d backward at x = %g, dy = %g (y = %g) is %g, PyTorch's %g", where, act,
                       (double)hx[i], (double)hdy[i], (double)y[i], (double)dx[i], dwant);
                bad++;
            }
        }
    }
    gpudl_tensor_free(c, &tx); gpudl_tensor_free(c, &tdy); gpudl_tensor_free(c, &ty); gpudl_tensor_free(c, &tdx);
}

static void test_activations_edges(void) { check_acts_edges(cpu_ctx(), "CPU"); }

static void test_gpu_activations_edges(void) {
    NEED_GPU(g);
    check_acts_edges(g, "GPU");
}

/* Issue 26's kernels on the GPU against the CPU. Max and average pool
   backward where the windows do not overlap (stride >= window: the one-pass
   kernel, each window's argmax found once), with gaps, padding and borders
   no window covers, on inputs full of ties, a NaN and -0.0 gradients: bit
   for bit, since both sides use the shared window math. Then activations
   (forward, backward) and dropout on views at element offsets 0-3 (16-byte
   vector paths must fall back where a pointer is not aligned; the bytes
   around each output stay as they were). */
static void test_gpu_kernels_views_and_pool_cells(void) {   /* registered in tests/suite_train.c */
    static const int64_t pools[][5] = {   /* H W k s p */
        {6, 6, 2, 2, 0}, {7, 9, 2, 2, 0}, {7, 9, 2, 3, 0}, {8, 8, 3, 3, 1}, {5, 7, 2, 2, 1}, {28, 28, 2, 2, 0}, {1, 1, 1, 1, 0},
    };
    static const int64_t sizes[] = {1, 3, 5, 7, 1023, 4097};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    size_t s, z;
    int kind, d, off, a;
    NEED_GPU(g);
    for (s = 0; s < sizeof pools / sizeof pools[0]; s++)
        for (kind = 1; kind <= 2; kind++)
            for (d = 0; d < 2; d++) {
                int64_t H = pools[s][0], W = pools[s][1], k = pools[s][2], st = pools[s][3], p = pools[s][4], NC = 6, i;
                int64_t Ho = (H + 2 * p - k) / st + 1, Wo = (W + 2 * p - k) / st + 1;
                int64_t xs[4] = {2, 3, H, W}, ys[4] = {2, 3, Ho, Wo};
                gpudl_tensor x = mk(c, dts[d], 4, xs), dy = mk(c, dts[d], 4, ys), dx = mk(c, dts[d], 4, xs), y = mk(c, dts[d], 4, ys);
                gpudl_tensor gx, gdy, gdx, gy, hdx, hy;
                gpudl_pool2d_desc pd;
                for (i = 0; i < NC * H * W; i++)   /* quarters in [-1, 1]: many ties; one NaN */
                    gpudl__elem_set(x.data, x.dtype, i, i == 3 ? NAN : (float)((int)((gpudl_rng_bits(9, (uint64_t)i) >> 40) % 9) - 4) * 0.25f);
                for (i = 0; i < NC * Ho * Wo; i++) gpudl__elem_set(dy.data, dy.dtype, i, i % 5 == 0 ? -0.0f : (float)(i % 7) - 3.0f);
                gx = to_dev(g, &x); gdy = to_dev(g, &dy);
                GPUDL_CHECK(gpudl_tensor_create_on(g, &gdx, GPUDL_DEVICE_CUDA, dts[d], 4, xs));
                GPUDL_CHECK(gpudl_tensor_create_on(g, &gy, GPUDL_DEVICE_CUDA, dts[d], 4, ys));
                CHECK_OK(gpudl_tensor_fill(g, &gdx, 7.0f));   /* every element must be written */
                memset(&pd, 0, sizeof pd);
                pd.kind = (gpudl_pool)kind; pd.k_h = pd.k_w = k; pd.stride_h = pd.stride_w = st; pd.pad_h = pd.pad_w = p;
                CHECK_OK(gpudl_pool2d_forward(c, &y, &x, &pd)); CHECK_OK(gpudl_pool2d_forward(g, &gy, &gx, &pd));
                CHECK_OK(gpudl_pool2d_backward(c, &dx, &dy, &x, &pd)); CHECK_OK(gpudl_pool2d_backward(g, &gdx, &gdy, &gx, &pd));
                hy = to_host(g, &gy); hdx = to_host(g, &gdx);
                CHECKF(!memcmp(hy.data, y.data, gpudl_tensor_bytes(&y)), "pool %s kind %d case %zu forward", gpudl_dtype_name(dts[d]),
                       kind, s);
                CHECKF(!memcmp(hdx.data, dx.data, gpudl_tensor_bytes(&dx)), "pool %s kind %d case %zu (H %lld W %lld k %lld s %lld p %lld) backward",
                       gpudl_dtype_name(dts[d]), kind, s, (long long)H, (long long)W, (long long)k, (long long)st, (long long)p);
                gpudl_tensor_free(c, &hy); gpudl_tensor_free(c, &hdx);
                gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gdx); gpudl_tensor_free(g, &gy);
                gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx); gpudl_tensor_free(c, &y);
            }
    for (d = 0; d < 3; d++)
        for (z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
            for (off = 0; off < 4; off++) {
                int64_t n = sizes[z], m = n + 8, i;
                size_t es = gpudl_dtype_size(dts[d]);
                double tol = dts[d] == GPUDL_F32 ? 1e-5 : dts[d] == GPUDL_F16 ? 2e-3 : 1.6e-2;
                gpudl_tensor hx = mk(c, dts[d], 1, &n), hdy = mk(c, dts[d], 1, &n), hy = mk(c, dts[d], 1, &n), hr = mk(c, dts[d], 1, &n);
                gpudl_tensor buf[4], v[4], got, guard = mk(c, dts[d], 1, &m), back;
                GPUDL_CHECK(gpudl_tensor_uniform(c, &hx, -3.0f, 3.0f));
                GPUDL_CHECK(gpudl_tensor_uniform(c, &hdy, -1.0f, 1.0f));
                for (i = 0; i < m * (int64_t)es; i++) ((unsigned char *)guard.data)[i] = (unsigned char)(0x5au ^ (unsigned)i);
                for (a = 0; a < 4; a++) {   /* x, dy, y, out: each at its own offset */
                    int o = (off + a) % 4;
                    buf[a] = to_dev(g, &guard);
                    GPUDL_CHECK(gpudl_tensor_wrap(&v[a], (char *)buf[a].data + (size_t)o * es, GPUDL_DEVICE_CUDA, dts[d], 1, &n));
                }
                CHECK_OK(gpudl_tensor_copy(g, &v[0], &hx)); CHECK_OK(gpudl_tensor_copy(g, &v[1], &hdy));
                for (a = 0; a < 2; a++) {
                    gpudl_act act = a ? GPUDL_ACT_GELU : GPUDL_ACT_LEAKY_RELU;
                    CHECK_OK(gpudl_act_forward(c, act, 0.0f, &hy, &hx)); CHECK_OK(gpudl_act_forward(g, act, 0.0f, &v[2], &v[0]));
                    got = to_host(g, &v[2]);
                    CHECKF(max_rel(&got, &hy, 1.0) <= tol, "act %d forward %s n=%lld offset %d", (int)act, gpudl_dtype_name(dts[d]),
                           (long long)n, off);
                    gpudl_tensor_free(c, &got);
                    CHECK_OK(gpudl_tensor_copy(g, &v[2], &hy));   /* both sides' backward from the same y */
                    CHECK_OK(gpudl_act_backward(c, act, 0.0f, &hr, &hdy, &hx, &hy));
                    CHECK_OK(gpudl_act_backward(g, act, 0.0f, &v[3], &v[1], &v[0], &v[2]));
                    got = to_host(g, &v[3]);
                    CHECKF(max_rel(&got, &hr, 1.0) <= tol, "act %d backward %s n=%lld offset %d", (int)act, gpudl_dtype_name(dts[d]),
                           (long long)n, off);
                    gpudl_tensor_free(c, &got);
                }
                CHECK_OK(gpudl_dropout_forward(c, &hr, &hx, 0.3f, 11, 5)); CHECK_OK(gpudl_dropout_forward(g, &v[3], &v[0], 0.3f, 11, 5));
                got = to_host(g, &v[3]);
                CHECKF(max_rel(&got, &hr, 1.0) <= tol, "dropout %s n=%lld offset %d", gpudl_dtype_name(dts[d]), (long long)n, off);
                gpudl_tensor_free(c, &got);
                for (a = 0; a < 4; a++) {   /* the bytes around each view as they were */
                    int o = (off + a) % 4, ok = 1;
                    back = to_host(g, &buf[a]);
                    for (i = 0; i < m * (int64_t)es; i++)
                        if ((i < o * (int64_t)es || i >= (o + n) * (int64_t)es) &&
                            ((unsigned char *)back.data)[i] != (unsigned char)(0x5au ^ (unsigned)i)) ok = 0;
                    CHECKF(ok, "%s n=%lld: bytes around view %d (offset %d) overwritten", gpudl_dtype_name(dts[d]), (long long)n, a, o);
                    gpudl_tensor_free(c, &back); gpudl_tensor_free(g, &buf[a]);
                }
                gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hdy); gpudl_tensor_free(c, &hy); gpudl_tensor_free(c, &hr);
                gpudl_tensor_free(c, &guard);
            }
}
