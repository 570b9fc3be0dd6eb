/* nvcc --default-stream per-thread (Programming Guide, "Per-thread Default
   Stream"): in this translation unit the stream handle 0 and the
   synchronous calls mean the calling host thread's own stream, which does
   not synchronise with other host threads' default streams. Built by
   part_streams.sh with --default-stream per-thread. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <thread>
#include "../selftest.h"

#define CK(x) ST_CHECKF((x) == cudaSuccess, "%s -> %s", #x, cudaGetErrorName(x))

static void CUDART_CB set_flag(void *p) { __atomic_store_n((int *)p, 1, __ATOMIC_SEQ_CST); }
static int flag(int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

ST_TEST(built_per_thread) {
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
    ST_CHECKF(0, "not built with --default-stream per-thread");
#endif
}

ST_TEST(stream_zero_is_this_threads_stream) {
    int mine = 0;
    CK(cudaLaunchHostFunc(0, set_flag, &mine));   /* stream 0: the per-thread stream */
    cudaError_t other = cudaErrorUnknown;
    int theirs = 0;
    std::thread([&] {
        other = cudaLaunchHostFunc(0, set_flag, &theirs);
        if (!other) other = cudaStreamSynchronize(0);
    }).join();
    CK(other);
    ST_CHECK(flag(&theirs) == 1);
    ST_CHECKF(flag(&mine) == 0, "another thread's stream 0 covered this thread's work");
    CK(cudaStreamSynchronize(cudaStreamPerThread));   /* the same stream as 0 here */
    ST_CHECK(flag(&mine) == 1);
}

ST_TEST(synchronous_calls_use_the_per_thread_stream) {
    int *d, h[4] = {0, 0, 0, 0}, v[4] = {1, 2, 3, 4};
    CK(cudaMalloc(&d, sizeof h));
    CK(cudaMemcpy(d, v, sizeof v, cudaMemcpyHostToDevice));
    int mine = 0;
    CK(cudaLaunchHostFunc(cudaStreamPerThread, set_flag, &mine));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));   /* after this thread's stream's earlier work */
    ST_CHECK(flag(&mine) == 1 && h[3] == 4);
    CK(cudaMemsetAsync(d, 0, sizeof h));   /* stream 0 */
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 0 && h[3] == 0);
    cudaFree(d);
}

__global__ void set_one(int *p) { *p = 1; }

/* a <<<>>> launch without a stream goes on the per-thread stream too: the
   legacy stream, synchronised from another thread, does not run it */
ST_TEST(launch_without_stream_uses_the_per_thread_stream) {
    int *d, h = -1;
    cudaStream_t side;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CK(cudaMalloc(&d, sizeof(int)));
    CK(cudaMemset(d, 0, sizeof(int)));
    CK(cudaStreamSynchronize(0));   /* the memset has run */
    set_one<<<1, 1>>>(d);
    CK(cudaGetLastError());
    cudaError_t other = cudaErrorUnknown;
    std::thread([&] { other = cudaStreamSynchronize(cudaStreamLegacy); }).join();
    CK(other);
    CK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, side));   /* ordered after neither */
    CK(cudaStreamSynchronize(side));
    ST_CHECKF(h == 0, "the launch ran with the legacy stream (h = %d)", h);
    CK(cudaStreamSynchronize(0));
    CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h == 1);
    cudaFree(d);
    cudaStreamDestroy(side);
}

int main() {
    ST_RUN(built_per_thread);
    ST_RUN(launch_without_stream_uses_the_per_thread_stream);
    ST_RUN(stream_zero_is_this_threads_stream);
    ST_RUN(synchronous_calls_use_the_per_thread_stream);
    return st_summary();
}
