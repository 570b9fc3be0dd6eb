/* Helpers that several sections of the training suite share (a helper that
   one section file uses lives in that file): host tensors, float64
   reference buffers, the test data and temporary files, and the small CNN
   the training tests train. tests/suite_train.c includes this after gpudl.h
   and harness.h, before its section files. */
#ifndef GPUDL_TEST_TRAIN_HELPERS_H
#define GPUDL_TEST_TRAIN_HELPERS_H

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

/* The length of a model's flat parameter buffer: the parameters and the
   padding that starts each tensor on a 64-float boundary. */
static int64_t flat_len(gpudl_model *m) {
    gpudl_tensor P;
    GPUDL_CHECK(gpudl_model_params(m, &P, NULL));
    return gpudl_tensor_numel(&P);
}

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

/* The shipped Fashion-MNIST subset, decompressed under data_dir(). */
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

static gpudl_conv2d_desc conv_desc(int64_t stride, int64_t pad, int64_t dil) {
    gpudl_conv2d_desc d;
    memset(&d, 0, sizeof d);
    d.stride_h = d.stride_w = stride; d.pad_h = d.pad_w = pad; d.dil_h = d.dil_w = dil;
    return d;
}

/* The small CNN of the training tests (conv-bn-relu-pool-flatten-dropout-
   linear), its training steps on a dataset and its test accuracy. */
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

#endif
