/* cudnn_ops.cpp - the emulated cuDNN 9 tensor operations (legacy API):
   cudnnAddTensor, cudnnSetTensor, cudnnScaleTensor, activation, pooling,
   softmax and batch normalization, with their descriptors.

   Sources: NVIDIA cuDNN API reference, cudnn_ops library (each function's
   description, parameters and "Returns"; cudnnActivationMode_t,
   cudnnPoolingMode_t, cudnnSoftmaxAlgorithm_t / Mode_t,
   cudnnBatchNormMode_t), and the developer guide's "Scaling Parameters".
   Arithmetic is in float for FLOAT / HALF / BFLOAT16 tensors and in double
   for DOUBLE ones, except where a comment says otherwise. */
#include "cudnn_common.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace cudnn_emu;

namespace {

cudnnStatus_t need(bool ok, const char *fn, const char *what) {
    return ok ? CUDNN_STATUS_SUCCESS : fail(CUDNN_STATUS_BAD_PARAM, fn, "%s", what);
}

/* The data types the emulated operations handle. */
cudnnStatus_t float_type(const char *fn, cudnnDataType_t t) {
    return is_float_type(t) ? CUDNN_STATUS_SUCCESS
                            : fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "data type %s is not emulated", dtype_name(t));
}

/* Rounds v as the compute type of t (float, or double for DOUBLE). */
inline double as_compute(double v, cudnnDataType_t t) { return t == CUDNN_DATA_DOUBLE ? v : (double)(float)v; }

}  // namespace

/* ===================================================================== */
/* >>tensor add / set / scale                                            */

/* C = alpha * A + beta * C where every dimension of A equals C's or is 1
   (broadcast). BAD_PARAM when the dimensions are incompatible or the data
   types differ; more than 5 dimensions: NOT_SUPPORTED. */
extern "C" cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t aDesc,
                                        const void *A, const void *beta, const cudnnTensorDescriptor_t cDesc, void *C) {
    ApiCall api;
    const char *fn = "cudnnAddTensor";
    cudnnStatus_t s = need(handle && alpha && beta && A && C && tensor_usable(aDesc) && tensor_usable(cDesc), fn,
                           "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct a = *aDesc, c = *cDesc;
    if (a.type != c.type) return fail(CUDNN_STATUS_BAD_PARAM, fn, "A and C have different data types");
    if (a.nb != c.nb) return fail(CUDNN_STATUS_BAD_PARAM, fn, "A and C have %d and %d dimensions", a.nb, c.nb);
    for (int d = 0; d < a.nb; d++)
        if (a.dim[d] != c.dim[d] && a.dim[d] != 1)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "A's dimension %d is %d, C's %d", d, a.dim[d], c.dim[d]);
    if (c.nb > 5) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "more than 5 dimensions");
    if ((s = float_type(fn, c.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, c.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "A", A, tensor_span_bytes(a)) || !device_ok(dev, fn, "C", C, tensor_span_bytes(c))) return;
        const int64_t n = tensor_elems(c);
        for (int64_t i = 0; i < n; i++) {
            int64_t rest = i, ao = 0, co = 0;
            for (int d = c.nb - 1; d >= 0; d--) {
                const int64_t idx = rest % c.dim[d];
                rest /= c.dim[d];
                co += idx * c.stride[d];
                if (a.dim[d] != 1) ao += idx * a.stride[d];
            }
            blend_store(C, c.type, co, load_elem(A, a.type, ao), b);
        }
    });
}

/* y[i] = value[0]; the value has y's data type (a 2-byte value for HALF
   and BFLOAT16). */
extern "C" cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void *y,
                                        const void *valuePtr) {
    ApiCall api;
    const char *fn = "cudnnSetTensor";
    cudnnStatus_t s = need(handle && y && valuePtr && tensor_usable(yDesc), fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct t = *yDesc;
    if ((s = float_type(fn, t.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    unsigned char value[8] = {};
    std::memcpy(value, valuePtr, dtype_size(t.type));
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "y", y, tensor_span_bytes(t))) return;
        const size_t es = dtype_size(t.type);
        for (int64_t i = 0, n = tensor_elems(t); i < n; i++)
            std::memcpy(static_cast<char *>(y) + offset_of(t, i) * es, value, es);
    });
}

