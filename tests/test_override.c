/* Tests of the override section (the user's ops in place of gpudl's, the
   check API, timing) and of custom layers (model section). #included by
   tests/suite_train.c. */

/* >>override -------------------------------------------------------------- */

/* A student's plain C ops, counted, for the CPU. */
typedef struct { int gemm, act_f, act_b, xent_f, xent_b, sgd, pool_f, pool_b; } op_counts;

static gpudl_status naive_gemm(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                               const float *A, const float *B, float beta, float *C) {
    int64_t i, j, k;
    (void)stream;
    ((op_counts *)user)->gemm++;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            float acc = 0;
            for (k = 0; k < K; k++) acc += (ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
            C[i * N + j] = alpha * acc + (beta != 0.0f ? beta * C[i * N + j] : 0.0f);
        }
    return GPUDL_OK;
}
/* ignores trans_b: a seeded bug for the check */
static gpudl_status gemm_no_trans_b(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                    const float *A, const float *B, float beta, float *C) {
    (void)tb;
    return naive_gemm(user, stream, ta, 0, M, N, K, alpha, A, B, beta, C);
}
/* skips zero factors (if (a != 0), or if (b != 0)): a seeded bug, 0 * Inf and 0 * NaN are NaN */
static gpudl_status gemm_skip_zeros(int skip_b, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                    const float *B, float beta, float *C) {
    int64_t i, j, k;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            float acc = 0;
            for (k = 0; k < K; k++) {
                float a = ta ? A[k * M + i] : A[i * K + k], b = tb ? B[j * K + k] : B[k * N + j];
                if ((skip_b ? b : a) != 0.0f) acc += a * b;
            }
            C[i * N + j] = alpha * acc + (beta != 0.0f ? beta * C[i * N + j] : 0.0f);
        }
    return GPUDL_OK;
}
static gpudl_status gemm_skip_zero_a(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                     const float *A, const float *B, float beta, float *C) {
    (void)user; (void)stream;
    return gemm_skip_zeros(0, ta, tb, M, N, K, alpha, A, B, beta, C);
}
static gpudl_status gemm_skip_zero_b(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                     const float *A, const float *B, float beta, float *C) {
    (void)user; (void)stream;
    return gemm_skip_zeros(1, ta, tb, M, N, K, alpha, A, B, beta, C);
}
static gpudl_status relu_only(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    int64_t i;
    (void)stream; (void)alpha;
    if (act != GPUDL_ACT_RELU) return GPUDL_ERR_UNSUPPORTED;   /* gpudl does the others */
    ((op_counts *)user)->act_f++;
    for (i = 0; i < n; i++) y[i] = (x[i] > 0 || x[i] != x[i]) ? x[i] : 0.0f;
    return GPUDL_OK;
}
static gpudl_status relu_only_bwd(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                  const float *x, const float *y, int64_t n) {
    int64_t i;
    (void)stream; (void)alpha; (void)y;
    if (act != GPUDL_ACT_RELU) return GPUDL_ERR_UNSUPPORTED;
    ((op_counts *)user)->act_b++;
    for (i = 0; i < n; i++) dx[i] = x[i] <= 0 ? 0.0f : dy[i];   /* PyTorch's threshold_backward: a NaN x passes dy */
    return GPUDL_OK;
}
static gpudl_status relu_bwd_nan_to_zero(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                         const float *x, const float *y, int64_t n) {
    int64_t i;
    (void)user; (void)stream; (void)act; (void)alpha; (void)y;
    for (i = 0; i < n; i++) dx[i] = x[i] > 0 ? dy[i] : 0.0f;   /* 0 at a NaN x: the nan/inf group fails */
    return GPUDL_OK;
}
static gpudl_status relu_nan_to_zero(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    int64_t i;
    (void)user; (void)stream; (void)act; (void)alpha;
    for (i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0f;   /* NaN -> 0: the nan/inf group fails */
    return GPUDL_OK;
}
static gpudl_status xent_fwd(void *user, void *stream, float *loss, float *probs, const float *z, const int32_t *lab, int64_t N,
                             int64_t K, int subtract_max) {
    int64_t r, k;
    double total = 0;
    (void)stream;
    if (user) ((op_counts *)user)->xent_f++;
    for (r = 0; r < N; r++) {
        float mx = z[r * K], s = 0;
        for (k = 1; k < K && subtract_max; k++) mx = z[r * K + k] > mx ? z[r * K + k] : mx;
        if (!subtract_max) mx = 0;
        for (k = 0; k < K; k++) s += expf(z[r * K + k] - mx);
        for (k = 0; k < K; k++) probs[r * K + k] = expf(z[r * K + k] - mx) / s;
        total += mx + logf(s) - z[r * K + lab[r]];   /* not -log(p): p underflows to 0 */
    }
    *loss = (float)(total / (double)N);
    return GPUDL_OK;
}
static gpudl_status xent_fwd_good(void *u, void *s, float *l, float *p, const float *z, const int32_t *lab, int64_t N, int64_t K) {
    return xent_fwd(u, s, l, p, z, lab, N, K, 1);
}
static gpudl_status xent_fwd_nomax(void *u, void *s, float *l, float *p, const float *z, const int32_t *lab, int64_t N, int64_t K) {
    return xent_fwd(u, s, l, p, z, lab, N, K, 0);
}
static gpudl_status xent_bwd(void *user, void *stream, float *dz, const float *p, const int32_t *lab, int64_t N, int64_t K,
                             float scale) {
    int64_t r, k;
    (void)stream;
    ((op_counts *)user)->xent_b++;
    for (r = 0; r < N; r++)
        for (k = 0; k < K; k++) dz[r * K + k] = scale * (p[r * K + k] - (k == lab[r] ? 1.0f : 0.0f)) / (float)N;
    return GPUDL_OK;
}
static gpudl_status sgd_plain(void *user, void *stream, float *w, const float *g, float *v, int64_t n, float lr, float mom,
                              float wd, int nesterov) {
    int64_t i;
    (void)stream;
    ((op_counts *)user)->sgd++;
    for (i = 0; i < n; i++) {
        float gi = g[i] + wd * w[i];
        if (v) { v[i] = mom * v[i] + gi; gi = nesterov ? gi + mom * v[i] : v[i]; }
        w[i] -= lr * gi;
    }
    return GPUDL_OK;
}
/* max-pool backward as a scatter; overwrite = 1 is the seeded bug (= for +=) */
static gpudl_status pool_bwd(const gpudl_pool_shape *s, float *dx, const float *dy, const float *x, int overwrite) {
    int64_t p, oh, ow, i, j;
    memset(dx, 0, sizeof(float) * (size_t)(s->NC * s->H * s->W));
    for (p = 0; p < s->NC; p++)
        for (oh = 0; oh < s->Ho; oh++)
            for (ow = 0; ow < s->Wo; ow++) {
                const float *xp = x + p * s->H * s->W;
                int64_t arg = -1;
                for (i = 0; i < s->k_h; i++)
                    for (j = 0; j < s->k_w; j++) {
                        int64_t h = oh * s->stride_h - s->pad_h + i, w = ow * s->stride_w - s->pad_w + j;
                        if (h < 0 || h >= s->H || w < 0 || w >= s->W) continue;
                        if (arg < 0 || xp[h * s->W + w] > xp[arg] || (xp[h * s->W + w] != xp[h * s->W + w] && xp[arg] == xp[arg]))
                            arg = h * s->W + w;
                    }
                if (arg < 0) continue;
                if (overwrite) dx[p * s->H * s->W + arg] = dy[(p * s->Ho + oh) * s->Wo + ow];
                else dx[p * s->H * s->W + arg] += dy[(p * s->Ho + oh) * s->Wo + ow];
            }
    return GPUDL_OK;
}
static gpudl_status pool_bwd_good(void *u, void *st, float *dx, const float *dy, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st;
    return pool_bwd(s, dx, dy, x, 0);
}
static gpudl_status pool_bwd_overwrite(void *u, void *st, float *dx, const float *dy, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st;
    return pool_bwd(s, dx, dy, x, 1);
}
/* on the GPU: counts its calls and hands each back to gpudl (a kernel cannot live in a .c file) */
static gpudl_status declining_gemm(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                   const float *A, const float *B, float beta, float *C) {
    (void)stream; (void)ta; (void)tb; (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)B; (void)beta; (void)C;
    ((op_counts *)user)->gemm++;
    return GPUDL_ERR_UNSUPPORTED;
}
static gpudl_status failing_gemm(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                 const float *A, const float *B, float beta, float *C) {
    (void)user; (void)stream; (void)ta; (void)tb; (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)B; (void)beta; (void)C;
    return GPUDL_ERR_INVALID_ARG;
}

/* Hashes (FNV-1a) every input the activation's forward sees, then hands
   the call back to gpudl: what a recording of the battery would hold. */
static uint64_t seen_inputs;
static gpudl_status act_fwd_recorder(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    const unsigned char *b = (const unsigned char *)x;
    size_t i;
    (void)user; (void)stream; (void)act; (void)alpha; (void)y;
    for (i = 0; i < sizeof(float) * (size_t)n; i++) seen_inputs = (seen_inputs ^ b[i]) * 0x100000001b3ull;
    return GPUDL_ERR_UNSUPPORTED;
}
/* The hash of the battery's inputs for a seed (0: the context's default). */
static uint64_t battery_inputs(gpudl_ctx *c, uint64_t seed) {
    gpudl_check_report r;
    if (seed) gpudl_ctx_set_seed(c, seed);
    seen_inputs = 0xcbf29ce484222325ull;
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ACT_FORWARD, GPUDL_ACT_RELU, &r));
    CHECK(r.passed && r.override_declined == r.ncases);
    return seen_inputs;
}

