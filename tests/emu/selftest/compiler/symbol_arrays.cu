// __constant__ and __device__ arrays whose sizes come from macros, as
// NVIDIA's samples write them (convolutionSeparable: #define KERNEL_LENGTH
// (2 * KERNEL_RADIUS + 1), __constant__ float c_Kernel[KERNEL_LENGTH]):
// each is a device symbol that cudaMemcpyToSymbol / cudaMemcpyFromSymbol
// reach (CUDA C++ Programming Guide, "Variable Memory Space Specifiers";
// Runtime API, cudaMemcpyToSymbol). Prints PASSED when all hold.
#include <cstdio>
#include <cuda_runtime.h>

#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
#define ROWS ((3))
#define COLS (KERNEL_RADIUS / 2)

__constant__ float c_Kernel[KERNEL_LENGTH];          // [(2 * 8 + 1)]
__constant__ int c_table[ROWS][COLS];                // [((3))][(8 / 2)]
__device__ int d_out[(KERNEL_LENGTH)];
__device__ float d_sum[sizeof(float[2]) / sizeof(float)];
alignas(16) __device__ float d_aligned[(4)];

__global__ void use(void) {
    int i = threadIdx.x;
    if (i < KERNEL_LENGTH) d_out[i] = (int)(c_Kernel[i] * 2.0f) + c_table[i % ROWS][i % COLS];
    if (i == 0) { d_sum[1] = 1.5f; d_aligned[3] = 2.5f; }
}

int main(void) {
    float h_kernel[KERNEL_LENGTH];
    int h_table[ROWS][COLS];
    for (int i = 0; i < KERNEL_LENGTH; i++) h_kernel[i] = (float)i;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) h_table[r][c] = 100 * r + c;
    int bad = 0;
    if (cudaMemcpyToSymbol(c_Kernel, h_kernel, sizeof(h_kernel)) != cudaSuccess) { printf("c_Kernel: not a symbol\n"); bad++; }
    if (cudaMemcpyToSymbol(c_table, h_table, sizeof(h_table)) != cudaSuccess) { printf("c_table: not a symbol\n"); bad++; }
    use<<<1, 32>>>();
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("launch failed\n"); return 1; }
    int h_out[KERNEL_LENGTH];
    float h_sum[2], h_aligned[4];
    if (cudaMemcpyFromSymbol(h_out, d_out, sizeof(h_out)) != cudaSuccess) { printf("d_out: not a symbol\n"); bad++; }
    if (cudaMemcpyFromSymbol(h_sum, d_sum, sizeof(h_sum)) != cudaSuccess) { printf("d_sum: not a symbol\n"); bad++; }
    if (cudaMemcpyFromSymbol(h_aligned, d_aligned, sizeof(h_aligned)) != cudaSuccess) { printf("d_aligned: not a symbol\n"); bad++; }
    for (int i = 0; i < KERNEL_LENGTH && !bad; i++)
        if (h_out[i] != 2 * i + h_table[i % ROWS][i % COLS]) { printf("d_out[%d] = %d\n", i, h_out[i]); bad++; }
    if (!bad && (h_sum[1] != 1.5f || h_aligned[3] != 2.5f)) { printf("d_sum/d_aligned wrong\n"); bad++; }
    printf(bad ? "FAILED\n" : "PASSED\n");
    return bad ? 1 : 0;
}
