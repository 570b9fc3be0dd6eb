/* gpudl tests: amp (mixed precision). The loss scaler's state machine, the
   non-finite detector, a persistent overflow, the scaler's state through a
   checkpoint, FP16/BF16 training as accurate as FP32, the memory report;
   in the nvcc build, mixed-precision steps on the GPU and FP16/BF16 accuracy
   on Fashion-MNIST against FP32 and the CPU.
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* >>amp: mixed precision -------------------------------------------------- */

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
    int64_t n = flat_len(m), i, k;
    memset(&P, 0, sizeof P); memset(&G, 0, sizeof G); memset(&st, 0, sizeof st);
    float *w0 = (float *)malloc(sizeof(float) * (size_t)n), *m0 = (float *)malloc(sizeof(float) * (size_t)n);
    float *v0 = (float *)malloc(sizeof(float) * (size_t)n);
    int64_t spots[6], bad_cases = 0;
    float vals[4];
    const gpudl__layer *l0 = &m->layers[0], *l2 = &m->layers[2];
    vals[0] = NAN; vals[1] = INFINITY; vals[2] = -INFINITY; vals[3] = 65520.0f;   /* the last: rounds to Inf in FP16 */
    spots[0] = l0->poff[0];                       /* first element of the first tensor */
    spots[1] = l0->poff[0] + 29;                  /* last of 0.weight (5x6) */
    spots[2] = l0->poff[1] + 4;                   /* last of 0.bias */
    spots[3] = l2->poff[0] + 7;                   /* inside 2.weight */
    spots[4] = l2->poff[1];                       /* first of 2.bias */
    spots[5] = l2->poff[1] + 3;                   /* the tail: the very last parameter */
    CHECK_OK(gpudl_model_params(m, &P, &G));
    for (i = 0; i < 6; i++)
        for (k = 0; k < 4; k++) {
            int64_t j;
            for (j = 0; j < n; j++) F(&G)[j] = (float)((j % 7) - 3);   /* ordinary gradients */
            F(&G)[spots[i]] = vals[k];
            memcpy(w0, P.data, sizeof(float) * (size_t)n);
            memcpy(m0, m->opt_m.data, sizeof(float) * (size_t)n);
            memcpy(v0, m->opt_v.data, sizeof(float) * (size_t)n);
            CHECK_OK(gpudl_model_step(m));
            CHECK_OK(gpudl_model_scaler_state(m, &st));
            if (st.last_bad != spots[i] || st.found_inf != 0 || memcmp(w0, P.data, sizeof(float) * (size_t)n) ||
                memcmp(m0, m->opt_m.data, sizeof(float) * (size_t)n) || memcmp(v0, m->opt_v.data, sizeof(float) * (size_t)n))
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
    n = flat_len(m);
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
    int64_t j, n = flat_len(a);
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
   activations at most 0.6x FP32's (the target), the weight copy
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
            CHECK(r.params == (size_t)flat_len(m) * 4 && r.grads == r.params && r.optimizer == 2 * r.params);
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
        n = flat_len(m);
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

/* Test accuracy of the small CNN (Adam) trained for `epochs` on ctx with the
   same seeds and batches whatever the device and precision. */
static double train_small_cnn(gpudl_ctx *ctx, gpudl_precision prec, const gpudl_tensor *xtr, const gpudl_tensor *ytr,
                              const gpudl_tensor *xte, const gpudl_tensor *yte, int epochs) {
    gpudl_dataset tr, te;
    gpudl_tensor count, x, y;
    gpudl_model *m;
    int64_t one = 1, s, b, nb;
    float correct = 0;
    double acc;
    CHECK_OK(gpudl_dataset_create(ctx, &tr, xtr, ytr, 64, 0.2860f, 0.3530f));
    CHECK_OK(gpudl_dataset_create(ctx, &te, xte, yte, 64, 0.2860f, 0.3530f));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &count, GPUDL_F32, 1, &one));
    if (g_failed_checks) return 0;
    m = small_cnn(ctx, 1, GPUDL_OPTIM_ADAM);
    CHECK_OK(gpudl_model_set_precision(m, prec, NULL));
    gpudl_ctx_set_seed(ctx, 1234);
    nb = gpudl_dataset_num_batches(&tr);
    for (s = 0; s < epochs * nb && !g_failed_checks; s++) {
        b = s % nb;
        if (b == 0) CHECK_OK(gpudl_dataset_shuffle(ctx, &tr, 1, (uint64_t)(s / nb)));
        CHECK_OK(gpudl_dataset_batch(ctx, &tr, b, &x, &y));
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_forward(m, &x, NULL));
        CHECK_OK(gpudl_model_loss(m, &y));
        CHECK_OK(gpudl_model_backward(m));
        CHECK_OK(gpudl_model_step(m));
    }
    gpudl_model_train(m, 0);
    CHECK_OK(gpudl_tensor_fill(ctx, &count, 0.0f));
    for (b = 0; b < gpudl_dataset_num_batches(&te); b++) {
        CHECK_OK(gpudl_dataset_batch(ctx, &te, b, &x, &y));
        CHECK_OK(gpudl_model_forward(m, &x, NULL));
        CHECK_OK(gpudl_model_count_correct(m, &y, &count));
    }
    CHECK_OK(gpudl_tensor_item(ctx, &count, 0, &correct));
    acc = correct / (double)te.n;
    gpudl_model_destroy(m);
    gpudl_tensor_free(ctx, &count);
    gpudl_dataset_free(ctx, &tr); gpudl_dataset_free(ctx, &te);
    return acc;
}

