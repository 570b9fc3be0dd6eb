/* cudnn_common.h - what the emulated cuDNN's source files (cudnn.cpp,
   cudnn_conv.cpp, cudnn_conv_engine.cpp, cudnn_ops.cpp) share: the descriptor structures, status
   and error-message helpers, element conversion and tensor access, and the
   launch of queued work. Private to tests/emu/src; C++17.

   Where the behaviour comes from: NVIDIA's cuDNN API reference (the legacy
   cudnn_ops / cudnn_cnn / cudnn_graph library pages, and the older
   developer guides whose text those pages keep). Each place where the
   documentation decides something says so in a comment. */
#ifndef CUEMU_CUDNN_COMMON_H
#define CUEMU_CUDNN_COMMON_H

#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "internal.h"

/* >>descriptors (the opaque types of cudnn.h) */
struct cudnnContext {
    int device;          /* the device current at cudnnCreate */
    cudaStream_t stream; /* 0 until cudnnSetStream */
};

struct cudnnTensorStruct {
    bool set = false;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int nb = 0;
    int dim[CUDNN_DIM_MAX] = {};
    int stride[CUDNN_DIM_MAX] = {};
};

struct cudnnFilterStruct {
    bool set = false;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    int nb = 0;
    int dim[CUDNN_DIM_MAX] = {}; /* always K, C, spatial..., whatever the format */
};

struct cudnnConvolutionStruct {
    int pad[2] = {0, 0};
    int stride[2] = {1, 1};
    int dilation[2] = {1, 1};
    cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    int groups = 1;
};

struct cudnnActivationStruct {
    bool set = false;
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
    double coef = 0.0;
    double swish_beta = 1.0;
};

struct cudnnPoolingStruct {
    bool set = false;
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
    int window[2] = {1, 1};
    int pad[2] = {0, 0};
    int stride[2] = {1, 1};
};

namespace cudnn_emu {

/* >>calls: counting, errors */

/* One per API call: counts the call as a library API call unless it queued
   device work (enqueue() counts those). */
struct ApiCall {
    bool queued = false;
    ApiCall() = default;
    ApiCall(const ApiCall &) = delete;
    ApiCall &operator=(const ApiCall &) = delete;
    ~ApiCall();
};

/* Records "fn: message" as the thread's last error (cudnnGetLastErrorString)
   and returns s. With CUEMU_CUDNN_LOG set in the environment, also prints it. */
cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The name of a status, as cudnnGetErrorString gives it (not counted). */
const char *status_name(cudnnStatus_t s);

/* Checks the handle and the device state before work is queued:
   CUDNN_STATUS_BAD_PARAM for a null handle; CUDNN_STATUS_EXECUTION_FAILED
   when the device holds a sticky error (a kernel already faulted: cuDNN 9
   reports a failed launch as EXECUTION_FAILED). */
cudnnStatus_t check_handle_for_work(cudnnHandle_t h, const char *fn);

/* Queues fn on the handle's stream. */
cudnnStatus_t launch(ApiCall &call, cudnnHandle_t h, const char *fn, std::function<void()> work);

/* >>elements */
size_t dtype_size(cudnnDataType_t t); /* 0 for the types the emulator does not handle */
bool is_float_type(cudnnDataType_t t); /* FLOAT, DOUBLE, HALF, BFLOAT16 */
const char *dtype_name(cudnnDataType_t t);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);     /* round to nearest even */
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);     /* round to nearest even */
float round_to_half(float f);        /* f rounded to HALF precision, kept as float */
float round_to_bf16(float f);
float round_to_tf32(float f);        /* 10 explicit mantissa bits, nearest even */

inline double load_elem(const void *base, cudnnDataType_t t, int64_t i) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return static_cast<const float *>(base)[i];
    case CUDNN_DATA_DOUBLE: return static_cast<const double *>(base)[i];
    case CUDNN_DATA_HALF: return half_to_float(static_cast<const uint16_t *>(base)[i]);
    case CUDNN_DATA_BFLOAT16: return bf16_to_float(static_cast<const uint16_t *>(base)[i]);
    default: return 0.0;
    }
}

/* Stores v; for the 32-bit and 16-bit types v must already be a float value
   (it is converted with one rounding from float). */
