/* cudnn_conv.cpp - the emulated cuDNN 9 convolutions (legacy API, 2-d):
   the convolution descriptor, output dimensions, algorithm heuristics and
   search, workspace sizes, and the forward / backward-data /
   backward-filter / backward-bias / fused bias-activation calls.

   Sources (NVIDIA cuDNN API reference, cudnn_cnn library, and the
   developer guide's "Convolution Formulas", "Scaling Parameters" and
   per-function "supported configurations" / "supported algorithms"
   tables; "Legacy API > Tensor Core operations" for which algorithms may
   use tensor cores; cudnnMathType_t for TF32 on compute capability 8.0+):

     y[n,k,p,q] = sum over c in group(k), r, s of
                  x[n, c, p*u - pad_h + r*dil_h, q*v - pad_w + s*dil_w]
                  * w[k, c', r', s']
     with (r', s') = (R-1-r, S-1-s) for CUDNN_CONVOLUTION (the filter is
     flipped) and (r, s) for CUDNN_CROSS_CORRELATION; x outside the image
     is 0; output size 1 + (in + 2*pad - ((filter-1)*dil + 1)) / stride.

   Every accepted algorithm computes the same sums, in the same order, as
   im2col + GEMM (cudnn_conv_engine.cpp; deterministic even where cuDNN's
   is not); algorithms differ in which configurations they accept, the
   workspace they ask for, and whether they may use tensor cores (which
   decides the operand rounding: TF32 for FLOAT data on 8.0+, HALF for
   ALLOW_CONVERSION). */
#include "cudnn_conv_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>


using namespace cudnn_emu;

namespace {

/* ===================================================================== */
/* >>geometry and configuration                                          */

using Dir = ConvDir;
using Geom = ConvGeom;

/* The documented data type configurations (x, w, y type / compute type). */
enum Cfg { TRUE_HALF = 1, PSEUDO_HALF = 2, PSEUDO_BF16 = 4, FLOAT_CFG = 8, DOUBLE_CFG = 16 };

struct Config {
    cudnnDataType_t data;
    Cfg cfg;
    bool dbl; /* accumulate in double */
};

/* Memory layout facts the FFT / Winograd algorithms depend on. */
struct Layout {
    bool in_hw_packed, in_chw_packed;   /* x / dx */
    bool out_hw_packed, out_chw_packed; /* y / dy */
    cudnnTensorFormat_t wfmt;
};

struct Numerics {
    Rounding round;
    cudnnMathType_t reported;
};

/* What one call works on, copied by value into the queued work. */
struct ConvCall {
    Dir dir;
    int algo;
    Geom g;
    Config c;
    Numerics num;
    cudnnTensorStruct in, out; /* x / dx and y / dy */
    cudnnFilterStruct filt;
    size_t ws_need;
};

const char *algo_name(Dir d, int a) {
    static const char *fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *bd[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *bf[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
    switch (d) {
    case Dir::Fwd: return fwd[a];
    case Dir::BwdData: return bd[a];
    default: return bf[a];
    }
}

int algo_count(Dir d) {
    if (d == Dir::Fwd) return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    return d == Dir::BwdData ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
}

bool nchw_packed(const cudnnTensorStruct &t, bool c_too) {
    T4 v = view4(t);
    bool hw = v.sw == 1 && v.sh == v.w && v.sc >= (int64_t)v.h * v.w && v.sn >= v.c * v.sc;
    return hw && (!c_too || v.sc == (int64_t)v.h * v.w);
}

/* Checks the descriptors of a 2-d convolution and computes its geometry.
   Statuses (cudnnConvolutionForward / BackwardData / BackwardFilter
   "Returns"): descriptors with a non-matching number of dimensions, fewer
   than 3 dimensions, non-matching input feature maps (per group), an
   output channel count that is not a multiple of the group count (forward,
   backward filter), or a dilated filter larger than the padded input:
   BAD_PARAM. A number of dimensions other than 4 or 5 is NOT_SUPPORTED;
   5 (3-d convolution) is not emulated either; backward data lists the
   group multiple under NOT_SUPPORTED. */
cudnnStatus_t geometry(const char *fn, Dir dir, const cudnnTensorStruct &x, const cudnnFilterStruct &w,
                       const cudnnConvolutionStruct &cd, Geom *g) {
    if (x.nb != w.nb) return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor and filter have %d and %d dimensions", x.nb, w.nb);
    if (x.nb < 3) return fail(CUDNN_STATUS_BAD_PARAM, fn, "fewer than 3 dimensions");
    if (x.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "%d-dimensional convolutions are not emulated", x.nb);
    Geom r;
    r.N = x.dim[0]; r.C = x.dim[1]; r.H = x.dim[2]; r.W = x.dim[3];
    r.K = w.dim[0]; r.Cg = w.dim[1]; r.R = w.dim[2]; r.S = w.dim[3];
    r.G = cd.groups;
    if (r.C != r.Cg * r.G)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "input has %d feature maps, filter %d per group x %d groups", r.C, r.Cg, r.G);
    if (r.K % r.G != 0) {
        cudnnStatus_t s = dir == Dir::BwdData ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
        return fail(s, fn, "%d output feature maps is not a multiple of the group count %d", r.K, r.G);
    }
    r.Kg = r.K / r.G;
    r.ph = cd.pad[0]; r.pw = cd.pad[1];
    r.u = cd.stride[0]; r.v = cd.stride[1];
    r.dh = cd.dilation[0]; r.dw = cd.dilation[1];
    r.flip = cd.mode == CUDNN_CONVOLUTION;
    int64_t eff_r = (int64_t)(r.R - 1) * r.dh + 1, eff_s = (int64_t)(r.S - 1) * r.dw + 1;
    if (eff_r > r.H + 2LL * r.ph || eff_s > r.W + 2LL * r.pw)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "the (dilated) %lldx%lld filter is larger than the padded %dx%d input",
                    (long long)eff_r, (long long)eff_s, r.H + 2 * r.ph, r.W + 2 * r.pw);
    r.P = (int)(1 + (r.H + 2LL * r.ph - eff_r) / r.u);
    r.Q = (int)(1 + (r.W + 2LL * r.pw - eff_s) / r.v);
    *g = r;
    return CUDNN_STATUS_SUCCESS;
}

/* The supported configurations tables: FLOAT/FLOAT, DOUBLE/DOUBLE,
   HALF/HALF (TRUE_HALF_CONFIG, compute capability 5.3 and later),
   HALF/FLOAT (PSEUDO_HALF_CONFIG), BFLOAT16/FLOAT (PSEUDO_BFLOAT16_CONFIG,
   compute capability 8.0 and later). Anything else: NOT_SUPPORTED. */
cudnnStatus_t data_config(const char *fn, cudnnDataType_t data, cudnnDataType_t compute, int cc, Config *out) {
    Config c{data, FLOAT_CFG, false};
    bool ok = false;
    switch (data) {
    case CUDNN_DATA_FLOAT: ok = compute == CUDNN_DATA_FLOAT; c.cfg = FLOAT_CFG; break;
    case CUDNN_DATA_DOUBLE: ok = compute == CUDNN_DATA_DOUBLE; c.cfg = DOUBLE_CFG; c.dbl = true; break;
    case CUDNN_DATA_HALF:
        ok = compute == CUDNN_DATA_HALF || compute == CUDNN_DATA_FLOAT;
        c.cfg = compute == CUDNN_DATA_HALF ? TRUE_HALF : PSEUDO_HALF;
        if (ok && c.cfg == TRUE_HALF && cc < 53)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "TRUE_HALF_CONFIG needs compute capability 5.3");
        break;
    case CUDNN_DATA_BFLOAT16:
        ok = compute == CUDNN_DATA_FLOAT;
        c.cfg = PSEUDO_BF16;
        if (ok && cc < 80)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "PSEUDO_BFLOAT16_CONFIG needs compute capability 8.0");
        break;
    default: break;
    }
    if (!ok)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "data type %s with compute type %s is not a supported configuration",
                    dtype_name(data), dtype_name(compute));
    *out = c;
    return CUDNN_STATUS_SUCCESS;
}

