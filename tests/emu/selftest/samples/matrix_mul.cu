/* matrix_mul.cu - C = A * B with shared-memory tiles and a template
   <int BLOCK_SIZE> kernel, in the cuda-samples style.
   Build: nvcc -O3 -gencode arch=compute_80,code=[sm_80,compute_80] matrix_mul.cu */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include "sample_helpers.h"

template <int BLOCK_SIZE> __global__ void matrixMulCUDA(float *C, const float *A, const float *B, int wA, int wB) {
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * BLOCK_SIZE * by, aEnd = aBegin + wA - 1, aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx, bStep = BLOCK_SIZE * wB;
    float sum = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k) sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
    C[c + wB * ty + tx] = sum;
}

template <int BLOCK_SIZE> static int run(int hA, int wA, int wB) {
    size_t sa = (size_t)hA * wA, sb = (size_t)wA * wB, sc = (size_t)hA * wB;
    float *A = new float[sa], *B = new float[sb], *C = new float[sc];
    for (size_t i = 0; i < sa; ++i) A[i] = (float)((i * 7) % 13) / 13.0f;
    for (size_t i = 0; i < sb; ++i) B[i] = (float)((i * 5) % 11) / 11.0f;
    float *dA, *dB, *dC;
    checkErrors(cudaMalloc(&dA, sa * sizeof(float)));
    checkErrors(cudaMalloc(&dB, sb * sizeof(float)));
    checkErrors(cudaMalloc(&dC, sc * sizeof(float)));
    checkErrors(cudaMemcpy(dA, A, sa * sizeof(float), cudaMemcpyHostToDevice));
    checkErrors(cudaMemcpy(dB, B, sb * sizeof(float), cudaMemcpyHostToDevice));
    cudaFuncAttributes attr;
    checkErrors(cudaFuncGetAttributes(&attr, matrixMulCUDA<BLOCK_SIZE>));
    printf("matrixMulCUDA<%d>: %zu bytes of static shared memory\n", BLOCK_SIZE, attr.sharedSizeBytes);
    if (attr.sharedSizeBytes != 2 * BLOCK_SIZE * BLOCK_SIZE * sizeof(float)) return 1;
    dim3 threads(BLOCK_SIZE, BLOCK_SIZE), grid(wB / threads.x, hA / threads.y);
    matrixMulCUDA<BLOCK_SIZE><<<grid, threads>>>(dC, dA, dB, wA, wB);
    checkLastError("matrixMulCUDA");
    checkErrors(cudaDeviceSynchronize());
    checkErrors(cudaMemcpy(C, dC, sc * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < hA; ++i)
        for (int j = 0; j < wB; ++j) {
            double ref = 0;
            for (int k = 0; k < wA; ++k) ref += (double)A[(size_t)i * wA + k] * B[(size_t)k * wB + j];
            if (fabs(C[(size_t)i * wB + j] - ref) > 1e-4 * wA) bad++;
        }
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    delete[] A;
    delete[] B;
    delete[] C;
    return bad;
}

int main() {
    int bad = run<16>(64, 48, 32) + run<32>(64, 64, 96);
    printf(bad ? "Result = FAIL\n" : "Result = PASS\nTest PASSED\n");
    return bad ? 1 : 0;
}
