/* cublas_lt.cu - self-test of cuBLASLt, written from the cuBLASLt API
   reference: cublasLtMatmul for every type row of its table against a
   float64 reference (column- and row-major layouts, transposes, C distinct
   from D, ld 0 broadcast of C, strided batches), the epilogues (RELU, BIAS,
   RELU_BIAS, GELU, GELU_BIAS, BGRADA, BGRADB, and the AUX pairs
   RELU_AUX_BIAS / DRELU_BGRAD and GELU_AUX_BIAS / DGELU_BGRAD), heuristics and their
   workspace and alignment rules, descriptor attributes, argument checks,
   and last (sticky) a bias less aligned than the chosen algorithm assumed.

   An ordinary CUDA program: it builds with the real nvcc as well.

   Tolerance as in cublas_gemm.cu: (k + 4) * u_acc * (|alpha| sum|a b| +
   |beta c| + |bias|) + u_out * |ref|, plus, for GELU, 1e-6 * (1 + |x|)
   for the transcendental. The GELU reference is the tanh form (the
   emulator's choice; cuBLASLt documents only "GELU(x)"). */
#include <cuda_runtime.h>
#include <cublasLt.h>
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
static uint16_t f2h(float f) {   /* normal range only: the values used here */
    if (isnan(f)) return 0x7fff;
    uint32_t x = fbits(f), s = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax >= 0x477ff000u) return uint16_t(s | 0x7c00);
    if (ax < 0x38800000u) return uint16_t(s | uint32_t(nearbyintf(bitsf(ax) * 16777216.0f)));
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffff) >> 13), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return uint16_t(s | h);
}
static float bf2f(uint16_t h) { return bitsf(uint32_t(h) << 16); }
static uint16_t f2bf(float f) {
    if (isnan(f)) return 0x7fff;
    uint32_t x = fbits(f);
    x += 0x7fffu + ((x >> 16) & 1);
    return uint16_t(x >> 16);
}
static float tf32(float f) {
    uint32_t x = fbits(f);
    x += 0xfffu + ((x >> 13) & 1);
    return bitsf(x & 0xffffe000u);
}

static size_t tsize(cudaDataType t) {
    switch (t) {
    case CUDA_R_64F: return 8;
    case CUDA_R_32F: case CUDA_R_32I: return 4;
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    default: return 1;
    }
}
static double unit(cudaDataType t) {
    switch (t) {
    case CUDA_R_64F: return ldexp(1.0, -53);
    case CUDA_R_32F: return ldexp(1.0, -24);
    case CUDA_R_16F: return ldexp(1.0, -11);
    case CUDA_R_16BF: return ldexp(1.0, -8);
    default: return 0;
    }
}

/* A matrix in memory: column- or row-major, any element type. */
struct HMat {
    int rows = 0, cols = 0, ld = 0;
    bool row = false;
    cudaDataType type = CUDA_R_32F;
    std::vector<unsigned char> b;
    HMat() {}
    HMat(int r, int c, int ld_, cudaDataType t, bool row_major = false)
        : rows(r), cols(c), ld(ld_), row(row_major), type(t) {
        size_t n = row_major ? size_t(r > 0 ? r - 1 : 0) * ld_ + c : size_t(c > 0 ? c - 1 : 0) * ld_ + r;
        if (ld_ == 0) n = row_major ? c : r;
        b.assign(n * tsize(t) + 16, 0);
    }
    size_t off(int r, int c) const { return row ? size_t(r) * ld + c : size_t(r) + size_t(c) * ld; }
    double get(int r, int c) const { return geti(off(r, c)); }
    double geti(size_t i) const {
        const unsigned char *p = &b[i * tsize(type)];
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
    void seti(size_t i, double v) {
        unsigned char *p = &b[i * tsize(type)];
        switch (type) {
        case CUDA_R_64F: memcpy(p, &v, 8); break;
        case CUDA_R_32F: { float f = float(v); memcpy(p, &f, 4); break; }
        case CUDA_R_16F: { uint16_t h = f2h(float(v)); memcpy(p, &h, 2); break; }
        case CUDA_R_16BF: { uint16_t h = f2bf(float(v)); memcpy(p, &h, 2); break; }
        case CUDA_R_8I: *p = (unsigned char)int8_t(lrint(v)); break;
        case CUDA_R_32I: { int32_t x = int32_t(lrint(v)); memcpy(p, &x, 4); break; }
        default: break;
        }
    }
    size_t count() const { return (b.size() - 16) / tsize(type); }
};

static uint32_t g_seed = 777u;
static double rnd_val(cudaDataType t) {
    g_seed = g_seed * 1664525u + 1013904223u;
    double u = ((g_seed >> 8) & 0xffff) / 65536.0;
    bool neg = (g_seed >> 28) & 1;
    if (t == CUDA_R_8I || t == CUDA_R_32I) return neg ? -(1 + int(u * 100)) : 1 + int(u * 100);
    double v = 0.25 + 0.75 * u;
    return neg ? -v : v;
}
static void fill(HMat &M) { for (size_t i = 0; i < M.count(); ++i) M.seti(i, rnd_val(M.type)); }

static void *to_dev(const HMat &M) {
    void *d = nullptr;
    cudaMalloc(&d, M.b.size());
    cudaMemcpy(d, M.b.data(), M.b.size(), cudaMemcpyHostToDevice);
    return d;
}
static void from_dev(HMat &M, const void *d) { cudaMemcpy(M.b.data(), d, M.b.size(), cudaMemcpyDeviceToHost); }

static cublasLtMatrixLayout_t layout(const HMat &M, int batch = 1, long long stride = 0) {
    cublasLtMatrixLayout_t l;
    cublasLtMatrixLayoutCreate(&l, M.type, M.rows, M.cols, M.ld);
    int32_t order = M.row ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL;
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
    if (batch != 1) {
        int32_t bc = batch;
        int64_t st = stride;
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc);
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof st);
    }
    return l;
}

static cublasLtHandle_t g_lt;
static int g_major = 9;