/* >>algorithm support (the "supported algorithms" tables) */

const char *fft_limits(const Geom &g, int in_h, int in_w) {
    if (g.dh != 1 || g.dw != 1) return "dilation must be 1";
    if (in_h + 2 * g.ph > 256 || in_w + 2 * g.pw > 256) return "feature map + 2 * padding must be 256 or less";
    if (g.u != 1 || g.v != 1) return "filter stride must be 1";
    if (g.R <= g.ph || g.S <= g.pw) return "filter must be larger than the padding";
    return nullptr;
}

/* FFT_TILING (forward and backward data): filters up to 32x32 with stride
   1 or 2, or 1-d filters up to 256 with stride 1 (DOUBLE only for 1-d). */
const char *fft_tiling_limits(const Geom &g, const Config &c) {
    bool one_d = g.R == 1 || g.S == 1;
    if (!(c.cfg & (PSEUDO_HALF | FLOAT_CFG)) && !(c.cfg == DOUBLE_CFG && one_d))
        return "data type configuration (PSEUDO_HALF, FLOAT; DOUBLE for 1-d filters)";
    if (g.dh != 1 || g.dw != 1) return "dilation must be 1";
    if (one_d) {
        if (std::max(g.R, g.S) > 256) return "1-d filter longer than 256";
        if (g.u != 1 || g.v != 1) return "filter stride must be 1 for 1-d filters";
    } else {
        if (g.R > 32 || g.S > 32) return "filter larger than 32";
        if (g.u > 2 || g.v > 2) return "filter stride must be 1 or 2";
    }
    if (g.R <= g.ph || g.S <= g.pw) return "filter must be larger than the padding";
    return nullptr;
}

const char *winograd_limits(const Geom &g, const Config &c, bool nonfused) {
    int ok_cfg = nonfused ? (TRUE_HALF | PSEUDO_HALF | FLOAT_CFG) : (PSEUDO_HALF | FLOAT_CFG);
    if (!(c.cfg & ok_cfg)) return "data type configuration";
    if (g.dh != 1 || g.dw != 1) return "dilation must be 1";
    if (g.u != 1 || g.v != 1) return "filter stride must be 1";
    if (!nonfused) return g.R == 3 && g.S == 3 ? nullptr : "filter must be 3x3";
    if (!((g.R == 3 && g.S == 3) || (g.R == 5 && g.S == 5))) return "filter must be 3x3 or 5x5";
    if (g.R == 5 && c.cfg == TRUE_HALF) return "5x5 filters do not support TRUE_HALF_CONFIG";
    return nullptr;
}

/* nullptr when algo accepts the configuration, else why not. GEMM-family
   algorithms accept any strides and both filter formats; FFT and Winograd
   ones need an NCHW filter and packed NCHW tensors. Dilation > 1 is
   accepted by the GEMM-family algorithms (cuDNN 8 and later), 1 only by
   the others. */
const char *why_unsupported(Dir d, int a, const Geom &g, const Config &c, const Layout &l) {
    const bool fft_family = (d == Dir::Fwd && (a == 4 || a == 5 || a == 6 || a == 7)) ||
                            (d == Dir::BwdData && a >= 2) || (d == Dir::BwdFilter && (a == 2 || a >= 4));
    if (fft_family && l.wfmt != CUDNN_TENSOR_NCHW) return "needs an NCHW filter";
    if (d == Dir::Fwd) {
        switch (a) {
        case 0: return c.cfg == TRUE_HALF ? "TRUE_HALF_CONFIG" : nullptr;
        case 1: return nullptr;
        case 2: return c.cfg == TRUE_HALF ? "TRUE_HALF_CONFIG" : nullptr;
        case 3: return "not implemented in cuDNN";
        case 4:
            if (!(c.cfg & (PSEUDO_HALF | FLOAT_CFG))) return "data type configuration (PSEUDO_HALF, FLOAT)";
            if (!l.in_hw_packed || !l.out_hw_packed) return "needs NCHW HW-packed tensors";
            return fft_limits(g, g.H, g.W);
        case 5:
            if (!l.in_hw_packed || !l.out_hw_packed) return "needs NCHW HW-packed tensors";
            return fft_tiling_limits(g, c);
        case 6: return winograd_limits(g, c, false);
        case 7: return winograd_limits(g, c, true);
        }
    } else if (d == Dir::BwdData) {
        switch (a) {
        case 0: return c.cfg == TRUE_HALF ? "TRUE_HALF_CONFIG" : nullptr;
        case 1: return nullptr;
        case 2:
            if (!(c.cfg & (PSEUDO_HALF | FLOAT_CFG))) return "data type configuration (PSEUDO_HALF, FLOAT)";
            if (!l.out_chw_packed || !l.in_hw_packed) return "needs CHW-packed dy and HW-packed dx";
            return fft_limits(g, g.H, g.W);
        case 3:
            if (!l.out_chw_packed || !l.in_hw_packed) return "needs CHW-packed dy and HW-packed dx";
            return fft_tiling_limits(g, c);
        case 4: return winograd_limits(g, c, false);
        case 5: return winograd_limits(g, c, true);
        }
    } else {
        switch (a) {
        case 0:
            if (c.cfg == TRUE_HALF) return "TRUE_HALF_CONFIG";
            if (c.data == CUDNN_DATA_HALF && ((int64_t)g.K * g.CRS()) % 2 != 0)
                return "HALF output with an odd number of filter elements";
            return nullptr;
        case 1: return nullptr;
        case 2:
            if (!(c.cfg & (PSEUDO_HALF | FLOAT_CFG))) return "data type configuration (PSEUDO_HALF, FLOAT)";
            if (!l.in_chw_packed || !l.out_chw_packed) return "needs CHW-packed x and dy";
            return fft_limits(g, g.H, g.W);
        case 3:
            if (!(c.cfg & (PSEUDO_HALF | FLOAT_CFG | DOUBLE_CFG))) return "data type configuration (PSEUDO_HALF, FLOAT, DOUBLE)";
            if (g.dh != 1 || g.dw != 1) return "dilation must be 1";
            return l.out_chw_packed ? nullptr : "needs CHW-packed dy";
        case 4: return "not implemented in cuDNN";
        case 5: return winograd_limits(g, c, true);
        case 6:
            if (!(c.cfg & (PSEUDO_HALF | FLOAT_CFG | DOUBLE_CFG))) return "data type configuration (PSEUDO_HALF, FLOAT, DOUBLE)";
            if (!l.in_chw_packed || !l.out_chw_packed) return "needs CHW-packed x and dy";
            if (g.dh != 1 || g.dw != 1) return "dilation must be 1";
            if (!((g.H == 1 && g.P == 1 && g.W <= 256) || (g.W == 1 && g.Q == 1 && g.H <= 256)))
                return "x and dy must have height 1 (or width 1) and the other dimension at most 256";
            if (g.u != 1 || g.v != 1) return "filter stride must be 1";
            if (g.R <= g.ph || g.S <= g.pw) return "filter must be larger than the padding";
            return nullptr;
        }
    }
    return "unknown algorithm";
}

