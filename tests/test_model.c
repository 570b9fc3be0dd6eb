/* gpudl tests: model, gradcheck. The model API and its errors, gradient
   accumulation, a short training run that must learn; in the nvcc build
   GPU against CPU training (step by step, and with fused layer pairs) and,
   on the emulated device, the launches and library calls of a training
   step. Then gradient checks of every layer through small models, and
   gradcheck's own API.
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* >>model ----------------------------------------------------------------- */

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
    /* a refused layer fails the build, with the first refusal's message */
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_SHAPE);
    CHECKF(strstr(gpudl_ctx_last_error(c), "layer 0 was refused") && strstr(gpudl_ctx_last_error(c), "flatten"), "%s",
           gpudl_ctx_last_error(c));
    gpudl_model_destroy(m);
    CHECK_OK(gpudl_model_create(c, &m, 3, img));
    CHECK_OK(gpudl_model_add_conv2d(m, 1, 4, 5, NULL));
    CHECK_OK(gpudl_model_add_relu(m));
    CHECK_OK(gpudl_model_add_maxpool2d(m, 2, 2));
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_SHAPE);                             /* softmax needs K scores */
    CHECK_OK(gpudl_model_add_flatten(m));
    CHECK_OK(gpudl_model_add_linear(m, 4 * 12 * 12, 10));
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_add_relu(m), GPUDL_ERR_INVALID_ARG);                          /* after build */
    CHECK_ST(gpudl_model_forward(m, &xb, NULL), GPUDL_ERR_SHAPE);                      /* batch > max_batch */
    CHECK_ST(gpudl_model_forward(m, &xbad, NULL), GPUDL_ERR_SHAPE);
    CHECKF(strstr(gpudl_ctx_last_error(c), "f32[2,1,27,28]") && strstr(gpudl_ctx_last_error(c), "1x28x28"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_INVALID_ARG);                          /* no loss yet */
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);                              /* no optimizer */
    CHECK(gpudl_model_num_params(m) == 4 * 25 + 4 + 576 * 10 + 10);   /* the real count, without the padding */
    gpudl_model_summary(m, buf, sizeof buf);
    CHECKF(strstr(buf, "conv2d") && strstr(buf, "parameters: 5874"), "%s", buf);
    gpudl_model_destroy(m);
    gpudl_model_destroy(NULL);
    CHECK_ST(gpudl_model_add_relu(NULL), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_forward(NULL, &x, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &xb); gpudl_tensor_free(c, &xbad);
}

/* The README tour's CNN without its padding: add_linear(3136 -> 10) is
   refused (the flatten gives 2304), and the model must not build, train
   and save as a different network: build fails with the add's message. */
static void test_model_refused_layer(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    int64_t img[3] = {1, 28, 28};
    CHECK_OK(gpudl_model_create(c, &m, 3, img));
    CHECK_OK(gpudl_model_add_conv2d(m, 1, 16, 5, NULL));
    CHECK_OK(gpudl_model_add_relu(m));
    CHECK_OK(gpudl_model_add_maxpool2d(m, 2, 2));
    CHECK_OK(gpudl_model_add_flatten(m));
    CHECK_ST(gpudl_model_add_linear(m, 3136, 10), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_model_add_dropout(m, 2.0f), GPUDL_ERR_INVALID_ARG);   /* a second refusal: the first is reported */
    CHECK_ST(gpudl_model_build(m, NULL), GPUDL_ERR_SHAPE);
    CHECKF(strstr(gpudl_ctx_last_error(c), "layer 4 was refused") && strstr(gpudl_ctx_last_error(c), "3136") &&
           strstr(gpudl_ctx_last_error(c), "2304"), "%s", gpudl_ctx_last_error(c));
    CHECK_ST(gpudl_model_step(m), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_model_save(c, m, "build/refused.safetensors"), GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_model_num_params(m) == 16 * 25 + 16);   /* the layers that were added */
    gpudl_model_destroy(m);
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
    n = flat_len(m);
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

/* gpudl_model_predict writes into the caller's tensor, whose data stays the
   caller's (before issue 35 it was overwritten with a view into the model:
   the caller's buffer leaked and the values changed at the next forward);
   gpudl_model_predict_view is the view. */
static void test_predict_into_callers_tensor(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    int64_t v[1] = {5}, xs[2] = {4, 5}, N = 4, three = 3, i;
    gpudl_tensor x = rnd(2, xs, -1, 1), x2 = rnd(2, xs, -1, 1), preds = mk(c, GPUDL_I32, 1, &N), view, wrong = mk(c, GPUDL_F32, 1, &N),
                 short_one = mk(c, GPUDL_I32, 1, &three);
    void *mine = preds.data;
    int32_t first[4];
    CHECK_OK(gpudl_model_create(c, &m, 1, v));
    CHECK_OK(gpudl_model_add_linear(m, 5, 7));
    CHECK_OK(gpudl_model_build(m, NULL));
    CHECK_OK(gpudl_model_forward(m, &x, NULL));
    CHECK_OK(gpudl_model_predict(m, &preds));
    CHECK(preds.data == mine && preds.owner && preds.dtype == GPUDL_I32 && gpudl_tensor_numel(&preds) == 4);
    CHECK_OK(gpudl_model_predict_view(m, &view));
    CHECK(view.data != mine && !view.owner);
    for (i = 0; i < N; i++) CHECKF(((int32_t *)preds.data)[i] == ((int32_t *)view.data)[i], "row %lld", (long long)i);
    memcpy(first, preds.data, sizeof first);
    for (i = 0; i < 20; i++) {   /* the caller's predictions stay while the model goes on */
        CHECK_OK(gpudl_tensor_uniform(c, &x2, -1, 1));
        CHECK_OK(gpudl_model_forward(m, &x2, NULL));
    }
    CHECK(!memcmp(first, preds.data, sizeof first));
    CHECK_ST(gpudl_model_predict(m, &wrong), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_model_predict(m, &short_one), GPUDL_ERR_SHAPE);
    CHECK(strstr(gpudl_ctx_last_error(c), "I32 with 4 elements") != NULL);
    CHECK_ST(gpudl_model_predict(m, NULL), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &x2); gpudl_tensor_free(c, &preds); gpudl_tensor_free(c, &wrong);
    gpudl_tensor_free(c, &short_one);
    gpudl_model_destroy(m);
}

/* >>model: training ------------------------------------------------------- */

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
            printf("    cuBLASLt %s, %s: worst loss difference %.1e, weights %.1e\n", lt ? "on " : "off", p & 1 ? "fp16" : "fp32",
                   (double)worst, e);
            CHECKF(worst < (p ? 2e-2f : 1e-4f), "losses GPU vs CPU differ by %g (cuBLASLt %d, %s)", (double)worst, lt,
                   p & 1 ? "fp16" : "fp32");
            CHECKF(e < (p ? 2e-2 : 1e-4), "weights GPU vs CPU differ by %g (cuBLASLt %d, %s)", e, lt, p & 1 ? "fp16" : "fp32");
            gpudl_tensor_free(c, &back);
            gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy); gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
            gpudl_model_destroy(cm); gpudl_model_destroy(gm);
        }
    g->use_lt = 1;   /* the default */