static double gelu(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

/* ---- one matmul, checked ---------------------------------------------------- */
struct Problem {
    int m = 8, n = 8, k = 8;
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    bool rowA = false, rowB = false, rowD = false;
    int padA = 0, padB = 0, padC = 0, padD = 0;
    bool c_is_d = false;
    cudaDataType ab = CUDA_R_32F, cd = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType scale = CUDA_R_32F;
    double alpha = 0.75, beta = -0.5;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    uint64_t max_ws = 0;
    bool use_heuristic = true;
};

static double acc_unit(const Problem &p) {
    switch (p.compute) {
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
        return ldexp(1.0, -53);
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: return ldexp(1.0, -11);
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: return 0;
    default: return ldexp(1.0, -24);
    }
}
static double in_round(const Problem &p, double v) {
    if (p.ab == CUDA_R_64F) return v;
    float f = float(v);
    if (p.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && g_major >= 8) return tf32(f);
    if (p.compute == CUBLAS_COMPUTE_32F_FAST_16F && g_major >= 7) return h2f(f2h(f));
    if (p.compute == CUBLAS_COMPUTE_32F_FAST_16BF && g_major >= 8) return bf2f(f2bf(f));
    return f;
}

struct Scal { float f; double d; uint16_t h; int32_t i; };
static const void *scal(Scal &s, cudaDataType t, double v) {
    switch (t) {
    case CUDA_R_64F: s.d = v; return &s.d;
    case CUDA_R_16F: s.h = f2h(float(v)); return &s.h;
    case CUDA_R_32I: s.i = int32_t(v); return &s.i;
    default: s.f = float(v); return &s.f;
    }
}

static char g_msg[300];

/* Builds, runs and checks one matmul; returns "" or what went wrong. */
static const char *run(const Problem &p) {
    int ra = p.ta == CUBLAS_OP_N ? p.m : p.k, ca = p.ta == CUBLAS_OP_N ? p.k : p.m;
    int rb = p.tb == CUBLAS_OP_N ? p.k : p.n, cb = p.tb == CUBLAS_OP_N ? p.n : p.k;
    HMat A(ra, ca, (p.rowA ? ca : ra) + p.padA, p.ab, p.rowA), B(rb, cb, (p.rowB ? cb : rb) + p.padB, p.ab, p.rowB);
    HMat C(p.m, p.n, (p.rowD ? p.n : p.m) + (p.c_is_d ? p.padD : p.padC), p.cd, p.rowD);
    HMat D(p.m, p.n, (p.rowD ? p.n : p.m) + p.padD, p.cd, p.rowD);
    fill(A); fill(B); fill(C); fill(D);
    bool bias_in = p.epilogue == CUBLASLT_EPILOGUE_BIAS || p.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
                   p.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
    bool bgrad = p.epilogue == CUBLASLT_EPILOGUE_BGRADA || p.epilogue == CUBLASLT_EPILOGUE_BGRADB;
    int blen = p.epilogue == CUBLASLT_EPILOGUE_BGRADB ? p.n : p.m;
    HMat bias(blen, 1, blen, p.cd);
    fill(bias);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C), *dD = p.c_is_d ? dC : to_dev(D), *dbias = to_dev(bias);
    cublasLtMatmulDesc_t op;
    cublasLtMatmulDescCreate(&op, p.compute, p.scale);
    int32_t ta = p.ta, tb = p.tb;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue, sizeof p.epilogue);
    if (bias_in || bgrad) cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
    cublasLtMatrixLayout_t la = layout(A), lb = layout(B), lc = layout(p.c_is_d ? D : C), ld = layout(D);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &p.max_ws, sizeof p.max_ws);
    cublasLtMatmulHeuristicResult_t res[4];
    int nres = 0;
    const char *err = "";
    void *ws = nullptr;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (p.use_heuristic) {
        st = cublasLtMatmulAlgoGetHeuristic(g_lt, op, la, lb, lc, ld, pref, 4, res, &nres);
        if (st != CUBLAS_STATUS_SUCCESS || nres < 1) {
            snprintf(g_msg, sizeof g_msg, "heuristic: status %d, %d results", int(st), nres);
            err = g_msg;
        }
    }
    if (!*err) {
        size_t wsz = p.use_heuristic ? res[0].workspaceSize : 0;
        if (wsz) cudaMalloc(&ws, wsz);
        Scal sa, sb;
        st = cublasLtMatmul(g_lt, op, scal(sa, p.scale, p.alpha), dA, la, dB, lb, scal(sb, p.scale, p.beta), dC, lc,
                            dD, ld, p.use_heuristic ? &res[0].algo : nullptr, ws, wsz, 0);
        if (st != CUBLAS_STATUS_SUCCESS) {
            snprintf(g_msg, sizeof g_msg, "matmul: status %d", int(st));
            err = g_msg;
        }
    }
    HMat D1 = D, B1 = bias;
    from_dev(D1, dD);
    from_dev(B1, dbias);
    const HMat &C0 = C;                 /* in place: C's data is in D's buffer */
    double uo = unit(p.cd), ua = acc_unit(p);
    for (int j = 0; j < p.n && !*err; ++j)
        for (int i = 0; i < p.m && !*err; ++i) {
            double s = 0, mag = 0;
            for (int q = 0; q < p.k; ++q) {
                double a = in_round(p, p.ta == CUBLAS_OP_N ? A.get(i, q) : A.get(q, i));
                double b = in_round(p, p.tb == CUBLAS_OP_N ? B.get(q, j) : B.get(j, q));
                s += a * b;
                mag += fabs(a * b);
            }
            double x = p.alpha * s + (p.beta != 0 ? p.beta * C0.get(i, j) : 0);
            mag = fabs(p.alpha) * mag + fabs(p.beta * C0.get(i, j));
            if (bias_in) { x += bias.get(i, 0); mag += fabs(bias.get(i, 0)); }
            double tol = (p.k + 4) * ua * mag;
            double want = x;
            if (p.epilogue == CUBLASLT_EPILOGUE_RELU || p.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) want = x > 0 ? x : 0;
            if (p.epilogue == CUBLASLT_EPILOGUE_GELU || p.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS) {
                want = gelu(x);
                tol = tol * 1.2 + 1e-6 * (1 + fabs(x));
            }
            tol += uo * fabs(want) + 1e-300;
            double got = D1.get(i, j);
            if (!(fabs(got - want) <= tol)) {
                snprintf(g_msg, sizeof g_msg, "D(%d,%d) = %.9g, want %.9g (tol %.3g)", i, j, got, want, tol);
                err = g_msg;
            }
        }
    if (bgrad && !*err)
        for (int i = 0; i < blen; ++i) {
            double s = 0, mag = 0;
            for (int q = 0; q < p.k; ++q) {
                double v = p.epilogue == CUBLASLT_EPILOGUE_BGRADA ? (p.ta == CUBLAS_OP_N ? A.get(i, q) : A.get(q, i))
                                                                 : (p.tb == CUBLAS_OP_N ? B.get(q, i) : B.get(i, q));
                v = in_round(p, v);
                s += v;
                mag += fabs(v);
            }
            if (!(fabs(B1.get(i, 0) - s) <= (p.k + 4) * ua * mag + uo * fabs(s))) {
                snprintf(g_msg, sizeof g_msg, "bias gradient[%d] = %.9g, want %.9g", i, B1.get(i, 0), s);
                err = g_msg;
                break;
            }
        }
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    if (!p.c_is_d) cudaFree(dD);
    cudaFree(dbias);
    if (ws) cudaFree(ws);
    cublasLtMatmulDescDestroy(op);
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc); cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulPreferenceDestroy(pref);
    return err;
}

