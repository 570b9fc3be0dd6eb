/* The solution, but each call first asks for 20 GB of host memory; when it
   gets them it fails the call (without touching them). Expected: full
   marks (the grader's memory limit makes the malloc fail). */
@SOLUTION@
#include <stdlib.h>
static gpudl_status fwd_greedy(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    void *p = malloc((size_t)20 << 30);
    if (p) { free(p); return GPUDL_ERR_INVALID_ARG; }
    return maxpool_forward(u, st, y, x, s);
}
void student_ops(gpudl_ops *ops) { solution_ops(ops); ops->maxpool_forward = fwd_greedy; }
