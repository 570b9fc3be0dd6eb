/* stream_ordered.cu - the stream-ordered allocator and 3D copies in the
   cuda-samples style (streamOrderedAllocation, simpleMultiCopy): buffers
   allocated and freed on a stream from the device's default pool with a
   release threshold, a 3D volume copied host -> pitched device memory ->
   host with cudaMemcpy3D and transposed by a kernel in between.
   Programming Guide, "Stream Ordered Memory Allocator"; Runtime API,
   cudaMemcpy3D and cudaMalloc3D.
   Build: nvcc stream_ordered.cu */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "sample_helpers.h"

__global__ void scale_add(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

/* negates each element of a pitched volume in place */
__global__ void negate_volume(cudaPitchedPtr p, cudaExtent e) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x >= (int)(e.width / sizeof(float))) return;
    float *row = (float *)((char *)p.ptr + ((size_t)z * e.height + y) * p.pitch);
    row[x] = -row[x];
}

int main(void) {
    int dev = 0, pools = 0, ok = 1;
    checkErrors(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev));
    if (!pools) { printf("memory pools not supported: waived\n"); return 2; }
    cudaMemPool_t pool;
    checkErrors(cudaDeviceGetDefaultMemPool(&pool, dev));
    uint64_t threshold = UINT64_MAX;   /* keep freed memory in the pool */
    checkErrors(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    cudaStream_t s;
    checkErrors(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    const int n = 100003;
    float *h = (float *)malloc(n * sizeof(float)), *r = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) h[i] = (float)(i % 97) * 0.25f;
    for (int round = 0; round < 3; round++) {
        float *dx, *dy;
        checkErrors(cudaMallocAsync((void **)&dx, n * sizeof(float), s));
        checkErrors(cudaMallocFromPoolAsync((void **)&dy, n * sizeof(float), pool, s));
        checkErrors(cudaMemcpyAsync(dx, h, n * sizeof(float), cudaMemcpyHostToDevice, s));
        checkErrors(cudaMemsetAsync(dy, 0, n * sizeof(float), s));
        scale_add<<<(n + 255) / 256, 256, 0, s>>>(dy, dx, (float)(round + 1), n);
        checkLastError("scale_add");
        checkErrors(cudaMemcpyAsync(r, dy, n * sizeof(float), cudaMemcpyDeviceToHost, s));
        checkErrors(cudaFreeAsync(dx, s));
        checkErrors(cudaFreeAsync(dy, s));
        checkErrors(cudaStreamSynchronize(s));
        for (int i = 0; i < n; i++) ok &= r[i] == (float)(round + 1) * h[i];
    }
    uint64_t reserved = 0, used = 0;
    checkErrors(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    checkErrors(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    printf("stream-ordered rounds %s; pool: %llu bytes reserved, %llu in use after the frees\n", ok ? "right" : "WRONG",
           (unsigned long long)reserved, (unsigned long long)used);
    ok &= used == 0 && reserved >= 2 * n * sizeof(float);
    checkErrors(cudaMemPoolTrimTo(pool, 0));

    /* a 3D volume: 37 x 5 x 3 floats, pitched on the device */
    const int W = 37, H = 5, D = 3;
    float vol[D][H][W], back[D][H][W];
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) vol[z][y][x] = (float)(x + 100 * y + 10000 * z);
    cudaExtent ext = make_cudaExtent(W * sizeof(float), H, D);
    cudaPitchedPtr dvol;
    checkErrors(cudaMalloc3D(&dvol, ext));
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(vol, W * sizeof(float), W, H);
    up.dstPtr = dvol;
    up.extent = ext;
    up.kind = cudaMemcpyHostToDevice;
    checkErrors(cudaMemcpy3D(&up));
    negate_volume<<<dim3(1, H, D), 64>>>(dvol, ext);
    checkLastError("negate_volume");
    cudaMemcpy3DParms down = {};
    down.srcPtr = dvol;
    down.dstPtr = make_cudaPitchedPtr(back, W * sizeof(float), W, H);
    down.extent = ext;
    down.kind = cudaMemcpyDeviceToHost;
    checkErrors(cudaMemcpy3D(&down));
    int bad = 0;
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) bad += back[z][y][x] != -vol[z][y][x];
    printf("3D copy: pitch %zu bytes for rows of %zu, %d of %d elements wrong\n", dvol.pitch, W * sizeof(float), bad, W * H * D);
    ok &= bad == 0 && dvol.pitch >= W * sizeof(float);
    checkErrors(cudaFree(dvol.ptr));
    checkErrors(cudaStreamDestroy(s));
    free(h); free(r);
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
