/* CUEMU_BOUNDS=exact: global memory bounds are the exact [base, base + size)
   of each live allocation (cudaMalloc, cudaMallocPitch, cudaMallocManaged,
   cudaMallocAsync). By default an allocation is rounded up (its start
   256-byte aligned, as the CUDA C++ Programming Guide's "Device Memory
   Accesses" promises; its end at a guard page), and a read just past an
   odd-sized buffer reads the padding silently, as on a GPU. In exact mode
   that access, one just before the start, a write or an atomic there, and
   a vector load that runs over the end fault as an illegal address does:
   cudaErrorIllegalAddress for the launch, sticky (every later call fails;
   Runtime API, enum cudaError). Controls: the last element, every element,
   a pitched buffer's row padding (inside the allocation), locals and
   __device__ variables, a buffer allocated where a freed one was; each
   runs clean in exact mode. Each case is a child process (the mode is read
   when the child's runtime starts; the parent never touches CUDA). Under
   AddressSanitizer builds device code has no access hooks: the exact mode
   is not there, and only the default mode is tested. */
#include <cuda_runtime.h>
#include <stdint.h>
#include "selftest.h"
#include "strict_child.h"

__global__ void read_at(const float *p, long i, float *out) { *out = p[i]; }
__global__ void write_at(float *p, long i) { p[i] = 1.0f; }
__global__ void atomic_at(int *p, long i) { atomicAdd(&p[i], 1); }
__global__ void read4_at(const float4 *p, long i, float *out) {
    float4 v = p[i];
    *out = v.x + v.y + v.z + v.w;
}
/* every element once, the grid rounded up to whole blocks */
__global__ void scale_all(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= 2.0f;
}
__device__ float g_table[3];
__global__ void locals_and_globals(float *out) {
    float local[5];
    for (int k = 0; k < 5; k++) local[k] = (float)k;
    g_table[threadIdx.x % 3] = local[threadIdx.x % 5];
    out[threadIdx.x] = local[4 - threadIdx.x % 5] + g_table[0] * 0.0f;
}

static const int kN = 37;   /* floats: 148 bytes, not a multiple of 256 */
static float *g_out;

/* The launch's error and the one a later call gets (sticky or not). */
static cudaError_t g_later;
static cudaError_t finish(void) {
    cudaError_t e = cudaDeviceSynchronize();
    g_later = cudaMemset(g_out, 0, sizeof(float));
    return e;
}
static float *buffer(size_t n) {
    float *d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess || cudaMalloc(&g_out, 64 * sizeof(float)) != cudaSuccess) exit(3);
    cudaMemset(d, 0, n * sizeof(float));
    return d;
}
static void exact(void) { setenv("CUEMU_BOUNDS", "exact", 1); }