/* y[i] = alpha * y[i]; alpha is a float (double for DOUBLE tensors). */
extern "C" cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void *y,
                                          const void *alpha) {
    ApiCall api;
    const char *fn = "cudnnScaleTensor";
    cudnnStatus_t s = need(handle && y && alpha && tensor_usable(yDesc), fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct t = *yDesc;
    if ((s = float_type(fn, t.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const float zero = 0.0f;
    const double zerod = 0.0;
    const Blend b = read_blend(alpha, t.type == CUDNN_DATA_DOUBLE ? (const void *)&zerod : &zero, t.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "y", y, tensor_span_bytes(t))) return;
        for (int64_t i = 0, n = tensor_elems(t); i < n; i++) {
            const int64_t o = offset_of(t, i);
            blend_store(y, t.type, o, load_elem(y, t.type, o), b);
        }
    });
}

/* ===================================================================== */
/* >>activation                                                          */

extern "C" cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *activationDesc) {
    ApiCall api;
    if (!activationDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateActivationDescriptor", "activationDesc is NULL");
    *activationDesc = new cudnnActivationStruct();
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc) {
    ApiCall api;
    delete activationDesc;
    return CUDNN_STATUS_SUCCESS;
}

/* coef: the clipping threshold of CLIPPED_RELU, alpha of ELU; RELU ignores
   it (cuDNN's own tests of RELU use coef values below the inputs). */
extern "C" cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                                      cudnnActivationMode_t mode, cudnnNanPropagation_t reluNanOpt,
                                                      double coef) {
    ApiCall api;
    const char *fn = "cudnnSetActivationDescriptor";
    if (!activationDesc) return fail(CUDNN_STATUS_BAD_PARAM, fn, "activationDesc is NULL");
    if (mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is not a cudnnActivationMode_t", (int)mode);
    if (reluNanOpt != CUDNN_NOT_PROPAGATE_NAN && reluNanOpt != CUDNN_PROPAGATE_NAN)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "reluNanOpt %d is not a cudnnNanPropagation_t", (int)reluNanOpt);
    activationDesc->set = true;
    activationDesc->mode = mode;
    activationDesc->nan = reluNanOpt;
    activationDesc->coef = coef;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                                                      cudnnActivationMode_t *mode, cudnnNanPropagation_t *reluNanOpt,
                                                      double *coef) {
    ApiCall api;
    if (!activationDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetActivationDescriptor", "activationDesc is NULL");
    if (mode) *mode = activationDesc->mode;
    if (reluNanOpt) *reluNanOpt = activationDesc->nan;
    if (coef) *coef = activationDesc->coef;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t activationDesc,
                                                               double swish_beta) {
    ApiCall api;
    if (!activationDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetActivationDescriptorSwishBeta", "activationDesc is NULL");
    activationDesc->swish_beta = swish_beta;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t activationDesc,
                                                               double *swish_beta) {
    ApiCall api;
    if (!activationDesc || !swish_beta)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetActivationDescriptorSwishBeta", "a pointer is NULL");
    *swish_beta = activationDesc->swish_beta;
    return CUDNN_STATUS_SUCCESS;
}

namespace {

template <class T>
T sigmoid(T x) {
    return T(1) / (T(1) + std::exp(-x));
}

/* f(x). NOT_PROPAGATE_NAN: RELU and CLIPPED_RELU map NaN to 0. */
template <class T>
T act_forward(const cudnnActivationStruct &a, T x) {
    const bool keep_nan = a.nan == CUDNN_PROPAGATE_NAN;
    switch (a.mode) {
    case CUDNN_ACTIVATION_SIGMOID: return sigmoid(x);
    case CUDNN_ACTIVATION_TANH: return std::tanh(x);
    case CUDNN_ACTIVATION_RELU:
        if (std::isnan(x)) return keep_nan ? x : T(0);
        return x > T(0) ? x : T(0);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        if (std::isnan(x)) return keep_nan ? x : T(0);
        return std::min(std::max(x, T(0)), (T)a.coef);
    case CUDNN_ACTIVATION_ELU: return x > T(0) ? x : (T)a.coef * std::expm1(x);
    case CUDNN_ACTIVATION_SWISH: return x * sigmoid((T)a.swish_beta * x);
    default: return x;
    }
}

/* dy * f'(x), from y for SIGMOID and TANH and from x for the others. */
template <class T>
T act_backward(const cudnnActivationStruct &a, T y, T dy, T x) {
    const bool keep_nan = a.nan == CUDNN_PROPAGATE_NAN;
    switch (a.mode) {
    case CUDNN_ACTIVATION_SIGMOID: return dy * y * (T(1) - y);
    case CUDNN_ACTIVATION_TANH: return dy * (T(1) - y * y);
    case CUDNN_ACTIVATION_RELU:
        if (std::isnan(x)) return keep_nan ? x : T(0);
        return x > T(0) ? dy : T(0);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        if (std::isnan(x)) return keep_nan ? x : T(0);
        return (x > T(0) && x < (T)a.coef) ? dy : T(0);
    case CUDNN_ACTIVATION_ELU: return x > T(0) ? dy : dy * (T)a.coef * std::exp(x);
    case CUDNN_ACTIVATION_SWISH: {
        const T b = (T)a.swish_beta, s = sigmoid(b * x);
        return dy * (s + b * x * s * (T(1) - s));
    }
    default: return dy;
    }
}

/* IDENTITY "does not work with cudnnActivationForward() or
   cudnnActivationBackward()" (cudnnActivationMode_t): NOT_SUPPORTED. */
cudnnStatus_t check_activation(const char *fn, cudnnActivationDescriptor_t d) {
    if (!d || !d->set) return fail(CUDNN_STATUS_BAD_PARAM, fn, "activationDesc is NULL or not set");
    if (d->mode == CUDNN_ACTIVATION_IDENTITY)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "CUDNN_ACTIVATION_IDENTITY is only for cudnnConvolutionBiasActivationForward");
    return CUDNN_STATUS_SUCCESS;
}

}  // namespace

/* BAD_PARAM: dimensions or data types of x and y differ, or x == y with
   different strides (in place needs identical descriptors). */
extern "C" cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                                                const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                                const void *beta, const cudnnTensorDescriptor_t yDesc, void *y) {
    ApiCall api;
    const char *fn = "cudnnActivationForward";
    cudnnStatus_t s = need(handle && alpha && beta && x && y && tensor_usable(xDesc) && tensor_usable(yDesc), fn,
                           "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS || (s = check_activation(fn, activationDesc)) != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct xt = *xDesc, yt = *yDesc;
    const cudnnActivationStruct act = *activationDesc;
    if (!same_dims(xt, yt) || xt.type != yt.type) return fail(CUDNN_STATUS_BAD_PARAM, fn, "x and y differ in shape or type");
    if (x == y && !same_strides(xt, yt)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "in place with different strides");
    if ((s = float_type(fn, xt.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, yt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "y", y, tensor_span_bytes(yt))) return;
        for (int64_t i = 0, n = tensor_elems(xt); i < n; i++) {
            const double v = load_elem(x, xt.type, offset_of(xt, i));
            const double r = b.dbl ? act_forward<double>(act, v) : (double)act_forward<float>(act, (float)v);
            blend_store(y, yt.type, offset_of(yt, i), r, b);
        }
    });
}

/* NOT_SUPPORTED (as documented): shapes or data types differ, or the
   strides of y and dy, or of x and dx, differ. BAD_PARAM: dx == dy in
   place with different strides. */
