/* cudnn_conv.cu - self-test of the emulated cuDNN convolutions: forward,
   backward data, backward filter, backward bias and the fused bias +
   activation, against a float64 reference written from the convolution
   formulas of the cuDNN documentation, for every data type configuration
   and every algorithm the heuristics list as supported; the adjoint and
   finite-difference relations between the three; algorithm lists,
   workspace sizes, math types; and the documented failures.

   An ordinary CUDA program (builds with nvcc -lcudnn too):
     tests/emu/nvcc-emu -o /tmp/t tests/emu/selftest/cudnn_conv.cu -lcudnn

   Tolerances (u = unit roundoff of the compute type: 2^-24 float, 2^-53
   double; n = products summed per output element):
     |got - ref| <= |alpha| * A * ((n + 2) * u + t) + 2u * |beta * prior|
                    + u_out * |ref| + h
   where A is the same sum over |operands| (the "sum |x||w|" of the error
   bound of a dot product), t = 2^-10 when the operands may be rounded to
   TF32 (FLOAT data, compute capability 8.0+, math other than FMA) or to
   HALF (ALLOW_CONVERSION), else 0; u_out is the rounding of the output
   type (2^-11 HALF, 2^-8 BFLOAT16, else u), h = 2^-24 for HALF outputs
   (subnormal spacing), else 0. Adjoint identities in double: relative
   1e-12. */
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "selftest.h"
#ifdef __CUEMU__
#include <cuemu.h>
#endif

/* >>host helpers ----------------------------------------------------- */

static int g_cc; /* compute capability, major * 10 + minor */

static uint32_t g_rng = 12345u;
/* uniform in [-1, -0.05] U [0.05, 1]: never zero */
static double frand(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    double u = (g_rng >> 8) / 16777216.0;
    double v = 0.05 + 0.95 * u;
    return (g_rng & 1) ? v : -v;
}

static uint16_t f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t s = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffff;
    if (a > 0x7f800000) return (uint16_t)(s | 0x7e00);
    if (a >= 0x477ff000) return (uint16_t)(s | 0x7c00);
    if (a < 0x38800000) return (uint16_t)(s | (uint16_t)nearbyintf(fabsf(f) * 16777216.0f));
    uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ff), r = a & 0x1fff;
    if (r > 0x1000 || (r == 0x1000 && (h & 1))) h++;
    return (uint16_t)(s | h);
}
static float h2f(uint16_t h) {
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff, s = (uint32_t)(h & 0x8000) << 16, x;
    if (e == 0x1f) x = s | 0x7f800000 | (m << 13);
    else if (e == 0) { float v = ldexpf((float)m, -24); return s ? -v : v; }
    else x = s | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static uint16_t f2b(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
static float b2f(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static size_t tsize(cudnnDataType_t t) { return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2; }

/* v rounded to what type t can hold */
static double quant(double v, cudnnDataType_t t) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return (float)v;
    case CUDNN_DATA_HALF: return h2f(f2h((float)v));
    case CUDNN_DATA_BFLOAT16: return b2f(f2b((float)v));
    default: return v;
    }
}

static std::vector<unsigned char> encode(const std::vector<double> &v, cudnnDataType_t t) {
    std::vector<unsigned char> b(v.size() * tsize(t));
    for (size_t i = 0; i < v.size(); i++) {
        if (t == CUDNN_DATA_DOUBLE) memcpy(&b[i * 8], &v[i], 8);
        else if (t == CUDNN_DATA_FLOAT) { float f = (float)v[i]; memcpy(&b[i * 4], &f, 4); }
        else { uint16_t h = t == CUDNN_DATA_HALF ? f2h((float)v[i]) : f2b((float)v[i]); memcpy(&b[i * 2], &h, 2); }
    }
    return b;
}

static std::vector<double> decode(const std::vector<unsigned char> &b, cudnnDataType_t t) {
    std::vector<double> v(b.size() / tsize(t));
    for (size_t i = 0; i < v.size(); i++) {
        if (t == CUDNN_DATA_DOUBLE) memcpy(&v[i], &b[i * 8], 8);
        else if (t == CUDNN_DATA_FLOAT) { float f; memcpy(&f, &b[i * 4], 4); v[i] = f; }
        else { uint16_t h; memcpy(&h, &b[i * 2], 2); v[i] = t == CUDNN_DATA_HALF ? h2f(h) : b2f(h); }
    }
    return v;
}

static std::vector<double> random_vec(size_t n, cudnnDataType_t t) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) v[i] = quant(frand(), t);
    return v;
}

/* A device buffer holding values of one type. */
struct Buf {
    void *p = nullptr;
    size_t bytes = 0;
    cudnnDataType_t t = CUDNN_DATA_FLOAT;
    Buf() {}
    Buf(const std::vector<double> &v, cudnnDataType_t type) : t(type) {
        std::vector<unsigned char> b = encode(v, t);
        bytes = b.size();
        cudaMalloc(&p, bytes ? bytes : 1);
        cudaMemcpy(p, b.data(), bytes, cudaMemcpyHostToDevice);
    }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
    ~Buf() { cudaFree(p); }
    void fill_nan() {
        std::vector<unsigned char> b(bytes, 0xff); /* all-ones: a NaN in every type */
        cudaMemcpy(p, b.data(), bytes, cudaMemcpyHostToDevice);
    }
    void set(const std::vector<double> &v) {
        std::vector<unsigned char> b = encode(v, t);
        cudaMemcpy(p, b.data(), bytes, cudaMemcpyHostToDevice);
    }
    std::vector<double> get() const {
        std::vector<unsigned char> b(bytes);
        cudaMemcpy(b.data(), p, bytes, cudaMemcpyDeviceToHost);
        return decode(b, t);
    }
};

/* >>the reference ---------------------------------------------------- */

struct Case {
    int N, C, H, W, K, R, S, ph, pw, u, v, dh, dw, G;
    cudnnConvolutionMode_t mode;
    int P() const { return 1 + (H + 2 * ph - ((R - 1) * dh + 1)) / u; }
    int Q() const { return 1 + (W + 2 * pw - ((S - 1) * dw + 1)) / v; }
    size_t xn() const { return (size_t)N * C * H * W; }
    size_t wn() const { return (size_t)K * (C / G) * R * S; }
    size_t yn() const { return (size_t)N * K * P() * Q(); }
};

enum Dir { FWD, BWD_DATA, BWD_FILTER };

/* The documented sum, one product at a time: x NCHW, w KCRS (C per group),
   y NKPQ, all packed. fwd: y += x * w; bwd data: x += y * w; bwd filter:
   w += x * y. With absval, the same sums of |operands|. */
