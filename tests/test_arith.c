/* gpudl tests: arith. The elementwise ops (add, mul, scale, axpy) and the
   reductions (sum, max, argmax of rows) on the CPU against float64 and, in
   the nvcc build, on the GPU against the CPU.
   Part of the core suite: tests/suite_core.c #includes it (see there). */

/* >>arith: elementwise and reductions ------------------------------------- */

static void test_elementwise(void) {
    static const int64_t ns[] = {1, 7, 33, 1000, 100003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *ctx = cpu_ctx();
    size_t s;
    int d, op;
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++)
            for (op = 0; op < 4; op++) {
                int64_t n = ns[s], i, bad = 0;
                gpudl_tensor a = host_rand(dts[d], 1, n, 0, 0), b = host_rand(dts[d], 1, n, 0, 0);
                gpudl_tensor o = make(ctx, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0);
                double tol = dts[d] == GPUDL_F32 ? 1e-7 : dts[d] == GPUDL_F16 ? 1e-3 : 8e-3;
                CHECK_OK(gpudl_tensor_copy(ctx, &o, &b));
                if (op == 0) CHECK_OK(gpudl_add(ctx, &o, &a, &b));
                if (op == 1) CHECK_OK(gpudl_mul(ctx, &o, &a, &b));
                if (op == 2) CHECK_OK(gpudl_scale(ctx, &o, -1.5f));
                if (op == 3) CHECK_OK(gpudl_axpy(ctx, &o, 0.25f, &a));
                for (i = 0; i < n; i++) {
                    double x = ld(&a, i), y = ld(&b, i);
                    double ref = op == 0 ? x + y : op == 1 ? x * y : op == 2 ? -1.5 * y : 0.25 * x + y;
                    if (!(fabs(ld(&o, i) - ref) <= tol * (fabs(x) + fabs(y) + fabs(ref)))) bad++;
                }
                CHECKF(bad == 0, "op %d %s n=%lld: %lld wrong", op, gpudl_dtype_name(dts[d]), (long long)n, (long long)bad);
                gpudl_tensor_free(ctx, &a); gpudl_tensor_free(ctx, &b); gpudl_tensor_free(ctx, &o);
            }
    {
        gpudl_tensor a = host_rand(GPUDL_F32, 1, 7, 0, 0), b = host_rand(GPUDL_F32, 1, 8, 0, 0), h = host_rand(GPUDL_F16, 1, 7, 0, 0);
        CHECK_ST(gpudl_add(ctx, &a, &a, &b), GPUDL_ERR_SHAPE);
        CHECK(strstr(gpudl_ctx_last_error(ctx), "f32[7] cpu") && strstr(gpudl_ctx_last_error(ctx), "f32[8] cpu"));
        CHECK_ST(gpudl_mul(ctx, &a, &a, &h), GPUDL_ERR_INVALID_ARG);
        CHECK_ST(gpudl_axpy(ctx, &a, 1.0f, NULL), GPUDL_ERR_INVALID_ARG);
        gpudl_tensor_free(ctx, &a); gpudl_tensor_free(ctx, &b); gpudl_tensor_free(ctx, &h);
    }
}

static void test_reductions(void) {
    static const int64_t ns[] = {1, 7, 33, 1000, 100003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_tensor out = make(ctx, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0);
    size_t s;
    int d;
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++) {
            int64_t n = ns[s], i;
            gpudl_tensor x = host_rand(dts[d], 1, n, 0, 0);
            double ref = 0, mag = 0, mx = -1e300;
            float got;
            for (i = 0; i < n; i++) { double v = ld(&x, i); ref += v; mag += fabs(v); mx = v > mx ? v : mx; }
            CHECK_OK(gpudl_sum(ctx, &out, &x));
            CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
            CHECKF(fabs(got - ref) <= 1e-6 * mag, "sum %s n=%lld: %g want %g", gpudl_dtype_name(dts[d]), (long long)n, (double)got, ref);
            CHECK_OK(gpudl_max(ctx, &out, &x));
            CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
            CHECKF(got == (float)mx, "max %s n=%lld: %g want %g", gpudl_dtype_name(dts[d]), (long long)n, (double)got, mx);
            gpudl_tensor_free(ctx, &x);
        }
    {   /* max of negatives, and NaN propagation */
        float v[5] = {-3, -1, -2, -7, -1.5f}, got;
        gpudl_tensor x;
        int64_t n5[1] = {5};
        CHECK_OK(gpudl_tensor_wrap(&x, v, GPUDL_DEVICE_CPU, GPUDL_F32, 1, n5));
        CHECK_OK(gpudl_max(ctx, &out, &x));
        CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
        CHECK(got == -1.0f);
        v[3] = NAN;
        CHECK_OK(gpudl_max(ctx, &out, &x));
        CHECK_OK(gpudl_tensor_item(ctx, &out, 0, &got));
        CHECK(is_nan(got));
        CHECK_ST(gpudl_sum(ctx, &x, &x), GPUDL_ERR_SHAPE);
    }
    gpudl_tensor_free(ctx, &out);
}

