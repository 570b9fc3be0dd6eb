/* gpudl tests: timing. Timers, gpudl_bench and the device report, on the
   CPU and, in the nvcc build, on the GPU.
   Part of the core suite: tests/suite_core.c #includes it (see there). */

/* >>timing ---------------------------------------------------------------- */

typedef struct { gpudl_tensor a, b, c; } mm_args;
static gpudl_status run_mm(gpudl_ctx *ctx, void *user) {
    mm_args *m = (mm_args *)user;
    return gpudl_matmul(ctx, &m->c, &m->a, &m->b, 0, 0, 1.0f, 0.0f);
}

static void test_timer_and_bench(void) {
    gpudl_ctx *ctx = cpu_ctx();
    gpudl_timer tm;
    gpudl_bench_desc bd;
    gpudl_bench_result br;
    gpudl_device_info info;
    mm_args m;
    double ms = -1, t0 = gpudl_now();
    CHECK_OK(gpudl_timer_create(ctx, &tm));
    CHECK_OK(gpudl_timer_start(&tm));
    while (gpudl_now() - t0 < 0.002) {}
    CHECK_OK(gpudl_timer_stop(&tm));
    CHECK_OK(gpudl_timer_elapsed_ms(&tm, &ms));
    CHECKF(ms >= 1.9 && ms < 1000, "timer says %g ms for a 2 ms spin", ms);
    gpudl_timer_destroy(&tm);
    m.a = host_rand(GPUDL_F32, 2, 64, 64, 0); m.b = host_rand(GPUDL_F32, 2, 64, 64, 0); m.c = host_rand(GPUDL_F32, 2, 64, 64, 0);
    memset(&bd, 0, sizeof bd);
    bd.reps = 5;
    bd.flops = 2.0 * 64 * 64 * 64;
    CHECK_OK(gpudl_bench(ctx, run_mm, &m, &bd, &br));
    CHECK(br.reps == 5 && br.calls_per_sample >= 1);
    CHECK(br.min_ms > 0 && br.min_ms <= br.median_ms && br.median_ms <= br.max_ms);
    CHECK(fabs(br.gflops - bd.flops / (br.median_ms * 1e6)) < 1e-9 * br.gflops);
    CHECK(br.gbs == 0);
    CHECK_ST(gpudl_bench(ctx, NULL, &m, &bd, &br), GPUDL_ERR_INVALID_ARG);
    gpudl_tensor_free(ctx, &m.a); gpudl_tensor_free(ctx, &m.b); gpudl_tensor_free(ctx, &m.c);
    CHECK_OK(gpudl_device_info_get(ctx, &info));
    CHECK(info.device == GPUDL_DEVICE_CPU && info.name[0] && info.sm_count >= 1);
}

static void test_gpu_device_info(void) {
    gpudl_device_info info;
    NEED_GPU(g);
    CHECK_OK(gpudl_device_info_get(g, &info));
    CHECK(info.device == GPUDL_DEVICE_CUDA && info.name[0] && info.sm_count > 0 && info.cc_major >= 7);
    CHECK(info.mem_total > 0 && info.clock_mhz > 0 && info.peak_fp32_tflops > 0 && info.peak_mem_gbs > 0);
    printf("    %s, %d SMs, sm_%d%d, %.1f GiB, %d MHz, peak %.1f FP32 / %.0f FP16 TFLOP/s, %.0f GB/s, kernels for %s\n",
           info.name, info.sm_count, info.cc_major, info.cc_minor, info.mem_total / 1073741824.0, info.clock_mhz,
           info.peak_fp32_tflops, info.peak_fp16_tflops, info.peak_mem_gbs, info.archs);
}

static void test_gpu_timer(void) {
    gpudl_timer tm;
    double ms = -1;
    mm_args m;
    gpudl_ctx *c = cpu_ctx();
    gpudl_tensor a = host_rand(GPUDL_F32, 2, 1024, 1024, 0);
    NEED_GPU(g);
    m.a = to_dev(g, &a); m.b = to_dev(g, &a); m.c = to_dev(g, &a);
    CHECK_OK(gpudl_timer_create(g, &tm));
    CHECK(tm.ev[0] != NULL);
    CHECK_OK(gpudl_timer_start(&tm));
    CHECK_OK(run_mm(g, &m));
    CHECK_OK(gpudl_timer_stop(&tm));
    CHECK_OK(gpudl_timer_elapsed_ms(&tm, &ms));
    CHECKF(ms > 0 && ms < 1000, "event timer says %g ms", ms);
    gpudl_timer_destroy(&tm);
    gpudl_tensor_free(c, &a); gpudl_tensor_free(g, &m.a); gpudl_tensor_free(g, &m.b); gpudl_tensor_free(g, &m.c);
}
