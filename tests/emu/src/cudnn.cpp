/* cudnn.cpp - the emulated cuDNN 9: handles, version and error queries,
   tensor and filter descriptors, and the helpers cudnn_conv.cpp and
   cudnn_ops.cpp share (cudnn_common.h).

   Sources: NVIDIA cuDNN API reference, cudnn_graph library (cudnnCreate,
   cudnnSetStream, cudnnGetProperty, cudnnGetErrorString,
   cudnnGetLastErrorString) and cudnn_ops library (tensor and filter
   descriptors); the data type / status values are those of cuDNN 9.19's
   headers. */
#include "cudnn_common.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace cudnn_emu {

/* >>calls */

ApiCall::~ApiCall() {
    if (!queued) cuemu::count_library_api_call();
}

namespace {
thread_local std::string t_last_error;

bool log_enabled() {
    static const bool on = std::getenv("CUEMU_CUDNN_LOG") != nullptr;
    return on;
}
}  // namespace

cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t_last_error = std::string(fn) + ": " + msg + " (" + status_name(s) + ")";
    if (log_enabled()) std::fprintf(stderr, "cuemu cudnn: %s\n", t_last_error.c_str());
    return s;
}

cudnnStatus_t check_handle_for_work(cudnnHandle_t h, const char *fn) {
    if (!h) return fail(CUDNN_STATUS_BAD_PARAM, fn, "handle is NULL");
    if (cuemu::sticky_error(h->device) != cudaSuccess)
        return fail(CUDNN_STATUS_EXECUTION_FAILED, fn, "the device is in an error state from earlier work");
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t launch(ApiCall &call, cudnnHandle_t h, const char *fn, std::function<void()> work) {
    cudaError_t e = cuemu::enqueue(h->stream, fn, std::move(work));
    if (e != cudaSuccess) return fail(CUDNN_STATUS_EXECUTION_FAILED, fn, "could not queue the work (CUDA error %d)", (int)e);
    call.queued = true;
    return CUDNN_STATUS_SUCCESS;
}

/* >>elements */

size_t dtype_size(cudnnDataType_t t) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return 4;
    case CUDNN_DATA_DOUBLE: return 8;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8: return 1;
    case CUDNN_DATA_INT32: return 4;
    case CUDNN_DATA_INT64: return 8;
    default: return 0;
    }
}

bool is_float_type(cudnnDataType_t t) {
    return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
}

const char *dtype_name(cudnnDataType_t t) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return "FLOAT";
    case CUDNN_DATA_DOUBLE: return "DOUBLE";
    case CUDNN_DATA_HALF: return "HALF";
    case CUDNN_DATA_BFLOAT16: return "BFLOAT16";
    case CUDNN_DATA_INT8: return "INT8";
    case CUDNN_DATA_INT32: return "INT32";
    default: return "(other)";
    }
}

