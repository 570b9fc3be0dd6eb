/* wmma_gemm.cu - a half-precision GEMM on tensor cores with the warp matrix
   functions (nvcuda::wmma), in the cuda-samples style (cudaTensorCoreGemm,
   simplified): D = A * B + C, A row-major and B column-major halves, C and
   D floats, one warp per 16x16 tile of D, checked against a float64 host
   product. Programming Guide, "Warp Matrix Functions".
   Build: nvcc -arch=sm_80 wmma_gemm.cu */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdio.h>
#include "sample_helpers.h"

using namespace nvcuda;

#define M 64
#define N 48
#define K 80

__global__ void wmma_gemm(const half *a, const half *b, const float *c, float *d) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int tile_m = warp / (N / 16), tile_n = warp % (N / 16);
    if (tile_m >= M / 16) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, c + tile_m * 16 * N + tile_n * 16, N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, a + tile_m * 16 * K + k, K);
        wmma::load_matrix_sync(fb, b + tile_n * 16 * K + k, K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(d + tile_m * 16 * N + tile_n * 16, acc, N, wmma::mem_row_major);
}

int main(void) {
    half *ha = (half *)malloc(M * K * sizeof(half)), *hb = (half *)malloc(K * N * sizeof(half));
    float *hc = (float *)malloc(M * N * sizeof(float)), *hd = (float *)malloc(M * N * sizeof(float));
    for (int i = 0; i < M * K; i++) ha[i] = __float2half((float)((i * 37) % 17 - 8) / 8.0f);
    for (int i = 0; i < K * N; i++) hb[i] = __float2half((float)((i * 11) % 13 - 6) / 4.0f);   /* column j at j * K */
    for (int i = 0; i < M * N; i++) hc[i] = (float)(i % 7) - 3.0f;
    half *da, *db;
    float *dc, *dd;
    checkErrors(cudaMalloc(&da, M * K * sizeof(half)));
    checkErrors(cudaMalloc(&db, K * N * sizeof(half)));
    checkErrors(cudaMalloc(&dc, M * N * sizeof(float)));
    checkErrors(cudaMalloc(&dd, M * N * sizeof(float)));
    checkErrors(cudaMemcpy(da, ha, M * K * sizeof(half), cudaMemcpyHostToDevice));
    checkErrors(cudaMemcpy(db, hb, K * N * sizeof(half), cudaMemcpyHostToDevice));
    checkErrors(cudaMemcpy(dc, hc, M * N * sizeof(float), cudaMemcpyHostToDevice));
    int warps = (M / 16) * (N / 16);
    wmma_gemm<<<(warps * 32 + 127) / 128, 128>>>(da, db, dc, dd);
    checkLastError("wmma_gemm");
    checkErrors(cudaMemcpy(hd, dd, M * N * sizeof(float), cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = hc[i * N + j];
            for (int k = 0; k < K; k++) s += (double)__half2float(ha[i * K + k]) * (double)__half2float(hb[j * K + k]);
            err = fmax(err, fabs(s - hd[i * N + j]));
        }
    printf("%dx%dx%d half GEMM on %d warps: max error %.3g against float64\n", M, N, K, warps, err);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
    free(ha); free(hb); free(hc); free(hd);
    int ok = err < 1e-3;
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
