/* odds_and_ends.cu - constructs of third-party CUDA programs that the
   emulated device must build unchanged: a kernel with a default argument
   launched without it, a string literal that mentions extern __shared__ and
   a launch, cudaLaunchKernel through a const void *, __constant__ memory set
   by cudaMemcpyToSymbol, a __device__ counter read back by
   cudaMemcpyFromSymbol, a kernel's attributes before its first launch.
   Build: nvcc -O2 odds_and_ends.cu */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include "sample_helpers.h"

#define RADIUS 3
__constant__ float stencil[2 * RADIUS + 1];
__device__ unsigned int blocks_done;

static const char *usage = "kernels declare 'extern __shared__ float tile[];' and run as k<<<grid, block>>>(...)";

__global__ void __launch_bounds__(128) stencil_1d(const float *in, float *out, int n, float bias = 0.5f) {
    extern __shared__ float tile[];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + RADIUS;
    tile[l] = g < n ? in[g] : 0.0f;
    if (threadIdx.x < RADIUS) {
        tile[l - RADIUS] = g >= RADIUS ? in[g - RADIUS] : 0.0f;
        tile[l + blockDim.x] = g + (int)blockDim.x < n ? in[g + blockDim.x] : 0.0f;
    }
    __syncthreads();
    float r = bias;
    for (int o = -RADIUS; o <= RADIUS; ++o) r += stencil[o + RADIUS] * tile[l + o];
    if (g < n) out[g] = r;
    if (threadIdx.x == 0) atomicAdd(&blocks_done, 1u);
}

__global__ void scale(float *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

int main() {
    if (strstr(usage, "extern __shared__ float tile[];") == NULL || strstr(usage, "k<<<grid, block>>>(...)") == NULL) {
        printf("string literal changed: %s\n", usage);
        return 1;
    }
    const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
    float h_st[2 * RADIUS + 1];
    for (int i = 0; i < 2 * RADIUS + 1; ++i) h_st[i] = 1.0f;
    checkErrors(cudaMemcpyToSymbol(stencil, h_st, sizeof h_st));
    unsigned zero = 0;
    checkErrors(cudaMemcpyToSymbol(blocks_done, &zero, sizeof zero));
    float *in, *out, h[n], ref[n];
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 10);
    checkErrors(cudaMalloc(&in, n * sizeof(float)));
    checkErrors(cudaMalloc(&out, n * sizeof(float)));
    checkErrors(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    cudaFuncAttributes attr;
    checkErrors(cudaFuncGetAttributes(&attr, stencil_1d));
    if (attr.maxThreadsPerBlock != 128) {
        printf("maxThreadsPerBlock %d, want 128 (__launch_bounds__)\n", attr.maxThreadsPerBlock);
        return 1;
    }
    stencil_1d<<<blocks, threads, (threads + 2 * RADIUS) * sizeof(float)>>>(in, out, n);
    checkLastError("stencil_1d");
    float s = 2.0f;
    int count = n;
    void *args[] = {&out, &s, &count};
    checkErrors(cudaLaunchKernel((const void *)scale, dim3(blocks), dim3(threads), args, 0, 0));
    checkErrors(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    unsigned done = 0;
    checkErrors(cudaMemcpyFromSymbol(&done, blocks_done, sizeof done));
    int bad = done != (unsigned)blocks;
    for (int i = 0; i < n; ++i) {
        float r = 0.5f;
        for (int o = -RADIUS; o <= RADIUS; ++o) r += (i + o >= 0 && i + o < n) ? (float)((i + o) % 10) : 0.0f;
        ref[i] = 2 * r;
        bad += h[i] != ref[i];
    }
    checkErrors(cudaFree(in));
    checkErrors(cudaFree(out));
    printf("%u blocks done, %d mismatches\n", done, bad);
    printf(bad ? "Test FAILED\n" : "Test PASSED\n");
    return bad ? 1 : 0;
}
