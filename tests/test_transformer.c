/* gpudl tests: the transformer ops (token + positional embedding, layer
   norm, causal multi-head self-attention) and the existing ops a GPT uses
   per position (softmax cross-entropy over (B*T, V)). Each forward against
   a float64 reference written here, each backward against central
   differences of that reference (so the gradient is checked against the
   definition, not against a second derivation), odd sizes (T = 1, 7, 13;
   C = 12, 20; NH = 1, 2, 4 with head sizes 3, 5, 6, 10, 12, 20), the causal
   mask (no output or gradient leaks backwards in time), f16/bf16, bad
   input; in the nvcc build every op on the GPU against the CPU.
   Part of the training suite: tests/suite_train.c #includes it (see there). */

/* >>transformer ----------------------------------------------------------- */

/* An F32 tensor of the given shape, uniform in [lo, hi), on the CPU. */
static gpudl_tensor tr_rand(int ndim, const int64_t *shape, float lo, float hi) { return rnd(ndim, shape, lo, hi); }

/* t cast to dt (a new CPU tensor; t itself when dt is F32 is not allowed: always a copy). */
static gpudl_tensor tr_cast(const gpudl_tensor *t, gpudl_dtype dt) {
    gpudl_tensor o = mk(cpu_ctx(), dt, t->ndim, t->shape);
    GPUDL_CHECK(gpudl_tensor_cast(cpu_ctx(), &o, t));
    return o;
}

/* The elements of a host tensor as doubles (malloc'd). */
static double *tr_dbl(const gpudl_tensor *t) {
    int64_t i, n = gpudl_tensor_numel(t);
    double *d = dalloc(n);
    for (i = 0; i < n; i++) d[i] = ld(t, i);
    return d;
}

/* max |got - ref| / max |ref| (got any dtype on the host); -1 for a NaN. */
static double tr_err(const gpudl_tensor *got, const double *ref, int64_t n) {
    double e = 0, m = 1e-30;
    int64_t i;
    for (i = 0; i < n; i++) {
        double d = fabs(ld(got, i) - ref[i]);
        if (d != d) return 1e30;
        if (d > e) e = d;
        if (fabs(ref[i]) > m) m = fabs(ref[i]);
    }
    return e / m;
}

#define TR_CLOSE(what, got, ref, n, tol) do { double e_ = tr_err((got), (ref), (n)); \
    CHECKF(e_ <= (tol), "%s: rel err %g > %g", (what), e_, (double)(tol)); } while (0)

/* ---- float64 references ---- */

static void tr_emb_ref(double *y, const gpudl_tensor *ids, const double *wte, const double *wpe, int64_t N, int64_t T, int64_t C) {
    int64_t n, c;
    for (n = 0; n < N; n++)
        for (c = 0; c < C; c++)
            y[n * C + c] = wte[(int64_t)ld(ids, n) * C + c] + (wpe ? wpe[(n % T) * C + c] : 0.0);
}

static void tr_ln_ref(double *y, double *mean, double *rstd, const double *x, const double *g, const double *b, int64_t R,
                      int64_t C, double eps) {
    int64_t r, c;
    for (r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (c = 0; c < C; c++) m += x[r * C + c];
        m /= (double)C;
        for (c = 0; c < C; c++) v += (x[r * C + c] - m) * (x[r * C + c] - m);
        v /= (double)C;
        if (mean) mean[r] = m;
        if (rstd) rstd[r] = 1 / sqrt(v + eps);
        for (c = 0; c < C; c++) y[r * C + c] = (x[r * C + c] - m) / sqrt(v + eps) * g[c] + b[c];
    }
}

/* y (B,T,C), att (B,NH,T,T) or NULL from qkv (B,T,3C). */
static void tr_attn_ref_lse(double *y, double *att, double *lse, const double *qkv, int64_t B, int64_t T, int64_t C, int64_t NH) {
    int64_t HS = C / NH, b, h, t, j, d;
    double *s = dalloc(T), scale = 1 / sqrt((double)HS);
    for (b = 0; b < B; b++)
        for (h = 0; h < NH; h++)
            for (t = 0; t < T; t++) {
                double mx = -1e300, sum = 0;
                for (j = 0; j <= t; j++) {
                    double dot = 0;
                    for (d = 0; d < HS; d++) dot += qkv[(b * T + t) * 3 * C + h * HS + d] * qkv[(b * T + j) * 3 * C + C + h * HS + d];
                    s[j] = dot * scale;
                    if (s[j] > mx) mx = s[j];
                }
                for (j = 0; j <= t; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
                if (lse) lse[(b * NH + h) * T + t] = mx + log(sum);
                for (j = 0; j < T; j++) if (att) att[((b * NH + h) * T + t) * T + j] = j <= t ? s[j] / sum : 0.0;
                for (d = 0; d < HS; d++) {
                    double acc = 0;
                    for (j = 0; j <= t; j++) acc += s[j] / sum * qkv[(b * T + j) * 3 * C + 2 * C + h * HS + d];
                    y[(b * T + t) * C + h * HS + d] = acc;
                }
            }
    free(s);
}

static void tr_attn_ref(double *y, double *att, const double *qkv, int64_t B, int64_t T, int64_t C, int64_t NH) {
    tr_attn_ref_lse(y, att, NULL, qkv, B, T, C, NH);
}

/* Central differences of L = sum w * f(p) over every element of p (the
   reference forward f, whose other inputs are fixed by the closure). */
typedef void (*tr_fwd_fn)(void *closure, double *y);
static void tr_fd(double *grad, double *p, int64_t np, const double *w, int64_t ny, tr_fwd_fn f, void *closure) {
    double *y = dalloc(ny);
    int64_t i, k;
    for (i = 0; i < np; i++) {
        double keep = p[i], h = 1e-6 * (fabs(keep) > 1 ? fabs(keep) : 1), lp = 0, lm = 0;
        p[i] = keep + h; f(closure, y);
        for (k = 0; k < ny; k++) lp += w[k] * y[k];
        p[i] = keep - h; f(closure, y);
        for (k = 0; k < ny; k++) lm += w[k] * y[k];
        p[i] = keep;
        grad[i] = (lp - lm) / (2 * h);
    }
    free(y);
}

typedef struct { const gpudl_tensor *ids; double *wte, *wpe; int64_t N, T, C; } tr_emb_cl;
static void tr_emb_f(void *c, double *y) { tr_emb_cl *e = (tr_emb_cl *)c; tr_emb_ref(y, e->ids, e->wte, e->wpe, e->N, e->T, e->C); }
typedef struct { double *x, *g, *b; int64_t R, C; double eps; } tr_ln_cl;
static void tr_ln_f(void *c, double *y) { tr_ln_cl *l = (tr_ln_cl *)c; tr_ln_ref(y, NULL, NULL, l->x, l->g, l->b, l->R, l->C, l->eps); }
typedef struct { double *qkv; int64_t B, T, C, NH; } tr_at_cl;
static void tr_at_f(void *c, double *y) { tr_at_cl *a = (tr_at_cl *)c; tr_attn_ref(y, NULL, a->qkv, a->B, a->T, a->C, a->NH); }

/* Tolerances per dtype: forward outputs, gradients (relative to the largest reference value). */
static double tr_tol_fwd(gpudl_dtype dt) { return dt == GPUDL_F32 ? 2e-6 : dt == GPUDL_F16 ? 2e-3 : 1.6e-2; }
static double tr_tol_grad(gpudl_dtype dt) { return dt == GPUDL_F32 ? 5e-5 : dt == GPUDL_F16 ? 5e-3 : 4e-2; }
static const gpudl_dtype tr_dtypes[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};

/* ---- embedding ---- */

static gpudl_tensor tr_ids(gpudl_dtype dt, int64_t B, int64_t T, int64_t V, uint32_t seed) {
    int64_t shape[2], i;
    gpudl_tensor t;
    shape[0] = B; shape[1] = T;
    t = mk(cpu_ctx(), dt, 2, shape);
    for (i = 0; i < B * T; i++) {
        seed = seed * 1664525u + 1013904223u;
        if (dt == GPUDL_U8) ((uint8_t *)t.data)[i] = (uint8_t)((seed >> 8) % (uint32_t)V);
        else ((int32_t *)t.data)[i] = (int32_t)((seed >> 8) % (uint32_t)V);
    }
    return t;
}

static void test_transformer_embedding(void) {
    static const int64_t Ts[] = {1, 7, 13}, Cs[] = {12, 20};
    gpudl_ctx *c = cpu_ctx();
    size_t a, b, k;
    for (a = 0; a < 3; a++)
        for (b = 0; b < 2; b++)
            for (k = 0; k < 3; k++) {
                gpudl_dtype dt = tr_dtypes[k];
                int64_t B = 2, T = Ts[a], C = Cs[b], V = 11, Tm = T + 2, N = B * T;
                int64_t sw[2], sp[2], sy[3];
                gpudl_tensor ids = tr_ids(a == 1 ? GPUDL_U8 : GPUDL_I32, B, T, V, (uint32_t)(7 + a * 3 + b));
                gpudl_tensor wte32, wpe32, wte, wpe, y, dy32, dy, dwte, dwpe;
                double *rwte, *rwpe, *ry, *rdy, *g0te, *g0pe, *fd;
                tr_emb_cl cl;
                int64_t i;
                sw[0] = V; sw[1] = C; sp[0] = Tm; sp[1] = C; sy[0] = B; sy[1] = T; sy[2] = C;
                wte32 = tr_rand(2, sw, -1, 1); wpe32 = tr_rand(2, sp, -1, 1); dy32 = tr_rand(3, sy, -1, 1);
                wte = tr_cast(&wte32, dt); wpe = tr_cast(&wpe32, dt); dy = tr_cast(&dy32, dt);
                y = mk(c, dt, 3, sy);
                dwte = tr_rand(2, sw, -1, 1); dwpe = tr_rand(2, sp, -1, 1);   /* gradients accumulate onto these */
                g0te = tr_dbl(&dwte); g0pe = tr_dbl(&dwpe);
                rwte = tr_dbl(&wte); rwpe = tr_dbl(&wpe); rdy = tr_dbl(&dy); ry = dalloc(N * C);
                CHECK_OK(gpudl_embedding_forward(c, &y, &ids, &wte, &wpe));
                tr_emb_ref(ry, &ids, rwte, rwpe, N, T, C);
                TR_CLOSE("embedding forward", &y, ry, N * C, dt == GPUDL_F32 ? 0 : tr_tol_fwd(dt));
                CHECK_OK(gpudl_embedding_backward(c, &dwte, &dwpe, &dy, &ids));
                cl.ids = &ids; cl.wte = rwte; cl.wpe = rwpe; cl.N = N; cl.T = T; cl.C = C;
                fd = dalloc(Tm * C > V * C ? Tm * C : V * C);
                tr_fd(fd, rwte, V * C, rdy, N * C, tr_emb_f, &cl);
                for (i = 0; i < V * C; i++) fd[i] += g0te[i];
                TR_CLOSE("embedding dwte", &dwte, fd, V * C, 1e-6);
                tr_fd(fd, rwpe, Tm * C, rdy, N * C, tr_emb_f, &cl);
                for (i = 0; i < Tm * C; i++) fd[i] += g0pe[i];
                TR_CLOSE("embedding dwpe", &dwpe, fd, Tm * C, 1e-6);
                /* the token embedding alone */
                CHECK_OK(gpudl_embedding_forward(c, &y, &ids, &wte, NULL));
                tr_emb_ref(ry, &ids, rwte, NULL, N, T, C);
                TR_CLOSE("embedding forward, no wpe", &y, ry, N * C, dt == GPUDL_F32 ? 0 : tr_tol_fwd(dt));
                free(rwte); free(rwpe); free(ry); free(rdy); free(g0te); free(g0pe); free(fd);
                gpudl_tensor_free(c, &ids); gpudl_tensor_free(c, &wte32); gpudl_tensor_free(c, &wpe32); gpudl_tensor_free(c, &wte);
                gpudl_tensor_free(c, &wpe); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy32); gpudl_tensor_free(c, &dy);
                gpudl_tensor_free(c, &dwte); gpudl_tensor_free(c, &dwpe);
            }
}

/* ---- layer norm ---- */

static void test_transformer_layernorm(void) {
    static const int64_t Ts[] = {1, 7, 13}, Cs[] = {12, 20};
    gpudl_ctx *c = cpu_ctx();
    size_t a, b, k;
    for (a = 0; a < 3; a++)
        for (b = 0; b < 2; b++)
            for (k = 0; k < 3; k++) {
                gpudl_dtype dt = tr_dtypes[k];
                int64_t B = 2, T = Ts[a], C = Cs[b], R = B * T, sx[3], i;
                gpudl_tensor x32, x, y, dy32, dy, dx, g, be, mean, rstd, dg, db;
                double *rx, *rg, *rb, *ry, *rm, *rr, *rdy, *fd, *g0, *b0;
                tr_ln_cl cl;
                sx[0] = B; sx[1] = T; sx[2] = C;
                x32 = tr_rand(3, sx, -2, 3); dy32 = tr_rand(3, sx, -1, 1);
                x = tr_cast(&x32, dt); dy = tr_cast(&dy32, dt); y = mk(c, dt, 3, sx); dx = mk(c, dt, 3, sx);
                g = tr_rand(1, &C, 0.5f, 1.5f); be = tr_rand(1, &C, -1, 1);
                mean = mk(c, GPUDL_F32, 1, &R); rstd = mk(c, GPUDL_F32, 1, &R);
                dg = tr_rand(1, &C, -1, 1); db = tr_rand(1, &C, -1, 1);
                g0 = tr_dbl(&dg); b0 = tr_dbl(&db);
                rx = tr_dbl(&x); rg = tr_dbl(&g); rb = tr_dbl(&be); rdy = tr_dbl(&dy);
                ry = dalloc(R * C); rm = dalloc(R); rr = dalloc(R); fd = dalloc(R * C);
                CHECK_OK(gpudl_layernorm_forward(c, &y, &mean, &rstd, &x, &g, &be, 0.0f));   /* eps 0 = 1e-5 */
                tr_ln_ref(ry, rm, rr, rx, rg, rb, R, C, 1e-5);
                TR_CLOSE("layernorm forward", &y, ry, R * C, tr_tol_fwd(dt));
                TR_CLOSE("layernorm mean", &mean, rm, R, 2e-6);
                TR_CLOSE("layernorm rstd", &rstd, rr, R, 2e-6);
                CHECK_OK(gpudl_layernorm_backward(c, &dx, &dg, &db, &dy, &x, &g, &mean, &rstd));
                cl.x = rx; cl.g = rg; cl.b = rb; cl.R = R; cl.C = C; cl.eps = 1e-5;
                tr_fd(fd, rx, R * C, rdy, R * C, tr_ln_f, &cl);
                TR_CLOSE("layernorm dx", &dx, fd, R * C, tr_tol_grad(dt));
                tr_fd(fd, rg, C, rdy, R * C, tr_ln_f, &cl);
                for (i = 0; i < C; i++) fd[i] += g0[i];
                TR_CLOSE("layernorm dgamma", &dg, fd, C, 1e-5);
                tr_fd(fd, rb, C, rdy, R * C, tr_ln_f, &cl);
                for (i = 0; i < C; i++) fd[i] += b0[i];
                TR_CLOSE("layernorm dbeta", &db, fd, C, 1e-5);
                free(rx); free(rg); free(rb); free(ry); free(rm); free(rr); free(rdy); free(fd); free(g0); free(b0);
                gpudl_tensor_free(c, &x32); gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy32);
                gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx); gpudl_tensor_free(c, &g); gpudl_tensor_free(c, &be);
                gpudl_tensor_free(c, &mean); gpudl_tensor_free(c, &rstd); gpudl_tensor_free(c, &dg); gpudl_tensor_free(c, &db);
            }
}

/* Layer norm in place on ctx d: y = x, and backward with dx = dy and with
   dx = x, each bit for bit as with separate tensors. */