#endif
}

/* >>model: a training step counted (emulated device) ---------------------- */
#ifdef __CUEMU__
#include <cuemu.h>
#endif

/* A training step of a model on the GPU, counted by the emulated device:
   random images through a device dataset, zero_grad, forward, loss,
   backward, step. After two warm-up steps (workspaces and caches fill) a
   step must allocate nothing and wait for nothing (the host reads no
   number); its kernel launches and library calls are deterministic, so they
   are asserted exactly: a change that adds a launch shows up here, and
   bench/RESULTS.md compares them with what a fused design needs. */
typedef struct { const char *name; int cnn; gpudl_precision prec; uint64_t launches, library; } step_case;

#ifdef __CUEMU__
static gpudl_model *counted_model(gpudl_ctx *g, int cnn, gpudl_precision prec) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    int64_t img[3] = {1, 28, 28};
    if (cnn) return small_cnn(g, 7, GPUDL_OPTIM_ADAM);
    GPUDL_CHECK(gpudl_model_create(g, &m, 3, img));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 784, 64));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 64, 64));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 64, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = 32;
    md.seed = 7;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_SGD;
    od.lr = 0.05f;
    od.momentum = 0.9f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    (void)prec;
    return m;
}

#endif

static void test_gpu_emu_counters_training_step(void) {
#ifndef __CUEMU__
    SKIP("counts launches on the emulated device (tests/emu) only");
#else
    /* The expected counts, per step (see bench/RESULTS.md for the breakdown). */
    static const step_case cases[] = {
        /* The plain path (cuBLASLt off: cublaslt = -1), the fallback when cuBLASLt offers no
           algorithm; gpu_emu_step_floor counts the default path. MLP 784-64-64-10 (flatten
           first), SGD with momentum. Library calls: 3 forward GEMMs + 5 backward (dx and dW of
           the last two layers, only dW of the first). 12 launches: the batch gather; bias+ReLU
           twice and a bias add after the GEMMs; the loss (forward, mean and gradient in one); a
           bias-gradient sum per linear layer (written, not added: zero_grad issues no memset)
           and ReLU's backward twice; the non-finite check (a pass that reads the gradients) and
           the optimizer, which also updates the check's state in its last block. FP16 the same
           12: the batches follow the 16-bit model (gathered as F16, no cast in the forward;
           issue 36, 13 before); BF16 adds the gradients' rounding (13). */
        {"MLP FP32", 0, GPUDL_PRECISION_FP32, 12, 8},
        {"MLP FP16", 0, GPUDL_PRECISION_FP16, 12, 8},
        {"MLP BF16", 0, GPUDL_PRECISION_BF16, 13, 8},
        /* the test CNN: conv-bn-relu-pool-flatten-dropout-linear, Adam with clipping. Library:
           conv forward, linear GEMM, its dx and dW, conv's filter gradient (no dx: first layer).
           21 launches: gather, conv bias, batch norm (statistics in 2 passes, apply), ReLU, pool,
           dropout, linear bias, loss (1); backward: bias-gradient sum, dropout, pool and ReLU (one
           kernel), batch norm (3), conv bias gradient (1); gradient clipping (2), the non-finite
           check, the optimizer. FP16 adds conv's 16-bit filter gradient added into the f32
           one (22; the batch gathered as F16, no cast), BF16 also the gradients' rounding (23). */
        {"CNN FP32", 1, GPUDL_PRECISION_FP32, 21, 5},
        {"CNN FP16", 1, GPUDL_PRECISION_FP16, 22, 5},
        {"CNN BF16", 1, GPUDL_PRECISION_BF16, 23, 5},
    };
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[4] = {96, 1, 28, 28}, ys[1] = {96};
    gpudl_tensor images = mk(c, GPUDL_U8, 4, xs), labels = mk(c, GPUDL_U8, 1, ys);
    size_t k;
    int64_t i;
    NEED_GPU(g);
    for (i = 0; i < 96 * 784; i++) ((uint8_t *)images.data)[i] = (uint8_t)((i * 37) % 251);
    for (i = 0; i < 96; i++) ((uint8_t *)labels.data)[i] = (uint8_t)(i % 10);
    g->use_lt = 0;   /* the plain path */
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const step_case *t = &cases[k];
        gpudl_model *m = counted_model(g, t->cnn, t->prec);
        gpudl_dataset ds;
        gpudl_tensor x, y;
        cuemu_counters n;
        int step;
        CHECK_OK(gpudl_model_set_precision(m, t->prec, NULL));
        CHECK_OK(gpudl_dataset_create(g, &ds, &images, &labels, 32, 0.5f, 0.25f));
        CHECK_OK(gpudl_dataset_shuffle(g, &ds, 1, 0));
        for (step = 0; step < 3; step++) {
            if (step == 2) {
                CHECK_OK(gpudl_ctx_sync(g));
                cuemu_counters_reset();
            }
            CHECK_OK(gpudl_dataset_batch(g, &ds, step, &x, &y));
            CHECK_OK(gpudl_model_zero_grad(m));
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            CHECK_OK(gpudl_model_loss(m, &y));
            CHECK_OK(gpudl_model_backward(m));
            CHECK_OK(gpudl_model_step(m));
        }
        cuemu_counters_get(&n);
        printf("    %-9s one step: %3llu kernel launches, %2llu library calls, %llu allocations, %llu frees, %llu host waits, "
               "%llu bytes copied\n", t->name, (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
               (unsigned long long)n.mallocs, (unsigned long long)n.frees, (unsigned long long)n.host_waits,
               (unsigned long long)(n.h2d_bytes + n.d2h_bytes + n.d2d_bytes));
        CHECKF(n.mallocs == 0 && n.frees == 0 && n.host_allocs == 0 && n.host_frees == 0,
               "%s: a steady-state step allocates (%llu cudaMalloc, %llu cudaFree)", t->name,
               (unsigned long long)n.mallocs, (unsigned long long)n.frees);
        CHECKF(n.host_waits == 0, "%s: a steady-state step waits for the GPU %llu time(s)", t->name,
               (unsigned long long)n.host_waits);
        /* the loss scaler's (or the non-finite check's) state reaches pinned host memory without a wait and
           without a copy: the update's last block writes it there (issue 36; before: a copy every other step) */
        CHECKF(n.h2d_bytes == 0 && n.d2h_bytes == 0 && n.memcpy_calls == 0,
               "%s: a step copies %llu bytes to and %llu from the device (%llu copies)", t->name,
               (unsigned long long)n.h2d_bytes, (unsigned long long)n.d2h_bytes, (unsigned long long)n.memcpy_calls);
        CHECKF(n.kernel_launches == t->launches && n.library_calls == t->library,
                   "%s: %llu kernel launches and %llu library calls per step, expected %llu and %llu", t->name,
                   (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
                   (unsigned long long)t->launches, (unsigned long long)t->library);
        gpudl_dataset_free(g, &ds);
        gpudl_model_destroy(m);
    }
    g->use_lt = 1;
    gpudl_tensor_free(c, &images);
    gpudl_tensor_free(c, &labels);
#endif
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

/* gpudl_model_profile: each layer's forward and backward, the loss, the
   step and zero_grad are timed; the shares add up to the whole. */
static void test_model_profile(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    gpudl_optim_desc od;
    gpudl_tensor x, y;
    int64_t in = 30, xs[2] = {16, 30}, n16 = 16, i;
    char rep[4096];
    const char *p;
    double share = 0;
    CHECK_OK(gpudl_model_create(c, &m, 1, &in));
    CHECK_OK(gpudl_model_add_linear(m, 30, 20));
    CHECK_OK(gpudl_model_add_relu(m));
    CHECK_OK(gpudl_model_add_linear(m, 20, 5));
    CHECK_OK(gpudl_model_build(m, NULL));
    memset(&od, 0, sizeof od);
    CHECK_OK(gpudl_model_set_optimizer(m, &od));
    x = rnd(2, xs, -1, 1);
    y = mk(c, GPUDL_I32, 1, &n16);
    for (i = 0; i < 16; i++) ((int32_t *)y.data)[i] = (int32_t)(i % 5);
    CHECK(strstr(gpudl_model_profile_report(m, rep, sizeof rep), "no profile") != NULL);
    CHECK_OK(gpudl_model_profile(m, 1));
    for (i = 0; i < 3; i++) {
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_forward(m, &x, NULL));
        CHECK_OK(gpudl_model_loss(m, &y));
        CHECK_OK(gpudl_model_backward(m));
        CHECK_OK(gpudl_model_step(m));
    }
    gpudl_model_profile_report(m, rep, sizeof rep);
    CHECKF(strstr(rep, "profile of 3 steps") && strstr(rep, "linear") && strstr(rep, "optimizer step") &&
           strstr(rep, "zero_grad"), "%s", rep);
    for (p = rep; (p = strchr(p, '%')) != NULL; p++) {   /* the shares: the number before each '%' */
        const char *q = p;
        while (q > rep && (q[-1] == '.' || (q[-1] >= '0' && q[-1] <= '9'))) q--;
        share += atof(q);
    }
    CHECKF(fabs(share - 100.0) < 1.0, "the shares add up to %.1f%%:\n%s", share, rep);
    CHECK_OK(gpudl_model_profile(m, 0));
    CHECK(strstr(gpudl_model_profile_report(m, rep, sizeof rep), "no profile") != NULL);
    gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
    gpudl_model_destroy(m);
}

/* >>model: what a failure leaves (issue 26) -------------------------------- */

/* A small MLP on the GPU for the release and atomicity tests; NULL with
   *st set when build fails. */
HARNESS_MAYBE_UNUSED static gpudl_model *fault_mlp(gpudl_ctx *g, gpudl_status *st) {
    gpudl_model *m;
    gpudl_model_desc md;
    int64_t in[1] = {12};
    GPUDL_CHECK(gpudl_model_create(g, &m, 1, in));
    GPUDL_CHECK(gpudl_model_add_linear(m, 12, 16));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 16, 5));
    memset(&md, 0, sizeof md);
    md.max_batch = 8;
    md.seed = 11;
    *st = gpudl_model_build(m, &md);
    return m;
}

