/* cuda_fp16.h (cuemu) - IEEE 754 binary16 ("half") for the emulated device.

   C: only the storage types __half_raw and __half2_raw (as CUDA 13's header
   declares them for C compilers; cuBLAS and cuDNN headers include this file
   from C).
   C++: __half and __half2 with CUDA 13's constructors, conversions and
   operators, the conversion intrinsics in all four rounding directions, the
   arithmetic, comparison and math functions of the CUDA Math API's "Half
   Precision Intrinsics" pages. Every function is callable from host code
   and from kernels (kernels are host code here).

   Results are those the Math API documents: arithmetic is correctly rounded
   (round to nearest even unless the name says otherwise), computed exactly
   in double and rounded once (see cuemu/fp_round.h); the math functions
   (hexp, hsin, ...) are rounded from a double-precision evaluation, which
   the self-tests check against an exact rounding for all 65536 inputs.
   NaN results are the canonical NaN 0x7FFF. */
#ifndef __CUDA_FP16_H__
#define __CUDA_FP16_H__
#define __CUDA_FP16_HPP__
#define __CUDA_FP16_TYPES_EXIST__

#include "vector_types.h"

#if defined(__cplusplus)
#define CUEMU_FP16_ALIGN(n) alignas(n)
#else
#define CUEMU_FP16_ALIGN(n) __attribute__((aligned(n)))
#endif

/* The bits of a half: static initialisation as a bit pattern. */
typedef struct CUEMU_FP16_ALIGN(2) {
    unsigned short x;
} __half_raw;

/* The bits of a half2: x is the low half, y the high half. */
typedef struct CUEMU_FP16_ALIGN(4) {
    unsigned short x;
    unsigned short y;
} __half2_raw;

#if defined(__cplusplus)

#include "cuemu/fp_round.h"

struct __nv_bfloat16;

struct CUEMU_FP16_ALIGN(2) __half {
protected:
    unsigned short __x;

public:
    __half() = default;
    constexpr __half(const __half_raw &hr) : __x(hr.x) {}
    __half &operator=(const __half_raw &hr) { __x = hr.x; return *this; }
    volatile __half &operator=(const __half_raw &hr) volatile { __x = hr.x; return *this; }
    volatile __half &operator=(const volatile __half_raw &hr) volatile { __x = hr.x; return *this; }
    operator __half_raw() const { __half_raw r; r.x = __x; return r; }
    operator __half_raw() const volatile { __half_raw r; r.x = __x; return r; }
#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
    explicit __half(const __nv_bfloat16 f);   /* defined in cuda_bf16.h */
    __half(const float f) : __x(cuemu::fp::f2h(f, cuemu::fp::RN)) {}
    __half(const double f) : __x(cuemu::fp::d2h(f, cuemu::fp::RN)) {}
    operator float() const { return cuemu::fp::h2f(__x); }
    __half &operator=(const float f) { __x = cuemu::fp::f2h(f, cuemu::fp::RN); return *this; }
    __half &operator=(const double f) { __x = cuemu::fp::d2h(f, cuemu::fp::RN); return *this; }
#if !defined(__CUDA_FP16_DISABLE_IMPLICIT_INTEGER_CONVERTS_FOR_HOST_COMPILERS__) || defined(__CUDACC__)
    __half(const short val) : __x(uint16_t(cuemu::fp::from_i64<10, 5>(val, cuemu::fp::RN))) {}
    __half(const unsigned short val) : __x(uint16_t(cuemu::fp::from_u64<10, 5>(val, false, cuemu::fp::RN))) {}
    __half(const int val) : __x(uint16_t(cuemu::fp::from_i64<10, 5>(val, cuemu::fp::RN))) {}
    __half(const unsigned int val) : __x(uint16_t(cuemu::fp::from_u64<10, 5>(val, false, cuemu::fp::RN))) {}
    __half(const long val) : __x(uint16_t(cuemu::fp::from_i64<10, 5>(val, cuemu::fp::RN))) {}
    __half(const unsigned long val) : __x(uint16_t(cuemu::fp::from_u64<10, 5>(val, false, cuemu::fp::RN))) {}
    __half(const long long val) : __x(uint16_t(cuemu::fp::from_i64<10, 5>(val, cuemu::fp::RN))) {}
    __half(const unsigned long long val) : __x(uint16_t(cuemu::fp::from_u64<10, 5>(val, false, cuemu::fp::RN))) {}
    operator signed char() const;
    operator unsigned char() const;
    operator char() const;
    operator short() const;
    operator unsigned short() const;
    operator int() const;
    operator unsigned int() const;
    operator long() const;
    operator unsigned long() const;
    operator long long() const;
    operator unsigned long long() const;
    __half &operator=(const short val) { return *this = __half(val); }
    __half &operator=(const unsigned short val) { return *this = __half(val); }
    __half &operator=(const int val) { return *this = __half(val); }
    __half &operator=(const unsigned int val) { return *this = __half(val); }
    __half &operator=(const long long val) { return *this = __half(val); }
    __half &operator=(const unsigned long long val) { return *this = __half(val); }
    constexpr operator bool() const { return (__x & 0x7fffu) != 0u; }
#endif
#endif
};

