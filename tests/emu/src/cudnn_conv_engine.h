/* cudnn_conv_engine.h - the arithmetic of the emulated cuDNN convolutions
   (cudnn_conv_engine.cpp), for cudnn_conv.cpp, which checks the calls and
   queues this work. Private to tests/emu/src; C++17. */
#ifndef CUEMU_CUDNN_CONV_ENGINE_H
#define CUEMU_CUDNN_CONV_ENGINE_H

#include "cudnn_common.h"

namespace cudnn_emu {

enum class ConvDir { Fwd, BwdData, BwdFilter };

/* The shape of one 2-d convolution (all checked by cudnn_conv.cpp). */
struct ConvGeom {
    int N, C, H, W;        /* input (x / dx) */
    int K, R, S;           /* filter: K outputs, R x S taps */
    int G, Cg, Kg;         /* groups, inputs and outputs per group */
    int P, Q;              /* output (y / dy) */
    int ph, pw, u, v, dh, dw;
    bool flip;             /* CUDNN_CONVOLUTION */
    int64_t CRS() const { return (int64_t)Cg * R * S; }
    int64_t PQ() const { return (int64_t)P * Q; }
    int64_t HW() const { return (int64_t)H * W; }
    double flops() const { return 2.0 * N * K * (double)PQ() * (double)CRS(); }
};

/* How the operands are rounded before the products (tensor-core math). */
enum class Rounding { None, TF32, Half };

/* One convolution, inside queued work, in float (double when dbl):
     Fwd:       a = x,  b = w,  o = y   (in = x's descriptor, out = y's)
     BwdData:   a = dy, b = w,  o = dx  (in = dx's, out = dy's)
     BwdFilter: a = x,  b = dy, o = dw  (in = x's, out = dy's)
   The result is blended into o: alpha * result + beta * o. order: 0 sums
   in the fixed order; otherwise a seed for another order of the reduction
   (the backward algorithms cuDNN documents as non-deterministic, see
   nondeterministic_order()). */
void conv_compute(ConvDir dir, const ConvGeom &g, Rounding round, bool dbl, const cudnnTensorStruct &in,
                  const cudnnTensorStruct &out, const cudnnFilterStruct &filt, const void *a, const void *b, void *o,
                  const Blend &blend, uint64_t order = 0);

/* cudnnConvolutionBiasActivationForward's arithmetic:
   y = act(alpha1 * conv(x, w) + alpha2 * z + bias), z not read when
   alpha2 is 0; act is RELU (with its NaN option) or IDENTITY. */
void conv_bias_activation(const ConvGeom &g, Rounding round, bool dbl, const cudnnTensorStruct &in,
                          const cudnnTensorStruct &out, const cudnnFilterStruct &filt, const void *x, const void *w,
                          const void *z, const void *bias, void *y, const cudnnTensorStruct &zT,
                          const cudnnTensorStruct &bT, const cudnnActivationStruct &act, double alpha1, double alpha2);

}  // namespace cudnn_emu

#endif
