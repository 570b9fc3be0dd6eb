/* fp16_arith.cu - half and bfloat16 arithmetic, comparisons and math
   functions against exactly rounded references.

   The reference rounds an exact value x (a __float128 that holds it exactly:
   sums and products of halves span at most ~90 bits) to nearest even by
   searching the table of the format's values for the neighbours of x and
   comparing x with their midpoint. Quotients and square roots, which are
   not exact in any format, are checked the other way round: r is the
   correctly rounded a/b (sqrt a) when the midpoints around r bracket the
   exact value, which needs only exact products (m*b against a, m*m
   against a). Math functions (hexp, hsin, ...) are compared with a long
   double evaluation rounded by the same rule, for all 65536 inputs. */
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <vector>
#include "selftest.h"

namespace {
typedef __float128 q128;

double decode16(unsigned bits, int expb) {
    const int mant = 15 - expb, bias = (1 << (expb - 1)) - 1;
    const unsigned e = (bits >> mant) & ((1u << expb) - 1), m = bits & ((1u << mant) - 1);
    const double s = (bits & 0x8000u) ? -1.0 : 1.0;
    if (e == (1u << expb) - 1) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, 1 - bias - mant);
    return s * ldexp((double)(m + (1u << mant)), (int)e - bias - mant);
}

struct Format {
    int expb;
    unsigned inf;
    std::vector<double> v;
    explicit Format(int e) : expb(e), inf(((1u << e) - 1) << (15 - e)) {
        v.resize(inf + 1);
        for (unsigned k = 0; k < inf; k++) v[k] = decode16(k, expb);
        v[inf] = ldexp(1.0, 1 << (expb - 1));
    }
    /* largest k with v[k] <= |x| */
    unsigned below(q128 ax) const {
        unsigned lo = 0, hi = inf;
        while (hi - lo > 1) { const unsigned mid = (lo + hi) / 2; if ((q128)v[mid] <= ax) lo = mid; else hi = mid; }
        return lo;
    }
    /* round-to-nearest-even pattern of an exact value (sign of zero given) */
    unsigned rn(q128 x, bool neg_zero = false) const {
        if (x == 0) return neg_zero ? 0x8000u : 0;
        const bool neg = x < 0;
        const q128 ax = neg ? -x : x;
        const unsigned k = below(ax);
        unsigned r;
        if (k >= inf) r = inf;
        else {
            const q128 mid = ((q128)v[k] + (q128)v[k + 1]) / 2;
            r = ax < mid ? k : ax > mid ? k + 1 : ((k & 1u) ? k + 1 : k);
        }
        return r | (neg ? 0x8000u : 0);
    }
    /* the midpoints around a finite positive pattern r (lo may be 0 for r = 0) */
    void mids(unsigned r, q128 *lo, q128 *hi) const {
        *lo = r ? ((q128)v[r - 1] + (q128)v[r]) / 2 : (q128)0;
        *hi = ((q128)v[r] + (q128)v[r + 1]) / 2;
    }
};

const Format &H() { static Format f(5); return f; }
const Format &B() { static Format f(8); return f; }

