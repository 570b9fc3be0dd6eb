/* What the compiled image knows before the first launch (issue 24,
   findings 3 and 6). Kernels: what cudaFuncGetAttributes reports from
   __launch_bounds__ and the static shared size, the launches a GPU refuses
   because of them, cudaLaunchKernel through a const void *. Variables:
   each device has its own copy of a __device__ / __constant__ variable,
   made from its static initialiser; host code sees the host's shadow,
   never a kernel's write; only registered variables are symbols
   (cudaErrorInvalidSymbol for any other address); offset + count past the
   variable is cudaErrorInvalidValue; symbol copies are stream-ordered.
   On a GPU the compiled image says this; on the emulator nvcc-emu's
   rewrite registers it (cuemu/registry.h). This test registers its kernels
   and plain globals by hand as well (reaching a variable's device copy
   with symbol_resolve, as the rewrite does), so it holds whether or not
   the rewrite registered them; the last test is the end-to-end form. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <cuemu/registry.h>
#include "selftest.h"

#define CK(x) ST_CHECKF((x) == cudaSuccess, "%s -> %s", #x, cudaGetErrorName(x))

__global__ void __launch_bounds__(64) bounded(int *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1; }

__global__ void unbounded(int *out, int v) { out[blockIdx.x * blockDim.x + threadIdx.x] = v; }

/* 40 KiB of static shared memory: with 16 KiB of dynamic, 56 KiB, above the 48 KiB default */
__global__ void big_static(int *out) {
    __shared__ int buf[10240];
    buf[threadIdx.x] = (int)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x] + 1;
}

__global__ void never_registered(int *) {}

template <class F> static cudaError_t launch_as(F f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st, int coop,
                                               const char *name) {
    return cuemu::launch_from_array(f, g, b, a, s, st, coop, name, nullptr);
}
static cudaError_t launch_bounded(const void *f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st, int coop) {
    return launch_as((void (*)(int *))f, g, b, a, s, st, coop, "bounded");
}
static cudaError_t launch_unbounded(const void *f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st, int coop) {
    return launch_as((void (*)(int *, int))f, g, b, a, s, st, coop, "unbounded");
}
static cudaError_t launch_big(const void *f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st, int coop) {
    return launch_as((void (*)(int *))f, g, b, a, s, st, coop, "big_static");
}
static int registered = [] {
    cuemu::kernel_register((const void *)bounded, cuemu::KernelInfo{"bounded", 64, 0, 0, launch_bounded});
    cuemu::kernel_register((const void *)unbounded, cuemu::KernelInfo{"unbounded", 0, 0, 0, launch_unbounded});
    cuemu::kernel_register((const void *)big_static, cuemu::KernelInfo{"big_static", 0, 0, 10240 * sizeof(int), launch_big});
    return 0;
}();

ST_TEST(attributes_before_the_first_launch) {
    cudaFuncAttributes a;
    CK(cudaFuncGetAttributes(&a, bounded));
    ST_CHECKF(a.maxThreadsPerBlock == 64, "bounded: maxThreadsPerBlock %d", a.maxThreadsPerBlock);
    CK(cudaFuncGetAttributes(&a, unbounded));
    ST_CHECKF(a.maxThreadsPerBlock == 1024, "unbounded: maxThreadsPerBlock %d", a.maxThreadsPerBlock);
    CK(cudaFuncGetAttributes(&a, big_static));
    ST_CHECKF(a.sharedSizeBytes == 40960, "big_static: sharedSizeBytes %zu before any launch", a.sharedSizeBytes);
    ST_CHECKF(a.maxDynamicSharedSizeBytes == 49152 - 40960, "maxDynamicSharedSizeBytes %d", a.maxDynamicSharedSizeBytes);
}

ST_TEST(launch_bounds_enforced) {
    int *d;
    CK(cudaMalloc(&d, 1024 * sizeof(int)));
    bounded<<<1, 64>>>(d);   /* control: at the bound */
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    bounded<<<1, 128>>>(d);
    cudaError_t e = cudaGetLastError();
    ST_CHECKF(e == cudaErrorLaunchOutOfResources, "128 threads on a bound of 64: %s", cudaGetErrorName(e));
    unbounded<<<1, 1024>>>(d, 3);   /* control: no bound, the device's 1024 */
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaFree(d);
}

