/* cublas_lu.cu - cuBLAS batched LU (issue 37; NVIDIA's simpleCUBLAS_LU):
   cublas<t>getrfBatched and cublas<t>getriBatched, written from the cuBLAS
   documentation ("BLAS-like Extension"): P * A = L * U with partial
   pivoting and LAPACK's 1-based pivot rows, no pivoting when P is NULL,
   info = k when U(k,k) is exactly zero, the inverse out of place, the
   documented INVALID_VALUE cases. Column-major matrices. Valid CUDA: it
   also builds with the real nvcc. */
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <math.h>
#include "selftest.h"

#define NB 3   /* matrices in the batch */
#define N 3

static cublasHandle_t g_h;

/* the batch on the device: NB n x n matrices with lda = N, and the pointer array */
template <typename F>
struct Batch {
    F *data;
    F **ptrs;
    explicit Batch(const F (*host)[N * N]) {
        cudaMalloc(&data, NB * N * N * sizeof(F));
        cudaMalloc(&ptrs, NB * sizeof(F *));
        F *hp[NB];
        for (int b = 0; b < NB; b++) hp[b] = data + b * N * N;
        cudaMemcpy(ptrs, hp, sizeof hp, cudaMemcpyHostToDevice);
        if (host) cudaMemcpy(data, host, NB * N * N * sizeof(F), cudaMemcpyHostToDevice);
    }
    ~Batch() { cudaFree(data); cudaFree(ptrs); }
};

/* A (column-major): [0] needs a row interchange at once, [1] is singular
   (rows 1 2 3, 2 4 7, 4 8 1: column 2 is twice column 1, so U(2,2) is
   exactly 0 with or without pivoting; the multipliers 1/4, 1/2, 2, 4 are
   exact), [2] is the identity */
static const double kA[NB][N * N] = {
    {0, 1, 4, 2, 0, 5, 3, 1, 6},
    {1, 2, 4, 2, 4, 8, 3, 7, 1},
    {1, 0, 0, 0, 1, 0, 0, 0, 1},
};

/* P * A == L * U for matrix b (LU as getrf left it, pivots 1-based) */
template <typename F>
static double lu_residual(const F *lu, const int *piv, const double *a) {
    double pa[N * N];
    for (int i = 0; i < N * N; i++) pa[i] = a[i];
    for (int j = 0; j < N; j++) {
        int p = piv ? piv[j] - 1 : j;
        for (int c = 0; c < N; c++) { double t = pa[j + c * N]; pa[j + c * N] = pa[p + c * N]; pa[p + c * N] = t; }
    }
    double worst = 0;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < N; c++) {
            double s = 0;
            for (int k = 0; k <= (i < c ? i : c); k++) s += (k == i ? 1.0 : (double)lu[i + k * N]) * (double)lu[k + c * N];
            worst = fmax(worst, fabs(s - pa[i + c * N]));
        }
    return worst;
}

