/* async_host.cu - host functions in stream order and device time, in the
   cuda-samples style (simpleCallback, simpleHyperQ, clock): a host
   function enqueued behind a kernel and a copy runs after both and before
   the stream's synchronize returns, and a kernel that spins for a number
   of clock64() ticks takes about that many ticks at the clock rate the
   device reports, timed with events. Programming Guide, "Host Functions
   (Callbacks)" and "Time Function"; Runtime API, cudaLaunchHostFunc.
   (On a GPU the host function also fires while the host waits on nothing
   of CUDA's; the emulated device runs stream work at the host's waits, so
   a program that spins on its own flag for a callback hangs there: not
   emulated, issue 37.)
   Build: nvcc async_host.cu */
#include <cuda_runtime.h>
#include <atomic>
#include <stdio.h>
#include "sample_helpers.h"

__global__ void add_one(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}

__global__ void spin(long long ticks, long long *took) {
    long long t0 = clock64(), t;
    do { t = clock64(); } while (t - t0 < ticks);
    *took = t - t0;
}

static std::atomic<int> fired(0);
static int *host_copy, copied_when_fired = -1, copy_len = 0;
static void CUDART_CB on_done(void *data) {   /* reads the copy enqueued before it: done by now */
    int s = 0;
    for (int i = 0; i < copy_len; i++) s += host_copy[i];
    copied_when_fired = s;
    fired.store(*(int *)data);
}

int main(void) {
    int ok = 1, tag = 42, n = 4096, *d, *h;
    cudaStream_t s;
    checkErrors(cudaStreamCreate(&s));
    checkErrors(cudaMalloc(&d, n * sizeof(int)));
    checkErrors(cudaMallocHost(&h, n * sizeof(int)));
    host_copy = h;
    copy_len = n;
    checkErrors(cudaMemsetAsync(d, 0, n * sizeof(int), s));
    add_one<<<(n + 255) / 256, 256, 0, s>>>(d, n);
    checkErrors(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    checkErrors(cudaLaunchHostFunc(s, on_done, &tag));
    checkErrors(cudaStreamSynchronize(s));   /* the host function has run when this returns */
    int sum = 0;
    for (int i = 0; i < n; i++) sum += h[i];
    printf("host function ran in stream order: %s; after the copy before it: %s\n", fired.load() == tag ? "yes" : "NO",
           sum == n && copied_when_fired == n ? "yes" : "NO");
    ok &= fired.load() == tag && sum == n && copied_when_fired == n;

    /* clock64 against the reported clock rate */
    int khz = 0;
    checkErrors(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    long long ticks = (long long)khz * 20;   /* 20 ms of ticks */
    long long *d_took, took = 0;
    checkErrors(cudaMalloc(&d_took, sizeof(long long)));
    cudaEvent_t e0, e1;
    checkErrors(cudaEventCreate(&e0));
    checkErrors(cudaEventCreate(&e1));
    checkErrors(cudaEventRecord(e0, s));
    spin<<<1, 1, 0, s>>>(ticks, d_took);
    checkErrors(cudaEventRecord(e1, s));
    checkErrors(cudaEventSynchronize(e1));
    float ms = 0;
    checkErrors(cudaEventElapsedTime(&ms, e0, e1));
    checkErrors(cudaMemcpy(&took, d_took, sizeof took, cudaMemcpyDeviceToHost));
    printf("spin of %lld ticks at %d kHz: %.1f ms (want about 20)\n", took, khz, ms);
    ok &= took >= ticks && ms > 10.0f && ms < 2000.0f;
    cudaFree(d); cudaFree(d_took); cudaFreeHost(h);
    cudaEventDestroy(e0); cudaEventDestroy(e1); cudaStreamDestroy(s);
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
