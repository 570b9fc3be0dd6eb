/* cublas_gemm.cu - self-test of the cuBLAS GEMM family, written from the
   cuBLAS documentation: every type combination of the cublasGemmEx table
   against a float64 reference, odd sizes, all transposes, ld > rows,
   strided and pointer-array batches, beta == 0 with NaN in C, device
   pointer mode, TF32 / FP16 / BF16 rounding, argument checks, and (last,
   since the error is sticky) a host pointer passed as A faulting the device.

   An ordinary CUDA program: it builds with the real nvcc as well.

   Tolerances (u = unit roundoff of a format: 2^-24 FP32, 2^-53 FP64,
   2^-11 FP16, 2^-8 BF16): with s = |alpha| sum_p |a_ip b_pj| + |beta c_ij|,
   |got - ref| <= (k + 4) * u_acc * s + u_out * |ref| + tiny, where the
   reference applies the documented input rounding of the FAST types
   itself, so only accumulation order and the output rounding remain. */
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "selftest.h"

#ifdef __CUEMU__
#include <cuemu.h>
#endif

/* ---- number formats (round to nearest even) ---------------------------- */
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static float h2f(uint16_t h) {
    uint32_t s = uint32_t(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 31) return bitsf(s | 0x7f800000u | (m << 13));
    if (e) return bitsf(s | ((e + 112) << 23) | (m << 13));
    float v = ldexpf(float(m), -24);
    return s ? -v : v;
}
static uint16_t f2h(float f) {     /* via double: exact for the values used here */
    if (isnan(f)) return 0x7fff;
    uint16_t s = signbit(f) ? 0x8000 : 0;
    double a = fabs(double(f));
    if (a >= 65520.0) return s | 0x7c00;
    int e;
    frexp(a, &e);                   /* a = m * 2^e, m in [0.5, 1) */
    int q = e - 11 < -24 ? -24 : e - 11;   /* exponent of the ulp */
    double r = nearbyint(ldexp(a, -q)); /* ties to even in the default mode */
    double v = ldexp(r, q);
    /* re-encode v (representable) */
    if (v == 0) return s;
    int ve;
    double vm = frexp(v, &ve);
    if (ve - 1 < -14) return s | uint16_t(ldexp(v, 24));
    return s | uint16_t(((ve - 1 + 15) << 10) | (uint32_t(ldexp(vm, 11)) & 0x3ff));
}
static float bf2f(uint16_t h) { return bitsf(uint32_t(h) << 16); }
static uint16_t f2bf(float f) {
    uint32_t x = fbits(f);
    if (isnan(f)) return 0x7fff;
    x += 0x7fffu + ((x >> 16) & 1);
    return uint16_t(x >> 16);
}
static float tf32(float f) {
    uint32_t x = fbits(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f;
    x += 0xfffu + ((x >> 13) & 1);
    return bitsf(x & 0xffffe000u);
}

enum Rnd { R_NONE, R_TF32, R_F16, R_BF16 };
static float round_in(float v, Rnd r) {
    switch (r) {
    case R_TF32: return tf32(v);
    case R_F16: return h2f(f2h(v));
    case R_BF16: return bf2f(f2bf(v));
    default: return v;
    }
}

/* ---- host matrices in any storage type ----------------------------------- */
static size_t tsize(cudaDataType t) {
    switch (t) {
    case CUDA_R_64F: return 8;
    case CUDA_R_32F: case CUDA_R_32I: return 4;
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    default: return 1;
    }
}

struct HMat {
    int rows = 0, cols = 0, ld = 0;
    cudaDataType type = CUDA_R_32F;
    std::vector<unsigned char> b;
    HMat() {}
    HMat(int r, int c, int ld_, cudaDataType t) : rows(r), cols(c), ld(ld_), type(t), b(size_t(ld_) * c * tsize(t), 0) {}
    size_t bytes() const { return b.size(); }
    double get(int r, int c) const {
        const unsigned char *p = &b[(size_t(r) + size_t(c) * ld) * tsize(type)];
        switch (type) {
        case CUDA_R_64F: { double v; memcpy(&v, p, 8); return v; }
        case CUDA_R_32F: { float v; memcpy(&v, p, 4); return v; }
        case CUDA_R_16F: { uint16_t v; memcpy(&v, p, 2); return h2f(v); }
        case CUDA_R_16BF: { uint16_t v; memcpy(&v, p, 2); return bf2f(v); }
        case CUDA_R_8I: return double(int8_t(*p));
        case CUDA_R_32I: { int32_t v; memcpy(&v, p, 4); return v; }
        default: return 0;
        }
    }
    void set(int r, int c, double v) {
        unsigned char *p = &b[(size_t(r) + size_t(c) * ld) * tsize(type)];
        switch (type) {
        case CUDA_R_64F: memcpy(p, &v, 8); break;
        case CUDA_R_32F: { float f = float(v); memcpy(p, &f, 4); break; }
        case CUDA_R_16F: { uint16_t h = f2h(float(v)); memcpy(p, &h, 2); break; }
        case CUDA_R_16BF: { uint16_t h = f2bf(float(v)); memcpy(p, &h, 2); break; }
        case CUDA_R_8I: *p = (unsigned char)int8_t(lrint(v)); break;
        case CUDA_R_32I: { int32_t i = int32_t(lrint(v)); memcpy(p, &i, 4); break; }
        default: break;
        }
    }
};

static uint32_t g_seed = 20240611u;
static double rnd_val(cudaDataType t) {
    g_seed = g_seed * 1664525u + 1013904223u;
    double u = ((g_seed >> 8) & 0xffff) / 65536.0;
    bool neg = (g_seed >> 28) & 1;
    if (t == CUDA_R_8I || t == CUDA_R_32I) {
        int v = 1 + int(u * 100);
        return neg ? -v : v;
    }
    double v = 0.25 + 0.75 * u;   /* non-zero, |v| in [0.25, 1) */
    return neg ? -v : v;
}
static void fill(HMat &M, double nan_fill = 0) {
    for (int c = 0; c < M.cols; ++c)
        for (int r = 0; r < M.ld; ++r) M.set(r, c, r < M.rows ? rnd_val(M.type) : (nan_fill != 0 ? nan_fill : 7.0));
}
static void fill_nan(HMat &M) {
    for (int c = 0; c < M.cols; ++c)
        for (int r = 0; r < M.ld; ++r) M.set(r, c, M.type == CUDA_R_32I ? 123456 : NAN);
}

static void *to_dev(const HMat &M) {
    void *d = nullptr;
    cudaMalloc(&d, M.bytes() ? M.bytes() : 1);
    cudaMemcpy(d, M.b.data(), M.bytes(), cudaMemcpyHostToDevice);
    return d;
}
static void from_dev(HMat &M, const void *d) { cudaMemcpy(M.b.data(), d, M.bytes(), cudaMemcpyDeviceToHost); }

/* ---- one GEMM case ---------------------------------------------------------- */
struct Case {
    int m, n, k;
    cublasOperation_t ta, tb;
    int pad;                        /* ld = rows + pad */
    cudaDataType ab, c;             /* Atype = Btype, Ctype */
    cublasComputeType_t compute;
    double alpha, beta;
    bool nan_c;                     /* C full of NaN (beta must be 0) */
};

static double unit(cudaDataType t) {
    switch (t) {
    case CUDA_R_64F: return ldexp(1.0, -53);
    case CUDA_R_32F: return ldexp(1.0, -24);
    case CUDA_R_16F: return ldexp(1.0, -11);
    case CUDA_R_16BF: return ldexp(1.0, -8);
    default: return 0;
    }
}
static double acc_unit(cublasComputeType_t ct) {
    switch (ct) {
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: return ldexp(1.0, -53);
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: return ldexp(1.0, -11);
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: return 0;
    default: return ldexp(1.0, -24);
    }
}

static int g_major = 9;             /* compute capability of device 0 */

/* The rounding the documentation gives each compute type (on a device that
   has the tensor cores for it). */
static Rnd doc_rounding(cublasComputeType_t ct) {
    if (ct == CUBLAS_COMPUTE_32F_FAST_TF32 && g_major >= 8) return R_TF32;
    if (ct == CUBLAS_COMPUTE_32F_FAST_16F && g_major >= 7) return R_F16;
    if (ct == CUBLAS_COMPUTE_32F_FAST_16BF && g_major >= 8) return R_BF16;
    return R_NONE;
}

static double opget(const HMat &M, cublasOperation_t op, int r, int c) {
    return op == CUBLAS_OP_N ? M.get(r, c) : M.get(c, r);
}

/* Compares C (after) against the reference computed from A, B, C (before). */
static bool check_result(const Case &cs, const HMat &A, const HMat &B, const HMat &C0, const HMat &C1, Rnd rnd,
                         double u_acc, int *bad_i, int *bad_j, double *got, double *want) {
    for (int j = 0; j < cs.n; ++j)
        for (int i = 0; i < cs.m; ++i) {
            double s = 0, sa = 0;
            for (int p = 0; p < cs.k; ++p) {
                double a = round_in(float(opget(A, cs.ta, i, p)), rnd);
                double b = round_in(float(opget(B, cs.tb, p, j)), rnd);
                if (A.type == CUDA_R_64F) { a = opget(A, cs.ta, i, p); b = opget(B, cs.tb, p, j); }
                s += a * b;
                sa += fabs(a * b);
            }
            double ref = cs.alpha * s, mag = fabs(cs.alpha) * sa;
            if (cs.beta != 0) { ref += cs.beta * C0.get(i, j); mag += fabs(cs.beta * C0.get(i, j)); }
            double tol = (cs.k + 4) * u_acc * mag + unit(C1.type) * fabs(ref) + 1e-300;
            double g = C1.get(i, j);
            if (!(fabs(g - ref) <= tol)) {
                *bad_i = i; *bad_j = j; *got = g; *want = ref;
                return false;
            }
        }
    /* padding rows below m are untouched */
    for (int j = 0; j < cs.n; ++j)
        for (int i = cs.m; i < C1.ld; ++i)
            if (memcmp(&C1.b[(size_t(i) + size_t(j) * C1.ld) * tsize(C1.type)],
                       &C0.b[(size_t(i) + size_t(j) * C0.ld) * tsize(C0.type)], tsize(C1.type)) != 0) {
                *bad_i = i; *bad_j = j; *got = C1.get(i, j); *want = C0.get(i, j);
                return false;
            }
    return true;
}

/* Host scalars in the scale type of a compute type. */
struct Scalars { float f[2]; double d[2]; uint16_t h[2]; int32_t i[2]; };
static const void *scalar_ptr(Scalars &s, cublasComputeType_t ct, int which, double v) {
    switch (ct) {
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: s.d[which] = v; return &s.d[which];
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: s.h[which] = f2h(float(v)); return &s.h[which];
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: s.i[which] = int32_t(v); return &s.i[which];
    default: s.f[which] = float(v); return &s.f[which];
    }
}

static char g_msg[256];

/* Runs cublasGemmEx for the case; returns "" or what went wrong. */
static const char *run_case(cublasHandle_t h, const Case &cs) {
    int ra = cs.ta == CUBLAS_OP_N ? cs.m : cs.k, ca = cs.ta == CUBLAS_OP_N ? cs.k : cs.m;
    int rb = cs.tb == CUBLAS_OP_N ? cs.k : cs.n, cb = cs.tb == CUBLAS_OP_N ? cs.n : cs.k;
    bool i32 = cs.compute == CUBLAS_COMPUTE_32I || cs.compute == CUBLAS_COMPUTE_32I_PEDANTIC;
    int pad = cs.pad;
    if (i32) pad += (4 - (ra + pad) % 4) % 4;   /* 32I: lda, ldb multiples of 4 */
    HMat A(ra, ca, ra + pad, cs.ab);
    int padb = cs.pad;
    if (i32) padb += (4 - (rb + padb) % 4) % 4;
    HMat B(rb, cb, rb + padb, cs.ab), C0(cs.m, cs.n, cs.m + cs.pad, cs.c);
    fill(A);
    fill(B);
    if (cs.nan_c) fill_nan(C0); else fill(C0);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C0);
    Scalars s;
    const void *al = scalar_ptr(s, cs.compute, 0, cs.alpha), *be = scalar_ptr(s, cs.compute, 1, cs.beta);
    cublasStatus_t st = cublasGemmEx(h, cs.ta, cs.tb, cs.m, cs.n, cs.k, al, dA, cs.ab, A.ld, dB, cs.ab, B.ld, be, dC,
                                     cs.c, C0.ld, cs.compute, CUBLAS_GEMM_DEFAULT);
    HMat C1 = C0;
    from_dev(C1, dC);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(g_msg, sizeof g_msg, "status %d", int(st));
        return g_msg;
    }
    int bi, bj;
    double got, want;
    if (!check_result(cs, A, B, C0, C1, doc_rounding(cs.compute), acc_unit(cs.compute), &bi, &bj, &got, &want)) {
        snprintf(g_msg, sizeof g_msg, "C(%d,%d) = %.9g, want %.9g", bi, bj, got, want);
        return g_msg;
    }
    return "";
}

