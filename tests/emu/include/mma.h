/* mma.h - Warp Matrix Functions on the emulated device (nvcuda::wmma).

   Source: CUDA C++ Programming Guide, section "Warp Matrix Functions"
   (Description, Alternate Floating Point, Double Precision, Element Types
   and Matrix Sizes). This header is found before any CUDA toolkit's mma.h
   (nvcc-emu puts tests/emu/include first): the toolkit's host bodies are
   empty, so a WMMA kernel would silently compute nothing.

   What is emulated (the Guide's table of element types and sizes):
     matrix_a/matrix_b      accumulator        m-n-k
     __half                 float or __half    16x16x16, 32x8x16, 8x32x16
     __nv_bfloat16          float              16x16x16, 32x8x16, 8x32x16
     precision::tf32        float              16x16x8
     signed/unsigned char   int                16x16x16, 32x8x16, 8x32x16
     double                 double             8x8x4
   Anything else (the experimental sub-byte types u4/s4/b1, other shapes or
   pairings) is refused at compile time (static_assert naming it).

   Rules enforced (each a fault of the running grid, as the emulator's other
   faults):
   - load_matrix_sync, store_matrix_sync and mma_sync are warp-wide: "waits
     until all warp lanes have arrived"; mptr, ldm, layout and the template
     parameters "must be the same for all threads in the warp". All 32 lanes
     must call the same function together (the emulator's warp-exchange
     machinery, src/exec.cpp wmma_sync); a lane that exited or went
     elsewhere, a partial warp, or lanes passing different arguments are
     reported.
   - "mptr must be a 256-bit aligned pointer"; "ldm ... must be a multiple
     of 8 for __half element type or multiple of 4 for float element type
     (i.e., multiple of 16 bytes in both cases)": the emulator requires
     ldm * sizeof(element) to be a multiple of 16 bytes for every type.
     Both faults are cudaErrorMisalignedAddress.
   - mma_sync's satf argument (deprecated) is refused when true.

   Arithmetic (the Guide does not say how the products are summed; the
   emulator's order, documented here): d[i][j] starts as c[i][j] (converted
   to float for __half accumulators) and adds a[i][k]*b[k][j] for
   k = 0, 1, ..., K-1 in that order, each product exact (16-bit and tf32
   inputs: products are exact in float) and each sum rounded to float
   (round to nearest even). A __half accumulator is rounded to __half once,
   at the end. tf32 inputs must be tf32 values, as the Guide asks (convert
   with wmma::__float_to_tf32): an element with any of the low 13 mantissa
   bits set is refused by mma_sync (a fault naming the element). int accumulators wrap modulo 2^32; double: each step is a
   fused multiply-add, in k order.

   Fragments: "the mapping of matrix elements into fragment internal storage
   is unspecified and subject to change in future architectures". Each lane
   holds num_elements = rows*cols/32 elements in x[]. By default element e
   of the matrix (row-major index) is x[e % num_elements] of lane
   e / num_elements; with CUEMU_SCHEDULE=shuffle the mapping is a
   permutation drawn from CUEMU_SEED (per fragment kind), so a kernel that
   reads x[i] assuming a layout is wrong for some seed, while one that only
   applies the same operation to every element, or uses the API, is right
   for every seed. */
#ifndef CUEMU_MMA_H
#define CUEMU_MMA_H
#include <cuda_fp16.h>
#include <cuda_bf16.h>
/* As the toolkit's: the declarations are for CUDA C++ (.cu files) only. */
#if defined(__cplusplus) && defined(__CUDACC__)
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <type_traits>

namespace nvcuda {
namespace wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32;
}
namespace experimental {
namespace precision {
struct u4;
struct s4;
struct b1;
}
enum bmmaBitOp { bmmaBitOpXOR = 1, bmmaBitOpAND = 2 };
enum bmmaAccumulateOp { bmmaAccumulateOpPOPC = 1 };
}