static void tr_ln_alias_on(gpudl_ctx *d) {
    int64_t R = 21, C = 20, sx[2];
    gpudl_tensor hx, hdy, hg, x, dy, y, dx, x2, dy2, g, b, m, r, dg, db, dg2, db2, h1, h2;
    gpudl_device dev = gpudl_ctx_device(d);
    sx[0] = R; sx[1] = C;
    hx = tr_rand(2, sx, -2, 3); hdy = tr_rand(2, sx, -1, 1); hg = tr_rand(1, &C, 0.5f, 1.5f);
#define TR_A(t, nd, sh) GPUDL_CHECK(gpudl_tensor_create_on(d, &t, dev, GPUDL_F32, nd, sh))
    TR_A(x, 2, sx); TR_A(dy, 2, sx); TR_A(y, 2, sx); TR_A(dx, 2, sx); TR_A(x2, 2, sx); TR_A(dy2, 2, sx);
    TR_A(g, 1, &C); TR_A(b, 1, &C); TR_A(m, 1, &R); TR_A(r, 1, &R); TR_A(dg, 1, &C); TR_A(db, 1, &C); TR_A(dg2, 1, &C);
    TR_A(db2, 1, &C);
#undef TR_A
    GPUDL_CHECK(gpudl_tensor_copy(d, &x, &hx)); GPUDL_CHECK(gpudl_tensor_copy(d, &x2, &hx));
    GPUDL_CHECK(gpudl_tensor_copy(d, &dy, &hdy)); GPUDL_CHECK(gpudl_tensor_copy(d, &dy2, &hdy));
    GPUDL_CHECK(gpudl_tensor_copy(d, &g, &hg)); GPUDL_CHECK(gpudl_tensor_fill(d, &b, 0.25f));
    GPUDL_CHECK(gpudl_tensor_fill(d, &dg, 0)); GPUDL_CHECK(gpudl_tensor_fill(d, &db, 0));
    GPUDL_CHECK(gpudl_tensor_fill(d, &dg2, 0)); GPUDL_CHECK(gpudl_tensor_fill(d, &db2, 0));
    CHECK_OK(gpudl_layernorm_forward(d, &y, &m, &r, &x, &g, &b, 0.0f));
    CHECK_OK(gpudl_layernorm_backward(d, &dx, &dg, &db, &dy, &x, &g, &m, &r));
    CHECK_OK(gpudl_layernorm_backward(d, &dy2, &dg2, &db2, &dy2, &x, &g, &m, &r));   /* dx = dy */
    h1 = to_host(d, &dx); h2 = to_host(d, &dy2);
    CHECK(memcmp(h1.data, h2.data, gpudl_tensor_bytes(&h1)) == 0);
    gpudl_tensor_free(cpu_ctx(), &h2);
    h2 = to_host(d, &dg2);
    {
        gpudl_tensor h3 = to_host(d, &dg);
        CHECK(memcmp(h3.data, h2.data, gpudl_tensor_bytes(&h3)) == 0);
        gpudl_tensor_free(cpu_ctx(), &h3);
    }
    gpudl_tensor_free(cpu_ctx(), &h2);
    CHECK_OK(gpudl_layernorm_backward(d, &x2, NULL, NULL, &dy, &x2, &g, &m, &r));    /* dx = x */
    h2 = to_host(d, &x2);
    CHECK(memcmp(h1.data, h2.data, gpudl_tensor_bytes(&h1)) == 0);
    gpudl_tensor_free(cpu_ctx(), &h2);
    GPUDL_CHECK(gpudl_tensor_copy(d, &x2, &hx));
    CHECK_OK(gpudl_layernorm_forward(d, &x2, &m, &r, &x2, &g, &b, 0.0f));               /* y = x */
    h2 = to_host(d, &x2);
    {
        gpudl_tensor h3 = to_host(d, &y);
        CHECK(memcmp(h3.data, h2.data, gpudl_tensor_bytes(&h3)) == 0);
        gpudl_tensor_free(cpu_ctx(), &h3);
    }
    gpudl_tensor_free(cpu_ctx(), &h1); gpudl_tensor_free(cpu_ctx(), &h2);
    gpudl_tensor_free(cpu_ctx(), &hx); gpudl_tensor_free(cpu_ctx(), &hdy); gpudl_tensor_free(cpu_ctx(), &hg);
    gpudl_tensor_free(d, &x); gpudl_tensor_free(d, &dy); gpudl_tensor_free(d, &y); gpudl_tensor_free(d, &dx);
    gpudl_tensor_free(d, &x2); gpudl_tensor_free(d, &dy2); gpudl_tensor_free(d, &g); gpudl_tensor_free(d, &b);
    gpudl_tensor_free(d, &m); gpudl_tensor_free(d, &r); gpudl_tensor_free(d, &dg); gpudl_tensor_free(d, &db);
    gpudl_tensor_free(d, &dg2); gpudl_tensor_free(d, &db2);
}

static void test_transformer_layernorm_in_place(void) { tr_ln_alias_on(cpu_ctx()); }

/* ---- attention ---- */

/* (B, T, C, NH): head sizes 12, 3, 5, 10, 6, 20 */
static const int64_t tr_attn_cases[][4] = {{2, 1, 12, 1}, {2, 7, 12, 4}, {1, 13, 20, 4}, {2, 7, 20, 2}, {2, 13, 12, 2},
                                           {1, 13, 20, 1}};

static void test_transformer_attention(void) {
    gpudl_ctx *c = cpu_ctx();
    size_t s, k;
    for (s = 0; s < sizeof tr_attn_cases / sizeof tr_attn_cases[0]; s++)
        for (k = 0; k < 3; k++) {
            gpudl_dtype dt = tr_dtypes[k];
            int64_t B = tr_attn_cases[s][0], T = tr_attn_cases[s][1], C = tr_attn_cases[s][2], NH = tr_attn_cases[s][3];
            int64_t sq[3], sy[3], sa[4], i, masked_nonzero = 0;
            gpudl_tensor qkv32, qkv, y, att, dy32, dy, dqkv;
            double *rq, *ry, *ra, *rdy, *fd;
            tr_at_cl cl;
            sq[0] = B; sq[1] = T; sq[2] = 3 * C; sy[0] = B; sy[1] = T; sy[2] = C; sa[0] = B; sa[1] = NH; sa[2] = T; sa[3] = T;
            qkv32 = tr_rand(3, sq, -1.5f, 1.5f); dy32 = tr_rand(3, sy, -1, 1);
            qkv = tr_cast(&qkv32, dt); dy = tr_cast(&dy32, dt);
            y = mk(c, dt, 3, sy); dqkv = mk(c, dt, 3, sq);
            GPUDL_CHECK(gpudl_tensor_create_on(c, &att, GPUDL_DEVICE_CPU, dt, 4, sa));
            GPUDL_CHECK(gpudl_tensor_fill(c, &att, 7.0f));   /* every element must be written */
            rq = tr_dbl(&qkv); rdy = tr_dbl(&dy); ry = dalloc(B * T * C); ra = dalloc(B * NH * T * T); fd = dalloc(B * T * 3 * C);
            CHECK_OK(gpudl_attention_forward(c, &y, &att, &qkv, NH));
            tr_attn_ref(ry, ra, rq, B, T, C, NH);
            TR_CLOSE("attention forward y", &y, ry, B * T * C, tr_tol_fwd(dt));
            TR_CLOSE("attention forward att", &att, ra, B * NH * T * T, tr_tol_fwd(dt));
            for (i = 0; i < B * NH * T * T; i++)
                if (i % T > (i / T) % T && ld(&att, i) != 0.0) masked_nonzero++;
            CHECKF(masked_nonzero == 0, "attention: %lld masked probabilities are not exactly 0", (long long)masked_nonzero);
            CHECK_OK(gpudl_attention_backward(c, &dqkv, &dy, &qkv, &att, NH));
            cl.qkv = rq; cl.B = B; cl.T = T; cl.C = C; cl.NH = NH;
            tr_fd(fd, rq, B * T * 3 * C, rdy, B * T * C, tr_at_f, &cl);
            TR_CLOSE("attention dqkv", &dqkv, fd, B * T * 3 * C, tr_tol_grad(dt));
            free(rq); free(ry); free(ra); free(rdy); free(fd);
            gpudl_tensor_free(c, &qkv32); gpudl_tensor_free(c, &qkv); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &att);
            gpudl_tensor_free(c, &dy32); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dqkv);
        }
}

/* The fused path (no T x T matrix) against the same references: y, lse,
   and dqkv against central differences; and against the simple path. */
static void test_transformer_attention_fused(void) {
    gpudl_ctx *c = cpu_ctx();
    size_t s, k;
    for (s = 0; s < sizeof tr_attn_cases / sizeof tr_attn_cases[0]; s++)
        for (k = 0; k < 3; k++) {
            gpudl_dtype dt = tr_dtypes[k];
            int64_t B = tr_attn_cases[s][0], T = tr_attn_cases[s][1], C = tr_attn_cases[s][2], NH = tr_attn_cases[s][3];
            int64_t sq[3], sy[3], sl[3], sa[4];
            gpudl_tensor qkv32, qkv, y, y2, lse, att, dy32, dy, dqkv, dqkv2;
            double *rq, *ry, *rl, *rdy, *fd, *d2;
            tr_at_cl cl;
            sq[0] = B; sq[1] = T; sq[2] = 3 * C; sy[0] = B; sy[1] = T; sy[2] = C; sl[0] = B; sl[1] = NH; sl[2] = T;
            sa[0] = B; sa[1] = NH; sa[2] = T; sa[3] = T;
            qkv32 = tr_rand(3, sq, -1.5f, 1.5f); dy32 = tr_rand(3, sy, -1, 1);
            qkv = tr_cast(&qkv32, dt); dy = tr_cast(&dy32, dt);
            y = mk(c, dt, 3, sy); y2 = mk(c, dt, 3, sy); dqkv = mk(c, dt, 3, sq); dqkv2 = mk(c, dt, 3, sq);
            lse = mk(c, GPUDL_F32, 3, sl);
            GPUDL_CHECK(gpudl_tensor_create_on(c, &att, GPUDL_DEVICE_CPU, dt, 4, sa));
            rq = tr_dbl(&qkv); rdy = tr_dbl(&dy); ry = dalloc(B * T * C); rl = dalloc(B * NH * T); fd = dalloc(B * T * 3 * C);
            CHECK_OK(gpudl_attention_fused_forward(c, &y, &lse, &qkv, NH));
            tr_attn_ref_lse(ry, NULL, rl, rq, B, T, C, NH);
            TR_CLOSE("fused attention y", &y, ry, B * T * C, tr_tol_fwd(dt));
            TR_CLOSE("fused attention lse", &lse, rl, B * NH * T, 2e-6);
            CHECK_OK(gpudl_attention_fused_backward(c, &dqkv, &dy, &qkv, &y, &lse, NH));
            cl.qkv = rq; cl.B = B; cl.T = T; cl.C = C; cl.NH = NH;
            tr_fd(fd, rq, B * T * 3 * C, rdy, B * T * C, tr_at_f, &cl);
            TR_CLOSE("fused attention dqkv", &dqkv, fd, B * T * 3 * C, 2 * tr_tol_grad(dt));
            /* the simple path gives the same */
            CHECK_OK(gpudl_attention_forward(c, &y2, &att, &qkv, NH));
            CHECK_OK(gpudl_attention_backward(c, &dqkv2, &dy, &qkv, &att, NH));
            d2 = tr_dbl(&y2);
            TR_CLOSE("fused vs simple attention y", &y, d2, B * T * C, tr_tol_fwd(dt));
            free(d2);
            d2 = tr_dbl(&dqkv2);
            TR_CLOSE("fused vs simple attention dqkv", &dqkv, d2, B * T * 3 * C, 2 * tr_tol_grad(dt));
            free(d2);
            free(rq); free(ry); free(rl); free(rdy); free(fd);
            gpudl_tensor_free(c, &qkv32); gpudl_tensor_free(c, &qkv); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &y2);
            gpudl_tensor_free(c, &lse); gpudl_tensor_free(c, &att); gpudl_tensor_free(c, &dy32); gpudl_tensor_free(c, &dy);
            gpudl_tensor_free(c, &dqkv); gpudl_tensor_free(c, &dqkv2);
        }
}

/* The causal mask, on the device ctx (the CPU, or the GPU): a change to
   position t0's q, k and v changes no output (y, att rows) before t0, bit
   for bit; a gradient at position t0 alone reaches no input after t0. */
static void tr_causal_on(gpudl_ctx *d, gpudl_dtype dt, int fused) {
    int64_t B = 2, T = 13, C = 20, NH = 4, t0 = 6, sq[3], sy[3], sa[4], i, t, leaks = 0, moved = 0, na;
    gpudl_tensor qkv32, dy32, hq, hdy, qkv, y, y2, att, att2, dy, dqkv, hy, hy2, ha, ha2, hd;
    gpudl_device dev = gpudl_ctx_device(d);
    double ymax = 0, tol;
    sq[0] = B; sq[1] = T; sq[2] = 3 * C; sy[0] = B; sy[1] = T; sy[2] = C; sa[0] = B; sa[1] = NH; sa[2] = T; sa[3] = T;
    qkv32 = tr_rand(3, sq, -1.5f, 1.5f); dy32 = tr_rand(3, sy, -1, 1);
    hq = tr_cast(&qkv32, dt); hdy = tr_cast(&dy32, dt);
    GPUDL_CHECK(gpudl_tensor_create_on(d, &qkv, dev, dt, 3, sq)); GPUDL_CHECK(gpudl_tensor_copy(d, &qkv, &hq));
    GPUDL_CHECK(gpudl_tensor_create_on(d, &y, dev, dt, 3, sy)); GPUDL_CHECK(gpudl_tensor_create_on(d, &y2, dev, dt, 3, sy));
    if (fused) {   /* att holds lse (B,NH,T) */
        GPUDL_CHECK(gpudl_tensor_create_on(d, &att, dev, GPUDL_F32, 3, sa));
        GPUDL_CHECK(gpudl_tensor_create_on(d, &att2, dev, GPUDL_F32, 3, sa));
    } else {
        GPUDL_CHECK(gpudl_tensor_create_on(d, &att, dev, dt, 4, sa));
        GPUDL_CHECK(gpudl_tensor_create_on(d, &att2, dev, dt, 4, sa));
    }
    na = gpudl_tensor_numel(&att);
    GPUDL_CHECK(gpudl_tensor_create_on(d, &dqkv, dev, dt, 3, sq)); GPUDL_CHECK(gpudl_tensor_create_on(d, &dy, dev, dt, 3, sy));
    CHECK_OK(fused ? gpudl_attention_fused_forward(d, &y, &att, &qkv, NH) : gpudl_attention_forward(d, &y, &att, &qkv, NH));
    for (i = 0; i < B; i++) {   /* position t0 of every batch entry: new q, k, v */
        int64_t j;
        for (j = 0; j < 3 * C; j++) {
            int64_t e = (i * T + t0) * 3 * C + j;
            if (dt == GPUDL_F32) ((float *)hq.data)[e] += 0.75f;
            else ((uint16_t *)hq.data)[e] ^= 0x0100;   /* a different 16-bit value */
        }
    }
    GPUDL_CHECK(gpudl_tensor_copy(d, &qkv, &hq));
    CHECK_OK(fused ? gpudl_attention_fused_forward(d, &y2, &att2, &qkv, NH) : gpudl_attention_forward(d, &y2, &att2, &qkv, NH));
    hy = to_host(d, &y); hy2 = to_host(d, &y2); ha = to_host(d, &att); ha2 = to_host(d, &att2);
    /* The CPU repeats itself bit for bit. A GPU does too, but the emulator's
       CUEMU_MATH=perturb gives each expf call any value within NVIDIA's
       bound: there a few ulps of the largest output are allowed (a leak
       moves outputs by percents: the changed values differ by 25% or more). */
    for (i = 0; i < B * T * C; i++) if (fabs(ld(&hy, i)) > ymax) ymax = fabs(ld(&hy, i));
    tol = dev == GPUDL_DEVICE_CUDA ? 4 * tr_tol_fwd(dt) * ymax : 0.0;
    for (i = 0; i < B * T * C; i++) {
        t = (i / C) % T;
        if (t < t0 && fabs(ld(&hy, i) - ld(&hy2, i)) > tol) leaks++;
        if (t >= t0 && ld(&hy, i) != ld(&hy2, i)) moved++;
    }
    tol = dev == GPUDL_DEVICE_CUDA ? 4 * tr_tol_fwd(fused ? GPUDL_F32 : dt) : 0.0;
    for (i = 0; i < na; i++)   /* the rows of att (or lse) of queries before t0 */
        if ((fused ? i : i / T) % T < t0 && fabs(ld(&ha, i) - ld(&ha2, i)) > tol * (fused ? fabs(ld(&ha, i)) + 1 : 1)) leaks++;
    CHECKF(leaks == 0, "attention (%s%s): a change at t = %lld changed %lld outputs before it", gpudl_dtype_name(dt),
           fused ? ", fused" : "", (long long)t0, (long long)leaks);
    CHECKF(moved > 0, "attention (%s): the change at t = %lld changed nothing at all", gpudl_dtype_name(dt), (long long)t0);
    /* dy nonzero at t0 only: no gradient reaches q, k, v after t0 */
    for (i = 0; i < B * T * C; i++)
        if ((i / C) % T != t0) {
            if (dt == GPUDL_F32) ((float *)hdy.data)[i] = 0.0f;
            else ((uint16_t *)hdy.data)[i] = 0;
        }
    GPUDL_CHECK(gpudl_tensor_copy(d, &dy, &hdy));
    CHECK_OK(fused ? gpudl_attention_fused_backward(d, &dqkv, &dy, &qkv, &y2, &att2, NH)
                   : gpudl_attention_backward(d, &dqkv, &dy, &qkv, &att2, NH));
    hd = to_host(d, &dqkv);
    leaks = moved = 0;
    for (i = 0; i < B * T * 3 * C; i++) {
        t = (i / (3 * C)) % T;
        if (t > t0 && ld(&hd, i) != 0.0) leaks++;
        if (t <= t0 && ld(&hd, i) != 0.0) moved++;
    }
    CHECKF(leaks == 0, "attention backward (%s%s): %lld gradients after t = %lld", gpudl_dtype_name(dt), fused ? ", fused" : "",
           (long long)leaks, (long long)t0);
    CHECKF(moved > 0, "attention backward (%s): no gradient at all", gpudl_dtype_name(dt));
    if (dev == GPUDL_DEVICE_CPU && dt == GPUDL_F32) {
        /* The CPU skips the masked terms, not multiplies them by 0: a NaN and
           an Inf at t0 (a padded or corrupt position) change no output
           before it either. (A GPU's GEMMs multiply the masked 0s.) */
        for (i = 0; i < B; i++) {
            int64_t j;
            for (j = 0; j < 3 * C; j++) ((float *)hq.data)[(i * T + t0) * 3 * C + j] = j % 2 ? NAN : INFINITY;
        }
        GPUDL_CHECK(gpudl_tensor_copy(d, &qkv, &hq));
        CHECK_OK(fused ? gpudl_attention_fused_forward(d, &y2, &att2, &qkv, NH) : gpudl_attention_forward(d, &y2, &att2, &qkv, NH));
        gpudl_tensor_free(cpu_ctx(), &hy2);
        hy2 = to_host(d, &y2);
        leaks = 0;
        for (i = 0; i < B * T * C; i++)
            if ((i / C) % T < t0 && memcmp((float *)hy.data + i, (float *)hy2.data + i, sizeof(float))) leaks++;
        CHECKF(leaks == 0, "attention (%s): a NaN and an Inf at t = %lld changed %lld outputs before it",
               fused ? "fused" : "F32", (long long)t0, (long long)leaks);
    }
    gpudl_tensor_free(cpu_ctx(), &qkv32); gpudl_tensor_free(cpu_ctx(), &dy32); gpudl_tensor_free(cpu_ctx(), &hq);
    gpudl_tensor_free(cpu_ctx(), &hdy); gpudl_tensor_free(cpu_ctx(), &hy); gpudl_tensor_free(cpu_ctx(), &hy2);
    gpudl_tensor_free(cpu_ctx(), &ha); gpudl_tensor_free(cpu_ctx(), &ha2); gpudl_tensor_free(cpu_ctx(), &hd);
    gpudl_tensor_free(d, &qkv); gpudl_tensor_free(d, &y); gpudl_tensor_free(d, &y2); gpudl_tensor_free(d, &att);
    gpudl_tensor_free(d, &att2); gpudl_tensor_free(d, &dy); gpudl_tensor_free(d, &dqkv);
}

