/* cudnn_nondeterminism.cu - the convolution algorithms cuDNN documents as
   non-deterministic (CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, BWD_FILTER_ALGO_0
   and ALGO_3: "the sum is done using the atomic add operation, thus the
   results are non-deterministic"; reported CUDNN_NON_DETERMINISTIC by
   cudnnGet/Find*_v7) sum in an order that changes from call to call under
   CUEMU_MATH=perturb, so two calls can give different bits, each within a
   dot product's error bound of a float64 reference; the deterministic
   algorithms give the same bits every call, in every mode, and so do all
   algorithms in the default mode. The same for cudnnPoolingBackward with
   CUDNN_POOLING_MAX (not reproducible per cuDNN's determinism notes)
   against CUDNN_POOLING_MAX_DETERMINISTIC. part_math.sh runs this under
   perturb. */
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "selftest.h"

namespace {

const int N = 4, C = 8, H = 9, W = 9, K = 16, R = 3, S = 3, P = 9, Q = 9;   /* pad 1, stride 1 */
cudnnHandle_t g_h;
cudnnTensorDescriptor_t g_x, g_y;
cudnnFilterDescriptor_t g_w;
cudnnConvolutionDescriptor_t g_conv;
std::vector<float> hx, hw, hy;   /* x, w, dy */
float *dx_in, *dw_in, *ddy, *dout;
void *g_ws;
const size_t kWs = 64 << 20;

bool perturb_mode() { const char *m = getenv("CUEMU_MATH"); return m && !strcmp(m, "perturb"); }

uint32_t g_rng = 2024u;
float frand() {
    g_rng = g_rng * 1664525u + 1013904223u;
    return ((g_rng >> 8) / 16777216.0f) * 2 - 1;
}

void setup() {
    cudnnCreate(&g_h);
    cudnnCreateTensorDescriptor(&g_x);
    cudnnCreateTensorDescriptor(&g_y);
    cudnnCreateFilterDescriptor(&g_w);
    cudnnCreateConvolutionDescriptor(&g_conv);
    cudnnSetTensor4dDescriptor(g_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W);
    cudnnSetTensor4dDescriptor(g_y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, P, Q);
    cudnnSetFilter4dDescriptor(g_w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S);
    cudnnSetConvolution2dDescriptor(g_conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(g_conv, CUDNN_FMA_MATH);   /* plain float products: no TF32 */
    hx.resize((size_t)N * C * H * W);
    hw.resize((size_t)K * C * R * S);
    hy.resize((size_t)N * K * P * Q);
    for (float &v : hx) v = frand();
    for (float &v : hw) v = frand();
    for (float &v : hy) v = frand();
    cudaMalloc(&dx_in, hx.size() * 4);
    cudaMalloc(&dw_in, hw.size() * 4);
    cudaMalloc(&ddy, hy.size() * 4);
    cudaMalloc(&dout, hx.size() * 4 + hw.size() * 4);
    cudaMalloc(&g_ws, kWs);
    cudaMemcpy(dx_in, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dw_in, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(ddy, hy.data(), hy.size() * 4, cudaMemcpyHostToDevice);
}

/* one backward call; returns the result (dx or dw) on the host */
std::vector<float> bwd_data(int algo) {
    const float one = 1, zero = 0;
    std::vector<float> r(hx.size());
    if (cudnnConvolutionBackwardData(g_h, &one, g_w, dw_in, g_y, ddy, g_conv, (cudnnConvolutionBwdDataAlgo_t)algo, g_ws, kWs,
                                     &zero, g_x, dout) != CUDNN_STATUS_SUCCESS ||
        cudaMemcpy(r.data(), dout, r.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        r.clear();
    return r;
}
std::vector<float> bwd_filter(int algo) {
    const float one = 1, zero = 0;
    std::vector<float> r(hw.size());
    if (cudnnConvolutionBackwardFilter(g_h, &one, g_x, dx_in, g_y, ddy, g_conv, (cudnnConvolutionBwdFilterAlgo_t)algo, g_ws,
                                       kWs, &zero, g_w, dout) != CUDNN_STATUS_SUCCESS ||
        cudaMemcpy(r.data(), dout, r.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        r.clear();
    return r;
}

/* float64 references and the sums of |terms| (a dot product's error bound: n u sum|x||w|) */
void ref_data(std::vector<double> &ref, std::vector<double> &mag) {
    ref.assign(hx.size(), 0);
    mag.assign(hx.size(), 0);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++)
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                const int h = p - 1 + r, w = q - 1 + s;
                                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                                const double t = (double)hy[((size_t)(n * K + k) * P + p) * Q + q] * hw[((size_t)(k * C + c) * R + r) * S + s];
                                const size_t i = ((size_t)(n * C + c) * H + h) * W + w;
                                ref[i] += t;
                                mag[i] += fabs(t);
                            }
}
void ref_filter(std::vector<double> &ref, std::vector<double> &mag) {
    ref.assign(hw.size(), 0);
    mag.assign(hw.size(), 0);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++)
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                const int h = p - 1 + r, w = q - 1 + s;
                                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                                const double t = (double)hy[((size_t)(n * K + k) * P + p) * Q + q] * hx[((size_t)(n * C + c) * H + h) * W + w];
                                const size_t i = ((size_t)(k * C + c) * R + r) * S + s;
                                ref[i] += t;
                                mag[i] += fabs(t);
                            }
}
/* |got - ref| <= (n + 2) 2^-24 sum|terms| for every element */
bool within(const std::vector<float> &got, const std::vector<double> &ref, const std::vector<double> &mag, int nterms) {
    if (got.size() != ref.size()) return false;
    for (size_t i = 0; i < got.size(); i++)
        if (fabs((double)got[i] - ref[i]) > (nterms + 2) * ldexp(1.0, -24) * mag[i] + 1e-30) return false;
    return true;
}
bool identical(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && !a.empty() && memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

/* what cudnnGet*_v7 reports for the algorithms used below */
ST_TEST(reported_determinism) {
    cudnnConvolutionBwdDataAlgoPerf_t pd[8];
    cudnnConvolutionBwdFilterAlgoPerf_t pf[8];
    int nd = 0, nf = 0;
    ST_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(g_h, g_w, g_y, g_conv, g_x, 8, &nd, pd) == CUDNN_STATUS_SUCCESS);
    ST_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(g_h, g_x, g_y, g_conv, g_w, 8, &nf, pf) == CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < nd; i++)
        if (pd[i].status == CUDNN_STATUS_SUCCESS)
            ST_CHECK((pd[i].determinism == CUDNN_NON_DETERMINISTIC) == (pd[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0));
    for (int i = 0; i < nf; i++)
        if (pf[i].status == CUDNN_STATUS_SUCCESS)
            ST_CHECK((pf[i].determinism == CUDNN_NON_DETERMINISTIC) ==
                     (pf[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || pf[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
}

ST_TEST(backward_data_order) {
    std::vector<double> ref, mag;
    ref_data(ref, mag);
    const std::vector<float> a0 = bwd_data(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0), b0 = bwd_data(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
    const std::vector<float> a1 = bwd_data(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1), b1 = bwd_data(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
    const int n = K * R * S;
    ST_CHECK(within(a0, ref, mag, n) && within(b0, ref, mag, n) && within(a1, ref, mag, n) && within(b1, ref, mag, n));
    ST_CHECK(identical(a1, b1));   /* deterministic: always the same bits */
    if (perturb_mode()) ST_CHECKF(!identical(a0, b0), "ALGO_0 gave the same bits twice under CUEMU_MATH=perturb");
    else ST_CHECK(identical(a0, b0));
}

ST_TEST(backward_filter_order) {
    std::vector<double> ref, mag;
    ref_filter(ref, mag);
    const int n = N * P * Q;
    for (int algo : {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3}) {
        const std::vector<float> a = bwd_filter(algo), b = bwd_filter(algo);
        ST_CHECKF(within(a, ref, mag, n) && within(b, ref, mag, n), "algo %d outside the error bound", algo);
        if (perturb_mode()) ST_CHECKF(!identical(a, b), "algo %d gave the same bits twice under CUEMU_MATH=perturb", algo);
        else ST_CHECKF(identical(a, b), "algo %d changed between calls", algo);
    }
    const std::vector<float> a1 = bwd_filter(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1), b1 = bwd_filter(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
    ST_CHECK(within(a1, ref, mag, n) && identical(a1, b1));
}

/* cudnnPoolingBackward: CUDNN_POOLING_MAX is listed as not reproducible,
   CUDNN_POOLING_MAX_DETERMINISTIC is its reproducible twin. 3x3 windows at
   stride 1 overlap, so a maximum collects up to nine dy values. */
std::vector<float> pool_backward(cudnnPoolingMode_t mode, float *px, float *py, float *pdy, float *pdx,
                                 cudnnTensorDescriptor_t xd, cudnnTensorDescriptor_t yd) {
    cudnnPoolingDescriptor_t pd;
    cudnnCreatePoolingDescriptor(&pd);
    cudnnSetPooling2dDescriptor(pd, mode, CUDNN_NOT_PROPAGATE_NAN, 3, 3, 0, 0, 1, 1);
    const float one = 1, zero = 0;
    std::vector<float> r((size_t)2 * 4 * 16 * 16);
    if (cudnnPoolingForward(g_h, pd, &one, xd, px, &zero, yd, py) != CUDNN_STATUS_SUCCESS ||
        cudnnPoolingBackward(g_h, pd, &one, yd, py, yd, pdy, xd, px, &zero, xd, pdx) != CUDNN_STATUS_SUCCESS ||
        cudaMemcpy(r.data(), pdx, r.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        r.clear();
    cudnnDestroyPoolingDescriptor(pd);
    return r;
}
ST_TEST(max_pooling_backward_order) {
    cudnnTensorDescriptor_t xd, yd;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 16, 16);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 14, 14);
    std::vector<float> x((size_t)2 * 4 * 16 * 16), dy((size_t)2 * 4 * 14 * 14);
    for (size_t i = 0; i < x.size(); i++) x[i] = (i % 5 == 0) ? 10.0f + (float)(i % 7) : frand();   /* sparse peaks */
    for (float &v : dy) v = frand();
    float *px, *py, *pdy, *pdx;
    cudaMalloc(&px, x.size() * 4);
    cudaMalloc(&pdx, x.size() * 4);
    cudaMalloc(&py, dy.size() * 4);
    cudaMalloc(&pdy, dy.size() * 4);
    cudaMemcpy(px, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(pdy, dy.data(), dy.size() * 4, cudaMemcpyHostToDevice);
    const std::vector<float> a = pool_backward(CUDNN_POOLING_MAX, px, py, pdy, pdx, xd, yd);
    const std::vector<float> b = pool_backward(CUDNN_POOLING_MAX, px, py, pdy, pdx, xd, yd);
    const std::vector<float> c = pool_backward(CUDNN_POOLING_MAX_DETERMINISTIC, px, py, pdy, pdx, xd, yd);
    const std::vector<float> e = pool_backward(CUDNN_POOLING_MAX_DETERMINISTIC, px, py, pdy, pdx, xd, yd);
    ST_CHECK(identical(c, e));
    bool close = a.size() == c.size() && b.size() == c.size();
    for (size_t i = 0; close && i < a.size(); i++)   /* at most nine terms of |dy| <= 1 */
        close = fabsf(a[i] - c[i]) <= 9 * 9 * ldexpf(1, -24) * 9 && fabsf(b[i] - c[i]) <= 9 * 9 * ldexpf(1, -24) * 9;
    ST_CHECK(close);
    if (perturb_mode()) ST_CHECKF(!identical(a, b), "MAX gave the same bits twice under CUEMU_MATH=perturb");
    else ST_CHECK(identical(a, b) && identical(a, c));
    cudaFree(px);
    cudaFree(py);
    cudaFree(pdy);
    cudaFree(pdx);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
}

} /* namespace */

int main() {
    setup();
    ST_RUN(reported_determinism);
    ST_RUN(backward_data_order);
    ST_RUN(backward_filter_order);
    ST_RUN(max_pooling_backward_order);
    cudaFree(dx_in);
    cudaFree(dw_in);
    cudaFree(ddy);
    cudaFree(dout);
    cudaFree(g_ws);
    cudnnDestroyConvolutionDescriptor(g_conv);
    cudnnDestroyFilterDescriptor(g_w);
    cudnnDestroyTensorDescriptor(g_x);
    cudnnDestroyTensorDescriptor(g_y);
    cudnnDestroy(g_h);
    return st_summary();
}
