/* access.cpp - every load, store and atomic of device code, as the GPU sees
   them.

   nvcc-emu compiles .cu translation units with gcc's ThreadSanitizer
   instrumentation (-fsanitize=thread, no libtsan linked) and UBSan's
   alignment check (-fsanitize=alignment): the compiler then calls the entry
   points below around each access. This file defines them: outside a kernel
   (host code of a .cu file, which shares the translation unit) they test one
   thread-local pointer and return; inside a kernel they apply the rules a
   GPU applies to the access, then tell the compute-sanitizer tools
   (sanitizer.h) about it.
   - Natural alignment: CUDA C++ Programming Guide, "Device Memory Accesses",
     "Size and Alignment Requirement": memory instructions read or write
     words of 1, 2, 4, 8 or 16 bytes whose address is a multiple of the size
     (naturally aligned); a misaligned access is an error
     (cudaErrorMisalignedAddress, sticky; Runtime API, enum cudaError: "The
     device encountered a load or store instruction on a memory address
     which is not aligned ... any further CUDA work will return the same
     error").
   - Shared memory bounds: CUDA C++ Programming Guide, "Shared Memory" /
     "__shared__": a static variable has the size it is declared with, and
     extern __shared__ arrays start at the dynamic shared memory whose size
     the launch gives (Execution Configuration, Ns); an access outside both
     is an out-of-bounds shared access (cudaErrorIllegalAddress; the
     compute-sanitizer's memcheck reports "Invalid __shared__ write").
   - Exact global bounds, an opt-in mode (CUEMU_BOUNDS=exact; the default
     is CUEMU_BOUNDS=default): an allocation's start is 256-byte aligned
     (Programming Guide, "Device Memory Accesses": addresses returned by
     the allocation routines are aligned to at least 256 bytes) and it ends
     at a guard page, so by default an access just past an odd-sized
     allocation, or just before it on its first page, reads the padding
     silently, as a GPU's does (its allocations are rounded up too). In
     exact mode any load, store or atomic of device code outside the exact
     [base, base + size) of a live allocation (cudaMalloc, cudaMallocPitch,
     cudaMallocManaged, cudaMallocAsync) faults as an illegal address does
     (cudaErrorIllegalAddress, sticky: Runtime API, enum cudaError, "The
     device encountered a load or store instruction on an invalid memory
     address ... any further CUDA work will return the same error"). Memory
     that is no allocation (locals, __device__ variables, kernel
     parameters) is not checked here.
   Builds under AddressSanitizer (the self-tests' and gpudl's ASan runs) have
   no ThreadSanitizer instrumentation (gcc refuses the mix): there the
   alignment check still runs, shared-memory bounds fall back to ASan's
   poisoning (exec.cpp), and the sanitizer tools and shuffled schedules see
   no accesses. */
#include "access.h"
#include "sanitizer.h"
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__)
#  include <xmmintrin.h>
#endif

