/* access.h - between the device code's instrumentation (access.cpp: the
   entry points that gcc's -fsanitize=thread and -fsanitize=alignment make
   every load, store and atomic of a .cu translation unit call) and the
   kernel executor (exec.cpp). Private to tests/emu/src. */
#ifndef CUEMU_ACCESS_H
#define CUEMU_ACCESS_H

#include "state.h"
#include <fenv.h>

namespace cuemu {

/* What the hooks need of the block that runs on this host thread. */
struct AccessCtx {
    char *win;             /* the worker's shared-memory window: [static region][dynamic region][guard page] */
    size_t win_len;
    char *dyn;             /* the dynamic region */
    size_t dyn_bytes;      /* dynamic shared memory of the launch */
    bool shuffle;          /* CUEMU_SCHEDULE=shuffle: switch threads at shared-memory accesses */
    uint64_t rng;          /* the block's own random stream (shuffle) */
};

/* Non-null only while a CUDA thread runs on this host thread (set by
   exec.cpp at each switch to a fiber): the hooks' fast path is this test. */
extern __thread AccessCtx *t_access;
extern int g_san;          /* san_tool(), read at start-up and as each grid starts */
extern int g_exact;        /* CUEMU_BOUNDS=exact (read by bounds_init, as the runtime starts) */
extern int g_global_hooks; /* device accesses to global memory: 0 not checked here, 1 a tool's slow path, 2 exact bounds only */
/* g_san read again (exec.cpp, as each grid starts): g_global_hooks follows it */
void hooks_refresh();

/* >>exact bounds (CUEMU_BOUNDS=exact): the exact [base, base + size) of
   each live allocation of the program (cudaMalloc, cudaMallocManaged,
   cudaMallocAsync), kept for the pages where it is not the whole page
   (its first and last): a device access there outside it faults. Nothing
   is kept unless the mode is on. */
void bounds_init();
void bounds_add(const void *base, size_t size);
void bounds_remove(const void *base, size_t size);

/* exec.cpp: the running CUDA thread raises a fault (ends it and its grid). */
[[noreturn]] void kernel_fault(cudaError_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* exec.cpp: the running thread lets another runnable thread of its block go first. */
void shuffle_yield();

/* access.cpp: static __shared__ variables by offset, for exact bounds. */
void shared_var_add(size_t off, size_t size, const char *what);
void shared_vars_announce();
unsigned shared_var_count();
void shared_var_at(unsigned i, size_t *off, size_t *size);   /* i < shared_var_count() */   /* san_shared_var() for each one (a block starts under a tool) */
/* The printable name of a variable from shared_var<>'s __PRETTY_FUNCTION__. */
std::string shared_var_name(const char *what);
uint64_t rng_next(uint64_t &s);

/* The device's floating-point environment for the code of one grid (or one
   library computation) on this host thread; the host thread's own is back
   when it ends. CUDA C++ Programming Guide, "Floating-Point Standard" and
   nvcc's --ftz (default false): device code rounds to nearest and keeps
   subnormals unless built with --ftz=true / --use_fast_math; it never sees
   the host thread's rounding mode or FTZ/DAZ bits. */
struct DeviceFpScope {
    fenv_t saved;
    unsigned long long ctl = 0;   /* MXCSR (x86-64) or FPCR (AArch64) */
    explicit DeviceFpScope(bool ftz);
    ~DeviceFpScope();
    DeviceFpScope(const DeviceFpScope &) = delete;
    DeviceFpScope &operator=(const DeviceFpScope &) = delete;
};

} /* namespace cuemu */

#endif