ST_TEST(static_shared_counts_on_the_first_launch) {
    int *d;
    CK(cudaMalloc(&d, 256 * sizeof(int)));
    /* the very first launch: 40 KiB static + 16 KiB dynamic without the opt-in */
    big_static<<<1, 32, 16384>>>(d);
    cudaError_t e = cudaGetLastError();
    ST_CHECKF(e == cudaErrorInvalidValue, "56 KiB without the opt-in on the first launch: %s", cudaGetErrorName(e));
    big_static<<<1, 32, 8192>>>(d);   /* control: exactly 48 KiB */
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int h[32];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 1 && h[31] == 32);
    /* an opt-in above the device's maximum less the static size fails in cudaFuncSetAttribute */
    int optin = 0, dev = 0;
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    e = cudaFuncSetAttribute(big_static, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 40960 + 1);
    ST_CHECKF(e == cudaErrorInvalidValue, "opt-in above the maximum: %s", cudaGetErrorName(e));
    cudaGetLastError();
    CK(cudaFuncSetAttribute(big_static, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 40960));
    big_static<<<1, 32, 16384>>>(d);   /* now allowed */
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaFree(d);
}

ST_TEST(launch_kernel_through_void_pointer) {
    int *d, v = 7;
    CK(cudaMalloc(&d, 64 * sizeof(int)));
    void *args[] = {&d, &v};
    const void *f = (const void *)unbounded;
    CK(cudaLaunchKernel(f, dim3(2), dim3(32), args, 0, 0));
    int h[64];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 7 && h[63] == 7);
    /* cudaLaunchKernelExC and the cooperative form take the same path */
    v = 9;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3(2);
    cfg.blockDim = dim3(32);
    CK(cudaLaunchKernelExC(&cfg, f, args));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 9 && h[63] == 9);
    v = 11;
    CK(cudaLaunchCooperativeKernel(f, dim3(2), dim3(32), args, 0, 0));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 11);
    /* the bound holds through the void * too */
    void *args1[] = {&d};
    cudaError_t e = cudaLaunchKernel((const void *)bounded, dim3(1), dim3(128), args1, 0, 0);
    ST_CHECKF(e == cudaErrorLaunchOutOfResources, "bound through cudaLaunchKernel: %s", cudaGetErrorName(e));
    cudaGetLastError();
    /* an address that is no registered kernel */
    static int not_a_kernel;
    e = cudaLaunchKernel((const void *)&not_a_kernel, dim3(1), dim3(1), args1, 0, 0);
    ST_CHECKF(e == cudaErrorInvalidDeviceFunction, "a host variable as a kernel: %s", cudaGetErrorName(e));
    cudaGetLastError();
    cudaFree(d);
}

ST_TEST(architecture_flags_ignored) {
    /* H3's rewrite may append "|ftz" or other flags to the architecture list */
    int *d;
    CK(cudaMalloc(&d, 32 * sizeof(int)));
    cudaError_t e = cuemu::launch_from_array((void (*)(int *, int))unbounded, dim3(1), dim3(32), nullptr, 0, 0, 0, "x",
                                             "sm_90|ftz");
    ST_CHECK(e == cudaErrorInvalidValue);   /* no args array: the launcher's own check */
    int v = 5;
    void *args[] = {&d, &v};
    e = cuemu::launch_from_array((void (*)(int *, int))unbounded, dim3(1), dim3(32), args, 0, 0, 0, "x", "sm_90|ftz|prec-div");
    ST_CHECKF(e == cudaSuccess, "sm_90|ftz on a 9.0 device: %s", cudaGetErrorName(e));
    e = cuemu::launch_from_array((void (*)(int *, int))unbounded, dim3(1), dim3(32), args, 0, 0, 0, "x", "sm_100|ftz");
    ST_CHECKF(e == cudaErrorNoKernelImageForDevice, "sm_100|ftz on a 9.0 device: %s", cudaGetErrorName(e));
    cudaGetLastError();
    int h[32];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 5);
    cudaFree(d);
}

/* >>variables */
/* "__device__ int counter;" and "__constant__ float coef[4];" as the rewrite sees them */
static int counter;
static float coef[4];
static float table[4] = {1, 2, 3, 4};
static int not_a_symbol;
static int registered_vars = [] {
    cuemu::symbol_register(&counter, sizeof counter, "counter", 0);
    cuemu::symbol_register(coef, sizeof coef, "coef", 1);
    cuemu::symbol_register(table, sizeof table, "table", 0);
    return 0;
}();
#define DEV(var) (*(decltype(&(var)))cuemu::symbol_resolve((void *)&(var)))

