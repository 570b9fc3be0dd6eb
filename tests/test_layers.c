/* gpudl tests, training half: every layer on the CPU against a float64
   reference, gradient checks for every layer, optimizers and schedules, the
   IDX loader's fault cases, the dataset, checkpoints (round trip, resume,
   corruption) and a short training run; in the nvcc build, every layer on
   the GPU against the CPU (SKIPPED without a GPU).

   Data: the Fashion-MNIST subset decompressed into $GPUDL_TEST_DATA
   (tests/run.sh does that; default build/test/data).
   Run:  ./test_layers [substring | --cpu-only | --gpu-only] */
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"
#include "harness.h"

/* >>helpers --------------------------------------------------------------- */

static gpudl_tensor mk(gpudl_ctx *ctx, gpudl_dtype dt, int ndim, const int64_t *shape) {
    gpudl_tensor t;
    GPUDL_CHECK(gpudl_tensor_create_on(ctx, &t, GPUDL_DEVICE_CPU, dt, ndim, shape));
    return t;
}

static gpudl_tensor rnd(int ndim, const int64_t *shape, float lo, float hi) {
    gpudl_tensor t = mk(cpu_ctx(), GPUDL_F32, ndim, shape);
    GPUDL_CHECK(gpudl_tensor_uniform(cpu_ctx(), &t, lo, hi));
    return t;
}

static float *F(const gpudl_tensor *t) { return (float *)t->data; }

/* max over i of |got - ref| / (|ref| + floor) */
static double rel_err(const float *got, const double *ref, int64_t n, double floor) {
    double w = 0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double e = fabs(got[i] - ref[i]) / (fabs(ref[i]) + floor);
        if (!(e <= w)) w = e;
    }
    return w;
}

static double *dalloc(int64_t n) {
    double *d = (double *)calloc((size_t)(n ? n : 1), sizeof(double));
    if (!d) { fprintf(stderr, "out of memory\n"); exit(1); }
    return d;
}

static const char *data_dir(void) {
    const char *d = getenv("GPUDL_TEST_DATA");
    return d ? d : "build/test/data";
}

/* >>activations ----------------------------------------------------------- */

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

/* >>losses ---------------------------------------------------------------- */

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

/* >>gradcheck: every layer through a small model -------------------------- */

/* Inputs whose entries are distinct and at least `gap` apart and away from
   zero: no ReLU kink or pooling tie is crossed by a step of eps < gap/2. */
static gpudl_tensor spaced_input(int ndim, const int64_t *shape, double gap, uint64_t seed) {
    gpudl_tensor t = mk(cpu_ctx(), GPUDL_F32, ndim, shape);
    int64_t n = gpudl_tensor_numel(&t), i;
    for (i = 0; i < n; i++) F(&t)[i] = (float)(i + 1) * (float)gap;
    for (i = n - 1; i > 0; i--) {   /* shuffle, then centre and flip signs */
        int64_t j = (int64_t)(gpudl_rng_bits(seed, (uint64_t)i) % (uint64_t)(i + 1));
        float v = F(&t)[i]; F(&t)[i] = F(&t)[j]; F(&t)[j] = v;
    }
    for (i = 0; i < n; i++) if (gpudl_rng_bits(seed + 1, (uint64_t)i) & 1) F(&t)[i] = -F(&t)[i];
    return t;
}

typedef gpudl_status (*model_fn)(gpudl_model *m);

/* eps and atol: a float32 forward makes a central difference noisy by about
   1e-7 |loss| / eps, so smooth layers use eps 1e-2; layers with kinks or
   ties use 1e-3 (below half the input spacing) and a larger atol. */
static void gradcheck_model(const char *name, int ndim, const int64_t *sample, int64_t N, model_fn add, gpudl_loss loss, int K,
                            int smooth) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_gradcheck_result r;
    int64_t xs[4], i, ls[2];
    gpudl_tensor x, t;
    xs[0] = N;
    memcpy(xs + 1, sample, sizeof(int64_t) * (size_t)ndim);
    CHECK_OK(gpudl_model_create(c, &m, ndim, sample));
    CHECKF(add(m) == GPUDL_OK, "%s: the model does not assemble: %s", name, gpudl_ctx_last_error(c));
    memset(&md, 0, sizeof md);
    md.max_batch = N;
    md.loss = loss;
    md.seed = 7;
    CHECK_OK(gpudl_model_build(m, &md));
    x = spaced_input(1 + ndim, xs, 2.0 / (double)gpudl__prod(1 + ndim, xs), 3);
    if (loss == GPUDL_LOSS_SOFTMAX_XENT) {
        t = mk(c, GPUDL_I32, 1, &N);
        for (i = 0; i < N; i++) ((int32_t *)t.data)[i] = (int32_t)(i % K);
    } else {
        ls[0] = N; ls[1] = K;
        t = rnd(2, ls, -1, 1);
    }
    CHECK_OK(gpudl_gradcheck(m, &x, &t, smooth ? 1e-2 : 1e-3, smooth ? 5e-5 : 3e-4, 2e-2, 40, &r));
    CHECKF(r.checked > 0 && r.failed == 0, "%s: %lld of %lld gradients off; worst %s (rel %.3g)", name, (long long)r.failed,
           (long long)r.checked, r.worst, r.max_rel_err);
    gpudl_tensor_free(c, &x);
    gpudl_tensor_free(c, &t);
    gpudl_model_destroy(m);
}

static gpudl_conv2d_desc conv_desc(int64_t stride, int64_t pad, int64_t dil) {
    gpudl_conv2d_desc d;
    memset(&d, 0, sizeof d);
    d.stride_h = d.stride_w = stride; d.pad_h = d.pad_w = pad; d.dil_h = d.dil_w = dil;
    return d;
}