/* FP16 and BF16 reach FP32's test accuracy on the GPU, FP32 on the GPU
   matches FP32 on the CPU (the reference: same seeds, same batches), and
   FP32 clears an absolute floor. On a real GPU: the full Fashion-MNIST
   (GPUDL_FULL_DATA, set by make test-gpu when make data finds it), 3 epochs,
   within 0.5 points, floor 87%. On the emulated device, where the full set
   would take half an hour: the shipped subset (2000 / 1000 images,
   GPUDL_TEST_DATA), 3 epochs, within 2.5 points (1000 test images: one point
   is 10 images), floor 70%. */
static void test_gpu_mixed_precision_full(void) {
    gpudl_ctx *c = cpu_ctx();
    const char *dir = getenv("GPUDL_FULL_DATA"), *what = "full Fashion-MNIST";
    gpudl_tensor xtr, ytr, xte, yte;
    double acc[3], cpu, within = 0.005, floor_acc = 0.87;
    int p;
    NEED_GPU(g);
#ifdef __CUEMU__
    if (!dir) {
        dir = getenv("GPUDL_TEST_DATA");
        what = "the Fashion-MNIST subset on the emulated device";
        within = 0.025;
        floor_acc = 0.70;
    }
#endif
    if (!dir) SKIP("GPUDL_FULL_DATA is not set (make test-gpu sets it when make data finds the full set)");
    CHECK_OK(gpudl_mnist_load(c, dir, 1, &xtr, &ytr));
    CHECK_OK(gpudl_mnist_load(c, dir, 0, &xte, &yte));
    if (g_failed_checks) return;
#ifndef __CUEMU__
    if (xtr.shape[0] < 60000) {
        gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
        SKIP("%s holds %lld training images, not the full 60000", dir, (long long)xtr.shape[0]);
    }
#endif
    for (p = 0; p < 3; p++)
        acc[p] = train_small_cnn(g, p == 0 ? GPUDL_PRECISION_FP32 : p == 1 ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_BF16,
                                 &xtr, &ytr, &xte, &yte, 3);
    cpu = train_small_cnn(c, GPUDL_PRECISION_FP32, &xtr, &ytr, &xte, &yte, 3);
    printf("    %s, 3 epochs: test accuracy on the GPU FP32 %.2f%%, FP16 %.2f%%, BF16 %.2f%%; on the CPU FP32 %.2f%%\n", what,
           100 * acc[0], 100 * acc[1], 100 * acc[2], 100 * cpu);
    CHECKF(acc[0] >= floor_acc, "FP32 on the GPU reached %.2f%%, below the floor of %.0f%%", 100 * acc[0], 100 * floor_acc);
    CHECKF(fabs(acc[0] - cpu) <= within, "FP32: GPU %.4f vs CPU %.4f: more than %.1f points apart", acc[0], cpu, 100 * within);
    CHECKF(fabs(acc[1] - acc[0]) <= within && fabs(acc[2] - acc[0]) <= within,
           "FP16 %.4f / BF16 %.4f vs FP32 %.4f: more than %.1f points apart", acc[1], acc[2], acc[0], 100 * within);
    gpudl_tensor_free(c, &xtr); gpudl_tensor_free(c, &ytr); gpudl_tensor_free(c, &xte); gpudl_tensor_free(c, &yte);
}

