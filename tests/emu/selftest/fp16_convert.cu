/* fp16_convert.cu - the emulator's float <-> half / bfloat16 conversions
   against references written from the IEEE 754 definitions.

   FP32 -> FP16 and FP32 -> BF16 are checked for all 2^32 float bit patterns
   in all four rounding directions. The reference does not round anything:
   it walks the floats in increasing order beside a table of all finite
   target values (decoded independently from their bit fields with ldexp),
   so that for every float f it knows the two neighbours lo <= f < hi; then
   RD/RU/RZ pick lo or hi by definition and RN compares f with the exact
   midpoint (lo + hi) / 2 (exact in double), ties going to the even
   significand. Past the largest finite value the next neighbour is the
   virtual 2^(emax+1), which makes round-to-nearest overflow exactly where
   IEEE 754 puts it (max + ulp/2). The walk is split over threads.
   All 2^32 patterns need an optimised build (nvcc-emu -O2: about 12 s on two
   cores); without optimisation (minutes), or with CUEMU_SELFTEST_QUICK=1
   (make test's --quick run), every 97th pattern is checked. */
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <thread>
#include <vector>
#include <atomic>
#include "selftest.h"

namespace {

/* the value of a 16-bit pattern with EXPB exponent bits, from the definition */
double decode16(unsigned bits, int expb) {
    const int mant = 15 - expb;
    const int bias = (1 << (expb - 1)) - 1;
    const unsigned e = (bits >> mant) & ((1u << expb) - 1);
    const unsigned m = bits & ((1u << mant) - 1);
    const double s = (bits & 0x8000u) ? -1.0 : 1.0;
    if (e == (1u << expb) - 1) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, 1 - bias - mant);
    return s * ldexp((double)(m + (1u << mant)), (int)e - bias - mant);
}

float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

struct Format {
    int expb;
    unsigned inf;            /* bit pattern of +Inf */
    std::vector<double> v;   /* v[k]: value of positive pattern k, k <= inf (v[inf] virtual) */
    explicit Format(int e) : expb(e), inf(((1u << e) - 1) << (15 - e)) {
        v.resize(inf + 1);
        for (unsigned k = 0; k < inf; k++) v[k] = decode16(k, expb);
        v[inf] = ldexp(1.0, (1 << (expb - 1)));   /* 2^(emax+1) */
    }
};

