/* Shared memory bounds are exact (CUDA C++ Programming Guide, "__shared__"
   and "Execution Configuration": a static variable has its declared size,
   extern __shared__ memory the size the launch gives): an access past a
   static array (one element, or 240 KiB) or past the launch's dynamic size
   faults with cudaErrorIllegalAddress, "out-of-bounds shared access"; the
   last valid element is fine. Several arrays declared on one line
   (__shared__ float a[8], b[8];) are as many variables, each with its own
   bounds. Under AddressSanitizer builds the device code has no access
   hooks: there the same accesses end in ASan's report. */
#include <cuda_runtime.h>
#include "selftest.h"
#include "strict_child.h"

#if defined(__SANITIZE_ADDRESS__)
/* the child dies with ASan's report (the static region's gaps are poisoned)
   or UBSan's "index out of bounds" */
#  define OOB_WANT(e) ((void)(e), 1)
#  define OOB_CHILD(body) do { int rc_ = in_child(body); \
    ST_CHECKF(rc_ != 0 && (strstr(strict_log, "Sanitizer") || strstr(strict_log, "runtime error")), "%s: exit %d: %s", #body, rc_, strict_log); } while (0)
#else
#  define OOB_WANT(e) ((e) == cudaErrorIllegalAddress)
#  define OOB_CHILD(body) ST_CHILD(body, "out-of-bounds shared access")
#endif

__global__ void static_write(long at, float *out) {
    __shared__ float s[64];
    s[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    float *p = s;   /* through a pointer: no array bounds for UBSan to check */
    if (threadIdx.x == 0) p[at] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
__global__ void static_read(long at, float *out) {
    __shared__ double t[16];
    t[threadIdx.x] = 1.0;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = (float)t[at];
}
__global__ void dynamic_write(long at, float *out) {
    extern __shared__ float d[];
    d[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) d[at] = 3.0f;
    __syncthreads();
    out[threadIdx.x] = d[threadIdx.x];
}

/* two arrays declared on one line: each has its own exact bounds */
__global__ void second_of_two(long at, float *out) {
    __shared__ float a[8], b[8];
    a[threadIdx.x] = 1.0f;
    b[threadIdx.x] = 2.0f;
    __syncthreads();
    float *p = b;
    if (threadIdx.x == 0) p[at] = 3.0f;
    __syncthreads();
    out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

static float *g_out;
static int run_static(long at, int read) {
    if (cudaMalloc(&g_out, 64 * sizeof(float)) != cudaSuccess) return -1;
    if (read) static_read<<<2, 16>>>(at, g_out);
    else static_write<<<2, 64>>>(at, g_out);
    return (int)cudaDeviceSynchronize();
}
static int run_dynamic(long at, size_t bytes) {
    if (cudaMalloc(&g_out, 64 * sizeof(float)) != cudaSuccess) return -1;
    dynamic_write<<<2, 25, bytes>>>(at, g_out);
    return (int)cudaDeviceSynchronize();
}

static int run_two(long at) {
    if (cudaMalloc(&g_out, 8 * sizeof(float)) != cudaSuccess) return -1;
    second_of_two<<<2, 8>>>(at, g_out);
    return (int)cudaDeviceSynchronize();
}
static int two_one_past(void) { EXPECT(1, OOB_WANT((cudaError_t)run_two(8))); return 0; }
static int two_last(void) {
    EXPECT(1, run_two(7) == cudaSuccess);
    float h[8];
    EXPECT(2, cudaMemcpy(h, g_out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    EXPECT(3, h[0] == 3.0f && h[6] == 3.0f && h[7] == 4.0f);
    return 0;
}
static int static_one_past(void) { EXPECT(1, OOB_WANT((cudaError_t)run_static(64, 0))); return 0; }
static int static_240k_past(void) { EXPECT(1, OOB_WANT((cudaError_t)run_static(64 + 240 * 256, 0))); return 0; }
static int static_last(void) {
    EXPECT(1, run_static(63, 0) == cudaSuccess);
    float h[64];
    EXPECT(2, cudaMemcpy(h, g_out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    EXPECT(3, h[62] == 62.0f && h[63] == 2.0f);
    return 0;
}
static int static_read_past(void) { EXPECT(1, OOB_WANT((cudaError_t)run_static(16, 1))); return 0; }
static int static_read_last(void) { EXPECT(1, run_static(15, 1) == cudaSuccess); return 0; }
static int dynamic_one_past(void) { EXPECT(1, OOB_WANT((cudaError_t)run_dynamic(100, 400))); return 0; }
static int dynamic_page_past(void) { EXPECT(1, OOB_WANT((cudaError_t)run_dynamic(5000, 400))); return 0; }
/* far past the window (a GPU's shared window is at most 227 KiB): into the
   emulator's guard, never into its heap */
static int static_far_past(void) { EXPECT(1, run_static(1000000, 0) == cudaErrorIllegalAddress); return 0; }
static int static_far_before(void) { EXPECT(1, run_static(-200000, 0) == cudaErrorIllegalAddress); return 0; }
static int dynamic_far_past(void) { EXPECT(1, run_dynamic(70000, 128) == cudaErrorIllegalAddress); return 0; }
static int dynamic_last(void) {
    EXPECT(1, run_dynamic(99, 400) == cudaSuccess);
    float h[25];
    EXPECT(2, cudaMemcpy(h, g_out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess && h[24] == 1.0f);
    return 0;
}

ST_TEST(static_one_past_t) {
    OOB_CHILD(static_one_past);
#if !defined(__SANITIZE_ADDRESS__)
    ST_CHECKF(strstr(strict_log, "variable 'float [64]' (256 bytes)"), "%s", strict_log);
#endif
}
ST_TEST(static_240k_past_t) { OOB_CHILD(static_240k_past); }
ST_TEST(static_last_t) { ST_CHILD(static_last, NULL); }
ST_TEST(static_read_past_t) { OOB_CHILD(static_read_past); }
ST_TEST(static_read_last_t) { ST_CHILD(static_read_last, NULL); }
ST_TEST(dynamic_one_past_t) {
    OOB_CHILD(dynamic_one_past);
#if !defined(__SANITIZE_ADDRESS__)
    ST_CHECKF(strstr(strict_log, "past the end of the 400 bytes the launch gave"), "%s", strict_log);
#endif
}
ST_TEST(dynamic_page_past_t) { ST_CHILD(dynamic_page_past, NULL); ST_CHECK(strstr(strict_log, "out-of-bounds shared")); }
ST_TEST(dynamic_last_t) { ST_CHILD(dynamic_last, NULL); }
ST_TEST(static_far_past_t) { ST_CHILD(static_far_past, NULL); ST_CHECKF(strstr(strict_log, "out-of-bounds shared"), "%s", strict_log); }
ST_TEST(static_far_before_t) { ST_CHILD(static_far_before, NULL); ST_CHECKF(strstr(strict_log, "out-of-bounds shared"), "%s", strict_log); }
ST_TEST(dynamic_far_past_t) { ST_CHILD(dynamic_far_past, NULL); ST_CHECKF(strstr(strict_log, "out-of-bounds shared"), "%s", strict_log); }

ST_TEST(one_line_declarators_one_past_t) {
    OOB_CHILD(two_one_past);
#if !defined(__SANITIZE_ADDRESS__)
    ST_CHECKF(strstr(strict_log, "variable 'float [8]' (32 bytes)"), "%s", strict_log);
#endif
}
ST_TEST(one_line_declarators_last_t) { ST_CHILD(two_last, NULL); }

int main(void) {
    ST_RUN(static_one_past_t);
    ST_RUN(static_240k_past_t);
    ST_RUN(static_last_t);
    ST_RUN(static_read_past_t);
    ST_RUN(static_read_last_t);
    ST_RUN(dynamic_one_past_t);
    ST_RUN(dynamic_page_past_t);
    ST_RUN(dynamic_last_t);
    ST_RUN(static_far_past_t);
    ST_RUN(static_far_before_t);
    ST_RUN(dynamic_far_past_t);
    ST_RUN(one_line_declarators_one_past_t);
    ST_RUN(one_line_declarators_last_t);
    return st_summary();
}