/* "round to nearest, ties away from zero" to a tf32 value kept in a float. */
inline float __float_to_tf32(float in) {
    uint32_t u;
    memcpy(&u, &in, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0x1000u;
        u &= ~0x1fffu;
    }
    float r;
    memcpy(&r, &u, 4);
    return r;
}

namespace detail {

template <class T> struct always_false : std::false_type {};

/* The Guide's table: which (use, shape, type) a fragment may have. */
template <class Use, int M, int N, int K, class T> constexpr bool valid() {
    constexpr bool s16 = (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16);
    constexpr bool ab = std::is_same_v<Use, matrix_a> || std::is_same_v<Use, matrix_b>;
    if constexpr (ab) {
        if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, signed char> ||
                      std::is_same_v<T, unsigned char>)
            return s16;
        else if constexpr (std::is_same_v<T, precision::tf32>) return M == 16 && N == 16 && K == 8;
        else if constexpr (std::is_same_v<T, double>) return M == 8 && N == 8 && K == 4;
        else return false;
    } else if constexpr (std::is_same_v<Use, accumulator>) {
        if constexpr (std::is_same_v<T, float>) return s16 || (M == 16 && N == 16 && K == 8);
        else if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, int>) return s16;
        else if constexpr (std::is_same_v<T, double>) return M == 8 && N == 8 && K == 4;
        else return false;
    } else return false;
}

template <class T> struct storage { using type = T; };
template <> struct storage<precision::tf32> { using type = float; };

template <class T> constexpr int type_tag() {
    if constexpr (std::is_same_v<T, __half>) return 1;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return 2;
    else if constexpr (std::is_same_v<T, precision::tf32>) return 3;
    else if constexpr (std::is_same_v<T, signed char>) return 4;
    else if constexpr (std::is_same_v<T, unsigned char>) return 5;
    else if constexpr (std::is_same_v<T, double>) return 6;
    else if constexpr (std::is_same_v<T, float>) return 7;
    else if constexpr (std::is_same_v<T, int>) return 8;
    else return 0;
}

template <class Use, int M, int N, int K> struct dims {
    static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
    static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
};

/* The element-to-storage mapping of one fragment kind: pos[e] = lane *
   num_elements + slot for element e (row-major) of the matrix. */
template <class Use, int M, int N, int K, class T> struct mapping {
    static constexpr int E = dims<Use, M, N, K>::rows * dims<Use, M, N, K>::cols;
    uint16_t pos[E];
    mapping() {
        for (int e = 0; e < E; e++) pos[e] = (uint16_t)e;
        uint64_t seed = cuemu::wmma_layout_seed();
        if (!seed) return;
        uint64_t s = seed ^ ((uint64_t)type_tag<T>() << 40) ^ ((uint64_t)(std::is_same_v<Use, matrix_a> ? 1 : std::is_same_v<Use, matrix_b> ? 2 : 3) << 32) ^
                     ((uint64_t)M << 16) ^ ((uint64_t)N << 8) ^ (uint64_t)K;
        for (int e = E - 1; e > 0; e--) {   /* Fisher-Yates with splitmix64 */
            s += 0x9e3779b97f4a7c15ull;
            uint64_t z = s;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            z ^= z >> 31;
            int j = (int)(z % (uint64_t)(e + 1));
            uint16_t t = pos[e];
            pos[e] = pos[j];
            pos[j] = t;
        }
    }
    static const uint16_t *get() {
        static const mapping m;
        return m.pos;
    }
};

inline float to_float(__half v) { return __half2float(v); }
inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
inline float to_float(float v) { return v; }

} /* namespace detail */

