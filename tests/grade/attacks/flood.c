/* The solution, but the forward prints 50 MB on its first call. Expected:
   the output is cut (the feedback stays small), the group of that case is
   lost, the rest keep their points. */
@SOLUTION@
#include <stdio.h>
static gpudl_status fwd_floods(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    static int once;
    if (!once++) {
        static char line[1025];
        int i;
        memset(line, 'x', 1024); line[1024] = 0;
        for (i = 0; i < 50 * 1024; i++) puts(line);
    }
    return maxpool_forward(u, st, y, x, s);
}
void student_ops(gpudl_ops *ops) { solution_ops(ops); ops->maxpool_forward = fwd_floods; }