static const cublasOperation_t kOps[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
static const int kShapes[][3] = {{1, 1, 1}, {3, 3, 3}, {17, 5, 9}, {1, 33, 17}, {33, 17, 65}, {65, 31, 47}};
static cublasHandle_t g_h;

/* ---- tests ------------------------------------------------------------------ */

ST_TEST(sgemm_shapes_ops_ld) {
    for (const auto &sh : kShapes)
        for (cublasOperation_t ta : kOps)
            for (cublasOperation_t tb : kOps)
                for (int pad : {0, 3}) {
                    Case cs = {sh[0], sh[1], sh[2], ta, tb, pad, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0.75,
                               -0.5, false};
                    const char *e = run_case(g_h, cs);
                    ST_CHECKF(!*e, "%dx%dx%d ta=%d tb=%d pad=%d: %s", sh[0], sh[1], sh[2], ta, tb, pad, e);
                }
}

ST_TEST(sgemm_typed_matches_reference) {
    /* cublasSgemm / cublasDgemm directly (not through GemmEx). */
    int m = 17, n = 13, k = 29;
    HMat A(k, m, k + 2, CUDA_R_32F), B(k, n, k, CUDA_R_32F), C(m, n, m + 1, CUDA_R_32F);
    fill(A); fill(B); fill(C);
    float *dA = (float *)to_dev(A), *dB = (float *)to_dev(B), *dC = (float *)to_dev(C);
    float al = 1.25f, be = 0.5f;
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &al, dA, A.ld, dB, B.ld, &be, dC, C.ld) ==
             CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    Case cs = {m, n, k, CUBLAS_OP_T, CUBLAS_OP_N, 0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1.25, 0.5, false};
    int bi, bj; double got, want;
    ST_CHECKF(check_result(cs, A, B, C, C1, R_NONE, ldexp(1.0, -24), &bi, &bj, &got, &want), "C(%d,%d)=%g want %g",
              bi, bj, got, want);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);

    HMat Ad(m, k, m, CUDA_R_64F), Bd(n, k, n + 4, CUDA_R_64F), Cd(m, n, m, CUDA_R_64F);
    fill(Ad); fill(Bd); fill(Cd);
    double *eA = (double *)to_dev(Ad), *eB = (double *)to_dev(Bd), *eC = (double *)to_dev(Cd);
    double dal = -0.5, dbe = 2;
    ST_CHECK(cublasDgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &dal, eA, m, eB, Bd.ld, &dbe, eC, m) ==
             CUBLAS_STATUS_SUCCESS);
    HMat Cd1 = Cd;
    from_dev(Cd1, eC);
    Case cd = {m, n, k, CUBLAS_OP_N, CUBLAS_OP_T, 0, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, -0.5, 2, false};
    ST_CHECKF(check_result(cd, Ad, Bd, Cd, Cd1, R_NONE, ldexp(1.0, -53), &bi, &bj, &got, &want),
              "D: C(%d,%d)=%.17g want %.17g", bi, bj, got, want);
    cudaFree(eA); cudaFree(eB); cudaFree(eC);
}

