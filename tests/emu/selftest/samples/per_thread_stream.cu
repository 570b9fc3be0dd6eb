/* per_thread_stream.cu - nvcc --default-stream per-thread compiles with
   CUDA_API_PER_THREAD_DEFAULT_STREAM=1 (NVIDIA, "CUDA Compiler Driver
   NVCC", --default-stream). Prints "per_thread=N". */
#include <cuda_runtime.h>
#include <stdio.h>
int main() {
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM) && CUDA_API_PER_THREAD_DEFAULT_STREAM == 1
    printf("per_thread=1\n");
#else
    printf("per_thread=0\n");
#endif
    return 0;
}
