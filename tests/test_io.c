/* gpudl tests: io (checkpoints). A safetensors round trip and a resume that
   continues bit for bit, then every way a checkpoint file can be corrupt.
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* >>io: checkpoints ------------------------------------------------------- */

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
        corrupt_case(m, "header length 0", z, 16, "is not a safetensors file");
        z[0] = 1; z[8] = '{';
        corrupt_case(m, "header length 1", z, 16, "implausible header length");
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

/* A file of another kind is named as such, not as a safetensors file with
   an absurd header length. */
static void test_checkpoint_not_safetensors(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m = small_cnn(c, 1, GPUDL_OPTIM_ADAM);
    static const char text[] = "epoch,loss\n1,0.5\n2,0.4\n";
    write_bytes(tmp_path("notes.csv"), text, sizeof text - 1);
    CHECK_ST(gpudl_model_load(c, m, tmp_path("notes.csv")), GPUDL_ERR_FORMAT);
    CHECKF(strstr(gpudl_ctx_last_error(c), "is not a safetensors file") != NULL, "%s", gpudl_ctx_last_error(c));
    gpudl_model_destroy(m);
}

/* Saving twice to one path replaces the file (the C runtime's rename() does
   not on Windows: make test-windows runs this there), and no temporary file
   is left behind. */
/* gpudl_model_save_memory (issue 35): the same bytes as the file, and a
   model loaded from them equal to one loaded from the file. */
static void test_checkpoint_to_memory(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *a, *b;
    const char *path = tmp_path("mem.safetensors");
    void *mem = NULL;
    size_t size = 0, fsize = 0;
    unsigned char *file = NULL;
    FILE *f;
    int64_t v[1] = {6};
    snapshot sa, sb;
    a = NULL; b = NULL;
    CHECK_OK(gpudl_model_create(c, &a, 1, v)); CHECK_OK(gpudl_model_add_linear(a, 6, 5)); CHECK_OK(gpudl_model_add_relu(a));
    CHECK_OK(gpudl_model_add_linear(a, 5, 3)); CHECK_OK(gpudl_model_build(a, NULL));
    CHECK_OK(gpudl_model_create(c, &b, 1, v)); CHECK_OK(gpudl_model_add_linear(b, 6, 5)); CHECK_OK(gpudl_model_add_relu(b));
    CHECK_OK(gpudl_model_add_linear(b, 5, 3));
    {
        gpudl_model_desc md;
        memset(&md, 0, sizeof md);
        md.seed = 77;   /* other initial weights */
        CHECK_OK(gpudl_model_build(b, &md));
    }
    CHECK_OK(gpudl_model_save(c, a, path));
    CHECK_OK(gpudl_model_save_memory(c, a, &mem, &size));
    f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END); fsize = (size_t)ftell(f); fseek(f, 0, SEEK_SET);
        file = (unsigned char *)malloc(fsize + 1);
        if (fread(file, 1, fsize, f) != fsize) fsize = 0;
        fclose(f);
    }
    CHECKF(mem && size == fsize && !memcmp(mem, file, size), "memory %zu bytes, file %zu bytes: not the same", size, fsize);
    CHECK_OK(gpudl_model_load_memory(c, b, "memory", mem, size));
    snap(a, &sa); snap(b, &sb);
    CHECKF(snap_equal(&sa, &sb), "the model loaded from memory differs from the one saved");
    snap_free(&sa); snap_free(&sb);
    gpudl_memory_free(mem);
    mem = (void *)&size;
    CHECK_ST(gpudl_model_save_memory(c, NULL, &mem, &size), GPUDL_ERR_INVALID_ARG);
    CHECK(mem == NULL && size == 0);   /* set on failure */
    free(file);
    gpudl_model_destroy(a); gpudl_model_destroy(b);
}

static void test_checkpoint_save_twice(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m[3];
    gpudl_model_desc md;
    gpudl_tensor p[3];
    int64_t in = 9;
    const char *path = tmp_path("twice.safetensors");
    char tmp[600];
    FILE *f;
    int k;
    for (k = 0; k < 3; k++) {
        CHECK_OK(gpudl_model_create(c, &m[k], 1, &in));
        CHECK_OK(gpudl_model_add_linear(m[k], 9, 4));
        memset(&md, 0, sizeof md);
        md.seed = 10 + (uint64_t)k;
        CHECK_OK(gpudl_model_build(m[k], &md));
        CHECK_OK(gpudl_model_params(m[k], &p[k], NULL));
    }
    CHECK_OK(gpudl_model_save(c, m[0], path));
    CHECK_OK(gpudl_model_save(c, m[1], path));   /* over the first */
    CHECK_OK(gpudl_model_load(c, m[2], path));
    CHECK(memcmp(p[1].data, p[2].data, gpudl_tensor_bytes(&p[1])) == 0);
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    f = fopen(tmp, "rb");
    CHECK(f == NULL);
    if (f) fclose(f);
    for (k = 0; k < 3; k++) gpudl_model_destroy(m[k]);
    remove(path);
}
