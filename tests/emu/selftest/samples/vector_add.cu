/* vector_add.cu - c = a + b on the device, in the cuda-samples style.
   Build: nvcc vector_add.cu */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "sample_helpers.h"

#ifndef SAMPLE_HAVE_RUNTIME_ERRORS
#error "__DRIVER_TYPES_H__ is not defined after cuda_runtime.h"
#endif

__global__ void vectorAdd(const float *a, const float *b, float *c, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + 0.0f;
}

int main(void) {
    const int n = 50000;
    size_t bytes = n * sizeof(float);
    float *ha = (float *)malloc(bytes), *hb = (float *)malloc(bytes), *hc = (float *)malloc(bytes);
    for (int i = 0; i < n; ++i) {
        ha[i] = rand() / (float)RAND_MAX;
        hb[i] = rand() / (float)RAND_MAX;
    }
    float *da, *db, *dc;
    checkErrors(cudaMalloc((void **)&da, bytes));
    checkErrors(cudaMalloc((void **)&db, bytes));
    checkErrors(cudaMalloc((void **)&dc, bytes));
    checkErrors(cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice));
    checkErrors(cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice));
    int threads = 256, blocks = (n + threads - 1) / threads;
    printf("CUDA kernel launch with %d blocks of %d threads\n", blocks, threads);
    vectorAdd<<<blocks, threads>>>(da, db, dc, n);
    checkLastError("vectorAdd");
    checkErrors(cudaMemcpy(hc, dc, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        if (fabsf(ha[i] + hb[i] - hc[i]) > 1e-5f) {
            fprintf(stderr, "Result verification failed at element %d\n", i);
            return EXIT_FAILURE;
        }
    }
    checkErrors(cudaFree(da));
    checkErrors(cudaFree(db));
    checkErrors(cudaFree(dc));
    free(ha);
    free(hb);
    free(hc);
    printf("Test PASSED\n");
    return 0;
}
