/* Stream capture and CUDA Graphs (CUDA Runtime API "Graph Management",
   "Stream Management"; Programming Guide "CUDA Graphs"): captured work
   becomes nodes instead of running; an instantiated graph reruns every
   node at each launch; node parameters update; fork / join through events;
   the calls capture forbids return the documented errors and invalidate
   the capture; the counters count a graph launch once. */
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <stdio.h>
#include <string.h>
#include <thread>
#include <cuemu/registry.h>
#ifdef __CUEMU__
#include <cuemu.h>
#endif
#include "selftest.h"

#define CK(x) ST_CHECKF((x) == cudaSuccess, "%s -> %s", #x, cudaGetErrorName(x))
#define EXPECT(call, want)                                                                                 \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        ST_CHECKF(e_ == (want), "%s -> %s, want %s", #call, cudaGetErrorName(e_), cudaGetErrorName(want)); \
        cudaGetLastError();                                                                                \
    } while (0)

__global__ void add_one(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
__global__ void mul_add(int *x, int v) { x[threadIdx.x] = x[threadIdx.x] * 10 + v; }

/* cudaGraphAddKernelNode takes the kernel as a const void *: the compiled
   image (here: this registration) knows how to launch it */
static cudaError_t launch_mul_add(const void *f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st, int coop) {
    return cuemu::launch_from_array((void (*)(int *, int))f, g, b, a, s, st, coop, "mul_add", nullptr);
}
static int registered = [] {
    cuemu::kernel_register((const void *)mul_add, cuemu::KernelInfo{"mul_add", 0, 0, 0, launch_mul_add});
    return 0;
}();

static cuemu_counters counters() {
    cuemu_counters c;
    cuemu_counters_get(&c);
    return c;
}

ST_TEST(capture_kernels_copy_and_cublas_replay) {
    const int n = 16;
    float *x, *y, *b, *c, *hc;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaMalloc(&b, n * sizeof(float)));
    CK(cudaMalloc(&c, n * sizeof(float)));
    CK(cudaMallocHost(&hc, n * sizeof(float)));
    float hx[n], hb[n];
    for (int i = 0; i < n; i++) hx[i] = (float)i, hb[i] = (i % 5 == 0) ? 2.0f : 0.0f;   /* b: 4x4 diagonal of 2 */
    CK(cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cublasHandle_t h;
    ST_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS);
    cuemu_counters before = counters();

    cudaGraph_t g = nullptr;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(s, &st));
    ST_CHECK(st == cudaStreamCaptureStatusActive);
    add_one<<<1, n, 0, s>>>(x, n);
    add_one<<<1, n, 0, s>>>(x, n);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    const float one = 1, zero = 0;
    ST_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, y, 4, b, 4, &zero, c, 4) == CUBLAS_STATUS_SUCCESS);
    CK(cudaMemcpyAsync(hc, c, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamEndCapture(s, &g));
    ST_CHECK(g != nullptr);
    CK(cudaStreamIsCapturing(s, &st));
    ST_CHECK(st == cudaStreamCaptureStatusNone);

    /* nothing ran during the capture */
    float now[n];
    CK(cudaMemcpy(now, x, sizeof now, cudaMemcpyDeviceToHost));
    ST_CHECKF(now[3] == 3.0f, "captured work ran at capture time: x[3] = %g", now[3]);
    size_t nn = 0;
    CK(cudaGraphGetNodes(g, nullptr, &nn));
    ST_CHECKF(nn == 5, "nodes: %zu", nn);
    cudaGraphNode_t nodes[5];
    CK(cudaGraphGetNodes(g, nodes, &nn));
    cudaGraphNodeType t0, t2;
    CK(cudaGraphNodeGetType(nodes[0], &t0));
    CK(cudaGraphNodeGetType(nodes[2], &t2));
    ST_CHECK(t0 == cudaGraphNodeTypeKernel && t2 == cudaGraphNodeTypeMemcpy);

    cudaGraphExec_t ex;
    CK(cudaGraphInstantiate(&ex, g, 0));
    for (int rep = 1; rep <= 3; rep++) {
        memset(hc, 0, n * sizeof(float));
        CK(cudaGraphLaunch(ex, s));
        CK(cudaStreamSynchronize(s));
        /* x = i + 2 rep; c = y * b (column-major) = 2 y */
        int bad = 0;
        for (int i = 0; i < n; i++)
            if (hc[i] != 2.0f * (i + 2.0f * rep)) bad++;
        ST_CHECKF(!bad, "replay %d: %d wrong, c[5] = %g want %g", rep, bad, hc[5], 2.0f * (5 + 2.0f * rep));
    }
    cuemu_counters after = counters();
    ST_CHECKF(after.graph_launches - before.graph_launches == 3, "graph_launches %llu",
              (unsigned long long)(after.graph_launches - before.graph_launches));
    ST_CHECKF(after.graph_kernels - before.graph_kernels == 6, "graph_kernels %llu",
              (unsigned long long)(after.graph_kernels - before.graph_kernels));
    ST_CHECKF(after.kernel_launches == before.kernel_launches, "kernel_launches moved by %llu",
              (unsigned long long)(after.kernel_launches - before.kernel_launches));
    ST_CHECKF(after.library_calls == before.library_calls, "library_calls moved");
    /* what each launch ran, by kind: one GEMM, two copies, no memset */
    ST_CHECKF(after.graph_library_calls - before.graph_library_calls == 3 &&
                  after.graph_memcpys - before.graph_memcpys == 6 && after.graph_memsets == before.graph_memsets,
              "graph_library_calls %llu, graph_memcpys %llu, graph_memsets %llu",
              (unsigned long long)(after.graph_library_calls - before.graph_library_calls),
              (unsigned long long)(after.graph_memcpys - before.graph_memcpys),
              (unsigned long long)(after.graph_memsets - before.graph_memsets));
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(g));
    cublasDestroy(h);
    cudaStreamDestroy(s);
    cudaFree(x), cudaFree(y), cudaFree(b), cudaFree(c), cudaFreeHost(hc);
}