template <class Use, int m, int n, int k, class T, class Layout = void> class fragment {
    static_assert(!std::is_same_v<T, experimental::precision::u4> && !std::is_same_v<T, experimental::precision::s4> &&
                      !std::is_same_v<T, experimental::precision::b1>,
                  "cuemu: the experimental sub-byte WMMA types (u4, s4, b1) are not emulated");
    static_assert(detail::valid<Use, m, n, k, T>(),
                  "cuemu: this WMMA fragment (use, m-n-k shape, element type) is not in the CUDA C++ Programming Guide's "
                  "table of element types and matrix sizes, or is not emulated (see tests/emu/include/mma.h)");
    static_assert(std::is_same_v<Use, accumulator> ? std::is_void_v<Layout>
                                                   : (std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>),
                  "cuemu: a matrix_a/matrix_b fragment takes row_major or col_major; an accumulator takes no layout");

public:
    using element_type = typename detail::storage<T>::type;
    using storage_element_type = element_type;
    static constexpr int rows = detail::dims<Use, m, n, k>::rows;
    static constexpr int cols = detail::dims<Use, m, n, k>::cols;
    enum { num_elements = rows * cols / 32 };
    storage_element_type x[num_elements];
};

namespace detail {

template <class F> struct frag_info;
template <class Use, int M, int N, int K, class T, class L> struct frag_info<fragment<Use, M, N, K, T, L>> {
    using elem = typename storage<T>::type;
    static constexpr int rows = dims<Use, M, N, K>::rows, cols = dims<Use, M, N, K>::cols, per = rows * cols / 32;
    static const uint16_t *map() { return mapping<Use, M, N, K, T>::get(); }
};

/* Element (r, c) of the warp's matrix in fragment f (lanes[i]->frag[slot] is lane i's). */
template <class F> inline typename frag_info<F>::elem &at(cuemu::WmmaCall *const *lanes, int slot, int r, int c) {
    using I = frag_info<F>;
    int p = I::map()[r * I::cols + c];
    return ((F *)lanes[p / I::per]->frag[slot])->x[p % I::per];
}

template <class F> void run_load(cuemu::WmmaCall *const *L) {
    using I = frag_info<F>;
    const typename I::elem *p = (const typename I::elem *)L[0]->ptr;
    size_t ldm = L[0]->ldm;
    for (int r = 0; r < I::rows; r++)
        for (int c = 0; c < I::cols; c++) at<F>(L, 0, r, c) = L[0]->layout ? p[c * ldm + r] : p[r * ldm + c];
}
template <class F> void run_store(cuemu::WmmaCall *const *L) {
    using I = frag_info<F>;
    typename I::elem *p = (typename I::elem *)L[0]->ptr;
    size_t ldm = L[0]->ldm;
    for (int r = 0; r < I::rows; r++)
        for (int c = 0; c < I::cols; c++) (L[0]->layout ? p[c * ldm + r] : p[r * ldm + c]) = at<F>(L, 0, r, c);
}

inline float tf32_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    u &= ~0x1fffu;
    memcpy(&v, &u, 4);
    return v;
}

/* "In order to use this floating point format with WMMA operations, the
   input matrices must be manually converted to tf32 precision" (Guide,
   Alternate Floating Point; the format's internal layout is implementation
   defined): an element with more than tf32's bits is refused. */
[[noreturn]] inline void not_tf32(const char *which, int r, int c, float v) {
    char msg[400];
    snprintf(msg, sizeof msg,
             "nvcuda::wmma::mma_sync: element (%d, %d) of the precision::tf32 %s fragment is %.9g, not a tf32 value: the "
             "input matrices must be converted with wmma::__float_to_tf32 first (CUDA C++ Programming Guide, Warp Matrix "
             "Functions, Alternate Floating Point)",
             r, c, which, (double)v);
    cuemu::trap(msg);
    __builtin_unreachable();
}

