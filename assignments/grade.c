/* grade.c - the autograder for the gpudl assignments (assignments/README.md).

   One file, two programs:
   - the grader (this file built with a plain C compiler, no student code):
       cc -O2 -o grade grade.c -lm
       ./grade sgemm my_sgemm.cu                      one submission: its table and score
       ./grade sgemm submissions/ --out grades.csv    a class: a CSV row and a feedback file each
     It builds, per submission, in a fresh folder holding only gpudl.h and
     the student's file, checks what the object calls and includes, links
     it with the runner (below) and runs the runner in child processes
     under a sandbox; it never runs a line of student code itself.
   - the runner (this file built with -DGRADE_RUNNER, linked with the
     student's file, which defines student_ops(gpudl_ops *)): in a child it
     only computes: it receives a call's inputs on fd 4, runs the student's
     function on them (on the GPU, the emulated one, or the CPU) and sends
     the raw outputs back on fd 3; or it trains a small network with the
     student's functions (no points).
   The grader itself runs gpudl_check_op (gpudl.h, section >>override) on
   the CPU with proxies installed as the ops: each call goes to the child,
   and the inputs (a seed drawn per grading run), the float64 references,
   the tolerances, the comparison and the score stay in the grader, in a
   process that never runs student code. A crash, a timeout or a CUDA fault
   costs the group of the case it happened in, and the grading goes on with
   the next group in a fresh child (and a fresh device). */

#if defined(GRADE_RUNNER)
#  define GPUDL_IMPLEMENTATION
#else   /* the grader: gpudl's CPU implementation for the references and the comparison, no CUDA */
#  if !defined(_GNU_SOURCE)
#    define _GNU_SOURCE   /* O_PATH, strsignal, wait4 */
#  endif
#  define GPUDL_IMPLEMENTATION
#  define GPUDL_NO_CUDA
#endif
#include "gpudl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void student_ops(gpudl_ops *ops);   /* in the student's file */

/* ---- what each assignment checks, and for how many points ---------------- */
/* A group of cases of one op: its points and the hint a student sees when
   it fails. A group the report has and this table lacks is worth 1 point
   (gpudl's battery grew); a group the table has and the report lacks fails
   (gpudl's battery changed: update the table). */
typedef struct grade_rule {
    const char *group;
    int points;
    const char *hint;
} grade_rule;

#define GRADE_MAX_RULES 8
typedef struct grade_check {
    gpudl_op op;
    gpudl_act act;            /* the activation ops: which one */
    const char *name;         /* "relu forward" */
    const char *field;        /* the gpudl_ops field: "act_forward" */
    grade_rule rules[GRADE_MAX_RULES];
} grade_check;

typedef enum grade_train { GRADE_TRAIN_MLP = 1, GRADE_TRAIN_CNN, GRADE_TRAIN_ATTENTION, GRADE_TRAIN_MLP_FP16 } grade_train;

#define GRADE_MAX_CHECKS 4
typedef struct grade_assignment {
    const char *name;
    gpudl_device device;
    grade_train train;
    const char *expect;       /* what a correct solution reaches in the training run */
    grade_check checks[GRADE_MAX_CHECKS];
} grade_assignment;

#define ELEMENTWISE_HINTS \
    {"odd sizes", 1, "n is not a multiple of the block size: guard with i < n in a grid-stride loop"}, \
    {"large", 1, "cover all of n: loop i += gridDim.x * blockDim.x, with an int64_t index"}

static const grade_assignment grade_assignments[] = {
    {"relu_xent", GPUDL_DEVICE_CUDA, GRADE_TRAIN_MLP, "a correct solution reaches about 75%",
     {{GPUDL_OP_ACT_FORWARD, GPUDL_ACT_RELU, "relu forward", "act_forward",
       {{"basic", 1, "y[i] = x[i] > 0 ? x[i] : 0 for every i < n, one thread per element"},
        ELEMENTWISE_HINTS,
        {"values", 1, "negatives give 0; zeros, subnormals and huge values pass unchanged (no scaling, no flushing)"},
        {"nan/inf", 1, "ReLU(NaN) is NaN: x > 0 ? x : 0 and fmaxf(x, 0) both give 0 for a NaN; use x > 0 || x != x"}}},
      {GPUDL_OP_ACT_BACKWARD, GPUDL_ACT_RELU, "relu backward", "act_backward",
       {{"basic", 1, "dx[i] = dy[i] where x[i] > 0, else 0: the input x decides, not dy"},
        ELEMENTWISE_HINTS,
        {"values", 1, "at x == 0 (and -0) the gradient is 0; large and tiny dy pass through unchanged"},
        {"nan/inf", 1, "dx = x <= 0 ? 0 : dy, as PyTorch: NaN <= 0 is false, so at a NaN x dy passes (x > 0 ? dy : 0 gives 0)"},
        {"finite diff", 1, "dx must be dy times the slope of your forward, (f(x + h) - f(x - h)) / 2h"}}},
      {GPUDL_OP_XENT_FORWARD, 0, "softmax-xent forward", "softmax_xent_forward",
       {{"basic", 2, "per row: probs = exp(l - max) / sum exp(l - max); loss[0] = mean over rows of -log probs[label]"},
        {"odd sizes", 1, "K is not a multiple of the block: each thread loops j = threadIdx.x, += BLOCK, and every "
                         "thread still reaches every __syncthreads"},
        {"large", 1, "many or wide rows: one block per row, offsets r * K in int64_t, the mean over all N rows"},
        {"values", 1, "the loss of a row is log(sum) + max - l[label], not -log(prob): a prob that underflows to 0 gives Inf"},
        {"nan/inf", 1, "a NaN logit makes its row's probs and loss NaN; a -Inf logit gets probability 0"},
        {"large logits", 2, "subtract the row max before exp: exp(1000) is Inf in float, and Inf / Inf is NaN"}}},
      {GPUDL_OP_XENT_BACKWARD, 0, "softmax-xent backward", "softmax_xent_backward",
       {{"basic", 2, "dlogits = scale * (probs - onehot(label)) / N: subtract 1 only in the label's column"},
        ELEMENTWISE_HINTS,
        {"values", 1, "divide by N (the loss is a mean) and multiply by scale"},
        {"finite diff", 1, "dlogits must be the slope of the forward's loss: probs - onehot, over N, times scale"}}}}},
    {"sgemm", GPUDL_DEVICE_CUDA, GRADE_TRAIN_MLP, "a correct solution reaches about 75%",
     {{GPUDL_OP_GEMM, 0, "gemm", "gemm",
       {{"basic", 2, "C[i,j] = alpha * sum_k op(A)[i,k] * op(B)[k,j] + beta * C[i,j]; thread (ty,tx) owns one C element"},
        {"odd sizes", 3, "M, N, K not multiples of TILE: load out-of-range elements as 0, write only inside C, and do "
                         "(K + TILE - 1) / TILE tiles, the last one partial"},
        {"large", 2, "many tiles along K: __syncthreads() after the loads AND after the multiply loop, before the next "
                     "loads overwrite the tiles"},
        {"values", 1, "zeros, negatives, huge and subnormal values: a plain float multiply-add, no shortcuts"},
        {"nan/inf", 1, "a NaN or Inf in A or B must reach C: do not skip zeros (0 * Inf is NaN)"},
        {"transposes", 3, "trans_a: op(A)[i,k] = A[k*M + i]; trans_b: op(B)[k,j] = B[j*K + k]"},
        {"alpha/beta", 2, "beta == 0: write alpha * acc without reading C (it holds NaN); else alpha * acc + beta * C"}}}}},
    {"maxpool", GPUDL_DEVICE_CPU, GRADE_TRAIN_CNN, "a correct solution reaches about 75%",
     {{GPUDL_OP_MAXPOOL_FORWARD, 0, "maxpool forward", "maxpool_forward",
       {{"basic", 2, "y = the maximum of each k_h x k_w window, its top-left at (oh*stride_h - pad_h, ow*stride_w - pad_w)"},
        {"odd sizes", 1, "H, W not multiples of the stride, windows over the padding: skip cells outside the plane"},
        {"large", 1, "many planes: plane p is x + p*H*W and y + p*Ho*Wo (int64_t)"},
        {"values", 1, "windows of negatives or -Inf: start from the window's first real cell, not from 0 or -FLT_MAX"},
        {"nan/inf", 1, "NaN wins: v > best is false for a NaN, so take the first NaN explicitly (v != v)"}}},
      {GPUDL_OP_MAXPOOL_BACKWARD, 0, "maxpool backward", "maxpool_backward",
       {{"basic", 2, "dx = 0 everywhere, then dx[argmax of each window] += dy[window]"},
        {"odd sizes", 1, "H, W not multiples of the stride, padding: the argmax is a real cell, never a padded one"},
        {"large", 1, "many planes: zero all NC*H*W of dx, plane p of dy is dy + p*Ho*Wo"},
        {"values", 1, "ties: the FIRST maximum in row-major window order gets the gradient, the same cell as forward"},
        {"nan/inf", 1, "a NaN is its window's maximum: its cell gets the gradient"},
        {"overlap", 2, "stride < kernel: a cell can be the max of several windows: add (+=) their gradients, do not "
                       "overwrite (=)"},
        {"finite diff", 1, "dx must be the slope of the forward's output sum: each window's dy on its maximum, summed"}}}}},
    {"attention", GPUDL_DEVICE_CUDA, GRADE_TRAIN_ATTENTION, "a correct solution reaches about 100%",
     {{GPUDL_OP_ATTN_SOFTMAX_FORWARD, 0, "attention forward", "attn_softmax_forward",
       {{"basic", 2, "row t of matrix l: att[j] = exp(s[j] - max) / sum_{k<=t} exp(s[k] - max) for j <= t, 0 for j > t"},
        {"causal mask", 2, "take the max and the sum over j <= t only (never read j > t: NaN or 1e4 there), and write "
                           "exactly 0.0f above the diagonal"},
        {"odd sizes", 1, "T = 1, 7, 33, 65 and L odd: one warp per row, r = blockIdx.x * WARPS + warp, return if r >= L*T"},
        {"large scores", 2, "subtract the row's max before expf: expf(1e4) is Inf and expf(-1e4) is 0, Inf/Inf and 0/0 NaN"},
        {"long rows", 2, "T = 1100 and 2049: loop j = lane; j <= t; j += 32 over the row in global memory, no fixed-size "
                         "array or shared buffer of one row"},
        {"odd head sizes", 1, "the whole attention calls you with L = B*NH: row r = l*T + t starts at r*T (int64_t)"}}},
      {GPUDL_OP_ATTN_SOFTMAX_BACKWARD, 0, "attention backward", "attn_softmax_backward",
       {{"basic", 2, "ds[j] = att[j] * (dp[j] - dot), dot = sum_{k<=t} att[k] * dp[k], the diagonal k = t included"},
        {"causal mask", 2, "dp above the diagonal holds NaN/Inf: sum over k <= t only and write exactly 0.0f for j > t "
                           "(0 * NaN is NaN)"},
        {"odd sizes", 1, "T = 1, 7, 33, 65 and L odd: every row r < L*T, every column j < T written"},
        {"large scores", 1, "nearly one-hot rows: the same formula, accumulated in float"},
        {"long rows", 2, "T = 1100 and 2049: the warp loops over the row; the dot is a warp reduction (__shfl_xor_sync)"},
        {"finite diff", 2, "your ds must be the slope of your forward: (f(s + h) - f(s - h)) / 2h of sum_j dp[j] att[j]"},
        {"odd head sizes", 1, "the whole attention calls you with L = B*NH: row r = l*T + t starts at r*T (int64_t)"}}}}},
    {"tensor_core", GPUDL_DEVICE_CUDA, GRADE_TRAIN_MLP_FP16, "gpudl's own FP16 path reaches about 78%",
     {{GPUDL_OP_GEMM_F16, 0, "gemm f16", "gemm_f16",
       {{"basic", 2, "one warp per 16x16 tile of C: load_matrix_sync the A and B tiles, mma_sync, store_matrix_sync; "
                     "matrix_a is row-major op(A), matrix_b row-major op(B), ldm the row length of the tile you load from"},
        {"odd sizes", 3, "M, N, K not multiples of 16: stage each tile through shared memory with zeros outside the "
                         "matrix, loop over ALL (K + 15) / 16 tiles of K, and write only the elements inside C"},
        {"transposes", 2, "trans_a: op(A)[i,k] = A[k*M + i]; trans_b: op(B)[k,j] = B[j*K + k]: transpose while "
                          "staging into shared memory (or load the fragment col_major with the right ldm)"},
        {"alpha/beta", 2, "store the accumulator to a shared float tile, then C = alpha * acc + beta * C per element; "
                          "never index acc.x[i] by an assumed position (the fragment layout is unspecified)"},
        {"values", 2, "products near 65504 sum past FP16's largest: the accumulator fragment must be float"},
        {"nan/inf", 1, "a NaN or Inf in A or B must reach C: no shortcuts around zeros"},
        {"accumulation", 2, "K = 2048 and 4096: sum in FP32 (accumulator fragment of float); an FP16 sum past 2048 "
                            "moves in steps of 2 and stalls"},
        {"large", 1, "256^3, and 300x257x200 with B^T: many K tiles shared by several warps: __syncthreads() after "
                     "staging AND after the mma, before the next tile overwrites shared memory (and the B^T and K-tail "
                     "rules above)"}}}}},
};
#define GRADE_NASSIGN ((int)(sizeof grade_assignments / sizeof grade_assignments[0]))

static int grade_nchecks(const grade_assignment *a) {
    int n = 0;
    while (n < GRADE_MAX_CHECKS && a->checks[n].name) n++;
    return n;
}

static int grade_nrules(const grade_check *c) {
    int n = 0;
    while (n < GRADE_MAX_RULES && c->rules[n].group) n++;
    return n;
}



/* ---- the channel: the grader asks, a runner child computes ---------------- */
/* The process that runs a student's code only computes. For each call of
   the student's function that gpudl's check makes, the grader (which runs
   gpudl_check_op itself, on the CPU, with proxies installed as the ops)
   sends the call's sizes and scalars and its input buffers on fd 4
   (GRADE_FD_CALL); the runner child copies them to the device, calls the
   student's function, and sends back the output buffers, raw, on fd 3
   (GRADE_FD_BACK). The inputs come from a seed the grader draws for each
   grading run; the references, the tolerances, the comparison and the
   score never leave the grader. Nothing in the child is a secret: a child
   that lies on the channel lies about its own outputs, which is all it
   could do by computing them wrong. */
#define GRADE_MAGIC 0x67726432   /* "grd2" */
#define GRADE_FD_BACK 3
#define GRADE_FD_CALL 4
#define GRADE_NBUF 6
#define GRADE_NOPS 16
enum { GRADE_BUF_NONE = 0, GRADE_BUF_IN, GRADE_BUF_OUT };   /* OUT: sent (it may be read: beta != 0) and returned */
enum { GRADE_BACK_PROBE = 1, GRADE_BACK_CALL };
#define GRADE_GUARD_SECCOMP 1
/* One call: the op, its scalars and sizes, and its pointer arguments in the
   order of gpudl_ops' signature (grade_call_layout); the buffers' bytes
   follow, IN and OUT ones, in that order. */
typedef struct grade_call {
    int32_t magic, op, act, trans_a, trans_b, nbuf;
    float   alpha, beta, scale, pad;
    int64_t M, N, K;                 /* gemm: M N K; act: n = M; xent: N = M, K; attention: L = M, T = N */
    gpudl_pool_shape pool;
    int64_t bytes[GRADE_NBUF];
    int32_t role[GRADE_NBUF];        /* GRADE_BUF_*: NONE is a NULL pointer */
    int32_t same[GRADE_NBUF];        /* -1, or an earlier buffer that is the same pointer (in-place) */
} grade_call;
/* What comes back: the probe (the gpudl_ops fields student_ops set), or a
   call's status, then its OUT buffers' bytes (none after a fault: the
   child then ends). */
typedef struct grade_back {
    int32_t magic, kind, status, fault;
    int64_t fields, guards;
    char    text[256];               /* a fault: the CUDA error's name */
} grade_back;


#if defined(GRADE_RUNNER)
/* ======================================================================== */
/* The runner: linked with the student's file, run only in the grader's     */
/* sandboxed children (--child ...).                                        */
/* ======================================================================== */
#include <unistd.h>
#if defined(__linux__)
#  include <sys/mman.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#  include <stddef.h>
#  include <linux/audit.h>
#  include <linux/filter.h>
#  include <linux/seccomp.h>
#  include <sys/prctl.h>
#  include <sys/syscall.h>
#  include <sched.h>
#  include <errno.h>
#  define GRADE_SECCOMP 1
/* System calls made directly, not through libc: a student's object that
   defined write() or prctl() would otherwise see (or stop) them. */
static long grade_raw(long n, long a, long b, long c, long d, long e) {
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
    return r;
}
#endif

/* The seccomp filter, installed before any constructor of the student's
   file runs (.preinit_array comes first, and the grader refuses an object
   with its own .preinit_array or GNU ifuncs): no new programs (execve),
   no processes (fork, clone without CLONE_THREAD: threads stay allowed,
   OpenMP and the emulator need them), no tracing or writing other
   processes' memory, no io_uring (it bypasses seccomp), no namespaces,
   signals only to this process, no raising of resource limits. A call
   the filter kills for ends the child with SIGSYS, which the grader
   reports as "refused". */
static int grade_seccomp(void) {
#if defined(GRADE_SECCOMP)
    static const int kill_nrs[] = {
        SYS_execve, SYS_execveat, SYS_fork, SYS_vfork, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
        SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_unshare, SYS_setns, SYS_mount, SYS_umount2,
        SYS_pivot_root, SYS_chroot, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd, SYS_kexec_load, SYS_init_module,
        SYS_finit_module, SYS_delete_module, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_open_by_handle_at,
        SYS_name_to_handle_at, SYS_setrlimit, SYS_personality, SYS_seccomp,
        SYS_setpgid, SYS_setsid};   /* leaving the process group would leave the grader's SIGKILL to the group */
    /* signals and file descriptors of other processes by other ways than
       kill (Landlock scopes signals only from ABI 6, Linux 6.12): EPERM */
    static const int eperm_nrs[] = {SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo
#if defined(SYS_pidfd_open)
        , SYS_pidfd_open
#endif
#if defined(SYS_pidfd_send_signal)
        , SYS_pidfd_send_signal
#endif
#if defined(SYS_pidfd_getfd)
        , SYS_pidfd_getfd
#endif
#if defined(SYS_kcmp)
        , SYS_kcmp
#endif
    };
    struct sock_filter f[160];
    struct sock_fprog prog;
    unsigned n = 0, i, pid = (unsigned)grade_raw(SYS_getpid, 0, 0, 0, 0, 0);
#define GRADE_BPF(c, kk, t, e) do { f[n].code = (unsigned short)(c); f[n].jt = (unsigned char)(t); \
                                    f[n].jf = (unsigned char)(e); f[n].k = (unsigned)(kk); n++; } while (0)
#define GRADE_ARG(i, hi) (unsigned)(offsetof(struct seccomp_data, args) + 8 * (i) + 4 * (hi))
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);   /* the x32 ABI */
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
    for (i = 0; i < sizeof kill_nrs / sizeof kill_nrs[0]; i++) {
        GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, kill_nrs[i], 0, 1);
        GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
    }
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 1);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES, 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_tkill, 0, 1);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM, 0, 0);
    for (i = 0; i < sizeof eperm_nrs / sizeof eperm_nrs[0]; i++) {
        GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, eperm_nrs[i], 0, 1);
        GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM, 0, 0);
    }
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);   /* glibc falls back to clone, which the filter can read */
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS, 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, GRADE_ARG(0, 0), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JSET | BPF_K, 0x00010000u /* CLONE_THREAD */, 0, 1);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 0, 6);     /* kill: this process or its group only */
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, GRADE_ARG(0, 0), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, pid, 3, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, 0u - pid, 1, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM, 0, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 0, 4);   /* tgkill (raise, abort, pthread_kill): this process */
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, GRADE_ARG(0, 0), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, pid, 1, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM, 0, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 6);   /* reading a limit: yes; setting one: no */
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, GRADE_ARG(2, 0), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3);
    GRADE_BPF(BPF_LD | BPF_W | BPF_ABS, GRADE_ARG(2, 1), 0, 0);
    GRADE_BPF(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM, 0, 0);
    GRADE_BPF(BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
#undef GRADE_BPF
#undef GRADE_ARG
    prog.len = (unsigned short)n;
    prog.filter = f;
    if (grade_raw(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 0;
    return grade_raw(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&prog, 0, 0) == 0;
#else
    return 0;
#endif
}

static int grade_guards;   /* GRADE_GUARD_* in place */

static int grade_streq(const char *a, const char *b) {   /* no libc: a student's strcmp must not decide */
    while (*a && *a == *b) { a++; b++; }
    return *a == *b;
}

static void grade_preinit(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc > 1 && grade_streq(argv[1], "--child") && grade_seccomp()) grade_guards |= GRADE_GUARD_SECCOMP;
}
#if defined(__linux__)
__attribute__((section(".preinit_array"), used)) static void (*const grade_preinit_entry)(int, char **, char **) = grade_preinit;
#endif

/* The channel, with raw system calls: a student's object that defined
   write() or read() would otherwise see (or stop) them. */
static int grade_put(const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n > 0) {
#if defined(GRADE_SECCOMP)
        long w = grade_raw(SYS_write, GRADE_FD_BACK, (long)c, (long)n, 0, 0);
        if (w == -EINTR) continue;
#else
        long w = (long)write(GRADE_FD_BACK, c, n);
#endif
        if (w <= 0) return 0;
        c += w; n -= (size_t)w;
    }
    return 1;
}
static int grade_get(void *p, size_t n) {
    char *c = (char *)p;
    while (n > 0) {
#if defined(GRADE_SECCOMP)
        long r = grade_raw(SYS_read, GRADE_FD_CALL, (long)c, (long)n, 0, 0);
        if (r == -EINTR) continue;
#else
        long r = (long)read(GRADE_FD_CALL, c, n);
#endif
        if (r <= 0) return 0;
        c += r; n -= (size_t)r;
    }
    return 1;
}

