/* relu_no_guard.cu - SEEDED BUG for tests/grade_test.sh (a copy of assignments/relu_xent/solution.cu):
   the ReLU forward kernel has no i < n guard (one thread per element of a
   rounded-up grid), so the last block reads and writes past the arrays: an
   illegal address, a sticky fault. Expected: ReLU forward fails (the
   feedback names the fault), every other op keeps its points. */
/* relu_xent/solution.cu - the reference solution: ReLU forward and backward,
   softmax + cross-entropy forward and backward, as CUDA kernels plugged
   into gpudl as op overrides. Graded by assignments/grade.c (README.md).

   Shapes: n = number of elements; N = rows (the batch), K = classes. */
#include <cuda_runtime.h>
#include "gpudl.h"

#define BLOCK 256   /* threads per block: a multiple of the warp (32) */

/* A launch's error (a bad configuration, no kernel image for this GPU)
   shows up in cudaGetLastError; gpudl turns GPUDL_ERR_CUDA into a message. */
static gpudl_status launched(void) { return cudaGetLastError() == cudaSuccess ? GPUDL_OK : GPUDL_ERR_CUDA; }

/* Enough blocks to give every element a thread, but at most 4096: the
   kernels loop (grid-stride), so any n works and the indices are 64-bit. */
static unsigned grid_for(int64_t n) {
    int64_t blocks = (n + BLOCK - 1) / BLOCK;
    return (unsigned)(blocks < 1 ? 1 : blocks > 4096 ? 4096 : blocks);
}

/* ---- ReLU ---------------------------------------------------------------- */
/* y = max(x, 0), but NaN stays NaN: fmaxf(x, 0) and x > 0 ? x : 0 both turn
   a NaN into 0, which would hide a diverging network. */
__global__ void relu_forward_kernel(float *y, const float *x, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;   /* BUG: no i < n */
    float v = x[i];
    y[i] = (v > 0.0f || v != v) ? v : 0.0f;
    (void)n;
}

/* dx = 0 where x <= 0 (at x == 0 and -0 too), else dy: PyTorch's
   threshold_backward. NaN <= 0 is false, so a NaN x passes dy, as the
   forward passed the NaN (x > 0 ? dy : 0 would give 0 there). */
__global__ void relu_backward_kernel(float *dx, const float *dy, const float *x, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = x[i] <= 0.0f ? 0.0f : dy[i];
}

static gpudl_status relu_forward(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    (void)user; (void)alpha;
    if (act != GPUDL_ACT_RELU) return GPUDL_ERR_UNSUPPORTED;   /* gpudl does the other activations */
    if (n <= 0) return GPUDL_OK;
    relu_forward_kernel<<<grid_for(n), BLOCK, 0, (cudaStream_t)stream>>>(y, x, n);
    return launched();
}

static gpudl_status relu_backward(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                  const float *x, const float *y, int64_t n) {
    (void)user; (void)alpha; (void)y;
    if (act != GPUDL_ACT_RELU) return GPUDL_ERR_UNSUPPORTED;
    if (n <= 0) return GPUDL_OK;
    relu_backward_kernel<<<grid_for(n), BLOCK, 0, (cudaStream_t)stream>>>(dx, dy, x, n);
    return launched();
}

/* ---- softmax + cross-entropy ------------------------------------------- */
/* Block-wide reductions over BLOCK threads in shared memory: a fixed tree,
   so the result does not depend on timing (run twice, same bits). Every
   thread of the block must call them (they contain barriers). */
__device__ float block_max(float v, float *buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    v = buf[0];
    __syncthreads();   /* everyone has read buf[0] before the buffer is reused */
    return v;
}

__device__ float block_sum(float v, float *buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    v = buf[0];
    __syncthreads();
    return v;
}

/* One block per row r of logits (N, K): m = max_j l_j, s = sum_j exp(l_j - m),
   probs = exp(l - m) / s, and the row's loss -log p[label]
   = log(s) + m - l[label], computed from the logits so that a probability
   that underflows to 0 still gives a finite loss. Subtracting m keeps every
   exp() <= 1: exp(1000) overflows to Inf in float, and Inf / Inf is NaN. */
