/* The solution, except that the backward calls exit(0) on the large case.
   Expected: "maxpool backward: large" lost; every other group keeps its
   points. */
@SOLUTION@
#include <stdlib.h>
static gpudl_status bwd_exits_when_large(void *u, void *st, float *dx, const float *dy, const float *x, const gpudl_pool_shape *s) {
    if (s->NC >= 64) exit(0);
    return maxpool_backward(u, st, dx, dy, x, s);
}
void student_ops(gpudl_ops *ops) { solution_ops(ops); ops->maxpool_backward = bwd_exits_when_large; }
