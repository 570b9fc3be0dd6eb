/* cudnn_ops.cu - self-test of the emulated cuDNN tensor operations:
   cudnnAddTensor, cudnnSetTensor, cudnnScaleTensor, activation, pooling,
   softmax and batch normalization, forward and backward, in FLOAT, DOUBLE,
   HALF and BFLOAT16, against float64 references written from the cuDNN
   documentation, with finite-difference checks (in DOUBLE) that each
   backward is the derivative of its forward, and the documented failures.

   An ordinary CUDA program (builds with nvcc -lcudnn too):
     tests/emu/nvcc-emu -o /tmp/t tests/emu/selftest/cudnn_ops.cu -lcudnn

   Tolerances: element-wise results within k * u * (1 + |ref|) of the
   reference (u = 2^-24 for FLOAT / HALF / BFLOAT16 compute, 2^-53 for
   DOUBLE; k = 64 covers the few roundings of exp / tanh and a blend), plus
   one rounding of the output type (2^-11 HALF, 2^-8 BFLOAT16) and its
   subnormal spacing; reductions (softmax sums, batch-norm statistics,
   pooled averages) add n * u * (sum of |terms|). Finite differences:
   central, step 1e-5, relative 1e-6 in DOUBLE. */
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "selftest.h"

/* >>host helpers (as in cudnn_conv.cu) ------------------------------- */

static uint32_t g_rng = 777u;
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
static double quant(double v, cudnnDataType_t t) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return (float)v;
    case CUDNN_DATA_HALF: return h2f(f2h((float)v));
    case CUDNN_DATA_BFLOAT16: return b2f(f2b((float)v));
    default: return v;
    }
}
static std::vector<double> random_vec(size_t n, cudnnDataType_t t, double scale = 1.0) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) v[i] = quant(scale * frand(), t);
    return v;
}

struct Buf {
    void *p = nullptr;
    size_t n = 0;
    cudnnDataType_t t = CUDNN_DATA_FLOAT;
    Buf(const std::vector<double> &v, cudnnDataType_t type) : n(v.size()), t(type) {
        cudaMalloc(&p, n * tsize(t) + 1);
        set(v);
    }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
    ~Buf() { cudaFree(p); }
    void set(const std::vector<double> &v) {
        std::vector<unsigned char> b(n * tsize(t));
        for (size_t i = 0; i < n; i++) {
            if (t == CUDNN_DATA_DOUBLE) memcpy(&b[i * 8], &v[i], 8);
            else if (t == CUDNN_DATA_FLOAT) { float f = (float)v[i]; memcpy(&b[i * 4], &f, 4); }
            else { uint16_t h = t == CUDNN_DATA_HALF ? f2h((float)v[i]) : f2b((float)v[i]); memcpy(&b[i * 2], &h, 2); }
        }
        cudaMemcpy(p, b.data(), b.size(), cudaMemcpyHostToDevice);
    }
    void fill_nan() {
        std::vector<unsigned char> b(n * tsize(t), 0xff);
        cudaMemcpy(p, b.data(), b.size(), cudaMemcpyHostToDevice);
    }
    std::vector<double> get() const {
        std::vector<unsigned char> b(n * tsize(t));
        cudaMemcpy(b.data(), p, b.size(), cudaMemcpyDeviceToHost);
        std::vector<double> v(n);
        for (size_t i = 0; i < n; i++) {
            if (t == CUDNN_DATA_DOUBLE) memcpy(&v[i], &b[i * 8], 8);
            else if (t == CUDNN_DATA_FLOAT) { float f; memcpy(&f, &b[i * 4], 4); v[i] = f; }
            else { uint16_t h; memcpy(&h, &b[i * 2], 2); v[i] = t == CUDNN_DATA_HALF ? h2f(h) : b2f(h); }
        }
        return v;
    }
};

static cudnnHandle_t g_h;
static int g_cc;

static cudnnTensorDescriptor_t tensor(cudnnDataType_t t, int n, int c, int h, int w) {
    cudnnTensorDescriptor_t d;
    cudnnCreateTensorDescriptor(&d);
    cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, t, n, c, h, w);
    return d;
}

/* alpha / beta as the documentation wants them: double for DOUBLE data */
struct Scal {
    float f[2];
    double d[2];
    cudnnDataType_t t;
    Scal(double a, double b, cudnnDataType_t type) : t(type) {
        f[0] = (float)a, f[1] = (float)b, d[0] = a, d[1] = b;
    }
    const void *a() const { return t == CUDNN_DATA_DOUBLE ? (const void *)&d[0] : &f[0]; }
    const void *b() const { return t == CUDNN_DATA_DOUBLE ? (const void *)&d[1] : &f[1]; }
};

static double unit(cudnnDataType_t t) { return t == CUDNN_DATA_DOUBLE ? ldexp(1, -53) : ldexp(1, -24); }
static double unit_out(cudnnDataType_t t) {
    return t == CUDNN_DATA_HALF ? ldexp(1, -11) : t == CUDNN_DATA_BFLOAT16 ? ldexp(1, -8) : unit(t);
}

/* got = alpha * ref + beta * prior within 64u(1 + |..|) + extra (the
   caller's reduction term) + output rounding */
static void compare(const char *what, const std::vector<double> &got, const std::vector<double> &ref,
                    const std::vector<double> &extra, const std::vector<double> &prior, double alpha, double beta,
                    cudnnDataType_t t) {
    for (size_t i = 0; i < got.size(); i++) {
        double pr = beta != 0 ? prior[i] : 0, expect = alpha * ref[i] + beta * pr;
        double bound = 64 * unit(t) * (1 + fabs(alpha * ref[i]) + fabs(beta * pr)) + fabs(alpha) * (extra.empty() ? 0 : extra[i]) +
                       unit_out(t) * fabs(expect) + (t == CUDNN_DATA_HALF ? ldexp(1, -24) : 0);
        if (!(fabs(got[i] - expect) <= bound) && !(isinf(got[i]) && got[i] == expect)) {
            ST_CHECKF(0, "%s (type %d): element %zu is %.9g, expected %.9g (bound %.3g)", what, t, i, got[i], expect, bound);
            return;
        }
    }
}

static const cudnnDataType_t g_types[] = {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16};

/* >>tensor add / set / scale ----------------------------------------- */

