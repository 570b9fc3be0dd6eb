/* bench_matmul.c - matmul throughput: gpudl against raw cuBLAS on the GPU,
   and gpudl's SGEMM against OpenBLAS on the CPU, at the same thread count.
   A benchmark, not a test: it prints a table and writes bench/matmul.csv.

   GPU:  nvcc -O2 -arch=sm_90 -o bench_matmul bench/bench_matmul.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
         (add -DGPUDL_BENCH_OPENBLAS -lopenblas for the OpenBLAS rows)
   CPU:  cc -O2 -fopenmp -DGPUDL_NO_CUDA -o bench_matmul bench/bench_matmul.c -lm [-DGPUDL_BENCH_OPENBLAS -lopenblas]
   Run:  ./bench_matmul [--quick] [--cpu-only] [--gpu-only] [--csv PATH]

   Square sizes n: C (n,n) = A (n,n) @ B (n,n), 2 n^3 flops, and at least
   3 n^2 elements of traffic. Inputs are uniform random (never zeros: zeros
   run faster on tensor cores than real data). Each sample repeats the call
   until it lasts >= 1 ms (the per-call time of small sizes is then the
   launch-bound rate); the median of the samples is reported. */
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"

#ifdef GPUDL_BENCH_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int);
#endif

typedef struct { gpudl_tensor a, b, c; } operands;

static FILE *g_csv;

static gpudl_status call_gpudl(gpudl_ctx *ctx, void *user) {
    operands *o = (operands *)user;
    return gpudl_matmul(ctx, &o->c, &o->a, &o->b, 0, 0, 1.0f, 0.0f);
}

#ifdef GPUDL_BENCH_OPENBLAS
static gpudl_status call_openblas(gpudl_ctx *ctx, void *user) {
    operands *o = (operands *)user;
    int n = (int)o->a.shape[0];
    (void)ctx;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, (const float *)o->a.data, n,
                (const float *)o->b.data, n, 0.0f, (float *)o->c.data, n);
    return GPUDL_OK;
}
#endif

#ifndef GPUDL_NO_CUDA
/* Raw cuBLAS, as a user would call it: the same handle setup gpudl uses (own
   handle, the context's stream, a 32 MiB workspace), no validation layer. */
typedef struct { operands o; cublasHandle_t h; cudaDataType_t type; cublasComputeType_t compute; } raw_args;

static gpudl_status call_cublas(gpudl_ctx *ctx, void *user) {
    raw_args *r = (raw_args *)user;
    int n = (int)r->o.a.shape[0];
    float one = 1.0f, zero = 0.0f;
    (void)ctx;
    return cublasGemmEx(r->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, r->o.b.data, r->type, n, r->o.a.data, r->type, n,
                        &zero, r->o.c.data, r->type, n, r->compute, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS
           ? GPUDL_OK : GPUDL_ERR_CUBLAS;
}
#endif

/* OpenBLAS's threads and OpenMP's both spin for a while after a call; on a
   machine with few cores the spinning side steals the other's cores. Let
   them fall asleep before switching implementations. */
static void settle(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = 300 * 1000 * 1000;
    nanosleep(&ts, NULL);
#endif
}

static void make_operands(gpudl_ctx *ctx, gpudl_dtype dt, int64_t n, operands *o) {
    int64_t s[2];
    s[0] = n; s[1] = n;
    GPUDL_CHECK(gpudl_tensor_create(ctx, &o->a, dt, 2, s));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &o->b, dt, 2, s));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &o->c, dt, 2, s));
    GPUDL_CHECK(gpudl_tensor_uniform(ctx, &o->a, -1.0f, 1.0f));
    GPUDL_CHECK(gpudl_tensor_uniform(ctx, &o->b, -1.0f, 1.0f));
}

static void free_operands(gpudl_ctx *ctx, operands *o) {
    gpudl_tensor_free(ctx, &o->a); gpudl_tensor_free(ctx, &o->b); gpudl_tensor_free(ctx, &o->c);
}