/* Algorithms the "Legacy API" page lists as able to run on tensor cores. */
bool tensor_core_algo(Dir d, int a) {
    if (d == Dir::Fwd) return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    if (d == Dir::BwdData) return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

/* Non-deterministic per the documentation (atomics): backward data
   ALGO_0, backward filter ALGO_0 and ALGO_3. */
bool deterministic_algo(Dir d, int a) {
    if (d == Dir::BwdData) return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    if (d == Dir::BwdFilter) return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
    return true;
}

/* TF32 on Ampere and later unless NVIDIA_TF32_OVERRIDE=0 (NVIDIA's switch for
   its libraries; CUEMU_CUDNN_TF32=0 does the same for the emulator alone). */
bool tf32_enabled() {
    static const bool on = [] {
        const char *e = std::getenv("CUEMU_CUDNN_TF32");
        const char *o = std::getenv("NVIDIA_TF32_OVERRIDE");
        return !(e && e[0] == '0') && !(o && o[0] == '0');
    }();
    return on;
}

/* cudnnMathType_t: tensor-core math needs TENSOR_OP_MATH or
   ALLOW_CONVERSION, a tensor-core algorithm and Volta (7.0) or later; FP32
   data is converted down (to HALF) only with ALLOW_CONVERSION; on 8.0 and
   later DEFAULT_MATH (and TENSOR_OP_MATH) permit TF32 for FP32 data, and
   FMA_MATH forbids it. The reported mathType is the one the algorithm
   ran with: a tensor-op request that cannot be met reports DEFAULT_MATH.
   CUEMU_CUDNN_TF32=0 in the environment turns the TF32 rounding off. */
Numerics pick_numerics(const Config &c, cudnnMathType_t math, bool tc_algo, int cc) {
    const bool tensor_op = math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    const bool tc = tc_algo && cc >= 70;
    Numerics n{Rounding::None, tensor_op ? CUDNN_DEFAULT_MATH : math};
    if (c.cfg & (TRUE_HALF | PSEUDO_HALF | PSEUDO_BF16)) {
        if (tensor_op && tc) n.reported = math;
    } else if (c.cfg == FLOAT_CFG) {
        if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && tc) {
            n = {Rounding::Half, math};
        } else if (math != CUDNN_FMA_MATH && tc_algo && cc >= 80 && tf32_enabled()) {
            n = {Rounding::TF32, math};
        }
    }
    return n;
}

/* >>workspace model
   What each algorithm asks for (bytes); e = bytes of the compute type:
     forward IMPLICIT_GEMM, WINOGRAD; backward ALGO_0 (data, filter): 0
     IMPLICIT_PRECOMP_GEMM: an index table, 8 bytes per (c, r, s)
     GEMM; backward ALGO_1: one image's im2col matrix, C*R*S*P*Q*e
     FFT: transforms of x, w and y over the padded image rounded up to
          powers of 2, as complex floats
     FFT_TILING: the same over 32x32 tiles
     WINOGRAD_NONFUSED: transformed filter, input and output tiles
          (6x6 for 3x3 filters, 8x8 for 5x5) of 4x4 outputs
     backward filter ALGO_3: a partial filter gradient, K*C/G*R*S*e */
size_t next_pow2(int64_t v) {
    size_t p = 1;
    while ((int64_t)p < v) p <<= 1;
    return p;
}

size_t workspace_for(Dir d, int a, const Geom &g, const Config &c) {
    const size_t e = c.dbl ? 8 : 4;
    const size_t n = (size_t)g.N, C = (size_t)g.C, K = (size_t)g.K, crs = (size_t)g.CRS();
    const size_t im2col = C * g.R * g.S * (size_t)g.PQ() * e;
    const size_t planes = n * C + K * (size_t)g.Cg + n * K;
    auto fft = [&] { return planes * next_pow2(g.H + 2 * g.ph) * (next_pow2(g.W + 2 * g.pw) / 2 + 1) * 8; };
    auto fft_tiling = [&] { return planes * 32 * 17 * 8; };
    auto winograd_nf = [&] {
        size_t t = g.R == 5 ? 8 : 6, tiles = n * (size_t)((g.P + 3) / 4) * (size_t)((g.Q + 3) / 4);
        return (K * (size_t)g.Cg + tiles * C + tiles * K) * t * t * e;
    };
    if (d == Dir::Fwd) {
        switch (a) {
        case 1: return crs * 8;
        case 2: return im2col;
        case 4: return fft();
        case 5: return fft_tiling();
        case 7: return winograd_nf();
        default: return 0;
        }
    }
    if (d == Dir::BwdData) {
        switch (a) {
        case 1: return im2col;
        case 2: return fft();
        case 3: return fft_tiling();
        case 5: return winograd_nf();
        default: return 0;
        }
    }
    switch (a) {
    case 1: return im2col;
    case 2: return fft();
    case 3: return K * crs * e;
    case 5: return winograd_nf();
    case 6: return fft_tiling();
    default: return 0;
    }
}

/* A modeled run time (ms) for cudnnFind*: the flops at a rate that
   depends on the algorithm, plus the workspace traffic. Deterministic. */
