/* cudnn_nodevice.cu - cudnnCreate with and without a device: on a machine
   with no CUDA device it fails with CUDNN_STATUS_NOT_INITIALIZED ("no
   compatible GPU found", cudnnCreate's documented returns), and the calls
   that need no device still work; with a device it succeeds.
     tests/emu/nvcc-emu -o /tmp/t tests/emu/selftest/cudnn_nodevice.cu -lcudnn
     GPUDL_EMU_DEVICE=none /tmp/t && /tmp/t */
#include <cuda_runtime.h>
#include <cudnn.h>

#include "selftest.h"

ST_TEST(create) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    cudnnHandle_t h = NULL;
    cudnnStatus_t s = cudnnCreate(&h);
    if (n == 0) {
        ST_CHECKF(s == CUDNN_STATUS_NOT_INITIALIZED, "no device: cudnnCreate gave %s", cudnnGetErrorString(s));
    } else {
        ST_CHECKF(s == CUDNN_STATUS_SUCCESS, "cudnnCreate gave %s", cudnnGetErrorString(s));
        ST_CHECK(cudnnDestroy(h) == CUDNN_STATUS_SUCCESS);
    }
    printf("     (%d device%s)\n", n, n == 1 ? "" : "s");
}

ST_TEST(host_only_calls) {
    cudnnTensorDescriptor_t t;
    ST_CHECK(cudnnGetVersion() == CUDNN_VERSION);
    ST_CHECK(cudnnCreateTensorDescriptor(&t) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 3, 4) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnDestroyTensorDescriptor(t) == CUDNN_STATUS_SUCCESS);
}

int main(void) {
    ST_RUN(create);
    ST_RUN(host_only_calls);
    return st_summary();
}