static void test_argmax_rows(void) {
    gpudl_ctx *ctx = cpu_ctx();
    static const int64_t shapes[][2] = {{1, 1}, {7, 33}, {33, 7}, {1000, 10}, {3, 1000}};
    size_t s;
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t R = shapes[s][0], C = shapes[s][1], r, c;
        gpudl_tensor x = host_rand(GPUDL_F32, 2, R, C, 0), o = make(ctx, GPUDL_DEVICE_CPU, GPUDL_I32, 1, R, 0, 0);
        int bad = 0;
        CHECK_OK(gpudl_argmax_rows(ctx, &o, &x));
        for (r = 0; r < R; r++) {
            int64_t bi = 0;
            for (c = 1; c < C; c++) if (ld(&x, r * C + c) > ld(&x, r * C + bi)) bi = c;
            if (((int32_t *)o.data)[r] != bi) bad++;
        }
        CHECKF(bad == 0, "argmax %lldx%lld: %d rows wrong", (long long)R, (long long)C, bad);
        gpudl_tensor_free(ctx, &x); gpudl_tensor_free(ctx, &o);
    }
    {
        float v[8] = {1, 5, 5, 2, /* tie -> first */ 0, NAN, 3, NAN /* NaN wins, first NaN */};
        int64_t sh[2] = {2, 4}, n1[1] = {2};
        int32_t out[2];
        gpudl_tensor x, o;
        CHECK_OK(gpudl_tensor_wrap(&x, v, GPUDL_DEVICE_CPU, GPUDL_F32, 2, sh));
        CHECK_OK(gpudl_tensor_wrap(&o, out, GPUDL_DEVICE_CPU, GPUDL_I32, 1, n1));
        CHECK_OK(gpudl_argmax_rows(ctx, &o, &x));
        CHECK(out[0] == 1 && out[1] == 1);
        CHECK_ST(gpudl_argmax_rows(ctx, &x, &x), GPUDL_ERR_SHAPE);
    }
}