static void grade_leave(int code) {
    fflush(stdout); fflush(stderr);
#if defined(GRADE_SECCOMP)
    grade_raw(SYS_exit_group, code, 0, 0, 0, 0);
#endif
    _exit(code);
}

void student_ops(gpudl_ops *ops);   /* in the student's file */

/* ---- the student's functions ------------------------------------------------ */
/* What student_ops set, and, for the training run, counting wrappers: the
   run says how often each of the student's functions ran. */
static gpudl_ops grade_student;
static int64_t grade_calls[GRADE_NOPS];

#define GRADE_COUNT_CALL(op, field, ...) (grade_calls[op]++, grade_student.field(grade_student.user, __VA_ARGS__))
static gpudl_status spy_gemm(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                             float alpha, const float *A, const float *B, float beta, float *C) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_GEMM, gemm, stream, trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
}
static gpudl_status spy_act_forward(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_ACT_FORWARD, act_forward, stream, act, alpha, y, x, n);
}
static gpudl_status spy_act_backward(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                     const float *x, const float *y, int64_t n) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_ACT_BACKWARD, act_backward, stream, act, alpha, dx, dy, x, y, n);
}
static gpudl_status spy_xent_forward(void *user, void *stream, float *loss, float *probs, const float *logits,
                                     const int32_t *labels, int64_t N, int64_t K) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_XENT_FORWARD, softmax_xent_forward, stream, loss, probs, logits, labels, N, K);
}
static gpudl_status spy_xent_backward(void *user, void *stream, float *dlogits, const float *probs, const int32_t *labels,
                                      int64_t N, int64_t K, float scale) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_XENT_BACKWARD, softmax_xent_backward, stream, dlogits, probs, labels, N, K, scale);
}
static gpudl_status spy_maxpool_forward(void *user, void *stream, float *y, const float *x, const gpudl_pool_shape *s) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_MAXPOOL_FORWARD, maxpool_forward, stream, y, x, s);
}
static gpudl_status spy_maxpool_backward(void *user, void *stream, float *dx, const float *dy, const float *x,
                                         const gpudl_pool_shape *s) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_MAXPOOL_BACKWARD, maxpool_backward, stream, dx, dy, x, s);
}
static gpudl_status spy_attn_forward(void *user, void *stream, float *att, const float *scores, int64_t L, int64_t T) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_ATTN_SOFTMAX_FORWARD, attn_softmax_forward, stream, att, scores, L, T);
}
static gpudl_status spy_attn_backward(void *user, void *stream, float *ds, const float *dp, const float *att, int64_t L,
                                      int64_t T) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_ATTN_SOFTMAX_BACKWARD, attn_softmax_backward, stream, ds, dp, att, L, T);
}
static gpudl_status spy_gemm_f16(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                                 float alpha, const uint16_t *A, const uint16_t *B, float beta, float *C) {
    (void)user;
    return GRADE_COUNT_CALL(GPUDL_OP_GEMM_F16, gemm_f16, stream, trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
}
#undef GRADE_COUNT_CALL

/* The ops to install for the training run: a wrapper for each op the
   student set; the fields no assignment grades go in as they are. */
static gpudl_ops spy_ops(void) {
    gpudl_ops o = grade_student;
    if (o.gemm) o.gemm = spy_gemm;
    if (o.act_forward) o.act_forward = spy_act_forward;
    if (o.act_backward) o.act_backward = spy_act_backward;
    if (o.softmax_xent_forward) o.softmax_xent_forward = spy_xent_forward;
    if (o.softmax_xent_backward) o.softmax_xent_backward = spy_xent_backward;
    if (o.maxpool_forward) o.maxpool_forward = spy_maxpool_forward;
    if (o.maxpool_backward) o.maxpool_backward = spy_maxpool_backward;
    if (o.attn_softmax_forward) o.attn_softmax_forward = spy_attn_forward;
    if (o.attn_softmax_backward) o.attn_softmax_backward = spy_attn_backward;
    if (o.gemm_f16) o.gemm_f16 = spy_gemm_f16;
    return o;
}

/* The gpudl_ops fields the student set, one bit per gpudl_op. */
static int64_t spy_fields(void) {
    const gpudl_ops *o = &grade_student;
    return (int64_t)(!!o->gemm << GPUDL_OP_GEMM | !!o->act_forward << GPUDL_OP_ACT_FORWARD |
                     !!o->act_backward << GPUDL_OP_ACT_BACKWARD | !!o->softmax_xent_forward << GPUDL_OP_XENT_FORWARD |
                     !!o->softmax_xent_backward << GPUDL_OP_XENT_BACKWARD | !!o->maxpool_forward << GPUDL_OP_MAXPOOL_FORWARD |
                     !!o->maxpool_backward << GPUDL_OP_MAXPOOL_BACKWARD |
                     !!o->attn_softmax_forward << GPUDL_OP_ATTN_SOFTMAX_FORWARD |
                     !!o->attn_softmax_backward << GPUDL_OP_ATTN_SOFTMAX_BACKWARD | !!o->gemm_f16 << GPUDL_OP_GEMM_F16);
}

static gpudl_status grade_ctx(gpudl_device device, gpudl_ctx **ctx) {
    gpudl_ctx_desc d;
    gpudl_ops o;
    gpudl_status s;
    memset(&d, 0, sizeof d);
    d.device = device;
    d.log = gpudl_log_quiet;   /* failures are reported in the table */
    d.seed = 1;
    if ((s = gpudl_ctx_create(&d, ctx)) != GPUDL_OK) return s;
    o = spy_ops();
    if ((s = gpudl_ctx_set_ops(*ctx, device, &o)) != GPUDL_OK) { gpudl_ctx_destroy(*ctx); *ctx = NULL; }
    return s;
}

/* ---- serving the grader's calls -------------------------------------------- */
/* A buffer of the call where the student's function gets it: device memory
   of exactly its size (cudaMalloc; on the emulated device the grader asks
   for exact bounds, so a read one element past the end faults), or, for a
   CPU assignment, host memory that ends at an inaccessible page (the first
   byte past the end faults). */
static void *grade_buf_alloc(size_t bytes, int cuda, void **base, size_t *mapped) {
    *base = NULL; *mapped = 0;
#if !defined(GPUDL_NO_CUDA)
    if (cuda) {
        void *d = NULL;
        if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) { (void)cudaGetLastError(); return NULL; }
        *base = d;
        return d;
    }
#else
    (void)cuda;
#endif
#if defined(__linux__)
    {
        size_t page = 4096, body = (bytes + page - 1) / page * page;
        char *m = (char *)mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == (char *)MAP_FAILED) return NULL;
        if (mprotect(m + body, page, PROT_NONE) != 0) { munmap(m, body + page); return NULL; }
        *base = m; *mapped = body + page;
        return m + body - bytes;
    }
#else
    *base = malloc(bytes ? bytes : 4);
    return *base;
#endif
}
static void grade_buf_free(void *base, size_t mapped, int cuda) {
    if (!base) return;
#if !defined(GPUDL_NO_CUDA)
    if (cuda) { cudaFree(base); return; }
#endif
#if defined(__linux__)
    (void)cuda;
    munmap(base, mapped);
#else
    (void)cuda; (void)mapped;
    free(base);
#endif
}

/* The student's function for the call, on the buffers d (in gpudl_ops' order). */
static gpudl_status grade_dispatch(const grade_call *q, void **d, void *stream) {
    const gpudl_ops *o = &grade_student;
    switch (q->op) {
    case GPUDL_OP_GEMM:
        return o->gemm ? o->gemm(o->user, stream, q->trans_a, q->trans_b, q->M, q->N, q->K, q->alpha, (const float *)d[0],
                                 (const float *)d[1], q->beta, (float *)d[2]) : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_ACT_FORWARD:
        return o->act_forward ? o->act_forward(o->user, stream, (gpudl_act)q->act, q->alpha, (float *)d[0], (const float *)d[1],
                                               q->M) : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_ACT_BACKWARD:
        return o->act_backward ? o->act_backward(o->user, stream, (gpudl_act)q->act, q->alpha, (float *)d[0], (const float *)d[1],
                                                 (const float *)d[2], (const float *)d[3], q->M) : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_XENT_FORWARD:
        return o->softmax_xent_forward ? o->softmax_xent_forward(o->user, stream, (float *)d[0], (float *)d[1], (const float *)d[2],
                                                                 (const int32_t *)d[3], q->M, q->K) : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_XENT_BACKWARD:
        return o->softmax_xent_backward ? o->softmax_xent_backward(o->user, stream, (float *)d[0], (const float *)d[1],
                                                                   (const int32_t *)d[2], q->M, q->K, q->scale)
                                        : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_MAXPOOL_FORWARD:
        return o->maxpool_forward ? o->maxpool_forward(o->user, stream, (float *)d[0], (const float *)d[1], &q->pool)
                                  : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_MAXPOOL_BACKWARD:
        return o->maxpool_backward ? o->maxpool_backward(o->user, stream, (float *)d[0], (const float *)d[1], (const float *)d[2],
                                                         &q->pool) : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_ATTN_SOFTMAX_FORWARD:
        return o->attn_softmax_forward ? o->attn_softmax_forward(o->user, stream, (float *)d[0], (const float *)d[1], q->M, q->N)
                                       : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_ATTN_SOFTMAX_BACKWARD:
        return o->attn_softmax_backward ? o->attn_softmax_backward(o->user, stream, (float *)d[0], (const float *)d[1],
                                                                   (const float *)d[2], q->M, q->N) : GPUDL_ERR_UNSUPPORTED;
    case GPUDL_OP_GEMM_F16:
        return o->gemm_f16 ? o->gemm_f16(o->user, stream, q->trans_a, q->trans_b, q->M, q->N, q->K, q->alpha, (const uint16_t *)d[0],
                                         (const uint16_t *)d[1], q->beta, (float *)d[2]) : GPUDL_ERR_UNSUPPORTED;
    default:
        return GPUDL_ERR_INVALID_ARG;
    }
}

/* Serves calls until the grader closes fd 4. A sticky CUDA fault is sent
   back named, and ends the child: every later call would fail too. */
static void grade_serve(int cuda) {
    void *stream = NULL;
#if !defined(GPUDL_NO_CUDA)
    cudaStream_t st;
    if (cuda && cudaStreamCreate(&st) == cudaSuccess) stream = (void *)st;
#endif
    for (;;) {
        grade_call q;
        grade_back b;
        void *h[GRADE_NBUF], *d[GRADE_NBUF], *base[GRADE_NBUF];
        size_t mapped[GRADE_NBUF];
        int i, ok = 1;
        uint64_t total = 0;
        if (!grade_get(&q, sizeof q)) break;   /* the grader is done */
        if (q.magic != GRADE_MAGIC || q.nbuf < 0 || q.nbuf > GRADE_NBUF) grade_leave(4);
        memset(&b, 0, sizeof b);
        b.magic = GRADE_MAGIC;
        b.kind = GRADE_BACK_CALL;
        for (i = 0; i < GRADE_NBUF; i++) { h[i] = d[i] = base[i] = NULL; mapped[i] = 0; }
        for (i = 0; i < q.nbuf; i++) {
            if (q.bytes[i] < 0 || q.same[i] >= i) grade_leave(4);
            if (q.role[i] != GRADE_BUF_NONE && q.same[i] < 0) total += (uint64_t)q.bytes[i];
        }
        if (total > (3ull << 30)) grade_leave(4);
        for (i = 0; i < q.nbuf; i++) {   /* the inputs, into host memory */
            if (q.role[i] == GRADE_BUF_NONE || q.same[i] >= 0) continue;
            if (!(h[i] = malloc((size_t)q.bytes[i] + 1))) grade_leave(4);
            if (!grade_get(h[i], (size_t)q.bytes[i])) grade_leave(4);
        }
        for (i = 0; i < q.nbuf && ok; i++) {   /* then where the student's function gets them */
            if (q.role[i] == GRADE_BUF_NONE) continue;
            if (q.same[i] >= 0) { h[i] = h[q.same[i]]; d[i] = d[q.same[i]]; continue; }
            if (!(d[i] = grade_buf_alloc((size_t)q.bytes[i], cuda, &base[i], &mapped[i]))) { ok = 0; break; }
#if !defined(GPUDL_NO_CUDA)
            if (cuda) { if (cudaMemcpy(d[i], h[i], (size_t)q.bytes[i], cudaMemcpyHostToDevice) != cudaSuccess) ok = 0; }
            else
#endif
                memcpy(d[i], h[i], (size_t)q.bytes[i]);
        }
        if (!ok) {
            b.status = GPUDL_ERR_OOM;
            snprintf(b.text, sizeof b.text, "the grader's process could not allocate the case's buffers");
        } else {
            if (q.op > 0 && q.op < GRADE_NOPS) grade_calls[q.op]++;
            b.status = grade_dispatch(&q, d, stream);
#if !defined(GPUDL_NO_CUDA)
            if (cuda) {   /* a fault in the kernel: sticky, every later call would fail too. Name it, and leave. */
                cudaError_t e = cudaDeviceSynchronize();
                if (e != cudaSuccess) {
                    (void)cudaGetLastError();
                    if (cudaDeviceSynchronize() != cudaSuccess) {
                        b.fault = 1;
                        snprintf(b.text, sizeof b.text, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
                        grade_put(&b, sizeof b);
                        grade_leave(3);
                    }
                }
            }
#endif
            for (i = 0; i < q.nbuf; i++)
                if (q.role[i] == GRADE_BUF_OUT && q.same[i] < 0) {
#if !defined(GPUDL_NO_CUDA)
                    if (cuda) { if (cudaMemcpy(h[i], d[i], (size_t)q.bytes[i], cudaMemcpyDeviceToHost) != cudaSuccess) (void)cudaGetLastError(); }
                    else
#endif
                        memcpy(h[i], d[i], (size_t)q.bytes[i]);
                }
        }
        if (!grade_put(&b, sizeof b)) grade_leave(4);
        for (i = 0; i < q.nbuf; i++)
            if (q.role[i] == GRADE_BUF_OUT && q.same[i] < 0 && !grade_put(h[i], (size_t)q.bytes[i])) grade_leave(4);
        for (i = 0; i < q.nbuf; i++)
            if (q.same[i] < 0) { grade_buf_free(base[i], mapped[i], cuda); free(h[i]); }
    }
#if !defined(GPUDL_NO_CUDA)
    if (stream) cudaStreamDestroy((cudaStream_t)stream);
#endif
}


/* ---- the training run ----------------------------------------------------- */
/* The first n samples of a host tensor (N, ...): a view. */
static void grade_head(gpudl_tensor *view, const gpudl_tensor *t, int64_t n) {
    *view = *t;
    view->owner = 0;
    if (view->shape[0] > n) view->shape[0] = n;
}

#define GRADE_TRAIN_N 2000    /* images: the shipped subset's training set */
#define GRADE_TEST_N  1000
#define GRADE_BATCH   64

static void grade_train_attention(const grade_assignment *a, gpudl_ctx *ctx, int epochs);

static void grade_train_run(const grade_assignment *a, const char *dir, int epochs) {
    gpudl_ctx *ctx = NULL;
    gpudl_tensor xtr, ytr, xte, yte, xh, yh, count, x, y, flat;
    gpudl_dataset train, test;
    gpudl_model *m = NULL;
    gpudl_model_desc md;
    gpudl_optim_desc od;
    gpudl_status s;
    int64_t sample[3] = {1, 28, 28}, one = 1, b, e, steps = 0;
    float loss0 = -1.0f, loss = 0.0f, correct = 0.0f;
    const char *found = NULL, *what;
    double t0 = gpudl_now();
    int i, mlp = a->train == GRADE_TRAIN_MLP || a->train == GRADE_TRAIN_MLP_FP16, fp16 = a->train == GRADE_TRAIN_MLP_FP16;
    memset(&train, 0, sizeof train); memset(&test, 0, sizeof test);
    memset(&count, 0, sizeof count);

#define GRADE_TRY(expr) do { if ((s = (expr)) != GPUDL_OK) { \
        printf("training: FAILED at %s: %s\n          %s\n", #expr, gpudl_status_string(s), ctx ? gpudl_ctx_last_error(ctx) : ""); \
        printf("training: it runs your functions: make the checks above pass first\n"); \
        goto done; } } while (0)
    if ((s = grade_ctx(a->device, &ctx)) != GPUDL_OK) { printf("training: SKIPPED (no context: %s)\n", gpudl_status_string(s)); return; }
    if (a->train == GRADE_TRAIN_ATTENTION) {   /* no images: a sequence task of its own */
        memset(grade_calls, 0, sizeof grade_calls);
        grade_train_attention(a, ctx, epochs);
        gpudl_ctx_destroy(ctx);
        return;
    }
    if (gpudl_ctx_device(ctx) == GPUDL_DEVICE_CPU) (void)gpudl_cpu_flush_denormals(ctx, 1);
    if (gpudl_fashion_mnist_load(ctx, dir, &xtr, &ytr, &xte, &yte, &found) != GPUDL_OK) {
        printf("training: SKIPPED (no Fashion-MNIST: %s; pass --data DIR with the four IDX files)\n", gpudl_ctx_last_error(ctx));
        gpudl_ctx_destroy(ctx);
        return;
    }
    grade_head(&xh, &xtr, GRADE_TRAIN_N); grade_head(&yh, &ytr, GRADE_TRAIN_N);
    GRADE_TRY(gpudl_dataset_create(ctx, &train, &xh, &yh, GRADE_BATCH, 0.2860f, 0.3530f));
    grade_head(&xh, &xte, GRADE_TEST_N); grade_head(&yh, &yte, GRADE_TEST_N);
    GRADE_TRY(gpudl_dataset_create(ctx, &test, &xh, &yh, GRADE_BATCH, 0.2860f, 0.3530f));

    if (mlp) {   /* 784 -> 128 -> ReLU -> 10: small, so the emulated GPU runs it in seconds */
        what = fp16 ? "MLP 784-128-10 in mixed precision (FP16 weights and activations, FP32 master weights, loss scaling)"
                    : "MLP 784-128-10";
        GRADE_TRY(gpudl_model_create(ctx, &m, 1, (int64_t[1]){784}));
        GRADE_TRY(gpudl_model_add_linear(m, 784, 128));
        GRADE_TRY(gpudl_model_add_relu(m));
        GRADE_TRY(gpudl_model_add_linear(m, 128, 10));
    } else {     /* conv 5x5 8 ch -> ReLU -> max-pool 2 -> conv 3x3 16 ch -> ReLU -> max-pool 2 (overlapping, 3/2) -> linear */
        gpudl_conv2d_desc pad;
        gpudl_pool2d_desc pool;
        what = "CNN conv5x5(8)-maxpool2-conv3x3(16)-maxpool3/2-linear";
        memset(&pad, 0, sizeof pad);
        memset(&pool, 0, sizeof pool);
        pool.kind = GPUDL_POOL_MAX; pool.k_h = pool.k_w = 3; pool.stride_h = pool.stride_w = 2;
        GRADE_TRY(gpudl_model_create(ctx, &m, 3, sample));
        pad.pad_h = pad.pad_w = 2;
        GRADE_TRY(gpudl_model_add_conv2d(m, 1, 8, 5, &pad));            /* 8x28x28 */
        GRADE_TRY(gpudl_model_add_relu(m));
        GRADE_TRY(gpudl_model_add_maxpool2d(m, 2, 2));                   /* 8x14x14 */
        pad.pad_h = pad.pad_w = 1;
        GRADE_TRY(gpudl_model_add_conv2d(m, 8, 16, 3, &pad));           /* 16x14x14 */
        GRADE_TRY(gpudl_model_add_relu(m));
        GRADE_TRY(gpudl_model_add_pool2d(m, &pool));                     /* 16x6x6: windows overlap */
        GRADE_TRY(gpudl_model_add_flatten(m));
        GRADE_TRY(gpudl_model_add_linear(m, 16 * 6 * 6, 10));
    }
    memset(&md, 0, sizeof md);
    md.max_batch = GRADE_BATCH;
    md.seed = 1;
    GRADE_TRY(gpudl_model_build(m, &md));
    if (fp16) GRADE_TRY(gpudl_model_set_precision(m, GPUDL_PRECISION_FP16, NULL));   /* every f16 matmul: the student's */
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    od.lr = 2e-3f;
    GRADE_TRY(gpudl_model_set_optimizer(m, &od));

    memset(grade_calls, 0, sizeof grade_calls);
    printf("training: %s on %lld images of %s, %d epoch(s), batch %d, with your ops\n", what, (long long)train.n, found,
           epochs, GRADE_BATCH);
    fflush(stdout);
    gpudl_model_train(m, 1);
    for (e = 0; e < epochs; e++) {
        GRADE_TRY(gpudl_dataset_shuffle(ctx, &train, 1, (uint64_t)e));
        for (b = 0; b < gpudl_dataset_num_batches(&train); b++, steps++) {
            GRADE_TRY(gpudl_dataset_batch(ctx, &train, b, &x, &y));
            if (mlp) GRADE_TRY(gpudl_tensor_reshape(&flat, &x, 2, (int64_t[2]){x.shape[0], 784}));
            else flat = x;
            GRADE_TRY(gpudl_model_zero_grad(m));
            GRADE_TRY(gpudl_model_forward(m, &flat, NULL));
            GRADE_TRY(gpudl_model_loss(m, &y));
            GRADE_TRY(gpudl_model_backward(m));
            GRADE_TRY(gpudl_model_step(m));
            if (steps == 0) GRADE_TRY(gpudl_model_loss_value(m, &loss0));
        }
    }
    GRADE_TRY(gpudl_model_loss_value(m, &loss));
    GRADE_TRY(gpudl_tensor_create(ctx, &count, GPUDL_F32, 1, &one));
    GRADE_TRY(gpudl_tensor_fill(ctx, &count, 0.0f));
    gpudl_model_train(m, 0);
    for (b = 0; b < gpudl_dataset_num_batches(&test); b++) {
        GRADE_TRY(gpudl_dataset_batch(ctx, &test, b, &x, &y));
        if (mlp) GRADE_TRY(gpudl_tensor_reshape(&flat, &x, 2, (int64_t[2]){x.shape[0], 784}));
        else flat = x;
        GRADE_TRY(gpudl_model_forward(m, &flat, NULL));
        GRADE_TRY(gpudl_model_count_correct(m, &y, &count));
    }
    GRADE_TRY(gpudl_tensor_item(ctx, &count, 0, &correct));
    printf("training: %lld steps, loss %.3f -> %.3f, test accuracy %.1f%% on %lld images (chance: 10%%; %s), %.1f s\n",
           (long long)steps, loss0, loss, 100.0 * correct / (double)test.n, (long long)test.n, a->expect, gpudl_now() - t0);
    printf("training: your code ran");
    for (i = 0; i < grade_nchecks(a); i++)
        printf("%s %s %lld times", i ? "," : "", a->checks[i].name, (long long)grade_calls[a->checks[i].op]);
    printf("\n");
done:
    gpudl_tensor_free(ctx, &count);
    gpudl_model_destroy(m);
    gpudl_dataset_free(ctx, &train); gpudl_dataset_free(ctx, &test);
    gpudl_tensor_free(ctx, &xtr); gpudl_tensor_free(ctx, &ytr); gpudl_tensor_free(ctx, &xte); gpudl_tensor_free(ctx, &yte);
    gpudl_ctx_destroy(ctx);
#undef GRADE_TRY
}

