/* cuda_bf16.h (cuemu) - bfloat16 (1 sign, 8 exponent, 7 fraction bits) for
   the emulated device.

   C: only the storage types __nv_bfloat16_raw and __nv_bfloat162_raw (as
   CUDA 13's header declares them for C compilers).
   C++: __nv_bfloat16 and __nv_bfloat162 with CUDA 13's constructors,
   conversions and operators, and the functions of the CUDA Math API's
   "Bfloat16 Precision Intrinsics" pages, callable from host code and
   kernels. Semantics as in cuda_fp16.h: correctly rounded arithmetic
   (exact in double, rounded once, see cuemu/fp_round.h), math functions
   rounded from a double evaluation, canonical NaN 0x7FFF. */
#ifndef __CUDA_BF16_H__
#define __CUDA_BF16_H__
#define __CUDA_BF16_HPP__
#define __CUDA_BF16_TYPES_EXIST__

#include "cuda_fp16.h"
#include "vector_types.h"

#if defined(__cplusplus)
#define CUEMU_BF16_ALIGN(n) alignas(n)
#else
#define CUEMU_BF16_ALIGN(n) __attribute__((aligned(n)))
#endif

/* The bits of a bfloat16. */
typedef struct CUEMU_BF16_ALIGN(2) {
    unsigned short x;
} __nv_bfloat16_raw;

/* The bits of a bfloat162: x is the low element, y the high one. */
typedef struct CUEMU_BF16_ALIGN(4) {
    unsigned short x;
    unsigned short y;
} __nv_bfloat162_raw;

#if defined(__cplusplus)

#include "cuemu/fp_round.h"

struct CUEMU_BF16_ALIGN(2) __nv_bfloat16 {
protected:
    unsigned short __x;

public:
    __nv_bfloat16() = default;
    constexpr __nv_bfloat16(const __nv_bfloat16_raw &hr) : __x(hr.x) {}
    __nv_bfloat16 &operator=(const __nv_bfloat16_raw &hr) { __x = hr.x; return *this; }
    volatile __nv_bfloat16 &operator=(const __nv_bfloat16_raw &hr) volatile { __x = hr.x; return *this; }
    volatile __nv_bfloat16 &operator=(const volatile __nv_bfloat16_raw &hr) volatile { __x = hr.x; return *this; }
    operator __nv_bfloat16_raw() const { __nv_bfloat16_raw r; r.x = __x; return r; }
    operator __nv_bfloat16_raw() const volatile { __nv_bfloat16_raw r; r.x = __x; return r; }
#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
    explicit __nv_bfloat16(const __half f) : __x(cuemu::fp::f2bf(__half2float(f), cuemu::fp::RN)) {}
    __nv_bfloat16(const float f) : __x(cuemu::fp::f2bf(f, cuemu::fp::RN)) {}
    __nv_bfloat16(const double f) : __x(cuemu::fp::d2bf(f, cuemu::fp::RN)) {}
    operator float() const { return cuemu::fp::bf2f(__x); }
    __nv_bfloat16 &operator=(const float f) { __x = cuemu::fp::f2bf(f, cuemu::fp::RN); return *this; }
    __nv_bfloat16 &operator=(const double f) { __x = cuemu::fp::d2bf(f, cuemu::fp::RN); return *this; }
#if !defined(__CUDA_BF16_DISABLE_IMPLICIT_INTEGER_CONVERTS_FOR_HOST_COMPILERS__) || defined(__CUDACC__)
    __nv_bfloat16(const short val) : __x(uint16_t(cuemu::fp::from_i64<7, 8>(val, cuemu::fp::RN))) {}
    __nv_bfloat16(const unsigned short val) : __x(uint16_t(cuemu::fp::from_u64<7, 8>(val, false, cuemu::fp::RN))) {}
    __nv_bfloat16(const int val) : __x(uint16_t(cuemu::fp::from_i64<7, 8>(val, cuemu::fp::RN))) {}
    __nv_bfloat16(const unsigned int val) : __x(uint16_t(cuemu::fp::from_u64<7, 8>(val, false, cuemu::fp::RN))) {}
    __nv_bfloat16(const long val) : __x(uint16_t(cuemu::fp::from_i64<7, 8>(val, cuemu::fp::RN))) {}
    __nv_bfloat16(const unsigned long val) : __x(uint16_t(cuemu::fp::from_u64<7, 8>(val, false, cuemu::fp::RN))) {}
    __nv_bfloat16(const long long val) : __x(uint16_t(cuemu::fp::from_i64<7, 8>(val, cuemu::fp::RN))) {}
    __nv_bfloat16(const unsigned long long val) : __x(uint16_t(cuemu::fp::from_u64<7, 8>(val, false, cuemu::fp::RN))) {}
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
    __nv_bfloat16 &operator=(const short val) { return *this = __nv_bfloat16(val); }
    __nv_bfloat16 &operator=(const unsigned short val) { return *this = __nv_bfloat16(val); }
    __nv_bfloat16 &operator=(const int val) { return *this = __nv_bfloat16(val); }
    __nv_bfloat16 &operator=(const unsigned int val) { return *this = __nv_bfloat16(val); }
    __nv_bfloat16 &operator=(const long long val) { return *this = __nv_bfloat16(val); }
    __nv_bfloat16 &operator=(const unsigned long long val) { return *this = __nv_bfloat16(val); }
    constexpr operator bool() const { return (__x & 0x7fffu) != 0u; }
#endif
#endif
};