ST_TEST(add_tensor) {
    for (cudnnDataType_t t : g_types) {
        const int N = 3, C = 5, H = 7, W = 11;
        std::vector<double> bias = random_vec(C, t), c0 = random_vec((size_t)N * C * H * W, t), ref(c0.size());
        for (size_t i = 0; i < ref.size(); i++) ref[i] = bias[(i / (H * W)) % C];
        cudnnTensorDescriptor_t ad = tensor(t, 1, C, 1, 1), cd = tensor(t, N, C, H, W);
        Buf ba(bias, t), bc(c0, t);
        Scal s(1.5, 0.25, t);
        ST_CHECK(cudnnAddTensor(g_h, s.a(), ad, ba.p, s.b(), cd, bc.p) == CUDNN_STATUS_SUCCESS);
        compare("AddTensor broadcast", bc.get(), ref, {}, c0, 1.5, 0.25, t);
        Scal z(1.0, 0.0, t);
        bc.fill_nan();
        ST_CHECK(cudnnAddTensor(g_h, z.a(), ad, ba.p, z.b(), cd, bc.p) == CUDNN_STATUS_SUCCESS);
        compare("AddTensor beta 0 over NaN", bc.get(), ref, {}, ref, 1, 0, t);
        cudnnTensorDescriptor_t bad = tensor(t, 2, C, 1, 1);
        ST_CHECK(cudnnAddTensor(g_h, s.a(), bad, ba.p, s.b(), cd, bc.p) == CUDNN_STATUS_BAD_PARAM);
        cudnnTensorDescriptor_t other = tensor(t == CUDNN_DATA_FLOAT ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT, 1, C, 1, 1);
        ST_CHECK(cudnnAddTensor(g_h, s.a(), other, ba.p, s.b(), cd, bc.p) == CUDNN_STATUS_BAD_PARAM);
        cudnnDestroyTensorDescriptor(ad);
        cudnnDestroyTensorDescriptor(cd);
        cudnnDestroyTensorDescriptor(bad);
        cudnnDestroyTensorDescriptor(other);
    }
}

/* Set and scale touch only the tensor's elements, not the gaps of a
   strided layout. */
ST_TEST(set_and_scale_tensor) {
    for (cudnnDataType_t t : g_types) {
        const int N = 2, C = 3, H = 4, W = 5, hs = 7, cs = H * hs + 2, ns = C * cs + 3;
        std::vector<double> init = random_vec((size_t)N * ns, t);
        Buf b(init, t);
        cudnnTensorDescriptor_t d;
        cudnnCreateTensorDescriptor(&d);
        ST_CHECK(cudnnSetTensor4dDescriptorEx(d, t, N, C, H, W, ns, cs, hs, 1) == CUDNN_STATUS_SUCCESS);
        unsigned char value[8];
        double v = -0.375;
        if (t == CUDNN_DATA_DOUBLE) memcpy(value, &v, 8);
        else if (t == CUDNN_DATA_FLOAT) { float f = (float)v; memcpy(value, &f, 4); }
        else { uint16_t h = t == CUDNN_DATA_HALF ? f2h((float)v) : f2b((float)v); memcpy(value, &h, 2); }
        ST_CHECK(cudnnSetTensor(g_h, d, b.p, value) == CUDNN_STATUS_SUCCESS);
        Scal s(3.0, 0.0, t);
        ST_CHECK(cudnnScaleTensor(g_h, d, b.p, s.a()) == CUDNN_STATUS_SUCCESS);
        std::vector<double> got = b.get();
        int bad = 0;
        for (int i = 0; i < N * ns; i++) {
            int n = i / ns, r = i % ns, c = r / cs, r2 = r % cs, h = r2 / hs, w = r2 % hs;
            bool inside = n < N && c < C && h < H && w < W;
            double want = inside ? -1.125 : init[i];
            if (got[i] != want && !bad++) ST_CHECKF(0, "type %d element %d is %g, want %g", t, i, got[i], want);
        }
        cudnnDestroyTensorDescriptor(d);
    }
}

/* >>activation ------------------------------------------------------- */

struct Act {
    cudnnActivationMode_t mode;
    double coef, beta;
};
static const Act g_acts[] = {{CUDNN_ACTIVATION_SIGMOID, 0, 1}, {CUDNN_ACTIVATION_RELU, 0, 1}, {CUDNN_ACTIVATION_TANH, 0, 1},
                             {CUDNN_ACTIVATION_CLIPPED_RELU, 0.6, 1}, {CUDNN_ACTIVATION_ELU, 0.7, 1},
                             {CUDNN_ACTIVATION_SWISH, 0, 1.3}};

/* The functions of cudnnActivationMode_t. */
static double act_f(const Act &a, double x) {
    switch (a.mode) {
    case CUDNN_ACTIVATION_SIGMOID: return 1 / (1 + exp(-x));
    case CUDNN_ACTIVATION_RELU: return x > 0 ? x : 0;
    case CUDNN_ACTIVATION_TANH: return tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU: return fmin(fmax(x, 0), a.coef);
    case CUDNN_ACTIVATION_ELU: return x > 0 ? x : a.coef * (exp(x) - 1);
    case CUDNN_ACTIVATION_SWISH: return x / (1 + exp(-a.beta * x));
    default: return x;
    }
}
static double act_df(const Act &a, double x) {
    double s;
    switch (a.mode) {
    case CUDNN_ACTIVATION_SIGMOID: s = act_f(a, x); return s * (1 - s);
    case CUDNN_ACTIVATION_RELU: return x > 0 ? 1 : 0;
    case CUDNN_ACTIVATION_TANH: s = tanh(x); return 1 - s * s;
    case CUDNN_ACTIVATION_CLIPPED_RELU: return x > 0 && x < a.coef ? 1 : 0;
    case CUDNN_ACTIVATION_ELU: return x > 0 ? 1 : a.coef * exp(x);
    case CUDNN_ACTIVATION_SWISH: s = 1 / (1 + exp(-a.beta * x)); return s + a.beta * x * s * (1 - s);
    default: return 1;
    }
}

static cudnnActivationDescriptor_t act_desc(const Act &a, cudnnNanPropagation_t nan) {
    cudnnActivationDescriptor_t d;
    cudnnCreateActivationDescriptor(&d);
    cudnnSetActivationDescriptor(d, a.mode, nan, a.coef);
    cudnnSetActivationDescriptorSwishBeta(d, a.beta);
    return d;
}