/* The attention assignment's run: a one-layer causal self-attention model
   built from gpudl's ops (token and position embeddings, the QKV and output
   projections as GEMMs, gpudl_attention_forward/_backward, which call the
   student's softmax, the loss at every position), trained with SGD and
   momentum on a synthetic task: random sequences of 8 tokens, each
   position's label the token BEFORE it (position 0: its own), which each
   position finds by attending to the one before (chance: 1 in 8). The
   data are made here: no files. */
#define GRADE_ATT_V 8     /* tokens */
#define GRADE_ATT_T 16    /* positions */
#define GRADE_ATT_C 32    /* width */
#define GRADE_ATT_NH 2    /* heads */
#define GRADE_ATT_B 32    /* sequences per step */
#define GRADE_ATT_STEPS 100   /* per epoch */
#define GRADE_ATT_TEST 64     /* test sequences */

/* B sequences of a stream from sequence first on: random tokens; the labels (B*T) the previous token of each. */
static void grade_att_batch(uint64_t stream, int64_t first, int32_t *ids, int32_t *labels) {
    int64_t b, t;
    for (b = 0; b < GRADE_ATT_B; b++)
        for (t = 0; t < GRADE_ATT_T; t++) {
            ids[b * GRADE_ATT_T + t] = (int32_t)(gpudl_rng_bits(stream, (uint64_t)((first + b) * GRADE_ATT_T + t)) % GRADE_ATT_V);
            labels[b * GRADE_ATT_T + t] = ids[b * GRADE_ATT_T + (t > 0 ? t - 1 : 0)];
        }
}

static void grade_train_attention(const grade_assignment *a, gpudl_ctx *ctx, int epochs) {
    enum { WTE, WPE, WQKV, WOUT, NP };
    static const int64_t pshape[NP][2] = {{GRADE_ATT_V, GRADE_ATT_C}, {GRADE_ATT_T, GRADE_ATT_C},
                                          {GRADE_ATT_C, 3 * GRADE_ATT_C}, {GRADE_ATT_C, GRADE_ATT_V}};
    const int64_t B = GRADE_ATT_B, T = GRADE_ATT_T, C = GRADE_ATT_C, V = GRADE_ATT_V, N = B * T;
    gpudl_tensor p[NP], g[NP], v[NP], ids, lab, h, qkv, y, att, logits, probs, loss, dqkv, dy, dh;
    gpudl_tensor h2, qkv2, y2, dqkv2, dy2, dh2;
    int32_t hid[GRADE_ATT_B * GRADE_ATT_T], hlab[GRADE_ATT_B * GRADE_ATT_T];
    float *hlog = NULL, loss0 = -1.0f, lossv = 0.0f, lr = 0.05f;
    int64_t s3[3], s4[4], s2[2], step, steps = (int64_t)epochs * GRADE_ATT_STEPS, correct = 0, total = 0, i, k;
    double t0 = gpudl_now();
    gpudl_status s = GPUDL_OK;
    int j;
    memset(p, 0, sizeof p); memset(g, 0, sizeof g); memset(v, 0, sizeof v);
    memset(&ids, 0, sizeof ids); memset(&lab, 0, sizeof lab); memset(&h, 0, sizeof h); memset(&qkv, 0, sizeof qkv);
    memset(&y, 0, sizeof y); memset(&att, 0, sizeof att); memset(&logits, 0, sizeof logits); memset(&probs, 0, sizeof probs);
    memset(&loss, 0, sizeof loss); memset(&dqkv, 0, sizeof dqkv); memset(&dy, 0, sizeof dy); memset(&dh, 0, sizeof dh);
#define GRADE_TRY(expr) do { if ((s = (expr)) != GPUDL_OK) { \
        printf("training: FAILED at %s: %s\n          %s\n", #expr, gpudl_status_string(s), gpudl_ctx_last_error(ctx)); \
        printf("training: it runs your functions: make the checks above pass first\n"); \
        goto done; } } while (0)
    for (j = 0; j < NP; j++) {
        GRADE_TRY(gpudl_tensor_create(ctx, &p[j], GPUDL_F32, 2, pshape[j]));
        GRADE_TRY(gpudl_tensor_create(ctx, &g[j], GPUDL_F32, 2, pshape[j]));
        GRADE_TRY(gpudl_tensor_create(ctx, &v[j], GPUDL_F32, 2, pshape[j]));
        GRADE_TRY(gpudl_tensor_normal(ctx, &p[j], 0.0f, j < WQKV ? 0.5f : 1.0f / sqrtf((float)C)));
        GRADE_TRY(gpudl_tensor_fill(ctx, &v[j], 0.0f));
    }
    s2[0] = B; s2[1] = T;
    GRADE_TRY(gpudl_tensor_create(ctx, &ids, GPUDL_I32, 2, s2));
    GRADE_TRY(gpudl_tensor_create(ctx, &lab, GPUDL_I32, 1, &N));
    s3[0] = B; s3[1] = T; s3[2] = C;
    GRADE_TRY(gpudl_tensor_create(ctx, &h, GPUDL_F32, 3, s3));
    GRADE_TRY(gpudl_tensor_create(ctx, &y, GPUDL_F32, 3, s3));
    GRADE_TRY(gpudl_tensor_create(ctx, &dy, GPUDL_F32, 3, s3));
    GRADE_TRY(gpudl_tensor_create(ctx, &dh, GPUDL_F32, 3, s3));
    s3[2] = 3 * C;
    GRADE_TRY(gpudl_tensor_create(ctx, &qkv, GPUDL_F32, 3, s3));
    GRADE_TRY(gpudl_tensor_create(ctx, &dqkv, GPUDL_F32, 3, s3));
    s4[0] = B; s4[1] = GRADE_ATT_NH; s4[2] = s4[3] = T;
    GRADE_TRY(gpudl_tensor_create(ctx, &att, GPUDL_F32, 4, s4));
    s2[0] = N; s2[1] = V;
    GRADE_TRY(gpudl_tensor_create(ctx, &logits, GPUDL_F32, 2, s2));
    GRADE_TRY(gpudl_tensor_create(ctx, &probs, GPUDL_F32, 2, s2));
    k = 1;
    GRADE_TRY(gpudl_tensor_create(ctx, &loss, GPUDL_F32, 1, &k));
    s2[1] = C;
    GRADE_TRY(gpudl_tensor_reshape(&h2, &h, 2, s2)); GRADE_TRY(gpudl_tensor_reshape(&y2, &y, 2, s2));
    GRADE_TRY(gpudl_tensor_reshape(&dy2, &dy, 2, s2)); GRADE_TRY(gpudl_tensor_reshape(&dh2, &dh, 2, s2));
    s2[1] = 3 * C;
    GRADE_TRY(gpudl_tensor_reshape(&qkv2, &qkv, 2, s2)); GRADE_TRY(gpudl_tensor_reshape(&dqkv2, &dqkv, 2, s2));
    if (!(hlog = (float *)malloc(sizeof(float) * (size_t)(N * V)))) { printf("training: FAILED: no host memory\n"); goto done; }

    printf("training: causal self-attention (%d heads, your softmax) learning to repeat the previous token, %lld steps of "
           "%d sequences of %d\n", GRADE_ATT_NH, (long long)steps, GRADE_ATT_B, GRADE_ATT_T);
    fflush(stdout);
    for (step = 0; step <= steps; step++) {
        int last = step == steps;   /* the last pass: the test set, forward only */
        int64_t nb = last ? GRADE_ATT_TEST / GRADE_ATT_B : 1, bi;
        for (bi = 0; bi < nb; bi++) {
            grade_att_batch(last ? 0x7e57ull : 0x7a1full, last ? bi * B : step * B, hid, hlab);
            GRADE_TRY(gpudl_tensor_upload(ctx, &ids, hid, sizeof hid));
            GRADE_TRY(gpudl_tensor_upload(ctx, &lab, hlab, sizeof hlab));
            GRADE_TRY(gpudl_embedding_forward(ctx, &h, &ids, &p[WTE], &p[WPE]));
            GRADE_TRY(gpudl_matmul(ctx, &qkv2, &h2, &p[WQKV], 0, 0, 1.0f, 0.0f));
            GRADE_TRY(gpudl_attention_forward(ctx, &y, &att, &qkv, GRADE_ATT_NH));
            GRADE_TRY(gpudl_matmul(ctx, &logits, &y2, &p[WOUT], 0, 0, 1.0f, 0.0f));
            if (last) {
                GRADE_TRY(gpudl_tensor_download(ctx, &logits, hlog, sizeof(float) * (size_t)(N * V)));
                for (i = 0; i < N; i++) {
                    int64_t best = 0;
                    for (k = 1; k < V; k++) best = hlog[i * V + k] > hlog[i * V + best] ? k : best;
                    correct += best == hlab[i];
                    total++;
                }
                continue;
            }
            GRADE_TRY(gpudl_softmax_xent_forward(ctx, &loss, &probs, &logits, &lab));
            if (step == 0) GRADE_TRY(gpudl_tensor_item(ctx, &loss, 0, &loss0));
            GRADE_TRY(gpudl_softmax_xent_backward(ctx, &logits, &probs, &lab, 1.0f));   /* dlogits, in place */
            GRADE_TRY(gpudl_matmul(ctx, &g[WOUT], &y2, &logits, 1, 0, 1.0f, 0.0f));
            GRADE_TRY(gpudl_matmul(ctx, &dy2, &logits, &p[WOUT], 0, 1, 1.0f, 0.0f));
            GRADE_TRY(gpudl_attention_backward(ctx, &dqkv, &dy, &qkv, &att, GRADE_ATT_NH));
            GRADE_TRY(gpudl_matmul(ctx, &g[WQKV], &h2, &dqkv2, 1, 0, 1.0f, 0.0f));
            GRADE_TRY(gpudl_matmul(ctx, &dh2, &dqkv2, &p[WQKV], 0, 1, 1.0f, 0.0f));
            GRADE_TRY(gpudl_tensor_fill(ctx, &g[WTE], 0.0f));
            GRADE_TRY(gpudl_tensor_fill(ctx, &g[WPE], 0.0f));
            GRADE_TRY(gpudl_embedding_backward(ctx, &g[WTE], &g[WPE], &dh, &ids));
            for (j = 0; j < NP; j++) {   /* SGD with momentum 0.9: v = 0.9 v + g; p -= lr v */
                GRADE_TRY(gpudl_scale(ctx, &v[j], 0.9f));
                GRADE_TRY(gpudl_axpy(ctx, &v[j], 1.0f, &g[j]));
                GRADE_TRY(gpudl_axpy(ctx, &p[j], -lr, &v[j]));
            }
        }
        if (step == steps - 1) GRADE_TRY(gpudl_tensor_item(ctx, &loss, 0, &lossv));
    }
    printf("training: %lld steps, loss %.3f -> %.3f, test accuracy %.1f%% on %lld positions (chance: 12.5%%; %s), %.1f s\n",
           (long long)steps, loss0, lossv, 100.0 * (double)correct / (double)total, (long long)total,
           a->expect, gpudl_now() - t0);
    printf("training: your code ran");
    for (j = 0; j < grade_nchecks(a); j++)
        printf("%s %s %lld times", j ? "," : "", a->checks[j].name, (long long)grade_calls[a->checks[j].op]);
    printf("\n");
done:
    free(hlog);
    for (j = 0; j < NP; j++) { gpudl_tensor_free(ctx, &p[j]); gpudl_tensor_free(ctx, &g[j]); gpudl_tensor_free(ctx, &v[j]); }
    gpudl_tensor_free(ctx, &ids); gpudl_tensor_free(ctx, &lab); gpudl_tensor_free(ctx, &h); gpudl_tensor_free(ctx, &qkv);
    gpudl_tensor_free(ctx, &y); gpudl_tensor_free(ctx, &att); gpudl_tensor_free(ctx, &logits); gpudl_tensor_free(ctx, &probs);
    gpudl_tensor_free(ctx, &loss); gpudl_tensor_free(ctx, &dqkv); gpudl_tensor_free(ctx, &dy); gpudl_tensor_free(ctx, &dh);
#undef GRADE_TRY
}



/* ---- the runner's main: one job per child -------------------------------- */
/* --child probe|serve|train --assignment A [--data DIR] [--epochs N] */
int main(int argc, char **argv) {
    const grade_assignment *a = NULL;
    const char *mode = "", *dir = NULL;
    int i, epochs = 3;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--child")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--assignment")) {
            int j;
            for (j = 0; j < GRADE_NASSIGN; j++)
                if (!strcmp(argv[i + 1], grade_assignments[j].name)) a = &grade_assignments[j];
        } else if (!strcmp(argv[i], "--data")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--epochs")) epochs = atoi(argv[i + 1]);
    }
    (void)grade_nrules;
    if (!a) {
        fprintf(stderr, "this is the grader's runner: the grader (grade.c built without -DGRADE_RUNNER) starts it\n");
        return 2;
    }
    student_ops(&grade_student);
    if (!strcmp(mode, "probe")) {
        grade_back b;
        memset(&b, 0, sizeof b);
        b.magic = GRADE_MAGIC;
        b.kind = GRADE_BACK_PROBE;
        b.fields = spy_fields();
        b.guards = grade_guards;
        grade_put(&b, sizeof b);
    } else if (!strcmp(mode, "serve")) {
        grade_serve(a->device == GPUDL_DEVICE_CUDA);
    } else if (!strcmp(mode, "train")) {
        grade_train_run(a, dir, epochs < 1 ? 1 : epochs);
    }
    grade_leave(0);
    return 0;
}
#endif /* GRADE_RUNNER */

#if !defined(GRADE_RUNNER)
/* ======================================================================== */
/* The grader: builds, checks and runs submissions; no student code runs   */
/* in this process.                                                         */
/* ======================================================================== */
#if defined(_WIN32)
int main(void) {
    (void)grade_assignments, (void)grade_nchecks, (void)grade_nrules;   /* the sandbox's tables, unused here */
    fprintf(stderr, "grade: the grader needs a POSIX system (Linux for its sandbox); on Windows, use WSL\n");
    return 2;
}
#else
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#  include <sys/prctl.h>
#  include <sys/syscall.h>
#  if defined(__has_include)
#    if __has_include(<linux/landlock.h>)   /* kernel headers older than 5.13: no Landlock, said at run time */
#      include <linux/landlock.h>
#      define GRADE_LANDLOCK 1
#    endif
#  endif
#endif
#if defined(GRADE_LANDLOCK) && !defined(SYS_landlock_create_ruleset)   /* a C library older than the headers */
#  define SYS_landlock_create_ruleset 444   /* the same number on every architecture */
#  define SYS_landlock_add_rule 445
#  define SYS_landlock_restrict_self 446
#endif

extern char **environ;

static double grade_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- growing strings ------------------------------------------------------ */
typedef struct grade_buf { char *p; size_t n, cap, limit; int cut; } grade_buf;

static void grade_addn(grade_buf *b, const char *s, size_t n) {
    if (b->limit && b->n + n > b->limit) {
        if (!b->cut) { b->cut = 1; grade_addn(b, "\n[... cut: the feedback is capped]\n", 36); }
        if (b->n >= b->limit) return;
        n = b->limit - b->n;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *p;
        while (cap < b->n + n + 1) cap *= 2;
        if (!(p = (char *)realloc(b->p, cap))) return;
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void grade_printf(grade_buf *b, const char *fmt, ...) {
    char tmp[4096];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) grade_addn(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
static const char *grade_str(const grade_buf *b) { return b->p ? b->p : ""; }

/* Text from a child, each line behind "| " (so that nothing it prints can
   pass for the grader's own lines), at most max bytes. */
static void grade_quote(grade_buf *b, const char *s, size_t n, size_t max) {
    size_t i, start = 0;
    if (n > max) n = max;
    for (i = 0; i <= n; i++)
        if (i == n || s[i] == '\n') {
            if (i > start || i < n) {
                size_t j;
                grade_addn(b, "    | ", 6);
                for (j = start; j < i && j < start + 200; j++) {   /* 200 characters a line; control characters as '?' */
                    char ch = s[j];
                    grade_addn(b, (ch >= 32 && ch < 127) || (unsigned char)ch >= 128 || ch == '\t' ? &ch : "?", 1);
                }
                grade_addn(b, "\n", 1);
            }
            start = i + 1;
        }
}

/* ---- files ---------------------------------------------------------------- */
/* Reads a regular file (max: stop past that many bytes; 0: all). A FIFO, a
   device or a folder is refused before a read could block; nofollow: a
   symbolic link too (what a child may have left in its folder). */
static int grade_read_file_at(const char *path, grade_buf *b, size_t max, int nofollow) {
    char tmp[65536];
    struct stat st;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return 0; }
    while ((n = read(fd, tmp, sizeof tmp)) > 0) {
        grade_addn(b, tmp, (size_t)n);
        if (max && b->n > max) break;
    }
    close(fd);
    return n >= 0 || (max && b->n > max);
}
static int grade_read_file(const char *path, grade_buf *b, size_t max) { return grade_read_file_at(path, b, max, 0); }
static int grade_write_file(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(s, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}
static int grade_copy(const char *from, const char *to) {
    grade_buf b = {0};
    int ok = grade_read_file(from, &b, 0) && grade_write_file(to, grade_str(&b), b.n);
    free(b.p);
    return ok;
}
static uint64_t grade_hash(const char *s, size_t n, uint64_t h) {   /* FNV-1a */
    size_t i;
    if (!h) h = 1469598103934665603ull;
    for (i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}
static uint64_t grade_hash_file(const char *path) {   /* 0: not a regular file (a link, a FIFO, gone) */
    grade_buf b = {0};
    uint64_t h = grade_read_file_at(path, &b, 0, 1) ? grade_hash(grade_str(&b), b.n, 0) : 0;
    free(b.p);
    return h;
}
static int grade_exists(const char *path) { struct stat st; return stat(path, &st) == 0; }
static int grade_is_dir(const char *path) { struct stat st; return stat(path, &st) == 0 && S_ISDIR(st.st_mode); }
static const char *grade_base(const char *path) { const char *s = strrchr(path, '/'); return s ? s + 1 : path; }
/* Removes name in the folder dirfd, and what it holds, never following a
   symbolic link: a link a child left in its folder (to the teacher's home,
   to ../shared) is removed, not what it points to. Folders a child made
   unreadable are made readable first, by name, without following links. */
static void grade_rm_at(int dir, const char *name, int depth) {
    struct stat st;
    int fd;
    DIR *d;
    struct dirent *e;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (!S_ISDIR(st.st_mode) || depth > 64) { unlinkat(dir, name, 0); return; }
    fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && fchmodat(dir, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { unlinkat(dir, name, AT_REMOVEDIR); return; }
    if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700) (void)fchmod(fd, 0700);   /* the folder itself, by its fd */
    if (!(d = fdopendir(fd))) { close(fd); return; }
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        grade_rm_at(dirfd(d), e->d_name, depth + 1);
    }
    closedir(d);
    unlinkat(dir, name, AT_REMOVEDIR);
}
static void grade_rm_rf(const char *path) { grade_rm_at(AT_FDCWD, path, 0); }
static char *grade_abs(const char *path) {   /* an absolute path (the file need not exist) */
    char cwd[4096], *r = realpath(path, NULL), *out;
    if (r) return r;
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd)) return strdup(path);
    out = (char *)malloc(strlen(cwd) + strlen(path) + 2);
    sprintf(out, "%s/%s", cwd, path);
    return out;
}

static char grade_sanitizer_path[4300];   /* the emulated device's compute-sanitizer (beside nvcc-emu), or "" */

/* ---- children ------------------------------------------------------------- */
/* A child's limits and what came back from it. */
typedef struct grade_limits {
    int    cpu_s;               /* RLIMIT_CPU: SIGKILL past it */
    double wall_s;              /* then SIGKILL to its process group */
    size_t data_bytes;          /* RLIMIT_DATA (0: none) */
    size_t fsize_bytes;         /* RLIMIT_FSIZE */
    size_t out_keep, out_kill;  /* output kept for the feedback; past out_kill bytes the child is killed */
    int    sandbox;             /* runner child: Landlock, no inherited environment, fd 3 (and 4) the channel */
    int    serve;               /* a runner child that serves calls: fd 4 its input */
    const char *cwd;
} grade_limits;

typedef struct grade_child {
    int      started, exited, code, sig;   /* exited: normally, with code; sig: killed by it */
    int      timed_out, flooded;
    int      tampered;                      /* not started: the submission's linked program changed since the link */
    double   wall_s, cpu_s;
    grade_buf out;                          /* its stdout + stderr, the first out_keep bytes */
    size_t   out_total;
    grade_buf back;                         /* what it sent on fd 3 and the grader has not taken yet */
    pid_t    pid;                           /* while it runs */
    int      out_fd, back_fd, call_fd;
    double   t0;
    grade_limits L;
} grade_child;

static void grade_child_free(grade_child *c) { free(c->out.p); free(c->back.p); memset(c, 0, sizeof *c); }

/* The sandbox (Landlock): what a runner child may touch. Filled once. */
typedef struct grade_env {
    int   landlock_abi;         /* 0: not available */
    char  landlock_why[160];
    const char *ro[32];         /* read (and execute) */
    int   nro;
    char **envp;                /* the runner's environment */
} grade_env;
static grade_env genv;

#if defined(GRADE_LANDLOCK)
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#  define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#  define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
typedef struct grade_ll_attr { uint64_t fs, net, scoped; } grade_ll_attr;   /* landlock_ruleset_attr, ABI 6 */
typedef struct grade_ll_path { uint64_t allowed; int32_t fd; } __attribute__((packed)) grade_ll_path;

static uint64_t grade_ll_fs_all(int abi) {
    uint64_t r = (1ULL << 13) - 1;
    if (abi >= 2) r |= 1ULL << 13;                        /* REFER */
    if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return r;
}
static void grade_ll_rule_fd(int rs, int fd, uint64_t allowed) {
    grade_ll_path pb;
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))   /* a file takes file rights only */
        allowed &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                   LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
    pb.allowed = allowed;
    pb.fd = fd;
    (void)syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
}
static void grade_ll_rule(int rs, const char *path, uint64_t allowed) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    grade_ll_rule_fd(rs, fd, allowed);
    close(fd);
}
/* The fd that keeps the child's own /proc/<pid> directory (the one its
   Landlock rule names) from being looked up anew while it runs. */