static void test_transformer_causal(void) {
    size_t k;
    for (k = 0; k < 6; k++) tr_causal_on(cpu_ctx(), tr_dtypes[k % 3], k >= 3);
}

/* ---- cross-entropy over every position: the existing loss on (B*T, V) ---- */

static void test_transformer_xent_positions(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t B = 3, T = 7, V = 13, N = B * T, sl[3], s2[2], one = 1, n, v;
    gpudl_tensor logits, view, probs, loss, dl, ids = tr_ids(GPUDL_I32, B, T, V, 99);
    double total = 0, err = 0;
    sl[0] = B; sl[1] = T; sl[2] = V; s2[0] = N; s2[1] = V;
    logits = tr_rand(3, sl, -3, 3);
    probs = mk(c, GPUDL_F32, 2, s2); dl = mk(c, GPUDL_F32, 2, s2); loss = mk(c, GPUDL_F32, 1, &one);
    CHECK_OK(gpudl_tensor_reshape(&view, &logits, 2, s2));   /* (B,T,V) -> (B*T, V): labels (B,T) */
    CHECK_OK(gpudl_softmax_xent_forward(c, &loss, &probs, &view, &ids));
    CHECK_OK(gpudl_softmax_xent_backward(c, &dl, &probs, &ids, 1.0f));
    for (n = 0; n < N; n++) {
        const float *z = F(&logits) + n * V;
        double mx = z[0], s = 0;
        int64_t lab = ((const int32_t *)ids.data)[n];
        for (v = 1; v < V; v++) if (z[v] > mx) mx = z[v];
        for (v = 0; v < V; v++) s += exp(z[v] - mx);
        total += mx + log(s) - z[lab];
        for (v = 0; v < V; v++) {
            double g = (exp(z[v] - mx) / s - (v == lab)) / (double)N;
            if (fabs(F(&dl)[n * V + v] - g) > err) err = fabs(F(&dl)[n * V + v] - g);
        }
    }
    CHECKF(fabs(F(&loss)[0] - total / (double)N) <= 1e-6 * (total / (double)N), "loss over positions %g, want %g",
           (double)F(&loss)[0], total / (double)N);
    CHECKF(err <= 1e-7, "dlogits over positions: max err %g", err);
    gpudl_tensor_free(c, &logits); gpudl_tensor_free(c, &probs); gpudl_tensor_free(c, &loss); gpudl_tensor_free(c, &dl);
    gpudl_tensor_free(c, &ids);
}

/* ---- bad input ---- */

static void test_transformer_bad_input(void) {
    gpudl_ctx *c = cpu_ctx();
    int64_t s3[3] = {2, 5, 12}, sq[3] = {2, 5, 36}, sa[4] = {2, 4, 5, 5}, sw[2] = {7, 12}, sp[2] = {6, 12}, sp4[2] = {4, 12}, R = 10, C = 12, i;
    gpudl_tensor y = mk(c, GPUDL_F32, 3, s3), qkv = tr_rand(3, sq, -1, 1), att = mk(c, GPUDL_F32, 4, sa), dq = mk(c, GPUDL_F32, 3, sq);
    gpudl_tensor wte = tr_rand(2, sw, -1, 1), wpe = tr_rand(2, sp, -1, 1), ids = tr_ids(GPUDL_I32, 2, 5, 7, 3), fids, y16;
    gpudl_tensor g = tr_rand(1, &C, -1, 1), b = tr_rand(1, &C, -1, 1), m = mk(c, GPUDL_F32, 1, &R), r = mk(c, GPUDL_F32, 1, &R);
    gpudl_tensor g5, dwte = mk(c, GPUDL_F32, 2, sw);
    int64_t five = 5, sa3[4] = {2, 3, 5, 5};
    GPUDL_CHECK(gpudl_tensor_fill(c, &dwte, 0.0f));
    /* attention: NH must divide C; att (B,NH,T,T); one dtype */
    CHECK_ST(gpudl_attention_forward(c, &y, &att, &qkv, 5), GPUDL_ERR_INVALID_ARG);
    CHECK(strstr(gpudl_ctx_last_error(c), "does not divide") != NULL);
    CHECK_ST(gpudl_attention_forward(c, &y, &att, &qkv, 0), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_attention_forward(c, &y, &att, &qkv, 3), GPUDL_ERR_SHAPE);   /* 3 divides 12 but att has 4 heads */
    CHECK_OK(gpudl_attention_forward(c, &y, &att, &qkv, 4));
    CHECK_ST(gpudl_attention_forward(c, &y, &att, &y, 4), GPUDL_ERR_SHAPE);     /* qkv's last dim 12: C = 4, y's is 12 */
    CHECK_ST(gpudl_attention_backward(c, &y, &y, &qkv, &att, 4), GPUDL_ERR_SHAPE);   /* dqkv shaped like y */
    y16 = tr_cast(&y, GPUDL_F16);
    CHECK_ST(gpudl_attention_forward(c, &y16, &att, &qkv, 4), GPUDL_ERR_INVALID_ARG);
    {   /* fused: lse (B,NH,T) f32, head size <= 256 */
        int64_t sl[3] = {2, 4, 5}, sbig[3] = {1, 2, 3 * 257}, sybig[3] = {1, 2, 257}, slb[3] = {1, 1, 2};
        gpudl_tensor lse = mk(c, GPUDL_F32, 3, sl), qb = tr_rand(3, sbig, -1, 1), yb = mk(c, GPUDL_F32, 3, sybig);
        gpudl_tensor lb = mk(c, GPUDL_F32, 3, slb);
        CHECK_OK(gpudl_attention_fused_forward(c, &y, &lse, &qkv, 4));
        CHECK_ST(gpudl_attention_fused_forward(c, &y, &lse, &qkv, 2), GPUDL_ERR_SHAPE);
        CHECK_ST(gpudl_attention_fused_forward(c, &y, &att, &qkv, 4), GPUDL_ERR_SHAPE);
        CHECK_ST(gpudl_attention_fused_forward(c, &y, &lse, &qkv, 5), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_attention_fused_backward(c, &dq, &y, &qkv, &y16, &lse, 4), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_attention_fused_forward(c, &yb, &lb, &qb, 1), GPUDL_ERR_UNSUPPORTED);
        CHECK(strstr(gpudl_ctx_last_error(c), "head size 257") != NULL);
        gpudl_tensor_free(c, &lse); gpudl_tensor_free(c, &qb); gpudl_tensor_free(c, &yb); gpudl_tensor_free(c, &lb);
    }
    {
        gpudl_tensor att3 = mk(c, GPUDL_F32, 4, sa3);
        CHECK_ST(gpudl_attention_forward(c, &y, &att3, &qkv, 4), GPUDL_ERR_SHAPE);
        gpudl_tensor_free(c, &att3);
    }
    /* embedding: ids i32/u8 (B,T), in range, before anything is written; T <= Tmax */
    GPUDL_CHECK(gpudl_tensor_fill(c, &y, 5.0f));
    ((int32_t *)ids.data)[7] = 7;
    CHECK_ST(gpudl_embedding_forward(c, &y, &ids, &wte, &wpe), GPUDL_ERR_INVALID_ARG);
    CHECK(strstr(gpudl_ctx_last_error(c), "outside [0, 7)") != NULL);
    for (i = 0; i < 2 * 5 * 12; i++) CHECK(F(&y)[i] == 5.0f);
    CHECK_ST(gpudl_embedding_backward(c, &dwte, NULL, &y, &ids), GPUDL_ERR_INVALID_ARG);
    ((int32_t *)ids.data)[7] = -1;
    CHECK_ST(gpudl_embedding_forward(c, &y, &ids, &wte, &wpe), GPUDL_ERR_INVALID_ARG);
    for (i = 0; i < 7 * 12; i++) CHECK(F(&dwte)[i] == 0.0f);   /* nothing added */
    ((int32_t *)ids.data)[7] = 0;
    {
        gpudl_tensor wpe4 = tr_rand(2, sp4, -1, 1);
        CHECK_ST(gpudl_embedding_forward(c, &y, &ids, &wte, &wpe4), GPUDL_ERR_SHAPE);   /* T = 5 > Tmax = 4 */
        gpudl_tensor_free(c, &wpe4);
    }
    CHECK_OK(gpudl_embedding_forward(c, &y, &ids, &wte, &wpe));
    CHECK_OK(gpudl_embedding_forward(c, &y, &ids, &wte, NULL));
    fids = tr_cast(&wpe, GPUDL_F32);
    CHECK_ST(gpudl_embedding_forward(c, &y, &fids, &wte, NULL), GPUDL_ERR_INVALID_ARG);   /* f32 ids */
    CHECK_ST(gpudl_embedding_forward(c, &y, &ids, &y, NULL), GPUDL_ERR_SHAPE);            /* a 3-D table */
    CHECK_ST(gpudl_embedding_forward(c, &y16, &ids, &wte, NULL), GPUDL_ERR_INVALID_ARG);  /* dtypes differ */
    CHECK_ST(gpudl_embedding_backward(c, &y16, NULL, &y, &ids), GPUDL_ERR_INVALID_ARG);   /* dwte must be f32 */
    /* layer norm: gamma (C), mean/rstd (rows) */
    g5 = tr_rand(1, &five, -1, 1);
    CHECK_ST(gpudl_layernorm_forward(c, &y, &m, &r, &y, &g5, &b, 0.0f), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_layernorm_forward(c, &y, &g, &r, &y, &g, &b, 0.0f), GPUDL_ERR_SHAPE);
    CHECK_ST(gpudl_layernorm_forward(c, &y, &m, &r, &y, &g, &b, -1.0f), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_layernorm_forward(c, &y16, &m, &r, &y, &g, &b, 0.0f), GPUDL_ERR_INVALID_ARG);
    CHECK_ST(gpudl_layernorm_backward(c, &dq, NULL, NULL, &y, &y, &g, &m, &r), GPUDL_ERR_SHAPE);
    CHECK_OK(gpudl_layernorm_forward(c, &y, &m, &r, &y, &g, &b, 0.0f));   /* in place */
    gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &qkv); gpudl_tensor_free(c, &att); gpudl_tensor_free(c, &dq);
    gpudl_tensor_free(c, &wte); gpudl_tensor_free(c, &wpe); gpudl_tensor_free(c, &ids); gpudl_tensor_free(c, &fids);
    gpudl_tensor_free(c, &y16); gpudl_tensor_free(c, &g); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &m);
    gpudl_tensor_free(c, &r); gpudl_tensor_free(c, &g5); gpudl_tensor_free(c, &dwte);
}

/* ---- the GPU against the CPU ---- */

/* GPU result against the CPU's, relative to the largest CPU value. */
static void tr_gpu_vs_cpu(gpudl_ctx *g, const char *what, gpudl_dtype dt, const gpudl_tensor *dev, const gpudl_tensor *host,
                          double tol) {
    gpudl_tensor back = to_host(g, dev);
    double *ref = tr_dbl(host), e = tr_err(&back, ref, gpudl_tensor_numel(host));
    CHECKF(e <= tol, "%s (%s): GPU vs CPU rel err %g > %g", what, gpudl_dtype_name(dt), e, tol);
    free(ref);
    gpudl_tensor_free(cpu_ctx(), &back);
}

static double tr_tol_gpu(gpudl_dtype dt) { return dt == GPUDL_F32 ? 2e-5 : dt == GPUDL_F16 ? 4e-3 : 3e-2; }