static void reference(const Case &c, Dir d, std::vector<double> &x, std::vector<double> &w, std::vector<double> &y,
                      bool absval) {
    const int P = c.P(), Q = c.Q(), Cg = c.C / c.G, Kg = c.K / c.G;
    std::vector<double> &out = d == FWD ? y : d == BWD_DATA ? x : w;
    for (double &o : out) o = 0;
    for (int n = 0; n < c.N; n++)
        for (int k = 0; k < c.K; k++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++)
                    for (int cc = 0; cc < Cg; cc++)
                        for (int r = 0; r < c.R; r++)
                            for (int s = 0; s < c.S; s++) {
                                int ih = p * c.u - c.ph + r * c.dh, iw = q * c.v - c.pw + s * c.dw;
                                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                                int rr = c.mode == CUDNN_CONVOLUTION ? c.R - 1 - r : r;
                                int ss = c.mode == CUDNN_CONVOLUTION ? c.S - 1 - s : s;
                                size_t xi = (((size_t)n * c.C + (k / Kg) * Cg + cc) * c.H + ih) * c.W + iw;
                                size_t wi = (((size_t)k * Cg + cc) * c.R + rr) * c.S + ss;
                                size_t yi = (((size_t)n * c.K + k) * P + p) * Q + q;
                                double a = d == FWD ? x[xi] : y[yi], b = d == BWD_FILTER ? y[yi] : w[wi];
                                if (d == BWD_FILTER) a = x[xi];
                                double t = absval ? fabs(a) * fabs(b) : a * b;
                                if (d == FWD) out[yi] += t;
                                else if (d == BWD_DATA) out[xi] += t;
                                else out[wi] += t;
                            }
}

/* >>descriptors ------------------------------------------------------ */

struct Descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    Descs(const Case &c, cudnnDataType_t data, cudnnDataType_t compute, cudnnMathType_t math) {
        cudnnCreateTensorDescriptor(&x);
        cudnnCreateTensorDescriptor(&y);
        cudnnCreateFilterDescriptor(&w);
        cudnnCreateConvolutionDescriptor(&conv);
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, data, c.N, c.C, c.H, c.W);
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, data, c.N, c.K, c.P(), c.Q());
        cudnnSetFilter4dDescriptor(w, data, CUDNN_TENSOR_NCHW, c.K, c.C / c.G, c.R, c.S);
        cudnnSetConvolution2dDescriptor(conv, c.ph, c.pw, c.u, c.v, c.dh, c.dw, c.mode, compute);
        cudnnSetConvolutionGroupCount(conv, c.G);
        cudnnSetConvolutionMathType(conv, math);
    }
    ~Descs() {
        cudnnDestroyTensorDescriptor(x);
        cudnnDestroyTensorDescriptor(y);
        cudnnDestroyFilterDescriptor(w);
        cudnnDestroyConvolutionDescriptor(conv);
    }
};

static cudnnHandle_t g_h;

/* The heuristic list of one direction: algo, status, memory, math. */
struct Algo {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnMathType_t math;
    cudnnDeterminism_t det;
    float time;
};

static std::vector<Algo> heuristics(Dir d, Descs &ds, int *count_out) {
    std::vector<Algo> out;
    int ret = -1;
    if (d == FWD) {
        cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        *count_out = cudnnGetConvolutionForwardAlgorithm_v7(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &ret, p);
        for (int i = 0; i < ret; i++) out.push_back({p[i].algo, p[i].status, p[i].memory, p[i].mathType, p[i].determinism, p[i].time});
    } else if (d == BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        *count_out = cudnnGetConvolutionBackwardDataAlgorithm_v7(g_h, ds.w, ds.y, ds.conv, ds.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &ret, p);
        for (int i = 0; i < ret; i++) out.push_back({p[i].algo, p[i].status, p[i].memory, p[i].mathType, p[i].determinism, p[i].time});
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        *count_out = cudnnGetConvolutionBackwardFilterAlgorithm_v7(g_h, ds.x, ds.y, ds.conv, ds.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &ret, p);
        for (int i = 0; i < ret; i++) out.push_back({p[i].algo, p[i].status, p[i].memory, p[i].mathType, p[i].determinism, p[i].time});
    }
    return out;
}

static cudnnStatus_t ws_size(Dir d, Descs &ds, int algo, size_t *s) {
    if (d == FWD) return cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, (cudnnConvolutionFwdAlgo_t)algo, s);
    if (d == BWD_DATA)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(g_h, ds.w, ds.y, ds.conv, ds.x, (cudnnConvolutionBwdDataAlgo_t)algo, s);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(g_h, ds.x, ds.y, ds.conv, ds.w, (cudnnConvolutionBwdFilterAlgo_t)algo, s);
}

/* Runs one direction: a (x or dy), b (w or dy ...), out: as cuDNN orders
   them. alpha / beta as float or double by the data type. */
static cudnnStatus_t run_dir(Dir d, Descs &ds, int algo, const Buf &x, const Buf &w, const Buf &y, double alpha,
                             double beta, void *ws, size_t wsn, cudnnDataType_t t) {
    float af = (float)alpha, bf = (float)beta;
    const void *a = t == CUDNN_DATA_DOUBLE ? (const void *)&alpha : &af, *b = t == CUDNN_DATA_DOUBLE ? (const void *)&beta : &bf;
    if (d == FWD)
        return cudnnConvolutionForward(g_h, a, ds.x, x.p, ds.w, w.p, ds.conv, (cudnnConvolutionFwdAlgo_t)algo, ws, wsn, b, ds.y, y.p);
    if (d == BWD_DATA)
        return cudnnConvolutionBackwardData(g_h, a, ds.w, w.p, ds.y, y.p, ds.conv, (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsn, b,
                                            ds.x, x.p);
    return cudnnConvolutionBackwardFilter(g_h, a, ds.x, x.p, ds.y, y.p, ds.conv, (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsn, b,
                                          ds.w, w.p);
}

/* >>numerical checks ------------------------------------------------- */

struct Tol {
    double u, t, uout, h;
};

static Tol tolerance(cudnnDataType_t data, cudnnDataType_t compute, cudnnMathType_t math) {
    Tol t;
    t.u = data == CUDNN_DATA_DOUBLE ? ldexp(1, -53) : ldexp(1, -24);
    t.t = 0;
    if (data == CUDNN_DATA_FLOAT && g_cc >= 80 && math != CUDNN_FMA_MATH) t.t = ldexp(1, -10);
    if (data == CUDNN_DATA_FLOAT && math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) t.t = ldexp(1, -10);
    t.uout = data == CUDNN_DATA_HALF ? ldexp(1, -11) : data == CUDNN_DATA_BFLOAT16 ? ldexp(1, -8) : t.u;
    t.h = data == CUDNN_DATA_HALF ? ldexp(1, -24) : 0;
    (void)compute;
    return t;
}

static int terms(const Case &c, Dir d) {
    if (d == FWD) return (c.C / c.G) * c.R * c.S;
    if (d == BWD_DATA) return (c.K / c.G) * c.R * c.S;
    return c.N * c.P() * c.Q();
}

/* Counts elements outside the bound; reports the first. */
static int compare(const char *what, const std::vector<double> &got, const std::vector<double> &ref,
                   const std::vector<double> &absref, const std::vector<double> &prior, double alpha, double beta, const Tol &t,
                   int n) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double pr = beta != 0 ? prior[i] : 0;
        double expect = alpha * ref[i] + beta * pr;
        double bound = fabs(alpha) * absref[i] * ((n + 2) * t.u + t.t) + 2 * t.u * fabs(beta * pr) +
                       t.uout * fabs(expect) + t.h + 1e-300;
        if (!(fabs(got[i] - expect) <= bound)) {
            if (!bad)
                ST_CHECKF(0, "%s: element %zu is %.9g, expected %.9g (bound %.3g)", what, i, got[i], expect, bound);
            bad++;
        }
    }
    return bad;
}

/* One configuration, one direction, every supported algorithm: y := conv
   with y first NaN (beta = 0 must not read it), then blended into a prior
   y with alpha = 0.75, beta = -0.5. Also checks the list itself. */
