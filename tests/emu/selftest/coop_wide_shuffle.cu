/* Cooperative groups' tile shuffles move any trivially copyable type (CUDA
   C++ Programming Guide, Cooperative Groups, "Thread Block Tile"): a
   16-byte uint4 and a 12-byte struct through shfl, shfl_up, shfl_down and
   shfl_xor, on tiles of 32 and 8 threads and a coalesced group. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include "selftest.h"
namespace cg = cooperative_groups;

struct Three { int a, b, c; };

__global__ void wide(uint4 *out4, Three *out3) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
    unsigned t = threadIdx.x;
    uint4 v = make_uint4(t, t * 10, t * 100, t * 1000);
    uint4 x = warp.shfl_xor(v, 1);
    uint4 u = warp.shfl_up(v, 2);
    uint4 d = eight.shfl_down(v, 3);
    uint4 s = eight.shfl(v, 5);
    out4[t * 4 + 0] = x; out4[t * 4 + 1] = u; out4[t * 4 + 2] = d; out4[t * 4 + 3] = s;
    Three w = {(int)t, -(int)t, 7};
    out3[t] = cg::coalesced_threads().shfl(w, 4);
}

static bool same(uint4 a, unsigned t) { return a.x == t && a.y == t * 10 && a.z == t * 100 && a.w == t * 1000; }

ST_TEST(tile_shuffles_move_16_and_12_byte_values) {
    uint4 *d4; Three *d3;
    ST_CHECK(cudaMalloc(&d4, 32 * 4 * sizeof(uint4)) == cudaSuccess);
    ST_CHECK(cudaMalloc(&d3, 32 * sizeof(Three)) == cudaSuccess);
    wide<<<1, 32>>>(d4, d3);
    uint4 h4[128]; Three h3[32];
    ST_CHECK(cudaMemcpy(h4, d4, sizeof h4, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(cudaMemcpy(h3, d3, sizeof h3, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (unsigned t = 0; t < 32; t++) {
        ST_CHECKF(same(h4[t * 4 + 0], t ^ 1u), "shfl_xor at %u", t);
        ST_CHECKF(same(h4[t * 4 + 1], t >= 2 ? t - 2 : t), "shfl_up at %u", t);
        unsigned base = t & ~7u, r = t & 7u;
        ST_CHECKF(same(h4[t * 4 + 2], r + 3 < 8 ? t + 3 : t), "shfl_down at %u", t);
        ST_CHECKF(same(h4[t * 4 + 3], base + 5), "shfl at %u", t);
        ST_CHECKF(h3[t].a == 4 && h3[t].b == -4 && h3[t].c == 7, "coalesced shfl at %u", t);
    }
    cudaFree(d4); cudaFree(d3);
}

int main(void) {
    ST_RUN(tile_shuffles_move_16_and_12_byte_values);
    return st_summary();
}
