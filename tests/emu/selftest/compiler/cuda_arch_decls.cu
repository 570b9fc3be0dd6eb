// Declarations only nvcc's device pass has (nvcc manual, "Virtual
// Architecture Macros": __CUDA_ARCH__ is defined only when compiling device
// code, so '#if __CUDA_ARCH__ >= 700' around an #include or a whole
// __device__ function, type or variable declares it in the device pass
// only; the host pass, which parses the whole file too, never sees it).
// The control (no CASE): a header, a type, a template, an explicit
// specialization and a namespace's function that only the device pass
// declares, used by a kernel
// under the same #if; host code uses what only the host pass declares.
// Prints PASSED. Compiles with nvcc -arch=sm_90 -c as it is.
// -DCASE=1: host code names a type only the device pass declares: nvcc's
//           host pass fails, so must nvcc-emu.
// -DCASE=2: the device pass adds an overload of a function both passes
//           declare (host and device code would resolve calls differently):
//           refused by nvcc-emu (nvcc compiles it).
// -DCASE=3: a data member only the device pass has (two layouts of one
//           class): refused (nvcc compiles it).
// -DCASE=4: a typedef the passes declare differently: refused (nvcc
//           compiles it).
// -DCASE=5: built for sm_75 and sm_80, a function only the sm_80 pass
//           declares: refused (nvcc compiles it).
// -DCASE=6: a __device__ variable only the device pass declares: nvcc
//           fails (its host-side registration names it), so must nvcc-emu.
// -DCASE=7: a __global__ function only the device pass declares: the same.
#include <cstdio>
#include <cuda_runtime.h>
#if __CUDA_ARCH__ >= 700
#include <cuda/barrier>
#endif

#ifdef __CUDA_ARCH__
struct DeviceOnly {
    int v;
    __device__ int twice() const { return 2 * v; }
};
template <int N> __device__ int scaled(int x) { return N * x; }
namespace dev {
__device__ int plus_one(int x) { return x + 1; }
}  // namespace dev
#else
static int host_only(void) { return 7; }
#endif
// an explicit specialization only the device pass has (cuda-samples'
// reduction: '#if __CUDA_ARCH__ >= 800' around one): device code uses it
template <class T> __device__ T offset_of(T) { return 0; }
#ifdef __CUDA_ARCH__
template <> __device__ int offset_of<int>(int) { return 1000; }
#endif

#if CASE == 2
__host__ __device__ int pick(long) { return 1; }
#  ifdef __CUDA_ARCH__
__device__ int pick(int) { return 2; }
#  endif
#endif
#if CASE == 3
struct TwoLayouts {
    int a;
#  ifdef __CUDA_ARCH__
    int b;
#  endif
};
#endif
#if CASE == 4
#  ifdef __CUDA_ARCH__
typedef double real_t;
#  else
typedef float real_t;
#  endif
#endif
#if CASE == 6 && defined(__CUDA_ARCH__)
__device__ int device_only_count;
#endif
#if CASE == 7 && defined(__CUDA_ARCH__)
__global__ void device_only_kernel(int *p) { *p = 1; }
#endif
#if CASE == 5 && __CUDA_ARCH__ >= 800
__device__ int only_on_80(void) { return 80; }
#endif

__global__ void uses_them(int *out) {
#if __CUDA_ARCH__ >= 700
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0)
        init(&bar, blockDim.x);
    __syncthreads();
    __shared__ int count;
    if (threadIdx.x == 0)
        count = 0;
    __syncthreads();
    DeviceOnly d{(int)threadIdx.x};
    atomicAdd(&count, 1);
    bar.arrive_and_wait();
    out[threadIdx.x] = d.twice() + scaled<3>(1) + dev::plus_one(count) + offset_of(0);
#endif
}

int main(void) {
#if CASE == 1
    DeviceOnly x{1};
    (void)x;
#endif
    int *d, h[64], bad = 0;
    cudaMalloc(&d, sizeof(h));
    cudaMemset(d, 0, sizeof(h));
    uses_them<<<1, 64>>>(d);
    if (cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess) {
        printf("launch failed\n");
        return 1;
    }
    for (int i = 0; i < 64; i++)
        if (h[i] != 2 * i + 3 + 65 + 1000) {
            printf("out[%d] = %d, want %d\n", i, h[i], 2 * i + 3 + 65 + 1000);
            bad++;
        }
#ifndef __CUDA_ARCH__   // (nvcc's device pass parses host code too)
    if (host_only() != 7)
        bad++;
#endif
    printf(bad ? "FAILED\n" : "PASSED\n");
    return bad ? 1 : 0;
}