unsigned hb(__half h) { return __half_as_ushort(h); }
unsigned bb(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__half hh(unsigned u) { return __ushort_as_half((unsigned short)u); }
__nv_bfloat16 bh(unsigned u) { return __ushort_as_bfloat16((unsigned short)u); }
bool isnan16(unsigned u, const Format &F) { return (u & 0x7fffu) > F.inf; }

uint64_t rng_state = 0x9e3779b97f4a7c15ull;
unsigned rnd16() {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (unsigned)(rng_state >> 20) & 0xffffu;
}

/* operands: all patterns against a set of interesting ones, plus random pairs */
std::vector<unsigned> partners(const Format &F) {
    std::vector<unsigned> p = {0, 0x8000u, 1, 0x8001u, F.inf, F.inf | 0x8000u, F.inf - 1, (F.inf - 1) | 0x8000u};
    const unsigned one = F.expb == 5 ? 0x3c00u : 0x3f80u;
    for (unsigned d : {0u, 1u, 2u, 3u, 0x155u, 0x3ffu}) { p.push_back(one + d); p.push_back((one + d) | 0x8000u); p.push_back(one - d - 1); }
    for (int i = 0; i < 12; i++) { unsigned r = rnd16(); if (!isnan16(r, F)) p.push_back(r); }
    return p;
}

template <class OpT> long each_pair(const Format &F, OpT op) {
    long bad = 0;
    const std::vector<unsigned> ps = partners(F);
    const unsigned stride = st_stride(7);   /* CUEMU_SELFTEST_QUICK: every 7th pattern, a tenth of the random pairs */
    for (unsigned a = 0; a < 65536; a += stride) {
        if (isnan16(a, F)) continue;
        for (unsigned b : ps) bad += !op(a, b) + !op(b, a);
    }
    for (int i = 0; i < (stride > 1 ? 20000 : 200000); i++) {
        const unsigned a = rnd16(), b = rnd16();
        if (!isnan16(a, F) && !isnan16(b, F)) bad += !op(a, b);
    }
    return bad;
}

/* the exact value of a pattern as a __float128 (finite) */
q128 val(unsigned u, const Format &F) { return (q128)decode16(u, F.expb); }
bool fin(unsigned u, const Format &F) { return (u & 0x7fffu) < F.inf; }

/* expected result of an exact finite operation, or a special-case check by IEEE rules through double */
unsigned expect_exact(q128 x, const Format &F, double via_double, bool neg_zero) {
    if (!isfinite(via_double) || via_double != via_double) {
        /* infinities and NaN: what IEEE double arithmetic gives, narrowed */
        if (via_double != via_double) return 0x7fffu;
        return F.inf | (via_double < 0 ? 0x8000u : 0);
    }
    return F.rn(x, neg_zero);
}

bool same(unsigned got, unsigned want, const Format &F) {
    if (isnan16(want, F)) return isnan16(got, F);
    return got == want;
}

/* a/b correctly rounded to nearest? (a, b finite, b != 0, result finite nonzero) */
bool quotient_ok(unsigned r, q128 a, q128 b, const Format &F) {
    const bool neg = (a < 0) != (b < 0);
    if (((r & 0x8000u) != 0) != neg) return false;
    const unsigned m = r & 0x7fffu;
    const q128 aa = a < 0 ? -a : a, ab = b < 0 ? -b : b;
    if (m == F.inf) {   /* overflow: the quotient is at least max + ulp/2 */
        q128 lo, hi; F.mids(F.inf - 1, &lo, &hi);
        return hi * ab <= aa;
    }
    q128 lo, hi;
    F.mids(m, &lo, &hi);
    const q128 l = lo * ab, h = hi * ab;   /* exact: few significant bits */
    if (aa < l || aa > h) return false;
    if (aa == l || aa == h) return (m & 1u) == 0;   /* a tie goes to the even one */
    return true;
}
bool sqrt_ok(unsigned r, q128 a, const Format &F) {
    const unsigned m = r & 0x7fffu;
    if (r & 0x8000u) return m == 0 && a == 0;
    q128 lo, hi;
    F.mids(m, &lo, &hi);
    if (a < lo * lo || a > hi * hi) return false;
    if (a == lo * lo || a == hi * hi) return (m & 1u) == 0;
    return true;
}

} /* namespace */

ST_TEST(half_add_sub_mul_fma_exact) {
    const Format &F = H();
    long bad = each_pair(F, [&](unsigned a, unsigned b) {
        const q128 x = val(a, F), y = val(b, F);
        const double dx = decode16(a, 5), dy = decode16(b, 5);
        bool ok = true;
        if (fin(a, F) && fin(b, F)) {
            const bool both_neg0 = (a == 0x8000u && b == 0x8000u);
            ok &= same(hb(__hadd(hh(a), hh(b))), expect_exact(x + y, F, dx + dy, both_neg0), F);
            ok &= same(hb(__hsub(hh(a), hh(b))), expect_exact(x - y, F, dx - dy, a == 0x8000u && b == 0), F);
            ok &= same(hb(__hmul(hh(a), hh(b))), expect_exact(x * y, F, dx * dy, ((a ^ b) & 0x8000u) != 0), F);
            const unsigned c = (a * 7u + b) & 0xffffu;
            if (fin(c, F)) {
                const q128 z = val(c, F), p = x * y;
                const bool p_neg = ((a ^ b) & 0x8000u) != 0;
                const bool nz = (p == 0 && z == 0) ? (p_neg && (c & 0x8000u)) : false;
                ok &= same(hb(__hfma(hh(a), hh(b), hh(c))), expect_exact(p + z, F, fma(dx, dy, decode16(c, 5)), nz), F);
            }
        } else {
            ok &= same(hb(__hadd(hh(a), hh(b))), expect_exact(0, F, dx + dy, false), F);
            ok &= same(hb(__hmul(hh(a), hh(b))), expect_exact(0, F, dx * dy, false), F);
        }
        return ok;
    });
    ST_CHECKF(bad == 0, "%ld wrong", bad);
}

