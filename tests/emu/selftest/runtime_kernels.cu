/* Kernels on the emulated device: the answers the CUDA C++ Programming Guide
   gives for indexing, barriers, shared memory, warp intrinsics, atomics,
   cooperative groups, __constant__ / __device__ variables and launches.
   An ordinary CUDA program: it builds with nvcc too. */
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "selftest.h"

namespace cg = cooperative_groups;

#define CK(x) ST_CHECKF((x) == cudaSuccess, "%s -> %s", #x, cudaGetErrorName(x))

/* >>indexing */
__global__ void index3d(int *out) {
    int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int g = bx * (blockDim.x * blockDim.y * blockDim.z) + tx;
    out[g] = (int)(threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z + 1000 * blockIdx.x + 10000 * blockIdx.y +
                   100000 * blockIdx.z);
}

ST_TEST(indices_3d) {
    dim3 grid(3, 2, 2), block(4, 3, 2);
    int n = 3 * 2 * 2 * 4 * 3 * 2;
    int *d, *h = (int *)malloc(n * sizeof(int));
    CK(cudaMalloc(&d, n * sizeof(int)));
    index3d<<<grid, block>>>(d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int bz = 0; bz < 2; bz++) for (int by = 0; by < 2; by++) for (int bx = 0; bx < 3; bx++)
    for (int tz = 0; tz < 2; tz++) for (int ty = 0; ty < 3; ty++) for (int tx = 0; tx < 4; tx++) {
        int b = bx + 3 * (by + 2 * bz), t = tx + 4 * (ty + 3 * tz), g = b * 24 + t;
        if (h[g] != tx + 10 * ty + 100 * tz + 1000 * bx + 10000 * by + 100000 * bz) bad++;
    }
    ST_CHECKF(bad == 0, "%d wrong indices", bad);
    cudaFree(d);
    free(h);
}

/* >>templates and launch configurations written through macros */
template <typename T, int SCALE> __global__ void scale_kernel(T *x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = x[i] * (T)SCALE;
}
template <typename D, typename S> __global__ void convert_kernel(D *d, const S *s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = (D)s[i];
}
#define THREADS 128
#define GRID_OF(n) ((n) + THREADS - 1) / THREADS, THREADS, 0, stream