static void test_gpu_transformer_ops(void) {
    /* (B, T, C, NH): odd head sizes; T = 40 > 32 so a warp's lanes loop over a row */
    static const int64_t cases[][4] = {{2, 7, 12, 4}, {1, 13, 20, 4}, {2, 40, 20, 2}, {2, 1, 12, 1}};
    gpudl_ctx *c = cpu_ctx();
    size_t s, k;
    NEED_GPU(g);
    for (s = 0; s < sizeof cases / sizeof cases[0]; s++)
        for (k = 0; k < 3; k++) {
            gpudl_dtype dt = tr_dtypes[k];
            int64_t B = cases[s][0], T = cases[s][1], C = cases[s][2], NH = cases[s][3], V = 11, R = B * T;
            int64_t sy[3], sq[3], sa[4], sw[2], sp[2];
            gpudl_tensor t32[6], ids, wte, wpe, y, dy, qkv, att, dq, dwte, dwpe, gam, bet, mean, rstd, dgam, dbet, xln, dx;
            gpudl_tensor G[16];
            double tol = tr_tol_gpu(dt);
            int n;
            sy[0] = B; sy[1] = T; sy[2] = C; sq[0] = B; sq[1] = T; sq[2] = 3 * C; sa[0] = B; sa[1] = NH; sa[2] = T; sa[3] = T;
            sw[0] = V; sw[1] = C; sp[0] = T + 1; sp[1] = C;
            t32[0] = tr_rand(2, sw, -1, 1); t32[1] = tr_rand(2, sp, -1, 1); t32[2] = tr_rand(3, sy, -1, 1);
            t32[3] = tr_rand(3, sq, -1.5f, 1.5f); t32[4] = tr_rand(3, sy, -2, 3);
            wte = tr_cast(&t32[0], dt); wpe = tr_cast(&t32[1], dt); dy = tr_cast(&t32[2], dt); qkv = tr_cast(&t32[3], dt);
            xln = tr_cast(&t32[4], dt);
            ids = tr_ids(k == 1 ? GPUDL_U8 : GPUDL_I32, B, T, V, (uint32_t)(s * 3 + k));
            y = mk(c, dt, 3, sy); dx = mk(c, dt, 3, sy); dq = mk(c, dt, 3, sq);
            GPUDL_CHECK(gpudl_tensor_create_on(c, &att, GPUDL_DEVICE_CPU, dt, 4, sa));
            dwte = tr_rand(2, sw, -1, 1); dwpe = tr_rand(2, sp, -1, 1);
            gam = tr_rand(1, &C, 0.5f, 1.5f); bet = tr_rand(1, &C, -1, 1); dgam = tr_rand(1, &C, -1, 1); dbet = tr_rand(1, &C, -1, 1);
            mean = mk(c, GPUDL_F32, 1, &R); rstd = mk(c, GPUDL_F32, 1, &R);
            G[0] = to_dev(g, &wte); G[1] = to_dev(g, &wpe); G[2] = to_dev(g, &dy); G[3] = to_dev(g, &qkv); G[4] = to_dev(g, &xln);
            G[5] = to_dev(g, &ids); G[6] = to_dev(g, &y); G[7] = to_dev(g, &dx); G[8] = to_dev(g, &dq); G[9] = to_dev(g, &att);
            G[10] = to_dev(g, &dwte); G[11] = to_dev(g, &dwpe); G[12] = to_dev(g, &dgam); G[13] = to_dev(g, &dbet);
            G[14] = to_dev(g, &mean); G[15] = to_dev(g, &rstd);
            {
                gpudl_tensor ggam = to_dev(g, &gam), gbet = to_dev(g, &bet);
                /* embedding */
                CHECK_OK(gpudl_embedding_forward(c, &y, &ids, &wte, &wpe));
                CHECK_OK(gpudl_embedding_forward(g, &G[6], &G[5], &G[0], &G[1]));
                tr_gpu_vs_cpu(g, "embedding forward", dt, &G[6], &y, 0);
                CHECK_OK(gpudl_embedding_backward(c, &dwte, &dwpe, &dy, &ids));
                CHECK_OK(gpudl_embedding_backward(g, &G[10], &G[11], &G[2], &G[5]));
                tr_gpu_vs_cpu(g, "embedding dwte", dt, &G[10], &dwte, 1e-6);
                tr_gpu_vs_cpu(g, "embedding dwpe", dt, &G[11], &dwpe, 1e-6);
                /* layer norm */
                CHECK_OK(gpudl_layernorm_forward(c, &y, &mean, &rstd, &xln, &gam, &bet, 1e-5f));
                CHECK_OK(gpudl_layernorm_forward(g, &G[6], &G[14], &G[15], &G[4], &ggam, &gbet, 1e-5f));
                tr_gpu_vs_cpu(g, "layernorm forward", dt, &G[6], &y, tol);
                tr_gpu_vs_cpu(g, "layernorm mean", dt, &G[14], &mean, 1e-5);
                tr_gpu_vs_cpu(g, "layernorm rstd", dt, &G[15], &rstd, 1e-5);
                CHECK_OK(gpudl_layernorm_backward(c, &dx, &dgam, &dbet, &dy, &xln, &gam, &mean, &rstd));
                CHECK_OK(gpudl_layernorm_backward(g, &G[7], &G[12], &G[13], &G[2], &G[4], &ggam, &G[14], &G[15]));
                tr_gpu_vs_cpu(g, "layernorm dx", dt, &G[7], &dx, dt == GPUDL_F32 ? 1e-4 : tol);
                tr_gpu_vs_cpu(g, "layernorm dgamma", dt, &G[12], &dgam, 1e-4);
                tr_gpu_vs_cpu(g, "layernorm dbeta", dt, &G[13], &dbet, 1e-5);
                /* attention */
                CHECK_OK(gpudl_attention_forward(c, &y, &att, &qkv, NH));
                CHECK_OK(gpudl_attention_forward(g, &G[6], &G[9], &G[3], NH));
                tr_gpu_vs_cpu(g, "attention y", dt, &G[6], &y, tol);
                tr_gpu_vs_cpu(g, "attention att", dt, &G[9], &att, tol);
                CHECK_OK(gpudl_attention_backward(c, &dq, &dy, &qkv, &att, NH));
                CHECK_OK(gpudl_attention_backward(g, &G[8], &G[2], &G[3], &G[9], NH));
                tr_gpu_vs_cpu(g, "attention dqkv", dt, &G[8], &dq, dt == GPUDL_F32 ? 1e-4 : 2 * tol);
                {   /* the fused path, GPU against CPU */
                    int64_t sl[3];
                    gpudl_tensor lse, glse, gy2;
                    sl[0] = B; sl[1] = NH; sl[2] = T;
                    lse = mk(c, GPUDL_F32, 3, sl); glse = to_dev(g, &lse); gy2 = to_dev(g, &y);
                    CHECK_OK(gpudl_attention_fused_forward(c, &y, &lse, &qkv, NH));
                    CHECK_OK(gpudl_attention_fused_forward(g, &gy2, &glse, &G[3], NH));
                    tr_gpu_vs_cpu(g, "fused attention y", dt, &gy2, &y, tol);
                    tr_gpu_vs_cpu(g, "fused attention lse", dt, &glse, &lse, 1e-5);
                    CHECK_OK(gpudl_attention_fused_backward(c, &dq, &dy, &qkv, &y, &lse, NH));
                    CHECK_OK(gpudl_attention_fused_backward(g, &G[8], &G[2], &G[3], &gy2, &glse, NH));
                    tr_gpu_vs_cpu(g, "fused attention dqkv", dt, &G[8], &dq, dt == GPUDL_F32 ? 1e-4 : 2 * tol);
                    gpudl_tensor_free(c, &lse); gpudl_tensor_free(g, &glse); gpudl_tensor_free(g, &gy2);
                }
                {   /* masked probabilities exactly 0 on the GPU too */
                    gpudl_tensor ha = to_host(g, &G[9]);
                    int64_t i, bad = 0;
                    for (i = 0; i < B * NH * T * T; i++) if (i % T > (i / T) % T && ld(&ha, i) != 0.0) bad++;
                    CHECKF(bad == 0, "attention (GPU, %s): %lld masked probabilities not 0", gpudl_dtype_name(dt), (long long)bad);
                    gpudl_tensor_free(c, &ha);
                }
                gpudl_tensor_free(g, &ggam); gpudl_tensor_free(g, &gbet);
            }
            for (n = 0; n < 16; n++) gpudl_tensor_free(g, &G[n]);
            for (n = 0; n < 5; n++) gpudl_tensor_free(c, &t32[n]);
            gpudl_tensor_free(c, &ids); gpudl_tensor_free(c, &wte); gpudl_tensor_free(c, &wpe); gpudl_tensor_free(c, &y);
            gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &qkv); gpudl_tensor_free(c, &att); gpudl_tensor_free(c, &dq);
            gpudl_tensor_free(c, &dwte); gpudl_tensor_free(c, &dwpe); gpudl_tensor_free(c, &gam); gpudl_tensor_free(c, &bet);
            gpudl_tensor_free(c, &mean); gpudl_tensor_free(c, &rstd); gpudl_tensor_free(c, &dgam); gpudl_tensor_free(c, &dbet);
            gpudl_tensor_free(c, &xln); gpudl_tensor_free(c, &dx);
        }
}

/* The GPU's causal mask (as test_transformer_causal), layer norm rows longer
   than the shared-memory cache and the chunked parameter sums, and an id out
   of range: reported at the next wait. */
static void test_gpu_transformer_edges(void) {
    gpudl_ctx *c = cpu_ctx();
    size_t k;
    NEED_GPU(g);
    for (k = 0; k < 6; k++) tr_causal_on(g, tr_dtypes[k % 3], k >= 3);
    tr_ln_alias_on(g);
    {   /* rows longer than the softmax kernels' shared-memory cache (T = 1540), and
           large scores (|q|, |k| up to 12: scores in the hundreds, rows near one-hot) */
        static const int64_t cases[][5] = {{1, 1540, 2, 1, 1}, {2, 9, 20, 4, 12}, {2, 9, 20, 4, 12}};
        size_t s;
        for (s = 0; s < 3; s++) {
            int64_t B = cases[s][0], T = cases[s][1], C = cases[s][2], NH = cases[s][3], sq[3], sy[3], sa[4];
            gpudl_dtype dt = s == 2 ? GPUDL_F16 : GPUDL_F32;
            gpudl_tensor q32, dy32, qkv, dy, y, att, dq, gq, gdy, gy, gatt, gdq;
            float amp = (float)cases[s][4];
            sq[0] = B; sq[1] = T; sq[2] = 3 * C; sy[0] = B; sy[1] = T; sy[2] = C; sa[0] = B; sa[1] = NH; sa[2] = T; sa[3] = T;
            q32 = tr_rand(3, sq, -amp, amp); dy32 = tr_rand(3, sy, -1, 1);
            qkv = tr_cast(&q32, dt); dy = tr_cast(&dy32, dt); y = mk(c, dt, 3, sy); dq = mk(c, dt, 3, sq);
            GPUDL_CHECK(gpudl_tensor_create_on(c, &att, GPUDL_DEVICE_CPU, dt, 4, sa));
            gq = to_dev(g, &qkv); gdy = to_dev(g, &dy); gy = to_dev(g, &y); gdq = to_dev(g, &dq); gatt = to_dev(g, &att);
            CHECK_OK(gpudl_attention_forward(c, &y, &att, &qkv, NH));
            CHECK_OK(gpudl_attention_forward(g, &gy, &gatt, &gq, NH));
            tr_gpu_vs_cpu(g, s ? "attention y (large scores)" : "attention y (long rows)", dt, &gy, &y, tr_tol_gpu(dt));
            tr_gpu_vs_cpu(g, s ? "attention att (large scores)" : "attention att (long rows)", dt, &gatt, &att, tr_tol_gpu(dt));
            CHECK_OK(gpudl_attention_backward(c, &dq, &dy, &qkv, &att, NH));
            CHECK_OK(gpudl_attention_backward(g, &gdq, &gdy, &gq, &gatt, NH));
            tr_gpu_vs_cpu(g, s ? "attention dqkv (large scores)" : "attention dqkv (long rows)", dt, &gdq, &dq,
                          dt == GPUDL_F32 ? 2e-4 : 4 * tr_tol_gpu(dt));
            gpudl_tensor_free(c, &q32); gpudl_tensor_free(c, &dy32); gpudl_tensor_free(c, &qkv); gpudl_tensor_free(c, &dy);
            gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &att); gpudl_tensor_free(c, &dq);
            gpudl_tensor_free(g, &gq); gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gy); gpudl_tensor_free(g, &gatt);
            gpudl_tensor_free(g, &gdq);
        }
    }
    {
        static const int64_t shapes[][2] = {{3, 1600}, {300, 12}, {130, 33}};   /* uncached rows; 5 and 3 row chunks */
        size_t s;
        for (s = 0; s < 3; s++) {
            int64_t R = shapes[s][0], C = shapes[s][1], sx[2];
            gpudl_tensor x, y, dy, dx, gam, bet, m, r, dg, db, gx, gy, gdy, gdx, ggam, gbet, gm, gr, gdg, gdb;
            sx[0] = R; sx[1] = C;
            x = tr_rand(2, sx, -2, 3); dy = tr_rand(2, sx, -1, 1); y = mk(c, GPUDL_F32, 2, sx); dx = mk(c, GPUDL_F32, 2, sx);
            gam = tr_rand(1, &C, 0.5f, 1.5f); bet = tr_rand(1, &C, -1, 1); dg = tr_rand(1, &C, -1, 1); db = tr_rand(1, &C, -1, 1);
            m = mk(c, GPUDL_F32, 1, &R); r = mk(c, GPUDL_F32, 1, &R);
            gx = to_dev(g, &x); gdy = to_dev(g, &dy); gy = to_dev(g, &y); gdx = to_dev(g, &dx); ggam = to_dev(g, &gam);
            gbet = to_dev(g, &bet); gdg = to_dev(g, &dg); gdb = to_dev(g, &db); gm = to_dev(g, &m); gr = to_dev(g, &r);
            CHECK_OK(gpudl_layernorm_forward(c, &y, &m, &r, &x, &gam, &bet, 0.0f));
            CHECK_OK(gpudl_layernorm_forward(g, &gy, &gm, &gr, &gx, &ggam, &gbet, 0.0f));
            tr_gpu_vs_cpu(g, "layernorm forward (edges)", GPUDL_F32, &gy, &y, 2e-5);
            CHECK_OK(gpudl_layernorm_backward(c, &dx, &dg, &db, &dy, &x, &gam, &m, &r));
            CHECK_OK(gpudl_layernorm_backward(g, &gdx, &gdg, &gdb, &gdy, &gx, &ggam, &gm, &gr));
            tr_gpu_vs_cpu(g, "layernorm dx (edges)", GPUDL_F32, &gdx, &dx, 1e-4);
            tr_gpu_vs_cpu(g, "layernorm dgamma (edges)", GPUDL_F32, &gdg, &dg, 1e-4);
            tr_gpu_vs_cpu(g, "layernorm dbeta (edges)", GPUDL_F32, &gdb, &db, 1e-5);
            CHECK_OK(gpudl_layernorm_backward(g, NULL, &gdg, NULL, &gdy, &gx, &ggam, &gm, &gr));   /* dgamma alone */
            CHECK_OK(gpudl_layernorm_backward(c, NULL, &dg, NULL, &dy, &x, &gam, &m, &r));
            tr_gpu_vs_cpu(g, "layernorm dgamma alone (edges)", GPUDL_F32, &gdg, &dg, 1e-4);
            gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y); gpudl_tensor_free(c, &dy); gpudl_tensor_free(c, &dx);
            gpudl_tensor_free(c, &gam); gpudl_tensor_free(c, &bet); gpudl_tensor_free(c, &m); gpudl_tensor_free(c, &r);
            gpudl_tensor_free(c, &dg); gpudl_tensor_free(c, &db);
            gpudl_tensor_free(g, &gx); gpudl_tensor_free(g, &gy); gpudl_tensor_free(g, &gdy); gpudl_tensor_free(g, &gdx);
            gpudl_tensor_free(g, &ggam); gpudl_tensor_free(g, &gbet); gpudl_tensor_free(g, &gm); gpudl_tensor_free(g, &gr);
            gpudl_tensor_free(g, &gdg); gpudl_tensor_free(g, &gdb);
        }
    }
    {   /* an id out of range on the GPU: a NaN row now, the error at the next wait, then the context works on */
        int64_t sw[2] = {5, 12}, sy[3] = {2, 3, 12}, i;
        gpudl_tensor ids = tr_ids(GPUDL_I32, 2, 3, 5, 1), wte = tr_rand(2, sw, -1, 1), gids, gwte, gy, hy;
        ((int32_t *)ids.data)[4] = 5;
        gids = to_dev(g, &ids); gwte = to_dev(g, &wte);
        GPUDL_CHECK(gpudl_tensor_create_on(g, &gy, GPUDL_DEVICE_CUDA, GPUDL_F32, 3, sy));
        CHECK_OK(gpudl_embedding_forward(g, &gy, &gids, &gwte, NULL));
        CHECK_ST(gpudl_ctx_sync(g), GPUDL_ERR_INVALID_ARG);
        CHECK_OK(gpudl_ctx_sync(g));
        hy = to_host(g, &gy);
        for (i = 0; i < 2 * 3 * 12; i++) CHECK(is_nan(ld(&hy, i)) == (i / 12 == 4));
        gpudl_tensor_free(c, &ids); gpudl_tensor_free(c, &wte); gpudl_tensor_free(c, &hy);
        gpudl_tensor_free(g, &gids); gpudl_tensor_free(g, &gwte); gpudl_tensor_free(g, &gy);
    }
}

/* Deterministic counts on the emulated device, after a warm-up call (the
   workspace is grown once): attention forward = 3 kernels + 2 batched GEMMs,
   backward = 4 kernels + 4 batched GEMMs; fused attention 1 kernel forward,
   3 backward; layer norm 1 kernel forward, 2
   backward (one row chunk); embedding 1 and 2; no host wait and no
   allocation in any of them (a training step stays capturable). */