/* ---- tests ------------------------------------------------------------------- */
ST_TEST(matmul_f32_layouts) {
    const int shapes[][3] = {{1, 1, 1}, {3, 3, 3}, {17, 5, 9}, {65, 31, 47}};
    for (const auto &sh : shapes)
        for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T})
            for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T})
                for (int form = 0; form < 4; ++form) {
                    Problem p;
                    p.m = sh[0]; p.n = sh[1]; p.k = sh[2]; p.ta = ta; p.tb = tb;
                    p.rowA = form & 1; p.rowB = form == 2; p.rowD = form == 3;
                    p.padA = 2; p.padB = 1; p.padC = 3; p.padD = 1;
                    p.c_is_d = form == 1;
                    const char *e = run(p);
                    ST_CHECKF(!*e, "%dx%dx%d ta=%d tb=%d form=%d: %s", p.m, p.n, p.k, ta, tb, form, e);
                }
}

ST_TEST(matmul_every_documented_type_row) {
    struct Row { cublasComputeType_t ct; cudaDataType scale, ab, cd; };
    const Row rows[] = {
        {CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F},
        {CUBLAS_COMPUTE_16F_PEDANTIC, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F},
        {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF},
        {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F},
        {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8I, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F},
        {CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F},
        {CUBLAS_COMPUTE_64F_PEDANTIC, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F},
        {CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F},
    };
    for (const Row &r : rows)
        for (uint64_t ws : {uint64_t(0), uint64_t(1) << 20}) {
            Problem p;
            p.m = 33; p.n = 17; p.k = r.ct == CUBLAS_COMPUTE_16F || r.ct == CUBLAS_COMPUTE_16F_PEDANTIC ? 9 : 47;
            p.ta = CUBLAS_OP_T; p.padA = 3; p.padC = 1; p.padD = 2;
            p.compute = r.ct; p.scale = r.scale; p.ab = r.ab; p.cd = r.cd;
            p.max_ws = ws;
            const char *e = run(p);
            ST_CHECKF(!*e, "compute %d A %d D %d ws %llu: %s", r.ct, r.ab, r.cd, (unsigned long long)ws, e);
        }
    /* 32I: the IMMA rules (TN, m and k multiples of 4, ld multiples of 4) */
    Problem p;
    p.m = 12; p.n = 5; p.k = 16; p.ta = CUBLAS_OP_T; p.padD = 0; p.padC = 0;
    p.compute = CUBLAS_COMPUTE_32I; p.scale = CUDA_R_32I; p.ab = CUDA_R_8I; p.cd = CUDA_R_32I;
    p.alpha = 3; p.beta = -2;
    const char *e = run(p);
    ST_CHECKF(!*e, "32I: %s", e);
}

ST_TEST(epilogues) {
    const uint32_t epis[] = {CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS,
                             CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS, CUBLASLT_EPILOGUE_BGRADA,
                             CUBLASLT_EPILOGUE_BGRADB};
    struct Row { cudaDataType ab, cd; };
    const Row types[] = {{CUDA_R_32F, CUDA_R_32F}, {CUDA_R_16F, CUDA_R_16F}, {CUDA_R_16BF, CUDA_R_16BF},
                         {CUDA_R_16BF, CUDA_R_32F}};
    for (uint32_t epi : epis)
        for (const Row &t : types)
            for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T}) {
                Problem p;
                p.m = 19; p.n = 11; p.k = 23; p.ta = ta; p.tb = CUBLAS_OP_T; p.padA = 1; p.padD = 2;
                p.ab = t.ab; p.cd = t.cd; p.epilogue = epi;
                p.beta = epi == CUBLASLT_EPILOGUE_RELU ? 0.5 : 0.0;
                const char *e = run(p);
                ST_CHECKF(!*e, "epilogue %u A %d D %d ta %d: %s", epi, t.ab, t.cd, ta, e);
            }
    /* bias with a row-major D (no activation) */
    Problem p;
    p.rowD = true; p.epilogue = CUBLASLT_EPILOGUE_BIAS; p.m = 7; p.n = 9; p.k = 4;
    const char *e = run(p);
    ST_CHECKF(!*e, "row-major D with bias: %s", e);
}

/* A few matmuls set up by hand (batches, broadcasts, pointer mode). */
struct Lt {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    ~Lt() {
        cublasLtMatmulDescDestroy(op);
        cublasLtMatrixLayoutDestroy(a); cublasLtMatrixLayoutDestroy(b);
        cublasLtMatrixLayoutDestroy(c); cublasLtMatrixLayoutDestroy(d);
    }
};

