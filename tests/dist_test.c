/* Data-parallel tests, run by mpirun with 2 ranks (tests/run_dist.sh).
   CPU:  mpicc -std=c99 -O2 -fopenmp -DGPUDL_NO_CUDA -DGPUDL_MPI tests/dist_test.c -lm
   GPU:  the same through nvcc (or tests/emu/nvcc-emu) with -DGPUDL_NCCL -lnccl: --gpu
   Run:  mpirun -np 2 ./dist_test [--gpu] all | die | mismatch

   all       2 ranks with half batches train like 1 rank with the whole batch
             (weights equal to FP32 rounding); a checkpoint of the 2-rank model
             loads on 1 rank and evaluates the same; an FP16 overflow on one
             rank only skips the step on both; dropout differs across ranks.
   die       rank 1 exits during training; rank 0 must return GPUDL_ERR_DIST
             within the timeout, with a message that says so.
   mismatch  rank 1 builds another model: set_dist fails on both, naming it.
   Rank 0 prints "ok NAME ..." / "FAIL NAME ..." and the summary line. */
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"

static gpudl_ctx *ctx;
static gpudl_dist *dist;
static int rank, size, passed, failed, on_gpu;
static const char *data_dir = "build/test/data";

#define EXPECT(cond, name, ...) do { int ok_ = (cond); \
    if (rank == 0) { printf("%s %-34s ", ok_ ? "ok     " : "FAIL   ", name); printf(__VA_ARGS__); printf("\n"); fflush(stdout); } \
    if (ok_) passed++; else failed++; } while (0)