template <class FD, class FA, class FB, class Tin> void run_mma(cuemu::WmmaCall *const *L) {
    using ID = frag_info<FD>;
    using Acc = typename ID::elem;
    constexpr int M = ID::rows, N = ID::cols, K = frag_info<FA>::cols;
    /* everything is read before anything is written: d may be c (or any fragment of any lane) */
    Acc out[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            if constexpr (std::is_same_v<Acc, int>) {
                uint32_t d = (uint32_t)at<FD>(L, 3, i, j);
                for (int kk = 0; kk < K; kk++) d += (uint32_t)((int)at<FA>(L, 1, i, kk) * (int)at<FB>(L, 2, kk, j));
                out[i * N + j] = (int)d;
            } else if constexpr (std::is_same_v<Acc, double>) {
                double d = at<FD>(L, 3, i, j);
                for (int kk = 0; kk < K; kk++) d = fma(at<FA>(L, 1, i, kk), at<FB>(L, 2, kk, j), d);
                out[i * N + j] = d;
            } else {
                float d = to_float(at<FD>(L, 3, i, j));
                for (int kk = 0; kk < K; kk++) {
                    float a = to_float(at<FA>(L, 1, i, kk)), b = to_float(at<FB>(L, 2, kk, j));
                    if constexpr (std::is_same_v<Tin, precision::tf32>) {
                        if (a != tf32_bits(a) && isfinite(a)) not_tf32("matrix_a", i, kk, a);
                        if (b != tf32_bits(b) && isfinite(b)) not_tf32("matrix_b", kk, j, b);
                    }
                    d = fmaf(a, b, d);   /* the product is exact in float: one rounding, the sum's */
                }
                if constexpr (std::is_same_v<Acc, __half>) out[i * N + j] = __float2half_rn(d);
                else out[i * N + j] = d;
            }
        }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) at<FD>(L, 0, i, j) = out[i * N + j];
}

inline void check_mem(const char *fn, const void *p, unsigned ldm, size_t esize) {
    if ((uintptr_t)p % 32)
        cuemu::wmma_fault("nvcuda::wmma::%s: the pointer %p is not 256-bit (32-byte) aligned (CUDA C++ Programming Guide, "
                          "Warp Matrix Functions: \"mptr must be a 256-bit aligned pointer\")",
                          fn, p);
    if ((ldm * esize) % 16)
        cuemu::wmma_fault("nvcuda::wmma::%s: ldm %u (elements of %zu bytes) is not a multiple of 16 bytes (CUDA C++ "
                          "Programming Guide, Warp Matrix Functions: ldm \"must be a multiple of 8 for __half element type "
                          "or multiple of 4 for float element type (i.e., multiple of 16 bytes in both cases)\")",
                          fn, ldm, esize);
}

inline void set_key(cuemu::WmmaCall &c, const void *p, unsigned ldm, int layout) {
    c.key[0] = (uint64_t)(uintptr_t)p;
    c.key[1] = ldm;
    c.key[2] = (uint64_t)layout;
    c.what[0] = "mptr";
    c.what[1] = "ldm";
    c.what[2] = "layout";
    c.what[3] = "";
    snprintf(c.show[0], sizeof c.show[0], "%p", p);
    snprintf(c.show[1], sizeof c.show[1], "%u", ldm);
    snprintf(c.show[2], sizeof c.show[2], "%s", layout ? "mem_col_major" : "mem_row_major");
    c.ptr = (void *)p;
    c.ldm = ldm;
    c.layout = layout;
}

template <class L> constexpr int layout_of() { return std::is_same_v<L, col_major> ? 1 : 0; }

} /* namespace detail */

template <class Use, int m, int n, int k, class T, class Layout, class V>
inline void fill_fragment(fragment<Use, m, n, k, T, Layout> &a, const V &v) {
    using E = typename fragment<Use, m, n, k, T, Layout>::storage_element_type;
    const E e = (E)v;
    for (unsigned i = 0; i < a.num_elements; i++) a.x[i] = e;
}

