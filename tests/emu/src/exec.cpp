/* exec.cpp - kernels on the emulated device.

   A grid's blocks are spread over the worker threads (pool.cpp); a worker
   runs one block at a time. The CUDA threads of a block run on fibers (own
   stacks): a fiber runs the block's threads one after the other until one
   waits, at a block barrier (__syncthreads and friends) or at a warp-level
   exchange (shuffles, votes, __syncwarp); that thread keeps the fiber, and a
   new fiber goes on with the next threads. A kernel that never waits runs
   its whole block on one fiber; one that waits at a barrier ends up with a
   fiber per thread. The rules enforced here are the CUDA C++ Programming
   Guide's:
   - __syncthreads() must be reached by every thread of the block, at the same
     call; anything else is reported as an error (on a GPU it may hang or
     corrupt data), never a hang here;
   - a warp intrinsic with a mask: the calling lane must be in the mask, and
     every non-exited lane named in it must call the same intrinsic with the
     same mask; a value read from a lane that does not take part is
     undefined, here all one bits (NaN for floats);
   - static and dynamic __shared__ memory belongs to one block, uninitialised
     at its start (here: all one bits);
   - a fault (illegal address, stack overflow, trap, assert) ends the grid and
     leaves the device with a sticky error; it happens at the access, never
     at the launch: a pointer argument the kernel does not dereference may be
     anything (Programming Guide, "Device Memory Accesses": the instruction
     that accesses the address faults).
   The loads and stores themselves are checked by access.cpp. */
#include "access.h"
#include "sanitizer.h"
#include "state.h"
#include <errno.h>
#include <condition_variable>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

extern "C" {
/* The sanitizers' fiber interface, when a sanitizer is linked in. */
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size) __attribute__((weak));
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old) __attribute__((weak));
void __asan_poison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
}

__thread uint3 threadIdx;
__thread uint3 blockIdx;
__thread dim3 blockDim;
__thread dim3 gridDim;

/* >>context switch: save the callee-saved registers on the current stack,
   store the stack pointer in *save, continue on new_sp. */
extern "C" void cuemu_ctx_switch(void **save, void *new_sp);
extern "C" void cuemu_fiber_trampoline(void);
extern "C" void cuemu_fiber_fault_trampoline(void);

#if defined(__x86_64__)
asm(R"(
    .text
    .globl cuemu_ctx_switch
    .type cuemu_ctx_switch,@function
cuemu_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuemu_ctx_switch, .-cuemu_ctx_switch

    .globl cuemu_fiber_trampoline
    .type cuemu_fiber_trampoline,@function
cuemu_fiber_trampoline:
    movq %r12, %rdi
    andq $-16, %rsp
    callq cuemu_fiber_main
    ud2
    .size cuemu_fiber_trampoline, .-cuemu_fiber_trampoline
)");
#elif defined(__aarch64__)
asm(R"(
    .text
    .globl cuemu_ctx_switch
    .type cuemu_ctx_switch,%function
cuemu_ctx_switch:
    sub sp, sp, #176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    add sp, sp, #176
    ret
    .size cuemu_ctx_switch, .-cuemu_ctx_switch

    .globl cuemu_fiber_trampoline
    .type cuemu_fiber_trampoline,%function
cuemu_fiber_trampoline:
    mov x0, x19
    bl cuemu_fiber_main
    brk #0
    .size cuemu_fiber_trampoline, .-cuemu_fiber_trampoline
)");
#else
#  error "tests/emu: fibers are written for x86-64 and AArch64"
#endif

namespace cuemu {

namespace {

enum TState : uint8_t { T_NEW, T_RUN, T_BAR, T_WARP, T_DONE };

struct Worker;
struct Fiber;

/* One CUDA thread of the running block. */
struct Thr {
    ThreadView view;
    unsigned linear = 0, lane = 0, warp = 0;
    TState state = T_DONE;
    bool suspended = false;   /* switched out on its fiber: resumable when state is T_RUN */
    Fiber *fiber = nullptr;
    const char *bar_site = nullptr;
    int bar_result = 0;
    unsigned tile_first = 0, tile_count = 0;   /* T_BAR in a tile's sync (tile_barrier): its threads */
    int wop = -1;             /* the warp operation it waits in */
    const char *wsite = nullptr;  /* __activemask(): where it was called */
    unsigned wmask = 0, wsize = 0;
    int warg = 0, wwidth = 32;
    uint64_t wval = 0, wres = 0;
    int wpred = 0;
    const void *wpc = nullptr;    /* where it called the warp operation */
    unsigned atomics = 0;
    /* __pipeline_memcpy_async copies not yet waited for (cuda_pipeline_primitives.h) */
    struct PipeCopy { char *dst; const char *src; size_t n, zfill; uint64_t batch; };
    std::vector<PipeCopy> pend;
    uint64_t batch = 0;           /* the batch the next copy joins (__pipeline_commit closes it) */
};

/* A stack that runs threads. */
struct Fiber {
    void *sp = nullptr;       /* saved stack pointer while switched out */
    char *stack = nullptr;    /* usable stack [stack, stack + stack_size) */
    size_t stack_size = 0;
    void *asan_fake = nullptr;
    Worker *w = nullptr;
    Thr *thr = nullptr;       /* the thread it runs now */
    unsigned index = 0;       /* in its worker's fibers */
    bool busy = false;
    bool dirty = false;       /* abandoned while running: unpoison its stack before reuse */
};

struct GridRun {
    Grid *g;
    uint64_t total;
    uint64_t seed = 0;                 /* shuffle: this grid's random stream */
    std::vector<uint32_t> order;       /* shuffle: the order of the blocks (small grids) */
    uint64_t mul = 1, add = 0;         /* shuffle: b -> (mul * b + add) % total (large grids) */
    std::atomic<uint64_t> next{0};
    std::atomic<bool> abort{false};
    std::atomic<int> err{0};
    /* a cooperative grid whose blocks all run at once (each on its own host
       thread): grid_group::sync()'s barrier */
    bool resident = false;
    std::mutex gmu;
    std::condition_variable gcv;
    uint64_t garrived = 0, gfinished = 0, ggen = 0;
};

struct Worker {
    void *sched_sp = nullptr;
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
    std::vector<Thr> thr;               /* the block's threads */
    std::vector<Fiber *> fibers;        /* stacks, reused from block to block */
    size_t free_from = 0;               /* every fiber before this index is busy */
    uint3 block_idx{};
    GridRun *run = nullptr;
    unsigned nthreads = 0, ndone = 0, next_start = 0;
    unsigned nsuspended = 0;            /* threads switched out on their fibers */
    std::vector<uint8_t> warp_waiting;  /* lanes of each warp waiting in a warp operation */
    std::vector<uint8_t> warp_active;   /* of those, lanes waiting in __activemask() */
    unsigned bar_arrived = 0;
    unsigned tile_waiting = 0;          /* threads waiting in a tile's sync (tile_barrier) */
    /* tiles of more than 32 threads: shfl (64 bytes a thread), then
       cg::reduce, any and all (128 bytes a warp) */
    alignas(16) unsigned char tile_scratch[1024 * 64 + 32 * 128];
    int bar_acc = 0, bar_kind = 0;
    const char *bar_site = nullptr;
    bool block_abort = false;
    char *smem = nullptr;         /* [static region][dynamic region], between two guards (kSharedGuard) */
    size_t dyn_open = 0;          /* bytes of the dynamic region currently accessible */
    uintptr_t fault_addr = 0;
    int fault_sig = 0;
    const void *fault_pc = nullptr;   /* the faulting instruction */
    AccessCtx acc{};              /* what the access hooks see of the running block */
    unsigned poisoned_vars = ~0u; /* ASan builds: the static variables the static region's poisoning knows */
    std::vector<unsigned> ready;  /* shuffle: threads that may run next */
};

const size_t kStaticCap = 256 * 1024;   /* all static __shared__ variables of the program */
const size_t kDynCap = 256 * 1024;      /* dynamic shared memory: above every profile's opt-in limit */
/* Address space reserved, never mapped, on both sides of a worker's shared
   window: a block's shared memory is a window of at most 227 KiB (CUDA C++
   Programming Guide, "Shared Memory" and the compute capabilities' table),
   and an index far past an array's end is an illegal shared address on a
   GPU. Here it would land in the emulator's own heap: a gigabyte of
   PROT_NONE each side makes it fault instead. */
const size_t kSharedGuard = (size_t)1 << 30;
std::atomic<size_t> g_static_used{0};
size_t g_page = 4096;

__thread Worker *t_worker;
__thread Fiber *t_fiber;   /* the fiber running on this host thread, if any */
__thread Thr *t_thr;       /* the CUDA thread it runs */

/* >>schedule: CUEMU_SCHEDULE=shuffle with CUEMU_SEED=N runs the blocks of a
   grid in a seeded random order and, between barriers, switches threads of
   a block at shared-memory accesses and atomics (access.cpp) and picks the
   next thread at random. The Programming Guide guarantees neither: thread
   blocks "are required to execute independently: it must be possible to
   execute them in any order" (Thread Hierarchy), and with independent thread
   scheduling the lanes of a warp need not run in lock step (SIMT
   Architecture; __syncwarp). The default schedule is deterministic. */
struct Schedule {
    bool shuffle = false;
    uint64_t seed = 0;
    Schedule() {
        const char *e = getenv("CUEMU_SCHEDULE");
        shuffle = e && !strcmp(e, "shuffle");
        if (e && *e && !shuffle && strcmp(e, "default"))
            fprintf(stderr, "cuemu: warning: CUEMU_SCHEDULE=%s is not known (default or shuffle); using default\n", e);
        const char *sd = getenv("CUEMU_SEED");
        seed = sd ? strtoull(sd, nullptr, 0) : 1;
    }
};
const Schedule &schedule() {
    static Schedule s;
    return s;
}
std::atomic<uint64_t> g_grids{0};   /* grids run so far: each has its own random stream */

void asan_start(void **fake, const void *bottom, size_t size) {
    if (__sanitizer_start_switch_fiber) __sanitizer_start_switch_fiber(fake, bottom, size);
}
void asan_finish(void *fake, const void **bottom, size_t *size) {
    if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(fake, bottom, size);
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* >>signals: every thread that runs kernels gets an alternate signal stack. */
void ensure_altstack() {
    static __thread bool done;
    if (done) return;
    done = true;
    stack_t old;
    if (sigaltstack(nullptr, &old) == 0 && !(old.ss_flags & SS_DISABLE)) return;   /* someone (a sanitizer) has one */
    size_t sz = 256 * 1024;
    void *p = mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    stack_t ss;
    ss.ss_sp = p;
    ss.ss_size = sz;
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
}

Worker *worker() {
    Worker *w = t_worker;
    if (w) return w;
    w = new Worker();
    g_page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = kSharedGuard + kStaticCap + kDynCap + kSharedGuard;
    void *p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "cuemu: cannot map shared memory for a worker thread\n");
        abort();
    }
    w->smem = (char *)p + kSharedGuard;   /* [guard][static region][dynamic region][guard] */
    mprotect(w->smem, kStaticCap, PROT_READ | PROT_WRITE);
    {
        /* Workers live as long as the process (a worker thread's state stays reachable). */
        static std::mutex mu;
        static std::vector<Worker *> *all = new std::vector<Worker *>();
        std::lock_guard<std::mutex> lk(mu);
        all->push_back(w);
    }
    ensure_altstack();
    t_worker = w;
    return w;
}

char *dyn_base(Worker *w) { return w->smem + kStaticCap; }

/* Is anything mapped at p's page in this process? (mincore fails with
   ENOMEM where nothing is.) */
bool host_mapped(const void *p) {
    unsigned char v;
    void *pg = (void *)((uintptr_t)p & ~(uintptr_t)(g_page - 1));
    return mincore(pg, g_page, &v) == 0 || errno != ENOMEM;
}

/* Makes exactly the first bytes of the dynamic region accessible (pages;
   bytes too under AddressSanitizer). */
void open_dynamic(Worker *w, size_t bytes) {
    if (bytes == w->dyn_open) return;
    char *d = dyn_base(w);
    if (__asan_unpoison_memory_region && w->dyn_open) __asan_unpoison_memory_region(d, round_up(w->dyn_open, g_page));
    mprotect(d, kDynCap, PROT_NONE);
    if (bytes) {
        mprotect(d, round_up(bytes, g_page), PROT_READ | PROT_WRITE);
        if (__asan_poison_memory_region && round_up(bytes, g_page) > bytes)
            __asan_poison_memory_region(d + bytes, round_up(bytes, g_page) - bytes);
    }
    w->dyn_open = bytes;
}

size_t stack_bytes() {
    static size_t n = [] {
        const char *e = getenv("CUEMU_STACK_KB");
        size_t kb = e ? (size_t)atol(e) : 256;
        if (kb < 16) kb = 16;
        return kb * 1024;
    }();
    return n;
}

Fiber *new_fiber(Worker *w) {
    Fiber *f = new Fiber();
    size_t sz = stack_bytes();
    char *p = (char *)mmap(nullptr, sz + g_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "cuemu: cannot map a fiber stack\n");
        abort();
    }
    mprotect(p, g_page, PROT_NONE);   /* guard page: a stack overflow faults */
    f->stack = p + g_page;
    f->stack_size = sz;
    f->index = (unsigned)w->fibers.size();
    f->w = w;
    return f;
}

