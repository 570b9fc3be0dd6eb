/* cudnn_conv_engine.cpp - the arithmetic of the emulated cuDNN
   convolutions: every algorithm computes, in the same order, the sums of
   the convolution formulas as im2col + GEMM:

     forward          Y[n][g] = W_g * im2col(X[n][g])
     backward data    dX[n][g] = col2im(W_g^T * dY[n][g])
     backward filter  dW_g = sum over n of dY[n][g] * im2col(X[n][g])^T

   W_g is group g's filters as a (K/G) x (C/G * R * S) matrix, flipped for
   CUDNN_CONVOLUTION; im2col's rows are the (c, r, s) taps, its columns the
   output positions, with x outside the image read as 0. FLOAT, HALF and
   BFLOAT16 data are computed in float, DOUBLE in double (cblas_sgemm /
   cblas_dgemm under CUEMU_WITH_CBLAS, loops otherwise); the results do
   not depend on the number of worker threads; the algorithms cuDNN calls
   non-deterministic sum in another order each call under CUEMU_MATH=perturb. */
#include "cudnn_conv_engine.h"

#include <algorithm>
#include <cmath>

#ifdef CUEMU_WITH_CBLAS
#include <cblas.h>
#endif

namespace cudnn_emu {
namespace {

using Geom = ConvGeom;

/* C = A * B (+ beta * C), row-major; ta / tb: A / B stored transposed. */
template <class T>
void gemm(bool ta, bool tb, int M, int N, int K, const T *A, int lda, const T *B, int ldb, T beta, T *C, int ldc) {
#ifdef CUEMU_WITH_CBLAS
    CBLAS_TRANSPOSE a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
    if constexpr (sizeof(T) == 4)
        cblas_sgemm(CblasRowMajor, a, b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    else
        cblas_dgemm(CblasRowMajor, a, b, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
#else
    if (tb) { /* C[m][n] = sum_k A(m,k) * B[n][k] */
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                T s = 0;
                for (int k = 0; k < K; k++) s += (ta ? A[(int64_t)k * lda + m] : A[(int64_t)m * lda + k]) * B[(int64_t)n * ldb + k];
                C[(int64_t)m * ldc + n] = beta == T(0) ? s : beta * C[(int64_t)m * ldc + n] + s;
            }
        return;
    }
    for (int m = 0; m < M; m++) {
        T *c = C + (int64_t)m * ldc;
        for (int n = 0; n < N; n++) c[n] = beta == T(0) ? T(0) : beta * c[n];
        for (int k = 0; k < K; k++) {
            const T a = ta ? A[(int64_t)k * lda + m] : A[(int64_t)m * lda + k];
            const T *b = B + (int64_t)k * ldb;
            for (int n = 0; n < N; n++) c[n] += a * b[n];
        }
    }
#endif
}

inline float round_operand(float v, Rounding r) {
    return r == Rounding::TF32 ? round_to_tf32(v) : r == Rounding::Half ? round_to_half(v) : v;
}
inline double round_operand(double v, Rounding) { return v; }

/* A 4-d tensor into packed NCHW, converted to T (and rounded). */
template <class T>
void gather_tensor(const void *base, const cudnnTensorStruct &t, Rounding r, T *out) {
    T4 v = view4(t);
    int64_t i = 0;
    for (int n = 0; n < v.n; n++)
        for (int c = 0; c < v.c; c++)
            for (int h = 0; h < v.h; h++)
                for (int w = 0; w < v.w; w++) out[i++] = round_operand((T)load_elem(base, t.type, v.at(n, c, h, w)), r);
}

template <class T>
void scatter_tensor(void *base, const cudnnTensorStruct &t, const T *res, const Blend &b) {
    T4 v = view4(t);
    int64_t i = 0;
    for (int n = 0; n < v.n; n++)
        for (int c = 0; c < v.c; c++)
            for (int h = 0; h < v.h; h++)
                for (int w = 0; w < v.w; w++) blend_store(base, t.type, v.at(n, c, h, w), (double)res[i++], b);
}

/* Element offset of filter tap (k, c, r, s) in memory: NCHW is KCRS, NHWC
   is KRSC. */
int64_t filter_at(const cudnnFilterStruct &f, int k, int c, int r, int s) {
    const int C = f.dim[1], R = f.dim[2], S = f.dim[3];
    if (f.format == CUDNN_TENSOR_NHWC) return (((int64_t)k * R + r) * S + s) * C + c;
    return (((int64_t)k * C + c) * R + r) * S + s;
}

/* The filter as the [K][C/G][R][S] matrix the GEMMs use: flipped for
   CUDNN_CONVOLUTION. */
template <class T>
void gather_filter(const void *base, const cudnnFilterStruct &f, const Geom &g, Rounding rd, T *out) {
    int64_t i = 0;
    for (int k = 0; k < g.K; k++)
        for (int c = 0; c < g.Cg; c++)
            for (int r = 0; r < g.R; r++)
                for (int s = 0; s < g.S; s++) {
                    int rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
                    out[i++] = round_operand((T)load_elem(base, f.type, filter_at(f, k, c, rr, ss)), rd);
                }
}

template <class T>
void scatter_filter(void *base, const cudnnFilterStruct &f, const Geom &g, const T *res, const Blend &b) {
    int64_t i = 0;
    for (int k = 0; k < g.K; k++)
        for (int c = 0; c < g.Cg; c++)
            for (int r = 0; r < g.R; r++)
                for (int s = 0; s < g.S; s++) {
                    int rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
                    blend_store(base, f.type, filter_at(f, k, c, rr, ss), (double)res[i++], b);
                }
}

bool is_pointwise(const Geom &g) { return g.R == 1 && g.S == 1 && g.u == 1 && g.v == 1 && g.ph == 0 && g.pw == 0; }

/* rows (or columns) of a rows x cols matrix in the order perm */
template <class T>
void permute_rows(const T *src, int rows, int64_t cols, const std::vector<int> &perm, T *dst) {
    for (int i = 0; i < rows; i++) std::copy(src + (int64_t)perm[(size_t)i] * cols, src + (int64_t)(perm[(size_t)i] + 1) * cols, dst + (int64_t)i * cols);
}
template <class T>
void permute_cols(const T *src, int rows, int64_t cols, const std::vector<int> &perm, T *dst) {
    for (int i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[(int64_t)i * cols + j] = src[(int64_t)i * cols + perm[(size_t)j]];
}

/* col[(c, r, s)][p, q] = x[c][p*u - ph + r*dh][q*v - pw + s*dw] (0 outside):
   the image of one group of one sample, Cg x H x W. */
template <class T>
void im2col(const Geom &g, const T *img, T *col) {
    const int64_t PQ = g.PQ();
    for (int c = 0; c < g.Cg; c++)
        for (int r = 0; r < g.R; r++)
            for (int s = 0; s < g.S; s++) {
                T *row = col + ((int64_t)(c * g.R + r) * g.S + s) * PQ;
                for (int p = 0; p < g.P; p++) {
                    const int ih = p * g.u - g.ph + r * g.dh;
                    T *dst = row + (int64_t)p * g.Q;
                    if (ih < 0 || ih >= g.H) {
                        std::fill(dst, dst + g.Q, T(0));
                        continue;
                    }
                    const T *src = img + ((int64_t)c * g.H + ih) * g.W;
                    for (int q = 0; q < g.Q; q++) {
                        const int iw = q * g.v - g.pw + s * g.dw;
                        dst[q] = (iw >= 0 && iw < g.W) ? src[iw] : T(0);
                    }
                }
            }
}

/* The adjoint of im2col: img += col folded back. */
template <class T>
void col2im_add(const Geom &g, const T *col, T *img) {
    const int64_t PQ = g.PQ();
    for (int c = 0; c < g.Cg; c++)
        for (int r = 0; r < g.R; r++)
            for (int s = 0; s < g.S; s++) {
                const T *row = col + ((int64_t)(c * g.R + r) * g.S + s) * PQ;
                for (int p = 0; p < g.P; p++) {
                    const int ih = p * g.u - g.ph + r * g.dh;
                    if (ih < 0 || ih >= g.H) continue;
                    T *dst = img + ((int64_t)c * g.H + ih) * g.W;
                    for (int q = 0; q < g.Q; q++) {
                        const int iw = q * g.v - g.pw + s * g.dw;
                        if (iw >= 0 && iw < g.W) dst[iw] += row[(int64_t)p * g.Q + q];
                    }
                }
            }
}

/* Y[n][k] = W_g * im2col(X[n][g]) for every (sample, group). */
template <class T>
void conv_forward(const Geom &g, const T *X, const T *Wm, T *Y) {
    const bool direct = is_pointwise(g);
    cuemu::parallel_for((int64_t)g.N * g.G, 1, [&](int64_t b, int64_t e) {
        std::vector<T> col(direct ? 0 : (size_t)(g.CRS() * g.PQ()));
        for (int64_t it = b; it < e; it++) {
            const int n = (int)(it / g.G), gr = (int)(it % g.G);
            const T *img = X + ((int64_t)n * g.C + (int64_t)gr * g.Cg) * g.HW();
            if (!direct) im2col(g, img, col.data());
            const T *B = direct ? img : col.data();
            T *out = Y + ((int64_t)n * g.K + (int64_t)gr * g.Kg) * g.PQ();
            gemm<T>(false, false, g.Kg, (int)g.PQ(), (int)g.CRS(), Wm + (int64_t)gr * g.Kg * g.CRS(), (int)g.CRS(), B,
                    (int)g.PQ(), T(0), out, (int)g.PQ());
        }
    });
}

/* dX[n][g] = col2im(W_g^T * dY[n][g]). order != 0: the sum over the
   filters' outputs k runs in a shuffled order (ALGO_0's atomic adds). */
template <class T>
void conv_backward_data(const Geom &g, const T *dY, const T *Wm, T *dX, uint64_t order) {
    const bool direct = is_pointwise(g);
    cuemu::parallel_for((int64_t)g.N * g.G, 1, [&](int64_t b, int64_t e) {
        std::vector<T> col(direct ? 0 : (size_t)(g.CRS() * g.PQ()));
        std::vector<T> wp(order ? (size_t)(g.Kg * g.CRS()) : 0), yp(order ? (size_t)(g.Kg * g.PQ()) : 0);
        for (int64_t it = b; it < e; it++) {
            const int n = (int)(it / g.G), gr = (int)(it % g.G);
            T *img = dX + ((int64_t)n * g.C + (int64_t)gr * g.Cg) * g.HW();
            T *dst = direct ? img : col.data();
            const T *wg = Wm + (int64_t)gr * g.Kg * g.CRS(), *yg = dY + ((int64_t)n * g.K + (int64_t)gr * g.Kg) * g.PQ();
            if (order) {
                const std::vector<int> perm = shuffled_order(g.Kg, order ^ (uint64_t)it * 0xd1b54a32d192ed03ull);
                permute_rows(wg, g.Kg, g.CRS(), perm, wp.data());
                permute_rows(yg, g.Kg, g.PQ(), perm, yp.data());
                wg = wp.data();
                yg = yp.data();
            }
            gemm<T>(true, false, (int)g.CRS(), (int)g.PQ(), g.Kg, wg, (int)g.CRS(), yg, (int)g.PQ(), T(0), dst, (int)g.PQ());
            if (!direct) {
                std::fill(img, img + (int64_t)g.Cg * g.HW(), T(0));
                col2im_add(g, col.data(), img);
            }
        }
    });
}

/* dW_g = sum over n of dY[n][g] * im2col(X[n][g])^T. The samples are cut
   into blocks fixed by N alone; each block sums into its own partial and
   the partials are added in block order, so the result does not depend on
   the number of worker threads. order != 0 (ALGO_0 and ALGO_3's atomic
   adds): the output positions of each product and the partials are summed
   in shuffled orders. */
template <class T>
void conv_backward_filter(const Geom &g, const T *X, const T *dY, T *dWm, uint64_t order) {
    const bool direct = is_pointwise(g);
    const int blocks = std::min(g.N, 8), per = (g.N + blocks - 1) / blocks;
    const int64_t part = (int64_t)g.Kg * g.CRS();
    std::vector<T> partial((size_t)(part * g.G * blocks));
    cuemu::parallel_for((int64_t)g.G * blocks, 1, [&](int64_t b, int64_t e) {
        std::vector<T> col(direct ? 0 : (size_t)(g.CRS() * g.PQ()));
        std::vector<T> yp(order ? (size_t)(g.Kg * g.PQ()) : 0), bp(order ? (size_t)(g.CRS() * g.PQ()) : 0);
        for (int64_t it = b; it < e; it++) {
            const int gr = (int)(it / blocks), blk = (int)(it % blocks);
            T *acc = partial.data() + it * part;
            for (int n = blk * per; n < std::min(g.N, (blk + 1) * per); n++) {
                const T *img = X + ((int64_t)n * g.C + (int64_t)gr * g.Cg) * g.HW();
                if (!direct) im2col(g, img, col.data());
                const T *B = direct ? img : col.data();
                const T *yg = dY + ((int64_t)n * g.K + (int64_t)gr * g.Kg) * g.PQ();
                if (order) {
                    const std::vector<int> perm = shuffled_order((int)g.PQ(), order ^ ((uint64_t)it << 32 ^ (uint64_t)n));
                    permute_cols(yg, g.Kg, g.PQ(), perm, yp.data());
                    permute_cols(B, (int)g.CRS(), g.PQ(), perm, bp.data());
                    yg = yp.data();
                    B = bp.data();
                }
                gemm<T>(false, true, g.Kg, (int)g.CRS(), (int)g.PQ(), yg, (int)g.PQ(), B, (int)g.PQ(),
                        n == blk * per ? T(0) : T(1), acc, (int)g.CRS());
            }
        }
    });
    const int used = std::min(blocks, (g.N + per - 1) / per);
    const std::vector<int> blk_order = order ? shuffled_order(used, order * 0xd1b54a32d192ed03ull) : std::vector<int>();
    for (int gr = 0; gr < g.G; gr++) {
        T *dst = dWm + (int64_t)gr * part;
        std::fill(dst, dst + part, T(0));
        for (int bi = 0; bi < used; bi++) {
            const int blk = order ? blk_order[(size_t)bi] : bi;
            const T *src = partial.data() + ((int64_t)gr * blocks + blk) * part;
            for (int64_t i = 0; i < part; i++) dst[i] += src[i];
        }
    }
}

/* The whole computation of one call. */
template <class T>
void run(ConvDir dir, const Geom &g, Rounding rd, const cudnnTensorStruct &in, const cudnnTensorStruct &out,
         const cudnnFilterStruct &filt, const void *a, const void *b, void *o, const Blend &blend, uint64_t order) {
    std::vector<T> X((size_t)g.N * g.C * g.HW()), Wm((size_t)g.K * g.CRS()), Y((size_t)g.N * g.K * g.PQ());
    switch (dir) {
    case ConvDir::Fwd:
        gather_tensor(a, in, rd, X.data());
        gather_filter(b, filt, g, rd, Wm.data());
        conv_forward(g, X.data(), Wm.data(), Y.data());
        scatter_tensor(o, out, Y.data(), blend);
        break;
    case ConvDir::BwdData:
        gather_tensor(a, out, rd, Y.data());
        gather_filter(b, filt, g, rd, Wm.data());
        conv_backward_data(g, Y.data(), Wm.data(), X.data(), order);
        scatter_tensor(o, in, X.data(), blend);
        break;
    case ConvDir::BwdFilter:
        gather_tensor(a, in, rd, X.data());
        gather_tensor(b, out, rd, Y.data());
        conv_backward_filter(g, X.data(), Y.data(), Wm.data(), order);
        scatter_filter(o, filt, g, Wm.data(), blend);
        break;
    }
}

/* The computation of cudnnConvolutionBiasActivationForward in T (float, or
   double for DOUBLE data): the convolution as cudnnConvolutionForward
   computes it, then alpha1 * conv + alpha2 * z + bias and the activation,
   element by element. */
template <class T>
void bias_activation(const Geom &g, Rounding rd, const cudnnTensorStruct &in, const cudnnTensorStruct &out,
                     const cudnnFilterStruct &filt, const void *x, const void *w, const void *z, const void *bias, void *y,
                     const cudnnTensorStruct &zT, const cudnnTensorStruct &bT, const cudnnActivationStruct &act,
                     double alpha1, double alpha2) {
    std::vector<T> X((size_t)g.N * g.C * g.HW()), Wm((size_t)g.K * g.CRS()), Y((size_t)g.N * g.K * g.PQ());
    gather_tensor(x, in, rd, X.data());
    gather_filter(w, filt, g, rd, Wm.data());
    conv_forward(g, X.data(), Wm.data(), Y.data());
    const T4 yv = view4(out), zv = view4(zT), bv = view4(bT);
    int64_t i = 0;
    for (int n = 0; n < g.N; n++)
        for (int k = 0; k < g.K; k++)
            for (int p = 0; p < g.P; p++)
                for (int q = 0; q < g.Q; q++, i++) {
                    T v = (T)alpha1 * Y[i];
                    if (alpha2 != 0.0) v += (T)alpha2 * (T)load_elem(z, zT.type, zv.at(n, k, p, q));
                    v += (T)load_elem(bias, bT.type, bv.at(0, k, 0, 0));
                    const bool keep_nan = std::isnan(v) && act.nan == CUDNN_PROPAGATE_NAN;
                    if (act.mode == CUDNN_ACTIVATION_RELU && !(v > T(0)) && !keep_nan) v = T(0);
                    store_elem(y, out.type, yv.at(n, k, p, q), (double)v);
                }
}

}  // namespace

void conv_compute(ConvDir dir, const ConvGeom &g, Rounding round, bool dbl, const cudnnTensorStruct &in,
                  const cudnnTensorStruct &out, const cudnnFilterStruct &filt, const void *a, const void *b, void *o,
                  const Blend &blend, uint64_t order) {
    if (dbl)
        run<double>(dir, g, round, in, out, filt, a, b, o, blend, order);
    else
        run<float>(dir, g, round, in, out, filt, a, b, o, blend, order);
}

void conv_bias_activation(const ConvGeom &g, Rounding round, bool dbl, const cudnnTensorStruct &in,
                          const cudnnTensorStruct &out, const cudnnFilterStruct &filt, const void *x, const void *w,
                          const void *z, const void *bias, void *y, const cudnnTensorStruct &zT,
                          const cudnnTensorStruct &bT, const cudnnActivationStruct &act, double alpha1, double alpha2) {
    if (dbl)
        bias_activation<double>(g, round, in, out, filt, x, w, z, bias, y, zT, bT, act, alpha1, alpha2);
    else
        bias_activation<float>(g, round, in, out, filt, x, w, z, bias, y, zT, bT, act, alpha1, alpha2);
}

}  // namespace cudnn_emu