ST_TEST(templates_and_macro_configs) {
    const int n = 1000;
    double *x;
    float *y;
    cudaStream_t stream;
    CK(cudaStreamCreate(&stream));
    CK(cudaMalloc(&x, n * sizeof(double)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    double h[n];
    for (int i = 0; i < n; i++) h[i] = i + 0.5;
    CK(cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice));
    scale_kernel<double, 3><<<GRID_OF(n)>>>(x, n);
    convert_kernel<float, double><<<GRID_OF(n)>>>(y, x, n);
    CK(cudaGetLastError());
    float hy[n];
    CK(cudaMemcpyAsync(hy, y, sizeof hy, cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += hy[i] != (float)(3 * (i + 0.5));
    ST_CHECKF(bad == 0, "%d wrong", bad);
    cudaFree(x);
    cudaFree(y);
    cudaStreamDestroy(stream);
}

/* >>barriers and shared memory */
__global__ void block_sum(const float *x, float *out, int n) {
    __shared__ float part[256];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

/* The same reduction without the barriers: the control case that must fail. */
__global__ void block_sum_racy(const float *x, float *out, int n) {
    __shared__ float part[256];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    part[threadIdx.x] = v;
    for (int s = blockDim.x / 2; s > 0; s >>= 1)
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

static float run_sum(void (*k)(const float *, float *, int)) {
    const int n = 5000, blocks = 7;
    float *x, *out, h[n], ho[blocks];
    for (int i = 0; i < n; i++) h[i] = 1.0f + (i % 3);
    cudaMalloc(&x, sizeof h);
    cudaMalloc(&out, sizeof ho);
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    k<<<blocks, 256>>>(x, out, n);
    cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(out);
    float s = 0;
    for (int b = 0; b < blocks; b++) s += ho[b];
    return s;
}

ST_TEST(reduction_with_barriers) {
    float want = 0;
    for (int i = 0; i < 5000; i++) want += 1.0f + (i % 3);
    ST_CHECKF(run_sum(block_sum) == want, "got %g want %g", run_sum(block_sum), want);
}

ST_TEST(reduction_missing_syncthreads_is_wrong) {
    float want = 0;
    for (int i = 0; i < 5000; i++) want += 1.0f + (i % 3);
    float got = run_sum(block_sum_racy);
    ST_CHECKF(!(got == want), "a reduction without __syncthreads gave the right answer (%g)", got);
}

/* Static shared memory belongs to one block: each block writes its own id
   and must read back only its own. */
__global__ void shared_per_block(int *out) {
    __shared__ int mine[64];
    mine[threadIdx.x] = blockIdx.x * 1000 + threadIdx.x;
    __syncthreads();
    int other = mine[(threadIdx.x + 1) % blockDim.x];
    out[blockIdx.x * blockDim.x + threadIdx.x] = other;
}

ST_TEST(shared_memory_is_per_block) {
    const int blocks = 37, threads = 64;
    int *d, h[blocks * threads];
    CK(cudaMalloc(&d, sizeof h));
    shared_per_block<<<blocks, threads>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < threads; t++) bad += h[b * threads + t] != b * 1000 + (t + 1) % threads;
    ST_CHECKF(bad == 0, "%d threads saw another block's shared memory", bad);
    cudaFree(d);
}

/* Shared memory starts undefined: the emulator fills it with all one bits. */
__global__ void read_uninit_shared(unsigned *out) {
    __shared__ unsigned s[32];
    out[threadIdx.x] = s[threadIdx.x];
}

ST_TEST(shared_memory_starts_undefined) {
    unsigned *d, h[32];
    CK(cudaMalloc(&d, sizeof h));
    read_uninit_shared<<<1, 32>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 0xffffffffu && h[31] == 0xffffffffu);
    cudaFree(d);
}

extern __shared__ float dyn[];
__global__ void dynamic_shared(const float *x, float *out, int n) {
    float *a = dyn, *b = dyn + n;   /* two arrays carved from one extern array */
    for (int i = threadIdx.x; i < n; i += blockDim.x) { a[i] = x[i]; b[i] = 2 * x[i]; }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[blockIdx.x * n + i] = a[n - 1 - i] + b[i];
}

template <typename T> __global__ void dynamic_shared_local(T *out) {
    extern __shared__ __align__(16) unsigned char raw[];
    T *t = reinterpret_cast<T *>(raw);
    t[threadIdx.x] = (T)(threadIdx.x * 2);
    __syncthreads();
    out[threadIdx.x] = t[blockDim.x - 1 - threadIdx.x];
}

ST_TEST(dynamic_shared_memory) {
    const int n = 300, blocks = 3;
    float *x, *out, h[n], ho[blocks * n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    CK(cudaMalloc(&x, sizeof h));
    CK(cudaMalloc(&out, sizeof ho));
    CK(cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice));
    dynamic_shared<<<blocks, 64, 2 * n * sizeof(float)>>>(x, out, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; b++)
        for (int i = 0; i < n; i++) bad += ho[b * n + i] != (float)(n - 1 - i) + 2.0f * i;
    ST_CHECKF(bad == 0, "%d wrong", bad);
    double *od, hd[48];
    CK(cudaMalloc(&od, sizeof hd));
    dynamic_shared_local<double><<<1, 48, 48 * sizeof(double)>>>(od);
    CK(cudaMemcpy(hd, od, sizeof hd, cudaMemcpyDeviceToHost));
    ST_CHECK(hd[0] == 94.0 && hd[47] == 0.0);
    cudaFree(x);
    cudaFree(out);
    cudaFree(od);
}

/* More than 48 KiB of dynamic shared memory needs the kernel's opt-in. */
__global__ void big_shared(float *out) {
    extern __shared__ float big[];
    big[threadIdx.x * 1000] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = big[threadIdx.x * 1000];
}

ST_TEST(dynamic_shared_over_48k_needs_opt_in) {
    float *d;
    CK(cudaMalloc(&d, 64 * sizeof(float)));
    size_t bytes = 64 * 1000 * sizeof(float);   /* 250 KiB: more than any opt-in */
    big_shared<<<1, 64, bytes>>>(d);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    bytes = 50 * 1000 * sizeof(float);          /* 195 KiB: an H100 allows it after opting in */
    big_shared<<<1, 50, bytes>>>(d);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    int optin = 0;
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    if ((size_t)optin >= bytes) {
        CK(cudaFuncSetAttribute(big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
        big_shared<<<1, 50, bytes>>>(d);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    }
    cudaFree(d);
}

/* Static shared memory counts too: 40 KB static + 16 KB dynamic is over the
   48 KB a kernel has without opting in. The emulator learns the static size
   when the kernel first runs, so the second launch is refused. */
__global__ void static_and_dynamic(float *out) {
    __shared__ float fixed[10000];
    extern __shared__ float more[];
    fixed[threadIdx.x] = 1.0f;
    more[threadIdx.x] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = fixed[threadIdx.x] + more[threadIdx.x];
}

ST_TEST(static_shared_memory_counts_against_the_limit) {
    float *d;
    CK(cudaMalloc(&d, 32 * sizeof(float)));
    static_and_dynamic<<<1, 32, 4096>>>(d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaFuncAttributes a;
    CK(cudaFuncGetAttributes(&a, static_and_dynamic));
    ST_CHECKF(a.sharedSizeBytes == 40000, "sharedSizeBytes %zu", a.sharedSizeBytes);
    static_and_dynamic<<<1, 32, 16384>>>(d);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CK(cudaFuncSetAttribute(static_and_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, 16384));
    static_and_dynamic<<<1, 32, 16384>>>(d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaFree(d);
}

/* >>warp intrinsics */
__global__ void shuffles(int *out, int width) {
    int lane = threadIdx.x & 31, base = threadIdx.x * 8;
    int v = 100 + threadIdx.x;
    out[base + 0] = __shfl_sync(0xffffffffu, v, 3, width);
    out[base + 1] = __shfl_sync(0xffffffffu, v, lane + 1, width);   /* wraps inside the segment */
    out[base + 2] = __shfl_up_sync(0xffffffffu, v, 2, width);
    out[base + 3] = __shfl_down_sync(0xffffffffu, v, 3, width);
    out[base + 4] = __shfl_xor_sync(0xffffffffu, v, 1, width);
    out[base + 5] = __shfl_xor_sync(0xffffffffu, v, 16, width);     /* later group when width < 32: own value */
    out[base + 6] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
    out[base + 7] = __any_sync(0xffffffffu, lane == 7) + 2 * __all_sync(0xffffffffu, lane < 32) + 4 * __all_sync(0xffffffffu, lane < 31);
}

ST_TEST(shuffle_edge_rules) {
    const int threads = 64;
    int *d, h[threads * 8];
    CK(cudaMalloc(&d, sizeof h));
    for (int width = 32; width >= 4; width /= 2) {
        shuffles<<<1, threads>>>(d, width);
        CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int t = 0; t < threads; t++) {
            int lane = t & 31, seg = lane & ~(width - 1), warp0 = t - lane;
            int *o = h + t * 8;
            auto val = [&](int l) { return 100 + warp0 + l; };
            bad += o[0] != val(seg + (3 & (width - 1)));
            bad += o[1] != val(seg + ((lane + 1) & (width - 1)));
            bad += o[2] != (lane - 2 >= seg ? val(lane - 2) : val(lane));
            bad += o[3] != (lane + 3 < seg + width ? val(lane + 3) : val(lane));
            bad += o[4] != val(lane ^ 1);
            bad += o[5] != ((lane ^ 16) >= seg + width ? val(lane) : val(lane ^ 16));
            unsigned bal = 0;
            for (int l = 0; l < 32; l += 3) bal |= 1u << l;
            bad += (unsigned)o[6] != bal;
            bad += o[7] != 1 + 2;
        }
        ST_CHECKF(bad == 0, "width %d: %d wrong results", width, bad);
    }
    cudaFree(d);
}

/* Two half-warps exchange within their own masks at the same time. */
__global__ void half_warp_masks(int *out) {
    int lane = threadIdx.x & 31;
    unsigned m = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    int v = lane * 10;
    out[lane] = __shfl_sync(m, v, lane < 16 ? 0 : 16) + __reduce_add_sync(m, 1u) * 1000;
}

ST_TEST(shuffle_with_partial_masks) {
    int *d, h[32];
    CK(cudaMalloc(&d, sizeof h));
    half_warp_masks<<<1, 32>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(h[0] == 16000 && h[15] == 16000 && h[16] == 16160 && h[31] == 16160, "%d %d %d %d", h[0], h[15], h[16], h[31]);
    cudaFree(d);
}

/* A lane outside the mask does not take part: reading it gives an
   undefined value (here all one bits). */
__global__ void read_outside_mask(unsigned *out) {
    unsigned lane = threadIdx.x & 31;
    if (lane < 8) out[lane] = __shfl_sync(0xffu, 7u + lane, 9);   /* lane 9 is not in the mask */
}

ST_TEST(shuffle_from_a_lane_outside_the_mask_is_undefined) {
    unsigned *d, h[8];
    CK(cudaMalloc(&d, sizeof h));
    read_outside_mask<<<1, 32>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(h[0] == 0xffffffffu, "0x%x", h[0]);
    cudaFree(d);
}

/* 64-bit values travel whole (int64_t / double shuffles). */
__global__ void shuffle64(int64_t *out, double *outd) {
    int64_t v = ((int64_t)threadIdx.x << 40) | threadIdx.x;
    double d = threadIdx.x + 0.25;
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, o);
        d += __shfl_xor_sync(0xffffffffu, d, o);
    }
    if (threadIdx.x == 0) *out = v;
    if (threadIdx.x == 5) *outd = d;
}

ST_TEST(shuffle_64_bit_values) {
    int64_t *d, h;
    double *dd, hd;
    CK(cudaMalloc(&d, 8));
    CK(cudaMalloc(&dd, 8));
    shuffle64<<<1, 32>>>(d, dd);
    CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hd, dd, 8, cudaMemcpyDeviceToHost));
    ST_CHECK(h == ((int64_t)496 << 40 | 496));
    ST_CHECK(hd == 496 + 8.0);
    cudaFree(d);
    cudaFree(dd);
}

__global__ void votes_and_match(unsigned *out) {
    unsigned lane = threadIdx.x & 31;
    __syncwarp();
    out[lane] = __match_any_sync(0xffffffffu, lane / 4);
    int pred = -1;
    unsigned all = __match_all_sync(0xffffffffu, 5, &pred);
    if (lane == 0) out[32] = all, out[33] = (unsigned)pred;
    all = __match_all_sync(0xffffffffu, lane, &pred);
    if (lane == 0) out[34] = all, out[35] = (unsigned)pred;
    unsigned am = __activemask();   /* every lane: the whole warp */
    if (lane == 0) out[36] = am;
    if (lane % 4 == 1) out[37] = __activemask();   /* inside a branch: the lanes that took it */
    if (lane == 2) out[38] = __activemask();
}

ST_TEST(match_and_activemask) {
    unsigned *d, h[39];
    CK(cudaMalloc(&d, sizeof h));
    votes_and_match<<<1, 32>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 0xfu && h[5] == 0xf0u && h[31] == 0xf0000000u);
    ST_CHECKF(h[32] == 0xffffffffu && h[33] == 1 && h[34] == 0 && h[35] == 0 && h[36] == 0xffffffffu, "%x %x %x %x %x", h[32], h[33], h[34], h[35], h[36]);
    ST_CHECKF(h[37] == 0x22222222u && h[38] == 0x4u, "activemask in branches: 0x%x 0x%x", h[37], h[38]);
    cudaFree(d);
}

/* >>atomics across blocks */
__global__ void atomics(int *i, unsigned *u, float *f, double *d, unsigned long long *ull, int *mn, int *mx, unsigned *inc,
                        int *cas_count) {
    atomicAdd(i, 2);
    atomicSub(i, 1);
    atomicAdd(u, 1u);
    atomicAdd(f, 0.5f);
    atomicAdd(d, 0.25);
    atomicAdd(ull, 3ull);
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    atomicMin(mn, 1000 - id);
    atomicMax(mx, id);
    atomicInc(inc, 9u);   /* wraps to 0 after 9 */
    /* a lock-free increment by compare-and-swap, retried until it wins */
    int old = *cas_count, assumed;
    do {
        assumed = old;
        old = atomicCAS(cas_count, assumed, assumed + 1);
    } while (old != assumed);
}

ST_TEST(atomics_across_blocks) {
    int *i, *mn, *mx, *cas;
    unsigned *u, *inc;
    float *f;
    double *d;
    unsigned long long *ull;
    CK(cudaMalloc(&i, 4)); CK(cudaMalloc(&u, 4)); CK(cudaMalloc(&f, 4)); CK(cudaMalloc(&d, 8)); CK(cudaMalloc(&ull, 8));
    CK(cudaMalloc(&mn, 4)); CK(cudaMalloc(&mx, 4)); CK(cudaMalloc(&inc, 4)); CK(cudaMalloc(&cas, 4));
    int zero = 0, big = 1 << 30, neg = -1;
    cudaMemcpy(i, &zero, 4, cudaMemcpyHostToDevice);
    cudaMemset(u, 0, 4); cudaMemset(f, 0, 4); cudaMemset(d, 0, 8); cudaMemset(ull, 0, 8); cudaMemset(inc, 0, 4);
    cudaMemset(cas, 0, 4);
    cudaMemcpy(mn, &big, 4, cudaMemcpyHostToDevice);
    cudaMemcpy(mx, &neg, 4, cudaMemcpyHostToDevice);
    const int blocks = 13, threads = 96, n = blocks * threads;
    atomics<<<blocks, threads>>>(i, u, f, d, ull, mn, mx, inc, cas);
    CK(cudaGetLastError());
    int hi, hmn, hmx, hcas;
    unsigned hu, hinc;
    float hf;
    double hd;
    unsigned long long hull;
    cudaMemcpy(&hi, i, 4, cudaMemcpyDeviceToHost); cudaMemcpy(&hu, u, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hf, f, 4, cudaMemcpyDeviceToHost); cudaMemcpy(&hd, d, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hull, ull, 8, cudaMemcpyDeviceToHost); cudaMemcpy(&hmn, mn, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hmx, mx, 4, cudaMemcpyDeviceToHost); cudaMemcpy(&hinc, inc, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hcas, cas, 4, cudaMemcpyDeviceToHost);
    ST_CHECKF(hi == n && hu == (unsigned)n && hf == 0.5f * n && hd == 0.25 * n && hull == 3ull * n, "%d %u %g %g %llu", hi, hu,
              hf, hd, hull);
    ST_CHECKF(hmn == 1000 - (n - 1) && hmx == n - 1, "min %d max %d", hmn, hmx);
    ST_CHECKF(hinc == (unsigned)(n % 10), "atomicInc %u want %d", hinc, n % 10);
    ST_CHECKF(hcas == n, "CAS loop %d want %d", hcas, n);
    cudaFree(i); cudaFree(u); cudaFree(f); cudaFree(d); cudaFree(ull); cudaFree(mn); cudaFree(mx); cudaFree(inc); cudaFree(cas);
}

/* A spin lock between the threads of one block: the emulator must let the
   holder run while the others spin on atomics. */
__global__ void spin_lock(int *lock, int *counter) {
    for (int k = 0; k < 3; k++) {
        while (atomicCAS(lock, 0, 1) != 0) {}
        __threadfence();
        *counter += 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}

ST_TEST(spin_lock_inside_a_block_makes_progress) {
    int *lock, *counter, h;
    CK(cudaMalloc(&lock, 4));
    CK(cudaMalloc(&counter, 4));
    cudaMemset(lock, 0, 4);
    cudaMemset(counter, 0, 4);
    spin_lock<<<2, 64>>>(lock, counter);
    CK(cudaMemcpy(&h, counter, 4, cudaMemcpyDeviceToHost));
    ST_CHECKF(h == 2 * 64 * 3, "%d", h);
    cudaFree(lock);
    cudaFree(counter);
}

/* >>cooperative groups */
__global__ void cg_reduce(const int *x, int *out) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
    __shared__ int warp_sums[32];
    int v = x[block.thread_rank()];
    int s = cg::reduce(warp, v, cg::plus<int>());
    if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = s;
    block.sync();
    if (block.thread_rank() == 0) {
        int t = 0;
        for (unsigned w = 0; w < warp.meta_group_size(); w++) t += warp_sums[w];
        out[0] = t;
    }
    int m = cg::reduce(eight, v, cg::greater<int>());
    if (eight.thread_rank() == 0) out[1 + eight.meta_group_rank()] = m;
    unsigned b = eight.ballot(v % 2);
    if (block.thread_rank() == 9) out[100] = (int)b;
}

/* The Programming Guide's discovery pattern: the active lanes elect a leader,
   which does one atomic for the group; the others get their offsets by a
   shuffle. Called from inside a branch. */
__device__ int atomic_agg_inc(int *counter) {
    cg::coalesced_group g = cg::coalesced_threads();
    int prev = 0;
    if (g.thread_rank() == 0) prev = atomicAdd(counter, (int)g.size());
    prev = g.shfl(prev, 0);
    return prev + (int)g.thread_rank();
}

__global__ void aggregated_increments(int *counter, int *slots) {
    if (threadIdx.x % 4 == 1) slots[threadIdx.x] = atomic_agg_inc(counter);
}

ST_TEST(coalesced_group_in_a_branch) {
    int *counter, *slots, hc, hs[64];
    CK(cudaMalloc(&counter, 4));
    CK(cudaMalloc(&slots, sizeof hs));
    cudaMemset(counter, 0, 4);
    cudaMemset(slots, 0xff, sizeof hs);
    aggregated_increments<<<1, 64>>>(counter, slots);
    CK(cudaMemcpy(&hc, counter, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hs, slots, sizeof hs, cudaMemcpyDeviceToHost));
    ST_CHECKF(hc == 16, "counter %d, want 16", hc);
    unsigned seen = 0;
    for (int t = 1; t < 64; t += 4)
        if (hs[t] >= 0 && hs[t] < 16) seen |= 1u << hs[t];
    ST_CHECKF(seen == 0xffffu, "slots taken 0x%x", seen);
    cudaFree(counter);
    cudaFree(slots);
}

ST_TEST(cooperative_groups_tiles) {
    const int n = 128;
    int h[n], *x, *out, ho[101];
    for (int i = 0; i < n; i++) h[i] = (i * 7) % 50;
    CK(cudaMalloc(&x, sizeof h));
    CK(cudaMalloc(&out, sizeof ho));
    CK(cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice));
    cg_reduce<<<1, n>>>(x, out);
    CK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost));
    int want = 0;
    for (int i = 0; i < n; i++) want += h[i];
    ST_CHECKF(ho[0] == want, "%d vs %d", ho[0], want);
    int bad = 0;
    for (int g = 0; g < n / 8; g++) {
        int m = 0;
        for (int i = 0; i < 8; i++) m = h[g * 8 + i] > m ? h[g * 8 + i] : m;
        bad += ho[1 + g] != m;
    }
    ST_CHECKF(bad == 0, "%d tile maxima wrong", bad);
    unsigned bits = 0;
    for (int i = 0; i < 8; i++) bits |= (unsigned)(h[8 + i] % 2) << i;
    ST_CHECKF((unsigned)ho[100] == bits, "ballot 0x%x want 0x%x", ho[100], bits);
    cudaFree(x);
    cudaFree(out);
}

