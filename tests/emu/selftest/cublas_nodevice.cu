/* cublas_nodevice.cu - cuBLAS and cuBLASLt on a machine without a device:
   cublasCreate / cublasLtCreate fail with CUBLAS_STATUS_NOT_INITIALIZED
   (documented: "the CUDA Runtime initialization failed"). Emulator only:
   it selects no device with GPUDL_EMU_DEVICE=none before the first CUDA
   call; on a real GPU machine it has nothing to test and passes. */
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cublas_v2.h>

#include <stdlib.h>

#include "selftest.h"

ST_TEST(create_without_device) {
#ifdef __CUEMU__
    int n = -1;
    ST_CHECK(cudaGetDeviceCount(&n) != cudaSuccess || n == 0);
    cublasHandle_t h = nullptr;
    ST_CHECK(cublasCreate(&h) == CUBLAS_STATUS_NOT_INITIALIZED);
    cublasLtHandle_t lt = nullptr;
    ST_CHECK(cublasLtCreate(&lt) == CUBLAS_STATUS_NOT_INITIALIZED);
    /* what needs no device still works */
    int v = 0;
    ST_CHECK(cublasGetVersion(nullptr, &v) == CUBLAS_STATUS_SUCCESS && v == CUBLAS_VERSION);
    ST_CHECK(cublasLtGetVersion() == CUBLAS_VERSION);
    ST_CHECK(cublasCreate(nullptr) == CUBLAS_STATUS_INVALID_VALUE);
#endif
}

int main() {
#ifdef __CUEMU__
    setenv("GPUDL_EMU_DEVICE", "none", 1);
#endif
    ST_RUN(create_without_device);
    return st_summary();
}