ST_TEST(gemmex_every_documented_combination) {
    struct Row { cublasComputeType_t ct; cudaDataType ab, c; };
    const Row rows[] = {
        {CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F},        {CUBLAS_COMPUTE_16F_PEDANTIC, CUDA_R_16F, CUDA_R_16F},
        {CUBLAS_COMPUTE_32I, CUDA_R_8I, CUDA_R_32I},         {CUBLAS_COMPUTE_32I_PEDANTIC, CUDA_R_8I, CUDA_R_32I},
        {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_16BF},      {CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_16F},
        {CUBLAS_COMPUTE_32F, CUDA_R_8I, CUDA_R_32F},         {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_32F},        {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16BF, CUDA_R_16BF}, {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16F, CUDA_R_16F},
        {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_8I, CUDA_R_32F},    {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16BF, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16F, CUDA_R_32F},   {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F, CUDA_R_32F},   {CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F},  {CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F},        {CUBLAS_COMPUTE_64F_PEDANTIC, CUDA_R_64F, CUDA_R_64F},
    };
    for (const Row &r : rows)
        for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T})
            for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T}) {
                bool integer = r.ct == CUBLAS_COMPUTE_32I || r.ct == CUBLAS_COMPUTE_32I_PEDANTIC;
                Case cs = {65, 31, 47, ta, tb, 3, r.ab, r.c, r.ct, integer ? 2 : 0.75, integer ? -1 : -0.5, false};
                if (r.ct == CUBLAS_COMPUTE_16F || r.ct == CUBLAS_COMPUTE_16F_PEDANTIC) cs.k = 9; /* half sums */
                const char *e = run_case(g_h, cs);
                ST_CHECKF(!*e, "compute %d A %d C %d ta=%d tb=%d: %s", r.ct, r.ab, r.c, ta, tb, e);
            }
}

