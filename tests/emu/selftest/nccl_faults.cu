/* nccl_faults.cu - the emulated NCCL when things go wrong: argument checks
   (ncclInvalidArgument / ncclInvalidUsage as NCCL documents them), a rank
   that exits before or during a collective (the others get ncclRemoteError
   as their asynchronous error within a short time, measured and printed,
   instead of hanging; also when the dead rank is an unreaped zombie),
   ncclCommAbort of a pending collective from another thread, collectives
   that differ between ranks, non-blocking initialisation (ncclInProgress
   until every rank arrived; abortable when a peer never comes), and the
   removal of shared segments that crashed runs left behind. */
#include "nccl_harness.h"
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <vector>

static const char *seg_path(const ncclUniqueId &id, char *buf, size_t n) {
    /* the emulator's id names a POSIX shared-memory segment (after 16 bytes of magic) */
    snprintf(buf, n, "/dev/shm%s", id.internal + 16);
    return buf;
}
static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

static ncclComm_t init_rank(int rank, int n, ncclUniqueId id) {
    ncclComm_t comm = NULL;
    NCHECK(ncclCommInitRank(&comm, n, id, rank));
    if (!comm) rank_finish();
    return comm;
}

/* >>arguments */
ST_TEST(init_argument_checks) {
    ncclUniqueId id, zero;
    memset(&zero, 0, sizeof zero);
    ST_CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    ST_CHECK(ncclGetUniqueId(NULL) == ncclInvalidArgument);
    ncclUniqueId id2;
    ST_CHECK(ncclGetUniqueId(&id2) == ncclSuccess && memcmp(&id, &id2, sizeof id) != 0);
    ncclComm_t comm = (ncclComm_t)0x1;
    ST_CHECK(ncclCommInitRank(NULL, 2, id, 0) == ncclInvalidArgument);
    ST_CHECK(ncclCommInitRank(&comm, 2, id, 2) == ncclInvalidArgument && comm == NULL);
    ST_CHECK(ncclCommInitRank(&comm, 2, id, -1) == ncclInvalidArgument);
    ST_CHECK(ncclCommInitRank(&comm, 0, id, 0) == ncclInvalidArgument);
    ST_CHECK(ncclCommInitRank(&comm, 2, zero, 0) == ncclInvalidArgument);
    ncclConfig_t bad;
    memset(&bad, 0, sizeof bad);
    ST_CHECK(ncclCommInitRankConfig(&comm, 2, id, 0, &bad) == ncclInvalidArgument);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 7;
    ST_CHECK(ncclCommInitRankConfig(&comm, 2, id, 0, &cfg) == ncclInvalidArgument);
    ST_CHECK(strlen(ncclGetLastError(NULL)) > 0);
    ST_CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
    ST_CHECK(strstr(ncclGetErrorString(ncclRemoteError), "remote") != NULL);
    ST_CHECK(strcmp(ncclGetErrorString(ncclInvalidArgument), ncclGetErrorString(ncclInvalidUsage)) != 0);
    int x;
    ST_CHECK(ncclCommCount(NULL, &x) == ncclInvalidArgument);
    ST_CHECK(ncclCommUserRank(NULL, &x) == ncclInvalidArgument);
    ST_CHECK(ncclCommCuDevice(NULL, &x) == ncclInvalidArgument);
    ncclResult_t e;
    ST_CHECK(ncclCommGetAsyncError(NULL, &e) == ncclInvalidArgument);
    ST_CHECK(ncclAllReduce(NULL, NULL, 1, ncclFloat, ncclSum, NULL, 0) == ncclInvalidArgument);
    ST_CHECK(ncclBroadcast(NULL, NULL, 1, ncclFloat, 0, NULL, 0) == ncclInvalidArgument);
}