static void test_gpu_elementwise_reductions(void) {
    static const int64_t ns[] = {1, 7, 33, 1000, 1000003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    int d, op;
    NEED_GPU(g);
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++) {
            int64_t n = ns[s];
            double tol = dts[d] == GPUDL_F32 ? 1e-6 : dts[d] == GPUDL_F16 ? 1e-3 : 8e-3;
            gpudl_tensor a = host_rand(dts[d], 1, n, 0, 0), b = host_rand(dts[d], 1, n, 0, 0), o = make(c, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0);
            gpudl_tensor da = to_dev(g, &a), db = to_dev(g, &b), dout, got, r1 = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0), dr;
            float gv, cv;
            GPUDL_CHECK(gpudl_tensor_create_on(g, &dr, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, r1.shape));
            for (op = 0; op < 4; op++) {
                dout = to_dev(g, &b);
                CHECK_OK(gpudl_tensor_copy(c, &o, &b));
                if (op == 0) { CHECK_OK(gpudl_add(g, &dout, &da, &db)); CHECK_OK(gpudl_add(c, &o, &a, &b)); }
                if (op == 1) { CHECK_OK(gpudl_mul(g, &dout, &da, &db)); CHECK_OK(gpudl_mul(c, &o, &a, &b)); }
                if (op == 2) { CHECK_OK(gpudl_scale(g, &dout, 3.0f)); CHECK_OK(gpudl_scale(c, &o, 3.0f)); }
                if (op == 3) { CHECK_OK(gpudl_axpy(g, &dout, -0.5f, &da)); CHECK_OK(gpudl_axpy(c, &o, -0.5f, &a)); }
                got = to_host(g, &dout);
                CHECKF(max_rel(&got, &o, 1.0) <= tol, "GPU op %d %s n=%lld", op, gpudl_dtype_name(dts[d]), (long long)n);
                gpudl_tensor_free(c, &got); gpudl_tensor_free(g, &dout);
            }
            CHECK_OK(gpudl_sum(g, &dr, &da)); CHECK_OK(gpudl_sum(c, &r1, &a));
            CHECK_OK(gpudl_tensor_item(g, &dr, 0, &gv)); CHECK_OK(gpudl_tensor_item(c, &r1, 0, &cv));
            {
                /* against the float64 sum: a float sum in any tree-like order (what a GPU reduction
                   is: short runs per thread, then log2 levels) errs by at most about
                   (depth) * 2^-24 * sum |x|; depth <= 2 log2 n + n / 2^16 + 8 */
                double ref = 0, mag = 0, tol;
                int64_t i;
                for (i = 0; i < n; i++) { ref += ld(&a, i); mag += fabs(ld(&a, i)); }
                tol = (2 * log2((double)n + 1) + (double)n / 65536.0 + 8) * ldexp(1.0, -24) * mag;
                CHECKF(fabs(gv - ref) <= tol, "GPU sum %s n=%lld: %.9g vs float64 %.9g (tolerance %.3g)",
                       gpudl_dtype_name(dts[d]), (long long)n, (double)gv, ref, tol);
                CHECKF(fabs(cv - ref) <= tol, "CPU sum %s n=%lld: %.9g vs float64 %.9g (tolerance %.3g)",
                       gpudl_dtype_name(dts[d]), (long long)n, (double)cv, ref, tol);
            }
            CHECK_OK(gpudl_max(g, &dr, &da)); CHECK_OK(gpudl_max(c, &r1, &a));
            CHECK_OK(gpudl_tensor_item(g, &dr, 0, &gv)); CHECK_OK(gpudl_tensor_item(c, &r1, 0, &cv));
            CHECKF(gv == cv, "GPU max %s n=%lld: %g vs %g", gpudl_dtype_name(dts[d]), (long long)n, (double)gv, (double)cv);
            gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &o); gpudl_tensor_free(c, &r1);
            gpudl_tensor_free(g, &da); gpudl_tensor_free(g, &db); gpudl_tensor_free(g, &dr);
        }
}

static void test_gpu_argmax(void) {
    static const int64_t shapes[][2] = {{1, 1}, {7, 33}, {33, 7}, {1000, 10}, {3, 1000}, {4097, 129}};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    NEED_GPU(g);
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gpudl_tensor x = host_rand(GPUDL_BF16, 2, shapes[s][0], shapes[s][1], 0), o = make(c, GPUDL_DEVICE_CPU, GPUDL_I32, 1, shapes[s][0], 0, 0);
        gpudl_tensor dx, dout, got;
        if (s == 2) { ((uint16_t *)x.data)[5] = 0x7fc0; ((uint16_t *)x.data)[3] = 0x7fc0; }   /* NaNs */
        if (s == 1) { ((uint16_t *)x.data)[10] = 0x4000; ((uint16_t *)x.data)[20] = 0x4000; } /* a tie */
        dx = to_dev(g, &x);
        GPUDL_CHECK(gpudl_tensor_create_on(g, &dout, GPUDL_DEVICE_CUDA, GPUDL_I32, 1, o.shape));
        CHECK_OK(gpudl_argmax_rows(g, &dout, &dx));
        CHECK_OK(gpudl_argmax_rows(c, &o, &x));
        got = to_host(g, &dout);
        CHECKF(memcmp(got.data, o.data, gpudl_tensor_bytes(&o)) == 0, "GPU argmax %lldx%lld differs from the CPU",
               (long long)shapes[s][0], (long long)shapes[s][1]);
        gpudl_tensor_free(c, &x); gpudl_tensor_free(c, &o); gpudl_tensor_free(c, &got);
        gpudl_tensor_free(g, &dx); gpudl_tensor_free(g, &dout);
    }
}

