/* cuemu/device_math.h - the device functions of CUDA's math library that a
   host C/C++ library lacks (C++ only; cuda_runtime.h includes it).

   What the emulated device gives, per the CUDA Math API reference and the
   accuracy tables of the CUDA C++ Programming Guide:
   - fast-math intrinsics (__expf, __sinf, ...): the host function's value
     (well inside the documented error), with the documented quirks: denormal
     outputs of __sinf/__cosf/__tanf/__sincosf flushed to zero, __powf as
     exp2f(y * __log2f(x)) (so negative bases give NaN), __tanf as
     __fdividef(__sinf, __cosf), __fdividef returning 0 (Inf / y: NaN) for
     2^126 < |y| < 2^128.
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
     erfinvf, ...): evaluated in long double and rounded once, well within
     the documented ulp bounds. */
#ifndef CUEMU_DEVICE_MATH_H
#define CUEMU_DEVICE_MATH_H

#include <math.h>
#include <fenv.h>
#include <stdint.h>
#include <string.h>
#include "fp_round.h"

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
/* the double operation op(a, b) run in rounding direction mode */
template <class Op>
inline double in_mode(int mode, double a, double b, double c, Op op) {
    volatile double va = a, vb = b, vc = c;
    const int old = fegetround();
    fesetround(mode);
    volatile double r = op(va, vb, vc);
    fesetround(old);
    return r;
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

/* >>fast-math intrinsics */
inline float __saturatef(float x) {
    if (!(x > 0.0f)) return 0.0f;   /* also NaN and -0 */
    return x >= 1.0f ? 1.0f : x;
}
inline float __fdividef(float x, float y) {
    const float ay = fabsf(y);
    if (ay > 8.50705917e+37f && ay < HUGE_VALF) {   /* 2^126 < |y| < 2^128 */
        if (isinf(x)) return NAN;
        return (signbit(x) != signbit(y)) ? -0.0f : 0.0f;
    }
    return x / y;
}
inline float fdividef(float x, float y) { return x / y; }
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return exp10f(x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __sinf(float x) noexcept { return cuemu::dm::ftz(sinf(x)); }
inline float __cosf(float x) noexcept { return cuemu::dm::ftz(cosf(x)); }
inline void __sincosf(float x, float *sptr, float *cptr) noexcept {
    x = cuemu::dm::ftz(x);
    *sptr = cuemu::dm::ftz(sinf(x));
    *cptr = cuemu::dm::ftz(cosf(x));
}
inline float __tanf(float x) noexcept { return cuemu::dm::ftz(__fdividef(__sinf(x), __cosf(x))); }
inline float __tanhf(float x) noexcept { return tanhf(x); }
inline float __powf(float x, float y) noexcept { return exp2f(y * __log2f(x)); }

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
        return cuemu::dm::in_mode(FE, x, y, z, [](double a, double b, double c) { return fma(a, b, c); }); }
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

/* >>math functions glibc lacks */
inline float rsqrtf(float x) { return cuemu::fp::u2f((uint32_t)cuemu::dm::rsqrt_rn<23, 8>(x)); }
inline double rsqrt(double x) {
    if (x == 0) return signbit(x) ? -HUGE_VAL : HUGE_VAL;
    return (double)(1.0L / sqrtl((long double)x));
}
inline float rcbrtf(float x) { return (float)(1.0 / cbrt((double)x)); }
inline double rcbrt(double x) { return (double)(1.0L / cbrtl((long double)x)); }
#if !(defined(__GLIBC__) && defined(__GLIBC_PREREQ) && __GLIBC_PREREQ(2, 41))
inline float sinpif(float x) { long double s, c; cuemu::dm::sincospi_l(x, &s, &c); return cuemu::dm::lf(s); }
inline float cospif(float x) { long double s, c; cuemu::dm::sincospi_l(x, &s, &c); return cuemu::dm::lf(c); }
inline double sinpi(double x) { long double s, c; cuemu::dm::sincospi_l(x, &s, &c); return (double)s; }
inline double cospi(double x) { long double s, c; cuemu::dm::sincospi_l(x, &s, &c); return (double)c; }
#endif
inline void sincospif(float x, float *sptr, float *cptr) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    *sptr = cuemu::dm::lf(s);
    *cptr = cuemu::dm::lf(c);
}
inline void sincospi(double x, double *sptr, double *cptr) {
    long double s, c;
    cuemu::dm::sincospi_l(x, &s, &c);
    *sptr = (double)s;
    *cptr = (double)c;
}
inline float erfinvf(float x) { return cuemu::dm::lf(cuemu::dm::erfinv_l(x)); }
inline double erfinv(double x) { return (double)cuemu::dm::erfinv_l(x); }
inline float erfcinvf(float x) { return cuemu::dm::lf(cuemu::dm::erfcinv_l(x)); }
inline double erfcinv(double x) { return (double)cuemu::dm::erfcinv_l(x); }
/* Phi(x) = erfc(-x / sqrt 2) / 2 */
inline float normcdff(float x) { return cuemu::dm::lf(0.5L * erfcl(-(long double)x * 0.707106781186547524400844362104849L)); }
inline double normcdf(double x) { return (double)(0.5L * erfcl(-(long double)x * 0.707106781186547524400844362104849L)); }
/* Phi^-1(p) = -sqrt 2 erfcinv(2 p) */
inline float normcdfinvf(float x) {
    return cuemu::dm::lf(-1.41421356237309504880168872420969808L * cuemu::dm::erfcinv_l(2.0L * x));
}
inline double normcdfinv(double x) {
    return (double)(-1.41421356237309504880168872420969808L * cuemu::dm::erfcinv_l(2.0L * x));
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
inline float erfcxf(float x) { return cuemu::dm::lf(cuemu_erfcx_l(x)); }
inline double erfcx(double x) { return (double)cuemu_erfcx_l(x); }
inline float rhypotf(float x, float y) noexcept { const double v[2] = {x, y}; return cuemu::dm::lf(cuemu::dm::norm_n(2, v, true)); }
inline double rhypot(double x, double y) noexcept { const double v[2] = {x, y}; return (double)cuemu::dm::norm_n(2, v, true); }
inline float norm3df(float a, float b, float c) noexcept { const double v[3] = {a, b, c}; return cuemu::dm::lf(cuemu::dm::norm_n(3, v, false)); }
inline double norm3d(double a, double b, double c) noexcept { const double v[3] = {a, b, c}; return (double)cuemu::dm::norm_n(3, v, false); }
inline float rnorm3df(float a, float b, float c) noexcept { const double v[3] = {a, b, c}; return cuemu::dm::lf(cuemu::dm::norm_n(3, v, true)); }
inline double rnorm3d(double a, double b, double c) noexcept { const double v[3] = {a, b, c}; return (double)cuemu::dm::norm_n(3, v, true); }
inline float norm4df(float a, float b, float c, float d) noexcept { const double v[4] = {a, b, c, d}; return cuemu::dm::lf(cuemu::dm::norm_n(4, v, false)); }
inline double norm4d(double a, double b, double c, double d) noexcept { const double v[4] = {a, b, c, d}; return (double)cuemu::dm::norm_n(4, v, false); }
inline float rnorm4df(float a, float b, float c, float d) noexcept { const double v[4] = {a, b, c, d}; return cuemu::dm::lf(cuemu::dm::norm_n(4, v, true)); }
inline double rnorm4d(double a, double b, double c, double d) noexcept { const double v[4] = {a, b, c, d}; return (double)cuemu::dm::norm_n(4, v, true); }
inline float normf(int dim, const float *p) noexcept { return cuemu::dm::lf(cuemu::dm::norm_n(dim, p, false)); }
inline float rnormf(int dim, const float *p) noexcept { return cuemu::dm::lf(cuemu::dm::norm_n(dim, p, true)); }
inline double norm(int dim, const double *p) noexcept { return (double)cuemu::dm::norm_n(dim, p, false); }
inline double rnorm(int dim, const double *p) noexcept { return (double)cuemu::dm::norm_n(dim, p, true); }

#endif
