/* mixed_precision.c - the same CNN trained in FP32, FP16 and BF16, side by
   side: test accuracy, step time, memory, and what the loss scaler did.

   GPU:  nvcc -O2 -o mixed_precision mixed_precision.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   CPU:  cc -O2 -fopenmp -DGPUDL_NO_CUDA -o mixed_precision mixed_precision.c -lm
   Run:  ./mixed_precision [--data DIR] [--epochs N] [--cpu]      (default: 1 epoch each)

   The recipe (see gpudl.h, >>amp): FP32 master weights and optimizer
   state; 16-bit copies of the weights, refreshed once per step; 16-bit
   activations and gradients; for FP16, whose range ends at 65504, a
   dynamic loss scale that keeps small gradients from vanishing and skips
   the steps where large ones overflow. BF16 has FP32's range and needs no
   scaling. The activations and the weight copy really are 16-bit tensors:
   the activation memory halves. On the GPU the GEMMs and convolutions run
   on tensor cores; on the CPU each 16-bit op computes in f32 and rounds
   once (16-bit GEMM operands widened as they are packed), so there
   FP16/BF16 cost a little more than FP32 (about 1.1x). */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"

static gpudl_model *make_cnn(gpudl_ctx *ctx, int64_t batch) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_conv2d_desc pad2;
    int64_t img[3] = {1, 28, 28};
    memset(&pad2, 0, sizeof pad2);
    pad2.pad_h = pad2.pad_w = 2;
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, img));
    GPUDL_CHECK(gpudl_model_add_conv2d(m, 1, 16, 5, &pad2));
    GPUDL_CHECK(gpudl_model_add_batchnorm2d(m, 16));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
    GPUDL_CHECK(gpudl_model_add_conv2d(m, 16, 32, 5, &pad2));
    GPUDL_CHECK(gpudl_model_add_batchnorm2d(m, 32));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 32 * 7 * 7, 128));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 128, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = batch;
    md.seed = 1;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    return m;
}