float modeled_time_ms(Dir d, int a, const Geom &g, const Config &c) {
    static const double fwd_rate[] = {0.8, 1.0, 0.6, 0.1, 0.7, 0.9, 1.3, 1.5};
    static const double bd_rate[] = {0.9, 1.0, 0.7, 0.8, 1.2, 1.4};
    static const double bf_rate[] = {0.9, 1.0, 0.7, 0.8, 0.1, 1.3, 0.8};
    double rate = d == Dir::Fwd ? fwd_rate[a] : d == Dir::BwdData ? bd_rate[a] : bf_rate[a];
    double tflops = (c.dbl ? 0.5 : 10.0) * rate;
    double ms = g.flops() / (tflops * 1e9) + (double)workspace_for(d, a, g, c) / 1e9;
    return (float)(ms + 0.005);
}

/* Heuristic order for cudnnGet*Algorithm_v7: the fastest (expected) first.
   Unsupported algorithms follow the supported ones. */
const int *heuristic_order(Dir d) {
    static const int fwd[] = {1, 0, 2, 7, 6, 5, 4, 3};
    static const int bd[] = {1, 0, 5, 4, 3, 2};
    static const int bf[] = {1, 0, 3, 5, 6, 2, 4};
    return d == Dir::Fwd ? fwd : d == Dir::BwdData ? bd : bf;
}

/* ===================================================================== */
/* >>checks shared by every convolution call                             */

/* The operands: in = x (forward, backward filter) or dx (backward data);
   out = y or dy; filt = w or dw. */
cudnnStatus_t prepare(const char *fn, Dir dir, cudnnHandle_t h, cudnnTensorDescriptor_t in, cudnnFilterDescriptor_t filt,
                      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t out, ConvCall *call) {
    if (!h) return fail(CUDNN_STATUS_BAD_PARAM, fn, "handle is NULL");
    if (!tensor_usable(in) || !tensor_usable(out) || !filt || !filt->set || !conv)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor is NULL or not set");
    if (in->type != out->type || in->type != filt->type)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "non-matching data types (%s, %s, %s)", dtype_name(in->type),
                    dtype_name(filt->type), dtype_name(out->type));
    if (in->nb != out->nb) return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensors have %d and %d dimensions", in->nb, out->nb);
    cudnnStatus_t s = geometry(fn, dir, *in, *filt, *conv, &call->g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const Geom &g = call->g;
    const cudnnTensorStruct &o = *out;
    if (o.dim[0] != g.N || o.dim[1] != g.K || o.dim[2] != g.P || o.dim[3] != g.Q) {
        /* forward lists this under NOT_SUPPORTED, backward data under BAD_PARAM */
        cudnnStatus_t st = dir == Dir::Fwd ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
        return fail(st, fn, "output tensor is %dx%dx%dx%d, the convolution gives %dx%dx%dx%d", o.dim[0], o.dim[1],
                    o.dim[2], o.dim[3], g.N, g.K, g.P, g.Q);
    }
    s = data_config(fn, in->type, conv->compute, compute_capability(h->device), &call->c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    call->dir = dir;
    call->in = *in;
    call->out = *out;
    call->filt = *filt;
    return CUDNN_STATUS_SUCCESS;
}

Layout layout_of(const ConvCall &c) {
    return {nchw_packed(c.in, false), nchw_packed(c.in, true), nchw_packed(c.out, false), nchw_packed(c.out, true),
            c.filt.format};
}

/* Algorithm-level checks: the enumerant, support, workspace. */
cudnnStatus_t choose_algo(const char *fn, cudnnHandle_t h, int algo, cudnnMathType_t math, ConvCall *call) {
    if (algo < 0 || algo >= algo_count(call->dir))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "algo %d is not a valid enumerant", algo);
    if (const char *why = why_unsupported(call->dir, algo, call->g, call->c, layout_of(*call)))
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "algorithm %s does not support this configuration: %s",
                    algo_name(call->dir, algo), why);
    call->algo = algo;
    call->num = pick_numerics(call->c, math, tensor_core_algo(call->dir, algo), compute_capability(h->device));
    call->ws_need = workspace_for(call->dir, algo, call->g, call->c);
    return CUDNN_STATUS_SUCCESS;
}

/* A workspace smaller than the query for the algorithm, or a NULL one when
   the algorithm needs some ("that pointer can be nil" only "if no workspace
   is needed"): BAD_PARAM, as cuDNN reports an insufficient workspace. */
cudnnStatus_t check_workspace(const char *fn, const ConvCall &c, const void *ws, size_t ws_size) {
    if (c.ws_need == 0) return CUDNN_STATUS_SUCCESS;
    if (ws_size < c.ws_need)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "workspace of %zu bytes, algorithm %s needs %zu", ws_size,
                    algo_name(c.dir, c.algo), c.ws_need);
    if (!ws) return fail(CUDNN_STATUS_BAD_PARAM, fn, "workSpace is NULL, algorithm %s needs %zu bytes",
                         algo_name(c.dir, c.algo), c.ws_need);
    return CUDNN_STATUS_SUCCESS;
}

size_t filter_bytes(const cudnnFilterStruct &f) {
    size_t n = 1;
    for (int i = 0; i < f.nb; i++) n *= (size_t)f.dim[i];
    return n * dtype_size(f.type);
}

/* Queues the computation. a, b, o: the call's device operands in the
   order of run(); ws: the workspace, checked over the bytes the algorithm
   uses. */
cudnnStatus_t queue_conv(ApiCall &api, cudnnHandle_t h, const char *fn, const ConvCall &c, const void *a, const void *bp,
                         void *o, const void *ws, const Blend &blend) {
    const int dev = h->device;
    const char *names[3] = {"x", "w", "y"};
    size_t sizes[3];
    if (c.dir == Dir::Fwd) {
        sizes[0] = tensor_span_bytes(c.in); sizes[1] = filter_bytes(c.filt); sizes[2] = tensor_span_bytes(c.out);
    } else if (c.dir == Dir::BwdData) {
        names[0] = "dy"; names[1] = "w"; names[2] = "dx";
        sizes[0] = tensor_span_bytes(c.out); sizes[1] = filter_bytes(c.filt); sizes[2] = tensor_span_bytes(c.in);
    } else {
        names[0] = "x"; names[1] = "dy"; names[2] = "dw";
        sizes[0] = tensor_span_bytes(c.in); sizes[1] = tensor_span_bytes(c.out); sizes[2] = filter_bytes(c.filt);
    }
    /* the atomic-add algorithms: an order of their own for every call under CUEMU_MATH=perturb */
    const uint64_t order = deterministic_algo(c.dir, c.algo) ? 0 : nondeterministic_order();
    return launch(api, h, fn, [=]() {
        if (!device_ok(dev, fn, names[0], a, sizes[0]) || !device_ok(dev, fn, names[1], bp, sizes[1]) ||
            !device_ok(dev, fn, names[2], o, sizes[2]))
            return;
        if (c.ws_need && !device_ok(dev, fn, "workSpace", ws, c.ws_need)) return;
        conv_compute(c.dir, c.g, c.num.round, c.c.dbl, c.in, c.out, c.filt, a, bp, o, blend, order);
    });
}