ST_TEST(bf16_add_sub_mul_fma_exact) {
    const Format &F = B();
    long bad = each_pair(F, [&](unsigned a, unsigned b) {
        const q128 x = val(a, F), y = val(b, F);
        const double dx = decode16(a, 8), dy = decode16(b, 8);
        bool ok = true;
        if (fin(a, F) && fin(b, F)) {
            /* sums are exact in binary128 when the exponents are within ~100 */
            const int ea = (a >> 7) & 0xff, eb = (b >> 7) & 0xff;
            if (abs(ea - eb) < 100 || x == 0 || y == 0) {
                ok &= same(bb(__hadd(bh(a), bh(b))), expect_exact(x + y, F, dx + dy, a == 0x8000u && b == 0x8000u), F);
                ok &= same(bb(__hsub(bh(a), bh(b))), expect_exact(x - y, F, dx - dy, a == 0x8000u && b == 0), F);
            } else {
                /* far apart: the larger one, unless rounding up in the last place is impossible anyway */
                const unsigned big = fabs(dx) > fabs(dy) ? a : b;
                ok &= bb(__hadd(bh(a), bh(b))) == big;
            }
            ok &= same(bb(__hmul(bh(a), bh(b))), expect_exact(x * y, F, dx * dy, ((a ^ b) & 0x8000u) != 0), F);
        } else {
            ok &= same(bb(__hadd(bh(a), bh(b))), expect_exact(0, F, dx + dy, false), F);
        }
        return ok;
    });
    ST_CHECKF(bad == 0, "%ld wrong", bad);
    /* fma: the product's low bits decide a tie of the sum */
    const __nv_bfloat16 one = bh(0x3f80u), e8 = bh(0x3b80u), one_ulp = bh(0x3f81u);   /* 1, 2^-8, 1 + 2^-7 */
    ST_CHECK(bb(__hadd(one, e8)) == 0x3f80u);                      /* 1 + 2^-8: a tie, to even */
    ST_CHECK(bb(__hfma(e8, one, one)) == 0x3f80u);                 /* the same through fma */
    ST_CHECK(bb(__hfma(e8, one_ulp, one)) == 0x3f81u);             /* 1 + 2^-8 + 2^-15: up */
    ST_CHECK(bb(__hfma(__hneg(e8), one_ulp, one_ulp)) == 0x3f80u); /* 1 + 2^-8 - 2^-15: down */
    ST_CHECK(bb(__hfma(bh(0x0d80u), bh(0x2f00u), one)) == 0x3f80u);  /* 1 + 2^-133 */
    ST_CHECK(bb(__hfma(one, one, __hneg(one))) == 0x0000u);        /* an exact zero sum is +0 */
}