/* gpudl_model_destroy, a precision change and a failed gpudl_model_build
   give back every pinned block (the loss scaler's host view of its state)
   and every device allocation. Issue 26: destroy freed the parameters
   before releasing the scaler, whose release then took the model for a CPU
   one and kept its pinned block and event (one per model). The emulated
   device counts pinned blocks; it has no counter of events. */
static void test_gpu_emu_model_release(void) {
#ifndef __CUEMU__
    SKIP("counts pinned blocks on the emulated device (tests/emu) only");
#else
    cuemu_counters n;
    gpudl_model *m;
    gpudl_status s;
    long long sites, k;
    int failed = 0;
    NEED_GPU(g);
    CHECK_OK(gpudl_ctx_sync(g));
    cuemu_counters_reset();
    m = fault_mlp(g, &s);
    CHECK_OK(s);
    CHECK_OK(gpudl_model_set_precision(m, GPUDL_PRECISION_FP16, NULL));
    CHECK_OK(gpudl_model_set_precision(m, GPUDL_PRECISION_BF16, NULL));
    gpudl_model_destroy(m);
    cuemu_counters_get(&n);
    CHECKF(n.host_allocs >= 3 && n.host_allocs == n.host_frees, "build, two precisions, destroy: %llu pinned blocks "
           "allocated, %llu freed", (unsigned long long)n.host_allocs, (unsigned long long)n.host_frees);
    CHECKF(n.mallocs == n.frees, "build, two precisions, destroy: %llu device allocations, %llu frees",
           (unsigned long long)n.mallocs, (unsigned long long)n.frees);
    /* every CUDA, library and launch site of build failed in turn */
    g_fault_kinds = ~0;
    g_fault_seen = 0;
    g_fault_at = 1LL << 40;
    m = fault_mlp(g, &s);
    g_fault_at = -1;
    sites = g_fault_seen;
    CHECK_OK(s);
    gpudl_model_destroy(m);
    CHECKF(sites >= 3, "build has only %lld guarded sites", sites);
    for (k = 0; k < sites; k++) {
        CHECK_OK(gpudl_ctx_sync(g));
        cuemu_counters_reset();
        g_fault_seen = 0;
        g_fault_at = k;
        m = fault_mlp(g, &s);
        g_fault_at = -1;
        failed += s != GPUDL_OK;
        CHECKF(s != GPUDL_OK, "build with site %lld of %lld failing returned OK", k, sites);
        gpudl_model_destroy(m);
        cuemu_counters_get(&n);
        CHECKF(n.host_allocs == n.host_frees && n.mallocs == n.frees, "build failing at site %lld (kind %d) then destroy: "
               "%llu pinned blocks allocated, %llu freed; %llu device allocations, %llu freed", k, g_fault_hit,
               (unsigned long long)n.host_allocs, (unsigned long long)n.host_frees, (unsigned long long)n.mallocs,
               (unsigned long long)n.frees);
    }
    printf("    %lld sites of gpudl_model_build failed in turn\n", sites);
#endif
}

#ifndef GPUDL_NO_CUDA
typedef struct { const char *name; gpudl_precision prec; gpudl_optim_kind opt; float clip; } atomic_case;

static gpudl_model *atomic_model(gpudl_ctx *g, const atomic_case *t) {
    gpudl_optim_desc od;
    gpudl_status s;
    gpudl_model *m = fault_mlp(g, &s);
    GPUDL_CHECK(s);
    memset(&od, 0, sizeof od);
    od.kind = t->opt;
    od.lr = t->opt == GPUDL_OPTIM_SGD ? 0.05f : 0.01f;
    od.momentum = t->opt == GPUDL_OPTIM_SGD ? 0.9f : 0.0f;
    od.clip_norm = t->clip;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, t->prec, NULL));
    return m;
}