inline void store_elem(void *base, cudnnDataType_t t, int64_t i, double v) {
    switch (t) {
    case CUDNN_DATA_FLOAT: static_cast<float *>(base)[i] = static_cast<float>(v); break;
    case CUDNN_DATA_DOUBLE: static_cast<double *>(base)[i] = v; break;
    case CUDNN_DATA_HALF: static_cast<uint16_t *>(base)[i] = float_to_half(static_cast<float>(v)); break;
    case CUDNN_DATA_BFLOAT16: static_cast<uint16_t *>(base)[i] = float_to_bf16(static_cast<float>(v)); break;
    default: break;
    }
}

/* >>scaling factors */
/* alpha and beta are host pointers read at call time; the documentation
   ("Scaling Parameters"): double for DOUBLE tensors, float otherwise. */
struct Blend {
    double alpha = 1.0, beta = 0.0;
    bool dbl = false; /* compute the blend in double (DOUBLE tensors) */
};
Blend read_blend(const void *alpha, const void *beta, cudnnDataType_t t);

/* dst[i] = alpha * result + beta * dst[i], in float (double for DOUBLE
   tensors); when beta is 0 dst is not read (its NaNs do not propagate). */
inline void blend_store(void *dst, cudnnDataType_t t, int64_t i, double result, const Blend &b) {
    if (b.dbl) {
        double v = b.alpha * result;
        if (b.beta != 0.0) v += b.beta * load_elem(dst, t, i);
        store_elem(dst, t, i, v);
    } else {
        float v = static_cast<float>(b.alpha) * static_cast<float>(result);
        if (b.beta != 0.0) v += static_cast<float>(b.beta) * static_cast<float>(load_elem(dst, t, i));
        store_elem(dst, t, i, v);
    }
}

/* >>tensors */
int64_t tensor_elems(const cudnnTensorStruct &t);
size_t tensor_span_bytes(const cudnnTensorStruct &t); /* bytes from the base to one past the last element */
bool same_dims(const cudnnTensorStruct &a, const cudnnTensorStruct &b);
bool same_strides(const cudnnTensorStruct &a, const cudnnTensorStruct &b);
bool tensor_usable(cudnnTensorDescriptor_t d); /* non-null and set */

/* 4-D view of a descriptor: n, c, h, w and their element strides. */
struct T4 {
    int n, c, h, w;
    int64_t sn, sc, sh, sw;
    int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const { return in * sn + ic * sc + ih * sh + iw * sw; }
};
T4 view4(const cudnnTensorStruct &t);

/* Element offset of the i-th element (row-major over dims) of a tensor. */
int64_t offset_of(const cudnnTensorStruct &t, int64_t i);

/* Called from queued work: true when [p, p + bytes) is memory the device may
   touch; otherwise raises cudaErrorIllegalAddress as a kernel would, with a
   message naming the call and the operand, and returns false. */
bool device_ok(int dev, const char *fn, const char *what, const void *p, size_t bytes);

/* >>compute capability */
int compute_capability(int dev); /* major * 10 + minor */

}  // namespace cudnn_emu

/* >>non-determinism. cuDNN's "Reproducibility (Determinism)" notes and its
   algorithm enums: CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 and
   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 / _ALGO_3 sum "using the atomic add
   operation, thus the results are non-deterministic". Under CUEMU_MATH=perturb
   (the emulator's mode for testing tolerances, tests/emu/include/cuemu/
   device_math.h) such a sum takes an order that changes from call to call:
   this returns a fresh non-zero seed for the order (CUEMU_SEED seeds the
   sequence); 0, the fixed order, in every other mode. */
inline uint64_t nondeterministic_order() {
    static const bool perturb = [] {
        const char *m = std::getenv("CUEMU_MATH");
        return m && !std::strcmp(m, "perturb");
    }();
    if (!perturb) return 0;
    static const uint64_t seed = [] {
        const char *s = std::getenv("CUEMU_SEED");
        return s && *s ? (uint64_t)std::strtoull(s, nullptr, 0) : (uint64_t)0x243f6a8885a308d3ull;
    }();
    static std::atomic<uint64_t> calls{0};
    uint64_t z = seed + (calls.fetch_add(1) + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) | 1;
}

/* A permutation of [0, n) from seed (Fisher-Yates on splitmix64): an order
   of summation for the non-deterministic algorithms. */
inline std::vector<int> shuffled_order(int n, uint64_t seed) {
    std::vector<int> p((size_t)(n > 0 ? n : 0));
    for (int i = 0; i < n; i++) p[(size_t)i] = i;
    for (int i = n - 1; i > 0; i--) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        const size_t j = (size_t)(z % (uint64_t)(i + 1));
        const int t = p[(size_t)i];
        p[(size_t)i] = p[j];
        p[j] = t;
    }
    return p;
}

#endif
