/* mlp_fashion.c - a multilayer perceptron on Fashion-MNIST:
   784 -> 256 -> ReLU -> 128 -> ReLU -> 10, Adam with a cosine schedule.

   GPU:  nvcc -O2 -o mlp mlp_fashion.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   CPU:  cc -O2 -DGPUDL_NO_CUDA -o mlp mlp_fashion.c -lm      (add -fopenmp for threads)
   Run:  ./mlp [--data DIR] [--epochs N] [--batch B] [--cpu] [--dist]

   --dist: data parallel over the ranks mpirun starts (mpirun -np 2 ./mlp
   --dist): each rank takes B / ranks rows of every batch of B, and the
   gradients are averaged, so N ranks train like one process with batch B.
   Build with the switches: mpicc -O2 -fopenmp -DGPUDL_NO_CUDA -DGPUDL_MPI
   (CPU ranks), or nvcc ... -DGPUDL_MPI -DGPUDL_NCCL -lnccl with mpicc
   --showme's flags (one GPU per rank).

   Every step is three matrix products forward (x W1^T, h1 W2^T, h2 W3^T)
   and six backward: a small MLP is a handful of GEMMs of a few hundred
   rows, which on a GPU are bound by launch latency and memory, not by
   arithmetic. */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"

int main(int argc, char **argv) {
    const char *data = NULL;
    int epochs = 8, cpu = 0, use_dist = 0, rank = 0, ranks = 1, i;
    int64_t batch = 128, sample[1] = {784}, e, b, one = 1;
    float loss = 0.0f, correct = 0.0f;
    gpudl_ctx_desc cd;
    gpudl_ctx *ctx;
    gpudl_tensor xtr, ytr, xte, yte, count, x, y, flat;
    gpudl_dataset train, test;
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_progress pr;
    gpudl_dist *dist = NULL;
    double t0 = gpudl_now(), train_s = 0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu")) cpu = 1;
        else if (!strcmp(argv[i], "--dist")) use_dist = 1;
        else { fprintf(stderr, "usage: %s [--data DIR] [--epochs N] [--batch B] [--cpu] [--dist]\n", argv[0]); return 2; }
    }
    if (epochs < 1 || batch < 1) { fprintf(stderr, "epochs and batch must be >= 1\n"); return 2; }
    if (!use_dist && gpudl_dist_launched(&rank) > 1) {   /* mpirun -np 2 ./app: two copies, each training alone */
        if (rank == 0)
            fprintf(stderr, "warning: started as rank 0 of %d (mpirun, srun or torchrun), but without --dist: each rank "
                    "trains its own copy of the model on all the data. Add --dist to share the work.\n", gpudl_dist_launched(NULL));
        rank = 0;
    }
    if (use_dist) {   /* before the context: the rank says which GPU */
        if (gpudl_dist_create(NULL, &dist) != GPUDL_OK) return 1;   /* it said why */
        rank = gpudl_dist_rank(dist);
        ranks = gpudl_dist_size(dist);
        if (batch % ranks) { fprintf(stderr, "--batch %lld is not a multiple of %d ranks\n", (long long)batch, ranks); return 2; }
        if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;   /* rank 0 speaks for all */
    }
    memset(&cd, 0, sizeof cd);
    cd.bind_threads = 1;   /* this program owns its process: OpenMP's threads one per core (a library call would not) */
    cd.device = cpu ? GPUDL_DEVICE_CPU : GPUDL_DEVICE_AUTO;
    cd.cuda_device = gpudl_dist_local_rank(dist);
    cd.log = gpudl_log_stderr;
    GPUDL_CHECK(gpudl_ctx_create(&cd, &ctx));
    /* on a CPU, subnormal gradients and moments are slow: flush them to zero */
    if (gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU) (void)gpudl_cpu_flush_denormals(ctx, 1);
    if (gpudl_fashion_mnist_load(ctx, data, &xtr, &ytr, &xte, &yte, &data) != GPUDL_OK) return 1;   /* it said why */
    printf("device: %s; data: %s\n", gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA ? "GPU" : "CPU", data);
    GPUDL_CHECK(gpudl_dataset_create(ctx, &train, &xtr, &ytr, batch, 0.2860f, 0.3530f));
    GPUDL_CHECK(gpudl_dataset_create(ctx, &test, &xte, &yte, batch, 0.2860f, 0.3530f));

    GPUDL_CHECK(gpudl_model_create(ctx, &m, 1, sample));
    GPUDL_CHECK(gpudl_model_add_linear(m, 784, 256));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 256, 128));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 128, 10));
    memset(&md, 0, sizeof md);
    md.max_batch = batch;
    md.seed = 1;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    if (dist) {   /* rank 0's weights everywhere; each rank its share of every batch */
        GPUDL_CHECK(gpudl_model_set_dist(m, dist));
        GPUDL_CHECK(gpudl_dataset_shard(ctx, &train, rank, ranks));
        GPUDL_CHECK(gpudl_dataset_shard(ctx, &test, rank, ranks));
        printf("data parallel: %d ranks, %lld rows each per batch of %lld\n", ranks, (long long)(batch / ranks), (long long)batch);
    }
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    od.lr = 1e-3f;
    od.schedule = GPUDL_SCHED_COSINE;
    od.warmup_steps = 100;
    od.total_steps = epochs * gpudl_dataset_num_batches(&train);
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));

    for (e = 0; e < epochs; e++) {
        char label[32];
        double te = gpudl_now();
        snprintf(label, sizeof label, "epoch %lld/%d", (long long)(e + 1), epochs);
        GPUDL_CHECK(gpudl_dataset_shuffle(ctx, &train, 1, (uint64_t)e));
        gpudl_progress_begin(&pr, label, gpudl_dataset_num_batches(&train), batch);
        for (b = 0; b < gpudl_dataset_num_batches(&train); b++) {
            GPUDL_CHECK(gpudl_dataset_batch(ctx, &train, b, &x, &y));
            GPUDL_CHECK(gpudl_tensor_reshape(&flat, &x, 2, (int64_t[2]){x.shape[0], 784}));   /* (N,1,28,28) -> (N,784) */
            GPUDL_CHECK(gpudl_model_zero_grad(m));
            GPUDL_CHECK(gpudl_model_forward(m, &flat, NULL));
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
        train_s += gpudl_now() - te;
    }
    GPUDL_CHECK(gpudl_tensor_create(ctx, &count, GPUDL_F32, 1, &one));
    GPUDL_CHECK(gpudl_tensor_fill(ctx, &count, 0.0f));
    gpudl_model_train(m, 0);
    for (b = 0; b < gpudl_dataset_num_batches(&test); b++) {
        GPUDL_CHECK(gpudl_dataset_batch(ctx, &test, b, &x, &y));
        GPUDL_CHECK(gpudl_tensor_reshape(&flat, &x, 2, (int64_t[2]){x.shape[0], 784}));
        GPUDL_CHECK(gpudl_model_forward(m, &flat, NULL));
        GPUDL_CHECK(gpudl_model_count_correct(m, &y, &count));
    }
    if (dist) GPUDL_CHECK(gpudl_dist_allreduce(dist, ctx, &count, 0));   /* every rank's share counted */
    GPUDL_CHECK(gpudl_tensor_item(ctx, &count, 0, &correct));
    printf("test accuracy: %.2f%%\n", 100.0 * correct /   /* sharded, the test set's last partial batch is left out */
           (double)(test.shard_size > 1 ? gpudl_dataset_num_batches(&test) * batch : test.n));
    printf("wall time: %.1f s (training %.1f s), %.0f images/s\n", gpudl_now() - t0, train_s, (double)(epochs * train.n) / train_s);
    gpudl_tensor_free(ctx, &count);
    gpudl_model_destroy(m);
    gpudl_dataset_free(ctx, &train); gpudl_dataset_free(ctx, &test);
    gpudl_tensor_free(ctx, &xtr); gpudl_tensor_free(ctx, &ytr); gpudl_tensor_free(ctx, &xte); gpudl_tensor_free(ctx, &yte);
    gpudl_ctx_destroy(ctx);
    gpudl_dist_destroy(dist);
    return 0;
}
