/* cuemu/kernel.h - what a kernel sees on the emulated device (C++ only,
   included by cuda_runtime.h in .cu files).

   A launch runs every block's threads as fibers on one host thread (blocks
   of one launch spread over the emulator's worker threads). Built-in
   variables read the running fiber's state; __syncthreads, the warp
   intrinsics and the cooperative-groups calls switch fibers. Everything here
   is a thin front for the runtime (tests/emu/src/exec.cpp), which checks the
   rules the CUDA C++ Programming Guide states for each call. */
#ifndef CUEMU_KERNEL_H
#define CUEMU_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <tuple>
#include <type_traits>
#include <utility>
#include "../cuda_runtime_api.h"
#include "texture.h"

namespace cuemu {

/* >>builtins: the running thread and block. Thread-local variables that the
   runtime sets each time it switches to a fiber, so they always describe
   the CUDA thread running on this host thread. */
struct ThreadView { uint3 thread_idx; };

} /* namespace cuemu */

extern __thread uint3 threadIdx;
extern __thread uint3 blockIdx;
extern __thread dim3 blockDim;
extern __thread dim3 gridDim;
static constexpr int warpSize = 32;

namespace cuemu {

/* >>launch */
/* A pointer argument of a kernel, checked when the kernel starts: the GPU
   faults on the first access to memory it cannot reach. */
struct PtrArg { const void *value; size_t align; int index; const char *type; };

struct LaunchSite {
    const char *kernel;   /* the kernel expression as written */
    const char *file;
    int line;
    const char *archs;    /* the translation unit's targets, "sm_80,compute_90" */
};

/* Queues a launch (or records why it is refused in the last error).
   run(args) executes the kernel body for the calling fiber; destroy(args)
   frees the argument block after the grid is done. */
cudaError_t launch(const LaunchSite &site, const void *func, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   void (*run)(void *), void *args, void (*destroy)(void *), const PtrArg *ptrs, int nptrs, int cooperative);

/* cudaLaunchKernelEx's attributes that the launch must satisfy before it
   is queued (cluster dimensions, ...): cudaSuccess or the launch's error,
   recorded as the last error. */
cudaError_t launch_attrs_check(const cudaLaunchConfig_t *config, const void *func);

template <class T> struct PtrInfo { static constexpr bool is_ptr = false; };
template <class T> struct PtrInfo<T *> {
    static constexpr bool is_ptr = true;
    static size_t align() {
        if constexpr (std::is_void_v<std::remove_cv_t<T>> || std::is_function_v<T>) return 1;
        else return alignof(T);
    }
};

template <class... P> struct Kernel {
    using Args = std::tuple<std::decay_t<P>...>;
    void (*fn)(P...);
    LaunchSite site;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    int cooperative;

    struct Block {
        void (*fn)(P...);
        Args args;
    };
    static void run(void *p) {
        Block *b = (Block *)p;
        std::apply(b->fn, b->args);   /* each thread gets its own copy of the parameters */
    }
    static void destroy(void *p) { delete (Block *)p; }

    template <class... A> cudaError_t operator()(A &&...a) const {
        static_assert(sizeof...(A) == sizeof...(P), "cuemu: a kernel launch needs one argument per kernel parameter");
        Block *b = new Block{fn, Args(std::forward<A>(a)...)};
        PtrArg ptrs[sizeof...(P) + 1];
        int n = 0;
        fill_ptrs(b->args, ptrs, n, std::index_sequence_for<P...>{});
        return launch(site, (const void *)fn, grid, block, smem, stream, &run, b, &destroy, ptrs, n, cooperative);
    }

private:
    template <class T> static void add_ptr(const T &v, int idx, PtrArg *out, int &n) {
        if constexpr (std::is_pointer_v<T>) out[n++] = PtrArg{(const void *)(uintptr_t)v, PtrInfo<T>::align(), idx, nullptr};
    }
    template <size_t... I> static void fill_ptrs(const Args &t, PtrArg *out, int &n, std::index_sequence<I...>) {
        (void)t; (void)out; (void)n;
        (add_ptr(std::get<I>(t), (int)I, out, n), ...);
    }
};

/* The rewrite of k<<<grid, block, smem, stream>>>(args) by tests/emu/nvcc-emu:
   ::cuemu::kernel_call(k, "k", "file.cu", line, archs, grid, block, smem, stream)(args) */
template <class... P>
Kernel<P...> kernel_call(void (*fn)(P...), const char *name, const char *file, int line, const char *archs, dim3 grid,
                         dim3 block, size_t smem = 0, cudaStream_t stream = 0) {
    return Kernel<P...>{fn, LaunchSite{name, file, line, archs}, grid, block, smem, stream, 0};
}

/* cudaLaunchKernel's void **args: the i-th entry points at the i-th argument. */
template <class... P, size_t... I>
std::tuple<std::decay_t<P>...> args_from_array(void **args, std::index_sequence<I...>) {
    return std::tuple<std::decay_t<P>...>(*(std::decay_t<P> *)args[I]...);
}

template <class... P>
cudaError_t launch_from_array(void (*fn)(P...), dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream,
                              int cooperative, const char *name, const char *archs) {
    if (sizeof...(P) > 0 && !args) return cudaErrorInvalidValue;
    Kernel<P...> k{fn, LaunchSite{name, "(cudaLaunchKernel)", 0, archs}, grid, block, smem, stream, cooperative};
    return std::apply([&](auto &&...a) { return k(a...); }, args_from_array<P...>(args, std::index_sequence_for<P...>{}));
}

/* >>shared memory (the nvcc-emu rewrite of __shared__ declarations) */
/* Start of the calling worker's shared-memory window for the running block. */
char *shared_base();
/* Registers a static __shared__ variable once; returns its offset. */
size_t shared_register(size_t size, size_t align, const char *what);
/* Start of the block's dynamic shared memory (extern __shared__). */
char *shared_dynamic_base();

/* Called once per host thread for each variable (it initialises a
   thread_local reference): the storage is fresh there, so it is filled with
   all one bits, as run_block does for every later block. */
char *shared_fresh(size_t off, size_t size);

template <class T, unsigned long long ID, size_t A>
T &shared_var() {
    static const size_t off = shared_register(sizeof(T), A ? A : alignof(T), __PRETTY_FUNCTION__);
    return *reinterpret_cast<T *>(shared_fresh(off, sizeof(T)));
}
template <class T>
T (&shared_dynamic())[] {
    return *reinterpret_cast<T (*)[]>(shared_dynamic_base());
}

/* >>sync: barriers and warp exchanges, implemented by the runtime */
enum BarrierKind { BAR_SYNC = 0, BAR_COUNT, BAR_AND, BAR_OR };
int block_barrier(int kind, int pred, const char *what);
/* cooperative_groups' tiles of more than 32 threads (exec.cpp): the sync
   of the threads of block ranks [first, first + count); the checks when one
   is made; the block's scratch for their exchanges (shfl: 1024 slots of 64
   bytes; then cg::reduce, any, all: 32 slots of 128 bytes). */
void tile_barrier(unsigned first, unsigned count, const char *what);
void tile_check(unsigned n, bool has_memory);
void *tile_scratch();
enum WarpOp {
    W_SHFL = 0, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_SYNC, W_MATCH_ANY, W_MATCH_ALL,
    W_REDUCE_ADD, W_REDUCE_MIN, W_REDUCE_MAX, W_REDUCE_AND, W_REDUCE_OR, W_REDUCE_XOR, W_REDUCE_MIN_S, W_REDUCE_MAX_S,
    W_REDUCE_ADD_S, W_ACTIVE,
    W_WMMA_LOAD, W_WMMA_STORE, W_WMMA_MMA   /* <mma.h>: nvcuda::wmma::*_sync (the whole warp, see WmmaCall there) */
};
/* One warp-level exchange: every non-exited lane named in mask must make
   the same call. Returns the lane's result; *pred (match_all) is set. */
uint64_t warp_op(int op, unsigned mask, uint64_t value, unsigned size, int arg, int width, int *pred);
/* One lane's part in a warp matrix operation (<mma.h>). key[] holds what
   must be the same in every lane (pointer, ldm, layout), what[]/show[] name
   and print it for the error; run(lanes) performs the operation for the
   whole warp once all 32 lanes are there (lanes[i]: lane i's call). */
struct WmmaCall {
    uint64_t key[4];
    const char *what[4];
    char show[4][24];
    void (*run)(WmmaCall *const *lanes);
    void *frag[4];      /* load/store: [0] the fragment; mma: d, a, b, c */
    void *ptr;          /* load/store: the memory */
    unsigned ldm;
    int layout;         /* 0 row major, 1 column major */
};
/* Waits for the warp, checks the calls agree, runs the operation; a lane
   that did not come (exited, or a partial warp) is an error. */
void wmma_sync(int op, WmmaCall *call);
/* A misaligned pointer or ldm: ends the grid (cudaErrorMisalignedAddress). */
[[noreturn]] void wmma_fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0: the fragments' fixed element mapping; else the seed of a permuted one. */
uint64_t wmma_layout_seed();
/* The lanes of the calling warp that reach this call (site) together. */
unsigned active_mask(const char *site);
unsigned lane_id();
/* cooperative_groups::grid_group::sync(): every thread of every block of
   the grid waits there (a cooperative launch only); grid_is_cooperative():
   whether the running grid was launched so. */
void grid_sync(const char *what);
bool grid_is_cooperative();
/* cuda_pipeline_primitives.h: the calling thread's asynchronous copies (exec.cpp) */
void pipeline_copy(void *dst, const void *src, size_t size_and_align, size_t zfill);
void pipeline_commit();
void pipeline_wait_prior(size_t prior);
/* <cuda/barrier>'s cuda::memcpy_async: copies bound to the barrier at key,
   done when its phase completes (async_copy_flush). */
void async_copy_add(const void *key, void *dst, const void *src, size_t n);
void async_copy_flush(const void *key);
/* A point where a spinning thread lets the others of its block run. */
void yield_point();
void trap(const char *why);

template <class T> inline uint64_t to_bits(T v) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "cuemu: shuffles move values of at most 8 bytes");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof(T));
    return u;
}
template <class T> inline T from_bits(uint64_t u) {
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

} /* namespace cuemu */

