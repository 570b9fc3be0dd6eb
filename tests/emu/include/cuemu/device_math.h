/* cuemu/device_math.h - CUDA's device math library (C++ only; cuda_runtime.h
   includes it in .cu files).

   What the emulated device gives, per the CUDA Math API reference and the
   accuracy tables of the CUDA C++ Programming Guide (appendix
   "Mathematical Functions"):
   - the standard functions (expf, logf, tanhf, erff, powf, exp, ...) in
     device code: not the host's libm bit for bit but a value within the
     documented maximum ulp error of the correctly rounded result, chosen
     by CUEMU_MATH (>>accuracy); the standard names called in device
     functions are redirected to these (>>redirect: by using-declarations
     nvcc-emu writes, not macros, so a member or a local called log or exp
     keeps its name), --use_fast_math maps them to the intrinsics and
     --ftz flushes their denormals;
   - fast-math intrinsics (__expf, __sinf, ...): within their own documented
     bounds (ulps growing with |x|, absolute or relative errors), with the
     documented quirks: denormal outputs of __sinf/__cosf/__tanf/__sincosf
     flushed to zero, __powf as exp2f(y * __log2f(x)) (so negative bases
     give NaN), __tanf as __sinf(x) * (1 / __cosf(x)), __fdividef returning
     0 (Inf / y: NaN) for 2^126 < |y| < 2^128.
   - float operations in a named rounding direction (__fadd_rd, ...):
     exact, computed in double rounded "to odd" and then rounded in the
     direction (cuemu/fp_round.h). Double ones (__dadd_rd, ...): the host's
     IEEE arithmetic run under fesetround(), with volatile operands so that
     the compiler neither folds nor moves the operation out of the mode.
   - conversions in every direction; float/double to integer saturate at the
     integer's range, NaN gives 0 (0x8000000000000000 for 64-bit results),
     as the hardware's cvt instructions do (the Math API leaves
     out-of-range results undefined).
   - integer intrinsics, bit reinterpretation, and the min/max overloads of
     crt/math_functions.hpp (mixed signed/unsigned ones compare as unsigned).
   - math functions absent from glibc (rsqrtf, rcbrtf, sinpif, normcdff,
     erfinvf, ...): evaluated in long double, then within their bounds. */
#ifndef CUEMU_DEVICE_MATH_H
#define CUEMU_DEVICE_MATH_H

#include <math.h>
#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>
#include "fp_round.h"
#include "../vector_types.h"

namespace cuemu {
namespace dm {
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;
} /* namespace dm */
} /* namespace cuemu */

/* >>reinterpretation */
inline float __int_as_float(int x) { return cuemu::fp::u2f((uint32_t)x); }
inline int __float_as_int(float x) { return (int)cuemu::fp::f2u(x); }
inline float __uint_as_float(unsigned int x) { return cuemu::fp::u2f(x); }
inline unsigned int __float_as_uint(float x) { return cuemu::fp::f2u(x); }
inline long long int __double_as_longlong(double x) { return (long long int)cuemu::fp::d2u(x); }
inline double __longlong_as_double(long long int x) { return cuemu::fp::u2d((uint64_t)x); }
inline double __hiloint2double(int hi, int lo) {
    return cuemu::fp::u2d(((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo);
}
inline int __double2hiint(double x) { return (int)(uint32_t)(cuemu::fp::d2u(x) >> 32); }
inline int __double2loint(double x) { return (int)(uint32_t)cuemu::fp::d2u(x); }

/* >>integer intrinsics */
/* __dp4a / __dp2a_lo / __dp2a_hi (CUDA Math API, Integer Intrinsics; compute
   capability 6.1 and up): four 8x8 or two 16x8 products of packed integers
   (byte or half-word 0 the least significant, the vector forms' x), summed
   with c; the 32-bit sum wraps as the hardware's integer add does. */
namespace cuemu {
inline int32_t dp_byte(uint32_t v, int i, bool sign) { return sign ? (int32_t)(int8_t)(v >> (8 * i)) : (int32_t)(uint8_t)(v >> (8 * i)); }
inline int32_t dp_half(uint32_t v, int i, bool sign) { return sign ? (int32_t)(int16_t)(v >> (16 * i)) : (int32_t)(uint16_t)(v >> (16 * i)); }
inline uint32_t dp4a(uint32_t a, uint32_t b, uint32_t c, bool sign) {
    uint32_t s = c;
    for (int i = 0; i < 4; i++) s += (uint32_t)(dp_byte(a, i, sign) * dp_byte(b, i, sign));
    return s;
}
inline uint32_t dp2a(uint32_t a, uint32_t b, uint32_t c, bool sign, int half) {
    uint32_t s = c;
    for (int i = 0; i < 2; i++) s += (uint32_t)(dp_half(a, i, sign) * dp_byte(b, 2 * half + i, sign));
    return s;
}
template <class V> inline uint32_t pack4(V v) {
    return (uint32_t)(uint8_t)v.x | (uint32_t)(uint8_t)v.y << 8 | (uint32_t)(uint8_t)v.z << 16 | (uint32_t)(uint8_t)v.w << 24;
}
template <class V> inline uint32_t pack2(V v) { return (uint32_t)(uint16_t)v.x | (uint32_t)(uint16_t)v.y << 16; }
} /* namespace cuemu */
inline int __dp4a(int a, int b, int c) { return (int)cuemu::dp4a((uint32_t)a, (uint32_t)b, (uint32_t)c, true); }
inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) { return cuemu::dp4a(a, b, c, false); }
inline int __dp4a(char4 a, char4 b, int c) { return (int)cuemu::dp4a(cuemu::pack4(a), cuemu::pack4(b), (uint32_t)c, true); }
inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) { return cuemu::dp4a(cuemu::pack4(a), cuemu::pack4(b), c, false); }
inline int __dp2a_lo(int a, int b, int c) { return (int)cuemu::dp2a((uint32_t)a, (uint32_t)b, (uint32_t)c, true, 0); }
inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c) { return cuemu::dp2a(a, b, c, false, 0); }
inline int __dp2a_lo(short2 a, char4 b, int c) { return (int)cuemu::dp2a(cuemu::pack2(a), cuemu::pack4(b), (uint32_t)c, true, 0); }
inline unsigned int __dp2a_lo(ushort2 a, uchar4 b, unsigned int c) { return cuemu::dp2a(cuemu::pack2(a), cuemu::pack4(b), c, false, 0); }
inline int __dp2a_hi(int a, int b, int c) { return (int)cuemu::dp2a((uint32_t)a, (uint32_t)b, (uint32_t)c, true, 1); }
inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c) { return cuemu::dp2a(a, b, c, false, 1); }
inline int __dp2a_hi(short2 a, char4 b, int c) { return (int)cuemu::dp2a(cuemu::pack2(a), cuemu::pack4(b), (uint32_t)c, true, 1); }
inline unsigned int __dp2a_hi(ushort2 a, uchar4 b, unsigned int c) { return cuemu::dp2a(cuemu::pack2(a), cuemu::pack4(b), c, false, 1); }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long int x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long int x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long int x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long int __brevll(unsigned long long int x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
/* Byte n of the result is byte (s >> 4n) & 7 of the 8 bytes {y:x} (x low). */
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const uint64_t v = ((uint64_t)y << 32) | x;
    unsigned int r = 0;
    for (int n = 0; n < 4; n++) r |= (unsigned)((v >> (8 * ((s >> (4 * n)) & 7u))) & 0xffu) << (8 * n);
    return r;
}
/* hi:lo shifted left (right), the high (low) 32 bits kept; the shift is taken
   mod 32, or clamped to 32 in the _lc/_rc forms. */
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    const uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned)((v << (shift & 31u)) >> 32);
}
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const uint64_t v = ((uint64_t)hi << 32) | lo;
    const unsigned s = shift < 32u ? shift : 32u;
    return (unsigned)((v << s) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    const uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned)(v >> (shift & 31u));
}
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const uint64_t v = ((uint64_t)hi << 32) | lo;
    const unsigned s = shift < 32u ? shift : 32u;
    return (unsigned)(v >> s);
}
/* The offset-th set bit of mask counting from bit base (upwards for a
   positive offset, downwards for a negative one; offset 0: base itself),
   or 0xffffffff (PTX fns). */