ST_TEST(division_and_sqrt_correctly_rounded) {
    for (int fmt = 0; fmt < 2; fmt++) {
        const Format &F = fmt ? B() : H();
        long bad = each_pair(F, [&](unsigned a, unsigned b) {
            if (!fin(a, F) || !fin(b, F)) {
                const double q = decode16(a, F.expb) / decode16(b, F.expb);
                const unsigned r = fmt ? bb(__hdiv(bh(a), bh(b))) : hb(__hdiv(hh(a), hh(b)));
                return same(r, expect_exact(0, F, q, false), F) || (isfinite(q) && q == 0 && (r & 0x7fffu) == 0);
            }
            const unsigned r = fmt ? bb(__hdiv(bh(a), bh(b))) : hb(__hdiv(hh(a), hh(b)));
            const q128 x = val(a, F), y = val(b, F);
            if (y == 0) return x == 0 ? isnan16(r, F) : (r & 0x7fffu) == F.inf && ((r >> 15) == ((a ^ b) >> 15));
            if (x == 0) return (r & 0x7fffu) == 0 && (r >> 15) == ((a ^ b) >> 15);
            if ((r & 0x7fffu) == 0) {   /* underflow to zero: below half the smallest subnormal */
                const q128 q = x / y;
                return (q < 0 ? -q : q) <= (q128)F.v[1] / 2;
            }
            return quotient_ok(r, x, y, F);
        });
        ST_CHECKF(bad == 0, "format %d: %ld wrong quotients", fmt, bad);
        long sbad = 0, rbad = 0;
        for (unsigned a = 0; a < 65536; a++) {
            if (isnan16(a, F)) continue;
            const unsigned r = fmt ? bb(hsqrt(bh(a))) : hb(hsqrt(hh(a)));
            const double d = decode16(a, F.expb);
            if (d < 0) sbad += !isnan16(r, F);
            else if (isinf(d)) sbad += r != F.inf;
            else if (d == 0) sbad += r != a;
            else sbad += !sqrt_ok(r, val(a, F), F);
            /* hrcp: 1/a; hrsqrt: checked as m^2 * a against 1 */
            const unsigned rc = fmt ? bb(hrcp(bh(a))) : hb(hrcp(hh(a)));
            if (d != 0 && isfinite(d)) {
                if ((rc & 0x7fffu) != 0 && (rc & 0x7fffu) != F.inf) rbad += !quotient_ok(rc, 1, val(a, F), F);
            } else if (d == 0) rbad += (rc & 0x7fffu) != F.inf;
            const unsigned rs = fmt ? bb(hrsqrt(bh(a))) : hb(hrsqrt(hh(a)));
            if (d > 0 && isfinite(d)) {
                q128 lo, hi;
                F.mids(rs & 0x7fffu, &lo, &hi);
                const q128 x = val(a, F);
                rbad += !(lo * lo * x < 1 && hi * hi * x > 1);
            }
        }
        ST_CHECKF(sbad == 0, "format %d: %ld wrong square roots", fmt, sbad);
        ST_CHECKF(rbad == 0, "format %d: %ld wrong reciprocals", fmt, rbad);
    }
}

/* the math functions: every input, against a long double evaluation rounded
   to nearest (inputs whose value lies within 2^-50 relative of a midpoint
   are counted as ambiguous and must be few). */
ST_TEST(math_functions_all_inputs) {
    typedef long double (*Ref)(long double);
    struct Fn { const char *name; __half (*h)(__half); __nv_bfloat16 (*b)(__nv_bfloat16); Ref ref; };
    const Fn fns[] = {
        {"exp", hexp, hexp, [](long double x) { return expl(x); }},
        {"exp2", hexp2, hexp2, [](long double x) { return exp2l(x); }},
        {"exp10", hexp10, hexp10, [](long double x) { return powl(10.0L, x); }},
        {"log", hlog, hlog, [](long double x) { return logl(x); }},
        {"log2", hlog2, hlog2, [](long double x) { return log2l(x); }},
        {"log10", hlog10, hlog10, [](long double x) { return log10l(x); }},
        {"sin", hsin, hsin, [](long double x) { return sinl(x); }},
        {"cos", hcos, hcos, [](long double x) { return cosl(x); }},
        {"tanh", htanh, htanh, [](long double x) { return tanhl(x); }},
        {"rsqrt", hrsqrt, hrsqrt, [](long double x) { return 1.0L / sqrtl(x); }},
        {"trunc", htrunc, htrunc, [](long double x) { return truncl(x); }},
        {"ceil", hceil, hceil, [](long double x) { return ceill(x); }},
        {"floor", hfloor, hfloor, [](long double x) { return floorl(x); }},
        {"rint", hrint, hrint, [](long double x) { return nearbyintl(x); }},
    };
    for (const Fn &fn : fns) {
        for (int fmt = 0; fmt < 2; fmt++) {
            const Format &F = fmt ? B() : H();
            long bad = 0, ambiguous = 0;
            unsigned first = 0, got_first = 0, want_first = 0;
            for (unsigned a = 0; a < 65536; a++) {
                const double d = decode16(a, F.expb);
                const long double y = fn.ref((long double)d);
                const unsigned got = fmt ? bb(fn.b(bh(a))) : hb(fn.h(hh(a)));
                unsigned want;
                if (y != y) want = 0x7fffu;
                else if (isinf(y)) want = F.inf | (y < 0 ? 0x8000u : 0);
                else {
                    want = F.rn((q128)y, signbit(y));
                    const unsigned k = F.below(fabsl(y));
                    if (k < F.inf) {
                        const long double mid = ((long double)F.v[k] + (long double)F.v[k + 1]) / 2;
                        if (fabsl(fabsl(y) - mid) <= ldexpl(fabsl(y), -50) && fabsl(y) != mid) { ambiguous++; continue; }
                    }
                }
                if (!same(got, want, F)) {
                    if (bad++ == 0) { first = a; got_first = got; want_first = want; }
                }
            }
            ST_CHECKF(bad == 0, "%s format %d: %ld wrong, first input 0x%04x -> 0x%04x, want 0x%04x", fn.name, fmt, bad,
                      first, got_first, want_first);
            ST_CHECKF(ambiguous < 4, "%s format %d: %ld inputs too close to a midpoint", fn.name, fmt, ambiguous);
        }
    }
    /* the documented special cases */
    ST_CHECK(hb(hexp(hh(0xfc00u))) == 0 && hb(hlog(hh(0))) == 0xfc00u && hb(hlog(hh(0x8000u))) == 0xfc00u);
    ST_CHECK(isnan16(hb(hsin(hh(0x7c00u))), H()) && hb(hsin(hh(0x8000u))) == 0x8000u && hb(hcos(hh(0x8000u))) == 0x3c00u);
    ST_CHECK(hb(htanh(hh(0xfc00u))) == 0xbc00u && hb(htanh_approx(hh(0x8000u))) == 0x8000u);
    ST_CHECK(hb(hrsqrt(hh(0x8000u))) == 0xfc00u && hb(hrcp(hh(0x8000u))) == 0xfc00u && hb(hsqrt(hh(0x8000u))) == 0x8000u);
}

