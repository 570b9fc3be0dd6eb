/* attention/starter.cu - assignment: the causal softmax of self-attention
   on the GPU, forward and backward.

   Write the three TODOs below (README.md explains each), then run the
   grader:    make grade A=attention
   It checks both functions against a float64 reference on many cases,
   then runs gpudl's whole attention (gpudl_attention_forward/_backward:
   the GEMMs are cuBLAS's, the softmax is yours) on heads of odd sizes.

   Shapes: L = B * NH score matrices of T x T (one per batch entry and
   head), row t of matrix l at (l*T + t) * T. Row t is query position t;
   it may look at key positions j <= t only (the causal mask). Everything
   is float32, row-major, in device memory. */
#include <cuda_runtime.h>
#include <math.h>
#include "gpudl.h"

#define WARPS 8              /* warps (rows) per block */
#define BLOCK (32 * WARPS)   /* threads per block */

/* A launch's error shows up in cudaGetLastError; gpudl turns
   GPUDL_ERR_CUDA into a message. */
static gpudl_status launched(void) { return cudaGetLastError() == cudaSuccess ? GPUDL_OK : GPUDL_ERR_CUDA; }

/* One warp per row: enough blocks for rows = L * T. */
static unsigned blocks_for(int64_t rows) { return (unsigned)((rows + WARPS - 1) / WARPS); }

/* The sum of v over the 32 lanes of a warp, returned to every lane: each
   step adds the value of the lane `o` places away (a butterfly). All 32
   lanes must call it. */
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* TODO 1: the maximum of v over the warp, returned to every lane, like
   warp_sum (fmaxf). */
__device__ float warp_max(float v) {
    return v;
}

/* TODO 2: warp w of block b handles row r = b * WARPS + w of the L * T
   rows (lane = threadIdx.x % 32); a warp with r >= L * T returns.
   With t = r % T, s = scores + r * T and a = att + r * T:
     a[j] = exp(s[j] - m) / sum_{k <= t} exp(s[k] - m)   for j <= t
     a[j] = 0                                             for j > t
   where m = max_{k <= t} s[k].
   - Never read s[j] for j > t: the GEMM left garbage there (the grader
     puts NaN and 1e4 in those places).
   - Scores can be as large as 1e4: expf(1e4) is Inf. Subtracting m keeps
     every exponent <= 0 and does not change the result.
   - T can be 2049: loop j = lane, lane + 32, ... over the row; no array
     of T floats in registers or shared memory. */
__global__ void attn_softmax_forward_kernel(float *att, const float *scores, int64_t L, int64_t T) {
}

/* TODO 3: the backward of the same row:
     ds[j] = att[j] * (dp[j] - dot),  dot = sum_{k <= t} att[k] * dp[k]   for j <= t
     ds[j] = 0                                                           for j > t
   Read neither dp nor att above the diagonal (dp holds NaN there). */
__global__ void attn_softmax_backward_kernel(float *ds, const float *dp, const float *att, int64_t L, int64_t T) {
}

static gpudl_status attn_softmax_forward(void *user, void *stream, float *att, const float *scores, int64_t L, int64_t T) {
    (void)user;
    if (L * T <= 0) return GPUDL_OK;
    attn_softmax_forward_kernel<<<blocks_for(L * T), BLOCK, 0, (cudaStream_t)stream>>>(att, scores, L, T);
    return launched();
}

static gpudl_status attn_softmax_backward(void *user, void *stream, float *ds, const float *dp, const float *att, int64_t L,
                                          int64_t T) {
    (void)user;
    if (L * T <= 0) return GPUDL_OK;
    attn_softmax_backward_kernel<<<blocks_for(L * T), BLOCK, 0, (cudaStream_t)stream>>>(ds, dp, att, L, T);
    return launched();
}

/* Hands your functions to gpudl; a field left NULL is gpudl's own code. */
extern "C" void student_ops(gpudl_ops *ops) {
    ops->attn_softmax_forward = attn_softmax_forward;
    ops->attn_softmax_backward = attn_softmax_backward;
}
