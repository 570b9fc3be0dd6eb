/* nccl_harness.h - runs a self-test body as N ranks, each its own process
   (fork, no MPI), for the nccl_*.cu self-tests.

   run_ranks(n, body, arg, timeout_s): rank 0 creates the unique id and
   hands it to the other ranks through pipes; each rank runs body(rank, n,
   id, arg) with the selftest.h checks, then reports its first failure to
   the parent through a pipe and exits. A rank that exits on its own with
   status 0 and reports nothing counts as passing (tests that kill a rank on
   purpose). The parent fails the test (ST_CHECKF) for any rank that failed,
   crashed, or ran past timeout_s (all ranks are then killed). The parent
   itself never touches CUDA: children inherit no runtime state. */
#ifndef NCCL_HARNESS_H
#define NCCL_HARNESS_H

#include "selftest.h"
#include <nccl.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void (*rank_body)(int rank, int nranks, ncclUniqueId id, void *arg);

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double cpu_ms(void) {   /* this process's CPU time (user + system) */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int g_report_fd = -1;   /* in a rank: where its result goes */

static void full_write(int fd, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        c += w;
        n -= (size_t)w;
    }
}

static int full_read(int fd, void *p, size_t n) {
    char *c = (char *)p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, c + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    return 1;
}

/* In a rank: ends the rank now, reporting the checks so far. */
static void rank_finish(void) {
    if (st_cur_failed && g_report_fd >= 0) full_write(g_report_fd, st_first, strlen(st_first));
    fflush(stdout);
    fflush(stderr);
    _exit(st_cur_failed ? 1 : 0);
}

static void run_ranks(int n, rank_body body, void *arg, int timeout_s) {
    enum { MAXR = 8 };
    pid_t pids[MAXR];
    int idpipe[MAXR][2], res[MAXR][2];
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < n; r++) {
        if (pipe(idpipe[r]) != 0 || pipe(res[r]) != 0) {
            ST_CHECKF(0, "pipe: %s", strerror(errno));
            return;
        }
    }
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            ST_CHECKF(0, "fork: %s", strerror(errno));
            return;
        }
        if (pids[r] == 0) {
            for (int q = 0; q < n; q++) {
                close(res[q][0]);
                if (q != r) close(res[q][1]);
                close(idpipe[q][r == 0 ? 0 : 1]);
                if (r != 0 && q != r) close(idpipe[q][0]);
            }
            g_report_fd = res[r][1];
            ncclUniqueId id;
            if (r == 0) {
                ncclResult_t e = ncclGetUniqueId(&id);
                if (e != ncclSuccess) {
                    ST_CHECKF(0, "ncclGetUniqueId: %d", (int)e);
                    rank_finish();
                }
                for (int q = 1; q < n; q++) {
                    full_write(idpipe[q][1], &id, sizeof id);
                    close(idpipe[q][1]);
                }
            } else if (!full_read(idpipe[r][0], &id, sizeof id)) {
                _exit(0);   /* rank 0 did not get that far: it reports why */
            }
            body(r, n, id, arg);
            rank_finish();
        }
    }
    for (int r = 0; r < n; r++) {
        close(res[r][1]);
        close(idpipe[r][0]);
        close(idpipe[r][1]);
    }
    double t0 = now_ms();
    int status[MAXR], left = n;
    for (int r = 0; r < n; r++) status[r] = -1;
    while (left > 0) {
        for (int r = 0; r < n; r++) {
            if (status[r] != -1) continue;
            int s;
            if (waitpid(pids[r], &s, WNOHANG) == pids[r]) {
                status[r] = s;
                left--;
            }
        }
        if (left == 0) break;
        if (now_ms() - t0 > timeout_s * 1000.0) {
            for (int r = 0; r < n; r++)
                if (status[r] == -1) kill(pids[r], SIGKILL);
            for (int r = 0; r < n; r++)
                if (status[r] == -1) waitpid(pids[r], &status[r], 0);
            ST_CHECKF(0, "ranks still running after %d s: killed (a hang)", timeout_s);
            for (int r = 0; r < n; r++) close(res[r][0]);
            return;
        }
        sleep_ms(10);
    }
    for (int r = 0; r < n; r++) {
        char msg[512] = {0};
        ssize_t k = read(res[r][0], msg, sizeof msg - 1);
        close(res[r][0]);
        if (k < 0) k = 0;
        msg[k] = 0;
        if (WIFSIGNALED(status[r]))
            ST_CHECKF(0, "rank %d of %d died of signal %d", r, n, WTERMSIG(status[r]));
        else if (WEXITSTATUS(status[r]) != 0)
            ST_CHECKF(0, "rank %d of %d: %s", r, n, msg[0] ? msg : "failed");
    }
}

#define NCHECK(call) do { ncclResult_t nc_ = (call); \
    ST_CHECKF(nc_ == ncclSuccess, "%s: %s (%s)", #call, ncclGetErrorString(nc_), ncclGetLastError(NULL)); } while (0)
#define CCHECK(call) do { cudaError_t ce_ = (call); ST_CHECKF(ce_ == cudaSuccess, "%s: %s", #call, cudaGetErrorName(ce_)); } while (0)

#endif