static void args_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    float *d;
    CCHECK(cudaMalloc(&d, 64 * sizeof(float)));
    float *h = (float *)malloc(64 * sizeof(float));
    float *pinned;
    CCHECK(cudaMallocHost(&pinned, 64 * sizeof(float)));
    ST_CHECK(ncclAllReduce(d, d, 64, (ncclDataType_t)ncclNumTypes, ncclSum, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclAllReduce(d, d, 64, (ncclDataType_t)-1, ncclSum, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclAllReduce(d, d, 64, ncclFloat, (ncclRedOp_t)ncclNumOps, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclReduce(d, d, 64, ncclFloat, ncclSum, n, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclBroadcast(d, d, 64, ncclFloat, -1, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclBcast(d, 64, ncclFloat, n, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclAllReduce(h, d, 64, ncclFloat, ncclSum, comm, 0) == ncclInvalidArgument);   /* host memory */
    ST_CHECK(ncclAllReduce(d, h, 64, ncclFloat, ncclSum, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclAllReduce(d, NULL, 64, ncclFloat, ncclSum, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclAllReduce(d, d, 65, ncclFloat, ncclSum, comm, 0) == ncclInvalidArgument);   /* past the end */
    ST_CHECK(ncclAllGather(d, d, 64, ncclFloat, comm, 0) == (n == 1 ? ncclSuccess : ncclInvalidArgument));
    ST_CHECK(strstr(ncclGetLastError(comm), "recvbuff") != NULL || n == 1);
    /* pinned host memory is accessible to the device: accepted */
    NCHECK(ncclAllReduce(pinned, pinned, 64, ncclFloat, ncclSum, comm, 0));
    NCHECK(ncclAllReduce(d, d, 64, ncclFloat, ncclAvg, comm, 0));
    CCHECK(cudaDeviceSynchronize());
    ncclResult_t e;
    NCHECK(ncclCommGetAsyncError(comm, &e));
    ST_CHECK(e == ncclSuccess);
    NCHECK(ncclCommDestroy(comm));
    /* the handle after destroy */
    ST_CHECK(ncclAllReduce(d, d, 64, ncclFloat, ncclSum, comm, 0) == ncclInvalidArgument);
    ST_CHECK(ncclCommDestroy(comm) == ncclInvalidArgument);
    CCHECK(cudaFree(d));
    CCHECK(cudaFreeHost(pinned));
    free(h);
}

ST_TEST(collective_argument_checks_1_rank) { run_ranks(1, args_body, NULL, 30); }
ST_TEST(collective_argument_checks_2_ranks) { run_ranks(2, args_body, NULL, 30); }

/* >>dead peers */
static void dead_peer_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    if (rank == n - 1) {   /* gone before the collective: no destroy, no goodbye */
        sleep_ms(350);
        _exit(0);
    }
    float *x;
    CCHECK(cudaMalloc(&x, 1000 * sizeof(float)));
    cudaStream_t s;
    CCHECK(cudaStreamCreate(&s));
    NCHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, s));
    double t0 = now_ms(), c0 = cpu_ms();
    CCHECK(cudaStreamSynchronize(s));   /* the stream's work completes, with an error for NCCL */
    double dt = now_ms() - t0, cpu = cpu_ms() - c0;
    ncclResult_t e = ncclSuccess;
    NCHECK(ncclCommGetAsyncError(comm, &e));
    ST_CHECKF(e == ncclRemoteError, "async error %d, want ncclRemoteError", (int)e);
    ST_CHECKF(dt < 3000, "detected after %.0f ms", dt);
    ST_CHECKF(cpu < dt * 0.5 + 20, "%.0f ms of CPU in %.0f ms of waiting", cpu, dt);
    if (rank == 0) printf("# %d ranks, rank %d exited (about 350 ms after init) instead of joining the collective: rank 0 "
                          "had ncclRemoteError after waiting %.0f ms\n", n, n - 1, dt);
    /* later collectives fail at once */
    ST_CHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, s) == ncclRemoteError);
    ST_CHECK(strlen(ncclGetLastError(comm)) > 0);
    NCHECK(ncclCommAbort(comm));
    CCHECK(cudaFree(x));
}

ST_TEST(dead_peer_2_ranks) { run_ranks(2, dead_peer_body, NULL, 30); }
ST_TEST(dead_peer_3_ranks) { run_ranks(3, dead_peer_body, NULL, 30); }

/* rank 1 is rank 0's own child: when it dies it stays a zombie, since
   rank 0 is busy waiting in the collective and does not reap it. killed:
   rank 1 does two collectives and then stops; rank 0 issues three and
   waits in the third, when another thread kills rank 1 (SIGKILL). */
struct KillArg { pid_t pid; double at; };
static void *killer(void *p) {
    KillArg *k = (KillArg *)p;
    sleep_ms(350);   /* between two of the waiting rank's checks of its peers (every 100 ms) */
    k->at = now_ms();
    kill(k->pid, SIGKILL);
    return NULL;
}

static void zombie_body(int, int, ncclUniqueId, void *arg) {
    int killed = arg != NULL;
    ncclUniqueId id;
    NCHECK(ncclGetUniqueId(&id));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        ncclComm_t c = NULL;
        if (ncclCommInitRank(&c, 2, id, 1) != ncclSuccess) _exit(3);
        if (!killed) _exit(0);
        float *y;
        cudaMalloc(&y, 4000);
        ncclAllReduce(y, y, 1000, ncclFloat, ncclSum, c, 0);
        ncclAllReduce(y, y, 1000, ncclFloat, ncclSum, c, 0);
        cudaStreamSynchronize(0);
        for (;;) pause();
    }
    ncclComm_t comm = init_rank(0, 2, id);
    float *x;
    CCHECK(cudaMalloc(&x, 4000));
    for (int i = 0; i < 3; i++) NCHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, 0));
    KillArg k = {child, 0};
    pthread_t th;
    if (killed) pthread_create(&th, NULL, killer, &k);
    double t0 = now_ms();
    CCHECK(cudaStreamSynchronize(0));
    double t1 = now_ms();
    if (killed) pthread_join(th, NULL);
    ncclResult_t e;
    NCHECK(ncclCommGetAsyncError(comm, &e));
    ST_CHECKF(e == ncclRemoteError, "async error %d, want ncclRemoteError", (int)e);
    if (!killed) {
        ST_CHECKF(t1 - t0 < 3000, "detected after %.0f ms", t1 - t0);
        printf("# rank 1 exited (a zombie, not reaped): rank 0 had ncclRemoteError after %.0f ms\n", t1 - t0);
    } else {
        ST_CHECKF(k.at > 0 && t1 - k.at < 3000, "detected %.0f ms after the kill", t1 - k.at);
        printf("# rank 1 killed (SIGKILL) while rank 0 waited: ncclRemoteError %.0f ms after the kill (%.0f ms after the wait began)\n", t1 - k.at, t1 - t0);
    }
    NCHECK(ncclCommAbort(comm));
    int st;
    waitpid(child, &st, 0);
}