#define GRADE_PROC_FD 9
/* In the forked child, before exec: the runner may read and execute the
   system's files, read the data, and use only its own folder; of /proc only
   its own process and a few system-wide files (not the grader's environ,
   nor other students' processes); no TCP, no signals to processes outside
   its sandbox (ABI 6). Returns 0 on success. */
static int grade_landlock(const char *sandbox, const char *data) {
    grade_ll_attr at;
    int abi = genv.landlock_abi, rs, i, self;
    uint64_t ro = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    uint64_t dev = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 5 ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0);
    static const char *devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/shm",
                                 "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps",
                                 "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia4",
                                 "/dev/nvidia5", "/dev/nvidia6", "/dev/nvidia7", "/dev/dri"};
    static const char *procs[] = {"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems", "/proc/sys",
                                  "/proc/driver/nvidia"};
    if (abi < 1) return -1;
    memset(&at, 0, sizeof at);
    at.fs = grade_ll_fs_all(abi);
    if (abi >= 4) at.net = 3;      /* LANDLOCK_ACCESS_NET_BIND_TCP | CONNECT_TCP */
    if (abi >= 6) at.scoped = 3;   /* LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SIGNAL */
    rs = (int)syscall(SYS_landlock_create_ruleset, &at, abi >= 6 ? sizeof at : abi >= 4 ? 16 : 8, 0);
    if (rs < 0) return -1;
    for (i = 0; i < genv.nro; i++) grade_ll_rule(rs, genv.ro[i], ro);
    for (i = 0; i < (int)(sizeof devs / sizeof devs[0]); i++) grade_ll_rule(rs, devs[i], dev);
    for (i = 0; i < (int)(sizeof procs / sizeof procs[0]); i++) grade_ll_rule(rs, procs[i], ro);
    if ((self = open("/proc/self", O_PATH | O_DIRECTORY)) >= 0) {   /* /proc/<this pid>: kept open across exec */
        if (self != GRADE_PROC_FD) { dup2(self, GRADE_PROC_FD); close(self); }
        grade_ll_rule_fd(rs, GRADE_PROC_FD, ro);
    }
    if (grade_sanitizer_path[0]) grade_ll_rule(rs, grade_sanitizer_path, ro);   /* the emulator's compute-sanitizer: that file only */
    if (data) grade_ll_rule(rs, data, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
    grade_ll_rule(rs, sandbox, grade_ll_fs_all(abi));
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    i = (int)syscall(SYS_landlock_restrict_self, rs, 0);
    close(rs);
    return i;
}
#endif

static void grade_env_setup(void) {
    static const char *sys_ro[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/sys"};
    static char *envp[16];
    static char ld[4096];
    int i, n = 0;
    const char *v;
    for (i = 0; i < (int)(sizeof sys_ro / sizeof sys_ro[0]); i++)
        if (grade_exists(sys_ro[i])) genv.ro[genv.nro++] = sys_ro[i];
    envp[n++] = (char *)"PATH=/usr/bin:/bin";
    envp[n++] = (char *)"OMP_NUM_THREADS=1";   /* the class runs in parallel over the cores already */
    envp[n++] = (char *)"CUEMU_THREADS=1";
    envp[n++] = (char *)"LC_ALL=C";
    if ((v = getenv("LD_LIBRARY_PATH")) != NULL && *v) {   /* CUDA's libraries outside the system's paths */
        char *tmp = strdup(v), *tok, *save = NULL;
        snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", v);
        envp[n++] = ld;
        for (tok = strtok_r(tmp, ":", &save); tok && genv.nro < 30; tok = strtok_r(NULL, ":", &save))
            if (tok[0] == '/') genv.ro[genv.nro++] = strdup(tok);
    }
    if ((v = getenv("CUDA_VISIBLE_DEVICES")) != NULL) {
        static char cvd[256];
        snprintf(cvd, sizeof cvd, "CUDA_VISIBLE_DEVICES=%s", v);
        envp[n++] = cvd;
    }
    envp[n] = NULL;
    genv.envp = envp;
#if defined(GRADE_LANDLOCK)
    {
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi > 0) genv.landlock_abi = (int)abi;
        else snprintf(genv.landlock_why, sizeof genv.landlock_why, "Landlock is not available here (%s)", strerror(errno));
    }
#elif defined(__linux__)
    snprintf(genv.landlock_why, sizeof genv.landlock_why, "the grader was built without <linux/landlock.h> (kernel "
             "headers older than 5.13): no Landlock");
#else
    snprintf(genv.landlock_why, sizeof genv.landlock_why, "Landlock is Linux only");
#endif
}

static void grade_env_add(char **envp, const char *kv) {   /* envp has room: grade_env_setup leaves some */
    int n = 0;
    while (envp[n]) n++;
    if (n < 15) { envp[n] = (char *)kv; envp[n + 1] = NULL; }
}

/* 64 random bits: /dev/urandom, mixed with the time, the process and a
   counter (never 0). The grading run's seed, the shuffled schedules'. */
static uint64_t grade_random64(void) {
    static uint64_t count;
    uint64_t k = 0, h;
    double t = grade_now();
    pid_t me = getpid();
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) { if (read(fd, &k, sizeof k) != (ssize_t)sizeof k) k = 0; close(fd); }
    h = grade_hash((const char *)&t, sizeof t, 14695981039346656037ull);
    h = grade_hash((const char *)&me, sizeof me, h);
    count++;
    h = grade_hash((const char *)&count, sizeof count, h);
    k ^= h;
    return k ? k : 1;
}

/* The submission's linked program and its hash after the link: a child
   may write its own folder, so each runner child first checks that the
   program it is about to start is still the one the grader linked (a
   regular file, not a link or a FIFO). */
static char grade_cur_runner[4200];
static uint64_t grade_cur_runner_hash;

/* Starts argv in a child: its own process group, the limits, output
   through a pipe. A runner child (L->sandbox) also gets Landlock, a clean
   environment (plus env, NULL-terminated), fd 3 for what it sends back and,
   serving calls (L->serve), fd 4 for the calls. Returns 1 when it runs. */