struct CUEMU_FP16_ALIGN(4) __half2 {
    __half x;
    __half y;

    __half2() = default;
    constexpr __half2(const __half &a, const __half &b) : x(a), y(b) {}
    __half2(const __half2_raw &h2r) {
        __half_raw r;
        r.x = h2r.x; x = __half(r);
        r.x = h2r.y; y = __half(r);
    }
    __half2 &operator=(const __half2_raw &h2r) { *this = __half2(h2r); return *this; }
    operator __half2_raw() const {
        __half2_raw r;
        r.x = static_cast<__half_raw>(x).x;
        r.y = static_cast<__half_raw>(y).x;
        return r;
    }
};

#if !defined(CUDA_NO_HALF)
typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half_raw __nv_half_raw;
typedef __half2_raw __nv_half2_raw;
typedef __half nv_half;
typedef __half2 nv_half2;
#endif

namespace cuemu {
namespace fp16 {
using namespace cuemu::fp;
inline unsigned short bits(const __half h) { return static_cast<__half_raw>(h).x; }
inline __half make(unsigned short b) { __half_raw r; r.x = b; return __half(r); }
inline double wide(const __half h) { return to_double<10, 5>(bits(h)); }
inline __half narrow(double d, rmode m = RN) { return make(d2h(d, m)); }
inline bool isnan_bits(unsigned short b) { return (b & 0x7fffu) > 0x7c00u; }
const unsigned short NAN_BITS = 0x7fffu;
} /* namespace fp16 */
} /* namespace cuemu */

/* >>conversions */
inline __half __ushort_as_half(const unsigned short int i) { return cuemu::fp16::make(i); }
inline unsigned short int __half_as_ushort(const __half h) { return cuemu::fp16::bits(h); }
inline __half __short_as_half(const short int i) { return cuemu::fp16::make((unsigned short)i); }
inline short int __half_as_short(const __half h) { return (short int)cuemu::fp16::bits(h); }

inline __half __float2half(const float a) { return cuemu::fp16::make(cuemu::fp::f2h(a, cuemu::fp::RN)); }
inline __half __float2half_rn(const float a) { return cuemu::fp16::make(cuemu::fp::f2h(a, cuemu::fp::RN)); }
inline __half __float2half_rz(const float a) { return cuemu::fp16::make(cuemu::fp::f2h(a, cuemu::fp::RZ)); }
inline __half __float2half_rd(const float a) { return cuemu::fp16::make(cuemu::fp::f2h(a, cuemu::fp::RD)); }
inline __half __float2half_ru(const float a) { return cuemu::fp16::make(cuemu::fp::f2h(a, cuemu::fp::RU)); }
inline __half __double2half(const double a) { return cuemu::fp16::make(cuemu::fp::d2h(a, cuemu::fp::RN)); }
inline float __half2float(const __half a) { return cuemu::fp::h2f(cuemu::fp16::bits(a)); }
inline __half2 __float2half2_rn(const float a) { const __half h = __float2half_rn(a); return __half2(h, h); }
inline __half2 __floats2half2_rn(const float a, const float b) { return __half2(__float2half_rn(a), __float2half_rn(b)); }
inline __half2 __float22half2_rn(const float2 a) { return __half2(__float2half_rn(a.x), __float2half_rn(a.y)); }
inline float2 __half22float2(const __half2 a) { float2 r; r.x = __half2float(a.x); r.y = __half2float(a.y); return r; }
inline float __low2float(const __half2 a) { return __half2float(a.x); }
inline float __high2float(const __half2 a) { return __half2float(a.y); }