static void check_direction(const Case &c, Dir d, cudnnDataType_t data, cudnnDataType_t compute, cudnnMathType_t math) {
    static const char *dname[] = {"forward", "backward data", "backward filter"};
    Descs ds(c, data, compute, math);
    std::vector<double> x = random_vec(c.xn(), data), w = random_vec(c.wn(), data), y = random_vec(c.yn(), data);
    std::vector<double> ax, aw, ay;
    for (double v : x) ax.push_back(fabs(v));
    for (double v : w) aw.push_back(fabs(v));
    for (double v : y) ay.push_back(fabs(v));
    std::vector<double> rx = x, rw = w, ry = y;
    reference(c, d, rx, rw, ry, false);
    reference(c, d, ax, aw, ay, true);
    const std::vector<double> &ref = d == FWD ? ry : d == BWD_DATA ? rx : rw;
    const std::vector<double> &absref = d == FWD ? ay : d == BWD_DATA ? ax : aw;
    Buf bx(x, data), bw(w, data), by(y, data);
    Buf &out = d == FWD ? by : d == BWD_DATA ? bx : bw;
    int count = 0;
    std::vector<Algo> list = heuristics(d, ds, &count);
    ST_CHECKF(count == CUDNN_STATUS_SUCCESS, "%s heuristics: status %d", dname[d], count);
    int total = d == FWD ? (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT
                         : d == BWD_DATA ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    ST_CHECKF((int)list.size() == total, "%s heuristics returned %zu of %d", dname[d], list.size(), total);
    int ran = 0;
    bool seen_unsupported = false;
    Tol tol = tolerance(data, compute, math);
    for (const Algo &a : list) {
        size_t need = 0;
        cudnnStatus_t s = ws_size(d, ds, a.algo, &need);
        if (a.status != CUDNN_STATUS_SUCCESS) {
            seen_unsupported = true;
            ST_CHECKF(a.status == CUDNN_STATUS_NOT_SUPPORTED, "%s algo %d listed with status %d", dname[d], a.algo, a.status);
            ST_CHECKF(s == CUDNN_STATUS_NOT_SUPPORTED, "%s algo %d: workspace query gave %d, listed unsupported", dname[d], a.algo, s);
            s = run_dir(d, ds, a.algo, bx, bw, by, 1, 0, nullptr, 0, data);
            ST_CHECKF(s == CUDNN_STATUS_NOT_SUPPORTED, "%s algo %d listed unsupported but the call gave %d", dname[d], a.algo, s);
            continue;
        }
        ST_CHECKF(!seen_unsupported, "%s: supported algo %d listed after an unsupported one", dname[d], a.algo);
        ST_CHECKF(s == CUDNN_STATUS_SUCCESS && need == a.memory, "%s algo %d: workspace %zu (status %d), list says %zu",
                  dname[d], a.algo, need, s, a.memory);
        if (data == CUDNN_DATA_HALF || data == CUDNN_DATA_BFLOAT16)
            ST_CHECKF(math != CUDNN_DEFAULT_MATH || a.math == CUDNN_DEFAULT_MATH,
                      "%s algo %d reports math %d under DEFAULT_MATH", dname[d], a.algo, a.math);
        void *ws = nullptr;
        if (need) cudaMalloc(&ws, need);
        char what[160];
        snprintf(what, sizeof what, "%s algo %d data %d compute %d math %d N%d C%d %dx%d K%d %dx%d G%d", dname[d], a.algo,
                 data, compute, math, c.N, c.C, c.H, c.W, c.K, c.R, c.S, c.G);
        out.fill_nan();
        s = run_dir(d, ds, a.algo, bx, bw, by, 1, 0, ws, need, data);
        ST_CHECKF(s == CUDNN_STATUS_SUCCESS, "%s: status %d", what, s);
        compare(what, out.get(), ref, absref, ref, 1, 0, tol, terms(c, d));
        std::vector<double> prior = random_vec(ref.size(), data);
        out.set(prior);
        s = run_dir(d, ds, a.algo, bx, bw, by, 0.75, -0.5, ws, need, data);
        ST_CHECKF(s == CUDNN_STATUS_SUCCESS, "%s (blend): status %d", what, s);
        compare(what, out.get(), ref, absref, prior, 0.75, -0.5, tol, terms(c, d));
        cudaFree(ws);
        out.set(d == FWD ? y : d == BWD_DATA ? x : w);
        ran++;
    }
    ST_CHECKF(ran > 0, "%s: no algorithm supported data %d compute %d", dname[d], data, compute);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

/* >>cases ------------------------------------------------------------ */

static const Case g_cases[] = {
    /* N  C  H   W  K  R  S ph pw u v dh dw G  mode */
    {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION},
    {3, 5, 11, 11, 4, 5, 5, 2, 2, 2, 2, 1, 1, 1, CUDNN_CONVOLUTION},
    {3, 5, 7, 7, 6, 1, 1, 0, 0, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION},
    {3, 6, 11, 11, 4, 3, 3, 1, 1, 1, 1, 2, 2, 2, CUDNN_CROSS_CORRELATION},
    {3, 6, 7, 11, 6, 3, 3, 0, 0, 2, 2, 1, 1, 3, CUDNN_CONVOLUTION},
    {3, 5, 11, 7, 3, 5, 3, 2, 1, 1, 2, 1, 2, 1, CUDNN_CROSS_CORRELATION},
    {3, 5, 7, 7, 4, 1, 1, 1, 1, 2, 2, 1, 1, 1, CUDNN_CROSS_CORRELATION},
    {3, 5, 7, 7, 4, 5, 5, 2, 2, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION},
};
static const int g_ncases = sizeof g_cases / sizeof g_cases[0];

static void all_cases(cudnnDataType_t data, cudnnDataType_t compute, cudnnMathType_t math) {
    for (int i = 0; i < g_ncases; i++)
        for (int d = 0; d < 3; d++) check_direction(g_cases[i], (Dir)d, data, compute, math);
}

ST_TEST(conv_float_fma) { all_cases(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH); }
ST_TEST(conv_float_default_math) { all_cases(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH); }
ST_TEST(conv_float_allow_conversion) { all_cases(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION); }
ST_TEST(conv_double) { all_cases(CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH); }
ST_TEST(conv_pseudo_half) { all_cases(CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH); }
ST_TEST(conv_pseudo_half_tensor_op) { all_cases(CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH); }
ST_TEST(conv_true_half) {
    if (g_cc < 53) { /* TRUE_HALF_CONFIG needs compute capability 5.3 */
        Descs ds(g_cases[0], CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH);
        size_t s;
        ST_CHECK(cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                         &s) == CUDNN_STATUS_NOT_SUPPORTED);
        return;
    }
    all_cases(CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH);
}
ST_TEST(conv_bfloat16) {
    if (g_cc < 80) return; /* checked as NOT_SUPPORTED in unsupported_configs */
    all_cases(CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH);
}

/* <conv(x, w), dy> = <x, backward_data(dy, w)> = <w, backward_filter(x, dy)>
   in double, and finite differences of L(x, w) = <conv(x, w), dy>. */
ST_TEST(conv_adjoints) {
    for (int i = 0; i < g_ncases; i++) {
        const Case &c = g_cases[i];
        Descs ds(c, CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH);
        std::vector<double> x = random_vec(c.xn(), CUDNN_DATA_DOUBLE), w = random_vec(c.wn(), CUDNN_DATA_DOUBLE);
        std::vector<double> dy = random_vec(c.yn(), CUDNN_DATA_DOUBLE), zx(c.xn()), zw(c.wn()), zy(c.yn());
        Buf bx(x, CUDNN_DATA_DOUBLE), bw(w, CUDNN_DATA_DOUBLE), by(zy, CUDNN_DATA_DOUBLE), bdy(dy, CUDNN_DATA_DOUBLE),
            bdx(zx, CUDNN_DATA_DOUBLE), bdw(zw, CUDNN_DATA_DOUBLE);
        ST_CHECK(run_dir(FWD, ds, 0, bx, bw, by, 1, 0, nullptr, 0, CUDNN_DATA_DOUBLE) == CUDNN_STATUS_SUCCESS);
        ST_CHECK(run_dir(BWD_DATA, ds, 0, bdx, bw, bdy, 1, 0, nullptr, 0, CUDNN_DATA_DOUBLE) == CUDNN_STATUS_SUCCESS);
        ST_CHECK(run_dir(BWD_FILTER, ds, 0, bx, bdw, bdy, 1, 0, nullptr, 0, CUDNN_DATA_DOUBLE) == CUDNN_STATUS_SUCCESS);
        std::vector<double> y = by.get(), dx = bdx.get(), dw = bdw.get();
        double l1 = 0, l2 = 0, l3 = 0, scale = 0;
        for (size_t j = 0; j < y.size(); j++) l1 += y[j] * dy[j], scale += fabs(y[j] * dy[j]);
        for (size_t j = 0; j < x.size(); j++) l2 += x[j] * dx[j];
        for (size_t j = 0; j < w.size(); j++) l3 += w[j] * dw[j];
        ST_CHECKF(fabs(l1 - l2) <= 1e-12 * scale && fabs(l1 - l3) <= 1e-12 * scale,
                  "case %d: <y,dy> %.17g <x,dx> %.17g <w,dw> %.17g", i, l1, l2, l3);
        /* finite differences: L is linear in x (and in w), so a step of
           0.5 changes it by exactly 0.5 * dL/dx_j up to rounding */
        for (int probe = 0; probe < 3; probe++) {
            size_t jx = (size_t)(probe * 7919) % x.size(), jw = (size_t)(probe * 104729) % w.size();
            std::vector<double> x2 = x, w2 = w;
            x2[jx] += 0.5;
            w2[jw] += 0.5;
            Buf bx2(x2, CUDNN_DATA_DOUBLE), bw2(w2, CUDNN_DATA_DOUBLE);
            size_t need = 0;
            ws_size(FWD, ds, 1, &need);
            void *ws = nullptr;
            if (need) cudaMalloc(&ws, need);
            ST_CHECK(run_dir(FWD, ds, 1, bx2, bw, by, 1, 0, ws, need, CUDNN_DATA_DOUBLE) == CUDNN_STATUS_SUCCESS);
            std::vector<double> yx = by.get();
            ST_CHECK(run_dir(FWD, ds, 1, bx, bw2, by, 1, 0, ws, need, CUDNN_DATA_DOUBLE) == CUDNN_STATUS_SUCCESS);
            cudaFree(ws);
            std::vector<double> yw = by.get();
            double lx = 0, lw = 0;
            for (size_t j = 0; j < y.size(); j++) lx += yx[j] * dy[j], lw += yw[j] * dy[j];
            ST_CHECKF(fabs((lx - l1) / 0.5 - dx[jx]) <= 1e-9 * (1 + scale), "case %d: dL/dx[%zu] %.12g, bwd data %.12g", i, jx,
                      (lx - l1) / 0.5, dx[jx]);
            ST_CHECKF(fabs((lw - l1) / 0.5 - dw[jw]) <= 1e-9 * (1 + scale), "case %d: dL/dw[%zu] %.12g, bwd filter %.12g", i, jw,
                      (lw - l1) / 0.5, dw[jw]);
        }
    }
}

/* NHWC tensors and filter, and NCHW tensors with padded strides, give the
   same result as the packed NCHW reference. */
ST_TEST(conv_layouts) {
    const Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
    std::vector<double> x = random_vec(c.xn(), CUDNN_DATA_FLOAT), w = random_vec(c.wn(), CUDNN_DATA_FLOAT), y(c.yn());
    std::vector<double> ref_x = x, ref_w = w, ref_y = y, ax, aw, ay(c.yn());
    reference(c, FWD, ref_x, ref_w, ref_y, false);
    for (double v : x) ax.push_back(fabs(v));
    for (double v : w) aw.push_back(fabs(v));
    reference(c, FWD, ax, aw, ay, true);
    const int P = c.P(), Q = c.Q();
    /* NHWC copies */
    std::vector<double> xh(x.size()), wh(w.size());
    for (int n = 0; n < c.N; n++)
        for (int ch = 0; ch < c.C; ch++)
            for (int h = 0; h < c.H; h++)
                for (int ww = 0; ww < c.W; ww++)
                    xh[((n * c.H + h) * c.W + ww) * c.C + ch] = x[((n * c.C + ch) * c.H + h) * c.W + ww];
    for (int k = 0; k < c.K; k++)
        for (int ch = 0; ch < c.C; ch++)
            for (int r = 0; r < c.R; r++)
                for (int s = 0; s < c.S; s++) wh[((k * c.R + r) * c.S + s) * c.C + ch] = w[((k * c.C + ch) * c.R + r) * c.S + s];
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH);
    ST_CHECK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, c.N, c.C, c.H, c.W) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, c.N, c.K, P, Q) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, c.K, c.C, c.R, c.S) == CUDNN_STATUS_SUCCESS);
    Buf bx(xh, CUDNN_DATA_FLOAT), bw(wh, CUDNN_DATA_FLOAT), by(std::vector<double>(c.yn()), CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    ST_CHECK(cudnnConvolutionForward(g_h, &one, xd, bx.p, wd, bw.p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                     yd, by.p) == CUDNN_STATUS_SUCCESS);
    /* FFT needs NCHW: not supported with these descriptors */
    ST_CHECK(cudnnConvolutionForward(g_h, &one, xd, bx.p, wd, bw.p, cd, CUDNN_CONVOLUTION_FWD_ALGO_FFT, nullptr, 0, &zero, yd, by.p) ==
             CUDNN_STATUS_NOT_SUPPORTED);
    std::vector<double> yh = by.get(), yn(c.yn());
    for (int n = 0; n < c.N; n++)
        for (int k = 0; k < c.K; k++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++) yn[((n * c.K + k) * P + p) * Q + q] = yh[((n * P + p) * Q + q) * c.K + k];
    Tol t = tolerance(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
    compare("NHWC forward", yn, ref_y, ay, ay, 1, 0, t, terms(c, FWD));
    /* NCHW with row padding: h stride W + 3, and an image gap */
    const int hs = c.W + 3, cs = c.H * hs, ns = c.C * cs + 5;
    std::vector<double> xs((size_t)c.N * ns, 0.0);
    for (int n = 0; n < c.N; n++)
        for (int ch = 0; ch < c.C; ch++)
            for (int h = 0; h < c.H; h++)
                for (int ww = 0; ww < c.W; ww++) xs[(size_t)n * ns + ch * cs + h * hs + ww] = x[((n * c.C + ch) * c.H + h) * c.W + ww];
    Buf bxs(xs, CUDNN_DATA_FLOAT), bwn(w, CUDNN_DATA_FLOAT);
    ST_CHECK(cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, c.N, c.C, c.H, c.W, ns, cs, hs, 1) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, c.N, c.K, P, Q) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, c.K, c.C, c.R, c.S) == CUDNN_STATUS_SUCCESS);
    size_t tsz = 0;
    ST_CHECK(cudnnGetTensorSizeInBytes(xd, &tsz) == CUDNN_STATUS_SUCCESS && tsz == ((size_t)(c.N - 1) * ns + (c.C - 1) * cs +
                                                                                  (c.H - 1) * hs + c.W) * 4);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, xd, bxs.p, wd, bwn.p, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, nullptr,
                                     0, &zero, yd, by.p) != CUDNN_STATUS_SUCCESS); /* needs its workspace */
    size_t need = 0;
    ST_CHECK(cudnnGetConvolutionForwardWorkspaceSize(g_h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &need) ==
             CUDNN_STATUS_SUCCESS);
    void *ws = nullptr;
    cudaMalloc(&ws, need);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, xd, bxs.p, wd, bwn.p, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws, need, &zero, yd, by.p) ==
             CUDNN_STATUS_SUCCESS);
    cudaFree(ws);
    compare("strided NCHW forward", by.get(), ref_y, ay, ay, 1, 0, t, terms(c, FWD));
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
}