/* Lays out a first frame so that switching to f enters cuemu_fiber_main(f). */
void prime(Fiber *f) {
    if (f->dirty && __asan_unpoison_memory_region) __asan_unpoison_memory_region(f->stack, f->stack_size);
    f->dirty = false;
    uintptr_t top = ((uintptr_t)f->stack + f->stack_size) & ~(uintptr_t)15;
#if defined(__x86_64__)
    uint64_t *sp = (uint64_t *)top;
    *--sp = 0;                                   /* alignment slot */
    *--sp = (uint64_t)&cuemu_fiber_trampoline;   /* ret target */
    *--sp = 0;                                   /* rbp */
    *--sp = 0;                                   /* rbx */
    *--sp = (uint64_t)f;                         /* r12: the trampoline's argument */
    *--sp = 0;                                   /* r13 */
    *--sp = 0;                                   /* r14 */
    *--sp = 0;                                   /* r15 */
    f->sp = sp;
#elif defined(__aarch64__)
    uint64_t *sp = (uint64_t *)(top - 176);
    memset(sp, 0, 176);
    sp[0] = (uint64_t)f;                          /* x19 */
    sp[11] = (uint64_t)&cuemu_fiber_trampoline;   /* x30 */
    f->sp = sp;
#endif
}

void switch_to(Worker *w, Fiber *f) {
    t_fiber = f;
    t_thr = f->thr;
    if (f->thr) threadIdx = f->thr->view.thread_idx;
    t_access = &w->acc;
    void *fake = nullptr;
    asan_start(&fake, f->stack, f->stack_size);
    cuemu_ctx_switch(&w->sched_sp, f->sp);
    asan_finish(fake, nullptr, nullptr);
    t_access = nullptr;
    t_fiber = nullptr;
    t_thr = nullptr;
}

/* From a fiber back to its worker's scheduler. final: the fiber never resumes. */
void switch_out(Fiber *f, bool final) {
    Worker *w = f->w;
    asan_start(final ? nullptr : &f->asan_fake, w->sched_bottom, w->sched_size);
    cuemu_ctx_switch(&f->sp, w->sched_sp);
    asan_finish(f->asan_fake, &w->sched_bottom, &w->sched_size);
}

/* The calling thread waits: its fiber goes back to the scheduler, which
   resumes it once its state is T_RUN again. */
void suspend(Thr *t) {
    Worker *w = t->fiber->w;
    t->suspended = true;
    w->nsuspended++;
    switch_out(t->fiber, false);
    w->nsuspended--;
    t->suspended = false;
}

const char *kernel_name(const GridRun *r) { return r && r->g->site.kernel ? r->g->site.kernel : "(kernel)"; }

void describe_block(char *buf, size_t n, Worker *w) {
    snprintf(buf, n, "block (%u,%u,%u)", w->block_idx.x, w->block_idx.y, w->block_idx.z);
}

