// Device code the emulated device refuses at compile time, one case per
// -DCASE=N (part_compiler.sh); without CASE (the control) the same program
// without the refused construct builds and prints PASSED (its host code
// has an asm statement of its own, which is the host compiler's).
//   1 inline PTX in a kernel        2 asm volatile in a __device__ function
//   3 inline PTX in a member         4 a kernel launch in a kernel (dynamic parallelism)
//   5 cudaDeviceSynchronize in device code (device runtime)
//   6 asm in a lambda in a kernel
#include <cstdio>
#include <cuda_runtime.h>

__global__ void child(int *out) { out[1] = 7; }

__device__ unsigned lane(void) {
#if CASE == 2
    unsigned r;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
#else
    return threadIdx.x % 32;
#endif
}

struct Op {
    __device__ int twice(int x) const {
#if CASE == 3
        int r;
        asm("add.s32 %0, %1, %1;" : "=r"(r) : "r"(x));
        return r;
#else
        return x + x;
#endif
    }
};

__global__ void parent(int *out) {
#if CASE == 1
    asm("trap;");
#endif
#if CASE == 4
    if (threadIdx.x == 0) child<<<1, 1>>>(out);
#endif
#if CASE == 5
    cudaDeviceSynchronize();
#endif
    auto f = [] __device__ (int x) {
#if CASE == 6
        asm("membar.gl;");
#endif
        return x + 1;
    };
    if (threadIdx.x == 0) out[0] = Op().twice(f(20)) + (int)lane();
}

int main(void) {
    int *d, h[2] = {0, 0};
    cudaMalloc(&d, sizeof(h));
    cudaMemset(d, 0, sizeof(h));
    parent<<<1, 32>>>(d);
    __asm__ __volatile__("" ::: "memory");   // host code's inline assembly is the host compiler's: fine
    child<<<1, 1>>>(d);   // host code launches: fine
    cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
    printf("%d %d\n", h[0], h[1]);
    bool good = h[0] == 42 && h[1] == 7;
    printf(good ? "PASSED\n" : "FAILED\n");
    return good ? 0 : 1;
}
