/* runtime_apis.cu - runtime API calls of CUDA 13 that NVIDIA's samples use
   (issue 37): __dp4a / __dp2a, stream-ordered memory pools (and their access from
   other devices),
   cudaStreamAttachMemAsync, stream attributes (the L2 access policy
   window, cudaCtxResetPersistingL2Cache), 3-D copies and memsets. Each rule is checked with its control;
   the source of each rule is named at its test. */
#include <cuda_runtime.h>
#include <stdint.h>
#include "selftest.h"

/* CUDA Math API, Integer Intrinsics: __dp4a, __dp2a_lo, __dp2a_hi */
__global__ void dot_products(int *out) {
    int a = (int)0x80ff7f02, b = (int)0x7f80ff03;   /* bytes (lsb first) a: 2, 127, -1, -128; b: 3, -1, -128, 127 */
    out[0] = __dp4a(a, b, 10);
    out[1] = (int)__dp4a((unsigned)a, (unsigned)b, 10u);
    out[2] = __dp4a(make_char4(2, 127, -1, -128), make_char4(3, -1, -128, 127), 10);
    out[3] = (int)__dp4a(make_uchar4(2, 127, 255, 128), make_uchar4(3, 255, 128, 127), 10u);
    int h = (int)0xfffe7fff;   /* halves (lsw first): 32767, -2 */
    out[4] = __dp2a_lo(h, b, 5);   /* bytes 0, 1 of b: 3, -1 */
    out[5] = __dp2a_hi(h, b, 5);   /* bytes 2, 3 of b: -128, 127 */
    out[6] = (int)__dp2a_lo((unsigned)h, (unsigned)b, 5u);
    out[7] = __dp2a_hi(make_short2(32767, -2), make_char4(3, -1, -128, 127), 5);
}
ST_TEST(dp4a_dp2a) {
    int *d, h[8];
    cudaMalloc(&d, sizeof h);
    dot_products<<<1, 1>>>(d);
    ST_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    int want_s = 10 + 2 * 3 + 127 * -1 + -1 * -128 + -128 * 127;
    unsigned want_u = 10u + 2u * 3u + 127u * 255u + 255u * 128u + 128u * 127u;
    ST_CHECKF(h[0] == want_s, "__dp4a(int) %d, want %d", h[0], want_s);
    ST_CHECKF((unsigned)h[1] == want_u, "__dp4a(unsigned) %u, want %u", (unsigned)h[1], want_u);
    ST_CHECKF(h[2] == want_s, "__dp4a(char4) %d", h[2]);
    ST_CHECKF((unsigned)h[3] == want_u, "__dp4a(uchar4) %u", (unsigned)h[3]);
    ST_CHECKF(h[4] == 5 + 32767 * 3 + -2 * -1, "__dp2a_lo %d", h[4]);
    ST_CHECKF(h[5] == 5 + 32767 * -128 + -2 * 127, "__dp2a_hi %d", h[5]);
    ST_CHECKF((unsigned)h[6] == 5u + 32767u * 3u + 65534u * 255u, "__dp2a_lo(unsigned) %u", (unsigned)h[6]);
    ST_CHECKF(h[7] == h[5], "__dp2a_hi(short2, char4) %d", h[7]);
    cudaFree(d);
}

/* Runtime API, Stream Ordered Memory Allocator: the default pool, its
   attributes, cudaMallocFromPoolAsync, cudaMemPoolTrimTo. */