ST_TEST(beta_zero_does_not_read_c) {
    /* beta == 0: C need not be valid input; NaN there must not propagate. */
    struct Row { cublasComputeType_t ct; cudaDataType ab, c; };
    const Row rows[] = {{CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F}, {CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_16F},
                        {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_16BF}, {CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F},
                        {CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F}, {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F}};
    for (const Row &r : rows) {
        Case cs = {33, 17, 5, CUBLAS_OP_N, CUBLAS_OP_T, 1, r.ab, r.c, r.ct, 1.0, 0.0, true};
        const char *e = run_case(g_h, cs);
        ST_CHECKF(!*e, "compute %d C %d: %s", r.ct, r.c, e);
    }
}

ST_TEST(k_zero_and_empty) {
    /* k == 0: C = beta * C (reference BLAS); m == 0 or n == 0: nothing. */
    HMat C(3, 2, 3, CUDA_R_32F);
    fill(C);
    float *dC = (float *)to_dev(C);
    float al = 5, be = 2;
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 0, &al, nullptr, 3, nullptr, 1, &be, dC, 3) ==
             CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 3; ++i) ST_CHECK(C1.get(i, j) == 2 * C.get(i, j));
    be = 0;
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 0, &al, nullptr, 3, nullptr, 1, &be, dC, 3) ==
             CUBLAS_STATUS_SUCCESS);
    from_dev(C1, dC);
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 3; ++i) ST_CHECK(C1.get(i, j) == 0);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 4, &al, nullptr, 1, nullptr, 4, &be, dC, 1) ==
             CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 0, 4, &al, nullptr, 3, nullptr, 4, &be, dC, 3) ==
             CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(dC);
}

ST_TEST(device_pointer_mode) {
    int m = 9, n = 7, k = 11;
    HMat A(m, k, m, CUDA_R_32F), B(k, n, k, CUDA_R_32F), C(m, n, m, CUDA_R_32F);
    fill(A); fill(B); fill_nan(C);
    float *dA = (float *)to_dev(A), *dB = (float *)to_dev(B), *dC = (float *)to_dev(C), *dS;
    float sc[2] = {-1.5f, 0.0f};
    cudaMalloc((void **)&dS, sizeof sc);
    cudaMemcpy(dS, sc, sizeof sc, cudaMemcpyHostToDevice);
    ST_CHECK(cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dS, dA, m, dB, k, dS + 1, dC, m) ==
             CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    Case cs = {m, n, k, CUBLAS_OP_N, CUBLAS_OP_N, 0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1.5, 0, true};
    int bi, bj; double got, want;
    ST_CHECKF(check_result(cs, A, B, C, C1, R_NONE, ldexp(1.0, -24), &bi, &bj, &got, &want), "C(%d,%d)=%g want %g",
              bi, bj, got, want);
    /* the scalars are read when the work runs, not at the call */
    fill(C);
    cudaMemcpy(dC, C.b.data(), C.bytes(), cudaMemcpyHostToDevice);
    float late[2] = {2.0f, 1.0f};
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dS, dA, m, dB, k, dS + 1, dC, m) ==
             CUBLAS_STATUS_SUCCESS);
    cudaMemcpyAsync(dS, late, sizeof late, cudaMemcpyHostToDevice, 0);  /* same stream: after the GEMM */
    from_dev(C1, dC);
    Case cs2 = {m, n, k, CUBLAS_OP_N, CUBLAS_OP_N, 0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1.5, 0, false};
    ST_CHECK(check_result(cs2, A, B, C, C1, R_NONE, ldexp(1.0, -24), &bi, &bj, &got, &want));
    ST_CHECK(cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_HOST) == CUBLAS_STATUS_SUCCESS);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dS);
}

/* 1x1x1 products with chosen values: what TF32 (round to nearest even,
   10 mantissa bits) and FP32 give differ. */
