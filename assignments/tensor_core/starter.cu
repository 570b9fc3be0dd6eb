/* tensor_core/starter.cu - assignment: a GEMM on the tensor cores (WMMA),
   FP16 operands and FP32 sums.

   Write the kernel below (README.md explains the tiles and the fragments),
   then run the grader:    make grade A=tensor_core
   It checks your GEMM against a float64 reference on many shapes, then
   trains a small MLP on Fashion-MNIST in mixed precision with it: every
   matrix product with FP16 operands (forward and backward) is your kernel.

   C (M, N) f32 = alpha op(A) op(B) + beta C, row-major, A and B FP16:
     op(A) (M, K) is A (M, K), or A (K, M) read transposed when trans_a;
     op(B) (K, N) is B (K, N), or B (N, K) read transposed when trans_b.
   beta == 0: C must not be read (it may hold garbage, even NaN). */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>
#include "gpudl.h"

using namespace nvcuda;

#define WMMA 16              /* a fragment is a 16 x 16 tile (m = n = k = 16) */
#define BM 32                /* a block computes a BM x BN tile of C ... */
#define BN 32
#define BK 16                /* ... walking along K one BK-wide tile at a time */
#define WARPS 4              /* (BM/16) x (BN/16) warps, one per 16 x 16 tile of C */
#define THREADS (WARPS * 32)

/* TODO: block (by, bx) computes C[by*BM .. +BM, bx*BN .. +BN]; its warp
   w = threadIdx.x / 32 computes the 16 x 16 quarter (wy, wx) = (w / 2, w % 2).
   Declare the fragments (wmma::fragment<wmma::matrix_a, 16, 16, 16, __half,
   wmma::row_major> a; matrix_b likewise; wmma::accumulator with float) and
   set the accumulator to 0 (wmma::fill_fragment).
   For each tile of K (k0 = 0, BK, 2 BK, ... while k0 < K):
     1. all THREADS threads copy op(A)'s BM x BK tile into As and op(B)'s
        BK x BN tile into Bs, several elements each (e = threadIdx.x,
        e + THREADS, ...); an element outside the matrix loads as 0;
     2. wait until the whole block has loaded;
     3. each warp loads its fragments from shared memory (a: rows wy*16 of
        As; b: columns wx*16 of Bs; ldm is the row length) and calls
        wmma::mma_sync(acc, a, b, acc);
     4. wait until the whole block is done reading before the next loads.
   Then store acc into Cs (wmma::store_matrix_sync, wmma::mem_row_major),
   wait, and let every thread write elements of C from Cs: only (row, col)
   inside C, alpha * Cs[i][j] + beta * C[row, col] (only alpha * Cs[i][j]
   when beta == 0). Never read or write acc.x[] by position: which element
   sits where in a fragment is unspecified.
   op(A)[i, k] is A[i * K + k], or A[k * M + i] when trans_a; work out op(B)
   the same way. Use int64_t for element offsets. */
__global__ void gemm_f16_wmma_kernel(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                     const __half *A, const __half *B, float beta, float *C) {
    /* WMMA wants 32-byte aligned pointers and row lengths (ldm) that are a
       multiple of 8 halves or 4 floats: these are. */
    __shared__ __align__(32) __half As[BM][BK];   /* As[i][k] = op(A)[row0 + i, k0 + k] */
    __shared__ __align__(32) __half Bs[BK][BN];   /* Bs[k][j] = op(B)[k0 + k, col0 + j] */
    __shared__ __align__(32) float Cs[BM][BN];    /* the block's tile of op(A) op(B) */
    int warp = threadIdx.x / 32, wy = warp / 2, wx = warp % 2;
    int64_t row0 = (int64_t)blockIdx.y * BM, col0 = (int64_t)blockIdx.x * BN;
    (void)As, (void)Bs, (void)Cs, (void)wy, (void)wx, (void)row0, (void)col0;   /* delete once you use them */
}

static gpudl_status gemm_f16(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                             float alpha, const uint16_t *A, const uint16_t *B, float beta, float *C) {
    dim3 grid;
    (void)user;
    if (M <= 0 || N <= 0) return GPUDL_OK;   /* nothing to write (and a grid of 0 blocks is a launch error) */
    if ((M + BM - 1) / BM > 65535) return GPUDL_ERR_UNSUPPORTED;   /* gridDim.y's limit: gpudl takes over */
    grid = dim3((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));   /* x: columns of C, y: rows */
    /* A and B hold IEEE binary16 bits: on the device they are __half */
    gemm_f16_wmma_kernel<<<grid, THREADS, 0, (cudaStream_t)stream>>>(trans_a, trans_b, M, N, K, alpha, (const __half *)A,
                                                                     (const __half *)B, beta, C);
    return cudaGetLastError() == cudaSuccess ? GPUDL_OK : GPUDL_ERR_CUDA;
}

/* Hands your GEMM to gpudl. */
extern "C" void student_ops(gpudl_ops *ops) {
    ops->gemm_f16 = gemm_f16;
}
