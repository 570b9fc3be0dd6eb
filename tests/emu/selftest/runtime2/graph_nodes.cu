/* graph_nodes.cu - graph node kinds of CUDA 13 that NVIDIA's samples use
   (issue 37): memcpy nodes (cudaGraphAddMemcpyNode with cudaMemcpy3DParms,
   the 1-D form, their get/set params, the exec forms, cudaGraphExecUpdate
   of them). Each rule is checked with its control; the source of each rule
   is named at its test. Valid CUDA: it also builds with the real nvcc. */
#include <cuda_runtime.h>
#include <stdint.h>
#include "selftest.h"

__global__ void add_one(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

/* Runtime API, Graph Management: cudaGraphAddMemcpyNode copies as
   cudaMemcpy3D does (a pitched 3-D region, positions and widths in bytes
   for linear memory); cudaGraphAddMemcpyNode1D is one row;
   cudaGraphMemcpyNodeGetParams returns the parameters; SetParams /
   SetParams1D change the node (not an instantiated graph). */
ST_TEST(memcpy_nodes) {
    const int W = 5, H = 3, D = 2;   /* ints per row, rows per slice, slices */
    int host[D][H][W], back[D][H][W];
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) host[z][y][x] = 100 * z + 10 * y + x;
    cudaPitchedPtr dev;
    ST_CHECK(cudaMalloc3D(&dev, make_cudaExtent(W * sizeof(int), H, D)) == cudaSuccess);
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaMemcpy3DParms up = {0};
    up.srcPtr = make_cudaPitchedPtr(host, W * sizeof(int), W, H);
    up.dstPtr = dev;
    up.extent = make_cudaExtent(W * sizeof(int), H, D);
    up.kind = cudaMemcpyHostToDevice;
    cudaGraphNode_t un, kn, dn;
    ST_CHECK(cudaGraphAddMemcpyNode(&un, g, NULL, 0, &up) == cudaSuccess);
    cudaMemcpy3DParms got;
    memset(&got, 0, sizeof got);
    ST_CHECK(cudaGraphMemcpyNodeGetParams(un, &got) == cudaSuccess && got.dstPtr.ptr == dev.ptr && got.extent.depth == D &&
             got.kind == cudaMemcpyHostToDevice);
    /* a kernel over the whole pitched allocation, then the copy back */
    int n = (int)(dev.pitch / sizeof(int)) * H * D;
    int *p = (int *)dev.ptr;
    void *args[] = {&p, &n};
    cudaKernelNodeParams kp = {0};
    kp.func = (void *)add_one;
    kp.gridDim = dim3((n + 63) / 64);
    kp.blockDim = dim3(64);
    kp.kernelParams = args;
    ST_CHECK(cudaGraphAddKernelNode(&kn, g, &un, 1, &kp) == cudaSuccess);
    cudaMemcpy3DParms down = {0};
    down.srcPtr = dev;
    down.dstPtr = make_cudaPitchedPtr(back, W * sizeof(int), W, H);
    down.extent = up.extent;
    down.kind = cudaMemcpyDeviceToHost;
    ST_CHECK(cudaGraphAddMemcpyNode(&dn, g, &kn, 1, &down) == cudaSuccess);
    cudaGraphExec_t ex;
    ST_CHECK(cudaGraphInstantiate(&ex, g, 0) == cudaSuccess);
    memset(back, 0, sizeof back);
    ST_CHECK(cudaGraphLaunch(ex, 0) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess);
    ST_CHECKF(back[0][0][0] == 1 && back[1][2][4] == 125 && back[1][0][3] == 104, "3-D round trip %d %d %d",
              back[0][0][0], back[1][2][4], back[1][0][3]);
    /* the kind must agree with the memory, as for cudaMemcpy3D (control: the right kind above) */
    cudaGraphNode_t bad;
    cudaMemcpy3DParms wrong = up;
    wrong.kind = cudaMemcpyDeviceToHost;
    ST_CHECK(cudaGraphAddMemcpyNode(&bad, g, NULL, 0, &wrong) == cudaErrorInvalidValue);
    wrong = up;
    wrong.extent.width = dev.pitch + 4;   /* wider than the pitch */
    ST_CHECK(cudaGraphAddMemcpyNode(&bad, g, NULL, 0, &wrong) != cudaSuccess);
    ST_CHECK(cudaGraphAddMemcpyNode(&bad, g, NULL, 0, NULL) == cudaErrorInvalidValue);
    cudaGetLastError();

    /* 1-D nodes; SetParams1D on the node, ExecMemcpyNodeSetParams1D on the instance */
    int *a, *b, h[16], r[16];
    cudaMalloc(&a, sizeof h);
    cudaMalloc(&b, sizeof h);
    for (int i = 0; i < 16; i++) h[i] = i * 3;
    cudaGraph_t g1;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t c1, c2;
    ST_CHECK(cudaGraphAddMemcpyNode1D(&c1, g1, NULL, 0, a, h, sizeof h, cudaMemcpyHostToDevice) == cudaSuccess);
    ST_CHECK(cudaGraphAddMemcpyNode1D(&c2, g1, &c1, 1, r, a, sizeof r, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(cudaGraphAddMemcpyNode1D(&bad, g1, NULL, 0, a, h, sizeof h, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue);
    ST_CHECK(cudaGraphAddMemcpyNode1D(&bad, g1, NULL, 0, a, h, sizeof h + 4, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    cudaGetLastError();
    ST_CHECK(cudaGraphMemcpyNodeGetParams(c1, &got) == cudaSuccess && got.extent.width == sizeof h && got.extent.height == 1 &&
             got.extent.depth == 1 && got.srcPtr.ptr == h && got.dstPtr.ptr == a);
    cudaGraphExec_t ex1;
    ST_CHECK(cudaGraphInstantiate(&ex1, g1, 0) == cudaSuccess);
    /* the node changes; the instance made before does not */
    ST_CHECK(cudaGraphMemcpyNodeSetParams1D(c1, b, h, sizeof h, cudaMemcpyHostToDevice) == cudaSuccess);
    ST_CHECK(cudaGraphMemcpyNodeGetParams(c1, &got) == cudaSuccess && got.dstPtr.ptr == b);
    cudaMemset(a, 0, sizeof h);
    cudaMemset(b, 0, sizeof h);
    memset(r, 0, sizeof r);
    ST_CHECK(cudaGraphLaunch(ex1, 0) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess);
    ST_CHECK(r[15] == 45);
    /* on the instance: the copy back now reads b (still zero) */
    ST_CHECK(cudaGraphExecMemcpyNodeSetParams1D(ex1, c2, r, b, sizeof r, cudaMemcpyDeviceToHost) == cudaSuccess);
    r[15] = -1;
    ST_CHECK(cudaGraphLaunch(ex1, 0) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess);
    ST_CHECK(r[15] == 0);
    /* "Both the instantiation-time memory operands and the memory operands
       in pNodeParams must be 1-dimensional. Zero-length operations are not
       supported"; the memory type may not change */
    ST_CHECK(cudaGraphExecMemcpyNodeSetParams1D(ex1, c2, r, b, 0, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
    ST_CHECK(cudaGraphExecMemcpyNodeSetParams1D(ex1, c2, b, a, sizeof r, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue);
    ST_CHECK(cudaGraphExecMemcpyNodeSetParams(ex, dn, &down) == cudaErrorInvalidValue);   /* 3-D */
    ST_CHECK(cudaGraphExecMemcpyNodeSetParams1D(ex1, kn, r, b, sizeof r, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
    cudaGetLastError();

    /* cudaGraphExecUpdate: a graph of the same shape with other device
       buffers updates; one whose copy now writes device memory instead of
       host memory does not (cudaGraphExecUpdateErrorParametersChanged) */
    cudaGraph_t g2, g3;
    cudaGraphCreate(&g2, 0);
    cudaGraphCreate(&g3, 0);
    cudaGraphNode_t x1, x2, y1, y2;
    cudaGraphAddMemcpyNode1D(&x1, g2, NULL, 0, b, h, sizeof h, cudaMemcpyHostToDevice);
    cudaGraphAddMemcpyNode1D(&x2, g2, &x1, 1, r, b, sizeof r, cudaMemcpyDeviceToHost);
    cudaGraphAddMemcpyNode1D(&y1, g3, NULL, 0, b, h, sizeof h, cudaMemcpyHostToDevice);
    cudaGraphAddMemcpyNode1D(&y2, g3, &y1, 1, a, b, sizeof r, cudaMemcpyDeviceToDevice);
    cudaGraphExecUpdateResultInfo info;
    ST_CHECK(cudaGraphExecUpdate(ex1, g2, &info) == cudaSuccess && info.result == cudaGraphExecUpdateSuccess);
    memset(r, 0, sizeof r);
    ST_CHECK(cudaGraphLaunch(ex1, 0) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess);
    ST_CHECK(r[15] == 45);
    ST_CHECK(cudaGraphExecUpdate(ex1, g3, &info) == cudaErrorGraphExecUpdateFailure &&
             info.result == cudaGraphExecUpdateErrorParametersChanged);
    cudaGetLastError();

    cudaGraphExecDestroy(ex);
    cudaGraphExecDestroy(ex1);
    cudaGraphDestroy(g);
    cudaGraphDestroy(g1);
    cudaGraphDestroy(g2);
    cudaGraphDestroy(g3);
    cudaFree(dev.ptr);
    cudaFree(a);
    cudaFree(b);
}

int main() {
    ST_RUN(memcpy_nodes);
    return st_summary();
}