/* db = alpha * sum over n, h, w of dy + beta * db. */
ST_TEST(conv_backward_bias) {
    const cudnnDataType_t types[] = {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF};
    for (cudnnDataType_t t : types) {
        const int N = 3, C = 5, H = 7, W = 11;
        std::vector<double> dy = random_vec((size_t)N * C * H * W, t), db = random_vec(C, t), ref(C, 0), aref(C, 0);
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                for (int i = 0; i < H * W; i++) ref[c] += dy[((size_t)n * C + c) * H * W + i], aref[c] += fabs(dy[((size_t)n * C + c) * H * W + i]);
        cudnnTensorDescriptor_t dyd, dbd;
        cudnnCreateTensorDescriptor(&dyd);
        cudnnCreateTensorDescriptor(&dbd);
        cudnnSetTensor4dDescriptor(dyd, CUDNN_TENSOR_NCHW, t, N, C, H, W);
        cudnnSetTensor4dDescriptor(dbd, CUDNN_TENSOR_NCHW, t, 1, C, 1, 1);
        Buf bdy(dy, t), bdb(db, t);
        double a = 1.25, b = 0.5;
        float af = 1.25f, bf = 0.5f;
        const void *ap = t == CUDNN_DATA_DOUBLE ? (const void *)&a : &af, *bp = t == CUDNN_DATA_DOUBLE ? (const void *)&b : &bf;
        ST_CHECK(cudnnConvolutionBackwardBias(g_h, ap, dyd, bdy.p, bp, dbd, bdb.p) == CUDNN_STATUS_SUCCESS);
        Tol tol = tolerance(t, t, CUDNN_FMA_MATH);
        compare("backward bias", bdb.get(), ref, aref, db, a, b, tol, 1);
        cudnnSetTensor4dDescriptor(dbd, CUDNN_TENSOR_NCHW, t, 1, C + 1, 1, 1);
        ST_CHECK(cudnnConvolutionBackwardBias(g_h, ap, dyd, bdy.p, bp, dbd, bdb.p) == CUDNN_STATUS_BAD_PARAM);
        cudnnDestroyTensorDescriptor(dyd);
        cudnnDestroyTensorDescriptor(dbd);
    }
}