ST_TEST(comparisons_min_max) {
    for (int fmt = 0; fmt < 2; fmt++) {
        const Format &F = fmt ? B() : H();
        long bad = each_pair(F, [&](unsigned a, unsigned b) {
            const double x = decode16(a, F.expb), y = decode16(b, F.expb);
            bool ok;
            if (fmt) {
                const __nv_bfloat16 p = bh(a), q = bh(b);
                ok = __heq(p, q) == (x == y) && __hne(p, q) == (x != y) && __hlt(p, q) == (x < y) && __hle(p, q) == (x <= y) &&
                     __hgt(p, q) == (x > y) && __hge(p, q) == (x >= y) && (p == q) == (x == y) && (p < q) == (x < y);
            } else {
                const __half p = hh(a), q = hh(b);
                ok = __heq(p, q) == (x == y) && __hne(p, q) == (x != y) && __hlt(p, q) == (x < y) && __hle(p, q) == (x <= y) &&
                     __hgt(p, q) == (x > y) && __hge(p, q) == (x >= y) && (p == q) == (x == y) && (p < q) == (x < y) &&
                     (p != q) == (x != y);
            }
            const unsigned mx = fmt ? bb(__hmax(bh(a), bh(b))) : hb(__hmax(hh(a), hh(b)));
            const unsigned mn = fmt ? bb(__hmin(bh(a), bh(b))) : hb(__hmin(hh(a), hh(b)));
            if (x == y) ok &= mx == ((a & 0x8000u) ? b : a) && mn == ((a & 0x8000u) ? a : b);
            else ok &= mx == (x > y ? a : b) && mn == (x < y ? a : b);
            return ok;
        });
        ST_CHECKF(bad == 0, "format %d: %ld wrong", fmt, bad);
    }
    const __half nan = hh(0x7e01u), one = hh(0x3c00u);
    ST_CHECK(!__heq(nan, nan) && __hequ(nan, one) && __hneu(nan, nan) && !__hne(nan, one) && __hltu(nan, one) && !__hlt(nan, one));
    ST_CHECK(hb(__hmax(nan, one)) == 0x3c00u && hb(__hmin(one, nan)) == 0x3c00u && hb(__hmax(nan, nan)) == 0x7fffu);
    ST_CHECK(hb(__hmax_nan(nan, one)) == 0x7fffu && hb(__hmin_nan(one, nan)) == 0x7fffu && hb(__hmax_nan(one, hh(0))) == 0x3c00u);
    ST_CHECK(__hisnan(nan) && !__hisnan(one) && __hisinf(hh(0x7c00u)) == 1 && __hisinf(hh(0xfc00u)) == -1 && __hisinf(one) == 0);
    const __half2 v = __halves2half2(nan, one), w = __halves2half2(one, one);
    ST_CHECK(__heq2_mask(v, w) == 0xffff0000u && __hequ2_mask(v, w) == 0xffffffffu && hb(__heq2(v, w).y) == 0x3c00u);
    ST_CHECK(!__hbeq2(v, w) && __hbequ2(v, w) && __hbeq2(w, w) && !(v == w) && (w == w));
    ST_CHECK(hb(__hisnan2(v).x) == 0x3c00u && hb(__hisnan2(v).y) == 0);
    const __nv_bfloat16 bn = bh(0x7fc1u);
    ST_CHECK(__hisnan(bn) && bb(__hmax(bn, bh(0x3f80u))) == 0x3f80u && bb(__hmax_nan(bn, bh(0x3f80u))) == 0x7fffu);
}