static float one_product(cublasComputeType_t ct, float a, float b, bool sgemm = false) {
    float *d;
    cudaMalloc((void **)&d, 3 * sizeof(float));
    float h[3] = {a, b, 0};
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    float al = 1, be = 0;
    if (sgemm) cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &al, d, 1, d + 1, 1, &be, d + 2, 1);
    else cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &al, d, CUDA_R_32F, 1, d + 1, CUDA_R_32F, 1, &be, d + 2,
                      CUDA_R_32F, 1, ct, CUBLAS_GEMM_DEFAULT);
    float r;
    cudaMemcpy(&r, d + 2, sizeof r, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return r;
}

ST_TEST(tf32_rounding_visible) {
    const float x = 1.0f + ldexpf(1, -12);        /* below half a TF32 ulp: to 1 */
    const float tie_even = 1.0f + ldexpf(1, -11); /* a tie, mantissa even: to 1 */
    const float tie_odd = 1.0f + 3 * ldexpf(1, -11); /* a tie, odd: up to 1 + 2^-9 */
    bool tf = g_major >= 8;
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F, x, 1) == x);
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_TF32, x, 1) == (tf ? 1.0f : x));
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_TF32, tie_even, 1) == (tf ? 1.0f : tie_even));
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_TF32, tie_odd, 1) == (tf ? 1.0f + ldexpf(1, -9) : tie_odd));
    /* both inputs are rounded */
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_TF32, x, x) == (tf ? 1.0f : x * x));
    /* the math mode: CUBLAS_TF32_TENSOR_OP_MATH makes FP32 routines TF32 */
    ST_CHECK(cublasSetMathMode(g_h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F, x, 1, true) == (tf ? 1.0f : x));
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F, x, 1) == (tf ? 1.0f : x));
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_PEDANTIC, x, 1) == x);
    ST_CHECK(cublasSetMathMode(g_h, CUBLAS_PEDANTIC_MATH) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F, x, 1, true) == x);
    ST_CHECK(cublasSetMathMode(g_h, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F, x, 1, true) == x);
    /* FAST_16F / FAST_16BF round the inputs to those formats */
    const float y = 1.0f + ldexpf(1, -10) + ldexpf(1, -12);
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_16F, y, 1) == (g_major >= 7 ? h2f(f2h(y)) : y));
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_16BF, y, 1) == (g_major >= 8 ? bf2f(f2bf(y)) : y));
    ST_CHECK(one_product(CUBLAS_COMPUTE_32F_FAST_16F, 70000.0f, 1) == (g_major >= 7 ? INFINITY : 70000.0f));
}

ST_TEST(fp16_bf16_output_rounding) {
    /* alpha * 1 * 1 with alpha at and next to a tie of the output format */
    uint16_t *d;
    cudaMalloc((void **)&d, 3 * sizeof(uint16_t));
    struct Row { cudaDataType t; uint16_t one; float alpha; uint16_t want; };
    const Row rows[] = {
        {CUDA_R_16F, 0x3c00, 1.0f + ldexpf(1, -11), 0x3c00},      /* tie -> even */
        {CUDA_R_16F, 0x3c00, 1.0f + 3 * ldexpf(1, -11), 0x3c02},  /* tie -> even (up) */
        {CUDA_R_16F, 0x3c00, 1.0f + ldexpf(1, -11) + ldexpf(1, -20), 0x3c01},
        {CUDA_R_16F, 0x3c00, 65520.0f, 0x7c00},                    /* overflow -> Inf */
        {CUDA_R_16BF, 0x3f80, 1.0f + ldexpf(1, -8), 0x3f80},
        {CUDA_R_16BF, 0x3f80, 1.0f + 3 * ldexpf(1, -8), 0x3f82},
        {CUDA_R_16BF, 0x3f80, 1.0f + ldexpf(1, -8) + ldexpf(1, -16), 0x3f81},
    };
    for (const Row &r : rows) {
        uint16_t h[3] = {r.one, r.one, 0};
        cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
        float be = 0;
        ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &r.alpha, d, r.t, 1, d + 1, r.t, 1, &be, d + 2,
                              r.t, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
        uint16_t got;
        cudaMemcpy(&got, d + 2, 2, cudaMemcpyDeviceToHost);
        ST_CHECKF(got == r.want, "type %d alpha %.9g: 0x%04x, want 0x%04x", r.t, r.alpha, got, r.want);
    }
    cudaFree(d);
}

ST_TEST(hgemm_half_arithmetic) {
    int m = 5, n = 4, k = 6;
    HMat A(m, k, m, CUDA_R_16F), B(k, n, k, CUDA_R_16F), C(m, n, m, CUDA_R_16F);
    fill(A); fill(B); fill(C);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C);
    uint16_t al = f2h(0.5f), be = f2h(2.0f);
    ST_CHECK(cublasHgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, (const __half *)&al, (const __half *)dA, m,
                         (const __half *)dB, k, (const __half *)&be, (__half *)dC, m) == CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    Case cs = {m, n, k, CUBLAS_OP_N, CUBLAS_OP_N, 0, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, 0.5, 2, false};
    int bi, bj; double got, want;
    ST_CHECKF(check_result(cs, A, B, C, C1, R_NONE, ldexp(1.0, -11), &bi, &bj, &got, &want), "C(%d,%d)=%g want %g",
              bi, bj, got, want);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