ST_TEST(activation) {
    const int N = 3, C = 5, H = 7, W = 7;
    const size_t n = (size_t)N * C * H * W;
    for (cudnnDataType_t t : g_types)
        for (const Act &a : g_acts) {
            std::vector<double> x = random_vec(n, t, 2.0), dy = random_vec(n, t), prior = random_vec(n, t), ref(n), y(n), dref(n);
            for (size_t i = 0; i < n; i++) {
                ref[i] = act_f(a, x[i]);
                y[i] = quant(ref[i], t);
                /* the derivative as cuDNN takes it: from y for sigmoid, tanh */
                double d = a.mode == CUDNN_ACTIVATION_SIGMOID ? y[i] * (1 - y[i])
                         : a.mode == CUDNN_ACTIVATION_TANH    ? 1 - y[i] * y[i]
                                                               : act_df(a, x[i]);
                dref[i] = dy[i] * d;
            }
            cudnnTensorDescriptor_t d = tensor(t, N, C, H, W);
            cudnnActivationDescriptor_t ad = act_desc(a, CUDNN_NOT_PROPAGATE_NAN);
            Buf bx(x, t), by(prior, t), bdy(dy, t), bdx(prior, t), byv(y, t);
            Scal s(0.75, -0.5, t), z(1, 0, t);
            char what[64];
            snprintf(what, sizeof what, "activation %d forward", a.mode);
            ST_CHECK(cudnnActivationForward(g_h, ad, s.a(), d, bx.p, s.b(), d, by.p) == CUDNN_STATUS_SUCCESS);
            compare(what, by.get(), ref, {}, prior, 0.75, -0.5, t);
            by.fill_nan();
            ST_CHECK(cudnnActivationForward(g_h, ad, z.a(), d, bx.p, z.b(), d, by.p) == CUDNN_STATUS_SUCCESS);
            compare(what, by.get(), ref, {}, prior, 1, 0, t);
            snprintf(what, sizeof what, "activation %d backward", a.mode);
            ST_CHECK(cudnnActivationBackward(g_h, ad, s.a(), d, byv.p, d, bdy.p, d, bx.p, s.b(), d, bdx.p) == CUDNN_STATUS_SUCCESS);
            compare(what, bdx.get(), dref, {}, prior, 0.75, -0.5, t);
            cudnnDestroyActivationDescriptor(ad);
            cudnnDestroyTensorDescriptor(d);
        }
}

/* The backward is the derivative of the forward: central differences in
   DOUBLE, away from the kinks of RELU and CLIPPED_RELU. */
ST_TEST(activation_finite_differences) {
    const int n = 64;
    const double h = 1e-5;
    for (const Act &a : g_acts) {
        std::vector<double> x = random_vec(n, CUDNN_DATA_DOUBLE, 2.0), xp(n), xm(n), ones(n, 1.0);
        for (int i = 0; i < n; i++) {
            if (fabs(x[i]) < 1e-3 || fabs(x[i] - a.coef) < 1e-3) x[i] += 0.01;
            xp[i] = x[i] + h, xm[i] = x[i] - h;
        }
        cudnnTensorDescriptor_t d = tensor(CUDNN_DATA_DOUBLE, 1, 1, 8, 8);
        cudnnActivationDescriptor_t ad = act_desc(a, CUDNN_NOT_PROPAGATE_NAN);
        Buf bx(x, CUDNN_DATA_DOUBLE), bxp(xp, CUDNN_DATA_DOUBLE), bxm(xm, CUDNN_DATA_DOUBLE), by(x, CUDNN_DATA_DOUBLE),
            byp(x, CUDNN_DATA_DOUBLE), bym(x, CUDNN_DATA_DOUBLE), bdy(ones, CUDNN_DATA_DOUBLE), bdx(x, CUDNN_DATA_DOUBLE);
        Scal s(1, 0, CUDNN_DATA_DOUBLE);
        cudnnActivationForward(g_h, ad, s.a(), d, bx.p, s.b(), d, by.p);
        cudnnActivationForward(g_h, ad, s.a(), d, bxp.p, s.b(), d, byp.p);
        cudnnActivationForward(g_h, ad, s.a(), d, bxm.p, s.b(), d, bym.p);
        ST_CHECK(cudnnActivationBackward(g_h, ad, s.a(), d, by.p, d, bdy.p, d, bx.p, s.b(), d, bdx.p) == CUDNN_STATUS_SUCCESS);
        std::vector<double> yp = byp.get(), ym = bym.get(), dx = bdx.get();
        for (int i = 0; i < n; i++) {
            double fd = (yp[i] - ym[i]) / (2 * h);
            if (!(fabs(fd - dx[i]) <= 1e-6 * (1 + fabs(dx[i])))) {
                ST_CHECKF(0, "mode %d x %g: finite difference %.10g, backward %.10g", a.mode, x[i], fd, dx[i]);
                break;
            }
        }
        cudnnDestroyActivationDescriptor(ad);
        cudnnDestroyTensorDescriptor(d);
    }
}

/* RELU's NaN option; IDENTITY is refused by the activation calls; shapes
   must match. */