static int grade_start(char *const argv[], const grade_limits *L, const char *sandbox, const char *data,
                       const char *const *env, grade_child *c) {
    int out[2], back[2] = {-1, -1}, call[2] = {-1, -1}, n;
    char *envp[24];
    pid_t pid;
    memset(c, 0, sizeof *c);
    c->out_fd = c->back_fd = c->call_fd = -1;
    c->L = *L;
    c->t0 = grade_now();
    for (n = 0; genv.envp && genv.envp[n] && n < 16; n++) envp[n] = genv.envp[n];
    while (env && *env && n < 23) envp[n++] = (char *)*env++;
    envp[n] = NULL;
    if (L->sandbox && grade_cur_runner[0] && grade_hash_file(grade_cur_runner) != grade_cur_runner_hash) {
        c->started = 1; c->tampered = 1; c->sig = SIGSYS;   /* reported as refused */
        return 0;
    }
    if (pipe(out) != 0) return 0;
    if (L->sandbox && pipe(back) != 0) { close(out[0]); close(out[1]); return 0; }
    if (L->serve && pipe(call) != 0) { close(out[0]); close(out[1]); close(back[0]); close(back[1]); return 0; }
    fflush(stdout); fflush(stderr);
    pid = fork();
    if (pid < 0) {
        close(out[0]); close(out[1]);
        if (back[0] >= 0) { close(back[0]); close(back[1]); }
        if (call[0] >= 0) { close(call[0]); close(call[1]); }
        return 0;
    }
    if (pid == 0) {
        struct rlimit r;
        int fd, nul = open("/dev/null", O_RDONLY), keep = 3;
        setpgid(0, 0);
        r.rlim_cur = r.rlim_max = (rlim_t)L->cpu_s; setrlimit(RLIMIT_CPU, &r);
        r.rlim_cur = r.rlim_max = 0; setrlimit(RLIMIT_CORE, &r);
        if (L->fsize_bytes) { r.rlim_cur = r.rlim_max = (rlim_t)L->fsize_bytes; setrlimit(RLIMIT_FSIZE, &r); }
        if (L->data_bytes) { r.rlim_cur = r.rlim_max = (rlim_t)L->data_bytes; setrlimit(RLIMIT_DATA, &r); }
        if (L->sandbox) { r.rlim_cur = r.rlim_max = 256; setrlimit(RLIMIT_NOFILE, &r); }
        if (L->cwd && chdir(L->cwd) != 0) _exit(126);
        /* the pipes' ends to low numbers first: none of them may sit on 0-4 when those are set */
        if (L->sandbox) { back[1] = fcntl(back[1], F_DUPFD, 10); if (L->serve) call[0] = fcntl(call[0], F_DUPFD, 10); }
        out[1] = fcntl(out[1], F_DUPFD, 10);
        dup2(nul, 0);
        dup2(out[1], 1);
        dup2(out[1], 2);
        if (L->sandbox) { dup2(back[1], GRADE_FD_BACK); keep = GRADE_FD_BACK + 1; }
        if (L->serve) { dup2(call[0], GRADE_FD_CALL); keep = GRADE_FD_CALL + 1; }
        for (fd = keep; fd < 1024; fd++) close(fd);
#if defined(GRADE_LANDLOCK)
        if (L->sandbox && genv.landlock_abi > 0 && grade_landlock(sandbox, data) != 0) {
            fprintf(stderr, "grade: the sandbox (Landlock) could not be set up: %s\n", strerror(errno));
            _exit(125);
        }
#else
        (void)sandbox; (void)data;
#endif
#if defined(__linux__)
        if (L->sandbox) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
#endif
        if (L->sandbox) execve(argv[0], argv, envp);
        else execvp(argv[0], argv);
        fprintf(stderr, "grade: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    c->started = 1;
    c->pid = pid;
    close(out[1]);
    c->out_fd = out[0];
    if (back[1] >= 0) { close(back[1]); c->back_fd = back[0]; }
    if (call[0] >= 0) {
        close(call[0]);
        c->call_fd = call[1];
        fcntl(c->call_fd, F_SETFL, fcntl(c->call_fd, F_GETFL) | O_NONBLOCK);
    }
    return 1;
}

/* Moves bytes while the child runs: send[0, nsend) into its fd 4, its
   output into c->out (killed past out_kill), its fd 3 into c->back, until
   everything is sent and c->back holds need bytes (SIZE_MAX: until it has
   closed its output and fd 3), or its wall limit, or its end. Returns 1
   when that goal was met. */
static int grade_pump(grade_child *c, const char *send, size_t nsend, size_t need) {
    size_t sent = 0;
    for (;;) {
        struct pollfd p[3];
        int np = 0, i, left_ms;
        if (sent == nsend && need != (size_t)-1 && c->back.n >= need) return 1;
        if (c->out_fd < 0 && c->back_fd < 0) return need == (size_t)-1 && sent == nsend;
        if (need != (size_t)-1 && c->back_fd < 0) return 0;   /* it closed fd 3 (it ended) before answering */
        left_ms = (int)((c->L.wall_s - (grade_now() - c->t0)) * 1000);
        if (left_ms <= 0) { c->timed_out = 1; return 0; }
        if (c->out_fd >= 0) { p[np].fd = c->out_fd; p[np].events = POLLIN; np++; }
        if (c->back_fd >= 0) { p[np].fd = c->back_fd; p[np].events = POLLIN; np++; }
        if (sent < nsend && c->call_fd >= 0) { p[np].fd = c->call_fd; p[np].events = POLLOUT; np++; }
        if (poll(p, (nfds_t)np, left_ms < 200 ? left_ms : 200) < 0 && errno != EINTR) return 0;
        for (i = 0; i < np; i++) {
            char tmp[65536];
            ssize_t r;
            if (!p[i].revents) continue;
            if (p[i].fd == c->call_fd) {
                if (p[i].revents & (POLLERR | POLLHUP)) return 0;   /* it closed fd 4: it ended */
                r = write(c->call_fd, send + sent, nsend - sent > (1u << 20) ? (1u << 20) : nsend - sent);
                if (r > 0) sent += (size_t)r;
                else if (r < 0 && errno != EAGAIN && errno != EINTR) return 0;
                continue;
            }
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            r = read(p[i].fd, tmp, sizeof tmp);
            if (r <= 0) {
                if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
                if (p[i].fd == c->out_fd) { close(c->out_fd); c->out_fd = -1; } else { close(c->back_fd); c->back_fd = -1; }
                continue;
            }
            if (p[i].fd == c->out_fd) {
                if (c->out.n < c->L.out_keep) grade_addn(&c->out, tmp, (size_t)r);
                c->out_total += (size_t)r;
                if (c->L.out_kill && c->out_total > c->L.out_kill) { c->flooded = 1; return 0; }
            } else {
                grade_addn(&c->back, tmp, (size_t)r);
                if (c->back.n > (need == (size_t)-1 ? 0 : need) + (1u << 20)) { c->flooded = 1; return 0; }   /* more than asked */
            }
        }
    }
}

/* Ends the child: closes fd 4 (a serving child then leaves), gives it up
   to grace seconds (within its wall limit) to end, then SIGKILL to its
   whole group, which no handler catches; reaps it and says how it ended. */
static void grade_finish(grade_child *c, double grace) {
    int st = 0;
    struct rusage ru;
    double until;
    if (!c->pid) return;
    if (c->call_fd >= 0) { close(c->call_fd); c->call_fd = -1; }
    until = grade_now() + grace;
    if (until > c->t0 + c->L.wall_s) until = c->t0 + c->L.wall_s;
    if (!c->timed_out && !c->flooded) {   /* what it still prints, while it ends */
        double keep = c->L.wall_s;
        c->L.wall_s = until - c->t0;
        grade_pump(c, NULL, 0, (size_t)-1);
        c->L.wall_s = keep;
        if (c->timed_out && grade_now() < c->t0 + c->L.wall_s) c->timed_out = 0;   /* only the grace ran out */
    }
    if (c->timed_out || c->flooded) kill(-c->pid, SIGKILL);
    memset(&ru, 0, sizeof ru);
    while (wait4(c->pid, &st, WNOHANG, &ru) == 0) {
        if (grade_now() > until) {
            if (grade_now() > c->t0 + c->L.wall_s - 0.01) c->timed_out = 1;
            kill(-c->pid, SIGKILL); kill(c->pid, SIGKILL); wait4(c->pid, &st, 0, &ru);
            break;
        }
        usleep(2000);
    }
    kill(-c->pid, SIGKILL);   /* whatever is left of its group */
    if (c->out_fd >= 0) { close(c->out_fd); c->out_fd = -1; }
    if (c->back_fd >= 0) { close(c->back_fd); c->back_fd = -1; }
    c->pid = 0;
    c->wall_s = grade_now() - c->t0;
    c->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
               1e-6 * (double)ru.ru_stime.tv_usec;
    if (WIFEXITED(st)) { c->exited = 1; c->code = WEXITSTATUS(st); }
    else if (WIFSIGNALED(st)) c->sig = WTERMSIG(st);
    if ((c->sig == SIGKILL || c->sig == SIGXCPU) && !c->timed_out && !c->flooded && c->cpu_s >= (double)c->L.cpu_s - 0.5)
        c->timed_out = 2;   /* RLIMIT_CPU */
}

/* Runs argv to its end in a child (grade_start, grade_pump, grade_finish). */
static void grade_spawn(char *const argv[], const grade_limits *L, const char *sandbox, const char *data, grade_child *c) {
    if (!grade_start(argv, L, sandbox, data, NULL, c)) return;
    grade_pump(c, NULL, 0, (size_t)-1);
    grade_finish(c, L->wall_s);
}

/* Why a child ended badly, in a student's words; "" if it did not. */
static const char *grade_child_why(const grade_child *c, const grade_limits *L, char *buf, size_t size) {
    buf[0] = 0;
    if (!c->started) snprintf(buf, size, "the grader could not start a process");
    else if (c->tampered) snprintf(buf, size, "REFUSED: the program the grader linked was changed in its folder by your code");
    else if (c->flooded) snprintf(buf, size, "printed more than %zu MB (an output flood): stopped", L->out_kill >> 20);
    else if (c->timed_out == 2) snprintf(buf, size, "used up its CPU time limit of %d s (an endless loop? a grid that never ends?)", L->cpu_s);
    else if (c->timed_out) snprintf(buf, size, "took longer than %.0f s (an endless loop? waiting forever?)", L->wall_s);
    else if (c->sig == SIGSYS) snprintf(buf, size, "REFUSED: made a system call the sandbox forbids (starting a program, "
                                        "forking, tracing, or io_uring)");
    else if (c->sig) snprintf(buf, size, "crashed with signal %d (%s)", c->sig,
                              c->sig == SIGSEGV ? "segmentation fault: an out-of-bounds access or a NULL pointer?" :
                              c->sig == SIGBUS ? "bus error: a misaligned or unmapped access?" :
                              c->sig == SIGFPE ? "arithmetic fault: an integer division by zero?" :
                              c->sig == SIGABRT ? "abort: an assert, or the C++ runtime gave up" :
                              c->sig == SIGKILL ? "killed: out of memory?" : strsignal(c->sig));
    else if (c->exited && c->code == 125) snprintf(buf, size, "the sandbox could not be set up");
    return buf;
}

/* ---- what a student's object may call, define and include ----------------- */
/* Link time: the object's undefined symbols against these lists (a refusal
   first, then what is allowed; anything else is refused as unknown). */
#include <regex.h>
typedef struct grade_rx { const char *re, *why; } grade_rx;
static grade_rx grade_refuse[] = {
    {"^(cublas|cudnn|cufft|curand|cusparse|cusolver|nccl|cutlass)", "calls %s, a library that does the work you are asked to write"},
    {"gpudl_", "calls gpudl's own %s: the op you are asked to write (or gpudl's kernels) must not do the work"},
    {"^(dlopen|dlmopen|dlsym|dlvsym|dladdr|dladdr1|dlinfo|__libc_dlopen_mode|__libc_dlsym)$", "loads code at run time (%s)"},
    {"^(cuGetProcAddress.*|cudaGetDriverEntryPoint.*|cudaLibraryLoad.*|cuModuleLoad.*|cuLibraryLoad.*)$", "loads code at run time through CUDA (%s)"},
    {"^(system|popen|pclose|execl|execle|execlp|execv|execve|execvp|execvpe|fexecve|fork|vfork|_Fork|posix_spawnp?|clone3?|daemon|"
     "wait|waitpid|wait3|wait4|waitid)$", "starts programs or processes (%s)"},
    {"^(signal|sigaction|sigset|bsd_signal|sysv_signal|sigprocmask|pthread_sigmask|sigsuspend|sigwait|sigaltstack|alarm|ualarm|setitimer|"
     "timer_create|kill|killpg|raise|pthread_kill|tgkill|setjmp|_setjmp|__sigsetjmp|sigsetjmp|longjmp|_longjmp|siglongjmp|"
     "__longjmp_chk|setcontext|swapcontext|makecontext|getcontext)$", "handles signals or jumps out of functions (%s): the grader's "
     "time limits are not yours to handle"},
    {"^(open|open64|openat|openat64|__open_2|__open64_2|__openat_2|__openat64_2|fopen|fopen64|freopen|freopen64|fdopen|fopencookie|"
     "creat|creat64|opendir|fdopendir|scandir|tmpfile|tmpfile64|mkstemp|mkstemps|mkostemp|mkdtemp|tmpnam|access|faccessat|stat|stat64|"
     "lstat|lstat64|fstatat|__xstat|__lxstat|statx|readlink|readlinkat|realpath|chdir|fchdir|getcwd|unlink|unlinkat|remove|rename|"
     "renameat|mkdir|rmdir|truncate|ftruncate|chmod|fchmod|chown|link|symlink|mount|memfd_create|shm_open|inotify_init|"
     "fanotify_init|__(read|pread|pread64|readlink|readlinkat|getcwd|realpath)_chk)$", "opens, reads or changes files (%s): your "
     "functions get their data as arguments"},
    {"^(write|writev|pwrite|pwrite64|pwritev|read|readv|pread|pread64|preadv|send|sendto|sendmsg|recv|recvfrom|recvmsg|socket|"
     "socketpair|connect|bind|listen|accept|accept4|dup|dup2|dup3|close|close_range|closefrom|fcntl|fcntl64|ioctl|pipe|pipe2|poll|"
     "ppoll|select|pselect|epoll_create|epoll_create1|mmap|mmap64|mremap|mprotect|munmap|madvise|syscall|ptrace|prctl|setrlimit|"
     "setrlimit64|prlimit|prlimit64|process_vm_readv|process_vm_writev|personality|unshare|setns|setsid|setpgid|splice|tee|"
     "vmsplice|sendfile|copy_file_range|__(recv|recvfrom|poll|ppoll|fdelt)_chk)$", "makes low-level system calls (%s), which a "
     "submission does not need"},
    {"^(pthread_create|thrd_create)$|_ZNSt6thread", "starts threads (%s): use OpenMP or the GPU"},
    {"fstream|filebuf|filesystem|__basic_file", "opens files through the C++ library (%s)"},
    {"^cu[A-Z]", "calls the CUDA driver API (%s): use the runtime's cuda* functions"},
};
static grade_rx grade_allow[] = {
    {"^(__)?(a?sinh?|a?cosh?|a?tanh?|atan2|exp|exp2|exp10|expm1|log|log2|log10|log1p|logb|ilogb|pow|pow10|sqrt|rsqrt|cbrt|hypot|"
     "fabs|fmax|fmin|fma|fmod|fdim|floor|ceil|round|lround|llround|trunc|rint|lrint|llrint|nearbyint|erf|erfc|tgamma|lgamma|"
     "lgamma_r|copysign|frexp|ldexp|modf|remainder|remquo|scalbn|scalbln|nan|nextafter|nexttoward|sincos|isnan|isinf|finite|"
     "isfinite|signbit|fpclassify)[fl]?(_finite)?$", NULL},
    {"^(malloc|calloc|realloc|reallocarray|free|aligned_alloc|posix_memalign|memalign|memset|memcpy|memmove|memcmp|memchr|bzero|"
     "strlen|strnlen|strcmp|strncmp|strcpy|strncpy|strcat|strncat|strchr|strrchr|strstr|strdup|strndup|strtok|strtok_r|strspn|"
     "strcspn|strtol|strtoul|strtoll|strtoull|strtod|strtof|strtold|atoi|atol|atoll|atof|abs|labs|llabs|div|ldiv|qsort|bsearch|"
     "printf|fprintf|vprintf|vfprintf|puts|fputs|putchar|fputc|putc|fwrite|fflush|fclose|fread|fgets|fgetc|getc|feof|ferror|"
     "setvbuf|setbuf|snprintf|sprintf|vsnprintf|vsprintf|perror|"
     "sscanf|vsscanf|__isoc99_sscanf|__isoc99_vsscanf|__isoc23_sscanf|__isoc23_vsscanf|strerror|getenv|secure_getenv|rand|srand|rand_r|random|srandom|drand48|srand48|clock|time|gettimeofday|clock_gettime|"
     "nanosleep|usleep|sleep|sched_yield|exit|_exit|_Exit|abort|quick_exit|atexit|__cxa_atexit|__cxa_finalize|__assert_fail|"
     "__assert|__stack_chk_fail|__errno_location|isalpha|isdigit|isspace|isupper|islower|toupper|tolower|__ctype_b_loc|"
     "__ctype_tolower_loc|__ctype_toupper_loc|stdout|stderr|_GLOBAL_OFFSET_TABLE_|__dso_handle|_DYNAMIC|__[a-z0-9_]+_chk)$", NULL},
    {"^(_Znw|_Zna|_Zdl|_Zda|__cxa_|__gxx_personality_v0$|_Unwind_|_ZSt|_ZNSt|_ZNKSt|_ZTV|_ZTI|_ZTS|_ZN9__gnu_cxx|__dynamic_cast$|_ZNSo|_ZNSi)", NULL},
    {"^(cuda[A-Z]|__cuda|_Z[0-9]+cuda)", NULL},                          /* the CUDA runtime, nvcc's registration */
    {"^(threadIdx|blockIdx|blockDim|gridDim|warpSize)$", NULL},          /* the emulated device's built-ins */
    {"^(_ZN5cuemu|_ZNK5cuemu|_ZN[0-9]+cuemu|cuemu_|__tsan_|__ubsan_|__asan_|__sanitizer_|__lsan_)", NULL},   /* the emulator */
    {"^(omp_|GOMP_)", NULL},                                             /* OpenMP */
};
#define GRADE_COUNT(a) ((int)(sizeof a / sizeof a[0]))
static regex_t grade_refuse_rx[GRADE_COUNT(grade_refuse)], grade_allow_rx[GRADE_COUNT(grade_allow)];

static void grade_rx_init(void) {
    int i;
    for (i = 0; i < GRADE_COUNT(grade_refuse); i++) regcomp(&grade_refuse_rx[i], grade_refuse[i].re, REG_EXTENDED | REG_NOSUB);
    for (i = 0; i < GRADE_COUNT(grade_allow); i++) regcomp(&grade_allow_rx[i], grade_allow[i].re, REG_EXTENDED | REG_NOSUB);
}

/* Why the student's object may not call name; NULL: it may. */
static const char *grade_call_refused(const char *name, char *buf, size_t size) {
    int i;
    for (i = 0; i < GRADE_COUNT(grade_refuse); i++)
        if (!regexec(&grade_refuse_rx[i], name, 0, NULL, 0)) { snprintf(buf, size, grade_refuse[i].why, name); return buf; }
    for (i = 0; i < GRADE_COUNT(grade_allow); i++)
        if (!regexec(&grade_allow_rx[i], name, 0, NULL, 0)) return NULL;
    snprintf(buf, size, "calls %s, which is not on the grader's list of what a submission may call (the C library's math, "
             "memory, string and printf functions, the CUDA runtime, OpenMP: assignments/README.md)", name);
    return buf;
}

/* The C library's own names (libc, libm, libgomp): a submission that
   defines one would replace it for gpudl's reference code too (a fabs
   that returns 0 passes every comparison). Sorted, for bsearch. */
static char **grade_libc_names;
static size_t grade_nlibc;
static int grade_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs a command (argv), its output into out; returns its exit status or -1. */
static int grade_run_limited(char *const argv[], grade_buf *out, int cpu_s, const char *cwd, size_t data_bytes) {
    grade_limits L;
    grade_child c;
    int code;
    memset(&L, 0, sizeof L);
    L.cpu_s = cpu_s; L.wall_s = 3.0 * cpu_s + 30; L.out_keep = 64u << 20; L.out_kill = 256u << 20; L.fsize_bytes = 1ull << 30;
    L.cwd = cwd;
    if (data_bytes) {   /* a student's compile or link: memory, time and output capped (a macro bomb, a flood of errors) */
        L.data_bytes = data_bytes; L.wall_s = 2.0 * cpu_s; L.out_keep = 1u << 20; L.out_kill = 16u << 20; L.fsize_bytes = 256u << 20;
    }
    grade_spawn(argv, &L, NULL, NULL, &c);
    if (out) grade_addn(out, grade_str(&c.out), c.out.n);
    code = c.exited ? c.code : -1;
    if (data_bytes && (c.timed_out || c.flooded || c.sig) && out) {
        char why[200];
        grade_printf(out, "\ngrade: the compiler was stopped: %s\n", c.timed_out ? "it took longer than the grader allows a compile "
                     "(60 s of CPU)" : c.flooded ? "it printed more than 16 MB" : c.sig == SIGKILL || c.sig == SIGSEGV ?
                     "it ran out of the memory the grader allows a compile (2 GB)" : (snprintf(why, sizeof why, "signal %d", c.sig), why));
    }
    grade_child_free(&c);
    return code;
}
static int grade_run_capture(char *const argv[], grade_buf *out, int cpu_s, const char *cwd) {
    return grade_run_limited(argv, out, cpu_s, cwd, 0);
}
#define GRADE_COMPILE_CPU_S 60
#define GRADE_COMPILE_DATA ((size_t)2 << 30)

static void grade_libc_setup(const char *cc) {
    static const char *libs[] = {"libc.so.6", "libm.so.6", "libgomp.so.1"};
    size_t cap = 0, i;
    for (i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        grade_buf path = {0}, syms = {0};
        char arg[64], *line, *save = NULL;
        char *argv1[] = {(char *)"/bin/sh", (char *)"-c", NULL, NULL};
        char cmd[512];
        snprintf(arg, sizeof arg, "-print-file-name=%s", libs[i]);
        snprintf(cmd, sizeof cmd, "nm -D --defined-only \"$(%s %s)\" 2>/dev/null", cc, arg);
        argv1[2] = cmd;
        grade_run_capture(argv1, &syms, 60, NULL);
        for (line = strtok_r(syms.p, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *name = strrchr(line, ' '), *at;
            if (!name || strlen(line) < 3) continue;
            name++;
            if ((at = strchr(name, '@')) != NULL) *at = 0;
            if (!*name) continue;
            if (grade_nlibc == cap) { cap = cap ? 2 * cap : 4096; grade_libc_names = (char **)realloc(grade_libc_names, cap * sizeof(char *)); }
            grade_libc_names[grade_nlibc++] = strdup(name);
        }
        free(path.p); free(syms.p);
    }
    if (grade_nlibc) qsort(grade_libc_names, grade_nlibc, sizeof(char *), grade_cmp_str);
    else fprintf(stderr, "grade: warning: could not list the C library's names (nm -D of %s -print-file-name=libc.so.6): "
                 "a submission that defines one (memcmp, fabsf, ...) is not refused\n", cc);
}
static int grade_is_libc(const char *name) {
    return grade_nlibc && bsearch(&name, grade_libc_names, grade_nlibc, sizeof(char *), grade_cmp_str) != NULL;
}

/* The source, outside comments and literals: no inline assembly (it could
   make system calls that no link-time check sees), no #embed. */
static const char *grade_scan_source(const char *s, size_t n, char *why, size_t size) {
    size_t i = 0;
    int line = 1;
    while (i < n) {
        char ch = s[i];
        if (ch == '\n') { line++; i++; }
        else if (ch == '/' && i + 1 < n && s[i + 1] == '/') { while (i < n && s[i] != '\n') i++; }
        else if (ch == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) { if (s[i] == '\n') line++; i++; }
            i += 2;
        } else if (ch == '"' || ch == '\'') {
            i++;
            while (i < n && s[i] != ch && s[i] != '\n') { if (s[i] == '\\') i++; i++; }
            i++;
        } else if (ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
            size_t j = i;
            char word[32];
            while (j < n && (s[j] == '_' || (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9'))) j++;
            snprintf(word, sizeof word, "%.*s", (int)(j - i < 31 ? j - i : 31), s + i);
            if (!strcmp(word, "asm") || !strcmp(word, "__asm") || !strcmp(word, "__asm__") || !strcmp(word, "embed") ||
                !strcmp(word, "__has_embed") || !strcmp(word, "incbin")) {
                snprintf(why, size, "line %d uses '%s' (inline assembly or embedded files): not allowed in a submission", line, word);
                return why;
            }
            i = j;
        } else i++;
    }
    return NULL;
}

/* ---- the toolchain and the shared objects ----------------------------------- */
typedef struct grade_opts {
    const grade_assignment *a;
    const char *kit, *grade_c, *kernels_cu, *header;   /* the handed-out files */
    const char *cc, *nvcc, *cache, *data, *out_csv, *feedback_dir, *work;
    char cuda_flags[1024];
    int emulated, jobs, train, verbose, timeout_s, epochs, keep, single;
    char emu_include[4096], cuda_root[4096], emu_dir[4096];
    char emu_device[64];
    size_t data_limit;
    uint64_t seed;            /* the grading run's: the cases' inputs (gpudl_check_op draws them from the context's seed) */
} grade_opts;
static grade_opts O;

typedef struct grade_shared { char path[4096]; uint64_t hash; } grade_shared;
static grade_shared grade_runner_o, grade_kernels_o;

/* argv of a compile or link: words of fmt-free pieces; cuda flags split on spaces. */
typedef struct grade_argv { char *v[96]; int n; } grade_argv;
static void grade_arg(grade_argv *a, const char *s) { if (a->n < 94) a->v[a->n++] = strdup(s); a->v[a->n] = NULL; }
static void grade_args_words(grade_argv *a, const char *s) {
    char *tmp = strdup(s), *tok, *save = NULL;
    for (tok = strtok_r(tmp, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) grade_arg(a, tok);
    free(tmp);
}
static void grade_argv_free(grade_argv *a) { int i; for (i = 0; i < a->n; i++) free(a->v[i]); a->n = 0; }
static const char *grade_arch = "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]";

static void grade_argv_compiler(grade_argv *a) {
    if (O.a->device == GPUDL_DEVICE_CUDA) {
        grade_args_words(a, O.nvcc);
        grade_arg(a, "-O2");
        grade_args_words(a, grade_arch);
    } else {
        grade_args_words(a, O.cc);
        grade_arg(a, "-O2");
    }
}

/* Builds (or takes from the cache, when its recorded hash still matches)
   one shared object, and copies it into the run's folder, read-only. */
static int grade_shared_build(grade_shared *sh, const char *name, const char *src, int runner, char *err, size_t errsize) {
    char key_s[64], cached[4096], sum[4096], line[64];
    grade_argv a = {{0}, 0};
    grade_buf log = {0}, text = {0};
    uint64_t key = 0, h;
    int i;
    grade_argv_compiler(&a);
    grade_arg(&a, "-c");
    if (O.a->device == GPUDL_DEVICE_CUDA) { grade_arg(&a, "-Xcompiler"); grade_arg(&a, "-fopenmp"); grade_args_words(&a, O.cuda_flags); }
    else { grade_arg(&a, "-fopenmp"); grade_arg(&a, "-DGPUDL_NO_CUDA"); }
    if (runner) grade_arg(&a, "-DGRADE_RUNNER");
    { char inc[4200]; snprintf(inc, sizeof inc, "-I%s", O.kit); grade_arg(&a, inc); }
    grade_arg(&a, src);
    grade_arg(&a, "-o");
    for (i = 0; i < a.n; i++) key = grade_hash(a.v[i], strlen(a.v[i]) + 1, key);
    grade_read_file(src, &text, 0);
    grade_read_file(O.header, &text, 0);
    key = grade_hash(grade_str(&text), text.n, key);
    free(text.p);
    snprintf(key_s, sizeof key_s, "%016llx", (unsigned long long)key);
    snprintf(cached, sizeof cached, "%s/%s-%s.o", O.cache, name, key_s);
    snprintf(sum, sizeof sum, "%s.sum", cached);
    h = 0;
    if (grade_exists(cached)) {
        grade_buf s = {0};
        if (grade_read_file(sum, &s, 0)) h = strtoull(grade_str(&s), NULL, 16);
        free(s.p);
        if (h && grade_hash_file(cached) != h) {
            fprintf(stderr, "grade: %s does not match the hash recorded when it was built: rebuilding it\n", cached);
            h = 0;
        }
    }
    if (!h) {
        fprintf(stderr, "grade: building %s (once; kept in %s)\n", name, O.cache);
        grade_arg(&a, cached);
        if (grade_run_capture(a.v, &log, 900, NULL) != 0) {
            snprintf(err, errsize, "building %s failed:\n%.3000s", name, grade_str(&log));
            free(log.p); grade_argv_free(&a);
            return 0;
        }
        h = grade_hash_file(cached);
        snprintf(line, sizeof line, "%016llx\n", (unsigned long long)h);
        grade_write_file(sum, line, strlen(line));
    }
    free(log.p); grade_argv_free(&a);
    snprintf(sh->path, sizeof sh->path, "%s/shared/%s.o", O.work, name);
    if (!grade_copy(cached, sh->path)) { snprintf(err, errsize, "cannot copy %s", cached); return 0; }
    chmod(sh->path, 0444);
    sh->hash = grade_hash_file(sh->path);
    if (sh->hash != h) { snprintf(err, errsize, "%s changed while it was copied", cached); return 0; }
    return 1;
}

/* ---- grading one submission ------------------------------------------------ */
#define GRADE_MAX_SOURCE (4u << 20)   /* bytes of a submission's file */
typedef enum grade_status { GRADE_OK, GRADE_CRASH, GRADE_TIMEOUT, GRADE_COMPILE, GRADE_REFUSED, GRADE_ERROR } grade_status;
static const char *grade_status_names[] = {"ok", "crash", "timeout", "compile error", "refused", "grader error"};

/* ---- the judge: gpudl's check here, each call of the student's code in a child ---- */
/* The grader runs gpudl_check_op itself on a CPU context whose ops are the
   proxies below. Each proxy sends its call to a runner child (grade_call),
   which runs the student's function and sends back the outputs; gpudl's
   check then compares them, here, with its float64 reference. On the
   emulated device, calls up to GRADE_SMALL_CALL bytes go, in turn, to two
   children that run them under a shuffled schedule (CUEMU_SCHEDULE=shuffle,
   a seed drawn per child, so several seeds per op: blocks in random order,
   threads switched at shared memory accesses), so a missing barrier gives
   wrong values; larger ones (the
   large groups, where the shuffle would cost seconds) to one on the
   default schedule. A child that crashes, faults, times out or answers
   what it was not asked loses the group of the case in flight; the next
   call starts a fresh one. */
#define GRADE_SMALL_CALL (256u << 10)

typedef struct grade_case_res {
    gpudl_check_case kase;
    int     status, first;           /* the student's status; first: the op's first failure, described below */
    int64_t elem;                    /* the failing element (-1: the call failed) */
    double  expected, got;
    char    where[96], inputs[160], text[256];
} grade_case_res;
#define GRADE_NOT_CALLED 1000   /* status of a case that never called the student's function */

typedef struct grade_group_lost { char group[24], shape[64], why[320]; } grade_group_lost;
typedef struct grade_op_res {
    int      implemented;
    char     whole[400];                 /* a reason every group of the op fails */
    int      have[GPUDL_CHECK_MAX_CASES];
    grade_case_res cases[GPUDL_CHECK_MAX_CASES];
    int      ncases;
    grade_group_lost lost[GRADE_MAX_RULES * 2];
    int      nlost;
    int64_t  calls, unsupported;
    int      ended, starts;              /* the check ran to its end; cases begun (the student's function about to run) */
} grade_op_res;

typedef struct grade_sub {
    const char *path;
    char     name[256];
    grade_status status;
    char     reason[512];
    int      got, of;
    int      group_pts[GRADE_MAX_CHECKS][GRADE_MAX_RULES];
    char     train_acc[32];
    double   seconds;
    grade_buf fb;                        /* the feedback */
} grade_sub;

static double grade_deadline;   /* the submission's time budget ends (grade_now's clock) */

static void grade_set_status(grade_sub *s, grade_status st, const char *why) {
    static const int rank[] = {0, 1, 2, 3, 4, 5};
    if (rank[st] > rank[s->status]) {
        s->status = st;
        if (why && !s->reason[0]) snprintf(s->reason, sizeof s->reason, "%s", why);
    }
}

static grade_limits grade_runner_limits(const char *sandbox, double wall_s) {
    grade_limits L;
    memset(&L, 0, sizeof L);
    L.cpu_s = O.timeout_s;
    L.wall_s = wall_s;
    L.data_bytes = O.data_limit;
    L.fsize_bytes = 16u << 20;
    L.out_keep = 8192;
    L.out_kill = 8u << 20;
    L.sandbox = 1;
    L.cwd = sandbox;
    return L;
}

/* The status a child's end gives the submission. */
static void grade_child_status(grade_sub *s, const grade_child *c, const char *why) {
    if (!why[0]) return;
    if (c->sig == SIGSYS) grade_set_status(s, GRADE_REFUSED, why);
    else if (c->timed_out) grade_set_status(s, GRADE_TIMEOUT, why);
    else grade_set_status(s, GRADE_CRASH, why);
}

/* A child's text in the grader's own lines: printable ASCII only. */
static void grade_clean(char *s) { for (; *s; s++) if (*s < 32 || *s > 126) *s = '?'; }

static struct {
    grade_sub *s;
    const char *sandbox, *runner;
    const grade_check *check;
    grade_op_res *r;
    grade_buf *printed;                  /* what the children printed (quoted) */
    gpudl_check_report *report;          /* gpudl's check, being filled */
    grade_child srv[3];                  /* 0: the default schedule (every call off the emulated device); 1, 2: shuffled,
                                            each with a seed of its own, taking the small calls in turn */
    int      small_calls;
    int      nstarts;
    const char *tool;                    /* the sanitizer's rerun: its tool, the one case it reruns, what it said */
    int      only;
    grade_buf tool_out;
    int      sent, started;              /* cases flushed into r; the case in flight */
    int      status[GPUDL_CHECK_MAX_CASES], skipped[GPUDL_CHECK_MAX_CASES];
    char     lost[1024];                 /* groups lost: "|g1|g2|" */
} J;

/* The cases gpudl's check has closed since the last call, into J.r. A
   skipped case's failure is no failure: the next one is recorded instead. */
static void grade_judge_flush(void) {
    gpudl_check_report *rep = J.report;
    while (J.sent < rep->ncases && J.sent < GPUDL_CHECK_MAX_CASES) {
        int j = J.sent++;
        grade_case_res *m = &J.r->cases[j];
        if (rep->first_case == j && J.skipped[j]) { rep->first_case = -1; rep->status_msg[0] = 0; }
        if (J.skipped[j]) continue;
        memset(m, 0, sizeof *m);
        m->kase = rep->cases[j];
        m->status = J.status[j];
        m->elem = -1;
        if (rep->first_case == j) {
            m->first = 1;
            m->elem = rep->index;
            m->expected = rep->expected;
            m->got = rep->got;
            memcpy(m->where, rep->where, sizeof m->where);
            memcpy(m->inputs, rep->inputs, sizeof m->inputs);
            snprintf(m->text, sizeof m->text, "%s", rep->status_msg);
        }
        J.r->have[j] = 1;
        if (j + 1 > J.r->ncases) J.r->ncases = j + 1;
    }
}

/* What a child printed goes to the feedback (or, rerun under a sanitizer, to its report). */
static void grade_judge_output(const grade_child *c) {
    if (!c->out.n) return;
    if (J.tool) grade_addn(&J.tool_out, grade_str(&c->out), c->out.n);
    else if (J.printed->n < 4096) grade_quote(J.printed, grade_str(&c->out), c->out.n, 4096 - J.printed->n);
}

/* The case in flight loses its group: why (NULL: how child k ended), in the feedback's row. */
static void grade_judge_lose(int k, int idx, const char *why_given) {
    grade_child *c = &J.srv[k];
    char why[400] = "";
    if (c->started) {
        grade_finish(c, 0.5);
        grade_judge_output(c);
        grade_child_why(c, &c->L, why, sizeof why);
    }
    if (why_given) {
        snprintf(why, sizeof why, "%s", why_given);
        grade_set_status(J.s, GRADE_CRASH, why);
    } else {
        if (!why[0] && c->started && c->exited)
            snprintf(why, sizeof why, "the process ended (exit status %d) in the middle of the check: exit() in your code?", c->code);
        if (!why[0]) snprintf(why, sizeof why, "the check did not finish");
        if (c->started) grade_child_status(J.s, c, why);
        if (J.s->status == GRADE_OK) grade_set_status(J.s, GRADE_CRASH, why);
    }
    grade_child_free(c);
    J.skipped[idx] = 1;
    J.status[idx] = GPUDL_ERR_INVALID_ARG;
    if (J.r->nlost < (int)(sizeof J.r->lost / sizeof J.r->lost[0])) {
        grade_group_lost *g = &J.r->lost[J.r->nlost++];
        snprintf(g->group, sizeof g->group, "%s", J.report->cases[idx].group);
        snprintf(g->shape, sizeof g->shape, "%s", J.report->cases[idx].shape);
        snprintf(g->why, sizeof g->why, "%s", why);
    }
    if (strlen(J.lost) + strlen(J.report->cases[idx].group) + 2 < sizeof J.lost) {
        strcat(J.lost, J.report->cases[idx].group);
        strcat(J.lost, "|");
    }
}

/* Before a call: the case in flight (gpudl_check_op opened it at report->ncases), or -1: not to be run. */
static int grade_judge_case_begin(void) {
    gpudl_check_report *rep = J.report;
    int idx = rep->ncases;
    grade_judge_flush();
    if (idx >= GPUDL_CHECK_MAX_CASES) return -1;
    if (idx != J.started) {
        char key[32];
        J.started = idx;
        J.status[idx] = GRADE_NOT_CALLED;
        snprintf(key, sizeof key, "|%s|", rep->cases[idx].group);
        J.skipped[idx] = (J.only >= 0 && idx != J.only) || strstr(J.lost, key) != NULL;
        if (!J.skipped[idx] && grade_now() >= grade_deadline) {
            grade_judge_lose(0, idx, "not checked: the submission used up its time budget (10 x --timeout)");
            return -1;
        }
        if (!J.skipped[idx]) J.r->starts++;
    }
    return J.skipped[idx] ? -1 : idx;
}

/* A runner child for calls: k 1 and 2 on the shuffled schedule; under J.tool the emulator's compute-sanitizer. */
static int grade_judge_start(int k) {
    char *argv[16], seed_s[64];
    const char *env[4];
    int n = 0, e = 0;
    double left = grade_deadline - grade_now();
    grade_limits L = grade_runner_limits(J.sandbox, J.tool ? O.timeout_s + 10.0 : 3.0 * O.timeout_s + 10);
    if (left < L.wall_s) L.wall_s = left;
    if (L.wall_s <= 0.5) return 0;
    L.serve = 1;
    if (J.tool) {
        L.out_keep = 32768;
        argv[n++] = grade_sanitizer_path; argv[n++] = (char *)"--tool"; argv[n++] = (char *)J.tool;
        argv[n++] = (char *)"--print-limit"; argv[n++] = (char *)"3";
        if (!strcmp(J.tool, "initcheck")) { argv[n++] = (char *)"--initcheck-address-space"; argv[n++] = (char *)"all"; }   /* __shared__ too */
    }
    argv[n++] = (char *)J.runner; argv[n++] = (char *)"--child"; argv[n++] = (char *)"serve";
    argv[n++] = (char *)"--assignment"; argv[n++] = (char *)O.a->name; argv[n] = NULL;
    if (O.emulated) env[e++] = "CUEMU_BOUNDS=exact";   /* a read one element past an allocation faults */
    if (k >= 1) {
        env[e++] = "CUEMU_SCHEDULE=shuffle";
        snprintf(seed_s, sizeof seed_s, "CUEMU_SEED=%llu", (unsigned long long)(grade_random64() >> 1));
        env[e++] = seed_s;
    }
    env[e] = NULL;
    J.nstarts++;
    return grade_start(argv, &L, J.sandbox, NULL, env, &J.srv[k]);
}

static void grade_take(grade_buf *b, size_t n) {
    if (n >= b->n) { b->n = 0; return; }
    memmove(b->p, b->p + n, b->n - n);
    b->n -= n;
}

/* One call of the student's function: q's sizes and scalars, ptr its
   buffers (gpudl_ops' order), in the child; the outputs back into ptr. */
static gpudl_status grade_judge_call(gpudl_op op, grade_call *q, void *const *ptr) {
    int idx = grade_judge_case_begin(), i, j, k;
    size_t nin = sizeof *q, nout = 0, off;
    char *msg, why[400];
    grade_back b;
    gpudl_status st;
    grade_child *c;
    if (idx < 0) return GPUDL_ERR_INVALID_ARG;   /* its group is lost already, or it is not the case rerun */
    q->magic = GRADE_MAGIC;
    q->op = (int32_t)op;
    for (i = 0; i < q->nbuf; i++) {   /* in-place buffers go once, as the earliest, returned when either is written */
        q->same[i] = -1;
        if (!ptr[i]) { q->role[i] = GRADE_BUF_NONE; continue; }
        for (j = 0; j < i; j++)
            if (q->role[j] != GRADE_BUF_NONE && q->same[j] < 0 && ptr[j] == ptr[i]) {
                q->same[i] = j;
                if (q->role[i] == GRADE_BUF_OUT) q->role[j] = GRADE_BUF_OUT;
                if (q->bytes[i] > q->bytes[j]) q->bytes[j] = q->bytes[i];
                break;
            }
    }
    for (i = 0; i < q->nbuf; i++)
        if (q->role[i] != GRADE_BUF_NONE && q->same[i] < 0) {
            nin += (size_t)q->bytes[i];
            if (q->role[i] == GRADE_BUF_OUT) nout += (size_t)q->bytes[i];
        }
    k = O.emulated && !J.tool && nin <= GRADE_SMALL_CALL ? 1 + (J.small_calls++ & 1) : 0;
    c = &J.srv[k];
    if (!c->pid && !grade_judge_start(k)) {
        grade_judge_lose(k, idx, grade_now() >= grade_deadline - 0.5 ? "not checked: the submission used up its time "
                         "budget (10 x --timeout)" : c->tampered ? NULL : "the grader could not start a process");
        return GPUDL_ERR_INVALID_ARG;
    }
    if (c->back.n) {
        grade_judge_lose(k, idx, "REFUSED: your code wrote on the grader's channel (fd 3) what the grader did not ask for");
        grade_set_status(J.s, GRADE_REFUSED, "your code wrote on the grader's channel (fd 3)");
        return GPUDL_ERR_INVALID_ARG;
    }
    if (!(msg = (char *)malloc(nin))) { grade_judge_lose(k, idx, "the grader ran out of memory"); return GPUDL_ERR_INVALID_ARG; }
    memcpy(msg, q, sizeof *q);
    for (i = 0, off = sizeof *q; i < q->nbuf; i++)
        if (q->role[i] != GRADE_BUF_NONE && q->same[i] < 0) { memcpy(msg + off, ptr[i], (size_t)q->bytes[i]); off += (size_t)q->bytes[i]; }
    i = grade_pump(c, msg, nin, sizeof b);
    free(msg);
    if (!i) { grade_judge_lose(k, idx, NULL); return GPUDL_ERR_INVALID_ARG; }
    memcpy(&b, c->back.p, sizeof b);
    grade_take(&c->back, sizeof b);
    b.text[sizeof b.text - 1] = 0;
    grade_clean(b.text);
    if (b.magic != GRADE_MAGIC || b.kind != GRADE_BACK_CALL) {
        grade_judge_lose(k, idx, "REFUSED: your code wrote on the grader's channel (fd 3) what the grader did not ask for");
        grade_set_status(J.s, GRADE_REFUSED, "your code wrote on the grader's channel (fd 3)");
        return GPUDL_ERR_INVALID_ARG;
    }
    if (b.fault) {
        snprintf(why, sizeof why, "your kernel faulted: %s; a fault is sticky (every later CUDA call fails), so the grader "
                 "went on in a fresh process", b.text);
        grade_judge_lose(k, idx, why);
        return GPUDL_ERR_INVALID_ARG;
    }
    if (!grade_pump(c, NULL, 0, nout)) { grade_judge_lose(k, idx, NULL); return GPUDL_ERR_INVALID_ARG; }
    for (i = 0, off = 0; i < q->nbuf; i++)
        if (q->role[i] == GRADE_BUF_OUT && q->same[i] < 0) {
            memcpy(ptr[i], c->back.p + off, (size_t)q->bytes[i]);
            off += (size_t)q->bytes[i];
        }
    grade_take(&c->back, nout);
    st = (gpudl_status)b.status;
    if ((int)op == (int)J.check->op) {
        J.r->calls++;
        J.status[idx] = st;
        if (st == GPUDL_ERR_UNSUPPORTED) { J.r->unsupported++; return GPUDL_ERR_INVALID_ARG; }   /* it must do the case itself */
    }
    return st;
}

/* The proxies: each op's pointer arguments in gpudl_ops' order, and their sizes. */
#define GRADE_ARG(i, ptr, nbytes, r) (p[i] = (void *)(ptr), q.bytes[i] = (int64_t)(nbytes), q.role[i] = (r))
#define GRADE_F(n) ((n) * (int64_t)sizeof(float))
static gpudl_status judge_gemm(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                               float alpha, const float *A, const float *B, float beta, float *C) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.trans_a = trans_a; q.trans_b = trans_b; q.M = M; q.N = N; q.K = K; q.alpha = alpha; q.beta = beta; q.nbuf = 3;
    GRADE_ARG(0, A, GRADE_F(M * K), GRADE_BUF_IN); GRADE_ARG(1, B, GRADE_F(K * N), GRADE_BUF_IN);
    GRADE_ARG(2, C, GRADE_F(M * N), GRADE_BUF_OUT);
    return grade_judge_call(GPUDL_OP_GEMM, &q, p);
}
static gpudl_status judge_act_forward(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.act = (int32_t)act; q.alpha = alpha; q.M = n; q.nbuf = 2;
    GRADE_ARG(0, y, GRADE_F(n), GRADE_BUF_OUT); GRADE_ARG(1, x, GRADE_F(n), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_ACT_FORWARD, &q, p);
}
static gpudl_status judge_act_backward(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                       const float *x, const float *y, int64_t n) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.act = (int32_t)act; q.alpha = alpha; q.M = n; q.nbuf = 4;
    GRADE_ARG(0, dx, GRADE_F(n), GRADE_BUF_OUT); GRADE_ARG(1, dy, GRADE_F(n), GRADE_BUF_IN);
    GRADE_ARG(2, x, GRADE_F(n), GRADE_BUF_IN); GRADE_ARG(3, y, GRADE_F(n), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_ACT_BACKWARD, &q, p);
}
static gpudl_status judge_xent_forward(void *user, void *stream, float *loss, float *probs, const float *logits,
                                       const int32_t *labels, int64_t N, int64_t K) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.M = N; q.K = K; q.nbuf = 4;
    GRADE_ARG(0, loss, GRADE_F(1), GRADE_BUF_OUT); GRADE_ARG(1, probs, GRADE_F(N * K), GRADE_BUF_OUT);
    GRADE_ARG(2, logits, GRADE_F(N * K), GRADE_BUF_IN); GRADE_ARG(3, labels, N * (int64_t)sizeof(int32_t), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_XENT_FORWARD, &q, p);
}
static gpudl_status judge_xent_backward(void *user, void *stream, float *dlogits, const float *probs, const int32_t *labels,
                                        int64_t N, int64_t K, float scale) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.M = N; q.K = K; q.scale = scale; q.nbuf = 3;
    GRADE_ARG(0, dlogits, GRADE_F(N * K), GRADE_BUF_OUT); GRADE_ARG(1, probs, GRADE_F(N * K), GRADE_BUF_IN);
    GRADE_ARG(2, labels, N * (int64_t)sizeof(int32_t), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_XENT_BACKWARD, &q, p);
}
static gpudl_status judge_maxpool_forward(void *user, void *stream, float *y, const float *x, const gpudl_pool_shape *s) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.pool = *s; q.nbuf = 2;
    GRADE_ARG(0, y, GRADE_F(s->NC * s->Ho * s->Wo), GRADE_BUF_OUT); GRADE_ARG(1, x, GRADE_F(s->NC * s->H * s->W), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_MAXPOOL_FORWARD, &q, p);
}
static gpudl_status judge_maxpool_backward(void *user, void *stream, float *dx, const float *dy, const float *x,
                                           const gpudl_pool_shape *s) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.pool = *s; q.nbuf = 3;
    GRADE_ARG(0, dx, GRADE_F(s->NC * s->H * s->W), GRADE_BUF_OUT); GRADE_ARG(1, dy, GRADE_F(s->NC * s->Ho * s->Wo), GRADE_BUF_IN);
    GRADE_ARG(2, x, GRADE_F(s->NC * s->H * s->W), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_MAXPOOL_BACKWARD, &q, p);
}
static gpudl_status judge_attn_forward(void *user, void *stream, float *att, const float *scores, int64_t L, int64_t T) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.M = L; q.N = T; q.nbuf = 2;
    GRADE_ARG(0, att, GRADE_F(L * T * T), GRADE_BUF_OUT); GRADE_ARG(1, scores, GRADE_F(L * T * T), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_ATTN_SOFTMAX_FORWARD, &q, p);
}
static gpudl_status judge_attn_backward(void *user, void *stream, float *ds, const float *dp, const float *att, int64_t L,
                                        int64_t T) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.M = L; q.N = T; q.nbuf = 3;
    GRADE_ARG(0, ds, GRADE_F(L * T * T), GRADE_BUF_OUT); GRADE_ARG(1, dp, GRADE_F(L * T * T), GRADE_BUF_IN);
    GRADE_ARG(2, att, GRADE_F(L * T * T), GRADE_BUF_IN);
    return grade_judge_call(GPUDL_OP_ATTN_SOFTMAX_BACKWARD, &q, p);
}
static gpudl_status judge_gemm_f16(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                                   float alpha, const uint16_t *A, const uint16_t *B, float beta, float *C) {
    grade_call q; void *p[GRADE_NBUF];
    (void)user; (void)stream;
    memset(&q, 0, sizeof q);
    q.trans_a = trans_a; q.trans_b = trans_b; q.M = M; q.N = N; q.K = K; q.alpha = alpha; q.beta = beta; q.nbuf = 3;
    GRADE_ARG(0, A, M * K * (int64_t)sizeof(uint16_t), GRADE_BUF_IN); GRADE_ARG(1, B, K * N * (int64_t)sizeof(uint16_t), GRADE_BUF_IN);
    GRADE_ARG(2, C, GRADE_F(M * N), GRADE_BUF_OUT);
    return grade_judge_call(GPUDL_OP_GEMM_F16, &q, p);
}
#undef GRADE_ARG
#undef GRADE_F