__global__ void fill_k(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}
ST_TEST(memory_pools) {
    cudaMemPool_t pool = nullptr, cur = nullptr;
    ST_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess && pool);
    ST_CHECK(cudaDeviceGetMemPool(&cur, 0) == cudaSuccess && cur == pool);
    ST_CHECK(cudaDeviceGetDefaultMemPool(&pool, 99) == cudaErrorInvalidDevice);
    cudaGetLastError();
    uint64_t thr = UINT64_MAX, got = 0;
    ST_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr) == cudaSuccess);
    ST_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got) == cudaSuccess && got == UINT64_MAX);
    int reuse = 0;
    ST_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &reuse) == cudaSuccess);
    reuse = 5;
    ST_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &reuse) == cudaSuccess && reuse == 0);
    uint64_t one = 1;
    ST_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &one) == cudaErrorInvalidValue);   /* read-only */
    ST_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one) == cudaErrorInvalidValue);   /* only 0 */
    cudaGetLastError();
    cudaStream_t s;
    cudaStreamCreate(&s);
    int *a = nullptr, *b = nullptr, h[1000];
    ST_CHECK(cudaMallocAsync(&a, 1000 * sizeof(int), s) == cudaSuccess);
    ST_CHECK(cudaMallocFromPoolAsync((void **)&b, 1000 * sizeof(int), pool, s) == cudaSuccess);
    ST_CHECK(cudaMallocFromPoolAsync((void **)&b, 4, (cudaMemPool_t)&h, s) == cudaErrorInvalidValue);   /* not a pool */
    cudaGetLastError();
    fill_k<<<4, 256, 0, s>>>(b, 1000, 42);
    ST_CHECK(cudaMemcpyAsync(h, b, sizeof h, cudaMemcpyDeviceToHost, s) == cudaSuccess);
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    ST_CHECK(h[0] == 42 && h[999] == 42);
    uint64_t used = 0, reserved = 0;
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    ST_CHECKF(used >= 2000 * sizeof(int), "used %llu", (unsigned long long)used);
    ST_CHECK(cudaFreeAsync(a, s) == cudaSuccess);
    ST_CHECK(cudaFreeAsync(b, s) == cudaSuccess);
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    ST_CHECKF(used == 0, "used after the frees: %llu", (unsigned long long)used);
    ST_CHECKF(reserved >= 2000 * sizeof(int), "reserved with an unlimited release threshold: %llu", (unsigned long long)reserved);
    ST_CHECK(cudaMemPoolTrimTo(pool, 0) == cudaSuccess);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    ST_CHECKF(reserved == 0, "reserved after cudaMemPoolTrimTo(0): %llu", (unsigned long long)reserved);
    uint64_t high = 0, zero = 0;
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high);
    ST_CHECK(high >= 2000 * sizeof(int));
    ST_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero) == cudaSuccess);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high);
    ST_CHECK(high == 0);
    ST_CHECK(cudaDeviceSetMemPool(0, pool) == cudaSuccess);
    thr = 0;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr);
    cudaStreamDestroy(s);
}

/* Runtime API, cudaStreamAttachMemAsync: managed memory only; length 0 or
   the whole allocation; not singly to the NULL stream. */
ST_TEST(stream_attach_mem) {
    cudaStream_t s;
    cudaStreamCreate(&s);
    int *m = nullptr, *d = nullptr;
    cudaMallocManaged(&m, 256);
    cudaMalloc(&d, 256);
    ST_CHECK(cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachSingle) == cudaSuccess);
    ST_CHECK(cudaStreamAttachMemAsync(s, m, 256, cudaMemAttachGlobal) == cudaSuccess);
    ST_CHECK(cudaStreamAttachMemAsync(s, m) == cudaSuccess);   /* the C++ defaults: 0, cudaMemAttachSingle */
    ST_CHECK(cudaStreamAttachMemAsync(s, d, 0, cudaMemAttachSingle) == cudaErrorInvalidValue);   /* cudaMalloc memory */
    ST_CHECK(cudaStreamAttachMemAsync(s, m, 100, cudaMemAttachSingle) == cudaErrorInvalidValue);
    ST_CHECK(cudaStreamAttachMemAsync(0, m, 0, cudaMemAttachSingle) == cudaErrorInvalidValue);
    ST_CHECK(cudaStreamAttachMemAsync(s, m, 0, 0x10) == cudaErrorInvalidValue);
    cudaGetLastError();
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    cudaFree(m);
    cudaFree(d);
    cudaStreamDestroy(s);
}

/* Runtime API, cudaStreamSetAttribute with cudaAccessPolicyWindow
   (Programming Guide, L2 Access Management): accepted and validated. */
