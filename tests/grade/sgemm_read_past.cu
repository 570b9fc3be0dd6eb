/* sgemm_read_past.cu - a seeded bug: the tile load of A (not transposed)
   tests k <= K instead of k < K. The extra element it loads meets a zero of
   B's tile, so the values stay right (but for an Inf or a NaN), and in the
   last row it reads one float past the end of A: within the 256 bytes of
   slack before the emulator's guard page, so before issue 34 it scored
   14/14, although the README promises an illegal-address error. Expected:
   partial (the grader's emulated device faults at the first byte past an
   allocation). */
#include <cuda_runtime.h>
#include "gpudl.h"

#define TILE 16   /* a TILE x TILE block of threads computes a TILE x TILE tile of C */

/* Thread (ty, tx) of block (by, bx) computes C[by*TILE + ty, bx*TILE + tx].
   Per step along K the block copies a TILE x TILE tile of op(A) and one of
   op(B) into shared memory, every thread loading one element of each, and
   then reads TILE values of each from there: each element of A and B is
   read from global memory N/TILE (or M/TILE) times instead of N (or M).
   Out-of-range elements load as 0, so partial tiles at the edges of M, N
   and K add nothing. */
__global__ void sgemm_tiled_kernel(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                   const float *B, float beta, float *C) {
    /* As[i][k] = op(A)[row0 + i, k0 + k], Bs[k][j] = op(B)[k0 + k, col0 + j].
       The +1 column: the transposed loads below write a column of the tile,
       and without the padding those TILE writes would all hit one bank. */
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t row0 = (int64_t)blockIdx.y * TILE, col0 = (int64_t)blockIdx.x * TILE;
    int64_t row = row0 + ty, col = col0 + tx;
    float acc = 0.0f;

    for (int64_t k0 = 0; k0 < K; k0 += TILE) {
        /* Neighbouring threads (tx, tx + 1) must read neighbouring addresses
           (coalescing): so the thread that loads an element depends on how
           the operand is stored. */
        if (!trans_a) {                 /* A (M, K): along a row of A is along k */
            int64_t r = row0 + ty, k = k0 + tx;
            As[ty][tx] = (r < M && k <= K) ? A[r * K + k] : 0.0f;
        } else {                        /* A (K, M): along a row of A is along i */
            int64_t k = k0 + ty, r = row0 + tx;
            As[tx][ty] = (r < M && k < K) ? A[k * M + r] : 0.0f;
        }
        if (!trans_b) {                 /* B (K, N): along a row is along j */
            int64_t k = k0 + ty, c = col0 + tx;
            Bs[ty][tx] = (k < K && c < N) ? B[k * N + c] : 0.0f;
        } else {                        /* B (N, K): along a row is along k */
            int64_t c = col0 + ty, k = k0 + tx;
            Bs[tx][ty] = (k < K && c < N) ? B[c * K + k] : 0.0f;
        }
        __syncthreads();   /* the tiles are complete before anyone reads them */
        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();   /* everyone is done reading before the next loads overwrite them */
    }
    if (row < M && col < N) {
        float *c = &C[row * N + col];
        *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;   /* beta == 0: never read C */
    }
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

extern "C" void student_ops(gpudl_ops *ops) {
    ops->gemm = sgemm;
}