/* Checks op i of the assignment: gpudl_check_op here, on the CPU, with a
   proxy for each op the student set (fields: the probe's bits), from the
   grading run's seed. tool: rerun the case only under that sanitizer. */
static void grade_judge_op(grade_sub *s, const char *sandbox, const char *runner, int i, grade_op_res *r, grade_buf *printed,
                           int64_t fields, const char *tool, int only) {
    static gpudl_check_report rep;
    const grade_check *c = &O.a->checks[i];
    gpudl_ctx_desc d;
    gpudl_ctx *ctx = NULL;
    gpudl_ops o;
    gpudl_status st;
    int k;
    memset(&J, 0, sizeof J);
    J.s = s; J.sandbox = sandbox; J.runner = runner; J.check = c; J.r = r; J.printed = printed; J.report = &rep;
    J.tool = tool; J.only = only; J.started = -1;
    snprintf(J.lost, sizeof J.lost, "|");
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    d.log = gpudl_log_quiet;
    d.seed = O.seed;           /* the cases' inputs: drawn anew for each grading run */
    if ((st = gpudl_ctx_create(&d, &ctx)) != GPUDL_OK) {
        snprintf(r->whole, sizeof r->whole, "the grader could not make its CPU context: %s", gpudl_status_string(st));
        grade_set_status(s, GRADE_ERROR, r->whole);
        return;
    }
    memset(&o, 0, sizeof o);
#define GRADE_PROXY(op, field, fn) if ((fields >> (op)) & 1) o.field = fn
    GRADE_PROXY(GPUDL_OP_GEMM, gemm, judge_gemm);
    GRADE_PROXY(GPUDL_OP_ACT_FORWARD, act_forward, judge_act_forward);
    GRADE_PROXY(GPUDL_OP_ACT_BACKWARD, act_backward, judge_act_backward);
    GRADE_PROXY(GPUDL_OP_XENT_FORWARD, softmax_xent_forward, judge_xent_forward);
    GRADE_PROXY(GPUDL_OP_XENT_BACKWARD, softmax_xent_backward, judge_xent_backward);
    GRADE_PROXY(GPUDL_OP_MAXPOOL_FORWARD, maxpool_forward, judge_maxpool_forward);
    GRADE_PROXY(GPUDL_OP_MAXPOOL_BACKWARD, maxpool_backward, judge_maxpool_backward);
    GRADE_PROXY(GPUDL_OP_ATTN_SOFTMAX_FORWARD, attn_softmax_forward, judge_attn_forward);
    GRADE_PROXY(GPUDL_OP_ATTN_SOFTMAX_BACKWARD, attn_softmax_backward, judge_attn_backward);
    GRADE_PROXY(GPUDL_OP_GEMM_F16, gemm_f16, judge_gemm_f16);
#undef GRADE_PROXY
    if ((st = gpudl_ctx_set_ops(ctx, GPUDL_DEVICE_CPU, &o)) == GPUDL_OK) st = gpudl_check_op(ctx, c->op, c->act, &rep);
    grade_judge_flush();
    r->ended = 1;
    if (st != GPUDL_OK) snprintf(r->whole, sizeof r->whole, "gpudl_check_op: %s: %.200s", gpudl_status_string(st), gpudl_ctx_last_error(ctx));
    for (k = 0; k < 3; k++)
        if (J.srv[k].started) {
            grade_finish(&J.srv[k], 2.0);
            grade_judge_output(&J.srv[k]);
            grade_child_free(&J.srv[k]);
        }
    gpudl_ctx_destroy(ctx);
}

/* On the emulated device, racecheck on each op, and initcheck on an op
   that computed wrong values: the first case that did (else the op's first
   case) rerun under the emulator's compute-sanitizer. What the tool reports
   (a race, a read of uninitialised device memory, with the source line)
   goes into the feedback. It runs in the student's process, so no points
   depend on it: a wrong value is the evidence, found by the shuffled
   schedule and the comparison above. */
static void grade_sanitize(grade_sub *s, const char *sandbox, const char *runner, int i, const grade_op_res *r, int64_t fields) {
    static const char *tools[] = {"racecheck", "initcheck"};
    int k, t, first = -1, failed;
    if (!O.emulated || !grade_sanitizer_path[0] || access(grade_sanitizer_path, X_OK) != 0) return;
    for (k = 0; k < r->ncases && first < 0; k++)   /* the first case that computed wrong values */
        if (r->have[k] && !r->cases[k].kase.passed && r->cases[k].status == GPUDL_OK) first = k;
    failed = first >= 0;
    for (k = 0; k < r->ncases && first < 0; k++)   /* else the first case that ran */
        if (r->have[k] && r->cases[k].status == GPUDL_OK) first = k;
    if (first < 0) return;
    for (t = 0; t < (failed ? 2 : 1) && grade_now() < grade_deadline; t++) {
        grade_op_res *scratch = (grade_op_res *)calloc(1, sizeof *scratch);
        grade_buf none = {0};
        grade_sub ignore;
        const char *p, *e;
        int lines = 0;
        if (!scratch) return;
        memset(&ignore, 0, sizeof ignore);
        grade_judge_op(&ignore, sandbox, runner, i, scratch, &none, fields, tools[t], first);
        for (p = grade_str(&J.tool_out); *p && lines < 12; p = *e ? e + 1 : e) {
            e = strchr(p, '\n');
            if (!e) e = p + strlen(p);
            if (strncmp(p, "=========", 9) || (e - p) < 11) continue;
            if (strstr(p, "COMPUTE-SANITIZER") && strstr(p, "COMPUTE-SANITIZER") < e) continue;
            if (strstr(p, "ERROR SUMMARY: 0 errors") && strstr(p, "ERROR SUMMARY: 0 errors") < e) continue;
            if (strstr(p, " 0 hazards") && strstr(p, " 0 hazards") < e) continue;   /* says nothing */
            if (!lines++)
                grade_printf(&s->fb, "       compute-sanitizer --tool %s on %s's case %s, %s (the emulated device):\n", tools[t],
                             O.a->checks[i].name, r->cases[first].kase.group, r->cases[first].kase.shape);
            grade_printf(&s->fb, "         %.*s\n", (int)(e - p < 200 ? e - p : 200), p);
        }
        free(J.tool_out.p); J.tool_out.p = NULL; J.tool_out.n = J.tool_out.cap = 0;
        free(none.p); free(scratch);
    }
}

static void grade_child_output(grade_buf *fb, const char *what, const grade_child *c) {
    if (c->out.n == 0) return;
    grade_printf(fb, "  %s printed%s:\n", what, c->out_total > c->out.n ? " (the start of it)" : "");
    grade_quote(fb, grade_str(&c->out), c->out.n, 4096);
}

static const grade_rule *grade_rule_for(const grade_check *c, const char *g) {
    int i;
    for (i = 0; i < grade_nrules(c); i++)
        if (!strcmp(c->rules[i].group, g)) return &c->rules[i];
    return NULL;
}

static void grade_row(grade_buf *fb, const char *op, const char *group, int got, int of, const char *hint) {
    char name[64];
    snprintf(name, sizeof name, "%s: %s", op, group);
    if (got == of) grade_printf(fb, "%-38s %2d/%-2d  pass\n", name, got, of);
    else grade_printf(fb, "%-38s %2d/%-2d  FAIL  %s\n", name, got, of, hint);
}

/* Scores op i's groups from the records: a group passes when every one of
   its cases passed. The hint of a group is shown only when a case of it
   computed wrong values (the evidence the hint is about); a call that
   failed shows its message, a crash or a timeout its reason. */
