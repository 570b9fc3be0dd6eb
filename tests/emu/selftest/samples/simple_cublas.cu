/* simple_cublas.cu - C = alpha * A * B + beta * C with cublasSgemm,
   checked against a host GEMM, in the cuda-samples style.
   Build: nvcc simple_cublas.cu -lcublas */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "sample_helpers.h"

#ifndef SAMPLE_HAVE_CUBLAS_ERRORS
#error "CUBLAS_API_H_ is not defined after cublas_v2.h"
#endif

static void host_sgemm(int n, float alpha, const float *A, const float *B, float beta, float *C) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float prod = 0;
            for (int k = 0; k < n; ++k) prod += A[k * n + i] * B[j * n + k];
            C[j * n + i] = alpha * prod + beta * C[j * n + i];
        }
}

int main() {
    const int N = 96, n2 = N * N;
    float *hA = (float *)malloc(n2 * sizeof(float)), *hB = (float *)malloc(n2 * sizeof(float));
    float *hC = (float *)malloc(n2 * sizeof(float)), *ref = (float *)malloc(n2 * sizeof(float));
    for (int i = 0; i < n2; ++i) {
        hA[i] = rand() / (float)RAND_MAX;
        hB[i] = rand() / (float)RAND_MAX;
        hC[i] = ref[i] = rand() / (float)RAND_MAX;
    }
    cublasHandle_t handle;
    checkErrors(cublasCreate(&handle));
    float *dA, *dB, *dC;
    checkErrors(cudaMalloc((void **)&dA, n2 * sizeof(float)));
    checkErrors(cudaMalloc((void **)&dB, n2 * sizeof(float)));
    checkErrors(cudaMalloc((void **)&dC, n2 * sizeof(float)));
    checkErrors(cublasSetVector(n2, sizeof(float), hA, 1, dA, 1));
    checkErrors(cublasSetVector(n2, sizeof(float), hB, 1, dB, 1));
    checkErrors(cublasSetVector(n2, sizeof(float), hC, 1, dC, 1));
    float alpha = 1.0f, beta = 0.5f;
    checkErrors(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, dA, N, dB, N, &beta, dC, N));
    host_sgemm(N, alpha, hA, hB, beta, ref);
    checkErrors(cublasGetVector(n2, sizeof(float), dC, 1, hC, 1));
    double err = 0, norm = 0;
    for (int i = 0; i < n2; ++i) {
        err += (double)(ref[i] - hC[i]) * (ref[i] - hC[i]);
        norm += (double)ref[i] * ref[i];
    }
    double rel = sqrt(err / norm);
    checkErrors(cudaFree(dA));
    checkErrors(cudaFree(dB));
    checkErrors(cudaFree(dC));
    checkErrors(cublasDestroy(handle));
    printf("relative error %g\n", rel);
    printf(rel < 1e-6 ? "simpleCUBLAS test passed.\nTest PASSED\n" : "simpleCUBLAS test failed.\n");
    return rel < 1e-6 ? 0 : 1;
}
