/* libcuxx_barrier.cu - libcu++'s cuda::barrier and cuda::memcpy_async bound
   to it (CUDA C++ Programming Guide, "Asynchronous Barrier", "Asynchronous
   Data Copies"): phases, split arrive/wait, arrive_and_drop, the completion
   function, a block-wide asynchronous copy. CUEMU_ST_CASE=short: a phase
   that expects more arrivals than come is an error, not a hang. */
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda_runtime.h>
#include <utility>
#include "selftest.h"
namespace cg = cooperative_groups;

struct Count {
    int *n;
    __device__ void operator()() noexcept { (*n)++; }
};

__global__ void phases(const int *g, int *out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ cuda::barrier<cuda::thread_scope_block, Count> counted;
    __shared__ int completions, stage[128], data[256];
    unsigned t = threadIdx.x;
    cg::thread_block block = cg::this_thread_block();
    if (t == 0) {
        completions = 0;
        init(&bar, block.size());
        init(&counted, block.size(), Count{&completions});
    }
    block.sync();
    /* three phases: each thread's write is seen by its neighbour after the phase */
    int acc = 0;
    for (int r = 0; r < 3; r++) {
        stage[t] = (int)t * 10 + r;
        counted.arrive_and_wait();
        acc += stage[(t + 1) % 128] - (int)((t + 1) % 128) * 10;
        counted.arrive_and_wait();
    }
    out[t] = acc;   /* 0 + 1 + 2 */
    /* split phase: arrive, then wait later */
    stage[t] = (int)t + 1000;
    auto token = bar.arrive();
    int local = (int)t * 2;
    bar.wait(std::move(token));
    out[128 + t] = stage[127 - t] + local;
    bar.arrive_and_wait();
    /* an asynchronous copy of 256 ints bound to the barrier, done when the phase completes */
    cuda::memcpy_async(block, data, g, sizeof(int) * 256, bar);
    bar.arrive_and_wait();
    out[256 + t] = data[2 * t] + data[2 * t + 1];
    /* half the threads drop out: the next phases expect 64 */
    if (t >= 64) {
        bar.arrive_and_drop();
        return;
    }
    bar.arrive_and_wait();
    bar.arrive_and_wait();
    if (t == 0) out[384] = completions;
}
ST_TEST(barrier_phases_and_copies) {
    int hg[256], *g, *o, h[385];
    for (int i = 0; i < 256; i++) hg[i] = i * 3;
    cudaMalloc(&g, sizeof hg);
    cudaMalloc(&o, sizeof h);
    cudaMemcpy(g, hg, sizeof hg, cudaMemcpyHostToDevice);
    phases<<<2, 128>>>(g, o);
    ST_CHECK(cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int t = 0; t < 128; t++) {
        ST_CHECKF(h[t] == 3, "thread %d: phases %d", t, h[t]);
        ST_CHECKF(h[128 + t] == 127 - t + 1000 + 2 * t, "thread %d: split %d", t, h[128 + t]);
        ST_CHECKF(h[256 + t] == hg[2 * t] + hg[2 * t + 1], "thread %d: copy %d", t, h[256 + t]);
    }
    ST_CHECKF(h[384] == 6, "completion function ran %d times", h[384]);
    cudaFree(g);
    cudaFree(o);
}

__global__ void short_by_one() {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x + 1);
    __syncthreads();
    bar.arrive_and_wait();
}
ST_TEST(barrier_short_of_arrivals) {
    short_by_one<<<1, 32>>>();
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e == cudaErrorLaunchFailure, "%s", cudaGetErrorName(e));
}

int main() {
    const char *c = getenv("CUEMU_ST_CASE");
    if (c && !strcmp(c, "short")) ST_RUN(barrier_short_of_arrivals);
    else ST_RUN(barrier_phases_and_copies);
    return st_summary();
}
