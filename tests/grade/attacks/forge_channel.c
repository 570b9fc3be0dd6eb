/* Forged results on the grader's channel: stdio only (every call on the
   allowed list). The child's records go to the grader on fd 3 as
   fixed-size structs (grade.c, which a student may read); this file points
   stdout's FILE at fd 3, writes a passed case for every group of the op
   under check and the check's end, and leaves with _exit(0) before the
   real check can say anything. The ops compute nothing. Expected: 0 (the
   grader must not take records it cannot tell from its own). */
#include "gpudl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef struct forged {   /* grade.c's grade_msg before issue 25's review */
    int32_t magic, kind, index, status, first, pad;
    int64_t a, b;
    gpudl_check_case kase;
    double  expected, got;
    int64_t elem;
    char    where[96], inputs[160], text[256];
} forged;
static void forge(const char *const *groups, int n) {
    forged m;
    int i;
    fflush(stdout);
    stdout->_fileno = 3;
    for (i = 0; i <= n; i++) {
        memset(&m, 0, sizeof m);
        m.magic = 0x67726431;
        m.kind = i < n ? 3 : 5;   /* a case, then the end */
        m.index = i;
        m.a = 1;
        if (i < n) { snprintf(m.kase.group, sizeof m.kase.group, "%s", groups[i]); m.kase.passed = 1; }
        else m.index = n;
        fwrite(&m, sizeof m, 1, stdout);
    }
    fflush(stdout);
    _exit(0);
}
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    static const char *const g[] = {"basic", "odd sizes", "large", "values", "nan/inf"};
    (void)u; (void)st; (void)y; (void)x; (void)s;
    forge(g, 5);
    return GPUDL_OK;
}
static gpudl_status bwd(void *u, void *st, float *dx, const float *dy, const float *x, const gpudl_pool_shape *s) {
    static const char *const g[] = {"basic", "odd sizes", "large", "values", "nan/inf", "overlap", "finite diff"};
    (void)u; (void)st; (void)dx; (void)dy; (void)x; (void)s;
    forge(g, 7);
    return GPUDL_OK;
}
void student_ops(gpudl_ops *ops) {
    ops->maxpool_forward = fwd;
    ops->maxpool_backward = bwd;
}