/* Ends the grid with err (the first error wins); the message goes to stderr. */
void fail_grid(GridRun *r, cudaError_t err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fail_grid(GridRun *r, cudaError_t err, const char *fmt, ...) {
    int expected = 0;
    if (!r->err.compare_exchange_strong(expected, (int)err)) {
        r->abort = true;
        return;   /* a later error of a dying grid: the first one says it */
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Grid *g = r->g;
    fprintf(stderr, "cuemu: kernel %s (launched at %s:%d): %s -> %s\n", kernel_name(r), g->site.file ? g->site.file : "?",
            g->site.line, msg, cudaGetErrorName(err));
    fflush(stderr);
    r->abort = true;
}

/* A kernel-side error: ends the grid, and the calling thread with it. */
[[noreturn]] void vkernel_error(cudaError_t err, const char *fmt, va_list ap) {
    Fiber *f = t_fiber;
    Thr *t = t_thr;
    char msg[900], where[128];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!f || !t) {
        fprintf(stderr, "cuemu: %s (outside any kernel)\n", msg);
        abort();
    }
    Worker *w = f->w;
    describe_block(where, sizeof where, w);
    fail_grid(w->run, err, "%s thread (%u,%u,%u): %s", where, t->view.thread_idx.x, t->view.thread_idx.y, t->view.thread_idx.z, msg);
    w->block_abort = true;
    f->dirty = true;
    switch_out(f, true);
    __builtin_unreachable();
}
[[noreturn]] void kernel_error(cudaError_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void kernel_error(cudaError_t err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vkernel_error(err, fmt, ap);
}

/* A synchronisation error: synccheck reports it (with the caller's pc), then
   the grid ends as without the tool. */
[[noreturn]] void sync_error(const void *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void sync_error(const void *pc, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    san_sync_error(msg, pc);
    kernel_error(cudaErrorLaunchFailure, "%s", msg);
}

const char *warp_op_name(int op) {
    static const char *names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
                                  "__any_sync", "__all_sync", "__syncwarp", "__match_any_sync", "__match_all_sync",
                                  "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                                  "__reduce_or_sync", "__reduce_xor_sync", "__reduce_min_sync", "__reduce_max_sync",
                                  "__reduce_add_sync", "__activemask", "nvcuda::wmma::load_matrix_sync",
                                  "nvcuda::wmma::store_matrix_sync", "nvcuda::wmma::mma_sync"};
    return op >= 0 && op < (int)(sizeof names / sizeof names[0]) ? names[op] : "warp operation";
}

uint64_t poison_bits(unsigned size) { return size >= 8 ? ~0ull : ((1ull << (size * 8)) - 1); }

/* >>wmma: <mma.h>'s load_matrix_sync, store_matrix_sync and mma_sync
   (CUDA C++ Programming Guide, "Warp Matrix Functions"): "waits until all
   warp lanes have arrived", and the arguments "must be the same for all
   threads in the warp". Each lane passes a WmmaCall (its fragment and
   arguments); once every non-exited lane waits, the last to arrive checks
   them and runs the operation for the whole warp (WmmaCall::run, the
   header's code, in the kernel's translation unit, so its loads and stores
   are checked like the kernel's own). A warp with lanes that exited, or a
   partial last warp, is refused: each lane then gets the mask of the lanes
   that came, and reports it from its own context (wmma_sync). */
void wmma_complete(Thr **lanes, unsigned part, int op) {
    WmmaCall *c[32] = {};
    unsigned first = 32;
    for (unsigned i = 0; i < 32; i++)
        if (lanes[i]) {
            c[i] = (WmmaCall *)(uintptr_t)lanes[i]->wval;
            if (first == 32) first = i;
        }
    if (part == 0xffffffffu) {
        for (unsigned i = 0; i < 32; i++) {
            for (unsigned k = 0; k < 4; k++)
                if (c[i]->key[k] != c[first]->key[k] || c[i]->run != c[first]->run)
                    sync_error(t_thr ? t_thr->wpc : nullptr,
                               "%s: lane %u passes %s %s where lane %u passes %s: the pointer, ldm, layout and template "
                               "parameters must be the same for all threads in the warp (CUDA C++ Programming Guide, Warp "
                               "Matrix Functions)",
                               warp_op_name(op), i, c[i]->run != c[first]->run ? "fragment types" : c[i]->what[k],
                               c[i]->run != c[first]->run ? "" : c[i]->show[k], first,
                               c[i]->run != c[first]->run ? "others" : c[first]->show[k]);
        }
        c[first]->run(c);
    }
    for (unsigned i = 0; i < 32; i++)
        if (lanes[i]) lanes[i]->wres = part;
}

/* Completes the warp operation (op, mask) of warp `warp` when every
   non-exited lane named in mask has arrived; returns whether it did. */
bool try_complete(Worker *w, unsigned warp, unsigned mask, int op) {
    unsigned base = warp * 32, part = 0;
    Thr *lanes[32] = {};
    /* the lanes of mask waiting in this very operation */
    unsigned here = 0;
    for (unsigned i = 0; i < 32; i++) {
        if (!((mask >> i) & 1) || base + i >= w->nthreads) continue;
        Thr *t = &w->thr[base + i];
        if (t->state == T_WARP && t->wop == op && t->wmask == mask) here |= 1u << i;
    }
    for (unsigned i = 0; i < 32; i++) {
        if (!((mask >> i) & 1) || base + i >= w->nthreads) continue;
        Thr *t = &w->thr[base + i];
        if (t->state == T_DONE) continue;
        if (t->state != T_WARP || t->wop == W_ACTIVE) return false;   /* not here yet */
        /* A lane of mask waiting in another operation whose mask names none
           of the lanes waiting here: its own group may still complete, and
           then it comes here (odd lanes in __ballot_sync(0xAAAAAAAA, ...) while
           even lanes, done with theirs, reach __syncwarp(): valid). Only a
           wait on one of these lanes is a mismatch that never resolves. */
        if ((t->wop != op || t->wmask != mask) && !(t->wmask & here)) return false;
        if (t->wop != op || t->wmask != mask)
            sync_error(t_thr ? t_thr->wpc : nullptr,
                         "lane %u waits in %s with mask 0x%08x while lanes of mask 0x%08x call %s: every non-exited lane "
                         "named in the mask must execute the same intrinsic with the same mask (CUDA C++ Programming Guide, "
                         "%s)",
                         i, warp_op_name(t->wop), t->wmask, mask, warp_op_name(op),
                         (op >= W_WMMA_LOAD || t->wop >= W_WMMA_LOAD) ? "Warp Matrix Functions: the *_sync functions are "
                         "called by all threads of the warp together" : "warp shuffle and vote functions");
        part |= 1u << i;
        lanes[i] = t;
    }
    if (op >= W_WMMA_LOAD) {
        wmma_complete(lanes, part, op);
        for (unsigned i = 0; i < 32; i++)
            if (lanes[i]) {
                lanes[i]->state = T_RUN;
                lanes[i]->wop = -1;
                w->warp_waiting[warp]--;
            }
        if (g_san) san_warp_sync(warp, part);
        return true;
    }
    for (unsigned i = 0; i < 32; i++) {
        Thr *f = lanes[i];
        if (!f) continue;
        uint64_t res = 0;
        int pred = 0;
        unsigned w_ = (unsigned)f->wwidth, seg = i & ~(w_ - 1);
        auto value_of = [&](unsigned src) { return ((part >> src) & 1) ? lanes[src]->wval : poison_bits(f->wsize); };
        switch (op) {
        case W_SHFL: res = value_of(seg + ((unsigned)f->warg & (w_ - 1))); break;
        case W_SHFL_UP: {
            long src = (long)i - (long)(unsigned)f->warg;
            res = src < (long)seg ? f->wval : value_of((unsigned)src);
            break;
        }
        case W_SHFL_DOWN: {
            unsigned long src = (unsigned long)i + (unsigned)f->warg;
            res = src >= seg + w_ ? f->wval : value_of((unsigned)src);
            break;
        }
        case W_SHFL_XOR: {
            unsigned src = i ^ (unsigned)f->warg;
            res = src >= seg + w_ ? f->wval : value_of(src);
            break;
        }
        case W_BALLOT:
        case W_ANY:
        case W_ALL: {
            unsigned bits = 0;
            for (unsigned j = 0; j < 32; j++)
                if (lanes[j] && lanes[j]->wval) bits |= 1u << j;
            res = op == W_BALLOT ? bits : op == W_ANY ? bits != 0 : bits == part;
            break;
        }
        case W_SYNC: break;
        case W_MATCH_ANY:
        case W_MATCH_ALL: {
            unsigned same = 0;
            for (unsigned j = 0; j < 32; j++)
                if (lanes[j] && lanes[j]->wval == f->wval) same |= 1u << j;
            if (op == W_MATCH_ANY) res = same;
            else {
                pred = same == part;
                res = pred ? part : 0;
            }
            break;
        }
        default: {   /* the __reduce_*_sync family over 32-bit values */
            bool first = true;
            uint32_t a = 0;
            for (unsigned j = 0; j < 32; j++) {
                if (!lanes[j]) continue;
                uint32_t v = (uint32_t)lanes[j]->wval;
                if (first) a = v;
                else switch (op) {
                    case W_REDUCE_ADD: case W_REDUCE_ADD_S: a = a + v; break;
                    case W_REDUCE_MIN: a = v < a ? v : a; break;
                    case W_REDUCE_MAX: a = v > a ? v : a; break;
                    case W_REDUCE_MIN_S: a = (int32_t)v < (int32_t)a ? v : a; break;
                    case W_REDUCE_MAX_S: a = (int32_t)v > (int32_t)a ? v : a; break;
                    case W_REDUCE_AND: a &= v; break;
                    case W_REDUCE_OR: a |= v; break;
                    case W_REDUCE_XOR: a ^= v; break;
                    }
                first = false;
            }
            res = a;
        }
        }
        f->wres = res;
        f->wpred = pred;
    }
    for (unsigned i = 0; i < 32; i++)
        if (lanes[i]) {
            lanes[i]->state = T_RUN;
            lanes[i]->wop = -1;
            w->warp_waiting[warp]--;
        }
    if (g_san) san_warp_sync(warp, part);
    return true;
}

/* The block barrier completes when every thread that has not exited is
   waiting at it: the PTX ISA's exit instruction releases a barrier for the
   threads that exit (so `if (i >= n) return; ... __syncthreads();` finishes on
   a GPU). The CUDA C++ Programming Guide still calls a barrier in
   non-uniform code undefined, so the emulator says so, once per barrier. */
bool release_barrier(Worker *w) {
    if (!w->bar_arrived || w->bar_arrived + w->ndone < w->nthreads) return false;
    int res = w->bar_acc;
    if (w->ndone) {
        static std::mutex mu;
        static std::unordered_set<std::string> said;
        std::lock_guard<std::mutex> lk(mu);
        if (said.insert(w->bar_site).second)
            fprintf(stderr, "cuemu: warning: kernel %s: %u of %u threads of block (%u,%u,%u) had exited when the others "
                            "reached %s; a GPU releases the barrier for exited threads, but the Programming Guide asks "
                            "every thread to reach it\n",
                    kernel_name(w->run), w->ndone, w->nthreads, w->block_idx.x, w->block_idx.y, w->block_idx.z, w->bar_site);
    }
    for (unsigned i = 0; i < w->nthreads; i++)
        if (w->thr[i].state == T_BAR) {
            w->thr[i].state = T_RUN;
            w->thr[i].bar_result = res;
        }
    if (t_thr && t_thr->state != T_DONE) t_thr->bar_result = res;
    w->bar_arrived = 0;
    if (g_san) san_block_barrier();
    return true;
}

/* A tile's sync (tile_barrier) completes when every thread of the tile
   that has not exited waits at it; exited ones release it, as for the
   block barrier (with the same warning). Threads of the tile waiting at
   another tile sync site are an error. */
bool release_tile(Worker *w, unsigned first, unsigned count) {
    unsigned arrived = 0, done = 0;
    const char *site = nullptr;
    for (unsigned i = first; i < first + count && i < w->nthreads; i++) {
        Thr &o = w->thr[i];
        if (o.state == T_DONE) { done++; continue; }
        if (o.state != T_BAR || o.tile_count != count || o.tile_first != first) return false;
        if (site && strcmp(site, o.bar_site) != 0)
            sync_error(nullptr,
                       "threads of one thread_block_tile of %u threads (block ranks %u..%u) wait at %s and at %s: every "
                       "thread of the tile must reach the same sync() (CUDA C++ Programming Guide, Cooperative Groups); "
                       "a GPU may hang or corrupt data here",
                       count, first, first + count - 1, site, o.bar_site);
        site = o.bar_site;
        arrived++;
    }
    if (!arrived) return false;
    if (done) {
        static std::mutex mu;
        static std::unordered_set<std::string> said;
        std::lock_guard<std::mutex> lk(mu);
        if (said.insert(site).second)
            fprintf(stderr, "cuemu: warning: kernel %s: %u of %u threads of a tile of block (%u,%u,%u) had exited when the "
                            "others reached %s; the Programming Guide asks every thread of the tile to reach it\n",
                    kernel_name(w->run), done, count, w->block_idx.x, w->block_idx.y, w->block_idx.z, site);
    }
    for (unsigned i = first; i < first + count && i < w->nthreads; i++) {
        Thr &o = w->thr[i];
        if (o.state == T_BAR) {
            o.state = T_RUN;
            o.tile_count = 0;
            w->tile_waiting--;
        }
    }
    return true;
}

/* A thread exited: tile syncs that waited for it may now be complete. */
void release_tiles(Worker *w) {
    for (unsigned i = 0; i < w->nthreads && w->tile_waiting; i++) {
        Thr &o = w->thr[i];
        if (o.state == T_BAR && o.tile_count) release_tile(w, o.tile_first, o.tile_count);
    }
}

/* __activemask(): the lanes of a warp that execute the same __activemask()
   together. With independent thread scheduling a GPU runs the lanes of a
   branch together; the emulator's equivalent: once every lane of the warp
   has exited or waits somewhere (a barrier, a warp exchange, an
   __activemask()), the lanes waiting at the same __activemask() call are the
   active ones, each gets their mask. Lanes elsewhere (the other branch,
   already exited) are not in it. */
void complete_active(Worker *w, unsigned warp) {
    if (!w->warp_active[warp]) return;
    unsigned base = warp * 32;
    for (unsigned i = 0; i < 32 && base + i < w->nthreads; i++) {
        TState st = w->thr[base + i].state;
        if (st == T_NEW || st == T_RUN) return;   /* still running: it may come here too */
    }
    for (unsigned i = 0; i < 32 && base + i < w->nthreads; i++) {
        Thr *a = &w->thr[base + i];
        if (a->state != T_WARP || a->wop != W_ACTIVE) continue;
        unsigned m = 0;
        for (unsigned j = 0; j < 32 && base + j < w->nthreads; j++) {
            Thr *b = &w->thr[base + j];
            if (b->state == T_WARP && b->wop == W_ACTIVE && (b->wsite == a->wsite || !strcmp(b->wsite, a->wsite))) m |= 1u << j;
        }
        for (unsigned j = 0; j < 32; j++)
            if ((m >> j) & 1) {
                Thr *b = &w->thr[base + j];
                b->wres = m;
                b->wop = -1;
                b->state = T_RUN;
                w->warp_waiting[warp]--;
                w->warp_active[warp]--;
            }
    }
}

/* A lane exited: operations that waited for it may now be complete. */
void lane_exited(Worker *w, Thr *t) {
    if (!w->warp_waiting[t->warp]) return;
    complete_active(w, t->warp);
    unsigned base = t->warp * 32;
    for (unsigned i = 0; i < 32 && base + i < w->nthreads; i++) {
        Thr *o = &w->thr[base + i];
        if (o->state == T_WARP && ((o->wmask >> t->lane) & 1)) try_complete(w, t->warp, o->wmask, o->wop);
    }
}

/* No thread can run and some have not finished: say who waits where. */
void diagnose_deadlock(Worker *w) {
    unsigned at_bar = 0, at_warp = 0, done = 0, first_done = ~0u, first_warp = ~0u, at_tile = 0;
    const char *site = nullptr, *tile_site = nullptr;
    for (unsigned i = 0; i < w->nthreads; i++) {
        Thr *t = &w->thr[i];
        if (t->state == T_BAR && t->tile_count) { at_tile++; tile_site = t->bar_site; }
        else if (t->state == T_BAR) { at_bar++; site = t->bar_site; }
        else if (t->state == T_WARP) { at_warp++; if (first_warp == ~0u) first_warp = i; }
        else if (t->state == T_DONE) { done++; if (first_done == ~0u) first_done = i; }
    }
    char where[128], msg[700];
    describe_block(where, sizeof where, w);
    if (at_tile)
        snprintf(msg, sizeof msg,
                 "%s: %u of %u threads wait at %s, %u at %s, %u have exited, %u wait in warp operations; every thread "
                 "of a thread_block_tile must reach its sync() (CUDA C++ Programming Guide, Cooperative Groups); a GPU "
                 "may hang here",
                 where, at_tile, w->nthreads, tile_site, at_bar, site ? site : "a block barrier", done, at_warp);
    else if (at_bar)
        snprintf(msg, sizeof msg,
                 "%s: %u of %u threads wait at %s, %u have exited (the first: thread %u), %u wait in warp operations; "
                 "__syncthreads() must be reached by every thread of the block (CUDA C++ Programming Guide); a GPU may "
                 "hang here",
                 where, at_bar, w->nthreads, site ? site : "a barrier", done, first_done, at_warp);
    else {
        Thr *t = &w->thr[first_warp];
        snprintf(msg, sizeof msg,
                 "%s: thread %u waits in %s with mask 0x%08x for lanes that never arrive (%u threads waiting in warp "
                 "operations, %u exited)",
                 where, first_warp, warp_op_name(t->wop), t->wmask, at_warp, done);
    }
    if (g_san) san_sync_error(msg, nullptr);
    fail_grid(w->run, cudaErrorLaunchFailure, "%s", msg);
}

/* The first fiber that is not busy (a block whose threads all wait at a
   barrier takes a fiber per thread: no scan from the start each time). */
Fiber *free_fiber(Worker *w) {
    for (size_t i = w->free_from; i < w->fibers.size(); i++)
        if (!w->fibers[i]->busy) {
            w->free_from = i;
            return w->fibers[i];
        }
    w->free_from = w->fibers.size();
    w->fibers.push_back(new_fiber(w));
    return w->fibers.back();
}

/* Fills the static variables with all one bits. Under AddressSanitizer the
   static region is poisoned except for the variables (exact bounds without
   the access hooks; an access to a gap is ASan's report). */
void prepare_static(Worker *w) {
    unsigned n = shared_var_count();
    if (__asan_poison_memory_region && __asan_unpoison_memory_region && w->poisoned_vars != n) {
        __asan_poison_memory_region(w->smem, kStaticCap);
        w->poisoned_vars = n;
    }
    for (unsigned i = 0; i < n; i++) {
        size_t off, size;
        shared_var_at(i, &off, &size);
        if (__asan_unpoison_memory_region) __asan_unpoison_memory_region(w->smem + off, size);
        memset(w->smem + off, 0xff, size);
    }
}

/* The shuffled schedule's loop: the next thread to run is drawn from those
   that can (resumable ones, and a fresh fiber for threads not started). */
void run_shuffled(Worker *w, GridRun *r) {
    unsigned n = w->nthreads;
    while (w->ndone < n && !w->block_abort && !r->abort) {
        w->ready.clear();
        for (unsigned i = 0; i < n && w->nsuspended; i++)
            if (w->thr[i].suspended && w->thr[i].state == T_RUN) w->ready.push_back(i);
        if (w->next_start < n) w->ready.push_back(n);
        if (w->ready.empty()) {
            diagnose_deadlock(w);
            break;
        }
        unsigned pick = w->ready[rng_next(w->acc.rng) % w->ready.size()];
        if (pick < n) {
            switch_to(w, w->thr[pick].fiber);
        } else {
            Fiber *f = free_fiber(w);
            f->busy = true;
            f->thr = nullptr;
            prime(f);
            switch_to(w, f);
        }
    }
}

void run_block(Worker *w, GridRun *r, uint64_t b) {
    const Grid &g = *r->g;
    w->block_idx = uint3{(unsigned)(b % g.grid.x), (unsigned)((b / g.grid.x) % g.grid.y),
                         (unsigned)(b / ((uint64_t)g.grid.x * g.grid.y))};
    blockIdx = w->block_idx;
    blockDim = g.block;
    gridDim = g.grid;
    unsigned n = g.block.x * g.block.y * g.block.z;
    if (w->thr.size() < n) w->thr.resize(n);
    w->warp_waiting.assign((n + 31) / 32, 0);
    w->warp_active.assign((n + 31) / 32, 0);
    w->nsuspended = 0;
    prepare_static(w);                                 /* shared memory starts undefined */
    if (g.smem) memset(dyn_base(w), 0xff, g.smem);
    w->acc.win = w->smem;
    w->acc.win_len = kStaticCap + kDynCap + g_page;
    w->acc.dyn = dyn_base(w);
    w->acc.dyn_bytes = g.smem;
    w->acc.shuffle = schedule().shuffle;
    w->acc.rng = r->seed ^ (b * 0xd1b54a32d192ed03ull);
    w->nthreads = n;
    w->ndone = 0;
    w->next_start = 0;
    w->bar_arrived = 0;
    w->tile_waiting = 0;
    w->bar_site = nullptr;
    w->block_abort = false;
    uint3 idx{0, 0, 0};
    for (unsigned i = 0; i < n; i++) {
        Thr &t = w->thr[i];
        t.view.thread_idx = idx;
        if (++idx.x == g.block.x) {   /* x fastest, then y, then z */
            idx.x = 0;
            if (++idx.y == g.block.y) { idx.y = 0; idx.z++; }
        }
        t.linear = i;
        t.lane = i & 31;
        t.warp = i >> 5;
        t.state = T_NEW;
        t.suspended = false;
        t.fiber = nullptr;
        t.wop = -1;
        t.tile_count = 0;
        t.atomics = 0;
        t.pend.clear();
        t.batch = 0;
    }
    for (Fiber *f : w->fibers) f->busy = false;
    w->free_from = 0;
    if (g_san) {
        san_block_begin(w->smem, kStaticCap + g.smem, dyn_base(w), g.smem);
        shared_vars_announce();
    }
    if (w->acc.shuffle) run_shuffled(w, r);
    while (!w->acc.shuffle && w->ndone < n && !w->block_abort && !r->abort) {
        bool ran = false;
        for (unsigned i = 0; i < n && w->nsuspended && !w->block_abort; i++) {
            Thr &t = w->thr[i];
            if (t.suspended && t.state == T_RUN) {
                switch_to(w, t.fiber);
                ran = true;
            }
        }
        /* threads not started yet: a fresh fiber runs them until one waits */
        while (w->next_start < n && !w->block_abort) {
            Fiber *f = free_fiber(w);
            f->busy = true;
            f->thr = nullptr;
            prime(f);
            switch_to(w, f);
            ran = true;
        }
        if (!ran && w->ndone < n && !w->block_abort) {
            diagnose_deadlock(w);
            break;
        }
    }
    for (Fiber *f : w->fibers)
        if (f->busy) f->dirty = true;   /* abandoned with live frames */
    if (g_san) san_block_end();
}

} /* namespace */

/* >>fiber entry and exits (called from assembly) */
extern "C" void cuemu_fiber_main(void *fp) {
    Fiber *f = (Fiber *)fp;
    Worker *w = f->w;
    asan_finish(nullptr, &w->sched_bottom, &w->sched_size);
    void (*body)(void *) = w->run->g->run;
    void *args = w->run->g->args;
    while (w->next_start < w->nthreads && !w->block_abort) {
        Thr *t = &w->thr[w->next_start++];
        f->thr = t;
        t->fiber = f;
        t->state = T_RUN;
        t_thr = t;
        threadIdx = t->view.thread_idx;
        body(args);
        t->state = T_DONE;
        t->fiber = nullptr;
        w->ndone++;
        lane_exited(w, t);
        release_barrier(w);
        release_tiles(w);
    }
    f->thr = nullptr;
    f->busy = false;
    if (f->index < w->free_from) w->free_from = f->index;
    switch_out(f, true);
    __builtin_unreachable();
}

/* Where a faulting fiber continues (the signal handler sends it here, on a
   fresh part of its own stack). */
extern "C" __attribute__((no_sanitize_address)) void cuemu_fiber_fault(void *fp) {
    Fiber *f = (Fiber *)fp;
    Worker *w = f->w;
    uintptr_t a = w->fault_addr;
    int sig = w->fault_sig;
    if (sig == SIGFPE)
        kernel_error(cudaErrorLaunchFailure, "integer division by zero (a GPU gives an undefined value; here it is an error)");
    if (a >= (uintptr_t)f->stack - g_page && a < (uintptr_t)f->stack)
        kernel_error(cudaErrorLaunchFailure, "stack overflow (the fiber stack is %zu KiB; set CUEMU_STACK_KB for more)",
                     f->stack_size / 1024);
    if (g_san && sig != SIGFPE) san_bad_access((const void *)a, 0, false, SAN_BAD_FAULT, w->fault_pc);
    if (a >= (uintptr_t)w->smem - kSharedGuard && a < (uintptr_t)w->smem)
        kernel_error(cudaErrorIllegalAddress, "out-of-bounds shared memory access at 0x%lx: %zu bytes before the block's shared memory",
                     (unsigned long)a, (size_t)((uintptr_t)w->smem - a));
    if (a >= (uintptr_t)dyn_base(w) && a < (uintptr_t)dyn_base(w) + kDynCap + kSharedGuard)
        kernel_error(cudaErrorIllegalAddress,
                     "out-of-bounds shared memory access at 0x%lx: %zu bytes past the start of the %zu bytes of dynamic "
                     "shared memory the launch asked for",
                     (unsigned long)a, (size_t)(a - (uintptr_t)dyn_base(w)), w->run->g->smem);
    /* kernel_error does not return (the fiber is abandoned): nothing with a destructor may be live */
    char d[256];
    {
        std::string why;
        if (device_range(w->run->g->device, (const void *)a, 1, &why)) why = "inside an allocation the device can reach";
        snprintf(d, sizeof d, "%s", why.c_str());
    }
    kernel_error(cudaErrorIllegalAddress, "illegal memory access at address 0x%lx (%s)", (unsigned long)a, d);
}

#if defined(__x86_64__)
asm(R"(
    .text
    .globl cuemu_fiber_fault_trampoline
    .type cuemu_fiber_fault_trampoline,@function
cuemu_fiber_fault_trampoline:
    andq $-16, %rsp
    callq cuemu_fiber_fault
    ud2
    .size cuemu_fiber_fault_trampoline, .-cuemu_fiber_fault_trampoline
)");
#elif defined(__aarch64__)
asm(R"(
    .text
    .globl cuemu_fiber_fault_trampoline
    .type cuemu_fiber_fault_trampoline,%function
cuemu_fiber_fault_trampoline:
    bl cuemu_fiber_fault
    brk #0
    .size cuemu_fiber_fault_trampoline, .-cuemu_fiber_fault_trampoline
)");
#endif

namespace {

struct sigaction g_old_segv, g_old_bus, g_old_fpe;

void chain(int sig, siginfo_t *si, void *uc) {
    struct sigaction *old = sig == SIGSEGV ? &g_old_segv : sig == SIGBUS ? &g_old_bus : &g_old_fpe;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) old->sa_sigaction(sig, si, uc);
        return;
    }
    if (old->sa_handler == SIG_IGN) return;
    if (old->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);   /* the fault repeats and takes the default action */
        return;
    }
    old->sa_handler(sig);
}

