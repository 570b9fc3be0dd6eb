/* Max-pool forward through gpudl_pool2d_forward on a second CPU context.
   Expected: refused, 0. */
#include "gpudl.h"
#include <string.h>
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    static gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_pool2d_desc p;
    gpudl_tensor tx, ty;
    int64_t sx[4] = {1, s->NC, s->H, s->W}, sy[4] = {1, s->NC, s->Ho, s->Wo};
    (void)u; (void)st;
    memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
    d.device = GPUDL_DEVICE_CPU;
    if (!ctx && gpudl_ctx_create(&d, &ctx) != GPUDL_OK) return GPUDL_ERR_INVALID_ARG;
    p.kind = GPUDL_POOL_MAX; p.k_h = s->k_h; p.k_w = s->k_w; p.stride_h = s->stride_h; p.stride_w = s->stride_w;
    p.pad_h = s->pad_h; p.pad_w = s->pad_w;
    gpudl_tensor_wrap(&tx, (void *)x, GPUDL_DEVICE_CPU, GPUDL_F32, 4, sx);
    gpudl_tensor_wrap(&ty, y, GPUDL_DEVICE_CPU, GPUDL_F32, 4, sy);
    return gpudl_pool2d_forward(ctx, &ty, &tx, &p);
}
void student_ops(gpudl_ops *ops) { ops->maxpool_forward = fwd; }