ST_TEST(stream_access_policy_window) {
    cudaStream_t s;
    cudaStreamCreate(&s);
    int *d;
    cudaMalloc(&d, 1 << 20);
    cudaStreamAttrValue v = {};
    v.accessPolicyWindow.base_ptr = d;
    v.accessPolicyWindow.num_bytes = 1 << 20;
    v.accessPolicyWindow.hitRatio = 0.6f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    ST_CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v) == cudaSuccess);
    cudaStreamAttrValue out = {};
    ST_CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &out) == cudaSuccess);
    ST_CHECK(out.accessPolicyWindow.base_ptr == d && out.accessPolicyWindow.num_bytes == (1u << 20) &&
             out.accessPolicyWindow.hitRatio == 0.6f && out.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting);
    cudaStreamAttrValue bad = v;
    bad.accessPolicyWindow.hitRatio = 1.5f;
    ST_CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &bad) == cudaErrorInvalidValue);
    bad = v;
    bad.accessPolicyWindow.missProp = cudaAccessPropertyPersisting;
    ST_CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &bad) == cudaErrorInvalidValue);
    int maxw = 0;
    cudaDeviceGetAttribute(&maxw, cudaDevAttrMaxAccessPolicyWindowSize, 0);
    bad = v;
    bad.accessPolicyWindow.num_bytes = (size_t)maxw + 1;
    ST_CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &bad) == cudaErrorInvalidValue);
    cudaGetLastError();
    fill_k<<<1, 64, 0, s>>>(d, 64, 3);   /* no effect on results */
    int h[64];
    cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, s);
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess && h[0] == 3 && h[63] == 3);
    /* Runtime API, Device Management, cudaCtxResetPersistingL2Cache: the
       persisting lines go back to normal; the window stays set, results are
       unchanged */
    ST_CHECK(cudaCtxResetPersistingL2Cache() == cudaSuccess && cudaGetLastError() == cudaSuccess);
    ST_CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &out) == cudaSuccess &&
             out.accessPolicyWindow.base_ptr == d);
    fill_k<<<1, 64, 0, s>>>(d, 64, 4);
    cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, s);
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess && h[0] == 4 && h[63] == 4);
    cudaFree(d);
    cudaStreamDestroy(s);
}

/* Runtime API, cudaMalloc3D / cudaMemcpy3D / cudaMemset3D: linear memory
   through cudaPitchedPtr, extents in bytes, positions x in bytes. */