/* add, mul, scale, axpy, sum and max on views at odd element offsets (the
   helpers are tests/test_tensor.c's): each operand at its own offset, the
   aligned case as a control, sizes around the vector widths and tails;
   results against the CPU, the bytes around each output untouched. */
static void test_gpu_misaligned_views_arith(void) {
    static const int offsets[][3] = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {1, 2, 3}, {0, 3, 0}, {2, 0, 1}, {0, 0, 2}};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    size_t s, k;
    int d, op;
    NEED_GPU(g);
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof view_sizes / sizeof view_sizes[0]; s++)
            for (k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
                int64_t n = view_sizes[s], i;
                double tol = dts[d] == GPUDL_F32 ? 1e-6 : dts[d] == GPUDL_F16 ? 1e-3 : 8e-3, ref = 0, mag = 0, stol;
                gpudl_tensor a = host_rand(dts[d], 1, n, 0, 0), b = host_rand(dts[d], 1, n, 0, 0), o = make(c, GPUDL_DEVICE_CPU, dts[d], 1, n, 0, 0);
                gpudl_tensor r1 = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0), dr, got;
                dev_view va = view_make(g, dts[d], n, offsets[k][0], &a), vb = view_make(g, dts[d], n, offsets[k][1], &b);
                float gv, cv;
                GPUDL_CHECK(gpudl_tensor_create_on(g, &dr, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, r1.shape));
                for (op = 0; op < 4; op++) {
                    dev_view vo = view_make(g, dts[d], n, offsets[k][2], &b);
                    CHECK_OK(gpudl_tensor_copy(c, &o, &b));
                    if (op == 0) { CHECK_OK(gpudl_add(g, &vo.view, &va.view, &vb.view)); CHECK_OK(gpudl_add(c, &o, &a, &b)); }
                    if (op == 1) { CHECK_OK(gpudl_mul(g, &vo.view, &va.view, &vb.view)); CHECK_OK(gpudl_mul(c, &o, &a, &b)); }
                    if (op == 2) { CHECK_OK(gpudl_scale(g, &vo.view, 3.0f)); CHECK_OK(gpudl_scale(c, &o, 3.0f)); }
                    if (op == 3) { CHECK_OK(gpudl_axpy(g, &vo.view, -0.5f, &va.view)); CHECK_OK(gpudl_axpy(c, &o, -0.5f, &a)); }
                    got = to_host(g, &vo.view);
                    CHECKF(max_rel(&got, &o, 1.0) <= tol && view_guard_ok(g, &vo), "op %d %s n=%lld offsets %d %d %d", op,
                           gpudl_dtype_name(dts[d]), (long long)n, offsets[k][0], offsets[k][1], offsets[k][2]);
                    gpudl_tensor_free(c, &got); view_free(g, &vo);
                }
                CHECK_OK(gpudl_sum(g, &dr, &va.view));
                CHECK_OK(gpudl_tensor_item(g, &dr, 0, &gv));
                for (i = 0; i < n; i++) { ref += ld(&a, i); mag += fabs(ld(&a, i)); }
                stol = (2 * log2((double)n + 1) + 8) * ldexp(1.0, -24) * mag;   /* as in gpu_elementwise_reductions */
                CHECKF(fabs(gv - ref) <= stol, "sum %s n=%lld offset %d: %.9g vs %.9g", gpudl_dtype_name(dts[d]), (long long)n,
                       offsets[k][0], (double)gv, ref);
                CHECK_OK(gpudl_max(g, &dr, &va.view)); CHECK_OK(gpudl_max(c, &r1, &a));
                CHECK_OK(gpudl_tensor_item(g, &dr, 0, &gv)); CHECK_OK(gpudl_tensor_item(c, &r1, 0, &cv));
                CHECKF(gv == cv, "max %s n=%lld offset %d: %g vs %g", gpudl_dtype_name(dts[d]), (long long)n, offsets[k][0],
                       (double)gv, (double)cv);
                gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &o); gpudl_tensor_free(c, &r1);
                gpudl_tensor_free(g, &dr); view_free(g, &va); view_free(g, &vb);
            }
}