/* y = relu(alpha1 * conv + alpha2 * z + bias) */
ST_TEST(conv_bias_activation) {
    const Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
    Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
    std::vector<double> x = random_vec(c.xn(), CUDNN_DATA_FLOAT), w = random_vec(c.wn(), CUDNN_DATA_FLOAT);
    std::vector<double> z = random_vec(c.yn(), CUDNN_DATA_FLOAT), bias = random_vec(c.K, CUDNN_DATA_FLOAT), y(c.yn());
    std::vector<double> rx = x, rw = w, ry = y, ax, aw, ay(c.yn());
    reference(c, FWD, rx, rw, ry, false);
    for (double v : x) ax.push_back(fabs(v));
    for (double v : w) aw.push_back(fabs(v));
    reference(c, FWD, ax, aw, ay, true);
    const int PQ = c.P() * c.Q();
    std::vector<double> expect(c.yn()), zero_prior(c.yn());
    for (size_t i = 0; i < expect.size(); i++) {
        double v = 0.5 * ry[i] + 2.0 * z[i] + bias[(i / PQ) % c.K];
        expect[i] = v > 0 ? v : 0;
        ay[i] = 0.5 * ay[i] + 2 * fabs(z[i]) + fabs(bias[(i / PQ) % c.K]);
    }
    cudnnTensorDescriptor_t bd;
    cudnnCreateTensorDescriptor(&bd);
    cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, c.K, 1, 1);
    cudnnActivationDescriptor_t act;
    cudnnCreateActivationDescriptor(&act);
    cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0);
    Buf bx(x, CUDNN_DATA_FLOAT), bw(w, CUDNN_DATA_FLOAT), bz(z, CUDNN_DATA_FLOAT), bb(bias, CUDNN_DATA_FLOAT), by(y, CUDNN_DATA_FLOAT);
    float a1 = 0.5f, a2 = 2.0f;
    ST_CHECK(cudnnConvolutionBiasActivationForward(g_h, &a1, ds.x, bx.p, ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                   nullptr, 0, &a2, ds.y, bz.p, bd, bb.p, act, ds.y, by.p) == CUDNN_STATUS_SUCCESS);
    Tol t = tolerance(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
    compare("bias activation", by.get(), expect, ay, zero_prior, 1, 0, t, terms(c, FWD) + 2);
    cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_TANH, CUDNN_NOT_PROPAGATE_NAN, 0.0);
    ST_CHECK(cudnnConvolutionBiasActivationForward(g_h, &a1, ds.x, bx.p, ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                   nullptr, 0, &a2, ds.y, bz.p, bd, bb.p, act, ds.y, by.p) == CUDNN_STATUS_NOT_SUPPORTED);
    cudnnDestroyActivationDescriptor(act);
    cudnnDestroyTensorDescriptor(bd);
}

/* >>queries, lists, math types --------------------------------------- */