/* Which groups of a report failed, as "a,b," (each once, in order). */
static const char *failed_groups(const gpudl_check_report *r) {
    static char buf[256];
    int i;
    buf[0] = 0;
    for (i = 0; i < r->ncases; i++)
        if (!r->cases[i].passed && !strstr(buf, r->cases[i].group)) {
            strncat(buf, r->cases[i].group, sizeof buf - strlen(buf) - 2);
            strcat(buf, ",");
        }
    return buf;
}

static gpudl_ctx *own_cpu_ctx(void) {
    gpudl_ctx_desc d;
    gpudl_ctx *c;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = gpudl_log_quiet;
    GPUDL_CHECK(gpudl_ctx_create(&d, &c));
    return c;
}

/* Per context: one context's override is not seen by another; NULL restores. */
static void test_override_per_context(void) {
    gpudl_ctx *a = own_cpu_ctx(), *b = own_cpu_ctx();
    op_counts n;
    gpudl_ops o, back;
    memset(&back, 0, sizeof back);
    gpudl_tensor A = host_rand(GPUDL_F32, 2, 5, 7, 0), B = host_rand(GPUDL_F32, 2, 7, 3, 0);
    gpudl_tensor Ca = make(a, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 5, 3, 0), Cb = make(b, GPUDL_DEVICE_CPU, GPUDL_F32, 2, 5, 3, 0);
    int64_t i;
    memset(&n, 0, sizeof n);
    memset(&o, 0, sizeof o);
    o.user = &n;
    o.gemm = naive_gemm;
    CHECK_OK(gpudl_ctx_set_ops(a, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_ctx_ops(a, GPUDL_DEVICE_CPU, &back));
    CHECK(back.gemm == naive_gemm && back.user == &n && back.act_forward == NULL);
    CHECK_OK(gpudl_matmul(a, &Ca, &A, &B, 0, 0, 1.0f, 0.0f));
    CHECK_OK(gpudl_matmul(b, &Cb, &A, &B, 0, 0, 1.0f, 0.0f));
    CHECK(n.gemm == 1);   /* b used gpudl's own */
    for (i = 0; i < 15; i++) CHECK(fabsf(F(&Ca)[i] - F(&Cb)[i]) < 1e-5f);
    o.gemm = NULL;   /* a NULL field: gpudl's own again */
    CHECK_OK(gpudl_ctx_set_ops(a, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_matmul(a, &Ca, &A, &B, 0, 0, 1.0f, 0.0f));
    CHECK(n.gemm == 1);
    o.gemm = failing_gemm;   /* a failing override: its status, and a message naming it */
    CHECK_OK(gpudl_ctx_set_ops(a, GPUDL_DEVICE_CPU, &o));
    CHECK_ST(gpudl_matmul(a, &Ca, &A, &B, 0, 0, 1.0f, 0.0f), GPUDL_ERR_INVALID_ARG);
    CHECKF(strstr(gpudl_ctx_last_error(a), "gemm override"), "message: %s", gpudl_ctx_last_error(a));
    CHECK_OK(gpudl_ctx_set_ops(a, GPUDL_DEVICE_CPU, NULL));   /* all restored */
    CHECK_OK(gpudl_matmul(a, &Ca, &A, &B, 0, 0, 1.0f, 0.0f));
    CHECK_ST(gpudl_ctx_set_ops(a, (gpudl_device)7, &o), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_ctx_ops(a, GPUDL_DEVICE_CPU, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(cpu_ctx(), &A); gpudl_tensor_free(cpu_ctx(), &B);
    gpudl_tensor_free(a, &Ca); gpudl_tensor_free(b, &Cb);
    gpudl_ctx_destroy(a); gpudl_ctx_destroy(b);
}

/* A model trains through the student's ops, unchanged, to the same losses as
   through gpudl's; an override that hands a call back (a tanh to a ReLU-only
   override) gets gpudl's implementation. */
static void test_override_trains_model(void) {
    gpudl_ctx *c = own_cpu_ctx();
    op_counts n;
    gpudl_ops o;
    float loss[2][6];
    int run, s;
    memset(&n, 0, sizeof n);
    memset(&o, 0, sizeof o);
    o.user = &n;
    o.gemm = naive_gemm; o.act_forward = relu_only; o.act_backward = relu_only_bwd;
    o.softmax_xent_forward = xent_fwd_good; o.softmax_xent_backward = xent_bwd; o.sgd_update = sgd_plain;
    for (run = 0; run < 2; run++) {
        gpudl_model *m;
        gpudl_model_desc md;
        gpudl_optim_desc od;
        int64_t in = 20, xs[2] = {16, 20}, one = 16, i;
        gpudl_tensor x, y;
        CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, run ? &o : NULL));
        CHECK_OK(gpudl_model_create(c, &m, 1, &in));
        CHECK_OK(gpudl_model_add_linear(m, 20, 12));
        CHECK_OK(gpudl_model_add_relu(m));
        CHECK_OK(gpudl_model_add_linear(m, 12, 8));
        CHECK_OK(gpudl_model_add_act(m, GPUDL_ACT_TANH, 0.0f));
        CHECK_OK(gpudl_model_add_linear(m, 8, 5));
        memset(&md, 0, sizeof md);
        md.max_batch = 16; md.seed = 7;
        CHECK_OK(gpudl_model_build(m, &md));
        memset(&od, 0, sizeof od);
        od.lr = 0.1f; od.momentum = 0.9f;
        CHECK_OK(gpudl_model_set_optimizer(m, &od));
        CHECK_OK(gpudl_tensor_create(c, &x, GPUDL_F32, 2, xs));
        CHECK_OK(gpudl_tensor_create(c, &y, GPUDL_I32, 1, &one));
        for (i = 0; i < 16 * 20; i++) F(&x)[i] = (float)gpudl_rng_uniform(99, (uint64_t)i) - 0.5f;
        for (i = 0; i < 16; i++) ((int32_t *)y.data)[i] = (int32_t)(i % 5);
        for (s = 0; s < 6; s++) {
            CHECK_OK(gpudl_model_zero_grad(m));
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            CHECK_OK(gpudl_model_loss(m, &y));
            CHECK_OK(gpudl_model_backward(m));
            CHECK_OK(gpudl_model_step(m));
            CHECK_OK(gpudl_model_loss_value(m, &loss[run][s]));
        }
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
        gpudl_model_destroy(m);
    }
    for (s = 0; s < 6; s++) CHECKF(fabsf(loss[0][s] - loss[1][s]) < 1e-4f * (1 + fabsf(loss[0][s])), "step %d: %g vs %g", s,
                                   loss[0][s], loss[1][s]);
    CHECK(loss[1][5] < loss[1][0]);
    /* every op went through the user's code: 3 GEMMs forward, 5 backward (no dx for the first layer) */
    CHECKF(n.gemm == 6 * 8 && n.act_f == 6 && n.act_b == 6 && n.xent_f == 6 && n.xent_b == 6 && n.sgd == 6,
           "calls: gemm %d act %d/%d xent %d/%d sgd %d", n.gemm, n.act_f, n.act_b, n.xent_f, n.xent_b, n.sgd);
    gpudl_ctx_destroy(c);
}

/* The check passes gpudl's own ops and good overrides, and each seeded bug
   fails in the group that names it, explained in one screen. */
static void test_check_op(void) {
    gpudl_ctx *c = own_cpu_ctx();
    gpudl_check_report r;
    gpudl_ops o;
    op_counts n;
    char buf[8192];
    int op, i, lines = 0;
    const char *p;
    for (op = GPUDL_OP_GEMM; op <= GPUDL_OP_ADAM_UPDATE; op++) {
        CHECK_OK(gpudl_check_op(c, (gpudl_op)op, GPUDL_ACT_RELU, &r));
        CHECKF(r.passed && r.ncases >= 8 && r.override_calls == 0 && r.override_declined == 0, "gpudl's own op %d: %s", op,
               gpudl_check_explain(&r, buf, sizeof buf));
    }
    for (op = GPUDL_ACT_RELU; op <= GPUDL_ACT_SIGMOID; op++) {
        CHECK_OK(gpudl_check_op(c, GPUDL_OP_ACT_BACKWARD, (gpudl_act)op, &r));
        CHECKF(r.passed, "act %d backward: %s", op, gpudl_check_explain(&r, buf, sizeof buf));
    }
    memset(&n, 0, sizeof n);
    memset(&o, 0, sizeof o);
    o.user = &n;
    o.gemm = naive_gemm; o.act_forward = relu_only; o.act_backward = relu_only_bwd;
    o.softmax_xent_forward = xent_fwd_good; o.softmax_xent_backward = xent_bwd; o.sgd_update = sgd_plain;
    o.maxpool_backward = pool_bwd_good;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    for (op = GPUDL_OP_GEMM; op <= GPUDL_OP_SGD_UPDATE; op++) {
        CHECK_OK(gpudl_check_op(c, (gpudl_op)op, GPUDL_ACT_RELU, &r));
        if (!r.passed) printf("%s", gpudl_check_explain(&r, buf, sizeof buf));
        CHECKF(r.passed && (op == GPUDL_OP_MAXPOOL_FORWARD || op == GPUDL_OP_CONV2D_FORWARD || r.override_calls >= r.ncases) &&
               r.override_declined == 0, "good override of op %d", op);   /* those two are not overridden here */
    }
    CHECK(n.gemm > 0 && n.act_f > 0 && n.sgd > 0);
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ACT_FORWARD, GPUDL_ACT_TANH, &r));   /* a ReLU-only override hands tanh back */
    CHECK(r.passed && r.override_calls == 0 && r.override_declined == r.ncases &&
          strstr(gpudl_check_explain(&r, buf, sizeof buf), "handed"));
    o.gemm = gemm_no_trans_b; o.act_forward = relu_nan_to_zero; o.softmax_xent_forward = xent_fwd_nomax;
    o.maxpool_backward = pool_bwd_overwrite;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_GEMM, 0, &r));
    CHECKF(!r.passed && !strcmp(failed_groups(&r), "transposes,alpha/beta,large,"), "failed: %s", failed_groups(&r));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ACT_FORWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "nan/inf,"), "failed: %s", failed_groups(&r));
    o.act_backward = relu_bwd_nan_to_zero;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ACT_BACKWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "nan/inf,"), "relu backward 0 at a NaN x failed: %s", failed_groups(&r));
    o.act_backward = relu_only_bwd;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    for (i = 0; i < 2; i++) {   /* a GEMM that skips zero factors (in A, or in B) loses 0 * Inf = NaN: nan/inf fails, nothing else */
        o.gemm = i ? gemm_skip_zero_b : gemm_skip_zero_a;
        CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
        CHECK_OK(gpudl_check_op(c, GPUDL_OP_GEMM, 0, &r));
        CHECKF(!strcmp(failed_groups(&r), "nan/inf,") && r.got == r.got && r.expected != r.expected, "skips zeros in %s: failed %s",
               i ? "B" : "A", failed_groups(&r));
        gpudl_check_explain(&r, buf, sizeof buf);
        CHECKF(strstr(buf, "0 x Inf") && strstr(buf, "do not skip zero factors"), "explanation:\n%s", buf);
    }
    o.gemm = gemm_no_trans_b;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_XENT_FORWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "large logits,"), "failed: %s", failed_groups(&r));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_MAXPOOL_BACKWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "overlap,finite diff,"), "failed: %s", failed_groups(&r));   /* its differences overlap too */
    /* the explanation: which case, where, expected, got, a hint; one screen */
    gpudl_check_explain(&r, buf, sizeof buf);
    for (p = buf; *p; p++) lines += *p == '\n';
    CHECKF(strstr(buf, "FAILED") && strstr(buf, "first failure: overlap") && strstr(buf, "dx[plane") &&
           strstr(buf, "expected") && strstr(buf, "got") && strstr(buf, "+=") && lines <= 40, "explanation:\n%s", buf);
    o.gemm = failing_gemm;   /* an override that fails: every case fails, with its message */
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_GEMM, 0, &r));
    CHECK(!r.passed && r.nfailed == r.ncases && r.index == -1 && strstr(r.status_msg, "gemm override"));
    CHECK_ST(gpudl_check_op(c, (gpudl_op)99, 0, &r), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_check_op(c, GPUDL_OP_GEMM, 0, NULL), GPUDL_ERR_INVALID_ARG);
    {   /* timing needs a GPU: never a made-up number */
        gpudl_op_timing t;
        CHECK_ST(gpudl_time_op(c, GPUDL_OP_GEMM, 64, &t), GPUDL_ERR_UNSUPPORTED);
        CHECK(strstr(gpudl_ctx_last_error(c), "needs a GPU") && t.ms_override == 0 && t.ms_builtin == 0);
    }
    gpudl_ctx_destroy(c);
    {   /* the battery's inputs come from the context's seed: the same seed the same inputs, another seed others */
        uint64_t dflt, a, b;
        c = own_cpu_ctx();
        memset(&o, 0, sizeof o);
        o.act_forward = act_fwd_recorder;
        CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
        dflt = battery_inputs(c, 0);
        CHECK(battery_inputs(c, 0x5EED) == dflt);   /* the default seed, set */
        a = battery_inputs(c, 1234);
        b = battery_inputs(c, 1235);
        CHECK(a != dflt && b != dflt && a != b);
        CHECK(battery_inputs(c, 1234) == a);
        CHECK(battery_inputs(c, 1235) == b);
        gpudl_ctx_destroy(c);
    }
}