ST_TEST(activation_rules) {
    cudnnTensorDescriptor_t d = tensor(CUDNN_DATA_FLOAT, 1, 1, 1, 4), d2 = tensor(CUDNN_DATA_FLOAT, 1, 1, 2, 2);
    std::vector<double> x = {NAN, -1, 2, 0.5};
    Buf bx(x, CUDNN_DATA_FLOAT), by(x, CUDNN_DATA_FLOAT);
    Scal s(1, 0, CUDNN_DATA_FLOAT);
    Act relu = {CUDNN_ACTIVATION_RELU, 0, 1};
    cudnnActivationDescriptor_t np = act_desc(relu, CUDNN_NOT_PROPAGATE_NAN), pp = act_desc(relu, CUDNN_PROPAGATE_NAN);
    ST_CHECK(cudnnActivationForward(g_h, np, s.a(), d, bx.p, s.b(), d, by.p) == CUDNN_STATUS_SUCCESS);
    std::vector<double> y = by.get();
    ST_CHECK(y[0] == 0 && y[1] == 0 && y[2] == 2 && y[3] == 0.5);
    ST_CHECK(cudnnActivationForward(g_h, pp, s.a(), d, bx.p, s.b(), d, by.p) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(isnan(by.get()[0]));
    Act id = {CUDNN_ACTIVATION_IDENTITY, 0, 1};
    cudnnActivationDescriptor_t ia = act_desc(id, CUDNN_NOT_PROPAGATE_NAN);
    ST_CHECK(cudnnActivationForward(g_h, ia, s.a(), d, bx.p, s.b(), d, by.p) == CUDNN_STATUS_NOT_SUPPORTED);
    ST_CHECK(cudnnActivationForward(g_h, np, s.a(), d, bx.p, s.b(), d2, by.p) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetActivationDescriptor(np, (cudnnActivationMode_t)17, CUDNN_NOT_PROPAGATE_NAN, 0) == CUDNN_STATUS_BAD_PARAM);
    cudnnActivationMode_t m;
    cudnnNanPropagation_t nan;
    double coef, b;
    ST_CHECK(cudnnGetActivationDescriptor(pp, &m, &nan, &coef) == CUDNN_STATUS_SUCCESS && m == CUDNN_ACTIVATION_RELU &&
             nan == CUDNN_PROPAGATE_NAN);
    ST_CHECK(cudnnGetActivationDescriptorSwishBeta(pp, &b) == CUDNN_STATUS_SUCCESS && b == 1.0);
    cudnnDestroyActivationDescriptor(np);
    cudnnDestroyActivationDescriptor(pp);
    cudnnDestroyActivationDescriptor(ia);
    cudnnDestroyTensorDescriptor(d);
    cudnnDestroyTensorDescriptor(d2);
}

/* >>pooling ---------------------------------------------------------- */

struct Pool {
    cudnnPoolingMode_t mode;
    int wh, ww, ph, pw, sh, sw;
};

static void pool_ref(const Pool &p, int N, int C, int H, int W, const std::vector<double> &x, std::vector<double> &y,
                     std::vector<double> &extra, int *P, int *Q) {
    *P = 1 + (H + 2 * p.ph - p.wh) / p.sh;
    *Q = 1 + (W + 2 * p.pw - p.ww) / p.sw;
    y.assign((size_t)N * C * *P * *Q, 0);
    extra.assign(y.size(), 0);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < *P; i++)
                for (int j = 0; j < *Q; j++) {
                    double m = -INFINITY, s = 0, as = 0;
                    int cnt = 0;
                    for (int r = 0; r < p.wh; r++)
                        for (int q = 0; q < p.ww; q++) {
                            int h = i * p.sh - p.ph + r, w = j * p.sw - p.pw + q;
                            if (h < 0 || h >= H || w < 0 || w >= W) continue;
                            double v = x[(((size_t)n * C + c) * H + h) * W + w];
                            m = fmax(m, v), s += v, as += fabs(v), cnt++;
                        }
                    size_t o = (((size_t)n * C + c) * *P + i) * *Q + j;
                    int div = p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? p.wh * p.ww : cnt;
                    bool mx = p.mode == CUDNN_POOLING_MAX || p.mode == CUDNN_POOLING_MAX_DETERMINISTIC;
                    y[o] = mx ? m : s / div;
                    extra[o] = mx ? 0 : (p.wh * p.ww + 2) * ldexp(1, -24) * as / div;
                }
}

static const Pool g_pools[] = {{CUDNN_POOLING_MAX, 3, 3, 1, 1, 2, 2},
                               {CUDNN_POOLING_MAX_DETERMINISTIC, 2, 2, 0, 0, 2, 2},
                               {CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, 3, 3, 1, 1, 2, 2},
                               {CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, 3, 2, 1, 1, 1, 2},
                               {CUDNN_POOLING_MAX, 3, 3, 0, 0, 1, 1}};

static cudnnPoolingDescriptor_t pool_desc(const Pool &p) {
    cudnnPoolingDescriptor_t d;
    cudnnCreatePoolingDescriptor(&d);
    cudnnSetPooling2dDescriptor(d, p.mode, CUDNN_NOT_PROPAGATE_NAN, p.wh, p.ww, p.ph, p.pw, p.sh, p.sw);
    return d;
}

ST_TEST(pooling) {
    const int N = 3, C = 5;
    const int sizes[][2] = {{7, 7}, {11, 11}, {7, 11}};
    for (cudnnDataType_t t : g_types)
        for (const Pool &p : g_pools)
            for (auto &sz : sizes) {
                const int H = sz[0], W = sz[1];
                std::vector<double> x = random_vec((size_t)N * C * H * W, t), y, extra;
                int P, Q;
                pool_ref(p, N, C, H, W, x, y, extra, &P, &Q);
                cudnnPoolingDescriptor_t pd = pool_desc(p);
                cudnnTensorDescriptor_t xd = tensor(t, N, C, H, W), yd = tensor(t, N, C, P, Q);
                int n, c, h, w;
                ST_CHECK(cudnnGetPooling2dForwardOutputDim(pd, xd, &n, &c, &h, &w) == CUDNN_STATUS_SUCCESS && n == N && c == C &&
                         h == P && w == Q);
                std::vector<double> prior = random_vec(y.size(), t), dy = random_vec(y.size(), t), dxprior = random_vec(x.size(), t);
                Buf bx(x, t), by(prior, t), bdy(dy, t), bdx(dxprior, t);
                Scal s(0.75, -0.5, t);
                char what[80];
                snprintf(what, sizeof what, "pooling mode %d %dx%d forward", p.mode, H, W);
                ST_CHECK(cudnnPoolingForward(g_h, pd, s.a(), xd, bx.p, s.b(), yd, by.p) == CUDNN_STATUS_SUCCESS);
                compare(what, by.get(), y, extra, prior, 0.75, -0.5, t);
                /* backward reference: dy to the max (values are distinct), or
                   dy / count over the window */
                std::vector<double> yv(y.size());
                for (size_t i = 0; i < y.size(); i++) yv[i] = quant(y[i], t);
                Buf byv(yv, t);
                std::vector<double> dref(x.size(), 0), dextra(x.size(), 0);
                for (int nn = 0; nn < N; nn++)
                    for (int cc = 0; cc < C; cc++)
                        for (int i = 0; i < P; i++)
                            for (int j = 0; j < Q; j++) {
                                double g = dy[(((size_t)nn * C + cc) * P + i) * Q + j], best = -INFINITY;
                                size_t at = 0;
                                int cnt = 0;
                                for (int r = 0; r < p.wh; r++)
                                    for (int q = 0; q < p.ww; q++) {
                                        int hh = i * p.sh - p.ph + r, ww = j * p.sw - p.pw + q;
                                        if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                        size_t o = (((size_t)nn * C + cc) * H + hh) * W + ww;
                                        if (x[o] > best) best = x[o], at = o;
                                        cnt++;
                                    }
                                if (p.mode == CUDNN_POOLING_MAX || p.mode == CUDNN_POOLING_MAX_DETERMINISTIC) {
                                    dref[at] += g, dextra[at] += 4 * ldexp(1, -24) * fabs(g);
                                    continue;
                                }
                                int div = p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? p.wh * p.ww : cnt;
                                for (int r = 0; r < p.wh; r++)
                                    for (int q = 0; q < p.ww; q++) {
                                        int hh = i * p.sh - p.ph + r, ww = j * p.sw - p.pw + q;
                                        if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                        size_t o = (((size_t)nn * C + cc) * H + hh) * W + ww;
                                        dref[o] += g / div, dextra[o] += 16 * ldexp(1, -24) * fabs(g);
                                    }
                            }
                snprintf(what, sizeof what, "pooling mode %d %dx%d backward", p.mode, H, W);
                ST_CHECK(cudnnPoolingBackward(g_h, pd, s.a(), yd, byv.p, yd, bdy.p, xd, bx.p, s.b(), xd, bdx.p) == CUDNN_STATUS_SUCCESS);
                compare(what, bdx.get(), dref, dextra, dxprior, 0.75, -0.5, t);
                cudnnDestroyPoolingDescriptor(pd);
                cudnnDestroyTensorDescriptor(xd);
                cudnnDestroyTensorDescriptor(yd);
            }
}