namespace cuemu {

__thread AccessCtx *t_access;
int g_san = san_tool();

namespace {
int read_bounds_mode() {
    const char *e = getenv("CUEMU_BOUNDS");
    if (!e || !*e || !strcmp(e, "default")) return 0;
    if (!strcmp(e, "exact")) return 1;
    fprintf(stderr, "cuemu: warning: CUEMU_BOUNDS=%s is not known (default or exact); using default\n", e);
    return 0;
}
} /* namespace */
int g_exact = 0;
int g_global_hooks = g_san ? 1 : 0;
void hooks_refresh() { g_global_hooks = g_san ? 1 : g_exact ? 2 : 0; }
#if defined(__x86_64__)
const unsigned g_page_shift = 12;   /* x86-64 Linux: 4 KiB pages */
#else
unsigned g_page_shift = 12;         /* AArch64: 4, 16 or 64 KiB, read at start-up */
#endif
void bounds_init() {
#if !defined(__x86_64__)
    g_page_shift = (unsigned)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
#endif
    g_exact = read_bounds_mode();
    hooks_refresh();
}

/* >>exact bounds: a two-level table from a page to the exact bounds of the
   allocation with padding on it (a page holds at most one allocation: each
   is a mapping of its own). Written under a lock as allocations come and
   go, read without one by the access hooks (hi is written last and cleared
   first). */
namespace {
struct PageBounds { std::atomic<uintptr_t> lo, hi; };
const unsigned kLeafBits = 18;
const size_t kTopEntries = (size_t)1 << 18;   /* with 4 KiB pages: 2^48 bytes of address space */
std::atomic<PageBounds *> g_bounds_top[kTopEntries];
std::mutex g_bounds_mu;

inline PageBounds *bounds_slot(uintptr_t a, bool create) {
    uintptr_t page = a >> g_page_shift;
    size_t top = (size_t)(page >> kLeafBits);
    if (top >= kTopEntries) return nullptr;
    PageBounds *leaf = g_bounds_top[top].load(std::memory_order_acquire);
    if (__builtin_expect(!leaf, 0)) {
        if (!create) return nullptr;
        void *p = mmap(nullptr, sizeof(PageBounds) << kLeafBits, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return nullptr;
        leaf = (PageBounds *)p;
        g_bounds_top[top].store(leaf, std::memory_order_release);
    }
    return &leaf[page & (((uintptr_t)1 << kLeafBits) - 1)];
}

void bounds_set(uintptr_t page_addr, uintptr_t lo, uintptr_t hi) {
    PageBounds *b = bounds_slot(page_addr, hi != 0);
    if (!b) return;
    if (hi) {
        b->lo.store(lo, std::memory_order_relaxed);
        b->hi.store(hi, std::memory_order_release);
    } else {
        b->hi.store(0, std::memory_order_release);
        b->lo.store(0, std::memory_order_relaxed);
    }
}
} /* namespace */

void bounds_add(const void *base, size_t size) {
    if (!g_exact || !base || !size) return;
    std::lock_guard<std::mutex> lk(g_bounds_mu);
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    bounds_set(lo, lo, hi);
    bounds_set(hi - 1, lo, hi);
}

void bounds_remove(const void *base, size_t size) {
    if (!g_exact || !base || !size) return;
    std::lock_guard<std::mutex> lk(g_bounds_mu);
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    bounds_set(lo, 0, 0);
    bounds_set(hi - 1, 0, 0);
}

/* >>static shared variables: a map from each byte of the static region to
   the variable that owns it (0: none), filled as variables register. */
namespace {
struct SharedVar { size_t off, size; const char *what; };
const size_t kMapBytes = 256 * 1024;        /* exec.cpp's kStaticCap */
const unsigned kMaxVars = 65535;
uint16_t g_owner[kMapBytes];
SharedVar g_vars[kMaxVars + 1];
std::atomic<unsigned> g_nvars{0};
std::mutex g_vars_mu;
} /* namespace */

void shared_var_add(size_t off, size_t size, const char *what) {
    std::lock_guard<std::mutex> lk(g_vars_mu);
    unsigned id = g_nvars.load() + 1;
    if (id > kMaxVars || off + size > kMapBytes) return;   /* exec.cpp refuses the program before this */
    g_vars[id] = SharedVar{off, size, what};
    for (size_t i = 0; i < size; i++) __atomic_store_n(&g_owner[off + i], (uint16_t)id, __ATOMIC_RELAXED);
    g_nvars.store(id);
}

unsigned shared_var_count() { return g_nvars.load(); }
void shared_var_at(unsigned i, size_t *off, size_t *size) {
    *off = g_vars[i + 1].off;
    *size = g_vars[i + 1].size;
}

std::string shared_var_name(const char *what) {
    /* "T& cuemu::shared_var() [with T = float [256]; long long unsigned int ID = ...]" -> "float [256]" */
    std::string s = what ? what : "?";
    size_t a = s.find("T = ");
    if (a == std::string::npos) return s;
    a += 4;
    size_t b = s.find(';', a);
    return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

void shared_vars_announce() {
    unsigned n = g_nvars.load();
    for (unsigned i = 1; i <= n; i++) san_shared_var(g_vars[i].off, g_vars[i].size, g_vars[i].what);
}

uint64_t rng_next(uint64_t &s) {   /* splitmix64 */
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* >>floating-point environment of device code */
DeviceFpScope::DeviceFpScope(bool ftz) {
    fegetenv(&saved);
#if defined(__x86_64__)
    ctl = _mm_getcsr();
    fesetenv(FE_DFL_ENV);   /* round to nearest, no exceptions trapped, MXCSR's FTZ (bit 15) and DAZ (bit 6) clear */
    /* --ftz=true flushes single-precision subnormals (inputs and results) to
       zero; SSE cannot flush float only, so doubles flush too (x86-64 only). */
    if (ftz) _mm_setcsr(_mm_getcsr() | 0x8040u);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    ctl = fpcr;
    fesetenv(FE_DFL_ENV);   /* round to nearest, FZ (bit 24) clear */
    if (ftz) {
        __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
        fpcr |= 1ull << 24;
        __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
    }
#else
    fesetenv(FE_DFL_ENV);
    (void)ftz;
#endif
}

DeviceFpScope::~DeviceFpScope() {
    fesetenv(&saved);
#if defined(__x86_64__)
    _mm_setcsr((unsigned)ctl);
#elif defined(__aarch64__)
    uint64_t fpcr = ctl;
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

namespace {

[[noreturn]] void shared_oob(AccessCtx *c, size_t off, size_t n, bool write, const void *pc) {
    const char *op = write ? "write" : "read";
    if (g_san) san_bad_access(c->win + off, n, write, SAN_BAD_BOUNDS, pc);
    size_t stat = (size_t)(c->dyn - c->win);
    if (off >= stat) {
        size_t d = off - stat;
        kernel_fault(cudaErrorIllegalAddress,
                     "out-of-bounds shared access: %s of %zu bytes at offset %zu of dynamic shared memory (extern "
                     "__shared__), %zu bytes past the end of the %zu bytes the launch gave",
                     op, n, d, d + n - c->dyn_bytes, c->dyn_bytes);
    }
    /* the variable that ends at or before the access */
    unsigned id = __atomic_load_n(&g_owner[off], __ATOMIC_RELAXED);
    for (size_t i = off; !id && i-- > 0;) id = __atomic_load_n(&g_owner[i], __ATOMIC_RELAXED);
    if (!id)
        kernel_fault(cudaErrorIllegalAddress,
                     "out-of-bounds shared access: %s of %zu bytes at shared offset %zu, which is inside no __shared__ "
                     "variable", op, n, off);
    const SharedVar &v = g_vars[id];
    kernel_fault(cudaErrorIllegalAddress,
                 "out-of-bounds shared access: %s of %zu bytes at shared offset %zu, %zu bytes past the end of the "
                 "__shared__ variable '%s' (%zu bytes)",
                 op, n, off, off + n - (v.off + v.size), shared_var_name(v.what).c_str(), v.size);
}

/* Exact bounds: an access of n bytes at a (not shared memory) on a page
   where an allocation's padding lies must be inside that allocation. */
[[noreturn]] __attribute__((noinline)) void exact_fault(uintptr_t a, size_t n, bool write, uintptr_t lo, uintptr_t hi) {
    if (a >= hi)
        kernel_fault(cudaErrorIllegalAddress,
                     "illegal memory access: %s of %zu bytes at 0x%lx, %lu bytes past the end of the allocation at 0x%lx "
                     "of %lu bytes (CUEMU_BOUNDS=exact: the allocation's padding is out of bounds)",
                     write ? "write" : "read", n, (unsigned long)a, (unsigned long)(a - hi), (unsigned long)lo,
                     (unsigned long)(hi - lo));
    if (a < lo)
        kernel_fault(cudaErrorIllegalAddress,
                     "illegal memory access: %s of %zu bytes at 0x%lx, %lu bytes before the allocation at 0x%lx of %lu "
                     "bytes (CUEMU_BOUNDS=exact: the allocation's padding is out of bounds)",
                     write ? "write" : "read", n, (unsigned long)a, (unsigned long)(lo - a), (unsigned long)lo,
                     (unsigned long)(hi - lo));
    kernel_fault(cudaErrorIllegalAddress,
                 "illegal memory access: %s of %zu bytes at 0x%lx runs %lu bytes past the end of the allocation at 0x%lx "
                 "of %lu bytes (CUEMU_BOUNDS=exact)",
                 write ? "write" : "read", n, (unsigned long)a, (unsigned long)(a + n - hi), (unsigned long)lo,
                 (unsigned long)(hi - lo));
}

inline __attribute__((always_inline)) void exact_page(uintptr_t p, uintptr_t a, size_t n, bool write) {
    PageBounds *b = bounds_slot(p, false);
    if (!b) return;
    uintptr_t hi = b->hi.load(std::memory_order_acquire);
    if (__builtin_expect(!hi, 1)) return;
    uintptr_t lo = b->lo.load(std::memory_order_relaxed);
    if (a < lo || a + n > hi) exact_fault(a, n, write, lo, hi);
}

inline __attribute__((always_inline)) void exact_check(uintptr_t a, size_t n, bool write) {
    exact_page(a, a, n, write);
    if (__builtin_expect(((a + n - 1) >> g_page_shift) != (a >> g_page_shift), 0)) exact_page(a + n - 1, a, n, write);
}

/* An access of n bytes at offset off of the shared window. */
inline void shared_check(AccessCtx *c, size_t off, size_t n, bool write, const void *pc) {
    size_t stat = (size_t)(c->dyn - c->win);
    if (off >= stat) {
        if (off - stat + n > c->dyn_bytes) shared_oob(c, off, n, write, pc);
        return;
    }
    uint16_t a = __atomic_load_n(&g_owner[off], __ATOMIC_RELAXED);
    if (!a || off + n > stat || __atomic_load_n(&g_owner[off + n - 1], __ATOMIC_RELAXED) != a) shared_oob(c, off, n, write, pc);
}

__attribute__((noinline)) void access_slow(AccessCtx *c, const void *a, size_t n, bool write, bool atomic, const void *pc) {
    size_t off = (size_t)((uintptr_t)a - (uintptr_t)c->win);
    if (off < c->win_len) {
        shared_check(c, off, n ? n : 1, write, pc);
        /* shuffle: another thread of the block may go first, at shared-memory
           accesses (where threads of a block communicate) and at the CUDA
           atomics (exec.cpp's atomic_point), never at other accesses: those
           include the kernel's host-side glue (the guard of a __shared__
           variable's thread_local initialisation must not be interleaved). */
        if (c->shuffle && (rng_next(c->rng) & 3) == 0) shuffle_yield();
        if (g_san) san_access(a, n, write, atomic, pc);
        return;
    }
    if (g_san) san_access(a, n, write, atomic, pc);   /* memcheck reports first; the fault below ends the thread */
    if (g_exact) exact_check((uintptr_t)a, n ? n : 1, write);
}

/* shared_oob, called where a tail call can reach it (noipa: not known to be noreturn) */
__attribute__((noipa)) void shared_bad(AccessCtx *c, size_t off, size_t n, bool write, const void *pc) {
    shared_oob(c, off, n, write, pc);
}

/* An access outside the shared window while a tool listens or bounds are exact. */
__attribute__((noinline)) void global_slow(AccessCtx *c, const void *a, size_t n, bool write, bool atomic, const void *pc) {
    if (g_global_hooks == 2) {   /* exact bounds, no tool */
        exact_check((uintptr_t)a, n ? n : 1, write);
        return;
    }
    access_slow(c, a, n, write, atomic, pc);
}

/* Every entry point's path: the common cases (host code, global memory
   without a tool, shared memory without a tool or shuffling) are checked
   here, without a frame or a second call; the rest in access_slow. */
inline __attribute__((always_inline)) void hook(const void *a, size_t n, bool write, bool atomic, const void *pc) {
    AccessCtx *c = t_access;
    if (__builtin_expect(c == nullptr, 1)) return;   /* host code */
    /* device code: only shared memory has checks here (global memory's are
       the guard pages and the alignment check), unless a tool listens or
       bounds are exact */
    size_t off = (size_t)((uintptr_t)a - (uintptr_t)c->win);
    if (off >= c->win_len) {
        if (__builtin_expect(g_global_hooks == 0, 1)) return;
        global_slow(c, a, n, write, atomic, pc);
        return;
    }
    if (__builtin_expect(c->shuffle || g_san, 0)) {
        access_slow(c, a, n, write, atomic, pc);
        return;
    }
    /* shared_check's test, its failure a tail call */
    size_t stat = (size_t)(c->dyn - c->win), nn = n ? n : 1;
    if (off >= stat) {
        if (off - stat + nn > c->dyn_bytes) shared_bad(c, off, nn, write, pc);
        return;
    }
    uint16_t o = __atomic_load_n(&g_owner[off], __ATOMIC_RELAXED);
    if (!o || off + nn > stat || __atomic_load_n(&g_owner[off + nn - 1], __ATOMIC_RELAXED) != o) shared_bad(c, off, nn, write, pc);
}

/* An atomic of n bytes: naturally aligned, or the device faults. */
inline __attribute__((always_inline)) void atomic_hook(const volatile void *a, size_t n, bool write, const void *pc) {
    AccessCtx *c = t_access;
    if (__builtin_expect(c == nullptr, 1)) return;
    if ((uintptr_t)a % n) {
        if (g_san) san_bad_access((const void *)a, n, write, SAN_BAD_ALIGN, pc);
        kernel_fault(cudaErrorMisalignedAddress,
                     "misaligned address 0x%lx for a %zu-byte atomic operation (atomics need naturally aligned "
                     "addresses: CUDA C++ Programming Guide, \"Device Memory Accesses\")",
                     (unsigned long)(uintptr_t)a, n);
    }
    access_slow(c, (const void *)a, n, write, true, pc);
}

} /* namespace */

} /* namespace cuemu */

using cuemu::hook;
using cuemu::atomic_hook;

/* >>ThreadSanitizer's entry points (gcc's and clang's -fsanitize=thread) */
#define RA __builtin_return_address(0)
extern "C" {
void __tsan_init(void) {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **p, void *) { hook(p, sizeof(void *), true, false, RA); }
void __tsan_vptr_read(void **p) { hook(p, sizeof(void *), false, false, RA); }
void __tsan_read_range(void *p, unsigned long n) { hook(p, n, false, false, RA); }
void __tsan_write_range(void *p, unsigned long n) { hook(p, n, true, false, RA); }
#define CUEMU_TSAN_RW(N)                                                                                             \
    void __tsan_read##N(void *p) { hook(p, N, false, false, RA); }                                                   \
    void __tsan_write##N(void *p) { hook(p, N, true, false, RA); }                                                   \
    void __tsan_unaligned_read##N(void *p) { hook(p, N, false, false, RA); }                                         \
    void __tsan_unaligned_write##N(void *p) { hook(p, N, true, false, RA); }                                         \
    void __tsan_volatile_read##N(void *p) { hook(p, N, false, false, RA); }                                          \
    void __tsan_volatile_write##N(void *p) { hook(p, N, true, false, RA); }
CUEMU_TSAN_RW(1)
CUEMU_TSAN_RW(2)
CUEMU_TSAN_RW(4)
CUEMU_TSAN_RW(8)
CUEMU_TSAN_RW(16)
#undef CUEMU_TSAN_RW
} /* extern "C" */

/* >>atomics: gcc's tsan pass turns each __atomic builtin into one of these,
   with the memory order as an argument (0 relaxed ... 5 seq_cst, the
   __ATOMIC_* values). Each is done with the builtin of that order. */
namespace {
using a8 = uint8_t;
using a16 = uint16_t;
using a32 = uint32_t;
using a64 = uint64_t;
using a128 = unsigned __int128;

/* calls F.template operator()<order>() with the order mo as a constant */
template <class F> inline auto by_order(int mo, F &&f) {
    switch (mo & 0xffff) {
    case __ATOMIC_RELAXED: return f(std::integral_constant<int, __ATOMIC_RELAXED>{});
    case __ATOMIC_CONSUME: return f(std::integral_constant<int, __ATOMIC_CONSUME>{});
    case __ATOMIC_ACQUIRE: return f(std::integral_constant<int, __ATOMIC_ACQUIRE>{});
    case __ATOMIC_RELEASE: return f(std::integral_constant<int, __ATOMIC_RELEASE>{});
    case __ATOMIC_ACQ_REL: return f(std::integral_constant<int, __ATOMIC_ACQ_REL>{});
    default: return f(std::integral_constant<int, __ATOMIC_SEQ_CST>{});
    }
}
/* loads cannot be release, stores cannot be acquire: the nearest legal order */
constexpr int load_order(int o) { return o == __ATOMIC_RELEASE ? __ATOMIC_RELAXED : o == __ATOMIC_ACQ_REL ? __ATOMIC_ACQUIRE : o; }
constexpr int store_order(int o) {
    return o == __ATOMIC_CONSUME || o == __ATOMIC_ACQUIRE ? __ATOMIC_RELAXED : o == __ATOMIC_ACQ_REL ? __ATOMIC_RELEASE : o;
}
constexpr int fail_order(int o) { return load_order(o); }

/* 16-byte atomics without libatomic: a lock per address hash */
std::atomic_flag g_locks128[64];
struct Lock128 {
    std::atomic_flag *f;
    explicit Lock128(const volatile void *a) : f(&g_locks128[((uintptr_t)a >> 4) & 63]) {
        while (f->test_and_set(std::memory_order_acquire)) {}
    }
    ~Lock128() { f->clear(std::memory_order_release); }
};
} /* namespace */

#define CUEMU_TSAN_ATOMIC(N, T)                                                                                      \
    extern "C" T __tsan_atomic##N##_load(const volatile T *a, int mo) {                                              \
        atomic_hook(a, sizeof(T), false, RA);                                                                        \
        return by_order(mo, [&](auto o) { return __atomic_load_n(a, load_order(o)); });                             \
    }                                                                                                                \
    extern "C" void __tsan_atomic##N##_store(volatile T *a, T v, int mo) {                                           \
        atomic_hook(a, sizeof(T), true, RA);                                                                         \
        by_order(mo, [&](auto o) { __atomic_store_n(a, v, store_order(o)); });                                      \
    }                                                                                                                \
    CUEMU_TSAN_RMW(N, T, exchange, __atomic_exchange_n)                                                              \
    CUEMU_TSAN_RMW(N, T, fetch_add, __atomic_fetch_add)                                                              \
    CUEMU_TSAN_RMW(N, T, fetch_sub, __atomic_fetch_sub)                                                              \
    CUEMU_TSAN_RMW(N, T, fetch_and, __atomic_fetch_and)                                                              \
    CUEMU_TSAN_RMW(N, T, fetch_or, __atomic_fetch_or)                                                                \
    CUEMU_TSAN_RMW(N, T, fetch_xor, __atomic_fetch_xor)                                                              \
    CUEMU_TSAN_RMW(N, T, fetch_nand, __atomic_fetch_nand)                                                            \
    extern "C" int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int) {               \
        atomic_hook(a, sizeof(T), true, RA);                                                                         \
        return by_order(mo, [&](auto o) { return __atomic_compare_exchange_n(a, c, v, false, o, fail_order(o)); }); \
    }                                                                                                                \
    extern "C" int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int) {                 \
        atomic_hook(a, sizeof(T), true, RA);                                                                         \
        return by_order(mo, [&](auto o) { return __atomic_compare_exchange_n(a, c, v, true, o, fail_order(o)); });  \
    }                                                                                                                \
    extern "C" T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int mo, int) {                     \
        atomic_hook(a, sizeof(T), true, RA);                                                                         \
        by_order(mo, [&](auto o) { return __atomic_compare_exchange_n(a, &c, v, false, o, fail_order(o)); });       \
        return c;                                                                                                    \
    }
