/* arch_dispatch.cu - code chosen per architecture with __CUDA_ARCH__, in the
   cuda-samples style: device code sees the architecture it is compiled for
   (Programming Guide, "__CUDA_ARCH__"; the nvcc manual's "Virtual
   Architecture Macros"), host code does not. A warp-aggregated atomic
   counter on >= 7.0 (as warpAggregatedAtomicsCG), a plain one before.
   Build: nvcc -arch=sm_90 arch_dispatch.cu */
#include <cuda_runtime.h>
#include <stdio.h>
#include "sample_helpers.h"

__device__ int arch_seen(void) {
#ifdef __CUDA_ARCH__
    return __CUDA_ARCH__;
#else
    return -1;
#endif
}

__global__ void filter_positive(int *out, int *count, const int *in, int n, int *arch) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) *arch = arch_seen();
    if (i >= n) return;
    if (in[i] > 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
        unsigned active = __activemask();
        unsigned positive = __ballot_sync(active, 1);   /* the lanes here all have a positive value */
        int leader = __ffs(positive) - 1, rank = __popc(positive & ((1u << (threadIdx.x % 32)) - 1));
        int base = 0;
        if ((int)(threadIdx.x % 32) == leader) base = atomicAdd(count, __popc(positive));
        base = __shfl_sync(positive, base, leader);
        out[base + rank] = in[i];
#else
        out[atomicAdd(count, 1)] = in[i];
#endif
    }
}

static int host_side(void) {
#ifdef __CUDA_ARCH__
    return 1;   /* wrong: host code is compiled without __CUDA_ARCH__ */
#else
    return 0;
#endif
}

int main(void) {
    const int n = 1 << 16;
    int *h = (int *)malloc(n * sizeof(int)), *o = (int *)malloc(n * sizeof(int)), want = 0;
    int *d_in, *d_out, *d_count, *d_arch, count = 0, arch = 0;
    long long sum_in = 0, sum_out = 0;
    for (int i = 0; i < n; i++) { h[i] = (i * 7919) % 201 - 100; if (h[i] > 0) { want++; sum_in += h[i]; } }
    checkErrors(cudaMalloc(&d_in, n * sizeof(int)));
    checkErrors(cudaMalloc(&d_out, n * sizeof(int)));
    checkErrors(cudaMalloc(&d_count, sizeof(int)));
    checkErrors(cudaMalloc(&d_arch, sizeof(int)));
    checkErrors(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    checkErrors(cudaMemset(d_count, 0, sizeof(int)));
    filter_positive<<<n / 256, 256>>>(d_out, d_count, d_in, n, d_arch);
    checkLastError("filter_positive");
    checkErrors(cudaMemcpy(&count, d_count, sizeof(int), cudaMemcpyDeviceToHost));
    checkErrors(cudaMemcpy(&arch, d_arch, sizeof(int), cudaMemcpyDeviceToHost));
    checkErrors(cudaMemcpy(o, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < count && i < n; i++) sum_out += o[i];
    printf("device code compiled for __CUDA_ARCH__ = %d; %d of %d values kept\n", arch, count, n);
    int ok = arch == 900 && host_side() == 0 && count == want && sum_out == sum_in;
    cudaFree(d_in); cudaFree(d_out); cudaFree(d_count); cudaFree(d_arch);
    free(h); free(o);
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
