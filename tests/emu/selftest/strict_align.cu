/* Misaligned accesses fault with cudaErrorMisalignedAddress (sticky) at
   every access width, loads, stores and atomics (CUDA C++ Programming
   Guide, "Device Memory Accesses": naturally aligned words of 1, 2, 4, 8 or
   16 bytes), with the kernel, block, thread and address in the message. A
   pointer argument is not checked at the launch: a misaligned or freed
   pointer that the kernel never dereferences is fine, as on a GPU; one it
   dereferences faults. Each case has its control (aligned, runs clean). */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "selftest.h"
#include "strict_child.h"

#define ACCESS_KERNELS(T, N)                                                                                  \
    __global__ void load_##N(const char *base, size_t off, T *out) { *out = *(const T *)(base + off); }       \
    __global__ void store_##N(char *base, size_t off, T *src) { *(T *)(base + off) = *src; }
ACCESS_KERNELS(float2, float2)
ACCESS_KERNELS(float4, float4)
ACCESS_KERNELS(int4, int4)
ACCESS_KERNELS(double2, double2)
ACCESS_KERNELS(__half2, half2)
ACCESS_KERNELS(__nv_bfloat162, bf162)
ACCESS_KERNELS(double, double)
ACCESS_KERNELS(long long, longlong)
ACCESS_KERNELS(float, float)

__global__ void atomic_add_f(char *base, size_t off) { atomicAdd((float *)(base + off), 1.0f); }
__global__ void atomic_add_i(char *base, size_t off) { atomicAdd((int *)(base + off), 1); }
__global__ void atomic_add_d(char *base, size_t off) { atomicAdd((double *)(base + off), 1.0); }
__global__ void atomic_cas_u64(char *base, size_t off) {
    atomicCAS((unsigned long long *)(base + off), 0ull, 1ull);
}
__global__ void atomic_max_i(char *base, size_t off) { atomicMax((int *)(base + off), 7); }
/* each half of the pair is its own atomic, but the pair is one naturally aligned 4-byte operand */
__global__ void atomic_add_h2(char *base, size_t off) { atomicAdd((__half2 *)(base + off), __floats2half2_rn(1.0f, 2.0f)); }
__global__ void atomic_add_bf2(char *base, size_t off) {
    atomicAdd((__nv_bfloat162 *)(base + off), __floats2bfloat162_rn(1.0f, 2.0f));
}

static char *g_buf;   /* 256 bytes of device memory, 256-byte aligned */
static char *g_out;

static int setup(void) {
    if (cudaMalloc(&g_buf, 256) != cudaSuccess || cudaMalloc(&g_out, 256) != cudaSuccess) return 1;
    if (cudaMemset(g_buf, 0, 256) != cudaSuccess || cudaMemset(g_out, 0, 256) != cudaSuccess) return 1;
    return 0;
}

/* One case: the launch at an offset; want: the error of the synchronize. */
#define CASE(name, launch, want)                                                                              \
    static int name(void) {                                                                                   \
        EXPECT(1, setup() == 0);                                                                              \
        launch;                                                                                               \
        EXPECT(2, cudaGetLastError() == cudaSuccess);                                                         \
        cudaError_t e = cudaDeviceSynchronize();                                                              \
        EXPECT(3, e == (want));                                                                               \
        if ((want) != cudaSuccess) EXPECT(4, cudaMalloc((void **)&g_out, 4) == (want)); /* sticky */         \
        return 0;                                                                                             \
    }