static void atomic_pass(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *y) {
    CHECK_OK(gpudl_model_zero_grad(m));
    CHECK_OK(gpudl_model_forward(m, x, NULL));
    CHECK_OK(gpudl_model_loss(m, y));
    CHECK_OK(gpudl_model_backward(m));
}

/* What a step may change: weights, optimizer state, the 16-bit copy, the
   scaler's state and the step count, as bytes. */
static size_t atomic_snap(gpudl_model *m, unsigned char *buf) {
    const gpudl_tensor *t[4] = {&m->params, &m->opt_m, &m->opt_v, &m->params16};
    size_t n = 0, b;
    int i;
    int64_t step = gpudl_model_step_count(m);
    for (i = 0; i < 4; i++) {
        if (!t[i]->data) continue;
        b = gpudl_tensor_bytes(t[i]);
        CHECK_OK(gpudl_tensor_download(m->ctx, t[i], buf + n, b));
        n += b;
    }
    if (m->scaler.data) {
        CHECK_OK(gpudl_model_scaler_state(m, (gpudl_scaler_state *)(void *)(buf + n)));
        n += sizeof(gpudl_scaler_state);
    }
    memcpy(buf + n, &step, sizeof step);
    return n + sizeof step;
}
#endif

/* gpudl_model_step is atomic: when a kernel launch or a library call of the
   step fails (each one in turn, refused as the device would refuse it),
   the weights, optimizer state, scaler state and step count are as before
   the call, and a retried step ends where a clean run does, bit for bit.
   Issue 26: a failing launch after the optimizer's (the scaler update)
   left the weights updated and the count not advanced, so a retry updated
   twice; FP16's unscale divided the gradients in place before the update,
   so a refused update then a retry unscaled them twice. */
static void test_gpu_step_atomic(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    static const atomic_case cases[] = {
        {"FP32 SGD momentum", GPUDL_PRECISION_FP32, GPUDL_OPTIM_SGD, 0.0f},
        {"FP16 SGD momentum", GPUDL_PRECISION_FP16, GPUDL_OPTIM_SGD, 0.0f},
        {"BF16 Adam", GPUDL_PRECISION_BF16, GPUDL_OPTIM_ADAM, 0.0f},
        {"FP32 Adam, clip", GPUDL_PRECISION_FP32, GPUDL_OPTIM_ADAM, 0.5f},
        {"FP16 AdamW, clip", GPUDL_PRECISION_FP16, GPUDL_OPTIM_ADAMW, 0.5f},
    };
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[2] = {8, 12}, N = 8, i;
    gpudl_tensor hx, hy, x, y;
    size_t k, cap = 64 << 10;
    unsigned char *clean = (unsigned char *)malloc(cap), *before = (unsigned char *)malloc(cap),
                  *after = (unsigned char *)malloc(cap);
    long long total = 0;
    NEED_GPU(g);
    hx = rnd(2, xs, -2, 2);
    hy = mk(c, GPUDL_I32, 1, &N);
    for (i = 0; i < N; i++) ((int32_t *)hy.data)[i] = (int32_t)(i % 5);
    x = to_dev(g, &hx);
    y = to_dev(g, &hy);
    g_fault_kinds = (1 << 1) | (1 << 2);   /* launches and library calls */
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const atomic_case *t = &cases[k];
        gpudl_model *m = atomic_model(g, t);
        size_t nclean, nb, na;
        long long sites, site;
        int step;
        for (step = 0; step < 4; step++) { atomic_pass(m, &x, &y); CHECK_OK(gpudl_model_step(m)); }
        nclean = atomic_snap(m, clean);
        gpudl_model_destroy(m);
        m = atomic_model(g, t);   /* the sites of one step */
        for (step = 0; step < 2; step++) { atomic_pass(m, &x, &y); CHECK_OK(gpudl_model_step(m)); }
        atomic_pass(m, &x, &y);
        g_fault_seen = 0;
        g_fault_at = 1LL << 40;
        CHECK_OK(gpudl_model_step(m));
        g_fault_at = -1;
        sites = g_fault_seen;
        gpudl_model_destroy(m);
        CHECKF(sites >= 1, "%s: a step has no launch", t->name);
        for (site = 0; site < sites; site++) {
            gpudl_status s;
            m = atomic_model(g, t);
            for (step = 0; step < 2; step++) { atomic_pass(m, &x, &y); CHECK_OK(gpudl_model_step(m)); }
            atomic_pass(m, &x, &y);
            nb = atomic_snap(m, before);
            g_fault_seen = 0;
            g_fault_at = site;
            s = gpudl_model_step(m);
            g_fault_at = -1;
            CHECKF(s != GPUDL_OK, "%s: the step with site %lld failing returned OK", t->name, site);
            na = atomic_snap(m, after);
            CHECKF(na == nb && memcmp(before, after, nb) == 0, "%s: the step failing at site %lld of %lld (kind %d: %s) "
                   "changed the model's state", t->name, site, sites, g_fault_hit, gpudl_ctx_last_error(g));
            CHECK_OK(gpudl_model_step(m));   /* the retry */
            atomic_pass(m, &x, &y);
            CHECK_OK(gpudl_model_step(m));
            na = atomic_snap(m, after);
            CHECKF(na == nclean && memcmp(clean, after, nclean) == 0, "%s: failing site %lld of %lld (kind %d), then a "
                   "retry, ends elsewhere than a clean run", t->name, site, sites, g_fault_hit);
            gpudl_model_destroy(m);
            total++;
        }
    }
    printf("    %lld failing sites of a step (launches and library calls) tried\n", total);
    gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy); gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
    free(clean); free(before); free(after);
#endif
}

/* >>model: the step at the fused floor (issue 26) --------------------------- */

#ifdef __CUEMU__
/* The models of bench/bench_train.c: the MLP 784-1024-1024-10 (SGD with
   momentum) and LeNet-5 (Adam), batch 128. */
static gpudl_model *floor_model(gpudl_ctx *g, int lenet, gpudl_precision prec) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    int64_t img[3] = {1, 28, 28};
    GPUDL_CHECK(gpudl_model_create(g, &m, 3, img));
    if (!lenet) {
        GPUDL_CHECK(gpudl_model_add_flatten(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 784, 1024));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 1024, 1024));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 1024, 10));
    } else {
        gpudl_conv2d_desc p2 = conv_desc(1, 2, 1);
        GPUDL_CHECK(gpudl_model_add_conv2d(m, 1, 6, 5, &p2));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
        GPUDL_CHECK(gpudl_model_add_conv2d(m, 6, 16, 5, NULL));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
        GPUDL_CHECK(gpudl_model_add_flatten(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 400, 120));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 120, 84));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 84, 10));
    }
    memset(&md, 0, sizeof md);
    md.max_batch = 128;
    md.seed = 1;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = lenet ? GPUDL_OPTIM_ADAM : GPUDL_OPTIM_SGD;
    od.lr = lenet ? 1e-3f : 0.01f;
    od.momentum = lenet ? 0.0f : 0.9f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, prec, NULL));
    return m;
}

static uint64_t floor_ops(const cuemu_counters *a, const cuemu_counters *b) {   /* copies too (issue 36) */
    return (b->kernel_launches - a->kernel_launches) + (b->library_calls - a->library_calls) + (b->memset_calls - a->memset_calls) +
           (b->memcpy_calls - a->memcpy_calls);
}
#endif