__global__ void softmax_xent_rows_kernel(float *row_loss, float *probs, const float *logits, const int32_t *labels,
                                         int64_t K) {
    __shared__ float buf[BLOCK];
    int64_t r = blockIdx.x;
    const float *l = logits + r * K;
    float *p = probs + r * K;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = threadIdx.x; j < K; j += BLOCK) m = fmaxf(m, l[j]);
    m = block_max(m, buf);
    for (int64_t j = threadIdx.x; j < K; j += BLOCK) s += expf(l[j] - m);
    s = block_sum(s, buf);
    for (int64_t j = threadIdx.x; j < K; j += BLOCK) p[j] = expf(l[j] - m) / s;
    /* A NaN logit: fmaxf skipped it, but exp(NaN - m) made s NaN, so the
       row's probabilities and loss are NaN, as they should be. */
    if (threadIdx.x == 0) row_loss[r] = logf(s) + m - l[labels[r]];
}

/* loss[0] = mean of row_loss (N): one block, each thread sums a strided
   share, then a tree. No atomicAdd: a float sum in arrival order would
   change in the last bits from run to run. */
__global__ void mean_kernel(float *loss, const float *row_loss, int64_t N) {
    __shared__ float buf[BLOCK];
    float s = 0.0f;
    for (int64_t r = threadIdx.x; r < N; r += BLOCK) s += row_loss[r];
    s = block_sum(s, buf);
    if (threadIdx.x == 0) loss[0] = s / (float)N;
}

/* dlogits (N, K) = scale * (probs - onehot(labels)) / N */
__global__ void softmax_xent_backward_kernel(float *dlogits, const float *probs, const int32_t *labels, int64_t N, int64_t K,
                                             float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N * K; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / K, j = i % K;
        dlogits[i] = scale * (probs[i] - (j == labels[r] ? 1.0f : 0.0f)) / (float)N;
    }
}

/* The per-row losses live on the device between the two kernels: a
   grow-only buffer, allocated once and reused, so a training step does
   not call cudaMalloc (which waits for the GPU). */
static float *row_loss_buf;      /* (capacity) */
static int64_t row_loss_cap;

static gpudl_status softmax_xent_forward(void *user, void *stream, float *loss, float *probs, const float *logits,
                                         const int32_t *labels, int64_t N, int64_t K) {
    (void)user;
    if (N <= 0 || K <= 0) return GPUDL_ERR_INVALID_ARG;
    if (N > row_loss_cap) {
        if (row_loss_buf) cudaFree(row_loss_buf);
        row_loss_buf = NULL; row_loss_cap = 0;
        if (cudaMalloc((void **)&row_loss_buf, (size_t)N * sizeof(float)) != cudaSuccess) return GPUDL_ERR_CUDA;
        row_loss_cap = N;
    }
    softmax_xent_rows_kernel<<<(unsigned)N, BLOCK, 0, (cudaStream_t)stream>>>(row_loss_buf, probs, logits, labels, K);
    if (cudaGetLastError() != cudaSuccess) return GPUDL_ERR_CUDA;
    mean_kernel<<<1, BLOCK, 0, (cudaStream_t)stream>>>(loss, row_loss_buf, N);
    return launched();
}

static gpudl_status softmax_xent_backward(void *user, void *stream, float *dlogits, const float *probs, const int32_t *labels,
                                          int64_t N, int64_t K, float scale) {
    (void)user;
    if (N <= 0 || K <= 0) return GPUDL_ERR_INVALID_ARG;
    softmax_xent_backward_kernel<<<grid_for(N * K), BLOCK, 0, (cudaStream_t)stream>>>(dlogits, probs, labels, N, K, scale);
    return launched();
}

/* What this file implements: gpudl uses its own code for the rest. */
extern "C" void student_ops(gpudl_ops *ops) {
    ops->act_forward = relu_forward;
    ops->act_backward = relu_backward;
    ops->softmax_xent_forward = softmax_xent_forward;
    ops->softmax_xent_backward = softmax_xent_backward;
}