__global__ void add_z(cudaPitchedPtr p, int w, int h, int d) {
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x >= w || y >= h || z >= d) return;
    char *slice = (char *)p.ptr + (size_t)z * p.pitch * h;
    float *row = (float *)(slice + (size_t)y * p.pitch);
    row[x] += 1000.0f * z;
}
ST_TEST(memcpy_3d) {
    const int W = 20, H = 6, D = 3;
    cudaExtent ext = make_cudaExtent(W * sizeof(float), H, D);
    cudaPitchedPtr dp;
    ST_CHECK(cudaMalloc3D(&dp, ext) == cudaSuccess);
    ST_CHECK(dp.pitch >= W * sizeof(float) && dp.xsize == W * sizeof(float) && dp.ysize == H);
    static float hsrc[D][H][W], hdst[D][H][W];
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) hsrc[z][y][x] = (float)(z * 100 + y * 10 + x % 10);
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(hsrc, W * sizeof(float), W, H);
    p.dstPtr = dp;
    p.extent = ext;
    p.kind = cudaMemcpyHostToDevice;
    ST_CHECK(cudaMemcpy3D(&p) == cudaSuccess);
    add_z<<<dim3(H, D), W>>>(dp, W, H, D);
    cudaMemcpy3DParms q = {};
    q.srcPtr = dp;
    q.dstPtr = make_cudaPitchedPtr(hdst, W * sizeof(float), W, H);
    q.extent = ext;
    q.kind = cudaMemcpyDeviceToHost;
    ST_CHECK(cudaMemcpy3D(&q) == cudaSuccess);
    bool same = true;
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) same = same && hdst[z][y][x] == hsrc[z][y][x] + 1000.0f * z;
    ST_CHECK(same);
    /* a sub-box: from position (x: 2 floats, y: 1, z: 1), 3 floats x 2 rows x 2 slices, async */
    static float box[2][2][3];
    cudaMemcpy3DParms r = {};
    r.srcPtr = dp;
    r.srcPos = make_cudaPos(2 * sizeof(float), 1, 1);
    r.dstPtr = make_cudaPitchedPtr(box, 3 * sizeof(float), 3, 2);
    r.extent = make_cudaExtent(3 * sizeof(float), 2, 2);
    r.kind = cudaMemcpyDeviceToHost;
    ST_CHECK(cudaMemcpy3DAsync(&r, 0) == cudaSuccess);
    ST_CHECK(cudaStreamSynchronize(0) == cudaSuccess);
    ST_CHECKF(box[0][0][0] == hsrc[1][1][2] + 1000.0f && box[1][1][2] == hsrc[2][2][4] + 2000.0f, "%g %g", box[0][0][0],
              box[1][1][2]);
    /* memset3D, then the whole box back */
    ST_CHECK(cudaMemset3D(dp, 0, ext) == cudaSuccess);
    ST_CHECK(cudaMemcpy3D(&q) == cudaSuccess);
    ST_CHECK(hdst[0][0][0] == 0.0f && hdst[D - 1][H - 1][W - 1] == 0.0f);
    /* a CUDA array is not emulated: refused, never silently ignored; a box past the pitch is an error */
    cudaMemcpy3DParms bad = q;
    bad.srcArray = (cudaArray_t)&box;
    ST_CHECK(cudaMemcpy3D(&bad) != cudaSuccess);
    bad = q;
    bad.srcPos = make_cudaPos(dp.pitch, 0, 0);
    ST_CHECK(cudaMemcpy3D(&bad) != cudaSuccess);
    cudaGetLastError();
    cudaFree(dp.ptr);
}

/* cuda_runtime.h's C++ call forms: cudaGraphInstantiate(exec, graph,
   errorNode, logBuffer, bufferSize) and cudaGraphExecUpdate(exec, graph,
   errorNode, result) */
static cudaGraph_t capture_fill(int *d, int v) {
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaGraph_t g = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    fill_k<<<1, 32, 0, s>>>(d, 32, v);
    cudaStreamEndCapture(s, &g);
    cudaStreamDestroy(s);
    return g;
}
ST_TEST(graph_call_forms) {
    int *d, h[32];
    cudaMalloc(&d, sizeof h);
    cudaGraph_t g1 = capture_fill(d, 5), g2 = capture_fill(d, 9);
    cudaGraphExec_t ex = nullptr;
    cudaGraphNode_t err = nullptr;
    char log[64];
    ST_CHECK(cudaGraphInstantiate(&ex, g1, &err, log, sizeof log) == cudaSuccess);
    ST_CHECK(cudaGraphLaunch(ex, 0) == cudaSuccess);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    ST_CHECK(h[0] == 5 && h[31] == 5);
    cudaGraphExecUpdateResult res = cudaGraphExecUpdateError;
    ST_CHECK(cudaGraphExecUpdate(ex, g2, &err, &res) == cudaSuccess && res == cudaGraphExecUpdateSuccess);
    ST_CHECK(cudaGraphLaunch(ex, 0) == cudaSuccess);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    ST_CHECK(h[0] == 9 && h[31] == 9);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g1);
    cudaGraphDestroy(g2);
    cudaFree(d);
}

/* Programming Guide, Graph Memory Nodes: an allocation node's address is
   fixed when it is added; a kernel node between it and the free node uses
   the memory; the pool properties are checked. */