struct CUEMU_BF16_ALIGN(4) __nv_bfloat162 {
    __nv_bfloat16 x;
    __nv_bfloat16 y;

    __nv_bfloat162() = default;
    constexpr __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw &h2r) {
        __nv_bfloat16_raw r;
        r.x = h2r.x; x = __nv_bfloat16(r);
        r.x = h2r.y; y = __nv_bfloat16(r);
    }
    __nv_bfloat162 &operator=(const __nv_bfloat162_raw &h2r) { *this = __nv_bfloat162(h2r); return *this; }
    operator __nv_bfloat162_raw() const {
        __nv_bfloat162_raw r;
        r.x = static_cast<__nv_bfloat16_raw>(x).x;
        r.y = static_cast<__nv_bfloat16_raw>(y).x;
        return r;
    }
};

#if !defined(CUDA_NO_BFLOAT16)
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
#endif

namespace cuemu {
namespace bf16 {
using namespace cuemu::fp;
inline unsigned short bits(const __nv_bfloat16 h) { return static_cast<__nv_bfloat16_raw>(h).x; }
inline __nv_bfloat16 make(unsigned short b) { __nv_bfloat16_raw r; r.x = b; return __nv_bfloat16(r); }
inline double wide(const __nv_bfloat16 h) { return to_double<7, 8>(bits(h)); }
inline __nv_bfloat16 narrow(double d, rmode m = RN) { return make(d2bf(d, m)); }
inline bool isnan_bits(unsigned short b) { return (b & 0x7fffu) > 0x7f80u; }
const unsigned short NAN_BITS = 0x7fffu;
} /* namespace bf16 */
} /* namespace cuemu */

/* >>conversions */
inline __nv_bfloat16 __ushort_as_bfloat16(const unsigned short int i) { return cuemu::bf16::make(i); }
inline unsigned short int __bfloat16_as_ushort(const __nv_bfloat16 h) { return cuemu::bf16::bits(h); }
inline __nv_bfloat16 __short_as_bfloat16(const short int i) { return cuemu::bf16::make((unsigned short)i); }
inline short int __bfloat16_as_short(const __nv_bfloat16 h) { return (short int)cuemu::bf16::bits(h); }

inline __nv_bfloat16 __float2bfloat16(const float a) { return cuemu::bf16::make(cuemu::fp::f2bf(a, cuemu::fp::RN)); }
inline __nv_bfloat16 __float2bfloat16_rn(const float a) { return cuemu::bf16::make(cuemu::fp::f2bf(a, cuemu::fp::RN)); }
inline __nv_bfloat16 __float2bfloat16_rz(const float a) { return cuemu::bf16::make(cuemu::fp::f2bf(a, cuemu::fp::RZ)); }
inline __nv_bfloat16 __float2bfloat16_rd(const float a) { return cuemu::bf16::make(cuemu::fp::f2bf(a, cuemu::fp::RD)); }
inline __nv_bfloat16 __float2bfloat16_ru(const float a) { return cuemu::bf16::make(cuemu::fp::f2bf(a, cuemu::fp::RU)); }
inline __nv_bfloat16 __double2bfloat16(const double a) { return cuemu::bf16::make(cuemu::fp::d2bf(a, cuemu::fp::RN)); }
inline float __bfloat162float(const __nv_bfloat16 a) { return cuemu::fp::bf2f(cuemu::bf16::bits(a)); }
inline __nv_bfloat162 __float2bfloat162_rn(const float a) { const __nv_bfloat16 h = __float2bfloat16_rn(a); return __nv_bfloat162(h, h); }
inline __nv_bfloat162 __floats2bfloat162_rn(const float a, const float b) { return __nv_bfloat162(__float2bfloat16_rn(a), __float2bfloat16_rn(b)); }
inline __nv_bfloat162 __float22bfloat162_rn(const float2 a) { return __nv_bfloat162(__float2bfloat16_rn(a.x), __float2bfloat16_rn(a.y)); }
inline float2 __bfloat1622float2(const __nv_bfloat162 a) { float2 r; r.x = __bfloat162float(a.x); r.y = __bfloat162float(a.y); return r; }
inline float __low2float(const __nv_bfloat162 a) { return __bfloat162float(a.x); }
inline float __high2float(const __nv_bfloat162 a) { return __bfloat162float(a.y); }