#define LS_CASES(N, size)                                                                                     \
    CASE(load_##N##_misaligned, (load_##N<<<1, 1>>>(g_buf, (size) / 2, (decltype(load_out_##N()))g_out)),     \
         cudaErrorMisalignedAddress)                                                                          \
    CASE(load_##N##_aligned, (load_##N<<<1, 1>>>(g_buf, (size), (decltype(load_out_##N()))g_out)), cudaSuccess) \
    CASE(store_##N##_misaligned, (store_##N<<<1, 1>>>(g_buf, (size) / 2, (decltype(load_out_##N()))g_out)),   \
         cudaErrorMisalignedAddress)                                                                          \
    CASE(store_##N##_aligned, (store_##N<<<1, 1>>>(g_buf, (size), (decltype(load_out_##N()))g_out)), cudaSuccess)
#define OUT_T(T, N) static T *load_out_##N(void) { return nullptr; }
OUT_T(float2, float2) OUT_T(float4, float4) OUT_T(int4, int4) OUT_T(double2, double2) OUT_T(__half2, half2)
OUT_T(__nv_bfloat162, bf162) OUT_T(double, double) OUT_T(long long, longlong) OUT_T(float, float)
LS_CASES(float2, 8)
LS_CASES(float4, 16)
LS_CASES(int4, 16)
LS_CASES(double2, 16)
LS_CASES(half2, 4)
LS_CASES(bf162, 4)
LS_CASES(double, 8)
LS_CASES(longlong, 8)
LS_CASES(float, 4)
/* a float4 at an 8-byte boundary: aligned for float2, not for float4 */
CASE(load_float4_at_8, (load_float4<<<1, 1>>>(g_buf, 8, (float4 *)g_out)), cudaErrorMisalignedAddress)
CASE(atomic_add_float_misaligned, (atomic_add_f<<<1, 1>>>(g_buf, 2)), cudaErrorMisalignedAddress)
CASE(atomic_add_float_aligned, (atomic_add_f<<<1, 1>>>(g_buf, 4)), cudaSuccess)
CASE(atomic_add_int_misaligned, (atomic_add_i<<<1, 1>>>(g_buf, 1)), cudaErrorMisalignedAddress)
CASE(atomic_add_int_aligned, (atomic_add_i<<<1, 1>>>(g_buf, 8)), cudaSuccess)
CASE(atomic_add_double_misaligned, (atomic_add_d<<<1, 1>>>(g_buf, 4)), cudaErrorMisalignedAddress)
CASE(atomic_add_double_aligned, (atomic_add_d<<<1, 1>>>(g_buf, 16)), cudaSuccess)
CASE(atomic_cas_u64_misaligned, (atomic_cas_u64<<<1, 1>>>(g_buf, 12)), cudaErrorMisalignedAddress)
CASE(atomic_cas_u64_aligned, (atomic_cas_u64<<<1, 1>>>(g_buf, 24)), cudaSuccess)
CASE(atomic_max_int_misaligned, (atomic_max_i<<<1, 1>>>(g_buf, 6)), cudaErrorMisalignedAddress)
CASE(atomic_max_int_aligned, (atomic_max_i<<<1, 1>>>(g_buf, 32)), cudaSuccess)
CASE(atomic_add_half2_misaligned, (atomic_add_h2<<<1, 1>>>(g_buf, 2)), cudaErrorMisalignedAddress)
CASE(atomic_add_half2_aligned, (atomic_add_h2<<<1, 1>>>(g_buf, 36)), cudaSuccess)
CASE(atomic_add_bf162_misaligned, (atomic_add_bf2<<<1, 1>>>(g_buf, 42)), cudaErrorMisalignedAddress)
CASE(atomic_add_bf162_aligned, (atomic_add_bf2<<<1, 1>>>(g_buf, 44)), cudaSuccess)

/* >>finding 7: pointer arguments are checked at the access, not at the launch */
__global__ void maybe_use(const float *p, float *out, int use) {
    if (use) *out = *p;
    else *out = 1.0f;
}
static int unused_misaligned_pointer(void) {
    float *d;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess);
    maybe_use<<<1, 1>>>((const float *)((char *)d + 2), d, 0);
    EXPECT(2, cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}
static int used_misaligned_pointer(void) {
    float *d;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess);
    maybe_use<<<1, 1>>>((const float *)((char *)d + 2), d, 1);
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorMisalignedAddress);
    return 0;
}
/* an address nothing is mapped at, and a base pointer one before an
   allocation (1-based indexing): fine while unused, a fault where used */
static int unused_wild_pointers(void) {
    float *d, *out;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess && cudaMalloc(&out, 4) == cudaSuccess);
#if !defined(__SANITIZE_ADDRESS__)   /* AddressSanitizer's shadow maps most of the address space */
    maybe_use<<<1, 1>>>((const float *)(uintptr_t)0xdeadbeef0ull, out, 0);
#endif
    maybe_use<<<1, 1>>>((const float *)(uintptr_t)0x10, out, 0);
    maybe_use<<<1, 1>>>(d - 1, out, 0);
    EXPECT(2, cudaDeviceSynchronize() == cudaSuccess);
    maybe_use<<<1, 1>>>(d - 1 + 1, out, 1);   /* a[1] of the 1-based view */
    EXPECT(3, cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}
static int used_wild_pointer(void) {
    float *out;
    EXPECT(1, cudaMalloc(&out, 4) == cudaSuccess);
    maybe_use<<<1, 1>>>((const float *)(uintptr_t)0xdeadbeef0ull, out, 1);
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    return 0;
}
static int unused_freed_pointer(void) {
    float *d, *out;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess && cudaMalloc(&out, 4) == cudaSuccess);
    EXPECT(2, cudaFree(d) == cudaSuccess);
    maybe_use<<<1, 1>>>(d, out, 0);
    EXPECT(3, cudaDeviceSynchronize() == cudaSuccess);
    float h = 0;
    EXPECT(4, cudaMemcpy(&h, out, 4, cudaMemcpyDeviceToHost) == cudaSuccess && h == 1.0f);
    return 0;
}
static int used_freed_pointer(void) {
    float *d, *out;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess && cudaMalloc(&out, 4) == cudaSuccess);
    EXPECT(2, cudaFree(d) == cudaSuccess);
    maybe_use<<<1, 1>>>(d, out, 1);
    EXPECT(3, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    return 0;
}