/* Device operations (kernels + library calls + memsets + copies) of a steady-state
   training step with the default settings, counted per phase, against
   issue 26's targets: within 20 % of the fused floor, MLP <= 12 and
   LeNet-5 <= 28, FP32 and FP16. The plain path (cublaslt = -1) is counted
   beside it, and must give the same numbers it gave before (the fallback
   stays as it was). A step allocates nothing and waits for nothing. */
static void test_gpu_emu_step_floor(void) {
#ifndef __CUEMU__
    SKIP("counts device operations on the emulated device (tests/emu) only");
#else
    /* met: the target is asserted (a case not there yet says by how much). Default path, per
       step: MLP FP32 12 = the batch gather, 3 forward GEMMs (bias, ReLU and its mask in the
       epilogue), the loss (1 kernel), 5 backward GEMMs (DRELU in dx, BGRADB in dW), the
       non-finite check and the update; FP16 the same 12, its batch gathered as F16
       (gpudl_dataset_set_dtype: the gather rounds, the forward casts nothing; with F32
       batches the forward's cast makes 13; without gpudl_dataset_set_dtype the batches follow the
       FP16 model: 12). LeNet-5 FP32 24: gather, 2 cuDNN conv+bias+ReLU,
       2 pools, 3 GEMMs, loss; backward 3 linear layers as the MLP's (6 GEMMs), pool+ReLU
       backward in one kernel twice, each conv's bias gradient in one kernel and its filter
       gradient (conv 2 also its data gradient); check, update. FP16 (F16 batches, no cast): each
       conv's 16-bit filter gradient widened into the f32 one (26). */
    static const struct { const char *name; int lenet; gpudl_precision prec; int lt; uint64_t target; int met, graph, f32set; } cases[] = {
        {"MLP FP32", 0, GPUDL_PRECISION_FP32, 1, 12, 1}, {"MLP FP16", 0, GPUDL_PRECISION_FP16, 1, 12, 1},
        {"MLP FP16 auto", 0, GPUDL_PRECISION_FP16, 1, 12, 1, 0, 2}, {"MLP FP16 F32 in", 0, GPUDL_PRECISION_FP16, 1, 13, 1, 0, 1},
        {"LeNet FP32", 1, GPUDL_PRECISION_FP32, 1, 28, 1}, {"LeNet FP16", 1, GPUDL_PRECISION_FP16, 1, 28, 1},
        {"MLP FP32 plain", 0, GPUDL_PRECISION_FP32, 0, 0, 0}, {"MLP FP16 plain", 0, GPUDL_PRECISION_FP16, 0, 0, 0},
        {"LeNet FP32 plain", 1, GPUDL_PRECISION_FP32, 0, 0, 0}, {"LeNet FP16 plain", 1, GPUDL_PRECISION_FP16, 0, 0, 0},
        /* gpudl_model_train_step, replaying its graph */
        {"MLP FP32 graph", 0, GPUDL_PRECISION_FP32, 1, 12, 1, 1}, {"MLP FP16 graph", 0, GPUDL_PRECISION_FP16, 1, 12, 1, 1},
        {"LeNet FP32 graph", 1, GPUDL_PRECISION_FP32, 1, 28, 1, 1}, {"LeNet FP16 graph", 1, GPUDL_PRECISION_FP16, 1, 28, 1, 1},
    };
    static const char *phase[6] = {"batch", "zero_grad", "forward", "loss", "backward", "step"};
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[4] = {256, 1, 28, 28}, ys[1] = {256};
    gpudl_tensor images = mk(c, GPUDL_U8, 4, xs), labels = mk(c, GPUDL_U8, 1, ys);
    size_t k;
    int64_t i;
    NEED_GPU(g);
    for (i = 0; i < 256 * 784; i++) ((uint8_t *)images.data)[i] = (uint8_t)((i * 37) % 251);
    for (i = 0; i < 256; i++) ((uint8_t *)labels.data)[i] = (uint8_t)(i % 10);
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gpudl_model *m;
        gpudl_dataset ds;
        gpudl_tensor x, y;
        cuemu_counters n[7];
        uint64_t total, kern = 0, lib = 0, mset = 0, api;
        int step, ph;
        char line[256];
        size_t len = 0;
        g->use_lt = cases[k].lt;
        m = floor_model(g, cases[k].lenet, cases[k].prec);
        CHECK_OK(gpudl_dataset_create(g, &ds, &images, &labels, 128, 0.5f, 0.25f));
        /* no cast in the forward: F16 batches chosen, or (auto) following the FP16 model; F32 in: the forward casts */
        if (cases[k].f32set == 1) CHECK_OK(gpudl_dataset_set_dtype(g, &ds, GPUDL_F32));
        else if (cases[k].prec == GPUDL_PRECISION_FP16 && !cases[k].f32set) CHECK_OK(gpudl_dataset_set_dtype(g, &ds, GPUDL_F16));
        if (cases[k].graph) {   /* 4 steps (the second key is captured at the third), the fifth counted */
            for (step = 0; step < 5; step++) {
                if (step == 4) { CHECK_OK(gpudl_ctx_sync(g)); cuemu_counters_reset(); }
                CHECK_OK(gpudl_dataset_batch(g, &ds, 0, &x, &y));
                CHECK_OK(gpudl_model_train_step(m, &x, &y));
            }
            cuemu_counters_get(&n[6]);
            total = n[6].kernel_launches + n[6].library_calls + n[6].memset_calls + n[6].memcpy_calls + n[6].graph_kernels +
                    n[6].graph_library_calls + n[6].graph_memsets;
            printf("    %-16s %2llu device ops (%llu graph launch: %llu kernels, %llu library calls, %llu memsets; %llu kernel "
                   "outside: the batch), %llu CUDA API calls\n", cases[k].name, (unsigned long long)total,
                   (unsigned long long)n[6].graph_launches, (unsigned long long)n[6].graph_kernels,
                   (unsigned long long)n[6].graph_library_calls, (unsigned long long)n[6].graph_memsets,
                   (unsigned long long)n[6].kernel_launches, (unsigned long long)n[6].runtime_api_calls);
            CHECKF(n[6].graph_launches == 1 && n[6].runtime_api_calls <= 10 + 2, "%s: %llu graph launches, %llu CUDA API calls "
                   "(the batch's gather 2, the step at most 10)", cases[k].name, (unsigned long long)n[6].graph_launches,
                   (unsigned long long)n[6].runtime_api_calls);
            if (cases[k].met)
                CHECKF(total <= cases[k].target, "%s: %llu device operations per step, issue 26's target is %llu", cases[k].name,
                       (unsigned long long)total, (unsigned long long)cases[k].target);
            gpudl_dataset_free(g, &ds);
            gpudl_model_destroy(m);
            continue;
        }
        for (step = 0; step < 3; step++) {
            if (step == 2) { CHECK_OK(gpudl_ctx_sync(g)); cuemu_counters_reset(); cuemu_counters_get(&n[0]); }
            CHECK_OK(gpudl_dataset_batch(g, &ds, step % 2, &x, &y));
            if (step == 2) cuemu_counters_get(&n[1]);
            CHECK_OK(gpudl_model_zero_grad(m));
            if (step == 2) cuemu_counters_get(&n[2]);
            CHECK_OK(gpudl_model_forward(m, &x, NULL));
            if (step == 2) cuemu_counters_get(&n[3]);
            CHECK_OK(gpudl_model_loss(m, &y));
            if (step == 2) cuemu_counters_get(&n[4]);
            CHECK_OK(gpudl_model_backward(m));
            if (step == 2) cuemu_counters_get(&n[5]);
            CHECK_OK(gpudl_model_step(m));
            if (step == 2) cuemu_counters_get(&n[6]);
        }
        for (ph = 0; ph < 6; ph++)
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %llu", ph ? ", " : "", phase[ph],
                                    (unsigned long long)floor_ops(&n[ph], &n[ph + 1]));
        total = floor_ops(&n[0], &n[6]);
        kern = n[6].kernel_launches; lib = n[6].library_calls; mset = n[6].memset_calls; api = n[6].runtime_api_calls;
        printf("    %-16s %2llu device ops (%2llu kernels, %2llu library calls, %llu memsets, %llu copies), %3llu CUDA API calls: "
               "%s\n", cases[k].name, (unsigned long long)total, (unsigned long long)kern, (unsigned long long)lib,
               (unsigned long long)mset, (unsigned long long)n[6].memcpy_calls, (unsigned long long)api, line);
        CHECKF(n[6].mallocs == 0 && n[6].frees == 0 && n[6].host_allocs == 0 && n[6].host_waits == 0,
               "%s: a steady-state step allocates or waits", cases[k].name);
        if (cases[k].target && cases[k].met)
            CHECKF(total <= cases[k].target, "%s: %llu device operations per step, issue 26's target is %llu", cases[k].name,
                   (unsigned long long)total, (unsigned long long)cases[k].target);
        else if (cases[k].target && total > cases[k].target)
            printf("    %-16s issue 26's target of %llu is not met yet (+%llu)\n", cases[k].name,
                   (unsigned long long)cases[k].target, (unsigned long long)(total - cases[k].target));
        gpudl_dataset_free(g, &ds);
        gpudl_model_destroy(m);
    }
    g->use_lt = 1;
    gpudl_tensor_free(c, &images);
    gpudl_tensor_free(c, &labels);
