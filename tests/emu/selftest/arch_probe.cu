/* Launches one kernel, with <<<>>> and with cudaLaunchKernel, and says
   whether the device ran it: exit 0 when both did, 3 when both said
   cudaErrorNoKernelImageForDevice, 1 otherwise (4: the two disagreed).
   Built with different -arch / -gencode options by run.sh. */
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void probe(int *out) { *out = 42; }

int main(void) {
    int *d, h = 0;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) return 1;
    probe<<<1, 1>>>(d);
    cudaError_t e = cudaGetLastError();
    void *args[] = {&d};
    cudaError_t e2 = cudaLaunchKernel(probe, dim3(1), dim3(1), args, 0, 0);
    cudaGetLastError();
    if (e != e2) return 4;
    if (e == cudaErrorNoKernelImageForDevice) return 3;
    if (e != cudaSuccess || cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
    return h == 42 ? 0 : 1;
}
