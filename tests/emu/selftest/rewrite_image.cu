/* rewrite_image.cu - what nvcc-emu's rewrite makes known from the source,
   as a GPU's compiled image knows it before the first launch: launch bounds
   and static shared memory (CUDA C++ Programming Guide, "Launch Bounds",
   "Shared Memory"; Runtime API, cudaFuncGetAttributes), a launcher for
   cudaLaunchKernel(const void *), default arguments of kernels,
   __device__ / __constant__ variables with a device copy and a host shadow
   ("Variable Memory Space Specifiers"), and text outside code left alone. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "selftest.h"

/* >>kernels: namespaces, static, templates, launch bounds, shared memory */
namespace img {
__device__ float twice(float x) {
    __shared__ float scratch[64];   /* counted in the static shared memory of each kernel that calls twice */
    scratch[threadIdx.x % 64] = 2 * x;
    return scratch[threadIdx.x % 64];
}

__global__ void __launch_bounds__(64, 2) bounded(float *out) {
    __shared__ double own[16];
    own[threadIdx.x % 16] = 1;
    out[threadIdx.x] = twice((float)own[threadIdx.x % 16]);
}

template <int TILE, class T> __global__ void tiled(T *out) {
    const int N = TILE * 2;   /* a local constant in a shared array's size */
    __shared__ T tile[N][TILE];
    tile[threadIdx.x % N][0] = (T)TILE;
    out[threadIdx.x] = tile[threadIdx.x % N][0];
}

namespace inner {
static __global__ void set_value(int *p, int v) { *p = v; }
}   // namespace inner
}   // namespace img

__global__ void with_default(int *out, int scale = 3, int offset = 100) { out[threadIdx.x] = (int)threadIdx.x * scale + offset; }

/* >>variables */
__device__ int counter;
__device__ unsigned long long wide = 7;
__constant__ float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};
struct Pair { int a; float b; };
__device__ Pair pair = {5, 2.5f};
__device__ __align__(16) float table[8];
extern __device__ int declared_later;
__device__ int declared_later = 11;

__global__ void use_vars(int *out) {
    atomicAdd(&counter, 1);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = (int)coef[2];
        out[1] = pair.a;
        out[2] = (int)(pair.b * 2);
        out[3] = declared_later;
        out[4] = (int)wide;
        table[3] = 6.5f;
        pair.a = 9;
        wide += 1;
    }
}

/* >>tests */
ST_TEST(text_outside_code_untouched) {
    /* the rewrite must not see these as a declaration or a launch */
    const char *a = "extern __shared__ float s[]; k<<<1, 1>>>();";
    const char *b = R"x(__shared__ int z; "<<<" )" >>>)x";
    char c = '<', d = '"';
    ST_CHECK(strcmp(a, "extern __shared__ float s[]; k<<<1, 1>>>();") == 0);
    ST_CHECK(strlen(b) == strlen("__shared__ int z; \"<<<\" )\" >>>"));
    ST_CHECK(c == 60 && d == 34);
    ST_CHECK(strcmp(__FILE__ + strlen(__FILE__) - 16, "rewrite_image.cu") == 0);
}

ST_TEST(attributes_before_first_launch) {
    cudaFuncAttributes at;
    ST_CHECK(cudaFuncGetAttributes(&at, img::bounded) == cudaSuccess);
    ST_CHECKF(at.maxThreadsPerBlock == 64, "maxThreadsPerBlock %d", at.maxThreadsPerBlock);
    ST_CHECKF(at.sharedSizeBytes == 16 * sizeof(double) + 64 * sizeof(float), "sharedSizeBytes %zu", at.sharedSizeBytes);
    ST_CHECK(cudaFuncGetAttributes(&at, img::tiled<8, float>) == cudaSuccess);
    ST_CHECKF(at.sharedSizeBytes == 16 * 8 * sizeof(float), "template instance: sharedSizeBytes %zu", at.sharedSizeBytes);
    ST_CHECK(cudaFuncGetAttributes(&at, img::tiled<4, double>) == cudaSuccess);
    ST_CHECKF(at.sharedSizeBytes == 8 * 4 * sizeof(double), "template instance: sharedSizeBytes %zu", at.sharedSizeBytes);
    ST_CHECKF(at.maxThreadsPerBlock == 1024, "no bounds: %d", at.maxThreadsPerBlock);
}

ST_TEST(launch_bounds_enforced_with_control) {
    float *d = nullptr;
    ST_CHECK(cudaMalloc(&d, 128 * sizeof(float)) == cudaSuccess);
    img::bounded<<<1, 64>>>(d);   /* control: within the bound */
    ST_CHECK(cudaGetLastError() == cudaSuccess);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    img::bounded<<<1, 128>>>(d);  /* 128 threads on __launch_bounds__(64) */
    ST_CHECK(cudaGetLastError() != cudaSuccess);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(d);
}

ST_TEST(template_kernels_in_namespaces) {
    float *d = nullptr;
    ST_CHECK(cudaMalloc(&d, 32 * sizeof(float)) == cudaSuccess);
    img::tiled<8, float><<<1, 32>>>(d);
    float h[32];
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(h[0] == 8.0f && h[31] == 8.0f);
    cudaFree(d);
}