ST_TEST(strided_batches_with_bias) {
    int m = 6, n = 4, k = 5, batch = 3;
    long long sA = m * k + 2, sD = m * n + 1;
    HMat A(m, int(sA * batch / m) + 1, m, CUDA_R_32F), B(k, n, k, CUDA_R_32F), D(m, int(sD * batch / m) + 1, m, CUDA_R_32F);
    HMat bias(m * batch, 1, m * batch, CUDA_R_32F);
    fill(A); fill(B); fill(D); fill(bias);
    void *dA = to_dev(A), *dB = to_dev(B), *dD = to_dev(D), *db = to_dev(bias);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    int64_t bstride = m;
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &db, sizeof db);
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bstride, sizeof bstride);
    HMat a1(m, k, m, CUDA_R_32F), d1(m, n, m, CUDA_R_32F);
    t.a = layout(a1, batch, sA);
    t.b = layout(B, batch, 0);          /* one B for every batch */
    t.d = layout(d1, batch, sD);
    float al = 1, be = 0;
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, nullptr, nullptr, dD, t.d, nullptr, nullptr, 0, 0) ==
             CUBLAS_STATUS_SUCCESS);
    HMat D1 = D;
    from_dev(D1, dD);
    for (int bt = 0; bt < batch; ++bt)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) {
                double s = bias.geti(size_t(bt * m + i)), mag = fabs(s);
                for (int q = 0; q < k; ++q) {
                    double v = A.geti(size_t(bt * sA + i + q * m)) * B.get(q, j);
                    s += v;
                    mag += fabs(v);
                }
                ST_CHECK(fabs(D1.geti(size_t(bt * sD + i + j * m)) - s) <= (k + 4) * ldexp(1.0, -24) * mag);
            }
    cudaFree(dA); cudaFree(dB); cudaFree(dD); cudaFree(db);
}

ST_TEST(c_broadcast_with_ld_zero) {
    /* Out of place, C's ld may be 0: every column of C is its first. */
    int m = 5, n = 3, k = 2;
    HMat A(m, k, m, CUDA_R_32F), B(k, n, k, CUDA_R_32F), C(m, n, 0, CUDA_R_32F), D(m, n, m, CUDA_R_32F);
    fill(A); fill(B); fill(C); fill(D);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C), *dD = to_dev(D);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    t.a = layout(A); t.b = layout(B); t.c = layout(C); t.d = layout(D);
    float al = 1, be = 1;
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dC, t.c, dD, t.d, nullptr, nullptr, 0, 0) ==
             CUBLAS_STATUS_SUCCESS);
    HMat D1 = D;
    from_dev(D1, dD);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double s = C.geti(size_t(i));
            for (int q = 0; q < k; ++q) s += A.get(i, q) * B.get(q, j);
            ST_CHECK(fabs(D1.get(i, j) - s) <= 1e-5);
        }
    /* in place needs Cdesc == Ddesc */
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dD, t.c, dD, t.d, nullptr, nullptr, 0, 0) ==
             CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dD);
}

ST_TEST(relu_of_nan_is_zero) {
    /* Undocumented: NaN into ReLU. The emulator's choice: max(x, 0) as the
       GPU's fmax computes it, which gives 0. */
    HMat A(2, 1, 2, CUDA_R_32F), B(1, 2, 1, CUDA_R_32F), C(2, 2, 2, CUDA_R_32F);
    for (int i = 0; i < 2; ++i) { A.seti(size_t(i), 1); B.seti(size_t(i), 1); }
    C.seti(0, NAN); C.seti(1, -3); C.seti(2, 2); C.seti(3, NAN);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    uint32_t epi = CUBLASLT_EPILOGUE_RELU;
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    t.a = layout(A); t.b = layout(B); t.d = layout(C);
    float al = 1, be = 1;
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dC, t.d, dC, t.d, nullptr, nullptr, 0, 0) ==
             CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    ST_CHECK(C1.geti(0) == 0 && C1.geti(1) == 0 && C1.geti(2) == 3 && C1.geti(3) == 0);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

ST_TEST(tf32_only_with_fast_tf32) {
    const float x = 1.0f + ldexpf(1, -12), tie_odd = 1.0f + 3 * ldexpf(1, -11);
    float h[3] = {x, 1, 0};
    float *d;
    cudaMalloc((void **)&d, sizeof h);
    HMat one(1, 1, 1, CUDA_R_32F);
    for (cublasComputeType_t ct : {CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32})
        for (float a : {x, tie_odd}) {
            h[0] = a;
            cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
            Lt t;
            cublasLtMatmulDescCreate(&t.op, ct, CUDA_R_32F);
            t.a = layout(one); t.b = layout(one); t.d = layout(one);
            float al = 1, be = 0;
            ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d + 1, t.b, &be, d + 2, t.d, d + 2, t.d, nullptr, nullptr,
                                    0, 0) == CUBLAS_STATUS_SUCCESS);
            float r;
            cudaMemcpy(&r, d + 2, 4, cudaMemcpyDeviceToHost);
            float want = ct == CUBLAS_COMPUTE_32F_FAST_TF32 && g_major >= 8 ? tf32(a) : a;
            ST_CHECKF(r == want, "compute %d: %.9g, want %.9g", ct, r, want);
        }
    ST_CHECK(tf32(tie_odd) == 1.0f + ldexpf(1, -9));
    cudaFree(d);
}

ST_TEST(device_pointer_mode) {
    HMat A(4, 3, 4, CUDA_R_32F), B(3, 2, 3, CUDA_R_32F), C(4, 2, 4, CUDA_R_32F);
    fill(A); fill(B); fill(C);
    void *dA = to_dev(A), *dB = to_dev(B), *dC = to_dev(C);
    float *ds;
    float sc[2] = {2, -1};
    cudaMalloc((void **)&ds, sizeof sc);
    cudaMemcpy(ds, sc, sizeof sc, cudaMemcpyHostToDevice);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    int32_t pm = CUBLASLT_POINTER_MODE_DEVICE;
    ST_CHECK(cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm) ==
             CUBLAS_STATUS_SUCCESS);
    t.a = layout(A); t.b = layout(B); t.d = layout(C);
    ST_CHECK(cublasLtMatmul(g_lt, t.op, ds, dA, t.a, dB, t.b, ds + 1, dC, t.d, dC, t.d, nullptr, nullptr, 0, 0) ==
             CUBLAS_STATUS_SUCCESS);
    HMat C1 = C;
    from_dev(C1, dC);
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 4; ++i) {
            double s = -C.get(i, j);
            for (int q = 0; q < 3; ++q) s += 2 * A.get(i, q) * B.get(q, j);
            ST_CHECK(fabs(C1.get(i, j) - s) <= 1e-5);
        }
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(ds);
}