static void CUDART_CB host_count(void *p) { ++*(int *)p; }

/* runtime_api_calls: one per call the program makes, a <<<>>> launch being
   the cudaLaunchKernel call nvcc turns it into; a graph launch is one call
   however many nodes it runs, and its memset node counts as one. */
ST_TEST(runtime_api_calls_counted) {
    const int n = 8;
    float *x;
    cudaStream_t s;
    cudaError_t e1, e2, e3, e4, e5;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaStreamCreate(&s));
    cuemu_counters before = counters();
    add_one<<<1, n, 0, s>>>(x, n);
    e1 = cudaGetLastError();
    e2 = cudaStreamSynchronize(s);
    cuemu_counters mid = counters();
    ST_CHECK(e1 == cudaSuccess && e2 == cudaSuccess);
    ST_CHECKF(mid.runtime_api_calls - before.runtime_api_calls == 3, "a launch, cudaGetLastError, a sync: %llu calls",
              (unsigned long long)(mid.runtime_api_calls - before.runtime_api_calls));
    cudaGraph_t g;
    cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CK(cudaMemsetAsync(x, 0, n * sizeof(float), s));
    add_one<<<1, n, 0, s>>>(x, n);
    add_one<<<1, n, 0, s>>>(x, n);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    before = counters();
    e3 = cudaGraphLaunch(ex, s);
    e4 = cudaGraphLaunch(ex, s);
    e5 = cudaStreamSynchronize(s);
    cuemu_counters after = counters();
    ST_CHECK(e3 == cudaSuccess && e4 == cudaSuccess && e5 == cudaSuccess);
    ST_CHECKF(after.runtime_api_calls - before.runtime_api_calls == 3, "two graph launches and a sync: %llu calls",
              (unsigned long long)(after.runtime_api_calls - before.runtime_api_calls));
    ST_CHECKF(after.graph_kernels - before.graph_kernels == 4 && after.graph_memsets - before.graph_memsets == 2 &&
                  after.memset_calls == before.memset_calls && after.kernel_launches == before.kernel_launches,
              "graph_kernels %llu, graph_memsets %llu", (unsigned long long)(after.graph_kernels - before.graph_kernels),
              (unsigned long long)(after.graph_memsets - before.graph_memsets));
    float h[n];
    CK(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(h[0] == 2.0f && h[n - 1] == 2.0f, "x = %g after memset + 2 adds", h[0]);
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(x));
}