/* >>amp: the non-finite check of FP32 and BF16 ---------------------------- */

/* One NaN in the input: FP32 and BF16 steps must not write NaN into the
   weights and moments (and from there into a checkpoint); the step says
   GPUDL_ERR_NONFINITE and names the first tensor with a non-finite
   gradient. On the GPU the error comes with the next step (nothing waits).
   check_finite = -1 turns the check off: then the NaN goes through. */
static void check_nonfinite_step(gpudl_ctx *c, gpudl_precision p, int check_finite) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_tensor P, hx, x, hy, y;
    int64_t v[1] = {6}, xs[2] = {3, 6}, N = 3, i, n;
    float *w0, *m0;
    gpudl_status s;
    int gpu = gpudl_ctx_device(c) == GPUDL_DEVICE_CUDA, bad = 0;
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, v));
    GPUDL_CHECK(gpudl_model_add_linear(m, 6, 5));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 5, 4));
    memset(&md, 0, sizeof md);
    md.check_finite = check_finite;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, p, NULL));
    hx = rnd(2, xs, -1, 1);
    F(&hx)[7] = NAN;
    hy = mk(cpu_ctx(), GPUDL_I32, 1, &N);
    for (i = 0; i < N; i++) ((int32_t *)hy.data)[i] = (int32_t)i;
    x = gpu ? to_dev(c, &hx) : hx;
    y = gpu ? to_dev(c, &hy) : hy;
    CHECK_OK(gpudl_model_params(m, &P, NULL));
    n = gpudl_tensor_numel(&P);
    w0 = (float *)malloc(sizeof(float) * (size_t)n);
    m0 = (float *)malloc(sizeof(float) * (size_t)n);
    CHECK_OK(gpudl_tensor_download(c, &P, w0, sizeof(float) * (size_t)n));
    CHECK_OK(gpudl_model_zero_grad(m));
    CHECK_OK(gpudl_model_forward(m, &x, NULL));
    CHECK_OK(gpudl_model_loss(m, &y));
    CHECK_OK(gpudl_model_backward(m));
    s = gpudl_model_step(m);
    if (gpu && s == GPUDL_OK && check_finite >= 0) {   /* the GPU's verdict arrives with the next step */
        CHECK_OK(gpudl_ctx_sync(c));
        s = gpudl_model_step(m);
    }
    CHECK_OK(gpudl_tensor_download(c, &P, m0, sizeof(float) * (size_t)n));
    for (i = 0; i < n; i++) bad += m0[i] != m0[i];
    if (check_finite < 0) {
        CHECKF(s == GPUDL_OK && bad > 0, "precision %d, check off: step -> %s with %d NaN weights", (int)p,
               gpudl_status_string(s), bad);
    } else {
        CHECKF(s == GPUDL_ERR_NONFINITE, "precision %d: step -> %s, want nonfinite", (int)p, gpudl_status_string(s));
        CHECKF(strstr(gpudl_ctx_last_error(c), "'0.weight'") != NULL, "%s", gpudl_ctx_last_error(c));
        CHECKF(memcmp(w0, m0, sizeof(float) * (size_t)n) == 0 && bad == 0, "precision %d: the skipped step changed the "
               "weights (%d NaN)", (int)p, bad);
        CHECK_OK(gpudl_model_zero_grad(m));
        CHECK_OK(gpudl_model_step(m));   /* reported once; a step with finite gradients runs */
    }
    free(w0); free(m0);
    if (gpu) { gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); }
    gpudl_tensor_free(cpu_ctx(), &hx); gpudl_tensor_free(cpu_ctx(), &hy);
    gpudl_model_destroy(m);
}

static void test_nonfinite_fp32_bf16(void) {
    check_nonfinite_step(cpu_ctx(), GPUDL_PRECISION_FP32, 0);
    check_nonfinite_step(cpu_ctx(), GPUDL_PRECISION_BF16, 0);
    check_nonfinite_step(cpu_ctx(), GPUDL_PRECISION_FP32, -1);
}

static void test_gpu_nonfinite_fp32_bf16(void) {
    NEED_GPU(g);
    check_nonfinite_step(g, GPUDL_PRECISION_FP32, 0);
    check_nonfinite_step(g, GPUDL_PRECISION_BF16, 0);
    check_nonfinite_step(g, GPUDL_PRECISION_FP32, -1);
}