#endif
}

/* >>model: the training step as a CUDA graph (issue 26) --------------------- */

#ifndef GPUDL_NO_CUDA
static gpudl_model *graph_mlp(gpudl_ctx *g, int graphs, gpudl_precision prec, float lr, int adam) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    int64_t in[1] = {40};
    GPUDL_CHECK(gpudl_model_create(g, &m, 1, in));
    GPUDL_CHECK(gpudl_model_add_linear(m, 40, 64));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 64, 33));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 33, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = 32;
    md.seed = 5;
    md.graphs = graphs;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = adam ? GPUDL_OPTIM_ADAMW : GPUDL_OPTIM_SGD;
    od.lr = lr;
    od.momentum = adam ? 0.0f : 0.9f;
    od.schedule = adam ? GPUDL_SCHED_COSINE : GPUDL_SCHED_CONSTANT;   /* a learning rate that changes every step */
    od.warmup_steps = adam ? 2 : 0;
    od.total_steps = adam ? 20 : 0;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, prec, NULL));
    return m;
}

static int graph_same(gpudl_model *a, gpudl_model *b, int grads) {
    gpudl_tensor pa, pb, ga, gb, ha, hb;
    int same;
    CHECK_OK(gpudl_model_params(a, &pa, &ga));
    CHECK_OK(gpudl_model_params(b, &pb, &gb));
    ha = to_host(a->ctx, grads ? &ga : &pa);
    hb = to_host(b->ctx, grads ? &gb : &pb);
    same = memcmp(ha.data, hb.data, gpudl_tensor_bytes(&ha)) == 0;
    gpudl_tensor_free(cpu_ctx(), &ha);
    gpudl_tensor_free(cpu_ctx(), &hb);
    return same;
}
#endif

/* gpudl_model_train_step with graphs (the default) against the same model
   with graphs off (desc.graphs = -1): bit-identical weights, gradients and
   losses step after step, through a change of learning rate, of batch size
   and of precision, and gradients read between steps; once captured, a
   step is one graph launch and at most 10 CUDA runtime calls (emulator). */
static void test_gpu_graph_step(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[2] = {32, 40}, N = 32, i;
    gpudl_tensor hx, hy, x, y, xs8, ys8;
    int p, step;
    NEED_GPU(g);
    hx = rnd(2, xs, -1, 1);
    hy = mk(c, GPUDL_I32, 1, &N);
    for (i = 0; i < N; i++) ((int32_t *)hy.data)[i] = (int32_t)((i * 7) % 10);
    x = to_dev(g, &hx);
    y = to_dev(g, &hy);
    xs8 = x; xs8.shape[0] = 8;   /* the first 8 rows: another batch size */
    ys8 = y; ys8.shape[0] = 8;
    for (p = 0; p < 4; p++) {   /* FP32, FP16 with SGD; then AdamW on a cosine schedule */
        gpudl_precision prec = p & 1 ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_FP32;
        gpudl_model *a = graph_mlp(g, 0, prec, 0.05f, p >= 2), *b = graph_mlp(g, -1, prec, 0.05f, p >= 2);
        float la = 0, lb = 0;
        int bad = 0, graphed = 0, prev_graphed = 0;
        for (step = 0; step < 12; step++) {
            const gpudl_tensor *xx = step >= 8 && step < 10 ? &xs8 : &x, *yy = step >= 8 && step < 10 ? &ys8 : &y;
#ifdef __CUEMU__
            cuemu_counters n;
            CHECK_OK(gpudl_ctx_sync(g));
            cuemu_counters_reset();
#endif
            if (step == 6 && p < 2) {   /* a new learning rate: a new key */
                gpudl_optim_desc od;
                memset(&od, 0, sizeof od);
                od.kind = GPUDL_OPTIM_SGD; od.lr = 0.02f; od.momentum = 0.9f;
                CHECK_OK(gpudl_model_set_optimizer(a, &od));
                CHECK_OK(gpudl_model_set_optimizer(b, &od));
            }
            CHECK_OK(gpudl_model_train_step(a, xx, yy));
#ifdef __CUEMU__
            cuemu_counters_get(&n);
            if (n.graph_launches) {   /* a replay (the previous step a graph too) or a capture */
                int replay = prev_graphed;
                graphed++;
                CHECKF(n.graph_launches == 1 && n.kernel_launches == 0 && n.library_calls == 0 && n.host_waits == 0 &&
                       (!replay || n.runtime_api_calls <= 10), "%s step %d: %llu graph launches, %llu kernels, %llu library calls, %llu CUDA "
                       "calls, %llu waits", p & 1 ? "fp16" : "fp32", step, (unsigned long long)n.graph_launches,
                       (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
                       (unsigned long long)n.runtime_api_calls, (unsigned long long)n.host_waits);
                if (step == 5) printf("    %s, a replayed step: 1 graph launch (%llu kernels, %llu library calls in it), "
                                      "%llu CUDA runtime calls\n", p & 1 ? "FP16" : "FP32", (unsigned long long)n.graph_kernels,
                                      (unsigned long long)n.graph_library_calls, (unsigned long long)n.runtime_api_calls);
            }
            prev_graphed = n.graph_launches != 0;
#endif
            CHECK_OK(gpudl_model_train_step(b, xx, yy));
            CHECK_OK(gpudl_model_loss_value(a, &la));
            CHECK_OK(gpudl_model_loss_value(b, &lb));
            bad += la != lb;
            if (step == 4 || step == 11) CHECKF(graph_same(a, b, 1), "%s step %d: gradients differ", p & 1 ? "fp16" : "fp32", step);
            CHECK(gpudl_model_step_count(a) == gpudl_model_step_count(b));
        }
        CHECKF(bad == 0, "%s: %d of 12 losses differ with graphs", p & 1 ? "fp16" : "fp32", bad);
        CHECKF(graph_same(a, b, 0), "%s: the weights differ with graphs", p & 1 ? "fp16" : "fp32");
#ifdef __CUEMU__
        CHECKF(graphed >= 6, "%s: only %d of 12 steps were a graph", p & 1 ? "fp16" : "fp32", graphed);
#else
        (void)graphed; (void)prev_graphed;
#endif
        gpudl_model_destroy(a);
        gpudl_model_destroy(b);
    }
    gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy); gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
#endif
}

