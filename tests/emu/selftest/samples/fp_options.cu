/* fp_options.cu - nvcc's floating-point options reach the device code
   (NVIDIA, "CUDA Compiler Driver NVCC": --ftz, --prec-div, --prec-sqrt,
   --use_fast_math). Prints the macros nvcc defines and whether a kernel's
   single-precision subnormal result is flushed to zero:
   "fast_math=F ftz=Z prec_div=D prec_sqrt=S flushed=X". */
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void subnormal(float *x) { x[1] = x[0] * 0.5f; }

int main() {
#ifdef __USE_FAST_MATH__
    int fast = 1;
#else
    int fast = 0;
#endif
#ifdef __CUDA_FTZ
    int ftz = 1;
#else
    int ftz = 0;
#endif
#ifdef __CUDA_PREC_DIV
    int pdiv = 1;
#else
    int pdiv = 0;
#endif
#ifdef __CUDA_PREC_SQRT
    int psqrt = 1;
#else
    int psqrt = 0;
#endif
    float h[2] = {1.0e-38f, -1.0f}, *d;
    if (cudaMalloc(&d, sizeof h) != cudaSuccess) return 2;
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    subnormal<<<1, 1>>>(d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("fast_math=%d ftz=%d prec_div=%d prec_sqrt=%d flushed=%d\n", fast, ftz, pdiv, psqrt, h[1] == 0.0f);
    return 0;
}
