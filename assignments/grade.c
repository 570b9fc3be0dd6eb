/* grade.c - the autograder for the gpudl assignments (assignments/README.md).

   Linked with a student's file, which defines student_ops(gpudl_ops *):
     make grade A=sgemm [SRC=my_sgemm.cu]
   or by hand (CUDA assignments; the CPU one needs only the first two files):
     nvcc -O2 -o grade grade.c sgemm/starter.cu gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
     cc -O2 -fopenmp -DGPUDL_NO_CUDA -o grade grade.c maxpool/starter.c -lm
   Run:  ./grade <relu_xent|sgemm|maxpool> [--no-train] [--verbose] [--data DIR] [--epochs N] [--timeout S]

   For each op of the assignment it installs the student's function as
   gpudl's override and runs gpudl_check_op: a battery of cases in groups
   ("basic", "odd sizes", ...), compared with a float64 reference. A group
   is worth a few points, earned when every case of the group passes. Then
   (unless --no-train) a short training run with the student's ops in
   place, through gpudl_model, on Fashion-MNIST; it earns no points, it
   shows the code at work. The last line printed is always "score: X/Y".

   Each op is checked, and the network trained, in a child process (POSIX)
   under a time limit: a kernel that faults leaves CUDA's context unusable
   for the rest of the process, and a segfault or an endless loop in
   student code would end the grading; in a child it costs that op's points
   only. The parent never touches CUDA, so each child starts clean. */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"
#if !defined(_WIN32)
#  include <signal.h>
#  include <sys/wait.h>
#  include <unistd.h>
#  define GRADE_FORK 1
#endif

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

typedef enum grade_train { GRADE_TRAIN_MLP = 1, GRADE_TRAIN_CNN } grade_train;

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
        {"nan/inf", 1, "dx = dy * (x > 0 ? 1 : 0): a NaN or Inf in dy must reach dx where x > 0"},
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

/* ---- the spy: the student's functions, called through counting wrappers --- */
/* The grader installs these wrappers, not the student's functions: it can
   then tell that the student's code really ran (a field left NULL, or a
   function that only returns GPUDL_ERR_UNSUPPORTED, would have gpudl's own
   code checked, and pass). While checking, GPUDL_ERR_UNSUPPORTED from the
   op under test becomes an error, so such a case fails instead of falling
   back to gpudl. */
#define GRADE_NOPS 16
static struct {
    gpudl_ops student;
    int       checking;                  /* the op under check (0: training) */
    int64_t   calls[GRADE_NOPS];         /* per gpudl_op */
    int64_t   unsupported[GRADE_NOPS];
} spy;

static gpudl_status spy_result(gpudl_op op, gpudl_status s) {
    spy.calls[op]++;
    if (s == GPUDL_ERR_UNSUPPORTED) {
        spy.unsupported[op]++;
        if (spy.checking == (int)op) return GPUDL_ERR_INVALID_ARG;
    }
    return s;
}