inline unsigned __fns(unsigned mask, unsigned base, int offset) {
    if (base > 31u) return 0xffffffffu;
    if (offset == 0) return ((mask >> base) & 1u) ? base : 0xffffffffu;
    long count = (offset > 0 ? (long)offset : -(long)offset) - 1;
    const int inc = offset > 0 ? 1 : -1;
    for (int pos = (int)base; pos >= 0 && pos < 32; pos += inc) {
        if ((mask >> pos) & 1u) {
            if (count == 0) return (unsigned)pos;
            count--;
        }
    }
    return 0xffffffffu;
}
/* the low 24 bits of each operand, as signed 24-bit numbers; the low 32 bits of the product */
inline int __mul24(int x, int y) {
    const int64_t xs = (int64_t)((int32_t)((uint32_t)x << 8) >> 8);
    const int64_t ys = (int64_t)((int32_t)((uint32_t)y << 8) >> 8);
    return (int)(uint32_t)(uint64_t)(xs * ys);
}
inline unsigned int __umul24(unsigned int x, unsigned int y) {
    return (unsigned)(((uint64_t)(x & 0xffffffu) * (uint64_t)(y & 0xffffffu)) & 0xffffffffu);
}
inline int __mulhi(int x, int y) { return (int)(((int64_t)x * (int64_t)y) >> 32); }
inline unsigned int __umulhi(unsigned int x, unsigned int y) { return (unsigned)(((uint64_t)x * y) >> 32); }
inline long long int __mul64hi(long long int x, long long int y) {
    return (long long)(((cuemu::dm::i128)x * (cuemu::dm::i128)y) >> 64);
}
inline unsigned long long int __umul64hi(unsigned long long int x, unsigned long long int y) {
    return (unsigned long long)(((cuemu::dm::u128)x * y) >> 64);
}
inline unsigned int __sad(int x, int y, unsigned int z) {
    const int64_t d = (int64_t)x - (int64_t)y;
    return (unsigned)(uint64_t)(d < 0 ? -d : d) + z;
}
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
/* halving adds without intermediate overflow: (x + y) >> 1 and (x + y + 1) >> 1 */
inline int __hadd(int x, int y) { return (int)(((int64_t)x + y) >> 1); }
inline int __rhadd(int x, int y) { return (int)(((int64_t)x + y + 1) >> 1); }
inline unsigned int __uhadd(unsigned int x, unsigned int y) { return (unsigned)(((uint64_t)x + y) >> 1); }
inline unsigned int __urhadd(unsigned int x, unsigned int y) { return (unsigned)(((uint64_t)x + y + 1) >> 1); }
inline unsigned short __nv_bswap16(unsigned short x) { return __builtin_bswap16(x); }
inline unsigned int __nv_bswap32(unsigned int x) { return __builtin_bswap32(x); }
inline unsigned long long __nv_bswap64(unsigned long long x) { return __builtin_bswap64(x); }

/* >>min/max (crt/math_functions.hpp's overloads; mixed signed/unsigned
   arguments are converted to the unsigned type first) */
inline int min(const int a, const int b) { return a < b ? a : b; }
inline unsigned int umin(const unsigned int a, const unsigned int b) { return a < b ? a : b; }
inline long long int llmin(const long long int a, const long long int b) { return a < b ? a : b; }
inline unsigned long long int ullmin(const unsigned long long int a, const unsigned long long int b) { return a < b ? a : b; }
inline int max(const int a, const int b) { return a > b ? a : b; }
inline unsigned int umax(const unsigned int a, const unsigned int b) { return a > b ? a : b; }
inline long long int llmax(const long long int a, const long long int b) { return a > b ? a : b; }
inline unsigned long long int ullmax(const unsigned long long int a, const unsigned long long int b) { return a > b ? a : b; }
#define CUEMU_MINMAX_U(R, A, B) \
    inline R min(const A a, const B b) { return (R)a < (R)b ? (R)a : (R)b; } \
    inline R max(const A a, const B b) { return (R)a > (R)b ? (R)a : (R)b; }
CUEMU_MINMAX_U(unsigned int, unsigned int, unsigned int)
CUEMU_MINMAX_U(unsigned int, int, unsigned int)
CUEMU_MINMAX_U(unsigned int, unsigned int, int)
CUEMU_MINMAX_U(long int, long int, long int)
CUEMU_MINMAX_U(unsigned long int, unsigned long int, unsigned long int)
CUEMU_MINMAX_U(unsigned long int, long int, unsigned long int)
CUEMU_MINMAX_U(unsigned long int, unsigned long int, long int)
CUEMU_MINMAX_U(long long int, long long int, long long int)
CUEMU_MINMAX_U(unsigned long long int, unsigned long long int, unsigned long long int)
CUEMU_MINMAX_U(unsigned long long int, long long int, unsigned long long int)
CUEMU_MINMAX_U(unsigned long long int, unsigned long long int, long long int)
#undef CUEMU_MINMAX_U
inline float min(const float a, const float b) { return fminf(a, b); }
inline double min(const double a, const double b) { return fmin(a, b); }
inline double min(const float a, const double b) { return fmin((double)a, b); }
inline double min(const double a, const float b) { return fmin(a, (double)b); }
inline float max(const float a, const float b) { return fmaxf(a, b); }
inline double max(const double a, const double b) { return fmax(a, b); }
inline double max(const float a, const double b) { return fmax((double)a, b); }
inline double max(const double a, const float b) { return fmax(a, (double)b); }