template <class Use, int m, int n, int k, class T, class Layout>
inline void load_matrix_sync(fragment<Use, m, n, k, T, Layout> &a,
                             const typename fragment<Use, m, n, k, T, Layout>::storage_element_type *mptr, unsigned ldm) {
    static_assert(!std::is_same_v<Use, accumulator>,
                  "cuemu: load_matrix_sync of an accumulator fragment takes the layout (mem_row_major or mem_col_major)");
    using F = fragment<Use, m, n, k, T, Layout>;
    detail::check_mem("load_matrix_sync", mptr, ldm, sizeof(typename F::storage_element_type));
    cuemu::WmmaCall c{};
    detail::set_key(c, mptr, ldm, detail::layout_of<Layout>());
    c.run = &detail::run_load<F>;
    c.frag[0] = &a;
    cuemu::wmma_sync(cuemu::W_WMMA_LOAD, &c);
}

template <int m, int n, int k, class T>
inline void load_matrix_sync(fragment<accumulator, m, n, k, T> &a, const T *mptr, unsigned ldm, layout_t layout) {
    using F = fragment<accumulator, m, n, k, T>;
    detail::check_mem("load_matrix_sync", mptr, ldm, sizeof(T));
    cuemu::WmmaCall c{};
    detail::set_key(c, mptr, ldm, layout == mem_col_major ? 1 : 0);
    c.run = &detail::run_load<F>;
    c.frag[0] = &a;
    cuemu::wmma_sync(cuemu::W_WMMA_LOAD, &c);
}

template <int m, int n, int k, class T>
inline void store_matrix_sync(T *mptr, const fragment<accumulator, m, n, k, T> &a, unsigned ldm, layout_t layout) {
    using F = fragment<accumulator, m, n, k, T>;
    detail::check_mem("store_matrix_sync", mptr, ldm, sizeof(T));
    cuemu::WmmaCall c{};
    detail::set_key(c, mptr, ldm, layout == mem_col_major ? 1 : 0);
    c.run = &detail::run_store<F>;
    c.frag[0] = (void *)&a;
    cuemu::wmma_sync(cuemu::W_WMMA_STORE, &c);
}

template <int m, int n, int k, class Tab, class LA, class LB, class Tc>
inline void mma_sync(fragment<accumulator, m, n, k, Tc> &d, const fragment<matrix_a, m, n, k, Tab, LA> &a,
                     const fragment<matrix_b, m, n, k, Tab, LB> &b, const fragment<accumulator, m, n, k, Tc> &c,
                     bool satf = false) {
    static_assert((std::is_same_v<Tab, __half> && (std::is_same_v<Tc, float> || std::is_same_v<Tc, __half>)) ||
                      ((std::is_same_v<Tab, __nv_bfloat16> || std::is_same_v<Tab, precision::tf32>) && std::is_same_v<Tc, float>) ||
                      ((std::is_same_v<Tab, signed char> || std::is_same_v<Tab, unsigned char>) && std::is_same_v<Tc, int>) ||
                      (std::is_same_v<Tab, double> && std::is_same_v<Tc, double>),
                  "cuemu: mma_sync: this pairing of matrix_a/matrix_b and accumulator element types is not in the CUDA C++ "
                  "Programming Guide's table of element types");
    if (satf) cuemu::trap("nvcuda::wmma::mma_sync with satf=true: saturation to finite values is not emulated (the argument "
                          "is deprecated)");
    using FD = fragment<accumulator, m, n, k, Tc>;
    cuemu::WmmaCall call{};
    call.what[0] = call.what[1] = call.what[2] = call.what[3] = "";
    call.run = &detail::run_mma<FD, fragment<matrix_a, m, n, k, Tab, LA>, fragment<matrix_b, m, n, k, Tab, LB>, Tab>;
    call.frag[0] = &d;
    call.frag[1] = (void *)&a;
    call.frag[2] = (void *)&b;
    call.frag[3] = (void *)&c;
    cuemu::wmma_sync(cuemu::W_WMMA_MMA, &call);
}

} /* namespace wmma */
} /* namespace nvcuda */

#endif /* __cplusplus && __CUDACC__ */
#endif