ST_TEST(saturation_relu_and_complex) {
    const __half a = __float2half(0.75f), b = __float2half(0.5f), nan = hh(0x7e00u);
    ST_CHECK(hb(__hadd_sat(a, b)) == 0x3c00u && hb(__hsub_sat(b, a)) == 0 && hb(__hmul_sat(a, b)) == hb(__float2half(0.375f)));
    ST_CHECK(hb(__hadd_sat(nan, a)) == 0 && hb(__hfma_sat(a, a, b)) == 0x3c00u && hb(__hsub_sat(hh(0x8000u), hh(0))) == 0);
    ST_CHECK(hb(__hfma_relu(a, hh(0xbc00u), b)) == 0 && hb(__hfma_relu(a, a, b)) == hb(__float2half(1.0625f)));
    ST_CHECK(hb(__hfma_relu(nan, a, b)) == 0x7fffu);
    ST_CHECK(bb(__hadd_sat(bh(0x3f40u), bh(0x3f00u))) == 0x3f80u && bb(__hfma_relu(bh(0xbf80u), bh(0x3f80u), bh(0))) == 0);
    /* (1 + 2i)(3 + 4i) + (5 + 6i) = (-5 + 10i) + (5 + 6i) = 0 + 16i */
    const __half2 z = __hcmadd(__floats2half2_rn(1, 2), __floats2half2_rn(3, 4), __floats2half2_rn(5, 6));
    ST_CHECK(__low2float(z) == 0.0f && __high2float(z) == 16.0f);
    const __nv_bfloat162 zb = __hcmadd(__floats2bfloat162_rn(1, 2), __floats2bfloat162_rn(3, 4), __floats2bfloat162_rn(5, 6));
    ST_CHECK(__low2float(zb) == 0.0f && __high2float(zb) == 16.0f);
    ST_CHECK(hb(__hneg(hh(0))) == 0x8000u && hb(__habs(hh(0xfc00u))) == 0x7c00u && hb(__habs(hh(0x8000u))) == 0);
    /* half2 forms apply per element */
    const __half2 p = __floats2half2_rn(1.5f, -3.0f), q = __floats2half2_rn(0.25f, 2.0f);
    ST_CHECK(__low2float(__hadd2(p, q)) == 1.75f && __high2float(__hmul2(p, q)) == -6.0f && __high2float(__h2div(p, q)) == -1.5f);
    ST_CHECK(__low2float(__hfma2(p, q, q)) == 0.625f && __high2float(h2sqrt(q)) == __half2float(hsqrt(__float2half(2.0f))));
    /* operators */
    __half x = 1.0f;
    x += __float2half(0.5f); x *= __float2half(2.0f); x -= __float2half(1.0f); x /= __float2half(4.0f);
    ST_CHECK(__half2float(x) == 0.5f);
    __half y = x++;
    ST_CHECK(__half2float(y) == 0.5f && __half2float(x) == 1.5f && __half2float(-x) == -1.5f && __half2float(--x) == 0.5f);
    __nv_bfloat162 bv = __floats2bfloat162_rn(1.0f, 2.0f);
    bv = bv * bv + bv;
    ST_CHECK(__low2float(bv) == 2.0f && __high2float(bv) == 6.0f);
}

int main() {
    ST_RUN(half_add_sub_mul_fma_exact);
    ST_RUN(bf16_add_sub_mul_fma_exact);
    ST_RUN(division_and_sqrt_correctly_rounded);
    ST_RUN(math_functions_all_inputs);
    ST_RUN(comparisons_min_max);
    ST_RUN(saturation_relu_and_complex);
    return st_summary();
}
