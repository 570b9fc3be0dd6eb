/* The GEMM handed to gpudl_matmul on a second context (no overrides).
   Expected: refused, 0. */
#include <cuda_runtime.h>
#include "gpudl.h"
static gpudl_status gemm(void *user, void *stream, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, const float *B, float beta, float *C) {
    static gpudl_ctx *ctx;
    gpudl_ctx_desc d = {};
    gpudl_tensor a, b, c;
    int64_t sa[2] = {ta ? K : M, ta ? M : K}, sb[2] = {tb ? N : K, tb ? K : N}, sc[2] = {M, N};
    (void)user; (void)stream;
    d.device = GPUDL_DEVICE_CUDA;
    if (!ctx && gpudl_ctx_create(&d, &ctx) != GPUDL_OK) return GPUDL_ERR_CUDA;
    gpudl_tensor_wrap(&a, (void *)A, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, sa);
    gpudl_tensor_wrap(&b, (void *)B, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, sb);
    gpudl_tensor_wrap(&c, C, GPUDL_DEVICE_CUDA, GPUDL_F32, 2, sc);
    if (gpudl_matmul(ctx, &c, &a, &b, ta, tb, alpha, beta) != GPUDL_OK) return GPUDL_ERR_CUDA;
    return cudaDeviceSynchronize() == cudaSuccess ? GPUDL_OK : GPUDL_ERR_CUDA;   /* its context has its own stream */
}
extern "C" void student_ops(gpudl_ops *ops) { ops->gemm = gemm; }