#ifdef __CUEMU__
#include <cuemu.h>
#endif
static void test_gpu_transformer_counts(void) {
#ifndef __CUEMU__
    SKIP("counts need the emulated device (tests/emu)");
#else
    int64_t B = 2, T = 9, C = 12, NH = 3, V = 7, R = B * T, sy[3], sq[3], sa[4], sw[2];
    gpudl_tensor y, dy, qkv, dq, att, ids, wte, dwte, gam, bet, mean, rstd, dgam, dbet, hids, lse;
    int64_t sl[3];
    cuemu_counters n;
    int pass;
    NEED_GPU(g);
    sy[0] = B; sy[1] = T; sy[2] = C; sq[0] = B; sq[1] = T; sq[2] = 3 * C; sa[0] = B; sa[1] = NH; sa[2] = T; sa[3] = T;
    sw[0] = V; sw[1] = C;
    GPUDL_CHECK(gpudl_tensor_create_on(g, &y, GPUDL_DEVICE_CUDA, GPUDL_F16, 3, sy));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &dy, GPUDL_DEVICE_CUDA, GPUDL_F16, 3, sy));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &qkv, GPUDL_DEVICE_CUDA, GPUDL_F16, 3, sq));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &dq, GPUDL_DEVICE_CUDA, GPUDL_F16, 3, sq));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &att, GPUDL_DEVICE_CUDA, GPUDL_F16, 4, sa));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &wte, GPUDL_DEVICE_CUDA, GPUDL_F16, 2, sw));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &dwte, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, sw));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &gam, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &C));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &bet, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &C));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &dgam, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &C));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &dbet, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &C));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &mean, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &R));
    GPUDL_CHECK(gpudl_tensor_create_on(g, &rstd, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &R));
    sl[0] = B; sl[1] = NH; sl[2] = T;
    GPUDL_CHECK(gpudl_tensor_create_on(g, &lse, GPUDL_DEVICE_CUDA, GPUDL_F32, 3, sl));
    GPUDL_CHECK(gpudl_tensor_uniform(g, &qkv, -1, 1));
    GPUDL_CHECK(gpudl_tensor_uniform(g, &dy, -1, 1));
    GPUDL_CHECK(gpudl_tensor_uniform(g, &wte, -1, 1));
    GPUDL_CHECK(gpudl_tensor_fill(g, &gam, 1.0f));
    GPUDL_CHECK(gpudl_tensor_fill(g, &bet, 0.0f));
    GPUDL_CHECK(gpudl_tensor_fill(g, &dgam, 0.0f));   /* gradients accumulate: start them */
    GPUDL_CHECK(gpudl_tensor_fill(g, &dbet, 0.0f));
    GPUDL_CHECK(gpudl_tensor_fill(g, &dwte, 0.0f));
    hids = tr_ids(GPUDL_I32, B, T, V, 5);
    ids = to_dev(g, &hids);
    for (pass = 0; pass < 2; pass++) {   /* pass 0 grows the workspaces */
        GPUDL_CHECK(gpudl_ctx_sync(g));
        cuemu_counters_reset();
        CHECK_OK(gpudl_attention_forward(g, &y, &att, &qkv, NH));
        cuemu_counters_get(&n);
        if (pass) CHECKF(n.kernel_launches == 3 && n.library_calls == 2 && n.host_waits == 0 && n.mallocs == 0,
                         "attention forward: %llu kernels, %llu library calls, %llu waits, %llu mallocs; want 3, 2, 0, 0",
                         (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
                         (unsigned long long)n.host_waits, (unsigned long long)n.mallocs);
        cuemu_counters_reset();
        CHECK_OK(gpudl_attention_backward(g, &dq, &dy, &qkv, &att, NH));
        cuemu_counters_get(&n);
        if (pass) CHECKF(n.kernel_launches == 4 && n.library_calls == 4 && n.host_waits == 0 && n.mallocs == 0,
                         "attention backward: %llu kernels, %llu library calls, %llu waits, %llu mallocs; want 4, 4, 0, 0",
                         (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
                         (unsigned long long)n.host_waits, (unsigned long long)n.mallocs);
        cuemu_counters_reset();
        CHECK_OK(gpudl_attention_fused_forward(g, &y, &lse, &qkv, NH));
        CHECK_OK(gpudl_attention_fused_backward(g, &dq, &dy, &qkv, &y, &lse, NH));
        cuemu_counters_get(&n);
        if (pass) CHECKF(n.kernel_launches == 1 + 3 && n.library_calls == 0 && n.host_waits == 0 && n.mallocs == 0,
                         "fused attention: %llu kernels, %llu library calls, %llu waits, %llu mallocs; want 4, 0, 0, 0",
                         (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
                         (unsigned long long)n.host_waits, (unsigned long long)n.mallocs);
        cuemu_counters_reset();
        CHECK_OK(gpudl_layernorm_forward(g, &y, &mean, &rstd, &dy, &gam, &bet, 0.0f));
        CHECK_OK(gpudl_layernorm_backward(g, &y, &dgam, &dbet, &dy, &dy, &gam, &mean, &rstd));
        CHECK_OK(gpudl_embedding_forward(g, &y, &ids, &wte, NULL));
        CHECK_OK(gpudl_embedding_backward(g, &dwte, NULL, &y, &ids));
        cuemu_counters_get(&n);
        if (pass) CHECKF(n.kernel_launches == 1 + 2 + 1 + 1 && n.library_calls == 0 && n.host_waits == 0 && n.mallocs == 0,
                         "layer norm + embedding: %llu kernels, %llu library calls, %llu waits, %llu mallocs; want 5, 0, 0, 0",
                         (unsigned long long)n.kernel_launches, (unsigned long long)n.library_calls,
                         (unsigned long long)n.host_waits, (unsigned long long)n.mallocs);
    }
    CHECK_OK(gpudl_ctx_sync(g));
    gpudl_tensor_free(cpu_ctx(), &hids);
    gpudl_tensor_free(g, &y); gpudl_tensor_free(g, &dy); gpudl_tensor_free(g, &qkv); gpudl_tensor_free(g, &dq);
    gpudl_tensor_free(g, &att); gpudl_tensor_free(g, &ids); gpudl_tensor_free(g, &wte); gpudl_tensor_free(g, &dwte);
    gpudl_tensor_free(g, &gam); gpudl_tensor_free(g, &bet); gpudl_tensor_free(g, &mean); gpudl_tensor_free(g, &rstd);
    gpudl_tensor_free(g, &dgam); gpudl_tensor_free(g, &dbet); gpudl_tensor_free(g, &lse);
#endif
}

/* ---- the ops composed into a GPT attention block, as a model wires them ----
   y = x + c_proj(attention(c_attn(layernorm(x)))), linear layers per
   position on (B*T, features) views, the residual by gpudl_add (forward
   and backward: no op of its own is needed). The chained backward against
   central differences of a float64 block, on the CPU; the same chain on the
   GPU against the CPU (cuBLAS / cuBLASLt linears included). */

typedef struct {
    double *x, *g, *b, *wa, *ba, *wp, *bp;
    int64_t B, T, C, NH;
} tr_block_cl;

static void tr_block_f(void *cl, double *y) {
    tr_block_cl *k = (tr_block_cl *)cl;
    int64_t N = k->B * k->T, C = k->C, n, o, i;
    double *h = dalloc(N * C), *qkv = dalloc(N * 3 * C), *a = dalloc(N * C);
    tr_ln_ref(h, NULL, NULL, k->x, k->g, k->b, N, C, 1e-5);
    for (n = 0; n < N; n++)
        for (o = 0; o < 3 * C; o++) {
            double s = k->ba[o];
            for (i = 0; i < C; i++) s += h[n * C + i] * k->wa[o * C + i];
            qkv[n * 3 * C + o] = s;
        }
    tr_attn_ref(a, NULL, qkv, k->B, k->T, C, k->NH);
    for (n = 0; n < N; n++)
        for (o = 0; o < C; o++) {
            double s = k->bp[o];
            for (i = 0; i < C; i++) s += a[n * C + i] * k->wp[o * C + i];
            y[n * C + o] = k->x[n * C + o] + s;
        }
    free(h); free(qkv); free(a);
}

/* The block's tensors on one device (F32). */
typedef struct {
    gpudl_tensor x, g, b, wa, ba, wp, bp;                 /* inputs and parameters */
    gpudl_tensor mean, rstd, h, qkv, att, a, y;           /* forward */
    gpudl_tensor dy, da, dqkv, dh, dxl, dx, dg, db, dwa, dba, dwp, dbp;   /* backward */
} tr_block;

static void tr_block_alloc(gpudl_ctx *d, tr_block *k, int64_t B, int64_t T, int64_t C, int64_t NH) {
    gpudl_device dev = gpudl_ctx_device(d);
    int64_t s3[3] = {B, T, C}, q3[3] = {B, T, 3 * C}, a4[4] = {B, NH, T, T}, wa[2] = {3 * C, C}, wp[2] = {C, C}, R = B * T, c3 = 3 * C;
#define TR_T(t, nd, sh) GPUDL_CHECK(gpudl_tensor_create_on(d, &k->t, dev, GPUDL_F32, nd, sh))
    TR_T(x, 3, s3); TR_T(g, 1, &C); TR_T(b, 1, &C); TR_T(wa, 2, wa); TR_T(ba, 1, &c3); TR_T(wp, 2, wp); TR_T(bp, 1, &C);
    TR_T(mean, 1, &R); TR_T(rstd, 1, &R); TR_T(h, 3, s3); TR_T(qkv, 3, q3); TR_T(att, 4, a4); TR_T(a, 3, s3); TR_T(y, 3, s3);
    TR_T(dy, 3, s3); TR_T(da, 3, s3); TR_T(dqkv, 3, q3); TR_T(dh, 3, s3); TR_T(dxl, 3, s3); TR_T(dx, 3, s3);
    TR_T(dg, 1, &C); TR_T(db, 1, &C); TR_T(dwa, 2, wa); TR_T(dba, 1, &c3); TR_T(dwp, 2, wp); TR_T(dbp, 1, &C);
#undef TR_T
}

/* Every tensor of the block, in one order. */
static int tr_block_list(tr_block *k, gpudl_tensor **o) {
    gpudl_tensor *all[26];
    int i;
    all[0] = &k->x; all[1] = &k->g; all[2] = &k->b; all[3] = &k->wa; all[4] = &k->ba; all[5] = &k->wp; all[6] = &k->bp;
    all[7] = &k->mean; all[8] = &k->rstd; all[9] = &k->h; all[10] = &k->qkv; all[11] = &k->att; all[12] = &k->a;
    all[13] = &k->y; all[14] = &k->dy; all[15] = &k->da; all[16] = &k->dqkv; all[17] = &k->dh; all[18] = &k->dxl;
    all[19] = &k->dx; all[20] = &k->dg; all[21] = &k->db; all[22] = &k->dwa; all[23] = &k->dba; all[24] = &k->dwp;
    all[25] = &k->dbp;
    for (i = 0; i < 26; i++) o[i] = all[i];
    return 26;
}

static void tr_block_free(gpudl_ctx *d, tr_block *k) {
    gpudl_tensor *t[26];
    int i, n = tr_block_list(k, t);
    for (i = 0; i < n; i++) gpudl_tensor_free(d, t[i]);
}

/* Forward and backward of the block (gradients of the parameters zeroed first). */
static void tr_block_run(gpudl_ctx *d, tr_block *k, int64_t NH) {
    int64_t N = k->x.shape[0] * k->x.shape[1], C = k->x.shape[2], f2[2], q2[2];
    gpudl_tensor h2, qkv2, a2, y2, dy2, da2, dqkv2, dh2;
    f2[0] = N; f2[1] = C; q2[0] = N; q2[1] = 3 * C;
    GPUDL_CHECK(gpudl_tensor_reshape(&h2, &k->h, 2, f2)); GPUDL_CHECK(gpudl_tensor_reshape(&qkv2, &k->qkv, 2, q2));
    GPUDL_CHECK(gpudl_tensor_reshape(&a2, &k->a, 2, f2)); GPUDL_CHECK(gpudl_tensor_reshape(&y2, &k->y, 2, f2));
    GPUDL_CHECK(gpudl_tensor_reshape(&dy2, &k->dy, 2, f2)); GPUDL_CHECK(gpudl_tensor_reshape(&da2, &k->da, 2, f2));
    GPUDL_CHECK(gpudl_tensor_reshape(&dqkv2, &k->dqkv, 2, q2)); GPUDL_CHECK(gpudl_tensor_reshape(&dh2, &k->dh, 2, f2));
    GPUDL_CHECK(gpudl_tensor_fill(d, &k->dg, 0)); GPUDL_CHECK(gpudl_tensor_fill(d, &k->db, 0));
    GPUDL_CHECK(gpudl_tensor_fill(d, &k->dwa, 0)); GPUDL_CHECK(gpudl_tensor_fill(d, &k->dba, 0));
    GPUDL_CHECK(gpudl_tensor_fill(d, &k->dwp, 0)); GPUDL_CHECK(gpudl_tensor_fill(d, &k->dbp, 0));
    CHECK_OK(gpudl_layernorm_forward(d, &k->h, &k->mean, &k->rstd, &k->x, &k->g, &k->b, 0.0f));
    CHECK_OK(gpudl_linear_forward(d, &qkv2, &h2, &k->wa, &k->ba));
    CHECK_OK(gpudl_attention_forward(d, &k->a, &k->att, &k->qkv, NH));
    CHECK_OK(gpudl_linear_forward(d, &y2, &a2, &k->wp, &k->bp));
    CHECK_OK(gpudl_add(d, &k->y, &k->y, &k->x));                               /* the residual */
    CHECK_OK(gpudl_linear_backward(d, &da2, &k->dwp, &k->dbp, &dy2, &a2, &k->wp));
    CHECK_OK(gpudl_attention_backward(d, &k->dqkv, &k->da, &k->qkv, &k->att, NH));
    CHECK_OK(gpudl_linear_backward(d, &dh2, &k->dwa, &k->dba, &dqkv2, &h2, &k->wa));
    CHECK_OK(gpudl_layernorm_backward(d, &k->dxl, &k->dg, &k->db, &k->dh, &k->x, &k->g, &k->mean, &k->rstd));
    CHECK_OK(gpudl_add(d, &k->dx, &k->dxl, &k->dy));                           /* the residual's gradient */
}

static void tr_block_init(tr_block *k) {   /* CPU tensors: random inputs, parameters and dy */
    gpudl_ctx *c = cpu_ctx();
    GPUDL_CHECK(gpudl_tensor_uniform(c, &k->x, -2, 2)); GPUDL_CHECK(gpudl_tensor_uniform(c, &k->g, 0.5f, 1.5f));
    GPUDL_CHECK(gpudl_tensor_uniform(c, &k->b, -0.5f, 0.5f)); GPUDL_CHECK(gpudl_tensor_uniform(c, &k->wa, -0.4f, 0.4f));
    GPUDL_CHECK(gpudl_tensor_uniform(c, &k->ba, -0.2f, 0.2f)); GPUDL_CHECK(gpudl_tensor_uniform(c, &k->wp, -0.4f, 0.4f));
    GPUDL_CHECK(gpudl_tensor_uniform(c, &k->bp, -0.2f, 0.2f)); GPUDL_CHECK(gpudl_tensor_uniform(c, &k->dy, -1, 1));
}

static void test_transformer_block(void) {
    int64_t B = 2, T = 7, C = 12, NH = 4, N = B * T;
    gpudl_ctx *c = cpu_ctx();
    tr_block k;
    tr_block_cl cl;
    double *w, *fd;
    tr_block_alloc(c, &k, B, T, C, NH);
    tr_block_init(&k);
    tr_block_run(c, &k, NH);
    cl.x = tr_dbl(&k.x); cl.g = tr_dbl(&k.g); cl.b = tr_dbl(&k.b); cl.wa = tr_dbl(&k.wa); cl.ba = tr_dbl(&k.ba);
    cl.wp = tr_dbl(&k.wp); cl.bp = tr_dbl(&k.bp); cl.B = B; cl.T = T; cl.C = C; cl.NH = NH;
    w = tr_dbl(&k.dy); fd = dalloc(3 * C * C);
    tr_block_f(&cl, fd);
    TR_CLOSE("block forward", &k.y, fd, N * C, 2e-6);
    tr_fd(fd, cl.x, N * C, w, N * C, tr_block_f, &cl);
    TR_CLOSE("block dx", &k.dx, fd, N * C, 5e-5);
    tr_fd(fd, cl.g, C, w, N * C, tr_block_f, &cl);
    TR_CLOSE("block d ln gamma", &k.dg, fd, C, 5e-5);
    tr_fd(fd, cl.wa, 3 * C * C, w, N * C, tr_block_f, &cl);
    TR_CLOSE("block d c_attn weight", &k.dwa, fd, 3 * C * C, 5e-5);
    tr_fd(fd, cl.ba, 3 * C, w, N * C, tr_block_f, &cl);
    TR_CLOSE("block d c_attn bias", &k.dba, fd, 3 * C, 5e-5);
    tr_fd(fd, cl.wp, C * C, w, N * C, tr_block_f, &cl);
    TR_CLOSE("block d c_proj weight", &k.dwp, fd, C * C, 5e-5);
    free(cl.x); free(cl.g); free(cl.b); free(cl.wa); free(cl.ba); free(cl.wp); free(cl.bp); free(w); free(fd);
    tr_block_free(c, &k);
}

static void test_gpu_transformer_block(void) {
    int64_t B = 2, T = 13, C = 20, NH = 4;
    gpudl_ctx *c = cpu_ctx();
    tr_block k, gk;
    gpudl_tensor *t[26], *u[26];
    int i, n;
    NEED_GPU(g);
    tr_block_alloc(c, &k, B, T, C, NH);
    tr_block_alloc(g, &gk, B, T, C, NH);
    tr_block_init(&k);
    n = tr_block_list(&k, t);
    tr_block_list(&gk, u);
    for (i = 0; i < 7; i++) GPUDL_CHECK(gpudl_tensor_copy(g, u[i], t[i]));   /* inputs and parameters */
    GPUDL_CHECK(gpudl_tensor_copy(g, &gk.dy, &k.dy));
    (void)n;
    tr_block_run(c, &k, NH);
    tr_block_run(g, &gk, NH);
    tr_gpu_vs_cpu(g, "block y", GPUDL_F32, &gk.y, &k.y, 2e-5);
    tr_gpu_vs_cpu(g, "block dx", GPUDL_F32, &gk.dx, &k.dx, 1e-4);
    tr_gpu_vs_cpu(g, "block d ln gamma", GPUDL_F32, &gk.dg, &k.dg, 1e-4);
    tr_gpu_vs_cpu(g, "block d c_attn weight", GPUDL_F32, &gk.dwa, &k.dwa, 1e-4);
    tr_gpu_vs_cpu(g, "block d c_proj bias", GPUDL_F32, &gk.dbp, &k.dbp, 1e-4);
    tr_block_free(c, &k);
    tr_block_free(g, &gk);
}

/* ---- the GPT as a model (gpudl_model_add_embedding, _layernorm, _attention, residuals) ---- */

typedef struct { int64_t V, T, C, NH, L; } tr_gpt;
static int tr_gpt_attention;   /* gpudl_model_desc.attention of the models tr_gpt_model builds */
static gpudl_init tr_gpt_init;  /* and their init */

/* A GPT of cfg on ctx, nanoGPT's names when named; built for max_batch 4. */
static gpudl_model *tr_gpt_model(gpudl_ctx *ctx, const tr_gpt *g, int named) {
    gpudl_model *m;
    gpudl_model_desc md;
    char name[96];
    int64_t l;
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 1, &g->T));
    GPUDL_CHECK(gpudl_model_add_embedding(m, g->V, g->C));
    if (named) GPUDL_CHECK(gpudl_model_set_name(m, "transformer"));
#define TR_NAME(...) do { if (named) { snprintf(name, sizeof name, __VA_ARGS__); GPUDL_CHECK(gpudl_model_set_name(m, name)); } } while (0)
    for (l = 0; l < g->L; l++) {
        GPUDL_CHECK(gpudl_model_add_residual_begin(m));
        GPUDL_CHECK(gpudl_model_add_layernorm(m, g->C)); TR_NAME("transformer.h.%lld.ln_1", (long long)l);
        GPUDL_CHECK(gpudl_model_add_attention(m, g->C, g->NH)); TR_NAME("transformer.h.%lld.attn", (long long)l);
        GPUDL_CHECK(gpudl_model_add_residual_end(m));
        GPUDL_CHECK(gpudl_model_add_residual_begin(m));
        GPUDL_CHECK(gpudl_model_add_layernorm(m, g->C)); TR_NAME("transformer.h.%lld.ln_2", (long long)l);
        GPUDL_CHECK(gpudl_model_add_linear(m, g->C, 4 * g->C)); TR_NAME("transformer.h.%lld.mlp.c_fc", (long long)l);
        GPUDL_CHECK(gpudl_model_add_act(m, GPUDL_ACT_GELU, 0.0f));
        GPUDL_CHECK(gpudl_model_add_linear(m, 4 * g->C, g->C)); TR_NAME("transformer.h.%lld.mlp.c_proj", (long long)l);
        GPUDL_CHECK(gpudl_model_add_residual_end(m));
    }
    GPUDL_CHECK(gpudl_model_add_layernorm(m, g->C)); TR_NAME("transformer.ln_f");
    GPUDL_CHECK(gpudl_model_add_linear(m, g->C, g->V)); TR_NAME("lm_head");
#undef TR_NAME
    memset(&md, 0, sizeof md);
    md.max_batch = 4;
    md.seed = 7;
    md.attention = tr_gpt_attention;
    md.init = tr_gpt_init;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    return m;
}

