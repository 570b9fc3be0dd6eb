/* libcuxx_pipeline.cu - libcu++'s cuda::pipeline (CUDA C++ Programming
   Guide, "Asynchronous Data Copies using cuda::pipeline"): a block-wide
   two-stage pipeline streaming chunks of global memory through shared
   buffers, and a thread's own pipeline. */
#include <cooperative_groups.h>
#include <cuda/pipeline>
#include <cuda_runtime.h>
#include "selftest.h"
namespace cg = cooperative_groups;

__global__ void staged_sum(const int *g, int *out, int chunks) {
    constexpr int S = 2;
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, S> state;
    __shared__ int buf[S][128];
    cg::thread_block block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, &state);
    int sum = 0;
    for (int c = 0, f = 0; c < chunks; c++) {
        for (; f < chunks && f < c + S; f++) {
            pipe.producer_acquire();
            cuda::memcpy_async(block, buf[f % S], g + f * 128, cuda::aligned_size_t<16>(sizeof(int) * 128), pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        sum += buf[c % S][(threadIdx.x + c) % 128];
        pipe.consumer_release();
    }
    out[threadIdx.x] = sum;
}
__global__ void own_pipeline(const float *g, float *out) {
    float mine[4];
    auto pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(mine, g + 4 * threadIdx.x, sizeof mine, pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    out[threadIdx.x] = mine[0] + mine[1] + mine[2] + mine[3];
    pipe.consumer_release();
}
ST_TEST(pipeline_stages) {
    const int chunks = 5;
    int hg[chunks * 128], *g, *o, h[128];
    for (int i = 0; i < chunks * 128; i++) hg[i] = i;
    cudaMalloc(&g, sizeof hg);
    cudaMalloc(&o, sizeof h);
    cudaMemcpy(g, hg, sizeof hg, cudaMemcpyHostToDevice);
    staged_sum<<<1, 128>>>(g, o, chunks);
    ST_CHECK(cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int t = 0; t < 128; t++) {
        int want = 0;
        for (int c = 0; c < chunks; c++) want += hg[c * 128 + (t + c) % 128];
        ST_CHECKF(h[t] == want, "thread %d: %d, want %d", t, h[t], want);
    }
    float fh[128], fr[32], *fg, *fo;
    for (int i = 0; i < 128; i++) fh[i] = (float)i;
    cudaMalloc(&fg, sizeof fh);
    cudaMalloc(&fo, sizeof fr);
    cudaMemcpy(fg, fh, sizeof fh, cudaMemcpyHostToDevice);
    own_pipeline<<<1, 32>>>(fg, fo);
    ST_CHECK(cudaMemcpy(fr, fo, sizeof fr, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(fr[0] == 6.0f && fr[31] == 124.0f + 125.0f + 126.0f + 127.0f);
    cudaFree(g);
    cudaFree(o);
    cudaFree(fg);
    cudaFree(fo);
}

int main() {
    ST_RUN(pipeline_stages);
    return st_summary();
}