/* One complete convolution call. */
cudnnStatus_t convolution(Dir dir, const char *fn, cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t inD,
                          cudnnFilterDescriptor_t fD, cudnnConvolutionDescriptor_t cD, cudnnTensorDescriptor_t outD,
                          int algo, const void *a, const void *b, void *o, void *ws, size_t ws_size, const void *beta) {
    ApiCall api;
    ConvCall c;
    cudnnStatus_t s = prepare(fn, dir, h, inD, fD, cD, outD, &c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!alpha || !beta || !a || !b || !o) return fail(CUDNN_STATUS_BAD_PARAM, fn, "a data pointer, alpha or beta is NULL");
    if ((s = choose_algo(fn, h, algo, cD->math, &c)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_workspace(fn, c, ws, ws_size)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(h, fn)) != CUDNN_STATUS_SUCCESS) return s;
    return queue_conv(api, h, fn, c, a, b, o, ws, read_blend(alpha, beta, inD->type));
}

/* >>algorithm lists */

struct Perf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
};

std::vector<Perf> perf_list(const ConvCall &base, cudnnHandle_t h, cudnnMathType_t math) {
    std::vector<Perf> ok, bad;
    const int *order = heuristic_order(base.dir);
    const Layout l = layout_of(base);
    for (int i = 0; i < algo_count(base.dir); i++) {
        const int a = order[i];
        Perf p{a, CUDNN_STATUS_SUCCESS, -1.0f, 0, deterministic_algo(base.dir, a) ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC,
               math};
        if (why_unsupported(base.dir, a, base.g, base.c, l)) {
            p.status = CUDNN_STATUS_NOT_SUPPORTED;
            bad.push_back(p);
            continue;
        }
        p.memory = workspace_for(base.dir, a, base.g, base.c);
        p.math = pick_numerics(base.c, math, tensor_core_algo(base.dir, a), compute_capability(h->device)).reported;
        ok.push_back(p);
    }
    ok.insert(ok.end(), bad.begin(), bad.end());
    return ok;
}

/* cudnnFind*: the supported algorithms sorted by (modeled) time, then the
   ones that failed; an algorithm whose workspace exceeds the limit (Ex
   calls) reports ALLOC_FAILED ("the provided workspace is insufficient"). */
std::vector<Perf> find_list(const ConvCall &base, cudnnHandle_t h, cudnnMathType_t math, size_t ws_limit) {
    std::vector<Perf> all = perf_list(base, h, math), ok, bad;
    for (Perf &p : all) {
        if (p.status == CUDNN_STATUS_SUCCESS && p.memory > ws_limit) p.status = CUDNN_STATUS_ALLOC_FAILED;
        if (p.status == CUDNN_STATUS_SUCCESS) {
            p.time = modeled_time_ms(base.dir, p.algo, base.g, base.c);
            ok.push_back(p);
        } else {
            p.time = -1.0f;
            bad.push_back(p);
        }
    }
    std::stable_sort(ok.begin(), ok.end(), [](const Perf &x, const Perf &y) { return x.time < y.time; });
    ok.insert(ok.end(), bad.begin(), bad.end());
    return ok;
}

/* Every algorithm, in heuristic order, as NOT_SUPPORTED. */
std::vector<Perf> unsupported_list(Dir d, cudnnMathType_t math) {
    std::vector<Perf> list;
    for (int i = 0; i < algo_count(d); i++) {
        const int a = heuristic_order(d)[i];
        list.push_back({a, CUDNN_STATUS_NOT_SUPPORTED, -1.0f, 0,
                        deterministic_algo(d, a) ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC, math});
    }
    return list;
}

template <class PerfT, class AlgoT>
void copy_perf(const std::vector<Perf> &list, int requested, int *returned, PerfT *out) {
    int n = std::min<int>(requested, (int)list.size());
    for (int i = 0; i < n; i++) {
        PerfT p;
        std::memset(&p, 0, sizeof p);
        p.algo = (AlgoT)list[i].algo;
        p.status = list[i].status;
        p.time = list[i].time;
        p.memory = list[i].memory;
        p.determinism = list[i].det;
        p.mathType = list[i].math;
        out[i] = p;
    }
    *returned = n;
}

