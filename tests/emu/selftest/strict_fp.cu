/* Device code runs in the device's floating-point state, not the host
   thread's: round to nearest, subnormals kept (CUDA C++ Programming Guide,
   "Floating-Point Standard"; nvcc's --ftz defaults to false), whatever
   fesetround() or FTZ/DAZ (gpudl_cpu_flush_denormals) the host thread set;
   the host thread's state is back after the kernel. A translation unit
   built with --ftz=true flushes float subnormals (its targets string carries
   "|ftz"). Also: an uninitialised local of device code holds garbage, as a
   register does, not zero (an accumulator never zeroed must not sum right). */
#include <cuda_runtime.h>
#include <fenv.h>
#if defined(__x86_64__)
#  include <xmmintrin.h>
#endif
#include "selftest.h"

__global__ void fp_probe(float a, float b, float sub, float one, float tiny, float *out) {
    out[0] = a * b;        /* 1e-20 * 1e-20: a subnormal result (FTZ flushes it) */
    out[1] = sub * one;    /* a subnormal input (DAZ reads it as zero) */
    out[2] = one + tiny;   /* 1 + 1e-8: 1 when rounding to nearest, the next float up when rounding up */
}

static float g_h[3];
static bool probe(const char *archs) {
    float *d;
    if (cudaMalloc(&d, sizeof g_h) != cudaSuccess) return false;
    if (archs)
        ::cuemu::kernel_call(fp_probe, "fp_probe", __FILE__, __LINE__, archs, 1, 1)(1e-20f, 1e-20f, 1e-40f, 1.0f, 1e-8f, d);
    else
        fp_probe<<<1, 1>>>(1e-20f, 1e-20f, 1e-40f, 1.0f, 1e-8f, d);
    bool ok = cudaMemcpy(g_h, d, sizeof g_h, cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(d);
    return ok;
}

static unsigned host_ftz_daz_on(void) {
#if defined(__x86_64__)
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u);
    return saved;
#else
    return 0;
#endif
}
static unsigned host_ftz_daz_bits(void) {
#if defined(__x86_64__)
    return _mm_getcsr() & 0x8040u;
#else
    return 0x8040u;
#endif
}
static void host_restore(unsigned saved) {
#if defined(__x86_64__)
    _mm_setcsr(saved);
#else
    (void)saved;
#endif
}

ST_TEST(kernel_keeps_subnormals_under_host_ftz_daz) {
    unsigned saved = host_ftz_daz_on();
    bool ran = probe(NULL);
    unsigned after = host_ftz_daz_bits();
    host_restore(saved);   /* before looking at the results: DAZ would read a subnormal as zero here too */
    ST_CHECK(ran);
    ST_CHECKF(g_h[0] != 0.0f && g_h[0] < 1.2e-38f, "1e-20f * 1e-20f = %g (flushed by the host's FTZ)", (double)g_h[0]);
    ST_CHECKF(g_h[1] != 0.0f, "a subnormal input read as %g (the host's DAZ)", (double)g_h[1]);
    ST_CHECKF(after == 0x8040u, "the host thread's FTZ/DAZ were not restored");
}

ST_TEST(kernel_rounds_to_nearest_under_host_upward) {
    int was = fegetround();
    fesetround(FE_UPWARD);
    ST_CHECK(probe(NULL));
    ST_CHECKF(g_h[2] == 1.0f, "1 + 1e-8 = %.9g (rounded up as the host thread is)", (double)g_h[2]);
    ST_CHECKF(fegetround() == FE_UPWARD, "the host thread's rounding mode was not restored");
    fesetround(was);
}

ST_TEST(ftz_translation_unit_flushes) {
    ST_CHECK(probe("sm_80,compute_80|ftz"));
    ST_CHECKF(g_h[0] == 0.0f, "--ftz=true: 1e-20f * 1e-20f = %g, not flushed", (double)g_h[0]);
    ST_CHECK(probe("sm_80,compute_80"));   /* the control: the same without it */
    ST_CHECKF(g_h[0] != 0.0f, "without --ftz: 1e-20f * 1e-20f = %g", (double)g_h[0]);
    ST_CHECKF(host_ftz_daz_bits() == 0, "the host thread's FTZ/DAZ leaked from the kernel");
}

/* >>uninitialised locals */
__global__ void sum_forgot_zero(const float *x, int n, float *out) {
    float acc;   /* never zeroed: the student's bug */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
    for (int i = 0; i < n; i++) acc += x[i];
#pragma GCC diagnostic pop
    out[threadIdx.x] = acc;
}
__global__ void sum_zeroed(const float *x, int n, float *out) {
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += x[i];
    out[threadIdx.x] = acc;
}

ST_TEST(uninitialised_accumulator_is_garbage) {
    float hx[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ho[32], *x, *o;
    ST_CHECK(cudaMalloc(&x, sizeof hx) == cudaSuccess && cudaMalloc(&o, sizeof ho) == cudaSuccess);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    sum_zeroed<<<1, 32>>>(x, 8, o);
    ST_CHECK(cudaMemcpy(ho, o, sizeof ho, cudaMemcpyDeviceToHost) == cudaSuccess);
    int right = 0;
    for (int i = 0; i < 32; i++) right += ho[i] == 36.0f;
    ST_CHECKF(right == 32, "the control: %d of 32 threads summed to 36", right);
    sum_forgot_zero<<<1, 32>>>(x, 8, o);
    ST_CHECK(cudaMemcpy(ho, o, sizeof ho, cudaMemcpyDeviceToHost) == cudaSuccess);
    right = 0;
    for (int i = 0; i < 32; i++) right += ho[i] == 36.0f;
    ST_CHECKF(right == 0, "%d of 32 threads summed to 36 from an accumulator never zeroed", right);
    cudaFree(x);
    cudaFree(o);
}

int main(void) {
    ST_RUN(kernel_keeps_subnormals_under_host_ftz_daz);
    ST_RUN(kernel_rounds_to_nearest_under_host_upward);
    ST_RUN(ftz_translation_unit_flushes);
    ST_RUN(uninitialised_accumulator_is_garbage);
    return st_summary();
}
