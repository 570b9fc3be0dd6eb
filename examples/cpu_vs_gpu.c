/* cpu_vs_gpu.c - why deep learning runs on GPUs, measured on your machine.

   Two matrix products, the heart of every forward and backward pass:
     - a batch: t @ t with t of shape 500x500x500 (500 products of 500x500)
     - one big product: 10000x10000 @ 10000x10000
   timed on the CPU and on the GPU, in FP32, TF32 (tensor cores, FP32 range,
   10-bit mantissa) and FP16 (tensor cores, FP32 accumulation).

   Timed properly: a cold first call is shown apart, then warm-up calls, then
   CUDA events around repeated calls, median of several samples.

   GPU:  nvcc -O2 -o cpu_vs_gpu cpu_vs_gpu.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   CPU:  cc -O2 -fopenmp -DGPUDL_NO_CUDA -o cpu_vs_gpu cpu_vs_gpu.c -lm
   Run:  ./cpu_vs_gpu [--small] [--cpu-only]
         --small uses 100x200x200 and 2000x2000 (a quick look). */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"

typedef struct {
    const char *name;
    int64_t L, n;   /* L products of n x n (L = 1: a single 2-D product) */
} problem;

typedef struct {
    gpudl_tensor a, b, c;
} operands;

static gpudl_status run_matmul(gpudl_ctx *ctx, void *user) {
    operands *o = (operands *)user;
    return gpudl_matmul(ctx, &o->c, &o->a, &o->b, 0, 0, 1.0f, 0.0f);
}

static gpudl_status make_operands(gpudl_ctx *ctx, const problem *p, gpudl_dtype dt, operands *o) {
    int64_t shape[3];
    int nd = p->L > 1 ? 3 : 2, i = 0;
    if (p->L > 1) shape[i++] = p->L;
    shape[i++] = p->n;
    shape[i++] = p->n;
    memset(o, 0, sizeof *o);
    GPUDL_CHECK(gpudl_tensor_create(ctx, &o->a, dt, nd, shape));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &o->b, dt, nd, shape));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &o->c, dt, nd, shape));
    GPUDL_CHECK(gpudl_tensor_uniform(ctx, &o->a, -1.0f, 1.0f));
    GPUDL_CHECK(gpudl_tensor_uniform(ctx, &o->b, -1.0f, 1.0f));
    return GPUDL_OK;
}

static void free_operands(gpudl_ctx *ctx, operands *o) {
    gpudl_tensor_free(ctx, &o->a);
    gpudl_tensor_free(ctx, &o->b);
    gpudl_tensor_free(ctx, &o->c);
}

typedef struct {
    const char *problem, *precision, *device;
    double cold_ms, ms, gflops;
} row;

static row rows[32];
static int nrows;

/* Times one (problem, precision) on ctx: a cold first call, then gpudl_bench. */
static void measure(gpudl_ctx *ctx, const problem *p, const char *prec, gpudl_dtype dt, gpudl_math_mode mode,
                    int reps) {
    operands o;
    gpudl_bench_desc bd;
    gpudl_bench_result br;
    double flops = 2.0 * (double)p->L * p->n * p->n * p->n, t0;
    row *r = &rows[nrows++];
    GPUDL_CHECK(gpudl_ctx_set_math_mode(ctx, mode));
    make_operands(ctx, p, dt, &o);
    GPUDL_CHECK(gpudl_ctx_sync(ctx));
    t0 = gpudl_now();                       /* the cold call, host clock */
    GPUDL_CHECK(run_matmul(ctx, &o));
    GPUDL_CHECK(gpudl_ctx_sync(ctx));
    r->cold_ms = 1e3 * (gpudl_now() - t0);
    memset(&bd, 0, sizeof bd);
    bd.warmup = 2;
    bd.reps = reps;
    bd.min_sample_ms = 1e-3;               /* big problems: one call per sample */
    bd.flops = flops;
    GPUDL_CHECK(gpudl_bench(ctx, run_matmul, &o, &bd, &br));
    r->problem = p->name;
    r->precision = prec;
    r->device = gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? "GPU" : "CPU";
    r->ms = br.median_ms;
    r->gflops = br.gflops;
    printf("  %-22s %-5s %-4s  median %10.3f ms  %9.1f GFLOP/s\n", r->problem, r->precision, r->device, r->ms, r->gflops);
    fflush(stdout);
    free_operands(ctx, &o);
}

/* Keeps the reason a context could not be created. */
static char g_why[1024];
static void keep_error(void *user, gpudl_log_level level, const char *msg) {
    const char *text = strstr(msg, ": ");   /* drop the "file:line: " prefix */
    (void)user;
    if (level == GPUDL_LOG_ERROR) snprintf(g_why, sizeof g_why, "%s", text ? text + 2 : msg);
}