/* ---- the FP16 GEMM with FP32 sums (gemm_f16) ---- */

/* (gpudl's inline conversions: gpudl__convert per element would enter an OpenMP construct each time, which
   under Wine's threads costs a server call: this test took over 10 minutes there) */
static float h2f(uint16_t h) { return gpudl_f16_to_f32(h); }
static float round_f16(float f) { return gpudl_f16_to_f32(gpudl_f32_to_f16(f)); }

/* A CPU tensor-core GEMM: FP16 operands, products summed in FP32; or, with
   half_acc, the sum rounded to FP16 after every 16 products (a WMMA
   accumulator fragment of __half: a seeded bug). */
static gpudl_status gemm_f16_sum(int half_acc, int *calls, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                 const uint16_t *A, const uint16_t *B, float beta, float *C) {
    int64_t i, j, k;
    (*calls)++;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            float acc = 0;
            for (k = 0; k < K; k++) {
                acc += h2f(ta ? A[k * M + i] : A[i * K + k]) * h2f(tb ? B[j * K + k] : B[k * N + j]);
                if (half_acc && (k % 16 == 15 || k == K - 1)) acc = round_f16(acc);
            }
            C[i * N + j] = alpha * acc + (beta != 0.0f ? beta * C[i * N + j] : 0.0f);
        }
    return GPUDL_OK;
}
static gpudl_status gemm_f16_good(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                  const uint16_t *A, const uint16_t *B, float beta, float *C) {
    (void)stream;
    return gemm_f16_sum(0, (int *)user, ta, tb, M, N, K, alpha, A, B, beta, C);
}
static gpudl_status gemm_f16_half_acc(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                      const uint16_t *A, const uint16_t *B, float beta, float *C) {
    (void)stream;
    return gemm_f16_sum(1, (int *)user, ta, tb, M, N, K, alpha, A, B, beta, C);
}