namespace {
uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
    if (exp == 0) {                                                    /* zero, subnormal: man * 2^-24 */
        float v = std::ldexp(static_cast<float>(man), -24);
        return sign ? -v : v;
    }
    return float_of(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t float_to_half(float f) {
    uint32_t x = bits_of(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN stays NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                        /* >= 65520: inf */
    if (a < 0x38800000u) {                                                           /* below 2^-14 */
        /* subnormal half: count of 2^-24 units, rounded to nearest even
           (scaling by 2^24 is exact; nearbyint rounds to even) */
        float units = std::nearbyint(float_of(a) * 16777216.0f);
        return (uint16_t)(sign | (uint16_t)units);
    }
    uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
    uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float bf16_to_float(uint16_t b) { return float_of((uint32_t)b << 16); }

uint16_t float_to_bf16(float f) {
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float round_to_half(float f) { return half_to_float(float_to_half(f)); }
float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

float round_to_tf32(float f) {
    uint32_t x = bits_of(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f; /* inf, NaN */
    x += 0xfffu + ((x >> 13) & 1u);
    return float_of(x & 0xffffe000u);
}

/* >>scaling */

Blend read_blend(const void *alpha, const void *beta, cudnnDataType_t t) {
    Blend b;
    b.dbl = t == CUDNN_DATA_DOUBLE;
    if (b.dbl) {
        b.alpha = *static_cast<const double *>(alpha);
        b.beta = *static_cast<const double *>(beta);
    } else {
        b.alpha = *static_cast<const float *>(alpha);
        b.beta = *static_cast<const float *>(beta);
    }
    return b;
}

/* >>tensors */

int64_t tensor_elems(const cudnnTensorStruct &t) {
    int64_t n = 1;
    for (int i = 0; i < t.nb; i++) n *= t.dim[i];
    return n;
}

size_t tensor_span_bytes(const cudnnTensorStruct &t) {
    int64_t last = 0;
    for (int i = 0; i < t.nb; i++) last += (int64_t)(t.dim[i] - 1) * t.stride[i];
    return (size_t)(last + 1) * dtype_size(t.type);
}

bool same_dims(const cudnnTensorStruct &a, const cudnnTensorStruct &b) {
    if (a.nb != b.nb) return false;
    for (int i = 0; i < a.nb; i++)
        if (a.dim[i] != b.dim[i]) return false;
    return true;
}

bool same_strides(const cudnnTensorStruct &a, const cudnnTensorStruct &b) {
    if (a.nb != b.nb) return false;
    for (int i = 0; i < a.nb; i++)
        if (a.stride[i] != b.stride[i]) return false;
    return true;
}

bool tensor_usable(cudnnTensorDescriptor_t d) { return d && d->set; }

T4 view4(const cudnnTensorStruct &t) {
    T4 v;
    v.n = t.dim[0];
    v.c = t.dim[1];
    v.h = t.nb > 2 ? t.dim[2] : 1;
    v.w = t.nb > 3 ? t.dim[3] : 1;
    v.sn = t.stride[0];
    v.sc = t.stride[1];
    v.sh = t.nb > 2 ? t.stride[2] : 1;
    v.sw = t.nb > 3 ? t.stride[3] : 1;
    return v;
}

int64_t offset_of(const cudnnTensorStruct &t, int64_t i) {
    int64_t off = 0;
    for (int d = t.nb - 1; d >= 0; d--) {
        off += (i % t.dim[d]) * t.stride[d];
        i /= t.dim[d];
    }
    return off;
}

bool device_ok(int dev, const char *fn, const char *what, const void *p, size_t bytes) {
    std::string why;
    if (cuemu::device_range(dev, p, bytes, &why)) return true;
    cuemu::fault(cudaErrorIllegalAddress, "%s: %s (%zu bytes at %p) is not device memory the kernel may access: %s",
                 fn, what, bytes, p, why.c_str());
    return false;
}

int compute_capability(int dev) {
    const cuemu::Profile &p = cuemu::profile(dev);
    return p.major * 10 + p.minor;
}

}  // namespace cudnn_emu

using namespace cudnn_emu;

/* ===================================================================== */
/* >>version, errors, properties                                         */

extern "C" size_t cudnnGetVersion(void) {
    ApiCall call;
    return CUDNN_VERSION;
}

extern "C" size_t cudnnGetMaxDeviceVersion(void) {
    ApiCall call;
    return CUDNN_MAX_DEVICE_VERSION;
}

extern "C" size_t cudnnGetCudartVersion(void) {
    ApiCall call;
    return CUDART_VERSION;
}

extern "C" cudnnStatus_t cudnnGraphVersionCheck(void) {
    ApiCall call;
    return CUDNN_STATUS_SUCCESS;
}

namespace cudnn_emu {

const char *status_name(cudnnStatus_t status) {
    switch (status) {
#define CUEMU_NAME(s) \
    case s: return #s;
        CUEMU_NAME(CUDNN_STATUS_SUCCESS)
        CUEMU_NAME(CUDNN_STATUS_NOT_INITIALIZED)
        CUEMU_NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
        CUEMU_NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
        CUEMU_NAME(CUDNN_STATUS_DEPRECATED)
        CUEMU_NAME(CUDNN_STATUS_LICENSE_ERROR)
        CUEMU_NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
        CUEMU_NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
        CUEMU_NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM)
        CUEMU_NAME(CUDNN_STATUS_INVALID_VALUE)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
        CUEMU_NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
        CUEMU_NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
        CUEMU_NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
        CUEMU_NAME(CUDNN_STATUS_EXECUTION_FAILED)
        CUEMU_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
        CUEMU_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
        CUEMU_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
        CUEMU_NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef CUEMU_NAME
    }
    return "CUDNN_STATUS_UNKNOWN";
}

}  // namespace cudnn_emu

extern "C" const char *cudnnGetErrorString(cudnnStatus_t status) {
    ApiCall call;
    return status_name(status);
}

/* The last error message of the calling thread, truncated to max_size - 1
   characters; "" when no call of this thread has failed. */
extern "C" void cudnnGetLastErrorString(char *message, size_t max_size) {
    ApiCall call;
    if (!message || max_size == 0) return;
    std::snprintf(message, max_size, "%s", t_last_error.c_str());
}

extern "C" cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value) {
    ApiCall call;
    if (!value) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty", "value is NULL");
    switch (type) {
    case MAJOR_VERSION: *value = CUDNN_MAJOR; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUDNN_MINOR; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUDNN_PATCHLEVEL; return CUDNN_STATUS_SUCCESS;
    }
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty", "type %d is not a libraryPropertyType", (int)type);
}

/* ===================================================================== */
/* >>handles                                                             */

/* cudnnCreate ties the handle to the current device. Documented returns:
   BAD_PARAM for a NULL pointer; NOT_INITIALIZED when no compatible GPU is
   found; ARCH_MISMATCH when the GPU is too old; INTERNAL_ERROR when CUDA
   resource allocation fails (here: the device is in a sticky error
   state). The oldest architecture cuDNN 9 ran on is Maxwell (5.0). */
extern "C" cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
    ApiCall call;
    const char *fn = "cudnnCreate";
    if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, fn, "handle is NULL");
    if (cuemu::device_count() == 0) return fail(CUDNN_STATUS_NOT_INITIALIZED, fn, "no CUDA device");
    int dev = cuemu::current_device();
    if (compute_capability(dev) < 50)
        return fail(CUDNN_STATUS_ARCH_MISMATCH, fn, "compute capability %d.%d is too old for cuDNN 9",
                    cuemu::profile(dev).major, cuemu::profile(dev).minor);
    if (cuemu::sticky_error(dev) != cudaSuccess)
        return fail(CUDNN_STATUS_INTERNAL_ERROR, fn, "the device is in an error state");
    *handle = new cudnnContext{dev, nullptr};
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
    ApiCall call;
    if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "handle is NULL");
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}