static gpudl_status m_linear(gpudl_model *m) { return gpudl_model_add_linear(m, 7, 5); }
static gpudl_status m_relu(gpudl_model *m) { gpudl_model_add_relu(m); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_leaky(gpudl_model *m) { gpudl_model_add_act(m, GPUDL_ACT_LEAKY_RELU, 0.1f); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_gelu(gpudl_model *m) { gpudl_model_add_act(m, GPUDL_ACT_GELU, 0); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_tanh(gpudl_model *m) { gpudl_model_add_act(m, GPUDL_ACT_TANH, 0); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_sigmoid(gpudl_model *m) { gpudl_model_add_act(m, GPUDL_ACT_SIGMOID, 0); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_conv(gpudl_model *m) {
    gpudl_conv2d_desc d = conv_desc(2, 1, 1);
    gpudl_model_add_conv2d(m, 2, 3, 3, &d);
    gpudl_model_add_flatten(m);
    return gpudl_model_add_linear(m, 3 * 3 * 3, 4);
}
static gpudl_status m_conv_dil(gpudl_model *m) {
    gpudl_conv2d_desc d = conv_desc(1, 1, 2);
    gpudl_model_add_conv2d(m, 2, 2, 2, &d);
    gpudl_model_add_flatten(m);
    return gpudl_model_add_linear(m, 2 * 6 * 6, 3);
}
static gpudl_status m_maxpool(gpudl_model *m) { gpudl_model_add_maxpool2d(m, 2, 2); gpudl_model_add_flatten(m); return gpudl_model_add_linear(m, 2 * 3 * 3, 4); }
static gpudl_status m_maxpool_overlap(gpudl_model *m) {
    gpudl_pool2d_desc p;
    memset(&p, 0, sizeof p);
    p.kind = GPUDL_POOL_MAX; p.k_h = p.k_w = 3; p.stride_h = p.stride_w = 2; p.pad_h = p.pad_w = 1;
    gpudl_model_add_pool2d(m, &p);
    gpudl_model_add_flatten(m);
    return gpudl_model_add_linear(m, 2 * 3 * 3, 4);
}
static gpudl_status m_avgpool(gpudl_model *m) {
    gpudl_pool2d_desc p;
    memset(&p, 0, sizeof p);
    p.kind = GPUDL_POOL_AVG; p.k_h = p.k_w = 3; p.stride_h = p.stride_w = 2; p.pad_h = p.pad_w = 1;
    gpudl_model_add_pool2d(m, &p);
    gpudl_model_add_flatten(m);
    return gpudl_model_add_linear(m, 2 * 3 * 3, 4);
}
static gpudl_status m_bn2d(gpudl_model *m) { gpudl_model_add_batchnorm2d(m, 2); gpudl_model_add_flatten(m); return gpudl_model_add_linear(m, 2 * 6 * 5, 4); }
static gpudl_status m_bn1d(gpudl_model *m) { gpudl_model_add_batchnorm2d(m, 6); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_dropout(gpudl_model *m) { gpudl_model_add_dropout(m, 0.4f); return gpudl_model_add_linear(m, 6, 4); }
static gpudl_status m_flatten(gpudl_model *m) { gpudl_model_add_flatten(m); return gpudl_model_add_linear(m, 2 * 6 * 5, 4); }
static gpudl_status m_cnn(gpudl_model *m) {
    gpudl_conv2d_desc d = conv_desc(1, 1, 1);
    gpudl_model_add_conv2d(m, 2, 3, 3, &d);
    gpudl_model_add_batchnorm2d(m, 3);
    gpudl_model_add_act(m, GPUDL_ACT_TANH, 0);
    gpudl_model_add_maxpool2d(m, 2, 2);
    gpudl_model_add_flatten(m);
    gpudl_model_add_linear(m, 3 * 3 * 3, 8);
    gpudl_model_add_act(m, GPUDL_ACT_SIGMOID, 0);
    gpudl_model_add_dropout(m, 0.25f);
    return gpudl_model_add_linear(m, 8, 4);
}

static void test_gradcheck_layers(void) {
    static const int64_t v7[1] = {7}, v6[1] = {6}, img[3] = {2, 6, 5}, img6[3] = {2, 6, 6};
    gradcheck_model("linear + softmax-xent", 1, v7, 3, m_linear, GPUDL_LOSS_SOFTMAX_XENT, 5, 1);
    gradcheck_model("linear + mse", 1, v7, 3, m_linear, GPUDL_LOSS_MSE, 5, 1);
    gradcheck_model("relu", 1, v6, 4, m_relu, GPUDL_LOSS_SOFTMAX_XENT, 4, 0);
    gradcheck_model("leaky relu", 1, v6, 4, m_leaky, GPUDL_LOSS_SOFTMAX_XENT, 4, 0);
    gradcheck_model("gelu", 1, v6, 4, m_gelu, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("tanh", 1, v6, 4, m_tanh, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("sigmoid", 1, v6, 4, m_sigmoid, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("conv2d stride 2 pad 1", 3, img, 2, m_conv, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("conv2d dilation 2", 3, img6, 2, m_conv_dil, GPUDL_LOSS_SOFTMAX_XENT, 3, 1);
    gradcheck_model("max-pool 2x2", 3, img6, 3, m_maxpool, GPUDL_LOSS_SOFTMAX_XENT, 4, 0);
    gradcheck_model("max-pool 3x3 stride 2 pad 1", 3, img6, 3, m_maxpool_overlap, GPUDL_LOSS_SOFTMAX_XENT, 4, 0);
    gradcheck_model("avg-pool 3x3 stride 2 pad 1", 3, img6, 3, m_avgpool, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("batch norm 2d", 3, img, 4, m_bn2d, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("batch norm 1d", 1, v6, 5, m_bn1d, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("dropout", 1, v6, 4, m_dropout, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("flatten first", 3, img, 2, m_flatten, GPUDL_LOSS_SOFTMAX_XENT, 4, 1);
    gradcheck_model("small CNN", 3, img6, 3, m_cnn, GPUDL_LOSS_SOFTMAX_XENT, 4, 0);
}

/* gradcheck must notice a disagreement: max-pool over exact ties routes the
   gradient to the first maximum, while a central difference splits it
   between the tied entries (this is why the layer tests avoid ties). */
static gpudl_status m_tiepool(gpudl_model *m) { gpudl_model_add_maxpool2d(m, 2, 2); gpudl_model_add_flatten(m); return gpudl_model_add_linear(m, 1, 3); }

static void test_gradcheck_catches_errors(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    gpudl_gradcheck_result r;
    int64_t img[3] = {1, 2, 2}, xs[4] = {2, 1, 2, 2}, N = 2, i;
    gpudl_tensor x = mk(c, GPUDL_F32, 4, xs), t = mk(c, GPUDL_I32, 1, &N);
    for (i = 0; i < 8; i++) F(&x)[i] = i < 4 ? 0.75f : -0.5f;   /* every window is a 4-way tie */
    ((int32_t *)t.data)[0] = 0; ((int32_t *)t.data)[1] = 2;
    CHECK_OK(gpudl_model_create(c, &m, 3, img));
    CHECK_OK(m_tiepool(m));
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_OK(gpudl_gradcheck(m, &x, &t, 1e-3, 1e-5, 1e-2, 0, &r));
    CHECKF(r.failed > 0 && strstr(r.worst, "input") != NULL, "gradcheck missed the tie (%lld failed, worst %s)",
           (long long)r.failed, r.worst);
    gpudl_tensor_free(c, &x);
    gpudl_tensor_free(c, &t);
    gpudl_model_destroy(m);
}

/* >>model API ------------------------------------------------------------- */

static void test_model_api_errors(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    int64_t img[3] = {1, 28, 28}, xs[4] = {2, 1, 28, 28}, big[4] = {200, 1, 28, 28}, bad[4] = {2, 1, 27, 28};
    gpudl_tensor x = rnd(4, xs, -1, 1), xb = rnd(4, big, -1, 1), xbad = rnd(4, bad, -1, 1);
    char buf[2048];
    CHECK_OK(gpudl_model_create(c, &m, 3, img));
    CHECK_ST(gpudl_model_forward(m, &x, NULL), GPUDL_ERR_INVALID_ARG);                 /* used before it is built */
    CHECK(strstr(gpudl_ctx_last_error(c), "not built") != NULL);
    CHECK_ST(gpudl_model_add_linear(m, 784, 10), GPUDL_ERR_SHAPE);                     /* needs a flatten */
    CHECKF(strstr(gpudl_ctx_last_error(c), "1x28x28") && strstr(gpudl_ctx_last_error(c), "flatten"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_add_conv2d(m, 3, 8, 5, NULL), GPUDL_ERR_SHAPE);               /* wrong in_channels */
    CHECK_OK(gpudl_model_add_conv2d(m, 1, 4, 5, NULL));
    CHECK_OK(gpudl_model_add_relu(m));
    CHECK_OK(gpudl_model_add_maxpool2d(m, 2, 2));
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_SHAPE);                             /* softmax needs K scores */
    CHECK_OK(gpudl_model_add_flatten(m));
    CHECK_OK(gpudl_model_add_linear(m, 4 * 12 * 12, 10));
    CHECK_ST(gpudl_model_add_dropout(m, 1.0f), GPUDL_ERR_INVALID_ARG);
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_relu(m), GPUDL_ERR_INVALID_ARG);                          /* after build */
    CHECK_ST(gpudl_model_forward(m, &xb, NULL), GPUDL_ERR_SHAPE);                      /* batch > max_batch */
    CHECK_ST(gpudl_model_forward(m, &xbad, NULL), GPUDL_ERR_SHAPE);
    CHECKF(strstr(gpudl_ctx_last_error(c), "f32[2,1,27,28]") && strstr(gpudl_ctx_last_error(c), "1x28x28"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_INVALID_ARG);                          /* no loss yet */
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);                              /* no optimizer */
    CHECK(gpudl_model_num_params(m) >= 4 * 25 + 4 + 576 * 10 + 10);
    gpudl_model_summary(m, buf, sizeof buf);
    CHECKF(strstr(buf, "conv2d") && strstr(buf, "parameters: 5874"), "%s", buf);
    gpudl_model_destroy(m);
    gpudl_model_destroy(NULL);
    CHECK_ST(gpudl_model_add_relu(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_forward(NULL, &x, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &xb); gpudl_tensor_free(c, &xbad);
}

/* Gradients accumulate across backward calls until zero_grad. */
static void test_grad_accumulation(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    int64_t v[1] = {5}, xs[2] = {4, 5}, N = 4, i, n;
    gpudl_tensor x = rnd(2, xs, -1, 1), lab = mk(c, GPUDL_I32, 1, &N), g;
    float *once;
    memset(&g, 0, sizeof g);
    for (i = 0; i < N; i++) ((int32_t *)lab.data)[i] = (int32_t)(i % 3);
    CHECK_OK(gpudl_model_create(c, &m, 1, v));
    CHECK_OK(gpudl_model_add_linear(m, 5, 6));
    CHECK_OK(gpudl_model_add_relu(m));
    CHECK_OK(gpudl_model_add_linear(m, 6, 3));
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_OK(gpudl_model_params(m, NULL, &g));
    n = gpudl_model_num_params(m);
    once = (float *)malloc(sizeof(float) * (size_t)n);
    CHECK_OK(gpudl_model_zero_grad(m));
    CHECK_OK(gpudl_model_forward(m, &x, NULL)); CHECK_OK(gpudl_model_loss(m, &lab)); CHECK_OK(gpudl_model_backward(m));
    memcpy(once, g.data, sizeof(float) * (size_t)n);
    CHECK_OK(gpudl_model_forward(m, &x, NULL)); CHECK_OK(gpudl_model_loss(m, &lab)); CHECK_OK(gpudl_model_backward(m));
    for (i = 0; i < n; i++) if (fabsf(F(&g)[i] - 2.0f * once[i]) > 1e-6f * (1.0f + fabsf(once[i]))) break;
    CHECKF(i == n, "gradient %lld did not accumulate: %g vs 2 x %g", (long long)i, (double)F(&g)[i], (double)once[i]);
    CHECK_OK(gpudl_model_zero_grad(m));
    for (i = 0; i < n; i++) if (F(&g)[i] != 0.0f) break;
    CHECK(i == n);
    free(once);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &lab);
    gpudl_model_destroy(m);
}

/* >>optimizers ------------------------------------------------------------ */

/* One parameter vector through several steps of each optimizer against the
   PyTorch update rules in float64. */
static void test_optimizers(void) {
    gpudl_ctx *c = cpu_ctx();
    static const struct { gpudl_optim_kind kind; float lr, mom, wd; int nesterov; float clip; } cases[] = {
        {GPUDL_OPTIM_SGD, 0.1f, 0, 0, 0, 0}, {GPUDL_OPTIM_SGD, 0.05f, 0.9f, 0, 0, 0}, {GPUDL_OPTIM_SGD, 0.05f, 0.9f, 1e-2f, 1, 0},
        {GPUDL_OPTIM_SGD, 0.1f, 0, 5e-2f, 0, 0}, {GPUDL_OPTIM_ADAM, 1e-2f, 0, 0, 0, 0}, {GPUDL_OPTIM_ADAM, 1e-2f, 0, 1e-2f, 0, 0},
        {GPUDL_OPTIM_ADAMW, 1e-2f, 0, 0.1f, 0, 0}, {GPUDL_OPTIM_SGD, 0.1f, 0, 0, 0, 0.5f}, {GPUDL_OPTIM_ADAM, 1e-2f, 0, 0, 0, 0.1f},
    };
    size_t s;
    for (s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        gpudl_model *m;
        gpudl_optim_desc od;
        gpudl_tensor P, G;
        int64_t v[1] = {9}, n, i;
        memset(&P, 0, sizeof P);
        memset(&G, 0, sizeof G);
        int step;
        double *w, *mb, *vb;
        CHECK_OK(gpudl_model_create(c, &m, 1, v));
        CHECK_OK(gpudl_model_add_linear(m, 9, 7));
        CHECK_OK(gpudl_model_build(m, NULL));
        memset(&od, 0, sizeof od);
        od.kind = cases[s].kind; od.lr = cases[s].lr; od.momentum = cases[s].mom; od.weight_decay = cases[s].wd;
        od.nesterov = cases[s].nesterov; od.clip_norm = cases[s].clip;
        CHECK_OK(gpudl_model_set_optimizer(m, &od));
        CHECK_OK(gpudl_model_params(m, &P, &G));
        n = gpudl_model_num_params(m);
        w = dalloc(n); mb = dalloc(n); vb = dalloc(n);
        for (i = 0; i < n; i++) w[i] = F(&P)[i];
        for (step = 0; step < 3; step++) {
            double ss = 0, scale = 1;
            for (i = 0; i < n; i++) { F(&G)[i] = (float)(gpudl_rng_uniform(100 + (uint64_t)step, (uint64_t)i) - 0.5); ss += (double)F(&G)[i] * F(&G)[i]; }
            if (od.clip_norm > 0 && sqrt(ss) > od.clip_norm) scale = od.clip_norm / (sqrt(ss) + 1e-6);
            CHECK_OK(gpudl_model_step(m));
            for (i = 0; i < n; i++) {
                double g = F(&G)[i] * scale;
                if (od.kind == GPUDL_OPTIM_SGD) {
                    g += od.weight_decay * w[i];
                    if (od.momentum > 0) {
                        mb[i] = step == 0 ? g : od.momentum * mb[i] + g;
                        g = od.nesterov ? g + od.momentum * mb[i] : mb[i];
                    }
                    w[i] -= od.lr * g;
                } else {
                    double b1 = 0.9, b2 = 0.999;
                    if (od.kind == GPUDL_OPTIM_ADAMW) w[i] -= od.lr * od.weight_decay * w[i];
                    else g += od.weight_decay * w[i];
                    mb[i] = b1 * mb[i] + (1 - b1) * g;
                    vb[i] = b2 * vb[i] + (1 - b2) * g * g;
                    w[i] -= od.lr * (mb[i] / (1 - pow(b1, step + 1))) / (sqrt(vb[i] / (1 - pow(b2, step + 1))) + 1e-8);
                }
            }
        }
        CHECKF(rel_err(F(&P), w, n, 1e-3) < 1e-4, "optimizer case %zu: rel err %g", s, rel_err(F(&P), w, n, 1e-3));
        CHECK(gpudl_model_step_count(m) == 3);
        free(w); free(mb); free(vb);
        gpudl_model_destroy(m);
    }
}

static void test_lr_schedules(void) {
    gpudl_optim_desc d;
    memset(&d, 0, sizeof d);
    d.lr = 0.1f;
    CHECK(gpudl_optim_lr(&d, 0) == 0.1f && gpudl_optim_lr(&d, 12345) == 0.1f);
    d.schedule = GPUDL_SCHED_STEP; d.step_size = 10; d.gamma = 0.5f;
    CHECK(fabs(gpudl_optim_lr(&d, 9) - 0.1) < 1e-7 && fabs(gpudl_optim_lr(&d, 10) - 0.05) < 1e-7 && fabs(gpudl_optim_lr(&d, 25) - 0.025) < 1e-7);
    d.schedule = GPUDL_SCHED_COSINE; d.warmup_steps = 10; d.total_steps = 110; d.min_lr = 0.001f;
    CHECK(fabs(gpudl_optim_lr(&d, 0) - 0.01) < 1e-7);                         /* warm-up: (step + 1) / warmup */
    CHECK(fabs(gpudl_optim_lr(&d, 9) - 0.1) < 1e-7);
    CHECK(fabs(gpudl_optim_lr(&d, 10) - 0.1) < 1e-7);                         /* cosine starts at lr */
    CHECK(fabs(gpudl_optim_lr(&d, 60) - (0.001 + 0.5 * 0.099)) < 1e-6);        /* halfway */
    CHECK(fabs(gpudl_optim_lr(&d, 110) - 0.001) < 1e-7 && fabs(gpudl_optim_lr(&d, 500) - 0.001) < 1e-7);
    d.kind = GPUDL_OPTIM_ADAM; d.lr = 0; d.schedule = GPUDL_SCHED_CONSTANT;
    CHECK(fabs(gpudl_optim_lr(&d, 3) - 0.001) < 1e-9);
}

/* >>data ------------------------------------------------------------------ */

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "build/test/tmp_%s", name);
    return buf[k];
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "cannot write %s\n", path); exit(1); }
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

/* An IDX header + payload in a byte buffer. */
static size_t idx_bytes(unsigned char *b, int type, int ndim, const uint32_t *dims, size_t payload) {
    size_t n = 4, i;
    b[0] = 0; b[1] = 0; b[2] = (unsigned char)type; b[3] = (unsigned char)ndim;
    for (i = 0; i < (size_t)ndim; i++) {
        b[n++] = (unsigned char)(dims[i] >> 24); b[n++] = (unsigned char)(dims[i] >> 16);
        b[n++] = (unsigned char)(dims[i] >> 8); b[n++] = (unsigned char)dims[i];
    }
    for (i = 0; i < payload; i++) b[n + i] = (unsigned char)(i * 7 + 3);
    return n + payload;
}

static void expect_idx_error(const char *what, const unsigned char *b, size_t n, gpudl_status want, const char *phrase) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor t;
    const char *p = tmp_path("bad.idx");
    write_bytes(p, b, n);
    memset(&t, 0x5a, sizeof t);
    CHECKF(gpudl_idx_load(c, p, &t) == want, "%s: got %s", what, gpudl_ctx_last_error(c));
    CHECKF(t.data == NULL, "%s: the tensor was not left empty", what);
    CHECKF(strstr(gpudl_ctx_last_error(c), phrase) && strstr(gpudl_ctx_last_error(c), p), "%s: message '%s' lacks '%s' or the path",
           what, gpudl_ctx_last_error(c), phrase);
}

static void test_idx_loader(void) {
    gpudl_ctx *c = cpu_ctx();
    unsigned char b[256];
    uint32_t d3[3] = {2, 3, 4}, d1[1] = {5}, d2[2] = {2, 2}, d0[1] = {0};
    uint32_t huge[5] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    gpudl_tensor t;
    size_t n;
    int64_t i;
    /* valid files: ubyte 3-D, int 1-D, float 2-D (big-endian) */
    n = idx_bytes(b, 0x08, 3, d3, 24);
    write_bytes(tmp_path("ok.idx"), b, n);
    CHECK_OK(gpudl_idx_load(c, tmp_path("ok.idx"), &t));
    CHECK(t.dtype == GPUDL_U8 && t.ndim == 3 && t.shape[0] == 2 && t.shape[1] == 3 && t.shape[2] == 4);
    for (i = 0; i < 24; i++) if (((uint8_t *)t.data)[i] != (uint8_t)(i * 7 + 3)) break;
    CHECK(i == 24);
    gpudl_tensor_free(c, &t);
    n = idx_bytes(b, 0x0C, 1, d1, 20);
    b[20] = 0xff; b[21] = 0xff; b[22] = 0xff; b[23] = 0xfe;   /* element 3 (bytes 8 + 12..15) = -2 */
    write_bytes(tmp_path("ok.idx"), b, n);
    CHECK_OK(gpudl_idx_load(c, tmp_path("ok.idx"), &t));
    CHECK(t.dtype == GPUDL_I32 && ((int32_t *)t.data)[3] == -2 && ((int32_t *)t.data)[0] == (int32_t)((3u << 24) | (10u << 16) | (17u << 8) | 24u));
    gpudl_tensor_free(c, &t);
    n = idx_bytes(b, 0x0D, 2, d2, 16);
    b[12] = 0x3f; b[13] = 0x80; b[14] = 0; b[15] = 0;           /* 1.0f */
    write_bytes(tmp_path("ok.idx"), b, n);
    CHECK_OK(gpudl_idx_load(c, tmp_path("ok.idx"), &t));
    CHECK(t.dtype == GPUDL_F32 && F(&t)[0] == 1.0f);
    gpudl_tensor_free(c, &t);
    /* every fault: its own status or message, nothing allocated */
    n = idx_bytes(b, 0x08, 3, d3, 24); b[0] = 0x12;
    expect_idx_error("bad magic", b, n, GPUDL_ERR_FORMAT, "bad magic");
    n = idx_bytes(b, 0x0B, 1, d1, 10);
    expect_idx_error("unsupported type", b, n, GPUDL_ERR_UNSUPPORTED, "type 0x0b");
    n = idx_bytes(b, 0x07, 1, d1, 5);
    expect_idx_error("unknown type", b, n, GPUDL_ERR_FORMAT, "unknown IDX type");
    n = idx_bytes(b, 0x08, 0, d1, 0);
    expect_idx_error("0 dimensions", b, n, GPUDL_ERR_FORMAT, "0 dimensions");
    n = idx_bytes(b, 0x08, 5, huge, 0);
    expect_idx_error("5 dimensions", b, n, GPUDL_ERR_FORMAT, "5 dimensions");
    n = idx_bytes(b, 0x08, 4, huge, 0);
    expect_idx_error("overflowing dimensions", b, n, GPUDL_ERR_FORMAT, "overflows");
    n = idx_bytes(b, 0x08, 1, d0, 0);
    expect_idx_error("a zero dimension", b, n, GPUDL_ERR_FORMAT, "size 0");
    n = idx_bytes(b, 0x08, 3, d3, 24);
    expect_idx_error("truncated header", b, 9, GPUDL_ERR_FORMAT, "inside its header");
    expect_idx_error("truncated magic", b, 3, GPUDL_ERR_FORMAT, "less than the 4-byte magic");
    expect_idx_error("truncated data", b, n - 1, GPUDL_ERR_FORMAT, "truncated");
    n = idx_bytes(b, 0x08, 3, d3, 25);
    expect_idx_error("trailing bytes", b, n, GPUDL_ERR_FORMAT, "trailing bytes");
    memset(&t, 0, sizeof t);
    CHECK_ST(gpudl_idx_load(c, NULL, &t), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_idx_load(c, "build/test", &t), GPUDL_ERR_IO);
    CHECK(strstr(gpudl_ctx_last_error(c), "is a directory") != NULL);
    CHECK_ST(gpudl_idx_load(c, "build/test/no-such-file.idx", &t), GPUDL_ERR_IO);
    CHECKF(strstr(gpudl_ctx_last_error(c), "No such file") && strstr(gpudl_ctx_last_error(c), "no-such-file.idx"), "%s", gpudl_ctx_last_error(c));
    CHECK(t.data == NULL);
}

/* A .gz file: read through zlib when built with GPUDL_ZLIB, otherwise a clear message. */
static void test_idx_gzip(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor t, raw;
    char gz[512], plain[512];
    snprintf(gz, sizeof gz, "data/fashion-mnist-subset/t10k-labels-idx1-ubyte.gz");
    snprintf(plain, sizeof plain, "%s/t10k-labels-idx1-ubyte", data_dir());
#ifdef GPUDL_ZLIB
    CHECK_OK(gpudl_idx_load(c, gz, &t));
    CHECK_OK(gpudl_idx_load(c, plain, &raw));
    CHECK(t.shape[0] == 1000 && gpudl_tensor_bytes(&t) == gpudl_tensor_bytes(&raw) && memcmp(t.data, raw.data, 1000) == 0);
    gpudl_tensor_free(c, &t);
    gpudl_tensor_free(c, &raw);
    {   /* a truncated gzip stream */
        FILE *f = fopen(gz, "rb");
        unsigned char buf[300];
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        write_bytes(tmp_path("cut.gz"), buf, n);
        CHECK_ST(gpudl_idx_load(c, tmp_path("cut.gz"), &t), GPUDL_ERR_FORMAT);
        CHECK(strstr(gpudl_ctx_last_error(c), "gzip") != NULL && t.data == NULL);
    }
#else
    (void)raw; (void)plain;
    CHECK_ST(gpudl_idx_load(c, gz, &t), GPUDL_ERR_UNSUPPORTED);
    CHECKF(strstr(gpudl_ctx_last_error(c), "gzip-compressed") && strstr(gpudl_ctx_last_error(c), "gunzip"), "%s", gpudl_ctx_last_error(c));
    CHECK(t.data == NULL);
#endif
}

static int load_subset(gpudl_tensor *xtr, gpudl_tensor *ytr, gpudl_tensor *xte, gpudl_tensor *yte) {
    gpudl_ctx *c = cpu_ctx();
    char p[4][512];
    snprintf(p[0], 512, "%s/train-images-idx3-ubyte", data_dir());
    snprintf(p[1], 512, "%s/train-labels-idx1-ubyte", data_dir());
    snprintf(p[2], 512, "%s/t10k-images-idx3-ubyte", data_dir());
    snprintf(p[3], 512, "%s/t10k-labels-idx1-ubyte", data_dir());
    return gpudl_idx_load(c, p[0], xtr) == GPUDL_OK && gpudl_idx_load(c, p[1], ytr) == GPUDL_OK &&
           gpudl_idx_load(c, p[2], xte) == GPUDL_OK && gpudl_idx_load(c, p[3], yte) == GPUDL_OK;
}

static void test_dataset(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor xtr, ytr, xte, yte, xb, yb;
    gpudl_dataset ds;
    int32_t *order1;
    int64_t b, i, seen = 0;
    if (!load_subset(&xtr, &ytr, &xte, &yte)) SKIP("no data under %s (tests/run.sh prepares it)", data_dir());
    CHECK(xtr.ndim == 3 && xtr.shape[0] == 2000 && xtr.shape[1] == 28 && ytr.shape[0] == 2000 && yte.shape[0] == 1000);
    CHECK_OK(gpudl_dataset_create(c, &ds, &xtr, &ytr, 64, 0.5f, 0.5f));
    CHECK(gpudl_dataset_num_batches(&ds) == 32);   /* 31 full batches and one of 16 */
    CHECK_OK(gpudl_dataset_shuffle(c, &ds, 1, 3));
    order1 = (int32_t *)malloc(2000 * sizeof(int32_t));
    memcpy(order1, ds.perm.data, 2000 * sizeof(int32_t));
    for (b = 0; b < gpudl_dataset_num_batches(&ds); b++) {
        CHECK_OK(gpudl_dataset_batch(c, &ds, b, &xb, &yb));
        CHECK(xb.ndim == 4 && xb.shape[1] == 1 && xb.shape[2] == 28 && xb.shape[0] == (b < 31 ? 64 : 16));
        for (i = 0; i < xb.shape[0]; i++) {
            int64_t k = order1[b * 64 + i];
            CHECK(((int32_t *)yb.data)[i] == ((uint8_t *)ytr.data)[k]);
            CHECK(F(&xb)[i * 784 + 300] == (((uint8_t *)xtr.data)[k * 784 + 300] / 255.0f - 0.5f) / 0.5f);
        }
        seen += xb.shape[0];
    }
    CHECK(seen == 2000);
    CHECK_OK(gpudl_dataset_shuffle(c, &ds, 1, 3));                        /* same epoch: same order */
    CHECK(memcmp(order1, ds.perm.data, 2000 * sizeof(int32_t)) == 0);
    CHECK_OK(gpudl_dataset_shuffle(c, &ds, 1, 4));                        /* another epoch: another */
    CHECK(memcmp(order1, ds.perm.data, 2000 * sizeof(int32_t)) != 0);
    CHECK_OK(gpudl_dataset_shuffle(c, &ds, 0, 0));
    CHECK(((int32_t *)ds.perm.data)[1999] == 1999);
    CHECK_ST(gpudl_dataset_batch(c, &ds, 32, &xb, &yb), GPUDL_ERR_INVALID_ARG);
    free(order1);
    gpudl_dataset_free(c, &ds);
    CHECK_ST(gpudl_dataset_create(c, &ds, &ytr, &xtr, 64, 0, 1), GPUDL_ERR_SHAPE);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* >>training -------------------------------------------------------------- */

static gpudl_model *small_cnn(gpudl_ctx *c, uint64_t seed, gpudl_optim_kind opt) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_conv2d_desc cd = conv_desc(1, 2, 1);
    int64_t img[3] = {1, 28, 28};
    GPUDL_CHECK(gpudl_model_create(c, &m, 3, img));
    GPUDL_CHECK(gpudl_model_add_conv2d(m, 1, 6, 5, &cd));
    GPUDL_CHECK(gpudl_model_add_batchnorm2d(m, 6));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_dropout(m, 0.2f));
    GPUDL_CHECK(gpudl_model_add_linear(m, 6 * 14 * 14, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = 64;
    md.seed = seed;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = opt;
    od.lr = opt == GPUDL_OPTIM_SGD ? 0.05f : 2e-3f;
    od.momentum = opt == GPUDL_OPTIM_SGD ? 0.9f : 0.0f;
    od.weight_decay = 1e-4f;
    od.clip_norm = 5.0f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    return m;
}

static void train_steps(gpudl_model *m, gpudl_dataset *ds, int64_t first, int64_t count, float *last_loss) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor x, y;
    int64_t s;
    for (s = first; s < first + count; s++) {
        int64_t b = s % gpudl_dataset_num_batches(ds);
        if (b == 0) CHECK_OK(gpudl_dataset_shuffle(c, ds, 1, (uint64_t)(s / gpudl_dataset_num_batches(ds))));
        CHECK_OK(gpudl_dataset_batch(c, ds, b, &x, &y));
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_forward(m, &x, NULL));
        CHECK_OK(gpudl_model_loss(m, &y));
        CHECK_OK(gpudl_model_backward(m));
        CHECK_OK(gpudl_model_step(m));
        if (last_loss) CHECK_OK(gpudl_model_loss_value(m, last_loss));
    }
}

static double evaluate(gpudl_model *m, gpudl_dataset *ds) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor x, y, count;
    int64_t one = 1, b;
    float correct = 0;
    count = mk(c, GPUDL_F32, 1, &one);
    F(&count)[0] = 0;
    gpudl_model_train(m, 0);
    CHECK_OK(gpudl_dataset_shuffle(c, ds, 0, 0));
    for (b = 0; b < gpudl_dataset_num_batches(ds); b++) {
        CHECK_OK(gpudl_dataset_batch(c, ds, b, &x, &y));
        CHECK_OK(gpudl_model_forward(m, &x, NULL));
        CHECK_OK(gpudl_model_count_correct(m, &y, &count));
    }
    CHECK_OK(gpudl_tensor_item(c, &count, 0, &correct));
    gpudl_model_train(m, 1);
    gpudl_tensor_free(c, &count);
    return correct / (double)ds->n;
}

/* A short CPU run on the subset must reduce the loss and beat chance widely. */
static void test_training_learns(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor xtr, ytr, xte, yte;
    gpudl_dataset tr, te;
    gpudl_model *m;
    float first = 0, last = 0;
    double acc;
    if (!load_subset(&xtr, &ytr, &xte, &yte)) SKIP("no data under %s", data_dir());
    CHECK_OK(gpudl_dataset_create(c, &tr, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    CHECK_OK(gpudl_dataset_create(c, &te, &xte, &yte, 64, 0.2860f, 0.3530f));
    m = small_cnn(c, 1, GPUDL_OPTIM_ADAM);
    train_steps(m, &tr, 0, 1, &first);
    train_steps(m, &tr, 1, 3 * 32 - 1, &last);
    acc = evaluate(m, &te);
    printf("    3 epochs of 2000 images: loss %.3f -> %.3f, test accuracy %.1f%%\n", first, last, 100 * acc);
    CHECKF(last < 0.6f * first, "loss %g -> %g did not fall", first, last);
    CHECKF(acc > 0.65, "test accuracy %.3f is not far above chance (0.1)", acc);
    gpudl_model_destroy(m);
    gpudl_dataset_free(c, &tr); gpudl_dataset_free(c, &te);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* >>checkpoints ----------------------------------------------------------- */

typedef struct { float *flat[4]; size_t bytes[4]; int64_t step; uint64_t seed, off, cseed, coff; } snapshot;

static void snap(gpudl_model *m, snapshot *s) {
    int k;
    for (k = 0; k < 4; k++) {
        const gpudl_tensor *t = gpudl__ck_flat(m, k);
        s->bytes[k] = t->data ? gpudl_tensor_bytes(t) : 0;
        s->flat[k] = (float *)malloc(s->bytes[k] + 1);
        if (s->bytes[k]) memcpy(s->flat[k], t->data, s->bytes[k]);
    }
    s->step = m->step; s->seed = m->seed; s->off = m->rng_offset; s->cseed = m->ctx->rng_seed; s->coff = m->ctx->rng_offset;
}

static int snap_equal(const snapshot *a, const snapshot *b) {
    int k;
    for (k = 0; k < 4; k++) if (a->bytes[k] != b->bytes[k] || memcmp(a->flat[k], b->flat[k], a->bytes[k])) return 0;
    return a->step == b->step && a->seed == b->seed && a->off == b->off && a->cseed == b->cseed && a->coff == b->coff;
}

static void snap_free(snapshot *s) { int k; for (k = 0; k < 4; k++) free(s->flat[k]); }

static void test_checkpoint_roundtrip_and_resume(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor xtr, ytr, xte, yte;
    gpudl_dataset tr;
    gpudl_model *a, *b;
    snapshot sa, sb, sa2, sb2;
    const char *path = tmp_path("ckpt.safetensors");
    FILE *f;
    if (!load_subset(&xtr, &ytr, &xte, &yte)) SKIP("no data under %s", data_dir());
    CHECK_OK(gpudl_dataset_create(c, &tr, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    a = small_cnn(c, 1, GPUDL_OPTIM_ADAMW);
    train_steps(a, &tr, 0, 5, NULL);
    CHECK_OK(gpudl_model_save(c, a, path));
    snap(a, &sa);
    b = small_cnn(c, 99, GPUDL_OPTIM_ADAMW);          /* other initial weights */
    gpudl_ctx_set_seed(c, 4242);
    CHECK_OK(gpudl_model_load(c, b, path));
    snap(b, &sb);
    CHECKF(snap_equal(&sa, &sb), "the round trip is not bit-identical (params, moments, step, RNG)");
    /* resume: a trains on; b, loaded from the checkpoint, trains the same steps */
    train_steps(a, &tr, 5, 7, NULL);
    train_steps(b, &tr, 5, 7, NULL);
    snap(a, &sa2);
    snap(b, &sb2);
    CHECKF(snap_equal(&sa2, &sb2), "train-save-train and load-train differ");
    snap_free(&sa); snap_free(&sb); snap_free(&sa2); snap_free(&sb2);
    f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) fclose(f);
    {   /* no temporary file is left behind */
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
        f = fopen(tmp, "rb");
        CHECK(f == NULL);
        if (f) fclose(f);
    }
    gpudl_model_destroy(a); gpudl_model_destroy(b);
    gpudl_dataset_free(c, &tr);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* Builds a valid checkpoint, then corrupts it in each way a file can be
   wrong; every load must fail with its own message and leave the model as
   it was. */
static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long sz;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); sz = ftell(f); fseek(f, 0, SEEK_SET);
    b = (unsigned char *)malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static void corrupt_case(gpudl_model *m, const char *what, const unsigned char *data, size_t n, const char *phrase) {
    gpudl_ctx *c = cpu_ctx();
    snapshot before, after;
    const char *p = tmp_path("corrupt.safetensors");
    write_bytes(p, data, n);
    snap(m, &before);
    CHECKF(gpudl_model_load(c, m, p) != GPUDL_OK, "%s: loaded", what);
    CHECKF(strstr(gpudl_ctx_last_error(c), phrase) != NULL, "%s: message '%s' lacks '%s'", what, gpudl_ctx_last_error(c), phrase);
    snap(m, &after);
    CHECKF(snap_equal(&before, &after), "%s: the model changed", what);
    snap_free(&before); snap_free(&after);
}

/* Rewrites the JSON header (keeping the 8-byte length in step) and the data. */
static unsigned char *with_header(const unsigned char *file, size_t n, const char *from, const char *to, size_t *out_n) {
    uint64_t hlen = 0, nh;
    size_t k;
    char *h;
    const char *at;
    unsigned char *o;
    for (k = 0; k < 8; k++) hlen |= (uint64_t)file[k] << (8 * k);
    h = (char *)malloc(hlen + 1);
    memcpy(h, file + 8, hlen);
    h[hlen] = 0;
    at = strstr(h, from);
    if (!at) { free(h); *out_n = 0; return NULL; }
    nh = hlen - strlen(from) + strlen(to);
    o = (unsigned char *)malloc(8 + nh + (n - 8 - hlen) + 1);
    for (k = 0; k < 8; k++) o[k] = (unsigned char)(nh >> (8 * k));
    memcpy(o + 8, h, (size_t)(at - h));
    memcpy(o + 8 + (at - h), to, strlen(to));
    memcpy(o + 8 + (at - h) + strlen(to), at + strlen(from), hlen - (size_t)(at - h) - strlen(from));
    memcpy(o + 8 + nh, file + 8 + hlen, n - 8 - hlen);
    *out_n = 8 + nh + (n - 8 - hlen);
    free(h);
    return o;
}

static void test_checkpoint_corruption(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m = small_cnn(c, 5, GPUDL_OPTIM_ADAM), *other;
    char path[512];
    unsigned char *good, *bad;
    size_t n, bn;
    uint64_t hlen = 0;
    int k;
    static const struct { const char *what, *from, *to, *phrase; } edits[] = {
        {"unknown dtype", "\"dtype\":\"F32\"", "\"dtype\":\"Q7\"", "unknown dtype"},
        {"F64 where F32 is needed", "\"dtype\":\"F32\",\"shape\":[6]", "\"dtype\":\"F64\",\"shape\":[3]", "need F32"},
        {"shape disagrees with bytes", "\"shape\":[6,1,5,5]", "\"shape\":[6,1,5,4]", "its shape and dtype need"},
        {"wrong shape for the model", "\"shape\":[6,1,5,5]", "\"shape\":[6,5,5,1]", "but the model's is"},
        {"missing tensor", "\"0.bias\"", "\"0.bais\"", "has no tensor '0.bias'"},
        {"not a gpudl file", "\"format\":\"gpudl\"", "\"format\":\"torch\"", "not written by gpudl_model_save"},
        {"optimizer mismatch", "\"optimizer\":\"adam\"", "\"optimizer\":\"sgd\"", "holds optimizer state"},
        {"bad step metadata", "\"step\":\"", "\"step\":\"x", "not integers"},
        {"malformed JSON", "{\"__metadata__\":{", "{\"__metadata__\":{{", "malformed"},
        {"duplicate field", "\"dtype\":\"F32\",", "\"dtype\":\"F32\",\"dtype\":\"F32\",", "unknown or repeated field"},
        {"overlapping offsets", "\"data_offsets\":[600,624]", "\"data_offsets\":[596,620]", "overlaps the previous tensor"},
        {"a gap between tensors", "\"data_offsets\":[600,624]", "\"data_offsets\":[604,628]", "a gap before it"},
    };
    snprintf(path, sizeof path, "%s", tmp_path("good.safetensors"));
    CHECK_OK(gpudl_model_save(c, m, path));
    good = read_all(path, &n);
    if (!good) { CHECK(0); gpudl_model_destroy(m); return; }
    for (k = 0; k < 8; k++) hlen |= (uint64_t)good[k] << (8 * k);
    corrupt_case(m, "shorter than 8 bytes", good, 5, "too short");
    corrupt_case(m, "header longer than the file", good, 8 + (size_t)hlen - 10, "exceeds the file");
    corrupt_case(m, "data truncated", good, n - 4, "outside the");
    {   /* trailing bytes after the data */
        unsigned char *t = (unsigned char *)malloc(n + 16);
        memcpy(t, good, n);
        memset(t + n, 0, 16);
        corrupt_case(m, "trailing bytes", t, n + 16, "data bytes follow the header");
        free(t);
    }
    {   /* header length zero and a header of garbage */
        unsigned char z[16] = {0};
        corrupt_case(m, "header length 0", z, 16, "implausible header length");
        bad = (unsigned char *)malloc(n);
        memcpy(bad, good, n);
        memset(bad + 8, 'x', 16);
        corrupt_case(m, "garbage header", bad, n, "malformed JSON header");
        free(bad);
    }
    for (k = 0; k < (int)(sizeof edits / sizeof edits[0]); k++) {
        bad = with_header(good, n, edits[k].from, edits[k].to, &bn);
        CHECKF(bad != NULL, "edit '%s' did not apply", edits[k].what);
        if (bad) corrupt_case(m, edits[k].what, bad, bn, edits[k].phrase);
        free(bad);
    }
    corrupt_case(m, "an empty file", good, 0, "too short");
    CHECK_ST(gpudl_model_load(c, m, "build/test"), GPUDL_ERR_IO);
    CHECK(strstr(gpudl_ctx_last_error(c), "is a directory") != NULL);
    CHECK_ST(gpudl_model_load(c, m, "build/test/none.safetensors"), GPUDL_ERR_IO);
    CHECK(strstr(gpudl_ctx_last_error(c), "none.safetensors") && strstr(gpudl_ctx_last_error(c), "No such file"));
    /* another architecture */
    other = small_cnn(c, 5, GPUDL_OPTIM_ADAM);
    gpudl_model_destroy(other);
    {
        gpudl_model *o;
        int64_t v[1] = {10};
        CHECK_OK(gpudl_model_create(c, &o, 1, v));
        CHECK_OK(gpudl_model_add_linear(o, 10, 10));
        CHECK_OK(gpudl_model_build(o, NULL));
        CHECK_ST(gpudl_model_load(c, o, path), GPUDL_ERR_FORMAT);
        CHECKF(strstr(gpudl_ctx_last_error(c), "has shape 6x1x5x5 but the model's is 10x10") != NULL, "%s", gpudl_ctx_last_error(c));
        gpudl_model_destroy(o);
    }
    /* an unwritable path: GPUDL_ERR_IO naming the path */
    CHECK_ST(gpudl_model_save(c, m, "build/test/no-such-dir/x.safetensors"), GPUDL_ERR_IO);
    CHECKF(strstr(gpudl_ctx_last_error(c), "no-such-dir/x.safetensors") && strstr(gpudl_ctx_last_error(c), "No such file"), "%s",
           gpudl_ctx_last_error(c));
    free(good);
    gpudl_model_destroy(m);
}

/* >>mixed precision ------------------------------------------------------- */

static gpudl_scaler_desc resolved_scaler(void) {
    gpudl_scaler_desc d;
    d.init_scale = 65536.0f; d.growth_factor = 2.0f; d.backoff_factor = 0.5f; d.min_scale = 1.0f;
    d.growth_interval = 2000; d.max_skips = 100;
    return d;
}

/* The state machine under scripted overflow sequences. */
static void test_scaler_state_machine(void) {
    gpudl_scaler_desc d = resolved_scaler();
    gpudl_scaler_state s;
    int i;
    memset(&s, 0, sizeof s);
    s.scale = 65536.0f;
    s.first_bad = 7;
    s.found_inf = 1;                                     /* overflow: halve, reset the growth count */
    s.growth_count = 1500;
    gpudl_scaler_update(&s, &d);
    CHECK(s.scale == 32768.0f && s.growth_count == 0 && s.skipped_total == 1 && s.last_bad == 7);
    CHECK(s.found_inf == 0 && s.first_bad == 0x7fffffff);   /* reset for the next step */
    for (i = 0; i < 1999; i++) gpudl_scaler_update(&s, &d);
    CHECK(s.scale == 32768.0f && s.growth_count == 1999);  /* not yet */
    gpudl_scaler_update(&s, &d);
    CHECK(s.scale == 65536.0f && s.growth_count == 0);     /* exactly at the interval */
    s.scale = 2.0e38f;                                     /* never to Inf */
    s.growth_count = 1999;
    gpudl_scaler_update(&s, &d);
    CHECK(isfinite(s.scale) && s.scale == 2.0e38f && s.growth_count == 0);
    s.scale = 4.0f;                                        /* down to the floor and held there */
    for (i = 0; i < 5; i++) { s.found_inf = 1; gpudl_scaler_update(&s, &d); }
    CHECKF(s.scale == 1.0f, "scale %g, want the floor 1", (double)s.scale);
    CHECKF(s.skips_at_floor == 3, "skips at the floor %d, want 3 (4 -> 2 -> 1, then 3 at 1)", s.skips_at_floor);
    gpudl_scaler_update(&s, &d);                           /* one finite step ends the run */
    CHECK(s.skips_at_floor == 0 && s.scale == 1.0f);
    {   /* a custom desc: growth 3, backoff 0.25, interval 2, floor 8 */
        gpudl_scaler_desc c = d;
        c.growth_factor = 3; c.backoff_factor = 0.25f; c.growth_interval = 2; c.min_scale = 8;
        memset(&s, 0, sizeof s);
        s.scale = 64;
        gpudl_scaler_update(&s, &c); gpudl_scaler_update(&s, &c);
        CHECK(s.scale == 192);
        s.found_inf = 1; gpudl_scaler_update(&s, &c);
        CHECK(s.scale == 48);
        s.found_inf = 1; gpudl_scaler_update(&s, &c);
        CHECK(s.scale == 12);
        s.found_inf = 1; gpudl_scaler_update(&s, &c);
        CHECK(s.scale == 8);
    }
}

static gpudl_model *amp_model(gpudl_ctx *c, gpudl_precision p, const gpudl_scaler_desc *sd) {
    gpudl_model *m;
    gpudl_optim_desc od;
    int64_t v[1] = {6};
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, v));
    GPUDL_CHECK(gpudl_model_add_linear(m, 6, 5));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 5, 4));
    GPUDL_CHECK(gpudl_model_build(m, NULL));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, p, sd));
    return m;
}

/* NaN, +Inf, -Inf planted at the first, last and tail positions of several
   tensors are found; 65504 is finite; a value that rounds to Inf in FP16 is
   caught; found_inf resets every step; a skipped step leaves weights and
   moments bit-identical. */
static void test_nonfinite_detector(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m = amp_model(c, GPUDL_PRECISION_FP16, NULL);
    gpudl_tensor P, G;
    gpudl_scaler_state st;
    int64_t n = gpudl_model_num_params(m), i, k;
    memset(&P, 0, sizeof P); memset(&G, 0, sizeof G); memset(&st, 0, sizeof st);
    float *w0 = (float *)malloc(sizeof(float) * (size_t)n), *m0 = (float *)malloc(sizeof(float) * (size_t)n);
    float *v0 = (float *)malloc(sizeof(float) * (size_t)n);
    int64_t spots[6], bad_cases = 0;
    float vals[4];
    const gpudl__layer *l0 = &m->L[0], *l2 = &m->L[2];
    vals[0] = NAN; vals[1] = INFINITY; vals[2] = -INFINITY; vals[3] = 65520.0f;   /* the last: rounds to Inf in FP16 */
    spots[0] = l0->w_off;                       /* first element of the first tensor */
    spots[1] = l0->w_off + 29;                  /* last of 0.weight (5x6) */
    spots[2] = l0->b_off + 4;                   /* last of 0.bias */
    spots[3] = l2->w_off + 7;                   /* inside 2.weight */
    spots[4] = l2->b_off;                       /* first of 2.bias */
    spots[5] = l2->b_off + 3;                   /* the tail: the very last parameter */
    CHECK_OK(gpudl_model_params(m, &P, &G));
    for (i = 0; i < 6; i++)
        for (k = 0; k < 4; k++) {
            int64_t j;
            for (j = 0; j < n; j++) F(&G)[j] = (float)((j % 7) - 3);   /* ordinary gradients */
            F(&G)[spots[i]] = vals[k];
            memcpy(w0, P.data, sizeof(float) * (size_t)n);
            memcpy(m0, m->m1.data, sizeof(float) * (size_t)n);
            memcpy(v0, m->m2.data, sizeof(float) * (size_t)n);
            CHECK_OK(gpudl_model_step(m));
            CHECK_OK(gpudl_model_scaler_state(m, &st));
            if (st.last_bad != spots[i] || st.found_inf != 0 || memcmp(w0, P.data, sizeof(float) * (size_t)n) ||
                memcmp(m0, m->m1.data, sizeof(float) * (size_t)n) || memcmp(v0, m->m2.data, sizeof(float) * (size_t)n))
                bad_cases++;
        }
    CHECKF(bad_cases == 0, "%lld of 24 planted non-finite gradients were missed or changed the weights", (long long)bad_cases);
    CHECK(st.skipped_total == 24);
    {   /* 65504 after scaling is finite: the step happens, and found_inf was reset */
        int64_t j;
        for (j = 0; j < n; j++) F(&G)[j] = 0.5f;
        F(&G)[spots[3]] = 65504.0f;
        memcpy(w0, P.data, sizeof(float) * (size_t)n);
        CHECK_OK(gpudl_model_step(m));
        CHECK_OK(gpudl_model_scaler_state(m, &st));
        CHECK(st.skipped_total == 24 && memcmp(w0, P.data, sizeof(float) * (size_t)n) != 0);
    }
    free(w0); free(m0); free(v0);
    gpudl_model_destroy(m);
}

/* A forced persistent overflow (a loss scale of 1e30: every scaled gradient
   overflows FP16) ends in GPUDL_ERR_NONFINITE, with no NaN in the weights. */
static void test_persistent_overflow(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_scaler_desc sd;
    gpudl_model *m;
    gpudl_tensor P, x, y;
    int64_t xs[2] = {4, 6}, N = 4, i, n;
    memset(&P, 0, sizeof P);
    int steps;
    gpudl_status s = GPUDL_OK;
    float *w0;
    memset(&sd, 0, sizeof sd);
    sd.init_scale = 1e30f;
    sd.min_scale = 1e30f;
    sd.max_skips = 5;
    m = amp_model(c, GPUDL_PRECISION_FP16, &sd);
    x = rnd(2, xs, -1, 1);
    y = mk(c, GPUDL_I32, 1, &N);
    for (i = 0; i < N; i++) ((int32_t *)y.data)[i] = (int32_t)i;
    CHECK_OK(gpudl_model_params(m, &P, NULL));
    n = gpudl_model_num_params(m);
    w0 = (float *)malloc(sizeof(float) * (size_t)n);
    memcpy(w0, P.data, sizeof(float) * (size_t)n);
    for (steps = 0; steps < 20 && s == GPUDL_OK; steps++) {
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_forward(m, &x, NULL));
        CHECK_OK(gpudl_model_loss(m, &y));
        CHECK_OK(gpudl_model_backward(m));
        s = gpudl_model_step(m);
    }
    CHECKF(s == GPUDL_ERR_NONFINITE, "after %d steps: %s", steps, gpudl_status_string(s));
    CHECKF(steps == 5, "the error came after %d steps, want 5 (max_skips)", steps);
    CHECKF(strstr(gpudl_ctx_last_error(c), "5 consecutive steps") && strstr(gpudl_ctx_last_error(c), ".weight"),
           "%s", gpudl_ctx_last_error(c));
    CHECK(memcmp(w0, P.data, sizeof(float) * (size_t)n) == 0);   /* no update happened: no NaN either */
    for (i = 0; i < n; i++) if (!isfinite(F(&P)[i])) break;
    CHECK(i == n);
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_NONFINITE);           /* and it stays an error */
    free(w0);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
    gpudl_model_destroy(m);
}

static void test_scaler_checkpoint(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *a = amp_model(c, GPUDL_PRECISION_FP16, NULL), *b = amp_model(c, GPUDL_PRECISION_FP16, NULL);
    gpudl_scaler_state sa, sb;
    gpudl_tensor G;
    int64_t j, n = gpudl_model_num_params(a);
    memset(&G, 0, sizeof G);
    CHECK_OK(gpudl_model_params(a, NULL, &G));
    for (j = 0; j < n; j++) F(&G)[j] = 0.25f;
    F(&G)[3] = NAN;
    CHECK_OK(gpudl_model_step(a));                     /* one skip: scale 32768 */
    F(&G)[3] = 0.25f;
    CHECK_OK(gpudl_model_step(a));                     /* one good step: growth count 1 */
    CHECK_OK(gpudl_model_save(c, a, "build/test/tmp_amp.safetensors"));
    CHECK_OK(gpudl_model_load(c, b, "build/test/tmp_amp.safetensors"));
    CHECK_OK(gpudl_model_scaler_state(a, &sa));
    CHECK_OK(gpudl_model_scaler_state(b, &sb));
    CHECKF(sa.scale == 32768.0f && sb.scale == sa.scale && sb.growth_count == 1 && sa.growth_count == 1,
           "scale %g/%g growth %d/%d", (double)sa.scale, (double)sb.scale, sa.growth_count, sb.growth_count);
    gpudl_model_destroy(a);
    gpudl_model_destroy(b);
}

/* FP16 and BF16 (CPU emulation of 16-bit storage) train as well as FP32. */
static void test_mixed_precision_accuracy(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor xtr, ytr, xte, yte;
    gpudl_dataset tr, te;
    double acc[3];
    int p;
    gpudl_scaler_state st;
    memset(&st, 0, sizeof st);
    if (!load_subset(&xtr, &ytr, &xte, &yte)) SKIP("no data under %s", data_dir());
    CHECK_OK(gpudl_dataset_create(c, &tr, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    CHECK_OK(gpudl_dataset_create(c, &te, &xte, &yte, 64, 0.2860f, 0.3530f));
    for (p = 0; p < 3; p++) {
        gpudl_precision prec = p == 0 ? GPUDL_PRECISION_FP32 : p == 1 ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_BF16;
        gpudl_model *m = small_cnn(c, 1, GPUDL_OPTIM_ADAM);
        CHECK_OK(gpudl_model_set_precision(m, prec, NULL));
        gpudl_ctx_set_seed(c, 1234);
        train_steps(m, &tr, 0, 4 * 32, NULL);
        acc[p] = evaluate(m, &te);
        if (prec == GPUDL_PRECISION_FP16) CHECK_OK(gpudl_model_scaler_state(m, &st));
        gpudl_model_destroy(m);
    }
    printf("    4 epochs of 2000 images: test accuracy FP32 %.1f%%, FP16 %.1f%%, BF16 %.1f%% (FP16 loss scale %g, %lld skipped)\n",
           100 * acc[0], 100 * acc[1], 100 * acc[2], (double)st.scale, (long long)st.skipped_total);
    CHECKF(fabs(acc[1] - acc[0]) <= 0.005 && fabs(acc[2] - acc[0]) <= 0.005, "FP16 %.3f / BF16 %.3f vs FP32 %.3f: more than 0.5 points apart",
           acc[1], acc[2], acc[0]);
    gpudl_dataset_free(c, &tr); gpudl_dataset_free(c, &te);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* The memory report adds up, scales with the batch, matches the buffers
   the model holds, and shows what 16-bit storage saves: FP16/BF16
   activations at most 0.6x FP32's (the issue's target), the weight copy
   half the f32 parameters. */
static void test_memory_report(void) {
    gpudl_ctx *c = cpu_ctx();
    int p, net;
    for (net = 0; net < 2; net++) {
        size_t fp32_act = 0;
        for (p = 0; p < 3; p++) {
            gpudl_precision prec = p == 0 ? GPUDL_PRECISION_FP32 : p == 1 ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_BF16;
            gpudl_model *m;
            gpudl_memory_report r, half;
            gpudl_tensor out;
            memset(&r, 0, sizeof r);
            memset(&half, 0, sizeof half);
            if (net == 0) m = small_cnn(c, 1, GPUDL_OPTIM_ADAM);
            else {   /* the benchmark MLP, 784-1024-1024-10 at batch 1024 */
                int64_t in = 784;
                gpudl_model_desc md;
                gpudl_optim_desc od;
                memset(&md, 0, sizeof md);
                memset(&od, 0, sizeof od);
                md.max_batch = 1024;
                od.kind = GPUDL_OPTIM_ADAM;
                CHECK_OK(gpudl_model_create(c, &m, 1, &in));
                gpudl_model_add_linear(m, 784, 1024); gpudl_model_add_relu(m);
                gpudl_model_add_linear(m, 1024, 1024); gpudl_model_add_relu(m);
                gpudl_model_add_linear(m, 1024, 10);
                CHECK_OK(gpudl_model_build(m, &md));
                CHECK_OK(gpudl_model_set_optimizer(m, &od));
            }
            CHECK_OK(gpudl_model_set_precision(m, prec, NULL));
            CHECK_OK(gpudl_model_memory(m, 0, &r));
            CHECK_OK(gpudl_model_memory(m, 32, &half));
            CHECK(r.params == (size_t)gpudl_model_num_params(m) * 4 && r.grads == r.params && r.optimizer == 2 * r.params);
            CHECK(r.copies16 == (prec == GPUDL_PRECISION_FP32 ? 0 : r.params / 2));
            CHECK(half.activations * (net == 0 ? 2 : 32) == r.activations);   /* activations scale with the batch */
            CHECK(r.total == r.params + r.grads + r.optimizer + r.copies16 + r.activations + r.other);
            {   /* the storage is real: the output has the 16-bit dtype */
                int64_t shape[4] = {2, 1, 28, 28};
                gpudl_tensor x = rnd(net == 0 ? 4 : 2, net == 0 ? shape : (const int64_t[]){2, 784}, 0, 1);
                CHECK_OK(gpudl_model_forward(m, &x, &out));
                CHECK(out.dtype == (p == 0 ? GPUDL_F32 : p == 1 ? GPUDL_F16 : GPUDL_BF16));
                gpudl_tensor_free(c, &x);
            }
            if (p == 0) fp32_act = r.activations;
            else CHECKF(r.activations <= 0.6 * (double)fp32_act, "%s: 16-bit activations take %zu bytes, FP32 %zu: more than 0.6x",
                        net == 0 ? "cnn" : "mlp", r.activations, fp32_act);
            if (g_verbose)
                printf("    %s %s: activations %zu, total %zu bytes\n", net == 0 ? "cnn" : "mlp", p == 0 ? "fp32" : p == 1 ? "fp16" : "bf16",
                       r.activations, r.total);
            gpudl_model_destroy(m);
        }
    }
}

/* >>16-bit: every layer with f16/bf16 activations --------------------------- */

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

/* >>gpu: every layer on the GPU against the CPU --------------------------- */

static void gpu_vs_cpu(gpudl_ctx *g, const char *what, const gpudl_tensor *dev, const gpudl_tensor *host, double tol) {
    gpudl_tensor back = to_host(g, dev);
    double e = max_rel(&back, host, 1.0);
    CHECKF(e <= tol, "%s: GPU vs CPU rel err %g > %g", what, e, tol);
    gpudl_tensor_free(cpu_ctx(), &back);
}

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

/* GPU models with linear+ReLU, conv+ReLU and linear+tanh pairs (the fused
   bias-activation kernel, and with cuBLASLt on, the bias/ReLU epilogue):
   the same losses and weights as the CPU, which runs them unfused, over
   SGD steps on a batch of 17, in FP32 and FP16. */
#ifndef GPUDL_NO_CUDA
static gpudl_model *pair_model(gpudl_ctx *c) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_conv2d_desc cd = conv_desc(1, 1, 1);
    int64_t img[3] = {1, 12, 12};
    GPUDL_CHECK(gpudl_model_create(c, &m, 3, img));
    GPUDL_CHECK(gpudl_model_add_conv2d(m, 1, 4, 3, &cd));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 4 * 6 * 6, 33));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 33, 20));
    GPUDL_CHECK(gpudl_model_add_act(m, GPUDL_ACT_TANH, 0.0f));
    GPUDL_CHECK(gpudl_model_add_linear(m, 20, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = 17;
    md.seed = 7;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_SGD;
    od.lr = 0.05f;
    od.momentum = 0.9f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    return m;
}
#endif

static void test_gpu_fused_parity(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[4] = {17, 1, 12, 12}, N = 17, i;
    int lt, p, s;
    NEED_GPU(g);
    for (lt = 0; lt <= 1; lt++)
        for (p = 0; p < 2; p++) {
            gpudl_precision prec = p ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_FP32;
            gpudl_model *cm = pair_model(c), *gm;
            gpudl_tensor hx = rnd(4, xs, -1, 1), hy = mk(c, GPUDL_I32, 1, &N), x, y, cp, gp, back;
            float lc = 0, lg = 0, worst = 0;
            double e;
            g->use_lt = lt;
            gm = pair_model(g);
            CHECK_OK(gpudl_model_set_precision(cm, prec, NULL));
            CHECK_OK(gpudl_model_set_precision(gm, prec, NULL));
            for (i = 0; i < N; i++) ((int32_t *)hy.data)[i] = (int32_t)((i * 3) % 10);
            x = to_dev(g, &hx); y = to_dev(g, &hy);
            for (s = 0; s < 6; s++) {
                CHECK_OK(gpudl_model_zero_grad(cm)); CHECK_OK(gpudl_model_forward(cm, &hx, NULL)); CHECK_OK(gpudl_model_loss(cm, &hy));
                CHECK_OK(gpudl_model_backward(cm)); CHECK_OK(gpudl_model_step(cm)); CHECK_OK(gpudl_model_loss_value(cm, &lc));
                CHECK_OK(gpudl_model_zero_grad(gm)); CHECK_OK(gpudl_model_forward(gm, &x, NULL)); CHECK_OK(gpudl_model_loss(gm, &y));
                CHECK_OK(gpudl_model_backward(gm)); CHECK_OK(gpudl_model_step(gm)); CHECK_OK(gpudl_model_loss_value(gm, &lg));
                if (fabsf(lc - lg) / (fabsf(lc) + 1e-3f) > worst) worst = fabsf(lc - lg) / (fabsf(lc) + 1e-3f);
            }
            CHECK_OK(gpudl_model_params(cm, &cp, NULL));
            CHECK_OK(gpudl_model_params(gm, &gp, NULL));
            back = to_host(g, &gp);
            e = max_rel(&back, &cp, 1.0);
            printf("    cuBLASLt %s, %s: worst loss difference %.1e, weights %.1e\n", lt ? "on " : "off", p ? "fp16" : "fp32",
                   (double)worst, e);
            CHECKF(worst < (p ? 2e-2f : 1e-4f), "losses GPU vs CPU differ by %g (cuBLASLt %d, %s)", (double)worst, lt,
                   p ? "fp16" : "fp32");
            CHECKF(e < (p ? 2e-2 : 1e-4), "weights GPU vs CPU differ by %g (cuBLASLt %d, %s)", e, lt, p ? "fp16" : "fp32");
            gpudl_tensor_free(c, &back);
            gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy); gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
            gpudl_model_destroy(cm); gpudl_model_destroy(gm);
        }
    g->use_lt = 0;
#endif
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
                CHECK_OK(gpudl__lt_linear(g, &gy, &gx, &gw, &gb, relu, &done));
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
    g->use_lt = 0;
#endif
}

/* Mixed precision on the GPU: the optimizer's 16-bit weight copy equals
   the rounded FP32 weights after the steps; a persistent overflow ends in
   GPUDL_ERR_NONFINITE (the device state is read back without waiting, so
   a step or more late, never early) with the weights and their copy
   untouched. */
static void test_gpu_amp_steps(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[2] = {4, 6}, N = 4, i, n;
    int p;
    NEED_GPU(g);
    for (p = 0; p < 3; p++) {
        gpudl_scaler_desc sd;
        gpudl_precision prec = p == 1 ? GPUDL_PRECISION_BF16 : GPUDL_PRECISION_FP16;
        gpudl_tensor hx = rnd(2, xs, -1, 1), hy = mk(c, GPUDL_I32, 1, &N), x, y, P, w0, w, w16;
        gpudl_status s = GPUDL_OK;
        gpudl_model *m;
        int steps, bad = 0;
        memset(&sd, 0, sizeof sd);
        if (p == 2) { sd.init_scale = 1e30f; sd.min_scale = 1e30f; sd.max_skips = 5; }   /* every step overflows */
        m = amp_model(g, prec, &sd);
        for (i = 0; i < N; i++) ((int32_t *)hy.data)[i] = (int32_t)i;
        x = to_dev(g, &hx); y = to_dev(g, &hy);
        CHECK_OK(gpudl_model_params(m, &P, NULL));
        n = gpudl_model_num_params(m);
        w0 = to_host(g, &P);
        for (steps = 0; steps < 40 && s == GPUDL_OK; steps++) {
            CHECK_OK(gpudl_model_zero_grad(m));
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            CHECK_OK(gpudl_model_loss(m, &y));
            CHECK_OK(gpudl_model_backward(m));
            s = gpudl_model_step(m);
            if (p < 2 && steps == 11) break;
        }
        CHECK_OK(gpudl_ctx_sync(g));
        w = to_host(g, &P);
        w16 = to_host(g, &m->params16);
        for (i = 0; i < n; i++) {
            uint16_t want = prec == GPUDL_PRECISION_FP16 ? gpudl_f32_to_f16(F(&w)[i]) : gpudl_f32_to_bf16(F(&w)[i]);
            if (((const uint16_t *)w16.data)[i] != want) bad++;
        }
        CHECKF(bad == 0, "%s: %d of %lld elements of the 16-bit copy differ from the rounded weights",
               p == 1 ? "bf16" : "fp16", bad, (long long)n);
        if (p < 2) {
            CHECKF(s == GPUDL_OK, "step: %s", gpudl_ctx_last_error(g));
            CHECK(memcmp(w.data, w0.data, sizeof(float) * (size_t)n) != 0);   /* it trained */
        } else {
            CHECKF(s == GPUDL_ERR_NONFINITE, "after %d overflowing steps: %s", steps, gpudl_status_string(s));
            CHECKF(steps >= 5, "the error came after %d steps, before max_skips (5)", steps);
            CHECK(memcmp(w.data, w0.data, sizeof(float) * (size_t)n) == 0);   /* every step skipped */
        }
        gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy); gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
        gpudl_tensor_free(c, &w0); gpudl_tensor_free(c, &w); gpudl_tensor_free(c, &w16);
        gpudl_model_destroy(m);
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

/* The same model, weights and batches on both backends: losses agree step by step. */
static void test_gpu_training_parity(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor xtr, ytr, xte, yte;
    gpudl_dataset ct, gt;
    gpudl_model *cm, *gm;
    int64_t s;
    float lc = 0, lg = 0, worst = 0;
    NEED_GPU(g);
    if (!load_subset(&xtr, &ytr, &xte, &yte)) SKIP("no data under %s", data_dir());
    CHECK_OK(gpudl_dataset_create(c, &ct, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    CHECK_OK(gpudl_dataset_create(g, &gt, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    cm = small_cnn(c, 3, GPUDL_OPTIM_SGD);
    gm = small_cnn(g, 3, GPUDL_OPTIM_SGD);
    for (s = 0; s < 20; s++) {
        gpudl_tensor x, y;
        CHECK_OK(gpudl_dataset_batch(c, &ct, s, &x, &y));
        CHECK_OK(gpudl_model_zero_grad(cm)); CHECK_OK(gpudl_model_forward(cm, &x, NULL)); CHECK_OK(gpudl_model_loss(cm, &y));
        CHECK_OK(gpudl_model_backward(cm)); CHECK_OK(gpudl_model_step(cm)); CHECK_OK(gpudl_model_loss_value(cm, &lc));
        CHECK_OK(gpudl_dataset_batch(g, &gt, s, &x, &y));
        CHECK_OK(gpudl_model_zero_grad(gm)); CHECK_OK(gpudl_model_forward(gm, &x, NULL)); CHECK_OK(gpudl_model_loss(gm, &y));
        CHECK_OK(gpudl_model_backward(gm)); CHECK_OK(gpudl_model_step(gm)); CHECK_OK(gpudl_model_loss_value(gm, &lg));
        if (fabsf(lc - lg) / (fabsf(lc) + 1e-3f) > worst) worst = fabsf(lc - lg) / (fabsf(lc) + 1e-3f);
    }
    printf("    20 SGD steps: worst relative loss difference GPU vs CPU %.2e\n", (double)worst);
    CHECKF(worst < 1e-3f, "GPU and CPU training diverge (rel %g)", (double)worst);
    gpudl_model_destroy(cm); gpudl_model_destroy(gm);
    gpudl_dataset_free(c, &ct); gpudl_dataset_free(g, &gt);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* FP16 and BF16 reach FP32's test accuracy (within 0.5 points) on the full
   Fashion-MNIST on the GPU: 3 epochs of the small CNN with Adam, the same
   seeds and batches in each precision. The data: GPUDL_FULL_DATA, a
   directory of the four IDX files (make test-gpu sets it when make data
   found the full set). */
static void test_gpu_mixed_precision_full(void) {
    gpudl_ctx *c = cpu_ctx();
    const char *dir = getenv("GPUDL_FULL_DATA");
    gpudl_tensor xtr, ytr, xte, yte, count;
    gpudl_dataset tr, te;
    double acc[3];
    int64_t one = 1, s, b;
    int p;
    NEED_GPU(g);
    if (!dir) SKIP("GPUDL_FULL_DATA is not set (make test-gpu sets it when make data finds the full set)");
    CHECK_OK(gpudl_mnist_load(c, dir, 1, &xtr, &ytr));
    CHECK_OK(gpudl_mnist_load(c, dir, 0, &xte, &yte));
    if (g_failed_checks) return;
    if (xtr.shape[0] < 60000) {
        gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
        SKIP("%s holds %lld training images, not the full 60000", dir, (long long)xtr.shape[0]);
    }
    CHECK_OK(gpudl_dataset_create(g, &tr, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    CHECK_OK(gpudl_dataset_create(g, &te, &xte, &yte, 64, 0.2860f, 0.3530f));
    GPUDL_CHECK(gpudl_tensor_create(g, &count, GPUDL_F32, 1, &one));
    for (p = 0; p < 3; p++) {
        gpudl_precision prec = p == 0 ? GPUDL_PRECISION_FP32 : p == 1 ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_BF16;
        gpudl_model *m = small_cnn(g, 1, GPUDL_OPTIM_ADAM);
        gpudl_tensor x, y;
        float correct = 0;
        CHECK_OK(gpudl_model_set_precision(m, prec, NULL));
        gpudl_ctx_set_seed(g, 1234);
        for (s = 0; s < 3 * gpudl_dataset_num_batches(&tr); s++) {
            b = s % gpudl_dataset_num_batches(&tr);
            if (b == 0) CHECK_OK(gpudl_dataset_shuffle(g, &tr, 1, (uint64_t)(s / gpudl_dataset_num_batches(&tr))));
            CHECK_OK(gpudl_dataset_batch(g, &tr, b, &x, &y));
            CHECK_OK(gpudl_model_zero_grad(m));
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            CHECK_OK(gpudl_model_loss(m, &y));
            CHECK_OK(gpudl_model_backward(m));
            CHECK_OK(gpudl_model_step(m));
            if (g_failed_checks) break;
        }
        gpudl_model_train(m, 0);
        CHECK_OK(gpudl_tensor_fill(g, &count, 0.0f));
        for (b = 0; b < gpudl_dataset_num_batches(&te); b++) {
            CHECK_OK(gpudl_dataset_batch(g, &te, b, &x, &y));
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            CHECK_OK(gpudl_model_count_correct(m, &y, &count));
        }
        CHECK_OK(gpudl_tensor_item(g, &count, 0, &correct));
        acc[p] = correct / (double)te.n;
        gpudl_model_destroy(m);
    }
    printf("    full Fashion-MNIST, 3 epochs on the GPU: test accuracy FP32 %.2f%%, FP16 %.2f%%, BF16 %.2f%%\n",
           100 * acc[0], 100 * acc[1], 100 * acc[2]);
    CHECKF(fabs(acc[1] - acc[0]) <= 0.005 && fabs(acc[2] - acc[0]) <= 0.005, "FP16 %.4f / BF16 %.4f vs FP32 %.4f: more than 0.5 points apart",
           acc[1], acc[2], acc[0]);
    gpudl_tensor_free(g, &count);
    gpudl_dataset_free(g, &tr); gpudl_dataset_free(g, &te);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* >>main ------------------------------------------------------------------ */

static const test_case tests[] = {
    {"activations", test_activations},
    {"linear", test_linear},
    {"softmax_xent", test_softmax_xent},
    {"mse", test_mse},
    {"conv2d", test_conv2d},
    {"pool2d", test_pool2d},
    {"pool2d_2x2_special", test_pool2d_2x2_special},
    {"batchnorm", test_batchnorm},
    {"dropout", test_dropout},
    {"gradcheck_every_layer", test_gradcheck_layers},
    {"gradcheck_api", test_gradcheck_catches_errors},
    {"model_api_errors", test_model_api_errors},
    {"grad_accumulation", test_grad_accumulation},
    {"optimizers", test_optimizers},
    {"lr_schedules", test_lr_schedules},
    {"idx_loader_faults", test_idx_loader},
    {"idx_gzip", test_idx_gzip},
    {"dataset", test_dataset},
    {"training_learns", test_training_learns},
    {"checkpoint_roundtrip_resume", test_checkpoint_roundtrip_and_resume},
    {"checkpoint_corruption", test_checkpoint_corruption},
    {"scaler_state_machine", test_scaler_state_machine},
    {"nonfinite_detector", test_nonfinite_detector},
    {"persistent_overflow", test_persistent_overflow},
    {"scaler_checkpoint", test_scaler_checkpoint},
    {"mixed_precision_accuracy", test_mixed_precision_accuracy},
    {"memory_report", test_memory_report},
    {"layers_16bit", test_layers_16bit},
    {"bias_sums", test_bias_sums},
    {"gpu_layers", test_gpu_layers},
    {"gpu_layers_16bit", test_gpu_layers_16bit},
    {"gpu_layers_bias_sums", test_gpu_layers_bias_sums},
    {"gpu_layers_batchnorm_chunks", test_gpu_layers_batchnorm_chunks},
    {"gpu_amp_steps", test_gpu_amp_steps},
    {"gpu_fused_parity", test_gpu_fused_parity},
    {"gpu_layers_linear_lt", test_gpu_layers_linear_lt},
    {"gpu_training_parity", test_gpu_training_parity},
    {"gpu_mixed_precision_full", test_gpu_mixed_precision_full},
};

int main(int argc, char **argv) { return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv); }