/* On the GPU zero_grad issues no memset for models of linear and conv2d
   layers (the next backward writes the gradients): what a program sees must
   not change. A second backward adds to the first (2x), the gradients read
   through gpudl_model_params after zero_grad are zeros, and a backward after
   zero_grad gives the first backward's values again (no stale sums added),
   with cuBLASLt's epilogues and on the plain path. */
static void test_gpu_zero_grad_contract(void) {
#ifdef GPUDL_NO_CUDA
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#else
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[4] = {6, 1, 12, 12}, N = 6, i, n;
    gpudl_tensor hx = rnd(4, xs, -1, 1), hy = mk(c, GPUDL_I32, 1, &N), x, y, gv, once, twice, zero, again;
    int lt, bad2 = 0, bad0 = 0, bad1 = 0;
    NEED_GPU(g);
    for (i = 0; i < N; i++) ((int32_t *)hy.data)[i] = (int32_t)(i % 10);
    x = to_dev(g, &hx);
    y = to_dev(g, &hy);
    for (lt = 0; lt <= 1; lt++) {
        gpudl_model *m;
        g->use_lt = lt;
        m = pair_model(g);
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_forward(m, &x, NULL)); CHECK_OK(gpudl_model_loss(m, &y)); CHECK_OK(gpudl_model_backward(m));
        CHECK_OK(gpudl_model_params(m, NULL, &gv));
        once = to_host(g, &gv);
        CHECK_OK(gpudl_model_forward(m, &x, NULL)); CHECK_OK(gpudl_model_loss(m, &y)); CHECK_OK(gpudl_model_backward(m));
        twice = to_host(g, &gv);
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_params(m, NULL, &gv));
        zero = to_host(g, &gv);
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_forward(m, &x, NULL)); CHECK_OK(gpudl_model_loss(m, &y)); CHECK_OK(gpudl_model_backward(m));
        again = to_host(g, &gv);
        n = gpudl_tensor_numel(&once);
        for (i = 0; i < n; i++) {
            bad2 += fabsf(F(&twice)[i] - 2.0f * F(&once)[i]) > 1e-5f * (1.0f + fabsf(F(&once)[i]));
            bad0 += F(&zero)[i] != 0.0f;
            bad1 += F(&again)[i] != F(&once)[i];
        }
        CHECKF(bad2 == 0 && bad0 == 0 && bad1 == 0, "cuBLASLt %d: %d gradients did not accumulate, %d not zero after "
               "zero_grad, %d differ from the first backward's after zero_grad", lt, bad2, bad0, bad1);
        gpudl_tensor_free(c, &once); gpudl_tensor_free(c, &twice); gpudl_tensor_free(c, &zero); gpudl_tensor_free(c, &again);
        gpudl_model_destroy(m);
    }
    g->use_lt = 1;
    gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy); gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
#endif
}

/* >>model: a batch already in the activations' dtype (issue 26) ------------ */

static gpudl_model *input16_model(gpudl_ctx *ctx, gpudl_precision prec) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    int64_t img[3] = {1, 28, 28};
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, img));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 784, 40));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 40, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = 24;
    md.seed = 9;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_SGD;
    od.lr = 0.05f;
    od.momentum = 0.9f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, prec, NULL));
    return m;
}

/* FP16 and BF16 training fed the dataset's 16-bit batches
   (gpudl_dataset_set_dtype: no cast in the forward) against the same model
   fed its F32 batches (cast in the forward): the same losses and weights
   bit for bit over 8 steps of changing batches (the short last one
   included), the 16-bit side through gpudl_model_train_step (on the GPU a
   graph from the third step on, replaying the new batch buffer). x of
   another 16-bit dtype than the activations' is refused. */