/* The shared part of cudnnGet*Algorithm_v7 and cudnnFind*Algorithm(Ex). */
template <class PerfT, class AlgoT>
cudnnStatus_t algo_query(Dir dir, const char *fn, bool find, cudnnHandle_t h, cudnnTensorDescriptor_t inD,
                         cudnnFilterDescriptor_t fD, cudnnConvolutionDescriptor_t cD, cudnnTensorDescriptor_t outD,
                         int requested, int *returned, PerfT *perf, size_t ws_limit) {
    ConvCall c;
    cudnnStatus_t s = prepare(fn, dir, h, inD, fD, cD, outD, &c);
    if (s != CUDNN_STATUS_SUCCESS && s != CUDNN_STATUS_NOT_SUPPORTED) return s;
    if (!returned || !perf) return fail(CUDNN_STATUS_BAD_PARAM, fn, "returnedAlgoCount or perfResults is NULL");
    if (requested < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount is %d", requested);
    if (find && check_handle_for_work(h, fn) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_EXECUTION_FAILED;
    /* NOT_SUPPORTED is not among these calls' documented returns: a
       configuration no algorithm supports gives a list of NOT_SUPPORTED
       entries */
    std::vector<Perf> list = s != CUDNN_STATUS_SUCCESS ? unsupported_list(dir, cD->math)
                             : find                    ? find_list(c, h, cD->math, ws_limit)
                                                       : perf_list(c, h, cD->math);
    copy_perf<PerfT, AlgoT>(list, requested, returned, perf);
    return CUDNN_STATUS_SUCCESS;
}

/* cudnnFind*AlgorithmEx: the list as cudnnFind*, and the convolution run
   once into the output (the documentation: its content is overwritten),
   with the first algorithm of the list, alpha = 1 and beta = 0. */
template <class PerfT, class AlgoT>
cudnnStatus_t find_ex(Dir dir, const char *fn, cudnnHandle_t h, cudnnTensorDescriptor_t inD, cudnnFilterDescriptor_t fD,
                      cudnnConvolutionDescriptor_t cD, cudnnTensorDescriptor_t outD, const void *a, const void *b,
                      void *o, int requested, int *returned, PerfT *perf, void *ws, size_t ws_size) {
    ApiCall api;
    ConvCall c;
    cudnnStatus_t s = prepare(fn, dir, h, inD, fD, cD, outD, &c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!a || !b || !o || !returned || !perf) return fail(CUDNN_STATUS_BAD_PARAM, fn, "a pointer argument is NULL");
    if (requested < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount is %d", requested);
    if (ws_size > 0 && !ws) return fail(CUDNN_STATUS_BAD_PARAM, fn, "workSpace is NULL with a size of %zu", ws_size);
    if ((s = check_handle_for_work(h, fn)) != CUDNN_STATUS_SUCCESS) return s;
    std::vector<Perf> list = find_list(c, h, cD->math, ws_size);
    if (list.empty() || list[0].status != CUDNN_STATUS_SUCCESS)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "no algorithm supports this configuration within the workspace");
    if ((s = choose_algo(fn, h, list[0].algo, cD->math, &c)) != CUDNN_STATUS_SUCCESS) return s;
    copy_perf<PerfT, AlgoT>(list, requested, returned, perf);
    const double one = 1.0, zero = 0.0;
    const float onef = 1.0f, zerof = 0.0f;
    const bool dbl = inD->type == CUDNN_DATA_DOUBLE;
    Blend blend = read_blend(dbl ? (const void *)&one : &onef, dbl ? (const void *)&zero : &zerof, inD->type);
    return queue_conv(api, h, fn, c, a, b, o, ws, blend);
}

template <class AlgoT>
cudnnStatus_t workspace_query(Dir dir, const char *fn, cudnnHandle_t h, cudnnTensorDescriptor_t inD,
                              cudnnFilterDescriptor_t fD, cudnnConvolutionDescriptor_t cD, cudnnTensorDescriptor_t outD,
                              AlgoT algo, size_t *size) {
    ConvCall c;
    cudnnStatus_t s = prepare(fn, dir, h, inD, fD, cD, outD, &c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!size) return fail(CUDNN_STATUS_BAD_PARAM, fn, "sizeInBytes is NULL");
    if ((s = choose_algo(fn, h, (int)algo, cD->math, &c)) != CUDNN_STATUS_SUCCESS) return s;
    *size = c.ws_need;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t max_count(const char *fn, cudnnHandle_t h, int *count, int n) {
    if (!h || !count) return fail(CUDNN_STATUS_BAD_PARAM, fn, "handle or count is NULL");
    *count = n;
    return CUDNN_STATUS_SUCCESS;
}

}  // namespace

/* ===================================================================== */
/* >>convolution descriptor                                              */

extern "C" cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc) {
    ApiCall api;
    if (!convDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor", "convDesc is NULL");
    *convDesc = new cudnnConvolutionStruct();
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
    ApiCall api;
    delete convDesc;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType) {
    ApiCall api;
    const char *fn = "cudnnSetConvolutionMathType";
    if (!convDesc) return fail(CUDNN_STATUS_BAD_PARAM, fn, "convDesc is NULL");
    if (mathType < CUDNN_DEFAULT_MATH || mathType > CUDNN_FMA_MATH)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mathType %d is not a cudnnMathType_t", (int)mathType);
    convDesc->math = mathType;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t *mathType) {
    ApiCall api;
    if (!convDesc || !mathType) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType", "a pointer is NULL");
    *mathType = convDesc->math;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
    ApiCall api;
    const char *fn = "cudnnSetConvolutionGroupCount";
    if (!convDesc) return fail(CUDNN_STATUS_BAD_PARAM, fn, "convDesc is NULL");
    if (groupCount < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "groupCount is %d", groupCount);
    convDesc->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int *groupCount) {
    ApiCall api;
    if (!convDesc || !groupCount) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionGroupCount", "a pointer is NULL");
    *groupCount = convDesc->groups;
    return CUDNN_STATUS_SUCCESS;
}

namespace {
/* cudnnSetConvolution2dDescriptor / NdDescriptor: BAD_PARAM for a negative
   padding, a stride or dilation that is not positive, or an invalid mode
   or compute type. */
cudnnStatus_t set_conv(cudnnConvolutionDescriptor_t d, const int *pad, const int *stride, const int *dil,
                       cudnnConvolutionMode_t mode, cudnnDataType_t compute, const char *fn) {
    if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "convDesc is NULL");
    for (int i = 0; i < 2; i++) {
        if (pad[i] < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "padding %d is negative", pad[i]);
        if (stride[i] <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "stride %d is not positive", stride[i]);
        if (dil[i] <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dilation %d is not positive", dil[i]);
    }
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is not a cudnnConvolutionMode_t", (int)mode);
    if (dtype_size(compute) == 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "computeType %d is not usable", (int)compute);
    for (int i = 0; i < 2; i++) {
        d->pad[i] = pad[i];
        d->stride[i] = stride[i];
        d->dilation[i] = dil[i];
    }
    d->mode = mode;
    d->compute = compute;
    return CUDNN_STATUS_SUCCESS;
}
}  // namespace

extern "C" cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w,
                                                         int u, int v, int dilation_h, int dilation_w,
                                                         cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
    ApiCall api;
    int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dilation_h, dilation_w};
    return set_conv(convDesc, pad, stride, dil, mode, computeType, "cudnnSetConvolution2dDescriptor");
}

extern "C" cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t convDesc, int *pad_h,
                                                         int *pad_w, int *u, int *v, int *dilation_h, int *dilation_w,
                                                         cudnnConvolutionMode_t *mode, cudnnDataType_t *computeType) {
    ApiCall api;
    if (!convDesc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolution2dDescriptor", "convDesc is NULL");
    const cudnnConvolutionStruct &d = *convDesc;
    int *out[6] = {pad_h, pad_w, u, v, dilation_h, dilation_w};
    int val[6] = {d.pad[0], d.pad[1], d.stride[0], d.stride[1], d.dilation[0], d.dilation[1]};
    for (int i = 0; i < 6; i++)
        if (out[i]) *out[i] = val[i];
    if (mode) *mode = d.mode;
    if (computeType) *computeType = d.compute;
    return CUDNN_STATUS_SUCCESS;
}

/* Only arrayLength 2 (2-d convolutions) is emulated. */
extern "C" cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
                                                         const int padA[], const int filterStrideA[],
                                                         const int dilationA[], cudnnConvolutionMode_t mode,
                                                         cudnnDataType_t computeType) {
    ApiCall api;
    const char *fn = "cudnnSetConvolutionNdDescriptor";
    if (arrayLength <= 0 || !padA || !filterStrideA || !dilationA)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "arrayLength %d or a NULL array", arrayLength);
    if (arrayLength != 2) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "only 2-d convolutions are emulated");
    return set_conv(convDesc, padA, filterStrideA, dilationA, mode, computeType, fn);
}

