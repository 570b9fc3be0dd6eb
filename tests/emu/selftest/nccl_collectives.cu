/* nccl_collectives.cu - the emulated NCCL between processes: 2 and 3 ranks
   (forked, see nccl_harness.h) checking AllReduce (sum, avg, max, min,
   prod; float, half, bfloat16, int32; in and out of place, sizes over one
   transfer chunk) against a CPU reference folded in rank order, Broadcast
   from root 1 (and ncclBcast in place), AllGather (in and out of place),
   Reduce to root 1, ReduceScatter, stream order with kernels before and
   after a collective, group calls, a rank that waits without burning CPU,
   and the time of a 2-rank AllReduce of 1M floats (printed). */
#include "nccl_harness.h"
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdlib.h>
#include <vector>

/* rank r's element i: a value that differs between ranks and elements */
static float val(int r, size_t i, int op) {
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u + 17u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    float u = (float)(h & 0xffff) / 65536.0f;   /* [0, 1) */
    if (op == ncclProd) return 0.75f + 0.5f * u;
    return (u - 0.5f) * 8.0f + (float)r;
}

static float round_t(float v, ncclDataType_t t) {
    if (t == ncclHalf) return __half2float(__float2half_rn(v));
    if (t == ncclBfloat16) return __bfloat162float(__float2bfloat16_rn(v));
    if (t == ncclInt32) return (float)(int)v;
    return v;
}

static float step(float a, float b, ncclRedOp_t op) {
    switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return fmaxf(a, b);
    case ncclMin: return fminf(a, b);
    default: return a + b;
    }
}

/* the reference: rank order, rounded to the type after each step */
static float reference(int n, size_t i, ncclRedOp_t op, ncclDataType_t t) {
    if (t == ncclInt32) {
        int acc = (int)round_t(val(0, i, op), t);
        for (int r = 1; r < n; r++) {
            int v = (int)round_t(val(r, i, op), t);
            acc = op == ncclProd ? acc * v : op == ncclMax ? (acc > v ? acc : v) : op == ncclMin ? (acc < v ? acc : v) : acc + v;
        }
        if (op == ncclAvg) acc /= n;
        return (float)acc;
    }
    float acc = round_t(val(0, i, op), t);
    for (int r = 1; r < n; r++) acc = round_t(step(acc, round_t(val(r, i, op), t), op), t);
    if (op == ncclAvg) acc = round_t(acc / (float)n, t);
    return acc;
}

static size_t tsize(ncclDataType_t t) { return t == ncclHalf || t == ncclBfloat16 ? 2 : 4; }

static void put(void *buf, size_t i, ncclDataType_t t, float v) {
    if (t == ncclHalf) ((__half *)buf)[i] = __float2half_rn(v);
    else if (t == ncclBfloat16) ((__nv_bfloat16 *)buf)[i] = __float2bfloat16_rn(v);
    else if (t == ncclInt32) ((int *)buf)[i] = (int)v;
    else ((float *)buf)[i] = v;
}
static float get(const void *buf, size_t i, ncclDataType_t t) {
    if (t == ncclHalf) return __half2float(((const __half *)buf)[i]);
    if (t == ncclBfloat16) return __bfloat162float(((const __nv_bfloat16 *)buf)[i]);
    if (t == ncclInt32) return (float)((const int *)buf)[i];
    return ((const float *)buf)[i];
}

static ncclComm_t init_rank(int rank, int n, ncclUniqueId id) {
    ncclComm_t comm = NULL;
    NCHECK(ncclCommInitRank(&comm, n, id, rank));
    if (!comm) rank_finish();
    int c = -1, u = -1, d = -1;
    NCHECK(ncclCommCount(comm, &c));
    NCHECK(ncclCommUserRank(comm, &u));
    NCHECK(ncclCommCuDevice(comm, &d));
    ST_CHECKF(c == n && u == rank && d == 0, "count %d rank %d device %d", c, u, d);
    return comm;
}