namespace cuemu {
namespace dm {
using namespace cuemu::fp;
/* denormal results flushed to a zero of the same sign */
inline float ftz(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }
inline float f(double x, rmode m = RN) { return d2f(x, m); }
/* IEEE sign of an exactly-zero sum p + c in direction m */
inline double zero_sum(double s, double p, double c, rmode m) {
    if (s != 0) return s;
    const bool both_zero = p == 0 && c == 0;
    if (both_zero && signbit(p) == signbit(c)) return p;
    return m == RD ? -0.0 : 0.0;
}
inline float add(float a, float b, rmode m) {
    const double s = add_odd(a, b);
    return f(zero_sum(s, a, b, m), m);
}
inline float fma3(float a, float b, float c, rmode m) {
    const double p = (double)a * (double)b;   /* exact */
    const double s = add_odd(p, c);
    return f(zero_sum(s, p, c, m), m);
}
/* 1/sqrt(x) rounded to nearest for the format with MANT fraction bits,
   checked exactly: the result r is right when x * lo^2 < 1 < x * hi^2 for
   the midpoints lo, hi around r (1/sqrt(x) is never a midpoint). */
template <int MANT, int EXPB>
inline uint64_t rsqrt_rn(double x) {
    if (x != x || x < 0) return canonical_nan<MANT, EXPB>();
    if (x == 0) return from_double<MANT, EXPB>(signbit(x) ? -HUGE_VAL : HUGE_VAL, RN);
    if (isinf(x)) return 0;
    uint64_t r = from_double<MANT, EXPB>(1.0 / sqrt(x), RN);
    const int BIAS = (1 << (EXPB - 1)) - 1;
    int ex;
    const double fx = frexp(x, &ex);                      /* x = fx * 2^ex, fx in [0.5, 1) */
    const uint64_t X = (uint64_t)ldexp(fx, 53);           /* x = X * 2^(ex - 53) exactly */
    const int eX = ex - 53;
    for (int iter = 0; iter < 3; iter++) {
        const int e = (int)((r >> MANT) & ((1u << EXPB) - 1));
        const uint64_t R = (r & ((uint64_t(1) << MANT) - 1)) | (e ? (uint64_t(1) << MANT) : 0);
        const int eR = (e ? e : 1) - BIAS - MANT;         /* r = R * 2^eR */
        /* compare X * M^2 * 2^(eX + 2 eM) with 1 */
        auto above_one = [&](uint64_t M, int eM) -> int {
            const u128 P = (u128)X * M * M;
            const int E = eX + 2 * eM;
            if (E >= 0) return 1;
            if (-E >= 127) return -1;
            const u128 one = (u128)1 << (-E);
            return P > one ? 1 : P < one ? -1 : 0;
        };
        const int hi = above_one(2 * R + 1, eR - 1);
        int lo;
        if (R == (uint64_t(1) << MANT) && e > 1) lo = above_one(4 * R - 1, eR - 2);
        else lo = above_one(2 * R - 1, eR - 1);
        if (hi <= 0) r += 1;        /* 1/sqrt(x) >= hi: r too small */
        else if (lo >= 0) r -= 1;   /* 1/sqrt(x) <= lo: r too large */
        else break;
    }
    return r;
}
/* long double evaluations rounded to float / double */
inline float lf(long double v) { return (float)(double)v; }
inline long double erfc_inv_pos(long double y) {   /* y in (0, 1]: x >= 0 with erfc(x) = y */
    if (y == 1) return 0;
    long double lo = 0, hi = 27.5L;   /* erfc(27.5) < 2^-1100 */
    long double x = sqrtl(-logl(y));  /* a start near the answer */
    if (!(x > lo && x < hi)) x = 0.5L * (lo + hi);
    const long double c = 1.1283791670955125738961589031215452L;   /* 2/sqrt(pi) */
    for (int i = 0; i < 200; i++) {
        const long double fx = erfcl(x) - y;
        if (fx == 0) return x;
        if (fx > 0) lo = x; else hi = x;   /* erfc decreasing */
        long double nx = x + fx / (c * expl(-x * x));
        if (!(nx > lo && nx < hi)) nx = 0.5L * (lo + hi);
        if (fabsl(nx - x) <= 4e-19L * x) return nx;
        x = nx;
    }
    return x;
}
inline long double erf_inv_small(long double y) {   /* |y| <= 0.5 */
    long double x = y * 0.886226925452758013649L;   /* sqrt(pi)/2 * y */
    const long double c = 1.1283791670955125738961589031215452L;
    for (int i = 0; i < 50; i++) {
        const long double nx = x - (erfl(x) - y) / (c * expl(-x * x));
        if (fabsl(nx - x) <= 4e-19L * fabsl(x)) return nx;
        x = nx;
    }
    return x;
}
inline long double erfinv_l(long double y) {
    if (y != y || y < -1 || y > 1) return NAN;
    if (y == 1) return HUGE_VALL;
    if (y == -1) return -HUGE_VALL;
    if (y == 0) return y;
    if (fabsl(y) <= 0.5L) return erf_inv_small(y);
    const long double v = erfc_inv_pos(1 - fabsl(y));   /* 1 - |y| exact for |y| >= 0.5 */
    return y < 0 ? -v : v;
}
inline long double erfcinv_l(long double y) {
    if (y != y || y < 0 || y > 2) return NAN;
    if (y == 0) return HUGE_VALL;
    if (y == 2) return -HUGE_VALL;
    if (y <= 1) return erfc_inv_pos(y);
    return -erfc_inv_pos(2 - y);   /* exact for y in [1, 2] */
}
/* sin(pi x), cos(pi x) with exact argument reduction */
inline void sincospi_l(long double x, long double *s, long double *c) {
    const long double PI = 3.141592653589793238462643383279502884L;
    if (isinf(x) || x != x) { *s = *c = NAN; return; }
    /* sin(pi x) is odd and cos(pi x) even: reduce |x|, exactly, to [0, 2) */
    const long double r = fmodl(fabsl(x), 2.0L);
    /* quadrant q: r = q/2 + t, t in [-1/4, 1/4] */
    const long double q = nearbyintl(r * 2);
    const long double t = r - q * 0.5L;   /* exact */
    const long double st = sinl(PI * t), ct = cosl(PI * t);
    long double sv, cv;
    switch ((int)q & 3) {
    case 0: sv = st; cv = ct; break;
    case 1: sv = ct; cv = -st; break;
    case 2: sv = -st; cv = -ct; break;
    default: sv = -ct; cv = st; break;
    }
    if (signbit(x)) sv = -sv;
    if (sv == 0) sv = signbit(x) ? -0.0L : 0.0L;   /* sinpi(n): zero with the sign of x */
    if (cv == 0) cv = 0.0L;                   /* cospi(n + 1/2): +0 */
    *s = sv;
    *c = cv;
}
/* the double operation op(a, b) run in rounding direction mode (every
   libm function and the x87 unit see the mode: fma's software fallback) */
template <class Op>
inline double in_mode_fenv(int mode, double a, double b, double c, Op op) {
    volatile double va = a, vb = b, vc = c;
    const int old = fegetround();
    fesetround(mode);
    volatile double r = op(va, vb, vc);
    fesetround(old);
    return r;
}
/* the same for an operation of SSE instructions only (+, -, *, /, sqrt): on
   x86-64 only MXCSR's rounding control (bits 13-14, glibc's FE_* values
   shifted by 3) changes, and back, leaving the exception flags the operation
   raised as fesetround() does; fesetround() sets the x87 control word too,
   and dominated the run time of programs built on these (interval) */
template <class Op>
inline double in_mode(int mode, double a, double b, double c, Op op) {
#if defined(__x86_64__) && defined(__SSE2_MATH__)
    static_assert(FE_TONEAREST == 0 && FE_DOWNWARD == 0x400 && FE_UPWARD == 0x800 && FE_TOWARDZERO == 0xc00,
                  "the x87 encoding of the rounding directions");
    volatile double va = a, vb = b, vc = c;
    unsigned csr, now;
    __asm__ volatile("stmxcsr %0" : "=m"(csr) : : "memory");
    const unsigned set = (csr & ~0x6000u) | (((unsigned)mode << 3) & 0x6000u);
    __asm__ volatile("ldmxcsr %0" : : "m"(set) : "memory");
    volatile double r = op(va, vb, vc);
    __asm__ volatile("stmxcsr %0" : "=m"(now) : : "memory");
    now = (now & ~0x6000u) | (csr & 0x6000u);
    __asm__ volatile("ldmxcsr %0" : : "m"(now) : "memory");
    return r;
#else
    return in_mode_fenv(mode, a, b, c, op);
#endif
}
} /* namespace dm */
} /* namespace cuemu */

namespace cuemu {
namespace dm {
template <class T> inline long double norm_n(int dim, const T *p, bool recip) {
    long double m = 0, sum = 0;
    for (int i = 0; i < dim; i++) if (isinf(p[i])) return recip ? 0.0L : HUGE_VALL;
    for (int i = 0; i < dim; i++) {
        if (p[i] != p[i]) return NAN;
        if (fabsl(p[i]) > m) m = fabsl(p[i]);
    }
    if (m == 0) return recip ? HUGE_VALL : 0.0L;
    for (int i = 0; i < dim; i++) { const long double q = p[i] / m; sum += q * q; }
    const long double r = m * sqrtl(sum);
    return recip ? 1.0L / r : r;
}
} /* namespace dm */
} /* namespace cuemu */

/* >>accuracy: device math within NVIDIA's documented error, not the host's
   libm bit for bit.

   The CUDA C++ Programming Guide, appendix "Mathematical Functions",
   section "Standard Functions" (Tables 17 and 18 in CUDA 13), states each
   function's maximum error as the absolute difference in ulps between the
   CUDA result and the correctly rounded (to nearest even) one; section
   "Intrinsic Functions" (Table 21) gives the fast intrinsics' bounds in
   ulps, as an absolute error, or as a relative error. A GPU's results are
   therefore neither glibc's nor correctly rounded, and a program or a test
   tolerance that depends on either breaks there. So each device math
   function with a non-zero bound starts from an accurate value (the double
   evaluation for float functions, long double for double ones), rounds it
   to nearest and moves it by k ulps, |k| <= the bound:
   - CUEMU_MATH unset or "default": k from a hash of the function and its
     arguments: deterministic, not glibc's, within the bound;
   - CUEMU_MATH=perturb: k drawn afresh for every call (seeded by
     CUEMU_SEED), anywhere within the bound;
   - CUEMU_MATH=exact: k = 0, the correctly rounded value (for debugging).
   Special values stay exact, as on a GPU: NaN, infinities, zeros and every
   result that is exactly representable (expf(0) = 1, logf(1) = 0,
   powf(2, 3) = 8); a result never changes sign or overflows by the move,
   and stays inside the function's range (|tanhf(x)| <= 1, coshf(x) >= 1). */