ST_TEST(graph_memory_nodes) {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaMemAllocNodeParams ap;
    memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = 32 * sizeof(int);
    cudaGraphNode_t an, kn, cn, fn;
    ST_CHECK(cudaGraphAddMemAllocNode(&an, g, nullptr, 0, &ap) == cudaSuccess && ap.dptr);
    int *d = (int *)ap.dptr, *out, h[32];
    cudaMalloc(&out, sizeof h);
    int n = 32, v = 11;
    void *args[] = {&d, &n, &v};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)fill_k;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(32);
    kp.kernelParams = args;
    ST_CHECK(cudaGraphAddKernelNode(&kn, g, &an, 1, &kp) == cudaSuccess);
    ST_CHECK(cudaGraphAddMemcpyNode1D(&cn, g, &kn, 1, out, d, sizeof h, cudaMemcpyDeviceToDevice) == cudaSuccess);
    ST_CHECK(cudaGraphAddMemFreeNode(&fn, g, &cn, 1, d) == cudaSuccess);
    cudaMemAllocNodeParams back;
    void *freed = nullptr;
    ST_CHECK(cudaGraphMemAllocNodeGetParams(an, &back) == cudaSuccess && back.dptr == d && back.bytesize == ap.bytesize);
    ST_CHECK(cudaGraphMemFreeNodeGetParams(fn, &freed) == cudaSuccess && freed == d);
    cudaGraphExec_t ex;
    ST_CHECK(cudaGraphInstantiate(&ex, g, 0) == cudaSuccess);
    ST_CHECK(cudaGraphLaunch(ex, 0) == cudaSuccess);
    ST_CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(h[0] == 11 && h[31] == 11);
    uint64_t used = 0;
    ST_CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used) == cudaSuccess && used >= ap.bytesize);
    ST_CHECK(cudaDeviceGraphMemTrim(0) == cudaSuccess);
    /* pool properties: pinned device memory only, no export handles; a free node needs a graph allocation */
    cudaMemAllocNodeParams bad = ap;
    bad.poolProps.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    cudaGraphNode_t x;
    ST_CHECK(cudaGraphAddMemAllocNode(&x, g, nullptr, 0, &bad) == cudaErrorInvalidValue);
    bad = ap;
    bad.poolProps.location.id = 99;
    ST_CHECK(cudaGraphAddMemAllocNode(&x, g, nullptr, 0, &bad) == cudaErrorInvalidValue);
    ST_CHECK(cudaGraphAddMemFreeNode(&x, g, nullptr, 0, out) == cudaErrorInvalidValue);
    cudaGetLastError();
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
    /* captured: cudaMallocAsync adds an allocation node, cudaFreeAsync a free node */
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaGraph_t cg = nullptr;
    int *m = nullptr;
    ST_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    ST_CHECK(cudaMallocAsync(&m, 32 * sizeof(int), s) == cudaSuccess && m);
    fill_k<<<1, 32, 0, s>>>(m, 32, 21);
    cudaMemcpyAsync(out, m, 32 * sizeof(int), cudaMemcpyDeviceToDevice, s);
    ST_CHECK(cudaFreeAsync(m, s) == cudaSuccess);
    ST_CHECK(cudaStreamEndCapture(s, &cg) == cudaSuccess);
    cudaGraphNode_t nodes[8];
    size_t nn = 8;
    ST_CHECK(cudaGraphGetNodes(cg, nodes, &nn) == cudaSuccess && nn == 4);
    cudaGraphNodeType t0 = cudaGraphNodeTypeEmpty, t3 = cudaGraphNodeTypeEmpty;
    cudaGraphNodeGetType(nodes[0], &t0);
    cudaGraphNodeGetType(nodes[3], &t3);
    ST_CHECK(t0 == cudaGraphNodeTypeMemAlloc && t3 == cudaGraphNodeTypeMemFree);
    ST_CHECK(cudaGraphInstantiate(&ex, cg, 0) == cudaSuccess && cudaGraphLaunch(ex, s) == cudaSuccess);
    ST_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    ST_CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess && h[0] == 21 && h[31] == 21);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(cg);
    cudaStreamDestroy(s);
    cudaFree(out);
}

/* Runtime API cudaMemPoolSetAccess / cudaMemPoolGetAccess; Programming
   Guide, Stream Ordered Memory Allocator, "Device Accessibility for
   Multi-GPU Support": a pool's allocations are reachable from its own
   device (not revocable) and from devices given access, never through
   cudaDeviceEnablePeerAccess. Needs two devices (run with
   GPUDL_EMU_DEVICE=9.0:80G,9.0:80G and CUEMU_ST_CASE=two_devices); ends
   with device 1 faulted (sticky). */