/* the default mode: the padding reads silently (a GPU's does too) */
static int default_one_past(void) {
    float *d = buffer(kN);
    read_at<<<1, 1>>>(d, kN, g_out);
    EXPECT(1, finish() == cudaSuccess && g_later == cudaSuccess);
    return 0;
}
static int one_past(void) {
    exact();
    float *d = buffer(kN);
    EXPECT(1, ((uintptr_t)d & 255) == 0);   /* the start keeps cudaMalloc's alignment */
    read_at<<<1, 1>>>(d, kN, g_out);
    EXPECT(2, finish() == cudaErrorIllegalAddress);
    EXPECT(3, g_later == cudaErrorIllegalAddress);   /* sticky */
    float *e = nullptr;
    EXPECT(4, cudaMalloc(&e, 16) == cudaErrorIllegalAddress);
    return 0;
}
static int one_before(void) {
    exact();
    float *d = buffer(kN);
    read_at<<<1, 1>>>(d, -1, g_out);
    EXPECT(1, finish() == cudaErrorIllegalAddress && g_later == cudaErrorIllegalAddress);
    return 0;
}
static int write_past(void) {
    exact();
    float *d = buffer(kN);
    write_at<<<1, 1>>>(d, kN + 3);
    EXPECT(1, finish() == cudaErrorIllegalAddress && g_later == cudaErrorIllegalAddress);
    return 0;
}
static int atomic_past(void) {
    exact();
    float *d = buffer(kN);
    atomic_at<<<1, 1>>>((int *)d, kN);
    EXPECT(1, finish() == cudaErrorIllegalAddress);
    return 0;
}
/* 48 bytes: the third float4 is the last whole one; a fourth would run over */
static int vector_over_end(void) {
    exact();
    float *d = buffer(12);
    read4_at<<<1, 1>>>((const float4 *)d, 2, g_out);
    EXPECT(1, finish() == cudaSuccess);
    read4_at<<<1, 1>>>((const float4 *)d, 3, g_out);
    EXPECT(2, finish() == cudaErrorIllegalAddress);
    return 0;
}
static int last_and_all(void) {
    exact();
    float *d = buffer(kN);
    read_at<<<1, 1>>>(d, kN - 1, g_out);
    read_at<<<1, 1>>>(d, 0, g_out);
    scale_all<<<(kN + 31) / 32, 32>>>(d, kN);
    atomic_at<<<1, 1>>>((int *)d, kN - 1);
    EXPECT(1, finish() == cudaSuccess && g_later == cudaSuccess);
    return 0;
}
static int managed(void) {
    exact();
    float *m = nullptr;
    if (cudaMallocManaged(&m, kN * sizeof(float)) != cudaSuccess || cudaMalloc(&g_out, 4) != cudaSuccess) return 3;
    for (int k = 0; k < kN; k++) m[k] = 1.0f;
    read_at<<<1, 1>>>(m, kN - 1, g_out);
    EXPECT(1, cudaDeviceSynchronize() == cudaSuccess);
    read_at<<<1, 1>>>(m, kN, g_out);
    EXPECT(2, finish() == cudaErrorIllegalAddress);
    return 0;
}
static int async_pool(void) {
    exact();
    float *a = nullptr;
    if (cudaMalloc(&g_out, 4) != cudaSuccess || cudaMallocAsync(&a, kN * sizeof(float), 0) != cudaSuccess) return 3;
    cudaMemsetAsync(a, 0, kN * sizeof(float), 0);
    read_at<<<1, 1>>>(a, kN - 1, g_out);
    EXPECT(1, cudaDeviceSynchronize() == cudaSuccess);
    read_at<<<1, 1>>>(a, kN, g_out);
    EXPECT(2, finish() == cudaErrorIllegalAddress);
    return 0;
}
/* a pitched buffer's row padding is part of the allocation */
static int pitched_rows(void) {
    exact();
    float *p = nullptr;
    size_t pitch = 0;
    if (cudaMallocPitch((void **)&p, &pitch, 5 * sizeof(float), 3) != cudaSuccess || cudaMalloc(&g_out, 4) != cudaSuccess)
        return 3;
    cudaMemset2D(p, pitch, 0, pitch, 3);
    read_at<<<1, 1>>>(p, (long)(pitch / sizeof(float)) - 1, g_out);
    read_at<<<1, 1>>>(p, (long)(3 * pitch / sizeof(float)) - 1, g_out);
    EXPECT(1, cudaDeviceSynchronize() == cudaSuccess);
    read_at<<<1, 1>>>(p, (long)(3 * pitch / sizeof(float)), g_out);
    EXPECT(2, finish() == cudaErrorIllegalAddress);
    return 0;
}
/* memory that is no allocation (a thread's locals, a __device__ variable) is not checked here */
static int locals_globals(void) {
    exact();
    if (cudaMalloc(&g_out, 64 * sizeof(float)) != cudaSuccess) return 3;
    locals_and_globals<<<2, 64>>>(g_out);
    EXPECT(1, finish() == cudaSuccess && g_later == cudaSuccess);
    return 0;
}
/* freed allocations leave no bounds behind: new ones, of other sizes, run clean to their last byte */
static int reuse_after_free(void) {
    exact();
    if (cudaMalloc(&g_out, 4) != cudaSuccess) return 3;
    for (int round = 0; round < 64; round++) {
        float *d = nullptr;
        int n = 1 + (round * 37) % 700;
        if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 4;
        cudaMemset(d, 0, n * sizeof(float));
        scale_all<<<(n + 63) / 64, 64>>>(d, n);
        read_at<<<1, 1>>>(d, n - 1, g_out);
        if (cudaDeviceSynchronize() != cudaSuccess) return 10 + round % 80;
        cudaFree(d);
    }
    return 0;
}

#if defined(__SANITIZE_ADDRESS__)
#  define EXACT_CASE(name, says) ST_TEST(name##_t) {}
#else
#  define EXACT_CASE(name, says) ST_TEST(name##_t) { ST_CHILD(name, says); }
#endif
ST_TEST(default_one_past_t) { ST_CHILD(default_one_past, NULL); }
EXACT_CASE(one_past, "0 bytes past the end of the allocation")
EXACT_CASE(one_before, "4 bytes before the allocation")
EXACT_CASE(write_past, "write of 4 bytes")
EXACT_CASE(atomic_past, "past the end of the allocation")
EXACT_CASE(vector_over_end, "past the end of the allocation")
EXACT_CASE(last_and_all, NULL)
EXACT_CASE(managed, "past the end of the allocation")
EXACT_CASE(async_pool, "past the end of the allocation")
EXACT_CASE(pitched_rows, "illegal memory access")
EXACT_CASE(locals_globals, NULL)
EXACT_CASE(reuse_after_free, NULL)

int main(void) {
    ST_RUN(default_one_past_t);
    ST_RUN(one_past_t);
    ST_RUN(one_before_t);
    ST_RUN(write_past_t);
    ST_RUN(atomic_past_t);
    ST_RUN(vector_over_end_t);
    ST_RUN(last_and_all_t);
    ST_RUN(managed_t);
    ST_RUN(async_pool_t);
    ST_RUN(pitched_rows_t);
    ST_RUN(locals_globals_t);
    ST_RUN(reuse_after_free_t);
    return st_summary();
}
