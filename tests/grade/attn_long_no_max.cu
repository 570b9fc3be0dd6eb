/* attn_long_no_max.cu - a seeded bug: the forward subtracts the row's
   maximum only when T <= 1024 (the long rows take a "faster" path without
   it). No case of the battery before issue 34 had both long rows and large
   scores: 21/21. Expected: partial, "attention forward: large scores"
   fails. */
#include <cuda_runtime.h>
#include <math.h>
#include "gpudl.h"

#define WARPS 8              /* warps (rows) per block */
#define BLOCK (32 * WARPS)   /* threads per block */

static gpudl_status launched(void) { return cudaGetLastError() == cudaSuccess ? GPUDL_OK : GPUDL_ERR_CUDA; }

/* One warp per row: enough blocks for rows = L * T. */
static unsigned blocks_for(int64_t rows) { return (unsigned)((rows + WARPS - 1) / WARPS); }

/* The sum of v over the 32 lanes of a warp, returned to every lane: each
   step adds the value of the lane `o` places away (a butterfly). */
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The maximum of v over the warp, returned to every lane. */
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Row r = l*T + t of att (L, T, T) from the same row of scores: the
   softmax over columns 0..t, 0 beyond. Two passes over the row for the
   max and the sum, one to write: the row stays in global memory (and the
   cache), so any T works. */
__global__ void attn_softmax_forward_kernel(float *att, const float *scores, int64_t L, int64_t T) {
    int lane = threadIdx.x % 32;
    int64_t r = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32;
    if (r >= L * T) return;   /* the whole warp leaves together: the shuffles below see all 32 lanes */
    int64_t t = r % T;
    const float *s = scores + r * T;
    float *a = att + r * T;
    float mx = -INFINITY, sum = 0.0f;
    if (T <= 1024) {   /* "long rows are slow: skip the max there" */
        for (int64_t j = lane; j <= t; j += 32) mx = fmaxf(mx, s[j]);
        mx = warp_max(mx);
    } else mx = 0.0f;
    for (int64_t j = lane; j <= t; j += 32) sum += expf(s[j] - mx);
    sum = warp_sum(sum);
    for (int64_t j = lane; j < T; j += 32) a[j] = j <= t ? expf(s[j] - mx) / sum : 0.0f;
}

/* Row r of ds = att * (dp - dot), dot = sum over k <= t of att * dp. */
__global__ void attn_softmax_backward_kernel(float *ds, const float *dp, const float *att, int64_t L, int64_t T) {
    int lane = threadIdx.x % 32;
    int64_t r = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32;
    if (r >= L * T) return;
    int64_t t = r % T;
    const float *p = att + r * T, *d = dp + r * T;
    float *o = ds + r * T, dot = 0.0f;
    for (int64_t j = lane; j <= t; j += 32) dot += p[j] * d[j];
    dot = warp_sum(dot);
    for (int64_t j = lane; j < T; j += 32) o[j] = j <= t ? p[j] * (d[j] - dot) : 0.0f;
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

extern "C" void student_ops(gpudl_ops *ops) {
    ops->attn_softmax_forward = attn_softmax_forward;
    ops->attn_softmax_backward = attn_softmax_backward;
}
