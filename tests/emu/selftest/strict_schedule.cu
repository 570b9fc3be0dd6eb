/* CUEMU_SCHEDULE=shuffle, CUEMU_SEED=N: blocks run in a seeded random order
   and threads of a block switch at shared-memory accesses and atomics, so
   that code relying on block order (CUDA C++ Programming Guide, Thread
   Hierarchy: blocks "must be able to execute in any order") or on the lanes
   of a warp running in lock step (Independent Thread Scheduling: without
   __syncwarp() no such guarantee) gives wrong results for some seed of a
   small fixed set, while correct kernels give the same results under every
   seed and under the default schedule. Each run is a child process (the
   schedule is read once, at start-up). */
#include <cuda_runtime.h>
#include "selftest.h"
#include "strict_child.h"

static const int kSeeds = 8;

/* Block b continues what block b - 1 wrote: right only when blocks run in order. */
__global__ void chain(int *flag) {
    if (threadIdx.x == 0) flag[blockIdx.x] = (blockIdx.x == 0 ? 0 : flag[blockIdx.x - 1]) + 1;
}
/* The same, written correctly: no block reads another's result. */
__global__ void no_chain(int *flag) {
    if (threadIdx.x == 0) flag[blockIdx.x] = blockIdx.x + 1;
}

/* Each lane reads its right neighbour and overwrites its own slot: right
   only in lock step, unless __syncwarp() separates the reads from the writes. */
__global__ void shift_left(int *out, int fix) {
    __shared__ int s[33];
    unsigned t = threadIdx.x;
    s[t] = (int)t;
    if (t == 0) s[32] = 32;
    __syncthreads();
    int v = s[t + 1];
    if (fix) __syncwarp();
    s[t] = v;
    __syncthreads();
    out[t] = s[t];
}

/* A warp reduction through shared memory, with and without __syncwarp(). */
__global__ void warp_sum(const int *in, int *out, int fix) {
    __shared__ int s[64];
    unsigned t = threadIdx.x;
    s[t] = in[t];
    s[t + 32] = 0;
    __syncthreads();
    for (unsigned off = 16; off > 0; off >>= 1) {
        int v = s[t] + s[t + off];
        if (fix) __syncwarp();
        s[t] = v;
        if (fix) __syncwarp();
    }
    if (t == 0) *out = s[0];
}

/* Thread 0 sets four __shared__ scalars declared on one line (four shared
   variables, like four lines) and every thread reads them: right only when
   thread 0 happens to go first, unless a barrier separates the writes from
   the reads. */
__global__ void tile_origin(const int *in, int *out, int fix) {
    __shared__ int row0, col0, lda, ldb;
    if (threadIdx.x == 0) {
        row0 = in[0];
        col0 = in[1];
        lda = in[2];
        ldb = in[3];
    }
    if (fix) __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = row0 + col0 * lda + ldb;
}

/* A correct block reduction and atomics: the same under every schedule. */
__global__ void block_sum(const int *in, int *total) {
    __shared__ int s[128];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 128 + t];
    __syncthreads();
    for (unsigned n = 64; n > 0; n >>= 1) {
        if (t < n) s[t] += s[t + n];
        __syncthreads();
    }
    if (t == 0) atomicAdd(total, s[0]);
}