ST_TEST(dead_peer_zombie) { run_ranks(1, zombie_body, NULL, 30); }
ST_TEST(dead_peer_sigkill_while_waiting) { run_ranks(1, zombie_body, (void *)1, 30); }

/* >>abort */
struct AbortArg { ncclComm_t comm; double at; };
static void *aborter(void *p) {
    AbortArg *a = (AbortArg *)p;
    sleep_ms(300);
    a->at = now_ms();
    ncclResult_t r = ncclCommAbort(a->comm);
    return (void *)(intptr_t)r;
}

static void abort_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    float *x;
    CCHECK(cudaMalloc(&x, 1000 * sizeof(float)));
    if (rank != 0) {
        /* rank 0 aborts before this rank comes: this rank then sees its peer
           gone (at the latest in the second collective: rank 0 had put its
           part of the first one in before the abort) */
        sleep_ms(1200);
        NCHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, 0));
        NCHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, 0));
        double t0 = now_ms();
        CCHECK(cudaDeviceSynchronize());
        ncclResult_t e;
        NCHECK(ncclCommGetAsyncError(comm, &e));
        ST_CHECKF(e == ncclRemoteError && now_ms() - t0 < 3000, "rank %d: async error %d after %.0f ms", rank, (int)e,
                  now_ms() - t0);
        NCHECK(ncclCommAbort(comm));
        return;
    }
    cudaStream_t s;
    CCHECK(cudaStreamCreate(&s));
    NCHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, s));
    AbortArg a = {comm, 0};
    pthread_t th;
    pthread_create(&th, NULL, aborter, &a);
    CCHECK(cudaStreamSynchronize(s));   /* waits for the peers until the abort */
    double done = now_ms();
    void *ret;
    pthread_join(th, &ret);
    ST_CHECKF((ncclResult_t)(intptr_t)ret == ncclSuccess, "ncclCommAbort: %d", (int)(intptr_t)ret);
    ST_CHECKF(a.at > 0 && done - a.at < 1000, "the pending collective ended %.0f ms after the abort", done - a.at);
    ST_CHECK(cudaStreamQuery(s) == cudaSuccess);
    ncclResult_t e = ncclSuccess;
    ST_CHECK(ncclCommGetAsyncError(comm, &e) == ncclSuccess);
    ST_CHECKF(e != ncclSuccess && e != ncclInProgress, "async error after abort: %d", (int)e);
    ST_CHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, s) == ncclInvalidArgument);
    ST_CHECK(ncclCommAbort(comm) == ncclInvalidArgument);
    printf("# rank 0: ncclCommAbort from another thread ended the pending collective after %.0f ms\n", done - a.at);
    CCHECK(cudaStreamDestroy(s));
    CCHECK(cudaFree(x));
}