extern "C" cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                                         int arrayLengthRequested, int *arrayLength, int padA[],
                                                         int strideA[], int dilationA[], cudnnConvolutionMode_t *mode,
                                                         cudnnDataType_t *computeType) {
    ApiCall api;
    const char *fn = "cudnnGetConvolutionNdDescriptor";
    if (!convDesc || arrayLengthRequested < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "convDesc is NULL or bad length");
    if (arrayLength) *arrayLength = 2;
    for (int i = 0; i < arrayLengthRequested && i < 2; i++) {
        if (padA) padA[i] = convDesc->pad[i];
        if (strideA) strideA[i] = convDesc->stride[i];
        if (dilationA) dilationA[i] = convDesc->dilation[i];
    }
    if (mode) *mode = convDesc->mode;
    if (computeType) *computeType = convDesc->compute;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                               const cudnnTensorDescriptor_t inputTensorDesc,
                                                               const cudnnFilterDescriptor_t filterDesc, int *n,
                                                               int *c, int *h, int *w) {
    ApiCall api;
    const char *fn = "cudnnGetConvolution2dForwardOutputDim";
    if (!convDesc || !tensor_usable(inputTensorDesc) || !filterDesc || !filterDesc->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor is NULL or not set");
    if (inputTensorDesc->nb != 4 || filterDesc->nb != 4)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor and filter must have 4 dimensions");
    Geom g;
    cudnnStatus_t s = geometry(fn, Dir::Fwd, *inputTensorDesc, *filterDesc, *convDesc, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (n) *n = g.N;
    if (c) *c = g.K;
    if (h) *h = g.P;
    if (w) *w = g.Q;
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                               const cudnnTensorDescriptor_t inputTensorDesc,
                                                               const cudnnFilterDescriptor_t filterDesc, int nbDims,
                                                               int tensorOuputDimA[]) {
    ApiCall api;
    const char *fn = "cudnnGetConvolutionNdForwardOutputDim";
    if (!convDesc || !tensor_usable(inputTensorDesc) || !filterDesc || !filterDesc->set || !tensorOuputDimA)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor or the output array is NULL");
    if (nbDims != inputTensorDesc->nb) return fail(CUDNN_STATUS_BAD_PARAM, fn, "nbDims %d does not match the input", nbDims);
    Geom g;
    cudnnStatus_t s = geometry(fn, Dir::Fwd, *inputTensorDesc, *filterDesc, *convDesc, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    int out[4] = {g.N, g.K, g.P, g.Q};
    for (int i = 0; i < 4; i++) tensorOuputDimA[i] = out[i];
    return CUDNN_STATUS_SUCCESS;
}

/* ===================================================================== */
/* >>forward                                                             */

extern "C" cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int *count) {
    ApiCall api;
    return max_count("cudnnGetConvolutionForwardAlgorithmMaxCount", handle, count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
}

extern "C" cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnFilterDescriptor_t filterDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults) {
    ApiCall api;
    return algo_query<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        Dir::Fwd, "cudnnGetConvolutionForwardAlgorithm_v7", false, handle, srcDesc, filterDesc, convDesc, destDesc,
        requestedAlgoCount, returnedAlgoCount, perfResults, SIZE_MAX);
}

extern "C" cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults) {
    ApiCall api;
    return algo_query<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        Dir::Fwd, "cudnnFindConvolutionForwardAlgorithm", true, handle, xDesc, wDesc, convDesc, yDesc,
        requestedAlgoCount, returnedAlgoCount, perfResults, SIZE_MAX);
}

extern "C" cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnFilterDescriptor_t wDesc,
    const void *w, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc, void *y,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes) {
    return find_ex<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        Dir::Fwd, "cudnnFindConvolutionForwardAlgorithmEx", handle, xDesc, wDesc, convDesc, yDesc, x, w, y,
        requestedAlgoCount, returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes);
}

extern "C" cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                                 const cudnnFilterDescriptor_t wDesc,
                                                                 const cudnnConvolutionDescriptor_t convDesc,
                                                                 const cudnnTensorDescriptor_t yDesc,
                                                                 cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes) {
    ApiCall api;
    return workspace_query(Dir::Fwd, "cudnnGetConvolutionForwardWorkspaceSize", handle, xDesc, wDesc, convDesc, yDesc,
                           algo, sizeInBytes);
}

extern "C" cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                                                 const cudnnTensorDescriptor_t xDesc, const void *x,
                                                 const cudnnFilterDescriptor_t wDesc, const void *w,
                                                 const cudnnConvolutionDescriptor_t convDesc,
                                                 cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                                                 size_t workSpaceSizeInBytes, const void *beta,
                                                 const cudnnTensorDescriptor_t yDesc, void *y) {
    return convolution(Dir::Fwd, "cudnnConvolutionForward", handle, alpha, xDesc, wDesc, convDesc, yDesc, (int)algo, x, w,
                       y, workSpace, workSpaceSizeInBytes, beta);
}

/* ===================================================================== */
/* >>backward data                                                       */

extern "C" cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int *count) {
    ApiCall api;
    return max_count("cudnnGetConvolutionBackwardDataAlgorithmMaxCount", handle, count,
                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
}

extern "C" cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc, const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {
    ApiCall api;
    return algo_query<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
        Dir::BwdData, "cudnnGetConvolutionBackwardDataAlgorithm_v7", false, handle, gradDesc, filterDesc, convDesc,
        diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults, SIZE_MAX);
}

extern "C" cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {
    ApiCall api;
    return algo_query<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
        Dir::BwdData, "cudnnFindConvolutionBackwardDataAlgorithm", true, handle, dxDesc, wDesc, convDesc, dyDesc,
        requestedAlgoCount, returnedAlgoCount, perfResults, SIZE_MAX);
}

extern "C" cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults,
    void *workSpace, size_t workSpaceSizeInBytes) {
    return find_ex<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
        Dir::BwdData, "cudnnFindConvolutionBackwardDataAlgorithmEx", handle, dxDesc, wDesc, convDesc, dyDesc, dy, w, dx,
        requestedAlgoCount, returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes);
}

extern "C" cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes) {
    ApiCall api;
    return workspace_query(Dir::BwdData, "cudnnGetConvolutionBackwardDataWorkspaceSize", handle, dxDesc, wDesc, convDesc,
                           dyDesc, algo, sizeInBytes);
}

extern "C" cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                                      const cudnnFilterDescriptor_t wDesc, const void *w,
                                                      const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                                      size_t workSpaceSizeInBytes, const void *beta,
                                                      const cudnnTensorDescriptor_t dxDesc, void *dx) {
    return convolution(Dir::BwdData, "cudnnConvolutionBackwardData", handle, alpha, dxDesc, wDesc, convDesc, dyDesc,
                       (int)algo, dy, w, dx, workSpace, workSpaceSizeInBytes, beta);
}

/* ===================================================================== */
/* >>backward filter                                                     */

extern "C" cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int *count) {
    ApiCall api;
    return max_count("cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", handle, count,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
}

extern "C" cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults) {
    ApiCall api;
    return algo_query<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
        Dir::BwdFilter, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", false, handle, srcDesc, gradDesc, convDesc,
        diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults, SIZE_MAX);
}

extern "C" cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults) {
    ApiCall api;
    return algo_query<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
        Dir::BwdFilter, "cudnnFindConvolutionBackwardFilterAlgorithm", true, handle, xDesc, dwDesc, convDesc, dyDesc,
        requestedAlgoCount, returnedAlgoCount, perfResults, SIZE_MAX);
}

