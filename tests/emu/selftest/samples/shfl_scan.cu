/* shfl_scan.cu - an inclusive prefix sum with warp shuffles
   (__shfl_up_sync) and dynamic shared memory for the warp sums, in the
   cuda-samples style.
   Build: nvcc -arch=sm_80 shfl_scan.cu */
#include <cuda_runtime.h>
#include <stdio.h>
#include "sample_helpers.h"

__global__ void shfl_scan_test(int *data, int width, int *partial_sums = NULL) {
    extern __shared__ int sums[];
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    int lane_id = id % warpSize;
    int warp_id = threadIdx.x / warpSize;
    int value = data[id];
#pragma unroll
    for (int i = 1; i <= width; i *= 2) {
        unsigned mask = 0xffffffff;
        int n = __shfl_up_sync(mask, value, i, width);
        if (lane_id >= i) value += n;
    }
    if (threadIdx.x % warpSize == warpSize - 1) sums[warp_id] = value;
    __syncthreads();
    if (warp_id == 0 && lane_id < (blockDim.x / warpSize)) {
        int warp_sum = sums[lane_id];
        int mask = (1 << (blockDim.x / warpSize)) - 1;
        for (int i = 1; i <= (blockDim.x / warpSize); i *= 2) {
            int n = __shfl_up_sync(mask, warp_sum, i, (blockDim.x / warpSize));
            if (lane_id >= i) warp_sum += n;
        }
        sums[lane_id] = warp_sum;
    }
    __syncthreads();
    int block_sum = 0;
    if (warp_id > 0) block_sum = sums[warp_id - 1];
    value += block_sum;
    data[id] = value;
    if (partial_sums != NULL && threadIdx.x == blockDim.x - 1) partial_sums[blockIdx.x] = value;
}

__global__ void uniform_add(int *data, int *partial_sums, int len) {
    __shared__ int buf;
    int id = (blockIdx.x * blockDim.x) + threadIdx.x;
    if (id > len) return;
    if (threadIdx.x == 0) buf = partial_sums[blockIdx.x];
    __syncthreads();
    data[id] += buf;
}

int main() {
    const int n = 65536, block = 256, blocks = n / block;
    int *h = new int[n], *ref = new int[n];
    for (int i = 0; i < n; ++i) h[i] = (i * 31) % 7;
    int acc = 0;
    for (int i = 0; i < n; ++i) ref[i] = acc += h[i];
    int *d, *partial;
    checkErrors(cudaMalloc(&d, n * sizeof(int)));
    checkErrors(cudaMalloc(&partial, blocks * sizeof(int)));
    checkErrors(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    size_t smem = block / 32 * sizeof(int);
    shfl_scan_test<<<blocks, block, smem>>>(d, 32, partial);
    shfl_scan_test<<<1, blocks, blocks / 32 * sizeof(int)>>>(partial, 32);   /* the default argument */
    uniform_add<<<blocks - 1, block>>>(d + block, partial, n);
    checkLastError("scan");
    checkErrors(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += h[i] != ref[i];
    printf("%d mismatches\n", bad);
    printf(bad ? "Test FAILED\n" : "Test PASSED\n");
    return bad ? 1 : 0;
}