/* A stream of another device: MAPPING_ERROR ("mismatch between the user
   stream and the cuDNN handle context"); a destroyed or foreign stream:
   BAD_PARAM. */
extern "C" cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
    ApiCall call;
    const char *fn = "cudnnSetStream";
    if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, fn, "handle is NULL");
    int dev = -1;
    if (cuemu::stream_device(streamId, &dev) != cudaSuccess)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "stream %p is not a live stream", (void *)streamId);
    if (streamId != nullptr && dev != handle->device)
        return fail(CUDNN_STATUS_MAPPING_ERROR, fn, "stream belongs to device %d, handle to device %d", dev, handle->device);
    handle->stream = streamId;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId) {
    ApiCall call;
    if (!handle || !streamId) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream", "handle or streamId is NULL");
    *streamId = handle->stream;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnOpsVersionCheck(void) {
    ApiCall call;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnCnnVersionCheck(void) {
    ApiCall call;
    return CUDNN_STATUS_SUCCESS;
}

/* ===================================================================== */
/* >>tensor descriptors                                                  */

namespace {

/* The documentation limits a tensor to 2 Giga-elements (NOT_SUPPORTED). */
const int64_t kMaxElems = (int64_t)1 << 31;

bool known_type(cudnnDataType_t t) { return dtype_size(t) != 0 || t == CUDNN_DATA_INT8x4 || t == CUDNN_DATA_INT8x32; }

cudnnStatus_t set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int nb, const int *dim, const int *stride,
                         const char *fn) {
    if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensorDesc is NULL");
    if (!known_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dataType %d is not a cudnnDataType_t", (int)type);
    /* Docs: dimensions must be positive (the Nd call says "negative or
       zero" is BAD_PARAM; the 4d calls say "negative": the emulator takes
       the Nd rule for both, as cuDNN has no empty tensors). Strides must not
       be negative. */
    int64_t elems = 1;
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dimension %d is %d", i, dim[i]);
        if (stride[i] < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "stride %d is %d", i, stride[i]);
        elems *= dim[i];
        if (elems > kMaxElems) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "more than 2^31 elements");
    }
    cudnnTensorStruct t;
    t.set = true;
    t.type = type;
    t.nb = nb;
    for (int i = 0; i < nb; i++) {
        t.dim[i] = dim[i];
        t.stride[i] = stride[i];
    }
    *d = t;
    return CUDNN_STATUS_SUCCESS;
}

/* Packed strides for NCHW (w fastest) or NHWC (c fastest) of nb dims. */
void packed_strides(cudnnTensorFormat_t format, int nb, const int *dim, int *stride) {
    if (format == CUDNN_TENSOR_NHWC) {
        /* order of increasing stride: C, then the last spatial dim ... first spatial, then N */
        int64_t s = 1;
        stride[1] = 1;
        s *= dim[1];
        for (int i = nb - 1; i >= 2; i--) {
            stride[i] = (int)s;
            s *= dim[i];
        }
        stride[0] = (int)s;
    } else {
        int64_t s = 1;
        for (int i = nb - 1; i >= 0; i--) {
            stride[i] = (int)s;
            s *= dim[i];
        }
    }
}

}  // namespace

