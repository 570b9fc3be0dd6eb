/* bench_train.c - training step time: one zero_grad + forward + loss +
   backward + optimizer step, on data already in device memory.
   A benchmark, not a test: prints a table and writes bench/train.csv.
   bench/torch_train.py runs the same models at the same batch sizes.

   GPU:  nvcc -O2 -arch=sm_90 -o bench_train bench/bench_train.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   CPU:  cc -O2 -fopenmp -DGPUDL_NO_CUDA -o bench_train bench/bench_train.c -lm
   Run:  ./bench_train [--cpu] [--quick] [--amp] [--profile] [--csv PATH]
         (--profile: after each timing, 20 more steps with gpudl_model_profile
         on, and where their time went, per layer)

   Precisions: FP32 (TF32 off) everywhere; FP16 (dynamic loss scaling) and
   BF16 mixed precision on the GPU, and on the CPU with --amp (there they
   store 16 bits and compute in FP32: GEMMs widen their 16-bit operands as
   they pack them; 1.06-1.15x FP32's time, bench/RESULTS.md, issue 38).
   The memory column is gpudl_model_memory's activation bytes.

   Models (SGD with momentum):
     mlp      784 -> 1024 -> ReLU -> 1024 -> ReLU -> 10, batch 128 and 1024
              2 x 1.86 M MACs per image forward, x3 with backward
     lenet    LeNet-5: conv 5x5 6 ch pad 2, ReLU, max-pool 2, conv 5x5 16 ch,
              ReLU, max-pool 2, 400 -> 120 -> ReLU -> 84 -> ReLU -> 10, batch 128 */
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"

typedef struct {
    gpudl_model *m;
    gpudl_tensor x, y;
} step_args;

static int no_graph = 0;   /* --no-graph: the step as five calls, never captured */

/* One training step: gpudl_model_train_step as shipped (on the GPU, a CUDA
   graph replayed once the shapes repeat), or, with --no-graph, the five
   calls it makes. */
static gpudl_status train_step(gpudl_ctx *ctx, void *user) {
    step_args *a = (step_args *)user;
    gpudl_status s;
    (void)ctx;
    if (!no_graph) return gpudl_model_train_step(a->m, &a->x, &a->y);
    s = gpudl_model_zero_grad(a->m);
    if (s == GPUDL_OK) s = gpudl_model_forward(a->m, &a->x, NULL);
    if (s == GPUDL_OK) s = gpudl_model_loss(a->m, &a->y);
    if (s == GPUDL_OK) s = gpudl_model_backward(a->m);
    if (s == GPUDL_OK) s = gpudl_model_step(a->m);
    return s;
}

static gpudl_model *make_model(gpudl_ctx *ctx, const char *name, int64_t batch, gpudl_precision prec, double *flops) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    if (!strcmp(name, "mlp")) {
        int64_t s[1] = {784};
        GPUDL_CHECK(gpudl_model_create(ctx, &m, 1, s));
        GPUDL_CHECK(gpudl_model_add_linear(m, 784, 1024));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 1024, 1024));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 1024, 10));
        *flops = 6.0 * batch * (784.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10);   /* 2 fwd + 4 bwd per MAC */
    } else {
        int64_t s[3] = {1, 28, 28};
        gpudl_conv2d_desc p2;
        memset(&p2, 0, sizeof p2);
        p2.pad_h = p2.pad_w = 2;
        GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, s));
        GPUDL_CHECK(gpudl_model_add_conv2d(m, 1, 6, 5, &p2));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
        GPUDL_CHECK(gpudl_model_add_conv2d(m, 6, 16, 5, NULL));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
        GPUDL_CHECK(gpudl_model_add_flatten(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 400, 120));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 120, 84));
        GPUDL_CHECK(gpudl_model_add_relu(m));
        GPUDL_CHECK(gpudl_model_add_linear(m, 84, 10));
        *flops = 6.0 * batch * (28.0 * 28 * 6 * 25 + 10.0 * 10 * 16 * 150 + 400.0 * 120 + 120.0 * 84 + 84.0 * 10);
    }
    memset(&md, 0, sizeof md);
    md.max_batch = batch;
    md.seed = 1;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_SGD;
    od.lr = 0.01f;
    od.momentum = 0.9f;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_set_precision(m, prec, NULL));
    return m;
}

