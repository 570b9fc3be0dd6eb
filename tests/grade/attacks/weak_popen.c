/* A weak reference: "extern FILE *popen(...) __attribute__((weak))" is
   nm's 'w', not 'U', so a check of the undefined symbols alone lets
   popen through to run time (where only the seccomp filter stopped it).
   Expected: refused at link time, 0. */
#include "gpudl.h"
#include <stdio.h>
extern FILE *popen(const char *cmd, const char *mode) __attribute__((weak));
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    (void)u; (void)st; (void)y; (void)x; (void)s;
    if (popen) popen("touch /tmp/gpudl_attack_was_here", "r");
    return GPUDL_OK;
}
void student_ops(gpudl_ops *ops) { ops->maxpool_forward = fwd; }