ST_TEST(pooling_rules) {
    cudnnPoolingDescriptor_t pd;
    cudnnCreatePoolingDescriptor(&pd);
    ST_CHECK(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 0, 2, 0, 0, 2, 2) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, -1, 0, 2, 2) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 0, 2) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 9, 2, 0, 0, 1, 1) == CUDNN_STATUS_SUCCESS);
    cudnnTensorDescriptor_t xd = tensor(CUDNN_DATA_FLOAT, 1, 1, 7, 7), yd = tensor(CUDNN_DATA_FLOAT, 1, 1, 3, 3);
    int n, c, h, w;
    ST_CHECK(cudnnGetPooling2dForwardOutputDim(pd, xd, &n, &c, &h, &w) == CUDNN_STATUS_BAD_PARAM); /* 9 > 7 */
    ST_CHECK(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 3, 3, 0, 0, 2, 2) == CUDNN_STATUS_SUCCESS);
    std::vector<double> x(49, 1.0);
    x[0] = NAN;
    Buf bx(x, CUDNN_DATA_FLOAT), by(std::vector<double>(9), CUDNN_DATA_FLOAT);
    Scal s(1, 0, CUDNN_DATA_FLOAT);
    ST_CHECK(cudnnPoolingForward(g_h, pd, s.a(), xd, bx.p, s.b(), yd, by.p) == CUDNN_STATUS_SUCCESS);
    std::vector<double> y = by.get();
    ST_CHECK(isnan(y[0]) && y[1] == 1.0);
    cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 3, 3, 0, 0, 2, 2);
    ST_CHECK(cudnnPoolingForward(g_h, pd, s.a(), xd, bx.p, s.b(), yd, by.p) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(by.get()[0] == 1.0);
    cudnnTensorDescriptor_t wrong = tensor(CUDNN_DATA_FLOAT, 1, 1, 2, 3);
    ST_CHECK(cudnnPoolingForward(g_h, pd, s.a(), xd, bx.p, s.b(), wrong, by.p) == CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyTensorDescriptor(wrong);
    cudnnDestroyPoolingDescriptor(pd);
}

/* >>softmax ---------------------------------------------------------- */

/* groups: INSTANCE over (c, h, w) per n, CHANNEL over c per (n, h, w) */
static void softmax_ref(cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, int N, int C, int H, int W,
                        const std::vector<double> &x, std::vector<double> &y, std::vector<double> &extra) {
    y.assign(x.size(), 0);
    extra.assign(x.size(), 0);
    int groups = mode == CUDNN_SOFTMAX_MODE_INSTANCE ? N : N * H * W, len = mode == CUDNN_SOFTMAX_MODE_INSTANCE ? C * H * W : C;
    for (int g = 0; g < groups; g++) {
        std::vector<size_t> idx(len);
        for (int j = 0; j < len; j++) {
            if (mode == CUDNN_SOFTMAX_MODE_INSTANCE) idx[j] = (size_t)g * len + j;
            else {
                int n = g / (H * W), hw = g % (H * W);
                idx[j] = ((size_t)n * C + j) * H * W + hw;
            }
        }
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < len; j++) mx = fmax(mx, x[idx[j]]);
        for (int j = 0; j < len; j++) sum += exp(x[idx[j]] - mx);
        for (int j = 0; j < len; j++) {
            double v = x[idx[j]] - mx;
            y[idx[j]] = algo == CUDNN_SOFTMAX_LOG ? v - log(sum) : exp(v) / sum;
            extra[idx[j]] = (len + 8) * ldexp(1, -24) * (algo == CUDNN_SOFTMAX_LOG ? 1 + fabs(v) : fabs(y[idx[j]]));
        }
    }
}

