/* launch_rules.cu - occupancy, cooperative launches, clusters, warp votes by
   disjoint lane groups, device clocks and synchronous copies from pageable
   memory, each against the CUDA documentation (the rule's source is named
   at each test). Run plainly and under CUEMU_SCHEDULE=shuffle
   (part_runtime2.sh). */
#include <cuda_runtime.h>
#include <chrono>
#include "selftest.h"

__global__ void big_static(int *out) {
    __shared__ char buf[40 * 1024];
    buf[threadIdx.x] = (char)threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0 && out) out[blockIdx.x] = buf[5];
}
__global__ void no_shared(int *out) {
    if (threadIdx.x == 0 && out) out[blockIdx.x] = 1;
}
__global__ void dyn_shared(int *out) {
    extern __shared__ char dbuf[];
    dbuf[threadIdx.x] = 1;
    __syncthreads();
    if (threadIdx.x == 0 && out) out[blockIdx.x] = dbuf[0];
}

static int sms() {
    int n = 0;
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0);
    return n;
}

/* Runtime API, cudaFuncGetAttributes: sharedSizeBytes is the static shared
   memory; cudaOccupancyMaxActiveBlocksPerMultiprocessor counts it: a block
   of 40 KiB static shared memory cannot reside 8 times in an SM's shared
   memory (the Programming Guide's Hardware Multithreading). */
ST_TEST(occupancy_counts_static_shared) {
    cudaFuncAttributes a;
    ST_CHECK(cudaFuncGetAttributes(&a, big_static) == cudaSuccess);
    ST_CHECKF(a.sharedSizeBytes == 40 * 1024, "sharedSizeBytes %zu", a.sharedSizeBytes);
    cudaDeviceProp p;
    ST_CHECK(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
    int n = -1;
    ST_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, big_static, 256, 0) == cudaSuccess);
    ST_CHECKF(n >= 1 && (size_t)n * (40 * 1024 + p.reservedSharedMemPerBlock) <= p.sharedMemPerMultiprocessor,
              "%d blocks of 40 KiB static shared memory per SM (%zu bytes per SM)", n, p.sharedMemPerMultiprocessor);
    ST_CHECKF(n == (int)(p.sharedMemPerMultiprocessor / (40 * 1024 + p.reservedSharedMemPerBlock)), "%d", n);
    /* with dynamic shared memory on top */
    int m = -1;
    ST_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&m, big_static, 256, 8 * 1024) == cudaSuccess);
    ST_CHECKF(m == (int)(p.sharedMemPerMultiprocessor / (48 * 1024 + p.reservedSharedMemPerBlock)), "%d", m);
}
/* the control: no shared memory, 256 threads: threads limit it (2048 / 256) */
ST_TEST(occupancy_control_threads_limit) {
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    int n = -1;
    ST_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, no_shared, 256, 0) == cudaSuccess);
    ST_CHECKF(n == p.maxThreadsPerMultiProcessor / 256, "%d", n);
    cudaFuncAttributes a;
    ST_CHECK(cudaFuncGetAttributes(&a, no_shared) == cudaSuccess);
    ST_CHECK(a.sharedSizeBytes == 0);
}

/* Runtime API, cudaLaunchCooperativeKernel: more blocks than
   cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiprocessors is
   cudaErrorCooperativeLaunchTooLarge; exactly that many runs. */
ST_TEST(cooperative_too_large_static_shared) {
    int n = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, big_static, 256, 0);
    int *out = nullptr;
    void *args[] = {&out};
    cudaError_t e = cudaLaunchCooperativeKernel((void *)big_static, dim3(sms() * n + 1), dim3(256), args, 0, 0);
    ST_CHECKF(e == cudaErrorCooperativeLaunchTooLarge, "%s", cudaGetErrorName(e));
    cudaGetLastError();
    e = cudaLaunchCooperativeKernel((void *)big_static, dim3(sms() * n), dim3(256), args, 0, 0);
    ST_CHECKF(e == cudaSuccess, "control: %s", cudaGetErrorName(e));
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}
ST_TEST(cooperative_too_large_dynamic_shared) {
    int n = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, dyn_shared, 128, 40 * 1024);
    int *out = nullptr;
    void *args[] = {&out};
    cudaError_t e = cudaLaunchCooperativeKernel((void *)dyn_shared, dim3(sms() * n + 1), dim3(128), args, 40 * 1024, 0);
    ST_CHECKF(e == cudaErrorCooperativeLaunchTooLarge, "%s", cudaGetErrorName(e));
    cudaGetLastError();
    e = cudaLaunchCooperativeKernel((void *)dyn_shared, dim3(sms() * n), dim3(128), args, 40 * 1024, 0);
    ST_CHECKF(e == cudaSuccess, "control: %s", cudaGetErrorName(e));
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

/* Programming Guide, Thread Block Clusters: the grid must be a multiple of
   the cluster; 8 blocks is the portable cluster size limit. */