/* 784 -> 64 -> ReLU -> 10 (+ dropout when asked), SGD with momentum. */
static gpudl_model *mlp(int64_t max_batch, float dropout) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    int64_t in[3] = {1, 28, 28};
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, in));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 784, 64));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    if (dropout > 0) GPUDL_CHECK(gpudl_model_add_dropout(m, dropout));
    GPUDL_CHECK(gpudl_model_add_linear(m, 64, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = max_batch;
    md.seed = 42;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.lr = 0.05f;
    od.momentum = 0.9f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    return m;
}

static gpudl_status train_step(gpudl_model *m, gpudl_dataset *ds, int64_t b) {
    gpudl_tensor x, y;
    gpudl_status s = gpudl_dataset_batch(ctx, ds, b, &x, &y);
    if (s == GPUDL_OK) s = gpudl_model_zero_grad(m);
    if (s == GPUDL_OK) s = gpudl_model_forward(m, &x, NULL);
    if (s == GPUDL_OK) s = gpudl_model_loss(m, &y);
    if (s == GPUDL_OK) s = gpudl_model_backward(m);
    if (s == GPUDL_OK) s = gpudl_model_step(m);
    return s;
}

static float *host_params(gpudl_model *m, int64_t *n) {
    gpudl_tensor p;
    float *h;
    GPUDL_CHECK(gpudl_model_params(m, &p, NULL));
    *n = gpudl_tensor_numel(&p);
    h = (float *)malloc(sizeof(float) * (size_t)*n);
    GPUDL_CHECK(gpudl_tensor_download(ctx, &p, h, sizeof(float) * (size_t)*n));
    return h;
}

static double accuracy(gpudl_model *m, gpudl_dataset *te) {
    gpudl_tensor x, y, count;
    int64_t one = 1, b;
    float c = 0;
    GPUDL_CHECK(gpudl_tensor_create(ctx, &count, GPUDL_F32, 1, &one));
    GPUDL_CHECK(gpudl_tensor_fill(ctx, &count, 0.0f));
    gpudl_model_train(m, 0);
    for (b = 0; b < gpudl_dataset_num_batches(te); b++) {
        GPUDL_CHECK(gpudl_dataset_batch(ctx, te, b, &x, &y));
        GPUDL_CHECK(gpudl_model_forward(m, &x, NULL));
        GPUDL_CHECK(gpudl_model_count_correct(m, &y, &count));
    }
    GPUDL_CHECK(gpudl_tensor_item(ctx, &count, 0, &c));
    gpudl_tensor_free(ctx, &count);
    gpudl_model_train(m, 1);
    return c / (double)te->n;
}

static int load_data(gpudl_dataset *tr, gpudl_dataset *te, int64_t batch) {
    gpudl_tensor xtr, ytr, xte, yte;
    char p[4][512];
    gpudl_ctx *host = NULL;
    gpudl_ctx_desc d;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    GPUDL_CHECK(gpudl_ctx_create(&d, &host));
    snprintf(p[0], 512, "%s/train-images-idx3-ubyte", data_dir);
    snprintf(p[1], 512, "%s/train-labels-idx1-ubyte", data_dir);
    snprintf(p[2], 512, "%s/t10k-images-idx3-ubyte", data_dir);
    snprintf(p[3], 512, "%s/t10k-labels-idx1-ubyte", data_dir);
    if (gpudl_idx_load(host, p[0], &xtr) || gpudl_idx_load(host, p[1], &ytr) || gpudl_idx_load(host, p[2], &xte) ||
        gpudl_idx_load(host, p[3], &yte)) return 0;
    GPUDL_CHECK(gpudl_dataset_create(ctx, tr, &xtr, &ytr, batch, 0.2860f, 0.3530f));
    GPUDL_CHECK(gpudl_dataset_create(ctx, te, &xte, &yte, batch, 0.2860f, 0.3530f));
    gpudl_tensor_free(host, &xtr); gpudl_tensor_free(host, &ytr); gpudl_tensor_free(host, &xte); gpudl_tensor_free(host, &yte);
    gpudl_ctx_destroy(host);
    return 1;
}

/* 2 ranks x 32 rows against 1 rank x 64 rows (computed on every rank), then the checkpoint. */
static void test_equivalence_and_checkpoint(void) {
    gpudl_dataset tr, tr1, te;
    gpudl_model *m2 = mlp(64, 0.0f), *m1 = mlp(64, 0.0f), *back = mlp(64, 0.0f);
    int64_t n, i, b, steps = 12;
    float *a, *c;
    double worst = 0, acc2, accb;
    gpudl_status s = GPUDL_OK;
    if (!load_data(&tr, &te, 64) || !load_data(&tr1, &te, 64)) { EXPECT(0, "dist_data", "no data under %s", data_dir); return; }
    GPUDL_CHECK(gpudl_dataset_shard(ctx, &tr, rank, size));
    GPUDL_CHECK(gpudl_model_set_dist(m2, dist));
    for (b = 0; b < steps && s == GPUDL_OK; b++) {
        if (b % gpudl_dataset_num_batches(&tr) == 0) {   /* the same order on every rank and for the 1-rank model */
            GPUDL_CHECK(gpudl_dataset_shuffle(ctx, &tr, 1, (uint64_t)b));
            GPUDL_CHECK(gpudl_dataset_shuffle(ctx, &tr1, 1, (uint64_t)b));
        }
        s = train_step(m2, &tr, b % gpudl_dataset_num_batches(&tr));
        if (s == GPUDL_OK) s = train_step(m1, &tr1, b % gpudl_dataset_num_batches(&tr1));
    }
    a = host_params(m2, &n);
    c = host_params(m1, &n);
    for (i = 0; i < n; i++) {
        double e = fabs((double)a[i] - c[i]) / (fabs((double)c[i]) + 1e-2);
        if (e > worst) worst = e;
    }
    EXPECT(s == GPUDL_OK && worst < 1e-4, "dist_equals_doubled_batch",
           "%lld steps of 2 ranks x 32 against 1 rank x 64: worst relative weight difference %.2e (status %d)", (long long)steps,
           worst, (int)s);
    free(c);
    /* the checkpoint: written by rank 0 only, loaded by a 1-rank model on every rank */
    s = gpudl_model_save(ctx, m2, "build/test/tmp_dist.safetensors");
    {   /* a barrier: every rank waits for rank 0's file */
        gpudl_tensor t;
        int64_t one = 1;
        GPUDL_CHECK(gpudl_tensor_create(ctx, &t, GPUDL_F32, 1, &one));
        GPUDL_CHECK(gpudl_tensor_fill(ctx, &t, 1.0f));
        GPUDL_CHECK(gpudl_dist_allreduce(dist, ctx, &t, 0));
        gpudl_tensor_free(ctx, &t);
    }
    if (s == GPUDL_OK) s = gpudl_model_load(ctx, back, "build/test/tmp_dist.safetensors");
    c = host_params(back, &n);
    acc2 = accuracy(m2, &te);
    accb = accuracy(back, &te);
    EXPECT(s == GPUDL_OK && memcmp(a, c, sizeof(float) * (size_t)n) == 0 && acc2 == accb, "dist_checkpoint_loads_on_one_rank",
           "rank 0 wrote it; test accuracy %.2f%% (2 ranks) and %.2f%% (loaded on 1)", 100 * acc2, 100 * accb);
    free(a); free(c);
    gpudl_model_destroy(m1); gpudl_model_destroy(m2); gpudl_model_destroy(back);
    gpudl_dataset_free(ctx, &tr); gpudl_dataset_free(ctx, &tr1); gpudl_dataset_free(ctx, &te);
}

/* An FP16 overflow on rank 1 only: both ranks skip the step and halve the scale alike. */
static void test_fp16_skip_shared(void) {
    gpudl_model *m = mlp(16, 0.0f);
    gpudl_tensor x, hx, y, hy;
    gpudl_scaler_state st;
    memset(&st, 0, sizeof st);
    int64_t xs[4] = {16, 1, 28, 28}, one = 16, i, n;
    float *before, *after, r[4] = {0, 0, 0, 0};
    gpudl_status s;
    GPUDL_CHECK(gpudl_model_set_precision(m, GPUDL_PRECISION_FP16, NULL));
    GPUDL_CHECK(gpudl_model_set_dist(m, dist));
    GPUDL_CHECK(gpudl_tensor_create_on(ctx, &hx, GPUDL_DEVICE_CPU, GPUDL_F32, 4, xs));
    GPUDL_CHECK(gpudl_tensor_create_on(ctx, &hy, GPUDL_DEVICE_CPU, GPUDL_I32, 1, &one));
    for (i = 0; i < 16 * 784; i++) ((float *)hx.data)[i] = (float)gpudl_rng_uniform(7 + (uint64_t)rank, (uint64_t)i);
    if (rank == 1) ((float *)hx.data)[5] = 1e6f;   /* rank 1's input overflows FP16 */
    for (i = 0; i < 16; i++) ((int32_t *)hy.data)[i] = (int32_t)(i % 10);
    GPUDL_CHECK(gpudl_tensor_create(ctx, &x, GPUDL_F32, 4, xs));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &y, GPUDL_I32, 1, &one));
    GPUDL_CHECK(gpudl_tensor_copy(ctx, &x, &hx));
    GPUDL_CHECK(gpudl_tensor_copy(ctx, &y, &hy));
    before = host_params(m, &n);
    s = gpudl_model_zero_grad(m);
    if (s == GPUDL_OK) s = gpudl_model_forward(m, &x, NULL);
    if (s == GPUDL_OK) s = gpudl_model_loss(m, &y);
    if (s == GPUDL_OK) s = gpudl_model_backward(m);
    if (s == GPUDL_OK) s = gpudl_model_step(m);
    if (s == GPUDL_OK) s = gpudl_model_scaler_state(m, &st);
    after = host_params(m, &n);
    {   /* what each rank saw, summed across the ranks: the skip count, the scale, unchanged weights */
        gpudl_tensor t;
        int64_t four = 4;
        r[0] = (float)st.skipped_total;
        r[1] = st.scale;
        r[2] = memcmp(before, after, sizeof(float) * (size_t)n) == 0;
        r[3] = s == GPUDL_OK;
        GPUDL_CHECK(gpudl_tensor_create(ctx, &t, GPUDL_F32, 1, &four));
        GPUDL_CHECK(gpudl_tensor_upload(ctx, &t, r, sizeof r));
        GPUDL_CHECK(gpudl_dist_allreduce(dist, ctx, &t, 0));
        GPUDL_CHECK(gpudl_tensor_download(ctx, &t, r, sizeof r));
        gpudl_tensor_free(ctx, &t);
    }
    EXPECT(r[0] == (float)size && r[1] == (float)size * 32768.0f && r[2] == (float)size && r[3] == (float)size,
           "dist_fp16_skip_is_shared", "an overflow on rank 1 only: %g of %d ranks skipped, scale 65536 -> %g on each, "
           "weights unchanged on %g", (double)r[0], size, (double)(r[1] / size), (double)r[2]);
    free(before); free(after);
    gpudl_tensor_free(ctx, &x); gpudl_tensor_free(ctx, &y);
    gpudl_tensor_free(ctx, &hx); gpudl_tensor_free(ctx, &hy);
    gpudl_model_destroy(m);
}