#define CUEMU_BF16_FROM_INT(name, T, mode) \
    inline __nv_bfloat16 name(const T i) { return cuemu::bf16::make(uint16_t(cuemu::fp::from_i64<7, 8>((long long)i, cuemu::fp::mode))); }
#define CUEMU_BF16_FROM_UINT(name, T, mode) \
    inline __nv_bfloat16 name(const T i) { return cuemu::bf16::make(uint16_t(cuemu::fp::from_u64<7, 8>((unsigned long long)i, false, cuemu::fp::mode))); }
#define CUEMU_BF16_FROM_ALL(stem, T, FROM) FROM(stem##_rn, T, RN) FROM(stem##_rz, T, RZ) FROM(stem##_rd, T, RD) FROM(stem##_ru, T, RU)
CUEMU_BF16_FROM_ALL(__int2bfloat16, int, CUEMU_BF16_FROM_INT)
CUEMU_BF16_FROM_ALL(__short2bfloat16, short int, CUEMU_BF16_FROM_INT)
CUEMU_BF16_FROM_ALL(__ll2bfloat16, long long int, CUEMU_BF16_FROM_INT)
CUEMU_BF16_FROM_ALL(__uint2bfloat16, unsigned int, CUEMU_BF16_FROM_UINT)
CUEMU_BF16_FROM_ALL(__ushort2bfloat16, unsigned short int, CUEMU_BF16_FROM_UINT)
CUEMU_BF16_FROM_ALL(__ull2bfloat16, unsigned long long int, CUEMU_BF16_FROM_UINT)
#undef CUEMU_BF16_FROM_INT
#undef CUEMU_BF16_FROM_UINT
#undef CUEMU_BF16_FROM_ALL

/* Half to integer: NaN gives 0 (0x8000000000000000 for the 64-bit ones),
   out-of-range values saturate; the Math API documents each case. */
#define CUEMU_BF16_TO_INT(name, T, mode, lo, hi) \
    inline T name(const __nv_bfloat16 h) { \
        return (T)cuemu::fp::sat_range(cuemu::fp::round_integral(cuemu::bf16::wide(h), cuemu::fp::mode), lo, hi); }