/* >>allreduce */
struct ArCase { ncclDataType_t t; ncclRedOp_t op; size_t count; int inplace; };
static const ArCase kArCases[] = {
    {ncclFloat, ncclSum, 1000003, 0},   /* two transfer chunks and a bit */
    {ncclFloat, ncclSum, 70001, 1},
    {ncclFloat, ncclAvg, 70001, 0},
    {ncclFloat, ncclAvg, 513, 1},
    {ncclFloat, ncclMax, 70001, 0},
    {ncclFloat, ncclMax, 1, 1},
    {ncclFloat, ncclMin, 4099, 0},
    {ncclFloat, ncclProd, 4099, 1},
    {ncclHalf, ncclSum, 1100000, 0},    /* half: one chunk holds 1M elements */
    {ncclHalf, ncclSum, 7001, 1},
    {ncclHalf, ncclAvg, 7001, 0},
    {ncclHalf, ncclAvg, 7001, 1},
    {ncclHalf, ncclMax, 7001, 0},
    {ncclHalf, ncclMax, 7001, 1},
    {ncclBfloat16, ncclSum, 7001, 0},
    {ncclBfloat16, ncclAvg, 7001, 1},
    {ncclInt32, ncclSum, 7001, 0},
    {ncclInt32, ncclAvg, 7001, 1},
    {ncclInt32, ncclMin, 7001, 0},
    {ncclFloat, ncclSum, 0, 0},         /* nothing to do */
};

static void allreduce_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    cudaStream_t s;
    CCHECK(cudaStreamCreate(&s));
    for (size_t c = 0; c < sizeof kArCases / sizeof kArCases[0]; c++) {
        const ArCase &k = kArCases[c];
        size_t bytes = k.count * tsize(k.t);
        std::vector<char> host(bytes + 4), out(bytes + 4);
        for (size_t i = 0; i < k.count; i++) put(host.data(), i, k.t, val(rank, i, k.op));
        void *send = NULL, *recv = NULL;
        CCHECK(cudaMalloc(&send, bytes + 4));
        recv = send;
        if (!k.inplace) CCHECK(cudaMalloc(&recv, bytes + 4));
        CCHECK(cudaMemcpyAsync(send, host.data(), bytes, cudaMemcpyHostToDevice, s));
        NCHECK(ncclAllReduce(send, recv, k.count, k.t, k.op, comm, s));
        CCHECK(cudaMemcpyAsync(out.data(), recv, bytes, cudaMemcpyDeviceToHost, s));
        CCHECK(cudaStreamSynchronize(s));
        ncclResult_t ae;
        NCHECK(ncclCommGetAsyncError(comm, &ae));
        ST_CHECKF(ae == ncclSuccess, "case %zu: async error %d", c, (int)ae);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < k.count; i++) {
            float want = reference(n, i, k.op, k.t), got = get(out.data(), i, k.t);
            if (memcmp(&want, &got, 4) != 0 && !(want == 0 && got == 0)) {
                if (!bad) first = i;
                bad++;
            }
        }
        ST_CHECKF(bad == 0, "allreduce case %zu (type %d op %d count %zu %s): %zu wrong, first [%zu] = %g, want %g", c,
                  (int)k.t, (int)k.op, k.count, k.inplace ? "in place" : "out of place", bad, first,
                  get(out.data(), first, k.t), reference(n, first, k.op, k.t));
        CCHECK(cudaFree(send));
        if (!k.inplace) CCHECK(cudaFree(recv));
    }
    CCHECK(cudaStreamDestroy(s));
    NCHECK(ncclCommDestroy(comm));
}

ST_TEST(allreduce_2_ranks) { run_ranks(2, allreduce_body, NULL, 120); }
ST_TEST(allreduce_3_ranks) { run_ranks(3, allreduce_body, NULL, 120); }