static gpudl_status spy_gemm(void *user, void *stream, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                             float alpha, const float *A, const float *B, float beta, float *C) {
    (void)user;
    return spy_result(GPUDL_OP_GEMM, spy.student.gemm(spy.student.user, stream, trans_a, trans_b, M, N, K, alpha, A, B, beta, C));
}
static gpudl_status spy_act_forward(void *user, void *stream, gpudl_act act, float alpha, float *y, const float *x, int64_t n) {
    (void)user;
    return spy_result(GPUDL_OP_ACT_FORWARD, spy.student.act_forward(spy.student.user, stream, act, alpha, y, x, n));
}
static gpudl_status spy_act_backward(void *user, void *stream, gpudl_act act, float alpha, float *dx, const float *dy,
                                     const float *x, const float *y, int64_t n) {
    (void)user;
    return spy_result(GPUDL_OP_ACT_BACKWARD, spy.student.act_backward(spy.student.user, stream, act, alpha, dx, dy, x, y, n));
}
static gpudl_status spy_xent_forward(void *user, void *stream, float *loss, float *probs, const float *logits,
                                     const int32_t *labels, int64_t N, int64_t K) {
    (void)user;
    return spy_result(GPUDL_OP_XENT_FORWARD,
                      spy.student.softmax_xent_forward(spy.student.user, stream, loss, probs, logits, labels, N, K));
}
static gpudl_status spy_xent_backward(void *user, void *stream, float *dlogits, const float *probs, const int32_t *labels,
                                      int64_t N, int64_t K, float scale) {
    (void)user;
    return spy_result(GPUDL_OP_XENT_BACKWARD,
                      spy.student.softmax_xent_backward(spy.student.user, stream, dlogits, probs, labels, N, K, scale));
}
static gpudl_status spy_maxpool_forward(void *user, void *stream, float *y, const float *x, const gpudl_pool_shape *s) {
    (void)user;
    return spy_result(GPUDL_OP_MAXPOOL_FORWARD, spy.student.maxpool_forward(spy.student.user, stream, y, x, s));
}
static gpudl_status spy_maxpool_backward(void *user, void *stream, float *dx, const float *dy, const float *x,
                                         const gpudl_pool_shape *s) {
    (void)user;
    return spy_result(GPUDL_OP_MAXPOOL_BACKWARD, spy.student.maxpool_backward(spy.student.user, stream, dx, dy, x, s));
}

/* The ops to install: a wrapper for each op the student set; the fields
   no assignment grades (conv2d, the optimizers) go in as they are. */
static gpudl_ops spy_ops(void) {
    gpudl_ops o = spy.student;
    if (o.gemm) o.gemm = spy_gemm;
    if (o.act_forward) o.act_forward = spy_act_forward;
    if (o.act_backward) o.act_backward = spy_act_backward;
    if (o.softmax_xent_forward) o.softmax_xent_forward = spy_xent_forward;
    if (o.softmax_xent_backward) o.softmax_xent_backward = spy_xent_backward;
    if (o.maxpool_forward) o.maxpool_forward = spy_maxpool_forward;
    if (o.maxpool_backward) o.maxpool_backward = spy_maxpool_backward;
    return o;
}

static int spy_has(gpudl_op op) {
    switch (op) {
    case GPUDL_OP_GEMM:             return spy.student.gemm != NULL;
    case GPUDL_OP_ACT_FORWARD:      return spy.student.act_forward != NULL;
    case GPUDL_OP_ACT_BACKWARD:     return spy.student.act_backward != NULL;
    case GPUDL_OP_XENT_FORWARD:     return spy.student.softmax_xent_forward != NULL;
    case GPUDL_OP_XENT_BACKWARD:    return spy.student.softmax_xent_backward != NULL;
    case GPUDL_OP_MAXPOOL_FORWARD:  return spy.student.maxpool_forward != NULL;
    case GPUDL_OP_MAXPOOL_BACKWARD: return spy.student.maxpool_backward != NULL;
    default:                        return 0;
    }
}

/* ---- running one op's check -------------------------------------------- */
typedef struct grade_result {
    int          ran;                    /* the check ran to the end */
    gpudl_status status;                 /* gpudl_check_op's */
    char         why[256];               /* why it did not run, or the context's last error */
    int64_t      calls, unsupported;     /* the student's function: calls, GPUDL_ERR_UNSUPPORTED answers */
    gpudl_check_report report;
} grade_result;

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