int main(int argc, char **argv) {
    static const struct { const char *model; int64_t batch; } runs[] = {{"mlp", 128}, {"mlp", 1024}, {"lenet", 128}};
    static const struct { const char *name; gpudl_precision p; } precs[] = {
        {"fp32", GPUDL_PRECISION_FP32}, {"fp16", GPUDL_PRECISION_FP16}, {"bf16", GPUDL_PRECISION_BF16}};
    gpudl_ctx *ctx;
    gpudl_ctx_desc cd;
    gpudl_device_info info;
    const char *csv = "bench/train.csv";
    FILE *f;
    int cpu = 0, quick = 0, amp = 0, profile = 0, i, np, lt;
    size_t r, q;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu")) cpu = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--amp")) amp = 1;
        else if (!strcmp(argv[i], "--profile")) profile = 1;
        else if (!strcmp(argv[i], "--no-graph")) no_graph = 1;
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--cpu] [--quick] [--amp] [--profile] [--no-graph] [--csv PATH]\n", argv[0]);
            return 2;
        }
    }
    memset(&cd, 0, sizeof cd);
    cd.bind_threads = 1;   /* this program owns its process: OpenMP's threads one per core (a library call would not) */
    cd.device = cpu ? GPUDL_DEVICE_CPU : GPUDL_DEVICE_AUTO;
    cd.math_mode = GPUDL_MATH_FP32;
    GPUDL_CHECK(gpudl_ctx_create(&cd, &ctx));
    GPUDL_CHECK(gpudl_device_info_get(ctx, &info));
    np = gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA || amp ? 3 : 1;
    printf("gpudl training step (FP32 with TF32 off%s) on %s %s\n", np > 1 ? ", FP16 and BF16 mixed" : "",
           gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? "GPU" : "CPU", info.name);
    if (gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU) printf("CPU threads: %d\n", info.sm_count);
    f = fopen(csv, "w");
    if (f) fprintf(f, "device,impl,precision,model,batch,threads,median_ms,min_ms,max_ms,gflops,images_per_s,activation_bytes\n");
    printf("%-6s %-5s %6s %11s %11s %10s %12s %10s\n", "model", "prec", "batch", "median ms", "min ms", "GFLOP/s", "images/s", "act MiB");
    for (r = 0; r < sizeof runs / sizeof runs[0]; r++)
    for (q = 0; q < (size_t)np; q++) {
        step_args a;
        double flops;
        int64_t xs[4] = {runs[r].batch, 1, 28, 28}, n = runs[r].batch, k;
        gpudl_bench_desc bd;
        gpudl_bench_result br;
        gpudl_memory_report mr;
        int32_t *labels;
        a.m = make_model(ctx, runs[r].model, runs[r].batch, precs[q].p, &flops);
        GPUDL_CHECK(gpudl_model_memory(a.m, 0, &mr));
        if (!strcmp(runs[r].model, "mlp")) { xs[1] = 784; GPUDL_CHECK(gpudl_tensor_create(ctx, &a.x, GPUDL_F32, 2, xs)); }
        else GPUDL_CHECK(gpudl_tensor_create(ctx, &a.x, GPUDL_F32, 4, xs));
        GPUDL_CHECK(gpudl_tensor_normal(ctx, &a.x, 0.0f, 1.0f));
        GPUDL_CHECK(gpudl_tensor_create(ctx, &a.y, GPUDL_I32, 1, &n));
        labels = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        for (k = 0; k < n; k++) labels[k] = (int32_t)(k % 10);
        GPUDL_CHECK(gpudl_tensor_upload(ctx, &a.y, labels, sizeof(int32_t) * (size_t)n));
        free(labels);
        memset(&bd, 0, sizeof bd);
        bd.warmup = 5;
        bd.reps = quick ? 5 : 20;
        bd.min_sample_ms = gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? 5.0 : 1.0;
        bd.flops = flops;
        /* On the GPU each configuration runs twice: as shipped (cuBLASLt's
           epilogues on, the default since issue 26), then on the plain path
           (cuBLAS GEMMs + gpudl's bias/activation kernels, gpudl_ctx_desc.cublaslt
           = -1): the pair of rows says what the epilogues are worth. */
        for (lt = 1; lt >= (gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? 0 : 1); lt--) {
            const char *impl = lt ? "gpudl" : "gpudl-plain";
#ifndef GPUDL_NO_CUDA
            ctx->use_lt = lt;
#endif
            GPUDL_CHECK(gpudl_bench(ctx, train_step, &a, &bd, &br));
            printf("%-6s %-5s %6lld %11.3f %11.3f %10.1f %12.0f %10.2f%s\n", runs[r].model, precs[q].name, (long long)n,
                   br.median_ms, br.min_ms, br.gflops, 1e3 * (double)n / br.median_ms, (double)mr.activations / 1048576.0,
                   lt ? "" : "  (plain path: no cuBLASLt epilogues)");
            fflush(stdout);
            if (f) fprintf(f, "%s,%s,%s,%s,%lld,%d,%.6f,%.6f,%.6f,%.3f,%.1f,%zu\n",
                           gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? "gpu" : "cpu", impl, precs[q].name, runs[r].model,
                           (long long)n, gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? 0 : info.sm_count, br.median_ms,
                           br.min_ms, br.max_ms, br.gflops, 1e3 * (double)n / br.median_ms, mr.activations);
        }
#ifndef GPUDL_NO_CUDA
        ctx->use_lt = 1;
#endif
        if (profile) {   /* where the step's time goes (timed apart: the profiler waits around each layer) */
            static char rep[8192];
            GPUDL_CHECK(gpudl_model_profile(a.m, 1));
            for (k = 0; k < 20; k++) GPUDL_CHECK(train_step(ctx, &a));
            printf("%s", gpudl_model_profile_report(a.m, rep, sizeof rep));
            GPUDL_CHECK(gpudl_model_profile(a.m, 0));
        }
        gpudl_tensor_free(ctx, &a.x);
        gpudl_tensor_free(ctx, &a.y);
        gpudl_model_destroy(a.m);
    }
    if (f) { fclose(f); printf("wrote %s\n", csv); }
    gpudl_ctx_destroy(ctx);
    return 0;
}