void on_fault(int sig, siginfo_t *si, void *ucv) {
    Fiber *f = t_fiber;
    if (f && f->w->run) {
        /* A kernel thread faulted: continue it at cuemu_fiber_fault on its own stack. */
        ucontext_t *uc = (ucontext_t *)ucv;
        f->w->fault_addr = (uintptr_t)si->si_addr;
        f->w->fault_sig = sig;
#if defined(__x86_64__)
        f->w->fault_pc = (const void *)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
        f->w->fault_pc = (const void *)uc->uc_mcontext.pc;
#endif
        uintptr_t top = (((uintptr_t)f->stack + f->stack_size) & ~(uintptr_t)15) - 512;
#if defined(__x86_64__)
        uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(top - 8);
        uc->uc_mcontext.gregs[REG_RDI] = (greg_t)f;
        uc->uc_mcontext.gregs[REG_RIP] = (greg_t)&cuemu_fiber_fault_trampoline;
#elif defined(__aarch64__)
        uc->uc_mcontext.sp = top;
        uc->uc_mcontext.regs[0] = (uint64_t)f;
        uc->uc_mcontext.pc = (uint64_t)&cuemu_fiber_fault_trampoline;
#endif
        return;
    }
    if (sig == SIGSEGV) {
        MemKind k = classify_in_signal(si->si_addr);
        if (k == MEM_DEVICE) {
            static const char m[] = "cuemu: host code touched device memory (a pointer from cudaMalloc): the host cannot "
                                    "read or write it; copy it with cudaMemcpy\n";
            ssize_t rc = write(2, m, sizeof m - 1);
            (void)rc;
        } else if (k == MEM_FREED) {
            static const char m[] = "cuemu: host code touched device memory that was already freed\n";
            ssize_t rc = write(2, m, sizeof m - 1);
            (void)rc;
        }
    }
    chain(sig, si, ucv);
}

} /* namespace */

