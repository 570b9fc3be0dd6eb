/* graph_nodes.cu - graph node kinds of CUDA 13 that NVIDIA's samples use
   (issue 37): memcpy nodes (cudaGraphAddMemcpyNode with cudaMemcpy3DParms,
   the 1-D form, their get/set params, the exec forms, cudaGraphExecUpdate
   of them), conditional nodes (IF / WHILE / SWITCH through cudaGraphAddNode,
   cudaGraphSetConditional in kernels, cudaStreamBeginCaptureToGraph,
   cudaStreamUpdateCaptureDependencies). Each rule is checked with its control; the source of each rule
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

    /* a memcpy node made by stream capture: the emulator keeps no
       cudaMemcpy3DParms for it and refuses to report them (not zeros) */
    cudaStream_t cs;
    cudaStreamCreate(&cs);
    cudaGraph_t cap;
    cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal);
    cudaMemcpyAsync(b, a, sizeof h, cudaMemcpyDeviceToDevice, cs);
    ST_CHECK(cudaStreamEndCapture(cs, &cap) == cudaSuccess);
    cudaGraphNode_t cn[1];
    size_t ncn = 1;
    ST_CHECK(cudaGraphGetNodes(cap, cn, &ncn) == cudaSuccess && ncn == 1);
#ifdef __CUEMU__
    ST_CHECK(cudaGraphMemcpyNodeGetParams(cn[0], &got) == cudaErrorNotSupported);
#else
    ST_CHECK(cudaGraphMemcpyNodeGetParams(cn[0], &got) == cudaSuccess && got.dstPtr.ptr == b);
#endif
    cudaGetLastError();
    cudaGraphDestroy(cap);
    cudaStreamDestroy(cs);

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

/* Programming Guide, "CUDA Graphs > Conditional Graph Nodes" and Runtime
   API cudaGraphConditionalHandleCreate / cudaGraphAddNode /
   cudaGraphSetConditional / cudaConditionalNodeParams: IF runs body 0 when
   the value is non-zero and body 1 (size 2) when it is zero; WHILE runs
   body 0 as long as the value is non-zero, checked before each iteration;
   SWITCH runs body n for value n, none when n >= size;
   cudaGraphCondAssignDefault sets the default when each launch begins. */