/* >>__constant__ and __device__ variables */
__constant__ float coeffs[4];
__device__ int device_counter;
__device__ float device_table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

__global__ void use_symbols(float *out) {
    out[threadIdx.x] = coeffs[threadIdx.x % 4] * device_table[threadIdx.x];
    atomicAdd(&device_counter, 1);
}

ST_TEST(constant_and_device_symbols) {
    float c[4] = {1, 10, 100, 1000}, *out, h[8];
    int zero = 0, count = -1;
    CK(cudaMemcpyToSymbol(coeffs, c, sizeof c));
    CK(cudaMemcpyToSymbol(device_counter, &zero, sizeof zero));
    CK(cudaMalloc(&out, sizeof h));
    use_symbols<<<1, 8>>>(out);
    CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaMemcpyFromSymbol(&count, device_counter, sizeof count));
    ST_CHECK(h[0] == 1 && h[1] == 20 && h[7] == 8000 && count == 8);
    ST_CHECK(cudaMemcpyToSymbol(coeffs, c, sizeof c + 4) == cudaErrorInvalidValue);   /* past the symbol */
    void *addr = nullptr;
    CK(cudaGetSymbolAddress(&addr, device_table));
    float t[8];
    CK(cudaMemcpy(t, addr, sizeof t, cudaMemcpyDeviceToHost));
    ST_CHECK(t[3] == 4);
    size_t sz = 0;
    CK(cudaGetSymbolSize(&sz, device_table));
    ST_CHECK(sz == sizeof t);
    cudaGetLastError();
    cudaFree(out);
}