#define CUEMU_TSAN_RMW(N, T, name, builtin)                                                                          \
    extern "C" T __tsan_atomic##N##_##name(volatile T *a, T v, int mo) {                                             \
        atomic_hook(a, sizeof(T), true, RA);                                                                         \
        return by_order(mo, [&](auto o) { return builtin(a, v, o); });                                              \
    }
CUEMU_TSAN_ATOMIC(8, a8)
CUEMU_TSAN_ATOMIC(16, a16)
CUEMU_TSAN_ATOMIC(32, a32)
CUEMU_TSAN_ATOMIC(64, a64)
#undef CUEMU_TSAN_RMW
#undef CUEMU_TSAN_ATOMIC

/* 16 bytes: under a lock (no lock-free 16-byte atomics without -mcx16/libatomic) */
#define CUEMU_TSAN_RMW128(name, expr)                                                                                \
    extern "C" a128 __tsan_atomic128_##name(volatile a128 *a, a128 v, int) {                                         \
        atomic_hook(a, 16, true, RA);                                                                                \
        Lock128 lk(a);                                                                                               \
        a128 old = *a;                                                                                               \
        *a = (expr);                                                                                                 \
        return old;                                                                                                  \
    }
extern "C" a128 __tsan_atomic128_load(const volatile a128 *a, int) {
    atomic_hook(a, 16, false, RA);
    Lock128 lk(a);
    return *a;
}
extern "C" void __tsan_atomic128_store(volatile a128 *a, a128 v, int) {
    atomic_hook(a, 16, true, RA);
    Lock128 lk(a);
    *a = v;
}
CUEMU_TSAN_RMW128(exchange, v)
CUEMU_TSAN_RMW128(fetch_add, old + v)
CUEMU_TSAN_RMW128(fetch_sub, old - v)
CUEMU_TSAN_RMW128(fetch_and, old & v)
CUEMU_TSAN_RMW128(fetch_or, old | v)
CUEMU_TSAN_RMW128(fetch_xor, old ^ v)
CUEMU_TSAN_RMW128(fetch_nand, ~(old & v))
#undef CUEMU_TSAN_RMW128
extern "C" int __tsan_atomic128_compare_exchange_strong(volatile a128 *a, a128 *c, a128 v, int, int) {
    atomic_hook(a, 16, true, RA);
    Lock128 lk(a);
    if (*a == *c) {
        *a = v;
        return 1;
    }
    *c = *a;
    return 0;
}
extern "C" int __tsan_atomic128_compare_exchange_weak(volatile a128 *a, a128 *c, a128 v, int mo, int fmo) {
    return __tsan_atomic128_compare_exchange_strong(a, c, v, mo, fmo);
}
extern "C" a128 __tsan_atomic128_compare_exchange_val(volatile a128 *a, a128 c, a128 v, int mo, int fmo) {
    __tsan_atomic128_compare_exchange_strong(a, &c, v, mo, fmo);
    return c;
}
extern "C" void __tsan_atomic_thread_fence(int mo) {
    by_order(mo, [](auto o) { __atomic_thread_fence(o); });
}
extern "C" void __tsan_atomic_signal_fence(int mo) {
    by_order(mo, [](auto o) { __atomic_signal_fence(o); });
}

