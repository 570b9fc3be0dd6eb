/* coop_groups.cu - cooperative groups (CUDA C++ Programming Guide,
   "Cooperative Groups"): the thread_group base that blocks, tiles and
   coalesced groups convert to; tiled_partition of a thread_group;
   binary_partition and labeled_partition; block_tile_memory; tiles of 64
   to 256 threads; grid_group::sync in a cooperative launch. CUEMU_ST_CASE
   selects a failing case (each leaves the device with a sticky error):
   not_cooperative (grid.sync() in a <<<>>> launch), exits_early (a block
   exits while the others wait in grid.sync()), tile_needs_memory (a tile
   of 64 threads without block_tile_memory on a 7.5 device), tile_not_dividing
   (a tile of 64 in a block of 96), tile_split_sync (half a tile at its sync,
   half at __syncthreads()); each with its control first. */
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
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

/* Programming Guide, Cooperative Groups, "Thread Block Tile": tiles of 64
   to 1024 threads (several warps) since CUDA 11: sync() makes what one warp
   of the tile wrote visible to the others; thread_rank, num_threads,
   meta_group_rank and meta_group_size; shfl, any, all; cg::reduce over
   them (as nvcc 13's header has them). They are no thread_group, and have
   no shfl_up/down/xor, ballot or match: -DBIG_TILE_SHFL does not compile. */
template <unsigned N> __device__ void big_tile(unsigned *out, const cg::thread_block &block, unsigned *seen) {
    cg::thread_block_tile<N> tile = cg::tiled_partition<N>(block);
    unsigned t = threadIdx.x;
    seen[t] = t * 7 + N;
    tile.sync();
    unsigned first = (unsigned)tile.meta_group_rank() * N;
    unsigned other = seen[first + ((unsigned)tile.thread_rank() + 33) % N];   /* a thread of another warp of the tile */
    tile.sync();
    out[0 * 256 + t] = (unsigned)tile.thread_rank() * 10000 + (unsigned)tile.num_threads();
    out[1 * 256 + t] = (unsigned)tile.meta_group_rank() * 10000 + (unsigned)tile.meta_group_size();
    out[2 * 256 + t] = other;
    out[3 * 256 + t] = cg::reduce(tile, t, cg::plus<unsigned>());
    out[4 * 256 + t] = tile.shfl(t * 3, 5) + 100000 * tile.any(t % N == N - 1) + 200000 * tile.all(t % N != 7) +
                       400000 * tile.all(1);
#ifdef BIG_TILE_SHFL
    out[5 * 256 + t] = tile.shfl_down(t, 1) + rank_in(tile);
#endif
}
__global__ void big_tiles(unsigned *out, int with_memory) {
    __shared__ cg::block_tile_memory<256> scratch;
    __shared__ unsigned seen[256];
    cg::thread_block block = with_memory ? cg::this_thread_block(scratch) : cg::this_thread_block();
    big_tile<64>(out, block, seen);
    big_tile<128>(out + 5 * 256, block, seen);
    big_tile<256>(out + 10 * 256, block, seen);
}
static bool big_tiles_right(const unsigned *h, unsigned n, const unsigned *base) {
    for (unsigned t = 0; t < 256; t++) {
        unsigned r = t % n, first = t - r, sum = n * first + n * (n - 1) / 2;
        unsigned other = (first + (r + 33) % n) * 7 + n;
        if (base[0 * 256 + t] != r * 10000 + n || base[1 * 256 + t] != (t / n) * 10000 + 256 / n ||
            base[2 * 256 + t] != other || base[3 * 256 + t] != sum || base[4 * 256 + t] != (first + 5) * 3 + 100000 + 400000) {
            printf("    tile of %u, thread %u: %u %u %u %u %u\n", n, t, base[t], base[256 + t], base[512 + t], base[768 + t],
                   base[1024 + t]);
            return false;
        }
    }
    (void)h;
    return true;
}
ST_TEST(tiles_of_several_warps) {
    unsigned *d, h[15 * 256];
    cudaMalloc(&d, sizeof h);
    for (int mem = 0; mem < 2; mem++) {   /* compute capability 9.0: block_tile_memory optional */
        cudaMemset(d, 0, sizeof h);
        big_tiles<<<2, 256>>>(d, mem);
        ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
        ST_CHECKF(big_tiles_right(h, 64, h) && big_tiles_right(h, 128, h + 5 * 256) && big_tiles_right(h, 256, h + 10 * 256),
                  "with block_tile_memory: %d", mem);
    }
    cudaFree(d);
}
/* the failing cases' kernels: a tile that does not divide the block; half
   a tile at its sync, the other half at __syncthreads() */
__global__ void big_tile_of(unsigned *out) {
    __shared__ unsigned seen[256];
    big_tile<64>(out, cg::this_thread_block(), seen);
}
__global__ void big_tile_split(unsigned *out) {
    cg::thread_block_tile<64> tile = cg::tiled_partition<64>(cg::this_thread_block());
    if (threadIdx.x < 32) tile.sync();
    else __syncthreads();
    out[threadIdx.x] = 1;
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
    } else if (!strcmp(c, "tile_needs_memory")) {   /* run on a 7.5 device (GPUDL_EMU_DEVICE=7.5) */
        unsigned *d;
        cudaMalloc(&d, 15 * 256 * sizeof(unsigned));
        big_tiles<<<1, 256>>>(d, 1);   /* the control: with block_tile_memory */
        ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
        big_tiles<<<1, 256>>>(d, 0);
        cudaError_t e = cudaDeviceSynchronize();
        ST_CHECKF(e == cudaErrorLaunchFailure, "a tile of 64 threads without block_tile_memory on 7.5: %s", cudaGetErrorName(e));
    } else if (!strcmp(c, "tile_not_dividing")) {
        unsigned *d;
        cudaMalloc(&d, 15 * 256 * sizeof(unsigned));
        big_tile_of<<<1, 128>>>(d);   /* the control */
        ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
        big_tile_of<<<1, 96>>>(d);
        cudaError_t e = cudaDeviceSynchronize();
        ST_CHECKF(e == cudaErrorLaunchFailure, "a tile of 64 threads in a block of 96: %s", cudaGetErrorName(e));
    } else if (!strcmp(c, "tile_split_sync")) {
        unsigned *d;
        cudaMalloc(&d, 256 * sizeof(unsigned));
        big_tile_split<<<1, 64>>>(d);
        cudaError_t e = cudaDeviceSynchronize();
        ST_CHECKF(e == cudaErrorLaunchFailure, "half a tile at its sync, half at __syncthreads(): %s", cudaGetErrorName(e));
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
    ST_RUN(tiles_of_several_warps);
    return st_summary();
}