__global__ void bump(int n) {
    if (threadIdx.x < (unsigned)n) atomicAdd(&DEV(counter), 1);
}
__global__ void scale(float *out) { out[threadIdx.x] = DEV(coef)[threadIdx.x % 4] * DEV(table)[threadIdx.x % 4]; }

ST_TEST(kernel_writes_device_copy_not_shadow) {
    int zero = 0, got = -1;
    counter = 1234;   /* the host's shadow */
    CK(cudaMemcpyToSymbol(counter, &zero, sizeof zero));
    ST_CHECKF(counter == 1234, "host shadow changed by cudaMemcpyToSymbol: %d", counter);
    bump<<<1, 32>>>(20);
    CK(cudaDeviceSynchronize());
    ST_CHECKF(counter == 1234, "host read sees the kernel's write: %d", counter);
    CK(cudaMemcpyFromSymbol(&got, counter, sizeof got));
    ST_CHECKF(got == 20, "cudaMemcpyFromSymbol: %d", got);
}

ST_TEST(static_initialiser_and_constant_copy) {
    float c[4] = {1, 10, 100, 1000}, h[8], *out;
    table[0] = 99;   /* after registration: the device copy keeps the initialiser */
    CK(cudaMemcpyToSymbol(coef, c, sizeof c));
    CK(cudaMalloc(&out, sizeof h));
    scale<<<1, 8>>>(out);
    CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(h[0] == 1 && h[1] == 20 && h[2] == 300 && h[7] == 4000, "got %g %g %g %g", h[0], h[1], h[2], h[7]);
    table[0] = 1;
    /* a partial copy at an offset */
    float two[2] = {5, 6};
    CK(cudaMemcpyToSymbol(coef, two, sizeof two, 2 * sizeof(float)));
    float back[4];
    CK(cudaMemcpyFromSymbol(back, coef, sizeof back));
    ST_CHECK(back[0] == 1 && back[1] == 10 && back[2] == 5 && back[3] == 6);
    cudaFree(out);
}

ST_TEST(only_registered_variables_are_symbols) {
    int v = 1;
    void *p = nullptr;
    size_t sz = 0;
    cudaError_t e = cudaMemcpyToSymbol((const void *)&not_a_symbol, &v, sizeof v, 0, cudaMemcpyHostToDevice);
    ST_CHECKF(e == cudaErrorInvalidSymbol, "MemcpyToSymbol of a host global: %s", cudaGetErrorName(e));
    e = cudaMemcpyFromSymbol(&v, (const void *)&not_a_symbol, sizeof v, 0, cudaMemcpyDeviceToHost);
    ST_CHECKF(e == cudaErrorInvalidSymbol, "MemcpyFromSymbol of a host global: %s", cudaGetErrorName(e));
    e = cudaGetSymbolAddress(&p, (const void *)&not_a_symbol);
    ST_CHECKF(e == cudaErrorInvalidSymbol, "GetSymbolAddress of a host global: %s", cudaGetErrorName(e));
    e = cudaGetSymbolSize(&sz, (const void *)&not_a_symbol);
    ST_CHECKF(e == cudaErrorInvalidSymbol, "GetSymbolSize of a host global: %s", cudaGetErrorName(e));
    cudaGetLastError();
    /* controls */
    CK(cudaGetSymbolSize(&sz, (const void *)coef));
    ST_CHECK(sz == sizeof coef);
    CK(cudaGetSymbolAddress(&p, (const void *)coef));
    ST_CHECK(p != (void *)coef);
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, p));
    ST_CHECKF(a.type == cudaMemoryTypeDevice, "the symbol's address is device memory (type %d)", (int)a.type);
    float c[4];
    CK(cudaMemcpy(c, p, sizeof c, cudaMemcpyDeviceToHost));
    ST_CHECK(c[0] == 1 && c[3] == 6);
}