/* The check of gemm_f16 passes gpudl's own and an FP32-summing override,
   and fails an FP16 accumulator on long and overflowing sums only; the
   override runs under gpudl_matmul with f32 and f16 C (beta 0 and not), under
   the linear layer, and a model trains in mixed precision through it to
   the losses of gpudl's own path. */
static void test_gemm_f16_override(void) {
    gpudl_ctx *c = own_cpu_ctx();
    gpudl_check_report r;
    gpudl_ops o;
    char buf[8192];
    int calls = 0, run, s;
    float loss[2][5];
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_GEMM_F16, 0, &r));
    CHECKF(r.passed && r.ncases >= 20 && r.override_calls == 0, "gpudl's own: %s", gpudl_check_explain(&r, buf, sizeof buf));
    memset(&o, 0, sizeof o);
    o.user = &calls;
    o.gemm_f16 = gemm_f16_good;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_GEMM_F16, 0, &r));
    CHECKF(r.passed && r.override_calls == r.ncases && calls == r.ncases, "FP32 sums: %s", gpudl_check_explain(&r, buf, sizeof buf));
    o.gemm_f16 = gemm_f16_half_acc;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_GEMM_F16, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "values,accumulation,"), "FP16 sums failed: %s", failed_groups(&r));
    CHECKF(strstr(gpudl_check_explain(&r, buf, sizeof buf), "sum in FP32"), "%s", buf);
    {   /* gpudl_matmul: f32 C, f16 C (beta 0 and 0.5), batched; the same as gpudl's own path */
        int64_t sa[3] = {2, 5, 7}, sb[2] = {7, 3}, sc[3] = {2, 5, 3}, i;
        gpudl_tensor A, B, C16, C32, R16, R32;
        int ci;
        CHECK_OK(gpudl_tensor_create(c, &A, GPUDL_F16, 3, sa));
        CHECK_OK(gpudl_tensor_create(c, &B, GPUDL_F16, 2, sb));
        CHECK_OK(gpudl_tensor_uniform(c, &A, -1.0f, 1.0f));
        CHECK_OK(gpudl_tensor_uniform(c, &B, -1.0f, 1.0f));
        CHECK_OK(gpudl_tensor_create(c, &C16, GPUDL_F16, 3, sc)); CHECK_OK(gpudl_tensor_create(c, &R16, GPUDL_F16, 3, sc));
        CHECK_OK(gpudl_tensor_create(c, &C32, GPUDL_F32, 3, sc)); CHECK_OK(gpudl_tensor_create(c, &R32, GPUDL_F32, 3, sc));
        for (ci = 0; ci < 2; ci++) {
            float beta = ci ? 0.5f : 0.0f;
            CHECK_OK(gpudl_tensor_uniform(c, &C16, -1.0f, 1.0f)); CHECK_OK(gpudl_tensor_copy(c, &R16, &C16));
            CHECK_OK(gpudl_tensor_uniform(c, &C32, -1.0f, 1.0f)); CHECK_OK(gpudl_tensor_copy(c, &R32, &C32));
            o.gemm_f16 = gemm_f16_good; calls = 0;
            CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
            CHECK_OK(gpudl_matmul(c, &C16, &A, &B, 0, 0, 2.0f, beta));
            CHECK_OK(gpudl_matmul(c, &C32, &A, &B, 0, 0, 2.0f, beta));
            CHECK(calls == 4);   /* two batch entries each */
            CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, NULL));
            CHECK_OK(gpudl_matmul(c, &R16, &A, &B, 0, 0, 2.0f, beta));
            CHECK_OK(gpudl_matmul(c, &R32, &A, &B, 0, 0, 2.0f, beta));
            for (i = 0; i < 30; i++) {
                CHECKF(((uint16_t *)C16.data)[i] == ((uint16_t *)R16.data)[i], "f16 C[%lld], beta %g", (long long)i, beta);
                CHECKF(fabsf(F(&C32)[i] - F(&R32)[i]) < 1e-5f, "f32 C[%lld], beta %g", (long long)i, beta);
            }
        }
        gpudl_tensor_free(c, &A); gpudl_tensor_free(c, &B); gpudl_tensor_free(c, &C16); gpudl_tensor_free(c, &C32);
        gpudl_tensor_free(c, &R16); gpudl_tensor_free(c, &R32);
    }
    for (run = 0; run < 2; run++) {   /* mixed precision: every f16 GEMM of the step is the override's */
        gpudl_model *m;
        gpudl_model_desc md;
        gpudl_optim_desc od;
        int64_t in = 20, xs[2] = {16, 20}, one = 16, i;
        gpudl_tensor x, y;
        o.gemm_f16 = gemm_f16_good; calls = 0;
        CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, run ? &o : NULL));
        CHECK_OK(gpudl_model_create(c, &m, 1, &in));
        CHECK_OK(gpudl_model_add_linear(m, 20, 12));
        CHECK_OK(gpudl_model_add_relu(m));
        CHECK_OK(gpudl_model_add_linear(m, 12, 5));
        memset(&md, 0, sizeof md);
        md.max_batch = 16; md.seed = 7;
        CHECK_OK(gpudl_model_build(m, &md));
        CHECK_OK(gpudl_model_set_precision(m, GPUDL_PRECISION_FP16, NULL));
        memset(&od, 0, sizeof od);
        od.lr = 0.1f; od.momentum = 0.9f;
        CHECK_OK(gpudl_model_set_optimizer(m, &od));
        CHECK_OK(gpudl_tensor_create(c, &x, GPUDL_F32, 2, xs));
        CHECK_OK(gpudl_tensor_create(c, &y, GPUDL_I32, 1, &one));
        for (i = 0; i < 16 * 20; i++) F(&x)[i] = (float)gpudl_rng_uniform(99, (uint64_t)i) - 0.5f;
        for (i = 0; i < 16; i++) ((int32_t *)y.data)[i] = (int32_t)(i % 5);
        for (s = 0; s < 5; s++) {
            CHECK_OK(gpudl_model_zero_grad(m));
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            CHECK_OK(gpudl_model_loss(m, &y));
            CHECK_OK(gpudl_model_backward(m));
            CHECK_OK(gpudl_model_step(m));
            CHECK_OK(gpudl_model_loss_value(m, &loss[run][s]));
        }
        if (run) CHECKF(calls == 5 * 5, "gemm_f16 ran %d times (2 forward, 3 backward per step)", calls);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
        gpudl_model_destroy(m);
    }
    for (s = 0; s < 5; s++) CHECKF(fabsf(loss[0][s] - loss[1][s]) < 1e-3f * (1 + fabsf(loss[0][s])), "step %d: %g vs %g", s,
                                   loss[0][s], loss[1][s]);
    CHECK(loss[1][4] < loss[1][0]);
    gpudl_ctx_destroy(c);
}