/* the message names the kernel, the block, the thread and the address */
__global__ void store_float4_in_block(char *base) {
    if (blockIdx.x == 2 && threadIdx.x == 5) *(float4 *)(base + 4) = make_float4(1, 2, 3, 4);
}
static int message_names_the_culprit(void) {
    EXPECT(1, setup() == 0);
    store_float4_in_block<<<3, 8>>>(g_buf);
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorMisalignedAddress);
    return 0;
}

#define RUN_CASE(name, want) ST_TEST(name##_t) { ST_CHILD(name, want); }
#define RUN_LS(N)                                                                                             \
    RUN_CASE(load_##N##_misaligned, "misaligned address") RUN_CASE(load_##N##_aligned, NULL)                \
    RUN_CASE(store_##N##_misaligned, "misaligned address") RUN_CASE(store_##N##_aligned, NULL)
RUN_LS(float2) RUN_LS(float4) RUN_LS(int4) RUN_LS(double2) RUN_LS(half2) RUN_LS(bf162) RUN_LS(double)
RUN_LS(longlong) RUN_LS(float)
RUN_CASE(load_float4_at_8, "misaligned address")
RUN_CASE(atomic_add_float_misaligned, "misaligned address") RUN_CASE(atomic_add_float_aligned, NULL)
RUN_CASE(atomic_add_int_misaligned, "misaligned address") RUN_CASE(atomic_add_int_aligned, NULL)
RUN_CASE(atomic_add_double_misaligned, "misaligned address") RUN_CASE(atomic_add_double_aligned, NULL)
RUN_CASE(atomic_cas_u64_misaligned, "misaligned address") RUN_CASE(atomic_cas_u64_aligned, NULL)
RUN_CASE(atomic_max_int_misaligned, "misaligned address") RUN_CASE(atomic_max_int_aligned, NULL)
RUN_CASE(atomic_add_half2_misaligned, "misaligned address") RUN_CASE(atomic_add_half2_aligned, NULL)
RUN_CASE(atomic_add_bf162_misaligned, "misaligned address") RUN_CASE(atomic_add_bf162_aligned, NULL)
RUN_CASE(unused_misaligned_pointer, NULL) RUN_CASE(used_misaligned_pointer, "misaligned address")
#if defined(__SANITIZE_ADDRESS__)   /* refused at the launch there: the address looks mapped (ASan's shadow) */
RUN_CASE(unused_wild_pointers, NULL) RUN_CASE(used_wild_pointer, "not memory the device can access")
#else
RUN_CASE(unused_wild_pointers, NULL) RUN_CASE(used_wild_pointer, "illegal memory access")
#endif
RUN_CASE(unused_freed_pointer, NULL) RUN_CASE(used_freed_pointer, "illegal memory access")
ST_TEST(message_names_the_culprit_t) {
    ST_CHILD(message_names_the_culprit, "store_float4_in_block");
    ST_CHECKF(strstr(strict_log, "block (2,0,0) thread (5,0,0)"), "%s", strict_log);
    ST_CHECKF(strstr(strict_log, "0x") && strstr(strict_log, "cudaErrorMisalignedAddress"), "%s", strict_log);
}

int main(void) {
#define RUN_LS2(N) ST_RUN(load_##N##_misaligned_t); ST_RUN(load_##N##_aligned_t); \
    ST_RUN(store_##N##_misaligned_t); ST_RUN(store_##N##_aligned_t);
    RUN_LS2(float2) RUN_LS2(float4) RUN_LS2(int4) RUN_LS2(double2) RUN_LS2(half2) RUN_LS2(bf162) RUN_LS2(double)
    RUN_LS2(longlong) RUN_LS2(float)
    ST_RUN(load_float4_at_8_t);
    ST_RUN(atomic_add_float_misaligned_t); ST_RUN(atomic_add_float_aligned_t);
    ST_RUN(atomic_add_int_misaligned_t); ST_RUN(atomic_add_int_aligned_t);
    ST_RUN(atomic_add_double_misaligned_t); ST_RUN(atomic_add_double_aligned_t);
    ST_RUN(atomic_cas_u64_misaligned_t); ST_RUN(atomic_cas_u64_aligned_t);
    ST_RUN(atomic_max_int_misaligned_t); ST_RUN(atomic_max_int_aligned_t);
    ST_RUN(atomic_add_half2_misaligned_t); ST_RUN(atomic_add_half2_aligned_t);
    ST_RUN(atomic_add_bf162_misaligned_t); ST_RUN(atomic_add_bf162_aligned_t);
    ST_RUN(unused_misaligned_pointer_t); ST_RUN(used_misaligned_pointer_t);
    ST_RUN(unused_wild_pointers_t); ST_RUN(used_wild_pointer_t);
    ST_RUN(unused_freed_pointer_t); ST_RUN(used_freed_pointer_t);
    ST_RUN(message_names_the_culprit_t);
    return st_summary();
}