ST_TEST(library_info) {
    ST_CHECK(cudnnGetVersion() == CUDNN_VERSION && CUDNN_VERSION == 91900);
    int v = -1;
    ST_CHECK(cudnnGetProperty(MAJOR_VERSION, &v) == CUDNN_STATUS_SUCCESS && v == 9);
    ST_CHECK(cudnnGetProperty(MINOR_VERSION, &v) == CUDNN_STATUS_SUCCESS && v == 19);
    ST_CHECK(cudnnGetProperty(PATCH_LEVEL, &v) == CUDNN_STATUS_SUCCESS && v == 0);
    ST_CHECK(cudnnGetProperty(MAJOR_VERSION, nullptr) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM") == 0);
    ST_CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED") == 0);
    ST_CHECK(cudnnGetCudartVersion() >= 13000);
    char msg[256] = "";
    ST_CHECK(cudnnCreate(nullptr) == CUDNN_STATUS_BAD_PARAM);
    cudnnGetLastErrorString(msg, sizeof msg);
    ST_CHECKF(strstr(msg, "cudnnCreate") != nullptr, "last error: '%s'", msg);
    cudaStream_t s, got = nullptr;
    ST_CHECK(cudaStreamCreate(&s) == cudaSuccess);
    ST_CHECK(cudnnSetStream(g_h, s) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnGetStream(g_h, &got) == CUDNN_STATUS_SUCCESS && got == s);
    ST_CHECK(cudnnSetStream(g_h, nullptr) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudaStreamDestroy(s) == cudaSuccess);
    int n = 0;
    ST_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(g_h, &n) == CUDNN_STATUS_SUCCESS && n == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    ST_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(g_h, &n) == CUDNN_STATUS_SUCCESS && n == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    ST_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(g_h, &n) == CUDNN_STATUS_SUCCESS &&
             n == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
}

ST_TEST(descriptors) {
    cudnnTensorDescriptor_t t;
    ST_CHECK(cudnnCreateTensorDescriptor(&t) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, 3, 5, 7) == CUDNN_STATUS_SUCCESS);
    cudnnDataType_t dt;
    int n, c, h, w, ns, cs, hs, ws;
    ST_CHECK(cudnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(dt == CUDNN_DATA_HALF && n == 2 && c == 3 && h == 5 && w == 7);
    ST_CHECK(cs == 1 && ws == 3 && hs == 21 && ns == 105);
    ST_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 3, 5, 7) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, -3, 5, 7) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 5, 7, 105, 35, 7, -1) == CUDNN_STATUS_BAD_PARAM);
    int dims[3] = {4, 5, 6}, strides[3] = {30, 6, 1};
    ST_CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_DOUBLE, 3, dims, strides) == CUDNN_STATUS_SUCCESS);
    int nb = 0, gd[8], gs[8];
    ST_CHECK(cudnnGetTensorNdDescriptor(t, 8, &dt, &nb, gd, gs) == CUDNN_STATUS_SUCCESS && nb == 3 && gd[2] == 6 && gs[0] == 30);
    ST_CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_DOUBLE, 9, dims, strides) == CUDNN_STATUS_NOT_SUPPORTED);
    ST_CHECK(cudnnDestroyTensorDescriptor(t) == CUDNN_STATUS_SUCCESS);
    cudnnFilterDescriptor_t f;
    cudnnCreateFilterDescriptor(&f);
    ST_CHECK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, 3, 3, 3) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 4, 3, 5, 5) == CUDNN_STATUS_SUCCESS);
    cudnnTensorFormat_t fmt;
    ST_CHECK(cudnnGetFilter4dDescriptor(f, &dt, &fmt, &n, &c, &h, &w) == CUDNN_STATUS_SUCCESS && fmt == CUDNN_TENSOR_NHWC && n == 4);
    size_t sz = 0;
    ST_CHECK(cudnnGetFilterSizeInBytes(f, &sz) == CUDNN_STATUS_SUCCESS && sz == 4 * 3 * 5 * 5 * 4);
    cudnnDestroyFilterDescriptor(f);
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnMathType_t m;
    int g;
    ST_CHECK(cudnnGetConvolutionMathType(cd, &m) == CUDNN_STATUS_SUCCESS && m == CUDNN_DEFAULT_MATH);
    ST_CHECK(cudnnGetConvolutionGroupCount(cd, &g) == CUDNN_STATUS_SUCCESS && g == 1);
    ST_CHECK(cudnnSetConvolution2dDescriptor(cd, -1, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetConvolution2dDescriptor(cd, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 0, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, (cudnnConvolutionMode_t)7, CUDNN_DATA_FLOAT) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetConvolution2dDescriptor(cd, 2, 1, 3, 2, 2, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_HALF) == CUDNN_STATUS_SUCCESS);
    int p0, p1, s0, s1, d0, d1;
    cudnnConvolutionMode_t mode;
    ST_CHECK(cudnnGetConvolution2dDescriptor(cd, &p0, &p1, &s0, &s1, &d0, &d1, &mode, &dt) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(p0 == 2 && p1 == 1 && s0 == 3 && s1 == 2 && d0 == 2 && d1 == 1 && mode == CUDNN_CROSS_CORRELATION && dt == CUDNN_DATA_HALF);
    ST_CHECK(cudnnSetConvolutionGroupCount(cd, 0) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetConvolutionMathType(cd, (cudnnMathType_t)9) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnGetConvolutionMathType(cd, &m) == CUDNN_STATUS_SUCCESS && m == CUDNN_TENSOR_OP_MATH);
    cudnnDestroyConvolutionDescriptor(cd);
}

/* Output dimensions by the documented formula, and its BAD_PARAM cases. */
ST_TEST(output_dims) {
    for (int i = 0; i < g_ncases; i++) {
        const Case &c = g_cases[i];
        Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
        int n, k, p, q;
        ST_CHECK(cudnnGetConvolution2dForwardOutputDim(ds.conv, ds.x, ds.w, &n, &k, &p, &q) == CUDNN_STATUS_SUCCESS);
        ST_CHECKF(n == c.N && k == c.K && p == c.P() && q == c.Q(), "case %d: %dx%dx%dx%d", i, n, k, p, q);
        int dims[4];
        ST_CHECK(cudnnGetConvolutionNdForwardOutputDim(ds.conv, ds.x, ds.w, 4, dims) == CUDNN_STATUS_SUCCESS && dims[2] == c.P());
    }
    Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION};
    {
        Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
        int n, k, p, q;
        cudnnSetFilter4dDescriptor(ds.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 4, 3, 3); /* 4 != 5 input maps */
        ST_CHECK(cudnnGetConvolution2dForwardOutputDim(ds.conv, ds.x, ds.w, &n, &k, &p, &q) == CUDNN_STATUS_BAD_PARAM);
        cudnnSetFilter4dDescriptor(ds.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 5, 11, 3); /* taller than 7 + 2 */
        ST_CHECK(cudnnGetConvolution2dForwardOutputDim(ds.conv, ds.x, ds.w, &n, &k, &p, &q) == CUDNN_STATUS_BAD_PARAM);
        cudnnSetFilter4dDescriptor(ds.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 5, 3, 3);
        cudnnSetConvolution2dDescriptor(ds.conv, 1, 1, 1, 1, 5, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT); /* dilated: 11 > 9 */
        ST_CHECK(cudnnGetConvolution2dForwardOutputDim(ds.conv, ds.x, ds.w, &n, &k, &p, &q) == CUDNN_STATUS_BAD_PARAM);
        cudnnSetConvolution2dDescriptor(ds.conv, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT);
        cudnnSetConvolutionGroupCount(ds.conv, 2); /* 5 maps are not 3 per group x 2 */
        ST_CHECK(cudnnGetConvolution2dForwardOutputDim(ds.conv, ds.x, ds.w, &n, &k, &p, &q) == CUDNN_STATUS_BAD_PARAM);
    }
}

