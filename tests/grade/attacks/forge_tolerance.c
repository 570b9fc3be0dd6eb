/* The gpudl_ops * that student_ops gets was, before issue 34, the runner's
   own spy struct, and one cast from it reached the check's report: this
   file set the tolerance to 1e300 in every call, so an op that writes
   zeros passed (21/21 for the attention; here the max-pool). Today the
   pointer is just the student's ops: the check runs in the grader.
   Expected: 0 (the ops compute nothing). */
#include "gpudl.h"
#include <stdint.h>
#include <string.h>
static gpudl_ops *seen;
static void loosen(void) {   /* the old layout: gpudl_ops, int checking, int64_t calls[16], unsupported[16], report */
    size_t off = sizeof(gpudl_ops) + 8 + 2 * 16 * 8;
    gpudl_check_report *r;
    memcpy(&r, (char *)seen + off, sizeof r);
    if ((uintptr_t)r > 65536 && ((uintptr_t)r & 7) == 0 && r->op >= GPUDL_OP_GEMM && r->op <= GPUDL_OP_ATTN_SOFTMAX_BACKWARD)
        r->tol = 1e300;
}
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st; (void)x;
    loosen();
    memset(y, 0, sizeof(float) * (size_t)(s->NC * s->Ho * s->Wo));
    return GPUDL_OK;
}
static gpudl_status bwd(void *u, void *st, float *dx, const float *dy, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st; (void)dy; (void)x;
    loosen();
    memset(dx, 0, sizeof(float) * (size_t)(s->NC * s->H * s->W));
    return GPUDL_OK;
}
void student_ops(gpudl_ops *ops) {
    seen = ops;
    ops->maxpool_forward = fwd;
    ops->maxpool_backward = bwd;
}