void install_signal_handlers() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
    sigaction(SIGBUS, &sa, &g_old_bus);
    sigaction(SIGFPE, &sa, &g_old_fpe);
    ensure_altstack();
}

size_t fiber_stack_bytes() { return stack_bytes(); }

/* >>cooperative grids: the blocks of a cooperative launch that may call
   grid_group::sync() run at once, each on a host thread of its own (kept
   for later grids), so that every block can wait for the others (CUDA C++
   Programming Guide, "Grid Synchronization": all blocks of a cooperative
   launch are resident together; the launch checked that they fit). A grid
   of more threads than the host can hold on fibers at once (each waiting
   thread has a stack: vm.max_map_count / 4) runs as other grids do, and its
   grid_group::sync() is refused with a message. */
namespace {
struct CoopPool {
    std::mutex mu;
    std::condition_variable cv, done;
    int threads = 0;
    const std::function<void(int)> *job = nullptr;
    uint64_t gen = 0;
    int n = 0, next = 0, running = 0;
};
CoopPool &coop_pool() {
    static CoopPool *p = new CoopPool();   /* lives as long as its threads */
    return *p;
}
void coop_thread_main(uint64_t seen) {   /* seen: the last round it is not part of */
    CoopPool &P = coop_pool();
    std::unique_lock<std::mutex> lk(P.mu);
    for (;;) {
        P.cv.wait(lk, [&] { return P.gen != seen; });
        seen = P.gen;
        if (P.next >= P.n) continue;
        int i = P.next++;
        const std::function<void(int)> *job = P.job;
        lk.unlock();
        (*job)(i);
        lk.lock();
        if (--P.running == 0) P.done.notify_all();
    }
}
/* Runs job(0..n-1) on n host threads at once. */
void coop_run(int n, const std::function<void(int)> &job) {
    CoopPool &P = coop_pool();
    std::unique_lock<std::mutex> lk(P.mu);
    while (P.threads < n) {
        std::thread(coop_thread_main, P.gen).detach();
        P.threads++;
    }
    P.job = &job;
    P.n = n;
    P.next = 0;
    P.running = n;
    P.gen++;
    P.cv.notify_all();
    P.done.wait(lk, [&] { return P.running == 0; });
    P.job = nullptr;
}
uint64_t coop_thread_cap() {
    static uint64_t cap = [] {
        uint64_t m = 65530;
        if (FILE *f = fopen("/proc/sys/vm/max_map_count", "r")) {
            unsigned long long v;
            if (fscanf(f, "%llu", &v) == 1 && v > 0) m = v;
            fclose(f);
        }
        return m / 4;
    }();
    return cap;
}
/* Called with gmu held: every block has arrived or exited. */
void coop_release(GridRun *r) {
    if (r->gfinished) {
        fail_grid(r, cudaErrorLaunchFailure,
                  "%llu of %llu blocks exited without reaching grid_group::sync(), where the others wait: every block of "
                  "the grid must call it (CUDA C++ Programming Guide, Grid Synchronization; a GPU hangs here)",
                  (unsigned long long)r->gfinished, (unsigned long long)r->total);
        r->abort = true;
    } else {
        r->garrived = 0;
        r->ggen++;
    }
    r->gcv.notify_all();
}
void coop_block_done(GridRun *r) {
    std::lock_guard<std::mutex> lk(r->gmu);
    r->gfinished++;
    if (r->garrived && r->garrived + r->gfinished == r->total) coop_release(r);
}
} /* namespace */