int main(int argc, char **argv) {
    static const struct { gpudl_precision p; const char *name; } precs[] = {
        {GPUDL_PRECISION_FP32, "FP32"}, {GPUDL_PRECISION_FP16, "FP16"}, {GPUDL_PRECISION_BF16, "BF16"}};
    const char *data = NULL;
    int epochs = 1, cpu = 0, i, k;
    int64_t batch = 128, one = 1, e, b;
    gpudl_ctx_desc cd;
    gpudl_ctx *ctx;
    gpudl_tensor xtr, ytr, xte, yte, x, y, count;
    gpudl_dataset train, test;
    double acc[3], ms[3];
    gpudl_memory_report mem[3];
    gpudl_scaler_state st[3];

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu")) cpu = 1;
        else { fprintf(stderr, "usage: %s [--data DIR] [--epochs N] [--cpu]\n", argv[0]); return 2; }
    }
    if (epochs < 1) { fprintf(stderr, "epochs must be >= 1\n"); return 2; }
    memset(&cd, 0, sizeof cd);
    cd.bind_threads = 1;   /* this program owns its process: OpenMP's threads one per core (a library call would not) */
    cd.device = cpu ? GPUDL_DEVICE_CPU : GPUDL_DEVICE_AUTO;
    cd.log = gpudl_log_stderr;
    GPUDL_CHECK(gpudl_ctx_create(&cd, &ctx));
    if (gpudl_fashion_mnist_load(ctx, data, &xtr, &ytr, &xte, &yte, &data) != GPUDL_OK) return 1;   /* it said why */
    printf("device: %s; data: %s; %d epoch(s) per precision\n", gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? "GPU" : "CPU",
           data, epochs);
    GPUDL_CHECK(gpudl_dataset_create(ctx, &train, &xtr, &ytr, batch, 0.2860f, 0.3530f));
    GPUDL_CHECK(gpudl_dataset_create(ctx, &test, &xte, &yte, batch, 0.2860f, 0.3530f));
    GPUDL_CHECK(gpudl_tensor_create(ctx, &count, GPUDL_F32, 1, &one));

    for (k = 0; k < 3; k++) {
        gpudl_model *m = make_cnn(ctx, batch);
        gpudl_optim_desc od;
        gpudl_progress pr;
        double t0;
        float correct = 0, loss = 0;
        int64_t steps = 0;
        memset(&od, 0, sizeof od);
        od.kind = GPUDL_OPTIM_ADAMW;
        od.lr = 3e-3f;
        od.weight_decay = 1e-4f;
        od.schedule = GPUDL_SCHED_COSINE;
        od.warmup_steps = 100;
        od.total_steps = epochs * gpudl_dataset_num_batches(&train);
        GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
        GPUDL_CHECK(gpudl_model_set_precision(m, precs[k].p, NULL));   /* the one line that changes */
        /* batches made in the activations' dtype: no cast kernel per step */
        GPUDL_CHECK(gpudl_dataset_set_dtype(ctx, &train, precs[k].p == GPUDL_PRECISION_FP16   ? GPUDL_F16
                                                         : precs[k].p == GPUDL_PRECISION_BF16 ? GPUDL_BF16
                                                                                              : GPUDL_F32));
        GPUDL_CHECK(gpudl_dataset_set_dtype(ctx, &test, train.xb.dtype));
        GPUDL_CHECK(gpudl_model_memory(m, 0, &mem[k]));
        GPUDL_CHECK(gpudl_ctx_sync(ctx));
        t0 = gpudl_now();
        for (e = 0; e < epochs; e++) {
            char label[48];
            snprintf(label, sizeof label, "%s epoch %lld/%d", precs[k].name, (long long)(e + 1), epochs);
            GPUDL_CHECK(gpudl_dataset_shuffle(ctx, &train, 1, (uint64_t)e));
            gpudl_progress_begin(&pr, label, gpudl_dataset_num_batches(&train), batch);
            for (b = 0; b < gpudl_dataset_num_batches(&train); b++, steps++) {
                GPUDL_CHECK(gpudl_dataset_batch(ctx, &train, b, &x, &y));
                GPUDL_CHECK(gpudl_model_zero_grad(m));
                GPUDL_CHECK(gpudl_model_forward(m, &x, NULL));
                GPUDL_CHECK(gpudl_model_loss(m, &y));
                GPUDL_CHECK(gpudl_model_backward(m));
                GPUDL_CHECK(gpudl_model_step(m));
                if (b % 50 == 0) {
                    GPUDL_CHECK(gpudl_model_loss_value(m, &loss));
                    gpudl_progress_update(&pr, b + 1, loss);
                }
            }
            GPUDL_CHECK(gpudl_model_loss_value(m, &loss));
            gpudl_progress_end(&pr, loss);
        }
        GPUDL_CHECK(gpudl_ctx_sync(ctx));
        ms[k] = 1e3 * (gpudl_now() - t0) / (double)steps;
        memset(&st[k], 0, sizeof st[k]);
        if (precs[k].p != GPUDL_PRECISION_FP32) GPUDL_CHECK(gpudl_model_scaler_state(m, &st[k]));
        GPUDL_CHECK(gpudl_tensor_fill(ctx, &count, 0.0f));
        gpudl_model_train(m, 0);
        for (b = 0; b < gpudl_dataset_num_batches(&test); b++) {
            GPUDL_CHECK(gpudl_dataset_batch(ctx, &test, b, &x, &y));
            GPUDL_CHECK(gpudl_model_forward(m, &x, NULL));
            GPUDL_CHECK(gpudl_model_count_correct(m, &y, &count));
        }
        GPUDL_CHECK(gpudl_tensor_item(ctx, &count, 0, &correct));
        acc[k] = 100.0 * correct / (double)test.n;
        gpudl_model_destroy(m);
    }

    printf("\n%-5s %10s %12s %12s %12s %14s %s\n", "", "accuracy", "ms / step", "weights MB", "activ. MB", "total MB", "loss scaler");
    for (k = 0; k < 3; k++) {
        char sc[64] = "-";
        if (precs[k].p == GPUDL_PRECISION_FP16)
            snprintf(sc, sizeof sc, "scale %g, %lld step(s) skipped", (double)st[k].scale, (long long)st[k].skipped_total);
        else if (precs[k].p == GPUDL_PRECISION_BF16)
            snprintf(sc, sizeof sc, "none (BF16 has FP32's range)");
        printf("%-5s %9.2f%% %12.2f %12.2f %12.2f %14.2f %s\n", precs[k].name, acc[k], ms[k],
               (mem[k].params + mem[k].copies16) / 1048576.0, mem[k].activations / 1048576.0, mem[k].total / 1048576.0, sc);
    }
    printf("\nMemory: FP16/BF16 store activations and their gradients in 16 bits (half the bytes) and\n"
           "add a 16-bit weight copy to the FP32 master weights (the weights column counts both).\n"
           "Time: %s\n", gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA
           ? "16-bit GEMMs and convolutions run on tensor cores with FP32 accumulation."
           : "the CPU stores 16 bits but computes in FP32 (one rounding per output), so FP16/BF16\n"
             "cost a little more than FP32 here; the accuracy columns are the real 16-bit numerics.");
    gpudl_tensor_free(ctx, &count);
    gpudl_dataset_free(ctx, &train);
    gpudl_dataset_free(ctx, &test);
    gpudl_tensor_free(ctx, &xtr); gpudl_tensor_free(ctx, &ytr); gpudl_tensor_free(ctx, &xte); gpudl_tensor_free(ctx, &yte);
    gpudl_ctx_destroy(ctx);
    return 0;
}