ST_TEST(softmax) {
    const int N = 3, C = 5, H = 7, W = 11;
    const cudnnSoftmaxAlgorithm_t algos[] = {CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG};
    const cudnnSoftmaxMode_t modes[] = {CUDNN_SOFTMAX_MODE_INSTANCE, CUDNN_SOFTMAX_MODE_CHANNEL};
    for (cudnnDataType_t t : g_types)
        for (cudnnSoftmaxAlgorithm_t algo : algos)
            for (cudnnSoftmaxMode_t mode : modes) {
                std::vector<double> x = random_vec((size_t)N * C * H * W, t, 3.0), y, extra;
                softmax_ref(algo, mode, N, C, H, W, x, y, extra);
                cudnnTensorDescriptor_t d = tensor(t, N, C, H, W);
                std::vector<double> prior = random_vec(x.size(), t);
                Buf bx(x, t), by(prior, t);
                Scal s(0.75, -0.5, t);
                char what[64];
                snprintf(what, sizeof what, "softmax algo %d mode %d forward", algo, mode);
                ST_CHECK(cudnnSoftmaxForward(g_h, algo, mode, s.a(), d, bx.p, s.b(), d, by.p) == CUDNN_STATUS_SUCCESS);
                compare(what, by.get(), y, extra, prior, 0.75, -0.5, t);
                /* backward from the quantized y */
                std::vector<double> yv(y.size()), dy = random_vec(y.size(), t), dref(y.size()), dextra(y.size());
                for (size_t i = 0; i < y.size(); i++) yv[i] = quant(y[i], t);
                int groups = mode == CUDNN_SOFTMAX_MODE_INSTANCE ? N : N * H * W, len = mode == CUDNN_SOFTMAX_MODE_INSTANCE ? C * H * W : C;
                for (int g = 0; g < groups; g++) {
                    std::vector<size_t> idx(len);
                    for (int j = 0; j < len; j++)
                        idx[j] = mode == CUDNN_SOFTMAX_MODE_INSTANCE ? (size_t)g * len + j
                                                                      : ((size_t)(g / (H * W)) * C + j) * H * W + g % (H * W);
                    double sum = 0, asum = 0;
                    for (int j = 0; j < len; j++) {
                        double term = algo == CUDNN_SOFTMAX_LOG ? dy[idx[j]] : dy[idx[j]] * yv[idx[j]];
                        sum += term, asum += fabs(term);
                    }
                    for (int j = 0; j < len; j++) {
                        size_t o = idx[j];
                        dref[o] = algo == CUDNN_SOFTMAX_LOG ? dy[o] - exp(yv[o]) * sum : yv[o] * (dy[o] - sum);
                        dextra[o] = (len + 8) * ldexp(1, -24) * (algo == CUDNN_SOFTMAX_LOG ? exp(yv[o]) : fabs(yv[o])) * asum;
                    }
                }
                Buf byv(yv, t), bdy(dy, t), bdx(prior, t);
                snprintf(what, sizeof what, "softmax algo %d mode %d backward", algo, mode);
                ST_CHECK(cudnnSoftmaxBackward(g_h, algo, mode, s.a(), d, byv.p, d, bdy.p, s.b(), d, bdx.p) == CUDNN_STATUS_SUCCESS);
                compare(what, bdx.get(), dref, dextra, prior, 0.75, -0.5, t);
                cudnnDestroyTensorDescriptor(d);
            }
}

/* FAST does not subtract the maximum: large inputs overflow in FLOAT,
   where ACCURATE stays finite; backward = derivative of forward. */