static gpudl_bench_result bench(gpudl_ctx *ctx, gpudl_bench_fn fn, void *user, int64_t n, size_t esize, int reps) {
    gpudl_bench_desc d;
    gpudl_bench_result r;
    memset(&d, 0, sizeof d);
    d.warmup = 3;
    d.reps = reps;
    d.flops = 2.0 * (double)n * n * n;
    d.bytes = 3.0 * (double)n * n * esize;
    GPUDL_CHECK(gpudl_bench(ctx, fn, user, &d, &r));
    return r;
}

static void csv_row(const char *dev, const char *impl, const char *prec, int64_t n, int threads, const gpudl_bench_result *r) {
    if (g_csv)
        fprintf(g_csv, "%s,%s,%s,%lld,%d,%.6f,%.6f,%.6f,%.3f\n", dev, impl, prec, (long long)n, threads,
                r->median_ms, r->min_ms, r->max_ms, r->gflops);
}

static void cpu_bench(int quick) {
    static const int64_t sizes[] = {256, 512, 1024, 2048};
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_device_info info;
    int threads, i, count = quick ? 3 : 4;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.bind_threads = 1;   /* a benchmark owns its process: OpenMP's threads one per core */
    GPUDL_CHECK(gpudl_ctx_create(&d, &ctx));
    GPUDL_CHECK(gpudl_device_info_get(ctx, &info));
    threads = info.sm_count;
#ifdef GPUDL_BENCH_OPENBLAS
    openblas_set_num_threads(threads);
#endif
    printf("CPU: %s, %d thread(s) for both gpudl and OpenBLAS\n", info.name, threads);
    printf("%6s %14s %14s %10s\n", "n", "gpudl GFLOP/s", "OpenBLAS", "gpudl/OB");
    for (i = 0; i < count; i++) {
        operands o;
        gpudl_bench_result g, b;
        make_operands(ctx, GPUDL_F32, sizes[i], &o);
        settle();
        g = bench(ctx, call_gpudl, &o, sizes[i], 4, 10);
        csv_row("cpu", "gpudl", "fp32", sizes[i], threads, &g);
#ifdef GPUDL_BENCH_OPENBLAS
        settle();
        b = bench(ctx, call_openblas, &o, sizes[i], 4, 10);
        csv_row("cpu", "openblas", "fp32", sizes[i], threads, &b);
        printf("%6lld %14.1f %14.1f %9.0f%%\n", (long long)sizes[i], g.gflops, b.gflops, 100.0 * g.gflops / b.gflops);
#else
        (void)b;
        printf("%6lld %14.1f %14s %10s\n", (long long)sizes[i], g.gflops, "(no OpenBLAS)", "");
#endif
        fflush(stdout);
        free_operands(ctx, &o);
    }
    gpudl_ctx_destroy(ctx);
}

