// __CUDA_ARCH__ as nvcc's two passes define it (nvcc manual, "Virtual
// Architecture Macros"): the target's number in device code (__global__ and
// __device__ functions, the device side of a __host__ __device__ function),
// undefined in host code. -DWANT=N: the value device code must see
// (-DWANT=0 with -DSAME_ON_TARGETS: only tests that hold on every target;
// with several targets, WANT_ARCH=N in the environment: the value of the
// image the device runs, by NVIDIA's rules).
// -DCASE=1: a __device__ function only the device pass declares (unused).
// -DFEAT=1: built for sm_90a, whose device pass also has
// __CUDA_ARCH_FEAT_SM90_ALL and __CUDA_ARCH_SPECIFIC__ (nvcc 13).
// Prints PASSED when all hold.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#if !defined(__CUDA_ARCH__)
static int host_only_helper(void) { return 5; }   // host pass only: fine
#endif
#if CASE == 1 && defined(__CUDA_ARCH__)
__device__ int device_only_helper(void) { return 1; }
#endif

__host__ __device__ int where_am_i(void) {
#if defined(__CUDA_ARCH__) && defined(SAME_ON_TARGETS)
    return 1;
#elif defined(__CUDA_ARCH__)
    return __CUDA_ARCH__;
#else
    return 0;
#endif
}

__device__ int generation(void) {
#if defined(SAME_ON_TARGETS) && __CUDA_ARCH__ >= 750
    return 1;
#elif __CUDA_ARCH__ >= 900
    return 3;
#elif __CUDA_ARCH__ >= 800
    return 2;
#elif __CUDA_ARCH__ >= 700
    return 1;
#else
    return 0;   // the host pass's text: never what a kernel runs
#endif
}

// member functions: the same rules
struct Probe {
    __host__ __device__ int arch() const {
#if defined(__CUDA_ARCH__) && !defined(SAME_ON_TARGETS)
        return __CUDA_ARCH__;
#elif defined(__CUDA_ARCH__)
        return 1;
#else
        return 0;
#endif
    }
};

__global__ void probe(int *out) {
    out[3] = Probe().arch();
#if defined(FEAT) && defined(__CUDA_ARCH__)
#  if !defined(__CUDA_ARCH_FEAT_SM90_ALL) || __CUDA_ARCH_SPECIFIC__ != 900 || __CUDA_ARCH_FAMILY_SPECIFIC__ != 900
    out[0] = -1;
    return;
#  endif
#endif
#if defined(SAME_ON_TARGETS)
#  if __CUDA_ARCH__ >= 750
    out[0] = 1;
#  endif
    out[1] = where_am_i();
    out[2] = generation();
#else
#  if __CUDA_ARCH__ >= 700
    out[0] = __CUDA_ARCH__;
#  endif
    out[1] = where_am_i();
    out[2] = generation();
#endif
}

int main(void) {
    int bad = 0;
#ifdef __CUDA_ARCH__
    printf("__CUDA_ARCH__ is defined in host code\n");
    bad++;
#endif
    if (where_am_i() != 0) { printf("host call of where_am_i: %d, want 0\n", where_am_i()); bad++; }
#if !defined(__CUDA_ARCH__)
    if (host_only_helper() != 5) bad++;   // (nvcc's device pass parses host code too)
#endif
    int *d, h[4] = {0, 0, 0, 0};
    cudaMalloc(&d, sizeof(h));
    cudaMemset(d, 0, sizeof(h));
    probe<<<1, 1>>>(d);
    if (cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess) { printf("launch failed\n"); return 1; }
#if defined(SAME_ON_TARGETS)
    int want[4] = {1, 1, 1, 1};
#else
    int w = getenv("WANT_ARCH") ? atoi(getenv("WANT_ARCH")) : WANT;
    int want[4] = {w, w, w >= 900 ? 3 : w >= 800 ? 2 : 1, w};
#endif
    if (Probe().arch() != 0) { printf("host call of Probe::arch: %d, want 0\n", Probe().arch()); bad++; }
    for (int i = 0; i < 4; i++)
        if (h[i] != want[i]) { printf("out[%d] = %d, want %d\n", i, h[i], want[i]); bad++; }
    printf(bad ? "FAILED\n" : "PASSED\n");
    return bad ? 1 : 0;
}