__global__ void set_cond(const int *v, cudaGraphConditionalHandle h) { cudaGraphSetConditional(h, (unsigned)*v); }
__global__ void mark(int *log, int slot) { log[slot] += 1; }
__global__ void count_down(int *counter, cudaGraphConditionalHandle h) {
    if (--*counter <= 0) cudaGraphSetConditional(h, 0);
}
static void add_kernel(cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *dep, void *func, void **args) {
    cudaGraphNodeParams p = {cudaGraphNodeTypeKernel};   /* the rest zero (as NVIDIA's samples write it) */
    p.kernel.func = func;
    p.kernel.gridDim = dim3(1);
    p.kernel.blockDim = dim3(1);
    p.kernel.kernelParams = args;
    cudaError_t e = cudaGraphAddNode(n, g, dep, NULL, dep ? 1 : 0, &p);
    if (e) printf("cudaGraphAddNode(kernel): %s\n", cudaGetErrorName(e));
}
static cudaError_t add_cond(cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *dep, cudaGraphConditionalHandle h,
                            cudaGraphConditionalNodeType type, unsigned size, cudaGraph_t *bodies) {
    cudaGraphNodeParams p = {cudaGraphNodeTypeConditional};
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    cudaError_t e = cudaGraphAddNode(n, g, dep, NULL, dep ? 1 : 0, &p);
    if (!e)
        for (unsigned i = 0; i < size; i++) bodies[i] = p.conditional.phGraph_out[i];
    return e;
}
ST_TEST(conditional_nodes) {
    int *v, *log, *counter, h_log[8];
    cudaMalloc(&v, sizeof(int));
    cudaMalloc(&log, sizeof h_log);
    cudaMalloc(&counter, sizeof(int));
    /* IF with an else body; SWITCH of 3 in the same graph after it */
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphConditionalHandle hi, hs;
    ST_CHECK(cudaGraphConditionalHandleCreate(&hi, g) == cudaSuccess);
    ST_CHECK(cudaGraphConditionalHandleCreate(&hs, g) == cudaSuccess);
    cudaGraphNode_t k1, k2, c1, c2, x;
    void *a1[] = {&v, &hi}, *a2[] = {&v, &hs};
    add_kernel(&k1, g, NULL, (void *)set_cond, a1);
    cudaGraph_t ifb[2], swb[3];
    ST_CHECK(add_cond(&c1, g, &k1, hi, cudaGraphCondTypeIf, 2, ifb) == cudaSuccess);
    int s0 = 0, s1 = 1, s2 = 2, s3 = 3, s4 = 4;
    void *m0[] = {&log, &s0}, *m1[] = {&log, &s1}, *m2[] = {&log, &s2}, *m3[] = {&log, &s3}, *m4[] = {&log, &s4};
    add_kernel(&x, ifb[0], NULL, (void *)mark, m0);
    add_kernel(&x, ifb[1], NULL, (void *)mark, m1);
    add_kernel(&k2, g, &c1, (void *)set_cond, a2);
    ST_CHECK(add_cond(&c2, g, &k2, hs, cudaGraphCondTypeSwitch, 3, swb) == cudaSuccess);
    add_kernel(&x, swb[0], NULL, (void *)mark, m2);
    add_kernel(&x, swb[1], NULL, (void *)mark, m3);
    add_kernel(&x, swb[2], NULL, (void *)mark, m4);
    cudaGraphNodeType t;
    ST_CHECK(cudaGraphNodeGetType(c1, &t) == cudaSuccess && t == cudaGraphNodeTypeConditional);
    cudaGraphExec_t ex;
    ST_CHECK(cudaGraphInstantiate(&ex, g, 0) == cudaSuccess);
    const int vals[3] = {0, 1, 7};
    const int want[3][5] = {{0, 1, 1, 0, 0}, {1, 1, 1, 1, 0}, {2, 1, 1, 1, 0}};   /* counts after each launch */
    cudaMemset(log, 0, sizeof h_log);
    for (int i = 0; i < 3; i++) {
        cudaMemcpy(v, &vals[i], sizeof(int), cudaMemcpyHostToDevice);
        ST_CHECK(cudaGraphLaunch(ex, 0) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess);
        cudaMemcpy(h_log, log, sizeof h_log, cudaMemcpyDeviceToHost);
        ST_CHECKF(!memcmp(h_log, want[i], sizeof want[i]), "value %d: bodies ran %d %d | %d %d %d", vals[i], h_log[0], h_log[1],
                  h_log[2], h_log[3], h_log[4]);
    }
    /* rules: a handle of another graph or already used; sizes; flags */
    cudaGraph_t other, b2[4];
    cudaGraphCreate(&other, 0);
    cudaGraphConditionalHandle ho;
    cudaGraphConditionalHandleCreate(&ho, other);
    ST_CHECK(add_cond(&x, g, NULL, ho, cudaGraphCondTypeIf, 1, b2) == cudaErrorInvalidValue);
    ST_CHECK(add_cond(&x, g, NULL, hi, cudaGraphCondTypeIf, 1, b2) == cudaErrorInvalidValue);
    ST_CHECK(add_cond(&x, other, NULL, ho, cudaGraphCondTypeWhile, 2, b2) == cudaErrorInvalidValue);
    ST_CHECK(add_cond(&x, other, NULL, ho, cudaGraphCondTypeIf, 3, b2) == cudaErrorInvalidValue);
    ST_CHECK(add_cond(&x, other, NULL, ho, cudaGraphCondTypeSwitch, 0, b2) == cudaErrorInvalidValue);
    ST_CHECK(cudaGraphConditionalHandleCreate(&ho, other, 0, 2) == cudaErrorInvalidValue);
    cudaGetLastError();

    /* WHILE with cudaGraphCondAssignDefault 1, its body captured with
       cudaStreamBeginCaptureToGraph: each launch counts down from 3 again */
    cudaGraph_t w;
    cudaGraphCreate(&w, 0);
    cudaGraphConditionalHandle hw;
    ST_CHECK(cudaGraphConditionalHandleCreate(&hw, w, 1, cudaGraphCondAssignDefault) == cudaSuccess);
    cudaGraph_t wb[1];
    cudaGraphNode_t cw;
    ST_CHECK(add_cond(&cw, w, NULL, hw, cudaGraphCondTypeWhile, 1, wb) == cudaSuccess);
    cudaStream_t s;
    cudaStreamCreate(&s);
    ST_CHECK(cudaStreamBeginCaptureToGraph(s, wb[0], NULL, NULL, 0, cudaStreamCaptureModeGlobal) == cudaSuccess);
    mark<<<1, 1, 0, s>>>(log, 5);
    count_down<<<1, 1, 0, s>>>(counter, hw);
    ST_CHECK(cudaStreamEndCapture(s, NULL) == cudaSuccess);
    size_t nb = 0;
    ST_CHECK(cudaGraphGetNodes(wb[0], NULL, &nb) == cudaSuccess && nb == 2);
    cudaGraphExec_t wx;
    ST_CHECK(cudaGraphInstantiate(&wx, w, 0) == cudaSuccess);
    cudaMemset(log, 0, sizeof h_log);
    for (int launch = 1; launch <= 2; launch++) {
        int three = 3;
        cudaMemcpy(counter, &three, sizeof three, cudaMemcpyHostToDevice);
        ST_CHECK(cudaGraphLaunch(wx, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess);
        cudaMemcpy(h_log, log, sizeof h_log, cudaMemcpyDeviceToHost);
        ST_CHECKF(h_log[5] == 3 * launch, "launch %d: %d iterations in all, want %d", launch, h_log[5], 3 * launch);
    }
    /* a body may not hold a host node (cudaConditionalNodeParams); control: the kernel bodies above */
    cudaGraph_t hg, hb[1];
    cudaGraphCreate(&hg, 0);
    cudaGraphConditionalHandle hh;
    cudaGraphConditionalHandleCreate(&hh, hg);
    ST_CHECK(add_cond(&x, hg, NULL, hh, cudaGraphCondTypeIf, 1, hb) == cudaSuccess);
    cudaGraphNodeParams hp = {cudaGraphNodeTypeHost};
    hp.host.fn = [](void *) {};
    ST_CHECK(cudaGraphAddNode(&x, hb[0], NULL, NULL, 0, &hp) == cudaSuccess);
    cudaGraphExec_t hx;
    ST_CHECK(cudaGraphInstantiate(&hx, hg, 0) != cudaSuccess);
    cudaGetLastError();

    /* cudaStreamUpdateCaptureDependencies: the next captured work depends on the given nodes only */
    cudaGraph_t cg;
    ST_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    mark<<<1, 1, 0, s>>>(log, 6);
    cudaStreamCaptureStatus st;
    cudaGraph_t capg;
    const cudaGraphNode_t *deps;
    size_t nd = 0;
    ST_CHECK(cudaStreamGetCaptureInfo(s, &st, NULL, &capg, &deps, NULL, &nd) == cudaSuccess && nd == 1);
    cudaGraphNode_t e1;
    ST_CHECK(cudaGraphAddEmptyNode(&e1, capg, NULL, 0) == cudaSuccess);
    ST_CHECK(cudaStreamUpdateCaptureDependencies(s, &e1, NULL, 1, cudaStreamSetCaptureDependencies) == cudaSuccess);
    ST_CHECK(cudaStreamUpdateCaptureDependencies(s, &e1, NULL, 1, 7) == cudaErrorInvalidValue);
    mark<<<1, 1, 0, s>>>(log, 7);
    ST_CHECK(cudaStreamEndCapture(s, &cg) == cudaSuccess);
    cudaGraphNode_t roots[4];
    size_t nr = 4;
    ST_CHECK(cudaGraphGetRootNodes(cg, roots, &nr) == cudaSuccess && nr == 2);   /* the first kernel and the empty node */
    ST_CHECK(cudaStreamUpdateCaptureDependencies(s, &e1, NULL, 1, cudaStreamSetCaptureDependencies) == cudaErrorIllegalState);
    cudaGetLastError();

    cudaGraphExecDestroy(ex);
    cudaGraphExecDestroy(wx);
    cudaGraphDestroy(g);
    cudaGraphDestroy(w);
    cudaGraphDestroy(other);
    cudaGraphDestroy(hg);
    cudaGraphDestroy(cg);
    cudaStreamDestroy(s);
    cudaFree(v);
    cudaFree(log);
    cudaFree(counter);
}

int main() {
    ST_RUN(memcpy_nodes);
    ST_RUN(conditional_nodes);
    return st_summary();
}