bool grid_is_cooperative() {
    Worker *w = t_worker;
    return w && w->run && w->run->g->cooperative;
}

void grid_sync(const char *what) {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "%s called outside a kernel", what);
    Worker *w = t_fiber->w;
    GridRun *r = w->run;
    if (!r->g->cooperative)
        kernel_error(cudaErrorLaunchFailure,
                     "%s in a grid not launched with cudaLaunchCooperativeKernel: grid synchronization needs a cooperative "
                     "launch (CUDA C++ Programming Guide, Grid Synchronization; grid_group::is_valid() is false)", what);
    if (!r->resident)
        kernel_error(cudaErrorNotSupported,
                     "%s in a cooperative grid of %llu threads: the emulator keeps at most %llu threads resident at once "
                     "(not emulated)", what, (unsigned long long)(r->total * w->nthreads),
                     (unsigned long long)coop_thread_cap());
    (void)block_barrier(BAR_SYNC, 1, "grid_group::sync() (every thread of the block arrives)");
    bool leader = true;   /* the block's first thread that has not exited waits for the other blocks */
    for (unsigned j = 0; j < t->linear && leader; j++)
        if (w->thr[j].state != T_DONE) leader = false;
    if (leader) {
        std::unique_lock<std::mutex> lk(r->gmu);
        uint64_t gen = r->ggen;
        r->garrived++;
        if (r->garrived + r->gfinished == r->total) coop_release(r);
        else
            while (r->ggen == gen && !r->abort) r->gcv.wait_for(lk, std::chrono::milliseconds(50));
        bool released = r->ggen != gen;
        lk.unlock();
        if (!released) kernel_error(cudaErrorLaunchFailure, "the grid ended while this block waited in %s", what);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    (void)block_barrier(BAR_SYNC, 1, "grid_group::sync() (the block leaves together)");
}

/* >>grids */
void run_grid(Grid &g) {
    GridRun r;
    r.g = &g;
    r.total = (uint64_t)g.grid.x * g.grid.y * g.grid.z;
    /* A pointer the device cannot reach faults at its first use, not at the
       launch (kernel parameters are plain values: CUDA C++ Programming
       Guide, "Function Parameters"): a misaligned pointer faults at an
       access through it (the access hooks), a freed one at any access (its
       mapping is PROT_NONE), an address nothing is mapped at by the host's
       fault, and a base pointer just before an allocation (d - 1, for
       1-based indexing) is checked where its accesses land. Host memory
       and another device's memory stay readable here, so a pointer
       argument into them is refused as the kernel starts (stricter than a
       GPU for a kernel that never dereferences it). */
    for (const PtrArg &p : g.ptrs) {
        if (!p.value) continue;
        std::string why;
        /* a host global (a __device__ variable's host shadow among them) is host memory too */
        if (!device_range(g.device, p.value, 1, &why)) {
            Region reg;
            MemKind k = classify(p.value, &reg);
            if (k == MEM_FREED || !host_mapped(p.value)) continue;
            /* one past the end of an allocation is a valid pointer value */
            if (classify((const char *)p.value - 1, &reg) != MEM_UNKNOWN &&
                device_range(g.device, (const char *)p.value - 1, 1, nullptr))
                continue;
            bool base_before = false;
            for (size_t step = 1; step <= 4096 && !base_before; step *= 4)
                base_before = device_range(g.device, (const char *)p.value + step, 1, nullptr);
            if (base_before) continue;
            fail_grid(&r, cudaErrorIllegalAddress, "argument %d (pointer 0x%lx) is not memory the device can access: %s",
                      p.index + 1, (unsigned long)(uintptr_t)p.value, why.c_str());
        }
        if (r.abort) break;
    }
    const Schedule &sch = schedule();
    if (sch.shuffle) {
        uint64_t s = sch.seed * 0x9e3779b97f4a7c15ull + g_grids.fetch_add(1);
        r.seed = rng_next(s);
        if (r.total <= (1u << 22)) {   /* a random permutation */
            r.order.resize(r.total);
            for (uint32_t i = 0; i < r.total; i++) r.order[i] = i;
            for (uint64_t i = r.total; i > 1; i--) std::swap(r.order[i - 1], r.order[rng_next(s) % i]);
        } else {                       /* an affine one: mul odd and coprime to total */
            do r.mul = rng_next(s) % r.total | 1;
            while (std::__gcd(r.mul, r.total) != 1);
            r.add = rng_next(s) % r.total;
        }
    }
    /* the device's floating-point state: nvcc's --ftz=true reaches here as "|ftz" after the targets */
    bool ftz = g.site.archs && strstr(g.site.archs, "|ftz");
    if (!r.abort) {
        g_san = san_tool();   /* read again: a self-test may switch the tool between grids */
        hooks_refresh();
        if (g_san) san_kernel_begin(kernel_name(&r), g.site.file, g.site.line, g.grid, g.block, g.device);
        uint64_t threads = (uint64_t)g.block.x * g.block.y * g.block.z;
        r.resident = g.cooperative && r.total * threads <= coop_thread_cap();
        if (r.resident) {
            coop_run((int)r.total, [&](int i) {
                DeviceFpScope fp(ftz);
                Worker *w = worker();
                w->run = &r;
                open_dynamic(w, g.smem);
                uint64_t b = (uint64_t)i;
                if (sch.shuffle) b = r.order.empty() ? (unsigned __int128)r.mul * b % r.total + r.add : r.order[b];
                if (b >= r.total) b -= r.total;
                if (!r.abort) run_block(w, &r, b);
                w->run = nullptr;
                coop_block_done(&r);
            });
        } else {
        int parts = (int)(r.total < (uint64_t)pool_size() ? r.total : (uint64_t)pool_size());
        pool_run(parts, [&](int) {
            DeviceFpScope fp(ftz);
            Worker *w = worker();
            w->run = &r;
            open_dynamic(w, g.smem);
            for (uint64_t b; !r.abort && (b = r.next.fetch_add(1)) < r.total;) {
                if (sch.shuffle) b = r.order.empty() ? (unsigned __int128)r.mul * b % r.total + r.add : r.order[b];
                if (b >= r.total) b -= r.total;
                run_block(w, &r, b);
            }
            w->run = nullptr;
        });
        }
        if (g_san) san_kernel_end();
    }
    if (r.err) raise_sticky(g.device, (cudaError_t)r.err.load());
}