extern "C" cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                                                 const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
                                                 const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                                 const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
                                                 const cudnnTensorDescriptor_t dxDesc, void *dx) {
    ApiCall api;
    const char *fn = "cudnnActivationBackward";
    cudnnStatus_t s = need(handle && alpha && beta && y && dy && x && dx && tensor_usable(yDesc) && tensor_usable(dyDesc) &&
                               tensor_usable(xDesc) && tensor_usable(dxDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS || (s = check_activation(fn, activationDesc)) != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct yt = *yDesc, dyt = *dyDesc, xt = *xDesc, dxt = *dxDesc;
    const cudnnActivationStruct act = *activationDesc;
    if (dx == dy && !same_strides(dxt, dyt)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "in place with different strides");
    if (!same_dims(yt, dyt) || !same_dims(yt, xt) || !same_dims(yt, dxt))
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "the four tensors differ in shape");
    if (yt.type != dyt.type || yt.type != xt.type || yt.type != dxt.type)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "the four tensors differ in data type");
    if (!same_strides(yt, dyt) || !same_strides(xt, dxt))
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "y and dy, or x and dx, have different strides");
    if ((s = float_type(fn, xt.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, dxt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "y", y, tensor_span_bytes(yt)) || !device_ok(dev, fn, "dy", dy, tensor_span_bytes(dyt)) ||
            !device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "dx", dx, tensor_span_bytes(dxt)))
            return;
        for (int64_t i = 0, n = tensor_elems(xt); i < n; i++) {
            const double yv = load_elem(y, yt.type, offset_of(yt, i)), dyv = load_elem(dy, dyt.type, offset_of(dyt, i));
            const double xv = load_elem(x, xt.type, offset_of(xt, i));
            const double r = b.dbl ? act_backward<double>(act, yv, dyv, xv)
                                   : (double)act_backward<float>(act, (float)yv, (float)dyv, (float)xv);
            blend_store(dx, dxt.type, offset_of(dxt, i), r, b);
        }
    });
}

/* ===================================================================== */
/* >>pooling                                                             */

extern "C" cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *poolingDesc) {
    ApiCall api;
    if (!poolingDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreatePoolingDescriptor", "poolingDesc is NULL");
    *poolingDesc = new cudnnPoolingStruct();
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc) {
    ApiCall api;
    delete poolingDesc;
    return CUDNN_STATUS_SUCCESS;
}

/* BAD_PARAM: a window or stride that is not positive, a negative padding,
   an invalid mode or NaN option. */
extern "C" cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode,
                                                     cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight,
                                                     int windowWidth, int verticalPadding, int horizontalPadding,
                                                     int verticalStride, int horizontalStride) {
    ApiCall api;
    const char *fn = "cudnnSetPooling2dDescriptor";
    if (!poolingDesc) return fail(CUDNN_STATUS_BAD_PARAM, fn, "poolingDesc is NULL");
    if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is not a cudnnPoolingMode_t", (int)mode);
    if (maxpoolingNanOpt != CUDNN_NOT_PROPAGATE_NAN && maxpoolingNanOpt != CUDNN_PROPAGATE_NAN)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "maxpoolingNanOpt %d is not valid", (int)maxpoolingNanOpt);
    if (windowHeight <= 0 || windowWidth <= 0 || verticalStride <= 0 || horizontalStride <= 0)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "window %dx%d, stride %dx%d", windowHeight, windowWidth, verticalStride,
                    horizontalStride);
    if (verticalPadding < 0 || horizontalPadding < 0)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "negative padding %dx%d", verticalPadding, horizontalPadding);
    cudnnPoolingStruct &p = *poolingDesc;
    p.set = true;
    p.mode = mode;
    p.nan = maxpoolingNanOpt;
    p.window[0] = windowHeight; p.window[1] = windowWidth;
    p.pad[0] = verticalPadding; p.pad[1] = horizontalPadding;
    p.stride[0] = verticalStride; p.stride[1] = horizontalStride;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t *mode,
                                                     cudnnNanPropagation_t *maxpoolingNanOpt, int *windowHeight,
                                                     int *windowWidth, int *verticalPadding, int *horizontalPadding,
                                                     int *verticalStride, int *horizontalStride) {
    ApiCall api;
    if (!poolingDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetPooling2dDescriptor", "poolingDesc is NULL");
    const cudnnPoolingStruct &p = *poolingDesc;
    if (mode) *mode = p.mode;
    if (maxpoolingNanOpt) *maxpoolingNanOpt = p.nan;
    int *out[6] = {windowHeight, windowWidth, verticalPadding, horizontalPadding, verticalStride, horizontalStride};
    int val[6] = {p.window[0], p.window[1], p.pad[0], p.pad[1], p.stride[0], p.stride[1]};
    for (int i = 0; i < 6; i++)
        if (out[i]) *out[i] = val[i];
    return CUDNN_STATUS_SUCCESS;
}

namespace {

/* outputDim = 1 + (inputDim + 2 * padding - windowDim) / stride; a window
   larger than the padded input is BAD_PARAM. */
cudnnStatus_t pool_out_dims(const char *fn, const cudnnPoolingStruct &p, const cudnnTensorStruct &x, int *oh, int *ow) {
    if (x.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "only 4-d tensors are emulated");
    const int H = x.dim[2], W = x.dim[3];
    if (H + 2 * p.pad[0] < p.window[0] || W + 2 * p.pad[1] < p.window[1])
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "window %dx%d is larger than the padded %dx%d input", p.window[0],
                    p.window[1], H + 2 * p.pad[0], W + 2 * p.pad[1]);
    *oh = 1 + (H + 2 * p.pad[0] - p.window[0]) / p.stride[0];
    *ow = 1 + (W + 2 * p.pad[1] - p.window[1]) / p.stride[1];
    return CUDNN_STATUS_SUCCESS;
}

bool is_max(cudnnPoolingMode_t m) { return m == CUDNN_POOLING_MAX || m == CUDNN_POOLING_MAX_DETERMINISTIC; }

/* The window of output (p, q), clipped to the image. */
struct Window {
    int h0, h1, w0, w1; /* [h0, h1) x [w0, w1) inside the image */
    int count;          /* elements the average divides by */
};

Window window_of(const cudnnPoolingStruct &pd, int H, int W, int p, int q) {
    Window w;
    const int hs = p * pd.stride[0] - pd.pad[0], ws = q * pd.stride[1] - pd.pad[1];
    w.h0 = std::max(hs, 0);
    w.h1 = std::min(hs + pd.window[0], H);
    w.w0 = std::max(ws, 0);
    w.w1 = std::min(ws + pd.window[1], W);
    const int inside = std::max(0, w.h1 - w.h0) * std::max(0, w.w1 - w.w0);
    /* INCLUDE_PADDING divides by the whole window, EXCLUDE_PADDING by the
       elements inside the image. */
    w.count = pd.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? pd.window[0] * pd.window[1] : inside;
    return w;
}

/* The position of the maximum of a window (the first one, row-major, on
   ties); NaN wins with PROPAGATE_NAN and is skipped otherwise. -1 when the
   window holds no element (or only skipped NaNs). */
int64_t argmax(const cudnnPoolingStruct &pd, const void *x, cudnnDataType_t t, const T4 &v, int n, int c, const Window &w) {
    int64_t best = -1;
    double bv = 0;
    for (int h = w.h0; h < w.h1; h++)
        for (int ww = w.w0; ww < w.w1; ww++) {
            const int64_t o = v.at(n, c, h, ww);
            const double val = load_elem(x, t, o);
            if (std::isnan(val)) {
                if (pd.nan == CUDNN_PROPAGATE_NAN) return o;
                continue;
            }
            if (best < 0 || val > bv) {
                best = o;
                bv = val;
            }
        }
    return best;
}

}  // namespace