/* The documented failures of the convolution calls. */
ST_TEST(conv_bad_calls) {
    Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION};
    Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
    std::vector<double> x = random_vec(c.xn(), CUDNN_DATA_FLOAT), w = random_vec(c.wn(), CUDNN_DATA_FLOAT), y(c.yn());
    Buf bx(x, CUDNN_DATA_FLOAT), bw(w, CUDNN_DATA_FLOAT), by(y, CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    const cudnnConvolutionFwdAlgo_t A0 = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    ST_CHECK(cudnnConvolutionForward(g_h, nullptr, ds.x, bx.p, ds.w, bw.p, ds.conv, A0, nullptr, 0, &zero, ds.y, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, nullptr, ds.w, bw.p, ds.conv, A0, nullptr, 0, &zero, ds.y, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnConvolutionForward(nullptr, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, A0, nullptr, 0, &zero, ds.y, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, (cudnnConvolutionFwdAlgo_t)42, nullptr, 0, &zero,
                                     ds.y, by.p) == CUDNN_STATUS_BAD_PARAM);
    /* output dimensions that are not the formula's: NOT_SUPPORTED forward,
       BAD_PARAM backward data */
    cudnnTensorDescriptor_t wrong;
    cudnnCreateTensorDescriptor(&wrong);
    cudnnSetTensor4dDescriptor(wrong, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, c.N, c.K, c.P() - 1, c.Q());
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, A0, nullptr, 0, &zero, wrong, by.p) ==
             CUDNN_STATUS_NOT_SUPPORTED);
    ST_CHECK(cudnnConvolutionBackwardData(g_h, &one, ds.w, bw.p, wrong, by.p, ds.conv, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0,
                                          &zero, ds.x, bx.p) == CUDNN_STATUS_BAD_PARAM);
    /* non-matching data types */
    cudnnSetTensor4dDescriptor(wrong, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, c.N, c.K, c.P(), c.Q());
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, A0, nullptr, 0, &zero, wrong, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    /* channels that do not match the filter */
    cudnnSetTensor4dDescriptor(wrong, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, c.N, c.C + 1, c.H, c.W);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, wrong, bx.p, ds.w, bw.p, ds.conv, A0, nullptr, 0, &zero, ds.y, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnConvolutionBackwardFilter(g_h, &one, wrong, bx.p, ds.y, by.p, ds.conv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr,
                                            0, &zero, ds.w, bw.p) == CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(wrong);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

/* Configurations and algorithms the documentation does not support. */
ST_TEST(unsupported_configs) {
    float one = 1, zero = 0;
    {   /* FFT and FFT_TILING need stride 1 (FFT_TILING: 1 or 2); Winograd
           3x3 (nonfused also 5x5), stride 1; DIRECT is not implemented */
        Case c = {3, 5, 11, 11, 4, 5, 5, 2, 2, 3, 3, 1, 1, 1, CUDNN_CONVOLUTION};
        Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
        Buf bx(random_vec(c.xn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT), bw(random_vec(c.wn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT),
            by(std::vector<double>(c.yn()), CUDNN_DATA_FLOAT);
        const cudnnConvolutionFwdAlgo_t bad[] = {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_DIRECT};
        int count = 0;
        std::vector<Algo> list = heuristics(FWD, ds, &count);
        for (cudnnConvolutionFwdAlgo_t a : bad) {
            size_t s = 0;
            ST_CHECKF(cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, a, &s) == CUDNN_STATUS_NOT_SUPPORTED,
                      "algo %d", a);
            ST_CHECKF(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, a, nullptr, 0, &zero, ds.y, by.p) ==
                          CUDNN_STATUS_NOT_SUPPORTED,
                      "algo %d", a);
            for (const Algo &e : list)
                if (e.algo == a) ST_CHECKF(e.status == CUDNN_STATUS_NOT_SUPPORTED, "algo %d listed as supported", a);
        }
    }
    {   /* stride 1, 3x3: FFT and Winograd are listed as supported; the
           backward filter WINOGRAD is never implemented */
        Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION};
        Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
        int count = 0;
        for (const Algo &e : heuristics(FWD, ds, &count))
            if (e.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || e.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT)
                ST_CHECKF(e.status == CUDNN_STATUS_SUCCESS, "algo %d not supported for 3x3 stride 1", e.algo);
        for (const Algo &e : heuristics(BWD_FILTER, ds, &count)) {
            if (e.algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD) ST_CHECK(e.status == CUDNN_STATUS_NOT_SUPPORTED);
            if (e.algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || e.algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3)
                ST_CHECK(e.det == CUDNN_NON_DETERMINISTIC);
            if (e.algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1) ST_CHECK(e.det == CUDNN_DETERMINISTIC);
        }
        for (const Algo &e : heuristics(BWD_DATA, ds, &count)) {
            if (e.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) ST_CHECK(e.det == CUDNN_NON_DETERMINISTIC);
            if (e.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1) ST_CHECK(e.det == CUDNN_DETERMINISTIC);
        }
        for (const Algo &e : heuristics(FWD, ds, &count)) ST_CHECK(e.time == -1.0f);
    }
    {   /* data / compute type pairs outside the configuration tables */
        Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION};
        const cudnnDataType_t pairs[][2] = {{CUDNN_DATA_DOUBLE, CUDNN_DATA_FLOAT}, {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE},
                                            {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF}, {CUDNN_DATA_HALF, CUDNN_DATA_DOUBLE},
                                            {CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16}};
        for (auto &pr : pairs) {
            Descs ds(c, pr[0], pr[1], CUDNN_DEFAULT_MATH);
            size_t s;
            ST_CHECKF(cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                              &s) == CUDNN_STATUS_NOT_SUPPORTED,
                      "data %d compute %d", pr[0], pr[1]);
        }
        if (g_cc < 80) { /* PSEUDO_BFLOAT16_CONFIG needs compute capability 8.0 */
            Descs ds(c, CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
            size_t s;
            ST_CHECK(cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                             &s) == CUDNN_STATUS_NOT_SUPPORTED);
        }
        /* the heuristics answer a configuration no algorithm supports with
           a list of NOT_SUPPORTED entries */
        Descs ds(c, CUDNN_DATA_DOUBLE, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
        int status = -1;
        std::vector<Algo> list = heuristics(FWD, ds, &status);
        ST_CHECK(status == CUDNN_STATUS_SUCCESS && list.size() == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
        for (const Algo &e : list) ST_CHECK(e.status == CUDNN_STATUS_NOT_SUPPORTED);
    }
}

/* A workspace smaller than the query, or none when one is needed: BAD_PARAM. */
ST_TEST(workspace_checks) {
    Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION};
    Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
    Buf bx(random_vec(c.xn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT), bw(random_vec(c.wn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT),
        by(std::vector<double>(c.yn()), CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    size_t need = 0, zero_need = 1;
    ST_CHECK(cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &need) ==
             CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                     &zero_need) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(need > 0 && zero_need == 0);
    void *ws = nullptr;
    cudaMalloc(&ws, need);
    const cudnnConvolutionFwdAlgo_t G = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, G, ws, need - 1, &zero, ds.y, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, G, nullptr, need, &zero, ds.y, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, G, ws, need, &zero, ds.y, by.p) ==
             CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                     &zero, ds.y, by.p) == CUDNN_STATUS_SUCCESS);
    size_t bd = 0;
    ST_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(g_h, ds.w, ds.y, ds.conv, ds.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &bd) ==
             CUDNN_STATUS_SUCCESS);
    if (bd)
        ST_CHECK(cudnnConvolutionBackwardData(g_h, &one, ds.w, bw.p, ds.y, by.p, ds.conv, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, ws, bd - 1,
                                              &zero, ds.x, bx.p) == CUDNN_STATUS_BAD_PARAM);
    cudaFree(ws);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

/* Math types in the lists: DEFAULT_MATH never reports tensor ops for
   16-bit data; TENSOR_OP_MATH does for the tensor-core algorithms on
   Volta and later, and not for the others. */
