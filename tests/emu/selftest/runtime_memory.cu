/* Memory, copies, streams, events, errors and counters on the emulated
   device, against the CUDA Runtime API reference and its "API
   synchronization behavior" page. An ordinary CUDA program, except for the
   counters (cuemu.h), which only the emulator has. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __CUEMU__
#include <cuemu.h>
#endif
#include "selftest.h"

#define CK(x) do { cudaError_t e_ = (x); ST_CHECKF(e_ == cudaSuccess, "%s -> %s", #x, cudaGetErrorName(e_)); } while (0)

__global__ void fill(float *x, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}

__global__ void add_one(float *x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] += 1.0f;
}

ST_TEST(fresh_device_memory_is_garbage) {
    float *d, h[16];
    CK(cudaMalloc(&d, sizeof h));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(isnan(h[0]) && isnan(h[15]), "fresh memory reads %g (the emulator fills it with NaN bytes)", h[0]);
    CK(cudaMemset(d, 0, sizeof h));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 0 && h[15] == 0);
    cudaFree(d);
}

ST_TEST(copies_check_their_pointers) {
    float *d, h[8] = {0};
    CK(cudaMalloc(&d, 8 * sizeof(float)));
    /* past the end of the allocation */
    ST_CHECK(cudaMemcpy(d, h, 9 * sizeof(float), cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    ST_CHECK(cudaMemcpy(h, d + 4, 5 * sizeof(float), cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
    /* host memory where device memory is expected, and the other way round */
    float other[8];
    ST_CHECK(cudaMemcpy(other, h, sizeof h, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    ST_CHECK(cudaMemcpy(d, d, sizeof h, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    ST_CHECK(cudaMemset(h, 0, sizeof h) == cudaErrorInvalidValue);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    ST_CHECK(cudaGetLastError() == cudaSuccess);
    /* a freed pointer */
    CK(cudaFree(d));
    ST_CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    ST_CHECK(cudaFree(d) == cudaErrorInvalidValue);   /* double free */
    ST_CHECK(cudaMemcpy(d, h, sizeof h, (cudaMemcpyKind)7) == cudaErrorInvalidMemcpyDirection);
    cudaGetLastError();
}

ST_TEST(cudaMemcpyDefault_infers_the_direction) {
    float *d, h[4] = {1, 2, 3, 4}, back[4];
    CK(cudaMalloc(&d, sizeof h));
    CK(cudaMemcpy(d, h, sizeof h, cudaMemcpyDefault));
    CK(cudaMemcpy(back, d, sizeof h, cudaMemcpyDefault));
    ST_CHECK(back[3] == 4);
    float *d2;
    CK(cudaMalloc(&d2, sizeof h));
    CK(cudaMemcpy(d2, d, sizeof h, cudaMemcpyDefault));
    CK(cudaMemcpy(back, d2, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(back[0] == 1);
    cudaFree(d);
    cudaFree(d2);
}

/* Work on a stream runs only when the program waits: a host read of pinned
   memory right after an asynchronous copy sees the old contents. */
ST_TEST(reading_before_synchronizing_is_stale) {
    const int n = 1024;
    float *d, *pinned;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMallocHost(&pinned, n * sizeof(float)));
    for (int i = 0; i < n; i++) pinned[i] = -1.0f;
    fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 5.0f);
    CK(cudaMemcpyAsync(pinned, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    ST_CHECKF(pinned[0] == -1.0f, "the asynchronous copy had already run: %g", pinned[0]);
    CK(cudaStreamSynchronize(s));
    ST_CHECK(pinned[0] == 5.0f && pinned[n - 1] == 5.0f);
    /* into pageable memory the copy is synchronous */
    float *pageable = (float *)malloc(n * sizeof(float));
    add_one<<<4, 256, 0, s>>>(d, n);
    CK(cudaMemcpyAsync(pageable, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    ST_CHECK(pageable[7] == 6.0f);
    /* from pinned memory an asynchronous copy reads the buffer when it runs */
    for (int i = 0; i < n; i++) pinned[i] = 1.0f;
    CK(cudaMemcpyAsync(d, pinned, n * sizeof(float), cudaMemcpyHostToDevice, s));
    for (int i = 0; i < n; i++) pinned[i] = 2.0f;   /* a race on a GPU; here the later value wins */
    CK(cudaMemcpy(pageable, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    ST_CHECK(pageable[0] == 2.0f);
    /* from pageable memory the data are staged at the call */
    for (int i = 0; i < n; i++) pageable[i] = 3.0f;
    CK(cudaMemcpyAsync(d, pageable, n * sizeof(float), cudaMemcpyHostToDevice, s));
    for (int i = 0; i < n; i++) pageable[i] = 4.0f;
    CK(cudaMemcpy(pinned, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    ST_CHECK(pinned[0] == 3.0f);
    free(pageable);
    cudaFreeHost(pinned);
    cudaFree(d);
    cudaStreamDestroy(s);
}

/* A kernel can write pinned host memory directly (unified addressing); the
   host sees it after synchronizing. */
ST_TEST(kernels_write_pinned_memory) {
    float *pinned, *dp;
    CK(cudaHostAlloc(&pinned, 64 * sizeof(float), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&dp, pinned, 0));
    for (int i = 0; i < 64; i++) pinned[i] = 0;
    fill<<<1, 64>>>(dp, 64, 9.0f);
    ST_CHECK(pinned[5] == 0.0f);
    CK(cudaDeviceSynchronize());
    ST_CHECK(pinned[5] == 9.0f);
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, pinned));
    ST_CHECK(a.type == cudaMemoryTypeHost);
    int local;
    CK(cudaPointerGetAttributes(&a, &local));
    ST_CHECK(a.type == cudaMemoryTypeUnregistered);
    cudaFreeHost(pinned);
}

ST_TEST(managed_memory) {
    float *m;
    CK(cudaMallocManaged(&m, 100 * sizeof(float)));
    for (int i = 0; i < 100; i++) m[i] = (float)i;
    add_one<<<1, 32>>>(m, 100);
    CK(cudaDeviceSynchronize());
    ST_CHECK(m[0] == 1.0f && m[99] == 100.0f);
    cudaFree(m);
}

ST_TEST(two_dimensional_copies) {
    const int w = 5, hgt = 3;
    float src[hgt][8], back[hgt][w];
    for (int r = 0; r < hgt; r++) for (int c = 0; c < 8; c++) src[r][c] = r * 10 + c;
    float *d;
    size_t pitch;
    CK(cudaMallocPitch(&d, &pitch, w * sizeof(float), hgt));
    ST_CHECK(pitch >= w * sizeof(float) && pitch % 256 == 0);
    CK(cudaMemcpy2D(d, pitch, src, 8 * sizeof(float), w * sizeof(float), hgt, cudaMemcpyHostToDevice));
    CK(cudaMemcpy2D(back, w * sizeof(float), d, pitch, w * sizeof(float), hgt, cudaMemcpyDeviceToHost));
    ST_CHECK(back[2][4] == 24 && back[1][0] == 10);
    cudaFree(d);
}

ST_TEST(streams_and_events) {
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreate(&b));
    unsigned flags = 9;
    CK(cudaStreamGetFlags(a, &flags));
    ST_CHECK(flags == cudaStreamNonBlocking);
    cudaEvent_t e0, e1, nt;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));
    float ms = -1;
    /* never recorded: query and synchronize succeed; elapsed time is an error */
    CK(cudaEventQuery(e0));
    CK(cudaEventSynchronize(e0));
    ST_CHECK(cudaEventElapsedTime(&ms, e0, e1) == cudaErrorInvalidResourceHandle);
    float *d;
    CK(cudaMalloc(&d, 4096 * sizeof(float)));
    CK(cudaEventRecord(e0, a));
    fill<<<16, 256, 0, a>>>(d, 4096, 1.0f);
    CK(cudaEventRecord(e1, a));
    CK(cudaEventRecord(nt, a));
    CK(cudaStreamWaitEvent(b, e1, 0));
    add_one<<<16, 256, 0, b>>>(d, 4096);
    /* not run yet: a query says so, and records the error as the last error */
    cudaGetLastError();
    ST_CHECK(cudaEventQuery(e1) == cudaErrorNotReady);
    ST_CHECK(cudaPeekAtLastError() == cudaErrorNotReady);
    ST_CHECK(cudaGetLastError() == cudaErrorNotReady);
    ST_CHECK(cudaGetLastError() == cudaSuccess);
    /* a polling loop terminates */
    int polls = 0;
    while (cudaStreamQuery(b) == cudaErrorNotReady && polls < 100) polls++;
    ST_CHECK(polls < 100);
    cudaGetLastError();
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ST_CHECK(ms >= 0);
    ST_CHECK(cudaEventElapsedTime(&ms, e0, nt) == cudaErrorInvalidResourceHandle);   /* timing disabled */
    float h;
    CK(cudaStreamSynchronize(b));
    CK(cudaMemcpy(&h, d + 4095, 4, cudaMemcpyDeviceToHost));
    ST_CHECK(h == 2.0f);
    CK(cudaEventDestroy(e0));
    ST_CHECK(cudaEventQuery(e0) == cudaErrorInvalidResourceHandle);
    CK(cudaStreamDestroy(a));
    ST_CHECK(cudaStreamSynchronize(a) == cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    cudaEventDestroy(e1);
    cudaEventDestroy(nt);
    cudaStreamDestroy(b);
    cudaFree(d);
}

/* The legacy default stream waits for the blocking streams, not for the
   non-blocking ones: a synchronous copy after a kernel on a non-blocking
   stream races with it (here: it runs first and reads the old data). */
ST_TEST(legacy_stream_and_non_blocking_streams) {
    const int n = 256;
    float *d, h[n];
    cudaStream_t blocking, nonblocking;
    CK(cudaStreamCreate(&blocking));
    CK(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemset(d, 0, n * sizeof(float)));
    fill<<<1, n, 0, blocking>>>(d, n, 1.0f);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));   /* waits for the blocking stream */
    ST_CHECK(h[7] == 1.0f);
    fill<<<1, n, 0, nonblocking>>>(d, n, 2.0f);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));   /* does not wait for the non-blocking one */
    ST_CHECKF(h[7] == 1.0f, "the copy saw the non-blocking stream's kernel (%g): no race shown", h[7]);
    CK(cudaStreamSynchronize(nonblocking));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[7] == 2.0f);
    /* an event orders two non-blocking streams */
    cudaStream_t other;
    cudaEvent_t done;
    CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    fill<<<1, n, 0, nonblocking>>>(d, n, 3.0f);
    CK(cudaEventRecord(done, nonblocking));
    CK(cudaStreamWaitEvent(other, done, 0));
    add_one<<<1, n, 0, other>>>(d, n);
    CK(cudaStreamSynchronize(other));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(h[7] == 4.0f, "%g", h[7]);
    cudaEventDestroy(done);
    cudaStreamDestroy(other);
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(nonblocking);
    cudaFree(d);
}

static void CUDART_CB host_fn(void *p) { *(int *)p += 1; }

ST_TEST(host_functions_run_in_stream_order) {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    int counter = 0;
    CK(cudaLaunchHostFunc(s, host_fn, &counter));
    ST_CHECK(counter == 0);
    CK(cudaStreamSynchronize(s));
    ST_CHECK(counter == 1);
    cudaStreamDestroy(s);
}

ST_TEST(out_of_memory_is_reported_and_recoverable) {
    size_t freeb = 0, total = 0;
    CK(cudaMemGetInfo(&freeb, &total));
    ST_CHECK(freeb <= total && total > 0);
    void *p = (void *)1;
    ST_CHECK(cudaMalloc(&p, total + 1) == cudaErrorMemoryAllocation);
    ST_CHECK(p == NULL);
    ST_CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    ST_CHECK(cudaGetLastError() == cudaSuccess);   /* not sticky */
    CK(cudaMalloc(&p, 1024));
    CK(cudaFree(p));
}

ST_TEST(device_properties) {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    ST_CHECK(n >= 1);
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    int major = 0, clock = 0, sms = 0;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CK(cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, 0));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    ST_CHECK(major == p.major && sms == p.multiProcessorCount && clock > 0 && p.warpSize == 32);
    ST_CHECK(cudaGetDeviceProperties(&p, n) == cudaErrorInvalidDevice);
    ST_CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice);
    cudaGetLastError();
    int rt = 0, drv = 0;
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    ST_CHECK(rt == 13000 && drv >= rt);
    ST_CHECK(strcmp(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress") == 0);
    ST_CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
}

#ifdef __CUEMU__
ST_TEST(counters) {
    float *d, h[256];
    CK(cudaMalloc(&d, sizeof h));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cuemu_counters_reset();
    fill<<<1, 256, 0, s>>>(d, 256, 1.0f);
    add_one<<<1, 256, 0, s>>>(d, 256);
    CK(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, s));   /* pageable: waits */
    CK(cudaMemcpyAsync(d, h, sizeof h, cudaMemcpyHostToDevice, s));   /* staged: no wait */
    cuemu_counters c;
    cuemu_counters_get(&c);
    ST_CHECKF(c.kernel_launches == 2 && c.host_waits == 1 && c.memcpy_calls == 2 && c.mallocs == 0 &&
              c.d2h_bytes == sizeof h && c.h2d_bytes == sizeof h,
              "launches %llu waits %llu copies %llu", (unsigned long long)c.kernel_launches,
              (unsigned long long)c.host_waits, (unsigned long long)c.memcpy_calls);
    CK(cudaStreamSynchronize(s));
    CK(cudaFree(d));
    cuemu_counters_get(&c);
    ST_CHECK(c.host_waits == 2 && c.frees == 1);
    fill<<<1, 2048, 0, s>>>(d, 1, 0);   /* refused launches are not counted */
    cudaGetLastError();
    cuemu_counters_get(&c);
    ST_CHECK(c.kernel_launches == 2);
    cudaStreamDestroy(s);
}
#endif

int main(void) {
    ST_RUN(fresh_device_memory_is_garbage);
    ST_RUN(copies_check_their_pointers);
    ST_RUN(cudaMemcpyDefault_infers_the_direction);
    ST_RUN(reading_before_synchronizing_is_stale);
    ST_RUN(kernels_write_pinned_memory);
    ST_RUN(managed_memory);
    ST_RUN(two_dimensional_copies);
    ST_RUN(streams_and_events);
    ST_RUN(legacy_stream_and_non_blocking_streams);
    ST_RUN(host_functions_run_in_stream_order);
    ST_RUN(out_of_memory_is_reported_and_recoverable);
    ST_RUN(device_properties);
#ifdef __CUEMU__
    ST_RUN(counters);
#endif
    return st_summary();
}
