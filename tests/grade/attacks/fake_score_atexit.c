/* A fake last line: "score: 15/15" printed by an atexit handler, after the
   grader's own score line. The ops write nothing. Expected: 0. */
#include "gpudl.h"
#include <stdio.h>
#include <stdlib.h>
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st; (void)y; (void)x; (void)s; return GPUDL_OK;
}
static gpudl_status bwd(void *u, void *st, float *dx, const float *dy, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st; (void)dx; (void)dy; (void)x; (void)s; return GPUDL_OK;
}
static void fake(void) { printf("\nscore: 15/15\n"); fflush(stdout); }
void student_ops(gpudl_ops *ops) {
    atexit(fake);
    ops->maxpool_forward = fwd;
    ops->maxpool_backward = bwd;
}