extern "C" cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc) {
    ApiCall call;
    if (!tensorDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor", "tensorDesc is NULL");
    *tensorDesc = new cudnnTensorStruct();
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
    ApiCall call;
    delete tensorDesc; /* NULL is accepted, as for free() */
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                                    cudnnDataType_t dataType, int n, int c, int h, int w) {
    ApiCall call;
    const char *fn = "cudnnSetTensor4dDescriptor";
    /* NCHW_VECT_C is for the vectorized INT8 types only, which the emulator
       does not implement. */
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
        if (format == CUDNN_TENSOR_NCHW_VECT_C) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "NCHW_VECT_C is not emulated");
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "format %d is not a cudnnTensorFormat_t", (int)format);
    }
    int dim[4] = {n, c, h, w}, stride[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        if (dim[i] <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dimension %d is %d", i, dim[i]);
    packed_strides(format, 4, dim, stride);
    return set_tensor(tensorDesc, dataType, 4, dim, stride, fn);
}

extern "C" cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                                      int n, int c, int h, int w,
                                                      int nStride, int cStride, int hStride, int wStride) {
    ApiCall call;
    int dim[4] = {n, c, h, w}, stride[4] = {nStride, cStride, hStride, wStride};
    return set_tensor(tensorDesc, dataType, 4, dim, stride, "cudnnSetTensor4dDescriptorEx");
}

/* Docs: BAD_PARAM when the descriptor has not been set (a 4-d query of
   another rank is answered the same way). */
extern "C" cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t *dataType,
                                                    int *n, int *c, int *h, int *w,
                                                    int *nStride, int *cStride, int *hStride, int *wStride) {
    ApiCall call;
    const char *fn = "cudnnGetTensor4dDescriptor";
    if (!tensor_usable(tensorDesc)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensorDesc is NULL or not set");
    if (tensorDesc->nb != 4) return fail(CUDNN_STATUS_BAD_PARAM, fn, "the descriptor has %d dimensions", tensorDesc->nb);
    const cudnnTensorStruct &t = *tensorDesc;
    if (dataType) *dataType = t.type;
    int *out[8] = {n, c, h, w, nStride, cStride, hStride, wStride};
    for (int i = 0; i < 4; i++) {
        if (out[i]) *out[i] = t.dim[i];
        if (out[4 + i]) *out[4 + i] = t.stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

/* Docs: nbDims outside [3, CUDNN_DIM_MAX] is NOT_SUPPORTED (the emulator
   accepts 3-d tensors as the older guides do: "a dimension nbDims from 3
   to 8"). */
extern "C" cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                                    int nbDims, const int dimA[], const int strideA[]) {
    ApiCall call;
    const char *fn = "cudnnSetTensorNdDescriptor";
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "nbDims %d is outside [3, %d]", nbDims, CUDNN_DIM_MAX);
    if (!dimA || !strideA) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dimA or strideA is NULL");
    return set_tensor(tensorDesc, dataType, nbDims, dimA, strideA, fn);
}

extern "C" cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                                      cudnnDataType_t dataType, int nbDims, const int dimA[]) {
    ApiCall call;
    const char *fn = "cudnnSetTensorNdDescriptorEx";
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "nbDims %d is outside [3, %d]", nbDims, CUDNN_DIM_MAX);
    if (!dimA) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dimA is NULL");
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "format %d is not emulated", (int)format);
    for (int i = 0; i < nbDims; i++)
        if (dimA[i] <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dimension %d is %d", i, dimA[i]);
    int stride[CUDNN_DIM_MAX];
    packed_strides(format, nbDims, dimA, stride);
    return set_tensor(tensorDesc, dataType, nbDims, dimA, stride, fn);
}