ST_TEST(graph_built_by_hand) {
    int *d, h[4];
    CK(cudaMalloc(&d, 4 * sizeof(int)));
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t ms, k1, k2, cp, host, empty;
    cudaMemsetParams mp;
    memset(&mp, 0, sizeof mp);
    mp.dst = d;
    mp.value = 0;
    mp.elementSize = 4;
    mp.width = 4;
    mp.height = 1;
    CK(cudaGraphAddMemsetNode(&ms, g, nullptr, 0, &mp));
    int v1 = 1, v2 = 2;
    void *a1[] = {&d, &v1}, *a2[] = {&d, &v2};
    cudaKernelNodeParams kp;
    memset(&kp, 0, sizeof kp);
    kp.func = (void *)mul_add;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(4);
    kp.kernelParams = a1;
    CK(cudaGraphAddKernelNode(&k1, g, &ms, 1, &kp));
    v1 = 100;   /* the node copied its arguments */
    kp.kernelParams = a2;
    CK(cudaGraphAddKernelNode(&k2, g, &k1, 1, &kp));
    int *pinned;
    CK(cudaMallocHost(&pinned, 4 * sizeof(int)));
    CK(cudaGraphAddMemcpyNode1D(&cp, g, &k2, 1, pinned, d, 4 * sizeof(int), cudaMemcpyDeviceToHost));
    int calls = 0;
    cudaHostNodeParams hp = {host_count, &calls};
    CK(cudaGraphAddHostNode(&host, g, &cp, 1, &hp));
    CK(cudaGraphAddEmptyNode(&empty, g, nullptr, 0));
    CK(cudaGraphAddDependencies(g, &host, &empty, nullptr, 1));
    EXPECT(cudaGraphAddDependencies(g, &host, &empty, nullptr, 1), cudaErrorInvalidValue);   /* the edge exists */
    size_t roots = 0;
    CK(cudaGraphGetRootNodes(g, nullptr, &roots));
    ST_CHECK(roots == 1);
    size_t nd = 0;
    CK(cudaGraphNodeGetDependencies(empty, nullptr, nullptr, &nd));
    ST_CHECK(nd == 1);
    cudaKernelNodeParams got;
    CK(cudaGraphKernelNodeGetParams(k1, &got));
    ST_CHECK(got.func == (void *)mul_add && got.blockDim.x == 4);

    cudaGraphExec_t ex;
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphLaunch(ex, 0));
    CK(cudaDeviceSynchronize());
    ST_CHECKF(pinned[0] == 12 && pinned[3] == 12 && calls == 1, "first launch: %d, host node ran %d times", pinned[0], calls);
    /* a launch, then new parameters for an exec node: the queued launch keeps the old ones */
    CK(cudaGraphLaunch(ex, 0));
    int v3 = 3;
    void *a3[] = {&d, &v3};
    kp.kernelParams = a3;
    CK(cudaGraphExecKernelNodeSetParams(ex, k2, &kp));
    CK(cudaGraphLaunch(ex, 0));
    CK(cudaDeviceSynchronize());
    ST_CHECKF(pinned[0] == 13 && calls == 3, "after the update: %d (want 13), host node %d", pinned[0], calls);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECK(h[2] == 13);
    /* the function of an exec's kernel node may not change */
    kp.func = (void *)add_one;
    EXPECT(cudaGraphExecKernelNodeSetParams(ex, k2, &kp), cudaErrorInvalidValue);
    /* an address that is no kernel cannot be a node */
    kp.func = (void *)host_count;
    cudaGraphNode_t bad;
    EXPECT(cudaGraphAddKernelNode(&bad, g, nullptr, 0, &kp), cudaErrorInvalidDeviceFunction);

    /* cudaGraphExecUpdate: same topology updates, another topology fails */
    cudaGraph_t g2;
    CK(cudaGraphClone(&g2, g));
    cudaGraphNode_t n2[6];
    size_t cnt = 6;
    CK(cudaGraphGetNodes(g2, n2, &cnt));
    int v5 = 5;
    void *a5[] = {&d, &v5};
    kp.func = (void *)mul_add;
    kp.kernelParams = a5;
    CK(cudaGraphKernelNodeSetParams(n2[2], &kp));   /* the clone's k2 */
    cudaGraphExecUpdateResultInfo info;
    CK(cudaGraphExecUpdate(ex, g2, &info));
    ST_CHECK(info.result == cudaGraphExecUpdateSuccess);
    CK(cudaGraphLaunch(ex, 0));
    CK(cudaDeviceSynchronize());
    ST_CHECKF(pinned[0] == 15, "after cudaGraphExecUpdate: %d (want 15)", pinned[0]);
    cudaGraphNode_t extra;
    CK(cudaGraphAddEmptyNode(&extra, g2, nullptr, 0));
    EXPECT(cudaGraphExecUpdate(ex, g2, &info), cudaErrorGraphExecUpdateFailure);
    ST_CHECK(info.result == cudaGraphExecUpdateErrorTopologyChanged);
    CK(cudaGraphUpload(ex, 0));
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(g2));
    CK(cudaGraphDestroy(g));
    cudaFreeHost(pinned);
    cudaFree(d);
}