ST_TEST(softmax_rules) {
    cudnnTensorDescriptor_t d = tensor(CUDNN_DATA_FLOAT, 1, 4, 1, 1);
    std::vector<double> x = {100, 99, 1, 0};
    Buf bx(x, CUDNN_DATA_FLOAT), by(x, CUDNN_DATA_FLOAT);
    Scal s(1, 0, CUDNN_DATA_FLOAT);
    ST_CHECK(cudnnSoftmaxForward(g_h, CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_MODE_CHANNEL, s.a(), d, bx.p, s.b(), d, by.p) ==
             CUDNN_STATUS_SUCCESS);
    ST_CHECK(!isfinite(by.get()[0]));
    ST_CHECK(cudnnSoftmaxForward(g_h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, s.a(), d, bx.p, s.b(), d, by.p) ==
             CUDNN_STATUS_SUCCESS);
    ST_CHECK(fabs(by.get()[0] - 1 / (1 + exp(-1.0))) < 1e-6);
    ST_CHECK(cudnnSoftmaxForward(g_h, (cudnnSoftmaxAlgorithm_t)5, CUDNN_SOFTMAX_MODE_CHANNEL, s.a(), d, bx.p, s.b(), d, by.p) ==
             CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(d);
    /* finite differences of L = <softmax(x), dy> in DOUBLE */
    const cudnnSoftmaxAlgorithm_t algos[] = {CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG};
    for (cudnnSoftmaxAlgorithm_t algo : algos) {
        const int n = 12;
        cudnnTensorDescriptor_t dd = tensor(CUDNN_DATA_DOUBLE, 2, 3, 2, 1);
        std::vector<double> xv = random_vec(n, CUDNN_DATA_DOUBLE, 2.0), dy = random_vec(n, CUDNN_DATA_DOUBLE);
        Buf bxv(xv, CUDNN_DATA_DOUBLE), byv(xv, CUDNN_DATA_DOUBLE), bdy(dy, CUDNN_DATA_DOUBLE), bdx(xv, CUDNN_DATA_DOUBLE);
        Scal sd(1, 0, CUDNN_DATA_DOUBLE);
        cudnnSoftmaxForward(g_h, algo, CUDNN_SOFTMAX_MODE_CHANNEL, sd.a(), dd, bxv.p, sd.b(), dd, byv.p);
        ST_CHECK(cudnnSoftmaxBackward(g_h, algo, CUDNN_SOFTMAX_MODE_CHANNEL, sd.a(), dd, byv.p, dd, bdy.p, sd.b(), dd, bdx.p) ==
                 CUDNN_STATUS_SUCCESS);
        std::vector<double> dx = bdx.get();
        for (int i = 0; i < n; i++) {
            double l[2];
            for (int k = 0; k < 2; k++) {
                std::vector<double> x2 = xv;
                x2[i] += k ? 1e-5 : -1e-5;
                bxv.set(x2);
                cudnnSoftmaxForward(g_h, algo, CUDNN_SOFTMAX_MODE_CHANNEL, sd.a(), dd, bxv.p, sd.b(), dd, byv.p);
                std::vector<double> y2 = byv.get();
                l[k] = 0;
                for (int j = 0; j < n; j++) l[k] += y2[j] * dy[j];
            }
            double fd = (l[1] - l[0]) / 2e-5;
            if (!(fabs(fd - dx[i]) <= 1e-6 * (1 + fabs(dx[i])))) {
                ST_CHECKF(0, "softmax algo %d: dL/dx[%d] %.10g, backward %.10g", algo, i, fd, dx[i]);
                break;
            }
        }
        cudnnDestroyTensorDescriptor(dd);
    }
}

/* >>batch normalization ---------------------------------------------- */

struct BnRef {
    std::vector<double> y, mean, var, invstd;
};

/* statistics per feature: SPATIAL over (n, h, w) per c; PER_ACTIVATION
   over n per (c, h, w) */
static BnRef bn_ref(bool spatial, int N, int C, int H, int W, const std::vector<double> &x, const std::vector<double> &scale,
                    const std::vector<double> &bias, double eps) {
    BnRef r;
    int F = spatial ? C : C * H * W, M = spatial ? N * H * W : N;
    r.y.assign(x.size(), 0), r.mean.assign(F, 0), r.var.assign(F, 0), r.invstd.assign(F, 0);
    auto at = [&](int f, int j) -> size_t {
        if (spatial) return ((size_t)(j / (H * W)) * C + f) * H * W + j % (H * W);
        return (size_t)j * C * H * W + f;
    };
    for (int f = 0; f < F; f++) {
        double s = 0, q = 0;
        for (int j = 0; j < M; j++) s += x[at(f, j)];
        r.mean[f] = s / M;
        for (int j = 0; j < M; j++) q += (x[at(f, j)] - r.mean[f]) * (x[at(f, j)] - r.mean[f]);
        r.var[f] = q / M;
        r.invstd[f] = 1 / sqrt(r.var[f] + eps);
        for (int j = 0; j < M; j++) r.y[at(f, j)] = scale[f] * (x[at(f, j)] - r.mean[f]) * r.invstd[f] + bias[f];
    }
    return r;
}

ST_TEST(batchnorm_forward) {
    const int N = 3, C = 5, H = 7, W = 11;
    const double eps = 1e-3, factor = 0.25;
    for (cudnnDataType_t t : g_types)
        for (int spatial = 0; spatial < 2; spatial++) {
            cudnnBatchNormMode_t mode = spatial ? CUDNN_BATCHNORM_SPATIAL : CUDNN_BATCHNORM_PER_ACTIVATION;
            cudnnDataType_t pt = t == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
            int F = spatial ? C : C * H * W, M = spatial ? N * H * W : N;
            std::vector<double> x = random_vec((size_t)N * C * H * W, t), scale = random_vec(F, pt), bias = random_vec(F, pt);
            std::vector<double> rm = random_vec(F, pt), rv(F), prior = random_vec(x.size(), t);
            for (int f = 0; f < F; f++) rv[f] = 0.5 + fabs(rm[f]);
            BnRef r = bn_ref(spatial, N, C, H, W, x, scale, bias, eps);
            cudnnTensorDescriptor_t xd = tensor(t, N, C, H, W), pd;
            cudnnCreateTensorDescriptor(&pd);
            ST_CHECK(cudnnDeriveBNTensorDescriptor(pd, xd, mode) == CUDNN_STATUS_SUCCESS);
            cudnnDataType_t dt;
            int n, c, h, w, s1, s2, s3, s4;
            cudnnGetTensor4dDescriptor(pd, &dt, &n, &c, &h, &w, &s1, &s2, &s3, &s4);
            ST_CHECK(dt == pt && n == 1 && c == C && h == (spatial ? 1 : H) && w == (spatial ? 1 : W));
            Buf bx(x, t), by(prior, t), bs(scale, pt), bb(bias, pt), brm(rm, pt), brv(rv, pt), bsm(rm, pt), bsi(rm, pt);
            Scal s(0.75, -0.5, t);
            ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, mode, s.a(), s.b(), xd, bx.p, xd, by.p, pd, bs.p, bb.p, factor, brm.p,
                                                            brv.p, eps, bsm.p, bsi.p) == CUDNN_STATUS_SUCCESS);
            std::vector<double> extra(x.size());
            for (size_t i = 0; i < x.size(); i++) extra[i] = (M + 8) * ldexp(1, -24) * 8 * (1 + fabs(r.y[i]));
            compare("batchnorm training y", by.get(), r.y, extra, prior, 0.75, -0.5, t);
            std::vector<double> em(F), ev(F), esm = r.mean, esi = r.invstd, fext(F);
            for (int f = 0; f < F; f++) {
                em[f] = (1 - factor) * rm[f] + factor * r.mean[f];
                ev[f] = (1 - factor) * rv[f] + factor * r.var[f] * M / (M - 1); /* the sample (unbiased) variance */
                fext[f] = (M + 8) * ldexp(1, -24) * 8 * (1 + fabs(ev[f]) + fabs(r.invstd[f]));
            }
            compare("running mean", brm.get(), em, fext, em, 1, 0, pt);
            compare("running variance", brv.get(), ev, fext, ev, 1, 0, pt);
            compare("saved mean", bsm.get(), esm, fext, esm, 1, 0, pt);
            compare("saved inverse std", bsi.get(), esi, fext, esi, 1, 0, pt);
            /* inference with the running statistics */
            std::vector<double> iy(x.size());
            auto at = [&](int f, int j) -> size_t {
                if (spatial) return ((size_t)(j / (H * W)) * C + f) * H * W + j % (H * W);
                return (size_t)j * C * H * W + f;
            };
            std::vector<double> gm = brm.get(), gv = brv.get();
            for (int f = 0; f < F; f++)
                for (int j = 0; j < M; j++) iy[at(f, j)] = scale[f] * (x[at(f, j)] - gm[f]) / sqrt(eps + gv[f]) + bias[f];
            by.fill_nan();
            Scal z(1, 0, t);
            ST_CHECK(cudnnBatchNormalizationForwardInference(g_h, mode, z.a(), z.b(), xd, bx.p, xd, by.p, pd, bs.p, bb.p, brm.p, brv.p,
                                                             eps) == CUDNN_STATUS_SUCCESS);
            compare("batchnorm inference y", by.get(), iy, {}, iy, 1, 0, t);
            cudnnDestroyTensorDescriptor(xd);
            cudnnDestroyTensorDescriptor(pd);
        }
}

/* dx, dScale, dBias against central differences of
   L = <BN_training(x, scale, bias), dy>, in DOUBLE. */