static void grade_check_here(const grade_assignment *a, const grade_check *c, grade_result *res) {
    gpudl_ctx *ctx = NULL;
    gpudl_status s = grade_ctx(a->device, &ctx);
    if (s != GPUDL_OK) {
        snprintf(res->why, sizeof res->why, "no %s context: %s%s", a->device == GPUDL_DEVICE_CUDA ? "CUDA" : "CPU",
                 gpudl_status_string(s), a->device == GPUDL_DEVICE_CUDA ? " (this assignment needs a GPU, or the "
                 "emulated one: make grade builds with tests/emu/nvcc-emu when there is no GPU)" : "");
        res->status = s;
        return;
    }
    memset(spy.calls, 0, sizeof spy.calls);
    memset(spy.unsupported, 0, sizeof spy.unsupported);
    spy.checking = (int)c->op;
    res->status = gpudl_check_op(ctx, c->op, c->act, &res->report);
    spy.checking = 0;
    res->ran = res->status == GPUDL_OK;
    if (!res->ran) snprintf(res->why, sizeof res->why, "gpudl_check_op: %s: %.200s", gpudl_status_string(res->status),
                            gpudl_ctx_last_error(ctx));
    res->calls = spy.calls[c->op];
    res->unsupported = spy.unsupported[c->op];
    gpudl_ctx_destroy(ctx);
}

/* Runs fn(arg) in a child process (POSIX; elsewhere here) that sends back
   the size bytes at out, under a time limit. Returns 1 when they came;
   else 0 with why it failed in why. */
