/* coop_groups.cu - cooperative groups (CUDA C++ Programming Guide,
   "Cooperative Groups"): the thread_group base that blocks, tiles and
   coalesced groups convert to; tiled_partition of a thread_group;
   binary_partition and labeled_partition; block_tile_memory; grid_group::sync
   in a cooperative launch. CUEMU_ST_CASE selects a failing case (each leaves
   the device with a sticky error): not_cooperative (grid.sync() in a <<<>>>
   launch), exits_early (a block exits while the others wait in grid.sync()). */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include "selftest.h"
namespace cg = cooperative_groups;

__device__ unsigned rank_in(const cg::thread_group &g) {
    g.sync();
    return (unsigned)g.thread_rank() * 1000u + (unsigned)g.size();
}
__global__ void base_groups(unsigned *out) {
    __shared__ cg::block_tile_memory<128> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    unsigned t = threadIdx.x;
    cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(block);
    out[0 * 128 + t] = rank_in(block);
    out[1 * 128 + t] = rank_in(t8);
    cg::thread_group g4 = cg::tiled_partition(t8, 4);   /* a tile of a tile, through the base */
    out[2 * 128 + t] = rank_in(g4);
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::coalesced_group odd_even = cg::binary_partition(warp, (t & 1) != 0);
    out[3 * 128 + t] = rank_in(odd_even);
    cg::coalesced_group by3 = cg::labeled_partition(warp, (int)(t % 3));
    out[4 * 128 + t] = rank_in(by3);
    /* a partition of a partition: the odd lanes split by lane % 4 */
    cg::coalesced_group sub = cg::binary_partition(odd_even, (t & 2) != 0);
    out[5 * 128 + t] = rank_in(sub) + (unsigned)sub.shfl(t, 0) * 1000000u;
    out[6 * 128 + t] = odd_even.ballot(t % 5 == 0);
}
ST_TEST(thread_group_base_and_partitions) {
    unsigned *d, h[7 * 128];
    cudaMalloc(&d, sizeof h);
    base_groups<<<1, 128>>>(d);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    bool ok = true;
    for (unsigned t = 0; t < 128 && ok; t++) {
        unsigned lane = t & 31;
        unsigned by3_size = lane % 3 == 2 ? 10 : 11;
        unsigned sub_first = (lane & ~31u) + ((lane & 2) ? 3 : 1);   /* the first odd lane with the same bit 1 */
        ok = h[t] == t * 1000 + 128 && h[128 + t] == (t % 8) * 1000 + 8 && h[256 + t] == (t % 4) * 1000 + 4 &&
             h[384 + t] == (lane / 2) * 1000 + 16 && h[512 + t] == (lane / 3) * 1000 + by3_size;
        if (ok && (lane & 1)) ok = h[640 + t] == (lane / 4) * 1000 + 8 + (sub_first + (t & ~31u) - (lane & ~31u)) * 1000000u;
        ST_CHECKF(ok, "thread %u: %u %u %u %u %u %u", t, h[t], h[128 + t], h[256 + t], h[384 + t], h[512 + t], h[640 + t]);
    }
    /* ballot over the odd lanes (bit k: the k-th odd lane) */
    unsigned want = 0;
    for (unsigned k = 0; k < 16; k++)
        if ((2 * k + 1) % 5 == 0) want |= 1u << k;
    ST_CHECKF(h[6 * 128 + 1] == want, "odd lanes' ballot 0x%x, want 0x%x", h[6 * 128 + 1], want);
    cudaFree(d);
}

/* Programming Guide, Grid Synchronization: after grid.sync() every block
   sees what every other block wrote before it. */
__global__ void grid_rounds(int *slots, int *out, int rounds) {
    cg::grid_group grid = cg::this_grid();
    int nb = (int)grid.num_blocks(), b = (int)grid.block_rank();
    if (!grid.is_valid()) {
        if (threadIdx.x == 0) out[b] = -1;
        return;
    }
    int acc = 0;
    for (int r = 0; r < rounds; r++) {
        if (threadIdx.x == 0) slots[b] = b * 10 + r;
        grid.sync();
        if (threadIdx.x == 0) acc += slots[(b + 1) % nb] - ((b + 1) % nb) * 10;   /* = r when the neighbour's write is seen */
        grid.sync();
    }
    if (threadIdx.x == 0) out[b] = acc;
    if (grid.thread_rank() == 0) out[nb] = (int)grid.size();
}
ST_TEST(grid_sync_cooperative) {
    int nb = 8, rounds = 4;
    int *slots, *out, h[9];
    cudaMalloc(&slots, nb * sizeof(int));
    cudaMalloc(&out, (nb + 1) * sizeof(int));
    void *args[] = {&slots, &out, &rounds};
    ST_CHECK(cudaLaunchCooperativeKernel((void *)grid_rounds, dim3(nb), dim3(64), args, 0, 0) == cudaSuccess);
    ST_CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int b = 0; b < nb; b++) ST_CHECKF(h[b] == 0 + 1 + 2 + 3, "block %d: %d", b, h[b]);
    ST_CHECK(h[nb] == nb * 64);
    /* the same grid through cudaLaunchKernelEx with the cooperative attribute */
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cfg.gridDim = dim3(nb);
    cfg.blockDim = dim3(32);
    cfg.attrs = at;
    cfg.numAttrs = 1;
    ST_CHECK(cudaLaunchKernelEx(&cfg, grid_rounds, slots, out, rounds) == cudaSuccess);
    ST_CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h[0] == 6 && h[nb - 1] == 6 && h[nb] == nb * 32, "%d %d %d", h[0], h[nb - 1], h[nb]);
    /* a <<<>>> launch: the grid group is not valid (the kernel checks) */
    grid_rounds<<<nb, 32>>>(slots, out, rounds);
    ST_CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(h[0] == -1 && h[nb - 1] == -1);
    cudaFree(slots);
    cudaFree(out);
}

__global__ void sync_anyway(int *out) {
    cg::this_grid().sync();
    out[blockIdx.x] = 1;
}
__global__ void exits_early(int *out) {
    if (blockIdx.x == 3) return;
    cg::this_grid().sync();
    out[blockIdx.x] = 1;
}
ST_TEST(grid_sync_errors) {
    const char *c = getenv("CUEMU_ST_CASE");
    int *out;
    cudaMalloc(&out, 64 * sizeof(int));
    if (!strcmp(c, "not_cooperative")) {
        sync_anyway<<<4, 32>>>(out);
        cudaError_t e = cudaDeviceSynchronize();
        ST_CHECKF(e == cudaErrorLaunchFailure, "grid.sync() in a <<<>>> launch: %s", cudaGetErrorName(e));
    } else if (!strcmp(c, "exits_early")) {
        void *args[] = {&out};
        ST_CHECK(cudaLaunchCooperativeKernel((void *)exits_early, dim3(6), dim3(32), args, 0, 0) == cudaSuccess);
        cudaError_t e = cudaDeviceSynchronize();
        ST_CHECKF(e == cudaErrorLaunchFailure, "a block exits while the others wait: %s", cudaGetErrorName(e));
    } else {
        ST_CHECKF(0, "CUEMU_ST_CASE=%s is not a case", c);
    }
}

int main() {
    if (getenv("CUEMU_ST_CASE")) {
        ST_RUN(grid_sync_errors);
        return st_summary();
    }
    ST_RUN(thread_group_base_and_partitions);
    ST_RUN(grid_sync_cooperative);
    return st_summary();
}