/* >>device printf */
__global__ void say_hello(int base) {
    if (threadIdx.x < 2) printf("hello from thread %d of block %d (base %d)\n", (int)threadIdx.x, (int)blockIdx.x, base);
}

ST_TEST(device_printf) {
    say_hello<<<2, 4>>>(7);
    CK(cudaDeviceSynchronize());
}

/* >>launch limits and the C++ launch forms */
__global__ void noop(int *p) { (void)p; }
__global__ void write_args(int *out, int a, double b, char c) {
    out[0] = a;
    out[1] = (int)(b * 10);
    out[2] = c;
}

ST_TEST(launch_limits) {
    int *d;
    CK(cudaMalloc(&d, 16));
    noop<<<1, 1025>>>(d);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<dim3(1, 65536), 1>>>(d);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<dim3(1, 1, 65535), dim3(1, 1, 64)>>>(d);
    ST_CHECK(cudaGetLastError() == cudaSuccess);
    noop<<<1, dim3(1, 1, 65)>>>(d);
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<0, 32>>>(d);
    ST_CHECK(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);
    ST_CHECK(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);   /* peek does not clear */
    ST_CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    ST_CHECK(cudaGetLastError() == cudaSuccess);                         /* get does */
    CK(cudaDeviceSynchronize());
    cudaFree(d);
}

