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

/* Datasets from float and 16-bit images (issue 35): F32 images equal to
   the U8 ones / 255 give the same device images, bit for bit; F16 and BF16
   ones the same within their rounding. */
static void test_dataset_float_images(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t s3[3] = {5, 4, 3}, n = 5, i, k;
    gpudl_tensor u8 = mk(c, GPUDL_U8, 3, s3), f32 = mk(c, GPUDL_F32, 3, s3), f16 = mk(c, GPUDL_F16, 3, s3), lab = mk(c, GPUDL_I32, 1, &n);
    gpudl_dataset a, b, h;
    float v;
    for (i = 0; i < 60; i++) {
        ((uint8_t *)u8.data)[i] = (uint8_t)((i * 37) % 256);
        ((float *)f32.data)[i] = (float)((i * 37) % 256) / 255.0f;
    }
    for (i = 0; i < 5; i++) ((int32_t *)lab.data)[i] = (int32_t)(i % 3);
    CHECK_OK(gpudl_tensor_cast(c, &f16, &f32));
    CHECK_OK(gpudl_dataset_create(c, &a, &u8, &lab, 2, 0.25f, 0.5f));
    CHECK_OK(gpudl_dataset_create(c, &b, &f32, &lab, 2, 0.25f, 0.5f));
    CHECK_OK(gpudl_dataset_create(c, &h, &f16, &lab, 2, 0.25f, 0.5f));
    CHECK(!memcmp(a.images.data, b.images.data, gpudl_tensor_bytes(&a.images)));
    for (k = 0; k < 60; k++) {
        v = ((float *)h.images.data)[k];
        if (fabsf(v - ((float *)a.images.data)[k]) > 2e-3f) break;
    }
    CHECKF(k == 60, "f16 image %lld: %g vs %g", (long long)k, (double)v, (double)((float *)a.images.data)[k]);
    gpudl_dataset_free(c, &a); gpudl_dataset_free(c, &b); gpudl_dataset_free(c, &h);
    f32.dtype = GPUDL_I32;   /* (the same bytes, called i32: refused) */
    CHECK_ST(gpudl_dataset_create(c, &a, &f32, &lab, 2, 0.0f, 1.0f), GPUDL_ERR_SHAPE);
    f32.dtype = GPUDL_F32;
    gpudl_tensor_free(c, &u8); gpudl_tensor_free(c, &f32); gpudl_tensor_free(c, &f16); gpudl_tensor_free(c, &lab);
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

/* A .gz file, as Debian's dataset-fashion-mnist installs them: read by
   gpudl's own inflate in every build (issue 23: the drop-in cc build could
   not read them), or by zlib with GPUDL_ZLIB; the same bytes as the file
   gunzip gives. A cut or corrupted file is a format error naming gzip. */
static void test_idx_gzip(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor t, raw;
    char gz[512], plain[512];
    static const char *const names[4] = {"t10k-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "train-images-idx3-ubyte"};
    int k;
    for (k = 0; k < 4; k++) {
        snprintf(gz, sizeof gz, "data/fashion-mnist-subset/%s.gz", names[k]);
        snprintf(plain, sizeof plain, "%s/%s", data_dir(), names[k]);
        CHECK_OK(gpudl_idx_load(c, gz, &t));
        CHECK_OK(gpudl_idx_load(c, plain, &raw));
        CHECKF(t.ndim == raw.ndim && gpudl_tensor_bytes(&t) == gpudl_tensor_bytes(&raw) &&
               memcmp(t.data, raw.data, gpudl_tensor_bytes(&raw)) == 0, "%s: not the bytes gunzip gives", names[k]);
        gpudl_tensor_free(c, &t);
        gpudl_tensor_free(c, &raw);
    }
    {   /* a truncated gzip stream, and one whose CRC is off by a bit */
        FILE *f = fopen(gz, "rb");
        unsigned char *buf = (unsigned char *)malloc(1 << 22);
        size_t n = f ? fread(buf, 1, 1 << 22, f) : 0;
        if (f) fclose(f);
        write_bytes(tmp_path("cut.gz"), buf, 300);
        CHECK_ST(gpudl_idx_load(c, tmp_path("cut.gz"), &t), GPUDL_ERR_FORMAT);
        CHECKF(strstr(gpudl_ctx_last_error(c), "gzip") != NULL && t.data == NULL, "%s", gpudl_ctx_last_error(c));
        CHECK(n > 8);
        buf[n - 8] ^= 1;
        write_bytes(tmp_path("crc.gz"), buf, n);
        CHECK_ST(gpudl_idx_load(c, tmp_path("crc.gz"), &t), GPUDL_ERR_FORMAT);
        CHECKF(strstr(gpudl_ctx_last_error(c), "gzip") != NULL && t.data == NULL, "%s", gpudl_ctx_last_error(c));
        free(buf);
    }
}

/* gzip members around raw DEFLATE data, for the inflate's own cases. */
static size_t gz_member(unsigned char *out, const unsigned char *deflated, size_t n, const unsigned char *data, size_t size) {
    static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
    uint32_t crc = gpudl__crc32(0, data, size);
    int i;
    memcpy(out, hdr, 10);
    memcpy(out + 10, deflated, n);
    for (i = 0; i < 4; i++) out[10 + n + i] = (unsigned char)(crc >> (8 * i));
    for (i = 0; i < 4; i++) out[14 + n + i] = (unsigned char)((uint32_t)size >> (8 * i));
    return n + 18;
}

static void expect_gunzip(const char *what, const unsigned char *in, size_t n, const unsigned char *want, size_t want_n,
                          const char *err) {
    unsigned char *out = NULL;
    size_t got = 0;
    const char *e = gpudl__gunzip_builtin(in, n, &out, &got);
    if (err) CHECKF(e && strstr(e, err) && !out, "%s: want the error '%s', got '%s'", what, err, e ? e : "none");
    else CHECKF(!e && got == want_n && memcmp(out, want, want_n) == 0, "%s: %s (%zu bytes, want %zu)", what, e ? e : "wrong bytes", got, want_n);
    GPUDL_FREE(out);
}

/* gpudl's inflate (RFC 1951) in gzip members (RFC 1952): each kind of
   block, several members, the optional header fields, and each fault with
   its own message, as zlib tells them apart. Bit patterns made by hand
   (fixed Huffman codes) and by Python's zlib (Z_FIXED), checked there. */
static void test_gunzip_builtin(void) {
    /* "gpudl reads gzip: " 0..39 "abc"x21, deflated with fixed codes */
    static const unsigned char fixed[] = {0x4b, 0x2f, 0x28, 0x4d, 0xc9, 0x51, 0x28, 0x4a, 0x4d, 0x4c, 0x29, 0x56, 0x48, 0xaf,
        0xca, 0x2c, 0xb0, 0x52, 0x60, 0x60, 0x64, 0x62, 0x66, 0x61, 0x65, 0x63, 0xe7, 0xe0, 0xe4, 0xe2, 0xe6, 0xe1, 0xe5, 0xe3,
        0x17, 0x10, 0x14, 0x12, 0x16, 0x11, 0x15, 0x13, 0x97, 0x90, 0x94, 0x92, 0x96, 0x91, 0x95, 0x93, 0x57, 0x50, 0x54, 0x52,
        0x56, 0x51, 0x55, 0x53, 0x4f, 0x4c, 0x4a, 0xa6, 0x04, 0x01, 0x00};
    static const unsigned char aaaa[] = {0x4b, 0x04, 0x02, 0x00};      /* 'a', then 3 more from 1 back */
    static const unsigned char too_far[] = {0x4b, 0x04, 0x42, 0x00};       /* 'a', then 3 from 2 back */
    static const unsigned char over[] = {0x05, 0x00, 0x92, 0x04};      /* a dynamic block: four 1-bit code-length codes */
    static const unsigned char bad286[] = {0x1b, 0x03};                 /* length symbol 286 */
    static const unsigned char type3[] = {0x07, 0x00};
    unsigned char text[121], stored[200], a[600], b[600], both[900], *p;
    size_t i, na, nb, n;
    memcpy(text, "gpudl reads gzip: ", 18);
    for (i = 0; i < 40; i++) text[18 + i] = (unsigned char)i;
    for (i = 0; i < 63; i++) text[58 + i] = (unsigned char)"abc"[i % 3];
    na = gz_member(a, fixed, sizeof fixed, text, sizeof text);
    expect_gunzip("fixed codes", a, na, text, sizeof text, NULL);
    expect_gunzip("a match that overlaps itself", b, gz_member(b, aaaa, sizeof aaaa, (const unsigned char *)"aaaa", 4),
                  (const unsigned char *)"aaaa", 4, NULL);
    stored[0] = 1; stored[1] = 121; stored[2] = 0; stored[3] = 0xff - 121; stored[4] = 0xff;   /* last, stored, LEN, NLEN */
    memcpy(stored + 5, text, sizeof text);
    nb = gz_member(b, stored, 5 + sizeof text, text, sizeof text);
    expect_gunzip("a stored block", b, nb, text, sizeof text, NULL);
    memcpy(both, a, na);   /* two members, one after the other: their data concatenated */
    memcpy(both + na, b, nb);
    {
        unsigned char twice[242];
        memcpy(twice, text, 121);
        memcpy(twice + 121, text, 121);
        expect_gunzip("two members", both, na + nb, twice, 242, NULL);
    }
    /* every shorter prefix fails, and says so */
    for (n = 0; n < na + nb; n++) {
        if (n == na) expect_gunzip("the first member alone", both, n, text, sizeof text, NULL);
        else expect_gunzip("a prefix", both, n, NULL, 0, "");
    }
    {   /* FEXTRA, FNAME, FCOMMENT and a header CRC */
        unsigned char h[700];
        uint32_t crc;
        memcpy(h, a, 10);
        h[3] = 4 | 8 | 16 | 2;
        n = 10;
        h[n++] = 3; h[n++] = 0; h[n++] = 'x'; h[n++] = 'y'; h[n++] = 'z';
        memcpy(h + n, "name.idx", 9); n += 9;
        memcpy(h + n, "a comment", 10); n += 10;
        crc = gpudl__crc32(0, h, n);
        h[n++] = (unsigned char)crc; h[n++] = (unsigned char)(crc >> 8);
        memcpy(h + n, a + 10, na - 10);
        expect_gunzip("optional header fields", h, n + na - 10, text, sizeof text, NULL);
        h[n - 1] ^= 0x40;
        expect_gunzip("a bad header CRC", h, n + na - 10, NULL, 0, "header whose CRC");
    }
    memcpy(b, a, na);
    b[na - 8] ^= 0x10;
    expect_gunzip("a bad CRC", b, na, NULL, 0, "CRC-32");
    memcpy(b, a, na);
    b[na - 4] ^= 1;
    expect_gunzip("a bad length", b, na, NULL, 0, "a length that does not match");
    memcpy(b, a, na);
    b[na] = 0;
    expect_gunzip("trailing bytes", b, na + 1, NULL, 0, "not another gzip member");
    b[2] = 7;
    expect_gunzip("not deflate", b, na, NULL, 0, "other than deflate");
    b[2] = 8; b[3] = 0x20;
    expect_gunzip("reserved flags", b, na, NULL, 0, "reserved gzip header flags");
    stored[3] ^= 1;
    expect_gunzip("stored LEN/NLEN", b, gz_member(b, stored, 5 + sizeof text, text, sizeof text), NULL, 0, "complement disagree");
    expect_gunzip("distance too far", b, gz_member(b, too_far, sizeof too_far, text, 4), NULL, 0, "distance too far back");
    expect_gunzip("over-subscribed", b, gz_member(b, over, sizeof over, text, 0), NULL, 0, "over-subscribed");
    expect_gunzip("length symbol 286", b, gz_member(b, bad286, sizeof bad286, text, 0), NULL, 0, "286 or 287");
    expect_gunzip("block type 3", b, gz_member(b, type3, sizeof type3, text, 0), NULL, 0, "reserved type 3");
    expect_gunzip("no magic", text, sizeof text, NULL, 0, "no gzip magic");
    p = NULL;
    CHECK(gpudl__gunzip_builtin(a, 5, &p, &n) && p == NULL);
#ifdef GPUDL_ZLIB
    {   /* against zlib: random and repetitive data at every level and strategy, each size */
        static const int levels[4] = {0, 1, 6, 9}, strategies[5] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
        size_t total = 300000, size;
        unsigned char *src = (unsigned char *)malloc(total), *zbuf = (unsigned char *)malloc(2 * total + 1024);
        uint64_t r = 7;
        int li, si, cases = 0;
        for (i = 0; i < total; i++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            src[i] = (r >> 61) < 2 ? (unsigned char)(r >> 33) : i > 1000 ? src[i - 1 - (r >> 40) % 1000] : (unsigned char)(r >> 58);
        }
        for (li = 0; li < 4; li++)
            for (si = 0; si < 5; si++)
                for (size = 0; size <= total; size = size * 4 + 1) {
                    z_stream z;
                    memset(&z, 0, sizeof z);
                    CHECK(deflateInit2(&z, levels[li], Z_DEFLATED, 15 + 16, 8, strategies[si]) == Z_OK);
                    z.next_in = src; z.avail_in = (uInt)size; z.next_out = zbuf; z.avail_out = (uInt)(2 * total + 1024);
                    CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
                    expect_gunzip("zlib's output", zbuf, (size_t)z.total_out, src, size, NULL);
                    deflateEnd(&z);
                    cases++;
                }
        CHECK(cases == 20 * 10);
        free(src);
        free(zbuf);
    }
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
   the fix; a directory of .gz files loads in every build. */
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
    /* the shipped subset is .gz, as Debian's files are: every build reads it */
    CHECK_OK(gpudl_fashion_mnist_load(c, "data/fashion-mnist-subset", &a, &b, &x, &y, NULL));
    CHECK(a.shape[0] == 2000 && b.shape[0] == 2000 && x.shape[0] == 1000 && y.shape[0] == 1000);
    gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
    CHECK_ST(gpudl_fashion_mnist_load(c, "build/test/no-such-dir", &a, &b, &x, &y, NULL), GPUDL_ERR_IO);
    CHECKF(strstr(gpudl_ctx_last_error(c), "neither") != NULL, "%s", gpudl_ctx_last_error(c));
    gpudl_ctx_destroy(c);
}

/* gpudl_dataset_set_dtype: F16 and BF16 batches hold exactly the F32
   batch cast by gpudl_tensor_cast (the normalisation in FP32, rounded once
   in the gather), on ctx's device: MNIST's 784 floats a sample (the GPU's
   16-byte path) and an odd 3x5x7 (its scalar path), every batch of a
   shuffled epoch, the short last one included; back to F32, the F32 batch. */
static void dataset_dtype_case(gpudl_ctx *ctx) {
    static const int64_t shapes[2][4] = {{37, 1, 28, 28}, {23, 3, 5, 7}};
    static const gpudl_dtype dts[2] = {GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    int si, di;
    for (si = 0; si < 2; si++)
        for (di = 0; di < 2; di++) {
            int64_t N = shapes[si][0], i, b, nb;
            gpudl_tensor images = mk(c, GPUDL_U8, 4, shapes[si]), labels = mk(c, GPUDL_U8, 1, &N);
            gpudl_dataset a, h;
            int bad = 0;
            for (i = 0; i < gpudl_tensor_numel(&images); i++)
                ((uint8_t *)images.data)[i] = (uint8_t)(gpudl_rng_bits(11 + (uint64_t)si, (uint64_t)i) & 255);
            for (i = 0; i < N; i++) ((uint8_t *)labels.data)[i] = (uint8_t)(i % 10);
            CHECK_OK(gpudl_dataset_create(ctx, &a, &images, &labels, 16, 0.2860f, 0.3530f));
            CHECK_OK(gpudl_dataset_create(ctx, &h, &images, &labels, 16, 0.2860f, 0.3530f));
            CHECK_OK(gpudl_dataset_set_dtype(ctx, &h, dts[di]));
            CHECK_OK(gpudl_dataset_set_dtype(ctx, &h, dts[di]));   /* again: nothing to do */
            CHECK(h.xb.dtype == dts[di] && a.xb.dtype == GPUDL_F32);
            CHECK_OK(gpudl_dataset_shuffle(ctx, &a, 1, 2));
            CHECK_OK(gpudl_dataset_shuffle(ctx, &h, 1, 2));
            nb = gpudl_dataset_num_batches(&h);
            CHECK(nb == (N + 15) / 16 && nb == gpudl_dataset_num_batches(&a));
            for (b = 0; b < nb; b++) {
                gpudl_tensor xa, ya, xh, yh, cast, hc, hh, ha, hy;
                CHECK_OK(gpudl_dataset_batch(ctx, &a, b, &xa, &ya));
                CHECK_OK(gpudl_dataset_batch(ctx, &h, b, &xh, &yh));
                CHECK(xh.dtype == dts[di] && xh.ndim == 4 && xh.shape[0] == xa.shape[0] && xh.shape[3] == shapes[si][3]);
                CHECK_OK(gpudl_tensor_create(ctx, &cast, dts[di], xa.ndim, xa.shape));
                CHECK_OK(gpudl_tensor_cast(ctx, &cast, &xa));
                hc = to_host(ctx, &cast);
                hh = to_host(ctx, &xh);
                ha = to_host(ctx, &ya);
                hy = to_host(ctx, &yh);
                bad += memcmp(hc.data, hh.data, gpudl_tensor_bytes(&hc)) != 0 || memcmp(ha.data, hy.data, gpudl_tensor_bytes(&ha)) != 0;
                if (b == 0) {   /* and the values themselves: (pixel / 255 - mean) / std in FP32, rounded once */
                    gpudl_tensor hp = to_host(ctx, &h.perm);
                    int64_t sample = gpudl_tensor_numel(&images) / N, k = ((int32_t *)hp.data)[0], j;
                    for (j = 0; j < sample; j += 13) {   /* sample 0's elements */
                        float v = (((const uint8_t *)images.data)[k * sample + j] / 255.0f - 0.2860f) / 0.3530f;
                        uint16_t want = dts[di] == GPUDL_F16 ? gpudl_f32_to_f16(v) : gpudl_f32_to_bf16(v);
                        if (((uint16_t *)hh.data)[j] != want) { bad++; break; }
                    }
                    gpudl_tensor_free(c, &hp);
                }
                gpudl_tensor_free(c, &hc); gpudl_tensor_free(c, &hh); gpudl_tensor_free(c, &ha); gpudl_tensor_free(c, &hy);
                gpudl_tensor_free(ctx, &cast);
            }
            CHECKF(bad == 0, "%s on %s, sample %lld: %d of %lld batches differ from the cast F32 batch", gpudl_dtype_name(dts[di]),
                   ctx == c ? "the CPU" : "the GPU", (long long)(gpudl_tensor_numel(&images) / N), bad, (long long)nb);
            {   /* back to F32: the F32 batch */
                gpudl_tensor xa, ya, xh, yh, h1, h2;
                CHECK_OK(gpudl_dataset_set_dtype(ctx, &h, GPUDL_F32));
                CHECK_OK(gpudl_dataset_batch(ctx, &a, 1, &xa, &ya));
                CHECK_OK(gpudl_dataset_batch(ctx, &h, 1, &xh, &yh));
                h1 = to_host(ctx, &xa);
                h2 = to_host(ctx, &xh);
                CHECK(xh.dtype == GPUDL_F32 && memcmp(h1.data, h2.data, gpudl_tensor_bytes(&h1)) == 0);
                gpudl_tensor_free(c, &h1); gpudl_tensor_free(c, &h2);
            }
            CHECK_ST(gpudl_dataset_set_dtype(ctx, &h, GPUDL_I32), GPUDL_ERR_INVALID_ARG);
            CHECK(h.xb.dtype == GPUDL_F32 && h.xb.data != NULL);   /* refused: the buffer kept */
            gpudl_dataset_free(ctx, &a);
            gpudl_dataset_free(ctx, &h);
            CHECK_ST(gpudl_dataset_set_dtype(ctx, &h, GPUDL_F16), GPUDL_ERR_INVALID_ARG);   /* freed: not created */
            gpudl_tensor_free(c, &images);
            gpudl_tensor_free(c, &labels);
        }
    CHECK_ST(gpudl_dataset_set_dtype(ctx, NULL, GPUDL_F16), GPUDL_ERR_INVALID_ARG);
}

HARNESS_MAYBE_UNUSED static void test_dataset_dtype(void) { dataset_dtype_case(cpu_ctx()); }

HARNESS_MAYBE_UNUSED static void test_gpu_dataset_dtype(void) {
    NEED_GPU(g);
    dataset_dtype_case(g);
}