typedef unsigned short (*Conv)(float);
unsigned short h_rn(float f) { return __half_as_ushort(__float2half_rn(f)); }
unsigned short h_rz(float f) { return __half_as_ushort(__float2half_rz(f)); }
unsigned short h_rd(float f) { return __half_as_ushort(__float2half_rd(f)); }
unsigned short h_ru(float f) { return __half_as_ushort(__float2half_ru(f)); }
unsigned short b_rn(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
unsigned short b_rz(float f) { return __bfloat16_as_ushort(__float2bfloat16_rz(f)); }
unsigned short b_rd(float f) { return __bfloat16_as_ushort(__float2bfloat16_rd(f)); }
unsigned short b_ru(float f) { return __bfloat16_as_ushort(__float2bfloat16_ru(f)); }

struct Failure { std::atomic<long> count{0}; std::atomic<uint32_t> first{0}; std::atomic<int> mode{-1}; };

/* Checks the magnitudes [a0, a1) (positive float patterns, finite) with both signs. */
template <Conv RN, Conv RZ, Conv RD, Conv RU>
void walk(const Format &F, uint32_t a0, uint32_t a1, Failure *fail) {
    const double f0 = (double)bits_f(a0);
    /* k: largest pattern with v[k] <= f (v is increasing) */
    unsigned lo = 0, hi = F.inf;
    while (hi - lo > 1) { const unsigned mid = (lo + hi) / 2; if (F.v[mid] <= f0) lo = mid; else hi = mid; }
    unsigned k = lo;
    long bad = 0;
#if defined(__OPTIMIZE__)
    const uint32_t step = st_stride(97);
#else
    const uint32_t step = 97;
#endif
    for (uint32_t a = a0; a < a1; a += step) {
        const double f = (double)bits_f(a);
        while (k + 1 <= F.inf && F.v[k + 1] <= f) k++;
        /* expected patterns for +f */
        unsigned rd, ru, rn;
        if (k >= F.inf) { rd = F.inf - 1; ru = F.inf; rn = F.inf; }   /* f >= 2^(emax+1) */
        else {
            rd = k;
            ru = (F.v[k] == f) ? k : k + 1;
            const double mid = (F.v[k] + F.v[k + 1]) * 0.5;
            if (f < mid) rn = k;
            else if (f > mid) rn = k + 1;
            else rn = (k & 1u) ? k + 1 : k;
            if (rd == F.inf) rd = F.inf - 1;
        }
        const unsigned rz = rd;
        const float pf = bits_f(a), nf = bits_f(a | 0x80000000u);
        int m = -1;
        if (RN(pf) != rn) m = 0;
        else if (RZ(pf) != rz) m = 1;
        else if (RD(pf) != rd) m = 2;
        else if (RU(pf) != ru) m = 3;
        else if (RN(nf) != (rn | 0x8000u)) m = 4;
        else if (RZ(nf) != (rz | 0x8000u)) m = 5;
        else if (RD(nf) != (ru | 0x8000u)) m = 6;   /* down for -f: -(up for f) */
        else if (RU(nf) != (rd | 0x8000u)) m = 7;
        if (m >= 0) {
            if (bad++ == 0) { fail->first = a; fail->mode = m; }
        }
    }
    fail->count += bad;
}

template <Conv RN, Conv RZ, Conv RD, Conv RU>
long check_all(const Format &F, uint32_t *first, int *mode) {
    unsigned nt = std::thread::hardware_concurrency();
    if (nt < 2) nt = 2;
    if (nt > 16) nt = 16;
    Failure fail;
    const uint32_t end = 0x7f800000u;   /* the finite magnitudes; Inf and NaN below */
    std::vector<std::thread> ts;
    const uint32_t chunk = end / nt + 1;
    for (unsigned t = 0; t < nt; t++) {
        const uint32_t a0 = t * chunk;
        const uint32_t a1 = (t + 1 == nt || (uint64_t)a0 + chunk > end) ? end : a0 + chunk;
        if (a0 >= end) break;
        ts.emplace_back(walk<RN, RZ, RD, RU>, std::cref(F), a0, a1, &fail);
    }
    for (auto &t : ts) t.join();
    *first = fail.first;
    *mode = fail.mode;
    return fail.count;
}

/* Inf and every NaN pattern (2 * 2^23 of them), both signs, every mode */
template <Conv RN, Conv RZ, Conv RD, Conv RU>
bool specials_ok(unsigned inf, uint32_t *bad) {
    const Conv all[4] = {RN, RZ, RD, RU};
    for (int m = 0; m < 4; m++) {
        if (all[m](bits_f(0x7f800000u)) != inf || all[m](bits_f(0xff800000u)) != (inf | 0x8000u)) { *bad = 0x7f800000u; return false; }
        const uint32_t step = st_stride(97);
        for (uint32_t a = 0x7f800001u; a <= 0x7fffffffu; a += step) {
            for (uint32_t s = 0; s < 2; s++) {
                const unsigned r = all[m](bits_f(a | (s << 31)));
                if ((r & 0x7fffu) <= inf) { *bad = a | (s << 31); return false; }   /* not a NaN */
            }
        }
    }
    return true;
}

} /* namespace */

ST_TEST(fp32_to_fp16_all_patterns_all_modes) {
    Format F(5);
    uint32_t first = 0;
    int mode = -1;
    const long bad = check_all<h_rn, h_rz, h_rd, h_ru>(F, &first, &mode);
    ST_CHECKF(bad == 0, "%ld wrong, first float 0x%08x check %d", bad, (unsigned)first, mode);
    uint32_t b = 0;
    ST_CHECKF((specials_ok<h_rn, h_rz, h_rd, h_ru>(0x7c00u, &b)), "Inf/NaN 0x%08x", (unsigned)b);
}

ST_TEST(fp32_to_bf16_all_patterns_all_modes) {
    Format F(8);
    uint32_t first = 0;
    int mode = -1;
    const long bad = check_all<b_rn, b_rz, b_rd, b_ru>(F, &first, &mode);
    ST_CHECKF(bad == 0, "%ld wrong, first float 0x%08x check %d", bad, (unsigned)first, mode);
    uint32_t b = 0;
    ST_CHECKF((specials_ok<b_rn, b_rz, b_rd, b_ru>(0x7f80u, &b)), "Inf/NaN 0x%08x", (unsigned)b);
}