extern "C" cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                                    cudnnDataType_t *dataType, int *nbDims, int dimA[], int strideA[]) {
    ApiCall call;
    const char *fn = "cudnnGetTensorNdDescriptor";
    if (!tensor_usable(tensorDesc)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensorDesc is NULL or not set");
    if (nbDimsRequested < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "nbDimsRequested is negative");
    const cudnnTensorStruct &t = *tensorDesc;
    if (dataType) *dataType = t.type;
    if (nbDims) *nbDims = t.nb;
    for (int i = 0; i < nbDimsRequested && i < t.nb; i++) {
        if (dimA) dimA[i] = t.dim[i];
        if (strideA) strideA[i] = t.stride[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t tensorDesc, size_t *size) {
    ApiCall call;
    const char *fn = "cudnnGetTensorSizeInBytes";
    if (!tensor_usable(tensorDesc) || !size) return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensorDesc or size is NULL");
    *size = tensor_span_bytes(*tensorDesc);
    return CUDNN_STATUS_SUCCESS;
}

/* ===================================================================== */
/* >>filter descriptors                                                  */

namespace {
cudnnStatus_t set_filter(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format, int nb,
                         const int *dim, const char *fn) {
    if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "filterDesc is NULL");
    if (!known_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dataType %d is not a cudnnDataType_t", (int)type);
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
        if (format == CUDNN_TENSOR_NCHW_VECT_C) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "NCHW_VECT_C is not emulated");
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "format %d is not a cudnnTensorFormat_t", (int)format);
    }
    int64_t elems = 1;
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dimension %d is %d", i, dim[i]);
        elems *= dim[i];
        if (elems > kMaxElems) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "more than 2^31 elements");
    }
    cudnnFilterStruct f;
    f.set = true;
    f.type = type;
    f.format = format;
    f.nb = nb;
    for (int i = 0; i < nb; i++) f.dim[i] = dim[i];
    *d = f;
    return CUDNN_STATUS_SUCCESS;
}
}  // namespace

extern "C" cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc) {
    ApiCall call;
    if (!filterDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateFilterDescriptor", "filterDesc is NULL");
    *filterDesc = new cudnnFilterStruct();
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
    ApiCall call;
    delete filterDesc;
    return CUDNN_STATUS_SUCCESS;
}

/* k output maps, c input maps (per group), h x w taps; format says how they
   lie in memory: NCHW = KCRS, NHWC = KRSC (packed). */
extern "C" cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                    cudnnTensorFormat_t format, int k, int c, int h, int w) {
    ApiCall call;
    int dim[4] = {k, c, h, w};
    return set_filter(filterDesc, dataType, format, 4, dim, "cudnnSetFilter4dDescriptor");
}

extern "C" cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t filterDesc, cudnnDataType_t *dataType,
                                                    cudnnTensorFormat_t *format, int *k, int *c, int *h, int *w) {
    ApiCall call;
    const char *fn = "cudnnGetFilter4dDescriptor";
    if (!filterDesc || !filterDesc->set) return fail(CUDNN_STATUS_BAD_PARAM, fn, "filterDesc is NULL or not set");
    if (filterDesc->nb != 4) return fail(CUDNN_STATUS_BAD_PARAM, fn, "the descriptor has %d dimensions", filterDesc->nb);
    if (dataType) *dataType = filterDesc->type;
    if (format) *format = filterDesc->format;
    int *out[4] = {k, c, h, w};
    for (int i = 0; i < 4; i++)
        if (out[i]) *out[i] = filterDesc->dim[i];
    return CUDNN_STATUS_SUCCESS;
}

/* Only 2-d convolutions are emulated: filters of 4 dimensions. */
extern "C" cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                    cudnnTensorFormat_t format, int nbDims, const int filterDimA[]) {
    ApiCall call;
    const char *fn = "cudnnSetFilterNdDescriptor";
    if (!filterDimA) return fail(CUDNN_STATUS_BAD_PARAM, fn, "filterDimA is NULL");
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "nbDims %d is outside [3, %d]", nbDims, CUDNN_DIM_MAX);
    return set_filter(filterDesc, dataType, format, nbDims, filterDimA, fn);
}

extern "C" cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                                    cudnnDataType_t *dataType, cudnnTensorFormat_t *format,
                                                    int *nbDims, int filterDimA[]) {
    ApiCall call;
    const char *fn = "cudnnGetFilterNdDescriptor";
    if (!filterDesc || !filterDesc->set) return fail(CUDNN_STATUS_BAD_PARAM, fn, "filterDesc is NULL or not set");
    if (nbDimsRequested < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "nbDimsRequested is negative");
    if (dataType) *dataType = filterDesc->type;
    if (format) *format = filterDesc->format;
    if (nbDims) *nbDims = filterDesc->nb;
    for (int i = 0; i < nbDimsRequested && i < filterDesc->nb; i++)
        if (filterDimA) filterDimA[i] = filterDesc->dim[i];
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t filterDesc, size_t *size) {
    ApiCall call;
    const char *fn = "cudnnGetFilterSizeInBytes";
    if (!filterDesc || !filterDesc->set || !size) return fail(CUDNN_STATUS_BAD_PARAM, fn, "filterDesc or size is NULL");
    size_t n = 1;
    for (int i = 0; i < filterDesc->nb; i++) n *= (size_t)filterDesc->dim[i];
    *size = n * dtype_size(filterDesc->type);
    return CUDNN_STATUS_SUCCESS;
}
