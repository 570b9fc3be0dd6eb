/* tc_row_col.cu - SEEDED BUG for tests/grade_test.sh (a copy of assignments/tensor_core/solution.cu):
   row- and column-major mixed up for op(B) when trans_b: the staging
   already transposes B (N, K) into op(B)'s row-major tile, and then the
   matrix_b fragment is declared col_major as well, so each 16 x 16 block of
   op(B) is used transposed. Expected: "transposes" fails (and the cases
   with trans_b elsewhere: "large"'s 300x257x200 B^T, "alpha/beta"). */
/* tensor_core/solution.cu - the reference solution: a GEMM on the tensor
   cores (WMMA) with FP16 operands and FP32 sums, plugged into gpudl as its
   gemm_f16, so the MLP's mixed-precision training runs on it. Graded by
   assignments/grade.c.

   C (M, N) f32 = alpha op(A) op(B) + beta C, row-major, A and B FP16:
     op(A) (M, K) is A (M, K), or A (K, M) read transposed when trans_a;
     op(B) (K, N) is B (K, N), or B (N, K) read transposed when trans_b.
   beta == 0: C is not read (it may hold garbage, even NaN). */
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

/* Block (by, bx) computes C[by*BM .. +BM, bx*BN .. +BN]; its warp w computes
   the 16 x 16 quarter (w / 2, w % 2) of that tile.
   Per step along K all 128 threads copy a BM x BK tile of op(A) and a
   BK x BN tile of op(B) into shared memory (the transposes are handled
   here: the tiles are always op(A) and op(B), row-major), out-of-range
   elements as 0, so every fragment loads a full 16 x 16 tile and the tails
   of M, N and K add nothing; then each warp loads its two fragments and
   multiplies. The accumulator is stored into shared memory and the
   epilogue works from there, element by element: the fragment's layout in
   registers is unspecified, so this kernel never indexes acc.x[].
   A fast kernel differs: 128 x 128 (or larger) tiles per block, each warp
   keeping several accumulators and reusing each loaded fragment for
   several mma_sync; 16-byte loads, double-buffered (cp.async) so the next
   tile arrives while this one is multiplied; shared rows padded against
   bank conflicts; and PTX's mma (what WMMA compiles to) or Hopper's wgmma
   directly. */
__global__ void gemm_f16_wmma_kernel(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                     const __half *A, const __half *B, float beta, float *C) {
    /* WMMA's rules: the pointers it loads from or stores to are 32-byte
       aligned, and ldm (the row length) is a multiple of 8 halves or 4
       floats. Each row here is 32 or 64 bytes and each warp's corner lies on
       such a boundary. */
    __shared__ __align__(32) __half As[BM][BK];   /* As[i][k] = op(A)[row0 + i, k0 + k] */
    __shared__ __align__(32) __half Bs[BK][BN];   /* Bs[k][j] = op(B)[k0 + k, col0 + j] */
    __shared__ __align__(32) float Cs[BM][BN];    /* the block's tile of op(A) op(B) */
    int warp = threadIdx.x / 32, wy = warp / 2, wx = warp % 2;
    int64_t row0 = (int64_t)blockIdx.y * BM, col0 = (int64_t)blockIdx.x * BN;
    wmma::fragment<wmma::matrix_a, WMMA, WMMA, WMMA, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, WMMA, WMMA, WMMA, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, WMMA, WMMA, WMMA, float> acc;   /* FP32 sums */

    wmma::fill_fragment(acc, 0.0f);
    for (int64_t k0 = 0; k0 < K; k0 += BK) {
        /* Each thread copies every THREADS-th element of each tile. Which
           element e stands for depends on how the operand is stored, so that
           neighbouring threads read neighbouring addresses (coalescing). */
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            int i, k;
            int64_t r, kk;
            if (!trans_a) { i = e / BK; k = e % BK; }   /* A (M, K): along a row of A is along k */
            else { i = e % BM; k = e / BM; }            /* A (K, M): along a row of A is along i */
            r = row0 + i;
            kk = k0 + k;
            As[i][k] = (r < M && kk < K) ? A[trans_a ? kk * M + r : r * K + kk] : __float2half(0.0f);
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            int k, j;
            int64_t kk, c;
            if (!trans_b) { k = e / BN; j = e % BN; }   /* B (K, N): along a row is along j */
            else { k = e % BK; j = e / BK; }            /* B (N, K): along a row is along k */
            kk = k0 + k;
            c = col0 + j;
            Bs[k][j] = (kk < K && c < N) ? B[trans_b ? c * K + kk : kk * N + c] : __float2half(0.0f);
        }
        __syncthreads();   /* the tiles are complete (other warps loaded parts of them) before anyone reads them */
        /* warp-wide: all 32 lanes make these calls together, with the same arguments */
        wmma::load_matrix_sync(a, &As[wy * WMMA][0], BK);   /* rows wy*16 .. +16 of op(A)'s tile */
        if (!trans_b) {
            wmma::load_matrix_sync(b, &Bs[0][wx * WMMA], BN);   /* columns wx*16 .. +16 of op(B)'s tile */
            wmma::mma_sync(acc, a, b, acc);                     /* acc += a b: products exact, sums FP32 */
        } else {   /* BUG: "B is transposed, so its fragment is col_major"; but Bs already holds op(B) row-major */
            wmma::fragment<wmma::matrix_b, WMMA, WMMA, WMMA, __half, wmma::col_major> bt;
            wmma::load_matrix_sync(bt, &Bs[0][wx * WMMA], BN);
            wmma::mma_sync(acc, a, bt, acc);
        }
        __syncthreads();   /* everyone is done reading before the next loads overwrite the tiles */
    }
    wmma::store_matrix_sync(&Cs[wy * WMMA][wx * WMMA], acc, BN, wmma::mem_row_major);
    __syncthreads();   /* the four warps' quarters are all in Cs */

    /* The epilogue, one element per thread at a time: only elements inside C. */
    for (int e = threadIdx.x; e < BM * BN; e += THREADS) {
        int i = e / BN, j = e % BN;   /* neighbouring threads, neighbouring columns of C */
        int64_t row = row0 + i, col = col0 + j;
        if (row < M && col < N) {
            float *c = &C[row * N + col];
            *c = beta == 0.0f ? alpha * Cs[i][j] : alpha * Cs[i][j] + beta * *c;   /* beta == 0: never read C */
        }
    }
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

extern "C" void student_ops(gpudl_ops *ops) {
    ops->gemm_f16 = gemm_f16;
}