ST_TEST(fp16_and_bf16_to_fp32_all_patterns) {
    for (unsigned u = 0; u < 65536; u++) {
        const double h = decode16(u, 5), b = decode16(u, 8);
        const float fh = __half2float(__ushort_as_half((unsigned short)u));
        const float fb = __bfloat162float(__ushort_as_bfloat16((unsigned short)u));
        if (h != h) ST_CHECKF(fh != fh, "half 0x%04x -> %a, want NaN", u, fh);
        else ST_CHECKF((double)fh == h && signbit(fh) == signbit(h), "half 0x%04x -> %a, want %a", u, fh, h);
        if (b != b) ST_CHECKF(fb != fb, "bf16 0x%04x -> %a, want NaN", u, fb);
        else ST_CHECKF((double)fb == b && signbit(fb) == signbit(b), "bf16 0x%04x -> %a, want %a", u, fb, b);
        /* round trip: every half and bfloat16 is a float, so RN gives it back */
        if (h == h) ST_CHECKF(__half_as_ushort(__float2half_rn(fh)) == u, "half 0x%04x round trip", u);
        if (b == b) ST_CHECKF(__bfloat16_as_ushort(__float2bfloat16_rn(fb)) == u, "bf16 0x%04x round trip", u);
        /* half -> bfloat16 and back through the converting constructors */
        if (h == h) {
            const __nv_bfloat16 hb = __nv_bfloat16(__ushort_as_half((unsigned short)u));
            ST_CHECKF(__bfloat16_as_ushort(hb) == __bfloat16_as_ushort(__float2bfloat16_rn(fh)), "half 0x%04x -> bf16", u);
        }
    }
}

/* double -> half/bfloat16: the rounding of a double, checked against the same
   neighbour rule on a dense sample (every float with a perturbation below
   the float's ulp, which exercises sticky bits a float cannot carry). */
ST_TEST(fp64_to_fp16_and_bf16) {
    Format H(5), B(8);
    unsigned kh = 0, kb = 0;
    long bad = 0;
    for (uint32_t a = 0x2f000000u; a < 0x7f800000u; a += 0x1003u) {
        const double base = (double)bits_f(a);
        const double ds[3] = {base, nextafter(base, INFINITY), nextafter(base, 0.0)};
        for (double d : ds) {
            while (kh + 1 <= H.inf && H.v[kh + 1] <= d) kh++;
            while (kb + 1 <= B.inf && B.v[kb + 1] <= d) kb++;
            (void)kb;
            for (int fmt = 0; fmt < 2; fmt++) {
                const Format &F = fmt ? B : H;
                unsigned k = 0, lo = 0, hi = F.inf;
                while (hi - lo > 1) { const unsigned mid = (lo + hi) / 2; if (F.v[mid] <= d) lo = mid; else hi = mid; }
                k = lo;
                unsigned rn;
                if (k >= F.inf) rn = F.inf;
                else {
                    const double mid = (F.v[k] + F.v[k + 1]) * 0.5;   /* exact */
                    rn = d < mid ? k : d > mid ? k + 1 : ((k & 1u) ? k + 1 : k);
                }
                const unsigned got = fmt ? __bfloat16_as_ushort(__double2bfloat16(d)) : __half_as_ushort(__double2half(d));
                const unsigned gotn = fmt ? __bfloat16_as_ushort(__double2bfloat16(-d)) : __half_as_ushort(__double2half(-d));
                if (got != rn || gotn != (rn | 0x8000u)) {
                    if (bad++ == 0) ST_CHECKF(false, "%s(%a) = 0x%04x, want 0x%04x", fmt ? "__double2bfloat16" : "__double2half", d, got, rn);
                }
            }
        }
    }
    ST_CHECK(bad == 0);
    ST_CHECK(__half_as_ushort(__double2half(65519.999)) == 0x7bffu);
    ST_CHECK(__half_as_ushort(__double2half(65520.0)) == 0x7c00u);
    ST_CHECK(__half_as_ushort(__double2half(1e-300)) == 0x0000u);
    ST_CHECK(__half_as_ushort(__double2half(-1e-300)) == 0x8000u);
    ST_CHECK(__half_as_ushort(__double2half(ldexp(1.0, -25) * (1 + ldexp(1.0, -52)))) == 0x0001u);
}

