/* sgemm/starter.cu - assignment: a tiled shared-memory SGEMM on the GPU.

   Write the kernel below (README.md explains the tiling), then run the
   grader:    make grade A=sgemm
   It checks your GEMM against a float64 reference on many shapes, then
   trains a small MLP on Fashion-MNIST with it: every matrix product of the
   training (forward and backward) is your kernel.

   C (M, N) = alpha op(A) op(B) + beta C, everything float32 and row-major:
     op(A) (M, K) is A (M, K), or A (K, M) read transposed when trans_a;
     op(B) (K, N) is B (K, N), or B (N, K) read transposed when trans_b.
   beta == 0: C must not be read (it may hold garbage, even NaN). */
#include <cuda_runtime.h>
#include "gpudl.h"

#define TILE 16   /* a TILE x TILE block of threads computes a TILE x TILE tile of C */

/* TODO: thread (ty, tx) of block (by, bx) computes
       C[by*TILE + ty, bx*TILE + tx].
   For each tile of K (k0 = 0, TILE, 2 TILE, ... while k0 < K):
     1. every thread loads ONE element of op(A)'s tile into As and ONE of
        op(B)'s tile into Bs; an element outside the matrix loads as 0;
     2. wait until the whole block has loaded;
     3. acc += As[ty][k] * Bs[k][tx] for k < TILE;
     4. wait until the whole block is done reading before the next loads.
   Then, if (row, col) is inside C, write alpha * acc + beta * C[row, col]
   (and only alpha * acc when beta == 0).
   Index op(A)[i, k] is A[i * K + k], or A[k * M + i] when trans_a; work
   out op(B) the same way. Use int64_t for element offsets. */
__global__ void sgemm_tiled_kernel(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                   const float *B, float beta, float *C) {
    __shared__ float As[TILE][TILE];   /* As[i][k] = op(A)[by*TILE + i, k0 + k] */
    __shared__ float Bs[TILE][TILE];   /* Bs[k][j] = op(B)[k0 + k, bx*TILE + j] */
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t row = (int64_t)blockIdx.y * TILE + ty, col = (int64_t)blockIdx.x * TILE + tx;
    float acc = 0.0f;
}

static gpudl_status sgemm(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                          const float *A, const float *B, float beta, float *C) {
    dim3 block(TILE, TILE), grid;
    (void)user;
    if (M <= 0 || N <= 0) return GPUDL_OK;   /* nothing to write (and a grid of 0 blocks is a launch error) */
    if ((M + TILE - 1) / TILE > 65535) return GPUDL_ERR_UNSUPPORTED;   /* gridDim.y's limit: gpudl takes over */
    grid = dim3((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE));   /* x: columns of C, y: rows */
    sgemm_tiled_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
    return cudaGetLastError() == cudaSuccess ? GPUDL_OK : GPUDL_ERR_CUDA;
}

/* Hands your GEMM to gpudl. */
extern "C" void student_ops(gpudl_ops *ops) {
    ops->gemm = sgemm;
}
