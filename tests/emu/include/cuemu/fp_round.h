/* cuemu/fp_round.h - exact rounding between the emulator's floating-point
   formats (C++ only; included by cuda_fp16.h, cuda_bf16.h and
   cuemu/device_math.h).

   Everything here is written from the IEEE 754 definitions:
   - a value is M * 2^E with an integer significand M; rounding it to a
     binary format with P = MANT + 1 significand bits keeps the bits at or
     above the format's unit in the last place (which, below the smallest
     normal, is fixed at 2^(emin - MANT)) and decides the increment from the
     dropped bits and the rounding direction;
   - an overflowing result becomes Inf or the largest finite number, as the
     direction says (round to nearest: Inf from max + ulp/2 on);
   - NaN results are the canonical NaN of the format (all exponent and
     fraction bits set, sign clear), as NVIDIA GPUs produce.
   An operation on doubles whose exact result is not a double (an add of far
   apart numbers, a quotient, a square root) is first rounded to double "to
   odd" (the last bit set when inexact), using the exact remainder; rounding
   that to a format with at most 51 significand bits in any direction then
   gives the correctly rounded result of the exact value. */
#ifndef CUEMU_FP_ROUND_H
#define CUEMU_FP_ROUND_H

#include <stdint.h>
#include <string.h>
#include <math.h>

