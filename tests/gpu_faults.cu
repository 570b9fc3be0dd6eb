/* Test-only kernels (not part of the library): faults on purpose.
   - an out-of-bounds write: the control case compute-sanitizer must flag,
     which proves the sanitizer really runs;
   - a write to an illegal address: a sticky CUDA error, after which the
     context is unusable and gpudl must say so on every call. */
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void test_oob_write_kernel(float *buf, int n) { buf[n + threadIdx.x] = 1.0f; }
__global__ void test_illegal_address_kernel(float *p) { p[threadIdx.x] = 1.0f; }

extern "C" int test_k_oob_write(void *stream, float *buf, int n) {
    test_oob_write_kernel<<<1, 32, 0, (cudaStream_t)stream>>>(buf, n);
    return (int)cudaGetLastError();
}

extern "C" int test_k_illegal_address(void *stream) {
    test_illegal_address_kernel<<<1, 32, 0, (cudaStream_t)stream>>>((float *)(uintptr_t)0x10);
    return (int)cudaGetLastError();
}