/* Runs one kernel under the schedule; 0: right result, 1: wrong, else an error. */
static int g_kernel, g_fix;
static int body(void) {
    const int nb = 64;
    int *d, *in, h[64], hin[128 * 16];
    for (int i = 0; i < 128 * 16; i++) hin[i] = i % 7 + 1;
    if (cudaMalloc(&d, sizeof h) != cudaSuccess || cudaMalloc(&in, sizeof hin) != cudaSuccess) return 3;
    cudaMemset(d, 0, sizeof h);
    cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice);
    bool right = true;
    switch (g_kernel) {
    case 0:
    case 1:
        if (g_kernel == 0) chain<<<nb, 32>>>(d);
        else no_chain<<<nb, 32>>>(d);
        if (cudaMemcpy(h, d, nb * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) return 4;
        for (int i = 0; i < nb; i++) right = right && h[i] == i + 1;
        break;
    case 2:
        shift_left<<<1, 32>>>(d, g_fix);
        if (cudaMemcpy(h, d, 32 * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) return 4;
        for (int i = 0; i < 32; i++) right = right && h[i] == i + 1;
        break;
    case 3: {
        warp_sum<<<1, 32>>>(in, d, g_fix);
        if (cudaMemcpy(h, d, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) return 4;
        int want = 0;
        for (int i = 0; i < 32; i++) want += hin[i];
        right = h[0] == want;
        break;
    }
    case 4: {
        block_sum<<<16, 128>>>(in, d);
        if (cudaMemcpy(h, d, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) return 4;
        int want = 0;
        for (int i = 0; i < 128 * 16; i++) want += hin[i];
        right = h[0] == want;
        break;
    }
    case 5: {
        int *o;
        if (cudaMalloc(&o, 16 * 32 * sizeof(int)) != cudaSuccess) return 3;
        tile_origin<<<16, 32>>>(in, o, g_fix);
        int ho[16 * 32];
        if (cudaMemcpy(ho, o, sizeof ho, cudaMemcpyDeviceToHost) != cudaSuccess) return 4;
        for (int i = 0; i < 16 * 32; i++) right = right && ho[i] == hin[0] + hin[1] * hin[2] + hin[3];
        break;
    }
    }
    return right ? 0 : 1;
}

/* seed 0: the default schedule */
static int run(int kernel, int fix, int seed) {
    g_kernel = kernel;
    g_fix = fix;
    setenv("CUEMU_THREADS", "1", 1);   /* the default schedule is then strictly in order */
    if (seed) {
        char s[16];
        snprintf(s, sizeof s, "%d", seed);
        setenv("CUEMU_SCHEDULE", "shuffle", 1);
        setenv("CUEMU_SEED", s, 1);
    } else {
        unsetenv("CUEMU_SCHEDULE");
    }
    int rc = in_child(body);
    unsetenv("CUEMU_SCHEDULE");
    unsetenv("CUEMU_SEED");
    return rc;
}
static int wrong_seeds(int kernel, int fix, int *errors) {
    int wrong = 0;
    for (int seed = 1; seed <= kSeeds; seed++) {
        int rc = run(kernel, fix, seed);
        if (rc == 1) wrong++;
        else if (rc != 0) ++*errors;
    }
    return wrong;
}

ST_TEST(block_order_dependence_fails_under_shuffle) {
    int errors = 0;
    ST_CHECKF(run(0, 0, 0) == 0, "the default schedule runs blocks in order");
    ST_CHECKF(wrong_seeds(0, 0, &errors) > 0, "no seed of %d ran a block before the one it depends on", kSeeds);
    ST_CHECKF(wrong_seeds(1, 0, &errors) == 0, "the control (no dependence) went wrong under shuffle");
    ST_CHECK(errors == 0);
}
ST_TEST(lockstep_reliance_fails_under_shuffle) {
    int errors = 0;
    ST_CHECKF(run(2, 1, 0) == 0, "with __syncwarp(), default schedule");
    ST_CHECKF(wrong_seeds(2, 0, &errors) > 0, "no seed of %d broke lock step", kSeeds);
    ST_CHECKF(wrong_seeds(2, 1, &errors) == 0, "with __syncwarp() a seed went wrong");
    ST_CHECK(errors == 0);
}
ST_TEST(warp_reduction_without_syncwarp_fails_under_shuffle) {
    int errors = 0;
    ST_CHECKF(wrong_seeds(3, 0, &errors) > 0, "no seed of %d broke the reduction without __syncwarp()", kSeeds);
    ST_CHECKF(wrong_seeds(3, 1, &errors) == 0, "with __syncwarp() a seed went wrong");
    ST_CHECKF(run(3, 1, 0) == 0, "with __syncwarp(), default schedule");
    ST_CHECK(errors == 0);
}
ST_TEST(correct_kernels_agree_under_every_seed) {
    int errors = 0;
    ST_CHECK(run(4, 0, 0) == 0);
    ST_CHECKF(wrong_seeds(4, 0, &errors) == 0, "a block reduction went wrong under shuffle");
    ST_CHECK(errors == 0);
}

ST_TEST(one_line_shared_scalars_race_fails_under_shuffle) {
    int errors = 0;
    ST_CHECKF(run(5, 0, 0) == 0, "the default schedule runs thread 0 first");
#if !defined(__SANITIZE_ADDRESS__)   /* an ASan build has no access hooks: threads switch only where they wait */
    ST_CHECKF(wrong_seeds(5, 0, &errors) > 0, "no seed of %d let a thread read __shared__ int row0, col0, lda, ldb "
              "before thread 0 wrote them", kSeeds);
#endif
    ST_CHECKF(wrong_seeds(5, 1, &errors) == 0, "with __syncthreads() a seed went wrong");
    ST_CHECK(errors == 0);
}

int main(void) {
    ST_RUN(block_order_dependence_fails_under_shuffle);
    ST_RUN(lockstep_reliance_fails_under_shuffle);
    ST_RUN(warp_reduction_without_syncwarp_fails_under_shuffle);
    ST_RUN(one_line_shared_scalars_race_fails_under_shuffle);
    ST_RUN(correct_kernels_agree_under_every_seed);
    return st_summary();
}