/* The parameters' offsets in the flat buffer: in layer order, each tensor
   on a 64-float boundary (gpudl_model_params' documented layout). */
static int64_t tr_gpt_layout(const tr_gpt *g, int64_t *off) {
    int64_t V = g->V, T = g->T, C = g->C, n[64], k = 0, i, l, at = 0;
    n[k++] = V * C; n[k++] = T * C;
    for (l = 0; l < g->L; l++) {
        n[k++] = C; n[k++] = C; n[k++] = 3 * C * C; n[k++] = 3 * C; n[k++] = C * C; n[k++] = C;
        n[k++] = C; n[k++] = C; n[k++] = 4 * C * C; n[k++] = 4 * C; n[k++] = 4 * C * C; n[k++] = C;
    }
    n[k++] = C; n[k++] = C; n[k++] = V * C; n[k++] = V;
    for (i = 0; i < k; i++) { off[i] = at; at = (at + n[i] + 63) / 64 * 64; }
    return k;
}

static void tr_lin_ref(double *y, const double *x, const double *w, const double *b, int64_t R, int64_t F, int64_t O) {
    int64_t r, o, f;
    for (r = 0; r < R; r++)
        for (o = 0; o < O; o++) {
            double acc = b[o];
            for (f = 0; f < F; f++) acc += x[r * F + f] * w[o * F + f];
            y[r * O + o] = acc;
        }
}

/* The GPT's logits (N,T,V) in float64 from the flat parameters P. */
static void tr_gpt_ref(const tr_gpt *g, const double *P, const gpudl_tensor *ids, int64_t N, double *logits) {
    int64_t V = g->V, T = g->T, C = g->C, R = N * T, off[64], k = 2, l, i;
    double *x = dalloc(R * C), *h = dalloc(R * C), *qkv = dalloc(R * 3 * C), *a = dalloc(R * C), *f = dalloc(R * 4 * C);
    tr_gpt_layout(g, off);
    tr_emb_ref(x, ids, P + off[0], P + off[1], R, T, C);
    for (l = 0; l < g->L; l++, k += 12) {
        tr_ln_ref(h, NULL, NULL, x, P + off[k], P + off[k + 1], R, C, 1e-5);
        tr_lin_ref(qkv, h, P + off[k + 2], P + off[k + 3], R, C, 3 * C);
        tr_attn_ref(a, NULL, qkv, N, T, C, g->NH);
        tr_lin_ref(h, a, P + off[k + 4], P + off[k + 5], R, C, C);
        for (i = 0; i < R * C; i++) x[i] += h[i];
        tr_ln_ref(h, NULL, NULL, x, P + off[k + 6], P + off[k + 7], R, C, 1e-5);
        tr_lin_ref(f, h, P + off[k + 8], P + off[k + 9], R, C, 4 * C);
        for (i = 0; i < R * 4 * C; i++) f[i] = 0.5 * f[i] * (1 + erf(f[i] / sqrt(2.0)));
        tr_lin_ref(h, f, P + off[k + 10], P + off[k + 11], R, 4 * C, C);
        for (i = 0; i < R * C; i++) x[i] += h[i];
    }
    tr_ln_ref(h, NULL, NULL, x, P + off[k], P + off[k + 1], R, C, 1e-5);
    tr_lin_ref(logits, h, P + off[k + 2], P + off[k + 3], R, C, V);
    free(x); free(h); free(qkv); free(a); free(f);
}

/* Parameters uniform in [-0.4, 0.4) (layer norms' weights in [0.6, 1.4)): larger than the init, so every path counts. */
static void tr_gpt_fill(gpudl_ctx *ctx, gpudl_model *m, const tr_gpt *g) {
    gpudl_tensor p;
    int64_t off[64], k = tr_gpt_layout(g, off), l, i;
    GPUDL_CHECK(gpudl_model_params(m, &p, NULL));
    if (p.device == GPUDL_DEVICE_CPU) {
        float *w = (float *)p.data;
        uint32_t s = 12345;
        for (i = 0; i < gpudl_tensor_numel(&p); i++) { s = s * 1664525u + 1013904223u; w[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.8f; }
        for (l = 0; l <= g->L; l++) {   /* ln_1, ln_2 of each block, then ln_f: weight near 1 */
            int64_t lns[2], nl = l < g->L ? 2 : 1, j;
            lns[0] = l < g->L ? 2 + 12 * l : k - 4;
            lns[1] = 2 + 12 * l + 6;
            for (j = 0; j < nl; j++)
                for (i = 0; i < g->C; i++) w[off[lns[j]] + i] += 1.0f;
        }
    }
    (void)ctx;
}

static const tr_gpt tr_gpt_cases[2] = {
    {11, 7, 12, 3, 2},   /* heads T (21) <= 16 C: the weights path on the CPU (on the GPU, launch-bound: fused) */
    {9, 37, 8, 4, 1}     /* heads T (148) > 16 C (128): the fused kernels */
};

static gpudl_tensor tr_ids_i32(int64_t N, int64_t T, int64_t V, uint32_t seed) { return tr_ids(GPUDL_I32, N, T, V, seed); }

/* Forward against the float64 GPT, every gradient against central differences (gpudl_gradcheck). */
static void test_transformer_model(void) {
    gpudl_ctx *c = cpu_ctx();
    int cs;
    for (cs = 0; cs < 3; cs++) {   /* case 0, case 1, case 0 with the fused kernels asked for */
        const tr_gpt *g = &tr_gpt_cases[cs & 1];
        tr_gpt_attention = cs == 2 ? 2 : 0;
        int64_t N = 3, R = N * g->T, np;
        gpudl_model *m = tr_gpt_model(c, g, 0);
        gpudl_tensor x = tr_ids_i32(N, g->T, g->V, 11 + cs), y = tr_ids_i32(N, g->T, g->V, 21 + cs), out, p;
        gpudl_gradcheck_result r;
        double *P, *ref;
        int64_t i;
        tr_gpt_fill(c, m, g);
        GPUDL_CHECK(gpudl_model_params(m, &p, NULL));
        np = gpudl_tensor_numel(&p);
        P = dalloc(np);
        for (i = 0; i < np; i++) P[i] = ((const float *)p.data)[i];
        ref = dalloc(R * g->V);
        tr_gpt_ref(g, P, &x, N, ref);
        GPUDL_CHECK(gpudl_model_forward(m, &x, &out));
        CHECK(out.ndim == 3 && out.shape[0] == N && out.shape[1] == g->T && out.shape[2] == g->V);
        TR_CLOSE(cs ? "fused GPT logits" : "GPT logits", &out, ref, R * g->V, 2e-5);
        GPUDL_CHECK(gpudl_gradcheck(m, &x, &y, 1e-3, 1e-4, 2e-2, 24, &r));
        CHECKF(r.failed == 0 && r.checked > 200, "GPT %d gradcheck: %lld of %lld failed, worst %s", cs, (long long)r.failed,
               (long long)r.checked, r.worst);
        free(P); free(ref);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
        gpudl_model_destroy(m);
    }
    tr_gpt_attention = 0;
}

/* A change to token t changes no output before t, forward and (through the
   loss of the positions before t) no gradient. */
static void test_transformer_model_causal(void) {
    gpudl_ctx *c = cpu_ctx();
    const tr_gpt *g = &tr_gpt_cases[0];
    int64_t N = 2, T = g->T, V = g->V, t0 = 4, i;
    gpudl_model *m = tr_gpt_model(c, g, 0);
    gpudl_tensor x = tr_ids_i32(N, T, V, 5), out;
    float *a = (float *)malloc(sizeof(float) * (size_t)(N * T * V));
    int changed = 0;
    tr_gpt_fill(c, m, g);
    GPUDL_CHECK(gpudl_model_forward(m, &x, &out));
    memcpy(a, out.data, sizeof(float) * (size_t)(N * T * V));
    for (i = 0; i < N; i++) ((int32_t *)x.data)[i * T + t0] = (((int32_t *)x.data)[i * T + t0] + 1) % (int32_t)V;
    GPUDL_CHECK(gpudl_model_forward(m, &x, &out));
    for (i = 0; i < N * T * V; i++) {
        int64_t t = i / V % T;
        if (t < t0) CHECKF(a[i] == ((float *)out.data)[i], "logit %lld (position %lld < %lld) changed", (long long)i, (long long)t, (long long)t0);
        else changed += a[i] != ((float *)out.data)[i];
    }
    CHECK(changed > 0);
    free(a);
    gpudl_tensor_free(c, &x);
    gpudl_model_destroy(m);
}

/* A tiny GPT memorises a fixed batch: AdamW from the default init, loss
   from about ln V (2.4) to under 0.5 in 40 steps, on the CPU (and FP16 /
   BF16 through the same loop: the 16-bit recipe's tests are elsewhere). */
static void tr_gpt_learns_on(gpudl_ctx *ctx, gpudl_precision prec, int fused) {
    const tr_gpt *g = &tr_gpt_cases[fused];
    int64_t N = 3;
    gpudl_model *m = tr_gpt_model(ctx, g, 1);
    gpudl_tensor hx = tr_ids_i32(N, g->T, g->V, 3), hy = tr_ids_i32(N, g->T, g->V, 4), x, y;
    gpudl_optim_desc od;
    float first = 0, last = 0;
    int it;
    x = ctx == cpu_ctx() ? hx : to_dev(ctx, &hx);
    y = ctx == cpu_ctx() ? hy : to_dev(ctx, &hy);
    if (prec != GPUDL_PRECISION_FP32) GPUDL_CHECK(gpudl_model_set_precision(m, prec, NULL));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAMW; od.lr = 3e-3f; od.clip_norm = 1.0f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    for (it = 0; it < 40; it++) {
        GPUDL_CHECK(gpudl_model_train_step(m, &x, &y));
        if (it == 0) GPUDL_CHECK(gpudl_model_loss_value(m, &first));
    }
    GPUDL_CHECK(gpudl_model_loss_value(m, &last));
    CHECKF(first > 1.5f && last < 0.5f * first && last == last, "loss %g -> %g in 40 steps (precision %d, %s)", (double)first,
           (double)last, (int)prec, fused ? "fused" : "weights");
    if (ctx != cpu_ctx()) { gpudl_tensor_free(ctx, &x); gpudl_tensor_free(ctx, &y); }
    gpudl_tensor_free(cpu_ctx(), &hx); gpudl_tensor_free(cpu_ctx(), &hy);
    gpudl_model_destroy(m);
}
static void test_transformer_model_learns(void) {
    tr_gpt_learns_on(cpu_ctx(), GPUDL_PRECISION_FP32, 0);
    tr_gpt_learns_on(cpu_ctx(), GPUDL_PRECISION_BF16, 0);
}

/* nanoGPT's names in the checkpoint; a round trip gives the same logits; a
   model without the names refuses the file, naming a tensor. */
static void test_transformer_model_checkpoint(void) {
    gpudl_ctx *c = cpu_ctx();
    const tr_gpt *g = &tr_gpt_cases[0];
    gpudl_model *m = tr_gpt_model(c, g, 1), *m2 = tr_gpt_model(c, g, 1), *m3 = tr_gpt_model(c, g, 0);
    gpudl_tensor x = tr_ids_i32(2, g->T, g->V, 9), out;
    const char *path = "build/test/gpt_ckpt.safetensors";
    static const char *names[] = {"\"transformer.wte.weight\"", "\"transformer.wpe.weight\"", "\"transformer.h.1.ln_1.bias\"",
                                  "\"transformer.h.0.attn.c_attn.weight\"", "\"transformer.h.1.attn.c_proj.bias\"",
                                  "\"transformer.h.0.mlp.c_fc.weight\"", "\"transformer.ln_f.weight\"", "\"lm_head.weight\""};
    char *head = (char *)calloc(1, 1 << 16);
    float *a = (float *)malloc(sizeof(float) * (size_t)(2 * g->T * g->V));
    FILE *f;
    size_t i;
    tr_gpt_fill(c, m, g);
    GPUDL_CHECK(gpudl_model_save(c, m, path));
    f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) { size_t got = fread(head, 1, (1 << 16) - 1, f); (void)got; fclose(f); }
    for (i = 0; i < sizeof names / sizeof names[0]; i++) CHECKF(strstr(head + 8, names[i]) != NULL, "no %s in the checkpoint", names[i]);
    GPUDL_CHECK(gpudl_model_forward(m, &x, &out));
    memcpy(a, out.data, sizeof(float) * (size_t)(2 * g->T * g->V));
    GPUDL_CHECK(gpudl_model_load(c, m2, path));
    GPUDL_CHECK(gpudl_model_forward(m2, &x, &out));
    CHECK(memcmp(a, out.data, sizeof(float) * (size_t)(2 * g->T * g->V)) == 0);
    CHECK(gpudl_model_load(c, m3, path) != GPUDL_OK);
    CHECKF(strstr(gpudl_ctx_last_error(c), "0.wte.weight") != NULL || strstr(gpudl_ctx_last_error(c), "transformer") != NULL,
           "message: %s", gpudl_ctx_last_error(c));
    free(head); free(a);
    remove(path);
    gpudl_tensor_free(c, &x);
    gpudl_model_destroy(m); gpudl_model_destroy(m2); gpudl_model_destroy(m3);
}