static void gpu_bench(int quick) {
#ifndef GPUDL_NO_CUDA
    static const int64_t sizes[] = {64, 256, 512, 1024, 2048, 4096, 8192};
    static const struct { const char *name; gpudl_dtype dt; gpudl_math_mode mode; cudaDataType_t type; cublasComputeType_t ct; } precs[] = {
        {"fp32", GPUDL_F32, GPUDL_MATH_FP32, CUDA_R_32F, CUBLAS_COMPUTE_32F},
        {"tf32", GPUDL_F32, GPUDL_MATH_TF32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
        {"fp16", GPUDL_F16, GPUDL_MATH_FP32, CUDA_R_16F, CUBLAS_COMPUTE_32F},
        {"bf16", GPUDL_BF16, GPUDL_MATH_FP32, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
    };
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_device_info info;
    raw_args raw;
    void *ws;
    int p, i, count = quick ? 5 : 7;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CUDA;
    d.log = gpudl_log_stderr;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) { printf("GPU benchmarks SKIPPED: no usable CUDA device\n"); return; }
    GPUDL_CHECK(gpudl_device_info_get(ctx, &info));
    printf("GPU: %s, %d SMs, sm_%d%d, %d MHz; derived peaks FP32 %.0f / TF32 %.0f / FP16 %.0f TFLOP/s\n", info.name,
           info.sm_count, info.cc_major, info.cc_minor, info.clock_mhz, info.peak_fp32_tflops, info.peak_tf32_tflops,
           info.peak_fp16_tflops);
    if (cublasCreate(&raw.h) != CUBLAS_STATUS_SUCCESS || cudaMalloc(&ws, (size_t)32 << 20) != cudaSuccess) {
        printf("raw cuBLAS setup failed\n");
        return;
    }
    cublasSetStream(raw.h, (cudaStream_t)gpudl_ctx_stream(ctx));
    cublasSetWorkspace(raw.h, ws, (size_t)32 << 20);
    printf("%5s %6s %12s %12s %12s %12s %9s\n", "prec", "n", "gpudl ms", "cuBLAS ms", "gpudl TF/s", "cuBLAS TF/s", "gpudl/cB");
    for (p = 0; p < 4; p++) {
        raw.type = precs[p].type;
        raw.compute = precs[p].ct;
        GPUDL_CHECK(gpudl_ctx_set_math_mode(ctx, precs[p].mode));
        for (i = 0; i < count; i++) {
            gpudl_bench_result g, c;
            size_t es = gpudl_dtype_size(precs[p].dt);
            make_operands(ctx, precs[p].dt, sizes[i], &raw.o);
            /* interleave: gpudl, cuBLAS, gpudl, cuBLAS; keep each side's best median */
            g = bench(ctx, call_gpudl, &raw.o, sizes[i], es, 20);
            c = bench(ctx, call_cublas, &raw, sizes[i], es, 20);
            {
                gpudl_bench_result g2 = bench(ctx, call_gpudl, &raw.o, sizes[i], es, 20);
                gpudl_bench_result c2 = bench(ctx, call_cublas, &raw, sizes[i], es, 20);
                if (g2.median_ms < g.median_ms) g = g2;
                if (c2.median_ms < c.median_ms) c = c2;
            }
            csv_row("gpu", "gpudl", precs[p].name, sizes[i], 0, &g);
            csv_row("gpu", "cublas", precs[p].name, sizes[i], 0, &c);
            printf("%5s %6lld %12.4f %12.4f %12.1f %12.1f %8.1f%%\n", precs[p].name, (long long)sizes[i], g.median_ms,
                   c.median_ms, g.gflops * 1e-3, c.gflops * 1e-3, 100.0 * g.gflops / c.gflops);
            fflush(stdout);
            free_operands(ctx, &raw.o);
        }
    }
    cublasDestroy(raw.h);
    cudaFree(ws);
    gpudl_ctx_destroy(ctx);
#else
    (void)quick;
    printf("GPU benchmarks SKIPPED: CPU-only build (GPUDL_NO_CUDA)\n");
#endif
}

int main(int argc, char **argv) {
    int quick = 0, cpu = 1, gpu = 1, i;
    const char *csv = "bench/matmul.csv";
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--cpu-only")) gpu = 0;
        else if (!strcmp(argv[i], "--gpu-only")) cpu = 0;
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else { fprintf(stderr, "usage: %s [--quick] [--cpu-only] [--gpu-only] [--csv PATH]\n", argv[0]); return 2; }
    }
    g_csv = fopen(csv, "w");
    if (!g_csv) fprintf(stderr, "cannot write %s; table only\n", csv);
    else fprintf(g_csv, "device,impl,precision,n,threads,median_ms,min_ms,max_ms,gflops\n");
    if (gpu) gpu_bench(quick);
    if (cpu) cpu_bench(quick);
    if (g_csv) { fclose(g_csv); printf("wrote %s\n", csv); }
    return 0;
}