/* integer <-> half / bfloat16 */
ST_TEST(integer_conversions) {
    /* every 16-bit integer to half in each mode, against the neighbour rule */
    Format H(5), B(8);
    for (int fmt = 0; fmt < 2; fmt++) {
        const Format &F = fmt ? B : H;
        for (long long i = -70000; i <= 70000; i++) {
            const double d = (double)i, ad = fabs(d);
            unsigned lo = 0, hi = F.inf;
            while (hi - lo > 1) { const unsigned mid = (lo + hi) / 2; if (F.v[mid] <= ad) lo = mid; else hi = mid; }
            const unsigned k = lo;
            unsigned rd, ru, rn;
            if (k >= F.inf) { rd = F.inf - 1; ru = F.inf; rn = F.inf; }
            else {
                rd = k; ru = F.v[k] == ad ? k : k + 1;
                const double mid = (F.v[k] + F.v[k + 1]) * 0.5;
                rn = ad < mid ? k : ad > mid ? k + 1 : ((k & 1u) ? k + 1 : k);
            }
            const unsigned s = i < 0 ? 0x8000u : 0;
            const unsigned want_rn = i == 0 ? 0 : (rn | s), want_rz = i == 0 ? 0 : (rd | s);
            const unsigned want_rd = i == 0 ? 0 : (i < 0 ? (ru | s) : rd), want_ru = i == 0 ? 0 : (i < 0 ? (rd | s) : ru);
            unsigned g[4];
            if (fmt == 0) {
                g[0] = __half_as_ushort(__ll2half_rn(i)); g[1] = __half_as_ushort(__ll2half_rz(i));
                g[2] = __half_as_ushort(__ll2half_rd(i)); g[3] = __half_as_ushort(__ll2half_ru(i));
            } else {
                g[0] = __bfloat16_as_ushort(__ll2bfloat16_rn(i)); g[1] = __bfloat16_as_ushort(__ll2bfloat16_rz(i));
                g[2] = __bfloat16_as_ushort(__ll2bfloat16_rd(i)); g[3] = __bfloat16_as_ushort(__ll2bfloat16_ru(i));
            }
            ST_CHECKF(g[0] == want_rn && g[1] == want_rz && g[2] == want_rd && g[3] == want_ru,
                      "fmt %d: %lld -> %04x %04x %04x %04x, want %04x %04x %04x %04x", fmt, i, g[0], g[1], g[2], g[3],
                      want_rn, want_rz, want_rd, want_ru);
            if (i >= -2147483647LL && i <= 2147483647LL && fmt == 0)
                ST_CHECK(__half_as_ushort(__int2half_rn((int)i)) == g[0]);
        }
    }
    /* 64-bit ones: huge values overflow half, and sticky bits below 2^53 count */
    ST_CHECK(__half_as_ushort(__ull2half_rz(0xffffffffffffffffull)) == 0x7bffu);
    ST_CHECK(__half_as_ushort(__ull2half_rn(0xffffffffffffffffull)) == 0x7c00u);
    ST_CHECK(__bfloat16_as_ushort(__ull2bfloat16_rd((1ull << 63) + 1)) == 0x5f00u);
    ST_CHECK(__bfloat16_as_ushort(__ull2bfloat16_ru((1ull << 63) + 1)) == 0x5f01u);
    ST_CHECK(__bfloat16_as_ushort(__ll2bfloat16_rn(-0x7fffffffffffffffLL - 1)) == 0xdf00u);
    /* half -> integers: rounding, saturation, NaN */
    struct { float f; int rn, rz, rd, ru; } c[] = {
        {2.5f, 2, 2, 2, 3}, {3.5f, 4, 3, 3, 4}, {-2.5f, -2, -2, -3, -2}, {-0.5f, 0, 0, -1, 0}, {0.75f, 1, 0, 0, 1},
        {65504.f, 65504, 65504, 65504, 65504}, {-65504.f, -65504, -65504, -65504, -65504}};
    for (auto &t : c) {
        const __half h = __float2half_rn(t.f);
        ST_CHECKF(__half2int_rn(h) == t.rn && __half2int_rz(h) == t.rz && __half2int_rd(h) == t.rd && __half2int_ru(h) == t.ru,
                  "%g -> %d %d %d %d", t.f, __half2int_rn(h), __half2int_rz(h), __half2int_rd(h), __half2int_ru(h));
        const __nv_bfloat16 b = __float2bfloat16_rn(t.f);
        if (fabsf(t.f) < 256) ST_CHECK(__bfloat162int_rn(b) == t.rn && __bfloat162int_rz(b) == t.rz);
    }
    const __half inf = __ushort_as_half(0x7c00u), ninf = __ushort_as_half(0xfc00u), nan = __ushort_as_half(0x7e00u);
    ST_CHECK(__half2int_rz(inf) == 2147483647 && __half2int_rz(ninf) == (-2147483647 - 1) && __half2int_rz(nan) == 0);
    ST_CHECK(__half2uint_rz(inf) == 0xffffffffu && __half2uint_rz(ninf) == 0 && __half2uint_rz(nan) == 0);
    ST_CHECK(__half2short_rz(__float2half(40000.f)) == 32767 && __half2short_rz(__float2half(-40000.f)) == -32768);
    ST_CHECK(__half2ushort_rz(inf) == 0xffffu && __half2ushort_rz(__float2half(-3.f)) == 0);
    ST_CHECK(__half2char_rz(__float2half(300.f)) == 127 && __half2char_rz(__float2half(-300.f)) == -128 && __half2char_rz(nan) == 0);
    ST_CHECK(__half2uchar_rz(__float2half(300.f)) == 255 && __half2uchar_rz(__float2half(-3.f)) == 0);
    ST_CHECK(__half2ll_rz(nan) == (long long)0x8000000000000000ull && __half2ull_rz(nan) == 0x8000000000000000ull);
    ST_CHECK(__half2ll_rz(inf) == 0x7fffffffffffffffLL && __half2ll_rz(ninf) == (long long)0x8000000000000000ull);
    ST_CHECK(__half2ull_rz(inf) == 0xffffffffffffffffull && __half2ull_rz(ninf) == 0);
    ST_CHECK(__bfloat162int_rz(__float2bfloat16(3e9f)) == 2147483647 && __bfloat162uint_rz(__float2bfloat16(-1.f)) == 0);
    /* the C++ conversions: float/double/int constructors round to nearest, casts to integers truncate */
    const __half h1 = 2.75f, h2 = 3.0, h3 = 70000;
    ST_CHECK((float)h1 == 2.75f && (float)h2 == 3.0f && __half_as_ushort(h3) == 0x7c00u);
    ST_CHECK((int)__half(-2.75f) == -2 && (unsigned)__half(2.75f) == 2u && (long long)__half(-7.5f) == -7);
    ST_CHECK((bool)__half(-0.0f) == false && (bool)__half(0.001f) == true);
}