/* Wrong use: a clear status, nothing built. */
static void test_transformer_model_bad(void) {
    gpudl_ctx *c = cpu_ctx();
    gpudl_model *m;
    int64_t T = 5, F = 6, sh2[2] = {2, 5};
    gpudl_tensor xf, x, y1;
    /* an embedding after another layer */
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, &F));
    GPUDL_CHECK(gpudl_model_add_linear(m, F, F));
    CHECK(gpudl_model_add_embedding(m, 5, 4) == GPUDL_ERR_SHAPE);
    CHECK(gpudl_model_build(m, NULL) == GPUDL_ERR_SHAPE);
    gpudl_model_destroy(m);
    /* residual_end without a begin; a begin never closed; a path that changes the shape */
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, &T));
    GPUDL_CHECK(gpudl_model_add_embedding(m, 7, 4));
    CHECK(gpudl_model_add_residual_end(m) == GPUDL_ERR_INVALID_ARG);
    gpudl_model_destroy(m);
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, &T));
    GPUDL_CHECK(gpudl_model_add_embedding(m, 7, 4));
    GPUDL_CHECK(gpudl_model_add_residual_begin(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 4, 7));
    CHECK(gpudl_model_build(m, NULL) == GPUDL_ERR_INVALID_ARG);
    CHECK(strstr(gpudl_ctx_last_error(c), "no residual_end") != NULL);
    CHECK(gpudl_model_add_residual_end(m) == GPUDL_ERR_SHAPE);
    gpudl_model_destroy(m);
    /* heads that do not divide C; a duplicate name; layer norm of the wrong width */
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, &T));
    GPUDL_CHECK(gpudl_model_add_embedding(m, 7, 6));
    GPUDL_CHECK(gpudl_model_set_name(m, "emb"));
    CHECK(gpudl_model_add_attention(m, 6, 4) == GPUDL_ERR_INVALID_ARG);
    gpudl_model_destroy(m);
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, &T));
    GPUDL_CHECK(gpudl_model_add_embedding(m, 7, 6));
    GPUDL_CHECK(gpudl_model_set_name(m, "emb"));
    CHECK(gpudl_model_add_layernorm(m, 5) == GPUDL_ERR_SHAPE);
    gpudl_model_destroy(m);
    GPUDL_CHECK(gpudl_model_create(c, &m, 1, &T));
    GPUDL_CHECK(gpudl_model_add_embedding(m, 7, 6));
    GPUDL_CHECK(gpudl_model_set_name(m, "emb"));
    GPUDL_CHECK(gpudl_model_add_layernorm(m, 6));
    CHECK(gpudl_model_set_name(m, "emb") == GPUDL_ERR_INVALID_ARG);
    CHECK(gpudl_model_set_name(m, "") == GPUDL_ERR_INVALID_ARG);
    GPUDL_CHECK(gpudl_model_add_linear(m, 6, 7));
    GPUDL_CHECK(gpudl_model_build(m, NULL));
    /* floats for ids; targets (N) for scores (N,T,V); predict on (T,V) outputs */
    xf = mk(c, GPUDL_F32, 2, sh2);
    GPUDL_CHECK(gpudl_tensor_fill(c, &xf, 1.0f));
    CHECK(gpudl_model_forward(m, &xf, NULL) == GPUDL_ERR_INVALID_ARG);
    x = tr_ids_i32(2, T, 7, 1);
    y1 = tr_ids(GPUDL_I32, 2, 1, 7, 2);
    GPUDL_CHECK(gpudl_model_forward(m, &x, NULL));
    CHECK(gpudl_model_loss(m, &y1) == GPUDL_ERR_SHAPE);
    CHECK(gpudl_model_predict(m, NULL) == GPUDL_ERR_INVALID_ARG && gpudl_model_predict_view(m, NULL) == GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(c, &xf); gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y1);
    gpudl_model_destroy(m);
}

/* The same GPT on the GPU and the CPU: logits, loss, every gradient; then
   training steps (the second one captured as a CUDA graph) in FP32. Both
   attention paths. */
static void test_gpu_transformer_model(void) {
    gpudl_ctx *c = cpu_ctx();
    int cs;
    NEED_GPU(gctx);
    for (cs = 0; cs < 3; cs++) {   /* case 0 (launch-bound: fused on the GPU), case 1, case 0 on the GEMM path */
        const tr_gpt *g = &tr_gpt_cases[cs & 1];
        int64_t N = 3;
        tr_gpt_attention = cs == 2 ? 1 : 0;
        gpudl_model *m = tr_gpt_model(c, g, 1), *gm = tr_gpt_model(gctx, g, 1);
        gpudl_tensor hx = tr_ids_i32(N, g->T, g->V, 31), hy = tr_ids_i32(N, g->T, g->V, 32), x, y, p, gp, gr, ggr, out, gout;
        gpudl_optim_desc od;
        float l1, l2;
        int it;
        x = to_dev(gctx, &hx); y = to_dev(gctx, &hy);
        tr_gpt_fill(c, m, g);
        GPUDL_CHECK(gpudl_model_params(m, &p, &gr));
        GPUDL_CHECK(gpudl_model_params(gm, &gp, &ggr));
        GPUDL_CHECK(gpudl_tensor_copy(gctx, &gp, &p));
        GPUDL_CHECK(gpudl_model_zero_grad(m)); GPUDL_CHECK(gpudl_model_zero_grad(gm));
        GPUDL_CHECK(gpudl_model_forward(m, &hx, &out)); GPUDL_CHECK(gpudl_model_forward(gm, &x, &gout));
        tr_gpu_vs_cpu(gctx, cs ? "fused GPT logits" : "GPT logits", GPUDL_F32, &gout, &out, 2e-5);
        GPUDL_CHECK(gpudl_model_loss(m, &hy)); GPUDL_CHECK(gpudl_model_loss(gm, &y));
        GPUDL_CHECK(gpudl_model_loss_value(m, &l1)); GPUDL_CHECK(gpudl_model_loss_value(gm, &l2));
        CHECKF(fabs(l1 - l2) <= 1e-5 * fabs(l1), "loss CPU %g GPU %g", (double)l1, (double)l2);
        GPUDL_CHECK(gpudl_model_backward(m)); GPUDL_CHECK(gpudl_model_backward(gm));
        tr_gpu_vs_cpu(gctx, cs ? "fused GPT gradients" : "GPT gradients", GPUDL_F32, &ggr, &gr, 1e-4);
        memset(&od, 0, sizeof od);
        od.kind = GPUDL_OPTIM_SGD; od.lr = 0.05f; od.momentum = 0.9f; od.clip_norm = 1.0f;   /* linear in the gradients: */
        GPUDL_CHECK(gpudl_model_set_optimizer(m, &od)); GPUDL_CHECK(gpudl_model_set_optimizer(gm, &od));   /* (Adam's first
            steps turn a 1e-9 gradient's rounding into a step of lr either way) */
        for (it = 0; it < 4; it++) {   /* steps 2 and 3: the graph captured, then replayed */
            GPUDL_CHECK(gpudl_model_train_step(m, &hx, &hy));
            GPUDL_CHECK(gpudl_model_train_step(gm, &x, &y));
        }
        GPUDL_CHECK(gpudl_model_loss_value(m, &l1)); GPUDL_CHECK(gpudl_model_loss_value(gm, &l2));
        CHECKF(fabs(l1 - l2) <= 1e-4 * fabs(l1), "after 4 steps: loss CPU %g GPU %g", (double)l1, (double)l2);
        GPUDL_CHECK(gpudl_model_params(gm, &gp, NULL));
        tr_gpu_vs_cpu(gctx, "GPT weights after 4 steps", GPUDL_F32, &gp, &p, 1e-4);
        gpudl_tensor_free(gctx, &x); gpudl_tensor_free(gctx, &y);
        gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy);
        gpudl_model_destroy(m); gpudl_model_destroy(gm);
    }
    tr_gpt_attention = 0;
}
/* FP16 with the loss scaler learns (a test of its own, outside the sanitizer
   and shuffled-schedule runs of the gpu_transformer tests: 40 steps). */
static void test_gpu_gpt_learns_fp16(void) {
    NEED_GPU(gctx);
    tr_gpt_learns_on(gctx, GPUDL_PRECISION_FP16, 0);
}

/* ---- a bad batch never moves a weight on the GPU (issue 36) ---- */

static gpudl_status tr_calls(gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *y) {
    gpudl_status s = gpudl_model_zero_grad(m);
    if (s == GPUDL_OK) s = gpudl_model_forward(m, x, NULL);
    if (s == GPUDL_OK) s = gpudl_model_loss(m, y);
    if (s == GPUDL_OK) s = gpudl_model_backward(m);
    return s == GPUDL_OK ? gpudl_model_step(m) : s;
}

/* Good steps (moments, a captured graph), then a batch whose label or
   token id is out of range: every call returns at once (the GPU does not
   stop to look), the next wait names the bad row and says the update was
   skipped, and the checkpoint's bytes (weights, optimizer state, step
   count, loss scaler) are those of before; backward refuses after the
   reported loss, as on the CPU; then a good batch trains. */
static void tr_bad_batch(gpudl_ctx *g, gpudl_model *m, const gpudl_tensor *x, const gpudl_tensor *y, const gpudl_tensor *xb,
                         const gpudl_tensor *yb, int graph, const char *what) {
    void *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    int64_t steps;
    gpudl_status s;
    int k;
    for (k = 0; k < 3; k++) GPUDL_CHECK(graph ? gpudl_model_train_step(m, x, y) : tr_calls(m, x, y));
    GPUDL_CHECK(gpudl_ctx_sync(g));
    steps = gpudl_model_step_count(m);
    GPUDL_CHECK(gpudl_model_save_memory(g, m, &before, &nb));
    s = graph ? gpudl_model_train_step(m, xb, yb) : tr_calls(m, xb, yb);
    CHECKF(s == GPUDL_OK, "%s: the bad batch's calls -> %s (%s)", what, gpudl_status_string(s), gpudl_ctx_last_error(g));
    s = gpudl_ctx_sync(g);
    CHECKF(s == GPUDL_ERR_INVALID_ARG && strstr(gpudl_ctx_last_error(g), "was outside") &&
           strstr(gpudl_ctx_last_error(g), "was skipped"), "%s: the wait -> %s: %s", what, gpudl_status_string(s),
           gpudl_ctx_last_error(g));
    CHECKF(gpudl_model_step_count(m) == steps, "%s: step count %lld, was %lld", what, (long long)gpudl_model_step_count(m),
           (long long)steps);
    GPUDL_CHECK(gpudl_model_save_memory(g, m, &after, &na));
    CHECKF(na == nb && memcmp(before, after, nb) == 0, "%s: the bad batch changed the model's checkpoint", what);
    CHECK_ST(gpudl_model_backward(m), GPUDL_ERR_INVALID_ARG);   /* the reported loss failed, as on the CPU */
    GPUDL_CHECK(graph ? gpudl_model_train_step(m, x, y) : tr_calls(m, x, y));
    GPUDL_CHECK(gpudl_ctx_sync(g));
    CHECKF(gpudl_model_step_count(m) == steps + 1, "%s: a good batch after it: step count %lld", what,
           (long long)gpudl_model_step_count(m));
    gpudl_memory_free(before); gpudl_memory_free(after);
}

static void test_gpu_bad_batch_skips(void) {
    const tr_gpt *cfg = &tr_gpt_cases[0];
    int64_t N = 3, xs[2] = {4, 6}, n4 = 4, six = 6, i;
    int prec, graph;
    char what[96];
    NEED_GPU(g);
    for (prec = 0; prec < 2; prec++)
        for (graph = 0; graph < 2; graph++) {
            gpudl_precision p = prec ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_FP32;
            gpudl_optim_desc od;
            gpudl_model *m;
            gpudl_tensor hx = rnd(2, xs, -1, 1), hy = mk(cpu_ctx(), GPUDL_I32, 1, &n4), x, y, yb;
            gpudl_tensor ht = tr_ids_i32(N, cfg->T, cfg->V, 3), hu = tr_ids_i32(N, cfg->T, cfg->V, 4), t, u, tb, ub;
            memset(&od, 0, sizeof od);
            od.kind = GPUDL_OPTIM_ADAMW;
            /* an MLP: a class label out of range */
            GPUDL_CHECK(gpudl_model_create(g, &m, 1, &six));
            GPUDL_CHECK(gpudl_model_add_linear(m, 6, 5));
            GPUDL_CHECK(gpudl_model_add_relu(m));
            GPUDL_CHECK(gpudl_model_add_linear(m, 5, 4));
            GPUDL_CHECK(gpudl_model_build(m, NULL));
            if (prec) GPUDL_CHECK(gpudl_model_set_precision(m, p, NULL));
            GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
            for (i = 0; i < 4; i++) ((int32_t *)hy.data)[i] = (int32_t)i;
            x = to_dev(g, &hx); y = to_dev(g, &hy);
            ((int32_t *)hy.data)[1] = 4;   /* K = 4 */
            yb = to_dev(g, &hy);
            snprintf(what, sizeof what, "MLP, label 4 of 4 classes, %s, %s", prec ? "FP16" : "FP32", graph ? "train_step" : "calls");
            tr_bad_batch(g, m, &x, &y, &x, &yb, graph, what);
            gpudl_model_destroy(m);
            /* a GPT: a target id out of range, then a token id */
            m = tr_gpt_model(g, cfg, 0);
            if (prec) GPUDL_CHECK(gpudl_model_set_precision(m, p, NULL));
            GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
            t = to_dev(g, &ht); u = to_dev(g, &hu);
            ((int32_t *)hu.data)[5] = (int32_t)cfg->V;
            ub = to_dev(g, &hu);
            ((int32_t *)hu.data)[5] = 0;
            ((int32_t *)ht.data)[2] = (int32_t)cfg->V + 3;
            tb = to_dev(g, &ht);
            snprintf(what, sizeof what, "GPT, target id V, %s, %s", prec ? "FP16" : "FP32", graph ? "train_step" : "calls");
            tr_bad_batch(g, m, &t, &u, &t, &ub, graph, what);
            snprintf(what, sizeof what, "GPT, token id V+3, %s, %s", prec ? "FP16" : "FP32", graph ? "train_step" : "calls");
            tr_bad_batch(g, m, &t, &u, &tb, &u, graph, what);
            gpudl_model_destroy(m);
            gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y); gpudl_tensor_free(g, &yb);
            gpudl_tensor_free(g, &t); gpudl_tensor_free(g, &u); gpudl_tensor_free(g, &tb); gpudl_tensor_free(g, &ub);
            gpudl_tensor_free(cpu_ctx(), &hx); gpudl_tensor_free(cpu_ctx(), &hy);
            gpudl_tensor_free(cpu_ctx(), &ht); gpudl_tensor_free(cpu_ctx(), &hu);
        }
}