extern "C" cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                                           const cudnnTensorDescriptor_t inputTensorDesc, int *n, int *c,
                                                           int *h, int *w) {
    ApiCall api;
    const char *fn = "cudnnGetPooling2dForwardOutputDim";
    if (!poolingDesc || !poolingDesc->set || !tensor_usable(inputTensorDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor is NULL or not set");
    int oh, ow;
    cudnnStatus_t s = pool_out_dims(fn, *poolingDesc, *inputTensorDesc, &oh, &ow);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (n) *n = inputTensorDesc->dim[0];
    if (c) *c = inputTensorDesc->dim[1];
    if (h) *h = oh;
    if (w) *w = ow;
    return CUDNN_STATUS_SUCCESS;
}

/* BAD_PARAM: n or c of x and y differ, the data types differ, or y is not
   the size cudnnGetPooling2dForwardOutputDim gives. Max over a window
   with no element in the image gives -inf; an average over none, 0. */
extern "C" cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                             const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const void *beta, const cudnnTensorDescriptor_t yDesc, void *y) {
    ApiCall api;
    const char *fn = "cudnnPoolingForward";
    cudnnStatus_t s = need(handle && poolingDesc && poolingDesc->set && alpha && beta && x && y && tensor_usable(xDesc) &&
                               tensor_usable(yDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct xt = *xDesc, yt = *yDesc;
    const cudnnPoolingStruct pd = *poolingDesc;
    int oh, ow;
    if ((s = pool_out_dims(fn, pd, xt, &oh, &ow)) != CUDNN_STATUS_SUCCESS) return s;
    if (yt.nb != 4 || yt.dim[0] != xt.dim[0] || yt.dim[1] != xt.dim[1] || xt.type != yt.type)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "x and y differ in n, c or data type");
    if (yt.dim[2] != oh || yt.dim[3] != ow)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "y is %dx%d, pooling gives %dx%d", yt.dim[2], yt.dim[3], oh, ow);
    if ((s = float_type(fn, xt.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, yt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "y", y, tensor_span_bytes(yt))) return;
        const T4 xv = view4(xt), yv = view4(yt);
        for (int n = 0; n < yv.n; n++)
            for (int c = 0; c < yv.c; c++)
                for (int p = 0; p < yv.h; p++)
                    for (int q = 0; q < yv.w; q++) {
                        const Window w = window_of(pd, xv.h, xv.w, p, q);
                        double r;
                        if (is_max(pd.mode)) {
                            const int64_t at = argmax(pd, x, xt.type, xv, n, c, w);
                            r = at < 0 ? -std::numeric_limits<double>::infinity() : load_elem(x, xt.type, at);
                        } else {
                            double sum = 0;
                            for (int h = w.h0; h < w.h1; h++)
                                for (int ww = w.w0; ww < w.w1; ww++) sum = as_compute(sum + load_elem(x, xt.type, xv.at(n, c, h, ww)), xt.type);
                            r = w.count ? as_compute(sum / w.count, xt.type) : 0.0;
                        }
                        blend_store(y, yt.type, yv.at(n, c, p, q), r, b);
                    }
    });
}

/* dx from dy: MAX (and MAX_DETERMINISTIC) send each dy to the position of
   its window's maximum in x; averages spread dy / count over the window's
   elements inside the image. Overlapping windows add up: in output order,
   except that CUDNN_POOLING_MAX, which cuDNN's determinism notes list as
   not reproducible (atomics), adds in another order each call under
   CUEMU_MATH=perturb (nondeterministic_order()). */