/* Dropout masks differ across ranks (a rank's mask is not its neighbour's). */
static void test_dropout_per_rank(void) {
    gpudl_model *m = mlp(8, 0.5f);
    gpudl_tensor x, out, t;
    int64_t xs[4] = {8, 1, 28, 28}, n, i, k = 8 * 64;
    float *h, *mine;
    double diff = 0;
    GPUDL_CHECK(gpudl_model_set_dist(m, dist));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &x, GPUDL_F32, 4, xs));
    GPUDL_CHECK(gpudl_tensor_fill(ctx, &x, 0.5f));   /* the same input everywhere */
    GPUDL_CHECK(gpudl_model_forward(m, &x, &out));
    /* the dropout layer's output (layer 3) as the difference to rank 0's */
    h = (float *)malloc(sizeof(float) * (size_t)k);
    mine = (float *)malloc(sizeof(float) * (size_t)k);
    GPUDL_CHECK(gpudl_tensor_download(ctx, &m->layers[3].out, mine, sizeof(float) * (size_t)k));
    memcpy(h, mine, sizeof(float) * (size_t)k);
    GPUDL_CHECK(gpudl_tensor_create(ctx, &t, GPUDL_F32, 1, &k));
    GPUDL_CHECK(gpudl_tensor_upload(ctx, &t, h, sizeof(float) * (size_t)k));
    GPUDL_CHECK(gpudl_dist_broadcast(dist, ctx, &t, 0));
    GPUDL_CHECK(gpudl_tensor_download(ctx, &t, h, sizeof(float) * (size_t)k));
    for (i = 0; i < k; i++) diff += (h[i] == 0.0f) != (mine[i] == 0.0f);
    {   /* rank 1's count (rank 0's is 0) to everyone */
        gpudl_tensor c;
        float r = (float)diff;
        n = 1;
        GPUDL_CHECK(gpudl_tensor_create(ctx, &c, GPUDL_F32, 1, &n));
        GPUDL_CHECK(gpudl_tensor_upload(ctx, &c, &r, sizeof r));
        GPUDL_CHECK(gpudl_dist_allreduce(dist, ctx, &c, 0));
        GPUDL_CHECK(gpudl_tensor_download(ctx, &c, &r, sizeof r));
        gpudl_tensor_free(ctx, &c);
        EXPECT(r > k / 8, "dist_dropout_differs_per_rank", "%g of %lld dropout decisions differ between ranks 0 and 1",
               (double)r, (long long)k);
    }
    free(h); free(mine);
    gpudl_tensor_free(ctx, &x); gpudl_tensor_free(ctx, &t);
    gpudl_model_destroy(m);
}