ST_TEST(heuristic_workspace) {
    int m = 40, n = 24, k = 30;
    HMat A(m, k, m, CUDA_R_32F), B(k, n, k, CUDA_R_32F), D(m, n, m, CUDA_R_32F);
    fill(A); fill(B); fill(D);
    void *dA = to_dev(A), *dB = to_dev(B), *dD = to_dev(D);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    t.a = layout(A); t.b = layout(B); t.d = layout(D);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulHeuristicResult_t r[8];
    int n_r = 0;
    /* no workspace allowed (the default): every algorithm needs none */
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.b, t.d, t.d, pref, 8, r, &n_r) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(n_r >= 1);
    for (int i = 0; i < n_r; ++i) ST_CHECK(r[i].workspaceSize == 0 && r[i].state == CUBLAS_STATUS_SUCCESS);
    uint64_t mx = 1 << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &mx, sizeof mx);
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.b, t.d, t.d, pref, 8, r, &n_r) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(n_r >= 1 && r[0].workspaceSize > 0 && r[0].workspaceSize <= mx);
    for (int i = 0; i < n_r; ++i) ST_CHECK(r[i].workspaceSize <= mx);
    char *ws;
    cudaMalloc((void **)&ws, r[0].workspaceSize + 256);
    float al = 1, be = 0;
    /* less workspace than the algorithm needs: INVALID_VALUE */
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dD, t.d, dD, t.d, &r[0].algo, ws,
                            r[0].workspaceSize - 256, 0) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dD, t.d, dD, t.d, &r[0].algo, nullptr,
                            r[0].workspaceSize, 0) == CUBLAS_STATUS_INVALID_VALUE);
    /* a workspace not 256-byte aligned: INVALID_VALUE */
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dD, t.d, dD, t.d, &r[0].algo, ws + 128,
                            r[0].workspaceSize, 0) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, dA, t.a, dB, t.b, &be, dD, t.d, dD, t.d, &r[0].algo, ws,
                            r[0].workspaceSize, 0) == CUBLAS_STATUS_SUCCESS);
    HMat D1 = D;
    from_dev(D1, dD);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double s = 0, mag = 0;
            for (int q = 0; q < k; ++q) { s += A.get(i, q) * B.get(q, j); mag += fabs(A.get(i, q) * B.get(q, j)); }
            ST_CHECK(fabs(D1.get(i, j) - s) <= (k + 4) * ldexp(1.0, -24) * mag);
        }
    int32_t splits = 0;
    size_t w = 0;
    ST_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&r[0].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits,
                                                  &w) == CUBLAS_STATUS_SUCCESS && w == sizeof splits);
    /* requestedAlgoCount <= 0 */
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.b, t.d, t.d, pref, 0, r, &n_r) ==
             CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(ws);
    cublasLtMatmulPreferenceDestroy(pref);
    cudaFree(dA); cudaFree(dB); cudaFree(dD);
}

ST_TEST(alignment_preferences) {
    int m = 8, n = 4, k = 8;
    float *base;
    cudaMalloc((void **)&base, 4096);
    cudaMemset(base, 0, 4096);
    float *A4 = base + 1;               /* 4-byte aligned, not 16 */
    float *B = base + 256, *D = base + 512;
    HMat a(m, k, m, CUDA_R_32F), b(k, n, k, CUDA_R_32F), d(m, n, m, CUDA_R_32F);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    t.a = layout(a); t.b = layout(b); t.d = layout(d);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulHeuristicResult_t r;
    int n_r = 0;
    float al = 1, be = 0;
    /* default preference (256): the algorithm may assume 16-byte alignment */
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.b, t.d, t.d, pref, 1, &r, &n_r) == CUBLAS_STATUS_SUCCESS);
    uint32_t need = 0;
    size_t w;
    ST_CHECK(cublasLtMatmulAlgoCapGetAttribute(&r.algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, &need, sizeof need,
                                               &w) == CUBLAS_STATUS_SUCCESS && need == 16);
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, A4, t.a, B, t.b, &be, D, t.d, D, t.d, &r.algo, nullptr, 0, 0) ==
             CUBLAS_STATUS_NOT_SUPPORTED);
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, A4, t.a, B, t.b, &be, D, t.d, D, t.d, nullptr, nullptr, 0, 0) ==
             CUBLAS_STATUS_NOT_SUPPORTED);
    /* the preference says A is only 4-byte aligned: an algorithm that copes */
    uint32_t four = 4;
    ST_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &four,
                                                  sizeof four) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.b, t.d, t.d, pref, 1, &r, &n_r) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasLtMatmulAlgoCapGetAttribute(&r.algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, &need, sizeof need,
                                               &w) == CUBLAS_STATUS_SUCCESS && need <= 4);
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, A4, t.a, B, t.b, &be, D, t.d, D, t.d, &r.algo, nullptr, 0, 0) ==
             CUBLAS_STATUS_SUCCESS);
    /* an alignment below the element size: no algorithm */
    uint32_t two = 2;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &two, sizeof two);
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.b, t.d, t.d, pref, 1, &r, &n_r) ==
             CUBLAS_STATUS_NOT_SUPPORTED);
    /* an ld whose byte size is not a multiple of 16 limits the algorithm too */
    HMat a2(m, k, m + 1, CUDA_R_32F);
    cublasLtMatrixLayout_t la2 = layout(a2);
    cublasLtMatmulPreference_t def;
    cublasLtMatmulPreferenceCreate(&def);
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, la2, t.b, t.d, t.d, def, 1, &r, &n_r) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasLtMatmulAlgoCapGetAttribute(&r.algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, &need, sizeof need,
                                               &w) == CUBLAS_STATUS_SUCCESS && need == 4);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cublasLtMatrixLayoutDestroy(la2);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatmulPreferenceDestroy(def);
    cudaFree(base);
}