ST_TEST(fork_and_join_through_events) {
    int *d, h[4];
    CK(cudaMalloc(&d, 4 * sizeof(int)));
    CK(cudaMemset(d, 0, 4 * sizeof(int)));
    cudaStream_t s1, s2;
    CK(cudaStreamCreate(&s1));
    CK(cudaStreamCreate(&s2));
    cudaEvent_t fork, join;
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    mul_add<<<1, 4, 0, s1>>>(d, 1);
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));
    cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(s2, &st));
    ST_CHECK(st == cudaStreamCaptureStatusActive);   /* s2 joined the capture */
    mul_add<<<1, 4, 0, s2>>>(d, 2);
    CK(cudaEventRecord(join, s2));
    EXPECT(cudaEventQuery(join), cudaErrorCapturedEvent);   /* invalid: a captured event; invalidates */
    EXPECT(cudaStreamWaitEvent(s1, join, 0), cudaErrorStreamCaptureInvalidated);   /* its events too */
    EXPECT(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureInvalidated);
    ST_CHECK(g == nullptr);
    CK(cudaStreamIsCapturing(s2, &st));
    ST_CHECK(st == cudaStreamCaptureStatusNone);

    /* again, correctly */
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    mul_add<<<1, 4, 0, s1>>>(d, 1);
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));
    mul_add<<<1, 4, 0, s2>>>(d, 2);
    CK(cudaEventRecord(join, s2));
    CK(cudaStreamWaitEvent(s1, join, 0));
    mul_add<<<1, 4, 0, s1>>>(d, 3);
    CK(cudaStreamEndCapture(s1, &g));
    cudaGraphExec_t ex;
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphLaunch(ex, s1));
    CK(cudaStreamSynchronize(s1));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    ST_CHECKF(h[0] == 123, "fork/join order: %d (want 123)", h[0]);

    /* a fork never joined back */
    cudaGraph_t g2;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));
    mul_add<<<1, 4, 0, s2>>>(d, 2);
    EXPECT(cudaStreamEndCapture(s1, &g2), cudaErrorStreamCaptureUnjoined);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
    cudaEventDestroy(fork), cudaEventDestroy(join);
    cudaStreamDestroy(s1), cudaStreamDestroy(s2);
    cudaFree(d);
}

/* Each forbidden call: the documented error, the capture invalidated, and
   cudaStreamEndCapture then cudaErrorStreamCaptureInvalidated. */
static void expect_invalidated(cudaStream_t s) {
    cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(s, &st));
    ST_CHECKF(st == cudaStreamCaptureStatusInvalidated, "status %d, want invalidated", (int)st);
    cudaGraph_t g = (cudaGraph_t)1;
    EXPECT(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    ST_CHECK(g == nullptr);
}