/* ---- custom layers ---- */

/* y = x + x W^T, W (F, F): a residual linear block, written with gpudl ops,
   so it runs on either device and in 16 bits. */
static gpudl_status residual_fwd(gpudl_layer_io *io) {
    GPUDL__TRY(gpudl_matmul(io->ctx, &io->y, &io->x, &io->p[0], 0, 1, 1.0f, 0.0f));
    return gpudl_add(io->ctx, &io->y, &io->y, &io->x);
}
static gpudl_status residual_bwd(gpudl_layer_io *io) {
    if (io->dx) {   /* dx = dy + dy W */
        GPUDL__TRY(gpudl_matmul(io->ctx, io->dx, &io->dy, &io->p[0], 0, 0, 1.0f, 0.0f));
        GPUDL__TRY(gpudl_add(io->ctx, io->dx, io->dx, &io->dy));
    }
    return gpudl_matmul(io->ctx, &io->g[0], &io->dy, &io->x, 1, 0, 1.0f, 1.0f);   /* dW += dy^T x */
}
/* the same with the backward's weight gradient assigned, not accumulated */
static gpudl_status residual_bwd_assigns(gpudl_layer_io *io) {
    if (io->dx) {
        GPUDL__TRY(gpudl_matmul(io->ctx, io->dx, &io->dy, &io->p[0], 0, 0, 1.0f, 0.0f));
        GPUDL__TRY(gpudl_add(io->ctx, io->dx, io->dx, &io->dy));
    }
    return gpudl_matmul(io->ctx, &io->g[0], &io->dy, &io->x, 1, 0, 2.0f, 0.0f);   /* and twice too large */
}

static gpudl_layer_desc residual_desc(int64_t F) {
    gpudl_layer_desc d;
    memset(&d, 0, sizeof d);
    d.name = "residual";
    d.forward = residual_fwd;
    d.backward = residual_bwd;
    d.nparams = 1;
    d.param_names[0] = "weight";
    d.param_ndim[0] = 2;
    d.param_shape[0][0] = d.param_shape[0][1] = F;
    d.param_init[0] = GPUDL_PARAM_FAN;
    return d;
}

/* A plain-C custom layer, f32 only: y = x^2 * s (s a per-feature scale, init 1). */
static gpudl_status square_fwd(gpudl_layer_io *io) {
    int64_t i, n = gpudl_tensor_numel(&io->x), F = gpudl_tensor_numel(&io->p[0]);
    const float *x = (const float *)io->x.data, *s = (const float *)io->p[0].data;
    for (i = 0; i < n; i++) ((float *)io->y.data)[i] = x[i] * x[i] * s[i % F];
    return GPUDL_OK;
}
static gpudl_status square_bwd(gpudl_layer_io *io) {
    int64_t i, n = gpudl_tensor_numel(&io->x), F = gpudl_tensor_numel(&io->p[0]);
    const float *x = (const float *)io->x.data, *s = (const float *)io->p[0].data, *dy = (const float *)io->dy.data;
    for (i = 0; i < n; i++) {
        if (io->dx) ((float *)io->dx->data)[i] = 2.0f * x[i] * s[i % F] * dy[i];
        ((float *)io->g[0].data)[i % F] += x[i] * x[i] * dy[i];
    }
    return GPUDL_OK;
}
static gpudl_status square_bwd_wrong(gpudl_layer_io *io) {   /* forgets the 2 of d(x^2)/dx */
    int64_t i, n = gpudl_tensor_numel(&io->x), F = gpudl_tensor_numel(&io->p[0]);
    const float *x = (const float *)io->x.data, *s = (const float *)io->p[0].data, *dy = (const float *)io->dy.data;
    for (i = 0; i < n; i++) {
        if (io->dx) ((float *)io->dx->data)[i] = x[i] * s[i % F] * dy[i];
        ((float *)io->g[0].data)[i % F] += x[i] * x[i] * dy[i];
    }
    return GPUDL_OK;
}