/* >>UBSan's alignment check (-fsanitize=alignment). In device code a
   misaligned access faults the kernel (see the top of this file); anywhere
   else the report goes to the real UBSan runtime when one is loaded (an
   -fsanitize=undefined build), and is ignored otherwise. The data layout is
   UBSan's (compiler-rt/lib/ubsan/ubsan_handlers.h, TypeMismatchData). */
namespace {
struct UbsanLoc { const char *file; uint32_t line, column; };
struct UbsanType { uint16_t kind, info; char name[1]; };
struct UbsanMismatch { UbsanLoc loc; const UbsanType *type; unsigned char log_align; unsigned char check_kind; };

const char *check_kind_name(unsigned k) {
    static const char *n[] = {"load of", "store to", "reference binding to", "member access within",
                              "member call on", "constructor call on", "downcast of", "downcast of",
                              "upcast of", "cast to virtual base of", "_Nonnull binding to", "dynamic operation on"};
    return k < sizeof n / sizeof n[0] ? n[k] : "access to";
}

typedef void (*UbsanHandler)(void *, void *);
UbsanHandler real_handler(const char *name, std::atomic<UbsanHandler> &cache) {
    UbsanHandler h = cache.load(std::memory_order_relaxed);
    if (!h) {
        h = (UbsanHandler)dlsym(RTLD_NEXT, name);
        if (!h) h = [](void *, void *) {};
        cache.store(h, std::memory_order_relaxed);
    }
    return h;
}

/* In device code: faults the kernel and does not return when the report is
   the device's to make; returns otherwise. */
void ubsan_device(UbsanMismatch *d, uintptr_t p, bool must_not_return, const void *pc) {
    if (!cuemu::t_access) return;
    uintptr_t align = (uintptr_t)1 << d->log_align;
    const char *file = d->loc.file ? d->loc.file : "?";
    if (p && (p & (align - 1))) {
        if (cuemu::g_san) cuemu::san_bad_access((const void *)p, align, d->check_kind == 1, cuemu::SAN_BAD_ALIGN, pc);
        cuemu::kernel_fault(cudaErrorMisalignedAddress,
                            "misaligned address 0x%lx for a %s %s (%lu-byte alignment) at %s:%u (CUDA C++ Programming "
                            "Guide, \"Device Memory Accesses\": accesses must be naturally aligned)",
                            (unsigned long)p, check_kind_name(d->check_kind), d->type ? d->type->name : "?",
                            (unsigned long)align, file, d->loc.line);
    }
    if (!p && must_not_return)
        cuemu::kernel_fault(cudaErrorIllegalAddress, "illegal memory access at address 0x0 (a null pointer) at %s:%u", file,
                            d->loc.line);
}
std::atomic<UbsanHandler> g_real_v1{nullptr}, g_real_v1_abort{nullptr};
} /* namespace */

extern "C" void __ubsan_handle_type_mismatch_v1(void *data, void *ptr) {
    ubsan_device((UbsanMismatch *)data, (uintptr_t)ptr, false, RA);
    if (cuemu::t_access) return;   /* device code: a null pointer faults at the access itself */
    real_handler("__ubsan_handle_type_mismatch_v1", g_real_v1)(data, ptr);
}

extern "C" void __ubsan_handle_type_mismatch_v1_abort(void *data, void *ptr) {
    ubsan_device((UbsanMismatch *)data, (uintptr_t)ptr, true, RA);
    real_handler("__ubsan_handle_type_mismatch_v1_abort", g_real_v1_abort)(data, ptr);
    abort();   /* a handler that must not return, without a runtime to report it */
}
