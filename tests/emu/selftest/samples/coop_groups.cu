/* coop_groups.cu - cooperative groups in the cuda-samples style
   (simpleCooperativeGroups, binaryPartitionCG, reductionMultiBlockCG): a
   sum through the thread_group hierarchy (a block, its 32-wide and 4-wide
   tiles, each passed as a thread_group), a count of odd values with
   binary_partition, and a two-phase sum over the whole grid with
   grid.sync() in a cooperative launch sized by the occupancy API.
   Programming Guide, "Cooperative Groups".
   Build: nvcc -arch=sm_80 coop_groups.cu */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include "sample_helpers.h"

namespace cg = cooperative_groups;

/* a sum over any group, through shared memory: every thread returns it */
__device__ int sum_group(const cg::thread_group &g, int *x, int val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        x[lane] = val;
        g.sync();
        if (lane < i) val += x[lane + i];
        g.sync();
    }
    return val;   /* thread 0 holds the sum */
}

__global__ void groups_kernel(int *out) {
    extern __shared__ int workspace[];
    cg::thread_block block = cg::this_thread_block();
    int v = block.thread_rank() + 1;
    int s = sum_group(block, workspace, v);
    if (block.thread_rank() == 0) out[0] = s;
    block.sync();
    cg::thread_group tile32 = cg::tiled_partition(block, 32);
    int *ws = workspace + (block.thread_rank() / 32) * 32;
    s = sum_group(tile32, ws, v);
    if (tile32.thread_rank() == 0) atomicAdd(&out[1], s);
    block.sync();
    cg::thread_group tile4 = cg::tiled_partition(tile32, 4);
    ws = workspace + (block.thread_rank() / 4) * 4;
    s = sum_group(tile4, ws, v);
    if (tile4.thread_rank() == 0) atomicAdd(&out[2], s);
    /* binary_partition: the odd values' group counts itself */
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::coalesced_group part = cg::binary_partition(warp, v & 1);
    if ((v & 1) && part.thread_rank() == 0) atomicAdd(&out[3], (int)part.size());
}

__global__ void grid_sum(const int *in, int n, int *partial, int *total) {
    cg::grid_group grid = cg::this_grid();
    int acc = 0;
    for (long long i = grid.thread_rank(); i < n; i += grid.size()) acc += in[i];
    atomicAdd(&partial[blockIdx.x], acc);
    grid.sync();   /* every block's partial is in */
    if (grid.thread_rank() == 0) {
        int t = 0;
        for (unsigned b = 0; b < gridDim.x; b++) t += partial[b];
        *total = t;
    }
}

int main(void) {
    int dev = 0, coop = 0, sms = 0;
    checkErrors(cudaGetDevice(&dev));
    checkErrors(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    checkErrors(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (!coop) { printf("cooperative launches not supported: waived\n"); return 2; }

    const int threads = 128;
    int *d_out, h_out[4];
    checkErrors(cudaMalloc(&d_out, sizeof h_out));
    checkErrors(cudaMemset(d_out, 0, sizeof h_out));
    groups_kernel<<<1, threads, threads * sizeof(int)>>>(d_out);
    checkLastError("groups_kernel");
    checkErrors(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    const int want = threads * (threads + 1) / 2, odd = threads / 2;
    printf("block %d, 32-wide tiles %d, 4-wide tiles %d (want %d each); odd values %d (want %d)\n", h_out[0], h_out[1],
           h_out[2], want, h_out[3], odd);
    int ok = h_out[0] == want && h_out[1] == want && h_out[2] == want && h_out[3] == odd;

    /* a cooperative launch: as many blocks as can be resident at once */
    int per_sm = 0;
    checkErrors(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, 256, 0));
    int blocks = per_sm * sms < 32 ? per_sm * sms : 32;   /* (the emulated device keeps at most ~16k threads resident) */
    const int n = 1 << 16;
    int *h_in = (int *)malloc(n * sizeof(int)), *d_in, *d_partial, *d_total, total = 0, ref = 0;
    for (int i = 0; i < n; i++) { h_in[i] = (i % 13) - 6 + (i % 5); ref += h_in[i]; }
    checkErrors(cudaMalloc(&d_in, n * sizeof(int)));
    checkErrors(cudaMalloc(&d_partial, blocks * sizeof(int)));
    checkErrors(cudaMalloc(&d_total, sizeof(int)));
    checkErrors(cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice));
    checkErrors(cudaMemset(d_partial, 0, blocks * sizeof(int)));
    int nn = n;
    void *args[] = {&d_in, &nn, &d_partial, &d_total};
    checkErrors(cudaLaunchCooperativeKernel((void *)grid_sum, dim3(blocks), dim3(256), args, 0, 0));
    checkErrors(cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost));
    printf("grid.sync() over %d blocks (%d per SM): sum %d, want %d\n", blocks, per_sm, total, ref);
    ok = ok && total == ref;
    /* more blocks than can be resident: refused, not run */
    cudaError_t e = cudaLaunchCooperativeKernel((void *)grid_sum, dim3(per_sm * sms + 1), dim3(256), args, 0, 0);
    printf("%d blocks: %s\n", per_sm * sms + 1, cudaGetErrorName(e));
    ok = ok && e == cudaErrorCooperativeLaunchTooLarge;
    cudaGetLastError();
    cudaFree(d_out); cudaFree(d_in); cudaFree(d_partial); cudaFree(d_total);
    free(h_in);
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