/* Rank 1 leaves at step 3; rank 0 gets GPUDL_ERR_DIST within the timeout. */
static void test_rank_dies(void) {
    gpudl_dataset tr, te;
    gpudl_model *m = mlp(64, 0.0f);
    gpudl_status s = GPUDL_OK;
    int64_t b;
    double t0;
    if (!load_data(&tr, &te, 64)) { EXPECT(0, "dist_data", "no data"); return; }
    GPUDL_CHECK(gpudl_dataset_shard(ctx, &tr, rank, size));
    GPUDL_CHECK(gpudl_model_set_dist(m, dist));
    GPUDL_CHECK(gpudl_dataset_shuffle(ctx, &tr, 1, 0));
    t0 = gpudl_now();
    for (b = 0; b < 20 && s == GPUDL_OK; b++) {
        if (rank == 1 && b == 3) { fflush(stdout); _exit(3); }   /* dies without a word */
        t0 = gpudl_now();
        s = train_step(m, &tr, b);
    }
    if (rank == 0) {
        double waited = gpudl_now() - t0;
        EXPECT(s == GPUDL_ERR_DIST && strstr(gpudl_ctx_last_error(ctx), "rank") && waited < 30.0, "dist_rank_dies_clear_error",
               "after %.1f s: %s", waited, gpudl_ctx_last_error(ctx));
    }
    fflush(stdout);
    _exit(failed ? 1 : 0);   /* MPI cannot finalize with a dead rank */
}