/* >>intrinsics: synchronisation */
/* Macros, so that the runtime can name the barrier a thread waits at and
   tell threads waiting at different __syncthreads() apart (undefined
   behaviour in the Programming Guide; an error here). */
#define CUEMU_STR2(x) #x
#define CUEMU_STR(x) CUEMU_STR2(x)
#define CUEMU_SITE(what) what " at " __FILE__ ":" CUEMU_STR(__LINE__)
#define __syncthreads() ((void)cuemu::block_barrier(cuemu::BAR_SYNC, 1, CUEMU_SITE("__syncthreads()")))
#define __syncthreads_count(pred) cuemu::block_barrier(cuemu::BAR_COUNT, (pred) != 0, CUEMU_SITE("__syncthreads_count()"))
#define __syncthreads_and(pred) cuemu::block_barrier(cuemu::BAR_AND, (pred) != 0, CUEMU_SITE("__syncthreads_and()"))
#define __syncthreads_or(pred) cuemu::block_barrier(cuemu::BAR_OR, (pred) != 0, CUEMU_SITE("__syncthreads_or()"))
inline void __syncwarp(unsigned mask = 0xffffffffu) { cuemu::warp_op(cuemu::W_SYNC, mask, 0, 0, 0, 32, nullptr); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __nanosleep(unsigned) { cuemu::yield_point(); }
#define __activemask() cuemu::active_mask(CUEMU_SITE("__activemask()"))
[[noreturn]] inline void __trap() { cuemu::trap("__trap()"); __builtin_unreachable(); }
inline void __brkpt() { cuemu::trap("__brkpt()"); }
long long clock64();
/* CUDA Runtime API, cudaGraphSetConditional: device code sets a conditional
   node's handle (the toolkit declares it for device code only) */
extern "C" void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);