#define CUEMU_BF16_TO_INT_ALL(stem, T, lo, hi) \
    CUEMU_BF16_TO_INT(stem##_rn, T, RN, lo, hi) CUEMU_BF16_TO_INT(stem##_rz, T, RZ, lo, hi) \
    CUEMU_BF16_TO_INT(stem##_rd, T, RD, lo, hi) CUEMU_BF16_TO_INT(stem##_ru, T, RU, lo, hi)
CUEMU_BF16_TO_INT_ALL(__bfloat162int, int, -2147483647LL - 1, 2147483647LL)
CUEMU_BF16_TO_INT_ALL(__bfloat162uint, unsigned int, 0LL, 4294967295LL)
CUEMU_BF16_TO_INT_ALL(__bfloat162short, short int, -32768LL, 32767LL)
CUEMU_BF16_TO_INT_ALL(__bfloat162ushort, unsigned short int, 0LL, 65535LL)
CUEMU_BF16_TO_INT(__bfloat162char_rz, signed char, RZ, -128LL, 127LL)
CUEMU_BF16_TO_INT(__bfloat162uchar_rz, unsigned char, RZ, 0LL, 255LL)
#undef CUEMU_BF16_TO_INT
#undef CUEMU_BF16_TO_INT_ALL
#define CUEMU_BF16_TO_LL(name, mode) \
    inline long long int name(const __nv_bfloat16 h) { \
        return cuemu::fp::sat_ll(cuemu::fp::round_integral(cuemu::bf16::wide(h), cuemu::fp::mode), (long long)0x8000000000000000ull); }
#define CUEMU_BF16_TO_ULL(name, mode) \
    inline unsigned long long int name(const __nv_bfloat16 h) { \
        return cuemu::fp::sat_ull(cuemu::fp::round_integral(cuemu::bf16::wide(h), cuemu::fp::mode), 0x8000000000000000ull); }
CUEMU_BF16_TO_LL(__bfloat162ll_rn, RN) CUEMU_BF16_TO_LL(__bfloat162ll_rz, RZ) CUEMU_BF16_TO_LL(__bfloat162ll_rd, RD) CUEMU_BF16_TO_LL(__bfloat162ll_ru, RU)
CUEMU_BF16_TO_ULL(__bfloat162ull_rn, RN) CUEMU_BF16_TO_ULL(__bfloat162ull_rz, RZ) CUEMU_BF16_TO_ULL(__bfloat162ull_rd, RD) CUEMU_BF16_TO_ULL(__bfloat162ull_ru, RU)
#undef CUEMU_BF16_TO_LL
#undef CUEMU_BF16_TO_ULL

/* >>movement */
inline __nv_bfloat162 make_bfloat162(const __nv_bfloat16 x, const __nv_bfloat16 y) { return __nv_bfloat162(x, y); }
inline __nv_bfloat162 __halves2bfloat162(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __bfloat162bfloat162(const __nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 __lowhigh2highlow(const __nv_bfloat162 a) { return __nv_bfloat162(a.y, a.x); }
inline __nv_bfloat162 __lows2bfloat162(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
inline __nv_bfloat162 __highs2bfloat162(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
inline __nv_bfloat16 __low2bfloat16(const __nv_bfloat162 a) { return a.x; }
inline __nv_bfloat16 __high2bfloat16(const __nv_bfloat162 a) { return a.y; }
inline __nv_bfloat162 __low2bfloat162(const __nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
inline __nv_bfloat162 __high2bfloat162(const __nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }

/* Loads and stores with cache hints are plain accesses. */
inline __nv_bfloat16 __ldg(const __nv_bfloat16 *const ptr) { return *ptr; }
inline __nv_bfloat162 __ldg(const __nv_bfloat162 *const ptr) { return *ptr; }
inline __nv_bfloat16 __ldcg(const __nv_bfloat16 *const ptr) { return *ptr; }
inline __nv_bfloat162 __ldcg(const __nv_bfloat162 *const ptr) { return *ptr; }
inline __nv_bfloat16 __ldca(const __nv_bfloat16 *const ptr) { return *ptr; }
inline __nv_bfloat162 __ldca(const __nv_bfloat162 *const ptr) { return *ptr; }
inline __nv_bfloat16 __ldcs(const __nv_bfloat16 *const ptr) { return *ptr; }
inline __nv_bfloat162 __ldcs(const __nv_bfloat162 *const ptr) { return *ptr; }
inline __nv_bfloat16 __ldlu(const __nv_bfloat16 *const ptr) { return *ptr; }
inline __nv_bfloat162 __ldlu(const __nv_bfloat162 *const ptr) { return *ptr; }
inline __nv_bfloat16 __ldcv(const __nv_bfloat16 *const ptr) { return *ptr; }
inline __nv_bfloat162 __ldcv(const __nv_bfloat162 *const ptr) { return *ptr; }
inline void __stwb(__nv_bfloat16 *const ptr, const __nv_bfloat16 value) { *ptr = value; }
inline void __stwb(__nv_bfloat162 *const ptr, const __nv_bfloat162 value) { *ptr = value; }
inline void __stcg(__nv_bfloat16 *const ptr, const __nv_bfloat16 value) { *ptr = value; }
inline void __stcg(__nv_bfloat162 *const ptr, const __nv_bfloat162 value) { *ptr = value; }
inline void __stcs(__nv_bfloat16 *const ptr, const __nv_bfloat16 value) { *ptr = value; }
inline void __stcs(__nv_bfloat162 *const ptr, const __nv_bfloat162 value) { *ptr = value; }
inline void __stwt(__nv_bfloat16 *const ptr, const __nv_bfloat16 value) { *ptr = value; }
inline void __stwt(__nv_bfloat162 *const ptr, const __nv_bfloat162 value) { *ptr = value; }

/* >>comparison: ordered ones are false, unordered ones true, on NaN. */
#define CUEMU_BF16_CMP(name, uname, op) \
    inline bool name(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::wide(a) op cuemu::bf16::wide(b); } \
    inline bool uname(const __nv_bfloat16 a, const __nv_bfloat16 b) { \
        const double x = cuemu::bf16::wide(a), y = cuemu::bf16::wide(b); return x != x || y != y || (x op y); }
CUEMU_BF16_CMP(__heq, __hequ, ==)
CUEMU_BF16_CMP(__hlt, __hltu, <)
CUEMU_BF16_CMP(__hle, __hleu, <=)
CUEMU_BF16_CMP(__hgt, __hgtu, >)
CUEMU_BF16_CMP(__hge, __hgeu, >=)
#undef CUEMU_BF16_CMP
inline bool __hne(const __nv_bfloat16 a, const __nv_bfloat16 b) {
    const double x = cuemu::bf16::wide(a), y = cuemu::bf16::wide(b);
    return x == x && y == y && x != y;
}
inline bool __hneu(const __nv_bfloat16 a, const __nv_bfloat16 b) { return !__heq(a, b); }
inline bool __hisnan(const __nv_bfloat16 a) { return cuemu::bf16::isnan_bits(cuemu::bf16::bits(a)); }
inline int __hisinf(const __nv_bfloat16 a) {
    const unsigned short b = cuemu::bf16::bits(a);
    return b == 0x7f80u ? 1 : b == 0xff80u ? -1 : 0;
}

#define CUEMU_BF16_CMP2(stem) \
    inline __nv_bfloat162 __h##stem##2(const __nv_bfloat162 a, const __nv_bfloat162 b) { \
        const __nv_bfloat16 t = cuemu::bf16::make(0x3f80u), f = cuemu::bf16::make(0); \
        return __nv_bfloat162(__h##stem(a.x, b.x) ? t : f, __h##stem(a.y, b.y) ? t : f); } \
    inline unsigned int __h##stem##2_mask(const __nv_bfloat162 a, const __nv_bfloat162 b) { \
        return (__h##stem(a.x, b.x) ? 0xffffu : 0u) | (__h##stem(a.y, b.y) ? 0xffff0000u : 0u); } \
    inline bool __hb##stem##2(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __h##stem(a.x, b.x) && __h##stem(a.y, b.y); }
CUEMU_BF16_CMP2(eq) CUEMU_BF16_CMP2(ne) CUEMU_BF16_CMP2(lt) CUEMU_BF16_CMP2(le) CUEMU_BF16_CMP2(gt) CUEMU_BF16_CMP2(ge)
CUEMU_BF16_CMP2(equ) CUEMU_BF16_CMP2(neu) CUEMU_BF16_CMP2(ltu) CUEMU_BF16_CMP2(leu) CUEMU_BF16_CMP2(gtu) CUEMU_BF16_CMP2(geu)
#undef CUEMU_BF16_CMP2
inline __nv_bfloat162 __hisnan2(const __nv_bfloat162 a) {
    const __nv_bfloat16 t = cuemu::bf16::make(0x3f80u), f = cuemu::bf16::make(0);
    return __nv_bfloat162(__hisnan(a.x) ? t : f, __hisnan(a.y) ? t : f);
}

/* max/min: a NaN operand yields the other one (both NaN: canonical NaN);
   +0 counts as greater than -0. The _nan forms return NaN for any NaN. */
namespace cuemu {
namespace bf16 {
inline __nv_bfloat16 maxmin(const __nv_bfloat16 a, const __nv_bfloat16 b, bool want_max, bool nan_wins) {
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
} /* namespace bf16 */
} /* namespace cuemu */
inline __nv_bfloat16 __hmax(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::maxmin(a, b, true, false); }
inline __nv_bfloat16 __hmin(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::maxmin(a, b, false, false); }
inline __nv_bfloat16 __hmax_nan(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::maxmin(a, b, true, true); }
inline __nv_bfloat16 __hmin_nan(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::maxmin(a, b, false, true); }
inline __nv_bfloat162 __hmax2(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
inline __nv_bfloat162 __hmin2(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
inline __nv_bfloat162 __hmax2_nan(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }
inline __nv_bfloat162 __hmin2_nan(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }

/* >>arithmetic: exact in double, rounded once. */
namespace cuemu {
namespace bf16 {
/* clamp to [+0, 1]; NaN to +0 */
inline __nv_bfloat16 sat(const __nv_bfloat16 h) {
    const double v = wide(h);
    if (!(v > 0)) return make(0);
    if (v >= 1) return make(0x3f80u);
    return h;
}
/* negative results become +0, NaN the canonical NaN */
inline __nv_bfloat16 relu(const __nv_bfloat16 h) {
    if (__hisnan(h)) return make(NAN_BITS);
    return (bits(h) & 0x8000u) ? make(0) : h;
}
} /* namespace bf16 */
} /* namespace cuemu */
inline __nv_bfloat16 __hadd(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::narrow(cuemu::fp::add_odd(cuemu::bf16::wide(a), cuemu::bf16::wide(b))); }
inline __nv_bfloat16 __hsub(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::narrow(cuemu::fp::add_odd(cuemu::bf16::wide(a), -cuemu::bf16::wide(b))); }
inline __nv_bfloat16 __hmul(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::narrow(cuemu::fp::mul_odd(cuemu::bf16::wide(a), cuemu::bf16::wide(b))); }
inline __nv_bfloat16 __hdiv(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::narrow(cuemu::fp::div_odd(cuemu::bf16::wide(a), cuemu::bf16::wide(b))); }
inline __nv_bfloat16 __hfma(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) {
    return cuemu::bf16::narrow(cuemu::fp::fma_odd(cuemu::bf16::wide(a), cuemu::bf16::wide(b), cuemu::bf16::wide(c)));
}
inline __nv_bfloat16 __hadd_rn(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __hadd(a, b); }
inline __nv_bfloat16 __hsub_rn(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __hsub(a, b); }
inline __nv_bfloat16 __hmul_rn(const __nv_bfloat16 a, const __nv_bfloat16 b) { return __hmul(a, b); }
inline __nv_bfloat16 __hadd_sat(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::sat(__hadd(a, b)); }
inline __nv_bfloat16 __hsub_sat(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::sat(__hsub(a, b)); }
inline __nv_bfloat16 __hmul_sat(const __nv_bfloat16 a, const __nv_bfloat16 b) { return cuemu::bf16::sat(__hmul(a, b)); }
inline __nv_bfloat16 __hfma_sat(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) { return cuemu::bf16::sat(__hfma(a, b, c)); }
inline __nv_bfloat16 __hfma_relu(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) { return cuemu::bf16::relu(__hfma(a, b, c)); }
inline __nv_bfloat16 __hneg(const __nv_bfloat16 a) { return cuemu::bf16::make((unsigned short)(cuemu::bf16::bits(a) ^ 0x8000u)); }
inline __nv_bfloat16 __habs(const __nv_bfloat16 a) { return cuemu::bf16::make((unsigned short)(cuemu::bf16::bits(a) & 0x7fffu)); }

#define CUEMU_BF16_LIFT2(name2, name) \
    inline __nv_bfloat162 name2(const __nv_bfloat162 a, const __nv_bfloat162 b) { return __nv_bfloat162(name(a.x, b.x), name(a.y, b.y)); }
CUEMU_BF16_LIFT2(__hadd2, __hadd) CUEMU_BF16_LIFT2(__hsub2, __hsub) CUEMU_BF16_LIFT2(__hmul2, __hmul)
CUEMU_BF16_LIFT2(__h2div, __hdiv) CUEMU_BF16_LIFT2(__hadd2_rn, __hadd) CUEMU_BF16_LIFT2(__hsub2_rn, __hsub)
CUEMU_BF16_LIFT2(__hmul2_rn, __hmul) CUEMU_BF16_LIFT2(__hadd2_sat, __hadd_sat) CUEMU_BF16_LIFT2(__hsub2_sat, __hsub_sat)
CUEMU_BF16_LIFT2(__hmul2_sat, __hmul_sat)
#undef CUEMU_BF16_LIFT2
inline __nv_bfloat162 __hfma2(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) { return __nv_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
inline __nv_bfloat162 __hfma2_sat(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) { return __nv_bfloat162(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)); }
inline __nv_bfloat162 __hfma2_relu(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) { return __nv_bfloat162(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)); }
inline __nv_bfloat162 __hneg2(const __nv_bfloat162 a) { return __nv_bfloat162(__hneg(a.x), __hneg(a.y)); }
inline __nv_bfloat162 __habs2(const __nv_bfloat162 a) { return __nv_bfloat162(__habs(a.x), __habs(a.y)); }
/* (a.x + i a.y)(b.x + i b.y) + (c.x + i c.y), as two chained fmas per part */
inline __nv_bfloat162 __hcmadd(const __nv_bfloat162 a, const __nv_bfloat162 b, const __nv_bfloat162 c) {
    return __nv_bfloat162(__hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y)));
}

/* >>math: rounded to nearest from a double evaluation. */
namespace cuemu {
namespace bf16 {
inline double rint_even(double x) { return cuemu::fp::round_integral(x, cuemu::fp::RN); }
inline double exp10_d(double x) { return pow(10.0, x); }
} /* namespace bf16 */
} /* namespace cuemu */
#define CUEMU_BF16_MATH(name, name2, expr) \
    inline __nv_bfloat16 name(const __nv_bfloat16 a) { const double x = cuemu::bf16::wide(a); return cuemu::bf16::narrow(expr); } \
    inline __nv_bfloat162 name2(const __nv_bfloat162 a) { return __nv_bfloat162(name(a.x), name(a.y)); }
CUEMU_BF16_MATH(hsqrt, h2sqrt, cuemu::fp::sqrt_odd(x))
CUEMU_BF16_MATH(hrsqrt, h2rsqrt, 1.0 / sqrt(x))
CUEMU_BF16_MATH(hrcp, h2rcp, cuemu::fp::div_odd(1.0, x))
CUEMU_BF16_MATH(hexp, h2exp, exp(x))
CUEMU_BF16_MATH(hexp2, h2exp2, exp2(x))
CUEMU_BF16_MATH(hexp10, h2exp10, cuemu::bf16::exp10_d(x))
CUEMU_BF16_MATH(hlog, h2log, log(x))
CUEMU_BF16_MATH(hlog2, h2log2, log2(x))
CUEMU_BF16_MATH(hlog10, h2log10, log10(x))
CUEMU_BF16_MATH(hsin, h2sin, sin(x))
CUEMU_BF16_MATH(hcos, h2cos, cos(x))
CUEMU_BF16_MATH(htanh, h2tanh, tanh(x))
CUEMU_BF16_MATH(htanh_approx, h2tanh_approx, tanh(x))
CUEMU_BF16_MATH(htrunc, h2trunc, trunc(x))
CUEMU_BF16_MATH(hceil, h2ceil, ceil(x))
CUEMU_BF16_MATH(hfloor, h2floor, floor(x))
CUEMU_BF16_MATH(hrint, h2rint, cuemu::bf16::rint_even(x))
#undef CUEMU_BF16_MATH

/* >>atomics: a compare-and-swap loop on the 16-bit word (each element of a
   bfloat162 is its own atomic, as on the GPU). */
namespace cuemu {
/* every atomic checks its operand's natural alignment (kernel.h) */
void atomic_point(const void *addr, size_t size);
namespace bf16 {
inline __nv_bfloat16 atomic_add(__nv_bfloat16 *address, const __nv_bfloat16 val) {
    cuemu::atomic_point(address, sizeof(*address));
    unsigned short *p = reinterpret_cast<unsigned short *>(address);
    unsigned short old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        const unsigned short nv = bits(__hadd(make(old), val));
        if (__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return make(old);
    }
}
} /* namespace bf16 */
} /* namespace cuemu */
inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *const address, const __nv_bfloat16 val) { return cuemu::bf16::atomic_add(address, val); }
inline __nv_bfloat162 atomicAdd(__nv_bfloat162 *const address, const __nv_bfloat162 val) {
    cuemu::atomic_point(address, sizeof(*address));   /* the pair's 4-byte alignment (each half is its own atomic) */
    const __nv_bfloat16 lo = cuemu::bf16::atomic_add(&address->x, val.x);
    const __nv_bfloat16 hi = cuemu::bf16::atomic_add(&address->y, val.y);
    return __nv_bfloat162(lo, hi);
}

/* >>members that need the functions above */
#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__) && \
    (!defined(__CUDA_BF16_DISABLE_IMPLICIT_INTEGER_CONVERTS_FOR_HOST_COMPILERS__) || defined(__CUDACC__))
inline __nv_bfloat16::operator signed char() const { return __bfloat162char_rz(*this); }
inline __nv_bfloat16::operator unsigned char() const { return __bfloat162uchar_rz(*this); }
inline __nv_bfloat16::operator char() const {
    return (char)((char)-1 < 0 ? (int)__bfloat162char_rz(*this) : (int)__bfloat162uchar_rz(*this));
}
inline __nv_bfloat16::operator short() const { return __bfloat162short_rz(*this); }
inline __nv_bfloat16::operator unsigned short() const { return __bfloat162ushort_rz(*this); }
inline __nv_bfloat16::operator int() const { return __bfloat162int_rz(*this); }
inline __nv_bfloat16::operator unsigned int() const { return __bfloat162uint_rz(*this); }
inline __nv_bfloat16::operator long() const {
    return sizeof(long) == sizeof(long long) ? (long)__bfloat162ll_rz(*this) : (long)__bfloat162int_rz(*this);
}
inline __nv_bfloat16::operator unsigned long() const {
    return sizeof(unsigned long) == sizeof(unsigned long long) ? (unsigned long)__bfloat162ull_rz(*this)
                                                               : (unsigned long)__bfloat162uint_rz(*this);
}
inline __nv_bfloat16::operator long long() const { return __bfloat162ll_rz(*this); }
inline __nv_bfloat16::operator unsigned long long() const { return __bfloat162ull_rz(*this); }
#endif

/* >>operators */
#if !defined(__CUDA_NO_BFLOAT16_OPERATORS__)
inline __nv_bfloat16 operator+(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hadd(lh, rh); }
inline __nv_bfloat16 operator-(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hsub(lh, rh); }
inline __nv_bfloat16 operator*(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hmul(lh, rh); }
inline __nv_bfloat16 operator/(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hdiv(lh, rh); }
inline __nv_bfloat16 &operator+=(__nv_bfloat16 &lh, const __nv_bfloat16 &rh) { lh = __hadd(lh, rh); return lh; }
inline __nv_bfloat16 &operator-=(__nv_bfloat16 &lh, const __nv_bfloat16 &rh) { lh = __hsub(lh, rh); return lh; }
inline __nv_bfloat16 &operator*=(__nv_bfloat16 &lh, const __nv_bfloat16 &rh) { lh = __hmul(lh, rh); return lh; }
inline __nv_bfloat16 &operator/=(__nv_bfloat16 &lh, const __nv_bfloat16 &rh) { lh = __hdiv(lh, rh); return lh; }
inline __nv_bfloat16 &operator++(__nv_bfloat16 &h) { h = __hadd(h, cuemu::bf16::make(0x3f80u)); return h; }
inline __nv_bfloat16 &operator--(__nv_bfloat16 &h) { h = __hsub(h, cuemu::bf16::make(0x3f80u)); return h; }
inline __nv_bfloat16 operator++(__nv_bfloat16 &h, const int ignored) { (void)ignored; const __nv_bfloat16 old = h; ++h; return old; }
inline __nv_bfloat16 operator--(__nv_bfloat16 &h, const int ignored) { (void)ignored; const __nv_bfloat16 old = h; --h; return old; }
inline __nv_bfloat16 operator+(const __nv_bfloat16 &h) { return h; }
inline __nv_bfloat16 operator-(const __nv_bfloat16 &h) { return __hneg(h); }
inline bool operator==(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __heq(lh, rh); }
inline bool operator!=(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hneu(lh, rh); }
inline bool operator>(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hgt(lh, rh); }
inline bool operator<(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hlt(lh, rh); }
inline bool operator>=(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hge(lh, rh); }
inline bool operator<=(const __nv_bfloat16 &lh, const __nv_bfloat16 &rh) { return __hle(lh, rh); }
#endif
#if !defined(__CUDA_NO_BFLOAT162_OPERATORS__)
inline __nv_bfloat162 operator+(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hadd2(lh, rh); }
inline __nv_bfloat162 operator-(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hsub2(lh, rh); }
inline __nv_bfloat162 operator*(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hmul2(lh, rh); }
inline __nv_bfloat162 operator/(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __h2div(lh, rh); }
inline __nv_bfloat162 &operator+=(__nv_bfloat162 &lh, const __nv_bfloat162 &rh) { lh = __hadd2(lh, rh); return lh; }
inline __nv_bfloat162 &operator-=(__nv_bfloat162 &lh, const __nv_bfloat162 &rh) { lh = __hsub2(lh, rh); return lh; }
inline __nv_bfloat162 &operator*=(__nv_bfloat162 &lh, const __nv_bfloat162 &rh) { lh = __hmul2(lh, rh); return lh; }
inline __nv_bfloat162 &operator/=(__nv_bfloat162 &lh, const __nv_bfloat162 &rh) { lh = __h2div(lh, rh); return lh; }
inline __nv_bfloat162 &operator++(__nv_bfloat162 &h) { const __nv_bfloat16 one = cuemu::bf16::make(0x3f80u); h = __hadd2(h, __nv_bfloat162(one, one)); return h; }
inline __nv_bfloat162 &operator--(__nv_bfloat162 &h) { const __nv_bfloat16 one = cuemu::bf16::make(0x3f80u); h = __hsub2(h, __nv_bfloat162(one, one)); return h; }
inline __nv_bfloat162 operator++(__nv_bfloat162 &h, const int ignored) { (void)ignored; const __nv_bfloat162 old = h; ++h; return old; }
inline __nv_bfloat162 operator--(__nv_bfloat162 &h, const int ignored) { (void)ignored; const __nv_bfloat162 old = h; --h; return old; }
inline __nv_bfloat162 operator+(const __nv_bfloat162 &h) { return h; }
inline __nv_bfloat162 operator-(const __nv_bfloat162 &h) { return __hneg2(h); }
inline bool operator==(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hbeq2(lh, rh); }
inline bool operator!=(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hbneu2(lh, rh); }
inline bool operator>(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hbgt2(lh, rh); }
inline bool operator<(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hblt2(lh, rh); }
inline bool operator>=(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hbge2(lh, rh); }
inline bool operator<=(const __nv_bfloat162 &lh, const __nv_bfloat162 &rh) { return __hble2(lh, rh); }
#endif

/* >>constants */
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)

/* >>between half and bfloat16: through float (exact), rounded to nearest even. */
inline __half::__half(const __nv_bfloat16 f) : __x(cuemu::fp::f2h(__bfloat162float(f), cuemu::fp::RN)) {}

#endif /* __cplusplus */

#undef CUEMU_BF16_ALIGN
#endif