ST_TEST(strided_batched) {
    int m = 7, n = 5, k = 9, batch = 3;
    long long sA = m * k + 5, sB = 0 /* one B for all */, sC = m * n + 3;
    HMat A(m, int(sA * batch / m) + 1, m, CUDA_R_32F), B(k, n, k, CUDA_R_32F), C(m, int(sC * batch / m) + 1, m, CUDA_R_32F);
    fill(A); fill(B); fill(C);
    float *dA = (float *)to_dev(A), *dB = (float *)to_dev(B), *dC = (float *)to_dev(C);
    float al = 0.5f, be = -1;
    ST_CHECK(cublasSgemmStridedBatched(g_h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, dA, m, sA, dB, k, sB, &be, dC, m,
                                       sC, batch) == CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    const float *a = (const float *)A.b.data(), *b = (const float *)B.b.data();
    const float *c0 = (const float *)C.b.data(), *c1 = (const float *)C1.b.data();
    for (int t = 0; t < batch; ++t)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) {
                double s = 0, mag = 0;
                for (int p = 0; p < k; ++p) {
                    s += double(a[t * sA + i + p * m]) * b[p + j * k];
                    mag += fabs(double(a[t * sA + i + p * m]) * b[p + j * k]);
                }
                double ref = 0.5 * s - c0[t * sC + i + j * m];
                ST_CHECK(fabs(c1[t * sC + i + j * m] - ref) <= (k + 4) * ldexp(1.0, -24) * (mag + 2) + 1e-30);
            }
    /* elements between the batches are untouched */
    for (int t = 0; t < batch; ++t)
        for (long long e = t * sC + m * n; e < (t + 1) * sC && e < (long long)(C.bytes() / 4); ++e) ST_CHECK(c1[e] == c0[e]);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);

    /* GemmStridedBatchedEx with FP16 in, FP32 out, transposes */
    HMat Ah(k, m * batch, k, CUDA_R_16F), Bh(n, k * batch, n, CUDA_R_16F), Ch(m, n * batch, m, CUDA_R_32F);
    fill(Ah); fill(Bh); fill(Ch);
    void *eA = to_dev(Ah), *eB = to_dev(Bh), *eC = to_dev(Ch);
    float one = 1, zero = 0;
    ST_CHECK(cublasGemmStridedBatchedEx(g_h, CUBLAS_OP_T, CUBLAS_OP_T, m, n, k, &one, eA, CUDA_R_16F, k, (long long)k * m,
                                        eB, CUDA_R_16F, n, (long long)n * k, &zero, eC, CUDA_R_32F, m, (long long)m * n,
                                        batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    HMat Ch1 = Ch;
    from_dev(Ch1, eC);
    for (int t = 0; t < batch; ++t)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) {
                double s = 0, mag = 0;
                for (int p = 0; p < k; ++p) {
                    double v = Ah.get(p, t * m + i) * Bh.get(j, t * k + p);
                    s += v;
                    mag += fabs(v);
                }
                ST_CHECK(fabs(Ch1.get(i, t * n + j) - s) <= (k + 4) * ldexp(1.0, -24) * mag);
            }
    cudaFree(eA); cudaFree(eB); cudaFree(eC);
}