static double cpu_ms(const char *problem) {
    int i;
    for (i = 0; i < nrows; i++)
        if (!strcmp(rows[i].problem, problem) && !strcmp(rows[i].device, "CPU") && !strcmp(rows[i].precision, "FP32"))
            return rows[i].ms;
    return 0;
}

int main(int argc, char **argv) {
    int small = 0, cpu_only = 0, i;
    problem probs[2];
    gpudl_ctx *cpu, *gpu = NULL;
    gpudl_ctx_desc d;
    gpudl_device_info info;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) small = 1;
        else if (!strcmp(argv[i], "--cpu-only")) cpu_only = 1;
        else { fprintf(stderr, "usage: %s [--small] [--cpu-only]\n", argv[0]); return 2; }
    }
    probs[0].name = small ? "batch 100 x 200x200" : "batch 500 x 500x500";
    probs[0].L = small ? 100 : 500;
    probs[0].n = small ? 200 : 500;
    probs[1].name = small ? "2000x2000 @ 2000x2000" : "10000x10000 @ 10000^2";
    probs[1].L = 1;
    probs[1].n = small ? 2000 : 10000;

    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.bind_threads = 1;   /* this program owns its process: OpenMP's threads one per core (a library call would not) */
    GPUDL_CHECK(gpudl_ctx_create(&d, &cpu));
    GPUDL_CHECK(gpudl_device_info_get(cpu, &info));
    printf("CPU: %s, %d thread(s)\n", info.name, info.sm_count);
    if (!cpu_only) {
        d.device = GPUDL_DEVICE_CUDA;
        d.log = keep_error;
        if (gpudl_ctx_create(&d, &gpu) != GPUDL_OK) gpu = NULL;
    }
    if (gpu) {
        GPUDL_CHECK(gpudl_device_info_get(gpu, &info));
        printf("GPU: %s, %d SMs, compute capability %d.%d, %.1f GiB, %d MHz\n", info.name, info.sm_count,
               info.cc_major, info.cc_minor, info.mem_total / 1073741824.0, info.clock_mhz);
        printf("     derived peaks: FP32 %.1f TFLOP/s, TF32 %.0f, FP16 %.0f (dense tensor cores), memory %.0f GB/s\n",
               info.peak_fp32_tflops, info.peak_tf32_tflops, info.peak_fp16_tflops, info.peak_mem_gbs);
    }
    printf("\nEach product costs 2*L*n^3 floating-point operations; GFLOP/s = that / median time.\n\n");

    printf("CPU (gpudl's blocked SGEMM%s):\n",
#ifdef _OPENMP
           ", OpenMP"
#else
           ", one thread: build with -fopenmp for more"
#endif
    );
    for (i = 0; i < 2; i++) measure(cpu, &probs[i], "FP32", GPUDL_F32, GPUDL_MATH_FP32, i == 1 && !small ? 1 : 3);
    /* CPUs have no FP16 matrix units: gpudl converts through FP32, so FP16
       is no faster there. One row shows it. */
    measure(cpu, &probs[0], "FP16", GPUDL_F16, GPUDL_MATH_FP32, 3);

    if (gpu) {
        static const char *prec[3] = {"FP32", "TF32", "FP16"};
        printf("\nGPU (cuBLAS):\n");
        for (i = 0; i < 2; i++) {
            measure(gpu, &probs[i], prec[0], GPUDL_F32, GPUDL_MATH_FP32, 10);
            measure(gpu, &probs[i], prec[1], GPUDL_F32, GPUDL_MATH_TF32, 10);
            measure(gpu, &probs[i], prec[2], GPUDL_F16, GPUDL_MATH_FP32, 10);
        }
    } else {
        printf("\nGPU half SKIPPED: %s\n", cpu_only ? "--cpu-only" : g_why);
    }

    printf("\n%-22s %-5s %-4s %12s %12s %11s %10s\n", "problem", "prec", "dev", "cold 1st ms", "median ms", "GFLOP/s", "vs CPU");
    for (i = 0; i < nrows; i++) {
        double base = cpu_ms(rows[i].problem);
        printf("%-22s %-5s %-4s %12.3f %12.3f %11.1f %9.1fx\n", rows[i].problem, rows[i].precision, rows[i].device,
               rows[i].cold_ms, rows[i].ms, rows[i].gflops, base > 0 ? base / rows[i].ms : 0.0);
    }
    printf("\nWhy the first GPU call looks slow: it pays one-time costs - loading the kernel\n"
           "modules onto the GPU, cuBLAS choosing and loading a kernel for this shape and\n"
           "precision, and raising the GPU's clocks from idle. Warm-up calls pay them before\n"
           "timing starts, and CUDA events time the GPU itself, not the host's queueing.\n"
           "(GPU calls return before the work is done: timing them with a host clock and\n"
           "no synchronisation measures only the launch.)\n");
    if (gpu) gpudl_ctx_destroy(gpu);
    gpudl_ctx_destroy(cpu);
    return 0;
}