ST_TEST(offset_and_count_past_the_variable) {
    float c[5] = {0};
    cudaError_t e = cudaMemcpyToSymbol((const void *)coef, c, sizeof c, 0, cudaMemcpyHostToDevice);
    ST_CHECKF(e == cudaErrorInvalidValue, "count past the end: %s", cudaGetErrorName(e));
    e = cudaMemcpyToSymbol((const void *)coef, c, sizeof(float), 4 * sizeof(float), cudaMemcpyHostToDevice);
    ST_CHECKF(e == cudaErrorInvalidValue, "offset at the end + 4: %s", cudaGetErrorName(e));
    e = cudaMemcpyFromSymbol(c, (const void *)coef, 2 * sizeof(float), 3 * sizeof(float), cudaMemcpyDeviceToHost);
    ST_CHECKF(e == cudaErrorInvalidValue, "from, offset + count past: %s", cudaGetErrorName(e));
    e = cudaMemcpyToSymbol((const void *)coef, c, sizeof(float), 0, cudaMemcpyDeviceToHost);
    ST_CHECKF(e == cudaErrorInvalidMemcpyDirection, "wrong direction: %s", cudaGetErrorName(e));
    cudaGetLastError();
    CK(cudaMemcpyToSymbol((const void *)coef, c, sizeof(float), 3 * sizeof(float), cudaMemcpyHostToDevice));   /* control */
}

ST_TEST(symbol_copies_are_stream_ordered) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *pinned;
    CK(cudaMallocHost(&pinned, sizeof(int)));
    *pinned = -1;
    int zero = 0;
    CK(cudaMemcpyToSymbolAsync(counter, &zero, sizeof zero, 0, cudaMemcpyHostToDevice, s));
    bump<<<1, 32, 0, s>>>(7);
    CK(cudaMemcpyFromSymbolAsync(pinned, counter, sizeof(int), 0, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    ST_CHECKF(*pinned == 7, "after the stream: %d", *pinned);
    cudaFreeHost(pinned);
    cudaStreamDestroy(s);
}

ST_TEST(device_reset_restores_initialisers) {
    int v = 555, got = 0;
    float t[4];
    CK(cudaMemcpyToSymbol(counter, &v, sizeof v));
    float nine = 9;
    CK(cudaMemcpyToSymbol(table, &nine, sizeof nine));
    CK(cudaDeviceReset());   /* the module reloads: its variables start again from their initialisers */
    CK(cudaMemcpyFromSymbol(&got, counter, sizeof got));
    CK(cudaMemcpyFromSymbol(t, table, sizeof t));
    ST_CHECKF(got == 0 && t[0] == 1 && t[3] == 4, "after cudaDeviceReset: counter %d, table[0] %g", got, t[0]);
}

/* The end-to-end form: nvcc-emu's rewrite registers these. */
__device__ int e2e_counter;
__constant__ float e2e_coef[16];
__global__ void e2e_kernel(float *out) {
    atomicAdd(&e2e_counter, 1);
    out[threadIdx.x] = e2e_coef[threadIdx.x];
}

ST_TEST(end_to_end_device_and_constant_variables) {
    size_t sz = 0;
    if (cudaGetSymbolSize(&sz, (const void *)&e2e_counter) != cudaSuccess) {
        cudaGetLastError();
        printf("     (nvcc-emu registered no __device__ variable: end-to-end form not checked)\n");
        return;
    }
    float c[16], *out, h[16];
    for (int i = 0; i < 16; i++) c[i] = (float)i * 2;
    CK(cudaMemcpyToSymbol(e2e_coef, c, sizeof c));
    CK(cudaMalloc(&out, sizeof h));
    e2e_kernel<<<1, 16>>>(out);
    CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[0] == 0 && h[15] == 30);
    ST_CHECKF(e2e_counter == 0, "the host's e2e_counter sees the kernel's write: %d", (int)e2e_counter);
    int got = 0;
    CK(cudaMemcpyFromSymbol(&got, e2e_counter, sizeof got));
    ST_CHECKF(got == 16, "cudaMemcpyFromSymbol: %d", got);
    cudaFree(out);
}

int main() {
    (void)registered;
    (void)registered_vars;
    (void)never_registered;
    ST_RUN(attributes_before_the_first_launch);
    ST_RUN(launch_bounds_enforced);
    ST_RUN(static_shared_counts_on_the_first_launch);
    ST_RUN(launch_kernel_through_void_pointer);
    ST_RUN(architecture_flags_ignored);
    ST_RUN(kernel_writes_device_copy_not_shadow);
    ST_RUN(static_initialiser_and_constant_copy);
    ST_RUN(only_registered_variables_are_symbols);
    ST_RUN(offset_and_count_past_the_variable);
    ST_RUN(symbol_copies_are_stream_ordered);
    ST_RUN(device_reset_restores_initialisers);
    ST_RUN(end_to_end_device_and_constant_variables);
    return st_summary();
}