ST_TEST(abort_pending_collective_2_ranks) { run_ranks(2, abort_body, NULL, 30); }
ST_TEST(abort_pending_collective_3_ranks) { run_ranks(3, abort_body, NULL, 30); }

/* >>a device fault */
__global__ void bad_k(float *p, long i) { p[i] = 1.0f; }

static void device_fault_body(int rank, int n, ncclUniqueId id, void *) {
    ncclComm_t comm = init_rank(rank, n, id);
    float *x;
    CCHECK(cudaMalloc(&x, 1000 * sizeof(float)));
    if (rank == 1) bad_k<<<1, 1>>>(x, 1000 + 1024);   /* one page past the end: faults before the collective runs */
    NCHECK(ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, 0));
    cudaError_t ce = cudaDeviceSynchronize();
    ncclResult_t e;
    NCHECK(ncclCommGetAsyncError(comm, &e));
    if (rank == 1) {
        ST_CHECKF(ce == cudaErrorIllegalAddress, "rank 1: %s", cudaGetErrorName(ce));
        ST_CHECKF(e == ncclUnhandledCudaError, "rank 1: async error %d, want ncclUnhandledCudaError", (int)e);
        sleep_ms(1000);   /* alive: the peers learn of the failure from the segment */
    } else {
        ST_CHECKF(ce == cudaSuccess && e == ncclRemoteError, "rank %d: %s, async error %d, want ncclRemoteError", rank,
                  cudaGetErrorName(ce), (int)e);
    }
    NCHECK(ncclCommAbort(comm));
}

ST_TEST(device_fault_fails_the_collective) { run_ranks(2, device_fault_body, NULL, 30); }

/* >>mismatch */
static void mismatch_body(int rank, int n, ncclUniqueId id, void *) {
    if (rank == 1) sleep_ms(300);
    double t0 = now_ms();
    ncclComm_t comm = init_rank(rank, n, id);
    if (rank == 0) ST_CHECKF(now_ms() - t0 > 200, "a blocking init returned after %.0f ms, before rank 1 came", now_ms() - t0);
    float *x;
    CCHECK(cudaMalloc(&x, 1000 * sizeof(float)));
    NCHECK(ncclAllReduce(x, x, 100 + (rank == 1), ncclFloat, ncclSum, comm, 0));
    CCHECK(cudaDeviceSynchronize());
    ncclResult_t e;
    NCHECK(ncclCommGetAsyncError(comm, &e));
    ST_CHECKF(e == ncclInvalidUsage, "rank %d: async error %d, want ncclInvalidUsage", rank, (int)e);
    ST_CHECK(strstr(ncclGetLastError(comm), "same order") != NULL);
    NCHECK(ncclCommAbort(comm));
}

ST_TEST(mismatched_collectives) { run_ranks(2, mismatch_body, NULL, 30); }

/* >>non-blocking */
static void nonblocking_body(int rank, int n, ncclUniqueId id, void *) {
    if (rank == n - 1) sleep_ms(500);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t comm = NULL;
    double t0 = now_ms();
    ncclResult_t r = ncclCommInitRankConfig(&comm, n, id, rank, &cfg);
    ST_CHECKF(r == ncclInProgress || r == ncclSuccess, "ncclCommInitRankConfig: %d", (int)r);
    ST_CHECKF(now_ms() - t0 < 200, "non-blocking init took %.0f ms", now_ms() - t0);
    if (!comm) rank_finish();
    int seen_in_progress = 0;
    ncclResult_t e = ncclInProgress;
    while (now_ms() - t0 < 10000) {
        NCHECK(ncclCommGetAsyncError(comm, &e));
        if (e != ncclInProgress) break;
        seen_in_progress++;
        sleep_ms(5);
    }
    ST_CHECKF(e == ncclSuccess, "rank %d: state %d after %.0f ms", rank, (int)e, now_ms() - t0);
    if (rank == 0) ST_CHECKF(seen_in_progress > 10, "rank 0 saw ncclInProgress %d times", seen_in_progress);
    float *x;
    CCHECK(cudaMalloc(&x, 1000 * sizeof(float)));
    CCHECK(cudaMemset(x, 0, 1000 * sizeof(float)));
    r = ncclAllReduce(x, x, 1000, ncclFloat, ncclSum, comm, 0);
    ST_CHECKF(r == ncclSuccess || r == ncclInProgress, "ncclAllReduce: %d", (int)r);
    CCHECK(cudaDeviceSynchronize());
    NCHECK(ncclCommGetAsyncError(comm, &e));
    ST_CHECK(e == ncclSuccess);
    r = ncclCommFinalize(comm);
    ST_CHECK(r == ncclSuccess || r == ncclInProgress);
    do {
        NCHECK(ncclCommGetAsyncError(comm, &e));
    } while (e == ncclInProgress);
    NCHECK(ncclCommDestroy(comm));
    CCHECK(cudaFree(x));
}