extern "C" cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                              const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
                                              const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                              const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta,
                                              const cudnnTensorDescriptor_t dxDesc, void *dx) {
    ApiCall api;
    const char *fn = "cudnnPoolingBackward";
    cudnnStatus_t s = need(handle && poolingDesc && poolingDesc->set && alpha && beta && y && dy && x && dx &&
                               tensor_usable(yDesc) && tensor_usable(dyDesc) && tensor_usable(xDesc) && tensor_usable(dxDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct yt = *yDesc, dyt = *dyDesc, xt = *xDesc, dxt = *dxDesc;
    const cudnnPoolingStruct pd = *poolingDesc;
    int oh, ow;
    if ((s = pool_out_dims(fn, pd, xt, &oh, &ow)) != CUDNN_STATUS_SUCCESS) return s;
    if (!same_dims(yt, dyt) || !same_dims(xt, dxt) || yt.type != dyt.type || yt.type != xt.type || yt.type != dxt.type)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "y/dy or x/dx differ in shape, or the data types differ");
    if (yt.dim[0] != xt.dim[0] || yt.dim[1] != xt.dim[1] || yt.dim[2] != oh || yt.dim[3] != ow)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "y is not the pooling of x");
    if ((s = float_type(fn, xt.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, dxt.type);
    const int dev = handle->device;
    const uint64_t order = pd.mode == CUDNN_POOLING_MAX ? nondeterministic_order() : 0;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "y", y, tensor_span_bytes(yt)) || !device_ok(dev, fn, "dy", dy, tensor_span_bytes(dyt)) ||
            !device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "dx", dx, tensor_span_bytes(dxt)))
            return;
        const T4 xv = view4(xt), dyv = view4(dyt), dxv = view4(dxt);
        std::vector<double> grad((size_t)xv.n * xv.c * xv.h * xv.w, 0.0);
        auto gi = [&](int n, int c, int h, int w) { return (((size_t)n * xv.c + c) * xv.h + h) * xv.w + w; };
        for (int n = 0; n < dyv.n; n++)
            for (int c = 0; c < dyv.c; c++) {
                const std::vector<int> perm = order ? shuffled_order(dyv.h * dyv.w, order ^ ((uint64_t)n << 32 ^ (uint64_t)c)) : std::vector<int>();
                for (int pq = 0; pq < dyv.h * dyv.w; pq++) {
                    const int p = (order ? perm[(size_t)pq] : pq) / dyv.w, q = (order ? perm[(size_t)pq] : pq) % dyv.w;
                    const Window w = window_of(pd, xv.h, xv.w, p, q);
                    const double g = load_elem(dy, dyt.type, dyv.at(n, c, p, q));
                    if (is_max(pd.mode)) {
                        const int64_t at = argmax(pd, x, xt.type, xv, n, c, w);
                        if (at < 0) continue;
                        for (int h = w.h0; h < w.h1; h++)
                            for (int ww = w.w0; ww < w.w1; ww++)
                                if (xv.at(n, c, h, ww) == at) grad[gi(n, c, h, ww)] = as_compute(grad[gi(n, c, h, ww)] + g, xt.type);
                    } else if (w.count) {
                        const double share = as_compute(g / w.count, xt.type);
                        for (int h = w.h0; h < w.h1; h++)
                            for (int ww = w.w0; ww < w.w1; ww++)
                                grad[gi(n, c, h, ww)] = as_compute(grad[gi(n, c, h, ww)] + share, xt.type);
                    }
                }
            }
        for (int n = 0; n < xv.n; n++)
            for (int c = 0; c < xv.c; c++)
                for (int h = 0; h < xv.h; h++)
                    for (int w = 0; w < xv.w; w++) blend_store(dx, dxt.type, dxv.at(n, c, h, w), grad[gi(n, c, h, w)], b);
    });
}

/* ===================================================================== */
/* >>softmax                                                             */

namespace {

/* The groups softmax normalizes over: INSTANCE, all of C, H, W of one
   sample; CHANNEL, the C values of one (n, h, w). */
struct SoftmaxShape {
    int64_t groups, len;
    T4 v;
    bool instance;
    int64_t at(const T4 &t, int64_t g, int64_t j) const {
        if (instance) { /* g = n, j over (c, h, w) */
            const int64_t c = j / ((int64_t)v.h * v.w), hw = j % ((int64_t)v.h * v.w);
            return t.at(g, c, hw / v.w, hw % v.w);
        }
        const int64_t n = g / ((int64_t)v.h * v.w), hw = g % ((int64_t)v.h * v.w); /* g = (n, h, w), j = c */
        return t.at(n, j, hw / v.w, hw % v.w);
    }
};

SoftmaxShape softmax_shape(const cudnnTensorStruct &t, cudnnSoftmaxMode_t mode) {
    SoftmaxShape s;
    s.v = view4(t);
    s.instance = mode == CUDNN_SOFTMAX_MODE_INSTANCE;
    s.groups = s.instance ? s.v.n : (int64_t)s.v.n * s.v.h * s.v.w;
    s.len = s.instance ? (int64_t)s.v.c * s.v.h * s.v.w : s.v.c;
    return s;
}

cudnnStatus_t softmax_args(const char *fn, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode) {
    if (algo < CUDNN_SOFTMAX_FAST || algo > CUDNN_SOFTMAX_LOG)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "algo %d is not a cudnnSoftmaxAlgorithm_t", (int)algo);
    if (mode != CUDNN_SOFTMAX_MODE_INSTANCE && mode != CUDNN_SOFTMAX_MODE_CHANNEL)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is not a cudnnSoftmaxMode_t", (int)mode);
    return CUDNN_STATUS_SUCCESS;
}

}  // namespace

/* FAST: exp(x) / sum exp(x) as is (it overflows for large x, as
   documented); ACCURATE: the maximum is subtracted first; LOG: the log of
   the ACCURATE result, x - max - log(sum exp(x - max)). The exponentials
   are in the compute type; the sums are taken in double. */
extern "C" cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                             const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const void *beta, const cudnnTensorDescriptor_t yDesc, void *y) {
    ApiCall api;
    const char *fn = "cudnnSoftmaxForward";
    cudnnStatus_t s = need(handle && alpha && beta && x && y && tensor_usable(xDesc) && tensor_usable(yDesc), fn,
                           "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS || (s = softmax_args(fn, algo, mode)) != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct xt = *xDesc, yt = *yDesc;
    if (!same_dims(xt, yt) || xt.type != yt.type) return fail(CUDNN_STATUS_BAD_PARAM, fn, "x and y differ in shape or type");
    if (xt.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "only 4-d tensors are emulated");
    if ((s = float_type(fn, xt.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, yt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "y", y, tensor_span_bytes(yt))) return;
        const SoftmaxShape sh = softmax_shape(xt, mode);
        const T4 xv = view4(xt), yv = view4(yt);
        std::vector<double> e((size_t)sh.len), res((size_t)sh.len);
        for (int64_t g = 0; g < sh.groups; g++) {
            double mx = -std::numeric_limits<double>::infinity();
            for (int64_t j = 0; j < sh.len; j++) {
                e[j] = load_elem(x, xt.type, sh.at(xv, g, j));
                mx = std::max(mx, e[j]);
            }
            const double shift = algo == CUDNN_SOFTMAX_FAST ? 0.0 : mx;
            double sum = 0;
            for (int64_t j = 0; j < sh.len; j++) {
                res[j] = as_compute(e[j] - shift, xt.type);
                e[j] = b.dbl ? std::exp(res[j]) : (double)std::exp((float)res[j]);
                sum += e[j];
            }
            for (int64_t j = 0; j < sh.len; j++) {
                const double r = algo == CUDNN_SOFTMAX_LOG ? res[j] - std::log(sum) : e[j] / sum;
                blend_store(y, yt.type, sh.at(yv, g, j), as_compute(r, yt.type), b);
            }
        }
    });
}