ST_TEST(math_types) {
    Case c = {3, 8, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
    {
        Descs ds(c, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
        for (int d = 0; d < 3; d++) {
            int count;
            for (const Algo &e : heuristics((Dir)d, ds, &count))
                if (e.status == CUDNN_STATUS_SUCCESS) ST_CHECKF(e.math == CUDNN_DEFAULT_MATH, "dir %d algo %d math %d", d, e.algo, e.math);
        }
    }
    {
        Descs ds(c, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH);
        int count;
        for (const Algo &e : heuristics(FWD, ds, &count)) {
            if (e.status != CUDNN_STATUS_SUCCESS) continue;
            bool tc = e.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM || e.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
            cudnnMathType_t want = tc && g_cc >= 70 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
            ST_CHECKF(e.math == want, "algo %d math %d, want %d", e.algo, e.math, want);
        }
    }
    {
        Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
        int count;
        for (const Algo &e : heuristics(BWD_FILTER, ds, &count))
            if (e.status == CUDNN_STATUS_SUCCESS) ST_CHECK(e.math == CUDNN_FMA_MATH);
    }
}

/* cudnnFind*: supported algorithms first, by increasing time, then the
   others with time -1; FindEx also writes the result. */
ST_TEST(find_algorithms) {
    Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
    Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
    cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int ret = 0;
    ST_CHECK(cudnnFindConvolutionForwardAlgorithm(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &ret, p) ==
             CUDNN_STATUS_SUCCESS);
    ST_CHECK(ret == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    bool tail = false;
    for (int i = 0; i < ret; i++) {
        if (p[i].status != CUDNN_STATUS_SUCCESS) {
            tail = true;
            ST_CHECK(p[i].time < 0);
            continue;
        }
        ST_CHECK(!tail && p[i].time >= 0);
        if (i > 0 && p[i - 1].status == CUDNN_STATUS_SUCCESS) ST_CHECK(p[i - 1].time <= p[i].time);
    }
    ST_CHECK(cudnnFindConvolutionForwardAlgorithm(g_h, ds.x, ds.w, ds.conv, ds.y, 0, &ret, p) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnFindConvolutionForwardAlgorithm(g_h, ds.x, ds.w, ds.conv, ds.y, 2, &ret, p) == CUDNN_STATUS_SUCCESS && ret == 2);
    std::vector<double> x = random_vec(c.xn(), CUDNN_DATA_FLOAT), w = random_vec(c.wn(), CUDNN_DATA_FLOAT), y(c.yn());
    std::vector<double> rx = x, rw = w, ry = y, ax, aw, ay(c.yn());
    reference(c, FWD, rx, rw, ry, false);
    for (double v : x) ax.push_back(fabs(v));
    for (double v : w) aw.push_back(fabs(v));
    reference(c, FWD, ax, aw, ay, true);
    Buf bx(x, CUDNN_DATA_FLOAT), bw(w, CUDNN_DATA_FLOAT), by(y, CUDNN_DATA_FLOAT);
    by.fill_nan();
    ST_CHECK(cudnnFindConvolutionForwardAlgorithmEx(g_h, ds.x, bx.p, ds.w, bw.p, ds.conv, ds.y, by.p, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                    &ret, p, nullptr, 0) == CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < ret; i++)
        if (p[i].memory > 0) ST_CHECKF(p[i].status != CUDNN_STATUS_SUCCESS, "algo %d needs %zu bytes of a 0-byte workspace", p[i].algo,
                                       p[i].memory);
    compare("FindEx result", by.get(), ry, ay, ay, 1, 0, tolerance(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH),
            terms(c, FWD));
    cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    ST_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(g_h, ds.w, ds.y, ds.conv, ds.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &ret, pd) ==
                 CUDNN_STATUS_SUCCESS &&
             ret == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT && pd[0].status == CUDNN_STATUS_SUCCESS);
    cudnnConvolutionBwdFilterAlgoPerf_t pf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    ST_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(g_h, ds.x, ds.y, ds.conv, ds.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &ret,
                                                         pf) == CUDNN_STATUS_SUCCESS &&
             ret == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT && pf[0].status == CUDNN_STATUS_SUCCESS);
}

#ifdef __CUEMU__
/* One queued unit of work per computing call; the others count as API calls. */
ST_TEST(counters) {
    Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
    Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
    Buf bx(random_vec(c.xn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT), bw(random_vec(c.wn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT),
        by(std::vector<double>(c.yn()), CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    cuemu_counters a, b;
    cuemu_counters_reset();
    cuemu_counters_get(&a);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                     &zero, ds.y, by.p) == CUDNN_STATUS_SUCCESS);
    cuemu_counters_get(&b);
    ST_CHECK(b.library_calls - a.library_calls == 1 && b.library_api_calls == a.library_api_calls);
    size_t s;
    cudnnGetConvolutionForwardWorkspaceSize(g_h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &s);
    cudnnSetConvolutionMathType(ds.conv, CUDNN_DEFAULT_MATH);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, bx.p, ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, nullptr, 0, &zero,
                                     ds.y, by.p) == CUDNN_STATUS_NOT_SUPPORTED);
    cuemu_counters_get(&a);
    ST_CHECKF(a.library_calls == b.library_calls && a.library_api_calls - b.library_api_calls == 3,
              "library calls %llu -> %llu, API calls %llu -> %llu", (unsigned long long)b.library_calls,
              (unsigned long long)a.library_calls, (unsigned long long)b.library_api_calls, (unsigned long long)a.library_api_calls);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}
#endif

/* Last: a host pointer as x faults like a kernel, the next synchronize
   returns cudaErrorIllegalAddress, and cuDNN calls then report
   EXECUTION_FAILED. */
ST_TEST(host_pointer_faults) {
    Case c = {3, 5, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
    Descs ds(c, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
    std::vector<float> host_x(c.xn(), 1.0f);
    Buf bw(random_vec(c.wn(), CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT), by(std::vector<double>(c.yn()), CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, host_x.data(), ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                     nullptr, 0, &zero, ds.y, by.p) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    ST_CHECK(cudnnConvolutionForward(g_h, &one, ds.x, by.p, ds.w, bw.p, ds.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                     &zero, ds.y, by.p) == CUDNN_STATUS_EXECUTION_FAILED);
}

int main(void) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        printf("no device\n");
        return 1;
    }
    g_cc = prop.major * 10 + prop.minor;
    if (cudnnCreate(&g_h) != CUDNN_STATUS_SUCCESS) {
        printf("cudnnCreate failed\n");
        return 1;
    }
    printf("device compute capability %d.%d\n", prop.major, prop.minor);
    ST_RUN(library_info);
    ST_RUN(descriptors);
    ST_RUN(output_dims);
    ST_RUN(conv_float_fma);
    ST_RUN(conv_float_default_math);
    ST_RUN(conv_float_allow_conversion);
    ST_RUN(conv_double);
    ST_RUN(conv_pseudo_half);
    ST_RUN(conv_pseudo_half_tensor_op);
    ST_RUN(conv_true_half);
    ST_RUN(conv_bfloat16);
    ST_RUN(conv_adjoints);
    ST_RUN(conv_layouts);
    ST_RUN(conv_backward_bias);
    ST_RUN(conv_bias_activation);
    ST_RUN(conv_bad_calls);
    ST_RUN(unsupported_configs);
    ST_RUN(workspace_checks);
    ST_RUN(math_types);
    ST_RUN(find_algorithms);
#ifdef __CUEMU__
    ST_RUN(counters);
#endif
    ST_RUN(host_pointer_faults); /* leaves the device in an error state: last */
    cudnnDestroy(g_h);
    return st_summary();
}