static void test_custom_layer_check(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_layer_desc d = residual_desc(6);
    gpudl_check_report r;
    int64_t in = 6;
    char buf[4096];
    CHECK_OK(gpudl_check_layer(c, &d, 1, &in, &r));
    CHECKF(r.passed && r.ncases == 2, "%s", gpudl_check_explain(&r, buf, sizeof buf));
    d.backward = residual_bwd_assigns;
    CHECK_OK(gpudl_check_layer(c, &d, 1, &in, &r));
    CHECKF(!r.passed && r.first_case == 1 && strstr(r.where, "weight"), "%s", gpudl_check_explain(&r, buf, sizeof buf));
    memset(&d, 0, sizeof d);
    d.name = "square"; d.forward = square_fwd; d.backward = square_bwd; d.f32_only = 1;
    d.nparams = 1; d.param_names[0] = "scale"; d.param_ndim[0] = 1; d.param_shape[0][0] = 6; d.param_init[0] = GPUDL_PARAM_ONES;
    CHECK_OK(gpudl_check_layer(c, &d, 1, &in, &r));
    CHECKF(r.passed, "%s", gpudl_check_explain(&r, buf, sizeof buf));
    d.backward = square_bwd_wrong;
    CHECK_OK(gpudl_check_layer(c, &d, 1, &in, &r));
    CHECKF(!r.passed && strstr(gpudl_check_explain(&r, buf, sizeof buf), "finite diff"), "%s", buf);
    d.backward = NULL;   /* no backward: the check says so */
    CHECK_OK(gpudl_check_layer(c, &d, 1, &in, &r));
    CHECK(!r.passed);
}