/* Rank 1 builds a wider model: both ranks refuse, naming the difference. */
static void test_mismatch(void) {
    gpudl_model *m;
    gpudl_model_desc md;
    int64_t in = 20;
    gpudl_status s;
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 1, &in));
    GPUDL_CHECK(gpudl_model_add_linear(m, 20, rank == 1 ? 12 : 10));
    memset(&md, 0, sizeof md);
    GPUDL_CHECK(gpudl_model_build(m, &md));
    s = gpudl_model_set_dist(m, dist);
    EXPECT(s == GPUDL_ERR_DIST && strstr(gpudl_ctx_last_error(ctx), "different model"), "dist_mismatched_models_refused", "%s",
           gpudl_ctx_last_error(ctx));
    gpudl_model_destroy(m);
}

int main(int argc, char **argv) {
    gpudl_dist_desc dd;
    gpudl_ctx_desc cd;
    const char *mode = "all";
    int i;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu")) on_gpu = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data_dir = argv[++i];
        else mode = argv[i];
    }
    memset(&dd, 0, sizeof dd);
    dd.timeout_ms = !strcmp(mode, "die") ? 5000 : 60000;
    dd.bucket_floats = 4096;   /* several buckets even for this small model */
    GPUDL_CHECK(gpudl_dist_create(&dd, &dist));
    rank = gpudl_dist_rank(dist);
    size = gpudl_dist_size(dist);
    memset(&cd, 0, sizeof cd);
    cd.device = on_gpu ? GPUDL_DEVICE_CUDA : GPUDL_DEVICE_CPU;
    cd.cuda_device = gpudl_dist_local_rank(dist) % 2;
    cd.num_threads = 1;
    cd.log = gpudl_log_quiet;
    GPUDL_CHECK(gpudl_ctx_create(&cd, &ctx));
    if (rank == 0) { printf("== %d ranks on the %s\n", size, on_gpu ? "GPU (NCCL)" : "CPU (MPI)"); fflush(stdout); }
    if (!strcmp(mode, "die")) test_rank_dies();
    else if (!strcmp(mode, "mismatch")) test_mismatch();
    else {
        test_equivalence_and_checkpoint();
        test_fp16_skip_shared();
        test_dropout_per_rank();
    }
    if (rank == 0) printf("%d passed, %d failed, 0 skipped\n", passed, failed);
    gpudl_ctx_destroy(ctx);
    gpudl_dist_destroy(dist);
    return failed ? 1 : 0;
}
