/* gpudl tests: optim. Each optimizer's steps against PyTorch's update
   rules in float64, and the learning-rate schedules.
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* >>optim ----------------------------------------------------------------- */

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
        n = flat_len(m);
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

/* The update over a long, odd-length buffer on 3 threads (each thread's
   share vectorised, the rest scalar) against gpudl_optim_update element by
   element, the rule the GPU kernel runs: bit-identical, for every rule and
   option, the first step (momentum starts at g) included. */
static void test_optimizers_vectorised(void) {
    static const struct { gpudl_optim_kind kind; float mom, wd; int nesterov; } cases[] = {
        {GPUDL_OPTIM_SGD, 0, 0, 0}, {GPUDL_OPTIM_SGD, 0, 3e-2f, 0}, {GPUDL_OPTIM_SGD, 0.9f, 0, 0}, {GPUDL_OPTIM_SGD, 0.9f, 1e-2f, 0},
        {GPUDL_OPTIM_SGD, 0.8f, 0, 1}, {GPUDL_OPTIM_SGD, 0.8f, 1e-2f, 1}, {GPUDL_OPTIM_ADAM, 0, 0, 0},
        {GPUDL_OPTIM_ADAM, 0, 1e-2f, 0}, {GPUDL_OPTIM_ADAMW, 0, 0.1f, 0}, {GPUDL_OPTIM_ADAMW, 0, 0, 0},
    };
    gpudl_ctx *c;
    gpudl_ctx_desc cd;
    size_t s;
    memset(&cd, 0, sizeof cd);
    cd.device = GPUDL_DEVICE_CPU;
    cd.num_threads = 3;
    CHECK_OK(gpudl_ctx_create(&cd, &c));
    for (s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        gpudl_model *m;
        gpudl_optim_desc od;
        gpudl_tensor P, G;
        int64_t v[1] = {301}, n, i, bad = -1;
        float *w, *mb, *vb;
        int step;
        memset(&od, 0, sizeof od);
        memset(&P, 0, sizeof P);
        memset(&G, 0, sizeof G);
        CHECK_OK(gpudl_model_create(c, &m, 1, v));
        CHECK_OK(gpudl_model_add_linear(m, 301, 257));   /* 77,614 parameters: over the threading threshold */
        CHECK_OK(gpudl_model_build(m, NULL));
        od.kind = cases[s].kind; od.momentum = cases[s].mom; od.weight_decay = cases[s].wd; od.nesterov = cases[s].nesterov;
        CHECK_OK(gpudl_model_set_optimizer(m, &od));
        CHECK_OK(gpudl_model_params(m, &P, &G));
        n = gpudl_tensor_numel(&P);
        w = (float *)calloc((size_t)n, sizeof(float)); mb = (float *)calloc((size_t)n, sizeof(float));
        vb = (float *)calloc((size_t)n, sizeof(float));
        if (!w || !mb || !vb) { CHECK(0); return; }
        memcpy(w, F(&P), sizeof(float) * (size_t)n);
        for (step = 0; step < 3 && bad < 0; step++) {
            gpudl_optim_hp h;
            for (i = 0; i < n; i++) F(&G)[i] = (float)(gpudl_rng_uniform(7 + (uint64_t)step, (uint64_t)i) - 0.5) * 0.1f;
            memset(&h, 0, sizeof h);
            h.kind = (int)m->opt.kind; h.nesterov = m->opt.nesterov; h.first = step == 0;
            h.lr = gpudl_optim_lr(&m->opt, step); h.momentum = m->opt.momentum; h.weight_decay = m->opt.weight_decay;
            h.beta1 = m->opt.beta1; h.beta2 = m->opt.beta2; h.eps = m->opt.eps;
            h.bc1 = 1.0f - (float)pow(m->opt.beta1, (double)(step + 1));
            h.bc2 = 1.0f - (float)pow(m->opt.beta2, (double)(step + 1));
            for (i = 0; i < n; i++) gpudl_optim_update(&h, &w[i], F(&G)[i], &mb[i], &vb[i]);
            CHECK_OK(gpudl_model_step(m));
            for (i = 0; i < n && bad < 0; i++)
                if (memcmp(&w[i], &F(&P)[i], sizeof(float)) != 0) bad = i;
        }
        CHECKF(bad < 0, "case %zu, step %d: weight %lld is %.9g, the scalar rule gives %.9g", s, step - 1, (long long)bad,
               bad < 0 ? 0.0 : (double)F(&P)[bad], bad < 0 ? 0.0 : (double)w[bad]);
        free(w); free(mb); free(vb);
        gpudl_model_destroy(m);
    }
    gpudl_ctx_destroy(c);
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