namespace cuemu {
namespace dm {
enum MathMode { MATH_DEFAULT = 0, MATH_EXACT = 1, MATH_PERTURB = 2 };
inline int math_mode() {
    static const int mode = [] {
        const char *s = getenv("CUEMU_MATH");
        if (!s || !*s || !strcmp(s, "default")) return (int)MATH_DEFAULT;
        if (!strcmp(s, "exact")) return (int)MATH_EXACT;
        if (!strcmp(s, "perturb")) return (int)MATH_PERTURB;
        fprintf(stderr, "cuemu: CUEMU_MATH=%s is not default, exact or perturb; using default\n", s);
        return (int)MATH_DEFAULT;
    }();
    return mode;
}
inline uint64_t math_seed() {
    static const uint64_t seed = [] {
        const char *s = getenv("CUEMU_SEED");
        return s && *s ? (uint64_t)strtoull(s, nullptr, 0) : (uint64_t)0x243f6a8885a308d3ull;
    }();
    return seed;
}
inline uint64_t mix(uint64_t z) {   /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
constexpr uint64_t fn_id(const char *s, uint64_t h = 1469598103934665603ull) {   /* FNV-1a of the name */
    return *s ? fn_id(s + 1, (h ^ (uint8_t)*s) * 1099511628211ull) : h;
}
/* The hash of one call: the function and its arguments' bits; under
   perturb also the seed and a per-thread count of calls. */
inline uint64_t draw(uint64_t fn, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
    uint64_t h = mix(fn ^ mix(a + 0x632be59bd9b4e019ull) ^ mix(b ^ 0x8cb92ba72f3d8dd7ull) ^ mix(c + 0x9e3779b97f4a7c15ull));
    if (math_mode() == MATH_PERTURB) {
        static thread_local uint64_t calls;
        h = mix(h ^ mix(math_seed() + ++calls * 0x9e3779b97f4a7c15ull));
    }
    return h;
}
inline int64_t pick(uint64_t h, int64_t bound) { return (int64_t)(h % (uint64_t)(2 * bound + 1)) - bound; }   /* [-bound, bound] */
inline uint64_t dbits(double x) { return d2u(x); }
inline uint64_t dbits(float x) { return f2u(x); }

/* v moved by k ulps (k > 0: up), or v itself where that would cross zero or
   reach an infinity. */
inline float step_f(float v, int64_t k) {
    const uint32_t b = f2u(v);
    const int64_t mag = b & 0x7fffffffu, o = (b >> 31) ? -mag : mag, n = o + k;
    if ((o > 0 && n <= 0) || (o < 0 && n >= 0) || n >= 0x7f800000 || n <= -0x7f800000) return v;
    return n < 0 ? u2f(0x80000000u | (uint32_t)(-n)) : u2f((uint32_t)n);
}
inline double step_d(double v, int64_t k) {
    const uint64_t b = d2u(v);
    const int64_t INF = 0x7ff0000000000000ll;
    const int64_t mag = (int64_t)(b & 0x7fffffffffffffffull), o = (b >> 63) ? -mag : mag;
    if ((k > 0 && o > INT64_MAX - k) || (k < 0 && o < -INT64_MAX - k)) return v;
    const int64_t n = o + k;
    if ((o > 0 && n <= 0) || (o < 0 && n >= 0) || n >= INF || n <= -INF) return v;
    return n < 0 ? u2d(0x8000000000000000ull | (uint64_t)(-n)) : u2d((uint64_t)n);
}
/* r: the function's value, accurate to far below a float ulp; bound:
   NVIDIA's maximum error in ulps of the correctly rounded result; [lo, hi]:
   the function's range. */
inline float near_f(double r, int64_t bound, uint64_t h, float lo = -HUGE_VALF, float hi = HUGE_VALF) {
    const float rf = (float)r;
    if (bound <= 0 || math_mode() == MATH_EXACT || rf == 0 || !isfinite(rf) || (double)rf == r) return rf;
    /* r a hair from a midpoint between two floats: its own error may have
       rounded it the wrong way, so one ulp of the bound goes to that */
    const double gap = fabs((double)step_f(rf, r > (double)rf ? 1 : -1) - (double)rf);
    if (fabs(r - (double)rf) > gap * (0.5 - 0x1p-20)) bound--;
    float v = step_f(rf, pick(h, bound));
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return v;
}
/* the same for double functions, from a long double value (glibc's long
   double functions err by a few of their ulps, 2^-11 of a double's) */
inline double near_d(long double r, int64_t bound, uint64_t h, double lo = -HUGE_VAL, double hi = HUGE_VAL) {
    const double rd = (double)r;
    if (bound <= 0 || math_mode() == MATH_EXACT || rd == 0 || !isfinite(rd) || (long double)rd == r) return rd;
    const long double gap = fabsl((long double)step_d(rd, r > (long double)rd ? 1 : -1) - (long double)rd);
    if (fabsl(r - (long double)rd) > gap * (0.5L - 0x1p-8L)) bound--;
    double v = step_d(rd, pick(h, bound));
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return v;
}
/* A float within err of r (the intrinsics' absolute and relative bounds). */
inline float near_abs_f(double r, double err, uint64_t h) {
    const float rf = (float)r;
    if (math_mode() == MATH_EXACT || !isfinite(rf) || (double)rf == r || !(err > 0)) return rf;
    const double frac = (double)(h >> 11) * 0x1p-52 - 1.0;   /* [-1, 1) */
    const float v = (float)(r + frac * err * (1 - 0x1p-10));
    return isfinite(v) && fabs((double)v - r) <= err * (1 - 0x1p-12) ? v : rf;
}

/* >>accuracy: the functions. Single precision (Table 17): the bound in
   ulps and the range; the value from the host's double function. */
#define CUEMU_DM_ACC_F1(name, ref, bound, lo, hi) \
    inline float name##_acc(float x) { \
        return near_f(ref((double)x), bound, draw(fn_id(#name), f2u(x)), lo, hi); }
#define CUEMU_DM_ACC_D1(name, ref, bound, lo, hi) \
    inline double name##_acc(double x) { \
        return near_d(ref((long double)x), bound, draw(fn_id(#name), d2u(x)), lo, hi); }
const float PI_F = 3.14159274f, HALF_PI_F = 1.57079637f;   /* pi, pi/2 rounded to nearest (above) */
const double PI_D = 3.141592653589793116, HALF_PI_D = 1.570796326794896558;     /* (below) */
inline double lgamma_ref(double x) { int s; return lgamma_r(x, &s); }
inline long double lgamma_refl(long double x) { int s; return lgammal_r(x, &s); }
CUEMU_DM_ACC_F1(expf, exp, 2, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(exp2f, exp2, 2, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(exp10f, exp10, 2, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(expm1f, expm1, 1, -1.0f, HUGE_VALF)
CUEMU_DM_ACC_F1(logf, log, 1, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(log2f, log2, 1, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(log10f, log10, 2, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(log1pf, log1p, 1, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(sinf, sin, 2, -1.0f, 1.0f)
CUEMU_DM_ACC_F1(cosf, cos, 2, -1.0f, 1.0f)
CUEMU_DM_ACC_F1(tanf, tan, 4, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(asinf, asin, 2, -HALF_PI_F, HALF_PI_F)
CUEMU_DM_ACC_F1(acosf, acos, 2, 0.0f, PI_F)
CUEMU_DM_ACC_F1(atanf, atan, 2, -HALF_PI_F, HALF_PI_F)
CUEMU_DM_ACC_F1(sinhf, sinh, 3, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(coshf, cosh, 2, 1.0f, HUGE_VALF)
CUEMU_DM_ACC_F1(tanhf, tanh, 2, -1.0f, 1.0f)
CUEMU_DM_ACC_F1(asinhf, asinh, 3, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(acoshf, acosh, 4, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(atanhf, atanh, 3, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(erff, erf, 2, -1.0f, 1.0f)
CUEMU_DM_ACC_F1(erfcf, erfc, 4, 0.0f, 2.0f)
CUEMU_DM_ACC_F1(tgammaf, tgamma, 5, -HUGE_VALF, HUGE_VALF)
/* 6 outside -10.001 ... -2.264 and "larger inside": 6 there too */
CUEMU_DM_ACC_F1(lgammaf, lgamma_ref, 6, -HUGE_VALF, HUGE_VALF)
CUEMU_DM_ACC_F1(cbrtf, cbrt, 1, -HUGE_VALF, HUGE_VALF)
inline float atan2f_acc(float y, float x) {
    return near_f(atan2((double)y, (double)x), 3, draw(fn_id("atan2f"), f2u(y), f2u(x)), -PI_F, PI_F);
}
inline float powf_acc(float x, float y) { return near_f(pow((double)x, (double)y), 4, draw(fn_id("powf"), f2u(x), f2u(y))); }
inline float hypotf_acc(float x, float y) { return near_f(hypot((double)x, (double)y), 3, draw(fn_id("hypotf"), f2u(x), f2u(y))); }
/* Double precision (Table 18), from the host's long double functions. */
CUEMU_DM_ACC_D1(exp, expl, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(exp2, exp2l, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(exp10, exp10l, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(expm1, expm1l, 1, -1.0, HUGE_VAL)
CUEMU_DM_ACC_D1(log, logl, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(log2, log2l, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(log10, log10l, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(log1p, log1pl, 1, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(sin, sinl, 2, -1.0, 1.0)
CUEMU_DM_ACC_D1(cos, cosl, 2, -1.0, 1.0)
CUEMU_DM_ACC_D1(tan, tanl, 2, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(asin, asinl, 2, -HALF_PI_D, HALF_PI_D)
CUEMU_DM_ACC_D1(acos, acosl, 2, 0.0, PI_D)
CUEMU_DM_ACC_D1(atan, atanl, 2, -HALF_PI_D, HALF_PI_D)
CUEMU_DM_ACC_D1(sinh, sinhl, 2, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(cosh, coshl, 1, 1.0, HUGE_VAL)
CUEMU_DM_ACC_D1(tanh, tanhl, 1, -1.0, 1.0)
CUEMU_DM_ACC_D1(asinh, asinhl, 3, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(acosh, acoshl, 3, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(atanh, atanhl, 2, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(erf, erfl, 2, -1.0, 1.0)
CUEMU_DM_ACC_D1(erfc, erfcl, 5, 0.0, 2.0)
CUEMU_DM_ACC_D1(tgamma, tgammal, 10, -HUGE_VAL, HUGE_VAL)
/* 4 outside -23.0001 ... -2.2637 and "larger inside": 4 there too */
CUEMU_DM_ACC_D1(lgamma, lgamma_refl, 4, -HUGE_VAL, HUGE_VAL)
CUEMU_DM_ACC_D1(cbrt, cbrtl, 1, -HUGE_VAL, HUGE_VAL)
inline double atan2_acc(double y, double x) {
    return near_d(atan2l(y, x), 2, draw(fn_id("atan2"), d2u(y), d2u(x)), -PI_D, PI_D);
}
inline double pow_acc(double x, double y) { return near_d(powl(x, y), 2, draw(fn_id("pow"), d2u(x), d2u(y))); }
inline double hypot_acc(double x, double y) { return near_d(hypotl(x, y), 2, draw(fn_id("hypot"), d2u(x), d2u(y))); }
#undef CUEMU_DM_ACC_F1
#undef CUEMU_DM_ACC_D1
} /* namespace dm */
} /* namespace cuemu */

/* >>fast-math intrinsics, within the bounds of the Programming Guide's
   "Intrinsic Functions" (Table 21), with the documented quirks. */
namespace cuemu {
namespace dm {
/* the absolute error of __logf, __log2f, __log10f for x in [0.5, 2]; ulps elsewhere */
inline float fast_log(double r, float x, double abs_err, int64_t ulps, uint64_t fn) {
    if (x >= 0.5f && x <= 2.0f) return near_abs_f(r, abs_err, draw(fn, f2u(x)));
    return near_f(r, ulps, draw(fn, f2u(x)));
}
inline int64_t lin_bound(float x, double c) {   /* 2 + floor(abs(c * x)) ulps, capped where exp is 0 or Inf anyway */
    const double b = 2 + floor(fabs(c * (double)x));
    return b > 1e6 ? 1000000 : (int64_t)b;
}
} /* namespace dm */
} /* namespace cuemu */
inline float __saturatef(float x) {
    if (!(x > 0.0f)) return 0.0f;   /* also NaN and -0 */
    return x >= 1.0f ? 1.0f : x;
}
/* 2 ulps for |y| in [2^-126, 2^126]; 0 (Inf / y: NaN) for 2^126 < |y| < 2^128 */
inline float __fdividef(float x, float y) {
    const float ay = fabsf(y);
    if (ay > 8.50705917e+37f && ay < HUGE_VALF) {   /* 2^126 < |y| < 2^128 */
        if (isinf(x)) return NAN;
        return (signbit(x) != signbit(y)) ? -0.0f : 0.0f;
    }
    const double q = (double)x / (double)y;
    if (!(ay >= 1.17549435e-38f)) return (float)q;
    return cuemu::dm::near_f(q, 2, cuemu::dm::draw(cuemu::dm::fn_id("__fdividef"), cuemu::fp::f2u(x), cuemu::fp::f2u(y)));
}
inline float __expf(float x) noexcept {
    return cuemu::dm::near_f(exp((double)x), cuemu::dm::lin_bound(x, 1.173),
                             cuemu::dm::draw(cuemu::dm::fn_id("__expf"), cuemu::fp::f2u(x)));
}
inline float __exp10f(float x) noexcept {
    return cuemu::dm::near_f(exp10((double)x), cuemu::dm::lin_bound(x, 2.97),
                             cuemu::dm::draw(cuemu::dm::fn_id("__exp10f"), cuemu::fp::f2u(x)));
}
inline float __logf(float x) noexcept { return cuemu::dm::fast_log(log((double)x), x, 3.588787907149952e-07 /* 2^-21.41 */, 3, cuemu::dm::fn_id("__logf")); }
inline float __log2f(float x) noexcept { return cuemu::dm::fast_log(log2((double)x), x, 0x1p-22, 2, cuemu::dm::fn_id("__log2f")); }
inline float __log10f(float x) noexcept { return cuemu::dm::fast_log(log10((double)x), x, 0x1p-24, 3, cuemu::dm::fn_id("__log10f")); }
/* absolute error 2^-21.41 (sine), 2^-21.19 (cosine) in [-pi, pi], "larger
   otherwise" (the same here); denormal inputs and outputs flushed to zero */
inline float __sinf(float x) noexcept {
    x = cuemu::dm::ftz(x);
    return cuemu::dm::ftz(cuemu::dm::near_abs_f(sin((double)x), 3.588787907149952e-07 /* 2^-21.41 */, cuemu::dm::draw(cuemu::dm::fn_id("__sinf"), cuemu::fp::f2u(x))));
}
inline float __cosf(float x) noexcept {
    x = cuemu::dm::ftz(x);
    return cuemu::dm::ftz(cuemu::dm::near_abs_f(cos((double)x), 4.1799818101693836e-07 /* 2^-21.19 */, cuemu::dm::draw(cuemu::dm::fn_id("__cosf"), cuemu::fp::f2u(x))));
}
inline void __sincosf(float x, float *sptr, float *cptr) noexcept {
    *sptr = __sinf(x);
    *cptr = __cosf(x);
}
/* "derived from its implementation as __sinf(x) * (1/__cosf(x))" */
inline float __tanf(float x) noexcept { return cuemu::dm::ftz(__sinf(x) * (1.0f / __cosf(x))); }
/* relative error 2^-11; subnormal results not flushed even under -ftz=true */
inline float __tanhf(float x) noexcept {
    const double r = tanh((double)x);
    const float v = cuemu::dm::near_abs_f(r, fabs(r) * 0x1p-11, cuemu::dm::draw(cuemu::dm::fn_id("__tanhf"), cuemu::fp::f2u(x)));
    return v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
}
/* "derived from its implementation as exp2f(y * __log2f(x))": negative bases give NaN */
inline float __powf(float x, float y) noexcept { return cuemu::dm::exp2f_acc(y * __log2f(x)); }

/* >>float arithmetic in a rounding direction (exact; see fp_round.h) */
#define CUEMU_DM_MODES(M) M(rn, RN) M(rz, RZ) M(rd, RD) M(ru, RU)
#define CUEMU_DM_FOPS(sfx, m) \
    inline float __fadd_##sfx(float x, float y) { return cuemu::dm::add(x, y, cuemu::fp::m); } \
    inline float __fsub_##sfx(float x, float y) { return cuemu::dm::add(x, -y, cuemu::fp::m); } \
    inline float __fmul_##sfx(float x, float y) { return cuemu::dm::f(cuemu::fp::mul_odd(x, y), cuemu::fp::m); } \
    inline float __fdiv_##sfx(float x, float y) { return cuemu::dm::f(cuemu::fp::div_odd(x, y), cuemu::fp::m); } \
    inline float __fmaf_##sfx(float x, float y, float z) { return cuemu::dm::fma3(x, y, z, cuemu::fp::m); } \
    inline float __fmaf_ieee_##sfx(float x, float y, float z) { return cuemu::dm::fma3(x, y, z, cuemu::fp::m); } \
    inline float __frcp_##sfx(float x) { return cuemu::dm::f(cuemu::fp::div_odd(1.0, x), cuemu::fp::m); } \
    inline float __fsqrt_##sfx(float x) { return cuemu::dm::f(cuemu::fp::sqrt_odd(x), cuemu::fp::m); }
CUEMU_DM_MODES(CUEMU_DM_FOPS)
#undef CUEMU_DM_FOPS
inline float __frsqrt_rn(float x) { return cuemu::fp::u2f((uint32_t)cuemu::dm::rsqrt_rn<23, 8>(x)); }

/* >>double arithmetic in a rounding direction (the host's IEEE arithmetic) */
#define CUEMU_DM_DOPS(sfx, FE) \
    inline double __dadd_##sfx(double x, double y) { \
        return cuemu::dm::in_mode(FE, x, y, 0, [](double a, double b, double) { return a + b; }); } \
    inline double __dsub_##sfx(double x, double y) { \
        return cuemu::dm::in_mode(FE, x, y, 0, [](double a, double b, double) { return a - b; }); } \
    inline double __dmul_##sfx(double x, double y) { \
        return cuemu::dm::in_mode(FE, x, y, 0, [](double a, double b, double) { return a * b; }); } \
    inline double __ddiv_##sfx(double x, double y) { \
        return cuemu::dm::in_mode(FE, x, y, 0, [](double a, double b, double) { return a / b; }); } \
    inline double __drcp_##sfx(double x) { \
        return cuemu::dm::in_mode(FE, x, 0, 0, [](double a, double, double) { return 1.0 / a; }); } \
    inline double __dsqrt_##sfx(double x) { \
        return cuemu::dm::in_mode(FE, x, 0, 0, [](double a, double, double) { return sqrt(a); }); } \
    inline double __fma_##sfx(double x, double y, double z) { \
        return cuemu::dm::in_mode_fenv(FE, x, y, z, [](double a, double b, double c) { return fma(a, b, c); }); }
CUEMU_DM_DOPS(rn, FE_TONEAREST)
CUEMU_DM_DOPS(rz, FE_TOWARDZERO)
CUEMU_DM_DOPS(rd, FE_DOWNWARD)
CUEMU_DM_DOPS(ru, FE_UPWARD)
#undef CUEMU_DM_DOPS

/* >>conversions */
#define CUEMU_DM_F2I(sfx, m) \
    inline int __float2int_##sfx(float x) { \
        return (int)cuemu::fp::sat_range(cuemu::fp::round_integral(x, cuemu::fp::m), -2147483647LL - 1, 2147483647LL); } \
    inline unsigned int __float2uint_##sfx(float x) { \
        return (unsigned)cuemu::fp::sat_range(cuemu::fp::round_integral(x, cuemu::fp::m), 0, 4294967295LL); } \
    inline long long int __float2ll_##sfx(float x) { \
        return cuemu::fp::sat_ll(cuemu::fp::round_integral(x, cuemu::fp::m), (long long)0x8000000000000000ull); } \
    inline unsigned long long int __float2ull_##sfx(float x) { \
        return cuemu::fp::sat_ull(cuemu::fp::round_integral(x, cuemu::fp::m), 0x8000000000000000ull); } \
    inline int __double2int_##sfx(double x) { \
        return (int)cuemu::fp::sat_range(cuemu::fp::round_integral(x, cuemu::fp::m), -2147483647LL - 1, 2147483647LL); } \
    inline unsigned int __double2uint_##sfx(double x) { \
        return (unsigned)cuemu::fp::sat_range(cuemu::fp::round_integral(x, cuemu::fp::m), 0, 4294967295LL); } \
    inline long long int __double2ll_##sfx(double x) { \
        return cuemu::fp::sat_ll(cuemu::fp::round_integral(x, cuemu::fp::m), (long long)0x8000000000000000ull); } \
    inline unsigned long long int __double2ull_##sfx(double x) { \
        return cuemu::fp::sat_ull(cuemu::fp::round_integral(x, cuemu::fp::m), 0x8000000000000000ull); } \
    inline float __int2float_##sfx(int x) { return cuemu::fp::u2f((uint32_t)cuemu::fp::from_i64<23, 8>(x, cuemu::fp::m)); } \
    inline float __uint2float_##sfx(unsigned int x) { return cuemu::fp::u2f((uint32_t)cuemu::fp::from_u64<23, 8>(x, false, cuemu::fp::m)); } \
    inline float __ll2float_##sfx(long long int x) { return cuemu::fp::u2f((uint32_t)cuemu::fp::from_i64<23, 8>(x, cuemu::fp::m)); } \
    inline float __ull2float_##sfx(unsigned long long int x) { return cuemu::fp::u2f((uint32_t)cuemu::fp::from_u64<23, 8>(x, false, cuemu::fp::m)); } \
    inline double __ll2double_##sfx(long long int x) { return cuemu::fp::u2d(cuemu::fp::from_i64<52, 11>(x, cuemu::fp::m)); } \
    inline double __ull2double_##sfx(unsigned long long int x) { return cuemu::fp::u2d(cuemu::fp::from_u64<52, 11>(x, false, cuemu::fp::m)); } \
    inline float __double2float_##sfx(double x) { return cuemu::fp::d2f(x, cuemu::fp::m); }
CUEMU_DM_MODES(CUEMU_DM_F2I)
#undef CUEMU_DM_F2I
#undef CUEMU_DM_MODES
inline double __int2double_rn(int x) { return (double)x; }
inline double __uint2double_rn(unsigned int x) { return (double)x; }

/* >>math functions glibc lacks: evaluated in long double, then within
   their bound in Tables 17 and 18 (normf/rnormf/norm/rnorm have none: "a
   fast algorithm is used with accuracy loss due to round-off"; accurate here). */
namespace cuemu {
namespace dm {
inline float nf(long double v, int64_t bound, uint64_t fn, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                float lo = -HUGE_VALF, float hi = HUGE_VALF) {
    return near_f((double)v, bound, draw(fn, a, b, c), lo, hi);
}
inline double nd(long double v, int64_t bound, uint64_t fn, uint64_t a, uint64_t b = 0, uint64_t c = 0,
                 double lo = -HUGE_VAL, double hi = HUGE_VAL) {
    return near_d(v, bound, draw(fn, a, b, c), lo, hi);
}
} /* namespace dm */
} /* namespace cuemu */
#define CUEMU_DM_ID(name) cuemu::dm::fn_id(name)
#define CUEMU_DM_FB(x) cuemu::fp::f2u(x)
#define CUEMU_DM_DB(x) cuemu::fp::d2u(x)
inline float rsqrtf(float x) { return cuemu::dm::nf(1.0L / sqrtl(x), 2, CUEMU_DM_ID("rsqrtf"), CUEMU_DM_FB(x)); }
inline double rsqrt(double x) {
    if (x == 0) return signbit(x) ? -HUGE_VAL : HUGE_VAL;
    return cuemu::dm::nd(1.0L / sqrtl((long double)x), 1, CUEMU_DM_ID("rsqrt"), CUEMU_DM_DB(x));
}
inline float rcbrtf(float x) { return cuemu::dm::nf(1.0L / cbrtl(x), 1, CUEMU_DM_ID("rcbrtf"), CUEMU_DM_FB(x)); }
inline double rcbrt(double x) { return cuemu::dm::nd(1.0L / cbrtl((long double)x), 1, CUEMU_DM_ID("rcbrt"), CUEMU_DM_DB(x)); }
#if !(defined(__GLIBC__) && defined(__GLIBC_PREREQ) && __GLIBC_PREREQ(2, 41))
inline float sinpif(float x) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    return cuemu::dm::nf(s, 1, CUEMU_DM_ID("sinpif"), CUEMU_DM_FB(x), 0, 0, -1.0f, 1.0f);
}
inline float cospif(float x) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    return cuemu::dm::nf(c, 1, CUEMU_DM_ID("cospif"), CUEMU_DM_FB(x), 0, 0, -1.0f, 1.0f);
}
inline double sinpi(double x) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    return cuemu::dm::nd(s, 2, CUEMU_DM_ID("sinpi"), CUEMU_DM_DB(x), 0, 0, -1.0, 1.0);
}
inline double cospi(double x) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    return cuemu::dm::nd(c, 2, CUEMU_DM_ID("cospi"), CUEMU_DM_DB(x), 0, 0, -1.0, 1.0);
}
#endif
inline void sincospif(float x, float *sptr, float *cptr) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    *sptr = cuemu::dm::nf(s, 1, CUEMU_DM_ID("sinpif"), CUEMU_DM_FB(x), 0, 0, -1.0f, 1.0f);
    *cptr = cuemu::dm::nf(c, 1, CUEMU_DM_ID("cospif"), CUEMU_DM_FB(x), 0, 0, -1.0f, 1.0f);
}
inline void sincospi(double x, double *sptr, double *cptr) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    *sptr = cuemu::dm::nd(s, 2, CUEMU_DM_ID("sinpi"), CUEMU_DM_DB(x), 0, 0, -1.0, 1.0);
    *cptr = cuemu::dm::nd(c, 2, CUEMU_DM_ID("cospi"), CUEMU_DM_DB(x), 0, 0, -1.0, 1.0);
}
inline float erfinvf(float x) { return cuemu::dm::nf(cuemu::dm::erfinv_l(x), 2, CUEMU_DM_ID("erfinvf"), CUEMU_DM_FB(x)); }
inline double erfinv(double x) { return cuemu::dm::nd(cuemu::dm::erfinv_l(x), 5, CUEMU_DM_ID("erfinv"), CUEMU_DM_DB(x)); }
inline float erfcinvf(float x) { return cuemu::dm::nf(cuemu::dm::erfcinv_l(x), 4, CUEMU_DM_ID("erfcinvf"), CUEMU_DM_FB(x)); }
inline double erfcinv(double x) { return cuemu::dm::nd(cuemu::dm::erfcinv_l(x), 6, CUEMU_DM_ID("erfcinv"), CUEMU_DM_DB(x)); }
/* Phi(x) = erfc(-x / sqrt 2) / 2 */
inline float normcdff(float x) {
    return cuemu::dm::nf(0.5L * erfcl(-(long double)x * 0.707106781186547524400844362104849L), 5, CUEMU_DM_ID("normcdff"),
                         CUEMU_DM_FB(x), 0, 0, 0.0f, 1.0f);
}
inline double normcdf(double x) {
    return cuemu::dm::nd(0.5L * erfcl(-(long double)x * 0.707106781186547524400844362104849L), 5, CUEMU_DM_ID("normcdf"),
                         CUEMU_DM_DB(x), 0, 0, 0.0, 1.0);
}
/* Phi^-1(p) = -sqrt 2 erfcinv(2 p) */
inline float normcdfinvf(float x) {
    return cuemu::dm::nf(-1.41421356237309504880168872420969808L * cuemu::dm::erfcinv_l(2.0L * x), 5, CUEMU_DM_ID("normcdfinvf"),
                         CUEMU_DM_FB(x));
}
inline double normcdfinv(double x) {
    return cuemu::dm::nd(-1.41421356237309504880168872420969808L * cuemu::dm::erfcinv_l(2.0L * x), 8, CUEMU_DM_ID("normcdfinv"),
                         CUEMU_DM_DB(x));
}
/* erfcx(x) = exp(x^2) erfc(x); for large x the asymptotic form avoids 0 * Inf */
inline long double cuemu_erfcx_l(long double x) {
    if (x != x) return x;
    if (x < 26) return expl(x * x) * erfcl(x);
    if (isinf(x)) return 0;
    /* erfcx(x) ~ 1/(x sqrt(pi)) * (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8)) */
    const long double t = 1 / (2 * x * x);
    const long double s = 1 - t * (1 - 3 * t * (1 - 5 * t * (1 - 7 * t * (1 - 9 * t))));
    return s / (x * 1.772453850905516027298167483341145183L);
}
inline float erfcxf(float x) { return cuemu::dm::nf(cuemu_erfcx_l(x), 4, CUEMU_DM_ID("erfcxf"), CUEMU_DM_FB(x)); }
inline double erfcx(double x) { return cuemu::dm::nd(cuemu_erfcx_l(x), 4, CUEMU_DM_ID("erfcx"), CUEMU_DM_DB(x)); }
inline float rhypotf(float x, float y) noexcept {
    const double v[2] = {x, y};
    return cuemu::dm::nf(cuemu::dm::norm_n(2, v, true), 2, CUEMU_DM_ID("rhypotf"), CUEMU_DM_FB(x), CUEMU_DM_FB(y));
}
inline double rhypot(double x, double y) noexcept {
    const double v[2] = {x, y};
    return cuemu::dm::nd(cuemu::dm::norm_n(2, v, true), 1, CUEMU_DM_ID("rhypot"), CUEMU_DM_DB(x), CUEMU_DM_DB(y));
}
inline float norm3df(float a, float b, float c) noexcept {
    const double v[3] = {a, b, c};
    return cuemu::dm::nf(cuemu::dm::norm_n(3, v, false), 3, CUEMU_DM_ID("norm3df"), CUEMU_DM_FB(a), CUEMU_DM_FB(b), CUEMU_DM_FB(c));
}
inline double norm3d(double a, double b, double c) noexcept {
    const double v[3] = {a, b, c};
    return cuemu::dm::nd(cuemu::dm::norm_n(3, v, false), 2, CUEMU_DM_ID("norm3d"), CUEMU_DM_DB(a), CUEMU_DM_DB(b), CUEMU_DM_DB(c));
}
inline float rnorm3df(float a, float b, float c) noexcept {
    const double v[3] = {a, b, c};
    return cuemu::dm::nf(cuemu::dm::norm_n(3, v, true), 2, CUEMU_DM_ID("rnorm3df"), CUEMU_DM_FB(a), CUEMU_DM_FB(b), CUEMU_DM_FB(c));
}
inline double rnorm3d(double a, double b, double c) noexcept {
    const double v[3] = {a, b, c};
    return cuemu::dm::nd(cuemu::dm::norm_n(3, v, true), 1, CUEMU_DM_ID("rnorm3d"), CUEMU_DM_DB(a), CUEMU_DM_DB(b), CUEMU_DM_DB(c));
}
inline float norm4df(float a, float b, float c, float d) noexcept {
    const double v[4] = {a, b, c, d};
    return cuemu::dm::nf(cuemu::dm::norm_n(4, v, false), 3, CUEMU_DM_ID("norm4df"), CUEMU_DM_FB(a), CUEMU_DM_FB(b),
                         cuemu::dm::mix(CUEMU_DM_FB(c)) ^ CUEMU_DM_FB(d));
}
inline double norm4d(double a, double b, double c, double d) noexcept {
    const double v[4] = {a, b, c, d};
    return cuemu::dm::nd(cuemu::dm::norm_n(4, v, false), 2, CUEMU_DM_ID("norm4d"), CUEMU_DM_DB(a), CUEMU_DM_DB(b),
                         cuemu::dm::mix(CUEMU_DM_DB(c)) ^ CUEMU_DM_DB(d));
}
inline float rnorm4df(float a, float b, float c, float d) noexcept {
    const double v[4] = {a, b, c, d};
    return cuemu::dm::nf(cuemu::dm::norm_n(4, v, true), 2, CUEMU_DM_ID("rnorm4df"), CUEMU_DM_FB(a), CUEMU_DM_FB(b),
                         cuemu::dm::mix(CUEMU_DM_FB(c)) ^ CUEMU_DM_FB(d));
}
inline double rnorm4d(double a, double b, double c, double d) noexcept {
    const double v[4] = {a, b, c, d};
    return cuemu::dm::nd(cuemu::dm::norm_n(4, v, true), 1, CUEMU_DM_ID("rnorm4d"), CUEMU_DM_DB(a), CUEMU_DM_DB(b),
                         cuemu::dm::mix(CUEMU_DM_DB(c)) ^ CUEMU_DM_DB(d));
}
#undef CUEMU_DM_ID
#undef CUEMU_DM_FB
#undef CUEMU_DM_DB
inline float normf(int dim, const float *p) noexcept { return cuemu::dm::lf(cuemu::dm::norm_n(dim, p, false)); }
inline float rnormf(int dim, const float *p) noexcept { return cuemu::dm::lf(cuemu::dm::norm_n(dim, p, true)); }
inline double norm(int dim, const double *p) noexcept { return (double)cuemu::dm::norm_n(dim, p, false); }
inline double rnorm(int dim, const double *p) noexcept { return (double)cuemu::dm::norm_n(dim, p, true); }

/* >>redirect: the standard names in device code call the device versions.
   CUDA's math library replaces the host's in device code; here kernels are
   host code, so expf(x), exp(x), std::exp(x), ... in a __device__ or
   __global__ function call cuemu_expf(x), cuemu_exp(x), ... (defined once
   per translation unit, static: nvcc's --use_fast_math and --ftz are per
   translation unit) through the using-declarations nvcc-emu puts in the
   function's body (cuemu::redirect, at the end of this file).
   Host code of a .cu file keeps the host's libm, as nvcc's host compiler
   gives it, when the runtime says the caller is no kernel; an emulator
   library without that answer counts every caller as device code.
   Define CUEMU_HOST_MATH to keep the host's functions everywhere.
   CUDA C++ Programming Guide, "Intrinsic Functions", Table 20: with
   -use_fast_math (__USE_FAST_MATH__) sinf, cosf, tanf, sincosf, logf, log2f,
   log10f, expf, exp10f, powf and tanhf compile to their intrinsics;
   -use_fast_math implies -ftz=true, which flushes denormal inputs and
   results of single-precision functions to zero (nvcc manual, --ftz). */
extern "C" int cuemu_in_device_code(void) __attribute__((weak));
namespace cuemu {
namespace dm {
inline bool on_device() { return !cuemu_in_device_code || cuemu_in_device_code() != 0; }
} /* namespace dm */
} /* namespace cuemu */
/* nvcc-emu defines __CUDA_FTZ for --ftz=true (also implied by --use_fast_math) */
#if defined(__CUDA_FTZ) && (__CUDA_FTZ + 0)
#  define CUEMU_DM_FTZ_ON 1
#else
#  define CUEMU_DM_FTZ_ON 0
#endif
#if defined(__USE_FAST_MATH__)
#  define CUEMU_DM_FAST 1
#else
#  define CUEMU_DM_FAST 0
#endif
#define CUEMU_DM_Z(x) (CUEMU_DM_FTZ_ON ? cuemu::dm::ftz(x) : (x))
/* one-argument functions: float name F (its fast intrinsic FAST), double
   name D; D also takes float (as F), long double (the host's) and integers */
#define CUEMU_DM_WRAP(F, D, FAST) \
    static inline float cuemu_##F(float x) noexcept { \
        if (!cuemu::dm::on_device()) return (F)(x); \
        x = CUEMU_DM_Z(x); \
        return CUEMU_DM_Z(CUEMU_DM_FAST ? FAST(x) : cuemu::dm::F##_acc(x)); \
    } \
    static inline double cuemu_##D(double x) noexcept { return cuemu::dm::on_device() ? cuemu::dm::D##_acc(x) : (D)(x); } \
    static inline float cuemu_##D(float x) noexcept { return cuemu_##F(x); } \
    static inline long double cuemu_##D(long double x) noexcept { return (D##l)(x); } \
    template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> \
    static inline double cuemu_##D(T x) noexcept { return cuemu_##D((double)x); } \
    namespace std { using ::cuemu_##F; using ::cuemu_##D; }
CUEMU_DM_WRAP(expf, exp, __expf)
CUEMU_DM_WRAP(exp2f, exp2, cuemu::dm::exp2f_acc)
CUEMU_DM_WRAP(exp10f, exp10, __exp10f)
CUEMU_DM_WRAP(expm1f, expm1, cuemu::dm::expm1f_acc)
CUEMU_DM_WRAP(logf, log, __logf)
CUEMU_DM_WRAP(log2f, log2, __log2f)
CUEMU_DM_WRAP(log10f, log10, __log10f)
CUEMU_DM_WRAP(log1pf, log1p, cuemu::dm::log1pf_acc)
CUEMU_DM_WRAP(sinf, sin, __sinf)
CUEMU_DM_WRAP(cosf, cos, __cosf)
CUEMU_DM_WRAP(tanf, tan, __tanf)
CUEMU_DM_WRAP(asinf, asin, cuemu::dm::asinf_acc)
CUEMU_DM_WRAP(acosf, acos, cuemu::dm::acosf_acc)
CUEMU_DM_WRAP(atanf, atan, cuemu::dm::atanf_acc)
CUEMU_DM_WRAP(sinhf, sinh, cuemu::dm::sinhf_acc)
CUEMU_DM_WRAP(coshf, cosh, cuemu::dm::coshf_acc)
CUEMU_DM_WRAP(tanhf, tanh, __tanhf)
CUEMU_DM_WRAP(asinhf, asinh, cuemu::dm::asinhf_acc)
CUEMU_DM_WRAP(acoshf, acosh, cuemu::dm::acoshf_acc)
CUEMU_DM_WRAP(atanhf, atanh, cuemu::dm::atanhf_acc)
CUEMU_DM_WRAP(erff, erf, cuemu::dm::erff_acc)
CUEMU_DM_WRAP(erfcf, erfc, cuemu::dm::erfcf_acc)
CUEMU_DM_WRAP(tgammaf, tgamma, cuemu::dm::tgammaf_acc)
CUEMU_DM_WRAP(lgammaf, lgamma, cuemu::dm::lgammaf_acc)
CUEMU_DM_WRAP(cbrtf, cbrt, cuemu::dm::cbrtf_acc)
#undef CUEMU_DM_WRAP
/* two-argument functions; mixed arithmetic arguments promote as in <cmath> */
#define CUEMU_DM_WRAP2(F, D, FAST) \
    static inline float cuemu_##F(float x, float y) noexcept { \
        if (!cuemu::dm::on_device()) return (F)(x, y); \
        x = CUEMU_DM_Z(x); \
        y = CUEMU_DM_Z(y); \
        return CUEMU_DM_Z(CUEMU_DM_FAST ? FAST(x, y) : cuemu::dm::F##_acc(x, y)); \
    } \
    static inline double cuemu_##D(double x, double y) noexcept { \
        return cuemu::dm::on_device() ? cuemu::dm::D##_acc(x, y) : (D)(x, y); } \
    static inline float cuemu_##D(float x, float y) noexcept { return cuemu_##F(x, y); } \
    static inline long double cuemu_##D(long double x, long double y) noexcept { return (D##l)(x, y); } \
    template <class A, class B, \
              std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value, int> = 0> \
    static inline auto cuemu_##D(A x, B y) noexcept { \
        using R = std::conditional_t<std::is_same<A, long double>::value || std::is_same<B, long double>::value, \
                                     long double, double>; \
        return cuemu_##D((R)x, (R)y); \
    } \
    namespace std { using ::cuemu_##F; using ::cuemu_##D; }
CUEMU_DM_WRAP2(powf, pow, __powf)
CUEMU_DM_WRAP2(atan2f, atan2, cuemu::dm::atan2f_acc)
CUEMU_DM_WRAP2(hypotf, hypot, cuemu::dm::hypotf_acc)
#undef CUEMU_DM_WRAP2
/* C++17's three-argument std::hypot: the host's (no CUDA bound for it) */
template <class A, class B, class C> static inline auto cuemu_hypot(A x, B y, C z) { return (std::hypot)(x, y, z); }
namespace std { using ::cuemu_hypot; }
static inline void cuemu_sincosf(float x, float *s, float *c) noexcept {
    if (!cuemu::dm::on_device()) return (sincosf)(x, s, c);
    if (CUEMU_DM_FAST) return __sincosf(CUEMU_DM_Z(x), s, c);
    *s = cuemu_sinf(x);
    *c = cuemu_cosf(x);
}
static inline void cuemu_sincos(double x, double *s, double *c) noexcept {
    if (!cuemu::dm::on_device()) return (sincos)(x, s, c);
    *s = cuemu::dm::sin_acc(x);
    *c = cuemu::dm::cos_acc(x);
}
static inline void cuemu_sincos(float x, float *s, float *c) noexcept { cuemu_sincosf(x, s, c); }
namespace std { using ::cuemu_sincosf; using ::cuemu_sincos; }
/* x / y, or __fdividef(x, y) under -use_fast_math (CUDA Math API, fdividef) */
static inline float fdividef(float x, float y) { return CUEMU_DM_FAST ? __fdividef(x, y) : x / y; }
/* sqrtf: 0 ulps with -prec-sqrt=true (the default), otherwise 1 (Table 17);
   -use_fast_math implies -prec-sqrt=false unless it is given as true */
static inline float cuemu_sqrtf(float x) noexcept {
    if (!cuemu::dm::on_device()) return (sqrtf)(x);
    x = CUEMU_DM_Z(x);
    return CUEMU_DM_Z(cuemu::dm::near_f(sqrt((double)x), 1, cuemu::dm::draw(cuemu::dm::fn_id("sqrtf"), cuemu::fp::f2u(x))));
}
#undef CUEMU_DM_Z

/* The names device code calls: tests/emu/nvcc-emu puts a using-declaration
   of each one a __device__ / __global__ function calls into a block around
   its body (a local, a parameter or a member of the same name is not
   touched: no macros). Each forwards to the device version (or, with
   CUEMU_HOST_MATH, to the host's). */
namespace cuemu {
namespace redirect {
#ifndef CUEMU_HOST_MATH
#  define CUEMU_DM_REDIRECT(name) \
    template <class... A> inline auto name(A... a) noexcept -> decltype(::cuemu_##name(a...)) { return ::cuemu_##name(a...); }
#else
#  define CUEMU_DM_REDIRECT(name) \
    template <class... A> inline auto name(A... a) noexcept -> decltype(::name(a...)) { return ::name(a...); }
#endif
CUEMU_DM_REDIRECT(expf) CUEMU_DM_REDIRECT(exp) CUEMU_DM_REDIRECT(exp2f) CUEMU_DM_REDIRECT(exp2)
CUEMU_DM_REDIRECT(exp10f) CUEMU_DM_REDIRECT(exp10) CUEMU_DM_REDIRECT(expm1f) CUEMU_DM_REDIRECT(expm1)
CUEMU_DM_REDIRECT(logf) CUEMU_DM_REDIRECT(log) CUEMU_DM_REDIRECT(log2f) CUEMU_DM_REDIRECT(log2)
CUEMU_DM_REDIRECT(log10f) CUEMU_DM_REDIRECT(log10) CUEMU_DM_REDIRECT(log1pf) CUEMU_DM_REDIRECT(log1p)
CUEMU_DM_REDIRECT(sinf) CUEMU_DM_REDIRECT(sin) CUEMU_DM_REDIRECT(cosf) CUEMU_DM_REDIRECT(cos)
CUEMU_DM_REDIRECT(tanf) CUEMU_DM_REDIRECT(tan) CUEMU_DM_REDIRECT(sincosf) CUEMU_DM_REDIRECT(sincos)
CUEMU_DM_REDIRECT(asinf) CUEMU_DM_REDIRECT(asin) CUEMU_DM_REDIRECT(acosf) CUEMU_DM_REDIRECT(acos)
CUEMU_DM_REDIRECT(atanf) CUEMU_DM_REDIRECT(atan) CUEMU_DM_REDIRECT(atan2f) CUEMU_DM_REDIRECT(atan2)
CUEMU_DM_REDIRECT(sinhf) CUEMU_DM_REDIRECT(sinh) CUEMU_DM_REDIRECT(coshf) CUEMU_DM_REDIRECT(cosh)
CUEMU_DM_REDIRECT(tanhf) CUEMU_DM_REDIRECT(tanh) CUEMU_DM_REDIRECT(asinhf) CUEMU_DM_REDIRECT(asinh)
CUEMU_DM_REDIRECT(acoshf) CUEMU_DM_REDIRECT(acosh) CUEMU_DM_REDIRECT(atanhf) CUEMU_DM_REDIRECT(atanh)
CUEMU_DM_REDIRECT(powf) CUEMU_DM_REDIRECT(pow) CUEMU_DM_REDIRECT(erff) CUEMU_DM_REDIRECT(erf)
CUEMU_DM_REDIRECT(erfcf) CUEMU_DM_REDIRECT(erfc) CUEMU_DM_REDIRECT(tgammaf) CUEMU_DM_REDIRECT(tgamma)
CUEMU_DM_REDIRECT(lgammaf) CUEMU_DM_REDIRECT(lgamma) CUEMU_DM_REDIRECT(cbrtf) CUEMU_DM_REDIRECT(cbrt)
CUEMU_DM_REDIRECT(hypotf) CUEMU_DM_REDIRECT(hypot)
#undef CUEMU_DM_REDIRECT
/* sqrtf: the device version only under --use_fast_math without --prec-sqrt=true (1 ulp) */
inline float sqrtf(float x) noexcept {
#if !defined(CUEMU_HOST_MATH) && defined(__USE_FAST_MATH__) && !defined(__CUDA_PREC_SQRT)
    return ::cuemu_sqrtf(x);
#else
    return ::sqrtf(x);
#endif
}
} /* namespace redirect */
} /* namespace cuemu */

#endif