static void grade_score_op(grade_sub *s, int i, const grade_op_res *r) {
    const grade_check *c = &O.a->checks[i];
    grade_buf *fb = &s->fb;
    char buf[480];
    const char *whole = NULL;
    int g, k, detail = 0;
    if (!r->implemented) { snprintf(buf, sizeof buf, "not implemented: student_ops leaves ops->%s NULL", c->field); whole = buf; }
    else if (r->whole[0]) whole = r->whole;
    else if (r->calls == 0 && r->starts == 0) whole = "your function was never called";
    else if (r->unsupported > 0)
        grade_printf(fb, "       note (%s): your function answered GPUDL_ERR_UNSUPPORTED %lld time(s): it must do each case itself\n",
                     c->name, (long long)r->unsupported);
    for (g = 0; g < grade_nrules(c); g++) {
        const grade_rule *rule = &c->rules[g];
        int seen = 0, pass = 1, values = 0, status_fail = -1, lost = -1;
        const char *hint;
        s->of += rule->points;
        if (whole) {
            grade_row(fb, c->name, rule->group, 0, rule->points, g ? "(as above)" : whole);
            continue;
        }
        for (k = 0; k < r->nlost; k++)
            if (!strcmp(r->lost[k].group, rule->group)) lost = k;
        for (k = 0; k < r->ncases; k++) {
            const grade_case_res *m = &r->cases[k];
            if (!r->have[k] || strcmp(m->kase.group, rule->group)) continue;
            seen = 1;
            if (!m->kase.passed) {
                pass = 0;
                if (m->status == GPUDL_OK) values = 1;
                else if (status_fail < 0) status_fail = k;
            }
        }
        if (lost >= 0) {
            snprintf(buf, sizeof buf, "%s (case %s)", r->lost[lost].why, r->lost[lost].shape);
            grade_row(fb, c->name, rule->group, 0, rule->points, buf);
            continue;
        }
        if (!seen) {
            grade_row(fb, c->name, rule->group, 0, rule->points, "this gpudl's check has no such group: update grade.c's table");
            continue;
        }
        if (pass) { s->got += rule->points; s->group_pts[i][g] = rule->points; }
        if (values) hint = rule->hint;
        else if (status_fail >= 0) {
            const grade_case_res *m = &r->cases[status_fail];
            snprintf(buf, sizeof buf, "your function returned an error (status %d)%s%.300s", m->status,
                     m->first && m->text[0] ? ": " : "", m->first ? m->text : "");
            hint = buf;
        } else hint = "";
        grade_row(fb, c->name, rule->group, pass ? rule->points : 0, rule->points, hint);
        if (!pass && values && !detail)
            for (k = 0; k < r->ncases; k++) {
                const grade_case_res *m = &r->cases[k];
                if (!r->have[k] || !m->first || strcmp(m->kase.group, rule->group)) continue;
                grade_printf(fb, "       first failure: %s, %s\n", m->kase.group, m->kase.shape);
                if (m->where[0]) grade_printf(fb, "         at %s: expected %.9g, got %.9g\n", m->where, m->expected, m->got);
                if (m->inputs[0]) grade_printf(fb, "         inputs: %s\n", m->inputs);
                detail = 1;
            }
    }
    if (whole) return;
    for (k = 0; k < r->ncases; k++) {   /* groups the table does not know: 1 point each */
        const char *gname = r->cases[k].kase.group;
        int j, pass = 1;
        if (!r->have[k] || grade_rule_for(c, gname)) continue;
        for (j = 0; j < k; j++)
            if (r->have[j] && !strcmp(r->cases[j].kase.group, gname)) break;
        if (j < k) continue;
        for (j = k; j < r->ncases; j++)
            if (r->have[j] && !strcmp(r->cases[j].kase.group, gname) && !r->cases[j].kase.passed) pass = 0;
        s->of += 1;
        s->got += pass;
        grade_row(fb, c->name, gname, pass, 1, "a group new to this grader: compare with gpudl_ops in gpudl.h");
    }
}

/* The dependency file (-MD): every header the compile read must be in
   the submission's folder or the system's and the toolchain's. */
static const char *grade_check_deps(const char *sandbox, const char *dfile, char *why, size_t size) {
    grade_buf d = {0};
    char *p, *tok, *save = NULL, real_sb[4096];
    const char *ok_dirs[6];
    int nok = 0, first = 1;
    if (!realpath(sandbox, real_sb)) snprintf(real_sb, sizeof real_sb, "%s", sandbox);
    ok_dirs[nok++] = real_sb;
    ok_dirs[nok++] = "/usr/";
    ok_dirs[nok++] = "/lib/";
    if (O.emu_include[0]) ok_dirs[nok++] = O.emu_include;
    if (O.cuda_root[0]) ok_dirs[nok++] = O.cuda_root;
    if (!grade_read_file(dfile, &d, 0)) { free(d.p); return NULL; }   /* no dependency file: the compile said why */
    for (p = d.p; *p; p++) if (*p == '\\' && (p[1] == '\n' || p[1] == '\r')) { p[0] = ' '; }
    for (tok = strtok_r(d.p, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        char full[8192], real[4096];
        int j, ok = 0;
        size_t len = strlen(tok);
        if (first || (len && tok[len - 1] == ':')) { first = 0; continue; }
        if (tok[0] == '/') snprintf(full, sizeof full, "%s", tok); else snprintf(full, sizeof full, "%s/%s", sandbox, tok);
        if (!realpath(full, real)) snprintf(real, sizeof real, "%s", full);
        for (j = 0; j < nok; j++) {
            size_t l = strlen(ok_dirs[j]);
            if (!strncmp(real, ok_dirs[j], l) && (ok_dirs[j][l - 1] == '/' || real[l] == '/' || real[l] == 0)) ok = 1;
        }
        if (!ok) {
            snprintf(why, size, "includes %s, which is not among the files a student is given (only gpudl.h and the "
                     "system's headers)", tok);
            free(d.p);
            return why;
        }
    }
    free(d.p);
    return NULL;
}

/* The object's symbols: what it calls, what it defines, its sections.
   nm runs twice in the symbol table's order (-p), mangled and demangled
   (-C), so that a C++ name is judged by its own name, not by the types
   of its parameters (relu(gpudl_act, ...) defines no gpudl function). */
static int grade_nm_line(char *line, char *type, const char **name) {
    if (strlen(line) > 19 && line[16] == ' ' && line[18] == ' ') { *type = line[17]; *name = line + 19; return 1; }
    if (strlen(line) > 19 && line[0] == ' ') { char *t = line; while (*t == ' ') t++; *type = t[0]; *name = t + 2; return 1; }
    return 0;
}
static const char *grade_check_object(const char *sandbox, char *why, size_t size) {
    grade_buf nm = {0}, nmc = {0}, sec = {0};
    char *line, *linec, *save = NULL, *savec = NULL;
    char *nm_argv[] = {(char *)"nm", (char *)"-p", (char *)"student.o", NULL};
    char *nmc_argv[] = {(char *)"nm", (char *)"-p", (char *)"-C", (char *)"student.o", NULL};
    char *re_argv[] = {(char *)"readelf", (char *)"-SW", (char *)"student.o", NULL};
    const char *bad = NULL;
    if (grade_run_capture(nm_argv, &nm, 60, sandbox) != 0 || grade_run_capture(nmc_argv, &nmc, 60, sandbox) != 0) {
        snprintf(why, size, "nm could not read the object");
        free(nm.p); free(nmc.p);
        return why;
    }
    if (grade_run_capture(re_argv, &sec, 60, sandbox) == 0 && strstr(grade_str(&sec), ".preinit_array")) {
        snprintf(why, size, "has a .preinit_array section (code that would run before the grader's sandbox)");
        bad = why;
    }
    for (line = strtok_r(nm.p, "\n", &save), linec = strtok_r(nmc.p, "\n", &savec); line && !bad;
         line = strtok_r(NULL, "\n", &save), linec = linec ? strtok_r(NULL, "\n", &savec) : NULL) {
        char type, typec, name[1024], own[1024];
        const char *sym, *symc;
        if (!grade_nm_line(line, &type, &sym)) continue;
        snprintf(name, sizeof name, "%s", sym);
        snprintf(own, sizeof own, "%s", linec && grade_nm_line(linec, &typec, &symc) ? symc : sym);
        own[strcspn(own, "(<")] = 0;   /* the function's own (qualified) name, without parameters */
        if (type == 'U' || type == 'w' || type == 'v') {   /* a weak reference ('w': if (popen) popen(...)) is a call too */
            char buf[600];
            const char *r = strstr(own, "gpudl_") ? grade_call_refused(own, buf, sizeof buf) : grade_call_refused(name, buf, sizeof buf);
            if (r) { snprintf(why, size, "%s", r); bad = why; }
        } else if (type == 'i') {
            snprintf(why, size, "defines %s as a GNU ifunc (code that runs while the program loads)", own); bad = why;
        } else if (strstr(own, "gpudl_")) {
            snprintf(why, size, "defines gpudl's own %s (GPUDL_IMPLEMENTATION, or a copy of gpudl's code): write the op "
                     "yourself", own); bad = why;
        } else if ((type == 'T' || type == 'D' || type == 'B' || type == 'R' || type == 'C' || type == 'W' || type == 'V') &&
                   grade_is_libc(name)) {
            snprintf(why, size, "defines %s, a function of the C library: it would replace the library's own for the "
                     "grader's reference too (make it static, or rename it)", name); bad = why;
        } else if ((type == 'T' || type == 'D' || type == 'B' || type == 'W') && (!strncmp(name, "cuda", 4) &&
                   name[4] >= 'A' && name[4] <= 'Z')) {
            snprintf(why, size, "defines %s, a function of the CUDA runtime: it would replace the runtime's own for the "
                     "grader too (rename it, or make it static)", own); bad = why;
        } else if (type == 'T' && !strcmp(name, "main")) {
            snprintf(why, size, "defines main: the grader has its own"); bad = why;
        }
    }
    free(nm.p); free(nmc.p); free(sec.p);
    return bad;
}

static int grade_shared_ok(void) {
    return grade_hash_file(grade_runner_o.path) == grade_runner_o.hash &&
           (!grade_kernels_o.path[0] || grade_hash_file(grade_kernels_o.path) == grade_kernels_o.hash);
}

/* Grades one submission into s (feedback, score, status). idx: its number in the class. */
static void grade_submission(grade_sub *s, int idx) {
    const grade_assignment *a = O.a;
    int cuda = a->device == GPUDL_DEVICE_CUDA, i;
    char sandbox[4096], src[4200], dst[4200], runner[4200], why[700];
    const char *ext = cuda ? "cu" : "c", *sext = strrchr(s->path, '.');
    grade_buf text = {0}, log = {0};
    grade_argv av = {{0}, 0};
    grade_op_res *res = (grade_op_res *)calloc(GRADE_MAX_CHECKS, sizeof *res);
    int64_t fields = 0;
    double t0 = grade_now();
    grade_buf printed = {0};
    grade_buf *fb = &s->fb;
    fb->limit = 64u << 10;

    grade_deadline = t0 + 10.0 * O.timeout_s + 20;   /* everything: the build, the checks, the sanitizer, the training */
    grade_printf(fb, "grading %s: %s, on the %s\n\n", a->name, s->name, !cuda ? "CPU" : O.emulated ? "emulated GPU (tests/emu)" : "GPU");
    snprintf(sandbox, sizeof sandbox, "%s/s%03d", O.work, idx);
    snprintf(src, sizeof src, "%s/student.%s", sandbox, ext);
    snprintf(runner, sizeof runner, "%s/runner", sandbox);
    if (mkdir(sandbox, 0700) != 0) { grade_set_status(s, GRADE_ERROR, "cannot make the submission's folder"); goto report; }
    snprintf(dst, sizeof dst, "%s/gpudl.h", sandbox);
    if (!grade_read_file(s->path, &text, GRADE_MAX_SOURCE + 1)) {
        grade_set_status(s, GRADE_ERROR, "cannot read the file (or it is not a regular file)");
        goto report;
    }
    if (text.n > GRADE_MAX_SOURCE) {
        grade_set_status(s, GRADE_REFUSED, "the file is larger than 4 MB: a submission is one source file of the functions asked for");
        goto report;
    }
    if (!sext || strcmp(sext + 1, ext)) grade_printf(fb, "note: a %s assignment takes a .%s file; %s is compiled as one\n", a->name, ext, s->name);
    if (!grade_copy(O.header, dst) || !grade_write_file(src, grade_str(&text), text.n)) {
        grade_set_status(s, GRADE_ERROR, "cannot copy the files into the submission's folder");
        goto report;
    }
    if (grade_scan_source(grade_str(&text), text.n, why, sizeof why)) { grade_set_status(s, GRADE_REFUSED, why); goto report; }

    /* compile: -Wall, the headers it reads listed (-MD) */
    grade_argv_compiler(&av);
    if (cuda) {
        grade_arg(&av, "-Xcompiler"); grade_arg(&av, "-Wall"); grade_args_words(&av, O.cuda_flags);
        if (O.emulated) grade_arg(&av, "-g");   /* source lines in the sanitizer's reports */
    }
    else { grade_arg(&av, "-Wall"); grade_arg(&av, "-fopenmp"); grade_arg(&av, "-DGPUDL_NO_CUDA"); }
    grade_arg(&av, "-I."); grade_arg(&av, "-MD"); grade_arg(&av, "-MF"); grade_arg(&av, "student.d");
    grade_arg(&av, "-c"); grade_arg(&av, grade_base(src)); grade_arg(&av, "-o"); grade_arg(&av, "student.o");
    i = grade_run_limited(av.v, &log, GRADE_COMPILE_CPU_S, sandbox, GRADE_COMPILE_DATA);
    grade_argv_free(&av);
    if (log.n) {
        grade_printf(fb, "the compiler says:\n");
        grade_quote(fb, grade_str(&log), log.n, 8192);
        grade_printf(fb, "\n");
    }
    if (i != 0) { grade_set_status(s, GRADE_COMPILE, "the file does not compile (the compiler's messages are above)"); goto report; }
    snprintf(dst, sizeof dst, "%s/student.d", sandbox);
    if (grade_check_deps(sandbox, dst, why, sizeof why)) {
        grade_set_status(s, GRADE_REFUSED, why);
        goto report;
    }
    if (grade_check_object(sandbox, why, sizeof why)) { grade_set_status(s, GRADE_REFUSED, why); goto report; }

    /* link with the shared objects, after checking that they are the ones the run built */
    if (!grade_shared_ok()) {
        grade_set_status(s, GRADE_ERROR, "the grader's shared objects changed during the run (a submission wrote them?): "
                         "grading stopped");
        goto report;
    }
    grade_argv_compiler(&av);
    if (cuda) { grade_arg(&av, "-Xcompiler"); grade_arg(&av, "-fopenmp"); }
    else grade_arg(&av, "-fopenmp");
    grade_arg(&av, "-o"); grade_arg(&av, "runner");
    grade_arg(&av, grade_runner_o.path);
    grade_arg(&av, "student.o");
    if (cuda) {
        grade_arg(&av, grade_kernels_o.path);
        grade_args_words(&av, O.cuda_flags);
        grade_args_words(&av, "-lcublas -lcublasLt -lcudnn -lgomp");
    } else grade_arg(&av, "-lm");
    log.n = 0;
    i = grade_run_limited(av.v, &log, GRADE_COMPILE_CPU_S, sandbox, GRADE_COMPILE_DATA);
    grade_argv_free(&av);
    snprintf(grade_cur_runner, sizeof grade_cur_runner, "%s", runner);
    chmod(runner, 0555);
    grade_cur_runner_hash = grade_hash_file(runner);
    if (i != 0) {
        grade_cur_runner[0] = 0;
        grade_printf(fb, "the linker says:\n");
        grade_quote(fb, grade_str(&log), log.n, 4096);
        if (strstr(grade_str(&log), "multiple definition of")) {   /* what it defines twice, named */
            const char *m = strstr(grade_str(&log), "multiple definition of");
            char name[160];
            size_t n = strcspn(m + 23, "'\n");
            snprintf(name, sizeof name, "%.*s", (int)(n < 150 ? n : 150), m + 23 + strspn(m + 23, " `'\xe2\x80\x98"));
            snprintf(why, sizeof why, "the file does not link with the grader: it defines %s, which the runner already has "
                     "(gpudl, the C library or the CUDA runtime): rename it or make it static", name);
            grade_set_status(s, GRADE_COMPILE, why);
        } else if (strstr(grade_str(&log), "student_ops"))
            grade_set_status(s, GRADE_COMPILE, "the file does not link with the grader: it must define student_ops (with "
                             "extern \"C\" in a .cu)");
        else grade_set_status(s, GRADE_COMPILE, "the file does not link with the grader (the linker's messages are above)");
        goto report;
    }

    {   /* registration: student_ops (and the file's constructors) in a child of their own */
        char *argv[] = {runner, (char *)"--child", (char *)"probe", (char *)"--assignment", (char *)a->name, NULL};
        grade_limits L = grade_runner_limits(sandbox, 2.0 * O.timeout_s + 10);
        grade_child ch;
        int k, got = 0;
        grade_spawn(argv, &L, sandbox, NULL, &ch);
        if (ch.back.n >= sizeof(grade_back)) {
            grade_back b;
            memcpy(&b, ch.back.p, sizeof b);
            if (b.magic == GRADE_MAGIC && b.kind == GRADE_BACK_PROBE) {
                fields = b.fields & ((1 << GRADE_NOPS) - 1) & ~1;
                got = 1;
                if (!(b.guards & GRADE_GUARD_SECCOMP)) grade_printf(fb, "note: the seccomp filter is not in place on this machine\n");
            }
        }
        grade_child_why(&ch, &L, why, sizeof why);
        if (!got && !why[0]) snprintf(why, sizeof why, "ended the process (exit status %d) before the grader could start: exit() in student_ops?", ch.exited ? ch.code : -1);
        if (!got || why[0]) {
            char msg[800];
            snprintf(msg, sizeof msg, "student_ops (or a static constructor of your file) %s", why);
            grade_child_status(s, &ch, msg);
            if (s->status == GRADE_OK) grade_set_status(s, GRADE_CRASH, msg);
            for (k = 0; k < grade_nchecks(a); k++) { res[k].implemented = 1; snprintf(res[k].whole, sizeof res[k].whole, "%s", msg); }
            fields = -1;
        }
        grade_child_output(fb, "student_ops", &ch);
        grade_child_free(&ch);
    }
    if (fields > 0) {   /* a file for another assignment: say so, rather than only "not implemented" */
        int mine = 0, j, c2;
        for (i = 0; i < grade_nchecks(a); i++) mine |= (int)((fields >> a->checks[i].op) & 1);
        if (!mine) {
            grade_printf(fb, "note: student_ops sets");
            for (j = 0; j < GRADE_NASSIGN; j++)
                for (c2 = 0; c2 < grade_nchecks(&grade_assignments[j]); c2++)
                    if ((fields >> grade_assignments[j].checks[c2].op) & 1)
                        grade_printf(fb, " ops->%s (%s)", grade_assignments[j].checks[c2].field, grade_assignments[j].name);
            grade_printf(fb, " but none of %s's ops: is this the file for another assignment?\n", a->name);
        }
    }
    grade_printf(fb, "%-38s %-6s  %-4s  %s\n", "check", "points", "", "hint");
    for (i = 0; i < grade_nchecks(a); i++) {
        if (fields != -1) {
            res[i].implemented = (int)((fields >> a->checks[i].op) & 1);
            if (res[i].implemented) grade_judge_op(s, sandbox, runner, i, &res[i], &printed, fields, NULL, -1);
        }
        grade_score_op(s, i, &res[i]);
        if (fields != -1 && res[i].implemented && !res[i].whole[0]) grade_sanitize(s, sandbox, runner, i, &res[i], fields);
    }
    grade_printf(fb, "\nchecks: %.1f s\n", grade_now() - t0);
    if (printed.n) { grade_printf(fb, "your code printed (during the checks):\n%s", grade_str(&printed)); }
    if (O.train && fields != -1) {
        char ep[16];
        char *argv[12];
        grade_limits L = grade_runner_limits(sandbox, 6.0 * O.timeout_s + 10);
        grade_child ch;
        const char *acc;
        int k = 0;
        if (grade_deadline - grade_now() < L.wall_s) L.wall_s = grade_deadline - grade_now();
        snprintf(ep, sizeof ep, "%d", O.epochs);
        argv[k++] = runner; argv[k++] = (char *)"--child"; argv[k++] = (char *)"train"; argv[k++] = (char *)"--assignment";
        argv[k++] = (char *)a->name; argv[k++] = (char *)"--epochs"; argv[k++] = ep;
        if (O.data) { argv[k++] = (char *)"--data"; argv[k++] = (char *)O.data; }
        argv[k] = NULL;
        L.cpu_s = 4 * O.timeout_s;
        memset(&ch, 0, sizeof ch);
        if (L.wall_s >= 1.0) grade_spawn(argv, &L, sandbox, O.data, &ch);
        grade_printf(fb, "\nthe training run (no points; what it prints comes from the process that runs your code):\n");
        if (L.wall_s < 1.0) grade_printf(fb, "training: not run: the submission used up its time budget (10 x --timeout)\n");
        grade_quote(fb, grade_str(&ch.out), ch.out.n, 8192);
        grade_child_why(&ch, &L, why, sizeof why);
        if (why[0] && ch.started) grade_printf(fb, "training: FAILED: %s\n", why);
        if ((acc = strstr(grade_str(&ch.out), "test accuracy ")) != NULL) sscanf(acc + 14, "%31[0-9.]", s->train_acc);
        grade_child_free(&ch);
    }
report:
    if (s->of == 0) {
        for (i = 0; i < grade_nchecks(a); i++) {   /* nothing ran: every group 0 */
            int g;
            for (g = 0; g < grade_nrules(&a->checks[i]); g++) s->of += a->checks[i].rules[g].points;
        }
        s->got = 0;
    }
    if (s->status == GRADE_REFUSED || s->status == GRADE_COMPILE || s->status == GRADE_ERROR) {
        s->got = 0;
        grade_printf(fb, "%s: %s\n", s->status == GRADE_REFUSED ? "REFUSED" : s->status == GRADE_COMPILE ? "NOT GRADED" : "ERROR",
                     strncmp(s->reason, "REFUSED: ", 9) ? s->reason : s->reason + 9);   /* not "REFUSED: REFUSED: ..." */
    }
    s->seconds = grade_now() - t0;
    fb->limit = 0;   /* the last line always comes, on a line of its own */
    if (fb->n && fb->p[fb->n - 1] != '\n') grade_addn(fb, "\n", 1);
    grade_printf(fb, "score: %d/%d\n", s->got, s->of);
    free(text.p); free(log.p); free(printed.p); free(res);
    if (!O.keep) grade_rm_rf(sandbox);
}

/* ---- the class: workers, the CSV, the summary --------------------------------- */
static void grade_csv_field(FILE *f, const char *s) {
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', f);
        for (; *s; s++) { if (*s == '"') fputc('"', f); fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f); }
        fputc('"', f);
    } else fputs(s, f);
}