ST_TEST(nonblocking_init_2_ranks) { run_ranks(2, nonblocking_body, NULL, 30); }
ST_TEST(nonblocking_init_3_ranks) { run_ranks(3, nonblocking_body, NULL, 30); }

static void never_arrives_body(int, int, ncclUniqueId id, void *) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t comm = NULL;
    ST_CHECK(ncclCommInitRankConfig(&comm, 2, id, 0, &cfg) == ncclInProgress);
    if (!comm) rank_finish();
    double t0 = now_ms();
    ncclResult_t e = ncclSuccess;
    int polls = 0, in_progress = 0;
    while (now_ms() - t0 < 400) {
        NCHECK(ncclCommGetAsyncError(comm, &e));
        polls++;
        in_progress += e == ncclInProgress;
        sleep_ms(10);
    }
    ST_CHECKF(polls == in_progress, "%d of %d polls said ncclInProgress", in_progress, polls);
    char path[200];
    seg_path(id, path, sizeof path);
    ST_CHECKF(exists(path), "%s missing while rank 0 waits", path);
    float *x;
    CCHECK(cudaMalloc(&x, 64));
    ST_CHECK(ncclAllReduce(x, x, 16, ncclFloat, ncclSum, comm, 0) == ncclInvalidUsage);   /* not ready */
    double a0 = now_ms();
    NCHECK(ncclCommAbort(comm));
    ST_CHECKF(now_ms() - a0 < 500, "ncclCommAbort took %.0f ms", now_ms() - a0);
    NCHECK(ncclCommGetAsyncError(comm, &e));
    ST_CHECK(e != ncclInProgress);
    ST_CHECKF(!exists(path), "%s left behind after the only rank aborted", path);
    CCHECK(cudaFree(x));
}

ST_TEST(nonblocking_init_peer_never_arrives_abort) { run_ranks(1, never_arrives_body, NULL, 30); }

/* >>stale segments */
static void stale_body(int, int, ncclUniqueId, void *) {
    int p[2];
    if (pipe(p) != 0) return;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        ncclUniqueId id;
        ncclGetUniqueId(&id);
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.blocking = 0;
        ncclComm_t c;
        ncclCommInitRankConfig(&c, 2, id, 0, &cfg);   /* waits for a rank 1 that never comes */
        full_write(p[1], &id, sizeof id);
        sleep_ms(50);
        _exit(0);                                     /* no abort: the segment stays */
    }
    close(p[1]);
    ncclUniqueId id;
    ST_CHECK(full_read(p[0], &id, sizeof id));
    int st;
    waitpid(child, &st, 0);
    char path[200];
    seg_path(id, path, sizeof path);
    ST_CHECKF(exists(path), "%s: the crashed run's segment should still be there", path);
    ncclUniqueId fresh;
    NCHECK(ncclGetUniqueId(&fresh));   /* sweeps what dead processes left */
    ST_CHECKF(!exists(path), "%s still there after ncclGetUniqueId", path);
    /* a rank of the dead run's id: its only peer is gone */
    ncclComm_t comm = NULL;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ST_CHECK(ncclCommInitRankConfig(&comm, 2, id, 1, &cfg) == ncclInProgress);
    NCHECK(ncclCommAbort(comm));
    ST_CHECKF(!exists(path), "%s left behind", path);
}

ST_TEST(stale_segment_removed) { run_ranks(1, stale_body, NULL, 30); }

int main(void) {
    ST_RUN(init_argument_checks);
    ST_RUN(collective_argument_checks_1_rank);
    ST_RUN(collective_argument_checks_2_ranks);
    ST_RUN(dead_peer_2_ranks);
    ST_RUN(dead_peer_3_ranks);
    ST_RUN(dead_peer_zombie);
    ST_RUN(dead_peer_sigkill_while_waiting);
    ST_RUN(abort_pending_collective_2_ranks);
    ST_RUN(abort_pending_collective_3_ranks);
    ST_RUN(device_fault_fails_the_collective);
    ST_RUN(mismatched_collectives);
    ST_RUN(nonblocking_init_2_ranks);
    ST_RUN(nonblocking_init_3_ranks);
    ST_RUN(nonblocking_init_peer_never_arrives_abort);
    ST_RUN(stale_segment_removed);
    return st_summary();
}