/* Bad descs are refused (then build fails); a f32-only layer refuses 16 bits. */
static void test_custom_layer_errors(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    gpudl_layer_desc d = residual_desc(8);
    int64_t in = 8;
    CHECK_OK(gpudl_model_create(c, &m, 1, &in));
    d.forward = NULL;
    CHECK_ST(gpudl_model_add_custom(m, &d), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_model_destroy(m);
    CHECK_OK(gpudl_model_create(c, &m, 1, &in));
    d = residual_desc(8);
    d.nparams = 2; d.param_names[1] = "weight"; d.param_ndim[1] = 1; d.param_shape[1][0] = 8;
    CHECK_ST(gpudl_model_add_custom(m, &d), GPUDL_ERR_INVALID_ARG);   /* two parameters of one name */
    CHECK(strstr(gpudl_ctx_last_error(c), "named 'weight'"));
    gpudl_model_destroy(m);
    CHECK_OK(gpudl_model_create(c, &m, 1, &in));
    memset(&d, 0, sizeof d);
    d.forward = square_fwd; d.backward = square_bwd; d.f32_only = 1;
    d.nparams = 1; d.param_ndim[0] = 1; d.param_shape[0][0] = 8; d.param_init[0] = GPUDL_PARAM_ONES;
    CHECK_OK(gpudl_model_add_custom(m, &d));
    CHECK_OK(gpudl_model_add_linear(m, 8, 3));
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_ST(gpudl_model_set_precision(m, GPUDL_PRECISION_BF16, NULL), GPUDL_ERR_UNSUPPORTED);
    CHECK(strstr(gpudl_ctx_last_error(c), "f32_only"));
    CHECK_OK(gpudl_model_set_precision(m, GPUDL_PRECISION_FP32, NULL));
    gpudl_model_destroy(m);
}

/* The demo-style CNN with a custom residual block trains on the subset, and
   the block's weight survives a checkpoint round trip under its own name. */
static void test_custom_layer_cnn(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor xtr, ytr, xte, yte, x, y, out;
    gpudl_dataset tr, te;
    gpudl_model *m, *m2, *mm;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_layer_desc d = residual_desc(32);
    gpudl_conv2d_desc cd = conv_desc(1, 2, 1);
    int64_t img[3] = {1, 28, 28}, i, n;
    float first = 0, last = 0, *before;
    double acc;
    char sum[2048];
    int k;
    if (!load_subset(&xtr, &ytr, &xte, &yte)) SKIP("no data under %s", data_dir());
    CHECK_OK(gpudl_dataset_create(c, &tr, &xtr, &ytr, 64, 0.2860f, 0.3530f));
    CHECK_OK(gpudl_dataset_create(c, &te, &xte, &yte, 64, 0.2860f, 0.3530f));
    for (k = 0; k < 2; k++) {
        CHECK_OK(gpudl_model_create(c, k ? &m2 : &m, 3, img));
        mm = k ? m2 : m;
        CHECK_OK(gpudl_model_add_conv2d(mm, 1, 6, 5, &cd));
        CHECK_OK(gpudl_model_add_relu(mm));
        CHECK_OK(gpudl_model_add_maxpool2d(mm, 2, 2));
        CHECK_OK(gpudl_model_add_flatten(mm));
        CHECK_OK(gpudl_model_add_linear(mm, 6 * 14 * 14, 32));
        CHECK_OK(gpudl_model_add_relu(mm));
        CHECK_OK(gpudl_model_add_custom(mm, &d));
        CHECK_OK(gpudl_model_add_linear(mm, 32, 10));
        memset(&md, 0, sizeof md);
        md.max_batch = 64; md.seed = 3 + (uint64_t)k;
        CHECK_OK(gpudl_model_build(mm, &md));
        memset(&od, 0, sizeof od);
        od.kind = GPUDL_OPTIM_ADAM; od.lr = 2e-3f;
        CHECK_OK(gpudl_model_set_optimizer(mm, &od));
    }
    gpudl_model_summary(m, sum, sizeof sum);
    CHECKF(strstr(sum, "residual"), "summary:\n%s", sum);
    CHECK(gpudl_model_num_params(m) == 6 * 25 + 6 + 1176 * 32 + 32 + 32 * 32 + 32 * 10 + 10);
    train_steps(m, &tr, 0, 1, &first);
    train_steps(m, &tr, 1, 2 * 32 - 1, &last);
    acc = evaluate(m, &te);
    printf("    CNN with a custom residual block, 2 epochs of 2000 images: loss %.3f -> %.3f, accuracy %.1f%%\n", first, last,
           100 * acc);
    CHECKF(last < 0.6f * first && acc > 0.65, "loss %g -> %g, accuracy %g", first, last, acc);
    /* the checkpoint: saved, loaded into a fresh model, the same outputs */
    CHECK_OK(gpudl_model_save(c, m, tmp_path("custom.safetensors")));
    CHECK_OK(gpudl_model_load(c, m2, tmp_path("custom.safetensors")));
    CHECK_OK(gpudl_dataset_batch(c, &te, 0, &x, &y));
    gpudl_model_train(m, 0); gpudl_model_train(m2, 0);
    CHECK_OK(gpudl_model_forward(m, &x, &out));
    n = gpudl_tensor_numel(&out);
    before = (float *)malloc(sizeof(float) * (size_t)n);
    memcpy(before, out.data, sizeof(float) * (size_t)n);
    CHECK_OK(gpudl_model_forward(m2, &x, &out));
    for (i = 0; i < n; i++) CHECK(before[i] == F(&out)[i]);
    free(before);
    {   /* stored as "6.weight": the custom layer's own parameter name */
        FILE *f = fopen(tmp_path("custom.safetensors"), "rb");
        char head[4096] = {0};
        if (f) { CHECK(fread(head, 1, sizeof head - 1, f) > 0); fclose(f); }
        CHECK(strstr(head + 8, "\"6.weight\"") != NULL);
    }
    gpudl_model_destroy(m); gpudl_model_destroy(m2);
    gpudl_dataset_free(c, &tr); gpudl_dataset_free(c, &te);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* On the GPU: gpudl's own ops pass the check, overrides stay with their
   context, and the custom residual block trains in FP32 and BF16. */
static void test_gpu_override_and_custom(void) {
    NEED_GPU(g);
    {
        gpudl_check_report r;
        gpudl_model *m;
        gpudl_model_desc md;
        gpudl_optim_desc od;
        gpudl_layer_desc d = residual_desc(16);
        gpudl_ops o;
        op_counts n;
        gpudl_tensor x, y, hx, hy;
        int64_t in = 24, xs[2] = {32, 24}, one = 32, i;
        float l0 = 0, l1 = 0;
        char buf[8192];
        int op, prec;
        for (op = GPUDL_OP_GEMM; op <= GPUDL_OP_ADAM_UPDATE; op++) {
            CHECK_OK(gpudl_check_op(g, (gpudl_op)op, GPUDL_ACT_RELU, &r));
            CHECKF(r.passed, "gpudl's own op %d on the GPU: %s", op, gpudl_check_explain(&r, buf, sizeof buf));
        }
        {   /* timing: both paths measured (on the emulator the numbers mean nothing, but they are measured) */
            gpudl_op_timing t;
            CHECK_OK(gpudl_time_op(g, GPUDL_OP_GEMM, 32, &t));
            CHECK(t.ms_builtin > 0 && t.ms_override == 0 && strstr(gpudl_op_timing_explain(&t, buf, sizeof buf), "no override"));
        }
        hx = make(cpu_ctx(), GPUDL_DEVICE_CPU, GPUDL_F32, 2, 32, 24, 0);
        hy = make(cpu_ctx(), GPUDL_DEVICE_CPU, GPUDL_I32, 1, 32, 0, 0);
        for (i = 0; i < 32 * 24; i++) F(&hx)[i] = (float)gpudl_rng_uniform(5, (uint64_t)i) - 0.5f;
        for (i = 0; i < 32; i++) ((int32_t *)hy.data)[i] = (int32_t)(i % 4);
        CHECK_OK(gpudl_tensor_create(g, &x, GPUDL_F32, 2, xs));
        CHECK_OK(gpudl_tensor_create(g, &y, GPUDL_I32, 1, &one));
        CHECK_OK(gpudl_tensor_copy(g, &x, &hx));
        CHECK_OK(gpudl_tensor_copy(g, &y, &hy));
        memset(&n, 0, sizeof n);
        memset(&o, 0, sizeof o);
        o.user = &n;
        o.gemm = declining_gemm;   /* the GPU slot only: the CPU's and other contexts' stay gpudl's */
        CHECK_OK(gpudl_ctx_set_ops(g, GPUDL_DEVICE_CUDA, &o));
        for (prec = 0; prec < 2; prec++) {
            CHECK_OK(gpudl_model_create(g, &m, 1, &in));
            CHECK_OK(gpudl_model_add_linear(m, 24, 16));
            CHECK_OK(gpudl_model_add_relu(m));
            CHECK_OK(gpudl_model_add_custom(m, &d));
            CHECK_OK(gpudl_model_add_linear(m, 16, 4));
            memset(&md, 0, sizeof md);
            md.max_batch = 32;
            CHECK_OK(gpudl_model_build(m, &md));
            if (prec) CHECK_OK(gpudl_model_set_precision(m, GPUDL_PRECISION_BF16, NULL));
            memset(&od, 0, sizeof od);
            od.kind = GPUDL_OPTIM_ADAM; od.lr = 1e-2f;
            CHECK_OK(gpudl_model_set_optimizer(m, &od));
            for (i = 0; i < 30; i++) {
                CHECK_OK(gpudl_model_zero_grad(m));
                CHECK_OK(gpudl_model_forward(m, &x, NULL));
                CHECK_OK(gpudl_model_loss(m, &y));
                CHECK_OK(gpudl_model_backward(m));
                CHECK_OK(gpudl_model_step(m));
                if (i == 0) CHECK_OK(gpudl_model_loss_value(m, &l0));
            }
            CHECK_OK(gpudl_model_loss_value(m, &l1));
            CHECKF(l1 < 0.5f * l0, "%s: loss %g -> %g", prec ? "BF16" : "FP32", l0, l1);
            gpudl_model_destroy(m);
        }
        CHECKF(n.gemm == 30 * 8, "the GPU gemm override saw %d FP32 calls, want 240 (BF16 calls are not its)", n.gemm);
        CHECK_OK(gpudl_ctx_set_ops(g, GPUDL_DEVICE_CUDA, NULL));
        gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
        gpudl_tensor_free(cpu_ctx(), &hx); gpudl_tensor_free(cpu_ctx(), &hy);
    }
}

/* ---- the causal softmax over attention scores (the attention assignment) ---- */

/* A student's plain C softmax over scores, with seeded bugs picked by *user:
   0 right, 1 no max subtracted, 2 the mask leaks (the whole row), 3 a row
   held in a fixed array of 1024 (longer rows: the rest left unwritten),
   5 nothing written, 6 the max subtracted on the short rows' path only
   (T <= 1024). */
static int attn_calls;
static gpudl_status attn_fwd_user(void *user, void *stream, float *att, const float *s, int64_t L, int64_t T) {
    int bug = *(const int *)user;
    int64_t r, j;
    (void)stream;
    attn_calls++;
    if (bug == 5) return GPUDL_OK;   /* writes nothing */
    for (r = 0; r < L * T; r++) {
        int64_t t = r % T, n = bug == 2 ? T : t + 1;
        float mx = -INFINITY, sum = 0, row[1024];
        if (bug == 3 && n > 1024) n = 1024;   /* the rest of a long row is lost */
        for (j = 0; j < n; j++) mx = s[r * T + j] > mx ? s[r * T + j] : mx;
        if (bug == 1 || (bug == 6 && T > 1024)) mx = 0.0f;
        for (j = 0; j < n; j++) {
            float e = expf(s[r * T + j] - mx);
            if (j < 1024) row[j] = e;
            sum += e;
        }
        for (j = 0; j < T; j++)
            if (j < n) att[r * T + j] = (j < 1024 ? row[j] : expf(s[r * T + j] - mx)) / sum;
            else if (j > t) att[r * T + j] = 0.0f;   /* bug 3: columns 1024..t stay unwritten */
    }
    return GPUDL_OK;
}
/* 0 right, 4 the sum over j < t (the diagonal left out) */
static gpudl_status attn_bwd_user(void *user, void *stream, float *ds, const float *dp, const float *p, int64_t L, int64_t T) {
    int bug = *(const int *)user;
    int64_t r, j;
    (void)stream;
    attn_calls++;
    for (r = 0; r < L * T; r++) {
        int64_t t = r % T;
        float dot = 0;
        for (j = 0; j < (bug == 4 ? t : t + 1); j++) dot += p[r * T + j] * dp[r * T + j];
        for (j = 0; j < T; j++) ds[r * T + j] = j <= t ? p[r * T + j] * (dp[r * T + j] - dot) : 0.0f;
    }
    return GPUDL_OK;
}

/* max |a - b| over n floats, a loop of its own: gcc 12 for aarch64 stops with
   an internal compiler error vectorising an fmax reduction written inline
   in test_check_attn (make test-arm64's -O2 build). */
static double max_abs_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m) m = d;
    }
    return m;
}

