/* Streams and memory (issue 24, findings 8 and 9): cudaStreamPerThread is
   one stream per host thread (Programming Guide, "Per-thread Default
   Stream"); cudaMallocAsync / cudaFreeAsync are stream-ordered
   (Programming Guide, "Stream Ordered Memory Allocator"); a large
   cudaMalloc reserves address space instead of taking host RAM. The
   emulated device runs queued work only when the program waits, so a
   synchronisation that does not cover some work leaves it not run: that is
   how these tests see which streams a wait covers. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include "selftest.h"

#define CK(x) ST_CHECKF((x) == cudaSuccess, "%s -> %s", #x, cudaGetErrorName(x))

static void CUDART_CB set_flag(void *p) { __atomic_store_n((int *)p, 1, __ATOMIC_SEQ_CST); }
static int flag(int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

__global__ void fill_k(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

ST_TEST(per_thread_stream_is_per_thread) {
    int mine = 0, theirs = 0;
    CK(cudaLaunchHostFunc(cudaStreamPerThread, set_flag, &mine));
    cudaError_t other = cudaErrorUnknown;
    std::thread([&] {
        /* another thread's per-thread stream: a different stream, whose
           synchronisation does not cover this thread's work */
        other = cudaLaunchHostFunc(cudaStreamPerThread, set_flag, &theirs);
        if (!other) other = cudaStreamSynchronize(cudaStreamPerThread);
    }).join();
    CK(other);
    ST_CHECKF(flag(&theirs) == 1, "the other thread's work did not run at its sync");
    ST_CHECKF(flag(&mine) == 0, "another thread's cudaStreamSynchronize(cudaStreamPerThread) ran this thread's work");
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    ST_CHECK(flag(&mine) == 1);
    unsigned flags = 7;
    CK(cudaStreamGetFlags(cudaStreamPerThread, &flags));
    ST_CHECK(flags == 0);   /* it acts as a blocking stream */
    ST_CHECK(cudaStreamDestroy(cudaStreamPerThread) == cudaErrorInvalidResourceHandle);
    cudaGetLastError();
}

ST_TEST(per_thread_stream_and_other_streams) {
    int a = 0, b = 0;
    cudaStream_t nb, blk;
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaStreamCreate(&blk));
    /* not ordered with another created stream */
    CK(cudaLaunchHostFunc(cudaStreamPerThread, set_flag, &a));
    CK(cudaLaunchHostFunc(blk, set_flag, &b));
    CK(cudaStreamSynchronize(blk));
    ST_CHECKF(flag(&b) == 1 && flag(&a) == 0, "a blocking stream's sync covered the per-thread stream's work");
    /* ... but ordered with the legacy default stream, as a blocking stream is */
    int c = 0;
    CK(cudaLaunchHostFunc(cudaStreamLegacy, set_flag, &c));
    CK(cudaStreamSynchronize(cudaStreamLegacy));
    ST_CHECKF(flag(&a) == 1 && flag(&c) == 1, "legacy work did not wait for the per-thread stream");
    /* the non-blocking stream takes part in neither */
    int d = 0, e = 0;
    CK(cudaLaunchHostFunc(cudaStreamPerThread, set_flag, &d));
    CK(cudaLaunchHostFunc(nb, set_flag, &e));
    CK(cudaStreamSynchronize(nb));
    ST_CHECK(flag(&e) == 1 && flag(&d) == 0);
    CK(cudaDeviceSynchronize());
    ST_CHECK(flag(&d) == 1);
    cudaStreamDestroy(nb);
    cudaStreamDestroy(blk);
}

ST_TEST(malloc_async_in_stream_order) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *p = nullptr, h[64];
    CK(cudaMallocAsync((void **)&p, 64 * sizeof(int), s));
    ST_CHECK(p != nullptr);
    fill_k<<<1, 64, 0, s>>>(p, 64, 42);
    CK(cudaMemcpyAsync(h, p, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaFreeAsync(p, s));   /* work queued before the free still sees the memory */
    ST_CHECK(cudaFreeAsync(p, s) == cudaErrorInvalidValue);   /* freed twice */
    cudaGetLastError();
    CK(cudaStreamSynchronize(s));
    ST_CHECK(h[0] == 42 && h[63] == 42);
    cudaPointerAttributes a;
    ST_CHECK(cudaPointerGetAttributes(&a, p) == cudaErrorInvalidValue);   /* released when the free was reached */
    cudaGetLastError();
    cudaStreamDestroy(s);
}

static size_t rss_bytes() {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, res = 0;
    if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
    fclose(f);
    return (size_t)res * 4096;
}

ST_TEST(large_allocation_reserved_not_committed) {
    size_t before = rss_bytes();
    size_t n = 20ull << 30;
    char *p = nullptr;
    cudaError_t e = cudaMalloc(&p, n);
    ST_CHECKF(e == cudaSuccess, "20 GB cudaMalloc on an 80 GB device: %s", cudaGetErrorName(e));
    if (e) {
        cudaGetLastError();
        return;
    }
    char one = 7, two = 9, back[2] = {0, 0};
    CK(cudaMemcpy(p, &one, 1, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p + n - 1, &two, 1, cudaMemcpyHostToDevice));
    CK(cudaMemset(p + n / 2, 3, 4096));
    CK(cudaMemcpy(&back[0], p, 1, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&back[1], p + n - 1, 1, cudaMemcpyDeviceToHost));
    ST_CHECK(back[0] == 7 && back[1] == 9);
    size_t after = rss_bytes();
    ST_CHECKF(after < before + (256ull << 20), "RSS grew by %zu MiB", (after - before) >> 20);
    CK(cudaFree(p));
}

/* A use after the stream-ordered free is reached faults (sticky): in a
   child process, started before this process uses the device (a sticky
   error ends a process's use of the device, as on a GPU). */
ST_TEST(use_after_free_async_faults) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        cudaStream_t s;
        int *p = nullptr;
        if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) || cudaMallocAsync((void **)&p, 64 * sizeof(int), s) ||
            cudaFreeAsync(p, s))
            _exit(2);
        fill_k<<<1, 64, 0, s>>>(p, 64, 1);
        cudaError_t e = cudaStreamSynchronize(s);
        _exit(e == cudaErrorIllegalAddress ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    ST_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a kernel after cudaFreeAsync: the child exited with %d (1: no cudaErrorIllegalAddress)", status);
}

int main() {
    ST_RUN(use_after_free_async_faults);   /* first: its child forks before this process uses the device */
    ST_RUN(per_thread_stream_is_per_thread);
    ST_RUN(per_thread_stream_and_other_streams);
    ST_RUN(malloc_async_in_stream_order);
    ST_RUN(large_allocation_reserved_not_committed);
    return st_summary();
}