ST_TEST(attributes) {
    cublasLtMatmulDesc_t op;
    ST_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    int32_t v = 0;
    size_t w = 0;
    ST_CHECK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof v, &w) ==
             CUBLAS_STATUS_SUCCESS && v == CUBLAS_COMPUTE_32F && w == 4);
    ST_CHECK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &v, sizeof v, &w) ==
             CUBLAS_STATUS_SUCCESS && v == CUDA_R_32F);
    ST_CHECK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, &w) ==
             CUBLAS_STATUS_SUCCESS && w == sizeof(void *));
    ST_CHECK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, nullptr) ==
             CUBLAS_STATUS_INVALID_VALUE);
    uint32_t epi = 0;
    ST_CHECK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi, &w) ==
             CUBLAS_STATUS_SUCCESS && epi == CUBLASLT_EPILOGUE_DEFAULT);
    int64_t big = 1;
    ST_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &big, sizeof big) ==
             CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4) ==
             CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasLtMatmulDescSetAttribute(op, (cublasLtMatmulDescAttributes_t)9, &v, sizeof v) ==
             CUBLAS_STATUS_INVALID_VALUE);
    int32_t bt = CUDA_R_16F;
    ST_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt) ==
             CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &v, sizeof v, &w) ==
             CUBLAS_STATUS_SUCCESS && v == CUDA_R_16F);
    cublasLtMatmulDescDestroy(op);

    cublasLtMatrixLayout_t l;
    ST_CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 7, 5, 9) == CUBLAS_STATUS_SUCCESS);
    uint64_t rows = 0;
    int64_t ld = 0;
    uint32_t type = 0;
    int32_t batch = 0;
    ST_CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &w) ==
             CUBLAS_STATUS_SUCCESS && rows == 7);
    ST_CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &w) ==
             CUBLAS_STATUS_SUCCESS && ld == 9);
    ST_CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, &w) ==
             CUBLAS_STATUS_SUCCESS && type == CUDA_R_16BF);
    ST_CHECK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch, &w) ==
             CUBLAS_STATUS_SUCCESS && batch == 1);
    ST_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &batch, sizeof batch) ==
             CUBLAS_STATUS_INVALID_VALUE);   /* uint64_t, not int32_t */
    cublasLtMatrixLayoutDestroy(l);

    cublasLtMatmulPreference_t p;
    ST_CHECK(cublasLtMatmulPreferenceCreate(&p) == CUBLAS_STATUS_SUCCESS);
    uint64_t mx = 1;
    uint32_t al = 0;
    ST_CHECK(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &mx, sizeof mx, &w) ==
             CUBLAS_STATUS_SUCCESS && mx == 0);
    ST_CHECK(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al, &w) ==
             CUBLAS_STATUS_SUCCESS && al == 256);
    ST_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &al, sizeof al) ==
             CUBLAS_STATUS_INVALID_VALUE);
    cublasLtMatmulPreferenceDestroy(p);
}

ST_TEST(argument_checks) {
    float *d;
    cudaMalloc((void **)&d, 1 << 14);
    cudaMemset(d, 0, 1 << 14);
    HMat a(8, 8, 8, CUDA_R_32F);
    float al = 1, be = 0, be1 = 1;
    const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE, NS = CUBLAS_STATUS_NOT_SUPPORTED;
    {
        Lt t;  /* epilogue BIAS without a bias pointer */
        cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        t.a = layout(a);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == INV);
        /* a bias of another type than D */
        void *bias = d + 1024;
        int32_t bt = CUDA_R_16F;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == NS);
        bt = CUDA_R_32F;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) ==
                 CUBLAS_STATUS_SUCCESS);
        /* activation + bias with a row-major D */
        epi = CUBLASLT_EPILOGUE_RELU_BIAS;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        HMat r(8, 8, 8, CUDA_R_32F, true);
        t.d = layout(r);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.d, d, t.d, nullptr, nullptr, 0, 0) == NS);
        /* AUX epilogues without their buffer (cublasLt.h: "Requires setting
           CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD"), unknown epilogues */
        epi = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == INV);
        epi = 3;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == INV);
    }
    {
        Lt t;  /* shapes in conflict, ld too small, types not in the table */
        cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        HMat x(8, 5, 8, CUDA_R_32F), small(8, 8, 7, CUDA_R_32F), h16(8, 8, 8, CUDA_R_16F), b16(8, 8, 8, CUDA_R_16BF);
        t.a = layout(a); t.b = layout(x); t.c = layout(small); t.d = layout(a);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.b, nullptr, nullptr, 0, 0) == INV);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.c, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == INV);
        cublasLtMatrixLayout_t l16 = layout(h16), lb16 = layout(b16);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, l16, d, l16, &be, d, lb16, d, lb16, nullptr, nullptr, 0, 0) == NS);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, l16, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == NS);
        cublasLtMatmulPreference_t pref;
        cublasLtMatmulPreferenceCreate(&pref);
        cublasLtMatmulHeuristicResult_t r;
        int n_r = 5;
        ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, l16, l16, lb16, lb16, pref, 1, &r, &n_r) == NS && n_r == 0);
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(l16);
        cublasLtMatrixLayoutDestroy(lb16);
        /* scale type other than the table's */
        cublasLtMatmulDesc_t op64;
        cublasLtMatmulDescCreate(&op64, CUBLAS_COMPUTE_32F, CUDA_R_64F);
        ST_CHECK(cublasLtMatmul(g_lt, op64, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == NS);
        cublasLtMatmulDescDestroy(op64);
        /* beta != 0 with no C; NULL alpha; NULL handle */
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be1, nullptr, t.a, d, t.a, nullptr, nullptr, 0, 0) ==
                 INV);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, nullptr, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == INV);
        ST_CHECK(cublasLtMatmul(nullptr, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) ==
                 CUBLAS_STATUS_NOT_INITIALIZED);
        /* TRANSC, other orders, other pointer modes, FP8 scales */
        int32_t tc = CUBLAS_OP_T;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_TRANSC, &tc, sizeof tc);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == NS);
        tc = CUBLAS_OP_N;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_TRANSC, &tc, sizeof tc);
        int32_t pm = CUBLASLT_POINTER_MODE_DEVICE_VECTOR;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == NS);
        pm = CUBLASLT_POINTER_MODE_HOST;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
        const void *scale = d;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.a, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == INV);
        scale = nullptr;
        cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale);
        int32_t order = CUBLASLT_ORDER_COL32;
        cublasLtMatrixLayoutSetAttribute(t.b, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
        ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d, t.b, &be, d, t.a, d, t.a, nullptr, nullptr, 0, 0) == NS);
    }
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(d);
}