/* the vector forms and data movement */
ST_TEST(half2_movement) {
    const __half2 v = __floats2half2_rn(1.5f, -2.25f);
    ST_CHECK(__low2float(v) == 1.5f && __high2float(v) == -2.25f);
    const float2 f = __half22float2(v);
    ST_CHECK(f.x == 1.5f && f.y == -2.25f);
    const __half2 w = __lowhigh2highlow(v);
    ST_CHECK(__low2float(w) == -2.25f && __high2float(w) == 1.5f);
    ST_CHECK(__low2float(__lows2half2(v, w)) == 1.5f && __high2float(__lows2half2(v, w)) == -2.25f);
    ST_CHECK(__low2float(__highs2half2(v, w)) == -2.25f && __high2float(__highs2half2(v, w)) == 1.5f);
    ST_CHECK(__half2float(__low2half(v)) == 1.5f && __half2float(__high2half(v)) == -2.25f);
    const __half2_raw r = v;
    ST_CHECK(r.x == 0x3e00u && r.y == 0xc080u);
    float2 in; in.x = 0.1f; in.y = 65520.f;
    const __half2 c = __float22half2_rn(in);
    ST_CHECK(__half_as_ushort(c.x) == 0x2e66u && __half_as_ushort(c.y) == 0x7c00u);
    ST_CHECK(__half_as_ushort(__float2half2_rn(1.f).y) == 0x3c00u);
    const __nv_bfloat162 b = __floats2bfloat162_rn(1.5f, -2.25f);
    const __nv_bfloat162_raw br = b;
    ST_CHECK(br.x == 0x3fc0u && br.y == 0xc010u);
    ST_CHECK(__bfloat1622float2(b).y == -2.25f && __low2float(__lowhigh2highlow(b)) == -2.25f);
    ST_CHECK(sizeof(__half) == 2 && alignof(__half) == 2 && sizeof(__half2) == 4 && alignof(__half2) == 4);
    ST_CHECK(sizeof(__nv_bfloat16) == 2 && sizeof(__nv_bfloat162) == 4 && alignof(__nv_bfloat162) == 4);
    ST_CHECK(__half_as_ushort(CUDART_INF_FP16) == 0x7c00u && __bfloat16_as_ushort(CUDART_INF_BF16) == 0x7f80u);
    ST_CHECK(__half_as_short(__short_as_half((short)-1)) == -1 && __bfloat16_as_short(__short_as_bfloat16((short)-2)) == -2);
}

int main() {
    ST_RUN(fp32_to_fp16_all_patterns_all_modes);
    ST_RUN(fp32_to_bf16_all_patterns_all_modes);
    ST_RUN(fp16_and_bf16_to_fp32_all_patterns);
    ST_RUN(fp64_to_fp16_and_bf16);
    ST_RUN(integer_conversions);
    ST_RUN(half2_movement);
    return st_summary();
}