/* With y the forward result: ACCURATE / FAST, dx = y * (dy - sum(dy * y));
   LOG, dx = dy - exp(y) * sum(dy). */
extern "C" cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                              const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y,
                                              const cudnnTensorDescriptor_t dyDesc, const void *dy, const void *beta,
                                              const cudnnTensorDescriptor_t dxDesc, void *dx) {
    ApiCall api;
    const char *fn = "cudnnSoftmaxBackward";
    cudnnStatus_t s = need(handle && alpha && beta && y && dy && dx && tensor_usable(yDesc) && tensor_usable(dyDesc) &&
                               tensor_usable(dxDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS || (s = softmax_args(fn, algo, mode)) != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct yt = *yDesc, dyt = *dyDesc, dxt = *dxDesc;
    if (!same_dims(yt, dyt) || !same_dims(yt, dxt) || yt.type != dyt.type || yt.type != dxt.type)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "y, dy and dx differ in shape or type");
    if (yt.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "only 4-d tensors are emulated");
    if ((s = float_type(fn, yt.type)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, dxt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "y", y, tensor_span_bytes(yt)) || !device_ok(dev, fn, "dy", dy, tensor_span_bytes(dyt)) ||
            !device_ok(dev, fn, "dx", dx, tensor_span_bytes(dxt)))
            return;
        const SoftmaxShape sh = softmax_shape(yt, mode);
        const T4 yv = view4(yt), dyv = view4(dyt), dxv = view4(dxt);
        for (int64_t g = 0; g < sh.groups; g++) {
            double sum = 0;
            for (int64_t j = 0; j < sh.len; j++) {
                const double d = load_elem(dy, dyt.type, sh.at(dyv, g, j));
                sum += algo == CUDNN_SOFTMAX_LOG ? d : d * load_elem(y, yt.type, sh.at(yv, g, j));
            }
            for (int64_t j = 0; j < sh.len; j++) {
                const double yj = load_elem(y, yt.type, sh.at(yv, g, j)), d = load_elem(dy, dyt.type, sh.at(dyv, g, j));
                const double r = algo == CUDNN_SOFTMAX_LOG ? d - std::exp(yj) * sum : yj * (d - sum);
                blend_store(dx, dxt.type, sh.at(dxv, g, j), as_compute(r, dxt.type), b);
            }
        }
    });
}

/* ===================================================================== */
/* >>batch normalization                                                 */

namespace {

/* The statistics layout: SPATIAL (and SPATIAL_PERSISTENT) keep one value
   per channel over N, H, W; PER_ACTIVATION one per (c, h, w) over N. */
struct BnShape {
    T4 v;
    bool spatial;
    int64_t features() const { return spatial ? v.c : (int64_t)v.c * v.h * v.w; }
    int64_t per_feature() const { return spatial ? (int64_t)v.n * v.h * v.w : v.n; }
    /* offset of the j-th element of feature f */
    int64_t at(int64_t f, int64_t j) const {
        if (spatial) {
            const int64_t n = j / ((int64_t)v.h * v.w), hw = j % ((int64_t)v.h * v.w);
            return v.at(n, f, hw / v.w, hw % v.w);
        }
        const int64_t c = f / ((int64_t)v.h * v.w), hw = f % ((int64_t)v.h * v.w);
        return v.at(j, c, hw / v.w, hw % v.w);
    }
};

/* Offset of feature f in the 1xCx1x1 / 1xCxHxW parameter tensor. */
int64_t param_at(const cudnnTensorStruct &p, const BnShape &s, int64_t f) {
    const T4 pv = view4(p);
    if (s.spatial) return pv.at(0, f, 0, 0);
    const int64_t c = f / ((int64_t)s.v.h * s.v.w), hw = f % ((int64_t)s.v.h * s.v.w);
    return pv.at(0, c, hw / s.v.w, hw % s.v.w);
}

/* The documented BAD_PARAM cases: x / y (dy, dx) not 4-d or 5-d or not
   matching, the parameter descriptor not 1xCx1x1 (spatial) / 1xCxHxW (per
   activation), its type not FLOAT for HALF / FLOAT / BFLOAT16 data and
   DOUBLE for DOUBLE data, epsilon below CUDNN_BN_MIN_EPSILON. 5-d tensors
   are not emulated (NOT_SUPPORTED). */
cudnnStatus_t check_bn(const char *fn, cudnnBatchNormMode_t mode, const cudnnTensorStruct &x,
                       const std::vector<const cudnnTensorStruct *> &same, const cudnnTensorStruct &p, double eps,
                       BnShape *shape) {
    if (mode < CUDNN_BATCHNORM_PER_ACTIVATION || mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is not a cudnnBatchNormMode_t", (int)mode);
    if (x.nb < 4 || x.nb > 5) return fail(CUDNN_STATUS_BAD_PARAM, fn, "x has %d dimensions (4 or 5)", x.nb);
    if (x.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "5-d batch normalization is not emulated");
    for (const cudnnTensorStruct *t : same)
        if (!same_dims(x, *t) || t->type != x.type) return fail(CUDNN_STATUS_BAD_PARAM, fn, "data tensors differ in shape or type");
    if (!is_float_type(x.type)) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "data type %s", dtype_name(x.type));
    const bool spatial = mode != CUDNN_BATCHNORM_PER_ACTIVATION;
    const bool dims_ok = p.nb == 4 && p.dim[0] == 1 && p.dim[1] == x.dim[1] &&
                         (spatial ? (p.dim[2] == 1 && p.dim[3] == 1) : (p.dim[2] == x.dim[2] && p.dim[3] == x.dim[3]));
    if (!dims_ok) return fail(CUDNN_STATUS_BAD_PARAM, fn, "the scale/bias/mean/variance descriptor has the wrong shape");
    const cudnnDataType_t want = x.type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    if (p.type != want) return fail(CUDNN_STATUS_BAD_PARAM, fn, "parameter type %s, expected %s", dtype_name(p.type), dtype_name(want));
    if (!(eps >= CUDNN_BN_MIN_EPSILON)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "epsilon %g is below CUDNN_BN_MIN_EPSILON", eps);
    shape->v = view4(x);
    shape->spatial = spatial;
    return CUDNN_STATUS_SUCCESS;
}

/* Mean and biased variance of feature f (two passes, in double). */
void feature_stats(const BnShape &s, const void *x, cudnnDataType_t t, int64_t f, double *mean, double *var) {
    const int64_t m = s.per_feature();
    double sum = 0;
    for (int64_t j = 0; j < m; j++) sum += load_elem(x, t, s.at(f, j));
    *mean = sum / m;
    double sq = 0;
    for (int64_t j = 0; j < m; j++) {
        const double d = load_elem(x, t, s.at(f, j)) - *mean;
        sq += d * d;
    }
    *var = sq / m;
}

}  // namespace

