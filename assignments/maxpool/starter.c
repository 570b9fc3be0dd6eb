/* maxpool/starter.c - assignment: 2-D max pooling, forward and backward,
   in plain C (no GPU needed).

   Write the two TODOs below (README.md says what each must do), then run
   the grader:    make grade A=maxpool
   It checks both functions against a float64 reference on many cases and
   then trains a small CNN on Fashion-MNIST with them.

   Shapes (gpudl_pool_shape s): x (NC, H, W) -> y (NC, Ho, Wo): NC planes
   (batch x channels), each pooled on its own, float32, row-major: element
   (p, h, w) of x is x[(p * H + h) * W + w]. Output (oh, ow) looks at the
   k_h x k_w window whose top-left cell is (oh*stride_h - pad_h,
   ow*stride_w - pad_w); cells outside the plane are padding and are never
   the maximum. */
#include "gpudl.h"
#include <string.h>

/* Tip: both functions need "which cell of window (oh, ow) is its maximum";
   write that once, as a helper returning the cell's index h * W + w. */

/* TODO 1: y[p, oh, ow] = the maximum of window (oh, ow) of plane p.
   - Ties: the first maximum in row-major window order wins.
   - A NaN beats every number (the first NaN wins): a NaN in the input
     must show up in the output.
   - A window of -Inf values still has a maximum (-Inf). */
static gpudl_status maxpool_forward(void *user, void *stream, float *y, const float *x, const gpudl_pool_shape *s) {
    (void)user; (void)stream;
    return GPUDL_OK;
}

/* TODO 2: dx (NC, H, W), the gradient of the input: start from all zeros,
   then for each output (p, oh, ow) add dy[p, oh, ow] to the cell of x that
   was its window's maximum (the same cell the forward picked). */
static gpudl_status maxpool_backward(void *user, void *stream, float *dx, const float *dy, const float *x,
                                     const gpudl_pool_shape *s) {
    (void)user; (void)stream;
    return GPUDL_OK;
}

/* Hands your functions to gpudl; a field left NULL is gpudl's own code. */
void student_ops(gpudl_ops *ops) {
    ops->maxpool_forward = maxpool_forward;
    ops->maxpool_backward = maxpool_backward;
}