extern "C" cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t dyDesc,
    const void *y, const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void *dw,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults,
    void *workSpace, size_t workSpaceSizeInBytes) {
    return find_ex<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
        Dir::BwdFilter, "cudnnFindConvolutionBackwardFilterAlgorithmEx", handle, xDesc, dwDesc, convDesc, dyDesc, x, y,
        dw, requestedAlgoCount, returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes);
}

extern "C" cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes) {
    ApiCall api;
    return workspace_query(Dir::BwdFilter, "cudnnGetConvolutionBackwardFilterWorkspaceSize", handle, xDesc, gradDesc,
                           convDesc, dyDesc, algo, sizeInBytes);
}

extern "C" cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                                        const cudnnTensorDescriptor_t xDesc, const void *x,
                                                        const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                                        const cudnnConvolutionDescriptor_t convDesc,
                                                        cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                                        size_t workSpaceSizeInBytes, const void *beta,
                                                        const cudnnFilterDescriptor_t dwDesc, void *dw) {
    return convolution(Dir::BwdFilter, "cudnnConvolutionBackwardFilter", handle, alpha, xDesc, dwDesc, convDesc, dyDesc,
                       (int)algo, x, dy, dw, workSpace, workSpaceSizeInBytes, beta);
}

/* ===================================================================== */
/* >>backward bias                                                       */

/* db[c] = alpha * (sum of dy over n, h, w) + beta * db[c]. BAD_PARAM when
   db is not 1 x C x 1 x 1 with dy's C, or the data types differ. The sum
   is taken in double. */
extern "C" cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void *alpha,
                                                      const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                                      const void *beta, const cudnnTensorDescriptor_t dbDesc,
                                                      void *db) {
    ApiCall api;
    const char *fn = "cudnnConvolutionBackwardBias";
    if (!handle || !tensor_usable(dyDesc) || !tensor_usable(dbDesc) || !alpha || !beta || !dy || !db)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "a pointer or descriptor is NULL");
    const cudnnTensorStruct dyT = *dyDesc, dbT = *dbDesc;
    if (dyT.type != dbT.type) return fail(CUDNN_STATUS_BAD_PARAM, fn, "dy and db have different data types");
    if (!is_float_type(dyT.type)) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "data type %s", dtype_name(dyT.type));
    if (dyT.nb != 4 || dbT.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "only 4-d tensors are emulated");
    if (dbT.dim[0] != 1 || dbT.dim[2] != 1 || dbT.dim[3] != 1 || dbT.dim[1] != dyT.dim[1])
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "db is %dx%dx%dx%d, expected 1x%dx1x1", dbT.dim[0], dbT.dim[1], dbT.dim[2],
                    dbT.dim[3], dyT.dim[1]);
    cudnnStatus_t s = check_handle_for_work(handle, fn);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const Blend b = read_blend(alpha, beta, dyT.type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "dy", dy, tensor_span_bytes(dyT)) || !device_ok(dev, fn, "db", db, tensor_span_bytes(dbT)))
            return;
        T4 v = view4(dyT), o = view4(dbT);
        for (int c = 0; c < v.c; c++) {
            double sum = 0;
            for (int n = 0; n < v.n; n++)
                for (int h = 0; h < v.h; h++)
                    for (int w = 0; w < v.w; w++) sum += load_elem(dy, dyT.type, v.at(n, c, h, w));
            blend_store(db, dbT.type, o.at(0, c, 0, 0), b.dbl ? sum : (double)(float)sum, b);
        }
    });
}

/* ===================================================================== */
/* >>fused bias and activation                                           */

/* y = act(alpha1 * conv(x) + alpha2 * z + bias). From the function's
   documentation: the activation must be RELU or IDENTITY (others:
   NOT_SUPPORTED), IDENTITY only with IMPLICIT_PRECOMP_GEMM; bias must be
   1 x K x 1 x 1 and z shaped as y (BAD_PARAM); bias has y's data type. z is
   not read when alpha2 is 0. */
extern "C" cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *alpha2,
    const cudnnTensorDescriptor_t zDesc, const void *z, const cudnnTensorDescriptor_t biasDesc, const void *bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void *y) {
    ApiCall api;
    const char *fn = "cudnnConvolutionBiasActivationForward";
    ConvCall c;
    cudnnStatus_t s = prepare(fn, Dir::Fwd, handle, xDesc, wDesc, convDesc, yDesc, &c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!alpha1 || !alpha2 || !x || !w || !y || !tensor_usable(zDesc) || !z || !tensor_usable(biasDesc) || !bias ||
        !activationDesc || !activationDesc->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "a pointer or descriptor is NULL");
    const cudnnActivationStruct act = *activationDesc;
    const cudnnTensorStruct zT = *zDesc, bT = *biasDesc;
    if (!same_dims(zT, c.out) || zT.type != c.out.type) return fail(CUDNN_STATUS_BAD_PARAM, fn, "zDesc does not match yDesc");
    if (bT.nb != 4 || bT.dim[0] != 1 || bT.dim[1] != c.g.K || bT.dim[2] != 1 || bT.dim[3] != 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "bias must be 1x%dx1x1", c.g.K);
    if (bT.type != c.out.type) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "bias data type differs from y's");
    if (act.mode != CUDNN_ACTIVATION_RELU && act.mode != CUDNN_ACTIVATION_IDENTITY)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "activation mode %d (RELU or IDENTITY only)", (int)act.mode);
    if (act.mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "IDENTITY needs CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM");
    if ((s = choose_algo(fn, handle, (int)algo, convDesc->math, &c)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_workspace(fn, c, workSpace, workSpaceSizeInBytes)) != CUDNN_STATUS_SUCCESS) return s;
    if ((s = check_handle_for_work(handle, fn)) != CUDNN_STATUS_SUCCESS) return s;
    const float zerof = 0.0f;
    const double zero = 0.0;
    const Blend b1 = read_blend(alpha1, c.c.dbl ? (const void *)&zero : &zerof, xDesc->type);
    const Blend b2 = read_blend(alpha2, c.c.dbl ? (const void *)&zero : &zerof, xDesc->type);
    const int dev = handle->device;
    return launch(api, handle, fn, [=]() {
        if (!device_ok(dev, fn, "x", x, tensor_span_bytes(c.in)) || !device_ok(dev, fn, "w", w, filter_bytes(c.filt)) ||
            !device_ok(dev, fn, "y", y, tensor_span_bytes(c.out)) || !device_ok(dev, fn, "bias", bias, tensor_span_bytes(bT)) ||
            (b2.alpha != 0.0 && !device_ok(dev, fn, "z", z, tensor_span_bytes(zT))))
            return;
        if (c.ws_need && !device_ok(dev, fn, "workSpace", workSpace, c.ws_need)) return;
        conv_bias_activation(c.g, c.num.round, c.c.dbl, c.in, c.out, c.filt, x, w, z, bias, y, zT, bT, act, b1.alpha,
                             b2.alpha);
    });
}