#define CUEMU_FP16_FROM_INT(name, T, mode) \
    inline __half name(const T i) { return cuemu::fp16::make(uint16_t(cuemu::fp::from_i64<10, 5>((long long)i, cuemu::fp::mode))); }
#define CUEMU_FP16_FROM_UINT(name, T, mode) \
    inline __half name(const T i) { return cuemu::fp16::make(uint16_t(cuemu::fp::from_u64<10, 5>((unsigned long long)i, false, cuemu::fp::mode))); }
#define CUEMU_FP16_FROM_ALL(stem, T, FROM) FROM(stem##_rn, T, RN) FROM(stem##_rz, T, RZ) FROM(stem##_rd, T, RD) FROM(stem##_ru, T, RU)
CUEMU_FP16_FROM_ALL(__int2half, int, CUEMU_FP16_FROM_INT)
CUEMU_FP16_FROM_ALL(__short2half, short int, CUEMU_FP16_FROM_INT)
CUEMU_FP16_FROM_ALL(__ll2half, long long int, CUEMU_FP16_FROM_INT)
CUEMU_FP16_FROM_ALL(__uint2half, unsigned int, CUEMU_FP16_FROM_UINT)
CUEMU_FP16_FROM_ALL(__ushort2half, unsigned short int, CUEMU_FP16_FROM_UINT)
CUEMU_FP16_FROM_ALL(__ull2half, unsigned long long int, CUEMU_FP16_FROM_UINT)
#undef CUEMU_FP16_FROM_INT
#undef CUEMU_FP16_FROM_UINT
#undef CUEMU_FP16_FROM_ALL

/* Half to integer: NaN gives 0 (0x8000000000000000 for the 64-bit ones),
   out-of-range values saturate; the Math API documents each case. */
#define CUEMU_FP16_TO_INT(name, T, mode, lo, hi) \
    inline T name(const __half h) { \
        return (T)cuemu::fp::sat_range(cuemu::fp::round_integral(cuemu::fp16::wide(h), cuemu::fp::mode), lo, hi); }