/* gpudl's own softmax passes its check; a right override passes and runs
   under gpudl_attention_forward/_backward; each seeded bug fails the group
   named after it. */
static void test_check_attn(void) {
    gpudl_ctx *c = own_cpu_ctx();
    gpudl_check_report r;
    gpudl_ops o;
    char buf[8192];
    int bug = 0, op;
    for (op = GPUDL_OP_ATTN_SOFTMAX_FORWARD; op <= GPUDL_OP_ATTN_SOFTMAX_BACKWARD; op++) {
        CHECK_OK(gpudl_check_op(c, (gpudl_op)op, 0, &r));
        CHECKF(r.passed && r.ncases >= 12 && r.override_calls == 0, "gpudl's own op %d: %s", op,
               gpudl_check_explain(&r, buf, sizeof buf));
    }
    memset(&o, 0, sizeof o);
    o.user = &bug;
    o.attn_softmax_forward = attn_fwd_user; o.attn_softmax_backward = attn_bwd_user;
    CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &o));
    for (op = GPUDL_OP_ATTN_SOFTMAX_FORWARD; op <= GPUDL_OP_ATTN_SOFTMAX_BACKWARD; op++) {
        attn_calls = 0;
        CHECK_OK(gpudl_check_op(c, (gpudl_op)op, 0, &r));
        CHECKF(r.passed && r.override_calls >= r.ncases && attn_calls >= r.ncases, "right override of op %d: %s", op,
               gpudl_check_explain(&r, buf, sizeof buf));
    }
    bug = 1;
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ATTN_SOFTMAX_FORWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "large scores,"), "no max: failed %s", failed_groups(&r));
    bug = 6;   /* long rows of small scores pass without the max: only the long row of large scores catches it */
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ATTN_SOFTMAX_FORWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "large scores,") && r.first_case >= 0 && strstr(r.cases[r.first_case].shape, "T=1100"),
           "no max on long rows: failed %s", failed_groups(&r));
    bug = 2;
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ATTN_SOFTMAX_FORWARD, 0, &r));
    CHECKF(strstr(failed_groups(&r), "causal mask,") && strstr(failed_groups(&r), "odd head sizes,"), "mask leak: failed %s",
           failed_groups(&r));
    gpudl_check_explain(&r, buf, sizeof buf);
    CHECKF(strstr(buf, "first failure") && strstr(buf, "att[") && strstr(buf, "expected") && strstr(buf, "scores from"), "explanation:\n%s", buf);
    bug = 3;   /* large scores has a row of T = 1100 too */
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ATTN_SOFTMAX_FORWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "large scores,long rows,"), "fixed row: failed %s", failed_groups(&r));
    bug = 4;
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ATTN_SOFTMAX_BACKWARD, 0, &r));
    CHECKF(strstr(failed_groups(&r), "basic,") && strstr(failed_groups(&r), "finite diff,"), "wrong range: failed %s",
           failed_groups(&r));
    bug = 5;   /* the backward is right, the forward writes nothing: the finite differences (of that forward) fail */
    CHECK_OK(gpudl_check_op(c, GPUDL_OP_ATTN_SOFTMAX_BACKWARD, 0, &r));
    CHECKF(!strcmp(failed_groups(&r), "finite diff,") && strstr(r.status_msg, "make the forward pass first"),
           "forward writes nothing: failed %s (%s)", failed_groups(&r), r.status_msg);
    {   /* the attention runs the override: the same y and dqkv as gpudl's own, and a leak shows in y */
        gpudl_tensor qkv = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 3, 2, 5, 18), y[2], att[2], dy, dq[2];
        int64_t sy[3] = {2, 5, 6}, sa[4] = {2, 3, 5, 5}, pass;
        double err = 0;
        CHECK_OK(gpudl_tensor_uniform(c, &qkv, -1.0f, 1.0f));
        CHECK_OK(gpudl_tensor_create(c, &dy, GPUDL_F32, 3, sy));
        CHECK_OK(gpudl_tensor_uniform(c, &dy, -1.0f, 1.0f));
        for (pass = 0; pass < 2; pass++) {   /* 0: gpudl's own, 1: the override */
            bug = 0;
            CHECK_OK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, pass ? &o : NULL));
            CHECK_OK(gpudl_tensor_create(c, &y[pass], GPUDL_F32, 3, sy));
            CHECK_OK(gpudl_tensor_create(c, &att[pass], GPUDL_F32, 4, sa));
            CHECK_OK(gpudl_tensor_create(c, &dq[pass], GPUDL_F32, 3, qkv.shape));
            attn_calls = 0;
            CHECK_OK(gpudl_attention_forward(c, &y[pass], &att[pass], &qkv, 3));
            CHECK_OK(gpudl_attention_backward(c, &dq[pass], &dy, &qkv, &att[pass], 3));
            CHECK(attn_calls == 2 * pass);
        }
        err = fmax(max_abs_diff(F(&y[0]), F(&y[1]), 2 * 5 * 6), max_abs_diff(F(&dq[0]), F(&dq[1]), 2 * 5 * 18));
        CHECKF(err < 1e-5, "override vs gpudl's attention: %g", err);
        bug = 2;
        CHECK_OK(gpudl_attention_forward(c, &y[1], &att[1], &qkv, 3));
        err = max_abs_diff(F(&y[0]), F(&y[1]), 2 * 5 * 6);
        CHECKF(err > 1e-3, "a leaking softmax changes y: %g", err);
        for (pass = 0; pass < 2; pass++) {
            gpudl_tensor_free(c, &y[pass]); gpudl_tensor_free(c, &att[pass]); gpudl_tensor_free(c, &dq[pass]);
        }
        gpudl_tensor_free(c, &qkv); gpudl_tensor_free(c, &dy);
    }
    {
        gpudl_op_timing t;
        CHECK_ST(gpudl_time_op(c, GPUDL_OP_ATTN_SOFTMAX_FORWARD, 64, &t), GPUDL_ERR_UNSUPPORTED);
    }
    gpudl_ctx_destroy(c);
}

/* On the GPU (or the emulated one): gpudl's own causal softmax kernels pass
   the check, long rows and the whole attention included. */
static void test_gpu_check_attn(void) {
    NEED_GPU(g);
    {
        gpudl_check_report r;
        char buf[8192];
        int op;
        for (op = GPUDL_OP_ATTN_SOFTMAX_FORWARD; op <= GPUDL_OP_ATTN_SOFTMAX_BACKWARD; op++) {
            CHECK_OK(gpudl_check_op(g, (gpudl_op)op, 0, &r));
            CHECKF(r.passed && r.ncases >= 12, "gpudl's own op %d on the GPU: %s", op, gpudl_check_explain(&r, buf, sizeof buf));
        }
    }
}
