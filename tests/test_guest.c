/* test_guest.c - a context is a guest in its host's process (issue 35).
   With the default gpudl_ctx_desc, creating a context, running ops on it
   and destroying it leaves the process as it found it: the CPU affinity of
   the calling thread, of OpenMP's team and of a thread the program starts
   after the context exists; the signal dispositions; the locale; the FP
   environment (rounding, and MXCSR's flush-to-zero and denormals-are-zero
   on x86). Built as the README's CPU line, with -fopenmp (make test) and
   without. Before issue 35 the first context of an OpenMP build pinned the
   calling thread to one core, and every thread it started later. */
#if !defined(_GNU_SOURCE)
#  define _GNU_SOURCE   /* sched_getaffinity */
#endif
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"
#include <fenv.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#  include <xmmintrin.h>
#  define GUEST_MXCSR() (_mm_getcsr() & ~0x3Fu)   /* the control bits: the exception flags are sticky results */
#else
#  define GUEST_MXCSR() 0u
#endif
#ifdef _OPENMP
#  include <omp.h>
#endif

static int passed, failed;
static void result(const char *name, int ok, const char *detail) {
    printf("%s %-34s %s\n", ok ? "ok     " : "FAIL   ", name, detail);
    if (ok) passed++; else failed++;
}

typedef struct guest_state {
    cpu_set_t aff;                 /* the calling thread's */
    struct sigaction sa[NSIG];
    char locale[512];
    int round;
    unsigned mxcsr;
} guest_state;

static void take(guest_state *s) {
    int i;
    memset(s, 0, sizeof *s);
    sched_getaffinity(0, sizeof s->aff, &s->aff);
    for (i = 1; i < NSIG; i++) sigaction(i, NULL, &s->sa[i]);
    snprintf(s->locale, sizeof s->locale, "%s", setlocale(LC_ALL, NULL));
    s->round = fegetround();
    s->mxcsr = GUEST_MXCSR();
}

/* What differs, in words ("" when nothing). */
static const char *diff(const guest_state *a, const guest_state *b, char *buf, size_t size) {
    int i;
    buf[0] = 0;
    if (!CPU_EQUAL(&a->aff, &b->aff))
        snprintf(buf, size, "the calling thread's affinity: %d cpus -> %d", CPU_COUNT(&a->aff), CPU_COUNT(&b->aff));
    else if (strcmp(a->locale, b->locale)) snprintf(buf, size, "the locale: %.100s -> %.100s", a->locale, b->locale);
    else if (a->round != b->round) snprintf(buf, size, "the rounding mode: %d -> %d", a->round, b->round);
    else if (a->mxcsr != b->mxcsr) snprintf(buf, size, "MXCSR: %#x -> %#x", a->mxcsr, b->mxcsr);
    else
        for (i = 1; i < NSIG && !buf[0]; i++)
            if (a->sa[i].sa_handler != b->sa[i].sa_handler || a->sa[i].sa_flags != b->sa[i].sa_flags)
                snprintf(buf, size, "signal %d's disposition", i);
    return buf;
}

static void *thread_affinity(void *arg) {
    sched_getaffinity(0, sizeof(cpu_set_t), (cpu_set_t *)arg);
    return NULL;
}

static void host_handler(int sig) { (void)sig; }

int main(void) {
    guest_state before, after;
    gpudl_ctx_desc d;
    gpudl_ctx *ctx = NULL;
    gpudl_tensor a, b, c;
    int64_t sa[2] = {256, 256};
    char why[256], detail[300];
    cpu_set_t later;
    pthread_t th;
    int ops_ok;
    signal(SIGUSR1, host_handler);   /* the host's own: must stay */
    setlocale(LC_NUMERIC, "C");
    take(&before);

    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = gpudl_log_quiet;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) { printf("FAIL    guest_ctx_create\n0 passed, 1 failed, 0 skipped\n"); return 1; }
    take(&after);
    diff(&before, &after, why, sizeof why);
    snprintf(detail, sizeof detail, "%s", why[0] ? why : "unchanged (affinity, signals, locale, FP environment)");
    result("guest_ctx_create", !why[0], detail);

    ops_ok = gpudl_tensor_create(ctx, &a, GPUDL_F32, 2, sa) == GPUDL_OK && gpudl_tensor_create(ctx, &b, GPUDL_F32, 2, sa) == GPUDL_OK &&
             gpudl_tensor_create(ctx, &c, GPUDL_F32, 2, sa) == GPUDL_OK && gpudl_tensor_uniform(ctx, &a, -1, 1) == GPUDL_OK &&
             gpudl_tensor_uniform(ctx, &b, -1, 1) == GPUDL_OK;
    ops_ok = ops_ok && gpudl_matmul(ctx, &c, &a, &b, 0, 0, 1.0f, 0.0f) == GPUDL_OK &&   /* OpenMP's team at work */
             gpudl_act_forward(ctx, GPUDL_ACT_GELU, 0.0f, &c, &c) == GPUDL_OK && gpudl_ctx_sync(ctx) == GPUDL_OK;
    take(&after);
    diff(&before, &after, why, sizeof why);
    snprintf(detail, sizeof detail, "%s", !ops_ok ? "an op failed" : why[0] ? why : "unchanged after a matmul and a GELU");
    result("guest_ops", ops_ok && !why[0], detail);

    CPU_ZERO(&later);   /* a thread the program starts now */
    if (pthread_create(&th, NULL, thread_affinity, &later) == 0) {
        pthread_join(th, NULL);
        snprintf(detail, sizeof detail, "a thread started after the context: %d cpus (the process: %d)", CPU_COUNT(&later),
                 CPU_COUNT(&before.aff));
        result("guest_later_thread", CPU_EQUAL(&later, &before.aff), detail);
    }
#ifdef _OPENMP
    {   /* the program's own OpenMP team, after gpudl's: every thread may use every core it had */
        int bound = 0, n = 0;
#pragma omp parallel reduction(+:bound, n)
        {
            cpu_set_t m;
            CPU_ZERO(&m);
            sched_getaffinity(0, sizeof m, &m);
            bound += !CPU_EQUAL(&m, &before.aff);
            n++;
        }
        snprintf(detail, sizeof detail, "%d of the program's %d OpenMP threads kept the process's %d cpus", n - bound, n,
                 CPU_COUNT(&before.aff));
        result("guest_openmp_team", bound == 0, detail);
    }
#endif
    gpudl_tensor_free(ctx, &a); gpudl_tensor_free(ctx, &b); gpudl_tensor_free(ctx, &c);
    gpudl_ctx_destroy(ctx);
    take(&after);
    diff(&before, &after, why, sizeof why);
    snprintf(detail, sizeof detail, "%s", why[0] ? why : "unchanged after gpudl_ctx_destroy");
    result("guest_ctx_destroy", !why[0], detail);
    printf("%d passed, %d failed, 0 skipped\n", passed, failed);
    return failed != 0;
}