ST_TEST(illegal_calls_during_capture) {
    cudaStream_t s, nb;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    int *d;
    CK(cudaMalloc(&d, 4 * sizeof(int)));
    int hv[4];
    void *p = nullptr;
    cudaGraph_t g;

    EXPECT(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    EXPECT(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    mul_add<<<1, 4, 0, s>>>(d, 1);
    EXPECT(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);   /* work after the invalidation */
    expect_invalidated(s);

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);
    expect_invalidated(s);

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
    expect_invalidated(s);

    /* potentially unsafe calls: prohibited in Global mode, allowed in Relaxed */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudaMalloc(&p, 256), cudaErrorStreamCaptureUnsupported);
    expect_invalidated(s);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CK(cudaMalloc(&p, 256));   /* control */
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(p));

    /* the legacy stream while a blocking stream captures: implicit */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    EXPECT(cudaMemcpy(hv, d, sizeof hv, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureImplicit);
    expect_invalidated(s);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    mul_add<<<1, 4>>>(d, 1);
    EXPECT(cudaGetLastError(), cudaErrorStreamCaptureImplicit);
    expect_invalidated(s);
    /* control: a non-blocking stream's capture leaves the legacy stream usable (in Relaxed mode) */
    CK(cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed));
    CK(cudaMemcpy(hv, d, sizeof hv, cudaMemcpyDeviceToHost));
    mul_add<<<1, 4, 0, nb>>>(d, 1);
    CK(cudaStreamEndCapture(nb, &g));
    CK(cudaGraphDestroy(g));

    /* ending a Global capture from another thread */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaError_t other = cudaSuccess;
    std::thread([&] { other = cudaStreamEndCapture(s, &g); cudaGetLastError(); }).join();
    ST_CHECKF(other == cudaErrorStreamCaptureWrongThread, "EndCapture from another thread: %s", cudaGetErrorName(other));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphDestroy(g));
    /* ... which a Relaxed capture allows */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    std::thread([&] { other = cudaStreamEndCapture(s, &g); }).join();
    ST_CHECKF(other == cudaSuccess, "Relaxed EndCapture from another thread: %s", cudaGetErrorName(other));
    if (other == cudaSuccess) CK(cudaGraphDestroy(g));

    /* another thread's Global capture prohibits this thread's unsafe calls unless it relaxes its mode */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaError_t m1 = cudaSuccess, m2 = cudaErrorUnknown;
    std::thread([&] {
        m1 = cudaMalloc(&p, 16);
        cudaGetLastError();
    }).join();
    ST_CHECKF(m1 == cudaErrorStreamCaptureUnsupported, "cudaMalloc beside a Global capture: %s", cudaGetErrorName(m1));
    expect_invalidated(s);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    std::thread([&] {
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&mode);
        m2 = cudaMalloc(&p, 16);
        cudaThreadExchangeStreamCaptureMode(&mode);
        ST_CHECK(mode == cudaStreamCaptureModeRelaxed);
    }).join();
    ST_CHECKF(m2 == cudaSuccess, "cudaMalloc in Relaxed thread mode: %s", cudaGetErrorName(m2));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphDestroy(g));
    if (m2 == cudaSuccess) cudaFree(p);

    /* an event recorded in a capture cannot be waited for by the host */
    cudaEvent_t ev;
    CK(cudaEventCreate(&ev));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(ev, s));
    EXPECT(cudaEventSynchronize(ev), cudaErrorCapturedEvent);
    expect_invalidated(s);
    CK(cudaEventRecord(ev, s));   /* recorded outside a capture again: an ordinary event */
    CK(cudaEventSynchronize(ev));
    cudaEventDestroy(ev);

    /* external event nodes: only in a capture */
    CK(cudaEventCreate(&ev));
    EXPECT(cudaStreamWaitEvent(s, ev, cudaEventWaitExternal), cudaErrorInvalidValue);
    EXPECT(cudaEventRecordWithFlags(ev, s, cudaEventRecordExternal), cudaErrorInvalidValue);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaStreamWaitEvent(s, ev, cudaEventWaitExternal));
    CK(cudaEventRecordWithFlags(ev, s, cudaEventRecordExternal));
    CK(cudaStreamEndCapture(s, &g));
    cudaGraphNode_t en[2];
    size_t ne = 2;
    CK(cudaGraphGetNodes(g, en, &ne));
    cudaGraphNodeType ta = cudaGraphNodeTypeEmpty, tb = cudaGraphNodeTypeEmpty;
    if (ne == 2) {
        CK(cudaGraphNodeGetType(en[0], &ta));
        CK(cudaGraphNodeGetType(en[1], &tb));
    }
    ST_CHECK(ne == 2 && ta == cudaGraphNodeTypeWaitEvent && tb == cudaGraphNodeTypeEventRecord);
    CK(cudaGraphDestroy(g));
    cudaEventDestroy(ev);

    /* ending where no capture is */
    EXPECT(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    CK(cudaDeviceSynchronize());
    cudaFree(d);
    cudaStreamDestroy(s);
    cudaStreamDestroy(nb);
}

int main() {
    (void)registered;
    ST_RUN(capture_kernels_copy_and_cublas_replay);
    ST_RUN(graph_built_by_hand);
    ST_RUN(fork_and_join_through_events);
    ST_RUN(illegal_calls_during_capture);
    ST_RUN(runtime_api_calls_counted);
    return st_summary();
}