ST_TEST(algorithm_queries) {
    int ids[4], n = 0;
    ST_CHECK(cublasLtMatmulAlgoGetIds(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                      CUDA_R_32F, 4, ids, &n) == CUBLAS_STATUS_SUCCESS && n >= 1);
    cublasLtMatmulAlgo_t algo;
    ST_CHECK(cublasLtMatmulAlgoInit(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                    CUDA_R_32F, ids[0], &algo) == CUBLAS_STATUS_SUCCESS);
    int32_t id = -1;
    size_t w;
    ST_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w) ==
             CUBLAS_STATUS_SUCCESS && id == ids[0]);
    HMat a(16, 16, 16, CUDA_R_32F);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    t.a = layout(a);
    cublasLtMatmulHeuristicResult_t res;
    ST_CHECK(cublasLtMatmulAlgoCheck(g_lt, t.op, t.a, t.a, t.a, t.a, &algo, &res) == CUBLAS_STATUS_SUCCESS);
    /* an algorithm for other types does not fit this problem */
    cublasLtMatmulAlgo_t other;
    ST_CHECK(cublasLtMatmulAlgoInit(g_lt, CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
                                    CUDA_R_64F, 0, &other) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasLtMatmulAlgoCheck(g_lt, t.op, t.a, t.a, t.a, t.a, &other, &res) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasLtMatmulAlgoInit(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                    CUDA_R_32F, 99, &algo) == CUBLAS_STATUS_INVALID_VALUE);
    /* a cublasHandle_t may stand in for a cublasLtHandle_t */
    cublasHandle_t h;
    ST_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    float *d;
    cudaMalloc((void **)&d, 3 * 256 * sizeof(float));
    cudaMemset(d, 0, 3 * 256 * sizeof(float));
    float al = 1, be = 0;
    ST_CHECK(cublasLtMatmul((cublasLtHandle_t)h, t.op, &al, d, t.a, d + 256, t.a, &be, d + 512, t.a, d + 512, t.a,
                            nullptr, nullptr, 0, 0) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(d);
    cublasDestroy(h);
    ST_CHECK(cublasLtGetVersion() == CUBLAS_VERSION);
    int v;
    ST_CHECK(cublasLtGetProperty(MAJOR_VERSION, &v) == CUBLAS_STATUS_SUCCESS && v == CUBLAS_VER_MAJOR);
    ST_CHECK(strcmp(cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0);
}

#ifdef __CUEMU__
ST_TEST(counters) {
    HMat a(4, 4, 4, CUDA_R_32F);
    float *d;
    cudaMalloc((void **)&d, 64 * sizeof(float));
    cudaMemset(d, 0, 64 * sizeof(float));
    cuemu_counters c0, c1;
    cuemu_counters_get(&c0);
    Lt t;                                  /* 1 desc + 1 layout: 2 API calls */
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    t.a = layout(a);                       /* create + set order */
    float al = 1, be = 0;
    cublasLtMatmul(g_lt, t.op, &al, d, t.a, d + 16, t.a, &be, d + 32, t.a, d + 32, t.a, nullptr, nullptr, 0, 0);
    cuemu_counters_get(&c1);
    ST_CHECK(c1.library_calls - c0.library_calls == 1);
    ST_CHECK(c1.library_api_calls - c0.library_api_calls == 3);
    cudaFree(d);
}
#endif

/* Last: the heuristic saw a 16-byte aligned bias; the matmul gets one that
   is only 4-byte aligned: the kernel faults with a misaligned address. */
ST_TEST(misaligned_bias_faults) {
    float *d;
    cudaMalloc((void **)&d, 4096);
    cudaMemset(d, 0, 4096);
    HMat a(8, 8, 8, CUDA_R_32F);
    Lt t;
    cublasLtMatmulDescCreate(&t.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    void *bias = d + 512;
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    t.a = layout(a);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulHeuristicResult_t r;
    int n_r;
    ST_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, t.op, t.a, t.a, t.a, t.a, pref, 1, &r, &n_r) == CUBLAS_STATUS_SUCCESS);
    bias = d + 513;
    cublasLtMatmulDescSetAttribute(t.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    float al = 1, be = 0;
    ST_CHECK(cublasLtMatmul(g_lt, t.op, &al, d, t.a, d + 64, t.a, &be, d + 128, t.a, d + 128, t.a, &r.algo, nullptr, 0,
                            0) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cudaDeviceSynchronize() == cudaErrorMisalignedAddress);
    cublasLtMatmulPreferenceDestroy(pref);
}

/* The AUX epilogues (cublasLt.h, cublasLtEpilogue_t and
   CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_*): a forward GEMM with RELU_AUX_BIAS
   (or GELU_AUX_BIAS) keeps its activation's input (a bit mask, or the
   values), and a backward GEMM with DRELU_BGRAD (DGELU_BGRAD) multiplies
   its result by the activation's gradient there and stores the row sums
   as the bias gradient. Checked against float64, odd sizes; the mask is
   read back only through DRELU (its bit order is the library's). */
static void aux_pair(bool gelu_pair, cudaDataType t) {
    const int m = 37, n = 11, k = 9, k2 = 5;
    const int64_t aux_ld = gelu_pair ? 40 : 128;   /* divisible by 8 / by 128 (bits), >= m */
    HMat A(m, k, m, t), B(k, n, k, t), bias(m, 1, m, t), D(m, n, m, t), A2(m, k2, m, t), B2(k2, n, k2, t), D2(m, n, m, t),
        db(m, 1, m, t);
    fill(A); fill(B); fill(bias); fill(A2); fill(B2);
    void *dA = to_dev(A), *dB = to_dev(B), *dbias = to_dev(bias), *dD = to_dev(D), *dA2 = to_dev(A2), *dB2 = to_dev(B2),
         *dD2 = to_dev(D2), *ddb = to_dev(db), *aux;
    size_t aux_bytes = gelu_pair ? size_t(aux_ld) * n * tsize(t) : size_t(aux_ld) * n / 8;
    cudaMalloc(&aux, aux_bytes);
    float al = 1, be = 0;
    {
        Lt f;
        cublasLtMatmulDescCreate(&f.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        uint32_t epi = gelu_pair ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
        cublasLtMatmulDescSetAttribute(f.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        cublasLtMatmulDescSetAttribute(f.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
        cublasLtMatmulDescSetAttribute(f.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
        cublasLtMatmulDescSetAttribute(f.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld);
        f.a = layout(A); f.b = layout(B); f.d = layout(D);
        ST_CHECK(cublasLtMatmul(g_lt, f.op, &al, dA, f.a, dB, f.b, &be, dD, f.d, dD, f.d, nullptr, nullptr, 0, 0) ==
                 CUBLAS_STATUS_SUCCESS);
        /* the documented conditions on the leading dimension */
        int64_t bad_ld = gelu_pair ? 36 : 100;
        cublasLtMatmulDescSetAttribute(f.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &bad_ld, sizeof bad_ld);
        ST_CHECK(cublasLtMatmul(g_lt, f.op, &al, dA, f.a, dB, f.b, &be, dD, f.d, dD, f.d, nullptr, nullptr, 0, 0) ==
                 CUBLAS_STATUS_INVALID_VALUE);
    }
    {
        Lt b;
        cublasLtMatmulDescCreate(&b.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        uint32_t epi = gelu_pair ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DRELU_BGRAD;
        cublasLtMatmulDescSetAttribute(b.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        cublasLtMatmulDescSetAttribute(b.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ddb, sizeof ddb);
        cublasLtMatmulDescSetAttribute(b.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
        cublasLtMatmulDescSetAttribute(b.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld);
        b.a = layout(A2); b.b = layout(B2); b.d = layout(D2);
        ST_CHECK(cublasLtMatmul(g_lt, b.op, &al, dA2, b.a, dB2, b.b, &be, dD2, b.d, dD2, b.d, nullptr, nullptr, 0, 0) ==
                 CUBLAS_STATUS_SUCCESS);
    }
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    from_dev(D, dD); from_dev(D2, dD2); from_dev(db, ddb);
    double u = t == CUDA_R_32F ? ldexp(1.0, -23) : t == CUDA_R_16F ? ldexp(1.0, -10) : ldexp(1.0, -7);
    int bad = 0;
    for (int i = 0; i < m; ++i) {
        double sum = 0, mag = 0;
        for (int j = 0; j < n; ++j) {
            sum += D2.get(i, j);
            mag += fabs(D2.get(i, j));
            double x = bias.get(i, 0), g = 0, amag = fabs(bias.get(i, 0)), gmag = 0;
            for (int q = 0; q < k; ++q) { x += A.get(i, q) * B.get(q, j); amag += fabs(A.get(i, q) * B.get(q, j)); }
            for (int q = 0; q < k2; ++q) { g += A2.get(i, q) * B2.get(q, j); gmag += fabs(A2.get(i, q) * B2.get(q, j)); }
            double y = gelu_pair ? gelu(x) : (x > 0 ? x : 0);
            double slope = 1;
            if (gelu_pair) {
                double c = 0.7978845608028654, dd = 0.044715, th = tanh(c * (x + dd * x * x * x));
                slope = 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * c * (1 + 3 * dd * x * x);
            } else if (fabs(x) <= (k + 4) * u * amag) {
                continue;   /* a value within rounding of 0: either side of the mask is right */
            } else slope = x > 0 ? 1 : 0;
            double dx = g * slope;
            /* the GELU input is stored in D's type: its rounding moves the slope */
            double tol_y = (k + 4) * u * amag * (gelu_pair ? 1.2 : 1) + u * fabs(y) + 1e-6;
            double tol_dx = (k2 + 4) * u * gmag * fabs(slope) + 2 * u * fabs(dx) + (gelu_pair ? 4 * u * (amag + 1) * gmag : 0);
            if (fabs(D.get(i, j) - y) > tol_y || fabs(D2.get(i, j) - dx) > tol_dx) {
                if (bad++ < 4)
                    printf("    (%d,%d) forward %.7g want %.7g, backward %.7g want %.7g\n", i, j, D.get(i, j), y,
                           D2.get(i, j), dx);
            }
        }
        /* the bias gradient: the row sums of the gradient D2 as stored */
        if (fabs(db.get(i, 0) - sum) > (n + 4) * u * mag + 1e-6 && bad++ < 4)
            printf("    bias gradient %d: %.7g want %.7g\n", i, db.get(i, 0), sum);
    }
    ST_CHECKF(bad == 0, "%s pair, type %d: %d elements off", gelu_pair ? "GELU" : "ReLU", int(t), bad);
    for (void *p : {dA, dB, dbias, dD, dA2, dB2, dD2, ddb, aux}) cudaFree(p);
}

ST_TEST(aux_epilogues) {
    for (cudaDataType t : {CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF}) {
        aux_pair(false, t);
        aux_pair(true, t);
    }
}

static void run_numeric_tests() {
    ST_RUN(matmul_f32_layouts);
    ST_RUN(matmul_every_documented_type_row);
    ST_RUN(epilogues);
    ST_RUN(aux_epilogues);
    ST_RUN(strided_batches_with_bias);
    ST_RUN(c_broadcast_with_ld_zero);
    ST_RUN(relu_of_nan_is_zero);
    ST_RUN(tf32_only_with_fast_tf32);
    ST_RUN(device_pointer_mode);
    ST_RUN(heuristic_workspace);
}

int main() {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) g_major = prop.major;
    if (cublasLtCreate(&g_lt) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL cublasLtCreate\n");
        return 1;
    }
    run_numeric_tests();
#ifdef __CUEMU__
    setenv("CUEMU_CBLAS", "0", 1);
    printf("-- again without OpenBLAS --\n");
    run_numeric_tests();
    unsetenv("CUEMU_CBLAS");
    ST_RUN(counters);
#endif
    ST_RUN(alignment_preferences);
    ST_RUN(attributes);
    ST_RUN(argument_checks);
    ST_RUN(algorithm_queries);
    ST_RUN(misaligned_bias_faults);
    cublasLtDestroy(g_lt);
    return st_summary();
}