static void input16_case(gpudl_ctx *ctx) {
    static const gpudl_precision precs[2] = {GPUDL_PRECISION_FP16, GPUDL_PRECISION_BF16};
    static const gpudl_dtype dts[2] = {GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    int64_t xs[4] = {60, 1, 28, 28}, N = 60, i;
    gpudl_tensor images = mk(c, GPUDL_U8, 4, xs), labels = mk(c, GPUDL_U8, 1, &N);
    int p;
    for (i = 0; i < 60 * 784; i++) ((uint8_t *)images.data)[i] = (uint8_t)(gpudl_rng_bits(21, (uint64_t)i) & 255);
    for (i = 0; i < 60; i++) ((uint8_t *)labels.data)[i] = (uint8_t)(gpudl_rng_bits(22, (uint64_t)i) % 10);
    for (p = 0; p < 2; p++) {
        gpudl_model *a = input16_model(ctx, precs[p]), *b = input16_model(ctx, precs[p]);
        gpudl_dataset da, db;
        gpudl_tensor x, y, pa, pb, ga, gb, ha, hb;
        int step, bad = 0, graphed = 0;
        float la = 0, lb = 0;
        CHECK_OK(gpudl_dataset_create(ctx, &da, &images, &labels, 24, 0.2860f, 0.3530f));
        CHECK_OK(gpudl_dataset_create(ctx, &db, &images, &labels, 24, 0.2860f, 0.3530f));
        CHECK_OK(gpudl_dataset_set_dtype(ctx, &da, GPUDL_F32));   /* F32 though every model is 16-bit: the forward casts */
        CHECK_OK(gpudl_dataset_set_dtype(ctx, &db, dts[p]));
        CHECK_OK(gpudl_dataset_shuffle(ctx, &da, 1, 1));
        CHECK_OK(gpudl_dataset_shuffle(ctx, &db, 1, 1));
        for (step = 0; step < 8; step++) {
            int64_t bi = step < 6 ? step % 2 : 2;   /* two full batches in turn, then the short one (12) */
#ifdef __CUEMU__
            cuemu_counters n;
#endif
            CHECK_OK(gpudl_dataset_batch(ctx, &da, bi, &x, &y));
            CHECK_OK(gpudl_model_zero_grad(a));
            CHECK_OK(gpudl_model_forward(a, &x, NULL));
            CHECK_OK(gpudl_model_loss(a, &y));
            CHECK_OK(gpudl_model_backward(a));
            CHECK_OK(gpudl_model_step(a));
            CHECK_OK(gpudl_dataset_batch(ctx, &db, bi, &x, &y));
            CHECK(x.dtype == dts[p]);
#ifdef __CUEMU__
            CHECK_OK(gpudl_ctx_sync(ctx));
            cuemu_counters_reset();
#endif
            CHECK_OK(gpudl_model_train_step(b, &x, &y));
#ifdef __CUEMU__
            cuemu_counters_get(&n);
            if (n.graph_launches == 1 && n.kernel_launches == 0 && n.library_calls == 0) graphed++;
#endif
            CHECK_OK(gpudl_model_loss_value(a, &la));
            CHECK_OK(gpudl_model_loss_value(b, &lb));
            bad += memcmp(&la, &lb, sizeof la) != 0;
        }
        CHECKF(bad == 0, "%s on %s: %d of 8 losses differ with 16-bit batches", gpudl_dtype_name(dts[p]),
               ctx == c ? "the CPU" : "the GPU", bad);
        CHECK_OK(gpudl_model_params(a, &pa, &ga));
        CHECK_OK(gpudl_model_params(b, &pb, &gb));
        ha = to_host(ctx, &pa);
        hb = to_host(ctx, &pb);
        CHECKF(memcmp(ha.data, hb.data, gpudl_tensor_bytes(&ha)) == 0, "%s on %s: the weights differ with 16-bit batches",
               gpudl_dtype_name(dts[p]), ctx == c ? "the CPU" : "the GPU");
        gpudl_tensor_free(c, &ha);
        gpudl_tensor_free(c, &hb);
#ifdef __CUEMU__
        /* steps 2, 3, 4 (captured at 2; 1 and 3 of the same key) and 7 (the short batch's second); 5 and 6 a new key */
        CHECKF(graphed >= 3, "%s: %d of 8 steps replayed a graph", gpudl_dtype_name(dts[p]), graphed);
#else
        (void)graphed;
#endif
        /* the other 16-bit dtype is not the activations': refused, not reinterpreted */
        CHECK_OK(gpudl_dataset_set_dtype(ctx, &db, dts[1 - p]));
        CHECK_OK(gpudl_dataset_batch(ctx, &db, 0, &x, &y));
        CHECK_ST(gpudl_model_forward(b, &x, NULL), GPUDL_ERR_INVALID_ARG);
        {
            char want[48];
            snprintf(want, sizeof want, "activations' %s", gpudl_dtype_name(dts[p]));
            CHECKF(strstr(gpudl_ctx_last_error(ctx), want) != NULL, "%s", gpudl_ctx_last_error(ctx));
        }
        gpudl_model_destroy(a);
        gpudl_model_destroy(b);
        gpudl_dataset_free(ctx, &da);
        gpudl_dataset_free(ctx, &db);
    }
    {   /* an FP32 model takes f32 only */
        gpudl_model *m = input16_model(ctx, GPUDL_PRECISION_FP32);
        gpudl_dataset d;
        gpudl_tensor x, y;
        memset(&x, 0, sizeof x); memset(&y, 0, sizeof y);   /* (gcc cannot tell that a failed batch would stop here) */
        CHECK_OK(gpudl_dataset_create(ctx, &d, &images, &labels, 24, 0.2860f, 0.3530f));
        CHECK_OK(gpudl_dataset_set_dtype(ctx, &d, GPUDL_F16));
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 0, &x, &y));
        CHECK_ST(gpudl_model_forward(m, &x, NULL), GPUDL_ERR_INVALID_ARG);
        CHECKF(strstr(gpudl_ctx_last_error(ctx), "takes f32") != NULL, "%s", gpudl_ctx_last_error(ctx));
        gpudl_model_destroy(m);
        gpudl_dataset_free(ctx, &d);
    }
    {   /* without gpudl_dataset_set_dtype the batches follow the context's models (issue 36) */
        gpudl_model *m16, *m32, *mb;
        gpudl_dataset d;
        gpudl_tensor x, y;
        memset(&x, 0, sizeof x); memset(&y, 0, sizeof y);
        CHECK_OK(gpudl_dataset_create(ctx, &d, &images, &labels, 24, 0.2860f, 0.3530f));
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 0, &x, &y));
        CHECKF(x.dtype == GPUDL_F32, "no model: %s batches", gpudl_dtype_name(x.dtype));
        m16 = input16_model(ctx, GPUDL_PRECISION_FP16);
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 1, &x, &y));
        CHECKF(x.dtype == GPUDL_F16, "an FP16 model: %s batches", gpudl_dtype_name(x.dtype));
        CHECK_OK(gpudl_model_forward(m16, &x, NULL));
        m32 = input16_model(ctx, GPUDL_PRECISION_FP32);
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 1, &x, &y));
        CHECKF(x.dtype == GPUDL_F32, "FP16 and FP32 models: %s batches", gpudl_dtype_name(x.dtype));
        CHECK_OK(gpudl_model_forward(m32, &x, NULL));
        CHECK_OK(gpudl_model_forward(m16, &x, NULL));   /* cast in the forward */
        gpudl_model_destroy(m32);
        mb = input16_model(ctx, GPUDL_PRECISION_BF16);
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 0, &x, &y));
        CHECKF(x.dtype == GPUDL_F32, "FP16 and BF16 models: %s batches", gpudl_dtype_name(x.dtype));
        gpudl_model_destroy(m16);
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 0, &x, &y));
        CHECKF(x.dtype == GPUDL_BF16, "a BF16 model: %s batches", gpudl_dtype_name(x.dtype));
        CHECK_OK(gpudl_model_forward(mb, &x, NULL));
        CHECK_OK(gpudl_dataset_set_dtype(ctx, &d, GPUDL_F32));   /* chosen: it stays */
        CHECK_OK(gpudl_dataset_batch(ctx, &d, 0, &x, &y));
        CHECKF(x.dtype == GPUDL_F32, "set_dtype(F32), a BF16 model: %s batches", gpudl_dtype_name(x.dtype));
        gpudl_model_destroy(mb);
        gpudl_dataset_free(ctx, &d);
    }
    gpudl_tensor_free(c, &images);
    gpudl_tensor_free(c, &labels);
}

HARNESS_MAYBE_UNUSED static void test_model_input_16bit(void) { input16_case(cpu_ctx()); }

HARNESS_MAYBE_UNUSED static void test_gpu_model_input_16bit(void) {
    NEED_GPU(g);
    input16_case(g);
}