ST_TEST(launch_through_cudaLaunchKernel_and_Ex) {
    int *d, h[3];
    CK(cudaMalloc(&d, sizeof h));
    int a = 7;
    double b = 4.2;
    char c = 'q';
    void *args[] = {&d, &a, &b, &c};
    CK(cudaLaunchKernel(write_args, dim3(1), dim3(1), args, 0, 0));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 7 && h[1] == 42 && h[2] == 'q');
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(1);
    CK(cudaLaunchKernelEx(&cfg, write_args, d, 9, 1.5, 'z'));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 9 && h[1] == 15 && h[2] == 'z');
    cudaFree(d);
}

/* Parameters are copied at launch: changing the host variable afterwards
   does not change what the kernel sees. */
ST_TEST(kernel_arguments_are_copied_at_launch) {
    int *d, h[3];
    CK(cudaMalloc(&d, sizeof h));
    int a = 1;
    write_args<<<1, 1>>>(d, a, 0.0, 'a');
    a = 2;
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 1);
    cudaFree(d);
}

int main(void) {
    ST_RUN(indices_3d);
    ST_RUN(templates_and_macro_configs);
    ST_RUN(reduction_with_barriers);
    ST_RUN(reduction_missing_syncthreads_is_wrong);
    ST_RUN(shared_memory_is_per_block);
    ST_RUN(shared_memory_starts_undefined);
    ST_RUN(dynamic_shared_memory);
    ST_RUN(dynamic_shared_over_48k_needs_opt_in);
    ST_RUN(static_shared_memory_counts_against_the_limit);
    ST_RUN(shuffle_edge_rules);
    ST_RUN(shuffle_with_partial_masks);
    ST_RUN(shuffle_from_a_lane_outside_the_mask_is_undefined);
    ST_RUN(shuffle_64_bit_values);
    ST_RUN(match_and_activemask);
    ST_RUN(atomics_across_blocks);
    ST_RUN(spin_lock_inside_a_block_makes_progress);
    ST_RUN(cooperative_groups_tiles);
    ST_RUN(coalesced_group_in_a_branch);
    ST_RUN(constant_and_device_symbols);
    ST_RUN(device_printf);
    ST_RUN(launch_limits);
    ST_RUN(launch_through_cudaLaunchKernel_and_Ex);
    ST_RUN(kernel_arguments_are_copied_at_launch);
    return st_summary();
}