ST_TEST(dgetrf_pivoting_and_info) {
    Batch<double> A(kA);
    int *P, *info, hp[NB * N], hi[NB];
    cudaMalloc(&P, sizeof hp);
    cudaMalloc(&info, sizeof hi);
    ST_CHECK(cublasDgetrfBatched(g_h, N, A.ptrs, N, P, info, NB) == CUBLAS_STATUS_SUCCESS);
    double lu[NB][N * N];
    ST_CHECK(cudaMemcpy(lu, A.data, sizeof lu, cudaMemcpyDeviceToHost) == cudaSuccess);
    cudaMemcpy(hp, P, sizeof hp, cudaMemcpyDeviceToHost);
    cudaMemcpy(hi, info, sizeof hi, cudaMemcpyDeviceToHost);
    /* [0]: the largest |a_i1| is row 3 (4), so P[0] = 3 */
    ST_CHECKF(hi[0] == 0 && hp[0] == 3, "info %d, P[0] %d", hi[0], hp[0]);
    ST_CHECKF(lu_residual(lu[0], hp, kA[0]) < 1e-12, "P A - L U: %g", lu_residual(lu[0], hp, kA[0]));
    ST_CHECKF(hi[1] == 2, "singular matrix: info %d, want 2", hi[1]);
    ST_CHECK(lu_residual(lu[1], hp + N, kA[1]) < 1e-12);
    ST_CHECK(hi[2] == 0 && hp[6] == 1 && hp[7] == 2 && hp[8] == 3 && lu_residual(lu[2], hp + 2 * N, kA[2]) == 0);
    /* P == NULL: no pivoting; a zero in A(1,1) is then U(1,1) = 0, info 1 */
    Batch<double> B(kA);
    ST_CHECK(cublasDgetrfBatched(g_h, N, B.ptrs, N, NULL, info, NB) == CUBLAS_STATUS_SUCCESS);
    cudaMemcpy(hi, info, sizeof hi, cudaMemcpyDeviceToHost);
    ST_CHECKF(hi[0] == 1 && hi[1] == 2 && hi[2] == 0, "no pivoting: info %d %d %d", hi[0], hi[1], hi[2]);
    cudaMemcpy(lu, B.data, sizeof lu, cudaMemcpyDeviceToHost);
    ST_CHECK(lu_residual(lu[1], NULL, kA[1]) < 1e-12);   /* [1] factors without interchanges */
    /* documented INVALID_VALUE: n < 0, lda < max(1, n), batchSize < 0 (control: the calls above) */
    ST_CHECK(cublasDgetrfBatched(g_h, -1, A.ptrs, N, P, info, NB) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasDgetrfBatched(g_h, N, A.ptrs, N - 1, P, info, NB) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasDgetrfBatched(g_h, N, A.ptrs, N, P, info, -1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(P);
    cudaFree(info);
}

ST_TEST(getri_inverse) {
    Batch<double> A(kA), C(NULL);
    int *P, *info, hi[NB];
    cudaMalloc(&P, NB * N * sizeof(int));
    cudaMalloc(&info, sizeof hi);
    ST_CHECK(cublasDgetrfBatched(g_h, N, A.ptrs, N, P, info, NB) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasDgetriBatched(g_h, N, (const double *const *)A.ptrs, N, P, C.ptrs, N, info, NB) == CUBLAS_STATUS_SUCCESS);
    double inv[NB][N * N];
    cudaMemcpy(inv, C.data, sizeof inv, cudaMemcpyDeviceToHost);
    cudaMemcpy(hi, info, sizeof hi, cudaMemcpyDeviceToHost);
    ST_CHECKF(hi[0] == 0 && hi[1] == 2 && hi[2] == 0, "getri info %d %d %d", hi[0], hi[1], hi[2]);
    for (int b = 0; b < NB; b += 2) {   /* A * inv(A) == I for the regular ones */
        double worst = 0;
        for (int i = 0; i < N; i++)
            for (int c = 0; c < N; c++) {
                double s = 0;
                for (int k = 0; k < N; k++) s += kA[b][i + k * N] * inv[b][k + c * N];
                worst = fmax(worst, fabs(s - (i == c)));
            }
        ST_CHECKF(worst < 1e-12, "matrix %d: |A inv(A) - I| = %g", b, worst);
    }
    ST_CHECK(cublasDgetriBatched(g_h, N, (const double *const *)A.ptrs, N, P, C.ptrs, N - 1, info, NB) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(P);
    cudaFree(info);
}

ST_TEST(sgetrf_single) {
    float fa[NB][N * N];
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < N * N; i++) fa[b][i] = (float)kA[b][i];
    Batch<float> A(fa), C(NULL);
    int *P, *info, hp[NB * N], hi[NB];
    cudaMalloc(&P, sizeof hp);
    cudaMalloc(&info, sizeof hi);
    ST_CHECK(cublasSgetrfBatched(g_h, N, A.ptrs, N, P, info, NB) == CUBLAS_STATUS_SUCCESS);
    float lu[NB][N * N];
    cudaMemcpy(lu, A.data, sizeof lu, cudaMemcpyDeviceToHost);
    cudaMemcpy(hp, P, sizeof hp, cudaMemcpyDeviceToHost);
    cudaMemcpy(hi, info, sizeof hi, cudaMemcpyDeviceToHost);
    ST_CHECK(hi[0] == 0 && hp[0] == 3 && lu_residual(lu[0], hp, kA[0]) < 1e-5);
    ST_CHECK(cublasSgetriBatched(g_h, N, (const float *const *)A.ptrs, N, P, C.ptrs, N, info, 1) == CUBLAS_STATUS_SUCCESS);
    float inv[N * N];
    cudaMemcpy(inv, C.data, sizeof inv, cudaMemcpyDeviceToHost);
    double s = 0;   /* row 1 of A times column 1 of inv(A) */
    for (int k = 0; k < N; k++) s += kA[0][k * N] * inv[k];
    ST_CHECKF(fabs(s - 1) < 1e-5, "(A inv(A))(1,1) = %g", s);
    cudaFree(P);
    cudaFree(info);
}

int main() {
    if (cublasCreate(&g_h) != CUBLAS_STATUS_SUCCESS) {
        printf("no cuBLAS handle\n0 passed, 1 failed\n");
        return 1;
    }
    ST_RUN(dgetrf_pivoting_and_info);
    ST_RUN(getri_inverse);
    ST_RUN(sgetrf_single);
    cublasDestroy(g_h);
    return st_summary();
}