extern "C" cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc,
                                                       const cudnnTensorDescriptor_t xDesc, cudnnBatchNormMode_t mode) {
    ApiCall api;
    const char *fn = "cudnnDeriveBNTensorDescriptor";
    if (!derivedBnDesc || !tensor_usable(xDesc)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor is NULL or not set");
    const cudnnTensorStruct &x = *xDesc;
    if (x.nb < 4 || x.nb > 5) return fail(CUDNN_STATUS_BAD_PARAM, fn, "x has %d dimensions (4 or 5)", x.nb);
    if (mode < CUDNN_BATCHNORM_PER_ACTIVATION || mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is not a cudnnBatchNormMode_t", (int)mode);
    cudnnTensorStruct d;
    d.set = true;
    d.type = x.type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    d.nb = x.nb;
    d.dim[0] = 1;
    d.dim[1] = x.dim[1];
    for (int i = 2; i < x.nb; i++) d.dim[i] = mode == CUDNN_BATCHNORM_PER_ACTIVATION ? x.dim[i] : 1;
    int64_t s = 1;
    for (int i = x.nb - 1; i >= 0; i--) {
        d.stride[i] = (int)s;
        s *= d.dim[i];
    }
    *derivedBnDesc = d;
    return CUDNN_STATUS_SUCCESS;
}

/* y = alpha * (bnScale * (x - estimatedMean) / sqrt(epsilon + estimatedVariance)
   + bnBias) + beta * y. */
extern "C" cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    const void *estimatedMean, const void *estimatedVariance, double epsilon) {
    ApiCall api;
    const char *fn = "cudnnBatchNormalizationForwardInference";
    cudnnStatus_t s = need(handle && alpha && beta && x && y && bnScale && bnBias && estimatedMean && estimatedVariance &&
                               tensor_usable(xDesc) && tensor_usable(yDesc) && tensor_usable(bnScaleBiasMeanVarDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const cudnnTensorStruct xt = *xDesc, yt = *yDesc, pt = *bnScaleBiasMeanVarDesc;
    BnShape sh;
    if ((s = check_bn(fn, mode, xt, {&yt}, pt, epsilon, &sh)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, yt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        const size_t pb = tensor_span_bytes(pt);
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "y", y, tensor_span_bytes(yt)) ||
            !device_ok(dev, fn, "bnScale", bnScale, pb) || !device_ok(dev, fn, "bnBias", bnBias, pb) ||
            !device_ok(dev, fn, "estimatedMean", estimatedMean, pb) ||
            !device_ok(dev, fn, "estimatedVariance", estimatedVariance, pb))
            return;
        const BnShape ys{view4(yt), sh.spatial};
        for (int64_t f = 0; f < sh.features(); f++) {
            const int64_t po = param_at(pt, sh, f);
            const double mean = load_elem(estimatedMean, pt.type, po), var = load_elem(estimatedVariance, pt.type, po);
            const double k = load_elem(bnScale, pt.type, po) / std::sqrt(epsilon + var), bias = load_elem(bnBias, pt.type, po);
            for (int64_t j = 0; j < sh.per_feature(); j++) {
                const double v = k * (load_elem(x, xt.type, sh.at(f, j)) - mean) + bias;
                blend_store(y, yt.type, ys.at(f, j), as_compute(v, yt.type), b);
            }
        }
    });
}

/* Training: the batch mean and (biased) variance normalize x; the running
   averages take runningMean = (1 - factor) * runningMean + factor * mean
   and the same for the variance, which the documentation calls the sample
   variance (the unbiased one, m / (m - 1) times the biased one, m > 1);
   the saved inverse variance is 1 / sqrt(biased variance + epsilon). The
   running pair and the saved pair may each be NULL, but only together.
   Statistics are computed in double. */
extern "C" cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    double exponentialAverageFactor, void *resultRunningMean, void *resultRunningVariance, double epsilon,
    void *resultSaveMean, void *resultSaveInvVariance) {
    ApiCall api;
    const char *fn = "cudnnBatchNormalizationForwardTraining";
    cudnnStatus_t s = need(handle && alpha && beta && x && y && bnScale && bnBias && tensor_usable(xDesc) &&
                               tensor_usable(yDesc) && tensor_usable(bnScaleBiasMeanVarDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!resultRunningMean != !resultRunningVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "exactly one of resultRunningMean, resultRunningVariance is NULL");
    if (!resultSaveMean != !resultSaveInvVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "exactly one of resultSaveMean, resultSaveInvVariance is NULL");
    const cudnnTensorStruct xt = *xDesc, yt = *yDesc, pt = *bnScaleBiasMeanVarDesc;
    BnShape sh;
    if ((s = check_bn(fn, mode, xt, {&yt}, pt, epsilon, &sh)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, yt.type);
    const double factor = exponentialAverageFactor;
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        const size_t pb = tensor_span_bytes(pt);
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "y", y, tensor_span_bytes(yt)) ||
            !device_ok(dev, fn, "bnScale", bnScale, pb) || !device_ok(dev, fn, "bnBias", bnBias, pb))
            return;
        if (resultRunningMean && (!device_ok(dev, fn, "resultRunningMean", resultRunningMean, pb) ||
                                  !device_ok(dev, fn, "resultRunningVariance", resultRunningVariance, pb)))
            return;
        if (resultSaveMean && (!device_ok(dev, fn, "resultSaveMean", resultSaveMean, pb) ||
                               !device_ok(dev, fn, "resultSaveInvVariance", resultSaveInvVariance, pb)))
            return;
        const BnShape ys{view4(yt), sh.spatial};
        const int64_t m = sh.per_feature();
        for (int64_t f = 0; f < sh.features(); f++) {
            double mean, var;
            feature_stats(sh, x, xt.type, f, &mean, &var);
            const int64_t po = param_at(pt, sh, f);
            const double inv = 1.0 / std::sqrt(var + epsilon);
            const double k = load_elem(bnScale, pt.type, po) * inv, bias = load_elem(bnBias, pt.type, po);
            for (int64_t j = 0; j < m; j++) {
                const double v = k * (load_elem(x, xt.type, sh.at(f, j)) - mean) + bias;
                blend_store(y, yt.type, ys.at(f, j), as_compute(v, yt.type), b);
            }
            if (resultRunningMean) {
                const double unbiased = m > 1 ? var * m / (m - 1) : var;
                const double rm = load_elem(resultRunningMean, pt.type, po), rv = load_elem(resultRunningVariance, pt.type, po);
                store_elem(resultRunningMean, pt.type, po, as_compute((1 - factor) * rm + factor * mean, pt.type));
                store_elem(resultRunningVariance, pt.type, po, as_compute((1 - factor) * rv + factor * unbiased, pt.type));
            }
            if (resultSaveMean) {
                store_elem(resultSaveMean, pt.type, po, as_compute(mean, pt.type));
                store_elem(resultSaveInvVariance, pt.type, po, as_compute(inv, pt.type));
            }
        }
    });
}