/* >>broadcast, allgather, reduce, reducescatter */
static void data_movement_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    const size_t cnt = 600001;   /* over one chunk of floats */
    std::vector<float> h(cnt * n), o(cnt * n);
    float *a, *b;
    CCHECK(cudaMalloc(&a, cnt * n * sizeof(float)));
    CCHECK(cudaMalloc(&b, cnt * n * sizeof(float)));

    /* broadcast from root 1, out of place */
    for (size_t i = 0; i < cnt; i++) h[i] = val(rank, i, ncclSum);
    CCHECK(cudaMemcpy(a, h.data(), cnt * sizeof(float), cudaMemcpyHostToDevice));
    CCHECK(cudaMemset(b, 0, cnt * sizeof(float)));
    NCHECK(ncclBroadcast(a, b, cnt, ncclFloat, 1, comm, 0));
    CCHECK(cudaMemcpy(o.data(), b, cnt * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < cnt; i++) bad += o[i] != val(1, i, ncclSum);
    ST_CHECKF(bad == 0, "broadcast from root 1: %zu wrong", bad);

    /* ncclBcast in place from root 1 */
    NCHECK(ncclBcast(a, cnt, ncclFloat, 1, comm, 0));
    CCHECK(cudaMemcpy(o.data(), a, cnt * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (size_t i = 0; i < cnt; i++) bad += o[i] != val(1, i, ncclSum);
    ST_CHECKF(bad == 0, "ncclBcast from root 1: %zu wrong", bad);

    /* allgather, out of place */
    for (size_t i = 0; i < cnt; i++) h[i] = val(rank, i, ncclSum);
    CCHECK(cudaMemcpy(a, h.data(), cnt * sizeof(float), cudaMemcpyHostToDevice));
    NCHECK(ncclAllGather(a, b, cnt, ncclFloat, comm, 0));
    CCHECK(cudaMemcpy(o.data(), b, cnt * n * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < cnt; i++) bad += o[r * cnt + i] != val(r, i, ncclSum);
    ST_CHECKF(bad == 0, "allgather: %zu wrong", bad);

    /* allgather in place: sendbuff = recvbuff + rank * sendcount */
    CCHECK(cudaMemset(b, 0xff, cnt * n * sizeof(float)));
    CCHECK(cudaMemcpy(b + rank * cnt, h.data(), cnt * sizeof(float), cudaMemcpyHostToDevice));
    NCHECK(ncclAllGather(b + rank * cnt, b, cnt, ncclFloat, comm, 0));
    CCHECK(cudaMemcpy(o.data(), b, cnt * n * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < cnt; i++) bad += o[r * cnt + i] != val(r, i, ncclSum);
    ST_CHECKF(bad == 0, "allgather in place: %zu wrong", bad);

    /* reduce (sum) to root 1: other ranks' recvbuff untouched */
    CCHECK(cudaMemset(b, 0, cnt * sizeof(float)));
    NCHECK(ncclReduce(a, b, cnt, ncclFloat, ncclSum, 1, comm, 0));
    CCHECK(cudaMemcpy(o.data(), b, cnt * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (size_t i = 0; i < cnt; i++) bad += o[i] != (rank == 1 ? reference(n, i, ncclSum, ncclFloat) : 0.0f);
    ST_CHECKF(bad == 0, "reduce to root 1 (rank %d): %zu wrong", rank, bad);

    /* reducescatter (max): rank r gets block r of the reduction */
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < cnt; i++) h[r * cnt + i] = val(rank, r * cnt + i, ncclSum);
    CCHECK(cudaMemcpy(a, h.data(), cnt * n * sizeof(float), cudaMemcpyHostToDevice));
    NCHECK(ncclReduceScatter(a, b, cnt, ncclFloat, ncclMax, comm, 0));
    CCHECK(cudaMemcpy(o.data(), b, cnt * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (size_t i = 0; i < cnt; i++) bad += o[i] != reference(n, rank * cnt + i, ncclMax, ncclFloat);
    ST_CHECKF(bad == 0, "reducescatter: %zu wrong", bad);

    ncclResult_t ae;
    NCHECK(ncclCommGetAsyncError(comm, &ae));
    ST_CHECK(ae == ncclSuccess);
    CCHECK(cudaFree(a));
    CCHECK(cudaFree(b));
    NCHECK(ncclCommFinalize(comm));
    NCHECK(ncclCommDestroy(comm));
}

ST_TEST(broadcast_allgather_reduce_2_ranks) { run_ranks(2, data_movement_body, NULL, 120); }
ST_TEST(broadcast_allgather_reduce_3_ranks) { run_ranks(3, data_movement_body, NULL, 120); }

/* >>stream order */
__global__ void fill_k(float *x, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
__global__ void scale_k(float *x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

static void stream_order_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    const int cnt = 100000;
    float *x;
    CCHECK(cudaMalloc(&x, cnt * sizeof(float)));
    cudaStream_t s;
    CCHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CCHECK(cudaEventCreate(&ev));
    if (rank == 1) sleep_ms(400);   /* rank 0 issues first and has to wait */
    double t0 = now_ms();
    fill_k<<<(cnt + 255) / 256, 256, 0, s>>>(x, cnt, (float)(rank + 1));
    NCHECK(ncclAllReduce(x, x, cnt, ncclFloat, ncclSum, comm, s));
    CCHECK(cudaEventRecord(ev, s));
    scale_k<<<(cnt + 255) / 256, 256, 0, s>>>(x, cnt, 2.0f);
    double issue = now_ms() - t0;
    ST_CHECKF(issue < 200, "issuing kernel + allreduce + kernel took %.0f ms: the collective should be queued", issue);
    double cpu0 = cpu_ms(), w0 = now_ms();
    CCHECK(cudaEventSynchronize(ev));
    double waited = now_ms() - w0, cpu = cpu_ms() - cpu0;
    if (rank == 0) {
        ST_CHECKF(waited > 150, "rank 0 waited only %.0f ms for a peer that came 400 ms late", waited);
        ST_CHECKF(cpu < waited * 0.5 + 20, "rank 0 burnt %.0f ms of CPU while waiting %.0f ms", cpu, waited);
    }
    CCHECK(cudaStreamSynchronize(s));
    ST_CHECK(cudaStreamQuery(s) == cudaSuccess);
    std::vector<float> o(cnt);
    CCHECK(cudaMemcpy(o.data(), x, cnt * sizeof(float), cudaMemcpyDeviceToHost));
    float want = 2.0f * (float)(n * (n + 1) / 2);
    int bad = 0;
    for (int i = 0; i < cnt; i++) bad += o[i] != want;
    ST_CHECKF(bad == 0, "kernel, allreduce, kernel: %d wrong (x[0] = %g, want %g)", bad, o[0], want);

    /* two streams, one communicator: collectives run in call order */
    cudaStream_t s2;
    CCHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float *y;
    CCHECK(cudaMalloc(&y, cnt * sizeof(float)));
    fill_k<<<(cnt + 255) / 256, 256, 0, s>>>(x, cnt, 1.0f);
    fill_k<<<(cnt + 255) / 256, 256, 0, s2>>>(y, cnt, 10.0f * (rank + 1));
    NCHECK(ncclAllReduce(x, x, cnt, ncclFloat, ncclSum, comm, s));
    NCHECK(ncclAllReduce(y, y, cnt, ncclFloat, ncclMax, comm, s2));
    CCHECK(cudaStreamSynchronize(s2));   /* runs the second, which needs the first */
    CCHECK(cudaStreamSynchronize(s));
    float xv, yv;
    CCHECK(cudaMemcpy(&xv, x + 7, sizeof xv, cudaMemcpyDeviceToHost));
    CCHECK(cudaMemcpy(&yv, y + 7, sizeof yv, cudaMemcpyDeviceToHost));
    ST_CHECKF(xv == (float)n && yv == 10.0f * n, "two streams: x %g (want %d), y %g (want %g)", xv, n, yv, 10.0f * n);
    ncclResult_t ae;
    NCHECK(ncclCommGetAsyncError(comm, &ae));
    ST_CHECK(ae == ncclSuccess);
    CCHECK(cudaStreamDestroy(s));
    CCHECK(cudaStreamDestroy(s2));
    CCHECK(cudaEventDestroy(ev));
    CCHECK(cudaFree(x));
    CCHECK(cudaFree(y));
    NCHECK(ncclCommDestroy(comm));
}

ST_TEST(stream_order_2_ranks) { run_ranks(2, stream_order_body, NULL, 60); }
ST_TEST(stream_order_3_ranks) { run_ranks(3, stream_order_body, NULL, 60); }

/* >>groups */
static void group_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    const int cnt = 1000;
    std::vector<float> h(cnt);
    for (int i = 0; i < cnt; i++) h[i] = val(rank, i, ncclSum);
    float *a, *b, *c;
    CCHECK(cudaMalloc(&a, cnt * sizeof(float)));
    CCHECK(cudaMalloc(&b, cnt * sizeof(float)));
    CCHECK(cudaMalloc(&c, cnt * n * sizeof(float)));
    CCHECK(cudaMemcpy(a, h.data(), cnt * sizeof(float), cudaMemcpyHostToDevice));
    CCHECK(cudaMemcpy(b, h.data(), cnt * sizeof(float), cudaMemcpyHostToDevice));
    NCHECK(ncclGroupStart());
    NCHECK(ncclAllReduce(a, a, cnt, ncclFloat, ncclSum, comm, 0));
    NCHECK(ncclGroupStart());   /* nested */
    NCHECK(ncclBroadcast(b, b, cnt, ncclFloat, n - 1, comm, 0));
    NCHECK(ncclGroupEnd());
    NCHECK(ncclAllGather(b, c, cnt, ncclFloat, comm, 0));
    ST_CHECKF(ncclAllReduce(a, a, cnt, (ncclDataType_t)99, ncclSum, comm, 0) == ncclInvalidArgument,
              "a bad call inside a group fails at the call");
    NCHECK(ncclGroupEnd());
    std::vector<float> o(cnt * n);
    CCHECK(cudaMemcpy(o.data(), a, cnt * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < cnt; i++) bad += o[i] != reference(n, i, ncclSum, ncclFloat);
    CCHECK(cudaMemcpy(o.data(), c, cnt * n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < n; r++)
        for (int i = 0; i < cnt; i++) bad += o[r * cnt + i] != val(n - 1, i, ncclSum);
    ST_CHECKF(bad == 0, "group: %d wrong", bad);
    ST_CHECK(ncclGroupEnd() == ncclInvalidUsage);
    NCHECK(ncclCommDestroy(comm));
}

ST_TEST(group_calls_2_ranks) { run_ranks(2, group_body, NULL, 60); }
ST_TEST(group_calls_3_ranks) { run_ranks(3, group_body, NULL, 60); }

/* >>timing */
static void timing_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    const size_t cnt = 1 << 20;
    float *x;
    CCHECK(cudaMalloc(&x, cnt * sizeof(float)));
    CCHECK(cudaMemset(x, 0, cnt * sizeof(float)));
    cudaStream_t s;
    CCHECK(cudaStreamCreate(&s));
    NCHECK(ncclAllReduce(x, x, cnt, ncclFloat, ncclSum, comm, s));   /* warm up */
    CCHECK(cudaStreamSynchronize(s));
    const int iters = 10;
    double t0 = now_ms();
    for (int i = 0; i < iters; i++) {
        NCHECK(ncclAllReduce(x, x, cnt, ncclFloat, ncclSum, comm, s));
        CCHECK(cudaStreamSynchronize(s));
    }
    double ms = (now_ms() - t0) / iters;
    if (rank == 0) printf("# 2-rank ncclAllReduce of 1M floats (4 MB, sum, in place): %.2f ms each\n", ms);
    ST_CHECKF(ms < 2000, "%.0f ms for one all-reduce", ms);
    CCHECK(cudaFree(x));
    CCHECK(cudaStreamDestroy(s));
    NCHECK(ncclCommDestroy(comm));
}

ST_TEST(allreduce_1M_floats_time) { run_ranks(2, timing_body, NULL, 60); }

ST_TEST(version) {
    int v = 0;
    ST_CHECK(ncclGetVersion(&v) == ncclSuccess && v == NCCL_VERSION_CODE && v == 22809);
    ST_CHECK(ncclGetVersion(NULL) == ncclInvalidArgument);
}

int main(void) {
    ST_RUN(version);
    ST_RUN(allreduce_2_ranks);
    ST_RUN(allreduce_3_ranks);
    ST_RUN(broadcast_allgather_reduce_2_ranks);
    ST_RUN(broadcast_allgather_reduce_3_ranks);
    ST_RUN(stream_order_2_ranks);
    ST_RUN(stream_order_3_ranks);
    ST_RUN(group_calls_2_ranks);
    ST_RUN(group_calls_3_ranks);
    ST_RUN(allreduce_1M_floats_time);
    return st_summary();
}
