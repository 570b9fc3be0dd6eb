/* cublas_workspace.cu - cublasSetWorkspace: a user workspace is used by
   the calls that follow (until cublasSetStream resets it to the default
   pool), so it must stay valid device memory while they run; freeing it
   and calling cuBLAS again faults the device (emulator; a real GPU may or
   may not notice). An ordinary CUDA program. */
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <math.h>

#include "selftest.h"

static cublasHandle_t g_h;

static bool small_gemm_ok() {
    float h[12] = {1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 0, 0};  /* A 2x2 = [1 3; 2 4], B = I */
    float *d;
    cudaMalloc((void **)&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    float al = 1, be = 0, c[4] = {0, 0, 0, 0};
    bool ok = cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &al, d, 2, d + 6, 2, &be, d + 8, 2) ==
              CUBLAS_STATUS_SUCCESS;
    cudaMemcpy(c, d + 8, sizeof c, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return ok && c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4;
}

ST_TEST(workspace_in_use) {
    void *ws;
    cudaMalloc(&ws, 1 << 20);
    ST_CHECK(cublasSetWorkspace(g_h, ws, 1 << 20) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(small_gemm_ok());
    /* back to the default pool: the buffer may go */
    ST_CHECK(cublasSetStream(g_h, 0) == CUBLAS_STATUS_SUCCESS);
    cudaFree(ws);
    ST_CHECK(small_gemm_ok());
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

/* Last (sticky): the workspace freed while the handle still uses it. */
ST_TEST(freed_workspace_faults) {
    void *ws;
    cudaMalloc(&ws, 1 << 20);
    ST_CHECK(cublasSetWorkspace(g_h, ws, 1 << 20) == CUBLAS_STATUS_SUCCESS);
    cudaFree(ws);
    small_gemm_ok();
#ifdef __CUEMU__
    ST_CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
#endif
}

int main() {
    if (cublasCreate(&g_h) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL cublasCreate\n");
        return 1;
    }
    ST_RUN(workspace_in_use);
    ST_RUN(freed_workspace_faults);
    cublasDestroy(g_h);
    return st_summary();
}
