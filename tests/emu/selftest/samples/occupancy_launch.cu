/* occupancy_launch.cu - what fits on a multiprocessor, in the cuda-samples
   style (simpleOccupancy): a kernel with 40 KiB of static shared memory
   and 256 threads is limited by shared memory, not by threads, and
   cudaFuncGetAttributes reports its static size; a launch with a cluster
   dimension needs a grid that is a multiple of it. Programming Guide,
   "Occupancy Calculator" and "Thread Block Clusters"; Runtime API,
   cudaLaunchKernelEx.
   Build: nvcc -arch=sm_90 occupancy_launch.cu */
#include <cuda_runtime.h>
#include <stdio.h>
#include "sample_helpers.h"

#define TILE_FLOATS (40 * 1024 / 4)

__global__ void big_tile(float *out) {
    __shared__ float tile[TILE_FLOATS];
    for (int i = threadIdx.x; i < TILE_FLOATS; i += blockDim.x) tile[i] = (float)i;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = tile[TILE_FLOATS - 1 - blockIdx.x % 16];
}

__global__ void copy_kernel(int *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = (int)blockIdx.x; }

int main(void) {
    int ok = 1, per_sm = 0, by_threads = 0, smem_sm = 0, threads_sm = 0, cc = 0;
    cudaFuncAttributes fa;
    checkErrors(cudaFuncGetAttributes(&fa, big_tile));
    checkErrors(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    checkErrors(cudaDeviceGetAttribute(&threads_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
    checkErrors(cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, 0));
    checkErrors(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, big_tile, 256, 0));
    checkErrors(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&by_threads, copy_kernel, 256, 0));
    printf("big_tile: %zu bytes of static shared memory; %d blocks of 256 per SM (%d bytes of shared memory, %d threads); "
           "without shared memory %d\n", fa.sharedSizeBytes, per_sm, smem_sm, threads_sm, by_threads);
    ok &= fa.sharedSizeBytes == TILE_FLOATS * sizeof(float);
    ok &= per_sm >= 1 && (size_t)per_sm * fa.sharedSizeBytes <= (size_t)smem_sm && per_sm < by_threads;
    ok &= by_threads == threads_sm / 256;   /* 8 on every profile: fewer than the 16-32 blocks an SM may hold */
    float *d_out;
    checkErrors(cudaMalloc(&d_out, 64 * sizeof(float)));
    big_tile<<<64, 256>>>(d_out);
    checkLastError("big_tile");
    checkErrors(cudaDeviceSynchronize());

    if (cc >= 9) {   /* clusters: sm_90 and later */
        int *d;
        checkErrors(cudaMalloc(&d, 4 * 64 * sizeof(int)));
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 2;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.blockDim = dim3(64);
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        cfg.gridDim = dim3(3);
        cudaError_t odd = cudaLaunchKernelEx(&cfg, copy_kernel, d);
        cudaGetLastError();
        cfg.gridDim = dim3(4);
        cudaError_t even = cudaLaunchKernelEx(&cfg, copy_kernel, d);
        checkErrors(cudaDeviceSynchronize());
        printf("cluster of 2: a grid of 3 %s, a grid of 4 %s\n", cudaGetErrorName(odd), cudaGetErrorName(even));
        ok &= odd != cudaSuccess && even == cudaSuccess;
        cudaFree(d);
    }
    cudaFree(d_out);
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