#ifdef __CUEMU__
static uint64_t tr_ops(const cuemu_counters *a, const cuemu_counters *b) {
    return (b->kernel_launches - a->kernel_launches) + (b->library_calls - a->library_calls) + (b->memset_calls - a->memset_calls) +
           (b->memcpy_calls - a->memcpy_calls);
}
#endif

/* Device operations of a steady-state GPT training step (the example's
   recipe: AdamW, clipping, FP32 and FP16), per phase, on the emulated
   device; and with the graph. The fused floor for L blocks, with the fused
   attention kernels and cuBLAS(Lt) GEMMs, is 12 + 24 L: forward 3 + 8 L
   (the embedding; per block ln_1, qkv GEMM + bias, attention, proj GEMM +
   bias, the residual add done by ln_2's kernel, fc GEMM + bias, GELU (exact
   erf: cuBLASLt's GELU epilogue is the tanh form), proj GEMM + bias, the
   block's closing add done by the next layer norm's kernel; ln_f; lm_head),
   the loss 1, backward 5 + 16 L (lm_head dx and dW with BGRADB; ln_f's
   params and dx; per block proj 2, GELU 1, fc 2, ln_2 2, proj 2, attention
   3, qkv 2, ln_1 2; one embedding kernel), the step 3 (norm and non-finite
   check in one reduction, the update, the scaler's copy to the host). The
   step must be within 20 % of it. */
static void test_gpu_emu_gpt_step_counts(void) {
#ifndef __CUEMU__
    SKIP("counts device operations on the emulated device (tests/emu) only");
#else
    static const tr_gpt g = {24, 16, 32, 4, 2};
    static const char *phase[5] = {"zero_grad", "forward", "loss", "backward", "step"};
    gpudl_ctx *c = cpu_ctx();
    int pi;
    NEED_GPU(gctx);
    for (pi = 0; pi < 4; pi++) {   /* FP32, FP16, the graph (the fused attention: launch-bound), FP32 on the GEMM path */
        gpudl_precision prec = pi == 1 ? GPUDL_PRECISION_FP16 : GPUDL_PRECISION_FP32;
        gpudl_model *m;
        tr_gpt_attention = pi == 3 ? 1 : 0;
        m = tr_gpt_model(gctx, &g, 1);
        gpudl_tensor hx = tr_ids_i32(4, g.T, g.V, 1), hy = tr_ids_i32(4, g.T, g.V, 2), x = to_dev(gctx, &hx), y = to_dev(gctx, &hy);
        gpudl_optim_desc od;
        cuemu_counters n[6];
        char line[256];
        size_t len = 0;
        int step, ph;
        memset(&od, 0, sizeof od);
        od.kind = GPUDL_OPTIM_ADAMW; od.lr = 1e-3f; od.weight_decay = 0.1f; od.clip_norm = 1.0f;
        GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
        GPUDL_CHECK(gpudl_model_set_precision(m, prec, NULL));
        if (pi == 2) {   /* gpudl_model_train_step: captured at the second step, replayed after */
            for (step = 0; step < 4; step++) {
                if (step == 3) { GPUDL_CHECK(gpudl_ctx_sync(gctx)); cuemu_counters_reset(); }
                GPUDL_CHECK(gpudl_model_train_step(m, &x, &y));
            }
            cuemu_counters_get(&n[0]);
            printf("    GPT FP32 graph: %llu graph launch (%llu kernels, %llu library calls, %llu memsets, %llu copies), "
                   "%llu outside, %llu CUDA API calls\n", (unsigned long long)n[0].graph_launches,
                   (unsigned long long)n[0].graph_kernels, (unsigned long long)n[0].graph_library_calls,
                   (unsigned long long)n[0].graph_memsets, (unsigned long long)n[0].graph_memcpys,
                   (unsigned long long)(n[0].kernel_launches + n[0].library_calls + n[0].memset_calls + n[0].memcpy_calls),
                   (unsigned long long)n[0].runtime_api_calls);
            CHECKF(n[0].graph_launches == 1, "the GPT step is not one graph launch (%llu)", (unsigned long long)n[0].graph_launches);
        } else {
            for (step = 0; step < 3; step++) {
                if (step == 2) { GPUDL_CHECK(gpudl_ctx_sync(gctx)); cuemu_counters_reset(); cuemu_counters_get(&n[0]); }
                GPUDL_CHECK(gpudl_model_zero_grad(m));
                if (step == 2) cuemu_counters_get(&n[1]);
                GPUDL_CHECK(gpudl_model_forward(m, &x, NULL));
                if (step == 2) cuemu_counters_get(&n[2]);
                GPUDL_CHECK(gpudl_model_loss(m, &y));
                if (step == 2) cuemu_counters_get(&n[3]);
                GPUDL_CHECK(gpudl_model_backward(m));
                if (step == 2) cuemu_counters_get(&n[4]);
                GPUDL_CHECK(gpudl_model_step(m));
                if (step == 2) cuemu_counters_get(&n[5]);
            }
            for (ph = 0; ph < 5; ph++)
                len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %llu", ph ? ", " : "", phase[ph],
                                        (unsigned long long)tr_ops(&n[ph], &n[ph + 1]));
            printf("    GPT %s (2 blocks): %llu device ops (%llu kernels, %llu library calls, %llu memsets, %llu copies): %s\n",
                   pi == 3 ? "FP32, GEMM attention" : pi ? "FP16" : "FP32", (unsigned long long)tr_ops(&n[0], &n[5]), (unsigned long long)n[5].kernel_launches,
                   (unsigned long long)n[5].library_calls, (unsigned long long)n[5].memset_calls,
                   (unsigned long long)n[5].memcpy_calls, line);
            CHECKF(n[5].mallocs == 0 && n[5].frees == 0 && n[5].host_allocs == 0 && n[5].host_waits == 0,
                   "a steady-state GPT step allocates or waits (%llu mallocs, %llu waits)", (unsigned long long)n[5].mallocs,
                   (unsigned long long)n[5].host_waits);
            if (pi < 2)
                CHECKF(tr_ops(&n[0], &n[5]) * 10 <= (uint64_t)(12 + 24 * g.L) * 12, "GPT step: %llu device ops, over 1.2 x the "
                       "fused floor of %lld", (unsigned long long)tr_ops(&n[0], &n[5]), (long long)(12 + 24 * g.L));
        }
        gpudl_tensor_free(gctx, &x); gpudl_tensor_free(gctx, &y);
        gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy);
        gpudl_model_destroy(m);
    }
    tr_gpt_attention = 0;
#endif
}

/* Residual pairs in other places than a GPT's: around a plain MLP, nested,
   an end straight before a layer norm, a layer norm straight after a begin,
   on F32 inputs (so the input's gradient is checked too): gradcheck on the
   CPU; on the GPU against the CPU. */
static gpudl_model *tr_res_model(gpudl_ctx *ctx, int variant) {
    gpudl_model *m;
    gpudl_model_desc md;
    int64_t in = 6;
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 1, &in));
    GPUDL_CHECK(gpudl_model_add_linear(m, 6, 8));
    GPUDL_CHECK(gpudl_model_add_residual_begin(m));
    if (variant == 1) GPUDL_CHECK(gpudl_model_add_residual_begin(m));   /* nested: x + (y + f(y)) with y = x */
    GPUDL_CHECK(gpudl_model_add_linear(m, 8, 8));
    GPUDL_CHECK(gpudl_model_add_act(m, GPUDL_ACT_TANH, 0.0f));
    if (variant == 2) GPUDL_CHECK(gpudl_model_add_layernorm(m, 8));
    GPUDL_CHECK(gpudl_model_add_residual_end(m));
    if (variant == 1) {
        GPUDL_CHECK(gpudl_model_add_linear(m, 8, 8));
        GPUDL_CHECK(gpudl_model_add_residual_end(m));
    }
    if (variant == 2) {   /* end, layer norm; then a begin, a layer norm first inside */
        GPUDL_CHECK(gpudl_model_add_layernorm(m, 8));
        GPUDL_CHECK(gpudl_model_add_residual_begin(m));
        GPUDL_CHECK(gpudl_model_add_layernorm(m, 8));
        GPUDL_CHECK(gpudl_model_add_linear(m, 8, 8));
        GPUDL_CHECK(gpudl_model_add_residual_end(m));
    }
    GPUDL_CHECK(gpudl_model_add_linear(m, 8, 5));
    memset(&md, 0, sizeof md);
    md.max_batch = 4;
    md.seed = 3;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    return m;
}
static void test_transformer_model_residual(void) {
    gpudl_ctx *c = cpu_ctx();
    int v;
    for (v = 0; v < 3; v++) {
        gpudl_model *m = tr_res_model(c, v);
        int64_t xs[2] = {3, 6};
        gpudl_tensor x = tr_rand(2, xs, -1, 1), y = tr_ids(GPUDL_I32, 1, 3, 5, 7);
        gpudl_gradcheck_result r;
        y.ndim = 1; y.shape[0] = 3;
        GPUDL_CHECK(gpudl_gradcheck(m, &x, &y, 1e-3, 1e-4, 2e-2, 0, &r));
        CHECKF(r.failed == 0 && r.checked > 100, "residual model %d: %lld of %lld failed, worst %s", v, (long long)r.failed,
               (long long)r.checked, r.worst);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &y);
        gpudl_model_destroy(m);
    }
}
static void test_gpu_transformer_residual(void) {
    gpudl_ctx *c = cpu_ctx();
    int v;
    NEED_GPU(g);
    for (v = 0; v < 3; v++) {
        gpudl_model *m = tr_res_model(c, v), *gm = tr_res_model(g, v);
        int64_t xs[2] = {3, 6};
        gpudl_tensor hx = tr_rand(2, xs, -1, 1), hy = tr_ids(GPUDL_I32, 1, 3, 5, 7), x, y, p, gp, gr, ggr, out, gout;
        hy.ndim = 1; hy.shape[0] = 3;
        x = to_dev(g, &hx); y = to_dev(g, &hy);
        GPUDL_CHECK(gpudl_model_params(m, &p, &gr));
        GPUDL_CHECK(gpudl_model_params(gm, &gp, &ggr));
        GPUDL_CHECK(gpudl_tensor_copy(g, &gp, &p));
        GPUDL_CHECK(gpudl_model_zero_grad(m)); GPUDL_CHECK(gpudl_model_zero_grad(gm));
        GPUDL_CHECK(gpudl_model_forward(m, &hx, &out)); GPUDL_CHECK(gpudl_model_forward(gm, &x, &gout));
        tr_gpu_vs_cpu(g, "residual model output", GPUDL_F32, &gout, &out, 2e-5);
        GPUDL_CHECK(gpudl_model_loss(m, &hy)); GPUDL_CHECK(gpudl_model_loss(gm, &y));
        GPUDL_CHECK(gpudl_model_backward(m)); GPUDL_CHECK(gpudl_model_backward(gm));
        tr_gpu_vs_cpu(g, "residual model gradients", GPUDL_F32, &ggr, &gr, 1e-4);
        gpudl_tensor_free(g, &x); gpudl_tensor_free(g, &y);
        gpudl_tensor_free(c, &hx); gpudl_tensor_free(c, &hy);
        gpudl_model_destroy(m); gpudl_model_destroy(gm);
    }
}

/* A context with the user's causal softmax (gpudl_ops.attn_softmax_*, a
   student's kernel) builds its attention layers on the GEMM path, which
   calls it, even where the fused kernels would be chosen (they do not call
   it); the model's outputs are the same. */
static int tr_ovr_calls;
static gpudl_status tr_ovr_softmax(void *user, void *stream, float *att, const float *s, int64_t L, int64_t T) {
    int64_t l, t, j;
    (void)user; (void)stream;
    tr_ovr_calls++;
    for (l = 0; l < L; l++)
        for (t = 0; t < T; t++) {
            const float *r = s + (l * T + t) * T;
            float *a = att + (l * T + t) * T, mx = r[0];
            double sum = 0;
            for (j = 1; j <= t; j++) if (r[j] > mx) mx = r[j];
            for (j = 0; j <= t; j++) sum += exp((double)r[j] - mx);
            for (j = 0; j < T; j++) a[j] = j <= t ? (float)(exp((double)r[j] - mx) / sum) : 0.0f;
        }
    return GPUDL_OK;
}
static void test_transformer_model_override(void) {
    gpudl_ctx *c;
    gpudl_ctx_desc cd;
    gpudl_ops ops;
    const tr_gpt *g = &tr_gpt_cases[1];   /* the fused kernels' case */
    gpudl_model *m, *ref;
    gpudl_tensor x = tr_ids_i32(2, g->T, g->V, 3), out, rout, p, rp;
    memset(&cd, 0, sizeof cd);
    cd.device = GPUDL_DEVICE_CPU;
    GPUDL_CHECK(gpudl_ctx_create(&cd, &c));
    memset(&ops, 0, sizeof ops);
    ops.attn_softmax_forward = tr_ovr_softmax;
    GPUDL_CHECK(gpudl_ctx_set_ops(c, GPUDL_DEVICE_CPU, &ops));
    m = tr_gpt_model(c, g, 0);
    ref = tr_gpt_model(cpu_ctx(), g, 0);
    GPUDL_CHECK(gpudl_model_params(m, &p, NULL));
    GPUDL_CHECK(gpudl_model_params(ref, &rp, NULL));
    GPUDL_CHECK(gpudl_tensor_copy(c, &p, &rp));
    tr_ovr_calls = 0;
    GPUDL_CHECK(gpudl_model_forward(m, &x, &out));
    CHECKF(tr_ovr_calls > 0, "the user's causal softmax was not called (the model took the fused kernels)");
    GPUDL_CHECK(gpudl_model_forward(ref, &x, &rout));
    {
        double *r = tr_dbl(&rout);
        TR_CLOSE("logits with the user's softmax", &out, r, gpudl_tensor_numel(&rout), 1e-5);
        free(r);
    }
    gpudl_model_destroy(m);
    gpudl_model_destroy(ref);
    gpudl_tensor_free(cpu_ctx(), &x);
    gpudl_ctx_destroy(c);
}

/* GPUDL_INIT_GPT2: every weight normal(0, 0.02), biases 0, layer norms 1 and
   0, the projections that close a residual (attention's and the MLP's
   c_proj) 0.02 / sqrt(2 L): the sample standard deviations of a wide GPT. */
static void test_transformer_model_gpt2_init(void) {
    static const tr_gpt g = {50, 16, 64, 4, 2};
    gpudl_model *m;
    gpudl_tensor p;
    int64_t off[64], l;
    const float *w;
    double want_proj = 0.02 / sqrt(4.0);
    tr_gpt_init = GPUDL_INIT_GPT2;
    m = tr_gpt_model(cpu_ctx(), &g, 1);
    tr_gpt_init = GPUDL_INIT_DEFAULT;
    tr_gpt_layout(&g, off);
    GPUDL_CHECK(gpudl_model_params(m, &p, NULL));
    w = (const float *)p.data;
    for (l = 0; l < 2 + 12 * g.L + 4; l++) {
        int64_t cnt, j, part = l < 2 ? -1 : (l - 2) % 12;
        double s2 = 0, want;
        const char *what;
        if (l == 0) { cnt = g.V * g.C; want = 0.02; what = "wte"; }
        else if (l == 1) { cnt = g.T * g.C; want = 0.02; what = "wpe"; }
        else if (l >= 2 + 12 * g.L) {   /* ln_f weight, bias; lm_head weight, bias */
            int64_t q = l - 2 - 12 * g.L;
            cnt = q == 2 ? g.V * g.C : q == 3 ? g.V : g.C;
            want = q == 2 ? 0.02 : -1;
            what = q == 2 ? "lm_head.weight" : "ln_f / lm_head.bias";
        } else {
            static const int64_t mult[12] = {1, 1, 3, 3, 1, 1, 1, 1, 4, 4, 4, 1};   /* elements / C (weights: x C more) */
            int weight = part == 2 || part == 4 || part == 8 || part == 10;
            cnt = mult[part] * g.C * (weight ? g.C : 1);
            want = part == 4 || part == 10 ? want_proj : weight ? 0.02 : -1;
            what = part == 4 ? "attn.c_proj.weight" : part == 10 ? "mlp.c_proj.weight" : weight ? "c_attn / c_fc weight" : "ln / bias";
        }
        if (want < 0) continue;
        for (j = 0; j < cnt; j++) s2 += (double)w[off[l] + j] * w[off[l] + j];
        CHECKF(fabs(sqrt(s2 / (double)cnt) / want - 1) < 0.1, "%s: std %g, want %g", what, sqrt(s2 / (double)cnt), want);
    }
    gpudl_model_destroy(m);
}