static void grade_safe_name(const char *in, char *out, size_t size) {
    size_t i;
    for (i = 0; in[i] && i + 1 < size; i++) {
        char ch = in[i];
        out[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
                 ch == '_' || (unsigned char)ch >= 0x80 ? ch : '_';   /* UTF-8 letters stay */
    }
    out[i] = 0;
}

/* A worker's result, for the parent: a line of numbers, the reason, the groups' points. */
static void grade_save(const grade_sub *s, const char *path) {
    FILE *f = fopen(path, "w");
    int i, g;
    if (!f) return;
    fprintf(f, "%d %d %d %.3f %s\n%s\n", (int)s->status, s->got, s->of, s->seconds, s->train_acc[0] ? s->train_acc : "-", s->reason);
    for (i = 0; i < GRADE_MAX_CHECKS; i++)
        for (g = 0; g < GRADE_MAX_RULES; g++) fprintf(f, "%d ", s->group_pts[i][g]);
    fprintf(f, "\n");
    fclose(f);
}
static int grade_load(grade_sub *s, const char *path) {
    FILE *f = fopen(path, "r");
    int st = 0, i, g;
    char line[1024];
    if (!f) return 0;
    if (fscanf(f, "%d %d %d %lf %31s", &st, &s->got, &s->of, &s->seconds, s->train_acc) != 5) { fclose(f); return 0; }
    if (!strcmp(s->train_acc, "-")) s->train_acc[0] = 0;
    s->status = (grade_status)st;
    if (fgets(line, sizeof line, f) && fgets(s->reason, sizeof s->reason, f)) s->reason[strcspn(s->reason, "\n")] = 0;
    for (i = 0; i < GRADE_MAX_CHECKS; i++)
        for (g = 0; g < GRADE_MAX_RULES; g++) if (fscanf(f, "%d", &s->group_pts[i][g]) != 1) s->group_pts[i][g] = 0;
    fclose(f);
    return 1;
}

static int grade_usage(const char *argv0) {
    int i;
    fprintf(stderr,
        "usage: %s <assignment> FILE|FOLDER... [options]\n"
        "  one FILE: its table and score (the last line: score: X/Y)\n"
        "  a FOLDER or several files: a class; --out grades.csv writes a row each, feedback files beside it\n"
        "options:\n"
        "  --out CSV        the class's grades (default with a folder: grades.csv)\n"
        "  --feedback DIR   a feedback file per student (default: CSV's name without .csv, plus -feedback)\n"
        "  -j N             submissions graded at once (default: the number of CPUs)\n"
        "  --no-train       checks only (the training run earns no points)\n"
        "  --data DIR       Fashion-MNIST's four IDX files, for the training run\n"
        "  --epochs N       of the training run (default 3)\n"
        "  --timeout S      CPU seconds per child process (default 20): a group that takes longer is lost\n"
        "  --kit DIR        where gpudl.h, gpudl_kernels.cu and grade.c are (default: next to this program, or .)\n"
        "  --cc CC          the C compiler (default cc); --nvcc CMD the CUDA compiler (default: nvcc where\n"
        "                   nvidia-smi sees a GPU, else tests/emu/nvcc-emu from the kit, the emulated device)\n"
        "  --cuda-flags F   extra flags for nvcc's compiles and links (-I, -L, rpaths)\n"
        "  --cache DIR      where the runner's objects are kept between runs (default ~/.cache/gpudl-grade)\n"
        "  --work DIR       the run's scratch folder (default: a new one under $TMPDIR or /tmp); --keep keeps it\n"
        "  assignments:", argv0);
    for (i = 0; i < GRADE_NASSIGN; i++) fprintf(stderr, " %s", grade_assignments[i].name);
    fprintf(stderr, "\n");
    return 2;
}

static const char *grade_find_kit(const char *argv0, const char *given) {
    static char buf[4096];
    char tmp[4096], dir[4096];
    const char *cands[4];
    int i;
    if (given) return given;
    snprintf(tmp, sizeof tmp, "%s", argv0);
    snprintf(dir, sizeof dir, "%s", strrchr(tmp, '/') ? (*strrchr(tmp, '/') = 0, tmp) : ".");
    cands[0] = dir; cands[1] = "."; cands[2] = ".."; cands[3] = NULL;
    for (i = 0; cands[i]; i++) {
        snprintf(buf, sizeof buf, "%s/gpudl.h", cands[i]);
        if (grade_exists(buf)) { snprintf(buf, sizeof buf, "%s", cands[i]); return buf; }
        snprintf(buf, sizeof buf, "%s/../gpudl.h", cands[i]);
        if (grade_exists(buf)) { snprintf(buf, sizeof buf, "%s/..", cands[i]); return buf; }
    }
    return ".";
}

static char *grade_which(const char *prog) {
    const char *path = getenv("PATH");
    char *tmp, *tok, *save = NULL, full[4096];
    if (strchr(prog, '/')) return realpath(prog, NULL);
    if (!path) return NULL;
    tmp = strdup(path);
    for (tok = strtok_r(tmp, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        snprintf(full, sizeof full, "%s/%s", tok, prog);
        if (access(full, X_OK) == 0) { free(tmp); return realpath(full, NULL); }
    }
    free(tmp);
    return NULL;
}

typedef struct grade_file { char *path; } grade_file;
static int grade_cmp_file(const void *a, const void *b) { return strcmp(((const grade_file *)a)->path, ((const grade_file *)b)->path); }

int main(int argc, char **argv) {
    grade_file *files = NULL;
    int nfiles = 0, cap = 0, i, nfolders = 0, nloose = 0, bad = 0, files_only = 0;
    char err[4096], work_tmpl[4096], buf[4200];
    const char *kit_given = NULL;
    double t0 = grade_now();
    signal(SIGPIPE, SIG_IGN);
    memset(&O, 0, sizeof O);
    O.cc = "cc"; O.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN); O.train = 1; O.timeout_s = 20; O.epochs = 3;
    if (O.jobs < 1) O.jobs = 1;
    for (i = 1; i < argc; i++) {
        const char *v = argv[i], *nx = i + 1 < argc ? argv[i + 1] : NULL;
        if (files_only && O.a) goto a_file;
        if (!strcmp(v, "--no-train")) O.train = 0;
        else if (!strcmp(v, "--verbose")) O.verbose = 1;
        else if (!strcmp(v, "--keep")) O.keep = 1;
        else if (nx && !strcmp(v, "--out")) { O.out_csv = nx; i++; }
        else if (nx && !strcmp(v, "--feedback")) { O.feedback_dir = nx; i++; }
        else if (nx && !strcmp(v, "-j")) { O.jobs = atoi(nx); i++; }
        else if (!strncmp(v, "-j", 2) && v[2]) O.jobs = atoi(v + 2);
        else if (nx && !strcmp(v, "--data")) { O.data = grade_abs(nx); i++; }
        else if (nx && !strcmp(v, "--epochs")) { O.epochs = atoi(nx); i++; }
        else if (nx && !strcmp(v, "--timeout")) { O.timeout_s = atoi(nx); i++; }
        else if (nx && !strcmp(v, "--kit")) { kit_given = nx; i++; }
        else if (nx && !strcmp(v, "--cc")) { O.cc = nx; i++; }
        else if (nx && !strcmp(v, "--nvcc")) { O.nvcc = nx; i++; }
        else if (nx && !strcmp(v, "--cuda-flags")) { snprintf(O.cuda_flags, sizeof O.cuda_flags, "%s", nx); i++; }
        else if (nx && !strcmp(v, "--cache")) { O.cache = nx; i++; }
        else if (nx && !strcmp(v, "--work")) { O.work = nx; i++; }
        else if (!strcmp(v, "--")) { files_only = 1; continue; }
        else if (v[0] == '-' && O.a && grade_exists(v) && !grade_is_dir(v)) goto a_file;   /* a file called -m10.c */
        else if (v[0] == '-') return grade_usage(argv[0]);
        else if (!O.a) {
            int j;
            for (j = 0; j < GRADE_NASSIGN; j++)
                if (!strcmp(v, grade_assignments[j].name)) O.a = &grade_assignments[j];
            if (!O.a) { fprintf(stderr, "grade: no assignment called '%s'\n", v); return grade_usage(argv[0]); }
        } else a_file: {   /* a file, or a folder of them */
            const char *want = O.a->device == GPUDL_DEVICE_CUDA ? ".cu" : ".c";
            if (grade_is_dir(v)) {
                DIR *d = opendir(v);
                struct dirent *e;
                nfolders++;
                while (d && (e = readdir(d)) != NULL) {
                    size_t l = strlen(e->d_name);
                    char p[4096];
                    if (e->d_name[0] == '.') continue;
                    snprintf(p, sizeof p, "%s/%s", v, e->d_name);
                    if (l < strlen(want) || strcmp(e->d_name + l - strlen(want), want)) {   /* alice.cpp: say so, no silent gap */
                        if (!grade_is_dir(p)) fprintf(stderr, "grade: skipping %s: not a %s file (no row in the CSV)\n", p, want);
                        continue;
                    }
                    if (nfiles == cap) { cap = cap ? 2 * cap : 64; files = (grade_file *)realloc(files, sizeof *files * (size_t)cap); }
                    files[nfiles++].path = strdup(p);
                }
                if (d) closedir(d);
            } else {
                if (!grade_exists(v)) { fprintf(stderr, "grade: no file %s\n", v); return 2; }
                nloose++;
                if (nfiles == cap) { cap = cap ? 2 * cap : 64; files = (grade_file *)realloc(files, sizeof *files * (size_t)cap); }
                files[nfiles++].path = strdup(v);
            }
        }
    }
    if (!O.a || nfiles == 0 || O.jobs < 1 || O.timeout_s < 1 || O.epochs < 1) {
        if (O.a && nfiles == 0) fprintf(stderr, "grade: no submissions given (a file, or a folder of %s files)\n",
                                        O.a->device == GPUDL_DEVICE_CUDA ? ".cu" : ".c");
        return grade_usage(argv[0]);
    }
    if (nfolders) qsort(files, (size_t)nfiles, sizeof *files, grade_cmp_file);
    O.single = nfiles == 1 && nfolders == 0 && !O.out_csv;
    if (!O.single && !O.out_csv) O.out_csv = "grades.csv";
    if (O.single) O.jobs = 1;

    /* the kit: the files a student is given, and the grader's own source */
    O.kit = grade_abs(grade_find_kit(argv[0], kit_given));
    snprintf(buf, sizeof buf, "%s/gpudl.h", O.kit); O.header = strdup(buf);
    snprintf(buf, sizeof buf, "%s/gpudl_kernels.cu", O.kit); O.kernels_cu = strdup(buf);
    snprintf(buf, sizeof buf, "%s/grade.c", O.kit);
    if (!grade_exists(buf)) snprintf(buf, sizeof buf, "%s/assignments/grade.c", O.kit);
    O.grade_c = strdup(buf);
    if (!grade_exists(O.header) || !grade_exists(O.grade_c) || (O.a->device == GPUDL_DEVICE_CUDA && !grade_exists(O.kernels_cu))) {
        fprintf(stderr, "grade: the kit (gpudl.h, gpudl_kernels.cu, grade.c) is not in %s: pass --kit DIR\n", O.kit);
        return 2;
    }
    if (O.a->device == GPUDL_DEVICE_CUDA) {
        char emu[4200], *real;
        snprintf(emu, sizeof emu, "%s/tests/emu/nvcc-emu", O.kit);
        if (!O.nvcc) {
            char *nv = grade_which("nvcc");
            grade_buf tmp = {0};
            char *smi[] = {(char *)"nvidia-smi", (char *)"-L", NULL};
            if (nv && grade_which("nvidia-smi") && grade_run_capture(smi, &tmp, 20, NULL) == 0) O.nvcc = "nvcc";
            else if (grade_exists(emu)) O.nvcc = strdup(emu);
            else O.nvcc = "nvcc";
            free(tmp.p); free(nv);
        }
        O.emulated = strstr(grade_base(O.nvcc), "nvcc-emu") != NULL;
        if ((real = grade_which(O.nvcc)) != NULL) {
            char *slash;
            snprintf(buf, sizeof buf, "%s", real);
            if ((slash = strrchr(buf, '/')) != NULL) *slash = 0;
            if (O.emulated) {
                char inc[4300];
                snprintf(O.emu_dir, sizeof O.emu_dir, "%s", buf);
                snprintf(inc, sizeof inc, "%s/include", buf);
                if (!realpath(inc, O.emu_include)) O.emu_include[0] = 0;
                O.nvcc = strdup(real);
            } else if ((slash = strrchr(buf, '/')) != NULL) { *slash = 0; snprintf(O.cuda_root, sizeof O.cuda_root, "%s", buf); }
            free(real);
        }
    }
    O.data_limit = (size_t)(O.emulated ? 12ull << 30 : 4ull << 30);

    /* the run's folder, the sandbox's environment, the lists */
    if (!O.work) {
        const char *t = getenv("TMPDIR");
        snprintf(work_tmpl, sizeof work_tmpl, "%s/gpudl-grade.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(work_tmpl)) { fprintf(stderr, "grade: cannot make %s: %s\n", work_tmpl, strerror(errno)); return 2; }
        O.work = strdup(work_tmpl);
    } else {
        mkdir(O.work, 0700);
        O.work = grade_abs(O.work);
    }
    chmod(O.work, 0711);
    snprintf(buf, sizeof buf, "%s/shared", O.work);
    mkdir(buf, 0755);
    if (!O.cache) {   /* the user's cache (hash-checked at each use), else the run's folder */
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) snprintf(buf, sizeof buf, "%s/gpudl-grade", xdg);
        else if (home && *home) snprintf(buf, sizeof buf, "%s/.cache/gpudl-grade", home);
        else snprintf(buf, sizeof buf, "%s/cache", O.work);
        O.cache = strdup(buf);
    }
    { char cmd[4300]; snprintf(cmd, sizeof cmd, "%s", O.cache); for (char *p = cmd + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(cmd, 0755); *p = '/'; } mkdir(cmd, 0755); }
    O.cache = grade_abs(O.cache);
    grade_env_setup();
    if (O.emulated) {   /* the sanitizer's script (beside nvcc-emu), run in the sandbox: that file, not its folder (caches) */
        if (O.emu_dir[0]) snprintf(grade_sanitizer_path, sizeof grade_sanitizer_path, "%s/compute-sanitizer", O.emu_dir);
        snprintf(O.emu_device, sizeof O.emu_device, "GPUDL_EMU_DEVICE=9.0:4G");   /* a 20 GB cudaMalloc fails, as on a full GPU */
        grade_env_add(genv.envp, O.emu_device);
    }
    grade_rx_init();
    grade_libc_setup(O.cc);
    O.seed = grade_random64();
    setenv("CUEMU_OBJECT_CACHE", "0", 1);   /* students' compiles: not into nvcc-emu's shared object cache */   /* fresh inputs for every grading run: answers recorded in an earlier run do not fit */
    if (!grade_shared_build(&grade_runner_o, O.a->device == GPUDL_DEVICE_CUDA ? (O.emulated ? "runner_emu" : "runner_nvcc") : "runner_cpu",
                            O.grade_c, 1, err, sizeof err) ||
        (O.a->device == GPUDL_DEVICE_CUDA &&
         !grade_shared_build(&grade_kernels_o, O.emulated ? "kernels_emu" : "kernels_nvcc", O.kernels_cu, 0, err, sizeof err))) {
        fprintf(stderr, "grade: %s\n", err);
        return 2;
    }
    if (!genv.landlock_abi) fprintf(stderr, "grade: warning: %s: the children's file access is not restricted "
                                    "(the link-time checks, the seccomp filter and the limits still apply)\n", genv.landlock_why);

    if (O.single) {
        grade_sub s;
        memset(&s, 0, sizeof s);
        s.path = files[0].path;
        snprintf(s.name, sizeof s.name, "%s", grade_base(files[0].path));
        grade_submission(&s, 0);
        fputs(grade_str(&s.fb), stdout);
        if (!O.keep) grade_rm_rf(O.work);
        return s.status == GRADE_COMPILE || s.status == GRADE_ERROR ? 1 : 0;   /* 1: no score from the checks */
    }

    {   /* the class: -j workers, each a fork of this process (no student code), one submission each */
        grade_sub *subs = (grade_sub *)calloc((size_t)nfiles, sizeof *subs);
        pid_t *pids = (pid_t *)calloc((size_t)nfiles, sizeof *pids);
        int next = 0, running = 0, done = 0, count[6] = {0}, g, c;
        double total = 0;
        char fbdir[4096];
        FILE *csv;
        if (O.feedback_dir) snprintf(fbdir, sizeof fbdir, "%s", O.feedback_dir);
        else {
            snprintf(fbdir, sizeof fbdir, "%s", O.out_csv);
            if (strlen(fbdir) > 4 && !strcmp(fbdir + strlen(fbdir) - 4, ".csv")) fbdir[strlen(fbdir) - 4] = 0;
            strncat(fbdir, "-feedback", sizeof fbdir - strlen(fbdir) - 1);
        }
        mkdir(fbdir, 0755);
        fprintf(stderr, "grade: %d submissions of %s, %d at a time%s; feedback in %s/\n", nfiles, O.a->name, O.jobs,
                O.train ? ", with the training runs" : ", checks only", fbdir);
        while (done < nfiles) {
            while (running < O.jobs && next < nfiles) {
                grade_sub *s = &subs[next];
                pid_t pid;
                s->path = files[next].path;   /* from several folders: the path names the row (a/x.c, b/x.c) */
                snprintf(s->name, sizeof s->name, "%s", nfolders + nloose > 1 ? files[next].path : grade_base(files[next].path));
                fflush(stdout); fflush(stderr);
                pid = fork();
                if (pid == 0) {
                    char fbpath[8400], rowpath[4300], safe[256];
                    grade_submission(s, next);
                    int j;
                    grade_safe_name(s->name, safe, sizeof safe);
                    for (j = 0; j < next; j++) {   /* "a b.c" and "a_b.c", or x.c of two folders: one file each */
                        char other[256];
                        grade_safe_name(subs[j].name, other, sizeof other);
                        if (!strcmp(other, safe)) {   /* '+' is never in a safe name: no clash with another */
                            snprintf(safe + strlen(safe), sizeof safe - strlen(safe), "+%d", next + 1);
                            break;
                        }
                    }
                    snprintf(fbpath, sizeof fbpath, "%s/%s.txt", fbdir, safe);
                    grade_write_file(fbpath, grade_str(&s->fb), s->fb.n);
                    snprintf(rowpath, sizeof rowpath, "%s/r%03d.row", O.work, next);
                    grade_save(s, rowpath);
                    _exit(0);
                }
                pids[next++] = pid;
                running++;
            }
            {
                int st;
                pid_t pid = wait(&st);
                if (pid < 0) break;
                for (i = 0; i < next; i++)
                    if (pids[i] == pid) {
                        char rowpath[4300];
                        snprintf(rowpath, sizeof rowpath, "%s/r%03d.row", O.work, i);
                        if (!grade_load(&subs[i], rowpath)) {
                            subs[i].status = GRADE_ERROR;
                            snprintf(subs[i].reason, sizeof subs[i].reason, "the grader's worker ended without a result");
                        }
                        pids[i] = 0; running--; done++;
                        fprintf(stderr, "[%d/%d] %-28s %3d/%-3d %-13s %5.1f s\n", done, nfiles, subs[i].name, subs[i].got,
                                subs[i].of, grade_status_names[subs[i].status], subs[i].seconds);
                    }
            }
        }
        if (!(csv = fopen(O.out_csv, "w"))) { fprintf(stderr, "grade: cannot write %s\n", O.out_csv); return 2; }
        fprintf(csv, "file,score,max,status,reason,train_acc,seconds");
        for (c = 0; c < grade_nchecks(O.a); c++)
            for (g = 0; g < grade_nrules(&O.a->checks[c]); g++) {
                snprintf(buf, sizeof buf, "%s: %s", O.a->checks[c].name, O.a->checks[c].rules[g].group);
                fputc(',', csv); grade_csv_field(csv, buf);
            }
        fputc('\n', csv);
        for (i = 0; i < nfiles; i++) {
            grade_sub *s = &subs[i];
            grade_csv_field(csv, s->name);
            fprintf(csv, ",%d,%d,", s->got, s->of);
            grade_csv_field(csv, grade_status_names[s->status]);
            fputc(',', csv); grade_csv_field(csv, s->reason);
            fprintf(csv, ",%s,%.1f", s->train_acc, s->seconds);
            for (c = 0; c < grade_nchecks(O.a); c++)
                for (g = 0; g < grade_nrules(&O.a->checks[c]); g++) fprintf(csv, ",%d", s->group_pts[c][g]);
            fputc('\n', csv);
            count[s->status]++;
            total += s->of ? (double)s->got / s->of : 0;
            if (s->status == GRADE_COMPILE || s->status == GRADE_ERROR) bad++;   /* could not be graded */
        }
        fclose(csv);
        printf("graded %d submissions of %s in %.0f s (-j %d): ok %d, crash %d, timeout %d, compile error %d, refused %d, "
               "grader error %d; mean score %.0f%%; %s, feedback in %s/\n", nfiles, O.a->name, grade_now() - t0, O.jobs,
               count[GRADE_OK], count[GRADE_CRASH], count[GRADE_TIMEOUT], count[GRADE_COMPILE], count[GRADE_REFUSED],
               count[GRADE_ERROR], 100.0 * total / nfiles, O.out_csv, fbdir);
        if (!O.keep) grade_rm_rf(O.work);
        return bad ? 1 : 0;
    }
}
#endif /* !_WIN32 */
#endif /* !GRADE_RUNNER */