static int grade_isolated(void (*fn)(void *), void *arg, void *out, size_t size, int timeout_s, char *why, size_t why_size) {
#ifdef GRADE_FORK
    int fd[2], st = 0;
    size_t got = 0;
    pid_t pid;
    fflush(stdout); fflush(stderr);
    if (pipe(fd) != 0) { fn(arg); return 1; }
    if ((pid = fork()) < 0) { close(fd[0]); close(fd[1]); fn(arg); return 1; }
    if (pid == 0) {   /* the child: run, send the result, leave without running atexit handlers */
        const char *p = (const char *)out;
        size_t left = size;
        close(fd[0]);
        alarm((unsigned)timeout_s);
        fn(arg);
        fflush(stdout);
        while (left > 0) {
            ssize_t w = write(fd[1], p, left);
            if (w <= 0) _exit(1);
            p += w; left -= (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    while (got < size) {
        ssize_t r = read(fd[0], (char *)out + got, size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd[0]);
    waitpid(pid, &st, 0);
    if (got == size && WIFEXITED(st) && WEXITSTATUS(st) == 0) return 1;
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        snprintf(why, why_size, "took longer than %d s (an endless loop? a grid that never ends?)", timeout_s);
    else if (WIFSIGNALED(st))
        snprintf(why, why_size, "crashed with signal %d (%s): an out-of-bounds access?", WTERMSIG(st),
                 WTERMSIG(st) == SIGSEGV ? "segmentation fault" : WTERMSIG(st) == SIGFPE ? "arithmetic fault" : "see above");
    else
        snprintf(why, why_size, "the process exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
#else
    (void)timeout_s; (void)out; (void)size; (void)why; (void)why_size;
    fn(arg);
    return 1;
#endif
}

typedef struct grade_job {
    const grade_assignment *a;
    const grade_check *c;
    grade_result *res;
    const char *dir;
    int epochs;
} grade_job;

static void grade_check_job(void *p) { grade_job *j = (grade_job *)p; grade_check_here(j->a, j->c, j->res); }

static void grade_check_isolated(const grade_assignment *a, const grade_check *c, int timeout_s, grade_result *res) {
    grade_job j;
    char why[sizeof res->why];
    j.a = a; j.c = c; j.res = res;
    if (grade_isolated(grade_check_job, &j, res, sizeof *res, timeout_s, why, sizeof why)) return;
    memset(res, 0, sizeof *res);
    res->status = GPUDL_ERR_INVALID_ARG;
    res->report.first_case = -1;
    memcpy(res->why, why, sizeof why);
}

/* ---- scoring and the table ----------------------------------------------- */
/* Whether every case of group g passed; -1: the report has no such group. */
static int grade_group_passed(const gpudl_check_report *r, const char *g) {
    int i, seen = 0, ok = 1;
    for (i = 0; i < r->ncases && i < GPUDL_CHECK_MAX_CASES; i++)
        if (!strcmp(r->cases[i].group, g)) { seen = 1; ok &= r->cases[i].passed != 0; }
    return seen ? ok : -1;
}

static const grade_rule *grade_rule_for(const grade_check *c, const char *g) {
    int i;
    for (i = 0; i < grade_nrules(c); i++)
        if (!strcmp(c->rules[i].group, g)) return &c->rules[i];
    return NULL;
}

static void grade_row(const char *op, const char *group, int got, int of, const char *hint) {
    char name[64];
    snprintf(name, sizeof name, "%s: %s", op, group);
    if (got == of) printf("%-38s %2d/%-2d  pass\n", name, got, of);
    else printf("%-38s %2d/%-2d  FAIL  %s\n", name, got, of, hint);
}

/* The first failure of an op, under its row: where, expected, got, inputs. */
static void grade_detail(const gpudl_check_report *r) {
    const gpudl_check_case *c = &r->cases[r->first_case];
    printf("       first failure: %s, %s\n", c->group, c->shape);
    if (r->where[0]) printf("         at %s: expected %.9g, got %.9g\n", r->where, r->expected, r->got);
    if (r->inputs[0]) printf("         inputs: %s\n", r->inputs);
    if (r->status_msg[0]) printf("         your function said: %s\n", r->status_msg);
}

/* Prints the rows of one check; adds its points to *got and *of. */
static void grade_score(const grade_check *c, const grade_result *res, int verbose, int *got, int *of) {
    const gpudl_check_report *r = &res->report;
    int i, j, detail = 0;
    const char *whole = NULL;   /* a reason every group of the op fails */
    char buf[320];
    if (!spy_has(c->op)) {
        snprintf(buf, sizeof buf, "not implemented: student_ops leaves ops->%s NULL", c->field);
        whole = buf;
    } else if (!res->ran) {
        whole = res->why;
    } else if (res->calls == 0) {
        whole = "your function was never called";
    } else if (res->unsupported > 0) {   /* the cases it refused failed; the others count */
        printf("       note (%s): your function answered GPUDL_ERR_UNSUPPORTED %lld time(s): it must do each case itself\n",
               c->name, (long long)res->unsupported);
    }
    for (i = 0; i < grade_nrules(c); i++) {
        const grade_rule *g = &c->rules[i];
        int pass = whole ? 0 : grade_group_passed(r, g->group);
        *of += g->points;
        if (pass < 0) {
            grade_row(c->name, g->group, 0, g->points, "this gpudl's check has no such group: update grade.c's table");
            continue;
        }
        *got += pass ? g->points : 0;
        grade_row(c->name, g->group, pass ? g->points : 0, g->points, whole ? (i ? "(as above)" : whole) : g->hint);
        if (!whole && !pass && !detail && r->first_case >= 0 && !strcmp(r->cases[r->first_case].group, g->group)) {
            grade_detail(r);
            detail = 1;
        }
    }
    if (whole) return;
    for (i = 0; i < r->ncases && i < GPUDL_CHECK_MAX_CASES; i++) {   /* groups the table does not know: 1 point each */
        const char *g = r->cases[i].group;
        int pass;
        if (grade_rule_for(c, g)) continue;
        for (j = 0; j < i; j++)
            if (!strcmp(r->cases[j].group, g)) break;
        if (j < i) continue;   /* seen */
        pass = grade_group_passed(r, g);
        *of += 1;
        *got += pass ? 1 : 0;
        grade_row(c->name, g, pass ? 1 : 0, 1, "a group new to this grader: --verbose shows its cases");
        if (!pass && !detail && r->first_case >= 0 && !strcmp(r->cases[r->first_case].group, g)) { grade_detail(r); detail = 1; }
    }
    if (verbose && !r->passed) {
        static char explain[8192];
        printf("%s\n", gpudl_check_explain(r, explain, sizeof explain));
    }
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
    int i, mlp = a->train == GRADE_TRAIN_MLP;
    memset(&train, 0, sizeof train); memset(&test, 0, sizeof test);
    memset(&count, 0, sizeof count);

#define GRADE_TRY(expr) do { if ((s = (expr)) != GPUDL_OK) { \
        printf("training: FAILED at %s: %s\n          %s\n", #expr, gpudl_status_string(s), ctx ? gpudl_ctx_last_error(ctx) : ""); \
        printf("training: it runs your functions: make the checks above pass first\n"); \
        goto done; } } while (0)
    if ((s = grade_ctx(a->device, &ctx)) != GPUDL_OK) { printf("training: SKIPPED (no context: %s)\n", gpudl_status_string(s)); return; }
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
        what = "MLP 784-128-10";
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
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    od.lr = 2e-3f;
    GRADE_TRY(gpudl_model_set_optimizer(m, &od));

    memset(spy.calls, 0, sizeof spy.calls);
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
        printf("%s %s %lld times", i ? "," : "", a->checks[i].name, (long long)spy.calls[a->checks[i].op]);
    printf("\n");
done:
    gpudl_tensor_free(ctx, &count);
    gpudl_model_destroy(m);
    gpudl_dataset_free(ctx, &train); gpudl_dataset_free(ctx, &test);
    gpudl_tensor_free(ctx, &xtr); gpudl_tensor_free(ctx, &ytr); gpudl_tensor_free(ctx, &xte); gpudl_tensor_free(ctx, &yte);
    gpudl_ctx_destroy(ctx);
#undef GRADE_TRY
}

static void grade_train_job(void *p) { grade_job *j = (grade_job *)p; grade_train_run(j->a, j->dir, j->epochs); }

/* ---- main ---------------------------------------------------------------- */
static int grade_usage(const char *argv0) {
    int i;
    fprintf(stderr, "usage: %s <assignment> [--no-train] [--verbose] [--data DIR] [--epochs N] [--timeout S]\n"
                    "  assignments:", argv0);
    for (i = 0; i < GRADE_NASSIGN; i++) fprintf(stderr, " %s", grade_assignments[i].name);
    fprintf(stderr, "\n");
    return 2;
}

int main(int argc, char **argv) {
    const grade_assignment *a = NULL;
    const char *dir = NULL;
    int i, train = 1, verbose = 0, timeout_s = 120, epochs = 3, got = 0, of = 0;
    double t0 = gpudl_now();
    static grade_result res[GRADE_MAX_CHECKS];

    for (i = 1; i < argc; i++) {
        int j;
        if (!strcmp(argv[i], "--no-train")) train = 0;
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout_s = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !a) {
            for (j = 0; j < GRADE_NASSIGN; j++)
                if (!strcmp(argv[i], grade_assignments[j].name)) a = &grade_assignments[j];
            if (!a) { fprintf(stderr, "grade: no assignment called '%s'\n", argv[i]); return grade_usage(argv[0]); }
        } else return grade_usage(argv[0]);
    }
    if (!a || epochs < 1 || timeout_s < 1) return grade_usage(argv[0]);

    memset(&spy, 0, sizeof spy);
    student_ops(&spy.student);
    printf("grading %s on the %s\n\n", a->name, a->device == GPUDL_DEVICE_CUDA ? "GPU" : "CPU");
    printf("%-38s %-6s  %-4s  %s\n", "check", "points", "", "hint");
    for (i = 0; i < grade_nchecks(a); i++) {
        const grade_check *c = &a->checks[i];
        memset(&res[i], 0, sizeof res[i]);
        res[i].report.first_case = -1;
        if (spy_has(c->op)) grade_check_isolated(a, c, timeout_s, &res[i]);
        grade_score(c, &res[i], verbose, &got, &of);
    }
    printf("\nchecks: %.1f s\n", gpudl_now() - t0);
    if (train) {   /* in a child too: a crash there must not lose the score */
        grade_job j;
        char why[256];
        j.a = a; j.dir = dir; j.epochs = epochs;
        if (!grade_isolated(grade_train_job, &j, NULL, 0, timeout_s, why, sizeof why)) printf("training: FAILED: %s\n", why);
    }
    printf("score: %d/%d\n", got, of);
    return 0;
}