/* gpudl_k_reduce_once, the one-launch sum/max (the last block to finish
   adds the partials in block order), called directly: against float64 and
   the CPU's max, the same bits on a second run and under any block order,
   its counter back at 0 after each call. gpudl.h does not call it yet. */
#ifndef GPUDL_NO_CUDA
int gpudl_k_reduce_once(void *stream, int op, float *out, const void *x, int dtype, int64_t n, float *scratch, unsigned *done);
#endif
static void test_gpu_reduce_once(void) {
#ifndef GPUDL_NO_CUDA
    static const int64_t ns[] = {1, 7, 1023, 4097, 100003, 1000003};
    gpudl_dtype dts[3] = {GPUDL_F32, GPUDL_F16, GPUDL_BF16};
    gpudl_ctx *c = cpu_ctx();
    size_t s;
    int d, op, rep;
    NEED_GPU(g);
    for (d = 0; d < 3; d++)
        for (s = 0; s < sizeof ns / sizeof ns[0]; s++) {
            int64_t n = ns[s], i, one = 1, scratch_len[1];
            gpudl_tensor a = host_rand(dts[d], 1, n, 0, 0), da = to_dev(g, &a), out, done, scratch, r1 = make(c, GPUDL_DEVICE_CPU, GPUDL_F32, 1, 1, 0, 0);
            double ref = 0, mag = 0, tol;
            float got[2], cv;
            int32_t z;
            scratch_len[0] = gpudl_k_reduce_scratch();
            GPUDL_CHECK(gpudl_tensor_create_on(g, &out, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, &one));
            GPUDL_CHECK(gpudl_tensor_create_on(g, &done, GPUDL_DEVICE_CUDA, GPUDL_I32, 1, &one));
            GPUDL_CHECK(gpudl_tensor_create_on(g, &scratch, GPUDL_DEVICE_CUDA, GPUDL_F32, 1, scratch_len));
            CHECK_OK(gpudl_tensor_fill(g, &done, 0.0f));
            for (i = 0; i < n; i++) { ref += ld(&a, i); mag += fabs(ld(&a, i)); }
            tol = (2 * log2((double)n + 1) + (double)n / 65536.0 + 8) * ldexp(1.0, -24) * mag;
            CHECK_OK(gpudl_max(c, &r1, &a));
            CHECK_OK(gpudl_tensor_item(c, &r1, 0, &cv));
            for (op = 0; op < 2; op++) {
                for (rep = 0; rep < 2; rep++) {
                    CHECK(gpudl_k_reduce_once(g->stream, op ? GPUDL_K_MAX : GPUDL_K_SUM, (float *)out.data, da.data, (int)dts[d], n,
                                              (float *)scratch.data, (unsigned *)done.data) == 0);
                    CHECK_OK(gpudl_tensor_item(g, &out, 0, &got[rep]));
                    CHECK_OK(gpudl_tensor_download(g, &done, &z, sizeof z));
                    CHECKF(z == 0, "counter left at %d", (int)z);
                }
                CHECKF(!memcmp(&got[0], &got[1], sizeof got[0]), "%s n=%lld op %d: %.9g then %.9g", gpudl_dtype_name(dts[d]),
                       (long long)n, op, (double)got[0], (double)got[1]);
                if (op) CHECKF(got[0] == cv, "max %s n=%lld: %g vs CPU %g", gpudl_dtype_name(dts[d]), (long long)n, (double)got[0], (double)cv);
                else CHECKF(fabs(got[0] - ref) <= tol, "sum %s n=%lld: %.9g vs float64 %.9g", gpudl_dtype_name(dts[d]), (long long)n,
                            (double)got[0], ref);
            }
            gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &r1);
            gpudl_tensor_free(g, &da); gpudl_tensor_free(g, &out); gpudl_tensor_free(g, &done); gpudl_tensor_free(g, &scratch);
        }
#else
    SKIP("CPU-only build (GPUDL_NO_CUDA)");
#endif
}