/* With xhat = (x - mean) * invstd over m elements of a feature:
   dBias = sum dy, dScale = sum dy * xhat,
   dx = scale * invstd * (dy - dBias / m - xhat * dScale / m);
   dx blends with alphaDataDiff / betaDataDiff, dScale and dBias with
   alphaParamDiff / betaParamDiff. The saved mean and inverse variance are
   used when given (both or neither), recomputed from x otherwise. */
extern "C" cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alphaDataDiff, const void *betaDataDiff,
    const void *alphaParamDiff, const void *betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale, void *dBnScaleResult, void *dBnBiasResult,
    double epsilon, const void *savedMean, const void *savedInvVariance) {
    ApiCall api;
    const char *fn = "cudnnBatchNormalizationBackward";
    cudnnStatus_t s = need(handle && alphaDataDiff && betaDataDiff && alphaParamDiff && betaParamDiff && x && dy && dx &&
                               bnScale && dBnScaleResult && dBnBiasResult && tensor_usable(xDesc) && tensor_usable(dyDesc) &&
                               tensor_usable(dxDesc) && tensor_usable(dBnScaleBiasDesc),
                           fn, "a pointer or descriptor is NULL");
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!savedMean != !savedInvVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "exactly one of savedMean, savedInvVariance is NULL");
    const cudnnTensorStruct xt = *xDesc, dyt = *dyDesc, dxt = *dxDesc, pt = *dBnScaleBiasDesc;
    BnShape sh;
    if ((s = check_bn(fn, mode, xt, {&dyt, &dxt}, pt, epsilon, &sh)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const Blend bd = read_blend(alphaDataDiff, betaDataDiff, dxt.type);
    const Blend bp = read_blend(alphaParamDiff, betaParamDiff, dxt.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        const size_t pb = tensor_span_bytes(pt);
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(xt)) || !device_ok(dev, fn, "dy", dy, tensor_span_bytes(dyt)) ||
            !device_ok(dev, fn, "dx", dx, tensor_span_bytes(dxt)) || !device_ok(dev, fn, "bnScale", bnScale, pb) ||
            !device_ok(dev, fn, "dBnScaleResult", dBnScaleResult, pb) || !device_ok(dev, fn, "dBnBiasResult", dBnBiasResult, pb))
            return;
        if (savedMean && (!device_ok(dev, fn, "savedMean", savedMean, pb) ||
                          !device_ok(dev, fn, "savedInvVariance", savedInvVariance, pb)))
            return;
        const BnShape dys{view4(dyt), sh.spatial}, dxs{view4(dxt), sh.spatial};
        const int64_t m = sh.per_feature();
        for (int64_t f = 0; f < sh.features(); f++) {
            const int64_t po = param_at(pt, sh, f);
            double mean, inv;
            if (savedMean) {
                mean = load_elem(savedMean, pt.type, po);
                inv = load_elem(savedInvVariance, pt.type, po);
            } else {
                double var;
                feature_stats(sh, x, xt.type, f, &mean, &var);
                inv = 1.0 / std::sqrt(var + epsilon);
            }
            double dbias = 0, dscale = 0;
            for (int64_t j = 0; j < m; j++) {
                const double g = load_elem(dy, dyt.type, dys.at(f, j));
                dbias += g;
                dscale += g * (load_elem(x, xt.type, sh.at(f, j)) - mean) * inv;
            }
            const double k = load_elem(bnScale, pt.type, po) * inv;
            for (int64_t j = 0; j < m; j++) {
                const double xhat = (load_elem(x, xt.type, sh.at(f, j)) - mean) * inv;
                const double g = load_elem(dy, dyt.type, dys.at(f, j));
                blend_store(dx, dxt.type, dxs.at(f, j), as_compute(k * (g - dbias / m - xhat * dscale / m), dxt.type), bd);
            }
            blend_store(dBnScaleResult, pt.type, po, as_compute(dscale, pt.type), bp);
            blend_store(dBnBiasResult, pt.type, po, as_compute(dbias, pt.type), bp);
        }
    });
}