ST_TEST(pointer_array_batched) {
    int m = 6, n = 3, k = 8, batch = 4;
    std::vector<HMat> A, B, C;
    std::vector<void *> dA, dB, dC;
    for (int t = 0; t < batch; ++t) {
        A.emplace_back(m, k, m, CUDA_R_32F); B.emplace_back(k, n, k, CUDA_R_32F); C.emplace_back(m, n, m, CUDA_R_32F);
        fill(A[t]); fill(B[t]); fill(C[t]);
        dA.push_back(to_dev(A[t])); dB.push_back(to_dev(B[t])); dC.push_back(to_dev(C[t]));
    }
    void **pA, **pB, **pC;   /* the pointer arrays live in device memory */
    cudaMalloc((void **)&pA, batch * sizeof(void *));
    cudaMalloc((void **)&pB, batch * sizeof(void *));
    cudaMalloc((void **)&pC, batch * sizeof(void *));
    cudaMemcpy(pA, dA.data(), batch * sizeof(void *), cudaMemcpyHostToDevice);
    cudaMemcpy(pB, dB.data(), batch * sizeof(void *), cudaMemcpyHostToDevice);
    cudaMemcpy(pC, dC.data(), batch * sizeof(void *), cudaMemcpyHostToDevice);
    float al = 2, be = 0.25f;
    ST_CHECK(cublasSgemmBatched(g_h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, (const float *const *)pA, m,
                                (const float *const *)pB, k, &be, (float *const *)pC, m, batch) == CUBLAS_STATUS_SUCCESS);
    Case cs = {m, n, k, CUBLAS_OP_N, CUBLAS_OP_N, 0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 0.25, false};
    for (int t = 0; t < batch; ++t) {
        HMat C1 = C[t];
        from_dev(C1, dC[t]);
        int bi, bj; double got, want;
        ST_CHECKF(check_result(cs, A[t], B[t], C[t], C1, R_NONE, ldexp(1.0, -24), &bi, &bj, &got, &want),
                  "batch %d C(%d,%d)=%g want %g", t, bi, bj, got, want);
        cudaMemcpy(dC[t], C[t].b.data(), C[t].bytes(), cudaMemcpyHostToDevice);
    }
    ST_CHECK(cublasGemmBatchedEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, (const void *const *)pA, CUDA_R_32F, m,
                                 (const void *const *)pB, CUDA_R_32F, k, &be, pC, CUDA_R_32F, m, batch,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    for (int t = 0; t < batch; ++t) {
        HMat C1 = C[t];
        from_dev(C1, dC[t]);
        int bi, bj; double got, want;
        ST_CHECK(check_result(cs, A[t], B[t], C[t], C1, R_NONE, ldexp(1.0, -24), &bi, &bj, &got, &want));
        cudaFree(dA[t]); cudaFree(dB[t]); cudaFree(dC[t]);
    }
    cudaFree(pA); cudaFree(pB); cudaFree(pC);
}

ST_TEST(legacy_cudadatatype_compute_overload) {
    /* C++: the compute type may still be given as a cudaDataType. */
    Case cs = {9, 4, 3, CUBLAS_OP_N, CUBLAS_OP_N, 0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1, 0, false};
    HMat A(9, 3, 9, CUDA_R_32F), B(3, 4, 3, CUDA_R_32F), C(9, 4, 9, CUDA_R_32F);
    fill(A); fill(B); fill(C);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C);
    float al = 1, be = 0;
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 9, 4, 3, &al, dA, CUDA_R_32F, 9, dB, CUDA_R_32F, 3, &be, dC,
                          CUDA_R_32F, 9, CUDA_R_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    int bi, bj; double got, want;
    ST_CHECK(check_result(cs, A, B, C, C1, R_NONE, ldexp(1.0, -24), &bi, &bj, &got, &want));
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

ST_TEST(argument_checks) {
    float *d;
    cudaMalloc((void **)&d, 4096);
    float al = 1, be = 0, be1 = 1;
    const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE, NS = CUBLAS_STATUS_NOT_SUPPORTED;
    /* lda < max(1, m) for op N, < max(1, k) otherwise; ldb, ldc likewise */
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, &al, d, 7, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_T, CUBLAS_OP_N, 8, 4, 5, &al, d, 4, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_T, CUBLAS_OP_N, 8, 4, 5, &al, d, 5, d, 5, &be, d, 8) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, &al, d, 8, d, 4, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_T, 8, 4, 5, &al, d, 8, d, 3, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, &al, d, 8, d, 5, &be, d, 7) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 4, 5, &al, d, 0, d, 5, &be, d, 1) == INV); /* ld >= 1 */
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 5, &al, d, 8, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, -1, 5, &al, d, 8, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, -1, &al, d, 8, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_CONJG, CUBLAS_OP_N, 8, 4, 5, &al, d, 8, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, (cublasOperation_t)9, 8, 4, 5, &al, d, 8, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, nullptr, d, 8, d, 5, &be, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, &al, d, 8, d, 5, nullptr, d, 8) == INV);
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, &al, d, 8, d, 5, &be1, nullptr, 8) == INV);
    ST_CHECK(cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 5, &al, d, 8, d, 5, &be, d, 8) ==
             CUBLAS_STATUS_NOT_INITIALIZED);
    ST_CHECK(cublasSgemmStridedBatched(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &al, d, 2, 4, d, 2, 4, &be, d, 2, 4,
                                       -1) == INV);
    ST_CHECK(cublasSgemmStridedBatched(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &al, d, 2, 4, d, 2, 4, &be, d, 2, 4,
                                       0) == CUBLAS_STATUS_SUCCESS);
    /* types: unsupported combinations -> NOT_SUPPORTED */
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_16F, 4, d, CUDA_R_16F, 4, &be, d,
                          CUDA_R_16BF, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_16F, 4, d, CUDA_R_32F, 4, &be, d,
                          CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_16F, 4, d, CUDA_R_16F, 4, &be, d,
                          CUDA_R_32F, 4, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_32F, 4, d, CUDA_R_32F, 4, &be, d,
                          CUDA_R_32F, 4, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_32F, 4, d, CUDA_R_32F, 4, &be, d,
                          CUDA_R_32F, 4, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_64F, 4, d, CUDA_R_64F, 4, &be, d,
                          CUDA_R_64F, 4, CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_8F_E4M3, 4, d, CUDA_R_8F_E4M3, 4, &be,
                          d, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == NS);
    /* values that are no enumerator -> INVALID_VALUE */
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_32F, 4, d, CUDA_R_32F, 4, &be, d,
                          CUDA_R_32F, 4, (cublasComputeType_t)12345, CUBLAS_GEMM_DEFAULT) == INV);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, (cudaDataType)999, 4, d, CUDA_R_32F, 4, &be,
                          d, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == INV);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_32F, 4, d, CUDA_R_32F, 4, &be, d,
                          CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, (cublasGemmAlgo_t)50) == INV);
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, CUDA_R_32F, 4, d, CUDA_R_32F, 4, &be, d,
                          CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_ALGO3_TENSOR_OP) == CUBLAS_STATUS_SUCCESS);
    /* 32I: lda, ldb multiples of 4 */
    int32_t ia = 1, ib = 0;
    ST_CHECK(cublasGemmEx(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &ia, d, CUDA_R_8I, 5, d, CUDA_R_8I, 4, &ib, d,
                          CUDA_R_32I, 4, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT) == NS);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(d);
}