/* >>kernel-side API (cuemu/kernel.h) */
char *shared_base() {
    Worker *w = t_worker;
    if (!w || !w->run) {
        fprintf(stderr, "cuemu: a __shared__ variable was used outside a kernel launch\n");
        abort();
    }
    return w->smem;
}

size_t shared_register(size_t size, size_t align, const char *what) {
    size_t cur = g_static_used.load(), off, end;
    do {
        off = round_up(cur, align < 16 ? 16 : align);
        end = off + size;
    } while (!g_static_used.compare_exchange_weak(cur, end));
    if (end > kStaticCap) {
        fprintf(stderr, "cuemu: the program's static __shared__ variables need more than %zu KiB (%s)\n", kStaticCap / 1024,
                what);
        abort();
    }
    shared_var_add(off, size, what);
    if (g_san && t_worker && t_worker->run) san_shared_var(off, size, what);
    if (t_worker && t_worker->run) note_static_shared(t_worker->run->g->func, size);
    return off;
}

char *shared_fresh(size_t off, size_t size) {
    char *p = shared_base() + off;
    if (__asan_unpoison_memory_region) __asan_unpoison_memory_region(p, size);
    memset(p, 0xff, size);
    return p;
}

char *shared_dynamic_base() {
    shared_base();
    return dyn_base(t_worker);
}

int block_barrier(int kind, int pred, const char *what) {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "%s called outside a kernel", what);
    Worker *w = t_fiber->w;
    if (w->bar_arrived == 0) {
        w->bar_site = what;
        w->bar_kind = kind;
        w->bar_acc = kind == BAR_AND ? 1 : 0;
    } else if (w->bar_site != what && strcmp(w->bar_site, what) != 0) {   /* the same call: usually the same pointer */
        sync_error(__builtin_return_address(0),
                     "waits at %s while other threads of the block wait at %s: every thread of the block must reach "
                     "the same __syncthreads() (CUDA C++ Programming Guide); a GPU may hang or corrupt data here",
                     what, w->bar_site);
    }
    if (kind == BAR_COUNT) w->bar_acc += pred;
    else if (kind == BAR_AND) w->bar_acc &= pred;
    else if (kind == BAR_OR) w->bar_acc |= pred;
    t->bar_site = what;
    ++w->bar_arrived;
    if (release_barrier(w)) return t->bar_result;
    t->state = T_BAR;
    complete_active(w, t->warp);
    suspend(t);
    return t->bar_result;
}

void tile_barrier(unsigned first, unsigned count, const char *what) {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "%s called outside a kernel", what);
    Worker *w = t_fiber->w;
    /* racecheck orders accesses by block barriers and within a warp
       (sanitizer.cpp): a sync across the warps of a tile it cannot express,
       so it says so rather than report hazards the sync prevents */
    if (g_san && san_tool() == SAN_RACECHECK)
        kernel_error(cudaErrorNotSupported, "%s: racecheck does not follow the syncs of tiles of more than 32 threads "
                                            "(not emulated)", what);
    t->bar_site = what;
    t->tile_first = first;
    t->tile_count = count;
    t->state = T_BAR;
    w->tile_waiting++;
    if (release_tile(w, first, count)) return;
    complete_active(w, t->warp);
    suspend(t);
}

/* A thread_block_tile of more than 32 threads is made (CUDA C++
   Programming Guide, Cooperative Groups, "Thread Block Tile": sizes up to
   1024 are supported on devices of compute capability 8.0 and later without
   more, on earlier ones only with a block_tile_memory given to
   this_thread_block; the tile size must divide the block's). */
void tile_check(unsigned n, bool has_memory) {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "cooperative_groups::tiled_partition<%u> called outside a kernel", n);
    Worker *w = t_fiber->w;
    if (w->nthreads % n)
        kernel_error(cudaErrorLaunchFailure,
                     "cooperative_groups::tiled_partition<%u> of a block of %u threads: the tile size must divide the "
                     "block's (CUDA C++ Programming Guide, Cooperative Groups, \"Group Partitioning\")", n, w->nthreads);
    int dev = t_code_device >= 0 ? t_code_device : current_device();
    if (!has_memory && dev >= 0 && dev < device_count() && profile(dev).major < 8)
        kernel_error(cudaErrorLaunchFailure,
                     "cooperative_groups::tiled_partition<%u> on a device of compute capability %d.%d: tiles of more "
                     "than 32 threads need a block_tile_memory given to this_thread_block() below 8.0 (CUDA C++ "
                     "Programming Guide, Cooperative Groups, \"Thread Block Tile\")", n, profile(dev).major,
                     profile(dev).minor);
}

/* The block's scratch for the exchanges of such a tile: shfl's slots (64
   bytes for each of 1024 threads), then one slot of 128 bytes per warp
   (cg::reduce's partial results, any/all's votes), 32 warps. */
void *tile_scratch() {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "cg::reduce called outside a kernel");
    return t_fiber->w->tile_scratch;
}

uint64_t warp_op(int op, unsigned mask, uint64_t value, unsigned size, int arg, int width, int *pred) {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "%s called outside a kernel", warp_op_name(op));
    t->wpc = __builtin_return_address(0);
    if (!((mask >> t->lane) & 1))
        sync_error(t->wpc,
                     "lane %u calls %s with mask 0x%08x, which does not name it: each calling thread must have its own "
                     "bit set in the mask (CUDA C++ Programming Guide)",
                     t->lane, warp_op_name(op), mask);
    if (op <= W_SHFL_XOR && (width < 1 || width > 32 || (width & (width - 1))))
        kernel_error(cudaErrorLaunchFailure, "%s with width %d: width must be a power of 2 from 1 to 32", warp_op_name(op),
                     width);
    Worker *w = t_fiber->w;
    t->wop = op;
    t->wmask = mask;
    t->wval = value;
    t->warg = arg;
    t->wwidth = width;
    t->wsize = size;
    t->state = T_WARP;
    w->warp_waiting[t->warp]++;
    /* The last lane to arrive completes the exchange and then lets the others
       go first, so that the lanes of a warp resume in lane order (as if
       converged). */
    if (!try_complete(w, t->warp, mask, op) || mask != (1u << t->lane)) {
        complete_active(w, t->warp);
        if (t->state != T_RUN || mask != (1u << t->lane)) suspend(t);
    }
    if (pred) *pred = t->wpred;
    return t->wres;
}

unsigned active_mask(const char *site) {
    Thr *t = t_thr;
    if (!t) return 0;
    Worker *w = t_fiber->w;
    t->wop = W_ACTIVE;
    t->wsite = site;
    t->wmask = 0;
    t->state = T_WARP;
    w->warp_waiting[t->warp]++;
    w->warp_active[t->warp]++;
    complete_active(w, t->warp);
    suspend(t);   /* waits; or, completed by this lane, lets the others resume first, in lane order */
    return (unsigned)t->wres;
}

unsigned lane_id() { return t_thr ? t_thr->lane : 0; }

void yield_point() {
    Thr *t = t_thr;
    if (!t) return;
    suspend(t);   /* stays T_RUN: the scheduler runs the others first */
}

/* Atomics need naturally aligned addresses (CUDA C++ Programming Guide,
   "Atomic Functions" operate on a 32-, 64- or 128-bit word; "Device Memory
   Accesses": a misaligned access is an error). Checked here, not only by the
   access hooks, so that ASan builds check it too. */