/* >>intrinsics: warp shuffles and votes (any type of at most 8 bytes) */
template <class T> inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
    return cuemu::from_bits<T>(cuemu::warp_op(cuemu::W_SHFL, mask, cuemu::to_bits(var), sizeof(T), srcLane, width, nullptr));
}
template <class T> inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return cuemu::from_bits<T>(cuemu::warp_op(cuemu::W_SHFL_UP, mask, cuemu::to_bits(var), sizeof(T), (int)delta, width, nullptr));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return cuemu::from_bits<T>(cuemu::warp_op(cuemu::W_SHFL_DOWN, mask, cuemu::to_bits(var), sizeof(T), (int)delta, width, nullptr));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
    return cuemu::from_bits<T>(cuemu::warp_op(cuemu::W_SHFL_XOR, mask, cuemu::to_bits(var), sizeof(T), laneMask, width, nullptr));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return (unsigned)cuemu::warp_op(cuemu::W_BALLOT, mask, pred != 0, 4, 0, 32, nullptr);
}
inline int __any_sync(unsigned mask, int pred) { return (int)cuemu::warp_op(cuemu::W_ANY, mask, pred != 0, 4, 0, 32, nullptr); }
inline int __all_sync(unsigned mask, int pred) { return (int)cuemu::warp_op(cuemu::W_ALL, mask, pred != 0, 4, 0, 32, nullptr); }
inline int __uni_sync(unsigned mask, int pred) {
    int any = __any_sync(mask, pred), all = __all_sync(mask, pred);
    return any == all;
}
template <class T> inline unsigned __match_any_sync(unsigned mask, T value) {
    return (unsigned)cuemu::warp_op(cuemu::W_MATCH_ANY, mask, cuemu::to_bits(value), sizeof(T), 0, 32, nullptr);
}
template <class T> inline unsigned __match_all_sync(unsigned mask, T value, int *pred) {
    return (unsigned)cuemu::warp_op(cuemu::W_MATCH_ALL, mask, cuemu::to_bits(value), sizeof(T), 0, 32, pred);
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return (unsigned)cuemu::warp_op(cuemu::W_REDUCE_ADD, mask, v, 4, 0, 32, nullptr); }
inline int __reduce_add_sync(unsigned mask, int v) { return (int)cuemu::warp_op(cuemu::W_REDUCE_ADD_S, mask, (uint32_t)v, 4, 0, 32, nullptr); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return (unsigned)cuemu::warp_op(cuemu::W_REDUCE_MIN, mask, v, 4, 0, 32, nullptr); }
inline int __reduce_min_sync(unsigned mask, int v) { return (int)cuemu::warp_op(cuemu::W_REDUCE_MIN_S, mask, (uint32_t)v, 4, 0, 32, nullptr); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return (unsigned)cuemu::warp_op(cuemu::W_REDUCE_MAX, mask, v, 4, 0, 32, nullptr); }
inline int __reduce_max_sync(unsigned mask, int v) { return (int)cuemu::warp_op(cuemu::W_REDUCE_MAX_S, mask, (uint32_t)v, 4, 0, 32, nullptr); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return (unsigned)cuemu::warp_op(cuemu::W_REDUCE_AND, mask, v, 4, 0, 32, nullptr); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return (unsigned)cuemu::warp_op(cuemu::W_REDUCE_OR, mask, v, 4, 0, 32, nullptr); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return (unsigned)cuemu::warp_op(cuemu::W_REDUCE_XOR, mask, v, 4, 0, 32, nullptr); }