__global__ void read_k(const int *p, int *out) { *out = *p; }
ST_TEST(pool_access_two_devices) {
    int n = 0;
    cudaGetDeviceCount(&n);
    ST_CHECKF(n >= 2, "needs two devices, has %d", n);
    if (n < 2) return;
    cudaMemPool_t pool;
    cudaSetDevice(0);
    ST_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
    int *pm = NULL, *plain = NULL, v = 42;
    ST_CHECK(cudaMallocAsync(&pm, sizeof(int), 0) == cudaSuccess);
    cudaMalloc(&plain, sizeof(int));
    cudaMemcpy(pm, &v, sizeof v, cudaMemcpyHostToDevice);
    cudaMemcpy(plain, &v, sizeof v, cudaMemcpyHostToDevice);
    cudaMemLocation own = {cudaMemLocationTypeDevice, 0}, other = {cudaMemLocationTypeDevice, 1};
    cudaMemAccessFlags f = cudaMemAccessFlagsProtRead;
    ST_CHECK(cudaMemPoolGetAccess(&f, pool, &own) == cudaSuccess && f == cudaMemAccessFlagsProtReadWrite);
    ST_CHECK(cudaMemPoolGetAccess(&f, pool, &other) == cudaSuccess && f == cudaMemAccessFlagsProtNone);
    /* the pool's own device cannot lose access; a device that does not exist; flags that are no flags */
    cudaMemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location = own;
    d.flags = cudaMemAccessFlagsProtNone;
    ST_CHECK(cudaMemPoolSetAccess(pool, &d, 1) == cudaErrorInvalidValue);
    d.location.id = 7;
    d.flags = cudaMemAccessFlagsProtReadWrite;
    ST_CHECK(cudaMemPoolSetAccess(pool, &d, 1) == cudaErrorInvalidDevice);
    d.location = other;
    d.flags = (cudaMemAccessFlags)2;
    ST_CHECK(cudaMemPoolSetAccess(pool, &d, 1) == cudaErrorInvalidValue);
    cudaGetLastError();
    /* peer access from device 1 reaches cudaMalloc memory of device 0 (control) */
    cudaSetDevice(1);
    ST_CHECK(cudaDeviceEnablePeerAccess(0, 0) == cudaSuccess);
    int *out1, got = 0;
    cudaMalloc(&out1, sizeof(int));
    read_k<<<1, 1>>>(plain, out1);
    ST_CHECK(cudaMemcpy(&got, out1, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess && got == 42);
    /* with pool access the pool's memory too */
    d.flags = cudaMemAccessFlagsProtReadWrite;
    ST_CHECK(cudaMemPoolSetAccess(pool, &d, 1) == cudaSuccess);
    ST_CHECK(cudaMemPoolGetAccess(&f, pool, &other) == cudaSuccess && f == cudaMemAccessFlagsProtReadWrite);
    got = 0;
    read_k<<<1, 1>>>(pm, out1);
    ST_CHECK(cudaMemcpy(&got, out1, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess && got == 42);
    /* access removed: peer access does not stand in for it; the kernel faults */
    d.flags = cudaMemAccessFlagsProtNone;
    ST_CHECK(cudaMemPoolSetAccess(pool, &d, 1) == cudaSuccess);
    read_k<<<1, 1>>>(pm, out1);
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e == cudaErrorIllegalAddress, "pool memory without access: %s", cudaGetErrorName(e));
}

int main() {
    if (getenv("CUEMU_ST_CASE") && !strcmp(getenv("CUEMU_ST_CASE"), "two_devices")) {
        ST_RUN(pool_access_two_devices);
        return st_summary();
    }
    ST_RUN(dp4a_dp2a);
    ST_RUN(memory_pools);
    ST_RUN(stream_attach_mem);
    ST_RUN(stream_access_policy_window);
    ST_RUN(memcpy_3d);
    ST_RUN(graph_call_forms);
    ST_RUN(graph_memory_nodes);
    return st_summary();
}