ST_TEST(batchnorm_backward) {
    const int N = 3, C = 2, H = 3, W = 5;
    const double eps = 1e-3, h = 1e-5;
    for (int spatial = 0; spatial < 2; spatial++) {
        cudnnBatchNormMode_t mode = spatial ? CUDNN_BATCHNORM_SPATIAL : CUDNN_BATCHNORM_PER_ACTIVATION;
        const cudnnDataType_t T = CUDNN_DATA_DOUBLE;
        int F = spatial ? C : C * H * W;
        std::vector<double> x = random_vec((size_t)N * C * H * W, T), scale = random_vec(F, T), bias = random_vec(F, T);
        std::vector<double> dy = random_vec(x.size(), T);
        cudnnTensorDescriptor_t xd = tensor(T, N, C, H, W), pd;
        cudnnCreateTensorDescriptor(&pd);
        cudnnDeriveBNTensorDescriptor(pd, xd, mode);
        auto loss = [&](const std::vector<double> &xx, const std::vector<double> &ss, const std::vector<double> &bb) {
            BnRef r = bn_ref(spatial, N, C, H, W, xx, ss, bb, eps);
            double l = 0;
            for (size_t i = 0; i < xx.size(); i++) l += r.y[i] * dy[i];
            return l;
        };
        BnRef r = bn_ref(spatial, N, C, H, W, x, scale, bias, eps);
        Buf bx(x, T), bdy(dy, T), bdx(x, T), bs(scale, T), bds(scale, T), bdb(scale, T), bsm(r.mean, T), bsi(r.invstd, T);
        Scal a(1, 0, T);
        for (int saved = 0; saved < 2; saved++) {
            bdx.fill_nan();
            ST_CHECK(cudnnBatchNormalizationBackward(g_h, mode, a.a(), a.b(), a.a(), a.b(), xd, bx.p, xd, bdy.p, xd, bdx.p, pd, bs.p,
                                                     bds.p, bdb.p, eps, saved ? bsm.p : nullptr, saved ? bsi.p : nullptr) ==
                     CUDNN_STATUS_SUCCESS);
            std::vector<double> dx = bdx.get(), ds = bds.get(), db = bdb.get();
            for (size_t i = 0; i < x.size(); i += 7) {
                std::vector<double> xp = x, xm = x;
                xp[i] += h, xm[i] -= h;
                double fd = (loss(xp, scale, bias) - loss(xm, scale, bias)) / (2 * h);
                ST_CHECKF(fabs(fd - dx[i]) <= 1e-6 * (1 + fabs(fd)), "mode %d dx[%zu] %.10g, finite difference %.10g", mode, i, dx[i], fd);
            }
            for (int f = 0; f < F; f++) {
                std::vector<double> sp = scale, sm = scale, bp = bias, bm = bias;
                sp[f] += h, sm[f] -= h, bp[f] += h, bm[f] -= h;
                double fs = (loss(x, sp, bias) - loss(x, sm, bias)) / (2 * h), fb = (loss(x, scale, bp) - loss(x, scale, bm)) / (2 * h);
                ST_CHECKF(fabs(fs - ds[f]) <= 1e-6 * (1 + fabs(fs)), "dScale[%d] %.10g, finite difference %.10g", f, ds[f], fs);
                ST_CHECKF(fabs(fb - db[f]) <= 1e-6 * (1 + fabs(fb)), "dBias[%d] %.10g, finite difference %.10g", f, db[f], fb);
            }
        }
        /* blending of the parameter gradients */
        std::vector<double> ds0 = bds.get();
        Scal pb(2.0, 1.0, T);
        ST_CHECK(cudnnBatchNormalizationBackward(g_h, mode, a.a(), a.b(), pb.a(), pb.b(), xd, bx.p, xd, bdy.p, xd, bdx.p, pd, bs.p,
                                                 bds.p, bdb.p, eps, bsm.p, bsi.p) == CUDNN_STATUS_SUCCESS);
        std::vector<double> ds1 = bds.get();
        ST_CHECK(fabs(ds1[0] - 3 * ds0[0]) <= 1e-12 * (1 + fabs(ds0[0])));
        cudnnDestroyTensorDescriptor(xd);
        cudnnDestroyTensorDescriptor(pd);
    }
}

ST_TEST(batchnorm_rules) {
    const int N = 2, C = 3, H = 4, W = 5;
    cudnnTensorDescriptor_t xd = tensor(CUDNN_DATA_FLOAT, N, C, H, W), pd = tensor(CUDNN_DATA_FLOAT, 1, C, 1, 1),
                            pdd = tensor(CUDNN_DATA_DOUBLE, 1, C, 1, 1), pw = tensor(CUDNN_DATA_FLOAT, 1, C, H, 1);
    Buf bx(random_vec((size_t)N * C * H * W, CUDNN_DATA_FLOAT), CUDNN_DATA_FLOAT), by(std::vector<double>(N * C * H * W), CUDNN_DATA_FLOAT);
    Buf bp(std::vector<double>(C, 1.0), CUDNN_DATA_FLOAT), bq(std::vector<double>(C, 0.0), CUDNN_DATA_FLOAT),
        bm(std::vector<double>(C, 0.0), CUDNN_DATA_FLOAT), bv(std::vector<double>(C, 1.0), CUDNN_DATA_FLOAT);
    Scal s(1, 0, CUDNN_DATA_FLOAT);
    const cudnnBatchNormMode_t SP = CUDNN_BATCHNORM_SPATIAL;
    ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, SP, s.a(), s.b(), xd, bx.p, xd, by.p, pd, bp.p, bq.p, 1.0, bm.p, bv.p, 1e-5,
                                                    nullptr, nullptr) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, SP, s.a(), s.b(), xd, bx.p, xd, by.p, pd, bp.p, bq.p, 1.0, bm.p, bv.p, -1e-5,
                                                    nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, SP, s.a(), s.b(), xd, bx.p, xd, by.p, pdd, bp.p, bq.p, 1.0, bm.p, bv.p, 1e-5,
                                                    nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, SP, s.a(), s.b(), xd, bx.p, xd, by.p, pw, bp.p, bq.p, 1.0, bm.p, bv.p, 1e-5,
                                                    nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, SP, s.a(), s.b(), xd, bx.p, xd, by.p, pd, bp.p, bq.p, 1.0, bm.p, nullptr,
                                                    1e-5, nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnBatchNormalizationForwardTraining(g_h, SP, s.a(), s.b(), xd, bx.p, xd, by.p, pd, bp.p, bq.p, 1.0, nullptr, nullptr,
                                                    1e-5, bm.p, nullptr) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudnnBatchNormalizationForwardInference(g_h, CUDNN_BATCHNORM_PER_ACTIVATION, s.a(), s.b(), xd, bx.p, xd, by.p, pd, bp.p,
                                                     bq.p, bm.p, bv.p, 1e-5) == CUDNN_STATUS_BAD_PARAM);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(pd);
    cudnnDestroyTensorDescriptor(pdd);
    cudnnDestroyTensorDescriptor(pw);
}

int main(void) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || cudnnCreate(&g_h) != CUDNN_STATUS_SUCCESS) {
        printf("no device / cudnnCreate failed\n");
        return 1;
    }
    g_cc = prop.major * 10 + prop.minor;
    ST_RUN(add_tensor);
    ST_RUN(set_and_scale_tensor);
    ST_RUN(activation);
    ST_RUN(activation_finite_differences);
    ST_RUN(activation_rules);
    ST_RUN(pooling);
    ST_RUN(pooling_rules);
    ST_RUN(softmax);
    ST_RUN(softmax_rules);
    ST_RUN(batchnorm_forward);
    ST_RUN(batchnorm_backward);
    ST_RUN(batchnorm_rules);
    cudnnDestroy(g_h);
    return st_summary();
}