ST_TEST(handle_configuration) {
    int v = 0;
    ST_CHECK(cublasGetVersion(g_h, &v) == CUBLAS_STATUS_SUCCESS && v == CUBLAS_VERSION);
    ST_CHECK(cublasGetVersion(nullptr, &v) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasGetVersion(g_h, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasGetProperty(MAJOR_VERSION, &v) == CUBLAS_STATUS_SUCCESS && v == CUBLAS_VER_MAJOR);
    ST_CHECK(cublasGetProperty(MINOR_VERSION, &v) == CUBLAS_STATUS_SUCCESS && v == CUBLAS_VER_MINOR);
    ST_CHECK(cublasGetProperty((libraryPropertyType)7, &v) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasGetProperty(PATCH_LEVEL, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    cudaStream_t s, got;
    cudaStreamCreate(&s);
    ST_CHECK(cublasSetStream(g_h, s) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasGetStream(g_h, &got) == CUBLAS_STATUS_SUCCESS && got == s);
    ST_CHECK(cublasGetStream(g_h, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSetStream(g_h, 0) == CUBLAS_STATUS_SUCCESS);
    cudaStreamDestroy(s);
    cublasPointerMode_t pm;
    ST_CHECK(cublasGetPointerMode(g_h, &pm) == CUBLAS_STATUS_SUCCESS && pm == CUBLAS_POINTER_MODE_HOST);
    ST_CHECK(cublasSetPointerMode(g_h, (cublasPointerMode_t)2) == CUBLAS_STATUS_INVALID_VALUE);
    cublasMath_t mm;
    ST_CHECK(cublasGetMathMode(g_h, &mm) == CUBLAS_STATUS_SUCCESS && mm == CUBLAS_DEFAULT_MATH);
    ST_CHECK(cublasSetMathMode(g_h, (cublasMath_t)(CUBLAS_TF32_TENSOR_OP_MATH |
                                                    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) ==
             CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSetMathMode(g_h, (cublasMath_t)77) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSetMathMode(g_h, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasGetMathMode(g_h, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    cublasAtomicsMode_t am;
    ST_CHECK(cublasGetAtomicsMode(g_h, &am) == CUBLAS_STATUS_SUCCESS && am == CUBLAS_ATOMICS_NOT_ALLOWED);
    ST_CHECK(cublasSetAtomicsMode(g_h, CUBLAS_ATOMICS_ALLOWED) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasGetAtomicsMode(g_h, &am) == CUBLAS_STATUS_SUCCESS && am == CUBLAS_ATOMICS_ALLOWED);
    ST_CHECK(cublasSetAtomicsMode(g_h, CUBLAS_ATOMICS_NOT_ALLOWED) == CUBLAS_STATUS_SUCCESS);
    /* workspace: 256-byte alignment */
    char *ws;
    cudaMalloc((void **)&ws, 1 << 16);
    ST_CHECK(cublasSetWorkspace(g_h, ws, 1 << 16) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSetWorkspace(g_h, ws + 128, 1024) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSetStream(g_h, 0) == CUBLAS_STATUS_SUCCESS);   /* back to the default pool */
    cudaFree(ws);
    ST_CHECK(strcmp(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
    ST_CHECK(cublasGetStatusString(CUBLAS_STATUS_SUCCESS) != nullptr);
    ST_CHECK(cublasDestroy(nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
    ST_CHECK(cublasCreate(nullptr) == CUBLAS_STATUS_INVALID_VALUE);
}

#ifdef __CUEMU__
ST_TEST(counters) {
    /* A GEMM queues one unit of device work; handle configuration none. */
    float *d;
    cudaMalloc((void **)&d, 64 * sizeof(float));
    cudaMemset(d, 0, 64 * sizeof(float));
    float al = 1, be = 0;
    cuemu_counters c0, c1;
    cuemu_counters_get(&c0);
    cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, 4, d, 4, &be, d + 16, 4);
    cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_HOST);
    cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, d, 3, d, 4, &be, d + 16, 4);  /* rejected */
    cuemu_counters_get(&c1);
    ST_CHECK(c1.library_calls - c0.library_calls == 1);
    ST_CHECK(c1.library_api_calls - c0.library_api_calls == 2);
    cudaFree(d);
}
#endif

/* Last: a host pointer as A faults the device (sticky), as on a GPU. */
ST_TEST(host_pointer_faults_device) {
    static float hostA[16];
    float *dB, *dC;
    cudaMalloc((void **)&dB, 16 * sizeof(float));
    cudaMalloc((void **)&dC, 16 * sizeof(float));
    float al = 1, be = 0;
    /* not checked at call time: real cuBLAS cannot tell either */
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, hostA, 4, dB, 4, &be, dC, 4) ==
             CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    /* the device is now in error: later launches fail */
    ST_CHECK(cublasSgemm(g_h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &al, dB, 4, dB, 4, &be, dC, 4) ==
             CUBLAS_STATUS_EXECUTION_FAILED);
}

static void run_all_gemm_tests() {
    ST_RUN(sgemm_shapes_ops_ld);
    ST_RUN(sgemm_typed_matches_reference);
    ST_RUN(gemmex_every_documented_combination);
    ST_RUN(beta_zero_does_not_read_c);
    ST_RUN(k_zero_and_empty);
    ST_RUN(device_pointer_mode);
    ST_RUN(tf32_rounding_visible);
    ST_RUN(fp16_bf16_output_rounding);
    ST_RUN(hgemm_half_arithmetic);
    ST_RUN(strided_batched);
    ST_RUN(pointer_array_batched);
    ST_RUN(legacy_cudadatatype_compute_overload);
}

int main() {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) g_major = prop.major;
    if (cublasCreate(&g_h) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL cublasCreate\n");
        return 1;
    }
    run_all_gemm_tests();
#ifdef __CUEMU__
    /* the emulator's own loops instead of OpenBLAS (where it is built in) */
    setenv("CUEMU_CBLAS", "0", 1);
    printf("-- again without OpenBLAS --\n");
    run_all_gemm_tests();
    unsetenv("CUEMU_CBLAS");
    ST_RUN(counters);
#endif
    ST_RUN(argument_checks);
    ST_RUN(handle_configuration);
    ST_RUN(host_pointer_faults_device);
    cublasDestroy(g_h);
    return st_summary();
}