void atomic_point(const void *addr, size_t size) {
    Thr *t = t_thr;
    if (!t) return;
    if ((uintptr_t)addr % size) {
        if (g_san) san_bad_access(addr, size, true, SAN_BAD_ALIGN, __builtin_return_address(0));
        kernel_error(cudaErrorMisalignedAddress,
                     "misaligned address 0x%lx for a %zu-byte atomic operation (atomics need naturally aligned addresses: "
                     "CUDA C++ Programming Guide, \"Device Memory Accesses\")",
                     (unsigned long)(uintptr_t)addr, size);
    }
    if ((++t->atomics & 15) == 0) yield_point();
    else if (t_access && t_access->shuffle && (rng_next(t_access->rng) & 3) == 0) shuffle_yield();
}

/* the form cuda_fp16.h and cuda_bf16.h call (their 16-bit words are checked by the access hooks) */
void atomic_point() {
    Thr *t = t_thr;
    if (t && (++t->atomics & 15) == 0) yield_point();
}

[[noreturn]] void kernel_fault(cudaError_t err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vkernel_error(err, fmt, ap);
}

void shuffle_yield() {
    Thr *t = t_thr;
    if (t && t->state == T_RUN) suspend(t);
}

void trap(const char *why) { kernel_error(cudaErrorLaunchFailure, "%s", why); }

void wmma_sync(int op, WmmaCall *call) {
    unsigned got = (unsigned)warp_op(op, 0xffffffffu, (uint64_t)(uintptr_t)call, 8, 0, 32, nullptr);
    if (got != 0xffffffffu) {
        Thr *t = t_thr;
        Worker *w = t_fiber->w;
        unsigned base = t->warp * 32, n = w->nthreads - base < 32 ? w->nthreads - base : 32;
        sync_error(t->wpc,
                   "%s: only lanes 0x%08x of warp %u reached it (%s): all 32 threads of the warp must call it together "
                   "(CUDA C++ Programming Guide, Warp Matrix Functions: the *_sync functions \"wait until all warp lanes "
                   "have arrived\")",
                   warp_op_name(op), got, t->warp,
                   n < 32 ? "the block's last warp has fewer than 32 threads" : "the others exited or took another path");
    }
}

[[noreturn]] void wmma_fault(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vkernel_error(cudaErrorMisalignedAddress, fmt, ap);
}

/* >>pipeline primitives (CUDA C++ Programming Guide, "Pipeline Primitives
   Interface"): __pipeline_memcpy_async copies size_and_align bytes (4, 8 or
   16; both pointers aligned to it; the last zfill bytes zeroed) from global
   to shared memory "asynchronously"; __pipeline_commit closes the thread's
   current batch; __pipeline_wait_prior(N) waits until all but the last N
   committed batches are complete. Here a copy happens when a wait covers
   its batch, never earlier: a thread that reads the destination before
   waiting sees what was there, one of the values a GPU may show it. */
void pipeline_copy(void *dst, const void *src, size_t n, size_t zfill) {
    Thr *t = t_thr;
    if (!t) kernel_error(cudaErrorLaunchFailure, "__pipeline_memcpy_async called outside a kernel");
    Worker *w = t_fiber->w;
    if (n != 4 && n != 8 && n != 16)
        kernel_error(cudaErrorLaunchFailure, "__pipeline_memcpy_async: size_and_align %zu (4, 8 or 16)", n);
    if (zfill > n) kernel_error(cudaErrorLaunchFailure, "__pipeline_memcpy_async: zfill %zu is more than %zu", zfill, n);
    if ((uintptr_t)dst % n || (uintptr_t)src % n)
        kernel_error(cudaErrorMisalignedAddress, "__pipeline_memcpy_async: %s pointer %p is not aligned to %zu bytes",
                     (uintptr_t)dst % n ? "destination" : "source", (uintptr_t)dst % n ? dst : src, n);
    char *lo = w->smem, *hi = w->smem + kStaticCap + kDynCap;
    if ((char *)dst < lo || (char *)dst + n > hi)
        kernel_error(cudaErrorIllegalAddress, "__pipeline_memcpy_async: the destination %p is not shared memory", dst);
    if ((const char *)src >= lo && (const char *)src < hi)
        kernel_error(cudaErrorIllegalAddress, "__pipeline_memcpy_async: the source %p is shared memory, not global", src);
    t->pend.push_back(Thr::PipeCopy{(char *)dst, (const char *)src, n, zfill, t->batch});
}
void pipeline_commit() {
    if (t_thr) t_thr->batch++;
}
void pipeline_wait_prior(size_t prior) {
    Thr *t = t_thr;
    if (!t) return;
    uint64_t done_below = t->batch > prior ? t->batch - prior : 0;   /* batches [0, done_below) complete */
    size_t keep = 0;
    for (size_t i = 0; i < t->pend.size(); i++) {
        Thr::PipeCopy &c = t->pend[i];
        if (c.batch < done_below) {
            std::string why;
            if (!device_range(t_fiber->w->run->g->device, c.src, c.n - c.zfill, &why))
                kernel_error(cudaErrorIllegalAddress, "__pipeline_memcpy_async from %p: %s", (const void *)c.src, why.c_str());
            memcpy(c.dst, c.src, c.n - c.zfill);
            memset(c.dst + (c.n - c.zfill), 0, c.zfill);
        } else {
            t->pend[keep++] = c;
        }
    }
    t->pend.resize(keep);
}

/* >>asynchronous copies bound to a cuda::barrier (<cuda/barrier>): kept
   per barrier and done when the barrier's current phase completes (libcu++'s
   cuda::memcpy_async: the copy's completion is bound to the barrier's
   phase), never earlier. */
namespace {
struct AsyncCopy { char *dst; const char *src; size_t n; };
std::mutex g_async_mu;
std::unordered_map<const void *, std::vector<AsyncCopy>> *g_async = new std::unordered_map<const void *, std::vector<AsyncCopy>>();
} /* namespace */
void async_copy_add(const void *key, void *dst, const void *src, size_t n) {
    if (!n) return;
    std::lock_guard<std::mutex> lk(g_async_mu);
    (*g_async)[key].push_back(AsyncCopy{(char *)dst, (const char *)src, n});
}
void async_copy_flush(const void *key) {
    std::vector<AsyncCopy> todo;
    {
        std::lock_guard<std::mutex> lk(g_async_mu);
        auto it = g_async->find(key);
        if (it == g_async->end()) return;
        todo.swap(it->second);
        g_async->erase(it);
    }
    for (const AsyncCopy &c : todo) memmove(c.dst, c.src, c.n);
}

/* The fragments' element-to-lane mapping: fixed by default; a permutation
   drawn from CUEMU_SEED under CUEMU_SCHEDULE=shuffle (mma.h). */
uint64_t wmma_layout_seed() { return schedule().shuffle ? schedule().seed * 0x9e3779b97f4a7c15ull + 1 : 0; }

} /* namespace cuemu */

/* >>clocks: clock64() and clock() count the multiprocessor's cycles (CUDA
   C++ Programming Guide, "Time Function": "a per-multiprocessor counter that
   is incremented every clock cycle"), at the rate the device reports
   (cudaDevAttrClockRate, kHz): host time scaled to it, so a kernel that
   waits N cycles takes N / rate seconds, as on the GPU. clock() is the
   32-bit counter (the PTX ISA's %clock) widened to clock_t: it wraps, and
   a difference of two samples is right modulo 2^32. */
namespace cuemu {
static long long device_cycles() {
    int dev = t_code_device >= 0 ? t_code_device : current_device();
    long long khz = dev >= 0 && dev < device_count() ? profile(dev).clock_khz : 1000000;
    return (long long)((__int128)now_ns() * khz / 1000000);
}
} /* namespace cuemu */
long long clock64() { return cuemu::device_cycles(); }

/* clock() in device code is the device's counter; in host code what the C
   library's is (processor time in CLOCKS_PER_SEC units, as glibc computes
   it). The runtime's definition takes the place of the C library's. */
extern "C" clock_t clock(void) noexcept {
    if (cuemu::t_fiber) return (clock_t)(int32_t)(uint32_t)cuemu::device_cycles();
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return (clock_t)-1;
    return (clock_t)(ts.tv_sec * CLOCKS_PER_SEC + ts.tv_nsec / (1000000000 / CLOCKS_PER_SEC));
}

/* assert() in a kernel: the CUDA message, then the grid ends with
   cudaErrorAssert. On the host: what glibc does. */
extern "C" void __assert_fail(const char *assertion, const char *file, unsigned int line, const char *function) {
    using namespace cuemu;
    Thr *t = t_thr;
    if (t) {
        Worker *w = t_fiber->w;
        fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file, line, function,
                w->block_idx.x, w->block_idx.y, w->block_idx.z, t->view.thread_idx.x, t->view.thread_idx.y,
                t->view.thread_idx.z, assertion);
        kernel_error(cudaErrorAssert, "device-side assert triggered");
    }
    fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name, file, line, function, assertion);
    abort();
}

/* Device math (cuemu/device_math.h) asks whether its caller is a kernel's
   thread: host code of a .cu file keeps the host's libm, as the host
   compiler that nvcc hands it to would give it. */
extern "C" int cuemu_in_device_code(void) { return cuemu::t_fiber != nullptr; }