/* >>intrinsics: atomics. Relaxed, as on the GPU; every few calls a thread
   yields so that a spin loop on an atomic lets its block make progress. */
namespace cuemu {
template <class T> inline T atomic_rmw_cas(T *addr, T (*f)(T, T), T v) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cuemu: 32- or 64-bit atomics");
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    U *u = (U *)addr;
    U old = __atomic_load_n(u, __ATOMIC_RELAXED);
    for (;;) {
        T o;
        memcpy(&o, &old, sizeof o);
        T n = f(o, v);
        U nb;
        memcpy(&nb, &n, sizeof nb);
        if (__atomic_compare_exchange_n(u, &old, nb, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return o;
    }
}
/* Every atomic: a misaligned address faults (its operand must be naturally
   aligned); every few calls a thread yields. */
void atomic_point(const void *addr, size_t size);
} /* namespace cuemu */

#define CUEMU_ATOMIC_INT(T)                                                                                          \
    inline T atomicAdd(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }      \
    inline T atomicSub(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }      \
    inline T atomicExch(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }    \
    inline T atomicAnd(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }      \
    inline T atomicOr(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }        \
    inline T atomicXor(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }      \
    inline T atomicMin(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<T>(a, [](T o, T x) { return x < o ? x : o; }, v); } \
    inline T atomicMax(T *a, T v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<T>(a, [](T o, T x) { return x > o ? x : o; }, v); } \
    inline T atomicCAS(T *a, T compare, T v) {                                                                       \
        cuemu::atomic_point(a, sizeof(*a));                                                                                      \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                     \
        return compare;                                                                                             \
    }
CUEMU_ATOMIC_INT(int)
CUEMU_ATOMIC_INT(unsigned int)
CUEMU_ATOMIC_INT(unsigned long long)
#undef CUEMU_ATOMIC_INT
inline long long atomicMin(long long *a, long long v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<long long>(a, [](long long o, long long x) { return x < o ? x : o; }, v); }
inline long long atomicMax(long long *a, long long v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<long long>(a, [](long long o, long long x) { return x > o ? x : o; }, v); }
inline float atomicAdd(float *a, float v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<float>(a, [](float o, float x) { return o + x; }, v); }
inline double atomicAdd(double *a, double v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<double>(a, [](double o, double x) { return o + x; }, v); }
inline float atomicExch(float *a, float v) { cuemu::atomic_point(a, sizeof(*a)); return cuemu::atomic_rmw_cas<float>(a, [](float, float x) { return x; }, v); }
inline unsigned short atomicCAS(unsigned short *a, unsigned short compare, unsigned short v) {
    cuemu::atomic_point(a, sizeof(*a));
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}
/* ((old >= val) ? 0 : (old + 1)) and (((old == 0) || (old > val)) ? val : (old - 1)), per the Programming Guide. */
inline unsigned atomicInc(unsigned *a, unsigned v) {
    cuemu::atomic_point(a, sizeof(*a));
    return cuemu::atomic_rmw_cas<unsigned>(a, [](unsigned o, unsigned x) { return o >= x ? 0u : o + 1u; }, v);
}
inline unsigned atomicDec(unsigned *a, unsigned v) {
    cuemu::atomic_point(a, sizeof(*a));
    return cuemu::atomic_rmw_cas<unsigned>(a, [](unsigned o, unsigned x) { return (o == 0 || o > x) ? x : o - 1u; }, v);
}
#define CUEMU_SCOPED(name)                                                                                           \
    template <class... A> inline auto name##_block(A... a) -> decltype(name(a...)) { return name(a...); }            \
    template <class... A> inline auto name##_system(A... a) -> decltype(name(a...)) { return name(a...); }
CUEMU_SCOPED(atomicAdd) CUEMU_SCOPED(atomicSub) CUEMU_SCOPED(atomicExch) CUEMU_SCOPED(atomicMin) CUEMU_SCOPED(atomicMax)
CUEMU_SCOPED(atomicInc) CUEMU_SCOPED(atomicDec) CUEMU_SCOPED(atomicCAS) CUEMU_SCOPED(atomicAnd) CUEMU_SCOPED(atomicOr)
CUEMU_SCOPED(atomicXor)
#undef CUEMU_SCOPED

/* >>intrinsics: loads through the read-only cache are plain loads here. */
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }
template <class T> inline void __stwt(T *p, T v) { *p = v; }

#endif