#define CUEMU_FP16_TO_INT_ALL(stem, T, lo, hi) \
    CUEMU_FP16_TO_INT(stem##_rn, T, RN, lo, hi) CUEMU_FP16_TO_INT(stem##_rz, T, RZ, lo, hi) \
    CUEMU_FP16_TO_INT(stem##_rd, T, RD, lo, hi) CUEMU_FP16_TO_INT(stem##_ru, T, RU, lo, hi)
CUEMU_FP16_TO_INT_ALL(__half2int, int, -2147483647LL - 1, 2147483647LL)
CUEMU_FP16_TO_INT_ALL(__half2uint, unsigned int, 0LL, 4294967295LL)
CUEMU_FP16_TO_INT_ALL(__half2short, short int, -32768LL, 32767LL)
CUEMU_FP16_TO_INT_ALL(__half2ushort, unsigned short int, 0LL, 65535LL)
CUEMU_FP16_TO_INT(__half2char_rz, signed char, RZ, -128LL, 127LL)
CUEMU_FP16_TO_INT(__half2uchar_rz, unsigned char, RZ, 0LL, 255LL)
#undef CUEMU_FP16_TO_INT
#undef CUEMU_FP16_TO_INT_ALL
#define CUEMU_FP16_TO_LL(name, mode) \
    inline long long int name(const __half h) { \
        return cuemu::fp::sat_ll(cuemu::fp::round_integral(cuemu::fp16::wide(h), cuemu::fp::mode), (long long)0x8000000000000000ull); }
#define CUEMU_FP16_TO_ULL(name, mode) \
    inline unsigned long long int name(const __half h) { \
        return cuemu::fp::sat_ull(cuemu::fp::round_integral(cuemu::fp16::wide(h), cuemu::fp::mode), 0x8000000000000000ull); }
CUEMU_FP16_TO_LL(__half2ll_rn, RN) CUEMU_FP16_TO_LL(__half2ll_rz, RZ) CUEMU_FP16_TO_LL(__half2ll_rd, RD) CUEMU_FP16_TO_LL(__half2ll_ru, RU)
CUEMU_FP16_TO_ULL(__half2ull_rn, RN) CUEMU_FP16_TO_ULL(__half2ull_rz, RZ) CUEMU_FP16_TO_ULL(__half2ull_rd, RD) CUEMU_FP16_TO_ULL(__half2ull_ru, RU)
#undef CUEMU_FP16_TO_LL
#undef CUEMU_FP16_TO_ULL

/* >>movement */
inline __half2 make_half2(const __half x, const __half y) { return __half2(x, y); }
inline __half2 __halves2half2(const __half a, const __half b) { return __half2(a, b); }
inline __half2 __half2half2(const __half a) { return __half2(a, a); }
inline __half2 __lowhigh2highlow(const __half2 a) { return __half2(a.y, a.x); }
inline __half2 __lows2half2(const __half2 a, const __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(const __half2 a, const __half2 b) { return __half2(a.y, b.y); }
inline __half __low2half(const __half2 a) { return a.x; }
inline __half __high2half(const __half2 a) { return a.y; }
inline __half2 __low2half2(const __half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(const __half2 a) { return __half2(a.y, a.y); }

/* Loads and stores with cache hints are plain accesses. */
inline __half __ldg(const __half *const ptr) { return *ptr; }
inline __half2 __ldg(const __half2 *const ptr) { return *ptr; }
inline __half __ldcg(const __half *const ptr) { return *ptr; }
inline __half2 __ldcg(const __half2 *const ptr) { return *ptr; }
inline __half __ldca(const __half *const ptr) { return *ptr; }
inline __half2 __ldca(const __half2 *const ptr) { return *ptr; }
inline __half __ldcs(const __half *const ptr) { return *ptr; }
inline __half2 __ldcs(const __half2 *const ptr) { return *ptr; }
inline __half __ldlu(const __half *const ptr) { return *ptr; }
inline __half2 __ldlu(const __half2 *const ptr) { return *ptr; }
inline __half __ldcv(const __half *const ptr) { return *ptr; }
inline __half2 __ldcv(const __half2 *const ptr) { return *ptr; }
inline void __stwb(__half *const ptr, const __half value) { *ptr = value; }
inline void __stwb(__half2 *const ptr, const __half2 value) { *ptr = value; }
inline void __stcg(__half *const ptr, const __half value) { *ptr = value; }
inline void __stcg(__half2 *const ptr, const __half2 value) { *ptr = value; }
inline void __stcs(__half *const ptr, const __half value) { *ptr = value; }
inline void __stcs(__half2 *const ptr, const __half2 value) { *ptr = value; }
inline void __stwt(__half *const ptr, const __half value) { *ptr = value; }
inline void __stwt(__half2 *const ptr, const __half2 value) { *ptr = value; }

/* >>comparison: ordered ones are false, unordered ones true, on NaN. */
#define CUEMU_FP16_CMP(name, uname, op) \
    inline bool name(const __half a, const __half b) { return cuemu::fp16::wide(a) op cuemu::fp16::wide(b); } \
    inline bool uname(const __half a, const __half b) { \
        const double x = cuemu::fp16::wide(a), y = cuemu::fp16::wide(b); return x != x || y != y || (x op y); }
CUEMU_FP16_CMP(__heq, __hequ, ==)
CUEMU_FP16_CMP(__hlt, __hltu, <)
CUEMU_FP16_CMP(__hle, __hleu, <=)
CUEMU_FP16_CMP(__hgt, __hgtu, >)
CUEMU_FP16_CMP(__hge, __hgeu, >=)
#undef CUEMU_FP16_CMP
inline bool __hne(const __half a, const __half b) {
    const double x = cuemu::fp16::wide(a), y = cuemu::fp16::wide(b);
    return x == x && y == y && x != y;
}
inline bool __hneu(const __half a, const __half b) { return !__heq(a, b); }
inline bool __hisnan(const __half a) { return cuemu::fp16::isnan_bits(cuemu::fp16::bits(a)); }
inline int __hisinf(const __half a) {
    const unsigned short b = cuemu::fp16::bits(a);
    return b == 0x7c00u ? 1 : b == 0xfc00u ? -1 : 0;
}

#define CUEMU_FP16_CMP2(stem) \
    inline __half2 __h##stem##2(const __half2 a, const __half2 b) { \
        const __half t = cuemu::fp16::make(0x3c00u), f = cuemu::fp16::make(0); \
        return __half2(__h##stem(a.x, b.x) ? t : f, __h##stem(a.y, b.y) ? t : f); } \
    inline unsigned int __h##stem##2_mask(const __half2 a, const __half2 b) { \
        return (__h##stem(a.x, b.x) ? 0xffffu : 0u) | (__h##stem(a.y, b.y) ? 0xffff0000u : 0u); } \
    inline bool __hb##stem##2(const __half2 a, const __half2 b) { return __h##stem(a.x, b.x) && __h##stem(a.y, b.y); }
CUEMU_FP16_CMP2(eq) CUEMU_FP16_CMP2(ne) CUEMU_FP16_CMP2(lt) CUEMU_FP16_CMP2(le) CUEMU_FP16_CMP2(gt) CUEMU_FP16_CMP2(ge)
CUEMU_FP16_CMP2(equ) CUEMU_FP16_CMP2(neu) CUEMU_FP16_CMP2(ltu) CUEMU_FP16_CMP2(leu) CUEMU_FP16_CMP2(gtu) CUEMU_FP16_CMP2(geu)
#undef CUEMU_FP16_CMP2
inline __half2 __hisnan2(const __half2 a) {
    const __half t = cuemu::fp16::make(0x3c00u), f = cuemu::fp16::make(0);
    return __half2(__hisnan(a.x) ? t : f, __hisnan(a.y) ? t : f);
}

/* max/min: a NaN operand yields the other one (both NaN: canonical NaN);
   +0 counts as greater than -0. The _nan forms return NaN for any NaN. */
namespace cuemu {
namespace fp16 {
inline __half maxmin(const __half a, const __half b, bool want_max, bool nan_wins) {
    const bool an = __hisnan(a), bn = __hisnan(b);
    if (an || bn) {
        if (nan_wins || (an && bn)) return make(NAN_BITS);
        return an ? b : a;
    }
    const double x = wide(a), y = wide(b);
    if (x == y) {   /* equal values: differ only for +0 / -0 */
        const bool a_neg = (bits(a) & 0x8000u) != 0;
        return (want_max ? !a_neg : a_neg) ? a : b;
    }
    return (want_max ? x > y : x < y) ? a : b;
}
} /* namespace fp16 */
} /* namespace cuemu */
inline __half __hmax(const __half a, const __half b) { return cuemu::fp16::maxmin(a, b, true, false); }
inline __half __hmin(const __half a, const __half b) { return cuemu::fp16::maxmin(a, b, false, false); }
inline __half __hmax_nan(const __half a, const __half b) { return cuemu::fp16::maxmin(a, b, true, true); }
inline __half __hmin_nan(const __half a, const __half b) { return cuemu::fp16::maxmin(a, b, false, true); }
inline __half2 __hmax2(const __half2 a, const __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
inline __half2 __hmin2(const __half2 a, const __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
inline __half2 __hmax2_nan(const __half2 a, const __half2 b) { return __half2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }
inline __half2 __hmin2_nan(const __half2 a, const __half2 b) { return __half2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }

/* >>arithmetic: exact in double, rounded once. */
namespace cuemu {
namespace fp16 {
/* clamp to [+0, 1]; NaN to +0 */
inline __half sat(const __half h) {
    const double v = wide(h);
    if (!(v > 0)) return make(0);
    if (v >= 1) return make(0x3c00u);
    return h;
}
/* negative results become +0, NaN the canonical NaN */
inline __half relu(const __half h) {
    if (__hisnan(h)) return make(NAN_BITS);
    return (bits(h) & 0x8000u) ? make(0) : h;
}
} /* namespace fp16 */
} /* namespace cuemu */
inline __half __hadd(const __half a, const __half b) { return cuemu::fp16::narrow(cuemu::fp::add_odd(cuemu::fp16::wide(a), cuemu::fp16::wide(b))); }
inline __half __hsub(const __half a, const __half b) { return cuemu::fp16::narrow(cuemu::fp::add_odd(cuemu::fp16::wide(a), -cuemu::fp16::wide(b))); }
inline __half __hmul(const __half a, const __half b) { return cuemu::fp16::narrow(cuemu::fp::mul_odd(cuemu::fp16::wide(a), cuemu::fp16::wide(b))); }
inline __half __hdiv(const __half a, const __half b) { return cuemu::fp16::narrow(cuemu::fp::div_odd(cuemu::fp16::wide(a), cuemu::fp16::wide(b))); }
inline __half __hfma(const __half a, const __half b, const __half c) {
    return cuemu::fp16::narrow(cuemu::fp::fma_odd(cuemu::fp16::wide(a), cuemu::fp16::wide(b), cuemu::fp16::wide(c)));
}
inline __half __hadd_rn(const __half a, const __half b) { return __hadd(a, b); }
inline __half __hsub_rn(const __half a, const __half b) { return __hsub(a, b); }
inline __half __hmul_rn(const __half a, const __half b) { return __hmul(a, b); }
inline __half __hadd_sat(const __half a, const __half b) { return cuemu::fp16::sat(__hadd(a, b)); }
inline __half __hsub_sat(const __half a, const __half b) { return cuemu::fp16::sat(__hsub(a, b)); }
inline __half __hmul_sat(const __half a, const __half b) { return cuemu::fp16::sat(__hmul(a, b)); }
inline __half __hfma_sat(const __half a, const __half b, const __half c) { return cuemu::fp16::sat(__hfma(a, b, c)); }
inline __half __hfma_relu(const __half a, const __half b, const __half c) { return cuemu::fp16::relu(__hfma(a, b, c)); }
inline __half __hneg(const __half a) { return cuemu::fp16::make((unsigned short)(cuemu::fp16::bits(a) ^ 0x8000u)); }
inline __half __habs(const __half a) { return cuemu::fp16::make((unsigned short)(cuemu::fp16::bits(a) & 0x7fffu)); }

#define CUEMU_FP16_LIFT2(name2, name) \
    inline __half2 name2(const __half2 a, const __half2 b) { return __half2(name(a.x, b.x), name(a.y, b.y)); }
CUEMU_FP16_LIFT2(__hadd2, __hadd) CUEMU_FP16_LIFT2(__hsub2, __hsub) CUEMU_FP16_LIFT2(__hmul2, __hmul)
CUEMU_FP16_LIFT2(__h2div, __hdiv) CUEMU_FP16_LIFT2(__hadd2_rn, __hadd) CUEMU_FP16_LIFT2(__hsub2_rn, __hsub)
CUEMU_FP16_LIFT2(__hmul2_rn, __hmul) CUEMU_FP16_LIFT2(__hadd2_sat, __hadd_sat) CUEMU_FP16_LIFT2(__hsub2_sat, __hsub_sat)
CUEMU_FP16_LIFT2(__hmul2_sat, __hmul_sat)
#undef CUEMU_FP16_LIFT2
inline __half2 __hfma2(const __half2 a, const __half2 b, const __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
inline __half2 __hfma2_sat(const __half2 a, const __half2 b, const __half2 c) { return __half2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)); }
inline __half2 __hfma2_relu(const __half2 a, const __half2 b, const __half2 c) { return __half2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)); }
inline __half2 __hneg2(const __half2 a) { return __half2(__hneg(a.x), __hneg(a.y)); }
inline __half2 __habs2(const __half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
/* (a.x + i a.y)(b.x + i b.y) + (c.x + i c.y), as two chained fmas per part */
inline __half2 __hcmadd(const __half2 a, const __half2 b, const __half2 c) {
    return __half2(__hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y)));
}

/* >>math: rounded to nearest from a double evaluation. */
namespace cuemu {
namespace fp16 {
inline double rint_even(double x) { return cuemu::fp::round_integral(x, cuemu::fp::RN); }
inline double exp10_d(double x) { return pow(10.0, x); }
} /* namespace fp16 */
} /* namespace cuemu */
#define CUEMU_FP16_MATH(name, name2, expr) \
    inline __half name(const __half a) { const double x = cuemu::fp16::wide(a); return cuemu::fp16::narrow(expr); } \
    inline __half2 name2(const __half2 a) { return __half2(name(a.x), name(a.y)); }
CUEMU_FP16_MATH(hsqrt, h2sqrt, cuemu::fp::sqrt_odd(x))
CUEMU_FP16_MATH(hrsqrt, h2rsqrt, 1.0 / sqrt(x))
CUEMU_FP16_MATH(hrcp, h2rcp, cuemu::fp::div_odd(1.0, x))
CUEMU_FP16_MATH(hexp, h2exp, exp(x))
CUEMU_FP16_MATH(hexp2, h2exp2, exp2(x))
CUEMU_FP16_MATH(hexp10, h2exp10, cuemu::fp16::exp10_d(x))
CUEMU_FP16_MATH(hlog, h2log, log(x))
CUEMU_FP16_MATH(hlog2, h2log2, log2(x))
CUEMU_FP16_MATH(hlog10, h2log10, log10(x))
CUEMU_FP16_MATH(hsin, h2sin, sin(x))
CUEMU_FP16_MATH(hcos, h2cos, cos(x))
CUEMU_FP16_MATH(htanh, h2tanh, tanh(x))
CUEMU_FP16_MATH(htanh_approx, h2tanh_approx, tanh(x))
CUEMU_FP16_MATH(htrunc, h2trunc, trunc(x))
CUEMU_FP16_MATH(hceil, h2ceil, ceil(x))
CUEMU_FP16_MATH(hfloor, h2floor, floor(x))
CUEMU_FP16_MATH(hrint, h2rint, cuemu::fp16::rint_even(x))
#undef CUEMU_FP16_MATH

/* >>atomics: a compare-and-swap loop on the 16-bit word (each half of a
   half2 is its own atomic, as on the GPU). */
namespace cuemu {
/* every atomic checks its operand's natural alignment (kernel.h) */
void atomic_point(const void *addr, size_t size);
namespace fp16 {
inline __half atomic_add(__half *address, const __half val) {
    cuemu::atomic_point(address, sizeof(*address));
    unsigned short *p = reinterpret_cast<unsigned short *>(address);
    unsigned short old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        const unsigned short nv = bits(__hadd(make(old), val));
        if (__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return make(old);
    }
}
} /* namespace fp16 */
} /* namespace cuemu */
inline __half atomicAdd(__half *const address, const __half val) { return cuemu::fp16::atomic_add(address, val); }
inline __half2 atomicAdd(__half2 *const address, const __half2 val) {
    cuemu::atomic_point(address, sizeof(*address));   /* the pair's 4-byte alignment (each half is its own atomic) */
    const __half lo = cuemu::fp16::atomic_add(&address->x, val.x);
    const __half hi = cuemu::fp16::atomic_add(&address->y, val.y);
    return __half2(lo, hi);
}

/* >>members that need the functions above */
#if !defined(__CUDA_NO_HALF_CONVERSIONS__) && \
    (!defined(__CUDA_FP16_DISABLE_IMPLICIT_INTEGER_CONVERTS_FOR_HOST_COMPILERS__) || defined(__CUDACC__))
inline __half::operator signed char() const { return __half2char_rz(*this); }
inline __half::operator unsigned char() const { return __half2uchar_rz(*this); }
inline __half::operator char() const {
    return (char)((char)-1 < 0 ? (int)__half2char_rz(*this) : (int)__half2uchar_rz(*this));
}
inline __half::operator short() const { return __half2short_rz(*this); }
inline __half::operator unsigned short() const { return __half2ushort_rz(*this); }
inline __half::operator int() const { return __half2int_rz(*this); }
inline __half::operator unsigned int() const { return __half2uint_rz(*this); }
inline __half::operator long() const {
    return sizeof(long) == sizeof(long long) ? (long)__half2ll_rz(*this) : (long)__half2int_rz(*this);
}
inline __half::operator unsigned long() const {
    return sizeof(unsigned long) == sizeof(unsigned long long) ? (unsigned long)__half2ull_rz(*this)
                                                               : (unsigned long)__half2uint_rz(*this);
}
inline __half::operator long long() const { return __half2ll_rz(*this); }
inline __half::operator unsigned long long() const { return __half2ull_rz(*this); }
#endif

/* >>operators */
#if !defined(__CUDA_NO_HALF_OPERATORS__)
inline __half operator+(const __half &lh, const __half &rh) { return __hadd(lh, rh); }
inline __half operator-(const __half &lh, const __half &rh) { return __hsub(lh, rh); }
inline __half operator*(const __half &lh, const __half &rh) { return __hmul(lh, rh); }
inline __half operator/(const __half &lh, const __half &rh) { return __hdiv(lh, rh); }
inline __half &operator+=(__half &lh, const __half &rh) { lh = __hadd(lh, rh); return lh; }
inline __half &operator-=(__half &lh, const __half &rh) { lh = __hsub(lh, rh); return lh; }
inline __half &operator*=(__half &lh, const __half &rh) { lh = __hmul(lh, rh); return lh; }
inline __half &operator/=(__half &lh, const __half &rh) { lh = __hdiv(lh, rh); return lh; }
inline __half &operator++(__half &h) { h = __hadd(h, cuemu::fp16::make(0x3c00u)); return h; }
inline __half &operator--(__half &h) { h = __hsub(h, cuemu::fp16::make(0x3c00u)); return h; }
inline __half operator++(__half &h, const int ignored) { (void)ignored; const __half old = h; ++h; return old; }
inline __half operator--(__half &h, const int ignored) { (void)ignored; const __half old = h; --h; return old; }
inline __half operator+(const __half &h) { return h; }
inline __half operator-(const __half &h) { return __hneg(h); }
inline bool operator==(const __half &lh, const __half &rh) { return __heq(lh, rh); }
inline bool operator!=(const __half &lh, const __half &rh) { return __hneu(lh, rh); }
inline bool operator>(const __half &lh, const __half &rh) { return __hgt(lh, rh); }
inline bool operator<(const __half &lh, const __half &rh) { return __hlt(lh, rh); }
inline bool operator>=(const __half &lh, const __half &rh) { return __hge(lh, rh); }
inline bool operator<=(const __half &lh, const __half &rh) { return __hle(lh, rh); }
#endif
#if !defined(__CUDA_NO_HALF2_OPERATORS__)
inline __half2 operator+(const __half2 &lh, const __half2 &rh) { return __hadd2(lh, rh); }
inline __half2 operator-(const __half2 &lh, const __half2 &rh) { return __hsub2(lh, rh); }
inline __half2 operator*(const __half2 &lh, const __half2 &rh) { return __hmul2(lh, rh); }
inline __half2 operator/(const __half2 &lh, const __half2 &rh) { return __h2div(lh, rh); }
inline __half2 &operator+=(__half2 &lh, const __half2 &rh) { lh = __hadd2(lh, rh); return lh; }
inline __half2 &operator-=(__half2 &lh, const __half2 &rh) { lh = __hsub2(lh, rh); return lh; }
inline __half2 &operator*=(__half2 &lh, const __half2 &rh) { lh = __hmul2(lh, rh); return lh; }
inline __half2 &operator/=(__half2 &lh, const __half2 &rh) { lh = __h2div(lh, rh); return lh; }
inline __half2 &operator++(__half2 &h) { const __half one = cuemu::fp16::make(0x3c00u); h = __hadd2(h, __half2(one, one)); return h; }
inline __half2 &operator--(__half2 &h) { const __half one = cuemu::fp16::make(0x3c00u); h = __hsub2(h, __half2(one, one)); return h; }
inline __half2 operator++(__half2 &h, const int ignored) { (void)ignored; const __half2 old = h; ++h; return old; }
inline __half2 operator--(__half2 &h, const int ignored) { (void)ignored; const __half2 old = h; --h; return old; }
inline __half2 operator+(const __half2 &h) { return h; }
inline __half2 operator-(const __half2 &h) { return __hneg2(h); }
inline bool operator==(const __half2 &lh, const __half2 &rh) { return __hbeq2(lh, rh); }
inline bool operator!=(const __half2 &lh, const __half2 &rh) { return __hbneu2(lh, rh); }
inline bool operator>(const __half2 &lh, const __half2 &rh) { return __hbgt2(lh, rh); }
inline bool operator<(const __half2 &lh, const __half2 &rh) { return __hblt2(lh, rh); }
inline bool operator>=(const __half2 &lh, const __half2 &rh) { return __hbge2(lh, rh); }
inline bool operator<=(const __half2 &lh, const __half2 &rh) { return __hble2(lh, rh); }
#endif

/* >>constants */
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)

#endif /* __cplusplus */

#undef CUEMU_FP16_ALIGN
#endif