static cudaError_t cluster_launch(unsigned grid, unsigned cx, int *out) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cx;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(32);
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, no_shared, out);
}
ST_TEST(cluster_grid_multiple) {
    int *d = nullptr;
    cudaMalloc(&d, 64 * sizeof(int));
    cudaError_t e = cluster_launch(3, 2, d);
    ST_CHECKF(e == cudaErrorInvalidClusterSize, "grid 3, cluster 2: %s", cudaGetErrorName(e));
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidClusterSize);
    e = cluster_launch(16, 16, d);
    ST_CHECKF(e == cudaErrorInvalidClusterSize, "cluster 16 without the non-portable opt-in: %s", cudaGetErrorName(e));
    cudaGetLastError();
    e = cluster_launch(4, 2, d);   /* the control */
    ST_CHECKF(e == cudaSuccess, "grid 4, cluster 2: %s", cudaGetErrorName(e));
    e = cluster_launch(16, 8, d);
    ST_CHECKF(e == cudaSuccess, "grid 16, cluster 8: %s", cudaGetErrorName(e));
    ST_CHECK(cudaFuncSetAttribute(no_shared, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess);
    e = cluster_launch(16, 16, d);
    ST_CHECKF(e == cudaSuccess, "cluster 16 with the opt-in: %s", cudaGetErrorName(e));
    /* the C form */
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(5); cfg.blockDim = dim3(32); cfg.attrs = at; cfg.numAttrs = 1;
    void *args[] = {&d};
    e = cudaLaunchKernelExC(&cfg, (const void *)no_shared, args);
    ST_CHECKF(e == cudaErrorInvalidClusterSize, "cudaLaunchKernelExC: %s", cudaGetErrorName(e));
    cudaGetLastError();
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(d);
}

/* Programming Guide, Warp Vote Functions: odd and even lanes voting with
   disjoint masks (each lane in its own mask) is valid. */
__global__ void disjoint_ballots(unsigned *out) {
    unsigned lane = threadIdx.x & 31;
    unsigned r;
    if (lane & 1) r = __ballot_sync(0xAAAAAAAAu, lane % 3 == 0);
    else r = __ballot_sync(0x55555555u, lane % 4 == 0);
    __syncwarp();
    unsigned s = (lane & 1) ? __shfl_sync(0xAAAAAAAAu, lane, 1) : __any_sync(0x55555555u, lane == 30);
    out[threadIdx.x] = r;
    out[64 + threadIdx.x] = s;
}
ST_TEST(disjoint_mask_ballots) {
    unsigned *d, h[128];
    cudaMalloc(&d, sizeof h);
    disjoint_ballots<<<1, 64>>>(d);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    unsigned odd = 0, even = 0;
    for (unsigned l = 0; l < 32; l++) {
        if ((l & 1) && l % 3 == 0) odd |= 1u << l;
        if (!(l & 1) && l % 4 == 0) even |= 1u << l;
    }
    for (unsigned t = 0; t < 64; t++) {
        unsigned l = t & 31;
        ST_CHECKF(h[t] == ((l & 1) ? odd : even), "thread %u: 0x%08x", t, h[t]);
        ST_CHECKF(h[64 + t] == ((l & 1) ? 1u : 1u), "thread %u: %u", t, h[64 + t]);
    }
    cudaFree(d);
}

/* Device clocks: clock() and clock64() count the same cycles, at the rate
   the device reports (cudaDevAttrClockRate, kHz): a kernel that waits N
   cycles takes about N / rate seconds. */
__global__ void spin_clocks(long long cycles, long long *out) {
    long long c0 = clock64();
    clock_t d0 = clock();
    while (clock64() - c0 < cycles) {
    }
    clock_t d1 = clock();
    long long c1 = clock64();
    out[0] = c1 - c0;
    out[1] = (long long)(unsigned)(d1 - d0);   /* clock() is a 32-bit counter: it may wrap */
}
ST_TEST(device_clock_rate) {
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    long long *d, h[2];
    cudaMalloc(&d, sizeof h);
    long long cycles = (long long)khz * 20;   /* 20 ms */
    auto t0 = std::chrono::steady_clock::now();
    spin_clocks<<<1, 1>>>(cycles, d);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ST_CHECKF(ms >= 15 && ms < 2000, "%lld cycles at %d kHz took %.1f ms (want about 20)", cycles, khz, ms);
    ST_CHECKF(h[0] >= cycles, "clock64: %lld", h[0]);
    ST_CHECKF(h[1] >= cycles * 9 / 10 && h[1] <= h[0] + cycles / 10, "clock() counted %lld while clock64() counted %lld",
              h[1], h[0]);
    cudaFree(d);
}

/* Runtime API, API synchronization behavior (Memcpy, synchronous): a copy
   from pageable host memory is done (staged) when it returns; programs see
   it complete from another stream, as StreamPriorities does. */
__global__ void read_first(const int *src, int *dst) { dst[threadIdx.x] = src[threadIdx.x]; }
ST_TEST(pageable_memcpy_complete_for_other_streams) {
    int *a, *b, h[32], r[32];
    cudaMalloc(&a, sizeof h);
    cudaMalloc(&b, sizeof h);
    for (int i = 0; i < 32; i++) h[i] = 0;
    cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    for (int i = 0; i < 32; i++) h[i] = i + 7;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    ST_CHECK(cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice) == cudaSuccess);
    read_first<<<1, 32, 0, s>>>(a, b);
    ST_CHECK(cudaMemcpyAsync(r, b, sizeof r, cudaMemcpyDeviceToHost, s) == cudaSuccess);
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    for (int i = 0; i < 32; i++) ST_CHECKF(r[i] == i + 7, "r[%d] = %d", i, r[i]);
    cudaStreamDestroy(s);
    cudaFree(a);
    cudaFree(b);
}

int main() {
    ST_RUN(occupancy_counts_static_shared);
    ST_RUN(occupancy_control_threads_limit);
    ST_RUN(cooperative_too_large_static_shared);
    ST_RUN(cooperative_too_large_dynamic_shared);
    ST_RUN(cluster_grid_multiple);
    ST_RUN(disjoint_mask_ballots);
    ST_RUN(device_clock_rate);
    ST_RUN(pageable_memcpy_complete_for_other_streams);
    return st_summary();
}