ST_TEST(launch_kernel_through_const_void_pointer) {
    int *p = nullptr;
    ST_CHECK(cudaMalloc(&p, sizeof(int)) == cudaSuccess);
    int v = 1234;
    void *args[] = {&p, &v};
    ST_CHECK(cudaLaunchKernel((const void *)img::inner::set_value, dim3(1), dim3(1), args, 0, 0) == cudaSuccess);
    int h = 0;
    ST_CHECK(cudaMemcpy(&h, p, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h == 1234, "got %d", h);
    /* a template instance, through its address */
    float *d = nullptr;
    ST_CHECK(cudaMalloc(&d, 32 * sizeof(float)) == cudaSuccess);
    void *targs[] = {&d};
    ST_CHECK(cudaLaunchKernel((const void *)img::tiled<2, float>, dim3(1), dim3(32), targs, 0, 0) == cudaSuccess);
    float f = 0;
    ST_CHECK(cudaMemcpy(&f, d + 5, sizeof f, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(f == 2.0f);
    cudaFree(p);
    cudaFree(d);
}

ST_TEST(default_arguments_of_a_kernel) {
    int *d = nullptr;
    ST_CHECK(cudaMalloc(&d, 4 * sizeof(int)) == cudaSuccess);
    int h[4];
    with_default<<<1, 4>>>(d);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h[2] == 106, "both defaults: %d", h[2]);
    with_default<<<1, 4>>>(d, 10);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h[2] == 120, "one default: %d", h[2]);
    with_default<<<1, 4>>>(d, 1, 0);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h[2] == 2, "none: %d", h[2]);
    cudaFree(d);
}

ST_TEST(device_variables_copy_and_shadow) {
    static_assert(sizeof(counter) == sizeof(int) && alignof(decltype(counter)) == alignof(int), "same size as the variable");
    static_assert(sizeof(coef) == 4 * sizeof(float) && sizeof(pair) == sizeof(Pair), "same size as the variable");
    ST_CHECK((uintptr_t)(const void *)&table % 16 == 0);   /* __align__(16) kept */
    int *d = nullptr;
    ST_CHECK(cudaMalloc(&d, 8 * sizeof(int)) == cudaSuccess);
    int zero = 0;
    ST_CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof zero) == cudaSuccess);
    use_vars<<<2, 32>>>(d);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    int h[5];
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h[0] == 3 && h[1] == 5 && h[2] == 5 && h[3] == 11 && h[4] == 7, "%d %d %d %d %d", h[0], h[1], h[2], h[3], h[4]);
    int c = 0;
    ST_CHECK(cudaMemcpyFromSymbol(&c, counter, sizeof c) == cudaSuccess);
    ST_CHECKF(c == 64, "device copy: %d", c);
    ST_CHECKF(counter == 0, "host shadow: a kernel's write is not seen by host code (%d)", (int)counter);
    ST_CHECK(pair.a == 5);   /* the shadow; the device copy says 9 */
    Pair p;
    ST_CHECK(cudaMemcpyFromSymbol(&p, pair, sizeof p) == cudaSuccess);
    ST_CHECK(p.a == 9 && p.b == 2.5f);
    float t[8];
    ST_CHECK(cudaMemcpyFromSymbol(t, table, sizeof t) == cudaSuccess);
    ST_CHECK(t[3] == 6.5f && t[0] == 0.0f);
    unsigned long long w = 0;
    ST_CHECK(cudaMemcpyFromSymbol(&w, wide, sizeof w) == cudaSuccess);
    ST_CHECK(w == 8);
    cudaFree(d);
}

ST_TEST(constant_set_by_memcpy_to_symbol) {
    float c[4] = {10, 20, 30, 40};
    ST_CHECK(cudaMemcpyToSymbol(coef, c, sizeof c) == cudaSuccess);
    int *d = nullptr;
    ST_CHECK(cudaMalloc(&d, 8 * sizeof(int)) == cudaSuccess);
    use_vars<<<1, 1>>>(d);
    int h = 0;
    ST_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(h == 30, "coef[2] on the device: %d", h);
    ST_CHECK(coef[2] == 3.0f);   /* the shadow keeps its initial value */
    void *addr = nullptr;
    size_t size = 0;
    ST_CHECK(cudaGetSymbolAddress(&addr, coef) == cudaSuccess && addr != nullptr && addr != (void *)&coef[0]);
    ST_CHECK(cudaGetSymbolSize(&size, coef) == cudaSuccess && size == sizeof(float) * 4);
    cudaFree(d);
}

int main() {
    ST_RUN(text_outside_code_untouched);
    ST_RUN(attributes_before_first_launch);
    ST_RUN(launch_bounds_enforced_with_control);
    ST_RUN(template_kernels_in_namespaces);
    ST_RUN(launch_kernel_through_const_void_pointer);
    ST_RUN(default_arguments_of_a_kernel);
    ST_RUN(device_variables_copy_and_shadow);
    ST_RUN(constant_set_by_memcpy_to_symbol);
    return st_summary();
}