namespace cuemu {
namespace fp {

enum rmode { RN = 0, RZ = 1, RD = 2, RU = 3 };

inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
inline uint64_t d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
inline double u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* Rounds sign * M * 2^E (M > 0) to the format with MANT fraction bits and
   EXPB exponent bits; returns its bit pattern. */
template <int MANT, int EXPB>
inline uint64_t round_core(uint64_t M, int E, bool neg, rmode mode) {
    const int BIAS = (1 << (EXPB - 1)) - 1;
    const uint64_t INF = ((uint64_t(1) << EXPB) - 1) << MANT;
    const uint64_t S = uint64_t(neg) << (MANT + EXPB);
    const int lead = 63 - __builtin_clzll(M) + E;      /* floor(log2 |value|) */
    const int emin = 1 - BIAS;
    const int q = (lead < emin ? emin : lead) - MANT;  /* exponent of the ulp */
    const int sh = q - E;                              /* bits dropped */
    uint64_t kept;
    bool inexact, above, tie;
    if (sh <= 0) {
        kept = M << (-sh);   /* exact; only for formats wider than the source */
        inexact = above = tie = false;
    } else if (sh >= 64) {
        kept = 0;
        inexact = true;
        above = false;       /* past 64 bits, M < 2^64 <= 2^(sh-1): below half */
        tie = false;
        if (sh == 64) { above = M > (uint64_t(1) << 63); tie = M == (uint64_t(1) << 63); }
    } else {
        kept = M >> sh;
        const uint64_t rem = M & ((uint64_t(1) << sh) - 1);
        const uint64_t half = uint64_t(1) << (sh - 1);
        inexact = rem != 0;
        above = rem > half;
        tie = rem == half;
    }
    bool inc;
    switch (mode) {
    case RN: inc = above || (tie && (kept & 1)); break;
    case RU: inc = inexact && !neg; break;
    case RD: inc = inexact && neg; break;
    default: inc = false; break;
    }
    kept += inc;
    /* biased exponent of the ulp's binade minus one, so that the implicit
       bit of kept lands in the exponent field (and a carry moves it up). */
    const int64_t ebase = int64_t(q) + MANT + BIAS - 1;
    if (ebase >= ((int64_t(1) << EXPB) - 1)) return S | (mode == RN || (mode == RU && !neg) || (mode == RD && neg) ? INF : INF - 1);
    const uint64_t bits = (uint64_t(ebase) << MANT) + kept;
    if (bits >= INF) {
        const bool to_inf = mode == RN || (mode == RU && !neg) || (mode == RD && neg);
        return S | (to_inf ? INF : INF - 1);
    }
    return S | bits;
}

template <int MANT, int EXPB> inline uint64_t canonical_nan() { return (uint64_t(1) << (MANT + EXPB)) - 1; }

/* Rounds a double (any value) to the format. */
template <int MANT, int EXPB>
inline uint64_t from_double(double x, rmode mode) {
    const uint64_t b = d2u(x);
    const bool neg = (b >> 63) != 0;
    const int e = int((b >> 52) & 0x7ff);
    const uint64_t m = b & ((uint64_t(1) << 52) - 1);
    const uint64_t S = uint64_t(neg) << (MANT + EXPB);
    if (e == 0x7ff) return m ? canonical_nan<MANT, EXPB>() : (S | (((uint64_t(1) << EXPB) - 1) << MANT));
    if (e == 0 && m == 0) return S;
    if (e == 0) return round_core<MANT, EXPB>(m, -1074, neg, mode);
    return round_core<MANT, EXPB>(m | (uint64_t(1) << 52), e - 1075, neg, mode);
}

/* Rounds an integer to the format. */
template <int MANT, int EXPB>
inline uint64_t from_u64(uint64_t v, bool neg, rmode mode) {
    if (v == 0) return 0;   /* integer zero converts to +0 */
    return round_core<MANT, EXPB>(v, 0, neg, mode);
}
template <int MANT, int EXPB>
inline uint64_t from_i64(int64_t v, rmode mode) {
    const uint64_t mag = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    return from_u64<MANT, EXPB>(mag, v < 0, mode);
}

/* Widening to double: exact. */
template <int MANT, int EXPB>
inline double to_double(uint64_t bits) {
    const int BIAS = (1 << (EXPB - 1)) - 1;
    const bool neg = (bits >> (MANT + EXPB)) & 1;
    const int e = int((bits >> MANT) & ((uint64_t(1) << EXPB) - 1));
    const uint64_t m = bits & ((uint64_t(1) << MANT) - 1);
    double v;
    if (e == (1 << EXPB) - 1) v = m ? u2d(0x7ff8000000000000ull) : HUGE_VAL;
    else if (e == 0) v = ldexp(double(m), 1 - BIAS - MANT);
    else v = ldexp(double(m | (uint64_t(1) << MANT)), e - BIAS - MANT);
    return neg ? -v : v;
}

/* >>formats: half (binary16), bfloat16, float (binary32). */
inline uint16_t d2h(double x, rmode m) { return uint16_t(from_double<10, 5>(x, m)); }
inline uint16_t d2bf(double x, rmode m) { return uint16_t(from_double<7, 8>(x, m)); }
inline float d2f(double x, rmode m) { return u2f(uint32_t(from_double<23, 8>(x, m))); }

/* half -> float, exact: every half is a normal float. */
inline float h2f(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t m = h & 0x3ffu;
    if (e == 0x1f) return u2f(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    if (e != 0) return u2f(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return u2f(sign);
    /* subnormal half m * 2^-24: the leading one at bit p gives 2^(p-24) */
    const int p = 31 - __builtin_clz(m);
    const uint32_t frac = (m << (23 - p)) & 0x7fffffu;
    return u2f(sign | (uint32_t(p + 103) << 23) | frac);
}
/* bfloat16 -> float, exact: the upper half of the float's bits. NaN stays NaN. */
inline float bf2f(uint16_t b) { return u2f(uint32_t(b) << 16); }

/* float -> half straight from the float's bits (hot path of conversions). */
inline uint16_t f2h(float f, rmode mode) {
    const uint32_t x = f2u(f);
    const uint32_t a = x & 0x7fffffffu;
    const bool neg = (x >> 31) != 0;
    const uint16_t S = uint16_t(neg ? 0x8000u : 0u);
    if (a >= 0x7f800000u) return a > 0x7f800000u ? uint16_t(0x7fffu) : uint16_t(S | 0x7c00u);
    uint32_t kept, rem, half;
    bool inexact;
    const uint32_t ef = a >> 23;
    if (ef >= 113) {                                  /* |f| >= 2^-14: normal half or overflow */
        if (ef >= 143) { kept = 0x7c00u; rem = 0; half = 1; inexact = true; }  /* >= 2^16 */
        else { kept = (a >> 13) - (112u << 10); rem = a & 0x1fffu; half = 0x1000u; inexact = rem != 0; }
    } else {                                          /* subnormal half or zero */
        const uint32_t sig = ef ? ((a & 0x7fffffu) | 0x800000u) : a;
        const uint32_t sh = ef ? 126u - ef : 125u;    /* to units of 2^-24 */
        if (sh >= 32) { kept = 0; rem = sig; half = 0x80000000u; }
        else { kept = sig >> sh; rem = sig & ((1u << sh) - 1u); half = 1u << (sh - 1); }
        inexact = rem != 0;
    }
    if (kept < 0x7c00u) {
        bool inc;
        switch (mode) {
        case RN: inc = rem > half || (rem == half && (kept & 1u)); break;
        case RU: inc = inexact && !neg; break;
        case RD: inc = inexact && neg; break;
        default: inc = false; break;
        }
        kept += inc;
    }
    if (kept >= 0x7c00u) {
        const bool to_inf = mode == RN || (mode == RU && !neg) || (mode == RD && neg);
        kept = to_inf ? 0x7c00u : 0x7bffu;
    }
    return uint16_t(S | kept);
}

/* float -> bfloat16: bfloat16 is a float with 16 fraction bits fewer, so the
   exponent field carries across (rounding up past the largest finite number
   gives Inf, as it should in the directions that round away). */
inline uint16_t f2bf(float f, rmode mode) {
    const uint32_t x = f2u(f);
    const uint32_t a = x & 0x7fffffffu;
    const bool neg = (x >> 31) != 0;
    if (a > 0x7f800000u) return 0x7fffu;
    if (a == 0x7f800000u) return uint16_t(x >> 16);
    uint32_t kept = x >> 16;
    const uint32_t rem = x & 0xffffu;
    bool inc;
    switch (mode) {
    case RN: inc = rem > 0x8000u || (rem == 0x8000u && (kept & 1u)); break;
    case RU: inc = rem != 0 && !neg; break;
    case RD: inc = rem != 0 && neg; break;
    default: inc = false; break;
    }
    kept += inc;
    return uint16_t(kept);
}

/* >>exact: operations on doubles, rounded to double "to odd". Inputs are
   finite doubles that came from floats, halves or bfloat16s (so products and
   remainders neither overflow nor underflow); non-finite results pass through. */
inline double odd(double s, double err_sign) {
    if (err_sign == 0 || !isfinite(s)) return s;
    uint64_t b = d2u(s);
    if (b & 1) return s;
    /* s even and inexact: the exact value lies strictly between s and its
       neighbour in the direction of the error, which is odd. */
    const bool up_in_magnitude = (err_sign > 0) == (s > 0);
    if (s == 0) return s;   /* not reachable for the operations below */
    b = up_in_magnitude ? b + 1 : b - 1;
    return u2d(b);
}
inline double add_odd(double a, double b) {
    const double s = a + b;
    if (!isfinite(s)) return s;
    const double bb = s - a;
    const double err = (a - (s - bb)) + (b - bb);   /* exact: Knuth's TwoSum */
    return odd(s, err);
}
inline double mul_odd(double a, double b) {
    const double p = a * b;
    if (!isfinite(p) || p == 0) return p;
    return odd(p, fma(a, b, -p));
}
inline double fma_odd(double a, double b, double c) {
    /* a*b exact in double for the narrow formats (<= 2 * 24 bits) */
    return add_odd(a * b, c);
}
inline double div_odd(double a, double b) {
    const double q = a / b;
    if (!isfinite(q) || q == 0) return q;
    const double r = fma(-q, b, a);   /* exact remainder: a - q*b */
    return odd(q, b > 0 ? r : -r);
}
inline double sqrt_odd(double a) {
    const double s = sqrt(a);
    if (!isfinite(s) || s == 0) return s;
    return odd(s, fma(-s, s, a));
}

/* >>integers: a double rounded to an integral value in the given direction
   (NaN stays NaN, infinities stay). Exact for every double. */
inline double round_integral(double x, rmode mode) {
    if (!isfinite(x)) return x;
    switch (mode) {
    case RZ: return trunc(x);
    case RD: return floor(x);
    case RU: return ceil(x);
    default: {
        const double f = floor(x);
        const double d = x - f;   /* exact */
        double r;
        if (d > 0.5) r = f + 1.0;
        else if (d < 0.5) r = f;
        else r = fmod(f, 2.0) == 0 ? f : f + 1.0;
        return r == 0 ? copysign(0.0, x) : r;   /* -0.3 rounds to -0 */
    }
    }
}
/* Saturating conversions of an already integral double. */
inline long long sat_ll(double r, long long nan_value) {
    if (r != r) return nan_value;
    if (r >= 9223372036854775808.0) return (long long)0x7fffffffffffffffull;
    if (r < -9223372036854775808.0) return (long long)0x8000000000000000ull;
    return (long long)r;
}
inline unsigned long long sat_ull(double r, unsigned long long nan_value) {
    if (r != r) return nan_value;
    if (r >= 18446744073709551616.0) return 0xffffffffffffffffull;
    if (r <= 0) return 0;
    return (unsigned long long)r;
}
inline long long sat_range(double r, long long lo, long long hi) {
    if (r != r) return 0;
    if (r <= double(lo)) return lo;
    if (r >= double(hi)) return hi;
    return (long long)r;
}

} /* namespace fp */
} /* namespace cuemu */

#endif
