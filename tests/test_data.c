/* gpudl tests: data. The IDX loader (valid files, every fault with its own
   message, gzip with and without GPUDL_ZLIB) and the dataset (batches,
   normalisation, shuffles).
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* >>data ------------------------------------------------------------------ */

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

/* What a wrong data path or a mismatched pair of files says: both names
   tried for a missing file, the two counts for a mismatch. */
static void test_mnist_messages(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor im, lab;
    unsigned char b[64];
    uint32_t d3[3] = {3, 2, 2}, d1[1] = {2};
    const char *e;
    CHECK_ST(gpudl_mnist_load(c, "build/test/no-such-dir", 1, &im, &lab), GPUDL_ERR_IO);
    e = gpudl_ctx_last_error(c);
    CHECKF(strstr(e, "neither build/test/no-such-dir/train-images-idx3-ubyte nor") &&
           strstr(e, "train-images-idx3-ubyte.gz"), "%s", e);
    (void)make_dir("build/test/tmp_mnist");
    write_bytes("build/test/tmp_mnist/train-images-idx3-ubyte", b, idx_bytes(b, 0x08, 3, d3, 12));
    write_bytes("build/test/tmp_mnist/train-labels-idx1-ubyte", b, idx_bytes(b, 0x08, 1, d1, 2));
    CHECK_ST(gpudl_mnist_load(c, "build/test/tmp_mnist", 1, &im, &lab), GPUDL_ERR_FORMAT);
    e = gpudl_ctx_last_error(c);
    CHECKF(strstr(e, "3 images but 2 labels") != NULL, "%s", e);
    CHECK(im.data == NULL && lab.data == NULL);
}

/* Looking for the data set is quiet, and a failure is one message with
   the fix: .gz files in a build without zlib say how to unpack them. */
static void test_fashion_mnist_find(void) {
    gpudl_ctx *c;
    gpudl_ctx_desc d;
    gpudl_tensor a, b, x, y;
    const char *found = NULL;
    gpudl_status s;
    FILE *tmp;
    char said[4096];
    int saved, lines = 0;
    const char *p;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;   /* the default logger: errors to stderr */
    GPUDL_CHECK(gpudl_ctx_create(&d, &c));
    CHECK_OK(gpudl_fashion_mnist_load(c, data_dir(), &a, &b, &x, &y, &found));
    CHECK(found && !strcmp(found, data_dir()) && a.shape[0] == 2000 && x.shape[0] == 1000);
    gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
    saved = stderr_capture(&tmp);
    s = gpudl_fashion_mnist_load(c, NULL, &a, &b, &x, &y, &found);
    stderr_release(saved, tmp, said, sizeof said);
    for (p = said; (p = strstr(p, "gpudl error:")) != NULL; p++) lines++;
    CHECKF(s == GPUDL_OK ? said[0] == 0 : lines == 1, "the search said (%s): '%s'", gpudl_status_string(s), said);
    if (s == GPUDL_OK) { gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); }
    d.log = gpudl_log_quiet;
    gpudl_ctx_destroy(c);
    GPUDL_CHECK(gpudl_ctx_create(&d, &c));
#ifndef GPUDL_ZLIB
    CHECK_ST(gpudl_fashion_mnist_load(c, "data/fashion-mnist-subset", &a, &b, &x, &y, NULL), GPUDL_ERR_UNSUPPORTED);
    CHECKF(strstr(gpudl_ctx_last_error(c), "gunzip") != NULL, "%s", gpudl_ctx_last_error(c));
#endif
    CHECK_ST(gpudl_fashion_mnist_load(c, "build/test/no-such-dir", &a, &b, &x, &y, NULL), GPUDL_ERR_IO);
    CHECKF(strstr(gpudl_ctx_last_error(c), "neither") != NULL, "%s", gpudl_ctx_last_error(c));
    gpudl_ctx_destroy(c);
}
